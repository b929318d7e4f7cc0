/* fn_guards.c -- environment and call guards of a function's cache, and
 * its size limit (fn_guards.h). */
#include "core/npy.h"
#include "fn_guards.h"

/* ------------------------------------------------------ environment */

int nd_envguards_push(nd_envguards *e, int kind, PyObject *a, PyObject *b, PyObject *c,
                      PyObject *d)
{
    if (e->n == e->cap) {
        Py_ssize_t cap = e->cap ? e->cap * 2 : 16;
        nd_envguard *ng = PyMem_Realloc(e->g, sizeof(nd_envguard) * (size_t)cap);
        if (!ng) { PyErr_NoMemory(); return -1; }
        e->g = ng;
        e->cap = cap;
    }
    e->g[e->n++] = (nd_envguard){kind, Py_XNewRef(a), Py_XNewRef(b), Py_XNewRef(c), Py_XNewRef(d)};
    return 0;
}

int nd_envguards_ok(const nd_envguards *e, PyObject **why)
{
    for (Py_ssize_t i = 0; i < e->n; i++) {
        const nd_envguard *g = &e->g[i];
        PyObject *v;
        switch (g->kind) {
        case ND_EG_GLOBAL:
            v = PyDict_GetItemWithError(g->a, g->c);
            if (!v && !PyErr_Occurred() && g->b) v = PyDict_GetItemWithError(g->b, g->c);
            else if (v && g->b) v = NULL;  /* a new global shadows the builtin */
            if (!v && PyErr_Occurred()) PyErr_Clear();
            if (v == g->d) continue;
            if (why) *why = PyUnicode_FromFormat("global %U was rebound", g->c);
            return 0;
        case ND_EG_CELL:
            if (PyCell_GET(g->a) == g->d) continue;
            if (why) *why = PyUnicode_FromFormat("closure variable %U was rebound", g->c);
            return 0;
        default: {
            PyObject *d = PyFunction_GET_DEFAULTS(g->a), *kd = PyFunction_GET_KW_DEFAULTS(g->a);
            if (PyFunction_GET_CODE(g->a) == g->b && (d ? d : Py_None) == g->c &&
                (kd ? kd : Py_None) == g->d)
                continue;
            if (why) *why = PyUnicode_FromFormat("the code or defaults of %R changed", g->a);
            return 0;
        }
        }
    }
    return 1;
}

void nd_envguards_clear(nd_envguards *e)
{
    for (Py_ssize_t i = 0; i < e->n; i++) {
        nd_envguard *g = &e->g[i];
        Py_XDECREF(g->a);
        Py_XDECREF(g->b);
        Py_XDECREF(g->c);
        Py_XDECREF(g->d);
    }
    PyMem_Free(e->g);
    e->g = NULL;
    e->n = e->cap = 0;
}

int nd_envguards_traverse(const nd_envguards *e, visitproc visit, void *arg)
{
    for (Py_ssize_t i = 0; i < e->n; i++) {
        Py_VISIT(e->g[i].a);
        Py_VISIT(e->g[i].b);
        Py_VISIT(e->g[i].c);
        Py_VISIT(e->g[i].d);
    }
    return 0;
}

/* ------------------------------------------------------------ calls */

static int kwnames_equal(PyObject *a, PyObject *b)
{
    if (a == b) return 1;
    Py_ssize_t na = a ? PyTuple_GET_SIZE(a) : 0, nb = b ? PyTuple_GET_SIZE(b) : 0;
    if (na != nb) return 0;
    for (Py_ssize_t i = 0; i < na; i++) {
        PyObject *x = PyTuple_GET_ITEM(a, i), *y = PyTuple_GET_ITEM(b, i);
        if (x != y && PyUnicode_Compare(x, y) != 0) { PyErr_Clear(); return 0; }
    }
    return 1;
}

int nd_callguard_record(nd_callguard *c, PyObject *const *args, size_t nargsf,
                        PyObject *kwnames, const char **why)
{
    Py_ssize_t npos = PyVectorcall_NARGS(nargsf);
    Py_ssize_t n = npos + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    c->nargs = npos;
    c->kwnames = Py_XNewRef(kwnames);
    c->ag = PyMem_Calloc((size_t)(n ? n : 1), sizeof(nd_argguard));
    if (!c->ag) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < n; i++) {
        int k = nd_argguard_record(&c->ag[i], args, n, i, why);
        c->nag = i + 1;
        if (k) return k < 0 ? -1 : 1;
    }
    return 0;
}

int nd_callguard_fits(const nd_callguard *c, PyObject *const *args, size_t nargsf,
                      PyObject *kwnames)
{
    if (c->nargs != PyVectorcall_NARGS(nargsf) || !kwnames_equal(c->kwnames, kwnames)) return 0;
    for (Py_ssize_t i = 0; i < c->nag; i++)
        if (!nd_argguard_check(&c->ag[i], args, i)) return 0;
    return 1;
}

PyObject *nd_callguard_miss(const nd_callguard *c, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames)
{
    if (c->nargs != PyVectorcall_NARGS(nargsf) || !kwnames_equal(c->kwnames, kwnames))
        return PyUnicode_FromString("the arguments are passed differently (count or keywords)");
    for (Py_ssize_t i = 0; i < c->nag; i++)
        if (!nd_argguard_check(&c->ag[i], args, i)) return nd_argguard_miss(&c->ag[i], args, i);
    return PyUnicode_FromString("the matching entry is running on another thread");
}

void nd_callguard_clear(nd_callguard *c)
{
    Py_CLEAR(c->kwnames);
    if (c->ag) for (Py_ssize_t i = 0; i < c->nag; i++) nd_argguard_clear(&c->ag[i]);
    PyMem_Free(c->ag);
    c->ag = NULL;
    c->nag = c->nargs = 0;
}

/* ------------------------------------------------------------ limit */

long nd_guard_config_limit = 8;
