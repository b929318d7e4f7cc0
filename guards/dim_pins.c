/* dim_pins.c -- labels of where each node dim's extent comes from, and the
 * first place a dim marked dynamic meets a constant one (dim_pins.h). */
#include "core/npy.h"
#include "dim_pins.h"
#include <string.h>

void nd_pins_clear(nd_pins *p)
{
    PyMem_Free(p->lab);
    memset(p, 0, sizeof *p);
}

/* two labels of dims of one extent (> 1) meet: 1 when that pins a dynamic
 * dim (*sym set), else 0 with *acc the label of the joint extent */
static int unify(int32_t *acc, int32_t b, int *sym)
{
    int32_t a = *acc;
    if ((a > 0 && b == ND_PIN_CONST) || (a == ND_PIN_CONST && b > 0)) {
        *sym = a > 0 ? a : b;
        return 1;
    }
    *acc = a > 0 ? a : b > 0 ? b : (a == ND_PIN_CONST || b == ND_PIN_CONST) ? ND_PIN_CONST : ND_PIN_FREE;
    return 0;
}

/* dim of node m (C-order element stride `stride`, extent `ext` > 1) that
 * an affine map step of `stride` elements walks whole, or -1 */
static int whole_dim(const nd_node *m, npy_intp stride, npy_intp ext)
{
    npy_intp s = 1;
    int found = -1;
    if (stride < 0) stride = -stride;
    for (int d = m->ndim - 1; d >= 0; d--) {
        if (m->shape[d] == ext && s == stride) {
            if (found >= 0) return -1;  /* ambiguous: two dims fit */
            found = d;
        }
        s *= m->shape[d] ? m->shape[d] : 1;
    }
    return found;
}

static int is_matmul(PyObject *fn)
{
    if (!fn) return 0;
    PyObject *name = PyObject_GetAttrString(fn, "__name__");
    if (!name) { PyErr_Clear(); return 0; }
    int r = PyUnicode_Check(name) && (PyUnicode_CompareWithASCIIString(name, "matmul") == 0 ||
                                      PyUnicode_CompareWithASCIIString(name, "dot") == 0);
    Py_DECREF(name);
    return r;
}

int nd_pins_scan(nd_pins *p, const nd_graph *g, nd_pin_input_fn input, nd_pin_const_fn konst,
                 void *ctx, nd_pin_found *out)
{
    if (g->n > p->cap) {
        nd_id cap = g->n < 64 ? 64 : g->n * 2;
        int32_t *nl = PyMem_Realloc(p->lab, sizeof(int32_t) * ND_MAXDIMS * (size_t)cap);
        if (!nl) { PyErr_NoMemory(); return -1; }
        p->lab = nl;
        p->cap = cap;
    }
    for (nd_id i = p->done; i < g->n; i++) {
        const nd_node *n = &g->nodes[i];
        int32_t *L = p->lab + (size_t)i * ND_MAXDIMS;
        for (int d = 0; d < ND_MAXDIMS; d++) L[d] = ND_PIN_FREE;
        p->done = i + 1;
        int sym = 0;
        if (konst && n->op != ND_OP_INPUT) {
            uint64_t m = konst(ctx, i);
            for (int d = 0; m && d < n->ndim; d++)
                if (m >> d & 1) L[d] = ND_PIN_CONST;
            if (m) continue;  /* a made array: no inputs to unify */
        }
#define LAB(id, d) (p->lab[(size_t)(id) * ND_MAXDIMS + (size_t)(d)])
#define PIN(ext, how_) do { out->node = i; out->sym = sym; out->size = (ext); out->how = (how_); return 1; } while (0)
        switch (n->op) {
        case ND_OP_INPUT:
            for (int d = 0; d < n->ndim; d++) L[d] = input(ctx, n, i, d);
            break;
        case ND_OP_UFUNC: case ND_OP_WHERE:
            for (int j = 0; j < n->ndim; j++) {
                if (n->shape[j] <= 1) continue;
                int32_t acc = ND_PIN_FREE;
                for (int k = 0; k < n->nin; k++) {
                    const nd_node *m = &g->nodes[n->in[k]];
                    int dj = m->ndim - (n->ndim - j);
                    if (dj < 0 || m->shape[dj] != n->shape[j]) continue;
                    if (unify(&acc, LAB(n->in[k], dj), &sym)) PIN(n->shape[j], "broadcasts it against");
                }
                L[j] = acc;
            }
            break;
        case ND_OP_CAST: case ND_OP_SCAN:
            if (n->nin >= 1 && g->nodes[n->in[0]].ndim == n->ndim)
                for (int d = 0; d < n->ndim; d++) L[d] = LAB(n->in[0], d);
            break;
        case ND_OP_REDUCE: {
            const nd_node *m = &g->nodes[n->in[0]];
            int keep = (n->flags & ND_F_KEEPDIMS) != 0, j = 0;
            for (int d = 0; d < m->ndim && j < n->ndim; d++) {
                int red = (int)(n->axes >> d & 1);
                if (red && !keep) continue;
                L[j++] = red ? ND_PIN_FREE : LAB(n->in[0], d);
            }
            break;
        }
        case ND_OP_VIEW: {
            const nd_node *m = &g->nodes[n->in[0]];
            for (int j = 0; j < n->ndim; j++) {
                if (n->shape[j] <= 1 || n->vstrides[j] == 0) continue;
                int d = whole_dim(m, n->vstrides[j], n->shape[j]);
                if (d >= 0) L[j] = LAB(n->in[0], d);
            }
            break;
        }
        case ND_OP_SETITEM: {
            const nd_node *m = &g->nodes[n->in[0]];
            for (int d = 0; d < n->ndim; d++) L[d] = LAB(n->in[0], d);
            if (n->nin < 2) break;
            const nd_node *v = &g->nodes[n->in[1]];
            for (int j = 0; j < n->vndim; j++) {
                if (n->vshape[j] <= 1 || n->vstrides[j] == 0) continue;
                int d = whole_dim(m, n->vstrides[j], n->vshape[j]);
                int dj = v->ndim - (n->vndim - j);
                if (dj < 0 || v->shape[dj] != n->vshape[j]) continue;
                int32_t acc = d >= 0 ? LAB(n->in[0], d) : ND_PIN_FREE;
                if (unify(&acc, LAB(n->in[1], dj), &sym)) PIN(n->vshape[j], "stores it into");
            }
            break;
        }
        case ND_OP_EXTERN:
            if (n->nextra == 2 && is_matmul(n->obj)) {
                nd_id a = n->extra[0], b = n->extra[1];
                const nd_node *A = &g->nodes[a], *B = &g->nodes[b];
                if (A->ndim >= 1 && B->ndim >= 1) {
                    int ka = A->ndim - 1, kb = B->ndim >= 2 ? B->ndim - 2 : 0;
                    if (A->shape[ka] > 1 && A->shape[ka] == B->shape[kb]) {
                        int32_t acc = LAB(a, ka);
                        if (unify(&acc, LAB(b, kb), &sym)) PIN(A->shape[ka], "contracts it with");
                    }
                }
            }
            break;
        default:
            break;
        }
#undef LAB
#undef PIN
    }
    return 0;
}
