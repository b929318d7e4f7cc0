/* counters.c -- process-wide counters behind numdyn.utils.counters. */
#include "counters.h"

static long long counters[ND_CTR_COUNT];
static const char *counter_names[ND_CTR_COUNT] = {
    "kernels_compiled", "kernel_cache_hits", "disk_cache_hits", "graphs",
    "graph_breaks", "recompiles", "graph_cache_hits", "flushes", "replays", "replay_misses",
    "errstate_reruns",
    "floor_numpy_calls", "loop_runs", "loop_fallbacks", "loop_deopts", "kernel_runs",
    "graph_compiles", "eager_calls", "compiling_runs", "flush_nodes",
    "bytes_read", "kernel_runs_alone",
    "ad_saved_bytes", "ad_boundary_bytes", "ad_recomputed_nodes",
    "escape_walks", "errstate_queries", "base_copy_bytes",
    "loop_pending_runs",
    "cuda_launches", "cuda_host_steps", "cuda_compiles", "cuda_disk_hits",
    "cuda_kernel_cache_hits", "cuda_h2d_bytes", "cuda_d2h_bytes", "cuda_graph_cache_hits",
    "ad_aliased_values", "key_nodes",
    "cuda_split_reductions", "foreign_snapshot_bytes",
    "blas_runs_one_thread", "writeback_nodes", "kernel_texts", "chunk_flushes",
    "loop_snapshot_bytes", "arg_signatures", "kernel_variants",
};

void nd_counter_add(nd_counter c, long long v)
{
    /* counters are statistics: a lost update under free-threading is fine,
     * and with the GIL every caller holds it */
    counters[c] += v;
}

long long nd_counter_get(nd_counter c) { return counters[c]; }

PyObject *nd_counters_dict(void)
{
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int i = 0; i < ND_CTR_COUNT; i++) {
        PyObject *v = PyLong_FromLongLong(counters[i]);
        if (!v || PyDict_SetItemString(d, counter_names[i], v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

void nd_counters_reset(void)
{
    for (int i = 0; i < ND_CTR_COUNT; i++) counters[i] = 0;
}
