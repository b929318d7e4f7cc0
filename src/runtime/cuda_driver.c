/* cuda_driver.c -- libcuda through dlopen (runtime/cuda.h): the device,
 * its primary context, numdyn's stream, transfers through pinned staging,
 * launches, properties, and the driver's errors as CudaError.
 *
 * Only the entry points numdyn calls are declared, with the C ABI of
 * cuda.h (handles are opaque pointers, CUdeviceptr a 64-bit integer,
 * results ints); where the driver exports a _v2 symbol (the 64-bit-size
 * ABI cuda.h's macros select) that is the one bound.
 */
#include "cuda.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUfunction;

static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*MemHostAlloc)(void **, size_t, unsigned);
    CUresult (*MemFreeHost)(void *);
    CUresult (*MemcpyHtoDAsync)(nd_cu_ptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, nd_cu_ptr, size_t, CUstream);
    CUresult (*MemcpyDtoDAsync)(nd_cu_ptr, nd_cu_ptr, size_t, CUstream);
    CUresult (*MemsetD32Async)(nd_cu_ptr, unsigned, size_t, CUstream);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*CtxSynchronize)(void);
    CUresult (*EventCreate)(void **, unsigned);
    CUresult (*EventRecord)(void *, CUstream);
    CUresult (*StreamWaitEvent)(CUstream, void *, unsigned);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

/* optional: without it the error words live in device memory */
static CUresult (*MemHostGetDevicePointer)(nd_cu_ptr *, void *, unsigned);

void *nd_cu_lib;   /* the dlopen handle (cuda_alloc.c, cuda_module.c bind their own entries) */

static struct {
    int tried, count, version;
    char why[512];          /* when count == 0: the reason */
    int dev;                /* the current device */
    int ready;
    CUcontext ctx;
    CUstream stream;
    int sm_count;
    /* pinned staging: [0, off) holds bytes of copies that may still run */
    char *stage;
    size_t cap, off;
    /* work may be queued on the stream since its last synchronization:
     * set by every function that queues some, and by every hand-out of
     * the stream's handle (extern libraries, DLPack producers queue on
     * it); nd_cu_sync with nothing queued makes no driver call */
    int pending;
} drv;

#define STAGE_MIN ((size_t)4 << 20)
#define STAGE_MAX ((size_t)64 << 20)

/* Each entry point by its exact name: the _v2 symbols where cuda.h's
 * macros select them (the 64-bit size ABI), the plain ones elsewhere -- a
 * newer _v2 of a plain one can take other arguments (CUDA 13's
 * cuCtxSynchronize_v2 takes a context). */
static void *bind(const char *name) { return dlsym(nd_cu_lib, name); }

static void driver_probe(void)
{
    if (drv.tried) return;
    drv.tried = 1;
    const char *env = getenv("NUMDYN_CUDA_DEVICE");
    drv.dev = env ? atoi(env) : 0;
    const char *names[] = {"libcuda.so.1", "libcuda.so"};
    for (size_t i = 0; i < 2 && !nd_cu_lib; i++) nd_cu_lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!nd_cu_lib) {
        snprintf(drv.why, sizeof drv.why, "no CUDA driver (libcuda.so.1 not found: %s); install "
                 "the NVIDIA driver on a machine with an NVIDIA GPU", dlerror());
        return;
    }
#define B(f) (*(void **)&cu.f = bind("cu" #f))
#define B2(f) (*(void **)&cu.f = bind("cu" #f "_v2"))
    B(Init); B(DriverGetVersion); B(DeviceGetCount); B(DeviceGet); B(DeviceGetName);
    B2(DeviceTotalMem); B(DeviceGetAttribute); B(DevicePrimaryCtxRetain); B(CtxSetCurrent);
    B(CtxGetCurrent); B2(MemGetInfo); B(MemHostAlloc); B(MemFreeHost); B2(MemcpyHtoDAsync);
    B2(MemcpyDtoHAsync); B2(MemcpyDtoDAsync); B(MemsetD32Async); B(StreamCreate);
    B(StreamSynchronize); B(CtxSynchronize); B(EventCreate); B(EventRecord); B(StreamWaitEvent);
    B(LaunchKernel); B(GetErrorString); B(GetErrorName);
    *(void **)&MemHostGetDevicePointer = bind("cuMemHostGetDevicePointer_v2");
#undef B
#undef B2
    void **all = (void **)&cu;
    for (size_t i = 0; i < sizeof cu / sizeof(void *); i++)
        if (!all[i]) {
            snprintf(drv.why, sizeof drv.why, "libcuda lacks an entry point numdyn needs (entry %zu "
                     "of its table): the NVIDIA driver is too old or broken; install a driver for "
                     "CUDA 11.4 or newer", i);
            return;
        }
    CUresult r = cu.Init(0);
    if (r != 0) {
        const char *s = NULL, *nm = NULL;
        cu.GetErrorString(r, &s);
        cu.GetErrorName(r, &nm);
        snprintf(drv.why, sizeof drv.why, "cuInit failed (%s: %s): check that an NVIDIA GPU is "
                 "visible (nvidia-smi, CUDA_VISIBLE_DEVICES) and the driver matches the kernel "
                 "module", nm ? nm : "?", s ? s : "unknown error");
        return;
    }
    cu.DriverGetVersion(&drv.version);
    int n = 0;
    if (cu.DeviceGetCount(&n) != 0 || n <= 0) {
        snprintf(drv.why, sizeof drv.why, "the CUDA driver sees no device (CUDA_VISIBLE_DEVICES?)");
        return;
    }
    if (drv.dev < 0 || drv.dev >= n) {
        snprintf(drv.why, sizeof drv.why, "NUMDYN_CUDA_DEVICE=%d but the driver sees %d device%s",
                 drv.dev, n, n == 1 ? "" : "s");
        return;
    }
    drv.count = n;
}

const char *nd_cu_unavailable(void)
{
    driver_probe();
    return drv.count > 0 ? NULL : drv.why;
}

static const char *advice(const char *name)
{
    static const struct { const char *name, *say; } A[] = {
        {"CUDA_ERROR_OUT_OF_MEMORY", "the GPU is out of memory: drop device arrays you no longer "
         "need, call numdyn.cuda.empty_cache(), or work on smaller pieces"},
        {"CUDA_ERROR_NO_BINARY_FOR_GPU", "the kernel was built for another GPU architecture: "
         "clear numdyn's cache (numdyn.utils.clear_cache()) and report it if it persists"},
        {"CUDA_ERROR_INVALID_PTX", "the driver cannot read the PTX NVRTC made: use an NVRTC no "
         "newer than the driver (numdyn.cuda.driver_version(), numdyn.cuda.nvrtc_version())"},
        {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "NVRTC is newer than the driver: update the NVIDIA "
         "driver, or install an NVRTC matching it (NUMDYN_NVRTC names the library)"},
        {"CUDA_ERROR_ILLEGAL_ADDRESS", "a kernel faulted; the CUDA context is unusable until the "
         "process restarts. This is a numdyn bug: please report it"},
        {"CUDA_ERROR_LAUNCH_FAILED", "a kernel faulted; the CUDA context is unusable until the "
         "process restarts. This is a numdyn bug: please report it"},
        {"CUDA_ERROR_ILLEGAL_INSTRUCTION", "a kernel faulted; restart the process and report it"},
        {"CUDA_ERROR_MISALIGNED_ADDRESS", "a kernel read misaligned memory; restart the process "
         "and report it"},
        {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "a kernel needs more registers than a block of "
         "256 threads gets on this GPU: a numdyn bug, please report it"},
        {"CUDA_ERROR_NO_DEVICE", "no GPU is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES"},
        {"CUDA_ERROR_INVALID_DEVICE", "check NUMDYN_CUDA_DEVICE and CUDA_VISIBLE_DEVICES"},
        {"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "the driver library does not match the kernel "
         "module: reinstall the NVIDIA driver or reboot"},
        {"CUDA_ERROR_DEVICES_UNAVAILABLE", "the GPU is in exclusive mode and busy with another "
         "process"},
    };
    for (size_t i = 0; name && i < sizeof A / sizeof A[0]; i++)
        if (!strcmp(A[i].name, name)) return A[i].say;
    return "see the CUDA driver API's documentation of this error";
}

int nd_cu_check(int res, const char *what)
{
    if (res == 0) return 0;
    const char *nm = NULL, *s = NULL;
    if (cu.GetErrorName) cu.GetErrorName(res, &nm);
    if (cu.GetErrorString) cu.GetErrorString(res, &s);
    PyErr_Format(nd_CudaError, "numdyn.cuda: %s failed: %s (%d: %s); %s", what,
                 nm ? nm : "CUDA_ERROR_UNKNOWN", res, s ? s : "no description", advice(nm));
    return -1;
}

static int need_driver(void)
{
    driver_probe();
    if (drv.count > 0) return 0;
    PyErr_Format(nd_CudaError, "numdyn.cuda: CUDA is not available: %s", drv.why);
    return -1;
}

int nd_cu_ready(void)
{
    if (drv.ready) {
        CUcontext cur = NULL;
        if (cu.CtxGetCurrent(&cur) == 0 && cur == drv.ctx) return 0;
        return nd_cu_check(cu.CtxSetCurrent(drv.ctx), "cuCtxSetCurrent");
    }
    if (need_driver() < 0) return -1;
    CUdevice d;
    if (nd_cu_check(cu.DeviceGet(&d, drv.dev), "cuDeviceGet") < 0) return -1;
    /* the primary context: CuPy, torch and the runtime API share it */
    if (nd_cu_check(cu.DevicePrimaryCtxRetain(&drv.ctx, d), "cuDevicePrimaryCtxRetain") < 0) return -1;
    if (nd_cu_check(cu.CtxSetCurrent(drv.ctx), "cuCtxSetCurrent") < 0) return -1;
    /* CU_STREAM_NON_BLOCKING: no implicit sync with the legacy default stream */
    if (nd_cu_check(cu.StreamCreate(&drv.stream, 1), "cuStreamCreate") < 0) return -1;
    if (nd_cu_check(cu.DeviceGetAttribute(&drv.sm_count, ND_CU_ATTR_SM_COUNT, d),
                    "cuDeviceGetAttribute") < 0)
        return -1;
    drv.ready = 1;
    return 0;
}

int nd_cu_current_device(void) { driver_probe(); return drv.dev; }
nd_cu_ctx_t nd_cu_context(void) { return (nd_cu_ctx_t)drv.ctx; }
nd_cu_stream_t nd_cu_stream(void)
{
    drv.pending = 1;   /* the caller queues work on it */
    return (nd_cu_stream_t)drv.stream;
}
int nd_cu_sm_count(void) { return nd_cu_ready() < 0 ? -1 : drv.sm_count; }
int nd_cu_driver_version(void) { driver_probe(); return drv.version; }

int nd_cu_attribute(int attr, int dev, int *value)
{
    if (need_driver() < 0) return -1;
    CUdevice d;
    if (nd_cu_check(cu.DeviceGet(&d, dev), "cuDeviceGet") < 0) return -1;
    return nd_cu_check(cu.DeviceGetAttribute(value, attr, d), "cuDeviceGetAttribute");
}

int nd_cu_arch(int dev)
{
    int ma, mi;
    if (nd_cu_attribute(ND_CU_ATTR_CC_MAJOR, dev, &ma) < 0 ||
        nd_cu_attribute(ND_CU_ATTR_CC_MINOR, dev, &mi) < 0)
        return -1;
    return ma * 10 + mi;
}

/* ------------------------------------------------------------ copies */
/* The waits keep the GIL: the staging buffer and the allocator are shared
 * by every thread, and a thread running numdyn's GPU work while another
 * waits could reuse staging bytes a copy still reads. */
int nd_cu_sync(void)
{
    if (!drv.pending && drv.ready) {
        drv.off = 0;
        return 0;
    }
    if (nd_cu_ready() < 0) return -1;
    CUresult r = cu.StreamSynchronize(drv.stream);
    if (nd_cu_check(r, "cuStreamSynchronize (a kernel or copy before it failed)") < 0) return -1;
    drv.off = 0;  /* every staged copy ran */
    drv.pending = 0;
    return 0;
}

int nd_cu_sync_device(void)
{
    if (nd_cu_ready() < 0) return -1;
    CUresult r = cu.CtxSynchronize();
    if (nd_cu_check(r, "cuCtxSynchronize") < 0) return -1;
    drv.off = 0;
    return 0;
}

int nd_cu_wait_stream(uintptr_t other)
{
    static void *ev;   /* one event, recorded anew for every wait */
    if (nd_cu_ready() < 0) return -1;
    if ((CUstream)other == drv.stream) return 0;
    if (!ev && nd_cu_check(cu.EventCreate(&ev, 2 /* CU_EVENT_DISABLE_TIMING */), "cuEventCreate") < 0)
        return -1;
    drv.pending = 1;
    if (nd_cu_check(cu.EventRecord(ev, (CUstream)other), "cuEventRecord (the array's stream)") < 0 ||
        nd_cu_check(cu.StreamWaitEvent(drv.stream, ev, 0), "cuStreamWaitEvent") < 0)
        return -1;
    return 0;
}

/* stream `other` waits on the device for the work numdyn's stream holds
 * now (the reverse of nd_cu_wait_stream: results handed to its producer
 * without a wait on the host) */
int nd_cu_order_after(uintptr_t other)
{
    static void *ev;
    if (nd_cu_ready() < 0) return -1;
    if ((CUstream)other == drv.stream) return 0;
    if (!ev && nd_cu_check(cu.EventCreate(&ev, 2 /* CU_EVENT_DISABLE_TIMING */), "cuEventCreate") < 0)
        return -1;
    if (nd_cu_check(cu.EventRecord(ev, drv.stream), "cuEventRecord") < 0 ||
        nd_cu_check(cu.StreamWaitEvent((CUstream)other, ev, 0), "cuStreamWaitEvent (the array's stream)") < 0)
        return -1;
    return 0;
}

/* ----------------------------------------------------- error words
 * The kernels' error words in mapped pinned host memory
 * (CU_MEMHOSTALLOC_DEVICEMAP): the host zeroes them and reads them after
 * the stream's synchronization, so a call launches no memset and no copy
 * for them. Runs take slices last-in first-out (a host step may run
 * another graph); a run that could not have its own slice -- nested
 * deeper than the block, or no mapped memory -- uses device memory.
 * A slice given back without its run's synchronization (an error) makes
 * the next take wait for the stream first: kernels may still write it.
 * NUMDYN_CUDA_DEVICE_ERRWORDS=1 (read at the first take) keeps them in
 * device memory: the form before, for a comparison on a GPU. */
static struct { int *h; nd_cu_ptr d; size_t cap, top; int dirty, broken; } ew;

int nd_cu_errwords_take(size_t n, int **host, nd_cu_ptr *dev)
{
    if (ew.broken || !MemHostGetDevicePointer) return 1;
    const char *env = ew.cap ? NULL : getenv("NUMDYN_CUDA_DEVICE_ERRWORDS");
    if (env && *env && strcmp(env, "0") != 0) {   /* the device-memory form, to compare */
        ew.broken = 1;
        return 1;
    }
    if (ew.dirty) {
        if (nd_cu_sync() < 0) return -1;
        ew.dirty = 0;
    }
    if (ew.top + n > ew.cap) {
        if (ew.top) return 1;
        size_t cap = ew.cap ? ew.cap : 256;
        while (cap < n) cap *= 2;
        if (ew.h) cu.MemFreeHost(ew.h);
        ew.h = NULL;
        ew.cap = 0;
        void *p = NULL;
        nd_cu_ptr d = 0;
        if (cu.MemHostAlloc(&p, cap * sizeof(int), 2 /* CU_MEMHOSTALLOC_DEVICEMAP */) != 0) {
            ew.broken = 1;
            return 1;
        }
        if (MemHostGetDevicePointer(&d, p, 0) != 0) {
            cu.MemFreeHost(p);
            ew.broken = 1;
            return 1;
        }
        ew.h = p;
        ew.d = d;
        ew.cap = cap;
    }
    *host = ew.h + ew.top;
    *dev = ew.d + ew.top * sizeof(int);
    ew.top += n;
    memset(*host, 0, n * sizeof(int));
    return 0;
}

void nd_cu_errwords_give(size_t n, int synced)
{
    ew.top -= n;
    if (!synced) ew.dirty = 1;
}

/* room for n staged bytes at drv.stage + drv.off (n <= STAGE_MAX) */
static int stage_room(size_t n)
{
    if (drv.stage && drv.off + n <= drv.cap) return 0;
    if (drv.off && nd_cu_sync() < 0) return -1;
    if (drv.stage && n <= drv.cap) return 0;
    size_t cap = drv.cap ? drv.cap : STAGE_MIN;
    while (cap < n) cap *= 2;
    if (cap > STAGE_MAX) cap = STAGE_MAX;
    if (drv.stage) cu.MemFreeHost(drv.stage);
    drv.stage = NULL;
    drv.cap = 0;
    void *p = NULL;
    if (nd_cu_check(cu.MemHostAlloc(&p, cap, 0), "cuMemHostAlloc (pinned staging)") < 0) return -1;
    drv.stage = p;
    drv.cap = cap;
    return 0;
}

int nd_cu_htod(nd_cu_ptr dst, const void *host, size_t n)
{
    if (nd_cu_ready() < 0) return -1;
    const char *src = host;
    while (n) {
        size_t c = n < STAGE_MAX ? n : STAGE_MAX;
        if (stage_room(c) < 0) return -1;
        char *s = drv.stage + drv.off;
        memcpy(s, src, c);
        drv.pending = 1;
        if (nd_cu_check(cu.MemcpyHtoDAsync(dst, s, c, drv.stream), "cuMemcpyHtoDAsync") < 0)
            return -1;
        drv.off += (c + 255) & ~(size_t)255;
        if (drv.off > drv.cap) drv.off = drv.cap;
        src += c;
        dst += c;
        n -= c;
    }
    return 0;
}

int nd_cu_dtoh(void *host, nd_cu_ptr src, size_t n)
{
    if (nd_cu_ready() < 0) return -1;
    char *dst = host;
    while (n) {
        size_t c = n < STAGE_MAX ? n : STAGE_MAX;
        if (stage_room(c) < 0) return -1;
        char *s = drv.stage + drv.off;
        drv.pending = 1;
        if (nd_cu_check(cu.MemcpyDtoHAsync(s, src, c, drv.stream), "cuMemcpyDtoHAsync") < 0)
            return -1;
        if (nd_cu_sync() < 0) return -1;
        memcpy(dst, s, c);
        dst += c;
        src += c;
        n -= c;
    }
    return 0;
}

int nd_cu_dtod(nd_cu_ptr dst, nd_cu_ptr src, size_t n)
{
    if (nd_cu_ready() < 0) return -1;
    if (!n) return 0;
    drv.pending = 1;
    return nd_cu_check(cu.MemcpyDtoDAsync(dst, src, n, drv.stream), "cuMemcpyDtoDAsync");
}

int nd_cu_memset32(nd_cu_ptr dst, uint32_t value, size_t count)
{
    if (nd_cu_ready() < 0) return -1;
    if (!count) return 0;
    drv.pending = 1;
    return nd_cu_check(cu.MemsetD32Async(dst, value, count, drv.stream), "cuMemsetD32Async");
}

int nd_cu_launch(nd_cu_fn_t f, unsigned grid, unsigned block, void **params)
{
    drv.pending = 1;
    return nd_cu_check(cu.LaunchKernel((CUfunction)f, grid, 1, 1, block, 1, 1, 0, drv.stream,
                                       params, NULL),
                       "cuLaunchKernel");
}

/* ------------------------------------------------------ _C functions */
/* _cuda_driver() -> (device count, driver version or 0, reason when none) */
static PyObject *py_driver(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    driver_probe();
    if (drv.count > 0) return Py_BuildValue("(iiO)", drv.count, drv.version, Py_None);
    return Py_BuildValue("(iis)", 0, drv.version, drv.why);
}

/* a device number from Python: one the driver sees, or -1 + exc */
static int device_arg(PyObject *arg)
{
    int dev = (int)PyLong_AsLong(arg);
    if (dev == -1 && PyErr_Occurred()) return -1;
    if (need_driver() < 0) return -1;
    if (dev < 0 || dev >= drv.count) {
        PyErr_Format(PyExc_ValueError, "numdyn.cuda: device %d does not exist (the driver sees %d)",
                     dev, drv.count);
        return -1;
    }
    return dev;
}

/* _cuda_device_properties(i) -> dict */
static PyObject *py_props(PyObject *self, PyObject *arg)
{
    (void)self;
    int dev = device_arg(arg);
    if (dev < 0) return NULL;
    CUdevice d;
    char name[256] = {0};
    size_t mem = 0;
    if (nd_cu_check(cu.DeviceGet(&d, dev), "cuDeviceGet") < 0 ||
        nd_cu_check(cu.DeviceGetName(name, (int)sizeof name - 1, d), "cuDeviceGetName") < 0 ||
        nd_cu_check(cu.DeviceTotalMem(&mem, d), "cuDeviceTotalMem") < 0)
        return NULL;
    static const struct { const char *key; int attr; } A[] = {
        {"major", ND_CU_ATTR_CC_MAJOR}, {"minor", ND_CU_ATTR_CC_MINOR},
        {"multi_processor_count", ND_CU_ATTR_SM_COUNT},
        {"max_threads_per_block", 1}, {"warp_size", 10}, {"clock_rate_khz", 13},
        {"memory_clock_rate_khz", 36}, {"memory_bus_width", 37}, {"l2_cache_size", 38},
        {"max_threads_per_multi_processor", 39}, {"max_shared_memory_per_block", 8},
        {"pci_bus_id", 33}, {"pci_device_id", 34},
    };
    PyObject *out = Py_BuildValue("{sssn}", "name", name, "total_memory", (Py_ssize_t)mem);
    for (size_t i = 0; out && i < sizeof A / sizeof A[0]; i++) {
        int v = 0;
        PyObject *o = nd_cu_check(cu.DeviceGetAttribute(&v, A[i].attr, d), "cuDeviceGetAttribute") < 0
                      ? NULL : PyLong_FromLong(v);
        if (!o || PyDict_SetItemString(out, A[i].key, o) < 0) Py_CLEAR(out);
        Py_XDECREF(o);
    }
    return out;
}

/* _cuda_mem_info() -> (free, total) bytes of the current device */
static PyObject *py_mem_info(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    size_t fr = 0, tot = 0;
    if (nd_cu_ready() < 0 || nd_cu_check(cu.MemGetInfo(&fr, &tot), "cuMemGetInfo") < 0) return NULL;
    return Py_BuildValue("(nn)", (Py_ssize_t)fr, (Py_ssize_t)tot);
}

/* _cuda_set_device(i): before the first use only (one device a process) */
static PyObject *py_set_device(PyObject *self, PyObject *arg)
{
    (void)self;
    int dev = device_arg(arg);
    if (dev < 0) return NULL;
    if (drv.ready && dev != drv.dev) {
        PyErr_Format(nd_CudaError, "numdyn.cuda: device %d is in use by this process; numdyn runs "
                     "on one device a process: choose it before the first GPU call "
                     "(NUMDYN_CUDA_DEVICE, or CUDA_VISIBLE_DEVICES)", drv.dev);
        return NULL;
    }
    drv.dev = dev;
    Py_RETURN_NONE;
}

static PyObject *py_ready(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    if (nd_cu_ready() < 0) return NULL;
    drv.pending = 1;   /* the stream's handle: Python code may queue work on it */
    return Py_BuildValue("(iKK)", drv.dev, (unsigned long long)(uintptr_t)drv.ctx,
                         (unsigned long long)(uintptr_t)drv.stream);
}

static PyObject *py_synchronize(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    if (nd_cu_sync() < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"_cuda_driver", py_driver, METH_NOARGS, "(device count, driver version, reason)"},
    {"_cuda_device_properties", py_props, METH_O, "properties of device i (dict)"},
    {"_cuda_mem_info", py_mem_info, METH_NOARGS, "(free, total) bytes of the device"},
    {"_cuda_set_device", py_set_device, METH_O, "choose the device (before first use)"},
    {"_cuda_ready", py_ready, METH_NOARGS, "init: (device, context, stream) handles"},
    {"_cuda_synchronize", py_synchronize, METH_NOARGS, "wait for numdyn's stream"},
    {NULL, NULL, 0, NULL},
};

int nd_cuda_driver_init(PyObject *module) { return PyModule_AddFunctions(module, methods); }
