/* trace_control.c -- admission of top-level calls of compiled functions:
 * recompiles, cache_size_limit, stances, frozen mode, the guard hooks,
 * compile times (trace_control.h). */
#include "trace_control.h"
#include "trace/loop.h"
#include "toolchain/toolchain.h"
#include <limits.h>
#include <time.h>

int nd__ctl_enabled = 1;
int nd__ctl_stance = ND_STANCE_DEFAULT;
static int ctl_error_on_recompile;      /* numdyn.config.error_on_recompile */
_Thread_local int nd__tls_frozen;
_Thread_local int nd__tls_break_errors = -1;
/* numdyn.config.accumulated_recompile_limit: recompiles (programs past a
 * function's first) allowed over all functions of the process; and how
 * many happened */
static long ctl_accumulated_limit = 256;
static long ctl_recompiles;

static PyObject *RecompileError;
static PyObject *ConstraintViolationError;
static PyTypeObject *GuardFail_Type;

/* the code object a compiled callable runs (torch's GuardFail.orig_code is
 * the frame's f_code): a function's __code__, through __wrapped__, a
 * partial's func, an object's forward or its type's __call__; None when
 * it has no Python code (a builtin). New reference, NULL on error. */
static int opt_attr(PyObject *o, const char *name, PyObject **out)
{
    *out = PyObject_GetAttrString(o, name);
    if (*out) return 1;
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
    PyErr_Clear();
    return 0;
}

static PyObject *code_of(PyObject *fn)
{
    static const char *const via[] = {"__wrapped__", "func", "forward", NULL};
    Py_INCREF(fn);
    for (int depth = 0; depth < 8; depth++) {
        PyObject *code;
        if (opt_attr(fn, "__code__", &code) < 0) { Py_DECREF(fn); return NULL; }
        if (code && PyCode_Check(code)) { Py_DECREF(fn); return code; }
        Py_XDECREF(code);
        PyObject *next = NULL;
        for (int k = 0; via[k] && !next; k++)
            if (opt_attr(fn, via[k], &next) < 0) { Py_DECREF(fn); return NULL; }
        if (!next && !PyType_Check(fn) && !PyFunction_Check(fn) && !PyMethod_Check(fn) &&
            opt_attr((PyObject *)Py_TYPE(fn), "__call__", &next) < 0) {
            Py_DECREF(fn);
            return NULL;
        }
        Py_DECREF(fn);
        if (!next) Py_RETURN_NONE;
        fn = next;
    }
    Py_DECREF(fn);
    Py_RETURN_NONE;
}
static PyObject *compile_times;         /* qualname -> [seconds, ...] */
static const char *stance_names[] = {"default", "force_eager", "eager_on_recompile",
                                     "fail_on_recompile"};

double nd__ctl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static PyObject *qualname(PyObject *fn)
{
    PyObject *n = PyObject_GetAttrString(fn, "__qualname__");
    if (!n) {
        PyErr_Clear();
        n = PyObject_Repr(fn);
    }
    return n;
}

/* what makes two compiled functions the same one for reports: a Python
 * function's code object (closures of one def are one function), else the
 * callable itself; new ref */
static PyObject *identity(PyObject *fn)
{
    if (PyMethod_Check(fn)) fn = PyMethod_GET_FUNCTION(fn);
    if (PyFunction_Check(fn)) return Py_NewRef(PyFunction_GET_CODE(fn));
    return Py_NewRef(fn);
}

PyObject *nd__ctl_qualname(nd_ctl *c)
{
    if (c->report) return Py_NewRef(c->report);
    static PyObject *owners;  /* qualname -> identity of the first function reported under it */
    PyObject *name = qualname(c->fn);
    PyObject *id = name ? identity(c->fn) : NULL;
    if (!id || (!owners && !(owners = PyDict_New()))) goto fail;
    PyObject *o = PyDict_GetItemWithError(owners, name);
    if (!o) {
        if (PyErr_Occurred() || PyDict_SetItem(owners, name, id) < 0) goto fail;
    } else if (o != id) {
        /* two modules' `f`, lambdas, two classes' methods: their reports
         * must not merge */
        if (PyCode_Check(id)) {
            PyCodeObject *co = (PyCodeObject *)id;
            Py_SETREF(name, PyUnicode_FromFormat("%U (%U:%d)", name, co->co_filename, co->co_firstlineno));
        } else {
            Py_SETREF(name, PyUnicode_FromFormat("%U (at %p)", name, (void *)id));
        }
        if (!name) goto fail;
    }
    Py_DECREF(id);
    c->report = Py_NewRef(name);
    return name;
fail:
    Py_XDECREF(name);
    Py_XDECREF(id);
    return NULL;
}

/* positional parameter names of fn (a bound method's without self) */
static PyObject *param_names(PyObject *fn)
{
    int skip = 0;
    if (PyMethod_Check(fn)) { fn = PyMethod_GET_FUNCTION(fn); skip = 1; }
    if (!PyFunction_Check(fn)) return NULL;
    PyCodeObject *co = (PyCodeObject *)PyFunction_GET_CODE(fn);
    PyObject *vn = PyObject_GetAttrString((PyObject *)co, "co_varnames");
    if (!vn) { PyErr_Clear(); return NULL; }
    PyObject *r = PyTuple_GetSlice(vn, skip, co->co_argcount);
    Py_DECREF(vn);
    if (!r) PyErr_Clear();
    return r;
}

/* numdyn.config.<name> as a truth value (dflt when the config has no such
 * attribute); -1 with an exception set */
static int config_flag(const char *name, int dflt)
{
    PyObject *cfg = PyImport_ImportModule("numdyn.config");
    if (!cfg) return -1;
    PyObject *v = PyObject_GetAttrString(cfg, name);
    Py_DECREF(cfg);
    if (!v) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        return dflt;
    }
    int on = PyObject_IsTrue(v);
    Py_DECREF(v);
    return on;
}

nd_ctl *nd__ctl_new(PyObject *fn, PyObject *options, PyObject *dynamic,
                    PyObject *guard_fail_fn, PyObject *guard_export_fn)
{
    nd_ctl *c = PyMem_Calloc(1, sizeof *c);
    if (!c) return (nd_ctl *)PyErr_NoMemory();
    c->fn = fn;
    c->limit = -1;
    c->spec_all = dynamic == Py_False;
    if (dynamic == Py_None) {
        /* torch._dynamo.config.automatic_dynamic_shapes: dynamic=None
         * means "dynamic once sizes change" while it is True -- numdyn's
         * shape-generic kernels from the first call; False: every size
         * specialized, as dynamic=False. Read when compile is called. */
        int autodyn = config_flag("automatic_dynamic_shapes", 1);
        if (autodyn < 0) { PyMem_Free(c); return NULL; }
        c->spec_all = !autodyn;
    }
    if (options && PyDict_Check(options)) {
        PyObject *v = PyDict_GetItemString(options, "cache_size_limit");
        if (v) {
            long l = PyLong_AsLong(v);
            if (l == -1 && PyErr_Occurred()) { PyMem_Free(c); return NULL; }
            if (l < 0) {
                PyErr_SetString(PyExc_ValueError, "numdyn: options['cache_size_limit'] must be >= 0");
                PyMem_Free(c);
                return NULL;
            }
            c->limit = l;
        }
    }
    c->guard_fail_fn = guard_fail_fn && guard_fail_fn != Py_None ? Py_NewRef(guard_fail_fn) : NULL;
    c->guard_export_fn = guard_export_fn && guard_export_fn != Py_None ? Py_NewRef(guard_export_fn) : NULL;
    c->names = param_names(fn);
    return c;
}

void nd__ctl_reset(nd_ctl *c)
{
    if (!c) return;
    nd_programs_clear(&c->progs);
    c->warned = 0;
}

void nd__ctl_free(nd_ctl *c)
{
    if (!c) return;
    nd__ctl_reset(c);
    Py_CLEAR(c->guard_fail_fn);
    Py_CLEAR(c->guard_export_fn);
    Py_CLEAR(c->names);
    Py_CLEAR(c->report);
    PyMem_Free(c);
}

int nd__ctl_traverse(nd_ctl *c, visitproc visit, void *arg)
{
    if (!c) return 0;
    Py_VISIT(c->guard_fail_fn);
    Py_VISIT(c->guard_export_fn);
    Py_VISIT(c->names);
    return nd_programs_traverse(&c->progs, visit, arg);
}

static int eager(void)
{
    nd_counter_add(ND_CTR_EAGER_CALLS, 1);
    return ND_ADMIT_EAGER;
}

/* mark_dynamic(x, d, min=, max=): an argument whose dim is outside its
 * range raises, as torch's bounded constraint does. 0 or -1. */
static int check_ranges(nd_ctl *c, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf) + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyArray_Check(args[i])) continue;
        PyArrayObject *a = (PyArrayObject *)args[i];
        for (int d = 0; d < PyArray_NDIM(a) && d < 64; d++) {
            long long lo, hi, sz = PyArray_DIM(a, d);
            if (!nd_marks_range(args[i], d, &lo, &hi) || (sz >= lo && sz <= hi)) continue;
            PyObject *name = qualname(c->fn);
            char top[32] = "inf";  /* max= not given */
            if (hi != LLONG_MAX) snprintf(top, sizeof top, "%lld", hi);
            PyErr_Format(ConstraintViolationError,
                         "Constraints violated (dim %d of argument %zd of %S, marked with "
                         "numdyn.mark_dynamic)! %lld not in range [%lld, %s]", d, i,
                         name ? name : Py_None, sz, lo, top);
            Py_XDECREF(name);
            return -1;
        }
    }
    return 0;
}

int nd__ctl_admit(nd_ctl *c, PyObject *const *args, size_t nargsf, PyObject *kwnames,
                  Py_ssize_t *idx, uint64_t *cost)
{
    if (!nd__ctl_enabled || nd__ctl_stance == ND_STANCE_FORCE_EAGER) return eager();
    if (nd_marks_ranged && check_ranges(c, args, nargsf, kwnames) < 0) return -1;
    uint64_t h = nd_callsig(args, nargsf, kwnames, c->spec_all, cost);
    Py_ssize_t i = nd_programs_find(&c->progs, h);
    if (i >= 0) {
        c->progs.e[i].calls++;
        *idx = i;
        return ND_ADMIT_RUN;
    }
    if (nd__tls_frozen) return eager();
    long limit = c->limit >= 0 ? c->limit : nd_guard_config_limit;
    /* past the limit, once warned: no recompile happens, so none is logged
     * or reported to guard_fail_fn (torch skips such a frame too), and the
     * miss reason is not worked out on every eager call */
    int recompile = c->progs.n > 0;
    /* torch's accumulated_recompile_limit: the recompiles of every
     * function together; past it a function's unseen inputs run eagerly
     * as past its own limit */
    int accum = recompile && ctl_recompiles >= ctl_accumulated_limit;
    if (accum && limit > c->progs.n) limit = c->progs.n;
    if (c->warned && c->progs.n >= limit && !ctl_error_on_recompile &&
        nd__ctl_stance != ND_STANCE_FAIL_ON_RECOMPILE)
        return eager();
    if (recompile || c->progs.n >= limit) {
        PyObject *guard = NULL, *why;
        why = recompile ? nd_programs_miss(&c->progs, args, nargsf, kwnames, c->spec_all, c->names,
                                           &guard)
                        : PyUnicode_FromString("cache_size_limit is 0");
        if (!why) return -1;
        PyObject *name = nd__ctl_qualname(c);
        if (!name) { Py_DECREF(why); Py_XDECREF(guard); return -1; }
        int rc = 0;
        if (recompile) {
            PyObject *msg = PyUnicode_FromFormat("Recompiling function %U: %U", name, why);
            if (msg) nd__log("recompiles", msg);
            Py_XDECREF(msg);
            PyErr_Clear();
            if (ctl_error_on_recompile || nd__ctl_stance == ND_STANCE_FAIL_ON_RECOMPILE) {
                PyErr_Format(RecompileError,
                             "numdyn: %U would recompile (%s): %U. Call it with inputs like "
                             "earlier ones, or turn the setting off.", name,
                             ctl_error_on_recompile ? "numdyn.config.error_on_recompile is True"
                                                    : "stance 'fail_on_recompile'", why);
                rc = -1;
            } else if (c->guard_fail_fn) {
                PyObject *gf = PyStructSequence_New(GuardFail_Type);
                if (gf) {
                    PyStructSequence_SetItem(gf, 0, Py_NewRef(why));
                    PyObject *code = code_of(c->fn);
                    PyStructSequence_SetItem(gf, 1, code);
                    PyStructSequence_SetItem(gf, 2, guard ? Py_NewRef(guard) : Py_NewRef(Py_None));
                    PyStructSequence_SetItem(gf, 3, Py_NewRef(c->fn));
                    if (!code) Py_CLEAR(gf);
                    PyObject *r = gf ? PyObject_CallOneArg(c->guard_fail_fn, gf) : NULL;
                    Py_XDECREF(gf);
                    if (!r) rc = -1;
                    Py_XDECREF(r);
                } else {
                    rc = -1;
                }
            }
            if (rc == 0 && nd__ctl_stance == ND_STANCE_EAGER_ON_RECOMPILE) rc = 1;
        }
        if (rc == 0 && c->progs.n >= limit) {
            if (!c->warned) {
                c->warned = 1;
                PyObject *msg = accum
                    ? PyUnicode_FromFormat(
                          "numdyn: %U would recompile, but the process reached "
                          "numdyn.config.accumulated_recompile_limit (%ld recompiles over all "
                          "functions); %U. Inputs unlike earlier ones now run eagerly (plain "
                          "NumPy). Raise numdyn.config.accumulated_recompile_limit, or mark the "
                          "varying dims dynamic.", name, ctl_accumulated_limit, why)
                    : PyUnicode_FromFormat(
                    "numdyn: %U reached its cache_size_limit (%ld programs); %U. Inputs unlike "
                    "earlier ones now run eagerly (plain NumPy). Raise numdyn.config.cache_size_limit "
                    "or compile(options={'cache_size_limit': n}), or mark the varying dims dynamic.",
                    name, limit, why);
                if (msg) nd__log("recompiles", msg);
                if (!msg || PyErr_WarnEx(PyExc_UserWarning, PyUnicode_AsUTF8(msg), 1) < 0) rc = -1;
                Py_XDECREF(msg);
            }
            if (rc == 0) rc = 1;
        }
        Py_DECREF(name);
        Py_DECREF(why);
        Py_XDECREF(guard);
        if (rc < 0) return -1;
        if (rc == 1) return eager();
    }
    i = nd_programs_add(&c->progs, h, args, nargsf, kwnames, c->spec_all);
    if (i < 0) return -1;
    if (recompile) ctl_recompiles++;
    c->progs.e[i].calls = 1;
    *idx = i;
    return ND_ADMIT_COMPILE;
}

static int compiled_note(nd_ctl *c, Py_ssize_t idx, double seconds, int ok);

int nd__ctl_compiled(nd_ctl *c, Py_ssize_t idx, double seconds, int ok)
{
    if (ok) return compiled_note(c, idx, seconds, 1);
    /* the call raised: its exception stays the one raised (reading the
     * function's name with it pending would clear it -- a bound method's
     * getattr does) */
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    if (compiled_note(c, idx, seconds, 0) < 0) PyErr_Clear();
    PyErr_Restore(et, ev, etb);
    return 0;
}

static int compiled_note(nd_ctl *c, Py_ssize_t idx, double seconds, int ok)
{
    if (idx < 0 || idx >= c->progs.n) return 0;
    c->progs.e[idx].compile_s = seconds;
    nd_counter_add(ND_CTR_GRAPH_COMPILES, 1);
    PyObject *name = nd__ctl_qualname(c);
    if (!name) return -1;
    PyObject *l = PyDict_GetItemWithError(compile_times, name);
    PyObject *s = PyFloat_FromDouble(seconds);
    int rc = 0;
    if (!l && !PyErr_Occurred() && (l = PyList_New(0))) {
        rc = PyDict_SetItem(compile_times, name, l);
        Py_DECREF(l);  /* the dict holds it */
    }
    if (!l || !s || rc < 0 || PyList_Append(l, s) < 0) rc = -1;
    Py_XDECREF(s);
    Py_DECREF(name);
    if (rc < 0) return -1;
    if (ok && c->guard_export_fn) {
        PyObject *g = nd_programs_guards(&c->progs, idx, c->names);
        PyObject *r = g ? PyObject_CallOneArg(c->guard_export_fn, g) : NULL;
        Py_XDECREF(g);
        if (!r) return -1;
        Py_DECREF(r);
    }
    return 0;
}

const char *nd__ctl_debug_begin(nd_ctl *c, Py_ssize_t idx, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames)
{
    static _Thread_local char tag[200];
    const char *prev = nd_debug_tag;
    if (!args && !c->dbg_serial) return prev;  /* never compiled under the debug dir: no getenv per call */
    const char *dir = getenv("NUMDYN_DEBUG_DIR");
    if (!dir || !*dir) return prev;
    PyObject *name = qualname(c->fn);
    const char *s = name ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) { PyErr_Clear(); s = "fn"; }
    int k = 0;
    for (; s[k] && k < 150; k++) {
        char ch = s[k];
        tag[k] = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '.' || ch == '_' ? ch : '_';
    }
    /* functions sharing a name (lambdas, methods of two classes) get
     * directories of their own: the second is <name>-2_<idx> */
    tag[k] = 0;
    if (!c->dbg_serial) {
        static PyObject *seen;  /* name -> functions of that name so far */
        PyObject *n = seen || (seen = PyDict_New()) ? PyUnicode_FromString(tag) : NULL;
        PyObject *cnt = n ? PyDict_GetItemWithError(seen, n) : NULL;
        long v = cnt ? PyLong_AsLong(cnt) + 1 : 1;
        PyObject *nv = n && !PyErr_Occurred() ? PyLong_FromLong(v) : NULL;
        if (nv && PyDict_SetItem(seen, n, nv) == 0) c->dbg_serial = (int)v;
        Py_XDECREF(nv);
        Py_XDECREF(n);
        PyErr_Clear();
    }
    if (c->dbg_serial > 1) k += snprintf(tag + k, sizeof tag - (size_t)k, "-%d", c->dbg_serial);
    snprintf(tag + k, sizeof tag - (size_t)k, "_%zd", idx);
    Py_XDECREF(name);
    nd_debug_tag = tag;
    /* a later call of the program: what it compiles (a graph finishing its
     * background compile, another graph of the same signature) goes to the
     * program's directory too; its repro.py is the first call's */
    if (!args) return prev;
    /* repro.py: written before the compile, so a crash still leaves it */
    Py_ssize_t npos = PyVectorcall_NARGS(nargsf);
    PyObject *a, *kw, *m = PyImport_ImportModule("numdyn"), *r = NULL;
    if (nd_vectorcall_unpack(args, npos, kwnames, 1, &a, &kw) == 0 && m)
        r = PyObject_CallMethod(m, "_debug_repro", "OsOO", c->fn, tag, a, kw);
    if (!r) PyErr_WriteUnraisable(c->fn);  /* debugging output must not change the call */
    Py_XDECREF(r);
    Py_XDECREF(a);
    Py_XDECREF(kw);
    Py_XDECREF(m);
    return prev;
}

PyObject *nd__ctl_out_guards(nd_ctl *c, PyObject *const *args, Py_ssize_t n)
{
    if (!c) return PyList_New(0);
    Py_ssize_t i = nd_programs_find(&c->progs, nd_progsig_hash(args, (size_t)n, NULL, c->spec_all));
    if (i < 0) return PyList_New(0);
    return nd_programs_guards(&c->progs, i, c->names);
}

/* ------------------------------------------------- dims marked dynamic */

PyObject *nd__ctl_constraint_error(void) { return ConstraintViolationError; }

/* numdyn.DynamicDim: an int (a size) that stands for a dim marked dynamic
 * while the function is traced. Comparing it with a constant whose answer
 * depends on the size -- `x.shape[0] == 3` -- would make the program hold
 * only for that size, so it raises, as torch's symbolic sizes do; what is
 * true of every size >= 2 (`n > 1`, `n != 0`) and comparisons between such
 * sizes are fine. Arithmetic gives plain ints. */
static PyTypeObject DynDim_Type;

static PyObject *dyn_richcompare(PyObject *a, PyObject *b, int op)
{
    PyObject *self = PyObject_TypeCheck(a, &DynDim_Type) ? a : b, *other = self == a ? b : a;
    if (PyLong_Check(other) && !PyObject_TypeCheck(other, &DynDim_Type)) {
        long long c = PyLong_AsLongLong(other);
        if (c == -1 && PyErr_Occurred()) PyErr_Clear();
        else {
            if (self == b) {  /* c OP n: as n OP' c */
                static const int swap[] = {Py_GT, Py_GE, Py_EQ, Py_NE, Py_LT, Py_LE};
                op = swap[op];
            }
            /* n ranges over [2, inf): is `n OP c` the same for all of it? */
            int decided;
            switch (op) {
            case Py_EQ: case Py_NE: decided = c < 2; break;
            case Py_LT: case Py_GE: decided = c <= 2; break;
            default: decided = c < 2; break;  /* Py_LE, Py_GT */
            }
            if (!decided) {
                long long n = PyLong_AsLongLong(self);
                PyErr_Format(ConstraintViolationError,
                             "Constraints violated (a dim marked with numdyn.mark_dynamic, size %lld)! "
                             "For more information, run with NUMDYN_LOGS=\"recompiles\".\n"
                             "  - Not all values of the dim are valid because it was inferred to be "
                             "a constant (%lld): the program compares it with %lld. Remove the "
                             "mark_dynamic call, or make the code independent of that size.", n, n, c);
                return NULL;
            }
        }
    }
    return PyLong_Type.tp_richcompare(a, b, op);
}

static PyTypeObject DynDim_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn.DynamicDim",
    .tp_doc = "The size of a dim marked dynamic, as the traced function sees it.",
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_richcompare = dyn_richcompare,
};

PyObject *nd__ctl_shape(PyObject *caller, int ndim, const npy_intp *shape)
{
    uint64_t dyn = 0, st = 0;
    if (caller && nd_marks_live) nd_marks_get(caller, &dyn, &st);
    PyObject *t = PyTuple_New(ndim);
    if (!t) return NULL;
    for (int d = 0; d < ndim; d++) {
        PyObject *v = d < 64 && (dyn >> d & 1)
            ? PyObject_CallFunction((PyObject *)&DynDim_Type, "n", (Py_ssize_t)shape[d])
            : PyLong_FromSsize_t(shape[d]);
        if (!v) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, d, v);
    }
    return t;
}

/* ------------------------------------------------------ module functions */

static PyObject *mod_config_set(PyObject *m, PyObject *args)
{
    const char *name;
    PyObject *v;
    if (!PyArg_ParseTuple(args, "sO:_config_set", &name, &v)) return NULL;
    if (!strcmp(name, "enabled") || !strcmp(name, "error_on_recompile")) {
        int on = PyObject_IsTrue(v);
        if (on < 0) return NULL;
        *(name[0] == 'e' && name[1] == 'n' ? &nd__ctl_enabled : &ctl_error_on_recompile) = on;
    } else if (!strcmp(name, "loop_capture")) {
        int on = PyObject_IsTrue(v);
        if (on < 0) return NULL;
        nd_loop_config = on;
    } else if (!strcmp(name, "log_output_code")) {
        int on = PyObject_IsTrue(v);
        if (on < 0) return NULL;
        nd_backend_log_code = on;
    } else if (!strcmp(name, "cache_size_limit")) {
        long l = PyLong_AsLong(v);
        if (l == -1 && PyErr_Occurred()) return NULL;
        if (l < 0) {
            PyErr_SetString(PyExc_ValueError, "numdyn.config.cache_size_limit must be >= 0");
            return NULL;
        }
        nd_guard_config_limit = l;
    } else if (!strcmp(name, "accumulated_recompile_limit")) {
        long l = PyLong_AsLong(v);
        if (l == -1 && PyErr_Occurred()) return NULL;
        if (l < 0) {
            PyErr_SetString(PyExc_ValueError,
                            "numdyn.config.accumulated_recompile_limit must be >= 0");
            return NULL;
        }
        ctl_accumulated_limit = l;
    } else {
        PyErr_Format(PyExc_AttributeError, "numdyn.config: %s is not pushed to C", name);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* _set_stance(name) -> the previous stance's name */
static PyObject *mod_set_stance(PyObject *m, PyObject *arg)
{
    const char *s = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "numdyn.set_stance: stance must be a str");
        return NULL;
    }
    for (int k = 0; k < 4; k++)
        if (!strcmp(s, stance_names[k])) {
            int prev = nd__ctl_stance;
            nd__ctl_stance = k;
            return PyUnicode_FromString(stance_names[prev]);
        }
    PyErr_Format(PyExc_ValueError, "numdyn.set_stance: unknown stance %R; use 'default', "
                 "'force_eager', 'eager_on_recompile' or 'fail_on_recompile'", arg);
    return NULL;
}

static PyObject *mod_frozen(PyObject *m, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    if (on) nd__tls_frozen++;
    else if (nd__tls_frozen > 0) nd__tls_frozen--;
    nd_backend_frozen = nd__tls_frozen > 0;
    Py_RETURN_NONE;
}

/* _run_frozen(fn, *args, **kwargs): fn(*args, **kwargs) in frozen mode --
 * numdyn.run(fn)'s call, without a Python frame and a context manager
 * around it (seen inputs run at compiled speed, a warm call's overhead
 * included) */
static PyObject *mod_run_frozen(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames)
{
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "_run_frozen needs the function to call");
        return NULL;
    }
    nd__tls_frozen++;
    nd_backend_frozen = 1;
    PyObject *r = PyObject_Vectorcall(args[0], args + 1, (size_t)(nargs - 1), kwnames);
    if (nd__tls_frozen > 0) nd__tls_frozen--;
    nd_backend_frozen = nd__tls_frozen > 0;
    return r;
}

void *nd__ctl_loop_kernel(const char *src, size_t len, uint64_t key, const char *const *syms,
                          int nsyms, int *compiled)
{
    int prev = nd_disk_load_only;
    nd_disk_load_only = prev || nd__tls_frozen > 0;
    void *h = nd_disk_load_or_build(src, len, key, syms, nsyms, compiled);
    nd_disk_load_only = prev;
    return h;
}

static PyObject *mod_compile_times(PyObject *m, PyObject *unused)
{
    return PyDict_Copy(compile_times);
}

static PyObject *mod_compile_times_reset(PyObject *m, PyObject *unused)
{
    PyDict_Clear(compile_times);
    Py_RETURN_NONE;
}

static PyObject *mod_warnings_boundary(PyObject *m, PyObject *unused)
{
    if (nd_trace_warnings_boundary() < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *mod_warning_shown(PyObject *m, PyObject *unused)
{
    if (nd_trace_warning_shown() < 0) return NULL;
    Py_RETURN_NONE;
}

/* _trace_fresh(a): a fresh ndarray that code under a capture made with
 * NumPy (a random Generator's result: nothing but the caller holds it) as
 * a traced value of the running capture, so what the function computes
 * from it is traced and fused; a itself outside a capture, or when it is
 * not fresh (someone else may hold it and change it unseen), or of a dtype
 * or rank the IR does not take. */
static PyObject *mod_trace_fresh(PyObject *m, PyObject *a)
{
    nd_trace *t = nd_trace_current();
    /* the caller passed its only reference (a call's result, on its stack) */
    if (!t || t->flushing || !PyArray_CheckExact(a) || Py_REFCNT(a) > 1 ||
        !PyArray_CHKFLAGS((PyArrayObject *)a, NPY_ARRAY_OWNDATA) || !nd_supported_array(a))
        return Py_NewRef(a);
    nd_id id = nd__input_node(t, a);
    if (id == ND_NONE) return NULL;
    return nd_proxy_wrap(t, id, 0);
}

/* _break_errors(flag) -> the previous setting: numdyn.error_on_graph_break's
 * region begins (flag True/False) or ends (the previous value, -1: none).
 * A trace in progress (the region opened inside compiled code) raises at
 * its breaks from here on as under fullgraph=True, or stops doing so for
 * the region's own part; a call that starts tracing inside the region
 * takes it (trace_compile.c). fullgraph=True itself is never turned off. */
static PyObject *mod_break_errors(PyObject *m, PyObject *arg)
{
    int v = arg == Py_None ? -1 : PyObject_IsTrue(arg);
    if (v == -1 && arg != Py_None) return NULL;
    if (PyLong_Check(arg) && PyLong_AsLong(arg) == -1) v = -1;
    int prev = nd__tls_break_errors;
    nd__tls_break_errors = v;
    nd_trace *t = nd_trace_current();
    if (t) t->fullgraph += (v == 1) - (prev == 1);
    return PyLong_FromLong(prev);
}

/* _recompiles() -> recompiles counted against accumulated_recompile_limit */
static PyObject *mod_recompiles(PyObject *m, PyObject *unused)
{
    return PyLong_FromLong(ctl_recompiles);
}

static PyMethodDef ctl_functions[] = {
    {"_break_errors", mod_break_errors, METH_O,
     "_break_errors(flag) -> previous: numdyn.error_on_graph_break's region (-1: none)"},
    {"_recompiles", mod_recompiles, METH_NOARGS,
     "recompiles so far, over all functions (numdyn.config.accumulated_recompile_limit)"},
    {"_trace_fresh", mod_trace_fresh, METH_O,
     "_trace_fresh(a): a fresh ndarray made under a capture, as a traced value (a itself otherwise)"},
    {"_warning_shown", mod_warning_shown, METH_NOARGS,
     "a warning is being shown (warnings._showwarnmsg): a trace in progress is not replayable"},
    {"_warnings_boundary", mod_warnings_boundary, METH_NOARGS,
     "a warnings.catch_warnings block is entered or left: pending traced work runs now"},
    {"_config_set", mod_config_set, METH_VARARGS, "_config_set(name, value): a config switch C reads"},
    {"_set_stance", mod_set_stance, METH_O, "_set_stance(name) -> previous stance"},
    {"_run_frozen", (PyCFunction)(void (*)(void))mod_run_frozen, METH_FASTCALL | METH_KEYWORDS,
     "_run_frozen(fn, *args, **kwargs) calls fn in numdyn.run's frozen mode"},
    {"_frozen", mod_frozen, METH_O, "_frozen(True) enters numdyn.run's frozen mode, _frozen(False) leaves it"},
    {"_compile_times", mod_compile_times, METH_NOARGS, "{qualname: [seconds of each compiling call]}"},
    {"_compile_times_reset", mod_compile_times_reset, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyStructSequence_Field gf_fields[] = {
    {"reason", "why the call fits none of the function's compiled programs"},
    {"orig_code", "the code object of the function that was called (torch's GuardFail.orig_code; "
                  "None for a callable without Python code)"},
    {"guard", "the guard that failed, as text (None when the call shape itself differs)"},
    {"fn", "the function that was called"},
    {NULL, NULL},
};
static PyStructSequence_Desc gf_desc = {
    "numdyn.GuardFail",
    "What guard_fail_fn receives when a call fits no compiled program (a recompile).",
    gf_fields, 3,  /* fn: an attribute, not an item */
};

int nd__ctl_init(PyObject *m)
{
    RecompileError = PyErr_NewExceptionWithDoc(
        "numdyn.RecompileError",
        "A compiled function would recompile while numdyn.config.error_on_recompile is True "
        "or the stance is 'fail_on_recompile'.", PyExc_RuntimeError, NULL);
    if (!RecompileError || PyModule_AddObjectRef(m, "RecompileError", RecompileError) < 0) return -1;
    ConstraintViolationError = PyErr_NewExceptionWithDoc(
        "numdyn.ConstraintViolationError",
        "Code forced a dim marked with numdyn.mark_dynamic to a constant size.",
        PyExc_RuntimeError, NULL);
    if (!ConstraintViolationError ||
        PyModule_AddObjectRef(m, "ConstraintViolationError", ConstraintViolationError) < 0)
        return -1;
    DynDim_Type.tp_base = &PyLong_Type;
    if (PyType_Ready(&DynDim_Type) < 0 ||
        PyModule_AddObjectRef(m, "DynamicDim", (PyObject *)&DynDim_Type) < 0)
        return -1;
    GuardFail_Type = PyStructSequence_NewType(&gf_desc);
    if (!GuardFail_Type || PyModule_AddObjectRef(m, "GuardFail", (PyObject *)GuardFail_Type) < 0)
        return -1;
    if (!(compile_times = PyDict_New())) return -1;
    nd_backend_log = nd__log;
    return PyModule_AddFunctions(m, ctl_functions);
}
