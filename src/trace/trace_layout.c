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
/* the storage's computed node takes its layout too, so that a kernel
 * materializing it for a NumPy call (`(lr * X.T) @ r`) writes it in
 * NumPy's order, not only when a flush returns it: a C-order buffer of
 * X.T's values is a transposing walk NumPy does not make (its K order keeps
 * X's memory order), 8x slower there. The last layout the shim gives the
 * value is the one that stands. */
static void node_layout(nd_storage *s)
{
    nd_node *n = nd_graph_node(s->trace->g, s->version);
    if (!n || n->value || n->ndim != s->ndim ||
        !(n->op == ND_OP_UFUNC || n->op == ND_OP_CAST || n->op == ND_OP_WHERE))
        return;
    if (!s->korder) {
        n->flags &= ~ND_F_KORDER;
        return;
    }
    n->flags |= ND_F_KORDER;
    for (int d = 0; d < n->ndim; d++) n->kperm[d] = s->kperm[d];
}

static void set_perm(nd_storage *s, const int *perm)
{
    npy_intp ms[ND_MAXDIMS];
    nd_perm_strides(s->ndim, s->shape, perm, ms);
    s->korder = !nd_c_contiguous(s->ndim, s->shape, ms, 1);
    if (s->korder)
        for (int d = 0; d < s->ndim; d++) s->kperm[d] = (int8_t)perm[d];
    node_layout(s);
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
 * carries no order; 1 when o has none to give (a scalar, an odd layout).
 * The iterator's rule (iter) ignores zero strides; the other one
 * (PyArray_CreateMultiSortedStridePerm: copy, astype, *_like) ignores only
 * length-1 dims and sorts a broadcast dim's zero stride as the smallest,
 * innermost (np.broadcast_to(x, (2, 4)).astype(...) is Fortran-ordered):
 * for it strides are doubled and a zero stride becomes 1. */
static int operand_strides(PyObject *o, int ndim, const npy_intp *shape, int lead, npy_intp *st,
                           int iter)
{
    int ond;
    const npy_intp *osh;
    npy_intp ms[ND_MAXDIMS];
    if (nd_operand_memory_strides(o, &ond, &osh, ms)) return 1;
    if (lead < 0) lead = ndim - ond;
    if (lead + ond > ndim) return 1;
    for (int d = 0; d < ndim; d++) {
        int e = d - lead;
        if (e < 0 || e >= ond || shape[d] == 1) st[d] = 0;
        else if (iter) st[d] = ms[e];
        else st[d] = osh[e] == 1 ? 0 : ms[e] ? 2 * ms[e] : 1;
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
        if (ops[k] && !operand_strides(ops[k], s->ndim, s->shape, -1, st[m], iter)) m++;
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
    m += !operand_strides(a, nd, s->shape, 0, st[m], 1);
    m += !operand_strides(b, nd, s->shape, na, st[m], 1);
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
    } else {
        for (int d = 0; d < nd; d++) perm[d] = order == 'F' ? nd - 1 - d : d;
        set_perm(s, perm);
    }
    /* a NumPy call's own result (np.sort, np.partition) takes the order
     * given here, C too: the extern computes it from a copy of the operand
     * (of a strided view, say) whose layout is not the one NumPy sees */
    nd_node *n = nd_graph_node(s->trace->g, s->version);
    if (n && !n->value && n->op == ND_OP_EXTERN && n->ndim == nd) {
        n->flags |= ND_F_KORDER;
        for (int d = 0; d < nd; d++) n->kperm[d] = s->korder ? s->kperm[d] : (int8_t)d;
    }
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

/* ------------------------------------------- the caller arrays' memory order */

int nd_proxy_memory_strides(PyObject *o, npy_intp *out)
{
    NdProxy *p = nd__as_proxy(o);
    if (!p) { PyErr_Clear(); return 1; }
    if (!p->st) {
        PyArrayObject *v = (PyArrayObject *)p->value;
        if (!v || !PyArray_Check(v)) return 1;
        for (int d = 0; d < PyArray_NDIM(v); d++) {
            if (PyArray_STRIDE(v, d) % PyArray_ITEMSIZE(v)) return 1;
            out[d] = PyArray_STRIDE(v, d) / PyArray_ITEMSIZE(v);
        }
        return 0;
    }
    nd_storage *s = p->st;
    npy_intp ms[ND_MAXDIMS], cs[ND_MAXDIMS];
    if (nd__storage_memory_strides(s, ms)) return 1;
    nd_c_strides(s->ndim, s->shape, cs);
    int c_order = 1;
    for (int d = 0; d < s->ndim; d++) c_order &= s->shape[d] <= 1 || ms[d] == cs[d];
    /* .real/.imag of a complex storage step over two of their own elements */
    npy_intp k = p->part ? 2 : 1;
    if (c_order) {
        for (int d = 0; d < p->ndim; d++) out[d] = p->strides[d] * k;
        return 0;
    }
    npy_intp start[ND_MAXDIMS], coef[ND_MAXDIMS][ND_MAXDIMS];
    if (nd__decompose(s->ndim, s->shape, p->ndim, p->shape, p->off, p->strides, start, coef))
        return 1;
    for (int d = 0; d < p->ndim; d++) {
        out[d] = 0;
        for (int e = 0; e < s->ndim; e++) out[d] += coef[d][e] * ms[e] * k;
    }
    return 0;
}

/* The array whose C-order flat index is the base's memory order: the base
 * itself when C-contiguous, else (any other dense layout: Fortran, a
 * permutation, negative strides) a 1-d view of its whole byte extent, so
 * views of it are affine maps of that flat index. NULL with no exception
 * when the base has gaps (views of it stay independent). New ref. */
PyObject *nd__memory_order_base(PyObject *ba)
{
    PyArrayObject *B = (PyArrayObject *)ba;
    if (PyArray_IS_C_CONTIGUOUS(B)) return Py_NewRef(ba);
    npy_intp isz = PyArray_ITEMSIZE(B), n = PyArray_SIZE(B);
    char *lo = PyArray_BYTES(B), *hi = lo;
    for (int d = 0; d < PyArray_NDIM(B); d++) {
        npy_intp st = PyArray_STRIDE(B, d), k = PyArray_DIM(B, d) - 1;
        if (st % isz) return NULL;
        if (st < 0) lo += st * k; else hi += st * k;
    }
    if (n == 0 || hi + isz - lo != n * isz) return NULL;
    PyArray_Descr *dt = PyArray_DESCR(B);
    Py_INCREF(dt);
    int flags = PyArray_ISWRITEABLE(B) ? NPY_ARRAY_WRITEABLE : 0;
    PyObject *m = PyArray_NewFromDescr(&PyArray_Type, dt, 1, &n, NULL, lo, flags, NULL);
    if (!m) { PyErr_Clear(); return NULL; }
    if (PyArray_SetBaseObject((PyArrayObject *)m, Py_NewRef(ba)) < 0) {
        PyErr_Clear();
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

PyObject *nd__caller_proxy(nd_storage *s, int is_scalar)
{
    if (!s->rebased) return nd__proxy_new(s, is_scalar);
    PyArrayObject *c = (PyArrayObject *)s->root;
    NdProxy *p = (NdProxy *)nd__proxy_on(s, PyArray_NDIM(c), PyArray_DIMS(c), s->root_off,
                                         s->root_strides);
    if (p) {
        p->is_scalar = (uint8_t)(is_scalar != 0);
        p->fresh = 0;
    }
    return (PyObject *)p;
}

/* Re-express caller storage s over its caller's memory order, so views
 * NumPy makes from that memory (np.asfortranarray(x).T.reshape(-1)) are
 * affine maps of the storage: s becomes 1-d, its caller the 1-d memory
 * view, its version the memory-order gather of the current value, and
 * every proxy on it gets the equivalent map. Done on demand (the first
 * view that needs it): until then reads of a Fortran array stay plain
 * INPUT nodes. 1 done, 0 not possible (nothing changed), -1 error. */
int nd__rebase_memory(nd_storage *s)
{
    /* a computed value NumPy lays out in K order (trace_layout.c) is
     * re-expressed the same way, over the memory it would have */
    int computed = !s->caller && s->korder;
    if (s->rebased || (!computed && (!s->caller || !PyArray_CheckExact(s->caller)))) return 0;
    PyArrayObject *c = computed ? NULL : (PyArrayObject *)s->caller;
    if (c && (PyArray_NDIM(c) != s->ndim || PyArray_IS_C_CONTIGUOUS(c))) return 0;
    PyObject *M = c ? nd__memory_order_base(s->caller) : NULL;
    if (c && !M) return PyErr_Occurred() ? -1 : 0;
    nd_trace *t = s->trace;
    int nd = s->ndim, rc = 0;
    npy_intp n = 1, ms[ND_MAXDIMS], off0 = 0;
    if (c) {
        npy_intp isz = PyArray_ITEMSIZE(c);
        n = PyArray_SIZE(c);
        off0 = (PyArray_BYTES(c) - PyArray_BYTES((PyArrayObject *)M)) / isz;
        for (int d = 0; d < nd; d++) ms[d] = PyArray_STRIDE(c, d) / isz;
    } else {
        for (int d = 0; d < nd; d++) n *= s->shape[d];
        if (n == 0 || nd__storage_memory_strides(s, ms)) return 0;
    }
    Py_ssize_t np_ = 0;
    for (NdProxy *q = t->proxies; q; q = q->next) np_ += q->st == s;
    npy_intp *noff = PyMem_Malloc(sizeof(npy_intp) * (size_t)(np_ + 1));
    npy_intp (*nstr)[ND_MAXDIMS] = PyMem_Malloc(sizeof(*nstr) * (size_t)(np_ + 1));
    if (!noff || !nstr) { PyErr_NoMemory(); rc = -1; goto done; }
    /* every map first: a proxy whose map has no per-dim form (one that
     * already crosses s's dims) leaves s as it is */
    Py_ssize_t k = 0;
    for (NdProxy *q = t->proxies; q; q = q->next) {
        if (q->st != s) continue;
        npy_intp start[ND_MAXDIMS], coef[ND_MAXDIMS][ND_MAXDIMS];
        if (nd__decompose(nd, s->shape, q->ndim, q->shape, q->off, q->strides, start, coef))
            goto done;
        noff[k] = off0;
        for (int e = 0; e < nd; e++) noff[k] += start[e] * ms[e];
        for (int d = 0; d < q->ndim; d++) {
            nstr[k][d] = 0;
            for (int e = 0; e < nd; e++) nstr[k][d] += coef[d][e] * ms[e];
        }
        k++;
    }
    /* the value in memory order: s's dims by decreasing |stride|, reversed
     * where the stride is negative, then flattened */
    int perm[ND_MAXDIMS];
    for (int d = 0; d < nd; d++) perm[d] = d;
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0 && llabs((long long)ms[perm[j]]) > llabs((long long)ms[perm[j - 1]]); j--) {
            int x = perm[j]; perm[j] = perm[j - 1]; perm[j - 1] = x;
        }
    npy_intp cs[ND_MAXDIMS], wsh[ND_MAXDIMS], wst[ND_MAXDIMS], woff = 0, one = 1;
    nd_c_strides(nd, s->shape, cs);
    for (int i = 0; i < nd; i++) {
        int d = perm[i];
        wsh[i] = s->shape[d];
        wst[i] = ms[d] < 0 ? -cs[d] : cs[d];
        if (ms[d] < 0) woff += (s->shape[d] - 1) * cs[d];
    }
    PyObject *w = nd__proxy_on(s, nd, wsh, woff, wst);
    nd_id g1 = w ? nd__proxy_read_own((NdProxy *)w) : ND_NONE;
    Py_XDECREF(w);
    PyObject *tmp = g1 == ND_NONE ? NULL : nd_proxy_wrap(t, g1, 0);
    PyObject *flat = tmp ? nd__proxy_on(((NdProxy *)tmp)->st, 1, &n, 0, &one) : NULL;
    nd_id g2 = flat ? nd__proxy_read_own((NdProxy *)flat) : ND_NONE;
    Py_XDECREF(flat);
    Py_XDECREF(tmp);
    if (g2 == ND_NONE) { rc = -1; goto done; }
    s->version = g2;
    s->ndim = 1;
    s->shape[0] = n;
    if (computed) {
        s->korder = 0;  /* 1-d: its memory order is its own */
    } else {
        s->rebased = 1;
        s->rebase_version = g2;
        s->root_off = off0;
        memcpy(s->root_strides, ms, sizeof(npy_intp) * (size_t)nd);
        s->root = s->caller;  /* the caller table's key: kept alive */
        s->caller = Py_NewRef(M);
    }
    k = 0;
    for (NdProxy *q = t->proxies; q; q = q->next) {
        if (q->st != s) continue;
        q->off = noff[k];
        if (q->ndim) memcpy(q->strides, nstr[k], sizeof(npy_intp) * q->ndim);
        q->identity = (uint8_t)nd__map_is_identity(s, q->ndim, q->shape, q->off, q->strides) && !q->part;
        q->vnode = q->vver = ND_NONE;
        k++;
    }
    rc = 1;
done:
    PyMem_Free(noff);
    PyMem_Free(nstr);
    Py_XDECREF(M);
    return rc;
}
