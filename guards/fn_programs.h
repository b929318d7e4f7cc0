/* fn_programs.h -- one compiled function's programs, keyed by the
 * signature of the calls that made them (fn_programs.c).
 *
 * A *program* is what numdyn compiled for one argument signature: per
 * argument its type and, for arrays, what kernels specialize on (dtype,
 * rank, size-1 dims, layout, alignment, byte order) plus the sizes of dims
 * marked static (dim_marks.h). Python scalars count by type only: their
 * values are kernel parameters. A call whose signature is new is a
 * recompile (after the first); the table says why (the nearest program's
 * first guard that fails), knows the guards of each program (explain's
 * out_guards, guard_export_fn) and their compile times. What to do with a
 * new signature (compile, run eagerly past cache_size_limit, refuse) is
 * the caller's policy (src/trace/trace_control.c).
 */
#ifndef ND_FN_PROGRAMS_H
#define ND_FN_PROGRAMS_H
#include "core/npy.h"

typedef struct nd_sigarg {
    PyObject *type;       /* owned */
    int typenum, ndim;    /* arrays (typenum -1 otherwise) */
    int layout;           /* 1 C-contiguous, 2 F-contiguous, 3 strided */
    int aligned, swapped;
    uint64_t ones;        /* dims of size 1 */
    uint64_t stat;        /* specialized dims ... */
    npy_intp size[ND_MAXDIMS]; /* ... and their sizes */
    const void *addr;     /* the data pointer, where mark_static_address(guard=True) */
} nd_sigarg;

typedef struct nd_progent {
    uint64_t hash;
    Py_ssize_t nargs;     /* positional */
    PyObject *kwnames;    /* owned tuple or NULL */
    int n;
    nd_sigarg *a;
    double compile_s;     /* the call that compiled it */
    long long calls;
} nd_progent;

typedef struct nd_programs {
    Py_ssize_t n, cap;
    nd_progent *e;
} nd_programs;

/* The signature hash of a call (vectorcall convention). spec_all: every
 * dim not marked dynamic is specialized (compile(dynamic=False)). Plain C
 * over the arguments; never fails. */
uint64_t nd_progsig_hash(PyObject *const *args, size_t nargsf, PyObject *kwnames, int spec_all);
/* The same hash and, in the same pass over the arguments, *cost (when not
 * NULL): what decides the call's cost -- the speed floor's key
 * (runtime/floor.h): types; for arrays dtype, rank, size class (which dims
 * are 0 or 1, the element count to a factor of 4), memory order and
 * writeability; tuples' and lists' items (their length by class); the
 * values of strings, bools and None; never a scalar's value (a loop count
 * scales every path alike). One pass a call for both (counter
 * arg_signatures): admission and the floor hashed the arguments apart.
 * The cost key counts the arguments, not how they were passed. */
uint64_t nd_callsig(PyObject *const *args, size_t nargsf, PyObject *kwnames, int spec_all,
                    uint64_t *cost);
/* Index of the program with that hash, or -1. */
Py_ssize_t nd_programs_find(const nd_programs *p, uint64_t hash);
/* Add the call's signature; its index, or -1 with an exception. */
Py_ssize_t nd_programs_add(nd_programs *p, uint64_t hash, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames, int spec_all);
/* Why the call fits no program: the first failing guard of the nearest
 * one, naming the argument (names: tuple of the function's positional
 * parameter names, or NULL). *guard (new ref) gets that guard's text.
 * New ref, or NULL with an exception. */
PyObject *nd_programs_miss(const nd_programs *p, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames, int spec_all, PyObject *names, PyObject **guard);
/* The guards of program i as a list of str (new ref). */
PyObject *nd_programs_guards(const nd_programs *p, Py_ssize_t i, PyObject *names);
void nd_programs_clear(nd_programs *p);
int nd_programs_traverse(const nd_programs *p, visitproc visit, void *arg);
#endif
