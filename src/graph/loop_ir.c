/* loop_ir.c -- allocation of captured-loop IR trees (one arena per loop). */
#include "graph/loop_ir.h"
#include <stddef.h>

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
