/* nd_kernel.h -- everything numdyn's generated C includes.
 *
 * Generated kernels are plain C11 + OpenMP with no Python or NumPy headers:
 * this file gives them NumPy's dtypes, NumPy's edge semantics for each ufunc
 * (floor division and remainder toward -inf, integer division by zero -> 0,
 * wrapping integer overflow, NaN-propagating maximum/minimum, ...), float16
 * rounding after every operation, complex arithmetic as NumPy does it, the
 * SLEEF vector math declarations and the pairwise-summation helpers.
 *
 * The whole text of this file is part of every disk-cache key, so editing it
 * invalidates cached kernels.
 */
#ifndef ND_KERNEL_H
#define ND_KERNEL_H
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <complex.h>
#include <fenv.h>
#undef I  /* kernels name their size/stride argument I */

#define ND_INLINE static inline __attribute__((always_inline))
/* the integer helpers are written once for signed and unsigned types */
#pragma GCC diagnostic ignored "-Wtype-limits"

/* Kernel ABI: every kernel is
 *   void name(char *const *P, const int64_t *I, const nd_sv *S, int *E)
 * P: base pointers (inputs then outputs), I: sizes and element strides,
 * S: scalar parameters (layout of graph.h's nd_scalar), E[0]: error bits.
 * In store-check mode P also holds each output's [lo, hi) after the operands. */
typedef union { double f; int64_t i; uint64_t u; struct { double re, im; } c; } nd_sv;

#define ND_ERR_DIVZERO 1   /* integer division by zero: RuntimeWarning */
#define ND_ERR_OVERFLOW 2  /* MIN // -1, NumPy scalar math that wraps: RuntimeWarning */
#define ND_ERR_NEGPOW 4    /* integer ** negative: ValueError */
#define ND_ERR_NOMEM 8     /* a kernel's scratch allocation failed */
#define ND_ERR_OOB 16      /* store-check mode: a store fell outside its output */
/* Store-check mode (NUMDYN_CHECK_STORES=1): P[nops + 2*k], P[nops + 2*k + 1]
 * bound output k's bytes; a store outside them is skipped and reported. */
#define ND_OOB(addr, lo, hi) \
    ((const char *)(addr) < (lo) || (const char *)((addr) + 1) > (hi))
#define ND_ERR_INTERRUPT 32 /* set by the runtime's SIGINT handler while a long kernel
                               runs: the kernel skips its remaining tasks */
/* the floating-point status flags a kernel raised (NumPy's divide / over /
 * under / invalid): collected from every thread that ran a task, checked by
 * the runtime against np.geterr() after the kernel */
#define ND_ERR_FPE_DIV 64
#define ND_ERR_FPE_OVER 128
#define ND_ERR_FPE_UNDER 256
#define ND_ERR_FPE_INVALID 512
#define ND_ERR_DATAWARN 1024 /* a node marked ND_F_DATA_WARN met its condition: NumPy's
                               warning (not an FP flag, not subject to errstate) is
                               issued by running the graph with NumPy */
#define ND_ERR_VARIANT 2048 /* the kernel was generated without the run-time variant these
                              sizes take (a tall array's chunked column reduction,
                              codegen_loops.c gen_reduce): it did nothing; the runtime
                              compiles the kernel with every variant and runs that */
/* At the top of each task / reduction block: a Ctrl-C stops a long kernel
 * within one task (a few thousand elements), at the cost of one relaxed
 * load per task. */
/* Task bodies of parallel loops as nested functions (codegen_loops.c,
 * put_task_function): GCC's GNU C extension; elsewhere the loop's two
 * copies. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER) && !defined(ND_NO_NESTED_TASKS)
#define ND_NESTED_TASKS 1
#else
#define ND_NESTED_TASKS 0
#endif
#define ND_POLL(E) if (__builtin_expect(__atomic_load_n((E), __ATOMIC_RELAXED) & ND_ERR_INTERRUPT, 0)) continue
/* At the end of each task of a parallel loop: this thread's status flags
 * into the kernel's error word, then cleared (two register reads when none
 * is set). The calling thread's are read by the runtime. */
#define ND_FPE_ALL (FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID)
ND_INLINE int nd_fpe_take(void)
{
#if defined(__x86_64__) && defined(__SSE__)
    /* kernels compute in SSE/AVX registers: MXCSR alone (stmxcsr, a few
     * cycles; fetestexcept also reads the x87 status word) */
    unsigned csr = __builtin_ia32_stmxcsr();
    if (__builtin_expect((csr & 0x1d) == 0, 1)) return 0;
    __builtin_ia32_ldmxcsr(csr & ~0x3fu);
    return (csr & 0x4 ? ND_ERR_FPE_DIV : 0) | (csr & 0x8 ? ND_ERR_FPE_OVER : 0) |
           (csr & 0x10 ? ND_ERR_FPE_UNDER : 0) | (csr & 0x1 ? ND_ERR_FPE_INVALID : 0);
#endif
    int f = fetestexcept(ND_FPE_ALL);
    if (__builtin_expect(f == 0, 1)) return 0;
    feclearexcept(f);
    return (f & FE_DIVBYZERO ? ND_ERR_FPE_DIV : 0) | (f & FE_OVERFLOW ? ND_ERR_FPE_OVER : 0) |
           (f & FE_UNDERFLOW ? ND_ERR_FPE_UNDER : 0) | (f & FE_INVALID ? ND_ERR_FPE_INVALID : 0);
}
#define ND_FPE_TAKE nd_err |= nd_fpe_take()

typedef uint8_t nd_bool;
typedef float _Complex nd_c64;
typedef double _Complex nd_c128;

/* ------------------------------------------------------------ float16 */
ND_INLINE uint32_t nd_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
ND_INLINE float nd_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
ND_INLINE uint64_t nd_d2u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
/* 2^127, weak so that the compiler cannot know it: the multiplication that
 * overflows on purpose (raising the flag NumPy reports for a float16
 * result past 65504) is neither folded nor removed */
__attribute__((weak)) float nd_ovf_f = 0x1p127f;
#define ND_F16_OVF nd_ovf_f
/* the conversions, shared with nd_cuda.h */
#define ND_F16_FN ND_INLINE
#include "nd_f16.h"

/* numdyn's own AVX-512 vector math (below, "numdyn's own AVX-512 vector
 * math") where the target has AVX-512F and DQ and the compiler is GCC */
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(_OPENMP) && defined(__GNUC__) && \
    !defined(__clang__) && !defined(ND_NO_ZV)
#define ND_ZV 1
#else
#define ND_ZV 0
#endif
/* ------------------------------------------------ SLEEF vector math */
/* Declared under private names bound to the libm symbols: with the simd
 * attribute GCC calls the GNU vector-ABI variants (_ZGVeN8v_exp...) that
 * libsleefgnuabi exports, at the widest ISA -march=native allows. */
#ifdef ND_NO_SLEEF
#define ND_VM
#else
#define ND_VM __attribute__((simd("notinbranch")))
#endif
#define ND_DECL1(nm) \
    ND_VM __attribute__((const, nothrow)) double nd_##nm(double) __asm__(#nm); \
    ND_VM __attribute__((const, nothrow)) float nd_##nm##f(float) __asm__(#nm "f");
#define ND_DECL2(nm) \
    ND_VM __attribute__((const, nothrow)) double nd_##nm(double, double) __asm__(#nm); \
    ND_VM __attribute__((const, nothrow)) float nd_##nm##f(float, float) __asm__(#nm "f");
/* float32 with SLEEF's 3.5-ULP variants (2-3x faster than the 1-ULP ones;
 * 3.5 ULP is 2e-7 relative, far inside float32 tolerances): the vector
 * calls go to _ZGV..._<name>f_u35, and the scalar symbol <name>f_u35 (loop
 * remainders) is defined right here as libm's function. float64 takes them
 * where they measured within 3 ULP of NumPy's over every decade (log,
 * log2, tan, arcsin, arccos, arctan, arctan2: 2x faster than the 1-ULP
 * ones, which ran 1.5-2x slower than NumPy's loops; tests/
 * test_codegen_libm.py), the 1-ULP versions elsewhere. */
/* The scalar symbol <f>_u35 (loop remainders, scalar calls) is libm's <f>.
 * On ELF it is an assembler alias (.set), so a call binds to libm's <f>
 * directly and a unit that calls none of them compiles nothing for them:
 * as C functions, 18 wrappers went through -O3 in every unit (40 ms of a
 * small unit's ~90 ms with the precompiled header). Elsewhere, a C
 * wrapper. ND_U35S(f, type, (params), (args)). */
#if defined(__ELF__) && !defined(ND_U35_C)
#define ND_U35S(f, T, P, A) __asm__(".set " #f "_u35, " #f);
#else
#define ND_U35S(f, T, P, A) \
    __attribute__((visibility("hidden"), const, nothrow)) T nd_##f##_u35s P __asm__(#f "_u35"); \
    T nd_##f##_u35s P { return f A; }
#endif
#define ND_DECL1D(nm) \
    ND_VM __attribute__((const, nothrow)) double nd_##nm(double) __asm__(#nm);
#define ND_DECL2D(nm) \
    ND_VM __attribute__((const, nothrow)) double nd_##nm(double, double) __asm__(#nm);
#define ND_DECL1D35(nm) \
    ND_VM __attribute__((const, nothrow)) double nd_##nm(double) __asm__(#nm "_u35"); \
    ND_U35S(nm, double, (double x), (x))
#define ND_DECL1F35(nm) \
    ND_VM __attribute__((const, nothrow)) float nd_##nm##f(float) __asm__(#nm "f_u35"); \
    ND_U35S(nm##f, float, (float x), (x))
#define ND_DECL2D35(nm) \
    ND_VM __attribute__((const, nothrow)) double nd_##nm(double, double) __asm__(#nm "_u35"); \
    ND_U35S(nm, double, (double x, double y), (x, y))
#define ND_DECL2F35(nm) \
    ND_VM __attribute__((const, nothrow)) float nd_##nm##f(float, float) __asm__(#nm "f_u35"); \
    ND_U35S(nm##f, float, (float x, float y), (x, y))
/* the raw SLEEF function nd_v_<nm>, wrapped below where its range is
 * narrower than libm's */
#define ND_DECL1RD(nm) \
    ND_VM __attribute__((const, nothrow)) double nd_v_##nm(double) __asm__(#nm);
#define ND_DECL1RD35(nm) \
    ND_VM __attribute__((const, nothrow)) double nd_v_##nm(double) __asm__(#nm "_u35"); \
    ND_U35S(nm, double, (double x), (x))
#define ND_DECL1RF(nm) \
    ND_VM __attribute__((const, nothrow)) float nd_v_##nm##f(float) __asm__(#nm "f");
#define ND_DECL1RF35(nm) \
    ND_VM __attribute__((const, nothrow)) float nd_v_##nm##f(float) __asm__(#nm "f_u35"); \
    ND_U35S(nm##f, float, (float x), (x))
/* the raw SLEEF functions of two operands (NaN passed by below) */
#define ND_DECL2RD(nm) \
    ND_VM __attribute__((const, nothrow)) double nd_v_##nm(double, double) __asm__(#nm);
#define ND_DECL2RF(nm) \
    ND_VM __attribute__((const, nothrow)) float nd_v_##nm##f(float, float) __asm__(#nm "f");
#define ND_DECL2RF35(nm) \
    ND_VM __attribute__((const, nothrow)) float nd_v_##nm##f(float, float) __asm__(#nm "f_u35"); \
    ND_U35S(nm##f, float, (float x, float y), (x, y))
ND_DECL2RD(pow) ND_DECL2RF(pow)
#if !ND_ZV
/* SLEEF's float32 exp2 raises "invalid" (its exponent's conversion)
 * below -256, where the result is 0 and NumPy raises no such flag: the
 * flag had NumPy rerun every such graph. Clamped (NaN passes). */
ND_DECL1RF35(exp2)
ND_INLINE float nd_exp2f(float x) { return nd_v_exp2f(x < -160.0f ? -160.0f : x); }
ND_DECL1D(exp2)
#endif
/* float64 log, log2, log10: nd_vm64.h */
ND_DECL1RD(log)
/* float32 log: SLEEF's vector logf (both accuracies; seen with AVX2)
 * raises "overflow" for operands above ~2^64 and "invalid" for a NaN,
 * which NumPy's loops do not: the flag had NumPy rerun the graph (a
 * float32 log1p or log of values over 1e20, or of data with NaNs). Those
 * operands are scaled by 2^-64 first and 64 ln 2 added back (its float is
 * within 0.03 ULP of the sum's magnitude); a NaN is returned as it is. */
ND_VM __attribute__((const, nothrow)) float nd_v35r_logf(float) __asm__("logf_u35");
ND_U35S(logf, float, (float x), (x))
ND_VM __attribute__((const, nothrow)) float nd_v10r_logf(float) __asm__("logf");
#define ND_LOGF_SCALED(NAME, RAW) \
ND_INLINE float NAME(float x) \
{ \
    /* by the bits: GCC's vector isgreater is a signaling compare */ \
    uint32_t xb; \
    memcpy(&xb, &x, sizeof xb); \
    int big = (int32_t)xb > 0x5e800000, nan = __builtin_isunordered(x, x); \
    /* -inf <= x < 0: SLEEF's NaN there raises "invalid" for some operands \
     * only (-3.5 none, -2 one); NumPy's for each: inf * 0 in those lanes */ \
    int neg = xb - 0x80000001u < 0xff800000u - 0x80000000u; \
    float r = RAW(nd_bsel_f(nan, 1.0f, x * nd_bsel_f(big, 0x1p-64f, 1.0f))); \
    r = nd_bsel_f(neg, nd_bsel_f(neg, (float)INFINITY, 0.0f) * 0.0f, r); \
    return nd_bsel_f(nan, x, r + nd_bsel_f(big, 44.3614196f, 0.0f)); \
}
/* sin, cos (and float32 tan, arcsin, arccos): SLEEF's, a NaN passed by
 * (ND_PASSED below) */
ND_DECL1RD(sin) ND_DECL1RF35(sin)
ND_DECL1RD(cos) ND_DECL1RF35(cos) ND_DECL1RF35(tan) ND_DECL1RF35(asin) ND_DECL1RF35(acos)
/* float64 tan, arcsin, arccos: SLEEF's 3.5-ULP forms with AVX-512 (NumPy's
 * SVML loops there run 1.2-1.4x slower than those, 1.5x faster than the
 * 1-ULP ones); elsewhere its 1-ULP forms (within 1 ULP, 2.7 for the 3.5-ULP
 * tan; NumPy's loops without AVX-512 are glibc's scalar functions, 3-6x
 * slower: bench/bench_vmath.py --avx2) */
#if ND_ZV
ND_DECL1RD35(tan) ND_DECL1D35(asin) ND_DECL1D35(acos)
#else
ND_DECL1RD(tan) ND_DECL1RD(asin) ND_DECL1RD(acos)
#endif
ND_DECL1F35(atan)
#if ND_ZV
ND_DECL1D35(atan)   /* elsewhere float64: nd_vm64_trig.h */
#endif
ND_DECL2RF35(atan2)   /* float64: nd_vm64_trig.h */
ND_DECL2RD(hypot) ND_DECL2RF35(hypot)
/* float32 log2, log10: nd_vm32.h */

/* --------------------------------------------------- float helpers */
#define ND_LOGE2 0.693147180559945309417232121458176568
#define ND_LOG2E 1.442695040888963407359924681001892137

#define ND_FLOAT_HELPERS(T, S, FLOOR, FMOD, COPYSIGN, LOG1P, EXP, EXP2, NEXTAFTER) \
ND_INLINE T nd_divmod_##S(T a, T b, T *modp) \
{ \
    T mod = FMOD(a, b), div, fdiv; \
    if (!b) { *modp = mod; return a / b; } \
    div = (a - mod) / b; \
    /* NaN (then mod is NaN too) by itself: the compares below would raise \
     * "invalid" for it, NumPy's npy_divmod (isless/isgreater) does not */ \
    if (div != div) { *modp = mod; return div; } \
    if (mod) { if ((b < 0) != (mod < 0)) { mod += b; div -= (T)1; } } \
    else mod = COPYSIGN((T)0, b); \
    if (div) { fdiv = FLOOR(div); if (div - fdiv > (T)0.5) fdiv += (T)1; } \
    else fdiv = COPYSIGN((T)0, a / b); \
    *modp = mod; \
    return fdiv; \
} \
ND_INLINE T nd_floordiv_##S(T a, T b) \
{ T m; if (!b) return a / b; return nd_divmod_##S(a, b, &m); } \
ND_INLINE T nd_remainder_##S(T a, T b) \
{ T m; if (!b) return FMOD(a, b); nd_divmod_##S(a, b, &m); return m; } \
ND_INLINE T nd_max_##S(T a, T b) { return (a >= b || a != a) ? a : b; } \
ND_INLINE T nd_min_##S(T a, T b) { return (a <= b || a != a) ? a : b; } \
ND_INLINE T nd_fmax_##S(T a, T b) { return (a >= b || b != b) ? a : b; } \
ND_INLINE T nd_fmin_##S(T a, T b) { return (a <= b || b != b) ? a : b; } \
ND_INLINE T nd_sign_##S(T a) { return a > 0 ? (T)1 : a < 0 ? (T)-1 : a == 0 ? (T)0 : a; } \
ND_INLINE T nd_heaviside_##S(T a, T h) \
{ return a < 0 ? (T)0 : a > 0 ? (T)1 : a == 0 ? h : a; } \
ND_INLINE T nd_spacing_##S(T x) \
{ \
    if (isinf(x)) return (T)NAN; \
    return NEXTAFTER(x, COPYSIGN((T)INFINITY, x)) - x; \
}
/* SLEEF's vector functions raise no status flags where NumPy reports one:
 * the flag comes from the operand (and result), with quiet comparisons only,
 * as little per element as each case allows (one compare). nd_ckat:
 * "divide by zero" at the pole (log of 0, log1p of -1); nd_ckgt: "overflow"
 * for an operand past (a little below) the largest that does not overflow
 * for a finite operand past (a little below) the largest that does not
 * overflow (exp, sinh of |x|). An infinite one gives inf exactly and no
 * flag in NumPy (np.exp(np.inf)), and the functions below reach it without
 * one (exp's last factor is inf from its bits, expm1's, sinh's and cosh's
 * an inf chosen for it); flagged, NumPy reran the graph (runtime_native.c),
 * right but slow, for any array holding an inf. lim < x < inf as one
 * unsigned compare of the bits (x - lim - 1 ulp below inf - lim - 1 ulp;
 * a negative x or a NaN is above): no more than the one compare before.
 * nd_ckinf: "invalid" for an infinite operand (sin, cos, tan). */
#define ND_LIM_EXP_d 709.78
#define ND_LIM_EXP_f 88.72f
#define ND_LIM_EXP2_d 1023.99
#define ND_LIM_EXP2_f 127.99f
#define ND_LIM_SINH_d 710.47
#define ND_LIM_SINH_f 89.41f
#define ND_FPCHK(T, S, U) \
ND_INLINE T nd_ckat_##S(T x, T r, T at, int *e) \
{ \
    *e |= (x == at) * ND_ERR_FPE_DIV; \
    return r; \
} \
ND_INLINE T nd_ckgt_##S(T x, T r, T lim, int *e) \
{ \
    U xb, lb, ib; \
    T inf = (T)INFINITY; \
    memcpy(&xb, &x, sizeof xb); \
    memcpy(&lb, &lim, sizeof lb); \
    memcpy(&ib, &inf, sizeof ib); \
    *e |= ((U)(xb - lb - 1) < (U)(ib - lb - 1)) * ND_ERR_FPE_OVER; \
    return r; \
} \
ND_INLINE T nd_ckinf_##S(T x, T r, int *e) \
{ \
    *e |= (__builtin_fabs(x) == (T)INFINITY) * ND_ERR_FPE_INVALID; \
    return r; \
} \
/* x / y: the compiler may compute a division only where a select keeps it \
 * (np.where(y != 0, x / y, 0)), and NumPy, which divides every lane, flags \
 * the others. A zero divisor is reported as both "divide" and "invalid" \
 * (x / 0 or 0 / 0): unless errstate ignores both, NumPy runs the graph \
 * and says exactly which. One compare a lane keeps the loop vectorized. */ \
ND_INLINE T nd_ckdiv_##S(T x, T y, int *e) \
{ \
    *e |= (y == 0) * (ND_ERR_FPE_DIV | ND_ERR_FPE_INVALID); \
    return x / y; \
} \
/* +-inf by the bits: isinf, and fabs(x) == inf, which GCC turns into an \
 * ordered compare, raise "invalid" for a NaN (signaling when vectorized) */ \
ND_INLINE int nd_ckisinf_##S(T x) \
{ \
    U xb, ib; \
    T inf = (T)INFINITY; \
    memcpy(&xb, &x, sizeof xb); \
    memcpy(&ib, &inf, sizeof ib); \
    return (U)(xb << 1) == (U)(ib << 1); \
} \
/* a < b and a <= b raising no flag for a NaN operand (NumPy's loops \
 * raise none): GCC vectorizes C's < (and __builtin_isless) as a \
 * signaling compare, whose "invalid" on a NaN lane had NumPy rerun the \
 * whole graph wherever the kernel's flags are read. A NaN operand's lane \
 * compares 0 with 0 (its bits masked by quiet == tests) and is then \
 * false: two quiet compares and three ands a vector more, no branch. */ \
ND_INLINE int nd_qmask_##S(T *a, T *b) \
{ \
    int ok = (*a == *a) & (*b == *b); \
    U x, y, m = (U)0 - (U)ok; \
    memcpy(&x, a, sizeof x); memcpy(&y, b, sizeof y); \
    x &= m; y &= m; \
    memcpy(a, &x, sizeof x); memcpy(b, &y, sizeof y); \
    return ok; \
} \
ND_INLINE int nd_qlt_##S(T a, T b) { int ok = nd_qmask_##S(&a, &b); return ok & (a < b); } \
ND_INLINE int nd_qle_##S(T a, T b) { int ok = nd_qmask_##S(&a, &b); return ok & (a <= b); } \
ND_INLINE T nd_ckpow_##S(T x, T y, T r, int *e) \
{ \
    int ri = nd_ckisinf_##S(r), xi = nd_ckisinf_##S(x), yi = nd_ckisinf_##S(y); \
    *e |= (r != r && x == x && y == y ? ND_ERR_FPE_INVALID : 0) | \
          (ri && !xi && !yi ? (x == 0 ? ND_ERR_FPE_DIV : ND_ERR_FPE_OVER) : 0); \
    return r; \
}
ND_FPCHK(double, d, uint64_t)
ND_FPCHK(float, f, uint32_t)
ND_FLOAT_HELPERS(double, d, floor, fmod, copysign, log1p, exp, exp2, nextafter)
ND_FLOAT_HELPERS(float, f, floorf, fmodf, copysignf, log1pf, expf, exp2f, nextafterf)
/* c ? a : b by bits: GCC would sink a call feeding one arm of ?: into that
 * arm, where it cannot call the vector variant (see nd_sel_d below) */
#define ND_BSEL(T, S, U) \
ND_INLINE T nd_bsel_##S(int c, T a, T b) \
{ \
    U x, y, m = (U)0 - (U)(c != 0); \
    memcpy(&x, &a, sizeof x); \
    memcpy(&y, &b, sizeof y); \
    x = (x & m) | (y & ~m); \
    memcpy(&a, &x, sizeof a); \
    return a; \
}
ND_BSEL(double, d, uint64_t)
ND_BSEL(float, f, uint32_t)
/* np.where of real floats: both arms computed on every lane, as NumPy
 * does (a flag an arm raises where the select drops it is NumPy's too) */
#define nd_wsel_d nd_bsel_d
#define nd_wsel_f nd_bsel_f
ND_LOGF_SCALED(nd_logf, nd_v35r_logf)
ND_LOGF_SCALED(nd_v_logf, nd_v10r_logf)
/* SLEEF's vector sin and cos (float32 tan, asin, acos too) raise
 * "invalid" for a NaN operand (their range reduction's compares), and its
 * float32 tan "divide by zero" for +-0, where NumPy's loops raise nothing:
 * the flag had NumPy rerun every graph taking them of data holding a NaN
 * (or a zero: np.tan(np.linspace(0, 1, n, dtype=np.float32))), counter
 * errstate_reruns. Those lanes (PASS, compared quietly: == and !=)
 * compute on 0.5 and return the operand itself. */
#define ND_PASSED(T, S, NAME, RAW, PASS) \
ND_INLINE T NAME(T x) \
{ \
    int pass = PASS; \
    return nd_bsel_##S(pass, x, RAW(nd_bsel_##S(pass, (T)0.5, x))); \
}
ND_PASSED(double, d, nd_sin, nd_v_sin, x != x)
ND_PASSED(double, d, nd_cos, nd_v_cos, x != x)
ND_PASSED(float, f, nd_sinf, nd_v_sinf, x != x)
ND_PASSED(float, f, nd_cosf, nd_v_cosf, x != x)
ND_PASSED(float, f, nd_tanf, nd_v_tanf, (x != x) | (x == 0))
ND_PASSED(float, f, nd_asinf, nd_v_asinf, x != x)
ND_PASSED(float, f, nd_acosf, nd_v_acosf, x != x)
/* SLEEF's pow, hypot and float32 atan2 raise "invalid" for a NaN operand
 * too: NaN lanes compute on 0.5 and give C99's value (pow(1, NaN) and
 * pow(NaN, 0) are 1, hypot(+-inf, NaN) is inf, otherwise a NaN) */
#define ND_PASSED2(T, S, NAME, RAW, SPECIAL) \
ND_INLINE T NAME(T x, T y) \
{ \
    int pass = (x != x) | (y != y); \
    T r = RAW(nd_bsel_##S(pass, (T)0.5, x), nd_bsel_##S(pass, (T)0.5, y)); \
    return nd_bsel_##S(pass, SPECIAL, r); \
}
#define ND_POW_NAN(T, S) nd_bsel_##S((x == (T)1) | (y == (T)0), (T)1, x + y)
#define ND_HYPOT_NAN(T, S) \
    nd_bsel_##S((__builtin_fabs(x) == (T)INFINITY) | (__builtin_fabs(y) == (T)INFINITY), (T)INFINITY, x + y)
ND_PASSED2(double, d, nd_pow, nd_v_pow, ND_POW_NAN(double, d))
ND_PASSED2(float, f, nd_powf, nd_v_powf, ND_POW_NAN(float, f))
/* NumPy's power loop given one exponent for the whole loop, known only at
 * run time (a 0-d operand: codegen_expr.c power_class): 2, -1 and 0.5 are
 * x * x, 1 / x and sqrt(x), as NumPy's loop computes them; the test is
 * loop-invariant (the compiler unswitches it) */
#define ND_POWSC(T, S, M) \
ND_INLINE T nd_powsc_##S(T x, T y, int *e) \
{ \
    if (y == (T)2) return x * x; \
    if (y == (T)-1) return (T)1 / x; \
    if (y == (T)0.5) return __builtin_sqrt##M(x); \
    return nd_ckpow_##S(x, y, nd_pow##M(x, y), e); \
}
ND_POWSC(double, d, )
ND_POWSC(float, f, f)
ND_PASSED2(double, d, nd_hypot, nd_v_hypot, ND_HYPOT_NAN(double, d))
ND_PASSED2(float, f, nd_hypotf, nd_v_hypotf, ND_HYPOT_NAN(float, f))
ND_PASSED2(float, f, nd_atan2f, nd_v_atan2f, x + y)
/* c ? a : b as one blend (nd_bsel's and/andnot/or are three instructions
 * a vector), for arms GCC computes anyway: no call, division or square
 * root feeding one arm only (GCC does not speculate those, the loop would
 * stay scalar). GCC if-converts the arms' arithmetic into masked
 * instructions: AVX-512 only. Without its mask registers (AVX2) the ?:
 * stays control flow and the loop scalar (10x): nd_bsel's form there. */
#if defined(__AVX512F__)
#define ND_TSEL_MASKED 1
#else
#define ND_TSEL_MASKED 0
#endif
#define ND_TSEL(T, S, U) \
ND_INLINE T nd_tsel_##S(int c, T a, T b) \
{ \
    if (!ND_TSEL_MASKED) return nd_bsel_##S(c, a, b); \
    U x, y; \
    memcpy(&x, &a, sizeof x); \
    memcpy(&y, &b, sizeof y); \
    x = c ? x : y; \
    memcpy(&a, &x, sizeof a); \
    return a; \
}
ND_TSEL(double, d, uint64_t)
ND_TSEL(float, f, uint32_t)
#define ND_VM64_PART 1
#include "nd_vm64.h"
#undef ND_VM64_PART
/* log's 16-entry table (numdyn's own log forms: nd_zv_log_core below, nd_vm64.h):
 * 1/c and log c, c the centre of m's 1/16 bucket (described at nd_zv_log_core) */
static const double __attribute__((aligned(64))) ND_ZV_LOG_INVC[16] = {0x1.0000000000000p+0, 0x1.e1e2d9fe00000p-1, 0x1.c713b82800000p-1, 0x1.af1f836c00000p-1, 0x1.9995dcd400000p-1, 0x1.86187d7000000p-1, 0x1.745d2efe00000p-1, 0x1.6429291200000p-1, 0x1.58e1128e00000p-1, 0x1.4e642acb00000p+0, 0x1.413b992300000p+0, 0x1.3520851700000p+0, 0x1.29e82a3b00000p+0, 0x1.1f6f51d500000p+0, 0x1.15ac7a9600000p+0, 0x1.0c9313e900000p+0};
static const double __attribute__((aligned(64))) ND_ZV_LOG_LOGC[16] = {0x0.0p+0, 0x1.f092922754000p-5, 0x1.e2befe3b64000p-4, 0x1.601d57395f000p-3, 0x1.c9122c6b7d000p-3, 0x1.16758174bd000p-2, 0x1.46187ae748000p-2, 0x1.73a72963a9800p-2, 0x1.949d134cde800p-2, -0x1.118bab042e800p-2, -0x1.d0df6f142e000p-3, -0x1.82338808e7000p-3, -0x1.367bed2581000p-3, -0x1.da64c44da8000p-4, -0x1.4ce1252ed6000p-4, -0x1.88d07fa36c000p-5};
/* (log1p(r) - r) / r^2 for |r| < 1/31 (r2 = r^2): P of degree 8
 * near-minimax (Chebyshev fit, 1.4e-17 in P: 2^-61 of log1p(r); Taylor's
 * to r^11 was one fma more), by Estrin's scheme */
#define ND_LOG_P_C0 -0x1.0000000000000p-1
#define ND_LOG_P_C1 0x1.5555555555512p-2
#define ND_LOG_P_C2 -0x1.fffffffffff84p-3
#define ND_LOG_P_C3 0x1.9999999b40c18p-3
#define ND_LOG_P_C4 -0x1.55555556d93c6p-3
#define ND_LOG_P_C5 0x1.249232cf09fd8p-3
#define ND_LOG_P_C6 -0x1.ffffd70d9ee96p-4
#define ND_LOG_P_C7 0x1.c7fbecdd086f6p-4
#define ND_LOG_P_C8 -0x1.9a6675fecc474p-4
#define ND_LOG_P(V, C1, FMA, r, r2) \
    FMA(FMA(C1(ND_LOG_P_C8), (r2) * (r2), FMA(FMA((r), C1(ND_LOG_P_C7), C1(ND_LOG_P_C6)), (r2), \
                                               FMA((r), C1(ND_LOG_P_C5), C1(ND_LOG_P_C4)))), \
        (r2) * (r2), FMA(FMA((r), C1(ND_LOG_P_C3), C1(ND_LOG_P_C2)), (r2), FMA((r), C1(ND_LOG_P_C1), C1(ND_LOG_P_C0))))
/* ------------------------- numdyn's own AVX-512 vector math (vector ABI) */
/* Where GCC cannot emit what a fast vector form needs from plain C --
 * vgetmant/vgetexp (the mantissa and exponent of a double, subnormals
 * included), vpermt2pd (a 16-entry table held in two registers),
 * vfpclass -- the function is written with AVX-512 builtins, 8 lanes,
 * and declared `simd` under its own name: GCC's vectorized loops call its
 * vector-ABI variant (_ZGVeN8v_<name>: one call a vector, as SLEEF's),
 * a scalar loop its scalar symbol (the same code on a broadcast operand).
 * Only where the target has AVX-512F and DQ (detected: -march=native's
 * macros); elsewhere the plain C forms below. The variants are static,
 * bound to the symbols by asm labels (the vectorizer's call binds to the
 * unit's own definition, no symbol leaves the unit), and compiled only in
 * a unit whose code calls them (ND_ZV_KEEP). */
#if ND_ZV
/* GCC's builtins under the intrinsics, not <immintrin.h>: that header
 * made the precompiled one 3.6x larger (7.7 -> 27.8 MB), 0.1 s more to
 * load in every unit */
typedef double nd_v8d __attribute__((vector_size(64)));
typedef double nd_v4d __attribute__((vector_size(32)));
typedef double nd_v2d __attribute__((vector_size(16)));
typedef long long nd_v8i __attribute__((vector_size(64)));
typedef unsigned long long nd_v8u __attribute__((vector_size(64)));
typedef unsigned char nd_m8;
#define ND_ZV_CUR 4 /* _MM_FROUND_CUR_DIRECTION */
#define ND_Z1(c) ((nd_v8d){c, c, c, c, c, c, c, c})
#define ND_ZFMA(a, b, c) __builtin_ia32_vfmaddpd512_mask(a, b, c, (nd_m8)-1, ND_ZV_CUR)
#define ND_ZFNMA(a, b, c) __builtin_ia32_vfnmaddpd512_mask(a, b, c, (nd_m8)-1, ND_ZV_CUR)
/* quiet compares: _CMP_EQ_OQ 0, _CMP_LT_OQ 0x11, _CMP_LE_OQ 0x12 */
#define ND_ZCMP(a, b, p) ((nd_m8)__builtin_ia32_cmppd512_mask(a, b, p, (nd_m8)-1, ND_ZV_CUR))
#define ND_ZSEL(m, a, b) __builtin_ia32_blendmpd_512_mask(b, a, m) /* m ? a : b */
#define ND_ZTABLE(t, j) __builtin_ia32_vpermt2varpd512_mask(j, *(const nd_v8d *)(t), *(const nd_v8d *)((t) + 8), (nd_m8)-1)
#define ND_ZV_DEF __attribute__((noinline, const, nothrow))
#define ND_ZGETMANT(a, imm) __builtin_ia32_getmantpd512_mask(a, imm, a, (nd_m8)-1, ND_ZV_CUR)
#define ND_ZGETEXP(a) __builtin_ia32_getexppd512_mask(a, a, (nd_m8)-1, ND_ZV_CUR)
#define ND_ZRND(a, imm) __builtin_ia32_rndscalepd_mask(a, imm, a, (nd_m8)-1, ND_ZV_CUR)
#define ND_ZSCALEF(a, b) __builtin_ia32_scalefpd512_mask(a, b, a, (nd_m8)-1, ND_ZV_CUR)
#define ND_ZRCP(a) __builtin_ia32_rcp14pd512_mask(a, a, (nd_m8)-1)
#define ND_ZMAX(a, b) __builtin_ia32_maxpd512_mask(a, b, a, (nd_m8)-1, ND_ZV_CUR)
#define ND_ZMIN(a, b) __builtin_ia32_minpd512_mask(a, b, a, (nd_m8)-1, ND_ZV_CUR)
#define ND_ZRSQRT(a) __builtin_ia32_rsqrt14pd512_mask(a, a, (nd_m8)-1)
#define ND_ZMULM(a, b, src, m) __builtin_ia32_mulpd512_mask(a, b, src, m, ND_ZV_CUR)   /* m ? a * b : src */
#define ND_ZDIVM(a, b, src, m) __builtin_ia32_divpd512_mask(a, b, src, m, ND_ZV_CUR)
#define ND_ZFPCLASS(a, imm) ((nd_m8)__builtin_ia32_fpclasspd512_mask(a, imm, (nd_m8)-1))
/* log(u) for u = 2^k m, m in [0.75, 1.5) (vgetmant, vgetexp: subnormals
 * too); the table's 1/c (c the centre of m's 1/16 bucket, 1 for the one
 * around 1; bucket by m + 1/32's top 4 bits) chosen so that -log(1/c) lies
 * within 2^-62 of a multiple of 2^-43: k ln2hi + log c is then exact in
 * one fma (ln2hi has 42 bits, k <= 1075). r + pl = m/c - 1 exactly, |r| <
 * 1/31; log1p(r + pl) = r + (pl (1 - r) + r^2 P(r)) (nd_zv_log_p), the sum
 * in double-double to the last addition (nd_vm64.h's ND_VM_LOG_FINISH).
 * COR: log(u + cor) instead, cor the rounding error of u (log1p's u = 1 +
 * x): cor/u = cor 2^-k (1/c) (1 - r) (2^-63 relative) joins r + pl
 * (WITHCOR 2: log1p); WITHCOR 1 (the inverse hyperbolics) keeps the
 * cheaper form of before (r rounded, w + (r + lo)). log1p and
 * log within 0.54 ULP of the exact value (tests/test_vmath_f64_accuracy.py;
 * until session 24 w + (r + lo) and r rounded: 1 ULP of NumPy's). */
ND_INLINE nd_v8d nd_zv_log_p(nd_v8d r, nd_v8d r2) { return ND_LOG_P(nd_v8d, ND_Z1, ND_ZFMA, r, r2); }
/* u = 2^k m: *kd = k, *j m's bucket, r + *pl = m/c - 1 exactly (m (1/c) =
 * ph + pl by fma, r = ph - 1 exact), *invc = 1/c */
ND_INLINE nd_v8d nd_zv_log_red(nd_v8d u, nd_v8d *kd, nd_v8i *j, nd_v8d *pl, nd_v8d *invc, nd_v8d *mp)
{
    /* vgetmant's [0.75, 1.5) (3), sign cleared (1 << 2) */
    nd_v8d m = *mp = ND_ZGETMANT(u, 7);
    nd_v8d e = ND_ZGETEXP(u);
    *kd = __builtin_ia32_addpd512_mask(e, ND_Z1(1.0), e, ND_ZCMP(m, ND_Z1(1.0), 0x11), ND_ZV_CUR);
    nd_v8d mj = m + ND_Z1(0x1p-5);
    memcpy(j, &mj, sizeof *j);
    *j = (nd_v8i)((nd_v8u)*j >> 48);
    *invc = ND_ZTABLE(ND_ZV_LOG_INVC, *j);
    nd_v8d ph = m * *invc;
    *pl = ND_ZFMA(m, *invc, -ph);
    return ph - ND_Z1(1.0);
}
#define ND_VM_ZTB(t) ND_ZTABLE(t, j)
ND_INLINE nd_v8d nd_zv_log_core(nd_v8d u, nd_v8d cor, int withcor, nd_m8 twice)
{
    nd_v8d kd, pl, invc, m, res;
    nd_v8i j;
    nd_v8d r = nd_zv_log_red(u, &kd, &j, &pl, &invc, &m), kd2 = kd;
    if (twice)   /* log(2u) in those lanes: k + 1 (the correction's scale stays 2^-k) */
        kd2 = __builtin_ia32_addpd512_mask(kd, ND_Z1(1.0), kd, twice, ND_ZV_CUR);
    if (withcor == 1) {
        /* the inverse hyperbolics: r rounded, w + (r + lo) (1 ULP; their
         * other steps cost more): 10% faster */
        r = ND_ZFMA(m, invc, ND_Z1(-1.0));
        nd_v8d r2 = r * r, d = ND_ZSCALEF(cor * invc, -kd);
        nd_v8d lo = ND_ZFMA(r2, nd_zv_log_p(r, r2), ND_ZFMA(kd2, ND_Z1(ND_VM_LN2_LO), ND_ZFNMA(d, r, d)));
        return ND_ZFMA(kd2, ND_Z1(ND_VM_LN2_HI), ND_ZTABLE(ND_ZV_LOG_LOGC, j)) + (r + lo);
    }
    nd_v8d r2 = r * r, p = nd_zv_log_p(r, r2), lm = ND_VM_LM(ND_ZFMA, r, pl, r2, p);
    if (withcor == 2) {
        /* log1p: into r by Fast2Sum, r + pl' = r + pl + d exactly, pl'
         * below r's last bit (pl's ulp at log1p(-1.8e-16) was a quarter of
         * the result's: 0.66 ULP); P and (1 - r) on the old r, off d's path */
        nd_v8d d = ND_ZSCALEF(cor * invc, -kd), r1 = r + d, dl = pl + d;
        /* log1p(r + dl) = log1p(r) + dl - (r + dl/2) dl + ... */
        lm = ND_ZFMA(r2, p, ND_ZFNMA(ND_ZFMA(dl, ND_Z1(0.5), r), dl, ((r - r1) + d) + pl));
        r = r1;
    }
    ND_VM_LOG_FINISH(nd_v8d, ND_Z1, ND_ZFMA, ND_VM_ZTB, 0, kd2, r, lm, res);
    return res;
}
/* log1p: u = 1 + x, its rounding error x - (u - 1) exact below 2^53 (above,
 * its error is under 2^-52 / 36: harmless). The special lanes -- NaN,
 * +-0, +-inf (vfpclass) and x <= -1 -- take a second pass, rarely: x
 * itself (NaN, +-0, +inf), -inf at -1 ("divide" comes from the operand,
 * nd_ckat), NaN with "invalid" (inf * 0) below it. */
ND_INLINE nd_v8d nd_zv_log1p8(nd_v8d x)
{
    /* vfpclass 0x9f: NaN, +-0, +-inf */
    nd_m8 bad = (nd_m8)__builtin_ia32_fpclasspd512_mask(x, 0x9f, (nd_m8)-1) | ND_ZCMP(x, ND_Z1(-1.0), 0x12);
    /* u and c from x made 0 in the special lanes (at inf, u - 1 - x
     * raised "invalid" and had NumPy rerun the graph) */
    nd_v8d xs = __builtin_expect(bad == 0, 1) ? x : ND_ZSEL(bad, ND_Z1(0.0), x);
    nd_v8d u = ND_Z1(1.0) + xs;
    nd_v8d c = xs - (u - ND_Z1(1.0));
    nd_v8d res = nd_zv_log_core(u, c, 2, 0);
    if (__builtin_expect(bad == 0, 1))
        return res;
    nd_m8 pole = ND_ZCMP(x, ND_Z1(-1.0), 0), neg = ND_ZCMP(x, ND_Z1(-1.0), 0x11);
    res = ND_ZSEL(pole, ND_Z1(-INFINITY), res);
    res = __builtin_ia32_mulpd512_mask(ND_Z1(INFINITY), ND_Z1(0.0), res, neg, ND_ZV_CUR);
    return ND_ZSEL((nd_m8)(bad & ~(pole | neg)), x, res);
}
/* exp2: x = n/16 + f, n = round(16 x) from 16 x + 1.5 2^52 (its low 4
 * bits index 2^(j/16) in a hi + lo table by vpermt2pd), r = f ln2 (|r| <=
 * ln2/32: its rounding error is 2^-58 of the result): e^r - 1 as r + r^2
 * P(r), P of degree 4 near-minimax (Chebyshev fit, 2^-55 relative; Taylor's
 * to r^7 was one fma more), by Estrin's scheme, result 2^(j/16) (1 + p) scaled by
 * vscalef by 2^floor(n/16) (overflow to inf with its flag, a subnormal
 * result underflowing there, rounded twice: within 1 ULP). A vector
 * holding an |x| >= 1022 has its operands clamped first, by quiet compares
 * (vmaxpd would flag "invalid" for a NaN lane, which passes through the
 * arithmetic quietly). Within 1 ULP of NumPy's. */
static const double __attribute__((aligned(64))) ND_ZV_EXP_T[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};
static const double __attribute__((aligned(64))) ND_ZV_EXP_TL[16] = {
    0x0.0p+0, 0x1.8a62e4adc610bp-54, -0x1.19041b9d78a76p-55, 0x1.9b07eb6c70573p-54,
    0x1.6f46ad23182e4p-55, 0x1.ada0911f09ebcp-55, 0x1.d4397afec42e2p-56, 0x1.6324c054647adp-54,
    -0x1.bdd3413b26456p-54, -0x1.41577ee04992fp-55, 0x1.6e9f156864b27p-54, 0x1.c7c46b071f2bep-56,
    0x1.7a1cd345dcc81p-54, 0x1.11065895048ddp-55, 0x1.2ed02d75b3707p-55, -0x1.e9c23179c2893p-54};
/* exp2's form for P = Z (float64, 8 lanes) and Y (float32, 16): PFX##_exp_tail
 * = 2^(n/16) e^r, n from kb = 16 x + MAGIC's bits (MAGIC = 1.5 2^digits),
 * POLY(r) = e^r - 1; PFX##_exp_clamp: the operands of a vector holding an
 * |x| >= BIG clamped to [LO, HI] by quiet compares, +-inf to 0 (*pinf: their
 * lanes, made *sv at the end: inf, or 0 for -inf -- clamped to LO, -inf's
 * lanes computed a subnormal by vscalef, ~20 ns an element: exp over
 * masked scores, -inf where masked, ran 8x slower) */
#define ND_ZV_EXP2_DEF(P, V, VI, VU, M, PFX, TB, MAGIC, POLY, NANMASK, BIG, LO, HI) \
ND_INLINE V PFX##_exp_tail(V kb, V r) \
{ \
    VI j; \
    memcpy(&j, &kb, sizeof j); \
    V nd = kb - ND_##P##1(MAGIC); \
    V pe = POLY(r); \
    V t = ND_##P##TABLE(TB##_T, j), tl = ND_##P##TABLE(TB##_TL, j); \
    V v = t + ND_##P##FMA(t, pe, tl); \
    return ND_##P##SCALEF(v, nd * ND_##P##1(0.0625)); \
} \
ND_INLINE V PFX##_exp_clamp(V x, M *pinf, V *sv, double big, double lo, double hi) \
{ \
    VU ax = (VU)x & (VU)ND_##P##1(__builtin_nan(NANMASK)); \
    *pinf = 0; \
    if (__builtin_expect(ND_##P##CMP((V)ax, ND_##P##1(big), 0x1d) != 0, 0)) {   /* |x| >= big (_CMP_GE_OQ) */ \
        /* +-inf go in as 0 and come out inf or 0: vscalef of HI would \
         * raise "overflow", NumPy raises nothing for them */ \
        *pinf = ND_##P##CMP((V)ax, ND_##P##1(__builtin_inf()), 0x0);   /* _CMP_EQ_OQ */ \
        *sv = ND_##P##SEL(ND_##P##CMP(x, ND_##P##1(0.0), 0x1e), ND_##P##1(__builtin_inf()), \
                          ND_##P##1(0.0)); \
        x = ND_##P##SEL(*pinf, ND_##P##1(0.0), x); \
        x = ND_##P##SEL(ND_##P##CMP(x, ND_##P##1(lo), 0x11), ND_##P##1(lo), x); \
        x = ND_##P##SEL(ND_##P##CMP(x, ND_##P##1(hi), 0x1e), ND_##P##1(hi), x); \
    } \
    return x; \
} \
ND_INLINE V PFX##_exp2v(V x) \
{ \
    M pinf; \
    V sv = ND_##P##1(0.0); \
    x = PFX##_exp_clamp(x, &pinf, &sv, BIG, LO, HI); \
    V kb = ND_##P##FMA(x, ND_##P##1(16.0), ND_##P##1(MAGIC)); \
    V f = ND_##P##FNMA(kb - ND_##P##1(MAGIC), ND_##P##1(0.0625), x);   /* exact */ \
    /* r = f ln2 (|r| <= ln2/32: its rounding error is 2^-(digits+5) of the result) */ \
    V y = PFX##_exp_tail(kb, f * ND_##P##1(0x1.62e42fefa39efp-1)); \
    return __builtin_expect(pinf != 0, 0) ? ND_##P##SEL(pinf, sv, y) : y; \
}
/* e^r - 1, |r| <= ln2/32: r + r^2 P(r), P of degree 4 near-minimax
 * (Chebyshev fit, 2^-55 relative; Taylor's to r^7 was one fma more), by
 * Estrin's scheme */
ND_INLINE nd_v8d nd_zv_em1_t(nd_v8d r)
{
    nd_v8d r2 = r * r;
    nd_v8d q0 = ND_ZFMA(r, ND_Z1(0x1.55555554dd44dp-3), ND_Z1(0.5));
    nd_v8d q1 = ND_ZFMA(r, ND_Z1(0x1.11120af701e68p-7), ND_Z1(0x1.55555555194d2p-5));
    nd_v8d p = ND_ZFMA(ND_ZFMA(ND_Z1(0x1.6c17bb51f23eap-10), r2, q1), r2, q0);
    return ND_ZFMA(p, r2, r);
}
ND_ZV_EXP2_DEF(Z, nd_v8d, nd_v8i, nd_v8u, nd_m8, nd_zv, ND_ZV_EXP, 0x1.8p52, nd_zv_em1_t, "0x7ffffffffffff", 1022.0,
               -1080.0, 1025.0)
/* exp: x = n ln2/16 + r, n = round(16 x / ln2) from the bits of 16 x /
 * ln2 + 1.5 2^52, r by ln2/16's high part (21 bits: n ln2hi/16 and x -
 * that are exact for |n| < 2^32) and low part; then exp2's tail. Its
 * clamp in a vector holding an |x| >= 708 only (the rest of the range has
 * 2^(n/16) and its scaling exact): +inf comes out inf with no flag (NumPy
 * raises none), a finite x past 709.78 inf and "overflow" (vscalef), below
 * -745.2 0, NaN itself. Within 1 ULP of NumPy's. The inline C form
 * (nd_exp_d, still AVX2's) is ~29 instructions a vector: 0.8x NumPy's
 * AVX-512 loop. */
ND_INLINE nd_v8d nd_zv_exp8(nd_v8d x)
{
    nd_m8 pinf;
    nd_v8d sv = ND_Z1(0.0);
    x = nd_zv_exp_clamp(x, &pinf, &sv, 708.0, -746.0, 710.0);
    nd_v8d kb = ND_ZFMA(x, ND_Z1(0x1.71547652b82fep+4), ND_Z1(0x1.8p52));
    nd_v8d kd = kb - ND_Z1(0x1.8p52);
    nd_v8d r = ND_ZFNMA(kd, ND_Z1(0x1.62e42p-5), x);
    r = ND_ZFNMA(kd, ND_Z1(0x1.fdf473de6af28p-26), r);
    nd_v8d y = nd_zv_exp_tail(kb, r);
    return __builtin_expect(pinf != 0, 0) ? ND_ZSEL(pinf, sv, y) : y;
}
/* arctanh: |x| = a < 1, atanh a = log(q) / 2, q = (1 + a) / (1 - a) with
 * no division (vdivpd zmm alone cost 0.7 ns an element, a third of the
 * old loop): n = 1 + a and v = 1 - a with their rounding errors (exact,
 * Fast2Sum), 1/v by vrcp14pd and Newton steps (NEWTON: two for float64,
 * one for float32), q = n / v to a few ULP, and the rest of the quotient,
 * (n - q v + nlo - q vlo) / v (the first term exact by fma), carried into
 * the log core as its correction. Tiny and subnormal a come out as 2a / 2
 * = a exactly (q = 1, the correction 2a). The lanes with a >= 1 or NaN
 * take a second pass: +-inf with "divide" at +-1, NaN with "invalid"
 * beyond (masked operations: no other lane raises), NaN itself. Within 1
 * ULP of NumPy's.
 * sqrt(h + l), h >= 0 normal or 0, |l| <= 2^-52 h: s + *sl within 2^-80
 * of it, no vsqrtpd (alone 1.07 ns an element): 1/sqrt(h) by vrsqrt14pd
 * and one Newton step (2^-28), s = h y corrected once by Heron's step from
 * the residual h - s0^2 (fma), and the low part from the exact residual
 * of s: (h - s^2 + l) y / 2. FLOOR (> 0) stands in for h in y where h may
 * be 0 (s = 0 there).
 * arcsinh: a = |x| = log(a + sqrt(1 + a^2)), 1 + a^2 = h + l exact
 * (Fast2Sum of 1 and a^2 in either order: max and min of them, then
 * a^2's error by fma), the sum and its rounding error into the log core
 * as its correction: no division, no vsqrtpd (the C form over log1p had
 * both: 3.0 ns against NumPy's 2.4). Below TINY x itself (selected: a^2
 * would underflow); above BIG, NaN and inf in a second pass: log(2a)
 * there (1/(4 a^2) is below its last bit) by the core's exponent + 1.
 * arccosh: x >= 1 = log(x + sqrt(x^2 - 1)), x^2 - 1 = h + l exact
 * (Fast2Sum: x^2 >= 1), as arcsinh's. x = 1 gives +0 (h = 0: s = 0).
 * Above BIG, x < 1 and NaN in a second pass: log(2x) there, NaN with
 * "invalid" below 1 (a masked product), NaN itself.
 * P: Z for float64's 8 lanes (PFX nd_zv), Y for float32's 16 (nd_zvf),
 * over PFX##_log_core. */
#define ND_ZV_INVHYP_DEF(P, V, VU, M, PFX, NEWTON, TINY, BIG, FLOOR) \
ND_INLINE V PFX##_atanh_q(V a) \
{ \
    V n = ND_##P##1(1.0) + a, v = ND_##P##1(1.0) - a; \
    V nlo = a - (n - ND_##P##1(1.0)), vlo = (ND_##P##1(1.0) - v) - a; \
    V r = ND_##P##RCP(v); \
    for (int i_ = 0; i_ < NEWTON; i_++) \
        r = ND_##P##FMA(r, ND_##P##FNMA(v, r, ND_##P##1(1.0)), r); \
    V q = n * r; \
    V cor = (ND_##P##FNMA(q, v, n) + ND_##P##FNMA(q, vlo, nlo)) * r; \
    return ND_##P##1(0.5) * PFX##_log_core(q, cor, 1, 0); \
} \
ND_INLINE V PFX##_atanhv(V x) \
{ \
    VU sgn = (VU)x & (VU)ND_##P##1(-0.0); \
    V a = (V)((VU)x ^ sgn); \
    M bad = ND_##P##CMP(a, ND_##P##1(1.0), 0x15);   /* !(a < 1), _CMP_NLT_UQ: NaN too */ \
    if (__builtin_expect(bad == 0, 1)) \
        return (V)((VU)PFX##_atanh_q(a) | sgn); \
    V res = PFX##_atanh_q(ND_##P##SEL(bad, ND_##P##1(0.5), a)); \
    M pole = ND_##P##CMP(a, ND_##P##1(1.0), 0), out = ND_##P##CMP(a, ND_##P##1(1.0), 0x1e);   /* ==, > */ \
    res = ND_##P##DIVM(ND_##P##1(1.0), ND_##P##1(0.0), res, pole); \
    res = ND_##P##MULM(ND_##P##1(INFINITY), ND_##P##1(0.0), res, out); \
    res = (V)((VU)res | sgn); \
    return ND_##P##SEL((M)(bad & ~(pole | out)), x, res); \
} \
ND_INLINE V PFX##_sqrt2(V h, V l, V *sl, double floor) \
{ \
    V hy = floor > 0 ? ND_##P##MAX(h, ND_##P##1(floor)) : h; \
    V y = ND_##P##RSQRT(hy); \
    V yh = y * ND_##P##1(0.5); \
    yh = ND_##P##FMA(yh, ND_##P##FNMA(hy * y, yh, ND_##P##1(0.5)), yh);   /* 1 / (2 sqrt(h)) */ \
    V s0 = ND_##P##1(2.0) * (h * yh); \
    V s = ND_##P##FMA(yh, ND_##P##FNMA(s0, s0, h), s0); \
    *sl = (ND_##P##FNMA(s, s, h) + l) * yh; \
    return s; \
} \
/* log(b + c + cor) (b >= c >= 0: the sum's rounding error by Fast2Sum) */ \
ND_INLINE V PFX##_log_sum(V b, V c, V cor) \
{ \
    V t = b + c; \
    return PFX##_log_core(t, (c - (t - b)) + cor, 1, 0); \
} \
/* the second pass of arcsinh and arccosh over a = |x| (x), res the \
 * first's: log(2a) above BIG (the core's exponent + 1), inf at inf, x \
 * itself for NaN, res elsewhere */ \
ND_INLINE V PFX##_invhyp_big(V x, V a, V res) \
{ \
    M big = ND_##P##CMP(a, ND_##P##1(BIG), 0x1e) & ND_##P##CMP(a, ND_##P##1(INFINITY), 0x0c);   /* >, != */ \
    res = ND_##P##SEL(big, PFX##_log_core(ND_##P##SEL(big, a, ND_##P##1(1.0)), ND_##P##1(0.0), 0, big), res); \
    res = ND_##P##SEL(ND_##P##CMP(a, ND_##P##1(INFINITY), 0), a, res); \
    return ND_##P##SEL(ND_##P##CMP(a, a, 0x04), x, res);   /* NaN: _CMP_NEQ_UQ */ \
} \
ND_INLINE V PFX##_asinh_m(V a) \
{ \
    V a2 = a * a, a2l = ND_##P##FMA(a, a, -a2); \
    V hi = ND_##P##MAX(a2, ND_##P##1(1.0)), lw = ND_##P##MIN(a2, ND_##P##1(1.0)); \
    V h = a2 + ND_##P##1(1.0); \
    V sl, s = PFX##_sqrt2(h, ((hi - h) + lw) + a2l, &sl, 0.0); \
    return PFX##_log_sum(s, a, sl); \
} \
ND_INLINE V PFX##_asinhv(V x) \
{ \
    VU sgn = (VU)x & (VU)ND_##P##1(-0.0); \
    V a = (V)((VU)x ^ sgn); \
    M tiny = ND_##P##CMP(a, ND_##P##1(TINY), 0x11);   /* _CMP_LT_OQ */ \
    M bad = ND_##P##CMP(a, ND_##P##1(BIG), 0x16);     /* !(a <= BIG), _CMP_NLE_UQ: NaN, inf */ \
    V as = ND_##P##SEL((M)(tiny | bad), ND_##P##1(1.0), a); \
    V res = PFX##_asinh_m(as); \
    if (__builtin_expect(bad != 0, 0)) \
        res = PFX##_invhyp_big(x, a, res); \
    return ND_##P##SEL(tiny, x, (V)((VU)res | sgn)); \
} \
ND_INLINE V PFX##_acosh_m(V x) \
{ \
    V x2 = x * x, x2l = ND_##P##FMA(x, x, -x2); \
    V h = x2 - ND_##P##1(1.0); \
    V sl, s = PFX##_sqrt2(h, ((x2 - h) - ND_##P##1(1.0)) + x2l, &sl, FLOOR); \
    return PFX##_log_sum(x, s, sl); \
} \
ND_INLINE V PFX##_acoshv(V x) \
{ \
    M ok = ND_##P##CMP(x, ND_##P##1(1.0), 0x1d) & ND_##P##CMP(x, ND_##P##1(BIG), 0x12);   /* >=, <= */ \
    if (__builtin_expect(ok == (M)-1, 1)) \
        return PFX##_acosh_m(x); \
    V res = PFX##_invhyp_big(x, x, PFX##_acosh_m(ND_##P##SEL(ok, x, ND_##P##1(1.0)))); \
    /* below 1: NaN with "invalid" (a masked product) */ \
    return ND_##P##MULM(ND_##P##1(INFINITY), ND_##P##1(0.0), res, ND_##P##CMP(x, ND_##P##1(1.0), 0x11)); \
}
ND_ZV_INVHYP_DEF(Z, nd_v8d, nd_v8u, nd_m8, nd_zv, 2, 0x1p-300, 0x1p28, 0x1p-60)
/* cbrt: |x| = 2^e m, m in [1, 2) (vgetexp, vgetmant: subnormals too), e
 * = 3q + i; cbrt(m 2^i) ~ c0 = cbrt(c_j) 2^(i/3) (1 + r P(r)), c_j the
 * centre of m's 1/16 bucket (its top 4 bits), r = m/c_j - 1 (|r| < 1/32),
 * r P(r) Taylor's of (1+r)^(1/3) - 1 to r^4 (2^-30); then one Newton step
 * from the exact residual c0^3 - m 2^i (fma) over 3 c0^2 (its reciprocal
 * by vrcp14pd and one Newton step): the error squares, 2^-60; scaled by
 * 2^q (vscalef). The C form's three Newton steps from a 5-bit seed ran
 * 0.65x NumPy's loop. +-0, +-inf and NaN (vfpclass) take a second pass:
 * x itself (x + x, computed in every lane,
 * raised "overflow" above 2^1023). */
static const double __attribute__((aligned(64))) ND_ZV_CBRT_INVC[16] = {0x1.f07c1f07c1f08p-1, 0x1.d41d41d41d41dp-1, 0x1.bacf914c1bad0p-1, 0x1.a41a41a41a41ap-1, 0x1.8f9c18f9c18fap-1, 0x1.7d05f417d05f4p-1, 0x1.6c16c16c16c17p-1, 0x1.5c9882b931057p-1, 0x1.4e5e0a72f0539p-1, 0x1.4141414141414p-1, 0x1.3521cfb2b78c1p-1, 0x1.29e4129e4129ep-1, 0x1.1f7047dc11f70p-1, 0x1.15b1e5f75270dp-1, 0x1.0c9714fbcda3bp-1, 0x1.0410410410410p-1};
static const double __attribute__((aligned(64))) ND_ZV_CBRT_C[16] = {0x1.02a3ad2ef6f48p+0, 0x1.07c3236b0a73ap+0, 0x1.0cb18b61ad8cfp+0, 0x1.11733d66373bdp+0, 0x1.160bfc12dd091p+0, 0x1.1a7f0eab8483dp+0, 0x1.1ecf55daa68a5p+0, 0x1.22ff5c2fb2fd0p+0, 0x1.27116361abaeap+0, 0x1.2b076f131c9d7p+0, 0x1.2ee34da3b4fe3p+0, 0x1.32a69f78df567p+0, 0x1.3652dd0d71db1p+0, 0x1.39e95c0605a66p+0, 0x1.3d6b5379be10cp+0, 0x1.40d9df94f1be1p+0};
static const double __attribute__((aligned(64))) ND_ZV_CBRT_T3[16] = {
    0x1.0p+0, 0x1.428a2f98d728bp+0, 0x1.965fea53d6e3dp+0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
/* cbrt's core for a > 0 finite and its entry (P: Z for float64's 8
 * lanes, Y for float32's 16; SH and MAGIC: the shift to the mantissa's top
 * 4 bits and 1.5 2^digits; POLY: (1+r)^(1/3) - 1 over r; NEWTON: the
 * steps on 1/(3 c0^2)'s vrcp14 -- float32 needs none, its step is 2^-19
 * of c0) */
#define ND_ZV_CBRT_DEF(P, V, VI, VU, M, NM, SH, MAGIC, TB, POLY, NEWTON) \
ND_INLINE V NM##_m(V a) \
{ \
    V m = ND_##P##GETMANT(a, 4);   /* [1, 2), sign cleared */ \
    V e = ND_##P##GETEXP(a); \
    /* q = floor((e + 1/2) / 3), exact for |e| < 2^50; 0x09: down, no "inexact" */ \
    V qd = ND_##P##RND(ND_##P##FMA(e, ND_##P##1(1.0 / 3), ND_##P##1(1.0 / 6)), 0x09); \
    V i = ND_##P##FMA(qd, ND_##P##1(-3.0), e), ib = i + ND_##P##1(MAGIC); \
    VI jm, ji; \
    memcpy(&jm, &m, sizeof jm); \
    memcpy(&ji, &ib, sizeof ji); \
    jm = (VI)((VU)jm >> SH); \
    V r = ND_##P##FMA(m, ND_##P##TABLE(TB##_INVC, jm), ND_##P##1(-1.0)); \
    V t = ND_##P##TABLE(TB##_C, jm) * ND_##P##TABLE(TB##_T3, ji); \
    V c0 = ND_##P##FMA(t, r * POLY(r), t); \
    V y = ND_##P##SCALEF(m, i); \
    V c2 = c0 * c0, c2e = ND_##P##FMA(c0, c0, -c2); \
    V d = ND_##P##FMA(c2e, c0, ND_##P##FMA(c2, c0, -y)); \
    V rr = ND_##P##RCP(c2); \
    for (int i_ = 0; i_ < NEWTON; i_++) \
        rr = ND_##P##FMA(rr, ND_##P##FNMA(c2, rr, ND_##P##1(1.0)), rr); \
    V c = ND_##P##FMA(d * ND_##P##1(-1.0 / 3), rr, c0); \
    return ND_##P##SCALEF(c, qd); \
} \
ND_INLINE V NM(V x) \
{ \
    VU sgn = (VU)x & (VU)ND_##P##1(-0.0); \
    V a = (V)((VU)x ^ sgn); \
    M bad = ND_##P##FPCLASS(x, 0x9f);   /* NaN, +-0, +-inf */ \
    if (__builtin_expect(bad == 0, 1)) \
        return (V)((VU)NM##_m(a) | sgn); \
    V res = (V)((VU)NM##_m(ND_##P##SEL(bad, ND_##P##1(1.0), a)) | sgn); \
    return ND_##P##SEL(bad, x, res); \
}
ND_INLINE nd_v8d nd_zv_cbrt_p(nd_v8d r)   /* Taylor's to r^4 (2^-30) */
{
    nd_v8d q0 = ND_ZFMA(r, ND_Z1(-0x1.c71c71c71c71cp-4), ND_Z1(0x1.5555555555555p-2));
    nd_v8d q1 = ND_ZFMA(r, ND_Z1(-0x1.511e8d2b3183bp-5), ND_Z1(0x1.f9add3c0ca458p-5));
    return ND_ZFMA(r * r, q1, q0);
}
ND_ZV_CBRT_DEF(Z, nd_v8d, nd_v8i, nd_v8u, nd_m8, nd_zv_cbrt8, 48, 0x1.8p52, ND_ZV_CBRT, nd_zv_cbrt_p, 1)
/* the entry points: NM's vector-ABI variants and its scalar symbol, from
 * F8. GCC picks the variant of the loop's vector width: 8 lanes under
 * numdyn's -mprefer-vector-width=512, 4 or 2 elsewhere (and any of them
 * may be called: each is defined); the narrower ones run F8 on their
 * lanes and copies of a benign operand (NARROW) in the rest, which raise
 * no flag. */
#define ND_ZV_ENTRY_T(NM, F, N, T, VE, VD, VB, LE, LD, LB, SPLAT) \
__attribute__((simd("notinbranch"), const, nothrow)) T NM(T) __asm__(#NM); \
static ND_ZV_DEF VE NM##_e(VE x) __asm__("_ZGVeN" #LE "v_" #NM); \
static VE NM##_e(VE x) { return F(x); } \
static ND_ZV_DEF VD NM##_d(VD x) __asm__("_ZGVdN" #LD "v_" #NM); \
static VD NM##_d(VD x) \
{ \
    VE w = SPLAT(N); \
    for (int i = 0; i < LD; i++) w[i] = x[i]; \
    w = NM##_e(w); \
    for (int i = 0; i < LD; i++) x[i] = w[i]; \
    return x; \
} \
static ND_ZV_DEF VD NM##_c(VD x) __asm__("_ZGVcN" #LD "v_" #NM); \
static VD NM##_c(VD x) { return NM##_d(x); } \
static ND_ZV_DEF VB NM##_b(VB x) __asm__("_ZGVbN" #LB "v_" #NM); \
static VB NM##_b(VB x) \
{ \
    VE w = SPLAT(N); \
    for (int i = 0; i < LB; i++) w[i] = x[i]; \
    w = NM##_e(w); \
    for (int i = 0; i < LB; i++) x[i] = w[i]; \
    return x; \
} \
static ND_ZV_DEF T NM##_s(T x) __asm__(#NM); \
static T NM##_s(T x) { return NM##_e(SPLAT(x))[0]; }
#define ND_ZV_ENTRY(NM, F8, NARROW) \
    ND_ZV_ENTRY_T(NM, F8, NARROW, double, nd_v8d, nd_v4d, nd_v2d, 8, 4, 2, ND_Z1)
/* in each inline function calling NM: a unit that calls it compiles NM's
 * variants, the others nothing (the vectorizer's calls go by symbol, which
 * alone would not keep them; emitting them in every unit cost 0.1 s) */
#define ND_ZV_KEEP(NM) \
    static __attribute__((used)) const void *const nd_zv_keep_##NM[] = \
        {(const void *)NM##_e, (const void *)NM##_d, (const void *)NM##_c, (const void *)NM##_b, (const void *)NM##_s}; \
    (void)nd_zv_keep_##NM;
ND_ZV_ENTRY(nd_zv_log1p, nd_zv_log1p8, 0.5)
ND_ZV_ENTRY(nd_zv_exp2, nd_zv_exp2v, 0.0)
ND_ZV_ENTRY(nd_zv_exp, nd_zv_exp8, 0.0)
ND_ZV_ENTRY(nd_zv_atanh, nd_zv_atanhv, 0.0)
ND_ZV_ENTRY(nd_zv_asinh, nd_zv_asinhv, 1.0)
ND_ZV_ENTRY(nd_zv_acosh, nd_zv_acoshv, 1.0)
ND_ZV_ENTRY(nd_zv_cbrt, nd_zv_cbrt8, 1.0)
/* float64 exp2: SLEEF's 1-ULP exp2 ran 0.61-0.84x NumPy's loop */
ND_INLINE double nd_exp2(double x) { ND_ZV_KEEP(nd_zv_exp2) return nd_zv_exp2(x); }
/* float32 in 16 lanes by the same mechanism (nd_zvf_*: _ZGVeN16v_<name>,
 * 8 and 4 lanes and the scalar symbol for other widths): arcsinh,
 * arccosh, arctanh over a float log core, and cbrt. Their C forms (below,
 * still AVX2's and the baseline's) are ~66 instructions a vector and ran
 * 0.6-0.8x NumPy's loops. */
typedef float nd_v16f __attribute__((vector_size(64)));
typedef float nd_v8f __attribute__((vector_size(32)));
typedef float nd_v4f __attribute__((vector_size(16)));
typedef int nd_v16i __attribute__((vector_size(64)));
typedef unsigned int nd_v16u __attribute__((vector_size(64)));
typedef unsigned short nd_m16;
#define ND_Y1(c) ((nd_v16f){c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c})
#define ND_YFMA(a, b, c) __builtin_ia32_vfmaddps512_mask(a, b, c, (nd_m16)-1, ND_ZV_CUR)
#define ND_YFNMA(a, b, c) __builtin_ia32_vfnmaddps512_mask(a, b, c, (nd_m16)-1, ND_ZV_CUR)
#define ND_YCMP(a, b, p) ((nd_m16)__builtin_ia32_cmpps512_mask(a, b, p, (nd_m16)-1, ND_ZV_CUR))
#define ND_YSEL(m, a, b) __builtin_ia32_blendmps_512_mask(b, a, m) /* m ? a : b */
/* a 16-entry float table in one register (vpermps) */
#define ND_YTABLE(t, j) __builtin_ia32_permvarsf512_mask(*(const nd_v16f *)(t), j, *(const nd_v16f *)(t), (nd_m16)-1)
#define ND_YGETMANT(a, imm) __builtin_ia32_getmantps512_mask(a, imm, a, (nd_m16)-1, ND_ZV_CUR)
#define ND_YGETEXP(a) __builtin_ia32_getexpps512_mask(a, a, (nd_m16)-1, ND_ZV_CUR)
#define ND_YRND(a, imm) __builtin_ia32_rndscaleps_mask(a, imm, a, (nd_m16)-1, ND_ZV_CUR)
#define ND_YSCALEF(a, b) __builtin_ia32_scalefps512_mask(a, b, a, (nd_m16)-1, ND_ZV_CUR)
#define ND_YRCP(a) __builtin_ia32_rcp14ps512_mask(a, a, (nd_m16)-1)
#define ND_YMAX(a, b) __builtin_ia32_maxps512_mask(a, b, a, (nd_m16)-1, ND_ZV_CUR)
#define ND_YMIN(a, b) __builtin_ia32_minps512_mask(a, b, a, (nd_m16)-1, ND_ZV_CUR)
#define ND_YRSQRT(a) __builtin_ia32_rsqrt14ps512_mask(a, a, (nd_m16)-1)
#define ND_YMULM(a, b, src, m) __builtin_ia32_mulps512_mask(a, b, src, m, ND_ZV_CUR)
#define ND_YDIVM(a, b, src, m) __builtin_ia32_divps512_mask(a, b, src, m, ND_ZV_CUR)
#define ND_YFPCLASS(a, imm) ((nd_m16)__builtin_ia32_fpclassps512_mask(a, imm, (nd_m16)-1))
#define ND_YSIGN(x) ((nd_v16u)(x) & (nd_v16u)ND_Y1(-0.0f))
#define ND_YOR(x, s) ((nd_v16f)((nd_v16u)(x) | (s)))
/* log(u + cor) for u > 0 finite (subnormals too): u = 2^k m, m in [0.75,
 * 1.5) (vgetmant, vgetexp), c the centre of m's bucket (m + 1/32's top 4
 * bits; 1 for the one around 1), r = m/c - 1 by one fma (|r| < 1/33),
 * log1p(r) = r + r^2 P(r), P Taylor's to r^6 (2^-33 relative). log c =
 * hi + lo, hi and ln2's high part multiples of 2^-17: k ln2hi + hi is
 * exact (|k| <= 150), the rest summed below the result's last bit. TWICE:
 * log(2u) in those lanes (k + 1; no correction there). */
static const float __attribute__((aligned(64))) ND_ZVF_LOG_INVC[16] = {
    0x1p+0f, 0x1.e1e1e2p-1f, 0x1.c71c72p-1f, 0x1.af286cp-1f, 0x1.99999ap-1f, 0x1.861862p-1f, 0x1.745d18p-1f,
    0x1.642c86p-1f, 0x1.555556p-1f, 0x1.4e5e0ap+0f, 0x1.414142p+0f, 0x1.3521dp+0f, 0x1.29e412p+0f, 0x1.1f7048p+0f,
    0x1.15b1e6p+0f, 0x1.0c9714p+0f};
static const float __attribute__((aligned(64))) ND_ZVF_LOG_HI[16] = {
    0.0f, 0x1.f0ap-5f, 0x1.e27p-4f, 0x1.5ff4p-3f, 0x1.c9p-3f, 0x1.1676p-2f, 0x1.4618p-2f, 0x1.739ep-2f,
    0x1.9f32p-2f, -0x1.1178p-2f, -0x1.d104p-3f, -0x1.823cp-3f, -0x1.366p-3f, -0x1.da7p-4f, -0x1.4d3p-4f,
    -0x1.895p-5f};
static const float __attribute__((aligned(64))) ND_ZVF_LOG_LO[16] = {
    0.0f, 0x1.85008cp-20f, 0x1.d38abcp-22f, -0x1.f3eb0ep-20f, -0x1.0b0cacp-20f, -0x1.b42a2cp-21f, 0x1.74438cp-19f,
    -0x1.03a886p-19f, 0x1.e65fccp-21f, -0x1.cd84fcp-19f, 0x1.f066a8p-21f, -0x1.8551a4p-23f, 0x1.c9f538p-22f,
    -0x1.3c1c22p-19f, -0x1.165208p-20f, 0x1.5f2d82p-19f};
ND_INLINE nd_v16f nd_zvf_log_core(nd_v16f u, nd_v16f cor, int withcor, nd_m16 twice)
{
    nd_v16f m = __builtin_ia32_getmantps512_mask(u, 7, u, (nd_m16)-1, ND_ZV_CUR);
    nd_v16f e = __builtin_ia32_getexpps512_mask(u, u, (nd_m16)-1, ND_ZV_CUR);
    nd_v16f kd = __builtin_ia32_addps512_mask(e, ND_Y1(1.0f), e, ND_YCMP(m, ND_Y1(1.0f), 0x11), ND_ZV_CUR);
    nd_v16f kd2 = kd;
    if (twice)
        kd2 = __builtin_ia32_addps512_mask(kd, ND_Y1(1.0f), kd, twice, ND_ZV_CUR);
    nd_v16f mj = m + ND_Y1(0x1p-5f);
    nd_v16i j;
    memcpy(&j, &mj, sizeof j);
    j = (nd_v16i)((nd_v16u)j >> 19);
    nd_v16f invc = ND_YTABLE(ND_ZVF_LOG_INVC, j);
    nd_v16f r = ND_YFMA(m, invc, ND_Y1(-1.0f));
    nd_v16f r2 = r * r;
    nd_v16f p = ND_YFMA(ND_YFMA(r2, ND_Y1(-0x1.555556p-3f), ND_YFMA(r, ND_Y1(0x1.99999ap-3f), ND_Y1(-0.25f))), r2,
                        ND_YFMA(r, ND_Y1(0x1.555556p-2f), ND_Y1(-0.5f)));
    nd_v16f lo = ND_YFMA(kd2, ND_Y1(0x1.7f7d1cp-20f), ND_YTABLE(ND_ZVF_LOG_LO, j));
    if (withcor) {
        nd_v16f d = __builtin_ia32_scalefps512_mask(cor * invc, -kd, u, (nd_m16)-1, ND_ZV_CUR);
        lo = lo + ND_YFNMA(d, r, d);
    }
    lo = ND_YFMA(r2, p, lo);
    nd_v16f w = ND_YFMA(kd2, ND_Y1(0x1.62e4p-1f), ND_YTABLE(ND_ZVF_LOG_HI, j));
    return w + (r + lo);
}
/* (float32 arcsinh, arccosh, arctanh: nd_vm32.h, over its own log core) */
/* cbrt's tables (nd_vm32.h's float cbrt: as float64's nd_zv_cbrt8, c0 to
 * 2^-19 by Taylor's to r^2, one Newton step) */
static const float __attribute__((aligned(64))) ND_ZVF_CBRT_INVC[16] = {
    0x1.f07c2p-1f, 0x1.d41d42p-1f, 0x1.bacf92p-1f, 0x1.a41a42p-1f, 0x1.8f9c18p-1f, 0x1.7d05f4p-1f, 0x1.6c16c2p-1f,
    0x1.5c9882p-1f, 0x1.4e5e0ap-1f, 0x1.414142p-1f, 0x1.3521dp-1f, 0x1.29e412p-1f, 0x1.1f7048p-1f, 0x1.15b1e6p-1f,
    0x1.0c9714p-1f, 0x1.041042p-1f};
static const float __attribute__((aligned(64))) ND_ZVF_CBRT_C[16] = {
    0x1.02a3aep+0f, 0x1.07c324p+0f, 0x1.0cb18cp+0f, 0x1.11733ep+0f, 0x1.160bfcp+0f, 0x1.1a7f0ep+0f, 0x1.1ecf56p+0f,
    0x1.22ff5cp+0f, 0x1.271164p+0f, 0x1.2b076ep+0f, 0x1.2ee34ep+0f, 0x1.32a6ap+0f, 0x1.3652dep+0f, 0x1.39e95cp+0f,
    0x1.3d6b54p+0f, 0x1.40d9ep+0f};
static const float __attribute__((aligned(64))) ND_ZVF_CBRT_T3[16] = {
    0x1p+0f, 0x1.428a3p+0f, 0x1.965feap+0f, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
/* float32 exp2 by float64's form (a 16-entry float table in one register:
 * vpermps; e^r - 1 by r + r^2 (1/2 + r/6 + r^2/24), 2^-30): SLEEF's
 * 3.5-ULP exp2f ran 0.85x NumPy's loop */
static const float __attribute__((aligned(64))) ND_ZVF_EXP_T[16] = {
    0x1p+0f, 0x1.0b5586p+0f, 0x1.172b84p+0f, 0x1.2387a6p+0f, 0x1.306fep+0f, 0x1.3dea64p+0f, 0x1.4bfdaep+0f,
    0x1.5ab07ep+0f, 0x1.6a09e6p+0f, 0x1.7a1148p+0f, 0x1.8ace54p+0f, 0x1.9c4918p+0f, 0x1.ae89fap+0f, 0x1.c199bep+0f,
    0x1.d5818ep+0f, 0x1.ea4afap+0f};
static const float __attribute__((aligned(64))) ND_ZVF_EXP_TL[16] = {
    0.0f, 0x1.9f3122p-25f, -0x1.c15742p-27f, 0x1.ceac48p-25f, 0x1.4636e2p-25f, 0x1.824684p-25f, -0x1.593abcp-25f,
    -0x1.5bd5ecp-27f, 0x1.9fcef4p-26f, -0x1.829fdp-25f, 0x1.15506ep-27f, 0x1.51f848p-27f, -0x1.a94b14p-26f,
    -0x1.3d56b2p-27f, -0x1.822dbcp-27f, 0x1.52486cp-27f};
ND_INLINE nd_v16f nd_zvf_em1_t(nd_v16f r)
{
    nd_v16f q = ND_YFMA(ND_YFMA(r, ND_Y1(0x1.555556p-5f), ND_Y1(0x1.555556p-3f)), r, ND_Y1(0.5f));
    return ND_YFMA(q, r * r, r);
}
ND_ZV_EXP2_DEF(Y, nd_v16f, nd_v16i, nd_v16u, nd_m16, nd_zvf, ND_ZVF_EXP, 0x1.8p23, nd_zvf_em1_t, "0x7ffffffffffff", 126.0,
               -160.0, 130.0)
/* float32's entry points: 16, 8 and 4 lanes */
#define ND_ZVF_ENTRY(NM, F16, NARROW) \
    ND_ZV_ENTRY_T(NM, F16, NARROW, float, nd_v16f, nd_v8f, nd_v4f, 16, 8, 4, ND_Y1)
ND_ZVF_ENTRY(nd_zvf_exp2, nd_zvf_exp2v, 0.0f)
/* float32 tanh: |x| capped at 10 (tanh rounds to 1 from 9.01) and the
 * sign cleared by one vrangeps, then a degree-6
 * polynomial in y = |x| - b over one of 32 intervals: [0, 2^-12), where
 * tanh x rounds to x (the polynomial is y itself: a subnormal or zero
 * comes out exact, with no "underflow"), then half binades from 2^-12 to
 * [8, 10] -- the index is the bits of |x| less those of 1.5 2^-13 with
 * unsigned saturation (vpsubusw on the high halves), >> 22; b and the
 * coefficients from 32-entry tables by vpermt2ps; the sign back by one
 * vpternlogd; NaN lanes (vrangeps makes them 10) NaN, in a branch
 * taken only by a vector holding one. 19 vector operations a vector of 16, no division:
 * the exp form (expm1(2|x|) / (expm1(2|x|) + 2), still AVX2's) was ~30
 * with a vdivps and ran 0.6-0.8x NumPy's AVX-512 loop. The coefficients:
 * least-squares fits in float64 on Chebyshev nodes, weighted toward
 * minimax relative error (in y over the interval's width: conditioned),
 * rounded to float; within 1 ULP of the float64 result rounded once over
 * every float (97.9% exact; tests/test_vmath_zv.py). */
static const float __attribute__((aligned(64))) ND_ZVF_TANH_C0[32] = {
    0.0f, 0x1p-12f, 0x1.7ffffep-12f, 0x1.fffffep-12f, 0x1.7ffffcp-11f, 0x1.fffff6p-11f, 0x1.7fffeep-10f,
    0x1.ffffd6p-10f, 0x1.7fffb8p-9f, 0x1.ffff56p-9f, 0x1.7ffeep-8f, 0x1.fffd56p-8f, 0x1.7ffb8p-7f, 0x1.fff556p-7f,
    0x1.7fee02p-6f, 0x1.ffd55ap-6f, 0x1.7fb81p-5f, 0x1.ff559ap-5f, 0x1.7ee102p-4f, 0x1.fd5992p-4f, 0x1.7b8ffap-3f,
    0x1.f597eap-3f, 0x1.6ef53ep-2f, 0x1.d9353ep-2f, 0x1.45323ep-1f, 0x1.85efacp-1f, 0x1.cf6f98p-1f, 0x1.ed9506p-1f,
    0x1.fd77d2p-1f, 0x1.ffa818p-1f, 0x1.fffe64p-1f, 0x1.fffff8p-1f};
static const float __attribute__((aligned(64))) ND_ZVF_TANH_C1[32] = {
    0x1p+0f, 0x1.fffffep-1f, 0x1.fffffcp-1f, 0x1.fffff8p-1f, 0x1.ffffeep-1f, 0x1.ffffep-1f, 0x1.ffffb8p-1f,
    0x1.ffff8p-1f, 0x1.fffeep-1f, 0x1.fffep-1f, 0x1.fffb8p-1f, 0x1.fff8p-1f, 0x1.ffeep-1f, 0x1.ffe002p-1f,
    0x1.ffb806p-1f, 0x1.ff8016p-1f, 0x1.fee06cp-1f, 0x1.fe0154p-1f, 0x1.fb86b8p-1f, 0x1.f81526p-1f, 0x1.ee69e4p-1f,
    0x1.e149ap-1f, 0x1.be3fbap-1f, 0x1.92a944p-1f, 0x1.3173bp-1f, 0x1.ae0deap-2f, 0x1.721684p-3f, 0x1.21623ep-4f,
    0x1.4345bep-7f, 0x1.5ef2b6p-10f, 0x1.9b98a6p-16f, 0x1.e27bp-22f};
static const float __attribute__((aligned(64))) ND_ZVF_TANH_C2[32] = {
    0.0f, -0x1.000002p-12f, -0x1.800004p-12f, -0x1.fffff4p-12f, -0x1.7fffecp-11f, -0x1.ffffd4p-11f, -0x1.7fffb8p-10f,
    -0x1.ffff56p-10f, -0x1.7ffeep-9f, -0x1.fffd56p-9f, -0x1.7ffb8p-8f, -0x1.fff556p-8f, -0x1.7feep-7f,
    -0x1.ffd558p-7f, -0x1.7fb808p-6f, -0x1.ff557ap-6f, -0x1.7ee08ap-5f, -0x1.fd5798p-5f, -0x1.7b888ep-4f,
    -0x1.f57938p-4f, -0x1.6e866ap-3f, -0x1.d7815ap-3f, -0x1.3fd546p-2f, -0x1.7425eap-2f, -0x1.84032ep-2f,
    -0x1.478c3ap-2f, -0x1.4f026p-3f, -0x1.16f312p-4f, -0x1.41667ap-7f, -0x1.5a524cp-10f, -0x1.962506p-16f,
    -0x1.dc1ac2p-22f};
static const float __attribute__((aligned(64))) ND_ZVF_TANH_C3[32] = {
    0.0f, -0x1.5554cap-2f, -0x1.55543p-2f, -0x1.555562p-2f, -0x1.55556ep-2f, -0x1.55551cp-2f, -0x1.55546ep-2f,
    -0x1.5553fcp-2f, -0x1.555252p-2f, -0x1.555p-2f, -0x1.554954p-2f, -0x1.554p-2f, -0x1.552556p-2f, -0x1.550008p-2f,
    -0x1.54957cp-2f, -0x1.540078p-2f, -0x1.5257b8p-2f, -0x1.500784p-2f, -0x1.497b4p-2f, -0x1.4076eap-2f,
    -0x1.27a4ep-2f, -0x1.071e1ap-2f, -0x1.6dc7f6p-3f, -0x1.825e1p-4f, 0x1.5603d2p-5f, 0x1.a967ccp-4f, 0x1.685564p-4f,
    0x1.58c096p-5f, 0x1.a51554p-8f, 0x1.b2f956p-11f, 0x1.fd9deap-17f, 0x1.2ab898p-22f};
static const float __attribute__((aligned(64))) ND_ZVF_TANH_C4[32] = {
    0.0f, -0x1.0c2facp-5f, -0x1.184622p-4f, 0x1.6a6c44p-8f, 0x1.379094p-7f, 0x1.501a92p-9f, -0x1.a2441ap-10f,
    0x1.297038p-10f, 0x1.e8c41p-10f, 0x1.57081ep-9f, 0x1.fc5014p-9f, 0x1.552dfep-8f, 0x1.ff0f2ep-8f, 0x1.5515c2p-7f,
    0x1.ff36f2p-7f, 0x1.546104p-6f, 0x1.fccfe2p-6f, 0x1.5189d2p-5f, 0x1.f3604p-5f, 0x1.467196p-4f, 0x1.cf7208p-4f,
    0x1.1e0412p-3f, 0x1.589312p-3f, 0x1.544966p-3f, 0x1.9b6ebp-4f, 0x1.aebd2ep-6f, -0x1.a86abap-6f, -0x1.2514b2p-6f,
    -0x1.8acd3p-9f, -0x1.678e34p-12f, -0x1.a43e56p-18f, -0x1.ecb9dcp-24f};
static const float __attribute__((aligned(64))) ND_ZVF_TANH_C5[32] = {
    0.0f, 0x1.ed4eap+7f, 0x1.0cacc2p+9f, -0x1.7182fcp+4f, -0x1.125e0cp+5f, -0x1.ece342p+1f, 0x1.5d77e4p+2f,
    0x1.39f7e4p-2f, 0x1.aa862ap-3f, 0x1.02e90cp-3f, 0x1.2cb7c6p-3f, 0x1.11a25ep-3f, 0x1.162cbp-3f, 0x1.109b02p-3f,
    0x1.0fb70ap-3f, 0x1.0eefacp-3f, 0x1.0c1e6cp-3f, 0x1.088cc6p-3f, 0x1.fb0de8p-4f, 0x1.df24e2p-4f, 0x1.8e077cp-4f,
    0x1.298d8ap-4f, 0x1.1860d8p-6f, -0x1.2783dap-5f, -0x1.17f03ep-4f, -0x1.5c6716p-5f, 0x1.53e47cp-12f,
    0x1.4682e8p-8f, 0x1.f7f624p-11f, 0x1.63fcc4p-14f, 0x1.9e8354p-20f, 0x1.e615bep-26f};
static const float __attribute__((aligned(64))) ND_ZVF_TANH_C6[32] = {
    0.0f, -0x1.51e538p+19f, -0x1.7d9b1ep+20f, 0x1.21113p+15f, 0x1.863c1ap+15f, 0x1.789184p+11f, -0x1.fcde68p+11f,
    -0x1.080898p+6f, -0x1.9f22cap+4f, 0x1.4d957cp+0f, -0x1.3ade5ap+1f, -0x1.1527f2p-5f, -0x1.ea065ap-3f,
    -0x1.2688bap-7f, -0x1.f9ca66p-8f, -0x1.e16074p-7f, -0x1.4dac24p-6f, -0x1.d40462p-6f, -0x1.3ed98ap-5f,
    -0x1.abd2f6p-5f, -0x1.0b1ddp-4f, -0x1.286d48p-4f, -0x1.f7a7bep-5f, -0x1.8ef098p-6f, 0x1.abfe5p-7f, 0x1.f2ed78p-7f,
    0x1.13f582p-9f, -0x1.6e119ap-11f, -0x1.4926a4p-13f, -0x1.3b5cf4p-17f, -0x1.6d8a24p-23f, -0x1.acbb4ep-29f};
static const float __attribute__((aligned(64))) ND_ZVF_TANH_B[32] = {
    0.0f, 0x1p-12f, 0x1.8p-12f, 0x1p-11f, 0x1.8p-11f, 0x1p-10f, 0x1.8p-10f, 0x1p-9f, 0x1.8p-9f, 0x1p-8f, 0x1.8p-8f,
    0x1p-7f, 0x1.8p-7f, 0x1p-6f, 0x1.8p-6f, 0x1p-5f, 0x1.8p-5f, 0x1p-4f, 0x1.8p-4f, 0x1p-3f, 0x1.8p-3f, 0x1p-2f,
    0x1.8p-2f, 0x1p-1f, 0x1.8p-1f, 0x1p+0f, 0x1.8p+0f, 0x1p+1f, 0x1.8p+1f, 0x1p+2f, 0x1.8p+2f, 0x1p+3f};
#define ND_YTAB32(t, j) __builtin_ia32_vpermt2varps512_mask(j, *(const nd_v16f *)(t), *(const nd_v16f *)((t) + 16), (nd_m16)-1)
typedef short nd_v32s __attribute__((vector_size(64)));
ND_INLINE nd_v16f nd_zvf_tanhv(nd_v16f x)
{
    /* min(|x|, |10|), sign cleared (vrangeps; it returns 10 for a NaN:
     * those lanes are NaN below, positive, as NumPy's) */
    nd_v16f a = __builtin_ia32_rangeps512_mask(x, ND_Y1(10.0f), 0x0a, x, (nd_m16)-1, ND_ZV_CUR);
    nd_v16i ib;
    memcpy(&ib, &a, sizeof ib);
    ib = (nd_v16i)__builtin_ia32_psubusw512_mask((nd_v32s)ib, (nd_v32s)(nd_v16i)ND_Y1(0x1.8p-13f), (nd_v32s)ib,
                                                 (unsigned)-1);
    nd_v16i j = (nd_v16i)((nd_v16u)ib >> 22);
    nd_v16f y = a - ND_YTAB32(ND_ZVF_TANH_B, j);
    nd_v16f r = ND_YFMA(ND_YTAB32(ND_ZVF_TANH_C6, j), y, ND_YTAB32(ND_ZVF_TANH_C5, j));
    r = ND_YFMA(r, y, ND_YTAB32(ND_ZVF_TANH_C4, j));
    r = ND_YFMA(r, y, ND_YTAB32(ND_ZVF_TANH_C3, j));
    r = ND_YFMA(r, y, ND_YTAB32(ND_ZVF_TANH_C2, j));
    r = ND_YFMA(r, y, ND_YTAB32(ND_ZVF_TANH_C1, j));
    r = ND_YFMA(r, y, ND_YTAB32(ND_ZVF_TANH_C0, j));
    /* r | (x & sign) */
    nd_v16f res = (nd_v16f)__builtin_ia32_pternlogd512_mask((nd_v16i)x, (nd_v16i)r, (nd_v16i)ND_Y1(-0.0f), 0xec,
                                                           (nd_m16)-1);
    nd_m16 nan = ND_YCMP(x, x, 0x03);   /* _CMP_UNORD_Q */
    return __builtin_expect(nan != 0, 0) ? ND_YSEL(nan, ND_Y1(__builtin_nanf("")), res) : res;
}
ND_ZVF_ENTRY(nd_zvf_tanh, nd_zvf_tanhv, 0.0f)
/* float32 expm1: x = n ln2/16 + r (n = round(16 x / ln2) from the bits
 * of 16 x / ln2 + 1.5 2^23, its low 4 bits index exp2's 2^(j/16) table
 * T, = T (1 + R)), e^r - 1 = p = r + r^2 (1/2 + r/6 + r^2/24) (|r| <=
 * ln2/32: 2^-29 of p), S = 2^m T by vscalef (m = floor(n/16)), expm1 x =
 * S (p + R) + (S - 1) in one fma -- S - 1 exact for S >= 1/2, p itself
 * near 0 (S = 1, R = 0); (S - 1) + S TL first rounded twice: 2 ULP. x below -18 is -18 (vrangeps; expm1 rounds to
 * -1 there, and 2^m would underflow). A vector holding an |x| below 2^-60
 * (r^2 would underflow: x itself), a NaN (x itself) or an x above 88.7
 * takes a second pass: above 80 e^x alone (2^m T (1 + p) + TL, scaled
 * last: 2^m may overflow where the result does not), x capped at 89, so
 * a finite overflow raises "overflow" from vscalef, +inf inf with no
 * flag (NumPy raises none). 20
 * vector operations a vector of 16; the C form (AVX2's) ~31, 0.8x NumPy's
 * loop. Within 1 ULP of the float64 result rounded once. */
/* 2^(j/16) = T (1 + R): R the table's relative error, added to p */
static const float __attribute__((aligned(64))) ND_ZVF_EXPM1_R[16] = {
    0.0f, 0x1.8d96d4p-25f, -0x1.9c0c22p-27f, 0x1.964904p-25f, 0x1.125002p-25f, 0x1.370be4p-25f, -0x1.0a355p-25f,
    -0x1.00d8acp-27f, 0x1.26055cp-26f, -0x1.05cb44p-25f, 0x1.67a1cap-28f, 0x1.a3b5e4p-28f, -0x1.f9c304p-27f,
    -0x1.6961b4p-28f, -0x1.a5217cp-28f, 0x1.61428ep-28f};
ND_INLINE nd_v16f nd_zvf_expm1_m(nd_v16f x, int big)
{
    nd_v16f kb = ND_YFMA(x, ND_Y1(0x1.715476p+4f), ND_Y1(0x1.8p23f));
    nd_v16f nd = kb - ND_Y1(0x1.8p23f);
    nd_v16f r = ND_YFNMA(nd, ND_Y1(0x1.62ep-5f), x);
    r = ND_YFNMA(nd, ND_Y1(0x1.0bfbe8p-19f), r);
    nd_v16f r2 = r * r;
    nd_v16f q = ND_YFMA(r2, ND_Y1(0x1.555556p-5f), ND_YFMA(r, ND_Y1(0x1.555556p-3f), ND_Y1(0.5f)));
    nd_v16f p = ND_YFMA(r2, q, r);
    nd_v16i j;
    memcpy(&j, &kb, sizeof j);
    nd_v16f md = nd * ND_Y1(0.0625f);
    nd_v16f t = ND_YTABLE(ND_ZVF_EXP_T, j);
    p = p + ND_YTABLE(ND_ZVF_EXPM1_R, j);
    if (big)   /* e^x alone, scaled last (2^m itself may overflow) */
        return ND_YSCALEF(ND_YFMA(t, p, t), md);
    nd_v16f sh = ND_YSCALEF(t, md);
    return ND_YFMA(sh, p, sh - ND_Y1(1.0f));
}
ND_INLINE nd_v16f nd_zvf_expm1v(nd_v16f x)
{
    nd_v16f xc = __builtin_ia32_rangeps512_mask(x, ND_Y1(-18.0f), 0x01, x, (nd_m16)-1, ND_ZV_CUR);   /* max */
    nd_v16f ax = (nd_v16f)((nd_v16u)x & ~(nd_v16u)ND_Y1(-0.0f));
    /* |x| >= 2^-60 and x <= 88.7 (a NaN fails both) */
    nd_m16 ok = __builtin_ia32_cmpps512_mask(x, ND_Y1(88.7f), 0x12, ND_YCMP(ax, ND_Y1(0x1p-60f), 0x1d), ND_ZV_CUR);
    if (__builtin_expect(__builtin_ia32_kortestchi(ok, ok), 1))   /* all set (kortestw's carry) */
        return nd_zvf_expm1_m(xc, 0);
    nd_m16 keep = ND_YCMP(ax, ND_Y1(0x1p-60f), 0x19);   /* < 2^-60 or NaN: _CMP_NGE_UQ */
    nd_m16 pinf = ND_YCMP(x, ND_Y1(__builtin_inff()), 0);
    nd_m16 big = ND_YCMP(x, ND_Y1(80.0f), 0x1e) & ~pinf;   /* _CMP_GT_OQ */
    nd_v16f res = nd_zvf_expm1_m(ND_YSEL((nd_m16)(keep | pinf | big), ND_Y1(1.0f), xc), 0);
    res = ND_YSEL(big, nd_zvf_expm1_m(ND_YSEL(big, ND_YMIN(x, ND_Y1(89.0f)), ND_Y1(1.0f)), 1), res);
    res = ND_YSEL(pinf, x, res);
    return ND_YSEL(keep, x, res);
}
ND_ZVF_ENTRY(nd_zvf_expm1, nd_zvf_expm1v, 0.0f)
/* float32 log1p by float64's form (nd_zv_log1p8) over the float log core:
 * u = 1 + x and its rounding error x - (u - 1) as the core's correction;
 * NaN, +-0, +-inf and x <= -1 in a second pass (x itself, -inf at -1,
 * NaN with "invalid" below). SLEEF's logf under Kahan's division ran
 * 0.97x NumPy's loop. */
ND_INLINE nd_v16f nd_zvf_log1pv(nd_v16f x)
{
    nd_m16 bad = ND_YFPCLASS(x, 0x9f) | ND_YCMP(x, ND_Y1(-1.0f), 0x12);
    nd_v16f xs = __builtin_expect(bad == 0, 1) ? x : ND_YSEL(bad, ND_Y1(0.0f), x);
    nd_v16f u = ND_Y1(1.0f) + xs;
    nd_v16f res = nd_zvf_log_core(u, xs - (u - ND_Y1(1.0f)), 1, 0);
    if (__builtin_expect(bad == 0, 1))
        return res;
    nd_m16 pole = ND_YCMP(x, ND_Y1(-1.0f), 0), neg = ND_YCMP(x, ND_Y1(-1.0f), 0x11);
    res = ND_YSEL(pole, ND_Y1(-__builtin_inff()), res);
    res = ND_YMULM(ND_Y1(__builtin_inff()), ND_Y1(0.0f), res, neg);
    return ND_YSEL((nd_m16)(bad & ~(pole | neg)), x, res);
}
ND_ZVF_ENTRY(nd_zvf_log1p, nd_zvf_log1pv, 0.5f)
/* float32 exp2 (numdyn's, above) */
ND_INLINE float nd_exp2f(float x) { ND_ZV_KEEP(nd_zvf_exp2) return nd_zvf_exp2(x); }
#endif
/* (float32's log1p; float64's is numdyn's own, nd_vm64.h)
 * SLEEF's range where libm's is wider (checked against NumPy over every
 * decade, tests/test_codegen_libm.py): a subnormal operand gives 0 or a
 * wrong value from log1p, tan (float64) and sinh (float32), where libm
 * returns the operand; log1p gave inf above 1e307 (float32: 1e38). The
 * flag SLEEF raised then had NumPy rerun the graph, unless errors were
 * ignored: then the wrong values were returned. log1p is Kahan's log(u) *
 * x / (u - 1), u = 1 + x, over SLEEF's log (the 1-ULP one for float64: over
 * the 3.5-ULP one it was 4 ULP off NumPy's; x itself where u rounds to 1,
 * and at inf): SLEEF's own log1p (double-double inside) ran 2x slower,
 * 3-5x slower than NumPy's SVML loop; this is within 2 ULP (float64) / 3
 * ULP (float32) of NumPy's over the test's decades. Quiet comparisons: a
 * NaN operand raises no flag here, as in libm. */
#define ND_SLEEF_RANGE(T, S, F, LOG) \
ND_INLINE T nd_log1p##F(T x) \
{ \
    T u = 1 + x, d = u - 1; \
    int keep = (u == 1) | (x == (T)INFINITY); \
    T r = LOG(u) * (nd_bsel_##S(keep, (T)1, x) / nd_bsel_##S(keep, (T)1, d)); \
    return nd_bsel_##S(keep, x, r); \
}
#if ND_ZV
/* numdyn's AVX-512 log1p above: 1.6x faster than this form over SLEEF's
 * log and a division (bench/bench_vmath.py) */
ND_INLINE double nd_log1p(double x) { ND_ZV_KEEP(nd_zv_log1p) return nd_zv_log1p(x); }
#endif   /* elsewhere nd_vm64.h's C form */
#if ND_ZV
/* float32 log1p: numdyn's AVX-512 function (nd_zvf_log1pv) */
ND_INLINE float nd_log1pf(float x) { ND_ZV_KEEP(nd_zvf_log1p) return nd_zvf_log1p(x); }
#else
ND_SLEEF_RANGE(float, f, f, nd_logf)
#endif

/* ------------------------------------ numdyn's own float64 vector math */
/* exp, expm1, sinh, cosh, tanh, arcsinh, arccosh, arctanh and cbrt of float64
 * in vector lanes: SLEEF's 1-ULP versions of these compute in double-double
 * and ran 2-4x slower than NumPy's SIMD loops (bench/bench_ufuncs.py).
 * These are plain C over two cores -- exp's reduction x = k ln2 + r with a
 * degree-13 Taylor polynomial of expm1(r), and fdlibm's log of the
 * mantissa (s = f / (2 + f), one division) -- with fma, no tables, no
 * branches: every arm is computed on an operand made safe first and the
 * lane's result chosen by bits (a `?:` whose arm computes lets GCC turn
 * it into control flow, and the loop stays scalar). So GCC vectorizes them
 * at the widest width -march=native gives (AVX-512 8 lanes, AVX2 4), and
 * no lane raises a flag NumPy would not: the out-of-domain ones raise
 * "invalid" (or "divide" at a pole) from one operation on a value chosen
 * for that lane only. Within 3 ULP of NumPy's over every decade
 * (tests/test_codegen_libm.py), most results within 1. */
/* bits, clamps, "invalid" NaNs and powers of two, for each float type:
 * nd_clamp raises x to lo below it and gives 0 above hi and for NaN (lanes
 * whose result the caller replaces: computing them raises no flag);
 * nd_nan_where gives NaN with "invalid" in the lanes where c holds only;
 * nd_p2(k) = 2^k for k within the normal exponents */
#define ND_OWN_HELPERS(T, S, U, I, BIAS, SHIFT) \
ND_INLINE T nd_b2##S(U u) { T d; memcpy(&d, &u, sizeof d); return d; } \
ND_INLINE U nd_##S##2b(T d) { U u; memcpy(&u, &d, sizeof u); return u; } \
ND_INLINE T nd_clamp_##S(T x, T lo, T hi) \
{ \
    x = __builtin_isless(x, lo) ? lo : x; \
    return nd_bsel_##S(__builtin_islessequal(x, hi), x, (T)0); \
} \
ND_INLINE T nd_nan_where_##S(int c) { return nd_bsel_##S(c, (T)INFINITY, (T)0) * (T)0; } \
ND_INLINE T nd_p2_##S(I k) { return nd_b2##S((U)(k + BIAS) << SHIFT); } \
/* lo <= a <= hi for a >= +0 or NaN (false; 0 <= lo <= hi), by the bits: \
 * GCC vectorizes isgreater/isgreaterequal and their negations as \
 * signaling compares (vcmpnlepd...), which raise "invalid" on a quiet NaN \
 * (NumPy raises none; a flag makes numdyn rerun the graph in NumPy) */ \
ND_INLINE int nd_inrange_##S(T a, T lo, T hi) { return nd_##S##2b(a) - nd_##S##2b(lo) <= nd_##S##2b(hi) - nd_##S##2b(lo); }
ND_OWN_HELPERS(double, d, uint64_t, int64_t, 1023, 52)
ND_OWN_HELPERS(float, f, uint32_t, int32_t, 127, 23)
#define ND_INF_D ((double)INFINITY)
#if ND_ZV
/* float64 tan over SLEEF's 3.5-ULP tan: x itself below the smallest normal
 * (SLEEF's gave 0 for subnormals). (arcsin, arccos, arctan: SLEEF's
 * 3.5-ULP functions themselves; like tan's they raise "invalid" for a NaN,
 * where NumPy raises none -- numdyn then reruns the graph in NumPy, right
 * but slow; wrapping them as below measured 14-25% slower here.) */
ND_INLINE double nd_tan(double x)
{ return nd_bsel_d(__builtin_isless(__builtin_fabs(x), 2.2250738585072014e-308), x, nd_v_tan(x)); }
#else
/* float64 tan, arcsin, arccos over SLEEF's 1-ULP functions, which raise
 * "invalid" for a NaN (and asin/acos "invalid" and "divide by zero" at
 * exactly +-0, +-1 and below ~1e-300, "underflow" below ~1e-20), where
 * NumPy raises none (numdyn would rerun the graph in NumPy): those lanes
 * compute 0.5 and take their values -- x for a NaN; tan: x below the
 * smallest normal too (SLEEF's tan gave 0 for subnormals); arcsin, arccos
 * below 2^-28: x, or pi/2 - x in double-double (the x^3 term is below the
 * last bit); at +-1: +-pi/2, or 0 and pi. Past +-1 SLEEF's NaN and
 * "invalid" (and "overflow" from ~1e300: a graph rerun, as for the
 * "invalid" NumPy raises there). Lanes chosen by bits (nd_inrange: GCC's
 * vector compares signal on a NaN). */
ND_INLINE double nd_tan(double x)
{
    int ok = nd_inrange_d(__builtin_fabs(x), 2.2250738585072014e-308, ND_INF_D);
    return nd_bsel_d(ok, nd_v_tan(nd_bsel_d(ok, x, 0.5)), x);
}
ND_INLINE double nd_asacs(double x, int acos_)
{
    double ax = __builtin_fabs(x);
    int one = ax == 1.0, use = nd_inrange_d(ax, 0x1p-28, ND_INF_D) & !one;
    double r = acos_ ? nd_v_acos(nd_bsel_d(use, x, 0.5)) : nd_v_asin(nd_bsel_d(use, x, 0.5));
    double tiny = acos_ ? 0x1.921fb54442d18p+0 + (0x1.1a62633145c07p-54 - x) : x;
    double sp1 = acos_ ? nd_bsel_d((int)(nd_d2b(x) >> 63), 0x1.921fb54442d18p+1, 0.0) : __builtin_copysign(0x1.921fb54442d18p+0, x);
    return nd_bsel_d(use, r, nd_bsel_d(one, sp1, nd_bsel_d(nd_d2b(ax) < nd_d2b(0x1p-28), tiny, x)));
}
ND_INLINE double nd_asin(double x) { return nd_asacs(x, 0); }
ND_INLINE double nd_acos(double x) { return nd_asacs(x, 1); }
#endif
#define ND_INF_F ((float)INFINITY)
#define ND_LN2_D 0x1.62e42fefa39efp-1
/* expm1(r) for |r| <= ln2 / 2: r + r^2 P(r), P of degree 9 near-minimax
 * for (expm1(r) - r) / r^2 (Chebyshev fit, error 1e-16 in P: 2^-56 of
 * the result): two fma fewer than the Taylor polynomial's degree 11, in
 * every exp-based function of float64 (exp, expm1, sinh, cosh, tanh) */
ND_INLINE double nd_em1p_d(double r)
{
    double p = 0x1.af38a9b0ec855p-26;
    p = __builtin_fma(p, r, 0x1.289185613a3d6p-22); p = __builtin_fma(p, r, 0x1.71de0dae63bb3p-19);
    p = __builtin_fma(p, r, 0x1.a019b90d2ae7ap-16); p = __builtin_fma(p, r, 0x1.a01a01a7c41d5p-13);
    p = __builtin_fma(p, r, 0x1.6c16c1788bd90p-10); p = __builtin_fma(p, r, 0x1.11111111109b3p-7);
    p = __builtin_fma(p, r, 0x1.5555555553d63p-5); p = __builtin_fma(p, r, 0x1.5555555555556p-3);
    p = __builtin_fma(p, r, 0x1.0000000000001p-1);
    return __builtin_fma(r * r, p, r);
}
/* the same polynomial split by parity: expm1(+-r) = ev +- od (P's
 * interval is symmetric), for e^r and e^-r at once (sinh, cosh) */
ND_INLINE double nd_em1eot_d(double r, double *ot)   /* *ot = od - r */
{
    double s = r * r, e = 0x1.289185613a3d6p-22, o = 0x1.af38a9b0ec855p-26;
    e = __builtin_fma(e, s, 0x1.a019b90d2ae7ap-16); o = __builtin_fma(o, s, 0x1.71de0dae63bb3p-19);
    e = __builtin_fma(e, s, 0x1.6c16c1788bd90p-10); o = __builtin_fma(o, s, 0x1.a01a01a7c41d5p-13);
    e = __builtin_fma(e, s, 0x1.5555555553d63p-5); o = __builtin_fma(o, s, 0x1.11111111109b3p-7);
    e = __builtin_fma(e, s, 0x1.0000000000001p-1); o = __builtin_fma(o, s, 0x1.5555555555556p-3);
    *ot = r * (s * o);
    return s * e;
}
ND_INLINE double nd_em1eo_d(double r, double *od)
{
    double ot, ev = nd_em1eot_d(r, &ot);
    *od = r + ot;
    return ev;
}
/* x = k ln2 + r (x finite, |x| < 2^(digits-2)): expm1(r), and *sc =
 * 2^(k-2) -- exp(x) = 4 (sc + sc expm1(r)), exact up to the last rounding.
 * k comes from the bits of x log2(e) + 1.5 2^digits (no float-to-int
 * conversion, which would raise "invalid" on a NaN lane); ln2's high part
 * has trailing zero bits enough that k ln2_hi and x - k ln2_hi are exact.
 * Callers keep k - 2 within the normal exponents. */
#define ND_EXPK(T, S, U, I, MAGIC, LOG2E, LN2HI, LN2LO, FMA, KMAX) \
ND_INLINE T nd_exprr_##S(T x, I *kp) \
{ \
    T kb = FMA(x, LOG2E, MAGIC); \
    T kd = kb - MAGIC; \
    *kp = (I)(nd_##S##2b(kb) - nd_##S##2b(MAGIC)); \
    T r = FMA(-kd, LN2HI, x); \
    return FMA(-kd, LN2LO, r); \
} \
ND_INLINE T nd_expr_##S(T x, I *kp) { return nd_em1p_##S(nd_exprr_##S(x, kp)); } \
/* e^x and e^-x at once: ev and *od (expm1(+-r) = ev +- od), *sc = \
 * 2^(k-2), *sc2 = 2^(-k-2) (k capped at KMAX: the term is below the \
 * last bit of the other there) */ \
ND_INLINE T nd_expk2_##S(T x, T *sc, T *sc2, T *od) \
{ \
    I k; \
    T ev = nd_em1eo_##S(nd_exprr_##S(x, &k), od); \
    *sc = nd_p2_##S(k - 2); \
    *sc2 = nd_p2_##S(-(k < KMAX ? k : KMAX) - 2); \
    return ev; \
} \
ND_INLINE T nd_expk_##S(T x, T *sc) \
{ \
    I k; \
    T e = nd_expr_##S(x, &k); \
    *sc = nd_p2_##S(k - 2); \
    return e; \
} \
/* exp: 2^k applied as two factors 2^floor(k/2) 2^(k - floor(k/2)), so a \
 * subnormal result is rounded once, in the last product, and the largest \
 * overflows there; the operand clamped to [LO, HI], where the products \
 * give 0 and inf; a NaN passes the compares and the arithmetic (no select \
 * spent on it). HI has k = 2 EMAX + 1: the last factor is 2^(EMAX + 1), \
 * inf from its bits, and the product inf with no flag (NumPy raises none \
 * for +inf; a finite operand that large is flagged by the kernel's \
 * nd_ckgt; below it, the product overflows with its flag). */ \
ND_INLINE T nd_exp_##S(T x, T lo, T hi) \
{ \
    I k; \
    T xc = __builtin_isless(x, lo) ? lo : x; \
    xc = __builtin_isgreater(xc, hi) ? hi : xc; \
    T e = nd_expr_##S(xc, &k), s1 = nd_p2_##S(k >> 1); \
    return FMA(s1, e, s1) * nd_p2_##S(k - (k >> 1)); \
}
ND_EXPK(double, d, uint64_t, int64_t, 0x1.8p52, 0x1.71547652b82fep+0, 0x1.62e4200000000p-1, 0x1.fdf473de6af28p-22,
        __builtin_fma, 1000)
/* sinh and cosh from e^|x| = 2^k (1 + ev + od) and e^-|x| = 2^-k (1 + ev -
 * od) at once (one reduction, one polynomial split by parity: no more
 * work than e^|x| alone): sinh = A + (C od + A ev), cosh = C + (C ev + A
 * od), A = 2^(k-1) - 2^(-k-1) and C = 2^(k-1) + 2^(-k-1) exact where the
 * second term counts (k up to 26, float 11), od itself at k = 0. No
 * division (glibc's sinh (t + t / (t + 1)) / 2 and cosh e/2 + 1/(2e)
 * ran 0.82x and 0.75x NumPy's loops, vdivpd the largest part); within 2
 * ULP of NumPy's, as before. |x| capped at CAP (sinh and cosh overflow
 * just below it: the last doubling gives inf and "overflow" there, and
 * not earlier; an infinite operand's last factor is inf, not 2: inf
 * quietly, as NumPy's);
 * a NaN passes the cap and the arithmetic. tanh = t / (t +
 * 2), t = expm1(2|x|), |x| capped at TCAP (tanh rounds to 1; the cap by
 * nd_tsel: its ?: left the loop scalar on AVX2, 3-6x slower). x itself
 * below TINY. float32's by the same forms in float (16 lanes): SLEEF's
 * 3.5-ULP sinhf/coshf/tanhf ran 1.5-1.8x slower than NumPy's loops
 * (float32 tanh with AVX-512: nd_zvf_tanhv, a table of polynomials). */
#define ND_HYP(T, S, F, CAP, TINY, FMA, FABS, COPYSIGN) \
/* |x| capped at CAP, a NaN passed (quietly through the arithmetic) */ \
ND_INLINE T nd_hypc_##S(T ax) { return nd_bsel_##S(nd_inrange_##S(ax, CAP, (T)INFINITY), CAP, ax); } \
ND_INLINE T nd_sinh##F(T x) \
{ \
    T ax = FABS(x), sc, sc2, od; \
    T ev = nd_expk2_##S(nd_hypc_##S(ax), &sc, &sc2, &od); \
    T a = sc - sc2; \
    T r = COPYSIGN(nd_bsel_##S(ax == (T)INFINITY, ax, (T)2) * (a + FMA(sc + sc2, od, a * ev)), x); \
    return nd_tsel_##S(nd_inrange_##S(ax, TINY, (T)INFINITY), r, x); \
} \
ND_INLINE T nd_cosh##F(T x) \
{ \
    T ax = FABS(x), sc, sc2, od; \
    T ev = nd_expk2_##S(nd_hypc_##S(ax), &sc, &sc2, &od); \
    T c = sc + sc2; \
    return nd_bsel_##S(ax == (T)INFINITY, ax, (T)2) * (c + FMA(c, ev, (sc - sc2) * od)); \
}
#define ND_TANH(T, S, F, TINY, TCAP, FMA, FABS, COPYSIGN) \
ND_INLINE T nd_tanh##F(T x) \
{ \
    T ax = FABS(x), sc; \
    T e = nd_expk_##S(2 * nd_bsel_##S(nd_inrange_##S(ax, TCAP, (T)INFINITY), TCAP, ax), &sc); \
    T t = 4 * FMA(sc, e, sc - (T)0.25); \
    T r = COPYSIGN(t / (t + (T)2), x); \
    return nd_tsel_##S(nd_inrange_##S(ax, TINY, (T)INFINITY), r, x); \
}
#if ND_ZV
ND_HYP(double, d, , 710.5, 0x1p-28, __builtin_fma, __builtin_fabs, __builtin_copysign)
ND_TANH(double, d, , 0x1p-28, 22.0, __builtin_fma, __builtin_fabs, __builtin_copysign)
#endif   /* elsewhere float64 sinh, cosh, tanh: nd_vm64_trig.h */
/* exp of float64 (nd_exp_d): SLEEF's 1-ULP exp ran 1.3x slower than
 * NumPy's SVML loop (a call per vector and its own range handling); this
 * is within 1 ULP of NumPy's (tests/test_codegen_libm.py). With AVX-512
 * numdyn's own nd_zv_exp8 (session 23: 0.86x -> 1.0x NumPy's loop alone,
 * and faster in fused loops too, call and all: exp((x - m) s) w + ...
 * 1.43 -> 1.09 ns an element; session 20's form of it had exp2's Taylor
 * polynomial and two more operations in the reduction, and measured no
 * faster than this form) */
#if ND_ZV
ND_INLINE double nd_exp(double x) { ND_ZV_KEEP(nd_zv_exp) return nd_zv_exp(x); }
#else
ND_INLINE double nd_exp(double x) { return nd_exp_d(x, -746.0, 1418.9); }   /* k = 2047 */
#endif
/* fdlibm's log of a positive finite x (subnormals scaled by 2^54): x =
 * 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f);
 * log(m) = f - hfsq + s (hfsq + R(s^2)), hfsq = f^2 / 2. Returns k as
 * a double, sets *kp to k and *f, *hfsq and *sr = s (hfsq + R). */
ND_INLINE double nd_logm_d(double x, int64_t *kp, double *f, double *hfsq, double *sr)
{
    int sub = x < 0x1p-1022;
    uint64_t ix = nd_d2b(x * nd_bsel_d(sub, 0x1p54, 1.0));
    uint64_t tmp = ix - 0x3fe6a09e667f3bcdull;
    int64_t k = ((int64_t)tmp >> 52) - 54 * (int64_t)sub;
    double fm = nd_b2d(ix - (tmp & (0xfffull << 52))) - 1.0;
    double s = fm / (2.0 + fm), z = s * s, w = z * z;
    double t1 = w * __builtin_fma(w, __builtin_fma(w, 1.531383769920937332e-01, 2.222219843214978396e-01),
                                  3.999999999940941908e-01);
    double t2 = z * __builtin_fma(w, __builtin_fma(w, __builtin_fma(w, 1.479819860511658591e-01, 1.818357216161805012e-01),
                                                   2.857142874366239149e-01), 6.666666666666735130e-01);
    *f = fm;
    *hfsq = 0.5 * fm * fm;
    *sr = s * (*hfsq + (t1 + t2));
    *kp = k;
    /* k as a double from the bits of 1.5 2^52 + k: no int64 conversion,
     * which AVX2 lacks (the loop would stay scalar there) */
    return nd_b2d(nd_d2b(0x1.8p52) + (uint64_t)k) - 0x1.8p52;
}
/* log1p(y) for y >= 0 finite (arcsinh, arccosh, arctanh; with AVX-512
 * numdyn's vector log1p above): log(u), u = 1 +
 * y, plus the rounding error of u, c / u (fdlibm's log1p); 1/u = 2^-k / m
 * to 4 bits is enough for that correction, so it costs no division */
ND_INLINE double nd_log1p_pos_d(double y)
{
#if ND_ZV
    ND_ZV_KEEP(nd_zv_log1p)
    return nd_zv_log1p(y);
#else
    double u = 1.0 + y, f, hfsq, sr;
    int64_t k;
    double kd = nd_logm_d(u, &k, &f, &hfsq, &sr);
    double c = nd_bsel_d(kd > 0, 1.0 - (u - y), y - (u - 1.0));
    c = c * (1.0 - f + f * f - f * f * f) * nd_p2_d(-(k < 1000 ? k : 1000));
    double r = kd * 0x1.62e4200000000p-1 - ((hfsq - (sr + (kd * 0x1.fdf473de6af28p-22 + c))) - f);
    return nd_bsel_d(__builtin_isless(y, 0x1p-54), y, r);
#endif
}
#define ND_VM64_PART 2
#include "nd_vm64.h"
#undef ND_VM64_PART
#include "nd_vm64_trig.h"
/* ------------------------------------ numdyn's own float32 vector math */
/* expm1, arcsinh, arccosh, arctanh and cbrt of float32 by the same forms
 * in float (16 lanes of AVX-512): SLEEF's float versions ran 1.5-4x
 * slower than NumPy's loops. expm1 has a degree-8 polynomial; the inverse
 * hyperbolics take nd_log1p_pos_f (a polynomial log core without the
 * division of fdlibm's, which made an earlier core of theirs slower than
 * SLEEF's logf); cbrt two Newton steps. */
/* expm1(r) for |r| <= ln2 / 2: r + r^2 P(r), P of degree 4 near-minimax
 * (error 7e-8 in P, 2^-27 of the result; the Taylor one was of degree 6) */
ND_INLINE float nd_em1p_f(float r)
{
    float p = 0x1.6d110ap-10f;
    p = __builtin_fmaf(p, r, 0x1.120b6ep-7f); p = __builtin_fmaf(p, r, 0x1.55551ap-5f);
    p = __builtin_fmaf(p, r, 0x1.5554dcp-3f); p = __builtin_fmaf(p, r, 0.5f);
    return __builtin_fmaf(r * r, p, r);
}
ND_INLINE float nd_em1eo_f(float r, float *od)
{
    float s = r * r;
    float e = __builtin_fmaf(__builtin_fmaf(0x1.6d110ap-10f, s, 0x1.55551ap-5f), s, 0.5f);
    *od = __builtin_fmaf(r, s * __builtin_fmaf(0x1.120b6ep-7f, s, 0x1.5554dcp-3f), r);
    return s * e;
}
ND_EXPK(float, f, uint32_t, int32_t, 0x1.8p23f, 0x1.715476p+0f, 0x1.62ep-1f, 0x1.0bfbe8p-15f, __builtin_fmaf, 100)
/* (nd_sinhf, nd_coshf: nd_vm32.h, over these where the target has no AVX-512) */
ND_HYP(float, f, f_c, 89.5f, 0x1p-12f, __builtin_fmaf, __builtin_fabsf, __builtin_copysignf)
#if ND_ZV
/* float32 tanh: numdyn's AVX-512 function (nd_zvf_tanhv); the exp form
 * above for the other targets */
ND_INLINE float nd_tanhf(float x) { ND_ZV_KEEP(nd_zvf_tanh) return nd_zvf_tanh(x); }
#else
ND_TANH(float, f, f, 0x1p-12f, 10.0f, __builtin_fmaf, __builtin_fabsf, __builtin_copysignf)
#endif
/* log1p(y) of float32 for y >= 0 finite (the inverse hyperbolics), inline:
 * u = 1 + y = 2^k (1 + f), f in [sqrt(1/2) - 1, sqrt(2) - 1), corrected by
 * the rounding error of u, f' = f + c 2^-k; log(1 + f') = f' - f'^2/2 +
 * f'^3 P(f'), P of degree 7 near-minimax (weighted Chebyshev fit, 0.12
 * ULP). No division and no call: over SLEEF's logf (a call per vector) and
 * Kahan's division the float32 inverse hyperbolics ran 1.4-1.8x slower
 * than NumPy's loops. y = 0 gives +0 (their callers take x itself there). */
ND_INLINE float nd_log1p_pos_f(float y)
{
    float u = 1.0f + y;
    uint32_t ix = nd_f2b(u), tmp = ix - 0x3f3504f3u;
    int32_t k = (int32_t)tmp >> 23;
    float c = nd_tsel_f(k > 0, 1.0f - (u - y), y - (u - 1.0f));
    float f = __builtin_fmaf(c, nd_p2_f(-(k < 126 ? k : 126)), nd_b2f(ix - (tmp & 0xff800000u)) - 1.0f);
    float p = -0x1.2d9544p-4f;
    p = __builtin_fmaf(p, f, 0x1.0276dcp-3f); p = __builtin_fmaf(p, f, -0x1.0e610cp-3f);
    p = __builtin_fmaf(p, f, 0x1.235f0ep-3f); p = __builtin_fmaf(p, f, -0x1.5467dap-3f);
    p = __builtin_fmaf(p, f, 0x1.9998b0p-3f); p = __builtin_fmaf(p, f, -0x1.00023cp-2f);
    p = __builtin_fmaf(p, f, 0x1.555564p-2f);
    float f2 = f * f, lm = f - __builtin_fmaf(f2, 0.5f, -(f2 * f) * p);
    float kd = (float)k;
    return __builtin_fmaf(kd, 0x1.62e430p-1f, __builtin_fmaf(kd, -0x1.05c610p-29f, lm));
}
/* exp of float32 by float64's form: 1.2x faster than SLEEF's expf */
ND_INLINE float nd_expf(float x) { return nd_exp_f(x, -104.0f, 176.7f); }   /* k = 255 */
/* cbrt: y ~ |x|^(-1/3) from the bits (their high 32 / 3, 5 bits: the
 * seeds), ITERS Newton steps y (4/3 - |x|/3 y^3) (no division; 5 -> 10
 * -> 20 -> 40 bits), c = |x| y^2, and one last step from c's exact
 * residual c^3 - |x| (fma), which doubles the bits again.
 * Subnormals are scaled up, values near the top down (y^3 would
 * underflow), by powers of 2^3. Within 1 (float64) / 2 (float32) ULP of
 * NumPy's. */
/* the bits / 3 in floating point: an exact integer division became
 * 64-bit multiplies (vpmullq, 3 uops each; float lanes widened to two
 * vectors of them), 1/4 of float32 cbrt's loop. The seed needs ~5 bits;
 * a float holds the bits to 2^-24. The high word of a double becomes a
 * double through 2^52's bits (no int64 conversion, which AVX2 lacks). */
ND_INLINE double nd_cbrt_seed_d(double a)
{
    double hi = nd_b2d(0x4330000000000000ull | (nd_d2b(a) >> 32)) - 0x1p52;
    uint64_t q = nd_d2b(__builtin_fma(hi, 1.0 / 3, 0x1p52)) - 0x4330000000000000ull;
    return nd_b2d((0x553ee800ull - q) << 32);
}
ND_INLINE float nd_cbrt_seed_f(float a)
{
    return nd_b2f(0x54a1f600u - (uint32_t)(int32_t)((float)(int32_t)nd_f2b(a) * (1.0f / 3)));
}

/* Operands below MINN are scaled up by SUBUP (a cube) first: the error
 * term c2e * c is ~2^-53 of the operand and underflowed ("underflow" that
 * NumPy's cbrt does not raise) for operands below ~2^-969, normal ones
 * included; MINN 2^-600 keeps every product normal. */
#define ND_CBRT(T, S, F, ITERS, MINN, SUBUP, SUBDN, BIG, BIGDN, BIGUP, FMA, FABS, COPYSIGN) \
ND_INLINE T nd_cbrt##F(T x) \
{ \
    T ax = FABS(x); \
    int sub = ax < MINN, big = ax > BIG, fin = (ax < (T)INFINITY) & (ax != 0); \
    T as = nd_bsel_##S(fin, ax * nd_bsel_##S(sub, SUBUP, nd_bsel_##S(big, BIGDN, (T)1)), (T)1); \
    T y = nd_cbrt_seed_##S(as); \
    T a3 = as * ((T)1 / 3); \
    for (int i = 0; i < ITERS; i++) \
        y = y * FMA(-a3, y * y * y, (T)4 / 3); \
    T c = as * y * y; \
    T c2 = c * c, c2e = FMA(c, c, -c2); \
    T d = FMA(c2, c, -as) + c2e * c; \
    c = FMA(-d, y * y * ((T)1 / 3), c) * nd_bsel_##S(sub, SUBDN, nd_bsel_##S(big, BIGUP, (T)1)); \
    return nd_bsel_##S(fin, COPYSIGN(c, x), x); \
}
#if ND_ZV
/* float64: numdyn's AVX-512 function (nd_zv_cbrt8) */
ND_CBRT(double, d, _c, 3, 0x1p-600, 0x1p600, 0x1p-200, 0x1p900, 0x1p-900, 0x1p300,
        __builtin_fma, __builtin_fabs, __builtin_copysign)
ND_INLINE double nd_cbrt(double x) { ND_ZV_KEEP(nd_zv_cbrt) return nd_zv_cbrt(x); }
#else
ND_CBRT(double, d, , 3, 0x1p-600, 0x1p600, 0x1p-200, 0x1p900, 0x1p-900, 0x1p300,
        __builtin_fma, __builtin_fabs, __builtin_copysign)
#endif
/* float32: nd_vm32.h (its AVX-512 function, this C form elsewhere) */
ND_CBRT(float, f, f_c, 2, 0x1p-60f, 0x1p60f, 0x1p-20f, 0x1p96f, 0x1p-96f, 0x1p32f,
        __builtin_fmaf, __builtin_fabsf, __builtin_copysignf)

/* expm1 = 2^k e + (2^k - 1), e = expm1(r), with one rounding (2^k - 1 is
 * exact for the k below the dtype's digits); x capped at HI, just past
 * the overflow, where the last product gives inf and "overflow" (+inf
 * quietly: its factor is inf, not 4); x itself
 * below TINY (the sign of zero, subnormals) and NaN */
#define ND_EXPM1(T, S, F, LO, HI, TINY, FABS) \
ND_INLINE T nd_expm1##F(T x) \
{ \
    T xc = __builtin_isless(x, LO) ? LO : x, sc; \
    T e = nd_expk_##S(__builtin_isgreater(xc, HI) ? HI : xc, &sc); \
    T r = nd_bsel_##S(x == (T)INFINITY, x, (T)4) * ND_FMA_##S(sc, e, sc - (T)0.25); \
    return nd_tsel_##S(!__builtin_isgreaterequal(FABS(x), TINY), x + x * (T)0, r); \
}
#define ND_FMA_d __builtin_fma
#define ND_FMA_f __builtin_fmaf
ND_EXPM1(double, d, , -45.0, 709.79, 0x1p-54, __builtin_fabs)
#if ND_ZV
/* float32 expm1: numdyn's AVX-512 function (nd_zvf_expm1v) */
ND_INLINE float nd_expm1f(float x) { ND_ZV_KEEP(nd_zvf_expm1) return nd_zvf_expm1(x); }
#else
ND_EXPM1(float, f, f, -18.0f, 88.73f, 0x1p-25f, __builtin_fabsf)
#endif
/* arcsinh |x| = log1p(|x| + x^2 / (1 + sqrt(1 + x^2))) (exact in reals;
 * 2|x| - 1 for the sum above BIG, log1p(|x|) + ln2 above HUGE where the
 * square would overflow, and 2|x| too: computed on 1 there, as it raised
 * "overflow" and NumPy reran the graph), x itself below TINY; arccosh x = log1p(t +
 * sqrt(2t + t^2)), t = x - 1 (exact below 2); arctanh |x| = log1p(2|x| /
 * (1 - |x|)) / 2, +-1 giving +-inf with "divide", |x| > 1 nan with
 * "invalid", as NumPy. LOG1P takes y >= 0 finite. arccosh and arctanh
 * compare a NaN operand made 1 (0) first: GCC vectorizes < and > (even
 * __builtin_isless) as signaling compares, and the "invalid" a NaN lane
 * raised had NumPy rerun the whole graph for an array holding a NaN
 * (counter errstate_reruns); == and != compare quietly. */
#define ND_INVHYP(T, S, F, LOG1P, BIG, HUGE, TINY, LN2, FABS, SQRT, COPYSIGN, ASINH, ACOSH, ATANH) \
ND_INLINE T ASINH(T x) \
{ \
    T ax = FABS(x); \
    int big = ax > BIG, huge = ax > HUGE, tiny = !__builtin_isgreaterequal(ax, TINY); \
    T a = nd_bsel_##S(big | tiny, (T)1, ax); \
    T t = a + a * a / ((T)1 + SQRT((T)1 + a * a)); \
    T arg = nd_bsel_##S(huge, nd_bsel_##S(ax == (T)INFINITY, HUGE, ax), \
                        nd_bsel_##S(big, 2 * nd_bsel_##S(huge, (T)1, ax) - (T)1, t)); \
    T r = LOG1P(arg) + nd_bsel_##S(huge, LN2, (T)0); \
    r = COPYSIGN(nd_bsel_##S(ax == (T)INFINITY, ax, r), x); \
    return nd_bsel_##S(tiny, x, r); \
} \
ND_INLINE T ACOSH(T x0) \
{ \
    T x = nd_bsel_##S(x0 == x0, x0, (T)1); \
    int big = x > BIG, huge = x > HUGE, bad = x < (T)1; \
    T t = nd_bsel_##S(big | bad, (T)1, x) - (T)1; \
    T arg = nd_bsel_##S(huge, nd_bsel_##S(x == (T)INFINITY, HUGE, x), \
                        nd_bsel_##S(big, 2 * nd_bsel_##S(huge, (T)1, x) - (T)1, t + SQRT(2 * t + t * t))); \
    T r = LOG1P(arg) + nd_bsel_##S(huge, LN2, (T)0); \
    r = nd_bsel_##S(x == (T)INFINITY, x, r); \
    r = nd_bsel_##S(bad, nd_nan_where_##S(bad), r); \
    return nd_bsel_##S(x0 != x0, x0, r); \
} \
ND_INLINE T ATANH(T x) \
{ \
    T ax = nd_bsel_##S(x == x, FABS(x), (T)0); \
    int tiny = !__builtin_isgreaterequal(ax, TINY), in = ax < (T)1; \
    T a = nd_bsel_##S(in & !tiny, ax, (T)0.5); \
    T r = COPYSIGN((T)0.5 * LOG1P(2 * a / ((T)1 - a)), x); \
    T one = nd_bsel_##S(ax == (T)1, (T)1, (T)0); \
    r = nd_bsel_##S(ax == (T)1, COPYSIGN(one / ((T)1 - one), x), r); \
    r = nd_bsel_##S(ax > (T)1, nd_nan_where_##S(ax > (T)1), r); \
    return nd_bsel_##S(tiny, x, r); \
}
#if ND_ZV
/* float64: numdyn's AVX-512 functions (nd_zv_asinhv, nd_zv_acoshv,
 * nd_zv_atanhv: no division, no vsqrtpd) */
ND_INVHYP(double, d, , nd_log1p_pos_d, 0x1p28, 0x1p1000, 0x1p-28, ND_LN2_D,
          __builtin_fabs, __builtin_sqrt, __builtin_copysign, nd_asinh_c, nd_acosh_c, nd_atanh_c)
ND_INLINE double nd_asinh(double x) { ND_ZV_KEEP(nd_zv_asinh) return nd_zv_asinh(x); }
ND_INLINE double nd_acosh(double x) { ND_ZV_KEEP(nd_zv_acosh) return nd_zv_acosh(x); }
ND_INLINE double nd_atanh(double x) { ND_ZV_KEEP(nd_zv_atanh) return nd_zv_atanh(x); }
#else
ND_INVHYP(double, d, , nd_log1p_pos_d, 0x1p28, 0x1p1000, 0x1p-28, ND_LN2_D,
          __builtin_fabs, __builtin_sqrt, __builtin_copysign, nd_asinh, nd_acosh, nd_atanh)
#endif
#if ND_ZV
/* float32: numdyn's AVX-512 functions (nd_zvf_asinhv, nd_zvf_acoshv,
 * nd_zvf_atanhv) */
ND_INVHYP(float, f, f, nd_log1p_pos_f, 0x1p12f, 0x1p100f, 0x1p-12f, 0x1.62e430p-1f,
          __builtin_fabsf, __builtin_sqrtf, __builtin_copysignf, nd_asinhf_c, nd_acoshf_c, nd_atanhf_c)
/* (nd_asinhf, nd_acoshf, nd_atanhf: nd_vm32.h's AVX-512 functions) */
#else
ND_INVHYP(float, f, f, nd_log1p_pos_f, 0x1p12f, 0x1p100f, 0x1p-12f, 0x1.62e430p-1f,
          __builtin_fabsf, __builtin_sqrtf, __builtin_copysignf, nd_asinhf_c, nd_acoshf, nd_atanhf)
#endif
/* numdyn's own float32 log2, log10 (AVX-512 and C forms) */
#include "nd_vm32.h"

/* np.logaddexp / logaddexp2 in vector lanes: NumPy's npy_logaddexp with
 * SLEEF's exp/exp2 and log1p (1 ULP of glibc's), both arms computed and
 * one selected (nd_tsel: with a plain ?: GCC kept control flow in the loop
 * on AVX2, scalar, 2.5-5x slower). x == y (equal infinities among them) never subtracts: no
 * "invalid" from inf - inf, as in NumPy; a NaN operand compares as NumPy's
 * does (t > 0 signals invalid there too) and gives t. */
#define ND_LOGADDEXP_V(T, S, EXPF, EXP2F, L1P) \
ND_INLINE T nd_logaddexp_##S(T x, T y) \
{ \
    int same = x == y; \
    T xs = nd_tsel_##S(same, (T)0, x), ys = nd_tsel_##S(same, (T)0, y), t = xs - ys; \
    int pos = t > 0; \
    T r = nd_tsel_##S(pos, xs, ys) + L1P(EXPF(nd_tsel_##S(pos, -t, t))); \
    r = nd_bsel_##S(t != t, t, r); \
    return nd_bsel_##S(same, x + (T)ND_LOGE2, r); \
} \
ND_INLINE T nd_logaddexp2_##S(T x, T y) \
{ \
    int same = x == y; \
    T xs = nd_tsel_##S(same, (T)0, x), ys = nd_tsel_##S(same, (T)0, y), t = xs - ys; \
    int pos = t > 0; \
    T r = nd_tsel_##S(pos, xs, ys) + (T)ND_LOG2E * L1P(EXP2F(nd_tsel_##S(pos, -t, t))); \
    r = nd_bsel_##S(t != t, t, r); \
    return nd_bsel_##S(same, x + (T)1, r); \
}
ND_LOGADDEXP_V(double, d, nd_exp, nd_exp2, nd_log1p)
/* float32's log1p over SLEEF's 1-ULP logf: near cancellation (x ~ -y, a
 * result near 0) the 3.5-ULP one's error (of a log1p near 0.5) left the
 * result 1.2e-7 off the exact value, twice NumPy's own error there. (In
 * double, rounded once, it was exact but the mixed-width loop stayed
 * scalar: 12x slower.) */
ND_SLEEF_RANGE(float, f, f_u10, nd_v_logf)
ND_LOGADDEXP_V(float, f, nd_expf, nd_exp2f, nd_log1pf_u10)

/* signbit from the bits: GCC 12 fails (ICE) vectorizing signbit() with AVX-512 */
ND_INLINE nd_bool nd_signbit_f(float x) { uint32_t b; memcpy(&b, &x, 4); return (nd_bool)(b >> 31); }
ND_INLINE nd_bool nd_signbit_d(double x) { uint64_t b; memcpy(&b, &x, 8); return (nd_bool)(b >> 63); }

/* ------------------------------------------- float -> int conversions */
#define ND_F2I_FN ND_INLINE
#include "nd_f2i.h"

/* ------------------------------------------------- integer helpers */
#define ND_INT_HELPERS(T, UT, S, TMIN, SIGNED) \
ND_INLINE T nd_fdiv_##S(T a, T b, int *e) \
{ \
    if (b == 0) { *e |= ND_ERR_DIVZERO; return 0; } \
    if (SIGNED && a == TMIN && b == (T)-1) { *e |= ND_ERR_OVERFLOW; return TMIN; } \
    T q = a / b; \
    if (SIGNED && ((a > 0) != (b > 0)) && (T)(q * b) != a) q--; \
    return q; \
} \
ND_INLINE T nd_ifmod_##S(T a, T b, int *e) \
{ \
    if (b == 0) { *e |= ND_ERR_DIVZERO; return 0; } \
    if (SIGNED && a == TMIN && b == (T)-1) return 0; \
    return a % b; \
} \
ND_INLINE T nd_irem_##S(T a, T b, int *e) \
{ \
    T r = nd_ifmod_##S(a, b, e); \
    if (SIGNED && r != 0 && ((r < 0) != (b < 0))) r += b; \
    return r; \
} \
ND_INLINE T nd_ipow_##S(T a, T b, int *e) \
{ \
    if (SIGNED && b < 0) { *e |= ND_ERR_NEGPOW; return 0; } \
    UT r = 1, x = (UT)a; \
    uint64_t n = (uint64_t)b; \
    while (n) { if (n & 1) r *= x; x *= x; n >>= 1; } \
    return (T)r; \
} \
ND_INLINE T nd_lshift_##S(T a, T b) \
{ return ((uint64_t)b < sizeof(T) * 8) ? (T)((UT)a << b) : (T)0; } \
ND_INLINE T nd_rshift_##S(T a, T b) \
{ \
    if ((uint64_t)b < sizeof(T) * 8) return (T)(a >> b); \
    return (SIGNED && a < 0) ? (T)-1 : (T)0; \
} \
ND_INLINE T nd_iabs_##S(T a) { return (SIGNED && a < 0) ? (T)(0 - (UT)a) : a; } \
/* NumPy's scalar math (a Python operator on NumPy scalars, graph.h \
 * ND_F_SCALAR_MATH): the wrapped result, and ND_ERR_OVERFLOW when it wraps */ \
ND_INLINE T nd_oadd_##S(T a, T b, int *e) \
{ T r; if (__builtin_add_overflow(a, b, &r)) *e |= ND_ERR_OVERFLOW; return r; } \
ND_INLINE T nd_osub_##S(T a, T b, int *e) \
{ T r; if (__builtin_sub_overflow(a, b, &r)) *e |= ND_ERR_OVERFLOW; return r; } \
ND_INLINE T nd_omul_##S(T a, T b, int *e) \
{ T r; if (__builtin_mul_overflow(a, b, &r)) *e |= ND_ERR_OVERFLOW; return r; } \
ND_INLINE T nd_oneg_##S(T a, int *e) \
{ if (SIGNED ? a == (T)TMIN : a != 0) *e |= ND_ERR_OVERFLOW; return (T)((UT)0 - (UT)a); } \
ND_INLINE T nd_oabs_##S(T a, int *e) \
{ if (SIGNED && a == (T)TMIN) *e |= ND_ERR_OVERFLOW; return nd_iabs_##S(a); } \
ND_INLINE T nd_gcd_##S(T a, T b) \
{ \
    UT x = (UT)nd_iabs_##S(a), y = (UT)nd_iabs_##S(b); \
    while (y) { UT t = x % y; x = y; y = t; } \
    return (T)x; \
} \
ND_INLINE T nd_lcm_##S(T a, T b) \
{ \
    T g = nd_gcd_##S(a, b); \
    if (!g) return 0; \
    return (T)((UT)nd_iabs_##S(a) / (UT)g * (UT)nd_iabs_##S(b)); \
} \
ND_INLINE T nd_isign_##S(T a) { return a > 0 ? (T)1 : (SIGNED && a < 0) ? (T)-1 : (T)0; } \
ND_INLINE uint8_t nd_popcnt_##S(T a) \
{ return (uint8_t)__builtin_popcountll((uint64_t)(UT)nd_iabs_##S(a)); }
ND_INT_HELPERS(int8_t, uint8_t, i8, INT8_MIN, 1)
ND_INT_HELPERS(int16_t, uint16_t, i16, INT16_MIN, 1)
ND_INT_HELPERS(int32_t, uint32_t, i32, INT32_MIN, 1)
ND_INT_HELPERS(int64_t, uint64_t, i64, INT64_MIN, 1)
ND_INT_HELPERS(uint8_t, uint8_t, u8, 0, 0)
ND_INT_HELPERS(uint16_t, uint16_t, u16, 0, 0)
ND_INT_HELPERS(uint32_t, uint32_t, u32, 0, 0)
ND_INT_HELPERS(uint64_t, uint64_t, u64, 0, 0)

/* ------------------------------------------------------------ complex */
/* NumPy multiplies complex numbers naively (no C99 Annex G recovery of
 * infinities) and divides with Smith's algorithm; C's `*` and `/` on
 * _Complex would call __muldc3/__divdc3. On hosts with FMA, NumPy's SIMD
 * array loops for the multiply and square ufuncs (not its reductions, nor
 * power) fuse one product of each part (nd_cmul_fused):
 * re = fma(ar, br, -(ai*bi)), im = fma(ar, bi, ai*br) -- visible where the
 * parts cancel, e.g. square(1e30+1e30j).real is -8.8e43, not 0. */
#ifdef __FMA__
#define ND_CMUL_PART(FMA, a, b, c) FMA((a), (b), (c))
#else
#define ND_CMUL_PART(FMA, a, b, c) ((a) * (b) + (c))
#endif
#define ND_COMPLEX_HELPERS(CT, T, IT, S, FABS, HYPOT, CPOW, FMA) \
ND_INLINE CT nd_cmk_##S(T re, T im) { CT z; __real__ z = re; __imag__ z = im; return z; } \
/* an element loaded and stored as its two parts: GCC vectorizes a strided \
 * _Complex access only so (an interleaved pair of real loads, where it \
 * gives up on REALPART_EXPR of a strided complex reference). The \
 * representation is C's: an array of two T (C11 6.2.5p13). */ \
ND_INLINE CT nd_cld_##S(const CT *p) \
{ const T *q = (const T *)(const void *)p; return nd_cmk_##S(q[0], q[1]); } \
ND_INLINE void nd_cst_##S(CT *p, CT v) \
{ T *q = (T *)(void *)p; q[0] = __real__ v; q[1] = __imag__ v; } \
ND_INLINE CT nd_cmul_##S(CT a, CT b) \
{ \
    T ar = __real__ a, ai = __imag__ a, br = __real__ b, bi = __imag__ b; \
    return nd_cmk_##S(ar * br - ai * bi, ar * bi + ai * br); \
} \
ND_INLINE CT nd_cmul_fused_##S(CT a, CT b) \
{ \
    T ar = __real__ a, ai = __imag__ a, br = __real__ b, bi = __imag__ b; \
    return nd_cmk_##S(ND_CMUL_PART(FMA, ar, br, -(ai * bi)), \
                      ND_CMUL_PART(FMA, ar, bi, ai * br)); \
} \
/* a if c else b, by the bits: GCC cannot turn it into a branch (it sinks \
 * the operands of a ?: with a loop-invariant condition -- a division by a \
 * scalar -- into arms, and a loop with a division in an arm stays scalar) */ \
ND_INLINE T nd_bsel_##S(int c, T a, T b) \
{ \
    IT x, y, m = -(IT)(c != 0); \
    memcpy(&x, &a, sizeof x); \
    memcpy(&y, &b, sizeof y); \
    x = (x & m) | (y & ~m); \
    memcpy(&a, &x, sizeof a); \
    return a; \
} \
/* NumPy's complex log (log2, log10) of 0 warns "divide by zero" (npy_clog \
 * divides -1 by 0 there): from the operand, as nd_ckat for real log, since \
 * a scalar log of 0 (a loop that does not vectorize, a reduction's) raises \
 * no flag of its own */ \
ND_INLINE CT nd_ckcl_##S(CT z, CT r, int *e) \
{ *e |= ((__real__ z == 0) & (__imag__ z == 0)) * ND_ERR_FPE_DIV; return r; } \
/* np.where of complex values: both arms computed on every lane, as NumPy \
 * does (np.where(z != 0, np.log(z), 0) warns "divide by zero" for a 0) */ \
ND_INLINE CT nd_wsel_##S(int c, CT a, CT b) \
{ return nd_cmk_##S(nd_bsel_##S(c, __real__ a, __real__ b), nd_bsel_##S(c, __imag__ a, __imag__ b)); } \
/* NumPy's Smith division, branch free: its two branches differ only in \
 * which parts pair up, so the operands are selected and one set of \
 * operations runs -- the same products, sums and divisions as NumPy's \
 * branch, to the bit -- and a loop of them vectorizes (with the branches \
 * a complex exp after it in the same loop stayed scalar: the DFT matrix \
 * exp(-2j pi k k^T / n) ran 3.5x slower than the exp alone). No division \
 * or product runs on an operand NumPy's branch would not use: a zero \
 * divisor's lanes divide by 1 and multiply 0, then take in1 / (+0) \
 * (NumPy's values and flags there); the other lanes divide by 1 for it. */ \
ND_INLINE CT nd_cdiv_##S(CT a, CT b) \
{ \
    T in1r = __real__ a, in1i = __imag__ a, in2r = __real__ b, in2i = __imag__ b; \
    T in2r_abs = FABS(in2r), in2i_abs = FABS(in2i); \
    int big = in2r_abs >= in2i_abs, zero = (in2r_abs == 0) & (in2i_abs == 0); \
    T num = nd_bsel_##S(big, in2i, in2r), den = nd_bsel_##S(big, in2r, in2i); \
    T rat = num / nd_bsel_##S(zero, (T)1, den); \
    T scl = (T)1.0 / nd_bsel_##S(zero, (T)1, den + num * rat); \
    T pr = nd_bsel_##S(zero, (T)0, in1r) * rat, pi = nd_bsel_##S(zero, (T)0, in1i) * rat; \
    T re = (nd_bsel_##S(big, in1r, in1i) + nd_bsel_##S(big, pi, pr)) * scl; \
    T im = (nd_bsel_##S(big, in1i, pi) - nd_bsel_##S(big, pr, in1r)) * scl; \
    T z0 = nd_bsel_##S(zero, (T)0, (T)1); \
    return nd_cmk_##S(nd_bsel_##S(zero, in1r / z0, re), nd_bsel_##S(zero, in1i / z0, im)); \
} \
/* np.absolute of a complex: NumPy's own loop (loops_unary_complex's SIMD \
 * cabsolute, which every x86-64/aarch64 build runs, strided or not): \
 * larger * sqrt(ratio * ratio + 1), the multiply-add fused where the host \
 * has FMA (NumPy's AVX2/AVX-512 targets) -- so |z| is NumPy's to the bit \
 * (libm's hypot differed in the last place on a third of the values: a \
 * threshold |z| <= 2 could then differ). The parts are ordered and the \
 * special values picked by integer compares of their bits (non-negative \
 * after FABS: the order of the bits is the order of the values, a NaN's \
 * above inf's) and blended by masks, no branch and no select of a \
 * constant before the division: without AVX-512 GCC would not if-convert \
 * those ("control flow in loop": one element at a time, |z| <= 2 over \
 * complex128 6x slower than NumPy), and a vector `<` of a NaN raises \
 * "invalid" (a signaling vcmpltpd) where NumPy's loop does not -- a NaN \
 * operand then reran the whole graph with NumPy. */ \
ND_INLINE T nd_cabs_##S(CT a) \
{ \
    T are = FABS(__real__ a), aim = FABS(__imag__ a); \
    IT br, bi, inf, nan_; \
    const T tinf = (T)INFINITY, tnan = (T)NAN; \
    memcpy(&br, &are, sizeof br); memcpy(&bi, &aim, sizeof bi); \
    memcpy(&inf, &tinf, sizeof inf); memcpy(&nan_, &tnan, sizeof nan_); \
    /* an infinite part makes |z| inf, else a NaN part makes it NaN */ \
    IT isinf_ = -(IT)((br == inf) | (bi == inf)), isnan_ = -(IT)((br > inf) | (bi > inf)); \
    IT special = (isinf_ & inf) | (~isinf_ & isnan_ & nan_); \
    br = (br & ~(isinf_ | isnan_)) | special; \
    bi = (bi & ~(isinf_ | isnan_)) | special; \
    IT gt = -(IT)(br > bi), bl = (br & gt) | (bi & ~gt), bs = (bi & gt) | (br & ~gt); \
    /* ratio 0 where larger is 0 (then smaller is 0) or smaller is inf \
     * (then both are): a division of safe operands in every lane */ \
    bs &= -(IT)(bs != inf); \
    T larger, num; \
    memcpy(&larger, &bl, sizeof larger); memcpy(&num, &bs, sizeof num); \
    T ratio = num / (larger + (T)(larger == 0)); \
    return _Generic(ratio, float: sqrtf, default: sqrt)(ND_CMUL_PART(FMA, ratio, ratio, (T)1)) * larger; \
} \
ND_INLINE int nd_clt_##S(CT a, CT b) \
{ \
    T ar = __real__ a, ai = __imag__ a, br = __real__ b, bi = __imag__ b; \
    return (ar < br && ai == ai && bi == bi) || (ar == br && ai < bi); \
} \
ND_INLINE int nd_cle_##S(CT a, CT b) \
{ \
    T ar = __real__ a, ai = __imag__ a, br = __real__ b, bi = __imag__ b; \
    return (ar < br && ai == ai && bi == bi) || (ar == br && ai <= bi); \
} \
ND_INLINE int nd_cisnan_##S(CT a) { return __real__ a != __real__ a || __imag__ a != __imag__ a; } \
ND_INLINE CT nd_cmax_##S(CT a, CT b) \
{ return (nd_cisnan_##S(a) || nd_cle_##S(b, a)) ? a : b; } \
ND_INLINE CT nd_cmin_##S(CT a, CT b) \
{ return (nd_cisnan_##S(a) || nd_cle_##S(a, b)) ? a : b; } \
ND_INLINE CT nd_cfmax_##S(CT a, CT b) \
{ return (nd_cisnan_##S(b) || nd_cle_##S(b, a)) ? a : b; } \
ND_INLINE CT nd_cfmin_##S(CT a, CT b) \
{ return (nd_cisnan_##S(b) || nd_cle_##S(a, b)) ? a : b; } \
ND_INLINE CT nd_csign_##S(CT a) \
{ \
    T ab = HYPOT(__real__ a, __imag__ a); /* NumPy's npy_cabs */ \
    if (ab == 0) return nd_cmk_##S(0, 0); \
    if (ab != ab) return nd_cmk_##S((T)NAN, (T)NAN); \
    if (isinf(ab)) { \
        T r = __real__ a, i = __imag__ a; \
        if (isinf(r) && isinf(i)) return nd_cmk_##S((T)NAN, (T)NAN); \
        return nd_cmk_##S(isinf(r) ? (r > 0 ? 1 : -1) : 0, isinf(i) ? (i > 0 ? 1 : -1) : 0); \
    } \
    return nd_cmk_##S(__real__ a / ab, __imag__ a / ab); \
} \
ND_INLINE CT nd_cpow_##S(CT a, CT b) \
{ \
    T br = __real__ b, bi = __imag__ b, ar = __real__ a, ai = __imag__ a; \
    if (br == 0 && bi == 0) return nd_cmk_##S(1, 0); \
    if (ar == 0 && ai == 0) { \
        if (br > 0) return nd_cmk_##S(0, 0); \
        /* NumPy's npy_cpow raises "invalid" there (inf - inf) */ \
        volatile T inf = (T)INFINITY; \
        inf -= (T)INFINITY; \
        return nd_cmk_##S((T)NAN, (T)NAN); \
    } \
    if (bi == 0 && br > -100 && br < 100 && br == (T)(int64_t)br) { \
        int64_t n = (int64_t)br, m = n < 0 ? -n : n; \
        /* NumPy multiplies out n = 1, 2, 3 directly: starting from 1 * a \
         * would make an infinite part's 0 * inf a nan */ \
        if (n == 1) return a; \
        if (n == 2) return nd_cmul_##S(a, a); \
        if (n == 3) return nd_cmul_##S(a, nd_cmul_##S(a, a)); \
        CT r = nd_cmk_##S(1, 0), x = a; \
        while (m) { if (m & 1) r = nd_cmul_##S(r, x); x = nd_cmul_##S(x, x); m >>= 1; } \
        return n < 0 ? nd_cdiv_##S(nd_cmk_##S(1, 0), r) : r; \
    } \
    return CPOW(a, b); \
}
ND_COMPLEX_HELPERS(nd_c128, double, int64_t, cd, fabs, hypot, cpow, fma)
ND_COMPLEX_HELPERS(nd_c64, float, int32_t, cf, fabsf, hypotf, cpowf, fmaf)

/* ------------------------------------ complex transcendentals (vector) */
/* NumPy's complex exp, log, sqrt, sin, cos, tan, sinh, cosh, tanh are C99's
 * (glibc's: Annex G special values, glibc's overflow scaling). These give
 * the same from SLEEF's real vector functions, so loops over complex data
 * vectorize: every SLEEF call runs unconditionally and special cases are
 * chosen with branch-free selects -- GCC sinks a call that feeds only one
 * arm of ?: into that arm, where it cannot call a vector variant. complex64
 * is computed in double and rounded once. */
ND_INLINE double nd_sel_d(int c, double a, double b)
{
    uint64_t x, y, m = (uint64_t)0 - (uint64_t)(c != 0);
    memcpy(&x, &a, 8);
    memcpy(&y, &b, 8);
    x = (x & m) | (y & ~m);
    memcpy(&a, &x, 8);
    return a;
}
#define ND_ISINF(x) (fabs(x) == INFINITY)
#define ND_NONFINITE(x) (!(fabs(x) < INFINITY))

/* glibc's e^x * (c, s) for x > 709 (its t = (DBL_MAX_EXP - 1) ln 2): c and s
 * are scaled by k e^709, then e^709 again while x stays above t, so a
 * finite product survives an e^x that would overflow. Returns the x left. */
ND_INLINE double nd_cx_reduce(double x, double k, double *c, double *s)
{
    const double E = 0x1.d422d2be5dc9bp+1022;  /* e^709 */
    int b = x > 709;
    double f = nd_sel_d(b, E * k, 1);
    x = nd_sel_d(b, x - 709, x);
    *c *= f;
    *s *= f;
    b = x > 709;
    f = nd_sel_d(b, E, 1);
    x = nd_sel_d(b, x - 709, x);
    *c *= f;
    *s *= f;
    /* above 3 t every product is +-inf or +-0 whatever the last factor */
    return nd_sel_d(x > 709, 709, x);
}

ND_INLINE nd_c128 nd_cexp_cd(nd_c128 z)
{
    double x = __real__ z, y = __imag__ z;
    double c = nd_cos(y), s = nd_sin(y);
    double ev = nd_exp(nd_cx_reduce(x, 1, &c, &s));
    double re = ev * c, im = ev * s;
    /* Annex G: exp(+-inf + i(inf|nan)) = (inf, nan) | (0, +-0); a zero
     * imaginary part stays (exp(nan + i0) = (nan, 0)) */
    int odd = ND_ISINF(x) & ND_NONFINITE(y);
    re = nd_sel_d(odd, nd_sel_d(x > 0, INFINITY, 0), re);
    im = nd_sel_d(odd, nd_sel_d(x > 0, NAN, copysign(0, y)), nd_sel_d(y == 0, y, im));
    return nd_cmk_cd(re, im);
}

/* log|z| + i arg z. |z| is scaled by a power of two away from overflow
 * and the subnormals; near |z| = 1, log|z| = log1p(|z|^2 - 1) / 2 with
 * |z|^2 - 1 = (m - 1)(m + 1) + n^2 (m >= n the parts' magnitudes), whose
 * error stays far below the tolerance where glibc is exact. */
ND_INLINE nd_c128 nd_clog_cd(nd_c128 z)
{
    double x = __real__ z, y = __imag__ z, ax = fabs(x), ay = fabs(y);
    double mx = nd_sel_d(ax > ay, ax, ay), mn = nd_sel_d(ax > ay, ay, ax);
    int big = mx > 0x1p1020, small = mx < 0x1p-1000;
    double sc = nd_sel_d(big, 0x1p-4, nd_sel_d(small, 0x1p600, 1));
    double lsc = nd_sel_d(big, 4 * ND_LOGE2, nd_sel_d(small, -600 * ND_LOGE2, 0));
    double h = nd_hypot(x * sc, y * sc);
    double d = (mx - 1) * (mx + 1) + mn * mn;
    int near1 = (h > 0.5) & (h < 2) & !big & !small;
    double re = nd_sel_d(near1, 0.5 * nd_log1p(d), nd_log(h) + lsc);
    return nd_cmk_cd(re, nd_atan2(y, x));
}

/* Kahan's: sqrt((|x| + |z|) / 2) and y / (2 that), scaled by an even power
 * of two away from overflow and from the subnormals */
ND_INLINE nd_c128 nd_csqrt_cd(nd_c128 z)
{
    double x = __real__ z, y = __imag__ z;
    double m = nd_sel_d(fabs(x) > fabs(y), fabs(x), fabs(y));
    int big = m > 0x1p1020, small = m < 0x1p-1000;
    double sc = nd_sel_d(big, 0x1p-4, nd_sel_d(small, 0x1p600, 1));
    double us = nd_sel_d(big, 0x1p2, nd_sel_d(small, 0x1p-300, 1));
    double xs = x * sc, ys = y * sc;
    double t = sqrt((fabs(xs) + nd_hypot(xs, ys)) * 0.5);
    double q = 0.5 * (ys / t), ay = fabs(q);
    int neg = x < 0;
    double re = nd_sel_d(neg, ay, t) * us;
    double im = nd_sel_d(neg, copysign(t, y), q) * us;
    im = nd_sel_d(t == 0, y, im);
    int yinf = ND_ISINF(y);
    re = nd_sel_d(yinf, INFINITY, re);
    im = nd_sel_d(yinf, y, im);
    return nd_cmk_cd(re, im);
}

/* sinh (h = 0) or cosh (h = 1) of x + iy:
 *   sinh = (sinh x cos y, cosh x sin y), cosh = (cosh x cos y, sinh x sin y)
 * sinh x and cosh x both from one expm1; past |x| = 709 glibc's scaling.
 * u: the sign C leaves open for sinh(+-inf + i(inf|nan)), as glibc's
 * csinh (1) and csin (-1, through sin z = -i sinh(iz)) choose it. */
ND_INLINE nd_c128 nd_csinhcosh_cd(nd_c128 z, int h, double u)
{
    double x = __real__ z, y = __imag__ z, ax = fabs(x);
    double c = nd_cos(y), s = nd_sin(y), cb = c, sb = s;
    double xr = nd_cx_reduce(ax, 0.5, &cb, &sb);
    double em1 = nd_expm1(xr), e = em1 + 1;
    double sh = copysign(0.5 * (em1 + em1 / e), x), ch = 0.5 * (e + 1 / e);
    double sg = nd_sel_d(x < 0, -1, 1);
    int big = ax > 709;
    double re = nd_sel_d(big, e * cb, (h ? ch : sh) * c);
    double im = nd_sel_d(big, e * sb, (h ? sh : ch) * s);
    if (h) im = nd_sel_d(big, sg * im, im);
    else re = nd_sel_d(big, sg * re, re);
    /* Annex G: sinh(+-inf + i(inf|nan)) = (u inf, nan), sinh(+-0 +
     * i(inf|nan)) = (+-0, nan), cosh(+-0 + i(inf|nan)) = (nan, 0); a zero
     * imaginary part stays in sinh, and in cosh(nan + i0) */
    int ynf = ND_NONFINITE(y);
    re = nd_sel_d(ND_ISINF(x) & ynf, u * INFINITY, re);
    if (!h) re = nd_sel_d((x == 0) & ynf, x, re);
    im = nd_sel_d((y == 0) & (h ? x != x : 1), y, im);
    if (h) im = nd_sel_d((x == 0) & ynf, 0, im);
    return nd_cmk_cd(re, im);
}

/* tanh(x + iy) = (sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y);
 * past |x| = 354 the real part is +-1 and the imaginary part
 * 4 sin y cos y / e^(2|x|), as glibc */
ND_INLINE nd_c128 nd_ctanh_cd(nd_c128 z)
{
    double x = __real__ z, y = __imag__ z, ax = fabs(x);
    double c = nd_cos(y), s = nd_sin(y);
    int big = ax > 354;
    double a2 = 2 * (ax - 354);
    double em1 = nd_expm1(nd_sel_d(big, nd_sel_d(a2 > 708, 708, a2), ax)), e = em1 + 1;
    double sh = copysign(0.5 * (em1 + em1 / e), x), ch = 0.5 * (e + 1 / e);
    double den = nd_sel_d(fabs(sh) > fabs(c) * 0x1p-52, sh * sh + c * c, c * c);
    double re = sh * ch / den, im = s * c / den;
    const double E2 = 0x1.586f6bf260cf1p+1021;  /* e^708 */
    re = nd_sel_d(big, copysign(1, x), re);
    im = nd_sel_d(big, 4 * s * c / E2 / e, im);
    /* Annex G: tanh(+-inf + iy) = (+-1, +-0) (the zero's sign: sin 2y's
     * for finite |y| > 1, else y's); otherwise a nonfinite part gives
     * (nan, nan) but for x = 0 or y = 0, which stay */
    int xinf = ND_ISINF(x), nf = ND_NONFINITE(x) | ND_NONFINITE(y);
    double iinf = nd_sel_d((fabs(y) > 1) & !ND_NONFINITE(y), copysign(0, s * c), copysign(0, y));
    re = nd_sel_d(nf, nd_sel_d(xinf, copysign(1, x), nd_sel_d((y == 0) | (x == 0), x, NAN)), re);
    im = nd_sel_d(nf, nd_sel_d(xinf, iinf, nd_sel_d(y == 0, y, NAN)), im);
    return nd_cmk_cd(re, im);
}

/* sin z = -i sinh(iz), cos z = cosh(iz), tan z = -i tanh(iz) */
ND_INLINE nd_c128 nd_ctimesi_cd(nd_c128 z) { return nd_cmk_cd(-__imag__ z, __real__ z); }
ND_INLINE nd_c128 nd_ctimesmi_cd(nd_c128 z) { return nd_cmk_cd(__imag__ z, -__real__ z); }
ND_INLINE nd_c128 nd_csinh_cd(nd_c128 z) { return nd_csinhcosh_cd(z, 0, 1); }
ND_INLINE nd_c128 nd_ccosh_cd(nd_c128 z) { return nd_csinhcosh_cd(z, 1, 1); }
ND_INLINE nd_c128 nd_csin_cd(nd_c128 z) { return nd_ctimesmi_cd(nd_csinhcosh_cd(nd_ctimesi_cd(z), 0, -1)); }
ND_INLINE nd_c128 nd_ccos_cd(nd_c128 z) { return nd_csinhcosh_cd(nd_ctimesi_cd(z), 1, 1); }
ND_INLINE nd_c128 nd_ctan_cd(nd_c128 z) { return nd_ctimesmi_cd(nd_ctanh_cd(nd_ctimesi_cd(z))); }

/* complex64: computed in double, rounded once */
#define ND_CX64(nm) \
ND_INLINE nd_c64 nd_##nm##_cf(nd_c64 z) \
{ \
    nd_c128 r = nd_##nm##_cd(nd_cmk_cd(__real__ z, __imag__ z)); \
    return nd_cmk_cf((float)__real__ r, (float)__imag__ r); \
}
ND_CX64(cexp) ND_CX64(clog) ND_CX64(csqrt) ND_CX64(csinh) ND_CX64(ccosh) ND_CX64(ctanh)
ND_CX64(csin) ND_CX64(ccos) ND_CX64(ctan)

/* -------------------------------------------------- pairwise summation */
/* A binary counter of partial sums: pushing block sums and merging equal
 * levels gives pairwise summation's O(log n) error bound for any number of
 * blocks, streaming, with 64 slots of state. */
#define ND_CASCADE(T, S) \
ND_INLINE void nd_cas_push_##S(T *st, uint64_t *cnt, T v) \
{ \
    uint64_t c = *cnt; \
    int k = 0; \
    while (c & 1) { v = st[k] + v; c >>= 1; k++; } \
    st[k] = v; \
    (*cnt)++; \
} \
ND_INLINE T nd_cas_sum_##S(const T *st, uint64_t cnt, T zero) \
{ \
    T s = zero; \
    for (int k = 0; cnt; k++, cnt >>= 1) if (cnt & 1) s = st[k] + s; \
    return s; \
}
ND_CASCADE(double, d)
ND_CASCADE(float, f)

#define ND_MIN(a, b) ((a) < (b) ? (a) : (b))

/* Parallel threshold: below this much work (elements x cost) a kernel runs
 * on the calling thread; waking the OpenMP team costs a few microseconds. */
#ifndef ND_PAR_WORK
#define ND_PAR_WORK 32768
#endif
/* Set by the runtime in E[0] before the call: run on the calling thread
 * even above ND_PAR_WORK. The runtime measures, per kernel, its runs with
 * the OpenMP team against runs alone and keeps the faster (another
 * library's thread pool -- OpenBLAS spinning after a matmul -- can hold the
 * cores the team needs; src/runtime/par.h). Cleared by the runtime after
 * the call; never an error. */
#define ND_RUN_ALONE (1 << 30)
#define ND_TEAM(E) (!(__atomic_load_n((E), __ATOMIC_RELAXED) & ND_RUN_ALONE))
#define ND_BLOCK 4096    /* inner-loop block of a parallel task */
#define ND_TILE 512      /* streaming-store tile (elements) */
#ifndef ND_STREAM_BYTES
#define ND_STREAM_BYTES (64ll << 20)  /* outputs this big bypass the caches */
#endif

/* Non-temporal stores through the compiler's builtins, not <immintrin.h>:
 * parsing that header is ~0.15 s of every kernel's compile (more than half
 * of a small kernel's), and these two instructions are all kernels use of it.
 * A compiler without the builtins gets the header. */
#if defined(__AVX512F__)
#define ND_NT_BYTES 64
#elif defined(__AVX__)
#define ND_NT_BYTES 32
#endif
#if defined(__has_builtin) && !defined(ND_NT_HEADER)
#if __has_builtin(__builtin_nontemporal_store)
#define ND_NT_STORE(d, v) __builtin_nontemporal_store((v), (nd_ntv *)(void *)(d))
#elif defined(ND_NT_BYTES) && ND_NT_BYTES == 64 && __has_builtin(__builtin_ia32_movntdq512)
#define ND_NT_STORE(d, v) __builtin_ia32_movntdq512((nd_ntv *)(void *)(d), (v))
#elif defined(ND_NT_BYTES) && ND_NT_BYTES == 32 && __has_builtin(__builtin_ia32_movntdq256)
#define ND_NT_STORE(d, v) __builtin_ia32_movntdq256((nd_ntv *)(void *)(d), (v))
#endif
#if __has_builtin(__builtin_ia32_sfence)
#define ND_SFENCE() __builtin_ia32_sfence()
#endif
#endif
#if (defined(ND_NT_BYTES) && !defined(ND_NT_STORE)) || (defined(__SSE__) && !defined(ND_SFENCE))
#include <immintrin.h>
#endif
#if defined(ND_NT_BYTES) && !defined(ND_NT_STORE)
#if ND_NT_BYTES == 64
#define ND_NT_STORE(d, v) _mm512_stream_si512((void *)(d), (__m512i)(v))
#else
#define ND_NT_STORE(d, v) _mm256_stream_si256((__m256i *)(void *)(d), (__m256i)(v))
#endif
#endif
#if defined(__SSE__) && !defined(ND_SFENCE)
#define ND_SFENCE() _mm_sfence()
#endif
/* copy a tile to memory with non-temporal stores (dst any alignment) */
ND_INLINE void nd_stream_copy(void *dst, const void *src, size_t n)
{
    char *d = (char *)dst;
    const char *s = (const char *)src;
#ifdef ND_NT_BYTES
    typedef long long nd_ntv __attribute__((vector_size(ND_NT_BYTES)));
    size_t head = (ND_NT_BYTES - ((uintptr_t)d & (ND_NT_BYTES - 1))) & (ND_NT_BYTES - 1);
    if (head > n) head = n;
    memcpy(d, s, head);
    d += head; s += head; n -= head;
    for (; n >= ND_NT_BYTES; n -= ND_NT_BYTES, d += ND_NT_BYTES, s += ND_NT_BYTES) {
        nd_ntv v;
        memcpy(&v, s, ND_NT_BYTES);
        ND_NT_STORE(d, v);
    }
#endif
    memcpy(d, s, n);
}
ND_INLINE void nd_sfence(void)
{
#ifdef ND_SFENCE
    ND_SFENCE();
#endif
}
#define ND_RBLOCK 256    /* leaf block of a pairwise sum */

#endif
