/* runtime_alloc.c -- a caching allocator for the big arrays kernels write.
 *
 * A fresh 800 MB output costs more in page faults (the kernel zeroing and
 * mapping 200k pages) than the kernel that fills it costs in memory traffic.
 * Arrays numdyn allocates for kernel outputs and intermediates of at least
 * ND_POOL_MIN bytes use this NumPy memory handler: when NumPy frees such
 * an array its block is kept in a small pool, and the next allocation of a
 * similar size reuses it (already mapped, no faults). The pool is bounded
 * (NUMDYN_POOL_MB, default 1/8 of physical memory, at most 4 GiB; 0 turns it
 * off) and holds at most ND_POOL_SLOTS blocks, oldest evicted first.
 * Blocks are mmap'ed with a transparent-huge-page hint.
 */
#define _GNU_SOURCE 1
#include "core/npy.h"
#include "native.h"
#include "backend.h"
#include "core/strides.h"
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#define ND_POOL_MIN (1u << 20)
#define ND_POOL_SLOTS 8
#define HDR 64  /* header before the data: keeps the data 64-byte aligned */

typedef struct block {
    size_t size;   /* usable bytes after the header */
    size_t map;    /* bytes mapped */
} block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *pool[ND_POOL_SLOTS];      /* data pointers, oldest first */
static int npool;
static size_t pooled, limit;
static int limit_set;

static size_t pool_limit(void)
{
    if (limit_set) return limit;
    limit_set = 1;
    const char *e = getenv("NUMDYN_POOL_MB");
    if (e && *e) {
        limit = (size_t)strtoull(e, NULL, 10) << 20;
        return limit;
    }
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
    size_t phys = (pages > 0 && psz > 0) ? (size_t)pages * (size_t)psz : ((size_t)1 << 33);
    limit = phys / 8;
    if (limit > ((size_t)4 << 30)) limit = (size_t)4 << 30;
    return limit;
}

static block *hdr(void *data) { return (block *)((char *)data - HDR); }

static void *map_new(size_t size)
{
    size_t map = size + HDR;
    char *p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    if (map >= (4u << 20)) (void)madvise(p, map, MADV_HUGEPAGE);
#endif
    block *b = (block *)p;
    b->size = size;
    b->map = map;
    return p + HDR;
}

static void unmap(void *data)
{
    block *b = hdr(data);
    munmap((void *)b, b->map);
}

/* a pooled block for `size` bytes (not much bigger), or NULL */
static void *take(size_t size)
{
    void *r = NULL;
    pthread_mutex_lock(&lock);
    for (int i = npool - 1; i >= 0; i--) {
        size_t have = hdr(pool[i])->size;
        if (have >= size && have - size <= size / 4) {
            r = pool[i];
            pooled -= have;
            memmove(&pool[i], &pool[i + 1], sizeof(void *) * (size_t)(npool - i - 1));
            npool--;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static void *a_malloc(void *ctx, size_t size)
{
    (void)ctx;
    if (size == 0) size = 1;
    void *p = take(size);
    return p ? p : map_new(size);
}

static void *a_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    if (elsize && nelem > SIZE_MAX / elsize) return NULL;
    size_t size = nelem * elsize;
    if (size == 0) size = 1;
    void *p = take(size);
    if (p) { memset(p, 0, size); return p; }
    return map_new(size);  /* fresh anonymous pages are zero */
}

static void a_free(void *ctx, void *data, size_t size)
{
    (void)ctx; (void)size;
    if (!data) return;
    block *b = hdr(data);
    void *evict[ND_POOL_SLOTS + 1];
    int nevict = 0;
    pthread_mutex_lock(&lock);
    size_t lim = pool_limit();
    if (b->size < ND_POOL_MIN || b->size > lim) {
        evict[nevict++] = data;
    } else {
        while (npool && (npool == ND_POOL_SLOTS || pooled + b->size > lim)) {
            evict[nevict++] = pool[0];
            pooled -= hdr(pool[0])->size;
            memmove(&pool[0], &pool[1], sizeof(void *) * (size_t)(npool - 1));
            npool--;
        }
        pool[npool++] = data;
        pooled += b->size;
    }
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < nevict; i++) unmap(evict[i]);
}

static void *a_realloc(void *ctx, void *data, size_t size)
{
    if (!data) return a_malloc(ctx, size);
    size_t have = hdr(data)->size;
    if (size <= have) return data;
    void *n = a_malloc(ctx, size);
    if (!n) return NULL;
    memcpy(n, data, have);
    a_free(ctx, data, have);
    return n;
}

static PyDataMem_Handler handler = {
    "numdyn_pool", 1, {NULL, a_malloc, a_calloc, a_realloc, a_free},
};
static PyObject *handler_capsule;

/* a new uninitialized array: C order (strides NULL) or the given dense
 * byte strides; big ones come from the pool */
static PyObject *new_array(int ndim, const npy_intp *shape, int dtype, const npy_intp *strides)
{
    PyArray_Descr *descr = PyArray_DescrFromType(dtype);
    if (!descr) return NULL;
    return PyArray_NewFromDescr(&PyArray_Type, descr, ndim, (npy_intp *)shape, (npy_intp *)strides,
                                NULL, 0, NULL);
}

static PyObject *alloc_array(int ndim, const npy_intp *shape, int dtype, const npy_intp *strides)
{
    PyArray_Descr *descr = PyArray_DescrFromType(dtype);
    if (!descr) return NULL;
    size_t bytes = (size_t)PyDataType_ELSIZE(descr);
    Py_DECREF(descr);
    for (int d = 0; d < ndim; d++) bytes *= (size_t)shape[d];
    if (bytes < ND_POOL_MIN || pool_limit() == 0) return new_array(ndim, shape, dtype, strides);
    if (!handler_capsule) {
        handler_capsule = PyCapsule_New(&handler, "mem_handler", NULL);
        if (!handler_capsule) return NULL;
    }
    PyObject *old = PyDataMem_SetHandler(handler_capsule);
    if (!old) return NULL;
    PyObject *a = new_array(ndim, shape, dtype, strides);
    PyObject *back = PyDataMem_SetHandler(old);
    Py_DECREF(old);
    if (!back) { Py_XDECREF(a); return NULL; }
    Py_DECREF(back);
    return a;
}

PyObject *nd_alloc_array(int ndim, const npy_intp *shape, int dtype)
{
    return alloc_array(ndim, shape, dtype, NULL);
}

/* byte strides of the dense array of `shape` laid out in order kperm */
void nd_order_strides(int ndim, const npy_intp *shape, npy_intp itemsize, const int8_t *kperm,
                      npy_intp *st)
{
    int perm[ND_MAXDIMS] = {0};  /* (sanitizer builds cannot see ndim <= ND_MAXDIMS) */
    for (int d = 0; d < ndim; d++) perm[d] = kperm[d];
    nd_perm_strides(ndim, shape, perm, st);
    for (int d = 0; d < ndim; d++) st[d] *= itemsize;
}

PyObject *nd_alloc_array_order(int ndim, const npy_intp *shape, int dtype, const int8_t *kperm)
{
    npy_intp st[ND_MAXDIMS];
    PyArray_Descr *d = PyArray_DescrFromType(dtype);
    if (!d) return NULL;
    nd_order_strides(ndim, shape, PyDataType_ELSIZE(d), kperm, st);
    Py_DECREF(d);
    return alloc_array(ndim, shape, dtype, st);
}

int nd_outputs_in_order(nd_graph *g, const nd_id *outs, int nout, PyObject *list)
{
    for (int i = 0; i < nout; i++) {
        nd_node *n = &g->nodes[outs[i]];
        PyArrayObject *a = (PyArrayObject *)PyList_GET_ITEM(list, i);
        if (!(n->flags & ND_F_KORDER) || !PyArray_Check(a) || PyArray_NDIM(a) != n->ndim)
            continue;
        npy_intp st[ND_MAXDIMS];
        int same = 1;
        nd_order_strides(n->ndim, PyArray_DIMS(a), PyArray_ITEMSIZE(a), n->kperm, st);
        for (int d = 0; d < n->ndim; d++) same &= PyArray_DIM(a, d) <= 1 || PyArray_STRIDE(a, d) == st[d];
        if (same) continue;
        PyObject *c = alloc_array(n->ndim, PyArray_DIMS(a), PyArray_TYPE(a), st);
        if (!c) return -1;
        if (PyArray_CopyInto((PyArrayObject *)c, a) < 0) {
            Py_DECREF(c);
            return -1;
        }
        PyList_SetItem(list, i, c);  /* steals c, drops a */
    }
    return 0;
}

void nd_pool_clear(void)
{
    void *ev[ND_POOL_SLOTS];
    int n;
    pthread_mutex_lock(&lock);
    n = npool;
    memcpy(ev, pool, sizeof(void *) * (size_t)n);
    npool = 0;
    pooled = 0;
    limit_set = 0;
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++) unmap(ev[i]);
}
