/* loop_ir.h -- the IR of a captured Python loop (DESIGN.md, "Loop capture").
 *
 * A loop statement of the user's function, parsed from its source
 * (trace/loop_parse.c), as a small tree of statements and scalar
 * expressions over numbered variables: scalar locals (typed per call
 * signature by passes/loop_types.c), arrays (element loads and stores),
 * and names the loop only calls (math, np, builtins). Types are not stored
 * in the tree: a signature gives every variable a set of possible types,
 * and codegen/codegen_loop.c specializes each statement on the runtime type
 * of the variables it reads.
 */
#ifndef ND_LOOP_IR_H
#define ND_LOOP_IR_H
#include <Python.h>
#include <stdint.h>
#include "nd_loop.h"

enum {
    /* expressions */
    LK_CONST,     /* aux: LT_PYBOOL/PYINT/PYFLOAT; i or f */
    LK_VAR,       /* var */
    LK_BIN,       /* op LO_ADD..LO_BXOR; kid[0], kid[1] */
    LK_UN,        /* op LO_NEG/POS/INV/NOT; kid[0] */
    LK_CMP,       /* op LO_LT..LO_NE; kid[0], kid[1] */
    LK_AND,       /* short-circuit, n kids; value: Python's (an operand) */
    LK_OR,
    LK_IFEXP,     /* kid[0] ? kid[1] : kid[2] */
    LK_ELEM,      /* var (array); n index kids; aux: 1 = chained a[i][j]; i: 1 = the
                     index is known to be in range (for x in a: the iteration count) */
    LK_SHAPE,     /* var (array); aux: axis (>= 0), -1: .size, -2: .ndim */
    LK_CALL,      /* aux: LF_*; n argument kids. i == LCALL_DTYPE: x.dtype.type(v),
                     var x (an array): the cast to x's dtype (loop_types.h nd_lty_fn) */
    LK_SLICE,     /* var (array); n kids (n <= ndim): an index expression or an
                     LK_SL each; axes past n are whole. Exactly one axis left
                     (a slice or a missing one) makes it a 1-D vector. aux: 1
                     chained a[i][j:k]; 2 its two axes swapped (X.T, A[i:j].T);
                     3 / 4 x[:, None] / x[None, :] (no kids) */
    LK_SL,        /* lo:hi:step of a LK_SLICE axis; kid[0..2], NULL when absent */
    LK_ALLOC,     /* a new array like array var (only as the value of LK_ASSIGN):
                     aux LA_*: var.copy(), np.copy(var), np.empty_like(var), np.zeros_like(var) */
    /* statements */
    LK_ASSIGN,    /* var = kid[0]; aux 1: var op= x (kid[0] var op x), in place on an array */
    LK_STORE,     /* var[kid[1..n-1]] = kid[0]; aux: chained */
    LK_AUGSTORE,  /* var[kid[1..n-1]] op= kid[0]; aux: chained */
    LK_MULTI,     /* n/2 targets: kid[0..m-1] are LK_VAR targets, kid[m..] values */
    LK_IF,        /* kid[0] cond; body; orelse */
    LK_FOR,       /* var = range(kid[0], kid[1], kid[2]); body. n == 4: kid[3] bounds
                     the number of iterations too (zip). i > 0: variable i - 1
                     counts the iterations from 0 (enumerate, zip, for x in a) */
    LK_WHILE,     /* kid[0] cond; body */
    LK_BREAK,
    LK_CONTINUE,
    LK_PASS,
    /* expressions again: a user helper function's call, inlined
     * (loop_parse.c): LK_LET binds aux (a binding number < LLET_MAX) to
     * kid[0]'s scalar value, evaluated once, then is kid[1]'s value, in
     * which LK_LETVAR aux reads it. Python's order: the arguments, then
     * the body's assignments in turn, then the returned value */
    LK_LET,
    LK_LETVAR
};
#define LLET_MAX 64

typedef struct nd_ln nd_ln;
struct nd_ln {
    uint8_t kind, op;
    uint16_t n;
    int line;
    int var;
    int aux;
    int64_t i;
    double f;
    nd_ln **kid;
    nd_ln **body;
    int nbody;
    nd_ln **orelse;
    int norelse;
};

/* what a variable is to the loop */
enum {
    VF_LOCAL = 1,       /* a local of the function (else a global or builtin) */
    VF_ASSIGNED = 2,    /* assigned in the loop: handed back */
    VF_READ = 4,        /* read as a scalar */
    VF_ARRAY = 8,       /* indexed: must be an ndarray */
    VF_STORED = 16,     /* an array the loop stores into */
    VF_MODULE = 32,     /* only used as math./np. (aux: which) */
    VF_BUILTIN = 64,    /* only called as a builtin (range, len, abs, ...) */
    VF_HIDDEN = 128     /* the loop's own (an iteration count): never read from
                           or handed back to the function */
};
enum { LM_MATH = 1, LM_NUMPY = 2, LM_FUNC = 3 };   /* LM_FUNC: a user helper the loop inlines */
/* LK_ALLOC's aux: what the new array holds, and its layout (C order or
 * NumPy's 'K', the prototype's axis order). The _N ones have no prototype
 * (var -1): np.zeros/np.empty/np.ones of a shape, its n kids (the sizes),
 * C order, dtype i (LT_*) */
enum { LA_COPY_C, LA_COPY_K, LA_EMPTY_K, LA_ZEROS_K, LA_ZEROS_N, LA_EMPTY_N, LA_ONES_N };

typedef struct nd_lblock nd_lblock;
typedef struct {
    nd_ln *root;          /* the loop statement */
    int nvars;
    PyObject *names;      /* tuple of str, one per variable */
    uint8_t *vflags;      /* VF_* */
    uint8_t *vmod;        /* VF_MODULE: LM_*; VF_BUILTIN: which builtin (LB_*) */
    int line;             /* first line of the loop */
    int nalloc;           /* LK_ALLOC nodes: the loop makes arrays */
    int nlets;            /* LK_LET bindings */
    nd_ln *lets[LLET_MAX]; /* each binding's LK_LET */
    PyObject *funcs;      /* tuple, per variable: None, or for a helper function the
                             loop inlines (VF_MODULE, LM_FUNC) (function, its code, its
                             defaults) as parsed: a call runs the C only with these */
    nd_lblock *arena;
} nd_lir;

enum { LCALL_DTYPE = 3 };
/* LK_CALL e along one axis of a 2-D array (op: axis + 3): np.max, np.min,
 * np.argmax, np.argmin, np.sum, np.mean (and their methods) with axis=k */
#define ND_LAXISRED(e) ((e)->op && (((e)->aux >= LF_NP_MAX && (e)->aux <= LF_NP_ARGMIN) || \
                                    (e)->aux == LF_NP_SUM || (e)->aux == LF_NP_MEAN))
#define LCAT_MAX 8   /* parts of np.concatenate((...)) / items of np.array([...]) */
enum { LB_RANGE = 1, LB_LEN, LB_ABS, LB_MIN, LB_MAX, LB_INT, LB_FLOAT, LB_BOOL, LB_ENUMERATE, LB_ZIP, LB_REVERSED, LB_ROUND };

/* allocation from the IR's arena (freed with it); NULL + MemoryError */
void *nd_lir_alloc(nd_lir *ir, size_t size);
nd_ln *nd_lir_node(nd_lir *ir, int kind, int line, int nkids);
void nd_lir_free(nd_lir *ir);
/* whether statements b[0..n) (nested blocks included) assign variable v:
 * an assignment, a for loop's target or index, a tuple assignment */
int nd_lir_binds(nd_ln *const *b, int n, int v);
/* live[v] = 1 (live: nvars bytes) for each variable the loop may read
 * before it assigns it (its value at the loop's start may matter); 0 or -1
 * with MemoryError */
int nd_lir_live_in(const nd_lir *ir, uint8_t *live);
#endif
