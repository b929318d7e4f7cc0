/* fn_programs.c -- a compiled function's program table (fn_programs.h). */
#include "fn_programs.h"
#include "dim_marks.h"
#include "core/dtypes.h"
#include "core/counters.h"
#include "graph/hash.h"
#include <string.h>

static void sig_of(PyObject *o, int spec_all, nd_sigarg *s)
{
    memset(s, 0, sizeof *s);
    s->type = (PyObject *)Py_TYPE(o);
    s->typenum = -1;
    if (!PyArray_Check(o)) return;
    PyArrayObject *a = (PyArrayObject *)o;
    int f = PyArray_FLAGS(a);
    s->typenum = PyArray_TYPE(a);
    s->ndim = PyArray_NDIM(a);
    s->layout = (f & NPY_ARRAY_C_CONTIGUOUS) ? 1 : (f & NPY_ARRAY_F_CONTIGUOUS) ? 2 : 3;
    s->aligned = !!(f & NPY_ARRAY_ALIGNED);
    s->swapped = !PyArray_ISNOTSWAPPED(a);
    for (int d = 0; d < s->ndim && d < 64; d++)
        if (PyArray_DIM(a, d) == 1) s->ones |= 1ULL << d;
    if (nd_marks_live || spec_all) {
        s->stat = nd_marks_static_dims(o, spec_all);
        for (int d = 0; d < s->ndim; d++)
            if (s->stat >> d & 1) s->size[d] = PyArray_DIM(a, d);
        if (nd_marks_live && nd_marks_address(o) == 2) s->addr = PyArray_DATA(a);
    }
}

/* an array argument? Exact ndarrays and the common Python scalars are
 * told apart without PyType_IsSubtype's walk of the type's MRO (every
 * non-array argument paid it, twice a call) */
static inline int is_array(PyObject *o)
{
    PyTypeObject *t = Py_TYPE(o);
    if (t == &PyArray_Type) return 1;
    if (t == &PyFloat_Type || t == &PyLong_Type || t == &PyUnicode_Type || t == &PyBool_Type ||
        t == &PyTuple_Type || t == &PyList_Type || o == Py_None)
        return 0;
    return PyType_IsSubtype(t, &PyArray_Type);
}

/* The program hash of one argument: the fields sig_of records, hashed as
 * they are read (no nd_sigarg built: its memset of ND_MAXDIMS sizes was
 * most of the hash's cost) */
static uint64_t prog_mix(uint64_t h, PyObject *o, int arr, int spec_all)
{
    h = nd_hash_mix(h, (uint64_t)(uintptr_t)Py_TYPE(o));
    if (!arr) return h;
    PyArrayObject *a = (PyArrayObject *)o;
    int f = PyArray_FLAGS(a), nd = PyArray_NDIM(a);
    int layout = (f & NPY_ARRAY_C_CONTIGUOUS) ? 1 : (f & NPY_ARRAY_F_CONTIGUOUS) ? 2 : 3;
    uint64_t ones = 0;
    for (int d = 0; d < nd && d < 64; d++)
        if (PyArray_DIM(a, d) == 1) ones |= 1ULL << d;
    h = nd_hash_mix(h, ((uint64_t)(uint32_t)PyArray_TYPE(a) << 32) ^ ((uint64_t)nd << 8) ^
                           ((uint64_t)layout << 2) ^ ((uint64_t)!!(f & NPY_ARRAY_ALIGNED) << 1) ^
                           (uint64_t)!PyArray_ISNOTSWAPPED(a));
    h = nd_hash_mix(h, ones);
    if (nd_marks_live || spec_all) {
        uint64_t stat = nd_marks_static_dims(o, spec_all);
        if (stat) {
            h = nd_hash_mix(h, stat);
            for (int d = 0; d < nd; d++)
                if (stat >> d & 1) h = nd_hash_mix(h, (uint64_t)PyArray_DIM(a, d));
        }
        if (nd_marks_live && nd_marks_address(o) == 2)
            h = nd_hash_mix(h ^ 0x61646472ULL, (uint64_t)(uintptr_t)PyArray_DATA(a));
    }
    return h;
}

/* What decides a call's cost (fn_programs.h nd_callsig). Sizes count by
 * class -- which dims are 0 or 1, and the element count to a factor of 4
 * -- not exactly: a function called on segments of many lengths (one per
 * row of ragged data) got a floor signature per length, so the floor
 * measured each anew and numdyn's path ran its first calls for every
 * length, never deciding (0.44x NumPy on 2000 segments of 5..400 elements
 * where each length alone goes to NumPy). Within a class the paths' costs
 * move together. */
static uint64_t size_class(PyArrayObject *a)
{
    uint64_t edges = 0, size = 1;
    for (int i = 0; i < PyArray_NDIM(a); i++) {
        npy_intp d = PyArray_DIM(a, i);
        edges = edges << 2 | (uint64_t)(d < 2 ? d : 2);
        size *= (uint64_t)d;
    }
    int lg = 0;
    while (size >>= 2) lg++;
    return edges << 6 | (uint64_t)lg;
}

static uint64_t cost_mix(uint64_t h, PyObject *o, int arr, int depth)
{
    h = nd_hash_mix(h, (uint64_t)(uintptr_t)Py_TYPE(o));
    if (arr) {
        PyArrayObject *a = (PyArrayObject *)o;
        h = nd_hash_mix(h, (uint64_t)PyArray_TYPE(a));
        h = nd_hash_mix(h, (uint64_t)PyArray_NDIM(a));
        h = nd_hash_mix(h, size_class(a));
        h = nd_hash_mix(h, (uint64_t)(PyArray_FLAGS(a) & (NPY_ARRAY_C_CONTIGUOUS |
                                                          NPY_ARRAY_F_CONTIGUOUS |
                                                          NPY_ARRAY_WRITEABLE)));
    } else if ((PyTuple_CheckExact(o) || PyList_CheckExact(o)) && depth < 2) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        int lg = 0;   /* the length by class too (a list of 3..60 pieces) */
        for (Py_ssize_t m = n; m > 3; m >>= 2) lg++;
        h = nd_hash_mix(h, (uint64_t)(n < 4 ? n : 4 + lg));
        for (Py_ssize_t i = 0; i < n && i < 16; i++) {
            PyObject *x = PySequence_Fast_GET_ITEM(o, i);
            h = cost_mix(h, x, is_array(x), depth + 1);
        }
    } else if (PyUnicode_CheckExact(o) || PyBool_Check(o) || o == Py_None) {
        Py_hash_t v = PyObject_Hash(o);
        if (v == -1) PyErr_Clear();
        h = nd_hash_mix(h, (uint64_t)v);
    }
    return h;
}

static uint64_t call_hash0(Py_ssize_t npos, PyObject *kwnames)
{
    uint64_t h = nd_hash_mix(0x70726f6772616d73ULL, (uint64_t)npos);
    if (kwnames)
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            Py_hash_t kh = PyObject_Hash(PyTuple_GET_ITEM(kwnames, i));  /* str: cached, never fails */
            h = nd_hash_mix(h, (uint64_t)kh);
        }
    return h;
}

uint64_t nd_callsig(PyObject *const *args, size_t nargsf, PyObject *kwnames, int spec_all,
                    uint64_t *cost)
{
    Py_ssize_t npos = PyVectorcall_NARGS(nargsf);
    Py_ssize_t n = npos + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    uint64_t h = call_hash0(npos, kwnames);
    uint64_t c = nd_hash_mix(0x6e64666c6f6f72ULL, (uint64_t)n);
    for (Py_ssize_t i = 0; i < n; i++) {
        int arr = is_array(args[i]);
        h = prog_mix(h, args[i], arr, spec_all);
        if (cost) c = cost_mix(c, args[i], arr, 0);
    }
    if (cost) *cost = c;
    nd_counter_add(ND_CTR_ARG_SIGNATURES, 1);
    return h;
}

uint64_t nd_progsig_hash(PyObject *const *args, size_t nargsf, PyObject *kwnames, int spec_all)
{
    return nd_callsig(args, nargsf, kwnames, spec_all, NULL);
}

Py_ssize_t nd_programs_find(const nd_programs *p, uint64_t hash)
{
    for (Py_ssize_t i = p->n - 1; i >= 0; i--)
        if (p->e[i].hash == hash) return i;
    return -1;
}

Py_ssize_t nd_programs_add(nd_programs *p, uint64_t hash, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames, int spec_all)
{
    if (p->n == p->cap) {
        Py_ssize_t cap = p->cap ? 2 * p->cap : 4;
        nd_progent *ne = PyMem_Realloc(p->e, sizeof(nd_progent) * (size_t)cap);
        if (!ne) { PyErr_NoMemory(); return -1; }
        p->e = ne;
        p->cap = cap;
    }
    Py_ssize_t npos = PyVectorcall_NARGS(nargsf);
    int n = (int)(npos + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0));
    nd_progent *e = &p->e[p->n];
    memset(e, 0, sizeof *e);
    e->a = PyMem_Calloc((size_t)(n ? n : 1), sizeof(nd_sigarg));
    if (!e->a) { PyErr_NoMemory(); return -1; }
    e->hash = hash;
    e->nargs = npos;
    e->kwnames = Py_XNewRef(kwnames);
    e->n = n;
    for (int i = 0; i < n; i++) {
        sig_of(args[i], spec_all, &e->a[i]);
        Py_INCREF(e->a[i].type);
    }
    return p->n++;
}

/* ---------------------------------------------------------- reasons */

static PyObject *arg_name(const nd_progent *e, int i, PyObject *names)
{
    if (i >= e->nargs) return PyUnicode_FromFormat("L['%U']", PyTuple_GET_ITEM(e->kwnames, i - e->nargs));
    if (names && PyTuple_Check(names) && i < PyTuple_GET_SIZE(names))
        return PyUnicode_FromFormat("L['%U']", PyTuple_GET_ITEM(names, i));
    return PyUnicode_FromFormat("argument %d", i);
}

static const char *layout_name(int l)
{
    return l == 1 ? "C-contiguous" : l == 2 ? "F-contiguous" : "strided";
}

static PyObject *dims_text(uint64_t m, int ndim)
{
    PyObject *l = PyList_New(0);
    for (int d = 0; l && d < ndim && d < 64; d++) {
        if (!(m >> d & 1)) continue;
        PyObject *v = PyLong_FromLong(d);
        if (!v || PyList_Append(l, v) < 0) Py_CLEAR(l);
        Py_XDECREF(v);
    }
    if (!l) return NULL;
    PyObject *t = PyList_AsTuple(l);
    Py_DECREF(l);
    PyObject *r = t ? PyObject_Repr(t) : NULL;
    Py_XDECREF(t);
    return r;
}

/* the guard of one argument as text (new ref) */
static PyObject *guard_text(const nd_progent *e, int i, PyObject *names)
{
    const nd_sigarg *s = &e->a[i];
    PyObject *nm = arg_name(e, i, names);
    if (!nm) return NULL;
    PyObject *r;
    if (s->typenum < 0) {
        r = PyUnicode_FromFormat("%U: type is %s", nm, ((PyTypeObject *)s->type)->tp_name);
    } else {
        PyObject *ones = dims_text(s->ones, s->ndim);
        PyObject *stat = PyUnicode_FromString("");
        for (int d = 0; stat && d < s->ndim; d++) {
            if (!(s->stat >> d & 1)) continue;
            PyObject *x = PyUnicode_FromFormat("%U, size of dim %d == %zd", stat, d, (Py_ssize_t)s->size[d]);
            Py_SETREF(stat, x);
        }
        r = ones && stat
            ? PyUnicode_FromFormat("%U: type is %s, dtype %s, ndim %d, %s, size-1 dims %U%s%s%U", nm,
                                   ((PyTypeObject *)s->type)->tp_name, nd_dtype_name(s->typenum),
                                   s->ndim, layout_name(s->layout), ones,
                                   s->aligned ? ", aligned" : ", unaligned",
                                   s->swapped ? ", byte-swapped" : "", stat)
            : NULL;
        if (r && s->addr) Py_SETREF(r, PyUnicode_FromFormat("%U, data_ptr == %p", r, s->addr));
        Py_XDECREF(ones);
        Py_XDECREF(stat);
    }
    Py_DECREF(nm);
    return r;
}

static int kw_equal(PyObject *a, PyObject *b)
{
    Py_ssize_t na = a ? PyTuple_GET_SIZE(a) : 0, nb = b ? PyTuple_GET_SIZE(b) : 0;
    if (na != nb) return 0;
    for (Py_ssize_t i = 0; i < na; i++) {
        int eq = PyUnicode_Compare(PyTuple_GET_ITEM(a, i), PyTuple_GET_ITEM(b, i)) == 0;
        if (!eq) { PyErr_Clear(); return 0; }
    }
    return 1;
}

/* how many guarded properties differ (0: the argument fits) */
static int arg_differs(const nd_sigarg *a, const nd_sigarg *b)
{
    if (a->type != b->type) return 8;
    if (a->typenum < 0) return 0;
    int k = (a->typenum != b->typenum) + (a->ndim != b->ndim) + (a->layout != b->layout) +
            (a->aligned != b->aligned) + (a->swapped != b->swapped) + (a->ones != b->ones) +
            (a->stat != b->stat) + (a->addr != b->addr);
    for (int d = 0; d < a->ndim && d < b->ndim; d++)
        if ((a->stat >> d & 1) && (b->stat >> d & 1) && a->size[d] != b->size[d]) k++;
    return k;
}

/* why new argument `now` fails entry argument `was` (new ref) */
static PyObject *arg_reason(PyObject *nm, const nd_sigarg *was, const nd_sigarg *now)
{
    const char *tw = ((PyTypeObject *)was->type)->tp_name, *tn = ((PyTypeObject *)now->type)->tp_name;
    if (was->type != now->type) return PyUnicode_FromFormat("%U: type changed: %s -> %s", nm, tw, tn);
    if (was->typenum != now->typenum)
        return PyUnicode_FromFormat("%U: dtype changed: %s -> %s", nm, nd_dtype_name(was->typenum),
                                    nd_dtype_name(now->typenum));
    if (was->ndim != now->ndim)
        return PyUnicode_FromFormat("%U: ndim changed: %d -> %d", nm, was->ndim, now->ndim);
    for (int d = 0; d < was->ndim; d++)
        if ((was->stat >> d & 1) && (now->stat >> d & 1) && was->size[d] != now->size[d])
            return PyUnicode_FromFormat("%U: size of static dim %d changed: %zd -> %zd", nm, d,
                                        (Py_ssize_t)was->size[d], (Py_ssize_t)now->size[d]);
    if (was->stat != now->stat)
        return PyUnicode_FromFormat("%U: its dims marked static changed", nm);
    if (was->addr != now->addr) {
        if (was->addr && now->addr)
            return PyUnicode_FromFormat("%U: data_ptr changed: %p -> %p (marked by "
                                        "mark_static_address(guard=True))", nm, was->addr, now->addr);
        return PyUnicode_FromFormat("%U: its mark_static_address(guard=True) changed", nm);
    }
    if (was->ones != now->ones) {
        PyObject *a = dims_text(was->ones, was->ndim), *b = dims_text(now->ones, now->ndim);
        PyObject *r = a && b ? PyUnicode_FromFormat("%U: size-1 dims (broadcasting) changed: %U -> %U",
                                                    nm, a, b) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(b);
        return r;
    }
    if (was->layout != now->layout)
        return PyUnicode_FromFormat("%U: layout changed: %s -> %s", nm, layout_name(was->layout),
                                    layout_name(now->layout));
    if (was->aligned != now->aligned)
        return PyUnicode_FromFormat("%U: alignment changed: %s -> %s", nm,
                                    was->aligned ? "aligned" : "unaligned",
                                    now->aligned ? "aligned" : "unaligned");
    return PyUnicode_FromFormat("%U: byte order changed", nm);
}

PyObject *nd_programs_miss(const nd_programs *p, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames, int spec_all, PyObject *names, PyObject **guard)
{
    *guard = NULL;
    Py_ssize_t npos = PyVectorcall_NARGS(nargsf);
    int n = (int)(npos + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0));
    if (p->n == 0) return PyUnicode_FromString("no program compiled yet");
    nd_sigarg *now = PyMem_Calloc((size_t)(n ? n : 1), sizeof(nd_sigarg));
    if (!now) return PyErr_NoMemory();
    for (int i = 0; i < n; i++) sig_of(args[i], spec_all, &now[i]);
    /* the nearest program: same call shape, fewest differing arguments */
    Py_ssize_t best = -1;
    int bestd = 8 * n + 1;
    for (Py_ssize_t k = p->n - 1; k >= 0; k--) {
        const nd_progent *e = &p->e[k];
        if (e->nargs != npos || !kw_equal(e->kwnames, kwnames)) continue;
        int d = 0;
        for (int i = 0; i < n; i++) d += arg_differs(&e->a[i], &now[i]);
        if (d < bestd) { bestd = d; best = k; }
    }
    PyObject *r = NULL;
    if (best < 0) {
        r = PyUnicode_FromString("the arguments are passed differently (count or keywords)");
        *guard = PyUnicode_FromFormat("%zd positional arguments, keywords %R", p->e[p->n - 1].nargs,
                                      p->e[p->n - 1].kwnames ? p->e[p->n - 1].kwnames : Py_None);
    } else {
        const nd_progent *e = &p->e[best];
        for (int i = 0; i < n; i++) {
            if (!arg_differs(&e->a[i], &now[i])) continue;
            PyObject *nm = arg_name(e, i, names);
            r = nm ? arg_reason(nm, &e->a[i], &now[i]) : NULL;
            Py_XDECREF(nm);
            if (r && !(*guard = guard_text(e, i, names))) Py_CLEAR(r);
            break;
        }
        if (!r && !PyErr_Occurred())
            r = PyUnicode_FromString("the signature's hash collided with another program");
    }
    PyMem_Free(now);
    return r;
}

PyObject *nd_programs_guards(const nd_programs *p, Py_ssize_t i, PyObject *names)
{
    const nd_progent *e = &p->e[i];
    PyObject *l = PyList_New(0);
    if (!l) return NULL;
    PyObject *call = PyUnicode_FromFormat("%zd positional arguments, keywords %R", e->nargs,
                                          e->kwnames ? e->kwnames : Py_None);
    if (!call || PyList_Append(l, call) < 0) { Py_XDECREF(call); Py_DECREF(l); return NULL; }
    Py_DECREF(call);
    for (int k = 0; k < e->n; k++) {
        PyObject *g = guard_text(e, k, names);
        if (!g || PyList_Append(l, g) < 0) { Py_XDECREF(g); Py_DECREF(l); return NULL; }
        Py_DECREF(g);
    }
    return l;
}

void nd_programs_clear(nd_programs *p)
{
    for (Py_ssize_t k = 0; k < p->n; k++) {
        nd_progent *e = &p->e[k];
        for (int i = 0; i < e->n; i++) Py_XDECREF(e->a[i].type);
        PyMem_Free(e->a);
        Py_XDECREF(e->kwnames);
    }
    PyMem_Free(p->e);
    p->e = NULL;
    p->n = p->cap = 0;
}

int nd_programs_traverse(const nd_programs *p, visitproc visit, void *arg)
{
    for (Py_ssize_t k = 0; k < p->n; k++) {
        Py_VISIT(p->e[k].kwnames);
        for (int i = 0; i < p->e[k].n; i++) Py_VISIT(p->e[k].a[i].type);
    }
    return 0;
}
