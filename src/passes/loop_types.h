/* loop_types.h -- types of a captured loop for one call signature.
 *
 * Every scalar variable gets the set of types it may hold (its type at
 * loop entry and the type of everything assigned to it, to a fixed point),
 * and every Python int a bound on its magnitude (bits), so that codegen
 * checks only the Python int arithmetic that could leave int64. Result
 * types of operators and functions are NumPy's and Python's own, asked
 * once per type pair of sample values (NEP 50 included by construction).
 */
#ifndef ND_LOOP_TYPES_H
#define ND_LOOP_TYPES_H
#include "graph/loop_ir.h"

#define LBITS_ANY 64   /* a Python int that may not fit: checked arithmetic */

/* `x op= y` of a name holding a larger array is left to the tracer, which
 * fuses a pass's whole-array work into one trip through memory where the
 * C loop makes a trip a statement (conv2d's shifted sums 16.5x -> 3.0x
 * NumPy, FIR 1.0x -> 0.64x, measured) */
#define ND_LOOP_SMALL_INPLACE 4096

typedef struct nd_ltyping_s {
    const nd_lir *ir;
    uint32_t *vset;     /* scalar variables: bit per LT_* */
    uint8_t *vbits;     /* Python int magnitude bound (bits), LBITS_ANY = unknown */
    uint8_t *entry;     /* tag at entry (LT_* or LT_UNBOUND); arrays: unused */
    uint8_t *vbits_entry; /* Python ints at entry: magnitude bound (bits) */
    int8_t *adt;        /* arrays: element type (LT_*), -1: not an array */
    int8_t *andim;
    uint8_t *awrite;    /* arrays: writeable */
    uint8_t *alocal;    /* array locals: names the loop assigns views to (row = A[i]);
                           1-D, their adt/andim/awrite set by typing */
    uint8_t *acontig;   /* arrays: the last axis's stride is the element size (a
                           constant in the C code; part of the signature), or NULL */
    uint8_t abits;      /* bound of any array dimension (bits) */
    uint8_t small_alocals; /* every array a name the loop assigns holds at entry has at
                           most ND_LOOP_SMALL_INPLACE elements (part of the signature):
                           `x op= y` of such a name is captured as a store over it */
    uint8_t in_try;     /* the loop is inside a try statement: the runner reads its
                           scalar locals after an exception too (loop_run.c), so the
                           C writes them back on its error exits as well */
    PyObject *reason;   /* str, set when a signature cannot be compiled */
    /* LK_LET binding k's type + 1 (0: not typed yet) and Python int bits, as
     * the last typing of its LK_LET found them (its LK_LETVARs are inside it) */
    uint8_t let_t[LLET_MAX], let_bits[LLET_MAX];
} nd_ltyping;

/* result type of a OP b / OP a / fn(args) for operand types, from Python
 * and NumPy themselves; -1: TypeError or a type loops do not compute in
 * (float16, complex, object); -2: error set */
int nd_lty_bin(int op, int ta, int tb);
int nd_lty_un(int op, int ta);
int nd_lty_call(int fn, int nargs, const int *ta);
/* the type of op (LO_* or LO_NOPS + LF_*) with 1-D array operands
 * (t | LT_VEC); tb < 0: one operand. -1: NumPy refuses, -2: error */
int nd_lty_vop(int op, int ta, int tb);
int nd_lty_same_kind(int from, int to);

/* the type and bits of expression e where each variable v has the type
 * assign[v] (a member of vset[v]); -1 when this combination has no type
 * (reason may be set), -2 with an exception */
int nd_lty_expr(nd_ltyping *T, const nd_ln *e, const uint8_t *assign, int *bits);

/* whether the value of an assignment, e, is one of two operands Python
 * hands back as they are (max(a, b), min(a, b), x if c else y): its type
 * is either operand's, chosen by the data where they differ */
int nd_lty_split(const nd_ln *e);

/* whether element access e, when its one index is a 1-D array, is a gather
 * x[idx] loops compute (x 1-D, a plain x[idx], not x[i][idx]) */
int nd_lty_gather(const nd_ltyping *T, const nd_ln *e);

/* the LF_* function call e computes: e->aux, or for x.dtype.type(v)
 * (LCALL_DTYPE) the cast to x's dtype this signature gives; -1: none */
int nd_lty_fn(const nd_ltyping *T, const nd_ln *e);

/* fills vset and vbits from entry; 0, 1 (not compilable: T->reason) or -1 */
int nd_loop_type(nd_ltyping *T);

/* slots of the frame's pool of arrays the loop makes (nd_loop.h's
 * nd_lbuf): 0 when it makes none */
int nd_loop_npool(const nd_ltyping *T);

/* the Python callable of LF_* fn (borrowed), and a OP b / fn(a, b) on
 * Python objects (b NULL for one operand): the slow path's arithmetic */
PyObject *nd_lty_function(int fn);
PyObject *nd_lty_apply(int op, PyObject *a, PyObject *b);

/* NumPy's type number and name of a loop type (-1 / NULL for Python's) */
int nd_lty_typenum(int t);
const char *nd_lty_name(int t);
int nd_lty_of_typenum(int typenum);   /* -1 when loops do not compute in it */
#endif
