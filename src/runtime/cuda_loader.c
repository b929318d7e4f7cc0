/* cuda_loader.c -- libnvrtc through dlopen, numdyn.CudaError (runtime/cuda.h).
 *
 * Only the entry points numdyn calls are declared here, with the C ABI of
 * nvrtc.h / cuda.h (handles are opaque pointers, results are ints): no
 * CUDA header is needed to build numdyn. Where NVRTC is looked for is the
 * Python layer's decision (numdyn/cuda.py passes the candidates: the PyPI
 * wheel nvidia-cuda-nvrtc-cu12, then the system's sonames).
 */
#include "cuda.h"
#include "core/sb.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

PyObject *nd_CudaError;

/* ------------------------------------------------------------- NVRTC */
typedef int nvrtcResult;          /* NVRTC_SUCCESS == 0 */
typedef struct _nvrtcProgram *nvrtcProgram;
static struct {
    void *h;
    char path[4096];
    const char *(*GetErrorString)(nvrtcResult);
    nvrtcResult (*Version)(int *, int *);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int,
                                 const char *const *, const char *const *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    /* optional (NVRTC >= 11.2): the sm_XY it can emit */
    nvrtcResult (*GetNumSupportedArchs)(int *);
    nvrtcResult (*GetSupportedArchs)(int *);
} nv;

#define NVRTC_HOWTO "install NVRTC with `pip install nvidia-cuda-nvrtc-cu12` (or the CUDA " \
    "toolkit), or name the library in NUMDYN_NVRTC"

static int nvrtc_bind(void *h)
{
#define SYM(f) if (!(*(void **)&nv.f = dlsym(h, "nvrtc" #f))) return -1
    SYM(GetErrorString); SYM(Version); SYM(CreateProgram); SYM(DestroyProgram);
    SYM(CompileProgram); SYM(GetProgramLogSize); SYM(GetProgramLog); SYM(GetPTXSize);
    SYM(GetCUBINSize); SYM(GetPTX); SYM(GetCUBIN);
#undef SYM
    *(void **)&nv.GetNumSupportedArchs = dlsym(h, "nvrtcGetNumSupportedArchs");
    *(void **)&nv.GetSupportedArchs = dlsym(h, "nvrtcGetSupportedArchs");
    return 0;
}

/* _cuda_nvrtc_load(candidates) -> the path loaded. Tries each in order;
 * CudaError listing every failure when none loads. */
static PyObject *py_nvrtc_load(PyObject *self, PyObject *cands)
{
    (void)self;
    if (nv.h) return PyUnicode_FromString(nv.path);
    PyObject *seq = PySequence_Fast(cands, "_cuda_nvrtc_load: a sequence of paths");
    if (!seq) return NULL;
    PyObject *why = PyList_New(0);
    if (!why) { Py_DECREF(seq); return NULL; }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        const char *p = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, i));
        if (!p) goto fail;
        void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
        const char *e = h ? NULL : dlerror();
        if (h && nvrtc_bind(h) < 0) {
            e = "not an NVRTC library (an entry point is missing)";
            dlclose(h);
            h = NULL;
        }
        if (h) {
            nv.h = h;
            snprintf(nv.path, sizeof nv.path, "%s", p);
            Py_DECREF(seq); Py_DECREF(why);
            return PyUnicode_FromString(nv.path);
        }
        PyObject *line = PyUnicode_FromFormat("  %s: %s", p, e ? e : "cannot be loaded");
        if (!line || PyList_Append(why, line) < 0) { Py_XDECREF(line); goto fail; }
        Py_DECREF(line);
    }
    PyObject *sep = PyUnicode_FromString("\n");
    PyObject *lines = sep ? PyUnicode_Join(sep, why) : NULL;
    Py_XDECREF(sep);
    if (lines)
        PyErr_Format(nd_CudaError, "numdyn.cuda: NVRTC (libnvrtc) not found; %s. Tried:\n%U",
                     NVRTC_HOWTO, lines);
    Py_XDECREF(lines);
fail:
    Py_DECREF(seq); Py_DECREF(why);
    return NULL;
}

static int need_nvrtc(void)
{
    if (nv.h) return 0;
    PyObject *mod = PyImport_ImportModule("numdyn.cuda");
    PyObject *r = mod ? PyObject_CallMethod(mod, "_load_nvrtc", NULL) : NULL;
    Py_XDECREF(mod);
    if (!r) return -1;
    Py_DECREF(r);
    return nv.h ? 0 : -1;
}

static PyObject *py_nvrtc_version(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    int ma = 0, mi = 0;
    if (!nv.h) {
        PyErr_SetString(nd_CudaError, "numdyn.cuda: NVRTC is not loaded");
        return NULL;
    }
    if (nv.Version(&ma, &mi) != 0) {
        PyErr_SetString(nd_CudaError, "numdyn.cuda: nvrtcVersion failed");
        return NULL;
    }
    return Py_BuildValue("(ii)", ma, mi);
}

int nd_cuda_nvrtc_version(void)
{
    int ma = 0, mi = 0;
    if (need_nvrtc() < 0) return -1;
    if (nv.Version(&ma, &mi) != 0) {
        PyErr_SetString(nd_CudaError, "numdyn.cuda: nvrtcVersion failed");
        return -1;
    }
    return ma * 1000 + mi * 10;
}

int nd_cuda_nvrtc_archs(int *archs, int max)
{
    if (need_nvrtc() < 0) return -1;
    int n = 0;
    if (!nv.GetNumSupportedArchs || !nv.GetSupportedArchs || nv.GetNumSupportedArchs(&n) != 0 || n <= 0)
        return 0;
    int *all = PyMem_Malloc(sizeof(int) * (size_t)n);
    if (!all) { PyErr_NoMemory(); return -1; }
    if (nv.GetSupportedArchs(all) != 0) n = 0;
    if (n > max) {  /* keep the newest */
        memmove(all, all + (n - max), sizeof(int) * (size_t)max);
        n = max;
    }
    memcpy(archs, all, sizeof(int) * (size_t)n);
    PyMem_Free(all);
    return n;
}

/* pre: a header src #includes as "nd_prelude.h" (NULL: none) */
static int nvrtc_compile(const char *src, const char *pre, const char *arch, PyObject **log, size_t *size,
                         char **bin, int verbose)
{
    *log = NULL;
    if (bin) *bin = NULL;
    if (need_nvrtc() < 0) return -1;
    if (strncmp(arch, "compute_", 8) && strncmp(arch, "sm_", 3)) {
        PyErr_Format(PyExc_ValueError,
                     "numdyn.cuda: arch must be 'compute_XY' (PTX) or 'sm_XY' (cubin), not '%s'",
                     arch);
        return -1;
    }
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    /* --fmad=false: NumPy rounds a * b and then + c; a contracted FMA would
     * give other results than the CPU backend and NumPy */
    /* verbose: ptxas's resource report in the log (registers, spills) */
    /* -pch (pre given): NVRTC's automatic precompiled header -- the
     * prelude is parsed once a process, not once a unit (a one-kernel
     * unit 1.6 -> 1.3 s, session 29) */
    const char *opts[6] = {archopt, "--std=c++17", "--fmad=false", "-default-device"};
    int nopt = 4;
    if (pre) opts[nopt++] = "-pch";
    if (verbose) opts[nopt++] = "--ptxas-options=-v";
    const char *hname = "nd_prelude.h";
    nvrtcProgram prog = NULL;
    nvrtcResult r;
    Py_BEGIN_ALLOW_THREADS
    r = nv.CreateProgram(&prog, src, "numdyn_kernels.cu", pre ? 1 : 0, pre ? &pre : NULL, pre ? &hname : NULL);
    Py_END_ALLOW_THREADS
    if (r != 0) {
        PyErr_Format(nd_CudaError, "numdyn.cuda: nvrtcCreateProgram: %s", nv.GetErrorString(r));
        return -1;
    }
    nvrtcResult cr;
    Py_BEGIN_ALLOW_THREADS
    cr = nv.CompileProgram(prog, nopt, opts);
    Py_END_ALLOW_THREADS
    size_t ls = 0;
    char *buf = NULL;
    if (nv.GetProgramLogSize(prog, &ls) == 0 && (buf = PyMem_Malloc(ls + 1))) {
        buf[0] = 0;
        if (nv.GetProgramLog(prog, buf) != 0) buf[0] = 0;
        buf[ls] = 0;
    }
    *log = PyUnicode_DecodeUTF8(buf ? buf : "", buf ? (Py_ssize_t)strlen(buf) : 0, "replace");
    PyMem_Free(buf);
    int rc = -1;
    if (!*log) goto done;
    if (cr != 0) {
        PyErr_Format(nd_CudaError, "numdyn.cuda: NVRTC could not compile the generated CUDA "
                     "for %s (%s); this is a numdyn bug, please report it with the log:\n%U",
                     arch, nv.GetErrorString(cr), *log);
        Py_CLEAR(*log);
        goto done;
    }
    *size = 0;
    r = arch[0] == 's' ? nv.GetCUBINSize(prog, size) : nv.GetPTXSize(prog, size);
    if (r != 0) {
        PyErr_Format(nd_CudaError, "numdyn.cuda: NVRTC gave no output: %s", nv.GetErrorString(r));
        Py_CLEAR(*log);
        goto done;
    }
    if (bin) {
        *bin = PyMem_Malloc(*size + 1);
        if (!*bin) { PyErr_NoMemory(); Py_CLEAR(*log); goto done; }
        r = arch[0] == 's' ? nv.GetCUBIN(prog, *bin) : nv.GetPTX(prog, *bin);
        (*bin)[*size] = 0;
        if (r != 0) {
            PyErr_Format(nd_CudaError, "numdyn.cuda: NVRTC gave no output: %s", nv.GetErrorString(r));
            PyMem_Free(*bin);
            *bin = NULL;
            Py_CLEAR(*log);
            goto done;
        }
    }
    rc = 0;
done:
    nv.DestroyProgram(&prog);
    return rc;
}

int nd_cuda_nvrtc_compile(const char *src, const char *arch, PyObject **log, size_t *size,
                          char **bin)
{
    return nvrtc_compile(src, NULL, arch, log, size, bin, 0);
}

/* pre + body, compiled with pre as a precompiled header where NVRTC has
 * them (12.8 and later; NUMDYN_CUDA_NO_PCH=1: never) */
int nd_cuda_nvrtc_compile_pre(const char *pre, const char *body, const char *arch, PyObject **log,
                              size_t *size, char **bin)
{
    static int pch = -1;
    if (pch < 0) {
        const char *e = getenv("NUMDYN_CUDA_NO_PCH");
        int v = nd_cuda_nvrtc_version();
        if (v < 0) return -1;
        pch = v >= 12080 && !(e && *e && strcmp(e, "0"));
    }
    nd_sb u;
    nd_sb_init(&u);
    if (pch) nd_sb_puts(&u, "#include \"nd_prelude.h\"");
    else nd_sb_puts(&u, pre);
    nd_sb_puts(&u, body);
    if (nd_sb_check(&u) < 0) { nd_sb_free(&u); *log = NULL; return -1; }
    int rc = nvrtc_compile(u.p, pch ? pre : NULL, arch, log, size, bin, 0);
    nd_sb_free(&u);
    return rc;
}

/* _cuda_compile(source, arch, verbose=False, prelude=None) -> (log, bytes
 * of PTX or cubin); verbose: ptxas's registers and spills per kernel in
 * the log. prelude: source is the kernels after it, compiled as numdyn's
 * runtime compiles them (nd_cuda_nvrtc_compile_pre); the output itself is
 * returned as a third item */
static PyObject *py_compile(PyObject *self, PyObject *args)
{
    (void)self;
    const char *src, *arch, *pre = NULL;
    int verbose = 0;
    if (!PyArg_ParseTuple(args, "ss|pz", &src, &arch, &verbose, &pre)) return NULL;
    PyObject *log;
    size_t size;
    if (pre) {
        char *bin = NULL;
        if (nd_cuda_nvrtc_compile_pre(pre, src, arch, &log, &size, &bin) < 0) return NULL;
        PyObject *r = Py_BuildValue("(Nny#)", log, (Py_ssize_t)size, bin, (Py_ssize_t)size);
        PyMem_Free(bin);
        return r;
    }
    if (nvrtc_compile(src, NULL, arch, &log, &size, NULL, verbose && arch[0] == 's') < 0) return NULL;
    return Py_BuildValue("(Nn)", log, (Py_ssize_t)size);
}

static PyMethodDef methods[] = {
    {"_cuda_nvrtc_load", py_nvrtc_load, METH_O, "load NVRTC from the first path that loads"},
    {"_cuda_nvrtc_version", py_nvrtc_version, METH_NOARGS, "(major, minor) of the loaded NVRTC"},
    {"_cuda_compile", py_compile, METH_VARARGS, "NVRTC-compile CUDA C: (log, output bytes)"},
    {NULL, NULL, 0, NULL},
};

int nd_cuda_init(PyObject *module)
{
    nd_CudaError = PyErr_NewExceptionWithDoc(
        "numdyn.CudaError", "NVRTC or the CUDA driver failed; the message says what to do.",
        PyExc_RuntimeError, NULL);
    if (!nd_CudaError || PyModule_AddObjectRef(module, "CudaError", nd_CudaError) < 0) return -1;
    if (PyModule_AddFunctions(module, methods) < 0) return -1;
    if (nd_cuda_driver_init(module) < 0 || nd_cuda_alloc_init(module) < 0 ||
        nd_cuda_module_init(module) < 0 || nd_cuda_backend_init(module) < 0)
        return -1;
    return nd_cuda_source_init(module);
}
