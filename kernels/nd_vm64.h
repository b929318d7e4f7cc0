/* nd_vm64.h -- numdyn's own float64 log, log2 and log10, included by
 * nd_kernel.h (after its helpers and numdyn's own AVX-512 vector math).
 *
 * NumPy 2's float64 log, log2 and log10 are within ~0.52-0.6 ULP
 * (correctly rounded for nearly every operand); SLEEF's 3.5-ULP log and
 * log2 and a rounded log times 1/ln10 were up to 2-3 ULP off, and a third
 * of the results differed from NumPy's in their last bits -- which a
 * cancellation after them (log(S / K) + (r + sigma^2 / 2) T) turns into
 * differences of thousands of ULP. These carry the result in
 * double-double to the last addition (0.52 ULP in the worst case found;
 * tests/test_vmath_f64_accuracy.py):
 *
 * x = 2^k m, m in [0.75, 1.5); c the centre of m's 1/16 bucket (1 for the
 * bucket around 1), 1/c and log c from nd_kernel.h's 16-entry table
 * (ND_ZV_LOG_INVC / ND_ZV_LOG_LOGC: log c within 2^-62 of the stored
 * multiple of 2^-43, so k ln2hi + log c is exact). m/c - 1 = r + pl
 * exactly: m (1/c) = ph + pl by fma, r = ph - 1 exact (Sterbenz), |r| <
 * 1/31. log(m/c) = r + (pl (1 - r) + r^2 P(r)), P of degree 8 (ND_LOG_P:
 * 2^-61 relative).
 * log: w = k ln2hi + log c (exact), hi = w + r with its rounding error
 * (Fast2Sum: w is 0 or larger than r), the low parts summed, then hi + lo.
 * log2, log10: log(m) = hm + tm (Fast2Sum of log c and r), times 1/ln2 or
 * 1/ln10 in double-double (fma), plus k log_b(2) (hi part exact: 1, or
 * 42 bits of log10(2)) by Fast2Sum, the low parts summed, then hi + lo --
 * not a rounded log times a rounded constant.
 * Special operands (+-0, negative, +-inf, NaN) give NumPy's values: -inf
 * at 0 (the kernel's nd_ckat raises "divide" from the operand), NaN with
 * "invalid" below 0 (inf * 0 in those lanes only), x itself for +inf and
 * NaN, with no flag raised for any other operand.
 *
 * With AVX-512F/DQ (ND_ZV) an 8-lane form as nd_kernel.h's own vector math
 * (vgetmant/vgetexp, the table by vpermt2pd, vfpclass for the special
 * lanes, a second pass only where a vector holds one); elsewhere (AVX2,
 * SSE2, scalar) the same arithmetic in plain C, vectorized by GCC (the
 * table by gathers), special lanes chosen by bits. */

#if ND_VM64_PART == 1
/* part 1 (before nd_kernel.h's AVX-512 log core, which finishes with
 * ND_VM_LOG_FINISH): constants, tables, the shared tail */
/* 1/ln2, 1/ln10 (hi + lo); log10(2) (42-bit hi + lo); ln2 (42-bit hi + lo) */
#define ND_VM_INVLN2_HI 0x1.71547652b82fep+0
#define ND_VM_INVLN2_LO 0x1.777d0ffda0d24p-56
#define ND_VM_INVLN10_HI 0x1.bcb7b1526e50ep-2
#define ND_VM_INVLN10_LO 0x1.95355baaafad3p-57
#define ND_VM_LG2_HI 0x1.34413509f7800p-2
#define ND_VM_LG2_LO 0x1.fef311f12b358p-46
#define ND_VM_LN2_HI 0x1.62e42fefa3800p-1
#define ND_VM_LN2_LO 0x1.ef35793c76730p-45

/* log_b(c) for the table's c: hi a multiple of 2^-42 (log2) or 2^-43
 * (log10), so k + hi and k log10(2)hi + hi are exact; lo the rest */
static const double __attribute__((aligned(64))) ND_VM_LOG2C_HI[16] = {0x0.0p+0, 0x1.66338d2354000p-4, 0x1.5c3a491f86000p-3, 0x1.fbfe77199e000p-3, 0x1.49b4ff9fca000p-2, 0x1.91bb3edbe2000p-2, 0x1.d674dfe85a000p-2, 0x1.0c1748a4b0000p-1, 0x1.23ddf3afa3000p-1, -0x1.8aa491c3e9000p-2, -0x1.4f55b7a4de000p-2, -0x1.1695d93f01000p-2, -0x1.bfef10fe52000p-3, -0x1.5633e1a40a000p-3, -0x1.e03e5a540c000p-4, -0x1.1b5b10f9bc000p-4};
static const double __attribute__((aligned(64))) ND_VM_LOG2C_LO[16] = {0x0.0p+0, 0x1.2574bc09bad36p-46, 0x1.44bf483403860p-46, -0x1.31fe72b9ae6dep-45, -0x1.9ea480e79ce5cp-45, 0x1.8b5177eef2cbbp-44, -0x1.be854f191605dp-45, 0x1.3f19b5e0f7716p-47, 0x1.06c8d12268f11p-44, 0x1.cfe5af559f97fp-45, -0x1.4c1faefd7234dp-46, -0x1.eb7d8c420a117p-44, 0x1.711f485a323ccp-45, -0x1.6de724af09a6dp-45, -0x1.2b99dc8bf7b1bp-45, -0x1.11f41064b9eb4p-46};
static const double __attribute__((aligned(64))) ND_VM_LOG10C_HI[16] = {0x0.0p+0, 0x1.af51431bf8000p-6, 0x1.a34ed2ec20000p-5, 0x1.31d7c61342000p-4, 0x1.8d01bed076000p-4, 0x1.e3bb9b66ea000p-4, 0x1.1b3e394475000p-3, 0x1.42d04cdad8000p-3, 0x1.5f71610280000p-3, -0x1.db3284ec26000p-4, -0x1.93c88b2fca000p-4, -0x1.4f733f23d6000p-4, -0x1.0daedc799c000p-4, -0x1.9c0d958bb8000p-5, -0x1.2122ac00d4000p-5, -0x1.5531bd40a8000p-6};
static const double __attribute__((aligned(64))) ND_VM_LOG10C_LO[16] = {0x0.0p+0, -0x1.0dc45882f1d1dp-45, -0x1.9035ece26bd24p-45, 0x1.37613186e218bp-45, -0x1.bdbd8f3ff9487p-46, 0x1.8b09fe05d4aa2p-46, -0x1.d2cd14907b21fp-46, -0x1.dda65621da25fp-46, 0x1.b970a8913b7a9p-45, -0x1.f96b9843522a9p-46, 0x1.19b1a877372cap-45, 0x1.02f9170f1416dp-45, -0x1.ff7567d7222afp-45, 0x1.5e4ab0e75efcfp-47, -0x1.e830beb84b0c1p-46, -0x1.70c87eb81d653p-47};
/* log_b(x) into out, shared by both forms (over the vector type V or
 * double, its splat C1, fma FMA and table lookup TB(table)), BASE 0 (e),
 * 2 or 10, from kd = k, r and lm = log1p(r + pl) - r = pl (1 - r) + r^2
 * P(r) (ND_VM_LM; log1p's own): w = k log_b(2)hi +
 * log_b(c)hi (exact), r / ln b = rh + rl (fma), hi = w + rh and its
 * rounding error (Fast2Sum: w is 0 or larger than rh), the low parts
 * (k log_b(2)lo, log_b(c)lo, r (1/ln b)lo, rl, lm / ln b)
 * summed, then hi + lo */
#define ND_VM_LM(FMA, r, pl, r2, rp) FMA((r2), (rp), FMA(-(r), (pl), (pl)))
#define ND_VM_LOG_FINISH(V, C1, FMA, TB, BASE, kd, r, lm, out) \
    do { \
        V lm_ = (lm), w_, rh_, lo_; \
        if ((BASE) == 0) { \
            w_ = FMA((kd), C1(ND_VM_LN2_HI), TB(ND_ZV_LOG_LOGC)); \
            rh_ = (r); \
            lo_ = FMA((kd), C1(ND_VM_LN2_LO), lm_); \
        } else { \
            V sh_ = C1((BASE) == 2 ? ND_VM_INVLN2_HI : ND_VM_INVLN10_HI); \
            V sl_ = C1((BASE) == 2 ? ND_VM_INVLN2_LO : ND_VM_INVLN10_LO); \
            V chi_ = TB((BASE) == 2 ? ND_VM_LOG2C_HI : ND_VM_LOG10C_HI); \
            V clo_ = TB((BASE) == 2 ? ND_VM_LOG2C_LO : ND_VM_LOG10C_LO); \
            w_ = (BASE) == 2 ? (kd) + chi_ : FMA((kd), C1(ND_VM_LG2_HI), chi_); \
            rh_ = (r) * sh_; \
            lo_ = (BASE) == 2 ? clo_ : FMA((kd), C1(ND_VM_LG2_LO), clo_); \
            lo_ = FMA((r), sl_, FMA(lm_, sh_, lo_)) + FMA((r), sh_, -rh_); \
        } \
        V hi_ = w_ + rh_; \
        (out) = hi_ + (((w_ - hi_) + rh_) + lo_); \
    } while (0)

#else
/* part 2: the functions */
#if ND_ZV
/* log_b(u) for u > 0 finite (subnormals too): log is nd_kernel.h's core */
ND_INLINE nd_v8d nd_zv_logb_m(nd_v8d u, const int base)
{
    if (base == 0)
        return nd_zv_log_core(u, ND_Z1(0.0), 0, 0);
    nd_v8d kd, pl, invc, m, res;
    nd_v8i j;
    nd_v8d r = nd_zv_log_red(u, &kd, &j, &pl, &invc, &m), r2 = r * r;
    ND_VM_LOG_FINISH(nd_v8d, ND_Z1, ND_ZFMA, ND_VM_ZTB, base, kd, r, ND_VM_LM(ND_ZFMA, r, pl, r2, nd_zv_log_p(r, r2)), res);
    return res;
}
/* vfpclass 0xdf: NaN, +-0, +-inf, negative finite -- a second pass */
ND_INLINE nd_v8d nd_zv_logbv(nd_v8d x, const int base)
{
    nd_m8 bad = ND_ZFPCLASS(x, 0xdf);
    if (__builtin_expect(bad == 0, 1))
        return nd_zv_logb_m(x, base);
    nd_v8d res = nd_zv_logb_m(ND_ZSEL(bad, ND_Z1(1.0), x), base);
    nd_m8 zero = ND_ZCMP(x, ND_Z1(0.0), 0), neg = ND_ZCMP(x, ND_Z1(0.0), 0x11);
    res = ND_ZSEL(zero, ND_Z1(-INFINITY), res);
    res = ND_ZMULM(ND_Z1(INFINITY), ND_Z1(0.0), res, neg);   /* NaN and "invalid" there only */
    return ND_ZSEL((nd_m8)(bad & ~(zero | neg)), x, res);
}
ND_INLINE nd_v8d nd_zv_log8(nd_v8d x) { return nd_zv_logbv(x, 0); }
ND_INLINE nd_v8d nd_zv_log2_8(nd_v8d x) { return nd_zv_logbv(x, 2); }
ND_INLINE nd_v8d nd_zv_log10_8(nd_v8d x) { return nd_zv_logbv(x, 10); }
ND_ZV_ENTRY(nd_zv_log, nd_zv_log8, 1.0)
ND_ZV_ENTRY(nd_zv_log2, nd_zv_log2_8, 1.0)
ND_ZV_ENTRY(nd_zv_log10, nd_zv_log10_8, 1.0)
ND_INLINE double nd_log(double x) { ND_ZV_KEEP(nd_zv_log) return nd_zv_log(x); }
ND_INLINE double nd_log2(double x) { ND_ZV_KEEP(nd_zv_log2) return nd_zv_log2(x); }
ND_INLINE double nd_log10(double x) { ND_ZV_KEEP(nd_zv_log10) return nd_zv_log10(x); }
#else
#define ND_VM_C1(c) (c)
#define ND_VM_CTB(t) (t)[j]
/* log_b(u + cor) for u > 0 finite (subnormals scaled by 2^54), cor (with
 * WITHCOR) u's rounding error, log1p's: cor/u = cor 2^-k (1/c) joins r + pl */
ND_INLINE double nd_logb_cm(double u, double cor, const int withcor, const int base)
{
    int sub = u < 0x1p-1022;
    uint64_t ix = nd_d2b(u * nd_bsel_d(sub, 0x1p54, 1.0));
    uint64_t tmp = ix - 0x3fe8000000000000ull;   /* 0.75 */
    int64_t k = ((int64_t)tmp >> 52) - 54 * (int64_t)sub;
    double m = nd_b2d(ix - (tmp & (0xfffull << 52)));
    int64_t j = (int64_t)((nd_d2b(m + 0x1p-5) >> 48) & 15);
    double invc = ND_ZV_LOG_INVC[j];
    /* k as a double from the bits of 1.5 2^52 + k (AVX2 has no int64 conversion) */
    double kd = nd_b2d(nd_d2b(0x1.8p52) + (uint64_t)k) - 0x1.8p52;
    double ph = m * invc, pl = __builtin_fma(m, invc, -ph), r = ph - 1.0;
    double r2 = r * r, p = ND_LOG_P(double, ND_VM_C1, __builtin_fma, r, r2), res;
    double lm = ND_VM_LM(__builtin_fma, r, pl, r2, p);
    if (withcor) {   /* log1p's u >= 2^-53: k >= -53; as nd_zv_log_core's WITHCOR 2 */
        double d = cor * invc * nd_p2_d(-(k < 1000 ? k : 1000)), r1 = r + d, dl = pl + d;
        lm = __builtin_fma(r2, p, __builtin_fma(-__builtin_fma(dl, 0.5, r), dl, ((r - r1) + d) + pl));
        r = r1;
    }
    ND_VM_LOG_FINISH(double, ND_VM_C1, __builtin_fma, ND_VM_CTB, base, kd, r, lm, res);
    return res;
}
/* lo <= x's bits < hi, one unsigned compare. The special lanes are chosen
 * by bits: GCC vectorizes __builtin_isgreater/isless as signaling compares
 * (vcmpnltpd), and the "invalid" a NaN lane raised had NumPy rerun every
 * graph taking a log of data holding a NaN (counter errstate_reruns). */
ND_INLINE int nd_bits_in_d(double x, uint64_t lo, uint64_t hi) { return nd_d2b(x) - lo < hi - lo; }
#define ND_B_PINF 0x7ff0000000000000ull   /* +inf; -inf is ND_B_PINF | ND_B_SIGN */
#define ND_B_SIGN 0x8000000000000000ull
#define ND_B_ONE 0x3ff0000000000000ull
ND_INLINE double nd_logb_c(double x, const int base)
{
    int ok = nd_bits_in_d(x, 1, ND_B_PINF);                               /* 0 < x < inf */
    int neg = nd_bits_in_d(x, ND_B_SIGN + 1, (ND_B_SIGN | ND_B_PINF) + 1); /* -inf <= x < 0 */
    double res = nd_logb_cm(nd_bsel_d(ok, x, 1.0), 0.0, 0, base);
    /* 0: -inf; below 0: NaN with "invalid" (from that lane's operand only); +inf, NaN: x */
    double sp = nd_bsel_d(x == 0, -ND_INF_D, nd_bsel_d(neg, nd_nan_where_d(neg), x));
    return nd_bsel_d(ok, res, sp);
}
/* log1p: log(u + cor), u = 1 + x and its rounding error (exact: x > -1,
 * below 2^53; above, cor/u is below log1p's last bit); x itself for |x| <
 * 2^-54 (+-0 with its sign), -inf at -1 ("divide" from the kernel's
 * nd_ckat), NaN with "invalid" below, x for +inf and NaN. The form over
 * SLEEF's 1-ULP log and Kahan's division (2 ULP of NumPy's) ran slower. */
ND_INLINE double nd_log1p(double x)
{
    /* -1 < x < inf; x < -1 (-inf too) */
    int ok = nd_bits_in_d(x, 0, ND_B_PINF) | nd_bits_in_d(x, ND_B_SIGN, ND_B_SIGN | ND_B_ONE);
    int below = nd_bits_in_d(x, (ND_B_SIGN | ND_B_ONE) + 1, (ND_B_SIGN | ND_B_PINF) + 1);
    double xs = nd_bsel_d(ok, x, 0.0);
    double u = 1.0 + xs;
    double res = nd_logb_cm(u, xs - (u - 1.0), 1, 0);
    res = nd_bsel_d((nd_d2b(x) & ~ND_B_SIGN) < nd_d2b(0x1p-54), x, res);
    double sp = nd_bsel_d(x == -1.0, -ND_INF_D, nd_bsel_d(below, nd_nan_where_d(below), x));
    return nd_bsel_d(ok, res, sp);
}
ND_INLINE double nd_log(double x) { return nd_logb_c(x, 0); }
ND_INLINE double nd_log2(double x) { return nd_logb_c(x, 2); }
ND_INLINE double nd_log10(double x) { return nd_logb_c(x, 10); }
#endif
#endif
