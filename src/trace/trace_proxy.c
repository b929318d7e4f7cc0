/* trace_proxy.c -- numdyn._C.LazyArray: the lazy stand-in for an ndarray.
 *
 * Every operator, method and protocol NumPy code uses on an ndarray is
 * routed to the shim (numpy_shim/shim.h), which appends graph nodes. What
 * needs a concrete value (bool(), float(), repr(), the buffer protocol,
 * __array__, pickling) materializes it: a recorded graph break.
 *
 * A proxy that is not live (its compiled call has returned, or it belongs
 * to another thread's trace) never reaches the shim: it computes its value
 * and the operation runs on that concrete array with plain NumPy.
 */
#include "trace_internal.h"
#include "core/number_slots.h"
#include "trace_control.h"
#include <string.h>

static PyObject *np_matmul;  /* numpy.matmul (a ufunc) */
static PyObject *str_call;   /* "__call__" */

/* ------------------------------------------------------------- helpers */

/* What Python code should see for a non-live proxy: its concrete value, a
 * NumPy scalar for is_scalar values (as NumPy would have returned). */
static PyObject *user_value(NdProxy *p, const char *reason)
{
    PyObject *v = nd__proxy_value(p, reason);
    if (v && p->is_scalar && PyArray_Check(v) && PyArray_NDIM((PyArrayObject *)v) == 0)
        return PyArray_Return((PyArrayObject *)v);
    return v;
}

/* obj itself, or the concrete value of a non-live proxy (new ref) */
static PyObject *resolve(PyObject *o)
{
    if (nd_proxy_check(o) && !nd__live((NdProxy *)o)) return user_value((NdProxy *)o, NULL);
    return Py_NewRef(o);
}

/* shim results are checked for real arrays aliasing caller buffers */
static PyObject *escaped(PyObject *r)
{
    if (r && !nd_proxy_check(r) && !nd__note_escape(r)) Py_CLEAR(r);
    return r;
}

static int is_live_proxy(PyObject *o) { return nd_proxy_check(o) && nd__live((NdProxy *)o); }
static int is_dead_proxy(PyObject *o) { return nd_proxy_check(o) && !nd__live((NdProxy *)o); }

/* ndarray's binop_should_defer: `x + other` where other's type sets
 * __array_ufunc__ = None is other's business: its reflected method runs
 * (NotImplemented here), and without one the TypeError is NumPy's. 1: the
 * caller returns NotImplemented; -1: an exception is set; 0: no deferral. */
static int defers(int uf, PyObject *a, PyObject *b)
{
    static const struct { int uf; const char *rname, *sym; } ops[] = {
        {ND_UF_ADD, "__radd__", "+"}, {ND_UF_SUBTRACT, "__rsub__", "-"},
        {ND_UF_MULTIPLY, "__rmul__", "*"}, {ND_UF_TRUE_DIVIDE, "__rtruediv__", "/"},
        {ND_UF_FLOOR_DIVIDE, "__rfloordiv__", "//"}, {ND_UF_REMAINDER, "__rmod__", "%"},
        {ND_UF_DIVMOD, "__rdivmod__", "divmod()"}, {ND_UF_BITWISE_AND, "__rand__", "&"},
        {ND_UF_BITWISE_OR, "__ror__", "|"}, {ND_UF_BITWISE_XOR, "__rxor__", "^"},
        {ND_UF_LEFT_SHIFT, "__rlshift__", "<<"}, {ND_UF_RIGHT_SHIFT, "__rrshift__", ">>"},
        {ND_UF_POWER, "__rpow__", "** or pow()"},
    };
    /* NumPy's scalars leave str and bytes to Python (str + np.int64 is
     * str's TypeError) and a sequence times a scalar to sequence repetition
     * ([0] * np.int64(3) is [0, 0, 0]; a 0-d array would broadcast) */
    PyObject *sc = nd_proxy_check(a) ? a : b, *other = sc == a ? b : a;
    if (nd_proxy_check(sc) && nd_proxy_is_scalar(sc) && !nd_proxy_check(other) &&
        (PyUnicode_Check(other) || PyBytes_Check(other) ||
         (uf == ND_UF_MULTIPLY && (PyList_Check(other) || PyTuple_Check(other))))) {
        int dt = nd_proxy_dtype(sc);
        if (uf != ND_UF_MULTIPLY || PyTypeNum_ISINTEGER(dt)) return 1;
        /* Python's own words, for a scalar type without __index__ */
        PyObject *tp = PyArray_TypeObjectFromType(dt);
        if (!tp) return -1;
        PyErr_Format(PyExc_TypeError, "can't multiply sequence by non-int of type '%s'",
                     ((PyTypeObject *)tp)->tp_name);
        Py_DECREF(tp);
        return -1;
    }
    if (!nd_proxy_check(a) || nd_proxy_check(b) || PyFloat_CheckExact(b) || PyLong_CheckExact(b) ||
        PyComplex_CheckExact(b) || PyBool_Check(b) || PyArray_CheckExact(b) || PyArray_IsScalar(b, Generic))
        return 0;
    PyObject *auf = PyObject_GetAttrString((PyObject *)Py_TYPE(b), "__array_ufunc__");
    if (!auf) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        return 0;
    }
    int none = auf == Py_None;
    Py_DECREF(auf);
    if (!none) return 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (ops[i].uf != uf) continue;
        int has = PyObject_HasAttrString((PyObject *)Py_TYPE(b), ops[i].rname);
        if (has) return 1;
        if (uf == ND_UF_ADD)
            PyErr_SetString(PyExc_TypeError,
                            "Concatenation operation is not implemented for NumPy arrays, use "
                            "np.concatenate() instead. Please do not rely on this error; it may not "
                            "be given on all Python implementations.");
        else
            PyErr_Format(PyExc_TypeError, "unsupported operand type(s) for %s: 'numpy.ndarray' and '%s'",
                         ops[i].sym, Py_TYPE(b)->tp_name);
        return -1;
    }
    return 0;
}

/* A Python number that is not a NumPy scalar (bool, int, float, complex) */
static int python_number(PyObject *o)
{
    return !PyArray_IsScalar(o, Generic) &&
           (PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o));
}

static int scalar_proxy_of(PyObject *o, int dtype)
{
    return is_live_proxy(o) && nd_proxy_is_scalar(o) && nd_proxy_dtype(o) == dtype;
}

static int complex_scalar(PyObject *o)
{
    return PyArray_IsScalar(o, ComplexFloating) || scalar_proxy_of(o, NPY_CFLOAT) ||
           scalar_proxy_of(o, NPY_CDOUBLE);
}

/* the Python type a value has under NumPy: a NumPy scalar type for an
 * is_scalar proxy */
static const char *np_type_name(PyObject *o)
{
    if (nd_proxy_check(o) && nd_proxy_is_scalar(o)) {
        PyObject *tp = PyArray_TypeObjectFromType(nd_proxy_dtype(o));
        if (tp) {
            const char *name = ((PyTypeObject *)tp)->tp_name;  /* a static type */
            Py_DECREF(tp);
            return name;
        }
        PyErr_Clear();
    }
    return Py_TYPE(o)->tp_name;
}

/* Python operators between scalars whose NumPy answer is not the ufunc's.
 * NumPy's complex scalars have no %, // or divmod slots: with a Python
 * number (or another complex scalar) on the other side no operand takes
 * the operation and Python raises its own TypeError. A Python complex on
 * the left of a float64 scalar (a float subclass) computes it with
 * complex's own op: a Python complex. 1 handled (*r set, or NULL with an
 * exception), 0 not. */
static int scalar_rules(int uf, PyObject *a, PyObject *b, binaryfunc numpy_op, PyObject **r)
{
    *r = NULL;
    if (uf == ND_UF_REMAINDER || uf == ND_UF_FLOOR_DIVIDE || uf == ND_UF_DIVMOD) {
        int ca = complex_scalar(a), cb = complex_scalar(b);
        /* the other side: a Python number, or a complex scalar itself */
        if ((!ca && !cb) || !(ca || python_number(a)) || !(cb || python_number(b))) return 0;
        const char *sym = uf == ND_UF_REMAINDER ? "%" : uf == ND_UF_FLOOR_DIVIDE ? "//" : "divmod()";
        PyErr_Format(PyExc_TypeError, "unsupported operand type(s) for %s: '%s' and '%s'", sym,
                     np_type_name(a), np_type_name(b));
        return 1;
    }
    if ((uf == ND_UF_ADD || uf == ND_UF_SUBTRACT || uf == ND_UF_MULTIPLY ||
         uf == ND_UF_TRUE_DIVIDE || uf == ND_UF_POWER) &&
        PyComplex_Check(a) && python_number(a) && scalar_proxy_of(b, NPY_DOUBLE)) {
        PyObject *rb = nd__materialize_tree(b, 1);
        if (rb) *r = numpy_op(a, rb);
        Py_XDECREF(rb);
        return 1;
    }
    return 0;
}

/* ---- NumPy's scalar math ----------------------------------------------
 * A Python operator whose operands are all NumPy or Python scalars (an
 * is_scalar proxy, not a 0-d array) is NumPy's scalar math, not the ufunc:
 * integer add, subtract, multiply, negative and absolute warn "overflow
 * encountered in scalar add" (or raise, per np.errstate) where they wrap,
 * and every warning names the "scalar" operation. The node the operator
 * made is marked ND_F_SCALAR_MATH (graph.h): generated code reports the
 * wrapping, and the run NumPy then makes to warn computes it on NumPy
 * scalars. */
static int scalar_like(PyObject *o)
{
    if (nd_proxy_check(o)) return nd_proxy_is_scalar(o);
    return PyArray_IsScalar(o, Generic) || PyLong_Check(o) || PyFloat_Check(o) ||
           PyComplex_Check(o);
}

static void mark_node(PyObject *r, int uf)
{
    if (!is_live_proxy(r) || !nd_proxy_is_scalar(r)) return;
    NdProxy *p = (NdProxy *)r;
    if (!p->identity || p->part || p->ndim != 0) return;
    nd_node *n = &p->st->trace->g->nodes[p->st->version];
    if (n->op == ND_OP_UFUNC && n->sub == uf && n->ndim == 0 && !n->value)
        n->flags |= ND_F_SCALAR_MATH;
}

/* r (returned): the result of operator uf on operands a (and b) */
static PyObject *scalar_math(PyObject *r, int uf, PyObject *a, PyObject *b)
{
    if (!r || !scalar_like(a) || (b && !scalar_like(b))) return r;
    if (PyTuple_CheckExact(r)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(r); i++) mark_node(PyTuple_GET_ITEM(r, i), uf);
    } else {
        mark_node(r, uf);
    }
    return r;
}

static PyObject *binop(int uf, PyObject *a, PyObject *b, binaryfunc numpy_op)
{
    int d = defers(uf, a, b);
    if (d < 0) return NULL;
    if (d) Py_RETURN_NOTIMPLEMENTED;
    PyObject *sr;
    if (scalar_rules(uf, a, b, numpy_op, &sr)) return sr;
    if (nd_trace_n_disallowed && nd_trace_ufunc_disallowed(uf) && (is_live_proxy(a) || is_live_proxy(b)))
        return nd_trace_disallowed_ufunc(uf, a, b, NULL, NULL, 0);
    if (!is_dead_proxy(a) && !is_dead_proxy(b)) return scalar_math(nd_np.ufunc2(uf, a, b), uf, a, b);
    PyObject *ra = resolve(a), *rb = ra ? resolve(b) : NULL, *r = NULL;
    if (ra && rb)
        r = (is_live_proxy(ra) || is_live_proxy(rb)) ? scalar_math(nd_np.ufunc2(uf, ra, rb), uf, ra, rb)
                                                     : numpy_op(ra, rb);
    Py_XDECREF(ra);
    Py_XDECREF(rb);
    return r;
}

static PyObject *inplace(int uf, PyObject *a, PyObject *b, binaryfunc numpy_op)
{
    /* a NumPy scalar (x = arr[i]; x += y; arr[i] += y) is immutable: Python
     * falls back to x = x + y, a scalar op under the scalar rules (no
     * same_kind cast back to x's dtype); arr[i] = ... then casts like any
     * element assignment */
    if (nd_proxy_is_scalar(a)) return binop(uf, a, b, numpy_op);
    if (nd_trace_n_disallowed && nd_trace_ufunc_disallowed(uf) && is_live_proxy(a))
        return nd_trace_disallowed_ufunc(uf, a, b, NULL, NULL, 1);
    if (is_live_proxy(a)) {
        if (!is_dead_proxy(b)) return nd_np.ufunc2_inplace(uf, a, b);
        PyObject *rb = resolve(b);
        PyObject *r = rb ? nd_np.ufunc2_inplace(uf, a, rb) : NULL;
        Py_XDECREF(rb);
        return r;
    }
    PyObject *ra = resolve(a), *rb = ra ? resolve(b) : NULL, *r = NULL;
    if (ra && rb) r = numpy_op(ra, rb);
    if (r == ra && r) {  /* updated the detached value in place: keep identity */
        Py_DECREF(r);
        r = Py_NewRef(a);
    }
    Py_XDECREF(ra);
    Py_XDECREF(rb);
    return r;
}

static PyObject *unop(int uf, PyObject *a, unaryfunc numpy_op)
{
    if (nd_trace_n_disallowed && nd_trace_ufunc_disallowed(uf) && is_live_proxy(a))
        return nd_trace_disallowed_ufunc(uf, a, NULL, NULL, NULL, 0);
    if (is_live_proxy(a)) return scalar_math(nd_np.ufunc1(uf, a), uf, a, NULL);
    PyObject *ra = resolve(a);
    PyObject *r = ra ? numpy_op(ra) : NULL;
    Py_XDECREF(ra);
    return r;
}

#define BINOP(name, UF, npop) \
    static PyObject *p_##name(PyObject *a, PyObject *b) { return binop(ND_UF_##UF, a, b, npop); }
#define IBINOP(name, UF, npop) \
    static PyObject *p_i##name(PyObject *a, PyObject *b) { return inplace(ND_UF_##UF, a, b, npop); }

BINOP(add, ADD, PyNumber_Add)
BINOP(sub, SUBTRACT, PyNumber_Subtract)
BINOP(mul, MULTIPLY, PyNumber_Multiply)
BINOP(truediv, TRUE_DIVIDE, PyNumber_TrueDivide)
BINOP(floordiv, FLOOR_DIVIDE, PyNumber_FloorDivide)
BINOP(mod, REMAINDER, PyNumber_Remainder)
BINOP(divmod, DIVMOD, PyNumber_Divmod)
BINOP(and, BITWISE_AND, PyNumber_And)
BINOP(or, BITWISE_OR, PyNumber_Or)
BINOP(xor, BITWISE_XOR, PyNumber_Xor)
BINOP(lshift, LEFT_SHIFT, PyNumber_Lshift)
BINOP(rshift, RIGHT_SHIFT, PyNumber_Rshift)
IBINOP(add, ADD, PyNumber_InPlaceAdd)
IBINOP(sub, SUBTRACT, PyNumber_InPlaceSubtract)
IBINOP(mul, MULTIPLY, PyNumber_InPlaceMultiply)
IBINOP(truediv, TRUE_DIVIDE, PyNumber_InPlaceTrueDivide)
IBINOP(floordiv, FLOOR_DIVIDE, PyNumber_InPlaceFloorDivide)
IBINOP(mod, REMAINDER, PyNumber_InPlaceRemainder)
IBINOP(and, BITWISE_AND, PyNumber_InPlaceAnd)
IBINOP(or, BITWISE_OR, PyNumber_InPlaceOr)
IBINOP(xor, BITWISE_XOR, PyNumber_InPlaceXor)
IBINOP(lshift, LEFT_SHIFT, PyNumber_InPlaceLshift)
IBINOP(rshift, RIGHT_SHIFT, PyNumber_InPlaceRshift)

static PyObject *np_power2(PyObject *a, PyObject *b) { return PyNumber_Power(a, b, Py_None); }
static PyObject *np_ipower2(PyObject *a, PyObject *b) { return PyNumber_InPlacePower(a, b, Py_None); }

/* ndarray.__pow__'s fast paths (NumPy 2, both `x ** e` and `x **= e`): a
 * Python int 2 is np.square (any dtype: bool ** 2 is int8); for float and
 * complex arrays a Python int -1 is np.reciprocal and a Python float 0.5
 * np.sqrt -- different values at -inf and -0.0 (sqrt(-inf) is nan), and
 * warnings that name those ufuncs. Not for NumPy scalars (np.True_ ** 2 is
 * np.int64 1), np.power, or exponents given as NumPy scalars or arrays. */
static int power_fast_path(PyObject *a, PyObject *b)
{
    if (!nd_proxy_check(a) || nd_proxy_is_scalar(a)) return -1;
    int inexact = PyTypeNum_ISFLOAT(nd_proxy_dtype(a)) || PyTypeNum_ISCOMPLEX(nd_proxy_dtype(a));
    if (PyLong_CheckExact(b)) {
        int overflow = 0;
        long v = PyLong_AsLongAndOverflow(b, &overflow);
        if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); return -1; }
        if (overflow) return -1;
        if (v == 2) return ND_UF_SQUARE;
        if (v == -1 && inexact) return ND_UF_RECIPROCAL;
        return -1;
    }
    if (PyFloat_CheckExact(b) && PyFloat_AS_DOUBLE(b) == 0.5 && inexact) return ND_UF_SQRT;
    return -1;
}

static PyObject *p_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod == Py_None) {
        int uf = power_fast_path(a, b);
        if (uf >= 0) return nd_np.ufunc1(uf, a);
        return binop(ND_UF_POWER, a, b, np_power2);
    }
    /* three-argument pow is not an ndarray operation: NumPy's own answer */
    PyObject *ra = nd__materialize_tree(a, 1), *rb = ra ? nd__materialize_tree(b, 1) : NULL;
    PyObject *r = ra && rb ? PyNumber_Power(ra, rb, mod) : NULL;
    Py_XDECREF(ra);
    Py_XDECREF(rb);
    return r;
}

static PyObject *p_ipow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None) return p_pow(a, b, mod);
    if (nd_proxy_is_scalar(a)) return binop(ND_UF_POWER, a, b, np_power2);
    int uf = power_fast_path(a, b);
    if (uf >= 0 && is_live_proxy(a) && nd_trace_current()) {
        PyObject *args = PyTuple_Pack(1, a), *kw = args ? Py_BuildValue("{s(O)}", "out", a) : NULL;
        PyObject *r = kw ? nd_np.array_ufunc(nd_ufunc_object(uf), str_call, args, kw) : NULL;
        Py_XDECREF(args);
        Py_XDECREF(kw);
        return r;
    }
    return inplace(ND_UF_POWER, a, b, np_ipower2);
}

static PyObject *matmul_call(PyObject *a, PyObject *b, PyObject *out)
{
    PyObject *args = PyTuple_Pack(2, a, b), *kw = NULL, *r = NULL;
    if (!args) return NULL;
    if (out) {
        kw = Py_BuildValue("{s(O)}", "out", out);
        if (!kw) { Py_DECREF(args); return NULL; }
    }
    if (nd_trace_current()) {
        r = nd_np.array_ufunc(np_matmul, str_call, args, kw);
    } else {
        PyObject *a2, *k2;
        if (nd__materialize_call(args, kw, &a2, &k2) == 0) {
            r = PyObject_Call(np_matmul, a2, k2);
            Py_DECREF(a2);
            Py_XDECREF(k2);
        }
    }
    Py_DECREF(args);
    Py_XDECREF(kw);
    return r;
}

static PyObject *p_matmul(PyObject *a, PyObject *b) { return matmul_call(a, b, NULL); }

static PyObject *p_imatmul(PyObject *a, PyObject *b)
{
    PyObject *r = matmul_call(a, b, a);
    if (!r) return NULL;
    Py_DECREF(r);
    return Py_NewRef(a);
}

static PyObject *p_neg(PyObject *a) { return unop(ND_UF_NEGATIVE, a, PyNumber_Negative); }
static PyObject *p_pos(PyObject *a) { return unop(ND_UF_POSITIVE, a, PyNumber_Positive); }
static PyObject *p_abs(PyObject *a) { return unop(ND_UF_ABSOLUTE, a, PyNumber_Absolute); }
static PyObject *p_invert(PyObject *a) { return unop(ND_UF_INVERT, a, PyNumber_Invert); }

static npy_intp proxy_size(NdProxy *p)
{
    npy_intp s = 1;
    for (int d = 0; d < p->ndim; d++) s *= p->shape[d];
    return s;
}

static int p_bool(PyObject *o)
{
    NdProxy *p = (NdProxy *)o;
    npy_intp n = proxy_size(p);
    if (n != 1) {
        /* NumPy refuses without looking at the data: same error, no flush */
        npy_intp dim = n == 0 ? 0 : 2;
        PyObject *dummy = PyArray_ZEROS(1, &dim, p->dtype, 0);
        if (!dummy) return -1;
        int r = PyObject_IsTrue(dummy);
        Py_DECREF(dummy);
        return r;
    }
    PyObject *v = nd__proxy_value(p, "bool() of an array: a data-dependent branch "
                                     "(if/while/and/or/not on an array value)");
    if (!v) return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* A proxy standing for a NumPy scalar converts as that scalar does:
 * float(np.complex128) warns and drops the imaginary part, while float() of a
 * 0-d complex array raises. */
static PyObject *proxy_value_as_numpy(PyObject *o, const char *reason)
{
    PyObject *v = nd__proxy_value((NdProxy *)o, reason);
    if (v && nd_proxy_is_scalar(o) && PyArray_Check(v) &&
        PyArray_NDIM((PyArrayObject *)v) == 0)
        v = PyArray_Return((PyArrayObject *)v);
    return v;
}

static PyObject *p_int(PyObject *o)
{
    PyObject *v = proxy_value_as_numpy(o, "int() of an array value");
    PyObject *r = v ? PyNumber_Long(v) : NULL;
    Py_XDECREF(v);
    return r;
}

static PyObject *p_float(PyObject *o)
{
    PyObject *v = proxy_value_as_numpy(o, "float() of an array value");
    PyObject *r = v ? PyNumber_Float(v) : NULL;
    Py_XDECREF(v);
    return r;
}

/* NumPy scalars hash (dict keys, sets); arrays do not */
static Py_hash_t p_hash(PyObject *o)
{
    if (!nd_proxy_is_scalar(o)) {
        PyErr_SetString(PyExc_TypeError, "unhashable type: 'numpy.ndarray'");
        return -1;
    }
    PyObject *v = proxy_value_as_numpy(o, "hash() of an array value (a dict key or set item)");
    Py_hash_t h = v ? PyObject_Hash(v) : -1;
    Py_XDECREF(v);
    return h;
}

/* as NumPy's: a float scalar's error names its type, a 0-d array's says
 * "only integer scalar arrays" */
static PyObject *p_index(PyObject *o)
{
    /* NumPy refuses an array of rank 1 and up without looking at the data
     * (indexing a real array with a lazy mask, `Xi[I]`, asks __index__
     * first): same error, no flush and no recorded break */
    if (((NdProxy *)o)->ndim > 0) {
        PyErr_SetString(PyExc_TypeError, "only integer scalar arrays can be converted to a scalar index");
        return NULL;
    }
    PyObject *v = proxy_value_as_numpy(o, "an array value used as a Python integer (__index__)");
    PyObject *r = v ? PyNumber_Index(v) : NULL;
    Py_XDECREF(v);
    return r;
}

static PyNumberMethods proxy_as_number = ND_NUMBER_METHODS(p_);

static PyObject *p_richcompare(PyObject *a, PyObject *b, int op)
{
    static const int ufs[6] = {ND_UF_LESS, ND_UF_LESS_EQUAL, ND_UF_EQUAL,
                               ND_UF_NOT_EQUAL, ND_UF_GREATER, ND_UF_GREATER_EQUAL};
    if (!is_dead_proxy(a) && !is_dead_proxy(b)) return nd_np.ufunc2(ufs[op], a, b);
    PyObject *ra = resolve(a), *rb = ra ? resolve(b) : NULL, *r = NULL;
    if (ra && rb)
        r = (is_live_proxy(ra) || is_live_proxy(rb)) ? nd_np.ufunc2(ufs[op], ra, rb)
                                                     : PyObject_RichCompare(ra, rb, op);
    Py_XDECREF(ra);
    Py_XDECREF(rb);
    return r;
}

/* ----------------------------------------------------------- mapping */

/* what NumPy's scalar says where a 0-d array would complain: a lazy
 * scalar stands for np.float64 & co., whose messages name their type */
static int scalar_type_error(PyObject *o, const char *fmt)
{
    PyObject *tp = PyArray_TypeObjectFromType(nd_proxy_dtype(o));
    if (!tp) return -1;
    PyErr_Format(PyExc_TypeError, fmt, ((PyTypeObject *)tp)->tp_name);
    Py_DECREF(tp);
    return -1;
}

static Py_ssize_t p_len(PyObject *o)
{
    NdProxy *p = (NdProxy *)o;
    if (p->ndim == 0 && p->is_scalar) return scalar_type_error(o, "object of type '%s' has no len()");
    if (p->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of unsized object");
        return -1;
    }
    return p->shape[0];
}

static PyObject *p_getitem(PyObject *o, PyObject *key)
{
    if (((NdProxy *)o)->memmap) {  /* a view or copy of a memmap is one */
        PyObject *v = user_value((NdProxy *)o, "indexing an np.memmap (its views and copies are memmaps): "
                                 "NumPy runs it on the memmap");
        PyObject *r = v ? escaped(PyObject_GetItem(v, key)) : NULL;  /* a view Python holds */
        Py_XDECREF(v);
        return r;
    }
    if (is_live_proxy(o)) {
        PyObject *r = escaped(nd_np.getitem(o, key));
        /* NumPy's scalar indexes itself as a 0-d array and reports any
         * failure as this (scalartypes.c, gentype_subscript) */
        if (!r && nd_proxy_is_scalar(o) && PyErr_Occurred() &&
            !PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) &&
            !PyErr_ExceptionMatches(PyExc_MemoryError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_IndexError, "invalid index to scalar variable.");
        }
        return r;
    }
    PyObject *v = user_value((NdProxy *)o, NULL);
    PyObject *r = v ? PyObject_GetItem(v, key) : NULL;
    Py_XDECREF(v);
    return r;
}

static int p_setitem(PyObject *o, PyObject *key, PyObject *value)
{
    if (nd_proxy_is_scalar(o)) {  /* a NumPy scalar is immutable */
        PyErr_Format(PyExc_TypeError, value ? "'%s' object does not support item assignment"
                                            : "'%s' object does not support item deletion",
                     np_type_name(o));
        return -1;
    }
    if (!value) {
        PyErr_SetString(PyExc_ValueError, "cannot delete array elements");
        return -1;
    }
    if (is_live_proxy(o)) return nd_np.setitem(o, key, value);
    PyObject *v = nd__proxy_value((NdProxy *)o, NULL);
    int r = v ? PyObject_SetItem(v, key, value) : -1;
    Py_XDECREF(v);
    return r;
}

static PyMappingMethods proxy_as_mapping = {
    .mp_length = p_len, .mp_subscript = p_getitem, .mp_ass_subscript = p_setitem,
};

static int p_contains(PyObject *o, PyObject *x)
{
    /* NumPy: (a == x).any() */
    PyObject *eq = PyObject_RichCompare(o, x, Py_EQ);
    if (!eq) return -1;
    PyObject *any = PyObject_CallMethod(eq, "any", NULL);
    Py_DECREF(eq);
    if (!any) return -1;
    int r = PyObject_IsTrue(any);
    Py_DECREF(any);
    return r;
}

static PySequenceMethods proxy_as_sequence = {
    .sq_length = p_len, .sq_contains = p_contains,
};

/* ------------------------------------------------------------ buffer */

static int p_getbuffer(PyObject *o, Py_buffer *view, int flags)
{
    PyObject *v = nd__proxy_value((NdProxy *)o,
                                  "the buffer protocol (memoryview, bytes(), C code) "
                                  "needs the array's data");
    if (!v) return -1;
    int r;
    if (nd_proxy_is_scalar(o)) {
        /* a NumPy scalar's value: a new array of it (np.asarray of a scalar
         * never aliases it), so writes through the buffer leave it as is */
        PyObject *c = PyArray_FromAny(v, NULL, 0, 0, NPY_ARRAY_ENSURECOPY, NULL);
        r = c ? PyObject_GetBuffer(c, view, flags) : -1;
        Py_XDECREF(c);
        Py_DECREF(v);
        return r;
    }
    /* the buffer is a real alias of the array Python code now holds */
    r = nd__note_escape_of(o, v) == 0 ? PyObject_GetBuffer(v, view, flags) : -1;  /* view->obj keeps v */
    Py_DECREF(v);
    return r;
}

static PyBufferProcs proxy_as_buffer = { .bf_getbuffer = p_getbuffer };

/* ------------------------------------------------------------ iteration */

typedef struct {
    PyObject_HEAD
    PyObject *proxy;
    Py_ssize_t i, n;
} NdProxyIter;

static void it_dealloc(PyObject *o)
{
    Py_XDECREF(((NdProxyIter *)o)->proxy);
    PyObject_Free(o);
}

static PyObject *it_next(PyObject *o)
{
    NdProxyIter *it = (NdProxyIter *)o;
    if (!it->proxy || it->i >= it->n) return NULL;
    PyObject *k = PyLong_FromSsize_t(it->i++);
    if (!k) return NULL;
    PyObject *r = p_getitem(it->proxy, k);
    Py_DECREF(k);
    return r;
}

static PyTypeObject NdProxyIter_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.LazyArrayIterator",
    .tp_basicsize = sizeof(NdProxyIter),
    .tp_dealloc = it_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = it_next,
};

static PyObject *p_iter(PyObject *o)
{
    NdProxy *p = (NdProxy *)o;
    if (p->ndim == 0 && p->is_scalar) {
        scalar_type_error(o, "'%s' object is not iterable");
        return NULL;
    }
    if (p->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "iteration over a 0-d array");
        return NULL;
    }
    if (p->memmap || p->subtype) {  /* its rows are memmaps / subclass views */
        PyObject *v = user_value(p, p->memmap ? "iterating over an np.memmap: NumPy runs it on the memmap"
                                              : "iterating over an ndarray subclass: NumPy runs it "
                                                "on the subclass object");
        /* its rows, each a view Python holds */
        PyObject *rows = v ? escaped(PySequence_List(v)) : NULL;
        Py_XDECREF(v);
        PyObject *r = rows ? PyObject_GetIter(rows) : NULL;
        Py_XDECREF(rows);
        return r;
    }
    NdProxyIter *it = PyObject_New(NdProxyIter, &NdProxyIter_Type);
    if (!it) return NULL;
    it->proxy = Py_NewRef(o);
    it->i = 0;
    it->n = p->shape[0];
    return (PyObject *)it;
}

/* ------------------------------------------------------- repr / dealloc */

static PyObject *p_repr(PyObject *o)
{
    PyObject *v = user_value((NdProxy *)o, "repr() of an array needs its values");
    PyObject *r = v ? PyObject_Repr(v) : NULL;
    Py_XDECREF(v);
    return r;
}

static PyObject *p_str(PyObject *o)
{
    PyObject *v = user_value((NdProxy *)o, "str()/print() of an array needs its values");
    PyObject *r = v ? PyObject_Str(v) : NULL;
    Py_XDECREF(v);
    return r;
}

static void p_dealloc(PyObject *o)
{
    NdProxy *p = (NdProxy *)o;
    if (p->weakrefs) PyObject_ClearWeakRefs(o);
    if (p->st) {
        nd_trace *t = p->st->trace;
        if (p->prev) p->prev->next = p->next;
        else t->proxies = p->next;
        if (p->next) p->next->prev = p->prev;
        nd__storage_decref(p->st);
    }
    Py_XDECREF(p->value);
    Py_CLEAR(p->subtype);
    Py_CLEAR(p->sdict);
    Py_CLEAR(p->base);
    Py_CLEAR(p->vbase);
    Py_CLEAR(p->arg);
    nd__proxy_free(o);
}

/* ----------------------------------------------------------- methods */

static PyObject *kw_dict(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); k++)
        if (PyDict_SetItem(d, PyTuple_GET_ITEM(kwnames, k), args[nargs + k]) < 0) {
            Py_DECREF(d);
            return NULL;
        }
    return d;
}

/* A method NumPy code calls on the proxy: the shim's version when live,
 * else the same method of the concrete value. */
static PyObject *call_method(const char *name, PyObject *self, PyObject *const *args,
                             size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (!is_live_proxy(self)) {
        PyObject *v = user_value((NdProxy *)self, NULL);
        if (!v) return NULL;
        PyObject *m = PyObject_GetAttrString(v, name);
        Py_DECREF(v);
        if (!m) return NULL;
        PyObject *r = PyObject_Vectorcall(m, args, (size_t)nargs, kwnames);
        Py_DECREF(m);
        return r;
    }
    PyObject *tup = PyTuple_New(nargs), *kw = NULL;
    if (!tup) return NULL;
    for (Py_ssize_t k = 0; k < nargs; k++) PyTuple_SET_ITEM(tup, k, Py_NewRef(args[k]));
    if (kwnames && PyTuple_GET_SIZE(kwnames) && !(kw = kw_dict(args, nargs, kwnames))) {
        Py_DECREF(tup);
        return NULL;
    }
    PyObject *r = escaped(nd_np.method(name, self, tup, kw));
    Py_DECREF(tup);
    Py_XDECREF(kw);
    /* NumPy runs a scalar's method on a 0-d array of its value and gives a
     * 0-d result back as a scalar (PyArray_Return): s.squeeze(), s.T,
     * s.copy() of a NumPy scalar are NumPy scalars */
    if (r && ((NdProxy *)self)->is_scalar && nd_proxy_check(r) && r != self && ((NdProxy *)r)->ndim == 0)
        ((NdProxy *)r)->is_scalar = 1;
    return r;
}

/* A method that needs the concrete data whatever the trace state. */
static PyObject *call_concrete(const char *name, const char *reason, PyObject *self,
                               PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *v = user_value((NdProxy *)self, reason);
    if (!v) return NULL;
    PyObject *m = PyObject_GetAttrString(v, name);
    PyObject *r = m ? PyObject_Vectorcall(m, args, nargsf, kwnames) : NULL;
    Py_XDECREF(m);
    /* the method kept the array (a DLPack capsule, an object holding it):
     * Python code holds a real alias of it */
    if (r && Py_REFCNT(v) > 1 && nd__note_escape_of(self, v) < 0) Py_CLEAR(r);
    Py_DECREF(v);
    return r;
}

#define SHIM_METHOD(name) \
    static PyObject *m_##name(PyObject *self, PyObject *const *args, size_t nargsf, \
                              PyObject *kwnames) \
    { return call_method(#name, self, args, nargsf, kwnames); }
#define CONCRETE_METHOD(name, why) \
    static PyObject *m_##name(PyObject *self, PyObject *const *args, size_t nargsf, \
                              PyObject *kwnames) \
    { return call_concrete(#name, why, self, args, nargsf, kwnames); }

#define SHIM_METHODS(X) \
    X(all) X(any) X(argmax) X(argmin) X(argpartition) X(argsort) X(astype) X(byteswap) \
    X(choose) X(clip) X(compress) X(conj) X(conjugate) X(copy) X(cumprod) X(cumsum) \
    X(diagonal) X(dot) X(fill) X(flatten) X(getfield) X(item) X(max) X(mean) X(min) \
    X(nonzero) X(partition) X(prod) X(put) X(ravel) X(repeat) X(reshape) X(resize) \
    X(round) X(searchsorted) X(setfield) X(sort) X(squeeze) X(std) X(sum) \
    X(swapaxes) X(take) X(to_device) X(tolist) X(trace) X(transpose) X(var) X(view)
SHIM_METHODS(SHIM_METHOD)

/* round(x[, n]) of a NumPy scalar is the scalar's own (round(np.float64)
 * is an int); an ndarray's goes through the shim */
static PyObject *m___round__(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    if (!nd_proxy_is_scalar(self)) return call_method("__round__", self, args, nargsf, kwnames);
    return call_concrete("__round__", "round() of a scalar value", self, args, nargsf, kwnames);
}

static PyObject *m___copy__(PyObject *self, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames)
{
    return call_method("copy", self, NULL, 0, NULL);
}

CONCRETE_METHOD(tobytes, "ndarray.tobytes() needs the array's data")
CONCRETE_METHOD(tofile, "ndarray.tofile() needs the array's data")
CONCRETE_METHOD(dump, "ndarray.dump() needs the array's data")
CONCRETE_METHOD(dumps, "ndarray.dumps() needs the array's data")
CONCRETE_METHOD(__reduce__, "pickling an array needs its data")
CONCRETE_METHOD(__reduce_ex__, "pickling an array needs its data")
CONCRETE_METHOD(__deepcopy__, "copy.deepcopy() of an array needs its data")
CONCRETE_METHOD(__format__, "format() of an array needs its values")
CONCRETE_METHOD(__dlpack__, "__dlpack__ exports the array's data")
CONCRETE_METHOD(__dlpack_device__, "__dlpack_device__ of a lazy array")
CONCRETE_METHOD(__array_namespace__, "__array_namespace__ of a lazy array")

static PyObject *m___complex__(PyObject *self, PyObject *unused)
{
    PyObject *v = nd__proxy_value((NdProxy *)self, "complex() of an array value");
    PyObject *r = v ? PyObject_CallOneArg((PyObject *)&PyComplex_Type, v) : NULL;
    Py_XDECREF(v);
    return r;
}

/* reversed(a): ndarray is reversed through the sequence protocol, NumPy
 * scalars are not reversible; the value itself answers both the same way */
static PyObject *m___reversed__(PyObject *self, PyObject *unused)
{
    PyObject *v = user_value((NdProxy *)self, "reversed() of an array value");
    if (!v) return NULL;
    PyObject *r = PyObject_CallOneArg((PyObject *)&PyReversed_Type, v);
    Py_DECREF(v);
    return r;
}

PyObject *nd_err_copy_unavoidable(void)
{
    PyErr_SetString(PyExc_ValueError,
                    "Unable to avoid copy while creating an array as requested.\n"
                    "If using `np.array(obj, copy=False)` replace it with `np.asarray(obj)` "
                    "to allow a copy when needed (no behavior change in NumPy 1.x).\n"
                    "For more details, see https://numpy.org/devdocs/numpy_2_0_migration_guide.html"
                    "#adapting-to-changes-in-the-copy-keyword.");
    return NULL;
}

static PyObject *m___array__(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dtype", "copy", NULL};
    PyObject *dtype = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", kwlist, &dtype, &copy))
        return NULL;
    int scalar = nd_proxy_is_scalar(self);
    if (scalar && copy == Py_False) return nd_err_copy_unavoidable();  /* a NumPy scalar's array is always new */
    PyObject *v = nd__proxy_value((NdProxy *)self,
                                  "NumPy needs the array's data (np.asarray, or NumPy C code)");
    if (!v) return NULL;
    if (scalar) {
        /* NumPy code given a NumPy scalar makes a new array of its value
         * (np.asarray_chkfinite, np.require, as_strided): writes into it
         * must not reach the scalar's storage */
        Py_SETREF(v, PyArray_FromAny(v, NULL, 0, 0, NPY_ARRAY_ENSURECOPY, NULL));
        if (!v) return NULL;
        copy = Py_False;  /* the copy is made */
    } else if (dtype == Py_None && copy != Py_True && nd__note_escape_of(self, v) < 0) {  /* an alias escapes */
        Py_DECREF(v);
        return NULL;
    }
    if (dtype != Py_None) {
        PyArray_Descr *d = NULL;
        if (!PyArray_DescrConverter(dtype, &d)) { Py_DECREF(v); return NULL; }
        PyObject *c = PyArray_CastToType((PyArrayObject *)v, d, 0);  /* steals d */
        Py_DECREF(v);
        return c;
    }
    if (copy == Py_True) {
        PyObject *c = PyArray_NewCopy((PyArrayObject *)v, NPY_KEEPORDER);
        Py_DECREF(v);
        return c;
    }
    return v;
}

int nd_array_ufunc_args(PyObject *args, PyObject **ufunc, PyObject **method, PyObject **inputs)
{
    if (PyTuple_GET_SIZE(args) < 2) {
        PyErr_SetString(PyExc_TypeError, "__array_ufunc__(ufunc, method, *inputs, **kwargs)");
        return -1;
    }
    *ufunc = PyTuple_GET_ITEM(args, 0);
    *method = PyTuple_GET_ITEM(args, 1);
    if (!(*inputs = PyTuple_GetSlice(args, 2, PyTuple_GET_SIZE(args)))) return -1;
    return PyUnicode_Check(*method) && PyUnicode_CompareWithASCIIString(*method, "__call__") == 0;
}

/* ---- a NumPy scalar's operator with a scalar proxy on its right --------
 * `np.int32(C) + a[i]` (a[i] kept lazy, or s = x.sum()) is NumPy's scalar
 * math under NumPy: it warns "overflow encountered in scalar add" where the
 * int32 wraps. The NumPy scalar's own slot does not defer to the proxy (its
 * type defines __array_ufunc__): it falls through to the array path, a
 * ufunc call, so __array_ufunc__ sees what np.add(np.int32(C), a[i]) would
 * give it. The two differ only in the Python instruction running: a binary
 * operator (BINARY_OP, CPython >= 3.11) is taken as the proxy's reflected
 * operator, which is NumPy's scalar math. */
static int binary_op_opcode = -2;   /* opcode.opmap["BINARY_OP"]; -1: none */

static void binary_op_init(void)
{
    binary_op_opcode = -1;
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *m = PyImport_ImportModule("opcode");
    PyObject *map = m ? PyObject_GetAttrString(m, "opmap") : NULL;
    PyObject *v = map ? PyDict_GetItemString(map, "BINARY_OP") : NULL;
    if (v && PyLong_Check(v)) binary_op_opcode = (int)PyLong_AsLong(v);
    Py_XDECREF(map);
    Py_XDECREF(m);
    PyErr_Clear();
#endif
}

/* the NB_* operator (BINARY_OP's argument, in-place ones folded onto
 * theirs) the innermost Python frame is executing; -1 none */
static int frame_binary_op(void)
{
#if PY_VERSION_HEX >= 0x030B0000
    if (binary_op_opcode == -2) binary_op_init();
    PyFrameObject *f = PyEval_GetFrame();
    if (binary_op_opcode < 0 || !f) return -1;
    PyCodeObject *co = PyFrame_GetCode(f);
    int lasti = PyFrame_GetLasti(f), r = -1;
    PyObject *code = PyCode_GetCode(co);
    Py_DECREF(co);
    if (!code) { PyErr_Clear(); return -1; }
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(code);
    if (lasti >= 0 && lasti + 1 < PyBytes_GET_SIZE(code) && b[lasti] == binary_op_opcode &&
        b[lasti + 1] < 26)
        r = b[lasti + 1] % 13;   /* NB_INPLACE_ADD = 13 + NB_ADD ... */
    Py_DECREF(code);
    return r;
#else
    return -1;
#endif
}

static PyObject *reflected_scalar_op(PyObject *ufunc, PyObject *inputs, PyObject *kwargs)
{
    /* NB_* order: add, and, floor_divide, lshift, matmul, multiply,
     * remainder, or, power, rshift, subtract, true_divide, xor */
    static const struct { int uf; binaryfunc op; } nb[13] = {
        {ND_UF_ADD, PyNumber_Add}, {ND_UF_BITWISE_AND, PyNumber_And},
        {ND_UF_FLOOR_DIVIDE, PyNumber_FloorDivide}, {ND_UF_LEFT_SHIFT, PyNumber_Lshift},
        {-1, NULL}, {ND_UF_MULTIPLY, PyNumber_Multiply}, {ND_UF_REMAINDER, PyNumber_Remainder},
        {ND_UF_BITWISE_OR, PyNumber_Or}, {ND_UF_POWER, np_power2},
        {ND_UF_RIGHT_SHIFT, PyNumber_Rshift}, {ND_UF_SUBTRACT, PyNumber_Subtract},
        {ND_UF_TRUE_DIVIDE, PyNumber_TrueDivide}, {ND_UF_BITWISE_XOR, PyNumber_Xor},
    };
    if ((kwargs && PyDict_GET_SIZE(kwargs)) || PyTuple_GET_SIZE(inputs) != 2) return NULL;
    PyObject *a = PyTuple_GET_ITEM(inputs, 0), *b = PyTuple_GET_ITEM(inputs, 1);
    if (!PyArray_IsScalar(a, Generic) || !is_live_proxy(b) || !nd_proxy_is_scalar(b)) return NULL;
    int k = frame_binary_op();
    if (k < 0 || nb[k].uf < 0 || nd_ufunc_object(nb[k].uf) != ufunc) return NULL;
    return binop(nb[k].uf, a, b, nb[k].op);
}

static PyObject *m___array_ufunc__(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *ufunc, *method, *inputs, *r = NULL;
    int call = nd_array_ufunc_args(args, &ufunc, &method, &inputs);
    if (call < 0) return NULL;
    if (call && nd_trace_current() && (r = reflected_scalar_op(ufunc, inputs, kwargs))) {
        Py_DECREF(inputs);
        return r;
    }
    if (PyErr_Occurred()) { Py_DECREF(inputs); return NULL; }
    if (nd_trace_current()) {
        r = escaped(nd_np.array_ufunc(ufunc, method, inputs, kwargs));
    } else {
        PyObject *a2, *k2, *m = PyObject_GetAttr(ufunc, method);
        if (m && nd__materialize_call(inputs, kwargs, &a2, &k2) == 0) {
            r = PyObject_Call(m, a2, k2);
            Py_DECREF(a2);
            Py_XDECREF(k2);
        }
        Py_XDECREF(m);
    }
    Py_DECREF(inputs);
    return r;
}

static PyObject *m___array_function__(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *func, *types, *fargs, *fkwargs;
    if (!PyArg_ParseTuple(args, "OOOO:__array_function__", &func, &types, &fargs, &fkwargs))
        return NULL;
    if (nd_trace_current()) {
        /* numdyn.substitute_in_graph(func): its polyfill, traced */
        PyObject *poly = nd__substitute_for(func);
        if (poly) return PyObject_Call(poly, fargs, PyDict_GET_SIZE(fkwargs) ? fkwargs : NULL);
        return escaped(nd_np.array_function(func, types, fargs, fkwargs));
    }
    PyObject *a2, *k2;
    if (nd__materialize_call(fargs, fkwargs, &a2, &k2) < 0) return NULL;
    PyObject *r = PyObject_Call(func, a2, k2);
    Py_DECREF(a2);
    Py_XDECREF(k2);
    return r;
}

#define METHOD_ENTRY(name) \
    {#name, (PyCFunction)(void (*)(void))m_##name, METH_FASTCALL | METH_KEYWORDS, NULL},

static PyObject *m_setflags(PyObject *self, PyObject *args, PyObject *kwargs);

static PyMethodDef proxy_methods[] = {
    SHIM_METHODS(METHOD_ENTRY)
    METHOD_ENTRY(__copy__) METHOD_ENTRY(__round__)
    {"setflags", (PyCFunction)(void (*)(void))m_setflags, METH_VARARGS | METH_KEYWORDS, NULL},
    METHOD_ENTRY(tobytes) METHOD_ENTRY(tofile) METHOD_ENTRY(dump) METHOD_ENTRY(dumps)
    METHOD_ENTRY(__reduce__) METHOD_ENTRY(__reduce_ex__) METHOD_ENTRY(__deepcopy__)
    METHOD_ENTRY(__format__) METHOD_ENTRY(__dlpack__) METHOD_ENTRY(__dlpack_device__)
    METHOD_ENTRY(__array_namespace__)
    {"__complex__", m___complex__, METH_NOARGS, NULL},
    {"__reversed__", m___reversed__, METH_NOARGS, NULL},
    {"__array__", (PyCFunction)(void (*)(void))m___array__, METH_VARARGS | METH_KEYWORDS, NULL},
    {"__array_ufunc__", (PyCFunction)(void (*)(void))m___array_ufunc__,
     METH_VARARGS | METH_KEYWORDS, NULL},
    {"__array_function__", (PyCFunction)(void (*)(void))m___array_function__,
     METH_VARARGS | METH_KEYWORDS, NULL},
    {NULL, NULL, 0, NULL},
};

/* --------------------------------------------------------- attributes */

static PyObject *g_shape(PyObject *o, void *c)
{
    NdProxy *p = (NdProxy *)o;
    /* an argument's own shape: dims marked dynamic stay symbolic (trace_control.h) */
    if (nd_marks_live && p->st && p->st->caller && p->identity && !p->fresh &&
        PyArray_NDIM((PyArrayObject *)p->st->caller) == p->ndim)
        return nd__ctl_shape(p->st->caller, p->ndim, p->shape);
    PyObject *t = PyTuple_New(p->ndim);
    if (!t) return NULL;
    for (int d = 0; d < p->ndim; d++) {
        PyObject *v = PyLong_FromSsize_t(p->shape[d]);
        if (!v) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, d, v);
    }
    return t;
}

static int s_shape(PyObject *o, PyObject *value, void *c)
{
    NdProxy *p = (NdProxy *)o;
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "Cannot delete array shape");
        return -1;
    }
    if (!nd__live(p)) {
        PyObject *v = nd__proxy_value(p, NULL);
        int r = v ? PyObject_SetAttrString(v, "shape", value) : -1;
        if (r == 0 && v) {  /* the detached value changed shape */
            PyArrayObject *a = (PyArrayObject *)v;
            p->ndim = (uint8_t)PyArray_NDIM(a);
            memcpy(p->shape, PyArray_DIMS(a), sizeof(npy_intp) * p->ndim);
        }
        Py_XDECREF(v);
        return r;
    }
    /* the caller's array itself changes shape, as NumPy's would */
    int own = nd__shape_set_caller(p, value);
    if (own) return own < 0 ? -1 : 0;
    PyObject *args = PyTuple_Pack(1, value);
    if (!args) return -1;
    PyObject *r = nd_np.method("reshape", o, args, NULL);
    Py_DECREF(args);
    if (!r) return -1;
    NdProxy *q = nd_proxy_check(r) ? (NdProxy *)r : NULL;
    if (!q || q->st != p->st) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_AttributeError,
                        "Incompatible shape for in-place modification. Use `.reshape()` "
                        "to make a copy with the desired shape.");
        return -1;
    }
    p->ndim = q->ndim;
    memcpy(p->shape, q->shape, sizeof(npy_intp) * q->ndim);
    memcpy(p->strides, q->strides, sizeof(npy_intp) * q->ndim);
    p->off = q->off;
    p->identity = q->identity;
    p->vnode = p->vver = ND_NONE;
    Py_DECREF(r);
    return 0;
}

static PyObject *g_dtype(PyObject *o, void *c)
{
    return (PyObject *)PyArray_DescrFromType(((NdProxy *)o)->dtype);
}

static PyObject *g_ndim(PyObject *o, void *c) { return PyLong_FromLong(((NdProxy *)o)->ndim); }
static PyObject *g_size(PyObject *o, void *c) { return PyLong_FromSsize_t(proxy_size((NdProxy *)o)); }

static Py_ssize_t itemsize(NdProxy *p)
{
    PyArray_Descr *d = PyArray_DescrFromType(p->dtype);
    if (!d) return -1;
    Py_ssize_t s = PyDataType_ELSIZE(d);
    Py_DECREF(d);
    return s;
}

static PyObject *g_itemsize(PyObject *o, void *c)
{
    Py_ssize_t s = itemsize((NdProxy *)o);
    return s < 0 ? NULL : PyLong_FromSsize_t(s);
}

static PyObject *g_nbytes(PyObject *o, void *c)
{
    Py_ssize_t s = itemsize((NdProxy *)o);
    return s < 0 ? NULL : PyLong_FromSsize_t(s * proxy_size((NdProxy *)o));
}

static PyObject *method0(PyObject *o, const char *name)
{
    return call_method(name, o, NULL, 0, NULL);
}

static PyObject *g_T(PyObject *o, void *c) { return method0(o, "transpose"); }
/* x.real / x.imag are views that writes go through (NumPy semantics) */
static PyObject *get_part(PyObject *o, int which, const char *name)
{
    NdProxy *p = (NdProxy *)o;
    int cplx = p->dtype == NPY_CFLOAT || p->dtype == NPY_CDOUBLE;
    if (!is_live_proxy(o) || p->memmap || (p->subtype && cplx)) {
        PyObject *v = user_value(p, p->memmap ? "a view of an np.memmap: NumPy runs it on the memmap"
                                 : p->subtype && is_live_proxy(o)
                                     ? "a .real/.imag view of an ndarray subclass: NumPy runs it"
                                     : NULL);
        PyObject *r = v ? PyObject_GetAttrString(v, name) : NULL;
        Py_XDECREF(v);
        return r;
    }
    PyObject *r;
    if (cplx && !p->part) {
        r = nd_proxy_part(o, which);
    } else if (which == ND_F_VIEW_REAL) {
        return Py_NewRef(o);  /* real of a real array: the array itself, as NumPy's */
    } else {
        return method0(o, name);  /* imag of a real array: read-only zeros */
    }
    if (r) ((NdProxy *)r)->is_scalar = p->is_scalar;
    return r;
}

static PyObject *g_real(PyObject *o, void *c) { return get_part(o, ND_F_VIEW_REAL, "real"); }
static PyObject *g_imag(PyObject *o, void *c) { return get_part(o, ND_F_VIEW_IMAG, "imag"); }
static PyObject *g_flat(PyObject *o, void *c) { return method0(o, "flat"); }

/* `a.flat = v` is NumPy's `a.flat[:] = v` (v repeated over a's C order) */
static int s_flat(PyObject *o, PyObject *value, void *c)
{
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "Cannot delete array flat iterator");
        return -1;
    }
    PyObject *it = method0(o, "flat");
    PyObject *all = it ? PySlice_New(NULL, NULL, NULL) : NULL;
    int r = all ? PyObject_SetItem(it, all, value) : -1;
    Py_XDECREF(all);
    Py_XDECREF(it);
    return r;
}

static PyObject *g_mT(PyObject *o, void *c)
{
    if (((NdProxy *)o)->ndim < 2) {
        PyErr_SetString(PyExc_ValueError, "matrix transpose with ndim < 2 is undefined");
        return NULL;
    }
    PyObject *args[2];
    args[0] = PyLong_FromLong(-2);
    args[1] = PyLong_FromLong(-1);
    PyObject *r = args[0] && args[1] ? call_method("swapaxes", o, args, 2, NULL) : NULL;
    Py_XDECREF(args[0]);
    Py_XDECREF(args[1]);
    return r;
}

/* x.real = v / x.imag = v: the part is not an affine view of the same
 * dtype, so the update runs on a concrete copy that becomes x's new value. */
static int set_part(PyObject *o, PyObject *value, const char *part)
{
    NdProxy *p = (NdProxy *)o;
    if (!value) {
        PyErr_Format(PyExc_AttributeError, "Cannot delete array %s part", part);
        return -1;
    }
    int cplx = p->dtype == NPY_CFLOAT || p->dtype == NPY_CDOUBLE;
    if (!cplx && part[0] == 'r' && nd__live(p)) return nd_np.setitem(o, Py_Ellipsis, value);
    if (!nd__live(p)) {
        PyObject *v = nd__proxy_value(p, NULL);
        int r = v ? PyObject_SetAttrString(v, part, value) : -1;
        Py_XDECREF(v);
        return r;
    }
    PyObject *v = nd__proxy_value(p, cplx ? "setting .real/.imag of a complex array"
                                          : "setting .imag of a real array");
    if (!v) return -1;
    PyObject *cp = PyArray_NewCopy((PyArrayObject *)v, NPY_KEEPORDER);
    Py_DECREF(v);
    if (!cp) return -1;
    PyObject *val = nd__materialize_tree(value, 1);
    int r = val ? PyObject_SetAttrString(cp, part, val) : -1;
    Py_XDECREF(val);
    if (r == 0) r = nd__proxy_write_array(p, cp);
    Py_DECREF(cp);
    return r;
}

static int s_real(PyObject *o, PyObject *v, void *c) { return set_part(o, v, "real"); }
static int s_imag(PyObject *o, PyObject *v, void *c) { return set_part(o, v, "imag"); }

/* .data (a memoryview) and .ctypes hold the array: an alias escapes when
 * they keep a reference to it. __array_interface__ / __array_struct__
 * (PIL's Image.fromarray, ctypes users) hand out the buffer's address,
 * held by nothing that refcounts it, so the alias always escapes: the proxy
 * keeps reading the array whose address went out, writes through it seen. */
static PyObject *concrete_attr(PyObject *o, const char *name, int by_address)
{
    char reason[96];
    PyOS_snprintf(reason, sizeof reason, "ndarray.%s needs the concrete array", name);
    PyObject *v = nd__proxy_value((NdProxy *)o, reason);
    if (!v) return NULL;
    PyObject *r = PyObject_GetAttrString(v, name);
    int escapes = by_address ? PyArray_Check(v) : Py_REFCNT(v) > 1;
    if (r && escapes && nd__note_escape_of(o, v) < 0) Py_CLEAR(r);
    Py_DECREF(v);
    return r;
}

static PyObject *g_concrete_attr(PyObject *o, void *c) { return concrete_attr(o, c, 0); }
static PyObject *g_interface_attr(PyObject *o, void *c) { return concrete_attr(o, c, 1); }

static PyObject *g_class(PyObject *o, void *c)
{
    /* isinstance(x, np.ndarray) holds inside compiled code as it would
     * under NumPy, and a value NumPy returns as a scalar (a.sum()) is an
     * instance of its scalar type (np.float64, so also float, np.floating,
     * np.isscalar); type(x) still names the LazyArray */
    if (((NdProxy *)o)->is_scalar) {
        PyObject *tp = PyArray_TypeObjectFromType(nd_proxy_dtype(o));
        if (tp) return tp;
        PyErr_Clear();
    }
    NdProxy *p = (NdProxy *)o;
    if (p->memmap && p->st && p->st->caller) return Py_NewRef((PyObject *)Py_TYPE(p->st->caller));
    if (p->subtype) return Py_NewRef((PyObject *)p->subtype);  /* isinstance(x, MyArr) */
    return Py_NewRef((PyObject *)&PyArray_Type);
}

static PyObject *g_priority(PyObject *o, void *c) { return PyFloat_FromDouble(1000.0); }
static PyObject *g_device(PyObject *o, void *c) { return PyUnicode_FromString("cpu"); }

static PyObject *g_is_scalar(PyObject *o, void *c)
{
    return PyBool_FromLong(((NdProxy *)o)->is_scalar);
}

static PyObject *g_live(PyObject *o, void *c) { return PyBool_FromLong(nd__live((NdProxy *)o)); }

/* ------------------------------------------------- base and flags */

/* NumPy's base: the owner of the memory a view was made from (collapsed
 * as PyArray_SetBaseObject does), the caller's own base for an argument,
 * None for a value computed inside the function */
static PyObject *g_base(PyObject *o, void *c)
{
    NdProxy *p = (NdProxy *)o;
    return Py_NewRef(p->base ? p->base : Py_None);
}

/* Read-only is a property of one array object (a view taken before
 * `Z.flags.writeable = False` stays writeable), so it lives on the proxy;
 * turning it back on follows NumPy: not for a view whose owner, or the
 * caller's array behind it, is read-only. */
static int set_writeable(NdProxy *p, PyObject *value)
{
    int w = PyObject_IsTrue(value);
    if (w < 0) return -1;
    nd_storage *st = p->st;
    if (st && st->caller && p->identity && !p->fresh && !p->part) {
        /* the argument itself: NumPy sets the caller's array's flag (seen
         * after the call); pending writes land first, NumPy decides */
        PyObject *arr = st->rebased ? st->root : st->caller;
        if (nd__flush_writes(st->trace) < 0) return -1;
        PyObject *fl = PyObject_GetAttrString(arr, "flags");
        int rc = fl ? PyObject_SetAttrString(fl, "writeable", value) : -1;
        Py_XDECREF(fl);
        if (rc < 0) return -1;
        nd_trace_not_replayable(st->trace);
        p->readonly = !w;
        return 0;
    }
    if (!w) { p->readonly = 1; return 0; }
    int owner_ro = (p->st && p->st->readonly) ||
                   (p->base && nd_proxy_check(p->base) && nd_proxy_is_readonly(p->base)) ||
                   (p->base && PyArray_Check(p->base) &&
                    !PyArray_ISWRITEABLE((PyArrayObject *)p->base));
    if (owner_ro) {
        PyErr_SetString(PyExc_ValueError, "cannot set WRITEABLE flag to True of this array");
        return -1;
    }
    p->readonly = 0;
    return 0;
}

typedef struct {
    PyObject_HEAD
    PyObject *proxy;   /* owned */
    PyObject *flags;   /* owned: the concrete array's flagsobj */
} NdFlags;

static int is_writeable_key(PyObject *name, int attr)
{
    if (!PyUnicode_Check(name)) return 0;
    if (attr) return PyUnicode_CompareWithASCIIString(name, "writeable") == 0;
    return PyUnicode_CompareWithASCIIString(name, "WRITEABLE") == 0 ||
           PyUnicode_CompareWithASCIIString(name, "W") == 0;
}

static PyObject *flags_writeable(NdFlags *f)
{
    return PyBool_FromLong(!nd_proxy_is_readonly(f->proxy));
}

static PyObject *fl_getattro(PyObject *o, PyObject *name)
{
    NdFlags *f = (NdFlags *)o;
    if (is_writeable_key(name, 1)) return flags_writeable(f);
    return PyObject_GetAttr(f->flags, name);
}

static int fl_setattro(PyObject *o, PyObject *name, PyObject *v)
{
    NdFlags *f = (NdFlags *)o;
    if (v && is_writeable_key(name, 1)) return set_writeable((NdProxy *)f->proxy, v);
    return PyObject_SetAttr(f->flags, name, v);
}

static PyObject *fl_getitem(PyObject *o, PyObject *key)
{
    NdFlags *f = (NdFlags *)o;
    if (is_writeable_key(key, 0)) return flags_writeable(f);
    return PyObject_GetItem(f->flags, key);
}

static int fl_setitem(PyObject *o, PyObject *key, PyObject *v)
{
    NdFlags *f = (NdFlags *)o;
    if (v && is_writeable_key(key, 0)) return set_writeable((NdProxy *)f->proxy, v);
    return v ? PyObject_SetItem(f->flags, key, v) : PyObject_DelItem(f->flags, key);
}

static PyObject *fl_repr(PyObject *o)
{
    NdFlags *f = (NdFlags *)o;
    PyObject *r = PyObject_Repr(f->flags);
    if (!r || !nd_proxy_is_readonly(f->proxy)) return r;
    PyObject *from = PyUnicode_FromString("WRITEABLE : True");
    PyObject *to = from ? PyUnicode_FromString("WRITEABLE : False") : NULL;
    PyObject *t = to ? PyUnicode_Replace(r, from, to, -1) : NULL;
    Py_XDECREF(from);
    Py_XDECREF(to);
    Py_DECREF(r);
    return t;
}

static void fl_dealloc(PyObject *o)
{
    NdFlags *f = (NdFlags *)o;
    Py_XDECREF(f->proxy);
    Py_XDECREF(f->flags);
    PyObject_Free(o);
}

static PyMappingMethods flags_as_mapping = {.mp_subscript = fl_getitem, .mp_ass_subscript = fl_setitem};

static PyTypeObject NdFlags_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.LazyArrayFlags",
    .tp_doc = "ndarray.flags of a lazy array: WRITEABLE is the lazy array's own.",
    .tp_basicsize = sizeof(NdFlags),
    .tp_dealloc = fl_dealloc,
    .tp_repr = fl_repr,
    .tp_getattro = fl_getattro,
    .tp_setattro = fl_setattro,
    .tp_as_mapping = &flags_as_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT,
};

static PyObject *g_flags(PyObject *o, void *c)
{
    PyObject *v = nd__proxy_value((NdProxy *)o, "ndarray.flags needs the concrete array");
    if (!v) return NULL;
    PyObject *real = PyObject_GetAttrString(v, "flags");
    Py_DECREF(v);
    if (!real) return NULL;
    NdFlags *f = PyObject_New(NdFlags, &NdFlags_Type);
    if (!f) { Py_DECREF(real); return NULL; }
    f->proxy = Py_NewRef(o);
    f->flags = real;
    return (PyObject *)f;
}

static PyObject *m_setflags(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"write", "align", "uic", NULL};
    PyObject *write = Py_None, *align = Py_None, *uic = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOO:setflags", kwlist, &write, &align, &uic))
        return NULL;
    if (align != Py_None || uic != Py_None) {
        PyObject *v = nd__proxy_value((NdProxy *)self, "ndarray.setflags(align=, uic=) needs the array");
        if (!v) return NULL;
        PyObject *r = PyObject_CallMethod(v, "setflags", "OOO", Py_None, align, uic);
        Py_DECREF(v);
        if (!r) return NULL;
        Py_DECREF(r);
    }
    if (write != Py_None && set_writeable((NdProxy *)self, write) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyGetSetDef proxy_getset[] = {
    {"shape", g_shape, s_shape, NULL, NULL},
    {"dtype", g_dtype, NULL, NULL, NULL},
    {"ndim", g_ndim, NULL, NULL, NULL},
    {"size", g_size, NULL, NULL, NULL},
    {"itemsize", g_itemsize, NULL, NULL, NULL},
    {"nbytes", g_nbytes, NULL, NULL, NULL},
    {"T", g_T, NULL, NULL, NULL},
    {"mT", g_mT, NULL, NULL, NULL},
    {"real", g_real, s_real, NULL, NULL},
    {"imag", g_imag, s_imag, NULL, NULL},
    {"flat", g_flat, s_flat, NULL, NULL},
    {"strides", g_concrete_attr, NULL, NULL, "strides"},
    {"flags", g_flags, NULL, NULL, NULL},
    {"base", g_base, NULL, NULL, NULL},
    {"data", g_concrete_attr, NULL, NULL, "data"},
    {"ctypes", g_concrete_attr, NULL, NULL, "ctypes"},
    {"__array_interface__", g_interface_attr, NULL, NULL, "__array_interface__"},
    {"__array_struct__", g_interface_attr, NULL, NULL, "__array_struct__"},
    {"__class__", g_class, NULL, NULL, NULL},
    {"__array_priority__", g_priority, NULL, NULL, NULL},
    {"device", g_device, NULL, NULL, NULL},
    {"_numdyn_is_scalar", g_is_scalar, NULL, "stands for a NumPy scalar", NULL},
    {"_numdyn_live", g_live, NULL, "belongs to the trace running on this thread", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* A NumPy scalar's own attributes (float64.is_integer, as_integer_ratio)
 * that an ndarray lacks: read on the scalar's value */
static PyObject *p_getattro(PyObject *o, PyObject *name)
{
    PyObject *r = PyObject_GenericGetAttr(o, name);
    if (r || !PyErr_ExceptionMatches(PyExc_AttributeError)) return r;
    if (((NdProxy *)o)->subtype && ((NdProxy *)o)->sdict)  /* the subclass's own attributes */
        return nd__sub_getattr((NdProxy *)o, name);
    if (((NdProxy *)o)->memmap) {  /* filename, offset, mode, flush(): the memmap's own */
        PyErr_Clear();
        PyObject *v = user_value((NdProxy *)o, "an attribute of an np.memmap: read on the memmap");
        r = v ? escaped(PyObject_GetAttr(v, name)) : NULL;
        Py_XDECREF(v);
        return r;
    }
    if (!nd_proxy_is_scalar(o)) {
        /* the function holds an ndarray: NumPy's name in the error */
        if (PyUnicode_Check(name) && PyUnicode_READ_CHAR(name, 0) != '_') {
            PyErr_Clear();
            PyErr_Format(PyExc_AttributeError, "'numpy.ndarray' object has no attribute '%U'", name);
        }
        return NULL;
    }
    if (PyUnicode_Check(name) && PyUnicode_READ_CHAR(name, 0) == '_') return NULL;
    ND_EXC_SAVE(exc);
    PyObject *tp = PyArray_TypeObjectFromType(nd_proxy_dtype(o));
    int has = tp ? PyObject_HasAttr(tp, name) : 0;
    PyErr_Clear();
    ND_EXC_RESTORE(exc);
    if (!has) {
        /* NumPy's scalar is what the function holds: its name in the error */
        if (tp) {
            PyErr_Clear();
            PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%U'",
                         ((PyTypeObject *)tp)->tp_name, name);
            Py_DECREF(tp);
        }
        return NULL;
    }
    Py_XDECREF(tp);
    PyErr_Clear();
    PyObject *v = user_value((NdProxy *)o, "an attribute of a scalar value");
    r = v ? PyObject_GetAttr(v, name) : NULL;
    Py_XDECREF(v);
    return r;
}

/* the subclass instance's attributes (x.info = ...) live in its dict;
 * the proxy's own descriptors (real, imag, flat) come first */
static int p_setattro(PyObject *o, PyObject *name, PyObject *value)
{
    NdProxy *p = (NdProxy *)o;
    if (p->subtype && p->sdict && PyUnicode_Check(name)) {
        PyObject *d = _PyType_Lookup(Py_TYPE(o), name);
        if (!d || !Py_TYPE(d)->tp_descr_set) return nd__sub_setattr(p, name, value);
    }
    return PyObject_GenericSetAttr(o, name, value);
}

PyTypeObject NdProxy_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.LazyArray",
    .tp_doc = "A lazy ndarray inside a numdyn-compiled function: operations on it are "
              "recorded into a graph and computed when a value is needed.",
    .tp_basicsize = sizeof(NdProxy),
    .tp_dealloc = p_dealloc,
    .tp_repr = p_repr,
    .tp_str = p_str,
    .tp_as_number = &proxy_as_number,
    .tp_as_sequence = &proxy_as_sequence,
    .tp_as_mapping = &proxy_as_mapping,
    .tp_as_buffer = &proxy_as_buffer,
    .tp_hash = p_hash,
    .tp_getattro = p_getattro,
    .tp_setattro = p_setattro,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_richcompare = p_richcompare,
    .tp_weaklistoffset = offsetof(NdProxy, weakrefs),
    .tp_iter = p_iter,
    .tp_methods = proxy_methods,
    .tp_getset = proxy_getset,
};

int nd__proxy_type_init(PyObject *m)
{
    if (PyType_Ready(&NdProxy_Type) < 0 || PyType_Ready(&NdProxyIter_Type) < 0 ||
        PyType_Ready(&NdFlags_Type) < 0)
        return -1;
    if (PyModule_AddObjectRef(m, "LazyArray", (PyObject *)&NdProxy_Type) < 0) return -1;
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) return -1;
    np_matmul = PyObject_GetAttrString(np, "matmul");
    Py_DECREF(np);
    str_call = PyUnicode_InternFromString("__call__");
    return np_matmul && str_call ? 0 : -1;
}
