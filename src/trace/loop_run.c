/* loop_run.c -- the loop region: a captured loop, compiled per call
 * signature and run on the values of the call (see loop.h).
 *
 * A signature is what the C code depends on: each variable's type at
 * entry (Python bool/int/float, a NumPy scalar type, unbound), each
 * array's dtype, rank and writeability, and coarse magnitude classes of
 * Python ints and array dimensions (the bound analysis uses them). A
 * signature the loop cannot be compiled for is remembered too: Python runs
 * the loop (the region returns None).
 *
 * Arrays that the tracer holds lazily are materialized first and handed
 * over like a graph break's (trace_outside.c): what the loop writes into
 * them, work still pending sees as NumPy's eager order would.
 */
#include "trace/loop.h"
#include "trace_internal.h"
#include "trace_control.h"
#include "passes/loop_types.h"
#include "codegen/codegen.h"
#include "toolchain/toolchain.h"
#include "graph/hash.h"
#include "core/counters.h"
#include "runtime/backend.h"
#include <numpy/arrayscalars.h>
#include <dlfcn.h>
#include <fenv.h>
#include <string.h>

int nd_loop_enabled = 1;
int nd_loop_config = 1;

typedef int (*nd_loopfn)(nd_lframe *F);

typedef struct {
    uint64_t key;
    nd_loopfn fn;          /* NULL: not compilable for this signature */
    int snapshot;
    /* NumPy's float events may deoptimize it without a copy of the arrays
     * it stores into (rerun_safe below): it makes no array local and reads
     * no element of an array it stores into */
    int fp_nocopy;
    int pending;           /* the static marker: its C still compiles in the background */
    PyObject *reason;
    uint8_t *alocal;       /* per variable: an array local (typing's decision) */
    int alocal_stored;     /* the loop stores through an array local */
    int npool;             /* slots of the pool of arrays the loop makes (nd_lbuf) */
    int index;             /* its place in NdLoop.sigs; -1: a static marker (frozen, compiling) */
} lsig;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vcall;
    nd_lir ir;
    /* the call (loop_rewrite.c io_facts): npos >= 0, the values of the
     * locals the loop may read before assigning them, by position (vpos[v]:
     * variable v's, -1: v is unbound to the loop at entry); -1: locals().
     * vout[v]: v is handed back */
    int npos;
    int *vpos;
    uint8_t *vout;
    PyObject *globals;
    PyObject *info;
    PyObject *py;          /* the loop as a Python function of its locals (loop.h) */
    int in_try;            /* inside a try statement: exceptions go back in a dict (loop.h) */
    /* each signature its own block, never moved: a call that releases the
     * GIL (its compile, its run) keeps its pointer while another thread's
     * call adds signatures */
    lsig **sigs;
    int nsigs, capsigs;
    /* signatures C rejected, by the key of their names' types before the
     * tracer's lazy values were computed (prekey below): a later call with
     * such values falls back at once. Computing them first, only to fall
     * back, flushed the capture every call, and a flushed capture is never
     * replayed (an RNN's time loop: 0.58x NumPy). */
    struct { uint64_t prekey; int sig; } rejected[8];
    int nrejected;
    char *spare;           /* a run's table block kept for the next run (one size per region) */
    char *snapbuf;         /* the raw copies of the arrays a run may restore, kept for the next
                              run up to SNAP_KEEP bytes */
    size_t snapcap;
} NdLoop;

#define SNAP_KEEP ((size_t)1 << 20)

static PyObject *math_mod, *numpy_mod, *builtins_dict, *geterr;
/* NumPy's error state is one object in a context variable, replaced (never
 * changed) by np.seterr/np.errstate: what was read of the last one is kept */
static PyObject *extobj_var, *extobj_last;
static int extobj_under_ok, extobj_fpignore, extobj_fpsafe;
static PyObject *warnings_mod;

/* ------------------------------------------------------------- boxing */
/* NumPy's scalar type of each LT_B1..LT_F8, exactly (not a subclass):
 * made and read without a descriptor (PyArray_DescrFromType then
 * PyArray_Scalar were a tenth of a small loop's call, per value) */
static PyTypeObject *sc_type[LT_N];

static int sc_init(void)
{
    for (int t = LT_B1; t < LT_N; t++) {
        PyArray_Descr *d = PyArray_DescrFromType(nd_lty_typenum(t));
        if (!d) return -1;
        sc_type[t] = d->typeobj;   /* (static types of NumPy's, never freed) */
        Py_DECREF(d);
    }
    return 0;
}

#define ND_SC_CASES(X) \
    X(LT_I1, Byte, int8_t) X(LT_I2, Short, int16_t) X(LT_I4, Int, int32_t) X(LT_I8, Long, int64_t) \
    X(LT_U1, UByte, uint8_t) X(LT_U2, UShort, uint16_t) X(LT_U4, UInt, uint32_t) X(LT_U8, ULong, uint64_t) \
    X(LT_F4, Float, float) X(LT_F8, Double, double)

/* a new NumPy scalar of type t (LT_B1..LT_F8) from p; NULL: use PyArray_Scalar */
static PyObject *sc_box(int t, const void *p)
{
    if (t < LT_B1 || t >= LT_N || !sc_type[t]) return NULL;
    if (t == LT_B1) return Py_NewRef(*(const uint8_t *)p ? PyArrayScalar_True : PyArrayScalar_False);
    PyObject *r = sc_type[t]->tp_alloc(sc_type[t], 0);
    if (!r) return NULL;
    switch (t) {
#define X(LT, NAME, CT) case LT: memcpy(&PyArrayScalar_VAL(r, NAME), p, sizeof(CT)); break;
    ND_SC_CASES(X)
#undef X
    }
    return r;
}

/* 0: r holds o, a NumPy scalar of exactly type t's; 1: it is not one */
static int sc_unbox(PyObject *o, int t, void *r)
{
    if (t < LT_B1 || t >= LT_N || !sc_type[t] || Py_TYPE(o) != sc_type[t]) return 1;
    switch (t) {
    case LT_B1: *(uint8_t *)r = PyArrayScalar_VAL(o, Bool) != 0; return 0;
#define X(LT, NAME, CT) case LT: memcpy(r, &PyArrayScalar_VAL(o, NAME), sizeof(CT)); return 0;
    ND_SC_CASES(X)
#undef X
    }
    return 1;
}

static PyObject *box(int t, const void *p)
{
    switch (t) {
    case LT_PYBOOL: return PyBool_FromLong(*(const uint8_t *)p);
    case LT_PYINT: return PyLong_FromLongLong(*(const int64_t *)p);
    case LT_PYFLOAT: return PyFloat_FromDouble(*(const double *)p);
    default: {
        PyObject *f = sc_box(t, p);
        if (f || PyErr_Occurred()) return f;
        PyArray_Descr *d = PyArray_DescrFromType(nd_lty_typenum(t));
        if (!d) return NULL;
        PyObject *r = PyArray_Scalar((void *)p, d, NULL);
        Py_DECREF(d);
        return r;
    }
    }
}


/* 0: r holds o as type t; 1: o is not of type t (or does not fit) */
static int unbox(PyObject *o, int t, void *r)
{
    switch (t) {
    case LT_PYBOOL:
        if (!PyBool_Check(o)) return 1;
        *(uint8_t *)r = o == Py_True;
        return 0;
    case LT_PYINT: {
        if (!PyLong_CheckExact(o)) return 1;
        int of = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &of);
        if (of || (v == -1 && PyErr_Occurred())) { PyErr_Clear(); return 1; }
        *(int64_t *)r = v;
        return 0;
    }
    case LT_PYFLOAT:
        if (!PyFloat_CheckExact(o)) return 1;
        *(double *)r = PyFloat_AS_DOUBLE(o);
        return 0;
    default: {
        if (sc_unbox(o, t, r) == 0) return 0;
        if (!PyArray_IsScalar(o, Generic)) return 1;
        PyArray_Descr *d = PyArray_DescrFromScalar(o);
        if (!d) { PyErr_Clear(); return 1; }
        int ok = nd_lty_of_typenum(d->type_num) == t && PyArray_IsScalar(o, Number) + PyArray_IsScalar(o, Bool);
        Py_DECREF(d);
        if (!ok) return 1;
        PyArray_ScalarAsCtype(o, r);
        return 0;
    }
    }
}

/* the loop type of a value at entry: LT_*, or -1 */
static int type_of_value(PyObject *o, int64_t *bits)
{
    *bits = 0;
    if (PyBool_Check(o)) return LT_PYBOOL;
    if (PyLong_CheckExact(o)) {
        int of = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &of);
        if (of || (v == -1 && PyErr_Occurred())) { PyErr_Clear(); return -1; }
        uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
        *bits = m < (1ull << 31) ? 31 : m < (1ull << 47) ? 47 : LBITS_ANY;
        return LT_PYINT;
    }
    if (PyFloat_CheckExact(o)) return LT_PYFLOAT;
    for (int t = LT_B1; t < LT_N; t++)
        if (Py_TYPE(o) == sc_type[t]) return t;
    if (PyArray_IsScalar(o, Generic)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(o);
        if (!d) { PyErr_Clear(); return -1; }
        int t = nd_lty_of_typenum(d->type_num);
        Py_DECREF(d);
        return t;
    }
    return -1;
}

/* ---------------------------------------------------------- callbacks */
typedef struct {
    NdLoop *L;
    PyObject **arrs;       /* borrowed: the arrays by variable */
    int fp;                /* the code leaves NumPy float events to the FP flags */
    int fpdeopt;           /* a callback found such an event pending: deoptimize */
} runctx;

#define ND_FPEV (FE_DIVBYZERO | FE_OVERFLOW | FE_INVALID)

/* The three event flags around a run (a clear before, a test and a clear
 * after, on every call): nd_loop.h's ndl_fe_clear/ndl_fe_test read and
 * clear MXCSR and the x87 flags directly (glibc's feclearexcept saves and
 * reloads the whole x87 environment, a good part of a small loop's call) */
#define fp_clear ndl_fe_clear
#define fp_test ndl_fe_test

static int cb_slow(nd_lframe *F, int op, int tr, void *r, int ta, const void *a, int tb, const void *b)
{
    runctx *c = F->runner;
    /* an event left to the flags happened before this operation: Python
     * reruns the loop (this operation's warning would come twice), and
     * NumPy, called here, clears the flags it tests */
    if (c->fp && fetestexcept(ND_FPEV)) return 1;
    PyObject *A = a ? box(ta, a) : NULL, *B = NULL, *res = NULL;
    int rc = -1;
    if (a && !A) goto done;
    if (b && !(B = box(tb, b))) goto done;
    if (!(res = nd_lty_apply(op, A, B))) goto done;
    rc = unbox(res, tr, r);
done:
    Py_XDECREF(A);
    Py_XDECREF(B);
    Py_XDECREF(res);
    if (c->fp) feclearexcept(ND_FPEV);   /* NumPy reported this operation's own */
    return rc;
}

static int cb_store(nd_lframe *F, int arr, int nidx, const int64_t *idx, int ta, const void *a)
{
    runctx *c = F->runner;
    /* an event pending before this store (NumPy warned there first) */
    if (c->fp && fetestexcept(ND_FPEV)) {
        c->fpdeopt = 1;
        PyErr_SetString(PyExc_RuntimeError, "numdyn loop: deoptimized");
        return -1;
    }
    PyObject *v = box(ta, a), *key = v ? PyTuple_New(nidx) : NULL;
    int rc = -1;
    if (!key) goto done;
    for (int k = 0; k < nidx; k++) {
        PyObject *i = PyLong_FromLongLong(idx[k]);
        if (!i) goto done;
        PyTuple_SET_ITEM(key, k, i);
    }
    rc = PyObject_SetItem(c->arrs[arr], key, v);
done:
    Py_XDECREF(v);
    Py_XDECREF(key);
    if (c->fp) feclearexcept(ND_FPEV);   /* NumPy reported its cast's own */
    return rc;
}

static int cb_poll(nd_lframe *F)
{
    fexcept_t fs;
    fegetexceptflag(&fs, ND_FPEV);   /* signal handlers run Python code */
    int rc = PyErr_CheckSignals();
    fesetexceptflag(&fs, ND_FPEV);
    return rc;
}

/* ---------------------------------------------------------- compiling */
static const char *const bnames[] = {NULL, "range", "len", "abs", "min", "max", "int", "float", "bool",
                                     "enumerate", "zip", "reversed", "round"};
/* bnames as interned str (a lookup by C string made a str every call) */
static PyObject *bname_obj[sizeof bnames / sizeof bnames[0]];

static int init_refs(void)
{
    if (geterr) return 0;
    for (size_t k = 1; k < sizeof bnames / sizeof bnames[0]; k++)
        if (!bname_obj[k] && !(bname_obj[k] = PyUnicode_InternFromString(bnames[k]))) return -1;
    PyObject *b = PyImport_ImportModule("builtins");
    if (!b) return -1;
    builtins_dict = PyModule_GetDict(b);
    Py_INCREF(builtins_dict);
    Py_DECREF(b);
    if (sc_init() < 0) return -1;
    if (!(math_mod = PyImport_ImportModule("math"))) return -1;
    if (!(numpy_mod = PyImport_ImportModule("numpy"))) return -1;
    geterr = PyObject_GetAttrString(numpy_mod, "geterr");
    if (!geterr) return -1;
    PyObject *um = PyImport_ImportModule("numpy._core._multiarray_umath");
    extobj_var = um ? PyObject_GetAttrString(um, "_extobj_contextvar") : NULL;
    Py_XDECREF(um);
    if (extobj_var && !PyContextVar_CheckExact(extobj_var)) Py_CLEAR(extobj_var);
    PyErr_Clear();   /* without it, np.geterr() on every run */
    return 0;
}


/* whether the loop reads the contents of array variable v anywhere under
 * n (an element, a slice, the whole array, a copy, an op= store): all but
 * a plain store into it, its shape, its dtype */
static int reads_contents(const nd_ln *n, int v)
{
    if (!n) return 0;
    if (n->var == v && n->kind != LK_STORE && n->kind != LK_SHAPE && !(n->kind == LK_CALL && n->i == LCALL_DTYPE))
        return 1;
    for (int k = 0; k < n->n; k++) if (reads_contents(n->kid[k], v)) return 1;
    for (int k = 0; k < n->nbody; k++) if (reads_contents(n->body[k], v)) return 1;
    for (int k = 0; k < n->norelse; k++) if (reads_contents(n->orelse[k], v)) return 1;
    return 0;
}

static int stored(const nd_lir *ir, const lsig *s, const int8_t *adt, int v);

/* the bytes [*lo, *hi) array a may reach (empty: *lo == *hi) */
static void extent(PyArrayObject *a, const char **lo, const char **hi)
{
    const char *l = PyArray_BYTES(a), *h = l + PyArray_ITEMSIZE(a);
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        npy_intp n = PyArray_DIM(a, d), st = PyArray_STRIDE(a, d);
        if (n == 0) { *lo = *hi = l; return; }
        if (st < 0) l += (n - 1) * st; else h += (n - 1) * st;
    }
    *lo = l;
    *hi = h;
}

/* whether a RuntimeWarning NumPy gives may raise: a warnings filter
 * 'error' (whatever it matches), or showwarning replaced (trace_internal.h) */
int nd__warnings_may_raise(void)
{
    /* read from the module's dict with interned names: this runs on every
     * call of such a loop, and PyObject_GetAttrString made, hashed and
     * looked up three new strings through the module type's MRO each time
     * (2/3 of the runner's time on a call of an 8-element loop) */
    static PyObject *k_filters, *k_show, *k_orig, *k_error;
    if (!k_filters && (!(k_filters = PyUnicode_InternFromString("filters")) ||
                       !(k_show = PyUnicode_InternFromString("showwarning")) ||
                       !(k_orig = PyUnicode_InternFromString("_showwarning_orig")) ||
                       !(k_error = PyUnicode_InternFromString("error")))) {
        Py_CLEAR(k_filters);
        Py_CLEAR(k_show);
        Py_CLEAR(k_orig);
        return -1;
    }
    if (!warnings_mod && !(warnings_mod = PyImport_ImportModule("warnings"))) return -1;
    PyObject *d = PyModule_GetDict(warnings_mod);   /* borrowed, as the items below */
    PyObject *f = d ? PyDict_GetItemWithError(d, k_filters) : NULL;
    if (!f) return PyErr_Occurred() ? -1 : 1;
    int r = !PyList_Check(f);
    for (Py_ssize_t k = 0; !r && k < PyList_GET_SIZE(f); k++) {
        PyObject *e = PyList_GET_ITEM(f, k);
        PyObject *a = PyTuple_Check(e) && PyTuple_GET_SIZE(e) ? PyTuple_GET_ITEM(e, 0) : NULL;
        /* (the tracer asks this of every operation that may warn: an
         * interned action -- warnings.py's own, 'default', 'ignore' -- is
         * 'error' only as the interned 'error' itself, no text compared) */
        r = !a || !PyUnicode_Check(a) || a == k_error ||
            (!PyUnicode_CHECK_INTERNED(a) && PyUnicode_CompareWithASCIIString(a, "error") == 0);
    }
    if (!r) {
        PyObject *sw = PyDict_GetItemWithError(d, k_show);
        PyObject *orig = sw ? PyDict_GetItemWithError(d, k_orig) : NULL;
        if (!orig) return PyErr_Occurred() ? -1 : 1;
        r = sw != orig;
    }
    return r;
}

/* A loop whose only reason to copy the arrays it stores into is NumPy's
 * float events (tested after it: Python then reruns it from the start for
 * NumPy's warnings) needs no copy when Python's rerun is sure to store
 * everything the C run stored: the loop reads no element of an array it
 * stores into (lsig.fp_nocopy) and no such array shares memory with
 * another it reads, so the rerun computes what the C run computed -- the
 * same values, branches and indices -- and stores the same elements again,
 * in the same order, up to where NumPy's run ends; and NumPy's run cannot
 * end early at the event (np.errstate 'ignore', 'warn' or 'print' for
 * over/divide/invalid, no warnings filter 'error', showwarning NumPy's).
 * An IndexError or another exception ends both runs at the same point.
 * Untraced calls only (the traced path hands the arrays over as a break's).
 * 1: no copy; 0: copy; -1: error. */
static int rerun_safe(NdLoop *L, const lsig *s, PyObject *const *vals, const int8_t *adt, nd_trace *t, int fpsafe)
{
    if (!s->fp_nocopy || t || !fpsafe) return 0;
    int nv = L->ir.nvars, any = 0;
    for (int v = 0; v < nv; v++) {
        if (!stored(&L->ir, s, adt, v) || adt[v] < 0 || !vals[v]) continue;
        any = 1;
        const char *lo, *hi;
        extent((PyArrayObject *)vals[v], &lo, &hi);
        for (int w = 0; w < nv && lo < hi; w++) {
            if (w == v || adt[w] < 0 || !vals[w] || !PyArray_Check(vals[w]) || stored(&L->ir, s, adt, w)) continue;
            const char *l2, *h2;
            extent((PyArrayObject *)vals[w], &l2, &h2);
            if (l2 < h2 && l2 < hi && lo < h2) return 0;
        }
    }
    /* no array stored: nothing to restore, however NumPy's run ends (a
     * sum's loop; the warnings filters are not read on each call) */
    if (!any) return 1;
    int r = nd__warnings_may_raise();
    return r < 0 ? -1 : !r;
}

static lsig *compile_sig(NdLoop *L, uint64_t key, nd_ltyping *T)
{
    /* built apart and added at the end: the compile below releases the
     * GIL, and another thread may run (and add signatures to) this loop */
    lsig local, *s = &local;
    memset(s, 0, sizeof *s);
    s->key = key;
    int rc = nd_loop_type(T);
    if (rc == 0) {
        int nv = L->ir.nvars;
        /* per variable: its array-local kind, then its element type, then its rank */
        if (!(s->alocal = PyMem_Calloc(3 * (size_t)nv + 1, 1))) { PyErr_NoMemory(); return NULL; }
        memcpy(s->alocal, T->alocal, (size_t)nv);
        for (int v = 0; v < nv; v++) s->alocal[nv + v] = (uint8_t)T->adt[v];
        for (int v = 0; v < nv; v++) s->alocal[2 * nv + v] = (uint8_t)T->andim[v];
        for (int v = 0; v < nv; v++)
            if (T->alocal[v] && (L->ir.vflags[v] & VF_STORED)) s->alocal_stored = 1;
        s->npool = nd_loop_npool(T);
        s->fp_nocopy = !s->npool;
        for (int v = 0; v < nv && s->fp_nocopy; v++)
            if (T->alocal[v] || ((L->ir.vflags[v] & VF_STORED) && reads_contents(L->ir.root, v)))
                s->fp_nocopy = 0;
    }
    nd_sb sb;
    nd_sb_init(&sb);
    if (rc == 0) rc = nd_codegen_loop(T, &sb, &s->snapshot);
    if (rc == 0) {
        static const char *const syms[] = {"nd_loop_main"};
        int compiled = 0;
        uint64_t h = nd_fnv64(sb.p, sb.n, ND_FNV_INIT);
        /* in background mode the compiler is started and waited for
         * within the call's budget (numdyn.config.compile_budget), like a
         * graph's kernels; still running after that, the call runs the
         * loop's Python copy on real arrays, and a later call finds it
         * built (toolchain.h nd_disk_background) */
        int bg = L->py && !nd_backend_frozen && nd_backend_background();
        nd_disk_background = bg;
        void *handle = nd__ctl_loop_kernel(sb.p, sb.n, h, syms, 1, &compiled);
        nd_disk_background = 0;
        /* 2: frozen, not in the disk cache; 3: compiling in the background */
        if (!handle) rc = PyErr_Occurred() ? -1 : bg ? 3 : 2;
        else if (!(s->fn = (nd_loopfn)dlsym(handle, "nd_loop_main"))) {
            PyErr_SetString(PyExc_RuntimeError, "numdyn: a compiled loop lacks its entry point");
            rc = -1;
        }
        if (getenv("NUMDYN_LOOP_DEBUG")) fprintf(stderr, "%.*s\n", (int)sb.n, sb.p);
    }
    nd_sb_free(&sb);
    if (rc < 0 || rc == 2 || rc == 3) { PyMem_Free(s->alocal); s->alocal = NULL; }
    if (rc < 0) return NULL;
    if (rc == 3) {  /* not remembered: a later call asks the disk again */
        static lsig compiling;
        if (!compiling.reason &&
            !(compiling.reason = PyUnicode_FromString("its C compiles in the background: Python ran it")))
            return NULL;
        compiling.pending = 1;
        compiling.index = -1;
        return &compiling;
    }
    if (rc == 2) {  /* Python runs it this time; the signature is not remembered */
        static lsig frozen_miss;
        if (!frozen_miss.reason &&
            !(frozen_miss.reason = PyUnicode_FromString("frozen mode (numdyn.run) compiles no new loop")))
            return NULL;
        frozen_miss.index = -1;
        return &frozen_miss;
    }
    if (rc == 1) {
        s->reason = T->reason ? Py_NewRef(T->reason) : PyUnicode_FromString("types this loop cannot compute in");
        if (!s->reason) return NULL;
    }
    /* another thread may have added this signature meanwhile: keep its */
    for (int k = 0; k < L->nsigs; k++)
        if (L->sigs[k]->key == key) {
            Py_XDECREF(s->reason);
            PyMem_Free(s->alocal);
            return L->sigs[k];
        }
    if (L->nsigs == L->capsigs) {
        int nc = L->capsigs ? 2 * L->capsigs : 4;
        lsig **ns = PyMem_Realloc(L->sigs, sizeof(lsig *) * (size_t)nc);
        if (!ns) { Py_XDECREF(s->reason); PyMem_Free(s->alocal); PyErr_NoMemory(); return NULL; }
        L->sigs = ns;
        L->capsigs = nc;
    }
    lsig *kept = PyMem_Malloc(sizeof *kept);
    if (!kept) { Py_XDECREF(s->reason); PyMem_Free(s->alocal); PyErr_NoMemory(); return NULL; }
    *kept = local;
    kept->index = L->nsigs;
    L->sigs[L->nsigs++] = kept;
    return kept;
}

static void set_reason(NdLoop *L, PyObject *why)
{
    if (L->info && why) PyDict_SetItemString(L->info, "last_fallback", why);
}

/* whether the loop may write array variable v: stored into, or any array
 * when it stores through an array local (a view of one of them) */
static int stored(const nd_lir *ir, const lsig *s, const int8_t *adt, int v)
{
    if (ir->vflags[v] & VF_STORED) return 1;
    return s->alocal_stored && adt[v] >= 0;
}

/* the ndarray of pool slot k (nd_loop.h nd_lbuf), made once: every name
 * holding the slot gets this one object (u = new: u is new) */
static PyObject *pool_array(nd_lframe *F, PyObject **pobj, int k)
{
    if (!F || k < 0 || k >= F->npool || !F->pool[k].p) {
        PyErr_SetString(PyExc_SystemError, "numdyn loop: an array local holds no array the loop made");
        return NULL;
    }
    if (pobj[k]) return pobj[k];
    const nd_lbuf *b = &F->pool[k];
    npy_intp dims[NDL_MAXDIMS], st[NDL_MAXDIMS];
    for (int d = 0; d < b->nd; d++) { dims[d] = (npy_intp)b->shape[d]; st[d] = (npy_intp)b->strides[d]; }
    PyArray_Descr *dt = PyArray_DescrFromType(nd_lty_typenum(b->lt));
    if (!dt) return NULL;
    /* NumPy's own buffer (owndata, as x.copy() has), then the bytes: the
     * layout is dense, so one copy */
    PyObject *r = PyArray_NewFromDescr(&PyArray_Type, dt, b->nd, dims, st, NULL, NPY_ARRAY_WRITEABLE, NULL);
    if (!r) return NULL;
    int64_t nb = ndl_nbytes(b->nd, b->shape, PyArray_ITEMSIZE((PyArrayObject *)r));
    if (nb > 0) memcpy(PyArray_DATA((PyArrayObject *)r), b->p, (size_t)nb);   /* (strides > 0) */
    pobj[k] = r;
    return r;
}

/* The tracer's view of lazy array `orig` (materialized as real array `b`)
 * at data/n/bstride (bytes) inside b: what NumPy's x[i:j] gives in the
 * function, so its .base is x (or x's base) and later writes through
 * either name reach the other. The byte offset and stride are read back as
 * index steps over b's axes (largest stride first) and checked; NULL with
 * no exception when that fails: the caller makes a real view. */
static PyObject *lazy_view_at(PyObject *orig, PyArrayObject *b, const char *data, npy_intp n, npy_intp bstride)
{
    int nd = PyArray_NDIM(b);
    if (!nd_proxy_check(orig) || nd > NDL_MAXDIMS) return NULL;
    const npy_intp *sh = PyArray_DIMS(b), *st = PyArray_STRIDES(b);
    int ord[NDL_MAXDIMS];
    for (int d = 0; d < nd; d++) ord[d] = d;
    for (int d = 1; d < nd; d++)   /* by |stride|, largest first */
        for (int e = d; e > 0 && llabs((long long)st[ord[e]]) > llabs((long long)st[ord[e - 1]]); e--) {
            int t = ord[e]; ord[e] = ord[e - 1]; ord[e - 1] = t;
        }
    /* the first element's index: axes with negative strides counted from
     * their far end, so every step is a non-negative multiple */
    npy_intp idx[NDL_MAXDIMS], step[NDL_MAXDIMS];
    npy_intp rem = (npy_intp)(data - PyArray_BYTES(b));
    for (int d = 0; d < nd; d++)
        if (st[d] < 0 && sh[d] > 0) rem -= (sh[d] - 1) * st[d];
    npy_intp srem = bstride;
    for (int k = 0; k < nd; k++) {
        int d = ord[k];
        npy_intp a = st[d] < 0 ? -st[d] : st[d];
        if (sh[d] <= 1 || a == 0) { idx[d] = 0; step[d] = 0; continue; }
        npy_intp i = rem >= 0 ? rem / a : -1;
        if (i >= sh[d]) i = sh[d] - 1;
        if (i < 0) return NULL;
        rem -= i * a;
        idx[d] = st[d] < 0 ? sh[d] - 1 - i : i;
        step[d] = srem / st[d];
        srem -= step[d] * st[d];
    }
    if (rem != 0 || (n > 1 && srem != 0)) return NULL;
    npy_intp off = 0, fst = 0, c = 1;
    for (int d = nd - 1; d >= 0; d--) {   /* over x's C-order flat index */
        npy_intp last = idx[d] + step[d] * (n > 0 ? n - 1 : 0);
        if (last < 0 || last >= sh[d]) return NULL;
        off += idx[d] * c;
        fst += step[d] * c;
        c *= sh[d];
    }
    if (n <= 1) fst = 1;
    return nd_proxy_view(orig, 1, &n, off, &fst);
}

/* the ndarray an array local holds at the loop's end: its entry object when
 * it still views it whole, else a view of the array it was taken from (the
 * tracer's view when that array is a lazy one) */
static PyObject *array_local_value(const nd_larr *a, PyObject *const *vals, int v, int lt, int nd, nd_lframe *F,
                                   PyObject **pobj, PyObject *origs)
{
    if (a->src <= -2) {   /* an array the loop made, or a view of one */
        PyObject *base = pool_array(F, pobj, -2 - a->src);
        if (!base) return NULL;
        if (a->whole) return Py_NewRef(base);
        PyArrayObject *b = (PyArrayObject *)base;
        PyArray_Descr *d = PyArray_DESCR(b);
        Py_INCREF(d);
        npy_intp n = (npy_intp)a->shape[0], st = (npy_intp)a->strides[0];
        PyObject *view = PyArray_NewFromDescr(&PyArray_Type, d, 1, &n, &st,
                                              PyArray_BYTES(b) + (a->data - F->pool[-2 - a->src].p),
                                              NPY_ARRAY_WRITEABLE, NULL);
        if (view && PyArray_SetBaseObject((PyArrayObject *)view, Py_NewRef(base)) < 0) Py_CLEAR(view);
        return view;
    }
    if (a->src < 0) {   /* a computed array (1-D, or 2-D in C order): a new ndarray of it */
        npy_intp n[2] = {(npy_intp)a->shape[0], nd == 2 ? (npy_intp)a->shape[1] : 1};
        PyObject *r = PyArray_SimpleNew(nd == 2 ? 2 : 1, n, nd_lty_typenum(lt));
        if (r && n[0] * n[1] != 0)
            memcpy(PyArray_DATA((PyArrayObject *)r), a->data, (size_t)(n[0] * n[1]) * (size_t)PyArray_ITEMSIZE((PyArrayObject *)r));
        return r;
    }
    PyObject *base = vals[a->src];
    if (!base || !PyArray_Check(base)) {
        PyErr_SetString(PyExc_SystemError, "numdyn loop: an array view without its array");
        return NULL;
    }
    if (a->whole) {
        /* the very object the name held (a lazy value stays that value: the
         * names not handed back that alias it stay the same object) */
        PyObject *o = origs ? PyTuple_GET_ITEM(origs, a->src) : NULL;
        return Py_NewRef(o && o != Py_None ? o : base);
    }
    PyArrayObject *b = (PyArrayObject *)base;
    PyObject *o = origs ? PyTuple_GET_ITEM(origs, a->src) : NULL;
    if (a->src == v && a->data == PyArray_BYTES(b) && PyArray_NDIM(b) == 1 &&
        a->shape[0] == PyArray_DIM(b, 0) && a->strides[0] == PyArray_STRIDE(b, 0))
        return Py_NewRef(o && o != Py_None ? o : base);
    if (o && o != Py_None) {
        PyObject *lv = lazy_view_at(o, b, a->data, (npy_intp)a->shape[0], (npy_intp)a->strides[0]);
        if (lv || PyErr_Occurred()) return lv;
    }
    PyArray_Descr *d = PyArray_DESCR(b);
    Py_INCREF(d);
    npy_intp n = (npy_intp)a->shape[0], st = (npy_intp)a->strides[0];
    PyObject *view = PyArray_NewFromDescr(&PyArray_Type, d, 1, &n, &st, a->data,
                                          PyArray_FLAGS(b) & NPY_ARRAY_WRITEABLE, NULL);
    if (!view) return NULL;
    if (PyArray_SetBaseObject((PyArrayObject *)view, Py_NewRef(base)) < 0) {
        Py_DECREF(view);
        return NULL;
    }
    return view;
}

/* The locals the loop assigned, as the template binds them: a tuple of all
 * of them, or a dict of the bound ones when one is unbound or as_dict. */
static PyObject *assigned_locals(NdLoop *L, const lsig *s, PyObject *const *vals, const nd_larr *arr,
                                 const uint8_t *tag, const nd_lval *val, int as_dict, nd_lframe *F,
                                 PyObject **pobj, PyObject *origs)
{
    const nd_lir *ir = &L->ir;
    int nv = ir->nvars, nout = 0, unbound = as_dict;
    for (int v = 0; v < nv; v++)
        if (L->vout[v]) {
            nout++;
            unbound |= s->alocal[v] ? !arr[v].set : tag[v] == LT_UNBOUND;
        }
    PyObject *r = unbound ? PyDict_New() : PyTuple_New(nout);
    int k = 0;
    for (int v = 0; r && v < nv; v++) {
        if (!L->vout[v]) continue;
        if (s->alocal[v] ? !arr[v].set : tag[v] == LT_UNBOUND) continue;
        PyObject *b = s->alocal[v] ? array_local_value(&arr[v], vals, v, s->alocal[nv + v], s->alocal[2 * nv + v], F, pobj,
                                                       origs)
                                   : box(tag[v], &val[v]);
        if (!b) { Py_CLEAR(r); break; }
        if (unbound) {
            if (PyDict_SetItem(r, PyTuple_GET_ITEM(ir->names, v), b) < 0) Py_CLEAR(r);
            Py_DECREF(b);
        } else {
            PyTuple_SET_ITEM(r, k++, b);
        }
    }
    return r;
}

/* What the signature of a name's value depends on, read without computing
 * a lazy value: its type, and for arrays (lazy or not) dtype and rank;
 * for NumPy's arrays also whether writeable and rows contiguous. Two calls
 * of one prekey may still differ in their signature (an integer's bit
 * width): a remembered rejection then makes Python run a loop C could
 * have run -- slower, never wrong. */
static uint64_t prekey_of(PyObject *x)
{
    if (!x) return 0x756e62;
    uint64_t h = (uint64_t)(uintptr_t)Py_TYPE(x);
    if (nd_proxy_check(x)) return nd_hash_mix(h, (uint64_t)nd_proxy_dtype(x) << 8 | (uint64_t)nd_proxy_ndim(x));
    if (PyArray_Check(x)) {
        PyArrayObject *a = (PyArrayObject *)x;
        int nd = PyArray_NDIM(a);
        int contig = nd && PyArray_STRIDE(a, nd - 1) == (npy_intp)PyArray_ITEMSIZE(a);
        return nd_hash_mix(h, (uint64_t)PyArray_TYPE(a) << 8 | (uint64_t)nd | (uint64_t)contig << 20 |
                                  (uint64_t)(PyArray_ISWRITEABLE(a) != 0) << 21);
    }
    return h;
}

/* ---------------------------------------------------------------- run */
static PyObject *run(NdLoop *L, PyObject *locals, PyObject *const *pos)
{
    nd_lir *ir = &L->ir;
    int nv = ir->nvars;
    if (init_refs() < 0) return NULL;
    /* one block for the per-variable tables (seven allocations were a
     * good part of a call's cost around a small loop) */
    size_t n1 = (size_t)nv + 1;
    size_t o_arr = 0, o_val = o_arr + n1 * sizeof(nd_larr), o_vals = o_val + n1 * sizeof(nd_lval),
           o_snaps = o_vals + n1 * sizeof(PyObject *), o_buf = o_snaps + n1 * sizeof(PyObject *),
           o_vset = o_buf + n1 * 8, o_soff = o_vset + n1 * sizeof(uint32_t),
           o_vb = o_soff + n1 * sizeof(int64_t), total = o_vb + n1;
    /* zeroed but for the arrays' dims past the fourth: those are set for
     * every array the runner hands over, and an array local (1-D) gets its
     * own when the loop assigns it (zeroing 544 bytes a variable was a
     * fifth of a small loop's call) */
    char *block = L->spare ? L->spare : PyMem_Malloc(total);
    L->spare = NULL;   /* (a run inside this one, recursion, takes its own) */
    if (block) {
        memset(block + o_val, 0, total - o_val);
        for (size_t v = 0; v < n1; v++) {
            nd_larr *a = (nd_larr *)(block + o_arr) + v;
            a->data = NULL;
            for (int d = 0; d < 4; d++) a->shape[d] = a->strides[d] = 0;
            a->src = a->set = a->whole = 0;
            a->own = NULL;
        }
    }
    nd_larr *arr = block ? (nd_larr *)(block + o_arr) : NULL;
    nd_lval *val = block ? (nd_lval *)(block + o_val) : NULL;
    PyObject **vals = block ? (PyObject **)(block + o_vals) : NULL;   /* owned */
    PyObject **snaps = block ? (PyObject **)(block + o_snaps) : NULL;
    int64_t *soff = block ? (int64_t *)(block + o_soff) : NULL;   /* raw copies: offsets in sbuf, -1 none */
    char *sbuf = NULL;
    size_t scap = 0;
    uint8_t *buf = block ? (uint8_t *)(block + o_buf) : NULL;
    PyObject *result = NULL, *why = NULL, *handed = NULL, *mat = NULL;
    nd_trace *t = nd_trace_current();
    nd_outside o;
    nd_lframe F;
    PyObject **pobj = NULL;   /* the pool's ndarrays, made at the end */
    PyObject *origs = NULL;   /* the names' values before lazy ones were computed */
    /* (field by field: a memset of these small structs compiled to
     * `rep stos`, whose start-up cost was a tenth of run()'s own time
     * around an 8-element loop) */
    F.pool = NULL;
    F.npool = 0;
    int outside = 0;
    o.n = 0;
    o.ids = NULL;
    o.orig = o.snap = NULL;
    if (!vals || !buf || !arr || !val || !snaps) { PyErr_NoMemory(); goto done; }
    uint8_t *entry = buf, *vbits = buf + nv + 1, *awrite = buf + 2 * (nv + 1), *tag = buf + 3 * (nv + 1);
    int8_t *adt = (int8_t *)(buf + 4 * (nv + 1)), *andim = (int8_t *)(buf + 5 * (nv + 1));
    uint8_t *alocal = buf + 6 * (nv + 1), *acontig = buf + 7 * (nv + 1);
    uint32_t *vset = (uint32_t *)(block + o_vset);
    uint8_t *vb = (uint8_t *)(block + o_vb);

    /* under differentiation Python runs the loop: its array work is then
     * traced, so gradients flow through it (trace_grad.c) */
    if (t && t->ad) {
        why = PyUnicode_FromString("a differentiated function (numdyn.grad) runs its loops in Python");
        goto fallback;
    }
    /* 1. the values */
    int proxies = 0;
    uint64_t prekey = 0x70726b;
    for (int v = 0; v < nv; v++) {
        PyObject *name = PyTuple_GET_ITEM(ir->names, v), *x;
        uint8_t f = ir->vflags[v];
        int inbuiltins = 0;   /* x is builtins[name] */
        if (f & VF_HIDDEN) continue;
        if (f & VF_LOCAL) x = pos ? (L->vpos[v] >= 0 ? pos[L->vpos[v]] : NULL) : PyDict_GetItemWithError(locals, name);
        else {
            x = PyDict_GetItemWithError(L->globals, name);
            if (!x && !PyErr_Occurred()) {
                x = PyDict_GetItemWithError(builtins_dict, name);
                inbuiltins = 1;
            }
        }
        if (!x && PyErr_Occurred()) goto done_free;
        if ((f & VF_MODULE) && ir->vmod[v] == LM_FUNC) {
            /* an inlined helper: the same function, code and defaults */
            PyObject *want = PyTuple_GET_ITEM(ir->funcs, v);
            if (!x || x != PyTuple_GET_ITEM(want, 0) || PyFunction_GET_CODE(x) != PyTuple_GET_ITEM(want, 1) ||
                (PyFunction_GET_DEFAULTS(x) ? PyFunction_GET_DEFAULTS(x) : Py_None) != PyTuple_GET_ITEM(want, 2)) {
                why = PyUnicode_FromFormat("'%U' is not the function the loop inlined", name);
                goto fallback;
            }
            continue;
        }
        if (f & VF_MODULE) {
            int ok = x && ((ir->vmod[v] == LM_MATH && x == math_mod) ||
                           (ir->vmod[v] == LM_NUMPY && (x == numpy_mod || (nd_np.module && x == nd_np.module()))));
            if (!ok) { why = PyUnicode_FromFormat("'%U' is not the module the loop uses", name); goto fallback; }
            continue;
        }
        if (f & VF_BUILTIN) {
            /* (the name the builtin is read by: x is it, no second look-up) */
            if (x && inbuiltins && name == bname_obj[ir->vmod[v]]) continue;
            PyObject *b = PyDict_GetItemWithError(builtins_dict, bname_obj[ir->vmod[v]]);
            if (!b && PyErr_Occurred()) goto done_free;
            if (!x || x != b) { why = PyUnicode_FromFormat("'%U' is not the builtin", name); goto fallback; }
            continue;
        }
        if (x && nd_proxy_check(x)) proxies = 1;
        vals[v] = Py_XNewRef(x);
    }
    /* (the key of the names' types before lazy values are computed: only
     * with lazy values, which a rejection keeps from being computed) */
    if (proxies && t)
        for (int v = 0; v < nv; v++)
            if (!(ir->vflags[v] & (VF_HIDDEN | VF_MODULE | VF_BUILTIN)))
                prekey = nd_hash_mix(prekey, prekey_of(vals[v]) ^ (uint64_t)v << 56);
    if (proxies && t)
        for (int k = 0; k < L->nrejected; k++)
            if (L->rejected[k].prekey == prekey) {
                why = Py_NewRef(L->sigs[L->rejected[k].sig]->reason);
                goto fallback;
            }
    /* arrays the tracer holds: materialized, handed over like a break's */
    if (proxies && t) {
        PyObject *tup = PyTuple_New(nv);
        if (!tup) goto done_free;
        for (int v = 0; v < nv; v++) PyTuple_SET_ITEM(tup, v, Py_NewRef(vals[v] ? vals[v] : Py_None));
        PyObject *k = NULL;
        int mrc = nd__materialize_call(tup, NULL, &mat, &k);
        origs = tup;
        Py_XDECREF(k);
        if (mrc < 0) goto done_free;
        for (int v = 0; v < nv; v++)
            if (vals[v]) Py_SETREF(vals[v], Py_NewRef(PyTuple_GET_ITEM(mat, v)));
    }

    /* 2. the signature */
    uint64_t key = 0x6c6f6f70;
    int abits = 31, small = 1;
    for (int v = 0; v < nv; v++) {
        uint8_t f = ir->vflags[v];
        PyObject *x = vals[v];
        adt[v] = -1;
        entry[v] = LT_UNBOUND;
        tag[v] = LT_UNBOUND;
        if (f & (VF_MODULE | VF_BUILTIN)) continue;
        /* a name the loop only reads, holding an array of 1 or 2 dimensions:
         * a whole-array operand (np.dot(M[i], v)) */
        if (!(f & (VF_ARRAY | VF_ASSIGNED)) && x && PyArray_CheckExact(x) &&
            PyArray_NDIM((PyArrayObject *)x) >= 1 && PyArray_NDIM((PyArrayObject *)x) <= 2)
            f |= VF_ARRAY;
        arr[v].src = v;
        if (f & VF_ASSIGNED) {
            /* a name the loop assigns: an array local when it holds a 1-D
             * array (or is unbound and typing makes it one), else a scalar */
            if (!x && (f & VF_ARRAY)) {
                key = nd_hash_mix(key, (uint64_t)v << 8 | LT_UNBOUND | (1ull << 41));
                continue;
            }
            if (x && PyArray_CheckExact(x) && PyArray_NDIM((PyArrayObject *)x) >= 1 &&
                PyArray_NDIM((PyArrayObject *)x) <= NDL_MAXDIMS) {
                f |= VF_ARRAY;
                alocal[v] = 1;
                arr[v].set = 1;
                arr[v].whole = 1;
                if (PyArray_SIZE((PyArrayObject *)x) > ND_LOOP_SMALL_INPLACE) small = 0;
            } else {
                f &= (uint8_t)~VF_ARRAY;
            }
        }
        if (f & VF_ARRAY) {
            if (!x || !PyArray_CheckExact(x)) {
                why = PyUnicode_FromFormat("'%U' is not an ndarray", PyTuple_GET_ITEM(ir->names, v));
                goto fallback;
            }
            PyArrayObject *a = (PyArrayObject *)x;
            int lt = nd_lty_of_typenum(PyArray_TYPE(a));
            if (lt < 0 || !PyArray_ISNBO(PyArray_DESCR(a)->byteorder) || !PyArray_ISALIGNED(a) ||
                PyArray_NDIM(a) > NDL_MAXDIMS) {
                why = PyUnicode_FromFormat("'%U' has a dtype or layout loops do not compute in",
                                           PyTuple_GET_ITEM(ir->names, v));
                goto fallback;
            }
            adt[v] = (int8_t)lt;
            andim[v] = (int8_t)PyArray_NDIM(a);
            /* (views the loop assigns may write any array: always known) */
            awrite[v] = PyArray_ISWRITEABLE(a) != 0;
            for (int d = 0; d < PyArray_NDIM(a); d++) {
                if (PyArray_DIM(a, d) >= (1ll << 31)) abits = 47;
                arr[v].shape[d] = PyArray_DIM(a, d);
                arr[v].strides[d] = PyArray_STRIDE(a, d);
            }
            arr[v].data = PyArray_BYTES(a);
            /* rows of contiguous elements: the C code's innermost stride is a constant */
            acontig[v] = !alocal[v] && PyArray_STRIDE(a, PyArray_NDIM(a) - 1) == (npy_intp)PyArray_ITEMSIZE(a);
            key = nd_hash_mix(key, (uint64_t)(v * 4096 + lt * 64 + PyArray_NDIM(a) * 2 + awrite[v]) |
                                       (uint64_t)acontig[v] << 39 | (1ull << 40));
            continue;
        }
        if (!x) { key = nd_hash_mix(key, (uint64_t)v << 8 | LT_UNBOUND); continue; }
        PyObject *sx = x;
        if (PyArray_CheckExact(x) && PyArray_NDIM((PyArrayObject *)x) == 0)
            sx = PyArray_GETITEM((PyArrayObject *)x, PyArray_DATA((PyArrayObject *)x));
        else
            Py_INCREF(sx);
        if (!sx) goto done_free;
        int64_t b;
        int lt = type_of_value(sx, &b);
        if (lt < 0) {
            Py_DECREF(sx);
            why = PyUnicode_FromFormat("'%U' is a %s at the loop's start", PyTuple_GET_ITEM(ir->names, v),
                                       Py_TYPE(x)->tp_name);
            goto fallback;
        }
        entry[v] = (uint8_t)lt;
        vbits[v] = (uint8_t)b;
        if (unbox(sx, lt, &val[v]) != 0) { Py_DECREF(sx); why = PyUnicode_FromString("a value could not be read"); goto fallback; }
        Py_DECREF(sx);
        tag[v] = (uint8_t)lt;
        key = nd_hash_mix(key, (uint64_t)v << 16 | (uint64_t)lt << 8 | (uint64_t)b);
    }
    key = nd_hash_mix(key, (uint64_t)abits | (uint64_t)small << 8);
    lsig *s = NULL;
    for (int k = 0; k < L->nsigs; k++) if (L->sigs[k]->key == key) { s = L->sigs[k]; break; }
    if (!s) {
        nd_ltyping T;
        memset(&T, 0, sizeof T);
        T.ir = ir;
        T.vset = vset;
        T.vbits = vb;
        T.entry = entry;
        T.vbits_entry = vbits;
        T.adt = adt;
        T.andim = andim;
        T.awrite = awrite;
        T.alocal = alocal;
        T.acontig = acontig;
        T.abits = (uint8_t)abits;
        T.small_alocals = (uint8_t)small;
        T.in_try = (uint8_t)L->in_try;
        s = compile_sig(L, key, &T);
        Py_XDECREF(T.reason);
        if (!s) goto done_free;
    }
    if (!s->fn && !s->pending) {
        /* (the static markers -- frozen, compiling -- are no rejection) */
        if (proxies && t && s->index >= 0 &&
            L->nrejected < (int)(sizeof L->rejected / sizeof L->rejected[0])) {
            L->rejected[L->nrejected].prekey = prekey;
            L->rejected[L->nrejected++].sig = s->index;
        }
        why = Py_NewRef(s->reason);
        goto fallback;
    }

    /* 3. NumPy's error state: the C code sees no underflow; where NumPy
     * ignores overflow, division by zero and invalid results alike, the
     * events left to the FP flags need no test */
    int fpignore = 1, fpsafe = 1;
    PyObject *eo = NULL;
    if (extobj_var && PyContextVar_Get(extobj_var, NULL, &eo) < 0) goto done_free;
    if (eo && eo == extobj_last) {
        Py_DECREF(eo);
        fpignore = extobj_fpignore;
        fpsafe = extobj_fpsafe;
        if (!extobj_under_ok) { why = PyUnicode_FromString("np.errstate(under=...) is not 'ignore'"); goto fallback; }
    } else {
        PyObject *err = PyObject_CallNoArgs(geterr);
        PyObject *u = err ? PyDict_GetItemString(err, "under") : NULL;
        int ign = u && PyUnicode_Check(u) && PyUnicode_CompareWithASCIIString(u, "ignore") == 0;
        static const char *const evs[] = {"over", "divide", "invalid"};
        for (int k = 0; k < 3 && err; k++) {
            PyObject *m = PyDict_GetItemString(err, evs[k]);
            if (!m || !PyUnicode_Check(m) || PyUnicode_CompareWithASCIIString(m, "ignore") != 0) fpignore = 0;
            /* 'raise', 'call', 'log' may raise where NumPy meets the event */
            if (!m || !PyUnicode_Check(m) || (PyUnicode_CompareWithASCIIString(m, "ignore") != 0 &&
                                              PyUnicode_CompareWithASCIIString(m, "warn") != 0 &&
                                              PyUnicode_CompareWithASCIIString(m, "print") != 0))
                fpsafe = 0;
        }
        Py_XDECREF(err);
        if (!u && PyErr_Occurred()) { Py_XDECREF(eo); goto done_free; }
        if (eo) {
            Py_XSETREF(extobj_last, eo);
            extobj_under_ok = ign;
            extobj_fpignore = fpignore;
            extobj_fpsafe = fpsafe;
        }
        if (!ign) { why = PyUnicode_FromString("np.errstate(under=...) is not 'ignore'"); goto fallback; }
    }

    /* 4. run */
    if (s->pending) {
        /* the loop's Python copy runs on the real arrays (the tracer's
         * materialized), handed over like a break's: every array, as
         * Python may write any of them */
        if (t) {
            if (!(handed = PyTuple_New(nv))) goto done_free;
            for (int v = 0; v < nv; v++)
                PyTuple_SET_ITEM(handed, v, Py_NewRef(vals[v] && PyArray_Check(vals[v]) ? vals[v] : Py_None));
            if (nd__flush_writes(t) < 0) goto done_free;
            if (nd__outside_begin(t, handed, &o) < 0) goto done_free;
            outside = 1;
        }
        PyObject *ns = PyDict_New();
        for (int v = 0; ns && v < nv; v++)
            if (vals[v] && (ir->vflags[v] & VF_LOCAL) && !(ir->vflags[v] & VF_HIDDEN) &&
                PyDict_SetItem(ns, PyTuple_GET_ITEM(ir->names, v), vals[v]) < 0)
                Py_CLEAR(ns);
        if (!ns) goto done_free;
        if (t) nd_trace_not_replayable(t);   /* Python ran it, outside the capture */
        result = PyObject_CallOneArg(L->py, ns);
        Py_DECREF(ns);
        if (result) set_reason(L, s->reason);
        nd_counter_add(ND_CTR_LOOP_PENDING_RUNS, 1);
        /* what the speed floor watches: the function itself runs until a
         * compile ends (runtime/floor.h) */
        nd_counter_add(ND_CTR_COMPILING_RUNS, 1);
        goto done_free;
    }
    if (t) {
        /* what the C loop computes is no node of the capture: a replay,
         * which runs no Python, would skip it */
        nd_trace_not_replayable(t);
        if (!(handed = PyTuple_New(nv))) goto done_free;
        for (int v = 0; v < nv; v++)
            PyTuple_SET_ITEM(handed, v, Py_NewRef(stored(ir, s, adt, v) && vals[v] ? vals[v] : Py_None));
        if (nd__flush_writes(t) < 0) goto done_free;
        if (nd__outside_begin(t, handed, &o) < 0) goto done_free;
        outside = 1;
    }
    /* the arrays restored when the loop deoptimizes */
    int fp = (s->snapshot & 2) && !fpignore, snap = (s->snapshot & 1) || fp, nocopy = 0;
    if (snap && !(s->snapshot & 1)) {
        nocopy = rerun_safe(L, s, vals, adt, t, fpsafe);
        if (nocopy < 0) goto done_free;
        if (nocopy) snap = 0;
    }
    /* an array in one piece (C or Fortran order) is copied raw into a buffer
     * the region keeps between runs, and put back the same way: no new
     * ndarray and no NumPy copy machinery each call (a 50x50 Cholesky's L,
     * which the loop reads and stores and whose float events deoptimize) */
    if (snap) {
        size_t need = 0;
        for (int v = 0; v < nv; v++) {
            soff[v] = -1;
            if (stored(ir, s, adt, v) && adt[v] >= 0 && vals[v] && PyArray_ISONESEGMENT((PyArrayObject *)vals[v]))
                need += ((size_t)PyArray_NBYTES((PyArrayObject *)vals[v]) + 63) & ~(size_t)63;
        }
        if (need) {
            if (L->snapbuf && L->snapcap >= need) {
                sbuf = L->snapbuf;
                scap = L->snapcap;
                L->snapbuf = NULL;   /* (a run inside this one takes its own) */
            } else if (!(sbuf = PyMem_Malloc(need))) {
                PyErr_NoMemory();
                goto done_free;
            } else {
                scap = need;
            }
        }
        size_t off = 0;
        for (int v = 0; v < nv; v++)
            if (stored(ir, s, adt, v) && adt[v] >= 0 && vals[v]) {
                PyArrayObject *a = (PyArrayObject *)vals[v];
                size_t nb = (size_t)PyArray_NBYTES(a);
                if (PyArray_ISONESEGMENT(a)) {
                    soff[v] = (int64_t)off;
                    if (nb) memcpy(sbuf + off, PyArray_BYTES(a), nb);
                    off += (nb + 63) & ~(size_t)63;
                } else if (!(snaps[v] = PyArray_NewCopy(a, NPY_KEEPORDER))) {
                    goto done_free;
                }
                nd_counter_add(ND_CTR_LOOP_SNAPSHOT_BYTES, (long long)nb);
            }
    }
    runctx ctx = {L, vals, fp, 0};
    F.err = F.err_line = 0;
    F.err_a = F.err_b = F.err_c = 0;
    if (s->npool) {
        if (!(F.pool = PyMem_Calloc((size_t)s->npool, sizeof(nd_lbuf))) ||
            !(pobj = PyMem_Calloc((size_t)s->npool, sizeof(PyObject *)))) {
            PyErr_NoMemory();
            goto done_free;
        }
        F.npool = s->npool;
    }
    F.arr = arr;
    F.val = val;
    F.tag = tag;
    F.slow = cb_slow;
    F.store = cb_store;
    F.poll = cb_poll;
    F.runner = &ctx;
    if (ctx.fp) fp_clear();
    int rc = s->fn(&F);
    nd_counter_add(ND_CTR_LOOP_RUNS, 1);
    /* NumPy scalar arithmetic that overflowed, divided by zero or made a
     * NaN: Python reruns the loop, and NumPy warns or raises where it does */
    if (ctx.fp && rc != NDL_PYERR && fp_test()) rc = NDL_DEOPT;
    if (rc == NDL_PYERR && ctx.fpdeopt) {
        PyErr_Clear();
        rc = NDL_DEOPT;
    }
    if (ctx.fp) fp_clear();
    switch (rc) {
    case NDL_OK: break;
    case NDL_PYERR:
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "numdyn loop failed without an exception");
        goto raised;
    case NDL_DEOPT:
        if (nocopy) {   /* Python's rerun writes all the loop wrote (rerun_safe) */
            nd_counter_add(ND_CTR_LOOP_DEOPTS, 1);
            why = PyUnicode_FromString("deoptimized: NumPy float events (Python reruns it for NumPy's warnings)");
            goto fallback;
        }
        if (!snap) {
            PyErr_Format(PyExc_RuntimeError, "numdyn: the loop at line %d cannot be resumed in Python "
                         "(please report this); run it with NUMDYN_LOOPS=0", ir->line);
            goto done_free;
        }
        for (int v = 0; v < nv; v++) {
            size_t nb = soff[v] >= 0 ? (size_t)PyArray_NBYTES((PyArrayObject *)vals[v]) : 0;
            if (nb) memcpy(PyArray_BYTES((PyArrayObject *)vals[v]), sbuf + soff[v], nb);
            if (snaps[v] && PyArray_CopyInto((PyArrayObject *)vals[v], (PyArrayObject *)snaps[v]) < 0)
                goto done_free;
        }
        nd_counter_add(ND_CTR_LOOP_DEOPTS, 1);
        why = PyUnicode_FromString("deoptimized: a value left the types the C loop computes in");
        goto fallback;
    case NDL_INDEX:
        PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for axis %d with size %lld",
                     (long long)F.err_a, (int)F.err_b, (long long)F.err_c);
        goto raised;
    case NDL_UNBOUND: {
        PyObject *name = F.err_a >= 0 && F.err_a < nv ? PyTuple_GET_ITEM(ir->names, F.err_a) : NULL;
        if (!name) PyErr_SetString(PyExc_UnboundLocalError, "a local variable is not associated with a value");
        else if (ir->vflags[F.err_a] & VF_LOCAL)
            PyErr_Format(PyExc_UnboundLocalError,
                         "cannot access local variable '%U' where it is not associated with a value", name);
        else
            PyErr_Format(PyExc_NameError, "name '%U' is not defined", name);
        goto raised;
    }
    case NDL_RANGE0:
        PyErr_SetString(PyExc_ValueError, "range() arg 3 must not be zero");
        goto raised;
    case NDL_NOMEM:
        PyErr_NoMemory();
        goto raised;
    default:
        PyErr_Format(PyExc_SystemError, "numdyn loop: unknown status %d", rc);
        goto done_free;
    }

    /* 5. the locals it assigned */
    result = assigned_locals(L, s, vals, arr, tag, val, L->in_try, &F, pobj, origs);
    goto done_free;

raised:
    /* inside a try: the exception goes back with the locals the loop had
     * assigned when it raised, for the template to bind and raise again
     * (a handler sees the names as Python left them) */
    if (L->in_try && PyErr_Occurred()) {
        PyObject *et, *ev, *etb;
        PyErr_Fetch(&et, &ev, &etb);
        PyErr_NormalizeException(&et, &ev, &etb);
        if (etb && ev) PyException_SetTraceback(ev, etb);
        PyObject *r = ev ? assigned_locals(L, s, vals, arr, tag, val, 1, &F, pobj, origs) : NULL;
        if (r && PyDict_SetItemString(r, "__nd_exc", ev) == 0) {
            result = r;
            Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(etb);
        } else {
            Py_XDECREF(r);
            if (PyErr_Occurred()) { Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(etb); }
            else PyErr_Restore(et, ev, etb);
        }
    }
    goto done_free;

fallback:
    if (!why && PyErr_Occurred()) goto done_free;
    set_reason(L, why);
    nd_counter_add(ND_CTR_LOOP_FALLBACKS, 1);
    result = Py_NewRef(Py_None);
done_free:
    for (int v = 0; arr && v < nv; v++) if (arr[v].own) free(arr[v].own);
    for (int k = 0; k < F.npool; k++) {
        free(F.pool[k].p);
        if (pobj) Py_XDECREF(pobj[k]);
    }
    PyMem_Free(F.pool);
    PyMem_Free(pobj);
done:
    if (outside) {
        if (!result) {
            ND_EXC_SAVE(exc);
            if (nd__outside_end(t, &o, 1) < 0) PyErr_WriteUnraisable((PyObject *)L);
            ND_EXC_RESTORE(exc);
        } else if (nd__outside_end(t, &o, 1) < 0) {
            Py_CLEAR(result);
        }
        if (result && nd__flush_writes(t) < 0) Py_CLEAR(result);
        /* arrays handed back that view the memory of lazy values (Python
         * ran the loop on their materialized arrays): NumPy's views of them */
        if (result && origs && mat && nd_trace_adopt_alias(origs, mat, result) < 0) Py_CLEAR(result);
    }
    Py_XDECREF(handed);
    Py_XDECREF(mat);
    Py_XDECREF(origs);
    Py_XDECREF(why);
    if (vals) for (int v = 0; v < nv; v++) Py_XDECREF(vals[v]);
    if (snaps) for (int v = 0; v < nv; v++) Py_XDECREF(snaps[v]);
    if (sbuf && !L->snapbuf && scap <= SNAP_KEEP) {
        L->snapbuf = sbuf;
        L->snapcap = scap;
    } else {
        PyMem_Free(sbuf);
    }
    if (!L->spare) L->spare = block;
    else PyMem_Free(block);
    return result;
}

/* region(locals()), or region(*values) by position (NdLoop.npos) */
static PyObject *loop_vcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    NdLoop *L = (NdLoop *)self;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (kwnames && PyTuple_GET_SIZE(kwnames)) goto bad;
    if (L->npos >= 0) {
        if (n != L->npos) goto bad;
        return run(L, NULL, args);
    }
    if (n != 1 || !PyDict_Check(args[0])) goto bad;
    return run(L, args[0], NULL);
bad:
    if (L->npos >= 0) PyErr_Format(PyExc_TypeError, "a numdyn loop region takes %d values", L->npos);
    else PyErr_SetString(PyExc_TypeError, "a numdyn loop region takes locals()");
    return NULL;
}

static void loop_dealloc(PyObject *o)
{
    NdLoop *L = (NdLoop *)o;
    nd_lir_free(&L->ir);
    for (int k = 0; k < L->nsigs; k++) {
        Py_XDECREF(L->sigs[k]->reason);
        PyMem_Free(L->sigs[k]->alocal);
        PyMem_Free(L->sigs[k]);
    }
    PyMem_Free(L->sigs);
    PyMem_Free(L->spare);
    PyMem_Free(L->snapbuf);
    PyMem_Free(L->vpos);
    PyMem_Free(L->vout);
    Py_XDECREF(L->globals);
    Py_XDECREF(L->info);
    Py_XDECREF(L->py);
    Py_TYPE(o)->tp_free(o);
}

static PyObject *loop_repr(PyObject *o)
{
    return PyUnicode_FromFormat("<numdyn loop region, line %d>", ((NdLoop *)o)->ir.line);
}

/* for tests and explain: how the template calls the region */
static PyObject *loop_get_passed(PyObject *o, void *c)
{
    NdLoop *L = (NdLoop *)o;
    if (L->npos < 0) Py_RETURN_NONE;   /* locals() */
    PyObject *r = PyTuple_New(L->npos);
    for (int v = 0; r && v < L->ir.nvars; v++)
        if (L->vpos[v] >= 0 && L->vpos[v] < L->npos)
            PyTuple_SET_ITEM(r, L->vpos[v], Py_NewRef(PyTuple_GET_ITEM(L->ir.names, v)));
    return r;
}

static PyObject *loop_get_handed_back(PyObject *o, void *c)
{
    NdLoop *L = (NdLoop *)o;
    PyObject *r = PyList_New(0);
    for (int v = 0; r && v < L->ir.nvars; v++)
        if (L->vout[v] && PyList_Append(r, PyTuple_GET_ITEM(L->ir.names, v)) < 0) Py_CLEAR(r);
    Py_XSETREF(r, r ? PyList_AsTuple(r) : NULL);
    return r;
}

static PyObject *loop_get_line(PyObject *o, void *c) { return PyLong_FromLong(((NdLoop *)o)->ir.line); }

static PyGetSetDef loop_getset[] = {
    {"passed", loop_get_passed, NULL, "the names passed by position (None: locals())", NULL},
    {"handed_back", loop_get_handed_back, NULL, "the names handed back", NULL},
    {"line", loop_get_line, NULL, "the loop's first line", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject NdLoop_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.LoopRegion",
    .tp_basicsize = sizeof(NdLoop),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(NdLoop, vcall),
    .tp_call = PyVectorcall_Call,
    .tp_dealloc = loop_dealloc,
    .tp_repr = loop_repr,
    .tp_getset = loop_getset,
};

PyObject *nd_loop_region_new(nd_lir *ir, PyObject *globals, PyObject *info)
{
    NdLoop *L = PyObject_New(NdLoop, &NdLoop_Type);
    if (!L) { nd_lir_free(ir); return NULL; }
    L->vcall = loop_vcall;
    L->ir = *ir;
    memset(ir, 0, sizeof *ir);
    L->npos = -1;
    L->vpos = PyMem_Malloc(sizeof(int) * ((size_t)L->ir.nvars + 1));
    L->vout = PyMem_Malloc((size_t)L->ir.nvars + 1);
    if (L->vpos && L->vout)
        for (int v = 0; v < L->ir.nvars; v++) {
            L->vpos[v] = -1;
            L->vout[v] = (L->ir.vflags[v] & VF_ASSIGNED) != 0;
        }
    L->globals = Py_NewRef(globals);
    L->info = Py_XNewRef(info);
    L->py = NULL;
    L->in_try = 0;
    L->sigs = NULL;
    L->nsigs = L->capsigs = 0;
    L->nrejected = 0;
    L->spare = NULL;
    L->snapbuf = NULL;
    L->snapcap = 0;
    if (!L->vpos || !L->vout) {
        Py_DECREF(L);
        return PyErr_NoMemory();
    }
    return (PyObject *)L;
}

int nd_loop_region_set_io(PyObject *region, const int *vpos, int npos, const uint8_t *vout)
{
    if (Py_TYPE(region) != &NdLoop_Type) {
        PyErr_SetString(PyExc_TypeError, "not a numdyn loop region");
        return -1;
    }
    NdLoop *L = (NdLoop *)region;
    for (int v = 0; v < L->ir.nvars; v++) {
        L->vpos[v] = npos >= 0 ? vpos[v] : -1;
        L->vout[v] = vout[v];
    }
    L->npos = npos;
    return 0;
}

int nd_loop_region_set_py(PyObject *region, PyObject *py, int in_try)
{
    if (Py_TYPE(region) != &NdLoop_Type) {
        PyErr_SetString(PyExc_TypeError, "not a numdyn loop region");
        return -1;
    }
    Py_XSETREF(((NdLoop *)region)->py, Py_NewRef(py));
    ((NdLoop *)region)->in_try = in_try != 0;
    return 0;
}

int nd_loop_init(PyObject *module)
{
    const char *e = getenv("NUMDYN_LOOPS");
    if (e && strcmp(e, "0") == 0) nd_loop_enabled = 0;
    return PyType_Ready(&NdLoop_Type);
}
