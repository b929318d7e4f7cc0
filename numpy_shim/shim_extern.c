/* shim_extern.c -- how an EXTERN call is built (shim_internal.h, "EXTERN calls"): the dtype
 * probe cache and the builder the NumPy areas share (shim_matmul.c,
 * shim_linalg.c, shim_fft.c, shim_sort.c, shim_stats.c).
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
#include "shim_internal.h"
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
        if (!nd_dtype_ok(out_dtype[k])) {
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


void nd_ext_init(nd_ext_out *o, int nout, int tuple, int scalar0d)
{
    memset(o, 0, sizeof(*o));
    o->nout = nout;
    o->tuple = tuple;
    o->scalar0d = scalar0d;
    for (int k = 0; k < 4; k++) o->dtype[k] = -1;
}

void nd_ext_shape(nd_ext_out *o, int k, int ndim, const npy_intp *shape)
{
    o->ndim[k] = ndim;
    if (ndim) memcpy(o->shape[k], shape, sizeof(npy_intp) * (size_t)ndim);
}

/* one array result (not a tuple) of the given shape */
void nd_ext_init1(nd_ext_out *o, int scalar0d, int ndim, const npy_intp *shape)
{
    nd_ext_init(o, 1, 0, scalar0d);
    nd_ext_shape(o, 0, ndim, shape);
}

/* Nodes for fn(*tmpl, **kw) on ins; the result NumPy would return. */
PyObject *nd_ext_build(nd_trace *t, PyObject *fn, PyObject *tmpl, PyObject *kw, int nin,
                           const nd_xj_arr *ins, nd_ext_out *o)
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
PyObject *nd_ext_simple(nd_trace *t, const char *path, int nin, const nd_xj_arr *ins,
                            int nextra, PyObject *const *extra, PyObject *kw, nd_ext_out *o)
{
    PyObject *fn = nd_xj_np_attr(path);
    if (!fn) return NULL;
    PyObject *tmpl = nd_xj_tmpl(nin, nextra, extra);
    PyObject *r = tmpl ? nd_ext_build(t, fn, tmpl, kw, nin, ins, o) : NULL;
    Py_XDECREF(tmpl);
    Py_DECREF(fn);
    return r;
}

/* any of argv[from..to) given -> not modelled */
int nd_ext_given(PyObject **argv, int from, int to)
{
    for (int k = from; k < to; k++) if (argv[k]) return 1;
    return 0;
}

/* broadcast two batch shapes; 0 ok, 1 mismatch (no exception) */
int nd_ext_batch_broadcast(int n1, const npy_intp *s1, int n2, const npy_intp *s2, int *nd,
                           npy_intp *out)
{
    int nds[2] = {n1, n2};
    const npy_intp *shs[2] = {s1, s2};
    if (nd_shim_broadcast(2, nds, shs, nd, out) < 0) { PyErr_Clear(); return 1; }
    return 0;
}

/* -------------------------------------------------------------- register */

int nd_shim_register_extern(nd_shim_table *tab)
{
    if (nd_shim_register_matmul(tab) < 0 || nd_shim_register_linalg(tab) < 0 ||
        nd_shim_register_fft(tab) < 0 || nd_shim_register_sort(tab) < 0)
        return -1;
    return nd_shim_register_stats(tab);
}
