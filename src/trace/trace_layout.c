/* trace_layout.c -- the memory order NumPy gives the values a graph computes.
 *
 * A proxy's map is over its storage's C-order flat index whatever the
 * memory holds, so values stay right under any layout. The layout still
 * shows in two places: NumPy's view-vs-copy decisions (t.ravel() is a copy
 * when t is Fortran-ordered, a view when it is C-ordered, so writes through
 * it do or do not reach t), and the strides of the arrays handed back to
 * Python. NumPy lays out a new array in order 'K' from its operands: a ufunc
 * of Fortran arrays is Fortran, a ufunc of a.T is a.T-ordered. The shim
 * states which rule an op follows; the storage keeps the resulting order
 * (korder/kperm), nd_proxy_memory_strides answers from it, and a flush
 * asks the backend to return such an output in that order (ND_F_KORDER).
 */
#include "trace_internal.h"
#include "core/strides.h"

static void c_order_strides(int ndim, const npy_intp *shape, npy_intp *out)
{
    npy_intp s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        out[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

int nd__storage_memory_strides(const nd_storage *s, npy_intp *ms)
{
    PyArrayObject *c = s->caller && PyArray_Check(s->caller) ? (PyArrayObject *)s->caller : NULL;
    if (c && PyArray_NDIM(c) == s->ndim && !PyArray_IS_C_CONTIGUOUS(c)) {
        npy_intp isz = PyArray_ITEMSIZE(c);
        for (int d = 0; d < s->ndim; d++) {
            if (PyArray_STRIDE(c, d) % isz) return 1;
            ms[d] = PyArray_STRIDE(c, d) / isz;
        }
        return 0;
    }
    if (!c && s->korder) {
        int perm[ND_MAXDIMS];
        for (int d = 0; d < s->ndim; d++) perm[d] = s->kperm[d];
        nd_perm_strides(s->ndim, s->shape, perm, ms);
        return 0;
    }
    c_order_strides(s->ndim, s->shape, ms);
    return 0;
}

/* s takes the order perm, unless that is C order (then it is plain) */
static void set_perm(nd_storage *s, const int *perm)
{
    npy_intp ms[ND_MAXDIMS];
    nd_perm_strides(s->ndim, s->shape, perm, ms);
    if (nd_c_contiguous(s->ndim, s->shape, ms, 1)) {
        s->korder = 0;
        return;
    }
    s->korder = 1;
    for (int d = 0; d < s->ndim; d++) s->kperm[d] = (int8_t)perm[d];
}

/* the storage of a value the shim just made: computed, whole, unshared */
static nd_storage *fresh_storage(PyObject *res)
{
    if (!res || !nd_proxy_check(res)) return NULL;
    NdProxy *p = (NdProxy *)res;
    nd_storage *s = p->st;
    if (!s || s->caller || s->rebased || !p->identity || p->part || s->ndim != p->ndim ||
        s->ndim < 2)
        return NULL;
    return s;
}

/* dims sorted by decreasing |stride|, stable (an array's own order) */
static void perm_of_strides(int ndim, const npy_intp *st, int *perm)
{
    npy_intp one[1][ND_MAXDIMS];
    for (int d = 0; d < ndim; d++) one[0][d] = st[d];
    nd_korder(1, ndim, (const npy_intp (*)[ND_MAXDIMS])one, 0, perm);
}

void nd__storage_adopt_layout(nd_storage *s, PyObject *arr)
{
    PyArrayObject *a = (PyArrayObject *)arr;
    if (s->caller || s->rebased || PyArray_NDIM(a) != s->ndim || s->ndim < 2 ||
        PyArray_IS_C_CONTIGUOUS(a))
        return;
    npy_intp isz = PyArray_ITEMSIZE(a), st[ND_MAXDIMS], ms[ND_MAXDIMS];
    for (int d = 0; d < s->ndim; d++) {
        if (PyArray_DIM(a, d) != s->shape[d] || PyArray_STRIDE(a, d) % isz) return;
        st[d] = s->shape[d] == 1 ? 0 : PyArray_STRIDE(a, d) / isz;
    }
    int perm[ND_MAXDIMS];
    perm_of_strides(s->ndim, st, perm);
    /* only a dense, forward layout is an order (a reversed view is not) */
    nd_perm_strides(s->ndim, s->shape, perm, ms);
    for (int d = 0; d < s->ndim; d++)
        if (st[d] && st[d] != ms[d]) return;
    set_perm(s, perm);
}

int nd_operand_memory_strides(PyObject *o, int *ndim, const npy_intp **shape, npy_intp *ms)
{
    if (nd_proxy_check(o)) {
        *ndim = nd_proxy_ndim(o);
        *shape = nd_proxy_shape(o);
        if (nd_proxy_memory_strides(o, ms)) { PyErr_Clear(); return 1; }
    } else if (PyArray_Check(o)) {
        PyArrayObject *a = (PyArrayObject *)o;
        *ndim = PyArray_NDIM(a);
        *shape = PyArray_DIMS(a);
        for (int d = 0; d < *ndim; d++) {
            if (PyArray_STRIDE(a, d) % PyArray_ITEMSIZE(a)) return 1;
            ms[d] = PyArray_STRIDE(a, d) / PyArray_ITEMSIZE(a);
        }
    } else {
        return 1;
    }
    for (int d = 0; d < *ndim; d++) if ((*shape)[d] == 1) ms[d] = 0;
    return 0;
}

/* operand o's element strides placed on (ndim, shape) from dim `lead`
 * on (lead < 0: right-aligned, as broadcasting places it), 0 where it
 * carries no order; 1 when o has none to give (a scalar, an odd layout) */
static int operand_strides(PyObject *o, int ndim, const npy_intp *shape, int lead, npy_intp *st)
{
    int ond;
    const npy_intp *osh;
    npy_intp ms[ND_MAXDIMS];
    if (nd_operand_memory_strides(o, &ond, &osh, ms)) return 1;
    if (lead < 0) lead = ndim - ond;
    if (lead + ond > ndim) return 1;
    for (int d = 0; d < ndim; d++) {
        int e = d - lead;
        st[d] = e < 0 || e >= ond || shape[d] == 1 ? 0 : ms[e];
    }
    return 0;
}

void nd_proxy_set_korder_st(PyObject *res, int nfixed, const npy_intp (*fixed)[ND_MAXDIMS],
                            int nops, PyObject *const *ops, int iter)
{
    nd_storage *s = fresh_storage(res);
    if (!s) return;
    int tot = nfixed + nops;
    npy_intp small[4][ND_MAXDIMS];  /* every ufunc: no allocation per op */
    npy_intp (*st)[ND_MAXDIMS] = tot <= 4 ? small : PyMem_Malloc(sizeof(*st) * (size_t)tot);
    if (!st) { PyErr_Clear(); return; }  /* the layout is advisory: C order stands */
    int m = 0, perm[ND_MAXDIMS];
    for (int k = 0; k < nfixed; k++, m++)
        for (int d = 0; d < s->ndim; d++) st[m][d] = s->shape[d] == 1 ? 0 : fixed[k][d];
    for (int k = 0; k < nops; k++)
        if (ops[k] && !operand_strides(ops[k], s->ndim, s->shape, -1, st[m])) m++;
    nd_korder(m, s->ndim, (const npy_intp (*)[ND_MAXDIMS])st, iter, perm);
    if (st != small) PyMem_Free(st);
    set_perm(s, perm);
    if (PyErr_Occurred()) PyErr_Clear();
}

void nd_proxy_set_korder(PyObject *res, int nops, PyObject *const *ops, int iter)
{
    nd_proxy_set_korder_st(res, 0, NULL, nops, ops, iter);
}

void nd_proxy_set_korder_join(PyObject *res, int nops, PyObject *const *ops, int ins_axis)
{
    nd_storage *s = fresh_storage(res);
    if (!s) return;
    npy_intp (*st)[ND_MAXDIMS] = PyMem_Malloc(sizeof(*st) * (size_t)(nops > 0 ? nops : 1));
    if (!st) { PyErr_Clear(); return; }
    int m = 0, nd = s->ndim, perm[ND_MAXDIMS];
    for (int k = 0; k < nops; k++) {
        int ond;
        const npy_intp *osh;
        npy_intp own[ND_MAXDIMS];
        if (nd_operand_memory_strides(ops[k], &ond, &osh, own)) continue;
        int skip = ond == nd - 1 && ins_axis >= 0 && ins_axis < nd ? ins_axis : -1;
        if (ond != nd && skip < 0) continue;
        for (int d = 0, e = 0; d < nd; d++) st[m][d] = d == skip ? 0 : own[e++];
        m++;
    }
    nd_korder(m, nd, (const npy_intp (*)[ND_MAXDIMS])st, 0, perm);
    PyMem_Free(st);
    set_perm(s, perm);
}

void nd_proxy_set_perm(PyObject *res, const int *perm)
{
    nd_storage *s = fresh_storage(res);
    if (s) set_perm(s, perm);
}

void nd_proxy_set_korder_outer(PyObject *res, PyObject *a, PyObject *b)
{
    nd_storage *s = fresh_storage(res);
    if (!s) return;
    int nd = s->ndim, m = 0, na, perm[ND_MAXDIMS];
    const npy_intp *ash;
    npy_intp st[2][ND_MAXDIMS];
    if (nd_operand_memory_strides(a, &na, &ash, st[0])) return;
    m += !operand_strides(a, nd, s->shape, 0, st[m]);
    m += !operand_strides(b, nd, s->shape, na, st[m]);
    nd_korder(m, nd, (const npy_intp (*)[ND_MAXDIMS])st, 1, perm);
    set_perm(s, perm);
}

void nd_proxy_set_korder_reduced(PyObject *res, PyObject *src, uint64_t axes, int keepdims)
{
    nd_storage *s = fresh_storage(res);
    int snd, perm[ND_MAXDIMS], out[ND_MAXDIMS], newd[ND_MAXDIMS], n = 0;
    const npy_intp *ssh;
    npy_intp st[1][ND_MAXDIMS];
    if (!s || nd_operand_memory_strides(src, &snd, &ssh, st[0])) return;
    nd_korder(1, snd, (const npy_intp (*)[ND_MAXDIMS])st, 1, perm);
    for (int d = 0, k = 0; d < snd; d++) newd[d] = keepdims || !(axes >> d & 1) ? k++ : -1;
    for (int i = 0; i < snd; i++)
        if (newd[perm[i]] >= 0) out[n++] = newd[perm[i]];
    if (n == s->ndim) set_perm(s, out);
}

void nd_proxy_set_order(PyObject *res, PyObject *src, char order)
{
    nd_storage *s = fresh_storage(res);
    if (!s) return;
    int perm[ND_MAXDIMS], nd = s->ndim;
    if (order == 'A') {
        /* NumPy's 'A': Fortran when the source is F- and not C-contiguous */
        int snd, c = 1, f = 0;
        const npy_intp *ssh;
        npy_intp st[ND_MAXDIMS], ec = 1, ef = 1;
        if (!nd_operand_memory_strides(src, &snd, &ssh, st) && snd == nd) {
            f = 1;
            for (int d = nd - 1; d >= 0; d--)
                if (ssh[d] > 1) { c &= st[d] == ec; ec *= ssh[d]; }
            for (int d = 0; d < nd; d++)
                if (ssh[d] > 1) { f &= st[d] == ef; ef *= ssh[d]; }
        }
        order = f && !c ? 'F' : 'C';
    }
    if (order == 'K') {
        nd_proxy_set_korder(res, 1, &src, 0);
        return;
    }
    for (int d = 0; d < nd; d++) perm[d] = order == 'F' ? nd - 1 - d : d;
    set_perm(s, perm);
}

void nd__flush_mark_layouts(nd_trace *t, const char *is_target)
{
    nd_graph *g = t->g;
    for (NdProxy *p = t->proxies; p; p = p->next) {
        nd_storage *s = p->st;
        if (s->caller || s->ndim < 2 || !is_target[s->version]) continue;
        nd_node *n = nd_graph_node(g, s->version);
        /* an extern's output is laid out by NumPy itself (adopted after) */
        if (n->value || n->op == ND_OP_INPUT || n->op == ND_OP_SCALAR || n->op == ND_OP_EXTERN ||
            n->ndim != s->ndim || (n->flags & ND_F_KORDER))
            continue;
        /* C order is asked for too: the eager backend's NumPy calls may
         * lay out an intermediate otherwise (a.T * 3 of a Fortran a) */
        n->flags |= ND_F_KORDER;
        for (int d = 0; d < n->ndim; d++) n->kperm[d] = s->korder ? s->kperm[d] : (int8_t)d;
    }
}

void nd__flush_adopt_layouts(nd_trace *t)
{
    nd_graph *g = t->g;
    for (NdProxy *p = t->proxies; p; p = p->next) {
        nd_storage *s = p->st;
        if (s->korder || s->caller || s->rebased) continue;
        nd_node *n = nd_graph_node(g, s->version);
        if (n->value && PyArray_Check(n->value)) nd__storage_adopt_layout(s, n->value);
    }
}
