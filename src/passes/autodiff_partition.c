/* autodiff_partition.c -- what a deferred vjp's forward saves for its
 * backward (autodiff.h, nd_autodiff_partition): a minimum cut by bytes.
 *
 * The backward reads some forward values. Each is either saved by the
 * forward (costing its bytes while the pullback lives) or recomputed by the
 * backward from other values, which is only allowed through cheap pointwise
 * nodes (nd_autodiff_recomputable). Choosing the set of saved values with
 * the fewest bytes such that every value the backward needs is saved,
 * recomputable from saved ones, or free (inputs, scalars, indices) is a
 * minimum vertex cut: each forward node v becomes an edge v_in -> v_out of
 * capacity bytes(v); the source feeds the nodes that cannot be recomputed
 * (reductions, externs, scans, gathers, stored values); every forward edge
 * u -> v is u_out -> v_in of infinite capacity; the nodes the backward reads
 * feed the sink. The saved set is the cut nearest the source (the most
 * recomputation among the minimum ones), as AOTAutograd's partitioner.
 *
 * Example: z = x @ w, u = sin(z) * c (c a large broadcast), t = tanh(u):
 * saving everything the backward reads keeps z and t (and c); the cut keeps
 * z alone and the backward recomputes sin, * and tanh from it. A pointwise
 * node that reads two large non-recomputable values and whose result the
 * backward needs is saved itself (one array instead of two): the greedy
 * rule "recompute every pointwise node" could not see that.
 */
#include "passes/autodiff.h"
#include "core/core.h"
#include <string.h>

#define INF ((int64_t)1 << 60)

typedef struct {
    int32_t to, next;
    int64_t cap;
} edge;

typedef struct {
    int32_t nv, ne, cap;
    int32_t *head, *level, *iter, *queue;
    edge *e;
} flow;

static int fl_edge(flow *f, int32_t a, int32_t b, int64_t c)
{
    if (f->ne + 2 > f->cap) {
        int32_t cap = f->cap ? 2 * f->cap : 256;
        edge *ne = PyMem_Realloc(f->e, sizeof(edge) * (size_t)cap);
        if (!ne) { PyErr_NoMemory(); return -1; }
        f->e = ne;
        f->cap = cap;
    }
    f->e[f->ne] = (edge){b, f->head[a], c};
    f->head[a] = f->ne++;
    f->e[f->ne] = (edge){a, f->head[b], 0};
    f->head[b] = f->ne++;
    return 0;
}

/* breadth-first levels from s over edges with capacity left; 1 when t is reached */
static int fl_bfs(flow *f, int32_t s, int32_t t)
{
    for (int32_t v = 0; v < f->nv; v++) f->level[v] = -1;
    int32_t qh = 0, qt = 0;
    f->level[s] = 0;
    f->queue[qt++] = s;
    while (qh < qt) {
        int32_t v = f->queue[qh++];
        for (int32_t k = f->head[v]; k >= 0; k = f->e[k].next)
            if (f->e[k].cap > 0 && f->level[f->e[k].to] < 0) {
                f->level[f->e[k].to] = f->level[v] + 1;
                f->queue[qt++] = f->e[k].to;
            }
    }
    return f->level[t] >= 0;
}

/* one blocking-flow augmenting path (Dinic), iteratively: the graphs can be
 * deep chains, recursion could overflow the C stack */
static int64_t fl_push(flow *f, int32_t s, int32_t t, int32_t *path)
{
    int32_t depth = 0, v = s;
    for (;;) {
        if (v == t) {
            int64_t push = INF;
            for (int32_t d = 0; d < depth; d++)
                if (f->e[path[d]].cap < push) push = f->e[path[d]].cap;
            for (int32_t d = 0; d < depth; d++) {
                f->e[path[d]].cap -= push;
                f->e[path[d] ^ 1].cap += push;
            }
            return push;
        }
        int32_t k;
        for (k = f->iter[v]; k >= 0; k = f->e[k].next)
            if (f->e[k].cap > 0 && f->level[f->e[k].to] == f->level[v] + 1) break;
        f->iter[v] = k;
        if (k >= 0) {
            path[depth++] = k;
            v = f->e[k].to;
            continue;
        }
        if (v == s) return 0;
        f->level[v] = -1;  /* a dead end: never again this phase */
        v = f->e[path[--depth] ^ 1].to;
        f->iter[v] = f->e[f->iter[v]].next;
    }
}

static npy_intp node_bytes(const nd_node *n)
{
    PyArray_Descr *d = PyArray_DescrFromType(n->dtype);
    npy_intp s = d ? PyDataType_ELSIZE(d) : 8;
    Py_XDECREF(d);
    if (!d) PyErr_Clear();
    return nd_node_size(n) * s;
}

static int is_free(const nd_node *n)
{
    return !n->value && (n->op == ND_OP_INPUT || n->op == ND_OP_SCALAR || n->op == ND_OP_INDEX);
}

#define IN_COUNT(n) ((n)->op == ND_OP_EXTERN ? (n)->nextra : (n)->nin)
#define IN_AT(n, k) ((n)->op == ND_OP_EXTERN ? (n)->extra[k] : (n)->in[k])

Py_ssize_t nd_autodiff_partition(const nd_graph *g, nd_id nfwd, nd_id **saved,
                                 nd_ad_partition_stats *st)
{
    memset(st, 0, sizeof *st);
    *saved = NULL;
    char *need = PyMem_Calloc((size_t)nfwd + 1, 1);
    flow f = {0};
    int32_t *path = NULL;
    Py_ssize_t ns = -1;
    if (!need) { PyErr_NoMemory(); return -1; }
    /* the forward values the backward reads directly */
    for (nd_id i = nfwd; i < g->n; i++) {
        const nd_node *n = &g->nodes[i];
        for (int k = 0; k < IN_COUNT(n); k++) {
            nd_id x = IN_AT(n, k);
            if (x >= 0 && x < nfwd && !is_free(&g->nodes[x])) need[x] = 1;
        }
    }
    for (nd_id i = 0; i < nfwd; i++)
        if (need[i]) st->boundary_bytes += node_bytes(&g->nodes[i]);
    f.nv = 2 * nfwd + 2;
    int32_t S = 2 * nfwd, T = 2 * nfwd + 1;
    f.head = PyMem_Malloc(sizeof(int32_t) * (size_t)f.nv);
    f.level = PyMem_Malloc(sizeof(int32_t) * (size_t)f.nv);
    f.iter = PyMem_Malloc(sizeof(int32_t) * (size_t)f.nv);
    f.queue = PyMem_Malloc(sizeof(int32_t) * (size_t)f.nv);
    path = PyMem_Malloc(sizeof(int32_t) * (size_t)f.nv);
    if (!f.head || !f.level || !f.iter || !f.queue || !path) { PyErr_NoMemory(); goto done; }
    for (int32_t v = 0; v < f.nv; v++) f.head[v] = -1;
    /* only the forward nodes the needed ones are computed from matter:
     * walk down from them through recomputable nodes */
    char *rel = PyMem_Calloc((size_t)nfwd + 1, 1);
    if (!rel) { PyErr_NoMemory(); goto done; }
    for (nd_id i = nfwd - 1; i >= 0; i--) {
        if (!need[i] && !rel[i]) continue;
        rel[i] = 1;
        const nd_node *n = &g->nodes[i];
        if (is_free(n) || !nd_autodiff_recomputable(n)) continue;
        for (int k = 0; k < IN_COUNT(n); k++) {
            nd_id x = IN_AT(n, k);
            if (x >= 0 && !is_free(&g->nodes[x])) rel[x] = 1;
        }
    }
    int bad = 0;
    for (nd_id i = 0; i < nfwd && !bad; i++) {
        if (!rel[i]) continue;
        const nd_node *n = &g->nodes[i];
        bad |= fl_edge(&f, 2 * i, 2 * i + 1, node_bytes(n)) < 0;
        if (need[i]) bad |= fl_edge(&f, 2 * i + 1, T, INF) < 0;
        if (!nd_autodiff_recomputable(n)) {
            bad |= fl_edge(&f, S, 2 * i, INF) < 0;
            continue;
        }
        for (int k = 0; k < IN_COUNT(n) && !bad; k++) {
            nd_id x = IN_AT(n, k);
            if (x >= 0 && rel[x]) bad |= fl_edge(&f, 2 * x + 1, 2 * i, INF) < 0;
        }
    }
    PyMem_Free(rel);
    if (bad) goto done;
    while (fl_bfs(&f, S, T)) {
        memcpy(f.iter, f.head, sizeof(int32_t) * (size_t)f.nv);
        while (fl_push(&f, S, T, path) > 0) {}
    }
    fl_bfs(&f, S, T);  /* level >= 0: the source side of the minimum cut */
    *saved = PyMem_Malloc(sizeof(nd_id) * (size_t)(nfwd + 1));
    if (!*saved) { PyErr_NoMemory(); goto done; }
    ns = 0;
    for (nd_id i = 0; i < nfwd; i++)
        if (f.level[2 * i] >= 0 && f.level[2 * i + 1] < 0) {
            (*saved)[ns++] = i;
            st->saved_bytes += node_bytes(&g->nodes[i]);
        }
    /* what the backward recomputes: the needed nodes down to saved/free ones */
    for (Py_ssize_t k = 0; k < ns; k++) need[(*saved)[k]] = 2;
    for (nd_id i = nfwd - 1; i >= 0; i--) {
        if (need[i] != 1) continue;
        const nd_node *n = &g->nodes[i];
        st->recomputed++;
        for (int k = 0; k < IN_COUNT(n); k++) {
            nd_id x = IN_AT(n, k);
            if (x >= 0 && !need[x] && !is_free(&g->nodes[x])) need[x] = 1;
        }
    }
done:
    PyMem_Free(need);
    PyMem_Free(f.head);
    PyMem_Free(f.level);
    PyMem_Free(f.iter);
    PyMem_Free(f.queue);
    PyMem_Free(f.e);
    PyMem_Free(path);
    if (ns < 0) { PyMem_Free(*saved); *saved = NULL; }
    return ns;
}
