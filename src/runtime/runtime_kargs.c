/* runtime_kargs.c -- a kernel's arguments (the ABI of codegen.h: P, I)
 * from its operands' arrays, shared by the native and CUDA runtimes. Only
 * addresses are computed, nothing is read: the arrays may live on a GPU. */
#include "native.h"
#undef I  /* complex.h (via NumPy): the kernel argument I is named so */

static int popcount_below(uint64_t mask, int d)
{
    int c = 0;
    for (int q = 0; q < d; q++) if (mask & (1ull << q)) c++;
    return c;
}

/* element stride of operand `op` along domain dim dd */
static npy_intp op_stride(nd_graph *g, nd_kernel *k, nd_kop *op, const nd_karr *a, int dd, int drank)
{
    switch (op->acc) {
    case ND_A_DIRECT: {
        nd_node *m = &g->nodes[op->buf];
        int dm = dd - (drank - m->ndim);
        if (dm < 0 || m->shape[dm] == 1) return 0;
        return a->strides[dm] / a->itemsize;
    }
    case ND_A_VIEW: {
        nd_node *v = &g->nodes[op->via];
        int dv = dd - (drank - v->ndim);
        if (dv < 0 || v->shape[dv] == 1) return 0;
        return v->vstrides[dv];
    }
    case ND_A_REGION:
        return g->nodes[op->via].vstrides[dd];
    case ND_A_ROWB: {
        /* the kept dims of the row domain, in order */
        nd_node *m = &g->nodes[op->buf];
        uint64_t axes = g->nodes[k->root].axes;
        if (axes & (1ull << dd)) return 0;
        int od = dd - popcount_below(axes, dd);
        if (od < 0 || od >= m->ndim || m->shape[od] == 1) return 0;
        return a->strides[od] / a->itemsize;
    }
    case ND_A_REDOUT: {
        nd_node *r = &g->nodes[op->buf];
        if (r->axes & (1ull << dd)) return 0;
        int od = (r->flags & ND_F_KEEPDIMS) ? dd : dd - popcount_below(r->axes, dd);
        if (od < 0 || od >= a->ndim) return 0;
        return a->strides[od] / a->itemsize;
    }
    }
    return 0;
}

/* element stride of frame operand `op` (DIRECT or VIEW) along dim sd of its
 * frame's domain (the short reduction's input, rank xrank) */
static npy_intp frame_op_stride(nd_graph *g, nd_kop *op, const nd_karr *a, int sd, int xrank)
{
    if (sd < 0) return 0;
    if (op->acc == ND_A_VIEW) {
        nd_node *v = &g->nodes[op->via];
        int dv = sd - (xrank - v->ndim);
        if (dv < 0 || v->shape[dv] == 1) return 0;
        return v->vstrides[dv];
    }
    nd_node *m = &g->nodes[op->buf];
    int dm = sd - (xrank - m->ndim);
    if (dm < 0 || m->shape[dm] == 1) return 0;
    return a->strides[dm] / a->itemsize;
}

static char *op_base(nd_graph *g, nd_kop *op, const nd_karr *a)
{
    char *p = a->data;
    if (op->acc == ND_A_VIEW || op->acc == ND_A_REGION)
        p += g->nodes[op->via].voff * a->itemsize;
    return p;
}


void nd_kernel_args(nd_graph *g, nd_kernel *k, const nd_karr *arrs, char **P, int64_t *I, int64_t *n)
{
    int nops = k->nin + k->nout, R = k->rank;
    nd_node *dn = &g->nodes[k->dom];
    int drank = k->dom_v ? dn->vndim : dn->ndim;
    const npy_intp *dshape = k->dom_v ? dn->vshape : dn->shape;
    for (int d = 0; d < R; d++) n[d] = dshape[k->dims[d]];
    for (int o = 0; o < nops; o++) {
        nd_kop *op = &k->ops[o];
        const nd_karr *a = &arrs[o];
        P[o] = op_base(g, op, a);
        if (op->frame >= 0) {
            /* read over a short reduction's input domain (schedule.h) */
            nd_id r = k->fr[op->frame];
            int xrank = g->nodes[g->nodes[r].in[0]].ndim, sd[ND_MAXFS];
            int ns = nd_frame_short(g, r, sd, NULL);
            for (int d = 0; d < R; d++)
                I[R + o * R + d] = frame_op_stride(g, op, a, nd_frame_dim(g, r, drank, k->dims[d]), xrank);
            for (int t = 0; t < ns; t++) I[nd_frame_sidx(R, nops, o, t)] = frame_op_stride(g, op, a, sd[t], xrank);
            continue;
        }
        for (int d = 0; d < R; d++)
            I[R + o * R + d] = op_stride(g, k, op, a, k->dims[d], drank);
    }
}

static int may_merge(nd_kernel *k, int a, int b)
{
    if (k->kind == ND_K_REDUCE || k->kind == ND_K_ROW)
        if (((k->red >> a) & 1) != ((k->red >> b) & 1)) return 0;
    if (k->kind == ND_K_SCAN && (a == k->scan || b == k->scan)) return 0;
    return 1;
}

int64_t nd_kernel_merge(nd_kernel *k, int64_t *I, int64_t *n)
{
    int nops = k->nin + k->nout, R = k->rank;
    if (!k->nomerge && R > 1) {
        int cur = R - 1;
        for (int d = R - 2; d >= 0; d--) {
            int ok = may_merge(k, d, cur);
            for (int o = 0; ok && o < nops; o++)
                if (I[R + o * R + d] != I[R + o * R + cur] * n[cur]) ok = 0;
            if (n[d] == 1) ok = may_merge(k, d, cur);
            if (ok) {
                n[cur] *= n[d];
                n[d] = 1;
                for (int o = 0; o < nops; o++) I[R + o * R + d] = 0;
            } else {
                cur = d;
            }
        }
    }
    int64_t tot = 1;
    for (int d = 0; d < R; d++) { I[d] = n[d]; tot *= n[d]; }
    return tot;
}
