/* shim_nodes.c -- operands in, graph nodes out, proxies back.
 *
 * The only place the shim builds nd_node records; area files describe what
 * they want (a ufunc of these inputs, a reduction over these axes) and get
 * ids back. Node pointers move when the graph grows, so nothing here keeps
 * one across an nd_graph_add.
 */
#include "shim_internal.h"
#include <string.h>

void nd_shim_info(nd_trace *t, nd_id id, nd_info *out)
{
    nd_node *n = nd_graph_node(nd_trace_graph(t), id);
    out->dtype = n->dtype;
    out->ndim = n->ndim;
    memcpy(out->shape, n->shape, sizeof(npy_intp) * (size_t)n->ndim);
}

int nd_shim_node_dtype(nd_trace *t, nd_id id) { return nd_graph_node(nd_trace_graph(t), id)->dtype; }
int nd_shim_node_ndim(nd_trace *t, nd_id id) { return nd_graph_node(nd_trace_graph(t), id)->ndim; }
void nd_shim_node_shape(nd_trace *t, nd_id id, npy_intp *shape)
{
    nd_node *n = nd_graph_node(nd_trace_graph(t), id);
    memcpy(shape, n->shape, sizeof(npy_intp) * (size_t)n->ndim);
}

static nd_id add(nd_trace *t, nd_node *n)
{
    nd_graph *g = nd_trace_graph(t);
    if (!g) {
        Py_CLEAR(n->obj);
        Py_CLEAR(n->attrs);
        PyErr_SetString(PyExc_RuntimeError, "numdyn: no active trace");
        return ND_NONE;
    }
    nd_id id = nd_graph_add(g, n);
    if (id == ND_NONE) {
        Py_CLEAR(n->obj);
        Py_CLEAR(n->attrs);
    }
    return id;
}

/* ------------------------------------------------------------ operands */

static int array_typenum(PyArray_Descr *d)
{
    if (!PyArray_ISNBO(d->byteorder)) return -1;
    int t = nd_dtype_canonical(d);
    return nd_dtype_ok(t) ? t : -1;
}

static int operand_array(nd_trace *t, PyObject *arr, nd_operand *op)
{
    PyArrayObject *a = (PyArrayObject *)arr;
    int dt = array_typenum(PyArray_DESCR(a));
    if (dt < 0) {
        nd_shim_unsupported("arrays of dtype %s are not supported in-graph",
                            PyArray_DESCR(a)->typeobj->tp_name);
        return 1;
    }
    if (PyArray_NDIM(a) > ND_MAXDIMS) {
        nd_shim_unsupported("arrays of rank above %d are not supported in-graph", ND_MAXDIMS);
        return 1;
    }
    op->id = nd_trace_lift(t, arr);
    if (op->id == ND_NONE) return -1;
    op->dtype = dt;
    op->ndim = PyArray_NDIM(a);
    if (op->ndim) memcpy(op->shape, PyArray_DIMS(a), sizeof(npy_intp) * (size_t)op->ndim);
    return 0;
}

int nd_shim_operand(nd_trace *t, PyObject *obj, nd_operand *op)
{
    op->obj = obj;
    op->id = ND_NONE;
    op->weak = 0;
    op->is_scalar = 0;
    op->ndim = 0;
    if (nd_proxy_check(obj)) {
        op->id = nd_proxy_read(obj);
        if (op->id == ND_NONE) return -1;
        op->dtype = nd_proxy_dtype(obj);
        op->ndim = nd_proxy_ndim(obj);
        memcpy(op->shape, nd_proxy_shape(obj), sizeof(npy_intp) * (size_t)op->ndim);
        op->is_scalar = nd_proxy_is_scalar(obj);
        return 0;
    }
    /* NumPy scalars first: np.float64 subclasses float but is strong */
    if (PyArray_IsScalar(obj, Generic)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(obj);
        if (!d) return -1;
        int dt = array_typenum(d);
        Py_DECREF(d);
        if (dt < 0) {
            nd_shim_unsupported("NumPy scalars of type %s are not supported in-graph",
                                Py_TYPE(obj)->tp_name);
            return 1;
        }
        op->dtype = dt;
        op->is_scalar = 1;
        op->id = nd_shim_node_scalar(t, obj, dt, 0);
        return op->id == ND_NONE ? -1 : 0;
    }
    if (PyBool_Check(obj)) {
        op->dtype = NPY_BOOL;
        op->is_scalar = 1;
        op->id = nd_shim_node_scalar(t, obj, NPY_BOOL, 0);
        return op->id == ND_NONE ? -1 : 0;
    }
    if (PyLong_Check(obj) || PyFloat_Check(obj) || PyComplex_Check(obj)) {
        op->weak = 1;
        op->is_scalar = 1;
        op->dtype = PyLong_Check(obj) ? NPY_INT64 : PyFloat_Check(obj) ? NPY_FLOAT64 : NPY_COMPLEX128;
        return 0;
    }
    if (PyArray_CheckExact(obj)) return operand_array(t, obj, op);
    if (PyArray_Check(obj)) {
        nd_shim_unsupported("ndarray subclass %s is not supported in-graph", Py_TYPE(obj)->tp_name);
        return 1;
    }
    if (PyList_Check(obj) || PyTuple_Check(obj)) {
        /* a sequence may hold proxies: np.asarray would materialize them
         * silently through __array__; say so instead */
        PyObject *arr = PyArray_FROM_O(obj);
        if (!arr) return -1;
        int r = operand_array(t, arr, op);
        Py_DECREF(arr);
        return r;
    }
    nd_shim_unsupported("operand of type %s is not supported in-graph", Py_TYPE(obj)->tp_name);
    return 1;
}

nd_id nd_shim_operand_node(nd_trace *t, nd_operand *op, int dtype)
{
    if (!op->weak) return op->id;
    if (PyLong_Check(op->obj) && PyTypeNum_ISINTEGER(dtype)) {
        int fits = nd_shim_pyint_fits(op->obj, dtype);
        if (fits < 0) return ND_NONE;
        if (!fits) {
            nd_shim_raise_pyint_overflow(op->obj, dtype);
            return ND_NONE;
        }
    }
    return nd_shim_node_scalar(t, op->obj, dtype, 1);
}

nd_id nd_shim_operand_node_unsafe(nd_trace *t, nd_operand *op, int dtype, int *cast)
{
    *cast = op->weak && ((PyFloat_Check(op->obj) && PyTypeNum_ISINTEGER(dtype)) ||
                         (PyComplex_Check(op->obj) && !PyTypeNum_ISCOMPLEX(dtype)));
    return nd_shim_operand_node(t, op, *cast ? op->dtype : dtype);
}

/* ------------------------------------------------------------ nodes */

static int scalar_value(PyObject *v, int dtype, nd_scalar *s)
{
    memset(s, 0, sizeof(*s));
    if (dtype == NPY_BOOL) {
        int b = PyObject_IsTrue(v);
        if (b < 0) return -1;
        s->i = b;
        return 0;
    }
    if (PyTypeNum_ISCOMPLEX(dtype)) {
        Py_complex c = PyComplex_AsCComplex(v);
        if (c.real == -1.0 && PyErr_Occurred()) return -1;
        s->c.re = c.real;
        s->c.im = c.imag;
        return 0;
    }
    if (PyComplex_Check(v) || PyArray_IsScalar(v, ComplexFloating)) {
        /* a complex value into a real dtype keeps the real part (NumPy's
         * unsafe cast, which also warns ComplexWarning) */
        Py_complex c = PyComplex_AsCComplex(v);
        if (c.real == -1.0 && PyErr_Occurred()) return -1;
        if (PyTypeNum_ISFLOAT(dtype)) s->f = c.real;
        else if (PyTypeNum_ISUNSIGNED(dtype)) s->u = (uint64_t)(int64_t)c.real;
        else s->i = (int64_t)c.real;
        return 0;
    }
    if (PyTypeNum_ISFLOAT(dtype)) {
        s->f = PyFloat_AsDouble(v);
        return (s->f == -1.0 && PyErr_Occurred()) ? -1 : 0;
    }
    PyObject *i = PyNumber_Index(v);
    if (!i) {
        /* a float typed at an integer dtype (a NumPy float scalar's astype,
         * a Python float given to an integer loop with casting='unsafe'):
         * NumPy's cast of the 0-d float64, its value (1e300 into int32 is
         * INT_MIN, into int8 0, -1.5 into uint8 255) and its "invalid value
         * encountered in cast" warning -- not a truncation to int64 */
        PyErr_Clear();
        double f = PyFloat_AsDouble(v);
        if (f == -1.0 && PyErr_Occurred()) return -1;
        PyObject *a = PyArray_SimpleNew(0, NULL, NPY_DOUBLE);
        if (!a) return -1;
        *(double *)PyArray_DATA((PyArrayObject *)a) = f;
        PyObject *c = PyArray_CastToType((PyArrayObject *)a, PyArray_DescrFromType(dtype), 0);
        Py_DECREF(a);
        if (!c) return -1;
        PyObject *item = PyArray_GETITEM((PyArrayObject *)c, PyArray_DATA((PyArrayObject *)c));
        Py_DECREF(c);
        if (!item) return -1;
        i = PyNumber_Index(item);
        Py_DECREF(item);
        if (!i) return -1;
    }
    if (PyTypeNum_ISUNSIGNED(dtype)) {
        s->u = PyLong_AsUnsignedLongLongMask(i);
    } else {
        int overflow;
        s->i = PyLong_AsLongLongAndOverflow(i, &overflow);
        if (overflow) s->i = (int64_t)PyLong_AsUnsignedLongLongMask(i);
    }
    Py_DECREF(i);
    return PyErr_Occurred() ? -1 : 0;
}

nd_id nd_shim_node_scalar(nd_trace *t, PyObject *value, int dtype, int weak)
{
    nd_node n;
    nd_node_init(&n, ND_OP_SCALAR, dtype, 0, NULL);
    if (scalar_value(value, dtype, &n.scalar) < 0) return ND_NONE;
    if (weak) n.flags |= ND_F_WEAK;
    Py_INCREF(value);
    n.obj = value;
    return add(t, &n);
}

nd_id nd_shim_node_ufunc(nd_trace *t, int uf, const nd_id *in, const int *loop_in,
                         int out_dtype, int which)
{
    int nin = nd_ufunc_nin(uf);
    nd_info info[ND_MAXIN];
    int ndims[ND_MAXIN];
    const npy_intp *shapes[ND_MAXIN];
    for (int k = 0; k < nin; k++) {
        nd_shim_info(t, in[k], &info[k]);
        ndims[k] = info[k].ndim;
        shapes[k] = info[k].shape;
    }
    int nd;
    npy_intp shape[ND_MAXDIMS];
    if (nd_shim_broadcast(nin, ndims, shapes, &nd, shape) < 0) return ND_NONE;
    nd_node n;
    nd_node_init(&n, ND_OP_UFUNC, out_dtype, nd, shape);
    n.sub = uf;
    n.aux = (int16_t)which;
    n.nin = nin;
    for (int k = 0; k < nin; k++) { n.in[k] = in[k]; n.in_dtype[k] = loop_in[k]; }
    n.obj = nd_ufunc_object(uf);
    Py_INCREF(n.obj);
    return add(t, &n);
}

nd_id nd_shim_node_cast(nd_trace *t, nd_id in, int dtype)
{
    nd_info info;
    nd_shim_info(t, in, &info);
    if (info.dtype == dtype) return in;
    nd_node n;
    nd_node_init(&n, ND_OP_CAST, dtype, info.ndim, info.shape);
    n.nin = 1;
    n.in[0] = in;
    n.in_dtype[0] = info.dtype;
    return add(t, &n);
}

nd_id nd_shim_node_cast_np(nd_trace *t, nd_id in, int dtype)
{
    nd_info info;
    nd_shim_info(t, in, &info);
    /* complex -> bool is a test for nonzero, which NumPy does not warn of */
    if (PyTypeNum_ISCOMPLEX(info.dtype) && !PyTypeNum_ISCOMPLEX(dtype) && dtype != NPY_BOOL) {
        static PyObject *cls;
        if (!cls && !(cls = nd_shim_exc("numpy.exceptions.ComplexWarning"))) return ND_NONE;
        if (PyErr_WarnEx(cls, "Casting complex values to real discards the imaginary part", 1) < 0)
            return ND_NONE;
        /* NumPy warns at every such cast; a replayed call would not */
        nd_trace_not_replayable(t);
    }
    return nd_shim_node_cast(t, in, dtype);
}

static int can_cast(int from, int to, NPY_CASTING casting)
{
    PyArray_Descr *f = PyArray_DescrFromType(from), *d = PyArray_DescrFromType(to);
    int r = (f && d) ? PyArray_CanCastTypeTo(f, d, casting) : 0;
    Py_XDECREF(f);
    Py_XDECREF(d);
    return r;
}

int nd_shim_check_output_cast_i(int uf, int i, int from, int to, NPY_CASTING casting)
{
    if (from == to || can_cast(from, to, casting)) return 0;
    PyObject *cls = nd_shim_exc("numpy._core._exceptions._UFuncOutputCastingError");
    if (!cls) return -1;
    PyObject *fd = nd_shim_descr(from), *td = nd_shim_descr(to);
    PyObject *e = (fd && td) ? PyObject_CallFunction(cls, "OsOOi", nd_ufunc_object(uf),
                                                     nd_shim_casting_name(casting), fd, td,
                                                     nd_ufunc_nin(uf) + i) : NULL;
    Py_XDECREF(fd);
    Py_XDECREF(td);
    if (!e) return -1;
    PyErr_SetObject(cls, e);
    Py_DECREF(e);
    return -1;
}

int nd_shim_check_output_cast(const char *ufunc_name, int from, int to, NPY_CASTING casting)
{
    int uf = -1;
    for (int k = 0; k < ND_UF_COUNT; k++)
        if (strcmp(nd_ufunc_name(k), ufunc_name) == 0) { uf = k; break; }
    if (uf < 0) {
        if (from == to || can_cast(from, to, casting)) return 0;
        PyErr_Format(PyExc_TypeError,
                     "Cannot cast %s output from dtype('%s') to dtype('%s') with casting rule '%s'",
                     ufunc_name, nd_dtype_name(from), nd_dtype_name(to),
                     nd_shim_casting_name(casting));
        return -1;
    }
    return nd_shim_check_output_cast_i(uf, 0, from, to, casting);
}

nd_id nd_shim_node_reduce(nd_trace *t, int red, nd_id in, uint64_t axes, int keepdims,
                          int acc, int out_dtype, nd_id initial)
{
    nd_info info;
    nd_shim_info(t, in, &info);
    npy_intp shape[ND_MAXDIMS];
    int nd = 0;
    for (int d = 0; d < info.ndim; d++) {
        if (axes & (1ULL << d)) { if (keepdims) shape[nd++] = 1; }
        else shape[nd++] = info.shape[d];
    }
    nd_node n;
    nd_node_init(&n, ND_OP_REDUCE, out_dtype, nd, shape);
    n.sub = red;
    n.axes = axes;
    if (keepdims) n.flags |= ND_F_KEEPDIMS;
    n.nin = initial == ND_NONE ? 1 : 2;
    n.in[0] = in;
    n.in[1] = initial;
    n.in_dtype[0] = acc;
    if (initial != ND_NONE) n.in_dtype[1] = acc;
    if (red >= 0 && red < ND_UF_COUNT) {
        n.obj = nd_ufunc_object(red);
        Py_INCREF(n.obj);
    }
    return add(t, &n);
}

nd_id nd_shim_node_view(nd_trace *t, nd_id in, int ndim, const npy_intp *shape, npy_intp off,
                        const npy_intp *strides)
{
    nd_info info;
    nd_shim_info(t, in, &info);
    nd_node n;
    nd_node_init(&n, ND_OP_VIEW, info.dtype, ndim, shape);
    n.nin = 1;
    n.in[0] = in;
    n.voff = off;
    n.vndim = (uint8_t)ndim;
    for (int d = 0; d < ndim; d++) { n.vshape[d] = shape[d]; n.vstrides[d] = strides[d]; }
    return add(t, &n);
}

nd_id nd_shim_node_broadcast(nd_trace *t, nd_id in, int ndim, const npy_intp *shape)
{
    nd_info info;
    nd_shim_info(t, in, &info);
    if (info.ndim == ndim && memcmp(info.shape, shape, sizeof(npy_intp) * (size_t)ndim) == 0)
        return in;
    int nds[2] = {info.ndim, ndim};
    const npy_intp *shs[2] = {info.shape, shape};
    int rnd;
    npy_intp rsh[ND_MAXDIMS];
    if (info.ndim > ndim || nd_shim_broadcast(2, nds, shs, &rnd, rsh) < 0 || rnd != ndim ||
        memcmp(rsh, shape, sizeof(npy_intp) * (size_t)ndim) != 0) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            char a[256], b[256];
            size_t la = 0, lb = 0;
            la += (size_t)snprintf(a, sizeof a, "(");
            for (int d = 0; d < info.ndim && la < 200; d++)
                la += (size_t)snprintf(a + la, sizeof a - la, d ? ",%" NPY_INTP_FMT : "%" NPY_INTP_FMT, info.shape[d]);
            snprintf(a + la, sizeof a - la, info.ndim == 1 ? ",)" : ")");
            lb += (size_t)snprintf(b, sizeof b, "(");
            for (int d = 0; d < ndim && lb < 200; d++)
                lb += (size_t)snprintf(b + lb, sizeof b - lb, d ? ",%" NPY_INTP_FMT : "%" NPY_INTP_FMT, shape[d]);
            snprintf(b + lb, sizeof b - lb, ndim == 1 ? ",)" : ")");
            PyErr_Format(PyExc_ValueError,
                         "could not broadcast input array from shape %s into shape %s", a, b);
        }
        return ND_NONE;
    }
    npy_intp strides[ND_MAXDIMS];
    npy_intp s = 1;
    int off = ndim - info.ndim;
    for (int d = ndim - 1; d >= 0; d--) {
        if (d < off || info.shape[d - off] == 1) strides[d] = 0;
        else { strides[d] = s; }
        if (d >= off) s *= info.shape[d - off];
    }
    return nd_shim_node_view(t, in, ndim, shape, 0, strides);
}

nd_id nd_shim_node_where(nd_trace *t, nd_id cond, nd_id x, nd_id y, int dtype)
{
    if ((cond = nd_shim_node_cast(t, cond, NPY_BOOL)) == ND_NONE) return ND_NONE;
    if ((x = nd_shim_node_cast(t, x, dtype)) == ND_NONE) return ND_NONE;
    if ((y = nd_shim_node_cast(t, y, dtype)) == ND_NONE) return ND_NONE;
    nd_info info[3];
    nd_shim_info(t, cond, &info[0]);
    nd_shim_info(t, x, &info[1]);
    nd_shim_info(t, y, &info[2]);
    int ndims[3] = {info[0].ndim, info[1].ndim, info[2].ndim};
    const npy_intp *shapes[3] = {info[0].shape, info[1].shape, info[2].shape};
    int nd;
    npy_intp shape[ND_MAXDIMS];
    if (nd_shim_broadcast(3, ndims, shapes, &nd, shape) < 0) return ND_NONE;
    nd_node n;
    nd_node_init(&n, ND_OP_WHERE, dtype, nd, shape);
    n.nin = 3;
    n.in[0] = cond; n.in[1] = x; n.in[2] = y;
    n.in_dtype[0] = NPY_BOOL; n.in_dtype[1] = dtype; n.in_dtype[2] = dtype;
    return add(t, &n);
}

nd_id nd_shim_node_index(nd_trace *t, int ndim, const npy_intp *shape, int axis)
{
    nd_node n;
    nd_node_init(&n, ND_OP_INDEX, NPY_INT64, ndim, shape);
    n.aux = (int16_t)axis;
    return add(t, &n);
}

nd_id nd_shim_node_extern(nd_trace *t, PyObject *callable, PyObject *args_template,
                          PyObject *kwargs, int nin, const nd_id *ids, int which,
                          int dtype, int ndim, const npy_intp *shape)
{
    nd_node n;
    nd_node_init(&n, ND_OP_EXTERN, dtype, ndim, shape);
    n.aux = (int16_t)which;
    /* attrs must hash by value (graph cache): kwargs are kept as None or a
     * tuple of sorted (key, value) pairs; the eager interpreter rebuilds
     * the dict */
    PyObject *kw = NULL;
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyObject *items = PyDict_Items(kwargs);
        if (!items || PyList_Sort(items) < 0) { Py_XDECREF(items); return ND_NONE; }
        kw = PyList_AsTuple(items);
        Py_DECREF(items);
        if (!kw) return ND_NONE;
    } else {
        kw = Py_None;
        Py_INCREF(kw);
    }
    n.attrs = PyTuple_Pack(2, args_template, kw);
    Py_DECREF(kw);
    if (!n.attrs) return ND_NONE;
    if (nin > 0) {
        n.extra = PyMem_Malloc(sizeof(nd_id) * (size_t)nin);
        if (!n.extra) { Py_DECREF(n.attrs); PyErr_NoMemory(); return ND_NONE; }
        memcpy(n.extra, ids, sizeof(nd_id) * (size_t)nin);
    }
    n.nextra = nin;
    Py_INCREF(callable);
    n.obj = callable;
    nd_id id = add(t, &n);
    if (id == ND_NONE) PyMem_Free(n.extra);
    return id;
}

nd_id nd_shim_node_scan(nd_trace *t, int uf, nd_id in, int axis, int acc, int out_dtype)
{
    nd_info info;
    nd_shim_info(t, in, &info);
    nd_node n;
    nd_node_init(&n, ND_OP_SCAN, out_dtype, info.ndim, info.shape);
    n.sub = uf;
    n.aux = (int16_t)axis;
    n.nin = 1;
    n.in[0] = in;
    n.in_dtype[0] = acc;
    n.obj = nd_ufunc_object(uf);
    Py_INCREF(n.obj);
    return add(t, &n);
}

int nd_shim_complex_part_dtype(int dtype)
{
    return dtype == NPY_COMPLEX64 ? NPY_FLOAT32 : dtype == NPY_COMPLEX128 ? NPY_FLOAT64 : dtype;
}

nd_id nd_shim_node_part(nd_trace *t, nd_id in, int imag)
{
    nd_info info;
    nd_shim_info(t, in, &info);
    npy_intp strides[ND_MAXDIMS], s = 1;
    for (int d = info.ndim - 1; d >= 0; d--) { strides[d] = info.shape[d] == 1 ? 0 : s; s *= info.shape[d]; }
    nd_node n;
    nd_node_init(&n, ND_OP_VIEW, nd_shim_complex_part_dtype(info.dtype), info.ndim, info.shape);
    n.nin = 1;
    n.in[0] = in;
    n.vndim = (uint8_t)info.ndim;
    for (int d = 0; d < info.ndim; d++) { n.vshape[d] = info.shape[d]; n.vstrides[d] = strides[d]; }
    n.flags |= imag ? ND_F_VIEW_IMAG : ND_F_VIEW_REAL;
    return add(t, &n);
}

nd_id nd_shim_node_reshape(nd_trace *t, nd_id in, int ndim, const npy_intp *shape)
{
    npy_intp strides[ND_MAXDIMS], s = 1;
    for (int d = ndim - 1; d >= 0; d--) { strides[d] = shape[d] == 1 ? 0 : s; s *= shape[d]; }
    return nd_shim_node_view(t, in, ndim, shape, 0, strides);
}

nd_id nd_shim_operand_at(nd_trace *t, nd_operand *op, int dtype)
{
    nd_id id = nd_shim_operand_node(t, op, dtype);
    if (id == ND_NONE) return id;
    return nd_shim_node_cast(t, id, dtype);
}

/* ------------------------------------------------------------ results */

/* NumPy allocates every array it computes or creates, so an impossible
 * size fails there at once: ValueError "array is too big" when size *
 * itemsize overflows npy_intp, MemoryError when the allocation fails. A
 * lazy node allocates nothing while tracing (a fused np.ones(2**40).sum()
 * would run a kernel for minutes), so a size that could fail is tried the
 * way NumPy would try it, by NumPy: an uninitialised array is allocated
 * (untouched pages) and freed. Below the probe size nothing is done. */
#define ND_ALLOC_PROBE ((npy_intp)1 << 28)

int nd_shim_check_alloc(int ndim, const npy_intp *shape, int dtype)
{
    PyArray_Descr *d = PyArray_DescrFromType(dtype);
    if (!d) return -1;
    npy_intp nbytes = PyDataType_ELSIZE(d);
    int probe = 0;
    for (int i = 0; i < ndim && !probe; i++) {
        if (shape[i] == 0) continue;  /* NumPy checks the other dims still */
        if (nbytes > NPY_MAX_INTP / shape[i]) probe = 1;
        else nbytes *= shape[i];
    }
    if (!probe && nbytes < ND_ALLOC_PROBE) {
        Py_DECREF(d);
        return 0;
    }
    PyObject *a = PyArray_NewFromDescr(&PyArray_Type, d, ndim, (npy_intp *)shape, NULL, NULL, 0,
                                       NULL);  /* steals d */
    if (!a) return -1;
    Py_DECREF(a);
    return 0;
}

PyObject *nd_shim_wrap(nd_trace *t, nd_id id, int is_scalar)
{
    if (id == ND_NONE) return NULL;
    /* a computed value (not a view, not an argument): NumPy allocated it */
    const nd_node *n = nd_graph_node(nd_trace_graph(t), id);
    if (n->op != ND_OP_VIEW && n->op != ND_OP_INPUT && n->op != ND_OP_SCALAR &&
        nd_shim_check_alloc(n->ndim, n->shape, n->dtype) < 0)
        return NULL;
    return nd_proxy_wrap(t, id, is_scalar);
}

char nd_shim_order_char(PyObject *order, char dflt)
{
    if (!order || !PyUnicode_Check(order) || PyUnicode_GetLength(order) != 1) return dflt;
    Py_UCS4 c = PyUnicode_READ_CHAR(order, 0);
    if (c >= 'a' && c <= 'z') c -= 'a' - 'A';
    return c == 'C' || c == 'F' || c == 'A' || c == 'K' ? (char)c : dflt;
}

PyObject *nd_shim_wrap_k(nd_trace *t, nd_id id, int is_scalar, int nops, PyObject *const *ops,
                         int iter)
{
    PyObject *p = nd_shim_wrap(t, id, is_scalar);
    if (p) nd_proxy_set_korder(p, nops, ops, iter);
    return p;
}

static int shapes_str(char *buf, size_t cap, int ndim, const npy_intp *shape)
{
    size_t l = (size_t)snprintf(buf, cap, "(");
    for (int d = 0; d < ndim && l < cap - 32; d++)
        l += (size_t)snprintf(buf + l, cap - l, d ? ",%" NPY_INTP_FMT : "%" NPY_INTP_FMT, shape[d]);
    snprintf(buf + l, cap - l, ndim == 1 ? ",)" : ")");
    return 0;
}

/* NumPy's check that a result fits an out= operand without changing its
 * shape: the result's shape must broadcast to out's. */
static int check_out_shape(int ond, const npy_intp *osh, int vnd, const npy_intp *vsh)
{
    int ok = vnd <= ond;
    for (int d = 0; ok && d < vnd; d++) {
        npy_intp v = vsh[vnd - 1 - d], o = osh[ond - 1 - d];
        ok = v == o || v == 1;
    }
    if (ok) return 0;
    /* NumPy's iterator broadcasts the output with the inputs and names
     * that shape (inputs (2,1), out (1,2): "the broadcast shape (2,2)") */
    int bnd = vnd > ond ? vnd : ond;
    npy_intp bsh[ND_MAXDIMS];
    for (int d = 0; d < bnd; d++) {
        npy_intp v = d < vnd ? vsh[vnd - 1 - d] : 1, o = d < ond ? osh[ond - 1 - d] : 1;
        bsh[bnd - 1 - d] = v == 1 ? o : v;
    }
    char a[256], b[256];
    shapes_str(a, sizeof a, ond, osh);
    shapes_str(b, sizeof b, bnd, bsh);
    PyErr_Format(PyExc_ValueError,
                 "non-broadcastable output operand with shape %s doesn't match the broadcast shape %s",
                 a, b);
    return -1;
}

int nd_shim_store_out(nd_trace *t, PyObject *out, nd_id value, const char *ufunc_name,
                      NPY_CASTING casting)
{
    nd_info vi;
    nd_shim_info(t, value, &vi);
    if (nd_proxy_check(out)) {
        int od = nd_proxy_dtype(out);
        if (ufunc_name && nd_shim_check_output_cast(ufunc_name, vi.dtype, od, casting) < 0) return -1;
        if (check_out_shape(nd_proxy_ndim(out), nd_proxy_shape(out), vi.ndim, vi.shape) < 0) return -1;
        nd_id v = nd_shim_node_cast_np(t, value, od);
        if (v == ND_NONE) return -1;
        return nd_proxy_write(out, v);
    }
    if (!PyArray_Check(out)) {
        PyErr_SetString(PyExc_TypeError, "return arrays must be of ArrayType");
        return -1;
    }
    /* A real ndarray not owned by the trace: its buffer is visible to the
     * caller right away, so the value is computed now (a flush, not a
     * break) and copied in with NumPy's own copyto. */
    PyArrayObject *oa = (PyArrayObject *)out;
    int od = array_typenum(PyArray_DESCR(oa));
    if (ufunc_name && od >= 0 && nd_shim_check_output_cast(ufunc_name, vi.dtype, od, casting) < 0)
        return -1;
    if (check_out_shape(PyArray_NDIM(oa), PyArray_DIMS(oa), vi.ndim, vi.shape) < 0) return -1;
    PyObject *p = nd_proxy_wrap(t, value, 0);
    if (!p) return -1;
    PyObject *arr = nd_trace_read(p, "out= a real ndarray the trace does not own (the value is "
                                     "copied into its memory now)");
    Py_DECREF(p);
    if (!arr) return -1;
    int r = PyArray_CopyInto(oa, (PyArrayObject *)arr);
    Py_DECREF(arr);
    return r;
}
