/* nd_vm32.h -- numdyn's own float32 vector math, included by nd_kernel.h
 * after its float32 forms (it uses their helpers: ND_Y* and the 16-lane
 * entry points where the target has AVX-512F/DQ, nd_bsel_f, nd_f2b,
 * nd_nan_where_f elsewhere).
 *
 * log2 and log10. NumPy's float32 log2/log10 (SVML with AVX-512) are
 * within ~1 ULP; SLEEF's 3.5-ULP log2f and logf times 1/ln10 ran
 * 0.82-0.86x NumPy's loops (bench/bench_vmath.py).
 *
 * AVX-512 (16 lanes): x = 2^e m, m in [1, 2) (vgetmant, vgetexp: subnormals
 * too); c the centre of m's 1/32 bucket (its top 5 bits), except c = 1 for
 * the first bucket and c = 2 for the last, so that next to x = 1 the table
 * terms cancel exactly (log_b(c) = 0, or e log_b 2 + log_b 2 = 0) and the
 * result is the polynomial alone; r = m/c - 1 by one fma (|r| < 1/32).
 * log_b(x) = (e KH + HI_j) + (r LH + (r LL + LO_j + e KL + r^2 Q(r))):
 * e KH + HI_j is exact (HI a multiple of 2^-16 (log2) / 2^-17 (log10), KH
 * = 1 or log10(2) to 16 bits, |e| <= 149), LH + LL = 1/ln b, HI + LO =
 * log_b(1/(1/c rounded)), Q Taylor's to r^3 (2^-27 relative). Tables of 32
 * floats by vpermt2ps. 16 vector operations a vector and a vfpclass test:
 * +-0, negative, +-inf and NaN take a second pass (-inf at +-0, "divide"
 * from the kernel's nd_ckat; NaN with "invalid" below 0 from one masked
 * product; x itself for +inf and NaN). Within 1 ULP of the float64 result
 * rounded once (tests/test_vmath_f32.py).
 *
 * Elsewhere (AVX2, SSE2, scalar) the same result from plain C that GCC
 * vectorizes (8 lanes on AVX2): no table (a gather a vector cost more
 * than the polynomial), x = 2^k (1 + f), 1 + f in [sqrt(1/2), sqrt(2)) from
 * the bits (subnormals scaled by 2^23 first), ln(1 + f) = f + g, g = -f^2/2
 * + f^3 P(f) (nd_kernel.h's degree-7 P of nd_log1p_pos_f), log_b(x) = k KH
 * + (f LH + (f LL + g (LH + LL) + k KL)). Within 1 ULP too. */
#ifndef ND_VM32_H
#define ND_VM32_H

/* ---------------------------------------------------- log2, log10 */
#define ND_VM32_LOG2_LH 0x1.715476p+0f
#define ND_VM32_LOG2_LL 0x1.4ae0cp-26f
#define ND_VM32_LOG10_LH 0x1.bcb7b2p-2f
#define ND_VM32_LOG10_LL -0x1.5b235ep-27f
#define ND_VM32_LOG10_KH 0x1.3442p-2f
#define ND_VM32_LOG10_KL -0x1.95ec1p-19f

/* ln(1 + f) - f for f in [sqrt(1/2) - 1, sqrt(2) - 1) (the C forms) */
ND_INLINE float nd_vm32_log1p_g(float f)
{
    float p = -0x1.2d9544p-4f;
    p = __builtin_fmaf(p, f, 0x1.0276dcp-3f); p = __builtin_fmaf(p, f, -0x1.0e610cp-3f);
    p = __builtin_fmaf(p, f, 0x1.235f0ep-3f); p = __builtin_fmaf(p, f, -0x1.5467dap-3f);
    p = __builtin_fmaf(p, f, 0x1.9998b0p-3f); p = __builtin_fmaf(p, f, -0x1.00023cp-2f);
    p = __builtin_fmaf(p, f, 0x1.555564p-2f);
    float f2 = f * f;
    return __builtin_fmaf(f2 * f, p, f2 * -0.5f);
}
/* log_b(x) of float32 in plain C (every target; AVX2's, SSE2's and the
 * scalar one's). Quiet compares only on a NaN (== and !=): GCC vectorizes <
 * and > as signaling compares, and the "invalid" of a NaN lane had NumPy
 * rerun the graph. */
#define ND_VM32_LOGB_C(NM, KH, KL, LH, LL) \
ND_INLINE float NM(float x0) \
{ \
    float x = nd_bsel_f(x0 == x0, x0, 1.0f); \
    int neg = x < 0, zero = x == 0, inf = x == (float)INFINITY, sub = x < 0x1p-126f; \
    float xs = nd_bsel_f(neg | zero | inf, 1.0f, x) * nd_bsel_f(sub & !zero, 0x1p23f, 1.0f); \
    uint32_t ix = nd_f2b(xs), tmp = ix - 0x3f3504f3u; \
    int32_t k = ((int32_t)tmp >> 23) - 23 * (sub & !zero); \
    float f = nd_b2f(ix - (tmp & 0xff800000u)) - 1.0f; \
    float g = nd_vm32_log1p_g(f), kd = (float)k; \
    float lo = __builtin_fmaf(g, LH, __builtin_fmaf(g, LL, __builtin_fmaf(f, LL, kd * KL))); \
    float r = __builtin_fmaf(kd, KH, __builtin_fmaf(f, LH, lo)); \
    r = nd_bsel_f(zero, -(float)INFINITY, nd_bsel_f(inf, x, r)); \
    r = nd_bsel_f(neg, nd_nan_where_f(neg), r); \
    return nd_bsel_f(x0 != x0, x0, r); \
}
ND_VM32_LOGB_C(nd_log2f_c, 1.0f, 0.0f, ND_VM32_LOG2_LH, ND_VM32_LOG2_LL)
ND_VM32_LOGB_C(nd_log10f_c, ND_VM32_LOG10_KH, ND_VM32_LOG10_KL, ND_VM32_LOG10_LH, ND_VM32_LOG10_LL)

#if ND_ZV
/* 1/c over m in [1, 2)'s 32 buckets (1 and 1/2 at the ends), and log_b(c)
 * = HI + LO for the rounded 1/c */
/* log2: 1/c over m in [1, 2)'s 32 buckets (1 and 1/2 at the ends), each
 * chosen within 1/128 of the bucket's centre so that log2(c) lies within
 * 2^-31.8 of a multiple of 2^-16 (HI: no low part) */
static const float __attribute__((aligned(64))) ND_VM32_LOG2_INVC[32] = {
    0x1p+0f, 0x1.e7534ap-1f, 0x1.db5b6ep-1f, 0x1.cbfc38p-1f, 0x1.bf2618p-1f, 0x1.b6a47p-1f, 0x1.a87aeap-1f,
    0x1.a029aap-1f, 0x1.94c47cp-1f, 0x1.8a615ap-1f, 0x1.801192p-1f, 0x1.789b58p-1f, 0x1.6ecd74p-1f, 0x1.6a13b4p-1f,
    0x1.608076p-1f, 0x1.574cb6p-1f, 0x1.51a73ep-1f, 0x1.498c8ep-1f, 0x1.446c7ep-1f, 0x1.3d0852p-1f, 0x1.366308p-1f,
    0x1.319292p-1f, 0x1.2d6c1p-1f, 0x1.28cc0ep-1f, 0x1.22b142p-1f, 0x1.1b4a1ep-1f, 0x1.18deb6p-1f, 0x1.1252acp-1f,
    0x1.0fcc7ep-1f, 0x1.087e58p-1f, 0x1.047b62p-1f, 0x1p-1f};
static const float __attribute__((aligned(64))) ND_VM32_LOG2_HI[32] = {
    0.0f, 0x1.23ep-4f, 0x1.b6dp-4f, 0x1.3c88p-3f, 0x1.9028p-3f, 0x1.c8e8p-3f, 0x1.14fp-2f, 0x1.322cp-2f, 0x1.5b3p-2f,
    0x1.8198p-2f, 0x1.a8bcp-2f, 0x1.c5b8p-2f, 0x1.ecbp-2f, 0x1.ffd8p-2f, 0x1.13b8p-1f, 0x1.2742p-1f, 0x1.3382p-1f,
    0x1.4574p-1f, 0x1.5108p-1f, 0x1.620ep-1f, 0x1.71b4p-1f, 0x1.7d4p-1f, 0x1.875ap-1f, 0x1.92c6p-1f, 0x1.a22p-1f,
    0x1.b52ep-1f, 0x1.bb84p-1f, 0x1.ccfp-1f, 0x1.d3c4p-1f, 0x1.e7e4p-1f, 0x1.f32ep-1f, 0x1p+0f};
/* x = 2^e m, m in [1, 2): r = m/c - 1 by one fma, *j m's bucket, *invc 1/c */
ND_INLINE nd_v16f nd_vm32_zlog_red(nd_v16f x, nd_v16f *e, nd_v16i *j, nd_v16f *invc)
{
    nd_v16f m = ND_YGETMANT(x, 4);   /* [1, 2), sign cleared */
    *e = ND_YGETEXP(x);
    memcpy(j, &m, sizeof *j);
    *j = (nd_v16i)((nd_v16u)*j >> 18);   /* vpermt2ps reads the low 5 bits */
    *invc = ND_YTAB32(ND_VM32_LOG2_INVC, *j);
    return ND_YFMA(m, *invc, ND_Y1(-1.0f));
}
/* NM##v: log_b of 16 floats; LH and Q's coefficients (near-minimax,
 * 2^-31 relative): log_b(1 + r) = r LH + r^2 Q(r); FIN(w, t): the result
 * from w = e + log2(c) (exact) and t = log_b(1 + r) */
#define ND_VM32_ZLOGB(NM, FIN, LH, C0, C1, C2, C3) \
ND_INLINE nd_v16f NM##_m(nd_v16f x) \
{ \
    nd_v16f e, invc; \
    nd_v16i j; \
    nd_v16f r = nd_vm32_zlog_red(x, &e, &j, &invc); \
    nd_v16f r2 = r * r; \
    nd_v16f q = ND_YFMA(r2, ND_YFMA(r, ND_Y1(C3), ND_Y1(C2)), ND_YFMA(r, ND_Y1(C1), ND_Y1(C0))); \
    nd_v16f t = ND_YFMA(r, ND_Y1(LH), r2 * q); \
    return FIN(e + ND_YTAB32(ND_VM32_LOG2_HI, j), t); \
} \
ND_INLINE nd_v16f NM##v(nd_v16f x) \
{ \
    nd_m16 bad = ND_YFPCLASS(x, 0xdf);   /* NaN, +-0, +-inf, negative */ \
    if (__builtin_expect(bad == 0, 1)) \
        return NM##_m(x); \
    nd_v16f res = NM##_m(ND_YSEL(bad, ND_Y1(1.0f), x)); \
    res = ND_YSEL(ND_YFPCLASS(x, 0x06), ND_Y1(-__builtin_inff()), res);   /* +-0 */ \
    res = ND_YMULM(ND_Y1(__builtin_inff()), ND_Y1(0.0f), res, ND_YFPCLASS(x, 0x50));   /* < 0, -inf */ \
    return ND_YSEL(ND_YFPCLASS(x, 0x89), x, res);   /* NaN, +inf */ \
}
/* log2: w + t; log10: w (KH + KL) + t, KH 16 bits (w KH + (w KL + t)
 * rounded once) */
#define ND_VM32_LOG2_FIN(w, t) ((w) + (t))
#define ND_VM32_LOG10_FIN(w, t) ND_YFMA(w, ND_Y1(ND_VM32_LOG10_KH), ND_YFMA(w, ND_Y1(ND_VM32_LOG10_KL), t))
ND_VM32_ZLOGB(nd_vm32_zlog2, ND_VM32_LOG2_FIN, ND_VM32_LOG2_LH, -0x1.715474p-1f, 0x1.ec7098p-2f, -0x1.71a164p-2f,
              0x1.27c12p-2f)
ND_VM32_ZLOGB(nd_vm32_zlog10, ND_VM32_LOG10_FIN, ND_VM32_LOG10_LH, -0x1.bcb7aep-3f, 0x1.287a72p-3f, -0x1.bd1454p-4f,
              0x1.641faep-4f)
ND_ZVF_ENTRY(nd_zvf_log2, nd_vm32_zlog2v, 1.0f)
ND_ZVF_ENTRY(nd_zvf_log10, nd_vm32_zlog10v, 1.0f)
ND_INLINE float nd_log2f(float x) { ND_ZV_KEEP(nd_zvf_log2) return nd_zvf_log2(x); }
ND_INLINE float nd_log10f(float x) { ND_ZV_KEEP(nd_zvf_log10) return nd_zvf_log10(x); }
#else
ND_INLINE float nd_log2f(float x) { return nd_log2f_c(x); }
ND_INLINE float nd_log10f(float x) { return nd_log10f_c(x); }
#endif

/* ------------------------------------ arcsinh, arccosh, arctanh core */
/* AVX-512: nd_kernel.h's ND_ZV_INVHYP_DEF over this log core: log(u + cor)
 * for u >= 1 finite as log2's reduction (m in [1, 2), the 32-bucket tables
 * whose log2(c) needs no low part: w = e + log2(c) exact), ln(1 + r) = r +
 * r^2 Q(r) (near-minimax, 2^-30.5 relative) plus cor/u = cor 2^-e (1/c)
 * (1 - r), then w ln2 + t in one rounding (ln2 as hi + lo). TWICE: log(2u)
 * in those lanes (cor 0 there). ~18 vector operations against the float
 * log core's ~24 (no exponent fix-up, no low-part table). */
#if ND_ZV
ND_INLINE nd_v16f nd_vm32_zf_log_core(nd_v16f u, nd_v16f cor, int withcor, nd_m16 twice)
{
    nd_v16f e, invc;
    nd_v16i j;
    nd_v16f r = nd_vm32_zlog_red(u, &e, &j, &invc);
    nd_v16f r2 = r * r;
    nd_v16f q = ND_YFMA(r2, ND_YFMA(r, ND_Y1(0x1.9a00acp-3f), ND_Y1(-0x1.003552p-2f)),
                        ND_YFMA(r, ND_Y1(0x1.555552p-2f), ND_Y1(-0x1.fffffcp-2f)));
    nd_v16f lo = r2 * q;
    if (withcor) {
        nd_v16f d = ND_YSCALEF(cor * invc, -e);
        lo = lo + ND_YFNMA(d, r, d);
    }
    nd_v16f t = r + lo;
    if (twice)
        e = __builtin_ia32_addps512_mask(e, ND_Y1(1.0f), e, twice, ND_ZV_CUR);
    nd_v16f w = e + ND_YTAB32(ND_VM32_LOG2_HI, j);
    return ND_YFMA(w, ND_Y1(0x1.62e43p-1f), ND_YFMA(w, ND_Y1(-0x1.05c61p-29f), t));
}
/* arcsinh and arccosh: log(2a) above 2^12 (1/(4a^2) below the last bit), a
 * itself below 2^-40; arctanh: 1/v to 2^-28 (as over nd_kernel.h's float
 * core, which ran 0.79-0.91x NumPy's loops; arctanh 0.91x -> 1.02x) */
ND_ZV_INVHYP_DEF(Y, nd_v16f, nd_v16u, nd_m16, nd_vm32_zf, 1, 0x1p-40, 0x1p12, 0x1p-60)
/* sqrt(h), h >= 0, to 2^-28: s0 = h vrsqrt14(h) (*py; of 2^-60 at least)
 * and one Heron step */
ND_INLINE nd_v16f nd_vm32_zf_sqrt(nd_v16f h, nd_v16f *py)
{
    nd_v16f y = *py = ND_YRSQRT(ND_YMAX(h, ND_Y1(0x1p-60f)));
    nd_v16f s0 = h * y;
    return ND_YFMA(ND_Y1(0.5f) * y, ND_YFNMA(s0, s0, h), s0);   /* Heron's step from the exact residual */
}
/* log1p(b + c), b >= c >= 0: the core over u = 1 + v, v = b + c, and the
 * two rounding errors (Fast2Sum each) */
ND_INLINE nd_v16f nd_vm32_zf_log1p_sum(nd_v16f b, nd_v16f c)
{
    nd_v16f v = b + c, u = ND_Y1(1.0f) + v;
    return nd_vm32_zf_log_core(u, ((v - (u - ND_Y1(1.0f))) + ((b - v) + c)), 1, 0);
}
/* arccosh x = log1p(s + t), t = x - 1 (exact below 2), s = sqrt(t (2 + t))
 * to 2^-28 (vrsqrt14 and one Newton step, t (2 + t)'s rounding error added
 * as hl / 2s): no double-float square root (the form over x^2 - 1 in double-float, as
 * arcsinh's: 0.93x NumPy's loop; this 1.13x, 0.44% of the results not
 * correctly rounded against 0.03%, within 1 ULP) */
ND_INLINE nd_v16f nd_vm32_zf_acosh2_m(nd_v16f x)
{
    nd_v16f t = x - ND_Y1(1.0f), t2 = t + t;
    nd_v16f h = ND_YFMA(t, t, t2);
    nd_v16f hl = ND_YFMA(t, t, t2 - h);   /* h's rounding error (t2 - h exact for t <= 2) */
    nd_v16f y, s = nd_vm32_zf_sqrt(h, &y);
    return nd_vm32_zf_log1p_sum(ND_YFMA(hl, ND_Y1(0.5f) * y, s), t);
}
ND_INLINE nd_v16f nd_vm32_zf_acosh2v(nd_v16f x)
{
    nd_m16 ok = ND_YCMP(x, ND_Y1(1.0f), 0x1d) & ND_YCMP(x, ND_Y1(0x1p12f), 0x12);   /* >=, <= */
    if (__builtin_expect(ok == (nd_m16)-1, 1))
        return nd_vm32_zf_acosh2_m(x);
    nd_v16f res = nd_vm32_zf_invhyp_big(x, x, nd_vm32_zf_acosh2_m(ND_YSEL(ok, x, ND_Y1(1.0f))));
    return ND_YMULM(ND_Y1(__builtin_inff()), ND_Y1(0.0f), res, ND_YCMP(x, ND_Y1(1.0f), 0x11));
}
ND_ZVF_ENTRY(nd_zvf_atanh, nd_vm32_zf_atanhv, 0.0f)
ND_ZVF_ENTRY(nd_zvf_asinh, nd_vm32_zf_asinhv, 1.0f)
ND_ZVF_ENTRY(nd_zvf_acosh, nd_vm32_zf_acosh2v, 1.0f)
ND_INLINE float nd_asinhf(float x) { ND_ZV_KEEP(nd_zvf_asinh) return nd_zvf_asinh(x); }
ND_INLINE float nd_acoshf(float x) { ND_ZV_KEEP(nd_zvf_acosh) return nd_zvf_acosh(x); }
ND_INLINE float nd_atanhf(float x) { ND_ZV_KEEP(nd_zvf_atanh) return nd_zvf_atanh(x); }
#else
/* arcsinh's C form on a non-NaN operand (NaN made 0 first by a quiet
 * compare: its compares with BIG, vectorized as signaling ones, raised
 * "invalid" for a NaN lane) */
ND_INLINE float nd_asinhf(float x) { return nd_bsel_f(x != x, x, nd_asinhf_c(nd_bsel_f(x == x, x, 0.0f))); }
#endif

/* -------------------------------------------------------- sinh, cosh */
/* AVX-512 (16 lanes): nd_kernel.h's ND_HYP in vector builtins -- e^a and
 * e^-a from one reduction a = k ln2 + r and expm1(+-r) = ev +- od (its
 * polynomial split by parity), sinh a = 2 (A (1 + ev) + C od), cosh a = 2
 * (C (1 + ev) + A od), A, C = 2^(k-2) -+ 2^(-k-2) by vscalef (exact where
 * they count) -- with a = min(|x|, 89.5) by one vrangeps and 2^-12 at
 * least (sinh x is x below it: selected; cosh rounds to 1), so no lane
 * underflows; past sinh's range the last doubling overflows with its
 * flag. +-inf and NaN take a second pass (inf quietly, NaN itself). GCC's
 * vectorized C form (still AVX2's) is ~37 operations a vector of 16,
 * this ~26 (sinh) and ~23 (cosh). */
#if ND_ZV
ND_INLINE nd_v16f nd_vm32_zhyp_m(nd_v16f x, nd_v16f *od, nd_v16f *pa, nd_v16f *pc)
{
    nd_v16f a = __builtin_ia32_rangeps512_mask(x, ND_Y1(89.5f), 0x0a, x, (nd_m16)-1, ND_ZV_CUR);   /* min(|x|, 89.5) */
    a = ND_YMAX(a, ND_Y1(0x1p-12f));
    nd_v16f kb = ND_YFMA(a, ND_Y1(0x1.715476p+0f), ND_Y1(0x1.8p23f));
    nd_v16f kd = kb - ND_Y1(0x1.8p23f);
    nd_v16f r = ND_YFNMA(kd, ND_Y1(0x1.62ep-1f), a);
    r = ND_YFNMA(kd, ND_Y1(0x1.0bfbe8p-15f), r);
    nd_v16f s = r * r;
    *od = ND_YFMA(r, s * ND_YFMA(ND_Y1(0x1.120b6ep-7f), s, ND_Y1(0x1.5554dcp-3f)), r);
    nd_v16f s1 = ND_YSCALEF(ND_Y1(0.25f), kd), s2 = ND_YSCALEF(ND_Y1(0.25f), ND_Y1(0x1.8p23f) - kb);
    *pa = s1 - s2;
    *pc = s1 + s2;
    return s * ND_YFMA(ND_YFMA(ND_Y1(0x1.6d110ap-10f), s, ND_Y1(0x1.55551ap-5f)), s, ND_Y1(0.5f));
}
ND_INLINE nd_v16f nd_vm32_zsinh_m(nd_v16f x)
{
    nd_v16f od, sa, sc;
    nd_v16f ev = nd_vm32_zhyp_m(x, &od, &sa, &sc);
    nd_v16f r = ND_Y1(2.0f) * (sa + ND_YFMA(sc, od, sa * ev));
    /* r | (x & sign); x itself below 2^-12 */
    r = (nd_v16f)__builtin_ia32_pternlogd512_mask((nd_v16i)x, (nd_v16i)r, (nd_v16i)ND_Y1(-0.0f), 0xec, (nd_m16)-1);
    nd_v16f ax = (nd_v16f)((nd_v16u)x & ~(nd_v16u)ND_Y1(-0.0f));
    return ND_YSEL(ND_YCMP(ax, ND_Y1(0x1p-12f), 0x11), x, r);   /* _CMP_LT_OQ */
}
ND_INLINE nd_v16f nd_vm32_zcosh_m(nd_v16f x)
{
    nd_v16f od, sa, sc;
    nd_v16f ev = nd_vm32_zhyp_m(x, &od, &sa, &sc);
    return ND_Y1(2.0f) * (sc + ND_YFMA(sc, ev, sa * od));
}
/* +-inf and NaN lanes: x itself (|x| for cosh), no flag */
#define ND_VM32_ZHYP(NM, ABS) \
ND_INLINE nd_v16f NM##v(nd_v16f x) \
{ \
    nd_m16 bad = ND_YFPCLASS(x, 0x99);   /* NaN, +-inf */ \
    if (__builtin_expect(bad == 0, 1)) \
        return NM##_m(x); \
    nd_v16f xs = ABS ? (nd_v16f)((nd_v16u)x & ~(nd_v16u)ND_Y1(-0.0f)) : x; \
    return ND_YSEL(bad, xs, NM##_m(ND_YSEL(bad, ND_Y1(1.0f), x))); \
}
ND_VM32_ZHYP(nd_vm32_zsinh, 0)
ND_VM32_ZHYP(nd_vm32_zcosh, 1)
ND_ZVF_ENTRY(nd_zvf_sinh, nd_vm32_zsinhv, 0.0f)
ND_ZVF_ENTRY(nd_zvf_cosh, nd_vm32_zcoshv, 0.0f)
ND_INLINE float nd_sinhf(float x) { ND_ZV_KEEP(nd_zvf_sinh) return nd_zvf_sinh(x); }
ND_INLINE float nd_coshf(float x) { ND_ZV_KEEP(nd_zvf_cosh) return nd_zvf_cosh(x); }
#else
/* the C form on a finite operand (+-inf and NaN made 0 first, by an
 * integer compare): its x + x * 0 for tiny x, computed in every lane,
 * raised "invalid" at +-inf, and its compares with the cap, vectorized as
 * signaling ones, at a NaN (NumPy reran the graph) */
ND_INLINE float nd_sinhf(float x)
{
    int fin = (nd_f2b(x) & 0x7fffffffu) < 0x7f800000u;
    return nd_bsel_f(fin, nd_sinhf_c(nd_bsel_f(fin, x, 0.0f)), x);
}
ND_INLINE float nd_coshf(float x)
{
    int fin = (nd_f2b(x) & 0x7fffffffu) < 0x7f800000u;
    return nd_bsel_f(fin, nd_coshf_c(nd_bsel_f(fin, x, 0.0f)), __builtin_fabsf(x));
}
#endif

/* ------------------------------------------------------------- cbrt */
/* AVX-512: float64's form (nd_kernel.h's ND_ZV_CBRT_DEF) in floats (c0 from the 16-bucket
 * tables, one Newton step from the residual c0^3 - y over vrcp14's 1/(3
 * c0^2)) with the residual's low part dropped (c0^2 rounded: 2^-25.6 of
 * the result), the sign put back by one vpternlogd and no |x| first
 * (vgetmant clears the sign, vgetexp ignores it): 4 operations fewer on the
 * dependency chain, 0.81x -> 0.98x NumPy's loop (bench/bench_vmath.py). Max
 * 1 ULP of the float64 result rounded once, 8.5% of the operands not
 * correctly rounded (before: under 0.01%; NumPy's own loop: 2 ULP, 35%). */
#if ND_ZV
ND_INLINE nd_v16f nd_vm32_zcbrt_m(nd_v16f x)
{
    nd_v16f m = ND_YGETMANT(x, 4);   /* [1, 2), sign cleared */
    nd_v16f e = ND_YGETEXP(x);
    nd_v16f qd = ND_YRND(ND_YFMA(e, ND_Y1(1.0f / 3), ND_Y1(1.0f / 6)), 0x09);
    nd_v16f i = ND_YFMA(qd, ND_Y1(-3.0f), e), ib = i + ND_Y1(0x1.8p23f);
    nd_v16i jm, ji;
    memcpy(&jm, &m, sizeof jm);
    memcpy(&ji, &ib, sizeof ji);
    jm = (nd_v16i)((nd_v16u)jm >> 19);
    nd_v16f r = ND_YFMA(m, ND_YTABLE(ND_ZVF_CBRT_INVC, jm), ND_Y1(-1.0f));
    nd_v16f t = ND_YTABLE(ND_ZVF_CBRT_C, jm) * ND_YTABLE(ND_ZVF_CBRT_T3, ji);
    nd_v16f c0 = ND_YFMA(t, r * ND_YFMA(r, ND_Y1(-0x1.c71c72p-4f), ND_Y1(0x1.555556p-2f)), t);
    nd_v16f y = ND_YSCALEF(m, i);
    nd_v16f c2 = c0 * c0;
    nd_v16f d = ND_YFMA(c2, c0, -y);
    nd_v16f c = ND_YFMA(d * ND_Y1(-1.0f / 3), ND_YRCP(c2), c0);
    c = ND_YSCALEF(c, qd);
    return (nd_v16f)__builtin_ia32_pternlogd512_mask((nd_v16i)x, (nd_v16i)c, (nd_v16i)ND_Y1(-0.0f), 0xec, (nd_m16)-1);
}
ND_INLINE nd_v16f nd_vm32_zcbrtv(nd_v16f x)
{
    nd_m16 bad = ND_YFPCLASS(x, 0x9f);   /* NaN, +-0, +-inf */
    if (__builtin_expect(bad == 0, 1))
        return nd_vm32_zcbrt_m(x);
    return ND_YSEL(bad, x, nd_vm32_zcbrt_m(ND_YSEL(bad, ND_Y1(1.0f), x)));
}
ND_ZVF_ENTRY(nd_zvf_cbrt, nd_vm32_zcbrtv, 1.0f)
ND_INLINE float nd_cbrtf(float x) { ND_ZV_KEEP(nd_zvf_cbrt) return nd_zvf_cbrt(x); }
#else
/* the C form on a finite operand (NaN and +-inf made 1 first, by an
 * integer compare: its compares, vectorized as signaling ones, raised
 * "invalid" for a NaN lane) */
ND_INLINE float nd_cbrtf(float x)
{
    int fin = (nd_f2b(x) & 0x7fffffffu) < 0x7f800000u;
    return nd_bsel_f(fin, nd_cbrtf_c(nd_bsel_f(fin, x, 1.0f)), x);
}
#endif

#endif
