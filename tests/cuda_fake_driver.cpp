/* cuda_fake_driver.cpp -- a CUDA driver and NVRTC for machines without a
 * GPU (tests/test_cuda_emulated_device.py): built as libcuda.so.1 and
 * named by NUMDYN_NVRTC too, it lets numdyn's CUDA backend run end to end
 * -- device, context, stream, allocations, copies, module loads, launches
 * -- with the generated kernels run on the host by tests/cuda_host_emu.h.
 *
 * "NVRTC" keeps the CUDA C as its "cubin"; cuModuleLoadData compiles it
 * with g++ after cuda_host_emu.h (NUMDYN_EMU_INC: that header's folder;
 * NUMDYN_EMU_PCH/NUMDYN_EMU_PRELUDE: see cuModuleLoadData);
 * the emulation's runtime (launcher, barriers) is compiled in here, once.
 * Device memory is its own mmap'ed range, and every entry point checks that
 * device pointers point there and host pointers do not, so the backend
 * mixing them up fails loudly here as it would fault on a GPU. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <functional>
#include <map>
#include "cuda_host_emu_rt.cpp"

typedef int CUresult;
typedef uint64_t CUdeviceptr;
#define EXPORT extern "C" __attribute__((visibility("default")))

/* ------------------------------------------------------ device memory */
static char *dev_lo, *dev_hi, *dev_next;
static std::map<CUdeviceptr, size_t> live;
static size_t dev_cap = (size_t)1 << 32;   /* reserved, not committed */
static long long launches, allocs;
/* driver calls by entry point (nd_fake_calls): what a warm call costs in
 * driver work, counted by tests/test_cuda_device.py */
static std::map<std::string, long long> ncalls;
#define CALL() (ncalls[__func__]++)

static void fail(const char *what)
{
    fprintf(stderr, "cuda_fake_driver: %s\n", what);
    abort();
}

static int is_dev(const void *p) { return (const char *)p >= dev_lo && (const char *)p < dev_hi; }

static void check_dev(CUdeviceptr p, size_t n, const char *what)
{
    if (!n) return;
    if (!is_dev((const void *)p) || !is_dev((const char *)p + n - 1)) {
        fprintf(stderr, "cuda_fake_driver: %s: %llx is not device memory\n", what, (unsigned long long)p);
        abort();
    }
    /* within one live allocation */
    auto it = live.upper_bound(p);
    if (it == live.begin()) fail("device pointer before every allocation");
    --it;
    if (p + n > it->first + it->second) {
        fprintf(stderr, "cuda_fake_driver: %s: [%llx, +%zu) overruns its allocation [%llx, +%zu)\n",
                what, (unsigned long long)p, n, (unsigned long long)it->first, it->second);
        abort();
    }
}

static void check_host(const void *p, const char *what)
{
    if (is_dev(p)) {
        fprintf(stderr, "cuda_fake_driver: %s: a device pointer where host memory belongs\n", what);
        abort();
    }
}

EXPORT CUresult cuInit(unsigned) {
    if (!dev_lo) {
        void *m = mmap(NULL, dev_cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return 2;
        dev_lo = dev_next = (char *)m;
        dev_hi = dev_lo + dev_cap;
    }
    return 0;
}
EXPORT CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
EXPORT CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
EXPORT CUresult cuDeviceGet(int *d, int i) { if (i != 0) return 101; *d = 0; return 0; }
EXPORT CUresult cuDeviceGetName(char *name, int len, int) { snprintf(name, (size_t)len, "numdyn fake GPU"); return 0; }
EXPORT CUresult cuDeviceTotalMem_v2(size_t *b, int) { *b = (size_t)1 << 30; return 0; }
EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, int)
{
    switch (attr) {
    case 16: *v = 1; return 0;           /* SM count: small grids */
    case 75: *v = 9; return 0;           /* compute capability 9.0 */
    case 76: *v = 0; return 0;
    case 1: *v = 1024; return 0;
    case 10: *v = 32; return 0;
    default: *v = 0; return 0;
    }
}
static int ctx_token;
EXPORT CUresult cuDevicePrimaryCtxRetain(void **c, int) { *c = &ctx_token; return 0; }
static thread_local void *current;
EXPORT CUresult cuCtxSetCurrent(void *c) { CALL(); current = c; return 0; }
EXPORT CUresult cuCtxGetCurrent(void **c) { CALL(); *c = current; return 0; }
EXPORT CUresult cuMemGetInfo_v2(size_t *f, size_t *t) { *t = (size_t)1 << 30; *f = *t - (size_t)(dev_next - dev_lo); return 0; }
/* CU_MEMHOSTALLOC_DEVICEMAP (2): host memory the kernels may address, here
 * a block of the "device" range (its host and device pointers are one, as
 * with unified addressing) -- so copies from or to it fail as a misuse */
static std::map<void *, size_t> mapped;
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n);
EXPORT CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags)
{
    CALL();
    if (!(flags & 2)) { *p = malloc(n); return *p ? 0 : 2; }
    CUdeviceptr d;
    CUresult r = cuMemAlloc_v2(&d, n);
    ncalls["cuMemAlloc_v2"]--;
    if (r) return r;
    *p = (void *)d;
    mapped[*p] = n;
    return 0;
}
EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned flags)
{
    CALL();
    if (flags || !mapped.count(p)) return 1;   /* CUDA_ERROR_INVALID_VALUE */
    *d = (CUdeviceptr)p;
    return 0;
}
EXPORT CUresult cuMemFreeHost(void *p)
{
    CALL();
    if (mapped.erase(p)) { live.erase((CUdeviceptr)p); return 0; }
    free(p);
    return 0;
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    CALL();
    if (!current) fail("cuMemAlloc without a current context");
    size_t need = (n + 255) & ~(size_t)255;
    const char *lim = getenv("NUMDYN_FAKE_GPU_BYTES");
    size_t used = 0;
    for (auto &kv : live) used += kv.second;
    if (lim && used + n > (size_t)atoll(lim)) return 2;   /* CUDA_ERROR_OUT_OF_MEMORY */
    if (dev_next + need > dev_hi) return 2;
    *p = (CUdeviceptr)dev_next;
    dev_next += need;
    live[*p] = n;
    allocs++;
    return 0;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    CALL();
    if (!live.erase(p)) fail("cuMemFree of no allocation");
    return 0;
}
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, void *)
{
    CALL();
    check_dev(d, n, "cuMemcpyHtoDAsync dst");
    check_host(h, "cuMemcpyHtoDAsync src");
    memcpy((void *)d, h, n);
    return 0;
}
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, void *)
{
    CALL();
    check_dev(d, n, "cuMemcpyDtoHAsync src");
    check_host(h, "cuMemcpyDtoHAsync dst");
    memcpy(h, (const void *)d, n);
    return 0;
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *)
{
    CALL();
    check_dev(d, n, "cuMemcpyDtoDAsync dst");
    check_dev(s, n, "cuMemcpyDtoDAsync src");
    memmove((void *)d, (const void *)s, n);
    return 0;
}
EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *)
{
    CALL();
    check_dev(d, n * 4, "cuMemsetD32Async");
    for (size_t i = 0; i < n; i++) memcpy((char *)d + 4 * i, &v, 4);
    return 0;
}
static int stream_token;
EXPORT CUresult cuStreamCreate(void **s, unsigned) { *s = &stream_token; return 0; }
EXPORT CUresult cuStreamSynchronize(void *) { CALL(); return 0; }
static long long ctx_syncs, stream_waits, handovers;
EXPORT CUresult cuCtxSynchronize(void) { CALL(); ctx_syncs++; return 0; }
static int event_token;
static void *recorded_on;   /* the stream the event was last recorded on */
EXPORT CUresult cuEventCreate(void **e, unsigned) { *e = &event_token; return 0; }
EXPORT CUresult cuEventRecord(void *e, void *s)
{
    CALL();
    if (e != &event_token) fail("cuEventRecord of no event");
    /* another library's stream (any handle but 0: CUDA Array Interface
     * forbids 0, ambiguous), or numdyn's own for a hand-over */
    if (s == NULL) fail("cuEventRecord on the null stream");
    recorded_on = s;
    return 0;
}
EXPORT CUresult cuStreamWaitEvent(void *s, void *e, unsigned)
{
    CALL();
    if (s == NULL || e != &event_token) fail("cuStreamWaitEvent: no stream or no event");
    if (s == recorded_on) fail("cuStreamWaitEvent: a stream waits on itself");
    if (s == &stream_token) stream_waits++;   /* numdyn waits for another library's stream */
    else handovers++;                          /* another library's stream waits for numdyn's */
    return 0;
}
EXPORT long long nd_fake_handovers(void) { return handovers; }
EXPORT long long nd_fake_ctx_syncs(void) { return ctx_syncs; }
EXPORT long long nd_fake_stream_waits(void) { return stream_waits; }
static const char *const names[] = {"CUDA_SUCCESS", "CUDA_ERROR_INVALID_VALUE", "CUDA_ERROR_OUT_OF_MEMORY"};
EXPORT CUresult cuGetErrorString(CUresult r, const char **s) { *s = r >= 0 && r < 3 ? names[r] : "fake error"; return 0; }
EXPORT CUresult cuGetErrorName(CUresult r, const char **s) { *s = r >= 0 && r < 3 ? names[r] : "CUDA_ERROR_UNKNOWN"; return 0; }

/* ------------------------------------------------------------ modules */
#define MAGIC "NDFAKECUBIN\n"
typedef void (*kern)(char *const *, const int64_t *, const void *, int *);
struct module { void *so; };
static std::map<std::string, module *> built;   /* by source */
static std::map<void *, module *> fn_module;

EXPORT CUresult cuModuleLoadData(void **mod, const void *image)
{
    const char *img = (const char *)image;
    if (strncmp(img, MAGIC, strlen(MAGIC))) return 200;   /* CUDA_ERROR_INVALID_IMAGE */
    std::string src = img + strlen(MAGIC);
    auto it = built.find(src);
    if (it != built.end()) { *mod = it->second; return 0; }
    const char *inc = getenv("NUMDYN_EMU_INC");
    const char *tmpd = getenv("NUMDYN_EMU_TMP");
    if (!inc || !tmpd) fail("NUMDYN_EMU_INC / NUMDYN_EMU_TMP not set");
    /* a unit is named by its source's hash: another process of the run
     * (a test's subprocess) loads what this one built */
    char cu[4096], so[4096], tmp[4096], cmd[16384];
    size_t h = std::hash<std::string>{}(src);
    snprintf(cu, sizeof cu, "%s/unit%016zx.cpp", tmpd, h);
    snprintf(so, sizeof so, "%s/unit%016zx.so", tmpd, h);
    snprintf(tmp, sizeof tmp, "%s/unit%016zx.%d.so", tmpd, h, (int)getpid());
    /* the unit finds the emulation's runtime (cuda_host_emu_rt.cpp, part of
     * this library) in the global scope: numdyn dlopen'ed us locally */
    static int global;
    if (!global) {
        Dl_info info;
        if (!dladdr((void *)&cuModuleLoadData, &info) ||
            !dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL))
            fail("cannot make the emulation's runtime global");
        global = 1;
    }
    if (access(so, R_OK) != 0) {
        /* NUMDYN_EMU_PCH: a folder with cuda_emu_nd.h -- cuda_host_emu.h and
         * the prelude NUMDYN_EMU_PRELUDE (kernels/nd_cuda.h) -- precompiled
         * once by the test: a unit that starts with that prelude includes it
         * instead of parsing it again (most of a unit's g++ time) */
        static std::string prelude;
        static int have_prelude = -1;
        const char *pch = getenv("NUMDYN_EMU_PCH"), *pre = getenv("NUMDYN_EMU_PRELUDE");
        if (have_prelude < 0) {
            have_prelude = 0;
            FILE *pf = pch && pre ? fopen(pre, "rb") : NULL;
            if (pf) {
                char buf[65536];
                size_t n;
                while ((n = fread(buf, 1, sizeof buf, pf)) > 0) prelude.append(buf, n);
                fclose(pf);
                have_prelude = !prelude.empty();
            }
        }
        int use_pch = have_prelude && src.compare(0, prelude.size(), prelude) == 0;
        FILE *f = fopen(cu, "w");
        if (!f) fail("cannot write the unit");
        if (use_pch) fprintf(f, "#include \"cuda_emu_nd.h\"\n%s\n", src.c_str() + prelude.size());
        else fprintf(f, "#include \"cuda_host_emu.h\"\n%s\n", src.c_str());
        fclose(f);
        const char *cxx = getenv("CXX");
        snprintf(cmd, sizeof cmd, "%s -std=c++20 -O1 -fPIC -shared -w -I %s %s -o %s 1>&2",
                 cxx ? cxx : "g++", use_pch ? pch : inc, cu, tmp);
        if (system(cmd) != 0) return 218;   /* CUDA_ERROR_INVALID_PTX */
        if (rename(tmp, so) != 0) fail("cannot rename the unit");
    }
    module *m = new module;
    m->so = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!m->so) { fprintf(stderr, "%s\n", dlerror()); fail("dlopen of the unit"); }
    built[src] = m;
    *mod = m;
    return 0;
}
EXPORT CUresult cuModuleGetFunction(void **fn, void *mod, const char *name)
{
    module *m = (module *)mod;
    *fn = dlsym(m->so, name);
    if (!*fn) return 500;   /* CUDA_ERROR_NOT_FOUND */
    fn_module[*fn] = m;
    return 0;
}
EXPORT CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shmem, void *stream, void **params, void **extra)
{
    CALL();
    (void)shmem; (void)stream; (void)extra;
    if (gx == 0 || gy != 1 || gz != 1 || by != 1 || bz != 1 || bx == 0 || bx > 1024 || bx % 32)
        return 1;   /* CUDA_ERROR_INVALID_VALUE, as a GPU would say */
    auto it = fn_module.find(f);
    if (it == fn_module.end()) fail("launch of an unknown function");
    char *const *P = *(char *const **)params[0];
    const int64_t *I = *(const int64_t **)params[1];
    const void *S = *(const void **)params[2];
    int *E = *(int **)params[3];
    check_dev((CUdeviceptr)P, 8, "kernel argument P");
    check_dev((CUdeviceptr)I, 8, "kernel argument I");
    check_dev((CUdeviceptr)E, 4, "kernel argument E");
    launches++;
    /* NUMDYN_FAKE_NOEXEC: launches are counted, not run -- to time the
     * backend's host work per call (bench/bench_cuda.py --host-overhead) */
    static const int noexec = getenv("NUMDYN_FAKE_NOEXEC") != NULL;
    if (noexec) return 0;
    nd_emu_launch((kern)f, P, I, S, E, gx, bx);
    return 0;
}
EXPORT long long nd_fake_launches(void) { return launches; }
EXPORT long long nd_fake_allocs(void) { return allocs; }
/* calls of driver entry point `name` so far (NULL: of them all) */
EXPORT long long nd_fake_calls(const char *name)
{
    if (name) return ncalls.count(name) ? ncalls[name] : 0;
    long long n = 0;
    for (auto &kv : ncalls) n += kv.second;
    return n;
}

/* --------------------------------------------------------------- NVRTC */
struct prog { std::string src, out; };
EXPORT const char *nvrtcGetErrorString(int) { return "fake nvrtc error"; }
EXPORT int nvrtcVersion(int *ma, int *mi) { *ma = 13; *mi = 0; return 0; }
EXPORT int nvrtcCreateProgram(prog **p, const char *src, const char *, int nh, const char *const *headers,
                               const char *const *names)
{
    *p = new prog;
    (*p)->src = src;
    for (int i = 0; i < nh; i++) {   /* #include "name" of a header given here: its text in place */
        std::string inc = std::string("#include \"") + names[i] + "\"";
        size_t at = (*p)->src.find(inc);
        if (at == std::string::npos) fail("nvrtcCreateProgram: a header the source does not include");
        (*p)->src.replace(at, inc.size(), headers[i]);
    }
    return 0;
}
EXPORT int nvrtcDestroyProgram(prog **p) { delete *p; *p = NULL; return 0; }
EXPORT int nvrtcCompileProgram(prog *p, int n, const char *const *opts)
{
    int arch_ok = 0;
    for (int i = 0; i < n; i++) if (!strcmp(opts[i], "--gpu-architecture=sm_90")) arch_ok = 1;
    if (!arch_ok) fail("numdyn did not ask for the device's architecture sm_90");
    p->out = std::string(MAGIC) + p->src;
    return 0;
}
EXPORT int nvrtcGetProgramLogSize(prog *, size_t *n) { *n = 1; return 0; }
EXPORT int nvrtcGetProgramLog(prog *, char *b) { b[0] = 0; return 0; }
EXPORT int nvrtcGetPTXSize(prog *p, size_t *n) { *n = p->out.size() + 1; return 0; }
EXPORT int nvrtcGetPTX(prog *p, char *b) { memcpy(b, p->out.c_str(), p->out.size() + 1); return 0; }
EXPORT int nvrtcGetCUBINSize(prog *p, size_t *n) { *n = p->out.size() + 1; return 0; }
EXPORT int nvrtcGetCUBIN(prog *p, char *b) { memcpy(b, p->out.c_str(), p->out.size() + 1); return 0; }
static const int archs[] = {75, 80, 86, 87, 89, 90, 100, 120};
EXPORT int nvrtcGetNumSupportedArchs(int *n) { *n = 8; return 0; }
EXPORT int nvrtcGetSupportedArchs(int *a) { memcpy(a, archs, sizeof archs); return 0; }
