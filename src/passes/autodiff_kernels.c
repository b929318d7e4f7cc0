/* autodiff_kernels.c -- numeric VJP kernels run as EXTERN nodes
 * (autodiff_kernels.h). */
#include "autodiff_kernels.h"
#include <math.h>
#include <string.h>

PyObject *nd_ad_cumext_vjp, *nd_ad_quantile_vjp, *nd_ad_lae_scan_vjp, *nd_ad_interp_vjp,
    *nd_ad_powacc_vjp;

/* x, y, c as C-contiguous float64 arrays of one shape; NULL on error */
static int as_f64(PyObject *o, PyArrayObject **out)
{
    *out = (PyArrayObject *)PyArray_FROMANY(o, NPY_DOUBLE, 0, 0, NPY_ARRAY_CARRAY);
    return *out ? 0 : -1;
}

/* A scan's backward operands: x, its scan y and the cotangent c as float64
 * arrays of one size, the gradient g (zeros like x), and the scan's axis
 * as outer x n x inner. */
typedef struct {
    PyArrayObject *x, *y, *c, *g;
    npy_intp n, outer, inner;
} scan_ops;

static void scan_ops_release(scan_ops *s)
{
    Py_CLEAR(s->x);
    Py_CLEAR(s->y);
    Py_CLEAR(s->c);
}

/* 0, or -1 with an exception and nothing held */
static int scan_ops_get(PyObject *xo, PyObject *yo, PyObject *co, int axis, const char *who,
                        scan_ops *s)
{
    memset(s, 0, sizeof *s);
    if (as_f64(xo, &s->x) < 0 || as_f64(yo, &s->y) < 0 || as_f64(co, &s->c) < 0) goto fail;
    PyArrayObject *x = s->x;
    if (PyArray_SIZE(s->y) != PyArray_SIZE(x) || PyArray_SIZE(s->c) != PyArray_SIZE(x) ||
        axis < 0 || axis >= PyArray_NDIM(x)) {
        PyErr_Format(PyExc_ValueError, "numdyn %s: bad operands", who);
        goto fail;
    }
    s->g = (PyArrayObject *)PyArray_ZEROS(PyArray_NDIM(x), PyArray_DIMS(x), NPY_DOUBLE, 0);
    if (!s->g) goto fail;
    s->n = PyArray_DIM(x, axis);
    s->outer = s->inner = 1;
    for (int d = 0; d < axis; d++) s->outer *= PyArray_DIM(x, d);
    for (int d = axis + 1; d < PyArray_NDIM(x); d++) s->inner *= PyArray_DIM(x, d);
    return 0;
fail:
    scan_ops_release(s);
    return -1;
}

/* the operands of a kernel called as (x, y, c, axis) */
static int scan_args(PyObject *args, const char *who, scan_ops *s)
{
    PyObject *xo, *yo, *co;
    int axis;
    if (!PyArg_ParseTuple(args, "OOOi", &xo, &yo, &co, &axis)) return -1;
    return scan_ops_get(xo, yo, co, axis, who, s);
}

static PyObject *cumext_vjp_fn(PyObject *self, PyObject *args)
{
    scan_ops s;
    if (scan_args(args, "cumext_vjp", &s) < 0) return NULL;
    const npy_intp n = s.n, inner = s.inner;
    const double *X = PyArray_DATA(s.x), *Y = PyArray_DATA(s.y), *C = PyArray_DATA(s.c);
    double *G = PyArray_DATA(s.g);
    for (npy_intp o = 0; o < s.outer; o++)
        for (npy_intp k = 0; k < inner; k++) {
            npy_intp base = o * n * inner + k, w = 0;
            for (npy_intp i = 0; i < n; i++) {
                npy_intp at = base + i * inner;
                /* a new running extremum (or a tie with it: the last wins),
                 * or the first NaN, which every later y keeps */
                if (i == 0 || X[at] == Y[at] ||
                    (isnan(Y[at]) && !isnan(Y[at - inner])))
                    w = i;
                G[base + w * inner] += C[at];
            }
        }
    scan_ops_release(&s);
    return (PyObject *)s.g;
}

/* y = logaddexp.accumulate(x): dy_i/dx_j = exp(x_j - y_i) for j <= i, so
 * g_j = exp(x_j - y_j) r_j with r_j = c_j + exp(y_j - y_{j+1}) r_{j+1}: y
 * never decreases along the axis, so every factor is <= 1 and nothing
 * overflows (base 2: exp2 throughout). An element at -inf gets 0; two
 * equal infinite y count as equal (the factor 1). */
static PyObject *lae_scan_vjp_fn(PyObject *self, PyObject *args)
{
    PyObject *xo, *yo, *co;
    int axis, base2;
    scan_ops s;
    if (!PyArg_ParseTuple(args, "OOOii", &xo, &yo, &co, &axis, &base2) ||
        scan_ops_get(xo, yo, co, axis, "lae_scan_vjp", &s) < 0)
        return NULL;
    const npy_intp n = s.n, inner = s.inner;
    const double *X = PyArray_DATA(s.x), *Y = PyArray_DATA(s.y), *C = PyArray_DATA(s.c);
    double *G = PyArray_DATA(s.g);
    for (npy_intp o = 0; o < s.outer; o++)
        for (npy_intp k = 0; k < inner; k++) {
            npy_intp base = o * n * inner + k;
            double r = 0;
            for (npy_intp i = n - 1; i >= 0; i--) {
                npy_intp at = base + i * inner;
                if (i + 1 < n) {
                    double d = Y[at] == Y[at + inner] ? 0.0 : Y[at] - Y[at + inner];
                    r *= base2 ? exp2(d) : exp(d);
                }
                r += C[at];
                double e = X[at] - Y[at];
                G[at] = X[at] == -INFINITY ? 0.0 : X[at] == Y[at] ? r : r * (base2 ? exp2(e) : exp(e));
            }
        }
    scan_ops_release(&s);
    return (PyObject *)s.g;
}

/* powacc_vjp: y_0 = x_0, y_i = y_{i-1} ** x_i. A reverse scan carries r_i,
 * the cotangent reaching y_i (its own c_i plus what y_{i+1} sends back,
 * r_{i+1} * x_{i+1} * y_i ** (x_{i+1} - 1)); x_i (i > 0) gets r_i * y_i *
 * log(y_{i-1}), x_0 gets r_0. np.power's rule at its kinks: no gradient to
 * the base where the exponent is 0, log(1) for the exponent where the
 * base is 0. */
static void powacc_line(const scan_ops *s, npy_intp base)
{
    const double *X = PyArray_DATA(s->x), *Y = PyArray_DATA(s->y), *C = PyArray_DATA(s->c);
    double *G = PyArray_DATA(s->g);
    double r = 0;
    for (npy_intp i = s->n - 1; i >= 0; i--) {
        npy_intp at = base + i * s->inner;
        r += C[at];
        if (i == 0) {
            G[at] = r;
            break;
        }
        double prev = Y[at - s->inner], e = X[at];
        G[at] = r * Y[at] * log(prev == 0 ? 1.0 : prev);
        r = e == 0 ? 0.0 : r * e * pow(prev, e - 1);
    }
}

static PyObject *powacc_vjp_fn(PyObject *self, PyObject *args)
{
    scan_ops s;
    if (scan_args(args, "powacc_vjp", &s) < 0) return NULL;
    for (npy_intp o = 0; o < s.outer; o++)
        for (npy_intp k = 0; k < s.inner; k++) powacc_line(&s, o * s.n * s.inner + k);
    scan_ops_release(&s);
    return (PyObject *)s.g;
}

/* ------------------------------------------------------------ interp */

/* the largest j with xp[j] <= v (xp ascending, n >= 1): -1 below xp[0] */
static npy_intp knot_below(const double *xp, npy_intp n, double v)
{
    npy_intp lo = -1, hi = n;  /* xp[lo] <= v < xp[hi] */
    while (hi - lo > 1) {
        npy_intp mid = lo + (hi - lo) / 2;
        if (xp[mid] <= v) lo = mid;
        else hi = mid;
    }
    return lo;
}

static PyObject *interp_vjp_fn(PyObject *self, PyObject *args)
{
    PyObject *xo, *xpo, *fpo, *co;
    int which, left_none, right_none;
    if (!PyArg_ParseTuple(args, "OOOOipp", &xo, &xpo, &fpo, &co, &which, &left_none, &right_none))
        return NULL;
    PyArrayObject *x = NULL, *xp = NULL, *fp = NULL, *c = NULL, *g = NULL;
    if (as_f64(xo, &x) < 0 || as_f64(xpo, &xp) < 0 || as_f64(fpo, &fp) < 0 || as_f64(co, &c) < 0)
        goto done;
    npy_intp n = PyArray_SIZE(xp), m = PyArray_SIZE(x);
    if (n < 1 || PyArray_SIZE(fp) != n || PyArray_SIZE(c) != m) {
        PyErr_SetString(PyExc_ValueError, "numdyn interp_vjp: bad operands");
        goto done;
    }
    g = which ? (PyArrayObject *)PyArray_ZEROS(1, &n, NPY_DOUBLE, 0)
              : (PyArrayObject *)PyArray_ZEROS(PyArray_NDIM(x), PyArray_DIMS(x), NPY_DOUBLE, 0);
    if (!g) goto done;
    const double *X = PyArray_DATA(x), *XP = PyArray_DATA(xp), *FP = PyArray_DATA(fp);
    const double *C = PyArray_DATA(c);
    double *G = PyArray_DATA(g);
    for (npy_intp i = 0; i < m; i++) {
        double v = X[i];
        if (isnan(v)) {
            if (!which) G[i] = NAN;
            continue;
        }
        npy_intp j = knot_below(XP, n, v);
        if (j < 0 || (j == n - 1 && v > XP[n - 1])) {
            /* outside: left / right, or fp's end values when they are None */
            if (which && (j < 0 ? left_none : right_none)) G[j < 0 ? 0 : n - 1] += C[i];
            continue;
        }
        if (n == 1) {  /* v == xp[0] */
            if (which) G[0] += C[i];
            continue;
        }
        if (j == n - 1) j = n - 2;  /* v == xp[-1]: the last segment */
        double dx = XP[j + 1] - XP[j];
        if (!which) {
            G[i] = C[i] * (FP[j + 1] - FP[j]) / dx;
        } else {
            double t = (v - XP[j]) / dx;
            G[j] += C[i] * (1.0 - t);
            G[j + 1] += C[i] * t;
        }
    }
done:
    Py_XDECREF(x);
    Py_XDECREF(xp);
    Py_XDECREF(fp);
    Py_XDECREF(c);
    return (PyObject *)g;
}

/* ------------------------------------------------------------ quantiles */

enum { Q_CONT, Q_LINEAR, Q_LOWER, Q_HIGHER, Q_NEAREST, Q_MIDPOINT, Q_INV_CDF, Q_AVG_INV_CDF,
       Q_CLOSEST };
static const struct {
    const char *name;
    int kind;
    double alpha, beta;  /* Q_CONT: NumPy's _compute_virtual_index */
} methods[] = {
    {"linear", Q_LINEAR, 1, 1},
    {"lower", Q_LOWER, 0, 0},
    {"higher", Q_HIGHER, 0, 0},
    {"nearest", Q_NEAREST, 0, 0},
    {"midpoint", Q_MIDPOINT, 0, 0},
    {"weibull", Q_CONT, 0, 0},
    {"hazen", Q_CONT, 0.5, 0.5},
    {"median_unbiased", Q_CONT, 1.0 / 3, 1.0 / 3},
    {"normal_unbiased", Q_CONT, 3.0 / 8, 3.0 / 8},
    {"interpolated_inverted_cdf", Q_CONT, 0, 1},
    {"inverted_cdf", Q_INV_CDF, 0, 0},
    {"averaged_inverted_cdf", Q_AVG_INV_CDF, 0, 0},
    {"closest_observation", Q_CLOSEST, 0, 0},
};

static int method_index(const char *s)
{
    for (size_t k = 0; k < sizeof methods / sizeof methods[0]; k++)
        if (strcmp(methods[k].name, s) == 0) return (int)k;
    return -1;
}

int nd_ad_quantile_method_known(const char *s) { return method_index(s) >= 0; }

/* the two order statistics (lo, hi in [0, n)) output q interpolates and
 * hi's weight, as NumPy's _quantile picks them */
static void q_points(int m, npy_intp n, double q, npy_intp *lo, npy_intp *hi, double *gamma)
{
    double v;
    switch (methods[m].kind) {
    case Q_LOWER: v = floor((double)(n - 1) * q); *gamma = 0; break;
    case Q_HIGHER: v = ceil((double)(n - 1) * q); *gamma = 0; break;
    case Q_NEAREST: v = nearbyint((double)(n - 1) * q); *gamma = 0; break;  /* np.around: half to even */
    case Q_MIDPOINT:
        v = (double)(n - 1) * q;
        *gamma = v == floor(v) ? 0 : 0.5;
        break;
    case Q_LINEAR: v = (double)(n - 1) * q; *gamma = v - floor(v); break;
    case Q_INV_CDF:  /* _inverted_cdf: the next order statistic unless exact */
    case Q_CLOSEST: {  /* _closest_observation: exact and odd (0-based) keeps it */
        v = (double)n * q - 1 - (methods[m].kind == Q_CLOSEST ? 0.5 : 0);
        double f0 = floor(v);
        int keep = v - f0 == 0 && (methods[m].kind == Q_INV_CDF || f0 - 2 * floor(f0 / 2) == 1);
        v = keep ? f0 : f0 + 1;
        *gamma = 0;
        break;
    }
    case Q_AVG_INV_CDF:  /* halves at an exact index, else the next one */
        v = (double)n * q - 1;
        *gamma = v - floor(v) == 0 ? 0.5 : 1;
        break;
    default: {
        double a = methods[m].alpha, b = methods[m].beta;
        v = (double)n * q + (a + q * (1 - a - b)) - 1;
        *gamma = v - floor(v);
    }
    }
    double f = floor(v);
    /* NumPy clamps both points to the ends (the weights then add to one
     * element) */
    if (!(v >= 0)) { *lo = *hi = 0; return; }
    if (v >= (double)(n - 1)) { *lo = *hi = n - 1; return; }
    *lo = (npy_intp)f;
    *hi = *lo + 1 < n ? *lo + 1 : n - 1;
}

static PyObject *quantile_vjp_fn(PyObject *self, PyObject *args)
{
    PyObject *xo, *co, *qo, *axo;
    const char *meth;
    if (!PyArg_ParseTuple(args, "OOOOs", &xo, &co, &qo, &axo, &meth)) return NULL;
    int m = method_index(meth);
    if (m < 0) return PyErr_Format(PyExc_ValueError, "numdyn quantile_vjp: method %s", meth);
    PyArrayObject *x = NULL, *c = NULL, *q = NULL, *xr = NULL, *ord = NULL, *g = NULL;
    PyObject *r = NULL;
    if (as_f64(xo, &x) < 0 || as_f64(co, &c) < 0 || as_f64(qo, &q) < 0) goto done;
    int nd = PyArray_NDIM(x);
    char red[ND_MAXDIMS] = {0};
    if (axo == Py_None) {
        memset(red, 1, sizeof red);
    } else {
        PyObject *seq = PyLong_Check(axo) ? PyTuple_Pack(1, axo) : PySequence_Tuple(axo);
        if (!seq) goto done;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(seq); k++) {
            long a = PyLong_AsLong(PyTuple_GET_ITEM(seq, k));
            if (a < 0) a += nd;
            if (a < 0 || a >= nd) {
                Py_DECREF(seq);
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "numdyn quantile_vjp: axis");
                goto done;
            }
            red[a] = 1;
        }
        Py_DECREF(seq);
    }
    /* x's kept axes first, then the reduced ones: rows of n values */
    npy_intp perm[ND_MAXDIMS], tshape[ND_MAXDIMS], K = 1, n = 1;
    int p = 0;
    for (int d = 0; d < nd; d++) if (!red[d]) { perm[p] = d; tshape[p++] = PyArray_DIM(x, d); K *= PyArray_DIM(x, d); }
    for (int d = 0; d < nd; d++) if (red[d]) { perm[p] = d; tshape[p++] = PyArray_DIM(x, d); n *= PyArray_DIM(x, d); }
    npy_intp Q = PyArray_SIZE(q);
    if (PyArray_SIZE(c) != Q * K || n == 0) {
        PyErr_SetString(PyExc_ValueError, "numdyn quantile_vjp: bad operands");
        goto done;
    }
    PyArray_Dims pd = {perm, nd};
    PyObject *xt = PyArray_Transpose(x, &pd);
    PyObject *xc = xt ? PyArray_NewCopy((PyArrayObject *)xt, NPY_CORDER) : NULL;
    Py_XDECREF(xt);
    npy_intp d2[2] = {K, n};
    PyArray_Dims rows = {d2, 2};
    xr = xc ? (PyArrayObject *)PyArray_Newshape((PyArrayObject *)xc, &rows, NPY_CORDER) : NULL;
    Py_XDECREF(xc);
    if (!xr) goto done;
    PyObject *o = PyArray_ArgSort(xr, 1, NPY_STABLESORT);
    ord = o ? (PyArrayObject *)PyArray_FROMANY(o, NPY_INTP, 0, 0, NPY_ARRAY_CARRAY) : NULL;
    Py_XDECREF(o);
    if (!ord) goto done;
    g = (PyArrayObject *)PyArray_ZEROS(2, d2, NPY_DOUBLE, 0);
    if (!g) goto done;
    const npy_intp *O = PyArray_DATA(ord);
    const double *C = PyArray_DATA(c), *QV = PyArray_DATA(q);
    double *G = PyArray_DATA(g);
    for (npy_intp j = 0; j < Q; j++) {
        npy_intp lo, hi;
        double gm;
        q_points(m, n, QV[j], &lo, &hi, &gm);
        for (npy_intp k = 0; k < K; k++) {
            double cv = C[j * K + k];
            G[k * n + O[k * n + lo]] += cv * (1 - gm);
            G[k * n + O[k * n + hi]] += cv * gm;
        }
    }
    /* back to x's layout: the transposed shape, then the inverse permutation */
    PyArray_Dims td = {tshape, nd};
    PyObject *gt = PyArray_Newshape(g, &td, NPY_CORDER);
    npy_intp inv[ND_MAXDIMS];
    for (int d = 0; d < nd; d++) inv[perm[d]] = d;
    PyArray_Dims id = {inv, nd};
    PyObject *gx = gt ? PyArray_Transpose((PyArrayObject *)gt, &id) : NULL;
    Py_XDECREF(gt);
    r = gx ? PyArray_NewCopy((PyArrayObject *)gx, NPY_CORDER) : NULL;
    Py_XDECREF(gx);
done:
    Py_XDECREF(x);
    Py_XDECREF(c);
    Py_XDECREF(q);
    Py_XDECREF(xr);
    Py_XDECREF(ord);
    Py_XDECREF(g);
    return r;
}

static PyMethodDef cumext_def = {"cumext_vjp", cumext_vjp_fn, METH_VARARGS,
                                 "numdyn: the VJP of maximum/minimum.accumulate(x, axis)"};
static PyMethodDef lae_scan_def = {"lae_scan_vjp", lae_scan_vjp_fn, METH_VARARGS,
                                   "numdyn: the VJP of logaddexp(2).accumulate(x, axis)"};
static PyMethodDef powacc_def = {"powacc_vjp", powacc_vjp_fn, METH_VARARGS,
                                  "numdyn: the VJP of power.accumulate(x, axis) at cotangent c"};
static PyMethodDef interp_def = {"interp_vjp", interp_vjp_fn, METH_VARARGS,
                                 "numdyn: the VJP of interp(x, xp, fp) for x or fp"};
static PyMethodDef quantile_def = {"quantile_vjp", quantile_vjp_fn, METH_VARARGS,
                                   "numdyn: the VJP of quantile(x, q, axis, method)"};

int nd_ad_kernels_init(void)
{
    if (!nd_ad_cumext_vjp && !(nd_ad_cumext_vjp = PyCFunction_New(&cumext_def, NULL))) return -1;
    if (!nd_ad_lae_scan_vjp && !(nd_ad_lae_scan_vjp = PyCFunction_New(&lae_scan_def, NULL))) return -1;
    if (!nd_ad_powacc_vjp && !(nd_ad_powacc_vjp = PyCFunction_New(&powacc_def, NULL))) return -1;
    if (!nd_ad_quantile_vjp && !(nd_ad_quantile_vjp = PyCFunction_New(&quantile_def, NULL))) return -1;
    if (!nd_ad_interp_vjp && !(nd_ad_interp_vjp = PyCFunction_New(&interp_def, NULL))) return -1;
    return 0;
}
