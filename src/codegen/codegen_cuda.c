/* codegen_cuda.c -- the CUDA form of a scheduled kernel (codegen_cuda.h).
 *
 * Pointwise kernels: one grid-stride loop over the domain's elements, each
 * thread unravelling its flat index into the kernel dims (int64 indexing;
 * broadcast operands skip their zero-stride dims). Reductions: one block
 * per output element (grid-stride over them), its threads striding over the
 * reduced elements, then warp shuffles and one shared-memory step; argmin
 * and argmax keep the first extreme (and the first NaN), max/min propagate
 * NaN as NumPy. Scans: one thread per line, sequential along the axis.
 * Row kernels (softmax: reductions fused with their row's consumers): one
 * block per row, a pass of its threads per reduction, then the outputs.
 * Short reductions inlined into a consumer (frames) are unrolled per
 * element, as on the CPU.
 *
 * The per-element text is codegen_expr.c's. Two constructs it writes are
 * GNU C that NVRTC lacks and are rewritten here: `__real__ x` / `__imag__ x`
 * become nd_re(x) / nd_im(x), and a statement expression ({ s; e; })
 * becomes an immediately called lambda.
 */
#include "core/npy.h"
#include "codegen.h"
#include "codegen_cuda.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cctx {
    nd_graph *g;
    const nd_kernel *k;
    nd_sb *sb;
    int R;
    int fr;               /* the frame being emitted (a short reduction's body), -1 */
    int fe[ND_MAXFS];     /* ... at this index along its short dims */
    /* row kernels holding their row in registers (gen_row): 2, the
     * passes read the operands in kc<o>_[j_] (loaded before the first
     * pass by vector loads); 0, every pass loads; 3, a pointwise kernel's
     * vector lanes (gen_pointwise): operands read from L<o>_.v[l_],
     * outputs written to S<o>_.v[l_] */
    int cache;
    int lanes;            /* stores go to S<o>_.v[l_] (a row kernel's vector stores) */
    int vd;               /* cache 3: the dim the vector lanes run along */
} cctx;

static int sidx(const cctx *c, int o, int d) { return c->R + o * c->R + d; }

/* "B<o>[i0 * I[..] + ...]": operand o at the element bound by i<d> */
static void elem(char *buf, size_t n, const cctx *c, int o)
{
    const nd_kop *op = &c->k->ops[o];
    size_t at = (size_t)snprintf(buf, n, "B%d[0", o);
    for (int d = 0; d < c->R && at < n; d++)
        if (!(op->zero & (1u << d)))
            at += (size_t)snprintf(buf + at, n - at, " + i%d * I[%d]", d, sidx(c, o, d));
    if (op->frame >= 0 && op->frame == c->fr) {
        /* a frame operand at the frame's index along its short dims */
        int nops = c->k->nin + c->k->nout;
        for (int t = 0, ns = nd_frame_short(c->g, c->k->fr[op->frame], NULL, NULL); t < ns && at < n; t++) {
            if (!c->fe[t] || op->fs[t] == 0) continue;
            if (op->fs[t] == ND_FS_RUNTIME)
                at += (size_t)snprintf(buf + at, n - at, " + %d * I[%d]", c->fe[t],
                                       nd_frame_sidx(c->R, nops, o, t));
            else
                at += (size_t)snprintf(buf + at, n - at, " + %lld",
                                       (long long)c->fe[t] * (long long)op->fs[t]);
        }
    }
    if (at < n) snprintf(buf + at, n - at, "]");
}

static void index_value(cctx *c, nd_id id)
{
    const nd_node *n = &c->g->nodes[id];
    int kd, lit;
    nd_index_axis(c->g, c->k, c->R, c->fr, c->fe, id, &kd, &lit);
    char ix[32];
    if (lit >= 0) snprintf(ix, sizeof ix, "(int64_t)%d", lit);
    else if (kd < 0) snprintf(ix, sizeof ix, "(int64_t)0");
    else snprintf(ix, sizeof ix, "i%d", kd);
    nd_sb_printf(c->sb, "const %s v%d = ", nd_cg_ctype(n->dtype), (int)id);
    nd_cg_cast(c->sb, ix, NPY_LONGLONG, n->dtype);
    nd_sb_puts(c->sb, ";\n");
}

static int emit_short(cctx *c, nd_id rid);

/* the dtype of input operand o's value once loaded (a real/imag view: the
 * part's) */
static int cache_type(const cctx *c, int o)
{
    const nd_kop *op = &c->k->ops[o];
    const nd_node *vn = &c->g->nodes[op->via];
    return op->acc == ND_A_VIEW && (vn->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG)) ? vn->dtype : op->dtype;
}

/* the element's loads and per-element nodes (i<d> bound) in `which` (NULL:
 * all), of the current frame c->fr (-1: per element) */
static int body(cctx *c, const uint8_t *which)
{
    const nd_kernel *k = c->k;
    char e[512];
    int uses = 0;
    for (int o = 0; o < k->nin; o++) {
        const nd_kop *op = &k->ops[o];
        const nd_node *vn = &c->g->nodes[op->via];
        if (op->frame != c->fr) continue;
        int cached = c->cache && op->frame < 0;
        if (which && !which[op->via]) continue;
        if (cached && c->cache == 2) {
            nd_sb_printf(c->sb, "const %s v%d = kc%d_[j_];\n", nd_cg_ctype(cache_type(c, o)), (int)op->via, o);
            continue;
        }
        if (c->cache == 3 && op->frame < 0 && !(op->zero & (1u << c->vd))) snprintf(e, sizeof e, "L%d_.v[l_]", o);
        else elem(e, sizeof e, c, o);
        if (op->acc == ND_A_VIEW && (vn->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG))) {
            nd_sb_printf(c->sb, "const %s v%d = __%s__ (%s);\n", nd_cg_ctype(vn->dtype), (int)op->via,
                         (vn->flags & ND_F_VIEW_REAL) ? "real" : "imag", e);
        } else {
            nd_sb_printf(c->sb, "const %s v%d = ", nd_cg_ctype(op->dtype), (int)op->via);
            nd_cg_load(c->sb, e, op->dtype);
            nd_sb_puts(c->sb, ";\n");
        }
    }
    for (int i = 0; i < k->ninl; i++) {
        nd_id id = k->inl[i];
        const nd_node *n = &c->g->nodes[id];
        if ((k->inlf && k->inlf[i] != c->fr) || (!k->inlf && c->fr >= 0)) continue;
        if (which && !which[id]) continue;
        if (n->op == ND_OP_SCALAR || n->op == ND_OP_INPUT || n->op == ND_OP_VIEW) continue;
        if (n->op == ND_OP_INDEX) { index_value(c, id); continue; }
        if (n->op == ND_OP_REDUCE) {
            if (emit_short(c, id) < 0) return -1;
            continue;
        }
        if (nd_cg_node(c->g, id, c->sb, &uses) < 0) return -1;
    }
    return 0;
}

/* i<d> for the dims in mask from flat index `flat` (C order) */
static void bind_dims(cctx *c, uint32_t mask, const char *flat)
{
    if (c->R < 32 ? mask & ((1u << c->R) - 1) : mask) nd_sb_printf(c->sb, "int64_t r_ = %s;\n", flat);
    nd_cg_bind_dims(c->sb, c->R, mask);
}

static void store(cctx *c, int o, nd_id val)
{
    char e[512], v[32];
    int lane = c->cache == 3 || c->lanes;
    if (lane) snprintf(e, sizeof e, "S%d_.v[l_]", o);
    else elem(e, sizeof e, c, o);
    snprintf(v, sizeof v, "v%d", (int)val);
    int t = c->k->ops[o].dtype;
    if (nd_cg_check_stores() && !lane)   /* a lane: checked with its vector */
        nd_sb_printf(c->sb, "if (ND_OOB(&(%s), lo%d, hi%d)) nd_err |= ND_ERR_OOB; else\n", e, o, o);
    nd_sb t2;
    nd_sb_init(&t2);
    nd_cg_cast(&t2, v, c->g->nodes[val].dtype, t);
    if (t2.oom) c->sb->oom = 1;
    else nd_cg_store(c->sb, e, t2.p, t);
    nd_sb_free(&t2);
}

static int prologue(cctx *c)
{
    const nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    int uses = 0;
    for (int d = 0; d < c->R; d++) nd_sb_printf(sb, "const int64_t n%d = I[%d];\n", d, d);
    for (int o = 0; o < k->nin + k->nout; o++) {
        const char *st = nd_cg_stype(k->ops[o].dtype), *cq = o < k->nin ? "const " : "";
        nd_sb_printf(sb, "%s%s *const B%d = (%s%s *)P[%d];\n", cq, st, o, cq, st, o);
        if (o >= k->nin && nd_cg_check_stores()) {
            int q = k->nin + k->nout + 2 * (o - k->nin);
            nd_sb_printf(sb, "const char *const lo%d = P[%d], *const hi%d = P[%d];\n", o, q, o, q + 1);
        }
    }
    for (int j = 0; j < k->nscal; j++) {
        int t = c->g->nodes[k->scal[j]].dtype;
        nd_sb_printf(sb, "const %s v%d = ", nd_cg_ctype(t), (int)k->scal[j]);
        nd_cg_param(sb, t, j);
        nd_sb_puts(sb, ";\n");
    }
    /* views of scalars: one value a kernel */
    for (int i = 0; i < k->ninl; i++) {
        nd_id id = k->inl[i];
        const nd_node *n = &c->g->nodes[id];
        int dup = 0;
        if (n->op != ND_OP_VIEW || c->g->nodes[n->in[0]].op != ND_OP_SCALAR) continue;
        for (int q = 0; q < i; q++) if (k->inl[q] == id) dup = 1;
        if (!dup && nd_cg_node(c->g, id, sb, &uses) < 0) return -1;
    }
    nd_sb_puts(sb, "int nd_err = 0;\n");
    nd_sb_puts(sb, "const int64_t tid_ = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
                   "const int64_t nthr_ = (int64_t)gridDim.x * blockDim.x;\n"
                   "(void)tid_; (void)nthr_;\n");
    return 0;
}

/* --------------------------------------------------------- pointwise */
static int is_float(int t);

/* "isfinite(x)" of a value of dtype t into sb ("1" for non-float types) */
static void finite_of(nd_sb *sb, int t, const char *x)
{
    if (nd_cg_is_complex(t)) nd_sb_printf(sb, "(isfinite(nd_re(%s)) && isfinite(nd_im(%s)))", x, x);
    else if (is_float(t)) nd_sb_printf(sb, "isfinite(%s)", x);
    else nd_sb_puts(sb, "1");
}

/* A GPU has no floating-point status flags. NumPy warns (or raises) when
 * an operation divides by zero, overflows or is invalid; in a pointwise
 * chain such an operation makes a non-finite value from finite ones. So
 * an element whose operands are all finite and whose float result is not
 * reports the three conditions as possible, and the runtime lets NumPy run
 * the graph again when its error state acts on any (runtime_native.c):
 * NumPy then warns exactly as it would, and the results are NumPy's. Data
 * that holds NaN or inf already costs nothing. (Not seen: a non-finite
 * intermediate whose result is finite again, conditions inside
 * reductions.) */
static int float_outputs(const cctx *c)
{
    const nd_kernel *k = c->k;
    int any = 0;
    for (int o = k->nin; o < k->nin + k->nout; o++) {
        int t = c->g->nodes[k->oval[o - k->nin]].dtype;
        any |= is_float(t) || nd_cg_is_complex(t);
    }
    return any;
}

/* ") && !(every output finite)) nd_err |= ...": the test's second half */
static void flag_if_outputs_nonfinite(cctx *c)
{
    const nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    nd_sb_puts(sb, ") && !(1");
    for (int o = k->nin; o < k->nin + k->nout; o++) {
        nd_id v = k->oval[o - k->nin];
        char x[24];
        snprintf(x, sizeof x, "v%d", (int)v);
        nd_sb_puts(sb, " && ");
        finite_of(sb, c->g->nodes[v].dtype, x);
    }
    nd_sb_puts(sb, ")) nd_err |= ND_ERR_FPE_DIV | ND_ERR_FPE_OVER | ND_ERR_FPE_INVALID;\n");
}

static void flag_nonfinite(cctx *c)
{
    const nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    if (!float_outputs(c)) return;
    nd_sb_puts(sb, "if ((1");
    for (int o = 0; o < k->nin; o++) {
        const nd_kop *op = &k->ops[o];
        if (op->frame >= 0) continue;
        const nd_node *vn = &c->g->nodes[op->via];
        int t = op->acc == ND_A_VIEW && (vn->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG)) ? vn->dtype : op->dtype;
        char x[24];
        snprintf(x, sizeof x, "v%d", (int)op->via);
        if (!is_float(t) && !nd_cg_is_complex(t)) continue;
        nd_sb_puts(sb, " && ");
        finite_of(sb, t, x);
    }
    nd_sb_puts(sb, " && nd_sfin_");
    flag_if_outputs_nonfinite(c);
}

/* whether every float scalar parameter is finite, once a kernel
 * (flag_nonfinite's per-element test reads it): Black-Scholes' 56 scalars
 * were tested again for every element, a third of its instructions */
static void scalars_finite(cctx *c)
{
    const nd_kernel *k = c->k;
    nd_sb_puts(c->sb, "const bool nd_sfin_ = (1");
    for (int j = 0; j < k->nscal; j++) {
        int t = c->g->nodes[k->scal[j]].dtype;
        char x[24];
        snprintf(x, sizeof x, "v%d", (int)k->scal[j]);
        if (!is_float(t) && !nd_cg_is_complex(t)) continue;
        nd_sb_puts(c->sb, " && ");
        finite_of(c->sb, t, x);
    }
    nd_sb_puts(c->sb, ");\n(void)nd_sfin_;\n");
}

/* A one-dimensional pointwise kernel whose operands all run with element
 * stride 1 from addresses aligned to 4 elements (checked when it runs)
 * moves 4 elements a thread with one vector load or store per operand
 * (128 bits for float32: a quarter of the memory instructions); a tail,
 * and every other case, takes the element loop. Not for complex values
 * (64-byte vectors), frames or real/imag views. */
static int vec_ok(const cctx *c)
{
    const nd_kernel *k = c->k;
    if (c->R != 1 || k->nfr) return 0;
    for (int o = 0; o < k->nin + k->nout; o++) {
        const nd_kop *op = &k->ops[o];
        if (nd_cg_is_complex(op->dtype) || nd_cg_elsize(op->dtype) > 8 || op->frame >= 0) return 0;
        if (o < k->nin && op->acc == ND_A_VIEW &&
            (c->g->nodes[op->via].flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG)))
            return 0;
    }
    return 1;
}

static int gen_vector(cctx *c)
{
    const nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    int nops = k->nin + k->nout;
    nd_sb_puts(sb, "if (1");
    for (int o = 0; o < nops; o++) {
        if (o < k->nin && (k->ops[o].zero & 1u)) continue;   /* a broadcast: one element */
        nd_sb_printf(sb, " && I[%d] == 1 && (unsigned long long)B%d %% (4 * sizeof(*B%d)) == 0",
                     sidx(c, o, 0), o, o);
    }
    nd_sb_puts(sb, ") {\nconst int64_t nv_ = n0 / 4;\n"
                   "for (int64_t t_ = tid_; t_ < nv_; t_ += nthr_) {\n");
    for (int o = 0; o < nops; o++) {
        const char *st = nd_cg_stype(k->ops[o].dtype);
        if (o < k->nin && (k->ops[o].zero & 1u)) continue;
        if (o < k->nin) nd_sb_printf(sb, "const nd_v4<%s> L%d_ = *(const nd_v4<%s> *)(B%d + 4 * t_);\n", st, o, st, o);
        else nd_sb_printf(sb, "nd_v4<%s> S%d_;\n", st, o);
    }
    nd_sb_puts(sb, "#pragma unroll\nfor (int l_ = 0; l_ < 4; l_++) {\n"
                   "const int64_t i0 = 4 * t_ + l_;\n(void)i0;\n");
    c->cache = 3;
    int rc = body(c, NULL);
    if (rc == 0) {
        flag_nonfinite(c);
        for (int o = k->nin; o < nops; o++) store(c, o, k->oval[o - k->nin]);
    }
    c->cache = 0;
    if (rc < 0) return -1;
    nd_sb_puts(sb, "}\n");
    for (int o = k->nin; o < nops; o++) {
        if (nd_cg_check_stores())
            nd_sb_printf(sb, "if (ND_OOB(B%d + 4 * t_, lo%d, hi%d) || ND_OOB(B%d + 4 * t_ + 3, lo%d, hi%d)) "
                         "nd_err |= ND_ERR_OOB; else\n", o, o, o, o, o, o);
        nd_sb_printf(sb, "*(nd_v4<%s> *)(B%d + 4 * t_) = S%d_;\n", nd_cg_stype(k->ops[o].dtype), o, o);
    }
    nd_sb_puts(sb, "}\n");
    /* the tail: the last n0 % 4 elements */
    nd_sb_puts(sb, "for (int64_t t_ = 4 * nv_ + tid_; t_ < n0; t_ += nthr_) {\nconst int64_t i0 = t_;\n");
    if (body(c, NULL) < 0) return -1;
    flag_nonfinite(c);
    for (int o = k->nin; o < nops; o++) store(c, o, k->oval[o - k->nin]);
    nd_sb_puts(sb, "}\n} else\n");
    return 0;
}

static int gen_pointwise(cctx *c)
{
    const nd_kernel *k = c->k;
    uint32_t all = c->R ? (uint32_t)((1u << c->R) - 1) : 0;
    int vec = vec_ok(c);
    scalars_finite(c);
    if (vec) {
        nd_sb_puts(c->sb, "{\n");
        if (gen_vector(c) < 0) return -1;
    }
    nd_sb_puts(c->sb, "{\nint64_t tot_ = 1;\n");
    for (int d = 0; d < c->R; d++) nd_sb_printf(c->sb, "tot_ *= n%d;\n", d);
    nd_sb_puts(c->sb, "for (int64_t t_ = tid_; t_ < tot_; t_ += nthr_) {\n");
    bind_dims(c, all, "t_");
    if (body(c, NULL) < 0) return -1;
    flag_nonfinite(c);
    for (int o = k->nin; o < k->nin + k->nout; o++) store(c, o, k->oval[o - k->nin]);
    nd_sb_puts(c->sb, "}\n}\n");
    if (vec) nd_sb_puts(c->sb, "}\n");
    return 0;
}

/* -------------------------------------------------------- reductions */
typedef struct cred {
    nd_id rid, val;   /* val: the folded node; -1 for a moment */
    int uf, acc, adt; /* ufunc (or ND_RED_ARG*), accumulation dtype, accumulator's */
    int arg, cent;    /* arg reduction; moment: index of its mean's sum */
    nd_id div;
    char init[64];
} cred;

static int is_float(int t) { return t == NPY_HALF || t == NPY_FLOAT || t == NPY_DOUBLE; }

/* an integer dtype's least (max = 0) or largest value, as C text */
static void int_limit(char *buf, size_t n, int t, int max)
{
    static const struct { int t; const char *lo, *hi; } L[] = {
        {NPY_BOOL, "0", "1"}, {NPY_BYTE, "INT8_MIN", "INT8_MAX"}, {NPY_UBYTE, "0", "UINT8_MAX"},
        {NPY_SHORT, "INT16_MIN", "INT16_MAX"}, {NPY_USHORT, "0", "UINT16_MAX"},
        {NPY_INT, "INT32_MIN", "INT32_MAX"}, {NPY_UINT, "0", "UINT32_MAX"},
        {NPY_LONGLONG, "INT64_MIN", "INT64_MAX"}, {NPY_ULONGLONG, "0", "UINT64_MAX"},
    };
    int w = nd_cg_elsize(t);
    if (t == NPY_LONG) t = w == 8 ? NPY_LONGLONG : NPY_INT;
    if (t == NPY_ULONG) t = w == 8 ? NPY_ULONGLONG : NPY_UINT;
    for (size_t i = 0; i < sizeof L / sizeof L[0]; i++)
        if (L[i].t == t) { snprintf(buf, n, "(%s)%s", nd_cg_ctype(t), max ? L[i].hi : L[i].lo); return; }
    snprintf(buf, n, "0");
}

/* the reduction rid (a moment when cent >= 0: its mean's sum is the
 * cent-th reduction of the kernel, `div` the SCALAR dividing it) */
static int cred_of(cctx *c, nd_id rid, int cent, nd_id div, int p, cred *r)
{
    memset(r, 0, sizeof *r);
    r->rid = rid;
    const nd_node *n = &c->g->nodes[r->rid];
    r->uf = n->sub;
    r->acc = r->adt = n->in_dtype[0] >= 0 ? n->in_dtype[0] : n->dtype;
    r->cent = cent;
    r->div = div;
    r->val = r->cent >= 0 ? -1 : n->in[0];
    if (!nd_cg_dtype_ok(r->acc)) goto bad;
    int cx = nd_cg_is_complex(r->acc), fl = is_float(r->acc);
    const char *T = nd_cg_ctype(r->acc);
    if (r->cent >= 0 && (!fl || r->cent >= p)) goto bad;
    switch (r->uf) {
    case ND_UF_ADD: case ND_UF_MULTIPLY: {
        int one = r->uf == ND_UF_MULTIPLY;
        if (cx) snprintf(r->init, sizeof r->init, "nd_cmk_%s(%d, 0)", nd_cg_sfx(r->acc), one);
        else if (r->acc == NPY_BOOL) snprintf(r->init, sizeof r->init, "(nd_bool)%d", one);
        else {
            if (!fl) r->adt = nd_cg_unsigned_twin(r->acc);  /* wrapping, as NumPy */
            snprintf(r->init, sizeof r->init, "(%s)%d", nd_cg_ctype(r->adt), one);
        }
        return 0;
    }
    case ND_UF_MAXIMUM: case ND_UF_MINIMUM: case ND_UF_FMAX: case ND_UF_FMIN: {
        int mx = r->uf == ND_UF_MAXIMUM || r->uf == ND_UF_FMAX;
        int fnan = r->uf == ND_UF_FMAX || r->uf == ND_UF_FMIN;
        if (cx) goto bad;
        /* NaN-propagating max/min start from -inf/+inf (a NaN wins every
         * combine); fmax/fmin from NaN (which every value replaces) */
        if (fl) snprintf(r->init, sizeof r->init, fnan ? "(%s)NAN" : mx ? "-(%s)INFINITY" : "(%s)INFINITY", T);
        else int_limit(r->init, sizeof r->init, r->acc, !mx);
        return 0;
    }
    case ND_UF_LOGICAL_AND: case ND_UF_LOGICAL_OR:
        if (r->acc != NPY_BOOL) goto bad;
        snprintf(r->init, sizeof r->init, "(nd_bool)%d", r->uf == ND_UF_LOGICAL_AND);
        return 0;
    case ND_UF_BITWISE_AND: case ND_UF_BITWISE_OR: case ND_UF_BITWISE_XOR:
        if (fl || cx) goto bad;
        snprintf(r->init, sizeof r->init, r->uf == ND_UF_BITWISE_AND ? "(%s)~(%s)0" : "(%s)0", T, T);
        return 0;
    case ND_RED_ARGMAX: case ND_RED_ARGMIN:
        if (cx) goto bad;
        r->arg = 1;
        snprintf(r->init, sizeof r->init, "(%s)0", T);
        return 0;
    default:
        goto bad;
    }
bad:
    PyErr_Format(PyExc_NotImplementedError, "numdyn.cuda: reduction %d over %s has no CUDA form",
                 r->uf, nd_cg_dtype_ok(r->acc) ? nd_cg_ctype(r->acc) : "this dtype");
    return -1;
}

static int cred_make(cctx *c, int p, cred *r)
{
    const nd_kernel *k = c->k;
    return cred_of(c, k->nred ? k->reds[p] : k->root, k->rcent ? k->rcent[p] : -1,
                   k->rdiv ? k->rdiv[p] : -1, p, r);
}

/* "a = a OP b;" on the accumulator's type */
static void fold(cctx *c, const cred *r, const char *a, const char *b)
{
    int e = 0;
    int upd = r->uf == ND_UF_LOGICAL_AND ? ND_UF_BITWISE_AND
            : r->uf == ND_UF_LOGICAL_OR ? ND_UF_BITWISE_OR : r->uf;
    nd_sb_printf(c->sb, "%s = ", a);
    if ((upd == ND_UF_MAXIMUM || upd == ND_UF_MINIMUM) && r->adt == NPY_FLOAT)
        nd_sb_printf(c->sb, "nd_r%s_f(%s, %s)", upd == ND_UF_MAXIMUM ? "max" : "min", a, b);  /* nd_cuda.h */
    else if (upd == ND_UF_MULTIPLY && nd_cg_is_complex(r->adt))
        nd_sb_printf(c->sb, "nd_cmul_%s(%s, %s)", nd_cg_sfx(r->adt), a, b);  /* NumPy's reduce: no FMA */
    else if (nd_cg_ufunc(c->sb, upd, 0, r->adt, a, b, &e) < 0)
        c->sb->oom = 1;
    nd_sb_puts(c->sb, ";\n");
}

/* argmax/argmin: (bv, bi) takes (v, i) when it is better, or equal and
 * earlier; a NaN is the extreme, the first NaN wins; bi < 0: empty */
static void arg_fold(cctx *c, const cred *r, const char *bv, const char *bi, const char *v, const char *i)
{
    const char *cmp = r->uf == ND_RED_ARGMAX ? ">" : "<";
    if (is_float(r->acc))
        nd_sb_printf(c->sb,
                     "if (%s >= 0 && (%s < 0 || (%s != %s && (%s == %s || %s < %s)) || (%s == %s && (%s %s %s || "
                     "(%s == %s && %s < %s))))) { %s = %s; %s = %s; }\n",
                     i, bi, v, v, bv, bv, i, bi, bv, bv, v, cmp, bv, v, bv, i, bi, bv, v, bi, i);
    else
        nd_sb_printf(c->sb, "if (%s >= 0 && (%s < 0 || %s %s %s || (%s == %s && %s < %s))) { %s = %s; %s = %s; }\n",
                     i, bi, v, cmp, bv, v, bv, i, bi, bv, v, bi, i);
}

/* the shuffle of one value of C type T (narrow integers travel as int) */
static void shfl(cctx *c, int t, const char *dst, const char *src, const char *off)
{
    const char *T = nd_cg_ctype(t);
    if (nd_cg_is_complex(t))
        nd_sb_printf(c->sb, "%s %s = nd_cmk_%s(__shfl_down_sync(0xffffffffu, %s.re, %s), "
                     "__shfl_down_sync(0xffffffffu, %s.im, %s));\n", T, dst, nd_cg_sfx(t), src, off, src, off);
    else if (nd_cg_elsize(t) < 4 && !is_float(t))
        nd_sb_printf(c->sb, "%s %s = (%s)__shfl_down_sync(0xffffffffu, (int)%s, %s);\n", T, dst, T, src, off);
    else
        nd_sb_printf(c->sb, "%s %s = __shfl_down_sync(0xffffffffu, %s, %s);\n", T, dst, src, off);
}

/* fold another thread's (o_, oi_) into accumulator a (and index bi) */
static void fold_other(cctx *c, const cred *r, const char *a, const char *bi)
{
    if (r->arg) arg_fold(c, r, a, bi, "o_", "oi_");
    else fold(c, r, a, "o_");
}

/* combine every thread's accumulator of r (acc<p>, and bi<p> for an arg
 * reduction) into all threads' acc<p>: warp shuffles, each warp's result
 * into shared memory, one barrier, then every thread folds the warps'
 * results itself, in warp order (the same order, so the same value, in
 * all threads). One barrier instead of three and no second shuffle tree
 * in warp 0: the latency a row kernel's block waits between its passes
 * (softmax: two combines a row). The shared slots are written again only
 * after a later barrier: the callers' row loops end with one, and a
 * split reduction's partial and final combines are apart by one. */
static void block_combine(cctx *c, const cred *r, int p)
{
    nd_sb *sb = c->sb;
    const char *T = nd_cg_ctype(r->arg ? r->acc : r->adt);
    int t = r->arg ? r->acc : r->adt;
    char a[16], bi[16];
    snprintf(a, sizeof a, "acc%d", p);
    snprintf(bi, sizeof bi, "bi%d", p);
    nd_sb_printf(sb, "{\n__shared__ %s sh%d_[ND_THREADS / ND_WARP];\n", T, p);
    if (r->arg) nd_sb_printf(sb, "__shared__ int64_t shi%d_[ND_THREADS / ND_WARP];\n", p);
    nd_sb_puts(sb, "for (int off_ = ND_WARP / 2; off_ > 0; off_ >>= 1) {\n");
    shfl(c, t, "o_", a, "off_");
    if (r->arg) nd_sb_printf(sb, "const int64_t oi_ = __shfl_down_sync(0xffffffffu, %s, off_);\n", bi);
    fold_other(c, r, a, bi);
    nd_sb_puts(sb, "}\n");
    nd_sb_printf(sb, "if (lane_ == 0) { sh%d_[warp_] = %s;", p, a);
    if (r->arg) nd_sb_printf(sb, " shi%d_[warp_] = %s;", p, bi);
    nd_sb_puts(sb, " }\n__syncthreads();\n");
    nd_sb_printf(sb, "%s = sh%d_[0];\n", a, p);
    if (r->arg) nd_sb_printf(sb, "%s = shi%d_[0];\n", bi, p);
    nd_sb_puts(sb, "for (int w_ = 1; w_ < (int)(blockDim.x / ND_WARP); w_++) {\n");
    nd_sb_printf(sb, "const %s o_ = sh%d_[w_];\n", T, p);
    if (r->arg) nd_sb_printf(sb, "const int64_t oi_ = shi%d_[w_];\n", p);
    fold_other(c, r, a, bi);
    nd_sb_puts(sb, "}\n}\n");
}

/* v<rid> from accumulator `acc` (and index `bi`), the initial value
 * folded in; x names its temporaries */
static void red_result(cctx *c, const cred *r, const char *x, const char *acc, const char *bi)
{
    const nd_node *rn = &c->g->nodes[r->rid];
    nd_sb *sb = c->sb;
    char res[40];
    snprintf(res, sizeof res, "res%s", x);
    if (r->arg) {
        nd_sb_printf(sb, "const int64_t %s = %s < 0 ? 0 : %s;\n", res, bi, bi);
        nd_sb_printf(sb, "const %s v%d = ", nd_cg_ctype(rn->dtype), (int)r->rid);
        nd_cg_cast(sb, res, NPY_LONGLONG, rn->dtype);
        nd_sb_puts(sb, ";\n");
        return;
    }
    /* a float16 sum or product is rounded to half once, at the end */
    if (r->acc == NPY_HALF) nd_sb_printf(sb, "%s %s = nd_rh(%s);\n", nd_cg_ctype(r->adt), res, acc);
    else nd_sb_printf(sb, "%s %s = %s;\n", nd_cg_ctype(r->adt), res, acc);
    if (rn->nin > 1 && rn->in[1] >= 0) {
        char iv[32], ini[40];
        snprintf(iv, sizeof iv, "v%d", (int)rn->in[1]);
        snprintf(ini, sizeof ini, "ini%s", x);
        nd_sb_printf(sb, "%s %s = (%s)", nd_cg_ctype(r->adt), ini, nd_cg_ctype(r->adt));
        nd_cg_cast(sb, iv, c->g->nodes[rn->in[1]].dtype, r->acc);
        nd_sb_puts(sb, ";\n");
        fold(c, r, ini, res);
        snprintf(res, sizeof res, "%s", ini);
    }
    char t[64];
    snprintf(t, sizeof t, "(%s)%s", nd_cg_ctype(r->acc), res);
    nd_sb_printf(sb, "const %s v%d = ", nd_cg_ctype(rn->dtype), (int)r->rid);
    nd_cg_cast(sb, t, r->acc, rn->dtype);
    nd_sb_puts(sb, ";\n");
}

static void red_result_p(cctx *c, const cred *r, int p)
{
    char x[16], a[16], bi[16];
    snprintf(x, sizeof x, "%d", p);
    snprintf(a, sizeof a, "acc%d", p);
    snprintf(bi, sizeof bi, "bi%d", p);
    red_result(c, r, x, a, bi);
}

/* A short reduction inlined in its consumer (a frame, passes/schedule.h):
 * its input at each index along its short dims in turn, unrolled, folded
 * left to right from the first element as NumPy's reduce without an
 * identity; argmax/argmin keep the first extreme and the first NaN */
static int emit_short(cctx *c, nd_id rid)
{
    const nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    int f = -1;
    for (int q = 0; q < k->nfr; q++) if (k->fr[q] == rid) f = q;
    cred r;
    if (f < 0 || c->fr >= 0) {
        PyErr_SetString(PyExc_SystemError, "numdyn.cuda: internal error: short reduction without a frame");
        return -1;
    }
    if (cred_of(c, rid, -1, -1, 0, &r) < 0) return -1;
    int ext[ND_MAXFS], ns = nd_frame_short(c->g, rid, NULL, ext), tot = 1;
    for (int t = 0; t < ns; t++) tot *= ext[t];
    const char *AT = nd_cg_ctype(r.arg ? r.acc : r.adt);
    char sa[16], si[16], x[16], v[32];
    snprintf(sa, sizeof sa, "sa%d_", f);
    snprintf(si, sizeof si, "si%d_", f);
    snprintf(x, sizeof x, "S%d", f);
    snprintf(v, sizeof v, "v%d", (int)r.val);
    nd_sb_printf(sb, "%s %s;\n", AT, sa);
    if (r.arg) nd_sb_printf(sb, "int64_t %s = 0;\n", si);
    c->fr = f;
    for (int e = 0; e < tot; e++) {
        for (int t = ns - 1, rem = e; t >= 0; t--) { c->fe[t] = rem % ext[t]; rem /= ext[t]; }
        nd_sb_puts(sb, "{\n");
        if (body(c, NULL) < 0) { c->fr = -1; return -1; }
        nd_sb_printf(sb, "const %s cv_ = (%s)", AT, AT);
        nd_cg_cast(sb, v, c->g->nodes[r.val].dtype, r.acc);
        nd_sb_puts(sb, ";\n");
        if (e == 0) nd_sb_printf(sb, "%s = cv_;\n", sa);
        else if (r.arg) nd_cg_arg_step(sb, r.uf == ND_RED_ARGMAX, is_float(r.acc), sa, si, e);
        else fold(c, &r, sa, "cv_");
        nd_sb_puts(sb, "}\n");
    }
    c->fr = -1;
    for (int t = 0; t < ND_MAXFS; t++) c->fe[t] = 0;
    red_result(c, &r, x, sa, si);
    return 0;
}

/* fold the current element's value of r into this thread's accumulator */
static void elem_fold(cctx *c, const cred *r, int p, const char *flat)
{
    char v[32], cv[16], a[16], bi[16];
    snprintf(v, sizeof v, "v%d", (int)r->val);
    snprintf(cv, sizeof cv, "cv%d_", p);
    snprintf(a, sizeof a, "acc%d", p);
    snprintf(bi, sizeof bi, "bi%d", p);
    nd_sb_printf(c->sb, "const %s %s = (%s)", nd_cg_ctype(r->arg ? r->acc : r->adt), cv,
                 nd_cg_ctype(r->arg ? r->acc : r->adt));
    nd_cg_cast(c->sb, v, c->g->nodes[r->val].dtype, r->acc);
    nd_sb_puts(c->sb, ";\n");
    if (r->arg) arg_fold(c, r, a, bi, cv, flat);
    else fold(c, r, a, cv);
}

/* bind the kept dims from row_ (reduced dims: 0 when zero_red) */
static void bind_row(cctx *c, uint32_t kept, int zero_red)
{
    int first = -1;
    for (int d = 0; d < c->R && first < 0; d++) if ((kept >> d) & 1) first = d;
    if (first >= 0) nd_sb_puts(c->sb, "int64_t q_ = row_;\n");
    for (int d = c->R - 1; d >= 0; d--) {
        if (d == first) nd_sb_printf(c->sb, "const int64_t i%d = q_;\n", d);
        else if ((kept >> d) & 1) nd_sb_printf(c->sb, "const int64_t i%d = q_ %% n%d;\nq_ /= n%d;\n", d, d, d);
        else if (zero_red) nd_sb_printf(c->sb, "const int64_t i%d = 0;\n", d);
        else continue;
        nd_sb_printf(c->sb, "(void)i%d;\n", d);
    }
}

/* the element loop of a reduction pass: e_ from `from` by `step` over the
 * row's reduced elements; pass 0 folds every reduction but the moments,
 * pass 1 the moments ((x - mean)^2, x its mean's input) */
static int red_pass(cctx *c, const cred *rs, int n, int pass, uint32_t kept, const char *from, const char *step)
{
    nd_sb *sb = c->sb;
    nd_sb_printf(sb, "#pragma unroll ND_RED_UNROLL\nfor (int64_t e_ = %s; e_ < nred_; e_ += %s) {\n{\n", from, step);
    bind_row(c, kept, 0);
    bind_dims(c, c->k->red, "e_");
    if (body(c, NULL) < 0) return -1;
    for (int p = 0; p < n; p++) {
        if ((rs[p].cent >= 0) != (pass == 1)) continue;
        if (pass == 0) { elem_fold(c, &rs[p], p, "e_"); continue; }
        const cred *m = &rs[rs[p].cent];
        char x[32];
        snprintf(x, sizeof x, "v%d", (int)m->val);
        nd_sb_printf(sb, "{\nconst %s d_ = (%s)", nd_cg_ctype(rs[p].adt), nd_cg_ctype(rs[p].adt));
        nd_cg_cast(sb, x, c->g->nodes[m->val].dtype, rs[p].acc);
        nd_sb_printf(sb, " - mean%d_;\nacc%d += d_ * d_;\n}\n", p, p);
    }
    nd_sb_puts(sb, "}\n}\n");
    return 0;
}

static void red_inits(cctx *c, const cred *rs, int n)
{
    for (int p = 0; p < n; p++) {
        nd_sb_printf(c->sb, "%s acc%d = %s;\n", nd_cg_ctype(rs[p].arg ? rs[p].acc : rs[p].adt), p, rs[p].init);
        if (rs[p].arg) nd_sb_printf(c->sb, "int64_t bi%d = -1;\n", p);
    }
}

/* the moments' means, from pass 0's sums */
static void red_means(cctx *c, const cred *rs, int n)
{
    nd_sb *sb = c->sb;
    for (int p = 0; p < n; p++) {
        if (rs[p].cent < 0) continue;
        char dv[32];
        snprintf(dv, sizeof dv, "v%d", (int)rs[p].div);
        nd_sb_printf(sb, "const %s mean%d_ = (%s)acc%d / (%s)", nd_cg_ctype(rs[p].adt), p,
                     nd_cg_ctype(rs[p].adt), rs[p].cent, nd_cg_ctype(rs[p].adt));
        if (rs[p].div >= 0) nd_cg_cast(sb, dv, c->g->nodes[rs[p].div].dtype, rs[p].acc);
        else nd_sb_puts(sb, "1");
        nd_sb_puts(sb, ";\n");
    }
}

/* flag_nonfinite for a reduction's epilogue: finite reduction results and
 * scalar parameters giving a non-finite output (a mean of an empty slice
 * divides 0 by a count of 0: NumPy's "invalid value encountered in
 * divide"). Row values read from other operands are not tested: a NaN
 * there costs a rerun by NumPy, not a missed warning. */
static void flag_epilogue(cctx *c, const cred *rs, int n)
{
    const nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    if (!float_outputs(c)) return;
    char x[24];
    nd_sb_puts(sb, "if ((1");
    for (int p = 0; p < n; p++) {
        int t = c->g->nodes[rs[p].rid].dtype;
        if (!is_float(t) && !nd_cg_is_complex(t)) continue;
        snprintf(x, sizeof x, "v%d", (int)rs[p].rid);
        nd_sb_puts(sb, " && ");
        finite_of(sb, t, x);
    }
    for (int j = 0; j < k->nscal; j++) {
        int t = c->g->nodes[k->scal[j]].dtype;
        if (!is_float(t) && !nd_cg_is_complex(t)) continue;
        snprintf(x, sizeof x, "v%d", (int)k->scal[j]);
        nd_sb_puts(sb, " && ");
        finite_of(sb, t, x);
    }
    flag_if_outputs_nonfinite(c);
}

/* the row's results from acc<p>, its row values, its stores */
static int red_outputs(cctx *c, const cred *rs, int n, uint32_t kept)
{
    const nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    bind_row(c, kept, 1);
    for (int p = 0; p < n; p++) red_result_p(c, &rs[p], p);
    int uses = 0;
    for (int i = 0; i < k->nrow; i++) {
        nd_id v = k->rowv[i];
        const nd_node *vn = &c->g->nodes[v];
        if (vn->op == ND_OP_VIEW)
            nd_sb_printf(sb, "const %s v%d = v%d;\n", nd_cg_ctype(vn->dtype), (int)v, (int)vn->in[0]);
        else if (nd_cg_node(c->g, v, sb, &uses) < 0) return -1;
    }
    flag_epilogue(c, rs, n);
    for (int o = k->nin; o < k->nin + k->nout; o++) store(c, o, k->oval[o - k->nin]);
    return 0;
}

int nd_cuda_split_slots(nd_graph *g, const nd_kernel *k)
{
    if (k->kind != ND_K_REDUCE || !k->red) return 0;
    int n = k->nred ? k->nred : 1;
    if (n > ND_MAXRED) return 0;
    for (int p = 0; p < n; p++) {
        nd_id rid = k->nred ? k->reds[p] : k->root;
        int sub = g->nodes[rid].sub;
        if ((k->rcent && k->rcent[p] >= 0) || sub == ND_RED_ARGMAX || sub == ND_RED_ARGMIN) return 0;
    }
    return n;
}

/* a volatile read of partial q_ of reduction p (another block wrote it:
 * past the L1 cache) into pv_ */
static void partial_load(cctx *c, const cred *r, int p)
{
    int t = r->adt;
    const char *T = nd_cg_ctype(t);
    if (nd_cg_is_complex(t)) {
        const char *RT = nd_cg_ctype(nd_cg_part_dtype(t));
        nd_sb_printf(c->sb, "const volatile %s *pp_ = (const volatile %s *)(scr_ + (size_t)%d * ND_SPLIT_SLOT * "
                     "gridDim.x) + 2 * (row_ * bpr_ + q_);\nconst %s pv_ = nd_cmk_%s(pp_[0], pp_[1]);\n",
                     RT, RT, p, T, nd_cg_sfx(t));
    } else {
        nd_sb_printf(c->sb, "const %s pv_ = ((const volatile %s *)(scr_ + (size_t)%d * ND_SPLIT_SLOT * "
                     "gridDim.x))[row_ * bpr_ + q_];\n", T, T, p);
    }
}

static void row_vec_test(cctx *c, int o, int d);

/* the one reduced dim a block-per-row reduction can read by 4-element
 * vectors along (every input not broadcast along it a real dtype of at
 * most 8 bytes, no frames, no real/imag views; no moments: their second
 * pass reads element by element), or -1 */
static int red_vec_dim(const cctx *c, int nmom)
{
    const nd_kernel *k = c->k;
    int rd = -1;
    if (nmom || k->nfr) return -1;
    for (int d = 0; d < c->R; d++)
        if ((k->red >> d) & 1) {
            if (rd >= 0) return -1;
            rd = d;
        }
    if (rd < 0) return -1;
    int any = 0;
    for (int o = 0; o < k->nin; o++) {
        const nd_kop *op = &k->ops[o];
        if (op->zero & (1u << rd)) continue;
        if (nd_cg_is_complex(op->dtype) || nd_cg_elsize(op->dtype) > 8 || op->frame >= 0 ||
            (op->acc == ND_A_VIEW && (c->g->nodes[op->via].flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG))))
            return -1;
        any = 1;
    }
    return any ? rd : -1;
}

/* the element loop of red_pass (pass 0) by vectors: thread t loads
 * elements 4 (t + w blockDim.x) .. + 3 of each input with one load (the
 * runtime test of gen_reduce holds: stride 1 along rd, aligned) and folds
 * them in order. GPU run of session 27's probe: sums of (16384, 4096)
 * float32 rows element by element 118-164 us, torch 68 */
static int red_vec_pass(cctx *c, const cred *rs, int n, uint32_t kept, int rd)
{
    const nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    char e[512];
    nd_sb_puts(sb, "#pragma unroll 2\nfor (int64_t e4_ = 4 * (int64_t)threadIdx.x; e4_ < nred_; "
                   "e4_ += 4 * (int64_t)blockDim.x) {\n{\n");
    bind_row(c, kept, 0);
    bind_dims(c, k->red, "e4_");
    for (int o = 0; o < k->nin; o++) {
        if (k->ops[o].zero & (1u << rd)) continue;
        const char *st = nd_cg_stype(k->ops[o].dtype);
        elem(e, sizeof e, c, o);
        nd_sb_printf(sb, "const nd_v4<%s> L%d_ = *(const nd_v4<%s> *)&(%s);\n", st, o, st, e);
    }
    nd_sb_puts(sb, "#pragma unroll\nfor (int l_ = 0; l_ < 4; l_++) {\nconst int64_t e_ = e4_ + l_;\n(void)e_;\n{\n");
    bind_row(c, kept, 0);
    bind_dims(c, k->red, "e_");
    nd_sb_printf(sb, "(void)i%d;\n", rd);  /* the lanes may use no index */
    c->cache = 3;
    c->vd = rd;
    int rc = body(c, NULL);
    c->cache = 0;
    c->vd = 0;
    if (rc < 0) return -1;
    for (int p = 0; p < n; p++) elem_fold(c, &rs[p], p, "e_");
    nd_sb_puts(sb, "}\n}\n}\n}\n");
    return 0;
}

/* Reductions, three ways by the row's length (the runtime sizes the grid
 * by the same rule, runtime/cuda.h):
 * - at most ND_NARROW elements (k-means' argmin over 16 means, norms of
 *   short vectors): a thread per row, folding its elements in order;
 * - a grid of at least two blocks per row (few long rows, a full sum:
 *   the runtime asks for it when nd_cuda_split_slots says the kernel has
 *   the form): the row split over bpr_ blocks, each folding its share and
 *   writing its partial, the row's last block (a counter per row) folding
 *   the partials in order and storing the results;
 * - else a block per row, its threads striding over the row, combined by
 *   warp shuffles and shared memory. */
static int gen_reduce(cctx *c)
{
    const nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    int n = k->nred ? k->nred : 1;
    cred rs[ND_MAXRED];
    if (n > ND_MAXRED) {
        PyErr_SetString(PyExc_NotImplementedError, "numdyn.cuda: too many fused reductions");
        return -1;
    }
    for (int p = 0; p < n; p++) if (cred_make(c, p, &rs[p]) < 0) return -1;
    uint32_t all = c->R ? (uint32_t)((1u << c->R) - 1) : 0, kept = all & ~k->red;
    int nmom = 0, nops = k->nin + k->nout, split = nd_cuda_split_slots(c->g, k);
    for (int p = 0; p < n; p++) nmom += rs[p].cent >= 0;
    nd_sb_puts(sb, "int64_t nrow_ = 1, nred_ = 1;\n");
    for (int d = 0; d < c->R; d++) nd_sb_printf(sb, "%s *= n%d;\n", (kept >> d) & 1 ? "nrow_" : "nred_", d);
    nd_sb_puts(sb, "const int lane_ = threadIdx.x % ND_WARP, warp_ = threadIdx.x / ND_WARP;\n(void)lane_; (void)warp_;\n");
    /* a thread per row */
    nd_sb_puts(sb, "if (nred_ <= ND_NARROW) {\nfor (int64_t row_ = tid_; row_ < nrow_; row_ += nthr_) {\n");
    red_inits(c, rs, n);
    for (int pass = 0; pass < (nmom ? 2 : 1); pass++) {
        if (red_pass(c, rs, n, pass, kept, "0", "1") < 0) return -1;
        if (pass == 0) red_means(c, rs, n);
    }
    nd_sb_puts(sb, "{\n");
    if (red_outputs(c, rs, n, kept) < 0) return -1;
    nd_sb_puts(sb, "}\n}\n}\n");
    if (split) {
        nd_sb_printf(sb, "else if (gridDim.x >= 2 * nrow_) {\n"
                     "const int64_t bpr_ = (int64_t)gridDim.x / nrow_, row_ = blockIdx.x / bpr_, "
                     "part_ = blockIdx.x %% bpr_;\n"
                     "char *const scr_ = P[%d];\n"
                     "int *const cnt_ = (int *)P[%d];\n"
                     "__shared__ int last_;\n"
                     "if (row_ < nrow_) {\n", 3 * nops, 3 * nops + 1);
        red_inits(c, rs, n);
        if (red_pass(c, rs, n, 0, kept, "part_ * blockDim.x + threadIdx.x", "bpr_ * blockDim.x") < 0) return -1;
        for (int p = 0; p < n; p++) block_combine(c, &rs[p], p);
        nd_sb_puts(sb, "if (threadIdx.x == 0) {\n");
        for (int p = 0; p < n; p++)
            nd_sb_printf(sb, "((%s *)(scr_ + (size_t)%d * ND_SPLIT_SLOT * gridDim.x))[blockIdx.x] = acc%d;\n",
                         nd_cg_ctype(rs[p].adt), p, p);
        nd_sb_puts(sb, "__threadfence();\nlast_ = atomicAdd(cnt_ + row_, 1) == (int)bpr_ - 1;\n}\n"
                       "__syncthreads();\n"
                       "if (last_) {\n__threadfence();\n");
        for (int p = 0; p < n; p++) {
            nd_sb_printf(sb, "acc%d = %s;\n", p, rs[p].init);
            nd_sb_puts(sb, "for (int64_t q_ = threadIdx.x; q_ < bpr_; q_ += blockDim.x) {\n");
            partial_load(c, &rs[p], p);
            char a[16];
            snprintf(a, sizeof a, "acc%d", p);
            fold(c, &rs[p], a, "pv_");
            nd_sb_puts(sb, "}\n");
            block_combine(c, &rs[p], p);
        }
        nd_sb_puts(sb, "if (threadIdx.x == 0) {\ncnt_[row_] = 0;\n");  /* left zeroed for the next launch */
        if (red_outputs(c, rs, n, kept) < 0) return -1;
        nd_sb_puts(sb, "}\n}\n}\n}\n");
    }
    /* a block per row: by 4-element vectors where the row runs with
     * stride 1 (red_vec), else element by element */
    int rd = red_vec_dim(c, nmom);
    nd_sb_puts(sb, "else {\n");
    if (rd >= 0) {
        nd_sb_puts(sb, "if (nred_ % 4 == 0");
        for (int o = 0; o < k->nin; o++)
            if (!(k->ops[o].zero & (1u << rd))) row_vec_test(c, o, rd);
        nd_sb_puts(sb, ") {\nfor (int64_t row_ = blockIdx.x; row_ < nrow_; row_ += gridDim.x) {\n");
        red_inits(c, rs, n);
        if (red_vec_pass(c, rs, n, kept, rd) < 0) return -1;
        for (int p = 0; p < n; p++) block_combine(c, &rs[p], p);
        nd_sb_puts(sb, "if (threadIdx.x == 0) {\n");
        if (red_outputs(c, rs, n, kept) < 0) return -1;
        nd_sb_puts(sb, "}\n__syncthreads();\n}\n} else\n");
    }
    nd_sb_puts(sb, "{\nfor (int64_t row_ = blockIdx.x; row_ < nrow_; row_ += gridDim.x) {\n");
    red_inits(c, rs, n);
    for (int pass = 0; pass < (nmom ? 2 : 1); pass++) {
        if (red_pass(c, rs, n, pass, kept, "threadIdx.x", "blockDim.x") < 0) return -1;
        for (int p = 0; p < n; p++) {
            if ((rs[p].cent >= 0) != (pass == 1)) continue;
            block_combine(c, &rs[p], p);
        }
        if (pass == 0) red_means(c, rs, n);
    }
    nd_sb_puts(sb, "if (threadIdx.x == 0) {\n");
    if (red_outputs(c, rs, n, kept) < 0) return -1;
    nd_sb_puts(sb, "}\n__syncthreads();\n}\n}\n}\n");
    return 0;
}

/* ------------------------------------------------------- row kernels */
/* a domain-shaped output of a row kernel (stored per element) */
static int dom_out(cctx *c, int o)
{
    const nd_kop *op = &c->k->ops[o];
    const nd_node *m = &c->g->nodes[op->buf], *d = &c->g->nodes[c->k->dom];
    return op->acc == ND_A_DIRECT && m->ndim == d->ndim && m->shape[c->k->dims[c->R - 1]] != 1;
}

/* mark in `need` node x and what computing it per element takes; row
 * values and the reductions' results are at hand (row scope) */
static void need_mark(cctx *c, const uint8_t *role, uint8_t *need, nd_id x)
{
    if (x < 0 || need[x]) return;
    need[x] = 1;
    if (role[x] != 1) return;
    const nd_node *n = &c->g->nodes[x];
    if (n->op == ND_OP_VIEW && c->g->nodes[n->in[0]].op != ND_OP_SCALAR) return;
    for (int q = 0; q < n->nin; q++) need_mark(c, role, need, n->in[q]);
}

/* The row loop of gen_row: rk 0, every pass reads the row from memory;
 * rk > 0 (a multiple of 4), rows of at most rk * blockDim.x elements
 * whose cached operands and domain-shaped outputs run with element stride
 * 1 from aligned addresses (gen_row checks when it runs): before the
 * first pass each thread loads its rk elements of every operand a pass
 * reads into registers (kc<o>_[j_]), 4 consecutive elements by one
 * vector load; the passes read them there, so the row is read from memory
 * once (softmax: max, sum, divide), and the outputs are written by vector
 * stores. Thread t holds elements 4 (t + w blockDim.x) + l, w < rk / 4,
 * l < 4: a warp's loads are 512 contiguous bytes of float32. Scalar loads
 * at runtime strides held a register per address (126 registers a thread
 * for 32 float32 of softmax, 27% of the H100's copy bandwidth; this form
 * 38 registers, 94%, session 21). */
static int row_loop(cctx *c, const cred *rs, uint8_t *role, uint8_t *need, const uint8_t *fill,
                    uint8_t *done, int ndom, int rk, int thr)
{
    const nd_kernel *k = c->k;
    nd_graph *g = c->g;
    nd_sb *sb = c->sb;
    int np = k->nred, nops = k->nin + k->nout;
    size_t N = (size_t)g->n;
    uint32_t all = (uint32_t)((1u << c->R) - 1), kept = all & ~k->red;
    char e[512];
    (void)role;
    memset(done, 0, N);
    if (thr)  /* a thread per row (rows of at most ND_NARROW): its passes in order */
        nd_sb_puts(sb, "for (int64_t row_ = tid_; row_ < nrow_; row_ += nthr_) {\n");
    else
        nd_sb_puts(sb, "for (int64_t row_ = blockIdx.x; row_ < nrow_; row_ += gridDim.x) {\n");
    if (rk) {
        for (int o = 0; o < k->nin; o++)
            if (k->ops[o].frame < 0 && fill[k->ops[o].via])
                nd_sb_printf(sb, "%s kc%d_[%d];\n", nd_cg_ctype(cache_type(c, o)), o, rk);
        nd_sb_printf(sb, "#pragma unroll\nfor (int w_ = 0; w_ < %d; w_++) {\n"
                     "const int64_t e_ = 4 * (threadIdx.x + (int64_t)w_ * blockDim.x);\n"
                     "if (e_ < nred_) {\n", rk / 4);
        bind_row(c, kept, 0);
        bind_dims(c, k->red, "e_");
        for (int o = 0; o < k->nin; o++) {
            const nd_kop *op = &k->ops[o];
            if (op->frame >= 0 || !fill[op->via]) continue;
            const char *st = nd_cg_stype(op->dtype);
            elem(e, sizeof e, c, o);
            nd_sb_printf(sb, "const nd_v4<%s> F%d_ = *(const nd_v4<%s> *)&(%s);\n", st, o, st, e);
            for (int l = 0; l < 4; l++) {
                char x[32];
                snprintf(x, sizeof x, "F%d_.v[%d]", o, l);
                nd_sb_printf(sb, "kc%d_[4 * w_ + %d] = ", o, l);
                nd_cg_load(sb, x, op->dtype);
                nd_sb_puts(sb, ";\n");
            }
        }
        nd_sb_puts(sb, "}\n}\n");
    }
    for (int p = 0; p <= np; p++) {
        if (p == np && !ndom) break;
        if (p < np) {
            nd_sb_printf(sb, "%s acc%d = %s;\n", nd_cg_ctype(rs[p].arg ? rs[p].acc : rs[p].adt), p, rs[p].init);
            if (rs[p].arg) nd_sb_printf(sb, "int64_t bi%d = -1;\n", p);
        }
        if (rk) {
            nd_sb_printf(sb, "#pragma unroll\nfor (int w_ = 0; w_ < %d; w_++) {\n"
                         "const int64_t e4_ = 4 * (threadIdx.x + (int64_t)w_ * blockDim.x);\n"
                         "if (e4_ < nred_) {\n", rk / 4);
            if (p == np)
                for (int o = k->nin; o < nops; o++)
                    if (dom_out(c, o)) nd_sb_printf(sb, "nd_v4<%s> S%d_;\n", nd_cg_stype(k->ops[o].dtype), o);
            nd_sb_puts(sb, "#pragma unroll\nfor (int l_ = 0; l_ < 4; l_++) {\n"
                           "const int j_ = 4 * w_ + l_;\nconst int64_t e_ = e4_ + l_;\n{\n");
            c->cache = 2;
        } else if (thr) {
            nd_sb_puts(sb, "for (int64_t e_ = 0; e_ < nred_; e_++) {\n{\n");
        } else {
            nd_sb_puts(sb, "#pragma unroll ND_RED_UNROLL\nfor (int64_t e_ = threadIdx.x; e_ < nred_; e_ += blockDim.x) {\n{\n");
        }
        bind_row(c, kept, 0);
        bind_dims(c, k->red, "e_");
        if (rk)  /* a pass reading registers may use no index */
            for (int d = 0; d < c->R; d++) if ((k->red >> d) & 1) nd_sb_printf(sb, "(void)i%d;\n", d);
        int brc = body(c, need + N * (size_t)p);
        c->cache = 0;
        if (brc < 0) return -1;
        if (p < np) elem_fold(c, &rs[p], p, "e_");
        else
            for (int o = k->nin; o < nops; o++)
                if (dom_out(c, o)) {
                    c->lanes = rk != 0;
                    store(c, o, k->ops[o].buf);
                    c->lanes = 0;
                }
        nd_sb_puts(sb, "}\n}\n");
        if (rk && p == np) {  /* the lanes out, one vector store an output */
            nd_sb_puts(sb, "{\n");
            bind_row(c, kept, 0);
            bind_dims(c, k->red, "e4_");
            for (int o = k->nin; o < nops; o++) {
                if (!dom_out(c, o)) continue;
                elem(e, sizeof e, c, o);
                if (nd_cg_check_stores())
                    nd_sb_printf(sb, "if (ND_OOB(&(%s), lo%d, hi%d) || ND_OOB(&(%s) + 3, lo%d, hi%d)) "
                                 "nd_err |= ND_ERR_OOB; else\n", e, o, o, e, o, o);
                nd_sb_printf(sb, "*(nd_v4<%s> *)&(%s) = S%d_;\n", nd_cg_stype(k->ops[o].dtype), e, o);
            }
            nd_sb_puts(sb, "}\n");
        }
        if (rk) nd_sb_puts(sb, "}\n}\n");
        if (p == np) break;
        if (!thr) block_combine(c, &rs[p], p);
        red_result_p(c, &rs[p], p);
        done[rs[p].rid] = 1;
        /* the row values now computable, in order */
        int uses = 0;
        for (int i = 0; i < k->nrow; i++) {
            nd_id v = k->rowv[i];
            if (done[v]) continue;
            const nd_node *vn = &g->nodes[v];
            int ready = 1;
            for (int q = 0; q < vn->nin; q++) {
                nd_id in = vn->in[q];
                int member = 0;
                if (in < 0) continue;
                for (int t = 0; t < k->nrow; t++) if (k->rowv[t] == in) member = 1;
                for (int t = 0; t < np; t++) if (k->reds[t] == in) member = 1;
                if (member && !done[in]) ready = 0;
            }
            if (!ready) continue;
            if (vn->op == ND_OP_VIEW)
                nd_sb_printf(sb, "const %s v%d = v%d;\n", nd_cg_ctype(vn->dtype), (int)v, (int)vn->in[0]);
            else if (nd_cg_node(g, v, sb, &uses) < 0) return -1;
            done[v] = 1;
        }
        /* the row outputs that are ready: thread 0 stores them */
        nd_sb_puts(sb, thr ? "{\n" : "if (threadIdx.x == 0) {\n");
        bind_row(c, kept, 1);
        for (int o = k->nin; o < nops; o++) {
            const nd_kop *op = &k->ops[o];
            if (done[op->buf] != 1 || dom_out(c, o)) continue;
            store(c, o, op->buf);
            done[op->buf] = 2;
        }
        nd_sb_puts(sb, "}\n");
    }
    nd_sb_puts(sb, thr ? "}\n" : "__syncthreads();\n}\n");
    return 0;
}

/* bytes a thread keeps in registers for its share of a row (per element
 * of every cached operand, times the elements it holds): 16 float32, so
 * rows up to 4096 wide at 256 threads. 32 (rows to 8192) took 60 or more
 * registers a thread: fewer resident blocks, less memory in flight */
#define ROW_CACHE_BYTES 64

/* operand o can move by 4-element vectors along the row's one reduced
 * dim d (its stride and alignment are checked when the kernel runs) */
static int row_vec_operand(const cctx *c, int o, int d)
{
    const nd_kop *op = &c->k->ops[o];
    if (nd_cg_is_complex(op->dtype) || nd_cg_elsize(op->dtype) > 8 || op->frame >= 0 ||
        (op->zero & (1u << d)))
        return 0;
    return !(o < c->k->nin && op->acc == ND_A_VIEW &&
             (c->g->nodes[op->via].flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG)));
}

/* the runtime test of the vector-cached row form: " && ..." per operand */
static void row_vec_test(cctx *c, int o, int d)
{
    const nd_kop *op = &c->k->ops[o];
    nd_sb_printf(c->sb, " && I[%d] == 1 && (unsigned long long)B%d %% (4 * sizeof(*B%d)) == 0",
                 sidx(c, o, d), o, o);
    for (int t = 0; t < c->R; t++)
        if (t != d && !(op->zero & (1u << t))) nd_sb_printf(c->sb, " && I[%d] %% 4 == 0", sidx(c, o, t));
}

/* One block per row (the kept dims): per reduction one pass of the
 * block's threads over the row, the reduction combined across the block
 * and every row value it makes ready computed by all threads; then one
 * pass writing the domain-shaped outputs (softmax: max, sum, divide).
 * Rows that fit in registers are read from memory once (row_loop); rows
 * of at most ND_NARROW elements (softmax over 10 classes) are a thread's
 * each (the runtime sizes the grid by the same rule). */
static int gen_row(cctx *c)
{
    const nd_kernel *k = c->k;
    nd_graph *g = c->g;
    nd_sb *sb = c->sb;
    int np = k->nred, rc = -1;
    size_t N = (size_t)g->n;
    uint32_t all = (uint32_t)((1u << c->R) - 1), kept = all & ~k->red;
    cred rs[ND_MAXRED];
    if (np > ND_MAXRED || np < 1) {
        PyErr_SetString(PyExc_NotImplementedError, "numdyn.cuda: a row kernel of this size has no CUDA form");
        return -1;
    }
    for (int p = 0; p < np; p++) {
        if (cred_of(c, k->reds[p], -1, -1, p, &rs[p]) < 0) return -1;
        if (k->rcent && k->rcent[p] >= 0) {
            PyErr_SetString(PyExc_NotImplementedError, "numdyn.cuda: a moment in a row kernel has no CUDA form");
            return -1;
        }
    }
    uint8_t *role = PyMem_Calloc(N, 1), *need = PyMem_Calloc(N * (size_t)(np + 1), 1);
    uint8_t *done = PyMem_Calloc(N, 1), *fill = PyMem_Calloc(N, 1);
    if (!role || !need || !done || !fill) { PyErr_NoMemory(); goto out; }
    for (int i = 0; i < k->ninl; i++) role[k->inl[i]] = 1;
    for (int i = 0; i < k->nrow; i++) role[k->rowv[i]] = 0;
    for (int p = 0; p < np; p++) role[k->reds[p]] = 0;
    for (int o = 0; o < k->nin; o++) role[k->ops[o].via] = 2;
    for (int i = 0; i < k->nscal; i++) role[k->scal[i]] = 0;
    for (int p = 0; p < np; p++) need_mark(c, role, need + N * (size_t)p, rs[p].val);
    int ndom = 0;
    for (int o = k->nin; o < k->nin + k->nout; o++)
        if (dom_out(c, o)) {
            ndom++;
            need_mark(c, role, need + N * (size_t)np, k->ops[o].buf);
        }
    /* operands read by a pass after the first are worth keeping: they
     * would be read from memory again */
    int bytes = 0, again = 0;
    for (int o = 0; o < k->nin; o++) {
        const nd_kop *op = &k->ops[o];
        if (op->frame >= 0) continue;
        int later = 0, any = 0;
        for (int p = 0; p <= np; p++) {
            int in = need[N * (size_t)p + (size_t)op->via] != 0;
            any |= in;
            later |= in && p > 0;
        }
        if (!any || fill[op->via]) continue;
        fill[op->via] = 1;
        bytes += nd_cg_elsize(cache_type(c, o));
        again |= later;
    }
    int rk = bytes && again ? ROW_CACHE_BYTES / bytes : 0, rd = -1;
    rk &= ~3;  /* whole vectors */
    for (int d = 0; d < c->R; d++)
        if ((k->red >> d) & 1) rd = rd == -1 ? d : -2;
    if (rd < 0) rk = 0;  /* one reduced dim: a row is one run of memory */
    for (int o = 0; rk && o < k->nin + k->nout; o++)
        if ((o < k->nin ? k->ops[o].frame < 0 && fill[k->ops[o].via] : dom_out(c, o)) &&
            !row_vec_operand(c, o, rd))
            rk = 0;
    nd_sb_puts(sb, "int64_t nrow_ = 1, nred_ = 1;\n");
    for (int d = 0; d < c->R; d++) nd_sb_printf(sb, "%s *= n%d;\n", (kept >> d) & 1 ? "nrow_" : "nred_", d);
    nd_sb_puts(sb, "const int lane_ = threadIdx.x % ND_WARP, warp_ = threadIdx.x / ND_WARP;\n(void)lane_; (void)warp_;\n");
    nd_sb_puts(sb, "if (nred_ <= ND_NARROW) {\n");
    if (row_loop(c, rs, role, need, fill, done, ndom, 0, 1) < 0) goto out;
    nd_sb_puts(sb, "} else {\n");
    if (rk) {
        nd_sb_printf(sb, "if (nred_ <= (int64_t)%d * blockDim.x && nred_ %% 4 == 0", rk);
        for (int o = 0; o < k->nin + k->nout; o++)
            if (o < k->nin ? k->ops[o].frame < 0 && fill[k->ops[o].via] : dom_out(c, o))
                row_vec_test(c, o, rd);
        nd_sb_puts(sb, ") {\n");
        if (row_loop(c, rs, role, need, fill, done, ndom, rk, 0) < 0) goto out;
        nd_sb_puts(sb, "} else {\n");
    }
    if (row_loop(c, rs, role, need, fill, done, ndom, 0, 0) < 0) goto out;
    if (rk) nd_sb_puts(sb, "}\n");
    nd_sb_puts(sb, "}\n");
    rc = 0;
out:
    PyMem_Free(role);
    PyMem_Free(need);
    PyMem_Free(done);
    PyMem_Free(fill);
    return rc;
}

/* ------------------------------------------------------------- scans */
static int gen_scan(cctx *c)
{
    const nd_kernel *k = c->k;
    nd_sb *sb = c->sb;
    cred r;
    if (cred_make(c, 0, &r) < 0) return -1;
    if (r.arg) {
        PyErr_SetString(PyExc_NotImplementedError, "numdyn.cuda: an arg scan has no CUDA form");
        return -1;
    }
    int s = k->scan;
    uint32_t all = c->R ? (uint32_t)((1u << c->R) - 1) : 0, lines = s >= 0 ? all & ~(1u << s) : all;
    nd_sb_puts(sb, "int64_t nl_ = 1;\n");
    for (int d = 0; d < c->R; d++) if ((lines >> d) & 1) nd_sb_printf(sb, "nl_ *= n%d;\n", d);
    nd_sb_puts(sb, "for (int64_t l_ = tid_; l_ < nl_; l_ += nthr_) {\n");
    bind_dims(c, lines, "l_");
    nd_sb_printf(sb, "%s acc0 = %s;\n", nd_cg_ctype(r.adt), r.init);
    if (s >= 0) nd_sb_printf(sb, "for (int64_t i%d = 0; i%d < n%d; i%d++) {\n", s, s, s, s);
    else nd_sb_puts(sb, "{\n");
    if (body(c, NULL) < 0) return -1;
    char v[32];
    snprintf(v, sizeof v, "v%d", (int)r.val);
    nd_sb_printf(sb, "const %s cv0_ = (%s)", nd_cg_ctype(r.adt), nd_cg_ctype(r.adt));
    nd_cg_cast(sb, v, c->g->nodes[r.val].dtype, r.acc);
    nd_sb_puts(sb, ";\n");
    /* NumPy's accumulate starts from the first element itself */
    if (s >= 0) {
        nd_sb_printf(sb, "if (i%d == 0) acc0 = cv0_;\nelse {\n", s);
        fold(c, &r, "acc0", "cv0_");
        nd_sb_puts(sb, "}\n");
    } else {
        nd_sb_puts(sb, "acc0 = cv0_;\n");
    }
    if (r.acc == NPY_HALF) nd_sb_puts(sb, "acc0 = nd_rh(acc0);\n");  /* rounded at every step */
    const nd_node *rn = &c->g->nodes[k->root];
    char t[64];
    snprintf(t, sizeof t, "(%s)acc0", nd_cg_ctype(r.acc));
    nd_sb_printf(sb, "const %s v%d = ", nd_cg_ctype(rn->dtype), (int)k->root);
    nd_cg_cast(sb, t, r.acc, rn->dtype);
    nd_sb_puts(sb, ";\n");
    store(c, k->nin, k->root);
    nd_sb_puts(sb, "}\n}\n");
    return 0;
}

/* ------------------------------------------------------- text passes */
/* `__real__ X` / `__imag__ X` -> nd_re(X) / nd_im(X), X an identifier,
 * a call, or a parenthesized group; ({ s; e; }) -> [&]() { s; return e; }() */
static int rewrite(const char *in, nd_sb *out)
{
    const char *p = in;
    while (*p) {
        int re = !strncmp(p, "__real__", 8), im = !strncmp(p, "__imag__", 8);
        if (re || im) {
            const char *q = p + 8;
            while (*q == ' ') q++;
            const char *x0 = q;
            while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_')
                q++;
            if (*q == '(') {
                int depth = 0;
                do {
                    if (*q == '(') depth++;
                    else if (*q == ')') depth--;
                    q++;
                } while (*q && depth > 0);
                if (depth) return -1;
            }
            if (q == x0) return -1;
            /* X itself may hold __real__/__imag__ or ({ }): rewritten too */
            nd_sb x;
            nd_sb_init(&x);
            nd_sb_printf(&x, "%.*s", (int)(q - x0), x0);
            nd_sb_printf(out, "%s(", re ? "nd_re" : "nd_im");
            int rc = x.oom ? -1 : rewrite(x.p, out);
            nd_sb_free(&x);
            if (rc < 0) return -1;
            nd_sb_puts(out, ")");
            p = q;
            continue;
        }
        if (p[0] == '(' && p[1] == '{') {
            const char *q = p + 2, *last = NULL, *end = NULL;
            int depth = 0;
            for (; *q; q++) {
                if (*q == '(' || *q == '{') depth++;
                else if (*q == ')' || *q == '}') {
                    if (depth == 0 && q[0] == '}' && q[1] == ')') { end = q; break; }
                    depth--;
                } else if (*q == ';' && depth == 0) {
                    const char *r = q + 1;
                    while (*r == ' ' || *r == '\n') r++;
                    if (*r != '}') last = q;
                }
            }
            if (!end || !last) return -1;
            const char *e = last + 1, *ee = end;
            while (ee > e && (ee[-1] == ' ' || ee[-1] == '\n' || ee[-1] == ';')) ee--;
            nd_sb t;
            nd_sb_init(&t);
            nd_sb_printf(&t, "([&]() {%.*s; return %.*s; }())", (int)(last - (p + 2)), p + 2,
                         (int)(ee - e), e);
            int rc = t.oom ? -1 : rewrite(t.p, out);
            nd_sb_free(&t);
            if (rc < 0) return -1;
            p = end + 2;
            continue;
        }
        nd_sb_printf(out, "%c", *p);
        p++;
    }
    return out->oom ? -1 : 0;
}

int nd_cuda_kernel(nd_graph *g, const nd_kernel *k, nd_sb *out, uint64_t *hash)
{
    cctx c = {g, k, NULL, k->rank, -1, {0}};
    nd_sb body_sb, fixed;
    nd_sb_init(&body_sb);
    nd_sb_init(&fixed);
    c.sb = &body_sb;
    int rc = -1;
    if (prologue(&c) < 0) goto done;
    switch (k->kind) {
    case ND_K_POINTWISE: case ND_K_REGION: rc = gen_pointwise(&c); break;
    case ND_K_REDUCE: rc = gen_reduce(&c); break;
    case ND_K_SCAN: rc = gen_scan(&c); break;
    case ND_K_ROW: rc = gen_row(&c); break;
    default:
        PyErr_SetString(PyExc_NotImplementedError, "numdyn.cuda: kernel kind without a CUDA form");
    }
    if (rc < 0) goto done;
    nd_sb_puts(&body_sb, "if (nd_err) atomicOr(E, nd_err);\n");
    rc = nd_sb_check(&body_sb);
    if (rc == 0 && rewrite(body_sb.p, &fixed) < 0) {
        PyErr_SetString(PyExc_SystemError, "numdyn.cuda: internal error: malformed kernel text");
        rc = -1;
    }
    if (rc == 0) {
        /* NUMDYN_CUDA_MIN_BLOCKS=N (an experiment's knob, bench/
         * cuda_rows_probe.py): at least N resident blocks an SM asked of
         * ptxas, which then holds a thread to 65536 / (N * ND_THREADS)
         * registers; unset, ptxas chooses. Part of the kernel's name (its
         * hash): the module caches know kernels by name */
        const char *mb = getenv("NUMDYN_CUDA_MIN_BLOCKS");
        int minb = mb ? atoi(mb) : 0;
        char lb[48] = "";
        if (minb > 0 && minb <= 32) snprintf(lb, sizeof lb, ", %d", minb);
        uint64_t h = nd_fnv64(fixed.p, fixed.n, ND_FNV_INIT);
        if (lb[0]) h = nd_fnv64(lb, strlen(lb), h);
        if (hash) *hash = h;
        /* P, I, S are only read, and nothing else in the kernel points at
         * them: __restrict__ lets the extents and strides stay in registers
         * across the grid-stride loop instead of being loaded again after
         * every store */
        nd_sb_printf(out, "extern \"C\" __global__ void __launch_bounds__(ND_THREADS%s)\n"
                     "nd_cuda_%016llx(char *const *__restrict__ P, const int64_t *__restrict__ I,\n"
                     "                 const nd_sv *__restrict__ S, int *E)\n{\n",
                     lb, (unsigned long long)h);
        nd_sb_puts(out, fixed.p);
        nd_sb_puts(out, "}\n");
        rc = nd_sb_check(out);
    }
done:
    nd_sb_free(&body_sb);
    nd_sb_free(&fixed);
    return rc;
}

/* ------------------------------------------------------------ prelude */
static char *prelude;

/* the text of kernels/<name> appended to sb; 0 or -1 */
static int append_header(nd_sb *sb, const char *dir, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        PyErr_Format(PyExc_OSError, "numdyn.cuda: cannot read %s (broken installation?)", path);
        return -1;
    }
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) nd_sb_printf(sb, "%.*s", (int)n, buf);
    fclose(f);
    return 0;
}

/* kernels/nd_cuda.h with each line `#include "nd_*.h"` (a header shared
 * with the C kernels: nd_f2i.h) replaced by that file's text: NVRTC is
 * given one self-contained unit, and the unit's hash (the CUDA disk cache
 * key) covers the shared text too */
const char *nd_cuda_prelude(void)
{
    if (prelude) return prelude;
    const char *dir = nd_cg_header_dir();
    if (!dir) return NULL;
    nd_sb raw, sb;
    nd_sb_init(&raw);
    nd_sb_init(&sb);
    if (append_header(&raw, dir, "nd_cuda.h") < 0 || nd_sb_check(&raw) < 0) goto fail;
    for (const char *p = raw.p; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) + 1 : strlen(p);
        const char *q = p + 10;  /* after `#include "` */
        const char *end = len > 10 && strncmp(p, "#include \"nd_", 13) == 0 ? memchr(q, '"', len - 10) : NULL;
        if (end && (size_t)(end - q) < 64) {
            char name[72];
            snprintf(name, sizeof name, "%.*s", (int)(end - q), q);
            if (append_header(&sb, dir, name) < 0) goto fail;
        } else {
            nd_sb_printf(&sb, "%.*s", (int)len, p);
        }
        p += len;
    }
    nd_sb_free(&raw);
    if (nd_sb_check(&sb) < 0) { nd_sb_free(&sb); return NULL; }
    prelude = sb.p;  /* kept for the process */
    return prelude;
fail:
    nd_sb_free(&raw);
    nd_sb_free(&sb);
    return NULL;
}
