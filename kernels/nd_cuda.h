/* nd_cuda.h -- everything numdyn's generated CUDA C includes (compiled by
 * NVRTC as C++17 with --fmad=false: NumPy rounds a * b before + c).
 *
 * The CUDA twin of nd_kernel.h: the helper names the scalar expression
 * emitter (src/codegen/codegen_expr.c) writes, with NumPy's semantics, as
 * device functions; the libm names map to CUDA's math library where the CPU
 * kernels call SLEEF. Differences a GPU imposes: it has no floating-point
 * status flags, so NumPy's "divide by zero"/"overflow"/"invalid" warnings of
 * plain float arithmetic are not reported (those the emitter derives from
 * operands -- nd_ck* -- are); complex transcendentals are the textbook
 * formulas over CUDA's real functions (the CPU's Annex G special values at
 * infinities are not all reproduced).
 *
 * Kernel ABI (the CPU's): name(char *const *P, const int64_t *I,
 * const nd_sv *S, int *E) with P, I, S in device memory.
 */
#ifndef ND_CUDA_H
#define ND_CUDA_H
/* ND_CUDA_HOST: tests/cuda_host_emu.h runs the kernels on the host (its
 * libc has these) */
#ifndef ND_CUDA_HOST
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#define INT8_MIN (-128)
#define INT8_MAX 127
#define UINT8_MAX 255
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define UINT16_MAX 65535
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define UINT32_MAX 4294967295u
#define INT64_MIN (-9223372036854775807ll - 1)
#define INT64_MAX 9223372036854775807ll
#define UINT64_MAX 18446744073709551615ull
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fffffff)
#endif

#define ND_FN __device__ __forceinline__
#define ND_ERR_DIVZERO 1
#define ND_ERR_OVERFLOW 2
#define ND_ERR_NEGPOW 4
#define ND_ERR_NOMEM 8
#define ND_ERR_OOB 16
#define ND_ERR_FPE_DIV 64
#define ND_ERR_FPE_OVER 128
#define ND_ERR_FPE_UNDER 256
#define ND_ERR_FPE_INVALID 512
#define ND_ERR_DATAWARN 1024
#define ND_OOB(addr, lo, hi) \
    ((const char *)(addr) < (lo) || (const char *)((addr) + 1) > (hi))

typedef union { double f; int64_t i; uint64_t u; struct { double re, im; } c; } nd_sv;
typedef uint8_t nd_bool;

/* ------------------------------------------------------------ float16 */
/* the CPU's bit-exact conversions, shared with nd_kernel.h; a GPU has no
 * status flags, so float16 overflow raises nothing */
ND_FN uint32_t nd_f2u(float f) { return __float_as_uint(f); }
ND_FN float nd_u2f(uint32_t u) { return __uint_as_float(u); }
ND_FN uint64_t nd_d2u(double d) { return (uint64_t)__double_as_longlong(d); }
#define ND_F16_OVF 1.0f
#define ND_F16_FN ND_FN
#include "nd_f16.h"

/* ------------------------------------------------ math library names */
/* the CPU kernels' SLEEF-bound names, as CUDA's math functions */
#define ND_M1(nm) ND_FN double nd_##nm(double x) { return nm(x); } \
                  ND_FN float nd_##nm##f(float x) { return nm##f(x); }
#define ND_M2(nm) ND_FN double nd_##nm(double x, double y) { return nm(x, y); } \
                  ND_FN float nd_##nm##f(float x, float y) { return nm##f(x, y); }
ND_M1(exp) ND_M1(exp2) ND_M1(expm1) ND_M1(log) ND_M1(log2) ND_M1(log10) ND_M1(log1p)
ND_M1(sin) ND_M1(cos) ND_M1(tan) ND_M1(asin) ND_M1(acos) ND_M1(atan) ND_M1(sinh)
ND_M1(cosh) ND_M1(tanh) ND_M1(asinh) ND_M1(acosh) ND_M1(atanh) ND_M1(cbrt)
ND_M2(pow) ND_M2(atan2) ND_M2(hypot)
#undef ND_M1
#undef ND_M2
/* the emitter writes copysign(0, x): an int first argument is ambiguous
 * between CUDA's float and double overloads */
ND_FN double copysign(int a, double b) { return copysign((double)a, b); }
ND_FN float copysign(int a, float b) { return copysignf((float)a, b); }
#define __builtin_fabs fabs

/* --------------------------------------------------- float helpers */
#define ND_LIM_EXP_d 709.78
#define ND_LIM_EXP_f 88.72f
#define ND_LIM_EXP2_d 1023.99
#define ND_LIM_EXP2_f 127.99f
#define ND_LIM_SINH_d 710.47
#define ND_LIM_SINH_f 89.41f

/* NumPy's divmod for floats (npy_divmod): floor quotient, remainder with
 * the divisor's sign */
template <class T> ND_FN T nd_t_divmod(T a, T b, T *modp)
{
    T mod = fmod(a, b), div, fdiv;
    if (!b) { *modp = mod; return a / b; }
    div = (a - mod) / b;
    if (mod) { if ((b < 0) != (mod < 0)) { mod += b; div -= (T)1; } }
    else mod = copysign((T)0, b);
    if (div) { fdiv = floor(div); if (div - fdiv > (T)0.5) fdiv += (T)1; }
    else fdiv = copysign((T)0, a / b);
    *modp = mod;
    return fdiv;
}
template <class T> ND_FN T nd_t_logaddexp(T x, T y, bool two)
{
    if (x == y) return x + (two ? (T)1 : (T)0.693147180559945309417232121458176568);
    T t = x - y, k = two ? (T)1.442695040888963407359924681001892137 : (T)1;
    if (t > 0) return x + k * log1p(two ? exp2(-t) : exp(-t));
    if (t <= 0) return y + k * log1p(two ? exp2(t) : exp(t));
    return t;
}
#define ND_FLOAT(T, S) \
ND_FN T nd_floordiv_##S(T a, T b) { T m; if (!b) return a / b; return nd_t_divmod(a, b, &m); } \
ND_FN T nd_remainder_##S(T a, T b) { T m; if (!b) return fmod(a, b); nd_t_divmod(a, b, &m); return m; } \
ND_FN T nd_max_##S(T a, T b) { return (a >= b || a != a) ? a : b; } \
ND_FN T nd_min_##S(T a, T b) { return (a <= b || a != a) ? a : b; } \
ND_FN T nd_fmax_##S(T a, T b) { return (a >= b || b != b) ? a : b; } \
ND_FN T nd_fmin_##S(T a, T b) { return (a <= b || b != b) ? a : b; } \
ND_FN T nd_sign_##S(T a) { return a > 0 ? (T)1 : a < 0 ? (T)-1 : a == 0 ? (T)0 : a; } \
ND_FN T nd_heaviside_##S(T a, T h) { return a < 0 ? (T)0 : a > 0 ? (T)1 : a == 0 ? h : a; } \
ND_FN T nd_logaddexp_##S(T x, T y) { return nd_t_logaddexp(x, y, false); } \
ND_FN T nd_logaddexp2_##S(T x, T y) { return nd_t_logaddexp(x, y, true); } \
ND_FN T nd_wsel_##S(int c, T a, T b) { return c ? a : b; }   /* no flags on a GPU */ \
ND_FN T nd_spacing_##S(T x) { return isinf(x) ? (T)NAN : nextafter(x, copysign((T)INFINITY, x)) - x; } \
ND_FN nd_bool nd_signbit_##S(T x) { return (nd_bool)(signbit(x) != 0); } \
/* the float-condition checks: a predicated OR (4 PTX instructions for \
 * nd_ckgt, 6 as a multiplied flag) */ \
ND_FN T nd_ckat_##S(T x, T r, T at, int *e) { if (x == at) *e |= ND_ERR_FPE_DIV; return r; } \
ND_FN T nd_ckgt_##S(T x, T r, T lim, int *e) { if (x > lim && x != (T)INFINITY) *e |= ND_ERR_FPE_OVER; return r; } \
ND_FN T nd_ckinf_##S(T x, T r, int *e) { if (fabs(x) == (T)INFINITY) *e |= ND_ERR_FPE_INVALID; return r; } \
ND_FN T nd_ckdiv_##S(T x, T y, int *e) \
{ if (y == 0) *e |= ND_ERR_FPE_DIV | ND_ERR_FPE_INVALID; return x / y; } \
/* ordered compares (nd_kernel.h's avoid a CPU's signaling compare; a GPU \
 * raises no flag) */ \
ND_FN int nd_qlt_##S(T a, T b) { return a < b; } \
ND_FN int nd_qle_##S(T a, T b) { return a <= b; } \
ND_FN T nd_ckpow_##S(T x, T y, T r, int *e) \
{ \
    *e |= (r != r && x == x && y == y ? ND_ERR_FPE_INVALID : 0) | \
          (isinf(r) && !isinf(x) && !isinf(y) ? (x == 0 ? ND_ERR_FPE_DIV : ND_ERR_FPE_OVER) : 0); \
    return r; \
} \
/* NumPy's power loop given one exponent for the whole loop (nd_kernel.h) */ \
ND_FN T nd_powsc_##S(T x, T y, int *e) \
{ \
    if (y == (T)2) return x * x; \
    if (y == (T)-1) return (T)1 / x; \
    if (y == (T)0.5) return sqrt(x); \
    return nd_ckpow_##S(x, y, pow(x, y), e); \
}
ND_FLOAT(double, d)
ND_FLOAT(float, f)
#undef ND_FLOAT
/* a float32 max/min reduction's fold, NaN propagating as nd_max_f/nd_min_f:
 * one instruction (PTX max.NaN/min.NaN, sm_80 on) instead of two compares
 * and a select -- 15 of softmax's 164 us and logsumexp's 105 us on an H200
 * (bench/cuda_rows_probe.py, session 27). The reductions' order is the
 * GPU's own already, so a tie of -0.0 and +0.0 may come out either way, as
 * it could before; a NaN comes out as the canonical NaN. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define ND_RMM(NM) ND_FN float nd_r##NM##_f(float a, float b) \
{ float r; asm(#NM ".NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
#else
#define ND_RMM(NM) ND_FN float nd_r##NM##_f(float a, float b) { return nd_##NM##_f(a, b); }
#endif
ND_RMM(max)
ND_RMM(min)
#undef ND_RMM

/* float -> int as x86's cvtt* (NumPy's results), shared with nd_kernel.h */
#define ND_F2I_FN ND_FN
#include "nd_f2i.h"

/* ------------------------------------------------- integer helpers */
/* T, its unsigned twin U; signedness from T. Integer division by zero is
 * 0 and reported; MIN // -1 wraps and is reported; shifts past the width
 * give 0 (or -1); NumPy's scalar math reports wrapping. */
template <class T> struct nd_tw;
template <> struct nd_tw<int8_t> { typedef uint8_t U; };
template <> struct nd_tw<uint8_t> { typedef uint8_t U; };
template <> struct nd_tw<int16_t> { typedef uint16_t U; };
template <> struct nd_tw<uint16_t> { typedef uint16_t U; };
template <> struct nd_tw<int32_t> { typedef uint32_t U; };
template <> struct nd_tw<uint32_t> { typedef uint32_t U; };
template <> struct nd_tw<int64_t> { typedef uint64_t U; };
template <> struct nd_tw<uint64_t> { typedef uint64_t U; };
template <class T> ND_FN constexpr bool nd_sgn() { return (T)-1 < (T)0; }
template <class T> ND_FN constexpr T nd_tmin()
{ return nd_sgn<T>() ? (T)((typename nd_tw<T>::U)1 << (sizeof(T) * 8 - 1)) : (T)0; }

template <class T> ND_FN T nd_t_fdiv(T a, T b, int *e)
{
    if (b == 0) { *e |= ND_ERR_DIVZERO; return 0; }
    if (nd_sgn<T>() && a == nd_tmin<T>() && b == (T)-1) { *e |= ND_ERR_OVERFLOW; return a; }
    T q = a / b;
    if (nd_sgn<T>() && ((a > 0) != (b > 0)) && (T)(q * b) != a) q--;
    return q;
}
template <class T> ND_FN T nd_t_ifmod(T a, T b, int *e)
{
    if (b == 0) { *e |= ND_ERR_DIVZERO; return 0; }
    if (nd_sgn<T>() && a == nd_tmin<T>() && b == (T)-1) return 0;
    return a % b;
}
template <class T> ND_FN T nd_t_irem(T a, T b, int *e)
{
    T r = nd_t_ifmod(a, b, e);
    if (nd_sgn<T>() && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
template <class T> ND_FN T nd_t_ipow(T a, T b, int *e)
{
    typedef typename nd_tw<T>::U U;
    if (nd_sgn<T>() && b < 0) { *e |= ND_ERR_NEGPOW; return 0; }
    U r = 1, x = (U)a;
    uint64_t n = (uint64_t)b;
    while (n) { if (n & 1) r *= x; x *= x; n >>= 1; }
    return (T)r;
}
template <class T> ND_FN T nd_t_iabs(T a)
{ return (nd_sgn<T>() && a < 0) ? (T)(0 - (typename nd_tw<T>::U)a) : a; }
template <class T> ND_FN T nd_t_gcd(T a, T b)
{
    typedef typename nd_tw<T>::U U;
    U x = (U)nd_t_iabs(a), y = (U)nd_t_iabs(b);
    while (y) { U t = x % y; x = y; y = t; }
    return (T)x;
}
/* wrapping add/sub/mul and whether they wrapped */
template <class T> ND_FN T nd_t_oadd(T a, T b, int *e)
{
    typedef typename nd_tw<T>::U U;
    T r = (T)((U)a + (U)b);
    bool o = nd_sgn<T>() ? (((a ^ r) & (b ^ r)) < 0) : ((U)r < (U)a);
    if (o) *e |= ND_ERR_OVERFLOW;
    return r;
}
template <class T> ND_FN T nd_t_osub(T a, T b, int *e)
{
    typedef typename nd_tw<T>::U U;
    T r = (T)((U)a - (U)b);
    bool o = nd_sgn<T>() ? (((a ^ b) & (a ^ r)) < 0) : ((U)a < (U)b);
    if (o) *e |= ND_ERR_OVERFLOW;
    return r;
}
template <class T> ND_FN T nd_t_omul(T a, T b, int *e)
{
    typedef typename nd_tw<T>::U U;
    T r = (T)((U)a * (U)b);
    bool o;
    if (sizeof(T) < 8) {
        int64_t w = (int64_t)a * (int64_t)b;
        o = w != (int64_t)r;
    } else if (nd_sgn<T>()) {
        int64_t hi = __mul64hi((int64_t)a, (int64_t)b);
        o = hi != ((int64_t)r >> 63);
    } else {
        o = __umul64hi((uint64_t)a, (uint64_t)b) != 0;
    }
    if (o) *e |= ND_ERR_OVERFLOW;
    return r;
}

#define ND_INT(T, S) \
ND_FN T nd_fdiv_##S(T a, T b, int *e) { return nd_t_fdiv(a, b, e); } \
ND_FN T nd_ifmod_##S(T a, T b, int *e) { return nd_t_ifmod(a, b, e); } \
ND_FN T nd_irem_##S(T a, T b, int *e) { return nd_t_irem(a, b, e); } \
ND_FN T nd_ipow_##S(T a, T b, int *e) { return nd_t_ipow(a, b, e); } \
ND_FN T nd_lshift_##S(T a, T b) \
{ return ((uint64_t)b < sizeof(T) * 8) ? (T)((typename nd_tw<T>::U)a << b) : (T)0; } \
ND_FN T nd_rshift_##S(T a, T b) \
{ return ((uint64_t)b < sizeof(T) * 8) ? (T)(a >> b) : (nd_sgn<T>() && a < 0) ? (T)-1 : (T)0; } \
ND_FN T nd_iabs_##S(T a) { return nd_t_iabs(a); } \
ND_FN T nd_oadd_##S(T a, T b, int *e) { return nd_t_oadd(a, b, e); } \
ND_FN T nd_osub_##S(T a, T b, int *e) { return nd_t_osub(a, b, e); } \
ND_FN T nd_omul_##S(T a, T b, int *e) { return nd_t_omul(a, b, e); } \
ND_FN T nd_oneg_##S(T a, int *e) \
{ \
    if (nd_sgn<T>() ? a == nd_tmin<T>() : a != 0) *e |= ND_ERR_OVERFLOW; \
    return (T)((typename nd_tw<T>::U)0 - (typename nd_tw<T>::U)a); \
} \
ND_FN T nd_oabs_##S(T a, int *e) \
{ if (nd_sgn<T>() && a == nd_tmin<T>()) *e |= ND_ERR_OVERFLOW; return nd_t_iabs(a); } \
ND_FN T nd_gcd_##S(T a, T b) { return nd_t_gcd(a, b); } \
ND_FN T nd_lcm_##S(T a, T b) \
{ \
    typedef typename nd_tw<T>::U U; \
    T g = nd_t_gcd(a, b); \
    return g ? (T)((U)nd_t_iabs(a) / (U)g * (U)nd_t_iabs(b)) : (T)0; \
} \
ND_FN T nd_isign_##S(T a) { return a > 0 ? (T)1 : (nd_sgn<T>() && a < 0) ? (T)-1 : (T)0; } \
ND_FN uint8_t nd_popcnt_##S(T a) { return (uint8_t)__popcll((uint64_t)(typename nd_tw<T>::U)nd_t_iabs(a)); }
ND_INT(int8_t, i8) ND_INT(int16_t, i16) ND_INT(int32_t, i32) ND_INT(int64_t, i64)
ND_INT(uint8_t, u8) ND_INT(uint16_t, u16) ND_INT(uint32_t, u32) ND_INT(uint64_t, u64)
#undef ND_INT

/* ------------------------------------------------------------ complex */
/* The emitter's __real__ x / __imag__ x are written nd_re(x) / nd_im(x)
 * by the CUDA generator (a text pass); on a real value they are the value
 * and 0, as GCC's. Multiplication is NumPy's naive one, division Smith's;
 * GPUs have FMA, so the fused form of the multiply loop is NumPy's on an
 * FMA host. */
template <class T> struct nd_cx { T re, im; };
typedef nd_cx<float> nd_c64;
typedef nd_cx<double> nd_c128;
ND_FN float nd_re(float x) { return x; }
ND_FN double nd_re(double x) { return x; }
ND_FN float nd_im(float) { return 0; }
ND_FN double nd_im(double) { return 0; }
template <class T> ND_FN T nd_re(nd_cx<T> z) { return z.re; }
template <class T> ND_FN T nd_im(nd_cx<T> z) { return z.im; }
template <class T> ND_FN nd_cx<T> nd_t_cmk(T re, T im) { nd_cx<T> z; z.re = re; z.im = im; return z; }
template <class T> ND_FN nd_cx<T> operator+(nd_cx<T> a, nd_cx<T> b) { return nd_t_cmk(a.re + b.re, a.im + b.im); }
template <class T> ND_FN nd_cx<T> operator-(nd_cx<T> a, nd_cx<T> b) { return nd_t_cmk(a.re - b.re, a.im - b.im); }
template <class T> ND_FN nd_cx<T> operator-(nd_cx<T> a) { return nd_t_cmk(-a.re, -a.im); }
template <class T> ND_FN nd_cx<T> operator*(nd_cx<T> a, T s) { return nd_t_cmk(a.re * s, a.im * s); }
template <class T> ND_FN nd_cx<T> nd_t_cmul(nd_cx<T> a, nd_cx<T> b)
{ return nd_t_cmk(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re); }
template <class T> ND_FN nd_cx<T> operator*(nd_cx<T> a, nd_cx<T> b) { return nd_t_cmul(a, b); }
template <class T> ND_FN nd_cx<T> nd_t_cdiv(nd_cx<T> a, nd_cx<T> b)
{
    T ar = fabs(b.re), ai = fabs(b.im);
    if (ar >= ai) {
        if (ar == 0 && ai == 0) return nd_t_cmk(a.re / ar, a.im / ai);
        T rat = b.im / b.re, scl = (T)1.0 / (b.re + b.im * rat);
        return nd_t_cmk((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl);
    }
    T rat = b.re / b.im, scl = (T)1.0 / (b.im + b.re * rat);
    return nd_t_cmk((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl);
}
template <class T> ND_FN nd_cx<T> operator/(nd_cx<T> a, nd_cx<T> b) { return nd_t_cdiv(a, b); }
template <class T> ND_FN bool nd_t_clt(nd_cx<T> a, nd_cx<T> b, bool eq)
{
    return (a.re < b.re && a.im == a.im && b.im == b.im) ||
           (a.re == b.re && (eq ? a.im <= b.im : a.im < b.im));
}
template <class T> ND_FN bool nd_t_cisnan(nd_cx<T> a) { return a.re != a.re || a.im != a.im; }
template <class T> ND_FN nd_cx<T> nd_t_csign(nd_cx<T> a)
{
    T ab = hypot(a.re, a.im);
    if (ab == 0) return nd_t_cmk((T)0, (T)0);
    if (ab != ab) return nd_t_cmk((T)NAN, (T)NAN);
    if (isinf(ab)) {
        if (isinf(a.re) && isinf(a.im)) return nd_t_cmk((T)NAN, (T)NAN);
        return nd_t_cmk(isinf(a.re) ? (a.re > 0 ? (T)1 : (T)-1) : (T)0,
                        isinf(a.im) ? (a.im > 0 ? (T)1 : (T)-1) : (T)0);
    }
    return nd_t_cmk(a.re / ab, a.im / ab);
}
template <class T> ND_FN nd_cx<T> nd_t_cexp(nd_cx<T> z)
{
    if (isinf(z.re) && !isfinite(z.im))
        return z.re > 0 ? nd_t_cmk((T)INFINITY, (T)NAN) : nd_t_cmk((T)0, copysign((T)0, z.im));
    T ev = exp(z.re);
    if (z.im == 0) return nd_t_cmk(ev, z.im);
    return nd_t_cmk(ev * cos(z.im), ev * sin(z.im));
}
template <class T> ND_FN nd_cx<T> nd_t_clog(nd_cx<T> z) { return nd_t_cmk(log(hypot(z.re, z.im)), atan2(z.im, z.re)); }
template <class T> ND_FN nd_cx<T> nd_t_csqrt(nd_cx<T> z)
{
    if (isinf(z.im)) return nd_t_cmk((T)INFINITY, z.im);
    T t = sqrt((fabs(z.re) + hypot(z.re, z.im)) * (T)0.5);
    if (t == 0) return nd_t_cmk((T)0, z.im);
    T q = (T)0.5 * (z.im / t);
    return z.re < 0 ? nd_t_cmk(fabs(q), copysign(t, z.im)) : nd_t_cmk(t, q);
}
template <class T> ND_FN nd_cx<T> nd_t_csinh(nd_cx<T> z)
{ return nd_t_cmk(sinh(z.re) * cos(z.im), z.im == 0 ? z.im : cosh(z.re) * sin(z.im)); }
template <class T> ND_FN nd_cx<T> nd_t_ccosh(nd_cx<T> z)
{ return nd_t_cmk(cosh(z.re) * cos(z.im), z.im == 0 ? z.im : sinh(z.re) * sin(z.im)); }
/* tanh as glibc's ctanh (NumPy's loop): C11 Annex G's special values
 * (an infinite real part gives +-1 and a signed zero, a NaN with a zero
 * imaginary part stays NaN + 0i, +-0 + i inf is +-0 + i NaN); past t = (max exponent - 1) ln2 / 2
 * (354; float 44) sinh^2 overflows, so the real part is +-1 and the
 * imaginary part 4 sin y cos y e^(-2|x|) in two steps, kept down to the
 * subnormals; below it sinh ch / (sinh^2 + cos^2) with the tiny operands
 * passed through. */
template <class T> ND_FN nd_cx<T> nd_t_ctanh(nd_cx<T> z)
{
    const bool f32 = sizeof(T) == 4;
    const T t = f32 ? (T)44 : (T)354, tiny = f32 ? (T)1.17549435e-38f : (T)2.2250738585072014e-308;
    const T eps = f32 ? (T)1.1920929e-07f : (T)2.220446049250313e-16;
    T x = z.re, y = z.im;
    if (!isfinite(x) || !isfinite(y)) {
        if (isinf(x))
            return nd_t_cmk(copysign((T)1, x),
                            isfinite(y) && fabs(y) > 1 ? copysign((T)0, sin(y) * cos(y)) : copysign((T)0, y));
        if (y == 0) return z;
        return nd_t_cmk(x == 0 ? x : (T)NAN, (T)NAN);   /* +-0 + i inf: C11's +-0 + i NaN */
    }
    T s = y, c = 1;
    if (fabs(y) > tiny) { s = sin(y); c = cos(y); }
    if (fabs(x) > t) {
        T e2t = exp(2 * t), ax = fabs(x) - t, im = 4 * s * c / e2t;
        im = ax > t ? im / e2t : im / exp(2 * ax);
        return nd_t_cmk(copysign((T)1, x), im);
    }
    T sh = x, ch = 1;
    if (fabs(x) > tiny) { sh = sinh(x); ch = cosh(x); }
    T den = fabs(sh) > fabs(c) * eps ? sh * sh + c * c : c * c;
    return nd_t_cmk(sh * ch / den, s * c / den);
}
/* sin z = -i sinh(iz), cos z = cosh(iz), tan z = -i tanh(iz) */
template <class T> ND_FN nd_cx<T> nd_t_ti(nd_cx<T> z) { return nd_t_cmk(-z.im, z.re); }
template <class T> ND_FN nd_cx<T> nd_t_tmi(nd_cx<T> z) { return nd_t_cmk(z.im, -z.re); }
/* inverse functions: log forms (branch cuts as C99's on the axes' open parts) */
template <class T> ND_FN nd_cx<T> nd_t_casinh(nd_cx<T> z)
{ return nd_t_clog(z + nd_t_csqrt(nd_t_cmul(z, z) + nd_t_cmk((T)1, (T)0))); }
template <class T> ND_FN nd_cx<T> nd_t_casin(nd_cx<T> z) { return nd_t_tmi(nd_t_casinh(nd_t_ti(z))); }
template <class T> ND_FN nd_cx<T> nd_t_cacos(nd_cx<T> z)
{
    nd_cx<T> a = nd_t_casin(z);
    return nd_t_cmk((T)1.57079632679489661923132169163975144 - a.re, -a.im);
}
template <class T> ND_FN nd_cx<T> nd_t_catanh(nd_cx<T> z)
{
    nd_cx<T> one = nd_t_cmk((T)1, (T)0);
    return nd_t_clog(nd_t_cdiv(one + z, one - z)) * (T)0.5;
}
template <class T> ND_FN nd_cx<T> nd_t_catan(nd_cx<T> z) { return nd_t_tmi(nd_t_catanh(nd_t_ti(z))); }
template <class T> ND_FN nd_cx<T> nd_t_cacosh(nd_cx<T> z)
{
    nd_cx<T> one = nd_t_cmk((T)1, (T)0);
    return nd_t_clog(z + nd_t_cmul(nd_t_csqrt(z + one), nd_t_csqrt(z - one)));
}
template <class T> ND_FN nd_cx<T> nd_t_cpow(nd_cx<T> a, nd_cx<T> b)
{
    if (b.re == 0 && b.im == 0) return nd_t_cmk((T)1, (T)0);
    if (a.re == 0 && a.im == 0) return b.re > 0 ? nd_t_cmk((T)0, (T)0) : nd_t_cmk((T)NAN, (T)NAN);
    if (b.im == 0 && b.re > -100 && b.re < 100 && b.re == (T)(int64_t)b.re) {
        int64_t n = (int64_t)b.re, m = n < 0 ? -n : n;
        if (n == 1) return a;
        if (n == 2) return nd_t_cmul(a, a);
        if (n == 3) return nd_t_cmul(a, nd_t_cmul(a, a));
        nd_cx<T> r = nd_t_cmk((T)1, (T)0), x = a;
        while (m) { if (m & 1) r = nd_t_cmul(r, x); x = nd_t_cmul(x, x); m >>= 1; }
        return n < 0 ? nd_t_cdiv(nd_t_cmk((T)1, (T)0), r) : r;
    }
    return nd_t_cexp(nd_t_cmul(b, nd_t_clog(a)));
}

#define ND_CPLX(CT, T, S, M) \
ND_FN CT nd_cmk_##S(T re, T im) { return nd_t_cmk(re, im); } \
ND_FN CT nd_cmul_##S(CT a, CT b) { return nd_t_cmul(a, b); } \
ND_FN CT nd_wsel_##S(int c, CT a, CT b) { return c ? a : b; }   /* no flags on a GPU */ \
ND_FN CT nd_ckcl_##S(CT z, CT r, int *e) { if (z.re == 0 && z.im == 0) *e |= ND_ERR_FPE_DIV; return r; } \
ND_FN CT nd_cmul_fused_##S(CT a, CT b) \
{ return nd_t_cmk(fma(a.re, b.re, -(a.im * b.im)), fma(a.re, b.im, a.im * b.re)); } \
ND_FN CT nd_cdiv_##S(CT a, CT b) { return nd_t_cdiv(a, b); } \
ND_FN T nd_cabs_##S(CT a) { return hypot(a.re, a.im); } \
ND_FN int nd_clt_##S(CT a, CT b) { return nd_t_clt(a, b, false); } \
ND_FN int nd_cle_##S(CT a, CT b) { return nd_t_clt(a, b, true); } \
ND_FN int nd_cisnan_##S(CT a) { return nd_t_cisnan(a); } \
ND_FN CT nd_cmax_##S(CT a, CT b) { return (nd_t_cisnan(a) || nd_t_clt(b, a, true)) ? a : b; } \
ND_FN CT nd_cmin_##S(CT a, CT b) { return (nd_t_cisnan(a) || nd_t_clt(a, b, true)) ? a : b; } \
ND_FN CT nd_cfmax_##S(CT a, CT b) { return (nd_t_cisnan(b) || nd_t_clt(b, a, true)) ? a : b; } \
ND_FN CT nd_cfmin_##S(CT a, CT b) { return (nd_t_cisnan(b) || nd_t_clt(a, b, true)) ? a : b; } \
ND_FN CT nd_csign_##S(CT a) { return nd_t_csign(a); } \
ND_FN CT nd_cpow_##S(CT a, CT b) { return nd_t_cpow(a, b); } \
ND_FN CT nd_cexp_##S(CT z) { return nd_t_cexp(z); } \
ND_FN CT nd_clog_##S(CT z) { return nd_t_clog(z); } \
ND_FN CT nd_csqrt_##S(CT z) { return nd_t_csqrt(z); } \
ND_FN CT nd_csinh_##S(CT z) { return nd_t_csinh(z); } \
ND_FN CT nd_ccosh_##S(CT z) { return nd_t_ccosh(z); } \
ND_FN CT nd_ctanh_##S(CT z) { return nd_t_ctanh(z); } \
ND_FN CT nd_csin_##S(CT z) { return nd_t_tmi(nd_t_csinh(nd_t_ti(z))); } \
ND_FN CT nd_ccos_##S(CT z) { return nd_t_ccosh(nd_t_ti(z)); } \
ND_FN CT nd_ctan_##S(CT z) { return nd_t_tmi(nd_t_ctanh(nd_t_ti(z))); } \
ND_FN CT casin##M(CT z) { return nd_t_casin(z); } \
ND_FN CT cacos##M(CT z) { return nd_t_cacos(z); } \
ND_FN CT catan##M(CT z) { return nd_t_catan(z); } \
ND_FN CT casinh##M(CT z) { return nd_t_casinh(z); } \
ND_FN CT cacosh##M(CT z) { return nd_t_cacosh(z); } \
ND_FN CT catanh##M(CT z) { return nd_t_catanh(z); }
ND_CPLX(nd_c128, double, cd, )
ND_CPLX(nd_c64, float, cf, f)
#undef ND_CPLX

/* ------------------------------------------------------ block reductions */
#define ND_WARP 32
#define ND_THREADS 256   /* threads of a block (a multiple of ND_WARP) */
/* reductions of at most this many elements a row: a thread per row
 * (runtime/cuda.h's ND_CU_NARROW) */
#define ND_NARROW 16
/* 4 elements moved by one vector load or store (128 bits of float32) */
template <class T> struct alignas(4 * sizeof(T)) nd_v4 { T v[4]; };
/* bytes of a split reduction's partial (the widest accumulator) */
#define ND_SPLIT_SLOT 16
/* a reduction's strided element loop unrolled this many times: the
 * unrolled iterations' loads are independent of the accumulator, so a warp
 * has this many in flight instead of one (a full sum's loop waited for
 * each load before its add). Still folded in the loop's order. H200
 * (bench/cuda_rows_probe.py): full sum 2^26 float32 119 us at 1, 70 at 4
 * and 8; sums of (16384, 4096) rows 122 / 164 / 118 us (4: 40 registers) */
#ifndef ND_RED_UNROLL
#define ND_RED_UNROLL 8
#endif
#endif
