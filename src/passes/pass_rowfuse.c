/* pass_rowfuse.c -- row fusion: reductions over the trailing dims of one
 * domain D, together with their pointwise consumers, become ONE kernel that
 * walks each row several times while it is in cache (softmax:
 * max, then sum of exp, then the division; logsumexp; mean/var/normalize).
 *
 * Levels of the nodes in a row group:
 *   ND_ROW_DOMAIN  pointwise over D (shape D): computed per element in a pass
 *   ND_ROW_A       a row value in keepdims form (D with 1 at the reduced dims)
 *   ND_ROW_B       a row value without the reduced dims (the kept dims only)
 * REDUCE members are row values (A or B by keepdims). A domain node reads
 * row values of form A only (that is how NumPy broadcasts them per row);
 * a row value combines row values of its own form and scalars; a VIEW that
 * only inserts/removes size-1 dims turns one form into the other (m[:, 0]).
 *
 * Reductions of a group share one domain D and one set of reduced dims.
 * Besides a reduction reading the group's domain values (var after mean),
 * a reduction that reads nothing of the group joins it too (horizontal
 * fusion: x.sum(-1) and (x * x).sum(-1), a.min() and a.max(): one pass
 * over x). When the reduced dims are not trailing (x.mean(0)) or no dim is
 * kept (a.min()), a group holds no domain values: it is reductions that
 * share one pass over D and the row values computed from their results
 * (X.max(0) - X.min(0)), an epilogue per output element.
 *
 * Only structure decides membership (shapes through rank, size-1 patterns
 * and which sizes are equal), so the plan fits every graph with the same
 * key. A node that
 * depends on the group but cannot join is a later consumer, and nothing
 * that depends on such a node may join (no cycles through the kernel).
 */
#include "core/npy.h"
#include "schedule.h"

/* Exact shapes: a keepdims row value broadcasts against operands of any
 * width ((4,1) + (4,6) over a (4,3) domain), so the ones pattern alone
 * does not say a node lives on the domain. The graph key holds the
 * equality pattern of sizes (nd_graph_size_pattern), so the plan still
 * fits every graph with the same key. */
static int same_shape(int ra, const npy_intp *a, int rb, const npy_intp *b)
{
    return ra == rb && (ra == 0 || memcmp(a, b, sizeof(npy_intp) * (size_t)ra) == 0);
}

typedef struct rowdom {
    int rank;
    npy_intp shape[ND_MAXDIMS];
    uint64_t axes;
    int trail;   /* the reduced dims are trailing and some dim is kept:
                    domain values may join (a row is walked several times) */
    int across;  /* the innermost dim is kept (the kernel's vector loop runs
                    along it, each element visited once): independent
                    domain values may join as side outputs */
    int krank;
    npy_intp kshape[ND_MAXDIMS];   /* D without the reduced dims */
    npy_intp ashape[ND_MAXDIMS];   /* D with 1 at the reduced dims */
} rowdom;

static int form_of(const rowdom *D, const nd_node *n)
{
    if (same_shape(n->ndim, n->shape, D->rank, D->shape)) return ND_ROW_DOMAIN;
    if (same_shape(n->ndim, n->shape, D->rank, D->ashape)) return ND_ROW_A;
    if (same_shape(n->ndim, n->shape, D->krank, D->kshape)) return ND_ROW_B;
    return 0;
}

/* at least one reduced non-1 dim; D->trail: the reduced dims are trailing
 * and one is kept. argmax/argmin (allow_arg) are members only as
 * reductions: nothing that reads their index joins. */
static int eligible_reduce(nd_graph *g, nd_id r, rowdom *D, int allow_arg)
{
    nd_node *n = &g->nodes[r];
    if (!allow_arg && (n->sub == ND_RED_ARGMAX || n->sub == ND_RED_ARGMIN)) return 0;
    if (!nd_emit->reduce_supported(g, r)) return 0;
    if (n->nin > 1 && n->in[1] >= 0 && g->nodes[n->in[1]].op != ND_OP_SCALAR) return 0;
    nd_node *x = &g->nodes[n->in[0]];
    if (!nd_emit->dtype_ok(x->dtype) || !nd_emit->dtype_ok(n->dtype)) return 0;
    int seen_red = 0, kept = 0, red = 0, trail = 1, last_kept = 0;
    for (int d = 0; d < x->ndim; d++) {
        int isr = (n->axes >> d) & 1;
        if (x->shape[d] == 1) continue;
        if (isr) { seen_red = 1; red++; }
        else { if (seen_red) trail = 0; kept++; }
        last_kept = !isr;
    }
    if (!red) return 0;
    D->trail = trail && kept;
    D->across = last_kept;
    D->rank = x->ndim;
    memcpy(D->shape, x->shape, sizeof(npy_intp) * (size_t)x->ndim);
    D->axes = n->axes;
    D->krank = 0;
    for (int d = 0; d < x->ndim; d++) {
        D->ashape[d] = ((n->axes >> d) & 1) ? 1 : x->shape[d];
        if (!((n->axes >> d) & 1)) D->kshape[D->krank++] = x->shape[d];
    }
    return 1;
}

/* a VIEW that only inserts or removes size-1 dims of a row value */
static int pure_reshape(nd_graph *g, nd_id v)
{
    nd_node *n = &g->nodes[v], *b = &g->nodes[n->in[0]];
    if (n->voff != 0 || (n->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG)) || n->dtype != b->dtype) return 0;
    npy_intp cs[ND_MAXDIMS], acc = 1;
    for (int d = b->ndim - 1; d >= 0; d--) { cs[d] = acc; acc *= b->shape[d]; }
    int bd = 0;
    for (int d = 0; d < n->ndim; d++) {
        if (n->shape[d] == 1) continue;
        while (bd < b->ndim && b->shape[bd] == 1) bd++;
        if (bd >= b->ndim || b->shape[bd] != n->shape[d] || n->vstrides[d] != cs[bd]) return 0;
        bd++;
    }
    while (bd < b->ndim && b->shape[bd] == 1) bd++;
    return bd == b->ndim;
}

/* Item 4 of issue 19: the sum of squared deviations from a mean of the
 * group -- ((x - x.sum(ax, keepdims=True) / c) ** 2).sum(ax), NumPy's var
 * and std -- joins the group of that sum when the reduced dim is one long
 * dim before a kept one (x.std(0)): the kernel folds it in the same pass
 * over x, chunk by chunk (codegen_loops.c), so (X - X.mean(0)) / X.std(0)
 * reads X twice, not three times. Returns the REDUCE node of the sum (a
 * member), or -1. Float dtypes only, and nothing cast on the way. */
static nd_id moment_center(nd_graph *g, nd_id j, const uint8_t *lv, const rowdom *D)
{
    nd_node *jn = &g->nodes[j];
    if (jn->op != ND_OP_REDUCE || jn->sub != ND_UF_ADD || (jn->nin > 1 && jn->in[1] >= 0)) return -1;
    int nred = 0, after = 0;
    for (int d = 0; d < D->rank; d++) {
        if (D->shape[d] == 1) continue;
        if ((D->axes >> d) & 1) nred++;
        else if (nred) after = 1;
    }
    if (nred != 1 || !after) return -1;
    int ft = jn->dtype;
    if (ft != NPY_FLOAT && ft != NPY_DOUBLE) return -1;
    if (jn->in_dtype[0] >= 0 && jn->in_dtype[0] != ft) return -1;
    nd_node *sq = &g->nodes[jn->in[0]];
    if (sq->op != ND_OP_UFUNC || sq->dtype != ft) return -1;
    nd_id dd;
    if (sq->sub == ND_UF_SQUARE && sq->nin == 1) dd = sq->in[0];
    else if (sq->sub == ND_UF_MULTIPLY && sq->nin == 2 && sq->in[0] == sq->in[1]) dd = sq->in[0];
    else return -1;
    nd_node *d = &g->nodes[dd];
    if (d->op != ND_OP_UFUNC || d->sub != ND_UF_SUBTRACT || d->nin != 2 || d->dtype != ft) return -1;
    nd_id a = d->in[0], m = d->in[1];
    nd_node *mn = &g->nodes[m];
    if (g->nodes[a].dtype != ft || lv[m] != ND_ROW_A || mn->op != ND_OP_UFUNC ||
        mn->sub != ND_UF_TRUE_DIVIDE || mn->nin != 2 || mn->dtype != ft)
        return -1;
    nd_id r = mn->in[0];
    nd_node *rn = &g->nodes[r], *sc = &g->nodes[mn->in[1]];
    if (sc->op != ND_OP_SCALAR || sc->dtype != ft) return -1;
    if (!lv[r] || rn->op != ND_OP_REDUCE || rn->sub != ND_UF_ADD || rn->in[0] != a || rn->dtype != ft ||
        (rn->in_dtype[0] >= 0 && rn->in_dtype[0] != ft) || (rn->nin > 1 && rn->in[1] >= 0) ||
        !(rn->flags & ND_F_KEEPDIMS) || rn->axes != D->axes)
        return -1;
    return r;
}

static int same_dom(const rowdom *a, const rowdom *b)
{
    return a->axes == b->axes && same_shape(a->rank, a->shape, b->rank, b->shape);
}

static int is_scalar_like(nd_graph *g, nd_id i)
{
    nd_node *n = &g->nodes[i];
    if (n->op == ND_OP_SCALAR) return 1;
    return n->op == ND_OP_VIEW && g->nodes[n->in[0]].op == ND_OP_SCALAR;
}

static int pointwise_on(nd_graph *g, nd_id j, const rowdom *D)
{
    nd_node *jn = &g->nodes[j];
    return (jn->op == ND_OP_UFUNC || jn->op == ND_OP_CAST || jn->op == ND_OP_WHERE) &&
           form_of(D, jn) == ND_ROW_DOMAIN && nd_emit->supported(g, j);
}

/* anc[i] = 1 for the members mem[0..nm) and every node they read, directly
 * or through other nodes; 0 elsewhere */
static void mark_read(nd_graph *g, uint8_t *anc, const nd_id *mem, int nm)
{
    memset(anc, 0, (size_t)g->n);
    for (int q = 0; q < nm; q++) anc[mem[q]] = 1;
    for (nd_id y = g->n - 1; y >= 0; y--) {
        if (!anc[y]) continue;
        nd_node *yn = &g->nodes[y];
        int nin = yn->op == ND_OP_EXTERN ? yn->nextra : yn->nin;
        for (int k = 0; k < nin; k++) {
            nd_id in = yn->op == ND_OP_EXTERN ? yn->extra[k] : yn->in[k];
            if (in >= 0) anc[in] = 1;
        }
    }
}

/* Horizontal fusion backwards (issue 19 item 3): a pointwise value over the
 * group's domain computed before its first reduction (x * 2, then
 * (x ** 2).sum(1)) joins when the group does not read it, not even through
 * other nodes (it would wait on itself), and it reads something the group
 * reads: the last walk of each row computes it from the row in cache.
 * `anc` is scratch of g->n bytes. Returns the new member count. */
static int join_earlier(nd_graph *g, nd_id r, const rowdom *D, const int32_t *rowgrp, const uint8_t *skip,
                        uint8_t *lv, uint8_t *anc, nd_id *mem, int nm)
{
    mark_read(g, anc, mem, nm);
    /* anc: 1 read by the group, 2 reads a joined node through a node
     * outside the group (a candidate reading one would wait on itself),
     * 3 joined. Nothing the group reads can be 2 or 3: it would have read
     * the joined node itself. */
    for (nd_id j = 0; j < r; j++) {
        if (anc[j]) continue;
        nd_node *jn = &g->nodes[j];
        int nin = jn->op == ND_OP_EXTERN ? jn->nextra : jn->nin;
        int shares = 0, joined = 0, tainted = 0;
        for (int k = 0; k < nin; k++) {
            nd_id in = jn->op == ND_OP_EXTERN ? jn->extra[k] : jn->in[k];
            if (in < 0) continue;
            if (anc[in] == 1) shares = 1;
            else if (anc[in] == 2) tainted = 1;
            else if (anc[in] == 3) joined = 1;
        }
        if (!tainted && (shares || joined) && rowgrp[j] < 0 && !(skip && skip[j]) && pointwise_on(g, j, D)) {
            lv[j] = ND_ROW_DOMAIN;
            mem[nm++] = j;
            anc[j] = 3;
        } else if (tainted || joined) {
            anc[j] = 2;
        }
    }
    return nm;
}

/* A pointwise value over the group's domain that the group reads and that
 * is needed as an array anyway (`need`: an output, y = x * 2 returned next
 * to y.sum(0)) joins the group: the kernel stores it from the walk that
 * computes it for the reduction, one kernel and one pass over x instead of
 * a kernel writing y and another reading it back. So do the pointwise
 * values between it and the group (y + 1 summed), which would otherwise
 * read the kernel's own output as an input; when one of those cannot join
 * (a view of y, a broadcast, a short reduction of y read by a member),
 * nothing joins. Only values before the group's first reduction `r` join
 * (later ones are the forward walk's). `anc` is scratch of g->n bytes.
 * Returns the new member count. */
static int join_producers(nd_graph *g, nd_id r, const rowdom *D, const int32_t *rowgrp, const uint8_t *skip,
                          const uint8_t *need, uint8_t *lv, uint8_t *anc, nd_id *mem, int nm)
{
    if (!need) return nm;
    mark_read(g, anc, mem, nm);
    /* anc: 1 read by the group (members too); 3 joins. A non-member the
     * group reads (directly or through other nodes, members joined by the
     * forward walk included) that reads a joining value but cannot join
     * itself would make the kernel wait on itself: then nothing joins. */
    int njoin = 0, bad = 0;
    for (nd_id j = 0; j < g->n && !bad; j++) {
        if (anc[j] != 1 || lv[j]) continue;
        nd_node *jn = &g->nodes[j];
        int nin = jn->op == ND_OP_EXTERN ? jn->nextra : jn->nin, reads = 0;
        for (int k = 0; k < nin; k++) {
            nd_id in = jn->op == ND_OP_EXTERN ? jn->extra[k] : jn->in[k];
            if (in >= 0 && anc[in] == 3) reads = 1;
        }
        int can = j < r && rowgrp[j] < 0 && !(skip && skip[j]) && pointwise_on(g, j, D);
        if (reads && !can) bad = 1;
        else if (can && (reads || need[j])) { anc[j] = 3; njoin++; }
    }
    if (bad || !njoin) return nm;
    for (nd_id j = 0; j < r; j++)
        if (anc[j] == 3) { lv[j] = ND_ROW_DOMAIN; mem[nm++] = j; }
    return nm;
}

#define ROW_MAX_OPS 40   /* as pass_schedule.c's KMAX_OPS */

/* j's inputs from outside the group that are not scalars, and its output:
 * an upper bound of the operands joining j adds to the group's kernel */
static int operand_cost(nd_graph *g, nd_id j, const uint8_t *lv)
{
    nd_node *jn = &g->nodes[j];
    int nin = jn->op == ND_OP_EXTERN ? jn->nextra : jn->nin, c = 1;
    for (int k = 0; k < nin; k++) {
        nd_id in = jn->op == ND_OP_EXTERN ? jn->extra[k] : jn->in[k];
        if (in >= 0 && !lv[in] && !is_scalar_like(g, in)) c++;
    }
    return c;
}

int nd_rowfuse_find(nd_graph *g, int32_t *rowgrp, uint8_t *level, const uint8_t *skip, int horiz,
                    nd_id *center, const uint8_t *need)
{
    int n = g->n, ngroups = 0, side = (horiz & ND_ROW_SIDE) != 0;
    horiz &= 1;
    uint8_t *dep = PyMem_Calloc((size_t)n + 1, 1);
    uint8_t *lv = PyMem_Calloc((size_t)n + 1, 1);
    nd_id *mem = PyMem_Malloc(sizeof(nd_id) * ((size_t)n + 1));
    if (!dep || !lv || !mem) {
        PyMem_Free(dep); PyMem_Free(lv); PyMem_Free(mem);
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < n; i++) { rowgrp[i] = -1; level[i] = 0; if (center) center[i] = -1; }
    for (nd_id r = 0; r < n; r++) {
        nd_node *rn = &g->nodes[r];
        rowdom D;
        if (rn->op != ND_OP_REDUCE || rowgrp[r] >= 0 || (skip && skip[r]) || !eligible_reduce(g, r, &D, 1)) continue;
        memset(dep, 0, (size_t)n);
        memset(lv, 0, (size_t)n);
        int nm = 0, nred = 1;
        mem[nm++] = r;
        lv[r] = (rn->flags & ND_F_KEEPDIMS) ? ND_ROW_A : ND_ROW_B;
        /* operands the optional joins below may add (their outside inputs
         * and their outputs), bounded: the runtime passes a kernel at most
         * 64 operand pointers, and a loop of reductions of products
         * (conv2d's sum(x[:, i:i+K, j:j+K] * w) per (i, j)) had every
         * product join the first group as a side output: one kernel of
         * 192 operands that could not run */
        int ops = operand_cost(g, r, lv);
        for (nd_id j = r + 1; j < n; j++) {
            nd_node *jn = &g->nodes[j];
            int nin = jn->op == ND_OP_EXTERN ? jn->nextra : jn->nin;
            int related = 0, bad = 0;
            for (int k = 0; k < nin; k++) {
                nd_id in = jn->op == ND_OP_EXTERN ? jn->extra[k] : jn->in[k];
                if (in < 0) continue;
                if (lv[in]) related = 1;
                if (dep[in]) bad = 1;
            }
            if (!related && !bad) {
                /* an independent reduction over the same domain: one pass */
                rowdom D2;
                int cost = operand_cost(g, j, lv);
                if (horiz && nred < ND_MAXRED && jn->op == ND_OP_REDUCE && rowgrp[j] < 0 && !(skip && skip[j]) &&
                    ops + cost <= ROW_MAX_OPS && eligible_reduce(g, j, &D2, 1) && same_dom(&D, &D2)) {
                    lv[j] = (jn->flags & ND_F_KEEPDIMS) ? ND_ROW_A : ND_ROW_B;
                    mem[nm++] = j;
                    nred++;
                    ops += cost;
                } else if (horiz && (D.trail || (side && D.across)) && rowgrp[j] < 0 && !(skip && skip[j]) &&
                           ops + cost <= ROW_MAX_OPS && pointwise_on(g, j, &D)) {
                    ops += cost;
                    /* an independent pointwise value over the same domain
                     * (x * 2 next to (x ** 2).sum(1)): computed in the
                     * group's last walk of each row, from the row in cache,
                     * not in a pass of its own (next to x.sum(0): stored
                     * from the reduction's one walk, a side output). Its
                     * operands are computed before it and none depends on
                     * the group (not bad). */
                    lv[j] = ND_ROW_DOMAIN;
                    mem[nm++] = j;
                }
                continue;
            }
            for (int k = 0; k < nin && !bad; k++) {
                nd_id in = jn->op == ND_OP_EXTERN ? jn->extra[k] : jn->in[k];
                if (in >= 0 && lv[in] && g->nodes[in].op == ND_OP_REDUCE &&
                    (g->nodes[in].sub == ND_RED_ARGMAX || g->nodes[in].sub == ND_RED_ARGMIN))
                    bad = 1;
            }
            if (center && !D.trail && rowgrp[j] < 0 && nred < ND_MAXRED && !(skip && skip[j])) {
                rowdom D2;
                nd_id c = jn->op == ND_OP_REDUCE && eligible_reduce(g, j, &D2, 0) && same_dom(&D, &D2)
                              ? moment_center(g, j, lv, &D) : -1;
                if (c >= 0) {
                    lv[j] = (jn->flags & ND_F_KEEPDIMS) ? ND_ROW_A : ND_ROW_B;
                    mem[nm++] = j;
                    nred++;
                    center[j] = c;
                    continue;
                }
            }
            if (bad || rowgrp[j] >= 0) { dep[j] = 1; continue; }
            int join = 0, f = form_of(&D, jn);
            if (f == ND_ROW_DOMAIN && !D.trail) {
                /* no domain values, but side outputs: a pointwise value of
                 * side values only (sqrt(abs(x)) next to x.sum(0)) */
                int sidev = side && D.across;
                for (int k = 0; k < nin && sidev; k++) {
                    nd_id in = jn->op == ND_OP_EXTERN ? jn->extra[k] : jn->in[k];
                    if (in >= 0 && lv[in] && lv[in] != ND_ROW_DOMAIN) sidev = 0;
                }
                if (!sidev) f = 0;
            }
            switch (jn->op) {
            case ND_OP_UFUNC: case ND_OP_CAST: case ND_OP_WHERE:
                if (!f || !nd_emit->supported(g, j)) break;
                join = 1;
                for (int k = 0; k < jn->nin && join; k++) {
                    nd_id in = jn->in[k];
                    if (in < 0) continue;
                    if (lv[in]) {
                        if (f == ND_ROW_DOMAIN) join = lv[in] == ND_ROW_DOMAIN || lv[in] == ND_ROW_A;
                        else join = lv[in] == f;
                    } else if (f != ND_ROW_DOMAIN) {
                        join = is_scalar_like(g, in);
                    }
                }
                break;
            case ND_OP_REDUCE: {
                rowdom D2;
                if ((skip && skip[j]) || nred >= ND_MAXRED) break;
                if (!lv[jn->in[0]] || lv[jn->in[0]] != ND_ROW_DOMAIN) break;
                if (!eligible_reduce(g, j, &D2, 0) || !same_dom(&D, &D2)) break;
                join = 1;
                f = (jn->flags & ND_F_KEEPDIMS) ? ND_ROW_A : ND_ROW_B;
                nred++;
                break;
            }
            case ND_OP_VIEW:
                if (lv[jn->in[0]] && lv[jn->in[0]] != ND_ROW_DOMAIN &&
                    (f == ND_ROW_A || f == ND_ROW_B) && pure_reshape(g, j))
                    join = 1;
                break;
            default:
                break;
            }
            /* bounded as the independent joins above: 0-d values of the
             * result (rmax * i / n for each i of a loop after rmax =
             * r.max()) each joined as an output made a kernel of 800 */
            int cost = join ? operand_cost(g, j, lv) : 0;
            if (!join || ops + cost > ROW_MAX_OPS) { dep[j] = 1; continue; }
            ops += cost;
            lv[j] = (uint8_t)f;
            mem[nm++] = j;
        }
        (void)nred;
        if (horiz && (D.trail || (side && D.across))) nm = join_producers(g, r, &D, rowgrp, skip, need, lv, dep, mem, nm);
        if (horiz && (D.trail || (side && D.across))) nm = join_earlier(g, r, &D, rowgrp, skip, lv, dep, mem, nm);
        if (nm < 2) continue;
        for (int q = 0; q < nm; q++) { rowgrp[mem[q]] = ngroups; level[mem[q]] = lv[mem[q]]; }
        ngroups++;
    }
    PyMem_Free(dep);
    PyMem_Free(lv);
    PyMem_Free(mem);
    return ngroups;
}
