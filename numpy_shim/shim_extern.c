/* shim_extern.c -- matmul/dot/einsum/linalg/fft/sort... (owned by the
 * "extern" helper).
 *
 * What NumPy does best (BLAS, LAPACK, pocketfft, its sorts) runs as EXTERN
 * nodes: NumPy's own function called on materialized inputs inside the
 * compiled program, with the elementwise work around it still fused. The
 * graph needs every node's shape and dtype at trace time:
 *  - shapes come from NumPy's rules written here in C (matmul's core
 *    dimensions, linalg's output shapes, fft lengths, ...). When a rule
 *    rejects the call, NumPy itself is asked to raise (nd_xj_numpy_error on
 *    zero-stride stand-ins), so messages are NumPy's word for word;
 *  - dtypes come from NumPy as the oracle: the function is called once on
 *    tiny probe arrays (every dim shrunk to at most 2, identity-like
 *    values so linalg never sees a singular matrix) per (function, input
 *    dtypes and ranks, constant arguments), and the answer is cached. The
 *    probe also raises NumPy's own dtype errors ("array type float16 is
 *    unsupported in linalg") at the right line.
 * Pure pointwise/reduction einsums ("ij,ij->i", "i,j->ij", "ij->") and
 * vector/Frobenius norms are built from fused graph ops instead.
 * Functions whose result shape or dtype depends on the data (unique,
 * bincount, nonzero, eig, lstsq's residuals) are recorded graph breaks. */
#include "shim_xj.h"
#include "core/strides.h"
#include <string.h>

/* ------------------------------------------------------ dtype probe cache */

typedef struct {
    PyObject *fn;                  /* borrowed: NumPy functions live forever */
    int nin;
    int in_dtype[8], in_ndim[8];
    Py_hash_t tmpl_hash, kw_hash;
    int nout;
    int out_dtype[4];
    PyObject *restype;             /* owned: type of the probe's result */
} probe_entry;

static probe_entry *probes;
static int nprobes, capprobes;

/* identity-like probe of at most 2 per dim: ones for rank < 2, for rank >= 2
 * a stack of eye(rows, cols) so linalg functions accept it */
static PyObject *probe_array(int dtype, int ndim, const npy_intp *shape)
{
    npy_intp sh[ND_MAXDIMS];
    for (int d = 0; d < ndim; d++) sh[d] = shape[d] < 2 ? shape[d] : 2;
    PyArray_Descr *descr = PyArray_DescrFromType(dtype);
    if (!descr) return NULL;
    PyObject *a = PyArray_Zeros(ndim, sh, descr, 0);
    if (!a) return NULL;
    PyArrayObject *arr = (PyArrayObject *)a;
    npy_intp n = PyArray_SIZE(arr);
    PyObject *one = PyLong_FromLong(1);
    if (!one) { Py_DECREF(a); return NULL; }
    npy_intp idx[ND_MAXDIMS];
    for (npy_intp i = 0; i < n; i++) {
        npy_intp r = i;
        for (int d = ndim - 1; d >= 0; d--) { idx[d] = r % sh[d]; r /= sh[d]; }
        int on = ndim < 2 || idx[ndim - 1] == idx[ndim - 2];
        if (on && PyArray_SETITEM(arr, PyArray_GetPtr(arr, idx), one) < 0) {
            Py_DECREF(one);
            Py_DECREF(a);
            return NULL;
        }
    }
    Py_DECREF(one);
    return a;
}

/* leaf of nd_xj_map_template: placeholder k becomes arrs[k] */
static int placeholder_leaf(PyObject *o, void *arrs, PyObject **out)
{
    int k = nd_extern_placeholder_index(o);
    if (k < 0) return 0;
    *out = ((PyObject *const *)arrs)[k];
    Py_INCREF(*out);
    return 1;
}

static Py_hash_t kw_hash(PyObject *kw)
{
    if (!kw) return 0;
    PyObject *items = PyDict_Items(kw);
    if (!items) return -1;
    PyObject *tup = PyList_AsTuple(items);
    Py_DECREF(items);
    if (!tup) return -1;
    Py_hash_t h = PyObject_Hash(tup);
    Py_DECREF(tup);
    return h;
}

/* Result dtypes and result type (new ref) of fn(*tmpl, **kw) for inputs
 * like ins. */
static int probe(PyObject *fn, PyObject *tmpl, PyObject *kw, int nin, const nd_xj_arr *ins,
                 int nout, int *out_dtype, PyObject **restype)
{
    Py_hash_t th = PyObject_Hash(tmpl), kh = th == -1 ? -1 : kw_hash(kw);
    int cacheable = th != -1 && kh != -1 && nin <= 8;
    if (!cacheable) PyErr_Clear();
    for (int i = 0; cacheable && i < nprobes; i++) {
        probe_entry *e = &probes[i];
        if (e->fn != fn || e->nin != nin || e->tmpl_hash != th || e->kw_hash != kh ||
            e->nout != nout)
            continue;
        int same = 1;
        for (int k = 0; same && k < nin; k++)
            same = e->in_dtype[k] == ins[k].dtype && e->in_ndim[k] == ins[k].ndim;
        if (!same) continue;
        memcpy(out_dtype, e->out_dtype, sizeof(int) * (size_t)nout);
        *restype = e->restype;
        Py_INCREF(*restype);
        return 0;
    }
    PyObject *arrs[ND_SHIM_MAXARGS];
    if (nin > ND_SHIM_MAXARGS) {
        PyErr_SetString(PyExc_SystemError, "numdyn: too many extern inputs to probe");
        return -1;
    }
    int made = 0, rc = -1;
    PyObject *args = NULL, *kwargs = NULL, *res = NULL;
    for (; made < nin; made++)
        if (!(arrs[made] = probe_array(ins[made].dtype, ins[made].ndim, ins[made].shape))) goto done;
    if (!(args = nd_xj_map_template(tmpl, placeholder_leaf, arrs))) goto done;
    if (kw && !(kwargs = PyDict_Copy(kw))) goto done;
    if (!(res = PyObject_Call(fn, args, kwargs))) goto done;
    for (int k = 0; k < nout; k++) {
        PyObject *item = (nout > 1 || PyTuple_Check(res)) ? PySequence_GetItem(res, k) : res;
        if (!item) goto done;
        if (item != res) {
            PyObject *arr = PyArray_FROM_O(item);
            Py_DECREF(item);
            if (!arr) goto done;
            out_dtype[k] = PyArray_TYPE((PyArrayObject *)arr);
            Py_DECREF(arr);
        } else {
            PyObject *arr = PyArray_FROM_O(res);
            if (!arr) goto done;
            out_dtype[k] = PyArray_TYPE((PyArrayObject *)arr);
            Py_DECREF(arr);
        }
        if (!nd_shim_dtype_ok(out_dtype[k])) {
            nd_shim_unsupported("an extern result of a dtype numdyn does not trace");
            goto done;
        }
    }
    *restype = (PyObject *)Py_TYPE(res);
    Py_INCREF(*restype);
    rc = 0;
    if (cacheable) {
        if (nprobes == capprobes) {
            int ncap = capprobes ? capprobes * 2 : 64;
            probe_entry *np_ = PyMem_Realloc(probes, sizeof(probe_entry) * (size_t)ncap);
            if (!np_) goto done; /* no cache entry: still a correct answer */
            probes = np_;
            capprobes = ncap;
        }
        probe_entry *e = &probes[nprobes++];
        memset(e, 0, sizeof(*e));
        e->fn = fn;
        e->nin = nin;
        for (int k = 0; k < nin; k++) { e->in_dtype[k] = ins[k].dtype; e->in_ndim[k] = ins[k].ndim; }
        e->tmpl_hash = th;
        e->kw_hash = kh;
        e->nout = nout;
        memcpy(e->out_dtype, out_dtype, sizeof(int) * (size_t)nout);
        e->restype = *restype;
        Py_INCREF(e->restype);
    }
done:
    for (int k = 0; k < made; k++) Py_DECREF(arrs[k]);
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    Py_XDECREF(res);
    return rc;
}

/* --------------------------------------------------------- extern builder */

typedef struct {
    int nout;     /* number of result arrays */
    int tuple;    /* NumPy returns a tuple (or namedtuple) of them */
    int scalar0d; /* 0-d results are NumPy scalars (np.dot, det...) */
    int dtype[4]; /* -1: ask the probe */
    int ndim[4];
    npy_intp shape[4][ND_MAXDIMS];
} ext_out;

static void ext_init(ext_out *o, int nout, int tuple, int scalar0d)
{
    memset(o, 0, sizeof(*o));
    o->nout = nout;
    o->tuple = tuple;
    o->scalar0d = scalar0d;
    for (int k = 0; k < 4; k++) o->dtype[k] = -1;
}

static void ext_shape(ext_out *o, int k, int ndim, const npy_intp *shape)
{
    o->ndim[k] = ndim;
    if (ndim) memcpy(o->shape[k], shape, sizeof(npy_intp) * (size_t)ndim);
}

/* one array result (not a tuple) of the given shape */
static void ext_init1(ext_out *o, int scalar0d, int ndim, const npy_intp *shape)
{
    ext_init(o, 1, 0, scalar0d);
    ext_shape(o, 0, ndim, shape);
}

/* Nodes for fn(*tmpl, **kw) on ins; the result NumPy would return. */
static PyObject *ext_build(nd_trace *t, PyObject *fn, PyObject *tmpl, PyObject *kw, int nin,
                           const nd_xj_arr *ins, ext_out *o)
{
    for (int k = 0; k < o->nout; k++)
        if (o->ndim[k] > ND_MAXDIMS || o->ndim[k] < 0)
            return nd_shim_unsupported("an extern result above rank %d", ND_MAXDIMS);
    PyObject *restype = NULL;
    int need = 0;
    for (int k = 0; k < o->nout; k++) need |= o->dtype[k] < 0;
    if (need || o->tuple) {
        int dts[4];
        if (probe(fn, tmpl, kw, nin, ins, o->nout, dts, &restype) < 0) return NULL;
        for (int k = 0; k < o->nout; k++) if (o->dtype[k] < 0) o->dtype[k] = dts[k];
    }
    nd_id ids[ND_SHIM_MAXARGS];
    for (int k = 0; k < nin; k++) ids[k] = ins[k].id;
    PyObject *items[4] = {NULL, NULL, NULL, NULL};
    for (int k = 0; k < o->nout; k++) {
        nd_id id = nd_shim_node_extern(t, fn, tmpl, kw, nin, ids, o->tuple ? k : -1,
                                       o->dtype[k], o->ndim[k], o->shape[k]);
        items[k] = id == ND_NONE ? NULL : nd_shim_wrap(t, id, o->scalar0d && o->ndim[k] == 0);
        if (!items[k]) {
            for (int j = 0; j < k; j++) Py_DECREF(items[j]);
            Py_XDECREF(restype);
            return NULL;
        }
    }
    if (!o->tuple) { Py_XDECREF(restype); return items[0]; }
    PyObject *tup = PyTuple_New(o->nout), *r = tup;
    if (!tup) {
        for (int j = 0; j < o->nout; j++) Py_DECREF(items[j]);
        Py_XDECREF(restype);
        return NULL;
    }
    for (int j = 0; j < o->nout; j++) PyTuple_SET_ITEM(tup, j, items[j]);
    /* NumPy's namedtuples (QRResult, EighResult, SVDResult...) */
    if (restype && restype != (PyObject *)&PyTuple_Type && PyType_Check(restype) &&
        PyType_IsSubtype((PyTypeObject *)restype, &PyTuple_Type)) {
        r = PyObject_CallObject(restype, tup);
        Py_DECREF(tup);
    }
    Py_XDECREF(restype);
    return r;
}

/* call fn as NumPy would, with a simple positional template */
static PyObject *ext_simple(nd_trace *t, const char *path, int nin, const nd_xj_arr *ins,
                            int nextra, PyObject *const *extra, PyObject *kw, ext_out *o)
{
    PyObject *fn = nd_xj_np_attr(path);
    if (!fn) return NULL;
    PyObject *tmpl = nd_xj_tmpl(nin, nextra, extra);
    PyObject *r = tmpl ? ext_build(t, fn, tmpl, kw, nin, ins, o) : NULL;
    Py_XDECREF(tmpl);
    Py_DECREF(fn);
    return r;
}

/* any of argv[from..to) given -> not modelled */
static int given(PyObject **argv, int from, int to)
{
    for (int k = from; k < to; k++) if (argv[k]) return 1;
    return 0;
}

/* broadcast two batch shapes; 0 ok, 1 mismatch (no exception) */
static int batch_broadcast(int n1, const npy_intp *s1, int n2, const npy_intp *s2, int *nd,
                           npy_intp *out)
{
    int nds[2] = {n1, n2};
    const npy_intp *shs[2] = {s1, s2};
    if (nd_shim_broadcast(2, nds, shs, nd, out) < 0) { PyErr_Clear(); return 1; }
    return 0;
}

/* ------------------------------------------------------------- products */

/* sum(a * b) over two equal-length vectors as fused graph ops (conj_a:
 * vdot's conjugated first operand). Same dtype as np.dot: the multiply's
 * NEP-50 result; float16 accumulates in float32 like NumPy's dot. */
static PyObject *vector_dot(nd_trace *t, const nd_xj_arr *a0, const nd_xj_arr *b0, int conj_a)
{
    nd_xj_arr a = *a0, b = *b0;
    npy_intp n = nd_xj_size(a.ndim, a.shape);
    if (nd_xj_reshape(t, &a, 1, &n) < 0 || nd_xj_reshape(t, &b, 1, &n) < 0) return NULL;
    if (conj_a && PyTypeNum_ISCOMPLEX(a.dtype)) {
        int loop[1] = {a.dtype};
        nd_id in[1] = {a.id};
        a.id = nd_shim_node_ufunc(t, ND_UF_CONJUGATE, in, loop, a.dtype, 0);
        if (a.id == ND_NONE) return NULL;
    }
    int dts[2] = {a.dtype, b.dtype}, weak[2] = {0, 0}, loop[2], od;
    PyObject *sv[2] = {NULL, NULL};
    if (nd_shim_resolve_ufunc(ND_UF_MULTIPLY, 2, dts, weak, sv, loop, &od) < 0) return NULL;
    nd_id in[2] = {a.id, b.id};
    nd_id p = nd_shim_node_ufunc(t, ND_UF_MULTIPLY, in, loop, od, 0);
    if (p == ND_NONE) return NULL;
    int acc = od == NPY_HALF ? NPY_FLOAT : od;
    nd_id r = nd_shim_node_reduce(t, ND_UF_ADD, p, 1, 0, acc, od, ND_NONE);
    return nd_shim_wrap(t, r, 1);
}

#define P_MATMUL "x1,x2|out;casting,order,dtype,subok,signature,axes,axis,keepdims"

static PyObject *matmul_impl(nd_trace *t, PyObject **argv)
{
    if (given(argv, 3, 10)) return nd_shim_unsupported("numpy.matmul with dtype/order/axes arguments");
    nd_xj_arr in[2];
    if (nd_xj_array2(t, argv, in)) return NULL;
    const nd_xj_arr *a = &in[0], *b = &in[1];
    if (a->ndim == 0 || b->ndim == 0) return nd_xj_numpy_error("matmul", P_MATMUL, argv);
    if (a->ndim == 1 && b->ndim == 1 && a->shape[0] == b->shape[0] && (!argv[2] || argv[2] == Py_None))
        return vector_dot(t, a, b, 0);
    npy_intp ka = a->shape[a->ndim - 1], kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    int nd;
    npy_intp sh[ND_MAXDIMS + 2];
    if (ka != kb ||
        batch_broadcast(a->ndim > 2 ? a->ndim - 2 : 0, a->shape, b->ndim > 2 ? b->ndim - 2 : 0,
                        b->shape, &nd, sh))
        return nd_xj_numpy_error("matmul", P_MATMUL, argv);
    if (a->ndim >= 2) sh[nd++] = a->shape[a->ndim - 2];
    if (b->ndim >= 2) sh[nd++] = b->shape[b->ndim - 1];
    ext_out o;
    ext_init1(&o, 1, nd, sh);
    NPY_CASTING casting;
    if (nd_shim_casting_arg(argv[3], NPY_SAME_KIND_CASTING, &casting) < 0) return NULL;
    PyObject *r = ext_simple(t, "matmul", 2, in, 0, NULL, NULL, &o);
    if (!r || !argv[2] || argv[2] == Py_None) return r;
    PyObject *out = argv[2];
    if (PyTuple_Check(out) && PyTuple_GET_SIZE(out) == 1) out = PyTuple_GET_ITEM(out, 0);
    {
        /* out must have the result's exact shape and accept its dtype */
        int ok = nd_proxy_check(out) || PyArray_Check(out);
        int ond = ok ? (nd_proxy_check(out) ? nd_proxy_ndim(out) : PyArray_NDIM((PyArrayObject *)out)) : 0;
        const npy_intp *osh = ok ? (nd_proxy_check(out) ? nd_proxy_shape(out)
                                                       : PyArray_DIMS((PyArrayObject *)out)) : NULL;
        int odt = ok ? (nd_proxy_check(out) ? nd_proxy_dtype(out) : PyArray_TYPE((PyArrayObject *)out)) : 0;
        ok = ok && ond == nd && memcmp(osh, sh, sizeof(npy_intp) * (size_t)nd) == 0;
        if (ok) {
            PyArray_Descr *f = PyArray_DescrFromType(nd_proxy_dtype(r)), *d = PyArray_DescrFromType(odt);
            ok = f && d && PyArray_CanCastTypeTo(f, d, casting);
            Py_XDECREF(f);
            Py_XDECREF(d);
        }
        if (!ok) {
            Py_DECREF(r);
            return nd_xj_numpy_error("matmul", P_MATMUL, argv);
        }
    }
    nd_id v = nd_proxy_read(r);
    Py_DECREF(r);
    if (v == ND_NONE || nd_shim_store_out(t, out, v, "matmul", casting) < 0) return NULL;
    Py_INCREF(out);
    return out;
}

/* dot and inner: vectors as a fused sum of products, a 0-d operand scales
 * the other, else a's last dim contracts with b's dim bk (dot: b's
 * second-to-last, or its only one; inner: b's last). */
static PyObject *dot_like(nd_trace *t, PyObject **argv, const char *path, const char *P, int inner)
{
    nd_xj_arr in[2];
    if (nd_xj_array2(t, argv, in)) return NULL;
    const nd_xj_arr *a = &in[0], *b = &in[1];
    npy_intp sh[2 * ND_MAXDIMS];
    int nd = 0;
    if (a->ndim == 1 && b->ndim == 1 && a->shape[0] == b->shape[0])
        return vector_dot(t, a, b, 0);
    if (a->ndim == 0 || b->ndim == 0) {
        const nd_xj_arr *o = a->ndim == 0 ? b : a;
        nd = o->ndim;
        memcpy(sh, o->shape, sizeof(npy_intp) * (size_t)nd);
    } else {
        int bk = inner || b->ndim == 1 ? b->ndim - 1 : b->ndim - 2;
        if (a->shape[a->ndim - 1] != b->shape[bk]) return nd_xj_numpy_error(path, P, argv);
        for (int d = 0; d < a->ndim - 1; d++) sh[nd++] = a->shape[d];
        for (int d = 0; d < b->ndim; d++) if (d != bk) sh[nd++] = b->shape[d];
    }
    if (nd > ND_MAXDIMS) return nd_shim_unsupported("numpy.%s result above rank 16", path);
    ext_out o;
    ext_init1(&o, 1, nd, sh);
    return ext_simple(t, path, 2, in, 0, NULL, NULL, &o);
}

static PyObject *dot_impl(nd_trace *t, PyObject **argv)
{
    if (argv[2] && argv[2] != Py_None) return nd_shim_unsupported("numpy.dot with out=");
    return dot_like(t, argv, "dot", "a,b|out", 0);
}

static PyObject *inner_impl(nd_trace *t, PyObject **argv) { return dot_like(t, argv, "inner", "a,b", 1); }

static PyObject *vdot_impl(nd_trace *t, PyObject **argv)
{
    nd_xj_arr in[2];
    if (nd_xj_array2(t, argv, in)) return NULL;
    if (nd_xj_size(in[0].ndim, in[0].shape) != nd_xj_size(in[1].ndim, in[1].shape))
        return nd_xj_numpy_error("vdot", "a,b", argv);
    return vector_dot(t, &in[0], &in[1], 1);
}

/* axes argument of tensordot -> lists; 0 ok, 1 not modelled/invalid */
static int axes_list(PyObject *o, int ndim, int *ax, int *n)
{
    npy_intp v[ND_MAXDIMS];
    int r = nd_xj_int_list(o, 1, v, ND_MAXDIMS, n);
    if (r < 0) PyErr_Clear();
    if (r) return 1;
    for (int i = 0; i < *n; i++) {
        if (v[i] < -ndim || v[i] >= ndim) return 1;
        ax[i] = (int)(v[i] < 0 ? v[i] + ndim : v[i]);
    }
    return 0;
}

static PyObject *tensordot_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a,b|axes";
    nd_xj_arr in[2];
    if (nd_xj_array2(t, argv, in)) return NULL;
    const nd_xj_arr *a = &in[0], *b = &in[1];
    int axa[ND_MAXDIMS], axb[ND_MAXDIMS], na = 0, nb = 0;
    PyObject *axes = argv[2];
    if (!axes || PyIndex_Check(axes)) {
        long n = axes ? PyLong_AsLong(axes) : 2;
        if (n == -1 && PyErr_Occurred()) return NULL;
        if (n < 0 || n > a->ndim || n > b->ndim) return nd_xj_numpy_error("tensordot", P, argv);
        for (long i = 0; i < n; i++) { axa[i] = (int)(a->ndim - n + i); axb[i] = (int)i; }
        na = nb = (int)n;
    } else {
        PyObject *seq = PySequence_Fast(axes, "");
        if (!seq) { PyErr_Clear(); return nd_xj_numpy_error("tensordot", P, argv); }
        int bad = PySequence_Fast_GET_SIZE(seq) != 2 ||
                  axes_list(PySequence_Fast_GET_ITEM(seq, 0), a->ndim, axa, &na) ||
                  axes_list(PySequence_Fast_GET_ITEM(seq, 1), b->ndim, axb, &nb);
        Py_DECREF(seq);
        if (bad || na != nb) return nd_xj_numpy_error("tensordot", P, argv);
    }
    int used_a[ND_MAXDIMS] = {0}, used_b[ND_MAXDIMS] = {0};
    for (int i = 0; i < na; i++) {
        if (a->shape[axa[i]] != b->shape[axb[i]] || used_a[axa[i]] || used_b[axb[i]])
            return nd_xj_numpy_error("tensordot", P, argv);
        used_a[axa[i]] = used_b[axb[i]] = 1;
    }
    npy_intp sh[2 * ND_MAXDIMS];
    int nd = 0;
    for (int d = 0; d < a->ndim; d++) if (!used_a[d]) sh[nd++] = a->shape[d];
    for (int d = 0; d < b->ndim; d++) if (!used_b[d]) sh[nd++] = b->shape[d];
    if (nd > ND_MAXDIMS) return nd_shim_unsupported("numpy.tensordot result above rank 16");
    ext_out o;
    ext_init1(&o, 0, nd, sh); /* tensordot returns a 0-d array, not a scalar */
    /* the axes as canonical tuples: hashable and independent of list
     * identity, so equal calls share the graph's structure */
    PyObject *ta = PyTuple_New(na), *tb = PyTuple_New(nb);
    PyObject *pair = NULL, *r = NULL;
    if (!ta || !tb) goto done;
    for (int i = 0; i < na; i++) {
        PyObject *x = PyLong_FromLong(axa[i]), *y = x ? PyLong_FromLong(axb[i]) : NULL;
        if (!y) { Py_XDECREF(x); goto done; }
        PyTuple_SET_ITEM(ta, i, x);
        PyTuple_SET_ITEM(tb, i, y);
    }
    pair = PyTuple_Pack(2, ta, tb);
    if (!pair) goto done;
    r = ext_simple(t, "tensordot", 2, in, 1, &pair, NULL, &o);
done:
    Py_XDECREF(ta);
    Py_XDECREF(tb);
    Py_XDECREF(pair);
    return r;
}

/* ---------------------------------------------------------------- einsum */

#define EIN_MAXL 64

typedef struct {
    int nop;
    int nl[ND_SHIM_MAXARGS];             /* labels per operand (ellipsis expanded) */
    int lab[ND_SHIM_MAXARGS][ND_MAXDIMS]; /* label ids; ellipsis dims get ids >= 52 */
    int nout;
    int out[ND_MAXDIMS];
    npy_intp size[EIN_MAXL];
    int count[EIN_MAXL];
} einspec;

static int lab_id(char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return 26 + c - 'a';
    return -1;
}

/* Parse a subscripts string against the operands. 0 ok, 1 not modelled
 * (or invalid: the caller lets NumPy decide). */
static int ein_parse(const char *s, int nop, const nd_xj_arr *ops, einspec *e)
{
    memset(e, 0, sizeof(*e));
    e->nop = nop;
    for (int l = 0; l < EIN_MAXL; l++) e->size[l] = -1;
    const char *arrow = strstr(s, "->");
    int ell_nd = 0;
    npy_intp ell_shape[ND_MAXDIMS];
    int op = 0;
    const char *p = s;
    while (op < nop) {
        int raw[ND_MAXDIMS + 1], nraw = 0, ell_at = -1;
        while (*p == ' ') p++;
        while (*p && *p != ',' && (!arrow || p < arrow)) {
            if (*p == ' ') { p++; continue; }
            if (p[0] == '.' && p[1] == '.' && p[2] == '.') {
                if (ell_at >= 0) return 1;
                ell_at = nraw;
                p += 3;
                continue;
            }
            int id = lab_id(*p);
            if (id < 0 || nraw >= ND_MAXDIMS) return 1;
            raw[nraw++] = id;
            p++;
        }
        const nd_xj_arr *a = &ops[op];
        int nell = a->ndim - nraw;
        if (nell < 0 || nell > 12 || (ell_at < 0 && nell != 0)) return 1;
        /* ellipsis dims broadcast right-aligned across operands */
        if (ell_at >= 0) {
            const npy_intp *es = a->shape + ell_at;
            int nds[2] = {ell_nd, nell};
            const npy_intp *shs[2] = {ell_shape, es};
            int rnd;
            npy_intp rs[ND_MAXDIMS];
            if (nd_shim_broadcast(2, nds, shs, &rnd, rs) < 0) { PyErr_Clear(); return 1; }
            ell_nd = rnd;
            memcpy(ell_shape, rs, sizeof(npy_intp) * (size_t)rnd);
        }
        int k = 0;
        for (int i = 0; i <= nraw; i++) {
            if (i == ell_at)
                for (int j = 0; j < nell; j++) e->lab[op][k++] = 64 - nell + j;
            if (i < nraw) e->lab[op][k++] = raw[i];
        }
        e->nl[op] = k;
        op++;
        if (*p == ',') p++;
        else break;
    }
    if (op != nop) return 1;
    if (arrow ? p != arrow : *p) return 1;
    /* ellipsis labels: 52 + 12 - nell + j: right-aligned ids 52..63 */
    if (ell_nd > 12) return 1;
    for (int o = 0; o < nop; o++)
        for (int k = 0; k < e->nl[o]; k++) {
            int l = e->lab[o][k];
            npy_intp sz = ops[o].shape[k];
            if (l >= 52) {
                /* per-operand broadcasting of ellipsis dims */
                npy_intp full = ell_shape[ell_nd - (64 - l)];
                if (sz != full && sz != 1) return 1;
                e->size[l] = full;
            } else {
                if (e->size[l] >= 0 && e->size[l] != sz) return 1;
                e->size[l] = sz;
            }
            e->count[l]++;
        }
    if (arrow) {
        const char *q = arrow + 2;
        int seen_ell = 0;
        while (*q) {
            if (*q == ' ') { q++; continue; }
            if (q[0] == '.' && q[1] == '.' && q[2] == '.') {
                if (seen_ell) return 1;
                seen_ell = 1;
                for (int j = 0; j < ell_nd; j++) e->out[e->nout++] = 64 - ell_nd + j;
                q += 3;
                continue;
            }
            int id = lab_id(*q);
            if (id < 0 || e->size[id] < 0 || e->nout >= ND_MAXDIMS) return 1;
            for (int j = 0; j < e->nout; j++) if (e->out[j] == id) return 1;
            e->out[e->nout++] = id;
            q++;
        }
        if (ell_nd && !seen_ell) {
            /* ellipsis dims must appear in an explicit output unless size 1 */
            for (int j = 0; j < ell_nd; j++) if (ell_shape[j] != 1) return 1;
        }
    } else {
        for (int j = 0; j < ell_nd; j++) e->out[e->nout++] = 64 - ell_nd + j;
        for (int l = 0; l < 52; l++)
            if (e->count[l] == 1) {
                if (e->nout >= ND_MAXDIMS) return 1;
                e->out[e->nout++] = l;
            }
    }
    return 0;
}

/* Pointwise product + reduction when it never builds anything larger than
 * the largest operand (no contraction that BLAS would do better). */
/* NumPy's c_einsum allocates the output through its iterator over every
 * label (order 'K'): the output's memory order is the labels' iterator
 * order, restricted to the output labels. */
static void ein_layout(PyObject *res, const einspec *e, PyObject *const *objs, const int *L, int nL)
{
    if (!res || e->nout < 2) return;
    npy_intp st[ND_SHIM_MAXARGS][ND_MAXDIMS];
    int m = 0, perm[ND_MAXDIMS], out[ND_MAXDIMS], n = 0;
    for (int o = 0; o < e->nop; o++) {
        npy_intp ms[ND_MAXDIMS];
        int nd;
        const npy_intp *sh;
        if (nd_operand_memory_strides(objs[o], &nd, &sh, ms) || nd != e->nl[o]) continue;
        for (int i = 0; i < nL; i++) {
            st[m][i] = 0;
            for (int k = 0; k < nd; k++)
                if (L[i] == e->lab[o][k]) st[m][i] += ms[k];
        }
        m++;
    }
    nd_korder(m, nL, (const npy_intp (*)[ND_MAXDIMS])st, 1, perm);
    for (int i = 0; i < nL; i++) if (perm[i] < e->nout) out[n++] = perm[i];
    if (n == e->nout) nd_proxy_set_perm(res, out);
}

static PyObject *ein_fused(nd_trace *t, const einspec *e, const nd_xj_arr *ops, int dtype,
                           PyObject *const *objs)
{
    int L[EIN_MAXL], nL = 0, in_out[EIN_MAXL] = {0};
    for (int j = 0; j < e->nout; j++) { L[nL++] = e->out[j]; in_out[e->out[j]] = 1; }
    for (int l = 0; l < EIN_MAXL; l++)
        if (e->count[l] && !in_out[l]) L[nL++] = l;
    if (nL > ND_MAXDIMS) return nd_shim_unsupported("einsum over more than 16 labels");
    npy_intp shape[ND_MAXDIMS];
    for (int i = 0; i < nL; i++) shape[i] = e->size[L[i]];
    nd_id prod = ND_NONE;
    int pdt = -1;
    for (int o = 0; o < e->nop; o++) {
        npy_intp cs[ND_MAXDIMS], st[ND_MAXDIMS] = {0};
        nd_xj_cstrides(ops[o].ndim, ops[o].shape, cs);
        for (int k = 0; k < e->nl[o]; k++)
            for (int i = 0; i < nL; i++)
                if (L[i] == e->lab[o][k] && ops[o].shape[k] != 1) st[i] += cs[k];
        nd_id v = nd_shim_node_view(t, ops[o].id, nL, shape, 0, st);
        if (v == ND_NONE) return NULL;
        if (prod == ND_NONE) { prod = v; pdt = ops[o].dtype; continue; }
        int dts[2] = {pdt, ops[o].dtype}, weak[2] = {0, 0}, loop[2], od;
        PyObject *sv[2] = {NULL, NULL};
        if (nd_shim_resolve_ufunc(ND_UF_MULTIPLY, 2, dts, weak, sv, loop, &od) < 0) return NULL;
        nd_id in[2] = {prod, v};
        prod = nd_shim_node_ufunc(t, ND_UF_MULTIPLY, in, loop, od, 0);
        if (prod == ND_NONE) return NULL;
        pdt = od;
    }
    prod = nd_shim_node_cast(t, prod, dtype);
    if (prod == ND_NONE) return NULL;
    if (nL > e->nout) {
        uint64_t mask = 0;
        for (int i = e->nout; i < nL; i++) mask |= 1ULL << i;
        prod = nd_shim_node_reduce(t, ND_UF_ADD, prod, mask, 0, dtype, dtype, ND_NONE);
        if (prod == ND_NONE) return NULL;
    }
    PyObject *res = nd_shim_wrap(t, prod, e->nout == 0);
    ein_layout(res, e, objs, L, nL);
    return res;
}

static PyObject *einsum_impl(nd_trace *t, PyObject **argv)
{
    /* argv: operands (tuple), out, optimize, dtype, order, casting */
    PyObject *ops = argv[0];
    if (!ops || PyTuple_GET_SIZE(ops) < 2 || !PyUnicode_Check(PyTuple_GET_ITEM(ops, 0)))
        return nd_shim_unsupported("numpy.einsum in sublist form");
    if (given(argv, 1, 2) || given(argv, 3, 6))
        return nd_shim_unsupported("numpy.einsum with out/dtype/order/casting");
    const char *subs = PyUnicode_AsUTF8(PyTuple_GET_ITEM(ops, 0));
    if (!subs) return NULL;
    int nop = (int)PyTuple_GET_SIZE(ops) - 1;
    if (nop > ND_SHIM_MAXARGS) return nd_shim_unsupported("numpy.einsum with many operands");
    nd_xj_arr in[ND_SHIM_MAXARGS];
    for (int k = 0; k < nop; k++)
        if (nd_xj_array(t, PyTuple_GET_ITEM(ops, k + 1), &in[k])) return NULL;
    einspec e;
    if (ein_parse(subs, nop, in, &e))
        return nd_xj_numpy_error("einsum", "*operands|;out,optimize,dtype,order,casting", argv);
    /* result dtype: NumPy's (bool stays bool, int8 stays int8) */
    int dts[ND_SHIM_MAXARGS], weak[ND_SHIM_MAXARGS] = {0}, dtype;
    for (int k = 0; k < nop; k++) dts[k] = in[k].dtype;
    if (nd_shim_result_type(nop, dts, weak, &dtype) < 0) return NULL;
    /* fused when the full label space is no larger than some operand's */
    int nlabels = 0;
    for (int l = 0; l < EIN_MAXL; l++) nlabels += e.count[l] > 0;
    int fusable = 0;
    for (int k = 0; k < nop; k++) {
        int distinct = 0, seen[EIN_MAXL] = {0};
        for (int j = 0; j < e.nl[k]; j++)
            if (!seen[e.lab[k][j]]) { seen[e.lab[k][j]] = 1; distinct++; }
        if (distinct == nlabels) fusable = 1;
    }
    int has_sum = 0;
    {
        int in_out[EIN_MAXL] = {0};
        for (int j = 0; j < e.nout; j++) in_out[e.out[j]] = 1;
        for (int l = 0; l < EIN_MAXL; l++) has_sum |= e.count[l] && !in_out[l];
    }
    PyObject *op0 = PyTuple_GET_ITEM(ops, 1);
    if (nop == 1 && !has_sum && nd_proxy_check(op0) && !nd_proxy_is_scalar(op0)) {
        /* NumPy returns a (writeable) view for a pure relabeling: a
         * transpose or diagonal of the operand */
        npy_intp cs[ND_MAXDIMS], st[ND_MAXDIMS] = {0}, sh[ND_MAXDIMS];
        nd_xj_cstrides(in[0].ndim, in[0].shape, cs);
        for (int j = 0; j < e.nout; j++) {
            sh[j] = e.size[e.out[j]];
            for (int k = 0; k < e.nl[0]; k++)
                if (e.lab[0][k] == e.out[j] && in[0].shape[k] != 1) st[j] += cs[k];
        }
        return nd_proxy_view(op0, e.nout, sh, 0, st);
    }
    if ((fusable || !has_sum) && nop <= 3)
        return ein_fused(t, &e, in, dtype, &PyTuple_GET_ITEM(ops, 1));
    npy_intp sh[ND_MAXDIMS];
    for (int j = 0; j < e.nout; j++) sh[j] = e.size[e.out[j]];
    ext_out o;
    ext_init1(&o, 1, e.nout, sh);
    o.dtype[0] = dtype;
    PyObject *fn = nd_xj_np_attr("einsum");
    if (!fn) return NULL;
    PyObject *tmpl = PyTuple_New(nop + 1), *kw = NULL, *r = NULL;
    if (!tmpl) goto done;
    Py_INCREF(PyTuple_GET_ITEM(ops, 0));
    PyTuple_SET_ITEM(tmpl, 0, PyTuple_GET_ITEM(ops, 0));
    for (int k = 0; k < nop; k++) {
        PyObject *ph = nd_extern_placeholder(k);
        if (!ph) goto done;
        PyTuple_SET_ITEM(tmpl, k + 1, ph);
    }
    if (argv[2]) {
        if (!(kw = PyDict_New()) || PyDict_SetItemString(kw, "optimize", argv[2]) < 0) goto done;
    }
    r = ext_build(t, fn, tmpl, kw, nop, in, &o);
done:
    Py_DECREF(fn);
    Py_XDECREF(tmpl);
    Py_XDECREF(kw);
    return r;
}

/* ---------------------------------------------------------------- linalg */

static int is_square_stack(const nd_xj_arr *a)
{
    return a->ndim >= 2 && a->shape[a->ndim - 1] == a->shape[a->ndim - 2];
}

/* argv[0] as a stack of square matrices, else NumPy's own error for
 * numpy.<path>(argv). 0, or -1: return NULL (exception or reason set). */
static int square_arg(nd_trace *t, PyObject **argv, const char *path, const char *P, nd_xj_arr *a)
{
    if (nd_xj_array(t, argv[0], a)) return -1;
    if (!is_square_stack(a)) { nd_xj_numpy_error(path, P, argv); return -1; }
    return 0;
}

#define LINALG_SIMPLE(NAME, PATH, PARAMS, SQUARE, DROP, NEXTRA)                        \
    static PyObject *NAME(nd_trace *t, PyObject **argv)                                 \
    {                                                                                   \
        nd_xj_arr a;                                                                    \
        if (nd_xj_array(t, argv[0], &a)) return NULL;                                   \
        if (a.ndim < 2 || ((SQUARE) && !is_square_stack(&a)))                           \
            return nd_xj_numpy_error(PATH, PARAMS, argv);                               \
        ext_out o;                                                                      \
        ext_init1(&o, 1, a.ndim - (DROP), a.shape);                                     \
        return ext_simple(t, PATH, 1, &a, NEXTRA, argv + 1, NULL, &o);                  \
    }

LINALG_SIMPLE(inv_impl, "linalg.inv", "a", 1, 0, 0)
LINALG_SIMPLE(det_impl, "linalg.det", "a", 1, 2, 0)

static PyObject *cholesky_impl(nd_trace *t, PyObject **argv)
{
    nd_xj_arr a;
    if (square_arg(t, argv, "linalg.cholesky", "a|;upper", &a)) return NULL;
    ext_out o;
    ext_init1(&o, 0, a.ndim, a.shape);
    PyObject *kw = NULL, *r;
    if (argv[1] && !(kw = Py_BuildValue("{sO}", "upper", argv[1]))) return NULL;
    r = ext_simple(t, "linalg.cholesky", 1, &a, 0, NULL, kw, &o);
    Py_XDECREF(kw);
    return r;
}

static PyObject *matrix_power_impl(nd_trace *t, PyObject **argv)
{
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    if (!is_square_stack(&a) || !PyIndex_Check(argv[1]))
        return nd_xj_numpy_error("linalg.matrix_power", "a,n", argv);
    ext_out o;
    ext_init1(&o, 0, a.ndim, a.shape);
    return ext_simple(t, "linalg.matrix_power", 1, &a, 1, argv + 1, NULL, &o);
}

static PyObject *slogdet_impl(nd_trace *t, PyObject **argv)
{
    nd_xj_arr a;
    if (square_arg(t, argv, "linalg.slogdet", "a", &a)) return NULL;
    ext_out o;
    ext_init(&o, 2, 1, 1);
    ext_shape(&o, 0, a.ndim - 2, a.shape);
    ext_shape(&o, 1, a.ndim - 2, a.shape);
    return ext_simple(t, "linalg.slogdet", 1, &a, 0, NULL, NULL, &o);
}

static PyObject *solve_impl(nd_trace *t, PyObject **argv)
{
    nd_xj_arr in[2];
    if (nd_xj_array2(t, argv, in)) return NULL;
    const nd_xj_arr *a = &in[0], *b = &in[1];
    if (!is_square_stack(a) || b->ndim == 0) return nd_xj_numpy_error("linalg.solve", "a,b", argv);
    npy_intp m = a->shape[a->ndim - 1], sh[ND_MAXDIMS + 2];
    int nd;
    if (b->ndim == 1) {
        if (b->shape[0] != m) return nd_xj_numpy_error("linalg.solve", "a,b", argv);
        nd = a->ndim - 1;
        memcpy(sh, a->shape, sizeof(npy_intp) * (size_t)nd);
    } else {
        if (b->shape[b->ndim - 2] != m ||
            batch_broadcast(a->ndim - 2, a->shape, b->ndim - 2, b->shape, &nd, sh))
            return nd_xj_numpy_error("linalg.solve", "a,b", argv);
        sh[nd++] = m;
        sh[nd++] = b->shape[b->ndim - 1];
    }
    ext_out o;
    ext_init1(&o, 0, nd, sh);
    return ext_simple(t, "linalg.solve", 2, in, 0, NULL, NULL, &o);
}

static PyObject *qr_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a|mode";
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    if (a.ndim < 2) return nd_xj_numpy_error("linalg.qr", P, argv);
    const char *mode = "reduced";
    if (argv[1]) {
        if (!PyUnicode_Check(argv[1])) return nd_xj_numpy_error("linalg.qr", P, argv);
        mode = PyUnicode_AsUTF8(argv[1]);
        if (!mode) return NULL;
    }
    int nd = a.ndim;
    npy_intp M = a.shape[nd - 2], N = a.shape[nd - 1], K = M < N ? M : N;
    npy_intp s0[ND_MAXDIMS], s1[ND_MAXDIMS];
    memcpy(s0, a.shape, sizeof(s0));
    memcpy(s1, a.shape, sizeof(s1));
    ext_out o;
    if (strcmp(mode, "reduced") == 0 || strcmp(mode, "complete") == 0) {
        npy_intp c = strcmp(mode, "reduced") == 0 ? K : M;
        s0[nd - 1] = c;       /* Q (..., M, c) */
        s1[nd - 2] = c;       /* R (..., c, N) */
        ext_init(&o, 2, 1, 0);
        ext_shape(&o, 0, nd, s0);
        ext_shape(&o, 1, nd, s1);
    } else if (strcmp(mode, "r") == 0) {
        s1[nd - 2] = K;
        ext_init1(&o, 0, nd, s1);
    } else if (strcmp(mode, "raw") == 0) {
        s0[nd - 2] = N;       /* h (..., N, M) */
        s0[nd - 1] = M;
        s1[nd - 2] = K;       /* tau (..., K) */
        ext_init(&o, 2, 1, 0);
        ext_shape(&o, 0, nd, s0);
        ext_shape(&o, 1, nd - 1, s1);
    } else {
        return nd_xj_numpy_error("linalg.qr", P, argv);
    }
    PyObject *m = PyUnicode_FromString(mode);
    if (!m) return NULL;
    PyObject *r = ext_simple(t, "linalg.qr", 1, &a, 1, &m, NULL, &o);
    Py_DECREF(m);
    return r;
}

static PyObject *eigh_common(nd_trace *t, PyObject **argv, int vectors)
{
    const char *path = vectors ? "linalg.eigh" : "linalg.eigvalsh";
    nd_xj_arr a;
    if (square_arg(t, argv, path, "a|UPLO", &a)) return NULL;
    ext_out o;
    ext_init(&o, vectors ? 2 : 1, vectors, 0);
    ext_shape(&o, 0, a.ndim - 1, a.shape);
    if (vectors) ext_shape(&o, 1, a.ndim, a.shape);
    PyObject *uplo = argv[1] ? (Py_INCREF(argv[1]), argv[1]) : PyUnicode_FromString("L");
    if (!uplo) return NULL;
    PyObject *r = ext_simple(t, path, 1, &a, 1, &uplo, NULL, &o);
    Py_DECREF(uplo);
    return r;
}

static PyObject *eigh_impl(nd_trace *t, PyObject **argv) { return eigh_common(t, argv, 1); }
static PyObject *eigvalsh_impl(nd_trace *t, PyObject **argv) { return eigh_common(t, argv, 0); }

static PyObject *svd_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a|full_matrices,compute_uv,hermitian";
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    if (a.ndim < 2) return nd_xj_numpy_error("linalg.svd", P, argv);
    int full = nd_shim_bool_arg(argv[1], 1), uv = nd_shim_bool_arg(argv[2], 1);
    int herm = nd_shim_bool_arg(argv[3], 0);
    if (full < 0 || uv < 0 || herm < 0) return NULL;
    if (herm && !is_square_stack(&a)) return nd_xj_numpy_error("linalg.svd", P, argv);
    int nd = a.ndim;
    npy_intp M = a.shape[nd - 2], N = a.shape[nd - 1], K = M < N ? M : N;
    npy_intp su[ND_MAXDIMS], ss[ND_MAXDIMS], sv[ND_MAXDIMS];
    memcpy(su, a.shape, sizeof(su));
    memcpy(ss, a.shape, sizeof(ss));
    memcpy(sv, a.shape, sizeof(sv));
    ss[nd - 2] = K;
    ext_out o;
    PyObject *extra[3] = {full ? Py_True : Py_False, uv ? Py_True : Py_False,
                          herm ? Py_True : Py_False};
    if (!uv) {
        ext_init1(&o, 0, nd - 1, ss);
    } else {
        su[nd - 1] = full ? M : K;  /* U (..., M, M|K) */
        sv[nd - 2] = full ? N : K;  /* Vh (..., N|K, N) */
        ext_init(&o, 3, 1, 0);
        ext_shape(&o, 0, nd, su);
        ext_shape(&o, 1, nd - 1, ss);
        ext_shape(&o, 2, nd, sv);
    }
    return ext_simple(t, "linalg.svd", 1, &a, 3, extra, NULL, &o);
}

static PyObject *pinv_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a|rcond,hermitian;rtol";
    if (argv[1] && nd_proxy_check(argv[1])) return nd_shim_unsupported("numpy.linalg.pinv with a lazy rcond");
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    if (a.ndim < 2) return nd_xj_numpy_error("linalg.pinv", P, argv);
    npy_intp sh[ND_MAXDIMS];
    memcpy(sh, a.shape, sizeof(sh));
    sh[a.ndim - 2] = a.shape[a.ndim - 1];
    sh[a.ndim - 1] = a.shape[a.ndim - 2];
    ext_out o;
    ext_init1(&o, 0, a.ndim, sh);
    PyObject *kw = NULL, *r;
    if (argv[3] && !(kw = Py_BuildValue("{sO}", "rtol", argv[3]))) return NULL;
    PyObject *extra[2] = {argv[1], argv[2] ? argv[2] : Py_False};
    r = ext_simple(t, "linalg.pinv", 1, &a, 2, extra, kw, &o);
    Py_XDECREF(kw);
    return r;
}

static PyObject *multi_dot_impl(nd_trace *t, PyObject **argv)
{
    if (argv[1]) return nd_shim_unsupported("numpy.linalg.multi_dot with out=");
    PyObject *seq = PySequence_Fast(argv[0], "arrays");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 2 || n > ND_SHIM_MAXARGS) {
        Py_DECREF(seq);
        return n < 2 ? nd_xj_numpy_error("linalg.multi_dot", "arrays|;out", argv)
                     : nd_shim_unsupported("numpy.linalg.multi_dot of many arrays");
    }
    nd_xj_arr in[ND_SHIM_MAXARGS];
    for (Py_ssize_t i = 0; i < n; i++)
        if (nd_xj_array(t, PySequence_Fast_GET_ITEM(seq, i), &in[i])) { Py_DECREF(seq); return NULL; }
    Py_DECREF(seq);
    /* first may be 1-d (row), last may be 1-d (column), the rest 2-d */
    int ok = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int lo = (i == 0 || i == n - 1) ? 1 : 2;
        ok &= in[i].ndim >= lo && in[i].ndim <= 2;
    }
    for (Py_ssize_t i = 0; ok && i + 1 < n; i++) {
        npy_intp k1 = in[i].shape[in[i].ndim - 1];
        npy_intp k2 = in[i + 1].ndim == 1 ? in[i + 1].shape[0] : in[i + 1].shape[0];
        ok = k1 == k2;
    }
    if (!ok) return nd_xj_numpy_error("linalg.multi_dot", "arrays|;out", argv);
    npy_intp sh[2];
    int nd = 0;
    if (in[0].ndim == 2) sh[nd++] = in[0].shape[0];
    if (in[n - 1].ndim == 2) sh[nd++] = in[n - 1].shape[1];
    ext_out o;
    ext_init1(&o, 1, nd, sh);
    PyObject *fn = nd_xj_np_attr("linalg.multi_dot");
    if (!fn) return NULL;
    PyObject *lst = PyList_New(n), *tmpl = NULL, *r = NULL;
    if (!lst) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *ph = nd_extern_placeholder((int)i);
        if (!ph) goto done;
        PyList_SET_ITEM(lst, i, ph);
    }
    /* a tuple of placeholders: hashable, and multi_dot accepts any sequence */
    PyObject *tl = PyList_AsTuple(lst);
    if (!tl) goto done;
    tmpl = PyTuple_Pack(1, tl);
    Py_DECREF(tl);
    if (tmpl) r = ext_build(t, fn, tmpl, NULL, (int)n, in, &o);
done:
    Py_DECREF(fn);
    Py_XDECREF(lst);
    Py_XDECREF(tmpl);
    return r;
}

/* norm: the common vector/Frobenius forms as fused reductions built from
 * shim ops (so NEP-50 typing and scalar-vs-array results are the shim's);
 * ord=2/-2/'nuc' matrix norms need singular values: extern. */
/* x.<name>(axis=axis, keepdims=keepdims) through the shim: sum/max/min */
static PyObject *red_axis(const char *name, PyObject *x, PyObject *axis, PyObject *keepdims)
{
    PyObject *kw = Py_BuildValue("{sOsO}", "axis", axis ? axis : Py_None, "keepdims",
                                 keepdims ? keepdims : Py_False);
    PyObject *args = PyTuple_New(0);
    PyObject *r = (kw && args) ? nd_shim_method(name, x, args, kw) : NULL;
    Py_XDECREF(kw);
    Py_XDECREF(args);
    return r;
}

static PyObject *sum_axis(PyObject *x, PyObject *axis, PyObject *keepdims)
{
    return red_axis("sum", x, axis, keepdims);
}

static PyObject *norm_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "x|ord,axis,keepdims";
    PyObject *ordo = argv[1] && argv[1] != Py_None ? argv[1] : NULL;
    PyObject *axis = argv[2] && argv[2] != Py_None ? argv[2] : NULL;
    PyObject *keep = argv[3];
    int keepdims = nd_shim_bool_arg(keep, 0);
    if (keepdims < 0) return NULL;
    if (!nd_proxy_check(argv[0])) return nd_shim_unsupported("numpy.linalg.norm of a non-proxy");
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    /* NumPy: non-inexact input is converted to float first */
    PyObject *x;
    int inexact = PyTypeNum_ISFLOAT(a.dtype) || PyTypeNum_ISCOMPLEX(a.dtype);
    if (inexact) x = nd_shim_wrap(t, a.id, 0);
    else x = nd_shim_wrap(t, nd_shim_node_cast(t, a.id, NPY_FLOAT64), 0);
    if (!x) return NULL;
    /* which axes: vector (1) or matrix (2) */
    int naxes;
    if (!axis) naxes = a.ndim;
    else if (PyIndex_Check(axis)) naxes = 1;
    else {
        Py_ssize_t k = PySequence_Check(axis) ? PySequence_Size(axis) : -1;
        if (k < 0) { PyErr_Clear(); Py_DECREF(x); return nd_xj_numpy_error("linalg.norm", P, argv); }
        naxes = (int)k;
    }
    PyObject *res = NULL, *absx = NULL, *tmp = NULL, *axis_obj = axis;
    if (!ordo && !axis) {
        /* sqrt(sum(|x|^2)) over everything; keepdims keeps every dim */
        absx = nd_shim_ufunc1(ND_UF_ABSOLUTE, x);
        tmp = absx ? nd_shim_ufunc2(ND_UF_MULTIPLY, absx, absx) : NULL;
        PyObject *s = tmp ? sum_axis(tmp, NULL, keep ? keep : Py_False) : NULL;
        if (s) { res = nd_shim_ufunc1(ND_UF_SQRT, s); Py_DECREF(s); }
        goto done;
    }
    if (naxes == 1 && (a.ndim >= 1)) {
        if (!axis && a.ndim != 1) goto numpy_err;
        double ord = 2.0;
        int isinf = 0;
        if (ordo) {
            if (!PyFloat_Check(ordo) && !PyLong_Check(ordo)) goto numpy_err;
            ord = PyFloat_AsDouble(ordo);
            if (ord == -1.0 && PyErr_Occurred()) goto done;
            isinf = ord > 1e308 ? 1 : ord < -1e308 ? -1 : 0;
        }
        if (!axis) axis_obj = NULL;
        absx = nd_shim_ufunc1(ND_UF_ABSOLUTE, x);
        if (!absx) goto done;
        if (isinf) {
            res = red_axis(isinf > 0 ? "max" : "min", absx, axis_obj, keep);
        } else if (ord == 0.0) {
            /* count of nonzeros, in x's real float dtype */
            PyObject *z = PyLong_FromLong(0);
            PyObject *ne = z ? nd_shim_ufunc2(ND_UF_NOT_EQUAL, x, z) : NULL;
            Py_XDECREF(z);
            if (ne) {
                nd_id c = nd_proxy_read(ne);
                int rdt = nd_proxy_dtype(absx);
                PyObject *nef = c == ND_NONE ? NULL : nd_shim_wrap(t, nd_shim_node_cast(t, c, rdt), 0);
                Py_DECREF(ne);
                if (nef) { res = sum_axis(nef, axis_obj, keep); Py_DECREF(nef); }
            }
        } else if (ord == 1.0) {
            res = sum_axis(absx, axis_obj, keep);
        } else if (ord == 2.0) {
            tmp = nd_shim_ufunc2(ND_UF_MULTIPLY, absx, absx);
            PyObject *s = tmp ? sum_axis(tmp, axis_obj, keep) : NULL;
            if (s) { res = nd_shim_ufunc1(ND_UF_SQRT, s); Py_DECREF(s); }
        } else {
            tmp = nd_shim_ufunc2(ND_UF_POWER, absx, ordo);
            PyObject *s = tmp ? sum_axis(tmp, axis_obj, keep) : NULL;
            PyObject *inv = s ? PyFloat_FromDouble(1.0 / ord) : NULL;
            if (inv) res = nd_shim_ufunc2(ND_UF_POWER, s, inv);
            Py_XDECREF(s);
            Py_XDECREF(inv);
        }
        goto done;
    }
    if (naxes == 2 && a.ndim >= 2) {
        int fro = !ordo;
        int ax2[2] = {a.ndim - 2, a.ndim - 1};
        if (axis) {
            PyObject *seq = PySequence_Fast(axis, "axis");
            if (!seq) goto done;
            for (int i = 0; i < 2; i++) {
                PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
                long v = PyIndex_Check(e) ? PyLong_AsLong(e) : LONG_MAX;
                if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); goto done; }
                if (v < -a.ndim || v >= a.ndim) { Py_DECREF(seq); goto numpy_err; }
                ax2[i] = (int)(v < 0 ? v + a.ndim : v);
            }
            Py_DECREF(seq);
            if (ax2[0] == ax2[1]) goto numpy_err;
        }
        if (ordo && PyUnicode_Check(ordo)) {
            if (PyUnicode_CompareWithASCIIString(ordo, "fro") == 0 ||
                PyUnicode_CompareWithASCIIString(ordo, "f") == 0) fro = 1;
            else { Py_DECREF(x); goto extern_norm; }
        }
        if (!fro && (PyFloat_Check(ordo) || PyLong_Check(ordo))) {
            /* ord 1/-1: max/min over columns of the column sums; inf/-inf:
             * over rows of the row sums (NumPy's order of reductions) */
            double o = PyFloat_AsDouble(ordo);
            if (o == -1.0 && PyErr_Occurred()) goto done;
            int inf = o > 1e308 || o < -1e308;
            if (!(o == 1.0 || o == -1.0 || inf)) { Py_DECREF(x); goto extern_norm; }
            int row = ax2[0], col = ax2[1];
            int sum_ax = inf ? col : row, red_ax = inf ? row : col;
            if (red_ax > sum_ax) red_ax--;
            absx = nd_shim_ufunc1(ND_UF_ABSOLUTE, x);
            PyObject *sa = absx ? PyLong_FromLong(sum_ax) : NULL;
            PyObject *ra = sa ? PyLong_FromLong(red_ax) : NULL;
            tmp = ra ? sum_axis(absx, sa, Py_False) : NULL;
            PyObject *m = tmp ? red_axis(o > 0 ? "max" : "min", tmp, ra, Py_False) : NULL;
            Py_XDECREF(sa);
            Py_XDECREF(ra);
            if (m && keepdims) {
                nd_xj_arr mv;
                npy_intp ksh[ND_MAXDIMS];
                memcpy(ksh, a.shape, sizeof(ksh));
                ksh[ax2[0]] = ksh[ax2[1]] = 1;
                mv.id = nd_proxy_read(m);
                Py_DECREF(m);
                m = NULL;
                if (mv.id != ND_NONE) {
                    nd_xj_fill(t, &mv);
                    if (nd_xj_reshape(t, &mv, a.ndim, ksh) == 0) m = nd_shim_wrap(t, mv.id, 0);
                }
            }
            res = m;
            goto done;
        }
        if (fro) {
            if (!axis) {
                PyObject *t2 = Py_BuildValue("(ii)", a.ndim - 2, a.ndim - 1);
                if (!t2) goto done;
                axis_obj = t2;
            }
            absx = nd_shim_ufunc1(ND_UF_ABSOLUTE, x);
            tmp = absx ? nd_shim_ufunc2(ND_UF_MULTIPLY, absx, absx) : NULL;
            PyObject *s = tmp ? sum_axis(tmp, axis_obj, keep) : NULL;
            if (s) { res = nd_shim_ufunc1(ND_UF_SQRT, s); Py_DECREF(s); }
            if (axis_obj != axis) Py_DECREF(axis_obj);
            goto done;
        }
        Py_DECREF(x);
        goto extern_norm;
    }
numpy_err:
    Py_DECREF(x);
    return nd_xj_numpy_error("linalg.norm", P, argv);
done:
    Py_DECREF(x);
    Py_XDECREF(absx);
    Py_XDECREF(tmp);
    return res;
extern_norm:
    return nd_shim_unsupported("numpy.linalg.norm with a singular-value ord");
}

static PyObject *lstsq_impl(nd_trace *t, PyObject **argv)
{ return nd_shim_unsupported("numpy.linalg.lstsq: residuals have a data-dependent shape"); }
static PyObject *eig_impl(nd_trace *t, PyObject **argv)
{ return nd_shim_unsupported("numpy.linalg.eig: result dtype (real or complex) depends on the data"); }
static PyObject *eigvals_impl(nd_trace *t, PyObject **argv)
{ return nd_shim_unsupported("numpy.linalg.eigvals: result dtype (real or complex) depends on the data"); }

/* ------------------------------------------------------------------- fft */

/* kind: 0 c2c, 1 r2c (rfft/ihfft: n//2+1), 2 c2r (irfft/hfft: default 2(m-1)) */
static PyObject *fft1_common(nd_trace *t, PyObject **argv, const char *path, int kind)
{
    static const char *P = "a|n,axis,norm,out";
    if (argv[4] && argv[4] != Py_None) return nd_shim_unsupported("numpy.%s with out=", path);
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    if (a.ndim == 0) return nd_xj_numpy_error(path, P, argv);
    int ax = a.ndim - 1;
    if (argv[2]) {
        long v = PyIndex_Check(argv[2]) ? PyLong_AsLong(argv[2]) : LONG_MAX;
        if (v == -1 && PyErr_Occurred()) return NULL;
        if (v < -a.ndim || v >= a.ndim) return nd_xj_numpy_error(path, P, argv);
        ax = (int)(v < 0 ? v + a.ndim : v);
    }
    npy_intp m = a.shape[ax], n;
    if (argv[1] && argv[1] != Py_None) {
        if (!PyIndex_Check(argv[1])) return nd_xj_numpy_error(path, P, argv);
        n = PyNumber_AsSsize_t(argv[1], PyExc_OverflowError);
        if (n == -1 && PyErr_Occurred()) return NULL;
    } else {
        n = kind == 2 ? 2 * (m - 1) : m;
    }
    if (n < 1) return nd_xj_numpy_error(path, P, argv);
    npy_intp sh[ND_MAXDIMS];
    memcpy(sh, a.shape, sizeof(sh));
    sh[ax] = kind == 1 ? n / 2 + 1 : n;
    ext_out o;
    ext_init1(&o, 0, a.ndim, sh);
    PyObject *nobj = PyLong_FromSsize_t(n), *axo = PyLong_FromLong(ax);
    PyObject *extra[3] = {nobj, axo, argv[3] ? argv[3] : Py_None};
    PyObject *r = (nobj && axo) ? ext_simple(t, path, 1, &a, 3, extra, NULL, &o) : NULL;
    Py_XDECREF(nobj);
    Py_XDECREF(axo);
    /* pocketfft's result keeps a's memory order */
    if (r) nd_proxy_set_order(r, argv[0], 'K');
    return r;
}

#define FFT1(NAME, PATH, KIND) \
    static PyObject *NAME(nd_trace *t, PyObject **argv) { return fft1_common(t, argv, PATH, KIND); }
FFT1(fft_impl, "fft.fft", 0)
FFT1(ifft_impl, "fft.ifft", 0)
FFT1(rfft_impl, "fft.rfft", 1)
FFT1(irfft_impl, "fft.irfft", 2)
FFT1(hfft_impl, "fft.hfft", 2)
FFT1(ihfft_impl, "fft.ihfft", 1)

/* n-d: kind as above; two: default axes (-2, -1) */
static PyObject *fftn_common(nd_trace *t, PyObject **argv, const char *path, int kind, int two)
{
    static const char *P = "a|s,axes,norm,out";
    if (argv[4] && argv[4] != Py_None) return nd_shim_unsupported("numpy.%s with out=", path);
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    PyObject *so = argv[1] && argv[1] != Py_None ? argv[1] : NULL;
    PyObject *axo = argv[2];
    if (so && (!axo || axo == Py_None))
        return nd_shim_unsupported("numpy.%s with s but no axes (deprecated form)", path);
    int axes[ND_MAXDIMS], nax = 0;
    if (!axo || axo == Py_None) {
        /* fft2 & co default to the last two axes; axes=None means all */
        if (two && !axo) {
            if (a.ndim < 2) return nd_xj_numpy_error(path, P, argv);
            axes[0] = a.ndim - 2;
            axes[1] = a.ndim - 1;
            nax = 2;
        } else {
            for (int d = 0; d < a.ndim; d++) axes[nax++] = d;
        }
    } else {
        PyObject *seq = PySequence_Fast(axo, "axes");
        if (!seq) { PyErr_Clear(); return nd_xj_numpy_error(path, P, argv); }
        Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
        for (Py_ssize_t i = 0; i < k && i < ND_MAXDIMS; i++) {
            int ax;
            if (nd_shim_axis_index(PySequence_Fast_GET_ITEM(seq, i), a.ndim, &ax) < 0) {
                Py_DECREF(seq);
                return NULL;
            }
            axes[nax++] = ax;
        }
        Py_DECREF(seq);
        if (k > ND_MAXDIMS) return nd_shim_unsupported("numpy.%s over many axes", path);
    }
    for (int i = 0; i < nax; i++)
        for (int j = 0; j < i; j++)
            if (axes[i] == axes[j]) return nd_shim_unsupported("numpy.%s with repeated axes", path);
    if (nax == 0) return nd_shim_unsupported("numpy.%s over no axes", path);
    npy_intp s[ND_MAXDIMS];
    if (so) {
        PyObject *seq = PySequence_Fast(so, "s");
        if (!seq) { PyErr_Clear(); return nd_xj_numpy_error(path, P, argv); }
        if (PySequence_Fast_GET_SIZE(seq) != nax) { Py_DECREF(seq); return nd_xj_numpy_error(path, P, argv); }
        for (int i = 0; i < nax; i++) {
            PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
            s[i] = PyIndex_Check(e) ? PyNumber_AsSsize_t(e, PyExc_OverflowError) : -2;
            if (s[i] == -1 && PyErr_Occurred()) { Py_DECREF(seq); return NULL; }
        }
        Py_DECREF(seq);
    } else {
        for (int i = 0; i < nax; i++) s[i] = a.shape[axes[i]];
        if (kind == 2) s[nax - 1] = 2 * (a.shape[axes[nax - 1]] - 1);
    }
    for (int i = 0; i < nax; i++) if (s[i] < 1) return nd_xj_numpy_error(path, P, argv);
    npy_intp sh[ND_MAXDIMS];
    memcpy(sh, a.shape, sizeof(sh));
    for (int i = 0; i < nax; i++) sh[axes[i]] = s[i];
    if (kind == 1) sh[axes[nax - 1]] = s[nax - 1] / 2 + 1;
    ext_out o;
    ext_init1(&o, 0, a.ndim, sh);
    PyObject *st = PyTuple_New(nax), *at = PyTuple_New(nax), *r = NULL;
    if (!st || !at) goto done;
    for (int i = 0; i < nax; i++) {
        PyObject *x = PyLong_FromSsize_t(s[i]), *y = x ? PyLong_FromLong(axes[i]) : NULL;
        if (!y) { Py_XDECREF(x); goto done; }
        PyTuple_SET_ITEM(st, i, x);
        PyTuple_SET_ITEM(at, i, y);
    }
    PyObject *extra[3] = {st, at, argv[3] ? argv[3] : Py_None};
    r = ext_simple(t, path, 1, &a, 3, extra, NULL, &o);
done:
    Py_XDECREF(st);
    Py_XDECREF(at);
    return r;
}

#define FFTN(NAME, PATH, KIND, TWO) \
    static PyObject *NAME(nd_trace *t, PyObject **argv) { return fftn_common(t, argv, PATH, KIND, TWO); }
FFTN(fft2_impl, "fft.fft2", 0, 1)
FFTN(ifft2_impl, "fft.ifft2", 0, 1)
FFTN(fftn_impl, "fft.fftn", 0, 0)
FFTN(ifftn_impl, "fft.ifftn", 0, 0)
FFTN(rfft2_impl, "fft.rfft2", 1, 1)
FFTN(irfft2_impl, "fft.irfft2", 2, 1)
FFTN(rfftn_impl, "fft.rfftn", 1, 0)
FFTN(irfftn_impl, "fft.irfftn", 2, 0)

/* ------------------------------------------------------------------ sort */

/* kind: 0 sort, 1 argsort, 2 partition, 3 argpartition. For functions:
 * argv = a, (kth,) axis, kind, order[, stable]. Returns the node's proxy. */
static PyObject *sort_node(nd_trace *t, const char *path, nd_xj_arr *a, PyObject *axis,
                           PyObject *kind, PyObject *kth, PyObject *stable, int which,
                           const char *P, PyObject **argv)
{
    int ax = -1;
    if (axis == Py_None) {
        npy_intp n = nd_xj_size(a->ndim, a->shape);
        if (nd_xj_reshape(t, a, 1, &n) < 0) return NULL;
        ax = 0;
    } else {
        if (a->ndim == 0) return nd_xj_numpy_error(path, P, argv);
        if (!axis) ax = a->ndim - 1;
        else if (nd_shim_axis_index(axis, a->ndim, &ax) < 0) return NULL;
    }
    if (kth) {
        npy_intp n = a->shape[ax];
        PyObject *seq = PyIndex_Check(kth) ? PyTuple_Pack(1, kth) : PySequence_Fast(kth, "kth");
        if (!seq) { PyErr_Clear(); return nd_xj_numpy_error(path, P, argv); }
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *e = PySequence_Fast_GET_ITEM(seq, i);
            Py_ssize_t k = PyIndex_Check(e) ? PyNumber_AsSsize_t(e, NULL) : n + 1;
            if (k < -n || k >= n) { Py_DECREF(seq); return nd_xj_numpy_error(path, P, argv); }
        }
        Py_DECREF(seq);
    }
    ext_out o;
    ext_init1(&o, 0, a->ndim, a->shape);
    o.dtype[0] = which & 1 ? NPY_INTP : a->dtype;
    PyObject *axo = PyLong_FromLong(ax);
    if (!axo) return NULL;
    PyObject *kw = NULL, *r = NULL;
    if (stable && !(kw = Py_BuildValue("{sO}", "stable", stable))) { Py_DECREF(axo); return NULL; }
    const char *fpath = which == 0 ? "sort" : which == 1 ? "argsort" : which == 2 ? "partition" : "argpartition";
    if (kth) {
        PyObject *kc = PyIndex_Check(kth) ? (Py_INCREF(kth), kth) : PySequence_Tuple(kth);
        if (kc) {
            PyObject *extra[3] = {kc, axo, kind ? kind : Py_None};
            if (!kind) {
                extra[2] = PyUnicode_FromString("introselect");
                if (extra[2]) { r = ext_simple(t, fpath, 1, a, 3, extra, kw, &o); Py_DECREF(extra[2]); }
            } else {
                r = ext_simple(t, fpath, 1, a, 3, extra, kw, &o);
            }
            Py_DECREF(kc);
        }
    } else {
        PyObject *extra[2] = {axo, kind ? kind : Py_None};
        r = ext_simple(t, fpath, 1, a, 2, extra, kw, &o);
    }
    Py_DECREF(axo);
    Py_XDECREF(kw);
    return r;
}

static PyObject *sort_fn(nd_trace *t, PyObject **argv, int which)
{
    static const char *paths[] = {"sort", "argsort", "partition", "argpartition"};
    static const char *params[] = {"a|axis,kind,order;stable", "a|axis,kind,order;stable",
                                   "a,kth|axis,kind,order", "a,kth|axis,kind,order"};
    int part = which >= 2;
    PyObject *kth = part ? argv[1] : NULL;
    PyObject **rest = argv + (part ? 2 : 1);  /* axis, kind, order[, stable] */
    if (rest[2] && rest[2] != Py_None) return nd_shim_unsupported("numpy.%s with order=", paths[which]);
    if ((kth && nd_proxy_check(kth)) || (rest[0] && nd_proxy_check(rest[0])))
        return nd_shim_unsupported("numpy.%s with lazy kth/axis", paths[which]);
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    PyObject *r = sort_node(t, paths[which], &a, rest[0], rest[1], kth, part ? NULL : rest[3], which,
                            params[which], argv);
    /* np.sort / np.partition sort a.copy(order='K'); the arg* forms are C.
     * NumPy computes the value; the order is known before it runs, for
     * view-vs-copy of the pending result */
    if (r && !(which & 1)) nd_proxy_set_order(r, argv[0], 'K');
    return r;
}

static PyObject *sort_impl(nd_trace *t, PyObject **argv) { return sort_fn(t, argv, 0); }
static PyObject *argsort_impl(nd_trace *t, PyObject **argv) { return sort_fn(t, argv, 1); }
static PyObject *partition_impl(nd_trace *t, PyObject **argv) { return sort_fn(t, argv, 2); }
static PyObject *argpartition_impl(nd_trace *t, PyObject **argv) { return sort_fn(t, argv, 3); }

/* ndarray.sort / ndarray.partition: in place, through the proxy's storage */
static PyObject *sort_method_common(nd_trace *t, PyObject **argv, int which)
{
    PyObject *self = argv[0];
    int part = which == 2;
    PyObject *kth = part ? argv[1] : NULL;
    PyObject **rest = argv + (part ? 2 : 1);
    if (rest[2] && rest[2] != Py_None) return nd_shim_unsupported("ndarray.sort with order=");
    if (rest[0] == Py_None) {
        /* ndarray.sort(axis=None) is an error in NumPy; let it say so */
        nd_shim_unsupported("ndarray.sort with axis=None");
        return NULL;
    }
    nd_xj_arr a;
    if (nd_xj_array(t, self, &a)) return NULL;
    if (a.ndim == 0) return nd_shim_unsupported("ndarray.sort of a 0-d array");
    PyObject *r = sort_node(t, part ? "partition" : "sort", &a, rest[0], rest[1], kth,
                            part ? NULL : rest[3], which, "a|axis,kind,order;stable", argv);
    if (!r) return NULL;
    nd_id v = nd_proxy_read(r);
    Py_DECREF(r);
    if (v == ND_NONE || nd_proxy_write(self, v) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *sort_method(nd_trace *t, PyObject **argv) { return sort_method_common(t, argv, 0); }
static PyObject *partition_method(nd_trace *t, PyObject **argv) { return sort_method_common(t, argv, 2); }

static PyObject *argsort_method(nd_trace *t, PyObject **argv) { return sort_fn(t, argv, 1); }
static PyObject *argpartition_method(nd_trace *t, PyObject **argv) { return sort_fn(t, argv, 3); }
static PyObject *dot_method(nd_trace *t, PyObject **argv) { return dot_impl(t, argv); }

static PyObject *searchsorted_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a,v|side,sorter";
    nd_xj_arr in[3];
    if (nd_xj_array2(t, argv, in)) return NULL;
    if (in[0].ndim != 1) return nd_xj_numpy_error("searchsorted", P, argv);
    int nin = 2;
    if (argv[3] && argv[3] != Py_None) {
        if (nd_xj_array(t, argv[3], &in[2])) return NULL;
        nin = 3;
    }
    ext_out o;
    ext_init1(&o, 1, in[1].ndim, in[1].shape);
    o.dtype[0] = NPY_INTP;
    PyObject *fn = nd_xj_np_attr("searchsorted");
    if (!fn) return NULL;
    PyObject *p0 = nd_extern_placeholder(0), *p1 = nd_extern_placeholder(1);
    PyObject *p2 = nin == 3 ? nd_extern_placeholder(2) : (Py_INCREF(Py_None), Py_None);
    PyObject *side = argv[2] ? (Py_INCREF(argv[2]), argv[2]) : PyUnicode_FromString("left");
    PyObject *tmpl = (p0 && p1 && p2 && side) ? PyTuple_Pack(4, p0, p1, side, p2) : NULL;
    PyObject *r = NULL;
    Py_XDECREF(side);
    /* searchsorted of a Python scalar v returns a NumPy scalar */
    o.scalar0d = 1;
    if (tmpl) r = ext_build(t, fn, tmpl, NULL, nin, in, &o);
    Py_XDECREF(p0);
    Py_XDECREF(p1);
    Py_XDECREF(p2);
    Py_XDECREF(tmpl);
    Py_DECREF(fn);
    return r;
}

static PyObject *histogram_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a|bins,range,density,weights";
    PyObject *bins = argv[1];
    if (bins && !PyIndex_Check(bins)) return nd_shim_unsupported("numpy.histogram with explicit or named bins");
    if ((argv[2] && argv[2] != Py_None && (PyTuple_Check(argv[2]) || PyList_Check(argv[2])) &&
         (nd_proxy_check(PySequence_Fast_GET_ITEM(argv[2], 0)) ||
          nd_proxy_check(PySequence_Fast_GET_ITEM(argv[2], PySequence_Fast_GET_SIZE(argv[2]) - 1)))) ||
        (argv[2] && nd_proxy_check(argv[2])))
        return nd_shim_unsupported("numpy.histogram with a lazy range");
    Py_ssize_t nb = bins ? PyNumber_AsSsize_t(bins, PyExc_OverflowError) : 10;
    if (nb == -1 && PyErr_Occurred()) return NULL;
    if (nb < 1) return nd_xj_numpy_error("histogram", P, argv);
    nd_xj_arr in[2];
    int nin = 1;
    if (nd_xj_array(t, argv[0], &in[0])) return NULL;
    if (argv[4] && argv[4] != Py_None) {
        if (nd_xj_array(t, argv[4], &in[1])) return NULL;
        if (in[1].ndim != in[0].ndim ||
            memcmp(in[1].shape, in[0].shape, sizeof(npy_intp) * (size_t)in[0].ndim))
            return nd_xj_numpy_error("histogram", P, argv);
        nin = 2;
    }
    ext_out o;
    ext_init(&o, 2, 1, 0);
    npy_intp h = nb, e = nb + 1;
    ext_shape(&o, 0, 1, &h);
    ext_shape(&o, 1, 1, &e);
    PyObject *fn = nd_xj_np_attr("histogram");
    if (!fn) return NULL;
    PyObject *nbo = PyLong_FromSsize_t(nb);
    PyObject *rng = argv[2] ? argv[2] : Py_None, *r = NULL, *tmpl = NULL;
    PyObject *rt = (rng != Py_None && PyList_Check(rng)) ? PyList_AsTuple(rng) : (Py_INCREF(rng), rng);
    PyObject *p0 = nd_extern_placeholder(0);
    PyObject *pw = nin == 2 ? nd_extern_placeholder(1) : (Py_INCREF(Py_None), Py_None);
    if (nbo && rt && p0 && pw)
        tmpl = PyTuple_Pack(5, p0, nbo, rt, argv[3] ? argv[3] : Py_None, pw);
    if (tmpl) r = ext_build(t, fn, tmpl, NULL, nin, in, &o);
    Py_XDECREF(nbo);
    Py_XDECREF(rt);
    Py_XDECREF(p0);
    Py_XDECREF(pw);
    Py_XDECREF(tmpl);
    Py_DECREF(fn);
    return r;
}

/* ------------------------------------------ order statistics, interp, conv */

static int reduced_shape(const nd_xj_arr *a, PyObject *axis, int keepdims, int *nd, npy_intp *sh)
{
    uint64_t mask;
    if (nd_shim_axis_mask(axis == Py_None ? NULL : axis, a->ndim, 1, &mask) < 0) return -1;
    int o = 0;
    for (int d = 0; d < a->ndim; d++) {
        if (mask & (1ULL << d)) { if (keepdims) sh[o++] = 1; }
        else sh[o++] = a->shape[d];
    }
    *nd = o;
    return 0;
}

/* a hashable constant for the template: lists become tuples */
static PyObject *as_const(PyObject *o)
{
    if (!o) Py_RETURN_NONE;
    if (PyList_Check(o)) return PyList_AsTuple(o);
    Py_INCREF(o);
    return o;
}

static PyObject *median_impl(nd_trace *t, PyObject **argv)
{
    /* a, axis, out, overwrite_input, keepdims */
    if (argv[2] && argv[2] != Py_None) return nd_shim_unsupported("numpy.median with out=");
    if (argv[1] && nd_proxy_check(argv[1])) return nd_shim_unsupported("numpy.median with a lazy axis");
    if (argv[3] && PyObject_IsTrue(argv[3]))
        return nd_shim_unsupported("numpy.median with overwrite_input=True (partitions its input)");
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    int keep = nd_shim_bool_arg(argv[4], 0);
    if (keep < 0) return NULL;
    int nd;
    npy_intp sh[ND_MAXDIMS];
    if (reduced_shape(&a, argv[1], keep, &nd, sh) < 0) return NULL;
    ext_out o;
    ext_init1(&o, 1, nd, sh);
    /* never overwrite_input: the input buffer may be the caller's array */
    PyObject *ax = as_const(argv[1]);
    if (!ax) return NULL;
    PyObject *extra[4] = {ax, Py_None, Py_False, keep ? Py_True : Py_False};
    PyObject *r = ext_simple(t, "median", 1, &a, 4, extra, NULL, &o);
    Py_DECREF(ax);
    return r;
}

/* percentile (scale 100) / quantile (scale 1) */
static PyObject *quantile_common(nd_trace *t, PyObject **argv, const char *path, double scale)
{
    static const char *P = "a,q|axis,out,overwrite_input,method,keepdims;weights,interpolation";
    /* a, q, axis, out, overwrite_input, method, keepdims; weights, interpolation */
    if ((argv[3] && argv[3] != Py_None) || (argv[7] && argv[7] != Py_None) || argv[8] ||
        (argv[4] && PyObject_IsTrue(argv[4])))
        return nd_shim_unsupported("numpy.%s with out=/weights=/interpolation=/overwrite_input=", path);
    if (nd_proxy_check(argv[1]) || (argv[2] && nd_proxy_check(argv[2])))
        return nd_shim_unsupported("numpy.%s with lazy q or axis", path);
    nd_xj_arr a;
    if (nd_xj_array(t, argv[0], &a)) return NULL;
    int keep = nd_shim_bool_arg(argv[6], 0);
    if (keep < 0) return NULL;
    PyObject *qa = PyArray_FROMANY(argv[1], NPY_DOUBLE, 0, 0, NPY_ARRAY_CARRAY);
    if (!qa) { PyErr_Clear(); return nd_xj_numpy_error(path, P, argv); }
    PyArrayObject *q = (PyArrayObject *)qa;
    const double *qv = PyArray_DATA(q);
    for (npy_intp i = 0; i < PyArray_SIZE(q); i++)
        if (!(qv[i] >= 0 && qv[i] <= scale)) { Py_DECREF(qa); return nd_xj_numpy_error(path, P, argv); }
    int nd, qnd = PyArray_NDIM(q);
    npy_intp sh[ND_MAXDIMS], rsh[ND_MAXDIMS];
    if (qnd > ND_MAXDIMS || reduced_shape(&a, argv[2], keep, &nd, rsh) < 0 || qnd + nd > ND_MAXDIMS) {
        Py_DECREF(qa);
        return PyErr_Occurred() ? NULL : nd_shim_unsupported("numpy.%s above rank 16", path);
    }
    if (qnd) memcpy(sh, PyArray_DIMS(q), sizeof(npy_intp) * (size_t)qnd);  /* 0-d q: NULL dims */
    memcpy(sh + qnd, rsh, sizeof(npy_intp) * (size_t)nd);
    Py_DECREF(qa);
    ext_out o;
    ext_init1(&o, 1, qnd + nd, sh);
    PyObject *qc = as_const(argv[1]), *ax = qc ? as_const(argv[2]) : NULL;
    PyObject *meth = ax ? (argv[5] ? (Py_INCREF(argv[5]), argv[5]) : PyUnicode_FromString("linear")) : NULL;
    PyObject *r = NULL;
    if (meth) {
        PyObject *extra[6] = {qc, ax, Py_None, Py_False, meth, keep ? Py_True : Py_False};
        r = ext_simple(t, path, 1, &a, 6, extra, NULL, &o);
    }
    Py_XDECREF(qc);
    Py_XDECREF(ax);
    Py_XDECREF(meth);
    return r;
}

static PyObject *percentile_impl(nd_trace *t, PyObject **argv) { return quantile_common(t, argv, "percentile", 100.0); }
static PyObject *quantile_impl(nd_trace *t, PyObject **argv) { return quantile_common(t, argv, "quantile", 1.0); }

static PyObject *interp_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "x,xp,fp|left,right,period";
    for (int k = 3; k < 6; k++)
        if (argv[k] && nd_proxy_check(argv[k]))
            return nd_shim_unsupported("numpy.interp with lazy left/right/period");
    nd_xj_arr in[3];
    for (int k = 0; k < 3; k++)
        if (nd_xj_array(t, argv[k], &in[k])) return NULL;
    if (in[1].ndim != 1 || in[2].ndim != 1 || in[1].shape[0] != in[2].shape[0] || in[1].shape[0] == 0)
        return nd_xj_numpy_error("interp", P, argv);
    ext_out o;
    ext_init1(&o, 1, in[0].ndim, in[0].shape);
    PyObject *extra[3] = {argv[3], argv[4], argv[5]};
    return ext_simple(t, "interp", 3, in, 3, extra, NULL, &o);
}

static PyObject *conv_common(nd_trace *t, PyObject **argv, const char *path, const char *dflt)
{
    static const char *P = "a,v|mode";
    nd_xj_arr in[2];
    if (nd_xj_array2(t, argv, in)) return NULL;
    for (int k = 0; k < 2; k++) {
        if (in[k].ndim > 1) return nd_xj_numpy_error(path, P, argv);
        if (in[k].ndim == 0) {
            npy_intp one = 1;
            if (nd_xj_reshape(t, &in[k], 1, &one) < 0) return NULL;
        }
    }
    const char *mode = dflt;
    if (argv[2]) {
        if (!PyUnicode_Check(argv[2])) return nd_shim_unsupported("numpy.%s with a numeric mode", path);
        if (!(mode = PyUnicode_AsUTF8(argv[2]))) return NULL;
    }
    npy_intp n = in[0].shape[0], m = in[1].shape[0], len;
    npy_intp big = n > m ? n : m, small = n > m ? m : n;
    if (n == 0 || m == 0) return nd_xj_numpy_error(path, P, argv);
    if (strcmp(mode, "full") == 0) len = n + m - 1;
    else if (strcmp(mode, "same") == 0) len = big;
    else if (strcmp(mode, "valid") == 0) len = big - small + 1;
    else return nd_xj_numpy_error(path, P, argv);
    ext_out o;
    ext_init1(&o, 0, 1, &len);
    PyObject *mo = PyUnicode_FromString(mode);
    if (!mo) return NULL;
    PyObject *r = ext_simple(t, path, 2, in, 1, &mo, NULL, &o);
    Py_DECREF(mo);
    return r;
}

static PyObject *convolve_impl(nd_trace *t, PyObject **argv) { return conv_common(t, argv, "convolve", "full"); }
static PyObject *correlate_impl(nd_trace *t, PyObject **argv) { return conv_common(t, argv, "correlate", "valid"); }

#define DATA_DEP(NAME, MSG) \
    static PyObject *NAME(nd_trace *t, PyObject **argv) { return nd_shim_unsupported(MSG); }
DATA_DEP(bincount_impl, "numpy.bincount: output length depends on the data")
DATA_DEP(unique_impl, "numpy.unique: output shape depends on the data")
DATA_DEP(nonzero_impl, "numpy.nonzero: output shape depends on the data")
DATA_DEP(flatnonzero_impl, "numpy.flatnonzero: output shape depends on the data")
DATA_DEP(argwhere_impl, "numpy.argwhere: output shape depends on the data")
DATA_DEP(extract_impl, "numpy.extract: output shape depends on the data")
DATA_DEP(nonzero_method, "ndarray.nonzero: output shape depends on the data")

/* -------------------------------------------------------------- register */

static const nd_shim_def extern_defs[] = {
    {"matmul", P_MATMUL, matmul_impl, 0},
    {"dot", "a,b|out", dot_impl, 0},
    {"vdot", "a,b", vdot_impl, 0},
    {"inner", "a,b", inner_impl, 0},
    {"tensordot", "a,b|axes", tensordot_impl, 0},
    {"einsum", "*operands|;out,optimize,dtype,order,casting", einsum_impl, 0},
    {"linalg.inv", "a", inv_impl, 0},
    {"linalg.det", "a", det_impl, 0},
    {"linalg.slogdet", "a", slogdet_impl, 0},
    {"linalg.cholesky", "a|;upper", cholesky_impl, 0},
    {"linalg.solve", "a,b", solve_impl, 0},
    {"linalg.qr", "a|mode", qr_impl, 0},
    {"linalg.eigh", "a|UPLO", eigh_impl, 0},
    {"linalg.eigvalsh", "a|UPLO", eigvalsh_impl, 0},
    {"linalg.svd", "a|full_matrices,compute_uv,hermitian", svd_impl, 0},
    {"linalg.pinv", "a|rcond,hermitian;rtol", pinv_impl, 0},
    {"linalg.matrix_power", "a,n", matrix_power_impl, 0},
    {"linalg.multi_dot", "arrays|;out", multi_dot_impl, 0},
    {"linalg.norm", "x|ord,axis,keepdims", norm_impl, 0},
    {"linalg.lstsq", "a,b|rcond", lstsq_impl, 0},
    {"linalg.eig", "a", eig_impl, 0},
    {"linalg.eigvals", "a", eigvals_impl, 0},
    {"fft.fft", "a|n,axis,norm,out", fft_impl, 0},
    {"fft.ifft", "a|n,axis,norm,out", ifft_impl, 0},
    {"fft.rfft", "a|n,axis,norm,out", rfft_impl, 0},
    {"fft.irfft", "a|n,axis,norm,out", irfft_impl, 0},
    {"fft.hfft", "a|n,axis,norm,out", hfft_impl, 0},
    {"fft.ihfft", "a|n,axis,norm,out", ihfft_impl, 0},
    {"fft.fft2", "a|s,axes,norm,out", fft2_impl, 0},
    {"fft.ifft2", "a|s,axes,norm,out", ifft2_impl, 0},
    {"fft.fftn", "a|s,axes,norm,out", fftn_impl, 0},
    {"fft.ifftn", "a|s,axes,norm,out", ifftn_impl, 0},
    {"fft.rfft2", "a|s,axes,norm,out", rfft2_impl, 0},
    {"fft.irfft2", "a|s,axes,norm,out", irfft2_impl, 0},
    {"fft.rfftn", "a|s,axes,norm,out", rfftn_impl, 0},
    {"fft.irfftn", "a|s,axes,norm,out", irfftn_impl, 0},
    {"sort", "a|axis,kind,order;stable", sort_impl, 0},
    {"argsort", "a|axis,kind,order;stable", argsort_impl, 0},
    {"partition", "a,kth|axis,kind,order", partition_impl, 0},
    {"argpartition", "a,kth|axis,kind,order", argpartition_impl, 0},
    {"searchsorted", "a,v|side,sorter", searchsorted_impl, 0},
    {"histogram", "a|bins,range,density,weights", histogram_impl, 0},
    {"median", "a|axis,out,overwrite_input,keepdims", median_impl, 0},
    {"percentile", "a,q|axis,out,overwrite_input,method,keepdims;weights,interpolation", percentile_impl, 0},
    {"quantile", "a,q|axis,out,overwrite_input,method,keepdims;weights,interpolation", quantile_impl, 0},
    {"interp", "x,xp,fp|left,right,period", interp_impl, 0},
    {"convolve", "a,v|mode", convolve_impl, 0},
    {"correlate", "a,v|mode", correlate_impl, 0},
    {"bincount", "x|weights,minlength", bincount_impl, 0},
    {"unique", "ar|return_index,return_inverse,return_counts,axis;equal_nan,sorted", unique_impl, 0},
    {"nonzero", "a", nonzero_impl, 0},
    {"flatnonzero", "a", flatnonzero_impl, 0},
    {"argwhere", "a", argwhere_impl, 0},
    {"extract", "condition,arr", extract_impl, 0},
    {NULL, NULL, NULL, 0},
};

static const nd_shim_def extern_methods[] = {
    {"sort", "self|axis,kind,order;stable", sort_method, 0},
    {"argsort", "self|axis,kind,order;stable", argsort_method, 0},
    {"partition", "self,kth|axis,kind,order", partition_method, 0},
    {"argpartition", "self,kth|axis,kind,order", argpartition_method, 0},
    {"dot", "self,b|out", dot_method, 0},
    {"searchsorted", "self,v|side,sorter", searchsorted_impl, 0},
    {"nonzero", "self", nonzero_method, 0},
    {NULL, NULL, NULL, 0},
};

int nd_shim_register_extern(nd_shim_table *tab)
{
    if (nd_shim_add_functions(tab, extern_defs) < 0) return -1;
    return nd_shim_add_methods(tab, extern_methods);
}
