/* nd_f16.h -- float16 <-> float/double conversions, bit-exact with NumPy's
 * (round to nearest even), the one text both kernel preludes use:
 * nd_kernel.h (C kernels) and nd_cuda.h (CUDA kernels) each define
 * ND_F16_FN (their function qualifiers), the bit casts nd_f2u / nd_u2f /
 * nd_d2u, and ND_F16_OVF: a float whose square overflows, raising the
 * floating-point overflow flag NumPy reports for a result past float16's
 * range (a GPU has no flags: 1.0f there, and the squares fold away), then
 * include this file. Shipped and hashed as nd_f2i.h is.
 *
 * Storage is the raw 16 bits; values are computed as float and rounded
 * back after every operation (NumPy converts to float, computes, converts
 * to half after EACH op). The conversions are branch-free integer and
 * float operations (checked against the hardware for every half and a
 * sweep of floats) so loops over float16 data vectorize -- GCC does not
 * vectorize _Float16 conversions. */
#ifndef ND_F16_H
#define ND_F16_H
typedef uint16_t nd_half;
ND_F16_FN float nd_h2f(nd_half h)
{
    uint32_t em = (uint32_t)(h & 0x7fffu) << 13, s = (uint32_t)(h & 0x8000u) << 16;
    /* rebias the exponent; subnormal halves become normal floats */
    uint32_t xb = nd_f2u(nd_u2f(em) * 0x1p112f);
    xb = em >= (0x7c00u << 13) ? (em | 0x7f800000u) : xb;  /* inf / nan */
    return nd_u2f(xb | s);
}
ND_F16_FN nd_half nd_f2h(float f)
{
    uint32_t x = nd_f2u(f), sign = x & 0x80000000u;
    x ^= sign;
    /* subnormal results: let the FPU round at the right bit */
    uint32_t sub = nd_f2u(nd_u2f(x) + 0.5f) - 0x3f000000u;
    uint32_t nrm = (x + 0xc8000fffu + ((x >> 13) & 1u)) >> 13;
    uint32_t big = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
    uint32_t o = x >= 0x47800000u ? big : x < 0x38800000u ? sub : nrm;
    /* a finite value past float16's range (>= 65520) overflows (a
     * branch-free select: GCC vectorizes this form best) */
    float ov = x >= 0x477ff000u && x < 0x7f800000u ? ND_F16_OVF : 1.0f;
    ov *= ov;
    return (nd_half)(o | (sign >> 16) | (ov != ov));
}
/* double -> half with ONE rounding (NumPy converts doubles directly) */
ND_F16_FN nd_half nd_d2h(double d)
{
    uint64_t b = nd_d2u(d);
    uint16_t s = (uint16_t)((b >> 48) & 0x8000u);
    uint64_t a = b & 0x7fffffffffffffffull;
    if (a >= 0x7ff0000000000000ull)
        return (uint16_t)(s | 0x7c00u | (a > 0x7ff0000000000000ull ? 0x200u : 0));
    if (a >= 0x40effe0000000000ull) {  /* >= 65520: inf, and it overflows */
        float ov = ND_F16_OVF * ND_F16_OVF;
        return (uint16_t)(s | 0x7c00u | (ov != ov));
    }
    int e = (int)(a >> 52) - 1023;
    uint64_t m = (a & 0xfffffffffffffull) | 0x10000000000000ull;
    int shift;
    uint32_t hb;
    if (e < -25) return s;
    if (e < -14) { shift = 42 + (-14 - e); hb = 0; }
    else { shift = 42; hb = (uint32_t)(e + 15) << 10; m &= 0xfffffffffffffull; }
    uint64_t q = m >> shift, r = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    uint32_t h = hb + (uint32_t)q;
    if (r > half || (r == half && (q & 1))) h++;
    return (uint16_t)(s | h);
}
ND_F16_FN float nd_rh(float f) { return nd_h2f(nd_f2h(f)); }
#endif
