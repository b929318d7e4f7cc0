/* loop_types.c -- the types of a captured loop for one call signature
 * (see loop_types.h). */
#include "passes/loop_types.h"
#include "core/npy.h"
#include <string.h>

static const int typenums[LT_N] = {
    -1, -1, -1, NPY_BOOL, NPY_INT8, NPY_INT16, NPY_INT32, NPY_INT64,
    NPY_UINT8, NPY_UINT16, NPY_UINT32, NPY_UINT64, NPY_FLOAT32, NPY_FLOAT64};
static const char *const names[LT_N] = {
    "bool", "int", "float", "bool_", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "float32", "float64"};

int nd_lty_typenum(int t) { return t >= 0 && t < LT_N ? typenums[t] : -1; }
const char *nd_lty_name(int t) { return t >= 0 && t < LT_N ? names[t] : NULL; }

int nd_lty_of_typenum(int tn)
{
    switch (tn) {
    case NPY_BOOL: return LT_B1;
    case NPY_BYTE: return LT_I1;
    case NPY_SHORT: return LT_I2;
    case NPY_INT: return LT_I4;
    case NPY_LONG: case NPY_LONGLONG: return LT_I8;
    case NPY_UBYTE: return LT_U1;
    case NPY_USHORT: return LT_U2;
    case NPY_UINT: return LT_U4;
    case NPY_ULONG: case NPY_ULONGLONG: return LT_U8;
    case NPY_FLOAT: return LT_F4;
    case NPY_DOUBLE: return LT_F8;
    default: return -1;
    }
}

/* ------------------------------------------------------------ oracle */
static PyObject *sample[LT_N];
static PyObject *fnobj[LF_N];

static const struct { int fn; const char *mod, *name; } fntab[] = {
    {LF_ABS, "builtins", "abs"}, {LF_MIN, "builtins", "min"}, {LF_MAX, "builtins", "max"},
    {LF_INT, "builtins", "int"}, {LF_FLOAT, "builtins", "float"}, {LF_BOOL, "builtins", "bool"},
    {LF_ROUND, "builtins", "round"},
    {LF_M_SQRT, "math", "sqrt"}, {LF_M_EXP, "math", "exp"}, {LF_M_LOG, "math", "log"},
    {LF_M_LOG10, "math", "log10"}, {LF_M_LOG2, "math", "log2"}, {LF_M_SIN, "math", "sin"},
    {LF_M_COS, "math", "cos"}, {LF_M_TAN, "math", "tan"}, {LF_M_ATAN, "math", "atan"},
    {LF_M_ASIN, "math", "asin"}, {LF_M_ACOS, "math", "acos"}, {LF_M_SINH, "math", "sinh"},
    {LF_M_COSH, "math", "cosh"}, {LF_M_TANH, "math", "tanh"}, {LF_M_FABS, "math", "fabs"},
    {LF_M_FLOOR, "math", "floor"}, {LF_M_CEIL, "math", "ceil"}, {LF_M_TRUNC, "math", "trunc"},
    {LF_M_ATAN2, "math", "atan2"}, {LF_M_HYPOT, "math", "hypot"}, {LF_M_POW, "math", "pow"},
    {LF_M_ISNAN, "math", "isnan"}, {LF_M_ISINF, "math", "isinf"}, {LF_M_ISFINITE, "math", "isfinite"},
    {LF_M_LOG1P, "math", "log1p"}, {LF_M_EXPM1, "math", "expm1"},
    {LF_NP_SQRT, "numpy", "sqrt"}, {LF_NP_EXP, "numpy", "exp"}, {LF_NP_LOG, "numpy", "log"},
    {LF_NP_LOG10, "numpy", "log10"}, {LF_NP_LOG2, "numpy", "log2"}, {LF_NP_SIN, "numpy", "sin"},
    {LF_NP_COS, "numpy", "cos"}, {LF_NP_TAN, "numpy", "tan"}, {LF_NP_ARCTAN, "numpy", "arctan"},
    {LF_NP_ARCSIN, "numpy", "arcsin"}, {LF_NP_ARCCOS, "numpy", "arccos"},
    {LF_NP_SINH, "numpy", "sinh"}, {LF_NP_COSH, "numpy", "cosh"}, {LF_NP_TANH, "numpy", "tanh"},
    {LF_NP_FABS, "numpy", "fabs"}, {LF_NP_FLOOR, "numpy", "floor"}, {LF_NP_CEIL, "numpy", "ceil"},
    {LF_NP_TRUNC, "numpy", "trunc"}, {LF_NP_ARCTAN2, "numpy", "arctan2"},
    {LF_NP_HYPOT, "numpy", "hypot"}, {LF_NP_POWER, "numpy", "power"},
    {LF_NP_ISNAN, "numpy", "isnan"}, {LF_NP_ISINF, "numpy", "isinf"},
    {LF_NP_ISFINITE, "numpy", "isfinite"}, {LF_NP_LOG1P, "numpy", "log1p"},
    {LF_NP_EXPM1, "numpy", "expm1"}, {LF_NP_ABS, "numpy", "absolute"},
    {LF_NP_MINIMUM, "numpy", "minimum"}, {LF_NP_MAXIMUM, "numpy", "maximum"},
    {LF_NP_SIGN, "numpy", "sign"},
    {LF_NP_SQUARE, "numpy", "square"}, {LF_NP_DOT, "numpy", "dot"}, {LF_NP_SUM, "numpy", "sum"},
    {LF_NP_MEAN, "numpy", "mean"}, {LF_NP_NORM, "numpy.linalg", "norm"},
    {LF_NP_VAR, "numpy", "var"}, {LF_NP_STD, "numpy", "std"}, {LF_NP_PROD, "numpy", "prod"},
    {LF_NP_MATMUL, "numpy", "matmul"}, {LF_NP_MAX, "numpy", "max"}, {LF_NP_MIN, "numpy", "min"},
    {LF_NP_ARGMAX, "numpy", "argmax"}, {LF_NP_ARGMIN, "numpy", "argmin"},
    {LF_NP_OUTER, "numpy", "outer"}, {LF_NP_CONCATENATE, "numpy", "concatenate"},
    {LF_NP_ARRAY, "numpy", "array"}, {LF_NP_FLIP, "numpy", "flip"}, {LF_NP_INV, "numpy.linalg", "inv"},
    {LF_NP_CAST + LT_B1, "numpy", "bool_"}, {LF_NP_CAST + LT_I1, "numpy", "int8"},
    {LF_NP_CAST + LT_I2, "numpy", "int16"}, {LF_NP_CAST + LT_I4, "numpy", "int32"},
    {LF_NP_CAST + LT_I8, "numpy", "int64"}, {LF_NP_CAST + LT_U1, "numpy", "uint8"},
    {LF_NP_CAST + LT_U2, "numpy", "uint16"}, {LF_NP_CAST + LT_U4, "numpy", "uint32"},
    {LF_NP_CAST + LT_U8, "numpy", "uint64"}, {LF_NP_CAST + LT_F4, "numpy", "float32"},
    {LF_NP_CAST + LT_F8, "numpy", "float64"},
    {-1, NULL, NULL}};

/* the Python object for call fn (borrowed); NULL + exception */
PyObject *nd_lty_function(int fn)
{
    if (fn < 0 || fn >= LF_N) { PyErr_SetString(PyExc_SystemError, "bad loop function"); return NULL; }
    if (fnobj[fn]) return fnobj[fn];
    for (int k = 0; fntab[k].mod; k++) {
        if (fntab[k].fn != fn) continue;
        PyObject *m = PyImport_ImportModule(fntab[k].mod);
        if (!m) return NULL;
        fnobj[fn] = PyObject_GetAttrString(m, fntab[k].name);
        Py_DECREF(m);
        return fnobj[fn];
    }
    PyErr_SetString(PyExc_SystemError, "unknown loop function");
    return NULL;
}

static int init_samples(void)
{
    if (sample[LT_F8]) return 0;
    sample[LT_PYBOOL] = Py_NewRef(Py_True);
    sample[LT_PYINT] = PyLong_FromLong(1);
    sample[LT_PYFLOAT] = PyFloat_FromDouble(1.0);
    PyObject *one = PyLong_FromLong(1);
    for (int t = LT_B1; t < LT_N; t++) {
        PyObject *ty = nd_lty_function(LF_NP_CAST + t);
        if (!ty || !one || !(sample[t] = PyObject_CallOneArg(ty, one))) {
            Py_XDECREF(one);
            for (int k = 0; k < LT_N; k++) Py_CLEAR(sample[k]);
            return -1;
        }
    }
    Py_DECREF(one);
    return 0;
}

static int type_of(PyObject *r)
{
    if (PyBool_Check(r)) return LT_PYBOOL;
    if (PyLong_CheckExact(r)) return LT_PYINT;
    if (PyFloat_CheckExact(r)) return LT_PYFLOAT;
    if (PyArray_IsScalar(r, Generic)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(r);
        if (!d) { PyErr_Clear(); return -1; }
        int t = nd_lty_of_typenum(d->type_num);
        Py_DECREF(d);
        /* only NumPy's own scalar types (not a subclass) */
        if (t >= 0 && Py_TYPE(r) != Py_TYPE(sample[t])) t = -1;
        return t;
    }
    return -1;
}

PyObject *nd_lty_apply(int op, PyObject *a, PyObject *b)
{
    switch (op) {
    case LO_ADD: return PyNumber_Add(a, b);
    case LO_SUB: return PyNumber_Subtract(a, b);
    case LO_MUL: return PyNumber_Multiply(a, b);
    case LO_TDIV: return PyNumber_TrueDivide(a, b);
    case LO_FDIV: return PyNumber_FloorDivide(a, b);
    case LO_MOD: return PyNumber_Remainder(a, b);
    case LO_POW: return PyNumber_Power(a, b, Py_None);
    case LO_LSH: return PyNumber_Lshift(a, b);
    case LO_RSH: return PyNumber_Rshift(a, b);
    case LO_BAND: return PyNumber_And(a, b);
    case LO_BOR: return PyNumber_Or(a, b);
    case LO_BXOR: return PyNumber_Xor(a, b);
    case LO_NEG: return PyNumber_Negative(a);
    case LO_POS: return PyNumber_Positive(a);
    case LO_INV: return PyNumber_Invert(a);
    case LO_NOT: {
        int t = PyObject_IsTrue(a);
        return t < 0 ? NULL : PyBool_FromLong(!t);
    }
    case LO_LT: return PyObject_RichCompare(a, b, Py_LT);
    case LO_LE: return PyObject_RichCompare(a, b, Py_LE);
    case LO_GT: return PyObject_RichCompare(a, b, Py_GT);
    case LO_GE: return PyObject_RichCompare(a, b, Py_GE);
    case LO_EQ: return PyObject_RichCompare(a, b, Py_EQ);
    case LO_NE: return PyObject_RichCompare(a, b, Py_NE);
    default: {
        PyObject *f = nd_lty_function(op - LO_NOPS);
        if (!f) return NULL;
        if (op == LO_NOPS + LF_NP_CONCATENATE || op == LO_NOPS + LF_NP_ARRAY) {
            /* their parts in one tuple / list */
            PyObject *seq = op == LO_NOPS + LF_NP_ARRAY ? PyList_New(0) : NULL;
            if (seq && (PyList_Append(seq, a) < 0 || (b && PyList_Append(seq, b) < 0))) Py_CLEAR(seq);
            if (op == LO_NOPS + LF_NP_CONCATENATE) seq = b ? PyTuple_Pack(2, a, b) : PyTuple_Pack(1, a);
            PyObject *r = seq ? PyObject_CallOneArg(f, seq) : NULL;
            Py_XDECREF(seq);
            return r;
        }
        PyObject *args[2] = {a, b};
        return PyObject_Vectorcall(f, args, b ? 2 : (a ? 1 : 0), NULL);
    }
    }
}

/* The oracle evaluates operations on sample values (ones); NumPy must not
 * warn or raise about them (-uint64(1) "overflows"), whatever errstate the
 * caller set: the loop may never run that operation.  NumPy's errstate is a
 * context variable only Python can enter, so a tiny helper enters it. */
static PyObject *quiet_enter, *quiet_leave;

static PyObject *quiet_begin(void)
{
    if (!quiet_enter) {
        static const char src[] =
            "import numpy as _np\n"
            "def enter():\n"
            "    e = _np.errstate(all='ignore')\n"
            "    e.__enter__()\n"
            "    return e\n"
            "def leave(e):\n"
            "    e.__exit__(None, None, None)\n";
        PyObject *g = PyDict_New();
        if (!g) return NULL;
        if (PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins()) < 0) { Py_DECREF(g); return NULL; }
        PyObject *r = PyRun_String(src, Py_file_input, g, g);
        if (!r) { Py_DECREF(g); return NULL; }
        Py_DECREF(r);
        quiet_enter = Py_XNewRef(PyDict_GetItemString(g, "enter"));
        quiet_leave = Py_XNewRef(PyDict_GetItemString(g, "leave"));
        Py_DECREF(g);
        if (!quiet_enter || !quiet_leave) {
            Py_CLEAR(quiet_enter);
            Py_CLEAR(quiet_leave);
            PyErr_SetString(PyExc_SystemError, "numdyn: loop typing helper");
            return NULL;
        }
    }
    return PyObject_CallNoArgs(quiet_enter);
}

/* leaves the quiet state, keeping the exception (if any) of the evaluation */
static int quiet_end(PyObject *ctx)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc = PyErr_GetRaisedException();
#else
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
#endif
    PyObject *r = PyObject_CallOneArg(quiet_leave, ctx);
    Py_DECREF(ctx);
    if (r) {
        Py_DECREF(r);
#if PY_VERSION_HEX >= 0x030C0000
        PyErr_SetRaisedException(exc);
#else
        PyErr_Restore(et, ev, tb);
#endif
        return 0;
    }
#if PY_VERSION_HEX >= 0x030C0000
    Py_XDECREF(exc);
#else
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
#endif
    return -1;
    return 0;
}

/* -3: not asked yet */
static int8_t bin_tab[LO_NOPS][LT_N][LT_N];
static int8_t call_tab[LF_N][LT_N + 1][LT_N + 1];
static int tabs_init;

static void init_tabs(void)
{
    if (tabs_init) return;
    memset(bin_tab, -3, sizeof bin_tab);
    memset(call_tab, -3, sizeof call_tab);
    tabs_init = 1;
}

static int ask(int op, int ta, int tb)
{
    if (init_samples() < 0) return -2;
    PyObject *q = quiet_begin();
    if (!q) return -2;
    PyObject *r = nd_lty_apply(op, ta >= 0 ? sample[ta] : NULL, tb >= 0 ? sample[tb] : NULL);
    if (quiet_end(q) < 0) { Py_XDECREF(r); return -2; }
    if (!r) {
        if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError) ||
            PyErr_ExceptionMatches(PyExc_OverflowError) || PyErr_ExceptionMatches(PyExc_ArithmeticError)) {
            PyErr_Clear();
            return -1;
        }
        return -2;
    }
    int t = type_of(r);
    Py_DECREF(r);
    return t;
}

int nd_lty_bin(int op, int ta, int tb)
{
    init_tabs();
    if (ta < 0 || tb < 0 || ta >= LT_N || tb >= LT_N) return -1;
    int8_t *c = &bin_tab[op][ta][tb];
    if (*c == -3) {
        int t = ask(op, ta, tb);
        if (t == -2) return -2;
        *c = (int8_t)t;
    }
    return *c;
}

int nd_lty_un(int op, int ta)
{
    init_tabs();
    if (ta < 0 || ta >= LT_N) return -1;
    if (op == LO_NOT) return LT_PYBOOL;
    int8_t *c = &bin_tab[op][ta][0];
    if (*c == -3) {
        int t = ask(op, ta, -1);
        if (t == -2) return -2;
        *c = (int8_t)t;
    }
    return *c;
}

int nd_lty_call(int fn, int nargs, const int *ta)
{
    init_tabs();
    if (nargs > 2) return -1;
    int a = nargs > 0 ? ta[0] : LT_N, b = nargs > 1 ? ta[1] : LT_N;
    if (a < 0 || b < 0) return -1;
    /* min/max return one of their operands: a type only when both agree */
    if ((fn == LF_MIN || fn == LF_MAX) && a != b) return -1;
    int8_t *c = &call_tab[fn][a][b];
    if (*c == -3) {
        int t;
        if (init_samples() < 0) return -2;
        PyObject *f = nd_lty_function(fn);
        if (!f) return -2;
        PyObject *args[2] = {a < LT_N ? sample[a] : NULL, b < LT_N ? sample[b] : NULL};
        PyObject *q = quiet_begin();
        if (!q) return -2;
        PyObject *r = PyObject_Vectorcall(f, args, (size_t)nargs, NULL);
        if (quiet_end(q) < 0) { Py_XDECREF(r); return -2; }
        if (!r) {
            if (!PyErr_ExceptionMatches(PyExc_Exception)) return -2;
            PyErr_Clear();
            t = -1;
        } else {
            t = type_of(r);
            Py_DECREF(r);
        }
        *c = (int8_t)t;
    }
    return *c;
}

/* ------------------------------------------------- the vector oracle */
/* A 1-D array operand (t | LT_VEC) is asked about with a one-element array
 * of its dtype: NumPy's own promotion for arrays (NEP 50: Python scalars
 * weak, NumPy scalars strong), which differs from scalar math in places
 * (np.True_ ** 3 is int64, np.array([True]) ** 3 int8). An elementwise
 * result must be an ndarray, a reduction's a NumPy scalar; else -1. */
static PyObject *vsample[2][LT_N];
static int8_t vop_tab[LO_NOPS + LF_N][3 * LT_N][3 * LT_N + 1];
static int vtabs_init;

static PyObject *sample_of(int t)
{
    if (t < 0) return NULL;
    if (!(t & (LT_VEC | LT_MAT))) return sample[t];
    int m = (t & LT_MAT) != 0;
    t &= ~(LT_VEC | LT_MAT);
    if (t < LT_B1 || t >= LT_N) return NULL;
    if (!vsample[m][t]) {
        npy_intp one[2] = {1, 1};
        PyObject *v = PyArray_SimpleNew(m + 1, one, nd_lty_typenum(t));
        if (!v) return NULL;
        if (PyArray_SETITEM((PyArrayObject *)v, PyArray_DATA((PyArrayObject *)v), sample[t]) < 0) {
            Py_DECREF(v);
            return NULL;
        }
        vsample[m][t] = v;
    }
    return vsample[m][t];
}

static int slot(int t)
{
    if (t < 0) return 3 * LT_N;
    return (t & LT_MAT) ? 2 * LT_N + (t & ~LT_MAT) : (t & LT_VEC) ? LT_N + (t & ~LT_VEC) : t;
}

/* op: LO_* or LO_NOPS + LF_*; tb < 0: one operand */
int nd_lty_vop(int op, int ta, int tb)
{
    if (!vtabs_init) { memset(vop_tab, -3, sizeof vop_tab); vtabs_init = 1; }
    if (ta < 0 || (ta & ~(LT_VEC | LT_MAT)) >= LT_N || (tb >= 0 && (tb & ~(LT_VEC | LT_MAT)) >= LT_N))
        return -1;
    if ((ta & LT_MAT) && (ta & LT_VEC)) return -1;
    if (tb >= 0 && (tb & LT_MAT) && (tb & LT_VEC)) return -1;
    if (op < 0 || op >= LO_NOPS + LF_N) return -1;
    int8_t *c = &vop_tab[op][slot(ta)][slot(tb)];
    if (*c != -3) return *c;
    if (init_samples() < 0) return -2;
    PyObject *a = sample_of(ta), *b = tb >= 0 ? sample_of(tb) : NULL;
    if (!a || (tb >= 0 && !b)) {
        if (PyErr_Occurred()) return -2;
        *c = -1;
        return -1;
    }
    PyObject *q = quiet_begin();
    if (!q) return -2;
    PyObject *r = nd_lty_apply(op, a, b);
    if (quiet_end(q) < 0) { Py_XDECREF(r); return -2; }
    int t = -1;
    if (!r) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return -2;
        PyErr_Clear();
    } else {
        int red = op >= LO_NOPS + LF_NP_DOT && op <= LO_NOPS + LF_NP_ARGMIN;
        int mat = (ta & LT_MAT) || (tb >= 0 && (tb & LT_MAT));
        int vec = (ta & LT_VEC) || (tb >= 0 && (tb & LT_VEC));
        int prod = op == LO_NOPS + LF_NP_DOT || op == LO_NOPS + LF_NP_MATMUL;
        if (op == LO_NOPS + LF_NP_OUTER) {
            /* two 1-D operands to a 2-D result */
            if (!mat && (ta & LT_VEC) && (tb & LT_VEC) && PyArray_CheckExact(r) &&
                PyArray_NDIM((PyArrayObject *)r) == 2) {
                t = nd_lty_of_typenum(PyArray_TYPE((PyArrayObject *)r));
                if (t < LT_B1) t = -1;
                else t |= LT_MAT;
            }
        } else if (prod && (ta & LT_MAT) && tb >= 0 && (tb & LT_MAT)) {
            /* 2-D @ 2-D: a 2-D result */
            if (PyArray_CheckExact(r) && PyArray_NDIM((PyArrayObject *)r) == 2) {
                t = nd_lty_of_typenum(PyArray_TYPE((PyArrayObject *)r));
                if (t < LT_B1) t = -1;
                else t |= LT_MAT;
            }
        } else if (mat && !prod) {
            /* 2-D operands: elementwise with 2-D ones and scalars (no
             * broadcasting of a 1-D one) to a 2-D result, or reduced whole */
            if (!vec && red && !PyArray_Check(r)) {
                t = type_of(r);
                if (t < LT_B1) t = -1;
            } else if (!vec && !red && PyArray_CheckExact(r) && PyArray_NDIM((PyArrayObject *)r) == 2) {
                t = nd_lty_of_typenum(PyArray_TYPE((PyArrayObject *)r));
                if (t < LT_B1) t = -1;
                else t |= LT_MAT;
            }
        } else if (PyArray_CheckExact(r)) {
            if ((!red || mat) && PyArray_NDIM((PyArrayObject *)r) == 1) {
                t = nd_lty_of_typenum(PyArray_TYPE((PyArrayObject *)r));
                if (t < LT_B1) t = -1;
                else t |= LT_VEC;
            }
        } else if (red && !mat) {
            t = type_of(r);
            if (t < LT_B1) t = -1;
        }
        Py_XDECREF(r);
    }
    *c = (int8_t)t;
    return t;
}

/* np.can_cast(from, to, 'same_kind'): an in-place array operation's result
 * cast back (NumPy raises UFuncTypeError otherwise). 1, 0, or -1 + error */
int nd_lty_same_kind(int from, int to)
{
    static int8_t tab[LT_N][LT_N];
    static int init;
    if (!init) { memset(tab, -3, sizeof tab); init = 1; }
    if (from < LT_B1 || from >= LT_N || to < LT_B1 || to >= LT_N) return 0;
    if (tab[from][to] == -3) {
        PyArray_Descr *a = PyArray_DescrFromType(nd_lty_typenum(from));
        PyArray_Descr *b = PyArray_DescrFromType(nd_lty_typenum(to));
        int ok = a && b && PyArray_CanCastTypeTo(a, b, NPY_SAME_KIND_CASTING);
        Py_XDECREF(a);
        Py_XDECREF(b);
        tab[from][to] = (int8_t)ok;
    }
    return tab[from][to];
}

/* ------------------------------------------------- expression types */
static int why(nd_ltyping *T, const nd_ln *e, const char *what)
{
    if (!T->reason) T->reason = PyUnicode_FromFormat("%s at line %d", what, e->line);
    return -1;
}

static int bits_of(int64_t v)
{
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    int b = 0;
    while (m) { b++; m >>= 1; }
    return b;
}

static int clampb(int b) { return b > 62 ? LBITS_ANY : b; }

static int int_bits(int t)
{
    switch (t) {
    case LT_PYBOOL: case LT_B1: return 1;
    case LT_I1: return 7;
    case LT_U1: return 8;
    case LT_I2: return 15;
    case LT_U2: return 16;
    case LT_I4: return 31;
    case LT_U4: return 32;
    case LT_I8: return 63;
    default: return LBITS_ANY;
    }
}

static int is_intlike(int t) { return t == LT_PYINT || t == LT_PYBOOL || (t >= LT_I1 && t <= LT_U8); }

int nd_lty_fn(const nd_ltyping *T, const nd_ln *e)
{
    if (e->kind != LK_CALL || e->i != LCALL_DTYPE) return e->aux;
    int t = e->var >= 0 ? T->adt[e->var] : -1;
    return t >= LT_B1 && t < LT_N ? LF_NP_CAST + t : -1;
}

int nd_lty_gather(const nd_ltyping *T, const nd_ln *e)
{
    return e->kind == LK_ELEM && e->n == 1 && !e->aux && !e->i && e->var >= 0 && T->adt[e->var] >= 0 &&
           T->andim[e->var] == 1;
}

/* np.concatenate((u, v, ...)) of 1-D arrays / np.array([x, y, ...]) of
 * scalars: NumPy's type of the parts two at a time (promotion of array
 * dtypes, and of the default dtypes of Python scalars, for the types loops
 * compute in), a 1-D array */
static int cat_type(nd_ltyping *T, const nd_ln *e, const uint8_t *assign, int *bits)
{
    int cat = e->aux == LF_NP_CONCATENATE || e->aux == LF_NP_FLIP, r = -1;
    for (int k = 0; k < e->n; k++) {
        int b, t = nd_lty_expr(T, e->kid[k], assign, &b);
        if (t < 0) return t;
        if (cat && (!(t & LT_VEC) || (t & LT_MAT)))
            return why(T, e, "np.concatenate()/np.flip() of something that is not a 1-D array");
        if (!cat && (t & (LT_VEC | LT_MAT))) return why(T, e, "np.array() of arrays");
        if (!cat && t == LT_PYINT && b > 62) return why(T, e, "np.array() of a Python int that may not fit int64");
        r = k == 0 ? nd_lty_vop(LO_NOPS + e->aux, t, -1) : nd_lty_vop(LO_NOPS + e->aux, cat ? r : r & ~LT_VEC, t);
        if (r < 0) return r == -2 ? -2 : why(T, e, "np.concatenate()/np.array() of types NumPy refuses (or whose result loops do not compute in)");
        if (!(r & LT_VEC)) return why(T, e, "np.concatenate()/np.array() whose result is not a 1-D array");
    }
    *bits = 1;
    return r;
}

int nd_lty_expr(nd_ltyping *T, const nd_ln *e, const uint8_t *assign, int *bits)
{
    int b0 = 0, b1 = 0, t0, t1, r;
    *bits = LBITS_ANY;
    switch (e->kind) {
    case LK_CONST:
        *bits = e->aux == LT_PYINT ? bits_of(e->i) : 1;
        return e->aux;
    case LK_VAR:
        if (T->adt[e->var] >= 0) {   /* a whole array: 1-D or 2-D operands only */
            *bits = 1;
            if (T->andim[e->var] == 1) return T->adt[e->var] | LT_VEC;
            if (T->andim[e->var] == 2) return T->adt[e->var] | LT_MAT;
            return why(T, e, "an array used as a scalar");
        }
        if (assign[e->var] == LT_UNBOUND) return -1;
        *bits = assign[e->var] == LT_PYINT ? T->vbits[e->var] : int_bits(assign[e->var]);
        return assign[e->var];
    case LK_BIN:
    case LK_CMP:
        if ((t0 = nd_lty_expr(T, e->kid[0], assign, &b0)) < 0) return t0;
        if ((t1 = nd_lty_expr(T, e->kid[1], assign, &b1)) < 0) return t1;
        if ((t0 | t1) & (LT_VEC | LT_MAT)) {
            *bits = 1;
            /* ndarray.__pow__'s fast paths (NumPy 2): an array ** 0.5 (a
             * Python float) is np.sqrt -- nan at -inf where pow gives inf,
             * -0.0 at -0.0 -- and a bool array ** 2 is np.square's int8 */
            if (e->op == LO_POW && (t0 & (LT_VEC | LT_MAT)) && e->kid[1]->kind == LK_CONST &&
                ((e->kid[1]->aux == LT_PYFLOAT && e->kid[1]->f == 0.5 &&
                  ((t0 & 31) == LT_F4 || (t0 & 31) == LT_F8)) ||
                 (e->kid[1]->aux == LT_PYINT && e->kid[1]->i == 2 && (t0 & 31) == LT_B1)))
                return why(T, e, "`** 0.5` of a float array (NumPy computes np.sqrt) or `** 2` of a bool array");
            r = nd_lty_vop(e->op, t0, t1);
            if (r == -1) return why(T, e, "an array operation NumPy refuses for these types (or whose type loops do not compute in)");
            return r;
        }
        r = nd_lty_bin(e->op, t0, t1);
        if (r == -1) return why(T, e, "an operator NumPy or Python refuses for these types");
        if (r < 0) return r;
        if (t0 == LT_PYBOOL) b0 = 1;
        if (t1 == LT_PYBOOL) b1 = 1;
        switch (e->op) {
        case LO_ADD: case LO_SUB: *bits = clampb((b0 > b1 ? b0 : b1) + 1); break;
        case LO_MUL: *bits = clampb(b0 + b1); break;
        case LO_FDIV: *bits = b0 >= 63 ? LBITS_ANY : b0; break;
        case LO_MOD: *bits = b1 >= 63 ? LBITS_ANY : b1; break;
        case LO_POW:
            if (e->kid[1]->kind == LK_CONST && e->kid[1]->aux == LT_PYINT && e->kid[1]->i >= 0 &&
                e->kid[1]->i <= 62)
                *bits = clampb(b0 <= 1 ? 1 : b0 * (int)e->kid[1]->i);
            else
                *bits = LBITS_ANY;
            break;
        case LO_LSH:
            if (e->kid[1]->kind == LK_CONST && e->kid[1]->aux == LT_PYINT && e->kid[1]->i >= 0 &&
                e->kid[1]->i <= 62)
                *bits = clampb(b0 + (int)e->kid[1]->i);
            else
                *bits = LBITS_ANY;
            break;
        case LO_RSH: *bits = b0; break;
        case LO_BAND: case LO_BOR: case LO_BXOR: *bits = b0 > b1 ? b0 : b1; break;
        default: *bits = 1; break;
        }
        return r;
    case LK_UN:
        if ((t0 = nd_lty_expr(T, e->kid[0], assign, &b0)) < 0) return t0;
        if (t0 & (LT_VEC | LT_MAT)) {
            *bits = 1;
            if (e->op == LO_NOT) return why(T, e, "the truth value of an array");
            r = nd_lty_vop(e->op, t0, -1);
            if (r == -1) return why(T, e, "an array operation NumPy refuses for this type");
            return r;
        }
        r = nd_lty_un(e->op, t0);
        if (r == -1) return why(T, e, "a unary operator NumPy or Python refuses for this type");
        if (t0 == LT_PYBOOL) b0 = 1;
        *bits = e->op == LO_INV ? clampb(b0 + 1) : e->op == LO_NOT ? 1 : b0;
        return r;
    case LK_AND:
    case LK_OR:
        r = -1;
        for (int k = 0; k < e->n; k++) {
            if ((t0 = nd_lty_expr(T, e->kid[k], assign, &b0)) < 0) return t0;
            if (t0 & (LT_VEC | LT_MAT)) return why(T, e, "the truth value of an array");
            if (k && t0 != r) return why(T, e, "and/or of values of different types");
            r = t0;
            if (b0 > b1) b1 = b0;
        }
        *bits = b1;
        return r;
    case LK_LET:
        if ((t0 = nd_lty_expr(T, e->kid[0], assign, &b0)) < 0) return t0;
        if (t0 & LT_MAT) return why(T, e, "a helper function's 2-D array argument or local");
        T->let_t[e->aux] = (uint8_t)(t0 + 1);
        T->let_bits[e->aux] = (uint8_t)b0;
        return nd_lty_expr(T, e->kid[1], assign, bits);
    case LK_LETVAR:
        if (!T->let_t[e->aux]) return why(T, e, "a helper function's value read before it was typed");
        *bits = T->let_bits[e->aux];
        return T->let_t[e->aux] - 1;
    case LK_IFEXP:
        if ((t0 = nd_lty_expr(T, e->kid[0], assign, &b0)) < 0) return t0;
        if (t0 & (LT_VEC | LT_MAT)) return why(T, e, "the truth value of an array");
        if ((t0 = nd_lty_expr(T, e->kid[1], assign, &b0)) < 0) return t0;
        if ((t1 = nd_lty_expr(T, e->kid[2], assign, &b1)) < 0) return t1;
        if ((t0 | t1) & (LT_VEC | LT_MAT)) return why(T, e, "a conditional expression of arrays");
        if (t0 != t1) return why(T, e, "a conditional expression with branches of different types");
        *bits = b0 > b1 ? b0 : b1;
        return t0;
    case LK_ELEM:
    case LK_SLICE: {
        int a = e->var, nvec = 0;
        if (T->adt[a] < 0) return why(T, e, "an indexed name that is not an ndarray of a supported dtype");
        if (e->kind == LK_SLICE && e->aux >= 3) {
            /* x[:, None], x[None, :]: a 1-D array as a column / row */
            if (T->andim[a] != 1) return why(T, e, "a new axis of an array that is not 1-D");
            *bits = 1;
            return T->adt[a] | LT_MAT;
        }
        if (e->n > T->andim[a]) return why(T, e, "too many indices");
        for (int k = 0; k < e->n; k++) {
            if (e->kid[k]->kind == LK_SL) {
                nvec++;
                for (int j = 0; j < e->kid[k]->n; j++) {
                    if (!e->kid[k]->kid[j]) continue;
                    if ((t0 = nd_lty_expr(T, e->kid[k]->kid[j], assign, &b0)) < 0) return t0;
                    if (!is_intlike(t0) || t0 == LT_PYBOOL || t0 == LT_B1 || t0 == LT_U8)
                        return why(T, e, "a slice bound that is not an integer");
                }
                continue;
            }
            if ((t0 = nd_lty_expr(T, e->kid[k], assign, &b0)) < 0) return t0;
            if ((t0 & LT_VEC) && nd_lty_gather(T, e)) {
                /* x[idx], idx a 1-D integer array: NumPy's gather along x's
                 * one axis (a bool array would be a mask: not this) */
                int ti = t0 & ~LT_VEC;
                if (!is_intlike(ti) || ti == LT_B1 || ti == LT_U8)
                    return why(T, e, "an index array that is not of a signed or 32-bit integer dtype");
                *bits = 1;
                return T->adt[a] | LT_VEC;
            }
            if (!is_intlike(t0) || t0 == LT_PYBOOL || t0 == LT_B1 || t0 == LT_U8)
                return why(T, e, "an index that is not an integer");
        }
        nvec += T->andim[a] - e->n;
        if (nvec > 2) return why(T, e, "a subscript of more than two dimensions");
        *bits = 1;
        return nvec == 2 ? (T->adt[a] | LT_MAT) : nvec ? (T->adt[a] | LT_VEC) : T->adt[a];
    }
    case LK_SHAPE: {
        int a = e->var, nd = T->andim[a];
        if (T->adt[a] < 0) return why(T, e, "a shape of something that is not an ndarray");
        if (e->aux == -2) { *bits = 6; return LT_PYINT; }
        if (e->aux == -1) { *bits = 47; return LT_PYINT; }
        int ax = e->aux;
        if (e->i == 1 && ax < 0) ax += nd;
        if (ax < 0 || ax >= nd || (e->i == 2 && (int)e->f != nd))
            return why(T, e, "a shape index out of range");
        *bits = T->abits;
        return LT_PYINT;
    }
    case LK_CALL: {
        if (e->aux == LF_NP_CONCATENATE || e->aux == LF_NP_ARRAY || e->aux == LF_NP_FLIP) return cat_type(T, e, assign, bits);
        int ta[2] = {LT_N, LT_N}, bs[2] = {0, 0}, vec = 0;
        for (int k = 0; k < e->n; k++) {
            if ((ta[k] = nd_lty_expr(T, e->kid[k], assign, &bs[k])) < 0) return ta[k];
            if (ta[k] == LT_PYBOOL) bs[k] = 1;
            vec |= ta[k] & (LT_VEC | LT_MAT);
        }
        if (ND_LAXISRED(e)) {
            /* np.max(M, axis=k) ...: along one axis of a 2-D array, a 1-D array */
            if (e->n != 1 || !(ta[0] & LT_MAT))
                return why(T, e, "a reduction along an axis of something that is not a 2-D array");
            if ((e->aux == LF_NP_SUM && (ta[0] & ~LT_MAT) == LT_B1) ||
                (e->aux == LF_NP_MEAN && (ta[0] & ~LT_MAT) != LT_F8 && (ta[0] & ~LT_MAT) != LT_F4))
                return why(T, e, "np.mean() along an axis of something that is not a float32/float64 2-D array (or np.sum() of a bool one)");
            r = nd_lty_vop(LO_NOPS + e->aux, ta[0], -1);
            if (r == -2) return r;
            if (r < 0 || (r & (LT_VEC | LT_MAT)))
                return why(T, e, "a reduction NumPy refuses for these types (or whose type loops do not compute in)");
            *bits = 1;
            return r | LT_VEC;
        }
        if (e->aux >= LF_NP_DOT && e->aux <= LF_NP_ARGMIN) {
            /* reductions of 1-D arrays (np.dot(v, s) is an array); matrix
             * products of a 2-D and a 1-D one */
            int nmat = 0;
            for (int k = 0; k < e->n; k++) {
                if (!(ta[k] & (LT_VEC | LT_MAT)))
                    return why(T, e, "a reduction or product of something that is not a 1-D or 2-D array");
                nmat += (ta[k] & LT_MAT) != 0;
            }
            if ((nmat > 1 && (e->aux != LF_NP_DOT && e->aux != LF_NP_MATMUL)) ||
                (nmat && e->aux != LF_NP_DOT && e->aux != LF_NP_MATMUL && e->n != 1))
                return why(T, e, "a reduction of more than one array with a 2-D one");
            /* np.mean / np.linalg.norm: of float arrays, as NumPy sums them
             * (its mean of integers sums in float64 in buffered chunks) */
            if ((e->aux == LF_NP_MEAN || e->aux == LF_NP_NORM || e->aux == LF_NP_VAR || e->aux == LF_NP_STD) &&
                (nmat || e->n != 1 || ((ta[0] & ~LT_VEC) != LT_F8 && (ta[0] & ~LT_VEC) != LT_F4)))
                return why(T, e, "np.mean()/np.var()/np.std()/np.linalg.norm() of something that is not a 1-D float32/float64 array");
            /* np.prod: of a 1-D array (NumPy's multiply.reduce, in order) */
            if (e->aux == LF_NP_PROD && nmat)
                return why(T, e, "np.prod() of a 2-D array");
            r = nd_lty_vop(LO_NOPS + e->aux, ta[0], e->n > 1 ? ta[1] : -1);
            if (r == -1) return why(T, e, "a reduction NumPy refuses for these types (or whose type loops do not compute in)");
            *bits = 1;
            return r;
        }
        if (e->aux == LF_NP_INV) {
            /* np.linalg.inv(M) of a float 2-D array (of another dtype NumPy
             * computes in float64 from a converted copy: not here) */
            if (!(ta[0] & LT_MAT) || ((ta[0] & ~LT_MAT) != LT_F8 && (ta[0] & ~LT_MAT) != LT_F4))
                return why(T, e, "np.linalg.inv() of something that is not a float32/float64 2-D array");
            *bits = 1;
            return ta[0];
        }
        if (e->aux == LF_NP_OUTER) {
            /* np.outer(u, v) of two 1-D arrays (NumPy flattens others) */
            if (!(ta[0] & LT_VEC) || !(ta[1] & LT_VEC))
                return why(T, e, "np.outer() of something that is not a 1-D array");
            r = nd_lty_vop(LO_NOPS + e->aux, ta[0], ta[1]);
            if (r == -1) return why(T, e, "np.outer() NumPy refuses for these types (or whose type loops do not compute in)");
            *bits = 1;
            return r;
        }
        if (vec) {
            if (e->aux < LF_NP_SQRT || e->aux > LF_NP_SQUARE)
                return why(T, e, "an array passed to a function that is not a NumPy ufunc");
            r = nd_lty_vop(LO_NOPS + e->aux, ta[0], e->n > 1 ? ta[1] : -1);
            if (r == -1) return why(T, e, "a NumPy function refusing these types (or returning a type loops do not compute in)");
            *bits = 1;
            return r;
        }
        int fn = nd_lty_fn(T, e);
        if (fn < 0) return why(T, e, "x.dtype.type() of an array of a dtype loops do not compute in");
        r = nd_lty_call(fn, e->n, ta);
        if (r == -1) return why(T, e, "a call NumPy or Python refuses for these types (or returns a type loops do not compute in)");
        if (r < 0) return r;
        if (r == LT_PYINT) {
            if (e->aux == LF_INT || e->aux == LF_ABS || e->aux == LF_ROUND)
                *bits = e->n == 0 ? 1 : ta[0] == LT_PYINT ? bs[0] : int_bits(ta[0]);
            else if (e->aux == LF_MIN || e->aux == LF_MAX) *bits = bs[0] > bs[1] ? bs[0] : bs[1];
            else *bits = LBITS_ANY;
        } else {
            *bits = 1;
        }
        return r;
    }
    case LK_ALLOC:
        return why(T, e, "a new array (.copy(), np.copy, np.empty_like, np.zeros_like, np.zeros, np.empty, np.ones) inside an expression: only `name = x.copy()` is captured");
    default:
        return why(T, e, "a statement where an expression belongs");
    }
}

/* ------------------------------------------------------- fixed point */
typedef struct {
    int vars[8];
    int n;
} uvars;

/* the variables of expression e whose type set has more than one member */
static int collect(nd_ltyping *T, const nd_ln *e, uvars *u, int deep)
{
    if (!e) return 0;
    if (e->kind == LK_VAR && T->adt[e->var] < 0) {
        uint32_t s = T->vset[e->var];
        if (s & (s - 1)) {
            for (int k = 0; k < u->n; k++) if (u->vars[k] == e->var) return 0;
            if (u->n == 8) return -1;
            u->vars[u->n++] = e->var;
        }
        return 0;
    }
    for (int k = 0; k < e->n; k++) if (collect(T, e->kid[k], u, deep) < 0) return -1;
    return 0;
}

static int single(uint32_t s)
{
    for (int t = 0; t < LT_N; t++) if (s == (1u << t)) return t;
    return -1;
}

typedef struct {
    nd_ltyping *T;
    uint8_t *assign;
    int changed;
} fctx;

/* every type (and bits) e may have over the combinations of its union
 * variables' types */
/* vecs: NULL, or where the 1-D array types (LT_VEC | t) e may have go */
int nd_lty_split(const nd_ln *e)
{
    if (e->kind == LK_IFEXP) return 1;
    return e->kind == LK_CALL && e->n == 2 && e->i != LCALL_DTYPE && (e->aux == LF_MIN || e->aux == LF_MAX);
}

static int expr_types(fctx *f, const nd_ln *e, uint32_t *set, int *bits, uint64_t *vecs)
{
    nd_ltyping *T = f->T;
    uvars u = {{0}, 0};
    *set = 0;
    *bits = 0;
    if (vecs) *vecs = 0;
    if (collect(T, e, &u, 0) < 0) { why(T, e, "too many variables of changing type"); return 1; }
    int idx[8] = {0}, nt[8], mem[8][LT_N];
    for (int k = 0; k < u.n; k++) {
        nt[k] = 0;
        for (int t = 0; t < LT_N; t++) if (T->vset[u.vars[k]] & (1u << t)) mem[k][nt[k]++] = t;
    }
    for (;;) {
        for (int k = 0; k < u.n; k++) f->assign[u.vars[k]] = (uint8_t)mem[k][idx[k]];
        int b, t = nd_lty_expr(T, e, f->assign, &b);
        if (t == -2) return -1;
        if (t >= 0 && vecs && ((t & LT_VEC) != 0) != ((t & LT_MAT) != 0)) {
            /* 1-D element types in bits 0.., 2-D ones from bit 32 */
            *vecs |= (t & LT_MAT) ? 1ull << (32 + (t & ~LT_MAT)) : 1ull << (t & ~LT_VEC);
            t = -1;
        }
        if (t >= 0 && (t & (LT_VEC | LT_MAT))) { why(T, e, "an array value given to a name"); return 1; }
        if (t >= 0) {
            *set |= 1u << t;
            if (t == LT_PYINT && b > *bits) *bits = b;
        }
        int k = 0;
        while (k < u.n && ++idx[k] == nt[k]) idx[k++] = 0;
        if (k == u.n) break;
    }
    for (int k = 0; k < u.n; k++) f->assign[u.vars[k]] = LT_UNBOUND;
    return 0;
}

/* the types a split value (nd_lty_split) may have: those of its operands,
 * nested ones (the fold of max(a, b, c)) included */
static int split_types(fctx *f, const nd_ln *e, uint32_t *set, int *bits)
{
    if (!nd_lty_split(e)) return expr_types(f, e, set, bits, NULL);
    int first = e->kind == LK_IFEXP, rc, b2;
    uint32_t s2;
    if ((rc = split_types(f, e->kid[first], set, bits)) != 0) return rc;
    if ((rc = split_types(f, e->kid[first + 1], &s2, &b2)) != 0) return rc;
    *set |= s2;
    if (b2 > *bits) *bits = b2;
    return 0;
}

static void add_to(fctx *f, int v, uint32_t set, int bits)
{
    nd_ltyping *T = f->T;
    if ((T->vset[v] | set) != T->vset[v]) { T->vset[v] |= set; f->changed = 1; }
    if ((set & (1u << LT_PYINT)) && bits > T->vbits[v]) { T->vbits[v] = (uint8_t)bits; f->changed = 2; }
}

static int walk(fctx *f, nd_ln *const *b, int n);

static int stmt_types(fctx *f, const nd_ln *s)
{
    nd_ltyping *T = f->T;
    uint32_t set;
    int bits, rc;
    switch (s->kind) {
    case LK_ASSIGN:
        if (T->alocal && T->alocal[s->var] == 2) {
            /* a computed array: its element type, one for every assignment */
            uint64_t vecs;
            if ((rc = expr_types(f, s->kid[0], &set, &bits, &vecs)) != 0) return rc;
            if (set) { why(T, s, "a name given both a computed array and a scalar"); return 1; }
            if (vecs & (T->andim[s->var] == 2 ? 0xffffffffull : 0xffffffffull << 32)) {
                why(T, s, "a name given computed arrays of different ranks");
                return 1;
            }
            if (T->andim[s->var] == 2) vecs >>= 32;
            for (int et = 0; et < LT_N; et++) {
                if (!(vecs & (1ull << et))) continue;
                if (T->adt[s->var] < 0) { T->adt[s->var] = (int8_t)et; f->changed = 1; }
                else if (T->adt[s->var] != et) { why(T, s, "a name given computed arrays of different dtypes"); return 1; }
            }
            return 0;
        }
        if (T->alocal && T->alocal[s->var]) return 0;   /* a view: codegen checks its indices */
        if (nd_lty_split(s->kid[0])) {
            /* max(a, b), x if c else y: one of two values, whose types may
             * differ (max(j - 1, 0) of an int64 j: int64 or a Python int,
             * by the data); the name takes either */
            if ((rc = split_types(f, s->kid[0], &set, &bits)) != 0) return rc;
            add_to(f, s->var, set, bits);
            return 0;
        }
        if ((rc = expr_types(f, s->kid[0], &set, &bits, NULL)) != 0) return rc;
        add_to(f, s->var, set, bits);
        return 0;
    case LK_MULTI: {
        int m = s->n / 2;
        if (T->alocal && T->alocal[s->kid[0]->var]) return 0;   /* arrays (checked before) */
        for (int k = 0; k < m; k++) {
            if ((rc = expr_types(f, s->kid[m + k], &set, &bits, NULL)) != 0) return rc;
            add_to(f, s->kid[k]->var, set, bits);
        }
        return 0;
    }
    case LK_FOR: {
        int b = 0;
        for (int k = 0; k < s->n; k++) {
            if ((rc = expr_types(f, s->kid[k], &set, &bits, NULL)) != 0) return rc;
            for (int t = 0; t < LT_N; t++)
                if ((set & (1u << t)) && (!is_intlike(t) || t == LT_U8)) {
                    why(T, s, "range() of a value that is not an integer");
                    return 1;
                }
            if (k < 2) {
                int bk = (set & (1u << LT_PYINT)) ? bits : 0;
                for (int t = 0; t < LT_N; t++)
                    if ((set & (1u << t)) && t != LT_PYINT && int_bits(t) > bk) bk = int_bits(t);
                if (bk > b) b = bk;
            }
        }
        add_to(f, s->var, 1u << LT_PYINT, b >= 63 ? LBITS_ANY : b);
        /* the iteration count: below the larger of |start|, |stop| twice over */
        if (s->i > 0) add_to(f, (int)s->i - 1, 1u << LT_PYINT, b >= 62 ? LBITS_ANY : b + 1);
        return walk(f, s->body, s->nbody);
    }
    case LK_WHILE:
        return walk(f, s->body, s->nbody);
    case LK_IF:
        if ((rc = walk(f, s->body, s->nbody)) != 0) return rc;
        return walk(f, s->orelse, s->norelse);
    default:
        return 0;
    }
}

static int walk(fctx *f, nd_ln *const *b, int n)
{
    for (int k = 0; k < n; k++) {
        int rc = stmt_types(f, b[k]);
        if (rc) return rc;
    }
    return 0;
}

/* ------------------------------------------------- array locals */
/* the array variable a view expression selects a 1-D part of (a slice, a
 * row of a 2-D array, a whole 1-D array or array local), or -1 */
static int vector_expr(const nd_ltyping *T, const nd_ln *e);
static int view_source(const nd_ltyping *T, const nd_ln *e)
{
    if (e->kind == LK_SLICE && e->aux >= 3) return -1;   /* x[:, None]: 2-D */
    if (e->kind == LK_VAR) {
        if (T->alocal[e->var] == 2) return T->andim[e->var] == 1 ? e->var : -1;
        return T->adt[e->var] >= 0 && T->andim[e->var] == 1 ? e->var : -1;
    }
    if ((e->kind == LK_SLICE || e->kind == LK_ELEM) && T->alocal[e->var] == 2) {
        /* a computed array local has its rank (its dtype may not be known yet) */
        int nvec = T->andim[e->var] - e->n;
        for (int k = 0; k < e->n; k++) nvec += e->kid[k]->kind == LK_SL;
        return nvec == 1 ? e->var : -1;
    }
    if (e->kind != LK_SLICE && e->kind != LK_ELEM) return -1;
    int a = e->var;
    if (T->adt[a] < 0 || e->n > T->andim[a]) return -1;
    int nvec = T->andim[a] - e->n;
    for (int k = 0; k < e->n; k++) nvec += e->kid[k]->kind == LK_SL;
    return nvec == 1 ? a : -1;
}

/* the number of axes (2, 1) of the array e computes by elementwise work
 * on 2-D parts (A[i0:i1, :] * s) or whole 2-D arrays, on views, by a
 * matrix-vector product; 0: not an array. Structurally, before scalar
 * types are known */
static int matrix_part(const nd_ltyping *T, const nd_ln *e)
{
    if (e->kind != LK_VAR && e->kind != LK_SLICE && e->kind != LK_ELEM) return 0;
    int a = e->var;
    if (a < 0 || (T->adt[a] < 0 && T->alocal[a] != 2)) return 0;
    if (e->kind == LK_VAR) return T->andim[a] == 2;
    if (e->kind == LK_SLICE && e->aux >= 3) return T->andim[a] == 1;   /* x[:, None] */
    if (e->n > T->andim[a]) return 0;
    int nvec = T->andim[a] - e->n;
    for (int k = 0; k < e->n; k++) {
        if (e->kid[k]->kind == LK_SL) nvec++;
        else if (vector_expr(T, e->kid[k])) return 0;   /* (a gather) */
    }
    return nvec == 2;
}

static int vector_expr(const nd_ltyping *T, const nd_ln *e)
{
    if (!e) return 0;
    switch (e->kind) {
    case LK_LET:
        return vector_expr(T, e->kid[1]);
    case LK_LETVAR:
        return vector_expr(T, T->ir->lets[e->aux]->kid[0]);
    case LK_VAR: case LK_SLICE: case LK_ELEM:
        /* (x[idx], a gather by an integer vector, is a new array) */
        if (matrix_part(T, e)) return 2;
        return view_source(T, e) >= 0 || (nd_lty_gather(T, e) && vector_expr(T, e->kid[0]));
    case LK_BIN: case LK_UN: case LK_CMP: {
        int r = 0;
        for (int k = 0; k < e->n; k++) {
            int rk = vector_expr(T, e->kid[k]);
            if (rk > r) r = rk;
        }
        return r;
    }
    case LK_CALL: {
        if (e->aux == LF_NP_DOT || e->aux == LF_NP_MATMUL) {
            /* a product of two 2-D operands is 2-D, with one 2-D operand a
             * vector, of two 1-D ones a scalar */
            int nmat = 0;
            for (int k = 0; k < e->n; k++) nmat += vector_expr(T, e->kid[k]) == 2;
            return e->n == 2 && nmat == 2 ? 2 : nmat ? 1 : 0;
        }
        if (e->aux == LF_NP_CONCATENATE || e->aux == LF_NP_ARRAY || e->aux == LF_NP_FLIP) return 1;
        if (e->aux == LF_NP_INV) return e->n == 1 && vector_expr(T, e->kid[0]) == 2 ? 2 : 0;
        if (ND_LAXISRED(e))   /* along an axis of a 2-D array */
            return e->n == 1 && vector_expr(T, e->kid[0]) == 2 ? 1 : 0;
        if (e->aux < LF_NP_SQRT || e->aux > LF_NP_SQUARE) return 0;
        int r = 0;
        for (int k = 0; k < e->n; k++) {
            int rk = vector_expr(T, e->kid[k]);
            if (rk > r) r = rk;
        }
        return r;
    }
    default:
        return 0;
    }
}

/* the dtype (LT_*, -1: none) and rank of the array LK_ALLOC e makes: its
 * prototype's, or np.zeros(shape)'s own */
static int alloc_dt(const nd_ltyping *T, const nd_ln *e) { return e->var >= 0 ? T->adt[e->var] : (int)e->i; }
static int alloc_nd(const nd_ltyping *T, const nd_ln *e) { return e->var >= 0 ? T->andim[e->var] : e->n; }

/* names assigned views (row = A[i], w = row[1:]) become array locals: one
 * pass marks those whose sources are known; names assigned computed 1-D
 * arrays (d = X[i] - X[j]) become temporary array locals (alocal 2, their
 * dtype found by the fixed point); 1: something changed */
static int mark_array_locals(nd_ltyping *T, nd_ln *const *b, int n)
{
    int changed = 0;
    for (int k = 0; k < n; k++) {
        const nd_ln *s = b[k];
        if (s->kind == LK_ASSIGN && s->kid[0]->kind == LK_ALLOC) {
            /* new = u.copy(), t = np.zeros(n): an array the loop makes, like
             * u or of its shape and dtype (checked below) */
            int v = s->var, w = s->kid[0]->var;
            if (T->alocal[v] || T->adt[v] >= 0 || alloc_dt(T, s->kid[0]) < 0 || (w >= 0 && T->alocal[w] == 2))
                continue;
            T->alocal[v] = 1;
            T->adt[v] = (int8_t)alloc_dt(T, s->kid[0]);
            T->andim[v] = (int8_t)alloc_nd(T, s->kid[0]);
            T->awrite[v] = 1;
            changed = 1;
        } else if (s->kind == LK_ASSIGN) {
            int v = s->var, src = view_source(T, s->kid[0]);
            /* (a bare 2-D part, S = A[1:, :], is a view in NumPy: never a copy) */
            int rank = src < 0 && !matrix_part(T, s->kid[0]) ? vector_expr(T, s->kid[0]) : 0;
            if (T->alocal[v] == 1 && s->aux == 1) continue;   /* v op= x: the array, updated in place */
            if (T->alocal[v] == 1 && T->andim[v] <= 2 && rank && rank == T->andim[v]) {
                /* y = y + h * k of a name holding a 1-D (2-D) array before
                 * the loop (y = y0.copy()): a computed array local whose
                 * first value is that array (the runner's whole view of it,
                 * handed back as it is when never reassigned); its dtype and
                 * rank stay the array's, every computed value must have them */
                T->alocal[v] = 2;
                changed = 1;
                continue;
            }
            if (T->alocal[v] || T->adt[v] >= 0) continue;
            if (rank) {
                /* (its rank: its first assignment's; check_array_locals
                 * holds the others to it) */
                T->alocal[v] = 2;
                T->andim[v] = (int8_t)rank;
                T->awrite[v] = 1;
                changed = 1;
                continue;
            }
            if (src < 0 || src == v) continue;   /* (a view of a computed array: refused below) */
            T->alocal[v] = 1;
            T->adt[v] = T->adt[src];
            T->andim[v] = 1;
            T->awrite[v] = T->awrite[src];
            changed = 1;
        } else if (s->kind == LK_FOR || s->kind == LK_WHILE || s->kind == LK_IF) {
            changed |= mark_array_locals(T, s->body, s->nbody);
            changed |= mark_array_locals(T, s->orelse, s->norelse);
        }
    }
    return changed;
}

/* v = w between names holding arrays of one dtype and rank (array locals
 * both): v takes w's array whole */
static int whole_copy(const nd_ltyping *T, int v, const nd_ln *e)
{
    return e->kind == LK_VAR && T->alocal[v] == 1 && T->alocal[e->var] == 1 && T->adt[v] == T->adt[e->var] &&
           T->andim[v] == T->andim[e->var];
}

/* a tuple assignment of such names (u, v = v, u) */
static int multi_copy(const nd_ltyping *T, const nd_ln *s)
{
    int m = s->n / 2;
    for (int j = 0; j < m; j++)
        if (!whole_copy(T, s->kid[j]->var, s->kid[m + j])) return 0;
    return m > 0;
}

/* every assignment to an array local is a view of its dtype; views of
 * read-only arrays make it read-only. 0, or 1 with T->reason */
static int check_array_locals(nd_ltyping *T, nd_ln *const *b, int n)
{
    for (int k = 0; k < n; k++) {
        const nd_ln *s = b[k];
        if (s->kind == LK_ASSIGN && s->kid[0]->kind == LK_ALLOC) {
            int v = s->var, w = s->kid[0]->var;
            if (w >= 0 && (T->adt[w] < 0 || T->alocal[w] == 2)) {
                why(T, s, "a new array like something that is not an array the loop holds whole (a computed 1-D array)");
                return 1;
            }
            if (T->alocal[v] != 1 || T->adt[v] != alloc_dt(T, s->kid[0]) || T->andim[v] != alloc_nd(T, s->kid[0])) {
                why(T, s, "a name given a new array and values of another dtype or rank");
                return 1;
            }
        } else if (s->kind == LK_ASSIGN && s->aux == 1 && T->alocal[s->var] == 1) {
            /* v op= x of a name holding an array: NumPy's in-place update
             * of that array, a store over all of it (codegen_loop.c) */
        } else if (s->kind == LK_ASSIGN && T->alocal[s->var] == 2) {
            /* a computed array: never a view of one (aliasing a buffer the
             * loop reuses), always a computed one */
            int src = view_source(T, s->kid[0]), rank = matrix_part(T, s->kid[0]) ? 0 : vector_expr(T, s->kid[0]);
            if (src >= 0 || !rank) {
                why(T, s, src >= 0 ? "a name given both a view and a computed array (or a view of a computed array)"
                                   : "a name given both a computed array and another value");
                return 1;
            }
            if (rank != T->andim[s->var]) {
                why(T, s, "a name given computed arrays of different ranks");
                return 1;
            }
        } else if (s->kind == LK_ASSIGN && T->alocal[s->var] && whole_copy(T, s->var, s->kid[0])) {
            if (!T->awrite[s->kid[0]->var]) T->awrite[s->var] = 0;
        } else if (s->kind == LK_ASSIGN && T->alocal[s->var] && T->andim[s->var] != 1) {
            why(T, s, "a name holding a 2-D array given a view");
            return 1;
        } else if (s->kind == LK_ASSIGN && T->alocal[s->var]) {
            int src = view_source(T, s->kid[0]);
            if (src >= 0 && T->alocal[src] == 2) {
                why(T, s, "a view of a computed array given to a name");
                return 1;
            }
            if (src < 0 || T->adt[src] != T->adt[s->var]) {
                why(T, s, src < 0 ? "a name given both an array view and another value"
                                  : "a name given views of arrays of different dtypes");
                return 1;
            }
            if (!T->awrite[src]) T->awrite[s->var] = 0;
        } else if (s->kind == LK_MULTI && multi_copy(T, s)) {
            /* u, v = v, u: a read-only array makes its new name read-only */
            int m = s->n / 2;
            for (int j = 0; j < m; j++)
                if (!T->awrite[s->kid[m + j]->var]) T->awrite[s->kid[j]->var] = 0;
        } else if (s->kind == LK_MULTI) {
            int m = s->n / 2;
            for (int j = 0; j < m; j++)
                if (T->alocal[s->kid[j]->var] || view_source(T, s->kid[m + j]) >= 0) {
                    why(T, s, "arrays assigned in a tuple assignment");
                    return 1;
                }
        } else if (s->kind == LK_FOR || s->kind == LK_WHILE || s->kind == LK_IF) {
            if (s->kind == LK_FOR && T->alocal[s->var]) { why(T, s, "an array view as a loop variable"); return 1; }
            if (check_array_locals(T, s->body, s->nbody) || check_array_locals(T, s->orelse, s->norelse))
                return 1;
        }
    }
    return 0;
}

/* ------------------------------------------- what the tracer fuses */
/* whether e reads an array at all (a name holding one, an element, a part) */
static int reads_array(const nd_ltyping *T, const nd_ln *e)
{
    if (!e) return 0;
    if ((e->kind == LK_VAR || e->kind == LK_ELEM || e->kind == LK_SLICE) && e->var >= 0 &&
        (T->adt[e->var] >= 0 || T->alocal[e->var]))
        return 1;
    if (e->kind == LK_LETVAR) return reads_array(T, T->ir->lets[e->aux]->kid[0]);
    for (int k = 0; k < e->n; k++) if (reads_array(T, e->kid[k])) return 1;
    return 0;
}

/* whether the tracer keeps e lazy and elementwise, so that the values of
 * successive iterations fuse into one kernel: arithmetic and NumPy's
 * elementwise functions of whole arrays, parts of arrays the loop does not
 * compute, scalars. Not so: an element read (a NumPy scalar the tracer
 * must compute, or a guard on the data), a product or reduction (a kernel
 * or an extern call an iteration), an array built of parts, a truth value
 * or a Python function of an array (a flush) */
static int tracer_fuses_expr(const nd_ltyping *T, const nd_ln *e)
{
    if (!e) return 1;
    switch (e->kind) {
    case LK_ELEM: case LK_ALLOC:
        return 0;
    case LK_SLICE:
        if (T->alocal[e->var] == 2) return 0;
        break;
    case LK_AND: case LK_OR: case LK_IFEXP:
        if (reads_array(T, e)) return 0;
        break;
    case LK_CALL:
        if (e->aux >= LF_NP_DOT && e->aux <= LF_NP_ARRAY) return 0;
        if ((e->aux < LF_NP_SQRT || e->aux > LF_NP_SQUARE) && e->aux != LF_ABS && reads_array(T, e)) return 0;
        break;
    case LK_LET:
        return tracer_fuses_expr(T, e->kid[0]) && tracer_fuses_expr(T, e->kid[1]);
    default:
        break;
    }
    for (int k = 0; k < e->n; k++) if (!tracer_fuses_expr(T, e->kid[k])) return 0;
    return 1;
}

/* whether statements b[0..n) hold v op= x: NumPy's in-place operation on
 * the array v holds, not a new array */
static int aug_assigns(nd_ln *const *b, int n, int v)
{
    for (int k = 0; k < n; k++) {
        const nd_ln *s = b[k];
        if (s->kind == LK_ASSIGN && s->aux == 1 && s->var == v) return 1;
        if (aug_assigns(s->body, s->nbody, v) || aug_assigns(s->orelse, s->norelse, v)) return 1;
    }
    return 0;
}

static int tracer_fuses(const nd_ltyping *T, nd_ln *const *b, int n)
{
    for (int k = 0; k < n; k++) {
        const nd_ln *s = b[k];
        switch (s->kind) {
        case LK_ASSIGN: case LK_MULTI:
            for (int j = 0; j < s->n; j++) if (!tracer_fuses_expr(T, s->kid[j])) return 0;
            break;
        case LK_FOR: case LK_WHILE: case LK_IF:
            /* control flow on scalars only: Python runs it as the tracer's
             * caller, the array work of every pass stays lazy */
            for (int j = 0; j < s->n; j++)
                if (reads_array(T, s->kid[j]) || !tracer_fuses_expr(T, s->kid[j])) return 0;
            if (!tracer_fuses(T, s->body, s->nbody) || !tracer_fuses(T, s->orelse, s->norelse)) return 0;
            break;
        case LK_PASS: case LK_BREAK: case LK_CONTINUE:
            break;
        default:   /* stores into arrays */
            return 0;
        }
    }
    return 1;
}

int nd_loop_type(nd_ltyping *T)
{
    const nd_lir *ir = T->ir;
    uint8_t *assign = PyMem_Malloc((size_t)ir->nvars + 1);
    if (!assign) { PyErr_NoMemory(); return -1; }
    fctx f = {T, assign, 0};
    for (int v = 0; v < ir->nvars; v++) {
        T->vset[v] = 0;
        T->vbits[v] = 0;
        if (T->adt[v] < 0 && T->entry[v] != LT_UNBOUND) {
            T->vset[v] = 1u << T->entry[v];
            if (T->entry[v] == LT_PYINT && !T->vbits[v]) T->vbits[v] = LBITS_ANY;
        }
    }
    /* the runner's bound on each Python int at entry */
    for (int v = 0; v < ir->nvars; v++)
        if (T->entry[v] == LT_PYINT && T->vbits_entry) T->vbits[v] = T->vbits_entry[v];
    int rc = 0, rounds = 0;
    if (T->alocal) {
        const nd_ln *root = ir->root;
        nd_ln *const one[1] = {(nd_ln *)root};
        /* names holding a 1-D array at entry: those the loop gives computed
         * arrays (y = y + h * k) carry a small state from pass to pass */
        for (int v = 0; v < ir->nvars; v++) assign[v] = T->alocal[v] == 1;
        while (mark_array_locals(T, one, 1)) {}
        int carried = -1;
        for (int v = 0; v < ir->nvars && carried < 0; v++)
            if (assign[v] && T->alocal[v] == 2) {
                if (aug_assigns(one, 1, v)) {
                    /* x *= 2 writes the caller's array: not a new one */
                    T->reason = PyUnicode_FromFormat("'%U' holds an array and is given both new arrays and "
                                                     "in-place updates (line %d)",
                                                     PyTuple_GET_ITEM(ir->names, v), ir->line);
                    PyMem_Free(assign);
                    return T->reason ? 1 : -1;
                }
                carried = v;
            }
        /* x op= y of a name holding an array: a store over all of it when
         * the arrays are small (loop_types.h ND_LOOP_SMALL_INPLACE), else
         * the tracer's; a whole-array update the tracer may fuse too */
        for (int v = 0; v < ir->nvars && carried < 0; v++)
            if (assign[v] && T->alocal[v] == 1 && aug_assigns(one, 1, v)) {
                if (!T->small_alocals) {
                    T->reason = PyUnicode_FromFormat("'%U' holds an array of more than %d elements updated in place "
                                                     "(line %d): the tracer fuses its passes",
                                                     PyTuple_GET_ITEM(ir->names, v), ND_LOOP_SMALL_INPLACE, ir->line);
                    PyMem_Free(assign);
                    return T->reason ? 1 : -1;
                }
                carried = v;
            }
        if (carried >= 0 && tracer_fuses(T, one, 1)) {
            /* x = x * a + b and nothing the tracer cannot keep lazy: it
             * fuses every pass into one kernel, one trip through memory,
             * where the C loop makes a trip a pass (12.45x -> 0.65x NumPy
             * at 1e6 elements), and replays it at a small size (16.3x ->
             * 4.8x at 64) */
            T->reason = PyUnicode_FromFormat("'%U' is an array updated whole in a loop the tracer fuses "
                                             "into one kernel (line %d)",
                                             PyTuple_GET_ITEM(ir->names, carried), ir->line);
            PyMem_Free(assign);
            return T->reason ? 1 : -1;
        }
        for (int v = 0; v < ir->nvars; v++)
            if (T->alocal[v] && T->entry[v] != LT_UNBOUND) {
                T->reason = PyUnicode_FromFormat("'%U' is a scalar before the loop and an array view in it",
                                                 PyTuple_GET_ITEM(ir->names, v));
                PyMem_Free(assign);
                return T->reason ? 1 : -1;
            }
        /* (repeated: read-only-ness passes along chains of assignments) */
        for (int pass = 0; pass < 4; pass++)
            if (check_array_locals(T, one, 1)) { PyMem_Free(assign); return T->reason ? 1 : -1; }
    }
    do {
        f.changed = 0;
        memset(assign, LT_UNBOUND, (size_t)ir->nvars + 1);
        for (int v = 0; v < ir->nvars; v++)
            if (T->adt[v] < 0 && single(T->vset[v]) >= 0) assign[v] = (uint8_t)single(T->vset[v]);
        if ((rc = stmt_types(&f, ir->root)) != 0) break;
        /* a Python int that keeps growing is unbounded */
        if (++rounds > 6 && f.changed == 2)
            for (int v = 0; v < ir->nvars; v++)
                if (T->vset[v] & (1u << LT_PYINT)) T->vbits[v] = LBITS_ANY;
        if (rounds > 40) { rc = 1; if (!T->reason) T->reason = PyUnicode_FromString("types do not settle"); break; }
    } while (f.changed);
    for (int v = 0; rc == 0 && v < ir->nvars; v++) {
        if (T->adt[v] >= 0 || !(ir->vflags[v] & VF_READ)) continue;
        if (!T->vset[v]) {
            T->reason = PyUnicode_FromFormat("'%U' has no value a loop can compute with",
                                             PyTuple_GET_ITEM(ir->names, v));
            rc = T->reason ? 1 : -1;
        }
    }
    PyMem_Free(assign);
    return rc;
}

int nd_loop_npool(const nd_ltyping *T)
{
    /* each array local holds at most one slot; one more is free for the
     * next new array (the name it goes to still holds its old one) */
    if (!T->ir->nalloc || !T->alocal) return 0;
    int n = 1;
    for (int v = 0; v < T->ir->nvars; v++) n += T->alocal[v] != 0;
    return n;
}
