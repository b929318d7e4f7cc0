/* guard_key.c -- the fit rule: which input properties a compiled program
 * depends on (see guards.h). */
#include "core/npy.h"
#include "guards.h"
#include "graph/hash.h"

uint64_t nd_guard_array_key(PyObject *obj)
{
    if (!PyArray_Check(obj)) return 0;
    PyArrayObject *a = (PyArrayObject *)obj;
    int f = PyArray_FLAGS(a);
    uint64_t layout = (f & NPY_ARRAY_C_CONTIGUOUS) ? 1 : (f & NPY_ARRAY_F_CONTIGUOUS) ? 2 : 3;
    uint64_t ones = 0;
    for (int d = 0; d < PyArray_NDIM(a) && d < 64; d++)
        if (PyArray_DIM(a, d) == 1) ones |= 1ULL << d;
    uint64_t h = nd_hash_mix(0x6e64677561726473ULL, (uint64_t)PyArray_TYPE(a));
    h = nd_hash_mix(h, (uint64_t)PyArray_NDIM(a));
    h = nd_hash_mix(h, ones);
    h = nd_hash_mix(h, layout | ((f & NPY_ARRAY_ALIGNED) ? 0 : 8) | (PyArray_ISNOTSWAPPED(a) ? 0 : 16));
    return h;
}

/* Word-wise, so a graph-cache hit costs a few ns per node. Covers what
 * nd_graph_hash covers (ops, dtypes, ranks, size-1 dims, the equality
 * pattern of the other sizes, view maps, attrs,
 * extern identity) plus each input's guard key. */
uint64_t nd_guard_graph_key(nd_graph *g, const nd_id *outs, int nout)
{
    uint64_t h = nd_hash_mix(0x67726170686b6579ULL ^ (uint64_t)g->n, nd_graph_size_pattern(g));
    for (nd_id i = 0; i < g->n; i++) {
        nd_node *n = &g->nodes[i];
        h = nd_hash_mix(h, ((uint64_t)n->op << 56) ^ ((uint64_t)(uint16_t)n->aux << 40) ^
                   ((uint64_t)n->ndim << 32) ^ (uint32_t)n->sub);
        h = nd_hash_mix(h, ((uint64_t)(uint32_t)n->dtype << 32) ^ ((uint64_t)(uint32_t)n->nin << 16) ^
                   (n->flags & ~(uint64_t)ND_F_OUTPUT));
        for (int k = 0; k < n->nin && k < ND_MAXIN; k++)
            h = nd_hash_mix(h, ((uint64_t)(uint32_t)n->in[k] << 32) ^ (uint32_t)n->in_dtype[k]);
        uint64_t ones = 0;
        for (int d = 0; d < n->ndim; d++) if (n->shape[d] == 1) ones |= 1ULL << d;
        h = nd_hash_mix(h, ones ^ (n->axes * 0x9e3779b97f4a7c15ULL));
        if (n->flags & ND_F_KORDER)  /* the memory order of an output is structure */
            for (int d = 0; d < n->ndim; d++) h = nd_hash_mix(h, 0x6b6f7264ULL ^ (uint64_t)(uint8_t)n->kperm[d]);
        switch (n->op) {
        case ND_OP_UFUNC:
            /* x ** 2 with a scalar 2 compiles to x * x, ** -1 and ** 0.5
             * likewise (NumPy's fast paths): which class an exponent is
             * of is structure */
            if ((n->sub == ND_UF_POWER || n->sub == ND_UF_FLOAT_POWER) && n->nin > 1 && n->in[1] >= 0 &&
                g->nodes[n->in[1]].op == ND_OP_SCALAR)
                h = nd_hash_mix(h, 0x706f7732ULL ^ (uint64_t)nd_scalar_power_class(&g->nodes[n->in[1]]));
            break;
        case ND_OP_INPUT:
            if (n->obj) h = nd_hash_mix(h, nd_guard_array_key(n->obj));
            /* sizes of dims marked static (or all, compile(dynamic=False)) */
            if (n->obj && (nd_marks_live || nd_marks_spec_all)) h = nd_hash_mix(h, nd_marks_size_key(n->obj));
            break;
        case ND_OP_VIEW: case ND_OP_SETITEM: {
            /* view maps are structure: offsets/strides change the code */
            int vr = n->op == ND_OP_SETITEM ? n->vndim : n->ndim;
            h = nd_hash_mix(h, (uint64_t)n->voff ^ ((uint64_t)n->vndim << 56));
            for (int d = 0; d < vr && d < ND_MAXDIMS; d++) {
                h = nd_hash_mix(h, (uint64_t)n->vstrides[d]);
                if (n->op == ND_OP_SETITEM) h = nd_hash_mix(h, (uint64_t)(n->vshape[d] == 1));
            }
            break;
        }
        case ND_OP_EXTERN:
            h = nd_hash_mix(h, (uint64_t)(uintptr_t)n->obj);
            for (int k = 0; k < n->nextra; k++) h = nd_hash_mix(h, (uint64_t)(uint32_t)n->extra[k]);
            if (n->attrs) {
                Py_hash_t ah = PyObject_Hash(n->attrs);
                if (ah == -1) { PyErr_Clear(); ah = (Py_hash_t)(uintptr_t)n->attrs; }
                h = nd_hash_mix(h, (uint64_t)ah);
            }
            break;
        default:
            break;
        }
    }
    for (int i = 0; i < nout; i++) h = nd_hash_mix(h, (uint64_t)(uint32_t)outs[i] ^ 0x6f7574ULL);
    return h;
}

uint64_t nd_guard_skeleton(nd_graph *g, const nd_id *outs, int nout)
{
    uint64_t h = 0x736b656c65746f6eULL;
    for (nd_id i = 0; i < g->n; i++) {
        nd_node *n = &g->nodes[i];
        h = nd_hash_mix(h, ((uint64_t)n->op << 40) ^ ((uint64_t)(uint32_t)n->sub << 8) ^ (uint64_t)n->ndim);
        h = nd_hash_mix(h, ((uint64_t)(uint32_t)n->dtype << 32) ^ (uint32_t)n->in_dtype[0]);
        for (int k = 0; k < n->nin && k < ND_MAXIN; k++) h = nd_hash_mix(h, (uint64_t)(uint32_t)n->in[k]);
        h = nd_hash_mix(h, n->axes ^ ((uint64_t)(uint16_t)n->aux << 48));
    }
    for (int i = 0; i < nout; i++) h = nd_hash_mix(h, (uint64_t)(uint32_t)outs[i]);
    return h;
}
