/* shim_masked.c -- reads a[m] through a lazy boolean mask, kept lazy.
 *
 * a[m] has a data-dependent shape (the mask's count), so returning a proxy
 * for it would need the mask's values: a graph break every read. But most
 * such reads only feed elementwise arithmetic whose result is written back
 * through the same mask:
 *
 *     z[m] = z[m] * z[m] + c[m]        counts[m] += 1
 *
 * and there every masked element of the result is f of the masked elements
 * of the operands, at the same positions. So a read gives a *masked value*:
 * an object holding the full-shape value of `a` and the mask. Elementwise
 * work on masked values by the same mask (and on scalars: Python, NumPy
 * and 0-d arrays, which broadcast the same against (count,) as against the
 * full shape) is done on the full shape, lazily, and `b[m] = v` with v a
 * masked value by the same mask (the same mask object, not written since)
 * is where(m, v, b): one fused pointwise kernel, no compaction, no break.
 * `v.sum()` is the sum of where(m, v, 0). Anything else (a shape, an
 * index, a non-elementwise function, another mask, an array operand, a
 * return) *compacts* the value first: NumPy's own a[m] on the computed
 * arrays (the recorded break of before), after which the object acts as
 * that array.
 *
 * NumPy evaluates f only at the masked elements; its warnings and errors
 * (np.errstate: overflow, invalid, divide) come from those alone. Here the
 * lanes outside the mask are not left as they were: a masked read
 * substitutes them with the value of one lane inside the mask (the first,
 * argmax(m)), so every lane computes f of values NumPy also computes f of,
 * and a floating-point flag is raised exactly when NumPy's computation
 * raises one (operations that cannot raise one -- comparisons, sign
 * changes, integer add/subtract/multiply -- skip the substitution) (its warning then comes from the NumPy re-run of the graph,
 * runtime_native.c). With an all-False mask there is no such lane: every
 * lane then holds a value no arithmetic flags (unless_all_false).
 */
#include "shim_internal.h"
#include <string.h>

typedef struct {
    PyObject_HEAD
    PyObject *val;       /* proxy: the full-shape value (private to this object) */
    PyObject *mask;      /* proxy: the mask's value at the read */
    PyObject *key;       /* the user's mask object (identity for writes) */
    nd_id mnode;         /* key's node at the read */
    int lead;            /* mask dims = leading dims of val */
    int safe;            /* lanes outside the mask hold lane argmax(m)'s values */
    PyObject *compact;   /* once compacted: NumPy's a[m] (then everything delegates) */
    npy_intp count;      /* the mask's count once computed (-1: not yet) */
} NdMasked;

static PyTypeObject NdMasked_Type;
Py_ssize_t nd_shim_live_masked;

int nd_shim_masked_check(PyObject *o) { return Py_IS_TYPE(o, &NdMasked_Type); }

static void masked_dealloc(NdMasked *m)
{
    Py_XDECREF(m->val);
    Py_XDECREF(m->mask);
    Py_XDECREF(m->key);
    Py_XDECREF(m->compact);
    nd_shim_live_masked--;
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static NdMasked *masked_make(PyObject *val, const NdMasked *like, int safe)
{
    NdMasked *m = PyObject_New(NdMasked, &NdMasked_Type);
    if (!m) { Py_DECREF(val); return NULL; }
    nd_shim_live_masked++;
    m->val = val;  /* stolen */
    m->mask = Py_NewRef(like->mask);
    m->key = Py_NewRef(like->key);
    m->mnode = like->mnode;
    m->lead = like->lead;
    m->safe = safe;
    m->compact = NULL;
    m->count = like->count;  /* the same mask: the same count */
    return m;
}

/* the mask's value viewed over val's shape (trailing dims stride 0) */
static nd_id mask_over(nd_trace *t, NdMasked *m)
{
    nd_id mk = nd_proxy_read(m->mask);
    if (mk == ND_NONE) return ND_NONE;
    int nd = nd_proxy_ndim(m->val);
    const npy_intp *sh = nd_proxy_shape(m->val);
    npy_intp cs[ND_MAXDIMS], st[ND_MAXDIMS] = {0};
    nd_c_strides(m->lead, sh, cs);
    for (int d = 0; d < m->lead; d++) st[d] = sh[d] == 1 ? 0 : cs[d];
    return nd_shim_node_view(t, mk, nd, sh, 0, st);
}

/* The mask's positions (NumPy's a[m] is a[m.nonzero()]): the mask alone
 * is computed -- a recorded break when it has no value yet -- and its
 * nonzero() is kept for the reads through the same mask (z[m], c[m],
 * gi[m] of one step: one flush and one nonzero, not one of each a read).
 * New ref, NULL on error. */
static _Thread_local struct { nd_trace *t; nd_id node; PyObject *val, *nz; } nz_cache;

static PyObject *mask_value(nd_trace *t, nd_id id)
{
    nd_graph *g = nd_trace_graph(t);
    return id >= 0 && id < g->n ? nd_graph_node(g, id)->value : NULL;
}

static PyObject *positions(nd_trace *t, NdMasked *m)
{
    /* the same mask node with the same computed array (held, so its
     * address is not another's): the same positions */
    PyObject *have = mask_value(t, m->mnode);
    if (have && nz_cache.t == t && nz_cache.node == m->mnode && nz_cache.val == have)
        return Py_NewRef(nz_cache.nz);
    PyObject *b = nd_proxy_base_array(m->mask);
    if (!b && PyErr_Occurred()) return NULL;
    Py_XDECREF(b);
    PyObject *mk = nd_trace_materialize(m->mask, b ? NULL : "boolean mask indexing: data-dependent output shape");
    PyObject *nz = mk ? PyArray_Nonzero((PyArrayObject *)mk) : NULL;
    Py_XDECREF(mk);
    if (!nz) return NULL;
    if ((have = mask_value(t, m->mnode))) {
        nz_cache.t = t;
        nz_cache.node = m->mnode;
        Py_XSETREF(nz_cache.val, Py_NewRef(have));
        Py_XSETREF(nz_cache.nz, Py_NewRef(nz));
    }
    if (m->count < 0 && PyTuple_GET_SIZE(nz) > 0)
        m->count = PyArray_DIM((PyArrayObject *)PyTuple_GET_ITEM(nz, 0), 0);
    return nz;
}

/* NumPy's a[m] of the value: a gather by the mask's positions */
static PyObject *compact(NdMasked *m)
{
    if (m->compact) return m->compact;
    nd_trace *t = nd_trace_current();
    if (t && nd_proxy_live(m->val)) {
        /* only the mask is computed (a recorded break when it has no
         * value yet); its positions index the value by a gather in the
         * graph (NumPy's a[m] is a[m.nonzero()]). NumPy's a[m] on the
         * computed value took the value out of the graph -- and, when
         * differentiated, its gradient with it --, computed it at every
         * compaction (z[out], gi[out], gj[out]: a flush each) and ran
         * NumPy's setitem with the compacted keys as a break. */
        PyObject *nz = positions(t, m);
        m->compact = nz ? nd_shim_advidx_getitem(t, m->val, nz) : NULL;
        Py_XDECREF(nz);
        return m->compact;
    }
    PyObject *op = PyImport_ImportModule("operator");
    PyObject *gi = op ? PyObject_GetAttrString(op, "getitem") : NULL;
    Py_XDECREF(op);
    if (!gi) return NULL;
    PyObject *args = PyTuple_Pack(2, m->val, m->mask);
    m->compact = args ? nd_trace_fallback_call(gi, args, NULL, "boolean mask indexing: data-dependent output shape")
                      : NULL;
    Py_XDECREF(args);
    Py_DECREF(gi);
    return m->compact;
}

/* The lane argmax(m) and the safe values already built, so that reads of
 * several arrays (or one array twice) through one mask share one argmax
 * and one substitution each. Node ids are stable within a trace; an entry
 * is used only while its node still is what it was made as. */
#define SAFE_CACHE 8
static _Thread_local struct { nd_trace *t; nd_id src, mnode, node; } safe_cache[SAFE_CACHE];
static _Thread_local int safe_next;  /* per thread, as trace state is */

static nd_id cached(nd_trace *t, nd_id src, nd_id mnode, int op)
{
    nd_graph *g = nd_trace_graph(t);
    for (int i = 0; i < SAFE_CACHE; i++) {
        if (safe_cache[i].t != t || safe_cache[i].src != src || safe_cache[i].mnode != mnode) continue;
        nd_id id = safe_cache[i].node;
        if (id < 0 || id >= g->n) continue;
        const nd_node *n = nd_graph_node(g, id);
        if (n->op != op) continue;
        if (op == ND_OP_REDUCE && n->sub == ND_RED_ARGMAX && n->in[0] == mnode) return id;
        if (op == ND_OP_WHERE && n->in[1] == src) return id;
    }
    return ND_NONE;
}

static void remember(nd_trace *t, nd_id src, nd_id mnode, nd_id node)
{
    safe_cache[safe_next].t = t;
    safe_cache[safe_next].src = src;
    safe_cache[safe_next].mnode = mnode;
    safe_cache[safe_next].node = node;
    safe_next = (safe_next + 1) % SAFE_CACHE;
}

/* An all-False mask has no lane inside it: argmax(m) is lane 0, which
 * NumPy never computes on. Then every lane holds a value no arithmetic
 * raises a flag on: a quiet NaN for inexact dtypes (it propagates without
 * one), 1 for integers and bools (no division by zero, no overflow). */
static nd_id unless_all_false(nd_trace *t, nd_id mk, nd_id jn, nd_id lane, int dtype)
{
    nd_id hit = nd_xj_gather(t, mk, jn);
    if (hit == ND_NONE) return ND_NONE;
    PyObject *v = PyTypeNum_ISCOMPLEX(dtype) ? PyComplex_FromDoubles(Py_NAN, Py_NAN)
                : PyTypeNum_ISFLOAT(dtype)   ? PyFloat_FromDouble(Py_NAN)
                : PyTypeNum_ISBOOL(dtype)    ? Py_NewRef(Py_True)
                                             : PyLong_FromLong(1);
    if (!v) return ND_NONE;
    nd_id c = nd_shim_node_scalar(t, v, dtype, 0);
    Py_DECREF(v);
    return c == ND_NONE ? ND_NONE : nd_shim_node_where(t, hit, lane, c, dtype);
}

/* val with its lanes outside the mask replaced by lane argmax(m)'s (see
 * the file comment); done once per value */
static int make_safe(nd_trace *t, NdMasked *m)
{
    if (m->safe) return 0;
    if (nd_xj_size(nd_proxy_ndim(m->val), nd_proxy_shape(m->val)) == 0) {
        m->safe = 1;  /* no lanes at all */
        return 0;
    }
    nd_id mk = nd_proxy_read(m->mask), src = mk == ND_NONE ? ND_NONE : nd_proxy_read(m->val);
    if (src == ND_NONE) return -1;
    nd_id w = cached(t, src, mk, ND_OP_WHERE);
    if (w == ND_NONE) {
        int nd = nd_proxy_ndim(m->val), dtype = nd_proxy_dtype(m->val);
        npy_intp sh[ND_MAXDIMS];
        memcpy(sh, nd_proxy_shape(m->val), sizeof(npy_intp) * (size_t)nd);
        nd_id jn = cached(t, ND_NONE, mk, ND_OP_REDUCE);
        if (jn == ND_NONE) {
            uint64_t all = m->lead >= 64 ? ~0ull : (1ull << m->lead) - 1;
            jn = nd_shim_node_reduce(t, ND_RED_ARGMAX, mk, all, 0, NPY_BOOL, NPY_INT64, ND_NONE);
            if (jn == ND_NONE) return -1;
            remember(t, ND_NONE, mk, jn);
        }
        npy_intp T = 1;
        for (int d = m->lead; d < nd; d++) T *= sh[d];
        nd_id flat = jn;
        if (nd > m->lead) {
            /* the row j of val seen as (elements of the mask, T) */
            nd_id row = nd_shim_node_index(t, 1, &T, 0);
            flat = row == ND_NONE ? ND_NONE : nd_xj_ibin_c(t, ND_UF_MULTIPLY, jn, (long long)T);
            flat = flat == ND_NONE ? ND_NONE : nd_xj_ibin(t, ND_UF_ADD, flat, row);
        }
        nd_id lane = flat == ND_NONE ? ND_NONE : nd_xj_gather(t, src, flat);
        if (lane != ND_NONE && nd > m->lead)
            lane = nd_shim_node_reshape(t, lane, nd - m->lead, sh + m->lead);
        if (lane != ND_NONE) lane = unless_all_false(t, mk, jn, lane, dtype);
        nd_id lb = lane == ND_NONE ? ND_NONE : nd_shim_node_broadcast(t, lane, nd, sh);
        nd_id cond = lb == ND_NONE ? ND_NONE : mask_over(t, m);
        w = cond == ND_NONE ? ND_NONE : nd_shim_node_where(t, cond, src, lb, dtype);
        if (w == ND_NONE) return -1;
        remember(t, src, mk, w);
    }
    PyObject *p = nd_shim_wrap(t, w, 0);
    if (!p) return -1;
    Py_SETREF(m->val, p);
    m->safe = 1;
    return 0;
}

/* NumPy treats o as a scalar against a (count, ...) array and against the
 * full shape alike: same broadcast, same NEP 50 typing */
static int scalar_like(PyObject *o)
{
    if (PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o)) return 1;
    if (PyArray_IsScalar(o, Generic)) return 1;
    if (PyArray_Check(o)) return PyArray_NDIM((PyArrayObject *)o) == 0;
    if (nd_proxy_check(o)) return nd_proxy_live(o) && nd_proxy_ndim(o) == 0;
    return 0;
}

/* a masked value by the same mask, over the same shape, not compacted */
static int same_mask(const NdMasked *a, const NdMasked *b)
{
    if (a->compact || b->compact || a->key != b->key || a->mnode != b->mnode || a->lead != b->lead) return 0;
    int nd = nd_proxy_ndim(a->val);
    return nd == nd_proxy_ndim(b->val) &&
           !memcmp(nd_proxy_shape(a->val), nd_proxy_shape(b->val), sizeof(npy_intp) * (size_t)nd);
}

/* When an operation can raise floating-point flags (np.errstate) and so
 * needs the lanes outside the mask substituted: always (division, power,
 * any ufunc), only with inexact operands (add, subtract, multiply,
 * absolute: integer overflow wraps silently in NumPy's array loops), never
 * (comparisons, sign changes, bitwise ops). */
enum { FL_ALWAYS, FL_INEXACT, FL_NEVER };

static int inexact_type(int d) { return PyTypeNum_ISFLOAT(d) || PyTypeNum_ISCOMPLEX(d); }

static int inexact(PyObject *o)
{
    if (nd_shim_masked_check(o)) return inexact_type(nd_proxy_dtype(((NdMasked *)o)->val));
    if (PyFloat_Check(o) || PyComplex_Check(o) || PyArray_IsScalar(o, Inexact)) return 1;
    if (PyArray_Check(o)) return inexact_type(PyArray_TYPE((PyArrayObject *)o));
    if (nd_proxy_check(o)) return inexact_type(nd_proxy_dtype(o));
    return 0;
}

/* Operands for elementwise work on the full shape: each masked one's
 * value (substituted where the operation class `fl` needs it), scalars as
 * they are. *like: the masked operand the result takes its mask from;
 * *safe: whether every masked operand's outside lanes are substituted (so
 * the result's are). 1 when the operation can stay masked, 0 when it
 * cannot (compact), -1 on error. */
static int full_operands(int n, PyObject *const *in, PyObject **out, NdMasked **like, int fl, int *safe)
{
    nd_trace *t = nd_trace_current();
    int need = fl == FL_ALWAYS;
    *like = NULL;
    for (int k = 0; k < n; k++) {
        if (fl == FL_INEXACT && inexact(in[k])) need = 1;
        if (nd_shim_masked_check(in[k])) {
            NdMasked *m = (NdMasked *)in[k];
            if (!t || m->compact || !nd_proxy_live(m->val)) return 0;
            if (*like && !same_mask(*like, m)) return 0;
            if (!*like) *like = m;
        } else if (!scalar_like(in[k])) {
            return 0;
        }
    }
    if (!*like) return 0;
    *safe = 1;
    for (int k = 0; k < n; k++) {
        if (nd_shim_masked_check(in[k])) {
            NdMasked *m = (NdMasked *)in[k];
            if (need && make_safe(t, m) < 0) return -1;
            *safe &= m->safe;
            out[k] = m->val;
        } else {
            out[k] = in[k];
        }
    }
    return 1;
}

/* operands with masked values compacted (borrowed refs in out) */
static int compacted(int n, PyObject *const *in, PyObject **out)
{
    for (int k = 0; k < n; k++) {
        out[k] = nd_shim_masked_check(in[k]) ? compact((NdMasked *)in[k]) : in[k];
        if (!out[k]) return -1;
    }
    return 0;
}

/* the result of elementwise work on full values: masked again */
static PyObject *rewrap(PyObject *r, NdMasked *like, int n, PyObject *const *vals, int safe)
{
    if (!r || r == Py_NotImplemented) return r;
    if (PyTuple_Check(r)) {
        Py_ssize_t k = PyTuple_GET_SIZE(r);
        PyObject *o = PyTuple_New(k);
        for (Py_ssize_t i = 0; o && i < k; i++) {
            PyObject *e = rewrap(Py_NewRef(PyTuple_GET_ITEM(r, i)), like, n, vals, safe);
            if (!e) Py_CLEAR(o);
            else PyTuple_SET_ITEM(o, i, e);
        }
        Py_DECREF(r);
        return o;
    }
    int shared = 0;
    for (int k = 0; k < n; k++) shared |= r == vals[k];
    if (!nd_proxy_check(r) || shared) {
        /* not a new full-shape value (never expected): the object it is */
        Py_DECREF(r);
        PyErr_SetString(PyExc_RuntimeError, "numdyn: internal error: masked elementwise result");
        return NULL;
    }
    return (PyObject *)masked_make(r, like, safe);
}

typedef PyObject *(*nd_binop)(PyObject *, PyObject *);

static PyObject *binop(PyObject *a, PyObject *b, nd_binop f, int fl)
{
    PyObject *in[2] = {a, b}, *v[2];
    NdMasked *like;
    int safe, ok = full_operands(2, in, v, &like, fl, &safe);
    if (ok < 0) return NULL;
    if (ok) return rewrap(f(v[0], v[1]), like, 2, v, safe);
    if (compacted(2, in, v) < 0) return NULL;
    return f(v[0], v[1]);
}

/* a op= b: a masked value's full value is its own, so it takes the
 * in-place op (NumPy's casting rules of out=) */
static PyObject *inplace(PyObject *a, PyObject *b, nd_binop f, int fl)
{
    NdMasked *m = (NdMasked *)a;
    PyObject *in[2] = {a, b}, *v[2];
    NdMasked *like;
    int safe, ok = full_operands(2, in, v, &like, fl, &safe);
    if (ok < 0) return NULL;
    if (!ok) {
        if (compacted(2, in, v) < 0) return NULL;
        PyObject *r = f(v[0], v[1]);
        if (r == v[0]) { Py_DECREF(r); return Py_NewRef(a); }
        return r;
    }
    PyObject *r = f(v[0], v[1]);
    if (!r) return NULL;
    if (!nd_proxy_check(r)) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_RuntimeError, "numdyn: internal error: masked in-place result");
        return NULL;
    }
    Py_SETREF(m->val, r);
    m->safe = safe;
    return Py_NewRef(a);
}

static PyObject *unop(PyObject *a, PyObject *(*f)(PyObject *), int fl)
{
    PyObject *v;
    NdMasked *like;
    int safe, ok = full_operands(1, &a, &v, &like, fl, &safe);
    if (ok < 0) return NULL;
    if (ok) return rewrap(f(v), like, 1, &v, safe);
    if (compacted(1, &a, &v) < 0) return NULL;
    return f(v);
}

static PyObject *pow2(PyObject *a, PyObject *b) { return PyNumber_Power(a, b, Py_None); }
static PyObject *ipow2(PyObject *a, PyObject *b) { return PyNumber_InPlacePower(a, b, Py_None); }

#define BIN(name, fn, fl) static PyObject *name(PyObject *a, PyObject *b) { return binop(a, b, fn, fl); }
#define INP(name, fn, fl) static PyObject *name(PyObject *a, PyObject *b) { return inplace(a, b, fn, fl); }
BIN(m_add, PyNumber_Add, FL_INEXACT) BIN(m_sub, PyNumber_Subtract, FL_INEXACT)
BIN(m_mul, PyNumber_Multiply, FL_INEXACT) BIN(m_truediv, PyNumber_TrueDivide, FL_ALWAYS)
BIN(m_floordiv, PyNumber_FloorDivide, FL_ALWAYS) BIN(m_mod, PyNumber_Remainder, FL_ALWAYS)
BIN(m_divmod, PyNumber_Divmod, FL_ALWAYS) BIN(m_and, PyNumber_And, FL_NEVER)
BIN(m_or, PyNumber_Or, FL_NEVER) BIN(m_xor, PyNumber_Xor, FL_NEVER)
BIN(m_lshift, PyNumber_Lshift, FL_NEVER) BIN(m_rshift, PyNumber_Rshift, FL_NEVER)
INP(m_iadd, PyNumber_InPlaceAdd, FL_INEXACT) INP(m_isub, PyNumber_InPlaceSubtract, FL_INEXACT)
INP(m_imul, PyNumber_InPlaceMultiply, FL_INEXACT) INP(m_itruediv, PyNumber_InPlaceTrueDivide, FL_ALWAYS)
INP(m_ifloordiv, PyNumber_InPlaceFloorDivide, FL_ALWAYS) INP(m_imod, PyNumber_InPlaceRemainder, FL_ALWAYS)
INP(m_iand, PyNumber_InPlaceAnd, FL_NEVER) INP(m_ior, PyNumber_InPlaceOr, FL_NEVER)
INP(m_ixor, PyNumber_InPlaceXor, FL_NEVER) INP(m_ilshift, PyNumber_InPlaceLshift, FL_NEVER)
INP(m_irshift, PyNumber_InPlaceRshift, FL_NEVER)

static PyObject *m_pow(PyObject *a, PyObject *b, PyObject *c)
{
    if (c != Py_None) {
        PyObject *v[2], *in[2] = {a, b};
        if (compacted(2, in, v) < 0) return NULL;
        return PyNumber_Power(v[0], v[1], c);
    }
    return binop(a, b, pow2, FL_ALWAYS);
}

static PyObject *m_ipow(PyObject *a, PyObject *b, PyObject *c)
{
    if (c != Py_None) {
        PyObject *v[2], *in[2] = {a, b};
        if (compacted(2, in, v) < 0) return NULL;
        return PyNumber_InPlacePower(v[0], v[1], c);
    }
    return inplace(a, b, ipow2, FL_ALWAYS);
}

static PyObject *m_matmul(PyObject *a, PyObject *b)
{
    PyObject *v[2], *in[2] = {a, b};
    if (compacted(2, in, v) < 0) return NULL;
    return PyNumber_MatrixMultiply(v[0], v[1]);
}

static PyObject *m_imatmul(PyObject *a, PyObject *b)
{
    PyObject *v[2], *in[2] = {a, b};
    if (compacted(2, in, v) < 0) return NULL;
    PyObject *r = PyNumber_InPlaceMatrixMultiply(v[0], v[1]);
    if (r == v[0]) { Py_DECREF(r); return Py_NewRef(a); }
    return r;
}

static PyObject *m_neg(PyObject *a) { return unop(a, PyNumber_Negative, FL_NEVER); }
static PyObject *m_pos(PyObject *a) { return unop(a, PyNumber_Positive, FL_NEVER); }
static PyObject *m_abs(PyObject *a) { return unop(a, PyNumber_Absolute, FL_INEXACT); }
static PyObject *m_invert(PyObject *a) { return unop(a, PyNumber_Invert, FL_NEVER); }

static PyObject *self_compact(PyObject *a) { return compact((NdMasked *)a); }

static int m_bool(PyObject *a)
{
    PyObject *c = self_compact(a);
    return c ? PyObject_IsTrue(c) : -1;
}
static PyObject *m_int(PyObject *a) { PyObject *c = self_compact(a); return c ? PyNumber_Long(c) : NULL; }
static PyObject *m_float(PyObject *a) { PyObject *c = self_compact(a); return c ? PyNumber_Float(c) : NULL; }
static PyObject *m_index(PyObject *a) { PyObject *c = self_compact(a); return c ? PyNumber_Index(c) : NULL; }
static PyObject *m_repr(PyObject *a) { PyObject *c = self_compact(a); return c ? PyObject_Repr(c) : NULL; }
static PyObject *m_str(PyObject *a) { PyObject *c = self_compact(a); return c ? PyObject_Str(c) : NULL; }
static PyObject *m_iter(PyObject *a) { PyObject *c = self_compact(a); return c ? PyObject_GetIter(c) : NULL; }

/* the last count taken (a strong reference to its key: an address is
 * not reused while held) */
static _Thread_local struct { nd_trace *t; PyObject *key; nd_id node; npy_intp n; } count_cache;

/* The count of mask node mk when it is `~k` / `np.logical_not(k)` of a
 * boolean k already computed: k's size less k's count, from k's value --
 * no flush (a compacting loop's `keep = ~gone` after `x[gone]` computed
 * gone: `len(x[keep])` was a flush of its own every step). -2: not such
 * a mask; -1: error. */
static npy_intp complement_count(nd_trace *t, nd_id mk)
{
    nd_graph *g = nd_trace_graph(t);
    const nd_node *n = nd_graph_node(g, mk);
    if (n->op != ND_OP_UFUNC || (n->sub != ND_UF_INVERT && n->sub != ND_UF_LOGICAL_NOT) ||
        n->nin != 1 || n->dtype != NPY_BOOL || n->in_dtype[0] != NPY_BOOL || n->in[0] < 0)
        return -2;
    PyObject *k = nd_graph_node(g, n->in[0])->value;
    npy_intp size = 1;
    for (int d = 0; d < n->ndim; d++) size *= n->shape[d];
    if (!k || !PyArray_Check(k) || PyArray_TYPE((PyArrayObject *)k) != NPY_BOOL ||
        PyArray_SIZE((PyArrayObject *)k) != size)
        return -2;
    npy_intp c = PyArray_CountNonzero((PyArrayObject *)k);
    return c < 0 ? -1 : size - c;
}

/* The number of selected elements (a[m].shape[0]): only the mask's count
 * is computed (a flush of the count alone: the value stays lazy, no a[m]),
 * once per mask (values made from this one inherit it). -1 on error. */
static npy_intp masked_count(NdMasked *m)
{
    if (m->count >= 0) return m->count;
    if (m->compact) return m->count = PyObject_Length(m->compact);
    nd_trace *t = nd_trace_current();
    if (!t) {
        PyObject *c = compact(m);
        return c ? (m->count = PyObject_Length(c)) : -1;
    }
    /* reads through one mask object, not written since, share its count:
     * the mask's node the last count was taken of, read after that flush */
    if (count_cache.t == t && count_cache.key == m->key && count_cache.node == m->mnode)
        return m->count = count_cache.n;
    nd_id kn = nd_proxy_live(m->key) ? nd_proxy_read(m->key) : ND_NONE;
    PyErr_Clear();
    nd_id mk = nd_proxy_read(m->mask);
    npy_intp n = mk == ND_NONE ? -1 : complement_count(t, mk);
    if (n == -2) {
        nd_id cn = nd_shim_node_reduce(t, ND_UF_ADD, mk, ~0ULL, 0, NPY_INT64, NPY_INT64, ND_NONE);
        PyObject *p = cn == ND_NONE ? NULL : nd_shim_wrap(t, cn, 0);
        PyObject *v = p ? nd_trace_materialize(p, "boolean mask indexing: the count of a masked read") : NULL;
        Py_XDECREF(p);
        PyObject *i = v ? PyNumber_Index(v) : NULL;
        Py_XDECREF(v);
        n = i ? PyLong_AsSsize_t(i) : -1;
        Py_XDECREF(i);
    }
    if (n < 0) return -1;
    /* the key's node after the flush, if the key still reads the value
     * the mask was taken of */
    kn = m->mnode == kn && nd_proxy_live(m->key) ? nd_proxy_read(m->key) : ND_NONE;
    PyErr_Clear();
    count_cache.t = t;
    Py_XSETREF(count_cache.key, kn == ND_NONE ? NULL : Py_NewRef(m->key));
    count_cache.node = kn;
    count_cache.n = n;
    return m->count = n;
}

/* rows of a[m] other than the first dimension: val's trailing dims */
static npy_intp row_size(NdMasked *m)
{
    npy_intp T = 1;
    for (int d = m->lead; d < nd_proxy_ndim(m->val); d++) T *= nd_proxy_shape(m->val)[d];
    return T;
}

static Py_ssize_t m_len(PyObject *a)
{
    NdMasked *m = (NdMasked *)a;
    if (m->compact) return PyObject_Length(m->compact);
    return masked_count(m);
}
static PyObject *m_getitem(PyObject *a, PyObject *k) { PyObject *c = self_compact(a); return c ? PyObject_GetItem(c, k) : NULL; }
static int m_contains(PyObject *a, PyObject *v) { PyObject *c = self_compact(a); return c ? PySequence_Contains(c, v) : -1; }

static int m_setitem(PyObject *a, PyObject *k, PyObject *v)
{
    PyObject *c = self_compact(a);
    if (!c) return -1;
    return v ? PyObject_SetItem(c, k, v) : PyObject_DelItem(c, k);
}

static int m_getbuffer(PyObject *a, Py_buffer *view, int flags)
{
    PyObject *c = self_compact(a);
    return c ? PyObject_GetBuffer(c, view, flags) : -1;
}

static PyObject *m_richcompare(PyObject *a, PyObject *b, int op)
{
    PyObject *in[2] = {a, b}, *v[2];
    NdMasked *like;
    int safe, ok = full_operands(2, in, v, &like, FL_NEVER, &safe);
    if (ok < 0) return NULL;
    if (ok) return rewrap(PyObject_RichCompare(v[0], v[1], op), like, 2, v, safe);
    if (compacted(2, in, v) < 0) return NULL;
    return PyObject_RichCompare(v[0], v[1], op);
}

/* a[m]'s dtype, ndim, shape and size without a[m]: the first from the
 * value, the others from the mask's count (masked_count) */
static PyObject *shape_attr(NdMasked *m, PyObject *name)
{
    /* attribute names (not keywords: shim_args.c parses those) */
    static const char *const attrs[] = {"dtype", "ndim", "shape", "size"};
    enum { A_DTYPE, A_NDIM, A_SHAPE, A_SIZE, A_NONE };
    if (m->compact || !nd_proxy_live(m->val) || !PyUnicode_Check(name)) return NULL;
    int k = A_DTYPE;
    while (k < A_NONE && PyUnicode_CompareWithASCIIString(name, attrs[k]) != 0) k++;
    if (k == A_NONE) return NULL;
    if (k == A_DTYPE) return PyObject_GetAttr(m->val, name);
    int nd = nd_proxy_ndim(m->val);
    if (k == A_NDIM) return PyLong_FromLong(nd - m->lead + 1);
    int shape = k == A_SHAPE;
    npy_intp n = masked_count(m);
    if (n < 0) return NULL;
    if (!shape) return PyLong_FromSsize_t(n * row_size(m));
    PyObject *r = PyTuple_New(nd - m->lead + 1);
    for (int d = m->lead - 1; r && d < nd; d++) {
        PyObject *e = PyLong_FromSsize_t(d < m->lead ? n : nd_proxy_shape(m->val)[d]);
        if (!e) Py_CLEAR(r);
        else PyTuple_SET_ITEM(r, d - m->lead + 1, e);
    }
    return r;
}

/* everything not defined here is the compacted array's */
static PyObject *m_getattro(PyObject *a, PyObject *name)
{
    PyObject *r = PyObject_GenericGetAttr(a, name);
    if (r || !PyErr_ExceptionMatches(PyExc_AttributeError)) return r;
    PyErr_Clear();
    if ((r = shape_attr((NdMasked *)a, name)) || PyErr_Occurred()) return r;
    PyObject *c = self_compact(a);
    return c ? PyObject_GetAttr(c, name) : NULL;
}

static PyObject *g_class(PyObject *o, void *c) { return Py_NewRef((PyObject *)&PyArray_Type); }

/* masked values in the arguments replaced by their compacted arrays, down
 * through tuples and lists: np.concatenate([a[m1], b[m2]]) dispatches on the
 * list's items, so a masked value left in a list comes back here forever */
static PyObject *compact_item(PyObject *e);

static PyObject *compact_seq(PyObject *args)
{
    int list = PyList_Check(args);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(args);
    PyObject *r = list ? PyList_New(n) : PyTuple_New(n);
    for (Py_ssize_t i = 0; r && i < n; i++) {
        PyObject *e = compact_item(PySequence_Fast_GET_ITEM(args, i));
        if (!e) Py_CLEAR(r);
        else if (list) PyList_SET_ITEM(r, i, e);
        else PyTuple_SET_ITEM(r, i, e);
    }
    return r;
}

static PyObject *compact_item(PyObject *e)
{
    if (PyTuple_Check(e) || PyList_Check(e)) return compact_seq(e);
    if (nd_shim_masked_check(e)) return Py_XNewRef(compact((NdMasked *)e));
    return Py_NewRef(e);
}

PyObject *nd_shim_masked_key(PyObject *key)
{
    if (!nd_shim_live_masked) return Py_NewRef(key);
    if (nd_shim_masked_check(key)) return compact_item(key);
    if (!PyTuple_Check(key)) return Py_NewRef(key);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key); i++)
        if (nd_shim_masked_check(PyTuple_GET_ITEM(key, i))) return compact_seq(key);
    return Py_NewRef(key);
}

static PyObject *compact_kw(PyObject *kw)
{
    if (!kw) return NULL;
    PyObject *r = PyDict_New(), *k, *v;
    Py_ssize_t pos = 0;
    while (r && PyDict_Next(kw, &pos, &k, &v)) {
        PyObject *e = compact_item(v);
        if (!e || PyDict_SetItem(r, k, e) < 0) Py_CLEAR(r);
        Py_XDECREF(e);
    }
    return r;
}

static PyObject *m_array_ufunc(PyObject *self, PyObject *args, PyObject *kw)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    if (n < 2) {
        PyErr_SetString(PyExc_TypeError, "__array_ufunc__ takes ufunc and method");
        return NULL;
    }
    PyObject *uf = PyTuple_GET_ITEM(args, 0), *method = PyTuple_GET_ITEM(args, 1);
    PyObject *inputs = PyTuple_GetSlice(args, 2, n);
    if (!inputs) return NULL;
    Py_ssize_t nin = PyTuple_GET_SIZE(inputs);
    PyObject *r = NULL;
    if (PyUnicode_Check(method) && PyUnicode_CompareWithASCIIString(method, "__call__") == 0 &&
        (!kw || PyDict_GET_SIZE(kw) == 0) && nin >= 1 && nin <= 8) {
        PyObject *v[8];
        NdMasked *like;
        int safe, ok = full_operands((int)nin, &PyTuple_GET_ITEM(inputs, 0), v, &like, FL_ALWAYS, &safe);
        if (ok < 0) goto done;
        if (ok) {
            PyObject *vt = PyTuple_New(nin);
            for (Py_ssize_t i = 0; vt && i < nin; i++) PyTuple_SET_ITEM(vt, i, Py_NewRef(v[i]));
            r = vt ? rewrap(PyObject_Call(uf, vt, NULL), like, (int)nin, v, safe) : NULL;
            Py_XDECREF(vt);
            goto done;
        }
    }
    {
        PyObject *ci = compact_seq(inputs), *ck = kw ? compact_kw(kw) : NULL;
        PyObject *f = ci && (!kw || ck) ? PyObject_GetAttr(uf, method) : NULL;
        r = f ? PyObject_Call(f, ci, ck) : NULL;
        Py_XDECREF(f);
        Py_XDECREF(ci);
        Py_XDECREF(ck);
    }
done:
    Py_DECREF(inputs);
    return r;
}

static PyObject *m_array_function(PyObject *self, PyObject *args)
{
    PyObject *func, *types, *fa, *fk;
    if (!PyArg_ParseTuple(args, "OOOO", &func, &types, &fa, &fk)) return NULL;
    PyObject *ca = PyTuple_Check(fa) ? compact_seq(fa) : NULL;
    PyObject *ck = ca && PyDict_Check(fk) ? compact_kw(fk) : NULL;
    PyObject *r = ck ? PyObject_Call(func, ca, ck) : NULL;
    if (!ca && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "__array_function__: bad arguments");
    Py_XDECREF(ca);
    Py_XDECREF(ck);
    return r;
}

static PyObject *m_array(PyObject *self, PyObject *args, PyObject *kw)
{
    PyObject *c = compact((NdMasked *)self);
    PyObject *f = c ? PyObject_GetAttrString(c, "__array__") : NULL;
    PyObject *r = f ? PyObject_Call(f, args, kw) : NULL;
    Py_XDECREF(f);
    return r;
}

/* Full reductions of a masked value kept in the graph: v.sum() is
 * where(m, v, 0).sum(), the same dtype rules (a sum of an empty selection
 * is 0 of that dtype, as NumPy's); v.mean() that sum over the count of m
 * (nd_shim_masked_mean: NumPy's warnings for an empty selection). Only
 * dtype= may be given (an inexact one for mean); anything else is NumPy's
 * reduction of the compacted a[m]. np.sum(v) / np.mean(v) come here too
 * (m_array_function). */
enum { RED_SUM, RED_MEAN };

/* NumPy's method `name` of the compacted a[m] */
static PyObject *compact_method(NdMasked *m, const char *name, PyObject *args, PyObject *kw)
{
    PyObject *c = compact(m);
    PyObject *f = c ? PyObject_GetAttrString(c, name) : NULL;
    PyObject *r = f ? PyObject_Call(f, args, kw) : NULL;
    Py_XDECREF(f);
    return r;
}

static int full_reduction_args(NdMasked *m, int which, PyObject *args, PyObject *kw, PyObject **dtype)
{
    *dtype = NULL;
    if (PyTuple_GET_SIZE(args) != 0 || m->compact || !nd_proxy_live(m->val)) return 0;
    if (!kw) return 1;
    static const nd_shim_def sum_def = {"sum", "|axis,dtype,out;keepdims,initial,where", NULL, 0};
    static const nd_shim_def mean_def = {"mean", "|axis,dtype,out;keepdims,where", NULL, 0};
    const nd_shim_def *def = which == RED_SUM ? &sum_def : &mean_def;
    PyObject *argv[ND_SHIM_MAXARGS];
    if (nd_shim_parse_args(def, args, kw, argv) < 0) {
        PyErr_Clear();  /* NumPy's reduction of a[m] raises NumPy's own error */
        return 0;
    }
    for (int k = 0; k < nd_shim_spec(def)->n; k++)
        if (argv[k] && k != 1) return 0;
    if (argv[1] && argv[1] != Py_None) {
        if (which == RED_SUM) {
            *dtype = argv[1];
            return 1;
        }
        PyArray_Descr *d = NULL;
        if (!PyArray_DescrConverter2(argv[1], &d) || !d) {
            PyErr_Clear();
            return 0;
        }
        int num = d->type_num;
        Py_DECREF(d);
        if (!PyTypeNum_ISFLOAT(num) && !PyTypeNum_ISCOMPLEX(num)) return 0;
        if (num == NPY_LONGDOUBLE || num == NPY_CLONGDOUBLE) return 0;
        *dtype = argv[1];
    }
    return 1;
}

static PyObject *full_reduction(PyObject *self, int which, PyObject *args, PyObject *kw)
{
    NdMasked *m = (NdMasked *)self;
    nd_trace *t = nd_trace_current();
    PyObject *dtarg = NULL;
    int plain = t ? full_reduction_args(m, which, args, kw, &dtarg) : 0;
    const char *name = which == RED_SUM ? "sum" : "mean";
    if (!plain) return compact_method(m, name, args, kw);
    int nd = nd_proxy_ndim(m->val), dtype = nd_proxy_dtype(m->val);
    npy_intp sh[ND_MAXDIMS];
    memcpy(sh, nd_proxy_shape(m->val), sizeof(npy_intp) * (size_t)nd);
    nd_id v = nd_proxy_read(m->val);
    nd_id z = v == ND_NONE ? ND_NONE : nd_xj_zeros(t, dtype, nd, sh);
    nd_id cond = z == ND_NONE ? ND_NONE : mask_over(t, m);
    nd_id w = cond == ND_NONE ? ND_NONE : nd_shim_node_where(t, cond, v, z, dtype);
    if (w == ND_NONE) return NULL;
    if (which == RED_MEAN) {
        nd_id cnt = nd_shim_node_reduce(t, ND_UF_ADD, cond, ~0ULL, 0, NPY_INT64, NPY_INT64, ND_NONE);
        int dt = -1;
        if (dtarg) {
            PyArray_Descr *d = NULL;
            if (!PyArray_DescrConverter2(dtarg, &d) || !d) return NULL;
            dt = d->type_num;
            Py_DECREF(d);
        }
        return cnt == ND_NONE ? NULL : nd_shim_masked_mean(t, w, cnt, dtype, dt);
    }
    PyObject *p = nd_shim_wrap(t, w, 0);
    PyObject *f = p ? PyObject_GetAttrString(p, name) : NULL;
    PyObject *r = f ? PyObject_Call(f, args, kw) : NULL;
    Py_XDECREF(f);
    Py_XDECREF(p);
    return r;
}

/* v.sum() ... called on the masked read itself (not through np.sum(v):
 * call_impl, shim_module.c) as one traced operation: under the error state
 * it is called in, and its errors and warnings (an empty selection's "Mean
 * of empty slice" under a warnings filter 'error') given the chance to
 * reach the user's try block (nd_shim_settled) */
typedef PyObject *(*masked_red)(PyObject *self, int which, PyObject *args, PyObject *kw);

static PyObject *as_operation(masked_red red, PyObject *self, int which, PyObject *args, PyObject *kw)
{
    nd_trace *t = nd_trace_current();
    if (!t) return red(self, which, args, kw);
    if (nd_trace_errstate_sync(t) < 0) return NULL;
    nd_id first = nd_shim_graph_size(t);
    return nd_shim_settled(t, first, red(self, which, args, kw));
}

static PyObject *m_sum(PyObject *self, PyObject *args, PyObject *kw)
{
    return as_operation(full_reduction, self, RED_SUM, args, kw);
}

static PyObject *m_mean(PyObject *self, PyObject *args, PyObject *kw)
{
    return as_operation(full_reduction, self, RED_MEAN, args, kw);
}

/* v.max() / v.min() (np.max(v), np.amax(v), ...: shim_reduce.c) kept in
 * the graph: the reduction of the substituted value (make_safe: every lane
 * outside the mask holds a lane inside it), which has a[m]'s elements and
 * no others, so its max/min, NaNs included, is a[m]'s, in a[m]'s dtype.
 * An empty selection has no identity: NumPy's ValueError, raised here as
 * NumPy raises it, which needs the mask's count (masked_count: the count
 * alone is computed, not a[m]). Any argument, or differentiation (the
 * gradient of a[m]'s max goes to one element, not to its copies), is
 * NumPy's reduction of the compacted a[m]. */
static PyObject *minmax_red(PyObject *self, int is_max, PyObject *args, PyObject *kw)
{
    NdMasked *m = (NdMasked *)self;
    nd_trace *t = nd_trace_current();
    const char *name = is_max ? "max" : "min";
    int plain = t && !nd_trace_differentiating(t) && PyTuple_GET_SIZE(args) == 0 && !m->compact &&
                nd_proxy_live(m->val) && (!kw || PyDict_GET_SIZE(kw) == 0);
    if (!plain) return compact_method(m, name, args, kw);
    npy_intp n = masked_count(m);
    if (n < 0) return NULL;
    if (n * row_size(m) == 0) {
        PyErr_Format(PyExc_ValueError, "zero-size array to reduction operation %s which has no identity",
                     is_max ? "maximum" : "minimum");
        return NULL;
    }
    if (make_safe(t, m) < 0) return NULL;
    return PyObject_CallMethod(m->val, name, NULL);
}

/* a / b of two NumPy values (no weak operand), as NumPy's loop types them;
 * scalar: a NumPy scalar by an np.intp: scalar math ("scalar divide"
 * warnings) where a's type holds intp safely, else (float32) NumPy defers
 * to the ufunc ("divide") */
static nd_id np_divide(nd_trace *t, nd_id a, nd_id b, int scalar)
{
    nd_graph *g = nd_trace_graph(t);
    int dt[2] = {nd_graph_node(g, a)->dtype, nd_graph_node(g, b)->dtype}, weak[2] = {0, 0}, loop[2], out;
    PyObject *vals[2] = {NULL, NULL};
    if (nd_shim_resolve_ufunc(ND_UF_TRUE_DIVIDE, 2, dt, weak, vals, loop, &out) < 0) return ND_NONE;
    nd_id in[2] = {nd_shim_node_cast(t, a, loop[0]), nd_shim_node_cast(t, b, loop[1])};
    if (in[0] == ND_NONE || in[1] == ND_NONE) return ND_NONE;
    nd_id q = nd_shim_node_ufunc(t, ND_UF_TRUE_DIVIDE, in, loop, out, 0);
    if (q != ND_NONE && scalar && PyArray_CanCastSafely(NPY_INTP, dt[0]))
        nd_graph_node(nd_trace_graph(t), q)->flags |= ND_F_SCALAR_MATH;
    return q;
}

/* v.var() / v.std() (ddof= a Python int, nothing else), as _methods._var
 * of NumPy's a[m] for a real dtype: "Degrees of freedom <= 0 for slice"
 * when ddof >= the count (the count flushed: masked_count), the mean as
 * the sum over the selection (where(m, v, 0), in float64 for ints) divided
 * by the count (an array division: its warnings say "divide"), the squared
 * deviations of the substituted value (make_safe: any flag is one NumPy
 * raises) summed over the selection and divided by max(count - ddof, 0)
 * as NumPy scalars ("scalar divide"), then a NumPy scalar of the sum's
 * dtype; std its sqrt. */
static PyObject *var_red(PyObject *self, int is_std, PyObject *args, PyObject *kw)
{
    NdMasked *m = (NdMasked *)self;
    nd_trace *t = nd_trace_current();
    const char *name = is_std ? "std" : "var";
    PyObject *dd = kw ? PyDict_GetItemString(kw, "ddof") : NULL;
    int dtype = nd_proxy_live(m->val) ? nd_proxy_dtype(m->val) : -1;
    int plain = t && !nd_trace_differentiating(t) && PyTuple_GET_SIZE(args) == 0 && !m->compact &&
                (dtype == NPY_BOOL || PyTypeNum_ISINTEGER(dtype) || dtype == NPY_FLOAT32 || dtype == NPY_FLOAT64) &&
                (!kw || PyDict_GET_SIZE(kw) == 0 || (PyDict_GET_SIZE(kw) == 1 && dd && PyLong_CheckExact(dd)));
    long long ddof = plain && dd ? PyLong_AsLongLong(dd) : 0;
    if (ddof == -1 && PyErr_Occurred()) { PyErr_Clear(); plain = 0; }
    if (!plain) return compact_method(m, name, args, kw);
    npy_intp n = masked_count(m), T = row_size(m);
    if (n < 0) return NULL;
    if (ddof >= (long long)(n * T)) {
        if (PyErr_WarnEx(PyExc_RuntimeWarning, "Degrees of freedom <= 0 for slice", 1) < 0) return NULL;
        nd_trace_not_replayable(t);
    }
    if (make_safe(t, m) < 0) return NULL;
    int acc = dtype == NPY_BOOL || PyTypeNum_ISINTEGER(dtype) ? NPY_FLOAT64 : dtype;
    int nd = nd_proxy_ndim(m->val);
    npy_intp sh[ND_MAXDIMS];
    memcpy(sh, nd_proxy_shape(m->val), sizeof(npy_intp) * (size_t)nd);
    nd_id v = nd_proxy_read(m->val), mk = v == ND_NONE ? ND_NONE : nd_proxy_read(m->mask);
    nd_id vc = mk == ND_NONE ? ND_NONE : nd_shim_node_cast(t, v, acc);
    nd_id z = vc == ND_NONE ? ND_NONE : nd_xj_zeros(t, acc, nd, sh);
    nd_id cond = z == ND_NONE ? ND_NONE : mask_over(t, m);
    nd_id w = cond == ND_NONE ? ND_NONE : nd_shim_node_where(t, cond, vc, z, acc);
    nd_id s = w == ND_NONE ? ND_NONE : nd_shim_node_reduce(t, ND_UF_ADD, w, ~0ULL, 0, acc, acc, ND_NONE);
    nd_id cnt = s == ND_NONE ? ND_NONE : nd_shim_node_reduce(t, ND_UF_ADD, mk, ~0ULL, 0, NPY_INT64, NPY_INT64, ND_NONE);
    cnt = nd_xj_ibin_c(t, ND_UF_MULTIPLY, cnt, (long long)T);
    nd_id mean = cnt == ND_NONE ? ND_NONE : np_divide(t, s, cnt, 0);
    mean = mean == ND_NONE ? ND_NONE : nd_shim_node_cast(t, mean, acc);  /* out=arrmean */
    int l2[2] = {acc, acc};
    nd_id in[2] = {vc, mean};
    nd_id d = mean == ND_NONE ? ND_NONE : nd_shim_node_ufunc(t, ND_UF_SUBTRACT, in, l2, acc, 0);
    nd_id sq = d == ND_NONE ? ND_NONE : nd_shim_node_ufunc(t, ND_UF_SQUARE, &d, l2, acc, 0);
    nd_id w2 = sq == ND_NONE ? ND_NONE : nd_shim_node_where(t, cond, sq, z, acc);
    nd_id ret = w2 == ND_NONE ? ND_NONE : nd_shim_node_reduce(t, ND_UF_ADD, w2, ~0ULL, 0, acc, acc, ND_NONE);
    nd_id dof = ret == ND_NONE ? ND_NONE : nd_xj_ibin_c(t, ND_UF_SUBTRACT, cnt, ddof);
    dof = nd_xj_ibin_c(t, ND_UF_MAXIMUM, dof, 0);
    nd_id q = dof == ND_NONE ? ND_NONE : np_divide(t, ret, dof, 1);
    q = q == ND_NONE ? ND_NONE : nd_shim_node_cast(t, q, acc);  /* ret.dtype.type(ret / rcount) */
    if (q != ND_NONE && is_std) q = nd_shim_node_ufunc(t, ND_UF_SQRT, &q, l2, acc, 0);
    return q == ND_NONE ? NULL : nd_shim_wrap(t, q, 1);
}

static PyObject *m_var(PyObject *self, PyObject *args, PyObject *kw)
{
    return as_operation(var_red, self, 0, args, kw);
}
static PyObject *m_std(PyObject *self, PyObject *args, PyObject *kw)
{
    return as_operation(var_red, self, 1, args, kw);
}

static PyObject *m_max(PyObject *self, PyObject *args, PyObject *kw)
{
    return as_operation(minmax_red, self, 1, args, kw);
}
static PyObject *m_min(PyObject *self, PyObject *args, PyObject *kw)
{
    return as_operation(minmax_red, self, 0, args, kw);
}

static PyMethodDef masked_methods[] = {
    {"max", (PyCFunction)(void (*)(void))m_max, METH_VARARGS | METH_KEYWORDS, NULL},
    {"min", (PyCFunction)(void (*)(void))m_min, METH_VARARGS | METH_KEYWORDS, NULL},
    {"var", (PyCFunction)(void (*)(void))m_var, METH_VARARGS | METH_KEYWORDS, NULL},
    {"std", (PyCFunction)(void (*)(void))m_std, METH_VARARGS | METH_KEYWORDS, NULL},
    {"__array_ufunc__", (PyCFunction)(void (*)(void))m_array_ufunc, METH_VARARGS | METH_KEYWORDS, NULL},
    {"__array_function__", m_array_function, METH_VARARGS, NULL},
    {"__array__", (PyCFunction)(void (*)(void))m_array, METH_VARARGS | METH_KEYWORDS, NULL},
    {"sum", (PyCFunction)(void (*)(void))m_sum, METH_VARARGS | METH_KEYWORDS, NULL},
    {"mean", (PyCFunction)(void (*)(void))m_mean, METH_VARARGS | METH_KEYWORDS, NULL},
    {NULL},
};

static PyGetSetDef masked_getset[] = {
    {"__class__", g_class, NULL, NULL, NULL},
    {NULL},
};

static PyNumberMethods masked_number = {
    .nb_add = m_add, .nb_subtract = m_sub, .nb_multiply = m_mul, .nb_remainder = m_mod,
    .nb_divmod = m_divmod, .nb_power = m_pow, .nb_negative = m_neg, .nb_positive = m_pos,
    .nb_absolute = m_abs, .nb_bool = m_bool, .nb_invert = m_invert, .nb_lshift = m_lshift,
    .nb_rshift = m_rshift, .nb_and = m_and, .nb_xor = m_xor, .nb_or = m_or, .nb_int = m_int,
    .nb_float = m_float, .nb_inplace_add = m_iadd, .nb_inplace_subtract = m_isub,
    .nb_inplace_multiply = m_imul, .nb_inplace_remainder = m_imod, .nb_inplace_power = m_ipow,
    .nb_inplace_lshift = m_ilshift, .nb_inplace_rshift = m_irshift, .nb_inplace_and = m_iand,
    .nb_inplace_xor = m_ixor, .nb_inplace_or = m_ior, .nb_floor_divide = m_floordiv,
    .nb_true_divide = m_truediv, .nb_inplace_floor_divide = m_ifloordiv,
    .nb_inplace_true_divide = m_itruediv, .nb_index = m_index, .nb_matrix_multiply = m_matmul,
    .nb_inplace_matrix_multiply = m_imatmul,
};

static PyMappingMethods masked_mapping = {
    .mp_length = m_len, .mp_subscript = m_getitem, .mp_ass_subscript = m_setitem,
};

static PySequenceMethods masked_sequence = {
    .sq_length = m_len, .sq_contains = m_contains,
};

static PyBufferProcs masked_buffer = {.bf_getbuffer = m_getbuffer};

static PyTypeObject NdMasked_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn.MaskedRead",
    .tp_basicsize = sizeof(NdMasked),
    .tp_dealloc = (destructor)masked_dealloc,
    .tp_repr = m_repr,
    .tp_str = m_str,
    .tp_as_number = &masked_number,
    .tp_as_mapping = &masked_mapping,
    .tp_as_sequence = &masked_sequence,
    .tp_as_buffer = &masked_buffer,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_getattro = m_getattro,
    .tp_richcompare = m_richcompare,
    .tp_iter = m_iter,
    .tp_methods = masked_methods,
    .tp_getset = masked_getset,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a[m] through a lazy boolean mask, kept lazy while only elementwise work uses it",
};

/* ------------------------------------------------------------ entry points */

static PyObject *resolve_leaf(PyObject *o)
{
    if (!nd_shim_masked_check(o)) return NULL;
    PyObject *c = compact((NdMasked *)o);
    return c ? Py_NewRef(c) : NULL;
}

int nd_shim_masked_init(void)
{
    if (PyType_Ready(&NdMasked_Type) < 0) return -1;
    nd_trace_masked_live = &nd_shim_live_masked;
    nd_trace_masked_resolve = resolve_leaf;
    return 0;
}

PyObject *nd_shim_masked_read(nd_trace *t, PyObject *self, PyObject *key)
{
    PyObject *m = key;
    if (PyTuple_Check(key)) {
        if (PyTuple_GET_SIZE(key) != 1) return NULL;
        m = PyTuple_GET_ITEM(key, 0);
    }
    if (!nd_proxy_check(m) || !nd_proxy_live(m) || nd_proxy_dtype(m) != NPY_BOOL) return NULL;
    int lead = nd_proxy_ndim(m), nd = nd_proxy_ndim(self);
    if (lead == 0 || lead > nd ||
        memcmp(nd_proxy_shape(m), nd_proxy_shape(self), sizeof(npy_intp) * (size_t)lead))
        return NULL;  /* NumPy's IndexError comes from the usual path */
    nd_id mn = nd_proxy_read(m);
    nd_id vn = mn == ND_NONE ? ND_NONE : nd_proxy_read(self);
    if (vn == ND_NONE) return NULL;
    PyObject *mask = nd_shim_wrap(t, mn, 0);
    PyObject *val = mask ? nd_shim_wrap(t, vn, 0) : NULL;
    NdMasked *r = val ? PyObject_New(NdMasked, &NdMasked_Type) : NULL;
    if (!r) { Py_XDECREF(mask); Py_XDECREF(val); return NULL; }
    nd_shim_live_masked++;
    r->val = val;
    r->mask = mask;
    r->key = Py_NewRef(m);
    r->mnode = mn;
    r->lead = lead;
    r->safe = 0;
    r->compact = NULL;
    r->count = -1;
    return (PyObject *)r;
}

/* Nodes a and b compute the same value: the same node, or the same
 * elementwise op / cast / view of inputs that compute the same values, or
 * scalars of one dtype and value. So `x[x > 0] = x[x > 0] ** -1.5` -- two
 * mask objects from one expression, neither written in between -- stores
 * through the mask of the read (NPBench's nbody: a break per step). */
static int same_value(nd_graph *g, nd_id a, nd_id b, int depth)
{
    if (a == b) return 1;
    if (a < 0 || b < 0 || depth <= 0) return 0;
    const nd_node *x = nd_graph_node(g, a), *y = nd_graph_node(g, b);
    if (x->op != y->op || x->dtype != y->dtype || x->ndim != y->ndim || x->flags != y->flags ||
        x->value || y->value || x->attrs || y->attrs || x->extra || y->extra ||
        memcmp(x->shape, y->shape, sizeof(npy_intp) * x->ndim))
        return 0;
    if (x->op == ND_OP_SCALAR)
        return !memcmp(&x->scalar, &y->scalar, sizeof x->scalar);
    if (x->op == ND_OP_VIEW) {
        if (x->voff != y->voff || memcmp(x->vstrides, y->vstrides, sizeof(npy_intp) * x->ndim)) return 0;
    } else if (x->op != ND_OP_UFUNC && x->op != ND_OP_CAST) {
        return 0;
    }
    if (x->sub != y->sub || x->aux != y->aux || x->nin != y->nin || x->obj != y->obj) return 0;
    for (int k = 0; k < x->nin; k++)
        if (x->in_dtype[k] != y->in_dtype[k] || !same_value(g, x->in[k], y->in[k], depth - 1)) return 0;
    return 1;
}

int nd_shim_masked_store(nd_trace *t, PyObject *self, PyObject *key, PyObject *value)
{
    if (!nd_shim_masked_check(value)) return 0;
    NdMasked *v = (NdMasked *)value;
    PyObject *k = key;
    if (PyTuple_Check(key)) {
        if (PyTuple_GET_SIZE(key) != 1) return 0;
        k = PyTuple_GET_ITEM(key, 0);
    }
    if (v->compact || !nd_proxy_check(k) || !nd_proxy_live(v->val) || !nd_proxy_live(k)) return 0;
    nd_id kn = nd_proxy_read(k);
    if (kn == ND_NONE) return PyErr_Occurred() ? -1 : 0;
    if (k == v->key ? kn != v->mnode   /* the mask was written since */
                    : !same_value(nd_trace_graph(t), kn, v->mnode, 4))
        return 0;
    int nd = nd_proxy_ndim(self), dtype = nd_proxy_dtype(self);
    if (nd != nd_proxy_ndim(v->val) ||
        memcmp(nd_proxy_shape(self), nd_proxy_shape(v->val), sizeof(npy_intp) * (size_t)nd))
        return 0;
    int vdt = nd_proxy_dtype(v->val);
    if (PyTypeNum_ISCOMPLEX(vdt) && !PyTypeNum_ISCOMPLEX(dtype)) return 0;  /* NumPy's ComplexWarning path */
    nd_id val = nd_proxy_read(v->val);
    val = val == ND_NONE ? ND_NONE : nd_shim_node_cast(t, val, dtype);
    nd_id cond = val == ND_NONE ? ND_NONE : mask_over(t, v);
    nd_id cur = cond == ND_NONE ? ND_NONE : nd_proxy_read(self);
    nd_id w = cur == ND_NONE ? ND_NONE : nd_shim_node_where(t, cond, val, cur, dtype);
    if (w == ND_NONE || nd_proxy_write(self, w) < 0) return -1;
    return 1;
}
