/* backend.h -- how a standalone graph (see nd_graph_extract) is run.
 *
 * A backend takes a graph whose INPUT nodes hold ndarrays and the ids of the
 * nodes to compute, and returns a list of ndarrays (new ref), one per out, or
 * NULL with an exception set. 0-d results are 0-d arrays; turning them into
 * NumPy scalars is the shim's business.
 */
#ifndef ND_BACKEND_H
#define ND_BACKEND_H
#include "graph.h"

/* Eager: op by op with NumPy (src/backend_eager.c). */
PyObject *nd_backend_eager_run(nd_graph *g, const nd_id *outs, int nout);
/* Evaluate one node with NumPy from its inputs' arrays (borrowed, in order
 * in[0..nin-1], or extra[] for EXTERN). New ref. Used by the eager backend,
 * Graph.__call__, and the native runtime for nodes it does not compile. */
PyObject *nd_eval_node(nd_graph *g, nd_id id, PyObject *const *inputs);
/* nd_eval_node into vals[id] (new ref; vals has g->n entries), except that
 * a multi-output extern (graph.h, EXTERN with aux >= 0) calls NumPy once for
 * all its outputs: every other output j of the same call with vals[j] NULL
 * and (want == NULL || want[j]) is stored too. Backends evaluate through it
 * (and skip a node whose vals entry is already set) so svd, qr, eigh,
 * histogram... run once per run. 0, or -1 with an exception set (what was
 * stored stays in vals, owned by the caller). */
int nd_eval_extern_group(nd_graph *g, nd_id id, PyObject *const *inputs, PyObject **vals,
                         const char *want);
/* Nonzero when b (not yet computed) is another output of a's NumPy call. */
int nd_extern_sibling(const nd_node *a, const nd_node *b);

/* Outputs whose node asks for a memory order (ND_F_KORDER, graph.h) are
 * replaced in `list` (one array per out) by copies in that order unless
 * already so laid out: NumPy lays out a ufunc of Fortran arrays in Fortran
 * order, and what the caller gets must match (runtime_alloc.c). 0 / -1. */
int nd_outputs_in_order(nd_graph *g, const nd_id *outs, int nout, PyObject *list);

/* Native: fused C kernels (src/backend_native.c and friends). Falls back to
 * nd_eval_node for nodes it cannot compile. */
PyObject *nd_backend_native_run(nd_graph *g, const nd_id *outs, int nout,
                                PyObject *options);
int nd_native_init(PyObject *module);

/* Counters shown as numdyn.utils.counters (src/runtime_counters.c). */
typedef enum {
    ND_CTR_KERNELS_COMPILED, ND_CTR_KERNEL_CACHE_HITS, ND_CTR_DISK_CACHE_HITS,
    ND_CTR_GRAPHS, ND_CTR_GRAPH_BREAKS, ND_CTR_RECOMPILES, ND_CTR_GRAPH_CACHE_HITS,
    ND_CTR_FLUSHES,
    ND_CTR_REPLAYS,        /* calls answered by a recorded trace (trace_replay.c) */
    ND_CTR_REPLAY_MISSES,  /* calls whose guards fit no recorded trace: traced again */
    ND_CTR_ERRSTATE_RERUNS, /* graphs run again by NumPy for np.errstate (runtime_native.c) */
    ND_CTR_FLOOR_NUMPY_CALLS, /* calls the speed floor ran as plain NumPy (floor.h) */
    ND_CTR_COUNT
} nd_counter;
void nd_counter_add(nd_counter c, long long v);
PyObject *nd_counters_dict(void);
void nd_counters_reset(void);
#endif
