/* shim_inline.c -- NumPy functions that NumPy itself writes in Python, in
 * terms of other NumPy functions (np.rot90 is flips and a transpose,
 * np.average a weighted sum, np.cov centred matmuls...), are traced through
 * that Python code instead of breaking the graph: their array work reaches
 * the shim op by op, fuses with what surrounds it, and replays.
 *
 * The Python implementation is the one NumPy's dispatcher would run
 * (func._implementation). Only functions in the list below are inlined:
 * each was checked against NumPy on proxies (tests/test_inline_numpy.py),
 * because Python code written for ndarrays may inspect things a proxy does
 * not have (strides, flags, .flat). Array contents the code looks at (a
 * data-dependent branch, a Python scalar) are flushed as everywhere else.
 * If the inlined code raises, NumPy runs the function on the concrete
 * arrays instead (a recorded graph break): a genuine NumPy error is then
 * NumPy's own, and a proxy the code could not handle costs speed only.
 */
#include "shim_internal.h"
#include <string.h>

static const char *const inline_paths[] = {
    "rot90", "diag", "diagflat", "meshgrid", "average", "cross", "kron", "insert", "delete",
    "resize", "cov", "corrcoef", "ediff1d", "polyval", "vander", "trapezoid", "select",
    "sinc", "angle", "fix", "nanmean", "nansum", "nanmax", "nanmin", "nanvar", "nanstd",
    "nanprod", "nancumsum", "logspace", "geomspace", "append", "block", "copy", "isin",
    "gradient",
    "linalg.matrix_power", "linalg.multi_dot", "linalg.pinv", "linalg.cond",
    NULL,
};

static PyObject *inline_funcs;  /* set of the NumPy function objects */
static PyObject *remapped;      /* NumPy function -> its remapped implementation */

int nd_shim_inline_init(void)
{
    inline_funcs = PySet_New(NULL);
    remapped = PyDict_New();
    if (!inline_funcs || !remapped) return -1;
    PyObject *np = nd_shim_numpy();
    for (int i = 0; inline_paths[i]; i++) {
        PyObject *o = Py_NewRef(np);
        const char *p = inline_paths[i];
        while (o && *p) {
            const char *dot = strchr(p, '.');
            size_t n = dot ? (size_t)(dot - p) : strlen(p);
            char part[64];
            if (n >= sizeof part) { Py_CLEAR(o); break; }
            memcpy(part, p, n);
            part[n] = 0;
            Py_SETREF(o, PyObject_GetAttrString(o, part));
            p += n + (dot ? 1 : 0);
        }
        if (!o) { PyErr_Clear(); continue; }  /* not in this NumPy version */
        int rc = PySet_Add(inline_funcs, o);
        Py_DECREF(o);
        if (rc < 0) return -1;
    }
    return 0;
}

/* in a per-thread buffer, for the break reason of a failed inline */
static _Thread_local char why_buf[240];

PyObject *nd_shim_inline_call(PyObject *func, PyObject *args, PyObject *kwargs,
                              const char **why)
{
    *why = NULL;
    if (!inline_funcs) return NULL;
    int in = PySet_Contains(inline_funcs, func);
    if (in <= 0) {
        if (in < 0) PyErr_Clear();
        return NULL;
    }
    /* NumPy's Python code calls numpy's C functions by module-level names
     * (asanyarray, empty...): run a copy whose names point at the shim */
    PyObject *impl = PyDict_GetItemWithError(remapped, func);
    if (impl) {
        Py_INCREF(impl);
    } else {
        if (PyErr_Occurred()) return NULL;
        PyObject *orig = PyObject_GetAttrString(func, "_implementation");
        if (!orig) { PyErr_Clear(); return NULL; }
        if (!PyFunction_Check(orig)) { Py_DECREF(orig); return NULL; }
        impl = nd_trace_remap_function(orig);
        Py_DECREF(orig);
        if (!impl || PyDict_SetItem(remapped, func, impl) < 0) { Py_XDECREF(impl); return NULL; }
    }
    PyObject *r = PyObject_Call(impl, args, kwargs);
    Py_DECREF(impl);
    if (r) return r;
    /* NumPy decides on the concrete arrays: its own error, or its result */
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc = PyErr_GetRaisedException();
#else
    PyObject *et, *exc, *tb;
    PyErr_Fetch(&et, &exc, &tb);
    PyErr_NormalizeException(&et, &exc, &tb);
    Py_XDECREF(et);
    Py_XDECREF(tb);
#endif
    PyObject *name = PyObject_GetAttrString(func, "__name__");
    PyObject *s = exc ? PyObject_Str(exc) : NULL;
    if (!s) PyErr_Clear();
    snprintf(why_buf, sizeof why_buf, "numpy.%s: its Python code did not trace (%.120s); NumPy ran it",
             name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : "?",
             s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "?");
    if (PyErr_Occurred()) PyErr_Clear();
    Py_XDECREF(s);
    Py_XDECREF(exc);
    Py_XDECREF(name);
    *why = why_buf;
    return NULL;
}
