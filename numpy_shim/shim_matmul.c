/* shim_matmul.c -- matmul, dot, vdot, inner, tensordot, einsum (and ndarray.dot)
 * as EXTERN nodes or fused graph ops (see shim_internal.h, "EXTERN calls", for how an extern
 * call is built: shapes by NumPy's rules written in C, dtypes from a cached
 * probe of NumPy itself). */
#include "shim_internal.h"
#include <string.h>

/* ------------------------------------------------------------- products */

/* The computing nodes a NumPy function added from id `from` on (views and
 * scalars compute nothing) get `flags` (graph.h: ND_F_FP_QUIET for
 * functions that check no floating-point status, ND_F_CMUL_PLAIN for
 * products BLAS or einsum's loops make). */
static void mark_computing(nd_trace *t, nd_id from, uint32_t flags)
{
    nd_graph *g = nd_trace_graph(t);
    for (nd_id i = from; i < g->n; i++) {
        nd_node *n = nd_graph_node(g, i);
        if (n->op == ND_OP_UFUNC || n->op == ND_OP_REDUCE || n->op == ND_OP_CAST)
            n->flags |= n->op == ND_OP_UFUNC && n->sub == ND_UF_MULTIPLY ? flags
                                                                          : flags & ~ND_F_CMUL_PLAIN;
    }
}

/* sum(a * b) over two equal-length vectors as fused graph ops (conj_a:
 * vdot's conjugated first operand). Same dtype as np.dot: the multiply's
 * NEP-50 result (float16: NumPy's own, below). NumPy computes it in one
 * BLAS call: complex products round each part's products apart, a
 * floating-point warning names dot or matmul (the sum is tagged so:
 * graph.h, ND_RED_BY_DOT), and vdot warns nothing. */
static PyObject *vector_dot(nd_trace *t, const char *path, const nd_xj_arr *a0,
                            const nd_xj_arr *b0, int conj_a)
{
    nd_xj_arr a = *a0, b = *b0;
    int dts[2] = {a.dtype, b.dtype}, weak[2] = {0, 0}, loop[2], od;
    PyObject *sv[2] = {NULL, NULL};
    if (nd_shim_resolve_ufunc(ND_UF_MULTIPLY, 2, dts, weak, sv, loop, &od) < 0) return NULL;
    if (od == NPY_HALF) {
        /* NumPy's float16 dot (and matmul's loop) converts each element to
         * float32, multiplies and sums there and rounds once: products in
         * float16 overflow where NumPy's do not ([300, 300] . [300, -300]
         * is 0, not nan), and its overflow warning names the function */
        nd_ext_out o;
        nd_ext_init1(&o, 1, 0, NULL);
        o.dtype[0] = od;   /* not the probe's tiny arrays: vdot's sizes must agree */
        nd_xj_arr ins[2] = {a, b};
        return nd_ext_simple(t, path, 2, ins, 0, NULL, NULL, &o);
    }
    npy_intp n = nd_xj_size(a.ndim, a.shape);
    if (nd_xj_reshape(t, &a, 1, &n) < 0 || nd_xj_reshape(t, &b, 1, &n) < 0) return NULL;
    nd_id from = nd_trace_graph(t)->n;
    if (conj_a && PyTypeNum_ISCOMPLEX(a.dtype)) {
        int loop[1] = {a.dtype};
        nd_id in[1] = {a.id};
        a.id = nd_shim_node_ufunc(t, ND_UF_CONJUGATE, in, loop, a.dtype, 0);
        if (a.id == ND_NONE) return NULL;
    }
    nd_id in[2] = {a.id, b.id};
    nd_id p = nd_shim_node_ufunc(t, ND_UF_MULTIPLY, in, loop, od, 0);
    if (p == ND_NONE) return NULL;
    nd_id r = nd_shim_node_reduce(t, ND_UF_ADD, p, 1, 0, od, od, ND_NONE);
    if (r == ND_NONE) return NULL;
    /* vdot: conj(a) . b is what BLAS's zdotc computes, to the bit */
    nd_graph_node(nd_trace_graph(t), r)->aux = strcmp(path, "matmul") ? ND_RED_BY_DOT : ND_RED_BY_MATMUL;
    mark_computing(t, from, ND_F_CMUL_PLAIN | (conj_a ? ND_F_FP_QUIET : 0));
    return nd_shim_wrap(t, r, 1);
}

#define P_MATMUL "x1,x2|out;casting,order,dtype,subok,signature,axes,axis,keepdims"

static PyObject *matmul_impl(nd_trace *t, PyObject **argv)
{
    if (nd_ext_given(argv, 3, 10)) return nd_shim_unsupported("numpy.matmul with dtype/order/axes arguments");
    nd_xj_arr in[2];
    if (nd_xj_array2(t, argv, in)) return NULL;
    const nd_xj_arr *a = &in[0], *b = &in[1];
    if (a->ndim == 0 || b->ndim == 0) return nd_xj_numpy_error("matmul", P_MATMUL, argv);
    if (a->ndim == 1 && b->ndim == 1 && a->shape[0] == b->shape[0] && (!argv[2] || argv[2] == Py_None))
        return vector_dot(t, "matmul", a, b, 0);
    npy_intp ka = a->shape[a->ndim - 1], kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    int nd;
    npy_intp sh[ND_MAXDIMS + 2];
    if (ka != kb ||
        nd_ext_batch_broadcast(a->ndim > 2 ? a->ndim - 2 : 0, a->shape, b->ndim > 2 ? b->ndim - 2 : 0,
                        b->shape, &nd, sh))
        return nd_xj_numpy_error("matmul", P_MATMUL, argv);
    if (a->ndim >= 2) sh[nd++] = a->shape[a->ndim - 2];
    if (b->ndim >= 2) sh[nd++] = b->shape[b->ndim - 1];
    nd_ext_out o;
    nd_ext_init1(&o, 1, nd, sh);
    NPY_CASTING casting;
    if (nd_shim_casting_arg(argv[3], NPY_SAME_KIND_CASTING, &casting) < 0) return NULL;
    PyObject *r = nd_ext_simple(t, "matmul", 2, in, 0, NULL, NULL, &o);
    if (!r || !argv[2] || argv[2] == Py_None) return r;
    /* out (or a 1-tuple holding it) must have the result's exact shape and
     * accept its dtype; any other out= (a longer tuple too) is NumPy's to
     * refuse */
    nd_id v = nd_proxy_read(r);
    Py_DECREF(r);
    nd_shim_out_rule rule = {1, -1, casting, "matmul", casting,
                             "numpy.matmul with an out= NumPy checks itself"};
    return nd_shim_out_result(t, argv[2], v, &rule);
}

/* dot and inner: vectors as a fused sum of products, a 0-d operand scales
 * the other, else a's last dim contracts with b's dim bk (dot: b's
 * second-to-last, or its only one; inner: b's last). */
static PyObject *dot_like(nd_trace *t, PyObject **argv, const char *path, const char *P, int inner)
{
    nd_xj_arr in[2];
    if (nd_xj_array2(t, argv, in)) return NULL;
    const nd_xj_arr *a = &in[0], *b = &in[1];
    npy_intp sh[2 * ND_MAXDIMS];
    int nd = 0;
    if (a->ndim == 1 && b->ndim == 1 && a->shape[0] == b->shape[0])
        return vector_dot(t, path, a, b, 0);
    if (a->ndim == 0 || b->ndim == 0) {
        const nd_xj_arr *o = a->ndim == 0 ? b : a;
        nd = o->ndim;
        memcpy(sh, o->shape, sizeof(npy_intp) * (size_t)nd);
    } else {
        int bk = inner || b->ndim == 1 ? b->ndim - 1 : b->ndim - 2;
        if (a->shape[a->ndim - 1] != b->shape[bk]) return nd_xj_numpy_error(path, P, argv);
        for (int d = 0; d < a->ndim - 1; d++) sh[nd++] = a->shape[d];
        for (int d = 0; d < b->ndim; d++) if (d != bk) sh[nd++] = b->shape[d];
    }
    if (nd > ND_MAXDIMS) return nd_shim_unsupported("numpy.%s result above rank 16", path);
    nd_ext_out o;
    nd_ext_init1(&o, 1, nd, sh);
    return nd_ext_simple(t, path, 2, in, 0, NULL, NULL, &o);
}

static PyObject *dot_impl(nd_trace *t, PyObject **argv)
{
    if (argv[2] && argv[2] != Py_None) return nd_shim_unsupported("numpy.dot with out=");
    return dot_like(t, argv, "dot", "a,b|out", 0);
}

static PyObject *inner_impl(nd_trace *t, PyObject **argv) { return dot_like(t, argv, "inner", "a,b", 1); }

static PyObject *vdot_impl(nd_trace *t, PyObject **argv)
{
    nd_xj_arr in[2];
    if (nd_xj_array2(t, argv, in)) return NULL;
    if (nd_xj_size(in[0].ndim, in[0].shape) != nd_xj_size(in[1].ndim, in[1].shape))
        return nd_xj_numpy_error("vdot", "a,b", argv);
    return vector_dot(t, "vdot", &in[0], &in[1], 1);
}

/* axes argument of tensordot -> lists; 0 ok, 1 not modelled/invalid */
static int axes_list(PyObject *o, int ndim, int *ax, int *n)
{
    npy_intp v[ND_MAXDIMS];
    int r = nd_xj_int_list(o, 1, v, ND_MAXDIMS, n);
    if (r < 0) PyErr_Clear();
    if (r) return 1;
    for (int i = 0; i < *n; i++) {
        if (v[i] < -ndim || v[i] >= ndim) return 1;
        ax[i] = (int)(v[i] < 0 ? v[i] + ndim : v[i]);
    }
    return 0;
}

static PyObject *tensordot_impl(nd_trace *t, PyObject **argv)
{
    static const char *P = "a,b|axes";
    nd_xj_arr in[2];
    if (nd_xj_array2(t, argv, in)) return NULL;
    const nd_xj_arr *a = &in[0], *b = &in[1];
    int axa[ND_MAXDIMS], axb[ND_MAXDIMS], na = 0, nb = 0;
    PyObject *axes = argv[2];
    if (!axes || nd_shim_index_like(axes)) {
        long n = axes ? PyLong_AsLong(axes) : 2;
        if (n == -1 && PyErr_Occurred()) return NULL;
        if (n < 0 || n > a->ndim || n > b->ndim) return nd_xj_numpy_error("tensordot", P, argv);
        for (long i = 0; i < n; i++) { axa[i] = (int)(a->ndim - n + i); axb[i] = (int)i; }
        na = nb = (int)n;
    } else {
        PyObject *seq = PySequence_Fast(axes, "");
        if (!seq) { PyErr_Clear(); return nd_xj_numpy_error("tensordot", P, argv); }
        int bad = PySequence_Fast_GET_SIZE(seq) != 2 ||
                  axes_list(PySequence_Fast_GET_ITEM(seq, 0), a->ndim, axa, &na) ||
                  axes_list(PySequence_Fast_GET_ITEM(seq, 1), b->ndim, axb, &nb);
        Py_DECREF(seq);
        if (bad || na != nb) return nd_xj_numpy_error("tensordot", P, argv);
    }
    int used_a[ND_MAXDIMS] = {0}, used_b[ND_MAXDIMS] = {0};
    for (int i = 0; i < na; i++) {
        if (a->shape[axa[i]] != b->shape[axb[i]] || used_a[axa[i]] || used_b[axb[i]])
            return nd_xj_numpy_error("tensordot", P, argv);
        used_a[axa[i]] = used_b[axb[i]] = 1;
    }
    npy_intp sh[2 * ND_MAXDIMS];
    int nd = 0;
    for (int d = 0; d < a->ndim; d++) if (!used_a[d]) sh[nd++] = a->shape[d];
    for (int d = 0; d < b->ndim; d++) if (!used_b[d]) sh[nd++] = b->shape[d];
    if (nd > ND_MAXDIMS) return nd_shim_unsupported("numpy.tensordot result above rank 16");
    nd_ext_out o;
    nd_ext_init1(&o, 0, nd, sh); /* tensordot returns a 0-d array, not a scalar */
    /* the axes as canonical tuples: hashable and independent of list
     * identity, so equal calls share the graph's structure */
    PyObject *ta = PyTuple_New(na), *tb = PyTuple_New(nb);
    PyObject *pair = NULL, *r = NULL;
    if (!ta || !tb) goto done;
    for (int i = 0; i < na; i++) {
        PyObject *x = PyLong_FromLong(axa[i]), *y = x ? PyLong_FromLong(axb[i]) : NULL;
        if (!y) { Py_XDECREF(x); goto done; }
        PyTuple_SET_ITEM(ta, i, x);
        PyTuple_SET_ITEM(tb, i, y);
    }
    pair = PyTuple_Pack(2, ta, tb);
    if (!pair) goto done;
    r = nd_ext_simple(t, "tensordot", 2, in, 1, &pair, NULL, &o);
done:
    Py_XDECREF(ta);
    Py_XDECREF(tb);
    Py_XDECREF(pair);
    return r;
}

/* ---------------------------------------------------------------- einsum */

#define EIN_MAXL 64

typedef struct {
    int nop;
    int nl[ND_SHIM_MAXARGS];             /* labels per operand (ellipsis expanded) */
    int lab[ND_SHIM_MAXARGS][ND_MAXDIMS]; /* label ids; ellipsis dims get ids >= 52 */
    int nout;
    int out[ND_MAXDIMS];
    npy_intp size[EIN_MAXL];
    int count[EIN_MAXL];
} einspec;

static int lab_id(char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return 26 + c - 'a';
    return -1;
}

/* Parse a subscripts string against the operands. 0 ok, 1 not modelled
 * (or invalid: the caller lets NumPy decide). */
static int ein_parse(const char *s, int nop, const nd_xj_arr *ops, einspec *e)
{
    memset(e, 0, sizeof(*e));
    e->nop = nop;
    for (int l = 0; l < EIN_MAXL; l++) e->size[l] = -1;
    const char *arrow = strstr(s, "->");
    int ell_nd = 0;
    npy_intp ell_shape[ND_MAXDIMS];
    int op = 0;
    const char *p = s;
    while (op < nop) {
        int raw[ND_MAXDIMS + 1], nraw = 0, ell_at = -1;
        while (*p == ' ') p++;
        while (*p && *p != ',' && (!arrow || p < arrow)) {
            if (*p == ' ') { p++; continue; }
            if (p[0] == '.' && p[1] == '.' && p[2] == '.') {
                if (ell_at >= 0) return 1;
                ell_at = nraw;
                p += 3;
                continue;
            }
            int id = lab_id(*p);
            if (id < 0 || nraw >= ND_MAXDIMS) return 1;
            raw[nraw++] = id;
            p++;
        }
        const nd_xj_arr *a = &ops[op];
        int nell = a->ndim - nraw;
        if (nell < 0 || nell > 12 || (ell_at < 0 && nell != 0)) return 1;
        /* ellipsis dims broadcast right-aligned across operands */
        if (ell_at >= 0) {
            const npy_intp *es = a->shape + ell_at;
            int nds[2] = {ell_nd, nell};
            const npy_intp *shs[2] = {ell_shape, es};
            int rnd;
            npy_intp rs[ND_MAXDIMS];
            if (nd_shim_broadcast(2, nds, shs, &rnd, rs) < 0) { PyErr_Clear(); return 1; }
            ell_nd = rnd;
            memcpy(ell_shape, rs, sizeof(npy_intp) * (size_t)rnd);
        }
        int k = 0;
        for (int i = 0; i <= nraw; i++) {
            if (i == ell_at)
                for (int j = 0; j < nell; j++) e->lab[op][k++] = 64 - nell + j;
            if (i < nraw) e->lab[op][k++] = raw[i];
        }
        e->nl[op] = k;
        op++;
        if (*p == ',') p++;
        else break;
    }
    if (op != nop) return 1;
    if (arrow ? p != arrow : *p) return 1;
    /* ellipsis labels: 52 + 12 - nell + j: right-aligned ids 52..63 */
    if (ell_nd > 12) return 1;
    for (int o = 0; o < nop; o++)
        for (int k = 0; k < e->nl[o]; k++) {
            int l = e->lab[o][k];
            npy_intp sz = ops[o].shape[k];
            if (l >= 52) {
                /* per-operand broadcasting of ellipsis dims */
                npy_intp full = ell_shape[ell_nd - (64 - l)];
                if (sz != full && sz != 1) return 1;
                e->size[l] = full;
            } else {
                if (e->size[l] >= 0 && e->size[l] != sz) return 1;
                e->size[l] = sz;
            }
            e->count[l]++;
        }
    if (arrow) {
        const char *q = arrow + 2;
        int seen_ell = 0;
        while (*q) {
            if (*q == ' ') { q++; continue; }
            if (q[0] == '.' && q[1] == '.' && q[2] == '.') {
                if (seen_ell) return 1;
                seen_ell = 1;
                for (int j = 0; j < ell_nd; j++) e->out[e->nout++] = 64 - ell_nd + j;
                q += 3;
                continue;
            }
            int id = lab_id(*q);
            if (id < 0 || e->size[id] < 0 || e->nout >= ND_MAXDIMS) return 1;
            for (int j = 0; j < e->nout; j++) if (e->out[j] == id) return 1;
            e->out[e->nout++] = id;
            q++;
        }
        if (ell_nd && !seen_ell) {
            /* ellipsis dims must appear in an explicit output unless size 1 */
            for (int j = 0; j < ell_nd; j++) if (ell_shape[j] != 1) return 1;
        }
    } else {
        for (int j = 0; j < ell_nd; j++) e->out[e->nout++] = 64 - ell_nd + j;
        for (int l = 0; l < 52; l++)
            if (e->count[l] == 1) {
                if (e->nout >= ND_MAXDIMS) return 1;
                e->out[e->nout++] = l;
            }
    }
    return 0;
}

/* Pointwise product + reduction when it never builds anything larger than
 * the largest operand (no contraction that BLAS would do better). */
/* NumPy's c_einsum allocates the output through its iterator over every
 * label (order 'K'): the output's memory order is the labels' iterator
 * order, restricted to the output labels. */
static void ein_layout(PyObject *res, const einspec *e, PyObject *const *objs, const int *L, int nL)
{
    if (!res || e->nout < 2) return;
    npy_intp st[ND_SHIM_MAXARGS][ND_MAXDIMS];
    int m = 0, perm[ND_MAXDIMS], out[ND_MAXDIMS], n = 0;
    for (int o = 0; o < e->nop; o++) {
        npy_intp ms[ND_MAXDIMS];
        int nd;
        const npy_intp *sh;
        if (nd_operand_memory_strides(objs[o], &nd, &sh, ms) || nd != e->nl[o]) continue;
        for (int i = 0; i < nL; i++) {
            st[m][i] = 0;
            for (int k = 0; k < nd; k++)
                if (L[i] == e->lab[o][k]) st[m][i] += ms[k];
        }
        m++;
    }
    nd_korder(m, nL, (const npy_intp (*)[ND_MAXDIMS])st, 1, perm);
    for (int i = 0; i < nL; i++) if (perm[i] < e->nout) out[n++] = perm[i];
    if (n == e->nout) nd_proxy_set_perm(res, out);
}

static PyObject *ein_fused(nd_trace *t, const einspec *e, const nd_xj_arr *ops, int dtype, int scalar,
                           PyObject *const *objs, int optimize_off)
{
    int L[EIN_MAXL], nL = 0, in_out[EIN_MAXL] = {0};
    for (int j = 0; j < e->nout; j++) { L[nL++] = e->out[j]; in_out[e->out[j]] = 1; }
    for (int l = 0; l < EIN_MAXL; l++)
        if (e->count[l] && !in_out[l]) L[nL++] = l;
    if (nL > ND_MAXDIMS) return nd_shim_unsupported("einsum over more than 16 labels");
    npy_intp shape[ND_MAXDIMS];
    for (int i = 0; i < nL; i++) shape[i] = e->size[L[i]];
    nd_id prod = ND_NONE, from = nd_trace_graph(t)->n;
    int pdt = -1;
    for (int o = 0; o < e->nop; o++) {
        npy_intp cs[ND_MAXDIMS], st[ND_MAXDIMS] = {0};
        nd_c_strides(ops[o].ndim, ops[o].shape, cs);
        for (int k = 0; k < e->nl[o]; k++)
            for (int i = 0; i < nL; i++)
                if (L[i] == e->lab[o][k] && ops[o].shape[k] != 1) st[i] += cs[k];
        nd_id v = nd_shim_node_view(t, ops[o].id, nL, shape, 0, st);
        if (v == ND_NONE) return NULL;
        if (prod == ND_NONE) { prod = v; pdt = ops[o].dtype; continue; }
        int dts[2] = {pdt, ops[o].dtype}, weak[2] = {0, 0}, loop[2], od;
        PyObject *sv[2] = {NULL, NULL};
        if (nd_shim_resolve_ufunc(ND_UF_MULTIPLY, 2, dts, weak, sv, loop, &od) < 0) return NULL;
        nd_id in[2] = {prod, v};
        prod = nd_shim_node_ufunc(t, ND_UF_MULTIPLY, in, loop, od, 0);
        if (prod == ND_NONE) return NULL;
        pdt = od;
    }
    prod = nd_shim_node_cast(t, prod, dtype);
    if (prod == ND_NONE) return NULL;
    if (nL > e->nout) {
        uint64_t mask = 0;
        for (int i = e->nout; i < nL; i++) mask |= 1ULL << i;
        prod = nd_shim_node_reduce(t, ND_UF_ADD, prod, mask, 0, dtype, dtype, ND_NONE);
        if (prod == ND_NONE) return NULL;
    }
    /* c_einsum's sum-of-products loops check no FP status and multiply
     * complex parts unfused; with optimize NumPy may call matmul, which
     * warns as matmul does */
    mark_computing(t, from, ND_F_CMUL_PLAIN | (optimize_off ? ND_F_FP_QUIET : 0));
    PyObject *res = nd_shim_wrap(t, prod, scalar);
    ein_layout(res, e, objs, L, nL);
    return res;
}

/* Whether a 0-d einsum result is a NumPy scalar. Without optimize it is
 * (c_einsum); with optimize NumPy runs its contraction path, whose last
 * step may return a 0-d ndarray (matmul) or a scalar (multiply of 0-d
 * values, when every label has size 1), depending on the NumPy version
 * and on which dims are 1 (the guards key on those): ask NumPy itself on
 * operands of the same dtypes, ranks and size-1 dims, other dims 2. */
static int ein_scalar_result(PyObject *subs, PyObject *optimize, int nop, const nd_xj_arr *in)
{
    if (!optimize || optimize == Py_False) return 1;
    PyObject *fn = nd_xj_np_attr("einsum");
    if (!fn) return -1;
    PyObject *args = PyTuple_New(nop + 1), *kw = NULL, *res = NULL;
    int r = -1;
    if (!args) goto done;
    Py_INCREF(subs);
    PyTuple_SET_ITEM(args, 0, subs);
    for (int k = 0; k < nop; k++) {
        npy_intp small[ND_MAXDIMS];
        for (int d = 0; d < in[k].ndim; d++) small[d] = in[k].shape[d] < 2 ? in[k].shape[d] : 2;
        PyArray_Descr *descr = PyArray_DescrFromType(in[k].dtype);
        if (!descr) goto done;
        PyObject *a = PyArray_Zeros(in[k].ndim, small, descr, 0);
        if (!a) goto done;
        PyTuple_SET_ITEM(args, k + 1, a);
    }
    if (!(kw = PyDict_New()) || PyDict_SetItemString(kw, "optimize", optimize) < 0) goto done;
    if (!(res = PyObject_Call(fn, args, kw))) goto done;
    r = !PyArray_Check(res);
done:
    Py_DECREF(fn);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_XDECREF(res);
    return r;
}

static PyObject *einsum_impl(nd_trace *t, PyObject **argv)
{
    /* argv: operands (tuple), out, optimize, dtype, order, casting */
    PyObject *ops = argv[0];
    if (!ops || PyTuple_GET_SIZE(ops) < 2 || !PyUnicode_Check(PyTuple_GET_ITEM(ops, 0)))
        return nd_shim_unsupported("numpy.einsum in sublist form");
    if (nd_ext_given(argv, 1, 2) || nd_ext_given(argv, 3, 6))
        return nd_shim_unsupported("numpy.einsum with out/dtype/order/casting");
    const char *subs = PyUnicode_AsUTF8(PyTuple_GET_ITEM(ops, 0));
    if (!subs) return NULL;
    int nop = (int)PyTuple_GET_SIZE(ops) - 1;
    if (nop > ND_SHIM_MAXARGS) return nd_shim_unsupported("numpy.einsum with many operands");
    nd_xj_arr in[ND_SHIM_MAXARGS];
    for (int k = 0; k < nop; k++)
        if (nd_xj_array(t, PyTuple_GET_ITEM(ops, k + 1), &in[k])) return NULL;
    einspec e;
    if (ein_parse(subs, nop, in, &e))
        return nd_xj_numpy_error("einsum", "*operands|;out,optimize,dtype,order,casting", argv);
    /* result dtype: NumPy's (bool stays bool, int8 stays int8) */
    int dts[ND_SHIM_MAXARGS], weak[ND_SHIM_MAXARGS] = {0}, dtype;
    for (int k = 0; k < nop; k++) dts[k] = in[k].dtype;
    if (nd_shim_result_type(nop, dts, weak, &dtype) < 0) return NULL;
    /* fused when the full label space is no larger than some operand's */
    int nlabels = 0;
    for (int l = 0; l < EIN_MAXL; l++) nlabels += e.count[l] > 0;
    int fusable = 0;
    for (int k = 0; k < nop; k++) {
        int distinct = 0, seen[EIN_MAXL] = {0};
        for (int j = 0; j < e.nl[k]; j++)
            if (!seen[e.lab[k][j]]) { seen[e.lab[k][j]] = 1; distinct++; }
        if (distinct == nlabels) fusable = 1;
    }
    int has_sum = 0;
    {
        int in_out[EIN_MAXL] = {0};
        for (int j = 0; j < e.nout; j++) in_out[e.out[j]] = 1;
        for (int l = 0; l < EIN_MAXL; l++) has_sum |= e.count[l] && !in_out[l];
    }
    PyObject *op0 = PyTuple_GET_ITEM(ops, 1);
    if (nop == 1 && !has_sum && e.nout > 0 && nd_proxy_check(op0) && !nd_proxy_is_scalar(op0)) {
        /* NumPy returns a (writeable) view for a pure relabeling: a
         * transpose or diagonal of the operand (a 0-d result: a scalar) */
        npy_intp cs[ND_MAXDIMS], st[ND_MAXDIMS] = {0}, sh[ND_MAXDIMS];
        nd_c_strides(in[0].ndim, in[0].shape, cs);
        for (int j = 0; j < e.nout; j++) {
            sh[j] = e.size[e.out[j]];
            for (int k = 0; k < e.nl[0]; k++)
                if (e.lab[0][k] == e.out[j] && in[0].shape[k] != 1) st[j] += cs[k];
        }
        return nd_proxy_view(op0, e.nout, sh, 0, st);
    }
    int scalar = 0;
    if (e.nout == 0 &&
        (scalar = ein_scalar_result(PyTuple_GET_ITEM(ops, 0), argv[2], nop, in)) < 0)
        return NULL;
    if ((fusable || !has_sum) && nop <= 3)
        return ein_fused(t, &e, in, dtype, scalar, &PyTuple_GET_ITEM(ops, 1),
                         !argv[2] || argv[2] == Py_False);
    npy_intp sh[ND_MAXDIMS];
    for (int j = 0; j < e.nout; j++) sh[j] = e.size[e.out[j]];
    nd_ext_out o;
    nd_ext_init1(&o, scalar, e.nout, sh);
    o.dtype[0] = dtype;
    PyObject *fn = nd_xj_np_attr("einsum");
    if (!fn) return NULL;
    PyObject *tmpl = PyTuple_New(nop + 1), *kw = NULL, *r = NULL;
    if (!tmpl) goto done;
    Py_INCREF(PyTuple_GET_ITEM(ops, 0));
    PyTuple_SET_ITEM(tmpl, 0, PyTuple_GET_ITEM(ops, 0));
    for (int k = 0; k < nop; k++) {
        PyObject *ph = nd_extern_placeholder(k);
        if (!ph) goto done;
        PyTuple_SET_ITEM(tmpl, k + 1, ph);
    }
    if (argv[2]) {
        if (!(kw = PyDict_New()) || PyDict_SetItemString(kw, "optimize", argv[2]) < 0) goto done;
    }
    r = nd_ext_build(t, fn, tmpl, kw, nop, in, &o);
done:
    Py_DECREF(fn);
    Py_XDECREF(tmpl);
    Py_XDECREF(kw);
    return r;
}

static PyObject *dot_method(nd_trace *t, PyObject **argv) { return dot_impl(t, argv); }

/* -------------------------------------------------------------- register */

static const nd_shim_def matmul_defs[] = {
    {"matmul", P_MATMUL, matmul_impl, 0},
    {"dot", "a,b|out", dot_impl, 0},
    {"vdot", "a,b", vdot_impl, 0},
    {"inner", "a,b", inner_impl, 0},
    {"tensordot", "a,b|axes", tensordot_impl, 0},
    {"einsum", "*operands|;out,optimize,dtype,order,casting", einsum_impl, 0},
    {NULL, NULL, NULL, 0},
};

static const nd_shim_def matmul_methods[] = {
    {"dot", "self,b|out", dot_method, 0},
    {NULL, NULL, NULL, 0},
};

int nd_shim_register_matmul(nd_shim_table *tab)
{
    if (nd_shim_add_functions(tab, matmul_defs) < 0) return -1;
    return nd_shim_add_methods(tab, matmul_methods);
}
