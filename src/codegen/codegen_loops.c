/* codegen_loops.c -- the loop nest of a kernel around the per-element code
 * of codegen_expr.c.
 *
 * Every kernel has the same C signature (see kernels/nd_kernel.h):
 *   I[0..R)                   the kernel dims' sizes (R = kernel rank)
 *   I[R + k*R + d]            operand k's element stride along dim d
 *   P[k]                      operand k's base pointer (view offset applied)
 *   S[j]                      the j-th scalar parameter
 * so one kernel serves every size: sizes and strides are arguments, only
 * structure is compiled in (rank, dtypes, which operand is broadcast along
 * the innermost dim, which has unit stride there).
 *
 * Work is split into tasks: the outer dims times blocks of the innermost
 * dim. Tasks are the iterations of an OpenMP loop that only goes parallel
 * above a work threshold (elements x per-element cost); the innermost loop
 * is an `omp simd` loop so GCC vectorizes it, calling SLEEF's vector math.
 */
#include "core/npy.h"
#include "codegen.h"

#define RBLOCK_K 512  /* inner block when accumulators are per output element */

typedef struct kctx {
    nd_graph *g;
    nd_kernel *k;
    nd_sb *sb;
    int R;
    int uses_err;
    /* row kernels: nodes kept per row in a scratch buffer */
    int8_t *cache_phase;   /* per node: phase that computes and stores it, -1 */
    int phase;             /* the pass being emitted */
    const char *rowidx;    /* the element's index within its row */
    int vdim;              /* the dim of the vector (simd) loop: R-1, or another
                              dim walked with runtime strides vs<o> */
    int fr;                /* the frame being emitted (a short reduction's
                              unrolled body), -1 */
    int fe[ND_MAXFS];      /* ... at this index along its short dims */
    int bdim;              /* across_tiled: the reduced dim walked in row
                              blocks wlo_..whi_ (all tiles per block), -1 */
} kctx;

static int stride_idx(kctx *c, int op, int d) { return c->R + op * c->R + d; }

static const char *ctype_of(int t) { return nd_cg_ctype(t); }

static int is_cls_float(int t) { return t == NPY_HALF || t == NPY_FLOAT || t == NPY_DOUBLE; }
static int is_cls_int(int t) { return nd_cg_dtype_ok(t) && !is_cls_float(t) && !nd_cg_is_complex(t); }

/* ------------------------------------------------------------ prologue */
static void scalar_decl(kctx *c, nd_id sid, int j)
{
    int t = c->g->nodes[sid].dtype;
    nd_sb_printf(c->sb, "const %s v%d = ", ctype_of(t), (int)sid);
    nd_cg_param(c->sb, t, j);
    nd_sb_puts(c->sb, ";\n");
}

/* a view of a SCALAR node: the scalar's value, one per kernel */
static int scalar_view(const nd_graph *g, nd_id id)
{
    const nd_node *n = &g->nodes[id];
    return n->op == ND_OP_VIEW && g->nodes[n->in[0]].op == ND_OP_SCALAR;
}

_Thread_local const npy_intp *nd_cg_static_sizes;
_Thread_local int nd_cg_nstatic;

/* domain dim d's extent when the program's key holds it constant
 * (codegen.h, nd_cg_static_sizes), else -1 */
static npy_intp static_extent(kctx *c, int d)
{
    nd_kernel *k = c->k;
    if (!nd_cg_nstatic || k->dom_v) return -1;  /* a store's region: not a node's shape */
    /* the run time merges adjacent dims every operand walks alike
     * (nd_kernel_merge) -- a contiguous 2-d walk becomes one long loop, a
     * bigger win than constant extents; those go only where no merge can
     * happen: one dim, dims an INDEX reads, or dims the kernel's kind keeps
     * apart (reduced next to kept, a scan's axis) */
    if (!k->nomerge)
        for (int a = 0; a + 1 < c->R; a++) {
            int apart = ((k->kind == ND_K_REDUCE || k->kind == ND_K_ROW) &&
                         ((k->red >> a & 1) != (k->red >> (a + 1) & 1))) ||
                        (k->kind == ND_K_SCAN && (a == k->scan || a + 1 == k->scan));
            if (!apart) return -1;
        }
    npy_intp e = c->g->nodes[k->dom].shape[k->dims[d]];
    if (e == 1) return 1;
    for (int i = 0; i < nd_cg_nstatic; i++)
        if (nd_cg_static_sizes[i] == e) return e;
    return -1;
}

static int prologue(kctx *c)
{
    nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    int R = c->R;
    for (int d = 0; d < R; d++) {
        npy_intp e = static_extent(c, d);
        if (e >= 0) {
            nd_sb_printf(sb, "const int64_t n%d = %lld;\n", d, (long long)e);
            k->nomerge = 1;
        } else {
            nd_sb_printf(sb, "const int64_t n%d = I[%d];\n", d, d);
        }
    }
    nd_sb_puts(sb, "int64_t tot_ = 1;\n");
    for (int d = 0; d < R; d++) nd_sb_printf(sb, "tot_ *= n%d;\n", d);
    nd_sb_puts(sb, "(void)tot_;\n");
    for (int o = 0; o < k->nin + k->nout; o++) {
        nd_kop *op = &k->ops[o];
        int isout = o >= k->nin;
        nd_sb_printf(sb, "%s%s *const B%d = (%s%s *)P[%d];\n", isout ? "" : "const ",
                     nd_cg_stype(op->dtype), o, isout ? "" : "const ", nd_cg_stype(op->dtype), o);
        if (R > 0 && op->inner < 0)
            nd_sb_printf(sb, "const int64_t is%d = I[%d];\n", o, stride_idx(c, o, R - 1));
        if (op->frame >= 0)
            for (int t = 0, ns = nd_frame_short(c->g, k->fr[op->frame], NULL, NULL); t < ns; t++)
                if (op->fs[t] == ND_FS_RUNTIME)
                    nd_sb_printf(sb, "const int64_t fs%d_%d = I[%d];\n", o, t,
                                 nd_frame_sidx(R, k->nin + k->nout, o, t));
        if (isout && nd_cg_check_stores()) {
            int q = k->nin + k->nout + 2 * (o - k->nin);
            nd_sb_printf(sb, "const char *const lo%d = P[%d], *const hi%d = P[%d];\n", o, q, o, q + 1);
        }
    }
    for (int j = 0; j < k->nscal; j++) scalar_decl(c, k->scal[j], j);
    /* Views of scalars (np.zeros((n, 1)) is a broadcast view of 0.0) are
     * declared here, at the kernel's scope, not per element: a row value
     * computed once per row, outside every element loop, may read one
     * (x - (x.max(1, keepdims=True) + np.zeros((2, 1))) in a row kernel) */
    for (int i = 0; i < k->ninl; i++) {
        nd_id id = k->inl[i];
        int dup = 0;
        if (!scalar_view(c->g, id)) continue;
        for (int q = 0; q < i; q++) if (k->inl[q] == id) dup = 1;
        if (!dup && nd_cg_node(c->g, id, sb, &c->uses_err) < 0) return -1;
    }
    nd_sb_puts(sb, "int nd_err = 0;\n");
    return 0;
}

static void epilogue(kctx *c)
{
    nd_sb_puts(c->sb, "if (nd_err) __atomic_fetch_or(E, nd_err, __ATOMIC_RELAXED);\n");
}

/* "p<o> = B<o> + i<d>*stride..." for operand o over the bound dims in mask */
static void pointer(kctx *c, int o, uint32_t bound, const char *name)
{
    nd_kop *op = &c->k->ops[o];
    int isout = o >= c->k->nin;
    nd_sb_printf(c->sb, "%s%s *const restrict %s%d = B%d", isout ? "" : "const ",
                 nd_cg_stype(op->dtype), name, o, o);
    /* a broadcast dim adds nothing: left out, the pointer is invariant in
     * that loop and the compiler hoists its loads */
    for (int d = 0; d < c->R; d++)
        if ((bound & (1u << d)) && !(op->zero & (1u << d)))
            nd_sb_printf(c->sb, " + i%d * I[%d]", d, stride_idx(c, o, d));
    nd_sb_puts(c->sb, ";\n");
}

static void elem(char *buf, size_t n, kctx *c, int o, const char *pfx, const char *jv)
{
    nd_kop *op = &c->k->ops[o];
    char off[160] = "";
    if (op->frame >= 0 && op->frame == c->fr) {
        /* a frame operand at the frame's current index along its short dims */
        size_t at = 0;
        for (int t = 0, ns = nd_frame_short(c->g, c->k->fr[op->frame], NULL, NULL); t < ns; t++) {
            if (!c->fe[t] || op->fs[t] == 0) continue;
            if (op->fs[t] == ND_FS_RUNTIME)
                at += (size_t)snprintf(off + at, sizeof off - at, " + %d * fs%d_%d", c->fe[t], o, t);
            else
                at += (size_t)snprintf(off + at, sizeof off - at, " + %lld",
                                       (long long)c->fe[t] * (long long)op->fs[t]);
            if (at >= sizeof off) break;
        }
    }
    if (c->R > 0 && c->vdim != c->R - 1) {
        if (op->zero & (1u << c->vdim)) snprintf(buf, n, "%s%d[0%s]", pfx, o, off);   /* one value, broadcast */
        else snprintf(buf, n, "%s%d[%s * vs%d%s]", pfx, o, jv, o, off);
        return;
    }
    if (c->R == 0 || op->inner == 0) snprintf(buf, n, "%s%d[0%s]", pfx, o, off);
    else if (op->inner == 1) snprintf(buf, n, "%s%d[%s%s]", pfx, o, jv, off);
    else if (op->inner > 1) snprintf(buf, n, "%s%d[%s * %d%s]", pfx, o, jv, op->inner, off);
    else snprintf(buf, n, "%s%d[%s * is%d%s]", pfx, o, jv, o, off);
}

/* the value of INDEX node `id` at the current element (inside a frame:
 * its index along the short reduction's input domain) */
static void index_value(kctx *c, nd_id id, const char *jv)
{
    const nd_node *n = &c->g->nodes[id];
    int kd, lit;
    nd_index_axis(c->g, c->k, c->R, c->fr, c->fe, id, &kd, &lit);
    char ix[64];
    if (lit >= 0) snprintf(ix, sizeof ix, "%d", lit);
    else if (kd < 0) snprintf(ix, sizeof ix, "0");
    else if (kd == c->vdim) snprintf(ix, sizeof ix, "%s", jv);
    else snprintf(ix, sizeof ix, "i%d", kd);
    nd_sb_printf(c->sb, "const %s v%d = ", ctype_of(n->dtype), (int)id);
    nd_cg_cast(c->sb, ix, NPY_LONGLONG, n->dtype);
    nd_sb_puts(c->sb, ";\n");
}

static int emit_short(kctx *c, nd_id rid, const char *jv);

/* inputs' loads and the inlined nodes in `which` (NULL: all), of the
 * current frame c->fr (-1: per element) */
static int body(kctx *c, const char *jv, const uint8_t *which)
{
    nd_kernel *k = c->k;
    char e[256];
    for (int o = 0; o < k->nin; o++) {
        nd_kop *op = &k->ops[o];
        if (op->frame != c->fr) continue;
        if (which && !which[op->via]) continue;
        nd_node *vn = &c->g->nodes[op->via];
        elem(e, sizeof e, c, o, "p", jv);
        if (op->acc == ND_A_VIEW && (vn->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG))) {
            nd_sb_printf(c->sb, "const %s v%d = __%s__ (%s);\n", ctype_of(vn->dtype), (int)op->via,
                         (vn->flags & ND_F_VIEW_REAL) ? "real" : "imag", e);
        } else if (nd_cg_is_complex(op->dtype)) {
            /* as two parts (kernels/nd_kernel.h nd_cld): vectorizes strided */
            nd_sb_printf(c->sb, "const %s v%d = nd_cld_%s(&%s);\n", ctype_of(op->dtype), (int)op->via,
                         nd_cg_sfx(op->dtype), e);
        } else {
            nd_sb_printf(c->sb, "const %s v%d = ", ctype_of(op->dtype), (int)op->via);
            nd_cg_load(c->sb, e, op->dtype);
            nd_sb_puts(c->sb, ";\n");
        }
    }
    for (int i = 0; i < k->ninl; i++) {
        nd_id id = k->inl[i];
        if (k->inlf && k->inlf[i] != c->fr) continue;
        if (which && !which[id]) continue;
        nd_node *n = &c->g->nodes[id];
        if (n->op == ND_OP_SCALAR || n->op == ND_OP_INPUT) continue;
        if (n->op == ND_OP_VIEW) continue;  /* a load, or a scalar's view (the prologue's) */
        if (n->op == ND_OP_INDEX) { index_value(c, id, jv); continue; }
        if (n->op == ND_OP_REDUCE) {
            if (emit_short(c, id, jv) < 0) return -1;
            continue;
        }
        int cp = c->cache_phase ? c->cache_phase[id] : -1;
        if (cp >= 0 && cp < c->phase) {
            nd_sb_printf(c->sb, "const %s v%d = scr%d[%s];\n", ctype_of(n->dtype), (int)id, (int)id, c->rowidx);
            continue;
        }
        if (nd_cg_node(c->g, id, c->sb, &c->uses_err) < 0) return -1;
        if (cp >= 0 && cp == c->phase)
            nd_sb_printf(c->sb, "scr%d[%s] = v%d;\n", (int)id, c->rowidx, (int)id);
    }
    return 0;
}

/* "lv = v<val>" converted to dtype `to` and its storage */
static void store_val(kctx *c, const char *lv, nd_id val, int to)
{
    char v[32];
    snprintf(v, sizeof v, "v%d", (int)val);
    nd_sb t;
    nd_sb_init(&t);
    nd_cg_cast(&t, v, c->g->nodes[val].dtype, to);
    if (!t.oom && nd_cg_is_complex(to)) nd_sb_printf(c->sb, "nd_cst_%s(&%s, %s);\n", nd_cg_sfx(to), lv, t.p);
    else if (!t.oom) nd_cg_store(c->sb, lv, t.p, to);
    else c->sb->oom = 1;
    nd_sb_free(&t);
}

int nd_cg_check_stores(void)
{
    static int mode = -1;
    if (mode < 0) {
        const char *e = getenv("NUMDYN_CHECK_STORES");
        mode = e && *e && strcmp(e, "0") != 0;
    }
    return mode;
}

static void store(kctx *c, int o, nd_id val, const char *pfx, const char *jv)
{
    char e[96];
    elem(e, sizeof e, c, o, pfx, jv);
    if (nd_cg_check_stores())
        nd_sb_printf(c->sb, "if (ND_OOB(&(%s), lo%d, hi%d)) nd_err |= ND_ERR_OOB; else\n", e, o, o);
    store_val(c, e, val, c->k->ops[o].dtype);
}

/* output o at the element bound by the dims in `bound` (j = jv), in a
 * block of its own */
static void store_at(kctx *c, int o, uint32_t bound, nd_id val, const char *jv)
{
    nd_sb_puts(c->sb, "{\n");
    pointer(c, o, bound, "q");
    store(c, o, val, "q", jv);
    nd_sb_puts(c->sb, "}\n");
}

/* i<d> for the dims in `mask` from the task number in r_ (C order) */
static void bind_dims(kctx *c, uint32_t mask) { nd_cg_bind_dims(c->sb, c->R, mask); }

/* The task loop header: tasks over the dims in `td` (a mask, outer first)
 * and, when bdim >= 0, blocks of `blk` along dim bdim. Opens the loop
 * body; binds i<d> for d in td and j0/j1 when blocked. Tasks are handed
 * out one at a time (schedule(dynamic)): with a static split, a thread the
 * OS deschedules on a loaded machine holds half the kernel's work until it
 * runs again, and the call waits a time slice for it; this way the other
 * threads take the remaining tasks (one atomic increment per task of a few
 * thousand elements). A task's results do not depend on its thread. */
static void task_loop(kctx *c, uint32_t td, int bdim, int blk, int cost, int par_ok)
{
    nd_sb *sb = c->sb;
    int blocked = bdim >= 0;
    if (blocked) nd_sb_printf(sb, "const int64_t nb_ = (n%d + %d - 1) / %d;\n", bdim, blk, blk);
    nd_sb_printf(sb, "const int64_t ntask_ = 1%s", blocked ? " * nb_" : "");
    for (int d = 0; d < c->R; d++) if (td & (1u << d)) nd_sb_printf(sb, " * n%d", d);
    nd_sb_puts(sb, ";\n");
    if (par_ok)
        nd_sb_printf(sb, "/*ND_PAR*/#pragma omp parallel for schedule(dynamic) if(ntask_ > 1 && (double)tot_ * %d >= ND_PAR_WORK)%s\n",
                     cost, c->uses_err ? " reduction(|:nd_err)" : "");
    nd_sb_puts(sb, "for (int64_t t_ = 0; t_ < ntask_; t_++) {\nND_POLL(E);\n");
    nd_sb_puts(sb, "int64_t r_ = t_;\n(void)r_;\n");
    if (blocked) {
        nd_sb_puts(sb, "const int64_t jb_ = r_ % nb_;\nr_ /= nb_;\n");
        nd_sb_printf(sb, "const int64_t j0 = jb_ * %d, j1 = ND_MIN(j0 + %d, n%d);\n", blk, blk, bdim);
    }
    bind_dims(c, td);
}

static int kernel_cost(kctx *c)
{
    int cost = 1;
    for (int i = 0; i < c->k->ninl; i++) {
        int w = 1;  /* a frame's body runs once per element of its short dims */
        if (c->k->inlf && c->k->inlf[i] >= 0) {
            int ext[ND_MAXFS], ns = nd_frame_short(c->g, c->k->fr[c->k->inlf[i]], NULL, ext);
            for (int t = 0; t < ns; t++) w *= ext[t];
        }
        cost += w * nd_cg_cost(c->g, c->k->inl[i]);
    }
    return cost;
}

/* ------------------------------------------------------------ pointwise */
/* A pointwise kernel's tasks: blocks of ND_BLOCK elements of the inner dim
 * and, where the inner dim is shorter than a block, blocks of rows of dim
 * R-2 holding about ND_BLOCK elements. A task per row of a tall narrow
 * array ((X - mu) / sd over (500000, 8)) spends more on the task (the
 * poll, the pointers, a vector loop of one or two iterations) than on its
 * 8 elements. Opens the task loop and the row loop (two braces), binds
 * i<d> of the outer dims and j0/j1. */
static void row_tasks(kctx *c, uint32_t outer)
{
    nd_sb *sb = c->sb;
    int R = c->R, rd = R - 2, vd = R - 1;
    nd_sb_printf(sb, "const int64_t nb_ = (n%d + ND_BLOCK - 1) / ND_BLOCK;\n", vd);
    nd_sb_printf(sb, "const int64_t rb_ = n%d >= ND_BLOCK ? 1 : ND_BLOCK / (n%d > 0 ? n%d : 1);\n", vd, vd, vd);
    nd_sb_printf(sb, "const int64_t nrb_ = (n%d + rb_ - 1) / rb_;\n", rd);
    nd_sb_puts(sb, "const int64_t ntask_ = 1 * nb_ * nrb_");
    for (int d = 0; d < rd; d++) nd_sb_printf(sb, " * n%d", d);
    nd_sb_puts(sb, ";\n");
    nd_sb_printf(sb, "/*ND_PAR*/#pragma omp parallel for schedule(dynamic) if(ntask_ > 1 && (double)tot_ * %d >= ND_PAR_WORK)%s\n",
                 c->k->cost, c->uses_err ? " reduction(|:nd_err)" : "");
    nd_sb_puts(sb, "for (int64_t t_ = 0; t_ < ntask_; t_++) {\nND_POLL(E);\n");
    nd_sb_puts(sb, "int64_t r_ = t_;\n(void)r_;\n");
    nd_sb_puts(sb, "const int64_t jb_ = r_ % nb_;\nr_ /= nb_;\n");
    nd_sb_printf(sb, "const int64_t j0 = jb_ * ND_BLOCK, j1 = ND_MIN(j0 + ND_BLOCK, n%d);\n", vd);
    nd_sb_puts(sb, "const int64_t ib_ = r_ % nrb_;\nr_ /= nrb_;\n");
    bind_dims(c, outer & ~(1u << rd));
    nd_sb_printf(sb, "for (int64_t i%d = ib_ * rb_; i%d < ND_MIN(ib_ * rb_ + rb_, n%d); i%d++) {\n", rd, rd, rd, rd);
}

static int gen_pointwise(kctx *c)
{
    nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    int R = c->R;
    if (R == 0) {
        for (int o = 0; o < k->nin + k->nout; o++) pointer(c, o, 0, "p");
        if (body(c, "0", NULL) < 0) return -1;
        for (int o = k->nin; o < k->nin + k->nout; o++) store(c, o, k->oval[o - k->nin], "p", "0");
        return 0;
    }
    uint32_t outer = (1u << (R - 1)) - 1;
    /* Outputs far bigger than the caches go out with streaming stores:
     * computed into an L1 tile, then copied with non-temporal stores (no
     * read-for-ownership of the destination: a third less memory traffic) */
    int stream = k->nout > 0 && !nd_cg_check_stores();
    size_t obytes = 0;
    for (int o = k->nin; o < k->nin + k->nout; o++) {
        if (k->ops[o].inner != 1) stream = 0;
        obytes += (size_t)nd_cg_elsize(k->ops[o].dtype);
    }
    /* ... and only rows of a tile or more: a shorter row would end in a
     * partial non-temporal line and an sfence per row (rows of 8 float64
     * under the OpenMP team: 20x slower than plain stores) */
    if (stream && R >= 2)
        nd_sb_printf(sb, "const int nd_stream_ = (double)tot_ * %zu >= ND_STREAM_BYTES && n%d >= ND_TILE;\n",
                     obytes, R - 1);
    else if (stream)
        nd_sb_printf(sb, "const int nd_stream_ = (double)tot_ * %zu >= ND_STREAM_BYTES;\n", obytes);
    if (R >= 2) row_tasks(c, outer);
    else task_loop(c, outer, R - 1, 4096, k->cost, 1);
    for (int o = 0; o < k->nin + k->nout; o++) pointer(c, o, outer, "p");
    if (stream) {
        nd_sb_puts(sb, "if (nd_stream_) {\n");
        for (int o = k->nin; o < k->nin + k->nout; o++)
            nd_sb_printf(sb, "%s tl%d[ND_TILE];\n", nd_cg_stype(k->ops[o].dtype), o);
        nd_sb_puts(sb, "for (int64_t jt = j0; jt < j1; jt += ND_TILE) {\n"
                       "const int64_t je = ND_MIN(jt + ND_TILE, j1);\n");
        nd_sb_printf(sb, "#pragma omp simd%s\n", c->uses_err ? " reduction(|:nd_err)" : "");
        nd_sb_puts(sb, "for (int64_t j = jt; j < je; j++) {\n");
        if (body(c, "j", NULL) < 0) return -1;
        for (int o = k->nin; o < k->nin + k->nout; o++) {
            char lv[32];
            snprintf(lv, sizeof lv, "tl%d[j - jt]", o);
            store_val(c, lv, k->oval[o - k->nin], k->ops[o].dtype);
        }
        nd_sb_puts(sb, "}\n");
        for (int o = k->nin; o < k->nin + k->nout; o++)
            nd_sb_printf(sb, "nd_stream_copy(p%d + jt, tl%d, (size_t)(je - jt) * sizeof(tl%d[0]));\n", o, o, o);
        nd_sb_puts(sb, "}\nnd_sfence();\n} else {\n");
    }
    nd_sb_printf(sb, "#pragma omp simd%s\n", c->uses_err ? " reduction(|:nd_err)" : "");
    nd_sb_puts(sb, "for (int64_t j = j0; j < j1; j++) {\n");
    if (body(c, "j", NULL) < 0) return -1;
    for (int o = k->nin; o < k->nin + k->nout; o++) store(c, o, k->oval[o - k->nin], "p", "j");
    nd_sb_puts(sb, "}\n");
    if (stream) nd_sb_puts(sb, "}\n");
    nd_sb_puts(sb, R >= 2 ? "}\n}\n" : "}\n");
    return 0;
}

/* ------------------------------------------------------------ reductions */
enum { RK_CASCADE, RK_SIMD, RK_FMINMAX, RK_SEQ, RK_ARG };

typedef struct redop {
    int uf;           /* reducing ufunc, or ND_RED_ARGMAX/ARGMIN */
    int acc;          /* accumulation dtype */
    int kind;
    int adt;          /* dtype of the accumulator variable (acc, or its unsigned twin) */
    int upd;          /* ufunc whose C form folds a value into the accumulator */
    const char *AT;   /* C type of the accumulator */
    char clause[8];   /* omp reduction operator for RK_SIMD */
    char init[48];
} redop;

/* A cascade (pairwise) sum keeps one running sum per part: a complex sum is
 * the sums of its real and imaginary parts. tag names a part's variables,
 * sel reads it out of a value. */
typedef struct rpart { const char *tag, *sel; } rpart;
static const rpart REAL_PART[1] = {{"", ""}};
static const rpart CPLX_PARTS[2] = {{"r", "__real__ "}, {"i", "__imag__ "}};

static int parts_of(const redop *r, const rpart **p)
{
    if (nd_cg_is_complex(r->acc)) { *p = CPLX_PARTS; return 2; }
    *p = REAL_PART;
    return 1;
}
static const char *part_ctype(const redop *r) { return ctype_of(nd_cg_part_dtype(r->acc)); }
static const char *part_sfx(const redop *r) { return nd_cg_sfx(nd_cg_part_dtype(r->acc)); }

static void int_limit(char *buf, size_t n, const char *T, int max)
{
    if (!strcmp(T, "nd_bool")) { snprintf(buf, n, max ? "1" : "0"); return; }
    char up[16];
    size_t i = 0;
    for (; T[i] && T[i] != '_' && i < sizeof up - 1; i++) up[i] = (char)(T[i] >= 'a' && T[i] <= 'z' ? T[i] - 32 : T[i]);
    up[i] = 0;
    if (up[0] == 'U') snprintf(buf, n, max ? "%s_MAX" : "0", up);
    else snprintf(buf, n, "%s_%s", up, max ? "MAX" : "MIN");
}

static int redop_make(redop *r, int uf, int acc)
{
    memset(r, 0, sizeof *r);
    r->uf = r->upd = uf;
    r->acc = r->adt = acc;
    if (!nd_cg_dtype_ok(acc)) return -1;
    const char *T = ctype_of(acc);
    r->AT = T;
    int fl = is_cls_float(acc), cx = nd_cg_is_complex(acc), in = is_cls_int(acc);
    const char *inf = acc == NPY_DOUBLE ? "INFINITY" : "(float)INFINITY";
    switch (uf) {
    case ND_UF_ADD:
        if (fl || cx) { r->kind = RK_CASCADE; snprintf(r->init, sizeof r->init, "0"); return 0; }
        if (acc == NPY_BOOL) { r->kind = RK_SIMD; strcpy(r->clause, "|"); strcpy(r->init, "0"); return 0; }
        r->adt = nd_cg_unsigned_twin(acc);
        r->AT = ctype_of(r->adt);
        r->kind = RK_SIMD; strcpy(r->clause, "+"); strcpy(r->init, "0");
        return 0;
    case ND_UF_MULTIPLY:
        if (cx) { r->kind = RK_SEQ; snprintf(r->init, sizeof r->init, "nd_cmk_%s(1, 0)", nd_cg_sfx(acc)); return 0; }
        if (acc == NPY_BOOL) { r->kind = RK_SIMD; strcpy(r->clause, "&"); strcpy(r->init, "1"); return 0; }
        if (in) { r->adt = nd_cg_unsigned_twin(acc); r->AT = ctype_of(r->adt); }
        if (acc == NPY_HALF) { r->kind = RK_SEQ; strcpy(r->init, "1"); return 0; }  /* float product */
        r->kind = RK_SIMD; strcpy(r->clause, "*"); strcpy(r->init, "1");
        return 0;
    case ND_UF_MAXIMUM: case ND_UF_MINIMUM: case ND_UF_FMAX: case ND_UF_FMIN: {
        int mx = uf == ND_UF_MAXIMUM || uf == ND_UF_FMAX, fnan = uf == ND_UF_FMAX || uf == ND_UF_FMIN;
        if (fl && !fnan) { r->kind = RK_FMINMAX; snprintf(r->init, sizeof r->init, "%s%s", mx ? "-" : "", inf); return 0; }
        if (fl) { r->kind = RK_SEQ; snprintf(r->init, sizeof r->init, "(%s)NAN", T); return 0; }
        if (!in) return -1;
        r->kind = RK_SIMD;
        strcpy(r->clause, mx ? "max" : "min");
        int_limit(r->init, sizeof r->init, T, !mx);
        return 0;
    }
    case ND_UF_LOGICAL_AND: case ND_UF_LOGICAL_OR:
        if (acc != NPY_BOOL) return -1;
        /* on 0/1 bools the logical ops are the bitwise ones, which
         * vectorize as reductions */
        r->upd = uf == ND_UF_LOGICAL_AND ? ND_UF_BITWISE_AND : ND_UF_BITWISE_OR;
        r->kind = RK_SIMD;
        strcpy(r->clause, uf == ND_UF_LOGICAL_AND ? "&" : "|");
        strcpy(r->init, uf == ND_UF_LOGICAL_AND ? "1" : "0");
        return 0;
    case ND_UF_BITWISE_AND: case ND_UF_BITWISE_OR: case ND_UF_BITWISE_XOR:
        if (!in) return -1;
        r->kind = RK_SIMD;
        strcpy(r->clause, uf == ND_UF_BITWISE_AND ? "&" : uf == ND_UF_BITWISE_OR ? "|" : "^");
        if (uf == ND_UF_BITWISE_AND) snprintf(r->init, sizeof r->init, "(%s)~(%s)0", T, T);
        else strcpy(r->init, "0");
        return 0;
    case ND_RED_ARGMAX: case ND_RED_ARGMIN:
        if (cx) return -1;
        r->kind = RK_ARG;
        strcpy(r->init, "0");
        return 0;
    default:
        return -1;
    }
}

/* the redop of REDUCE/SCAN node id; -1 when it has no C form */
static int redop_of(nd_graph *g, nd_id id, redop *r)
{
    nd_node *n = &g->nodes[id];
    return redop_make(r, n->sub, n->in_dtype[0] >= 0 ? n->in_dtype[0] : n->dtype);
}

/* "acc = acc OP v;": the ufunc's own C form on the accumulator's dtype.
 * NumPy's reductions multiply complex numbers without the FMA its
 * multiply array loop uses. */
static void red_update(nd_sb *sb, const redop *r, const char *acc, const char *v)
{
    int e = 0;
    nd_sb_printf(sb, "%s = ", acc);
    if (r->upd == ND_UF_MULTIPLY && nd_cg_is_complex(r->adt))
        nd_sb_printf(sb, "nd_cmul_%s(%s, %s)", nd_cg_sfx(r->adt), acc, v);
    else if (nd_cg_ufunc(sb, r->upd, 0, r->adt, acc, v, &e) < 0)
        sb->oom = 1;  /* redop_make admits only ufuncs with a form */
    nd_sb_puts(sb, ";\n");
}

/* argmax/argmin: "if (better) { bv = v; bi = idx; }" */
static void arg_update(nd_sb *sb, const redop *r, const char *bv, const char *bi,
                       const char *v, const char *idx)
{
    const char *cmp = r->uf == ND_RED_ARGMAX ? ">" : "<";
    if (is_cls_float(r->acc))
        nd_sb_printf(sb, "if (%s < 0 || %s %s %s || (%s != %s && %s == %s)) { %s = %s; %s = %s; }\n",
                     bi, v, cmp, bv, v, v, bv, bv, bv, v, bi, idx);
    else
        nd_sb_printf(sb, "if (%s < 0 || %s %s %s) { %s = %s; %s = %s; }\n",
                     bi, v, cmp, bv, bv, v, bi, idx);
}

/* arg_update for the lanes of a vector loop: non-short-circuit tests, a
 * blend and unconditional stores (GCC guards a masked store with a branch
 * on "some lane improved", which mispredicts on random data) */
static void arg_update_sel(nd_sb *sb, const redop *r, const char *bv, const char *bi,
                           const char *v, const char *idx)
{
    const char *cmp = r->uf == ND_RED_ARGMAX ? ">" : "<";
    nd_sb_printf(sb, "{\nconst %s ob_ = %s;\nconst int64_t oi_ = %s;\n", ctype_of(r->acc), bv, bi);
    if (is_cls_float(r->acc))
        nd_sb_printf(sb, "const int64_t up_ = -(int64_t)((oi_ < 0) | (%s %s ob_) | ((%s != %s) & (ob_ == ob_)));\n",
                     v, cmp, v, v);
    else
        nd_sb_printf(sb, "const int64_t up_ = -(int64_t)((oi_ < 0) | (%s %s ob_));\n", v, cmp);
    nd_sb_printf(sb, "%s = up_ ? %s : ob_;\n%s = (oi_ & ~up_) | ((int64_t)(%s) & up_);\n}\n", bv, v, bi, idx);
}

/* declarations of a per-output accumulator named with suffix `x` */
static void acc_decl(kctx *c, const redop *r, const char *x)
{
    nd_sb *sb = c->sb;
    const rpart *p;
    switch (r->kind) {
    case RK_CASCADE:
        for (int q = 0, np = parts_of(r, &p); q < np; q++)
            nd_sb_printf(sb, "%s cs%s%s[64];\nuint64_t cc%s%s = 0;\n", part_ctype(r), p[q].tag, x, p[q].tag, x);
        return;
    case RK_FMINMAX:
        nd_sb_printf(sb, "%s acc%s = %s;\nint nan%s = 0;\n", r->AT, x, r->init, x);
        return;
    case RK_ARG:
        nd_sb_printf(sb, "%s bv%s = 0;\nint64_t bi%s = -1;\n", r->AT, x, x);
        return;
    default:
        nd_sb_printf(sb, "%s acc%s = %s;\n", r->AT, x, r->init);
        return;
    }
}

/* push into cascade x each part of value v, or (v NULL) the block sums bs<tag>_ */
static void cascade_push(kctx *c, const redop *r, const char *x, const char *v)
{
    const rpart *p;
    char val[128];
    for (int q = 0, np = parts_of(r, &p); q < np; q++) {
        if (v) snprintf(val, sizeof val, "%s%s", p[q].sel, v);
        else snprintf(val, sizeof val, "bs%s_", p[q].tag);
        nd_sb_printf(c->sb, "nd_cas_push_%s(cs%s%s, &cc%s%s, %s);\n", part_sfx(r), p[q].tag, x, p[q].tag, x, val);
    }
}

/* The value to accumulate: "const AT cv_ = cast(v<val>)". */
static void acc_value(kctx *c, const redop *r, nd_id val, const char *name)
{
    char v[32];
    snprintf(v, sizeof v, "v%d", (int)val);
    nd_sb_printf(c->sb, "const %s %s = ", ctype_of(r->acc), name);
    nd_cg_cast(c->sb, v, c->g->nodes[val].dtype, r->acc);
    nd_sb_puts(c->sb, ";\n");
}

/* "for (j = lo; j < hi; j++) {" with the element's values and cv_ */
static int elem_loop(kctx *c, const redop *r, nd_id val, const uint8_t *which, const char *lo, const char *hi)
{
    nd_sb_printf(c->sb, "for (int64_t j = %s; j < %s; j++) {\n", lo, hi);
    if (body(c, "j", which) < 0) return -1;
    acc_value(c, r, val, "cv_");
    return 0;
}

/* A Ctrl-C poll every 16 blocks of a cascade (4096 elements), not every
 * block: the atomic load in each 256-element block costs ~7% of a softmax
 * row kernel (values around it reloaded); a row task polls at its start.
 * Once interrupted the walk jumps to its end (ND_POLL's `continue` alone
 * skipped only the polled block: a long reduction ran on to its end). */
#define POLL_BLOCKS "if (((jb_ - (%s)) & (16 * ND_RBLOCK - 1)) == 0 && " \
    "__builtin_expect(__atomic_load_n((E), __ATOMIC_RELAXED) & ND_ERR_INTERRUPT, 0)) { jb_ = (%s); continue; }\n"

/* Several running sums per block of a cascade (float and double sums):
 * one vector accumulator is a chain of dependent adds, 4 cycles each, and
 * a row re-read from L1 (x.std(-1): the squared deviations after the mean)
 * waits on it -- 4 vector registers' worth of lanes (256 bytes) keep the
 * adder busy. The lanes fold pairwise at the block's end, a fixed order:
 * the result does not depend on the compiler's vectorization. 0: one sum. */
static int cheap_value(kctx *c, nd_id v, int depth)
{
    nd_node *n = &c->g->nodes[v];
    for (int o = 0; o < c->k->nin; o++) if (c->k->ops[o].via == v) return 1;   /* a load */
    if (n->op == ND_OP_INPUT || n->op == ND_OP_SCALAR) return 1;
    int cp = c->cache_phase ? c->cache_phase[v] : -1;
    if (cp >= 0 && cp < c->phase) return 1;   /* read from the row's scratch */
    if (depth > 32 || nd_cg_cost(c->g, v) >= 20) return 0;
    for (int q = 0; q < n->nin; q++)
        if (n->in[q] >= 0 && !cheap_value(c, n->in[q], depth + 1)) return 0;
    return 1;
}

static int lane_count(kctx *c, const redop *r, nd_id val)
{
    const rpart *p;
    /* a transcendental per element (softmax's exp) is the bound, not the
     * adds, and its vector calls would spill the lanes: measured slower */
    if (parts_of(r, &p) != 1 || !cheap_value(c, val, 0)) return 0;
    int t = nd_cg_part_dtype(r->acc);
    return t == NPY_DOUBLE ? 32 : t == NPY_FLOAT ? 64 : 0;
}

/* bl_[0..nl) folded pairwise and added to `to` */
static void lane_fold(nd_sb *sb, int nl, const char *to)
{
    nd_sb_printf(sb, "for (int w_ = %d; w_ > 0; w_ /= 2)\nfor (int l_ = 0; l_ < w_; l_++) bl_[l_] += bl_[l_ + w_];\n"
                     "%s += bl_[0];\n}\n", nl / 2, to);
}

/* The inner loop over the innermost (reduced) dim, from j = lo to hi,
 * accumulating v<val> into accumulator `x`. `flat` is the C expression of
 * the flat index over the reduced dims without j's term (argmax). */
static int inner_reduce(kctx *c, const redop *r, nd_id val, const uint8_t *which,
                        const char *x, const char *lo, const char *hi, const char *flat)
{
    nd_sb *sb = c->sb;
    const char *err = c->uses_err ? " reduction(|:nd_err)" : "";
    char a[32];
    snprintf(a, sizeof a, "acc%s", x);
    switch (r->kind) {
    case RK_CASCADE: {
        /* blocks of ND_RBLOCK summed by a vector loop, pushed into the cascade */
        const rpart *p;
        int np = parts_of(r, &p);
        nd_sb_printf(sb, "for (int64_t jb_ = %s; jb_ < %s; jb_ += ND_RBLOCK) {\n" POLL_BLOCKS, lo, hi, lo, hi);
        nd_sb_printf(sb, "const int64_t je_ = ND_MIN(jb_ + ND_RBLOCK, %s);\n%s ", hi, part_ctype(r));
        for (int q = 0; q < np; q++) nd_sb_printf(sb, "%sbs%s_ = 0", q ? ", " : "", p[q].tag);
        nd_sb_puts(sb, ";\n");
        int nl = lane_count(c, r, val);
        if (nl) {
            /* the block's whole lane groups into nl running sums */
            nd_sb_printf(sb, "{\n%s bl_[%d];\nfor (int l_ = 0; l_ < %d; l_++) bl_[l_] = 0;\nint64_t jl_ = jb_;\n"
                         "for (; jl_ + %d <= je_; jl_ += %d) {\n#pragma omp simd%s\n",
                         part_ctype(r), nl, nl, nl, nl, err);
            char lhi[32];
            snprintf(lhi, sizeof lhi, "jl_ + %d", nl);
            if (elem_loop(c, r, val, which, "jl_", lhi) < 0) return -1;
            nd_sb_puts(sb, "bl_[j - jl_] += cv_;\n}\n}\n");
        }
        nd_sb_puts(sb, "#pragma omp simd reduction(+:");
        for (int q = 0; q < np; q++) nd_sb_printf(sb, "%sbs%s_", q ? ", " : "", p[q].tag);
        nd_sb_printf(sb, ")%s\n", err);
        if (elem_loop(c, r, val, which, nl ? "jl_" : "jb_", "je_") < 0) return -1;
        for (int q = 0; q < np; q++) nd_sb_printf(sb, "bs%s_ += %scv_;\n", p[q].tag, p[q].sel);
        nd_sb_puts(sb, "}\n");
        if (nl) lane_fold(sb, nl, "bs_");
        cascade_push(c, r, x, NULL);
        nd_sb_puts(sb, "}\n");
        return 0;
    }
    case RK_SIMD:
        nd_sb_printf(sb, "{\n%s bs_ = %s;\n#pragma omp simd reduction(%s:bs_)%s\n", r->AT, r->init, r->clause, err);
        if (elem_loop(c, r, val, which, lo, hi) < 0) return -1;
        red_update(sb, r, "bs_", "cv_");
        nd_sb_puts(sb, "}\n");
        red_update(sb, r, a, "bs_");
        nd_sb_puts(sb, "}\n");
        return 0;
    case RK_FMINMAX: {
        int mx = r->uf == ND_UF_MAXIMUM;
        nd_sb_printf(sb, "{\n%s bs_ = %s;\nint bn_ = 0;\n#pragma omp simd reduction(%s:bs_) reduction(|:bn_)%s\n",
                     r->AT, r->init, mx ? "max" : "min", err);
        if (elem_loop(c, r, val, which, lo, hi) < 0) return -1;
        nd_sb_printf(sb, "bs_ = cv_ %s bs_ ? cv_ : bs_;\nbn_ |= (cv_ != cv_);\n}\n", mx ? ">" : "<");
        nd_sb_printf(sb, "acc%s = bs_ %s acc%s ? bs_ : acc%s;\nnan%s |= bn_;\n}\n", x, mx ? ">" : "<", x, x, x);
        return 0;
    }
    case RK_SEQ:
        if (elem_loop(c, r, val, which, lo, hi) < 0) return -1;
        red_update(sb, r, a, "cv_");
        nd_sb_puts(sb, "}\n");
        return 0;
    case RK_ARG: {
        if (elem_loop(c, r, val, which, lo, hi) < 0) return -1;
        char bv[32], bi[32], idx[160];
        snprintf(bv, sizeof bv, "bv%s", x);
        snprintf(bi, sizeof bi, "bi%s", x);
        snprintf(idx, sizeof idx, "(%s) + j", flat);
        arg_update(sb, r, bv, bi, "cv_", idx);
        nd_sb_puts(sb, "}\n");
        return 0;
    }
    }
    return -1;
}

/* "const AT res<x> = <final value of accumulator x>;" */
static void acc_final(kctx *c, const redop *r, const char *x)
{
    nd_sb *sb = c->sb;
    switch (r->kind) {
    case RK_CASCADE: {
        /* the parts' sums, made one value of the accumulation dtype (a
         * float16 sum is rounded to half once, at the end) */
        const rpart *p;
        int np = parts_of(r, &p);
        const char *wrap = np > 1 ? "nd_cmk_" : r->acc == NPY_HALF ? "nd_rh" : "";
        nd_sb_printf(sb, "const %s res%s = %s%s%s", r->AT, x, wrap, np > 1 ? nd_cg_sfx(r->acc) : "", *wrap ? "(" : "");
        for (int q = 0; q < np; q++)
            nd_sb_printf(sb, "%snd_cas_sum_%s(cs%s%s, cc%s%s, 0)", q ? ", " : "", part_sfx(r), p[q].tag, x, p[q].tag, x);
        nd_sb_puts(sb, *wrap ? ");\n" : ";\n");
        return;
    }
    case RK_FMINMAX:
        nd_sb_printf(sb, "const %s res%s = nan%s ? (%s)NAN : acc%s;\n", r->AT, x, x, r->AT, x);
        return;
    case RK_ARG:
        nd_sb_printf(sb, "const int64_t res%s = bi%s < 0 ? 0 : bi%s;\n", x, x, x);
        return;
    default:
        nd_sb_printf(sb, "const %s res%s = acc%s;\n", r->AT, x, x);
        return;
    }
}

/* the reduction's result value v<rid> (node dtype) from res<x>, with the
 * initial value folded in */
static void red_result(kctx *c, const redop *r, nd_id rid, const char *x)
{
    nd_node *rn = &c->g->nodes[rid];
    nd_sb *sb = c->sb;
    char res[32];
    snprintf(res, sizeof res, "res%s", x);
    if (r->kind != RK_ARG && rn->nin > 1 && rn->in[1] >= 0) {
        char iv[32], a[40];
        snprintf(iv, sizeof iv, "v%d", (int)rn->in[1]);
        nd_sb_printf(sb, "%s ini%s = ", r->AT, x);
        nd_cg_cast(sb, iv, c->g->nodes[rn->in[1]].dtype, r->acc);
        nd_sb_puts(sb, ";\n");
        snprintf(a, sizeof a, "ini%s", x);
        red_update(sb, r, a, res);
        snprintf(res, sizeof res, "ini%s", x);
    }
    nd_sb_printf(sb, "const %s v%d = ", ctype_of(rn->dtype), (int)rid);
    if (r->kind == RK_ARG) nd_cg_cast(sb, res, NPY_LONGLONG, rn->dtype);
    else if (r->adt != r->acc) {
        /* unsigned accumulator of a signed dtype */
        char t[64];
        snprintf(t, sizeof t, "(%s)%s", ctype_of(r->acc), res);
        nd_cg_cast(sb, t, r->acc, rn->dtype);
    } else nd_cg_cast(sb, res, r->acc, rn->dtype);
    nd_sb_puts(sb, ";\n");
}

/* A short reduction inline (a frame, passes/schedule.h): its input is
 * computed at each index along its short dims in turn, unrolled (the
 * extents are in the graph key), folded left to right from the first
 * element as NumPy's reduce does without an identity; argmax/argmin keep
 * the first extreme, and the first NaN. Gives v<rid>. */
static int emit_short(kctx *c, nd_id rid, const char *jv)
{
    nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    nd_node *rn = &c->g->nodes[rid];
    int f = -1;
    for (int q = 0; q < k->nfr; q++) if (k->fr[q] == rid) f = q;
    redop r;
    if (f < 0 || c->fr >= 0 || redop_of(c->g, rid, &r) < 0) {
        PyErr_SetString(PyExc_SystemError, "numdyn: internal error: short reduction without a frame");
        return -1;
    }
    int ext[ND_MAXFS], ns = nd_frame_short(c->g, rid, NULL, ext), tot = 1;
    for (int t = 0; t < ns; t++) tot *= ext[t];
    int arg = r.kind == RK_ARG;
    const char *AT = arg ? ctype_of(r.acc) : r.AT;
    char sa[32], si[32], x[16];
    snprintf(sa, sizeof sa, "sa%d_", f);
    snprintf(si, sizeof si, "si%d_", f);
    snprintf(x, sizeof x, "S%d", f);
    nd_sb_printf(sb, "%s %s;\n", AT, sa);
    if (arg) nd_sb_printf(sb, "int64_t %s = 0;\n", si);
    /* a float sum of 8 or more: NumPy's pairwise order for a row (8
     * accumulators over the multiples of 8, their tree, then the rest in
     * turn), the same bits as NumPy's x.sum(-1) of C rows and independent
     * chains for the CPU */
    int pw = r.kind == RK_CASCADE && !nd_cg_is_complex(r.acc) && tot >= 8, pwend = tot - tot % 8;
    if (pw) nd_sb_printf(sb, "%s pw%d_[8];\n", AT, f);
    c->fr = f;
    for (int e = 0; e < tot; e++) {
        for (int t = ns - 1, rem = e; t >= 0; t--) { c->fe[t] = rem % ext[t]; rem /= ext[t]; }
        nd_sb_puts(sb, "{\n");
        if (body(c, jv, NULL) < 0) { c->fr = -1; return -1; }
        acc_value(c, &r, rn->in[0], "cv_");
        if (pw && e < 8) nd_sb_printf(sb, "pw%d_[%d] = (%s)cv_;\n", f, e, AT);
        else if (pw && e < pwend) nd_sb_printf(sb, "pw%d_[%d] += cv_;\n", f, e % 8);
        else if (pw) red_update(sb, &r, sa, "cv_");
        else if (e == 0) nd_sb_printf(sb, "%s = (%s)cv_;\n", sa, AT);
        else if (arg) nd_cg_arg_step(sb, r.uf == ND_RED_ARGMAX, is_cls_float(r.acc), sa, si, e);
        else red_update(sb, &r, sa, "cv_");
        nd_sb_puts(sb, "}\n");
        if (pw && e == pwend - 1)
            nd_sb_printf(sb, "%s = ((pw%d_[0] + pw%d_[1]) + (pw%d_[2] + pw%d_[3])) + "
                         "((pw%d_[4] + pw%d_[5]) + (pw%d_[6] + pw%d_[7]));\n", sa, f, f, f, f, f, f, f, f);
    }
    c->fr = -1;
    for (int t = 0; t < ND_MAXFS; t++) c->fe[t] = 0;
    if (arg) nd_sb_printf(sb, "const int64_t res%s = %s;\n", x, si);
    else nd_sb_printf(sb, "const %s res%s = %s;\n", AT, x, sa);
    red_result(c, &r, rid, x);
    return 0;
}

/* Combine a chunk's partial result (res-like value `p`, index `pi`) into
 * accumulator x (full reductions split across threads). */
static void acc_combine(kctx *c, const redop *r, const char *x, const char *p, const char *pi)
{
    nd_sb *sb = c->sb;
    char a[32];
    switch (r->kind) {
    case RK_CASCADE:
        cascade_push(c, r, x, p);
        return;
    case RK_FMINMAX: {
        int mx = r->uf == ND_UF_MAXIMUM;
        nd_sb_printf(sb, "if (%s != %s) nan%s = 1; else if (%s %s acc%s) acc%s = %s;\n",
                     p, p, x, p, mx ? ">" : "<", x, x, p);
        return;
    }
    case RK_ARG: {
        char bv[32], bi[32];
        snprintf(bv, sizeof bv, "bv%s", x);
        snprintf(bi, sizeof bi, "bi%s", x);
        nd_sb_printf(sb, "if (%s >= 0) {\n", pi);
        arg_update(sb, r, bv, bi, p, pi);
        nd_sb_puts(sb, "}\n");
        return;
    }
    default:
        snprintf(a, sizeof a, "acc%s", x);
        red_update(sb, r, a, p);
        return;
    }
}

/* serial loops over the dims in `sd` (outer first); returns how many were opened */
static int open_serial(kctx *c, uint32_t sd, int chunk_dim)
{
    int opened = 0;
    for (int d = 0; d < c->R; d++) {
        if (!(sd & (1u << d))) continue;
        if (d == c->bdim) nd_sb_printf(c->sb, "for (int64_t i%d = wlo_; i%d < whi_; i%d++) {\n", d, d, d);
        else if (d == chunk_dim) nd_sb_printf(c->sb, "for (int64_t i%d = lo_; i%d < hi_; i%d++) {\n", d, d, d);
        else nd_sb_printf(c->sb, "for (int64_t i%d = 0; i%d < n%d; i%d++) {\n", d, d, d, d);
        opened++;
    }
    return opened;
}

/* the C-order flat index over the reduced dims other than the innermost,
 * scaled by the innermost size (argmax) */
static void flat_expr(kctx *c, char *buf, size_t n, int with_inner_scale)
{
    nd_kernel *k = c->k;
    int R = c->R;
    snprintf(buf, n, "0");
    for (int d = 0; d < R - (with_inner_scale ? 1 : 0); d++) {
        if (!(k->red & (1u << d))) continue;
        char t[256];
        snprintf(t, sizeof t, "((%s) * n%d + i%d)", buf, d, d);
        snprintf(buf, n, "%s", t);
    }
    if (with_inner_scale) {
        char t[256];
        snprintf(t, sizeof t, "((%s) * n%d)", buf, R - 1);
        snprintf(buf, n, "%s", t);
    }
}

/* a value computed once per row from the reductions' results */
static int row_value(kctx *c, nd_id v)
{
    nd_node *vn = &c->g->nodes[v];
    if (vn->op != ND_OP_VIEW) return nd_cg_node(c->g, v, c->sb, &c->uses_err);
    nd_sb_printf(c->sb, "const %s v%d = v%d;\n", ctype_of(vn->dtype), (int)v, (int)vn->in[0]);
    return 0;
}

/* A reduction kernel's output o stored per element of its domain (a side
 * output, passes/schedule.h ND_ROW_SIDE: y = x * 2 next to x.sum(0)): its
 * array has the domain's extent along a reduced dim, where every other
 * output has 1. Stored from the walk (across_element), not the epilogue. */
static int side_out(kctx *c, int o)
{
    const nd_kernel *k = c->k;
    const nd_kop *op = &k->ops[o];
    const nd_node *m = &c->g->nodes[op->buf], *d = &c->g->nodes[k->dom];
    if (k->kind != ND_K_REDUCE || o < k->nin || op->acc != ND_A_DIRECT || m->ndim != d->ndim) return 0;
    for (int q = 0; q < c->R; q++)
        if ((k->red & (1u << q)) && m->shape[k->dims[q]] != 1) return 1;
    return 0;
}

/* pointers q<o> of the side outputs over the bound dims */
static void side_pointers(kctx *c, uint32_t bound)
{
    for (int o = c->k->nin; o < c->k->nin + c->k->nout; o++)
        if (side_out(c, o)) pointer(c, o, bound, "q");
}

/* the epilogue: row values computed from the reduction's result (e.g.
 * sqrt(sum(...))), then every output stored at pointer prefix q */
static int epilogue_store(kctx *c, uint32_t bound, const char *jv)
{
    nd_kernel *k = c->k;
    for (int i = 0; i < k->nrow; i++)
        if (row_value(c, k->rowv[i]) < 0) return -1;
    for (int o = k->nin; o < k->nin + k->nout; o++)
        if (!side_out(c, o)) store_at(c, o, bound, k->oval[o - k->nin], jv);
    return 0;
}

/* A reduction kernel computes one reduction or several over one domain and
 * the same reduced dims (a row group without domain values, horizontal
 * fusion: pass_rowfuse.c): one walk over the domain computes each
 * reduction's input per element and folds it into its own accumulator
 * (suffix "<x>p<p>"), then the row values and the stores -- one pass over
 * memory for x.sum(0) and (x * x).sum(0), a.min() and a.max(). Sums add
 * pairwise blocks of ND_RBLOCK along the innermost dim either way. */
typedef struct rset {
    int n;
    redop r[ND_MAXRED];
    nd_id rid[ND_MAXRED], val[ND_MAXRED];  /* val: -1 for a moment */
    int cent[ND_MAXRED];   /* a moment: the index of its mean's sum, else -1 */
    nd_id div[ND_MAXRED];  /* a moment: the SCALAR dividing that sum */
    int same[ND_MAXRED];   /* an earlier reduction computing the very same
                              value (x.mean(0) and the mean inside x.std(0)),
                              whose accumulator the across loops share; -1 */
    int nmom;
} rset;

/* reductions p and q of s fold the same values the same way */
static int same_reduction(kctx *c, const rset *s, int p, int q)
{
    const nd_node *a = &c->g->nodes[s->rid[p]], *b = &c->g->nodes[s->rid[q]];
    const redop *ra = &s->r[p], *rb = &s->r[q];
    return s->cent[p] < 0 && s->cent[q] < 0 && s->val[p] == s->val[q] && ra->kind != RK_ARG &&
           ra->kind == rb->kind && ra->uf == rb->uf && ra->acc == rb->acc && ra->adt == rb->adt &&
           a->in_dtype[0] == b->in_dtype[0] && !(a->nin > 1 && a->in[1] >= 0) && !(b->nin > 1 && b->in[1] >= 0);
}

static int rset_make(kctx *c, rset *s)
{
    nd_kernel *k = c->k;
    if (k->nred > ND_MAXRED) goto bad;
    s->n = k->nred ? k->nred : 1;
    s->nmom = 0;
    for (int p = 0; p < s->n; p++) {
        s->rid[p] = k->nred ? k->reds[p] : k->root;
        s->cent[p] = k->rcent ? k->rcent[p] : -1;
        s->div[p] = k->rdiv ? k->rdiv[p] : -1;
        s->val[p] = s->cent[p] >= 0 ? -1 : c->g->nodes[s->rid[p]].in[0];
        if (redop_of(c->g, s->rid[p], &s->r[p]) < 0) goto bad;
        if (s->cent[p] >= 0) {
            if (s->cent[p] >= p || s->r[p].kind != RK_CASCADE || s->r[s->cent[p]].kind != RK_CASCADE) goto bad;
            s->nmom++;
        }
    }
    for (int p = 0; p < s->n; p++) {
        s->same[p] = -1;
        for (int q = 0; q < p && s->same[p] < 0; q++)
            if (s->same[q] < 0 && same_reduction(c, s, p, q)) s->same[p] = q;
    }
    for (int p = 0; p < s->n; p++)
        if (s->cent[p] >= 0 && s->same[s->cent[p]] >= 0) s->cent[p] = s->same[s->cent[p]];
    return 0;
bad:
    PyErr_SetString(PyExc_NotImplementedError, "numdyn: reductions without a C form");
    return -1;
}

static void px(char *buf, size_t n, const char *x, int p) { snprintf(buf, n, "%sp%d", x, p); }

/* the innermost reduced dim from lo to hi, every reduction of s folding its
 * value into accumulator <x>p<p>; blocks of ND_RBLOCK, one vector loop a
 * block (a plain loop when one reduction is sequential) */
static int inner_multi(kctx *c, const rset *s, const char *x, const char *lo, const char *hi, const char *flat)
{
    nd_sb *sb = c->sb;
    int simd = 1;
    char a[40], t[64];
    if (s->n == 1) {
        px(t, sizeof t, x, 0);
        return inner_reduce(c, &s->r[0], s->val[0], NULL, t, lo, hi, flat);
    }
    for (int p = 0; p < s->n; p++) if (s->r[p].kind == RK_SEQ || s->r[p].kind == RK_ARG) simd = 0;
    nd_sb_printf(sb, "for (int64_t jb_ = %s; jb_ < %s; jb_ += ND_RBLOCK) {\n" POLL_BLOCKS, lo, hi, lo, hi);
    nd_sb_printf(sb, "const int64_t je_ = ND_MIN(jb_ + ND_RBLOCK, %s);\n", hi);
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        const rpart *pt;
        switch (r->kind) {
        case RK_CASCADE:
            for (int q = 0, np = parts_of(r, &pt); q < np; q++)
                nd_sb_printf(sb, "%s bs%d%s_ = 0;\n", part_ctype(r), p, pt[q].tag);
            break;
        case RK_SIMD:
            nd_sb_printf(sb, "%s bs%d_ = %s;\n", r->AT, p, r->init);
            break;
        case RK_FMINMAX:
            nd_sb_printf(sb, "%s bs%d_ = %s;\nint bn%d_ = 0;\n", r->AT, p, r->init, p);
            break;
        default:
            break;
        }
    }
    if (simd) {
        nd_sb_puts(sb, "#pragma omp simd");
        for (int p = 0; p < s->n; p++) {
            const redop *r = &s->r[p];
            const rpart *pt;
            if (r->kind == RK_CASCADE)
                for (int q = 0, np = parts_of(r, &pt); q < np; q++)
                    nd_sb_printf(sb, " reduction(+:bs%d%s_)", p, pt[q].tag);
            else if (r->kind == RK_SIMD)
                nd_sb_printf(sb, " reduction(%s:bs%d_)", r->clause, p);
            else if (r->kind == RK_FMINMAX)
                nd_sb_printf(sb, " reduction(%s:bs%d_) reduction(|:bn%d_)",
                             r->uf == ND_UF_MAXIMUM ? "max" : "min", p, p);
        }
        nd_sb_printf(sb, "%s\n", c->uses_err ? " reduction(|:nd_err)" : "");
    }
    nd_sb_puts(sb, "for (int64_t j = jb_; j < je_; j++) {\n");
    if (body(c, "j", NULL) < 0) return -1;
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        const rpart *pt;
        char cv[16], xp[24];
        snprintf(cv, sizeof cv, "cv%d_", p);
        px(xp, sizeof xp, x, p);
        acc_value(c, r, s->val[p], cv);
        switch (r->kind) {
        case RK_CASCADE:
            for (int q = 0, np = parts_of(r, &pt); q < np; q++)
                nd_sb_printf(sb, "bs%d%s_ += %s%s;\n", p, pt[q].tag, pt[q].sel, cv);
            break;
        case RK_SIMD:
            snprintf(a, sizeof a, "bs%d_", p);
            red_update(sb, r, a, cv);
            break;
        case RK_FMINMAX:
            nd_sb_printf(sb, "bs%d_ = %s %s bs%d_ ? %s : bs%d_;\nbn%d_ |= (%s != %s);\n", p, cv,
                         r->uf == ND_UF_MAXIMUM ? ">" : "<", p, cv, p, p, cv, cv);
            break;
        case RK_SEQ:
            snprintf(a, sizeof a, "acc%s", xp);
            red_update(sb, r, a, cv);
            break;
        case RK_ARG: {
            char bv[40], bi[40], idx[300];
            snprintf(bv, sizeof bv, "bv%s", xp);
            snprintf(bi, sizeof bi, "bi%s", xp);
            snprintf(idx, sizeof idx, "(%s) + j", flat);
            arg_update(sb, r, bv, bi, cv, idx);
            break;
        }
        }
    }
    nd_sb_puts(sb, "}\n");
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        const rpart *pt;
        char xp[24];
        px(xp, sizeof xp, x, p);
        switch (r->kind) {
        case RK_CASCADE:
            for (int q = 0, np = parts_of(r, &pt); q < np; q++)
                nd_sb_printf(sb, "nd_cas_push_%s(cs%s%s, &cc%s%s, bs%d%s_);\n", part_sfx(r), pt[q].tag, xp,
                             pt[q].tag, xp, p, pt[q].tag);
            break;
        case RK_SIMD:
            snprintf(a, sizeof a, "acc%s", xp);
            snprintf(t, sizeof t, "bs%d_", p);
            red_update(sb, r, a, t);
            break;
        case RK_FMINMAX: {
            const char *cmp = r->uf == ND_UF_MAXIMUM ? ">" : "<";
            nd_sb_printf(sb, "acc%s = bs%d_ %s acc%s ? bs%d_ : acc%s;\nnan%s |= bn%d_;\n", xp, p, cmp, xp, p, xp, xp, p);
            break;
        }
        default:
            break;
        }
    }
    nd_sb_puts(sb, "}\n");
    return 0;
}

static void decl_all(kctx *c, const rset *s, const char *x)
{
    char xp[24];
    for (int p = 0; p < s->n; p++) { px(xp, sizeof xp, x, p); acc_decl(c, &s->r[p], xp); }
}

static void result_all(kctx *c, const rset *s, const char *x)
{
    char xp[24];
    for (int p = 0; p < s->n; p++) {
        px(xp, sizeof xp, x, p);
        acc_final(c, &s->r[p], xp);
        red_result(c, &s->r[p], s->rid[p], xp);
    }
}

/* what computing node x needs in the current kernel, into `which` */
static void mark_needed(kctx *c, uint8_t *which, nd_id x)
{
    if (which[x]) return;
    which[x] = 1;
    nd_node *n = &c->g->nodes[x];
    for (int o = 0; o < c->k->nin; o++) if (c->k->ops[o].via == x) return;   /* a load */
    if (n->op == ND_OP_INPUT || n->op == ND_OP_SCALAR) return;
    for (int q = 0; q < n->nin; q++) if (n->in[q] >= 0) mark_needed(c, which, n->in[q]);
}

/* A chunk's second walk (rows c0_..c1_ along rd, in cache): each moment's
 * squared deviations from the chunk's mean, then Chan's update of the
 * moment (acc), and the running sum of the chunk sums (rs); all sums are of
 * x - k (k: the value at row lo_, the first of the rows walked; variance
 * does not change with a shift) */
static int moment_pass(kctx *c, const rset *s, int rd, uint32_t td)
{
    nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    uint8_t *which = PyMem_Calloc((size_t)c->g->n, 1);
    if (!which) { PyErr_NoMemory(); return -1; }
    for (int p = 0; p < s->n; p++) if (s->cent[p] >= 0) mark_needed(c, which, s->val[s->cent[p]]);
    /* the chunk's mean, once per column: a division per element costs more
     * than the rest of the walk */
    nd_sb_puts(sb, "for (int64_t j = 0; j < j1 - j0; j++) {\n");
    for (int p = 0; p < s->n; p++)
        if (s->cent[p] >= 0) nd_sb_printf(sb, "mc%d_[j] = cs%d_[j] / (%s)(c1_ - c0_);\n", p, p, s->r[p].AT);
    nd_sb_puts(sb, "}\n");
    nd_sb_printf(sb, "for (int64_t i%d = c0_; i%d < c1_; i%d++) {\n", rd, rd, rd);
    for (int o = 0; o < k->nin; o++) if (which[k->ops[o].via]) pointer(c, o, td | k->red, "p");
    nd_sb_printf(sb, "#pragma omp simd%s\n", c->uses_err ? " reduction(|:nd_err)" : "");
    nd_sb_puts(sb, "for (int64_t j = j0; j < j1; j++) {\n");
    int rc = body(c, "j", which);
    PyMem_Free(which);
    if (rc < 0) return -1;
    for (int p = 0; p < s->n; p++) {
        if (s->cent[p] < 0) continue;
        const redop *r = &s->r[p];
        char cw[16];
        snprintf(cw, sizeof cw, "cw%d_", p);
        acc_value(c, &s->r[s->cent[p]], s->val[s->cent[p]], cw);
        nd_sb_printf(sb, "{\nconst %s d_ = (cw%d_ - k%d_[j - j0]) - mc%d_[j - j0];\n"
                     "cm%d_[j - j0] += d_ * d_;\n}\n", r->AT, p, p, p, p);
    }
    nd_sb_puts(sb, "}\n}\n");
    nd_sb_puts(sb, "for (int64_t j = 0; j < j1 - j0; j++) {\n");
    for (int p = 0; p < s->n; p++) {
        if (s->cent[p] < 0) continue;
        const char *AT = s->r[p].AT;
        nd_sb_printf(sb, "{\nconst %s nb_ = (%s)(c1_ - c0_), na_ = (%s)(c0_ - lo_);\n"
                     "const %s dl_ = c0_ > lo_ ? cs%d_[j] / nb_ - rs%d_[j] / na_ : (%s)0;\n"
                     "acc%d_[j] += cm%d_[j] + dl_ * dl_ * (na_ * nb_ / (na_ + nb_));\nrs%d_[j] += cs%d_[j];\n}\n",
                     AT, AT, AT, AT, p, p, AT, p, p, p, p);
    }
    nd_sb_puts(sb, "}\n");
    return 0;
}

/* Moments walk rows lo_..hi_ along rd in chunks of 128: the rows' sums,
 * then (the chunk in cache, moment_pass) their squared deviations from the
 * chunk's mean, folded into the moment by Chan's pairwise update. Opens
 * the chunk loop and the row loop. */
static void moment_rows(kctx *c, const rset *s, int rd)
{
    nd_sb *sb = c->sb;
    nd_sb_puts(sb, "for (int64_t c0_ = lo_; c0_ < hi_; c0_ += 128) {\n"
                   "const int64_t c1_ = ND_MIN(c0_ + 128, hi_);\n");
    for (int p = 0; p < s->n; p++)
        if (s->cent[p] >= 0)
            nd_sb_printf(sb, "for (int64_t j = 0; j < j1 - j0; j++) { cs%d_[j] = 0; cm%d_[j] = 0; }\n", p, p);
    nd_sb_printf(sb, "for (int64_t i%d = c0_; i%d < c1_; i%d++) {\n", rd, rd, rd);
}

/* "const AT res_<p> = <accumulated value a (argmax: index b)>;" */
static void res_line(kctx *c, const redop *r, int p, const char *a, const char *b)
{
    if (r->kind == RK_ARG) nd_sb_printf(c->sb, "const int64_t res_%d = %s < 0 ? 0 : %s;\n", p, b, b);
    else if (r->acc == NPY_HALF && r->kind == RK_CASCADE) nd_sb_printf(c->sb, "const float res_%d = nd_rh(%s);\n", p, a);
    else nd_sb_printf(c->sb, "const %s res_%d = %s;\n", r->AT, p, a);
}

/* per-output-element accumulators acc<p>_[j - j0] (bi<p>_: argmax indices),
 * `na` of each, initialized over j0..j1 */
static void across_accs(kctx *c, const rset *s, int na, const char *sx)
{
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        const char *AT = r->kind == RK_ARG ? ctype_of(r->acc) : r->AT;
        if (*sx) {
            /* a second set (the second half of the rows: across_walk) */
            nd_sb_printf(c->sb, "%s acc%d%s_[%d];\n", AT, p, sx, na);
            if (r->kind == RK_ARG)
                nd_sb_printf(c->sb, "int64_t bi%d%s_[%d];\n"
                             "for (int64_t j = 0; j < j1 - j0; j++) { acc%d%s_[j] = 0; bi%d%s_[j] = -1; }\n",
                             p, sx, na, p, sx, p, sx);
            else nd_sb_printf(c->sb, "for (int64_t j = 0; j < j1 - j0; j++) acc%d%s_[j] = %s;\n", p, sx, r->init);
            continue;
        }
        if (s->cent[p] >= 0)
            nd_sb_printf(c->sb, "%s cs%d_[%d], cm%d_[%d], rs%d_[%d], k%d_[%d], mc%d_[%d];\n"
                         "for (int64_t j = 0; j < j1 - j0; j++) rs%d_[j] = 0;\n",
                         AT, p, na, p, na, p, na, p, na, p, na, p);
        nd_sb_printf(c->sb, "%s acc%d_[%d];\n", AT, p, na);
        if (r->kind == RK_ARG) nd_sb_printf(c->sb, "int64_t bi%d_[%d];\n", p, na);
        if (r->kind == RK_CASCADE) nd_sb_printf(c->sb, "for (int64_t j = 0; j < j1 - j0; j++) acc%d_[j] = 0;\n", p);
        else if (r->kind == RK_ARG)
            nd_sb_printf(c->sb, "for (int64_t j = 0; j < j1 - j0; j++) { acc%d_[j] = 0; bi%d_[j] = -1; }\n", p, p);
        else nd_sb_printf(c->sb, "for (int64_t j = 0; j < j1 - j0; j++) acc%d_[j] = %s;\n", p, r->init);
    }
}

/* one element's values folded into the accumulators acc<p>_[j - j0]; a
 * moment's chunk sum instead (rd: the dim its chunks walk) */
static int across_element(kctx *c, const rset *s, const char *jv, int rd, const char *sx)
{
    nd_sb *sb = c->sb;
    char a[48], b[48], flat[256];
    if (body(c, jv, NULL) < 0) return -1;
    for (int o = c->k->nin; o < c->k->nin + c->k->nout; o++)
        if (side_out(c, o)) store(c, o, c->k->oval[o - c->k->nin], "q", jv);
    flat_expr(c, flat, sizeof flat, 0);
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        char cv[16];
        if (s->cent[p] >= 0) {
            /* sums of x - k, k the first row's value: the chunk means and
             * their differences are then small numbers, exact to eps */
            nd_sb_printf(sb, "if (i%d == lo_) k%d_[j - j0] = cv%d_;\ncs%d_[j - j0] += cv%d_ - k%d_[j - j0];\n",
                         rd, p, s->cent[p], p, s->cent[p], p);
            continue;
        }
        if (s->same[p] >= 0) continue;
        snprintf(cv, sizeof cv, "cv%d_", p);
        acc_value(c, r, s->val[p], cv);
        snprintf(a, sizeof a, "acc%d%s_[j - j0]", p, sx);
        snprintf(b, sizeof b, "bi%d%s_[j - j0]", p, sx);
        if (r->kind == RK_ARG) arg_update_sel(sb, r, a, b, cv, flat);
        else red_update(sb, r, a, cv);
    }
    return 0;
}

/* The walk of across_multi / split_across over j0..j1: accumulators
 * (`na` each), the serial loops over the reduced dims (rows lo_..hi_ of
 * chunk_dim, or moments' chunks along rd), the vector loop over j. */
/* the rows of a block folded in two halves at once, each into its own
 * accumulators (two dependency chains: a tile's min/max/argmin otherwise
 * waits on its one accumulator every row), then the second half folded
 * into the first: ties and NaNs resolve as in one walk in row order (the
 * first half's value stays on a tie, the first NaN stays). Only for folds
 * that are exact in any grouping: not float sums or products, not moments. */
static int halves_ok(kctx *c, const rset *s)
{
    if (c->bdim < 0 || s->nmom || c->k->red != (1u << c->bdim)) return 0;
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        if (r->kind == RK_ARG || r->kind == RK_FMINMAX) continue;
        if (r->kind != RK_SIMD || (r->uf == ND_UF_MULTIPLY && is_cls_float(r->acc))) return 0;
    }
    return 1;
}

/* one row i<bdim> = `row` of the walk folded into accumulator set sx */
static int across_row(kctx *c, const rset *s, uint32_t bound, const char *jv, const char *row, const char *sx)
{
    nd_sb *sb = c->sb;
    nd_sb_printf(sb, "{\nconst int64_t ih_ = %s;\n{\nconst int64_t i%d = ih_;\n", row, c->bdim);
    for (int o = 0; o < c->k->nin; o++) pointer(c, o, bound, "p");
    side_pointers(c, bound);
    nd_sb_printf(sb, "#pragma omp simd%s\n", c->uses_err ? " reduction(|:nd_err)" : "");
    nd_sb_puts(sb, "for (int64_t j = j0; j < j1; j++) {\n");
    if (across_element(c, s, jv, -1, sx) < 0) return -1;
    nd_sb_puts(sb, "}\n}\n}\n");
    return 0;
}

static int across_walk(kctx *c, const rset *s, int rd, uint32_t bound, int chunk_dim, const char *jv, int na)
{
    nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    int halves = halves_ok(c, s);
    across_accs(c, s, na, "");
    if (halves) across_accs(c, s, na, "h");
    if (c->bdim >= 0) {
        /* a later row block goes on from the tile's accumulators so far */
        nd_sb_puts(sb, "if (wlo_ > wb0_) {\nfor (int64_t j = 0; j < j1 - j0; j++) {\n");
        for (int p = 0; p < s->n; p++) {
            nd_sb_printf(sb, "acc%d_[j] = ao%d_[j];\n", p, p);
            if (s->r[p].kind == RK_ARG) nd_sb_printf(sb, "bi%d_[j] = bo%d_[j];\n", p, p);
        }
        nd_sb_puts(sb, "}\n}\n");
    }
    nd_sb_puts(sb, "{\n");
    int opened;
    if (s->nmom) {
        if (chunk_dim < 0) nd_sb_printf(sb, "const int64_t lo_ = 0, hi_ = n%d;\n", rd);
        moment_rows(c, s, rd);
        opened = 1;
    } else if (halves) {
        int d = c->bdim;
        nd_sb_printf(sb, "const int64_t hh_ = (whi_ - wlo_) / 2, hm_ = wlo_ + hh_;\n"
                         "for (int64_t i%d = wlo_; i%d < hm_; i%d++) {\n", d, d, d);
        opened = 1;
    } else {
        opened = open_serial(c, k->red, chunk_dim);
    }
    for (int o = 0; o < k->nin; o++) pointer(c, o, bound, "p");
    side_pointers(c, bound);
    nd_sb_printf(sb, "#pragma omp simd%s\n", c->uses_err ? " reduction(|:nd_err)" : "");
    nd_sb_puts(sb, "for (int64_t j = j0; j < j1; j++) {\n");
    if (across_element(c, s, jv, s->nmom ? rd : -1, "") < 0) return -1;
    nd_sb_puts(sb, "}\n");
    if (halves) {
        char row[32];
        snprintf(row, sizeof row, "i%d + hh_", c->bdim);
        if (across_row(c, s, bound, jv, row, "h") < 0) return -1;
    }
    for (int q = 0; q < opened; q++) nd_sb_puts(sb, "}\n");
    if (halves) {
        /* the second half's last row when it has one more */
        nd_sb_puts(sb, "if ((whi_ - wlo_) & 1) ");
        if (across_row(c, s, bound, jv, "whi_ - 1", "h") < 0) return -1;
        nd_sb_puts(sb, "for (int64_t j = 0; j < j1 - j0; j++) {\n");
        for (int p = 0; p < s->n; p++) {
            const redop *r = &s->r[p];
            char a[32], b[32], v[32], vi[32];
            if (s->same[p] >= 0) continue;
            snprintf(a, sizeof a, "acc%d_[j]", p);
            snprintf(v, sizeof v, "acc%dh_[j]", p);
            if (r->kind == RK_ARG) {
                snprintf(b, sizeof b, "bi%d_[j]", p);
                snprintf(vi, sizeof vi, "bi%dh_[j]", p);
                nd_sb_printf(sb, "if (%s >= 0) ", vi);
                arg_update(sb, r, a, b, v, vi);
            } else {
                red_update(sb, r, a, v);
            }
        }
        nd_sb_puts(sb, "}\n");
    }
    if (s->nmom) {
        if (moment_pass(c, s, rd, bound & ~k->red) < 0) return -1;
        nd_sb_puts(sb, "}\n");   /* the chunk */
    }
    nd_sb_puts(sb, "}\n");
    return 0;
}

/* across_walk over jlo_..jhi_ with accumulators of its own, copied to the
 * caller's at their offset; width w > 0: jhi_ - jlo_ is that constant */
static int across_sub(kctx *c, const rset *s, int rd, uint32_t bound, int chunk_dim, int w)
{
    nd_sb *sb = c->sb;
    nd_sb_puts(sb, "{\n");
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        const char *AT = r->kind == RK_ARG ? ctype_of(r->acc) : r->AT;
        nd_sb_printf(sb, "%s *const ao%d_ = acc%d_ + (jlo_ - j0);\n", AT, p, p);
        if (r->kind == RK_ARG) nd_sb_printf(sb, "int64_t *const bo%d_ = bi%d_ + (jlo_ - j0);\n", p, p);
        if (s->cent[p] >= 0)
            nd_sb_printf(sb, "%s *const ko%d_ = k%d_ + (jlo_ - j0), *const ro%d_ = rs%d_ + (jlo_ - j0);\n",
                         AT, p, p, p, p);
    }
    nd_sb_puts(sb, "{\nconst int64_t j0 = jlo_, j1 = jhi_;\n");
    if (across_walk(c, s, rd, bound, chunk_dim, "j", w > 0 ? w : RBLOCK_K) < 0) return -1;
    nd_sb_puts(sb, "for (int64_t j = 0; j < j1 - j0; j++) {\n");
    for (int p = 0; p < s->n; p++) {
        nd_sb_printf(sb, "ao%d_[j] = acc%d_[j];\n", p, p);
        if (s->r[p].kind == RK_ARG) nd_sb_printf(sb, "bo%d_[j] = bi%d_[j];\n", p, p);
        if (s->cent[p] >= 0) nd_sb_printf(sb, "ko%d_[j] = k%d_[j];\nro%d_[j] = rs%d_[j];\n", p, p, p, p);
    }
    nd_sb_puts(sb, "}\n}\n}\n");
    return 0;
}

/* A tall array's chunk of rows lo_..hi_ whose kept dim j0..j1 is narrower
 * than a register tile (argmin(axis=0) of (200000, 2) points): its rows lie
 * back to back in memory (each input's row stride is the width), so m_
 * rows are one flat run of ll_ = m_ * width elements, walked as the lanes
 * of one constant-width vector loop. Lane l folds the column l % width of
 * the rows i = l / width (mod m_), in row order; the lanes of a column are
 * folded together at the end, an arg reduction's ties and NaNs by row
 * index (NumPy's first occurrence). Only folds exact in any grouping
 * (halves_ok's), one reduced dim (the outer one), plain loads: the lanes
 * read p<o>[l] of the run -- past ll_ (masked) the next row's first
 * elements, so a step needs L elements of the chunk's rows (a gather of
 * p<o>[l < ll_ ? l : 0] instead ran 5x slower). The rows left over go
 * one at a time into the lanes of phase 0. A runtime-width loop over
 * accumulators in memory ran 0.3x NumPy at width 2 (f64), this 1.6x, one
 * thread. Arg reductions of 8- and 4-byte types only (flat_rel32). */
static int flat_ok(kctx *c, const rset *s)
{
    nd_kernel *k = c->k;
    if (c->R != 2 || k->red != 1u || s->nmom) return 0;
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        if (s->cent[p] >= 0) return 0;
        if (r->kind == RK_ARG && nd_cg_elsize(r->acc) != 8 && nd_cg_elsize(r->acc) != 4) return 0;
        if (r->kind == RK_ARG || r->kind == RK_FMINMAX) continue;
        if (r->kind != RK_SIMD || (r->uf == ND_UF_MULTIPLY && is_cls_float(r->acc))) return 0;
    }
    for (int o = k->nin; o < k->nin + k->nout; o++) if (side_out(c, o)) return 0;
    for (int o = 0; o < k->nin; o++) {
        const nd_kop *op = &k->ops[o];
        if (op->frame >= 0 || op->inner != 1 || (op->zero & 3u)) return 0;
    }
    for (int i = 0; i < k->ninl; i++) {
        int op = c->g->nodes[k->inl[i]].op;
        if (op == ND_OP_INDEX || op == ND_OP_REDUCE || (k->inlf && k->inlf[i] >= 0)) return 0;
    }
    return c->cache_phase == NULL;
}

/* the runtime test for flat_walk: narrow, every input's rows back to back */
/* The lanes' index type: int32 row offsets from the chunk's first row
 * when every arg reduction is of a 4-byte type (float32/int32 compare
 * masks as wide as the indices: float32 argmin(0) of (200000, 2) ran
 * 0.3x NumPy with int64 index lanes), else int64 rows. */
static int flat_rel32(const rset *s)
{
    int rel = 0;
    for (int p = 0; p < s->n; p++) {
        if (s->r[p].kind != RK_ARG) continue;
        if (nd_cg_elsize(s->r[p].acc) != 4) return 0;
        rel = 1;
    }
    return rel;
}

/* the runtime test for flat_walk: narrow, every input's rows back to back
 * (a chunk's row offsets fit the int32 lanes) */
static void flat_cond(kctx *c, const rset *s, int w)
{
    nd_sb_printf(c->sb, "if (j0 == 0 && j1 < %d", w);
    if (flat_rel32(s)) nd_sb_puts(c->sb, " && hi_ - lo_ < 2147483647");
    for (int o = 0; o < c->k->nin; o++) nd_sb_printf(c->sb, " && I[%d] == j1", stride_idx(c, o, 0));
    nd_sb_puts(c->sb, ") {\n");
}

/* lane value cv<p>_ folded into lane accumulator la<p>_[l] at row `row`
 * (index type IT), lanes past ll_ left as they are (mask ok_) */
static void flat_fold(kctx *c, const redop *r, int p, const char *IT, const char *row, int masked)
{
    nd_sb *sb = c->sb;
    char a[24], b[24], cv[16];
    snprintf(a, sizeof a, "la%d_[l]", p);
    snprintf(b, sizeof b, "lb%d_[l]", p);
    snprintf(cv, sizeof cv, "cv%d_", p);
    if (r->kind == RK_ARG) {
        const char *cmp = r->uf == ND_RED_ARGMAX ? ">" : "<";
        nd_sb_printf(sb, "{\nconst %s ob_ = %s;\nconst %s oi_ = %s;\n", ctype_of(r->acc), a, IT, b);
        nd_sb_printf(sb, "const %s up_ = %s-(%s)((oi_ < 0) | (%s %s ob_)", IT, masked ? "ok_[l] & " : "", IT, cv,
                     cmp);
        if (is_cls_float(r->acc)) nd_sb_printf(sb, " | ((%s != %s) & (ob_ == ob_))", cv, cv);
        nd_sb_printf(sb, ");\n%s = up_ ? %s : ob_;\n%s = (oi_ & ~up_) | ((%s)(%s) & up_);\n}\n", a, cv, b, IT, row);
        return;
    }
    nd_sb_printf(sb, "{\n%s t_ = %s;\n", r->AT, a);
    red_update(sb, r, "t_", cv);
    nd_sb_printf(sb, "%s = %st_;\n}\n", a, masked ? "ok_[l] ? t_ : " : "");
}

static int flat_walk(kctx *c, const rset *s, int w)
{
    nd_sb *sb = c->sb;
    nd_kernel *k = c->k;
    int rel = flat_rel32(s), L = rel ? 16 : w;
    const char *IT = rel ? "int32_t" : "int64_t";
    nd_sb_printf(sb, "const int64_t m_ = %d / j1, ll_ = m_ * j1;\n%s ro_[%d], ok_[%d];\n"
                     "for (int64_t l = 0; l < %d; l++) { ro_[l] = (%s)(l / j1); ok_[l] = -(%s)(l < ll_); }\n",
                 L, IT, L, L, L, IT, IT);
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        if (s->same[p] >= 0) continue;
        if (r->kind == RK_ARG)
            nd_sb_printf(sb, "%s la%d_[%d];\n%s lb%d_[%d];\n"
                         "for (int64_t l = 0; l < %d; l++) { la%d_[l] = 0; lb%d_[l] = -1; }\n",
                         ctype_of(r->acc), p, L, IT, p, L, L, p, p);
        else
            nd_sb_printf(sb, "%s la%d_[%d];\nfor (int64_t l = 0; l < %d; l++) la%d_[l] = %s;\n", r->AT, p, L, L, p,
                         r->init);
    }
    for (int pass = 0; pass < 2; pass++) {
        /* m_ rows a step as one run; then the last rows one at a time
         * into the lanes of phase 0 */
        if (pass == 0) nd_sb_printf(sb, "int64_t i0 = lo_;\nfor (; i0 * j1 + %d <= hi_ * j1; i0 += m_) {\n", L);
        else nd_sb_puts(sb, "for (; i0 < hi_; i0++) {\n");
        for (int o = 0; o < k->nin; o++) pointer(c, o, 1u, "p");
        if (pass == 0) {
            nd_sb_printf(sb, "#pragma omp simd%s\n", c->uses_err ? " reduction(|:nd_err)" : "");
            nd_sb_printf(sb, "for (int64_t l = 0; l < %d; l++) {\nconst int64_t j = l;\n", L);
        } else {
            nd_sb_puts(sb, "for (int64_t l = 0; l < j1; l++) {\nconst int64_t j = l;\n");
        }
        if (body(c, "j", NULL) < 0) return -1;
        for (int p = 0; p < s->n; p++) {
            char cv[16];
            if (s->same[p] >= 0) continue;
            snprintf(cv, sizeof cv, "cv%d_", p);
            acc_value(c, &s->r[p], s->val[p], cv);
            const char *row = rel ? (pass == 0 ? "i0 - lo_ + ro_[l]" : "i0 - lo_") : (pass == 0 ? "i0 + ro_[l]" : "i0");
            flat_fold(c, &s->r[p], p, IT, row, pass == 0);
        }
        nd_sb_puts(sb, "}\n}\n");
    }
    /* each column: its lane of phase 0, then the others in phase order;
     * the lanes' rows as the kernel's (bi: -1 while none) */
    nd_sb_printf(sb, "const int64_t ofs_ = %s;\nfor (int64_t j = 0; j < j1; j++) {\n", rel ? "lo_" : "0");
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        if (s->same[p] >= 0) continue;
        nd_sb_printf(sb, "acc%d_[j] = la%d_[j];\n", p, p);
        if (r->kind == RK_ARG) nd_sb_printf(sb, "bi%d_[j] = lb%d_[j] < 0 ? -1 : (int64_t)lb%d_[j] + ofs_;\n", p, p, p);
        nd_sb_puts(sb, "for (int64_t l = j + j1; l < ll_; l += j1) {\n");
        if (r->kind == RK_ARG) {
            const char *cmp = r->uf == ND_RED_ARGMAX ? ">" : "<";
            nd_sb_printf(sb, "const %s a_ = acc%d_[j], b_ = la%d_[l];\n"
                         "const int64_t ai_ = bi%d_[j], bi_ = lb%d_[l] < 0 ? -1 : (int64_t)lb%d_[l] + ofs_;\n",
                         ctype_of(r->acc), p, p, p, p, p);
            if (is_cls_float(r->acc))
                nd_sb_printf(sb, "if (bi_ >= 0 && (ai_ < 0 || (b_ != b_ ? (a_ == a_ || bi_ < ai_) : "
                                 "(a_ == a_ && (b_ %s a_ || (b_ == a_ && bi_ < ai_))))))", cmp);
            else
                nd_sb_printf(sb, "if (bi_ >= 0 && (ai_ < 0 || b_ %s a_ || (b_ == a_ && bi_ < ai_)))", cmp);
            nd_sb_printf(sb, " { acc%d_[j] = b_; bi%d_[j] = bi_; }\n", p, p);
        } else {
            char a[24], b[24];
            snprintf(a, sizeof a, "acc%d_[j]", p);
            snprintf(b, sizeof b, "la%d_[l]", p);
            red_update(sb, r, a, b);
        }
        nd_sb_puts(sb, "}\n");
    }
    nd_sb_puts(sb, "}\n");
    return 0;
}

/* across_walk in register tiles: the output elements j0..j1 in tiles of a
 * constant width, each walking the reduced dims with its accumulators in
 * vector registers (a runtime width keeps them in memory: a load and a
 * store per element per accumulator), then the rest as one block. Each
 * output element's values are folded in the same order either way. */
static int across_tiled(kctx *c, const rset *s, int rd, uint32_t bound, int chunk_dim)
{
    nd_sb *sb = c->sb;
    int w = 16;
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        int t = nd_cg_part_dtype(r->acc);
        if (r->kind == RK_ARG || t == NPY_DOUBLE || t == NPY_LONGLONG || t == NPY_ULONGLONG || t == NPY_LONG ||
            t == NPY_ULONG)
            w = 8;
    }
    across_accs(c, s, RBLOCK_K, "");
    int fl = chunk_dim >= 0 && flat_ok(c, s);
    if (fl) {
        flat_cond(c, s, w);
        if (flat_walk(c, s, w) < 0) return -1;
        nd_sb_puts(sb, "} else {\n");
    }
    /* A tall array's chunk of rows (split_across: 4096 rows and more):
     * several tiles each walking all the rows read every row once per tile,
     * at the row's stride, from memory once the rows outgrow the caches
     * ((20000, 200).argmin(0): 25 tiles). The chunk then goes in blocks of
     * rows holding ~16k elements of the row, all tiles walking one block
     * while it is in cache; each output element still folds its values in
     * the same order. Not for moments (their 128-row chunks are re-read in
     * cache already; blocks measured slower), nor for a few rows (k-means'
     * argmin over 2 means: per-tile overhead, measured 2.8x slower). */
    int bd = s->nmom ? -1 : chunk_dim;
    if (bd >= 0) {
        c->bdim = bd;
        nd_sb_puts(sb, "const int64_t wb0_ = lo_, wb1_ = hi_;\n");
        nd_sb_printf(sb, "const int64_t rbk_ = j1 - j0 > %d ? (16384 / (j1 - j0) + 127) / 128 * 128 : wb1_ - wb0_;\n"
                         "for (int64_t wlo_ = wb0_; wlo_ < wb1_; wlo_ += rbk_) {\n"
                         "const int64_t whi_ = ND_MIN(wlo_ + rbk_, wb1_);\n", w);
    }
    /* Register tiles only for a block one tile wide (a tall array's few
     * columns): wider blocks walk each row's whole block with the
     * accumulators in memory (L1), the rows read in order -- tiles walking
     * all rows at the row's stride, one line a row, ran below memory speed
     * (x.sum(0) of (1000, 1000) float64 0.75x NumPy -> 1.04x, (200, 20000)
     * 0.60x -> 1.14x, argmax(0) of (1000, 1000) 4.4x -> 8.8x, one thread;
     * (100000, 8).sum(0) stays on its tile: 8.0x against 6.5x). */
    nd_sb_printf(sb, "int64_t jt_ = j0;\nfor (; j1 - j0 <= %d && jt_ + %d <= j1; jt_ += %d) {\n"
                 "const int64_t jlo_ = jt_, jhi_ = jt_ + %d;\n", w, w, w, w);
    if (across_sub(c, s, rd, bound, chunk_dim, w) < 0) return -1;
    nd_sb_puts(sb, "}\n");
    /* A narrow block (a tall array's 2-7 columns: argmin(axis=0) of
     * (200000, 2) points) in tiles of a smaller constant width v, the last
     * tile moved back to end at j1: a column two tiles share is folded
     * twice, alike (same values, same order), and stored alike. In
     * registers, not a runtime-width loop over accumulators in memory
     * (0.4x NumPy at width 2). One block of rows here (rbk_ covers the
     * chunk when j1 - j0 <= w), so no tile goes on from a stored one.
     * Only a tall array's chunks (split_across): below 4096 rows the
     * runtime-width walk costs little, and each width's copy of the walk
     * is compile time (~+40% of such a kernel's). */
    for (int v = w / 2; bd >= 0 && v >= 2; v /= 2) {
        nd_sb_printf(sb, "if (j1 - j0 < %d && j1 - j0 >= %d) {\nfor (; jt_ < j1; jt_ += %d) {\n"
                     "const int64_t jlo_ = ND_MIN(jt_, j1 - %d), jhi_ = jlo_ + %d;\n", 2 * v, v, v, v, v);
        if (across_sub(c, s, rd, bound, chunk_dim, v) < 0) return -1;
        nd_sb_puts(sb, "}\n}\n");
    }
    nd_sb_puts(sb, "if (jt_ < j1) {\nconst int64_t jlo_ = jt_, jhi_ = j1;\n");
    if (across_sub(c, s, rd, bound, chunk_dim, 0) < 0) return -1;
    nd_sb_puts(sb, "}\n");
    if (bd >= 0) nd_sb_puts(sb, "}\n");
    if (fl) nd_sb_puts(sb, "}\n");
    c->bdim = -1;
    return 0;
}

/* One reduced dim -- the outermost kernel dim, as across_multi's serial
 * loop -- split into a fixed number of chunks that run in parallel (a tall
 * array's few columns: x.min(0) of (500000, 8) is one task otherwise);
 * the chunks' partials are combined in chunk order, so results do not
 * depend on the thread count. The vector loop is the last (kept) dim, all
 * of it (at most RBLOCK_K): the caller checks n<R-1> at run time. A
 * moment (x.var(0) with x.mean(0)) is computed per chunk as in
 * across_multi, each chunk shifted by its own first row; the chunks'
 * (count, shift, shifted sum, M2) are merged by Chan's update. */
static int split_across(kctx *c, const rset *s)
{
    nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    int R = c->R, vd = R - 1;
    char a[48], b[48];
    nd_sb_printf(sb, "{\nconst int64_t nv_ = n%d, nch_ = 16;\nint okp_ = 1;\n", vd);
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        const char *AT = r->kind == RK_ARG ? ctype_of(r->acc) : r->AT;
        nd_sb_printf(sb, "%s *const pa%d_ = (%s *)malloc(sizeof(%s) * (size_t)(nch_ * nv_));\nokp_ &= pa%d_ != NULL;\n",
                     AT, p, AT, AT, p);
        nd_sb_printf(sb, "int64_t *const pi%d_ = (int64_t *)malloc(sizeof(int64_t) * (size_t)(nch_ * nv_));\n"
                     "okp_ &= pi%d_ != NULL;\n", p, p);
        if (s->cent[p] >= 0)
            nd_sb_printf(sb, "%s *const pk%d_ = (%s *)malloc(sizeof(%s) * (size_t)(2 * nch_ * nv_));\n"
                         "okp_ &= pk%d_ != NULL;\n", AT, p, AT, AT, p);
    }
    nd_sb_puts(sb, "if (!okp_) nd_err |= ND_ERR_NOMEM;\nelse {\n");
    nd_sb_printf(sb, "/*ND_PAR*/#pragma omp parallel for schedule(static) if(nch_ > 1 && (double)tot_ * %d >= ND_PAR_WORK)%s\n",
                 k->cost, c->uses_err ? " reduction(|:nd_err)" : "");
    nd_sb_puts(sb, "for (int64_t ch_ = 0; ch_ < nch_; ch_++) {\nND_POLL(E);\n");
    nd_sb_puts(sb, "const int64_t lo_ = n0 * ch_ / nch_, hi_ = n0 * (ch_ + 1) / nch_;\n"
                   "const int64_t j0 = 0, j1 = nv_;\n");
    if (s->nmom && (R != 2 || k->red != 1u)) {
        PyErr_SetString(PyExc_SystemError, "numdyn: internal error: a moment over several dims");
        return -1;
    }
    if (across_tiled(c, s, 0, k->red, 0) < 0) return -1;
    nd_sb_puts(sb, "for (int64_t j = 0; j < nv_; j++) {\n");
    for (int p = 0; p < s->n; p++) {
        if (s->cent[p] >= 0)
            nd_sb_printf(sb, "pk%d_[2 * (ch_ * nv_ + j)] = k%d_[j];\npk%d_[2 * (ch_ * nv_ + j) + 1] = rs%d_[j];\n",
                         p, p, p, p);
        nd_sb_printf(sb, "pa%d_[ch_ * nv_ + j] = acc%d_[j];\n", p, s->same[p] >= 0 ? s->same[p] : p);
        if (s->r[p].kind == RK_ARG) nd_sb_printf(sb, "pi%d_[ch_ * nv_ + j] = bi%d_[j];\n", p, p);
        else nd_sb_printf(sb, "pi%d_[ch_ * nv_ + j] = 0;\n", p);
    }
    nd_sb_puts(sb, "}\n}\n");
    /* combine in chunk order, then the epilogue per output element */
    nd_sb_puts(sb, "const int64_t j0 = 0;\n(void)j0;\nfor (int64_t j = 0; j < nv_; j++) {\n");
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        const char *AT = r->kind == RK_ARG ? ctype_of(r->acc) : r->AT;
        if (s->cent[p] >= 0) {
            /* chunks merged in order: N rows so far, shift K, sum RS of
             * x - K, M2; then sum((x - S / div) ** 2) = M2 + N (mean -
             * S / div) ** 2 as in across_multi */
            nd_sb_printf(sb, "%s m2%d_ = 0, kk%d_ = 0, rs%d_ = 0;\nint64_t nn%d_ = 0;\n", AT, p, p, p, p);
            nd_sb_puts(sb, "for (int64_t ch_ = 0; ch_ < nch_; ch_++) {\n"
                           "const int64_t nc_ = n0 * (ch_ + 1) / nch_ - n0 * ch_ / nch_;\n"
                           "if (nc_ == 0) continue;\n");
            nd_sb_printf(sb, "const %s kc_ = pk%d_[2 * (ch_ * nv_ + j)], sc_ = pk%d_[2 * (ch_ * nv_ + j) + 1];\n",
                         AT, p, p);
            nd_sb_printf(sb, "if (nn%d_ == 0) { kk%d_ = kc_; rs%d_ = sc_; m2%d_ = pa%d_[ch_ * nv_ + j]; }\n"
                         "else {\nconst %s na_ = (%s)nn%d_, nb_ = (%s)nc_;\n"
                         "const %s dl_ = (kc_ - kk%d_) + sc_ / nb_ - rs%d_ / na_;\n"
                         "m2%d_ += pa%d_[ch_ * nv_ + j] + dl_ * dl_ * (na_ * nb_ / (na_ + nb_));\n"
                         "rs%d_ += sc_ + nb_ * (kc_ - kk%d_);\n}\n"
                         "nn%d_ += nc_;\n}\n",
                         p, p, p, p, p, AT, AT, p, AT, AT, p, p, p, p, p, p, p);
            nd_sb_printf(sb, "const %s mu%d_ = ca%d_ / (%s)v%d;\n", AT, p, s->cent[p], AT, (int)s->div[p]);
            nd_sb_printf(sb, "const %s dm%d_ = nn%d_ > 0 ? (kk%d_ + rs%d_ / (%s)nn%d_) - mu%d_ : (%s)0;\n",
                         AT, p, p, p, p, AT, p, p, AT);
            nd_sb_printf(sb, "const %s res_%d = m2%d_ + (%s)nn%d_ * dm%d_ * dm%d_;\n", AT, p, p, AT, p, p, p);
            char rx[16];
            snprintf(rx, sizeof rx, "_%d", p);
            red_result(c, r, s->rid[p], rx);
            continue;
        }
        nd_sb_printf(sb, "%s ca%d_ = pa%d_[j];\nint64_t cb%d_ = pi%d_[j];\n", AT, p, p, p, p);
        nd_sb_puts(sb, "for (int64_t ch_ = 1; ch_ < nch_; ch_++) {\n");
        snprintf(a, sizeof a, "pa%d_[ch_ * nv_ + j]", p);
        snprintf(b, sizeof b, "pi%d_[ch_ * nv_ + j]", p);
        char x[16], y[16], rx[16];
        snprintf(x, sizeof x, "ca%d_", p);
        snprintf(y, sizeof y, "cb%d_", p);
        snprintf(rx, sizeof rx, "_%d", p);
        if (r->kind == RK_ARG) nd_sb_printf(sb, "if (%s >= 0) ", b);
        if (r->kind == RK_ARG) arg_update(sb, r, x, y, a, b);
        else red_update(sb, r, x, a);
        nd_sb_puts(sb, "}\n");
        res_line(c, r, p, x, y);
        red_result(c, r, s->rid[p], rx);
    }
    if (epilogue_store(c, 0, "j") < 0) return -1;
    nd_sb_puts(sb, "}\n}\n");
    for (int p = 0; p < s->n; p++) {
        nd_sb_printf(sb, "free(pa%d_);\nfree(pi%d_);\n", p, p);
        if (s->cent[p] >= 0) nd_sb_printf(sb, "free(pk%d_);\n", p);
    }
    nd_sb_puts(sb, "}\n");
    return 0;
}

/* Accumulators per output element, the vector loop across the output dim
 * vd: tasks over td (+ blocks of vd), serial loops over the reduced dims. */
static int across_multi(kctx *c, const rset *s, int vd, uint32_t td)
{
    nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    int R = c->R;

    if (R == 0) nd_sb_puts(sb, "{\nconst int64_t j0 = 0, j1 = 1;\n");
    else task_loop(c, td, vd, RBLOCK_K, k->cost, 1);
    c->vdim = R ? vd : -1;
    if (R && vd != R - 1)
        for (int o = 0; o < k->nin + k->nout; o++)
            nd_sb_printf(sb, "const int64_t vs%d = I[%d];\n", o, stride_idx(c, o, vd));
    int rd = -1;   /* moments: the one reduced dim, walked in chunks */
    if (s->nmom) {
        for (int d = 0; d < R; d++) if (k->red & (1u << d)) rd = d;
        if (rd < 0 || rd == vd || (k->red & ~(1u << rd))) {
            PyErr_SetString(PyExc_SystemError, "numdyn: internal error: a moment over several dims");
            return -1;
        }
    }
    if (R == 0) {
        if (across_walk(c, s, rd, td | k->red, -1, "0", 1) < 0) return -1;
    } else if (across_tiled(c, s, rd, td | k->red, -1) < 0) {
        return -1;
    }
    nd_sb_puts(sb, "for (int64_t j = j0; j < j1; j++) {\n");
    for (int p = 0; p < s->n; p++) {
        const redop *r = &s->r[p];
        char x[16];
        snprintf(x, sizeof x, "_%d", p);
        if (s->cent[p] >= 0) {
            /* sum((x - S / div) ** 2) = M2 + n * (mean - S / div) ** 2, with
             * S the mean's sum as the graph has it (the correction is 0 for
             * NumPy's var, where div is n) */
            nd_sb_printf(sb, "const %s mu%d_ = acc%d_[j - j0] / (%s)v%d;\n", r->AT, p, s->cent[p], r->AT,
                         (int)s->div[p]);
            nd_sb_printf(sb, "const %s dm%d_ = n%d > 0 ? (k%d_[j - j0] + rs%d_[j - j0] / (%s)n%d) - mu%d_ : (%s)0;\n",
                         r->AT, p, rd, p, p, r->AT, rd, p, r->AT);
            nd_sb_printf(sb, "const %s res_%d = acc%d_[j - j0] + (%s)n%d * dm%d_ * dm%d_;\n", r->AT, p, p, r->AT, rd,
                         p, p);
        } else {
            char av[32], bv[32];
            snprintf(av, sizeof av, "acc%d_[j - j0]", s->same[p] >= 0 ? s->same[p] : p);
            snprintf(bv, sizeof bv, "bi%d_[j - j0]", p);
            res_line(c, r, p, av, bv);
        }
        red_result(c, r, s->rid[p], x);
    }
    if (epilogue_store(c, td, R ? "j" : "0") < 0) return -1;
    nd_sb_puts(sb, "}\n}\n");
    c->vdim = R - 1;
    return 0;
}

/* A tall array's chunked column walk (split_across) is most of its
 * kernel's C: for a 2-d column reduction or arg reduction, ~80% of the
 * unit's compile time (x.argmax(axis=0): 1.5 s against 0.3 s without it).
 * It is generated only when the current call takes it, or might: the
 * rows (the reduced dims before the kept one, however the run time merges
 * them) reach TALL_ROWS and the columns fit a block; or when
 * nd_cg_all_variants asks for every variant. Otherwise the kernel reports
 * ND_ERR_VARIANT for such sizes and the runtime builds it with the walk
 * (runtime_native.c run_kernel). The sizes are in codegen_memo.c's key. */
#define TALL_ROWS 4096
_Thread_local int nd_cg_all_variants;

static int tall_now(kctx *c)
{
    nd_kernel *k = c->k;
    if (nd_cg_all_variants || k->dom_v) return 1;
    const nd_node *d = &c->g->nodes[k->dom];
    npy_intp rows = 1;
    for (int a = 0; a + 1 < c->R; a++) rows *= d->shape[k->dims[a]];
    return rows >= TALL_ROWS && d->shape[k->dims[c->R - 1]] <= RBLOCK_K;
}

static int gen_reduce(kctx *c)
{
    nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    int R = c->R;
    rset s;
    if (rset_make(c, &s) < 0) return -1;
    uint32_t all = R ? (uint32_t)((1u << R) - 1) : 0;
    uint32_t kept = all & ~k->red;
    int inner_red = R > 0 && (k->red & (1u << (R - 1)));
    char flat[256], hi[16];
    for (int o = k->nin; o < k->nin + k->nout && (inner_red || !R); o++)
        if (side_out(c, o)) {
            PyErr_SetString(PyExc_SystemError, "numdyn: internal error: a side output of a reduction along rows");
            return -1;
        }
    if (!inner_red && R >= 2 && kept == (1u << (R - 1)) && (k->red & 1u)) {
        /* a tall array's few columns: chunks of the rows in parallel */
        nd_sb_printf(sb, "if (n0 >= %d && n%d <= %d) {\n", TALL_ROWS, R - 1, RBLOCK_K);
        if (tall_now(c)) {
            if (split_across(c, &s) < 0) return -1;
        } else {
            nd_sb_puts(sb, "nd_err |= ND_ERR_VARIANT;\n");
        }
        nd_sb_puts(sb, "} else {\n");
        if (across_multi(c, &s, R - 1, 0) < 0) return -1;
        nd_sb_puts(sb, "}\n");
        return 0;
    }
    if (!inner_red) return across_multi(c, &s, R - 1, R ? (kept & ~(1u << (R - 1))) : 0);
    snprintf(hi, sizeof hi, "n%d", R - 1);
    if (kept) {
        int vk = -1;
        for (int d = 0; d < R; d++) if (kept & (1u << d)) vk = d;
        /* across the kept dim when the reduced one is short; for an arg
         * reduction (a scalar loop along the reduced dim: its index
         * update is sequential) whenever the kept dim has tasks enough */
        int arg = 0;
        for (int p = 0; p < s.n; p++) arg |= s.r[p].kind == RK_ARG;
        if (arg) nd_sb_printf(sb, "if ((n%d <= 16 && n%d >= 64) || n%d >= 1024) {\n", R - 1, vk, vk);
        else nd_sb_printf(sb, "if (n%d <= 16 && n%d >= 64) {\n", R - 1, vk);
        if (across_multi(c, &s, vk, kept & ~(1u << vk)) < 0) return -1;
        nd_sb_puts(sb, "} else {\n");
        task_loop(c, kept, -1, 0, k->cost, 1);
        decl_all(c, &s, "0");
        nd_sb_puts(sb, "{\n");
        int opened = open_serial(c, k->red & ~(1u << (R - 1)), -1);
        for (int o = 0; o < k->nin; o++) pointer(c, o, all & ~(1u << (R - 1)), "p");
        flat_expr(c, flat, sizeof flat, 1);
        if (inner_multi(c, &s, "0", "0", hi, flat) < 0) return -1;
        for (int q = 0; q < opened; q++) nd_sb_puts(sb, "}\n");
        nd_sb_puts(sb, "}\n");
        result_all(c, &s, "0");
        if (epilogue_store(c, kept, "0") < 0) return -1;
        nd_sb_puts(sb, "}\n}\n");
        return 0;
    }
    /* full reductions: chunks of the outermost dim, as many as the size
     * alone gives (results do not depend on the thread count), partials
     * combined in chunk order. One chunk per 4096 elements, at most 64: a
     * chunk's set-up and its partial cost ~200 instructions, and 64 chunks
     * of a 100-element norm were 14,000 a call -- power iteration's norm
     * per step made numdyn's own path 5x slower than NumPy's */
    int cd = 0;
    nd_sb_printf(sb, "const int64_t nch_ = ND_MIN(n%d > 0 ? n%d : 1, tot_ >= 64 * 4096 ? 64 : "
                     "tot_ >= 4096 ? tot_ / 4096 : 1);\n", cd, cd);
    for (int p = 0; p < s.n; p++)
        nd_sb_printf(sb, "%s part%d_[64];\nint64_t pidx%d_[64];\n",
                     s.r[p].kind == RK_ARG ? ctype_of(s.r[p].acc) : s.r[p].AT, p, p);
    nd_sb_printf(sb, "/*ND_PAR*/#pragma omp parallel for schedule(static) if(nch_ > 1 && (double)tot_ * %d >= ND_PAR_WORK)%s\n",
                 k->cost, c->uses_err ? " reduction(|:nd_err)" : "");
    nd_sb_puts(sb, "for (int64_t ch_ = 0; ch_ < nch_; ch_++) {\n");
    nd_sb_printf(sb, "const int64_t lo_ = n%d * ch_ / nch_, hi_ = n%d * (ch_ + 1) / nch_;\n", cd, cd);
    decl_all(c, &s, "0");
    int opened = 0;
    if (R > 1) opened = open_serial(c, all & ~(1u << (R - 1)), cd);
    for (int o = 0; o < k->nin; o++) pointer(c, o, all & ~(1u << (R - 1)), "p");
    flat_expr(c, flat, sizeof flat, 1);
    if (inner_multi(c, &s, "0", R > 1 ? "0" : "lo_", R > 1 ? hi : "hi_", R > 1 ? flat : "0") < 0) return -1;
    for (int q = 0; q < opened; q++) nd_sb_puts(sb, "}\n");
    for (int p = 0; p < s.n; p++) {
        char xp[24];
        px(xp, sizeof xp, "0", p);
        acc_final(c, &s.r[p], xp);
        if (s.r[p].kind == RK_ARG) nd_sb_printf(sb, "part%d_[ch_] = bv%s;\npidx%d_[ch_] = bi%s;\n", p, xp, p, xp);
        else nd_sb_printf(sb, "part%d_[ch_] = res%s;\npidx%d_[ch_] = 0;\n", p, xp, p);
    }
    nd_sb_puts(sb, "}\n{\n");
    decl_all(c, &s, "1");
    nd_sb_puts(sb, "for (int64_t ch_ = 0; ch_ < nch_; ch_++) {\n");
    for (int p = 0; p < s.n; p++) {
        char xp[24], pa[32], pi[32];
        px(xp, sizeof xp, "1", p);
        snprintf(pa, sizeof pa, "part%d_[ch_]", p);
        snprintf(pi, sizeof pi, "pidx%d_[ch_]", p);
        acc_combine(c, &s.r[p], xp, pa, pi);
    }
    nd_sb_puts(sb, "}\n");
    result_all(c, &s, "1");
    if (epilogue_store(c, 0, "0") < 0) return -1;
    nd_sb_puts(sb, "}\n");
    return 0;
}

/* ------------------------------------------------------------ scans */
static int gen_scan(kctx *c)
{
    nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    nd_node *sn = &c->g->nodes[k->root];
    int R = c->R;
    redop r;
    if (redop_of(c->g, k->root, &r) < 0 || r.kind == RK_ARG) {
        PyErr_SetString(PyExc_NotImplementedError, "numdyn: scan without a C form");
        return -1;
    }
    redop seq = r;
    if (seq.kind == RK_FMINMAX) seq.kind = RK_SEQ;
    nd_id val = sn->in[0];
    /* NumPy's accumulate stores (and so rounds to half) after every step */
    const char *rnd = r.acc == NPY_HALF ? "acc_ = nd_rh(acc_);\n" : "";
    const char *rndj = r.acc == NPY_HALF ? "acc_[j - j0] = nd_rh(acc_[j - j0]);\n" : "";
    int outo = k->nin;
    uint32_t all = R ? (uint32_t)((1u << R) - 1) : 0;
    int s = k->scan;
    const char *AT = r.AT;
    if (R == 0 || s < 0 || s == R - 1) {
        /* the axis is innermost (sequential loop per task) or absent */
        uint32_t td = (s < 0) ? all & ~(R ? (1u << (R - 1)) : 0) : all & ~(1u << s);
        int blocked = (s < 0 && R > 0);
        if (R == 0) nd_sb_puts(sb, "{\n");
        else task_loop(c, td, blocked ? R - 1 : -1, 4096, k->cost, 1);
        for (int o = 0; o < k->nin + k->nout; o++) pointer(c, o, td, "p");
        if (s < 0) {
            if (R) nd_sb_puts(sb, "for (int64_t j = j0; j < j1; j++) {\n");
            else nd_sb_puts(sb, "{\n");
            nd_sb_printf(sb, "%s acc_ = %s;\n", AT, r.init);
        } else {
            nd_sb_printf(sb, "%s acc_ = %s;\n", AT, r.init);
            nd_sb_printf(sb, "for (int64_t j = 0; j < n%d; j++) {\n", R - 1);
        }
        const char *jv = R ? "j" : "0";
        if (body(c, jv, NULL) < 0) return -1;
        acc_value(c, &r, val, "cv_");
        /* NumPy's accumulate starts from the first element itself (not
         * identity OP x: -0.0 and complex NaNs survive) */
        if (s < 0) nd_sb_printf(sb, "acc_ = (%s)cv_;\n", AT);
        else {
            nd_sb_printf(sb, "if (j == 0) acc_ = (%s)cv_;\nelse {\n", AT);
            red_update(sb, &seq, "acc_", "cv_");
            nd_sb_puts(sb, "}\n");
        }
        nd_sb_puts(sb, rnd);
        nd_sb_printf(sb, "const %s res_ = acc_;\n", AT);
        red_result(c, &r, k->root, "_");
        store(c, outo, k->root, "p", jv);
        nd_sb_puts(sb, "}\n}\n");
        return 0;
    }
    /* axis not innermost: accumulators across the innermost dim */
    uint32_t td = all & ~(1u << s) & ~(1u << (R - 1));
    task_loop(c, td, R - 1, RBLOCK_K, k->cost, 1);
    nd_sb_printf(sb, "%s acc_[%d];\n", AT, RBLOCK_K);
    nd_sb_printf(sb, "for (int64_t j = 0; j < j1 - j0; j++) acc_[j] = %s;\n", r.init);
    nd_sb_printf(sb, "for (int64_t i%d = 0; i%d < n%d; i%d++) {\n", s, s, s, s);
    for (int o = 0; o < k->nin + k->nout; o++) pointer(c, o, td | (1u << s), "p");
    nd_sb_printf(sb, "#pragma omp simd%s\n", c->uses_err ? " reduction(|:nd_err)" : "");
    nd_sb_puts(sb, "for (int64_t j = j0; j < j1; j++) {\n");
    if (body(c, "j", NULL) < 0) return -1;
    acc_value(c, &r, val, "cv_");
    nd_sb_printf(sb, "if (i%d == 0) acc_[j - j0] = (%s)cv_;\nelse {\n", s, AT);
    red_update(sb, &seq, "acc_[j - j0]", "cv_");
    nd_sb_puts(sb, "}\n");
    nd_sb_puts(sb, rndj);
    nd_sb_printf(sb, "const %s res_ = acc_[j - j0];\n", AT);
    red_result(c, &r, k->root, "_");
    store(c, outo, k->root, "p", "j");
    nd_sb_puts(sb, "}\n}\n}\n");
    return 0;
}


/* ------------------------------------------------------------ row kernels */
/* One task per row (the kept dims); per row one pass over the reduced dims
 * for each reduction, the row values computed between passes, and a last
 * pass writing the domain-shaped outputs. A transcendental value needed by
 * several passes is kept in a per-thread row scratch buffer instead of being
 * computed again. */

/* mark what computing node x needs in `need` (roles: 1 computed element
 * node, 2 operand load, 0 row value / scalar: available) */
static void need_mark(kctx *c, const uint8_t *role, uint8_t *need, nd_id x, int phase)
{
    if (need[x]) return;
    need[x] = 1;
    if (role[x] != 1) return;
    if (c->cache_phase[x] >= 0 && c->cache_phase[x] < phase) return;
    nd_node *n = &c->g->nodes[x];
    if (n->op == ND_OP_VIEW && c->g->nodes[n->in[0]].op != ND_OP_SCALAR) return;
    for (int k = 0; k < n->nin; k++) if (n->in[k] >= 0) need_mark(c, role, need, n->in[k], phase);
}

/* an output of the row kernel stored per element (domain-shaped) */
static int dom_out(kctx *c, int o)
{
    nd_kop *op = &c->k->ops[o];
    nd_node *m = &c->g->nodes[op->buf], *d = &c->g->nodes[c->k->dom];
    return op->acc == ND_A_DIRECT && m->ndim == d->ndim && m->shape[c->k->dims[c->R - 1]] != 1;
}

/* REDUCE nodes a and b of a row kernel give the same value: the same
 * operation over the same input node and dims, accumulated alike, to the
 * same dtype, no initial value, not an arg-reduction */
static int row_same_reduction(nd_graph *g, nd_id a, nd_id b)
{
    const nd_node *x = &g->nodes[a], *y = &g->nodes[b];
    return x->op == ND_OP_REDUCE && y->op == ND_OP_REDUCE && x->sub == y->sub && x->in[0] == y->in[0] &&
           x->axes == y->axes && x->dtype == y->dtype && x->in_dtype[0] == y->in_dtype[0] &&
           x->sub != ND_RED_ARGMAX && x->sub != ND_RED_ARGMIN &&
           !(x->nin > 1 && x->in[1] >= 0) && !(y->nin > 1 && y->in[1] >= 0);
}

static int gen_row(kctx *c)
{
    nd_kernel *k = c->k;
    nd_graph *g = c->g;
    nd_sb *sb = c->sb;
    int R = c->R, np = k->nred, rc = -1;
    size_t N = (size_t)g->n;
    uint32_t all = (uint32_t)((1u << R) - 1), kept = all & ~k->red;
    uint32_t sred = k->red & ~(1u << (R - 1));
    int ndom = 0;
    for (int o = k->nin; o < k->nin + k->nout; o++) ndom += dom_out(c, o);
    uint8_t *role = PyMem_Calloc(N, 1);
    uint8_t *need = PyMem_Calloc(N * (size_t)(np + 1), 1);
    int8_t *cph = PyMem_Malloc(N);
    uint8_t *done = PyMem_Calloc(N, 1);
    if (!role || !need || !cph || !done) { PyErr_NoMemory(); goto out; }
    memset(cph, -1, N);
    c->cache_phase = cph;
    /* a reduction folding the very values an earlier one folds, the same
     * way (x.mean(-1) and the mean inside x.var(-1): two graph nodes),
     * takes that one's result instead of walking the row again */
    int dup[ND_MAXRED];
    if (np > ND_MAXRED) {
        PyErr_SetString(PyExc_SystemError, "numdyn: internal error: too many reductions");
        goto out;
    }
    for (int p = 0; p < np; p++) {
        dup[p] = -1;
        for (int q = 0; q < p && dup[p] < 0; q++)
            if (dup[q] < 0 && row_same_reduction(g, k->reds[p], k->reds[q])) dup[p] = q;
    }
    for (int i = 0; i < k->ninl; i++) role[k->inl[i]] = 1;
    for (int o = 0; o < k->nin; o++) role[k->ops[o].via] = 2;
    for (int i = 0; i < k->nscal; i++) role[k->scal[i]] = 0;
    /* what each pass needs, first without scratch; then keep a
     * transcendental needed by two passes */
    for (int pass = 0; pass < 2; pass++) {
        memset(need, 0, N * (size_t)(np + 1));
        for (int p = 0; p < np; p++)
            if (dup[p] < 0) need_mark(c, role, need + N * (size_t)p, g->nodes[k->reds[p]].in[0], p);
        for (int o = k->nin; o < k->nin + k->nout; o++) {
            nd_kop *op = &k->ops[o];
            if (dom_out(c, o) && role[op->buf] == 1)
                need_mark(c, role, need + N * (size_t)np, op->buf, np);
        }
        if (pass) break;
        for (int i = 0; i < k->ninl; i++) {
            nd_id x = k->inl[i];
            nd_node *n = &g->nodes[x];
            if (n->op != ND_OP_UFUNC || nd_cg_cost(g, x) < 20) continue;
            int first = -1, cnt = 0;
            for (int p = 0; p <= np; p++)
                if (need[N * (size_t)p + (size_t)x]) { if (first < 0) first = p; cnt++; }
            if (cnt >= 2 && first < np) cph[x] = (int8_t)first;
        }
    }
    /* sizes */
    nd_sb_puts(sb, "int64_t rowlen_ = 1;\n");
    for (int d = 0; d < R; d++) if (k->red & (1u << d)) nd_sb_printf(sb, "rowlen_ *= n%d;\n", d);
    nd_sb_puts(sb, "int64_t ntask_ = 1;\n");
    for (int d = 0; d < R; d++) if (kept & (1u << d)) nd_sb_printf(sb, "ntask_ *= n%d;\n", d);
    nd_sb_printf(sb, "#pragma omp parallel if(ntask_ > 1 && ND_TEAM(E) && (double)tot_ * %d >= ND_PAR_WORK) reduction(|:nd_err)\n{\n",
                 k->cost);
    /* the thread's flags from before this region are not the kernel's
     * (split_parallel) */
    nd_sb_puts(sb, "int ok_ = 1;\n(void)nd_fpe_take();\n");
    for (nd_id x = 0; x < (nd_id)N; x++)
        if (cph[x] >= 0)
            /* cache-line aligned: malloc's 16-byte alignment splits every
             * other 64-byte vector access of the row across two lines */
            nd_sb_printf(sb, "%s *scr%d = (%s *)aligned_alloc(64, (sizeof(%s) * (size_t)(rowlen_ > 0 ? rowlen_ : 1) + 63) & ~(size_t)63);\n"
                         "if (!scr%d) ok_ = 0;\n", ctype_of(g->nodes[x].dtype), (int)x,
                         ctype_of(g->nodes[x].dtype), ctype_of(g->nodes[x].dtype), (int)x);
    nd_sb_puts(sb, "if (!ok_) nd_err |= ND_ERR_NOMEM;\n");
    nd_sb_puts(sb, "#pragma omp for schedule(static)\nfor (int64_t t_ = 0; t_ < ntask_; t_++) {\n");
    nd_sb_puts(sb, "if (!ok_) continue;\nND_POLL(E);\nint64_t r_ = t_;\n(void)r_;\n");
    bind_dims(c, kept);
    char flat[256], rowidx[300];
    flat_expr(c, flat, sizeof flat, 1);
    snprintf(rowidx, sizeof rowidx, "rb_ + j");
    c->rowidx = rowidx;
    char hi[16];
    snprintf(hi, sizeof hi, "n%d", R - 1);
    for (int p = 0; p <= np; p++) {
        c->phase = p;
        uint8_t *nd_need = need + N * (size_t)p;
        if (p < np) {
            nd_id rid = k->reds[p];
            nd_node *rn = &g->nodes[rid];
            if (dup[p] >= 0) {
                nd_sb_printf(sb, "const %s v%d = v%d;\n", ctype_of(rn->dtype), (int)rid, (int)k->reds[dup[p]]);
            } else {
                redop r;
                char x[16];
                snprintf(x, sizeof x, "%d", p);
                if (redop_of(g, rid, &r) < 0) {
                    PyErr_SetString(PyExc_NotImplementedError, "numdyn: reduction without a C form");
                    goto out;
                }
                acc_decl(c, &r, x);
                nd_sb_puts(sb, "{\n");
                int opened = open_serial(c, sred, -1);
                for (int o = 0; o < k->nin; o++)
                    if (nd_need[k->ops[o].via]) pointer(c, o, kept | sred, "p");
                nd_sb_printf(sb, "const int64_t rb_ = %s;\n(void)rb_;\n", flat);
                if (inner_reduce(c, &r, rn->in[0], nd_need, x, "0", hi, "0") < 0) goto out;
                for (int q = 0; q < opened; q++) nd_sb_puts(sb, "}\n");
                nd_sb_puts(sb, "}\n");
                acc_final(c, &r, x);
                red_result(c, &r, rid, x);
            }
            done[rid] = 1;
            /* row values now computable, in order */
            for (int i = 0; i < k->nrow; i++) {
                nd_id v = k->rowv[i];
                if (done[v]) continue;
                nd_node *vn = &g->nodes[v];
                int ready = 1;
                for (int q = 0; q < vn->nin; q++) {
                    nd_id in = vn->in[q];
                    if (in < 0) continue;
                    int member = 0;
                    for (int t = 0; t < k->nrow; t++) if (k->rowv[t] == in) member = 1;
                    for (int t = 0; t < np; t++) if (k->reds[t] == in) member = 1;
                    if (member && !done[in]) ready = 0;
                }
                if (!ready) continue;
                if (row_value(c, v) < 0) goto out;
                done[v] = 1;
            }
            /* row outputs that are ready */
            for (int o = k->nin; o < k->nin + k->nout; o++) {
                nd_kop *op = &k->ops[o];
                if (!done[op->buf] || dom_out(c, o)) continue;
                if (done[op->buf] == 2) continue;
                store_at(c, o, kept, op->buf, "0");
                done[op->buf] = 2;
            }
        } else if (ndom) {
            nd_sb_puts(sb, "{\n");
            int opened = open_serial(c, sred, -1);
            for (int o = 0; o < k->nin + k->nout; o++) {
                nd_kop *op = &k->ops[o];
                if (o < k->nin ? nd_need[op->via] != 0 : dom_out(c, o))
                    pointer(c, o, kept | sred, "p");
            }
            nd_sb_printf(sb, "const int64_t rb_ = %s;\n(void)rb_;\n", flat);
            nd_sb_printf(sb, "#pragma omp simd%s\n", c->uses_err ? " reduction(|:nd_err)" : "");
            nd_sb_printf(sb, "for (int64_t j = 0; j < %s; j++) {\n", hi);
            if (body(c, "j", nd_need) < 0) goto out;
            for (int o = k->nin; o < k->nin + k->nout; o++) {
                nd_kop *op = &k->ops[o];
                if (dom_out(c, o)) store(c, o, op->buf, "p", "j");
            }
            nd_sb_puts(sb, "}\n");
            for (int q = 0; q < opened; q++) nd_sb_puts(sb, "}\n");
            nd_sb_puts(sb, "}\n");
        }
    }
    nd_sb_puts(sb, "}\nND_FPE_TAKE;\n");
    for (nd_id x = 0; x < (nd_id)N; x++) if (cph[x] >= 0) nd_sb_printf(sb, "free(scr%d);\n", (int)x);
    nd_sb_puts(sb, "}\n");
    rc = 0;
out:
    c->cache_phase = NULL;
    PyMem_Free(role);
    PyMem_Free(need);
    PyMem_Free(cph);
    PyMem_Free(done);
    return rc;
}

/* ------------------------------------------------------------ entry */
/* The end of the brace block opening at *br, or NULL when unbalanced. */
static const char *block_end(const char *br)
{
    int depth = 1;
    const char *e = br + 1;
    while (*e && depth) { if (*e == '{') depth++; else if (*e == '}') depth--; e++; }
    return depth ? NULL : e;
}

/* LOOP without its streaming-store branches: `if (nd_stream_) {A} else {B}`
 * becomes `{B}`. The serial copy of a loop runs only for work below
 * ND_PAR_WORK or a single task (one 4096-element block): outputs far below
 * ND_STREAM_BYTES, where A never runs. Both branches store the same values
 * anyway; dropping A there is one loop body fewer for cc1 to optimize
 * (a kernel unit compiles ~20% faster) and the same generated behaviour. */
static int put_without_stream(nd_sb *out, const char *loop, const char *end)
{
    static const char mark[] = "if (nd_stream_) {";
    const char *p = loop;
    for (;;) {
        const char *m = strstr(p, mark);
        if (!m || m >= end) break;
        const char *a = block_end(m + sizeof mark - 2);
        if (!a || strncmp(a, " else {", 7) != 0) return -1;
        const char *b = block_end(a + 6);
        if (!b || b > end) return -1;
        nd_sb_printf(out, "%.*s%.*s", (int)(m - p), p, (int)(b - (a + 6)), a + 6);
        p = b;
    }
    nd_sb_printf(out, "%.*s", (int)(end - p), p);
    return 0;
}

/* The task body once, as a function both paths call, where the compiler
 * has GNU C's nested functions (ND_NESTED_TASKS, nd_kernel.h): the split
 * below otherwise gives cc1 the loop twice, and the second copy is 22-43%
 * of a kernel unit's compile time (BENCHMARKS.md, "CI time: the parallel
 * loop's second copy"). The body keeps its text: its variables are the
 * kernel's through the static chain, its error bits its own nd_err
 * (returned: the parallel loop's reduction combines them), a `continue`
 * of the task loop (ND_POLL) leaves the do-while. noinline: inlined into
 * both paths it would be two copies again. The rest of the kernel only
 * reads what tasks share, and writes none of it but through pointers (a
 * parallel loop could not either). Emits the #if/#else; the caller emits
 * the split and the #endif. */
static int put_task_function(nd_sb *out, int id, const char *cond, const char *cend, const char *prag,
                             const char *ifp, const char *q, const char *eol, const char *loop,
                             const char *br, const char *e, int has_red)
{
    /* the task index: for (int64_t NAME = ... */
    static const char decl[] = "for (int64_t ";
    if (strncmp(loop, decl, sizeof decl - 1)) return -1;
    const char *nm = loop + sizeof decl - 1, *ne = nm;
    while (ne < br && (*ne == '_' || (*ne >= 'a' && *ne <= 'z') || (*ne >= '0' && *ne <= '9'))) ne++;
    if (ne == nm || ne >= br) return -1;
    int nl = (int)(ne - nm);
    nd_sb_printf(out, "#if ND_NESTED_TASKS\n__attribute__((noinline)) int ndt%d_(int64_t %.*s) {\n"
                      "int nd_err = 0;\ndo {%.*s} while (0);\nreturn nd_err;\n}\n",
                 id, nl, nm, (int)(e - 1 - (br + 1)), br + 1);
    nd_sb_printf(out, "if (ND_TEAM(E) && %.*s) {\n%.*s%.*s%s\n", (int)(cend - cond), cond,
                 (int)(ifp - prag), prag, (int)(eol - q), q, has_red ? "" : " reduction(|:nd_err)");
    nd_sb_printf(out, "%.*s\n(void)nd_fpe_take();\nnd_err |= ndt%d_(%.*s);\nND_FPE_TAKE;\n}\n} else {\n",
                 (int)(br + 1 - loop), loop, id, nl, nm);
    nd_sb_printf(out, "%.*s\nnd_err |= ndt%d_(%.*s);\n}\n}\n#else\n", (int)(br + 1 - loop), loop, id, nl, nm);
    return 0;
}

/* `#pragma omp parallel for if(small)` still enters libgomp (a team of
 * one, a futex wake) on every call: each marked parallel loop becomes
 *   if (ND_TEAM(E) && COND) { #pragma omp parallel for ... LOOP } else { LOOP }
 * so small kernels never call into the OpenMP runtime, nor kernels the
 * runtime runs alone (kernels/nd_kernel.h ND_RUN_ALONE). */
static int split_parallel(nd_sb *in, nd_sb *out)
{
    static const char mark[] = "/*ND_PAR*/";
    const char *p = in->p;
    int ntask = 0;
    for (;;) {
        const char *m = strstr(p, mark);
        if (!m) { nd_sb_puts(out, p); break; }
        nd_sb_printf(out, "%.*s", (int)(m - p), p);
        const char *prag = m + sizeof mark - 1, *eol = strchr(prag, '\n');
        const char *ifp = strstr(prag, " if(");
        if (!eol || !ifp || ifp > eol) goto bad;
        const char *q = ifp + 4;
        int depth = 1;
        while (q < eol && depth) { if (*q == '(') depth++; else if (*q == ')') depth--; q++; }
        if (depth) goto bad;
        const char *cond = ifp + 4, *cend = q - 1;
        const char *loop = eol + 1, *br = strchr(loop, '{');
        if (!br) goto bad;
        const char *e = block_end(br);
        if (!e) goto bad;
        /* the parallel copy: each task ends by taking its thread's
         * floating-point status flags into nd_err (ND_FPE_TAKE), and starts
         * by dropping the flags the thread holds from before: a worker of
         * the process's one OpenMP pool also runs other libraries' regions
         * (torch's), whose flags would otherwise read as this kernel's and
         * send every call to NumPy (errstate_reruns) */
        int has_red = strstr(q, "reduction(|:nd_err)") && strstr(q, "reduction(|:nd_err)") < eol;
        if (put_task_function(out, ntask++, cond, cend, prag, ifp, q, eol, loop, br, e, has_red) < 0) goto bad;
        nd_sb_printf(out, "if (ND_TEAM(E) && %.*s) {\n%.*s%.*s%s\n", (int)(cend - cond), cond,
                     (int)(ifp - prag), prag, (int)(eol - q), q,
                     has_red ? "" : " reduction(|:nd_err)");
        nd_sb_printf(out, "%.*s\n(void)nd_fpe_take();\n%.*sND_FPE_TAKE;\n}\n} else {\n", (int)(br + 1 - loop), loop,
                     (int)(e - 1 - (br + 1)), br + 1);
        if (put_without_stream(out, loop, e) < 0) goto bad;
        nd_sb_puts(out, "\n}\n#endif\n");
        p = e;
    }
    return nd_sb_check(out);
bad:
    PyErr_SetString(PyExc_RuntimeError, "numdyn: internal error: malformed parallel loop");
    return -1;
}

/* Rename the value variables v<node id> / scr<node id> by order of first
 * appearance: the same computation at other node ids (the next iteration of
 * a loop, another graph) then has the same text, hash and kernel. */
static int canonical_names(nd_sb *in, nd_sb *out)
{
    int32_t map_from[4096], map_to[4096];
    int nmap = 0, next = 0;
    const char *p = in->p;
    while (*p) {
        int vlen = 0;
        if (p[0] == 'v' && p[1] >= '0' && p[1] <= '9') vlen = 1;
        else if (p[0] == 's' && p[1] == 'c' && p[2] == 'r' && p[3] >= '0' && p[3] <= '9') vlen = 3;
        int ident_before = p > in->p && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
                                          (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9'));
        if (!vlen || ident_before) {
            char ch[2] = {*p, 0};
            nd_sb_puts(out, ch);
            p++;
            continue;
        }
        const char *q = p + vlen;
        long id = 0;
        while (*q >= '0' && *q <= '9') { id = id * 10 + (*q - '0'); q++; }
        if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_') {
            /* part of a longer identifier */
            nd_sb_printf(out, "%.*s", (int)(q - p), p);
            p = q;
            continue;
        }
        int to = -1;
        for (int i = 0; i < nmap; i++) if (map_from[i] == (int32_t)id) { to = map_to[i]; break; }
        if (to < 0) {
            if (nmap == 4096) {
                PyErr_SetString(PyExc_RuntimeError, "numdyn: kernel with too many values");
                return -1;
            }
            map_from[nmap] = (int32_t)id;
            map_to[nmap++] = to = next++;
        }
        nd_sb_printf(out, "%.*s%d", vlen, p, to);
        p = q;
    }
    return nd_sb_check(out);
}

int nd_cg_kernel(nd_graph *g, nd_kernel *k, nd_sb *out)
{
    kctx c = {g, k, NULL, k->rank, 0, NULL, 0, "0", k->rank - 1, -1, {0}, -1};
    nd_sb body_sb;
    int rc = -1;
    /* the error-flag reduction is decided by whether any node uses it */
    if (nd_cg_check_stores()) c.uses_err = 1;
    for (int i = 0; i < k->ninl; i++) {
        nd_sb tmp;
        nd_sb_init(&tmp);
        nd_node *n = &g->nodes[k->inl[i]];
        if (n->op == ND_OP_UFUNC) {
            int e = 0;
            if (nd_cg_node(g, k->inl[i], &tmp, &e) == 0 && e) c.uses_err = 1;
            else if (PyErr_Occurred()) PyErr_Clear();
        }
        nd_sb_free(&tmp);
    }
    nd_sb_init(&body_sb);
    c.sb = &body_sb;
    /* structure alone decides (the memo names kernels by it): a kernel
     * that may flag "invalid" for some scalar values compares quietly */
    nd_cg_quiet_cmp = nd_cg_kernel_may_flag_invalid(g, k, NULL);
    k->cost = kernel_cost(&c);
    if (prologue(&c) < 0) { nd_sb_free(&body_sb); nd_cg_quiet_cmp = 1; return -1; }
    switch (k->kind) {
    case ND_K_POINTWISE: case ND_K_REGION: rc = gen_pointwise(&c); break;
    case ND_K_REDUCE: rc = gen_reduce(&c); break;
    case ND_K_SCAN: rc = gen_scan(&c); break;
    case ND_K_ROW: rc = gen_row(&c); break;
    default:
        PyErr_SetString(PyExc_NotImplementedError, "numdyn: kernel kind without codegen");
        rc = -1;
    }
    if (rc == 0) {
        epilogue(&c);
        rc = nd_sb_check(&body_sb);
    }
    nd_sb canon, split;
    nd_sb_init(&canon);
    nd_sb_init(&split);
    if (rc == 0) rc = split_parallel(&body_sb, &split);
    if (rc == 0) rc = canonical_names(&split, &canon);
    nd_sb_free(&split);
    if (rc == 0) {
        nd_sb_free(&body_sb);
        body_sb = canon;
        nd_sb_init(&canon);
        k->hash = nd_fnv64(body_sb.p, body_sb.n, ND_FNV_INIT);
        nd_sb_printf(out, "void ndk_%016llx(char *const *P, const int64_t *I, const nd_sv *S, int *E)\n{\n",
                     (unsigned long long)k->hash);
        nd_sb_puts(out, body_sb.p);
        nd_sb_puts(out, "}\n");
        rc = nd_sb_check(out);
    }
    nd_sb_free(&canon);
    nd_sb_free(&body_sb);
    nd_cg_quiet_cmp = 1;
    return rc;
}

int nd_cg_reduce_supported(nd_graph *g, nd_id id)
{
    redop r;
    return redop_of(g, id, &r) == 0;
}

int nd_cg_scan_supported(nd_graph *g, nd_id id)
{
    redop r;
    return redop_of(g, id, &r) == 0 && r.kind != RK_ARG;
}
