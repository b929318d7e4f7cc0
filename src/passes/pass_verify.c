/* pass_verify.c -- a scheduled program's invariants (schedule.h). */
#include "schedule.h"

static int bad(const char *what, int where)
{
    PyErr_Format(PyExc_SystemError,
                 "numdyn: program invariant broken after scheduling: %s (%d)", what, where);
    return -1;
}

static int ids_ok(const nd_id *ids, int n, int32_t nnodes)
{
    if (n < 0 || (n > 0 && !ids)) return 0;
    for (int k = 0; k < n; k++)
        if (ids[k] < 0 || ids[k] >= nnodes) return 0;
    return 1;
}

int nd_program_verify(const nd_program *p, const nd_graph *g)
{
    int32_t nn = p->nnodes;
    if (nn != g->n) return bad("program built for another graph size", nn);
    if (!ids_ok(p->outs, p->nout, nn)) return bad("output node out of range", p->nout);
    for (int k = 0; k < p->nkern; k++) {
        const nd_kernel *kn = &p->kerns[k];
        if (kn->rank < 0 || kn->rank > ND_MAXDIMS) return bad("kernel rank", k);
        if (kn->root < 0 || kn->root >= nn || kn->dom < 0 || kn->dom >= nn)
            return bad("kernel root/domain out of range", k);
        if (kn->nin < 0 || kn->nout < 1) return bad("kernel operand counts", k);
        for (int j = 0; j < kn->nin + kn->nout; j++)
            if (kn->ops[j].buf < 0 || kn->ops[j].buf >= nn || kn->ops[j].via < 0 ||
                kn->ops[j].via >= nn)
                return bad("kernel operand out of range", k);
        if (!ids_ok(kn->oval, kn->nout, nn) || !ids_ok(kn->scal, kn->nscal, nn) ||
            !ids_ok(kn->inl, kn->ninl, nn) || !ids_ok(kn->rowv, kn->nrow, nn) ||
            !ids_ok(kn->reds, kn->nred, nn))
            return bad("kernel node list out of range", k);
        for (int j = 1; j < kn->ninl; j++)
            if (kn->inl[j] < kn->inl[j - 1]) return bad("kernel body not in topological order", k);
    }
    for (int s = 0; s < p->nsteps; s++) {
        const nd_step *st = &p->steps[s];
        if (st->kind == ND_S_KERNEL) {
            if (st->kern < 0 || st->kern >= p->nkern) return bad("step runs no kernel", s);
        } else if (st->kind == ND_S_EAGER || st->kind == ND_S_BASE) {
            if (st->node < 0 || st->node >= nn) return bad("step node out of range", s);
        } else {
            return bad("unknown step kind", s);
        }
    }
    if (p->last)
        for (nd_id i = 0; i < nn; i++)
            if (p->last[i] < -1 || p->last[i] >= p->nsteps) return bad("last reader out of range", i);
    if (p->freeat) {
        for (int s = 0; s < p->nsteps; s++)
            if (p->freeat[s] > p->freeat[s + 1]) return bad("buffer frees out of order", s);
        for (int j = p->freeat[0]; j < p->freeat[p->nsteps]; j++)
            if (p->freen[j] < 0 || p->freen[j] >= nn) return bad("freed buffer out of range", j);
    }
    return 0;
}
