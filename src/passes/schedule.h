/* schedule.h -- the passes' product: a program of fused kernels and eager
 * steps for one graph (pass_schedule.c, pass_rowfuse.c), and what the
 * code generator tells the scheduler it can emit (nd_emit_caps).
 *
 * A program refers to nodes by id only. It is built for one graph and
 * reused for every graph with the same structural key (same hash: same ops,
 * dtypes, ranks, size-1 dims, view maps, input layouts): sizes, scalar
 * values and arrays are read from the graph at run time, so nothing a
 * program decides may depend on a size.
 */
#ifndef ND_SCHEDULE_H
#define ND_SCHEDULE_H
#include "graph/graph.h"

/* ------------------------------------------------------------- kernels */
typedef void (*nd_kfn)(char *const *ptrs, const int64_t *ints, const nd_scalar *scalars, int *err);

/* kernel error bits: the same values as kernels/nd_kernel.h */
#define ND_ERR_DIVZERO 1
#define ND_ERR_OVERFLOW 2
#define ND_ERR_NEGPOW 4
#define ND_ERR_NOMEM 8
#define ND_ERR_OOB 16
#define ND_ERR_INTERRUPT 32
#define ND_ERR_FPE_DIV 64      /* floating-point status flags (kernels/nd_kernel.h) */
#define ND_ERR_FPE_OVER 128
#define ND_ERR_FPE_UNDER 256
#define ND_ERR_FPE_INVALID 512
#define ND_ERR_DATAWARN 1024    /* a node marked ND_F_DATA_WARN met its condition (graph.h) */
#define ND_ERR_VARIANT 2048     /* generated without the variant these sizes take (codegen.h) */
#define ND_RUN_ALONE (1 << 30)  /* an input bit: run on the calling thread */
#define ND_PAR_WORK 32768       /* work a kernel needs for its OpenMP team */

/* The runtime's measured choice, per kernel, between its OpenMP team and
 * the calling thread alone (src/runtime/par.h owns the meaning; zeroed
 * with the program). */
#define ND_PAR_NSAMP 4
typedef struct nd_parstat {
    int mode;               /* 0 measuring, 1 team, 2 alone */
    unsigned n[2];          /* timed runs per way (0 team, 1 alone) */
    double samp[2][ND_PAR_NSAMP]; /* seconds per element, last runs */
    double est[2];          /* second least of them; 0: unknown */
    double kteam;           /* least team run of the kernel itself (no span) */
    int64_t tot;            /* elements when measuring began */
    uint64_t runs, next_probe, gap;
} nd_parstat;

enum nd_kkind { ND_K_POINTWISE, ND_K_REDUCE, ND_K_SCAN, ND_K_REGION, ND_K_ROW };

/* How a kernel reaches one array. */
enum nd_access {
    ND_A_DIRECT,   /* the node's own array, broadcast to the domain */
    ND_A_VIEW,     /* via = VIEW node: affine map into buf's C-contiguous array */
    ND_A_REGION,   /* via = SETITEM node: its region inside buf's array */
    ND_A_REDOUT,   /* the output of a REDUCE over the domain (reduced dims: stride 0) */
    ND_A_ROWB,     /* a row value without the reduced dims: its dims are the
                      domain's leading (kept) dims */
};

/* Short-axis reductions (extent 2..ND_SHORT_MAX over their reduced dims,
 * known from the graph key) are not kernels of their own: each becomes an
 * unrolled expression inside its consumer's loop, a *frame*. A frame's
 * operands are read over the reduction's input domain: their strides along
 * the kernel dims map through the reduction's kept dims (nd_frame_dim), and
 * along the reduced dims of extent > 1 (the frame's short dims, at most
 * ND_MAXFS of them) they come as extra ints (nd_frame_sidx). */
#define ND_MAXFR 16   /* frames per kernel */
#define ND_MAXFS 4    /* short dims per frame (extents >= 2, product <= 16) */
#define ND_FS_RUNTIME INT32_MIN

typedef struct nd_kop {
    nd_id buf;      /* node whose array is read or written */
    nd_id via;      /* access node (== buf for DIRECT/REDOUT) */
    int8_t acc;     /* enum nd_access */
    int8_t inner;   /* element stride along the innermost kernel dim when
                       known from structure: 0, 1, or (frame operands) up to
                       ND_SHORT_MAX; -1: a runtime value */
    int8_t frame;   /* -1, or the kernel's frame reading it (k->fr) */
    int32_t dtype;  /* element dtype in memory */
    int32_t fs[ND_MAXFS]; /* frame operands: element stride along each short
                             dim when known from structure, else ND_FS_RUNTIME */
    uint32_t zero;  /* inputs: kernel dims along which the stride is 0 by
                       structure (a broadcast; stays so when the runtime
                       merges dims), so the generator may leave them out */
} nd_kop;

typedef struct nd_kernel {
    int kind;
    nd_id root;          /* REDUCE/SCAN/SETITEM node; POINTWISE: first output */
    nd_id dom;           /* node whose shape is the iteration domain */
    int dom_v;           /* 1: the domain is dom's vshape (a SETITEM region) */
    int rank;            /* kernel dims: the domain's dims that are not 1 */
    int8_t dims[ND_MAXDIMS];  /* kernel dim -> domain dim */
    uint32_t red;        /* REDUCE/ROW: reduced kernel dims */
    int scan;            /* SCAN: kernel dim of the axis, -1 when it has size 1 */
    int nin, nout;
    nd_kop *ops;         /* nin inputs, then nout outputs */
    nd_id *oval;         /* per output: the node whose value is stored */
    int nscal;
    nd_id *scal;         /* SCALAR nodes passed as parameters, in S order */
    int ninl;
    nd_id *inl;          /* nodes computed per element, topological */
    int nrow;            /* ROW: nodes computed once per row (after the reductions) */
    nd_id *rowv;
    int nred;            /* ROW, and REDUCE kernels of a row group: the REDUCE
                            nodes, in order (several: horizontal fusion) */
    nd_id *reds;
    int8_t *rcent;       /* REDUCE of a row group, per reds entry: -1, or for a
                            moment (schedule.h nd_rowfuse_find) the reds index
                            of its mean's sum: the kernel computes
                            sum((x - sum_x / rdiv) ** 2) from x itself, in
                            chunks (Chan's pairwise update) */
    nd_id *rdiv;         /* ... per reds entry: the SCALAR dividing that sum */
    int8_t *inlf;        /* per inl entry: -1 (per element), or the frame it
                            is computed in (a node may be listed in several) */
    int nfr;             /* frames: short-axis REDUCE nodes inlined, in order */
    nd_id fr[ND_MAXFR];
    int cost;            /* per-element cost, for the thread threshold */
    int nomerge;         /* dims may not be merged (an INDEX reads them) */
    int err_uf;          /* ufunc id named in integer-division warnings */
    uint64_t hash;       /* of the generated text: the kernel's name */
    nd_kfn fn;
    nd_parstat par;      /* team or alone, measured at run time */
} nd_kernel;

enum nd_stepkind {
    ND_S_KERNEL,    /* run kerns[kern] */
    ND_S_EAGER,     /* nd_eval_node(node) with NumPy */
    ND_S_BASE,      /* SETITEM `node`: its array = in[0]'s array (taken, or copied) */
};
typedef struct nd_step {
    int kind;
    int kern;
    nd_id node;
} nd_step;

typedef struct nd_program {
    uint64_t key;
    int refcnt;             /* owners: the graph cache and running calls */
    int32_t nnodes;
    int nsteps;
    nd_step *steps;
    int nkern;
    nd_kernel *kerns;
    uint8_t *mat;           /* per node: holds an array at run time */
    uint8_t *own;           /* per node: array allocated by a kernel step */
    uint8_t *kord;          /* per node: own array allocated in the node's
                               memory order kperm (graph.h ND_F_KORDER), not
                               C: a pointwise kernel's output NumPy lays out
                               so (a ufunc of Fortran arrays) */
    uint8_t *take;          /* per SETITEM: may write into in[0]'s array */
    uint8_t *take_in;       /* per SETITEM whose in[0] is an INPUT: may write
                               into that array when the run was given it
                               (backend.h, donated inputs): the rule of take;
                               whose in[0] is a NumPy step's (EXTERN): may
                               write into its result when nothing else holds
                               it (runtime_native.c sole_owner) */
    int32_t *last;          /* per node: last step reading it (-1: none) */
    uint8_t *isout;         /* per node: an output (kept) */
    int32_t *freeat;        /* nsteps + 1 offsets into freen: the buffers */
    nd_id *freen;           /* whose last reader is step t (not outputs) */
    int nout;
    nd_id *outs;
    /* the runtime's own per-program cache (what every run of the program
     * would otherwise recompute from the graph), freed with the program by
     * run_free; opaque here */
    void *run;
    void (*run_free)(void *run);
} nd_program;

/* kernel domain dim dd (of a domain of rank drank) -> the dim of frame r's
 * domain (r's input) it walks, or -1 where r's value is broadcast.
 * A keepdims reduction of higher rank than the domain is read without its
 * reduced dims: the row mean inside var's frame (x.std(-1) of narrow rows:
 * the kernel's domain is the std's, pass_schedule.c frame_outer). */
static inline int nd_frame_dim(const nd_graph *g, nd_id r, int drank, int dd)
{
    const nd_node *rn = &g->nodes[r], *x = &g->nodes[rn->in[0]];
    int keep = (rn->flags & ND_F_KEEPDIMS) != 0, rnd = rn->ndim;
    if (keep && drank < rnd) {
        keep = 0;
        for (int d = 0; d < x->ndim; d++) if ((rn->axes >> d) & 1) rnd--;
    }
    int od = dd - (drank - rnd);
    if (od < 0) return -1;
    if (keep) return rn->shape[od] == 1 ? -1 : od;
    for (int sd = 0, c = -1; sd < x->ndim; sd++)
        if (!((rn->axes >> sd) & 1) && ++c == od) return x->shape[sd] == 1 ? -1 : sd;
    return -1;
}
/* the frame's short dims: the reduced dims of extent > 1, in order; returns
 * how many, sd[] their dims in r's input, ext[] their extents */
static inline int nd_frame_short(const nd_graph *g, nd_id r, int *sd, int *ext)
{
    const nd_node *rn = &g->nodes[r], *x = &g->nodes[rn->in[0]];
    int ns = 0;
    for (int d = 0; d < x->ndim; d++)
        if (((rn->axes >> d) & 1) && x->shape[d] != 1 && ns < ND_MAXFS) {
            if (sd) sd[ns] = d;
            if (ext) ext[ns] = (int)x->shape[d];
            ns++;
        }
    return ns;
}
/* INDEX node id's axis in kernel k (R loop dims; fr the frame being
 * emitted, -1 per element, at position fe[] along its short dims): *kd the
 * kernel dim it runs along, or *lit its constant position inside the frame;
 * both -1 for an axis of extent 1 (index 0). Shared by the C and CUDA
 * generators. */
static inline void nd_index_axis(const nd_graph *g, const nd_kernel *k, int R, int fr,
                                 const int *fe, nd_id id, int *kd, int *lit)
{
    const nd_node *n = &g->nodes[id], *dom = &g->nodes[k->dom];
    int drank = k->dom_v ? dom->vndim : dom->ndim;
    *kd = *lit = -1;
    if (n->shape[n->aux] == 1) return;
    if (fr >= 0) {
        nd_id r = k->fr[fr];
        const nd_node *x = &g->nodes[g->nodes[r].in[0]];
        int fd = n->aux + (x->ndim - n->ndim), sd[ND_MAXFS], ns = nd_frame_short(g, r, sd, NULL);
        for (int t = 0; t < ns; t++) if (sd[t] == fd) *lit = fe[t];
        for (int q = 0; q < R && *lit < 0 && *kd < 0; q++)
            if (nd_frame_dim(g, r, drank, k->dims[q]) == fd) *kd = q;
    } else {
        int dd = n->aux + (drank - n->ndim);
        for (int q = 0; q < R; q++) if (k->dims[q] == dd) *kd = q;
    }
}

/* index in the kernel's int arguments of operand o's stride along short dim t */
static inline int nd_frame_sidx(int rank, int nops, int o, int t)
{
    return rank + nops * rank + o * ND_MAXFS + t;
}

/* pass_rowfuse.c: row groups (see there). rowgrp[i]: group or -1; level[i]:
 * ND_ROW_*. skip (may be NULL): reductions that may neither start nor join
 * a group. horiz: independent reductions over the same domain join a group
 * (at most ND_MAXRED reductions a group). center (may be NULL): per node,
 * -1, or for a sum of squared deviations from a group's mean that joins the
 * group (a *moment*, x.var(0)), that mean's sum (a REDUCE member). Returns
 * need (may be NULL): per node, its value is needed as an array (an output):
 * with horiz, such a pointwise value the group reads joins it and is stored
 * from the group's walk (y = x * 2 returned next to y.sum(0)). Returns
 * the number of groups, -1 + exception. */
enum { ND_ROW_NONE, ND_ROW_DOMAIN, ND_ROW_A, ND_ROW_B };
#define ND_MAXRED 8
/* horiz | ND_ROW_SIDE: an independent pointwise value over the domain of a
 * reduction whose innermost dim is kept (y = x * 2 next to x.sum(0)) joins
 * its group as a *side output*: the reduction kernel stores it per element
 * from the walk it makes anyway (one pass over x, not two) */
#define ND_ROW_SIDE 2
int nd_rowfuse_find(nd_graph *g, int32_t *rowgrp, uint8_t *level, const uint8_t *skip, int horiz,
                    nd_id *center, const uint8_t *need);

/* pass_schedule.c */
nd_program *nd_schedule(nd_graph *g, const nd_id *outs, int nout);
/* Most nodes inlined into one kernel (64: the C compiler's time on big
 * kernels). A backend whose kernels gain from fusing more -- the GPU's,
 * where a value recomputed costs less than a pass over memory -- sets it
 * around its own nd_schedule call (backend_cuda.c); per thread. */
extern _Thread_local int nd_schedule_kmax_nodes;
/* 1 (default): reduction kernels may store side outputs (ND_ROW_SIDE). A
 * generator without that form (the CUDA one) sets 0 around its own
 * nd_schedule call; per thread. */
extern _Thread_local int nd_schedule_side_outputs;
void nd_program_free(nd_program *p);
void nd_program_decref(nd_program *p);

/* A program's invariants against its graph (pass_verify.c): node ids in
 * range, kernels and steps well formed, buffer lifetimes ordered. 0, or -1
 * with SystemError. Run after scheduling when NUMDYN_DEBUG=1. */
int nd_program_verify(const nd_program *p, const nd_graph *g);

/* What a code generator can emit, asked by the scheduler while it groups
 * nodes into kernels. The runtime registers its generator's table before
 * anything is scheduled (nd_native_init), so passes/ does not depend on
 * codegen/. supported: the node can be computed per element; reduce/scan:
 * the REDUCE/SCAN node has a loop form; cost: rough cycles per element;
 * dtype_ok: values of this dtype can live in generated code. */
typedef struct nd_emit_caps {
    int (*supported)(nd_graph *g, nd_id id);
    int (*reduce_supported)(nd_graph *g, nd_id id);
    int (*scan_supported)(nd_graph *g, nd_id id);
    int (*cost)(nd_graph *g, nd_id id);
    int (*dtype_ok)(int dtype);
} nd_emit_caps;
extern const nd_emit_caps *nd_emit;
void nd_schedule_set_emitter(const nd_emit_caps *caps);
#endif
