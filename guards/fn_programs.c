/* fn_programs.c -- a compiled function's program table (fn_programs.h). */
#include "fn_programs.h"
#include "dim_marks.h"
#include "core/dtypes.h"
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
    }
}

static uint64_t sig_hash(uint64_t h, const nd_sigarg *s)
{
    h = nd_hash_mix(h, (uint64_t)(uintptr_t)s->type);
    if (s->typenum < 0) return h;
    h = nd_hash_mix(h, ((uint64_t)(uint32_t)s->typenum << 32) ^ ((uint64_t)s->ndim << 8) ^
                           ((uint64_t)s->layout << 2) ^ ((uint64_t)s->aligned << 1) ^ (uint64_t)s->swapped);
    h = nd_hash_mix(h, s->ones);
    if (s->stat) {
        h = nd_hash_mix(h, s->stat);
        for (int d = 0; d < s->ndim; d++)
            if (s->stat >> d & 1) h = nd_hash_mix(h, (uint64_t)s->size[d]);
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

uint64_t nd_progsig_hash(PyObject *const *args, size_t nargsf, PyObject *kwnames, int spec_all)
{
    Py_ssize_t npos = PyVectorcall_NARGS(nargsf);
    Py_ssize_t n = npos + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    uint64_t h = call_hash0(npos, kwnames);
    nd_sigarg s;
    for (Py_ssize_t i = 0; i < n; i++) {
        sig_of(args[i], spec_all, &s);
        h = sig_hash(h, &s);
    }
    return h;
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
            (a->stat != b->stat);
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
