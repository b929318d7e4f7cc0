/* trace_views.c -- the view algebra of proxies: a view is the same storage
 * seen through a composed affine map (element i reads the storage's C-order
 * flat element off + sum_d i_d*strides[d]); reshape's view-vs-copy rule;
 * single elements read straight from concrete arrays; the NumPy view of a
 * proxy's base array. */
#include "trace_internal.h"
#include "core/strides.h"
#include "trace_replay.h"
#include <string.h>

extern PyTypeObject NdProxy_Type;

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
    nd_c_strides(bndim, bshape, cs);
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

/* A NumPy scalar is immutable: what NumPy views of one (np.asarray(s),
 * s.reshape(1), s[...], a method's 0-d result) views a new 0-d array
 * holding its value, never the scalar, so writes through the view leave s
 * as it was. A scalar-valued proxy's value as a storage of its own (an
 * identity VIEW node: a new value), new ref; b itself when not a scalar. */
static NdProxy *unshared_base(NdProxy *b)
{
    if (!b->is_scalar) return (NdProxy *)Py_NewRef(b);
    nd_id v = nd__proxy_read_own(b);
    if (v == ND_NONE) return NULL;
    nd_node n;
    nd_node_init(&n, ND_OP_VIEW, b->dtype, b->ndim, b->shape);
    n.nin = 1;
    n.in[0] = v;
    nd_id id = nd_graph_add(b->st->trace->g, &n);
    return id == ND_NONE ? NULL : (NdProxy *)nd_proxy_wrap(b->st->trace, id, 0);
}

PyObject *nd_proxy_view(PyObject *o, int ndim, const npy_intp *shape,
                        npy_intp off, const npy_intp *strides)
{
    NdProxy *b = nd__as_proxy(o);
    if (!b) return NULL;
    if (ndim < 0 || ndim > ND_MAXDIMS) {
        PyErr_Format(PyExc_ValueError, "numdyn: view of rank %d", ndim);
        return NULL;
    }
    NdProxy *adopted = NULL;
    if (!nd__live(b)) {
        if (!(adopted = nd__adopt(b))) return NULL;
        b = adopted;
    }
    if (b->is_scalar) {
        NdProxy *u = unshared_base(b);
        Py_XDECREF(adopted);
        if (!u) return NULL;
        b = adopted = u;
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

/* whether a map over storage s's C-order index is a strided view of the
 * memory s's value has (C order, or per-dimension over its dims) */
static int memory_expresses(nd_storage *s, int ndim, const npy_intp *shape, npy_intp off,
                            const npy_intp *strides)
{
    npy_intp ms[ND_MAXDIMS], cs[ND_MAXDIMS];
    if (nd__storage_memory_strides(s, ms)) return 1;  /* unknown: as before */
    nd_c_strides(s->ndim, s->shape, cs);
    int c_order = 1;
    for (int d = 0; d < s->ndim; d++) c_order &= s->shape[d] <= 1 || ms[d] == cs[d];
    if (c_order) return 1;
    npy_intp start[ND_MAXDIMS], coef[ND_MAXDIMS][ND_MAXDIMS];
    return !nd__decompose(s->ndim, s->shape, ndim, shape, off, strides, start, coef);
}

PyObject *nd_proxy_reshape_view(PyObject *o, int ndim, const npy_intp *shape)
{
    NdProxy *b = nd__as_proxy(o);
    if (!b) return NULL;
    if (b->part || !nd__live(b) || b->is_scalar) return NULL;  /* the general path handles these */
    npy_intp nstr[ND_MAXDIMS], ms[ND_MAXDIMS];
    if (!nd_nocopy_reshape(b->ndim, b->shape, b->strides, ndim, shape, nstr)) {
        /* a view of the caller's memory order that the map over the
         * storage's C-order index cannot express: re-base the storage */
        if (nd_proxy_memory_strides(o, ms) ||
            !nd_nocopy_reshape(b->ndim, b->shape, ms, ndim, shape, NULL))
            return NULL;
        int r = nd__rebase_memory(b->st);
        if (r <= 0) return NULL;
        if (!nd_nocopy_reshape(b->ndim, b->shape, b->strides, ndim, shape, nstr)) return NULL;
    } else if (!memory_expresses(b->st, ndim, shape, b->off, nstr)) {
        /* a view over the storage's C-order index that crosses its dims
         * where its memory is not in C order (z = x.transpose(2, 0, 1) * 2
         * is laid out as x; z.reshape(4, -1) merges dims NumPy finds
         * adjacent in memory): no strided view of the memory is that map,
         * so the result would be a copy NumPy's view is not. Re-base the
         * storage over its memory order, where NumPy's view is a map. */
        int r = nd__rebase_memory(b->st);
        if (r < 0) return NULL;
        if (r > 0 && !nd_nocopy_reshape(b->ndim, b->shape, b->strides, ndim, shape, nstr))
            return NULL;
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
static PyObject *element_now(NdProxy *p, npy_intp off)
{
    if (p->part) return NULL;
    PyObject *a = nd__node_array(p->st->trace->g, p->st->version);
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
    NdProxy *b = nd__as_proxy(o);
    if (!b || !nd__live(b)) return NULL;
    nd_replay_rec *rec = nd__rec_of(b->st->trace);
    /* under differentiation an element read stays in the graph: a NumPy
     * scalar would carry no gradient */
    int ad = b->st->trace->ad != NULL;
    if (!ad && (!rec || !rec->elem_lazy || rec->final || rec->escapes || rec->nelem >= ND_LAZY_ELEM_MAX ||
                b->st->trace->g->n >= ND_LAZY_ELEM_NODES)) {
        PyObject *e = element_now(b, off);
        /* fullgraph=True: an element of pending work stays in the graph
         * (a read now would run the graph so far: a second graph) */
        if (e || PyErr_Occurred() || !b->st->trace->fullgraph) return e;
    }
    npy_intp str[ND_MAXDIMS] = {0}, z = 0;
    /* off over the proxy's own C-order index -> a 0-d view of it */
    PyObject *v = b->ndim ? nd_proxy_view(o, 0, &z, off, str) : Py_NewRef(o);
    if (!v) return NULL;
    nd_id id = nd_proxy_read(v);
    Py_DECREF(v);
    if (id == ND_NONE) return NULL;
    if (rec) rec->nelem++;
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
    p->identity = (uint8_t)nd__map_is_identity(s, ndim, shape, off, strides);
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

/* NumPy view of `arr` (shaped like the storage) through proxy p's map;
 * NULL without an exception when no strided view of arr expresses it. */
PyObject *nd__view_of(NdProxy *p, PyArrayObject *arr)
{
    if (p->identity && !p->fresh) return Py_NewRef((PyObject *)arr);
    if (p->identity) {
        PyObject *v = PyArray_View(arr, NULL, &PyArray_Type);
        if (v && p->readonly) PyArray_CLEARFLAGS((PyArrayObject *)v, NPY_ARRAY_WRITEABLE);
        return v;
    }
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
    /* a read-only view (diagonal, .imag of a real array) stays read-only */
    int flags = PyArray_ISWRITEABLE(arr) && !p->readonly ? NPY_ARRAY_WRITEABLE : 0;
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

/* A value taken as NumPy's view at a computed index (nd_proxy_dynamic_view)
 * leaving the function: that view of the base's array, the index computed
 * (the call's graph has run: no second graph). NULL without an exception
 * while the call goes on or the base has no array of its own yet. */
static PyObject *dynamic_view_array(NdProxy *p)
{
    nd_storage *s = p->st;
    nd_trace *t = s->trace;
    if (!(t->returning || t->ended)) return NULL;
    NdProxy *b = nd__as_proxy(s->dview_base);
    if (!b || !b->st || (b->st->caller && b->st->dirty)) return NULL;
    PyObject *key = s->dview_key, *base = NULL, *k = NULL, *full = NULL, *r = NULL;
    Py_ssize_t n = PyTuple_Check(key) ? PyTuple_GET_SIZE(key) : 1;
    if (!(base = nd_proxy_base_array((PyObject *)b)) || !(k = PyTuple_New(n))) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_Check(key) ? PyTuple_GET_ITEM(key, i) : key, *v = NULL;
        NdProxy *q = nd__as_proxy(o);
        if (q && q->value) {
            v = PyNumber_Index(q->value);
        } else if (q && q->st) {
            nd_id id = nd__proxy_read_own(q);
            PyObject *a = NULL;
            if (id != ND_NONE && nd__flush(q->st->trace, &id, 1, &a) == 0) v = PyNumber_Index(a);
            Py_XDECREF(a);
        } else {
            v = Py_NewRef(o);
        }
        if (!v) goto done;
        PyTuple_SET_ITEM(k, i, v);
    }
    if (!(full = PyObject_GetItem(base, PyTuple_Check(key) ? k : PyTuple_GET_ITEM(k, 0)))) goto done;
    if (!PyArray_Check(full)) goto done;
    r = nd__view_of(p, (PyArrayObject *)full);
done:
    Py_XDECREF(base);
    Py_XDECREF(k);
    Py_XDECREF(full);
    return r;
}

/* whether ndarrays v and a are views of the same memory with one layout */
static int same_view(PyObject *v, PyObject *a)
{
    PyArrayObject *V = (PyArrayObject *)v, *A = (PyArrayObject *)a;
    int nd = PyArray_NDIM(V);
    if (!PyArray_Check(v) || PyArray_BYTES(V) != PyArray_BYTES(A) || nd != PyArray_NDIM(A) ||
        !PyArray_EquivTypes(PyArray_DESCR(V), PyArray_DESCR(A)))
        return 0;
    for (int d = 0; d < nd; d++)
        if (PyArray_DIM(V, d) != PyArray_DIM(A, d) ||
            (PyArray_DIM(V, d) > 1 && PyArray_STRIDE(V, d) != PyArray_STRIDE(A, d)))
            return 0;
    return 1;
}

/* Whether the array holding storage s's value is another storage's too:
 * a whole-storage write or an identity op left s at another live value's
 * version (b[...] = c; np.copyto(b, a); np.roll(c, 0, axis=0)), or at a
 * caller's array. Two names NumPy gives two arrays must not come back as
 * one memory. */
static int value_shared(nd_storage *s, PyObject *arr)
{
    if (arr == s->caller) return 0;
    nd_storage *o = nd__caller_find(s->trace, arr);
    if (o && o != s) return 1;
    for (NdProxy *q = s->trace->proxies; q; q = q->next)
        if (q->st && q->st != s && q->st->version == s->version) return 1;
    return 0;
}

PyObject *nd_proxy_base_array(PyObject *o)
{
    NdProxy *p = nd__as_proxy(o);
    if (!p) return NULL;
    if (p->value) return Py_NewRef(p->value);
    if (!p->st) return NULL;
    if (p->st->dview_of) return dynamic_view_array(p);
    if (p->memmap && p->st->caller) {
        /* the memmap object itself, its pending writes landed */
        if (p->st->dirty && nd__flush_writes(p->st->trace) < 0) return NULL;
        return Py_NewRef(p->st->caller);
    }
    nd_storage *s = p->st;
    /* a rebased storage not written since: its value is the caller's memory
     * itself (the rebase's version node computes a copy of it), so a view
     * returned is NumPy's view of the caller's array (a.T.ravel() of an F
     * array) */
    PyObject *arr = s->rebased && s->version == s->rebase_version
                  ? s->caller : nd__node_array(s->trace->g, s->version);
    if (!arr || !PyArray_Check(arr)) return NULL;
    if (!s->caller && !s->dview_of && value_shared(s, arr)) {
        /* s's value of its own: a copy, its new version */
        PyObject *c = PyArray_NewCopy((PyArrayObject *)arr, NPY_KEEPORDER);
        nd_id id = c ? nd__input_node(s->trace, c) : ND_NONE;
        Py_XDECREF(c);
        if (id == ND_NONE) return NULL;
        s->version = id;
        arr = nd__node_array(s->trace->g, id);
        if (!arr) return NULL;
    }
    if (s->rebased && !p->fresh && !p->part && arr == s->caller) {
        /* the caller array itself, as `return a` gives it */
        PyArrayObject *r = (PyArrayObject *)s->root;
        int same = p->off == s->root_off && p->ndim == PyArray_NDIM(r);
        for (int d = 0; same && d < p->ndim; d++)
            same = p->shape[d] == PyArray_DIM(r, d) && p->strides[d] == s->root_strides[d];
        if (same) return Py_NewRef(s->root);
    }
    if (!p->part) {
        PyObject *v = nd__view_of(p, (PyArrayObject *)arr);
        if (v && p->arg && !p->fresh && arr == s->caller && same_view(v, p->arg))
            Py_SETREF(v, Py_NewRef(p->arg));  /* the argument itself, as `return y` gives it */
        return v;
    }
    /* the complex region, then NumPy's own .real/.imag view of it */
    uint8_t part = p->part, ident = p->identity;
    p->part = 0;
    p->identity = (uint8_t)nd__map_is_identity(p->st, p->ndim, p->shape, p->off, p->strides);
    PyObject *v = nd__view_of(p, (PyArrayObject *)arr);
    p->identity = ident;
    p->part = part;
    if (!v) return NULL;
    PyObject *r = PyObject_GetAttrString(v, part == ND_F_VIEW_REAL ? "real" : "imag");
    Py_DECREF(v);
    return r;
}
