/* replay_guard.h -- guards on one argument of a replayed call (replay_guard.c).
 *
 * A replay entry (src/trace/trace_replay.c) remembers, per argument, what its
 * trace specialized on; a later call replays the entry only when every
 * argument fits. The checks are plain C on the objects: no Python code runs.
 */
#ifndef ND_REPLAY_GUARD_H
#define ND_REPLAY_GUARD_H
#include "graph/graph.h"

enum {
    ND_AG_ARRAY = 1,  /* exact ndarray: dtype, shape, strides, flags; identity pattern */
    ND_AG_FLOAT,      /* exact Python float: the same bits */
    ND_AG_INT,        /* exact Python int: the same value */
    ND_AG_BOOL,       /* True / False: the same object */
    ND_AG_COMPLEX,    /* exact Python complex: the same bits */
    ND_AG_NONE,       /* None */
    ND_AG_NPSCALAR,   /* NumPy scalar: the same type and bytes */
    ND_AG_STR,        /* exact str: equal */
};

typedef struct nd_argguard {
    int kind;
    int same_as;          /* ARRAY: index of an earlier argument that is the
                             same object, or -1 (then no earlier array
                             argument is this object) */
    int typenum, ndim, flags;
    npy_intp shape[ND_MAXDIMS], strides[ND_MAXDIMS];
    PyObject *value;      /* owned: scalar kinds, the value seen */
} nd_argguard;

/* Record what argument i of args[0..n) is. 0 recorded; 1 not replayable
 * (*why says why); -1 error. */
int nd_argguard_record(nd_argguard *g, PyObject *const *args, Py_ssize_t n, Py_ssize_t i,
                       const char **why);
/* 1 when args[i] fits the guard, 0 when not. Never fails. */
int nd_argguard_check(const nd_argguard *g, PyObject *const *args, Py_ssize_t i);
/* Why args[i] does not fit, e.g. "dtype of argument 0 changed: float64 ->
 * float32" (new ref, or NULL with an exception). */
PyObject *nd_argguard_miss(const nd_argguard *g, PyObject *const *args, Py_ssize_t i);
void nd_argguard_clear(nd_argguard *g);
#endif
