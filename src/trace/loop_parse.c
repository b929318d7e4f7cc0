/* loop_parse.c -- a loop statement of the user's source (Python's ast) to
 * the captured-loop IR (graph/loop_ir.h), or the reason it cannot be.
 *
 * What is accepted is the scalar subset of issue 17: for over range(),
 * while, if/elif/else, break/continue/pass, assignments to names (also
 * tuples of names, n, m = A.shape), element stores A[i, j] = v and
 * A[i][j] op= v, and expressions of names, int/float/bool constants,
 * arithmetic, comparisons, and/or/not, x if c else y, element loads,
 * A.shape[k], len(A), A.size, A.ndim, and calls of math.*, np.* scalar
 * functions and abs/min/max/int/float/bool. 1-D array work too: slices
 * a[i, lo:hi:step] and rows a[i] in elementwise expressions and NumPy
 * ufunc calls, np.dot / np.sum / np.max / np.min / np.argmax / np.argmin
 * (and their methods) of them, matrix-vector products of 2-D slices
 * (M @ v, v @ M, np.dot, np.matmul), whole 1-D/2-D arrays read by name, and
 * stores a[i, lo:hi] = v, a[i] op= v. Anything else names itself and
 * its line; the loop then stays with the tracer. Whether a name is an array
 * or a scalar, and its types, are the call's business (loop_types.c).
 */
#include "trace/loop.h"
#include <string.h>

typedef struct {
    nd_lir *ir;
    PyObject *locals;     /* set of the function's local names */
    PyObject *index;      /* name -> variable number */
    int cap;
    PyObject *reason;     /* str: why not (set with result NULL, no exception) */
    int depth;
    PyObject *globals;    /* the function's globals (helpers are looked up there) */
    /* inside an inlined helper's body: its local names -> ('v', variable)
     * (an argument that is a name of the loop), ('l', binding) (LK_LETVAR),
     * ('k', type, int, float) (a constant argument or default) */
    PyObject *scope;
    PyObject *hnames;     /* with scope: the helper's local names (co_varnames) */
    PyObject *funcs;      /* name -> (function, code, defaults) of the helpers inlined */
    PyObject *inl[4];     /* the codes being inlined (no recursion) */
    int ninl;
} pctx;

static const char *kind(PyObject *o)
{
    const char *n = Py_TYPE(o)->tp_name, *d = strrchr(n, '.');
    return d ? d + 1 : n;
}
#define IS(o, s) (strcmp(kind(o), (s)) == 0)

static int line_of(PyObject *o)
{
    PyObject *l = PyObject_GetAttrString(o, "lineno");
    if (!l) { PyErr_Clear(); return 0; }
    int v = (int)PyLong_AsLong(l);
    Py_DECREF(l);
    if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
    return v;
}

static void *refuse(pctx *c, PyObject *node, const char *what)
{
    if (!c->reason && !PyErr_Occurred())
        c->reason = PyUnicode_FromFormat("%s at line %d", what, line_of(node));
    return NULL;
}

static PyObject *attr(PyObject *o, const char *name) { return PyObject_GetAttrString(o, name); }

static int var_of(pctx *c, PyObject *name)
{
    PyObject *v = PyDict_GetItemWithError(c->index, name);
    if (v) return (int)PyLong_AsLong(v);
    if (PyErr_Occurred()) return -1;
    nd_lir *ir = c->ir;
    if (ir->nvars == c->cap) {
        int nc = c->cap ? 2 * c->cap : 16;
        uint8_t *f = PyMem_Realloc(ir->vflags, (size_t)nc), *m;
        if (!f) { PyErr_NoMemory(); return -1; }
        ir->vflags = f;
        if (!(m = PyMem_Realloc(ir->vmod, (size_t)nc))) { PyErr_NoMemory(); return -1; }
        ir->vmod = m;
        c->cap = nc;
    }
    int k = ir->nvars;
    int loc = PySet_Contains(c->locals, name);
    if (loc < 0) return -1;
    ir->vflags[k] = loc ? VF_LOCAL : 0;
    ir->vmod[k] = 0;
    PyObject *kk = PyLong_FromLong(k);
    if (!kk || PyDict_SetItem(c->index, name, kk) < 0) { Py_XDECREF(kk); return -1; }
    Py_DECREF(kk);
    ir->nvars++;
    return k;
}

/* a name as the loop's variable, inside an inlined helper too: its
 * arguments that are names of the loop are those variables; its other
 * locals are no variables (-2, reason set); any other name is a global of
 * the helper, which is the function's global -- unless the function has a
 * local of that name */
static int name_var(pctx *c, PyObject *name, PyObject *node)
{
    if (c->scope) {
        PyObject *m = PyDict_GetItemWithError(c->scope, name);
        if (m) {
            if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(m, 0), "v") == 0)
                return (int)PyLong_AsLong(PyTuple_GET_ITEM(m, 1));
            if (!c->reason)
                c->reason = PyUnicode_FromFormat("a helper's local '%U' used as an array or a function at line %d",
                                                 name, line_of(node));
            return -2;
        }
        if (PyErr_Occurred()) return -1;
        int hl = PySequence_Contains(c->hnames, name);
        if (hl < 0) return -1;
        if (hl) {
            if (!c->reason)
                c->reason = PyUnicode_FromFormat("a helper's local '%U' read where it may be unbound at line %d",
                                                 name, line_of(node));
            return -2;
        }
        int loc = PySet_Contains(c->locals, name);
        if (loc < 0) return -1;
        if (loc) {
            if (!c->reason)
                c->reason = PyUnicode_FromFormat("a helper reading the global '%U', a local of the function, at line %d",
                                                 name, line_of(node));
            return -2;
        }
    }
    return var_of(c, name);
}

static nd_ln *expr(pctx *c, PyObject *e);

static const struct { const char *name; int op; } binops[] = {
    {"Add", LO_ADD}, {"Sub", LO_SUB}, {"Mult", LO_MUL}, {"Div", LO_TDIV}, {"FloorDiv", LO_FDIV},
    {"Mod", LO_MOD}, {"Pow", LO_POW}, {"LShift", LO_LSH}, {"RShift", LO_RSH},
    {"BitAnd", LO_BAND}, {"BitOr", LO_BOR}, {"BitXor", LO_BXOR}, {NULL, 0}};
static const struct { const char *name; int op; } cmpops[] = {
    {"Lt", LO_LT}, {"LtE", LO_LE}, {"Gt", LO_GT}, {"GtE", LO_GE}, {"Eq", LO_EQ}, {"NotEq", LO_NE},
    {NULL, 0}};

static int op_of(PyObject *op, int cmp)
{
    const char *k = kind(op);
    if (cmp) {
        for (int i = 0; cmpops[i].name; i++) if (!strcmp(k, cmpops[i].name)) return cmpops[i].op;
    } else {
        for (int i = 0; binops[i].name; i++) if (!strcmp(k, binops[i].name)) return binops[i].op;
    }
    return -1;
}

static const struct { const char *name; int fn; int mod; } calls[] = {
    {"sqrt", LF_M_SQRT, LM_MATH}, {"exp", LF_M_EXP, LM_MATH}, {"log", LF_M_LOG, LM_MATH},
    {"log10", LF_M_LOG10, LM_MATH}, {"log2", LF_M_LOG2, LM_MATH}, {"sin", LF_M_SIN, LM_MATH},
    {"cos", LF_M_COS, LM_MATH}, {"tan", LF_M_TAN, LM_MATH}, {"atan", LF_M_ATAN, LM_MATH},
    {"asin", LF_M_ASIN, LM_MATH}, {"acos", LF_M_ACOS, LM_MATH}, {"sinh", LF_M_SINH, LM_MATH},
    {"cosh", LF_M_COSH, LM_MATH}, {"tanh", LF_M_TANH, LM_MATH}, {"fabs", LF_M_FABS, LM_MATH},
    {"floor", LF_M_FLOOR, LM_MATH}, {"ceil", LF_M_CEIL, LM_MATH}, {"trunc", LF_M_TRUNC, LM_MATH},
    {"atan2", LF_M_ATAN2, LM_MATH}, {"hypot", LF_M_HYPOT, LM_MATH}, {"pow", LF_M_POW, LM_MATH},
    {"isnan", LF_M_ISNAN, LM_MATH}, {"isinf", LF_M_ISINF, LM_MATH},
    {"isfinite", LF_M_ISFINITE, LM_MATH}, {"log1p", LF_M_LOG1P, LM_MATH},
    {"expm1", LF_M_EXPM1, LM_MATH},
    {"sqrt", LF_NP_SQRT, LM_NUMPY}, {"exp", LF_NP_EXP, LM_NUMPY}, {"log", LF_NP_LOG, LM_NUMPY},
    {"log10", LF_NP_LOG10, LM_NUMPY}, {"log2", LF_NP_LOG2, LM_NUMPY}, {"sin", LF_NP_SIN, LM_NUMPY},
    {"cos", LF_NP_COS, LM_NUMPY}, {"tan", LF_NP_TAN, LM_NUMPY},
    {"arctan", LF_NP_ARCTAN, LM_NUMPY}, {"arcsin", LF_NP_ARCSIN, LM_NUMPY},
    {"arccos", LF_NP_ARCCOS, LM_NUMPY}, {"sinh", LF_NP_SINH, LM_NUMPY},
    {"cosh", LF_NP_COSH, LM_NUMPY}, {"tanh", LF_NP_TANH, LM_NUMPY},
    {"fabs", LF_NP_FABS, LM_NUMPY}, {"floor", LF_NP_FLOOR, LM_NUMPY},
    {"ceil", LF_NP_CEIL, LM_NUMPY}, {"trunc", LF_NP_TRUNC, LM_NUMPY},
    {"arctan2", LF_NP_ARCTAN2, LM_NUMPY}, {"hypot", LF_NP_HYPOT, LM_NUMPY},
    {"power", LF_NP_POWER, LM_NUMPY}, {"isnan", LF_NP_ISNAN, LM_NUMPY},
    {"isinf", LF_NP_ISINF, LM_NUMPY}, {"isfinite", LF_NP_ISFINITE, LM_NUMPY},
    {"log1p", LF_NP_LOG1P, LM_NUMPY}, {"expm1", LF_NP_EXPM1, LM_NUMPY},
    {"abs", LF_NP_ABS, LM_NUMPY}, {"absolute", LF_NP_ABS, LM_NUMPY},
    {"minimum", LF_NP_MINIMUM, LM_NUMPY}, {"maximum", LF_NP_MAXIMUM, LM_NUMPY},
    {"sign", LF_NP_SIGN, LM_NUMPY},
    {"square", LF_NP_SQUARE, LM_NUMPY}, {"dot", LF_NP_DOT, LM_NUMPY}, {"sum", LF_NP_SUM, LM_NUMPY},
    {"mean", LF_NP_MEAN, LM_NUMPY}, {"var", LF_NP_VAR, LM_NUMPY}, {"std", LF_NP_STD, LM_NUMPY},
    {"prod", LF_NP_PROD, LM_NUMPY},
    {"matmul", LF_NP_MATMUL, LM_NUMPY}, {"max", LF_NP_MAX, LM_NUMPY}, {"amax", LF_NP_MAX, LM_NUMPY},
    {"min", LF_NP_MIN, LM_NUMPY}, {"amin", LF_NP_MIN, LM_NUMPY}, {"argmax", LF_NP_ARGMAX, LM_NUMPY},
    {"argmin", LF_NP_ARGMIN, LM_NUMPY}, {"outer", LF_NP_OUTER, LM_NUMPY},
    {"concatenate", LF_NP_CONCATENATE, LM_NUMPY}, {"array", LF_NP_ARRAY, LM_NUMPY},
    {"flip", LF_NP_FLIP, LM_NUMPY},
    {"bool_", LF_NP_CAST + LT_B1, LM_NUMPY}, {"int8", LF_NP_CAST + LT_I1, LM_NUMPY},
    {"int16", LF_NP_CAST + LT_I2, LM_NUMPY}, {"int32", LF_NP_CAST + LT_I4, LM_NUMPY},
    {"int64", LF_NP_CAST + LT_I8, LM_NUMPY}, {"uint8", LF_NP_CAST + LT_U1, LM_NUMPY},
    {"uint16", LF_NP_CAST + LT_U2, LM_NUMPY}, {"uint32", LF_NP_CAST + LT_U4, LM_NUMPY},
    {"uint64", LF_NP_CAST + LT_U8, LM_NUMPY}, {"float32", LF_NP_CAST + LT_F4, LM_NUMPY},
    {"float64", LF_NP_CAST + LT_F8, LM_NUMPY}, {"intp", LF_NP_CAST + LT_I8, LM_NUMPY},
    {"double", LF_NP_CAST + LT_F8, LM_NUMPY}, {"single", LF_NP_CAST + LT_F4, LM_NUMPY},
    {NULL, 0, 0}};

static const struct { const char *name; int b; int fn; int nargs; } builtins[] = {
    {"abs", LB_ABS, LF_ABS, 1}, {"min", LB_MIN, LF_MIN, 2}, {"max", LB_MAX, LF_MAX, 2},
    {"int", LB_INT, LF_INT, 1}, {"float", LB_FLOAT, LF_FLOAT, 1}, {"bool", LB_BOOL, LF_BOOL, 1},
    {"round", LB_ROUND, LF_ROUND, 1},
    {NULL, 0, 0, 0}};

/* a name used as a module (math., np.) or a builtin: a guarded variable */
static int special_var(pctx *c, PyObject *name, int flag, int which, PyObject *node)
{
    int v = name_var(c, name, node);
    if (v < 0) return -1;
    uint8_t f = c->ir->vflags[v];
    if ((f & ~(VF_LOCAL | flag)) || (c->ir->vmod[v] && c->ir->vmod[v] != which)) {
        refuse(c, node, "a name used both as a value and as a module or builtin");
        return -2;
    }
    c->ir->vflags[v] |= (uint8_t)flag;
    c->ir->vmod[v] = (uint8_t)which;
    return v;
}

static int mod_of(const char *n)
{
    if (!strcmp(n, "math")) return LM_MATH;
    if (!strcmp(n, "np") || !strcmp(n, "numpy")) return LM_NUMPY;
    return 0;
}

static nd_ln *const_node(pctx *c, int line, int ty, int64_t i, double f)
{
    nd_ln *n = nd_lir_node(c->ir, LK_CONST, line, 0);
    if (!n) return NULL;
    n->aux = ty;
    n->i = i;
    n->f = f;
    return n;
}

/* an array operand: a plain name */
static int array_var(pctx *c, PyObject *e)
{
    if (!IS(e, "Name")) { refuse(c, e, "an indexed expression that is not a name"); return -2; }
    PyObject *id = attr(e, "id");
    if (!id) return -1;
    int v = name_var(c, id, e);
    Py_DECREF(id);
    if (v < 0) return v;
    if (c->ir->vflags[v] & (VF_MODULE | VF_BUILTIN)) {
        refuse(c, e, "a module or builtin indexed");
        return -2;
    }
    c->ir->vflags[v] |= VF_ARRAY;
    return v;
}

static int is_none(PyObject *o);
/* whether o is the slice ':' (no bounds, no step) */
static int whole_slice(PyObject *o)
{
    if (!IS(o, "Slice")) return 0;
    PyObject *p0 = attr(o, "lower"), *p1 = attr(o, "upper"), *p2 = attr(o, "step");
    int r = p0 == Py_None && p1 == Py_None && p2 == Py_None;
    Py_XDECREF(p0); Py_XDECREF(p1); Py_XDECREF(p2);
    return r;
}

/* a subscript x[:, None] (3), x[None, :] (4) of a name x; 0: another; -1 error */
static int newaxis_form(PyObject *e)
{
    PyObject *v = attr(e, "value"), *sl = v ? attr(e, "slice") : NULL;
    PyObject *elts = sl && IS(sl, "Tuple") ? attr(sl, "elts") : NULL;
    int r = 0;
    if (elts && IS(v, "Name") && PyList_GET_SIZE(elts) == 2) {
        PyObject *a = PyList_GET_ITEM(elts, 0), *b = PyList_GET_ITEM(elts, 1);
        if (whole_slice(a) && is_none(b)) r = 3;
        else if (is_none(a) && whole_slice(b)) r = 4;
    }
    Py_XDECREF(v); Py_XDECREF(sl); Py_XDECREF(elts);
    return PyErr_Occurred() ? -1 : r;
}

/* whether Name e names math or numpy (np.T is an attribute of a module) */
static int name_is_module(PyObject *e)
{
    PyObject *id = attr(e, "id");
    const char *vs = id ? PyUnicode_AsUTF8(id) : NULL;
    int m = vs ? mod_of(vs) != 0 : 1;
    Py_XDECREF(id);
    return m;
}

static int is_none(PyObject *o)
{
    if (o == Py_None) return 1;
    if (!IS(o, "Constant")) return 0;
    PyObject *v = attr(o, "value");
    int r = v == Py_None;
    Py_XDECREF(v);
    return r;
}

/* a slice lo:hi:step of a subscript: LK_SL */
static nd_ln *slice_node(pctx *c, PyObject *sl)
{
    static const char *const parts[3] = {"lower", "upper", "step"};
    PyObject *p[3] = {NULL, NULL, NULL};
    nd_ln *r = NULL;
    for (int k = 0; k < 3; k++)
        if (!(p[k] = attr(sl, parts[k]))) goto done;
    if (!(r = nd_lir_node(c->ir, LK_SL, line_of(sl), 3))) goto done;
    for (int k = 0; k < 3; k++)
        if (!is_none(p[k]) && !(r->kid[k] = expr(c, p[k]))) { r = NULL; break; }
    /* a step of 1 is no step */
    if (r && r->kid[2] && r->kid[2]->kind == LK_CONST && r->kid[2]->aux == LT_PYINT && r->kid[2]->i == 1)
        r->kid[2] = NULL;
done:
    for (int k = 0; k < 3; k++) Py_XDECREF(p[k]);
    return r;
}

/* the index expressions of a subscript: a[i, j] or a[i][j] -> flat list;
 * *base gets the array's node */
static int subscript(pctx *c, PyObject *e, PyObject **base, nd_ln **idx, int *nidx, int *chained)
{
    PyObject *value = attr(e, "value"), *sl = value ? attr(e, "slice") : NULL;
    int rc = -1;
    if (!sl) goto done;
    if (IS(value, "Subscript")) {
        if (subscript(c, value, base, idx, nidx, chained) != 0) { rc = c->reason ? -2 : -1; goto done; }
        /* a[i][j:k] is a[i, j:k] for integers i; a[1:3][0] is not a[1:3, 0] */
        for (int k = 0; k < *nidx; k++)
            if (idx[k]->kind == LK_SL) { refuse(c, e, "a subscript of a slice (a[i:j][k])"); rc = -2; goto done; }
        *chained = 1;
    } else {
        *base = Py_NewRef(value);
    }
    PyObject *elts = IS(sl, "Tuple") ? attr(sl, "elts") : NULL;
    if (IS(sl, "Tuple") && !elts) goto done;
    Py_ssize_t ne = elts ? PyList_GET_SIZE(elts) : 1;
    if (*nidx + ne > NDL_MAXDIMS) { Py_XDECREF(elts); refuse(c, e, "too many indices"); rc = -2; goto done; }
    for (Py_ssize_t k = 0; k < ne; k++) {
        PyObject *ie = elts ? PyList_GET_ITEM(elts, k) : sl;
        int bad_const = 0;
        if (IS(ie, "Constant")) {
            PyObject *cv = attr(ie, "value");
            bad_const = !cv || !PyLong_Check(cv) || PyBool_Check(cv);
            Py_XDECREF(cv);
        }
        if (IS(ie, "Slice")) {
            /* lo:hi, step 1: a 1-D vector axis (typing checks the rest) */
            nd_ln *x = slice_node(c, ie);
            if (!x) {
                Py_XDECREF(elts);
                rc = c->reason ? -2 : -1;
                goto done;
            }
            idx[(*nidx)++] = x;
            continue;
        }
        if (IS(ie, "Starred") || bad_const) {
            PyErr_Clear();
            Py_XDECREF(elts);
            refuse(c, ie, "an index that is not an integer");
            rc = -2;
            goto done;
        }
        nd_ln *x = expr(c, ie);
        if (!x) { Py_XDECREF(elts); rc = c->reason ? -2 : -1; goto done; }
        idx[(*nidx)++] = x;
    }
    Py_XDECREF(elts);
    rc = 0;
done:
    Py_XDECREF(value);
    Py_XDECREF(sl);
    return rc;
}

static nd_ln *elem(pctx *c, PyObject *e, int kindv, int *arr)
{
    nd_ln *idx[NDL_MAXDIMS];
    int nidx = 0, chained = 0;
    PyObject *base = NULL;
    if (subscript(c, e, &base, idx, &nidx, &chained) != 0) { Py_XDECREF(base); return NULL; }
    /* A.shape[k] */
    if (IS(base, "Attribute")) {
        PyObject *a = attr(base, "attr"), *v = a ? attr(base, "value") : NULL;
        nd_ln *r = NULL;
        if (v && kindv == LK_ELEM && nidx == 1 && idx[0]->kind == LK_CONST && idx[0]->aux == LT_PYINT &&
            PyUnicode_CompareWithASCIIString(a, "shape") == 0) {
            int av = array_var(c, v);
            if (av >= 0 && (r = nd_lir_node(c->ir, LK_SHAPE, line_of(e), 0))) {
                r->var = av;
                r->aux = (int)idx[0]->i;
                r->i = 1;   /* an explicit A.shape[k]: k may be negative */
            }
        } else if (v) {
            refuse(c, e, "a subscript of an attribute");
        }
        Py_XDECREF(a);
        Py_XDECREF(v);
        Py_DECREF(base);
        return r;
    }
    int av = array_var(c, base);
    Py_DECREF(base);
    if (av < 0) return NULL;
    if (kindv == LK_ELEM)
        for (int k = 0; k < nidx; k++) if (idx[k]->kind == LK_SL) kindv = LK_SLICE;
    nd_ln *n = nd_lir_node(c->ir, kindv, line_of(e), kindv == LK_ELEM || kindv == LK_SLICE ? nidx : nidx + 1);
    if (!n) return NULL;
    n->var = av;
    n->aux = chained;
    for (int k = 0; k < nidx; k++) n->kid[kindv == LK_ELEM || kindv == LK_SLICE ? k : k + 1] = idx[k];
    if (arr) *arr = av;
    return n;
}

/* x.sum(), x.max(), ..., x.dot(y): the reductions np.sum(x), np.dot(x, y) */
static const struct { const char *name; int fn; } methods[] = {
    {"sum", LF_NP_SUM}, {"mean", LF_NP_MEAN}, {"var", LF_NP_VAR}, {"std", LF_NP_STD}, {"prod", LF_NP_PROD},
    {"max", LF_NP_MAX}, {"min", LF_NP_MIN}, {"argmax", LF_NP_ARGMAX},
    {"argmin", LF_NP_ARGMIN}, {"dot", LF_NP_DOT}, {NULL, 0}};

static int is_reduction_method(const char *name, Py_ssize_t nargs)
{
    for (int k = 0; methods[k].name; k++)
        if (!strcmp(name, methods[k].name)) return nargs == (methods[k].fn == LF_NP_DOT);
    return 0;
}

static nd_ln *reduction_method(pctx *c, PyObject *obj, const char *name, PyObject *args, int line)
{
    int fn = LF_NP_SUM;
    for (int k = 0; methods[k].name; k++) if (!strcmp(name, methods[k].name)) fn = methods[k].fn;
    int one = fn != LF_NP_DOT;
    nd_ln *r = nd_lir_node(c->ir, LK_CALL, line, one ? 1 : 2);
    if (!r) return NULL;
    r->aux = fn;
    if (!(r->kid[0] = expr(c, obj))) return NULL;
    if (!one && !(r->kid[1] = expr(c, PyList_GET_ITEM(args, 0)))) return NULL;
    return r;
}

/* ------------------------------------------------ inlined helpers */
/* a Name of a helper's scope: ('v', var) -> var (the caller makes the
 * LK_VAR); ('l', b) / ('k', ...) -> *r, and -3 */
static int scoped(pctx *c, PyObject *m, int line, nd_ln **r)
{
    const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(m, 0));
    if (!k) return -1;
    if (k[0] == 'v') return (int)PyLong_AsLong(PyTuple_GET_ITEM(m, 1));
    if (k[0] == 'l') {
        if ((*r = nd_lir_node(c->ir, LK_LETVAR, line, 0))) (*r)->aux = (int)PyLong_AsLong(PyTuple_GET_ITEM(m, 1));
    } else {
        *r = const_node(c, line, (int)PyLong_AsLong(PyTuple_GET_ITEM(m, 1)),
                        PyLong_AsLongLong(PyTuple_GET_ITEM(m, 2)), PyFloat_AsDouble(PyTuple_GET_ITEM(m, 3)));
    }
    return -3;
}

/* scope[name] = ('l', b) for a new binding b of value x: the LK_LET (its
 * kid[1] filled by the caller), or NULL */
static nd_ln *let_bind(pctx *c, PyObject *name, nd_ln *x, int line)
{
    if (!x) return NULL;
    if (c->ir->nlets >= LLET_MAX) {
        if (!c->reason && !PyErr_Occurred())
            c->reason = PyUnicode_FromFormat("more than %d helper locals in a loop at line %d", LLET_MAX, line);
        return NULL;
    }
    nd_ln *l = nd_lir_node(c->ir, LK_LET, line, 2);
    if (!l) return NULL;
    l->aux = c->ir->nlets++;
    l->kid[0] = x;
    c->ir->lets[l->aux] = l;
    PyObject *m = Py_BuildValue("(si)", "l", l->aux);
    if (!m || PyDict_SetItem(c->scope, name, m) < 0) { Py_XDECREF(m); return NULL; }
    Py_DECREF(m);
    return l;
}

/* a Python constant the loop computes with: ('k', type, int, float), else
 * NULL (no exception) */
static PyObject *const_entry(PyObject *v)
{
    if (PyBool_Check(v)) return Py_BuildValue("(sili)", "k", LT_PYBOOL, v == Py_True, 0);
    if (PyLong_CheckExact(v)) {
        int of = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &of);
        if (of || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); return NULL; }
        return Py_BuildValue("(siLd)", "k", LT_PYINT, x, 0.0);
    }
    if (PyFloat_CheckExact(v)) return Py_BuildValue("(siid)", "k", LT_PYFLOAT, 0, PyFloat_AS_DOUBLE(v));
    return NULL;
}

/* statements body[k:] ++ rest of a helper as one expression: its
 * assignments to names bind (LK_LET) the rest, an if is a conditional
 * expression of both ways on (each with the statements after it), return
 * ends it. The scope is the caller's: it is restored here */
static nd_ln *helper_body(pctx *c, PyObject *body, Py_ssize_t k, PyObject *fname)
{
    Py_ssize_t n = PyList_GET_SIZE(body);
    if (++c->depth > 200) { c->depth--; return refuse(c, PyList_GET_ITEM(body, 0), "a helper nested too deeply"); }
    nd_ln *r = NULL;
    PyObject *saved = PyDict_Copy(c->scope);
    if (!saved) goto out;
    while (k < n) {
        PyObject *s = PyList_GET_ITEM(body, k);
        if (IS(s, "Pass")) { k++; continue; }
        if (IS(s, "Expr")) {
            PyObject *v = attr(s, "value");
            int doc = v && IS(v, "Constant");
            Py_XDECREF(v);
            if (doc) { k++; continue; }
        }
        break;
    }
    if (k == n) {
        if (!c->reason) c->reason = PyUnicode_FromFormat("a helper %U() that can return None", fname);
        goto out;
    }
    PyObject *s = PyList_GET_ITEM(body, k);
    int line = line_of(s);
    if (IS(s, "Return")) {
        PyObject *v = attr(s, "value");
        if (v && v != Py_None) r = expr(c, v);
        else if (v && !c->reason) c->reason = PyUnicode_FromFormat("a helper %U() that can return None", fname);
        Py_XDECREF(v);
    } else if (IS(s, "Assign") || IS(s, "AugAssign") || IS(s, "AnnAssign")) {
        PyObject *t = NULL, *v = attr(s, "value"), *name = NULL;
        if (IS(s, "Assign")) {
            PyObject *ts = attr(s, "targets");
            if (ts && PyList_GET_SIZE(ts) == 1) t = Py_NewRef(PyList_GET_ITEM(ts, 0));
            Py_XDECREF(ts);
        } else {
            t = attr(s, "target");
        }
        if (t && IS(t, "Name")) name = attr(t, "id");
        nd_ln *x = NULL;
        if (!name || !v || v == Py_None) {
            if (!PyErr_Occurred()) refuse(c, s, "a helper's assignment to other than one name");
        } else if (IS(s, "AugAssign")) {
            PyObject *op = attr(s, "op");
            int o = op ? op_of(op, 0) : -1;
            nd_ln *cur = NULL;
            PyObject *m = op ? PyDict_GetItemWithError(c->scope, name) : NULL;
            if (o < 0 && op) refuse(c, s, "the @= operator");
            else if (m) {
                int cv = scoped(c, m, line, &cur);
                if (cv >= 0 && (cur = nd_lir_node(c->ir, LK_VAR, line, 0))) {
                    cur->var = cv;
                    c->ir->vflags[cv] |= VF_READ;
                }
            }
            else if (op && !PyErr_Occurred()) refuse(c, s, "a helper's augmented assignment to a name it has not bound");
            if (cur && (x = nd_lir_node(c->ir, LK_BIN, line, 2))) {
                x->op = (uint8_t)o;
                x->kid[0] = cur;
                if (!(x->kid[1] = expr(c, v))) x = NULL;
            }
            Py_XDECREF(op);
        } else {
            x = expr(c, v);
        }
        nd_ln *l = x ? let_bind(c, name, x, line) : NULL;
        if (l && !(l->kid[1] = helper_body(c, body, k + 1, fname))) l = NULL;
        r = l;
        Py_XDECREF(t);
        Py_XDECREF(v);
        Py_XDECREF(name);
    } else if (IS(s, "If")) {
        PyObject *t = attr(s, "test"), *b = t ? attr(s, "body") : NULL, *o = b ? attr(s, "orelse") : NULL;
        PyObject *rest = o ? PyList_GetSlice(body, k + 1, n) : NULL;
        PyObject *yes = rest ? PySequence_Concat(b, rest) : NULL, *no = yes ? PySequence_Concat(o, rest) : NULL;
        if (no && (r = nd_lir_node(c->ir, LK_IFEXP, line, 3)))
            if (!(r->kid[0] = expr(c, t)) || !(r->kid[1] = helper_body(c, yes, 0, fname)) ||
                !(r->kid[2] = helper_body(c, no, 0, fname)))
                r = NULL;
        Py_XDECREF(t); Py_XDECREF(b); Py_XDECREF(o); Py_XDECREF(rest); Py_XDECREF(yes); Py_XDECREF(no);
    } else {
        char what[120];
        snprintf(what, sizeof what, "a helper's statement of kind %s", kind(s));
        refuse(c, s, what);
    }
out:
    if (saved) {
        if (PyDict_Clear(c->scope), PyDict_Update(c->scope, saved) < 0) r = NULL;
        Py_DECREF(saved);
    }
    c->depth--;
    return r;
}

/* f(args) of a user function f, a global of the function: its body, when
 * it is a small scalar helper (assignments to its own names, if/else and
 * return), as an expression of the loop: each argument bound in turn,
 * then the body. A name argument the helper never rebinds is that name
 * (an array the helper indexes, too). The region checks at each call that
 * the global is still this function with this code and defaults
 * (loop_run.c); anything else is refused with the reason */
static nd_ln *inline_call(pctx *c, PyObject *e, PyObject *id, PyObject *fn, PyObject *args)
{
    int line = line_of(e);
    PyCodeObject *co = (PyCodeObject *)PyFunction_GET_CODE(fn);
    PyObject *defaults = PyFunction_GET_DEFAULTS(fn);
    Py_ssize_t na = PyList_GET_SIZE(args), nd = defaults ? PyTuple_GET_SIZE(defaults) : 0;
    const char *why = NULL;
    if (PyFunction_GET_GLOBALS(fn) != c->globals) why = "is a function of another module";
    else if (PyFunction_GET_CLOSURE(fn) || PyFunction_GET_KW_DEFAULTS(fn)) why = "has a closure or keyword-only defaults";
    else if (co->co_flags & (CO_VARARGS | CO_VARKEYWORDS | CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR |
                             CO_ITERABLE_COROUTINE))
        why = "takes *args or **kwargs, or is a generator";
    else if (co->co_kwonlyargcount || na > co->co_argcount || na + nd < co->co_argcount)
        why = "is called with another number of arguments";
    else if (c->ninl == 4) why = "nests helpers more than 4 deep";
    for (int k = 0; !why && k < c->ninl; k++) if (c->inl[k] == (PyObject *)co) why = "is recursive";
    if (why) {
        if (!c->reason) c->reason = PyUnicode_FromFormat("a call of %U() at line %d: the helper %s", id, line, why);
        return NULL;
    }
    PyObject *names = PyObject_GetAttrString((PyObject *)co, "co_varnames");
    PyObject *cells = names ? PyObject_GetAttrString((PyObject *)co, "co_cellvars") : NULL;
    PyObject *insp = cells ? PyImport_ImportModule("inspect") : NULL, *tw = insp ? PyImport_ImportModule("textwrap") : NULL;
    PyObject *ast = tw ? PyImport_ImportModule("ast") : NULL;
    PyObject *src = NULL, *ded = NULL, *tree = NULL, *b = NULL, *fdef = NULL, *body = NULL, *scope = NULL;
    PyObject *outer = c->scope;
    nd_ln *r = NULL, *head = NULL, **hole = &head;
    if (!ast) goto done;
    if (PyTuple_GET_SIZE(cells)) { why = "has locals a nested function reads"; goto done; }
    if (!(src = PyObject_CallMethod(insp, "getsource", "O", fn))) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) goto done;
        PyErr_Clear();
        why = "has no source";
        goto done;
    }
    if (!(ded = PyObject_CallMethod(tw, "dedent", "O", src)) || !(tree = PyObject_CallMethod(ast, "parse", "O", ded))) {
        if (!PyErr_Occurred() || !PyErr_ExceptionMatches(PyExc_SyntaxError)) goto done;
        PyErr_Clear();
        why = "has no source";
        goto done;
    }
    {
        PyObject *inc = PyObject_CallMethod(ast, "increment_lineno", "Oi", tree, co->co_firstlineno - 1);
        if (!inc) goto done;
        Py_DECREF(inc);
    }
    if (!(b = attr(tree, "body"))) goto done;
    fdef = PyList_GET_SIZE(b) == 1 ? Py_NewRef(PyList_GET_ITEM(b, 0)) : NULL;
    if (!fdef || !IS(fdef, "FunctionDef")) { why = "is not a def statement"; goto done; }
    {
        PyObject *nm = attr(fdef, "name");
        int same = nm && PyUnicode_Compare(nm, co->co_name) == 0;
        Py_XDECREF(nm);
        if (PyErr_Occurred()) goto done;
        if (!same) { why = "is not a def statement"; goto done; }
    }
    if (!(body = attr(fdef, "body")) || !(scope = PyDict_New())) goto done;
    /* the arguments, in the caller's scope, left to right */
    Py_ssize_t nlet = 0;
    nd_ln *lets[64];
    for (Py_ssize_t k = 0; k < co->co_argcount; k++) {
        PyObject *pn = PyTuple_GET_ITEM(names, k), *m = NULL;
        if (k >= na) {
            PyObject *d = PyTuple_GET_ITEM(defaults, nd - (co->co_argcount - k));
            if (!(m = const_entry(d))) {
                if (!PyErr_Occurred()) why = "has a default that is not an int, float or bool";
                goto done;
            }
        } else {
            PyObject *a = PyList_GET_ITEM(args, k);
            int rebinds = 0;
            /* the helper's code stores the parameter: a name argument is
             * then a binding of its own */
            {
                PyObject *w = PyObject_CallMethod(ast, "walk", "O", fdef), *x;
                if (!w) goto done;
                while ((x = PyIter_Next(w))) {
                    if (IS(x, "Name")) {
                        PyObject *ctx = attr(x, "ctx"), *xid = ctx ? attr(x, "id") : NULL;
                        if (xid && !IS(ctx, "Load") && PyUnicode_Compare(xid, pn) == 0) rebinds = 1;
                        Py_XDECREF(ctx);
                        Py_XDECREF(xid);
                    }
                    Py_DECREF(x);
                }
                Py_DECREF(w);
                if (PyErr_Occurred()) goto done;
            }
            if (IS(a, "Constant")) {
                PyObject *v = attr(a, "value");
                m = v ? const_entry(v) : NULL;
                Py_XDECREF(v);
                if (PyErr_Occurred()) goto done;
            }
            if (!m && IS(a, "Name") && !rebinds) {
                PyObject *aid = attr(a, "id");
                PyObject *am = aid && outer ? PyDict_GetItemWithError(outer, aid) : NULL;
                if (am) m = Py_NewRef(am);
                else if (aid && !PyErr_Occurred()) {
                    int v = name_var(c, aid, a);
                    if (v >= 0) {
                        if (c->ir->vflags[v] & (VF_MODULE | VF_BUILTIN)) {
                            refuse(c, a, "a module or builtin used as a value");
                            v = -2;
                        } else {
                            c->ir->vflags[v] |= VF_READ;
                            m = Py_BuildValue("(si)", "v", v);
                        }
                    }
                }
                Py_XDECREF(aid);
                if (!m) goto done;
            }
            if (!m) {
                /* the argument's value once, in the caller's scope */
                nd_ln *x = expr(c, a);
                if (!x) goto done;
                if (nlet == 64) { why = "takes too many arguments"; goto done; }
                PyObject *keep = c->scope;
                c->scope = scope;
                nd_ln *l = let_bind(c, pn, x, line);
                c->scope = keep;
                if (!l) goto done;
                lets[nlet++] = l;
                continue;
            }
        }
        if (PyDict_SetItem(scope, pn, m) < 0) { Py_DECREF(m); goto done; }
        Py_DECREF(m);
    }
    /* the helper's other locals: bound by its own assignments */
    {
        int fv = special_var(c, id, VF_MODULE, LM_FUNC, e);
        if (fv < 0) goto done;
        PyObject *want = Py_BuildValue("(OOO)", fn, (PyObject *)co, defaults ? defaults : Py_None);
        if (!want || PyDict_SetItem(c->funcs, id, want) < 0) { Py_XDECREF(want); goto done; }
        Py_DECREF(want);
    }
    PyObject *outer_names = c->hnames;
    c->scope = scope;
    c->hnames = names;
    c->inl[c->ninl++] = (PyObject *)co;
    nd_ln *val = helper_body(c, body, 0, id);
    c->ninl--;
    c->scope = outer;
    c->hnames = outer_names;
    if (!val && c->reason && c->ninl == 0) {
        /* the call's line first: the helper's own lines are elsewhere */
        PyObject *w = PyUnicode_FromFormat("a call of %U() at line %d: %U", id, line, c->reason);
        if (!w) goto done;
        Py_SETREF(c->reason, w);
    }
    if (!val) goto done;
    for (Py_ssize_t k = 0; k < nlet; k++) { *hole = lets[k]; hole = &lets[k]->kid[1]; }
    *hole = val;
    r = head;
done:
    if (!r && why && !c->reason && !PyErr_Occurred())
        c->reason = PyUnicode_FromFormat("a call of %U() at line %d: the helper %s", id, line, why);
    c->scope = outer;
    Py_XDECREF(names); Py_XDECREF(cells); Py_XDECREF(insp); Py_XDECREF(tw); Py_XDECREF(ast);
    Py_XDECREF(src); Py_XDECREF(ded); Py_XDECREF(tree); Py_XDECREF(b); Py_XDECREF(fdef); Py_XDECREF(body);
    Py_XDECREF(scope);
    return r;
}

/* np.linalg.inv(M) (LF_NP_INV), np.linalg.norm(v) (LF_NP_NORM: the 2-norm
 * of a 1-D float array, typing): fn with *v the module's variable (np's),
 * or -1 */
static int linalg_call(pctx *c, PyObject *mv, PyObject *an, Py_ssize_t na, PyObject *e, int *v)
{
    int which = PyUnicode_CompareWithASCIIString(an, "inv") == 0     ? LF_NP_INV
                : PyUnicode_CompareWithASCIIString(an, "norm") == 0 ? LF_NP_NORM
                                                                    : -1;
    if (na != 1 || !IS(mv, "Attribute") || which < 0) return -1;
    PyObject *ln = attr(mv, "attr"), *npn = ln ? attr(mv, "value") : NULL;
    int fn = -1;
    if (npn && PyUnicode_CompareWithASCIIString(ln, "linalg") == 0 && IS(npn, "Name")) {
        PyObject *id = attr(npn, "id");
        const char *ms = id ? PyUnicode_AsUTF8(id) : NULL;
        if (ms && mod_of(ms) == LM_NUMPY) {
            fn = which;
            *v = special_var(c, id, VF_MODULE, LM_NUMPY, e);
        }
        Py_XDECREF(id);
    }
    Py_XDECREF(ln);
    Py_XDECREF(npn);
    return fn;
}

/* the dtype a dtype= argument names: np.float32 & co. (the scalar types
 * loops compute in), float, int, bool; -1: another (reason set), -2: error */
static int dtype_arg(pctx *c, PyObject *d)
{
    if (IS(d, "Attribute")) {
        PyObject *mv = attr(d, "value"), *an = mv ? attr(d, "attr") : NULL, *id = NULL;
        int t = -1;
        if (an && IS(mv, "Name") && (id = attr(mv, "id"))) {
            const char *ms = PyUnicode_AsUTF8(id), *as = PyUnicode_AsUTF8(an);
            if (ms && as && mod_of(ms) == LM_NUMPY)
                for (int k = 0; calls[k].name; k++)
                    if (calls[k].mod == LM_NUMPY && calls[k].fn >= LF_NP_CAST && !strcmp(as, calls[k].name)) {
                        t = calls[k].fn - LF_NP_CAST;
                        break;
                    }
            if (t >= 0 && special_var(c, id, VF_MODULE, LM_NUMPY, d) < 0) t = -1;
        }
        Py_XDECREF(mv); Py_XDECREF(an); Py_XDECREF(id);
        if (PyErr_Occurred()) return -2;
        if (t < 0) refuse(c, d, "a new array of a dtype loops do not compute in");
        return t;
    }
    if (IS(d, "Name")) {
        PyObject *id = attr(d, "id");
        const char *s = id ? PyUnicode_AsUTF8(id) : NULL;
        int t = !s ? -1 : !strcmp(s, "float") ? LT_F8 : !strcmp(s, "int") ? LT_I8 : !strcmp(s, "bool") ? LT_B1 : -1;
        int b = t == LT_F8 ? LB_FLOAT : t == LT_I8 ? LB_INT : LB_BOOL;
        if (t >= 0 && special_var(c, id, VF_BUILTIN, b, d) < 0) t = -1;
        Py_XDECREF(id);
        if (PyErr_Occurred()) return -2;
        if (t < 0) refuse(c, d, "a new array of a dtype loops do not compute in");
        return t;
    }
    refuse(c, d, "a new array of a dtype loops do not compute in");
    return -1;
}

/* np.zeros(shape), np.empty(shape), np.ones(shape) [, dtype] made in the
 * loop (a fresh array each time: loop_types.c takes it as an assignment's
 * whole value, as x.copy()): 0 not such a call, 1 handled (*out the node,
 * or NULL with the reason or an error) */
static int new_array(pctx *c, PyObject *e, PyObject *f, PyObject *args, PyObject *kw, nd_ln **out)
{
    PyObject *mv = attr(f, "value"), *an = mv ? attr(f, "attr") : NULL, *id = NULL, *shp = NULL;
    int rc = 1, la = -1, dt = LT_F8;
    *out = NULL;
    if (!an) goto done;
    const char *as = PyUnicode_AsUTF8(an);
    if (!as) goto done;
    la = !strcmp(as, "zeros") ? LA_ZEROS_N : !strcmp(as, "empty") ? LA_EMPTY_N : !strcmp(as, "ones") ? LA_ONES_N : -1;
    if (la < 0 || !IS(mv, "Name") || !(id = attr(mv, "id"))) { rc = PyErr_Occurred() ? 1 : 0; goto done; }
    const char *ms = PyUnicode_AsUTF8(id);
    if (!ms) goto done;
    if (mod_of(ms) != LM_NUMPY) { rc = 0; goto done; }
    Py_ssize_t na = PyList_GET_SIZE(args), nk = PyList_GET_SIZE(kw);
    PyObject *dobj = na == 2 ? PyList_GET_ITEM(args, 1) : NULL;
    if (na < 1 || na > 2 || nk > 1 || (nk && dobj)) { refuse(c, e, "a new array (np.zeros/np.empty/np.ones) with arguments other than a shape and a dtype"); goto done; }
    if (nk) {
        PyObject *k0 = PyList_GET_ITEM(kw, 0), *kn = attr(k0, "arg");
        int isdt = kn && kn != Py_None && PyUnicode_CompareWithASCIIString(kn, "dtype") == 0;
        Py_XDECREF(kn);
        if (!isdt) { if (!PyErr_Occurred()) refuse(c, e, "a new array (np.zeros/np.empty/np.ones) with arguments other than a shape and a dtype"); goto done; }
        if (!(dobj = attr(k0, "value"))) goto done;
        dt = dtype_arg(c, dobj);
        Py_DECREF(dobj);
    } else if (dobj) {
        dt = dtype_arg(c, dobj);
    }
    if (dt < 0) goto done;
    shp = PyList_GET_ITEM(args, 0);
    PyObject *elts = IS(shp, "Tuple") || IS(shp, "List") ? attr(shp, "elts") : NULL;
    Py_ssize_t nd = elts ? PyList_GET_SIZE(elts) : 1;
    if ((elts || IS(shp, "Tuple") || IS(shp, "List")) && (!elts || nd < 1 || nd > NDL_MAXDIMS)) {
        Py_XDECREF(elts);
        if (!PyErr_Occurred()) refuse(c, e, "a new array of no dimensions or too many");
        shp = NULL;
        goto done;
    }
    if (special_var(c, id, VF_MODULE, LM_NUMPY, e) < 0) { Py_XDECREF(elts); shp = NULL; goto done; }
    nd_ln *r = nd_lir_node(c->ir, LK_ALLOC, line_of(e), (int)nd);
    if (r) {
        r->aux = la;
        r->i = dt;
        for (Py_ssize_t k = 0; k < nd; k++)
            if (!(r->kid[k] = expr(c, elts ? PyList_GET_ITEM(elts, k) : shp))) { r = NULL; break; }
    }
    Py_XDECREF(elts);
    shp = NULL;
    if (r) c->ir->nalloc++;
    *out = r;
done:
    Py_XDECREF(mv); Py_XDECREF(an); Py_XDECREF(id);
    return rc;
}

static nd_ln *call(pctx *c, PyObject *e)
{
    PyObject *f = attr(e, "func"), *args = f ? attr(e, "args") : NULL;
    PyObject *kw = args ? attr(e, "keywords") : NULL;
    nd_ln *r = NULL;
    if (!kw) goto done;
    int line = line_of(e);
    Py_ssize_t na = PyList_GET_SIZE(args);
    /* axis=k (an integer written out) of np.max/min/argmax/argmin and
     * their methods: LK_CALL's op is k + 3 (0: no axis) */
    int kaxis = 0;
    if (IS(f, "Attribute") && new_array(c, e, f, args, kw, &r)) goto done;
    if (PyList_GET_SIZE(kw)) {
        PyObject *k0 = PyList_GET_ITEM(kw, 0), *kn = attr(k0, "arg"), *kv = kn ? attr(k0, "value") : NULL;
        int neg = 0;
        if (kv && IS(kv, "UnaryOp")) {   /* axis=-1 */
            PyObject *op = attr(kv, "op"), *x = op ? attr(kv, "operand") : NULL;
            neg = op && IS(op, "USub");
            Py_XDECREF(op);
            Py_SETREF(kv, neg ? x : NULL);
            if (!neg) Py_XDECREF(x);
        }
        PyObject *cv = kv && IS(kv, "Constant") ? attr(kv, "value") : NULL;
        if (PyList_GET_SIZE(kw) == 1 && kn != Py_None && kn && PyUnicode_CompareWithASCIIString(kn, "axis") == 0 &&
            cv && PyLong_Check(cv) && !PyBool_Check(cv)) {
            long ax = PyLong_AsLong(cv) * (neg ? -1 : 1);
            if (ax >= -2 && ax <= 1) kaxis = (int)ax + 3;
        }
        Py_XDECREF(kn); Py_XDECREF(kv); Py_XDECREF(cv);
        if (PyErr_Occurred()) goto done;
        if (!kaxis) { refuse(c, e, "a call with keyword arguments"); goto done; }
    }
    for (Py_ssize_t k = 0; k < na; k++)
        if (IS(PyList_GET_ITEM(args, k), "Starred")) { refuse(c, e, "a call with *args"); goto done; }
    int fn = -1, v = -1;
    if (IS(f, "Name")) {
        PyObject *id = attr(f, "id");
        if (!id) goto done;
        const char *s = PyUnicode_AsUTF8(id);
        if (!s) { Py_DECREF(id); goto done; }
        {
            /* a user function, a global of the function: inlined */
            int loc = PySet_Contains(c->locals, id);
            int sc = loc || !c->scope ? 0 : PyDict_Contains(c->scope, id);
            PyObject *g = loc || sc || !c->globals ? NULL : PyDict_GetItemWithError(c->globals, id);
            if (loc < 0 || sc < 0 || (!g && PyErr_Occurred())) { Py_DECREF(id); goto done; }
            if (g && PyFunction_Check(g)) {
                r = inline_call(c, e, id, g, args);
                Py_DECREF(id);
                goto done;
            }
        }
        if (!strcmp(s, "len") && na == 1) {
            Py_DECREF(id);
            int av = array_var(c, PyList_GET_ITEM(args, 0));
            if (av < 0) goto done;
            v = -1;
            PyObject *lid = PyUnicode_FromString("len");
            int lv = lid ? special_var(c, lid, VF_BUILTIN, LB_LEN, e) : -1;
            Py_XDECREF(lid);
            if (lv < 0) goto done;
            if ((r = nd_lir_node(c->ir, LK_SHAPE, line, 0))) { r->var = av; r->aux = 0; }
            goto done;
        }
        for (int k = 0; builtins[k].name; k++)
            if (!strcmp(s, builtins[k].name) &&
                (na == builtins[k].nargs || ((builtins[k].b == LB_INT || builtins[k].b == LB_FLOAT ||
                                              builtins[k].b == LB_BOOL) && na == 0) ||
                 ((builtins[k].b == LB_MIN || builtins[k].b == LB_MAX) && na > 2))) {
                if ((v = special_var(c, id, VF_BUILTIN, builtins[k].b, e)) < 0) break;
                fn = builtins[k].fn;
                break;
            }
        if (fn < 0 && !c->reason && !PyErr_Occurred())
            c->reason = PyUnicode_FromFormat("a call of %U() at line %d", id, line);
        Py_DECREF(id);
        if (fn < 0) goto done;
    } else if (IS(f, "Attribute")) {
        PyObject *mv = attr(f, "value"), *an = mv ? attr(f, "attr") : NULL;
        if (!an) { Py_XDECREF(mv); goto done; }
        if (na == 1 && IS(mv, "Attribute") && PyUnicode_CompareWithASCIIString(an, "type") == 0) {
            /* x.dtype.type(v): NumPy's scalar of x's dtype (acc = A.dtype.type(0)) */
            PyObject *dn = attr(mv, "attr"), *xv = dn ? attr(mv, "value") : NULL;
            int is_dt = xv && PyUnicode_CompareWithASCIIString(dn, "dtype") == 0 && IS(xv, "Name");
            if (is_dt) {
                PyObject *id = attr(xv, "id");
                const char *xs = id ? PyUnicode_AsUTF8(id) : NULL;
                is_dt = xs && !mod_of(xs);
                Py_XDECREF(id);
            }
            if (is_dt) {
                int av = array_var(c, xv);
                if (av >= 0 && (r = nd_lir_node(c->ir, LK_CALL, line, 1))) {
                    r->aux = LF_NP_CAST;
                    r->i = LCALL_DTYPE;
                    r->var = av;
                    if (!(r->kid[0] = expr(c, PyList_GET_ITEM(args, 0)))) r = NULL;
                }
                Py_XDECREF(dn);
                Py_XDECREF(xv);
                Py_DECREF(an);
                Py_DECREF(mv);
                goto done;
            }
            Py_XDECREF(dn);
            Py_XDECREF(xv);
            if (PyErr_Occurred()) { Py_DECREF(an); Py_DECREF(mv); goto done; }
        }
        if (IS(mv, "Name")) {
            PyObject *id = attr(mv, "id");
            const char *ms = id ? PyUnicode_AsUTF8(id) : NULL, *as = PyUnicode_AsUTF8(an);
            int m = ms ? mod_of(ms) : 0;
            int la = !as ? -1 : (!m && na == 0 && !strcmp(as, "copy")) ? LA_COPY_C
                   : m != LM_NUMPY || na != 1 ? -1
                   : !strcmp(as, "copy") ? LA_COPY_K : !strcmp(as, "empty_like") ? LA_EMPTY_K
                   : !strcmp(as, "zeros_like") ? LA_ZEROS_K : -1;
            if (la >= 0) {
                /* a new array like a named one (new = u.copy()): loop_types.c
                 * takes it only as an assignment's whole value */
                int av = la == LA_COPY_C ? array_var(c, mv) : array_var(c, PyList_GET_ITEM(args, 0));
                if (av >= 0 && la != LA_COPY_C) av = special_var(c, id, VF_MODULE, m, e) < 0 ? -2 : av;
                if (av >= 0 && (r = nd_lir_node(c->ir, LK_ALLOC, line, 0))) {
                    r->var = av;
                    r->aux = la;
                    c->ir->nalloc++;
                }
                Py_XDECREF(id);
                Py_DECREF(an);
                Py_DECREF(mv);
                goto done;
            }
            for (int k = 0; m && as && calls[k].name; k++)
                if (calls[k].mod == m && !strcmp(as, calls[k].name)) { fn = calls[k].fn; break; }
            if (fn >= 0) v = special_var(c, id, VF_MODULE, m, e);
            else if (!m && as && is_reduction_method(as, na)) {
                Py_XDECREF(id);
                Py_DECREF(an);
                r = reduction_method(c, mv, as, args, line);
                Py_DECREF(mv);
                goto done;
            }
            else if (id && !PyErr_Occurred() && !c->reason)
                c->reason = PyUnicode_FromFormat("a call of %U.%U() at line %d", id, an, line);
            Py_XDECREF(id);
        } else if (!PyErr_Occurred() && (fn = linalg_call(c, mv, an, na, e, &v)) >= 0) {
            /* np.linalg.inv(M), np.linalg.norm(v) */
        } else if (!PyErr_Occurred()) {
            const char *as = PyUnicode_AsUTF8(an);
            if (as && is_reduction_method(as, na)) {
                r = reduction_method(c, mv, as, args, line);
                Py_DECREF(an);
                Py_DECREF(mv);
                goto done;
            }
            if (as && na == 0 && !strcmp(as, "copy") && IS(mv, "Subscript")) {
                /* A[p].copy(), A[i, lo:hi].copy(), a[i].copy(): a new array (or
                 * scalar) of the part's dtype and values, which is +part
                 * (np.positive; bool has none: the loop runs in Python). The
                 * row swap A[i], A[p] = A[p].copy(), A[i].copy() */
                if ((r = nd_lir_node(c->ir, LK_UN, line, 1))) {
                    r->op = LO_POS;
                    if (!(r->kid[0] = expr(c, mv))) r = NULL;
                }
                Py_DECREF(an);
                Py_DECREF(mv);
                goto done;
            }
            refuse(c, e, "a method call");
        }
        Py_DECREF(mv);
        Py_DECREF(an);
        if (fn < 0 || v < 0) goto done;
    } else {
        refuse(c, e, "a call of a computed function");
        goto done;
    }
    if ((fn == LF_NP_CONCATENATE || fn == LF_NP_ARRAY) && na == 1) {
        /* np.concatenate((u, v)), np.array([x, y]): the parts written out */
        PyObject *seq = PyList_GET_ITEM(args, 0);
        PyObject *elts = IS(seq, "Tuple") || IS(seq, "List") ? attr(seq, "elts") : NULL;
        Py_ssize_t m = elts ? PyList_GET_SIZE(elts) : 0;
        if (!elts || m < 1 || m > LCAT_MAX) {
            Py_XDECREF(elts);
            if (!PyErr_Occurred()) refuse(c, e, "np.concatenate()/np.array() of other than a tuple or list of 1 to 8 items written out");
            goto done;
        }
        for (Py_ssize_t k = 0; k < m; k++)
            if (IS(PyList_GET_ITEM(elts, k), "Starred")) {
                Py_DECREF(elts);
                refuse(c, e, "a call with *args");
                goto done;
            }
        if ((r = nd_lir_node(c->ir, LK_CALL, line, (int)m))) {
            r->aux = fn;
            for (Py_ssize_t k = 0; k < m; k++)
                if (!(r->kid[k] = expr(c, PyList_GET_ITEM(elts, k)))) { r = NULL; break; }
        }
        Py_DECREF(elts);
        goto done;
    }
    if ((fn == LF_MIN || fn == LF_MAX) && na > 2) {
        /* min(a, b, c, ...) compares left to right keeping the first of
         * equals (and of NaN-unordered pairs): the fold min(min(a, b), c) */
        nd_ln *acc = expr(c, PyList_GET_ITEM(args, 0));
        for (Py_ssize_t k = 1; acc && k < na; k++) {
            nd_ln *n = nd_lir_node(c->ir, LK_CALL, line, 2);
            if (!n) { acc = NULL; break; }
            n->aux = fn;
            n->kid[0] = acc;
            if (!(n->kid[1] = expr(c, PyList_GET_ITEM(args, k)))) { acc = NULL; break; }
            acc = n;
        }
        r = acc;
        goto done;
    }
    int need = (fn == LF_MIN || fn == LF_MAX || fn == LF_M_ATAN2 || fn == LF_M_HYPOT || fn == LF_M_POW ||
                fn == LF_NP_ARCTAN2 || fn == LF_NP_HYPOT || fn == LF_NP_POWER || fn == LF_NP_MINIMUM ||
                fn == LF_NP_MAXIMUM || fn == LF_NP_DOT || fn == LF_NP_MATMUL || fn == LF_NP_OUTER) ? 2 : 1;
    if (na != need && !((fn == LF_INT || fn == LF_FLOAT || fn == LF_BOOL) && na == 0)) {
        refuse(c, e, "a call with an unsupported number of arguments");
        goto done;
    }
    if (fn == LF_FLOAT && na == 1 && IS(PyList_GET_ITEM(args, 0), "Constant")) {
        /* float("inf"), float("-inf"), float("nan"), float("1e-8"): the
         * builtin's value of a str constant, Python's own parse of it (the
         * guard on the name float stays: a shadowed float runs in Python);
         * a string float() rejects is left to Python, which raises */
        PyObject *s = attr(PyList_GET_ITEM(args, 0), "value");
        if (s && PyUnicode_CheckExact(s)) {
            PyObject *x = PyFloat_FromString(s);
            if (x) r = const_node(c, line, LT_PYFLOAT, 0, PyFloat_AS_DOUBLE(x));
            else if (PyErr_ExceptionMatches(PyExc_ValueError)) {
                PyErr_Clear();
                refuse(c, e, "float() of a string that is not a number");
            }
            Py_XDECREF(x);
            Py_DECREF(s);
            goto done;
        }
        Py_XDECREF(s);
        if (PyErr_Occurred()) goto done;
    }
    if (!(r = nd_lir_node(c->ir, LK_CALL, line, (int)na))) goto done;
    r->aux = fn;
    for (Py_ssize_t k = 0; k < na; k++)
        if (!(r->kid[k] = expr(c, PyList_GET_ITEM(args, k)))) { r = NULL; break; }
done:
    if (r && kaxis) {
        if (r->kind == LK_CALL && r->n == 1 &&
            (r->aux == LF_NP_MAX || r->aux == LF_NP_MIN || r->aux == LF_NP_ARGMAX || r->aux == LF_NP_ARGMIN ||
             r->aux == LF_NP_SUM || r->aux == LF_NP_MEAN))
            r->op = (uint8_t)kaxis;
        else
            r = refuse(c, e, "a call with keyword arguments");
    }
    Py_XDECREF(f);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    return r;
}

static nd_ln *expr(pctx *c, PyObject *e)
{
    if (++c->depth > 200) { c->depth--; return refuse(c, e, "an expression nested too deeply"); }
    nd_ln *r = NULL;
    int line = line_of(e);
    if (IS(e, "Constant")) {
        PyObject *v = attr(e, "value");
        if (!v) goto done;
        if (PyBool_Check(v)) r = const_node(c, line, LT_PYBOOL, v == Py_True, 0);
        else if (PyLong_CheckExact(v)) {
            int of = 0;
            long long x = PyLong_AsLongLongAndOverflow(v, &of);
            if (of || (x == -1 && PyErr_Occurred())) { PyErr_Clear(); refuse(c, e, "an integer constant beyond int64"); }
            else r = const_node(c, line, LT_PYINT, x, 0);
        } else if (PyFloat_CheckExact(v)) r = const_node(c, line, LT_PYFLOAT, 0, PyFloat_AS_DOUBLE(v));
        else refuse(c, e, "a constant that is not a number");
        Py_DECREF(v);
    } else if (IS(e, "Name")) {
        PyObject *id = attr(e, "id");
        PyObject *m = id && c->scope ? PyDict_GetItemWithError(c->scope, id) : NULL;
        int v = !id || PyErr_Occurred() ? -1 : m ? scoped(c, m, line, &r) : name_var(c, id, e);
        Py_XDECREF(id);
        if (v >= 0) {
            if (c->ir->vflags[v] & (VF_MODULE | VF_BUILTIN)) refuse(c, e, "a module or builtin used as a value");
            else if ((r = nd_lir_node(c->ir, LK_VAR, line, 0))) { r->var = v; c->ir->vflags[v] |= VF_READ; }
        }
    } else if (IS(e, "BinOp")) {
        PyObject *op = attr(e, "op"), *l = op ? attr(e, "left") : NULL, *rt = l ? attr(e, "right") : NULL;
        int o = op ? op_of(op, 0) : -1;
        if (rt) {
            if (o < 0 && IS(op, "MatMult")) {
                /* a @ b: np.matmul (of 1-D and 2-D slices) */
                if ((r = nd_lir_node(c->ir, LK_CALL, line, 2))) {
                    r->aux = LF_NP_MATMUL;
                    if (!(r->kid[0] = expr(c, l)) || !(r->kid[1] = expr(c, rt))) r = NULL;
                }
            } else if (o < 0) refuse(c, e, "an unknown operator");
            else if ((r = nd_lir_node(c->ir, LK_BIN, line, 2))) {
                r->op = (uint8_t)o;
                if (!(r->kid[0] = expr(c, l)) || !(r->kid[1] = expr(c, rt))) r = NULL;
            }
        }
        Py_XDECREF(op); Py_XDECREF(l); Py_XDECREF(rt);
    } else if (IS(e, "UnaryOp")) {
        PyObject *op = attr(e, "op"), *x = op ? attr(e, "operand") : NULL;
        if (x) {
            int o = IS(op, "USub") ? LO_NEG : IS(op, "UAdd") ? LO_POS : IS(op, "Invert") ? LO_INV : LO_NOT;
            /* -5 is a constant */
            if (o == LO_NEG && IS(x, "Constant")) {
                nd_ln *k = expr(c, x);
                if (k && k->aux == LT_PYINT && k->i != INT64_MIN) { k->i = -k->i; r = k; }
                else if (k && k->aux == LT_PYFLOAT) { k->f = -k->f; r = k; }
                else if (k && (r = nd_lir_node(c->ir, LK_UN, line, 1))) { r->op = (uint8_t)o; r->kid[0] = k; }
            } else if ((r = nd_lir_node(c->ir, LK_UN, line, 1))) {
                r->op = (uint8_t)o;
                if (!(r->kid[0] = expr(c, x))) r = NULL;
            }
        }
        Py_XDECREF(op); Py_XDECREF(x);
    } else if (IS(e, "BoolOp")) {
        PyObject *op = attr(e, "op"), *vs = op ? attr(e, "values") : NULL;
        if (vs) {
            Py_ssize_t nv = PyList_GET_SIZE(vs);
            if ((r = nd_lir_node(c->ir, IS(op, "And") ? LK_AND : LK_OR, line, (int)nv)))
                for (Py_ssize_t k = 0; k < nv; k++)
                    if (!(r->kid[k] = expr(c, PyList_GET_ITEM(vs, k)))) { r = NULL; break; }
        }
        Py_XDECREF(op); Py_XDECREF(vs);
    } else if (IS(e, "Compare")) {
        PyObject *l = attr(e, "left"), *ops = l ? attr(e, "ops") : NULL, *cs = ops ? attr(e, "comparators") : NULL;
        if (cs) {
            Py_ssize_t nc = PyList_GET_SIZE(ops);
            nd_ln *prev = expr(c, l), *acc = NULL;
            nd_ln *parts[64];
            int np_ = 0;
            if (nc > 64) { refuse(c, e, "a comparison chain too long"); prev = NULL; }
            for (Py_ssize_t k = 0; prev && k < nc; k++) {
                int o = op_of(PyList_GET_ITEM(ops, k), 1);
                if (o < 0) { refuse(c, e, "an is / in comparison"); prev = NULL; break; }
                nd_ln *rhs = expr(c, PyList_GET_ITEM(cs, k)), *cmp;
                if (!rhs || !(cmp = nd_lir_node(c->ir, LK_CMP, line, 2))) { prev = NULL; break; }
                cmp->op = (uint8_t)o;
                cmp->kid[0] = prev;
                cmp->kid[1] = rhs;
                parts[np_++] = cmp;
                prev = rhs;
            }
            if (prev && np_ == 1) r = parts[0];
            else if (prev && (acc = nd_lir_node(c->ir, LK_AND, line, np_))) {
                for (int k = 0; k < np_; k++) acc->kid[k] = parts[k];
                r = acc;
            }
        }
        Py_XDECREF(l); Py_XDECREF(ops); Py_XDECREF(cs);
    } else if (IS(e, "IfExp")) {
        PyObject *t = attr(e, "test"), *b = t ? attr(e, "body") : NULL, *o = b ? attr(e, "orelse") : NULL;
        if (o && (r = nd_lir_node(c->ir, LK_IFEXP, line, 3)))
            if (!(r->kid[0] = expr(c, t)) || !(r->kid[1] = expr(c, b)) || !(r->kid[2] = expr(c, o))) r = NULL;
        Py_XDECREF(t); Py_XDECREF(b); Py_XDECREF(o);
    } else if (IS(e, "Subscript")) {
        int na = newaxis_form(e);
        if (na > 0) {
            /* x[:, None] / x[None, :] of a name: x as a column / a row of a
             * 2-D expression, broadcast along its new axis (LK_SLICE of no
             * index, aux 3 / 4; typing takes 1-D arrays) */
            PyObject *v = attr(e, "value");
            int av = v ? array_var(c, v) : -1;
            Py_XDECREF(v);
            if (av >= 0 && (r = nd_lir_node(c->ir, LK_SLICE, line, 0))) {
                r->var = av;
                r->aux = na;
            }
        } else if (na == 0) {
            r = elem(c, e, LK_ELEM, NULL);
        }
    } else if (IS(e, "Attribute")) {
        PyObject *a = attr(e, "attr"), *v = a ? attr(e, "value") : NULL;
        if (v) {
            const char *as = PyUnicode_AsUTF8(a);
            if (as && (!strcmp(as, "size") || !strcmp(as, "ndim")) && IS(v, "Name")) {
                PyObject *id = attr(v, "id");
                const char *vs = id ? PyUnicode_AsUTF8(id) : NULL;
                if (vs && !mod_of(vs)) {
                    int av = array_var(c, v);
                    if (av >= 0 && (r = nd_lir_node(c->ir, LK_SHAPE, line, 0))) {
                        r->var = av;
                        r->aux = as[0] == 's' ? -1 : -2;
                    }
                } else if (vs) refuse(c, e, "a module attribute");
                Py_XDECREF(id);
            } else if (as && !strcmp(as, "T") && IS(v, "Name") && !name_is_module(v)) {
                /* X.T: X's axes reversed, a view (LK_SLICE of no index, aux 2;
                 * typing takes 1-D and 2-D arrays) */
                int av = array_var(c, v);
                if (av >= 0 && (r = nd_lir_node(c->ir, LK_SLICE, line, 0))) {
                    r->var = av;
                    r->aux = 2;
                }
            } else if (as && !strcmp(as, "T") && IS(v, "Subscript") && newaxis_form(v) == 0) {
                /* A[i0:i1, :].T, A[:, k:].T, A[i, :, lo:hi].T: the part, its
                 * two axes swapped (LK_SLICE aux 2 with indices; a 1-D part's
                 * .T is the part itself). An element's or a chained
                 * subscript's .T stays with Python */
                r = elem(c, v, LK_ELEM, NULL);
                if (r && (r->kind != LK_SLICE || r->aux))
                    r = refuse(c, e, "the .T of an element or of a chained subscript (a[i][j:k].T)");
                else if (r)
                    r->aux = 2;
            } else if (as && IS(v, "Name")) {
                PyObject *id = attr(v, "id");
                const char *vs = id ? PyUnicode_AsUTF8(id) : NULL;
                int m = vs ? mod_of(vs) : 0;
                double k = 0;
                int ok = 1;
                if (!m) ok = 0;
                else if (!strcmp(as, "pi")) k = 3.141592653589793;
                else if (!strcmp(as, "e")) k = 2.718281828459045;
                else if (!strcmp(as, "inf")) k = INFINITY;
                else if (!strcmp(as, "nan") && m == LM_NUMPY) k = NAN;
                else if (!strcmp(as, "tau") && m == LM_MATH) k = 6.283185307179586;
                else ok = 0;
                if (ok) {
                    /* np.pi is a Python float, as is math.pi */
                    if (special_var(c, id, VF_MODULE, m, e) >= 0) r = const_node(c, line, LT_PYFLOAT, 0, k);
                } else if (vs && !PyErr_Occurred()) {
                    refuse(c, e, "an attribute");
                }
                Py_XDECREF(id);
            } else if (!PyErr_Occurred()) {
                refuse(c, e, "an attribute");
            }
        }
        Py_XDECREF(a); Py_XDECREF(v);
    } else if (IS(e, "Call")) {
        r = call(c, e);
    } else {
        char what[96];
        snprintf(what, sizeof what, "an expression of kind %s", kind(e));
        refuse(c, e, what);
    }
done:
    c->depth--;
    return r;
}

static int block(pctx *c, PyObject *list, nd_ln ***out, int *nout);

static int assign_target(pctx *c, PyObject *t, int *v)
{
    if (!IS(t, "Name")) { refuse(c, t, "an assignment target that is not a name"); return -1; }
    PyObject *id = attr(t, "id");
    if (!id) return -1;
    int k = var_of(c, id);
    Py_DECREF(id);
    if (k < 0) return -1;
    uint8_t f = c->ir->vflags[k];
    if (!(f & VF_LOCAL)) { refuse(c, t, "an assignment to a global name"); return -1; }
    if (f & (VF_MODULE | VF_BUILTIN)) { refuse(c, t, "a module or builtin name assigned"); return -1; }
    c->ir->vflags[k] |= VF_ASSIGNED;
    *v = k;
    return 0;
}

/* ---------------------------------------------------------- for loops */
/* f(...) where f is the builtin `name`: its argument list (new ref), else
 * NULL (no exception) */
static PyObject *builtin_call(pctx *c, PyObject *e, const char *name, int b, PyObject *node, int *err)
{
    *err = 0;
    if (!IS(e, "Call")) return NULL;
    PyObject *f = attr(e, "func"), *args = NULL, *kw = NULL, *fid = NULL;
    if (!f) { *err = 1; return NULL; }
    if (IS(f, "Name") && (fid = attr(f, "id")) && PyUnicode_CompareWithASCIIString(fid, name) == 0 &&
        (args = attr(e, "args")) && (kw = attr(e, "keywords"))) {
        int ok = PyList_GET_SIZE(kw) == 0;
        for (Py_ssize_t k = 0; ok && k < PyList_GET_SIZE(args); k++)
            ok = !IS(PyList_GET_ITEM(args, k), "Starred");
        if (!ok) { refuse(c, node, "a call with keyword arguments or *args in a for loop's head"); *err = 1; }
        else if (special_var(c, fid, VF_BUILTIN, b, node) < 0) *err = 1;
        if (*err) Py_CLEAR(args);
    } else if (PyErr_Occurred()) {
        *err = 1;
    }
    Py_DECREF(f);
    Py_XDECREF(fid);
    Py_XDECREF(kw);
    if (!args && !*err && PyErr_Occurred()) *err = 1;
    return args;
}

/* range(...)'s arguments as start, stop, step nodes */
static int range_nodes(pctx *c, PyObject *args, int line, PyObject *node, nd_ln **a3)
{
    Py_ssize_t na = PyList_GET_SIZE(args);
    if (na < 1 || na > 3) { refuse(c, node, "range() with an unsupported number of arguments"); return -1; }
    nd_ln *a[3] = {NULL, NULL, NULL};
    for (Py_ssize_t k = 0; k < na; k++)
        if (!(a[k] = expr(c, PyList_GET_ITEM(args, k)))) return -1;
    if (na == 1) { a3[0] = const_node(c, line, LT_PYINT, 0, 0); a3[1] = a[0]; }
    else { a3[0] = a[0]; a3[1] = a[1]; }
    a3[2] = na == 3 ? a[2] : const_node(c, line, LT_PYINT, 1, 0);
    return a3[0] && a3[2] ? 0 : -1;
}

/* a variable of the loop's own: an iteration count */
static int hidden_var(pctx *c)
{
    PyObject *name = PyUnicode_FromFormat("for@%d", c->ir->nvars);
    if (!name) return -1;
    int v = var_of(c, name);
    Py_DECREF(name);
    if (v >= 0) c->ir->vflags[v] = VF_HIDDEN | VF_READ;
    return v;
}

static nd_ln *var_node(pctx *c, int v, int line)
{
    nd_ln *n = nd_lir_node(c->ir, LK_VAR, line, 0);
    if (n) { n->var = v; c->ir->vflags[v] |= VF_READ; }
    return n;
}

/* target = value (a name target) */
static nd_ln *assign_node(pctx *c, PyObject *target, nd_ln *value, int line)
{
    int v;
    if (!value || assign_target(c, target, &v) < 0) return NULL;
    nd_ln *r = nd_lir_node(c->ir, LK_ASSIGN, line, 1);
    if (r) { r->var = v; r->kid[0] = value; }
    return r;
}

/* range(lo, hi, 1) -> range(hi - 1, lo - 1, -1) and range(lo, hi, -1) ->
 * range(hi + 1, lo + 1, 1): the same values in reverse order, also when
 * empty (lo, hi evaluated in the loop's head, as range() evaluates them;
 * they are plain expressions). Other steps: the last value needs the
 * length, not done. */
static int reverse_range(pctx *c, int line, PyObject *node, nd_ln **r)
{
    nd_ln *st = r[2];
    if (st->kind != LK_CONST || st->aux != LT_PYINT || (st->i != 1 && st->i != -1)) {
        refuse(c, node, "reversed(range()) with a step other than 1 or -1");
        return -1;
    }
    int d = (int)st->i;
    nd_ln *lo = nd_lir_node(c->ir, LK_BIN, line, 2), *hi = nd_lir_node(c->ir, LK_BIN, line, 2);
    nd_ln *one0 = const_node(c, line, LT_PYINT, 1, 0), *one1 = const_node(c, line, LT_PYINT, 1, 0);
    nd_ln *nst = const_node(c, line, LT_PYINT, -d, 0);
    if (!lo || !hi || !one0 || !one1 || !nst) return -1;
    lo->op = hi->op = d == 1 ? LO_SUB : LO_ADD;
    lo->kid[0] = r[1]; lo->kid[1] = one0;     /* the new start: hi -+ 1 */
    hi->kid[0] = r[0]; hi->kid[1] = one1;     /* the new stop: lo -+ 1 */
    r[0] = lo; r[1] = hi; r[2] = nst;
    return 0;
}

/* one iterable of a for loop's head: range(...) or an array name */
typedef struct { PyObject *target; int arr; nd_ln *rng[3]; } forpart;

static int for_part(pctx *c, PyObject *it, PyObject *target, PyObject *node, int line, forpart *p)
{
    int err;
    p->target = target;
    p->arr = -1;
    PyObject *args = builtin_call(c, it, "range", LB_RANGE, node, &err);
    if (err) return -1;
    if (args) {
        int rc = range_nodes(c, args, line, node, p->rng);
        Py_DECREF(args);
        return rc;
    }
    if ((args = builtin_call(c, it, "reversed", LB_REVERSED, node, &err))) {
        PyObject *ra = PyList_GET_SIZE(args) == 1 ? builtin_call(c, PyList_GET_ITEM(args, 0), "range", LB_RANGE, node, &err) : NULL;
        Py_DECREF(args);
        if (!ra) {
            if (!err) refuse(c, node, "reversed() of something other than range()");
            return -1;
        }
        int rc = range_nodes(c, ra, line, node, p->rng);
        Py_DECREF(ra);
        return rc < 0 ? -1 : reverse_range(c, line, node, p->rng);
    }
    if (err) return -1;
    if (!IS(it, "Name")) {
        refuse(c, node, "a for loop over something other than range(), reversed(range()), an array name, enumerate() or zip()");
        return -1;
    }
    int av = array_var(c, it);
    if (av < 0) return -1;
    p->arr = av;
    return 0;
}

/* for x in range(...) / for x in a / for i, x in enumerate(a or range(...)) /
 * for x, y in zip(a or range(...), b, ...): one LK_FOR over a range (the
 * first range, else 0..len of the first array), its iteration count bounding
 * and indexing the arrays, the targets assigned first in each iteration */
static nd_ln *for_stmt(pctx *c, PyObject *s)
{
    int line = line_of(s);
    nd_ln *r = NULL, *pre[NDL_MAXDIMS];
    int npre = 0;
    PyObject *t = attr(s, "target"), *it = t ? attr(s, "iter") : NULL, *oe = it ? attr(s, "orelse") : NULL;
    PyObject *body = oe ? attr(s, "body") : NULL, *parts_args = NULL, *targets = NULL;
    forpart parts[8];
    int np_ = 0, err, enum_start = -1;
    int64_t start = 0;
    if (!body) goto done;
    if ((parts_args = builtin_call(c, it, "enumerate", LB_ENUMERATE, s, &err))) {
        Py_ssize_t na = PyList_GET_SIZE(parts_args);
        if (na == 2) {
            PyObject *k = PyList_GET_ITEM(parts_args, 1);
            PyObject *v = IS(k, "Constant") ? attr(k, "value") : NULL;
            int of = 0;
            if (v && PyLong_CheckExact(v)) start = PyLong_AsLongLongAndOverflow(v, &of);
            if (!v || !PyLong_CheckExact(v) || of || start < -(1ll << 40) || start > (1ll << 40)) {
                Py_XDECREF(v);
                PyErr_Clear();
                refuse(c, s, "enumerate() with a start that is not a small integer constant");
                goto done;
            }
            Py_DECREF(v);
        } else if (na != 1) {
            refuse(c, s, "enumerate() with an unsupported number of arguments");
            goto done;
        }
        if (!IS(t, "Tuple") && !IS(t, "List")) { refuse(c, s, "enumerate() unpacked into one name"); goto done; }
        if (!(targets = attr(t, "elts"))) goto done;
        if (PyList_GET_SIZE(targets) != 2) { refuse(c, s, "enumerate() unpacked into other than two names"); goto done; }
        enum_start = 1;
        if (for_part(c, PyList_GET_ITEM(parts_args, 0), PyList_GET_ITEM(targets, 1), s, line, &parts[0]) < 0)
            goto done;
        np_ = 1;
    } else if (err) {
        goto done;
    } else if ((parts_args = builtin_call(c, it, "zip", LB_ZIP, s, &err))) {
        Py_ssize_t na = PyList_GET_SIZE(parts_args);
        if (na < 1 || na > 8) { refuse(c, s, "zip() of an unsupported number of iterables"); goto done; }
        if (!IS(t, "Tuple") && !IS(t, "List")) { refuse(c, s, "zip() unpacked into one name"); goto done; }
        if (!(targets = attr(t, "elts"))) goto done;
        if (PyList_GET_SIZE(targets) != na) { refuse(c, s, "zip() unpacked into another number of names"); goto done; }
        for (Py_ssize_t k = 0; k < na; k++) {
            if (for_part(c, PyList_GET_ITEM(parts_args, k), PyList_GET_ITEM(targets, k), s, line, &parts[k]) < 0)
                goto done;
            if (k && parts[k].arr < 0) { refuse(c, s, "zip() with a range() after its first iterable"); goto done; }
        }
        np_ = (int)na;
    } else if (err) {
        goto done;
    } else {
        if (for_part(c, it, t, s, line, &parts[0]) < 0) goto done;
        np_ = 1;
    }
    /* the loop: over the first range, else over 0..len(first array) */
    int count = -1, nlim = np_ - 1;
    if (!(r = nd_lir_node(c->ir, LK_FOR, line, nlim ? 4 : 3))) goto done;
    if (parts[0].arr < 0) {
        for (int k = 0; k < 3; k++) r->kid[k] = parts[0].rng[k];
        if (assign_target(c, parts[0].target, &r->var) < 0) { r = NULL; goto done; }
        if (np_ > 1 || enum_start >= 0) {
            if ((count = hidden_var(c)) < 0) { r = NULL; goto done; }
        }
    } else {
        if ((count = hidden_var(c)) < 0) { r = NULL; goto done; }
        r->var = count;
        nd_ln *n0 = nd_lir_node(c->ir, LK_SHAPE, line, 0);
        if (!n0 || !(r->kid[0] = const_node(c, line, LT_PYINT, 0, 0)) ||
            !(r->kid[2] = const_node(c, line, LT_PYINT, 1, 0))) { r = NULL; goto done; }
        n0->var = parts[0].arr;
        r->kid[1] = n0;
    }
    r->i = count >= 0 && count != r->var ? count + 1 : 0;
    /* zip: the other arrays bound the count */
    nd_ln *lim = NULL;
    for (int k = 1; k < np_; k++) {
        nd_ln *n = nd_lir_node(c->ir, LK_SHAPE, line, 0);
        if (!n) { r = NULL; goto done; }
        n->var = parts[k].arr;
        if (lim) {
            nd_ln *m = nd_lir_node(c->ir, LK_CALL, line, 2);
            if (!m) { r = NULL; goto done; }
            m->aux = LF_MIN;
            m->kid[0] = lim;
            m->kid[1] = n;
            n = m;
        }
        lim = n;
    }
    if (nlim) r->kid[3] = lim;
    /* the targets, in Python's order */
    if (enum_start >= 0) {
        nd_ln *i = var_node(c, count, line);
        if (i && start) {
            nd_ln *b = nd_lir_node(c->ir, LK_BIN, line, 2);
            if (b) { b->op = LO_ADD; b->kid[0] = i; b->kid[1] = const_node(c, line, LT_PYINT, start, 0); }
            i = b && b->kid[1] ? b : NULL;
        }
        if (!(pre[npre++] = assign_node(c, PyList_GET_ITEM(targets, 0), i, line))) { r = NULL; goto done; }
    }
    for (int k = 0; k < np_; k++) {
        if (parts[k].arr < 0) continue;
        nd_ln *e = nd_lir_node(c->ir, LK_ELEM, line, 1);
        if (!e || !(e->kid[0] = var_node(c, count, line))) { r = NULL; goto done; }
        e->var = parts[k].arr;
        e->i = 1;   /* the count stays below the array's length (never rebound: checked below) */
        if (!(pre[npre++] = assign_node(c, parts[k].target, e, line))) { r = NULL; goto done; }
    }
    nd_ln **ub;
    int nub;
    if (block(c, body, &ub, &nub) < 0) { r = NULL; goto done; }
    r->nbody = npre + nub;
    if (!(r->body = nd_lir_alloc(c->ir, sizeof(nd_ln *) * (size_t)(r->nbody ? r->nbody : 1)))) { r = NULL; goto done; }
    for (int k = 0; k < npre; k++) r->body[k] = pre[k];
    for (int k = 0; k < nub; k++) r->body[npre + k] = ub[k];
    /* the iterator holds the array it started with */
    for (int k = 0; k < np_; k++)
        if (parts[k].arr >= 0 && nd_lir_binds(r->body, r->nbody, parts[k].arr)) {
            refuse(c, s, "a for loop over an array that its body rebinds");
            r = NULL;
            goto done;
        }
done:
    Py_XDECREF(t); Py_XDECREF(it); Py_XDECREF(oe); Py_XDECREF(body);
    Py_XDECREF(parts_args); Py_XDECREF(targets);
    return r;
}

/* the breaks of a loop's body b[0..n) (not those of loops inside it) ->
 * `if True: broke = True; break` */
static int else_breaks(pctx *c, nd_ln **b, int n, int broke)
{
    for (int k = 0; k < n; k++) {
        nd_ln *s = b[k];
        if (s->kind == LK_IF) {
            if (else_breaks(c, s->body, s->nbody, broke) < 0 || else_breaks(c, s->orelse, s->norelse, broke) < 0)
                return -1;
        } else if (s->kind == LK_BREAK) {
            nd_ln *w = nd_lir_node(c->ir, LK_IF, s->line, 1), *a = w ? nd_lir_node(c->ir, LK_ASSIGN, s->line, 1) : NULL;
            if (!a || !(w->kid[0] = const_node(c, s->line, LT_PYBOOL, 1, 0)) ||
                !(a->kid[0] = const_node(c, s->line, LT_PYBOOL, 1, 0)) ||
                !(w->body = nd_lir_alloc(c->ir, 2 * sizeof(nd_ln *))))
                return -1;
            a->var = broke;
            w->body[0] = a;
            w->body[1] = s;
            w->nbody = 2;
            b[k] = w;
        }
    }
    return 0;
}

/* for/while with an else clause:
 *     if True:
 *         broke = False
 *         <the loop, each of its breaks setting broke = True first>
 *         if not broke: <else clause>
 * (broke a variable of the loop's own) */
static nd_ln *with_else(pctx *c, nd_ln *loop, PyObject *oe, int line)
{
    int broke = hidden_var(c);
    if (broke < 0 || else_breaks(c, loop->body, loop->nbody, broke) < 0) return NULL;
    nd_ln *w = nd_lir_node(c->ir, LK_IF, line, 1), *init = w ? nd_lir_node(c->ir, LK_ASSIGN, line, 1) : NULL;
    nd_ln *test = init ? nd_lir_node(c->ir, LK_IF, line, 1) : NULL, *nb = test ? nd_lir_node(c->ir, LK_UN, line, 1) : NULL;
    if (!nb || !(w->kid[0] = const_node(c, line, LT_PYBOOL, 1, 0)) ||
        !(init->kid[0] = const_node(c, line, LT_PYBOOL, 0, 0)) || !(nb->kid[0] = var_node(c, broke, line)) ||
        !(w->body = nd_lir_alloc(c->ir, 3 * sizeof(nd_ln *))) || block(c, oe, &test->body, &test->nbody) < 0)
        return NULL;
    init->var = broke;
    nb->op = LO_NOT;
    test->kid[0] = nb;
    w->body[0] = init;
    w->body[1] = loop;
    w->body[2] = test;
    w->nbody = 3;
    return w;
}

static nd_ln *stmt(pctx *c, PyObject *s)
{
    int line = line_of(s);
    nd_ln *r = NULL;
    if (IS(s, "For")) {
        PyObject *oe = attr(s, "orelse");
        if (oe && (r = for_stmt(c, s)) && PyList_GET_SIZE(oe)) r = with_else(c, r, oe, line);
        Py_XDECREF(oe);
    } else if (IS(s, "While")) {
        PyObject *t = attr(s, "test"), *oe = t ? attr(s, "orelse") : NULL, *body = oe ? attr(s, "body") : NULL;
        if (body && (r = nd_lir_node(c->ir, LK_WHILE, line, 1))) {
            if (!(r->kid[0] = expr(c, t)) || block(c, body, &r->body, &r->nbody) < 0) r = NULL;
            else if (PyList_GET_SIZE(oe)) r = with_else(c, r, oe, line);
        }
        Py_XDECREF(t); Py_XDECREF(oe); Py_XDECREF(body);
    } else if (IS(s, "If")) {
        PyObject *t = attr(s, "test"), *oe = t ? attr(s, "orelse") : NULL, *body = oe ? attr(s, "body") : NULL;
        if (body && (r = nd_lir_node(c->ir, LK_IF, line, 1)))
            if (!(r->kid[0] = expr(c, t)) || block(c, body, &r->body, &r->nbody) < 0 ||
                block(c, oe, &r->orelse, &r->norelse) < 0)
                r = NULL;
        Py_XDECREF(t); Py_XDECREF(oe); Py_XDECREF(body);
    } else if (IS(s, "Break") || IS(s, "Continue") || IS(s, "Pass")) {
        r = nd_lir_node(c->ir, IS(s, "Break") ? LK_BREAK : IS(s, "Continue") ? LK_CONTINUE : LK_PASS, line, 0);
    } else if (IS(s, "Assign")) {
        PyObject *ts = attr(s, "targets"), *v = ts ? attr(s, "value") : NULL;
        if (v) {
            if (PyList_GET_SIZE(ts) != 1) { refuse(c, s, "a chained assignment"); goto as_done; }
            PyObject *t = PyList_GET_ITEM(ts, 0);
            if (IS(t, "Name")) {
                int k;
                nd_ln *x = expr(c, v);
                if (x && assign_target(c, t, &k) == 0 && (r = nd_lir_node(c->ir, LK_ASSIGN, line, 1))) {
                    r->var = k;
                    r->kid[0] = x;
                }
            } else if (IS(t, "Subscript")) {
                nd_ln *x = expr(c, v);
                int av;
                if (x && (r = elem(c, t, LK_STORE, &av))) {
                    r->kid[0] = x;
                    c->ir->vflags[av] |= VF_STORED;
                }
            } else if (IS(t, "Tuple") || IS(t, "List")) {
                PyObject *te = attr(t, "elts");
                if (!te) goto as_done;
                Py_ssize_t m = PyList_GET_SIZE(te);
                PyObject *ve = (IS(v, "Tuple") || IS(v, "List")) ? attr(v, "elts") : NULL;
                int shape = 0;
                if (!ve && IS(v, "Attribute")) {
                    PyObject *an = attr(v, "attr");
                    shape = an && PyUnicode_CompareWithASCIIString(an, "shape") == 0;
                    Py_XDECREF(an);
                }
                if ((ve && PyList_GET_SIZE(ve) == m) || shape) {
                    int av = -1;
                    if (shape) {
                        PyObject *bv = attr(v, "value");
                        av = bv ? array_var(c, bv) : -1;
                        Py_XDECREF(bv);
                    }
                    if ((!shape || av >= 0) && (r = nd_lir_node(c->ir, LK_MULTI, line, (int)(2 * m)))) {
                        for (Py_ssize_t k = 0; r && k < m; k++) {
                            nd_ln *x;
                            if (shape) {
                                if ((x = nd_lir_node(c->ir, LK_SHAPE, line, 0))) { x->var = av; x->aux = (int)k; x->i = 2; x->f = (double)m; }
                            } else {
                                x = expr(c, PyList_GET_ITEM(ve, k));
                            }
                            if (!x) { r = NULL; break; }
                            r->kid[m + k] = x;
                        }
                        for (Py_ssize_t k = 0; r && k < m; k++) {
                            int vk;
                            nd_ln *tn;
                            if (assign_target(c, PyList_GET_ITEM(te, k), &vk) < 0 ||
                                !(tn = nd_lir_node(c->ir, LK_VAR, line, 0))) { r = NULL; break; }
                            tn->var = vk;
                            r->kid[k] = tn;
                        }
                    }
                } else if (!PyErr_Occurred()) {
                    refuse(c, s, "a tuple assignment from a value that is not a tuple");
                }
                Py_DECREF(te);
                Py_XDECREF(ve);
            } else {
                refuse(c, s, "an assignment to an attribute");
            }
        }
    as_done:
        Py_XDECREF(ts); Py_XDECREF(v);
    } else if (IS(s, "AugAssign")) {
        PyObject *t = attr(s, "target"), *op = t ? attr(s, "op") : NULL, *v = op ? attr(s, "value") : NULL;
        if (v) {
            int o = op_of(op, 0);
            if (o < 0) refuse(c, s, "the @= operator");
            else if (IS(t, "Name")) {
                int k;
                nd_ln *x = expr(c, v), *cur = NULL, *b = NULL;
                PyObject *id = attr(t, "id");
                int kv = id ? var_of(c, id) : -1;
                Py_XDECREF(id);
                if (x && kv >= 0 && assign_target(c, t, &k) == 0 && (cur = nd_lir_node(c->ir, LK_VAR, line, 0)) &&
                    (b = nd_lir_node(c->ir, LK_BIN, line, 2)) && (r = nd_lir_node(c->ir, LK_ASSIGN, line, 1))) {
                    cur->var = k;
                    c->ir->vflags[k] |= VF_READ;
                    b->op = (uint8_t)o;
                    b->kid[0] = cur;
                    b->kid[1] = x;
                    r->var = k;
                    r->aux = 1;   /* (in place when k holds an array: loop_types.c) */
                    r->kid[0] = b;
                }
            } else if (IS(t, "Subscript")) {
                int av;
                if ((r = elem(c, t, LK_AUGSTORE, &av))) {
                    r->op = (uint8_t)o;
                    if (!(r->kid[0] = expr(c, v))) r = NULL;
                    else c->ir->vflags[av] |= VF_STORED;
                }
            } else {
                refuse(c, s, "an augmented assignment to an attribute");
            }
        }
        Py_XDECREF(t); Py_XDECREF(op); Py_XDECREF(v);
    } else if (IS(s, "Expr")) {
        PyObject *v = attr(s, "value");
        if (v && IS(v, "Constant")) r = nd_lir_node(c->ir, LK_PASS, line, 0);  /* a docstring-like constant */
        else if (v) refuse(c, s, IS(v, "Call") ? "a call whose value is dropped" : "an expression statement");
        Py_XDECREF(v);
    } else {
        char what[96];
        snprintf(what, sizeof what, "a statement of kind %s", kind(s));
        refuse(c, s, what);
    }
    return r;
}

/* `a[i], a[j] = a[j], a[i]`: the number of targets when s assigns a tuple
 * of values to a tuple of targets one of which is a subscript, else 0 */
static Py_ssize_t tuple_store_size(PyObject *s)
{
    if (!IS(s, "Assign")) return 0;
    PyObject *ts = attr(s, "targets"), *v = ts ? attr(s, "value") : NULL;
    PyObject *t = ts && PyList_GET_SIZE(ts) == 1 ? PyList_GET_ITEM(ts, 0) : NULL;
    PyObject *te = t && (IS(t, "Tuple") || IS(t, "List")) ? attr(t, "elts") : NULL;
    PyObject *ve = te && v && (IS(v, "Tuple") || IS(v, "List")) ? attr(v, "elts") : NULL;
    Py_ssize_t m = 0;
    if (ve && PyList_GET_SIZE(ve) == PyList_GET_SIZE(te))
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(te); k++)
            if (IS(PyList_GET_ITEM(te, k), "Subscript")) m = PyList_GET_SIZE(te);
    Py_XDECREF(ts); Py_XDECREF(v); Py_XDECREF(te); Py_XDECREF(ve);
    PyErr_Clear();
    return m;
}

/* `t1 = t2 = ... = v` (a chained assignment): the number of targets when
 * each is a subscript or a name, at most one a name, else 0. Two names
 * would be bound to one object (an array value: aliases), which the
 * region's per-name values cannot say: such a statement is refused. */
static Py_ssize_t chain_store_size(PyObject *s)
{
    if (!IS(s, "Assign")) return 0;
    PyObject *ts = attr(s, "targets");
    Py_ssize_t m = ts ? PyList_GET_SIZE(ts) : 0, names = 0;
    for (Py_ssize_t k = 0; m > 1 && k < PyList_GET_SIZE(ts); k++) {
        PyObject *t = PyList_GET_ITEM(ts, k);
        if (IS(t, "Name")) names++;
        else if (!IS(t, "Subscript")) m = 0;
    }
    Py_XDECREF(ts);
    PyErr_Clear();
    return m > 1 && names <= 1 ? m : 0;
}

/* a name of the region's own for value k of statement s (prefix: its kind) */
static int temp_var(pctx *c, PyObject *s, const char *prefix, Py_ssize_t k)
{
    PyObject *co = attr(s, "col_offset");
    long col = co ? PyLong_AsLong(co) : -1;
    Py_XDECREF(co);
    if (col < 0) { PyErr_Clear(); col = 0; }
    PyObject *name = PyUnicode_FromFormat("__numdyn_%s_%d_%ld_%zd", prefix, line_of(s), col, k);
    if (!name || PySet_Add(c->locals, name) < 0) { Py_XDECREF(name); return -1; }
    int tv = var_of(c, name);
    Py_DECREF(name);
    return tv;
}

/* target t (a subscript or a name) = the region's own name tv */
static nd_ln *target_from(pctx *c, PyObject *t, int tv, int line)
{
    nd_ln *x = var_node(c, tv, line), *r = NULL;
    if (!x) return NULL;
    if (IS(t, "Subscript")) {
        int av;
        if ((r = elem(c, t, LK_STORE, &av))) c->ir->vflags[av] |= VF_STORED;
    } else {
        int nv;
        if (assign_target(c, t, &nv) == 0 && (r = nd_lir_node(c->ir, LK_ASSIGN, line, 1))) r->var = nv;
    }
    if (r) r->kid[0] = x;
    return r;
}

/* Python evaluates the values left to right, then assigns the targets left
 * to right, each target's subscript when its turn comes: the same as each
 * value assigned to a name of its own, then each target from its name (an
 * element swap through two C locals). The names are the region's own. */
static int tuple_store(pctx *c, PyObject *s, Py_ssize_t m, nd_ln **out)
{
    int line = line_of(s), rc = -1;
    PyObject *ts = attr(s, "targets"), *v = ts ? attr(s, "value") : NULL;
    PyObject *te = v ? attr(PyList_GET_ITEM(ts, 0), "elts") : NULL, *ve = te ? attr(v, "elts") : NULL;
    int tmp[64];
    if (!ve) goto done;
    if (m > 64) { refuse(c, s, "a tuple assignment of more than 64 values"); goto done; }
    for (Py_ssize_t k = 0; k < m; k++) {
        int tv = temp_var(c, s, "tuple", k);
        nd_ln *x = tv >= 0 ? expr(c, PyList_GET_ITEM(ve, k)) : NULL;
        if (!x || !(out[k] = nd_lir_node(c->ir, LK_ASSIGN, line, 1))) goto done;
        c->ir->vflags[tv] |= VF_ASSIGNED;
        out[k]->var = tmp[k] = tv;
        out[k]->kid[0] = x;
    }
    for (Py_ssize_t k = 0; k < m; k++)
        if (!(out[m + k] = target_from(c, PyList_GET_ITEM(te, k), tmp[k], line))) goto done;
    rc = 0;
done:
    Py_XDECREF(ts); Py_XDECREF(v); Py_XDECREF(te); Py_XDECREF(ve);
    return rc;
}

/* Python evaluates the value once, then assigns the targets left to right,
 * each subscript when its turn comes: the value into a name of the
 * region's own, then each target from it. out: 1 + m statements */
static int chain_store(pctx *c, PyObject *s, Py_ssize_t m, nd_ln **out)
{
    int line = line_of(s), rc = -1;
    PyObject *ts = attr(s, "targets"), *v = ts ? attr(s, "value") : NULL;
    int tv = v ? temp_var(c, s, "chain", 0) : -1;
    nd_ln *x = tv >= 0 ? expr(c, v) : NULL;
    if (!x || !(out[0] = nd_lir_node(c->ir, LK_ASSIGN, line, 1))) goto done;
    c->ir->vflags[tv] |= VF_ASSIGNED;
    out[0]->var = tv;
    out[0]->kid[0] = x;
    for (Py_ssize_t k = 0; k < m; k++)
        if (!(out[1 + k] = target_from(c, PyList_GET_ITEM(ts, k), tv, line))) goto done;
    rc = 0;
done:
    Py_XDECREF(ts); Py_XDECREF(v);
    return rc;
}

/* A[[i0, i1, ...], rest] = A[[j0, j1, ...], rest] (NumPy's row or element
 * swap by lists of indices: `A[[k, p], :] = A[[p, k], :]`, `perm[[k, p]] =
 * perm[[p, k]]`): one array, the same rest of the subscript on both sides,
 * and the i's a permutation of the j's (compared as ast.dump text). NumPy
 * gathers every j row into a new array (each index checked), then writes
 * row i_r from its row r. So: each j row copied (+x, positive: a copy of
 * its dtype; bool has no positive, and such a loop runs in Python) into a
 * name of its own, then each i row stored from it, in order (a repeated
 * index: the last one wins, as NumPy's). Every i is among the j's, so every
 * index was checked before the first store, and the shapes are the same:
 * no store happens where NumPy raises. The subscripts are parsed as ast
 * Subscripts built here. */
typedef struct { PyObject *base, *list, *rest; } listsub;   /* Name, [elts], [elts] */

static void listsub_clear(listsub *q) { Py_CLEAR(q->base); Py_CLEAR(q->list); Py_CLEAR(q->rest); }

/* 1: s is a Subscript of a name whose first index is a list display */
static int list_subscript(PyObject *s, listsub *q)
{
    memset(q, 0, sizeof *q);
    if (!IS(s, "Subscript")) return 0;
    PyObject *sl = attr(s, "slice");
    if (!sl) return -1;
    int r = 0;
    if (IS(sl, "List")) {
        q->list = attr(sl, "elts");
        q->rest = PyList_New(0);
    } else if (IS(sl, "Tuple")) {
        PyObject *el = attr(sl, "elts");
        if (el && PyList_GET_SIZE(el) > 1 && IS(PyList_GET_ITEM(el, 0), "List")) {
            q->list = attr(PyList_GET_ITEM(el, 0), "elts");
            q->rest = PyList_GetSlice(el, 1, PyList_GET_SIZE(el));
        }
        Py_XDECREF(el);
    }
    Py_DECREF(sl);
    if (q->list && q->rest && (q->base = attr(s, "value")) && IS(q->base, "Name")) r = 1;
    if (r != 1) listsub_clear(q);
    return PyErr_Occurred() ? -1 : r;
}

static PyObject *ast_fn(const char *name)
{
    PyObject *m = PyImport_ImportModule("ast");
    PyObject *f = m ? PyObject_GetAttrString(m, name) : NULL;
    Py_XDECREF(m);
    return f;
}

/* whether a and b dump to the same text (ast.dump) */
static int same_ast(PyObject *a, PyObject *b)
{
    static PyObject *dump;
    if (!dump && !(dump = ast_fn("dump"))) return -1;
    PyObject *da = PyObject_CallOneArg(dump, a), *db = da ? PyObject_CallOneArg(dump, b) : NULL;
    int r = db ? PyObject_RichCompareBool(da, db, Py_EQ) : -1;
    Py_XDECREF(da);
    Py_XDECREF(db);
    return r;
}

static Py_ssize_t perm_store_size(PyObject *s)
{
    if (!IS(s, "Assign")) return 0;
    PyObject *ts = attr(s, "targets"), *v = ts ? attr(s, "value") : NULL;
    listsub t = {0}, w = {0};
    Py_ssize_t m = 0;
    if (!v || PyList_GET_SIZE(ts) != 1 || list_subscript(PyList_GET_ITEM(ts, 0), &t) != 1 ||
        list_subscript(v, &w) != 1)
        goto done;
    Py_ssize_t n = PyList_GET_SIZE(t.list), nr = PyList_GET_SIZE(t.rest);
    if (n < 1 || n > 16 || n != PyList_GET_SIZE(w.list) || nr != PyList_GET_SIZE(w.rest)) goto done;
    PyObject *ti = attr(t.base, "id"), *wi = ti ? attr(w.base, "id") : NULL;
    int eq = wi ? PyObject_RichCompareBool(ti, wi, Py_EQ) : 0;
    Py_XDECREF(ti);
    Py_XDECREF(wi);
    if (eq != 1) goto done;
    for (Py_ssize_t k = 0; k < nr; k++)
        if (same_ast(PyList_GET_ITEM(t.rest, k), PyList_GET_ITEM(w.rest, k)) != 1) goto done;
    char used[16] = {0};
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *ik = PyList_GET_ITEM(t.list, k);
        if (IS(ik, "Starred")) goto done;
        Py_ssize_t j = 0;
        for (; j < n; j++)
            if (!used[j] && same_ast(ik, PyList_GET_ITEM(w.list, j)) == 1) break;
        if (j == n) goto done;
        used[j] = 1;
    }
    m = n;
done:
    listsub_clear(&t);
    listsub_clear(&w);
    Py_XDECREF(ts);
    Py_XDECREF(v);
    PyErr_Clear();
    return m;
}

/* ast.Subscript(q.base, (idx, *q.rest)) at the place of `at` */
static PyObject *row_subscript(listsub *q, PyObject *idx, PyObject *at)
{
    static PyObject *sub_t, *tup_t, *load, *copy_loc;
    if (!sub_t) {
        PyObject *lt = ast_fn("Load");
        if (!lt || !(load = PyObject_CallNoArgs(lt)) || !(sub_t = ast_fn("Subscript")) || !(tup_t = ast_fn("Tuple")) ||
            !(copy_loc = ast_fn("copy_location"))) {
            Py_XDECREF(lt);
            Py_CLEAR(sub_t);
            return NULL;
        }
        Py_DECREF(lt);
    }
    PyObject *sl = NULL, *r = NULL, *kw = NULL, *args = PyTuple_New(0);
    Py_ssize_t nr = PyList_GET_SIZE(q->rest);
    if (!args) return NULL;
    if (!nr) {
        sl = Py_NewRef(idx);
    } else {
        PyObject *el = PyList_New(0);
        if (el && PyList_Append(el, idx) == 0) {
            for (Py_ssize_t k = 0; k < nr; k++)
                if (PyList_Append(el, PyList_GET_ITEM(q->rest, k)) < 0) Py_CLEAR(el);
        } else {
            Py_CLEAR(el);
        }
        if (el && (kw = Py_BuildValue("{s:O,s:O}", "elts", el, "ctx", load))) sl = PyObject_Call(tup_t, args, kw);
        Py_XDECREF(el);
        Py_CLEAR(kw);
        if (sl && !(r = PyObject_CallFunctionObjArgs(copy_loc, sl, at, NULL))) Py_CLEAR(sl);
        Py_CLEAR(r);
    }
    if (sl && (kw = Py_BuildValue("{s:O,s:O,s:O}", "value", q->base, "slice", sl, "ctx", load))) {
        PyObject *n = PyObject_Call(sub_t, args, kw);
        if (n) r = PyObject_CallFunctionObjArgs(copy_loc, n, at, NULL);
        Py_XDECREF(n);
    }
    Py_XDECREF(sl);
    Py_XDECREF(kw);
    Py_DECREF(args);
    return r;
}

static int perm_store(pctx *c, PyObject *s, Py_ssize_t m, nd_ln **out)
{
    int line = line_of(s), rc = -1, tmp[16];
    PyObject *ts = attr(s, "targets"), *v = ts ? attr(s, "value") : NULL;
    PyObject *tn = v ? PyList_GET_ITEM(ts, 0) : NULL;
    listsub t = {0}, w = {0};
    if (!tn || list_subscript(tn, &t) != 1 || list_subscript(v, &w) != 1) goto done;
    for (Py_ssize_t k = 0; k < m; k++) {
        int tv = temp_var(c, s, "rows", k);
        PyObject *sub = tv >= 0 ? row_subscript(&w, PyList_GET_ITEM(w.list, k), v) : NULL;
        nd_ln *x = sub ? expr(c, sub) : NULL, *pos = x ? nd_lir_node(c->ir, LK_UN, line, 1) : NULL;
        Py_XDECREF(sub);
        if (!pos || !(out[k] = nd_lir_node(c->ir, LK_ASSIGN, line, 1))) goto done;
        pos->op = LO_POS;
        pos->kid[0] = x;
        c->ir->vflags[tv] |= VF_ASSIGNED;
        out[k]->var = tmp[k] = tv;
        out[k]->kid[0] = pos;
    }
    for (Py_ssize_t k = 0; k < m; k++) {
        PyObject *sub = row_subscript(&t, PyList_GET_ITEM(t.list, k), tn);
        nd_ln *x = sub ? var_node(c, tmp[k], line) : NULL, *r = NULL;
        int av;
        if (x && (r = elem(c, sub, LK_STORE, &av))) c->ir->vflags[av] |= VF_STORED;
        Py_XDECREF(sub);
        if (!r) goto done;
        r->kid[0] = x;
        out[m + k] = r;
    }
    rc = 0;
done:
    listsub_clear(&t);
    listsub_clear(&w);
    Py_XDECREF(ts);
    Py_XDECREF(v);
    return rc;
}

static int block(pctx *c, PyObject *list, nd_ln ***out, int *nout)
{
    Py_ssize_t n = PyList_GET_SIZE(list), total = 0;
    *nout = 0;
    *out = NULL;
    if (!n) return 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *s = PyList_GET_ITEM(list, k);
        Py_ssize_t m = tuple_store_size(s), mc = chain_store_size(s);
        if (!m) m = perm_store_size(s);
        total += m ? 2 * m : mc ? 1 + mc : 1;
    }
    if (!(*out = nd_lir_alloc(c->ir, sizeof(nd_ln *) * (size_t)total))) return -1;
    Py_ssize_t j = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *s = PyList_GET_ITEM(list, k);
        Py_ssize_t m = tuple_store_size(s), mp = m ? 0 : perm_store_size(s), mc = chain_store_size(s);
        if (mc) {
            if (chain_store(c, s, mc, *out + j) < 0) return -1;
            j += 1 + mc;
        } else if (m) {
            if (tuple_store(c, s, m, *out + j) < 0) return -1;
            j += 2 * m;
        } else if (mp) {
            if (perm_store(c, s, mp, *out + j) < 0) return -1;
            j += 2 * mp;
        } else if (!((*out)[j++] = stmt(c, s))) {
            return -1;
        }
    }
    *nout = (int)total;
    return 0;
}

int nd_loop_parse(PyObject *loop, PyObject *locals, PyObject *globals, nd_lir *ir, PyObject **reason)
{
    memset(ir, 0, sizeof *ir);
    *reason = NULL;
    pctx c;
    memset(&c, 0, sizeof c);
    c.ir = ir;
    c.locals = locals;
    c.globals = globals;
    if (!(c.funcs = PyDict_New())) return -1;
    if (!(c.index = PyDict_New())) { Py_DECREF(c.funcs); return -1; }
    ir->line = line_of(loop);
    ir->root = stmt(&c, loop);
    int rc = 0;
    if (!ir->root) {
        if (c.reason) { *reason = c.reason; rc = 1; }
        else if (PyErr_Occurred()) rc = -1;
        else { *reason = PyUnicode_FromString("not supported"); rc = *reason ? 1 : -1; }
    } else {
        /* names in variable order */
        ir->names = PyTuple_New(ir->nvars);
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (ir->names && PyDict_Next(c.index, &pos, &k, &v))
            PyTuple_SET_ITEM(ir->names, PyLong_AsLong(v), Py_NewRef(k));
        if (!ir->names) rc = -1;
        /* the helpers inlined, by variable */
        if (rc == 0 && !(ir->funcs = PyTuple_New(ir->nvars))) rc = -1;
        for (int v = 0; rc == 0 && v < ir->nvars; v++) {
            PyObject *f = PyDict_GetItemWithError(c.funcs, PyTuple_GET_ITEM(ir->names, v));
            if (!f && PyErr_Occurred()) rc = -1;
            else PyTuple_SET_ITEM(ir->funcs, v, Py_NewRef(f ? f : Py_None));
        }
        /* an indexed name the loop assigns is an array local (row = A[i])
         * or not compilable: typing decides, per call (loop_types.c) */
    }
    Py_DECREF(c.index);
    Py_DECREF(c.funcs);
    if (rc != 0) nd_lir_free(ir);
    return rc;
}
