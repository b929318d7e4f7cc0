/* trace_functionalize.c -- views and mutation as functional graph updates.
 *
 * A storage is one buffer's history: `version` is the node of its current
 * value. A proxy is that storage seen through an affine map: element i of
 * the proxy is the storage's C-order flat element off + sum_d i_d*strides[d].
 *
 *   read   identity map -> the version node itself; else a VIEW node of the
 *          version, cached per (proxy, version) so repeated reads of an
 *          unchanged view add nothing.
 *   write  the version becomes SETITEM(version, value) over the proxy's map
 *          (or `value` itself for a whole-buffer write of the same shape and
 *          dtype). Every proxy on the storage reads the new version next.
 *   view   same storage, composed map (see nd_proxy_view in trace.h).
 *
 * Storages standing for caller arrays (arguments, globals met while
 * tracing) are written back into those arrays at every flush: see
 * trace_flush.c.
 */
#include "trace_internal.h"
#include "strides.h"
#include "trace_replay.h"
#include <string.h>

extern PyTypeObject NdProxy_Type;

/* Small free lists: a traced op creates one storage and one proxy and most
 * die within a statement; the GIL serializes access. */
#define ND_FREELIST 64
static nd_storage *storage_free[ND_FREELIST];
static int nstorage_free;
static NdProxy *proxy_free[ND_FREELIST];
static int nproxy_free;

void nd__proxy_free(PyObject *o)
{
    if (nproxy_free < ND_FREELIST) proxy_free[nproxy_free++] = (NdProxy *)o;
    else PyObject_Free(o);
}

nd_storage *nd__storage_new(nd_trace *t, nd_id version, PyObject *caller)
{
    nd_storage *s = nstorage_free ? storage_free[--nstorage_free] : PyMem_Malloc(sizeof(*s));
    if (!s) { PyErr_NoMemory(); return NULL; }
    const nd_node *n = nd_graph_node(t->g, version);
    s->refcnt = 1;
    s->trace = t;
    nd__trace_incref(t);
    s->version = version;
    s->caller = Py_XNewRef(caller);
    s->dirty = 0;
    s->readonly = caller && PyArray_Check(caller) &&
                  !PyArray_ISWRITEABLE((PyArrayObject *)caller);
    s->ndim = n->ndim;
    s->dtype = n->dtype;
    memcpy(s->shape, n->shape, sizeof(npy_intp) * n->ndim);
    s->mark = 0;
    s->exports = NULL;
    s->rebased = 0;
    s->root = NULL;
    s->korder = 0;
    return s;
}

void nd__storage_decref(nd_storage *s)
{
    if (!s || --s->refcnt > 0) return;
    Py_XDECREF(s->caller);
    Py_XDECREF(s->root);
    Py_XDECREF(s->exports);
    nd__trace_decref(s->trace);
    if (nstorage_free < ND_FREELIST) storage_free[nstorage_free++] = s;
    else PyMem_Free(s);
}

static void c_strides(int ndim, const npy_intp *shape, npy_intp *out)
{
    npy_intp acc = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        out[d] = acc;
        acc *= shape[d] > 0 ? shape[d] : 1;
    }
}

static int is_identity(const nd_storage *s, int ndim, const npy_intp *shape,
                       npy_intp off, const npy_intp *strides)
{
    if (ndim != s->ndim || off != 0) return 0;
    npy_intp cs[ND_MAXDIMS];
    c_strides(ndim, shape, cs);
    for (int d = 0; d < ndim; d++) {
        if (shape[d] != s->shape[d]) return 0;
        if (shape[d] > 1 && strides[d] != cs[d]) return 0;
    }
    return 1;
}

PyObject *nd__proxy_new(nd_storage *s, int is_scalar)
{
    NdProxy *p;
    if (nproxy_free) {
        p = proxy_free[--nproxy_free];
        PyObject_Init((PyObject *)p, &NdProxy_Type);
    } else if (!(p = PyObject_New(NdProxy, &NdProxy_Type))) {
        return NULL;
    }
    s->refcnt++;
    p->st = s;
    p->value = NULL;
    p->weakrefs = NULL;
    p->vnode = p->vver = ND_NONE;
    p->ndim = s->ndim;
    p->is_scalar = (uint8_t)(is_scalar != 0);
    p->identity = 1;
    p->fresh = 0;
    p->readonly = 0;
    p->part = 0;
    p->base = p->vbase = NULL;
    p->dtype = s->dtype;
    p->off = 0;
    memcpy(p->shape, s->shape, sizeof(npy_intp) * s->ndim);
    c_strides(s->ndim, s->shape, p->strides);
    nd_trace *t = s->trace;
    p->prev = NULL;
    p->next = t->proxies;
    if (t->proxies) t->proxies->prev = p;
    t->proxies = p;
    return (PyObject *)p;
}

static NdProxy *as_proxy(PyObject *o)
{
    if (!o || !nd_proxy_check(o)) {
        PyErr_Format(PyExc_TypeError, "numdyn: expected a LazyArray, got %s",
                     o ? Py_TYPE(o)->tp_name : "NULL");
        return NULL;
    }
    return (NdProxy *)o;
}

static PyObject *node_array(nd_graph *g, nd_id id);
PyObject *nd_proxy_wrap(nd_trace *t, nd_id id, int is_scalar)
{
    if (!t) t = nd_trace_current();
    if (!t) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: nd_proxy_wrap outside a trace");
        return NULL;
    }
    if (id < 0 || id >= t->g->n) {
        PyErr_Format(PyExc_SystemError, "numdyn: nd_proxy_wrap of bad node %d", (int)id);
        return NULL;
    }
    nd_storage *s = nd__storage_new(t, id, NULL);
    if (!s) return NULL;
    PyObject *arr = node_array(t->g, id);
    if (arr && PyArray_Check(arr)) nd__storage_adopt_layout(s, arr);
    PyObject *p = nd__proxy_new(s, is_scalar);
    nd__storage_decref(s);
    return p;
}

int nd_proxy_is_scalar(PyObject *o) { return nd_proxy_check(o) && ((NdProxy *)o)->is_scalar; }
int nd_proxy_dtype(PyObject *o) { return nd_proxy_check(o) ? ((NdProxy *)o)->dtype : -1; }
int nd_proxy_ndim(PyObject *o) { return nd_proxy_check(o) ? ((NdProxy *)o)->ndim : -1; }
const npy_intp *nd_proxy_shape(PyObject *o)
{
    return nd_proxy_check(o) ? ((NdProxy *)o)->shape : NULL;
}
int nd_proxy_live(PyObject *o) { return nd_proxy_check(o) && nd__live((NdProxy *)o); }

nd_id nd__proxy_read_own(NdProxy *p)
{
    nd_storage *s = p->st;
    if (p->identity) return s->version;
    if (p->vver == s->version) return p->vnode;
    nd_node n;
    nd_node_init(&n, ND_OP_VIEW, p->dtype, p->ndim, p->shape);
    n.flags |= p->part;
    n.nin = 1;
    n.in[0] = s->version;
    n.voff = p->off;
    memcpy(n.vstrides, p->strides, sizeof(npy_intp) * p->ndim);
    nd_id id = nd_graph_add(s->trace->g, &n);
    if (id == ND_NONE) return ND_NONE;
    p->vnode = id;
    p->vver = s->version;
    return id;
}

/* A live proxy of the current trace standing for a foreign or detached
 * proxy's concrete value (its writes reach that value at the next flush). */
static NdProxy *adopt(NdProxy *p)
{
    nd_trace *t = nd_trace_current();
    if (!t) {
        PyErr_SetString(PyExc_RuntimeError,
                        "numdyn: a lazy array was used outside any compiled function "
                        "in a way that needs tracing");
        return NULL;
    }
    PyObject *v = nd__proxy_value(p, NULL);
    if (!v) return NULL;
    nd_storage *s = nd__caller_find(t, v);
    if (!s) {
        nd_id id = nd_trace_lift(t, v);  /* registers a caller storage */
        s = id == ND_NONE ? NULL : nd__caller_find(t, v);
    }
    Py_DECREF(v);
    if (!s) return NULL;
    return (NdProxy *)nd__caller_proxy(s, p->is_scalar);
}

nd_id nd_proxy_read(PyObject *o)
{
    NdProxy *p = as_proxy(o);
    if (!p) return ND_NONE;
    if (nd__live(p)) return nd__proxy_read_own(p);
    NdProxy *a = adopt(p);
    if (!a) return ND_NONE;
    nd_id id = nd__proxy_read_own(a);
    Py_DECREF(a);
    return id;
}

/* A real NumPy alias of this caller buffer is held by Python code: it must
 * see the write now, as it would under NumPy. */
static int write_through(nd_storage *s)
{
    Py_ssize_t n = PyList_GET_SIZE(s->exports), alive = 0;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        PyObject *w = PyList_GET_ITEM(s->exports, i);
#if PY_VERSION_HEX >= 0x030D0000
        PyObject *o = NULL;
        int live = PyWeakref_GetRef(w, &o);
        Py_XDECREF(o);
        if (live < 0) return -1;
#else
        int live = PyWeakref_GetObject(w) != Py_None;
#endif
        if (!live) {
            if (PySequence_DelItem(s->exports, i) < 0) return -1;
        } else {
            alive++;
        }
    }
    if (!alive) {
        Py_CLEAR(s->exports);
        return 0;
    }
    return nd__flush(s->trace, NULL, 0, NULL);
}

static PyObject *view_of(NdProxy *p, PyArrayObject *arr);
static int write_part(NdProxy *p, nd_id value);

static int write_node(NdProxy *p, nd_id value)
{
    nd_storage *s = p->st;
    nd_graph *g = s->trace->g;
    if (s->readonly || p->readonly) {
        PyErr_SetString(PyExc_ValueError, "assignment destination is read-only");
        return -1;
    }
    if (p->part) return write_part(p, value);
    if (value < 0 || value >= g->n) {
        PyErr_Format(PyExc_SystemError, "numdyn: nd_proxy_write of bad node %d", (int)value);
        return -1;
    }
    const nd_node *v = nd_graph_node(g, value);
    int same = p->identity && v->dtype == s->dtype && v->ndim == s->ndim &&
               memcmp(v->shape, s->shape, sizeof(npy_intp) * s->ndim) == 0;
    nd_id nv = value;
    if (!same) {
        nd_node n;
        nd_node_init(&n, ND_OP_SETITEM, s->dtype, s->ndim, s->shape);
        n.nin = 2;
        n.in[0] = s->version;
        n.in[1] = value;
        n.in_dtype[1] = s->dtype;
        n.voff = p->off;
        n.vndim = p->ndim;
        memcpy(n.vshape, p->shape, sizeof(npy_intp) * p->ndim);
        memcpy(n.vstrides, p->strides, sizeof(npy_intp) * p->ndim);
        nv = nd_graph_add(g, &n);
        if (nv == ND_NONE) return -1;
    }
    s->version = nv;
    if (s->caller) s->dirty = 1;
    return s->exports ? write_through(s) : 0;
}

/* A write into .real/.imag of a complex storage: the graph has no node
 * for "replace one part", so it runs with NumPy on a concrete copy of the
 * storage, which becomes the new version (a flush; exact values). */
static int write_part(NdProxy *p, nd_id value)
{
    nd_storage *s = p->st;
    nd_trace *t = s->trace;
    nd_id ids[2] = {s->version, value};
    PyObject *res[2] = {NULL, NULL}, *copy = NULL, *region = NULL, *part = NULL;
    int rc = -1;
    if (nd__flush(t, ids, 2, res) < 0) goto done;
    copy = PyArray_NewCopy((PyArrayObject *)res[0], NPY_CORDER);
    if (!copy) goto done;
    uint8_t saved = p->part;
    p->part = 0;
    region = view_of(p, (PyArrayObject *)copy);  /* copy is C-contiguous: never NULL w/o error */
    p->part = saved;
    if (!region) goto done;
    part = PyObject_GetAttrString(region, saved == ND_F_VIEW_REAL ? "real" : "imag");
    if (!part || PyArray_CopyInto((PyArrayObject *)part, (PyArrayObject *)res[1]) < 0) goto done;
    nd_id nv = nd__input_node(t, copy);
    if (nv == ND_NONE) goto done;
    s->version = nv;
    if (s->caller) s->dirty = 1;
    rc = s->exports ? write_through(s) : 0;
done:
    Py_XDECREF(res[0]);
    Py_XDECREF(res[1]);
    Py_XDECREF(copy);
    Py_XDECREF(region);
    Py_XDECREF(part);
    return rc;
}

PyObject *nd_proxy_part(PyObject *o, int which)
{
    NdProxy *b = as_proxy(o);
    if (!b) return NULL;
    if ((which != ND_F_VIEW_REAL && which != ND_F_VIEW_IMAG) || b->part ||
        (b->dtype != NPY_CFLOAT && b->dtype != NPY_CDOUBLE)) {
        PyErr_SetString(PyExc_SystemError,
                        "numdyn: nd_proxy_part needs a complex proxy and REAL or IMAG");
        return NULL;
    }
    NdProxy *adopted = NULL;
    if (!nd__live(b)) {
        if (!(adopted = adopt(b))) return NULL;
        b = adopted;
    }
    NdProxy *p = (NdProxy *)nd__proxy_on(b->st, b->ndim, b->shape, b->off, b->strides);
    Py_XDECREF(adopted);
    if (!p) return NULL;
    nd__proxy_view_of(p, b);
    p->part = (uint8_t)which;
    p->identity = 0;
    p->dtype = b->dtype == NPY_CFLOAT ? NPY_FLOAT : NPY_DOUBLE;
    return (PyObject *)p;
}

int nd_proxy_write(PyObject *o, nd_id value)
{
    NdProxy *p = as_proxy(o);
    if (!p) return -1;
    if (nd__live(p)) return write_node(p, value);
    /* the value is a node of the current trace; the target is concrete */
    nd_trace *t = nd_trace_current();
    if (!t) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: nd_proxy_write outside a trace");
        return -1;
    }
    NdProxy *a = adopt(p);
    if (!a) return -1;
    int r = write_node(a, value);
    Py_DECREF(a);
    return r;
}

/* Greedy mixed-radix split of a flat stride into per-dim coefficients;
 * `mode` picks how each digit rounds (0 toward zero, 1 nearest, 2 away
 * from zero), since only some splits keep every index inside its dim. */
static void split_stride(int bndim, const npy_intp *cs, npy_intp s, int mode, npy_intp *coef)
{
    for (int e = 0; e < bndim; e++) {
        npy_intp c = s / cs[e], r = s - c * cs[e];
        if (r != 0 && e + 1 < bndim) {
            npy_intp sg = r > 0 ? 1 : -1;
            if (mode == 2 || (mode == 1 && 2 * (r > 0 ? r : -r) > cs[e])) c += sg;
        }
        coef[e] = c;
        s -= c * cs[e];
    }
}

int nd__decompose(int bndim, const npy_intp *bshape, int ndim, const npy_intp *shape,
                  npy_intp off, const npy_intp *strides, npy_intp *start,
                  npy_intp coef[][ND_MAXDIMS])
{
    npy_intp cs[ND_MAXDIMS], size = 1;
    c_strides(bndim, bshape, cs);
    for (int e = 0; e < bndim; e++) size *= bshape[e];
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) {  /* no element: any map is exact */
            memset(start, 0, sizeof(npy_intp) * (size_t)bndim);
            for (int k = 0; k < ndim; k++)
                memset(coef[k], 0, sizeof(npy_intp) * (size_t)bndim);
            return 0;
        }
    }
    if (off < 0 || (off >= size && size > 0)) return 1;
    npy_intp rem = off;
    for (int e = 0; e < bndim; e++) {
        start[e] = cs[e] ? rem / cs[e] : 0;
        rem -= start[e] * cs[e];
    }
    for (int mode = 0; mode < 3; mode++) {
        for (int d = 0; d < ndim; d++) {
            if (shape[d] > 1) split_stride(bndim, cs, strides[d], mode, coef[d]);
            else memset(coef[d], 0, sizeof(npy_intp) * (size_t)bndim);
        }
        int ok = 1;
        for (int e = 0; e < bndim && ok; e++) {
            npy_intp lo = start[e], hi = start[e];
            for (int d = 0; d < ndim; d++) {
                npy_intp c = coef[d][e] * (shape[d] - 1);
                if (c < 0) lo += c; else hi += c;
            }
            ok = lo >= 0 && hi < bshape[e];
        }
        if (ok) return 0;
    }
    return 1;
}

/* p's map walks the storage's flat index contiguously in p's C order:
 * element i of p (C-order flat) is storage element p->off + i. */
static int c_contiguous_map(const NdProxy *p)
{
    if (p->part) return 0;
    npy_intp want = 1;
    for (int d = p->ndim - 1; d >= 0; d--) {
        if (p->shape[d] == 0) return 1;
        if (p->shape[d] != 1 && p->strides[d] != want) return 0;
        want *= p->shape[d];
    }
    return 1;
}

PyObject *nd_proxy_view(PyObject *o, int ndim, const npy_intp *shape,
                        npy_intp off, const npy_intp *strides)
{
    NdProxy *b = as_proxy(o);
    if (!b) return NULL;
    if (ndim < 0 || ndim > ND_MAXDIMS) {
        PyErr_Format(PyExc_ValueError, "numdyn: view of rank %d", ndim);
        return NULL;
    }
    NdProxy *adopted = NULL;
    if (!nd__live(b)) {
        if (!(adopted = adopt(b))) return NULL;
        b = adopted;
    }
    npy_intp noff, nstr[ND_MAXDIMS];
    if (b->identity) {
        noff = off;
        if (ndim) memcpy(nstr, strides, sizeof(npy_intp) * (size_t)ndim);
    } else if (c_contiguous_map(b)) {
        /* b's own flat index is a run of the storage's: a view over it may
         * cross b's dims (a[1:].reshape(-1), as NumPy views it) */
        noff = b->off + off;
        if (ndim) memcpy(nstr, strides, sizeof(npy_intp) * (size_t)ndim);
    } else {
        npy_intp start[ND_MAXDIMS], coef[ND_MAXDIMS][ND_MAXDIMS];
        if (nd__decompose(b->ndim, b->shape, ndim, shape, off, strides, start, coef)) {
            Py_XDECREF(adopted);
            PyErr_SetString(PyExc_SystemError,
                            "numdyn: view map is not expressible per dimension "
                            "(a shim bug: such a reshape must copy)");
            return NULL;
        }
        noff = b->off;
        for (int e = 0; e < b->ndim; e++) noff += start[e] * b->strides[e];
        for (int d = 0; d < ndim; d++) {
            nstr[d] = 0;
            for (int e = 0; e < b->ndim; e++) nstr[d] += coef[d][e] * b->strides[e];
        }
    }
    NdProxy *p = (NdProxy *)nd__proxy_on(b->st, ndim, shape, noff, nstr);
    if (p) {
        p->fresh = 1;
        nd__proxy_view_of(p, b);
        if (b->part) {
            p->part = b->part;
            p->dtype = b->dtype;
            p->identity = 0;
        }
    }
    Py_XDECREF(adopted);
    return (PyObject *)p;
}

int nd_proxy_memory_strides(PyObject *o, npy_intp *out)
{
    NdProxy *p = as_proxy(o);
    if (!p) { PyErr_Clear(); return 1; }
    if (!p->st) {
        PyArrayObject *v = (PyArrayObject *)p->value;
        if (!v || !PyArray_Check(v)) return 1;
        for (int d = 0; d < PyArray_NDIM(v); d++) {
            if (PyArray_STRIDE(v, d) % PyArray_ITEMSIZE(v)) return 1;
            out[d] = PyArray_STRIDE(v, d) / PyArray_ITEMSIZE(v);
        }
        return 0;
    }
    nd_storage *s = p->st;
    npy_intp ms[ND_MAXDIMS], cs[ND_MAXDIMS];
    if (nd__storage_memory_strides(s, ms)) return 1;
    c_strides(s->ndim, s->shape, cs);
    int c_order = 1;
    for (int d = 0; d < s->ndim; d++) c_order &= s->shape[d] <= 1 || ms[d] == cs[d];
    /* .real/.imag of a complex storage step over two of their own elements */
    npy_intp k = p->part ? 2 : 1;
    if (c_order) {
        for (int d = 0; d < p->ndim; d++) out[d] = p->strides[d] * k;
        return 0;
    }
    npy_intp start[ND_MAXDIMS], coef[ND_MAXDIMS][ND_MAXDIMS];
    if (nd__decompose(s->ndim, s->shape, p->ndim, p->shape, p->off, p->strides, start, coef))
        return 1;
    for (int d = 0; d < p->ndim; d++) {
        out[d] = 0;
        for (int e = 0; e < s->ndim; e++) out[d] += coef[d][e] * ms[e] * k;
    }
    return 0;
}

/* The array whose C-order flat index is the base's memory order: the base
 * itself when C-contiguous, else (any other dense layout: Fortran, a
 * permutation, negative strides) a 1-d view of its whole byte extent, so
 * views of it are affine maps of that flat index. NULL with no exception
 * when the base has gaps (views of it stay independent). New ref. */
PyObject *nd__memory_order_base(PyObject *ba)
{
    PyArrayObject *B = (PyArrayObject *)ba;
    if (PyArray_IS_C_CONTIGUOUS(B)) return Py_NewRef(ba);
    npy_intp isz = PyArray_ITEMSIZE(B), n = PyArray_SIZE(B);
    char *lo = PyArray_BYTES(B), *hi = lo;
    for (int d = 0; d < PyArray_NDIM(B); d++) {
        npy_intp st = PyArray_STRIDE(B, d), k = PyArray_DIM(B, d) - 1;
        if (st % isz) return NULL;
        if (st < 0) lo += st * k; else hi += st * k;
    }
    if (n == 0 || hi + isz - lo != n * isz) return NULL;
    PyArray_Descr *dt = PyArray_DESCR(B);
    Py_INCREF(dt);
    int flags = PyArray_ISWRITEABLE(B) ? NPY_ARRAY_WRITEABLE : 0;
    PyObject *m = PyArray_NewFromDescr(&PyArray_Type, dt, 1, &n, NULL, lo, flags, NULL);
    if (!m) { PyErr_Clear(); return NULL; }
    if (PyArray_SetBaseObject((PyArrayObject *)m, Py_NewRef(ba)) < 0) {
        PyErr_Clear();
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

PyObject *nd__caller_proxy(nd_storage *s, int is_scalar)
{
    if (!s->rebased) return nd__proxy_new(s, is_scalar);
    PyArrayObject *c = (PyArrayObject *)s->root;
    NdProxy *p = (NdProxy *)nd__proxy_on(s, PyArray_NDIM(c), PyArray_DIMS(c), s->root_off,
                                         s->root_strides);
    if (p) {
        p->is_scalar = (uint8_t)(is_scalar != 0);
        p->fresh = 0;
    }
    return (PyObject *)p;
}

/* Re-express caller storage s over its caller's memory order, so views
 * NumPy makes from that memory (np.asfortranarray(x).T.reshape(-1)) are
 * affine maps of the storage: s becomes 1-d, its caller the 1-d memory
 * view, its version the memory-order gather of the current value, and
 * every proxy on it gets the equivalent map. Done on demand (the first
 * view that needs it): until then reads of a Fortran array stay plain
 * INPUT nodes. 1 done, 0 not possible (nothing changed), -1 error. */
static int rebase_memory(nd_storage *s)
{
    /* a computed value NumPy lays out in K order (trace_layout.c) is
     * re-expressed the same way, over the memory it would have */
    int computed = !s->caller && s->korder;
    if (s->rebased || (!computed && (!s->caller || !PyArray_CheckExact(s->caller)))) return 0;
    PyArrayObject *c = computed ? NULL : (PyArrayObject *)s->caller;
    if (c && (PyArray_NDIM(c) != s->ndim || PyArray_IS_C_CONTIGUOUS(c))) return 0;
    PyObject *M = c ? nd__memory_order_base(s->caller) : NULL;
    if (c && !M) return PyErr_Occurred() ? -1 : 0;
    nd_trace *t = s->trace;
    int nd = s->ndim, rc = 0;
    npy_intp n = 1, ms[ND_MAXDIMS], off0 = 0;
    if (c) {
        npy_intp isz = PyArray_ITEMSIZE(c);
        n = PyArray_SIZE(c);
        off0 = (PyArray_BYTES(c) - PyArray_BYTES((PyArrayObject *)M)) / isz;
        for (int d = 0; d < nd; d++) ms[d] = PyArray_STRIDE(c, d) / isz;
    } else {
        for (int d = 0; d < nd; d++) n *= s->shape[d];
        if (n == 0 || nd__storage_memory_strides(s, ms)) return 0;
    }
    Py_ssize_t np_ = 0;
    for (NdProxy *q = t->proxies; q; q = q->next) np_ += q->st == s;
    npy_intp *noff = PyMem_Malloc(sizeof(npy_intp) * (size_t)(np_ + 1));
    npy_intp (*nstr)[ND_MAXDIMS] = PyMem_Malloc(sizeof(*nstr) * (size_t)(np_ + 1));
    if (!noff || !nstr) { PyErr_NoMemory(); rc = -1; goto done; }
    /* every map first: a proxy whose map has no per-dim form (one that
     * already crosses s's dims) leaves s as it is */
    Py_ssize_t k = 0;
    for (NdProxy *q = t->proxies; q; q = q->next) {
        if (q->st != s) continue;
        npy_intp start[ND_MAXDIMS], coef[ND_MAXDIMS][ND_MAXDIMS];
        if (nd__decompose(nd, s->shape, q->ndim, q->shape, q->off, q->strides, start, coef))
            goto done;
        noff[k] = off0;
        for (int e = 0; e < nd; e++) noff[k] += start[e] * ms[e];
        for (int d = 0; d < q->ndim; d++) {
            nstr[k][d] = 0;
            for (int e = 0; e < nd; e++) nstr[k][d] += coef[d][e] * ms[e];
        }
        k++;
    }
    /* the value in memory order: s's dims by decreasing |stride|, reversed
     * where the stride is negative, then flattened */
    int perm[ND_MAXDIMS];
    for (int d = 0; d < nd; d++) perm[d] = d;
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0 && llabs((long long)ms[perm[j]]) > llabs((long long)ms[perm[j - 1]]); j--) {
            int x = perm[j]; perm[j] = perm[j - 1]; perm[j - 1] = x;
        }
    npy_intp cs[ND_MAXDIMS], wsh[ND_MAXDIMS], wst[ND_MAXDIMS], woff = 0, one = 1;
    c_strides(nd, s->shape, cs);
    for (int i = 0; i < nd; i++) {
        int d = perm[i];
        wsh[i] = s->shape[d];
        wst[i] = ms[d] < 0 ? -cs[d] : cs[d];
        if (ms[d] < 0) woff += (s->shape[d] - 1) * cs[d];
    }
    PyObject *w = nd__proxy_on(s, nd, wsh, woff, wst);
    nd_id g1 = w ? nd__proxy_read_own((NdProxy *)w) : ND_NONE;
    Py_XDECREF(w);
    PyObject *tmp = g1 == ND_NONE ? NULL : nd_proxy_wrap(t, g1, 0);
    PyObject *flat = tmp ? nd__proxy_on(((NdProxy *)tmp)->st, 1, &n, 0, &one) : NULL;
    nd_id g2 = flat ? nd__proxy_read_own((NdProxy *)flat) : ND_NONE;
    Py_XDECREF(flat);
    Py_XDECREF(tmp);
    if (g2 == ND_NONE) { rc = -1; goto done; }
    s->version = g2;
    s->ndim = 1;
    s->shape[0] = n;
    if (computed) {
        s->korder = 0;  /* 1-d: its memory order is its own */
    } else {
        s->rebased = 1;
        s->root_off = off0;
        memcpy(s->root_strides, ms, sizeof(npy_intp) * (size_t)nd);
        s->root = s->caller;  /* the caller table's key: kept alive */
        s->caller = Py_NewRef(M);
    }
    k = 0;
    for (NdProxy *q = t->proxies; q; q = q->next) {
        if (q->st != s) continue;
        q->off = noff[k];
        if (q->ndim) memcpy(q->strides, nstr[k], sizeof(npy_intp) * q->ndim);
        q->identity = (uint8_t)is_identity(s, q->ndim, q->shape, q->off, q->strides) && !q->part;
        q->vnode = q->vver = ND_NONE;
        k++;
    }
    rc = 1;
done:
    PyMem_Free(noff);
    PyMem_Free(nstr);
    Py_XDECREF(M);
    return rc;
}

PyObject *nd_proxy_reshape_view(PyObject *o, int ndim, const npy_intp *shape)
{
    NdProxy *b = as_proxy(o);
    if (!b) return NULL;
    if (b->part || !nd__live(b)) return NULL;  /* the general path handles these */
    npy_intp nstr[ND_MAXDIMS], ms[ND_MAXDIMS];
    if (!nd_nocopy_reshape(b->ndim, b->shape, b->strides, ndim, shape, nstr)) {
        /* a view of the caller's memory order that the map over the
         * storage's C-order index cannot express: re-base the storage */
        if (nd_proxy_memory_strides(o, ms) ||
            !nd_nocopy_reshape(b->ndim, b->shape, ms, ndim, shape, NULL))
            return NULL;
        int r = rebase_memory(b->st);
        if (r <= 0) return NULL;
        if (!nd_nocopy_reshape(b->ndim, b->shape, b->strides, ndim, shape, nstr)) return NULL;
    }
    NdProxy *p = (NdProxy *)nd__proxy_on(b->st, ndim, shape, b->off, nstr);
    if (p) {
        p->fresh = 1;
        nd__proxy_view_of(p, b);
    }
    return (PyObject *)p;
}

/* The element as a NumPy scalar straight from the storage's concrete
 * array: no view object, no flush (the cost of NumPy's own a[i]). NULL
 * without an exception when the storage has pending work. */
static PyObject *node_array(nd_graph *g, nd_id id);
static PyObject *element_now(NdProxy *p, npy_intp off)
{
    if (p->part) return NULL;
    PyObject *a = node_array(p->st->trace->g, p->st->version);
    if (!a || !PyArray_Check(a)) return NULL;
    PyArrayObject *arr = (PyArrayObject *)a;
    npy_intp flat = p->off;
    for (int d = p->ndim - 1; d >= 0; d--) {
        npy_intp n = p->shape[d];
        flat += (off % n) * p->strides[d];
        off /= n;
    }
    char *ptr = PyArray_BYTES(arr);
    if (PyArray_IS_C_CONTIGUOUS(arr)) {
        ptr += flat * PyArray_ITEMSIZE(arr);
    } else {
        for (int d = PyArray_NDIM(arr) - 1; d >= 0; d--) {
            npy_intp n = PyArray_DIM(arr, d);
            ptr += (flat % n) * PyArray_STRIDE(arr, d);
            flat /= n;
        }
    }
    /* array contents reach Python code: a recording capture is not replayable */
    if (nd__tls_rec && !nd__tls_rec->final) nd__tls_rec->escapes++;
    return PyArray_Scalar(ptr, PyArray_DESCR(arr), a);
}

PyObject *nd_proxy_element(PyObject *o, npy_intp off)
{
    NdProxy *b = as_proxy(o);
    if (!b || !nd__live(b)) return NULL;
    nd_replay_rec *rec = nd__rec_of(b->st->trace);
    if (!rec || !rec->elem_lazy || rec->final || rec->escapes || rec->nelem >= ND_LAZY_ELEM_MAX)
        return element_now(b, off);
    npy_intp str[ND_MAXDIMS] = {0}, z = 0;
    /* off over the proxy's own C-order index -> a 0-d view of it */
    PyObject *v = b->ndim ? nd_proxy_view(o, 0, &z, off, str) : Py_NewRef(o);
    if (!v) return NULL;
    nd_id id = nd_proxy_read(v);
    Py_DECREF(v);
    if (id == ND_NONE) return NULL;
    rec->nelem++;
    return nd_proxy_wrap(b->st->trace, id, 1);
}

PyObject *nd__proxy_on(nd_storage *s, int ndim, const npy_intp *shape, npy_intp off,
                       const npy_intp *strides)
{
    NdProxy *p = (NdProxy *)nd__proxy_new(s, 0);
    if (!p) return NULL;
    p->ndim = (uint8_t)ndim;
    if (ndim) {  /* 0-d: shape/strides may be NULL */
        memcpy(p->shape, shape, sizeof(npy_intp) * (size_t)ndim);
        memcpy(p->strides, strides, sizeof(npy_intp) * (size_t)ndim);
    }
    p->off = off;
    p->identity = (uint8_t)is_identity(s, ndim, shape, off, strides);
    return (PyObject *)p;
}

void nd__proxy_view_of(NdProxy *p, NdProxy *b)
{
    p->readonly = b->readonly;
    PyObject *o = b->vbase ? b->vbase : (PyObject *)b;
    Py_XSETREF(p->base, Py_NewRef(o));
    Py_XSETREF(p->vbase, Py_NewRef(o));
}

void nd__proxy_set_caller(NdProxy *p, PyArrayObject *a)
{
    Py_XSETREF(p->base, Py_XNewRef(PyArray_BASE(a)));
    /* PyArray_SetBaseObject's collapse: up the chain while the array does
     * not own its data and its base is an exact ndarray */
    PyObject *obj = (PyObject *)a;
    while (PyArray_Check(obj) && !PyArray_CHKFLAGS((PyArrayObject *)obj, NPY_ARRAY_OWNDATA)) {
        PyObject *up = PyArray_BASE((PyArrayObject *)obj);
        if (!up || Py_TYPE(up) != &PyArray_Type) break;
        obj = up;
    }
    Py_XSETREF(p->vbase, obj == (PyObject *)a ? NULL : Py_NewRef(obj));
}

int nd_proxy_is_readonly(PyObject *o)
{
    if (!nd_proxy_check(o)) return 0;
    NdProxy *p = (NdProxy *)o;
    return p->readonly || (p->st && p->st->readonly);
}

int nd_proxy_set_readonly(PyObject *o)
{
    NdProxy *p = as_proxy(o);
    if (!p) return -1;
    p->readonly = 1;
    return 0;
}

/* The concrete array behind a version node, if it has one (borrowed). */
static PyObject *node_array(nd_graph *g, nd_id id)
{
    nd_node *n = nd_graph_node(g, id);
    if (n->value) return n->value;
    if (n->op == ND_OP_INPUT) return n->obj;
    return NULL;
}

/* NumPy view of `arr` (shaped like the storage) through proxy p's map;
 * NULL without an exception when no strided view of arr expresses it. */
static PyObject *view_of(NdProxy *p, PyArrayObject *arr)
{
    if (p->identity && !p->fresh) return Py_NewRef((PyObject *)arr);
    if (p->identity) return PyArray_View(arr, NULL, &PyArray_Type);
    const npy_intp *bs = PyArray_DIMS(arr), *bst = PyArray_STRIDES(arr);
    int bndim = PyArray_NDIM(arr);
    npy_intp boff = 0, bstrides[ND_MAXDIMS], isz = PyArray_ITEMSIZE(arr);
    int any_empty = 0;
    for (int d = 0; d < p->ndim; d++) any_empty |= p->shape[d] == 0;
    if (PyArray_IS_C_CONTIGUOUS(arr)) {
        /* the storage's flat index is the memory order: the map applies as is
         * (this also covers reshapes that merge the storage's dims) */
        boff = any_empty ? 0 : p->off * isz;
        for (int d = 0; d < p->ndim; d++) bstrides[d] = p->strides[d] * isz;
    } else {
        npy_intp start[ND_MAXDIMS], coef[ND_MAXDIMS][ND_MAXDIMS], size = PyArray_SIZE(arr), fs;
        if (nd__decompose(bndim, bs, p->ndim, p->shape, p->off, p->strides, start, coef)) {
            /* memory uniformly strided (a[::-1, ::-2] of a C array): the
             * flat index is one byte stride, any map applies through it */
            if (!nd_nocopy_reshape(bndim, bs, bst, 1, &size, &fs))
                return NULL;  /* no NumPy view expresses it: the caller computes it */
            boff = any_empty ? 0 : p->off * fs;
            for (int d = 0; d < p->ndim; d++) bstrides[d] = p->strides[d] * fs;
            goto make;
        }
        if (!any_empty)
            for (int e = 0; e < bndim; e++) boff += start[e] * bst[e];
        for (int d = 0; d < p->ndim; d++) {
            bstrides[d] = 0;
            for (int e = 0; e < bndim; e++) bstrides[d] += coef[d][e] * bst[e];
        }
    }
make:;
    PyArray_Descr *descr = PyArray_DESCR(arr);
    Py_INCREF(descr);
    int flags = PyArray_ISWRITEABLE(arr) ? NPY_ARRAY_WRITEABLE : 0;
    PyObject *v = PyArray_NewFromDescr(&PyArray_Type, descr, p->ndim, p->shape, bstrides,
                                       PyArray_BYTES(arr) + boff, flags, NULL);
    if (!v) return NULL;
    if (PyArray_SetBaseObject((PyArrayObject *)v, Py_NewRef((PyObject *)arr)) < 0) {
        Py_DECREF(v);
        return NULL;
    }
    PyArray_UpdateFlags((PyArrayObject *)v, NPY_ARRAY_UPDATE_ALL);
    return v;
}

PyObject *nd_proxy_base_array(PyObject *o)
{
    NdProxy *p = as_proxy(o);
    if (!p) return NULL;
    if (p->value) return Py_NewRef(p->value);
    if (!p->st) return NULL;
    PyObject *arr = node_array(p->st->trace->g, p->st->version);
    if (!arr || !PyArray_Check(arr)) return NULL;
    nd_storage *s = p->st;
    if (s->rebased && !p->fresh && !p->part && arr == s->caller) {
        /* the caller array itself, as `return a` gives it */
        PyArrayObject *r = (PyArrayObject *)s->root;
        int same = p->off == s->root_off && p->ndim == PyArray_NDIM(r);
        for (int d = 0; same && d < p->ndim; d++)
            same = p->shape[d] == PyArray_DIM(r, d) && p->strides[d] == s->root_strides[d];
        if (same) return Py_NewRef(s->root);
    }
    if (!p->part) return view_of(p, (PyArrayObject *)arr);
    /* the complex region, then NumPy's own .real/.imag view of it */
    uint8_t part = p->part, ident = p->identity;
    p->part = 0;
    p->identity = (uint8_t)is_identity(p->st, p->ndim, p->shape, p->off, p->strides);
    PyObject *v = view_of(p, (PyArrayObject *)arr);
    p->identity = ident;
    p->part = part;
    if (!v) return NULL;
    PyObject *r = PyObject_GetAttrString(v, part == ND_F_VIEW_REAL ? "real" : "imag");
    Py_DECREF(v);
    return r;
}

/* A node of array `arr` that is not a caller buffer (a fresh value we own). */
nd_id nd__input_node(nd_trace *t, PyObject *arr)
{
    PyArrayObject *a = (PyArrayObject *)arr;
    nd_node n;
    nd_node_init(&n, ND_OP_INPUT, PyArray_TYPE(a), PyArray_NDIM(a), PyArray_DIMS(a));
    n.obj = Py_NewRef(arr);
    nd_id id = nd_graph_add(t->g, &n);
    if (id == ND_NONE) Py_DECREF(arr);
    return id;
}

int nd__proxy_write_array(NdProxy *p, PyObject *arr)
{
    if (!nd__live(p)) {
        PyObject *v = nd__proxy_value(p, NULL);
        if (!v) return -1;
        int r = PyArray_CopyInto((PyArrayObject *)v, (PyArrayObject *)arr);
        Py_DECREF(v);
        return r;
    }
    nd_id id = nd__input_node(p->st->trace, arr);
    return id == ND_NONE ? -1 : write_node(p, id);
}

int nd_trace_supported_array(PyObject *obj)
{
    if (!PyArray_Check(obj)) return 0;
    PyArrayObject *a = (PyArrayObject *)obj;
    if (PyArray_NDIM(a) > ND_MAXDIMS || !PyArray_ISNOTSWAPPED(a)) return 0;
    switch (PyArray_TYPE(a)) {
    case NPY_BOOL: case NPY_BYTE: case NPY_UBYTE: case NPY_SHORT: case NPY_USHORT:
    case NPY_INT: case NPY_UINT: case NPY_LONG: case NPY_ULONG: case NPY_LONGLONG:
    case NPY_ULONGLONG: case NPY_HALF: case NPY_FLOAT: case NPY_DOUBLE:
    case NPY_CFLOAT: case NPY_CDOUBLE:
        return PyArray_ITEMSIZE(a) > 0;
    default:
        return 0;
    }
}

/* Storage for a caller array, created on first sight (borrowed result). */
nd_storage *nd__caller_storage(nd_trace *t, PyObject *arr)
{
    nd_storage *s = nd__caller_find(t, arr);
    if (s) return s;
    PyObject *base = arr;
    if (!PyArray_CheckExact(arr)) {
        /* subclasses (matrix, memmap...) take part as plain ndarray data */
        base = PyArray_View((PyArrayObject *)arr, NULL, &PyArray_Type);
        if (!base) return NULL;
    } else {
        Py_INCREF(base);
    }
    nd_id id = nd__input_node(t, base);
    Py_DECREF(base);
    if (id == ND_NONE) return NULL;
    s = nd__storage_new(t, id, arr);
    if (!s) return NULL;
    if (nd__caller_add(t, s) < 0) { nd__storage_decref(s); return NULL; }
    nd__storage_decref(s);  /* the caller table holds it */
    return s;
}

static nd_id scalar_node(nd_trace *t, PyObject *obj, int dtype, int weak)
{
    nd_node n;
    nd_node_init(&n, ND_OP_SCALAR, dtype, 0, NULL);
    if (weak) n.flags |= ND_F_WEAK;
    switch (dtype) {
    case NPY_BOOL:
        if ((n.scalar.i = PyObject_IsTrue(obj)) < 0) return ND_NONE;
        break;
    case NPY_HALF: case NPY_FLOAT: case NPY_DOUBLE:
        n.scalar.f = PyFloat_AsDouble(obj);
        if (n.scalar.f == -1.0 && PyErr_Occurred()) return ND_NONE;
        break;
    case NPY_CFLOAT: case NPY_CDOUBLE: {
        Py_complex c = PyComplex_AsCComplex(obj);
        if (c.real == -1.0 && PyErr_Occurred()) return ND_NONE;
        n.scalar.c.re = c.real;
        n.scalar.c.im = c.imag;
        break;
    }
    default: {  /* integers */
        PyObject *i = PyNumber_Index(obj);
        if (!i) return ND_NONE;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
        if (overflow > 0) {
            /* a weak int above int64 keeps its value as uint64 when it fits;
             * beyond that the shim raises NumPy's OverflowError from obj */
            unsigned long long u = PyLong_AsUnsignedLongLong(i);
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                u = 0;
            } else if (weak) {
                n.dtype = NPY_UINT64;
            }
            n.scalar.u = u;
        } else if (overflow < 0) {
            n.scalar.i = 0;
        } else {
            if (v == -1 && PyErr_Occurred()) { Py_DECREF(i); return ND_NONE; }
            n.scalar.i = v;
        }
        Py_DECREF(i);
    }
    }
    n.obj = Py_NewRef(obj);
    nd_id id = nd_graph_add(t->g, &n);
    if (id == ND_NONE) Py_DECREF(obj);
    return id;
}

nd_id nd_trace_lift(nd_trace *t, PyObject *obj)
{
    if (!t) t = nd_trace_current();
    if (!t) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: nd_trace_lift outside a trace");
        return ND_NONE;
    }
    if (nd_proxy_check(obj)) return nd_proxy_read(obj);
    if (PyArray_Check(obj)) {
        if (!nd_trace_supported_array(obj)) {
            PyErr_Format(PyExc_TypeError,
                         "numdyn: arrays of dtype %R (or rank above %d, or non-native "
                         "byte order) are not traced",
                         (PyObject *)PyArray_DESCR((PyArrayObject *)obj), ND_MAXDIMS);
            return ND_NONE;
        }
        nd_storage *s = nd__caller_storage(t, obj);
        if (!s) return ND_NONE;
        if (!s->rebased) return s->version;
        PyObject *p = nd__caller_proxy(s, 0);  /* its map over the memory order */
        nd_id id = p ? nd__proxy_read_own((NdProxy *)p) : ND_NONE;
        Py_XDECREF(p);
        return id;
    }
    if (PyBool_Check(obj)) return scalar_node(t, obj, NPY_BOOL, 1);
    if (PyLong_Check(obj)) return scalar_node(t, obj, NPY_INT64, 1);
    if (PyFloat_Check(obj)) return scalar_node(t, obj, NPY_DOUBLE, 1);
    if (PyComplex_Check(obj)) return scalar_node(t, obj, NPY_CDOUBLE, 1);
    if (PyArray_IsScalar(obj, Generic)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(obj);
        if (!d) return ND_NONE;
        int tn = d->type_num;
        Py_DECREF(d);
        PyObject *probe = PyArray_FROM_O(obj);
        if (!probe) return ND_NONE;
        int ok = nd_trace_supported_array(probe);
        Py_DECREF(probe);
        if (ok) return scalar_node(t, obj, tn, 0);
        PyErr_Format(PyExc_TypeError, "numdyn: NumPy scalars of type %s are not traced",
                     Py_TYPE(obj)->tp_name);
        return ND_NONE;
    }
    if (PyList_Check(obj) || PyTuple_Check(obj)) {
        PyObject *arr = PyArray_FROM_O(obj);
        if (!arr) return ND_NONE;
        nd_id id = ND_NONE;
        if (nd_trace_supported_array(arr)) id = nd__input_node(t, arr);
        else PyErr_Format(PyExc_TypeError,
                          "numdyn: a sequence converting to dtype %R is not traced",
                          (PyObject *)PyArray_DESCR((PyArrayObject *)arr));
        Py_DECREF(arr);
        return id;
    }
    PyErr_Format(PyExc_TypeError, "numdyn: cannot use an object of type %s as an array",
                 Py_TYPE(obj)->tp_name);
    return ND_NONE;
}
