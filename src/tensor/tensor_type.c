/* tensor_type.c -- numdyn.Tensor: an ndarray with NumPy's semantics, a
 * device, and a place on the gradient tape.
 *
 * Every operation unwraps the Tensors among its operands to their ndarrays,
 * runs NumPy itself (so values, dtypes, shapes, errors and the memory order
 * of results are NumPy's by construction), and wraps what comes back:
 * ndarrays and NumPy scalars as Tensors. An operation with an operand that
 * requires grad is recorded on the tape (tensor_tape.c) as the callable
 * that replays it on arrays: operator.add for `a + b`, the ufunc for
 * np.exp(t), the NumPy function for __array_function__, the method name for
 * t.sum(axis=0). In-place writes follow torch's version counters (see
 * "in-place writes" below): `t += v` and `t[k] = v` on a computed Tensor
 * are recorded in their functional form. Attributes Tensor does not define fall through to the ndarray, so
 * every ndarray method and property works.
 */
#include "tensor/tensor_internal.h"
#include "core/number_slots.h"
#include "core/containers.h"
#include "trace/trace.h"
#include <stddef.h>
#include <string.h>

static PyObject *op_funcs[32];      /* operator.<name> per ND_BIN_* / ND_UN_* */
static PyObject *str_out;           /* "out" */
static PyObject *setitem_copy_fn;   /* numdyn._C._setitem_copy */
static PyObject *take_flat_fn;      /* numdyn._C._view_take */
static PyObject *scatter_flat_fn;   /* numdyn._C._view_scatter */

/* ----------------------------------------------------------- wrapping */

int nd_tensor_dtype_differentiable(PyObject *array)
{
    if (!PyArray_Check(array)) return nd_tensor_cuda_differentiable(array);
    int t = PyArray_TYPE((PyArrayObject *)array);
    return PyTypeNum_ISFLOAT(t) || PyTypeNum_ISCOMPLEX(t);
}

static PyObject *tensor_new_raw(PyObject *array)
{
    return nd_tensor_from_array_of(array, &NdTensor_Type);
}

PyObject *nd_tensor_from_array_of(PyObject *array, PyTypeObject *tp)
{
    NdTensor *t = PyObject_GC_New(NdTensor, tp);
    if (!t) return NULL;
    /* every field past the object header starts zero / NULL */
    memset((char *)t + sizeof(PyObject), 0, sizeof(NdTensor) - sizeof(PyObject));
    t->array = Py_NewRef(array);
    t->node_out = -1;
    t->device = ND_DEV_CPU;
    PyObject_GC_Track(t);
    return (PyObject *)t;
}

PyObject *nd_tensor_from_array(PyObject *array)
{
    if (!PyArray_Check(array)) {
        PyErr_Format(PyExc_TypeError, "numdyn.Tensor: expected an ndarray, got %.100s",
                     Py_TYPE(array)->tp_name);
        return NULL;
    }
    return tensor_new_raw(array);
}

PyObject *nd_tensor_array(PyObject *tensor) { return ND_TENSOR(tensor)->array; }

/* a Tensor -> its ndarray; exact tuples, lists and dicts are walked */
static PyObject *unwrap_leaf(PyObject *obj, int depth, void *any_grad)
{
    if (nd_tensor_check(obj)) {
        if (ND_TENSOR(obj)->device == ND_DEV_CUDA) {   /* NumPy on the host cannot read it */
            PyErr_SetString(PyExc_RuntimeError, "numdyn: expected all Tensors on the same device, "
                            "found a CUDA Tensor among CPU operands (move it with .cpu(), or the "
                            "others with .cuda())");
            return NULL;
        }
        if (any_grad && ND_TENSOR(obj)->requires_grad) *(int *)any_grad = 1;
        return Py_NewRef(ND_TENSOR(obj)->array);
    }
    if (PyTuple_CheckExact(obj) || PyList_CheckExact(obj) || PyDict_CheckExact(obj))
        return ND_NOT_LEAF;
    return Py_NewRef(obj);
}

PyObject *nd_tensor_unwrap(PyObject *obj, int *any_grad)
{
    return nd_map_leaves(obj, unwrap_leaf, any_grad, 16, 0);
}

PyObject *nd_tensor_wrap_result(PyObject *r)
{
    if (!r) return NULL;
    if (PyArray_CheckExact(r)) {
        PyObject *t = tensor_new_raw(r);
        Py_DECREF(r);
        return t;
    }
    if (PyArray_IsScalar(r, Generic)) {  /* NumPy scalar -> 0-d Tensor */
        PyObject *a = PyArray_FromScalar(r, NULL);
        Py_DECREF(r);
        if (!a) return NULL;
        PyObject *t = tensor_new_raw(a);
        Py_DECREF(a);
        return t;
    }
    if (PyTuple_CheckExact(r) || PyList_CheckExact(r)) {
        int tup = PyTuple_CheckExact(r);
        Py_ssize_t n = PySequence_Fast_GET_SIZE(r);
        PyObject *out = tup ? PyTuple_New(n) : PyList_New(n);
        if (!out) { Py_DECREF(r); return NULL; }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *v = nd_tensor_wrap_result(Py_NewRef(PySequence_Fast_GET_ITEM(r, i)));
            if (!v) { Py_DECREF(out); Py_DECREF(r); return NULL; }
            if (tup) PyTuple_SET_ITEM(out, i, v);
            else PyList_SET_ITEM(out, i, v);
        }
        Py_DECREF(r);
        return out;
    }
    if (PyTuple_Check(r)) {
        /* a named tuple (linalg's EighResult, SVDResult, SlogdetResult...):
         * the same type of Tensors, else the ndarrays inside would leave the
         * tape and their gradients be lost */
        PyObject *items = PySequence_Tuple(r);
        PyObject *w = items ? nd_tensor_wrap_result(items) : NULL;
        PyObject *make = w ? PyObject_GetAttrString((PyObject *)Py_TYPE(r), "_make") : NULL;
        if (w && !make) PyErr_Clear();
        PyObject *out = make ? PyObject_CallOneArg(make, w) : Py_XNewRef(w);
        Py_XDECREF(make);
        Py_XDECREF(w);
        Py_DECREF(r);
        return out;
    }
    return r;
}

/* 1 when t takes part in differentiation: writing into it would change a
 * value the tape recorded */
static int on_tape(PyObject *o)
{
    return nd_tensor_check(o) && (ND_TENSOR(o)->requires_grad || ND_TENSOR(o)->node);
}

/* a write into Tensor o of value v is recorded on the tape: one of them
 * takes part in differentiation, or the base whose memory o views does */
static int write_recorded(PyObject *o, PyObject *v)
{
    return nd_tape_grad_enabled() &&
           (on_tape(o) || on_tape(v) || (ND_TENSOR(o)->view_base && on_tape(ND_TENSOR(o)->view_base)));
}

static int refuse_inplace(const char *what)
{
    PyErr_Format(PyExc_RuntimeError,
                 "numdyn: %s writes in place into a Tensor that requires grad (or was computed "
                 "from one); use .detach() or compute a new Tensor", what);
    return -1;
}

/* ------------------------------------------------ in-place writes
 * torch's rules, by version counters: every in-place write through the
 * Tensor API moves the Tensor's version on. A write that takes part in
 * differentiation (into a Tensor computed from ones that require grad, or
 * of a value that requires grad) is recorded on the tape as its
 * functional form (t += v as t = t_old + v, t[k] = v as a copy with
 * t_old's item k set): t then stands for the new value, and nodes that
 * read the old one still compute from it (nd_tensor_at_version). A leaf
 * that requires grad is never written (its value is the point of the
 * gradient), nor a Tensor whose memory other arrays share (a view, the
 * array .numpy() handed out): the write would reach values the tape
 * cannot see. A Tensor outside differentiation that a node read (a
 * constant of the tape) is kept as it was before the write. */

enum { ND_T_HISTORY = 8 };

/* a Tensor standing for x's current value: its node when it has one (the
 * program recomputes it; the array is a placeholder), else a copy */
static PyObject *old_value(NdTensor *x)
{
    PyObject *arr;
    if (x->device == ND_DEV_CUDA) {   /* a device copy (tensor_cuda.c; never a node's) */
        PyObject *o = nd_tensor_cuda_copy((PyObject *)x);
        if (o) ND_TENSOR(o)->requires_grad = x->requires_grad;
        return o;
    }
    if (x->node) {
        PyArrayObject *a = (PyArrayObject *)x->array;
        PyArray_Descr *d = PyArray_DESCR(a);
        Py_INCREF(d);
        PyObject *z = PyArray_Zeros(0, NULL, d, 0);
        if (!z) return NULL;
        npy_intp st[NPY_MAXDIMS] = {0};
        Py_INCREF(d);
        arr = PyArray_NewFromDescr(&PyArray_Type, d, PyArray_NDIM(a), PyArray_DIMS(a), st,
                                   PyArray_DATA((PyArrayObject *)z), 0, NULL);
        if (!arr || PyArray_SetBaseObject((PyArrayObject *)arr, z) < 0) {
            Py_XDECREF(arr);
            if (arr) return NULL;
            Py_DECREF(z);
            return NULL;
        }
    } else {
        arr = PyArray_NewCopy((PyArrayObject *)x->array, NPY_KEEPORDER);
        if (!arr) return NULL;
    }
    PyObject *o = tensor_new_raw(arr);
    Py_DECREF(arr);
    if (!o) return NULL;
    NdTensor *t = ND_TENSOR(o);
    t->node = Py_XNewRef(x->node);
    t->node_out = x->node_out;
    t->requires_grad = x->requires_grad;
    t->stale = x->node != NULL;
    return o;
}

long long nd_tensor_version(PyObject *o)
{
    NdTensor *x = ND_TENSOR(o);
    return x->view_base ? ND_TENSOR(x->view_base)->version : x->version;
}

/* x's value at `version` kept in its history (the Tensor old stands for
 * it); only the last ND_T_HISTORY versions: memory stays bounded when a
 * buffer is rewritten every step, older tapes raise. 0 / -1 */
static int keep_old(NdTensor *x, long long version, PyObject *old)
{
    if (!x->history && !(x->history = PyDict_New())) return -1;
    PyObject *k = PyLong_FromLongLong(version);
    int rc = k ? PyDict_SetItem(x->history, k, old) : -1;
    Py_XDECREF(k);
    PyObject *gone = rc == 0 ? PyLong_FromLongLong(version - ND_T_HISTORY) : NULL;
    if (gone && PyDict_DelItem(x->history, gone) < 0) PyErr_Clear();
    Py_XDECREF(gone);
    return rc;
}

int nd_tensor_before_write(PyObject *o)
{
    NdTensor *x = ND_TENSOR(o);
    /* a leaf that requires grad keeps no old value (an SGD step under
     * no_grad() writes it every step): a tape that read it raises */
    if (x->taped && !(x->requires_grad && !x->node)) {
        PyObject *old = old_value(x);
        int rc = old ? keep_old(x, nd_tensor_version(o), old) : -1;
        Py_XDECREF(old);
        if (rc < 0) return -1;
    }
    x->taped = 0;
    /* a write through a view writes its base's memory: the version
     * counter is the base's (torch's shared counter), so tapes that read
     * the base, or any other view of it, see the write */
    if (x->view_base) return nd_tensor_before_write(x->view_base);
    x->version++;
    return 0;
}

PyObject *nd_tensor_at_version(PyObject *o, long long version)
{
    NdTensor *x = ND_TENSOR(o);
    long long now = nd_tensor_version(o);
    if (version == now) return o;
    PyObject *k = PyLong_FromLongLong(version);
    PyObject *old = k && x->history ? PyDict_GetItemWithError(x->history, k) : NULL;
    Py_XDECREF(k);
    if (old || PyErr_Occurred()) return old;
    /* a view read at `version` whose base was written through another
     * Tensor since: its node still computes the value read then */
    if (x->view_base && x->node && version >= x->view_version) {
        PyObject *v = old_value(x);
        int rc = v ? keep_old(x, version, v) : -1;
        Py_XDECREF(v);
        return rc < 0 ? NULL : nd_tensor_at_version(o, version);
    }
    /* torch's words, so that code matching torch's error matches it */
    PyErr_Format(PyExc_RuntimeError,
                 "numdyn: one of the variables needed for gradient computation has been modified "
                 "by an inplace operation: a Tensor is at version %lld; expected version %lld "
                 "instead (it was modified by an in-place operation after the tape read it)",
                 now, version);
    return NULL;
}

/* ------------------------------------------------------------ views
 * A Tensor made by indexing, a method, an attribute or a NumPy function of
 * Tensor s whose array views s's memory is a view of s's base (s itself,
 * or s's own base). A differentiable write into a view is torch's
 * CopySlices: the view takes the write's functional form, and its base
 * the view's new value scattered into the base's old one, so gradients
 * flow through the base's history; other views of the base see the write
 * in memory, and their nodes are refreshed from the base when next read
 * (nd_tensor_refresh_view). Positions are flat C-order indices into the
 * base (view_index): any view NumPy can make (slices, transposes,
 * reshapes, diagonals) maps that way, and the tape's replay of it is a
 * gather (_view_take) and a scatter (_view_scatter), both differentiable. */

/* the array that owns the memory a is a view of (a itself when it owns) */
static PyObject *memory_owner(PyObject *a)
{
    while (PyArray_Check(a)) {
        PyObject *b = PyArray_BASE((PyArrayObject *)a);
        if (!b || !PyArray_Check(b)) break;
        a = b;
    }
    return a;
}

static void note_view_leaf(PyObject *r, PyObject *src)
{
    if (!nd_tensor_check(r) || r == src || ND_TENSOR(r)->view_base ||
        ND_TENSOR(r)->device != ND_DEV_CPU || !PyArray_Check(ND_TENSOR(r)->array))
        return;
    PyObject *ra = ND_TENSOR(r)->array;
    PyObject *b = PyArray_BASE((PyArrayObject *)ra);
    if (!b || !PyArray_Check(b) || memory_owner(ra) != memory_owner(ND_TENSOR(src)->array))
        return;
    PyObject *base = ND_TENSOR(src)->view_base ? ND_TENSOR(src)->view_base : src;
    NdTensor *x = ND_TENSOR(r);
    x->view_base = Py_NewRef(base);
    x->view_version = x->view_valid = ND_TENSOR(base)->version;
    x->view_nograd = !nd_tape_grad_enabled();
    ND_TENSOR(base)->nviews++;
}

/* r (a Tensor, or a tuple/list of them: np.split) came from an operation
 * on Tensor src: those that view src's memory become views of its base */
static void note_view(PyObject *r, PyObject *src)
{
    if (!r || !src || !nd_tensor_check(src) || ND_TENSOR(src)->device != ND_DEV_CPU) return;
    if (PyTuple_Check(r) || PyList_Check(r)) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(r); i++)
            note_view_leaf(PySequence_Fast_GET_ITEM(r, i), src);
    } else {
        note_view_leaf(r, src);
    }
}

/* wrap_numpy's results (tensor_wrap.c): one that views the memory of a
 * Tensor argument (fn returned a[1:], a.T, a reshaped) is a view of that
 * argument's base, as an indexing result is -- an in-place write through
 * it is CopySlices on the base, where it was refused */
void nd_tensor_note_views(PyObject *r, PyObject *const *args, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; r && i < n; i++)
        if (nd_tensor_check(args[i])) note_view(r, args[i]);
}

/* the first Tensor among args (a tuple), or NULL */
static PyObject *first_tensor(PyObject *args)
{
    for (Py_ssize_t i = 0; args && PyTuple_Check(args) && i < PyTuple_GET_SIZE(args); i++)
        if (nd_tensor_check(PyTuple_GET_ITEM(args, i))) return PyTuple_GET_ITEM(args, i);
    return NULL;
}

static void drop_view_base(NdTensor *x)
{
    if (!x->view_base) return;
    ND_TENSOR(x->view_base)->nviews--;
    Py_CLEAR(x->view_base);
}

/* an intp array of n items starting at data + off items, with the shape
 * of a and a's strides in items of size `item` (a view of buf) */
static PyObject *index_view(PyObject *buf, npy_intp off, PyArrayObject *a, npy_intp item)
{
    int nd = PyArray_NDIM(a);
    npy_intp st[NPY_MAXDIMS];
    for (int d = 0; d < nd; d++) st[d] = PyArray_STRIDES(a)[d] / item * (npy_intp)sizeof(npy_intp);
    PyArray_Descr *dt = PyArray_DescrFromType(NPY_INTP);
    PyObject *v = PyArray_NewFromDescr(&PyArray_Type, dt, nd, PyArray_DIMS(a), st,
                                       (npy_intp *)PyArray_DATA((PyArrayObject *)buf) + off,
                                       NPY_ARRAY_WRITEABLE, NULL);
    if (v && PyArray_SetBaseObject((PyArrayObject *)v, Py_NewRef(buf)) < 0) Py_CLEAR(v);
    return v;
}

/* the flat C-order index in view x's base of each of x's elements
 * (borrowed; computed once: neither array's geometry ever changes) */
static PyObject *view_index(NdTensor *x)
{
    if (x->view_index) return x->view_index;
    PyArrayObject *b = (PyArrayObject *)ND_TENSOR(x->view_base)->array;
    PyArrayObject *a = (PyArrayObject *)x->array;
    npy_intp item = PyArray_ITEMSIZE(b), lo = 0, hi = 0, size = PyArray_SIZE(b);
    int ok = PyArray_ITEMSIZE(a) == item;
    for (int d = 0; ok && d < PyArray_NDIM(b); d++) {
        npy_intp e = (PyArray_DIMS(b)[d] - 1) * PyArray_STRIDES(b)[d];
        ok = PyArray_STRIDES(b)[d] % item == 0;
        if (e < 0) lo += e; else hi += e;
    }
    for (int d = 0; ok && d < PyArray_NDIM(a); d++) ok = PyArray_STRIDES(a)[d] % item == 0;
    npy_intp off = PyArray_BYTES(a) - PyArray_BYTES(b) - lo;
    if (!ok || off % item) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: an in-place write through a view that "
                        "reinterprets its base's memory (another item size, .view(dtype), "
                        ".real/.imag) is not differentiable; compute a new Tensor");
        return NULL;
    }
    npy_intp n = size ? (hi - lo) / item + 1 : 1;
    npy_intp one = n;
    PyObject *buf = PyArray_EMPTY(1, &one, NPY_INTP, 0), *all = NULL, *pos = NULL, *j = NULL;
    if (!buf) return NULL;
    for (npy_intp i = 0; i < n; i++) ((npy_intp *)PyArray_DATA((PyArrayObject *)buf))[i] = -1;
    /* the base's elements numbered in C order, laid out as its memory is */
    PyObject *grid = index_view(buf, -lo / item, b, item);
    PyObject *num = grid ? PyArray_Arange(0, (double)size, 1, NPY_INTP) : NULL;
    PyArray_Dims shp = {PyArray_DIMS(b), PyArray_NDIM(b)};
    all = num ? PyArray_Newshape((PyArrayObject *)num, &shp, NPY_CORDER) : NULL;
    if (all && PyArray_CopyInto((PyArrayObject *)grid, (PyArrayObject *)all) == 0) {
        npy_intp ext = 0, neg = 0;   /* x's memory must lie in the base's */
        for (int d = 0; d < PyArray_NDIM(a); d++) {
            npy_intp e = (PyArray_DIMS(a)[d] - 1) * PyArray_STRIDES(a)[d];
            if (PyArray_DIMS(a)[d] == 0) { ext = neg = 0; break; }
            if (e < 0) neg += e; else ext += e;
        }
        if (PyArray_SIZE(a) == 0 || (off + neg >= 0 && off + ext <= (n - 1) * item)) {
            pos = PyArray_SIZE(a) ? index_view(buf, off / item, a, item)
                                  : PyArray_ZEROS(PyArray_NDIM(a), PyArray_DIMS(a), NPY_INTP, 0);
            j = pos ? PyArray_NewCopy((PyArrayObject *)pos, NPY_CORDER) : NULL;
        }
        if (j && PyArray_SIZE((PyArrayObject *)j)) {   /* every element one of the base's */
            npy_intp *p = PyArray_DATA((PyArrayObject *)j);
            for (npy_intp i = 0; i < PyArray_SIZE((PyArrayObject *)j); i++)
                if (p[i] < 0) { Py_CLEAR(j); break; }
        }
        if (!j && !PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "numdyn: an in-place write through a view "
                            "that reaches memory outside its base's elements is not "
                            "differentiable; compute a new Tensor");
    }
    Py_XDECREF(pos);
    Py_XDECREF(all);
    Py_XDECREF(num);
    Py_XDECREF(grid);
    Py_DECREF(buf);
    return x->view_index = j;
}

/* the module functions below take exactly `want` positional arguments */
static int arity(Py_ssize_t n, Py_ssize_t want, const char *usage)
{
    if (n == want) return 0;
    PyErr_SetString(PyExc_TypeError, usage);
    return -1;
}

/* _view_take(base, index): the view's value, read from its base's */
static PyObject *view_take(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (arity(n, 2, "_view_take(base, index)") < 0) return NULL;
    PyObject *flat = PyObject_CallMethod(args[0], "reshape", "(i)", -1);
    PyObject *r = flat ? PyObject_GetItem(flat, args[1]) : NULL;
    Py_XDECREF(flat);
    return r;
}

/* _view_scatter(base, index, value): a copy of base with the view's
 * elements set to value -- an in-place write through a view, as its base
 * takes it (torch's CopySlices) */
static PyObject *view_scatter(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (arity(n, 3, "_view_scatter(base, index, value)") < 0) return NULL;
    PyObject *flat = PyObject_CallMethod(args[0], "reshape", "(i)", -1);
    PyObject *c = flat ? PyObject_CallMethod(flat, "copy", NULL) : NULL;
    PyObject *shape = c ? PyObject_GetAttrString(args[0], "shape") : NULL;
    PyObject *r = NULL;
    if (shape && PyObject_SetItem(c, args[1], args[2]) == 0)
        r = PyObject_CallMethod(c, "reshape", "(O)", shape);
    Py_XDECREF(shape);
    Py_XDECREF(c);
    Py_XDECREF(flat);
    return r;
}

/* the base a recorded write is being recorded into (borrowed), or NULL:
 * between its version step and its node, the views of that base are read
 * as they were (the write's own operands), not refreshed */
static PyObject *writing_base;

int nd_tensor_refresh_view(PyObject *o)
{
    NdTensor *x = ND_TENSOR(o);
    if (!x->view_base || !nd_tape_grad_enabled() || x->view_base == writing_base) return 0;
    NdTensor *b = ND_TENSOR(x->view_base);
    if (x->view_valid == b->version) return 0;
    if (!on_tape(x->view_base)) {   /* a constant's view: its memory is its value */
        x->view_version = x->view_valid = b->version;
        return 0;
    }
    if (x->taped && x->node) {
        /* tape nodes read the old node's value, at the versions since it
         * was made (the last ND_T_HISTORY of them) */
        PyObject *old = old_value(x);
        if (!old) return -1;
        long long k = x->view_version > b->version - ND_T_HISTORY ? x->view_version
                                                                  : b->version - ND_T_HISTORY;
        for (; k < b->version; k++)
            if (keep_old(x, k, old) < 0) { Py_DECREF(old); return -1; }
        Py_DECREF(old);
        x->taped = 0;
    }
    PyObject *j = view_index(x);
    PyObject *args = j ? PyTuple_Pack(2, x->view_base, j) : NULL;
    x->view_version = x->view_valid = b->version;
    int rc = args ? nd_tape_record(ND_OP_CALL, take_flat_fn, args, NULL, o) : -1;
    Py_XDECREF(args);
    return rc;
}

/* May `what` write in place into Tensor o as a recorded (differentiable)
 * write? 0 yes, -1 RuntimeError (torch's words where torch refuses too) */
static int inplace_allowed(PyObject *o, const char *what)
{
    NdTensor *x = ND_TENSOR(o);
    if (x->requires_grad && !x->node && !x->view_base) {
        PyErr_Format(PyExc_RuntimeError,
                     "numdyn: %s writes in place into a leaf Tensor that requires grad; use "
                     ".detach() or compute a new Tensor", what);
        return -1;
    }
    PyObject *arr = x->array;
    Py_ssize_t views = x->nviews;
    if (x->view_base) {
        NdTensor *b = ND_TENSOR(x->view_base);
        if (b->requires_grad && !b->node) {
            PyErr_Format(PyExc_RuntimeError,
                         "numdyn: a view of a leaf Variable that requires grad is being used in "
                         "an in-place operation (%s); use .detach() or compute a new Tensor",
                         what);
            return -1;
        }
        if (x->view_nograd) {
            PyErr_SetString(PyExc_RuntimeError,
                            "numdyn: A view was created in no_grad mode and is being modified "
                            "inplace with grad mode enabled. Given that this use case is "
                            "ambiguous and error-prone, it is forbidden. You can clarify your "
                            "code by moving both the view and the inplace either both inside "
                            "the no_grad block (if you don't want the inplace to be tracked) or "
                            "both outside (if you want the inplace to be tracked).");
            return -1;
        }
        if (Py_REFCNT(x->array) > 1) views = -1;   /* the view's own array handed out */
        arr = b->array;
        views = views < 0 ? -1 : b->nviews;
    }
    /* memory shared with arrays the tape cannot see: the base's array is
     * referenced by itself and by its views' arrays only */
    PyObject *base = PyArray_BASE((PyArrayObject *)arr);
    if (views < 0 || Py_REFCNT(arr) > 1 + views || (base && PyArray_Check(base))) {
        PyErr_Format(PyExc_RuntimeError,
                     "numdyn: %s writes in place into a Tensor that takes part in "
                     "differentiation and shares its memory with other arrays (a view, or the "
                     "array .numpy() returned): the tape could not see the write through them; "
                     "compute a new Tensor", what);
        return -1;
    }
    return 0;
}

/* Before a recorded write into o: the Tensor standing for its base's
 * value (o a view), else NULL without error. */
static PyObject *base_before_write(PyObject *o, int *err)
{
    NdTensor *x = ND_TENSOR(o);
    *err = 0;
    if (!x->view_base) return NULL;
    if (nd_tensor_refresh_view(o) < 0 || !view_index(x)) { *err = 1; return NULL; }
    PyObject *old = old_value(ND_TENSOR(x->view_base));
    if (!old) *err = 1;
    return old;
}

/* A recorded write into o begins (after nd_tensor_before_write): the
 * operands it reads are the values before it. Returns the previous
 * writing_base, for end_write. */
static PyObject *begin_write(PyObject *o)
{
    PyObject *prev = writing_base;
    writing_base = ND_TENSOR(o)->view_base ? ND_TENSOR(o)->view_base : o;
    return prev;
}

/* The recorded write into o ends: its node (o = the write's functional
 * form) is on the tape; a view's base takes o's new value --
 * base = _view_scatter(old base, index, o), torch's CopySlices -- and the
 * base's version steps once more, so that nodes read before and after
 * the write never share a version (a view refreshed later keeps its old
 * node for the versions before this step). 0 / -1 */
static int end_write(PyObject *o, PyObject *bold, PyObject *prev, int rc)
{
    NdTensor *x = ND_TENSOR(o);
    if (rc == 0 && bold) {
        PyObject *args = PyTuple_Pack(3, bold, x->view_index, o);
        rc = args ? nd_tape_record(ND_OP_CALL, scatter_flat_fn, args, NULL, x->view_base) : -1;
        Py_XDECREF(args);
    }
    writing_base = prev;
    NdTensor *b = x->view_base ? ND_TENSOR(x->view_base) : x;
    if (x->view_base) x->view_version = b->version;   /* o's node: read from here on */
    b->version++;
    b->skew++;
    if (x->view_base) x->view_valid = b->version;
    return rc;
}

/* out= of a ufunc or NumPy function: no Tensor of the tape may be written;
 * a constant of the tape is kept as it was */
static int check_out(PyObject *kwargs)
{
    if (!kwargs) return 0;
    PyObject *out = PyDict_GetItemWithError(kwargs, str_out);
    if (!out) return PyErr_Occurred() ? -1 : 0;
    if (on_tape(out)) return refuse_inplace("out=");
    if (nd_tensor_check(out) && nd_tensor_before_write(out) < 0) return -1;
    if (PyTuple_Check(out))
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(out); i++) {
            PyObject *t = PyTuple_GET_ITEM(out, i);
            if (on_tape(t)) return refuse_inplace("out=");
            if (nd_tensor_check(t) && nd_tensor_before_write(t) < 0) return -1;
        }
    return 0;
}

/* out= given (not None) while an operand requires grad: the tape cannot
 * record a write into an array (its replay would write a parameter) */
static int refuse_out_with_grad(PyObject *kwargs, int grad)
{
    if (!grad || !kwargs) return 0;
    PyObject *out = PyDict_GetItemWithError(kwargs, str_out);
    if (!out) return PyErr_Occurred() ? -1 : 0;
    if (out == Py_None) return 0;
    if (PyTuple_Check(out)) {
        Py_ssize_t i = 0;
        while (i < PyTuple_GET_SIZE(out) && PyTuple_GET_ITEM(out, i) == Py_None) i++;
        if (i == PyTuple_GET_SIZE(out)) return 0;
    }
    PyErr_SetString(PyExc_RuntimeError, "numdyn: out= with an operand that requires grad is "
                    "not differentiable; compute a new Tensor instead");
    return -1;
}

/* what an op with out= returns: the out objects themselves, as NumPy does */
static PyObject *result_with_out(PyObject *r, PyObject *kwargs)
{
    PyObject *out = kwargs ? PyDict_GetItemWithError(kwargs, str_out) : NULL;
    if (!out || out == Py_None) {
        if (PyErr_Occurred()) { Py_DECREF(r); return NULL; }
        return nd_tensor_wrap_result(r);
    }
    if (!PyTuple_Check(out)) {
        Py_DECREF(r);
        return Py_NewRef(out);
    }
    if (PyTuple_Check(r) && PyTuple_GET_SIZE(r) == PyTuple_GET_SIZE(out)) {
        Py_ssize_t n = PyTuple_GET_SIZE(r);
        PyObject *res = PyTuple_New(n);
        if (!res) { Py_DECREF(r); return NULL; }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *o = PyTuple_GET_ITEM(out, i);
            PyObject *v = o != Py_None ? Py_NewRef(o)
                        : nd_tensor_wrap_result(Py_NewRef(PyTuple_GET_ITEM(r, i)));
            if (!v) { Py_DECREF(res); Py_DECREF(r); return NULL; }
            PyTuple_SET_ITEM(res, i, v);
        }
        Py_DECREF(r);
        return res;
    }
    if (PyTuple_GET_SIZE(out) == 1 && PyTuple_GET_ITEM(out, 0) != Py_None) {
        Py_DECREF(r);
        return Py_NewRef(PyTuple_GET_ITEM(out, 0));
    }
    return nd_tensor_wrap_result(r);
}

/* call(*args, **kwargs) on the arrays behind the Tensors in them, the
 * result as Tensors (out= as given); args[0] left out when skip_receiver
 * (the object call is bound to). *grad |= whether an argument requires
 * grad (out= is refused then). New ref, or NULL. */
static PyObject *call_on_arrays(PyObject *call, PyObject *args, PyObject *kwargs,
                                int skip_receiver, int *grad)
{
    if (check_out(kwargs) < 0) return NULL;
    PyObject *a = nd_tensor_unwrap(args, grad), *k = NULL, *r = NULL;
    if (!a) return NULL;
    if (kwargs && !(k = nd_tensor_unwrap(kwargs, grad))) goto done;
    if (refuse_out_with_grad(kwargs, *grad) < 0) goto done;
    if (skip_receiver) {
        PyObject *rest = PyTuple_GetSlice(a, 1, PyTuple_GET_SIZE(a));
        Py_SETREF(a, rest);
        if (!a) goto done;
    }
    if ((r = PyObject_Call(call, a, k))) r = result_with_out(r, kwargs);
done:
    Py_XDECREF(a);
    Py_XDECREF(k);
    return r;
}

/* run func on the arrays behind args/kwargs, wrap, record. kind/func as
 * nd_tape_record; call: what actually runs (func itself for ND_OP_CALL) */
static PyObject *run_op(int kind, PyObject *func, PyObject *call, PyObject *args,
                        PyObject *kwargs)
{
    int grad = 0;
    PyObject *r = call_on_arrays(call, args, kwargs, kind == ND_OP_METHOD, &grad);
    note_view(r, first_tensor(args));
    if (r && grad && nd_tape_record(kind, func, args, kwargs, r) < 0) Py_CLEAR(r);
    return r;
}

/* ------------------------------------------------------- number protocol */

enum {
    ND_BIN_ADD, ND_BIN_SUB, ND_BIN_MUL, ND_BIN_TRUEDIV, ND_BIN_FLOORDIV, ND_BIN_MOD,
    ND_BIN_POW, ND_BIN_MATMUL, ND_BIN_AND, ND_BIN_OR, ND_BIN_XOR, ND_BIN_LSHIFT,
    ND_BIN_RSHIFT, ND_BIN_DIVMOD, ND_UN_NEG, ND_UN_POS, ND_UN_ABS, ND_UN_INVERT, ND_NUMBER_OPS
};
/* per operator: operator.<name> (what the tape records; divmod's is the
 * builtin) and, for a binary one, its number-protocol call and in-place
 * form (pow's are ternary: called apart) */
static const struct {
    const char *name;
    binaryfunc fn, ifn;
} ops[ND_NUMBER_OPS] = {
    [ND_BIN_ADD] = {"add", PyNumber_Add, PyNumber_InPlaceAdd},
    [ND_BIN_SUB] = {"sub", PyNumber_Subtract, PyNumber_InPlaceSubtract},
    [ND_BIN_MUL] = {"mul", PyNumber_Multiply, PyNumber_InPlaceMultiply},
    [ND_BIN_TRUEDIV] = {"truediv", PyNumber_TrueDivide, PyNumber_InPlaceTrueDivide},
    [ND_BIN_FLOORDIV] = {"floordiv", PyNumber_FloorDivide, PyNumber_InPlaceFloorDivide},
    [ND_BIN_MOD] = {"mod", PyNumber_Remainder, PyNumber_InPlaceRemainder},
    [ND_BIN_POW] = {"pow", NULL, NULL},
    [ND_BIN_MATMUL] = {"matmul", PyNumber_MatrixMultiply, PyNumber_InPlaceMatrixMultiply},
    [ND_BIN_AND] = {"and_", PyNumber_And, PyNumber_InPlaceAnd},
    [ND_BIN_OR] = {"or_", PyNumber_Or, PyNumber_InPlaceOr},
    [ND_BIN_XOR] = {"xor", PyNumber_Xor, PyNumber_InPlaceXor},
    [ND_BIN_LSHIFT] = {"lshift", PyNumber_Lshift, PyNumber_InPlaceLshift},
    [ND_BIN_RSHIFT] = {"rshift", PyNumber_Rshift, PyNumber_InPlaceRshift},
    [ND_BIN_DIVMOD] = {NULL, PyNumber_Divmod, NULL},
    [ND_UN_NEG] = {"neg"}, [ND_UN_POS] = {"pos"}, [ND_UN_ABS] = {"abs"},
    [ND_UN_INVERT] = {"invert"},
};

static PyObject *operand(PyObject *o, int *grad)
{
    if (nd_tensor_check(o)) {
        *grad |= ND_TENSOR(o)->requires_grad;
        return ND_TENSOR(o)->array;
    }
    return o;
}

/* the ufunc ndarray's operator calls (np.add for +, ...) when that is all
 * the operator does: operands that are arrays or Python/NumPy scalars (no
 * deferral to another type's reflected method can happen). Calling it
 * directly skips ndarray's operator slot (what makes t + t cost little
 * more than a + a). NULL: take the operator path. */
static PyObject *direct_ufunc[ND_NUMBER_OPS];

static int plain_operand(PyObject *o)
{
    return PyArray_CheckExact(o) || PyFloat_CheckExact(o) || PyLong_CheckExact(o) ||
           PyArray_IsScalar(o, Number);
}

/* an operator's result r (stolen) as a Tensor, recorded on the tape when an
 * operand requires grad; b is NULL for a unary operator */
static PyObject *operator_result(int op, PyObject *r, int grad, PyObject *a, PyObject *b)
{
    r = nd_tensor_wrap_result(r);
    if (r && grad) {
        PyObject *args = b ? PyTuple_Pack(2, a, b) : PyTuple_Pack(1, a);
        if (!args || nd_tape_record(ND_OP_CALL, op_funcs[op], args, NULL, r) < 0) Py_CLEAR(r);
        Py_XDECREF(args);
    }
    return r;
}

static PyObject *binop(int op, PyObject *a, PyObject *b)
{
    int grad = 0;
    PyObject *x = operand(a, &grad), *y = operand(b, &grad), *r;
    if (direct_ufunc[op] && plain_operand(x) && plain_operand(y)) {
        PyObject *xy[2] = {x, y};
        r = PyObject_Vectorcall(direct_ufunc[op], xy, 2, NULL);
        goto wrap;
    }
    r = op == ND_BIN_POW ? PyNumber_Power(x, y, Py_None) : ops[op].fn(x, y);
wrap:
    return operator_result(op, r, grad, a, b);
}

static PyObject *unop(int op, PyObject *a)
{
    int grad = 0;
    PyObject *x = operand(a, &grad), *r;
    switch (op) {
    case ND_UN_NEG: r = PyNumber_Negative(x); break;
    case ND_UN_POS: r = PyNumber_Positive(x); break;
    case ND_UN_ABS: r = PyNumber_Absolute(x); break;
    default: r = PyNumber_Invert(x); break;
    }
    return operator_result(op, r, grad, a, NULL);
}

/* a op= b: in place on self's array, which NumPy returns; self is returned */
static PyObject *inplace(int op, PyObject *a, PyObject *b)
{
    if (!nd_tensor_check(a)) Py_RETURN_NOTIMPLEMENTED;
    int record = write_recorded(a, b), err = 0;
    PyObject *old = NULL, *bold = NULL;
    if (record) {
        if (inplace_allowed(a, "an in-place operator") < 0) return NULL;
        bold = base_before_write(a, &err);
        if (err || !(old = old_value(ND_TENSOR(a)))) { Py_XDECREF(bold); return NULL; }
    }
    if (nd_tensor_before_write(a) < 0) { Py_XDECREF(old); Py_XDECREF(bold); return NULL; }
    PyObject *x = ND_TENSOR(a)->array;
    int grad = 0;
    PyObject *y = operand(b, &grad), *r;
    r = op == ND_BIN_POW ? PyNumber_InPlacePower(x, y, Py_None) : ops[op].ifn(x, y);
    if (!r) { Py_XDECREF(old); Py_XDECREF(bold); return NULL; }
    if (r == x) {
        Py_DECREF(r);
        /* on the tape: a = old op b (and a view's base takes a's value) */
        if (old) {
            /* t op= t reads the old value twice */
            PyObject *args = PyTuple_Pack(2, old, b == a ? old : b);
            PyObject *prev = begin_write(a);
            int rc = args ? nd_tape_record(ND_OP_CALL, op_funcs[op], args, NULL, a) : -1;
            rc = end_write(a, bold, prev, rc);
            Py_XDECREF(args);
            Py_DECREF(old);
            Py_XDECREF(bold);
            if (rc < 0) return NULL;
        }
        return Py_NewRef(a);
    }
    Py_XDECREF(old);
    Py_XDECREF(bold);
    return nd_tensor_wrap_result(r);
}

#define BIN(name, op) \
    static PyObject *t_##name(PyObject *a, PyObject *b) { return binop(op, a, b); } \
    static PyObject *t_i##name(PyObject *a, PyObject *b) { return inplace(op, a, b); }
BIN(add, ND_BIN_ADD)
BIN(sub, ND_BIN_SUB)
BIN(mul, ND_BIN_MUL)
BIN(truediv, ND_BIN_TRUEDIV)
BIN(floordiv, ND_BIN_FLOORDIV)
BIN(mod, ND_BIN_MOD)
BIN(matmul, ND_BIN_MATMUL)
BIN(and, ND_BIN_AND)
BIN(or, ND_BIN_OR)
BIN(xor, ND_BIN_XOR)
BIN(lshift, ND_BIN_LSHIFT)
BIN(rshift, ND_BIN_RSHIFT)
#undef BIN
static PyObject *t_divmod(PyObject *a, PyObject *b) { return binop(ND_BIN_DIVMOD, a, b); }

static PyObject *t_pow(PyObject *a, PyObject *b, PyObject *m)
{
    if (m != Py_None) {  /* NumPy's own message for pow(a, b, m) */
        int g = 0;
        return PyNumber_Power(operand(a, &g), operand(b, &g), m);
    }
    return binop(ND_BIN_POW, a, b);
}

static PyObject *t_ipow(PyObject *a, PyObject *b, PyObject *m)
{
    if (m != Py_None) Py_RETURN_NOTIMPLEMENTED;
    return inplace(ND_BIN_POW, a, b);
}

static PyObject *t_neg(PyObject *a) { return unop(ND_UN_NEG, a); }
static PyObject *t_pos(PyObject *a) { return unop(ND_UN_POS, a); }
static PyObject *t_abs(PyObject *a) { return unop(ND_UN_ABS, a); }
static PyObject *t_invert(PyObject *a) { return unop(ND_UN_INVERT, a); }
static int t_bool(PyObject *a) { return PyObject_IsTrue(ND_TENSOR(a)->array); }
static PyObject *t_int(PyObject *a) { return PyNumber_Long(ND_TENSOR(a)->array); }
static PyObject *t_float(PyObject *a) { return PyNumber_Float(ND_TENSOR(a)->array); }
static PyObject *t_index(PyObject *a) { return PyNumber_Index(ND_TENSOR(a)->array); }

static PyNumberMethods tensor_as_number = ND_NUMBER_METHODS(t_);

static PyObject *t_richcompare(PyObject *a, PyObject *b, int op)
{
    int g = 0;
    return nd_tensor_wrap_result(PyObject_RichCompare(operand(a, &g), operand(b, &g), op));
}

/* ------------------------------------------------------------- indexing */

static PyObject *getitem_func;  /* operator.getitem */

static PyObject *t_getitem(PyObject *self, PyObject *key)
{
    int grad = ND_TENSOR(self)->requires_grad;
    PyObject *k = nd_tensor_unwrap(key, NULL);
    if (!k) return NULL;
    PyObject *r = nd_tensor_wrap_result(PyObject_GetItem(ND_TENSOR(self)->array, k));
    Py_DECREF(k);
    note_view(r, self);
    if (r && grad) {
        PyObject *args = PyTuple_Pack(2, self, key);
        if (!args || nd_tape_record(ND_OP_CALL, getitem_func, args, NULL, r) < 0) Py_CLEAR(r);
        Py_XDECREF(args);
    }
    return r;
}

/* _setitem_copy(a, key, v): a copy of a with a[key] = v -- item
 * assignment's functional form, as the tape replays it */
static PyObject *setitem_copy(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
    if (arity(n, 3, "_setitem_copy(a, key, value)") < 0) return NULL;
    PyObject *c = PyObject_CallMethod(args[0], "copy", NULL);
    if (c && PyObject_SetItem(c, args[1], args[2]) < 0) Py_CLEAR(c);
    return c;
}

static int t_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    int record = value && write_recorded(self, value), err = 0;
    if (!value && on_tape(self)) return refuse_inplace("item deletion");
    PyObject *old = NULL, *bold = NULL;
    if (record) {
        if (inplace_allowed(self, "item assignment") < 0) return -1;
        bold = base_before_write(self, &err);
        if (err || !(old = old_value(ND_TENSOR(self)))) { Py_XDECREF(bold); return -1; }
    }
    if (nd_tensor_before_write(self) < 0) { Py_XDECREF(old); Py_XDECREF(bold); return -1; }
    PyObject *k = nd_tensor_unwrap(key, NULL);
    if (!k) { Py_XDECREF(old); Py_XDECREF(bold); return -1; }
    int rc;
    if (!value) {
        rc = PyObject_DelItem(ND_TENSOR(self)->array, k);
    } else {
        PyObject *v = nd_tensor_unwrap(value, NULL);
        rc = v ? PyObject_SetItem(ND_TENSOR(self)->array, k, v) : -1;
        Py_XDECREF(v);
    }
    Py_DECREF(k);
    if (rc == 0 && old) {  /* on the tape: self = _setitem_copy(old, key, value) */
        PyObject *args = PyTuple_Pack(3, old, key, value == self ? old : value);
        PyObject *prev = begin_write(self);
        rc = args ? nd_tape_record(ND_OP_CALL, setitem_copy_fn, args, NULL, self) : -1;
        rc = end_write(self, bold, prev, rc);
        Py_XDECREF(args);
    }
    Py_XDECREF(old);
    Py_XDECREF(bold);
    return rc;
}

static Py_ssize_t t_len(PyObject *self) { return PyObject_Length(ND_TENSOR(self)->array); }

static PyMappingMethods tensor_as_mapping = {t_len, t_getitem, t_setitem};

static int t_contains(PyObject *self, PyObject *v)
{
    PyObject *u = nd_tensor_unwrap(v, NULL);
    if (!u) return -1;
    int r = PySequence_Contains(ND_TENSOR(self)->array, u);
    Py_DECREF(u);
    return r;
}

static PySequenceMethods tensor_as_sequence = {.sq_contains = t_contains};

/* rows as Tensors (t[i], recorded like any indexing) */
static PyObject *t_iter(PyObject *self)
{
    PyObject *it = PyObject_GetIter(ND_TENSOR(self)->array);  /* NumPy's 0-d error */
    if (!it) return NULL;
    Py_DECREF(it);
    Py_ssize_t n = PyObject_Length(ND_TENSOR(self)->array);
    if (n < 0) return NULL;
    PyObject *rows = PyList_New(n);
    if (!rows) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyLong_FromSsize_t(i);
        PyObject *r = k ? t_getitem(self, k) : NULL;
        Py_XDECREF(k);
        if (!r) { Py_DECREF(rows); return NULL; }
        PyList_SET_ITEM(rows, i, r);
    }
    it = PyObject_GetIter(rows);
    Py_DECREF(rows);
    return it;
}

/* ------------------------------------------------------ bound methods */

/* t.<ndarray method>: a callable that runs the method on the array */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int mutating;       /* fill, sort...: refused on a Tensor of the tape */
    PyObject *self;     /* the Tensor */
    PyObject *name;     /* str */
    PyObject *bound;    /* the ndarray's bound method */
} NdTensorMethod;

static PyTypeObject NdTensorMethod_Type;

static const char *const mutating_methods[] = {
    "fill", "sort", "partition", "put", "itemset", "resize", "setfield", "setflags",
    "byteswap", NULL,
};

static PyObject *tm_call(PyObject *o, PyObject *args, PyObject *kwargs)
{
    NdTensorMethod *m = (NdTensorMethod *)o;
    if (m->mutating && on_tape(m->self)) {
        refuse_inplace(PyUnicode_AsUTF8(m->name));
        return NULL;
    }
    if (m->mutating && nd_tensor_before_write(m->self) < 0) return NULL;
    int grad = ND_TENSOR(m->self)->requires_grad;
    PyObject *r = call_on_arrays(m->bound, args, kwargs, 0, &grad);
    note_view(r, m->self);
    if (r && grad) {   /* recorded as a method node whose receiver is self */
        PyObject *full = nd_tuple_prepend(m->self, args);
        if (!full || nd_tape_record(ND_OP_METHOD, m->name, full, kwargs, r) < 0) Py_CLEAR(r);
        Py_XDECREF(full);
    }
    return r;
}

/* plain operands (no Tensor, no container that could hold one) */
static int all_plain(PyObject *const *args, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = args[i];
        if (nd_tensor_check(a) || PyTuple_Check(a) || PyList_Check(a) || PyDict_Check(a))
            return 0;
    }
    return 1;
}

/* t.sum(), t.reshape(3, 4): no Tensor among the arguments and nothing to
 * record -- straight to the array's method */
static PyObject *tm_vectorcall(PyObject *o, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    NdTensorMethod *m = (NdTensorMethod *)o;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (!kwnames && !m->mutating && !ND_TENSOR(m->self)->requires_grad && all_plain(args, nargs)) {
        PyObject *r = nd_tensor_wrap_result(PyObject_Vectorcall(m->bound, args, nargs, NULL));
        note_view(r, m->self);
        return r;
    }
    PyObject *targs, *kw;
    if (nd_vectorcall_unpack(args, nargs, kwnames, 0, &targs, &kw) < 0) return NULL;
    PyObject *r = tm_call(o, targs, kw);
    Py_DECREF(targs);
    Py_XDECREF(kw);
    return r;
}

static void tm_dealloc(PyObject *o)
{
    NdTensorMethod *m = (NdTensorMethod *)o;
    Py_XDECREF(m->self);
    Py_XDECREF(m->name);
    Py_XDECREF(m->bound);
    PyObject_Free(o);
}

static PyObject *tm_repr(PyObject *o)
{
    NdTensorMethod *m = (NdTensorMethod *)o;
    return PyUnicode_FromFormat("<method %U of numdyn.Tensor>", m->name);
}

static PyTypeObject NdTensorMethod_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.TensorMethod",
    .tp_basicsize = sizeof(NdTensorMethod),
    .tp_dealloc = tm_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(NdTensorMethod, vectorcall),
    .tp_repr = tm_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
};

/* attributes Tensor does not define: the ndarray's (methods bound through
 * NdTensorMethod, ndarray-valued properties as Tensors: t.T, t.real) */
static PyObject *t_getattro(PyObject *self, PyObject *name)
{
    /* Tensor's own attributes first; a miss goes straight to the array
     * (not through a raised and caught AttributeError: t.sum() is hot) */
    if (!PyUnicode_Check(name) || _PyType_Lookup(Py_TYPE(self), name))
        return PyObject_GenericGetAttr(self, name);
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(name, &len);
    if (!s) return NULL;
    if (len >= 4 && s[0] == '_' && s[1] == '_' && s[len - 1] == '_' && s[len - 2] == '_')
        return PyObject_GenericGetAttr(self, name);  /* protocols stay Tensor's own */
    PyObject *v = PyObject_GetAttr(ND_TENSOR(self)->array, name);
    if (!v) {  /* NumPy's message names ndarray: say Tensor */
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
        PyErr_Clear();
        PyErr_Format(PyExc_AttributeError, "'numdyn.Tensor' object has no attribute '%U'", name);
        return NULL;
    }
    if (PyCFunction_Check(v) || Py_TYPE(v) == &PyMethod_Type ||
        !strcmp(Py_TYPE(v)->tp_name, "method-wrapper")) {
        NdTensorMethod *m = PyObject_New(NdTensorMethod, &NdTensorMethod_Type);
        if (!m) { Py_DECREF(v); return NULL; }
        m->vectorcall = tm_vectorcall;
        m->mutating = 0;
        for (int i = 0; mutating_methods[i]; i++)
            if (!strcmp(s, mutating_methods[i])) m->mutating = 1;
        m->self = Py_NewRef(self);
        m->name = Py_NewRef(name);
        m->bound = v;
        return (PyObject *)m;
    }
    if (PyArray_CheckExact(v)) {
        PyObject *t = nd_tensor_wrap_result(v);
        note_view(t, self);
        if (t && ND_TENSOR(self)->requires_grad) {
            PyObject *args = PyTuple_Pack(1, self);
            if (!args || nd_tape_record(ND_OP_ATTR, name, args, NULL, t) < 0) Py_CLEAR(t);
            Py_XDECREF(args);
        }
        return t;
    }
    return v;
}

/* ------------------------------------------------------------ methods */

static PyObject *t_numpy(PyObject *self, PyObject *unused)
{
    return Py_NewRef(ND_TENSOR(self)->array);
}

/* torch's retain_grad(): a non-leaf Tensor's .grad is filled by every
 * later backward() that reaches it (a leaf's always is) */
static PyObject *t_retain_grad(PyObject *self, PyObject *unused)
{
    NdTensor *t = ND_TENSOR(self);
    if (!t->requires_grad) {
        PyErr_SetString(PyExc_RuntimeError,
                        "can't retain_grad on Tensor that has requires_grad=False");
        return NULL;
    }
    if (t->node) t->retains = 1;
    Py_RETURN_NONE;
}

static PyObject *t_detach(PyObject *self, PyObject *unused)
{
    return tensor_new_raw(ND_TENSOR(self)->array);
}

static PyObject *t_item(PyObject *self, PyObject *args)
{
    PyObject *m = PyObject_GetAttrString(ND_TENSOR(self)->array, "item");
    if (!m) return NULL;
    PyObject *r = PyObject_Call(m, args, NULL);
    Py_DECREF(m);
    return r;
}

static PyObject *t_array(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *dtype = Py_None, *copy = Py_None;
    static char *kwlist[] = {"dtype", "copy", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$O:__array__", kwlist, &dtype, &copy))
        return NULL;
    if (dtype == Py_None && copy != Py_True) return Py_NewRef(ND_TENSOR(self)->array);
    PyObject *m = PyObject_GetAttrString(ND_TENSOR(self)->array, "__array__");
    if (!m) return NULL;
    PyObject *r = PyObject_Call(m, args, kwargs);
    Py_DECREF(m);
    return r;
}

/* np.exp(t): the common case -- __call__, no keywords, plain operands --
 * calls the ufunc on the arrays without building tuples */
static PyObject *t_array_ufunc_slow(PyObject *self, PyObject *args, PyObject *kwargs);

static PyObject *t_array_ufunc(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    if (nargs >= 3 && nargs <= 10 && !kwnames && PyUnicode_Check(args[1]) &&
        PyUnicode_CompareWithASCIIString(args[1], "__call__") == 0) {
        PyObject *stack[8];
        int grad = 0, ok = 1;
        Py_ssize_t n = nargs - 2;
        for (Py_ssize_t i = 0; i < n && ok; i++) {
            PyObject *a = args[i + 2];
            if (nd_tensor_check(a)) {
                grad |= ND_TENSOR(a)->requires_grad;
                stack[i] = ND_TENSOR(a)->array;
            } else {
                ok = !(PyTuple_Check(a) || PyList_Check(a) || PyDict_Check(a));
                stack[i] = a;
            }
        }
        if (ok) {
            PyObject *r = nd_tensor_wrap_result(PyObject_Vectorcall(args[0], stack, n, NULL));
            if (r && grad) {
                PyObject *inputs = PyTuple_New(n);
                for (Py_ssize_t i = 0; inputs && i < n; i++)
                    PyTuple_SET_ITEM(inputs, i, Py_NewRef(args[i + 2]));
                if (!inputs || nd_tape_record(ND_OP_CALL, args[0], inputs, NULL, r) < 0)
                    Py_CLEAR(r);
                Py_XDECREF(inputs);
            }
            return r;
        }
    }
    PyObject *targs, *kw;
    if (nd_vectorcall_unpack(args, nargs, kwnames, 0, &targs, &kw) < 0) return NULL;
    PyObject *r = t_array_ufunc_slow(self, targs, kw);
    Py_DECREF(targs);
    Py_XDECREF(kw);
    return r;
}

static PyObject *t_array_ufunc_slow(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *ufunc, *method, *inputs, *r = NULL;
    int call = nd_array_ufunc_args(args, &ufunc, &method, &inputs);
    if (call < 0) return NULL;
    if (call) {
        r = run_op(ND_OP_CALL, ufunc, ufunc, inputs, kwargs);
    } else {   /* ufunc.reduce(x, ...): a method node whose receiver is the ufunc */
        PyObject *bound = PyObject_GetAttr(ufunc, method);
        PyObject *full = bound ? nd_tuple_prepend(ufunc, inputs) : NULL;
        if (full) r = run_op(ND_OP_METHOD, method, bound, full, kwargs);
        Py_XDECREF(full);
        Py_XDECREF(bound);
    }
    Py_DECREF(inputs);
    return r;
}

static PyObject *t_array_function(PyObject *self, PyObject *args)
{
    PyObject *func, *types, *fargs, *fkwargs;
    if (!PyArg_ParseTuple(args, "OOOO:__array_function__", &func, &types, &fargs, &fkwargs))
        return NULL;
    if (!PyTuple_Check(fargs) || !PyDict_Check(fkwargs)) {
        PyErr_SetString(PyExc_TypeError, "__array_function__: args must be a tuple, kwargs a dict");
        return NULL;
    }
    return run_op(ND_OP_CALL, func, func, fargs, PyDict_GET_SIZE(fkwargs) ? fkwargs : NULL);
}

static PyObject *t_format(PyObject *self, PyObject *spec)
{
    return PyObject_Format(ND_TENSOR(self)->array, spec);
}

static PyObject *t_dlpack(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return nd_dlpack_export(ND_TENSOR(self)->array, args, kwargs);
}

static PyObject *t_dlpack_device(PyObject *self, PyObject *unused)
{
    return nd_dlpack_device(ND_TENSOR(self)->array);
}

static PyObject *t_backward(PyObject *self, PyObject *args, PyObject *kwargs)
{
    /* torch's signature, backward(gradient=None, retain_graph=None,
     * create_graph=False, inputs=None), `grad=` kept as an alias;
     * retain_graph as torch has it (tensor_tape.c, node_saves); create_graph
     * records the backward itself on the tape (second derivatives), inputs=
     * restricts the gradients to those Tensors (tensor_tape.c). */
    PyObject *gradient = NULL, *retain = Py_None, *create = Py_False, *inputs = Py_None, *grad = NULL;
    static char *kwlist[] = {"gradient", "retain_graph", "create_graph", "inputs", "grad", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOOO$O:backward", kwlist, &gradient, &retain,
                                     &create, &inputs, &grad))
        return NULL;
    if (gradient && grad) {
        PyErr_SetString(PyExc_TypeError, "backward() got both gradient= and its alias grad=");
        return NULL;
    }
    int cg = PyObject_IsTrue(create);
    if (cg < 0) return NULL;
    /* torch: retain_graph defaults to create_graph; without it a second
     * backward through nodes that saved values raises */
    int keep = retain == Py_None ? cg : PyObject_IsTrue(retain);
    if (keep < 0) return NULL;
    PyObject *wrt = NULL;
    if (inputs != Py_None) {
        /* torch: a Tensor or a sequence of them, not empty, each requiring grad */
        PyObject *seq = nd_tensor_check(inputs) ? PyTuple_Pack(1, inputs)
                                                : PySequence_Fast(inputs, "backward(inputs=...): "
                                                                  "a Tensor or a sequence of Tensors");
        if (!seq) return NULL;
        if (!PySequence_Fast_GET_SIZE(seq)) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_RuntimeError, "`inputs` argument to `backward()` cannot be empty.");
            return NULL;
        }
        wrt = PyList_New(0);
        for (Py_ssize_t i = 0; wrt && i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
            if (!nd_tensor_check(o)) {
                PyErr_Format(PyExc_TypeError, "backward(inputs=...): expected a numdyn.Tensor, "
                             "got %.100s", Py_TYPE(o)->tp_name);
                Py_CLEAR(wrt);
            } else if (!ND_TENSOR(o)->requires_grad) {
                PyErr_SetString(PyExc_RuntimeError, "numdyn: backward(inputs=...): one of the "
                                "inputs does not require grad");
                Py_CLEAR(wrt);
            } else {
                int dup = 0;  /* by identity: == of Tensors is elementwise */
                for (Py_ssize_t j = 0; j < PyList_GET_SIZE(wrt) && !dup; j++)
                    dup = PyList_GET_ITEM(wrt, j) == o;
                if (!dup && PyList_Append(wrt, o) < 0) Py_CLEAR(wrt);
                /* torch retains the gradient of a non-leaf input from now on */
                else if (ND_TENSOR(o)->node) ND_TENSOR(o)->retains = 1;
            }
        }
        Py_DECREF(seq);
        if (!wrt) return NULL;
    }
    PyObject *r = nd_tape_backward(self, gradient ? gradient : grad ? grad : Py_None, keep, wrt, cg);
    Py_XDECREF(wrt);
    return r;
}

static int set_requires_grad(NdTensor *t, PyObject *v)
{
    int on = PyObject_IsTrue(v);
    if (on < 0) return -1;
    if (!on && t->node) {
        PyErr_SetString(PyExc_RuntimeError,
                        "numdyn: requires_grad can only be changed on leaf Tensors; "
                        "use .detach() for a Tensor without gradient");
        return -1;
    }
    if (on && !nd_tensor_dtype_differentiable(t->array)) {
        PyErr_Format(PyExc_RuntimeError,
                     "numdyn: only Tensors of floating point and complex dtype can require "
                     "gradients (this one is %S)", PyArray_DESCR((PyArrayObject *)t->array));
        return -1;
    }
    t->requires_grad = (char)on;
    return 0;
}

static PyObject *t_requires_grad_(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *v = Py_True;
    static char *kwlist[] = {"requires_grad", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:requires_grad_", kwlist, &v)) return NULL;
    if (set_requires_grad(ND_TENSOR(self), v) < 0) return NULL;
    return Py_NewRef(self);
}

/* pickling and copy.deepcopy: Tensor(array) (a copy of the data), then
 * requires_grad; the tape and .grad are not part of the value */
static PyObject *t_reduce(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("(O(O)O)", (PyObject *)Py_TYPE(self), ND_TENSOR(self)->array,
                         ND_TENSOR(self)->requires_grad ? Py_True : Py_False);
}

static PyObject *t_setstate(PyObject *self, PyObject *state)
{
    if (set_requires_grad(ND_TENSOR(self), state) < 0) return NULL;
    Py_RETURN_NONE;
}

/* t.cuda(), t.cpu(), t.to(device/dtype): tensor_cuda.c and the engine */
static PyObject *t_cuda(PyObject *self, PyObject *unused) { return nd_tensor_cuda_of_cpu(self); }
static PyObject *t_cpu(PyObject *self, PyObject *unused) { return Py_NewRef(self); }
static PyObject *t_to(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *eng = PyImport_ImportModule("numdyn._cuda_tensor");
    PyObject *r = eng ? PyObject_CallMethod(eng, "to", "OOO", self, args, kwargs ? kwargs : Py_None)
                      : NULL;
    Py_XDECREF(eng);
    return r;
}

static PyMethodDef tensor_methods[] = {
    {"cuda", t_cuda, METH_NOARGS, "A CUDA Tensor holding a copy of the values (numdyn.cuda)."},
    {"cpu", t_cpu, METH_NOARGS, "This Tensor (it is on the CPU)."},
    {"to", (PyCFunction)(void (*)(void))t_to, METH_VARARGS | METH_KEYWORDS,
     "to(device=None, dtype=None, copy=False): on device ('cpu', 'cuda') and/or of dtype."},
    {"numpy", t_numpy, METH_NOARGS,
     "The ndarray this Tensor holds (no copy: they share memory)."},
    {"retain_grad", t_retain_grad, METH_NOARGS,
     "Fill this non-leaf Tensor's .grad in later backward() calls (torch's retain_grad)."},
    {"detach", t_detach, METH_NOARGS,
     "A Tensor sharing this one's memory, outside of differentiation."},
    {"item", t_item, METH_VARARGS, "The element as a Python scalar (ndarray.item)."},
    {"backward", (PyCFunction)(void (*)(void))t_backward, METH_VARARGS | METH_KEYWORDS,
     "backward(gradient=None, retain_graph=None, create_graph=False, inputs=None): accumulate "
     "d(self)/d(leaf) . gradient into every leaf's .grad (only into the Tensors of inputs=, "
     "non-leaf ones too); gradient may be omitted for a single-element Tensor (it is 1); "
     "create_graph records the gradients on the tape, so they can be differentiated again."},
    {"requires_grad_", (PyCFunction)(void (*)(void))t_requires_grad_,
     METH_VARARGS | METH_KEYWORDS, "Set requires_grad in place; returns self."},
    {"__array__", (PyCFunction)(void (*)(void))t_array, METH_VARARGS | METH_KEYWORDS, NULL},
    {"__array_ufunc__", (PyCFunction)(void (*)(void))t_array_ufunc,
     METH_FASTCALL | METH_KEYWORDS, NULL},
    {"__array_function__", t_array_function, METH_VARARGS, NULL},
    {"__format__", t_format, METH_O, NULL},
    {"__dlpack__", (PyCFunction)(void (*)(void))t_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a DLPack "
     "capsule sharing this Tensor's memory (versioned when max_version >= (1, 0))."},
    {"__dlpack_device__", t_dlpack_device, METH_NOARGS, "(device type, device id): (1, 0) on CPU."},
    {"__reduce__", t_reduce, METH_NOARGS, NULL},
    {"__setstate__", t_setstate, METH_O, NULL},
    {NULL},
};

/* ------------------------------------------------------------ getset */

static PyObject *g_shape(PyObject *s, void *c) { return PyObject_GetAttrString(ND_TENSOR(s)->array, "shape"); }
static PyObject *g_dtype(PyObject *s, void *c)
{
    return Py_NewRef((PyObject *)PyArray_DESCR((PyArrayObject *)ND_TENSOR(s)->array));
}
static PyObject *g_ndim(PyObject *s, void *c) { return PyLong_FromLong(PyArray_NDIM((PyArrayObject *)ND_TENSOR(s)->array)); }
static PyObject *g_size(PyObject *s, void *c) { return PyLong_FromSsize_t(PyArray_SIZE((PyArrayObject *)ND_TENSOR(s)->array)); }
static PyObject *g_device(PyObject *s, void *c) { return PyUnicode_FromString("cpu"); }
static PyObject *g_requires_grad(PyObject *s, void *c) { return PyBool_FromLong(ND_TENSOR(s)->requires_grad); }
static int s_requires_grad(PyObject *s, PyObject *v, void *c)
{
    if (!v) {
        PyErr_SetString(PyExc_AttributeError, "requires_grad cannot be deleted");
        return -1;
    }
    return set_requires_grad(ND_TENSOR(s), v);
}
static PyObject *g_grad(PyObject *s, void *c)
{
    return Py_NewRef(ND_TENSOR(s)->grad ? ND_TENSOR(s)->grad : Py_None);
}
static int s_grad(PyObject *s, PyObject *v, void *c)
{
    if (v && v != Py_None && !nd_tensor_check(v)) {
        PyErr_Format(PyExc_TypeError, "numdyn: .grad must be a Tensor or None, not %.100s",
                     Py_TYPE(v)->tp_name);
        return -1;
    }
    Py_XSETREF(ND_TENSOR(s)->grad, v && v != Py_None ? Py_NewRef(v) : NULL);
    return 0;
}
static PyObject *g_retains_grad(PyObject *s, void *c)
{
    return PyBool_FromLong(ND_TENSOR(s)->node && ND_TENSOR(s)->retains);
}
static PyObject *g_is_leaf(PyObject *s, void *c) { return PyBool_FromLong(ND_TENSOR(s)->node == NULL); }
static PyObject *g_grad_fn(PyObject *s, void *c)
{
    return Py_NewRef(ND_TENSOR(s)->node ? ND_TENSOR(s)->node : Py_None);
}

static PyObject *g_version(PyObject *o, void *c)
{
    NdTensor *x = ND_TENSOR(o);
    NdTensor *b = x->view_base ? ND_TENSOR(x->view_base) : x;
    return PyLong_FromLongLong(b->version - b->skew);
}

static PyGetSetDef tensor_getset[] = {
    {"shape", g_shape, NULL, "the ndarray's shape", NULL},
    {"dtype", g_dtype, NULL, "the ndarray's dtype (a NumPy dtype)", NULL},
    {"ndim", g_ndim, NULL, NULL, NULL},
    {"size", g_size, NULL, NULL, NULL},
    {"device", g_device, NULL, "where the memory is: 'cpu'", NULL},
    {"requires_grad", g_requires_grad, s_requires_grad,
     "whether backward() computes a gradient for this Tensor", NULL},
    {"grad", g_grad, s_grad, "the gradient backward() accumulated, or None", NULL},
    {"retains_grad", g_retains_grad, NULL, "True for a non-leaf after retain_grad() (or "
     "backward(inputs=[it]))", NULL},
    {"is_leaf", g_is_leaf, NULL, "True unless an operation on Tensors that require grad made it", NULL},
    {"grad_fn", g_grad_fn, NULL, "the tape node that made this Tensor, or None for a leaf", NULL},
    {"_version", g_version, NULL, "in-place writes into this Tensor so far (torch's _version)", NULL},
    {NULL},
};

/* ------------------------------------------------------------ the type */

static PyObject *t_repr(PyObject *self)
{
    PyObject *r = PyObject_Repr(ND_TENSOR(self)->array);
    if (!r) return NULL;
    /* array(...) -> tensor(...), continuation lines indented one more */
    PyObject *from = PyUnicode_FromString("\n      "), *to = PyUnicode_FromString("\n       ");
    PyObject *s = from && to ? PyUnicode_Replace(r, from, to, -1) : NULL;
    Py_XDECREF(from);
    Py_XDECREF(to);
    Py_DECREF(r);
    if (!s) return NULL;
    PyObject *body = PyUnicode_Substring(s, 5, PyUnicode_GET_LENGTH(s));  /* after "array" */
    Py_DECREF(s);
    if (!body) return NULL;
    PyObject *out;
    if (ND_TENSOR(self)->requires_grad || ND_TENSOR(self)->node) {
        PyObject *head = PyUnicode_Substring(body, 0, PyUnicode_GET_LENGTH(body) - 1);
        out = head ? PyUnicode_FromFormat("tensor%U, requires_grad=True)", head) : NULL;
        Py_XDECREF(head);
    } else {
        out = PyUnicode_FromFormat("tensor%U", body);
    }
    Py_DECREF(body);
    return out;
}

static int t_traverse(PyObject *o, visitproc visit, void *arg)
{
    Py_VISIT(ND_TENSOR(o)->array);
    Py_VISIT(ND_TENSOR(o)->grad);
    Py_VISIT(ND_TENSOR(o)->node);
    Py_VISIT(ND_TENSOR(o)->history);
    Py_VISIT(ND_TENSOR(o)->grad_to);
    Py_VISIT(ND_TENSOR(o)->view_base);
    return 0;
}

static int t_clear(PyObject *o)
{
    Py_CLEAR(ND_TENSOR(o)->grad);
    Py_CLEAR(ND_TENSOR(o)->node);
    Py_CLEAR(ND_TENSOR(o)->history);
    Py_CLEAR(ND_TENSOR(o)->grad_to);
    drop_view_base(ND_TENSOR(o));
    Py_CLEAR(ND_TENSOR(o)->view_index);
    return 0;
}

static void t_dealloc(PyObject *o)
{
    PyObject_GC_UnTrack(o);
    if (ND_TENSOR(o)->weakrefs) PyObject_ClearWeakRefs(o);
    t_clear(o);
    Py_CLEAR(ND_TENSOR(o)->array);
    Py_TYPE(o)->tp_free(o);
}

static PyObject *np_array;  /* numpy.array */

/* numdyn.tensor(x, dtype=None, requires_grad=False, device="cpu"): a copy
 * of x as np.array(x, dtype=dtype) makes it */
static PyObject *nd_tensor_make(PyObject *x, PyObject *dtype, PyObject *requires_grad,
                                PyObject *device)
{
    if (device != Py_None) {
        const char *d = PyUnicode_Check(device) ? PyUnicode_AsUTF8(device) : NULL;
        if (!d && PyErr_Occurred()) return NULL;
        if (d && !strncmp(d, "cuda", 4)) {   /* made on the host, then up (tensor_cuda.c) */
            PyObject *h = nd_tensor_make(x, dtype, Py_False, Py_None);
            PyObject *t = h ? nd_tensor_cuda_of_cpu(h) : NULL;
            Py_XDECREF(h);
            PyObject *where = t && strcmp(d, "cuda") ? PyObject_GetAttrString(t, "device") : NULL;
            int same = where ? PyObject_RichCompareBool(where, device, Py_EQ) : 1;
            Py_XDECREF(where);
            if (t && same != 1) {
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_ValueError, "numdyn.tensor: device %R is not the one numdyn "
                                 "runs on (numdyn.cuda.set_device)", device);
                Py_CLEAR(t);
            }
            if (t) {
                int on = PyObject_IsTrue(requires_grad);
                if (on < 0 || PyObject_SetAttrString(t, "requires_grad", on ? Py_True : Py_False) < 0)
                    Py_CLEAR(t);
            }
            return t;
        }
        if (!d || (strcmp(d, "cpu") && strcmp(d, "cpu:0"))) {
            PyErr_Format(PyExc_ValueError, "numdyn.tensor: device %R is not available (use "
                         "'cpu' or 'cuda')", device);
            return NULL;
        }
    }
    if (nd_tensor_is_cuda(x)) {   /* numdyn.tensor(cuda_t): a copy, on the host */
        PyObject *h = PyObject_CallMethod(x, "numpy", NULL);
        PyObject *t = h ? nd_tensor_make(h, dtype, requires_grad, Py_None) : NULL;
        Py_XDECREF(h);
        return t;
    }
    PyObject *src = nd_tensor_unwrap(x, NULL);
    if (!src) return NULL;
    PyObject *kw = dtype != Py_None ? Py_BuildValue("{sO}", "dtype", dtype) : NULL;
    PyObject *args = PyTuple_Pack(1, src);
    Py_DECREF(src);
    PyObject *arr = args && (dtype == Py_None || kw) ? PyObject_Call(np_array, args, kw) : NULL;
    Py_XDECREF(args);
    Py_XDECREF(kw);
    if (!arr) return NULL;
    if (!PyArray_CheckExact(arr)) {  /* a subclass (np.matrix): the plain array */
        Py_SETREF(arr, PyArray_View((PyArrayObject *)arr, NULL, &PyArray_Type));
        if (!arr) return NULL;
    }
    PyObject *t = tensor_new_raw(arr);
    Py_DECREF(arr);
    if (t && set_requires_grad(ND_TENSOR(t), requires_grad) < 0) Py_CLEAR(t);
    return t;
}

static PyObject *mod_tensor(PyObject *m, PyObject *args, PyObject *kwargs)
{
    PyObject *x, *dtype = Py_None, *rg = Py_False, *device = Py_None;
    static char *kwlist[] = {"data", "dtype", "requires_grad", "device", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$OO:tensor", kwlist, &x, &dtype, &rg,
                                     &device))
        return NULL;
    return nd_tensor_make(x, dtype, rg, device);
}

static PyObject *t_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *x, *dtype = Py_None, *rg = Py_False, *device = Py_None;
    static char *kwlist[] = {"data", "dtype", "requires_grad", "device", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$OO:Tensor", kwlist, &x, &dtype, &rg,
                                     &device))
        return NULL;
    return nd_tensor_make(x, dtype, rg, device);
}

PyTypeObject NdTensor_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn.Tensor",
    .tp_basicsize = sizeof(NdTensor),
    .tp_dealloc = t_dealloc,
    .tp_repr = t_repr,
    .tp_as_number = &tensor_as_number,
    .tp_as_sequence = &tensor_as_sequence,
    .tp_as_mapping = &tensor_as_mapping,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_getattro = t_getattro,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "numdyn.Tensor: an array with NumPy's semantics on a device (CPU now), "
              "DLPack both ways, and gradients (requires_grad, backward(), grad).",
    .tp_traverse = t_traverse,
    .tp_clear = t_clear,
    .tp_richcompare = t_richcompare,
    .tp_weaklistoffset = offsetof(NdTensor, weakrefs),
    .tp_iter = t_iter,
    .tp_methods = tensor_methods,
    .tp_getset = tensor_getset,
    .tp_new = t_new,
};

static PyMethodDef tensor_functions[] = {
    {"tensor", (PyCFunction)(void (*)(void))mod_tensor, METH_VARARGS | METH_KEYWORDS,
     "tensor(data, dtype=None, *, requires_grad=False, device='cpu'): a Tensor holding a "
     "copy of data (as np.array(data, dtype=dtype) makes it)."},
    {"_view_take", (PyCFunction)(void (*)(void))view_take, METH_FASTCALL,
     "_view_take(base, index): a view's value read from its base (flat C-order indices)"},
    {"_view_scatter", (PyCFunction)(void (*)(void))view_scatter, METH_FASTCALL,
     "_view_scatter(base, index, value): a copy of base with a view's elements set to value "
     "(an in-place write through a view, as its base takes it)"},
    {"_setitem_copy", (PyCFunction)(void (*)(void))setitem_copy, METH_FASTCALL,
     "_setitem_copy(a, key, value): a copy of a with a[key] = value (item assignment as the "
     "tape replays it)"},
    {NULL},
};

int nd_tensor_init(PyObject *m)
{
    if (PyType_Ready(&NdTensor_Type) < 0 || PyType_Ready(&NdTensorMethod_Type) < 0) return -1;
    if (PyModule_AddObjectRef(m, "Tensor", (PyObject *)&NdTensor_Type) < 0) return -1;
    if (PyModule_AddFunctions(m, tensor_functions) < 0) return -1;
    if (!(setitem_copy_fn = PyObject_GetAttrString(m, "_setitem_copy"))) return -1;
    if (!(take_flat_fn = PyObject_GetAttrString(m, "_view_take"))) return -1;
    if (!(scatter_flat_fn = PyObject_GetAttrString(m, "_view_scatter"))) return -1;
    if (!(str_out = PyUnicode_InternFromString("out"))) return -1;
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) return -1;
    np_array = PyObject_GetAttrString(np, "array");
    static const struct { int op; const char *name; } direct[] = {
        {ND_BIN_ADD, "add"}, {ND_BIN_SUB, "subtract"}, {ND_BIN_MUL, "multiply"},
        {ND_BIN_TRUEDIV, "true_divide"}, {-1, NULL},
    };
    for (int i = 0; np_array && direct[i].name; i++)
        if (!(direct_ufunc[direct[i].op] = PyObject_GetAttrString(np, direct[i].name))) {
            Py_DECREF(np);
            return -1;
        }
    Py_DECREF(np);
    if (!np_array) return -1;
    PyObject *op = PyImport_ImportModule("operator");
    if (!op) return -1;
    for (int i = 0; i < ND_NUMBER_OPS; i++) {
        if (!ops[i].name) continue;
        if (!(op_funcs[i] = PyObject_GetAttrString(op, ops[i].name))) { Py_DECREF(op); return -1; }
    }
    getitem_func = PyObject_GetAttrString(op, "getitem");
    Py_DECREF(op);
    if (!getitem_func) return -1;
    PyObject *bi = PyEval_GetBuiltins();  /* borrowed */
    if (!(op_funcs[ND_BIN_DIVMOD] = Py_XNewRef(PyDict_GetItemString(bi, "divmod")))) return -1;
    if (nd_dlpack_init(m) < 0 || nd_wrap_init(m) < 0 || nd_tape_init(m) < 0 ||
        nd_tensor_cuda_init(m) < 0)
        return -1;
    return 0;
}
