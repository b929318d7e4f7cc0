/* shim_special.c -- special functions NumPy writes in Python, composed of
 * graph nodes as NumPy computes them, so they stay in the graph and are
 * differentiable: np.i0.
 *
 * np.i0(x) is piecewise(|x|, [|x| <= 8], [_i0_1, _i0_2]): exp(x) times
 * Cephes' Chebyshev series (_chbevl, Clenshaw's recurrence) in x / 2 - 2,
 * or in 32 / x - 2 divided by sqrt(x) above 8. The same operations in the
 * same order, with NumPy's Python float constants as weak scalars at x's
 * dtype, give NumPy's values (float32 stays float32). Each branch reads a
 * safe stand-in where the other is selected (0 for the series below 8, 8
 * above), so neither computes an inf or NaN whose zero cotangent would
 * still turn the gradient into NaN. The derivative is the series'
 * derivative: i1(x) to the series' precision.
 */
#include "shim_internal.h"

/* node operations at one dtype (the operands' own: x's, or weak scalars
 * made at it) */
static nd_id op2(nd_trace *t, int uf, nd_id a, nd_id b)
{
    if (a == ND_NONE || b == ND_NONE) return ND_NONE;
    int dt[2] = {nd_shim_node_dtype(t, a), nd_shim_node_dtype(t, b)}, loop[2], out[2];
    if (nd_shim_resolve_ufunc(uf, 2, dt, NULL, NULL, loop, out) < 0) return ND_NONE;
    nd_id in[2] = {a, b};
    return nd_shim_node_ufunc(t, uf, in, loop, out[0], 0);
}

static nd_id op1(nd_trace *t, int uf, nd_id a)
{
    if (a == ND_NONE) return ND_NONE;
    int dt[1] = {nd_shim_node_dtype(t, a)}, loop[1], out[2];
    if (nd_shim_resolve_ufunc(uf, 1, dt, NULL, NULL, loop, out) < 0) return ND_NONE;
    return nd_shim_node_ufunc(t, uf, &a, loop, out[0], 0);
}

/* a Python float as a weak scalar at dtype */
static nd_id num(nd_trace *t, double v, int dtype)
{
    PyObject *o = PyFloat_FromDouble(v);
    if (!o) return ND_NONE;
    nd_id r = nd_shim_node_scalar(t, o, dtype, 1);
    Py_DECREF(o);
    return r;
}

/* _chbevl(x, vals): b0, b1, b2 hold Python floats until the recurrence
 * reaches x (b2 is 0.0, then vals[0]): kept as scalars, as NumPy has them */
static nd_id chbevl(nd_trace *t, nd_id x, PyObject *vals, int dt)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(vals);
    PyObject **v = PySequence_Fast_ITEMS(vals);
    double c0 = PyFloat_AsDouble(v[0]);
    if (c0 == -1 && PyErr_Occurred()) return ND_NONE;
    nd_id b0 = num(t, c0, dt), b1 = num(t, 0.0, dt), b2 = ND_NONE;
    for (Py_ssize_t i = 1; i < n && b0 != ND_NONE; i++) {
        double ci = PyFloat_AsDouble(v[i]);
        if (ci == -1 && PyErr_Occurred()) return ND_NONE;
        b2 = b1;
        b1 = b0;
        b0 = op2(t, ND_UF_ADD, op2(t, ND_UF_SUBTRACT, op2(t, ND_UF_MULTIPLY, x, b1), b2), num(t, ci, dt));
    }
    return op2(t, ND_UF_MULTIPLY, num(t, 0.5, dt), op2(t, ND_UF_SUBTRACT, b0, b2));
}

static PyObject *i0_impl(nd_trace *t, PyObject **argv)
{
    static PyObject *coef_a, *coef_b;  /* NumPy's own tables (_i0A, _i0B) */
    if (!coef_a) {
        PyObject *m = PyImport_ImportModule("numpy.lib._function_base_impl");
        PyObject *a = m ? PyObject_GetAttrString(m, "_i0A") : NULL;
        PyObject *b = a ? PyObject_GetAttrString(m, "_i0B") : NULL;
        Py_XDECREF(m);
        PyObject *fa = b ? PySequence_Fast(a, "_i0A") : NULL, *fb = fa ? PySequence_Fast(b, "_i0B") : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (!fb || PySequence_Fast_GET_SIZE(fa) < 2 || PySequence_Fast_GET_SIZE(fb) < 2) {
            Py_XDECREF(fa);
            Py_XDECREF(fb);
            PyErr_Clear();
            return nd_shim_unsupported("numpy.i0: this NumPy has no _i0A/_i0B tables");
        }
        coef_a = fa;
        coef_b = fb;
    }
    nd_operand a;
    int rc = nd_shim_operand(t, argv[0], &a);
    if (rc) return NULL;  /* an error, or unsupported with its reason */
    if (a.weak && (a.id = nd_shim_operand_node(t, &a, a.dtype)) == ND_NONE) return NULL;
    if (PyTypeNum_ISCOMPLEX(a.dtype)) {
        PyErr_SetString(PyExc_TypeError, "i0 not supported for complex values");
        return NULL;
    }
    int dt = PyTypeNum_ISFLOAT(a.dtype) ? a.dtype : NPY_DOUBLE;
    if (dt == NPY_LONGDOUBLE) return nd_shim_unsupported("numpy.i0 of long double");
    nd_id x = nd_shim_node_cast(t, a.id, dt);
    x = op1(t, ND_UF_ABSOLUTE, x);
    nd_id lo = op2(t, ND_UF_LESS_EQUAL, x, num(t, 8.0, dt));
    if (lo == ND_NONE) return NULL;
    /* _i0_1: exp(x) * _chbevl(x / 2.0 - 2, _i0A) */
    nd_id x1 = nd_shim_node_where(t, lo, x, num(t, 0.0, dt), dt);
    nd_id s1 = chbevl(t, op2(t, ND_UF_SUBTRACT, op2(t, ND_UF_TRUE_DIVIDE, x1, num(t, 2.0, dt)), num(t, 2.0, dt)),
                      coef_a, dt);
    nd_id y1 = op2(t, ND_UF_MULTIPLY, op1(t, ND_UF_EXP, x1), s1);
    /* _i0_2: exp(x) * _chbevl(32.0 / x - 2.0, _i0B) / sqrt(x) */
    nd_id x2 = y1 == ND_NONE ? ND_NONE : nd_shim_node_where(t, lo, num(t, 8.0, dt), x, dt);
    nd_id s2 = chbevl(t, op2(t, ND_UF_SUBTRACT, op2(t, ND_UF_TRUE_DIVIDE, num(t, 32.0, dt), x2), num(t, 2.0, dt)),
                      coef_b, dt);
    nd_id y2 = op2(t, ND_UF_TRUE_DIVIDE, op2(t, ND_UF_MULTIPLY, op1(t, ND_UF_EXP, x2), s2), op1(t, ND_UF_SQRT, x2));
    nd_id r = y2 == ND_NONE ? ND_NONE : nd_shim_node_where(t, lo, y1, y2, dt);
    if (r == ND_NONE) return NULL;
    return nd_shim_wrap(t, r, 0);  /* piecewise's result: an array, 0-d included */
}

static const nd_shim_def special_defs[] = {
    {"i0", "x", i0_impl, 0},
    {NULL},
};

int nd_shim_register_special(nd_shim_table *tab)
{
    return nd_shim_add_functions(tab, special_defs);
}
