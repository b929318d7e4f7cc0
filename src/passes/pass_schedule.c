/* pass_schedule.c -- the scheduler: which nodes get a buffer, how the rest
 * fuse into kernels, the order of steps and when buffers die.
 *
 * Rules (decided from structure only, so a program fits every graph with
 * the same structural key):
 *  - pointwise nodes (ufunc, cast, where, scalar, index, view-of-buffer) are
 *    computed inside the kernel of the node that consumes them;
 *  - a node gets a buffer when it is an output, a reduction/scan/setitem, run
 *    by NumPy (eager), the base of a view or setitem, a broadcast operand
 *    whose own computation is expensive (computed once instead of once per
 *    broadcast element), or consumed by kernels that cannot share a loop;
 *  - pointwise outputs of the same shape that share work become ONE kernel
 *    with several outputs (the shape equality must follow from structure:
 *    same rank and size-1 pattern as the shared node);
 *  - a reduction reads its pointwise producers inline; a scan likewise;
 *  - a setitem writes its region in place into its base's buffer when
 *    nothing else reads that buffer, otherwise into a copy.
 * Nodes without a C form run through nd_eval_node (NumPy), never wrongly.
 */
#include "core/npy.h"
#include "schedule.h"

#define MAXG 8
/* Bounds on one kernel: nodes inlined (generated code size, compile time)
 * and buffers it reads (the runtime passes at most 64 operand pointers).
 * A long chain of 0-d work -- lazy element reads in a scalar loop -- is cut
 * into several kernels instead of one that cannot be built. */
#define KMAX_OPS 40
/* operand pointers a kernel may take (runtime_native.c's and backend_cuda.c's MAXOPS) */
#define ND_KMAX_OPERANDS 64
_Thread_local int nd_schedule_kmax_nodes = 64;
/* A kernel over an array domain may inline up to KMAX_ARRAY_NODES nodes
 * (the GPU's bound): each split of a long pointwise chain writes a buffer
 * and reads it back, and the gradient of a pointwise loss is one -- the
 * backward of Black-Scholes greeks is ~120 pointwise nodes, cut into 15
 * kernels at 64 (2.7x slower than one). nd_schedule_kmax_nodes bounds 0-d
 * domains, the chains of lazy element reads a scalar loop makes. */
#define KMAX_ARRAY_NODES 256

/* set by nd_schedule for a graph whose kernels outgrew their operand
 * pointers at every merging level: a smaller node bound per kernel */
static _Thread_local int tight_nodes;

static int kmax_nodes(const nd_node *domain)
{
    if (tight_nodes) return tight_nodes;
    int k = nd_schedule_kmax_nodes;
    return domain->ndim > 0 && k < KMAX_ARRAY_NODES ? KMAX_ARRAY_NODES : k;
}
_Thread_local int nd_schedule_side_outputs = 1;

typedef struct sched {
    nd_graph *g;
    int n;
    uint8_t *mat, *eager, *freen, *isout;
    int32_t *grp;       /* group of a mat node's kernel / of an inlined node */
    int32_t *parent;    /* union-find over groups */
    nd_id *groot;       /* first root of each group */
    int8_t *gkind;      /* kernel kind of each group */
    int32_t *growg;     /* row group of each group (-1) */
    int32_t *gsize, *gops;  /* per group: nodes inlined, buffers read (upper bound) */
    int32_t *gfr;       /* per group: short reductions inlined (frames) */
    uint8_t *shortr;    /* per node: a short-axis REDUCE computed inline (frames) */
    int ngroups;
    int32_t *rowgrp;    /* per node: row group (pass_rowfuse.c) or -1 */
    nd_id *center;      /* per node: a moment's mean sum (pass_rowfuse.c) or -1 */
    uint8_t *level;     /* per node: ND_ROW_* */
    int32_t *cstart, *clist;   /* consumers, CSR */
    int32_t *rstart;    /* kernel roots per final group, CSR over rlist ... */
    nd_id *rlist;       /* ... in node order (built once: a per-group scan of
                           the graph was quadratic in a loop's statements) */
    int nomerge;
    /* phase scratch (see "the pass" below) */
    int32_t *gsets;     /* per node: up to MAXG groups it is inlined into */
    uint8_t *ng;        /* per node: how many of gsets are set */
    uint8_t *seen;      /* per node: kernel assembly marks, then "ready" */
    int32_t *cost;      /* per node: cost of computing it inline */
    int32_t *kpos;      /* scratch (find_consumers) */
    int32_t *rg2g;      /* per row group: its group */
    int *gk;            /* per group: its kernel, or -1 */
} sched;

static int find(sched *s, int a)
{
    while (s->parent[a] != a) { s->parent[a] = s->parent[s->parent[a]]; a = s->parent[a]; }
    return a;
}

static int node_nin(const nd_node *n) { return n->op == ND_OP_EXTERN ? n->nextra : n->nin; }
static nd_id node_in(const nd_node *n, int k) { return n->op == ND_OP_EXTERN ? n->extra[k] : n->in[k]; }

static int view_of_buffer(nd_graph *g, nd_id i)
{
    nd_node *n = &g->nodes[i];
    return n->op == ND_OP_VIEW && g->nodes[n->in[0]].op != ND_OP_SCALAR;
}

/* 1 when EXTERN node n's result is a new array, never a view of an
 * operand: a ufunc (np.matmul among them) called without out=. An input's
 * view may then be NumPy's view of the caller's array (X.T of X.T @ err:
 * BLAS reads X transposed, where a kernel's copy would be a pass over X
 * per call), since no result can alias the caller's memory through it. */
static int extern_result_fresh(const nd_node *n)
{
    if (n->op != ND_OP_EXTERN || !n->obj || !PyObject_TypeCheck(n->obj, &PyUFunc_Type)) return 0;
    if (!n->attrs || !PyTuple_Check(n->attrs) || PyTuple_GET_SIZE(n->attrs) != 2) return 0;
    PyObject *args = PyTuple_GET_ITEM(n->attrs, 0), *kw = PyTuple_GET_ITEM(n->attrs, 1);
    /* no out= (keywords) and no output operand among the positionals */
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) > ((PyUFuncObject *)n->obj)->nin) return 0;
    return kw == Py_None || (PyTuple_Check(kw) && PyTuple_GET_SIZE(kw) == 0) ||
           (PyDict_Check(kw) && PyDict_GET_SIZE(kw) == 0);
}

static int reduce_ok(nd_graph *g, nd_id i)
{
    nd_node *n = &g->nodes[i];
    if (!nd_emit->dtype_ok(n->dtype) || !nd_emit->dtype_ok(g->nodes[n->in[0]].dtype)) return 0;
    int acc = n->in_dtype[0] >= 0 ? n->in_dtype[0] : n->dtype;
    if (!nd_emit->dtype_ok(acc)) return 0;
    if (n->nin > 1 && n->in[1] >= 0 && g->nodes[n->in[1]].op != ND_OP_SCALAR) return 0;
    if (n->op == ND_OP_REDUCE) return nd_emit->reduce_supported(g, i);
    return nd_emit->scan_supported(g, i);
}

/* the domain shape a consumer c iterates when it reads input slot k */
static void consumer_domain(nd_graph *g, nd_id c, int *rank, const npy_intp **shape)
{
    nd_node *n = &g->nodes[c];
    if (n->op == ND_OP_SETITEM) { *rank = n->vndim; *shape = n->vshape; return; }
    if (n->op == ND_OP_REDUCE || n->op == ND_OP_SCAN) {
        nd_node *a = &g->nodes[n->in[0]];
        *rank = a->ndim; *shape = a->shape; return;
    }
    *rank = n->ndim; *shape = n->shape;
}

/* is node i (right-aligned) broadcast along some dim of the domain? */
static int broadcast_in(nd_graph *g, nd_id i, int rank, const npy_intp *shape)
{
    nd_node *n = &g->nodes[i];
    for (int d = 0; d < rank; d++) {
        int di = d - (rank - n->ndim);
        int one = di < 0 || n->shape[di] == 1;
        if (one && shape[d] != 1) return 1;
    }
    return 0;
}

/* one iteration space: the same sizes, not just the same size-1 dims (the
 * graph key holds the sizes' equality pattern, so this is structure) */
static int same_domain(const nd_node *a, const nd_node *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++) if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

static int new_group(sched *s, nd_id root, int rowg)
{
    int gi = s->ngroups++;
    s->parent[gi] = gi;
    s->groot[gi] = root;
    s->growg[gi] = rowg;
    s->gsize[gi] = 1;
    s->gops[gi] = 1;
    s->gfr[gi] = 0;
    if (rowg >= 0) { s->gkind[gi] = ND_K_ROW; return gi; }
    switch (s->g->nodes[root].op) {
    case ND_OP_REDUCE: s->gkind[gi] = ND_K_REDUCE; break;
    case ND_OP_SCAN: s->gkind[gi] = ND_K_SCAN; break;
    case ND_OP_SETITEM: s->gkind[gi] = ND_K_REGION; break;
    default: s->gkind[gi] = ND_K_POINTWISE; break;
    }
    return gi;
}

static int group_kind(sched *s, int gi) { return s->gkind[gi]; }

/* ------------------------------------------- values outside a frame */
/* Is v, met inside the frame of short reduction r, a value of the frame's
 * outer element: constant along r's short dims and computed from scalars
 * and other short reductions only (no loads: those are indexed over the
 * kernel's domain)? Such a value is computed once per element, before r's
 * unrolled body, not inside it: the row mean of x.var(-1) over narrow rows,
 * so that var's frame reads x - mean without nesting the mean's frame in
 * its own (one pass over x instead of a kernel writing (x - mean) ** 2 and
 * another reading it). A short reduction among them reduces the same dims
 * of an input of r's input's rank, keepdims, so that nd_frame_dim (schedule.h)
 * reads it without its reduced dims. */
static int outer_pure(sched *s, nd_id r, nd_id v, int depth)
{
    nd_graph *g = s->g;
    nd_node *n = &g->nodes[v], *rn = &g->nodes[r], *x = &g->nodes[rn->in[0]];
    if (n->op == ND_OP_SCALAR) return 1;
    if (s->mat[v] || depth > 16) return 0;
    if (n->op == ND_OP_REDUCE)
        return s->shortr[v] && (n->flags & ND_F_KEEPDIMS) && n->ndim == x->ndim && n->axes == rn->axes &&
               (n->nin < 2 || n->in[1] < 0 || g->nodes[n->in[1]].op == ND_OP_SCALAR);
    if (n->op != ND_OP_UFUNC && n->op != ND_OP_CAST && n->op != ND_OP_WHERE) return 0;
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] >= 0 && !outer_pure(s, r, n->in[k], depth + 1)) return 0;
    return 1;
}

static int frame_outer(sched *s, nd_id r, nd_id v)
{
    nd_graph *g = s->g;
    nd_node *n = &g->nodes[v], *rn = &g->nodes[r], *x = &g->nodes[rn->in[0]];
    if (n->op == ND_OP_SCALAR) return 0;  /* a kernel parameter (collect_f) */
    for (int d = 0; d < x->ndim; d++) {
        if (!((rn->axes >> d) & 1) || x->shape[d] == 1) continue;
        int od = d - (x->ndim - n->ndim);
        if (od >= 0 && n->shape[od] != 1) return 0;
    }
    return outer_pure(s, r, v, 0);
}

/* ---------------------------------------------------- kernel assembly */
typedef struct kbuild {
    nd_kop *ops; int nops, capops;
    nd_id *inl; int ninl, capinl;
    nd_id *inlf; int ninlf, capinlf;  /* per inl entry: its frame (-1) */
    nd_id *scal; int nscal, capscal;
    uint8_t *seen;
    nd_id *fseen; int nfseen, capfseen;  /* (node, frame) pairs collected in frames */
    int nfr;
    nd_id fr[ND_MAXFR];
} kbuild;

static int push_id(nd_id **a, int *n, int *cap, nd_id v)
{
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 8;
        nd_id *p = PyMem_Realloc(*a, sizeof(nd_id) * (size_t)c);
        if (!p) { PyErr_NoMemory(); return -1; }
        *a = p; *cap = c;
    }
    (*a)[(*n)++] = v;
    return 0;
}

static int push_inl(kbuild *b, nd_id v, int frame)
{
    if (push_id(&b->inlf, &b->ninlf, &b->capinlf, frame) < 0) return -1;
    return push_id(&b->inl, &b->ninl, &b->capinl, v);
}

static int add_op_f(kbuild *b, nd_id buf, nd_id via, int acc, int dtype, int frame)
{
    for (int i = 0; i < b->nops; i++)
        if (b->ops[i].buf == buf && b->ops[i].via == via && b->ops[i].acc == acc && b->ops[i].frame == frame)
            return 0;
    if (b->nops == b->capops) {
        int c = b->capops ? b->capops * 2 : 8;
        nd_kop *p = PyMem_Realloc(b->ops, sizeof(nd_kop) * (size_t)c);
        if (!p) { PyErr_NoMemory(); return -1; }
        b->ops = p; b->capops = c;
    }
    nd_kop *o = &b->ops[b->nops++];
    memset(o, 0, sizeof *o);
    o->buf = buf; o->via = via; o->acc = (int8_t)acc; o->inner = -1; o->dtype = dtype;
    o->frame = (int8_t)frame;
    for (int t = 0; t < ND_MAXFS; t++) o->fs[t] = ND_FS_RUNTIME;
    return 0;
}

static int add_op(kbuild *b, nd_id buf, nd_id via, int acc, int dtype)
{
    return add_op_f(b, buf, via, acc, dtype, -1);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* walk the value node v and its non-buffer ancestors into the kernel, as
 * computed per element (frame -1) or inside frame `frame` (a short
 * reduction's unrolled body: a node may be computed in several) */
static int collect_f(sched *s, kbuild *b, nd_id v, int is_root, int frame)
{
    nd_graph *g = s->g;
    if (frame >= 0 && frame_outer(s, b->fr[frame], v)) return collect_f(s, b, v, 0, -1);
    if (frame < 0) {
        if (b->seen[v]) return 0;
        b->seen[v] = 1;
    } else {
        nd_id key = v * ND_MAXFR + frame;
        for (int q = 0; q < b->nfseen; q++) if (b->fseen[q] == key) return 0;
        if (push_id(&b->fseen, &b->nfseen, &b->capfseen, key) < 0) return -1;
    }
    nd_node *n = &g->nodes[v];
    if (n->op == ND_OP_SCALAR) {
        int dup = 0;
        for (int q = 0; q < b->nscal; q++) if (b->scal[q] == v) dup = 1;
        if (!dup && push_id(&b->scal, &b->nscal, &b->capscal, v) < 0) return -1;
        return dup ? 0 : push_inl(b, v, -1);
    }
    if (view_of_buffer(g, v) && (is_root || !s->mat[v])) {
        if (add_op_f(b, n->in[0], v, ND_A_VIEW, g->nodes[n->in[0]].dtype, frame) < 0) return -1;
        return push_inl(b, v, frame);
    }
    if (s->mat[v] && !is_root)
        return add_op_f(b, v, v, ND_A_DIRECT, n->dtype, frame);
    if (n->op == ND_OP_REDUCE && s->shortr[v] && !s->mat[v]) {
        /* a short reduction: its input is computed in a frame of its own */
        if (frame >= 0 || b->nfr >= ND_MAXFR) {
            PyErr_SetString(PyExc_SystemError, "numdyn: internal error: short reductions nested or too many");
            return -1;
        }
        int f = b->nfr++;
        b->fr[f] = v;
        if (collect_f(s, b, n->in[0], 0, f) < 0) return -1;
        if (n->nin > 1 && n->in[1] >= 0 && collect_f(s, b, n->in[1], 0, -1) < 0) return -1;
        return push_inl(b, v, -1);
    }
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] >= 0 && collect_f(s, b, n->in[k], 0, frame) < 0) return -1;
    return push_inl(b, v, frame);
}

static int collect(sched *s, kbuild *b, nd_id v, int is_root)
{
    return collect_f(s, b, v, is_root, -1);
}

/* the body in topological order (frame entries of a node next to it) and
 * the frames, into the kernel */
static int finish_inl(kbuild *b, nd_kernel *k)
{
    int64_t *key = PyMem_Malloc(sizeof(int64_t) * (size_t)(b->ninl + 1));
    if (!key) { PyErr_NoMemory(); return -1; }
    for (int i = 0; i < b->ninl; i++) key[i] = (int64_t)b->inl[i] * (ND_MAXFR + 1) + (b->inlf[i] + 1);
    if (b->ninl) qsort(key, (size_t)b->ninl, sizeof(int64_t), cmp_i64);
    k->inlf = PyMem_Malloc((size_t)b->ninl + 1);
    if (!k->inlf) { PyMem_Free(key); PyErr_NoMemory(); return -1; }
    for (int i = 0; i < b->ninl; i++) {
        b->inl[i] = (nd_id)(key[i] / (ND_MAXFR + 1));
        k->inlf[i] = (int8_t)(key[i] % (ND_MAXFR + 1) - 1);
    }
    PyMem_Free(key);
    k->inl = b->inl; b->inl = NULL;
    k->ninl = b->ninl;
    k->nfr = b->nfr;
    memcpy(k->fr, b->fr, sizeof(nd_id) * (size_t)b->nfr);
    PyMem_Free(b->inlf); b->inlf = NULL;
    PyMem_Free(b->fseen); b->fseen = NULL;
    return 0;
}


/* The innermost dim (length > 1) of node m's memory order kperm, or -1
 * when that order is C order over those dims. */
static int korder_inner(const nd_node *m)
{
    if (!(m->flags & ND_F_KORDER)) return -1;
    int last = -1, prev = -1, c_order = 1;
    for (int i = 0; i < m->ndim; i++) {
        int d = m->kperm[i];
        if (d < 0 || d >= m->ndim || m->shape[d] == 1) continue;
        if (d < prev) c_order = 0;
        prev = last = d;
    }
    return c_order ? -1 : last;
}

/* The memory order of a reduction's domain dn when it is known and not C
 * order: dims outermost first into perm, 1; else 0. A Fortran-ordered
 * INPUT (the layout class is part of the program's key; an unaligned or
 * byte-swapped one is copied to C), a value NumPy lays out in order kperm
 * (ND_F_KORDER), a view of a C-ordered INPUT (its element strides are the
 * memory's: `x.T`). */
static int domain_memory_order(const nd_graph *g, const nd_node *dn, int *perm)
{
    int nd = dn->ndim;
    if (dn->flags & ND_F_KORDER) {
        for (int d = 0; d < nd; d++) perm[d] = dn->kperm[d];
        return 1;
    }
    if (dn->op == ND_OP_INPUT && dn->obj && PyArray_Check(dn->obj)) {
        PyArrayObject *a = (PyArrayObject *)dn->obj;
        if (PyArray_IS_C_CONTIGUOUS(a) || !PyArray_IS_F_CONTIGUOUS(a) || !PyArray_ISALIGNED(a) ||
            !PyArray_ISNOTSWAPPED(a))
            return 0;
        for (int d = 0; d < nd; d++) perm[d] = nd - 1 - d;
        return 1;
    }
    if (dn->op == ND_OP_VIEW && dn->in[0] >= 0) {
        const nd_node *b = &g->nodes[dn->in[0]];
        if (b->op != ND_OP_INPUT || !b->obj || !PyArray_Check(b->obj) ||
            !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)b->obj))
            return 0;
        /* by |stride|, largest first; ties keep C order (insertion sort) */
        for (int d = 0; d < nd; d++) {
            int e = d;
            npy_intp sd = dn->vstrides[d] < 0 ? -dn->vstrides[d] : dn->vstrides[d];
            while (e > 0) {
                npy_intp sp = dn->vstrides[perm[e - 1]];
                if ((sp < 0 ? -sp : sp) >= sd) break;
                perm[e] = perm[e - 1];
                e--;
            }
            perm[e] = d;
        }
        return 1;
    }
    return 0;
}

/* NumPy reduces in its iterator's order: the axes sorted by memory, the
 * innermost in memory innermost (nditer), so a Fortran array's column sums
 * are pairwise sums down each contiguous column and its row sums add
 * column after column -- other roundings than C order's. A reduction
 * kernel over such a domain walks that order: NumPy's additions in
 * NumPy's order, at unit stride. Not an arg-reduction over several axes
 * (its ties go to the first C-order flat index). */
static void reduce_memory_order(const nd_graph *g, nd_kernel *k, const nd_node *rn,
                                const nd_node *dn, int drank)
{
    int perm[ND_MAXDIMS], nred = 0;
    if (k->kind != ND_K_REDUCE || k->dom_v || drank != dn->ndim || k->rank < 2 ||
        !domain_memory_order(g, dn, perm))
        return;
    for (int q = 0; q < k->rank; q++) nred += (k->red >> q) & 1;
    if ((rn->sub == ND_RED_ARGMAX || rn->sub == ND_RED_ARGMIN) && nred > 1) return;
    int rank = 0;
    unsigned red = 0;
    int8_t dims[ND_MAXDIMS];
    for (int i = 0; i < drank; i++) {
        int d = perm[i];
        if (d < 0 || d >= drank || dn->shape[d] == 1) continue;
        if (rn->axes & (1ull << d)) red |= 1u << rank;
        dims[rank++] = (int8_t)d;
    }
    if (rank != k->rank) return;  /* not a permutation of the kernel's dims */
    memcpy(k->dims, dims, sizeof(int8_t) * (size_t)rank);
    k->red = red;
}

static int static_inner(sched *s, nd_program *p, nd_kernel *k, nd_kop *op, int drank)
{
    nd_graph *g = s->g;
    if (k->rank == 0) return 0;
    int dl = k->dims[k->rank - 1];
    switch (op->acc) {
    case ND_A_DIRECT: {
        nd_node *m = &g->nodes[op->buf];
        int dm = dl - (drank - m->ndim);
        if (dm < 0 || m->shape[dm] == 1) return 0;
        if (p->kord[op->buf]) return korder_inner(m) == dm ? 1 : -1;
        /* a C-ordered buffer has unit stride along its last long dim only
         * (a kernel walking Fortran order reads it along another) */
        int c_inner = 1, f_inner = 1;
        for (int e = dm + 1; e < m->ndim; e++) c_inner &= m->shape[e] == 1;
        for (int e = 0; e < dm; e++) f_inner &= m->shape[e] == 1;
        if (p->own[op->buf]) return c_inner ? 1 : -1;
        if (m->op == ND_OP_INPUT && m->obj && PyArray_Check(m->obj)) {
            PyArrayObject *a = (PyArrayObject *)m->obj;
            /* the layout class (C, F) is part of the program's key */
            if (PyArray_IS_C_CONTIGUOUS(a)) return c_inner ? 1 : -1;
            /* (the runtime copies an unaligned or byte-swapped one to C) */
            if (PyArray_IS_F_CONTIGUOUS(a) && PyArray_ISALIGNED(a) && PyArray_ISNOTSWAPPED(a))
                return f_inner ? 1 : -1;
        }
        return -1;
    }
    case ND_A_VIEW: {
        nd_node *v = &g->nodes[op->via];
        int dv = dl - (drank - v->ndim);
        if (dv < 0 || v->shape[dv] == 1) return 0;
        if (v->vstrides[dv] == 0) return 0;
        if (v->vstrides[dv] == 1) return 1;
        return -1;
    }
    case ND_A_REGION: {
        nd_node *v = &g->nodes[op->via];
        if (v->vstrides[dl] == 0) return 0;
        return v->vstrides[dl] == 1 ? 1 : -1;
    }
    case ND_A_REDOUT: {
        /* the output is C-ordered over the kept dims: unit stride along the
         * innermost kernel dim when that is the last kept one (a kernel in
         * another memory order, reduce_memory_order, may end on another) */
        if (k->red & (1u << (k->rank - 1))) return 0;
        for (int q = 0; q < k->rank - 1; q++)
            if (!(k->red & (1u << q)) && k->dims[q] > dl) return -1;
        return 1;
    }
    case ND_A_ROWB:
        return (k->red & (1u << (k->rank - 1))) ? 0 : 1;
    }
    return -1;
}

/* The element stride of frame operand `op` along dim sd of its frame's
 * domain (the short reduction r's input) when structure fixes it, else
 * ND_FS_RUNTIME: view maps are structure; a C-ordered buffer's stride is
 * the product of its later dims, fixed when each of them is 1 or a short
 * reduced dim of r (whose extents are in the graph key). */
static int32_t frame_stride(sched *s, nd_program *p, nd_id r, const nd_kop *op, int sd)
{
    nd_graph *g = s->g;
    nd_node *rn = &g->nodes[r], *x = &g->nodes[rn->in[0]];
    if (op->acc == ND_A_VIEW) {
        nd_node *v = &g->nodes[op->via];
        int dv = sd - (x->ndim - v->ndim);
        if (dv < 0 || v->shape[dv] == 1) return 0;
        return (int32_t)v->vstrides[dv];
    }
    if (op->acc != ND_A_DIRECT) return ND_FS_RUNTIME;
    nd_node *m = &g->nodes[op->buf];
    int off = x->ndim - m->ndim;
    int dm = sd - off;
    if (dm < 0 || m->shape[dm] == 1) return 0;
    int c_order = 0;
    if (p->own[op->buf]) c_order = !p->kord[op->buf];
    else if (m->op == ND_OP_INPUT && m->obj && PyArray_Check(m->obj))
        c_order = PyArray_IS_C_CONTIGUOUS((PyArrayObject *)m->obj);
    if (!c_order) return ND_FS_RUNTIME;
    int64_t st = 1;
    for (int e = dm + 1; e < m->ndim; e++) {
        if (m->shape[e] == 1) continue;
        if (!((rn->axes >> (e + off)) & 1)) return ND_FS_RUNTIME;
        st *= m->shape[e];
    }
    return (int32_t)st;
}

/* frame operands: static strides along the short dims and the innermost
 * kernel dim (op->inner up to ND_SHORT_MAX) */
static void frame_statics(sched *s, nd_program *p, nd_kernel *k, nd_kop *op, int drank)
{
    nd_id r = k->fr[op->frame];
    int sd[ND_MAXFS], ns = nd_frame_short(s->g, r, sd, NULL);
    for (int t = 0; t < ns; t++) op->fs[t] = frame_stride(s, p, r, op, sd[t]);
    if (k->rank == 0) { op->inner = 0; return; }
    int fd = nd_frame_dim(s->g, r, drank, k->dims[k->rank - 1]);
    if (fd < 0) { op->inner = 0; return; }
    int32_t st = frame_stride(s, p, r, op, fd);
    op->inner = (int8_t)(st >= 0 && st <= ND_SHORT_MAX ? st : -1);
}

/* The kernel dims along which input `op` is broadcast by structure: size-1
 * dims and zero view strides are part of the graph key (schedule.h). */
static uint32_t static_zero(sched *s, nd_program *p, nd_kernel *k, const nd_kop *op, int drank)
{
    nd_graph *g = s->g;
    uint32_t z = 0;
    for (int q = 0; q < k->rank; q++) {
        int dd = k->dims[q], zero = 0;
        if (op->frame >= 0) {
            int fd = nd_frame_dim(g, k->fr[op->frame], drank, dd);
            zero = fd < 0 || frame_stride(s, p, k->fr[op->frame], op, fd) == 0;
        } else if (op->acc == ND_A_DIRECT) {
            const nd_node *m = &g->nodes[op->buf];
            int dm = dd - (drank - m->ndim);
            zero = dm < 0 || m->shape[dm] == 1;
        } else if (op->acc == ND_A_VIEW) {
            const nd_node *v = &g->nodes[op->via];
            int dv = dd - (drank - v->ndim);
            zero = dv < 0 || v->shape[dv] == 1 || v->vstrides[dv] == 0;
        }
        if (zero) z |= 1u << q;
    }
    return z;
}

/* What a kernel's inlined nodes imply: an INDEX node keeps it from merging
 * with others; the first ufunc that can raise (floor_divide, remainder,
 * fmod, divmod, power) names its error. */
static void note_inlined(nd_graph *g, nd_kernel *k)
{
    for (int i = 0; i < k->ninl; i++) {
        nd_node *n = &g->nodes[k->inl[i]];
        if (n->op == ND_OP_INDEX) k->nomerge = 1;
        if (k->err_uf < 0 && n->op == ND_OP_UFUNC &&
            (n->sub == ND_UF_FLOOR_DIVIDE || n->sub == ND_UF_REMAINDER || n->sub == ND_UF_FMOD ||
             n->sub == ND_UF_DIVMOD || n->sub == ND_UF_POWER))
            k->err_uf = n->sub;
    }
}

static int build_row_kernel(sched *s, nd_program *p, nd_kernel *k, int gi, uint8_t *seen)
{
    nd_graph *g = s->g;
    kbuild b;
    memset(&b, 0, sizeof b);
    b.seen = seen;
    memset(seen, 0, (size_t)s->n);
    int rg = s->growg[gi];
    nd_id *rowv = NULL, *reds = NULL;
    int nrow = 0, caprow = 0, nred = 0, capred = 0;
    memset(k, 0, sizeof *k);
    k->kind = ND_K_ROW;
    k->scan = -1;
    k->err_uf = -1;
    for (nd_id i = 0; i < s->n; i++) if (s->rowgrp[i] == rg) seen[i] = 1;
    int8_t rcent[ND_MAXRED];
    nd_id rdiv[ND_MAXRED];
    for (nd_id i = 0; i < s->n; i++) {
        if (s->rowgrp[i] != rg) continue;
        nd_node *n = &g->nodes[i];
        if (s->center[i] >= 0) {
            /* a moment: computed from its mean's input (its own input,
             * (x - mean) ** 2, reads the group's mean: not inline) */
            nd_id sq = n->in[0], d = g->nodes[sq].in[0], m = g->nodes[d].in[1];   /* (x - m) ** 2 */
            if (nred >= ND_MAXRED) {
                PyErr_SetString(PyExc_SystemError, "numdyn: internal error: too many reductions");
                goto fail;
            }
            rdiv[nred] = g->nodes[m].in[1];
            rcent[nred] = -1;
            for (int q = 0; q < nred; q++) if (reds[q] == s->center[i]) rcent[nred] = (int8_t)q;
            if (rcent[nred] < 0 || collect(s, &b, rdiv[nred], 0) < 0) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_SystemError, "numdyn: internal error: a moment before its mean");
                goto fail;
            }
            if (push_id(&reds, &nred, &capred, i) < 0) goto fail;
            continue;
        }
        for (int q = 0; q < n->nin; q++)
            if (n->in[q] >= 0 && s->rowgrp[n->in[q]] != rg && collect(s, &b, n->in[q], 0) < 0) goto fail;
        if (n->op == ND_OP_REDUCE) {
            if (!nred) { k->root = i; k->dom = n->in[0]; }
            if (nred < ND_MAXRED) { rcent[nred] = -1; rdiv[nred] = -1; }
            if (push_id(&reds, &nred, &capred, i) < 0) goto fail;
        } else if (s->level[i] == ND_ROW_DOMAIN) {
            if (push_inl(&b, i, -1) < 0) goto fail;
        } else {
            if (push_id(&rowv, &nrow, &caprow, i) < 0) goto fail;
        }
    }
    nd_node *rn = &g->nodes[k->root], *dn = &g->nodes[k->dom];
    for (int d = 0; d < dn->ndim; d++) {
        if (dn->shape[d] == 1) continue;
        if (rn->axes & (1ull << d)) k->red |= 1u << k->rank;
        k->dims[k->rank++] = (int8_t)d;
    }
    /* reductions and only row values after them: a reduction kernel with
     * an epilogue (it may vectorize across rows when rows are short); so
     * too when the innermost dim is kept, its domain values side outputs
     * (pass_rowfuse.c ND_ROW_SIDE) stored from the one walk */
    int ndomain = 0;
    for (int i = 0; i < b.ninl; i++) if (s->rowgrp[b.inl[i]] == rg) ndomain++;
    if (ndomain == 0 || (k->rank && !(k->red & (1u << (k->rank - 1)))))
        k->kind = ND_K_REDUCE;   /* several: horizontal (one pass) */
    int nin = b.nops;
    for (nd_id i = 0; i < s->n; i++) {
        if (s->rowgrp[i] != rg || !p->mat[i]) continue;
        int acc = s->level[i] == ND_ROW_B ? ND_A_ROWB : ND_A_DIRECT;
        if (k->kind == ND_K_REDUCE && i == k->root) acc = ND_A_REDOUT;
        if (add_op(&b, i, i, acc, g->nodes[i].dtype) < 0) goto fail;
    }
    k->nin = nin;
    k->nout = b.nops - nin;
    k->ops = b.ops; b.ops = NULL;
    k->oval = PyMem_Malloc(sizeof(nd_id) * ((size_t)k->nout + 1));
    if (!k->oval) { PyErr_NoMemory(); goto fail; }
    if (finish_inl(&b, k) < 0) goto fail;
    for (int o = 0; o < k->nin + k->nout; o++) {
        if (o >= nin) k->oval[o - nin] = k->ops[o].buf;
        if (k->ops[o].frame >= 0) frame_statics(s, p, k, &k->ops[o], dn->ndim);
        else k->ops[o].inner = (int8_t)static_inner(s, p, k, &k->ops[o], dn->ndim);
        if (o < nin) k->ops[o].zero = static_zero(s, p, k, &k->ops[o], dn->ndim);
    }
    k->scal = b.scal; k->nscal = b.nscal;
    k->rowv = rowv; k->nrow = nrow;
    k->reds = reds; k->nred = nred;
    for (int q = 0; q < nred && q < ND_MAXRED; q++) {
        if (rcent[q] < 0) continue;
        if (k->kind != ND_K_REDUCE) {
            PyErr_SetString(PyExc_SystemError, "numdyn: internal error: a moment in a row kernel");
            return -1;
        }
        if (!k->rcent) {
            k->rcent = PyMem_Malloc((size_t)nred);
            k->rdiv = PyMem_Malloc(sizeof(nd_id) * (size_t)nred);
            if (!k->rcent || !k->rdiv) { PyErr_NoMemory(); return -1; }
            memcpy(k->rcent, rcent, (size_t)nred);
            memcpy(k->rdiv, rdiv, sizeof(nd_id) * (size_t)nred);
        }
    }
    note_inlined(g, k);
    return 0;
fail:
    PyMem_Free(b.ops); PyMem_Free(b.inl); PyMem_Free(b.scal);
    PyMem_Free(b.inlf); PyMem_Free(b.fseen);
    PyMem_Free(rowv); PyMem_Free(reds);
    return -1;
}

static int build_kernel(sched *s, nd_program *p, nd_kernel *k, int gi, uint8_t *seen)
{
    if (s->gkind[gi] == ND_K_ROW) return build_row_kernel(s, p, k, gi, seen);
    nd_graph *g = s->g;
    kbuild b;
    memset(&b, 0, sizeof b);
    b.seen = seen;
    memset(seen, 0, (size_t)s->n);
    nd_id *roots = NULL;
    int nroots = 0, caproots = 0;
    for (int32_t q = s->rstart[gi]; q < s->rstart[gi + 1]; q++)
        if (push_id(&roots, &nroots, &caproots, s->rlist[q]) < 0) goto fail;
    memset(k, 0, sizeof *k);
    k->kind = group_kind(s, gi);
    k->root = roots[0];
    k->scan = -1;
    k->err_uf = -1;
    nd_node *rn = &g->nodes[k->root];
    int drank;
    const npy_intp *dshape;
    if (k->kind == ND_K_POINTWISE) {
        k->dom = k->root;
        for (int r = 0; r < nroots; r++) if (collect(s, &b, roots[r], 1) < 0) goto fail;
    } else if (k->kind == ND_K_REGION) {
        k->dom = k->root;
        k->dom_v = 1;
        if (collect(s, &b, rn->in[1], 0) < 0) goto fail;
    } else {
        k->dom = rn->in[0];
        if (collect(s, &b, rn->in[0], 0) < 0) goto fail;
        if (rn->nin > 1 && rn->in[1] >= 0 && collect(s, &b, rn->in[1], 0) < 0) goto fail;
    }
    nd_node *dn = &g->nodes[k->dom];
    drank = k->dom_v ? dn->vndim : dn->ndim;
    dshape = k->dom_v ? dn->vshape : dn->shape;
    for (int d = 0; d < drank; d++) {
        if (dshape[d] == 1) continue;
        if (k->kind == ND_K_REDUCE && (rn->axes & (1ull << d))) k->red |= 1u << k->rank;
        if (k->kind == ND_K_SCAN && d == (rn->aux < 0 ? rn->aux + drank : rn->aux)) k->scan = k->rank;
        k->dims[k->rank++] = (int8_t)d;
    }
    reduce_memory_order(g, k, rn, dn, drank);
    if (k->kind == ND_K_POINTWISE) {
        /* outputs NumPy lays out in another memory order are allocated in
         * it; when they all agree, the loops walk that order (a ufunc of
         * Fortran arrays: unit strides everywhere) */
        int agree = 1;
        for (int r = 0; r < nroots; r++) {
            nd_node *m = &g->nodes[roots[r]];
            agree &= p->kord[roots[r]] && m->ndim == rn->ndim &&
                     memcmp(m->kperm, rn->kperm, sizeof m->kperm) == 0;
        }
        if (agree && drank == rn->ndim) {
            k->rank = 0;
            for (int i = 0; i < drank; i++) {
                int d = rn->kperm[i];
                if (dshape[d] != 1) k->dims[k->rank++] = (int8_t)d;
            }
        }
    }
    /* outputs after the inputs */
    int nin = b.nops;
    if (k->kind == ND_K_POINTWISE) {
        for (int r = 0; r < nroots; r++)
            if (add_op(&b, roots[r], roots[r], ND_A_DIRECT, g->nodes[roots[r]].dtype) < 0) goto fail;
    } else if (k->kind == ND_K_REGION) {
        if (add_op(&b, k->root, k->root, ND_A_REGION, rn->dtype) < 0) goto fail;
    } else if (k->kind == ND_K_REDUCE) {
        if (add_op(&b, k->root, k->root, ND_A_REDOUT, rn->dtype) < 0) goto fail;
    } else {
        if (add_op(&b, k->root, k->root, ND_A_DIRECT, rn->dtype) < 0) goto fail;
    }
    k->nin = nin;
    k->nout = b.nops - nin;
    k->ops = b.ops; b.ops = NULL;
    k->oval = PyMem_Malloc(sizeof(nd_id) * (size_t)k->nout);
    if (!k->oval) { PyErr_NoMemory(); goto fail; }
    for (int o = 0; o < k->nout; o++) {
        nd_kop *op = &k->ops[nin + o];
        k->oval[o] = k->kind == ND_K_REGION ? rn->in[1] : op->buf;
        op->inner = (int8_t)static_inner(s, p, k, op, drank);
    }
    if (finish_inl(&b, k) < 0) goto fail;
    for (int o = 0; o < nin; o++) {
        if (k->ops[o].frame >= 0) frame_statics(s, p, k, &k->ops[o], drank);
        else k->ops[o].inner = (int8_t)static_inner(s, p, k, &k->ops[o], drank);
        k->ops[o].zero = static_zero(s, p, k, &k->ops[o], drank);
    }
    k->scal = b.scal; b.scal = NULL;
    k->nscal = b.nscal;
    note_inlined(g, k);
    PyMem_Free(roots);
    return 0;
fail:
    PyMem_Free(roots);
    PyMem_Free(b.ops);
    PyMem_Free(b.inl);
    PyMem_Free(b.scal);
    PyMem_Free(b.inlf);
    PyMem_Free(b.fseen);
    return -1;
}

static void kernel_clear(nd_kernel *k)
{
    PyMem_Free(k->ops);
    PyMem_Free(k->oval);
    PyMem_Free(k->scal);
    PyMem_Free(k->inl);
    PyMem_Free(k->rowv);
    PyMem_Free(k->reds);
    PyMem_Free(k->rcent);
    PyMem_Free(k->rdiv);
    PyMem_Free(k->inlf);
}

void nd_program_free(nd_program *p)
{
    if (!p) return;
    for (int i = 0; i < p->nkern; i++) kernel_clear(&p->kerns[i]);
    PyMem_Free(p->kerns);
    PyMem_Free(p->steps);
    PyMem_Free(p->mat);
    PyMem_Free(p->own);
    PyMem_Free(p->kord);
    PyMem_Free(p->take);
    PyMem_Free(p->take_in);
    PyMem_Free(p->last);
    PyMem_Free(p->isout);
    PyMem_Free(p->freeat);
    PyMem_Free(p->freen);
    PyMem_Free(p->outs);
    if (p->run && p->run_free) p->run_free(p->run);
    PyMem_Free(p);
}

void nd_program_decref(nd_program *p)
{
    if (p && --p->refcnt == 0) nd_program_free(p);
}

/* ------------------------------------------------------------- the pass */
/* The flat element range [lo, hi] an affine map (offset, strides over
 * shape; element units) touches; 0 when it touches nothing. */
static int affine_span(npy_intp off, int nd, const npy_intp *shape, const npy_intp *strides,
                       npy_intp *lo, npy_intp *hi)
{
    *lo = *hi = off;
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 0) return 0;
        npy_intp e = (shape[d] - 1) * strides[d];
        if (e < 0) *lo += e; else *hi += e;
    }
    return 1;
}

/* May SETITEM `set`'s region kernel k write into its base's own array?
 * Its elements are computed in parallel, each read before its own store:
 * every read of the base must be either the very element being stored
 * (the same affine map over the region) or outside the region. */
static int region_reads_in_place(nd_graph *g, const nd_kernel *k, nd_id set)
{
    const nd_node *sn = &g->nodes[set];
    nd_id base = sn->in[0];
    if (k->kind != ND_K_REGION || k->root != set) return 0;
    npy_intp rlo, rhi;
    if (!affine_span(sn->voff, sn->vndim, sn->vshape, sn->vstrides, &rlo, &rhi)) return 1;
    for (int o = 0; o < k->nin; o++) {
        const nd_kop *op = &k->ops[o];
        if (op->buf != base) continue;
        if (op->acc != ND_A_VIEW) return 0;
        const nd_node *v = &g->nodes[op->via];
        if (v->op != ND_OP_VIEW || v->in[0] != base || (v->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG)))
            return 0;
        if (v->ndim == sn->vndim && v->voff == sn->voff &&
            memcmp(v->shape, sn->vshape, sizeof(npy_intp) * v->ndim) == 0 &&
            memcmp(v->vstrides, sn->vstrides, sizeof(npy_intp) * v->ndim) == 0)
            continue;  /* the element itself */
        npy_intp lo, hi;
        if (affine_span(v->voff, v->ndim, v->shape, v->vstrides, &lo, &hi) && hi >= rlo && lo <= rhi)
            return 0;
    }
    return 1;
}

/* The pass runs as named phases over one sched (a phase returns 0, or -1
 * with an exception set; order_steps returns 1 when the kernel order it
 * finds is invalid and the caller retries without merging):
 *
 *   find_consumers        consumers of every node (CSR)
 *   classify              which nodes need a buffer, run eagerly, or are free
 *   find_row_groups       row fusion (pass_rowfuse.c): members of a row group
 *                         get a buffer only when read outside it
 *   buffer_broadcasts     broadcast operands with an expensive computation
 *                         get a buffer (computed once, not per element)
 *   group_kernels         groups of nodes that share a loop, from the outputs
 *                         back (merging pointwise groups of one domain)
 *   build_kernels         one nd_kernel per group and its operands
 *   order_steps           steps in order, each once what it reads is ready
 *   plan_buffers          lifetimes (last use, what to free after each step)
 *                         and setitems that may write their base in place
 */

/* per node: up to MAXG groups (scratch of group_kernels) */
#define GSETS(s, i) ((s)->gsets + (size_t)(i) * MAXG)

static int find_consumers(sched *s, const nd_id *outs, int nout)
{
    nd_graph *g = s->g;
    int n = s->n;
    int ncons = 0;
    for (nd_id i = 0; i < n; i++) {
        nd_node *nn = &g->nodes[i];
        for (int k = 0; k < node_nin(nn); k++) if (node_in(nn, k) >= 0) { s->cstart[node_in(nn, k) + 1]++; ncons++; }
    }
    for (int i = 0; i < n; i++) s->cstart[i + 1] += s->cstart[i];
    s->clist = PyMem_Malloc(sizeof(int32_t) * (size_t)(ncons + 1));
    if (!s->clist) { PyErr_NoMemory(); return -1; }
    {
        int32_t *fill = s->kpos;  /* scratch */
        for (int i = 0; i < n; i++) fill[i] = s->cstart[i];
        for (nd_id i = 0; i < n; i++) {
            nd_node *nn = &g->nodes[i];
            for (int k = 0; k < node_nin(nn); k++) {
                nd_id in = node_in(nn, k);
                if (in >= 0) s->clist[fill[in]++] = i;
            }
        }
    }
    for (int i = 0; i < nout; i++) { s->isout[outs[i]] = 1; s->mat[outs[i]] = 1; }
    return 0;
}

static void classify(sched *s)
{
    nd_graph *g = s->g;
    int n = s->n;
    for (nd_id i = 0; i < n; i++) {
        nd_node *nn = &g->nodes[i];
        int eg = 0;
        switch (nn->op) {
        case ND_OP_INPUT: s->mat[i] = 1; break;
        case ND_OP_SCALAR: s->freen[i] = nd_emit->dtype_ok(nn->dtype); eg = !s->freen[i]; break;
        case ND_OP_INDEX: s->freen[i] = nd_emit->supported(g, i); eg = !s->freen[i]; break;
        case ND_OP_VIEW:
            if (!nd_emit->supported(g, i)) { eg = 1; break; }
            s->freen[i] = 1;
            if (g->nodes[nn->in[0]].op != ND_OP_SCALAR) s->mat[nn->in[0]] = 1;
            break;
        case ND_OP_UFUNC: case ND_OP_CAST: case ND_OP_WHERE:
            eg = !nd_emit->supported(g, i);
            break;
        case ND_OP_REDUCE: case ND_OP_SCAN:
            if (!reduce_ok(g, i)) eg = 1;
            else s->mat[i] = 1;
            break;
        case ND_OP_SETITEM:
            if (!nd_emit->dtype_ok(nn->dtype) || !nd_emit->dtype_ok(g->nodes[nn->in[1]].dtype)) eg = 1;
            else { s->mat[i] = 1; s->mat[nn->in[0]] = 1; }
            break;
        default:
            eg = 1;
        }
        if (eg) {
            s->eager[i] = 1;
            s->mat[i] = 1;
            s->freen[i] = 0;
            for (int k = 0; k < node_nin(nn); k++) if (node_in(nn, k) >= 0) s->mat[node_in(nn, k)] = 1;
        }
    }
    /* A view of a kernel's buffer read only by NumPy steps (an extern's
     * operand: Xc.T of Xc.T @ Xc) is made by NumPy as well, a view of the
     * buffer's array, as the eager backend does: not copied by a kernel (a
     * pass over memory), and NumPy's matmul then sees both operands in one
     * buffer and runs one syrk instead of a gemm. Consumers have higher
     * ids: a view of such a view follows. Not for inputs' views (an
     * extern's result would then alias the caller's array where it did
     * not) nor outputs (their layout is the kernels'). */
    for (nd_id i = n - 1; i >= 0; i--) {
        nd_node *nn = &g->nodes[i];
        if (s->eager[i] || s->isout[i] || !view_of_buffer(g, i)) continue;
        int of_input = g->nodes[nn->in[0]].op == ND_OP_INPUT;
        int only = s->cstart[i + 1] > s->cstart[i];
        for (int32_t q = s->cstart[i]; q < s->cstart[i + 1] && only; q++) {
            nd_id c = s->clist[q];
            if (!s->eager[c] || (of_input && !extern_result_fresh(&g->nodes[c]))) only = 0;
        }
        if (!only) continue;
        s->eager[i] = 1;
        s->mat[i] = 1;
    }
    for (nd_id i = 0; i < n; i++) if (s->mat[i]) s->freen[i] = 0;
}

/* A reduction whose reduced dims hold at most ND_SHORT_MAX elements (and
 * at least 2; extents are in the graph key) is computed inline, unrolled,
 * in its consumer's loop (a frame, see schedule.h) instead of getting a
 * kernel and buffer: norm(X - m[:, None], axis=2) over 2 coordinates feeds
 * argmin without a (k, n) intermediate. Not when its value is broadcast
 * back over its own input domain (x - x.sum(-1, keepdims=True): row fusion
 * computes that once per row), when it holds another short reduction's
 * unrolled body, or when a consumer needs it as an array (views, setitem
 * bases, NumPy steps). */
static int short_candidate(sched *s, nd_id i)
{
    nd_graph *g = s->g;
    nd_node *nn = &g->nodes[i];
    if (nn->op != ND_OP_REDUCE || s->eager[i] || s->isout[i]) return 0;
    nd_node *x = &g->nodes[nn->in[0]];
    int64_t prod = 1;
    for (int d = 0; d < x->ndim; d++)
        if ((nn->axes >> d) & 1) prod *= x->shape[d];
    if (prod < 2 || prod > ND_SHORT_MAX) return 0;
    if (nd_frame_short(g, i, NULL, NULL) > ND_MAXFS) return 0;
    int acc = nn->in_dtype[0] >= 0 ? nn->in_dtype[0] : nn->dtype;
    if (acc == NPY_HALF || PyTypeNum_ISCOMPLEX(acc) || PyTypeNum_ISCOMPLEX(x->dtype)) return 0;
    for (int q = s->cstart[i]; q < s->cstart[i + 1]; q++) {
        nd_id c = s->clist[q];
        nd_node *cn = &g->nodes[c];
        if (s->eager[c] || cn->op == ND_OP_VIEW || cn->op == ND_OP_EXTERN) return 0;
        if (cn->op == ND_OP_SETITEM && cn->in[0] == i) return 0;
    }
    return 1;
}

/* Does short candidate i's unrolled body hold another short reduction's
 * (a frame inside a frame), values outside its frame (frame_outer) aside? */
static int body_nests(sched *s, nd_id i)
{
    nd_graph *g = s->g;
    nd_id stack[256], seen[512];
    int sp = 0, ns = 0;
    stack[sp++] = g->nodes[i].in[0];
    while (sp) {
        nd_id v = stack[--sp];
        int dup = 0;
        for (int q = 0; q < ns && !dup; q++) dup = seen[q] == v;
        if (dup) continue;
        if (ns == 512) return 1;
        seen[ns++] = v;
        nd_node *n = &g->nodes[v];
        if (s->mat[v] || n->op == ND_OP_SCALAR || n->op == ND_OP_EXTERN || frame_outer(s, i, v)) continue;
        if (n->op == ND_OP_REDUCE && s->shortr[v]) return 1;
        for (int k = 0; k < n->nin; k++) {
            if (n->in[k] < 0) continue;
            if (sp == 256) return 1;
            stack[sp++] = n->in[k];
        }
    }
    return 0;
}

/* A keepdims short reduction i broadcast back over its own input domain
 * (x - x.mean(-1, keepdims=True)) whose every value over that domain feeds
 * only short reductions of the same dims (((x - m) ** 2).mean(-1): the
 * variance of narrow rows) may be inline as well: those reductions read it
 * as a value outside their frames (frame_outer), computed once per row,
 * and no full-domain value is ever computed with it. dep: scratch. */
static int back_reduced(sched *s, nd_id i, uint8_t *dep)
{
    nd_graph *g = s->g;
    nd_node *nn = &g->nodes[i], *x = &g->nodes[nn->in[0]];
    if (!(nn->flags & ND_F_KEEPDIMS) || nn->ndim != x->ndim) return 0;
    int ok = 1;
    memset(dep + i, 0, (size_t)(s->n - i));
    dep[i] = 1;
    for (nd_id j = i + 1; j < s->n && ok; j++) {
        nd_node *jn = &g->nodes[j];
        if (jn->op == ND_OP_EXTERN) continue;
        for (int k = 0; k < jn->nin; k++) if (jn->in[k] >= 0 && dep[jn->in[k]]) dep[j] = 1;
        if (!dep[j] || jn->ndim != x->ndim || memcmp(jn->shape, x->shape, sizeof(npy_intp) * (size_t)x->ndim))
            continue;
        if (s->isout[j] || s->eager[j] ||
            (jn->op != ND_OP_UFUNC && jn->op != ND_OP_CAST && jn->op != ND_OP_WHERE)) { ok = 0; break; }
        for (int q = s->cstart[j]; q < s->cstart[j + 1] && ok; q++) {
            nd_id c = s->clist[q];
            nd_node *cn = &g->nodes[c];
            if (cn->op == ND_OP_REDUCE && cn->in[0] == j && cn->axes == nn->axes &&
                !(cn->flags & ND_F_KEEPDIMS) && short_candidate(s, c))
                continue;
            /* another full-domain value: checked in its turn */
            if (cn->ndim == x->ndim && memcmp(cn->shape, x->shape, sizeof(npy_intp) * (size_t)x->ndim) == 0 &&
                cn->op != ND_OP_REDUCE)
                continue;
            ok = 0;
        }
    }
    memset(dep + i, 0, (size_t)(s->n - i));
    return ok;
}

static int find_short(sched *s)
{
    nd_graph *g = s->g;
    int n = s->n;
    uint8_t *has = s->seen;   /* scratch: the node holds a candidate's body */
    uint8_t *dep = s->ng;     /* scratch: depends on the candidate */
    memset(has, 0, (size_t)n + 1);
    for (nd_id i = 0; i < n; i++) {
        nd_node *nn = &g->nodes[i];
        int inner = 0;
        if (nn->op != ND_OP_EXTERN)
            for (int k = 0; k < nn->nin; k++)
                if (nn->in[k] >= 0 && !s->mat[nn->in[k]] && has[nn->in[k]]) inner = 1;
        int cand = short_candidate(s, i), outer = 0;
        if (inner && cand && !body_nests(s, i)) inner = 0, outer = 1;
        if (!inner && cand) {
            /* its value broadcast back over its input domain? */
            nd_node *x = &g->nodes[nn->in[0]];
            int back = 0;
            memset(dep + i, 0, (size_t)(n - i));
            dep[i] = 1;
            for (nd_id j = i + 1; j < n && !back; j++) {
                nd_node *jn = &g->nodes[j];
                if (jn->op == ND_OP_EXTERN) continue;
                for (int k = 0; k < jn->nin; k++) if (jn->in[k] >= 0 && dep[jn->in[k]]) dep[j] = 1;
                if (dep[j] && jn->ndim == x->ndim &&
                    memcmp(jn->shape, x->shape, sizeof(npy_intp) * (size_t)x->ndim) == 0)
                    back = 1;
            }
            if (back && back_reduced(s, i, dep)) back = 0;
            /* 2: its frame reads values outside it (see group_kernels) */
            if (!back) { s->shortr[i] = (uint8_t)(outer ? 2 : 1); s->mat[i] = 0; }
        }
        has[i] = (uint8_t)(inner || s->shortr[i]);
    }
    memset(dep, 0, (size_t)n + 1);
    memset(has, 0, (size_t)n + 1);
    return 0;
}

static int find_row_groups(sched *s, int allow_rows, int allow_horiz)
{
    nd_graph *g = s->g;
    int n = s->n;
    int nrg = 0;
    if (allow_rows) {
        int horiz = allow_horiz ? 1 | (nd_schedule_side_outputs ? ND_ROW_SIDE : 0) : 0;
        nrg = nd_rowfuse_find(g, s->rowgrp, s->level, s->shortr, horiz, s->center, s->isout);
        if (nrg < 0) return -1;
    } else {
        for (nd_id i = 0; i < n; i++) { s->rowgrp[i] = -1; s->center[i] = -1; }
    }
    if (nrg > 0) {
        s->rg2g = PyMem_Malloc(sizeof(int32_t) * (size_t)nrg);
        if (!s->rg2g) { PyErr_NoMemory(); return -1; }
        for (int q = 0; q < nrg; q++) s->rg2g[q] = -1;
        for (nd_id i = 0; i < n; i++) {
            if (s->rowgrp[i] < 0) continue;
            int m = s->isout[i];
            for (int q = s->cstart[i]; q < s->cstart[i + 1]; q++)
                if (s->rowgrp[s->clist[q]] != s->rowgrp[i]) m = 1;
            s->mat[i] = (uint8_t)m;
            s->freen[i] = 0;
        }
    }
    return 0;
}

static void buffer_broadcasts(sched *s)
{
    nd_graph *g = s->g;
    int n = s->n;
    int32_t *cost = s->cost;
    for (nd_id i = 0; i < n; i++) {
        nd_node *nn = &g->nodes[i];
        if (s->mat[i] || s->freen[i] || s->rowgrp[i] >= 0) { cost[i] = 0; continue; }
        int c = nd_emit->cost(g, i);
        for (int k = 0; k < nn->nin; k++) if (nn->in[k] >= 0) c += cost[nn->in[k]];
        cost[i] = c > 100000 ? 100000 : c;
    }
    for (nd_id c = 0; c < n; c++) {
        nd_node *cn = &g->nodes[c];
        if (s->eager[c] || cn->op == ND_OP_INPUT || view_of_buffer(g, c)) continue;
        int rank;
        const npy_intp *shape;
        consumer_domain(g, c, &rank, &shape);
        for (int k = 0; k < cn->nin; k++) {
            nd_id i = cn->in[k];
            if (i < 0 || s->mat[i] || s->freen[i] || s->rowgrp[i] >= 0 || cost[i] < 20) continue;
            if (broadcast_in(g, i, rank, shape)) s->mat[i] = 1;
        }
    }
}

/* Is input k of node i a buffer the groups in set already count among
 * their operands -- an earlier input of i, or read by a node already placed
 * in one of them? A kernel passes each buffer once, however many of its
 * nodes read it: counted per read, an input read by 40 nodes of a chain (x
 * in every step of `y = (y * 0.5 + x) * y`, or a loss's inputs throughout
 * its backward) filled KMAX_OPS and cut the chain into kernels reading
 * each other's buffers. Groups merged later add their counts (an upper
 * bound). */
static int operand_counted(sched *s, nd_id i, int k, const int32_t *set, int cnt)
{
    nd_graph *g = s->g;
    nd_node *nn = &g->nodes[i];
    nd_id in = node_in(nn, k);
    for (int j = 0; j < k; j++) if (node_in(nn, j) == in) return 1;
    for (int q = s->cstart[in]; q < s->cstart[in + 1]; q++) {
        nd_id c = s->clist[q];
        if (c <= i) continue;  /* placed later (the walk goes from the outputs back) */
        int add[MAXG], na = 0;
        if (s->mat[c]) {
            if (s->eager[c] || g->nodes[c].op == ND_OP_INPUT || s->grp[c] < 0) continue;
            add[na++] = find(s, s->grp[c]);
        } else if (!s->freen[c]) {
            for (int t = 0; t < s->ng[c]; t++) add[na++] = find(s, GSETS(s, c)[t]);
        }
        for (int t = 0; t < na; t++)
            for (int u = 0; u < cnt; u++) if (find(s, set[u]) == add[t]) return 1;
    }
    return 0;
}

static void group_kernels(sched *s, int allow_merge)
{
    nd_graph *g = s->g;
    int n = s->n;
    uint8_t *ng = s->ng;
    for (nd_id i = n - 1; i >= 0; i--) {
        nd_node *nn = &g->nodes[i];
        if (s->rowgrp[i] >= 0) {
            int rg = s->rowgrp[i];
            if (s->rg2g[rg] < 0) s->rg2g[rg] = new_group(s, i, rg);
            if (s->mat[i]) s->grp[i] = s->rg2g[rg];
            else { GSETS(s, i)[0] = s->rg2g[rg]; ng[i] = 1; }
            continue;
        }
        if (s->mat[i]) {
            if (!s->eager[i] && nn->op != ND_OP_INPUT) s->grp[i] = new_group(s, i, -1);
            continue;
        }
        if (s->freen[i]) continue;
        int cnt = 0;
        int32_t set[MAXG * 4];
        int overflow = 0;
        for (int q = s->cstart[i]; q < s->cstart[i + 1]; q++) {
            nd_id c = s->clist[q];
            int add[MAXG], na = 0;
            if (s->mat[c]) {
                if (s->eager[c] || g->nodes[c].op == ND_OP_INPUT) continue;
                add[na++] = find(s, s->grp[c]);
            } else if (!s->freen[c]) {
                for (int t = 0; t < ng[c]; t++) add[na++] = find(s, GSETS(s, c)[t]);
            }
            for (int t = 0; t < na; t++) {
                int dup = 0;
                for (int u = 0; u < cnt; u++) if (set[u] == add[t]) dup = 1;
                if (dup) continue;
                if (cnt >= MAXG) { overflow = 1; continue; }
                set[cnt++] = add[t];
            }
        }
        if (cnt == 0) continue;  /* dead */
        int ok = !overflow;
        if (ok && s->shortr[i]) {
            /* inline into pointwise/reduction/scan/region kernels; a row
             * kernel reads it as a buffer (then it is a reduction kernel) */
            int nf = 1;
            for (int t = 0; t < cnt; t++) {
                int r = find(s, set[t]), dup = 0;
                if (group_kind(s, r) == ND_K_ROW) ok = 0;
                for (int u = 0; u < t; u++) if (find(s, set[u]) == r) dup = 1;
                if (!dup) nf += s->gfr[r];
            }
            if (nf > ND_MAXFR) ok = 0;
            /* values outside its frame are read at the kernel's element
             * through nd_frame_dim: only in a domain of i's own rank (the
             * kernel walks i's output, not a broadcast of it) */
            for (int t = 0; ok && s->shortr[i] == 2 && t < cnt; t++) {
                int r = find(s, set[t]);
                nd_node *root = &g->nodes[s->groot[r]];
                int kd = group_kind(s, r);
                int drank = kd == ND_K_REGION ? root->vndim
                          : (kd == ND_K_REDUCE || kd == ND_K_SCAN) ? g->nodes[root->in[0]].ndim : root->ndim;
                if (drank != nn->ndim) ok = 0;
            }
        }
        if (cnt > 1) {
            if (!allow_merge) ok = 0;
            for (int t = 0; ok && t < cnt; t++) {
                if (group_kind(s, set[t]) != ND_K_POINTWISE) ok = 0;
                else if (!same_domain(&g->nodes[s->groot[set[t]]], nn)) ok = 0;
            }
        }
        if (ok) {
            /* would the kernel outgrow its bounds with i inlined? */
            int64_t sz = 1, nop = 0;
            for (int k = 0; k < node_nin(nn); k++) {
                nd_id in = node_in(nn, k);
                if (in >= 0 && (s->mat[in] || view_of_buffer(g, in)) &&
                    !operand_counted(s, i, k, set, cnt))
                    nop++;
            }
            for (int t = 0; t < cnt; t++) {
                int r = find(s, set[t]), dup = 0;
                for (int u = 0; u < t; u++) if (find(s, set[u]) == r) dup = 1;
                if (!dup) { sz += s->gsize[r]; nop += s->gops[r]; }
            }
            if (sz > kmax_nodes(nn) || nop > KMAX_OPS) ok = 0;
            else {
                int64_t nf = s->shortr[i] ? 1 : 0;
                for (int t = 0; t < cnt; t++) {
                    int r = find(s, set[t]), dup = 0;
                    for (int u = 0; u < t; u++) if (find(s, set[u]) == r) dup = 1;
                    if (!dup) nf += s->gfr[r];
                }
                for (int t = 1; t < cnt; t++) s->parent[find(s, set[t])] = find(s, set[0]);
                int r = find(s, set[0]);
                s->gsize[r] = (int32_t)sz;
                s->gops[r] = (int32_t)nop;
                s->gfr[r] = (int32_t)nf;
            }
        }
        if (!ok) {
            /* i becomes a buffer: one more operand of each group reading it */
            for (int t = 0; t < cnt; t++) s->gops[find(s, set[t])]++;
            s->mat[i] = 1;
            s->shortr[i] = 0;
            s->grp[i] = new_group(s, i, -1);
            continue;
        }
        GSETS(s, i)[0] = find(s, set[0]);
        ng[i] = 1;
    }
    PyMem_Free(s->rg2g);
    s->rg2g = NULL;
}

/* Horizontal fusion of pointwise kernels: kernels of one domain that read
 * the same array (x + 1 and x * 2 returned together) become one kernel with
 * several outputs, one pass over the array -- when neither reads the
 * other's outputs, directly or through other kernels. */
#define HMAXC 16

/* groups of the pointwise kernels reading node c (c's own kernel, or the
 * kernels c is computed inline in) into set (deduplicated) */
static void reader_groups(sched *s, nd_id c, int32_t *set, int *cnt)
{
    int add[MAXG], na = 0;
    if (s->mat[c]) {
        if (s->eager[c] || s->g->nodes[c].op == ND_OP_INPUT || s->rowgrp[c] >= 0) return;
        add[na++] = find(s, s->grp[c]);
    } else if (!s->freen[c]) {
        for (int t = 0; t < s->ng[c]; t++) add[na++] = find(s, GSETS(s, c)[t]);
    }
    for (int t = 0; t < na; t++) {
        if (group_kind(s, add[t]) != ND_K_POINTWISE || s->growg[add[t]] >= 0) continue;
        int dup = 0;
        for (int u = 0; u < *cnt; u++) if (set[u] == add[t]) dup = 1;
        if (!dup && *cnt < HMAXC) set[(*cnt)++] = add[t];
    }
}

/* does a kernel of group b (its roots) depend on an output of group a?
 * dep: scratch of n bytes */
static int group_depends(sched *s, int a, int b, uint8_t *dep)
{
    nd_graph *g = s->g;
    memset(dep, 0, (size_t)s->n);
    for (nd_id i = 0; i < s->n; i++) {
        nd_node *nn = &g->nodes[i];
        int d = 0;
        for (int k = 0; k < node_nin(nn) && !d; k++) {
            nd_id in = node_in(nn, k);
            if (in < 0) continue;
            if (dep[in]) d = 1;
            else if (s->mat[in] && !s->eager[in] && g->nodes[in].op != ND_OP_INPUT &&
                     s->rowgrp[in] < 0 && find(s, s->grp[in]) == a)
                d = 1;
        }
        dep[i] = (uint8_t)d;
        if (!d) continue;
        /* i is read by b's kernel: b depends on a */
        if (s->mat[i] && !s->eager[i] && nn->op != ND_OP_INPUT && s->rowgrp[i] < 0 && find(s, s->grp[i]) == b)
            return 1;
        if (!s->mat[i] && !s->freen[i])
            for (int t = 0; t < s->ng[i]; t++) if (find(s, GSETS(s, i)[t]) == b) return 1;
    }
    return 0;
}

/* Per group, the first NumPy step (an extern such as np.matmul) that reads
 * one of its buffers, or -1 (NULL: no memory to tell). Two groups feeding
 * different such steps stay apart: one kernel would make every operand at
 * the first step and hold it to its own (a loop of `(-X) @ w` made all its
 * -X at once: 100 copies of X alive, page faults, 1.4x NumPy's time). */
static int32_t *eager_readers(sched *s)
{
    int32_t *first = PyMem_Malloc(sizeof(int32_t) * ((size_t)s->ngroups + 1));
    if (!first) { PyErr_Clear(); return NULL; }
    for (int t = 0; t < s->ngroups; t++) first[t] = -1;
    for (nd_id i = 0; i < s->n; i++) {
        if (!s->mat[i] || s->eager[i] || s->isout[i] || s->g->nodes[i].op == ND_OP_INPUT ||
            s->rowgrp[i] >= 0 || s->grp[i] < 0)
            continue;
        int a = find(s, s->grp[i]);
        for (int q = s->cstart[i]; q < s->cstart[i + 1]; q++) {
            nd_id c = s->clist[q];
            if (s->eager[c] && (first[a] < 0 || c < first[a])) first[a] = c;
        }
    }
    return first;
}

static void merge_pointwise(sched *s, uint8_t *dep)
{
    nd_graph *g = s->g;
    int budget = 64;   /* dependence walks (each O(n)) */
    int32_t *ext = eager_readers(s);
    for (nd_id b = 0; b < s->n && budget > 0; b++) {
        if (!s->mat[b]) continue;
        int32_t set[HMAXC];
        int cnt = 0;
        for (int q = s->cstart[b]; q < s->cstart[b + 1]; q++) {
            nd_id c = s->clist[q];
            if (s->freen[c] && view_of_buffer(g, c)) {
                for (int q2 = s->cstart[c]; q2 < s->cstart[c + 1]; q2++) reader_groups(s, s->clist[q2], set, &cnt);
            } else {
                reader_groups(s, c, set, &cnt);
            }
        }
        for (int t = 1; t < cnt && budget > 0; t++) {
            int a = find(s, set[0]), o = find(s, set[t]);
            if (a == o) continue;
            if (!same_domain(&g->nodes[s->groot[a]], &g->nodes[s->groot[o]])) continue;
            if (s->gsize[a] + s->gsize[o] > kmax_nodes(&g->nodes[s->groot[a]]) ||
                s->gops[a] + s->gops[o] > KMAX_OPS ||
                s->gfr[a] + s->gfr[o] > ND_MAXFR)
                continue;
            if (ext && ext[a] >= 0 && ext[o] >= 0 && ext[a] != ext[o]) continue;
            budget -= 2;
            if (group_depends(s, a, o, dep) || group_depends(s, o, a, dep)) continue;
            if (ext && (ext[a] < 0 || (ext[o] >= 0 && ext[o] < ext[a]))) ext[a] = ext[o];
            s->parent[o] = a;
            s->gsize[a] += s->gsize[o];
            s->gops[a] += s->gops[o];
            s->gfr[a] += s->gfr[o];
        }
    }
    PyMem_Free(ext);
}

static int build_kernels(sched *s, nd_program *p)
{
    nd_graph *g = s->g;
    int n = s->n;
    p->mat = s->mat; s->mat = NULL;
    p->isout = s->isout; s->isout = NULL;
    s->gk = PyMem_Malloc(sizeof(int) * ((size_t)s->ngroups + 1));
    if (!s->gk) { PyErr_NoMemory(); return -1; }
    int *gk = s->gk;
    for (int t = 0; t < s->ngroups; t++) gk[t] = -1;
    int nk = 0;
    for (int t = 0; t < s->ngroups; t++) if (find(s, t) == t) gk[t] = nk++;
    for (nd_id i = 0; i < n; i++)
        if (p->mat[i] && (!s->eager[i] && g->nodes[i].op != ND_OP_INPUT)) p->own[i] = 1;
    /* pointwise outputs NumPy lays out in another memory order are
     * allocated in it: known before any kernel is built, since a kernel's
     * static strides of its inputs depend on it (build order is not
     * topological) */
    for (nd_id i = 0; i < n; i++)
        if (p->own[i] && group_kind(s, find(s, s->grp[i])) == ND_K_POINTWISE &&
            korder_inner(&g->nodes[i]) >= 0)
            p->kord[i] = 1;
    p->kerns = PyMem_Calloc((size_t)nk + 1, sizeof(nd_kernel));
    if (!p->kerns) { PyErr_NoMemory(); return -1; }
    s->mat = p->mat;  /* collect() reads it */
    s->rstart = PyMem_Calloc((size_t)s->ngroups + 1, sizeof(int32_t));
    s->rlist = PyMem_Malloc(sizeof(nd_id) * (size_t)(n ? n : 1));
    if (!s->rstart || !s->rlist) { s->mat = NULL; PyErr_NoMemory(); return -1; }
    for (nd_id i = 0; i < n; i++)
        if (p->mat[i] && !s->eager[i] && g->nodes[i].op != ND_OP_INPUT) s->rstart[find(s, s->grp[i]) + 1]++;
    for (int t = 0; t < s->ngroups; t++) s->rstart[t + 1] += s->rstart[t];
    {
        int32_t *fill = PyMem_Malloc(sizeof(int32_t) * ((size_t)s->ngroups + 1));
        if (!fill) { s->mat = NULL; PyErr_NoMemory(); return -1; }
        memcpy(fill, s->rstart, sizeof(int32_t) * ((size_t)s->ngroups + 1));
        for (nd_id i = 0; i < n; i++)
            if (p->mat[i] && !s->eager[i] && g->nodes[i].op != ND_OP_INPUT)
                s->rlist[fill[find(s, s->grp[i])]++] = i;
        PyMem_Free(fill);
    }
    for (int t = 0; t < s->ngroups; t++) {
        if (gk[t] < 0) continue;
        if (build_kernel(s, p, &p->kerns[gk[t]], t, s->seen) < 0) {
            s->mat = NULL;
            p->nkern = gk[t];
            return -1;
        }
        p->nkern = gk[t] + 1;
    }
    s->mat = NULL;
    p->nkern = nk;
    return 0;
}

/* Steps in node order, each as soon as what it reads is ready: a kernel at
 * the first of its roots where its inputs are (a kernel of several roots
 * -- horizontal fusion -- may wait for an input made after its first root,
 * and a step reading its first root then waits for it). Sweeps until
 * nothing more can run. 0, or 1 when some step never can: a cycle through
 * kernels (no exception). */
static int order_steps(sched *s, nd_program *p, const nd_id *outs, int nout)
{
    nd_graph *g = s->g;
    int n = s->n, nk = p->nkern;
    int *gk = s->gk;
    uint8_t *ready = s->seen;
    uint8_t *kdone = PyMem_Calloc((size_t)nk + 1, 1);
    if (!kdone) { PyErr_NoMemory(); return -1; }
    memset(ready, 0, (size_t)n + 1);
    for (nd_id i = 0; i < n; i++) if (g->nodes[i].op == ND_OP_INPUT) ready[i] = 1;
    int ns = 0, progress = 1, pending = 1;
    while (progress && pending) {
        progress = pending = 0;
        for (nd_id i = 0; i < n; i++) {
            if (s->eager[i]) {
                if (ready[i]) continue;
                nd_node *nn = &g->nodes[i];
                int ok = 1;
                for (int k = 0; k < node_nin(nn) && ok; k++)
                    if (node_in(nn, k) >= 0 && !ready[node_in(nn, k)]) ok = 0;
                if (!ok) { pending = 1; continue; }
                p->steps[ns++] = (nd_step){ND_S_EAGER, -1, i};
                ready[i] = 1;
                progress = 1;
                continue;
            }
            if (!p->own[i]) continue;
            int q = gk[find(s, s->grp[i])];
            if (kdone[q]) continue;
            nd_kernel *k = &p->kerns[q];
            int ok = 1;
            for (int o = 0; o < k->nin && ok; o++)
                if (!ready[k->ops[o].buf]) ok = 0;
            if (ok && k->kind == ND_K_REGION && !ready[g->nodes[k->root].in[0]]) ok = 0;
            if (!ok) { pending = 1; continue; }
            if (k->kind == ND_K_REGION) p->steps[ns++] = (nd_step){ND_S_BASE, -1, k->root};
            p->steps[ns++] = (nd_step){ND_S_KERNEL, q, i};
            for (int o = k->nin; o < k->nin + k->nout; o++) ready[k->ops[o].buf] = 1;
            kdone[q] = 1;
            progress = 1;
        }
    }
    PyMem_Free(kdone);
    p->nsteps = ns;
    if (pending) return 1;
    for (int i = 0; i < nout; i++) if (!ready[outs[i]]) return 1;
    return 0;
}

static int plan_buffers(sched *s, nd_program *p)
{
    nd_graph *g = s->g;
    int n = s->n;
    int ns = p->nsteps;
    for (int i = 0; i < n; i++) p->last[i] = -1;
    for (int t = 0; t < ns; t++) {
        nd_step *st = &p->steps[t];
        if (st->kind == ND_S_EAGER) {
            nd_node *nn = &g->nodes[st->node];
            for (int k = 0; k < node_nin(nn); k++) if (node_in(nn, k) >= 0) p->last[node_in(nn, k)] = t;
        } else if (st->kind == ND_S_BASE) {
            p->last[g->nodes[st->node].in[0]] = t;
        } else {
            nd_kernel *k = &p->kerns[st->kern];
            for (int o = 0; o < k->nin; o++) p->last[k->ops[o].buf] = t;
        }
    }
    /* a view made by NumPy (classify) shares its base's memory: the base
     * lives, and is not written in place, until the view's last reader */
    for (nd_id i = n - 1; i >= 0; i--) {
        nd_node *nn = &g->nodes[i];
        if (s->eager[i] && nn->op == ND_OP_VIEW && p->last[i] > p->last[nn->in[0]]) p->last[nn->in[0]] = p->last[i];
    }
    /* per step, the buffers to drop after it: a run walks each list once */
    p->freeat = PyMem_Calloc((size_t)ns + 1, sizeof(int32_t));
    p->freen = PyMem_Malloc(sizeof(nd_id) * (size_t)(n ? n : 1));
    if (!p->freeat || !p->freen) { PyErr_NoMemory(); return -1; }
    for (int i = 0; i < n; i++)
        if (p->last[i] >= 0 && !p->isout[i]) p->freeat[p->last[i] + 1]++;
    for (int t = 0; t < ns; t++) p->freeat[t + 1] += p->freeat[t];
    {
        int32_t *fill = PyMem_Malloc(sizeof(int32_t) * ((size_t)ns + 1));
        if (!fill) { PyErr_NoMemory(); return -1; }
        memcpy(fill, p->freeat, sizeof(int32_t) * ((size_t)ns + 1));
        for (int i = 0; i < n; i++)
            if (p->last[i] >= 0 && !p->isout[i]) p->freen[fill[p->last[i]]++] = i;
        PyMem_Free(fill);
    }
    for (int t = 0; t < ns; t++) {
        nd_step *st = &p->steps[t];
        if (st->kind != ND_S_BASE) continue;
        nd_id base = g->nodes[st->node].in[0];
        /* every other reader of the base ran in an earlier step, or is the
         * region's own kernel (the next step) reading it in place-safe
         * ways: write in place instead of copying the whole base (a loop
         * of row updates A[i] = f(A[i-1]) would copy A per row) */
        int in_place = !p->isout[base] &&
            (p->last[base] == t ||
             (p->last[base] == t + 1 && t + 1 < ns && p->steps[t + 1].kind == ND_S_KERNEL &&
              region_reads_in_place(g, &p->kerns[p->steps[t + 1].kern], st->node)));
        if (in_place && p->own[base]) p->take[st->node] = 1;
        /* an input the caller gives up (a value of an earlier flush that
         * nothing reads again: A of an LU whose every step flushes), or a
         * NumPy step's result the run proves it alone holds */
        if (in_place && (g->nodes[base].op == ND_OP_INPUT ||
                         (g->nodes[base].op == ND_OP_EXTERN && s->eager[base])))
            p->take_in[st->node] = 1;
    }
    return 0;
}

static nd_program *schedule(nd_graph *g, const nd_id *outs, int nout, int allow_merge, int allow_rows,
                            int allow_horiz, int *retry)
{
    int n = g->n;
    sched s;
    memset(&s, 0, sizeof s);
    s.g = g;
    s.n = n;
    nd_program *p = PyMem_Calloc(1, sizeof *p);
    if (!p) { PyErr_NoMemory(); return NULL; }
    p->refcnt = 1;
    p->nnodes = n;
    size_t N = (size_t)n + 1;
    s.mat = PyMem_Calloc(N, 1); s.eager = PyMem_Calloc(N, 1); s.freen = PyMem_Calloc(N, 1);
    s.isout = PyMem_Calloc(N, 1);
    s.grp = PyMem_Calloc(N, sizeof(int32_t)); s.parent = PyMem_Calloc(N, sizeof(int32_t));
    s.groot = PyMem_Calloc(N, sizeof(nd_id));
    s.gkind = PyMem_Calloc(N, 1);
    s.growg = PyMem_Calloc(N, sizeof(int32_t));
    s.gsize = PyMem_Calloc(N, sizeof(int32_t));
    s.gops = PyMem_Calloc(N, sizeof(int32_t));
    s.gfr = PyMem_Calloc(N, sizeof(int32_t));
    s.shortr = PyMem_Calloc(N, 1);
    s.rowgrp = PyMem_Calloc(N, sizeof(int32_t));
    s.center = PyMem_Calloc(N, sizeof(nd_id));
    s.level = PyMem_Calloc(N, 1);
    s.cstart = PyMem_Calloc(N + 1, sizeof(int32_t));
    s.gsets = PyMem_Calloc(N * MAXG, sizeof(int32_t));
    s.ng = PyMem_Calloc(N, 1);
    s.seen = PyMem_Calloc(N, 1);
    s.cost = PyMem_Calloc(N, sizeof(int32_t));
    s.kpos = PyMem_Calloc(N, sizeof(int32_t));
    p->own = PyMem_Calloc(N, 1);
    p->kord = PyMem_Calloc(N, 1);
    p->take = PyMem_Calloc(N, 1);
    p->take_in = PyMem_Calloc(N, 1);
    p->last = PyMem_Malloc(N * sizeof(int32_t));
    p->outs = PyMem_Malloc(sizeof(nd_id) * (size_t)(nout + 1));
    p->steps = PyMem_Malloc(sizeof(nd_step) * N * 2);
    if (!s.mat || !s.eager || !s.freen || !s.isout || !s.grp || !s.parent || !s.groot ||
        !s.gkind || !s.growg || !s.gsize || !s.gops || !s.gfr || !s.shortr || !s.rowgrp || !s.center || !s.level ||
        !s.cstart || !s.gsets || !s.ng || !s.seen || !s.cost || !s.kpos || !p->own || !p->kord ||
        !p->take || !p->take_in || !p->last || !p->outs || !p->steps) {
        PyErr_NoMemory();
        goto fail;
    }
    if (find_consumers(&s, outs, nout) < 0) goto fail;
    classify(&s);
    if (allow_rows && find_short(&s) < 0) goto fail;
    if (find_row_groups(&s, allow_rows, allow_horiz) < 0) goto fail;
    buffer_broadcasts(&s);
    group_kernels(&s, allow_merge);
    if (allow_horiz) merge_pointwise(&s, s.seen);
    if (build_kernels(&s, p) < 0) goto fail;
    /* the operand bounds of the grouping are estimates (an input read
     * again counts once, merged groups add theirs): a kernel past the
     * runtime's operand pointers is rescheduled as a kernel cycle is --
     * with less merging -- not left to fail when it runs */
    for (int k = 0; k < p->nkern; k++)
        if (p->kerns[k].nin + p->kerns[k].nout > ND_KMAX_OPERANDS) {
            *retry = 2;
            goto fail;
        }
    int r = order_steps(&s, p, outs, nout);
    if (r < 0) goto fail;
    if (r) { *retry = 1; goto fail; }
    if (plan_buffers(&s, p) < 0) goto fail;
    memcpy(p->outs, outs, sizeof(nd_id) * (size_t)nout);
    p->nout = nout;
    goto done;
fail:
    nd_program_free(p);
    p = NULL;
done:
    PyMem_Free(s.mat); PyMem_Free(s.eager); PyMem_Free(s.freen); PyMem_Free(s.isout);
    PyMem_Free(s.grp); PyMem_Free(s.parent); PyMem_Free(s.groot); PyMem_Free(s.cstart);
    PyMem_Free(s.gkind); PyMem_Free(s.growg); PyMem_Free(s.gsize); PyMem_Free(s.gops); PyMem_Free(s.gfr); PyMem_Free(s.shortr); PyMem_Free(s.rowgrp); PyMem_Free(s.center); PyMem_Free(s.level);
    PyMem_Free(s.clist);
    PyMem_Free(s.rstart); PyMem_Free(s.rlist);
    PyMem_Free(s.gsets); PyMem_Free(s.ng); PyMem_Free(s.seen); PyMem_Free(s.cost); PyMem_Free(s.kpos);
    PyMem_Free(s.rg2g); PyMem_Free(s.gk);
    return p;
}

nd_program *nd_schedule(nd_graph *g, const nd_id *outs, int nout)
{
    int retry = 0;
    nd_program *p = schedule(g, outs, nout, 1, 1, 1, &retry);
    if (!p && retry && !PyErr_Occurred()) {
        /* a kernel cycle: first without horizontal fusion, then without
         * any merging */
        retry = 0;
        p = schedule(g, outs, nout, 1, 1, 0, &retry);
    }
    if (!p && retry && !PyErr_Occurred()) {
        retry = 0;
        p = schedule(g, outs, nout, 0, 0, 0, &retry);
    }
    /* kernels still past their operand pointers without merging (a chain
     * of pointwise nodes reading a saved value each: a backward) */
    for (int tight = 32; !p && retry == 2 && tight >= 4 && !PyErr_Occurred(); tight /= 4) {
        retry = 0;
        tight_nodes = tight;
        p = schedule(g, outs, nout, 0, 0, 0, &retry);
        tight_nodes = 0;
    }
    if (!p && retry && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "numdyn: internal error: no valid kernel order");
    return p;
}
