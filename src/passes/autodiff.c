/* autodiff.c -- the VJP rules (autodiff.h): one reverse sweep over the
 * forward nodes, each rule appending the nodes of its input cotangents.
 *
 * Helpers build nodes directly (the passes sit below the shim): every
 * helper takes node ids and returns the new node's id, or ND_NONE with an
 * exception set -- and returns ND_NONE at once when handed ND_NONE, so a
 * rule is a straight line of helper calls checked once at its end.
 * Node pointers move when the graph grows: rules copy the forward node
 * (`f`) before appending anything.
 */
#include "autodiff.h"
#include "autodiff_kernels.h"
#include "core/core.h"
#include <float.h>
#include <math.h>
#include <string.h>

static PyObject *F_matmul, *F_dot, *F_einsum, *F_tensordot, *F_inv, *F_det, *F_slogdet,
    *F_solve, *F_cholesky, *F_sort, *F_argsort, *F_bincount, *F_eigh, *F_eigvalsh, *F_svd, *F_qr,
    *F_eig, *F_eigvals, *F_inner, *F_multi_dot, *F_matrix_power, *F_median, *F_quantile,
    *F_percentile, *F_pinv, *F_convolve, *F_correlate, *F_interp, *F_lstsq, *F_partition;
/* numpy.fft: c2c (fft, ifft, fft2, ifft2, fftn, ifftn), r2c (rfft*), c2r (irfft*),
 * then hfft (irfft of the conjugate) and ihfft (the conjugate of rfft) */
#define ND_NFFT 14
static PyObject *F_fft[ND_NFFT];
enum { FFT_C2C, FFT_R2C, FFT_C2R };

static int isflt(int dt) { return dt == NPY_HALF || dt == NPY_FLOAT || dt == NPY_DOUBLE; }
static int iscplx(int dt) { return dt == NPY_CFLOAT || dt == NPY_CDOUBLE; }
static int fmaxdt(int a, int b)
{
    if (iscplx(a) || iscplx(b)) {
        int narrow = (a == NPY_HALF || a == NPY_FLOAT || a == NPY_CFLOAT) &&
                     (b == NPY_HALF || b == NPY_FLOAT || b == NPY_CFLOAT);
        return narrow ? NPY_CFLOAT : NPY_CDOUBLE;
    }
    int r[2] = {a, b}, best = NPY_HALF;
    for (int k = 0; k < 2; k++)
        if (r[k] == NPY_DOUBLE || (r[k] == NPY_FLOAT && best == NPY_HALF)) best = r[k];
    return best == NPY_HALF && a != NPY_HALF && b != NPY_HALF ? NPY_DOUBLE : best;
}

#define NODE(g, id) (&(g)->nodes[id])
#define BAD(id) ((id) < 0)

static nd_id add(nd_graph *g, nd_node *n)
{
    nd_id id = nd_graph_add(g, n);
    if (id == ND_NONE) {
        Py_CLEAR(n->obj);
        Py_CLEAR(n->attrs);
        PyMem_Free(n->extra);
        n->extra = NULL;
    }
    return id;
}

static int broadcast2(const nd_node *a, const nd_node *b, int *nd, npy_intp *shape)
{
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int d = 0; d < n; d++) {
        int da = d - (n - a->ndim), db = d - (n - b->ndim);
        npy_intp x = da >= 0 ? a->shape[da] : 1, y = db >= 0 ? b->shape[db] : 1;
        if (x != y && x != 1 && y != 1) {
            PyErr_SetString(PyExc_SystemError, "numdyn autodiff: operands do not broadcast");
            return -1;
        }
        shape[d] = x == 1 ? y : x;
    }
    *nd = n;
    return 0;
}

static nd_id sc(nd_graph *g, double v, int dt)
{
    nd_node n;
    nd_node_init(&n, ND_OP_SCALAR, dt, 0, NULL);
    if (isflt(dt)) {
        n.scalar.f = v;
        n.obj = PyFloat_FromDouble(v);
    } else if (iscplx(dt)) {
        n.scalar.c.re = v;
        n.scalar.c.im = 0;
        n.obj = PyComplex_FromDoubles(v, 0);
    } else if (dt == NPY_BOOL) {
        n.scalar.i = v != 0;
        n.obj = PyBool_FromLong(v != 0);
    } else {
        n.scalar.i = (int64_t)v;
        n.obj = PyLong_FromLongLong((long long)v);
    }
    if (!n.obj) return ND_NONE;
    return add(g, &n);
}

static nd_id uf(nd_graph *g, int u, nd_id a, nd_id b, int L)
{
    if (BAD(a) || (nd_ufunc_nin(u) == 2 && BAD(b))) return ND_NONE;
    int nd = NODE(g, a)->ndim;
    npy_intp shape[ND_MAXDIMS];
    memcpy(shape, NODE(g, a)->shape, sizeof(npy_intp) * (size_t)nd);
    if (nd_ufunc_nin(u) == 2 && broadcast2(NODE(g, a), NODE(g, b), &nd, shape) < 0) return ND_NONE;
    int out = nd_ufunc_is_comparison(u) || u == ND_UF_SIGNBIT || u == ND_UF_ISNAN ? NPY_BOOL : L;
    nd_node n;
    nd_node_init(&n, ND_OP_UFUNC, out, nd, shape);
    n.sub = u;
    n.nin = nd_ufunc_nin(u);
    n.in[0] = a;
    n.in_dtype[0] = L;
    if (n.nin == 2) { n.in[1] = b; n.in_dtype[1] = L; }
    n.obj = Py_NewRef(nd_ufunc_object(u));
    return add(g, &n);
}

static nd_id cast(nd_graph *g, nd_id a, int dt)
{
    if (BAD(a)) return ND_NONE;
    nd_node *x = NODE(g, a);
    if (x->dtype == dt) return a;
    nd_node n;
    nd_node_init(&n, ND_OP_CAST, dt, x->ndim, x->shape);
    n.nin = 1;
    n.in[0] = a;
    n.in_dtype[0] = x->dtype;
    return add(g, &n);
}

/* the complex SCALAR re + im j */
static nd_id scc(nd_graph *g, double re, double im, int dt)
{
    nd_node n;
    nd_node_init(&n, ND_OP_SCALAR, dt, 0, NULL);
    n.scalar.c.re = re;
    n.scalar.c.im = im;
    if (!(n.obj = PyComplex_FromDoubles(re, im))) return ND_NONE;
    return add(g, &n);
}

/* the real part of complex a (np.real's node: a flagged VIEW) */
static nd_id real_part(nd_graph *g, nd_id a)
{
    if (BAD(a)) return ND_NONE;
    nd_node *x = NODE(g, a);
    nd_node n;
    nd_node_init(&n, ND_OP_VIEW, x->dtype == NPY_CFLOAT ? NPY_FLOAT : NPY_DOUBLE, x->ndim, x->shape);
    n.nin = 1;
    n.in[0] = a;
    n.vndim = (uint8_t)x->ndim;
    npy_intp s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        n.vshape[d] = x->shape[d];
        n.vstrides[d] = x->shape[d] == 1 ? 0 : s;
        s *= x->shape[d];
    }
    n.flags |= ND_F_VIEW_REAL;
    return add(g, &n);
}

static nd_id view(nd_graph *g, nd_id a, int ndim, const npy_intp *shape, npy_intp off,
                  const npy_intp *strides)
{
    if (BAD(a)) return ND_NONE;
    nd_node n;
    nd_node_init(&n, ND_OP_VIEW, NODE(g, a)->dtype, ndim, shape);
    n.nin = 1;
    n.in[0] = a;
    n.voff = off;
    n.vndim = (uint8_t)ndim;
    for (int d = 0; d < ndim; d++) { n.vshape[d] = shape[d]; n.vstrides[d] = strides[d]; }
    return add(g, &n);
}

/* a's elements in C order with another shape of the same size */
static nd_id reshape(nd_graph *g, nd_id a, int ndim, const npy_intp *shape)
{
    if (BAD(a)) return ND_NONE;
    nd_node *x = NODE(g, a);
    if (x->ndim == ndim && memcmp(x->shape, shape, sizeof(npy_intp) * (size_t)ndim) == 0) return a;
    npy_intp st[ND_MAXDIMS];
    nd_c_strides(ndim, shape, st);
    return view(g, a, ndim, shape, 0, st);
}

nd_id nd_autodiff_zeros(nd_graph *g, int dt, int ndim, const npy_intp *shape)
{
    nd_id z = sc(g, 0.0, dt);
    if (BAD(z) || ndim == 0) return z;
    npy_intp st[ND_MAXDIMS] = {0};
    return view(g, z, ndim, shape, 0, st);
}

static nd_id reshape(nd_graph *g, nd_id a, int ndim, const npy_intp *shape);
static nd_id uf(nd_graph *g, int u, nd_id a, nd_id b, int L);

/* b (an operand of a product of rank nd broadcast to it) is constant along
 * `axes` of the product: broadcast there, or a view with stride 0 */
static int constant_along(nd_graph *g, nd_id b, int nd, uint64_t axes)
{
    const nd_node *bn = NODE(g, b);
    int off = nd - bn->ndim;
    for (int d = 0; d < nd; d++) {
        if (!(axes & (1ULL << d)) || d < off || bn->shape[d - off] == 1) continue;
        if (bn->op != ND_OP_VIEW || bn->vndim != bn->ndim || bn->vstrides[d - off] != 0) return 0;
    }
    return 1;
}

/* sum over `axes` of b * e, b constant along them, when the graph already
 * holds e's sum over the same axes: b times that sum. The backward of
 * softmax / logsumexp (the max stabilizer's cotangent sum_j c_i e_ij is
 * c_i s_i, s the forward's row sums) then needs no pass over the rows and
 * no (rows, cols) product kept for it. Rounds as a product of a sum does,
 * not as the sum of products: a gradient's tolerance. ND_NONE: not that
 * form (negations of it are). */
static nd_id red_factored(nd_graph *g, nd_id a, uint64_t axes, int keep, int dt,
                          int nd, const npy_intp *shape)
{
    const nd_node *x = NODE(g, a);
    if (x->op != ND_OP_UFUNC || x->dtype != dt) return ND_NONE;
    if (x->sub == ND_UF_NEGATIVE) {
        nd_id r = red_factored(g, x->in[0], axes, keep, dt, nd, shape);
        return BAD(r) ? ND_NONE : uf(g, ND_UF_NEGATIVE, r, ND_NONE, dt);
    }
    if (x->sub != ND_UF_MULTIPLY || x->in_dtype[0] != dt || x->in_dtype[1] != dt) return ND_NONE;
    for (int k = 0; k < 2; k++) {
        nd_id b = x->in[k], e = x->in[1 - k];
        const nd_node *en = NODE(g, e);
        if (en->ndim != x->ndim || !constant_along(g, b, x->ndim, axes)) continue;
        for (nd_id j = 0; j < g->n; j++) {
            const nd_node *s = NODE(g, j);
            if (s->op != ND_OP_REDUCE || s->sub != ND_UF_ADD || s->in[0] != e || s->axes != axes ||
                s->dtype != dt || s->in_dtype[0] != dt || s->nin != 1)
                continue;
            /* b at index 0 of the summed axes, as a view of the result's
             * shape (of b's own input when b is a view: a view of a view
             * would make the scheduler materialize b) */
            const nd_node *bn = NODE(g, b);
            int isview = bn->op == ND_OP_VIEW && bn->vndim == bn->ndim;
            int boff = x->ndim - bn->ndim, t = 0;
            npy_intp bst[ND_MAXDIMS], cs[ND_MAXDIMS];
            nd_c_strides(bn->ndim, bn->shape, cs);
            for (int d = 0; d < x->ndim; d++) {
                int summed = (axes >> d) & 1;
                if (summed && !keep) continue;
                bst[t++] = summed || d < boff || bn->shape[d - boff] == 1 ? 0
                           : isview ? bn->vstrides[d - boff] : cs[d - boff];
            }
            if (t != nd) return ND_NONE;
            nd_id src = isview ? bn->in[0] : b;
            npy_intp boff0 = isview ? bn->voff : 0;
            nd_id b0 = view(g, src, nd, shape, boff0, bst);
            nd_id s0 = reshape(g, j, nd, shape);
            if (BAD(b0) || BAD(s0)) return ND_NONE;
            return uf(g, ND_UF_MULTIPLY, b0, s0, dt);
        }
    }
    return ND_NONE;
}

static nd_id red(nd_graph *g, int u, nd_id a, uint64_t axes, int keep, int dt)
{
    if (BAD(a)) return ND_NONE;
    nd_node *x = NODE(g, a);
    npy_intp shape[ND_MAXDIMS];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (axes & (1ULL << d)) { if (keep) shape[nd++] = 1; }
        else shape[nd++] = x->shape[d];
    }
    if (u == ND_UF_ADD) {
        nd_id r = red_factored(g, a, axes, keep, dt, nd, shape);
        if (!BAD(r)) return r;
        if (PyErr_Occurred()) return ND_NONE;
        x = NODE(g, a);  /* the graph's nodes may have moved */
    }
    nd_node n;
    nd_node_init(&n, ND_OP_REDUCE, dt, nd, shape);
    n.sub = u;
    n.axes = axes;
    if (keep) n.flags |= ND_F_KEEPDIMS;
    n.nin = 1;
    n.in[0] = a;
    n.in_dtype[0] = dt;
    n.obj = Py_NewRef(nd_ufunc_object(u));
    return add(g, &n);
}

static nd_id where(nd_graph *g, nd_id c, nd_id a, nd_id b, int dt)
{
    a = cast(g, a, dt);
    b = cast(g, b, dt);
    if (BAD(c) || BAD(a) || BAD(b)) return ND_NONE;
    int nd;
    npy_intp sh[ND_MAXDIMS];
    if (broadcast2(NODE(g, a), NODE(g, b), &nd, sh) < 0) return ND_NONE;
    nd_node tmp;
    nd_node_init(&tmp, ND_OP_SCALAR, dt, nd, sh);
    if (broadcast2(&tmp, NODE(g, c), &nd, sh) < 0) return ND_NONE;
    nd_node n;
    nd_node_init(&n, ND_OP_WHERE, dt, nd, sh);
    n.nin = 3;
    n.in[0] = c; n.in[1] = a; n.in[2] = b;
    n.in_dtype[0] = NPY_BOOL; n.in_dtype[1] = dt; n.in_dtype[2] = dt;
    return add(g, &n);
}

static nd_id setitem(nd_graph *g, nd_id base, nd_id val, npy_intp off, int vndim,
                     const npy_intp *vshape, const npy_intp *vstrides)
{
    if (BAD(base) || BAD(val)) return ND_NONE;
    nd_node *b = NODE(g, base);
    nd_node n;
    nd_node_init(&n, ND_OP_SETITEM, b->dtype, b->ndim, b->shape);
    n.nin = 2;
    n.in[0] = base;
    n.in[1] = val;
    n.in_dtype[1] = b->dtype;
    n.voff = off;
    n.vndim = (uint8_t)vndim;
    for (int d = 0; d < vndim; d++) { n.vshape[d] = vshape[d]; n.vstrides[d] = vstrides[d]; }
    return add(g, &n);
}

static nd_id index_node(nd_graph *g, int ndim, const npy_intp *shape, int axis)
{
    nd_node n;
    nd_node_init(&n, ND_OP_INDEX, NPY_INT64, ndim, shape);
    n.aux = (int16_t)axis;
    return add(g, &n);
}

/* fn(*tmpl) with placeholders for ids; steals tmpl */
static nd_id ext(nd_graph *g, PyObject *fn, PyObject *tmpl, int nin, const nd_id *ids, int dt,
                 int ndim, const npy_intp *shape)
{
    for (int k = 0; k < nin; k++)
        if (BAD(ids[k])) { Py_XDECREF(tmpl); return ND_NONE; }
    if (!tmpl) return ND_NONE;
    nd_node n;
    nd_node_init(&n, ND_OP_EXTERN, dt, ndim, shape);
    n.aux = -1;
    n.attrs = PyTuple_Pack(2, tmpl, Py_None);
    Py_DECREF(tmpl);
    if (!n.attrs) return ND_NONE;
    n.extra = PyMem_Malloc(sizeof(nd_id) * (size_t)(nin ? nin : 1));
    if (!n.extra) { Py_DECREF(n.attrs); PyErr_NoMemory(); return ND_NONE; }
    memcpy(n.extra, ids, sizeof(nd_id) * (size_t)nin);
    n.nextra = nin;
    n.obj = Py_NewRef(fn);
    return add(g, &n);
}

/* (ph0, ..., ph{nin-1}, extra...) */
static PyObject *tmpl_of(int nin, int nextra, PyObject *const *extra)
{
    PyObject *t = PyTuple_New(nin + nextra);
    if (!t) return NULL;
    for (int k = 0; k < nin; k++) {
        PyObject *p = nd_extern_placeholder(k);
        if (!p) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, k, p);
    }
    for (int k = 0; k < nextra; k++) PyTuple_SET_ITEM(t, nin + k, Py_NewRef(extra[k]));
    return t;
}

/* sum v down to (ndim, shape), the shape it was broadcast from */
static nd_id sum_to(nd_graph *g, nd_id v, int ndim, const npy_intp *shape)
{
    if (BAD(v)) return ND_NONE;
    nd_node *x = NODE(g, v);
    int off = x->ndim - ndim;
    uint64_t axes = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d < off || (shape[d - off] == 1 && x->shape[d] != 1)) axes |= 1ULL << d;
    if (axes) v = red(g, ND_UF_ADD, v, axes, 1, x->dtype);
    return reshape(g, v, ndim, shape);
}

/* ------------------------------------------------------------- sweep */

/* a window view's cotangent waiting for the other windows of its base
 * (rule_view, flush_windows) */
typedef struct {
    nd_id c;
    int next;                 /* the base's next record, or -1 */
    npy_intp off;
    int nd;
    npy_intp R[ND_MAXDIMS], s[ND_MAXDIMS];
} ad_win;

typedef struct {
    nd_graph *g;
    nd_id *ct;
    char *dep;
    nd_id n0;
    int32_t *whead;           /* per node: its first waiting window, -1; NULL: none yet */
    ad_win *win;
    int nwin, capwin;
} ad_t;

static int not_impl(const char *what, const char *detail)
{
    PyErr_Format(PyExc_NotImplementedError,
                 "numdyn autodiff: no gradient rule for %s%s%s (differentiate around it, or "
                 "compute it outside the differentiated function)",
                 what, detail ? ": " : "", detail ? detail : "");
    return -1;
}

/* add cotangent v (any shape broadcasting to node i's) into node i's */
static int acc(ad_t *A, nd_id i, nd_id v)
{
    if (BAD(v)) return PyErr_Occurred() ? -1 : 0;
    if (i < 0 || !A->dep[i]) return 0;
    nd_graph *g = A->g;
    int dt = NODE(g, i)->dtype, nd = NODE(g, i)->ndim;
    npy_intp sh[ND_MAXDIMS];
    memcpy(sh, NODE(g, i)->shape, sizeof(npy_intp) * (size_t)nd);
    v = sum_to(g, v, nd, sh);
    /* a real value's share of a complex cotangent is its real part (JAX) */
    if (!BAD(v) && iscplx(NODE(g, v)->dtype) && !iscplx(dt)) v = real_part(g, v);
    v = cast(g, v, dt);
    if (BAD(v)) return -1;
    if (A->ct[i] == ND_NONE) A->ct[i] = v;
    else if (BAD(A->ct[i] = uf(g, ND_UF_ADD, A->ct[i], v, dt))) return -1;
    return 0;
}

#define U1(u, a) uf(g, u, a, ND_NONE, L)
#define U2(u, a, b) uf(g, u, a, b, L)
#define S(v) sc(g, v, L)
#define MUL(a, b) U2(ND_UF_MULTIPLY, a, b)
#define DIV(a, b) U2(ND_UF_TRUE_DIVIDE, a, b)
#define ADD(a, b) U2(ND_UF_ADD, a, b)
#define SUB(a, b) U2(ND_UF_SUBTRACT, a, b)
#define NEG(a) U1(ND_UF_NEGATIVE, a)
#define SQ(a) U1(ND_UF_SQUARE, a)

/* a power's exponent that is a real float scalar of the graph, finite and
 * not 0 (x ** 3, x ** 0.5): its derivative needs no per-element select */
static int pow_const_exponent(nd_graph *g, nd_id b)
{
    const nd_node *bn = NODE(g, b);
    return bn->op == ND_OP_SCALAR && bn->ndim == 0 && isflt(bn->dtype) &&
           isfinite(bn->scalar.f) && bn->scalar.f != 0;
}

static int rule_ufunc(ad_t *A, nd_id i, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    int L = f->dtype;
    nd_id a = f->in[0], b = f->nin > 1 ? f->in[1] : ND_NONE, y = i;
    int da = A->dep[a], db = b >= 0 && A->dep[b];
    nd_id ga = ND_NONE, gb = ND_NONE;
    const double LN2 = 0.69314718055994530942, LN10 = 2.30258509299404568402;
    const double PI = 3.14159265358979323846;
    if (iscplx(L) || iscplx(NODE(g, a)->dtype) || (b >= 0 && iscplx(NODE(g, b)->dtype))) {
        /* complex values: the holomorphic ufuncs' rules below hold as
         * written (JAX's convention: cotangents propagate by the
         * transpose, not the adjoint); the others are written here */
        switch (f->sub) {
        case ND_UF_ADD: case ND_UF_SUBTRACT: case ND_UF_MULTIPLY: case ND_UF_TRUE_DIVIDE:
        case ND_UF_NEGATIVE: case ND_UF_POSITIVE: case ND_UF_EXP: case ND_UF_EXP2:
        case ND_UF_EXPM1: case ND_UF_LOG: case ND_UF_LOG2: case ND_UF_LOG10: case ND_UF_LOG1P:
        case ND_UF_SQRT: case ND_UF_SQUARE: case ND_UF_RECIPROCAL: case ND_UF_POWER:
        case ND_UF_FLOAT_POWER: case ND_UF_SIN: case ND_UF_COS: case ND_UF_TAN:
        case ND_UF_ARCSIN: case ND_UF_ARCCOS: case ND_UF_ARCTAN: case ND_UF_SINH:
        case ND_UF_COSH: case ND_UF_TANH: case ND_UF_ARCSINH: case ND_UF_ARCCOSH:
        case ND_UF_ARCTANH:
        /* NumPy orders complex values lexicographically: the winner's
         * cotangent, a tie's halved, by equality as for real values */
        case ND_UF_MAXIMUM: case ND_UF_MINIMUM: case ND_UF_FMAX: case ND_UF_FMIN:
            break;
        case ND_UF_SIGN: case ND_UF_RINT:  /* zero almost everywhere */
            return 0;
        case ND_UF_CONJUGATE:
            return acc(A, a, U1(ND_UF_CONJUGATE, c));
        case ND_UF_ABSOLUTE: {
            /* |z|: c conj(z) / |z|, 0 at z = 0 (JAX) */
            int Lc = NODE(g, a)->dtype;
            /* divided by 1 at 0 (then selected away): no 0/0 warning */
            nd_id at0 = U2(ND_UF_EQUAL, y, S(0));
            nd_id q = uf(g, ND_UF_TRUE_DIVIDE, uf(g, ND_UF_CONJUGATE, a, ND_NONE, Lc),
                         cast(g, where(g, at0, S(1), y, L), Lc), Lc);
            ga = where(g, at0, sc(g, 0, Lc),
                       uf(g, ND_UF_MULTIPLY, cast(g, c, Lc), q, Lc), Lc);
            return PyErr_Occurred() ? -1 : acc(A, a, ga);
        }
        default:
            return not_impl("complex values in the ufunc", nd_ufunc_name(f->sub));
        }
    }
    switch (f->sub) {
    case ND_UF_ADD: ga = c; gb = c; break;
    case ND_UF_SUBTRACT: ga = c; if (db) gb = NEG(c); break;
    case ND_UF_MULTIPLY:
        if (da) ga = MUL(c, b);
        if (db) gb = MUL(c, a);
        break;
    case ND_UF_TRUE_DIVIDE:
        if (da) ga = DIV(c, b);
        if (db) gb = NEG(MUL(c, DIV(y, b)));
        break;
    case ND_UF_NEGATIVE: ga = NEG(c); break;
    case ND_UF_POSITIVE: case ND_UF_CONJUGATE: ga = c; break;
    case ND_UF_ABSOLUTE: case ND_UF_FABS:
        ga = where(g, U2(ND_UF_GREATER_EQUAL, a, S(0)), c, NEG(c), L);
        break;
    case ND_UF_SIGN: case ND_UF_RINT: case ND_UF_FLOOR: case ND_UF_CEIL: case ND_UF_TRUNC:
    case ND_UF_FLOOR_DIVIDE: case ND_UF_HEAVISIDE:
        return 0;  /* zero almost everywhere (JAX's convention) */
    case ND_UF_EXP: ga = MUL(c, y); break;
    case ND_UF_EXP2: ga = MUL(c, MUL(y, S(LN2))); break;
    case ND_UF_EXPM1: ga = MUL(c, ADD(y, S(1))); break;
    case ND_UF_LOG: ga = DIV(c, a); break;
    case ND_UF_LOG2: ga = DIV(c, MUL(a, S(LN2))); break;
    case ND_UF_LOG10: ga = DIV(c, MUL(a, S(LN10))); break;
    case ND_UF_LOG1P: ga = DIV(c, ADD(a, S(1))); break;
    case ND_UF_LOGADDEXP:
        if (da) ga = MUL(c, U1(ND_UF_EXP, SUB(a, y)));
        if (db) gb = MUL(c, U1(ND_UF_EXP, SUB(b, y)));
        break;
    case ND_UF_LOGADDEXP2:
        if (da) ga = MUL(c, U1(ND_UF_EXP2, SUB(a, y)));
        if (db) gb = MUL(c, U1(ND_UF_EXP2, SUB(b, y)));
        break;
    case ND_UF_SQRT: ga = DIV(MUL(c, S(0.5)), y); break;
    case ND_UF_SQUARE: {
        /* |z|^2 of complex z: 2 c conj(z) straight to z. Through |z|'s own
         * rule it is 2|z|c conj(z)/|z| with a select at 0: a complex
         * division and |z| kept for the backward (a power spectrum's
         * gradient, spectral losses) */
        const nd_node *an = NODE(g, a);
        if (an->op == ND_OP_UFUNC && an->sub == ND_UF_ABSOLUTE && an->nin == 1 &&
            iscplx(NODE(g, an->in[0])->dtype)) {
            nd_id z = an->in[0];
            int Lc = NODE(g, z)->dtype;
            if (!A->dep[z]) return 0;
            return acc(A, z, uf(g, ND_UF_MULTIPLY, cast(g, MUL(c, S(2)), Lc),
                                uf(g, ND_UF_CONJUGATE, z, ND_NONE, Lc), Lc));
        }
        ga = MUL(c, MUL(a, S(2)));
        break;
    }
    case ND_UF_CBRT: ga = DIV(c, MUL(SQ(y), S(3))); break;
    case ND_UF_RECIPROCAL: ga = NEG(MUL(c, SQ(y))); break;
    case ND_UF_POWER: case ND_UF_FLOAT_POWER:
        if (da && !db && pow_const_exponent(g, b)) {
            /* x ** k, k a real scalar other than 0: k x^(k-1) with k-1 a
             * scalar of the graph, not a 0-d node computed per call, so
             * x ** 3's derivative is 3 (x * x) (codegen multiplies for an
             * exponent of 2; a computed one was a libm pow an element:
             * Black-Scholes greeks spent a quarter of its time there) and
             * k = 1 needs no power at all. No select: k is never 0. */
            double k = NODE(g, b)->scalar.f;
            ga = k == 1 ? c : MUL(c, MUL(b, k == 2 ? a : U2(ND_UF_POWER, a, S(k - 1))));
        } else if (da)
            ga = MUL(c, where(g, U2(ND_UF_EQUAL, b, S(0)), S(0),
                              MUL(b, U2(ND_UF_POWER, a, SUB(b, S(1)))), L));
        if (db)
            gb = MUL(c, MUL(U1(ND_UF_LOG, where(g, U2(ND_UF_EQUAL, a, S(0)), S(1), a, L)), y));
        break;
    case ND_UF_SIN: ga = MUL(c, U1(ND_UF_COS, a)); break;
    case ND_UF_COS: ga = NEG(MUL(c, U1(ND_UF_SIN, a))); break;
    case ND_UF_TAN: ga = MUL(c, ADD(S(1), SQ(y))); break;
    case ND_UF_ARCSIN: ga = DIV(c, U1(ND_UF_SQRT, SUB(S(1), SQ(a)))); break;
    case ND_UF_ARCCOS: ga = NEG(DIV(c, U1(ND_UF_SQRT, SUB(S(1), SQ(a))))); break;
    case ND_UF_ARCTAN: ga = DIV(c, ADD(S(1), SQ(a))); break;
    case ND_UF_ARCTAN2: {
        nd_id den = ADD(SQ(a), SQ(b));
        if (da) ga = MUL(c, DIV(b, den));
        if (db) gb = NEG(MUL(c, DIV(a, den)));
        break;
    }
    case ND_UF_HYPOT:
        if (da) ga = MUL(c, DIV(a, y));
        if (db) gb = MUL(c, DIV(b, y));
        break;
    case ND_UF_SINH: ga = MUL(c, U1(ND_UF_COSH, a)); break;
    case ND_UF_COSH: ga = MUL(c, U1(ND_UF_SINH, a)); break;
    case ND_UF_TANH: ga = MUL(c, SUB(S(1), SQ(y))); break;
    case ND_UF_ARCSINH: ga = DIV(c, U1(ND_UF_SQRT, ADD(SQ(a), S(1)))); break;
    case ND_UF_ARCCOSH: ga = DIV(c, U1(ND_UF_SQRT, SUB(SQ(a), S(1)))); break;
    case ND_UF_ARCTANH: ga = DIV(c, SUB(S(1), SQ(a))); break;
    case ND_UF_DEG2RAD: case ND_UF_RADIANS: ga = MUL(c, S(PI / 180)); break;
    case ND_UF_RAD2DEG: case ND_UF_DEGREES: ga = MUL(c, S(180 / PI)); break;
    case ND_UF_MAXIMUM: case ND_UF_MINIMUM: case ND_UF_FMAX: case ND_UF_FMIN: {
        /* JAX's balanced rule: a tie gives each side half; np.clip's
         * bounds (ND_F_CLIP) leave a tie to the clipped value, as
         * torch.clamp (1 on the closed interval [min, max]) */
        nd_id ea = U2(ND_UF_EQUAL, a, y), eb = U2(ND_UF_EQUAL, b, y);
        if (f->flags & ND_F_CLIP) {
            /* np.clip(x, lo, hi) is minimum(maximum(x, lo), hi): when
             * lo == hi and x < lo the value is the bounds' tie, and
             * torch.clamp gives nobody a gradient there (lo's is
             * x < lo < hi, hi's x > hi or hi < lo): a tie at hi passes
             * to maximum(x, lo) only where x itself is the value */
            const nd_node *an = NODE(g, a);
            nd_id ax = an->op == ND_OP_UFUNC && an->sub == ND_UF_MAXIMUM &&
                       (an->flags & ND_F_CLIP) && an->nin == 2 ? an->in[0] : ND_NONE;
            if (da && f->sub == ND_UF_MINIMUM && ax != ND_NONE) {
                nd_id moved = U2(ND_UF_NOT_EQUAL, ax, a);
                ga = where(g, ea, where(g, eb, where(g, moved, S(0), c, L), c, L), S(0), L);
            }
            else if (da) ga = where(g, ea, c, S(0), L);
            if (db) gb = where(g, ea, S(0), where(g, eb, c, S(0), L), L);
            break;
        }
        if (da) ga = MUL(c, where(g, ea, where(g, eb, S(0.5), S(1), L), S(0), L));
        if (db) gb = MUL(c, where(g, eb, where(g, ea, S(0.5), S(1), L), S(0), L));
        break;
    }
    case ND_UF_COPYSIGN:
        if (da)
            ga = MUL(c, where(g, uf(g, ND_UF_EQUAL, uf(g, ND_UF_SIGNBIT, a, ND_NONE, L),
                                     uf(g, ND_UF_SIGNBIT, b, ND_NONE, L), NPY_BOOL),
                              S(1), S(-1), L));
        break;
    case ND_UF_REMAINDER: case ND_UF_FMOD: case ND_UF_DIVMOD:
        if (f->sub == ND_UF_DIVMOD && f->aux == 0) return 0;
        ga = c;
        if (db)
            gb = NEG(MUL(c, U1(f->sub == ND_UF_FMOD ? ND_UF_TRUNC : ND_UF_FLOOR, DIV(a, b))));
        break;
    case ND_UF_LDEXP: ga = MUL(c, U1(ND_UF_EXP2, cast(g, b, L))); db = 0; break;
    case ND_UF_MODF:
        if (f->aux == 1) return 0;
        ga = c;
        break;
    default:
        return not_impl("the ufunc", nd_ufunc_name(f->sub));
    }
    if (PyErr_Occurred()) return -1;
    if (da && acc(A, a, ga) < 0) return -1;
    if (db && acc(A, b, gb) < 0) return -1;
    return 0;
}

/* ct (the reduction's shape) seen with x's shape: reduced dims broadcast */
static nd_id expand(nd_graph *g, nd_id c, const nd_node *f, const nd_node *x)
{
    if (BAD(c)) return ND_NONE;
    nd_node *cn = NODE(g, c);
    npy_intp cs[ND_MAXDIMS], st[ND_MAXDIMS];
    nd_c_strides(cn->ndim, cn->shape, cs);
    int keep = (f->flags & ND_F_KEEPDIMS) != 0, p = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (f->axes & (1ULL << d)) { st[d] = 0; p += keep; }
        else st[d] = cs[p++];
    }
    return view(g, c, x->ndim, x->shape, 0, st);
}

static int rule_reduce(ad_t *A, nd_id i, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    nd_id xi = f->in[0];
    if (!A->dep[xi]) return 0;
    nd_node x = *NODE(g, xi);
    int L = f->dtype, keep = (f->flags & ND_F_KEEPDIMS) != 0;
    nd_id gx;
    switch (f->sub) {
    case ND_UF_ADD:
        gx = expand(g, c, f, &x);
        break;
    case ND_UF_MAXIMUM: case ND_UF_MINIMUM: case ND_UF_FMAX: case ND_UF_FMIN: {
        /* ties share the cotangent evenly (JAX); complex values by NumPy's
         * lexicographic order, the same equality test */
        nd_id eq = uf(g, ND_UF_EQUAL, xi, expand(g, i, f, &x), L);
        nd_id cnt = red(g, ND_UF_ADD, cast(g, eq, L), f->axes, keep, L);
        /* mask * v as a select by the bool mask (v * 0 where it is false:
         * the same values, -0.0 and NaN included): what the backward keeps
         * between the count and this is then the narrow mask, not its float
         * cast (softmax cross-entropy's backward: 73.8 -> 61.5 MB read) */
        nd_id v = expand(g, DIV(c, cnt), f, &x);
        gx = where(g, eq, v, MUL(v, S(0)), L);
        break;
    }
    case ND_UF_MULTIPLY: {
        /* the product of the others, exact where x has zeros */
        nd_id iz = U2(ND_UF_EQUAL, xi, S(0));
        nd_id nz = expand(g, red(g, ND_UF_ADD, cast(g, iz, L), f->axes, keep, L), f, &x);
        nd_id xnz = where(g, iz, S(1), xi, L);
        nd_id P = expand(g, red(g, ND_UF_MULTIPLY, xnz, f->axes, keep, L), f, &x);
        nd_id others = where(g, iz, where(g, U2(ND_UF_EQUAL, nz, S(1)), P, S(0), L),
                             where(g, U2(ND_UF_EQUAL, nz, S(0)), DIV(P, xnz), S(0), L), L);
        gx = MUL(expand(g, c, f, &x), others);
        break;
    }
    default:
        return not_impl("the reduction",
                        f->sub >= 0 && f->sub < ND_UF_COUNT ? nd_ufunc_name(f->sub) : "arg-reduction");
    }
    return acc(A, xi, gx);
}

static nd_id flip(nd_graph *g, nd_id a, int axis)
{
    if (BAD(a)) return ND_NONE;
    nd_node *x = NODE(g, a);
    npy_intp cs[ND_MAXDIMS], sh[ND_MAXDIMS];
    int nd = x->ndim;
    memcpy(sh, x->shape, sizeof(npy_intp) * (size_t)nd);
    nd_c_strides(nd, sh, cs);
    npy_intp off = sh[axis] > 0 ? (sh[axis] - 1) * cs[axis] : 0;
    cs[axis] = -cs[axis];
    for (int d = 0; d < nd; d++) if (sh[d] == 0) off = 0;
    return view(g, a, nd, sh, off, cs);
}

/* The VJP of cumprod along axis, exact where x has zeros (no division):
 * g_i = (prod_{j<i} x_j) * r_i with r_i = c_i + x_{i+1} r_{i+1}. Float64,
 * or complex128 when x or c is complex (cumprod is holomorphic: the same
 * products, no conjugates -- JAX's transpose convention), x's shape;
 * called as an EXTERN (cumprod_vjp(x, c, axis)). */
static PyObject *cumprod_vjp_fn(PyObject *self, PyObject *args)
{
    PyObject *xo, *co;
    int axis;
    if (!PyArg_ParseTuple(args, "OOi", &xo, &co, &axis)) return NULL;
    int cx = (PyArray_Check(xo) && PyArray_ISCOMPLEX((PyArrayObject *)xo)) ||
             (PyArray_Check(co) && PyArray_ISCOMPLEX((PyArrayObject *)co));
    int T = cx ? NPY_CDOUBLE : NPY_DOUBLE, w = cx ? 2 : 1;
    PyArrayObject *x = (PyArrayObject *)PyArray_FROMANY(xo, T, 0, 0, NPY_ARRAY_CARRAY);
    PyArrayObject *c = x ? (PyArrayObject *)PyArray_FROMANY(co, T, 0, 0, NPY_ARRAY_CARRAY) : NULL;
    PyArrayObject *g = c ? (PyArrayObject *)PyArray_ZEROS(PyArray_NDIM(x), PyArray_DIMS(x), T, 0) : NULL;
    if (!g || PyArray_SIZE(c) != PyArray_SIZE(x) || axis < 0 || axis >= PyArray_NDIM(x)) {
        if (g) PyErr_SetString(PyExc_ValueError, "numdyn cumprod_vjp: bad operands");
        Py_XDECREF(x); Py_XDECREF(c); Py_XDECREF(g);
        return NULL;
    }
    npy_intp n = PyArray_DIM(x, axis), outer = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= PyArray_DIM(x, d);
    for (int d = axis + 1; d < PyArray_NDIM(x); d++) inner *= PyArray_DIM(x, d);
    /* (re, im) pairs; a real array has im 0 throughout */
    const double *X = PyArray_DATA(x), *C = PyArray_DATA(c);
    double *G = PyArray_DATA(g);
#define IM(a, k) (cx ? (a)[2 * (k) + 1] : 0.0)
    for (npy_intp o = 0; o < outer; o++)
        for (npy_intp k = 0; k < inner; k++) {
            npy_intp base = o * n * inner + k;
            double rr = 0, ri = 0;
            for (npy_intp i = n - 1; i >= 0; i--) {
                npy_intp at = base + i * inner, nx = at + inner;
                double tr = 0, ti = 0;
                if (i + 1 < n) {
                    tr = X[w * nx] * rr - IM(X, nx) * ri;
                    ti = X[w * nx] * ri + IM(X, nx) * rr;
                }
                rr = C[w * at] + tr;
                ri = IM(C, at) + ti;
                G[w * at] = rr;
                if (cx) G[w * at + 1] = ri;
            }
            double er = 1, ei = 0;
            for (npy_intp i = 0; i < n; i++) {
                npy_intp at = base + i * inner;
                double gr = G[w * at], gi = IM(G, at);
                G[w * at] = gr * er - gi * ei;
                if (cx) G[w * at + 1] = gr * ei + gi * er;
                double xr = X[w * at], xi = IM(X, at);
                double nr = er * xr - ei * xi;
                ei = er * xi + ei * xr;
                er = nr;
            }
        }
#undef IM
    Py_DECREF(x);
    Py_DECREF(c);
    return (PyObject *)g;
}

static PyMethodDef cumprod_vjp_def = {"cumprod_vjp", cumprod_vjp_fn, METH_VARARGS,
                                      "numdyn: the VJP of cumprod(x, axis) at cotangent c"};
static PyObject *F_cumprod_vjp;

static int rule_scan(ad_t *A, nd_id i, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    nd_id xi = f->in[0];
    if (!A->dep[xi]) return 0;
    if (f->sub == ND_UF_MULTIPLY) {
        nd_node x = *NODE(g, xi);
        PyObject *ax = PyLong_FromLong(f->aux);
        if (!ax) return -1;
        nd_id ids[2] = {xi, c};
        nd_id r = ext(g, F_cumprod_vjp, tmpl_of(2, 1, &ax), 2, ids,
                      iscplx(f->dtype) ? NPY_CDOUBLE : NPY_DOUBLE, x.ndim, x.shape);
        Py_DECREF(ax);
        return acc(A, xi, r);
    }
    int ext_max = f->sub == ND_UF_MAXIMUM || f->sub == ND_UF_MINIMUM || f->sub == ND_UF_FMAX ||
                  f->sub == ND_UF_FMIN;
    if (ext_max || f->sub == ND_UF_POWER || f->sub == ND_UF_FLOAT_POWER) {
        /* a running maximum: each output's cotangent to the element it
         * copies; power.accumulate: the chain rule as a reverse scan
         * (autodiff_kernels.h) */
        if (iscplx(f->dtype)) return not_impl("complex values in the scan", nd_ufunc_name(f->sub));
        nd_node x = *NODE(g, xi);
        PyObject *ax = PyLong_FromLong(f->aux);
        if (!ax) return -1;
        nd_id ids[3] = {xi, i, c};
        nd_id r = ext(g, ext_max ? nd_ad_cumext_vjp : nd_ad_powacc_vjp, tmpl_of(3, 1, &ax), 3, ids,
                      NPY_DOUBLE, x.ndim, x.shape);
        Py_DECREF(ax);
        return acc(A, xi, r);
    }
    if (f->sub == ND_UF_LOGADDEXP || f->sub == ND_UF_LOGADDEXP2) {
        nd_node x = *NODE(g, xi);
        PyObject *ax[2] = {PyLong_FromLong(f->aux), PyLong_FromLong(f->sub == ND_UF_LOGADDEXP2)};
        nd_id r = ND_NONE;
        if (ax[0] && ax[1]) {
            nd_id ids[3] = {xi, i, c};
            r = ext(g, nd_ad_lae_scan_vjp, tmpl_of(3, 2, ax), 3, ids, NPY_DOUBLE, x.ndim, x.shape);
        }
        Py_XDECREF(ax[0]);
        Py_XDECREF(ax[1]);
        return BAD(r) ? -1 : acc(A, xi, r);
    }
    if (f->sub != ND_UF_ADD && f->sub != ND_UF_SUBTRACT && f->sub != ND_UF_TRUE_DIVIDE)
        return not_impl("the scan", nd_ufunc_name(f->sub));
    if (f->sub == ND_UF_TRUE_DIVIDE && iscplx(f->dtype))
        return not_impl("complex values in the scan", nd_ufunc_name(f->sub));
    /* cumsum: each x_j reaches every y_i with i >= j, so its cotangent is
     * the reversed running sum R of c. subtract.accumulate: y_i = x_0 -
     * x_1 - ... - x_i, so x_0's is R_0 and every later x_j's is -R_j.
     * divide.accumulate: y_i = x_0 / x_1 / ... / x_i, dy_i/dx_0 = y_i/x_0
     * and dy_i/dx_j = -y_i/x_j (0 < j <= i): R of c*y, then signed as
     * subtract's and divided by x (JAX's cumulative-reduction gradient) */
    int L = f->dtype;
    nd_id src = f->sub == ND_UF_TRUE_DIVIDE ? MUL(c, i) : c;
    nd_id r = flip(g, src, f->aux);
    if (BAD(r)) return -1;
    nd_node n;
    nd_node_init(&n, ND_OP_SCAN, f->dtype, f->ndim, f->shape);
    n.sub = ND_UF_ADD;
    n.aux = f->aux;
    n.nin = 1;
    n.in[0] = r;
    n.in_dtype[0] = f->dtype;
    n.obj = Py_NewRef(nd_ufunc_object(ND_UF_ADD));
    nd_id gx = flip(g, add(g, &n), f->aux);
    if (f->sub != ND_UF_ADD && !BAD(gx)) {
        nd_id first = uf(g, ND_UF_EQUAL, index_node(g, f->ndim, f->shape, f->aux),
                         sc(g, 0, NPY_INT64), NPY_INT64);
        gx = where(g, first, gx, uf(g, ND_UF_NEGATIVE, gx, ND_NONE, f->dtype), f->dtype);
    }
    if (f->sub == ND_UF_TRUE_DIVIDE) gx = DIV(gx, xi);
    return acc(A, xi, gx);
}

/* the map (ndim, shape, strides) reaches no element twice */
static int injective(int ndim, const npy_intp *shape, const npy_intp *strides)
{
    int idx[ND_MAXDIMS], m = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) return 1;
        if (shape[d] > 1) idx[m++] = d;
    }
    for (int i = 1; i < m; i++)  /* sort by |stride| */
        for (int j = i; j > 0; j--) {
            npy_intp s1 = strides[idx[j - 1]], s2 = strides[idx[j]];
            if ((s1 < 0 ? -s1 : s1) <= (s2 < 0 ? -s2 : s2)) break;
            int t = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = t;
        }
    npy_intp span = 0;
    for (int k = 0; k < m; k++) {
        npy_intp s = strides[idx[k]] < 0 ? -strides[idx[k]] : strides[idx[k]];
        if (s <= span) return 0;
        span += s * (shape[idx[k]] - 1);
    }
    return 1;
}

/* element stride of dim d of x's C order */
static npy_intp cs_of(const nd_node *x, int d)
{
    npy_intp st = 1;
    for (int e = d + 1; e < x->ndim; e++) st *= x->shape[e];
    return st;
}

static int same_shape_of(const nd_node *a, int nd, const npy_intp *sh)
{
    return a->ndim == nd && memcmp(a->shape, sh, sizeof(npy_intp) * (size_t)nd) == 0;
}

static int same_shape_dtype(const nd_node *a, const nd_node *b)
{
    return a->dtype == b->dtype && same_shape_of(a, b->ndim, b->shape);
}

/* Add cotangent c (shaped as the view) into node i's through the view's
 * map (off, nd, R, s; injective). The first one scatters into zeros; a
 * later one updates the cotangent so far in its window only --
 * setitem(ct, ct[window] + c) -- not a zeros array of x's shape per view
 * and a sum of them: a stencil's u reads 5 shifted windows of u, whose
 * transposes were 5 zero fills, 5 region kernels and an add over the
 * whole array per time step; now 5 region kernels writing one buffer in
 * place (schedule's region_reads_in_place). */
static int acc_window(ad_t *A, nd_id i, nd_id c, npy_intp off, int nd, const npy_intp *R,
                      const npy_intp *s)
{
    nd_graph *g = A->g;
    const nd_node *x = NODE(g, i);
    int dt = x->dtype, xnd = x->ndim;
    npy_intp xsh[ND_MAXDIMS];
    memcpy(xsh, x->shape, sizeof(npy_intp) * (size_t)xnd);
    if (A->ct[i] == ND_NONE)
        return acc(A, i, setitem(g, nd_autodiff_zeros(g, dt, xnd, xsh), c, off, nd, R, s));
    if (BAD(c)) return -1;
    if (iscplx(NODE(g, c)->dtype) && !iscplx(dt)) c = real_part(g, c);
    c = cast(g, c, dt);
    nd_id base = A->ct[i];
    nd_id sum = uf(g, ND_UF_ADD, view(g, base, nd, R, off, s), c, dt);
    nd_id r = setitem(g, base, sum, off, nd, R, s);
    if (BAD(r)) return -1;
    A->ct[i] = r;
    return 0;
}

static int rule_view(ad_t *A, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    nd_id xi = f->in[0];
    if (!A->dep[xi]) return 0;
    nd_node x = *NODE(g, xi);
    /* .real / .imag (their view map may fold a reshape or slice of x):
     * the cotangent as x's complex values -- re(z): c, im(z): -1j c (JAX) --
     * then through the map as any view's */
    if (f->flags & ND_F_VIEW_REAL) c = cast(g, c, x.dtype);
    if (f->flags & ND_F_VIEW_IMAG)
        c = uf(g, ND_UF_MULTIPLY, cast(g, c, x.dtype), scc(g, 0, -1, x.dtype), x.dtype);
    if (BAD(c)) return -1;
    int nd = f->ndim;
    npy_intp R[ND_MAXDIMS], s[ND_MAXDIMS];
    uint64_t axes = 0;
    npy_intp size = 1;
    for (int d = 0; d < nd; d++) {
        R[d] = f->shape[d];
        s[d] = f->vstrides[d];
        size *= R[d];
        if (s[d] == 0 && R[d] > 1) { axes |= 1ULL << d; R[d] = 1; }
    }
    if (size == 0) return 0;
    nd_id c2 = axes ? red(g, ND_UF_ADD, c, axes, 1, x.dtype) : c;
    if (!injective(nd, R, s))
        return not_impl("a view that reads elements more than once", "numpy.lib.stride_tricks.as_strided");
    npy_intp xs = nd_node_size(&x), rs = 1;
    for (int d = 0; d < nd; d++) rs *= R[d];
    npy_intp cs[ND_MAXDIMS];
    nd_c_strides(nd, R, cs);
    int is_reshape = rs == xs && f->voff == 0;
    for (int d = 0; is_reshape && d < nd; d++) is_reshape = R[d] == 1 || s[d] == cs[d];
    if (is_reshape) return acc(A, xi, reshape(g, c2, x.ndim, x.shape));
    /* a box of x (step 1 along every dim it spans): kept until x's other
     * windows are known (flush_windows) */
    int box = nd == x.ndim;
    for (int d = 0; box && d < nd; d++) box = R[d] == 1 || s[d] == cs_of(&x, d);
    if (!box) return acc_window(A, xi, c2, f->voff, nd, R, s);
    if (!A->whead) {
        if (!(A->whead = PyMem_Malloc(sizeof(int32_t) * (size_t)A->n0))) { PyErr_NoMemory(); return -1; }
        for (nd_id k = 0; k < A->n0; k++) A->whead[k] = -1;
    }
    if (A->nwin == A->capwin) {
        int cap = A->capwin ? 2 * A->capwin : 16;
        ad_win *w = PyMem_Realloc(A->win, sizeof(ad_win) * (size_t)cap);
        if (!w) { PyErr_NoMemory(); return -1; }
        A->win = w;
        A->capwin = cap;
    }
    ad_win *w = &A->win[A->nwin];
    w->c = c2;
    w->off = f->voff;
    w->nd = nd;
    memcpy(w->R, R, sizeof(npy_intp) * (size_t)nd);
    memcpy(w->s, s, sizeof(npy_intp) * (size_t)nd);
    w->next = A->whead[xi];
    A->whead[xi] = A->nwin++;
    return 0;
}

/* c as (base, up to 4 steps) where each step multiplies by a 0-d scalar
 * node or negates, shape kept: -4 * c and c share a base */
typedef struct { nd_id base; int n; nd_id scal[4]; } ad_peel;

static ad_peel peel(nd_graph *g, nd_id c)
{
    ad_peel p = {c, 0, {0}};
    nd_id chain[4];
    while (p.n < 4 && !BAD(p.base)) {
        const nd_node *n = NODE(g, p.base);
        if (n->op != ND_OP_UFUNC) break;
        nd_id next = ND_NONE, k = ND_NONE;
        if (n->sub == ND_UF_NEGATIVE && n->nin == 1) next = n->in[0];
        else if (n->sub == ND_UF_MULTIPLY && n->nin == 2) {
            for (int j = 0; j < 2; j++)
                if (NODE(g, n->in[j])->op == ND_OP_SCALAR && NODE(g, n->in[j])->ndim == 0) {
                    k = n->in[j];
                    next = n->in[1 - j];
                }
        }
        if (next == ND_NONE || !same_shape_dtype(NODE(g, next), n)) break;
        chain[p.n] = k;  /* ND_NONE: a negation */
        p.n++;
        p.base = next;
    }
    for (int j = 0; j < p.n; j++) p.scal[j] = chain[p.n - 1 - j];  /* innermost first */
    return p;
}

/* x's window cotangents, now that all are known: windows of one shape
 * whose cotangents share a base (the stencil lap = u[:-2,1:-1] + u[2:,1:-1]
 * + ... - 4 u[1:-1,1:-1] hands the same cotangent, or a scalar multiple,
 * to each) are transposed together -- the base placed once in a zero-
 * padded array P, each window's transpose a view of P of x's shape, and
 * their sum one pointwise (stencil) kernel, as the forward's -- the others
 * one window at a time (acc_window). */
static int flush_windows(ad_t *A, nd_id xi)
{
    if (!A->whead || A->whead[xi] < 0) return 0;
    nd_graph *g = A->g;
    nd_node x = *NODE(g, xi);
    int nd = x.ndim;
    npy_intp xs = nd_node_size(&x);
    for (int r = A->whead[xi]; r >= 0; r = A->win[r].next) {
        ad_win *w = &A->win[r];
        if (BAD(w->c)) continue;  /* taken by an earlier group */
        ad_peel pw = peel(g, w->c);
        int members[64], m = 0;
        npy_intp a[64][ND_MAXDIMS];
        for (int q = r; q >= 0 && m < 64; q = A->win[q].next) {
            ad_win *v = &A->win[q];
            if (BAD(v->c) || memcmp(v->R, w->R, sizeof(npy_intp) * (size_t)nd) != 0) continue;
            if (peel(g, v->c).base != pw.base || !same_shape_of(NODE(g, pw.base), nd, w->R)) continue;
            /* the window's first index per dim, from its offset */
            npy_intp rem = v->off;
            int ok = 1;
            for (int d = 0; d < nd; d++) {
                npy_intp cs = cs_of(&x, d);
                a[m][d] = x.shape[d] == 1 ? 0 : rem / cs;
                rem -= a[m][d] * cs;
                ok = ok && a[m][d] >= 0 && a[m][d] + v->R[d] <= x.shape[d];
            }
            if (ok && rem == 0) members[m++] = q;
        }
        npy_intp lo[ND_MAXDIMS], hi[ND_MAXDIMS], P[ND_MAXDIMS], ps = 1;
        for (int d = 0; d < nd; d++) {
            lo[d] = hi[d] = 0;
            for (int j = 0; j < m; j++) {
                if (a[j][d] > lo[d]) lo[d] = a[j][d];
                if (x.shape[d] - w->R[d] - a[j][d] > hi[d]) hi[d] = x.shape[d] - w->R[d] - a[j][d];
            }
            P[d] = w->R[d] + lo[d] + hi[d];
            ps *= P[d];
        }
        if (m < 2 || ps > 2 * xs + 64) continue;  /* alone: below */
        npy_intp cp[ND_MAXDIMS], off = 0;
        nd_c_strides(nd, P, cp);
        for (int d = 0; d < nd; d++) off += lo[d] * cp[d];
        nd_id pad = setitem(g, nd_autodiff_zeros(g, NODE(g, pw.base)->dtype, nd, P), pw.base, off, nd,
                            w->R, cp);
        nd_id sum = ND_NONE;
        for (int j = 0; j < m; j++) {
            ad_win *v = &A->win[members[j]];
            ad_peel pv = peel(g, v->c);
            npy_intp o = 0;
            for (int d = 0; d < nd; d++) o += (lo[d] - a[j][d]) * cp[d];
            nd_id t = view(g, pad, nd, x.shape, o, cp);
            int dt = NODE(g, v->c)->dtype;
            for (int k = 0; k < pv.n; k++)
                t = pv.scal[k] == ND_NONE ? uf(g, ND_UF_NEGATIVE, t, ND_NONE, dt)
                                          : uf(g, ND_UF_MULTIPLY, t, pv.scal[k], dt);
            sum = sum == ND_NONE ? t : uf(g, ND_UF_ADD, sum, t, dt);
            v->c = ND_NONE - 1;  /* taken */
            if (BAD(sum)) return -1;
        }
        if (acc(A, xi, sum) < 0) return -1;
    }
    for (int r = A->whead[xi]; r >= 0; r = A->win[r].next) {
        ad_win *w = &A->win[r];
        if (BAD(w->c)) continue;
        if (acc_window(A, xi, w->c, w->off, w->nd, w->R, w->s) < 0) return -1;
    }
    A->whead[xi] = -1;
    return 0;
}

static int rule_setitem(ad_t *A, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    nd_id bi = f->in[0], vi = f->in[1];
    if (f->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG)) return not_impl("complex stores", ".real/.imag");
    if (A->dep[bi] &&
        acc(A, bi, setitem(g, c, sc(g, 0.0, f->dtype), f->voff, f->vndim, f->vshape, f->vstrides)) < 0)
        return -1;
    if (A->dep[vi] && acc(A, vi, view(g, c, f->vndim, f->vshape, f->voff, f->vstrides)) < 0)
        return -1;
    return 0;
}

static int rule_where(ad_t *A, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    int L = f->dtype;
    if (A->dep[f->in[1]] && acc(A, f->in[1], where(g, f->in[0], c, S(0), L)) < 0) return -1;
    if (A->dep[f->in[2]] && acc(A, f->in[2], where(g, f->in[0], S(0), c, L)) < 0) return -1;
    return 0;
}

/* flat C-order index over (ndim, shape) of the multi-index whose `axis`
 * component is taken from `along` (int64, that shape) */
static nd_id flat_index(nd_graph *g, nd_id along, int axis, int ndim, const npy_intp *shape)
{
    npy_intp cs[ND_MAXDIMS];
    nd_c_strides(ndim, shape, cs);
    nd_id acc_ = ND_NONE;
    for (int d = 0; d < ndim; d++) {
        nd_id comp = d == axis ? along : index_node(g, ndim, shape, d);
        nd_id term = uf(g, ND_UF_MULTIPLY, comp, sc(g, (double)cs[d], NPY_INT64), NPY_INT64);
        acc_ = d == 0 ? term : uf(g, ND_UF_ADD, acc_, term, NPY_INT64);
    }
    return acc_;
}

/* src[..., idx[..., k, ...], ...] along axis (idx of src's shape): a
 * GATHER of dtype dt */
static nd_id gather_along(nd_graph *g, nd_id src, nd_id idx, int axis, int dt)
{
    if (BAD(src) || BAD(idx)) return ND_NONE;
    nd_node x = *NODE(g, idx);
    nd_id flat = flat_index(g, idx, axis, x.ndim, x.shape);
    if (BAD(flat)) return ND_NONE;
    nd_node n;
    nd_node_init(&n, ND_OP_GATHER, dt, x.ndim, x.shape);
    n.nin = 2;
    n.in[0] = src;
    n.in[1] = flat;
    return add(g, &n);
}

/* bincount-based scatter-add of v (any shape) at flat indices idx (same
 * size) into zeros of (ndim, shape); float64 */
static nd_id scatter_add(nd_graph *g, nd_id idx, nd_id v, int ndim, const npy_intp *shape)
{
    if (BAD(idx) || BAD(v)) return ND_NONE;
    npy_intp m = nd_node_size(NODE(g, idx)), N = 1;
    for (int d = 0; d < ndim; d++) N *= shape[d];
    npy_intp one = 1;
    nd_id fi = view(g, idx, 1, &m, 0, &one), fv = view(g, v, 1, &m, 0, &one);
    PyObject *Nobj = PyLong_FromSsize_t(N);
    if (!Nobj) return ND_NONE;
    nd_id ids[2] = {fi, fv};
    nd_id r = ext(g, F_bincount, tmpl_of(2, 1, &Nobj), 2, ids, NPY_DOUBLE, 1, &N);
    Py_DECREF(Nobj);
    return reshape(g, r, ndim, shape);
}

static int rule_gather(ad_t *A, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    nd_id xi = f->in[0];
    if (!A->dep[xi]) return 0;
    if (nd_node_size(f) == 0) return 0;
    nd_node x = *NODE(g, xi);
    return acc(A, xi, scatter_add(g, f->in[1], c, x.ndim, x.shape));
}

/* ------------------------------------------------------------ externs */

static nd_id swap_last(nd_graph *g, nd_id a)
{
    if (BAD(a)) return ND_NONE;
    nd_node *x = NODE(g, a);
    int nd = x->ndim;
    npy_intp sh[ND_MAXDIMS], cs[ND_MAXDIMS];
    memcpy(sh, x->shape, sizeof(npy_intp) * (size_t)nd);
    nd_c_strides(nd, sh, cs);
    npy_intp t = sh[nd - 1]; sh[nd - 1] = sh[nd - 2]; sh[nd - 2] = t;
    t = cs[nd - 1]; cs[nd - 1] = cs[nd - 2]; cs[nd - 2] = t;
    return view(g, a, nd, sh, 0, cs);
}

/* a's shape with (k) 1-dims inserted at position pos (a reshape) */
static nd_id unsqueeze(nd_graph *g, nd_id a, int pos)
{
    if (BAD(a)) return ND_NONE;
    nd_node *x = NODE(g, a);
    int nd = x->ndim;
    npy_intp sh[ND_MAXDIMS];
    if (pos < 0) pos += nd + 1;
    for (int d = 0, k = 0; d <= nd; d++) sh[d] = d == pos ? 1 : x->shape[k++];
    return reshape(g, a, nd + 1, sh);
}

/* a without its last dim (of length 1) */
static nd_id squeeze_last(nd_graph *g, nd_id a)
{
    if (BAD(a)) return ND_NONE;
    nd_node *x = NODE(g, a);
    npy_intp sh[ND_MAXDIMS];
    memcpy(sh, x->shape, sizeof(npy_intp) * (size_t)x->ndim);
    return reshape(g, a, x->ndim - 1, sh);
}

static nd_id mm(nd_graph *g, nd_id p, nd_id q)
{
    if (BAD(p) || BAD(q)) return ND_NONE;
    nd_node *P = NODE(g, p), *Q = NODE(g, q);
    nd_node pb, qb;
    int np_ = P->ndim, nq = Q->ndim;
    nd_node_init(&pb, ND_OP_SCALAR, 0, np_ >= 2 ? np_ - 2 : 0, P->shape);
    nd_node_init(&qb, ND_OP_SCALAR, 0, nq >= 2 ? nq - 2 : 0, Q->shape);
    int nd;
    npy_intp sh[ND_MAXDIMS];
    if (broadcast2(&pb, &qb, &nd, sh) < 0) return ND_NONE;
    if (np_ >= 2) sh[nd++] = P->shape[np_ - 2];
    if (nq >= 2) sh[nd++] = Q->shape[nq - 1];
    int dt = fmaxdt(P->dtype, Q->dtype);
    nd_id ids[2] = {p, q};
    return ext(g, F_matmul, tmpl_of(2, 0, NULL), 2, ids, dt, nd, sh);
}

static int rule_matmul(ad_t *A, nd_id a, nd_id b, int L, nd_id c)
{
    nd_graph *g = A->g;
    int na = NODE(g, a)->ndim, nb = NODE(g, b)->ndim;
    nd_id ga = ND_NONE, gb = ND_NONE;
    int da = A->dep[a], db = A->dep[b];
    if (na == 1 && nb == 1) {
        if (da) ga = MUL(c, b);
        if (db) gb = MUL(c, a);
    } else if (nb == 1) {
        if (da) ga = MUL(unsqueeze(g, c, -1), b);
        if (db) gb = squeeze_last(g, mm(g, swap_last(g, a), unsqueeze(g, c, -1)));
    } else if (na == 1) {
        if (da) ga = squeeze_last(g, mm(g, b, unsqueeze(g, c, -1)));
        if (db) gb = MUL(unsqueeze(g, a, -1), unsqueeze(g, c, -2));
    } else {
        if (da) ga = mm(g, c, swap_last(g, b));
        if (db) gb = mm(g, swap_last(g, a), c);
    }
    if (PyErr_Occurred()) return -1;
    if (da && acc(A, a, ga) < 0) return -1;
    if (db && acc(A, b, gb) < 0) return -1;
    return 0;
}

static nd_id inv(nd_graph *g, nd_id a)
{
    if (BAD(a)) return ND_NONE;
    nd_node *x = NODE(g, a);
    int nd = x->ndim, dt = x->dtype;
    npy_intp sh[ND_MAXDIMS];
    memcpy(sh, x->shape, sizeof(npy_intp) * (size_t)nd);
    return ext(g, F_inv, tmpl_of(1, 0, NULL), 1, &a, dt, nd, sh);
}

/* einsum(spec, ops...) with output shape from the labels' sizes */
static nd_id einsum(nd_graph *g, const char *spec, int nop, const nd_id *ops, int dt)
{
    for (int k = 0; k < nop; k++) if (BAD(ops[k])) return ND_NONE;
    npy_intp size[128];
    for (int k = 0; k < 128; k++) size[k] = 1;
    const char *p = spec;
    for (int k = 0; k < nop; k++) {
        nd_node *x = NODE(g, ops[k]);
        for (int d = 0; d < x->ndim; d++, p++) {
            unsigned char ch = (unsigned char)*p;
            if (ch >= 128) return ND_NONE;
            if (x->shape[d] != 1) size[ch] = x->shape[d];
        }
        p++;  /* ',' or '-' */
    }
    const char *out = strstr(spec, "->") + 2;
    int nd = (int)strlen(out);
    npy_intp sh[ND_MAXDIMS];
    for (int d = 0; d < nd; d++) sh[d] = size[(unsigned char)out[d]];
    PyObject *s = PyUnicode_FromString(spec);
    if (!s) return ND_NONE;
    PyObject *t = PyTuple_New(nop + 1);
    if (!t) { Py_DECREF(s); return ND_NONE; }
    PyTuple_SET_ITEM(t, 0, s);
    for (int k = 0; k < nop; k++) {
        PyObject *ph = nd_extern_placeholder(k);
        if (!ph) { Py_DECREF(t); return ND_NONE; }
        PyTuple_SET_ITEM(t, k + 1, ph);
    }
    return ext(g, F_einsum, t, nop, ops, dt, nd, sh);
}

/* gradients of einsum(labels[0],.. -> out) for each operand: einsum of
 * the cotangent with the other operands onto the operand's labels; a
 * label only that operand sums gets the cotangent broadcast along it, a
 * label repeated in it (a diagonal, "ii->i") gets it on the diagonal and
 * zeros elsewhere */
#define EINSUM_MAXOP 8
static int einsum_grads(ad_t *A, int nop, const nd_id *ops, char labels[][ND_MAXDIMS + 1],
                        const char *out, int L, nd_id c)
{
    nd_graph *g = A->g;
    for (int k = 0; k < nop; k++) {
        if (!A->dep[ops[k]]) continue;
        const char *lk = labels[k];
        char uniq[ND_MAXDIMS + 1], present[ND_MAXDIMS + 1];
        int nu = 0, np_ = 0, nk = (int)strlen(lk);
        for (int i = 0; lk[i]; i++)
            if (!memchr(uniq, lk[i], (size_t)nu)) uniq[nu++] = lk[i];
        uniq[nu] = 0;
        for (int i = 0; i < nu; i++) {
            int found = strchr(out, uniq[i]) != NULL;
            for (int j = 0; j < nop && !found; j++) found = j != k && strchr(labels[j], uniq[i]);
            if (found) present[np_++] = uniq[i];
        }
        present[np_] = 0;
        char spec[(EINSUM_MAXOP + 1) * (ND_MAXDIMS + 2) + 8];
        nd_id ids[EINSUM_MAXOP + 1];
        int m = 0;
        size_t pos = 0;
        pos += (size_t)snprintf(spec + pos, sizeof spec - pos, "%s", out);
        ids[m++] = c;
        for (int j = 0; j < nop; j++)
            if (j != k) {
                pos += (size_t)snprintf(spec + pos, sizeof spec - pos, ",%s", labels[j]);
                ids[m++] = ops[j];
            }
        snprintf(spec + pos, sizeof spec - pos, "->%s", present);
        int dt = L;
        for (int j = 1; j < m; j++) dt = fmaxdt(dt, NODE(g, ids[j])->dtype);
        nd_id e = einsum(g, spec, m, ids, dt);
        if (BAD(e)) return -1;
        nd_node x = *NODE(g, ops[k]);
        npy_intp ushape[ND_MAXDIMS], xcs[ND_MAXDIMS], dstr[ND_MAXDIMS];
        nd_c_strides(x.ndim, x.shape, xcs);
        for (int i = 0; i < nu; i++) {
            dstr[i] = 0;
            for (int d = 0; d < nk; d++)
                if (lk[d] == uniq[i]) { ushape[i] = x.shape[d]; dstr[i] += xcs[d]; }
        }
        if (np_ < nu) {
            nd_node *en = NODE(g, e);
            npy_intp cs[ND_MAXDIMS], st[ND_MAXDIMS];
            nd_c_strides(en->ndim, en->shape, cs);
            for (int i = 0, q = 0; i < nu; i++)
                st[i] = q < np_ && present[q] == uniq[i] ? cs[q++] : 0;
            e = view(g, e, nu, ushape, 0, st);
        }
        if (nu < nk)  /* onto the diagonal(s) of zeros */
            e = setitem(g, nd_autodiff_zeros(g, NODE(g, e)->dtype, x.ndim, x.shape), e, 0, nu,
                        ushape, dstr);
        if (acc(A, ops[k], e) < 0) return -1;
    }
    return 0;
}

static int rule_einsum(ad_t *A, const nd_node *f, nd_id c)
{
    PyObject *tmpl = PyTuple_GET_ITEM(f->attrs, 0);
    PyObject *spec = PyTuple_GET_ITEM(tmpl, 0);
    if (!PyUnicode_Check(spec) || f->nextra > EINSUM_MAXOP) return not_impl("einsum", "this form");
    const char *s = PyUnicode_AsUTF8(spec);
    if (!s) return -1;
    char buf[256], labels[EINSUM_MAXOP][ND_MAXDIMS + 1], out[ND_MAXDIMS + 1];
    size_t n = 0;
    for (const char *p = s; *p && n < sizeof buf - 1; p++) if (*p != ' ') buf[n++] = *p;
    buf[n] = 0;
    char *arrow = strstr(buf, "->");
    char raw[EINSUM_MAXOP + 1][ND_MAXDIMS + 4];
    int k = 0, j = 0;
    for (char *p = buf; *p && p != arrow; p++) {
        if (*p == ',') { raw[k][j] = 0; if (++k >= EINSUM_MAXOP) break; j = 0; continue; }
        if (j < ND_MAXDIMS + 3) raw[k][j++] = *p;
    }
    if (k >= EINSUM_MAXOP) return not_impl("einsum", "this form");
    raw[k][j] = 0;
    if (k + 1 != f->nextra) return not_impl("einsum", "this form");
    const int OUT = EINSUM_MAXOP;  /* raw[OUT], ecount[OUT]: the output's */
    raw[OUT][0] = 0;
    if (arrow) snprintf(raw[OUT], sizeof raw[OUT], "%s", arrow + 2);
    /* "..." becomes letters the spec does not use, right-aligned */
    char ell[ND_MAXDIMS];
    int nell = 0, maxe = 0, ecount[EINSUM_MAXOP + 1] = {0};
    for (int q = 0; q <= k; q++) {
        if (!strstr(raw[q], "...")) continue;
        ecount[q] = NODE(A->g, f->extra[q])->ndim - ((int)strlen(raw[q]) - 3);
        if (ecount[q] < 0) return not_impl("einsum", "this form");
        if (ecount[q] > maxe) maxe = ecount[q];
    }
    const char *pool = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for (const char *p = pool; *p && nell < maxe; p++) if (!strchr(buf, *p)) ell[nell++] = *p;
    if (nell < maxe) return not_impl("einsum", "too many labels");
    ecount[OUT] = maxe;
    for (int q = 0; q <= k + 1; q++) {
        if (q == k + 1 && !arrow) break;
        char *dst = q == k + 1 ? out : labels[q];
        const char *src = raw[q == k + 1 ? OUT : q];
        int m = 0;
        for (const char *p = src; *p; p++) {
            if (p[0] == '.' && p[1] == '.' && p[2] == '.') {
                for (int e = maxe - ecount[q == k + 1 ? OUT : q]; e < maxe && m < ND_MAXDIMS; e++) dst[m++] = ell[e];
                p += 2;
            } else if (m < ND_MAXDIMS) {
                dst[m++] = *p;
            }
        }
        dst[m] = 0;
    }
    if (!arrow) {  /* implicit: the ellipsis, then labels appearing once, sorted */
        int cnt[128] = {0}, m = 0;
        for (int q = 0; q <= k; q++) for (char *p = labels[q]; *p; p++) cnt[(unsigned char)*p & 127]++;
        for (int e = 0; e < maxe; e++) { out[m++] = ell[e]; cnt[(unsigned char)ell[e]] = 0; }
        for (int ch = 0; ch < 128; ch++) if (cnt[ch] == 1 && m < ND_MAXDIMS) out[m++] = (char)ch;
        out[m] = 0;
    }
    return einsum_grads(A, f->nextra, f->extra, labels, out, f->dtype, c);
}

static int kw_given(const nd_node *f);

/* inner(a, b): einsum "...z,...z" with a's and b's other axes side by side */
static int rule_inner(ad_t *A, const nd_node *f, nd_id c)
{
    if (f->nextra != 2 || kw_given(f)) return not_impl("inner", "this form");
    int na = NODE(A->g, f->extra[0])->ndim, nb = NODE(A->g, f->extra[1])->ndim;
    if (na < 1 || nb < 1 || na + nb - 2 > ND_MAXDIMS) return not_impl("inner", "of a 0-d operand");
    char labels[2][ND_MAXDIMS + 1], out[ND_MAXDIMS + 1];
    const char *pool = "ABCDEFGHIJKLMNOPQRSTUVWXY";
    int m = 0;
    for (int d = 0; d < na - 1; d++, m++) labels[0][d] = out[m] = pool[m];
    labels[0][na - 1] = 'z';
    labels[0][na] = 0;
    for (int d = 0; d < nb - 1; d++, m++) labels[1][d] = out[m] = pool[m];
    labels[1][nb - 1] = 'z';
    labels[1][nb] = 0;
    out[m] = 0;
    return einsum_grads(A, 2, f->extra, labels, out, f->dtype, c);
}

/* linalg.multi_dot: the chain as one einsum (a 1-d first/last operand a
 * row/column) */
static int rule_multi_dot(ad_t *A, const nd_node *f, nd_id c)
{
    int n = f->nextra;
    if (n < 2 || n > EINSUM_MAXOP || kw_given(f)) return not_impl("linalg.multi_dot", "this form");
    char labels[EINSUM_MAXOP][ND_MAXDIMS + 1], out[3];
    const char *x = "abcdefghij";
    int m = 0;
    for (int i = 0; i < n; i++) {
        int nd = NODE(A->g, f->extra[i])->ndim, q = 0;
        if (nd == 2) { labels[i][q++] = x[i]; labels[i][q++] = x[i + 1]; }
        else labels[i][q++] = i == 0 ? x[1] : x[i];
        labels[i][q] = 0;
    }
    if (NODE(A->g, f->extra[0])->ndim == 2) out[m++] = x[0];
    if (NODE(A->g, f->extra[n - 1])->ndim == 2) out[m++] = x[n];
    out[m] = 0;
    return einsum_grads(A, n, f->extra, labels, out, f->dtype, c);
}

/* linalg.matrix_power(a, k), k >= 0: sum over j < k of (a^T)^j c (a^T)^(k-1-j) */
static int rule_matrix_power(ad_t *A, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    PyObject *tmpl = PyTuple_GET_ITEM(f->attrs, 0);
    if (f->nextra != 1 || kw_given(f) || PyTuple_GET_SIZE(tmpl) != 2 ||
        !PyLong_Check(PyTuple_GET_ITEM(tmpl, 1)))
        return not_impl("linalg.matrix_power", "this form");
    long k = PyLong_AsLong(PyTuple_GET_ITEM(tmpl, 1));
    if (k == -1 && PyErr_Occurred()) return -1;
    if (k == 0) return 0;
    if (k < -64 || k > 64) return not_impl("linalg.matrix_power", "a power beyond 64");
    int L = f->dtype;
    /* a negative power is NumPy's inv(a)^|k|: B = inv(a), then a's
     * cotangent is -B^T G B^T for B's cotangent G */
    long m = k < 0 ? -k : k;
    nd_id at = swap_last(g, k < 0 ? inv(g, f->extra[0]) : f->extra[0]);
    nd_id pw[65];
    pw[0] = ND_NONE;  /* (a^T)^0: the identity, left out of the products */
    pw[1] = at;
    for (long j = 2; j < m; j++) pw[j] = mm(g, pw[j - 1], at);
    nd_id sum = ND_NONE;
    for (long j = 0; j < m; j++) {
        nd_id t = j ? mm(g, pw[j], c) : c;
        if (m - 1 - j) t = mm(g, t, pw[m - 1 - j]);
        sum = sum == ND_NONE ? t : ADD(sum, t);
    }
    if (k < 0) sum = NEG(mm(g, mm(g, at, sum), at));
    return acc(A, f->extra[0], sum);
}

static int rule_tensordot(ad_t *A, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    PyObject *tmpl = PyTuple_GET_ITEM(f->attrs, 0);
    if (PyTuple_GET_SIZE(tmpl) < 3) return not_impl("tensordot", "this form");
    PyObject *pair = PyTuple_GET_ITEM(tmpl, 2);
    int na = NODE(g, f->extra[0])->ndim, nb = NODE(g, f->extra[1])->ndim;
    char labels[2][ND_MAXDIMS + 1], out[ND_MAXDIMS + 1];
    for (int d = 0; d < na; d++) labels[0][d] = (char)('a' + d);
    labels[0][na] = 0;
    for (int d = 0; d < nb; d++) labels[1][d] = (char)('A' + d);
    labels[1][nb] = 0;
    if (!PySequence_Check(pair) || PySequence_Size(pair) != 2) return not_impl("tensordot", "axes");
    PyObject *la = PySequence_GetItem(pair, 0), *lb = PySequence_GetItem(pair, 1);
    int ok = la && lb && PySequence_Check(la) && PySequence_Check(lb) &&
             PySequence_Size(la) == PySequence_Size(lb);
    char contracted[ND_MAXDIMS] = {0};
    for (Py_ssize_t q = 0; ok && q < PySequence_Size(la); q++) {
        PyObject *x = PySequence_GetItem(la, q), *y = PySequence_GetItem(lb, q);
        long ia = x ? PyLong_AsLong(x) : -1, ib = y ? PyLong_AsLong(y) : -1;
        Py_XDECREF(x);
        Py_XDECREF(y);
        if (PyErr_Occurred()) { ok = 0; break; }
        if (ia < 0) ia += na;
        if (ib < 0) ib += nb;
        if (ia < 0 || ia >= na || ib < 0 || ib >= nb) { ok = 0; break; }
        labels[1][ib] = labels[0][ia];
        contracted[ia] = 1;
    }
    Py_XDECREF(la);
    Py_XDECREF(lb);
    if (!ok) { if (PyErr_Occurred()) return -1; return not_impl("tensordot", "axes"); }
    int m = 0;
    for (int d = 0; d < na; d++) if (!contracted[d]) out[m++] = labels[0][d];
    for (int d = 0; d < nb; d++) if (labels[1][d] >= 'A' && labels[1][d] <= 'Z') out[m++] = labels[1][d];
    out[m] = 0;
    return einsum_grads(A, 2, f->extra, labels, out, f->dtype, c);
}

/* ------------------------------------------------- decompositions
 * eigh, eigvalsh, svd and qr return several arrays; each is its own
 * EXTERN node (aux: which), and each rule below is the contribution of
 * one of them, reading its siblings (found in the graph, or appended: a
 * second decomposition in the backward). Conventions are JAX's: eigh's
 * gradient is that of eigh((A + A^T)/2) (symmetrized: NumPy reads one
 * triangle, and only symmetric perturbations keep A in eigh's domain);
 * the SVD and QR are the reduced ones (full_matrices=True / "complete"
 * only where that is the same thing: square inputs); QR needs M >= N.
 * Degenerate eigenvalues or singular values give inf/nan, as in JAX. */

/* output k of fn(*tmpl) on the operands of f: an existing node, else new */
static nd_id sibling(nd_graph *g, const nd_node *f, PyObject *fn, PyObject *tmpl, int k, int dt,
                     int ndim, const npy_intp *shape)
{
    for (nd_id j = 0; j < g->n; j++) {
        nd_node *n = &g->nodes[j];
        if (n->op != ND_OP_EXTERN || n->obj != fn || n->aux != k || n->nextra != f->nextra ||
            memcmp(n->extra, f->extra, sizeof(nd_id) * (size_t)f->nextra) != 0 ||
            PyTuple_GET_ITEM(n->attrs, 1) != Py_None)
            continue;
        PyObject *t = PyTuple_GET_ITEM(n->attrs, 0);
        int eq = t == tmpl ? 1 : PyObject_RichCompareBool(t, tmpl, Py_EQ);
        if (eq < 0) return ND_NONE;
        if (eq) return j;
    }
    nd_node n;
    nd_node_init(&n, ND_OP_EXTERN, dt, ndim, shape);
    n.aux = (int16_t)k;
    if (!(n.attrs = PyTuple_Pack(2, tmpl, Py_None))) return ND_NONE;
    n.extra = PyMem_Malloc(sizeof(nd_id) * (size_t)f->nextra);
    if (!n.extra) { Py_DECREF(n.attrs); PyErr_NoMemory(); return ND_NONE; }
    memcpy(n.extra, f->extra, sizeof(nd_id) * (size_t)f->nextra);
    n.nextra = f->nextra;
    n.obj = Py_NewRef(fn);
    return add(g, &n);
}

/* (n, n) identity mask (bool) and strict-lower mask (bool) */
static nd_id eye_mask(nd_graph *g, npy_intp n, int lower)
{
    npy_intp sq[2] = {n, n};
    nd_id r = index_node(g, 2, sq, 0), q = index_node(g, 2, sq, 1);
    return uf(g, lower ? ND_UF_GREATER : ND_UF_EQUAL, r, q, NPY_INT64);
}

/* F[..., i, j] = 1 / (d_j - d_i) off the diagonal, 0 on it (d: (..., n)) */
static nd_id gap_inverse(nd_graph *g, nd_id d, npy_intp n, int L)
{
    nd_id eye = eye_mask(g, n, 0);
    nd_id diff = SUB(unsqueeze(g, d, -2), unsqueeze(g, d, -1));
    nd_id safe = where(g, eye, S(1), diff, L);  /* no 1/0 on the diagonal */
    return where(g, eye, S(0), U1(ND_UF_RECIPROCAL, safe), L);
}

/* x[..., r0:r1, c0:c1] (a view; x is C-contiguous in element units) */
static nd_id block(nd_graph *g, nd_id x, npy_intp r0, npy_intp r1, npy_intp c0, npy_intp c1)
{
    if (BAD(x)) return ND_NONE;
    nd_node *n = NODE(g, x);
    int nd = n->ndim;
    npy_intp sh[ND_MAXDIMS], cs[ND_MAXDIMS];
    memcpy(sh, n->shape, sizeof(npy_intp) * (size_t)nd);
    nd_c_strides(nd, sh, cs);
    npy_intp off = r0 * cs[nd - 2] + c0 * cs[nd - 1];
    sh[nd - 2] = r1 - r0;
    sh[nd - 1] = c1 - c0;
    for (int d = 0; d < nd; d++) if (sh[d] == 1) cs[d] = 0;
    return view(g, x, nd, sh, off, cs);
}

/* zeros of base's shape with v written at [..., :, c0:c0+v's columns] */
static nd_id put_cols(nd_graph *g, nd_id base, nd_id v, npy_intp c0)
{
    if (BAD(base) || BAD(v)) return ND_NONE;
    nd_node *b = NODE(g, base);
    int nd = b->ndim;
    npy_intp cs[ND_MAXDIMS], vs[ND_MAXDIMS];
    nd_c_strides(nd, b->shape, cs);
    memcpy(vs, NODE(g, v)->shape, sizeof(npy_intp) * (size_t)nd);
    return setitem(g, base, v, c0, nd, vs, cs);
}

/* complex companions of the real rules: conj(x) of a complex node (x itself
 * of a real one), the conjugate transpose, and (x + x^H) / 2 */
static nd_id cj(nd_graph *g, nd_id x)
{
    if (BAD(x) || !iscplx(NODE(g, x)->dtype)) return x;
    return uf(g, ND_UF_CONJUGATE, x, ND_NONE, NODE(g, x)->dtype);
}

static nd_id ctr(nd_graph *g, nd_id x) { return cj(g, swap_last(g, x)); }

static nd_id sym(nd_graph *g, nd_id x, int L) { return MUL(ADD(x, ctr(g, x)), S(0.5)); }

static int cplx_of(int dt) { return dt == NPY_FLOAT ? NPY_CFLOAT : dt == NPY_DOUBLE ? NPY_CDOUBLE : dt; }
static int real_of(int dt) { return dt == NPY_CFLOAT ? NPY_FLOAT : dt == NPY_CDOUBLE ? NPY_DOUBLE : dt; }

/* i Im(diag(X)) / (2 s) as a diagonal matrix (X complex (..., K, K), s real
 * (..., K)): the share of a complex SVD's gauge (U -> U e^{i phi}, V -> V
 * e^{i phi}) split evenly between U and V; a gauge-invariant loss makes the
 * two shares equal, as the formulas of Wan & Zhang (2019) and torch assume */
static nd_id svd_phase(nd_graph *g, nd_id X, nd_id s, npy_intp K, int L)
{
    nd_id im2 = MUL(SUB(X, cj(g, X)), S(0.25));  /* i Im(X) / 2 */
    return where(g, eye_mask(g, K, 0), DIV(im2, unsqueeze(g, s, -2)), S(0), L);
}

/* eigh of a complex (Hermitian) matrix: the real rule with conj(V) for the
 * first V and Hermitian symmetrization (the transpose convention of
 * autodiff.h of torch's V (F o skew(V^H gV) / 2 + diag(gw)) V^H);
 * eigenvalues are real, the eigenvectors complex (dtypes per output) */
static int rule_eigh(ad_t *A, nd_id i, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    nd_node a = *NODE(g, f->extra[0]);
    int cx = iscplx(a.dtype);
    int vec = f->obj != F_eigvalsh && f->aux == 1;
    int Lw = vec ? real_of(f->dtype) : f->dtype, L = cx ? cplx_of(Lw) : Lw;
    npy_intp n = a.shape[a.ndim - 1];
    PyObject *tmpl = PyTuple_GET_ITEM(f->attrs, 0);
    nd_id w, V;
    if (!vec) {
        /* the eigenvalues: conj(V) diag(c) V^T */
        w = i;
        if (f->obj == F_eigvalsh) {
            PyObject *t = PyTuple_Pack(2, PyTuple_GET_ITEM(tmpl, 0), PyTuple_GET_ITEM(tmpl, 1));
            if (!t) return -1;
            V = sibling(g, f, F_eigh, t, 1, L, a.ndim, a.shape);
            Py_DECREF(t);
        } else {
            V = sibling(g, f, F_eigh, tmpl, 1, L, a.ndim, a.shape);
        }
        nd_id gA = mm(g, MUL(cj(g, V), unsqueeze(g, c, -2)), swap_last(g, V));
        return acc(A, f->extra[0], sym(g, gA, L));
    }
    /* the eigenvectors: conj(V) (F o (V^T c)) V^T */
    V = i;
    npy_intp ws[ND_MAXDIMS];
    memcpy(ws, a.shape, sizeof(ws));
    w = sibling(g, f, F_eigh, tmpl, 0, Lw, a.ndim - 1, ws);
    nd_id Vt = swap_last(g, V);
    nd_id gA = mm(g, mm(g, cj(g, V), MUL(gap_inverse(g, w, n, Lw), mm(g, Vt, c))), Vt);
    return acc(A, f->extra[0], sym(g, gA, L));
}

/* eig/eigvals (the shim's node is complex also for a real matrix: NumPy's
 * real result is its real part, taken after a branch on the data; a real
 * matrix's gradient is the real part of this one, as torch's). w the
 * eigenvalues, V the
 * right eigenvectors (unit columns, NumPy's). torch's linalg_eig_backward
 * under the transpose convention (autodiff.h), one output at a time:
 *   from w:  V^{-T} diag(c) V^T
 *   from V:  V^{-T} ((K - V^T conj(V) diag(re diag K)) o F) V^T,  K = V^T c,
 * F as gap_inverse's. Distinct eigenvalues; losses must not depend on the
 * eigenvectors' phases (the normalization term removes what they would
 * add to a unit-norm change). */
static int rule_eig(ad_t *A, nd_id i, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    int L = f->dtype;
    nd_node a = *NODE(g, f->extra[0]);
    if (!iscplx(L)) return not_impl("linalg.eig", "with a real result node");
    npy_intp n = a.shape[a.ndim - 1];
    PyObject *tmpl = PyTuple_GET_ITEM(f->attrs, 0);
    int values = f->obj == F_eigvals || f->aux == 0;
    nd_id V = values ? sibling(g, f, F_eig, tmpl, 1, L, a.ndim, a.shape) : i;
    nd_id Vt = swap_last(g, V), Vti = inv(g, Vt);
    if (values) return acc(A, f->extra[0], mm(g, Vti, MUL(unsqueeze(g, c, -1), Vt)));
    npy_intp ws[ND_MAXDIMS];
    memcpy(ws, a.shape, sizeof(ws));
    nd_id w = sibling(g, f, F_eig, tmpl, 0, L, a.ndim - 1, ws);
    nd_id K = mm(g, Vt, c);
    uint64_t rows = 1ULL << (NODE(g, K)->ndim - 2);
    nd_id dK = red(g, ND_UF_ADD, where(g, eye_mask(g, n, 0), K, S(0), L), rows, 0, L);
    nd_id re = cast(g, real_part(g, dK), L);
    nd_id P = MUL(mm(g, Vt, U1(ND_UF_CONJUGATE, V)), unsqueeze(g, re, -2));
    nd_id inner = MUL(SUB(K, P), gap_inverse(g, w, n, L));
    return acc(A, f->extra[0], mm(g, Vti, mm(g, inner, Vt)));
}

/* A = U S Vh. The real rules below are torch's (adjoint convention: X^H
 * where they transpose); a complex A runs them on conj(c) and conjugates
 * the result (autodiff.h's transpose convention), with the gauge terms
 * of svd_phase; losses must be invariant to U, V -> U e^{i phi}, V e^{i phi} */
static int rule_svd(ad_t *A, nd_id i, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    nd_node a = *NODE(g, f->extra[0]);
    int cx = iscplx(a.dtype);
    int Ls = f->aux == 1 || f->aux < 0 ? f->dtype : real_of(f->dtype);
    int L = cx ? cplx_of(Ls) : Ls;
    int nd = a.ndim;
    npy_intp M = a.shape[nd - 2], N = a.shape[nd - 1], K = M < N ? M : N;
    PyObject *tmpl = PyTuple_GET_ITEM(f->attrs, 0);
    if (PyTuple_GET_SIZE(tmpl) < 4) return not_impl("linalg.svd", "this form");
    int full = PyObject_IsTrue(PyTuple_GET_ITEM(tmpl, 1));
    int herm = PyObject_IsTrue(PyTuple_GET_ITEM(tmpl, 3));
    if (full < 0 || herm < 0) return -1;
    int uv = f->aux >= 0;
    /* full_matrices=True of a non-square matrix: U's columns / Vh's rows past
     * min(M, N) are any basis of a complement, so their cotangent is ignored
     * (torch's convention): the gradient of the reduced factors */
    int narrow = uv && full && M != N;
    /* the reduced U, s, Vh of the same matrix */
    PyObject *rt = PyTuple_Pack(4, PyTuple_GET_ITEM(tmpl, 0), Py_False, Py_True,
                                herm ? Py_True : Py_False);
    if (!rt) return -1;
    npy_intp su[ND_MAXDIMS], ss[ND_MAXDIMS], sv[ND_MAXDIMS];
    memcpy(su, a.shape, sizeof(su)); memcpy(ss, a.shape, sizeof(ss)); memcpy(sv, a.shape, sizeof(sv));
    su[nd - 1] = K; ss[nd - 2] = K; sv[nd - 2] = K;
    PyObject *use = uv && !narrow ? tmpl : rt;  /* this very call's siblings when they fit */
    nd_id U = f->aux == 0 && !narrow ? i : sibling(g, f, F_svd, use, 0, L, nd, su);
    nd_id s = f->aux == 1 ? i : sibling(g, f, F_svd, use, 1, Ls, nd - 1, ss);
    nd_id Vh = f->aux == 2 && !narrow ? i : sibling(g, f, F_svd, use, 2, L, nd, sv);
    Py_DECREF(rt);
    if (BAD(U) || BAD(s) || BAD(Vh)) return -1;
    if (narrow && f->aux == 0 && M > N) c = block(g, c, 0, M, 0, K);
    if (narrow && f->aux == 2 && N > M) c = block(g, c, 0, K, 0, N);
    nd_id s_col = unsqueeze(g, s, -2), s_row = unsqueeze(g, s, -1);  /* s_j, s_i */
    nd_id gA;
    if (!uv || f->aux == 1) {
        gA = mm(g, MUL(U, unsqueeze(g, c, -2)), Vh);
    } else {
        nd_id sq = uf(g, ND_UF_SQUARE, s, ND_NONE, Ls);
        nd_id F = gap_inverse(g, sq, K, Ls);  /* 1 / (s_j^2 - s_i^2) */
        if (f->aux == 0) {
            /* U [(F o (U^H Ub - Ub^H U)) S] Vh + (I - U U^H) Ub S^-1 Vh, Ub = conj(c) */
            nd_id Ub = cj(g, c);
            nd_id UhUb = mm(g, ctr(g, U), Ub);
            nd_id inner = MUL(MUL(F, SUB(UhUb, ctr(g, UhUb))), s_col);
            if (cx) inner = ADD(inner, svd_phase(g, UhUb, s, K, L));
            nd_id cs = DIV(Ub, s_col);
            nd_id outer = SUB(cs, mm(g, U, mm(g, ctr(g, U), cs)));
            gA = mm(g, ADD(mm(g, U, inner), outer), Vh);
        } else {
            /* c is Vh's cotangent, V = Vh^H, V-bar = c^T:
             * U [S (F o (V^H V-bar - V-bar^H V))] Vh + U S^-1 V-bar^H (I - V V^H) */
            nd_id V = ctr(g, Vh);
            nd_id X = mm(g, Vh, swap_last(g, c));  /* V^H V-bar */
            nd_id inner = MUL(s_row, MUL(F, SUB(X, ctr(g, X))));
            if (cx) inner = SUB(inner, svd_phase(g, X, s, K, L));
            nd_id cs = DIV(cj(g, c), s_row);
            nd_id outer = SUB(cs, mm(g, mm(g, cs, V), Vh));
            gA = mm(g, U, ADD(mm(g, inner, Vh), outer));
        }
    }
    gA = cj(g, gA);
    if (herm) gA = sym(g, gA, L);
    return acc(A, f->extra[0], gA);
}

static int rule_qr(ad_t *A, nd_id i, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    int L = f->dtype;
    nd_node a = *NODE(g, f->extra[0]);
    int nd = a.ndim;
    npy_intp M = a.shape[nd - 2], N = a.shape[nd - 1];
    PyObject *tmpl = PyTuple_GET_ITEM(f->attrs, 0);
    const char *mode = PyTuple_GET_SIZE(tmpl) > 1 && PyUnicode_Check(PyTuple_GET_ITEM(tmpl, 1))
                       ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(tmpl, 1)) : "reduced";
    if (!mode) return -1;
    if (strcmp(mode, "reduced") != 0 && strcmp(mode, "r") != 0 &&
        !(strcmp(mode, "complete") == 0 && M <= N))
        return not_impl("linalg.qr", "this mode (reduced, r, or complete of a square matrix)");
    PyObject *mo = PyUnicode_FromString("reduced");
    PyObject *rt = mo ? PyTuple_Pack(2, PyTuple_GET_ITEM(tmpl, 0), mo) : NULL;
    Py_XDECREF(mo);
    if (!rt) return -1;
    npy_intp K = M < N ? M : N;
    npy_intp sq[ND_MAXDIMS], sr[ND_MAXDIMS];
    memcpy(sq, a.shape, sizeof(sq)); memcpy(sr, a.shape, sizeof(sr));
    sq[nd - 1] = K; sr[nd - 2] = K;
    int is_r = f->aux < 0 || f->aux == 1;
    PyObject *use = f->aux >= 0 ? tmpl : rt;
    nd_id Q = f->aux == 0 ? i : sibling(g, f, F_qr, use, 0, L, nd, sq);
    nd_id R = is_r ? i : sibling(g, f, F_qr, use, 1, L, nd, sr);
    Py_DECREF(rt);
    if (BAD(Q) || BAD(R)) return -1;
    /* (adjoint convention, X^H where the real rule transposes: a complex A
     * runs it on conj(c) and conjugates the result, autodiff.h)
     * A wide A = Q [R1 R2] (M < N): its first M columns X = Q R1 are a
     * square QR, and R2 = Q^H Y of the others: Y-bar = Q R2-bar, and R2
     * adds Y R2-bar^H to Q-bar. Then for X (square or tall), Q^H dQ
     * skew-Hermitian and R's diagonal real (LAPACK's):
     * gX = (Q-bar + Q Nn) R1^-H, Nn = tril(Mm - Mm^H, -1) + i Im diag(Mm) - Mm,
     * Mm = Q^H Q-bar - R1-bar R1^H. */
    int cx = iscplx(L);
    c = cj(g, c);
    nd_id R1 = M < N ? block(g, R, 0, M, 0, M) : R;
    nd_id Qb = is_r ? ND_NONE : c, R1b = ND_NONE, gY = ND_NONE;
    if (is_r) R1b = M < N ? block(g, c, 0, M, 0, M) : c;
    if (is_r && M < N) {
        nd_id R2b = block(g, c, 0, M, M, N);
        gY = mm(g, Q, R2b);
        Qb = mm(g, block(g, f->extra[0], 0, M, M, N), ctr(g, R2b));
    }
    nd_id Mm = ND_NONE;
    if (Qb != ND_NONE) Mm = mm(g, ctr(g, Q), Qb);
    if (R1b != ND_NONE) {
        nd_id t = NEG(mm(g, R1b, ctr(g, R1)));
        Mm = Mm == ND_NONE ? t : ADD(Mm, t);
    }
    nd_id low = eye_mask(g, K, 1);
    nd_id Nn = SUB(where(g, low, SUB(Mm, ctr(g, Mm)), S(0), L), Mm);
    if (cx) Nn = ADD(Nn, where(g, eye_mask(g, K, 0), MUL(SUB(Mm, cj(g, Mm)), S(0.5)), S(0), L));
    nd_id Y = mm(g, Q, Nn);
    if (Qb != ND_NONE) Y = ADD(Qb, Y);
    if (BAD(Y)) return -1;
    /* Y R^-H = solve(R, Y^H)^H */
    nd_node *yn = NODE(g, Y);
    npy_intp ys[ND_MAXDIMS];
    int ynd = yn->ndim;
    memcpy(ys, yn->shape, sizeof(ys));
    npy_intp tmp = ys[ynd - 1]; ys[ynd - 1] = ys[ynd - 2]; ys[ynd - 2] = tmp;
    nd_id ids[2] = {R1, ctr(g, Y)};
    nd_id X = ext(g, F_solve, tmpl_of(2, 0, NULL), 2, ids, L, ynd, ys);
    /* conj(X^H) = X^T: back to the transpose convention */
    if (M >= N) return acc(A, f->extra[0], swap_last(g, X));
    nd_id z = nd_autodiff_zeros(g, L, a.ndim, a.shape);
    nd_id gA = put_cols(g, z, swap_last(g, X), 0);
    if (gY != ND_NONE) gA = put_cols(g, gA, cj(g, gY), M);
    return acc(A, f->extra[0], gA);
}

static int is_cfunc(PyObject *o, const char *name)
{
    return PyCFunction_Check(o) && strcmp(((PyCFunctionObject *)o)->m_ml->ml_name, name) == 0;
}

static int kw_given(const nd_node *f)
{
    return PyTuple_GET_ITEM(f->attrs, 1) != Py_None;
}

/* numpy.fft's normalization of the transform whose scale is the reciprocal */
static PyObject *swap_norm(PyObject *norm)
{
    const char *s = norm && PyUnicode_Check(norm) ? PyUnicode_AsUTF8(norm) : "backward";
    if (!s) return NULL;
    return PyUnicode_FromString(strcmp(s, "forward") == 0 ? "backward"
                                : strcmp(s, "ortho") == 0 ? "ortho" : "forward");
}

/* numpy.fft (F_fft[k]; the shim's template (x, n|s, axis|axes, norm)).
 * Every DFT matrix is symmetric, so under the transpose convention the
 * VJP of a complex transform is the same transform of the cotangent; of
 * rfft, the real part of fft of the cotangent zero-padded to the input's
 * length (taken as an irfft, below); of irfft, conj(rfft(c) * w) with the reciprocal normalization
 * and w = 1 at bin 0 and the Nyquist bin, 2 elsewhere (JAX's rules). */
static int rule_fft(ad_t *A, const nd_node *f, nd_id c, int k)
{
    nd_graph *g = A->g;
    nd_id xi = f->extra[0];
    if (!A->dep[xi]) return 0;
    PyObject *tm = PyTuple_GET_ITEM(f->attrs, 0);
    if (f->nextra != 1 || kw_given(f) || !PyTuple_Check(tm) || PyTuple_GET_SIZE(tm) != 4)
        return not_impl("numpy.fft", "this call form");
    /* hfft(a) = irfft(conj(a)) and ihfft(x) = conj(rfft(x)), each with the
     * reciprocal normalization (NumPy's definitions) */
    int kind = k < 6 ? FFT_C2C : k < 9 || k == 13 ? FFT_R2C : FFT_C2R;
    int one = k == 0 || k == 1 || k == 6 || k == 9 || k >= 12, L = f->dtype;
    PyObject *len = PyTuple_GET_ITEM(tm, 1), *axo = PyTuple_GET_ITEM(tm, 2);
    PyObject *norm = PyTuple_GET_ITEM(tm, 3);
    nd_node x = *NODE(g, xi);
    int axes[ND_MAXDIMS], nax = 1;
    npy_intp s[ND_MAXDIMS];
    if (one) {
        axes[0] = (int)PyLong_AsLong(axo);
        s[0] = PyLong_AsSsize_t(len);
    } else {
        if (!PyTuple_Check(axo) || !PyTuple_Check(len) || PyTuple_GET_SIZE(axo) != PyTuple_GET_SIZE(len) ||
            PyTuple_GET_SIZE(axo) > ND_MAXDIMS || PyTuple_GET_SIZE(axo) < 1)
            return not_impl("numpy.fft", "this call form");
        nax = (int)PyTuple_GET_SIZE(axo);
        for (int j = 0; j < nax; j++) {
            axes[j] = (int)PyLong_AsLong(PyTuple_GET_ITEM(axo, j));
            s[j] = PyLong_AsSsize_t(PyTuple_GET_ITEM(len, j));
        }
    }
    if (PyErr_Occurred()) return -1;
    /* n/s resize the transformed axes first (crop, or pad with zeros; of
     * a c2r transform the last to s//2 + 1): the transform's VJP is taken
     * at the resized shape rs, then resized back (the transpose of a crop
     * pads with zeros, of a padding crops) */
    npy_intp rs[ND_MAXDIMS];
    memcpy(rs, x.shape, sizeof(npy_intp) * (size_t)x.ndim);
    int resized = 0;
    for (int j = 0; j < nax; j++) {
        if (axes[j] < 0 || axes[j] >= x.ndim || s[j] < 1) return not_impl("numpy.fft", "this call form");
        rs[axes[j]] = kind == FFT_C2R && j == nax - 1 ? s[j] / 2 + 1 : s[j];
        resized |= rs[axes[j]] != x.shape[axes[j]];
    }
    PyObject *hnorm = NULL;
    if (k >= 12) {
        if (!(hnorm = swap_norm(norm))) return -1;
        norm = hnorm;
        if (k == 13) c = uf(g, ND_UF_CONJUGATE, c, ND_NONE, L);
    }
    PyObject *extra[3] = {len, axo, norm};
    nd_id gx;
    if (kind == FFT_C2C) {
        gx = ext(g, f->obj, tmpl_of(1, 3, extra), 1, &c, L, x.ndim, rs);
    } else if (kind == FFT_R2C && !iscplx(x.dtype)) {
        /* Re(fft(c zero-padded to n)) is the real inverse transform of
         * conj(c) w with the reciprocal normalization, w = 1 at bin 0 and
         * the Nyquist bin, 1/2 elsewhere (irfft doubles those): half the
         * work of the complex transform, and a real result */
        PyObject *sw = swap_norm(norm);
        if (!sw) { Py_XDECREF(hnorm); return -1; }
        extra[2] = sw;
        int ax = axes[nax - 1], R = L == NPY_CFLOAT ? NPY_FLOAT
                                  : L == NPY_CLONGDOUBLE ? NPY_LONGDOUBLE : NPY_DOUBLE;
        /* w as a row of the bins (two one-element stores into halves),
         * read per element as a broadcast view: no index test per element
         * in the kernel that makes z */
        npy_intp K = f->shape[ax], one_ = 1, unit = 1, zero_ = 0;
        nd_id w = setitem(g, view(g, sc(g, 0.5, R), 1, &K, 0, &zero_), sc(g, 1, R), 0, 1, &one_, &unit);
        if (rs[ax] % 2 == 0 && K > 1) w = setitem(g, w, sc(g, 1, R), K - 1, 1, &one_, &unit);
        npy_intp wst[ND_MAXDIMS] = {0};
        wst[ax] = 1;
        nd_id z = uf(g, ND_UF_MULTIPLY, uf(g, ND_UF_CONJUGATE, c, ND_NONE, L),
                     view(g, w, f->ndim, f->shape, 0, wst), L);
        gx = ext(g, one ? F_fft[9] : F_fft[11], tmpl_of(1, 3, extra), 1, &z, R, x.ndim, rs);
        Py_DECREF(sw);
    } else if (kind == FFT_R2C) {  /* acc takes the real part */
        gx = ext(g, one ? F_fft[0] : F_fft[4], tmpl_of(1, 3, extra), 1, &c, L, x.ndim, rs);
    } else {
        PyObject *sw = swap_norm(norm);
        if (!sw) { Py_XDECREF(hnorm); return -1; }
        extra[2] = sw;
        int Lc = iscplx(x.dtype) ? x.dtype : x.dtype == NPY_FLOAT ? NPY_CFLOAT : NPY_CDOUBLE;
        int ax = axes[nax - 1];
        npy_intp m = rs[ax], nyq = s[nax - 1] % 2 == 0 ? m - 1 : -1;
        nd_id r = ext(g, one ? F_fft[6] : F_fft[8], tmpl_of(1, 3, extra), 1, &c, Lc, x.ndim, rs);
        Py_DECREF(sw);
        nd_id idx = index_node(g, x.ndim, rs, ax);
        int R = Lc == NPY_CFLOAT ? NPY_FLOAT : NPY_DOUBLE;
        nd_id edge = uf(g, ND_UF_LOGICAL_OR, uf(g, ND_UF_EQUAL, idx, sc(g, 0, NPY_INT64), NPY_INT64),
                        uf(g, ND_UF_EQUAL, idx, sc(g, (double)nyq, NPY_INT64), NPY_INT64), NPY_BOOL);
        nd_id w = where(g, edge, sc(g, 1, R), sc(g, 2, R), R);
        gx = uf(g, ND_UF_MULTIPLY, r, w, Lc);
        if (k != 12) gx = uf(g, ND_UF_CONJUGATE, gx, ND_NONE, Lc);  /* hfft's conj cancels it */
    }
    Py_XDECREF(hnorm);
    if (resized && !BAD(gx)) {
        npy_intp common[ND_MAXDIMS], st[ND_MAXDIMS], xst[ND_MAXDIMS];
        int padded = 0;  /* some axis of x longer than its transformed length */
        for (int d = 0; d < x.ndim; d++) {
            common[d] = rs[d] < x.shape[d] ? rs[d] : x.shape[d];
            padded |= rs[d] < x.shape[d];
        }
        nd_c_strides(x.ndim, rs, st);
        gx = view(g, gx, x.ndim, common, 0, st);  /* the part x's own elements made */
        if (padded) {
            nd_c_strides(x.ndim, x.shape, xst);
            gx = setitem(g, nd_autodiff_zeros(g, NODE(g, gx)->dtype, x.ndim, x.shape), gx, 0,
                         x.ndim, common, xst);
        }
    }
    return acc(A, xi, gx);
}

/* median / quantile / percentile (the shim's templates: (x, axis, out,
 * overwrite_input, keepdims) and (x, q, axis, out, overwrite_input,
 * method, keepdims)): the cotangent goes to the order statistics each
 * output interpolates, by NumPy's weights (autodiff_kernels.h) */
static int rule_quantile(ad_t *A, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    nd_id xi = f->extra[0];
    if (!A->dep[xi]) return 0;
    PyObject *tm = PyTuple_GET_ITEM(f->attrs, 0);
    int med = f->obj == F_median;
    if (f->nextra != 1 || kw_given(f) || !PyTuple_Check(tm) || PyTuple_GET_SIZE(tm) != (med ? 5 : 7))
        return not_impl(med ? "numpy.median" : "numpy.quantile", "this call form");
    PyObject *q, *axis = PyTuple_GET_ITEM(tm, med ? 1 : 2), *meth;
    if (med) {
        q = PyFloat_FromDouble(0.5);
        meth = PyUnicode_FromString("linear");
    } else {
        q = PyArray_FROMANY(PyTuple_GET_ITEM(tm, 1), NPY_DOUBLE, 0, 0, NPY_ARRAY_CARRAY);
        if (q && f->obj == F_percentile) {  /* NumPy's percentile: quantile(q / 100) */
            PyObject *h = PyFloat_FromDouble(100.0);
            Py_SETREF(q, h ? PyNumber_TrueDivide(q, h) : NULL);
            Py_XDECREF(h);
        }
        meth = Py_NewRef(PyTuple_GET_ITEM(tm, 5));
    }
    nd_id r = ND_NONE;
    const char *ms = meth && PyUnicode_Check(meth) ? PyUnicode_AsUTF8(meth) : NULL;
    if (q && ms && !nd_ad_quantile_method_known(ms)) {
        not_impl("numpy.quantile with method", ms);
    } else if (q && ms) {
        nd_node x = *NODE(g, xi);
        PyObject *extra[3] = {q, axis, meth};
        nd_id ids[2] = {xi, c};
        r = ext(g, nd_ad_quantile_vjp, tmpl_of(2, 3, extra), 2, ids, NPY_DOUBLE, x.ndim, x.shape);
    } else if (!PyErr_Occurred()) {
        not_impl("numpy.quantile", "this method");
    }
    Py_XDECREF(q);
    Py_XDECREF(meth);
    if (BAD(r)) return -1;
    return acc(A, xi, r);
}

/* convolve / correlate of 1-d a (n) and v (m), template (a, v, mode).
 * Every mode's output is a window of the full one (length n + m - 1), and
 * correlate(a, v) = convolve(a, v[::-1]) but for its 'same' window when
 * n < m (NumPy reverses the swapped operands' result). Of the full
 * convolution y = a * w: a's cotangent is correlate(C, w, 'valid'), w's
 * correlate(C, a, 'valid'), C the cotangent zero-padded to full length. */
static int rule_conv(ad_t *A, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    PyObject *tm = PyTuple_GET_ITEM(f->attrs, 0);
    if (f->nextra != 2 || kw_given(f) || !PyTuple_Check(tm) || PyTuple_GET_SIZE(tm) != 3 ||
        !PyUnicode_Check(PyTuple_GET_ITEM(tm, 2)))
        return not_impl("numpy.convolve", "this call form");
    int corr = f->obj == F_correlate, L = f->dtype;
    nd_id a = f->extra[0], v = f->extra[1];
    npy_intp n = NODE(g, a)->shape[0], m = NODE(g, v)->shape[0], full = n + m - 1;
    npy_intp len = f->shape[0], lo = n < m ? n : m, st;
    const char *mode = PyUnicode_AsUTF8(PyTuple_GET_ITEM(tm, 2));
    if (!mode) return -1;
    if (strcmp(mode, "full") == 0) st = 0;
    else if (strcmp(mode, "same") == 0) st = (lo - 1) / 2;
    else st = lo - 1;
    if (corr && n < m) st = full - len - st;
    nd_id C = c;
    if (len != full) {
        npy_intp one = 1, zl = full;
        C = setitem(g, nd_autodiff_zeros(g, L, 1, &zl), c, st, 1, &len, &one);
    }
    nd_id w = corr ? flip(g, v, 0) : v;
    PyObject *valid = PyUnicode_FromString("valid");
    if (!valid) return -1;
    int rc = 0;
    if (A->dep[a]) {
        nd_id ids[2] = {C, w};
        rc = acc(A, a, ext(g, F_correlate, tmpl_of(2, 1, &valid), 2, ids, L, 1, &n));
    }
    if (rc == 0 && A->dep[v]) {
        nd_id ids[2] = {C, a};
        nd_id gw = ext(g, F_correlate, tmpl_of(2, 1, &valid), 2, ids, L, 1, &m);
        rc = acc(A, v, corr ? flip(g, gw, 0) : gw);
    }
    Py_DECREF(valid);
    return rc;
}

/* interp(x, xp, fp, left, right, period): x's and fp's cotangents by
 * interp_vjp (autodiff_kernels.h); xp's and a periodic call's refused */
static int rule_interp(ad_t *A, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    PyObject *tm = PyTuple_GET_ITEM(f->attrs, 0);
    if (f->nextra != 3 || kw_given(f) || !PyTuple_Check(tm) || PyTuple_GET_SIZE(tm) != 6)
        return not_impl("numpy.interp", "this call form");
    if (PyTuple_GET_ITEM(tm, 5) != Py_None) return not_impl("numpy.interp", "with period");
    nd_id x = f->extra[0], xp = f->extra[1], fp = f->extra[2];
    if (A->dep[xp]) return not_impl("numpy.interp", "gradients for xp");
    nd_id ids[4] = {x, xp, fp, c};
    for (int which = 0; which < 2; which++) {
        nd_id to = which ? fp : x;
        if (!A->dep[to]) continue;
        PyObject *k[3] = {PyLong_FromLong(which), PyBool_FromLong(PyTuple_GET_ITEM(tm, 3) == Py_None),
                          PyBool_FromLong(PyTuple_GET_ITEM(tm, 4) == Py_None)};
        nd_id r = ND_NONE;
        if (k[0]) {
            nd_node t = *NODE(g, to);
            r = ext(g, nd_ad_interp_vjp, tmpl_of(4, 3, k), 4, ids, NPY_DOUBLE, t.ndim, t.shape);
        }
        for (int q = 0; q < 3; q++) Py_XDECREF(k[q]);
        if (BAD(r) || acc(A, to, r) < 0) return -1;
    }
    return 0;
}

/* pinv: P = A+, of a full-rank A (M x N):
 * -P^T C P^T + (I - A P) C^T P P^T + P^T P C^T (I - P A) */
static int rule_pinv(ad_t *A, nd_id i, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    int L = f->dtype;
    nd_id a = f->extra[0];
    if (f->nextra != 1) return not_impl("linalg.pinv", "this call form");
    nd_node an = *NODE(g, a);
    npy_intp M = an.shape[an.ndim - 2], N = an.shape[an.ndim - 1];
    nd_id P = i, Pt = swap_last(g, i), Ct = swap_last(g, c);
    nd_id IM = cast(g, eye_mask(g, M, 0), L), IN = cast(g, eye_mask(g, N, 0), L);
    nd_id t1 = NEG(mm(g, mm(g, Pt, c), Pt));
    nd_id t2 = mm(g, SUB(IM, mm(g, a, P)), mm(g, Ct, mm(g, P, Pt)));
    nd_id t3 = mm(g, mm(g, mm(g, Pt, P), Ct), SUB(IN, mm(g, P, a)));
    return acc(A, a, ADD(ADD(t1, t2), t3));
}

/* lstsq(A, b): x = P b, P = pinv(A) with lstsq's own cutoff (singular
 * values at or below rcond s_max are zero: rcond = eps max(M, N) for None,
 * eps for a negative one, NumPy's double-precision eps and computation),
 * so x is the minimum-norm solution at any rank, and its gradient the
 * pseudo-inverse's (torch's linalg_lstsq_backward; the rank must not
 * change nearby). Adjoint convention (a complex call runs on conj(c), its
 * result conjugated, autodiff.h), xb the cotangent of x, r = b - A x,
 * w = P^H xb:
 *   b-bar = w,  A-bar = -w x^H + r (P w)^H + P^H x (xb - P A xb)^H
 * (at full rank the second term vanishes unless M > N, the third unless
 * M < N); residuals (full rank, M > N) res_k = |r_k|^2 with A^H r = 0:
 * b-bar = 2 r c, A-bar = -2 r c x^H. */
static int rule_lstsq(ad_t *A, nd_id i, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    if (kw_given(f) || f->nextra != 2) return not_impl("linalg.lstsq", "this call form");
    if (f->aux == 3)
        return not_impl("linalg.lstsq", "its singular values s (take np.linalg.svd(a, compute_uv=False))");
    if (f->aux == 1 && f->shape[0] == 0) return 0;  /* empty residuals: nothing flows */
    nd_id a = f->extra[0], b = f->extra[1];
    nd_node an = *NODE(g, a), bn = *NODE(g, b);
    int cx = iscplx(an.dtype) || iscplx(bn.dtype);
    int Lx = f->aux == 0 ? f->dtype : cx ? cplx_of(f->dtype) : f->dtype, L = Lx;
    npy_intp M = an.shape[0], N = an.shape[1], K = bn.ndim == 2 ? bn.shape[1] : 1;
    PyObject *tmpl = PyTuple_GET_ITEM(f->attrs, 0);
    npy_intp sx[2] = {N, K}, sm[2] = {M, K}, sn[2] = {N, K};
    nd_id x = f->aux == 0 ? i : sibling(g, f, F_lstsq, tmpl, 0, Lx, bn.ndim, sx);
    nd_id xm = reshape(g, x, 2, sx), bm = reshape(g, b, 2, sm);
    nd_id r = SUB(bm, mm(g, a, xm));
    nd_id gA, gb;
    if (f->aux == 1) {
        nd_id cr = unsqueeze(g, c, -2);  /* (1, K) */
        nd_id rc = MUL(MUL(cj(g, r), cr), S(2));
        gb = rc;
        gA = NEG(mm(g, rc, swap_last(g, xm)));
    } else {
        PyObject *rco = PyTuple_GET_SIZE(tmpl) > 2 ? PyTuple_GET_ITEM(tmpl, 2) : Py_None;
        double rcond = rco == Py_None ? -2 : PyFloat_AsDouble(rco);
        if (rcond == -1 && PyErr_Occurred()) return -1;
        rcond = rco == Py_None ? DBL_EPSILON * (double)(M > N ? M : N)
                : rcond < 0 ? DBL_EPSILON : rcond;
        PyObject *k = PyFloat_FromDouble(rcond);
        if (!k) return -1;
        int Ld = cx ? NPY_CDOUBLE : NPY_DOUBLE;
        nd_id ad = cast(g, a, Ld);
        nd_id P = cast(g, ext(g, F_pinv, tmpl_of(1, 1, &k), 1, &ad, Ld, 2, (npy_intp[]){N, M}), L);
        Py_DECREF(k);
        nd_id xb = cj(g, reshape(g, c, 2, sn));
        nd_id w = mm(g, ctr(g, P), xb);
        gb = cj(g, w);
        gA = ADD(ADD(NEG(mm(g, w, ctr(g, xm))), mm(g, r, ctr(g, mm(g, P, w)))),
                 mm(g, mm(g, ctr(g, P), xm), ctr(g, SUB(xb, mm(g, P, mm(g, a, xb))))));
        gA = cj(g, gA);
    }
    if (PyErr_Occurred() || BAD(gA) || BAD(gb)) return -1;
    if (A->dep[a] && acc(A, a, gA) < 0) return -1;
    if (A->dep[b] && acc(A, b, reshape(g, gb, bn.ndim, bn.shape)) < 0) return -1;
    return 0;
}

static int rule_extern(ad_t *A, nd_id i, const nd_node *f, nd_id c)
{
    nd_graph *g = A->g;
    PyObject *fn = f->obj;
    int L = f->dtype;
    nd_id a = f->nextra > 0 ? f->extra[0] : ND_NONE, b = f->nextra > 1 ? f->extra[1] : ND_NONE;
    for (int k = 0; k < ND_NFFT; k++)
        if (fn == F_fft[k]) return rule_fft(A, f, c, k);
    if (fn == F_eig || fn == F_eigvals) {
        if (kw_given(f)) return not_impl("linalg.eig", "with keyword arguments");
        return rule_eig(A, i, f, c);
    }
    int cx = iscplx(L);
    for (int k = 0; k < f->nextra && !cx; k++)
        cx = f->extra[k] >= 0 && A->dep[f->extra[k]] && iscplx(NODE(g, f->extra[k])->dtype);
    if (cx && fn != F_matmul && fn != F_dot && fn != F_einsum && fn != F_tensordot && fn != F_inv &&
        fn != F_det && fn != F_solve && fn != F_slogdet && fn != F_eigh && fn != F_eigvalsh &&
        fn != F_svd && fn != F_qr && fn != F_lstsq && fn != F_cholesky && fn != F_sort &&
        fn != F_partition) {
        /* the decompositions' rules take conjugates this sweep does not: refused */
        PyObject *nm = PyObject_GetAttrString(fn, "__name__");
        const char *s = nm && PyUnicode_Check(nm) ? PyUnicode_AsUTF8(nm) : NULL;
        PyErr_Clear();
        not_impl("complex values in", s ? s : "a NumPy function");
        Py_XDECREF(nm);
        return -1;
    }
    if (fn == F_matmul || (fn == F_dot && f->nextra == 2 && NODE(g, a)->ndim <= 2 &&
                           NODE(g, b)->ndim <= 2 && NODE(g, a)->ndim >= 1 && NODE(g, b)->ndim >= 1)) {
        if (f->nextra != 2 || kw_given(f)) return not_impl("matmul", "with keyword arguments");
        return rule_matmul(A, a, b, L, c);
    }
    if (fn == F_einsum) return rule_einsum(A, f, c);
    if (fn == F_median || fn == F_quantile || fn == F_percentile) return rule_quantile(A, f, c);
    if (fn == F_convolve || fn == F_correlate) return rule_conv(A, f, c);
    if (fn == F_pinv) return rule_pinv(A, i, f, c);
    if (fn == F_lstsq) return rule_lstsq(A, i, f, c);
    if (fn == F_interp) return rule_interp(A, f, c);
    if (fn == F_inner) return rule_inner(A, f, c);
    if (fn == F_multi_dot) return rule_multi_dot(A, f, c);
    if (fn == F_matrix_power) return rule_matrix_power(A, f, c);
    if (fn == F_tensordot) return rule_tensordot(A, f, c);
    if (fn == F_inv) {  /* -Y^T c Y^T */
        nd_id yt = swap_last(g, i);
        return acc(A, a, NEG(mm(g, mm(g, yt, c), yt)));
    }
    if (fn == F_det)
        return acc(A, a, MUL(unsqueeze(g, unsqueeze(g, MUL(c, i), -1), -1), swap_last(g, inv(g, a))));
    if (fn == F_slogdet) {
        /* log|det a|: c a^-T, complex a too (JAX's transpose of Re(tr(a^-1 da))).
         * A real sign is constant almost everywhere: no gradient. A complex
         * one is the determinant's phase s, ds = s i Im(tr(a^-1 da)) (JAX's
         * slogdet JVP), whose transpose is i Im(c s) a^-T */
        if (f->aux == 0 && !cx) return 0;
        int La = NODE(g, a)->dtype;  /* complex a: the product in a's dtype */
        nd_id k = c;
        if (f->aux == 0) {
            nd_id cs = uf(g, ND_UF_MULTIPLY, c, i, La);
            nd_id im = real_part(g, uf(g, ND_UF_MULTIPLY, cs, scc(g, 0, -1, La), La));
            k = uf(g, ND_UF_MULTIPLY, cast(g, im, La), scc(g, 0, 1, La), La);
        }
        return acc(A, a, uf(g, ND_UF_MULTIPLY, cast(g, unsqueeze(g, unsqueeze(g, k, -1), -1), La),
                            swap_last(g, inv(g, a)), La));
    }
    if (fn == F_solve) {
        int vec = NODE(g, b)->ndim == 1;
        nd_id cm = vec ? unsqueeze(g, c, -1) : c, xm = vec ? unsqueeze(g, i, -1) : i;
        nd_node *cn = BAD(cm) ? NULL : NODE(g, cm);
        if (!cn) return -1;
        int nd = cn->ndim;
        npy_intp sh[ND_MAXDIMS];
        memcpy(sh, cn->shape, sizeof(npy_intp) * (size_t)nd);
        nd_id ids[2] = {swap_last(g, a), cm};
        nd_id gbm = ext(g, F_solve, tmpl_of(2, 0, NULL), 2, ids, L, nd, sh);
        if (A->dep[a] && acc(A, a, NEG(mm(g, gbm, swap_last(g, xm)))) < 0) return -1;
        if (A->dep[b]) {
            nd_id gb = vec ? reshape(g, gbm, NODE(g, i)->ndim, NODE(g, i)->shape) : gbm;
            if (acc(A, b, gb) < 0) return -1;
        }
        return PyErr_Occurred() ? -1 : 0;
    }
    if (fn == F_eigh || fn == F_eigvalsh) {
        if (kw_given(f)) return not_impl("linalg.eigh", "with keyword arguments");
        return rule_eigh(A, i, f, c);
    }
    if (fn == F_svd) {
        if (kw_given(f)) return not_impl("linalg.svd", "with keyword arguments");
        return rule_svd(A, i, f, c);
    }
    if (fn == F_qr) {
        if (kw_given(f)) return not_impl("linalg.qr", "with keyword arguments");
        return rule_qr(A, i, f, c);
    }
    if (fn == F_cholesky) {
        /* torch's rule (adjoint convention: on conj(c), the result
         * conjugated; autodiff.h), T = tril(L^H gL):
         *   gA = L^-H (T + tril(T, -1)^H) / 2 L^-1
         * of a real matrix the symmetric gradient (JAX's) */
        if (kw_given(f)) return not_impl("cholesky", "upper=True");
        nd_node *ln = NODE(g, i);
        int nd = ln->ndim;
        npy_intp sq[2] = {ln->shape[nd - 2], ln->shape[nd - 1]};
        nd_id r = index_node(g, 2, sq, 0), q = index_node(g, 2, sq, 1);
        nd_id T = where(g, uf(g, ND_UF_GREATER_EQUAL, r, q, NPY_INT64),
                        mm(g, ctr(g, i), cj(g, c)), S(0), L);
        nd_id Phi = MUL(ADD(T, ctr(g, where(g, eye_mask(g, sq[0], 1), T, S(0), L))), S(0.5));
        nd_id Linv = inv(g, i);
        return acc(A, a, cj(g, mm(g, mm(g, ctr(g, Linv), Phi), Linv)));
    }
    if (fn == F_sort || fn == F_partition) {
        /* values move: a's element k goes to the output position j(k) and
         * takes its cotangent, g_a = c[j]. Stable argsorts of a (pa) and
         * of the output (po) list the same values in the same order, so
         * j = po[argsort(pa)] (for sort po is the identity): partition's
         * own arrangement, whatever selection algorithm NumPy ran; tied
         * values share the order of the stable sort (a complex array's
         * order is NumPy's lexicographic one) */
        PyObject *tmpl = PyTuple_GET_ITEM(f->attrs, 0);
        int ai = fn == F_sort ? 1 : 2;
        PyObject *ax = PyTuple_GET_SIZE(tmpl) > ai ? PyTuple_GET_ITEM(tmpl, ai) : Py_None;
        const char *nm = fn == F_sort ? "sort" : "partition";
        if (!PyLong_Check(ax)) return not_impl(nm, "axis=None");
        nd_node x = *NODE(g, a);
        long axis = PyLong_AsLong(ax);
        if (axis < 0) axis += x.ndim;
        if (axis < 0 || axis >= x.ndim) return not_impl(nm, "this axis");
        PyObject *extra[2] = {ax, NULL};
        extra[1] = PyUnicode_FromString("stable");
        if (!extra[1]) return -1;
        nd_id perm = ext(g, F_argsort, tmpl_of(1, 2, extra), 1, &a, NPY_INT64, x.ndim, x.shape);
        nd_id rank = ext(g, F_argsort, tmpl_of(1, 2, extra), 1, &perm, NPY_INT64, x.ndim, x.shape);
        nd_id po = fn == F_partition
                   ? ext(g, F_argsort, tmpl_of(1, 2, extra), 1, &i, NPY_INT64, x.ndim, x.shape)
                   : ND_NONE;
        Py_DECREF(extra[1]);
        if (BAD(rank) || BAD(c) || (fn == F_partition && BAD(po))) return -1;
        if (fn == F_partition) rank = gather_along(g, po, rank, (int)axis, NPY_INT64);
        return acc(A, a, gather_along(g, c, rank, (int)axis, L));
    }
    if (is_cfunc(fn, "scatter") && f->nextra == 3) {
        /* base.flat[idx] = vals, the last write to an index winning */
        nd_id base = f->extra[0], idx = f->extra[1], vals = f->extra[2];
        nd_node vn = *NODE(g, vals), in_ = *NODE(g, idx);
        if (A->dep[base]) {
            nd_id ids[3] = {c, idx, nd_autodiff_zeros(g, L, vn.ndim, vn.shape)};
            if (acc(A, base, ext(g, fn, tmpl_of(3, 0, NULL), 3, ids, L, f->ndim, f->shape)) < 0)
                return -1;
        }
        if (A->dep[vals]) {
            nd_id iota = flat_index(g, index_node(g, in_.ndim, in_.shape, 0), 0, in_.ndim, in_.shape);
            nd_id ids[3] = {nd_autodiff_zeros(g, NPY_INT64, f->ndim, f->shape), idx, iota};
            ids[0] = uf(g, ND_UF_SUBTRACT, ids[0], sc(g, 1, NPY_INT64), NPY_INT64);
            nd_id W = ext(g, fn, tmpl_of(3, 0, NULL), 3, ids, NPY_INT64, f->ndim, f->shape);
            if (BAD(W) || BAD(c)) return -1;
            nd_node n;
            nd_node_init(&n, ND_OP_GATHER, NPY_INT64, in_.ndim, in_.shape);
            n.nin = 2; n.in[0] = W; n.in[1] = idx;
            nd_id won = uf(g, ND_UF_EQUAL, add(g, &n), iota, NPY_INT64);
            nd_node m;
            nd_node_init(&m, ND_OP_GATHER, L, in_.ndim, in_.shape);
            m.nin = 2; m.in[0] = c; m.in[1] = idx;
            nd_id gv = where(g, won, add(g, &m), S(0), L);
            if (acc(A, vals, reshape(g, gv, vn.ndim, vn.shape)) < 0) return -1;
        }
        return PyErr_Occurred() ? -1 : 0;
    }
    if (is_cfunc(fn, "ufunc_at")) {
        PyObject *tmpl = PyTuple_GET_ITEM(f->attrs, 0);
        PyObject *u = PyTuple_GET_ITEM(tmpl, 0);
        int uid = nd_ufunc_lookup(u);
        if (uid != ND_UF_ADD && uid != ND_UF_SUBTRACT)
            return not_impl("ufunc.at", uid >= 0 ? nd_ufunc_name(uid) : "this ufunc");
        nd_id base = f->extra[0], idx = f->extra[1];
        if (A->dep[base] && acc(A, base, c) < 0) return -1;
        if (f->nextra == 3 && A->dep[f->extra[2]]) {
            nd_node in_ = *NODE(g, idx);
            nd_node m;
            nd_node_init(&m, ND_OP_GATHER, L, in_.ndim, in_.shape);
            m.nin = 2; m.in[0] = c; m.in[1] = idx;
            nd_id gv = add(g, &m);
            if (uid == ND_UF_SUBTRACT) gv = NEG(gv);
            if (acc(A, f->extra[2], gv) < 0) return -1;
        }
        return 0;
    }
    PyObject *name = PyObject_GetAttrString(fn, "__name__");
    if (!name) PyErr_Clear();
    const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) PyErr_Clear();
    char buf[128];
    snprintf(buf, sizeof buf, "numpy.%s", s ? s : "<extern>");
    Py_XDECREF(name);
    return not_impl(buf, fn == F_dot ? "arrays above 2-D" : NULL);
}

/* ------------------------------------------- logsumexp's stabilizer */

/* the forward nodes (v, n0) that read v, one entry per input slot that
 * does; their count (at most cap are stored) */
static int readers(const nd_graph *g, nd_id v, nd_id n0, nd_id *u, int cap)
{
    int k = 0;
    for (nd_id j = v + 1; j < n0; j++) {
        const nd_node *n = &g->nodes[j];
        int ni = n->op == ND_OP_EXTERN ? n->nextra : n->nin;
        for (int t = 0; t < ni; t++)
            if ((n->op == ND_OP_EXTERN ? n->extra[t] : n->in[t]) == v) {
                if (k < cap) u[k] = j;
                k++;
            }
    }
    return k;
}

/* operand p of a ufunc of rank nd and shape sh, read through at most one
 * plain view, as an affine map into its base's C-order elements: *base,
 * *off, st[d] (0 where sh[d] == 1 or p is broadcast along d) */
static void operand_map(const nd_graph *g, nd_id p, int nd, const npy_intp *sh, nd_id *base,
                        npy_intp *off, npy_intp *st)
{
    const nd_node *pn = &g->nodes[p];
    npy_intp own[ND_MAXDIMS];
    const npy_intp *ps = own;
    *base = p;
    *off = 0;
    nd_c_strides(pn->ndim, pn->shape, own);
    if (pn->op == ND_OP_VIEW && !(pn->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG)) &&
        g->nodes[pn->in[0]].dtype == pn->dtype) {
        *base = pn->in[0];
        *off = pn->voff;
        ps = pn->vstrides;
    }
    for (int d = 0; d < nd; d++) {
        int q = d - (nd - pn->ndim);
        st[d] = sh[d] == 1 || q < 0 || pn->shape[q] == 1 ? 0 : ps[q];
    }
}

static int same_map(int nd, const npy_intp *sh, npy_intp o1, const npy_intp *s1, npy_intp o2,
                    const npy_intp *s2)
{
    if (o1 != o2) return 0;
    for (int d = 0; d < nd; d++)
        if (sh[d] != 1 && s1[d] != s2[d]) return 0;
    return 1;
}

/* r, read by exactly one forward node, directly or through one view read
 * by exactly one: that node (*op) and the operand slot's node (*via) */
static int sole_reader(const nd_graph *g, nd_id r, nd_id n0, nd_id *op, nd_id *via)
{
    nd_id u[2];
    if (readers(g, r, n0, u, 2) != 1) return 0;
    *via = r;
    if (g->nodes[u[0]].op == ND_OP_VIEW) {
        *via = u[0];
        if (readers(g, u[0], n0, u, 2) != 1) return 0;
    }
    *op = u[0];
    return 1;
}

/* m = max(x, axes) read only as logsumexp's stabilizer,
 * log(sum(exp(x - m), axes)) + m, with nothing else reading the exp, its
 * sum or the log, or as softmax's, e / sum(e, axes), e = exp(x - m), with
 * nothing else reading the sum (softmax CE 8.1 -> 5.0x the input's bytes):
 * the result does not depend on m (its cotangent
 * c - (c/s)*s is 0 but for rounding), so m gets none, as JAX's logsumexp
 * stops it. Exact: s = sum(exp(x - m)) lies in [1, n] or is NaN, and a NaN
 * row's gradient is NaN through exp's own term either way. This spares
 * the backward the max's tie mask and tie count (two passes over x). */
static int lse_stabilizer(const nd_graph *g, nd_id m, nd_id n0, int nout, const nd_id *outs)
{
    const nd_node *mn = &g->nodes[m];
    int L = mn->dtype;
    if (mn->op != ND_OP_REDUCE || (mn->sub != ND_UF_MAXIMUM && mn->sub != ND_UF_FMAX) ||
        !isflt(L) || mn->nin != 1 || mn->in_dtype[0] != L)
        return 0;
    nd_id xi = mn->in[0];
    const nd_node *xn = &g->nodes[xi];
    if (xn->dtype != L) return 0;
    /* m's readers (through a view each): x - m, and (log s) + m but for softmax */
    nd_id u[3], sub = ND_NONE, sum_add = ND_NONE, msub = ND_NONE, madd = ND_NONE;
    int nm = readers(g, m, n0, u, 3);
    if (nm != 2 && nm != 1) return 0;
    for (int k = 0; k < nm; k++) {
        nd_id op, via;
        if (g->nodes[u[k]].op == ND_OP_VIEW) {
            if (!sole_reader(g, u[k], n0, &op, &via) || via != u[k]) return 0;
            via = u[k];
        }
        else { op = u[k]; via = m; }
        const nd_node *on = &g->nodes[op];
        if (on->op != ND_OP_UFUNC || on->nin != 2 || on->dtype != L || on->in_dtype[0] != L ||
            on->in_dtype[1] != L || on->in[0] == on->in[1])
            return 0;
        if (on->sub == ND_UF_SUBTRACT && on->in[0] == xi && on->in[1] == via && sub == ND_NONE) {
            sub = op; msub = via;
        }
        else if (on->sub == ND_UF_ADD && sum_add == ND_NONE) { sum_add = op; madd = via; }
        else return 0;
    }
    if (sub == ND_NONE || (nm == 2) != (sum_add != ND_NONE)) return 0;
    const nd_node *sn = &g->nodes[sub];
    if (sn->ndim != xn->ndim || memcmp(sn->shape, xn->shape, sizeof(npy_intp) * xn->ndim))
        return 0;
    /* x - m reads m's element of x's row: m's dense layout with the
     * reduced axes at stride 0 */
    npy_intp want[ND_MAXDIMS], st[ND_MAXDIMS], off, acc1 = 1;
    for (int d = xn->ndim - 1; d >= 0; d--) {
        if ((mn->axes >> d) & 1) want[d] = 0;
        else { want[d] = acc1; acc1 *= xn->shape[d]; }
    }
    nd_id base;
    operand_map(g, msub, sn->ndim, sn->shape, &base, &off, st);
    if (base != m || !same_map(sn->ndim, sn->shape, off, st, 0, want)) return 0;
    nd_id e, s, lg, via, er[3];
    if (readers(g, sub, n0, &e, 1) != 1) return 0;
    const nd_node *en = &g->nodes[e];
    if (en->op != ND_OP_UFUNC || en->sub != ND_UF_EXP || en->dtype != L || en->in_dtype[0] != L)
        return 0;
    int ne = readers(g, e, n0, er, 3);
    if (ne != 1 && ne != 2) return 0;
    s = er[0];
    if (ne == 2 && g->nodes[s].op != ND_OP_REDUCE) s = er[1];
    const nd_node *ssn = &g->nodes[s];
    if (ssn->op != ND_OP_REDUCE || ssn->sub != ND_UF_ADD || ssn->nin != 1 || ssn->axes != mn->axes ||
        ssn->dtype != L)
        return 0;
    if (ne == 2) {
        /* softmax, e / s with s over e's rows (keepdims or a view): also
         * the same for every m; then s is read by that division alone and
         * m only by x - m */
        nd_id dv = er[0] == s ? er[1] : er[0], sop;
        const nd_node *dn = &g->nodes[dv];
        if (nm != 1 || dn->op != ND_OP_UFUNC || dn->sub != ND_UF_TRUE_DIVIDE || dn->dtype != L ||
            dn->in[0] != e || dn->in[1] == e || dn->in_dtype[0] != L || dn->in_dtype[1] != L ||
            dn->ndim != en->ndim || memcmp(dn->shape, en->shape, sizeof(npy_intp) * en->ndim))
            return 0;
        if (!sole_reader(g, s, n0, &sop, &via) || sop != dv || dn->in[1] != via) return 0;
        operand_map(g, via, dn->ndim, dn->shape, &base, &off, st);
        if (base != s || !same_map(dn->ndim, dn->shape, off, st, 0, want)) return 0;
        for (int j = 0; j < nout; j++)
            if (outs[j] == m || outs[j] == msub || outs[j] == sub || outs[j] == e || outs[j] == s ||
                outs[j] == via)
                return 0;
        return 1;
    }
    if (nm != 2) return 0;
    if (readers(g, s, n0, &lg, 1) != 1) return 0;
    const nd_node *ln = &g->nodes[lg];
    if (ln->op != ND_OP_UFUNC || ln->sub != ND_UF_LOG || ln->dtype != L || ln->in_dtype[0] != L ||
        ln->ndim != ssn->ndim || memcmp(ln->shape, ssn->shape, sizeof(npy_intp) * ln->ndim))
        return 0;
    nd_id op;
    if (!sole_reader(g, lg, n0, &op, &via) || op != sum_add) return 0;
    /* (log s) + m pairs each row's log with the same row's m: s and m are
     * both laid out densely over the rows, so the two maps must agree */
    const nd_node *an = &g->nodes[sum_add];
    if (an->in[0] != via && an->in[1] != via) return 0;
    npy_intp st2[ND_MAXDIMS], off2;
    nd_id base2;
    operand_map(g, madd, an->ndim, an->shape, &base, &off, st);
    operand_map(g, via, an->ndim, an->shape, &base2, &off2, st2);
    if (base != m || base2 != lg || !same_map(an->ndim, an->shape, off, st, off2, st2)) return 0;
    for (int j = 0; j < nout; j++)
        if (outs[j] == m || outs[j] == msub || outs[j] == madd || outs[j] == sub || outs[j] == e ||
            outs[j] == s || outs[j] == lg || outs[j] == via)
            return 0;
    return 1;
}

/* -------------------------------------------------------------- driver */

int nd_autodiff_backward(nd_graph *g, int nout, const nd_id *outs, const nd_id *cts,
                         int nwrt, const nd_id *wrt, nd_id *grads)
{
    nd_id n0 = g->n, lo = n0, hi = -1;
    for (int k = 0; k < nwrt; k++) { grads[k] = ND_NONE; if (wrt[k] < lo) lo = wrt[k]; }
    for (int j = 0; j < nout; j++) if (outs[j] > hi) hi = outs[j];
    if (nwrt == 0 || hi < lo) return 0;
    ad_t A = {g, PyMem_Malloc(sizeof(nd_id) * (size_t)n0), PyMem_Calloc((size_t)n0, 1), n0,
              NULL, NULL, 0, 0};
    char *is_wrt = PyMem_Calloc((size_t)n0, 1);
    int rc = -1;
    if (!A.ct || !A.dep || !is_wrt) { PyErr_NoMemory(); goto done; }
    for (nd_id i = 0; i < n0; i++) A.ct[i] = ND_NONE;
    for (int k = 0; k < nwrt; k++) {
        is_wrt[wrt[k]] = 1;
        A.dep[wrt[k]] = isflt(g->nodes[wrt[k]].dtype) || iscplx(g->nodes[wrt[k]].dtype);
    }
    /* forward: which nodes carry a float dependence on a wrt node */
    for (nd_id i = lo; i <= hi; i++) {
        nd_node *n = &g->nodes[i];
        if (is_wrt[i] || !(isflt(n->dtype) || iscplx(n->dtype))) continue;
        if (n->op == ND_OP_REDUCE && lse_stabilizer(g, i, n0, nout, outs)) continue;
        int ni = n->op == ND_OP_EXTERN ? n->nextra : n->nin;
        for (int k = 0; k < ni && !A.dep[i]; k++) {
            nd_id x = n->op == ND_OP_EXTERN ? n->extra[k] : n->in[k];
            if (x >= 0 && A.dep[x]) A.dep[i] = 1;
        }
    }
    for (int j = 0; j < nout; j++) {
        if (cts[j] == ND_NONE || !A.dep[outs[j]]) continue;
        if (A.ct[outs[j]] == ND_NONE) A.ct[outs[j]] = cts[j];
        else if (BAD(A.ct[outs[j]] = uf(g, ND_UF_ADD, A.ct[outs[j]], cts[j], g->nodes[outs[j]].dtype)))
            goto done;
    }
    for (nd_id i = hi; i >= lo; i--) {
        if (flush_windows(&A, i) < 0) goto done;  /* its consumers are done */
        nd_id c = A.ct[i];
        if (c == ND_NONE || !A.dep[i] || is_wrt[i]) continue;
        nd_node f = g->nodes[i];  /* a copy: rules grow the graph */
        int r;
        switch (f.op) {
        case ND_OP_UFUNC: r = rule_ufunc(&A, i, &f, c); break;
        case ND_OP_CAST: r = acc(&A, f.in[0], c); break;  /* complex -> real: acc's real part */
        case ND_OP_WHERE: r = rule_where(&A, &f, c); break;
        case ND_OP_REDUCE: r = rule_reduce(&A, i, &f, c); break;
        case ND_OP_SCAN: r = rule_scan(&A, i, &f, c); break;
        case ND_OP_VIEW: r = rule_view(&A, &f, c); break;
        case ND_OP_SETITEM: r = rule_setitem(&A, &f, c); break;
        case ND_OP_GATHER: r = rule_gather(&A, &f, c); break;
        case ND_OP_EXTERN: r = rule_extern(&A, i, &f, c); break;
        default: r = 0; break;  /* INPUT, SCALAR, INDEX: constants */
        }
        if (r < 0) goto done;
    }
    for (int k = 0; k < nwrt; k++) grads[k] = A.ct[wrt[k]];
    rc = 0;
done:
    PyMem_Free(A.ct);
    PyMem_Free(A.dep);
    PyMem_Free(A.whead);
    PyMem_Free(A.win);
    PyMem_Free(is_wrt);
    return rc;
}

int nd_autodiff_recomputable(const nd_node *n)
{
    if (n->value) return 0;
    switch (n->op) {
    case ND_OP_UFUNC: case ND_OP_CAST: case ND_OP_WHERE: case ND_OP_VIEW: case ND_OP_SCALAR:
    case ND_OP_INDEX:
        return 1;
    default:
        return 0;
    }
}

static PyObject *np_attr(PyObject *np, const char *path)
{
    PyObject *o = Py_NewRef(np);
    char buf[64];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf, *q; p; p = q) {
        q = strchr(p, '.');
        if (q) *q++ = 0;
        Py_SETREF(o, PyObject_GetAttrString(o, p));
        if (!o) return NULL;
    }
    return o;
}

int nd_autodiff_init(void)
{
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) return -1;
    struct { PyObject **slot; const char *path; } t[] = {
        {&F_matmul, "matmul"}, {&F_dot, "dot"}, {&F_einsum, "einsum"}, {&F_tensordot, "tensordot"},
        {&F_inv, "linalg.inv"}, {&F_det, "linalg.det"}, {&F_slogdet, "linalg.slogdet"},
        {&F_solve, "linalg.solve"}, {&F_cholesky, "linalg.cholesky"}, {&F_sort, "sort"},
        {&F_argsort, "argsort"}, {&F_bincount, "bincount"}, {&F_eigh, "linalg.eigh"},
        {&F_eigvalsh, "linalg.eigvalsh"}, {&F_svd, "linalg.svd"}, {&F_qr, "linalg.qr"},
        {&F_eig, "linalg.eig"}, {&F_eigvals, "linalg.eigvals"}, {&F_inner, "inner"},
        {&F_multi_dot, "linalg.multi_dot"}, {&F_matrix_power, "linalg.matrix_power"},
        {&F_median, "median"}, {&F_quantile, "quantile"}, {&F_percentile, "percentile"},
        {&F_pinv, "linalg.pinv"}, {&F_convolve, "convolve"}, {&F_correlate, "correlate"},
        {&F_interp, "interp"}, {&F_lstsq, "linalg.lstsq"}, {&F_partition, "partition"},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++)
        if (!*t[k].slot && !(*t[k].slot = np_attr(np, t[k].path))) { Py_DECREF(np); return -1; }
    static const char *ffts[ND_NFFT] = {"fft.fft", "fft.ifft", "fft.fft2", "fft.ifft2", "fft.fftn",
                                   "fft.ifftn", "fft.rfft", "fft.rfft2", "fft.rfftn", "fft.irfft",
                                   "fft.irfft2", "fft.irfftn", "fft.hfft", "fft.ihfft"};
    for (int k = 0; k < ND_NFFT; k++)
        if (!F_fft[k] && !(F_fft[k] = np_attr(np, ffts[k]))) { Py_DECREF(np); return -1; }
    Py_DECREF(np);
    if (!F_cumprod_vjp && !(F_cumprod_vjp = PyCFunction_New(&cumprod_vjp_def, NULL))) return -1;
    return nd_ad_kernels_init();
}
