/* cuda_module.c -- CUDA C -> cubin -> CUfunction (runtime/cuda.h).
 *
 * NVRTC compiles for the device's own architecture (a cubin: no JIT at
 * load, and a cubin from a newer NVRTC still loads on an older driver,
 * where PTX would not); a device newer than NVRTC knows gets PTX of the
 * newest architecture NVRTC has, which the driver compiles. Kernels
 * missing from the memory cache are compiled together, one NVRTC run a
 * program (its start-up and the prelude's parse cost more than a kernel);
 * the unit's output is kept on disk, keyed by everything that decides it.
 */
#include "cuda.h"
#include "graph/hash.h"
#include "codegen/codegen_cuda.h"
#include "core/counters.h"
#include "toolchain/toolchain.h"
#include <dlfcn.h>
#include <string.h>

extern void *nd_cu_lib;

typedef void *CUmodule;
static int (*ModuleLoadData)(CUmodule *, const void *);
static int (*ModuleGetFunction)(nd_cu_fn_t *, CUmodule, const char *);

/* kernel name -> function: open addressing on the name's hash */
static struct { uint64_t *key; nd_cu_fn_t *fn; size_t cap, n; } fcache;

static uint64_t name_key(const char *name)
{
    uint64_t h = nd_fnv64(name, strlen(name), ND_FNV_INIT);
    return h ? h : 1;
}

static nd_cu_fn_t fc_get(uint64_t k)
{
    if (!fcache.cap) return NULL;
    for (size_t i = k & (fcache.cap - 1); fcache.key[i]; i = (i + 1) & (fcache.cap - 1))
        if (fcache.key[i] == k) return fcache.fn[i];
    return NULL;
}

static int fc_put(uint64_t k, nd_cu_fn_t f)
{
    if ((fcache.n + 1) * 2 > fcache.cap) {
        size_t cap = fcache.cap ? 2 * fcache.cap : 256;
        uint64_t *nk = PyMem_Calloc(cap, sizeof *nk);
        nd_cu_fn_t *nf = PyMem_Calloc(cap, sizeof *nf);
        if (!nk || !nf) { PyMem_Free(nk); PyMem_Free(nf); PyErr_NoMemory(); return -1; }
        for (size_t i = 0; i < fcache.cap; i++) {
            if (!fcache.key[i]) continue;
            size_t j = fcache.key[i] & (cap - 1);
            while (nk[j]) j = (j + 1) & (cap - 1);
            nk[j] = fcache.key[i];
            nf[j] = fcache.fn[i];
        }
        PyMem_Free(fcache.key);
        PyMem_Free(fcache.fn);
        fcache.key = nk;
        fcache.fn = nf;
        fcache.cap = cap;
    }
    size_t i = k & (fcache.cap - 1);
    while (fcache.key[i] && fcache.key[i] != k) i = (i + 1) & (fcache.cap - 1);
    if (!fcache.key[i]) fcache.n++;
    fcache.key[i] = k;
    fcache.fn[i] = f;
    return 0;
}

void nd_cu_pick_arch(int dev_arch, const int *archs, int n, char *out, size_t outn)
{
    if (n <= 0) { snprintf(out, outn, "sm_%d", dev_arch); return; }
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (archs[i] == dev_arch) { snprintf(out, outn, "sm_%d", dev_arch); return; }
        /* PTX of another major version does not run (sm_90a-style
         * features aside, compute_XY PTX runs on any device >= XY) */
        if (archs[i] <= dev_arch && archs[i] > best) best = archs[i];
    }
    if (best < 0) snprintf(out, outn, "%s", "");
    else snprintf(out, outn, "compute_%d", best);
}

uint64_t nd_cu_unit_key(const char *text, size_t len, const char *arch, int driver, int nvrtc)
{
    char tail[96];
    int k = snprintf(tail, sizeof tail, "|%s|driver %d|nvrtc %d", arch, driver, nvrtc);
    uint64_t h = nd_fnv64(text, len, ND_FNV_INIT);
    return nd_fnv64(tail, (size_t)k, h);
}

/* this process's target: computed once */
static char target[32];

static int pick_target(void)
{
    if (target[0]) return 0;
    int dev = nd_cu_arch(nd_cu_current_device());
    if (dev < 0) return -1;
    int archs[64];
    int n = nd_cuda_nvrtc_archs(archs, 64);
    if (n < 0) return -1;
    nd_cu_pick_arch(dev, archs, n, target, sizeof target);
    if (!target[0]) {
        PyErr_Format(nd_CudaError, "numdyn.cuda: the GPU's architecture sm_%d is older than every "
                     "architecture this NVRTC can compile for (oldest: sm_%d); install an NVRTC "
                     "that supports it (an older CUDA toolkit's)", dev, n ? archs[0] : 0);
        return -1;
    }
    return 0;
}

static int bind(void)
{
    if (ModuleLoadData) return 0;
    *(void **)&ModuleLoadData = dlsym(nd_cu_lib, "cuModuleLoadData");
    *(void **)&ModuleGetFunction = dlsym(nd_cu_lib, "cuModuleGetFunction");
    if (!ModuleLoadData || !ModuleGetFunction) {
        ModuleLoadData = NULL;
        PyErr_SetString(nd_CudaError, "numdyn.cuda: libcuda lacks cuModuleLoadData/"
                        "cuModuleGetFunction: install a current NVIDIA driver");
        return -1;
    }
    return 0;
}

/* load image and fetch the functions names[want[j]] into fns; 0 / -1 +
 * exc (quiet: no exception, 1, when the image does not load -- a stale
 * disk entry is rebuilt) */
static int load(const char *image, int quiet, int n, const char *const *names, const int *want,
                nd_cu_fn_t *fns)
{
    CUmodule mod = NULL;
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = ModuleLoadData(&mod, image);
    Py_END_ALLOW_THREADS
    if (r != 0) {
        if (quiet) return 1;
        return nd_cu_check(r, "cuModuleLoadData (loading the kernels NVRTC compiled)");
    }
    for (int j = 0; j < n; j++) {
        nd_cu_fn_t f = NULL;
        r = ModuleGetFunction(&f, mod, names[want[j]]);
        if (r != 0) {
            if (quiet) return 1;  /* the module stays loaded: the driver owns it until exit */
            return nd_cu_check(r, "cuModuleGetFunction");
        }
        fns[want[j]] = f;
    }
    return 0;
}

int nd_cu_functions(int n, const char *const *texts, const char *const *names, nd_cu_fn_t *fns,
                    int *compiled)
{
    *compiled = 0;
    if (nd_cu_ready() < 0 || bind() < 0) return -1;
    int *want = PyMem_Calloc((size_t)(n ? n : 1), sizeof(int));
    if (!want) { PyErr_NoMemory(); return -1; }
    int nw = 0, rc = -1;
    for (int i = 0; i < n; i++) {
        fns[i] = fc_get(name_key(names[i]));
        if (fns[i]) { nd_counter_add(ND_CTR_CUDA_KERNEL_CACHE_HITS, 1); continue; }
        int dup = 0;
        for (int j = 0; j < nw; j++) if (!strcmp(names[want[j]], names[i])) dup = 1;
        if (!dup) want[nw++] = i;
    }
    nd_sb unit;
    nd_sb_init(&unit);
    char *bin = NULL;
    size_t blen = 0;
    PyObject *log = NULL;
    if (!nw) { rc = 0; goto fill; }
    const char *pre = nd_cuda_prelude();
    if (!pre || pick_target() < 0) goto done;
    nd_sb_puts(&unit, pre);
    for (int j = 0; j < nw; j++) {
        nd_sb_puts(&unit, "\n");
        nd_sb_puts(&unit, texts[want[j]]);
    }
    if (nd_sb_check(&unit) < 0) goto done;
    int nvv = nd_cuda_nvrtc_version();
    if (nvv < 0) goto done;
    uint64_t key = nd_cu_unit_key(unit.p, unit.n, target, nd_cu_driver_version(), nvv);
    const char *ext = target[0] == 's' ? ".cubin" : ".ptx";
    int got = nd_disk_blob_get(key, ext, &bin, &blen);
    if (got < 0) goto done;
    if (got) {
        int lr = load(bin, 1, nw, names, want, fns);
        if (lr == 0) {
            nd_counter_add(ND_CTR_CUDA_DISK_HITS, 1);
            goto cache;
        }
        PyMem_Free(bin);
        bin = NULL;
    }
    if (nd_cuda_nvrtc_compile_pre(pre, unit.p + strlen(pre), target, &log, &blen, &bin) < 0) goto done;
    nd_counter_add(ND_CTR_CUDA_COMPILES, 1);
    *compiled = 1;
    (void)nd_disk_blob_put(key, ext, bin, target[0] == 's' ? blen : strlen(bin) + 1);
    if (load(bin, 0, nw, names, want, fns) != 0) goto done;
cache:
    for (int j = 0; j < nw; j++)
        if (fc_put(name_key(names[want[j]]), fns[want[j]]) < 0) goto done;
fill:
    /* duplicates of a name take the function its first text made */
    for (int i = 0; i < n; i++)
        if (!fns[i]) fns[i] = fc_get(name_key(names[i]));
    rc = 0;
    for (int i = 0; i < n; i++)
        if (!fns[i]) {
            PyErr_Format(PyExc_SystemError, "numdyn.cuda: internal error: kernel %s not loaded", names[i]);
            rc = -1;
        }
done:
    Py_XDECREF(log);
    PyMem_Free(bin);
    nd_sb_free(&unit);
    PyMem_Free(want);
    return rc;
}

/* ------------------------------------------------------ _C functions */
/* _cuda_pick_arch(device_arch, [nvrtc archs]) -> "sm_XY" / "compute_XY" / "" */
static PyObject *py_pick_arch(PyObject *self, PyObject *args)
{
    (void)self;
    int dev;
    PyObject *lst;
    if (!PyArg_ParseTuple(args, "iO", &dev, &lst)) return NULL;
    PyObject *seq = PySequence_Fast(lst, "_cuda_pick_arch: a sequence of ints");
    if (!seq) return NULL;
    int a[256], n = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && n < 256; i++) {
        a[n] = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (a[n] == -1 && PyErr_Occurred()) { Py_DECREF(seq); return NULL; }
        n++;
    }
    Py_DECREF(seq);
    char out[32];
    nd_cu_pick_arch(dev, a, n, out, sizeof out);
    return PyUnicode_FromString(out);
}

/* _cuda_unit_key(text, arch, driver, nvrtc) -> int */
static PyObject *py_unit_key(PyObject *self, PyObject *args)
{
    (void)self;
    const char *text, *arch;
    Py_ssize_t len;
    int driver, nvrtc;
    if (!PyArg_ParseTuple(args, "s#sii", &text, &len, &arch, &driver, &nvrtc)) return NULL;
    return PyLong_FromUnsignedLongLong(nd_cu_unit_key(text, (size_t)len, arch, driver, nvrtc));
}

/* _cuda_target() -> the architecture this process compiles for */
static PyObject *py_target(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    if (nd_cu_ready() < 0 || pick_target() < 0) return NULL;
    return PyUnicode_FromString(target);
}

/* _cuda_blob_roundtrip(key, ext, data) -> data read back (disk cache test) */
static PyObject *py_blob(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long key;
    const char *ext, *data;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "Ksy#", &key, &ext, &data, &len)) return NULL;
    if (strcmp(ext, ".cubin") && strcmp(ext, ".ptx")) {
        PyErr_SetString(PyExc_ValueError, "_cuda_blob_roundtrip: ext is .cubin or .ptx");
        return NULL;
    }
    if (len && nd_disk_blob_put(key, ext, data, (size_t)len) < 0) {
        PyErr_SetString(PyExc_OSError, "numdyn.cuda: the cache directory cannot be written");
        return NULL;
    }
    char *b;
    size_t bl;
    int got = nd_disk_blob_get(key, ext, &b, &bl);
    if (got < 0) return NULL;
    if (!got) Py_RETURN_NONE;
    PyObject *r = PyBytes_FromStringAndSize(b, (Py_ssize_t)bl);
    PyMem_Free(b);
    return r;
}

static PyMethodDef methods[] = {
    {"_cuda_pick_arch", py_pick_arch, METH_VARARGS, "NVRTC target for a device architecture"},
    {"_cuda_unit_key", py_unit_key, METH_VARARGS, "disk cache key of a CUDA unit"},
    {"_cuda_target", py_target, METH_NOARGS, "the architecture numdyn compiles for here"},
    {"_cuda_blob_roundtrip", py_blob, METH_VARARGS, "write and read back a disk cache blob"},
    {NULL, NULL, 0, NULL},
};

int nd_cuda_module_init(PyObject *module) { return PyModule_AddFunctions(module, methods); }
