/* loop_ir.c -- allocation of captured-loop IR trees (one arena per loop). */
#include "graph/loop_ir.h"
#include <stddef.h>
#include <string.h>

struct nd_lblock {
    nd_lblock *next;
    size_t used, cap;
    max_align_t data[];
};

void *nd_lir_alloc(nd_lir *ir, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    nd_lblock *b = ir->arena;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > 16384 ? size : 16384;
        nd_lblock *nb = PyMem_Calloc(1, sizeof(nd_lblock) + cap);
        if (!nb) { PyErr_NoMemory(); return NULL; }
        nb->cap = cap;
        nb->next = b;
        ir->arena = b = nb;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    return p;
}

nd_ln *nd_lir_node(nd_lir *ir, int kind, int line, int nkids)
{
    nd_ln *n = nd_lir_alloc(ir, sizeof(nd_ln));
    if (!n) return NULL;
    n->kind = (uint8_t)kind;
    n->line = line;
    n->var = -1;
    n->n = (uint16_t)nkids;
    if (nkids && !(n->kid = nd_lir_alloc(ir, sizeof(nd_ln *) * (size_t)nkids))) return NULL;
    return n;
}

void nd_lir_free(nd_lir *ir)
{
    nd_lblock *b = ir->arena;
    while (b) {
        nd_lblock *nx = b->next;
        PyMem_Free(b);
        b = nx;
    }
    ir->arena = NULL;
    Py_CLEAR(ir->names);
    Py_CLEAR(ir->funcs);
    PyMem_Free(ir->vflags);
    PyMem_Free(ir->vmod);
    ir->vflags = ir->vmod = NULL;
}

int nd_lir_binds(nd_ln *const *b, int n, int v)
{
    for (int k = 0; k < n; k++) {
        const nd_ln *s = b[k];
        if ((s->kind == LK_ASSIGN || s->kind == LK_FOR) && s->var == v) return 1;
        if (s->kind == LK_FOR && s->i > 0 && s->i - 1 == v) return 1;
        if (s->kind == LK_MULTI)
            for (int j = 0; j < s->n / 2; j++) if (s->kid[j]->var == v) return 1;
        if (nd_lir_binds(s->body, s->nbody, v) || nd_lir_binds(s->orelse, s->norelse, v)) return 1;
    }
    return 0;
}

/* ---- live-in: the variables the loop may read before assigning them.
 * D[v]: v is certainly assigned on every path to this point of the first
 * iteration (later iterations start with at least as much assigned, so the
 * first one decides). Every var field of an expression (and of a store's
 * array) is a read; over-approximating only costs a value passed in. */
static void live_expr(const nd_ln *e, const uint8_t *D, uint8_t *live)
{
    if (!e) return;
    if (e->var >= 0 && !D[e->var]) live[e->var] = 1;
    for (int k = 0; k < e->n; k++) live_expr(e->kid[k], D, live);
}

static int live_stmts(nd_ln *const *b, int n, uint8_t *D, uint8_t *live, int nv);

/* a block run from a copy of D: what it assigns is not certain after it
 * (left in *out when out is not NULL) */
static int live_branch(nd_ln *const *b, int n, const uint8_t *D, uint8_t *live, int nv, uint8_t *out)
{
    uint8_t *C = PyMem_Malloc((size_t)nv + 1);
    if (!C) { PyErr_NoMemory(); return -1; }
    memcpy(C, D, (size_t)nv);
    int rc = live_stmts(b, n, C, live, nv);
    if (out) memcpy(out, C, (size_t)nv);
    PyMem_Free(C);
    return rc;
}

static int live_stmts(nd_ln *const *b, int n, uint8_t *D, uint8_t *live, int nv)
{
    for (int k = 0; k < n; k++) {
        const nd_ln *s = b[k];
        switch (s->kind) {
        case LK_ASSIGN:
            live_expr(s->kid[0], D, live);
            if (s->var >= 0) D[s->var] = 1;
            break;
        case LK_MULTI: {
            int m = s->n / 2;
            for (int j = m; j < s->n; j++) live_expr(s->kid[j], D, live);
            for (int j = 0; j < m; j++) if (s->kid[j]->var >= 0) D[s->kid[j]->var] = 1;
            break;
        }
        case LK_IF: {
            live_expr(s->kid[0], D, live);
            uint8_t *A = PyMem_Malloc(2 * (size_t)nv + 1);
            if (!A) { PyErr_NoMemory(); return -1; }
            int rc = live_branch(s->body, s->nbody, D, live, nv, A);
            if (rc == 0) rc = live_branch(s->orelse, s->norelse, D, live, nv, A + nv);
            for (int v = 0; rc == 0 && v < nv; v++) D[v] = A[v] && A[nv + v];
            PyMem_Free(A);
            if (rc < 0) return -1;
            break;
        }
        case LK_FOR: {
            for (int j = 0; j < s->n; j++) live_expr(s->kid[j], D, live);
            uint8_t *C = PyMem_Malloc((size_t)nv + 1);
            if (!C) { PyErr_NoMemory(); return -1; }
            memcpy(C, D, (size_t)nv);
            if (s->var >= 0) C[s->var] = 1;
            if (s->i > 0 && s->i - 1 < nv) C[s->i - 1] = 1;
            int rc = live_stmts(s->body, s->nbody, C, live, nv);
            PyMem_Free(C);
            if (rc < 0 || live_branch(s->orelse, s->norelse, D, live, nv, NULL) < 0) return -1;
            break;   /* it may run no iteration: D as before */
        }
        case LK_WHILE:
            live_expr(s->kid[0], D, live);
            if (live_branch(s->body, s->nbody, D, live, nv, NULL) < 0 ||
                live_branch(s->orelse, s->norelse, D, live, nv, NULL) < 0)
                return -1;
            break;
        default:   /* stores, break, continue, pass: reads only */
            if (s->var >= 0 && !D[s->var]) live[s->var] = 1;
            for (int j = 0; j < s->n; j++) live_expr(s->kid[j], D, live);
            if (live_branch(s->body, s->nbody, D, live, nv, NULL) < 0 ||
                live_branch(s->orelse, s->norelse, D, live, nv, NULL) < 0)
                return -1;
            break;
        }
    }
    return 0;
}

int nd_lir_live_in(const nd_lir *ir, uint8_t *live)
{
    int nv = ir->nvars;
    memset(live, 0, (size_t)nv);
    uint8_t *D = PyMem_Calloc((size_t)nv + 1, 1);
    if (!D) { PyErr_NoMemory(); return -1; }
    nd_ln *root = ir->root;
    int rc = root ? live_stmts(&root, 1, D, live, nv) : 0;
    PyMem_Free(D);
    return rc;
}
