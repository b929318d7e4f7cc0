/* codegen_expr.c -- the scalar expression emitter: the C for ONE element of
 * a pointwise node (ufunc, cast, where), in NumPy's semantics.
 *
 * Kept apart from the loop-nest builder (codegen_loops.c) so that a later
 * loop-capture frontend can emit scalar-typed nodes through the same code.
 * Values live in C variables `v<id>` of the node's computation type:
 * float16 is computed as float holding a half value (rounded after every
 * op, as NumPy does), bool as uint8_t 0/1, complex as C99 _Complex. All the
 * edge semantics are in kernels/nd_kernel.h helpers; this file picks them.
 */
#include "npy.h"
#include "native.h"
#include "../guards/guards.h"

typedef struct dtinfo {
    const char *ctype, *stype, *sfx;
    char cls;  /* b bool, i signed, u unsigned, h half, f float, d double, F c64, D c128 */
} dtinfo;

static const dtinfo DT_BOOL = {"nd_bool", "nd_bool", "b", 'b'};
static const dtinfo DT_I8 = {"int8_t", "int8_t", "i8", 'i'};
static const dtinfo DT_U8 = {"uint8_t", "uint8_t", "u8", 'u'};
static const dtinfo DT_I16 = {"int16_t", "int16_t", "i16", 'i'};
static const dtinfo DT_U16 = {"uint16_t", "uint16_t", "u16", 'u'};
static const dtinfo DT_I32 = {"int32_t", "int32_t", "i32", 'i'};
static const dtinfo DT_U32 = {"uint32_t", "uint32_t", "u32", 'u'};
static const dtinfo DT_I64 = {"int64_t", "int64_t", "i64", 'i'};
static const dtinfo DT_U64 = {"uint64_t", "uint64_t", "u64", 'u'};
static const dtinfo DT_F16 = {"float", "nd_half", "f", 'h'};
static const dtinfo DT_F32 = {"float", "float", "f", 'f'};
static const dtinfo DT_F64 = {"double", "double", "d", 'd'};
static const dtinfo DT_C64 = {"nd_c64", "nd_c64", "cf", 'F'};
static const dtinfo DT_C128 = {"nd_c128", "nd_c128", "cd", 'D'};

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

int nd_cg_elsize(int t)
{
    switch (dt(t)->cls) {
    case 'b': return 1;
    case 'h': return 2;
    case 'f': return 4;
    case 'd': return 8;
    case 'F': return 8;
    case 'D': return 16;
    default: break;
    }
    const char *c = dt(t)->ctype;
    return strstr(c, "64") ? 8 : strstr(c, "32") ? 4 : strstr(c, "16") ? 2 : 1;
}

static int is_float(char c) { return c == 'h' || c == 'f' || c == 'd'; }
static int is_cplx(char c) { return c == 'F' || c == 'D'; }
static int is_intlike(char c) { return c == 'b' || c == 'i' || c == 'u'; }

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

/* the real type of a complex class */
static const char *realof(char c) { return c == 'F' ? "float" : "double"; }

void nd_cg_cast(nd_sb *sb, const char *x, int from, int to)
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
        const char *rt = realof(t->cls), *s = t->sfx;
        if (is_cplx(f->cls))
            nd_sb_printf(sb, "nd_cmk_%s((%s)__real__ (%s), (%s)__imag__ (%s))", s, rt, x, rt, x);
        else
            nd_sb_printf(sb, "nd_cmk_%s((%s)(%s), 0)", s, rt, x);
        return;
    }
    if (is_cplx(f->cls)) {
        /* NumPy keeps the real part (its ComplexWarning is the shim's) */
        char buf[512];
        snprintf(buf, sizeof buf, "__real__ (%s)", x);
        nd_cg_cast(sb, buf, f->cls == 'F' ? NPY_FLOAT : NPY_DOUBLE, to);
        return;
    }
    if (t->cls == 'h') {
        if (f->cls == 'f') nd_sb_printf(sb, "nd_rh(%s)", x);
        else if (f->cls == 'b') nd_sb_printf(sb, "(float)(%s)", x);
        else nd_sb_printf(sb, "nd_h2f(nd_d2h((double)(%s)))", x);
        return;
    }
    if (is_float(t->cls) || is_intlike(f->cls)) {
        nd_sb_printf(sb, "(%s)(%s)", t->ctype, x);
        return;
    }
    /* float -> integer: defined behaviour for NaN/out of range (x86's) */
    if (!strcmp(t->ctype, "int64_t")) nd_sb_printf(sb, "nd_d2i64((double)(%s))", x);
    else if (!strcmp(t->ctype, "uint64_t")) nd_sb_printf(sb, "nd_d2u64((double)(%s))", x);
    else if (!strcmp(t->ctype, "uint32_t")) nd_sb_printf(sb, "(uint32_t)nd_d2i64((double)(%s))", x);
    else nd_sb_printf(sb, "(%s)nd_d2i32((double)(%s))", t->ctype, x);
}

/* C name of a float math function: base for double, base+"f" for float */
static void fn1(nd_sb *sb, char c, const char *base, const char *a)
{
    nd_sb_printf(sb, "%s%s(%s)", base, c == 'd' ? "" : "f", a);
}
static void fn2(nd_sb *sb, char c, const char *base, const char *a, const char *b)
{
    nd_sb_printf(sb, "%s%s(%s, %s)", base, c == 'd' ? "" : "f", a, b);
}

static int natural_type(int uf, int aux, int loop)
{
    switch (uf) {
    case ND_UF_GREATER: case ND_UF_GREATER_EQUAL: case ND_UF_LESS: case ND_UF_LESS_EQUAL:
    case ND_UF_NOT_EQUAL: case ND_UF_EQUAL: case ND_UF_LOGICAL_AND: case ND_UF_LOGICAL_OR:
    case ND_UF_LOGICAL_XOR: case ND_UF_LOGICAL_NOT: case ND_UF_ISFINITE: case ND_UF_ISINF:
    case ND_UF_ISNAN: case ND_UF_SIGNBIT:
        return NPY_BOOL;
    case ND_UF_ABSOLUTE:
        if (loop == NPY_CFLOAT) return NPY_FLOAT;
        if (loop == NPY_CDOUBLE) return NPY_DOUBLE;
        return loop;
    case ND_UF_BITWISE_COUNT: return NPY_UBYTE;
    case ND_UF_FREXP: return aux == 1 ? NPY_INT : loop;
    default: return loop;
    }
}

/* Float classes: the expression, without float16 rounding. 0, or -1 when
 * the ufunc has no float loop here. */
static int ufunc_float(nd_sb *sb, int uf, int aux, char c, const char *a, const char *b)
{
    const char *s = c == 'd' ? "d" : "f";
    const char *T = c == 'd' ? "double" : "float";
    switch (uf) {
    case ND_UF_ADD: nd_sb_printf(sb, "(%s + %s)", a, b); return 0;
    case ND_UF_SUBTRACT: nd_sb_printf(sb, "(%s - %s)", a, b); return 0;
    case ND_UF_MULTIPLY: nd_sb_printf(sb, "(%s * %s)", a, b); return 0;
    case ND_UF_TRUE_DIVIDE: nd_sb_printf(sb, "(%s / %s)", a, b); return 0;
    case ND_UF_FLOOR_DIVIDE: nd_sb_printf(sb, "nd_floordiv_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_REMAINDER: nd_sb_printf(sb, "nd_remainder_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_FMOD: fn2(sb, c, "fmod", a, b); return 0;
    case ND_UF_DIVMOD:
        nd_sb_printf(sb, aux ? "nd_remainder_%s(%s, %s)" : "nd_floordiv_%s(%s, %s)", s, a, b);
        return 0;
    case ND_UF_POWER: case ND_UF_FLOAT_POWER: fn2(sb, c, "nd_pow", a, b); return 0;
    case ND_UF_NEGATIVE: nd_sb_printf(sb, "(-%s)", a); return 0;
    case ND_UF_POSITIVE: case ND_UF_CONJUGATE: nd_sb_printf(sb, "(%s)", a); return 0;
    case ND_UF_ABSOLUTE: case ND_UF_FABS: fn1(sb, c, "fabs", a); return 0;
    case ND_UF_RINT: fn1(sb, c, "rint", a); return 0;
    case ND_UF_FLOOR: fn1(sb, c, "floor", a); return 0;
    case ND_UF_CEIL: fn1(sb, c, "ceil", a); return 0;
    case ND_UF_TRUNC: fn1(sb, c, "trunc", a); return 0;
    case ND_UF_SIGN: nd_sb_printf(sb, "nd_sign_%s(%s)", s, a); return 0;
    case ND_UF_HEAVISIDE: nd_sb_printf(sb, "nd_heaviside_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_EXP: fn1(sb, c, "nd_exp", a); return 0;
    case ND_UF_EXP2: fn1(sb, c, "nd_exp2", a); return 0;
    case ND_UF_EXPM1: fn1(sb, c, "nd_expm1", a); return 0;
    case ND_UF_LOG: fn1(sb, c, "nd_log", a); return 0;
    case ND_UF_LOG2: fn1(sb, c, "nd_log2", a); return 0;
    case ND_UF_LOG10: fn1(sb, c, "nd_log10", a); return 0;
    case ND_UF_LOG1P: fn1(sb, c, "nd_log1p", a); return 0;
    case ND_UF_LOGADDEXP: nd_sb_printf(sb, "nd_logaddexp_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_LOGADDEXP2: nd_sb_printf(sb, "nd_logaddexp2_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_SQRT: fn1(sb, c, "sqrt", a); return 0;
    case ND_UF_SQUARE: nd_sb_printf(sb, "(%s * %s)", a, a); return 0;
    case ND_UF_CBRT: fn1(sb, c, "nd_cbrt", a); return 0;
    case ND_UF_RECIPROCAL: nd_sb_printf(sb, "((%s)1 / %s)", T, a); return 0;
    case ND_UF_SIN: fn1(sb, c, "nd_sin", a); return 0;
    case ND_UF_COS: fn1(sb, c, "nd_cos", a); return 0;
    case ND_UF_TAN: fn1(sb, c, "nd_tan", a); return 0;
    case ND_UF_ARCSIN: fn1(sb, c, "nd_asin", a); return 0;
    case ND_UF_ARCCOS: fn1(sb, c, "nd_acos", a); return 0;
    case ND_UF_ARCTAN: fn1(sb, c, "nd_atan", a); return 0;
    case ND_UF_ARCTAN2: fn2(sb, c, "nd_atan2", a, b); return 0;
    case ND_UF_HYPOT: fn2(sb, c, "nd_hypot", a, b); return 0;
    case ND_UF_SINH: fn1(sb, c, "nd_sinh", a); return 0;
    case ND_UF_COSH: fn1(sb, c, "nd_cosh", a); return 0;
    case ND_UF_TANH: fn1(sb, c, "nd_tanh", a); return 0;
    case ND_UF_ARCSINH: fn1(sb, c, "nd_asinh", a); return 0;
    case ND_UF_ARCCOSH: fn1(sb, c, "nd_acosh", a); return 0;
    case ND_UF_ARCTANH: fn1(sb, c, "nd_atanh", a); return 0;
    case ND_UF_DEG2RAD: case ND_UF_RADIANS:
        nd_sb_printf(sb, "(%s * (%s)(3.141592653589793238462643383279502884 / 180.0))", a, T);
        return 0;
    case ND_UF_RAD2DEG: case ND_UF_DEGREES:
        nd_sb_printf(sb, "(%s * (%s)(180.0 / 3.141592653589793238462643383279502884))", a, T);
        return 0;
    case ND_UF_GREATER: nd_sb_printf(sb, "(nd_bool)(%s > %s)", a, b); return 0;
    case ND_UF_GREATER_EQUAL: nd_sb_printf(sb, "(nd_bool)(%s >= %s)", a, b); return 0;
    case ND_UF_LESS: nd_sb_printf(sb, "(nd_bool)(%s < %s)", a, b); return 0;
    case ND_UF_LESS_EQUAL: nd_sb_printf(sb, "(nd_bool)(%s <= %s)", a, b); return 0;
    case ND_UF_NOT_EQUAL: nd_sb_printf(sb, "(nd_bool)(%s != %s)", a, b); return 0;
    case ND_UF_EQUAL: nd_sb_printf(sb, "(nd_bool)(%s == %s)", a, b); return 0;
    case ND_UF_LOGICAL_AND: nd_sb_printf(sb, "(nd_bool)(%s != 0 && %s != 0)", a, b); return 0;
    case ND_UF_LOGICAL_OR: nd_sb_printf(sb, "(nd_bool)(%s != 0 || %s != 0)", a, b); return 0;
    case ND_UF_LOGICAL_XOR: nd_sb_printf(sb, "(nd_bool)((%s != 0) != (%s != 0))", a, b); return 0;
    case ND_UF_LOGICAL_NOT: nd_sb_printf(sb, "(nd_bool)(%s == 0)", a); return 0;
    case ND_UF_MAXIMUM: nd_sb_printf(sb, "nd_max_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_MINIMUM: nd_sb_printf(sb, "nd_min_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_FMAX: nd_sb_printf(sb, "nd_fmax_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_FMIN: nd_sb_printf(sb, "nd_fmin_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_ISFINITE: nd_sb_printf(sb, "(nd_bool)(isfinite(%s) != 0)", a); return 0;
    case ND_UF_ISINF: nd_sb_printf(sb, "(nd_bool)(isinf(%s) != 0)", a); return 0;
    case ND_UF_ISNAN: nd_sb_printf(sb, "(nd_bool)(%s != %s)", a, a); return 0;
    case ND_UF_SIGNBIT: nd_sb_printf(sb, "nd_signbit_%s(%s)", s, a); return 0;
    case ND_UF_COPYSIGN: fn2(sb, c, "copysign", a, b); return 0;
    case ND_UF_NEXTAFTER:
        if (c == 'h') return -1;  /* NumPy steps in half's own bit pattern */
        fn2(sb, c, "nextafter", a, b);
        return 0;
    case ND_UF_SPACING:
        if (c == 'h') return -1;
        nd_sb_printf(sb, "nd_spacing_%s(%s)", s, a);
        return 0;
    case ND_UF_MODF:
        if (aux) fn1(sb, c, "trunc", a);
        else nd_sb_printf(sb, "(isinf(%s) ? copysign%s(0, %s) : copysign%s(%s - trunc%s(%s), %s))",
                          a, c == 'd' ? "" : "f", a, c == 'd' ? "" : "f", a,
                          c == 'd' ? "" : "f", a, a);
        return 0;
    case ND_UF_LDEXP:
        nd_sb_printf(sb, "ldexp%s(%s, (int)((%s) > 100000 ? 100000 : (%s) < -100000 ? -100000 : (%s)))",
                     c == 'd' ? "" : "f", a, b, b, b);
        return 0;
    case ND_UF_FREXP:
        if (aux) nd_sb_printf(sb, "({ int e_; (void)frexp%s(%s, &e_); (int32_t)((isinf(%s) || %s != %s) ? 0 : e_); })",
                              c == 'd' ? "" : "f", a, a, a, a);
        else nd_sb_printf(sb, "({ int e_; frexp%s(%s, &e_); })", c == 'd' ? "" : "f", a);
        return 0;
    default:
        return -1;
    }
}

static int ufunc_int(nd_sb *sb, int uf, int aux, const dtinfo *d, const char *a, const char *b, int *err)
{
    const char *T = d->ctype, *s = d->sfx;
    const char *UT = d->cls == 'i' ? (!strcmp(T, "int8_t") ? "uint8_t" : !strcmp(T, "int16_t") ? "uint16_t" :
                                      !strcmp(T, "int32_t") ? "uint32_t" : "uint64_t") : T;
    int isb = d->cls == 'b';
    switch (uf) {
    case ND_UF_ADD:
        if (isb) nd_sb_printf(sb, "(nd_bool)(%s | %s)", a, b);
        else nd_sb_printf(sb, "(%s)((%s)%s + (%s)%s)", T, UT, a, UT, b);
        return 0;
    case ND_UF_SUBTRACT:
        if (isb) return -1;
        nd_sb_printf(sb, "(%s)((%s)%s - (%s)%s)", T, UT, a, UT, b);
        return 0;
    case ND_UF_MULTIPLY:
        if (isb) nd_sb_printf(sb, "(nd_bool)(%s & %s)", a, b);
        else nd_sb_printf(sb, "(%s)((%s)%s * (%s)%s)", T, UT, a, UT, b);
        return 0;
    case ND_UF_SQUARE:
        if (isb) return -1;
        nd_sb_printf(sb, "(%s)((%s)%s * (%s)%s)", T, UT, a, UT, a);
        return 0;
    case ND_UF_FLOOR_DIVIDE: case ND_UF_REMAINDER: case ND_UF_FMOD: case ND_UF_DIVMOD:
    case ND_UF_POWER:
        if (isb) return -1;
        *err = 1;
        nd_sb_printf(sb, "nd_%s_%s(%s, %s, &nd_err)",
                     uf == ND_UF_FLOOR_DIVIDE ? "fdiv" : uf == ND_UF_REMAINDER ? "irem" :
                     uf == ND_UF_FMOD ? "ifmod" : uf == ND_UF_POWER ? "ipow" :
                     aux ? "irem" : "fdiv", s, a, b);
        return 0;
    case ND_UF_NEGATIVE:
        if (isb) return -1;
        nd_sb_printf(sb, "(%s)((%s)0 - (%s)%s)", T, UT, UT, a);
        return 0;
    case ND_UF_POSITIVE: case ND_UF_CONJUGATE: case ND_UF_FLOOR: case ND_UF_CEIL: case ND_UF_TRUNC:
        nd_sb_printf(sb, "(%s)", a);
        return 0;
    case ND_UF_ABSOLUTE:
        if (isb) nd_sb_printf(sb, "(%s)", a);
        else nd_sb_printf(sb, "nd_iabs_%s(%s)", s, a);
        return 0;
    case ND_UF_SIGN:
        if (isb) return -1;
        nd_sb_printf(sb, "nd_isign_%s(%s)", s, a);
        return 0;
    case ND_UF_RECIPROCAL:
        if (isb) return -1;
        {
            nd_sb t; nd_sb_init(&t);
            nd_sb_printf(&t, "(1.0 / (double)%s)", a);
            if (nd_sb_check(&t) < 0) { PyErr_Clear(); nd_sb_free(&t); return -1; }
            int dtn = d == dt(NPY_BYTE) ? NPY_BYTE : d == dt(NPY_UBYTE) ? NPY_UBYTE :
                      d == dt(NPY_SHORT) ? NPY_SHORT : d == dt(NPY_USHORT) ? NPY_USHORT :
                      d == dt(NPY_INT) ? NPY_INT : d == dt(NPY_UINT) ? NPY_UINT :
                      d == dt(NPY_LONGLONG) ? NPY_LONGLONG : NPY_ULONGLONG;
            nd_cg_cast(sb, t.p, NPY_DOUBLE, dtn);
            nd_sb_free(&t);
        }
        return 0;
    case ND_UF_GCD: case ND_UF_LCM:
        if (isb) return -1;
        nd_sb_printf(sb, "nd_%s_%s(%s, %s)", uf == ND_UF_GCD ? "gcd" : "lcm", s, a, b);
        return 0;
    case ND_UF_BITWISE_AND: nd_sb_printf(sb, "(%s)(%s & %s)", T, a, b); return 0;
    case ND_UF_BITWISE_OR: nd_sb_printf(sb, "(%s)(%s | %s)", T, a, b); return 0;
    case ND_UF_BITWISE_XOR: nd_sb_printf(sb, "(%s)(%s ^ %s)", T, a, b); return 0;
    case ND_UF_INVERT:
        if (isb) nd_sb_printf(sb, "(nd_bool)!%s", a);
        else nd_sb_printf(sb, "(%s)~%s", T, a);
        return 0;
    case ND_UF_LEFT_SHIFT: case ND_UF_RIGHT_SHIFT:
        if (isb) return -1;
        nd_sb_printf(sb, "nd_%cshift_%s(%s, %s)", uf == ND_UF_LEFT_SHIFT ? 'l' : 'r', s, a, b);
        return 0;
    case ND_UF_BITWISE_COUNT:
        if (isb) return -1;
        nd_sb_printf(sb, "nd_popcnt_%s(%s)", s, a);
        return 0;
    case ND_UF_GREATER: nd_sb_printf(sb, "(nd_bool)(%s > %s)", a, b); return 0;
    case ND_UF_GREATER_EQUAL: nd_sb_printf(sb, "(nd_bool)(%s >= %s)", a, b); return 0;
    case ND_UF_LESS: nd_sb_printf(sb, "(nd_bool)(%s < %s)", a, b); return 0;
    case ND_UF_LESS_EQUAL: nd_sb_printf(sb, "(nd_bool)(%s <= %s)", a, b); return 0;
    case ND_UF_NOT_EQUAL: nd_sb_printf(sb, "(nd_bool)(%s != %s)", a, b); return 0;
    case ND_UF_EQUAL: nd_sb_printf(sb, "(nd_bool)(%s == %s)", a, b); return 0;
    case ND_UF_LOGICAL_AND: nd_sb_printf(sb, "(nd_bool)(%s != 0 && %s != 0)", a, b); return 0;
    case ND_UF_LOGICAL_OR: nd_sb_printf(sb, "(nd_bool)(%s != 0 || %s != 0)", a, b); return 0;
    case ND_UF_LOGICAL_XOR: nd_sb_printf(sb, "(nd_bool)((%s != 0) != (%s != 0))", a, b); return 0;
    case ND_UF_LOGICAL_NOT: nd_sb_printf(sb, "(nd_bool)(%s == 0)", a); return 0;
    case ND_UF_MAXIMUM: case ND_UF_FMAX:
        nd_sb_printf(sb, "(%s >= %s ? %s : %s)", a, b, a, b);
        return 0;
    case ND_UF_MINIMUM: case ND_UF_FMIN:
        nd_sb_printf(sb, "(%s <= %s ? %s : %s)", a, b, a, b);
        return 0;
    case ND_UF_ISFINITE: nd_sb_puts(sb, "(nd_bool)1"); return 0;
    case ND_UF_ISINF: case ND_UF_ISNAN: nd_sb_puts(sb, "(nd_bool)0"); return 0;
    default:
        return -1;
    }
}

static int ufunc_cplx(nd_sb *sb, int uf, const dtinfo *d, const char *a, const char *b)
{
    const char *s = d->sfx, *R = realof(d->cls), *f = d->cls == 'F' ? "f" : "";
    switch (uf) {
    case ND_UF_ADD: nd_sb_printf(sb, "(%s + %s)", a, b); return 0;
    case ND_UF_SUBTRACT: nd_sb_printf(sb, "(%s - %s)", a, b); return 0;
    case ND_UF_MULTIPLY: nd_sb_printf(sb, "nd_cmul_fused_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_TRUE_DIVIDE: nd_sb_printf(sb, "nd_cdiv_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_SQUARE: nd_sb_printf(sb, "nd_cmul_fused_%s(%s, %s)", s, a, a); return 0;
    case ND_UF_RECIPROCAL: nd_sb_printf(sb, "nd_cdiv_%s(nd_cmk_%s(1, 0), %s)", s, s, a); return 0;
    case ND_UF_NEGATIVE: nd_sb_printf(sb, "nd_cmk_%s(-__real__ %s, -__imag__ %s)", s, a, a); return 0;
    case ND_UF_POSITIVE: nd_sb_printf(sb, "(%s)", a); return 0;
    case ND_UF_CONJUGATE: nd_sb_printf(sb, "nd_cmk_%s(__real__ %s, -__imag__ %s)", s, a, a); return 0;
    case ND_UF_ABSOLUTE: nd_sb_printf(sb, "nd_cabs_%s(%s)", s, a); return 0;
    case ND_UF_POWER: case ND_UF_FLOAT_POWER: nd_sb_printf(sb, "nd_cpow_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_SIGN: nd_sb_printf(sb, "nd_csign_%s(%s)", s, a); return 0;
    case ND_UF_EXP: nd_sb_printf(sb, "cexp%s(%s)", f, a); return 0;
    case ND_UF_LOG: nd_sb_printf(sb, "clog%s(%s)", f, a); return 0;
    case ND_UF_LOG2:
        nd_sb_printf(sb, "(clog%s(%s) * (%s)1.442695040888963407359924681001892137)", f, a, R);
        return 0;
    case ND_UF_LOG10:
        nd_sb_printf(sb, "(clog%s(%s) * (%s)0.434294481903251827651128918916605082)", f, a, R);
        return 0;
    case ND_UF_SQRT: nd_sb_printf(sb, "csqrt%s(%s)", f, a); return 0;
    case ND_UF_SIN: nd_sb_printf(sb, "csin%s(%s)", f, a); return 0;
    case ND_UF_COS: nd_sb_printf(sb, "ccos%s(%s)", f, a); return 0;
    case ND_UF_TAN: nd_sb_printf(sb, "ctan%s(%s)", f, a); return 0;
    case ND_UF_SINH: nd_sb_printf(sb, "csinh%s(%s)", f, a); return 0;
    case ND_UF_COSH: nd_sb_printf(sb, "ccosh%s(%s)", f, a); return 0;
    case ND_UF_TANH: nd_sb_printf(sb, "ctanh%s(%s)", f, a); return 0;
    case ND_UF_ARCSIN: nd_sb_printf(sb, "casin%s(%s)", f, a); return 0;
    case ND_UF_ARCCOS: nd_sb_printf(sb, "cacos%s(%s)", f, a); return 0;
    case ND_UF_ARCTAN: nd_sb_printf(sb, "catan%s(%s)", f, a); return 0;
    case ND_UF_ARCSINH: nd_sb_printf(sb, "casinh%s(%s)", f, a); return 0;
    case ND_UF_ARCCOSH: nd_sb_printf(sb, "cacosh%s(%s)", f, a); return 0;
    case ND_UF_ARCTANH: nd_sb_printf(sb, "catanh%s(%s)", f, a); return 0;
    case ND_UF_EQUAL:
        nd_sb_printf(sb, "(nd_bool)(__real__ %s == __real__ %s && __imag__ %s == __imag__ %s)", a, b, a, b);
        return 0;
    case ND_UF_NOT_EQUAL:
        nd_sb_printf(sb, "(nd_bool)(__real__ %s != __real__ %s || __imag__ %s != __imag__ %s)", a, b, a, b);
        return 0;
    case ND_UF_LESS: nd_sb_printf(sb, "(nd_bool)nd_clt_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_LESS_EQUAL: nd_sb_printf(sb, "(nd_bool)nd_cle_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_GREATER: nd_sb_printf(sb, "(nd_bool)nd_clt_%s(%s, %s)", s, b, a); return 0;
    case ND_UF_GREATER_EQUAL: nd_sb_printf(sb, "(nd_bool)nd_cle_%s(%s, %s)", s, b, a); return 0;
    case ND_UF_MAXIMUM: nd_sb_printf(sb, "nd_cmax_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_MINIMUM: nd_sb_printf(sb, "nd_cmin_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_FMAX: nd_sb_printf(sb, "nd_cfmax_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_FMIN: nd_sb_printf(sb, "nd_cfmin_%s(%s, %s)", s, a, b); return 0;
    case ND_UF_ISNAN: nd_sb_printf(sb, "(nd_bool)nd_cisnan_%s(%s)", s, a); return 0;
    case ND_UF_ISFINITE:
        nd_sb_printf(sb, "(nd_bool)(isfinite(__real__ %s) && isfinite(__imag__ %s))", a, a);
        return 0;
    case ND_UF_ISINF:
        nd_sb_printf(sb, "(nd_bool)(isinf(__real__ %s) || isinf(__imag__ %s))", a, a);
        return 0;
    case ND_UF_LOGICAL_AND: case ND_UF_LOGICAL_OR: case ND_UF_LOGICAL_XOR:
        nd_sb_printf(sb, "(nd_bool)(((__real__ %s != 0 || __imag__ %s != 0)) %s ((__real__ %s != 0 || __imag__ %s != 0)))",
                     a, a, uf == ND_UF_LOGICAL_AND ? "&&" : uf == ND_UF_LOGICAL_OR ? "||" : "!=", b, b);
        return 0;
    case ND_UF_LOGICAL_NOT:
        nd_sb_printf(sb, "(nd_bool)(__real__ %s == 0 && __imag__ %s == 0)", a, a);
        return 0;
    default:
        return -1;
    }
}

/* the operand text: v<in> converted to the loop dtype */
static int operand(nd_sb *sb, nd_graph *g, nd_id in, int loop)
{
    char v[32];
    snprintf(v, sizeof v, "v%d", (int)in);
    int from = g->nodes[in].dtype;
    if (!dt(from) || !dt(loop)) return -1;
    nd_cg_cast(sb, v, from, loop);
    return 0;
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
        nd_cg_cast(sb, v, g->nodes[n->in[0]].dtype, n->dtype);
        nd_sb_puts(sb, ";\n");
        return 0;
    }
    case ND_OP_WHERE: {
        nd_sb_printf(sb, "const %s v%d = (", od->ctype, (int)id);
        if (operand(sb, g, n->in[0], NPY_BOOL) < 0) return -1;
        nd_sb_puts(sb, ") ? (");
        if (operand(sb, g, n->in[1], n->dtype) < 0) return -1;
        nd_sb_puts(sb, ") : (");
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
        const char *bp = nin > 1 ? b.p : "";
        if (is_float(ld->cls)) {
            if (uf == ND_UF_LDEXP && !dt(n->in_dtype[1] >= 0 ? n->in_dtype[1] : g->nodes[n->in[1]].dtype))
                rc = -1;
            else if ((uf == ND_UF_POWER || uf == ND_UF_FLOAT_POWER) &&
                     g->nodes[n->in[1]].op == ND_OP_SCALAR && nd_guard_scalar_is_two(&g->nodes[n->in[1]]))
                nd_sb_printf(&e, "(%s * %s)", a.p, a.p);  /* part of the program key */
            else
                rc = ufunc_float(&e, uf, n->aux, ld->cls == 'd' ? 'd' : ld->cls, a.p, bp);
        } else if (is_cplx(ld->cls)) rc = ufunc_cplx(&e, uf, ld, a.p, bp);
        else rc = (uf == ND_UF_LDEXP) ? -1 : ufunc_int(&e, uf, n->aux, ld, a.p, bp, uses_err);
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
