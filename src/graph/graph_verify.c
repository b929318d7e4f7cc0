/* graph_verify.c -- the IR's invariants (graph.h), checked after tracing
 * and after the passes when NUMDYN_DEBUG=1 (and on demand by
 * Graph.verify()). A broken invariant is a numdyn bug: SystemError naming
 * the stage, the node and the rule. */
#include "graph.h"
#include "core/dtypes.h"
#include <stdlib.h>
#include <string.h>

int nd_debug_checks(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("NUMDYN_DEBUG");
        on = e && e[0] && strcmp(e, "0") != 0;
    }
    return on;
}

static int broken(const char *stage, const nd_graph *g, nd_id i, const char *what)
{
    PyErr_Format(PyExc_SystemError,
                 "numdyn: graph invariant broken after %s: node %d (%s) of %d: %s",
                 stage, (int)i, nd_op_name(g->nodes[i].op), (int)g->n, what);
    return -1;
}

/* `in` broadcasts to `out` (NumPy's rule, dims aligned at the right) */
static int broadcasts(const nd_node *in, const nd_node *out)
{
    if (in->ndim > out->ndim) return 0;
    for (int d = 1; d <= in->ndim; d++) {
        npy_intp a = in->shape[in->ndim - d], b = out->shape[out->ndim - d];
        if (a != b && a != 1) return 0;
    }
    return 1;
}

static int verify_node(const nd_graph *g, nd_id i, const char *stage)
{
    const nd_node *n = &g->nodes[i];
    if (n->op >= ND_OP_COUNT) return broken(stage, g, i, "unknown op");
    if (n->ndim > ND_MAXDIMS) return broken(stage, g, i, "rank above ND_MAXDIMS");
    for (int d = 0; d < n->ndim; d++)
        if (n->shape[d] < 0) return broken(stage, g, i, "negative dimension");
    if (n->op != ND_OP_EXTERN && !nd_dtype_known(n->dtype))
        return broken(stage, g, i, "dtype outside the IR's dtypes");
    if (n->nin < 0 || n->nin > ND_MAXIN) return broken(stage, g, i, "input count out of range");
    for (int k = 0; k < n->nin; k++) {
        /* a node only refers to nodes with smaller ids: index order is a
         * topological order */
        if (n->in[k] < ND_NONE || n->in[k] >= i)
            return broken(stage, g, i, "input is not an earlier node");
    }
    if (n->refs < 0) return broken(stage, g, i, "negative consumer count");
    if (n->flags & ND_F_KORDER) {
        uint32_t seen = 0;
        for (int d = 0; d < n->ndim; d++) {
            int p = n->kperm[d];
            if (p < 0 || p >= n->ndim || (seen >> p) & 1)
                return broken(stage, g, i, "kperm is not a permutation of the dims");
            seen |= 1u << p;
        }
    }
    switch (n->op) {
    case ND_OP_UFUNC:
        if (n->sub < 0 || n->sub >= ND_UF_COUNT) return broken(stage, g, i, "unknown ufunc");
        /* fallthrough */
    case ND_OP_WHERE:
    case ND_OP_CAST:
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0 && !broadcasts(&g->nodes[n->in[k]], n))
                return broken(stage, g, i, "input does not broadcast to the node's shape");
        break;
    case ND_OP_REDUCE:
        if (n->nin < 1 || n->in[0] < 0) return broken(stage, g, i, "reduction without an operand");
        if ((n->sub < 0 || n->sub >= ND_UF_COUNT) && n->sub != ND_RED_ARGMAX &&
            n->sub != ND_RED_ARGMIN)
            return broken(stage, g, i, "unknown reduction");
        if (g->nodes[n->in[0]].ndim < 64 && (n->axes >> g->nodes[n->in[0]].ndim) != 0)
            return broken(stage, g, i, "reduced axis beyond the operand's rank");
        break;
    case ND_OP_SCAN:
        if (n->nin < 1 || n->in[0] < 0) return broken(stage, g, i, "scan without an operand");
        if (n->ndim && (n->aux < 0 || n->aux >= n->ndim)) return broken(stage, g, i, "scan axis out of range");
        break;
    case ND_OP_SETITEM: {
        if (n->nin < 2 || n->in[0] < 0 || n->in[1] < 0)
            return broken(stage, g, i, "setitem without base and value");
        const nd_node *b = &g->nodes[n->in[0]];
        if (b->ndim != n->ndim || memcmp(b->shape, n->shape, sizeof(npy_intp) * n->ndim) != 0)
            return broken(stage, g, i, "setitem's result is not shaped like its base");
        if (n->vndim > ND_MAXDIMS) return broken(stage, g, i, "region rank above ND_MAXDIMS");
        break;
    }
    case ND_OP_VIEW:
        if (n->nin < 1 || n->in[0] < 0) return broken(stage, g, i, "view without a base");
        break;
    case ND_OP_EXTERN:
        if (n->nextra < 0 || (n->nextra > 0 && !n->extra))
            return broken(stage, g, i, "extern inputs missing");
        for (int k = 0; k < n->nextra; k++)
            if (n->extra[k] < 0 || n->extra[k] >= i)
                return broken(stage, g, i, "extern input is not an earlier node");
        if (!n->obj) return broken(stage, g, i, "extern without a callable");
        break;
    case ND_OP_INPUT: {
        PyObject *a = n->value ? n->value : n->obj;
        if (a && PyArray_Check(a)) {
            PyArrayObject *arr = (PyArrayObject *)a;
            if (PyArray_NDIM(arr) != n->ndim ||
                memcmp(PyArray_DIMS(arr), n->shape, sizeof(npy_intp) * n->ndim) != 0)
                return broken(stage, g, i, "input array shaped unlike its node");
        }
        break;
    }
    default:
        break;
    }
    return 0;
}

int nd_graph_verify(const nd_graph *g, const nd_id *outs, int nout, const char *stage)
{
    for (nd_id i = 0; i < g->n; i++)
        if (verify_node(g, i, stage) < 0) return -1;
    for (int k = 0; k < nout; k++) {
        if (outs[k] < 0 || outs[k] >= g->n) {
            PyErr_Format(PyExc_SystemError,
                         "numdyn: graph invariant broken after %s: output %d is node %d of %d",
                         stage, k, (int)outs[k], (int)g->n);
            return -1;
        }
    }
    return 0;
}
