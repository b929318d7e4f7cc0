/* trace_resize.c -- a traced array whose shape changes in place.
 *
 * `a.shape = s` and `a.resize(...)` change the array object itself, not a
 * new view: a caller's argument leaves the call with the new shape (and,
 * for resize, new memory), and every later use in the function sees it.
 * A storage's shape is what its views' maps index, so such a change
 * re-seats the storage: its shape and current version become the new
 * array's. For a caller's array the change is made on the caller's object
 * itself, after the pending writes landed, so NumPy's own checks decide
 * (refcheck, one segment, incompatible shapes) and give NumPy's errors.
 */
#include "trace_internal.h"
#include "core/strides.h"
#include <string.h>

static const char REFCHECK_MSG[] =
    "cannot resize an array that references or is referenced\n"
    "by another object in this way.\n"
    "Use the np.resize function to get a new resized copy or\n"
    " set refcheck=False to disable this check";

/* p stands for the caller's array object itself (not a view of it that
 * NumPy would have made as another object) */
static int is_caller_object(NdProxy *p)
{
    nd_storage *s = p->st;
    if (!s->caller || s->rebased || !PyArray_Check(s->caller) || !p->identity || p->fresh ||
        p->part)
        return 0;
    PyArrayObject *c = (PyArrayObject *)s->caller;
    return PyArray_NDIM(c) == p->ndim &&
           memcmp(PyArray_DIMS(c), p->shape, sizeof(npy_intp) * p->ndim) == 0;
}

/* another attached proxy views s: its map would index a storage of
 * another shape (NumPy refuses the resize while views hold the array) */
static int viewed_by_others(nd_trace *t, NdProxy *p)
{
    for (NdProxy *q = t->proxies; q; q = q->next)
        if (q != p && q->st == p->st) return 1;
    return 0;
}

/* s's value is now `arr` (version node v) with arr's shape; p, the array
 * object that changed, maps it whole */
static void reseat(NdProxy *p, nd_id v, PyObject *arr)
{
    nd_storage *s = p->st;
    PyArrayObject *a = (PyArrayObject *)arr;
    s->version = v;
    s->ndim = (uint8_t)PyArray_NDIM(a);
    memcpy(s->shape, PyArray_DIMS(a), sizeof(npy_intp) * s->ndim);
    if (!s->caller) nd__storage_adopt_layout(s, arr);
    p->ndim = s->ndim;
    memcpy(p->shape, s->shape, sizeof(npy_intp) * s->ndim);
    nd_c_strides(s->ndim, s->shape, p->strides);
    p->off = 0;
    p->identity = 1;
    p->vnode = p->vver = ND_NONE;
}

/* the caller's object changed shape or memory: the storage's version is
 * that object as it is now (no write pending: the flush before it) */
static int reseat_caller(NdProxy *p)
{
    nd_id v = nd__caller_input(p->st->trace, p->st->caller);
    if (v == ND_NONE) return -1;
    reseat(p, v, p->st->caller);
    return 0;
}

int nd__shape_set_caller(NdProxy *p, PyObject *value)
{
    if (!is_caller_object(p)) return 0;
    nd_trace *t = p->st->trace;
    if (nd__flush_all(t) < 0) return -1;
    if (PyObject_SetAttrString(p->st->caller, "shape", value) < 0) return -1;
    /* views taken before keep their maps: NumPy changes the shape only
     * when the C-order sequence of elements stays the same */
    if (reseat_caller(p) < 0) return -1;
    return 1;
}

static int refcheck_of(PyObject *kwargs)
{
    PyObject *rc = kwargs ? PyDict_GetItemString(kwargs, "refcheck") : NULL;
    return rc ? PyObject_IsTrue(rc) : 1;
}

/* NumPy's own resize of arr, whose references are what NumPy's refcheck
 * counts: the break's bookkeeping must hold none */
static PyObject *call_resize(nd_trace *t, PyObject *arr, PyObject *args, PyObject *kwargs,
                             const char *why)
{
    if (nd_trace_record_break(t, why) < 0) return NULL;
    PyObject *a, *k;
    if (nd__materialize_call(args, kwargs, &a, &k) < 0) return NULL;
    PyObject *m = PyObject_GetAttrString(arr, "resize");
    PyObject *r = m ? PyObject_Call(m, a, k) : NULL;
    Py_XDECREF(m);
    Py_DECREF(a);
    Py_XDECREF(k);
    return r;
}

PyObject *nd_trace_resize(PyObject *self, PyObject *args, PyObject *kwargs)
{
    NdProxy *p = nd__as_proxy(self);
    if (!p) return NULL;
    if (!nd__live(p)) {
        PyObject *v = nd__proxy_value(p, NULL);
        if (!v) return NULL;
        PyObject *m = PyObject_GetAttrString(v, "resize");
        Py_DECREF(v);
        if (!m) return NULL;
        PyObject *r = PyObject_Call(m, args, kwargs);
        Py_DECREF(m);
        return r;
    }
    nd_trace *t = p->st->trace;
    const char *why = "ndarray.resize changes the array in place: NumPy runs it";
    int refcheck = refcheck_of(kwargs);
    if (refcheck < 0) return NULL;
    if (is_caller_object(p)) {
        if (p->st->shared || p->st->exports || viewed_by_others(t, p)) {
            PyErr_SetString(PyExc_ValueError, REFCHECK_MSG);
            return NULL;
        }
        if (nd__flush_all(t) < 0) return NULL;
        PyObject *r = call_resize(t, p->st->caller, args, kwargs, why);
        if (r && reseat_caller(p) < 0) Py_CLEAR(r);
        return r;
    }
    if (p->base || p->fresh || !p->identity || p->part || p->st->caller) {
        PyErr_SetString(PyExc_ValueError, "cannot resize this array: it does not own its data");
        return NULL;
    }
    if (viewed_by_others(t, p)) {
        /* NumPy refuses while views hold the array; without refcheck its
         * views would be left over freed memory */
        PyErr_SetString(PyExc_ValueError, REFCHECK_MSG);
        return NULL;
    }
    /* a private copy that owns its data takes NumPy's resize (its
     * argument checks and errors, zero fill, memory order) */
    PyObject *arr = nd_trace_read(self, "ndarray.resize (NumPy resizes a private copy)");
    if (!arr) return NULL;
    PyObject *c = PyArray_NewCopy((PyArrayObject *)arr, NPY_KEEPORDER);
    Py_DECREF(arr);
    if (!c) return NULL;
    PyObject *r = call_resize(t, c, args, kwargs, why);
    if (r) {
        nd_id v = nd_trace_lift(t, c);
        if (v == ND_NONE) Py_CLEAR(r);
        else reseat(p, v, c);
    }
    Py_DECREF(c);
    return r;
}
