/* cuda.h -- the CUDA runtime's contract.
 *
 *   cuda_loader.c   libnvrtc through dlopen, NVRTC compiles; numdyn.CudaError
 *   cuda_driver.c   libcuda through dlopen: device, primary context, stream,
 *                   transfers (pinned staging), launches, properties
 *   cuda_alloc.c    the caching device allocator
 *   cuda_module.c   CUDA C -> cubin (NVRTC) -> CUfunction, cached in memory
 *                   and on disk (the kernel cache directory's rules)
 *   cuda_source.c   the CUDA C of a graph (numdyn.cuda.source)
 *   backend_cuda.c  the "cuda" backend: a scheduled program run on the GPU
 *
 * libnvrtc and libcuda are dlopen'ed on first use, never linked: numdyn
 * builds, imports and runs its CPU backends on machines without CUDA.
 * Every failure of NVRTC or the driver becomes a Python exception (class
 * numdyn.CudaError, a RuntimeError) whose message names the driver's error
 * (CUDA_ERROR_...) and says what to install or check.
 *
 * Device model (what other CUDA code in numdyn -- cuBLAS/cuFFT bindings --
 * relies on): one device (numdyn.cuda.current_device(), default 0), its
 * PRIMARY context (the one CuPy, torch and the CUDA runtime API use, so
 * their pointers and ours are interchangeable), and one stream of numdyn's
 * on which ALL numdyn device work is ordered: kernels, copies, and library
 * calls (a library called by numdyn must be given nd_cu_stream()). Device
 * memory from nd_cu_alloc is stream-ordered on that stream: a block freed
 * may be handed out again at once, since whatever uses it next is queued
 * after what used it before. Functions below need the GIL unless noted.
 */
#ifndef ND_CUDA_H
#define ND_CUDA_H
#include "core/npy.h"
#include "graph/graph.h"
#include <stdint.h>
#include <stddef.h>

/* registers numdyn._C's _cuda_* functions and CudaError; 0 or -1 + exc */
int nd_cuda_init(PyObject *module);
extern PyObject *nd_CudaError;

/* ------------------------------------------------------------ NVRTC */
/* Compile CUDA C `src` for architecture `arch` ("compute_80": PTX, "sm_90":
 * a cubin). Returns 0 and sets *log (new ref, NVRTC's log), *size (bytes of
 * PTX/cubin) and, when bin is not NULL, *bin (PyMem_Malloc'd output; PTX
 * is NUL-terminated); -1 with CudaError carrying the log when it does not
 * compile, or when NVRTC cannot be loaded. */
int nd_cuda_nvrtc_compile(const char *src, const char *arch, PyObject **log, size_t *size,
                          char **bin);
/* pre + body (pre: the prelude, NVRTC's precompiled header where it has them) */
int nd_cuda_nvrtc_compile_pre(const char *pre, const char *body, const char *arch, PyObject **log,
                              size_t *size, char **bin);
/* NVRTC's version as major * 1000 + minor * 10 (12090), or -1 + exc */
int nd_cuda_nvrtc_version(void);
/* The architectures NVRTC can emit a cubin for (sm_XY as XY, ascending),
 * up to max; how many (0 when NVRTC cannot tell: then only PTX is safe),
 * -1 + exc. */
int nd_cuda_nvrtc_archs(int *archs, int max);

/* cuda_source.c: _cuda_kernels(graph), _cuda_prelude() (called by nd_cuda_init) */
int nd_cuda_source_init(PyObject *module);

/* ------------------------------------------------------------ driver */
typedef uint64_t nd_cu_ptr;          /* CUdeviceptr */
typedef struct nd_cu_stream_ *nd_cu_stream_t;   /* CUstream (cudaStream_t) */
typedef struct nd_cu_ctx_ *nd_cu_ctx_t;         /* CUcontext */
typedef struct nd_cu_fn_ *nd_cu_fn_t;           /* CUfunction */

/* Why CUDA cannot be used here (no driver, no device, cuInit failed), or
 * NULL when a device is present. Never raises. */
const char *nd_cu_unavailable(void);
/* Make the device usable on this thread: driver loaded, cuInit, primary
 * context of the current device retained and made current, numdyn's
 * stream created. Cheap after the first call (one cuCtxGetCurrent). 0, or
 * -1 with CudaError (the reason nd_cu_unavailable gives). */
int nd_cu_ready(void);
int nd_cu_current_device(void);
nd_cu_ctx_t nd_cu_context(void);     /* after nd_cu_ready */
nd_cu_stream_t nd_cu_stream(void);   /* after nd_cu_ready */
/* Turn a CUresult into 0, or -1 with CudaError "numdyn.cuda: <what>:
 * CUDA_ERROR_X (driver text); <advice>" (advice by error: out of memory,
 * illegal address, no binary for the GPU, ...). */
int nd_cu_check(int res, const char *what);
/* Device attribute (CU_DEVICE_ATTRIBUTE_* number) of device dev; -1 + exc */
int nd_cu_attribute(int attr, int dev, int *value);
#define ND_CU_ATTR_SM_COUNT 16
#define ND_CU_ATTR_CC_MAJOR 75
#define ND_CU_ATTR_CC_MINOR 76
/* The device's "sm_XY" number (XY = 10 * major + minor); -1 + exc */
int nd_cu_arch(int dev);
int nd_cu_sm_count(void);            /* of the current device; -1 + exc */
int nd_cu_driver_version(void);      /* 13000 for CUDA 13.0; 0 without a driver */
int nd_cuda_driver_init(PyObject *module);

/* Transfers on numdyn's stream. Host memory goes through pinned staging
 * buffers, so `host` may be any (pageable) memory. htod returns once the
 * bytes are staged (the copy itself runs in stream order; `host` may be
 * reused at once); dtoh returns when the bytes are in `host` (it waits for
 * the stream). 0 or -1 + CudaError. */
int nd_cu_htod(nd_cu_ptr dst, const void *host, size_t n);
int nd_cu_dtoh(void *host, nd_cu_ptr src, size_t n);
int nd_cu_dtod(nd_cu_ptr dst, nd_cu_ptr src, size_t n);
int nd_cu_memset32(nd_cu_ptr dst, uint32_t value, size_t count);
/* Wait until everything queued on numdyn's stream ran. 0 / -1 + exc. */
int nd_cu_sync(void);
/* n zeroed error words for a run's kernels in mapped pinned host memory:
 * *host for the host, *dev for the kernels; 0, 1 when none (the caller
 * uses device memory), -1 + exc. Given back last-in first-out, with
 * synced 0 when kernels may still write them. */
int nd_cu_errwords_take(size_t n, int **host, nd_cu_ptr *dev);
void nd_cu_errwords_give(size_t n, int synced);
/* ... on every stream of the context (cuCtxSynchronize): before reading
 * memory another library's streams may still be writing */
int nd_cu_sync_device(void);
/* numdyn's stream waits (on the device, the host does not) for the work
 * queued so far on stream `other` (a CUstream, or CUDA Array Interface's 1
 * and 2: the legacy and per-thread default streams): before a kernel reads
 * an array another library's stream produces. 0 / -1 + exc. */
int nd_cu_wait_stream(uintptr_t other);
int nd_cu_order_after(uintptr_t other);   /* other waits for numdyn's stream's work so far */
#define ND_CU_THREADS 256   /* threads of a block: kernels/nd_cuda.h's ND_THREADS */
#define ND_CU_NARROW 16     /* reductions this short: a thread a row (nd_cuda.h's ND_NARROW) */
#define ND_CU_SPLIT_SLOT 16 /* bytes of a split reduction's partial (ND_SPLIT_SLOT) */
#define ND_CU_KMAX_NODES 256 /* nodes a GPU kernel may inline (passes/schedule.h) */
/* Launch f with grid x ND_THREADS-thread blocks on numdyn's stream;
 * params as cuLaunchKernel's kernelParams. 0 / -1 + exc. */
int nd_cu_launch(nd_cu_fn_t f, unsigned grid, unsigned block, void **params);

/* ------------------------------------------------------- allocator */
/* Device memory from the caching allocator (cuda_alloc.c): sizes rounded
 * to classes (512 B..1 MiB: powers of two; larger: 2 MiB multiples); a
 * freed block goes to its class's free list and is handed out again before
 * the driver is asked; when cuMemAlloc runs out of memory the cached blocks
 * are released and it is asked once more. n == 0 gives a valid 1-class
 * block. 0 with *p set, or -1 with CudaError (out of memory: what numdyn
 * holds, what to do). */
int nd_cu_alloc(size_t n, nd_cu_ptr *p);
void nd_cu_free(nd_cu_ptr p);        /* p from nd_cu_alloc, or 0 */
/* Give every cached (free) block back to the driver; 0 / -1 + exc */
int nd_cu_empty_cache(void);
/* the compiled programs' launch arguments kept on the device between
 * calls (backend_cuda.c): their bytes (allocated, counted in the
 * allocator's in use), and dropping them (empty_cache) */
extern size_t nd_cu_kept_arg_bytes;
size_t nd_cu_alloc_size(size_t n);   /* the bytes nd_cu_alloc(n) takes (its size class) */
void nd_cu_drop_kept_args(void);
/* dict: allocated_bytes (in use, rounded), reserved_bytes (in use +
 * cached), peak_allocated_bytes, alloc_calls, cache_hits, driver_allocs,
 * driver_frees, blocks_in_use, blocks_cached */
PyObject *nd_cu_memory_stats(void);
int nd_cuda_alloc_init(PyObject *module);

/* --------------------------------------------------------- modules */
/* The CUfunction of each kernel: name[i] (an extern "C" symbol) defined by
 * the CUDA C text[i]; from the memory cache, else the kernels missing are
 * compiled as one unit (the prelude, kernels/nd_cuda.h, then their texts)
 * whose cubin is looked for in the disk cache first (keyed by the unit's
 * text, the target architecture, the driver's and NVRTC's versions:
 * nd_cu_unit_key). *compiled: 1 when NVRTC ran. 0 / -1 + exc (CudaError
 * with NVRTC's log when it does not compile). */
int nd_cu_functions(int n, const char *const *texts, const char *const *names, nd_cu_fn_t *fns,
                    int *compiled);
/* The target for a device of architecture XY given the sm_XY NVRTC can
 * emit (ascending; n == 0: unknown): "sm_XY" when NVRTC emits it (or
 * cannot tell), else "compute_AB" PTX of the newest AB <= XY it knows (the
 * driver compiles it for the device); "" when none fits. */
void nd_cu_pick_arch(int dev_arch, const int *archs, int n, char *out, size_t outn);
uint64_t nd_cu_unit_key(const char *text, size_t len, const char *arch, int driver, int nvrtc);
int nd_cuda_module_init(PyObject *module);

/* ---------------------------------------------------------- backend */
/* A device array: a buffer of nd_cu_alloc (or borrowed), NumPy's layout
 * words (strides in bytes). */
typedef struct nd_cu_array {
    nd_cu_ptr ptr;
    size_t nbytes;          /* bytes the buffer spans from ptr */
    int ndim, dtype, itemsize;
    npy_intp shape[ND_MAXDIMS], strides[ND_MAXDIMS];
} nd_cu_array;

/* GPU forms of EXTERN steps (matmul through cuBLAS, FFTs...), registered by
 * the library bindings at module init. The backend offers each EXTERN step
 * (graph.h: node id, its operands in[0..nin) on the device, C-contiguous or
 * not) to the registered functions in order: one returns 1 when it
 * computed the node -- *out filled with an nd_cu_alloc buffer of the
 * node's dtype and shape, laid out as NumPy lays out its result; work
 * queued on nd_cu_stream() --, 0 when it does not handle this node or
 * these operands (then the next one is asked, and at the end the host runs
 * it with NumPy, counted in cuda_host_steps), -1 with an exception. */
typedef int (*nd_cu_extern_fn)(nd_graph *g, nd_id id, const nd_cu_array *const *in, int nin,
                               nd_cu_array *out);
int nd_cu_register_extern(nd_cu_extern_fn fn, const char *name);
/* numdyn.cuda.DeviceBuffer (backend_cuda.c), the memory of a numdyn.Tensor
 * on CUDA (src/tensor/). A buffer is complete when handed out (its CUDA
 * Array Interface says stream None): upload and copy wait for numdyn's
 * stream. */
int nd_cu_devbuf_check(PyObject *o);
const nd_cu_array *nd_cu_devbuf_array(PyObject *o);   /* borrowed; o a DeviceBuffer */
/* an ndarray up to the device, in its layout (a non-dense one: a C copy) */
PyObject *nd_cu_devbuf_upload(PyObject *array);
/* memory of another library (a DLPack or CUDA Array Interface producer):
 * owner is held until the last view of it dies */
PyObject *nd_cu_devbuf_borrow(const nd_cu_array *a, PyObject *owner);
PyObject *nd_cu_devbuf_get(PyObject *o);               /* a host copy (ndarray) */
/* src's bytes into dst (same dtype, shape and dense layout; else
 * NotImplementedError); 0 / -1 + exc */
int nd_cu_devbuf_copy(PyObject *dst, PyObject *src);
int nd_cuda_backend_init(PyObject *module);

/* The graph scheduled for the GPU (cuda_source.c): the native schedule
 * with kernels of up to ND_CU_KMAX_NODES nodes. What runs (backend_cuda.c)
 * and what numdyn.cuda.source shows come from here. */
struct nd_program;
struct nd_program *nd_cuda_schedule(nd_graph *g, const nd_id *outs, int nout);


/* numdyn.device("cuda") on this thread (nesting depth; 0: off): the
 * built-in compiling backends run their graphs on the GPU and the speed
 * floor does not replace them by NumPy. */
extern _Thread_local int nd_cuda_device_depth;
#endif
