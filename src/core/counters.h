/* counters.h -- process-wide statistics every layer may count into. */
#ifndef ND_COUNTERS_H
#define ND_COUNTERS_H
#include "npy.h"

/* Counters shown as numdyn.utils.counters (counters.c). */
typedef enum {
    ND_CTR_KERNELS_COMPILED, ND_CTR_KERNEL_CACHE_HITS, ND_CTR_DISK_CACHE_HITS,
    ND_CTR_GRAPHS, ND_CTR_GRAPH_BREAKS, ND_CTR_RECOMPILES, ND_CTR_GRAPH_CACHE_HITS,
    ND_CTR_FLUSHES,
    ND_CTR_REPLAYS,        /* calls answered by a recorded trace (trace_replay.c) */
    ND_CTR_REPLAY_MISSES,  /* calls whose guards fit no recorded trace: traced again */
    ND_CTR_ERRSTATE_RERUNS, /* graphs run again by NumPy for np.errstate (runtime_native.c) */
    ND_CTR_FLOOR_NUMPY_CALLS, /* calls the speed floor ran as plain NumPy (runtime/floor.h) */
    ND_CTR_LOOP_RUNS,      /* captured loops run as C (trace/loop_run.c) */
    ND_CTR_LOOP_FALLBACKS, /* captured loops Python ran (a signature C cannot compute in) */
    ND_CTR_LOOP_DEOPTS,    /* C loops stopped and rerun by Python (a Python int past int64...) */
    ND_CTR_KERNEL_RUNS,    /* generated kernels run (runtime_native.c): fusion shows as fewer */
    ND_CTR_GRAPH_COMPILES, /* programs compiled for a new call signature (trace_control.c) */
    ND_CTR_EAGER_CALLS,    /* calls of compiled functions run as the plain function (trace_control.c) */
    ND_CTR_COMPILING_RUNS, /* graphs NumPy ran while their kernels compiled in the
                              background (runtime/backend_native.c) */
    ND_CTR_FLUSH_NODES,    /* nodes the flushes' ancestor walks visited (graph.c): per flush,
                              what it needs, not how long the capture has run */
    ND_CTR_BYTES_READ,     /* bytes of arrays kernels read (runtime_native.c): an array
                              counts once per kernel run, over the elements it
                              walks; passes over memory = bytes_read / nbytes */
    ND_CTR_KERNEL_RUNS_ALONE, /* kernel runs big enough for the OpenMP team that ran on
                                 the calling thread, measured faster there (runtime/par.h) */
    ND_CTR_AD_SAVED_BYTES,  /* bytes vjp forwards saved for their backward: the minimum cut
                               (passes/autodiff.h, nd_autodiff_partition) */
    ND_CTR_AD_BOUNDARY_BYTES, /* bytes of the forward values those backwards read directly:
                                 what saving each of them would have kept */
    ND_CTR_AD_RECOMPUTED,   /* forward nodes vjp backwards recompute instead of saving */
    ND_CTR_ESCAPE_WALKS,    /* traced calls whose end walked their arguments, cells and
                               globals for lazy values left there (trace_escapes.c):
                               only when a lazy value has a reference the result
                               does not explain */
    ND_CTR_ERRSTATE_QUERIES, /* np.geterr() calls the tracer made to learn whether traced
                                arithmetic may raise (trace_handlers.c): once per
                                error state, not per operation */
    ND_CTR_BASE_COPY_BYTES, /* bytes a SETITEM (or a fancy-index scatter) copied from its base's
                               array before writing its region (runtime_native.c,
                               shim_advidx.c): what in-place writes avoid */
    ND_CTR_LOOP_PENDING_RUNS, /* captured loops Python ran on real arrays while their C
                                 compiled in the background (trace/loop_run.c) */
    /* the CUDA backend (runtime/backend_cuda.c, cuda_module.c) */
    ND_CTR_CUDA_LAUNCHES,   /* kernels launched on the GPU */
    ND_CTR_CUDA_HOST_STEPS, /* steps of GPU programs NumPy ran on the host (externs without
                               a GPU form, eager steps): their operands went to the host */
    ND_CTR_CUDA_COMPILES,   /* NVRTC runs (units of kernels) */
    ND_CTR_CUDA_DISK_HITS,  /* units loaded from the disk cache's cubins */
    ND_CTR_CUDA_KERNEL_CACHE_HITS, /* kernels found loaded in memory */
    ND_CTR_CUDA_H2D_BYTES,  /* bytes copied host -> device */
    ND_CTR_CUDA_D2H_BYTES,  /* bytes copied device -> host */
    ND_CTR_CUDA_GRAPH_CACHE_HITS, /* GPU programs found scheduled and loaded */
    ND_CTR_AD_ALIASED,      /* forward values a differentiated call read from values its
                               caller already held instead of computing them (the Tensor
                               tape's step outputs; trace_grad.c, nd_trace_grad_alias) */
    ND_CTR_KEY_NODES,       /* graph nodes hashed to look a graph up in the program cache
                               (backend_native.c): a replayed call whose entry knows its
                               key hashes none */
    ND_CTR_CUDA_SPLIT_REDUCTIONS, /* reduction launches split over several blocks a row
                                     (backend_cuda.c: few long rows, a full sum) */
    ND_CTR_FOREIGN_SNAPSHOT_BYTES, /* bytes of real arrays the function's code holds (not
                               arguments) copied when a traced op read them (trace_lift.c) */
    ND_CTR_BLAS_RUNS_ONE_THREAD, /* matmul steps run with OpenBLAS on one thread, measured
                                    faster so on a busy machine (runtime/par.h) */
    ND_CTR_WRITEBACK_NODES, /* nodes the write-backs of caller arrays, and calls handing arrays
                               to code outside the graph, walked for old contents still read
                               (trace_flush.c, trace_outside.c): what is live, not the capture's
                               length */
    ND_CTR_KERNEL_TEXTS,    /* kernels whose C text was made (backend_native.c): a kernel whose
                               structure was seen is named without it (codegen_memo.c) */
    ND_CTR_CHUNK_FLUSHES,   /* flushes of a long run of lazy statements, made to keep the
                               graph bounded (trace_flush.c nd__flush_chunk) */
    ND_CTR_LOOP_SNAPSHOT_BYTES, /* bytes of arrays captured loops copied before running, to put
                                   back if they deoptimize (trace/loop_run.c) */
    ND_CTR_ARG_SIGNATURES,  /* passes over a top-level call's arguments to sign them
                               (guards/fn_programs.c nd_callsig): one a call, shared by
                               admission and the speed floor */
    ND_CTR_KERNEL_VARIANTS, /* kernels built again with every run-time variant: generated
                               for other sizes, they met sizes taking one they left out
                               (runtime_native.c, ND_ERR_VARIANT) */
    ND_CTR_COUNT
} nd_counter;
void nd_counter_add(nd_counter c, long long v);
long long nd_counter_get(nd_counter c);
PyObject *nd_counters_dict(void);
void nd_counters_reset(void);
#endif
