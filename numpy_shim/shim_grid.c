/* shim_grid.c -- np.mgrid / np.ogrid as lazy values.
 *
 * Inside a compiled function `np.mgrid[0:xn, 0:yn]` (np being the shim
 * module) reaches this object instead of NumPy's: with integer slice bounds
 * the grid is INDEX (iota) nodes times the step plus the start, so a later
 * `linspace(...)[Xi]`, `Xi[mask]` or arithmetic on it stays in the graph
 * (NPBench mandelbrot2 indexed a concrete grid by lazy masks: a break each
 * read). NumPy's nd_grid.__getitem__ (numpy/lib/_index_tricks_impl.py) for
 * integer bounds:
 *
 *   - one slice: np.arange(start, stop, step);
 *   - a tuple of d slices: size_k = ceil((stop_k - start_k) / (step_k *
 *     1.0)), dtype result_type(0, bounds...) (int64 for Python ints);
 *     mgrid: shape (d, size_1..size_d), element [k, i..] = i_k * step_k +
 *     start_k; ogrid: a tuple of d arrays, the k-th of size_k along axis k
 *     and 1 elsewhere.
 *
 * Everything else (float or complex steps, NumPy integers, bounds past
 * 2**52 where that arithmetic stops being exact, zero steps, empty or
 * negative sizes, keys that are not slices) is NumPy's own object's answer,
 * as before: a concrete array, or NumPy's error. Outside tracing the object
 * is NumPy's too.
 */
#include "shim_internal.h"
#include <math.h>

typedef struct {
    PyObject_HEAD
    PyObject *numpy_obj;  /* np.mgrid / np.ogrid */
    int sparse;
} NdGrid;

#define GRID_EXACT ((long long)1 << 52)

/* one slice's bounds: 1 if it is not all Python ints within GRID_EXACT */
static int grid_bounds(PyObject *s, int need_stop, long long *start, long long *stop, long long *step)
{
    PyObject *o[3] = {((PySliceObject *)s)->start, ((PySliceObject *)s)->stop,
                      ((PySliceObject *)s)->step};
    long long v[3] = {0, 0, 1};
    for (int i = 0; i < 3; i++) {
        if (o[i] == Py_None && i != 1) continue;
        if (o[i] == Py_None && !need_stop) return 1;
        if (!PyLong_CheckExact(o[i])) return 1;
        int over = 0;
        v[i] = PyLong_AsLongLongAndOverflow(o[i], &over);
        if (over || (v[i] == -1 && PyErr_Occurred()) || v[i] >= GRID_EXACT || v[i] <= -GRID_EXACT) {
            PyErr_Clear();
            return 1;
        }
    }
    if (v[2] == 0) return 1;
    *start = v[0];
    *stop = v[1];
    *step = v[2];
    return 0;
}

/* i * step + start over shape, i the iota along axis */
static nd_id grid_axis(nd_trace *t, int ndim, const npy_intp *shape, int axis, long long start,
                       long long step)
{
    nd_id i = nd_shim_node_index(t, ndim, shape, axis);
    return nd_xj_ibin_c(t, ND_UF_ADD, nd_xj_ibin_c(t, ND_UF_MULTIPLY, i, step), start);
}

/* the lazy grid, NULL with no error set when NumPy's object must answer */
static PyObject *grid_lazy(nd_trace *t, NdGrid *g, PyObject *key)
{
    long long start[ND_MAXDIMS], stop[ND_MAXDIMS], step[ND_MAXDIMS];
    npy_intp size[ND_MAXDIMS + 1];
    if (PySlice_Check(key)) {
        if (grid_bounds(key, 1, &start[0], &stop[0], &step[0])) return NULL;
        double n = ceil((double)(stop[0] - start[0]) / (double)step[0]);
        if (n <= 0) return NULL;
        size[0] = (npy_intp)n;
        return nd_shim_wrap(t, grid_axis(t, 1, size, 0, start[0], step[0]), 0);
    }
    if (!PyTuple_CheckExact(key)) return NULL;
    Py_ssize_t d = PyTuple_GET_SIZE(key);
    if (d < 1 || d >= ND_MAXDIMS) return NULL;
    for (Py_ssize_t k = 0; k < d; k++) {
        PyObject *s = PyTuple_GET_ITEM(key, k);
        if (!PySlice_Check(s) || grid_bounds(s, 1, &start[k], &stop[k], &step[k])) return NULL;
        /* NumPy: int(math.ceil((stop - start) / (step * 1.0))) */
        double n = ceil((double)(stop[k] - start[k]) / (double)step[k]);
        if (n <= 0) return NULL;
        size[k + 1] = (npy_intp)n;
    }
    if (g->sparse) {
        PyObject *tup = PyTuple_New(d);
        npy_intp shape[ND_MAXDIMS];
        for (Py_ssize_t k = 0; tup && k < d; k++) {
            for (Py_ssize_t j = 0; j < d; j++) shape[j] = j == k ? size[k + 1] : 1;
            PyObject *a = nd_shim_wrap(t, grid_axis(t, (int)d, shape, (int)k, start[k], step[k]), 0);
            if (!a) Py_CLEAR(tup);
            else PyTuple_SET_ITEM(tup, k, a);
        }
        return tup;
    }
    /* mgrid: where(k == 0, grid_0, where(k == 1, grid_1, ...)) over the
     * leading axis k */
    size[0] = d;
    if (nd_shim_check_alloc((int)d + 1, size, NPY_INT64) < 0) {  /* NumPy's error, NumPy's way */
        PyErr_Clear();
        return NULL;
    }
    nd_id lead = nd_shim_node_index(t, (int)d + 1, size, 0);
    nd_id acc = grid_axis(t, (int)d + 1, size, (int)d, start[d - 1], step[d - 1]);
    for (Py_ssize_t k = d - 2; acc != ND_NONE && k >= 0; k--) {
        nd_id v = grid_axis(t, (int)d + 1, size, (int)k + 1, start[k], step[k]);
        nd_id c = v == ND_NONE ? ND_NONE : nd_xj_ibin_c(t, ND_UF_EQUAL, lead, (long long)k);
        acc = c == ND_NONE ? ND_NONE : nd_shim_node_where(t, c, v, acc, NPY_INT64);
    }
    if (acc == ND_NONE) return NULL;
    return nd_shim_wrap(t, acc, 0);
}

static PyObject *grid_subscript(PyObject *self, PyObject *key)
{
    NdGrid *g = (NdGrid *)self;
    nd_trace *t = nd_trace_current();
    if (t) {
        PyObject *r = grid_lazy(t, g, key);
        if (r || PyErr_Occurred()) return r;
    }
    return PyObject_GetItem(g->numpy_obj, key);
}

/* anything else (len(np.mgrid) raises, attributes) is NumPy's object's */
static PyObject *grid_getattro(PyObject *self, PyObject *name)
{
    return PyObject_GetAttr(((NdGrid *)self)->numpy_obj, name);
}

static PyObject *grid_repr(PyObject *self)
{
    return PyObject_Repr(((NdGrid *)self)->numpy_obj);
}

static void grid_dealloc(PyObject *self)
{
    Py_XDECREF(((NdGrid *)self)->numpy_obj);
    Py_TYPE(self)->tp_free(self);
}

static PyMappingMethods grid_mapping = {.mp_subscript = grid_subscript};

static PyTypeObject NdGrid_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.ShimGrid",
    .tp_basicsize = sizeof(NdGrid),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = grid_dealloc,
    .tp_repr = grid_repr,
    .tp_getattro = grid_getattro,
    .tp_as_mapping = &grid_mapping,
    .tp_doc = "np.mgrid / np.ogrid as numdyn's shim records them inside compiled functions.",
};

int nd_shim_register_grid(PyObject *module)
{
    if (PyType_Ready(&NdGrid_Type) < 0) return -1;
    static const char *const names[] = {"mgrid", "ogrid"};
    for (int i = 0; i < 2; i++) {
        PyObject *np = PyObject_GetAttrString(nd_shim_numpy(), names[i]);
        if (!np) {  /* not in this NumPy */
            PyErr_Clear();
            continue;
        }
        NdGrid *g = PyObject_New(NdGrid, &NdGrid_Type);
        if (!g) { Py_DECREF(np); return -1; }
        g->numpy_obj = np;
        g->sparse = i == 1;
        if (PyModule_AddObject(module, names[i], (PyObject *)g) < 0) {
            Py_DECREF(g);
            return -1;
        }
    }
    return 0;
}
