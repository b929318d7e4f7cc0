/* codegen_loop.c -- a typed captured loop (graph/loop_ir.h, typed by
 * passes/loop_types.c) -> one C function  int nd_loop_main(nd_lframe *F).
 *
 * Scalar variable v with possible types S lives in one C local per member
 * of S (v3_7: variable 3 as LT_I8) plus a tag v3_t (its current type, or
 * LT_UNBOUND). A statement that reads variables of more than one possible
 * type (or that may be unbound) is emitted once per combination of their
 * types, under a test of their tags: inside, every expression has one
 * static type, and the C is plain arithmetic. Each operation computes the
 * common case in C and calls F->slow for the rare one (nd_loop.h), so its
 * result, warnings and exceptions are Python's and NumPy's. Python int
 * arithmetic is checked only where the bound analysis of loop_types.c
 * cannot show it stays in int64; on overflow the loop deoptimizes (the
 * runner restores the arrays and runs the loop in Python).
 *
 * Expressions evaluate into numbered temporaries (t12), statement by
 * statement, in Python's evaluation order; the C compiler removes them.
 */
#include "codegen/codegen.h"
#include "passes/loop_types.h"
#include <string.h>
#include <ctype.h>

static const char *const ctype[LT_N] = {
    "uint8_t", "int64_t", "double", "uint8_t", "int8_t", "int16_t", "int32_t", "int64_t",
    "uint8_t", "uint16_t", "uint32_t", "uint64_t", "float", "double"};
static const char *const sfx[LT_N] = {
    "", "", "d", "", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f", "d"};
static const char *const tmin[LT_N] = {
    "0", "INT64_MIN", "", "0", "INT8_MIN", "INT16_MIN", "INT32_MIN", "INT64_MIN",
    "0", "0", "0", "0", "", ""};
static const char *const tmax[LT_N] = {
    "1", "INT64_MAX", "", "1", "INT8_MAX", "INT16_MAX", "INT32_MAX", "INT64_MAX",
    "UINT8_MAX", "UINT16_MAX", "UINT32_MAX", "UINT64_MAX", "", ""};

#define ISF(t) ((t) == LT_PYFLOAT || (t) == LT_F4 || (t) == LT_F8)
/* the C local holding a variable of type t: one per C type, so that a
 * variable which is a Python float at first and a float64 later (s = 0.0;
 * s += a[i]) is one double, and arms of specialize() that differ only in
 * the tag emit the same text */
#define REP(t) ((t) == LT_B1 || (t) == LT_U1 ? LT_PYBOOL : (t) == LT_I8 ? LT_PYINT : (t) == LT_F8 ? LT_PYFLOAT : (t))
#define ISNPI(t) ((t) >= LT_I1 && (t) <= LT_U8)
#define ISU(t) ((t) >= LT_U1 && (t) <= LT_U8)
#define ISSIGNED(t) (((t) >= LT_I1 && (t) <= LT_I8) || (t) == LT_PYINT)
#define ISINT(t) ((t) == LT_PYINT || (t) == LT_PYBOOL || (t) == LT_B1 || ISNPI(t))

typedef struct {
    int t;
    int bits;
    char s[16];
    int var;    /* >= 0: the value of that scalar variable, read as it is */
    int kconst; /* a Python float constant of value kval */
    double kval;
} cv;

typedef struct {
    nd_ltyping *T;
    const nd_lir *ir;
    nd_sb *sb;
    int tmp;
    int ind;
    uint8_t *assign;
    int snapshot;
    int fail;     /* 1: this signature cannot be compiled (T->reason); -1: error */
    struct vctx *vc;  /* the 1-D array statement or reduction being emitted */
    int vec;          /* emitting the code of one element (index vc->k) */
    int nscr;         /* scratch buffers used (nd_scr[]) */
    uint8_t *bound;   /* per variable: certainly bound here (assigned earlier in an
                         enclosing block, or the loop variable in its body) */
    /* for loops being emitted whose variable's range was checked against
     * the arrays it indexes, once before the loop: hz[k] names the C flag */
    int hvar[16], nh;
    const nd_ln *hloop[16];
    /* hdir[k]: 0, both ends of the range proved (a for loop's variable); -1
     * the upper end only, +1 the lower end only (a while loop's variable
     * that only decreases / increases in it: monotone()) */
    int hdir[16];
    char hz[16][16];
    /* inner for loops whose range the enclosing for loop leaves unchanged:
     * their range checks proved once before that loop, for every value its
     * variable takes (pre_prove()); pz[k] names the flag of ploop[k] */
    const nd_ln *ploop[16];
    char pz[16][24];
    int npz;
    /* the copy of an outer for loop run when every range proof made before
     * it held (see LK_FOR): its inner loops ploop[pf_lo..pf_hi) are known to
     * take their unchecked copy (pf<id> held: proved, at most 2^16
     * iterations, r0 + k * step in int64), as are the range flags
     * hz[0..pf_nh); ofast: emitting either copy of such a loop (none nested) */
    int pf_lo, pf_hi, pf_nh, ofast;
    /* the type-stable version of a loop (see steady()): pin[v] says that
     * variable v, of several possible types, has type assign[v] here,
     * known from the flow of the code since the loop's head, not tested */
    uint8_t *pin;
    int pinned;       /* inside such a version: no second one nested */
    int multiarm;     /* statements emitted with more than one arm so far */
    int brk;          /* > 0: a break of the loop being emitted is goto nd_done<brk>
                         (its iterations are not a C loop) */
    int fpflags;      /* NumPy float arithmetic left its events to the FP flags */
    int fcmp;         /* float comparisons emitted */
    int quiet;        /* emit them quiet (the second pass when fpflags) */
    int notick;       /* its iterations count toward the poll in bulk (no per-iteration tick) */
    int nowide;       /* emitting the per-operation form of a wide() chain */
    int nohz;         /* emitting the copy of an innermost loop in which every
                         range check hoisted before it held: none inside */
    int unit;         /* in that copy: the setok arrays' last axes are contiguous */
    uint8_t *setok;   /* per array local: tested bound before that copy (the
                         loop does not rebind it), no test at each access */
    /* `if E < x: x = E` (see select_if()): the condition's operand E whose
     * value the assignment reuses, its value once emitted, and the flag set
     * where its evaluation took a slow path */
    const nd_ln *cse_e;
    cv cse_v;
    int cse_have, cse_in;
    char cse_flag[16];
    cv let[LLET_MAX]; /* LK_LET bindings' values (an inlined helper's locals) */
    /* a 1-D array binding: the buffer it was computed into, its element type, length */
    struct { char w[16], len[16]; int te; } letbuf[LLET_MAX];
} cg;

/* A 1-D array expression (a statement's value, a reduction's operands) is
 * emitted as a C loop over its elements. Before the loop: every scalar
 * subexpression (evaluated once, as Python evaluates it once) and every
 * slice's address, stride and length; the lengths must agree (else NumPy
 * broadcasts or raises: the loop deoptimizes). In the loop, element k of
 * each slice is a load. Element arithmetic is NumPy's array arithmetic:
 * integers wrap silently; floating-point events are left to the hardware
 * flags, tested after the loop (NumPy tests the same flags), and any of
 * divide/overflow/invalid deoptimizes, so Python reruns the loop and NumPy
 * warns or raises as np.errstate says. */
#define VSLOTS 48
typedef struct vctx {
    /* slice 1: a 1-D slice (p, st); 2: a matrix product M @ v or v @ M, whose
     * element k is the product of row/column k of M (p, st: along k; st2:
     * along the sum; n2: the sum's length) with v, computed before the loop
     * into buffer w of element type te; 4: np.outer(u, v), u and v computed
     * before the loop into buffers w and w2 (element types te, te2): element
     * (k, k2) is w[k] * w2[k2]; 5: np.concatenate((...)) / np.array([...]),
     * computed before the loop into buffer w (element type te) */
    struct { const nd_ln *e; cv v; int slice; char p[16], st[16], st2[16], n2[16], w[16], w2[16]; int te, te2; } slot[VSLOTS];
    int n;
    char len[16];
    int havelen;
    char k[16];
    /* a 2-D expression (nd 2): axis 1's length and index; element (k, k2) of
     * slot 1 is at p + k * st + k2 * st2; flat: its index in a C-ordered
     * buffer, size: the number of elements */
    int nd, unit;
    char len2[16], k2[16], flat[64], size[40];
    /* prov[ax]: axis ax's length so far is a broadcast 1 (x[:, None]), a
     * variable the first operand of another length sets */
    int prov[2];
} vctx;

static void line(cg *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(cg *g, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    for (int k = 0; k < g->ind; k++) nd_sb_puts(g->sb, "  ");
    nd_sb_puts(g->sb, buf);
    nd_sb_puts(g->sb, "\n");
}

static void newtmp(cg *g, cv *v, int t)
{
    v->t = t;
    v->bits = LBITS_ANY;
    v->var = -1;
    v->kconst = 0;
    snprintf(v->s, sizeof v->s, "t%d", ++g->tmp);
}

/* declare temp v = expr */
static void decl(cg *g, cv *v, int t, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void decl(cg *g, cv *v, int t, const char *fmt, ...)
{
    char buf[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    newtmp(g, v, t);
    line(g, "%s %s = %s;", ctype[t], v->s, buf);
}

/* the slow path for r = a OP b: Python/NumPy performs it */
static void deopt(cg *g);

/* The operands go to F->slow as copies made here, on the cold path: taking
 * the address of the hot temporaries themselves would make them escape, and
 * the C compiler would keep them in memory (stored and reloaded around every
 * call and array store) on the fast path too. An operand read straight from
 * a variable passes the variable's tag as its type, which is its type in
 * every arm that reaches here (specialize() tests it), so arms that differ
 * only in such a type emit the same text and are merged. */
static void slow(cg *g, int ln, int op, cv *r, const cv *a, const cv *b)
{
    if (g->vec) { deopt(g); return; }
    char ta[24], tb[24];
    if (a && a->var >= 0) snprintf(ta, sizeof ta, "v%d_t", a->var);
    else snprintf(ta, sizeof ta, "%d", a ? a->t : 0);
    if (b && b->var >= 0) snprintf(tb, sizeof tb, "v%d_t", b->var);
    else snprintf(tb, sizeof tb, "%d", b ? b->t : 0);
    line(g, "{ %s r_ = %s; %s a_ = %s;%s%s%s%s%s", ctype[r->t], r->s, a ? ctype[a->t] : "int", a ? a->s : "0",
         b ? " " : "", b ? ctype[b->t] : "", b ? " b_ = " : "", b ? b->s : "", b ? ";" : "");
    line(g, "  NDL_SLOW(%d, %d, %d, &r_, %s, %s, %s, %s); %s = r_;%s%s%s }", ln, op, r->t, ta, a ? "&a_" : "NULL", tb,
         b ? "&b_" : "NULL", r->s, g->cse_in ? " " : "", g->cse_in ? g->cse_flag : "", g->cse_in ? " = 1;" : "");
    if (r->t == LT_PYINT || (r->t == LT_PYFLOAT && (op == LO_POW || op == LO_NOPS + LF_M_POW)))
        g->snapshot = 1;
}

static void deopt(cg *g)
{
    line(g, "{ rc = NDL_DEOPT; goto nd_err; }");
    g->snapshot = 1;
}

/* value of v converted to type t (promotion: value-preserving or rounded).
 * A Python float becoming a float32 operand is NumPy's cast of it, which
 * warns "overflow encountered in cast" for a finite value past float32's
 * range: ndl_f4 raises the overflow flag for it (the C compiler folds the
 * cast of a constant, flag and all), and the flags are then tested */
static void conv(cg *g, char *out, size_t n, const cv *v, int t)
{
    if (t == LT_F4 && v->t == LT_PYFLOAT &&
        !(v->kconst && (!isinf((float)v->kval) || isinf(v->kval)))) {
        snprintf(out, n, "ndl_f4(%s)", v->s);
        g->fpflags = 1;
        return;
    }
    snprintf(out, n, "((%s)%s)", ctype[t], v->s);
}

static int expr(cg *g, const nd_ln *e, cv *out);
static int cond(cg *g, const nd_ln *e, char *name);

static int no_type(cg *g, const nd_ln *e)
{
    (void)e;
    if (!g->fail) g->fail = PyErr_Occurred() ? -1 : 1;
    return -1;
}

/* ---------------------------------------------------------- operators */
static int compare(cg *g, int op, const cv *a, const cv *b, int r, cv *out)
{
    static const char *const cop[] = {"<", "<=", ">", ">=", "==", "!="};
    const char *o = cop[op - LO_LT];
    int ta = a->t, tb = b->t;
    char x[64], y[64];
    if (ISINT(ta) && ISINT(tb)) {
        if ((ta == LT_U8) != (tb == LT_U8) && (ISSIGNED(ta) || ISSIGNED(tb))) {
            /* uint64 against a signed integer: exactly */
            if (ta == LT_U8) decl(g, out, r, "ndl_cmp_iu((int64_t)%s, %s) %s 0", b->s, a->s, op == LO_LT ? ">" : op == LO_LE ? ">=" : op == LO_GT ? "<" : op == LO_GE ? "<=" : o);
            else decl(g, out, r, "ndl_cmp_iu((int64_t)%s, %s) %s 0", a->s, b->s, o);
            return 0;
        }
        const char *ct = (ta == LT_U8 || tb == LT_U8) ? "uint64_t" : "int64_t";
        decl(g, out, r, "(%s)%s %s (%s)%s", ct, a->s, o, ct, b->s);
        return 0;
    }
    if ((ta == LT_PYINT && tb == LT_PYFLOAT) || (ta == LT_PYFLOAT && tb == LT_PYINT)) {
        /* Python compares an int and a float exactly */
        int sw = ta == LT_PYFLOAT;
        const char *i = sw ? b->s : a->s, *f = sw ? a->s : b->s;
        const char *oo = o;
        if (sw) oo = op == LO_LT ? ">" : op == LO_LE ? ">=" : op == LO_GT ? "<" : op == LO_GE ? "<=" : o;
        decl(g, out, r, "({ int c_ = ndl_cmp_if(%s, %s); c_ == 2 ? %d : (c_ %s 0); })", i, f, op == LO_NE, oo);
        return 0;
    }
    int ct = nd_lty_bin(LO_ADD, ta, tb);
    if (ct == -2) return -1;
    if (!ISF(ct)) ct = LT_F8;
    conv(g, x, sizeof x, a, ct);
    conv(g, y, sizeof y, b, ct);
    /* where NumPy float arithmetic leaves its events to the flags, quiet
     * comparisons: C's a < b of a NaN raises FE_INVALID, which the runner
     * would take for an event (a deoptimization on every call with NaN
     * data). Elsewhere the plain one, which the C compiler turns into
     * maxsd/minsd (the quiet ones cannot be). */
    static const char *const qop[] = {"__builtin_isless", "__builtin_islessequal", "__builtin_isgreater",
                                      "__builtin_isgreaterequal"};
    g->fcmp = 1;
    if (op <= LO_GE && g->quiet) decl(g, out, r, "%s(%s, %s)", qop[op - LO_LT], x, y);
    else decl(g, out, r, "%s %s %s", x, o, y);
    return 0;
}

/* NumPy's float power loop given one exponent for a whole vector statement
 * (a scalar, graph.h nd_scalar_power_class) computes 2, -1 and 0.5 as
 * x * x, 1 / x and sqrt(x) -- other values than pow's in the last bit, and
 * at -0.0 and -inf for 0.5; Python's and NumPy's scalar powers are pow's.
 * x: the exponent's expression (a binary operator's right operand, an
 * augmented store's value, a call's second argument). */
static void pow_line(cg *g, const char *o, int r, const nd_ln *x)
{
    const char *s = r == LT_F4 ? "f" : "";
    int bits, t = g->vec && x ? nd_lty_expr(g->T, x, g->assign, &bits) : -1;
    if (t >= 0 && !(t & (LT_VEC | LT_MAT)))
        line(g, "  %s = y_ == 2 ? x_ * x_ : y_ == -1 ? 1 / x_ : y_ == 0.5%s ? sqrt%s(x_) : pow%s(x_, y_);",
             o, s, s, s);
    else
        line(g, "  %s = pow%s(x_, y_);", o, s);
}

static int binop(cg *g, const nd_ln *e, int op, cv *a, cv *b, int r, int rbits, cv *out)
{
    int ln = e->line;
    static const char *const sym[] = {"+", "-", "*"};
    static const char *const bsym[] = {"&", "|", "^"};
    static const char *const ovf[] = {"__builtin_add_overflow", "__builtin_sub_overflow",
                                      "__builtin_mul_overflow"};
    char x[64], y[64];
    if (op >= LO_LT) return compare(g, op, a, b, r, out);
    int ta = a->t, tb = b->t;
    if (r == LT_PYINT) {
        switch (op) {
        case LO_ADD: case LO_SUB: case LO_MUL:
            if (rbits <= 62) {
                decl(g, out, r, "(int64_t)%s %s (int64_t)%s", a->s, sym[op], b->s);
            } else {
                newtmp(g, out, r);
                line(g, "int64_t %s;", out->s);
                line(g, "if (NDL_UNLIKELY(%s((int64_t)%s, (int64_t)%s, &%s)))", ovf[op], a->s, b->s, out->s);
                g->ind++; deopt(g); g->ind--;
            }
            return 0;
        case LO_FDIV: case LO_MOD:
            newtmp(g, out, r);
            line(g, "int64_t %s;", out->s);
            line(g, "if (NDL_UNLIKELY((int64_t)%s == 0)) {", b->s);
            g->ind++; slow(g, ln, op, out, a, b); g->ind--;
            line(g, "} else if (NDL_UNLIKELY((int64_t)%s == INT64_MIN && (int64_t)%s == -1))", a->s, b->s);
            g->ind++; deopt(g); g->ind--;
            line(g, "else %s = %s((int64_t)%s, (int64_t)%s);", out->s, op == LO_FDIV ? "ndl_pyfdiv" : "ndl_pymod", a->s, b->s);
            return 0;
        case LO_POW:
            newtmp(g, out, r);
            line(g, "int64_t %s = 1;", out->s);
            line(g, "if (NDL_UNLIKELY((int64_t)%s < 0)) {", b->s);
            g->ind++; slow(g, ln, op, out, a, b); g->ind--;
            line(g, "} else { int64_t b_ = (int64_t)%s, x_ = (int64_t)%s; int o_ = 0;", b->s, a->s);
            line(g, "  while (b_) { if (b_ & 1) o_ |= __builtin_mul_overflow(%s, x_, &%s); b_ >>= 1;", out->s, out->s);
            line(g, "    if (b_) o_ |= __builtin_mul_overflow(x_, x_, &x_); }");
            line(g, "  if (NDL_UNLIKELY(o_) && !(%s == 0 || %s == 1 || (%s == -1)))", a->s, a->s, a->s);
            g->ind++; deopt(g); g->ind--;
            line(g, "  if (NDL_UNLIKELY(o_)) %s = (%s == -1 && ((int64_t)%s & 1)) ? -1 : (%s == 0 ? 0 : 1); }", out->s, a->s, b->s, a->s);
            return 0;
        case LO_LSH:
            newtmp(g, out, r);
            line(g, "int64_t %s = 0;", out->s);
            line(g, "if (NDL_UNLIKELY((int64_t)%s < 0)) {", b->s);
            g->ind++; slow(g, ln, op, out, a, b); g->ind--;
            line(g, "} else if ((int64_t)%s == 0) %s = 0;", a->s, out->s);
            line(g, "else if ((int64_t)%s > 62 || (((int64_t)((uint64_t)(int64_t)%s << (int64_t)%s)) >> (int64_t)%s) != (int64_t)%s)",
                 b->s, a->s, b->s, b->s, a->s);
            g->ind++; deopt(g); g->ind--;
            line(g, "else %s = (int64_t)((uint64_t)(int64_t)%s << (int64_t)%s);", out->s, a->s, b->s);
            return 0;
        case LO_RSH:
            newtmp(g, out, r);
            line(g, "int64_t %s = 0;", out->s);
            line(g, "if (NDL_UNLIKELY((int64_t)%s < 0)) {", b->s);
            g->ind++; slow(g, ln, op, out, a, b); g->ind--;
            line(g, "} else %s = (int64_t)%s > 63 ? ((int64_t)%s < 0 ? -1 : 0) : ((int64_t)%s >> (int64_t)%s);",
                 out->s, b->s, a->s, a->s, b->s);
            return 0;
        case LO_BAND: case LO_BOR: case LO_BXOR:
            decl(g, out, r, "(int64_t)%s %s (int64_t)%s", a->s, bsym[op - LO_BAND], b->s);
            return 0;
        default:
            return no_type(g, e);
        }
    }
    if (r == LT_PYFLOAT) {
        int ints = ISINT(ta) && ISINT(tb);
        switch (op) {
        case LO_ADD: case LO_SUB: case LO_MUL:
            decl(g, out, r, "(double)%s %s (double)%s", a->s, sym[op], b->s);
            return 0;
        case LO_TDIV:
            newtmp(g, out, r);
            line(g, "double %s;", out->s);
            if (ints)
                line(g, "if (NDL_UNLIKELY((int64_t)%s == 0 || (uint64_t)(int64_t)%s + (1ull << 53) > (1ull << 54) || (uint64_t)(int64_t)%s + (1ull << 53) > (1ull << 54))) {",
                     b->s, a->s, b->s);
            else
                line(g, "if (NDL_UNLIKELY((double)%s == 0)) {", b->s);
            g->ind++; slow(g, ln, op, out, a, b); g->ind--;
            line(g, "} else %s = (double)%s / (double)%s;", out->s, a->s, b->s);
            return 0;
        case LO_FDIV: case LO_MOD:
            newtmp(g, out, r);
            line(g, "double %s;", out->s);
            line(g, "if (NDL_UNLIKELY((double)%s == 0)) {", b->s);
            g->ind++; slow(g, ln, op, out, a, b); g->ind--;
            line(g, "} else %s = %s((double)%s, (double)%s);", out->s, op == LO_FDIV ? "nd_floordiv_d" : "nd_remainder_d", a->s, b->s);
            return 0;
        case LO_POW:
            newtmp(g, out, r);
            line(g, "double %s = pow((double)%s, (double)%s);", out->s, a->s, b->s);
            line(g, "if (NDL_UNLIKELY(!(isfinite(%s) && ((double)%s > 0 || ((double)%s != 0 && (double)%s == floor((double)%s)) || ((double)%s == 0 && (double)%s > 0))))) {",
                 out->s, a->s, a->s, b->s, b->s, a->s, b->s);
            g->ind++; slow(g, ln, op, out, a, b); g->ind--;
            line(g, "}");
            return 0;
        default:
            return no_type(g, e);
        }
    }
    if (r == LT_PYBOOL || r == LT_B1) {
        if (op == LO_BAND || op == LO_BOR || op == LO_BXOR) {
            decl(g, out, r, "(uint8_t)(%s %s %s)", a->s, bsym[op - LO_BAND], b->s);
            return 0;
        }
        if (r == LT_B1 && (op == LO_ADD || op == LO_MUL)) {
            decl(g, out, r, "(uint8_t)(%s %s %s)", a->s, op == LO_ADD ? "|" : "&", b->s);
            return 0;
        }
        return no_type(g, e);
    }
    if (ISNPI(r)) {
        const char *T = ctype[r];
        /* a Python int operand must fit the NumPy type (NEP 50), or NumPy raises */
        char chk[256] = "0";
        int nchk = 0;
        const cv *ops[2] = {a, b};
        for (int k = 0; k < 2; k++)
            if (ops[k]->t == LT_PYINT) {
                nchk += snprintf(chk + (nchk ? nchk : 0), sizeof chk - (size_t)nchk, "%s%s < %s || %s > %s",
                                 nchk ? " || " : "", ops[k]->s, ISU(r) ? "0" : tmin[r], ops[k]->s,
                                 r == LT_U8 ? "INT64_MAX" : tmax[r]);
            }
        conv(g, x, sizeof x, a, r);
        conv(g, y, sizeof y, b, r);
        newtmp(g, out, r);
        line(g, "%s %s = 0;", T, out->s);
        line(g, "{ %s x_ = %s, y_ = %s; (void)x_; (void)y_;", T, x, y);
        switch (op) {
        case LO_ADD: case LO_SUB: case LO_MUL:
            if (g->vec)  /* arrays wrap silently */
                line(g, "(void)%s(x_, y_, &%s); if (NDL_UNLIKELY(%s)) {", ovf[op], out->s, chk);
            else
                line(g, "if (NDL_UNLIKELY(%s || %s(x_, y_, &%s))) {", chk, ovf[op], out->s);
            break;
        case LO_FDIV:
            if (ISU(r)) line(g, "if (NDL_UNLIKELY(%s || y_ == 0)) {", chk);
            else line(g, "if (NDL_UNLIKELY(%s || y_ == 0 || (x_ == %s && y_ == -1))) {", chk, tmin[r]);
            break;
        case LO_MOD:
            line(g, "if (NDL_UNLIKELY(%s || y_ == 0)) {", chk);
            break;
        case LO_POW:
            line(g, "if (NDL_UNLIKELY(%s%s)) {", chk, ISU(r) ? "" : " || y_ < 0");
            break;
        case LO_LSH: case LO_RSH: case LO_BAND: case LO_BOR: case LO_BXOR:
            line(g, "if (NDL_UNLIKELY(%s)) {", chk);
            break;
        default:
            return no_type(g, e);
        }
        g->ind++; slow(g, ln, op, out, a, b); g->ind--;
        line(g, "} else {");
        g->ind++;
        switch (op) {
        case LO_ADD: case LO_SUB: case LO_MUL: break;
        case LO_FDIV: line(g, "int e_ = 0; %s = nd_fdiv_%s(x_, y_, &e_); (void)e_;", out->s, sfx[r]); break;
        case LO_MOD: line(g, "int e_ = 0; %s = nd_irem_%s(x_, y_, &e_); (void)e_;", out->s, sfx[r]); break;
        case LO_POW: line(g, "int e_ = 0; %s = nd_ipow_%s(x_, y_, &e_); (void)e_;", out->s, sfx[r]); break;
        case LO_LSH: line(g, "%s = nd_lshift_%s(x_, y_);", out->s, sfx[r]); break;
        case LO_RSH: line(g, "%s = nd_rshift_%s(x_, y_);", out->s, sfx[r]); break;
        default: line(g, "%s = (%s)(x_ %s y_);", out->s, T, bsym[op - LO_BAND]); break;
        }
        g->ind--;
        line(g, "} }");
        return 0;
    }
    if (r == LT_F4 || r == LT_F8) {
        const char *T = ctype[r];
        conv(g, x, sizeof x, a, r);
        conv(g, y, sizeof y, b, r);
        newtmp(g, out, r);
        line(g, "%s %s;", T, out->s);
        line(g, "{ %s x_ = %s, y_ = %s;", T, x, y);
        switch (op) {
        case LO_ADD: case LO_SUB: case LO_MUL:
            line(g, "  %s = x_ %s y_;", out->s, sym[op]);
            break;
        case LO_TDIV: line(g, "  %s = x_ / y_;", out->s); break;
        case LO_FDIV: line(g, "  %s = nd_floordiv_%s(x_, y_);", out->s, sfx[r]); break;
        case LO_MOD: line(g, "  %s = nd_remainder_%s(x_, y_);", out->s, sfx[r]); break;
        case LO_POW:
            pow_line(g, out->s, r, e->kind == LK_BIN ? e->kid[1] : e->kind == LK_AUGSTORE ? e->kid[0] : NULL);
            break;
        default: return no_type(g, e);
        }
        if (g->vec) { line(g, "}"); return 0; }
        if (op == LO_ADD || op == LO_SUB || op == LO_MUL || op == LO_TDIV) {
            /* NumPy scalar arithmetic: an overflow, division by zero or
             * invalid result raises the hardware flag NumPy itself tests;
             * the runner tests it once after the loop and, when raised,
             * restores the arrays and Python reruns the loop (NumPy warns
             * or raises at the same iteration). No test here keeps the hot
             * path free of branches. */
            line(g, "}");
            g->fpflags = 1;
            return 0;
        }
        line(g, "  if (NDL_UNLIKELY(NDL_EDGE2(%s, x_, y_)%s)) {", out->s,
             (op == LO_FDIV || op == LO_MOD) ? " || y_ == 0" : "");
        g->ind += 2; slow(g, ln, op, out, a, b); g->ind -= 2;
        line(g, "  } }");
        return 0;
    }
    return no_type(g, e);
}

static int unop(cg *g, const nd_ln *e, cv *a, int r, cv *out)
{
    int ta = a->t, ln = e->line;
    switch (e->op) {
    case LO_NOT:
        decl(g, out, LT_PYBOOL, "(uint8_t)(%s == 0)", a->s);
        return 0;
    case LO_POS:
        decl(g, out, r, "(%s)%s", ctype[r], a->s);
        return 0;
    case LO_INV:
        if (r == LT_B1 || r == LT_PYBOOL) decl(g, out, r, "(uint8_t)!%s", a->s);
        else decl(g, out, r, "(%s)~(%s)%s", ctype[r], ctype[r], a->s);
        return 0;
    case LO_NEG:
        if (r == LT_PYINT) {
            newtmp(g, out, r);
            line(g, "int64_t %s = 0;", out->s);
            line(g, "if (NDL_UNLIKELY((int64_t)%s == INT64_MIN))", a->s);
            g->ind++; deopt(g); g->ind--;
            line(g, "else %s = -(int64_t)%s;", out->s, a->s);
            return 0;
        }
        if (ISF(r)) { decl(g, out, r, "-(%s)%s", ctype[r], a->s); return 0; }
        if (ISNPI(r) && r == ta && g->vec) {
            decl(g, out, r, "(%s)((uint64_t)0 - (uint64_t)%s)", ctype[r], a->s);
            return 0;
        }
        if (ISNPI(r) && r == ta) {
            newtmp(g, out, r);
            line(g, "%s %s = 0;", ctype[r], out->s);
            if (ISU(r)) line(g, "if (NDL_UNLIKELY(%s != 0)) {", a->s);
            else line(g, "if (NDL_UNLIKELY(%s == %s)) {", a->s, tmin[r]);
            g->ind++; slow(g, ln, LO_NEG, out, a, NULL); g->ind--;
            line(g, "} else %s = (%s)-%s;", out->s, ctype[r], a->s);
            return 0;
        }
        return no_type(g, e);
    default:
        return no_type(g, e);
    }
}

/* ------------------------------------------------------------- calls */
static const char *cfn(int fn)
{
    switch (fn) {
    case LF_M_SQRT: case LF_NP_SQRT: return "sqrt";
    case LF_M_EXP: case LF_NP_EXP: return "exp";
    case LF_M_LOG: case LF_NP_LOG: return "log";
    case LF_M_LOG10: case LF_NP_LOG10: return "log10";
    case LF_M_LOG2: case LF_NP_LOG2: return "log2";
    case LF_M_SIN: case LF_NP_SIN: return "sin";
    case LF_M_COS: case LF_NP_COS: return "cos";
    case LF_M_TAN: case LF_NP_TAN: return "tan";
    case LF_M_ATAN: case LF_NP_ARCTAN: return "atan";
    case LF_M_ASIN: case LF_NP_ARCSIN: return "asin";
    case LF_M_ACOS: case LF_NP_ARCCOS: return "acos";
    case LF_M_SINH: case LF_NP_SINH: return "sinh";
    case LF_M_COSH: case LF_NP_COSH: return "cosh";
    case LF_M_TANH: case LF_NP_TANH: return "tanh";
    case LF_M_FABS: case LF_NP_FABS: return "fabs";
    case LF_M_LOG1P: case LF_NP_LOG1P: return "log1p";
    case LF_M_EXPM1: case LF_NP_EXPM1: return "expm1";
    case LF_M_ATAN2: case LF_NP_ARCTAN2: return "atan2";
    case LF_M_HYPOT: case LF_NP_HYPOT: return "hypot";
    case LF_M_POW: case LF_NP_POWER: return "pow";
    case LF_NP_FLOOR: return "floor";
    case LF_NP_CEIL: return "ceil";
    case LF_NP_TRUNC: return "trunc";
    default: return NULL;
    }
}

static int call(cg *g, const nd_ln *e, cv *args, int r, cv *out)
{
    int fn = nd_lty_fn(g->T, e), ln = e->line, n = e->n;
    if (fn < 0) return no_type(g, e);
    cv *a = n > 0 ? &args[0] : NULL, *b = n > 1 ? &args[1] : NULL;
    int op = LO_NOPS + fn;
    const char *f = cfn(fn);
    if (fn == LF_M_ISNAN || fn == LF_M_ISINF || fn == LF_M_ISFINITE || fn == LF_NP_ISNAN ||
        fn == LF_NP_ISINF || fn == LF_NP_ISFINITE) {
        const char *w = (fn == LF_M_ISNAN || fn == LF_NP_ISNAN) ? "isnan" : (fn == LF_M_ISINF || fn == LF_NP_ISINF) ? "isinf" : "isfinite";
        if (ISF(a->t)) decl(g, out, r, "(uint8_t)(%s(%s) != 0)", w, a->s);
        else decl(g, out, r, "(uint8_t)%d", w[2] == 'f');
        return 0;
    }
    if (fn >= LF_M_SQRT && fn <= LF_M_EXPM1) {
        if (fn == LF_M_FLOOR || fn == LF_M_CEIL || fn == LF_M_TRUNC) {
            if (ISINT(a->t)) { decl(g, out, r, "(int64_t)%s", a->s); return 0; }
            newtmp(g, out, r);
            /* (one test: INT64_MIN is NaN, out of range or -2^63 itself,
             * which Python's own answer takes, see ndl_f2i) */
            line(g, "int64_t %s = ndl_f2i(%s((double)%s));", out->s,
                 fn == LF_M_FLOOR ? "floor" : fn == LF_M_CEIL ? "ceil" : "trunc", a->s);
            line(g, "if (NDL_UNLIKELY(%s == INT64_MIN)) {", out->s);
            g->ind++; slow(g, ln, op, out, a, b); g->ind--;
            line(g, "}");
            return 0;
        }
        if (!f || r != LT_PYFLOAT) return no_type(g, e);
        newtmp(g, out, r);
        if (b) {
            line(g, "double %s = %s((double)%s, (double)%s);", out->s, f, a->s, b->s);
            /* math.pow(0, -x) raises; pow() of a negative base and a
             * fractional exponent is NaN: both edges */
            line(g, "if (NDL_UNLIKELY(NDL_EDGE2(%s, (double)%s, (double)%s))) {", out->s, a->s, b->s);
        } else {
            line(g, "double %s = %s((double)%s);", out->s, f, a->s);
            if (fn == LF_M_FABS) return 0;
            line(g, "if (NDL_UNLIKELY(NDL_EDGE1(%s, (double)%s))) {", out->s, a->s);
        }
        g->ind++; slow(g, ln, op, out, a, b); g->ind--;
        line(g, "}");
        return 0;
    }
    if (fn >= LF_NP_SQRT && fn <= LF_NP_SQUARE) {
        if (ISF(r)) {
            const char *T = ctype[r], *s32 = r == LT_F4 ? "f" : "";
            char x[64], y[64];
            conv(g, x, sizeof x, a, r);
            if (b) conv(g, y, sizeof y, b, r);
            newtmp(g, out, r);
            line(g, "%s %s;", T, out->s);
            line(g, "{ %s x_ = %s, y_ = %s; (void)y_;", T, x, b ? y : "0");
            if (fn == LF_NP_ABS) line(g, "  %s = fabs%s(x_);", out->s, s32);
            else if (fn == LF_NP_SQUARE) line(g, "  %s = x_ * x_;", out->s);
            /* (where float events are tested -- element loops of array work,
             * loops whose scalar events go to the flags -- quietly: a NaN
             * operand raises no FE_INVALID, nd_loop.h; at 1.6x the compares'
             * work, so only there) */
            else if (fn == LF_NP_MINIMUM || fn == LF_NP_MAXIMUM) {
                int q = g->quiet || g->vec;
                g->fcmp = 1;
                line(g, "  %s = %s_%s(x_, y_);", out->s,
                     fn == LF_NP_MINIMUM ? (q ? "ndl_qmin" : "nd_min") : (q ? "ndl_qmax" : "nd_max"), sfx[r]);
            }
            else if (fn == LF_NP_SIGN) { line(g, "  %s = ndl_sign_%s(x_); }", out->s, s32[0] ? "f" : "d"); return 0; }
            else if (fn == LF_NP_POWER) pow_line(g, out->s, r, e->n > 1 ? e->kid[1] : NULL);
            else if (f) line(g, "  %s = %s%s(x_%s);", out->s, f, s32, b ? ", y_" : "");
            else return no_type(g, e);
            if (g->vec) { line(g, "}"); return 0; }
            if (b) line(g, "  if (NDL_UNLIKELY(NDL_EDGE2(%s, x_, y_))) {", out->s);
            else line(g, "  if (NDL_UNLIKELY(NDL_EDGE1(%s, x_))) {", out->s);
            g->ind += 2; slow(g, ln, op, out, a, b); g->ind -= 2;
            line(g, "  } }");
            return 0;
        }
        if (ISNPI(r) || r == LT_B1) {
            char x[64], y[64];
            conv(g, x, sizeof x, a, r);
            if (b) conv(g, y, sizeof y, b, r);
            switch (fn) {
            case LF_NP_ABS:
                if (ISU(r) || r == LT_B1) decl(g, out, r, "%s", x);
                else decl(g, out, r, "nd_iabs_%s(%s)", sfx[r], x);
                return 0;
            case LF_NP_FLOOR: case LF_NP_CEIL: case LF_NP_TRUNC:
                decl(g, out, r, "%s", x);
                return 0;
            case LF_NP_MINIMUM: decl(g, out, r, "(%s < %s ? %s : %s)", x, y, x, y); return 0;
            case LF_NP_MAXIMUM: decl(g, out, r, "(%s > %s ? %s : %s)", x, y, x, y); return 0;
            case LF_NP_SIGN:
                if (r == LT_B1) return no_type(g, e);
                if (ISU(r)) decl(g, out, r, "(%s)(%s != 0)", ctype[r], x);
                else decl(g, out, r, "(%s)((%s > 0) - (%s < 0))", ctype[r], x, x);
                return 0;
            case LF_NP_SQUARE:
                if (r == LT_B1) decl(g, out, r, "%s", x);
                else decl(g, out, r, "(%s)((uint64_t)%s * (uint64_t)%s)", ctype[r], x, x);
                return 0;
            case LF_NP_POWER:
                if (r == LT_B1) return no_type(g, e);
                newtmp(g, out, r);
                line(g, "%s %s = 0;", ctype[r], out->s);
                line(g, "if (NDL_UNLIKELY(%s%s)) {", ISU(r) ? "0" : y, ISU(r) ? "" : " < 0");
                g->ind++; slow(g, ln, op, out, a, b); g->ind--;
                line(g, "} else { int e_ = 0; %s = nd_ipow_%s(%s, %s, &e_); (void)e_; }", out->s, sfx[r], x, y);
                return 0;
            default:
                return no_type(g, e);
            }
        }
        return no_type(g, e);
    }
    switch (fn) {
    case LF_ABS:
        if (r == LT_PYINT) {
            newtmp(g, out, r);
            line(g, "int64_t %s = 0;", out->s);
            line(g, "if (NDL_UNLIKELY((int64_t)%s == INT64_MIN))", a->s);
            g->ind++; deopt(g); g->ind--;
            line(g, "else %s = (int64_t)%s < 0 ? -(int64_t)%s : (int64_t)%s;", out->s, a->s, a->s, a->s);
            return 0;
        }
        if (ISF(r)) { decl(g, out, r, "(%s)fabs((double)%s)", ctype[r], a->s); return 0; }
        if (r == LT_B1 || ISU(r)) { decl(g, out, r, "(%s)%s", ctype[r], a->s); return 0; }
        if (ISNPI(r)) {
            newtmp(g, out, r);
            line(g, "%s %s = 0;", ctype[r], out->s);
            line(g, "if (NDL_UNLIKELY(%s == %s)) {", a->s, tmin[r]);
            g->ind++; slow(g, ln, op, out, a, NULL); g->ind--;
            line(g, "} else %s = %s < 0 ? (%s)-%s : %s;", out->s, a->s, ctype[r], a->s, a->s);
            return 0;
        }
        return no_type(g, e);
    case LF_MIN: case LF_MAX: {
        /* Python's: the first of equal (or unordered) values */
        cv c;
        if (compare(g, fn == LF_MAX ? LO_GT : LO_LT, b, a, LT_PYBOOL, &c) < 0) return -1;
        decl(g, out, r, "%s ? %s : %s", c.s, b->s, a->s);
        return 0;
    }
    case LF_INT: case LF_ROUND:
        /* round(x): Python's int of x rounded half to even (nearbyint in
         * the default rounding mode, which raises no flag NumPy checks);
         * of an integer, int(x) */
        if (!a) { decl(g, out, r, "0"); return 0; }
        if (ISF(a->t)) {
            newtmp(g, out, r);
            /* one test, not two (histogram's int((v - lo) / width): 52 -> 47 us),
             * and on the conversion's result (see ndl_f2i): -2^63 itself,
             * NaN and the rest go to Python's int() */
            if (fn == LF_ROUND) line(g, "int64_t %s = ndl_f2i(nearbyint((double)%s));", out->s, a->s);
            else line(g, "int64_t %s = ndl_f2i((double)%s);", out->s, a->s);
            line(g, "if (NDL_UNLIKELY(%s == INT64_MIN)) {", out->s);
            g->ind++; slow(g, ln, op, out, a, NULL); g->ind--;
            line(g, "}");
            return 0;
        }
        if (a->t == LT_U8) {
            newtmp(g, out, r);
            line(g, "int64_t %s = 0;", out->s);
            line(g, "if (NDL_UNLIKELY(%s > INT64_MAX)) {", a->s);
            g->ind++; slow(g, ln, op, out, a, NULL); g->ind--;
            line(g, "} else %s = (int64_t)%s;", out->s, a->s);
            return 0;
        }
        decl(g, out, r, "(int64_t)%s", a->s);
        return 0;
    case LF_FLOAT:
        if (a) decl(g, out, r, "(double)%s", a->s);
        else decl(g, out, r, "%s", "0.0");
        return 0;
    case LF_BOOL:
        if (a) decl(g, out, r, "(uint8_t)(%s != 0)", a->s);
        else decl(g, out, r, "%s", "0");
        return 0;
    default:
        break;
    }
    if (fn >= LF_NP_CAST && fn < LF_NP_CAST + LT_N) {
        int t = fn - LF_NP_CAST;
        if (t != r) return no_type(g, e);
        if (a->t == t) { decl(g, out, r, "%s", a->s); return 0; }
        if (t == LT_B1) { decl(g, out, r, "(uint8_t)(%s != 0)", a->s); return 0; }
        newtmp(g, out, r);
        line(g, "%s %s = (%s)0;", ctype[r], out->s, ctype[r]);
        if (ISF(t)) {
            if (t == LT_F4 && ISF(a->t) && a->t != LT_F4) {
                line(g, "%s = (float)%s;", out->s, a->s);
                line(g, "if (NDL_UNLIKELY(isinf(%s) && !isinf(%s))) {", out->s, a->s);
                g->ind++; slow(g, ln, op, out, a, NULL); g->ind--;
                line(g, "}");
            } else {
                line(g, "%s = (%s)%s;", out->s, ctype[r], a->s);
            }
            return 0;
        }
        if (ISF(a->t))
            line(g, "if ((double)%s > (double)%s - 1.0 && (double)%s < (double)%s + 1.0 && (double)%s < 9223372036854775807.0) %s = (%s)%s; else {",
                 a->s, tmin[t], a->s, tmax[t], a->s, out->s, ctype[t], a->s);
        else if (a->t == LT_U8)
            line(g, "if (%s <= (uint64_t)%s) %s = (%s)%s; else {", a->s, tmax[t], out->s, ctype[t], a->s);
        else
            line(g, "if ((int64_t)%s >= (int64_t)%s && (%d || (int64_t)%s <= (int64_t)%s)) %s = (%s)%s; else {",
                 a->s, tmin[t], t == LT_U8, a->s, t == LT_U8 ? "INT64_MAX" : tmax[t], out->s, ctype[t], a->s);
        g->ind++; slow(g, ln, op, out, a, NULL); g->ind--;
        line(g, "}");
        return 0;
    }
    return no_type(g, e);
}

static int is_alocal(cg *g, int v) { return g->T->alocal ? g->T->alocal[v] : 0; }

/* an array local read before the loop gave it a value: Python's error */
static void need_set(cg *g, int v)
{
    if (is_alocal(g, v) && !(g->nohz && g->setok[v]))
        line(g, "if (NDL_UNLIKELY(!a%d_set)) { F->err_a = %d; rc = NDL_UNBOUND; goto nd_err; }", v, v);
}

/* ------------------------------------------------------- expressions */
/* index k of an element access, checked against its axis; "ix" names */
static const char *hoisted(cg *g, const nd_ln *e, const nd_ln *x);
static const char *hoisted_dir(cg *g, const nd_ln *e, const nd_ln *x, int *dir);

/* index ix of axis j of array a, wrapped and checked as NumPy does: one
 * unsigned compare on the hot path (an index in [0, n)); a negative index is
 * wrapped on the cold side, so the common in-range index pays no sign test
 * and no conditional move (histogram's counts[k] += 1: 47 -> 39 us in a C
 * harness). IndexError names the index as given, axis `axis` and the size */
static void index_check(cg *g, const char *ix, int a, int j, int axis, int ln)
{
    line(g, "if (NDL_UNLIKELY((uint64_t)%s >= (uint64_t)a%d_n%d)) {", ix, a, j);
    line(g, "  if (%s < 0 && %s >= -a%d_n%d) %s += a%d_n%d;", ix, ix, a, j, ix, a, j);
    line(g, "  else { F->err_a = %s; F->err_b = %d; F->err_c = a%d_n%d; F->err_line = %d; rc = NDL_INDEX; goto nd_err; }",
         ix, axis, a, j, ln);
    line(g, "}");
}

static int index_of(cg *g, const nd_ln *e, int first, char (*ix)[16])
{
    int a = e->var, n = e->n - first;
    need_set(g, a);
    for (int k = 0; k < n; k++) {
        cv v;
        if (expr(g, e->kid[first + k], &v) < 0) return -1;
        /* NumPy takes Python and NumPy integers as indices; bools and floats
         * mean something else (IndexError or a mask), so Python runs it.
         * Loads are refused by typing already; stores only reach here. */
        if (!(v.t == LT_PYINT || (ISNPI(v.t) && v.t != LT_U8))) {
            if (!g->T->reason)
                g->T->reason = PyUnicode_FromFormat("an index that is not an integer at line %d", e->line);
            return no_type(g, e);
        }
        snprintf(ix[k], 16, "i%d", ++g->tmp);
        line(g, "int64_t %s = (int64_t)%s;", ix[k], v.s);
        if (e->kind == LK_ELEM && e->i == 1) continue;   /* in range by construction */
        if (e->aux || k == n - 1) {
            /* chained a[i][j]: each level is checked before the next index
             * is evaluated; a[i, j]: every index first, then each axis */
            int from = e->aux ? k : 0;
            for (int j = from; j <= k; j++) {
                int dir;
                const char *hz = hoisted_dir(g, e, e->kid[first + j], &dir);
                if (hz && g->nohz && !dir) continue;
                /* one end proved: the test of the other stays (where that end
                 * is also known, say j >= 0 tested by the loop's condition,
                 * the C compiler removes it) */
                char not_hz[24] = "";
                if (hz && !g->nohz) snprintf(not_hz, sizeof not_hz, "!%s || ", hz);
                if (hz && !dir) line(g, "if (!%s) {", hz);
                else if (hz && dir < 0) line(g, "if (%s%s < 0) {", not_hz, ix[j]);
                else if (hz) line(g, "if (%s%s >= a%d_n%d) {", not_hz, ix[j], a, j);
                index_check(g, ix[j], a, j, e->aux ? 0 : j, e->line);
                if (hz) line(g, "}");
            }
        }
    }
    return 0;
}

/* ---------------------------------------------- hoisted range checks */
/* index x as `v`, `v + c` or `v - c` (c a small int constant): v, else -1 */
static int affine_index(const nd_ln *x, int64_t *c)
{
    if (x->kind == LK_VAR) { *c = 0; return x->var; }
    if (x->kind == LK_BIN && (x->op == LO_ADD || x->op == LO_SUB) && x->kid[0]->kind == LK_VAR &&
        x->kid[1]->kind == LK_CONST && x->kid[1]->aux == LT_PYINT && x->kid[1]->i > -(1ll << 40) &&
        x->kid[1]->i < (1ll << 40)) {
        *c = x->op == LO_ADD ? x->kid[1]->i : -x->kid[1]->i;
        return x->kid[0]->var;
    }
    return -1;
}

/* an element access whose indices hoisting may cover: all of an array's
 * axes, a[i, j] (not chained), of an array whose shape the loop cannot
 * change -- an argument, or a name that only ever takes whole arrays of
 * 2 or more dimensions (A, B = B, A) and is not rebound inside `loop`,
 * the loop whose checks are hoisted; first: its first index kid */
static int hoistable(cg *g, const nd_ln *e, const nd_ln *loop, int *first)
{
    int a = e->var;
    if (a < 0 || e->aux || g->T->adt[a] < 0) return 0;
    if (is_alocal(g, a) && (is_alocal(g, a) != 1 || g->T->andim[a] < 2 || !loop ||
                            nd_lir_binds(loop->body, loop->nbody, a)))
        return 0;
    if (e->kind == LK_ELEM && e->i == 0 && e->n == g->T->andim[a]) { *first = 0; return 1; }
    if ((e->kind == LK_STORE || e->kind == LK_AUGSTORE) && e->n - 1 == g->T->andim[a]) { *first = 1; return 1; }
    return 0;
}

/* a scalar local the loop does not rebind, an integer whose value is in
 * its C int64 (a Python int or an int64): an offset fixed while `loop` runs */
static int invariant_int(cg *g, int u, const nd_ln *loop)
{
    const uint32_t ok = (1u << LT_PYINT) | (1u << LT_I8);
    return u >= 0 && g->T->adt[u] < 0 && !is_alocal(g, u) && g->T->vset[u] && !(g->T->vset[u] & ~ok) &&
           !(g->ir->vflags[u] & VF_HIDDEN) && !nd_lir_binds(loop->body, loop->nbody, u);
}

/* index x as v + c (affine_index), or v + u / u + v / v - u with u an
 * invariant_int of loop (the inner loop of a window, a[i + k]): 1 and
 * *c, *w (-1: none), *ws (the sign of u) */
static int index_of_var(cg *g, const nd_ln *x, int v, const nd_ln *loop, int64_t *c, int *w, int *ws)
{
    *w = -1;
    *ws = 1;
    if (affine_index(x, c) == v) return 1;
    *c = 0;
    if (x->kind != LK_BIN || (x->op != LO_ADD && x->op != LO_SUB) || x->kid[0]->kind != LK_VAR ||
        x->kid[1]->kind != LK_VAR)
        return 0;
    int p = x->kid[0]->var, q = x->kid[1]->var;
    if (p == v && q != v && invariant_int(g, q, loop)) { *w = q; *ws = x->op == LO_ADD ? 1 : -1; return 1; }
    if (q == v && p != v && x->op == LO_ADD && invariant_int(g, p, loop)) { *w = p; return 1; }
    return 0;
}

typedef struct { int a, axis; int64_t c; int w, ws; } htrip;
typedef struct { htrip t[32]; int n, full; } hset;

static void hscan_expr(cg *g, const nd_ln *e, const nd_ln *loop, int v, hset *h)
{
    if (!e) return;
    int first;
    if (hoistable(g, e, loop, &first))
        for (int j = first; j < e->n; j++) {
            int64_t c;
            int w, ws;
            if (!index_of_var(g, e->kid[j], v, loop, &c, &w, &ws)) continue;
            int dup = 0;
            for (int k = 0; k < h->n; k++)
                dup |= h->t[k].a == e->var && h->t[k].axis == j - first && h->t[k].c == c && h->t[k].w == w &&
                       h->t[k].ws == ws;
            if (dup) continue;
            if (h->n == 32) { h->full = 1; return; }
            h->t[h->n++] = (htrip){e->var, j - first, c, w, ws};
        }
    for (int k = 0; k < e->n; k++) hscan_expr(g, e->kid[k], loop, v, h);
}

static void hscan(cg *g, nd_ln *const *b, int n, const nd_ln *loop, int v, hset *h)
{
    for (int k = 0; k < n; k++) {
        hscan_expr(g, b[k], loop, v, h);
        hscan(g, b[k]->body, b[k]->nbody, loop, v, h);
        hscan(g, b[k]->orelse, b[k]->norelse, loop, v, h);
    }
}

/* a range argument of an inner loop that loop o leaves unchanged: int
 * constants and invariant_ints of o other than o's own variables, under
 * + and - (w + 3, w - 1, -1) */
static int pre_arg_ok(cg *g, const nd_ln *e, const nd_ln *o, int depth)
{
    if (depth > 4) return 0;
    if (e->kind == LK_CONST) return e->aux == LT_PYINT && e->i != INT64_MIN;
    if (e->kind == LK_VAR) return e->var != o->var && e->var != o->i - 1 && invariant_int(g, e->var, o);
    if (e->kind == LK_UN) return e->op == LO_NEG && pre_arg_ok(g, e->kid[0], o, depth + 1);
    if (e->kind == LK_BIN)
        return (e->op == LO_ADD || e->op == LO_SUB) && pre_arg_ok(g, e->kid[0], o, depth + 1) &&
               pre_arg_ok(g, e->kid[1], o, depth + 1);
    return 0;
}

/* its value in int64 into buf; what it needs (the locals' tags, no
 * overflow: Python's int is exact, so a sum past int64 proves nothing)
 * and-ed into ok_ */
static void pre_arg(cg *g, const nd_ln *e, char *buf, size_t cap)
{
    if (e->kind == LK_CONST) { snprintf(buf, cap, "%lldll", (long long)e->i); return; }
    if (e->kind == LK_VAR) {
        line(g, "ok_ &= v%d_t == LT_PYINT || v%d_t == LT_I8;", e->var, e->var);
        snprintf(buf, cap, "v%d_%d", e->var, REP(LT_PYINT));
        return;
    }
    char x[32], y[32] = "0ll";
    pre_arg(g, e->kid[0], x, sizeof x);
    if (e->kind == LK_BIN) pre_arg(g, e->kid[1], y, sizeof y);
    int t = ++g->tmp;
    if (e->kind == LK_UN)
        line(g, "int64_t e%d_; ok_ &= !__builtin_sub_overflow(0ll, %s, &e%d_);", t, x, t);
    else
        line(g, "int64_t e%d_; ok_ &= !__builtin_%s_overflow(%s, %s, &e%d_);", t, e->op == LO_ADD ? "add" : "sub",
             x, y, t);
    snprintf(buf, cap, "e%d_", t);
}

/* The range checks of an inner for loop (a[u + k], u the variable of the
 * enclosing for loop o, k the inner one) were proved at each entry of the
 * inner loop, once per iteration of o: GCC keeps that work in o's body
 * (a window's max over 5000 rows of 9: 23.4 -> 19.1 us in a C harness,
 * best of 3000). Where the inner loop's range is the same in every
 * iteration of o (constants and locals o does not rebind) and o does not
 * rebind u, the proof for every value u takes is made once before o; the
 * inner loop proves its own range at entry only where that one failed.
 * Emits the flags of the inner loops of o's body (nested in ifs, not in
 * other loops) and records them (g->ploop, g->pz). */
static int pre_prove(cg *g, nd_ln *const *b, int n, const nd_ln *o, int oid, char (*on)[16])
{
    for (int k = 0; k < n; k++) {
        const nd_ln *s = b[k];
        if (s->kind == LK_IF) {
            if (pre_prove(g, s->body, s->nbody, o, oid, on) < 0 ||
                pre_prove(g, s->orelse, s->norelse, o, oid, on) < 0)
                return -1;
            continue;
        }
        if (s->kind != LK_FOR || s->n != 3 || g->npz == 16 || nd_lir_binds(s->body, s->nbody, s->var)) continue;
        int ok = 1;
        for (int j = 0; j < 3 && ok; j++) ok = pre_arg_ok(g, s->kid[j], o, 0);
        if (!ok) continue;
        hset *h = PyMem_Calloc(1, sizeof(hset));
        if (!h) { PyErr_NoMemory(); g->fail = -1; return -1; }
        hscan(g, s->body, s->nbody, s, s->var, h);
        ok = h->n && !h->full;
        for (int j = 0; ok && j < h->n; j++) {
            const htrip *q = &h->t[j];
            ok = !is_alocal(g, q->a) &&
                 (q->w < 0 || q->w == o->var ||
                  (q->w != o->i - 1 && invariant_int(g, q->w, o)));
        }
        if (!ok) { PyMem_Free(h); continue; }
        int id = ++g->tmp;
        snprintf(g->pz[g->npz], sizeof g->pz[0], "pz%d", id);
        g->ploop[g->npz++] = s;
        line(g, "int pz%d = 0, pf%d = 0;", id, id);
        line(g, "if (n%d) {", oid);
        g->ind++;
        line(g, "int ok_ = 1;");
        char a[3][32];
        for (int j = 0; j < 3; j++) pre_arg(g, s->kid[j], a[j], sizeof a[j]);
        line(g, "const int64_t b0_ = %s, b1_ = %s, b2_ = %s;", a[0], a[1], a[2]);
        line(g, "uint64_t m_ = b2_ > 0 ? (b1_ > b0_ ? ((uint64_t)b1_ - (uint64_t)b0_ - 1) / (uint64_t)b2_ + 1 : 0)");
        line(g, "           : b2_ < 0 ? (b0_ > b1_ ? ((uint64_t)b0_ - (uint64_t)b1_ - 1) / ((uint64_t)0 - (uint64_t)b2_) + 1 : 0) : 0;");
        line(g, "pz%d = ok_;", id);
        line(g, "if (ok_ && m_) {");
        g->ind++;
        line(g, "int64_t f_ = b0_, l_ = (int64_t)((uint64_t)b0_ + (m_ - 1) * (uint64_t)b2_);");
        line(g, "int64_t mn_ = f_ < l_ ? f_ : l_, mx_ = f_ < l_ ? l_ : f_;");
        line(g, "int64_t of_ = %s, ol_ = (int64_t)((uint64_t)%s + (n%d - 1) * (uint64_t)%s);", on[0], on[0], oid,
             on[2]);
        line(g, "int64_t omn_ = of_ < ol_ ? of_ : ol_, omx_ = of_ < ol_ ? ol_ : of_;");
        for (int j = 0; j < h->n; j++) {
            const htrip *q = &h->t[j];
            if (q->w < 0) {
                line(g, "pz%d &= mn_ >= %lldll && mx_ < a%d_n%d - %lldll;", id, -(long long)q->c, q->a, q->axis,
                     (long long)q->c);
                continue;
            }
            const char *bop = q->ws > 0 ? "add" : "sub";
            char lo[32], hi[32], tt[64];
            /* o's variable is a Python int in o's body (unbound before it:
             * no tag test); k - u is least at u's largest value */
            if (q->w == o->var) {
                snprintf(lo, sizeof lo, "%s", q->ws > 0 ? "omn_" : "omx_");
                snprintf(hi, sizeof hi, "%s", q->ws > 0 ? "omx_" : "omn_");
                snprintf(tt, sizeof tt, "1");
            } else {
                snprintf(lo, sizeof lo, "v%d_%d", q->w, REP(LT_PYINT));
                snprintf(hi, sizeof hi, "v%d_%d", q->w, REP(LT_PYINT));
                snprintf(tt, sizeof tt, "(v%d_t == LT_PYINT || v%d_t == LT_I8)", q->w, q->w);
            }
            line(g, "{ int64_t lo_, hi_; pz%d &= %s && "
                    "!__builtin_%s_overflow(mn_, %s, &lo_) && lo_ >= 0 && "
                    "!__builtin_%s_overflow(mx_, %s, &hi_) && hi_ < a%d_n%d; }",
                 id, tt, bop, lo, bop, hi, q->a, q->axis);
        }
        g->ind--;
        line(g, "}");
        /* the inner loop's unchecked copy runs at each entry (its own
         * conditions, LK_FOR: at most 2^16 iterations, (n - 1) * step in
         * int64): its range is the same at every entry */
        line(g, "int64_t t_; pf%d = pz%d && m_ <= 65536u && !__builtin_mul_overflow((int64_t)m_ - 1, b2_, &t_);", id,
             id);
        g->ind--;
        line(g, "}");
        PyMem_Free(h);
    }
    return 0;
}

/* the flag of pre_prove() for inner loop s, or NULL */
static const char *pre_proved(const cg *g, const nd_ln *s)
{
    for (int k = g->npz - 1; k >= 0; k--)
        if (g->ploop[k] == s) return g->pz[k];
    return NULL;
}

/* the flag proving index kid x of access e in range, or NULL; *dir: which
 * ends it proves (hdir) */
static const char *hoisted_dir(cg *g, const nd_ln *e, const nd_ln *x, int *dir)
{
    int first, w, ws;
    int64_t c;
    *dir = 0;
    for (int k = g->nh - 1; k >= 0; k--)
        if (index_of_var(g, x, g->hvar[k], g->hloop[k], &c, &w, &ws)) {
            *dir = g->hdir[k];
            return hoistable(g, e, g->hloop[k], &first) ? g->hz[k] : NULL;
        }
    return NULL;
}

/* the flag proving index kid x of access e in range at both ends, or NULL */
static const char *hoisted(cg *g, const nd_ln *e, const nd_ln *x)
{
    int dir;
    const char *hz = hoisted_dir(g, e, x, &dir);
    return dir ? NULL : hz;
}

static void address(cg *g, const nd_ln *e, int n, char (*ix)[16], char *out, size_t cap)
{
    int a = e->var;
    int k = snprintf(out, cap, "(a%d", a);
    for (int j = 0; j < n; j++)
        if (g->unit && g->setok[a] && j == n - 1 && n == g->T->andim[a])
            k += snprintf(out + k, cap - (size_t)k, " + %s * (int64_t)sizeof(%s)", ix[j], ctype[g->T->adt[a]]);
        else
            k += snprintf(out + k, cap - (size_t)k, " + %s * a%d_s%d", ix[j], a, j);
    snprintf(out + k, cap - (size_t)k, ")");
}

/* ------------------------------------------------- 1-D array values */
static int reduction(cg *g, const nd_ln *e, int r, cv *out);

static int vslot_of(const vctx *vc, const nd_ln *e)
{
    for (int k = 0; k < vc->n; k++) if (vc->slot[k].e == e) return k;
    return -1;
}

static int vnew_slot(cg *g, vctx *vc, const nd_ln *e)
{
    if (vc->n == VSLOTS) {
        if (!g->T->reason) g->T->reason = PyUnicode_FromFormat("an array expression too large at line %d", e->line);
        return -1;
    }
    vc->slot[vc->n].e = e;
    vc->slot[vc->n].slice = 0;
    return vc->n++;
}

/* a length of this vector: the first sets it, the others must agree */
static void vlength(cg *g, vctx *vc, const char *n)
{
    if (vc->prov[0]) {
        line(g, "%s = %s;", vc->len, n);
        vc->prov[0] = 0;
        return;
    }
    if (!vc->havelen) {
        snprintf(vc->len, sizeof vc->len, "L%d", ++g->tmp);
        line(g, "const int64_t %s = %s;", vc->len, n);
        snprintf(vc->size, sizeof vc->size, "%s", vc->len);
        vc->havelen = 1;
        return;
    }
    line(g, "if (NDL_UNLIKELY(%s != %s))", n, vc->len);
    g->ind++; deopt(g); g->ind--;
}

/* axis 1 of a 2-D expression has length n (bc: a broadcast 1, x[:, None]:
 * any length fits); axis 0 goes through vlength */
static void vaxis1(cg *g, vctx *vc, const char *n, int bc)
{
    if (bc) {
        if (!vc->len2[0]) {
            snprintf(vc->len2, sizeof vc->len2, "L%d", ++g->tmp);
            line(g, "int64_t %s = 1;", vc->len2);
            vc->prov[1] = 1;
        }
        return;
    }
    if (!vc->len2[0]) {
        snprintf(vc->len2, sizeof vc->len2, "L%d", ++g->tmp);
        line(g, "const int64_t %s = %s;", vc->len2, n);
    } else if (vc->prov[1]) {
        line(g, "%s = %s;", vc->len2, n);
        vc->prov[1] = 0;
    } else {
        line(g, "if (NDL_UNLIKELY(%s != %s))", n, vc->len2);
        g->ind++; deopt(g); g->ind--;
    }
}

/* Python's slice bound: None, negative from the end, clipped to [0, n] */
static int vbound(cg *g, const nd_ln *b, const char *n, const char *dflt, char *out)
{
    snprintf(out, 16, "b%d", ++g->tmp);
    if (!b) { line(g, "int64_t %s = %s;", out, dflt); return 0; }
    cv v;
    if (expr(g, b, &v) < 0) return -1;
    if (!(v.t == LT_PYINT || (ISNPI(v.t) && v.t != LT_U8))) return no_type(g, b);
    line(g, "int64_t %s = (int64_t)%s;", out, v.s);
    line(g, "if (%s < 0) { %s += %s; if (%s < 0) %s = 0; } else if (%s > %s) %s = %s;",
         out, out, n, out, out, out, n, out, n);
    return 0;
}

/* the part of array a that subscript e selects, with nv (1 or 2) axes left:
 * its address p, and per axis left its byte stride and length (names) */
static int vpart(cg *g, const nd_ln *e, int nv, char *p, char (*st)[16], char (*len)[16])
{
    int a = e->var, nd = g->T->andim[a], got = 0;
    char off[900] = "0";
    need_set(g, a);
    for (int j = 0; j < nd; j++) {
        const nd_ln *x = j < e->n ? e->kid[j] : NULL;
        if (x && x->kind == LK_SL && x->kid[2]) {
            /* lo:hi:step, Python's slice arithmetic */
            char bnd[3][16];
            if (got == nv) return no_type(g, e);
            for (int q = 0; q < 3; q++) {
                snprintf(bnd[q], 16, "b%d", ++g->tmp);
                if (!x->kid[q]) { line(g, "int64_t %s = 0;", bnd[q]); continue; }
                cv v;
                if (expr(g, x->kid[q], &v) < 0) return -1;
                if (!(v.t == LT_PYINT || (ISNPI(v.t) && v.t != LT_U8))) return no_type(g, x->kid[q]);
                line(g, "int64_t %s = (int64_t)%s;", bnd[q], v.s);
            }
            char lo[16];
            snprintf(lo, 16, "b%d", ++g->tmp);
            snprintf(len[got], 16, "n%d", ++g->tmp);
            line(g, "int64_t %s, %s;", lo, len[got]);
            const nd_ln *sk = x->kid[2];
            if (sk->kind == LK_CONST && sk->aux == LT_PYINT && sk->i != 0) {
                line(g, "(void)ndl_slice(a%d_n%d, %d, %s, %d, %s, %s, &%s, &%s);", a, j, x->kid[0] != NULL, bnd[0],
                     x->kid[1] != NULL, bnd[1], bnd[2], lo, len[got]);
            } else {   /* a zero step: Python's ValueError */
                line(g, "if (NDL_UNLIKELY(ndl_slice(a%d_n%d, %d, %s, %d, %s, %s, &%s, &%s)))", a, j, x->kid[0] != NULL,
                     bnd[0], x->kid[1] != NULL, bnd[1], bnd[2], lo, len[got]);
                g->ind++; deopt(g); g->ind--;
            }
            size_t used = strlen(off);
            snprintf(off + used, sizeof off - used, " + %s * a%d_s%d", lo, a, j);
            snprintf(st[got], 16, "s%d", ++g->tmp);
            line(g, "const int64_t %s = %s * a%d_s%d;", st[got], bnd[2], a, j);
            got++;
            continue;
        }
        if (!x || x->kind == LK_SL) {
            char dim[32], lo[16], hi[16];
            if (got == nv) return no_type(g, e);
            snprintf(dim, sizeof dim, "a%d_n%d", a, j);
            if (vbound(g, x ? x->kid[0] : NULL, dim, "0", lo) < 0 || vbound(g, x ? x->kid[1] : NULL, dim, dim, hi) < 0)
                return -1;
            size_t used = strlen(off);
            snprintf(off + used, sizeof off - used, " + %s * a%d_s%d", lo, a, j);
            snprintf(st[got], 16, "s%d", ++g->tmp);
            line(g, "const int64_t %s = a%d_s%d;", st[got], a, j);
            snprintf(len[got], 16, "n%d", ++g->tmp);
            line(g, "const int64_t %s = %s > %s ? %s - %s : 0;", len[got], hi, lo, hi, lo);
            got++;
            continue;
        }
        cv v;
        if (expr(g, x, &v) < 0) return -1;
        if (!(v.t == LT_PYINT || (ISNPI(v.t) && v.t != LT_U8))) return no_type(g, x);
        char ix[16];
        snprintf(ix, sizeof ix, "i%d", ++g->tmp);
        line(g, "int64_t %s = (int64_t)%s;", ix, v.s);
        /* chained a[i][j][lo:hi] (aux 1; 2 is A[i, :, lo:hi].T): each
         * level's IndexError names axis 0 */
        index_check(g, ix, a, j, e->aux == 1 ? 0 : j, e->line);
        size_t used = strlen(off);
        snprintf(off + used, sizeof off - used, " + %s * a%d_s%d", ix, a, j);
    }
    if (e->kind == LK_SLICE && e->aux >= 3 && got == 1 && nv == 2) {
        /* x[:, None] / x[None, :]: the new axis has length 1, stride 0 */
        int nx = e->aux == 3 ? 1 : 0;
        if (nx == 0) { memcpy(st[1], st[0], 16); memcpy(len[1], len[0], 16); }
        snprintf(st[nx], 16, "0");
        snprintf(len[nx], 16, "1");
        got = 2;
    }
    if (got != nv) return no_type(g, e);
    if (e->kind == LK_SLICE && e->aux == 2 && nv == 2) {
        /* X.T: the same memory, its two axes swapped */
        char t[16];
        memcpy(t, st[0], 16); memcpy(st[0], st[1], 16); memcpy(st[1], t, 16);
        memcpy(t, len[0], 16); memcpy(len[0], len[1], 16); memcpy(len[1], t, 16);
    }
    snprintf(p, 16, "p%d", ++g->tmp);
    line(g, "const char *%s = a%d + %s;", p, a, off);
    return 0;
}

/* a 1-D or 2-D slice (LK_SLICE, or LK_ELEM short of the array's ndim) into
 * a slot; a vector expression is all 1-D or all 2-D (typing) */
static int vslice(cg *g, vctx *vc, const nd_ln *e)
{
    int bits, t = nd_lty_expr(g->T, e, g->assign, &bits), nv = t >= 0 && (t & LT_MAT) ? 2 : 1;
    if (vc->nd && vc->nd != nv) return no_type(g, e);
    int sl = vnew_slot(g, vc, e);
    if (sl < 0) return no_type(g, e);
    char st[2][16], len[2][16];
    if (vpart(g, e, nv, vc->slot[sl].p, st, len) < 0) return -1;
    memcpy(vc->slot[sl].st, st[0], 16);
    if (nv == 2) memcpy(vc->slot[sl].st2, st[1], 16);
    if (!vc->havelen) vc->nd = nv;
    /* the axis a new axis (x[:, None]) broadcasts along: any length */
    int bx = e->kind == LK_SLICE && e->aux >= 3 ? (e->aux == 3 ? 1 : 0) : -1;
    if (bx == 0 && !vc->havelen) {
        snprintf(vc->len, sizeof vc->len, "L%d", ++g->tmp);
        line(g, "int64_t %s = 1;", vc->len);
        vc->havelen = 1;
        vc->prov[0] = 1;
    } else if (bx != 0) {
        vlength(g, vc, len[0]);
    }
    if (nv == 2) {
        vaxis1(g, vc, len[1], bx == 1);
        snprintf(vc->size, sizeof vc->size, "(%s * %s)", vc->len, vc->len2);
    } else {
        snprintf(vc->size, sizeof vc->size, "%s", vc->len);
    }
    vc->slot[sl].slice = 1;
    return 0;
}

static int vprep(cg *g, vctx *vc, const nd_ln *e);
static int velem(cg *g, vctx *vc, const nd_ln *e, cv *out);
static void vloop_open(cg *g, vctx *vc);
static void vloop_close(cg *g, vctx *vc);
static void flags_clear(cg *g);
static void flags_check(cg *g);
static int scratch(cg *g, const nd_ln *e, const char *ct, const char *n, char *name);

/* A float product M @ v / v @ M of one type, whole, into a buffer (slot
 * w2) before the element loop.  Summed along a contiguous axis, each
 * element is a dot product (ndl_dotrow's partial sums); summed along a
 * strided axis (v @ M of a C-ordered M, BLAS's transposed gemv), by rows:
 * out += v[j] * M[j, :], so the inner loop walks M's rows contiguously and
 * vectorizes where an element at a time strides down a column.  Each
 * element still sums j = 0, 1, ... from +0.0 in order, as the strided dot
 * did: the same bits. */
static int vmatvec_rows(cg *g, vctx *vc, int sl, const nd_ln *e, const nd_ln *M, const char *n)
{
    int bits, r = nd_lty_expr(g->T, e, g->assign, &bits) & ~(LT_VEC | LT_MAT);
    int dm = nd_lty_expr(g->T, M, g->assign, &bits) & ~LT_MAT;
    if (!((r == LT_F8 || r == LT_F4) && dm == r && vc->slot[sl].te == r)) return 0;
    const char *T = ctype[r], *p = vc->slot[sl].p, *st = vc->slot[sl].st, *st2 = vc->slot[sl].st2,
               *n2 = vc->slot[sl].n2, *w = vc->slot[sl].w;
    char *o = vc->slot[sl].w2;
    if (scratch(g, e, T, n, o) < 0) return -1;
    vc->slot[sl].te2 = r;
    int q = ++g->tmp;
    flags_clear(g);
    line(g, "if (%s == (int64_t)sizeof(%s) || %s == 1) {", st2, T, n);
    g->ind++;
    line(g, "for (int64_t k%d = 0; k%d < %s; k%d++)", q, q, n, q);
    line(g, "    %s[k%d] = ndl_dotrow_%s(%s + k%d * %s, %s, %s, %s);", o, q, r == LT_F8 ? "d" : "f", p, q, st,
         st2, w, n2);
    g->ind--;
    line(g, "} else {");
    g->ind++;
    line(g, "for (int64_t k%d = 0; k%d < %s; k%d++) %s[k%d] = 0;", q, q, n, q, o, q);
    line(g, "for (int64_t j%d = 0; j%d < %s; j%d++) {", q, q, n2, q);
    g->ind++;
    line(g, "const %s v%d = %s[j%d];", T, q, w, q);
    line(g, "const char *r%d = %s + j%d * %s;", q, p, q, st2);
    line(g, "if (%s == (int64_t)sizeof(%s))", st, T);
    line(g, "    for (int64_t k%d = 0; k%d < %s; k%d++) %s[k%d] += ((const %s *)r%d)[k%d] * v%d;", q, q, n, q, o, q,
         T, q, q, q);
    line(g, "else");
    line(g, "    for (int64_t k%d = 0; k%d < %s; k%d++) %s[k%d] += *(const %s *)(r%d + k%d * %s) * v%d;", q, q, n,
         q, o, q, T, q, q, st, q);
    g->ind--;
    line(g, "}");
    g->ind--;
    line(g, "}");
    flags_check(g);
    return 0;
}

/* M @ v, v @ M (np.dot, np.matmul) with M 2-D: v is computed into a buffer
 * first; element k of the result is then a dot product along M's other
 * axis (BLAS's gemv sums in another order: the last bits may differ) */
static int vmatvec(cg *g, vctx *vc, const nd_ln *e)
{
    int sl = vnew_slot(g, vc, e), bits;
    if (sl < 0) return no_type(g, e);
    int m = (nd_lty_expr(g->T, e->kid[0], g->assign, &bits) & LT_MAT) ? 0 : 1;
    const nd_ln *M = e->kid[m], *v = e->kid[1 - m];
    if (M->kind != LK_SLICE && M->kind != LK_ELEM && M->kind != LK_VAR) return no_type(g, e);
    int tv = nd_lty_expr(g->T, v, g->assign, &bits);
    if (tv < 0 || !(tv & LT_VEC)) return no_type(g, e);
    tv &= ~LT_VEC;
    vctx *iv = PyMem_Calloc(1, sizeof(vctx));
    if (!iv) { PyErr_NoMemory(); g->fail = -1; return -1; }
    int rc = -1;
    char st[2][16], len[2][16];
    /* Python evaluates the left operand first */
    if (m == 0 && vpart(g, M, 2, vc->slot[sl].p, st, len) < 0) goto done;
    if (vprep(g, iv, v) < 0) goto done;
    if (m == 1 && vpart(g, M, 2, vc->slot[sl].p, st, len) < 0) goto done;
    /* M @ v sums over M's axis 1, v @ M over its axis 0 */
    int ks = m == 0 ? 0 : 1, js = 1 - ks;
    line(g, "if (NDL_UNLIKELY(%s != %s))", iv->len, len[js]);
    g->ind++; deopt(g); g->ind--;
    vc->slot[sl].te = tv;
    if (scratch(g, e, ctype[tv], iv->len, vc->slot[sl].w) < 0) goto done;
    if (ISF(tv)) flags_clear(g);
    vloop_open(g, iv);
    cv x;
    if (velem(g, iv, v, &x) < 0) goto done;
    line(g, "%s[%s] = %s;", vc->slot[sl].w, iv->k, x.s);
    vloop_close(g, iv);
    if (ISF(tv)) flags_check(g);
    memcpy(vc->slot[sl].st, st[ks], 16);
    memcpy(vc->slot[sl].st2, st[js], 16);
    memcpy(vc->slot[sl].n2, len[js], 16);
    vc->slot[sl].w2[0] = 0;
    if (vmatvec_rows(g, vc, sl, e, M, len[ks]) < 0) goto done;
    vlength(g, vc, len[ks]);
    vc->slot[sl].slice = 2;
    rc = 0;
done:
    PyMem_Free(iv);
    return rc;
}

/* A 2-D @ 2-D product (np.dot, np.matmul, @ of 2-D operands): each
 * operand a 2-D part read where it lies (X, A[i0:i1, :], X.T), or computed
 * into a buffer first (another product, elementwise work), Python's order:
 * the left one first. The product goes whole into a C-ordered buffer of
 * NumPy's result type before the expression's element loop reads it (a
 * store into an operand then reads it as NumPy's temporary holds it).
 * Floats sum k = 0, 1, ... in order (BLAS's order differs in the last
 * bits) and float events deoptimize, so NumPy reruns the loop; integers
 * wrap as NumPy's; bool products (an or of ands) are left to NumPy. */
static int vmatmat_into(cg *g, const nd_ln *e, char *w, char *n, char *m);
static int vinv_into(cg *g, const nd_ln *e, char *w, char *n);

static int vmat_operand(cg *g, const nd_ln *e, char *p, char (*st)[16], char (*len)[16])
{
    int bits, t = nd_lty_expr(g->T, e, g->assign, &bits);
    if (t < 0 || !(t & LT_MAT)) return no_type(g, e);
    t &= ~LT_MAT;
    if (e->kind == LK_VAR || e->kind == LK_SLICE || e->kind == LK_ELEM) return vpart(g, e, 2, p, st, len);
    char w[16];
    if (e->kind == LK_CALL && (e->aux == LF_NP_DOT || e->aux == LF_NP_MATMUL)) {
        if (vmatmat_into(g, e, w, len[0], len[1]) < 0) return -1;
    } else if (e->kind == LK_CALL && e->aux == LF_NP_INV) {
        if (vinv_into(g, e, w, len[0]) < 0) return -1;
        memcpy(len[1], len[0], 16);
    } else {
        vctx *iv = PyMem_Calloc(1, sizeof(vctx));
        if (!iv) { PyErr_NoMemory(); g->fail = -1; return -1; }
        int rc = -1;
        if (vprep(g, iv, e) < 0) goto out;
        if (!iv->havelen || iv->nd != 2) { rc = no_type(g, e); goto out; }
        if (scratch(g, e, ctype[t], iv->size, w) < 0) goto out;
        if (ISF(t)) flags_clear(g);
        vloop_open(g, iv);
        cv x;
        if (velem(g, iv, e, &x) < 0) goto out;
        line(g, "%s[%s] = %s;", w, iv->flat, x.s);
        vloop_close(g, iv);
        if (ISF(t)) flags_check(g);
        memcpy(len[0], iv->len, 16);
        memcpy(len[1], iv->len2, 16);
        rc = 0;
    out:
        PyMem_Free(iv);
        if (rc < 0) return rc;
    }
    snprintf(p, 16, "p%d", ++g->tmp);
    line(g, "const char *%s = (const char *)%s;", p, w);
    snprintf(st[0], 16, "s%d", ++g->tmp);
    line(g, "const int64_t %s = %s * (int64_t)sizeof(%s);", st[0], len[1], ctype[t]);
    snprintf(st[1], 16, "s%d", ++g->tmp);
    line(g, "const int64_t %s = (int64_t)sizeof(%s);", st[1], ctype[t]);
    return 0;
}

static int vmatmat_into(cg *g, const nd_ln *e, char *w, char *n, char *m)
{
    int bits, r = nd_lty_expr(g->T, e, g->assign, &bits);
    if (r < 0 || !(r & LT_MAT) || e->n != 2) return no_type(g, e);
    r &= ~LT_MAT;
    int ta = nd_lty_expr(g->T, e->kid[0], g->assign, &bits) & ~LT_MAT;
    int tb = nd_lty_expr(g->T, e->kid[1], g->assign, &bits) & ~LT_MAT;
    if (r == LT_B1) {
        if (!g->T->reason) g->T->reason = PyUnicode_FromFormat("a product of bool matrices at line %d", e->line);
        return no_type(g, e);
    }
    char pa[16], pb[16], sa[2][16], sb[2][16], la[2][16], lb[2][16];
    if (vmat_operand(g, e->kid[0], pa, sa, la) < 0 || vmat_operand(g, e->kid[1], pb, sb, lb) < 0) return -1;
    /* (n, k) @ (k, m); another k: NumPy's ValueError, from Python */
    line(g, "if (NDL_UNLIKELY(%s != %s))", la[1], lb[0]);
    g->ind++; deopt(g); g->ind--;
    const char *R = ctype[r];
    snprintf(n, 16, "%s", la[0]);
    snprintf(m, 16, "%s", lb[1]);
    char size[48];
    snprintf(size, sizeof size, "(%s * %s)", n, m);
    if (scratch(g, e, R, size, w) < 0) return -1;
    int q = ++g->tmp;
    char A[160], B[160];
    snprintf(A, sizeof A, "(%s)*(const %s *)(%s + i%d * %s + l%d * %s)", R, ctype[ta], pa, q, sa[0], q, sa[1]);
    snprintf(B, sizeof B, "(%s)*(const %s *)(%s + l%d * %s + j%d * %s)", R, ctype[tb], pb, q, sb[0], q, sb[1]);
    if (ISF(r)) {
        /* row i of the result += A[i, l] * row l of B: contiguous rows */
        flags_clear(g);
        line(g, "for (int64_t i%d = 0; i%d < %s; i%d++) {", q, q, n, q);
        line(g, "  %s *o_ = %s + i%d * %s;", R, w, q, m);
        line(g, "  for (int64_t j%d = 0; j%d < %s; j%d++) o_[j%d] = 0;", q, q, m, q, q);
        line(g, "  for (int64_t l%d = 0; l%d < %s; l%d++) {", q, q, la[1], q);
        line(g, "    const %s x_ = %s;", R, A);
        line(g, "    for (int64_t j%d = 0; j%d < %s; j%d++) o_[j%d] += x_ * %s;", q, q, m, q, q, B);
        line(g, "  }");
        line(g, "}");
        flags_check(g);
    } else {
        line(g, "for (int64_t i%d = 0; i%d < %s; i%d++)", q, q, n, q);
        line(g, "  for (int64_t j%d = 0; j%d < %s; j%d++) {", q, q, m, q);
        line(g, "    uint64_t acc_ = 0;");
        line(g, "    for (int64_t l%d = 0; l%d < %s; l%d++) acc_ += (uint64_t)%s * (uint64_t)%s;", q, q, la[1], q, A, B);
        line(g, "    %s[i%d * %s + j%d] = (%s)acc_;", w, q, m, q, R);
        line(g, "  }");
    }
    return 0;
}

/* np.linalg.inv(M), M square float32/float64 (typing), into a C-ordered
 * buffer of M's type (ndl_inv_*): a singular matrix (NumPy's LinAlgError),
 * one that is not square, one holding a NaN or an infinity, and float
 * events leave the loop to NumPy */
static int vinv_into(cg *g, const nd_ln *e, char *w, char *n)
{
    int bits, r = nd_lty_expr(g->T, e, g->assign, &bits);
    if (r < 0 || !(r & LT_MAT) || e->n != 1) return no_type(g, e);
    r &= ~LT_MAT;
    char pa[16], sa[2][16], la[2][16], wk[16];
    if (vmat_operand(g, e->kid[0], pa, sa, la) < 0) return -1;
    line(g, "if (NDL_UNLIKELY(%s != %s))", la[0], la[1]);
    g->ind++; deopt(g); g->ind--;
    snprintf(n, 16, "%s", la[0]);
    char size[48];
    snprintf(size, sizeof size, "(%s * %s)", n, n);
    const char *R = ctype[r];
    if (scratch(g, e, R, size, w) < 0 || scratch(g, e, R, size, wk) < 0) return -1;
    flags_clear(g);
    line(g, "if (NDL_UNLIKELY(ndl_inv_%s(%s, %s, %s, %s, %s, %s)))", r == LT_F8 ? "d" : "f", pa, sa[0], sa[1], n,
         w, wk);
    g->ind++; deopt(g); g->ind--;
    flags_check(g);
    return 0;
}

/* np.max(M, axis=k), np.min, np.argmax, np.argmin (and the methods) of a
 * 2-D M: along axis k into a buffer before the element loop (slot kind 5).
 * NumPy's rules: the first of equal extremes; a NaN is the max/min, and
 * argmax/argmin give the first NaN's index (quiet compares: no flag); a
 * reduced axis of length 0 is left to NumPy (its ValueError) */
static int vaxisred(cg *g, vctx *vc, const nd_ln *e)
{
    int sl = vnew_slot(g, vc, e), bits;
    if (sl < 0) return no_type(g, e);
    if (vc->havelen && vc->nd == 2) return no_type(g, e);
    int r = nd_lty_expr(g->T, e, g->assign, &bits), tm = nd_lty_expr(g->T, e->kid[0], g->assign, &bits);
    if (r < 0 || tm < 0 || !(r & LT_VEC) || !(tm & LT_MAT)) return no_type(g, e);
    r &= ~LT_VEC;
    tm &= ~LT_MAT;
    int ax = e->op - 3 < 0 ? e->op - 1 : e->op - 3, kx = 1 - ax;
    int arg = e->aux == LF_NP_ARGMAX || e->aux == LF_NP_ARGMIN, mx = e->aux == LF_NP_MAX || e->aux == LF_NP_ARGMAX;
    char p[16], st[2][16], len[2][16], w[16];
    if (vmat_operand(g, e->kid[0], p, st, len) < 0) return -1;
    line(g, "if (NDL_UNLIKELY(%s == 0))", len[ax]);
    g->ind++; deopt(g); g->ind--;
    if (scratch(g, e, ctype[r], len[kx], w) < 0) return -1;
    const char *M = ctype[tm];
    int q = ++g->tmp;
    char el[160];
    snprintf(el, sizeof el, "*(const %s *)(%s + i%d * %s + j%d * %s)", M, p, q, st[ax], q, st[kx]);
    if (e->aux == LF_NP_SUM || e->aux == LF_NP_MEAN) {
        /* np.sum / np.mean along an axis. Integers (sum only) wrap in the
         * result type, in any order. Floats as NumPy's iterator sums a
         * matrix of contiguous rows: from NumPy's identity +0.0 (a column of
         * -0.0 sums to 0.0), along axis 1 each row pairwise, along axis 0
         * row after row (out[j] = out[j] + M[i, j]);
         * other layouts, and a single column summed along axis 0 (a strided
         * 1-D pairwise sum in NumPy), are left to Python. Mean: the sum over
         * the count, a float64 division cast to the dtype (NumPy's
         * true_divide by an intp count into the result) */
        const char *R = ctype[r];
        if (!ISF(r)) {
            line(g, "for (int64_t j%d = 0; j%d < %s; j%d++) {", q, q, len[kx], q);
            line(g, "  uint64_t s_ = 0;");
            line(g, "  for (int64_t i%d = 0; i%d < %s; i%d++) s_ += (uint64_t)(%s)%s;", q, q, len[ax], q, R, el);
            line(g, "  %s[j%d] = (%s)s_;", w, q, R);
            line(g, "}");
        } else {
            line(g, "if (%s != (int64_t)sizeof(%s) || (%d == 0 && %s == 1 && %s >= 8))", st[1], M, ax, len[kx], len[ax]);
            g->ind++; deopt(g); g->ind--;
            flags_clear(g);
            line(g, "{");
            g->ind++;
            line(g, "%s *restrict o_ = %s;", R, w);
            if (ax == 1) {
                line(g, "for (int64_t j%d = 0; j%d < %s; j%d++)", q, q, len[kx], q);
                line(g, "  o_[j%d] = (%s)0 + ndl_pairwise_%s((const %s *)(%s + j%d * %s), %s);", q, R,
                     r == LT_F4 ? "f" : "d", R, p, q, st[kx], len[ax]);
            } else {
                line(g, "for (int64_t j%d = 0; j%d < %s; j%d++) o_[j%d] = (%s)0 + ((const %s *)%s)[j%d];", q, q,
                     len[kx], q, q, R, R, p, q);
                line(g, "for (int64_t i%d = 1; i%d < %s; i%d++) {", q, q, len[ax], q);
                line(g, "  const %s *restrict r_ = (const %s *)(%s + i%d * %s);", R, R, p, q, st[ax]);
                line(g, "  for (int64_t j%d = 0; j%d < %s; j%d++) o_[j%d] = o_[j%d] + r_[j%d];", q, q, len[kx], q, q,
                     q, q);
                line(g, "}");
            }
            if (e->aux == LF_NP_MEAN)
                line(g, "for (int64_t j%d = 0; j%d < %s; j%d++) o_[j%d] = (%s)((double)o_[j%d] / (double)%s);", q, q,
                     len[kx], q, q, R, q, len[ax]);
            g->ind--;
            line(g, "}");
            flags_check(g);
        }
        goto slot;
    }
    if (ax == 0) {
        /* along axis 0 of rows of contiguous elements (Viterbi's column
         * maxima of delta[:, None] + logA): row by row, each column's
         * extreme so far in a buffer -- the inner loop is stride 1 and its
         * compare-and-select vectorizes (a column at a time walked the
         * matrix by its row stride, one element a step). The same rules:
         * a column's first NaN stays (and its index), ties keep the first */
        char acc[16], ix[16];
        if (scratch(g, e, M, len[kx], acc) < 0) return -1;
        if (arg) {
            if (scratch(g, e, "int64_t", len[kx], ix) < 0) return -1;
        } else {
            memcpy(ix, acc, sizeof ix);
        }
        line(g, "if (%s == (int64_t)sizeof(%s)) {", st[kx], M);
        g->ind++;
        line(g, "%s *restrict a%d = %s;", M, q, acc);
        if (arg) line(g, "int64_t *restrict x%d = %s;", q, ix);
        line(g, "const %s *restrict r%d = (const %s *)%s;", M, q, M, p);
        line(g, "for (int64_t j%d = 0; j%d < %s; j%d++) a%d[j%d] = r%d[j%d];", q, q, len[kx], q, q, q, q, q);
        if (arg) line(g, "for (int64_t j%d = 0; j%d < %s; j%d++) x%d[j%d] = 0;", q, q, len[kx], q, q, q);
        /* floats: NumPy's rules need the ordered compare, which raises
         * FE_INVALID on NaN data (GCC vectorizes even !islessequal into the
         * signaling vcmpnlepd), and a loop whose float events go to the
         * flags took that for an event (every call with a NaN reran in
         * Python). The loop notes a NaN quietly (x_ != x_) and, having met
         * one, clears FE_INVALID when it was clear before: the values are
         * right either way, and no other operation runs in between */
        if (ISF(tm)) line(g, "const int inv_ = fetestexcept(FE_INVALID); int nan_ = 0;");
        line(g, "for (int64_t i%d = 1; i%d < %s; i%d++) {", q, q, len[ax], q);
        g->ind++;
        line(g, "const %s *restrict r_ = (const %s *)(%s + i%d * %s);", M, M, p, q, st[ax]);
        line(g, "for (int64_t j%d = 0; j%d < %s; j%d++) {", q, q, len[kx], q);
        g->ind++;
        line(g, "const %s x_ = r_[j%d], b_ = a%d[j%d];", M, q, q, q);
        if (ISF(tm)) {   /* (b_ == b_: not NaN, quiet; x_ NaN or beyond b_) */
            line(g, "const int c_ = (b_ == b_) & !%s(x_, b_);", mx ? "islessequal" : "isgreaterequal");
            line(g, "nan_ |= x_ != x_;");
        } else {
            line(g, "const int c_ = x_ %s b_;", mx ? ">" : "<");
        }
        line(g, "a%d[j%d] = c_ ? x_ : b_;", q, q);
        if (arg) line(g, "x%d[j%d] = c_ ? i%d : x%d[j%d];", q, q, q, q, q);
        g->ind--;
        line(g, "}");
        g->ind--;
        line(g, "}");
        if (ISF(tm)) {
            line(g, "for (int64_t j%d = 0; j%d < %s; j%d++) nan_ |= ((const %s *)%s)[j%d] != ((const %s *)%s)[j%d];",
                 q, q, len[kx], q, M, p, q, M, p, q);
            line(g, "if (nan_ && !inv_) feclearexcept(FE_INVALID);");
        }
        line(g, "for (int64_t j%d = 0; j%d < %s; j%d++) %s[j%d] = (%s)%s%d[j%d];", q, q, len[kx], q, w, q, ctype[r],
             arg ? "x" : "a", q, q);
        g->ind--;
        line(g, "} else");
    }
    line(g, "for (int64_t j%d = 0; j%d < %s; j%d++) {", q, q, len[kx], q);
    g->ind++;
    line(g, "int64_t i%d = 0;", q);
    line(g, "%s acc_ = %s, x_; int64_t idx_ = 0;", M, el);
    if (ISF(tm)) {
        line(g, "if (!isnan(acc_))");
        line(g, "  for (i%d = 1; i%d < %s; i%d++) {", q, q, len[ax], q);
        line(g, "    x_ = %s;", el);
        line(g, "    if (!%s(x_, acc_)) { acc_ = x_; idx_ = i%d; if (isnan(x_)) break; }", mx ? "islessequal" : "isgreaterequal", q);
        line(g, "  }");
    } else {
        line(g, "for (i%d = 1; i%d < %s; i%d++) {", q, q, len[ax], q);
        line(g, "  x_ = %s;", el);
        line(g, "  if (x_ %s acc_) { acc_ = x_; idx_ = i%d; }", mx ? ">" : "<", q);
        line(g, "}");
    }
    line(g, "(void)idx_; (void)acc_;");
    line(g, "%s[j%d] = (%s)%s;", w, q, ctype[r], arg ? "idx_" : "acc_");
    g->ind--;
    line(g, "}");
slot:
    memcpy(vc->slot[sl].w, w, 16);
    vc->slot[sl].te = r;
    vc->slot[sl].slice = 5;
    if (!vc->havelen) vc->nd = 1;
    vlength(g, vc, len[kx]);
    return 0;
}

/* a 2-D @ 2-D product or np.linalg.inv in a 2-D expression: a slot
 * reading its buffer */
static int vmatmat(cg *g, vctx *vc, const nd_ln *e)
{
    int sl = vnew_slot(g, vc, e);
    if (sl < 0) return no_type(g, e);
    if (vc->havelen && vc->nd != 2) return no_type(g, e);
    char w[16], n[16], m[16];
    if (e->aux == LF_NP_INV) {
        if (vinv_into(g, e, w, n) < 0) return -1;
        memcpy(m, n, 16);
    } else if (vmatmat_into(g, e, w, n, m) < 0) {
        return -1;
    }
    snprintf(vc->slot[sl].p, 16, "p%d", ++g->tmp);
    line(g, "const char *%s = (const char *)%s;", vc->slot[sl].p, w);
    int bits, r = nd_lty_expr(g->T, e, g->assign, &bits) & ~LT_MAT;
    snprintf(vc->slot[sl].st, 16, "s%d", ++g->tmp);
    line(g, "const int64_t %s = %s * (int64_t)sizeof(%s);", vc->slot[sl].st, m, ctype[r]);
    snprintf(vc->slot[sl].st2, 16, "s%d", ++g->tmp);
    line(g, "const int64_t %s = (int64_t)sizeof(%s);", vc->slot[sl].st2, ctype[r]);
    if (!vc->havelen) vc->nd = 2;
    vlength(g, vc, n);
    vaxis1(g, vc, m, 0);
    snprintf(vc->size, sizeof vc->size, "(%s * %s)", vc->len, vc->len2);
    vc->slot[sl].slice = 1;
    return 0;
}

/* 1-D vector expression e into a scratch buffer (name w, element type
 * *te), its length in iv->len */
static int vbuffer(cg *g, vctx *iv, const nd_ln *e, char *w, int *te)
{
    int bits, t = nd_lty_expr(g->T, e, g->assign, &bits);
    if (t < 0 || !(t & LT_VEC) || (t & LT_MAT)) return no_type(g, e);
    *te = t & ~LT_VEC;
    if (vprep(g, iv, e) < 0) return -1;
    if (!iv->havelen) return no_type(g, e);
    if (scratch(g, e, ctype[*te], iv->len, w) < 0) return -1;
    if (ISF(*te)) flags_clear(g);
    vloop_open(g, iv);
    cv x;
    if (velem(g, iv, e, &x) < 0) return -1;
    line(g, "%s[%s] = %s;", w, iv->k, x.s);
    vloop_close(g, iv);
    if (ISF(*te)) flags_check(g);
    return 0;
}

/* np.outer(u, v): u, then v, computed into buffers before the loop (so a
 * store into the memory they read, A[k+1:, k+1:] -= np.outer(A[k+1:, k],
 * A[k, k+1:]), reads them as NumPy's temporary holds them); a 2-D
 * expression of len(u) x len(v) elements */
static int vouter(cg *g, vctx *vc, const nd_ln *e)
{
    int sl = vnew_slot(g, vc, e);
    if (sl < 0) return no_type(g, e);
    if (vc->havelen && vc->nd != 2) return no_type(g, e);
    vctx *iv = PyMem_Calloc(2, sizeof(vctx));
    if (!iv) { PyErr_NoMemory(); g->fail = -1; return -1; }
    int rc = -1;
    if (vbuffer(g, &iv[0], e->kid[0], vc->slot[sl].w, &vc->slot[sl].te) < 0 ||
        vbuffer(g, &iv[1], e->kid[1], vc->slot[sl].w2, &vc->slot[sl].te2) < 0)
        goto done;
    if (!vc->havelen) vc->nd = 2;
    vlength(g, vc, iv[0].len);
    vaxis1(g, vc, iv[1].len, 0);
    snprintf(vc->size, sizeof vc->size, "(%s * %s)", vc->len, vc->len2);
    vc->slot[sl].slice = 4;
    rc = 0;
done:
    PyMem_Free(iv);
    return rc;
}

/* np.concatenate((u, v, ...)) of 1-D arrays / np.flip(u) (its one part
 * written back to front) / np.array([x, y, ...]) of
 * scalars, into a buffer before the loop, each element cast to the
 * result's type as NumPy casts it: the parts' scalars and slices in order
 * (as Python evaluates the tuple), then their elements */
static int vconcat(cg *g, vctx *vc, const nd_ln *e)
{
    int sl = vnew_slot(g, vc, e), bits;
    if (sl < 0) return no_type(g, e);
    if (vc->havelen && vc->nd != 1) return no_type(g, e);
    int r = nd_lty_expr(g->T, e, g->assign, &bits), m = e->n, flip = e->aux == LF_NP_FLIP;
    int cat = e->aux == LF_NP_CONCATENATE || flip;
    if (r < 0 || !(r & LT_VEC) || m > LCAT_MAX) return no_type(g, e);
    int te = r & ~LT_VEC;
    const char *T = ctype[te];
    vctx *iv = PyMem_Calloc(LCAT_MAX, sizeof(vctx));
    if (!iv) { PyErr_NoMemory(); g->fail = -1; return -1; }
    int rc = -1;
    cv x[LCAT_MAX];
    char tot[16], w[16], c[64];
    snprintf(tot, sizeof tot, "L%d", ++g->tmp);
    line(g, "int64_t %s = 0;", tot);
    for (int k = 0; k < m; k++) {
        if (!cat) {
            vctx *up = g->vc;
            g->vc = NULL;
            int xrc = expr(g, e->kid[k], &x[k]);
            g->vc = up;
            if (xrc < 0) goto done;
            line(g, "%s += 1;", tot);
            continue;
        }
        if (vprep(g, &iv[k], e->kid[k]) < 0) goto done;
        if (!iv[k].havelen) { rc = no_type(g, e); goto done; }
        line(g, "%s += %s;", tot, iv[k].len);
    }
    if (scratch(g, e, T, tot, w) < 0) goto done;
    if (cat && ISF(te)) flags_clear(g);
    line(g, "{ int64_t o_ = 0; (void)o_;");
    g->ind++;
    for (int k = 0; k < m; k++) {
        if (!cat) {
            conv(g, c, sizeof c, &x[k], te);
            line(g, "%s[%d] = %s;", w, k, c);
            continue;
        }
        cv y;
        vloop_open(g, &iv[k]);
        if (velem(g, &iv[k], e->kid[k], &y) < 0) goto done;
        conv(g, c, sizeof c, &y, te);
        if (flip) line(g, "%s[%s - 1 - %s] = %s;", w, tot, iv[k].k, c);
        else line(g, "%s[o_ + %s] = %s;", w, iv[k].k, c);
        vloop_close(g, &iv[k]);
        line(g, "o_ += %s;", iv[k].len);
    }
    g->ind--;
    line(g, "}");
    if (cat && ISF(te)) flags_check(g);
    memcpy(vc->slot[sl].w, w, 16);
    vc->slot[sl].te = te;
    if (!vc->havelen) vc->nd = 1;
    vlength(g, vc, tot);
    vc->slot[sl].slice = 5;
    rc = 0;
done:
    PyMem_Free(iv);
    return rc;
}

/* element k of a matrix product slot, of type r */
static void vmatvec_elem(cg *g, vctx *vc, int sl, int r, cv *out)
{
    const char *R = ctype[r];
    const nd_ln *e = vc->slot[sl].e;
    if (vc->slot[sl].w2[0] && vc->slot[sl].te2 == r) {
        decl(g, out, r, "%s[%s]", vc->slot[sl].w2, vc->k);
        return;
    }
    int bits, m = (nd_lty_expr(g->T, e->kid[0], g->assign, &bits) & LT_MAT) ? 0 : 1;
    int dm = nd_lty_expr(g->T, e->kid[m], g->assign, &bits) & ~LT_MAT;
    if ((r == LT_F8 || r == LT_F4) && dm == r && vc->slot[sl].te == r) {
        decl(g, out, r, "ndl_dotrow_%s(%s + %s * %s, %s, %s, %s)", r == LT_F8 ? "d" : "f", vc->slot[sl].p,
             vc->k, vc->slot[sl].st, vc->slot[sl].st2, vc->slot[sl].w, vc->slot[sl].n2);
        return;
    }
    newtmp(g, out, r);
    line(g, "%s %s = 0;", R, out->s);
    line(g, "for (int64_t j_ = 0; j_ < %s; j_++) {", vc->slot[sl].n2);
    g->ind++;
    char mv[200], vv[64];
    snprintf(mv, sizeof mv, "(%s)*(const %s *)(%s + %s * %s + j_ * %s)", R, ctype[dm], vc->slot[sl].p,
             vc->k, vc->slot[sl].st, vc->slot[sl].st2);
    snprintf(vv, sizeof vv, "(%s)%s[j_]", R, vc->slot[sl].w);
    if (r == LT_B1)
        line(g, "%s |= (uint8_t)((%s != 0) & (%s != 0));", out->s, mv, vv);
    else if (ISF(r))
        line(g, "%s += %s * %s;", out->s, mv, vv);
    else
        line(g, "%s = (%s)((uint64_t)%s + (uint64_t)%s * (uint64_t)%s);", out->s, R, out->s, mv, vv);
    g->ind--;
    line(g, "}");
}

/* everything of vector expression e computed before its element loop */
/* LK_LET e binding a 1-D array: its elements computed into a buffer once,
 * as Python computes the argument before the helper's body */
static int let_buffer(cg *g, const nd_ln *e)
{
    vctx *iv = PyMem_Calloc(1, sizeof(vctx));
    if (!iv) { PyErr_NoMemory(); g->fail = -1; return -1; }
    vctx *up = g->vc;
    int vec = g->vec;
    g->vc = NULL;
    g->vec = 0;
    int rc = vbuffer(g, iv, e->kid[0], g->letbuf[e->aux].w, &g->letbuf[e->aux].te);
    g->vc = up;
    g->vec = vec;
    if (rc == 0) snprintf(g->letbuf[e->aux].len, sizeof g->letbuf[e->aux].len, "%s", iv->len);
    PyMem_Free(iv);
    return rc;
}

static int vprep(cg *g, vctx *vc, const nd_ln *e)
{
    int bits, r = nd_lty_expr(g->T, e, g->assign, &bits);
    if (r < 0) return no_type(g, e);
    if (!(r & (LT_VEC | LT_MAT))) {
        int sl = vnew_slot(g, vc, e);
        if (sl < 0) return no_type(g, e);
        vctx *up = g->vc;
        g->vc = NULL;
        int rc = expr(g, e, &vc->slot[sl].v);
        g->vc = up;
        return rc;
    }
    switch (e->kind) {
    case LK_LET: {
        /* the binding before the element loop, then the helper's body */
        int bt = nd_lty_expr(g->T, e->kid[0], g->assign, &bits);
        if (bt < 0) return no_type(g, e);
        if (bt & LT_VEC) {
            if (let_buffer(g, e) < 0) return -1;
        } else {
            vctx *up = g->vc;
            cv x, *b = &g->let[e->aux];
            g->vc = NULL;
            int rc = expr(g, e->kid[0], &x);
            g->vc = up;
            if (rc < 0) return -1;
            decl(g, b, x.t, "%s", x.s);
            b->bits = x.bits;
            b->kconst = x.kconst;
            b->kval = x.kval;
        }
        return vprep(g, vc, e->kid[1]);
    }
    case LK_LETVAR: {
        /* a 1-D array binding: its buffer (slot kind 5) */
        int sl = vnew_slot(g, vc, e);
        if (sl < 0 || (vc->havelen && vc->nd != 1)) return no_type(g, e);
        memcpy(vc->slot[sl].w, g->letbuf[e->aux].w, 16);
        vc->slot[sl].te = g->letbuf[e->aux].te;
        if (!vc->havelen) vc->nd = 1;
        vlength(g, vc, g->letbuf[e->aux].len);
        vc->slot[sl].slice = 5;
        return 0;
    }
    case LK_ELEM:
        if (nd_lty_gather(g->T, e) && (nd_lty_expr(g->T, e->kid[0], g->assign, &bits) & LT_VEC)) {
            /* x[idx]: idx's elements (its own slots give the length), each
             * checked against x's axis in the element loop (slot kind 3) */
            int sl = vnew_slot(g, vc, e);
            if (sl < 0) return no_type(g, e);
            need_set(g, e->var);
            vc->slot[sl].slice = 3;
            return vprep(g, vc, e->kid[0]);
        }
        return vslice(g, vc, e);
    case LK_SLICE: case LK_VAR:
        return vslice(g, vc, e);
    case LK_CALL:
        if (ND_LAXISRED(e)) return vaxisred(g, vc, e);
        if ((e->aux == LF_NP_DOT || e->aux == LF_NP_MATMUL || e->aux == LF_NP_INV) && (r & LT_MAT))
            return vmatmat(g, vc, e);
        if (e->aux == LF_NP_DOT || e->aux == LF_NP_MATMUL) return vmatvec(g, vc, e);
        if (e->aux == LF_NP_OUTER) return vouter(g, vc, e);
        if (e->aux == LF_NP_CONCATENATE || e->aux == LF_NP_ARRAY || e->aux == LF_NP_FLIP) return vconcat(g, vc, e);
        /* fall through */
    case LK_BIN: case LK_CMP: case LK_UN:
        for (int k = 0; k < e->n; k++) if (vprep(g, vc, e->kid[k]) < 0) return -1;
        return 0;
    default:
        return no_type(g, e);
    }
}

/* open / close the element loop of vc */
static void vloop_open(cg *g, vctx *vc)
{
    snprintf(vc->k, sizeof vc->k, "k%d", ++g->tmp);
    line(g, "for (int64_t %s = 0; %s < %s; %s++) {", vc->k, vc->k, vc->len, vc->k);
    g->ind++;
    if (vc->nd == 2) {
        snprintf(vc->k2, sizeof vc->k2, "k%d", ++g->tmp);
        line(g, "for (int64_t %s = 0; %s < %s; %s++) {", vc->k2, vc->k2, vc->len2, vc->k2);
        g->ind++;
        snprintf(vc->flat, sizeof vc->flat, "(%s * %s + %s)", vc->k, vc->len2, vc->k2);
    } else {
        snprintf(vc->flat, sizeof vc->flat, "%s", vc->k);
    }
}

static void vloop_close(cg *g, vctx *vc)
{
    g->ind--;
    line(g, "}");
    if (vc->nd == 2) {
        g->ind--;
        line(g, "}");
    }
}

/* the address of element (k, k2) of a 1-D/2-D part (p, st, st2) of C
 * type ct; vc->unit: every axis-1 stride is the element size (the inner
 * loop then reads and writes contiguous memory the C compiler vectorizes) */
static void vaddr(char *out, size_t cap, const vctx *vc, const char *p, const char *st, const char *st2,
                  const char *ct)
{
    if (vc->nd == 2 && vc->unit) snprintf(out, cap, "(%s + %s * %s + %s * (int64_t)sizeof(%s))", p, vc->k, st, vc->k2, ct);
    else if (vc->nd == 2) snprintf(out, cap, "(%s + %s * %s + %s * %s)", p, vc->k, st, vc->k2, st2);
    else snprintf(out, cap, "(%s + %s * %s)", p, vc->k, st);
}

/* A vector statement tests the flags its own elements raise; events still
 * pending from the scalar code before it (NumPy scalar arithmetic leaves
 * them to the flags, see binop) are kept in nd_fpp and raised again at the
 * end, where the runner tests them. */
static void flags_clear(cg *g)
{
    line(g, "nd_fpp |= ndl_fe_test();");
    line(g, "ndl_fe_clear();");
}

static void flags_check(cg *g)
{
    line(g, "if (NDL_UNLIKELY(ndl_fe_test()))");
    g->ind++; deopt(g); g->ind--;
}

/* element vc->k of vector expression e (inside the loop) */
static int velem(cg *g, vctx *vc, const nd_ln *e, cv *out)
{
    vctx *up = g->vc;
    int upv = g->vec;
    g->vc = vc;
    g->vec = 1;
    int rc = expr(g, e, out);
    g->vc = up;
    g->vec = upv;
    return rc;
}

/* buffer buf (capacity cap, bytes) holds n elements of C type ct; when
 * memory runs out Python runs the loop */
static void grow(cg *g, const char *buf, const char *cap, const char *n, const char *ct)
{
    line(g, "if ((size_t)%s * sizeof(%s) + 64 > %s) {", n, ct, cap);
    line(g, "  void *q_ = realloc(%s, (size_t)%s * sizeof(%s) + 64);", buf, n, ct);
    line(g, "  if (!q_) { rc = NDL_DEOPT; goto nd_err; }");
    line(g, "  %s = q_; %s = (size_t)%s * sizeof(%s) + 64;", buf, cap, n, ct);
    line(g, "}");
}

/* a scratch buffer of n elements of C type ct, kept across iterations
 * (freed when the loop ends) */
static int scratch(cg *g, const nd_ln *e, const char *ct, const char *n, char *name)
{
    if (g->nscr == 64) {
        if (!g->T->reason) g->T->reason = PyUnicode_FromFormat("too many array expressions (line %d)", e->line);
        return no_type(g, e);
    }
    int id = g->nscr++;
    char buf[32], cap[32];
    snprintf(name, 16, "w%d", ++g->tmp);
    snprintf(buf, sizeof buf, "nd_scr[%d]", id);
    snprintf(cap, sizeof cap, "nd_scr_cap[%d]", id);
    grow(g, buf, cap, n, ct);
    line(g, "%s *%s = (%s *)nd_scr[%d];", ct, name, ct, id);
    g->snapshot = 1;
    return 0;
}

/* ------------------------------------------------------- reductions */
/* np.dot(u, v) / np.sum(v) of 1-D arrays, as NumPy computes them: float
 * sums pairwise (bit for bit), dot products in order (BLAS's order differs
 * in the last bits), integers wrapping in the result type. np.mean(v) of
 * floats: the pairwise sum divided by the count in float64, then cast
 * (NumPy divides by an intp count: a float32 sum promotes to float64); an
 * empty one warns in NumPy: Python runs it. np.linalg.norm(v) of floats:
 * sqrt(v . v), NumPy's own formula for a 1-D array */
static int reduction(cg *g, const nd_ln *e, int r, cv *out)
{
    vctx *vc = PyMem_Calloc(1, sizeof(vctx));
    if (!vc) { PyErr_NoMemory(); g->fail = -1; return -1; }
    int rc = -1, dot = e->aux == LF_NP_DOT || e->aux == LF_NP_MATMUL;
    int mean = e->aux == LF_NP_MEAN, norm = e->aux == LF_NP_NORM;
    int var = e->aux == LF_NP_VAR || e->aux == LF_NP_STD, prod = e->aux == LF_NP_PROD;
    const char *R = ctype[r];
    for (int k = 0; k < e->n; k++) if (vprep(g, vc, e->kid[k]) < 0) goto done;
    if (!vc->havelen) { rc = no_type(g, e); goto done; }
    newtmp(g, out, r);
    line(g, "%s %s = 0;", R, out->s);
    line(g, "{");
    g->ind++;
    if (mean || var) {
        line(g, "if (NDL_UNLIKELY(%s == 0))", vc->size);
        g->ind++; deopt(g); g->ind--;
    }
    int fn = e->aux;
    if (fn >= LF_NP_MAX && fn <= LF_NP_ARGMIN) {
        /* NumPy's: the first NaN wins; else the later of equal maxima
         * (max of -0.0, 0.0 is 0.0), the first index of the extreme; an
         * empty array raises ValueError (Python's business) */
        int arg = fn == LF_NP_ARGMAX || fn == LF_NP_ARGMIN;
        int isMax = fn == LF_NP_MAX || fn == LF_NP_ARGMAX;
        int te = nd_lty_expr(g->T, e->kid[0], g->assign, &(int){0}) & ~(LT_VEC | LT_MAT);
        line(g, "if (NDL_UNLIKELY(%s == 0))", vc->size);
        g->ind++; deopt(g); g->ind--;
        if (ISF(te) && !arg) {
            /* the elements into a buffer (a loop the C compiler vectorizes,
             * rows of contiguous elements in a copy of their own), then
             * ndl_max_d & co.: the scan below, in vector lanes */
            char w[16];
            cv x;
            if (scratch(g, e, ctype[te], vc->size, w) < 0) goto done;
            /* 2-D: a copy for rows of contiguous elements, and before it
             * one for rows one after another in memory (whole C-ordered
             * arrays: one loop over all elements, no loop per row) */
            char len[16], len2[16];
            memcpy(len, vc->len, sizeof len);
            memcpy(len2, vc->len2, sizeof len2);
            /* (an element of np.outer's buffers needs its row and column) */
            int flat = 1;
            for (int k = 0; k < vc->n; k++) flat &= vc->slot[k].slice < 2;
            for (int pass = vc->nd == 2 ? (flat ? -1 : 0) : 1; pass < 2; pass++) {
                if (pass <= 0) {
                    char test[2048];
                    int n = snprintf(test, sizeof test, "1");
                    for (int k = 0; k < vc->n && n < (int)sizeof test - 200; k++) {
                        if (vc->slot[k].slice != 1) continue;
                        int ts = nd_lty_expr(g->T, vc->slot[k].e, g->assign, &(int){0}) & ~(LT_VEC | LT_MAT);
                        n += snprintf(test + n, sizeof test - (size_t)n, " && %s == (int64_t)sizeof(%s)",
                                      vc->slot[k].st2, ctype[ts]);
                        if (pass < 0)
                            n += snprintf(test + n, sizeof test - (size_t)n, " && %s == %s * (int64_t)sizeof(%s)",
                                          vc->slot[k].st, len2, ctype[ts]);
                    }
                    line(g, "%sif (%s) {", pass == 0 && flat ? "else " : "", test);
                    g->ind++;
                }
                if (pass < 0) {
                    /* one row of all the elements: flat index k2 */
                    snprintf(vc->len2, sizeof vc->len2, "Lf%d", ++g->tmp);
                    line(g, "const int64_t %s = %s * %s;", vc->len2, len, len2);
                    snprintf(vc->len, sizeof vc->len, "1");
                }
                vc->unit = pass <= 0;
                /* the slices' addresses and the buffer as restrict locals of
                 * the loop's own block: GCC reloaded them from the stack at
                 * every element (the buffer store might have changed them) */
                char saved[VSLOTS][16], wq[16];
                line(g, "{");
                g->ind++;
                for (int k = 0; k < vc->n; k++) {
                    memcpy(saved[k], vc->slot[k].p, 16);
                    if (vc->slot[k].slice != 1) continue;
                    char q[16];
                    snprintf(q, sizeof q, "q%d", ++g->tmp);
                    line(g, "const char *restrict %s = %s;", q, vc->slot[k].p);
                    memcpy(vc->slot[k].p, q, 16);
                }
                snprintf(wq, sizeof wq, "q%d", ++g->tmp);
                line(g, "%s *restrict %s = %s;", ctype[te], wq, w);
                vloop_open(g, vc);
                if (velem(g, vc, e->kid[0], &x) < 0) goto done;
                line(g, "%s[%s] = %s;", wq, vc->flat, x.s);
                vloop_close(g, vc);
                for (int k = 0; k < vc->n; k++) memcpy(vc->slot[k].p, saved[k], 16);
                g->ind--;
                line(g, "}");
                vc->unit = 0;
                memcpy(vc->len, len, sizeof len);
                memcpy(vc->len2, len2, sizeof len2);
                if (pass <= 0) {
                    g->ind--;
                    line(g, pass < 0 ? "}" : "} else {");
                    if (pass == 0) g->ind++;
                }
            }
            if (vc->nd == 2) {
                g->ind--;
                line(g, "}");
            }
            line(g, "%s = (%s)ndl_%s_%s(%s, %s);", out->s, R, isMax ? "max" : "min", te == LT_F4 ? "f" : "d", w,
                 vc->size);
            g->ind--;
            line(g, "}");
            rc = 0;
            goto done;
        }
        cv best;
        newtmp(g, &best, te);
        line(g, "%s %s = 0;", ctype[te], best.s);
        vloop_open(g, vc);
        cv x;
        if (velem(g, vc, e->kid[0], &x) < 0) goto done;
        const char *cmp = isMax ? ">" : "<";
        if (ISF(te)) {
            line(g, "if (%s == 0) { %s = %s; %s = 0; }", vc->flat, best.s, x.s, out->s);
            line(g, "else if (isnan(%s)) break;", best.s);
            if (arg)
                line(g, "else if (isnan(%s) || %s %s %s) { %s = %s; %s = %s; }", x.s, x.s, cmp, best.s,
                     best.s, x.s, out->s, vc->flat);
            else   /* the later of equal values, as NumPy's loop keeps */
                line(g, "else if (isnan(%s) || !(%s %s %s)) %s = %s;", x.s, best.s, cmp, x.s, best.s, x.s);
        } else {
            if (arg)
                line(g, "if (%s == 0 || %s %s %s) { %s = %s; %s = %s; }", vc->flat, x.s, cmp, best.s, best.s, x.s,
                     out->s, vc->flat);
            else
                line(g, "if (%s == 0 || %s %s %s) %s = %s;", vc->flat, x.s, cmp, best.s, best.s, x.s);
        }
        vloop_close(g, vc);
        if (!arg) line(g, "%s = (%s)%s;", out->s, R, best.s);
        g->ind--;
        line(g, "}");
        rc = 0;
        goto done;
    }
    if (ISF(r)) flags_clear(g);
    if (!dot && !norm && ISF(r)) {
        char w[16];
        if (scratch(g, e, R, vc->size, w) < 0) goto done;
        vloop_open(g, vc);
        cv x;
        if (velem(g, vc, e->kid[0], &x) < 0) goto done;
        line(g, "%s[%s] = (%s)%s;", w, vc->flat, R, x.s);
        vloop_close(g, vc);
        const char *pw = r == LT_F4 ? "f" : "d";
        /* (a 2-D part: pairwise over its elements in C order; NumPy's
         * iterator sums a non-contiguous one in buffered blocks or by rows,
         * which rounds differently in the last bits) */
        if (prod) {
            /* NumPy's multiply.reduce of floats: in order, from the first element */
            line(g, "%s = 1;", out->s);
            line(g, "for (int64_t k = 0; k < %s; k++) %s *= %s[k];", vc->size, out->s, w);
        } else {
            line(g, "%s = (%s)0 + ndl_pairwise_%s(%s, %s);", out->s, R, pw, w, vc->size);
        }
        if (var) {
            /* NumPy's _var: the mean (sum / count: float64 division, cast to
             * the dtype), x = (a - mean)**2 in the dtype, the pairwise sum of
             * x over the count the same way; np.std: its sqrt in the dtype */
            line(g, "{");
            g->ind++;
            line(g, "const %s m = (%s)((double)%s / (double)%s);", R, R, out->s, vc->size);
            line(g, "for (int64_t k = 0; k < %s; k++) { %s d = %s[k] - m; %s[k] = d * d; }", vc->size, R, w, w);
            line(g, "%s = (%s)0 + ndl_pairwise_%s(%s, %s);", out->s, R, pw, w, vc->size);
            line(g, "%s = (%s)((double)%s / (double)%s);", out->s, R, out->s, vc->size);
            if (e->aux == LF_NP_STD) line(g, "%s = %s(%s);", out->s, r == LT_F4 ? "sqrtf" : "sqrt", out->s);
            g->ind--;
            line(g, "}");
        }
    } else if (dot && (r == LT_F8 || r == LT_F4) && vc->n == 2 && vc->slot[0].slice == 1 &&
               vc->slot[1].slice == 1 && vc->slot[0].e == e->kid[0] && vc->slot[1].e == e->kid[1] &&
               (nd_lty_expr(g->T, e->kid[0], g->assign, &(int){0}) & ~LT_VEC) == r &&
               (nd_lty_expr(g->T, e->kid[1], g->assign, &(int){0}) & ~LT_VEC) == r) {
        /* np.dot of two slices of the result's type: one vectorized helper */
        line(g, "%s = ndl_dot2_%s(%s, %s, %s, %s, %s);", out->s, r == LT_F8 ? "d" : "f", vc->slot[0].p,
             vc->slot[0].st, vc->slot[1].p, vc->slot[1].st, vc->len);
    } else if (norm && vc->n == 1 && vc->slot[0].slice == 1 && vc->slot[0].e == e->kid[0] &&
               (nd_lty_expr(g->T, e->kid[0], g->assign, &(int){0}) & ~LT_VEC) == r) {
        line(g, "%s = ndl_dot2_%s(%s, %s, %s, %s, %s);", out->s, r == LT_F8 ? "d" : "f", vc->slot[0].p,
             vc->slot[0].st, vc->slot[0].p, vc->slot[0].st, vc->len);
    } else {
        if (prod) line(g, "%s = 1;", out->s);
        vloop_open(g, vc);
        cv x, y;
        if (velem(g, vc, e->kid[0], &x) < 0) goto done;
        if (dot && velem(g, vc, e->kid[1], &y) < 0) goto done;
        if (norm) y = x;
        if (r == LT_B1)
            line(g, "%s |= (uint8_t)((%s != 0) & %s);", out->s, x.s, dot ? y.s : "1");
        else if (ISF(r) && (dot || norm))   /* from +0.0 as BLAS; one element: its product (-0.0 kept) */
            line(g, "%s = %s == 1 ? (%s)%s * (%s)%s : %s + (%s)%s * (%s)%s;", out->s, vc->len, R, x.s, R, y.s,
                 out->s, R, x.s, R, y.s);
        else if (prod)   /* integers wrap (unsigned arithmetic: no UB) */
            line(g, "%s = (%s)((uint64_t)%s * (uint64_t)(%s)%s);", out->s, R, out->s, R, x.s);
        else if (dot)   /* integers wrap (unsigned arithmetic: no UB) */
            line(g, "%s = (%s)((uint64_t)%s + (uint64_t)(%s)%s * (uint64_t)(%s)%s);", out->s, R, out->s, R, x.s, R, y.s);
        else
            line(g, "%s = (%s)((uint64_t)%s + (uint64_t)(%s)%s);", out->s, R, out->s, R, x.s);
        vloop_close(g, vc);
    }
    if (norm) line(g, "%s = %s(%s);", out->s, r == LT_F4 ? "sqrtf" : "sqrt", out->s);
    if (mean) line(g, "%s = (%s)((double)%s / (double)%s);", out->s, R, out->s, vc->size);
    if (ISF(r)) flags_check(g);
    g->ind--;
    line(g, "}");
    rc = 0;
done:
    PyMem_Free(vc);
    return rc;
}

/* ------------------------------------------- unsigned integer chains */
/* NumPy's unsigned scalar arithmetic wraps and warns at each operation that
 * overflows: 4 * a[i - 1] + 2 * a[i] + a[i + 1] of uint8 a is four tests
 * (and four exits) per element. By interval arithmetic over the operands'
 * types, such a chain -- additions, and multiplications by a constant of at
 * least 1, of values of the result type and non-negative constants -- has
 * an exact value that fits uint64, and every operation's exact result is at
 * most the chain's (each operand is at most its sum, or its product with a
 * factor >= 1): so no operation overflows exactly when the chain's exact
 * value fits the type, one test. When it does not, the operations are made
 * one by one as before (their warnings in order). Its leaves raise nothing
 * (variables, constants, elements whose range checks were proved before
 * this copy of the loop), so computing them first changes no event's order. */
static uint64_t umax_of(int t)
{
    return t == LT_U1 ? UINT8_MAX : t == LT_U2 ? UINT16_MAX : t == LT_U4 ? UINT32_MAX : UINT64_MAX;
}

static int wide_ok(cg *g, const nd_ln *e, int r, uint64_t *mx, int *nops)
{
    int bits, t = nd_lty_expr(g->T, e, g->assign, &bits);
    if (e->kind == LK_CONST) {
        if (e->aux != LT_PYINT || e->i < 0 || (uint64_t)e->i > umax_of(r)) return 0;
        *mx = (uint64_t)e->i;
        return 1;
    }
    if (t != r) return 0;
    if (e->kind == LK_BIN && (e->op == LO_ADD || e->op == LO_MUL)) {
        uint64_t a, b;
        if (!wide_ok(g, e->kid[0], r, &a, nops) || !wide_ok(g, e->kid[1], r, &b, nops)) return 0;
        if (e->op == LO_MUL) {
            const nd_ln *k = e->kid[0]->kind == LK_CONST ? e->kid[0] : e->kid[1]->kind == LK_CONST ? e->kid[1] : NULL;
            if (!k || k->i < 1 || (a && b > (1ull << 62) / a)) return 0;
            *mx = a * b;
        } else {
            *mx = a + b;
        }
        if (*mx > (1ull << 62)) return 0;
        (*nops)++;
        return 1;
    }
    *mx = umax_of(r);
    if (e->kind == LK_VAR) return g->T->adt[e->var] < 0;
    if (e->kind != LK_ELEM || !g->nohz || e->aux || e->i || g->T->adt[e->var] < 0 || e->n != g->T->andim[e->var])
        return 0;
    for (int k = 0; k < e->n; k++) {
        int64_t c;
        if (e->kid[k]->kind != LK_CONST && affine_index(e->kid[k], &c) < 0) return 0;
        if (!hoisted(g, e, e->kid[k])) return 0;
    }
    return 1;
}

/* the chain's exact value as a uint64 C expression (its leaves computed) */
static int wide_text(cg *g, const nd_ln *e, char *buf, size_t cap)
{
    if (e->kind == LK_CONST) {
        snprintf(buf, cap, "%lluull", (unsigned long long)e->i);
        return 0;
    }
    if (e->kind == LK_BIN) {
        char x[512], y[512];
        if (wide_text(g, e->kid[0], x, sizeof x) < 0 || wide_text(g, e->kid[1], y, sizeof y) < 0) return -1;
        if (snprintf(buf, cap, "(%s %s %s)", x, e->op == LO_ADD ? "+" : "*", y) >= (int)cap) return no_type(g, e);
        return 0;
    }
    cv v;
    if (expr(g, e, &v) < 0) return -1;
    snprintf(buf, cap, "(uint64_t)%s", v.s);
    return 0;
}

static int wide(cg *g, const nd_ln *e, int r, cv *out)
{
    char w[512];
    if (wide_text(g, e, w, sizeof w) < 0) return -1;
    cv x;
    newtmp(g, out, r);
    line(g, "uint64_t w%s = %s;", out->s, w);
    line(g, "%s %s;", ctype[r], out->s);
    line(g, "if (NDL_UNLIKELY(w%s > %s)) {", out->s, tmax[r]);
    g->ind++;
    line(g, "NDL_RELOAD();");
    g->nowide = 1;
    int rc = expr(g, e, &x);
    g->nowide = 0;
    if (rc < 0) return -1;
    /* the cold path's result goes back through the wide value: after the
     * join it is at most the type's maximum on both paths, so GCC drops
     * the zero-extension of the narrow result where it is used as an index
     * or widened (rule 110's rule[idx]: 12 -> 10 instructions a cell) */
    line(g, "w%s = (uint64_t)%s;", out->s, x.s);
    g->ind--;
    line(g, "}");
    line(g, "%s = (%s)w%s;", out->s, ctype[r], out->s);
    return 0;
}

static int expr1(cg *g, const nd_ln *e, cv *out);

/* e's value in a temporary; the operand select_if() reuses is recorded
 * (its outermost evaluation: wide() evaluates e again, nested) */
static int expr(cg *g, const nd_ln *e, cv *out)
{
    if (!e || e != g->cse_e) return expr1(g, e, out);
    int outer = g->cse_in == 0;
    g->cse_in++;
    int rc = expr1(g, e, out);
    g->cse_in--;
    if (rc == 0 && outer) {
        g->cse_v = *out;
        g->cse_have = 1;
    }
    return rc;
}

static int expr1(cg *g, const nd_ln *e, cv *out)
{
    nd_ltyping *T = g->T;
    int bits, r = nd_lty_expr(T, e, g->assign, &bits);
    if (r < 0) return no_type(g, e);
    if (g->vc) {
        int sl = vslot_of(g->vc, e);
        if (sl >= 0 && !g->vc->slot[sl].slice) { *out = g->vc->slot[sl].v; return 0; }
        if (sl >= 0 && g->vc->slot[sl].slice == 2) {
            vmatvec_elem(g, g->vc, sl, r & ~LT_VEC, out);
            return 0;
        }
        if (sl >= 0 && g->vc->slot[sl].slice == 4) {
            /* np.outer's element (k, k2): NumPy's multiply of the two */
            cv x, y;
            decl(g, &x, g->vc->slot[sl].te, "%s[%s]", g->vc->slot[sl].w, g->vc->k);
            decl(g, &y, g->vc->slot[sl].te2, "%s[%s]", g->vc->slot[sl].w2, g->vc->k2);
            return binop(g, e, LO_MUL, &x, &y, r & ~LT_MAT, 1, out);
        }
        if (sl >= 0 && g->vc->slot[sl].slice == 5) {
            decl(g, out, g->vc->slot[sl].te, "%s[%s]", g->vc->slot[sl].w, g->vc->k);
            return 0;
        }
        if (sl >= 0 && g->vc->slot[sl].slice == 3) {
            /* a gather's element: NumPy's IndexError names the index value
             * (negative ones as given) and x's axis 0 */
            int t = r & ~(LT_VEC | LT_MAT), a = e->var;
            cv iv;
            if (expr(g, e->kid[0], &iv) < 0) return -1;
            char ix[16];
            snprintf(ix, sizeof ix, "i%d", ++g->tmp);
            line(g, "int64_t %s = (int64_t)%s;", ix, iv.s);
            index_check(g, ix, a, 0, 0, e->line);
            decl(g, out, t, "*(const %s *)(a%d + %s * a%d_s0)", ctype[t], a, ix, a);
            return 0;
        }
        if (sl >= 0) {
            int t = r & ~(LT_VEC | LT_MAT);
            char a[200];
            vaddr(a, sizeof a, g->vc, g->vc->slot[sl].p, g->vc->slot[sl].st, g->vc->slot[sl].st2, ctype[t]);
            decl(g, out, t, "*(const %s *)%s", ctype[t], a);
            return 0;
        }
    }
    if ((r & LT_MAT) && !(g->vc && g->vc->nd == 2)) return no_type(g, e);
    if (r & (LT_VEC | LT_MAT)) {
        if (!g->vec) {
            if (!T->reason) T->reason = PyUnicode_FromFormat("an array value where a scalar belongs at line %d", e->line);
            return no_type(g, e);
        }
        r &= ~(LT_VEC | LT_MAT);
    }
    if (e->kind == LK_CALL && e->aux >= LF_NP_DOT && e->aux <= LF_NP_ARGMIN)
        return reduction(g, e, r, out);
    cv a, b;
    switch (e->kind) {
    case LK_CONST:
        if (e->aux == LT_PYFLOAT) {
            if (isnan(e->f)) decl(g, out, r, "NAN");
            else if (isinf(e->f)) decl(g, out, r, "%sINFINITY", e->f < 0 ? "-" : "");
            else decl(g, out, r, "%a", e->f);
            out->kconst = 1;
            out->kval = e->f;
        } else if (e->i == INT64_MIN) {
            decl(g, out, r, "INT64_MIN");
        } else {
            decl(g, out, r, "%lldll", (long long)e->i);
        }
        break;
    case LK_VAR: {
        decl(g, out, r, "v%d_%d", e->var, REP(r));
        uint32_t st = T->vset[e->var];
        if (st & (st - 1)) out->var = e->var;
        break;
    }
    case LK_BIN:
    case LK_CMP:
        if (e->kind == LK_BIN && (e->op == LO_ADD || e->op == LO_MUL) && !g->vec && !g->nowide &&
            (r == LT_U1 || r == LT_U2 || r == LT_U4)) {
            uint64_t mx;
            int nops = 0;
            if (wide_ok(g, e, r, &mx, &nops) && nops >= 2) return wide(g, e, r, out);
        }
        if (expr(g, e->kid[0], &a) < 0 || expr(g, e->kid[1], &b) < 0) return -1;
        if (binop(g, e, e->op, &a, &b, r, bits, out) < 0) return -1;
        break;
    case LK_UN:
        if (expr(g, e->kid[0], &a) < 0) return -1;
        if (unop(g, e, &a, r, out) < 0) return -1;
        break;
    case LK_AND:
    case LK_OR: {
        newtmp(g, out, r);
        line(g, "%s %s;", ctype[r], out->s);
        int depth = 0;
        for (int k = 0; k < e->n; k++) {
            if (expr(g, e->kid[k], &a) < 0) return -1;
            line(g, "%s = %s;", out->s, a.s);
            if (k < e->n - 1) {
                line(g, "if (%s %s 0) {", out->s, e->kind == LK_OR ? "==" : "!=");
                g->ind++;
                depth++;
            }
        }
        while (depth--) { g->ind--; line(g, "}"); }
        break;
    }
    case LK_IFEXP: {
        char c[16];
        newtmp(g, out, r);
        line(g, "%s %s;", ctype[r], out->s);
        if (cond(g, e->kid[0], c) < 0) return -1;
        line(g, "if (%s) {", c);
        g->ind++;
        if (expr(g, e->kid[1], &a) < 0) return -1;
        line(g, "%s = %s;", out->s, a.s);
        g->ind--;
        line(g, "} else {");
        g->ind++;
        if (expr(g, e->kid[2], &b) < 0) return -1;
        line(g, "%s = %s;", out->s, b.s);
        g->ind--;
        line(g, "}");
        break;
    }
    case LK_LET: {
        /* an inlined helper's argument or local: its value once, in a C
         * local its body reads; a 1-D array's into a buffer (in an element
         * loop's code the binding was made before the loop: vprep) */
        cv *b = &g->let[e->aux];
        int bb, bt = nd_lty_expr(T, e->kid[0], g->assign, &bb);
        if (bt < 0) return no_type(g, e);
        if ((bt & LT_VEC) || g->vec) {
            if (!g->vec && let_buffer(g, e) < 0) return -1;
            if (expr(g, e->kid[1], out) < 0) return -1;
            break;
        }
        if (expr(g, e->kid[0], &a) < 0) return -1;
        decl(g, b, a.t, "%s", a.s);
        b->bits = a.bits;
        b->kconst = a.kconst;
        b->kval = a.kval;
        if (expr(g, e->kid[1], out) < 0) return -1;
        break;
    }
    case LK_LETVAR:
        *out = g->let[e->aux];
        break;
    case LK_ELEM: {
        char ix[NDL_MAXDIMS][16], addr[1024];
        if (index_of(g, e, 0, ix) < 0) return -1;
        address(g, e, e->n, ix, addr, sizeof addr);
        decl(g, out, r, "*(const %s *)%s", ctype[r], addr);
        break;
    }
    case LK_SHAPE: {
        int av = e->var, nd = T->andim[av];
        need_set(g, av);
        if (e->aux == -2) decl(g, out, r, "%dll", nd);
        else if (e->aux == -1) {
            char buf[800] = "1";
            int k = 1;
            for (int j = 0; j < nd; j++) k += snprintf(buf + k, sizeof buf - (size_t)k, " * a%d_n%d", av, j);
            decl(g, out, r, "%s", buf);
        } else {
            int ax = e->aux < 0 ? e->aux + nd : e->aux;
            decl(g, out, r, "a%d_n%d", av, ax);
        }
        break;
    }
    case LK_CALL: {
        cv args[2];
        for (int k = 0; k < e->n; k++) if (expr(g, e->kid[k], &args[k]) < 0) return -1;
        if (call(g, e, args, r, out) < 0) return -1;
        break;
    }
    default:
        return no_type(g, e);
    }
    out->bits = bits;
    return 0;
}

/* a C int: the truth of e */
static int cond(cg *g, const nd_ln *e, char *name)
{
    snprintf(name, 16, "c%d", ++g->tmp);
    if (e->kind == LK_AND || e->kind == LK_OR) {
        line(g, "int %s = %d;", name, e->kind == LK_AND);
        int depth = 0;
        for (int k = 0; k < e->n; k++) {
            char c[16];
            if (cond(g, e->kid[k], c) < 0) return -1;
            if (k < e->n - 1) {
                line(g, "if (%s%s) {", e->kind == LK_AND ? "" : "!", c);
                g->ind++;
                depth++;
            } else {
                line(g, "%s = %s;", name, c);
            }
        }
        /* a false (true) operand decided it: name keeps its start value for
         * the last one only; set it for each early exit */
        while (depth--) {
            g->ind--;
            line(g, "} else %s = %d;", name, e->kind == LK_OR);
        }
        return 0;
    }
    if (e->kind == LK_UN && e->op == LO_NOT) {
        char c[16];
        if (cond(g, e->kid[0], c) < 0) return -1;
        line(g, "int %s = !%s;", name, c);
        return 0;
    }
    cv v;
    if (expr(g, e, &v) < 0) return -1;
    line(g, "int %s = %s != 0;", name, v.s);
    return 0;
}

/* -------------------------------------------------------- statements */
typedef struct {
    int vars[8];
    int n;
} uvars;

static int collect(cg *g, const nd_ln *e, uvars *u)
{
    if (!e) return 0;
    if (e->kind == LK_VAR && g->T->adt[e->var] < 0 && !g->pin[e->var]) {
        uint32_t s = g->T->vset[e->var];
        if ((s & (s - 1)) || (g->T->entry[e->var] == LT_UNBOUND && !g->bound[e->var])) {
            for (int k = 0; k < u->n; k++) if (u->vars[k] == e->var) return 0;
            if (u->n == 8) return -1;
            u->vars[u->n++] = e->var;
        }
        return 0;
    }
    for (int k = 0; k < e->n; k++) if (collect(g, e->kid[k], u) < 0) return -1;
    return 0;
}

static int assign_to(cg *g, int v, const cv *x)
{
    if (!(g->T->vset[v] & (1u << x->t))) {
        PyErr_SetString(PyExc_SystemError, "numdyn loop capture: a type the analysis missed");
        return -1;
    }
    line(g, "v%d_%d = %s; v%d_t = %d;", v, REP(x->t), x->s, v, x->t);
    return 0;
}

/* store value x at element e (an LK_STORE / LK_AUGSTORE) whose address and
 * indices are computed */
static int store(cg *g, const nd_ln *e, const cv *x, const char *addr, char (*ix)[16], int nidx)
{
    int a = e->var, d = g->T->adt[a], ln = e->line;
    const char *D = ctype[d];
    char fits[512];
    /* same C type and the same value (a Python float into float64, a
     * Python int into int64, True into uint8): no conversion, and the same
     * text whichever of the two x is */
    if (x->t == d || (REP(x->t) == REP(d) && !(d == LT_B1 && x->t == LT_U1))) {
        line(g, "*(%s *)%s = %s;", D, addr, x->s);
        return 0;
    }
    if (d == LT_B1) {
        line(g, "*(uint8_t *)%s = (uint8_t)(%s != 0);", addr, x->s);
        return 0;
    }
    if (d == LT_F8 || (d == LT_F4 && !ISF(x->t)) || (d == LT_F4 && x->t == LT_F4)) {
        line(g, "*(%s *)%s = (%s)%s;", D, addr, D, x->s);
        return 0;
    }
    if (d == LT_F4) {
        snprintf(fits, sizeof fits, "!(isinf((float)%s) && !isinf(%s))", x->s, x->s);
    } else if (ISF(x->t)) {
        snprintf(fits, sizeof fits, "(double)%s > (double)%s - 1.0 && (double)%s < (double)%s + 1.0 && (double)%s < 9223372036854775807.0",
                 x->s, tmin[d], x->s, tmax[d], x->s);
    } else if (x->t == LT_U8) {
        snprintf(fits, sizeof fits, "%s <= (uint64_t)%s", x->s, tmax[d]);
    } else {
        snprintf(fits, sizeof fits, "(int64_t)%s >= (int64_t)%s && (%d || (int64_t)%s <= (int64_t)%s)",
                 x->s, tmin[d], d == LT_U8, x->s, d == LT_U8 ? "INT64_MAX" : tmax[d]);
    }
    line(g, "if (%s) *(%s *)%s = (%s)%s;", fits, D, addr, D, x->s);
    if (g->vec) {   /* NumPy's cast of an array, or its int() of a scalar: Python's business */
        line(g, "else");
        g->ind++; deopt(g); g->ind--;
        return 0;
    }
    line(g, "else {");
    g->ind++;
    char list[600] = "";
    int k = 0;
    for (int j = 0; j < nidx; j++) k += snprintf(list + k, sizeof list - (size_t)k, "%s%s", j ? ", " : "", ix[j]);
    line(g, "int64_t ix_[] = {%s}; F->err_line = %d;", list, ln);
    line(g, "if (F->store(F, %d, %d, ix_, %d, &%s)) { rc = NDL_PYERR; goto nd_err; }", a, nidx, x->t, x->s);
    g->ind--;
    line(g, "}");
    return 0;
}

/* a store into a 1-D part of an array: a[i, lo:hi] = v, a[i] op= v (2-D a) */
static int is_vstore(cg *g, const nd_ln *s)
{
    int a = s->var;
    if (g->T->adt[a] < 0) return 0;
    if (s->n - 1 < g->T->andim[a]) return 1;
    for (int k = 1; k < s->n; k++) if (s->kid[k]->kind == LK_SL) return 1;
    return 0;
}

/* target[...] = v / target[...] op= v over a 1-D part: v (a vector, or a
 * scalar NumPy broadcasts) is computed whole first -- NumPy evaluates the
 * right side into a new array before it writes, so a right side that reads
 * the target sees its old values -- then written element by element with
 * NumPy's casts; a value NumPy would refuse or warn about deoptimizes. */
/* one element of a 1-D store: v, or target op v (in type r), cast to
 * the target's type at addr, with NumPy's array semantics */
static int vwrite(cg *g, const nd_ln *s, const char *addr, const cv *x, int aug, int r)
{
    int d = g->T->adt[s->var], upv = g->vec;
    vctx *upc = g->vc;
    cv v = *x;
    g->vec = 1;
    g->vc = NULL;
    int rc = 0;
    if (aug) {
        cv cur, res;
        decl(g, &cur, d, "*(const %s *)%s", ctype[d], addr);
        rc = binop(g, s, s->op, &cur, &v, r, LBITS_ANY, &res);
        v = res;
    }
    if (rc == 0) rc = store(g, s, &v, addr, NULL, 0);
    g->vec = upv;
    g->vc = upc;
    return rc;
}

static int vstore(cg *g, const nd_ln *s)
{
    int a = s->var, d = g->T->adt[a], aug = s->kind == LK_AUGSTORE;
    if (!g->T->awrite[a]) {
        if (!g->T->reason) g->T->reason = PyUnicode_FromFormat("a store into a read-only array at line %d", s->line);
        return no_type(g, s);
    }
    vctx *vc = PyMem_Calloc(2, sizeof(vctx));
    if (!vc) { PyErr_NoMemory(); g->fail = -1; return -1; }
    vctx *tv = &vc[1];
    int rc = -1, bits;
    nd_ln tgt;
    memset(&tgt, 0, sizeof tgt);
    tgt.kind = LK_SLICE;
    tgt.var = a;
    tgt.aux = s->aux;   /* chained */
    tgt.n = (uint16_t)(s->n - 1);
    tgt.kid = s->kid + 1;
    tgt.line = s->line;
    int tt = nd_lty_expr(g->T, &tgt, g->assign, &bits);
    int tv_t = nd_lty_expr(g->T, s->kid[0], g->assign, &bits);
    if (tt < 0 || !(tt & (LT_VEC | LT_MAT)) || tv_t < 0) { rc = no_type(g, s); goto done; }
    int VM = tt & (LT_VEC | LT_MAT);   /* the target's kind: 1-D or 2-D */
    if ((tv_t & (LT_VEC | LT_MAT)) && (tv_t & (LT_VEC | LT_MAT)) != VM) {
        if (!g->T->reason)
            g->T->reason = PyUnicode_FromFormat("a store broadcasting a 1-D value into a 2-D part at line %d", s->line);
        rc = no_type(g, s);
        goto done;
    }
    const char *D = ctype[d];
    line(g, "{");
    g->ind++;
    /* Python: a[idx] = v evaluates v first; a[idx] op= v the target first */
    if (aug && vslice(g, tv, &tgt) < 0) goto done;
    int vv = tv_t & (LT_VEC | LT_MAT);
    if (vv) {
        if (vprep(g, vc, s->kid[0]) < 0) goto done;
    } else {
        int sl = vnew_slot(g, vc, s->kid[0]);
        if (sl < 0 || expr(g, s->kid[0], &vc->slot[sl].v) < 0) goto done;
    }
    if (!aug && vslice(g, tv, &tgt) < 0) goto done;
    if (vv && tv->nd == 2) {
        /* a value's new axis (c[:, None]) broadcasts along the target's */
        for (int ax = 0; ax < 2; ax++)
            if (vc->prov[ax]) {
                line(g, "%s = %s;", ax ? vc->len2 : vc->len, ax ? tv->len2 : tv->len);
                vc->prov[ax] = 0;
            }
    }
    if (vv) {   /* lengths agree (NumPy would broadcast a length 1, or raise) */
        if (tv->nd == 2) line(g, "if (NDL_UNLIKELY(%s != %s || %s != %s))", vc->len, tv->len, vc->len2, tv->len2);
        else line(g, "if (NDL_UNLIKELY(%s != %s))", vc->len, tv->len);
        g->ind++; deopt(g); g->ind--;
    }
    int te = tv_t & ~(LT_VEC | LT_MAT), r = d;
    if (aug) {
        r = nd_lty_vop(s->op, d | VM, tv_t);
        if (r == -2) { g->fail = -1; goto done; }
        if (r < 0 || nd_lty_same_kind(r & ~(LT_VEC | LT_MAT), d) != 1) {
            if (!g->T->reason)
                g->T->reason = PyUnicode_FromFormat("an in-place array operation NumPy refuses for these types at line %d", s->line);
            rc = no_type(g, s);
            goto done;
        }
        r &= ~(LT_VEC | LT_MAT);
    }
    flags_clear(g);
    char w[16] = "";
    cv x;
    char addr[256];
    if (vv) {
        /* Straight into the target when no slice the right side reads
         * overlaps it (or is it, element for element): a test of address
         * ranges at run time. Else the right side goes to a buffer first. */
        line(g, "int dir_ = 1;");
        for (int k = 0; k < vc->n; k++) {
            if (!vc->slot[k].slice || vc->slot[k].slice >= 4) continue;   /* (4, 5: in buffers) */
            int ts = nd_lty_expr(g->T, vc->slot[k].e, g->assign, &bits);
            if (vc->slot[k].slice == 3)   /* a gather may raise IndexError midway: NumPy has stored nothing then */
                line(g, "dir_ = 0;");
            else if (vc->slot[k].slice == 1 && tv->nd == 2)
                line(g, "dir_ &= ndl_apart22(%s, %s, %s, %s, %s, (int64_t)sizeof(%s), %s, %s, %s, %s, %s, (int64_t)sizeof(%s));",
                     vc->slot[k].p, vc->slot[k].st, vc->len, vc->slot[k].st2, vc->len2, ctype[ts & ~LT_MAT],
                     tv->slot[0].p, tv->slot[0].st, tv->len, tv->slot[0].st2, tv->len2, D);
            else if (vc->slot[k].slice == 1)
                line(g, "dir_ &= ndl_apart(%s, %s, %s, (int64_t)sizeof(%s), %s, %s, %s, (int64_t)sizeof(%s));",
                     vc->slot[k].p, vc->slot[k].st, vc->len, ctype[ts & ~LT_VEC], tv->slot[0].p,
                     tv->slot[0].st, tv->len, D);
            else {
                const nd_ln *me = vc->slot[k].e;
                int mm = (nd_lty_expr(g->T, me->kid[0], g->assign, &bits) & LT_MAT) ? 0 : 1;
                int dm = nd_lty_expr(g->T, me->kid[mm], g->assign, &bits) & ~LT_MAT;
                line(g, "dir_ &= ndl_apart2(%s, %s, %s, %s, %s, (int64_t)sizeof(%s), %s, %s, %s, (int64_t)sizeof(%s));",
                     vc->slot[k].p, vc->slot[k].st, vc->len, vc->slot[k].st2, vc->slot[k].n2, ctype[dm],
                     tv->slot[0].p, tv->slot[0].st, tv->len, D);
            }
        }
        line(g, "if (dir_) {");
        g->ind++;
        /* 2-D: a copy of the loop for rows of contiguous elements */
        for (int pass = tv->nd == 2 ? 0 : 1; pass < 2; pass++) {
            if (pass == 0) {
                char test[2048];
                int n = snprintf(test, sizeof test, "%s == (int64_t)sizeof(%s)", tv->slot[0].st2, D);
                for (int k = 0; k < vc->n && n < (int)sizeof test - 200; k++) {
                    if (vc->slot[k].slice != 1) continue;
                    int ts = nd_lty_expr(g->T, vc->slot[k].e, g->assign, &bits) & ~LT_MAT;
                    n += snprintf(test + n, sizeof test - (size_t)n, " && %s == (int64_t)sizeof(%s)", vc->slot[k].st2,
                                  ctype[ts]);
                }
                line(g, "if (%s) {", test);
                g->ind++;
            }
            vc->unit = tv->unit = pass == 0;
            vloop_open(g, vc);
            if (velem(g, vc, s->kid[0], &x) < 0) goto done;
            char ad[200];
            vaddr(ad, sizeof ad, vc, tv->slot[0].p, tv->slot[0].st, tv->slot[0].st2, D);
            snprintf(addr, sizeof addr, "(char *)%s", ad);
            if (vwrite(g, s, addr, &x, aug, r) < 0) goto done;
            vloop_close(g, vc);
            vc->unit = tv->unit = 0;
            if (pass == 0) {
                g->ind--;
                line(g, "} else {");
                g->ind++;
            }
        }
        if (tv->nd == 2) {
            g->ind--;
            line(g, "}");
        }
        g->ind--;
        line(g, "} else {");
        g->ind++;
        if (scratch(g, s, ctype[te], vc->size, w) < 0) goto done;
        vloop_open(g, vc);
        if (velem(g, vc, s->kid[0], &x) < 0) goto done;
        line(g, "%s[%s] = %s;", w, vc->flat, x.s);
        vloop_close(g, vc);
    } else {
        x = vc->slot[0].v;
    }
    /* the writes */
    vloop_open(g, tv);
    {
        char ad[200];
        vaddr(ad, sizeof ad, tv, tv->slot[0].p, tv->slot[0].st, tv->slot[0].st2, D);
        snprintf(addr, sizeof addr, "(char *)%s", ad);
    }
    cv v;
    if (vv) {
        newtmp(g, &v, te);
        line(g, "%s %s = %s[%s];", ctype[te], v.s, w, tv->flat);
    } else {
        v = x;
    }
    if (vwrite(g, s, addr, &v, aug, r) < 0) goto done;
    vloop_close(g, tv);
    if (vv) {
        g->ind--;
        line(g, "}");
    }
    flags_check(g);
    g->ind--;
    line(g, "}");
    rc = 0;
done:
    PyMem_Free(vc);
    return rc;
}

/* row = A[i] / w = row[1:] / v = x: the array local takes the view (Python
 * binds the name to a view: later writes through either are seen by both) */
static int vassign(cg *g, const nd_ln *s)
{
    const nd_ln *e = s->kid[0];
    int v = s->var, a = e->var;
    char p[16], st[2][16], len[2][16];
    if (vpart(g, e, 1, p, st, len) < 0) return -1;
    char src[32];
    if (is_alocal(g, a)) snprintf(src, sizeof src, "a%d_src", a);
    else snprintf(src, sizeof src, "%d", a);
    line(g, "a%d = (char *)%s; a%d_n0 = %s; a%d_s0 = %s; a%d_src = %s; a%d_set = 1; a%d_whole = 0;", v, p, v,
         len[0], v, st[0], v, src, v, v);
    return 0;
}

/* u = w, u, w = w, u between names holding arrays (array locals of one
 * dtype and rank): each takes the other's array whole */
static int alocal_copy(cg *g, const nd_ln *s)
{
    int m = s->kind == LK_MULTI ? s->n / 2 : 1;
    const nd_ln *const *vals = s->kind == LK_MULTI ? (const nd_ln *const *)s->kid + m : (const nd_ln *const *)s->kid;
    line(g, "{");
    g->ind++;
    for (int k = 0; k < m; k++) {
        int w = vals[k]->var;
        need_set(g, w);
        line(g, "char *x%d_ = a%d; int64_t x%d_n0 = a%d_n0, x%d_s0 = a%d_s0;", k, w, k, w, k, w);
        for (int d = 1; d < g->T->andim[w]; d++)
            line(g, "int64_t x%d_n%d = a%d_n%d, x%d_s%d = a%d_s%d;", k, d, w, d, k, d, w, d);
        line(g, "int32_t x%d_src = a%d_src, x%d_whole = a%d_whole;", k, w, k, w);
    }
    for (int k = 0; k < m; k++) {
        int v = s->kind == LK_MULTI ? s->kid[k]->var : s->var;
        line(g, "a%d = x%d_; a%d_n0 = x%d_n0; a%d_s0 = x%d_s0; a%d_src = x%d_src; a%d_whole = x%d_whole; a%d_set = 1;",
             v, k, v, k, v, k, v, k, v, k, v);
        for (int d = 1; d < g->T->andim[v]; d++)
            line(g, "a%d_n%d = x%d_n%d; a%d_s%d = x%d_s%d;", v, d, k, d, v, d, k, d);
    }
    g->ind--;
    line(g, "}");
    return 0;
}

/* whether expression e reads variable v */
static int refs_var(const nd_ln *e, int v)
{
    if (!e) return 0;
    if ((e->kind == LK_VAR || e->kind == LK_ELEM || e->kind == LK_SLICE || e->kind == LK_SHAPE ||
         e->kind == LK_ALLOC) && e->var == v)
        return 1;
    for (int k = 0; k < e->n; k++) if (refs_var(e->kid[k], v)) return 1;
    return 0;
}

/* d = X[i] - X[j]: a computed 1-D array, into a buffer the name owns (the
 * right side is computed whole first: it may read the name's old value) */
static int vtemp(cg *g, const nd_ln *s)
{
    int v = s->var, te = g->T->adt[v], bits, mat = g->T->andim[v] == 2;
    int tr = nd_lty_expr(g->T, s->kid[0], g->assign, &bits);
    if (tr < 0 || tr != (te | (mat ? LT_MAT : LT_VEC))) return no_type(g, s);
    vctx *vc = PyMem_Calloc(1, sizeof(vctx));
    if (!vc) { PyErr_NoMemory(); g->fail = -1; return -1; }
    int rc = -1;
    const char *T = ctype[te];
    line(g, "{");
    g->ind++;
    if (vprep(g, vc, s->kid[0]) < 0) goto done;
    if (!vc->havelen || (vc->nd == 2) != mat) { rc = no_type(g, s); goto done; }
    char w[64], buf[32], cap[32], n[48];
    int self = refs_var(s->kid[0], v);
    snprintf(buf, sizeof buf, "ob%d", v);
    snprintf(cap, sizeof cap, "ob%d_cap", v);
    snprintf(n, sizeof n, "%s", vc->size);   /* (a 2-D value: C order, NumPy's layout of a new array) */
    if (self) {   /* t = t * 2: the old value is read while the new one is made */
        if (scratch(g, s, T, n, w) < 0) goto done;
    } else {
        grow(g, buf, cap, n, T);
        snprintf(w, sizeof w, "((%s *)ob%d)", T, v);
    }
    if (ISF(te)) flags_clear(g);
    vloop_open(g, vc);
    cv x;
    if (velem(g, vc, s->kid[0], &x) < 0) goto done;
    line(g, "%s[%s] = %s;", w, vc->flat, x.s);
    vloop_close(g, vc);
    if (ISF(te)) flags_check(g);
    if (self) {
        grow(g, buf, cap, n, T);
        line(g, "if (%s) memcpy(ob%d, %s, (size_t)%s * sizeof(%s));", n, v, w, n, T);
    }
    if (mat)
        line(g, "a%d_n1 = %s; a%d_s1 = (int64_t)sizeof(%s); a%d_s0 = %s * (int64_t)sizeof(%s);", v, vc->len2, v, T,
             v, vc->len2, T);
    else
        line(g, "a%d_s0 = (int64_t)sizeof(%s);", v, T);
    line(g, "a%d = ob%d; a%d_n0 = %s; a%d_src = -1; a%d_set = 1; a%d_whole = 0;", v, v, v, vc->len, v, v, v);
    g->ind--;
    line(g, "}");
    rc = 0;
done:
    PyMem_Free(vc);
    return rc;
}

/* new = u.copy() / np.copy(u) / np.empty_like(u) / np.zeros_like(u): a
 * buffer of the frame's pool that no array local holds (Python would have
 * freed the array it was), laid out as NumPy lays out the new array; the
 * name holds it whole */
static int vnewarr(cg *g, const nd_ln *s)
{
    const nd_ln *e = s->kid[0];
    int v = s->var, w = e->var, nd = w >= 0 ? g->T->andim[w] : e->n, np = nd_loop_npool(g->T);
    int dt = w >= 0 ? g->T->adt[w] : (int)e->i;
    if (!np || is_alocal(g, v) != 1 || g->T->adt[v] != dt || g->T->andim[v] != nd) return no_type(g, s);
    const char *T = ctype[dt];
    char sz[NDL_MAXDIMS][16];
    line(g, "{");
    g->ind++;
    if (w >= 0) need_set(g, w);
    for (int d = 0; w < 0 && d < nd; d++) {
        /* np.zeros(n) & co.: the sizes, in order; a negative one (NumPy's
         * ValueError) or a huge one (its MemoryError) is Python's business */
        cv x;
        if (expr(g, e->kid[d], &x) < 0) return -1;
        if (!(x.t == LT_PYINT || ISNPI(x.t))) return no_type(g, e->kid[d]);
        snprintf(sz[d], 16, "z%d", ++g->tmp);
        line(g, "const int64_t %s = (int64_t)%s;", sz[d], x.s);   /* (a uint64 past int64: negative) */
        line(g, "if (NDL_UNLIKELY(%s < 0 || %s > ((int64_t)1 << 34)))", sz[d], sz[d]);
        g->ind++; deopt(g); g->ind--;
    }
    /* (the slot the name held stays taken until it is rebound: a copy of
     * itself reads it) */
    nd_sb *sb = g->sb;
    line(g, "int q_ = 0;");
    for (int k = 0; k < g->ind; k++) nd_sb_puts(sb, "  ");
    nd_sb_printf(sb, "while (q_ < %d && (0", np - 1);
    for (int x = 0; x < g->ir->nvars; x++)
        if (g->T->adt[x] >= 0 && is_alocal(g, x) == 1) nd_sb_printf(sb, " || (a%d_set && a%d_src == -2 - q_)", x, x);
    nd_sb_puts(sb, ")) q_++;\n");
    line(g, "nd_lbuf *B_ = &F->pool[q_];");
    char buf[64 * NDL_MAXDIMS];
    int n = 0;
    for (int d = 0; d < nd; d++)
        n += w >= 0 ? snprintf(buf + n, sizeof buf - (size_t)n, "%sa%d_n%d", d ? ", " : "", w, d)
                    : snprintf(buf + n, sizeof buf - (size_t)n, "%s%s", d ? ", " : "", sz[d]);
    line(g, "int64_t sh_[%d] = {%s};", nd, buf);
    n = 0;
    for (int d = 0; d < nd; d++)
        n += w >= 0 ? snprintf(buf + n, sizeof buf - (size_t)n, "%sa%d_s%d", d ? ", " : "", w, d)
                    : snprintf(buf + n, sizeof buf - (size_t)n, "%s0", d ? ", " : "");
    line(g, "int64_t ss_[%d] = {%s};", nd, buf);
    /* (np.zeros & co.: C order) */
    line(g, "ndl_like_strides(%d, sh_, ss_, (int64_t)sizeof(%s), %d, B_->strides);", nd, T,
         w >= 0 && e->aux != LA_COPY_C);
    if (w < 0) {
        /* (the sizes' product past 2**34 elements: NumPy's MemoryError) */
        line(g, "{ double t_ = 1; for (int d_ = 0; d_ < %d; d_++) t_ *= (double)sh_[d_];", nd);
        line(g, "  if (NDL_UNLIKELY(t_ > (double)((int64_t)1 << 34))) { rc = NDL_DEOPT; goto nd_err; } }");
    }
    line(g, "int64_t nb_ = ndl_nbytes(%d, sh_, (int64_t)sizeof(%s));", nd, T);
    line(g, "if (NDL_UNLIKELY(ndl_pool_fit(B_, nb_))) { rc = NDL_NOMEM; goto nd_err; }");
    line(g, "B_->nd = %d; B_->lt = %d;", nd, dt);
    line(g, "memcpy(B_->shape, sh_, sizeof sh_);");
    if (e->aux == LA_COPY_C || e->aux == LA_COPY_K)
        line(g, "ndl_copy_nd(B_->p, B_->strides, a%d, ss_, sh_, %d, (int64_t)sizeof(%s));", w, nd, T);
    else if (e->aux == LA_ZEROS_K || e->aux == LA_ZEROS_N)
        line(g, "memset(B_->p, 0, (size_t)nb_);");
    else if (e->aux == LA_ONES_N)
        line(g, "for (int64_t k_ = 0; k_ < nb_ / (int64_t)sizeof(%s); k_++) ((%s *)B_->p)[k_] = (%s)1;", T, T, T);
    line(g, "a%d = B_->p; a%d_src = -2 - q_; a%d_whole = 1; a%d_set = 1;", v, v, v, v);
    for (int d = 0; d < nd; d++) line(g, "a%d_n%d = sh_[%d]; a%d_s%d = B_->strides[%d];", v, d, d, v, d, d);
    g->ind--;
    line(g, "}");
    return 0;
}

/* whether value e has one type for the current types of the variables
 * (else its operands' types differ: split_assign()) */
static int one_type(cg *g, const nd_ln *e)
{
    int bits;
    PyObject *saved = g->T->reason;
    g->T->reason = NULL;
    int t = nd_lty_expr(g->T, e, g->assign, &bits);
    if (t == -2) PyErr_Clear();
    Py_XDECREF(g->T->reason);
    g->T->reason = saved;
    return t >= 0;
}

/* v = max(a, b) / min(a, b) / x if c else y whose two operands have
 * different types: the name (or the array element a store writes) takes
 * the operand Python hands back, with its own type (its tag says which). CPython's max keeps the first operand
 * unless `b > a` (min: `b < a`), each operand evaluated once, in order.
 * A nested one (max(a, b, c) is max(max(a, b), c)) passes each of its
 * possible values on to what its parent does with it (splitk): the code
 * after it is emitted once per branch, so at most SPLIT_MAX splits a
 * statement. */
#define SPLIT_MAX 4
typedef struct splitk {
    const nd_ln *e;          /* the min/max whose operand is being computed; NULL: assign */
    int which;               /* which operand */
    cv other;                /* operand 0's value, when which == 1 */
    const struct splitk *up;
    int var;
    const nd_ln *store;      /* assign (e NULL): this LK_STORE's element, not var */
} splitk;

static int split_val(cg *g, const nd_ln *e, const splitk *k);

/* target[i, j] = x: the element's index after the value, as Python */
static int store_elem(cg *g, const nd_ln *s, const cv *x)
{
    char ix[NDL_MAXDIMS][16], addr[1024];
    if (index_of(g, s, 1, ix) < 0) return -1;
    address(g, s, s->n - 1, ix, addr, sizeof addr);
    return store(g, s, x, addr, ix, s->n - 1);
}

static int split_done(cg *g, const splitk *k, cv *x)
{
    if (!k->e) return k->store ? store_elem(g, k->store, x) : assign_to(g, k->var, x);
    if (k->which == 0) {
        splitk k1 = {k->e, 1, *x, k->up, k->var, k->store};
        return split_val(g, k->e->kid[1], &k1);
    }
    cv a = k->other, c;
    int op = k->e->aux == LF_MAX ? LO_GT : LO_LT;
    int r = nd_lty_bin(op, x->t, a.t);
    if (r < 0) {
        if (r == -2) { g->fail = -1; return -1; }
        return no_type(g, k->e);
    }
    if (binop(g, k->e, op, x, &a, r, LBITS_ANY, &c) < 0) return -1;
    line(g, "if (%s) {", c.s);
    g->ind++;
    if (split_done(g, k->up, x) < 0) return -1;
    g->ind--;
    line(g, "} else {");
    g->ind++;
    if (split_done(g, k->up, &a) < 0) return -1;
    g->ind--;
    line(g, "}");
    return 0;
}

static int split_val(cg *g, const nd_ln *e, const splitk *k)
{
    if (!nd_lty_split(e) || one_type(g, e)) {
        cv x;
        if (expr(g, e, &x) < 0) return -1;
        return split_done(g, k, &x);
    }
    if (e->kind == LK_CALL) {
        splitk k0 = {e, 0, {0}, k, k->var, k->store};
        return split_val(g, e->kid[0], &k0);
    }
    char cn[16];
    if (cond(g, e->kid[0], cn) < 0) return -1;
    line(g, "if (%s) {", cn);
    g->ind++;
    if (split_val(g, e->kid[1], k) < 0) return -1;
    g->ind--;
    line(g, "} else {");
    g->ind++;
    if (split_val(g, e->kid[2], k) < 0) return -1;
    g->ind--;
    line(g, "}");
    return 0;
}

static int nsplits(const nd_ln *e)
{
    if (!nd_lty_split(e)) return 0;
    int first = e->kind == LK_IFEXP;
    return 1 + nsplits(e->kid[first]) + nsplits(e->kid[first + 1]);
}

static int split_assign(cg *g, const nd_ln *s)
{
    if (nsplits(s->kid[0]) > SPLIT_MAX) {
        if (!g->T->reason)
            g->T->reason = PyUnicode_FromFormat("min/max/if-else of more than %d values of different types at line %d",
                                                SPLIT_MAX + 1, s->line);
        return no_type(g, s);
    }
    splitk top = {NULL, 0, {0}, NULL, s->kind == LK_STORE ? -1 : s->var, s->kind == LK_STORE ? s : NULL};
    return split_val(g, s->kid[0], &top);
}

static int simple(cg *g, const nd_ln *s)
{
    cv x, y;
    if (s->kind == LK_ASSIGN && s->kid[0]->kind == LK_ALLOC) return vnewarr(g, s);
    if (s->kind == LK_ASSIGN && is_alocal(g, s->var) == 2) return vtemp(g, s);
    /* u = w: the name takes w's array whole (a whole array stays that
     * object, a view stays that view) */
    if (s->kind == LK_ASSIGN && is_alocal(g, s->var) == 1 && s->kid[0]->kind == LK_VAR &&
        is_alocal(g, s->kid[0]->var) == 1 && g->T->andim[s->var] == g->T->andim[s->kid[0]->var])
        return alocal_copy(g, s);
    if (s->kind == LK_ASSIGN && s->aux == 1 && is_alocal(g, s->var) == 1 && s->kid[0]->kind == LK_BIN) {
        /* x op= y of a name holding an array: NumPy updates that array in
         * place, as x[...] op= y stores into all of it */
        nd_ln st = *s, *kid[1] = {s->kid[0]->kid[1]};
        st.kind = LK_AUGSTORE;
        st.op = s->kid[0]->op;
        st.aux = 0;
        st.n = 1;
        st.kid = kid;
        return vstore(g, &st);
    }
    if (s->kind == LK_ASSIGN && is_alocal(g, s->var)) return vassign(g, s);
    if (s->kind == LK_MULTI && is_alocal(g, s->kid[0]->var)) return alocal_copy(g, s);
    switch (s->kind) {
    case LK_ASSIGN:
        if (nd_lty_split(s->kid[0]) && !one_type(g, s->kid[0])) return split_assign(g, s);
        if (expr(g, s->kid[0], &x) < 0) return -1;
        return assign_to(g, s->var, &x);
    case LK_MULTI: {
        int m = s->n / 2;
        cv vals[64];
        if (m > 64) return no_type(g, s);
        for (int k = 0; k < m; k++) if (expr(g, s->kid[m + k], &vals[k]) < 0) return -1;
        for (int k = 0; k < m; k++) if (assign_to(g, s->kid[k]->var, &vals[k]) < 0) return -1;
        return 0;
    }
    case LK_STORE: case LK_AUGSTORE:
        if (is_vstore(g, s)) return vstore(g, s);
        break;
    default:
        break;
    }
    switch (s->kind) {
    case LK_STORE: {
        char ix[NDL_MAXDIMS][16], addr[1024];
        int a = s->var;
        if (g->T->adt[a] < 0) return no_type(g, s);
        if (!g->T->awrite[a]) {
            if (!g->T->reason) g->T->reason = PyUnicode_FromFormat("a store into a read-only array at line %d", s->line);
            return no_type(g, s);
        }
        if (s->n - 1 != g->T->andim[a]) {
            if (!g->T->reason) g->T->reason = PyUnicode_FromFormat("a store of an array-valued subscript at line %d", s->line);
            return no_type(g, s);
        }
        /* a[i] = x if c else y / max(x, y) of two types (np.float64 and a
         * Python float): each value stored with its own type's cast */
        if (nd_lty_split(s->kid[0]) && !one_type(g, s->kid[0])) return split_assign(g, s);
        if (expr(g, s->kid[0], &x) < 0) return -1;
        if (index_of(g, s, 1, ix) < 0) return -1;
        address(g, s, s->n - 1, ix, addr, sizeof addr);
        return store(g, s, &x, addr, ix, s->n - 1);
    }
    case LK_AUGSTORE: {
        char ix[NDL_MAXDIMS][16], addr[1024];
        int a = s->var, d = g->T->adt[a];
        if (d < 0 || !g->T->awrite[a] || s->n - 1 != g->T->andim[a]) {
            if (!g->T->reason) g->T->reason = PyUnicode_FromFormat("an augmented store this loop cannot make at line %d", s->line);
            return no_type(g, s);
        }
        if (index_of(g, s, 1, ix) < 0) return -1;
        address(g, s, s->n - 1, ix, addr, sizeof addr);
        cv cur;
        decl(g, &cur, d, "*(const %s *)%s", ctype[d], addr);
        if (expr(g, s->kid[0], &y) < 0) return -1;
        int r = nd_lty_bin(s->op, d, y.t);
        if (r < 0) {
            if (r == -2) { g->fail = -1; return -1; }
            if (!g->T->reason) g->T->reason = PyUnicode_FromFormat("an augmented store NumPy refuses for these types at line %d", s->line);
            return no_type(g, s);
        }
        if (binop(g, s, s->op, &cur, &y, r, LBITS_ANY, &x) < 0) return -1;
        return store(g, s, &x, addr, ix, s->n - 1);
    }
    default:
        return no_type(g, s);
    }
}

/* emit f(g, s) once per combination of the types of the variables s's
 * expressions read that may have several (or none) */
typedef int (*emit_fn)(cg *g, const nd_ln *s, void *ctx);

static int specialize(cg *g, const nd_ln *s, nd_ln *const *exprs, int nexpr, emit_fn f, void *ctx)
{
    uvars u = {{0}, 0};
    for (int k = 0; k < nexpr; k++)
        if (collect(g, exprs[k], &u) < 0) {
            if (!g->T->reason) g->T->reason = PyUnicode_FromFormat("too many variables of changing type at line %d", s->line);
            return no_type(g, s);
        }
    if (!u.n) return f(g, s, ctx);
    int idx[8] = {0}, nt[8], mem[8][LT_N];
    for (int k = 0; k < u.n; k++) {
        nt[k] = 0;
        /* NumPy's types first: a local that starts as a Python scalar and
         * becomes a NumPy one (s = 0.0; s += a[i]) tests its steady type first */
        for (int t = LT_N - 1; t >= 0; t--) if (g->T->vset[u.vars[k]] & (1u << t)) mem[k][nt[k]++] = t;
        if (!nt[k]) {  /* never has a value: reading it raises */
            line(g, "{ F->err_a = %d; rc = NDL_UNBOUND; goto nd_err; }", u.vars[k]);
            return 0;
        }
    }
    /* each combination's body is emitted with the same temporary numbers
     * (each arm is its own C block), and combinations whose bodies are the
     * same text share one arm: a float local that is a Python float at
     * first and a float64 later, read where both compute alike, is one
     * path, not two */
    int combos = 0, typed = 0, tmp0 = g->tmp, tmpmax = g->tmp, narm = 0, rc = 0;
    size_t start = g->sb->n;
    PyObject *last_reason = NULL;
    struct sarm { char *body; size_t n; nd_sb test; } *arms = PyMem_Calloc(257, sizeof *arms);
    if (!arms) { PyErr_NoMemory(); g->fail = -1; return -1; }
    for (;;) {
        char test[512];
        int n = 0;
        for (int k = 0; k < u.n; k++) {
            g->assign[u.vars[k]] = (uint8_t)mem[k][idx[k]];
            n += snprintf(test + n, sizeof test - (size_t)n, "%sv%d_t == %d", k ? " && " : "", u.vars[k], mem[k][idx[k]]);
        }
        g->ind++;
        g->tmp = tmp0;
        PyObject *saved = g->T->reason;
        g->T->reason = NULL;
        size_t mark = g->sb->n;
        int ind = g->ind;
        int frc = f(g, s, ctx);
        if (frc < 0 && g->fail == 1) {
            /* this combination has no type: if it happens, Python runs the loop */
            g->sb->n = mark;
            g->ind = ind;
            if (!last_reason) last_reason = g->T->reason;
            else Py_CLEAR(g->T->reason);
            g->T->reason = saved;
            g->fail = 0;
            deopt(g);
        } else {
            typed++;
            if (g->T->reason) { Py_XDECREF(saved); } else g->T->reason = saved;
            if (frc < 0) { rc = -1; break; }
            combos++;
        }
        g->ind--;
        if (g->tmp > tmpmax) tmpmax = g->tmp;
        if (g->sb->oom) { rc = -1; g->fail = -1; PyErr_NoMemory(); break; }
        size_t bn = g->sb->n - mark;
        int same = -1;
        for (int j = 0; j < narm && same < 0; j++)
            if (arms[j].n == bn && !memcmp(arms[j].body, g->sb->p + mark, bn)) same = j;
        if (same < 0) {
            same = narm++;
            if (!(arms[same].body = PyMem_Malloc(bn + 1))) { rc = -1; g->fail = -1; PyErr_NoMemory(); break; }
            memcpy(arms[same].body, g->sb->p + mark, bn);
            arms[same].n = bn;
            nd_sb_init(&arms[same].test);
            nd_sb_printf(&arms[same].test, "(%s)", test);
        } else {
            nd_sb_printf(&arms[same].test, " || (%s)", test);
        }
        g->sb->n = mark;
        if (++combos > 256) break;
        int k = 0;
        while (k < u.n && ++idx[k] == nt[k]) idx[k++] = 0;
        if (k == u.n) break;
    }
    g->tmp = tmpmax;
    if (narm > 1) g->multiarm++;
    /* one arm for every combination of types, each variable certainly
     * bound: the test of the tags has one outcome (a float accumulator that
     * is a Python float first, then a float64, in one C double: Horner's
     * `acc = 0.0` then `acc = acc * x + c[k]`), none is emitted */
    int total = 1, all_bound = 1;
    for (int k = 0; k < u.n; k++) {
        total *= nt[k];
        all_bound &= g->bound[u.vars[k]] || g->T->entry[u.vars[k]] != LT_UNBOUND;
    }
    int onearm = narm == 1 && typed == total && all_bound;
    for (int j = 0; j < narm && rc == 0 && typed; j++) {
        if (arms[j].test.oom) { rc = -1; g->fail = -1; PyErr_NoMemory(); break; }
        arms[j].body[arms[j].n] = 0;
        if (onearm) {
            nd_sb_puts(g->sb, arms[j].body);
            continue;
        }
        for (int k = 0; k < g->ind; k++) nd_sb_puts(g->sb, "  ");
        nd_sb_printf(g->sb, "%sif (%s) {\n", j ? "else " : "", arms[j].test.p);
        nd_sb_puts(g->sb, arms[j].body);
        line(g, "}");
    }
    for (int j = 0; j < narm; j++) {
        PyMem_Free(arms[j].body);
        nd_sb_free(&arms[j].test);
    }
    PyMem_Free(arms);
    if (rc < 0) { Py_XDECREF(last_reason); return -1; }
    if (!typed) {
        /* no combination has a type: the statement always sends the loop
         * back to Python, so this signature is not compiled */
        g->sb->n = start;
        if (!g->T->reason) g->T->reason = last_reason;
        else Py_XDECREF(last_reason);
        return no_type(g, s);
    }
    Py_XDECREF(last_reason);
    /* no combination matched: a variable has no value yet */
    char which[512];
    int n = 0;
    for (int k = 0; k < u.n; k++)
        n += snprintf(which + n, sizeof which - (size_t)n, "v%d_t == LT_UNBOUND ? %d : ", u.vars[k], u.vars[k]);
    if (!onearm) line(g, "else { F->err_a = %s-1; rc = NDL_UNBOUND; goto nd_err; }", which);
    for (int k = 0; k < u.n; k++) {
        uint32_t st = g->T->vset[u.vars[k]];
        int one = -1;
        for (int t = 0; t < LT_N; t++) if (st == (1u << t)) one = t;
        g->assign[u.vars[k]] = one >= 0 ? (uint8_t)one : LT_UNBOUND;
    }
    return 0;
}

static int emit_simple(cg *g, const nd_ln *s, void *ctx) { (void)ctx; return simple(g, s); }

static int emit_cond(cg *g, const nd_ln *s, void *ctx)
{
    char c[16];
    if (cond(g, s->kid[0], c) < 0) return -1;
    line(g, "%s = %s;", (char *)ctx, c);
    return 0;
}

static int emit_range(cg *g, const nd_ln *s, void *ctx)
{
    char (*names)[16] = ctx;
    for (int k = 0; k < s->n; k++) {
        cv v;
        if (expr(g, s->kid[k], &v) < 0) return -1;
        line(g, "%s = (int64_t)%s;", names[k], v.s);
    }
    return 0;
}

/* ------------------------------------------ type-stable loop versions */
/* A loop whose locals change type only on the way in (x1 = 0.0 before the
 * loop, x1 = x[i] in it: a Python float in the first iteration, a float64
 * in every later one) is emitted twice: the general version, which tests
 * the tags, runs until the tags are the loop's steady types, then the
 * steady version runs the rest with those types known (pinned), no tests.
 * tflow() follows the types through a block, one type per local (st[v],
 * LT_UNBOUND: not known): 0, or -1 where a local could have two types at
 * one point (branches or iterations that disagree), or at a continue
 * (a break: when brk) differs from its loop head's, or for what it does
 * not follow. A break of the loop being versioned need not match: it
 * leaves that loop, and what follows tests tags. */
static int tflow(cg *g, nd_ln *const *b, int n, uint8_t *st, const uint8_t *head, int brk)
{
    nd_ltyping *T = g->T;
    size_t sz = (size_t)g->ir->nvars + 1;
    for (int k = 0; k < n; k++) {
        const nd_ln *s = b[k];
        switch (s->kind) {
        case LK_ASSIGN: case LK_MULTI: {
            int m = s->kind == LK_ASSIGN ? 1 : s->n / 2, nt[64];
            if (m > 64) return -1;
            for (int j = 0; j < m; j++) {
                int v = s->kind == LK_ASSIGN ? s->var : s->kid[j]->var, bits;
                if (T->adt[v] >= 0) { nt[j] = -2; continue; }   /* an array local */
                nt[j] = nd_lty_expr(T, s->kind == LK_ASSIGN ? s->kid[0] : s->kid[m + j], st, &bits);
                if (PyErr_Occurred()) PyErr_Clear();
                if (nt[j] < 0 || nt[j] >= LT_N) return -1;
            }
            for (int j = 0; j < m; j++)
                if (nt[j] >= 0) st[s->kind == LK_ASSIGN ? s->var : s->kid[j]->var] = (uint8_t)nt[j];
            break;
        }
        case LK_STORE: case LK_AUGSTORE: case LK_PASS:
            break;
        case LK_IF: {
            uint8_t *e = PyMem_Malloc(sz);
            if (!e) { PyErr_Clear(); return -1; }
            memcpy(e, st, sz);
            int rc = tflow(g, s->body, s->nbody, st, head, brk);
            if (rc == 0) rc = tflow(g, s->orelse, s->norelse, e, head, brk);
            if (rc == 0 && memcmp(e, st, sz)) rc = -1;
            PyMem_Free(e);
            if (rc < 0) return -1;
            break;
        }
        case LK_FOR: case LK_WHILE: {
            /* the body must leave the types as it found them (so zero or
             * more iterations end alike) */
            uint8_t *h = PyMem_Malloc(2 * sz);
            if (!h) { PyErr_Clear(); return -1; }
            if (s->kind == LK_FOR && (st[s->var] != LT_PYINT || (s->i > 0 && st[s->i - 1] != LT_PYINT))) {
                PyMem_Free(h);
                return -1;
            }
            memcpy(h, st, sz);
            memcpy(h + sz, st, sz);
            int rc = tflow(g, s->body, s->nbody, h + sz, h, 1);
            if (rc == 0 && memcmp(h, h + sz, sz)) rc = -1;
            PyMem_Free(h);
            if (rc < 0) return -1;
            break;
        }
        case LK_BREAK: case LK_CONTINUE:
            if ((s->kind == LK_CONTINUE || brk) && memcmp(st, head, sz)) return -1;
            break;
        default:
            return -1;
        }
    }
    return 0;
}

/* the array locals that e reads or writes */
static void arefs(cg *g, const nd_ln *e, uint8_t *mark)
{
    if (!e) return;
    if (e->var >= 0 && e->var < g->ir->nvars && is_alocal(g, e->var)) mark[e->var] = 1;
    for (int k = 0; k < e->n; k++) arefs(g, e->kid[k], mark);
    for (int k = 0; k < e->nbody; k++) arefs(g, e->body[k], mark);
    for (int k = 0; k < e->norelse; k++) arefs(g, e->orelse[k], mark);
}

static void refs(const nd_ln *e, uint8_t *mark)
{
    if (!e) return;
    if (e->var >= 0 && (e->kind == LK_VAR || e->kind == LK_ASSIGN || e->kind == LK_FOR)) mark[e->var] = 1;
    if (e->kind == LK_FOR && e->i > 0) mark[e->i - 1] = 1;
    for (int k = 0; k < e->n; k++) refs(e->kid[k], mark);
    for (int k = 0; k < e->nbody; k++) refs(e->body[k], mark);
    for (int k = 0; k < e->norelse; k++) refs(e->orelse[k], mark);
}

/* the steady types of for loop s's locals of several types (A[v], with
 * use[v] set for each such local it reads or assigns): 1, or 0 when the
 * loop has no such local or its types do not settle */
static int steady(cg *g, const nd_ln *s, uint8_t *A, uint8_t *use)
{
    nd_ltyping *T = g->T;
    int nv = g->ir->nvars, any = 0;
    size_t sz = (size_t)nv + 1;
    memset(use, 0, sz);
    refs(s, use);
    memcpy(A, g->assign, sz);
    for (int v = 0; v < nv; v++) {
        uint32_t st = T->vset[v];
        if (!use[v] || T->adt[v] >= 0 || !(st & (st - 1))) { use[v] = 0; continue; }
        for (int t = LT_N - 1; t >= 0; t--) if (st & (1u << t)) { A[v] = (uint8_t)t; break; }
        any = 1;
    }
    if (!any) return 0;
    int isfor = s->kind == LK_FOR;
    if (isfor) {
        A[s->var] = LT_PYINT;
        if (s->i > 0) A[s->i - 1] = LT_PYINT;
    }
    uint8_t *st = PyMem_Malloc(sz);
    if (!st) { PyErr_Clear(); return 0; }
    int ok = 0;
    /* the types one iteration leaves, from a guess (NumPy's types first),
     * until they are the types it started from */
    for (int round = 0; round < 4 && !ok; round++) {
        memcpy(st, A, sz);
        if (tflow(g, s->body, s->nbody, st, A, 0) < 0) break;
        if (isfor) {
            st[s->var] = LT_PYINT;
            if (s->i > 0) st[s->i - 1] = LT_PYINT;
        }
        ok = !memcmp(st, A, sz);
        for (int v = 0; v < nv; v++)
            if (use[v] && st[v] != LT_UNBOUND && (T->vset[v] & (1u << st[v]))) A[v] = st[v];
    }
    PyMem_Free(st);
    return ok;
}

static int stmts(cg *g, nd_ln *const *b, int n);

#define POLL "if (NDL_UNLIKELY(++nd_tick == 0) && F->poll(F)) { rc = NDL_PYERR; goto nd_err; }"

/* whether block b holds a loop */
static int has_loop(nd_ln *const *b, int n)
{
    for (int k = 0; k < n; k++)
        if (b[k]->kind == LK_FOR || b[k]->kind == LK_WHILE || has_loop(b[k]->body, b[k]->nbody) ||
            has_loop(b[k]->orelse, b[k]->norelse))
            return 1;
    return 0;
}

/* whether expression/statement e (and its blocks) works on array values --
 * a slice, a whole array, a reduction or product of them: C loops of their
 * own, which the copy of an innermost loop does not unroll (unrolling a
 * body of several element loops made its compile 8x longer) */
static int arrays_in(cg *g, const nd_ln *e)
{
    if (!e) return 0;
    if (e->kind == LK_SLICE || e->kind == LK_SL || e->kind == LK_ALLOC) return 1;
    if (e->kind == LK_VAR && g->T->adt[e->var] >= 0) return 1;
    if (e->kind == LK_CALL && e->aux >= LF_NP_DOT && e->aux <= LF_NP_ARGMIN) return 1;
    if ((e->kind == LK_STORE || e->kind == LK_AUGSTORE) && g->T->adt[e->var] >= 0 &&
        e->n - 1 != g->T->andim[e->var])
        return 1;
    for (int k = 0; k < e->n; k++) if (arrays_in(g, e->kid[k])) return 1;
    for (int k = 0; k < e->nbody; k++) if (arrays_in(g, e->body[k])) return 1;
    for (int k = 0; k < e->norelse; k++) if (arrays_in(g, e->orelse[k])) return 1;
    return 0;
}

/* whether block b continues its own loop (not a loop nested in it) */
static int continues(nd_ln *const *b, int n)
{
    for (int k = 0; k < n; k++) {
        if (b[k]->kind == LK_CONTINUE) return 1;
        if (b[k]->kind == LK_IF && (continues(b[k]->body, b[k]->nbody) || continues(b[k]->orelse, b[k]->norelse)))
            return 1;
    }
    return 0;
}

#define MAXCHAIN 4
/* the outermost loop: its locals' types at entry are the signature's, so
 * the types of its first iterations follow from them. The number of
 * iterations before the types are the steady ones A (states: the types of
 * each of those), or -1 when they do not get there in MAXCHAIN */
static int chain(cg *g, const nd_ln *s, const uint8_t *A, const uint8_t *use, uint8_t *states)
{
    int nv = g->ir->nvars;
    size_t sz = (size_t)nv + 1;
    uint8_t *st = PyMem_Malloc(2 * sz);
    if (!st) { PyErr_Clear(); return -1; }
    memcpy(st, g->assign, sz);
    for (int v = 0; v < nv; v++) if (use[v]) st[v] = g->T->entry[v];
    int n = -1, cont = continues(s->body, s->nbody);
    for (int c = 0; c <= MAXCHAIN; c++) {
        st[s->var] = LT_PYINT;
        if (s->i > 0) st[s->i - 1] = LT_PYINT;
        int same = 1;
        for (int v = 0; v < nv; v++) same &= !use[v] || st[v] == A[v];
        if (same) { n = c; break; }
        if (c == MAXCHAIN) break;
        memcpy(states + (size_t)c * sz, st, sz);
        memcpy(st + sz, st, sz);
        if (tflow(g, s->body, s->nbody, st + sz, st, 0) < 0) break;
        st[sz + s->var] = LT_PYINT;
        if (s->i > 0) st[sz + s->i - 1] = LT_PYINT;
        /* a continue would start the next iteration with this one's types */
        if (cont && memcmp(st, st + sz, sz)) break;
        memcpy(st, st + sz, sz);
    }
    PyMem_Free(st);
    return n;
}

static void pin(cg *g, const uint8_t *types, const uint8_t *use, uint8_t *saved)
{
    int nv = g->ir->nvars;
    memcpy(saved, g->assign, (size_t)nv + 1);
    for (int v = 0; v < nv; v++)
        if (use[v] && types[v] != LT_UNBOUND) { g->pin[v] = 1; g->assign[v] = types[v]; }
    g->pinned = 1;
}

static void unpin(cg *g, const uint8_t *saved)
{
    int nv = g->ir->nvars;
    memcpy(g->assign, saved, (size_t)nv + 1);
    memset(g->pin, 0, (size_t)nv + 1);
    g->pinned = 0;
}

/* one iteration of for loop s (id: its C names): the loop variables, then
 * the body; types: NULL, or the types of the locals marked in use, known
 * (pinned) in it (saved: room to keep the state); single: a lone iteration
 * (not inside a C loop: the body in a do { } while (0), which is what
 * continue leaves, while a break leaves the loop) */
static int iteration(cg *g, const nd_ln *s, int id, int lab, char (*names)[16], const uint8_t *types,
                     const uint8_t *use, uint8_t *saved, int single)
{
    int rc;
    if (!g->notick) line(g, POLL);
    if (g->nohz)   /* k is signed there (see LK_FOR): no wraparound to compute */
        line(g, "v%d_%d = %s + k%d * %s; v%d_t = %d;", s->var, REP(LT_PYINT), names[0], id, names[2], s->var,
             LT_PYINT);
    else
        line(g, "v%d_%d = (int64_t)((uint64_t)%s + k%d * (uint64_t)%s); v%d_t = %d;", s->var, REP(LT_PYINT),
             names[0], id, names[2], s->var, LT_PYINT);
    if (s->i > 0)
        line(g, "v%d_%d = (int64_t)k%d; v%d_t = %d;", (int)s->i - 1, REP(LT_PYINT), id, (int)s->i - 1, LT_PYINT);
    if (types) pin(g, types, use, saved);
    uint8_t b0 = g->bound[s->var], b1 = s->i > 0 ? g->bound[s->i - 1] : 0;
    g->bound[s->var] = 1;
    if (s->i > 0) g->bound[s->i - 1] = 1;
    int brk = g->brk;
    g->brk = single ? lab : 0;
    if (single) { line(g, "do {"); g->ind++; }
    rc = stmts(g, s->body, s->nbody);
    if (single) { g->ind--; line(g, "} while (0);"); }
    g->brk = brk;
    g->bound[s->var] = b0;
    if (s->i > 0) g->bound[s->i - 1] = b1;
    if (types) unpin(g, saved);
    return rc;
}

/* a while loop; types: NULL, or the steady types of the locals in use
 * (saved: room to keep the state); test: the general version, which goes
 * to the steady one (nd_steady<id>) once the tags are A */
static int while_loop(cg *g, const nd_ln *s, int id, const uint8_t *types, const uint8_t *use, uint8_t *saved,
                      const uint8_t *A)
{
    char c[16];
    int nv = g->ir->nvars, rc = 0;
    snprintf(c, sizeof c, "c%d", ++g->tmp);
    line(g, "for (;;) {");
    g->ind++;
    int brk = g->brk;
    g->brk = 0;
    line(g, POLL);
    if (A) {
        for (int k = 0; k < g->ind; k++) nd_sb_puts(g->sb, "  ");
        nd_sb_puts(g->sb, "if (1");
        for (int v = 0; v < nv; v++)
            if (use[v]) nd_sb_printf(g->sb, " && v%d_t == %d", v, A[v]);
        nd_sb_printf(g->sb, ") goto nd_steady%d;\n", id);
    }
    if (types) pin(g, types, use, saved);
    line(g, "int %s = 0;", c);
    rc = specialize(g, s, s->kid, 1, emit_cond, c);
    if (rc == 0) {
        line(g, "if (!%s) break;", c);
        rc = stmts(g, s->body, s->nbody);
    }
    if (types) unpin(g, saved);
    g->brk = brk;
    g->ind--;
    line(g, "}");
    return rc;
}

/* whether v is an operand of a product, quotient or power in e */
static int scaled_var(const nd_ln *e, int v)
{
    if (!e) return 0;
    if (e->kind == LK_BIN && (e->op == LO_MUL || e->op == LO_TDIV || e->op == LO_FDIV || e->op == LO_MOD ||
                              e->op == LO_POW) &&
        refs_var(e, v))
        return 1;
    for (int k = 0; k < e->n; k++) if (scaled_var(e->kid[k], v)) return 1;
    return 0;
}

/* whether statements b[0..n) (ifs included, not nested loops) carry a
 * floating-point scalar from one iteration to the next through an
 * assignment that reads it (s -= L[i, k] * L[j, k]): an in-order sum.
 * Not where the value scales it (Horner's acc = acc * x + c[k]): that is no
 * reduction GCC's vectorizer takes, so it needs no barrier, and the barrier
 * cost such a loop unrolled by 4 (Horner over 3000 points of degree 11, a C
 * harness: 18.3 -> 16.8 us) */
static int float_fold(cg *g, nd_ln *const *b, int n)
{
    const uint32_t fl = (1u << LT_PYFLOAT) | (1u << LT_F4) | (1u << LT_F8);
    for (int k = 0; k < n; k++) {
        const nd_ln *s = b[k];
        if (s->kind == LK_ASSIGN && g->T->adt[s->var] < 0 && !is_alocal(g, s->var) &&
            (g->T->vset[s->var] & fl) && refs_var(s->kid[0], s->var) && !scaled_var(s->kid[0], s->var))
            return 1;
        if (s->kind == LK_IF && (float_fold(g, s->body, s->nbody) || float_fold(g, s->orelse, s->norelse)))
            return 1;
    }
    return 0;
}

/* how statements b[0..n) (nested blocks included) change variable v: -1
 * only ever `v -= c` / `v = v - c` (c a positive constant; `+` of a
 * negative one alike), +1 only increases, 2 never binds it, 0 anything else */
static int monotone(nd_ln *const *b, int n, int v)
{
    int dir = 2;
    for (int k = 0; k < n; k++) {
        const nd_ln *s = b[k];
        int d = 2;
        if (s->kind == LK_ASSIGN && s->var == v) {
            const nd_ln *x = s->kid[0];
            int64_t c;
            if (affine_index(x, &c) != v || c == 0) return 0;
            d = c < 0 ? -1 : 1;
        } else if (s->kind == LK_MULTI && nd_lir_binds(&b[k], 1, v)) {
            return 0;
        } else if (s->kind == LK_FOR && (s->var == v || (s->i > 0 && s->i - 1 == v))) {
            return 0;   /* a for loop's target (or its count) is v */
        }
        if (s->kind == LK_IF || s->kind == LK_FOR || s->kind == LK_WHILE) {
            int d1 = monotone(s->body, s->nbody, v), d2 = monotone(s->orelse, s->norelse, v);
            if (!d1 || !d2) return 0;
            if (d1 != 2) d = d1;
            if (d2 != 2) { if (d != 2 && d != d2) return 0; d = d2; }
        }
        if (d == 2) continue;
        if (dir != 2 && dir != d) return 0;
        dir = d;
    }
    return dir;
}

/* A while loop's range checks of a[v + c] for an int local v that only
 * decreases in it (insertion sort's `while j >= 0 and a[j] > key: a[j + 1]
 * = a[j]; j -= 1`): every value v takes is at most its value now, so the
 * upper end of each range is proved before the loop, once (an increasing v:
 * the lower end; a v the loop does not change: both). A Python int only:
 * NumPy's int64 wraps around, a Python int past int64 deoptimizes. Pushes
 * the proofs (g->nh) and returns how many, or -1 */
static int while_hoist(cg *g, const nd_ln *s, int id)
{
    int nv = g->ir->nvars, pushed = 0;
    for (int v = 0; v < nv && g->nh < 16; v++) {
        if (g->T->adt[v] >= 0 || is_alocal(g, v) || g->T->vset[v] != (1u << LT_PYINT) ||
            (g->ir->vflags[v] & VF_HIDDEN))
            continue;
        int dir = monotone(s->body, s->nbody, v);
        if (!dir) continue;
        hset *h = PyMem_Calloc(1, sizeof(hset));
        if (!h) { PyErr_NoMemory(); g->fail = -1; return -1; }
        hscan_expr(g, s->kid[0], s, v, h);
        hscan(g, s->body, s->nbody, s, v, h);
        if (h->n && !h->full) {
            char *hz = g->hz[g->nh];
            snprintf(hz, 16, "hw%d", ++g->tmp);
            g->hvar[g->nh] = v;
            g->hloop[g->nh] = s;
            g->hdir[g->nh] = dir == 2 ? 0 : dir;
            line(g, "int %s = v%d_t == LT_PYINT;", hz, v);
            for (int k = 0; k < h->n; k++) {
                const htrip *q = &h->t[k];
                char u[200] = "", up[64] = "", lo[24] = "";
                if (q->w >= 0)
                    snprintf(u, sizeof u, " && (v%d_t == LT_PYINT || v%d_t == LT_I8) && !__builtin_%s_overflow(x_, v%d_%d, &x_)",
                             q->w, q->w, q->ws > 0 ? "add" : "sub", q->w, REP(LT_PYINT));
                if (dir != 1) snprintf(up, sizeof up, " && x_ < a%d_n%d", q->a, q->axis);
                if (dir != -1) snprintf(lo, sizeof lo, " && x_ >= 0");
                line(g, "{ int64_t x_; %s &= !__builtin_add_overflow(v%d_%d, %lldll, &x_)%s%s%s; }", hz, v,
                     REP(LT_PYINT), (long long)q->c, u, up, lo);
            }
            g->nh++;
            pushed++;
        }
        PyMem_Free(h);
    }
    return pushed;
}

/* the same expression, node for node (the same source text) */
static int same_expr(const nd_ln *a, const nd_ln *b)
{
    if (!a || !b) return a == b;
    if (a->kind != b->kind || a->op != b->op || a->n != b->n || a->var != b->var || a->aux != b->aux ||
        a->i != b->i || memcmp(&a->f, &b->f, sizeof a->f) != 0)
        return 0;
    for (int k = 0; k < a->n; k++) if (!same_expr(a->kid[k], b->kid[k])) return 0;
    return 1;
}

/* an expression that, evaluated again with no store or assignment in
 * between, gives the same value and no effect but its slow paths' warnings:
 * names, constants, element loads and arithmetic */
static int pure_expr(const nd_ln *e)
{
    if (!e) return 0;
    switch (e->kind) {
    case LK_CONST: case LK_VAR: case LK_SHAPE: case LK_BIN: case LK_UN: case LK_ELEM: break;
    default: return 0;
    }
    for (int k = 0; k < e->n; k++) if (!pure_expr(e->kid[k])) return 0;
    return 1;
}

/* `if E < x: x = E` (any comparison, E on either side, no else): the
 * running minimum or maximum of dynamic programming (edit distance's
 * `if D[i, j - 1] + 1 < best: best = D[i, j - 1] + 1`). Python evaluates E
 * twice; between the two only the comparison runs, so the second value is
 * the first. The operand to reuse, or NULL. Emitted as a select of that
 * value (select_if), the C compiler makes it a conditional move: as a
 * branch around E's second evaluation, with its slow path, it could not, and
 * the branch on the data mispredicts */
static const nd_ln *select_operand(cg *g, const nd_ln *s)
{
    if (s->norelse || s->nbody != 1 || g->vec) return NULL;
    const nd_ln *b = s->body[0], *c = s->kid[0];
    if (b->kind != LK_ASSIGN || c->kind != LK_CMP || c->n != 2) return NULL;
    if (g->T->adt[b->var] >= 0 || is_alocal(g, b->var)) return NULL;
    const nd_ln *e = b->kid[0];
    if (e->kind == LK_VAR || e->kind == LK_CONST || !pure_expr(e)) return NULL;
    /* one typed arm: the value's temporary is in scope after the condition */
    uvars u = {{0}, 0};
    if (collect(g, c, &u) < 0 || u.n) return NULL;
    for (int k = 0; k < 2; k++) if (same_expr(c->kid[k], e)) return c->kid[k];
    return NULL;
}

/* x = c ? E's value : x, and the tag alike; where E's evaluation in the
 * condition took a slow path (a warning), the assignment evaluates E again
 * as Python does, warning again */
static int select_if(cg *g, const nd_ln *s, const char *c)
{
    int x = s->body[0]->var, t = g->cse_v.t;
    line(g, "if (NDL_UNLIKELY(%s)) {", g->cse_flag);
    line(g, "  if (%s) {", c);
    g->ind += 2;
    int rc = stmts(g, s->body, s->nbody);
    g->ind -= 2;
    line(g, "  }");
    line(g, "} else {");
    line(g, "  v%d_%d = %s ? %s : v%d_%d; v%d_t = %s ? %d : v%d_t;", x, REP(t), c, g->cse_v.s, x, REP(t), x, c, t, x);
    line(g, "}");
    return rc;
}

static int stmt(cg *g, const nd_ln *s)
{
    switch (s->kind) {
    case LK_ASSIGN: case LK_MULTI: case LK_STORE: case LK_AUGSTORE: {
        /* a pinned variable's type after the statement (tflow() followed it) */
        int m = s->kind == LK_ASSIGN ? 1 : s->kind == LK_MULTI ? s->n / 2 : 0, nt[64];
        if (g->pinned && m <= 64)
            for (int k = 0; k < m; k++) {
                int v = s->kind == LK_ASSIGN ? s->var : s->kid[k]->var, bits;
                nt[k] = g->pin[v] ? nd_lty_expr(g->T, s->kind == LK_ASSIGN ? s->kid[0] : s->kid[m + k], g->assign, &bits) : -1;
            }
        /* a tuple assignment's targets are written, not read: only its
         * values choose the typed arm (a target first bound by this
         * statement has no type yet) */
        if (specialize(g, s, s->kind == LK_MULTI ? s->kid + m : s->kid, s->kind == LK_MULTI ? m : s->n,
                       emit_simple, NULL) < 0) return -1;
        if (g->pinned && m <= 64)
            for (int k = 0; k < m; k++) {
                int v = s->kind == LK_ASSIGN ? s->var : s->kid[k]->var;
                if (g->pin[v]) {
                    if (nt[k] < 0 || nt[k] >= LT_N) return no_type(g, s);
                    g->assign[v] = (uint8_t)nt[k];
                }
            }
        return 0;
    }
    case LK_IF: {
        char c[16];
        snprintf(c, sizeof c, "c%d", ++g->tmp);
        line(g, "int %s = 0;", c);
        const nd_ln *sel = select_operand(g, s);
        if (sel) {
            snprintf(g->cse_flag, sizeof g->cse_flag, "sf%d", ++g->tmp);
            line(g, "int %s = 0;", g->cse_flag);
            g->cse_e = sel;
            g->cse_have = 0;
        }
        int crc = specialize(g, s, s->kid, 1, emit_cond, c);
        g->cse_e = NULL;
        if (crc < 0) return -1;
        if (sel && g->cse_have && g->cse_v.t >= 0 && g->cse_v.t < LT_N &&
            (g->T->vset[s->body[0]->var] & (1u << g->cse_v.t)))
            return select_if(g, s, c);
        /* both branches start from the types before the if (and end with
         * the same ones: tflow() made sure) */
        int nv = g->ir->nvars;
        uint8_t *pre = g->pinned ? PyMem_Malloc((size_t)nv + 1) : NULL;
        if (g->pinned && !pre) { PyErr_NoMemory(); g->fail = -1; return -1; }
        if (pre) memcpy(pre, g->assign, (size_t)nv + 1);
        line(g, "if (%s) {", c);
        g->ind++;
        int rc = stmts(g, s->body, s->nbody);
        g->ind--;
        if (rc == 0 && s->norelse) {
            if (pre) memcpy(g->assign, pre, (size_t)nv + 1);
            line(g, "} else {");
            g->ind++;
            rc = stmts(g, s->orelse, s->norelse);
            g->ind--;
        }
        PyMem_Free(pre);
        if (rc < 0) return -1;
        line(g, "}");
        return 0;
    }
    case LK_WHILE: {
        /* as a for loop (below): the general version, or where it needed
         * tests with more than one outcome and the loop's types settle,
         * the general version going to the steady one once they have */
        int id = ++g->tmp, nv = g->ir->nvars, peel = 0, rc = 0;
        size_t sz = (size_t)nv + 1;
        uint8_t *A = NULL;
        line(g, "{");
        g->ind++;
        int hoist = while_hoist(g, s, id);
        if (hoist < 0) return -1;
        if (!g->pinned) {
            if (!(A = PyMem_Malloc(3 * sz))) { PyErr_NoMemory(); g->fail = -1; return -1; }
            peel = steady(g, s, A, A + sz);
        }
        size_t mark = g->sb->n;
        int multi = g->multiarm;
        rc = while_loop(g, s, id, NULL, NULL, NULL, NULL);
        if (rc == 0 && peel && g->multiarm != multi) {
            g->sb->n = mark;
            rc = while_loop(g, s, id, NULL, A + sz, NULL, A);
            if (rc == 0) {
                line(g, "goto nd_done%d;", id);
                line(g, "nd_steady%d:", id);
                rc = while_loop(g, s, id, A, A + sz, A + 2 * sz, NULL);
                line(g, "nd_done%d:;", id);
            }
        }
        PyMem_Free(A);
        g->nh -= hoist;
        g->ind--;
        line(g, "}");
        return rc;
    }
    case LK_FOR: {
        char names[4][16];
        int id = ++g->tmp;
        for (int k = 0; k < 4; k++) snprintf(names[k], 16, "r%d_%d", id, k);
        line(g, "{");
        g->ind++;
        line(g, "int64_t %s = 0, %s = 0, %s = 1, %s = 0;", names[0], names[1], names[2], names[3]);
        if (specialize(g, s, s->kid, s->n, emit_range, names) < 0) return -1;
        line(g, "if (NDL_UNLIKELY(%s == 0)) { F->err_line = %d; rc = NDL_RANGE0; goto nd_err; }", names[2], s->line);
        line(g, "uint64_t n%d = %s > 0 ? (%s > %s ? ((uint64_t)%s - (uint64_t)%s - 1) / (uint64_t)%s + 1 : 0)",
             id, names[2], names[1], names[0], names[1], names[0], names[2]);
        line(g, "                    : (%s > %s ? ((uint64_t)%s - (uint64_t)%s - 1) / ((uint64_t)0 - (uint64_t)%s) + 1 : 0);",
             names[0], names[1], names[0], names[1], names[2]);
        if (s->n == 4)   /* zip: the shortest iterable ends it */
            line(g, "if (n%d > (uint64_t)(%s < 0 ? 0 : %s)) n%d = (uint64_t)(%s < 0 ? 0 : %s);", id, names[3],
                 names[3], id, names[3], names[3]);
        /* range checks of a[v + c] proved once for every value v takes */
        int hoist = 0;
        if (g->nh < 16 && !nd_lir_binds(s->body, s->nbody, s->var)) {
            hset *h = PyMem_Calloc(1, sizeof(hset));
            if (!h) { PyErr_NoMemory(); g->fail = -1; return -1; }
            hscan(g, s->body, s->nbody, s, s->var, h);
            if (h->n && !h->full) {
                hoist = 1;
                snprintf(g->hz[g->nh], 16, "hz%d", id);
                g->hvar[g->nh] = s->var;
                g->hloop[g->nh] = s;
                g->hdir[g->nh] = 0;
                line(g, "int hz%d = 1;", id);
                const char *pz = pre_proved(g, s);
                if (pz) line(g, "if (!%s && n%d) {", pz, id);
                else line(g, "if (n%d) {", id);
                line(g, "  int64_t f_ = %s, l_ = (int64_t)((uint64_t)%s + (n%d - 1) * (uint64_t)%s);", names[0],
                     names[0], id, names[2]);
                line(g, "  int64_t mn_ = f_ < l_ ? f_ : l_, mx_ = f_ < l_ ? l_ : f_;");
                for (int k = 0; k < h->n; k++) {
                    const htrip *q = &h->t[k];
                    if (q->w < 0) {
                        line(g, "  hz%d &= mn_ >= %lldll && mx_ < a%d_n%d - %lldll;", id, -(long long)q->c, q->a,
                             q->axis, (long long)q->c);
                        continue;
                    }
                    /* v + u: u's value now is its value throughout the loop.
                     * In int64 with overflow tests rather than __int128: the
                     * same answer (a sum past int64 is past any length too;
                     * mn_ <= mx_), without a 128-bit value that GCC kept in
                     * memory across the outer loop's iterations */
                    const char *bop = q->ws > 0 ? "add" : "sub";
                    line(g, "  { int64_t lo_, hi_; hz%d &= (v%d_t == LT_PYINT || v%d_t == LT_I8) && "
                            "!__builtin_%s_overflow(mn_, v%d_%d, &lo_) && lo_ >= 0 && "
                            "!__builtin_%s_overflow(mx_, v%d_%d, &hi_) && hi_ < a%d_n%d; }",
                         id, q->w, q->w, bop, q->w, REP(LT_PYINT), bop, q->w, REP(LT_PYINT), q->a, q->axis);
                }
                line(g, "}");
                g->nh++;
            }
            PyMem_Free(h);
        }
        int npz = g->npz;
        if (!nd_lir_binds(s->body, s->nbody, s->var) && pre_prove(g, s->body, s->nbody, s, id, names) < 0)
            return -1;
        int nv = g->ir->nvars, peel = 0, nch = -1, rc = 0;
        size_t sz = (size_t)nv + 1;
        uint8_t *A = NULL, *use = NULL, *saved = NULL, *states = NULL;
        if (!g->pinned) {
            A = PyMem_Malloc((3 + MAXCHAIN) * sz);
            if (!A) { PyErr_NoMemory(); g->fail = -1; return -1; }
            use = A + sz;
            saved = use + sz;
            states = saved + sz;
            peel = steady(g, s, A, use);
            if (peel && s == g->ir->root) nch = chain(g, s, A, use, states);
        }
        /* an innermost loop with range checks proved before it: one copy
         * without them, run when every proof held, and one with them (the
         * checks are tests inside the loop that keep the C compiler from
         * keeping the loop simple) */
        int ncopy = g->nh > 0 && !g->nohz && !has_loop(s->body, s->nbody) ? 2 : 1;
        /* an innermost loop in the first copy of an outer loop (below) whose
         * conditions for the unchecked copy were proved before the outer
         * one: that copy alone, no test at each entry (the other copy was
         * code the outer loop carried, and registers it held) */
        int known = 0;
        if (ncopy == 2 && g->pf_hi && hoist && g->nh == g->pf_nh + 1)
            for (int k = g->pf_lo; k < g->pf_hi; k++) known |= g->ploop[k] == s;
        if (known) {
            memset(g->setok, 0, (size_t)nv + 1);
            for (int k = 0; k < s->nbody; k++) arefs(g, s->body[k], g->setok);
            for (int v = 0; v < nv; v++)
                if (g->setok[v] && !nd_lir_binds(s->body, s->nbody, v)) known = 0;
            memset(g->setok, 0, (size_t)nv + 1);
            if (known) ncopy = 1;
        }
        /* an outer loop with such inner loops (pre_prove()): a copy run when
         * every range flag so far and the inner loops' own conditions
         * (pf<id>) held, in which the inner loops are their unchecked copy
         * and this loop's own checks are known to pass (GCC drops them), and
         * the general copy. A window's max/min over 5000 rows of 9: the
         * per-row test and the other copy's registers were a fifth of it */
        int ofast = 0, opf_lo = g->pf_lo, opf_hi = g->pf_hi, opf_nh = g->pf_nh;
        if (!g->ofast && !g->nohz && has_loop(s->body, s->nbody))
            for (int k = npz; k < g->npz; k++) ofast |= !has_loop(g->ploop[k]->body, g->ploop[k]->nbody);
        if (ofast) {
            ncopy = 2;
            g->ofast = 1;
            for (int k = 0; k < g->ind; k++) nd_sb_puts(g->sb, "  ");
            nd_sb_puts(g->sb, "if (__builtin_expect(!!(1");
            for (int k = 0; k < g->nh; k++) nd_sb_printf(g->sb, " && %s", g->hz[k]);
            for (int k = npz; k < g->npz; k++) nd_sb_printf(g->sb, " && pf%s", g->pz[k] + 2);
            nd_sb_puts(g->sb, "), 1)) {\n");
            g->ind++;
        } else if (ncopy == 2) {
            /* that copy computes the variable as r0 + k * step in int64:
             * (n - 1) * step must fit (every value does, the product need
             * not when no proof bounds this loop's variable) */
            line(g, "int64_t nd_p%d;", id);
            for (int k = 0; k < g->ind; k++) nd_sb_puts(g->sb, "  ");
            nd_sb_printf(g->sb, "if (__builtin_expect(!__builtin_mul_overflow((int64_t)n%d - 1, %s, &nd_p%d)", id,
                         names[2], id);
            for (int k = 0; k < g->nh; k++) nd_sb_printf(g->sb, " && %s", g->hz[k]);
            /* array locals the loop reads and does not rebind (A, B = B, A
             * outside it): bound once for all its iterations. A test at each
             * access is an exit from the loop, which keeps it from being
             * vectorized; an unbound one runs the other copy, which raises
             * at the access */
            memset(g->setok, 0, (size_t)nv + 1);
            for (int k = 0; k < s->nbody; k++) arefs(g, s->body[k], g->setok);
            for (int v = 0; v < nv; v++)
                if (g->setok[v] && !nd_lir_binds(s->body, s->nbody, v)) nd_sb_printf(g->sb, " && a%d_set", v);
                else g->setok[v] = 0;
            nd_sb_printf(g->sb, " && n%d <= 65536u, 1)) {\n", id);
            g->ind++;
            /* their strides are values of the call (a view's may be any):
             * where each last axis is contiguous, a copy with the element
             * size as the constant stride, which GCC can vectorize (it
             * does not vectorize accesses of an unknown stride) */
            int units = 0;
            for (int v = 0; v < nv; v++)
                if (g->setok[v]) {
                    if (!units++) {
                        for (int k = 0; k < g->ind; k++) nd_sb_puts(g->sb, "  ");
                        nd_sb_puts(g->sb, "if (1");
                    }
                    nd_sb_printf(g->sb, " && a%d_s%d == (int64_t)sizeof(%s)", v, g->T->andim[v] - 1,
                                 ctype[g->T->adt[v]]);
                }
            if (units) {
                nd_sb_puts(g->sb, ") {\n");
                g->ind++;
                ncopy = 3;
            }
        }
        for (int copy = 0; copy < ncopy && rc == 0; copy++) {
            if (copy == 1 && ncopy == 3) {
                g->ind--;
                line(g, "} else {");
                g->ind++;
            }
            if (copy == ncopy - 1 && copy > 0) {
                if (ncopy == 3) {
                    g->ind--;
                    line(g, "}");
                }
                g->ind--;
                line(g, "} else {");
                g->ind++;
            }
            g->nohz = !ofast && (known || (ncopy >= 2 && copy < ncopy - 1));
            g->unit = !ofast && ncopy == 3 && copy == 0;
            if (ofast) {
                g->pf_lo = npz;
                g->pf_hi = copy == 0 ? g->npz : 0;
                g->pf_nh = g->nh;
            }
            /* that copy (at most 2^16 iterations) counts them toward the
             * poll (Ctrl-C) at once, before it starts: the per-iteration
             * tick and its branch were a good part of a small innermost
             * loop (a dot product's), and kept fewer iterations in flight */
            g->notick = g->nohz;
            if (g->notick)
                line(g, "nd_tick2 += (uint32_t)n%d; if (NDL_UNLIKELY(nd_tick2 >= 65536u)) { nd_tick2 = 0; "
                        "if (F->poll(F)) { rc = NDL_PYERR; goto nd_err; } }", id);
            int lab = ++g->tmp;
            size_t mark = g->sb->n;
            int multi = g->multiarm;
            /* the general version; where it needed a type test with more than
             * one outcome somewhere and the loop has steady types, it is
             * replaced: by the iterations leading to the steady types, each
             * with its types known, when they follow from the types at entry
             * (the outermost loop), else by itself entering the steady version
             * once the tags are the steady types */
            for (int pass = 0; pass < 2 && rc == 0; pass++) {
                if (pass == 1) {
                    if (!peel || g->multiarm == multi) break;
                    g->sb->n = mark;
                }
                /* the copy of at most 2^16 iterations counts them with a
                 * signed int64 and computes the loop variable in int64 (no
                 * value it takes can overflow): GCC's vectorizer gives up on
                 * addresses computed from an unsigned counter ("no vectype") */
                const char *kt = g->nohz ? "int64_t" : "uint64_t";
                line(g, "%s k%d = 0;", kt, id);
                if (pass == 1 && nch >= 0) {
                    for (int c = 0; c < nch && rc == 0; c++) {
                        line(g, "if (k%d >= (%s)n%d) goto nd_done%d;", id, kt, id, lab);
                        line(g, "{");
                        g->ind++;
                        rc = iteration(g, s, id, lab, names, states + (size_t)c * sz, use, saved, 1);
                        g->ind--;
                        line(g, "}");
                        line(g, "k%d++;", id);
                    }
                }
                if (rc == 0 && (pass == 0 || nch < 0)) {
                    int arrays = 0;
                    for (int k = 0; k < s->nbody && !arrays; k++) arrays = arrays_in(g, s->body[k]);
                    if (g->nohz && !arrays) line(g, "#pragma GCC unroll 4");
                    line(g, "for (; k%d < (%s)n%d; k%d++) {", id, kt, id, id);
                    g->ind++;
                    /* an in-order float sum (no reassociation: NumPy's
                     * rounding) is a chain of dependent adds either way;
                     * vectorized, GCC adds extracting lane by lane and pays a
                     * prologue and an epilogue per run of the loop, slower on
                     * short runs (Cholesky's 0..i: 16.6 -> 13.3 us at n=50).
                     * An empty asm statement keeps the vectorizer off this
                     * loop (GCC 12 has no per-loop pragma); it emits nothing */
                    if (g->nohz && float_fold(g, s->body, s->nbody)) line(g, "__asm__ __volatile__(\"\");");
                    if (pass == 1) {
                        for (int k = 0; k < g->ind; k++) nd_sb_puts(g->sb, "  ");
                        nd_sb_puts(g->sb, "if (1");
                        for (int v = 0; v < nv; v++)
                            if (use[v]) nd_sb_printf(g->sb, " && v%d_t == %d", v, A[v]);
                        nd_sb_printf(g->sb, ") goto nd_steady%d;\n", lab);
                    }
                    rc = iteration(g, s, id, lab, names, NULL, NULL, NULL, 0);
                    g->ind--;
                    line(g, "}");
                    if (pass == 1) line(g, "goto nd_done%d;", lab);
                }
                if (rc == 0 && pass == 1) {
                    if (nch < 0) line(g, "nd_steady%d:", lab);
                    line(g, "for (; k%d < (%s)n%d; k%d++) {", id, kt, id, id);
                    g->ind++;
                    rc = iteration(g, s, id, lab, names, A, use, saved, 0);
                    g->ind--;
                    line(g, "}");
                    line(g, "nd_done%d:;", lab);
                }
            }
        }
        g->nohz = 0;
        g->unit = 0;
        g->notick = 0;
        if (ofast) {
            g->ofast = 0;
            g->pf_lo = opf_lo;
            g->pf_hi = opf_hi;
            g->pf_nh = opf_nh;
        }
        if (ncopy >= 2) {
            g->ind--;
            line(g, "}");
        }
        PyMem_Free(A);
        if (rc < 0) return -1;
        if (hoist) g->nh--;
        g->npz = npz;
        g->ind--;
        line(g, "}");
        return 0;
    }
    case LK_BREAK:
        if (g->brk) line(g, "goto nd_done%d;", g->brk);
        else line(g, "break;");
        return 0;
    case LK_CONTINUE: line(g, "continue;"); return 0;
    case LK_PASS: return 0;
    default:
        return no_type(g, s);
    }
}

/* a block: a scalar it assigns is bound for the rest of it */
static int stmts(cg *g, nd_ln *const *b, int n)
{
    int nv = g->ir->nvars, rc = 0;
    uint8_t *saved = PyMem_Malloc((size_t)nv + 1);
    if (!saved) { PyErr_NoMemory(); g->fail = -1; return -1; }
    memcpy(saved, g->bound, (size_t)nv + 1);
    for (int k = 0; k < n && rc == 0; k++) {
        const nd_ln *s = b[k];
        if (stmt(g, s) < 0) { rc = -1; break; }
        if (s->kind == LK_ASSIGN) g->bound[s->var] = 1;
        else if (s->kind == LK_MULTI)
            for (int j = 0; j < s->n / 2; j++) g->bound[s->kid[j]->var] = 1;
    }
    memcpy(g->bound, saved, (size_t)nv + 1);
    PyMem_Free(saved);
    return rc;
}

#define KERNEL_H "#include \"nd_kernel.h\"\n"

/* whether the loop's C names anything of nd_kernel.h (nd_* / ND_* other
 * than its own locals and labels) */
static int kernel_h_used(const char *p, size_t n)
{
    static const char *const own[] = {"nd_tick", "nd_tick2", "nd_fpp", "nd_scr_cap", "nd_scr", "nd_out", "nd_err", "nd_loop_main",
                                      "nd_lframe", "nd_done", "nd_steady"};
    for (size_t i = 0; i + 3 <= n; i++) {
        if (!((p[i] == 'n' && p[i + 1] == 'd' && p[i + 2] == '_') || (p[i] == 'N' && p[i + 1] == 'D' && p[i + 2] == '_')))
            continue;
        if (i && (isalnum((unsigned char)p[i - 1]) || p[i - 1] == '_')) continue;
        size_t j = i;
        while (j < n && (isalnum((unsigned char)p[j]) || p[j] == '_')) j++;
        int known = 0;
        for (size_t k = 0; k < sizeof own / sizeof *own && !known; k++) {
            size_t l = strlen(own[k]);
            if (j - i < l || strncmp(p + i, own[k], l)) continue;
            known = j - i == l;
            /* labels: nd_done12, nd_steady3 */
            if (!known && (!strcmp(own[k], "nd_done") || !strcmp(own[k], "nd_steady"))) {
                known = 1;
                for (size_t q = i + l; q < j; q++) known &= isdigit((unsigned char)p[q]) != 0;
            }
        }
        if (!known) return 1;
        i = j;
    }
    return 0;
}

static int gen(struct nd_ltyping_s *T, nd_sb *out, int *needs_snapshot, int quiet, int *redo)
{
    const nd_lir *ir = T->ir;
    cg g;
    memset(&g, 0, sizeof g);
    g.quiet = quiet;
    g.T = T;
    g.ir = ir;
    g.sb = out;
    if (!(g.assign = PyMem_Malloc((size_t)ir->nvars + 1))) { PyErr_NoMemory(); return -1; }
    if (!(g.bound = PyMem_Calloc((size_t)ir->nvars + 1, 1))) { PyMem_Free(g.assign); PyErr_NoMemory(); return -1; }
    if (!(g.pin = PyMem_Calloc((size_t)ir->nvars + 1, 1)) ||
        !(g.setok = PyMem_Calloc((size_t)ir->nvars + 1, 1))) {
        PyMem_Free(g.assign);
        PyMem_Free(g.bound);
        PyMem_Free(g.pin);
        PyErr_NoMemory();
        return -1;
    }
    memset(g.assign, LT_UNBOUND, (size_t)ir->nvars + 1);
    for (int v = 0; v < ir->nvars; v++)
        for (int t = 0; t < LT_N; t++)
            if (T->adt[v] < 0 && T->vset[v] == (1u << t)) g.assign[v] = (uint8_t)t;
    size_t top = out->n;
    nd_sb_puts(out, KERNEL_H "#include \"nd_loop.h\"\n"
                    "#define NDL_SLOW(ln, op, tr, r, ta, a, tb, b) do { F->err_line = (ln); "
                    "int s_ = F->slow(F, (op), (tr), (r), (ta), (a), (tb), (b)); "
                    "if (s_) { rc = s_ < 0 ? NDL_PYERR : NDL_DEOPT; goto nd_err; } } while (0)\n"
                    "#pragma GCC diagnostic ignored \"-Wunused-variable\"\n"
                    "#pragma GCC diagnostic ignored \"-Wunused-but-set-variable\"\n"
                    "#pragma GCC diagnostic ignored \"-Wmaybe-uninitialized\"\n"
                    /* GCC's SLP vectorizer pairs neighbouring element
                     * accesses (a[j], a[j+1]) into one 16-byte load and
                     * store; the next iteration's load then overlaps that
                     * store and misses store forwarding (bubble sort ran
                     * 2.8x slower). Loop vectorization stays on. */
                    "#if defined(__GNUC__) && !defined(__clang__)\n"
                    "#pragma GCC optimize(\"no-tree-slp-vectorize\")\n"
                    "#endif\n"
                    "int nd_loop_main(nd_lframe *F)\n{\n");
    size_t body = out->n;
    g.ind = 1;
    line(&g, "int rc = NDL_OK;");
    line(&g, "uint16_t nd_tick = 0;");
    line(&g, "uint32_t nd_tick2 = 0;");
    line(&g, "int nd_fpp = 0;");
    line(&g, "void *nd_scr[64] = {0};");
    line(&g, "size_t nd_scr_cap[64] = {0};");
    for (int v = 0; v < ir->nvars; v++) {
        if (T->adt[v] >= 0 && T->alocal && T->alocal[v]) {
            /* an array local: the view it holds, reassigned by the loop */
            line(&g, "char *a%d = F->arr[%d].data;", v, v);
            line(&g, "int64_t a%d_n0 = F->arr[%d].shape[0], a%d_s0 = F->arr[%d].strides[0];", v, v, v, v);
            for (int d = 1; d < T->andim[v]; d++)
                line(&g, "int64_t a%d_n%d = F->arr[%d].shape[%d], a%d_s%d = F->arr[%d].strides[%d];", v, d, v, d,
                     v, d, v, d);
            line(&g, "int32_t a%d_src = F->arr[%d].src, a%d_set = F->arr[%d].set, a%d_whole = F->arr[%d].whole;", v,
                 v, v, v, v, v);
            /* (its own buffer: ob, not b, the prefix of slice bounds' temporaries) */
            if (T->alocal[v] == 2) line(&g, "char *ob%d = NULL; size_t ob%d_cap = 0;", v, v);
            continue;
        }
        if (T->adt[v] >= 0) {
            line(&g, "char *a%d = F->arr[%d].data;", v, v);
            for (int d = 0; d < T->andim[v]; d++) {
                if (d == T->andim[v] - 1 && T->acontig && T->acontig[v])
                    line(&g, "const int64_t a%d_n%d = F->arr[%d].shape[%d], a%d_s%d = (int64_t)sizeof(%s);", v, d,
                         v, d, v, d, ctype[T->adt[v]]);
                else
                    line(&g, "const int64_t a%d_n%d = F->arr[%d].shape[%d], a%d_s%d = F->arr[%d].strides[%d];",
                         v, d, v, d, v, d, v, d);
            }
            continue;
        }
        if (!T->vset[v] && T->entry[v] == LT_UNBOUND) continue;
        line(&g, "uint8_t v%d_t = F->tag[%d];", v, v);
        uint32_t declared = 0;
        for (int t = 0; t < LT_N; t++)
            if ((T->vset[v] & (1u << t)) && !(declared & (1u << REP(t)))) {
                declared |= 1u << REP(t);
                line(&g, "%s v%d_%d = 0;", ctype[t], v, REP(t));
            }
        for (int t = 0; t < LT_N; t++)
            if (T->vset[v] & (1u << t))
                line(&g, "if (v%d_t == %d) memcpy(&v%d_%d, &F->val[%d], sizeof v%d_%d);", v, t, v, REP(t), v, v, REP(t));
    }
    int rc = stmt(&g, ir->root);
    /* Error exits (an exception, a deoptimization, an IndexError) go to
     * nd_err. Outside a try statement the runner reads no scalar local
     * after one (an exception leaves the function with its locals as they
     * were before the loop; a deoptimized loop reruns from its start), so
     * nd_err skips their write-back: then no local is live at the exits of
     * the loop's checks, and GCC neither keeps each iteration's values and
     * tags in registers for them nor spills the loop's base pointers for
     * lack of registers (rule 110's cell: 20 -> 12 instructions) */
    line(&g, "nd_out:");
    if (T->in_try) line(&g, "nd_err:");
    for (int v = 0; v < ir->nvars; v++) {
        if (T->adt[v] >= 0 || (!T->vset[v] && T->entry[v] == LT_UNBOUND)) continue;
        line(&g, "F->tag[%d] = v%d_t;", v, v);
        for (int t = 0; t < LT_N; t++)
            if (T->vset[v] & (1u << t))
                line(&g, "if (v%d_t == %d) memcpy(&F->val[%d], &v%d_%d, sizeof v%d_%d);", v, t, v, v, REP(t), v, REP(t));
    }
    /* the array locals go back on every exit: the runner frees the
     * buffers they own */
    if (!T->in_try) line(&g, "nd_err:");
    for (int v = 0; v < ir->nvars; v++)
        if (T->adt[v] >= 0 && T->alocal && T->alocal[v])
        {
            line(&g, "F->arr[%d].data = a%d; F->arr[%d].shape[0] = a%d_n0; F->arr[%d].strides[0] = a%d_s0; "
                     "F->arr[%d].src = a%d_src; F->arr[%d].set = a%d_set; F->arr[%d].whole = a%d_whole;", v, v, v,
                 v, v, v, v, v, v, v, v, v);
            for (int d = 1; d < T->andim[v]; d++)
                line(&g, "F->arr[%d].shape[%d] = a%d_n%d; F->arr[%d].strides[%d] = a%d_s%d;", v, d, v, d, v, d, v,
                     d);
        }
    for (int v = 0; v < ir->nvars; v++)
        if (T->adt[v] >= 0 && T->alocal && T->alocal[v] == 2) line(&g, "F->arr[%d].own = ob%d;", v, v);
    line(&g, "if (nd_fpp) feraiseexcept(nd_fpp);");
    line(&g, "for (int q_ = 0; q_ < %d; q_++) free(nd_scr[q_]);", g.nscr);
    line(&g, "return rc;");
    nd_sb_puts(out, "}\n");
    PyMem_Free(g.assign);
    PyMem_Free(g.bound);
    PyMem_Free(g.pin);
    PyMem_Free(g.setok);
    *needs_snapshot = (g.snapshot ? 1 : 0) | (g.fpflags ? 2 : 0);
    *redo = g.fpflags && g.fcmp && !quiet;
    if (rc < 0) {
        if (g.fail == 1 && !PyErr_Occurred()) {
            if (!T->reason) T->reason = PyUnicode_FromString("a combination of types loops do not compute in");
            return 1;
        }
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "numdyn loop codegen failed");
        return -1;
    }
    /* most loops use none of nd_kernel.h's helpers, and parsing it is a
     * good part of compiling a small loop: the include becomes blanks */
    if (!out->oom && !kernel_h_used(out->p + body, out->n - body)) memset(out->p + top, ' ', strlen(KERNEL_H) - 1);
    return nd_sb_check(out);
}

int nd_codegen_loop(struct nd_ltyping_s *T, nd_sb *out, int *needs_snapshot)
{
    size_t n0 = out->n;
    int redo = 0;
    int rc = gen(T, out, needs_snapshot, 0, &redo);
    if (rc != 0 || !redo) return rc;
    out->n = n0;   /* float events go to the flags: again with quiet comparisons */
    return gen(T, out, needs_snapshot, 1, &redo);
}
