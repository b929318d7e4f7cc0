/* trace_storage.c -- views and mutation as functional graph updates:
 * storages, proxies, reads and writes.
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
 *   view   same storage, composed map (trace_views.c).
 *
 * Storages standing for caller arrays (arguments, globals met while
 * tracing; trace_lift.c) are written back into those arrays at every
 * flush: see trace_flush.c. The caller's memory order: trace_layout.c.
 */
#include "trace_internal.h"
#include "core/strides.h"
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
    s->shared = 0;
    s->foreign = 0;
    s->readonly = caller && PyArray_Check(caller) &&
                  !PyArray_ISWRITEABLE((PyArrayObject *)caller);
    s->ndim = n->ndim;
    s->dtype = n->dtype;
    memcpy(s->shape, n->shape, sizeof(npy_intp) * n->ndim);
    s->mark = 0;
    s->exports = NULL;
    s->rebased = 0;
    s->root = NULL;
    s->rebase_version = ND_NONE;
    s->korder = 0;
    s->dview_of = NULL;
    s->dview_base = s->dview_key = NULL;
    s->ndviews = 0;
    return s;
}

void nd__storage_decref(nd_storage *s)
{
    if (!s || --s->refcnt > 0) return;
    if (s->dview_of) {
        s->dview_of->ndviews--;
        nd__storage_decref(s->dview_of);
        Py_CLEAR(s->dview_base);
        Py_CLEAR(s->dview_key);
    }
    Py_XDECREF(s->caller);
    Py_XDECREF(s->root);
    Py_XDECREF(s->exports);
    nd__trace_decref(s->trace);
    if (nstorage_free < ND_FREELIST) storage_free[nstorage_free++] = s;
    else PyMem_Free(s);
}

int nd__map_is_identity(const nd_storage *s, int ndim, const npy_intp *shape,
                       npy_intp off, const npy_intp *strides)
{
    if (ndim != s->ndim || off != 0) return 0;
    npy_intp cs[ND_MAXDIMS];
    nd_c_strides(ndim, shape, cs);
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
    p->memmap = 0;
    p->subtype = NULL;
    p->sdict = NULL;
    p->base = p->vbase = p->arg = NULL;
    p->dtype = s->dtype;
    p->off = 0;
    memcpy(p->shape, s->shape, sizeof(npy_intp) * s->ndim);
    nd_c_strides(s->ndim, s->shape, p->strides);
    nd_trace *t = s->trace;
    p->prev = NULL;
    p->next = t->proxies;
    if (t->proxies) t->proxies->prev = p;
    t->proxies = p;
    return (PyObject *)p;
}

NdProxy *nd__as_proxy(PyObject *o)
{
    if (!o || !nd_proxy_check(o)) {
        PyErr_Format(PyExc_TypeError, "numdyn: expected a LazyArray, got %s",
                     o ? Py_TYPE(o)->tp_name : "NULL");
        return NULL;
    }
    return (NdProxy *)o;
}

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
    PyObject *arr = nd__node_array(t->g, id);
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
    /* memory Python code can also reach untraced (through globals, or a
     * real alias it holds): the operation runs at once */
    if (s->shared || (s->exports && nd__exports_alive(s) > 0)) s->trace->shared_touch = 1;
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
NdProxy *nd__adopt(NdProxy *p)
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
    NdProxy *p = nd__as_proxy(o);
    if (!p) return ND_NONE;
    if (nd__live(p)) return nd__proxy_read_own(p);
    NdProxy *a = nd__adopt(p);
    if (!a) return ND_NONE;
    nd_id id = nd__proxy_read_own(a);
    Py_DECREF(a);
    return id;
}

/* Real NumPy aliases of s's caller buffer that Python code still holds
 * (dead weak references are dropped; s->exports becomes NULL when none is
 * left): 1 some, 0 none, -1 error */
int nd__exports_alive(nd_storage *s)
{
    if (!s->exports) return 0;
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
    if (!alive) Py_CLEAR(s->exports);
    return alive > 0;
}

/* A real NumPy alias of this caller buffer is held by Python code: it must
 * see the write now, as it would under NumPy. */
static int write_through(nd_storage *s)
{
    int alive = nd__exports_alive(s);
    return alive <= 0 ? alive : nd__flush(s->trace, NULL, 0, NULL);
}

static int write_part(NdProxy *p, nd_id value);

/* A write into a value taken as NumPy's view at a computed index (or into
 * the array it views, while that value lives): the gather it is in the
 * graph would not see it, and making it NumPy's view needs the index's
 * value, a read (under fullgraph=True, the only place such views are made,
 * GraphBreakError). */
static int dynamic_view_write(nd_storage *s)
{
    if (nd__explain_read(s->trace, s->dview_of ? "a write into a view taken at a computed index"
                                               : "a write into an array while a view of it taken at a "
                                                 "computed index lives") < 0)
        return -1;
    PyErr_SetString(PyExc_SystemError, "numdyn: a view at a computed index outside fullgraph=True");
    return -1;
}

int nd_proxy_dynamic_view_ok(PyObject *base)
{
    NdProxy *b = nd__as_proxy(base);
    if (!b || !nd__live(b)) return 0;
    nd_storage *bs = b->st;
    return bs->trace->fullgraph && !b->part && !b->memmap && !b->subtype && !bs->shared &&
           !bs->foreign && !bs->exports && !bs->rebased;
}

int nd_proxy_dynamic_view(PyObject *r, PyObject *base, PyObject *key)
{
    NdProxy *p = nd__as_proxy(r), *b = nd__as_proxy(base);
    if (!p || !b || !nd__live(p) || !nd__live(b) || !nd_proxy_dynamic_view_ok(base)) return 1;
    nd_storage *s = p->st, *bs = b->st;
    if (s == bs || s->caller || s->dview_of || s->refcnt != 1) return 1;
    s->dview_of = bs;
    s->dview_base = Py_NewRef(base);
    s->dview_key = Py_NewRef(key);
    bs->refcnt++;
    bs->ndviews++;
    p->readonly = b->readonly || bs->readonly;
    nd__proxy_view_of(p, b);
    return 0;
}

/* flags: node flags of the SETITEM made (ND_F_SCALAR_STORE: always one,
 * even for a whole-storage write, so the store is a node of its own) */
static int write_node(NdProxy *p, nd_id value, uint32_t flags)
{
    nd_storage *s = p->st;
    nd_graph *g = s->trace->g;
    if (s->readonly || p->readonly) {
        PyErr_SetString(PyExc_ValueError, "assignment destination is read-only");
        return -1;
    }
    if ((s->dview_of || s->ndviews) && dynamic_view_write(s) < 0) return -1;
    if (p->part) return write_part(p, value);
    if (value < 0 || value >= g->n) {
        PyErr_Format(PyExc_SystemError, "numdyn: nd_proxy_write of bad node %d", (int)value);
        return -1;
    }
    const nd_node *v = nd_graph_node(g, value);
    /* `a[s] op= x` ends with a[s] = (the view a[s] it just wrote through):
     * the region's own current value written back, a no-op under NumPy; a
     * SETITEM for it would copy the whole storage at run time */
    if (!flags && v->op == ND_OP_VIEW && v->in[0] == s->version && v->voff == p->off &&
        v->dtype == s->dtype && !(v->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG)) &&
        v->ndim == p->ndim && memcmp(v->shape, p->shape, sizeof(npy_intp) * p->ndim) == 0 &&
        memcmp(v->vstrides, p->strides, sizeof(npy_intp) * p->ndim) == 0)
        return 0;
    int same = !flags && p->identity && v->dtype == s->dtype && v->ndim == s->ndim &&
               memcmp(v->shape, s->shape, sizeof(npy_intp) * s->ndim) == 0;
    nd_id nv = value;
    if (!same) {
        nd_node n;
        nd_node_init(&n, ND_OP_SETITEM, s->dtype, s->ndim, s->shape);
        n.nin = 2;
        n.in[0] = s->version;
        n.in[1] = value;
        n.in_dtype[1] = s->dtype;
        n.flags = flags;
        n.voff = p->off;
        n.vndim = p->ndim;
        memcpy(n.vshape, p->shape, sizeof(npy_intp) * p->ndim);
        memcpy(n.vstrides, p->strides, sizeof(npy_intp) * p->ndim);
        nv = nd_graph_add(g, &n);
        if (nv == ND_NONE) return -1;
        if (flags & ND_F_SCALAR_STORE) s->trace->scalar_stores++;
    }
    s->version = nv;
    nd__storage_dirty(s);
    if (s->shared) s->trace->shared_touch = 1;
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
    region = nd__view_of(p, (PyArrayObject *)copy);  /* copy is C-contiguous: never NULL w/o error */
    p->part = saved;
    if (!region) goto done;
    part = PyObject_GetAttrString(region, saved == ND_F_VIEW_REAL ? "real" : "imag");
    if (!part || PyArray_CopyInto((PyArrayObject *)part, (PyArrayObject *)res[1]) < 0) goto done;
    nd_id nv = nd__input_node(t, copy);
    if (nv == ND_NONE) goto done;
    s->version = nv;
    nd__storage_dirty(s);
    if (s->shared) t->shared_touch = 1;
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
    NdProxy *b = nd__as_proxy(o);
    if (!b) return NULL;
    if ((which != ND_F_VIEW_REAL && which != ND_F_VIEW_IMAG) || b->part ||
        (b->dtype != NPY_CFLOAT && b->dtype != NPY_CDOUBLE)) {
        PyErr_SetString(PyExc_SystemError,
                        "numdyn: nd_proxy_part needs a complex proxy and REAL or IMAG");
        return NULL;
    }
    NdProxy *adopted = NULL;
    if (!nd__live(b)) {
        if (!(adopted = nd__adopt(b))) return NULL;
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

static int proxy_write(PyObject *o, nd_id value, uint32_t flags)
{
    NdProxy *p = nd__as_proxy(o);
    if (!p) return -1;
    if (nd__live(p)) return write_node(p, value, flags);
    /* the value is a node of the current trace; the target is concrete */
    nd_trace *t = nd_trace_current();
    if (!t) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: nd_proxy_write outside a trace");
        return -1;
    }
    NdProxy *a = nd__adopt(p);
    if (!a) return -1;
    int r = write_node(a, value, flags);
    Py_DECREF(a);
    return r;
}

int nd_proxy_write(PyObject *o, nd_id value) { return proxy_write(o, value, 0); }
int nd_scalar_store_may_refuse(int vt, int dt)
{
    if (!PyTypeNum_ISSIGNED(dt) || PyTypeNum_ISBOOL(vt)) return 0;
    if (PyTypeNum_ISFLOAT(vt) || PyTypeNum_ISCOMPLEX(vt)) return 1;
    if (!PyTypeNum_ISINTEGER(vt)) return 0;
    int vs = PyArray_DescrFromType(vt)->elsize, ds = PyArray_DescrFromType(dt)->elsize;
    return PyTypeNum_ISUNSIGNED(vt) ? vs >= ds : vs > ds;
}

int nd_proxy_write_scalar(PyObject *o, nd_id value, int scalar_dtype)
{
    int refuse = nd_proxy_check(o) && nd_scalar_store_may_refuse(scalar_dtype, nd_proxy_dtype(o));
    return proxy_write(o, value, refuse ? ND_F_SCALAR_STORE : 0);
}

int nd_proxy_is_readonly(PyObject *o)
{
    if (!nd_proxy_check(o)) return 0;
    NdProxy *p = (NdProxy *)o;
    return p->readonly || (p->st && p->st->readonly);
}

int nd_proxy_same_view(PyObject *a, PyObject *b)
{
    if (!nd_proxy_live(a) || !nd_proxy_live(b)) return 0;
    NdProxy *p = (NdProxy *)a, *q = (NdProxy *)b;
    return p->st == q->st && p->dtype == q->dtype && p->part == q->part && p->ndim == q->ndim &&
           p->off == q->off && memcmp(p->shape, q->shape, sizeof(npy_intp) * p->ndim) == 0 &&
           memcmp(p->strides, q->strides, sizeof(npy_intp) * p->ndim) == 0;
}

int nd_proxy_set_readonly(PyObject *o)
{
    NdProxy *p = nd__as_proxy(o);
    if (!p) return -1;
    p->readonly = 1;
    return 0;
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
    return id == ND_NONE ? -1 : write_node(p, id, 0);
}
