/* nd_vm64_trig.h -- numdyn's own float64 arctan2, arctan, sinh, cosh and tanh, included by nd_kernel.h
 * (after nd_vm64.h's functions, with its helpers and numdyn's own AVX-512
 * vector math).
 *
 * NumPy 2's float64 arctan2 (SVML's) is within ~0.75 ULP; SLEEF's 3.5-ULP
 * atan2 was 1.8 ULP off and a fifth of its results differed from NumPy's
 * in their last bits, which a cancellation after it turns into large
 * differences. This one carries the result in double-double to the last
 * addition (0.6x ULP in the worst case found;
 * tests/test_vmath_f64_accuracy.py) and runs faster than NumPy's loop:
 *
 * n = min(|y|, |x|), d = max: atan2 = B + s atan(n/d) (B = 0, s = 1;
 * |y| > |x|: B = pi/2, s = -1; x < 0: pi - that), then the sign of y.
 * z ~ n/d (vrcp14pd, or a division), c = k/16 with k = round(16 z - 1/4)
 * capped at 15 (the bucket [(k - 1/4)/16, (k + 3/4)/16); vrndscalepd to 4
 * fraction bits, or the bits of 16 z - 1/4 + 1.5 2^52), atan(n/d) =
 * atan(c) + atan(u), u = (n - c d) / (d + c n), |u| < 0.047: n - c d
 * rounded once (below 0.2 ULP of the result), d + c n = dh + dl by fma; u
 * and its rounding error ul (the residual by fma, over dh: vrcp14pd and
 * two Newton steps, or a division); atan(u) = u + u^3 P(u^2), P of degree
 * 4 (2^-65). B + s atan(c) and then + s u by Fast2Sums (B >= atan(c) >=
 * 0.062 > |u| unless zero), the low parts (B's, atan(c)'s, ul, u^3 P)
 * summed, then hi + lo.
 * The other lanes -- a zero, infinite or NaN operand, d above 2^1000 or
 * below 2^-900, n/d below 2^-28 (u^2 would underflow where the result
 * does not) -- take C99's special values and NumPy's flags ("underflow"
 * where the result underflows, nothing else): with AVX-512 libm's atan2,
 * a scalar call a lane, only where a vector holds one; elsewhere chosen
 * by bits (below).
 *
 * With AVX-512F/DQ (ND_ZV) an 8-lane form (the table by vpermt2pd);
 * elsewhere (AVX2, SSE2, scalar) the same arithmetic in plain C,
 * vectorized by GCC (the table by gathers, divisions for the reciprocals). */

#define ND_VT_PI2_HI 0x1.921fb54442d18p+0
#define ND_VT_PI2_LO 0x1.1a62633145c07p-54
#define ND_VT_PI_HI 0x1.921fb54442d18p+1
#define ND_VT_PI_LO 0x1.1a62633145c07p-53
#define ND_VT_MAGIC 0x1.8p52
/* atan(k/16), hi + lo */
static const double __attribute__((aligned(64))) ND_VT_ATAN_HI[16] = {0x0.0p+0, 0x1.ff55bb72cfdeap-5, 0x1.fd5ba9aac2f6ep-4, 0x1.7b97b4bce5b02p-3, 0x1.f5b75f92c80ddp-3, 0x1.362773707ebccp-2, 0x1.6f61941e4def1p-2, 0x1.a64eec3cc23fdp-2, 0x1.dac670561bb4fp-2, 0x1.0657e94db30d0p-1, 0x1.1e00babdefeb4p-1, 0x1.345f01cce37bbp-1, 0x1.4978fa3269ee1p-1, 0x1.5d58987169b18p-1, 0x1.700a7c5784634p-1, 0x1.819d0b7158a4dp-1};
static const double __attribute__((aligned(64))) ND_VT_ATAN_LO[16] = {0x0.0p+0, -0x1.c934d86d23f1dp-60, -0x1.cd37686760c17p-59, 0x1.347b0b4f881cap-58, 0x1.8ab6e3cf7afbdp-57, -0x1.963a544b672d8p-57, -0x1.c63aae6f6e918p-56, -0x1.24dec1b50b7ffp-56, 0x1.a2b7f222f65e2p-56, -0x1.d5b495f6349e6p-56, -0x1.928df287a668fp-58, 0x1.1021137c71102p-55, 0x1.2419a87f2a458p-56, 0x1.0028e4bc5e7cap-57, -0x1.8c34d25aadef6p-56, -0x1.bf76229d3b917p-56};
/* (atan(u) - u) / u^3 at s = u^2 (s2 = s^2), |u| <= 0.0471: degree 4
 * near-minimax (Chebyshev fit, 2^-65 of atan u), Estrin's scheme */
#define ND_VT_ATAN_P(C1, FMA, s, s2) \
    FMA(FMA(C1(-0x1.729f24e898803p-4), (s2), FMA(C1(0x1.c71b94658d05dp-4), (s), C1(-0x1.2492490e21699p-3))), (s2), \
        FMA(C1(0x1.999999999801ep-3), (s), C1(-0x1.5555555555555p-2)))
/* the bucket of z ~ n/d: MAGIC + k (k in its low bits; the C form) */
#define ND_VT_ATAN_KB(C1, FMA, MIN, z) \
    MIN(FMA((z), C1(16.0), C1(-0.25)) + C1(ND_VT_MAGIC), C1(ND_VT_MAGIC + 15.0))
/* out = B + sg atan(n/d) (bhi + blo = B, sg = +-1) from the bucket's c =
 * k/16 (the table by TB(table), over k), RCP(v) 1/v to 2^-52, over the
 * vector type V or double, its splat C1 and fma FMA; u^3 P added last
 * (the other low parts summed while P is computed) */
#define ND_VT_ATAN_FIN(V, C1, FMA, TB, RCP, c_, n, d, bhi, blo, sg, out) \
    do { \
        V num_ = FMA(-c_, (d), (n)); \
        V dh_ = FMA(c_, (n), (d)); \
        V dl_ = FMA(c_, (n), (d) - dh_); \
        V r_ = RCP(dh_); \
        V u_ = num_ * r_; \
        V ul_ = FMA(-u_, dl_, FMA(-u_, dh_, num_)) * r_; \
        V s_ = u_ * u_, s2_ = s_ * s_; \
        V p_ = (u_ * s_) * ND_VT_ATAN_P(C1, FMA, s_, s2_); \
        V st_ = (sg) * TB(ND_VT_ATAN_HI), su_ = (sg) * u_; \
        V h1_ = (bhi) + st_; \
        V l1_ = ((bhi) - h1_) + st_; \
        V h2_ = h1_ + su_; \
        V l2_ = (h1_ - h2_) + su_; \
        (out) = h2_ + FMA((sg), p_, (l1_ + l2_) + FMA((sg), TB(ND_VT_ATAN_LO) + ul_, (blo))); \
    } while (0)

#if ND_ZV
/* 1/v to 2^-52: vrcp14pd and two Newton steps */
ND_INLINE nd_v8d nd_zv_rcp52(nd_v8d v)
{
    nd_v8d r = ND_ZRCP(v);
    r = ND_ZFMA(r, ND_ZFNMA(v, r, ND_Z1(1.0)), r);
    return ND_ZFMA(r, ND_ZFNMA(v, r, ND_Z1(1.0)), r);
}
ND_INLINE nd_v8d nd_zv_atan2_8(nd_v8d y, nd_v8d x)
{
    nd_v8u sm = (nd_v8u)ND_Z1(-0.0);
    nd_v8d ay = (nd_v8d)((nd_v8u)y & ~sm), ax = (nd_v8d)((nd_v8u)x & ~sm);
    nd_m8 swap = ND_ZCMP(ay, ax, 0x1e);   /* > */
    nd_m8 neg = ND_ZCMP(x, ND_Z1(0.0), 0x11);   /* x < 0 */
    nd_v8d n = ND_ZSEL(swap, ax, ay), d = ND_ZSEL(swap, ay, ax);
    /* the fast lanes: 2^-900 <= d <= 2^1000 and n >= 2^-28 d (d 2^-28 in
     * those lanes only: below, it would raise "underflow") */
    nd_m8 ok = ND_ZCMP(ND_Z1(0x1p-900), d, 0x12) & ND_ZCMP(d, ND_Z1(0x1p1000), 0x12);
    ok &= ND_ZCMP(ND_ZMULM(d, ND_Z1(0x1p-60), ND_Z1(INFINITY), ok), n, 0x12);
    nd_v8d ns = n, ds = d;
    if (__builtin_expect(ok != (nd_m8)-1, 0)) {   /* the others computed on 1/2 over 1 (off the common path) */
        ns = ND_ZSEL(ok, n, ND_Z1(0.5));
        ds = ND_ZSEL(ok, d, ND_Z1(1.0));
    }
    /* c = k/16 by vrndscalepd (to 4 fraction bits, nearest, no "inexact") */
    nd_v8d c = ND_ZMIN(ND_ZRND(ns * ND_ZRCP(ds) - ND_Z1(0.015625), 0x48), ND_Z1(0.9375));
    nd_v8d kb = ND_ZFMA(c, ND_Z1(16.0), ND_Z1(ND_VT_MAGIC));
    nd_v8i j;
    memcpy(&j, &kb, sizeof j);
    /* B, sg: (0, 1); x < 0: (pi, -1); swapped: (pi/2, -1), x < 0: (pi/2, 1) */
    nd_v8d bhi = ND_ZSEL(neg, ND_Z1(ND_VT_PI_HI), ND_Z1(0.0)), blo = ND_ZSEL(neg, ND_Z1(ND_VT_PI_LO), ND_Z1(0.0));
    bhi = ND_ZSEL(swap, ND_Z1(ND_VT_PI2_HI), bhi);
    blo = ND_ZSEL(swap, ND_Z1(ND_VT_PI2_LO), blo);
    nd_v8d sg = ND_ZSEL((nd_m8)(swap ^ neg), ND_Z1(-1.0), ND_Z1(1.0)), res;
    ND_VT_ATAN_FIN(nd_v8d, ND_Z1, ND_ZFMA, ND_VM_ZTB, nd_zv_rcp52, c, ns, ds, bhi, blo, sg, res);
    res = (nd_v8d)((nd_v8u)res | ((nd_v8u)y & sm));
    if (__builtin_expect(ok != (nd_m8)-1, 0))
        for (int i = 0; i < 8; i++)
            if (!((ok >> i) & 1))
                res[i] = __builtin_atan2(y[i], x[i]);
    return res;
}
/* the entry points: nd_zv_atan2's vector-ABI variants (8, 4, 2 lanes;
 * the narrower ones fill the rest with 1, 1) and its scalar symbol */
__attribute__((simd("notinbranch"), const, nothrow)) double nd_zv_atan2(double, double) __asm__("nd_zv_atan2");
static ND_ZV_DEF nd_v8d nd_zv_atan2_e(nd_v8d y, nd_v8d x) __asm__("_ZGVeN8vv_nd_zv_atan2");
static nd_v8d nd_zv_atan2_e(nd_v8d y, nd_v8d x) { return nd_zv_atan2_8(y, x); }
#define ND_VT_NARROW2(NM, VD, LD, ISA) \
static ND_ZV_DEF VD NM(VD y, VD x) __asm__("_ZGV" ISA "N" #LD "vv_nd_zv_atan2"); \
static VD NM(VD y, VD x) \
{ \
    nd_v8d wy = ND_Z1(1.0), wx = ND_Z1(1.0); \
    for (int i = 0; i < LD; i++) { wy[i] = y[i]; wx[i] = x[i]; } \
    wy = nd_zv_atan2_8(wy, wx); \
    for (int i = 0; i < LD; i++) y[i] = wy[i]; \
    return y; \
}
ND_VT_NARROW2(nd_zv_atan2_d, nd_v4d, 4, "d")
ND_VT_NARROW2(nd_zv_atan2_c, nd_v4d, 4, "c")
ND_VT_NARROW2(nd_zv_atan2_b, nd_v2d, 2, "b")
static ND_ZV_DEF double nd_zv_atan2_s(double y, double x) __asm__("nd_zv_atan2");
static double nd_zv_atan2_s(double y, double x) { return nd_zv_atan2_8(ND_Z1(y), ND_Z1(x))[0]; }
ND_INLINE double nd_atan2(double y, double x)
{
    static __attribute__((used)) const void *const keep[] = {(const void *)nd_zv_atan2_e, (const void *)nd_zv_atan2_d,
        (const void *)nd_zv_atan2_c, (const void *)nd_zv_atan2_b, (const void *)nd_zv_atan2_s};
    (void)keep;
    return nd_zv_atan2(y, x);
}
#else
ND_INLINE double nd_vt_cmin(double a, double b) { return nd_bsel_d(__builtin_isless(a, b), a, b); }
#define ND_VT_CRCP(v) (1.0 / (v))
/* the special lanes arithmetically (no call, the loop stays vectorized):
 * operands past 2^1000 or below 2^-900 scaled by 2^-600 or 2^600 (exact)
 * into the fast lanes; n/d below 2^-60 (n > 0, d finite) as B + sg n/d
 * (n/d a division: "underflow" where it underflows, as NumPy, and n
 * raised to d 2^-80 where B is not 0: below B's last bit); a zero n or
 * an infinite d as B, both infinite +-pi/4 or +-3pi/4, NaN y + x */
ND_INLINE double nd_atan2(double y0, double x0)
{
    /* a NaN lane computes on 1 and gives y + x: the compares below are
     * ordered ones, which GCC vectorizes as signaling (vcmpnltpd), and the
     * "invalid" they raised for a NaN had NumPy rerun the graph */
    int nan = (y0 != y0) | (x0 != x0);
    double y = nd_bsel_d(nan, 1.0, y0), x = nd_bsel_d(nan, 1.0, x0);
    double ay = __builtin_fabs(y), ax = __builtin_fabs(x);
    int swap = __builtin_isgreater(ay, ax), neg = (int)(nd_d2b(x) >> 63);
    double n = nd_bsel_d(swap, ax, ay), d = nd_bsel_d(swap, ay, ax);
    double sc = nd_bsel_d(__builtin_isgreater(d, 0x1p1000), 0x1p-600, nd_bsel_d(__builtin_isless(d, 0x1p-900), 0x1p600, 1.0));
    n *= sc;
    d *= sc;
    int ok = __builtin_islessequal(d * 0x1p-60, n) & __builtin_isless(d, ND_INF_D) & __builtin_isgreater(n, 0.0);
    int tiny = !ok & __builtin_isgreater(n, 0.0) & __builtin_isless(d, ND_INF_D);
    double nq = nd_bsel_d(swap | neg, nd_bsel_d(__builtin_isless(n, d * 0x1p-80), d * 0x1p-80, n), n);
    /* one division: z ~ n/d in the fast lanes, the tiny lanes' n/d */
    double z = nd_bsel_d(ok, n, nd_bsel_d(tiny, nq, 0.0)) / nd_bsel_d(ok | tiny, d, 1.0);
    double ns = nd_bsel_d(ok, n, 0.5), ds = nd_bsel_d(ok, d, 1.0);
    double kb = ND_VT_ATAN_KB(ND_VM_C1, __builtin_fma, nd_vt_cmin, z);
    int64_t j = (int64_t)(nd_d2b(kb) & 15);
    double bhi = nd_bsel_d(swap, ND_VT_PI2_HI, nd_bsel_d(neg, ND_VT_PI_HI, 0.0));
    double blo = nd_bsel_d(swap, ND_VT_PI2_LO, nd_bsel_d(neg, ND_VT_PI_LO, 0.0));
    double sg = nd_bsel_d(swap ^ neg, -1.0, 1.0), res;
    ND_VT_ATAN_FIN(double, ND_VM_C1, __builtin_fma, ND_VM_CTB, ND_VT_CRCP, (kb - ND_VT_MAGIC) * 0.0625, ns, ds, bhi, blo,
                   sg, res);
    double sp = bhi + __builtin_fma(sg, nd_bsel_d(tiny, z, 0.0), blo);
    sp = nd_bsel_d(n == ND_INF_D, nd_bsel_d(neg, 0x1.2d97c7f3321d2p+1, 0x1.921fb54442d18p-1), sp);
    res = __builtin_copysign(nd_bsel_d(ok, res, sp), y);
    return nd_bsel_d(nan, y0 + x0, res);
}
#endif

/* arctan: atan2(x, 1)'s arithmetic (above), B + sg atan(n/d) with n =
 * min(a, 1), d = max(a, 1) (a = |x|; a > 1: B = pi/2, sg = -1), and no
 * other special lanes than below 2^-28 (x itself, +-0 with its sign: u^2
 * would underflow, and NumPy raises no flag), above 2^60 and +-inf
 * (+-pi/2 rounded, which atan reaches from 2^53), NaN (itself). No flag
 * for any operand, as NumPy's. NumPy 2's float64 arctan (SVML's) is
 * within ~0.57 ULP; SLEEF's 3.5-ULP atan was 1.8 ULP off and a fifth of
 * its results differed from NumPy's in their last bits. */
#if !ND_ZV
ND_INLINE double nd_atan(double x)
{
    double a = __builtin_fabs(x);
    int ok = nd_inrange_d(a, 0x1p-28, 0x1p60);
    double as = nd_bsel_d(ok, a, 0.5);
    int swap = as > 1.0;
    double n = nd_bsel_d(swap, 1.0, as), d = nd_bsel_d(swap, as, 1.0);
    double kb = ND_VT_ATAN_KB(ND_VM_C1, __builtin_fma, nd_vt_cmin, n / d);
    int64_t j = (int64_t)(nd_d2b(kb) & 15);
    double bhi = nd_bsel_d(swap, ND_VT_PI2_HI, 0.0), blo = nd_bsel_d(swap, ND_VT_PI2_LO, 0.0);
    double sg = nd_bsel_d(swap, -1.0, 1.0), res;
    ND_VT_ATAN_FIN(double, ND_VM_C1, __builtin_fma, ND_VM_CTB, ND_VT_CRCP, (kb - ND_VT_MAGIC) * 0.0625, n, d, bhi, blo,
                   sg, res);
    double sp = nd_bsel_d(nd_inrange_d(a, 0x1p60, ND_INF_D), ND_VT_PI2_HI, a);
    return __builtin_copysign(nd_bsel_d(ok, res, sp), x);
}
#endif

/* tanh: NumPy 2's float64 tanh (SVML's) is within ~1.2 ULP; numdyn's
 * former t / (t + 2), t = expm1(2|x|) rounded, was ~2 ULP off. This one
 * (after session 25's acc9) carries t = expm1(-2|x|) and the quotient in
 * double-double to the last addition (0.5x ULP in the worst case found;
 * tests/test_vmath_f64_accuracy.py):
 * y = -2 min(|x|, 19.5) (tanh rounds to 1 from 19.06) = k ln2 + rh + rl:
 * y - k ln2hi exact (ln2hi of 42 bits), rh the rest less k ln2lo by fma.
 * expm1(rh) = rh + q, q = rh^2 P(rh) (nd_kernel.h's degree-9 P of expm1,
 * by Estrin's scheme), as eh + el by Fast2Sum (|q| < |rh|), plus rh's
 * error. t = 2^k (1 + eh + el) - 1 = wh + wl in (-1, 0]: (2^k - 1) +
 * 2^k eh by Fast2Sum (|2^k - 1| >= 2^k |eh| unless 0). tanh(-|x|) =
 * t / (t + 2): D + Dl = 2 + wh (Fast2Sum, D in (1, 2]), q0 ~ wh / D, the
 * residual wh - q0 D (fma) + wl - q0 (Dl + wl) over D added to q0; the
 * sign of x on it. 1/D: a division (C form), or vrcp14pd and one Newton
 * step (2^-28: q0 to 2^-28, its correction to 2^-56 of the result) with
 * AVX-512 (vdivpd zmm alone costs 0.7 ns an element).
 * Below 2^-28 x itself (+-0 with its sign), +-1 at +-inf (the cap), NaN
 * itself; no flag for any operand, as NumPy's. */
/* -tanh|x| (before its sign) from xc = min(|x|, 19.5), over the vector
 * type V or double, its splat C1, fma FMA, P2(kd, kb) = 2^k and RCP(D)
 * ~ 1/D (to 2^-28 at least) */
#define ND_VT_TANH(V, C1, FMA, P2, RCP, xc, out) \
    do { \
        V kb_ = FMA((xc), C1(-0x1.71547652b82fep+1), C1(ND_VT_MAGIC)), kd_ = kb_ - C1(ND_VT_MAGIC); \
        V r0_ = FMA(-kd_, C1(ND_VM_LN2_HI), C1(-2.0) * (xc)); \
        V rh_ = FMA(-kd_, C1(ND_VM_LN2_LO), r0_); \
        V r2_ = rh_ * rh_, r4_ = r2_ * r2_; \
        /* P(rh) - 1/2 of nd_kernel.h's expm1 P (nd_em1p_d's), Estrin */ \
        V c01_ = FMA(rh_, C1(0x1.5555555555556p-3), C1(0x1p-53)); \
        V c23_ = FMA(rh_, C1(0x1.11111111109b3p-7), C1(0x1.5555555553d63p-5)); \
        V c45_ = FMA(rh_, C1(0x1.a01a01a7c41d5p-13), C1(0x1.6c16c1788bd90p-10)); \
        V c67_ = FMA(rh_, C1(0x1.71de0dae63bb3p-19), C1(0x1.a019b90d2ae7ap-16)); \
        V c89_ = FMA(rh_, C1(0x1.af38a9b0ec855p-26), C1(0x1.289185613a3d6p-22)); \
        V p_ = FMA(FMA(c89_, r4_, FMA(c67_, r2_, c45_)), r4_, FMA(c23_, r2_, c01_)); \
        V q_ = FMA(r2_, p_, C1(0.5) * r2_); \
        V eh_ = rh_ + q_; \
        V el_ = FMA(-kd_, C1(ND_VM_LN2_LO), (r0_ - rh_) + ((rh_ - eh_) + q_)); \
        V s_ = P2(kd_, kb_), a_ = s_ - C1(1.0), b_ = s_ * eh_; \
        V wh_ = a_ + b_, wl_ = ((a_ - wh_) + b_) + FMA(s_, el_, (C1(-1.0) - a_) + s_); \
        V d_ = C1(2.0) + wh_, dl_ = (C1(2.0) - d_) + wh_; \
        V rc_ = RCP(d_); \
        V q0_ = wh_ * rc_; \
        V e_ = FMA(-q0_, d_, wh_) + FMA(-q0_, dl_ + wl_, wl_); \
        (out) = FMA(e_, rc_, q0_); \
    } while (0)
#if !ND_ZV
#define ND_VT_CP2(kd, kb) nd_p2_d((int64_t)(nd_d2b(kb) - nd_d2b(ND_VT_MAGIC)))
ND_INLINE double nd_tanh(double x)
{
    double ax = __builtin_fabs(x), res;
    uint64_t axb = nd_d2b(ax), capb = nd_d2b(19.5);
    double xc = nd_b2d(axb < capb ? axb : capb);   /* NaN: 19.5 */
    ND_VT_TANH(double, ND_VM_C1, __builtin_fma, ND_VT_CP2, ND_VT_CRCP, xc, res);
    return nd_tsel_d(nd_inrange_d(ax, 0x1p-28, ND_INF_D), __builtin_copysign(res, x), x);
}
#endif

/* sinh and cosh of float64: nd_kernel.h's form (ND_HYP: e^|x| = 2^k (1
 * + ev + od) and e^-|x| = 2^-k (1 + ev - od) from one reduction and one
 * polynomial split by parity; sinh = 2 (A + C od + A ev), cosh = 2 (C +
 * A od + C ev), A = 2^(k-2) - 2^(-k-2), C = 2^(k-2) + 2^(-k-2)) with
 * the leading terms in double-double: A or C and its rounding error
 * (k > 25; Fast2Sum),
 * od = r + ot (ot = r^3 Q(r^2)), M r = h + l by fma (M = C for sinh, A
 * for cosh), L + h by Fast2Sum (L = A or C: |L| >= |M r| unless L = 0,
 * where the sum is h), then the low parts -- its error, l, L's, C ot + A ev
 * (sinh) or A ot + C ev (cosh), and M rl, rl the reduction's rounding
 * error (r = |x| - k ln2 rounded: 2^-55 of r, a quarter ULP of sinh near
 * ln2/2 otherwise) -- summed, then hi + lo, times 2. Session 25's form
 * summed L + (M od + L ev) rounded: 1.8 ULP (sinh) and 1.4 (cosh) off;
 * this one within 0.6 (tests/test_vmath_f64_accuracy.py), for 6 more
 * operations. |x| capped at 710.5 (both overflow just below it: the last
 * doubling gives inf and "overflow" there, and not earlier; an infinite
 * operand's last factor is inf, not 2: inf quietly, as NumPy's); x itself
 * below 2^-28 (sinh; cosh 1 there by the arithmetic); a NaN passes the cap
 * (by bits: nd_inrange_d) and the arithmetic quietly (2^k from its bits
 * is finite or inf, never NaN). */
#if !ND_ZV
ND_INLINE double nd_vt_hyp(double x, int cosh_)
{
    double ax = __builtin_fabs(x);
    /* |x| capped at 710.5 by its bits (no flag), a NaN passed through */
    double xc = nd_bsel_d(nd_inrange_d(ax, 710.5, ND_INF_D), 710.5, ax);
    int64_t k;
    double r0, kd;
    {
        double kb = __builtin_fma(xc, 0x1.71547652b82fep+0, 0x1.8p52);
        kd = kb - 0x1.8p52;
        k = (int64_t)(nd_d2b(kb) - nd_d2b(0x1.8p52));
        r0 = __builtin_fma(-kd, 0x1.62e4200000000p-1, xc);
    }
    double r = __builtin_fma(-kd, 0x1.fdf473de6af28p-22, r0);
    double rl = __builtin_fma(-kd, 0x1.fdf473de6af28p-22, r0 - r);
    double ot, ev = nd_em1eot_d(r, &ot);
    double sc = nd_p2_d(k - 2), sc2 = nd_p2_d(-(k < 1000 ? k : 1000) - 2);
    double a = sc - sc2, c = sc + sc2;
    double lead = cosh_ ? c : a, m = cosh_ ? a : c;
    double ll = cosh_ ? (sc - c) + sc2 : (sc - a) - sc2;   /* lead's rounding error (k > 25) */
    double h = m * r, l = __builtin_fma(m, r, -h);
    double hi = lead + h;
    double lo = ((lead - hi) + h) + ((l + ll) + __builtin_fma(c, cosh_ ? ev : ot, __builtin_fma(a, cosh_ ? ot : ev, m * rl)));
    return nd_bsel_d(ax == ND_INF_D, ax, 2.0) * (hi + lo);
}
ND_INLINE double nd_sinh(double x)
{
    double r = __builtin_copysign(nd_vt_hyp(x, 0), x);
    return nd_tsel_d(nd_inrange_d(__builtin_fabs(x), 0x1p-28, ND_INF_D), r, x);
}
ND_INLINE double nd_cosh(double x) { return nd_vt_hyp(x, 1); }
#endif
