/* cuda_alloc.c -- the caching device allocator (runtime/cuda.h).
 *
 * cuMemAlloc/cuMemFree synchronize the device and cost tens of
 * microseconds; a program allocates and frees its intermediates on every
 * call. So freed blocks stay with numdyn, on a free list per size class,
 * and the next request of that class takes one. All numdyn work is ordered
 * on one stream, so a block freed is safe to hand out at once (its next
 * user is queued after its last). Classes: 512 B to 1 MiB in powers of
 * two, above that multiples of 2 MiB (a 3 MiB request costs 4 MiB, not 4
 * MiB rounded to 8).
 *
 * The logic works on any "raw" allocator (alloc_raw/free_raw): the driver
 * here, a fake address space in _cuda_alloc_sim, which the tests use where
 * there is no GPU.
 */
#include "cuda.h"
#include <dlfcn.h>
#include <string.h>

extern void *nd_cu_lib;

#define CUDA_ERROR_OUT_OF_MEMORY 2

typedef struct {
    size_t size;
    int n, cap;
    nd_cu_ptr *free;
} sclass;

typedef struct {
    /* 0 or a CUresult (CUDA_ERROR_OUT_OF_MEMORY when there is no room) */
    int (*alloc_raw)(void *ctx, size_t n, nd_cu_ptr *p);
    void (*free_raw)(void *ctx, nd_cu_ptr p);
    void *ctx;
    sclass *cls;
    int ncls, capcls;
    /* live blocks: open addressing, ptr -> size (0: empty, ~0: removed) */
    nd_cu_ptr *lp;
    size_t *ls;
    size_t lcap, lcount, lused;
    long long in_use, cached, peak, calls, hits, drv_allocs, drv_frees, blocks_cached;
} allocator;

static size_t class_of(size_t n)
{
    if (n <= 512) return 512;
    if (n <= ((size_t)1 << 20)) {
        size_t c = 512;
        while (c < n) c <<= 1;
        return c;
    }
    size_t two = (size_t)2 << 20;
    return (n + two - 1) / two * two;
}

static sclass *find_class(allocator *a, size_t size, int make)
{
    for (int i = 0; i < a->ncls; i++) if (a->cls[i].size == size) return &a->cls[i];
    if (!make) return NULL;
    if (a->ncls == a->capcls) {
        int cap = a->capcls ? 2 * a->capcls : 16;
        sclass *c = PyMem_Realloc(a->cls, sizeof(sclass) * (size_t)cap);
        if (!c) return NULL;
        a->cls = c;
        a->capcls = cap;
    }
    sclass *c = &a->cls[a->ncls++];
    memset(c, 0, sizeof *c);
    c->size = size;
    return c;
}

#define TOMB (~(nd_cu_ptr)0)

static size_t slot_of(nd_cu_ptr p, size_t cap) { return (size_t)((p >> 9) * 0x9E3779B97F4A7C15ull) & (cap - 1); }

static int live_grow(allocator *a)
{
    size_t cap = a->lcap ? 2 * a->lcap : 256;
    if (a->lcount * 4 < a->lcap) cap = a->lcap;  /* mostly tombstones: same size, rehash */
    nd_cu_ptr *np = PyMem_Calloc(cap, sizeof *np);
    size_t *ns = PyMem_Calloc(cap, sizeof *ns);
    if (!np || !ns) { PyMem_Free(np); PyMem_Free(ns); return -1; }
    for (size_t i = 0; i < a->lcap; i++) {
        if (!a->lp[i] || a->lp[i] == TOMB) continue;
        size_t j = slot_of(a->lp[i], cap);
        while (np[j]) j = (j + 1) & (cap - 1);
        np[j] = a->lp[i];
        ns[j] = a->ls[i];
    }
    PyMem_Free(a->lp);
    PyMem_Free(a->ls);
    a->lp = np;
    a->ls = ns;
    a->lcap = cap;
    a->lused = a->lcount;
    return 0;
}

static int live_put(allocator *a, nd_cu_ptr p, size_t size)
{
    if ((a->lused + 1) * 2 > a->lcap && live_grow(a) < 0) return -1;
    size_t j = slot_of(p, a->lcap);
    while (a->lp[j] && a->lp[j] != TOMB) j = (j + 1) & (a->lcap - 1);
    if (!a->lp[j]) a->lused++;
    a->lp[j] = p;
    a->ls[j] = size;
    a->lcount++;
    return 0;
}

/* the size of live block p, removed from the table; 0 when not live */
static size_t live_take(allocator *a, nd_cu_ptr p)
{
    if (!a->lcap) return 0;
    for (size_t j = slot_of(p, a->lcap), k = 0; a->lp[j] && k < a->lcap; j = (j + 1) & (a->lcap - 1), k++)
        if (a->lp[j] == p) {
            a->lp[j] = TOMB;
            a->lcount--;
            return a->ls[j];
        }
    return 0;
}

static void release_cached(allocator *a)
{
    for (int i = 0; i < a->ncls; i++) {
        sclass *c = &a->cls[i];
        for (int k = 0; k < c->n; k++) {
            a->free_raw(a->ctx, c->free[k]);
            a->drv_frees++;
            a->cached -= (long long)c->size;
        }
        a->blocks_cached -= c->n;
        c->n = 0;
    }
}

/* 0 with *p, 1 out of memory (no exception), -1 other error (res in *err) */
static int a_alloc(allocator *a, size_t n, nd_cu_ptr *p, int *err)
{
    size_t size = class_of(n);
    sclass *c = find_class(a, size, 1);
    *err = 0;
    if (!c) { PyErr_NoMemory(); return -1; }
    a->calls++;
    if (c->n) {
        *p = c->free[--c->n];
        a->hits++;
        a->cached -= (long long)size;
        a->blocks_cached--;
    } else {
        int r = a->alloc_raw(a->ctx, size, p);
        if (r == CUDA_ERROR_OUT_OF_MEMORY && a->cached) {
            release_cached(a);
            r = a->alloc_raw(a->ctx, size, p);
        }
        if (r == CUDA_ERROR_OUT_OF_MEMORY) return 1;
        if (r) { *err = r; return -1; }
        a->drv_allocs++;
    }
    if (live_put(a, *p, size) < 0) {
        a->free_raw(a->ctx, *p);
        PyErr_NoMemory();
        return -1;
    }
    a->in_use += (long long)size;
    if (a->in_use > a->peak) a->peak = a->in_use;
    return 0;
}

/* 0, or -1 (p is no live block of this allocator: ignored) */
static int a_free(allocator *a, nd_cu_ptr p)
{
    size_t size = live_take(a, p);
    if (!size) return -1;
    a->in_use -= (long long)size;
    sclass *c = find_class(a, size, 0);
    if (c && c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 8;
        nd_cu_ptr *f = PyMem_Realloc(c->free, sizeof(nd_cu_ptr) * (size_t)cap);
        if (f) { c->free = f; c->cap = cap; }
    }
    if (!c || c->n == c->cap) {  /* no room to keep it: back to the driver */
        a->free_raw(a->ctx, p);
        a->drv_frees++;
        return 0;
    }
    c->free[c->n++] = p;
    a->cached += (long long)size;
    a->blocks_cached++;
    return 0;
}

static PyObject *a_stats(allocator *a)
{
    return Py_BuildValue("{sLsLsLsLsLsLsLsnsL}", "allocated_bytes", a->in_use,
                         "reserved_bytes", a->in_use + a->cached, "peak_allocated_bytes", a->peak,
                         "alloc_calls", a->calls, "cache_hits", a->hits, "driver_allocs",
                         a->drv_allocs, "driver_frees", a->drv_frees, "blocks_in_use",
                         (Py_ssize_t)a->lcount, "blocks_cached", a->blocks_cached);
}

static void a_destroy(allocator *a)
{
    release_cached(a);
    for (int i = 0; i < a->ncls; i++) PyMem_Free(a->cls[i].free);
    PyMem_Free(a->cls);
    PyMem_Free(a->lp);
    PyMem_Free(a->ls);
    memset(a, 0, sizeof *a);
}

/* ---------------------------------------------------- the device's */
static int (*MemAlloc)(nd_cu_ptr *, size_t);
static int (*MemFree)(nd_cu_ptr);

static int drv_alloc(void *ctx, size_t n, nd_cu_ptr *p)
{
    (void)ctx;
    return MemAlloc(p, n);
}

static void drv_free(void *ctx, nd_cu_ptr p)
{
    (void)ctx;
    (void)MemFree(p);
}

static allocator dev = {.alloc_raw = drv_alloc, .free_raw = drv_free};

int nd_cu_alloc(size_t n, nd_cu_ptr *p)
{
    if (nd_cu_ready() < 0) return -1;
    if (!MemAlloc) {
        *(void **)&MemAlloc = dlsym(nd_cu_lib, "cuMemAlloc_v2");
        *(void **)&MemFree = dlsym(nd_cu_lib, "cuMemFree_v2");
        if (!MemAlloc || !MemFree) {
            MemAlloc = NULL;
            PyErr_SetString(nd_CudaError, "numdyn.cuda: libcuda lacks cuMemAlloc_v2/cuMemFree_v2: "
                            "install a current NVIDIA driver");
            return -1;
        }
    }
    int err;
    int r = a_alloc(&dev, n, p, &err);
    if (r == 0) return 0;
    if (r == 1)
        PyErr_Format(nd_CudaError, "numdyn.cuda: out of device memory: %zu bytes requested, %lld "
                     "in use by numdyn (CUDA_ERROR_OUT_OF_MEMORY); drop device arrays you no "
                     "longer need, free memory other libraries cache (torch.cuda.empty_cache(), "
                     "cupy's memory pool), or work on smaller pieces", n, dev.in_use);
    else if (err)
        nd_cu_check(err, "cuMemAlloc");
    return -1;
}

void nd_cu_free(nd_cu_ptr p)
{
    if (p) (void)a_free(&dev, p);
}

size_t nd_cu_alloc_size(size_t n) { return class_of(n); }

int nd_cu_empty_cache(void)
{
    if (!dev.ncls) return 0;
    if (nd_cu_sync() < 0) return -1;   /* nothing queued may still use a block */
    nd_cu_drop_kept_args();
    release_cached(&dev);
    return 0;
}

PyObject *nd_cu_memory_stats(void)
{
    PyObject *d = a_stats(&dev);
    PyObject *k = d ? PyLong_FromSize_t(nd_cu_kept_arg_bytes) : NULL;
    if (!k || PyDict_SetItemString(d, "kept_argument_bytes", k) < 0) Py_CLEAR(d);
    Py_XDECREF(k);
    return d;
}

/* ------------------------------------------------------ simulation */
/* a fake address space of `cap` bytes: addresses grow, freed bytes return */
typedef struct { size_t cap, used; nd_cu_ptr next; } fakemem;

static int fake_alloc(void *ctx, size_t n, nd_cu_ptr *p)
{
    fakemem *m = ctx;
    if (m->used + n > m->cap) return CUDA_ERROR_OUT_OF_MEMORY;
    m->used += n;
    *p = m->next;
    m->next += n;
    return 0;
}

/* the freed size is not known to the fake: it keeps a table of its own */
typedef struct { fakemem m; nd_cu_ptr p[4096]; size_t s[4096]; int n; } fakeheap;

static int heap_alloc(void *ctx, size_t n, nd_cu_ptr *p)
{
    fakeheap *h = ctx;
    if (h->n == 4096) return 1;
    int r = fake_alloc(&h->m, n, p);
    if (!r) { h->p[h->n] = *p; h->s[h->n++] = n; }
    return r;
}

static void heap_free(void *ctx, nd_cu_ptr p)
{
    fakeheap *h = ctx;
    for (int i = 0; i < h->n; i++)
        if (h->p[i] == p) {
            h->m.used -= h->s[i];
            h->p[i] = h->p[--h->n];
            h->s[i] = h->s[h->n];
            return;
        }
}

/* _cuda_alloc_sim(ops, capacity) -> (results, stats): ops are ("alloc", n)
 * -> the block's address, ("free", address) -> None, ("empty",) -> None,
 * run on an allocator over a fake device of `capacity` bytes; an alloc
 * that does not fit gives None (out of memory) */
static PyObject *py_alloc_sim(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *ops;
    Py_ssize_t capb;
    if (!PyArg_ParseTuple(args, "On", &ops, &capb)) return NULL;
    PyObject *seq = PySequence_Fast(ops, "_cuda_alloc_sim: a sequence of operations");
    if (!seq) return NULL;
    fakeheap *h = PyMem_Calloc(1, sizeof *h);
    if (!h) { Py_DECREF(seq); return PyErr_NoMemory(); }
    h->m.cap = (size_t)capb;
    h->m.next = 0x100000;
    allocator a;
    memset(&a, 0, sizeof a);
    a.alloc_raw = heap_alloc;
    a.free_raw = heap_free;
    a.ctx = h;
    PyObject *res = PyList_New(0), *out = NULL;
    for (Py_ssize_t i = 0; res && i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *op = PySequence_Fast_GET_ITEM(seq, i), *r = NULL;
        const char *what = NULL;
        unsigned long long v = 0;
        if (!PyArg_ParseTuple(op, "s|K", &what, &v)) { Py_CLEAR(res); break; }
        if (!strcmp(what, "alloc")) {
            nd_cu_ptr p;
            int err, rc = a_alloc(&a, (size_t)v, &p, &err);
            if (rc < 0) {
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_RuntimeError, "_cuda_alloc_sim: raw allocator error %d", err);
                Py_CLEAR(res);
                break;
            }
            r = rc ? Py_NewRef(Py_None) : PyLong_FromUnsignedLongLong(p);
        } else if (!strcmp(what, "free")) {
            if (a_free(&a, (nd_cu_ptr)v) < 0) {
                PyErr_Format(PyExc_ValueError, "_cuda_alloc_sim: %llx is no live block", v);
                Py_CLEAR(res);
                break;
            }
            r = Py_NewRef(Py_None);
        } else if (!strcmp(what, "empty")) {
            release_cached(&a);
            r = Py_NewRef(Py_None);
        } else {
            PyErr_Format(PyExc_ValueError, "_cuda_alloc_sim: unknown operation %s", what);
            Py_CLEAR(res);
            break;
        }
        if (!r || PyList_Append(res, r) < 0) Py_CLEAR(res);
        Py_XDECREF(r);
    }
    if (res) {
        PyObject *st = a_stats(&a);
        PyObject *used = st ? PyLong_FromSize_t(h->m.used) : NULL;
        if (used && PyDict_SetItemString(st, "device_bytes_used", used) == 0)
            out = Py_BuildValue("(OO)", res, st);
        Py_XDECREF(used);
        Py_XDECREF(st);
    }
    Py_XDECREF(res);
    a_destroy(&a);
    PyMem_Free(h);
    Py_DECREF(seq);
    return out;
}

static PyObject *py_stats(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    return nd_cu_memory_stats();
}

static PyObject *py_empty(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    if (nd_cu_empty_cache() < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_class(PyObject *self, PyObject *arg)
{
    (void)self;
    size_t n = PyLong_AsSize_t(arg);
    if (n == (size_t)-1 && PyErr_Occurred()) return NULL;
    return PyLong_FromSize_t(class_of(n));
}

static PyMethodDef methods[] = {
    {"_cuda_memory_stats", py_stats, METH_NOARGS, "the device allocator's statistics (dict)"},
    {"_cuda_empty_cache", py_empty, METH_NOARGS, "release cached device blocks to the driver"},
    {"_cuda_alloc_class", py_class, METH_O, "the size class of a request of n bytes"},
    {"_cuda_alloc_sim", py_alloc_sim, METH_VARARGS, "run the allocator over a fake device"},
    {NULL, NULL, 0, NULL},
};

int nd_cuda_alloc_init(PyObject *module) { return PyModule_AddFunctions(module, methods); }
