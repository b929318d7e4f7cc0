/* shim_args.c -- argument normalization, declared once per function.
 *
 * Every shim function declares its parameters as a spec string; this file
 * compiles the spec once and maps (args, kwargs) onto a fixed argv with
 * Python's own TypeError messages, so impls never parse arguments ad hoc.
 * It also holds the normalizers of NumPy's common argument kinds (axis,
 * dtype, casting, flags) and broadcasting, each raising NumPy's exceptions.
 */
#include "shim_internal.h"
#include <stdarg.h>
#include <string.h>

/* ------------------------------------------------------------ specs */

/* Specs are few (a few hundred defs) and looked up per call: a small
 * open-addressing table keyed by the def's address. */
typedef struct { const nd_shim_def *def; nd_spec spec; } spec_slot;
static spec_slot *spec_tab;
static size_t spec_cap, spec_len;

static size_t ptr_hash(const void *p) { return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ULL); }

static int compile_spec(const char *s, nd_spec *sp)
{
    memset(sp, 0, sizeof(*sp));
    sp->varargs = -1;
    int req_end = -1, kw_start = -1;
    const char *p = s;
    while (*p) {
        if (*p == '|') { req_end = sp->n; p++; continue; }
        if (*p == ';') { kw_start = sp->n; p++; continue; }
        if (*p == ',' || *p == ' ') { p++; continue; }
        int star = 0;
        if (*p == '*') { star = 1; p++; }
        const char *e = p;
        while (*e && *e != ',' && *e != '|' && *e != ';' && *e != ' ') e++;
        if (sp->n >= ND_SHIM_MAXARGS || e == p) {
            PyErr_Format(PyExc_SystemError, "numdyn shim: bad parameter spec '%s'", s);
            return -1;
        }
        PyObject *name = PyUnicode_FromStringAndSize(p, e - p);
        if (!name) return -1;
        PyUnicode_InternInPlace(&name);
        if (star) sp->varargs = sp->n;
        sp->names[sp->n++] = name;
        p = e;
    }
    sp->nreq = req_end < 0 ? sp->n : req_end;
    sp->npos = kw_start < 0 ? sp->n : kw_start;
    if (sp->varargs >= 0 && sp->nreq > sp->varargs) sp->nreq = sp->varargs;
    return 0;
}

static spec_slot *spec_find(const nd_shim_def *def)
{
    if (!spec_cap) return NULL;
    size_t m = spec_cap - 1;
    for (size_t i = ptr_hash(def) & m;; i = (i + 1) & m) {
        if (spec_tab[i].def == def) return &spec_tab[i];
        if (!spec_tab[i].def) return NULL;
    }
}

static int spec_grow(void)
{
    size_t ncap = spec_cap ? spec_cap * 2 : 256;
    spec_slot *nt = PyMem_Calloc(ncap, sizeof(spec_slot));
    if (!nt) { PyErr_NoMemory(); return -1; }
    for (size_t k = 0; k < spec_cap; k++) {
        if (!spec_tab[k].def) continue;
        size_t m = ncap - 1, i = ptr_hash(spec_tab[k].def) & m;
        while (nt[i].def) i = (i + 1) & m;
        nt[i] = spec_tab[k];
    }
    PyMem_Free(spec_tab);
    spec_tab = nt;
    spec_cap = ncap;
    return 0;
}

const nd_spec *nd_shim_spec(const nd_shim_def *def)
{
    spec_slot *s = spec_find(def);
    if (s) return &s->spec;
    if ((spec_len + 1) * 2 > spec_cap && spec_grow() < 0) return NULL;
    size_t m = spec_cap - 1, i = ptr_hash(def) & m;
    while (spec_tab[i].def) i = (i + 1) & m;
    if (compile_spec(def->params ? def->params : "", &spec_tab[i].spec) < 0) return NULL;
    spec_tab[i].def = def;
    spec_len++;
    return &spec_tab[i].spec;
}

/* ------------------------------------------------------------ parsing */

static const char *short_name(const nd_shim_def *def)
{
    const char *d = strrchr(def->name, '.');
    return d ? d + 1 : def->name;
}

static int find_kw(const nd_spec *sp, PyObject *key)
{
    for (int k = 0; k < sp->n; k++)
        if (sp->names[k] == key) return k;
    for (int k = 0; k < sp->n; k++)
        if (k != sp->varargs && PyUnicode_Compare(sp->names[k], key) == 0) return k;
    if (PyErr_Occurred()) PyErr_Clear();
    return -1;
}

static int take_positional(const nd_shim_def *def, const nd_spec *sp, PyObject *const *args,
                           Py_ssize_t nargs, PyObject **argv)
{
    for (int k = 0; k < ND_SHIM_MAXARGS; k++) argv[k] = NULL;
    int fixed = sp->varargs >= 0 ? sp->varargs : sp->npos;
    if (sp->varargs < 0 && nargs > sp->npos) {
        if (sp->nreq == sp->npos)
            PyErr_Format(PyExc_TypeError, "%s() takes %d positional argument%s but %zd %s given",
                         short_name(def), sp->npos, sp->npos == 1 ? "" : "s", nargs,
                         nargs == 1 ? "was" : "were");
        else
            PyErr_Format(PyExc_TypeError, "%s() takes from %d to %d positional arguments but %zd were given",
                         short_name(def), sp->nreq, sp->npos, nargs);
        return -1;
    }
    Py_ssize_t i = 0;
    for (; i < nargs && i < fixed; i++) argv[i] = args[i];
    if (sp->varargs >= 0) {
        /* the tuple lives in a per-thread slot released at the next parse;
         * impls only borrow argv during the call */
        Py_ssize_t nv = nargs > fixed ? nargs - fixed : 0;
        PyObject *tup = PyTuple_New(nv);
        if (!tup) return -1;
        for (Py_ssize_t j = 0; j < nv; j++) {
            Py_INCREF(args[fixed + j]);
            PyTuple_SET_ITEM(tup, j, args[fixed + j]);
        }
        static _Thread_local PyObject *holder[4];
        static _Thread_local int hi;
        Py_XSETREF(holder[hi & 3], tup);
        hi++;
        argv[sp->varargs] = tup;
    }
    return 0;
}

static int kw_assign(const nd_shim_def *def, const nd_spec *sp, PyObject *key, PyObject *val,
                     PyObject **argv)
{
    int k = find_kw(sp, key);
    if (k < 0) {
        PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'",
                     short_name(def), key);
        return -1;
    }
    if (argv[k]) {
        PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%U'",
                     short_name(def), key);
        return -1;
    }
    argv[k] = val;
    return 0;
}

static int check_required(const nd_shim_def *def, const nd_spec *sp, PyObject **argv)
{
    for (int k = 0; k < sp->nreq; k++) {
        if (!argv[k] && k != sp->varargs) {
            PyErr_Format(PyExc_TypeError, "%s() missing 1 required positional argument: '%U'",
                         short_name(def), sp->names[k]);
            return -1;
        }
    }
    return 0;
}

int nd_shim_parse_fast(const nd_shim_def *def, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames, PyObject **argv)
{
    const nd_spec *sp = nd_shim_spec(def);
    if (!sp || take_positional(def, sp, args, nargs, argv) < 0) return -1;
    if (kwnames) {
        Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t j = 0; j < nk; j++)
            if (kw_assign(def, sp, PyTuple_GET_ITEM(kwnames, j), args[nargs + j], argv) < 0)
                return -1;
    }
    return check_required(def, sp, argv);
}

int nd_shim_parse_args(const nd_shim_def *def, PyObject *args, PyObject *kwargs, PyObject **argv)
{
    const nd_spec *sp = nd_shim_spec(def);
    if (!sp) return -1;
    PyObject *const *items = args ? &PyTuple_GET_ITEM(args, 0) : NULL;
    Py_ssize_t nargs = args ? PyTuple_GET_SIZE(args) : 0;
    if (take_positional(def, sp, items, nargs, argv) < 0) return -1;
    if (kwargs) {
        Py_ssize_t pos = 0;
        PyObject *key, *val;
        while (PyDict_Next(kwargs, &pos, &key, &val))
            if (kw_assign(def, sp, key, val, argv) < 0) return -1;
    }
    return check_required(def, sp, argv);
}

/* ------------------------------------------------------- unsupported */

static _Thread_local char unsupported_buf[256];
static _Thread_local int unsupported_set;

PyObject *nd_shim_unsupported(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(unsupported_buf, sizeof unsupported_buf, fmt, ap);
    va_end(ap);
    unsupported_set = 1;
    return NULL;
}

const char *nd_shim_take_unsupported(void)
{
    if (!unsupported_set) return NULL;
    unsupported_set = 0;
    return unsupported_buf;
}

/* ------------------------------------------------------- normalizers */

PyObject *nd_shim_exc(const char *name)
{
    /* cached per name: a handful of exception classes */
    static struct { const char *name; PyObject *obj; } cache[8];
    for (int i = 0; i < 8; i++) {
        if (cache[i].name && strcmp(cache[i].name, name) == 0) return cache[i].obj;
        if (!cache[i].name) {
            const char *dot = strrchr(name, '.');
            PyObject *mod = PyUnicode_FromStringAndSize(name, dot - name);
            if (!mod) return NULL;
            PyObject *m = PyImport_Import(mod);
            Py_DECREF(mod);
            if (!m) return NULL;
            PyObject *o = PyObject_GetAttrString(m, dot + 1);
            Py_DECREF(m);
            if (!o) return NULL;
            cache[i].name = name;
            cache[i].obj = o;
            return o;
        }
    }
    PyErr_SetString(PyExc_SystemError, "numdyn shim: exception cache full");
    return NULL;
}

/* NumPy's AxisError(axis, ndim, msg_prefix): "axis1: axis 5 is out of
 * bounds ..." where NumPy names the argument (swapaxes, diagonal, trace:
 * its check_and_adjust_axis_msg); prefix NULL: no prefix */
static void raise_axis_error(long axis, int ndim, const char *prefix)
{
    PyObject *cls = nd_shim_exc("numpy.exceptions.AxisError");
    if (!cls) return;
    PyObject *e = prefix ? PyObject_CallFunction(cls, "lis", axis, ndim, prefix)
                         : PyObject_CallFunction(cls, "li", axis, ndim);
    if (!e) return;
    PyErr_SetObject(cls, e);
    Py_DECREF(e);
}

void nd_shim_raise_axis_error(long axis, int ndim)
{
    raise_axis_error(axis, ndim, NULL);
}

/* A single axis through one of NumPy's converters (shim_internal.h,
 * nd_axis_conv): they take the same integers and differ in what they
 * refuse and how they say it. */
static int axis_one(PyObject *o, int ndim, int *out, const char *prefix, nd_axis_conv conv)
{
    if (conv == ND_AXIS_CONVERTER && (PyBool_Check(o) || PyArray_IsScalar(o, Bool))) {
        PyErr_SetString(PyExc_TypeError, "an integer is required for the axis");
        return -1;
    }
    if (!nd_shim_index_like(o)) {
        if (conv == ND_AXIS_NORMALIZE && PyFloat_Check(o))   /* its "i" argument parser */
            PyErr_SetString(PyExc_TypeError, "integer argument expected, got float");
        else if (nd_proxy_check(o) || PyArray_Check(o))   /* ndarray's nb_index */
            PyErr_SetString(PyExc_TypeError, "only integer scalar arrays can be converted to a scalar index");
        else
            PyErr_Format(PyExc_TypeError, "'%.200s' object cannot be interpreted as an integer",
                         Py_TYPE(o)->tp_name);
        return -1;
    }
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) {
        /* np.int64 etc: go through __index__ */
        PyErr_Clear();
        PyObject *i = PyNumber_Index(o);
        if (!i) return -1;
        v = PyLong_AsLong(i);
        Py_DECREF(i);
        if (v == -1 && PyErr_Occurred()) return -1;
    }
    if (v < -ndim || v >= ndim) {
        raise_axis_error(v, ndim, prefix);
        return -1;
    }
    *out = (int)(v < 0 ? v + ndim : v);
    return 0;
}

int nd_shim_axis_index(PyObject *axis, int ndim, int *out)
{
    return axis_one(axis, ndim, out, NULL, ND_AXIS_INDEX);
}

int nd_shim_axis_conv(PyObject *axis, int ndim, int *out, nd_axis_conv conv)
{
    return axis_one(axis, ndim, out, NULL, conv);
}

int nd_shim_axis_index_named(PyObject *axis, int ndim, int *out, const char *argname,
                             nd_axis_conv conv)
{
    return axis_one(axis, ndim, out, argname, conv);
}

int nd_shim_axis_tuple(PyObject *axis, int ndim, int *out, int *n)
{
    *n = 0;
    if (nd_shim_index_like(axis)) {  /* operator.index takes it */
        *n = 1;
        return axis_one(axis, ndim, out, NULL, ND_AXIS_NORMALIZE);
    }
    PyObject *tup = PySequence_Tuple(axis);  /* NumPy's own iteration errors */
    if (!tup) return -1;
    int rc = 0;
    if (PyTuple_GET_SIZE(tup) > ND_MAXDIMS) {
        PyErr_SetString(PyExc_ValueError, "too many axes");
        rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < PyTuple_GET_SIZE(tup); i++)
        rc = axis_one(PyTuple_GET_ITEM(tup, i), ndim, &out[(*n)++], NULL, ND_AXIS_NORMALIZE);
    Py_DECREF(tup);
    return rc;
}

/* dup: the ValueError of an axis named twice; seq_ok: any iterable that is
 * not an integer names axes as a tuple does (normalize_axis_tuple) */
static int axis_mask(PyObject *axis, int ndim, int allow_tuple, uint64_t *mask, const char *dup,
                     int seq_ok, nd_axis_conv conv)
{
    if (!axis || axis == Py_None) {
        *mask = ndim ? (ndim >= 64 ? ~0ULL : ((1ULL << ndim) - 1)) : 0;
        return 0;
    }
    *mask = 0;
    if (allow_tuple && (PyTuple_Check(axis) || (seq_ok && !nd_shim_index_like(axis)))) {
        /* normalize_axis_tuple iterates whatever operator.index refuses */
        PyObject *tup = PySequence_Tuple(axis);
        if (!tup) return -1;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tup); i++) {
            int a;
            if (axis_one(PyTuple_GET_ITEM(tup, i), ndim, &a, NULL, conv) < 0) {
                Py_DECREF(tup);
                return -1;
            }
            if (*mask & (1ULL << a)) {
                Py_DECREF(tup);
                PyErr_SetString(PyExc_ValueError, dup);
                return -1;
            }
            *mask |= 1ULL << a;
        }
        Py_DECREF(tup);
        return 0;
    }
    int a;
    if (axis_one(axis, ndim, &a, NULL, conv) < 0) return -1;
    *mask = 1ULL << a;
    return 0;
}

int nd_shim_axis_mask(PyObject *axis, int ndim, int allow_tuple, uint64_t *mask)
{
    return axis_mask(axis, ndim, allow_tuple, mask, "duplicate value in 'axis'", 0, ND_AXIS_INDEX);
}

int nd_shim_axis_mask_conv(PyObject *axis, int ndim, int allow_tuple, uint64_t *mask,
                           nd_axis_conv conv)
{
    return axis_mask(axis, ndim, allow_tuple, mask, "duplicate value in 'axis'", 0, conv);
}

int nd_shim_axis_mask_normalized(PyObject *axis, int ndim, uint64_t *mask)
{
    return axis_mask(axis, ndim, 1, mask, "repeated axis", 1, ND_AXIS_NORMALIZE);
}

/* NumPy has two typenums for some sizes (NPY_LONG vs NPY_LONGLONG on
 * LP64); the graph speaks sized typenums only, so map aliases onto one. */
static int canonical_typenum(PyArray_Descr *d)
{
    int t = d->type_num;
    if (!PyTypeNum_ISINTEGER(t) && t != NPY_BOOL) {
        if (t == NPY_LONGDOUBLE || t == NPY_CLONGDOUBLE) return -1;
        return t;
    }
    return nd_dtype_canonical(d);
}

int nd_shim_dtype_arg(PyObject *obj, int *typenum)
{
    *typenum = -1;
    if (!obj || obj == Py_None) return 0;
    PyArray_Descr *d = NULL;
    if (!PyArray_DescrConverter(obj, &d)) return -1;
    int t = canonical_typenum(d);
    int byteswapped = !PyArray_ISNBO(d->byteorder);
    Py_DECREF(d);
    if (t < 0 || byteswapped || !nd_dtype_ok(t)) return 1;
    *typenum = t;
    return 0;
}

/* ---- integer arguments */

int nd_shim_index_like(PyObject *o)
{
    if (nd_proxy_check(o))
        return nd_proxy_ndim(o) == 0 && PyTypeNum_ISINTEGER(nd_proxy_dtype(o));
    if (PyArray_Check(o))
        return PyArray_NDIM((PyArrayObject *)o) == 0 && PyTypeNum_ISINTEGER(PyArray_TYPE((PyArrayObject *)o));
    return PyIndex_Check(o);
}

/* ---- shape arguments, with the errors of NumPy's PyArray_IntpConverter */

static int boolean_scalar(PyObject *o)
{
    return PyBool_Check(o) || PyArray_IsScalar(o, Bool) ||
           (nd_proxy_check(o) && nd_proxy_ndim(o) == 0 && nd_proxy_dtype(o) == NPY_BOOL);
}

PyObject *nd_shim_shape_items(PyObject *o)
{
    int nd = nd_proxy_check(o) ? nd_proxy_ndim(o) : PyArray_Check(o) ? PyArray_NDIM((PyArrayObject *)o) : -1;
    if (nd > 0) return PySequence_Tuple(o);
    int integer = nd < 0 ? nd_shim_index_like(o) && !boolean_scalar(o)
                  : PyTypeNum_ISINTEGER(nd_proxy_check(o) ? nd_proxy_dtype(o)
                                                          : PyArray_TYPE((PyArrayObject *)o));
    if (integer) return PyTuple_Pack(1, o);
    if (nd < 0 && PySequence_Check(o) && !boolean_scalar(o)) return PySequence_Tuple(o);
    PyObject *r = PyObject_Repr(o);
    if (r) {
        PyErr_Format(PyExc_TypeError, "expected a sequence of integers or a single integer, got '%U'", r);
        Py_DECREF(r);
    }
    return NULL;
}

int nd_shim_shape_item(PyObject *it, Py_ssize_t *v)
{
    if (boolean_scalar(it)) {
        PyErr_SetString(PyExc_TypeError, "an integer is required");
        return -1;
    }
    if (PyArray_Check(it) && PyArray_NDIM((PyArrayObject *)it) > 0) {
        PyErr_SetString(PyExc_TypeError, "only integer scalar arrays can be converted to a scalar index");
        return -1;
    }
    *v = PyNumber_AsSsize_t(it, PyExc_ValueError);
    return *v == -1 && PyErr_Occurred() ? -1 : 0;
}

int nd_shim_bool_arg(PyObject *obj, int dflt)
{
    if (!obj) return dflt;
    return PyObject_IsTrue(obj);
}

int nd_shim_axis_bool_refused(PyObject *axis, const char *msg)
{
    int n = axis && PyTuple_Check(axis) ? (int)PyTuple_GET_SIZE(axis) : 1;
    for (int i = 0; axis && i < n; i++) {
        PyObject *o = PyTuple_Check(axis) ? PyTuple_GET_ITEM(axis, i) : axis;
        if (PyBool_Check(o) || PyArray_IsScalar(o, Bool)) {
            PyErr_SetString(PyExc_TypeError, msg);
            return -1;
        }
    }
    return 0;
}

int nd_shim_keepdims_arg(PyObject *obj)
{
    if (!obj) return 0;
    PyObject *i = PyNumber_Index(obj);  /* NumPy's TypeError for None, str, np.bool_ */
    if (!i) return -1;
    int r = PyObject_IsTrue(i);
    Py_DECREF(i);
    return r;
}

/* 1 when out= is not plainly fine (see nd_shim_out_result) */
static int out_refused(PyObject *out, int ndim, const npy_intp *shape, int from, int want,
                       NPY_CASTING casting)
{
    int ond, odt;
    const npy_intp *osh;
    /* an element read (`o[1, 0]`) is a NumPy scalar, not an array: NumPy's
     * TypeError comes from its own call */
    if (nd_proxy_check(out) && nd_proxy_is_scalar(out)) return 1;
    if (nd_proxy_check(out)) {
        ond = nd_proxy_ndim(out);
        osh = nd_proxy_shape(out);
        odt = nd_proxy_dtype(out);
    } else if (PyArray_Check(out)) {
        ond = PyArray_NDIM((PyArrayObject *)out);
        osh = PyArray_DIMS((PyArrayObject *)out);
        odt = PyArray_TYPE((PyArrayObject *)out);
        if (!PyArray_ISNBO(PyArray_DESCR((PyArrayObject *)out)->byteorder)) return 1;
    } else {
        return 1;
    }
    if (ond != ndim) return 1;
    for (int d = 0; d < ndim; d++) if (osh[d] != shape[d]) return 1;
    if (want >= 0) return odt != want;
    PyArray_Descr *fd = PyArray_DescrFromType(from);
    PyArray_Descr *od = PyArray_Check(out) ? PyArray_DESCR((PyArrayObject *)out) : PyArray_DescrFromType(odt);
    int ok = fd && od && PyArray_CanCastTypeTo(fd, od, casting);
    Py_XDECREF(fd);
    if (!PyArray_Check(out)) Py_XDECREF(od);
    PyErr_Clear();  /* a dtype with no descr: refused */
    return !ok;
}

PyObject *nd_shim_out_result(nd_trace *t, PyObject *out, nd_id value, const nd_shim_out_rule *rule)
{
    if (value == ND_NONE) return NULL;
    if (rule->tuple1 && PyTuple_Check(out) && PyTuple_GET_SIZE(out) == 1) out = PyTuple_GET_ITEM(out, 0);
    nd_info vi;
    nd_shim_info(t, value, &vi);
    if (out_refused(out, vi.ndim, vi.shape, vi.dtype, rule->want, rule->check))
        return nd_shim_unsupported("%s", rule->refused);
    if (nd_shim_store_out(t, out, value, rule->ufunc_name, rule->store) < 0) return NULL;
    return Py_NewRef(out);
}

static const char *casting_names[] = {"no", "equiv", "safe", "same_kind", "unsafe"};

const char *nd_shim_casting_name(NPY_CASTING c)
{
    return (c >= 0 && c <= NPY_UNSAFE_CASTING) ? casting_names[c] : "?";
}

int nd_shim_casting_arg(PyObject *obj, NPY_CASTING dflt, NPY_CASTING *out)
{
    *out = dflt;
    if (!obj) return 0;
    if (PyUnicode_Check(obj)) {
        for (int i = 0; i < 5; i++) {
            if (PyUnicode_CompareWithASCIIString(obj, casting_names[i]) == 0) {
                *out = (NPY_CASTING)i;
                return 0;
            }
        }
    }
    PyErr_Format(PyExc_ValueError,
                 "casting must be one of 'no', 'equiv', 'safe', 'same_kind', 'unsafe' (got %R)", obj);
    return -1;
}

static int append_shape(char *buf, size_t cap, size_t *len, int ndim, const npy_intp *shape)
{
    /* NumPy prints () for 0-d, (3,) for 1-d, (2,3) otherwise */
    int w = snprintf(buf + *len, cap - *len, "(");
    for (int d = 0; w >= 0 && (size_t)w < cap - *len && d < ndim; d++) {
        *len += (size_t)w;
        w = snprintf(buf + *len, cap - *len, d ? ",%" NPY_INTP_FMT : "%" NPY_INTP_FMT, shape[d]);
    }
    if (w < 0 || (size_t)w >= cap - *len) return -1;
    *len += (size_t)w;
    w = snprintf(buf + *len, cap - *len, ndim == 1 ? ",) " : ") ");
    if (w < 0 || (size_t)w >= cap - *len) return -1;
    *len += (size_t)w;
    return 0;
}

int nd_shim_broadcast(int n, const int *ndims, const npy_intp *const *shapes,
                      int *ndim_out, npy_intp *shape_out)
{
    int nd = 0;
    for (int k = 0; k < n; k++) if (ndims[k] > nd) nd = ndims[k];
    if (nd > ND_MAXDIMS) {
        PyErr_SetString(PyExc_ValueError, "numdyn: rank above ND_MAXDIMS");
        return -1;
    }
    for (int d = 0; d < nd; d++) shape_out[d] = 1;
    for (int k = 0; k < n; k++) {
        int off = nd - ndims[k];
        for (int d = 0; d < ndims[k]; d++) {
            npy_intp s = shapes[k][d], *o = &shape_out[off + d];
            if (s == *o || s == 1) continue;
            if (*o == 1) { *o = s; continue; }
            char buf[1024];
            size_t len = 0;
            int ok = snprintf(buf, sizeof buf, "operands could not be broadcast together with shapes ") > 0;
            len = strlen(buf);
            for (int j = 0; ok && j < n; j++)
                ok = append_shape(buf, sizeof buf, &len, ndims[j], shapes[j]) == 0;
            PyErr_SetString(PyExc_ValueError, ok ? buf : "operands could not be broadcast together");
            return -1;
        }
    }
    *ndim_out = nd;
    return 0;
}
