/* graph.c -- storage, extraction and hashing of the typed DAG (graph.h). */
#include "graph.h"
#include "hash.h"
#include "core/dtypes.h"
#include "core/counters.h"
#include <string.h>

nd_graph *nd_graph_new(void)
{
    nd_graph *g = PyMem_Calloc(1, sizeof(*g));
    if (!g) { PyErr_NoMemory(); return NULL; }
    return g;
}

static void node_clear(nd_node *n)
{
    Py_CLEAR(n->obj);
    Py_CLEAR(n->attrs);
    Py_CLEAR(n->value);
    PyMem_Free(n->extra);
    n->extra = NULL;
}

/* Freed node arrays are kept for the next graphs: a loop of captures would
 * otherwise fault fresh pages in for every graph (a few hundred nodes make
 * an allocation that malloc serves with mmap) -- that was a fifth of a
 * row-update loop's time. Graphs are built and freed under the GIL. */
#define SPARES 4
#define SPARE_MAX_BYTES (4u << 20)
static struct { nd_node *nodes; int32_t cap; } spares[SPARES];

static void spare_put(nd_node *nodes, int32_t cap)
{
    if (!nodes) return;
    if ((size_t)cap * sizeof(nd_node) <= SPARE_MAX_BYTES) {
        int k = -1;
        for (int i = 0; i < SPARES && k < 0; i++) if (!spares[i].nodes) k = i;
        if (k < 0) {  /* full: replace the smallest, if smaller */
            k = 0;
            for (int i = 1; i < SPARES; i++) if (spares[i].cap < spares[k].cap) k = i;
        }
        if (!spares[k].nodes || spares[k].cap < cap) {
            PyMem_Free(spares[k].nodes);
            spares[k].nodes = nodes;
            spares[k].cap = cap;
            return;
        }
    }
    PyMem_Free(nodes);
}

/* the smallest kept array with more than `above` nodes, or NULL */
static nd_node *spare_take(int32_t above, int32_t *cap)
{
    int k = -1;
    for (int i = 0; i < SPARES; i++)
        if (spares[i].nodes && spares[i].cap > above && (k < 0 || spares[i].cap < spares[k].cap))
            k = i;
    if (k < 0) return NULL;
    nd_node *n = spares[k].nodes;
    *cap = spares[k].cap;
    spares[k].nodes = NULL;
    spares[k].cap = 0;
    return n;
}

void nd_graph_reserve(nd_graph *g, int32_t n)
{
    if (g->cap >= n) return;
    int32_t cap;
    nd_node *nn = spare_take(n - 1, &cap);
    if (!nn && (nn = PyMem_Malloc(sizeof(nd_node) * (size_t)n))) cap = n;
    if (!nn) return;
    if (g->n) memcpy(nn, g->nodes, sizeof(nd_node) * (size_t)g->n);
    spare_put(g->nodes, g->cap);
    g->nodes = nn;
    g->cap = cap;
}

void nd_graph_free(nd_graph *g)
{
    if (!g) return;
    if (g->derived_free) g->derived_free(g->derived);
    for (int32_t i = 0; i < g->n; i++) node_clear(&g->nodes[i]);
    spare_put(g->nodes, g->cap);
    PyMem_Free(g);
}

void nd_node_init(nd_node *n, int op, int dtype, int ndim, const npy_intp *shape)
{
    memset(n, 0, sizeof(*n));
    n->op = (uint8_t)op;
    n->dtype = dtype;
    n->ndim = (uint8_t)ndim;
    for (int k = 0; k < ND_MAXIN; k++) { n->in[k] = ND_NONE; n->in_dtype[k] = -1; }
    if (shape && ndim > 0) memcpy(n->shape, shape, sizeof(npy_intp) * (size_t)ndim);
}

npy_intp nd_node_size(const nd_node *n)
{
    npy_intp s = 1;
    for (int d = 0; d < n->ndim; d++) s *= n->shape[d];
    return s;
}

/* Room for one more node (0), or -1 with MemoryError. */
static int graph_room(nd_graph *g)
{
    if (g->n == g->cap) {
        int32_t cap;
        nd_node *nn = spare_take(g->cap, &cap);
        if (nn) {
            if (g->n) memcpy(nn, g->nodes, sizeof(nd_node) * (size_t)g->n);
            spare_put(g->nodes, g->cap);
        } else {
            cap = g->cap ? g->cap * 2 : 64;
            nn = PyMem_Realloc(g->nodes, sizeof(nd_node) * (size_t)cap);
            if (!nn) { PyErr_NoMemory(); return -1; }
        }
        g->nodes = nn;
        g->cap = cap;
    }
    return 0;
}

/* The node written at g->nodes[g->n] (graph_room) joins the graph. Its
 * inputs are read from src, the node it was copied from or itself: a node
 * is copied whole (a `rep movs` of ~540 bytes), and loads of what such a
 * copy just stored wait for the copy to land -- reading the copy's fields
 * back was most of the cost of adding and of extracting a node. */
static nd_id graph_commit_ids(nd_graph *g, const nd_id *in, int nin, const nd_id *extra, int nextra)
{
    nd_id id = g->n++;
    g->nodes[id].refs = 0;
    for (int k = 0; k < nin; k++)
        if (in[k] >= 0) g->nodes[in[k]].refs++;
    for (int k = 0; k < nextra; k++)
        if (extra[k] >= 0) g->nodes[extra[k]].refs++;
    return id;
}

static nd_id graph_commit(nd_graph *g, const nd_node *src)
{
    return graph_commit_ids(g, src->in, src->nin, src->extra, src->nextra);
}

nd_id nd_graph_add(nd_graph *g, const nd_node *proto)
{
    if (proto->ndim > ND_MAXDIMS) {
        PyErr_SetString(PyExc_ValueError, "numdyn: rank above ND_MAXDIMS");
        return ND_NONE;
    }
    if (graph_room(g) < 0) return ND_NONE;
    g->nodes[g->n] = *proto;
    return graph_commit(g, proto);
}


static int id_cmp(const void *a, const void *b)
{
    nd_id x = *(const nd_id *)a, y = *(const nd_id *)b;
    return (x > y) - (x < y);
}

/* ids[0..n) ascending. They are the ids marked in `mark` (and no others):
 * where they fill a good part of their range, reading the marks over the
 * range lists them in order at a byte a node -- a flush needing most of a
 * long capture (the return of a loop of small statements) sorted thousands
 * of ids per call (a sixth of the flush) -- else the ids are sorted. */
static void sort_marked(nd_id *ids, Py_ssize_t n, const char *mark)
{
    if (n < 2) return;
    nd_id lo = ids[0], hi = ids[0];
    for (Py_ssize_t i = 1; i < n; i++) {
        if (ids[i] < lo) lo = ids[i];
        if (ids[i] > hi) hi = ids[i];
    }
    if ((Py_ssize_t)(hi - lo) > 16 * n) {
        qsort(ids, (size_t)n, sizeof(nd_id), id_cmp);
        return;
    }
    Py_ssize_t k = 0;
    for (nd_id i = lo; i <= hi; i++)
        if (mark[i]) ids[k++] = i;
}

Py_ssize_t nd_graph_ancestors(const nd_graph *g, const nd_id *outs, int nout, int all_inputs,
                              char *mark, nd_id **list)
{
    Py_ssize_t n = 0, cap = nout + 16, top = 0;
    nd_id *got = PyMem_Malloc(sizeof(nd_id) * (size_t)cap);  /* marked; [top, n) to visit */
    *list = NULL;
    if (!got) { PyErr_NoMemory(); return -1; }
#define ND_MARK(x) do {                                                          \
        nd_id x_ = (x);                                                          \
        if (x_ >= 0 && !mark[x_]) {                                              \
            if (n == cap) {                                                      \
                nd_id *ng_ = PyMem_Realloc(got, sizeof(nd_id) * (size_t)(cap *= 2)); \
                if (!ng_) { PyMem_Free(got); PyErr_NoMemory(); return -1; }      \
                got = ng_;                                                       \
            }                                                                    \
            mark[x_] = 1;                                                        \
            got[n++] = x_;                                                       \
        }                                                                        \
    } while (0)
    for (int i = 0; i < nout; i++) ND_MARK(outs[i]);
    while (top < n) {
        const nd_node *nn = &g->nodes[got[top++]];
        if (nn->value || nn->op == ND_OP_INPUT) continue;
        if (all_inputs || nn->op != ND_OP_EXTERN)
            for (int k = 0; k < nn->nin; k++) ND_MARK(nn->in[k]);
        if (all_inputs || nn->op == ND_OP_EXTERN)
            for (int k = 0; k < nn->nextra; k++) ND_MARK(nn->extra[k]);
    }
#undef ND_MARK
    nd_counter_add(ND_CTR_FLUSH_NODES, n);
    sort_marked(got, n, mark);
    *list = got;
    return n;
}

nd_graph *nd_graph_extract_scratch(nd_graph *g, const nd_id *outs, int nout, char *need,
                                   nd_id *map, nd_id *new_outs, nd_id **order_out,
                                   Py_ssize_t *norder_out)
{
    nd_id *order = NULL;
    *order_out = NULL;
    *norder_out = 0;
    nd_graph *r = nd_graph_new();
    if (!r) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t norder = nd_graph_ancestors(g, outs, nout, 0, need, &order);
    if (norder < 0) {
        memset(need, 0, (size_t)g->n);  /* out of memory: the marks are not listed */
        nd_graph_free(r);
        return NULL;
    }
    for (Py_ssize_t o = 0; o < norder; o++) need[order[o]] = 0;
    nd_graph_reserve(r, (int32_t)norder);
    Py_ssize_t o = 0;
    for (; o < norder; o++) {
        nd_id i = order[o];
        nd_node *n = &g->nodes[i];
        /* written in place (a flush extracts a graph each time: one copy
         * of each node, not two through a prototype) */
        if (graph_room(r) < 0) goto fail;
        nd_node *c = &r->nodes[r->n];
        if (n->value || n->op == ND_OP_INPUT) {
            PyArrayObject *a = (PyArrayObject *)(n->value ? n->value : n->obj);
            if (PyArray_NDIM(a) > ND_MAXDIMS) {
                PyErr_SetString(PyExc_ValueError, "numdyn: rank above ND_MAXDIMS");
                goto fail;
            }
            nd_node_init(c, ND_OP_INPUT, PyArray_TYPE(a), PyArray_NDIM(a), PyArray_DIMS(a));
            c->obj = Py_NewRef((PyObject *)a);
        } else {
            /* (fields read from n, not from the copy: graph_commit) */
            *c = *n;
            c->value = NULL;
            c->extra = NULL;
            if (n->op == ND_OP_EXTERN && n->nextra) {
                nd_id *x = PyMem_Malloc(sizeof(nd_id) * (size_t)n->nextra);
                if (!x) { PyErr_NoMemory(); goto fail; }
                for (int k = 0; k < n->nextra; k++) x[k] = map[n->extra[k]];
                c->extra = x;
            }
            Py_XINCREF(n->obj);
            Py_XINCREF(n->attrs);
            for (int k = 0; k < n->nin; k++) c->in[k] = n->in[k] >= 0 ? map[n->in[k]] : n->in[k];
            map[i] = graph_commit_ids(r, c->in, n->nin, c->extra, c->extra ? n->nextra : 0);
            continue;
        }
        map[i] = graph_commit_ids(r, NULL, 0, NULL, 0);
    }
    for (int i = 0; i < nout; i++) new_outs[i] = map[outs[i]];
    *order_out = order;
    *norder_out = norder;
    return r;
fail:
    for (Py_ssize_t q = 0; q < o; q++) map[order[q]] = ND_NONE;
    PyMem_Free(order);
    nd_graph_free(r);
    return NULL;
}

nd_graph *nd_graph_extract(nd_graph *g, const nd_id *outs, int nout,
                           nd_id *map_out, nd_id *new_outs)
{
    nd_id *map = map_out, *order = NULL;
    Py_ssize_t norder;
    char *need = PyMem_Calloc((size_t)g->n + 1, 1);
    if (!map) map = PyMem_Malloc(sizeof(nd_id) * ((size_t)g->n + 1));
    nd_graph *r = NULL;
    if (!need || !map) {
        PyErr_NoMemory();
    } else {
        memset(map, 0xff, sizeof(nd_id) * (size_t)g->n);  /* ND_NONE */
        r = nd_graph_extract_scratch(g, outs, nout, need, map, new_outs, &order, &norder);
    }
    PyMem_Free(need);
    PyMem_Free(order);
    if (map != map_out) PyMem_Free(map);
    return r;
}


static uint64_t layout_class(PyArrayObject *a)
{
    int f = PyArray_FLAGS(a);
    uint64_t c = (f & NPY_ARRAY_C_CONTIGUOUS) ? 1 : (f & NPY_ARRAY_F_CONTIGUOUS) ? 2 : 3;
    if (!(f & NPY_ARRAY_ALIGNED)) c |= 8;
    return c;
}

/* Which non-1 sizes are equal to which. Passes may rely on two dims having
 * the same extent where broadcasting does not promise it (a reduction's
 * input domain against a consumer of its keepdims result: (4,3)->(4,1)
 * then + (4,6)), so a plan is only reusable for a graph whose sizes repeat
 * in the same pattern. Each non-1 dim contributes the index of its size in
 * the order sizes first appear. */
uint64_t nd_graph_size_pattern(const nd_graph *g)
{
    enum { NCLS = 64 };
    npy_intp seen[NCLS];
    int ns = 0;
    uint64_t h = 0x73697a6570617474ULL;
    for (nd_id i = 0; i < g->n; i++) {
        const nd_node *n = &g->nodes[i];
        for (int d = 0; d < n->ndim; d++) {
            npy_intp s = n->shape[d];
            if (s == 1) continue;
            uint64_t cls;
            int k = 0;
            while (k < ns && seen[k] != s) k++;
            if (k < ns) cls = (uint64_t)k;
            else if (ns < NCLS) { seen[ns] = s; cls = (uint64_t)ns++; }
            else cls = NCLS + (uint64_t)s;  /* past the table: the size itself */
            h = nd_hash_mix(h, cls ^ ((uint64_t)d << 56));
        }
        /* the extent of a short reduction is structure (ND_SHORT_MAX) */
        if (n->op == ND_OP_REDUCE && n->in[0] >= 0) {
            const nd_node *x = &g->nodes[n->in[0]];
            npy_intp prod = 1;
            for (int d = 0; d < x->ndim; d++)
                if ((n->axes >> d) & 1) prod = prod > ND_SHORT_MAX ? prod : prod * x->shape[d];
            if (prod <= ND_SHORT_MAX)
                for (int d = 0; d < x->ndim; d++)
                    if ((n->axes >> d) & 1) h = nd_hash_mix(h, 0x73686f7274ULL ^ (uint64_t)x->shape[d]);
        }
    }
    return h;
}

/* The structure, word by word; sizes only as "is this dim 1" and the
 * equality pattern of the others */
uint64_t nd_graph_hash(nd_graph *g, const nd_id *outs, int nout)
{
    uint64_t h = nd_hash_mix(ND_FNV_INIT, nd_graph_size_pattern(g));
    for (nd_id i = 0; i < g->n; i++) {
        nd_node *n = &g->nodes[i];
        h = nd_hash_mix(h, ((uint64_t)n->op << 48) ^ ((uint64_t)(uint16_t)n->aux << 32) ^ (uint32_t)n->sub);
        h = nd_hash_mix(h, ((uint64_t)(uint32_t)n->dtype << 32) ^ ((uint64_t)n->ndim << 16) ^ (uint64_t)n->nin);
        for (int k = 0; k < ND_MAXIN; k++) h = nd_hash_mix(h, ((uint64_t)(uint32_t)n->in[k] << 32) ^ (uint32_t)n->in_dtype[k]);
        uint64_t ones = 0;
        for (int d = 0; d < n->ndim; d++) if (n->shape[d] == 1) ones |= 1ULL << d;
        h = nd_hash_mix(h, ones);
        h = nd_hash_mix(h, n->flags & ~(uint64_t)ND_F_OUTPUT);
        h = nd_hash_mix(h, n->axes);
        if (n->flags & ND_F_KORDER)
            for (int d = 0; d < n->ndim; d++) h = nd_hash_mix(h, (uint64_t)(uint8_t)n->kperm[d]);
        if (n->op == ND_OP_VIEW || n->op == ND_OP_SETITEM) {
            /* view maps are structure: offsets/strides change the code */
            h = nd_hash_mix(h, (uint64_t)n->voff);
            h = nd_hash_mix(h, n->vndim);
            for (int d = 0; d < ND_MAXDIMS; d++) {
                h = nd_hash_mix(h, (uint64_t)n->vstrides[d]);
                h = nd_hash_mix(h, (uint64_t)n->vshape[d]);
            }
        }
        if (n->op == ND_OP_INPUT && n->obj && PyArray_Check(n->obj))
            h = nd_hash_mix(h, layout_class((PyArrayObject *)n->obj));
        if (n->op == ND_OP_EXTERN) {
            h = nd_hash_mix(h, (uint64_t)(uintptr_t)n->obj);
            for (int k = 0; k < n->nextra; k++) h = nd_hash_mix(h, (uint64_t)n->extra[k]);
            if (n->attrs) {
                Py_hash_t ah = PyObject_Hash(n->attrs);
                if (ah == -1) { PyErr_Clear(); ah = (Py_hash_t)(uintptr_t)n->attrs; }
                h = nd_hash_mix(h, (uint64_t)ah);
            }
        }
    }
    for (int i = 0; i < nout; i++) h = nd_hash_mix(h, (uint64_t)outs[i]);
    return h;
}

static const char *op_names[ND_OP_COUNT] = {
    "input", "scalar", "ufunc", "cast", "where", "reduce", "scan", "view",
    "setitem", "index", "gather", "extern",
};

const char *nd_op_name(int op)
{
    return (op >= 0 && op < ND_OP_COUNT) ? op_names[op] : "?";
}

static const struct { const char *name; int nin, nout; } uf_table[ND_UF_COUNT] = {
#define ND_UF(id, pyname, nin, nout) {pyname, nin, nout},
#include "ufuncs.def"
#undef ND_UF
};
static PyObject *uf_objects[ND_UF_COUNT];

const char *nd_ufunc_name(int id)
{
    if (id == ND_RED_ARGMAX) return "argmax";
    if (id == ND_RED_ARGMIN) return "argmin";
    return (id >= 0 && id < ND_UF_COUNT) ? uf_table[id].name : "?";
}
int nd_ufunc_nin(int id) { return uf_table[id].nin; }
int nd_ufunc_nout(int id) { return uf_table[id].nout; }

int nd_ufunc_is_comparison(int uf)
{
    switch (uf) {
    case ND_UF_GREATER: case ND_UF_GREATER_EQUAL: case ND_UF_LESS:
    case ND_UF_LESS_EQUAL: case ND_UF_EQUAL: case ND_UF_NOT_EQUAL:
        return 1;
    }
    return 0;
}
PyObject *nd_ufunc_object(int id) { return uf_objects[id]; }

int nd_ufunc_lookup(PyObject *ufunc)
{
    /* identity scan: 87 pointer compares, cheaper than a dict lookup's hash */
    for (int i = 0; i < ND_UF_COUNT; i++)
        if (uf_objects[i] == ufunc) return i;
    return -1;
}

int nd_ufuncs_init(void)
{
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) return -1;
    for (int i = 0; i < ND_UF_COUNT; i++) {
        uf_objects[i] = PyObject_GetAttrString(np, uf_table[i].name);
        if (!uf_objects[i]) { Py_DECREF(np); return -1; }
    }
    Py_DECREF(np);
    return 0;
}

int nd_supported_array(PyObject *obj)
{
    if (!PyArray_Check(obj)) return 0;
    PyArrayObject *a = (PyArrayObject *)obj;
    if (PyArray_NDIM(a) > ND_MAXDIMS || !PyArray_ISNOTSWAPPED(a)) return 0;
    return nd_dtype_known(PyArray_TYPE(a)) && PyArray_ITEMSIZE(a) > 0;
}

int nd_scalar_power_class(const nd_node *sc)
{
    /* (the value the float loop sees: an integer exponent is cast to it) */
    double v;
    if (PyTypeNum_ISFLOAT(sc->dtype)) v = sc->scalar.f;
    else if (PyTypeNum_ISSIGNED(sc->dtype)) v = (double)sc->scalar.i;
    else if (PyTypeNum_ISUNSIGNED(sc->dtype)) v = (double)sc->scalar.u;
    else return ND_POW_GENERAL;
    return v == 2.0 ? ND_POW_SQUARE : v == -1.0 ? ND_POW_RECIPROCAL : v == 0.5 ? ND_POW_SQRT : ND_POW_GENERAL;
}
