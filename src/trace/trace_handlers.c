/* trace_handlers.c -- an exception is raised inside the try block that
 * would have caught it.
 *
 * A traced operation runs later, when its graph is flushed. Most errors are
 * known while tracing (shapes, dtypes, axes) and raise at once; a few
 * depend on the data and only surface when the graph runs: LinAlgError of
 * a singular matrix, ValueError of np.bincount's negative input, an integer
 * to a negative power, FloatingPointError under np.errstate(...="raise").
 * Run at the next flush, such an error would escape
 *
 *     try:
 *         L = np.linalg.cholesky(A)
 *     except np.linalg.LinAlgError:
 *         L = None
 *
 * a program NumPy runs to its end. So after each traced operation that may
 * raise when it runs, the user's frames between the operation and the
 * compiled function are asked whether an exception raised now would reach
 * a handler (the code object's exception table, CPython >= 3.11: try,
 * with, and the cleanup of an except body); if one would, the pending
 * graph runs now and the error, if any, is raised inside the block. Such a
 * call is not recorded for replay (a replayed call has no Python frames to
 * catch it). Outside handlers nothing changes: an error raised at the next
 * flush propagates out of the compiled function as NumPy's would.
 */
#include "trace_internal.h"
#include "graph/graph.h"
#include <frameobject.h>
#include <string.h>

/* NumPy functions run as EXTERN nodes that never raise because of the
 * values they are given (their argument checks are made while tracing) */
static const char *const never_raise[] = {
    "matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "kron", "cross",
    "sort", "argsort", "partition", "argpartition", "lexsort", "searchsorted",
    "fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
    "rfftn", "irfftn", "hfft", "ihfft", "fftshift", "ifftshift",
    "det", "slogdet", "qr", "norm", "trace", "convolve", "correlate", "unique",
    "median", "percentile", "quantile", "nanmedian", "nanpercentile", "nanquantile",
    "cumsum", "cumprod", "diff", "gradient", "trapezoid", "polyval", "roll", "pad",
    NULL,
};

int nd__extern_may_raise(const nd_node *n)
{
    PyObject *fn = n->obj;
    if (!fn) return 1;
    PyObject *name = PyObject_GetAttrString(fn, "__name__");
    if (!name) { PyErr_Clear(); return 1; }
    int safe = 0;
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) PyErr_Clear();
    for (int i = 0; s && never_raise[i] && !safe; i++) safe = strcmp(s, never_raise[i]) == 0;
    Py_DECREF(name);
    return !safe;
}

/* The error state ops traced now run under: t->fpstate once an op synced
 * it, else the context's current one (an op reached through another
 * array's __array_ufunc__ has not synced yet). New ref, or NULL. */
static PyObject *current_fpstate(nd_trace *t)
{
    if (t->fpstate) return Py_NewRef(t->fpstate);
    PyObject *cv = nd__extobj_var(), *cur = NULL;
    if (cv && PyContextVar_Get(cv, NULL, &cur) < 0) PyErr_Clear();
    return cur;
}

/* np.geterr() has "raise" or "call" for some category: any arithmetic may
 * raise when it runs; or "warn" for some category under a warnings filter
 * 'error' (`warnings.simplefilter("error")` inside the try block: NumPy's
 * RuntimeWarning is then an exception the block catches). The error state
 * is cached per error-state object (a new one per np.errstate /
 * np.seterr): asking np.geterr() builds a dict, and a traced call asks
 * once per arithmetic operation; the filters are read each time (they
 * change without a new error state). */
static int errstate_raises(nd_trace *t)
{
    static PyObject *geterr;
    static PyObject *seen;   /* owned: the state last asked about */
    static int seen_raises, seen_warns;
    PyObject *state = current_fpstate(t);
    if (state && state == seen) {
        Py_DECREF(state);
        goto warns;
    }
    if (!geterr) {
        PyObject *np = PyImport_ImportModule("numpy");
        geterr = np ? PyObject_GetAttrString(np, "geterr") : NULL;
        Py_XDECREF(np);
        if (!geterr) { PyErr_Clear(); Py_XDECREF(state); return 1; }
    }
    nd_counter_add(ND_CTR_ERRSTATE_QUERIES, 1);
    PyObject *d = PyObject_CallNoArgs(geterr);
    if (!d) { PyErr_Clear(); Py_XDECREF(state); return 1; }
    int raises = 0, warns = 0;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Check(d) && PyDict_Next(d, &pos, &k, &v)) {
        if (PyUnicode_Check(v) && (PyUnicode_CompareWithASCIIString(v, "raise") == 0 ||
                                   PyUnicode_CompareWithASCIIString(v, "call") == 0))
            raises = 1;
        if (PyUnicode_Check(v) && PyUnicode_CompareWithASCIIString(v, "warn") == 0) warns = 1;
    }
    Py_DECREF(d);
    Py_XSETREF(seen, state);  /* (NULL: not cached) */
    seen_raises = raises;
    seen_warns = warns;
warns:
    if (seen_raises || !seen_warns) return seen_raises;
    int w = nd__warnings_may_raise();
    if (w < 0) { PyErr_Clear(); return 1; }
    return w;
}

static int may_raise(nd_trace *t, const nd_node *n)
{
    switch (n->op) {
    case ND_OP_EXTERN:
        return nd__extern_may_raise(n);
    case ND_OP_SETITEM:
        if (n->flags & ND_F_SCALAR_STORE) return 1;  /* int() of a stored scalar */
        return errstate_raises(t);
    case ND_OP_UFUNC:
        if ((n->sub == ND_UF_POWER) && PyTypeNum_ISINTEGER(n->dtype)) return 1;
        /* fallthrough */
    case ND_OP_REDUCE:
    case ND_OP_SCAN:
    case ND_OP_CAST:
        return errstate_raises(t);
    default:
        return 0;
    }
}

#if PY_VERSION_HEX >= 0x030B0000
/* CPython's exception table (Objects/exception_handling_notes.txt): entries
 * of varints (6 bits a byte, 0x40 = more follows; an entry's first byte has
 * 0x80): start, length (code units), target, depth and lasti. */
static int read_varint(const unsigned char **p, const unsigned char *end, long *out)
{
    if (*p >= end) return -1;
    unsigned b = *(*p)++;
    long v = b & 63;
    while (b & 64) {
        if (*p >= end) return -1;
        b = *(*p)++;
        v = (v << 6) | (b & 63);
    }
    *out = v;
    return 0;
}

static int covered(PyCodeObject *co, int lasti_bytes)
{
    PyObject *tab = PyObject_GetAttrString((PyObject *)co, "co_exceptiontable");
    if (!tab) { PyErr_Clear(); return 1; }
    int hit = 0;
    if (PyBytes_Check(tab)) {
        const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(tab);
        const unsigned char *end = p + PyBytes_GET_SIZE(tab);
        long unit = lasti_bytes / 2, start, len, target, dl;
        while (p < end && !hit) {
            if (read_varint(&p, end, &start) || read_varint(&p, end, &len) ||
                read_varint(&p, end, &target) || read_varint(&p, end, &dl)) {
                hit = 1;  /* unreadable: assume a handler */
                break;
            }
            hit = unit >= start && unit < start + len;
        }
    }
    Py_DECREF(tab);
    return hit;
}
#endif

/* an exception raised now, in the innermost Python frame, would meet a
 * handler before leaving the compiled function's frame */
static int in_handler(nd_trace *t)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyFrameObject *f = PyEval_GetFrame();
    Py_XINCREF(f);
    int hit = 0;
    while (f && f != t->entry_frame && !hit) {
        PyCodeObject *co = PyFrame_GetCode(f);
        hit = covered(co, PyFrame_GetLasti(f));
        Py_DECREF(co);
        PyFrameObject *b = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = b;
    }
    Py_XDECREF(f);
    return hit;
#else
    (void)t;
    return 1;  /* no exception table to read: every such operation runs now */
#endif
}

int nd_trace_settle(nd_trace *t, nd_id first)
{
    if (!t || t->flushing || t->ended || nd_trace_op_depth > 0) return 0;
    if (nd__flush_chunk(t) < 0) return -1;
    if (t->shared_touch) {  /* caller memory the code also reaches untraced */
        t->shared_touch = 0;
        return nd__flush_all(t);
    }
    nd_graph *g = t->g;
    int risky = 0;
    for (nd_id i = first; i < g->n && !risky; i++) risky = may_raise(t, &g->nodes[i]);
    if (!risky || !in_handler(t)) return 0;
    nd_trace_not_replayable(t);
    return nd__flush_all(t);
}
