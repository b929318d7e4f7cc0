/* shim_typing.c -- NEP 50 dtype resolution, NumPy as the oracle, cached in C.
 *
 * NumPy 2's `ufunc.resolve_dtypes` takes Python's int/float/complex types as
 * weak scalars and returns the loop dtypes NumPy itself would pick; calling
 * it costs ~1 us, so each distinct (ufunc, operand dtypes, weak flags,
 * dtype=, casting) is asked once and the answer kept in an open-addressing
 * table keyed by a packed 64-bit key (a hit is a few ns). Errors are not
 * cached: they are NumPy's own exceptions, raised again on each call.
 *
 * Values matter in one place only: a weak Python int must fit the integer
 * loop dtype it is cast to (NumPy 2 raises OverflowError "Python integer 300
 * out of bounds for int8"), except in comparisons, where NumPy compares the
 * true values; we report that case to the caller (return 2), which knows the
 * answer is a constant.
 */
#include "shim_internal.h"
#include <string.h>

PyObject *nd_shim_descr(int typenum)
{
    return (PyObject *)PyArray_DescrFromType(typenum);
}

/* ------------------------------------------------------------ cache */

typedef struct {
    uint64_t key;      /* 0 = empty (keys always have bit 63 set) */
    int8_t loop[ND_MAXIN];
    int8_t out[2];
} type_slot;

static type_slot *tab;
static size_t cap, len;

static uint64_t pack_key(int kind, int uf, int nin, const int *dt, const int *weak,
                         int sig, NPY_CASTING casting)
{
    uint64_t k = 1ULL << 63;
    k |= (uint64_t)(kind & 0x3) << 60;
    k |= (uint64_t)(uf & 0xff) << 52;
    for (int i = 0; i < nin && i < 3; i++) {
        k |= (uint64_t)(dt[i] & 0x1f) << (37 + 5 * i);
        if (weak && weak[i]) k |= 1ULL << (34 + i);
    }
    k |= (uint64_t)((sig + 1) & 0x3f) << 28;
    k |= (uint64_t)(casting & 0x7) << 25;
    k |= (uint64_t)(nin & 0x7) << 22;
    return k;
}

static type_slot *slot_for(uint64_t key)
{
    size_t m = cap - 1, i = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 17) & m;
    while (tab[i].key && tab[i].key != key) i = (i + 1) & m;
    return &tab[i];
}

static int grow(void)
{
    size_t ncap = cap ? cap * 2 : 1024;
    type_slot *old = tab;
    size_t ocap = cap;
    tab = PyMem_Calloc(ncap, sizeof(type_slot));
    if (!tab) { tab = old; PyErr_NoMemory(); return -1; }
    cap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].key) *slot_for(old[i].key) = old[i];
    PyMem_Free(old);
    return 0;
}

static type_slot *lookup(uint64_t key)
{
    if (!cap) return NULL;
    type_slot *s = slot_for(key);
    return s->key ? s : NULL;
}

static type_slot *insert(uint64_t key)
{
    if ((len + 1) * 2 > cap && grow() < 0) return NULL;
    type_slot *s = slot_for(key);
    if (!s->key) { s->key = key; len++; }
    return s;
}

/* ------------------------------------------------------------ oracle */

static PyObject *weak_type(int dtype)
{
    if (PyTypeNum_ISCOMPLEX(dtype)) return (PyObject *)&PyComplex_Type;
    if (PyTypeNum_ISFLOAT(dtype)) return (PyObject *)&PyFloat_Type;
    return (PyObject *)&PyLong_Type;
}

static int typenum_of(PyObject *descr)
{
    if (!PyArray_DescrCheck(descr)) {
        PyErr_SetString(PyExc_SystemError, "numdyn: resolve_dtypes returned a non-dtype");
        return -1;
    }
    PyArray_Descr *d = (PyArray_Descr *)descr;
    return nd_dtype_canonical(d);
}

static int ask_numpy(int uf, int nin, int nout, const int *dt, const int *weak, int sig,
                     NPY_CASTING casting, int *loop_in, int *out)
{
    PyObject *ufunc = nd_ufunc_object(uf);
    PyObject *dtypes = PyTuple_New(nin + nout);
    PyObject *kw = NULL, *res = NULL, *meth = NULL;
    int rc = -1;
    if (!dtypes) return -1;
    for (int i = 0; i < nin; i++) {
        PyObject *o = (weak && weak[i] && dt[i] != NPY_BOOL) ? weak_type(dt[i]) : NULL;
        if (o) Py_INCREF(o);
        else if (!(o = nd_shim_descr(dt[i]))) goto done;
        PyTuple_SET_ITEM(dtypes, i, o);
    }
    for (int i = 0; i < nout; i++) {
        Py_INCREF(Py_None);
        PyTuple_SET_ITEM(dtypes, nin + i, Py_None);
    }
    if (!(kw = PyDict_New())) goto done;
    if (sig >= 0) {
        PyObject *s = PyTuple_New(nin + nout);
        if (!s) goto done;
        for (int i = 0; i < nin; i++) { Py_INCREF(Py_None); PyTuple_SET_ITEM(s, i, Py_None); }
        for (int i = 0; i < nout; i++) {
            PyObject *d = nd_shim_descr(sig);
            if (!d) { Py_DECREF(s); goto done; }
            PyTuple_SET_ITEM(s, nin + i, d);
        }
        int e = PyDict_SetItemString(kw, "signature", s);
        Py_DECREF(s);
        if (e < 0) goto done;
    }
    if (casting != NPY_SAME_KIND_CASTING) {
        PyObject *c = PyUnicode_FromString(nd_shim_casting_name(casting));
        if (!c) goto done;
        int e = PyDict_SetItemString(kw, "casting", c);
        Py_DECREF(c);
        if (e < 0) goto done;
    }
    if (!(meth = PyObject_GetAttrString(ufunc, "resolve_dtypes"))) goto done;
    PyObject *args = PyTuple_Pack(1, dtypes);
    if (!args) goto done;
    res = PyObject_Call(meth, args, kw);
    Py_DECREF(args);
    if (!res) goto done;
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != nin + nout) {
        PyErr_SetString(PyExc_SystemError, "numdyn: unexpected resolve_dtypes result");
        goto done;
    }
    for (int i = 0; i < nin + nout; i++) {
        int t = typenum_of(PyTuple_GET_ITEM(res, i));
        if (t < 0) goto done;
        if (!nd_dtype_ok(t)) {
            /* e.g. an object loop: not something numdyn compiles */
            PyErr_Format(PyExc_TypeError, "numdyn: ufunc '%s' resolved to a non-numeric loop",
                         nd_ufunc_name(uf));
            goto done;
        }
        if (i < nin) loop_in[i] = t; else out[i - nin] = t;
    }
    rc = 0;
done:
    Py_XDECREF(res);
    Py_XDECREF(meth);
    Py_XDECREF(kw);
    Py_DECREF(dtypes);
    return rc;
}

int nd_shim_pyint_fits(PyObject *value, int dtype)
{
    if (!PyTypeNum_ISINTEGER(dtype)) return 1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && !overflow && PyErr_Occurred()) return -1;
    if (overflow > 0) {
        if (dtype != NPY_UINT64) return 0;
        unsigned long long u = PyLong_AsUnsignedLongLong(value);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
            PyErr_Clear();
            return 0;
        }
        return 1;
    }
    if (overflow < 0) return 0;
    switch (dtype) {
    case NPY_INT8: return v >= -128 && v <= 127;
    case NPY_INT16: return v >= -32768 && v <= 32767;
    case NPY_INT32: return v >= INT32_MIN && v <= INT32_MAX;
    case NPY_INT64: return 1;
    case NPY_UINT8: return v >= 0 && v <= 255;
    case NPY_UINT16: return v >= 0 && v <= 65535;
    case NPY_UINT32: return v >= 0 && v <= (long long)UINT32_MAX;
    case NPY_UINT64: return v >= 0;
    }
    return 1;
}

/* NumPy's two messages: ints beyond C long fail converting first */
void nd_shim_raise_pyint_overflow(PyObject *value, int dtype)
{
    int overflow = 0;
    (void)PyLong_AsLongLongAndOverflow(value, &overflow);
    if (PyErr_Occurred()) return;
    if (overflow && !(dtype == NPY_UINT64 && overflow > 0 && nd_shim_pyint_fits(value, NPY_UINT64) == 1)) {
        PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to C long");
        return;
    }
    PyErr_Format(PyExc_OverflowError, "Python integer %R out of bounds for %s", value,
                 nd_dtype_name(dtype));
}

int nd_shim_resolve_ufunc_ex(int uf, int nin, const int *dtypes, const int *weak,
                             PyObject *const *vals, int sig, NPY_CASTING casting,
                             int *loop_in, int *out)
{
    int nout = nd_ufunc_nout(uf);
    uint64_t key = pack_key(0, uf, nin, dtypes, weak, sig, casting);
    type_slot *s = lookup(key);
    if (s) {
        for (int i = 0; i < nin; i++) loop_in[i] = s->loop[i];
        for (int i = 0; i < nout; i++) out[i] = s->out[i];
    } else {
        if (ask_numpy(uf, nin, nout, dtypes, weak, sig, casting, loop_in, out) < 0) return -1;
        if (!(s = insert(key))) return -1;
        for (int i = 0; i < nin; i++) s->loop[i] = (int8_t)loop_in[i];
        for (int i = 0; i < nout; i++) s->out[i] = (int8_t)out[i];
    }
    if (!weak || !vals) return 0;
    for (int i = 0; i < nin; i++) {
        if (!weak[i] || !vals[i] || !PyLong_Check(vals[i]) || PyBool_Check(vals[i])) continue;
        if (!PyTypeNum_ISINTEGER(loop_in[i])) continue;
        int fits = nd_shim_pyint_fits(vals[i], loop_in[i]);
        if (fits < 0) return -1;
        if (fits) continue;
        /* NumPy compares true values only against integer arrays; a bool
         * operand takes the plain conversion path (and its error) */
        if (nd_ufunc_is_comparison(uf) && nin == 2 && PyTypeNum_ISINTEGER(dtypes[1 - i])) return 2;
        nd_shim_raise_pyint_overflow(vals[i], loop_in[i]);
        return -1;
    }
    return 0;
}

int nd_shim_resolve_ufunc(int uf, int nin, const int *dtypes, const int *weak,
                          PyObject *const *vals, int *loop_in, int *out)
{
    return nd_shim_resolve_ufunc_ex(uf, nin, dtypes, weak, vals, -1, NPY_SAME_KIND_CASTING,
                                    loop_in, out);
}

/* np.result_type over dtypes, with weak ones passed as Python zeros of their
 * kind (NumPy 2 treats Python scalars given to result_type as weak). */
int nd_shim_result_type(int n, const int *dtypes, const int *weak, int *out)
{
    if (n > 3) {
        /* fold pairwise: result_type is associative for these dtypes only
         * when weak operands come last, which callers arrange */
        int acc = dtypes[0], wacc = weak ? weak[0] : 0;
        for (int i = 1; i < n; i++) {
            int d2[2] = {acc, dtypes[i]}, w2[2] = {wacc, weak ? weak[i] : 0};
            if (nd_shim_result_type(2, d2, w2, &acc) < 0) return -1;
            wacc = wacc && w2[1];
        }
        *out = acc;
        return 0;
    }
    uint64_t key = pack_key(1, 0, n, dtypes, weak, -1, 0);
    type_slot *s = lookup(key);
    if (s) { *out = s->out[0]; return 0; }
    PyObject *args = PyTuple_New(n);
    if (!args) return -1;
    for (int i = 0; i < n; i++) {
        PyObject *o;
        if (weak && weak[i] && dtypes[i] != NPY_BOOL) {
            if (PyTypeNum_ISCOMPLEX(dtypes[i])) o = PyComplex_FromDoubles(0, 0);
            else if (PyTypeNum_ISFLOAT(dtypes[i])) o = PyFloat_FromDouble(0);
            else o = PyLong_FromLong(0);
        } else {
            o = nd_shim_descr(dtypes[i]);
        }
        if (!o) { Py_DECREF(args); return -1; }
        PyTuple_SET_ITEM(args, i, o);
    }
    PyObject *f = PyObject_GetAttrString(nd_shim_numpy(), "result_type");
    PyObject *r = f ? PyObject_Call(f, args, NULL) : NULL;
    Py_XDECREF(f);
    Py_DECREF(args);
    if (!r) return -1;
    int t = typenum_of(r);
    Py_DECREF(r);
    if (t < 0) return -1;
    if (!nd_dtype_ok(t)) {
        PyErr_SetString(PyExc_TypeError, "numdyn: result_type is not numeric");
        return -1;
    }
    if (!(s = insert(key))) return -1;
    s->out[0] = (int8_t)t;
    *out = t;
    return 0;
}
