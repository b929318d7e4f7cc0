/* codegen_expr.c -- the scalar expression emitter: the C for ONE element of
 * a pointwise node (ufunc, cast, where), in NumPy's semantics.
 *
 * Kept apart from the loop-nest builder (codegen_loops.c) so that a later
 * loop-capture frontend can emit scalar-typed nodes through the same code.
 * Values live in C variables `v<id>` of the node's computation type:
 * float16 is computed as float holding a half value (rounded after every
 * op, as NumPy does), bool as uint8_t 0/1, complex as C99 _Complex. All the
 * edge semantics are in kernels/nd_kernel.h helpers; this file picks them.
 *
 * What differs between dtypes is data: a row per dtype (its C types, helper
 * suffix, how a scalar parameter and a float become one) and a row per
 * ufunc (its C form per dtype class, as a template). One expander writes
 * every template, so a ufunc's C form is stated once per class.
 */
#include "core/npy.h"
#include "codegen.h"

typedef struct dtinfo {
    const char *ctype, *stype, *sfx;
    char cls;           /* b bool, i signed, u unsigned, h half, f float, d double, F c64, D c128 */
    int8_t size;        /* bytes in memory */
    int8_t dbl;         /* its real parts are double (libm names without "f") */
    const char *utype;  /* the unsigned type of the same width (wrapping arithmetic) */
    const char *param;  /* the value of scalar parameter S[$j] (kernel ABI nd_sv) */
    const char *fromf;  /* the value of float expression $a (x86's result when out of range) */
} dtinfo;

#define D2I32 "($T)nd_d2i32((double)($a))"
static const dtinfo DT_BOOL = {"nd_bool", "nd_bool", "b", 'b', 1, 0, "nd_bool",
                               "(nd_bool)(S[$j].i != 0)", NULL};
static const dtinfo DT_I8 = {"int8_t", "int8_t", "i8", 'i', 1, 0, "uint8_t", "($T)S[$j].i", D2I32};
static const dtinfo DT_U8 = {"uint8_t", "uint8_t", "u8", 'u', 1, 0, "uint8_t", "($T)S[$j].u", D2I32};
static const dtinfo DT_I16 = {"int16_t", "int16_t", "i16", 'i', 2, 0, "uint16_t", "($T)S[$j].i", D2I32};
static const dtinfo DT_U16 = {"uint16_t", "uint16_t", "u16", 'u', 2, 0, "uint16_t", "($T)S[$j].u", D2I32};
static const dtinfo DT_I32 = {"int32_t", "int32_t", "i32", 'i', 4, 0, "uint32_t", "($T)S[$j].i", D2I32};
static const dtinfo DT_U32 = {"uint32_t", "uint32_t", "u32", 'u', 4, 0, "uint32_t", "($T)S[$j].u",
                              "(uint32_t)nd_d2i64((double)($a))"};
static const dtinfo DT_I64 = {"int64_t", "int64_t", "i64", 'i', 8, 0, "uint64_t", "($T)S[$j].i",
                              "nd_d2i64((double)($a))"};
static const dtinfo DT_U64 = {"uint64_t", "uint64_t", "u64", 'u', 8, 0, "uint64_t", "($T)S[$j].u",
                              "nd_d2u64((double)($a))"};
static const dtinfo DT_F16 = {"float", "nd_half", "f", 'h', 2, 0, NULL, "nd_h2f(nd_d2h(S[$j].f))", NULL};
static const dtinfo DT_F32 = {"float", "float", "f", 'f', 4, 0, NULL, "(float)S[$j].f", NULL};
static const dtinfo DT_F64 = {"double", "double", "d", 'd', 8, 1, NULL, "S[$j].f", NULL};
static const dtinfo DT_C64 = {"nd_c64", "nd_c64", "cf", 'F', 8, 0, NULL,
                              "nd_cmk_cf((float)S[$j].c.re, (float)S[$j].c.im)", NULL};
static const dtinfo DT_C128 = {"nd_c128", "nd_c128", "cd", 'D', 16, 1, NULL,
                               "nd_cmk_cd(S[$j].c.re, S[$j].c.im)", NULL};
#undef D2I32

static const dtinfo *dt(int t)
{
    switch (t) {
    case NPY_BOOL: return &DT_BOOL;
    case NPY_BYTE: return &DT_I8;
    case NPY_UBYTE: return &DT_U8;
    case NPY_SHORT: return &DT_I16;
    case NPY_USHORT: return &DT_U16;
    case NPY_INT: return &DT_I32;
    case NPY_UINT: return &DT_U32;
    case NPY_LONG: return NPY_SIZEOF_LONG == 8 ? &DT_I64 : &DT_I32;
    case NPY_ULONG: return NPY_SIZEOF_LONG == 8 ? &DT_U64 : &DT_U32;
    case NPY_LONGLONG: return &DT_I64;
    case NPY_ULONGLONG: return &DT_U64;
    case NPY_HALF: return &DT_F16;
    case NPY_FLOAT: return &DT_F32;
    case NPY_DOUBLE: return &DT_F64;
    case NPY_CFLOAT: return &DT_C64;
    case NPY_CDOUBLE: return &DT_C128;
    default: return NULL;
    }
}

int nd_cg_dtype_ok(int t) { return dt(t) != NULL; }
const char *nd_cg_ctype(int t) { return dt(t)->ctype; }
const char *nd_cg_stype(int t) { return dt(t)->stype; }
const char *nd_cg_sfx(int t) { return dt(t)->sfx; }
int nd_cg_elsize(int t) { return dt(t)->size; }

static int is_float(char c) { return c == 'h' || c == 'f' || c == 'd'; }
static int is_cplx(char c) { return c == 'F' || c == 'D'; }
static int is_intlike(char c) { return c == 'b' || c == 'i' || c == 'u'; }

int nd_cg_is_complex(int t) { return dt(t) && is_cplx(dt(t)->cls); }
int nd_cg_part_dtype(int t)
{
    const dtinfo *d = dt(t);
    if (d && is_cplx(d->cls)) return d->dbl ? NPY_DOUBLE : NPY_FLOAT;
    return t;
}

int nd_cg_unsigned_twin(int t)
{
    switch (t) {
    case NPY_BYTE: return NPY_UBYTE;
    case NPY_SHORT: return NPY_USHORT;
    case NPY_INT: return NPY_UINT;
    case NPY_LONG: return NPY_ULONG;
    case NPY_LONGLONG: return NPY_ULONGLONG;
    default: return t;
    }
}

void nd_cg_bind_dims(nd_sb *sb, int R, uint32_t mask)
{
    int first = -1;
    for (int d = 0; d < R; d++) if (mask & (1u << d)) { first = d; break; }
    for (int d = R - 1; d >= 0; d--) {
        if (!(mask & (1u << d))) continue;
        if (d == first) nd_sb_printf(sb, "const int64_t i%d = r_;\n", d);
        else nd_sb_printf(sb, "const int64_t i%d = r_ %% n%d;\nr_ /= n%d;\n", d, d, d);
    }
}

void nd_cg_arg_step(nd_sb *sb, int argmax, int is_float, const char *sa, const char *si, int e)
{
    const char *cmp = argmax ? ">" : "<";
    if (is_float)
        nd_sb_printf(sb, "if (cv_ %s %s || (cv_ != cv_ && %s == %s)) { %s = cv_; %s = %d; }\n",
                     cmp, sa, sa, sa, sa, si, e);
    else
        nd_sb_printf(sb, "if (cv_ %s %s) { %s = cv_; %s = %d; }\n", cmp, sa, sa, si, e);
}

/* Write template `t`: $a $b the operands, $T the computation type, $U its
 * unsigned twin, $R the type of its real parts, $s the helper suffix, $m
 * libm's suffix ("" for double parts, "f" otherwise), $j = `b`. */
static void expand(nd_sb *sb, const char *t, const dtinfo *d, const char *a, const char *b)
{
    for (;;) {
        const char *p = strchr(t, '$');
        if (!p) { nd_sb_puts(sb, t); return; }
        nd_sb_printf(sb, "%.*s", (int)(p - t), t);
        const char *s = "";
        switch (p[1]) {
        case 'a': s = a; break;
        case 'b': case 'j': s = b; break;
        case 'T': s = d->ctype; break;
        case 'U': s = d->utype ? d->utype : d->ctype; break;
        case 'R': s = d->dbl ? "double" : "float"; break;
        case 's': s = d->sfx; break;
        case 'm': s = d->dbl ? "" : "f"; break;
        default: sb->oom = 1; return;  /* a bad template: the text is unusable */
        }
        nd_sb_puts(sb, s);
        t = p + 2;
    }
}

void nd_cg_load(nd_sb *sb, const char *elem, int t)
{
    const dtinfo *d = dt(t);
    if (d->cls == 'h') nd_sb_printf(sb, "nd_h2f(%s)", elem);
    else if (d->cls == 'b') nd_sb_printf(sb, "(nd_bool)(%s != 0)", elem);
    else nd_sb_puts(sb, elem);
}

void nd_cg_store(nd_sb *sb, const char *lv, const char *val, int t)
{
    if (dt(t)->cls == 'h') nd_sb_printf(sb, "%s = nd_f2h(%s);\n", lv, val);
    else nd_sb_printf(sb, "%s = %s;\n", lv, val);
}

void nd_cg_param(nd_sb *sb, int t, int j)
{
    char js[16];
    snprintf(js, sizeof js, "%d", j);
    expand(sb, dt(t)->param, dt(t), "", js);
}

/* x86's conversion with NumPy's cast warning: the checked twin of t->fromf */
static const char *fromf_checked(const dtinfo *t)
{
    if (t->size == 8) return t->cls == 'u' ? "nd_d2u64e((double)($a), &nd_err)"
                                           : "nd_d2i64e((double)($a), &nd_err)";
    if (t->size == 4 && t->cls == 'u') return "nd_d2u32e((double)($a), &nd_err)";
    return "($T)nd_d2i32e((double)($a), &nd_err)";
}

static void cast(nd_sb *sb, const char *x, int from, int to, int *uses_err);

void nd_cg_cast(nd_sb *sb, const char *x, int from, int to) { cast(sb, x, from, to, NULL); }

void nd_cg_cast_checked(nd_sb *sb, const char *x, int from, int to, int *uses_err)
{
    cast(sb, x, from, to, uses_err);
}

/* int64 -> float64 (kernels/nd_f2i.h: a form that vectorizes on AVX2) */
static int i64_to_double(const dtinfo *f, int to)
{
    const dtinfo *t = dt(to);
    return f->cls == 'i' && f->size == 8 && t->cls == 'd';
}

/* uses_err: NULL, or where a conversion that reports NumPy's "invalid value
 * encountered in cast" notes that it uses nd_err */
static void cast(nd_sb *sb, const char *x, int from, int to, int *uses_err)
{
    const dtinfo *f = dt(from), *t = dt(to);
    if (f == t || (f->cls == t->cls && !strcmp(f->ctype, t->ctype) && f->cls != 'h')) {
        nd_sb_puts(sb, x);
        return;
    }
    if (f->cls == 'h' && t->cls == 'h') { nd_sb_puts(sb, x); return; }
    if (t->cls == 'b') {
        if (is_cplx(f->cls)) nd_sb_printf(sb, "(nd_bool)(__real__ (%s) != 0 || __imag__ (%s) != 0)", x, x);
        else nd_sb_printf(sb, "(nd_bool)((%s) != 0)", x);
        return;
    }
    if (is_cplx(t->cls)) {
        if (is_cplx(f->cls))
            expand(sb, "nd_cmk_$s(($R)__real__ ($a), ($R)__imag__ ($a))", t, x, "");
        else if (i64_to_double(f, nd_cg_part_dtype(to)))
            expand(sb, "nd_cmk_$s(nd_i64_to_d($a), 0)", t, x, "");
        else
            expand(sb, "nd_cmk_$s(($R)($a), 0)", t, x, "");
        return;
    }
    if (is_cplx(f->cls)) {
        /* NumPy keeps the real part (its ComplexWarning is the shim's) */
        char buf[512];
        snprintf(buf, sizeof buf, "__real__ (%s)", x);
        cast(sb, buf, nd_cg_part_dtype(from), to, uses_err);
        return;
    }
    if (t->cls == 'h') {
        if (f->cls == 'f') nd_sb_printf(sb, "nd_rh(%s)", x);
        else if (f->cls == 'b') nd_sb_printf(sb, "(float)(%s)", x);
        else nd_sb_printf(sb, "nd_h2f(nd_d2h((double)(%s)))", x);
        return;
    }
    if (i64_to_double(f, to)) {
        nd_sb_printf(sb, "nd_i64_to_d(%s)", x);
        return;
    }
    if (is_float(t->cls) || is_intlike(f->cls)) {
        nd_sb_printf(sb, "(%s)(%s)", t->ctype, x);
        return;
    }
    if (uses_err) *uses_err = 1;
    expand(sb, uses_err ? fromf_checked(t) : t->fromf, t, x, "");  /* float -> integer */
}

/* ------------------------------------------------------------ ufuncs */
/* A ufunc's C form per dtype class. A NULL cell inherits: half from float,
 * float and integer from `r` (every real class), bool from integer; NO
 * stops inheritance (the class has no loop). Complex never inherits: a C
 * operator on _Complex rarely means what NumPy means. Templates that use
 * nd_err make the kernel collect error bits.
 *
 * Complex exp, log, sqrt and the (hyperbolic) sine, cosine and tangent are
 * nd_kernel.h's vectorizable forms of C99's (SLEEF inside, glibc's special
 * values). The inverse (hyperbolic) functions stay libm's: their branch
 * cuts and accuracy near branch points are glibc's own algorithms, not a
 * formula over real functions. So does complex power's general case
 * (nd_cpow calls cpow): exp(b log a) turns a 1-ulp difference in arg a
 * into |b| ulps of the angle, past the per-part tolerance wherever one
 * part of the result is small. */
_Thread_local int nd_cg_quiet_cmp = 1;

typedef struct ufform {
    const char *r, *f, *h, *i, *b, *c;
} ufform;

#define NO ""
#define CMP(op, cx) {.r = "(nd_bool)($a " op " $b)", .c = cx}
/* ordered compares of floats (float16's computed as float): nd_kernel.h's
 * quiet forms, no "invalid" for a NaN lane, in kernels whose flag is read
 * (nd_cg_quiet_cmp) */
#define QCMP(op, q, x, y, cx) {.r = "(nd_bool)($a " op " $b)", .f = "(nd_bool)" q "_$s(" x ", " y ")", .c = cx}
#define F1(fn) {.f = fn "$m($a)"}
#define FC1(fn, cfn) {.f = fn "$m($a)", .c = cfn "$m($a)"}
#define FV1(fn, cfn) {.f = fn "$m($a)", .c = cfn "_$s($a)"}
#define F2(fn) {.f = fn "$m($a, $b)"}
/* SLEEF-backed functions NumPy flags for: status flags derived from operand
 * (kernels/nd_kernel.h nd_ckat / nd_ckgt / nd_ckinf) */
#define CKD(fn) "nd_ckat_$s($a, " fn "$m($a), 0, &nd_err)"
#define CKO(fn, lim) "nd_ckgt_$s($a, " fn "$m($a), " lim "_$s, &nd_err)"
#define CKOA(fn, lim) "nd_ckgt_$s(__builtin_fabs($a), " fn "$m($a), " lim "_$s, &nd_err)"
#define CKI(fn) "nd_ckinf_$s($a, " fn "$m($a), &nd_err)"
#define INT_ERR(fn) "nd_" fn "_$s($a, $b, &nd_err)"
#define WRAP(op) "($T)(($U)$a " op " ($U)$b)"
#define PI "3.141592653589793238462643383279502884"
#define CTRUE(x) "((__real__ " x " != 0 || __imag__ " x " != 0))"

static const ufform UFORM[ND_UF_COUNT] = {
    [ND_UF_ADD] = {.f = "($a + $b)", .i = WRAP("+"), .b = "(nd_bool)($a | $b)", .c = "($a + $b)"},
    [ND_UF_SUBTRACT] = {.f = "($a - $b)", .i = WRAP("-"), .b = NO, .c = "($a - $b)"},
    [ND_UF_MULTIPLY] = {.f = "($a * $b)", .i = WRAP("*"), .b = "(nd_bool)($a & $b)",
                        .c = "nd_cmul_fused_$s($a, $b)"},
    [ND_UF_TRUE_DIVIDE] = {.f = "($a / $b)", .c = "nd_cdiv_$s($a, $b)"},
    [ND_UF_FLOOR_DIVIDE] = {.f = "nd_floordiv_$s($a, $b)", .i = INT_ERR("fdiv"), .b = NO},
    [ND_UF_REMAINDER] = {.f = "nd_remainder_$s($a, $b)", .i = INT_ERR("irem"), .b = NO},
    [ND_UF_FMOD] = {.f = "fmod$m($a, $b)", .i = INT_ERR("ifmod"), .b = NO},
    [ND_UF_POWER] = {.f = "nd_ckpow_$s($a, $b, nd_pow$m($a, $b), &nd_err)", .i = INT_ERR("ipow"), .b = NO, .c = "nd_cpow_$s($a, $b)"},
    [ND_UF_FLOAT_POWER] = {.f = "nd_pow$m($a, $b)", .c = "nd_cpow_$s($a, $b)"},
    [ND_UF_NEGATIVE] = {.f = "(-$a)", .i = "($T)(($U)0 - ($U)$a)", .b = NO,
                        .c = "nd_cmk_$s(-__real__ $a, -__imag__ $a)"},
    [ND_UF_POSITIVE] = {.r = "($a)", .c = "($a)"},
    [ND_UF_CONJUGATE] = {.r = "($a)", .c = "nd_cmk_$s(__real__ $a, -__imag__ $a)"},
    [ND_UF_ABSOLUTE] = {.f = "fabs$m($a)", .i = "nd_iabs_$s($a)", .b = "($a)", .c = "nd_cabs_$s($a)"},
    [ND_UF_FABS] = F1("fabs"),
    [ND_UF_RINT] = F1("rint"),
    [ND_UF_FLOOR] = {.f = "floor$m($a)", .i = "($a)"},
    [ND_UF_CEIL] = {.f = "ceil$m($a)", .i = "($a)"},
    [ND_UF_TRUNC] = {.f = "trunc$m($a)", .i = "($a)"},
    [ND_UF_SIGN] = {.f = "nd_sign_$s($a)", .i = "nd_isign_$s($a)", .b = NO, .c = "nd_csign_$s($a)"},
    [ND_UF_HEAVISIDE] = {.f = "nd_heaviside_$s($a, $b)"},
    [ND_UF_EXP] = {.f = CKO("nd_exp", "ND_LIM_EXP"), .c = "nd_cexp_$s($a)"},
    [ND_UF_EXP2] = {.f = CKO("nd_exp2", "ND_LIM_EXP2")},
    [ND_UF_EXPM1] = {.f = CKO("nd_expm1", "ND_LIM_EXP")},
    [ND_UF_LOG] = {.f = CKD("nd_log"), .c = "nd_ckcl_$s($a, nd_clog_$s($a), &nd_err)"},
    [ND_UF_LOG2] = {.f = CKD("nd_log2"),
                    .c = "nd_ckcl_$s($a, nd_clog_$s($a) * ($R)1.442695040888963407359924681001892137, &nd_err)"},
    [ND_UF_LOG10] = {.f = CKD("nd_log10"),
                     .c = "nd_ckcl_$s($a, nd_clog_$s($a) * ($R)0.434294481903251827651128918916605082, &nd_err)"},
    [ND_UF_LOG1P] = {.f = "nd_ckat_$s($a, nd_log1p$m($a), -1, &nd_err)"},
    [ND_UF_LOGADDEXP] = {.f = "nd_logaddexp_$s($a, $b)"},
    [ND_UF_LOGADDEXP2] = {.f = "nd_logaddexp2_$s($a, $b)"},
    [ND_UF_SQRT] = FV1("sqrt", "nd_csqrt"),
    [ND_UF_SQUARE] = {.f = "($a * $a)", .i = "($T)(($U)$a * ($U)$a)", .b = NO, .c = "nd_cmul_fused_$s($a, $a)"},
    [ND_UF_CBRT] = F1("nd_cbrt"),
    [ND_UF_RECIPROCAL] = {.f = "(($T)1 / $a)", .b = NO, .c = "nd_cdiv_$s(nd_cmk_$s(1, 0), $a)"},
    [ND_UF_SIN] = {.f = CKI("nd_sin"), .c = "nd_csin_$s($a)"},
    [ND_UF_COS] = {.f = CKI("nd_cos"), .c = "nd_ccos_$s($a)"},
    [ND_UF_TAN] = {.f = CKI("nd_tan"), .c = "nd_ctan_$s($a)"},
    [ND_UF_ARCSIN] = FC1("nd_asin", "casin"),
    [ND_UF_ARCCOS] = FC1("nd_acos", "cacos"),
    [ND_UF_ARCTAN] = FC1("nd_atan", "catan"),
    [ND_UF_ARCTAN2] = F2("nd_atan2"),
    [ND_UF_HYPOT] = F2("nd_hypot"),
    [ND_UF_SINH] = {.f = CKOA("nd_sinh", "ND_LIM_SINH"), .c = "nd_csinh_$s($a)"},
    [ND_UF_COSH] = {.f = CKOA("nd_cosh", "ND_LIM_SINH"), .c = "nd_ccosh_$s($a)"},
    [ND_UF_TANH] = FV1("nd_tanh", "nd_ctanh"),
    [ND_UF_ARCSINH] = FC1("nd_asinh", "casinh"),
    [ND_UF_ARCCOSH] = FC1("nd_acosh", "cacosh"),
    [ND_UF_ARCTANH] = FC1("nd_atanh", "catanh"),
    [ND_UF_DEG2RAD] = {.f = "($a * ($T)(" PI " / 180.0))"},
    [ND_UF_RADIANS] = {.f = "($a * ($T)(" PI " / 180.0))"},
    [ND_UF_RAD2DEG] = {.f = "($a * ($T)(180.0 / " PI "))"},
    [ND_UF_DEGREES] = {.f = "($a * ($T)(180.0 / " PI "))"},
    [ND_UF_GREATER] = QCMP(">", "nd_qlt", "$b", "$a", "(nd_bool)nd_clt_$s($b, $a)"),
    [ND_UF_GREATER_EQUAL] = QCMP(">=", "nd_qle", "$b", "$a", "(nd_bool)nd_cle_$s($b, $a)"),
    [ND_UF_LESS] = QCMP("<", "nd_qlt", "$a", "$b", "(nd_bool)nd_clt_$s($a, $b)"),
    [ND_UF_LESS_EQUAL] = QCMP("<=", "nd_qle", "$a", "$b", "(nd_bool)nd_cle_$s($a, $b)"),
    [ND_UF_NOT_EQUAL] = CMP("!=", "(nd_bool)(__real__ $a != __real__ $b || __imag__ $a != __imag__ $b)"),
    [ND_UF_EQUAL] = CMP("==", "(nd_bool)(__real__ $a == __real__ $b && __imag__ $a == __imag__ $b)"),
    [ND_UF_LOGICAL_AND] = {.r = "(nd_bool)($a != 0 && $b != 0)",
                           .c = "(nd_bool)(" CTRUE("$a") " && " CTRUE("$b") ")"},
    [ND_UF_LOGICAL_OR] = {.r = "(nd_bool)($a != 0 || $b != 0)",
                          .c = "(nd_bool)(" CTRUE("$a") " || " CTRUE("$b") ")"},
    [ND_UF_LOGICAL_XOR] = {.r = "(nd_bool)(($a != 0) != ($b != 0))",
                           .c = "(nd_bool)(" CTRUE("$a") " != " CTRUE("$b") ")"},
    [ND_UF_LOGICAL_NOT] = {.r = "(nd_bool)($a == 0)", .c = "(nd_bool)(__real__ $a == 0 && __imag__ $a == 0)"},
    [ND_UF_MAXIMUM] = {.f = "nd_max_$s($a, $b)", .i = "($a >= $b ? $a : $b)", .c = "nd_cmax_$s($a, $b)"},
    [ND_UF_MINIMUM] = {.f = "nd_min_$s($a, $b)", .i = "($a <= $b ? $a : $b)", .c = "nd_cmin_$s($a, $b)"},
    [ND_UF_FMAX] = {.f = "nd_fmax_$s($a, $b)", .i = "($a >= $b ? $a : $b)", .c = "nd_cfmax_$s($a, $b)"},
    [ND_UF_FMIN] = {.f = "nd_fmin_$s($a, $b)", .i = "($a <= $b ? $a : $b)", .c = "nd_cfmin_$s($a, $b)"},
    [ND_UF_ISFINITE] = {.f = "(nd_bool)(isfinite($a) != 0)", .i = "(nd_bool)1",
                        .c = "(nd_bool)(isfinite(__real__ $a) && isfinite(__imag__ $a))"},
    [ND_UF_ISINF] = {.f = "(nd_bool)(isinf($a) != 0)", .i = "(nd_bool)0",
                     .c = "(nd_bool)(isinf(__real__ $a) || isinf(__imag__ $a))"},
    [ND_UF_ISNAN] = {.f = "(nd_bool)($a != $a)", .i = "(nd_bool)0", .c = "(nd_bool)nd_cisnan_$s($a)"},
    [ND_UF_SIGNBIT] = {.f = "nd_signbit_$s($a)"},
    [ND_UF_COPYSIGN] = F2("copysign"),
    /* NumPy steps float16 in half's own bit pattern */
    [ND_UF_NEXTAFTER] = {.f = "nextafter$m($a, $b)", .h = NO},
    [ND_UF_SPACING] = {.f = "nd_spacing_$s($a)", .h = NO},
    [ND_UF_MODF] = {.f = "(isinf($a) ? copysign$m(0, $a) : copysign$m($a - trunc$m($a), $a))"},
    [ND_UF_LDEXP] = {.f = "ldexp$m($a, (int)(($b) > 100000 ? 100000 : ($b) < -100000 ? -100000 : ($b)))"},
    [ND_UF_FREXP] = {.f = "({ int e_; frexp$m($a, &e_); })"},
    [ND_UF_GCD] = {.i = "nd_gcd_$s($a, $b)", .b = NO},
    [ND_UF_LCM] = {.i = "nd_lcm_$s($a, $b)", .b = NO},
    [ND_UF_BITWISE_AND] = {.i = "($T)($a & $b)"},
    [ND_UF_BITWISE_OR] = {.i = "($T)($a | $b)"},
    [ND_UF_BITWISE_XOR] = {.i = "($T)($a ^ $b)"},
    [ND_UF_INVERT] = {.i = "($T)~$a", .b = "(nd_bool)!$a"},
    [ND_UF_LEFT_SHIFT] = {.i = "nd_lshift_$s($a, $b)", .b = NO},
    [ND_UF_RIGHT_SHIFT] = {.i = "nd_rshift_$s($a, $b)", .b = NO},
    [ND_UF_BITWISE_COUNT] = {.i = "nd_popcnt_$s($a)", .b = NO},
};

/* second outputs (aux = 1); divmod's are floor_divide's and remainder's */
static const ufform UFORM2[ND_UF_COUNT] = {
    [ND_UF_MODF] = F1("trunc"),
    [ND_UF_FREXP] = {.f = "({ int e_; (void)frexp$m($a, &e_); (int32_t)((isinf($a) || $a != $a) ? 0 : e_); })"},
};
#undef NO
#undef CMP
#undef F1
#undef FC1
#undef FV1
#undef F2
#undef INT_ERR
#undef WRAP
#undef PI
#undef CTRUE

static const char *form_cell(const ufform *f, char cls)
{
    const char *s = NULL;
    switch (cls) {
    case 'F': case 'D': return f->c;
    case 'h': s = f->h ? f->h : f->f; break;
    case 'f': case 'd': s = f->f; break;
    case 'b': s = f->b ? f->b : f->i; break;
    default: s = f->i; break;
    }
    if (!s) s = f->r;
    return s && *s ? s : NULL;
}

/* NumPy's scalar math on integers (a node marked ND_F_SCALAR_MATH, graph.h)
 * reports wrapping where the ufunc wraps silently */
static const char *scalar_math_form(int uf)
{
    switch (uf) {
    case ND_UF_ADD: return "nd_oadd_$s($a, $b, &nd_err)";
    case ND_UF_SUBTRACT: return "nd_osub_$s($a, $b, &nd_err)";
    case ND_UF_MULTIPLY: return "nd_omul_$s($a, $b, &nd_err)";
    case ND_UF_NEGATIVE: return "nd_oneg_$s($a, &nd_err)";
    case ND_UF_ABSOLUTE: return "nd_oabs_$s($a, &nd_err)";
    default: return NULL;
    }
}

int nd_cg_ufunc(nd_sb *sb, int uf, int aux, int loop, const char *a, const char *b, int *uses_err)
{
    const dtinfo *d = dt(loop);
    if (!d || uf < 0 || uf >= ND_UF_COUNT) return -1;
    if (uf == ND_UF_DIVMOD) uf = aux ? ND_UF_REMAINDER : ND_UF_FLOOR_DIVIDE;
    const ufform *row = &UFORM[uf];
    if (aux && (UFORM2[uf].f || UFORM2[uf].i || UFORM2[uf].c)) row = &UFORM2[uf];
    if (uf == ND_UF_RECIPROCAL && (d->cls == 'i' || d->cls == 'u')) {
        /* NumPy's integer loop divides in double and casts back */
        nd_sb t;
        nd_sb_init(&t);
        nd_sb_printf(&t, "(1.0 / (double)%s)", a);
        int rc = t.oom ? -1 : 0;
        if (rc == 0) nd_cg_cast(sb, t.p, NPY_DOUBLE, loop);
        nd_sb_free(&t);
        return rc;
    }
    const char *t = form_cell(row, d->cls);
    if (!t) return -1;
    /* a kernel whose "invalid" flag is dropped compares with C's operator
     * (the quiet form's extra instructions are a third of a compare) */
    if (!nd_cg_quiet_cmp && t != row->r && row->r && (uf == ND_UF_GREATER || uf == ND_UF_GREATER_EQUAL ||
                                                      uf == ND_UF_LESS || uf == ND_UF_LESS_EQUAL))
        t = row->r;
    if (strstr(t, "nd_err")) *uses_err = 1;
    expand(sb, t, d, a, b);
    return 0;
}

/* Whether NumPy could flag "invalid value" for node id: x86's ordered
 * comparisons (our <, >=, max, min, sign, SLEEF's internals) raise FE_INVALID
 * on a quiet NaN where NumPy's loops raise nothing, so a kernel made of such
 * ops alone drops the flag instead of having NumPy run the graph again for
 * every call with a NaN in it. Checked for real-valued operands only (NumPy
 * flags complex comparisons). */
int nd_cg_may_flag_invalid(nd_graph *g, nd_id id, nd_cg_quiet_fn quiet)
{
    if (id < 0) return 0;
    nd_node *n = &g->nodes[id];
    int nin = n->op == ND_OP_EXTERN ? 0 : n->nin;
    for (int j = 0; j < nin && j < ND_MAXIN; j++)
        if (n->in[j] >= 0 && PyTypeNum_ISCOMPLEX(g->nodes[n->in[j]].dtype)) return 1;
    switch (n->op) {
    case ND_OP_INPUT: case ND_OP_SCALAR: case ND_OP_WHERE: case ND_OP_VIEW:
    case ND_OP_SETITEM: case ND_OP_INDEX: case ND_OP_GATHER:
        return 0;
    case ND_OP_CAST:
        return !(PyTypeNum_ISFLOAT(n->dtype) || PyTypeNum_ISCOMPLEX(n->dtype) || PyTypeNum_ISBOOL(n->dtype));
    case ND_OP_UFUNC: case ND_OP_REDUCE: case ND_OP_SCAN: {
        /* integer / bool loops raise no floating-point flag */
        int inexact = 0;
        for (int j = 0; j < (n->op == ND_OP_UFUNC ? nin : 1) && j < ND_MAXIN; j++)
            if (PyTypeNum_ISFLOAT(n->in_dtype[j]) || PyTypeNum_ISCOMPLEX(n->in_dtype[j])) inexact = 1;
        if (!inexact) return 0;
        /* a running max/min only compares (NumPy flags no NaN there) */
        if (n->op == ND_OP_SCAN)
            return !(n->sub == ND_UF_MAXIMUM || n->sub == ND_UF_MINIMUM || n->sub == ND_UF_FMAX ||
                     n->sub == ND_UF_FMIN);
        switch (n->sub) {
        case ND_UF_GREATER: case ND_UF_GREATER_EQUAL: case ND_UF_LESS: case ND_UF_LESS_EQUAL:
        case ND_UF_EQUAL: case ND_UF_NOT_EQUAL: case ND_UF_MAXIMUM: case ND_UF_MINIMUM:
        case ND_UF_FMAX: case ND_UF_FMIN: case ND_UF_SIGN: case ND_UF_ISNAN: case ND_UF_ISINF:
        case ND_UF_ISFINITE: case ND_UF_SIGNBIT: case ND_UF_ABSOLUTE: case ND_UF_FABS:
        case ND_UF_NEGATIVE: case ND_UF_POSITIVE: case ND_UF_EXP: case ND_UF_EXP2:
        case ND_UF_EXPM1: case ND_UF_TANH: case ND_UF_SINH: case ND_UF_COSH: case ND_UF_ARCTAN:
        case ND_UF_ARCSINH: case ND_UF_FLOOR: case ND_UF_CEIL: case ND_UF_TRUNC: case ND_UF_RINT:
        case ND_UF_LOGICAL_AND: case ND_UF_LOGICAL_OR: case ND_UF_LOGICAL_XOR:
        case ND_UF_LOGICAL_NOT: case ND_UF_COPYSIGN: case ND_UF_SQUARE: case ND_UF_HEAVISIDE:
        case ND_UF_DEG2RAD: case ND_UF_RAD2DEG: case ND_UF_DEGREES: case ND_UF_RADIANS:
        case ND_UF_CONJUGATE: case ND_UF_CBRT:
        case ND_RED_ARGMAX: case ND_RED_ARGMIN:
            return 0;
        default:
            return n->op == ND_OP_UFUNC && n->nin == 2 && quiet ? !quiet(g, n) : 1;
        }
    }
    default:
        return 1;
    }
}

int nd_cg_kernel_may_flag_invalid(nd_graph *g, const nd_kernel *k, nd_cg_quiet_fn quiet)
{
    if (nd_cg_may_flag_invalid(g, k->root, quiet)) return 1;
    for (int i = 0; i < k->ninl; i++) if (nd_cg_may_flag_invalid(g, k->inl[i], quiet)) return 1;
    for (int i = 0; i < k->nrow; i++) if (nd_cg_may_flag_invalid(g, k->rowv[i], quiet)) return 1;
    for (int i = 0; i < k->nred; i++) if (nd_cg_may_flag_invalid(g, k->reds[i], quiet)) return 1;
    return 0;
}


static int natural_type(int uf, int aux, int loop)
{
    switch (uf) {
    case ND_UF_GREATER: case ND_UF_GREATER_EQUAL: case ND_UF_LESS: case ND_UF_LESS_EQUAL:
    case ND_UF_NOT_EQUAL: case ND_UF_EQUAL: case ND_UF_LOGICAL_AND: case ND_UF_LOGICAL_OR:
    case ND_UF_LOGICAL_XOR: case ND_UF_LOGICAL_NOT: case ND_UF_ISFINITE: case ND_UF_ISINF:
    case ND_UF_ISNAN: case ND_UF_SIGNBIT:
        return NPY_BOOL;
    case ND_UF_ABSOLUTE: return nd_cg_part_dtype(loop);
    case ND_UF_BITWISE_COUNT: return NPY_UBYTE;
    case ND_UF_FREXP: return aux == 1 ? NPY_INT : loop;
    default: return loop;
    }
}

/* the operand text: v<in> converted to the loop dtype */
/* NumPy's float power loop with one exponent for the whole loop (graph.h
 * nd_scalar_power_class): a SCALAR exponent's class is known here (the
 * keys cover it); a 0-d exponent, or a size-1 one broadcast to more than
 * one element, is tested in the kernel (nd_powsc_*). The float16 loop
 * computes with powf (only x * x is the same value). Left to pow: an
 * exponent of shape (n, 1) against (n, m) -- NumPy's choice there depends
 * on its iterator's buffering, not on the operands alone. */
enum { POW_AT_RUN_TIME = 100 };
static int power_class(nd_graph *g, const nd_node *n, const dtinfo *ld)
{
    if ((n->sub != ND_UF_POWER && n->sub != ND_UF_FLOAT_POWER) || !is_float(ld->cls) || n->nin < 2)
        return ND_POW_GENERAL;
    const nd_node *x = &g->nodes[n->in[1]];
    if (x->op == ND_OP_SCALAR) {
        int pc = nd_scalar_power_class(x);
        return ld->cls == 'h' && pc != ND_POW_SQUARE ? ND_POW_GENERAL : pc;
    }
    if (ld->cls == 'h') return ND_POW_GENERAL;
    int ones = 1, many = 0;
    for (int d = 0; d < x->ndim; d++) ones &= x->shape[d] == 1;
    for (int d = 0; d < n->ndim; d++) many |= n->shape[d] != 1;
    return ones && (x->ndim == 0 || many) ? POW_AT_RUN_TIME : ND_POW_GENERAL;
}

static int operand(nd_sb *sb, nd_graph *g, nd_id in, int loop)
{
    char v[32];
    snprintf(v, sizeof v, "v%d", (int)in);
    int from = g->nodes[in].dtype;
    if (!dt(from) || !dt(loop)) return -1;
    nd_cg_cast(sb, v, from, loop);
    return 0;
}

/* 1 when node id feeds a branch of a WHERE through pointwise nodes only:
 * np.where(y != 0, x / y, 0) -- the C compiler may then compute it only
 * in the lanes the select keeps, where NumPy computes (and flags) every
 * lane. */
static int feeds_branch(nd_graph *g, nd_id v, nd_id id, int depth)
{
    if (v == id) return 1;
    if (v < 0 || depth > 6) return 0;
    nd_node *m = &g->nodes[v];
    if (m->op != ND_OP_UFUNC && m->op != ND_OP_CAST) return 0;
    for (int k = 0; k < m->nin; k++)
        if (feeds_branch(g, m->in[k], id, depth + 1)) return 1;
    return 0;
}

/* (a where reads its branches soon after they are made: the scan is
 * bounded so a capture of tens of thousands of nodes stays linear) */
#define SELECT_SCAN 2048

static int selected(nd_graph *g, nd_id id)
{
    nd_id end = g->n - id > SELECT_SCAN ? id + SELECT_SCAN : g->n;
    for (nd_id w = id + 1; w < end; w++) {
        nd_node *m = &g->nodes[w];
        if (m->op == ND_OP_WHERE && (feeds_branch(g, m->in[1], id, 0) || feeds_branch(g, m->in[2], id, 0)))
            return 1;
    }
    return 0;
}

/* 1 when node v is x - x.max(axes, keepdims=True) (softmax, logsumexp):
 * every element of x is at most its row's maximum, so v <= 0 or NaN (a NaN
 * or +inf in the row gives NaN) and exp(v) can neither overflow nor flag
 * it -- its per-lane overflow check is dead code in the hottest loop. */
static int at_most_zero(nd_graph *g, nd_id v)
{
    nd_node *s = &g->nodes[v];
    if (s->op != ND_OP_UFUNC || s->sub != ND_UF_SUBTRACT || s->nin < 2) return 0;
    nd_id x = s->in[0], m = s->in[1];
    if (x < 0 || m < 0) return 0;
    nd_node *xn = &g->nodes[x], *mn = &g->nodes[m];
    if (mn->op != ND_OP_REDUCE || mn->sub != ND_UF_MAXIMUM || mn->in[0] != x ||
        !(mn->flags & ND_F_KEEPDIMS) || mn->ndim != xn->ndim || s->ndim != xn->ndim)
        return 0;
    if (mn->dtype != xn->dtype || s->dtype != xn->dtype) return 0;
    for (int k = 0; k < 2; k++)
        if (s->in_dtype[k] >= 0 && s->in_dtype[k] != xn->dtype) return 0;
    return memcmp(s->shape, xn->shape, sizeof(s->shape[0]) * (size_t)s->ndim) == 0;
}

/* Emit "const T v<id> = <expr>;". Returns 0, or -1 (no exception) when the
 * node has no generated form. */
static int emit(nd_graph *g, nd_id id, nd_sb *sb, int *uses_err)
{
    nd_node *n = &g->nodes[id];
    const dtinfo *od = dt(n->dtype);
    if (!od) return -1;
    switch (n->op) {
    case ND_OP_CAST: {
        char v[32];
        if (!dt(g->nodes[n->in[0]].dtype)) return -1;
        snprintf(v, sizeof v, "v%d", (int)n->in[0]);
        nd_sb_printf(sb, "const %s v%d = ", od->ctype, (int)id);
        nd_cg_cast_checked(sb, v, g->nodes[n->in[0]].dtype, n->dtype, uses_err);
        nd_sb_puts(sb, ";\n");
        return 0;
    }
    case ND_OP_WHERE: {
        /* NumPy computes both arms on every element, so np.where(x > 0,
         * np.log(x), 0) warns "invalid" for a negative x. From c ? a : b
         * GCC moves a's computation into the branch that keeps it (log's
         * table load or a square root is not if-converted): the lanes the
         * select drops never raised their flag. Floats and complex select
         * by bits (nd_wsel_*), where both arms are data the select needs. */
        int bits = od->cls == 'h' || od->cls == 'f' || od->cls == 'd' || is_cplx(od->cls);
        if (bits) nd_sb_printf(sb, "const %s v%d = nd_wsel_%s(", od->ctype, (int)id, od->sfx);
        else nd_sb_printf(sb, "const %s v%d = (", od->ctype, (int)id);
        if (operand(sb, g, n->in[0], NPY_BOOL) < 0) return -1;
        nd_sb_puts(sb, bits ? ", " : ") ? (");
        if (operand(sb, g, n->in[1], n->dtype) < 0) return -1;
        nd_sb_puts(sb, bits ? ", " : ") : (");
        if (operand(sb, g, n->in[2], n->dtype) < 0) return -1;
        nd_sb_puts(sb, ");\n");
        return 0;
    }
    case ND_OP_VIEW: {
        /* only a view of a scalar is an expression; other views are loads */
        nd_node *b = &g->nodes[n->in[0]];
        if (b->op != ND_OP_SCALAR) return -1;
        if (n->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG))
            nd_sb_printf(sb, "const %s v%d = __%s__ v%d;\n", od->ctype, (int)id,
                         (n->flags & ND_F_VIEW_REAL) ? "real" : "imag", (int)n->in[0]);
        else if (b->dtype == n->dtype)
            nd_sb_printf(sb, "const %s v%d = v%d;\n", od->ctype, (int)id, (int)n->in[0]);
        else return -1;
        return 0;
    }
    case ND_OP_UFUNC:
        break;
    default:
        return -1;
    }
    int uf = n->sub, nin = nd_ufunc_nin(uf);
    if (uf < 0 || uf >= ND_UF_COUNT || n->nin < nin) return -1;
    int loop = n->in_dtype[0] >= 0 ? n->in_dtype[0] : g->nodes[n->in[0]].dtype;
    const dtinfo *ld = dt(loop);
    if (!ld) return -1;
    nd_sb a, b;
    nd_sb_init(&a);
    nd_sb_init(&b);
    int rc = operand(&a, g, n->in[0], loop);
    if (rc == 0 && nin > 1) {
        int l1 = n->in_dtype[1] >= 0 ? n->in_dtype[1] : loop;
        if (uf != ND_UF_LDEXP && l1 != loop) rc = -1;
        else rc = operand(&b, g, n->in[1], l1);
    }
    if (rc == 0 && (a.oom || b.oom)) rc = -1;
    nd_sb e;
    nd_sb_init(&e);
    if (rc == 0) {
        int pc = power_class(g, n, ld);
        if (pc == ND_POW_SQUARE)
            nd_sb_printf(&e, "(%s * %s)", a.p, a.p);
        else if (pc == ND_POW_RECIPROCAL)
            expand(&e, "(($T)1 / $a)", ld, a.p, "");
        else if (pc == ND_POW_SQRT)
            expand(&e, "sqrt$m($a)", ld, a.p, "");
        else if (pc == POW_AT_RUN_TIME) {
            *uses_err = 1;
            expand(&e, "nd_powsc_$s($a, $b, &nd_err)", ld, a.p, b.p);
        } else if ((n->flags & ND_F_SCALAR_MATH) && (ld->cls == 'i' || ld->cls == 'u') &&
                 scalar_math_form(uf)) {
            *uses_err = 1;
            expand(&e, scalar_math_form(uf), ld, a.p, nin > 1 ? b.p : "");
        } else if (uf == ND_UF_EXP && is_float(ld->cls) && at_most_zero(g, n->in[0]))
            expand(&e, "nd_exp$m($a)", ld, a.p, "");
        else if (uf == ND_UF_MULTIPLY && is_cplx(ld->cls) && (n->flags & ND_F_CMUL_PLAIN))
            expand(&e, "nd_cmul_$s($a, $b)", ld, a.p, b.p);  /* BLAS's and einsum's products */
        else
            rc = nd_cg_ufunc(&e, uf, n->aux, loop, a.p, nin > 1 ? b.p : "", uses_err);
    }
    if (rc == 0 && uf == ND_UF_TRUE_DIVIDE && is_float(ld->cls) && !(n->flags & ND_F_DATA_WARN) &&
        selected(g, id)) {
        /* a division a select may keep from running: its flags from its
         * operands (kernels/nd_kernel.h nd_ckdiv); elsewhere the hardware's */
        nd_sb_free(&e);
        nd_sb_init(&e);
        expand(&e, "nd_ckdiv_$s($a, $b, &nd_err)", ld, a.p, b.p);
        *uses_err = 1;
    }
    if (rc == 0 && (n->flags & ND_F_DATA_WARN)) {
        /* graph.h: the condition is reported, the eager backend warns */
        nd_sb w;
        nd_sb_init(&w);
        if (uf == ND_UF_TRUE_DIVIDE)
            nd_sb_printf(&w, "(nd_err |= ((%s) == 0) * ND_ERR_DATAWARN, %s)", b.p, e.p);
        else if (uf == ND_UF_POSITIVE)
            nd_sb_printf(&w, "(nd_err |= ((%s) != (%s)) * ND_ERR_DATAWARN, %s)", a.p, a.p, e.p);
        else if (uf == ND_UF_SUBTRACT)  /* nanvar's dof: "Degrees of freedom <= 0" */
            nd_sb_printf(&w, "(nd_err |= ((%s) <= 0) * ND_ERR_DATAWARN, %s)", e.p, e.p);
        else
            rc = -1;
        if (rc == 0 && !w.oom) {
            nd_sb_free(&e);
            e = w;
            *uses_err = 1;
        } else {
            rc = -1;
            nd_sb_free(&w);
        }
    }
    if (rc == 0 && e.oom) rc = -1;
    if (rc == 0) {
        int nat = natural_type(uf, n->aux, loop);
        nd_sb_printf(sb, "const %s v%d = ", od->ctype, (int)id);
        if (ld->cls == 'h' && nat == loop) {
            /* NumPy rounds a float16 result to half after each op */
            nd_sb t;
            nd_sb_init(&t);
            nd_sb_printf(&t, "nd_rh(%s)", e.p);
            if (t.oom) rc = -1;
            else nd_cg_cast(sb, t.p, nat, n->dtype);
            nd_sb_free(&t);
        } else {
            nd_cg_cast(sb, e.p, nat, n->dtype);
        }
        nd_sb_puts(sb, ";\n");
    }
    nd_sb_free(&a);
    nd_sb_free(&b);
    nd_sb_free(&e);
    return rc;
}

int nd_cg_node(nd_graph *g, nd_id id, nd_sb *sb, int *uses_err)
{
    if (emit(g, id, sb, uses_err) < 0) {
        PyErr_Format(PyExc_NotImplementedError, "numdyn: no C form for node %d (%s)",
                     (int)id, nd_op_name(g->nodes[id].op));
        return -1;
    }
    return 0;
}

int nd_cg_supported(nd_graph *g, nd_id id)
{
    nd_node *n = &g->nodes[id];
    if (!dt(n->dtype)) return 0;
    switch (n->op) {
    case ND_OP_SCALAR: case ND_OP_INDEX:
        return 1;
    case ND_OP_VIEW:
        if (g->nodes[n->in[0]].op == ND_OP_SCALAR) break;
        return dt(g->nodes[n->in[0]].dtype) != NULL;
    case ND_OP_UFUNC: case ND_OP_CAST: case ND_OP_WHERE:
        break;
    default:
        return 0;
    }
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] < 0 || !dt(g->nodes[n->in[k]].dtype)) return 0;
    nd_sb sb;
    nd_sb_init(&sb);
    int err = 0;
    int rc = emit(g, id, &sb, &err);
    int oom = sb.oom;
    nd_sb_free(&sb);
    return rc == 0 && !oom;
}

int nd_cg_cost(nd_graph *g, nd_id id)
{
    nd_node *n = &g->nodes[id];
    if (n->op != ND_OP_UFUNC) return 1;
    int loop = n->in_dtype[0] >= 0 ? n->in_dtype[0] : n->dtype;
    int cx = (loop == NPY_CFLOAT || loop == NPY_CDOUBLE) ? 4 : 1;
    switch (n->sub) {
    case ND_UF_EXP: case ND_UF_EXP2: case ND_UF_EXPM1: case ND_UF_LOG: case ND_UF_LOG2:
    case ND_UF_LOG10: case ND_UF_LOG1P: case ND_UF_SIN: case ND_UF_COS: case ND_UF_TAN:
    case ND_UF_ARCSIN: case ND_UF_ARCCOS: case ND_UF_ARCTAN: case ND_UF_ARCTAN2:
    case ND_UF_SINH: case ND_UF_COSH: case ND_UF_TANH: case ND_UF_ARCSINH: case ND_UF_ARCCOSH:
    case ND_UF_ARCTANH: case ND_UF_POWER: case ND_UF_FLOAT_POWER: case ND_UF_CBRT:
    case ND_UF_HYPOT: case ND_UF_LOGADDEXP: case ND_UF_LOGADDEXP2:
        return 20 * cx;
    case ND_UF_TRUE_DIVIDE: case ND_UF_FLOOR_DIVIDE: case ND_UF_REMAINDER: case ND_UF_FMOD:
    case ND_UF_DIVMOD: case ND_UF_SQRT: case ND_UF_GCD: case ND_UF_LCM:
        return 4 * cx;
    default:
        return cx;
    }
}
