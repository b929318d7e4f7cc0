/* pass_cse.c -- common subexpressions merged (passes/cse.h).
 *
 * Value numbering in one pass over the nodes in index (topological)
 * order: a node's key is its op, attributes and the representatives of its
 * inputs, so a chain of duplicates (a scalar, its product with M, that
 * product's matmul) merges link by link. Equality is decided field by
 * field; the hash only finds candidates. */
#include "passes/cse.h"
#include "graph/hash.h"
#include <string.h>

static nd_id rep_of(const nd_id *rep, nd_id x) { return x >= 0 ? rep[x] : x; }

static int candidate(const nd_node *n)
{
    return !n->value && n->op != ND_OP_INPUT;
}

/* Nodes that cost nothing computed twice: a kernel parameter, an affine
 * map, an iota. Merged only where that lets an operation reading them
 * merge; else left as traced (a view merged for its own sake moves where
 * the scheduler reads a base, and can cost an in-place write its buffer) */
static int cheap(const nd_node *n)
{
    return n->op == ND_OP_SCALAR || n->op == ND_OP_VIEW || n->op == ND_OP_INDEX;
}

static uint64_t scalar_word(const nd_scalar *s, int k)
{
    uint64_t w[2];
    memcpy(w, s, sizeof w < sizeof *s ? sizeof w : sizeof *s);
    return w[k];
}

static uint64_t node_key(const nd_node *n, const nd_id *rep)
{
    uint64_t h = nd_hash_mix(ND_FNV_INIT, ((uint64_t)n->op << 56) ^ ((uint64_t)(uint16_t)n->aux << 32) ^
                                              (uint32_t)n->sub);
    h = nd_hash_mix(h, ((uint64_t)(uint32_t)n->dtype << 32) ^ ((uint64_t)n->ndim << 8) ^ (uint64_t)n->nin);
    for (int k = 0; k < n->nin; k++) h = nd_hash_mix(h, (uint64_t)(uint32_t)rep_of(rep, n->in[k]));
    for (int d = 0; d < n->ndim; d++) h = nd_hash_mix(h, (uint64_t)n->shape[d]);
    h = nd_hash_mix(h, scalar_word(&n->scalar, 0) ^ (scalar_word(&n->scalar, 1) * 31u));
    h = nd_hash_mix(h, (uint64_t)n->voff ^ ((uint64_t)n->axes << 1));
    if (n->op == ND_OP_EXTERN) {
        h = nd_hash_mix(h, (uint64_t)(uintptr_t)n->obj ^ (uint64_t)n->nextra);
        for (int k = 0; k < n->nextra; k++) h = nd_hash_mix(h, (uint64_t)(uint32_t)rep_of(rep, n->extra[k]));
    }
    return h;
}

/* 1 when two Python attribute objects are the same value; an error (an
 * attribute NumPy cannot compare) counts as different */
static int same_object(PyObject *a, PyObject *b)
{
    if (a == b) return 1;
    if (!a || !b || Py_TYPE(a) != Py_TYPE(b)) return 0;
    int r = PyObject_RichCompareBool(a, b, Py_EQ);
    if (r < 0) PyErr_Clear();
    return r == 1;
}

static int same_node(const nd_node *a, const nd_node *b, const nd_id *rep)
{
    if (a->op != b->op || a->ndim != b->ndim || a->aux != b->aux || a->sub != b->sub ||
        a->dtype != b->dtype || a->nin != b->nin || a->axes != b->axes || a->voff != b->voff ||
        a->vndim != b->vndim || ((a->flags ^ b->flags) & ~ND_F_OUTPUT))
        return 0;
    for (int k = 0; k < ND_MAXIN; k++)
        if (a->in_dtype[k] != b->in_dtype[k]) return 0;
    for (int k = 0; k < a->nin; k++)
        if (rep_of(rep, a->in[k]) != rep_of(rep, b->in[k])) return 0;
    if (a->ndim && memcmp(a->shape, b->shape, sizeof(npy_intp) * a->ndim)) return 0;
    if (memcmp(a->vshape, b->vshape, sizeof a->vshape) || memcmp(a->vstrides, b->vstrides, sizeof a->vstrides) ||
        memcmp(a->kperm, b->kperm, sizeof a->kperm) || memcmp(&a->scalar, &b->scalar, sizeof a->scalar))
        return 0;
    if (a->op == ND_OP_EXTERN) {
        if (a->nextra != b->nextra) return 0;
        for (int k = 0; k < a->nextra; k++)
            if (rep_of(rep, a->extra[k]) != rep_of(rep, b->extra[k])) return 0;
    }
    /* a SCALAR's Python object is its value (a big int, the weak type):
     * equal values of one type; every other op's object is its callable */
    if (a->op == ND_OP_SCALAR ? !same_object(a->obj, b->obj) : a->obj != b->obj) return 0;
    return same_object(a->attrs, b->attrs);
}

/* a flush of a few statements merges nothing, and must not pay
 * allocations to learn it: graphs up to SMALL nodes work on the stack */
#define SMALL 128

int nd_pass_cse(nd_graph *g, nd_id *rep, const char *keep)
{
    int32_t n = g->n, merged = 0, nreal = 0;
    for (nd_id i = 0; i < n; i++) {
        rep[i] = i;
        nreal += candidate(&g->nodes[i]) && !cheap(&g->nodes[i]);
    }
    if (nreal < 2) return 0;
    size_t cap = 16;
    while (cap < (size_t)n * 2) cap <<= 1;
    nd_id slot_s[2 * SMALL];
    uint64_t key_s[SMALL];
    nd_id *slot = cap <= 2 * SMALL ? slot_s : PyMem_Malloc(sizeof(nd_id) * cap);
    uint64_t *key = n <= SMALL ? key_s : PyMem_Malloc(sizeof(uint64_t) * (size_t)n);
    if (!slot || !key) {
        if (slot != slot_s) PyMem_Free(slot);
        if (key != key_s) PyMem_Free(key);
        PyErr_NoMemory();
        return -1;
    }
    memset(slot, 0xff, sizeof(nd_id) * cap);
    for (nd_id i = 0; i < n; i++) {
        const nd_node *x = &g->nodes[i];
        if (!candidate(x)) continue;
        uint64_t h = node_key(x, rep);
        key[i] = h;
        size_t s = (size_t)h & (cap - 1);
        for (;; s = (s + 1) & (cap - 1)) {
            nd_id j = slot[s];
            if (j == ND_NONE) {
                slot[s] = i;
                break;
            }
            if (key[j] != h || !same_node(&g->nodes[j], x, rep)) continue;
            if (!(keep ? keep[i] != 0 : (x->flags & ND_F_OUTPUT) != 0)) {
                rep[i] = j;
                /* equal scalars alone save nothing (kernel parameters):
                 * they count where they make operations merge */
                merged += !cheap(x);
            }
            break;
        }
    }
    if (slot != slot_s) PyMem_Free(slot);
    if (key != key_s) PyMem_Free(key);
    if (!merged) {
        for (nd_id i = 0; i < n; i++) rep[i] = i;
        return 0;
    }
    /* cheap merges only where a merged operation reads them (through
     * cheap merged nodes: a view of a view) */
    char useful_s[SMALL];
    char *useful = n <= SMALL ? useful_s : PyMem_Malloc((size_t)n);
    if (!useful) {
        PyErr_NoMemory();
        return -1;
    }
    memset(useful, 0, (size_t)n);
    for (nd_id i = n - 1; i >= 0; i--) {
        const nd_node *x = &g->nodes[i];
        if (rep[i] == i || (cheap(x) && !useful[i])) continue;
        int nx = x->nin + (x->op == ND_OP_EXTERN ? x->nextra : 0);
        for (int k = 0; k < nx; k++) {
            nd_id y = k < x->nin ? x->in[k] : x->extra[k - x->nin];
            if (y >= 0 && rep[y] != y && cheap(&g->nodes[y])) useful[y] = 1;
        }
    }
    for (nd_id i = 0; i < n; i++)
        if (rep[i] != i && cheap(&g->nodes[i]) && !useful[i]) rep[i] = i;
    if (useful != useful_s) PyMem_Free(useful);
    return merged;
}

nd_graph *nd_cse_graph(nd_graph *g, const nd_id *outs, int nout, nd_id **gmap_out)
{
    *gmap_out = NULL;
    int32_t n = g->n;
    nd_id rep_s[SMALL];
    char need_s[SMALL];
    nd_id *rep = n <= SMALL ? rep_s : PyMem_Malloc(sizeof(nd_id) * ((size_t)n + 1));
    char *need = n <= SMALL ? need_s : PyMem_Malloc((size_t)n + 1);
    nd_id *gmap = NULL;
    nd_graph *r = NULL;
    if (!rep || !need) goto fail;
    memset(need, 0, (size_t)n);
    for (int k = 0; k < nout; k++) need[outs[k]] = 1;
    int merged = nd_pass_cse(g, rep, need);
    if (merged <= 0) {
        if (rep != rep_s) PyMem_Free(rep);
        if (need != need_s) PyMem_Free(need);
        return NULL;
    }
    memset(need, 0, (size_t)n);
    gmap = PyMem_Malloc(sizeof(nd_id) * ((size_t)n + 1));
    r = gmap ? nd_graph_new() : NULL;
    if (!r) goto fail;
    for (int k = 0; k < nout; k++) need[rep[outs[k]]] = 1;
    for (nd_id i = n - 1; i >= 0; i--) {
        const nd_node *x = &g->nodes[i];
        if (!need[i] || rep[i] != i || !candidate(x)) continue;
        for (int k = 0; k < x->nin; k++)
            if (x->in[k] >= 0) need[rep[x->in[k]]] = 1;
        if (x->op == ND_OP_EXTERN)
            for (int k = 0; k < x->nextra; k++)
                if (x->extra[k] >= 0) need[rep[x->extra[k]]] = 1;
    }
    nd_graph_reserve(r, n - merged);
    for (nd_id i = 0; i < n; i++) {
        const nd_node *x = &g->nodes[i];
        if (rep[i] != i) {
            gmap[i] = gmap[rep[i]];
            continue;
        }
        if (!need[i]) {
            gmap[i] = ND_NONE;
            continue;
        }
        nd_node c = *x;
        c.extra = NULL;
        if (x->op == ND_OP_EXTERN && x->nextra) {
            c.extra = PyMem_Malloc(sizeof(nd_id) * (size_t)x->nextra);
            if (!c.extra) {
                PyErr_NoMemory();
                goto fail;
            }
            for (int k = 0; k < x->nextra; k++) c.extra[k] = x->extra[k] >= 0 ? gmap[rep[x->extra[k]]] : x->extra[k];
        }
        for (int k = 0; k < x->nin; k++) c.in[k] = x->in[k] >= 0 ? gmap[rep[x->in[k]]] : x->in[k];
        Py_XINCREF(c.obj);
        Py_XINCREF(c.attrs);
        Py_XINCREF(c.value);
        gmap[i] = nd_graph_add(r, &c);
        if (gmap[i] == ND_NONE) {
            Py_XDECREF(c.obj);
            Py_XDECREF(c.attrs);
            Py_XDECREF(c.value);
            PyMem_Free(c.extra);
            goto fail;
        }
    }
    if (rep != rep_s) PyMem_Free(rep);
    if (need != need_s) PyMem_Free(need);
    *gmap_out = gmap;
    return r;
fail:
    if (!PyErr_Occurred()) PyErr_NoMemory();
    nd_graph_free(r);
    if (rep != rep_s) PyMem_Free(rep);
    if (need != need_s) PyMem_Free(need);
    PyMem_Free(gmap);
    return NULL;
}
