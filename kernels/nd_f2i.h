/* nd_f2i.h -- float -> integer conversions with NumPy's results, the one
 * text both kernel preludes use: nd_kernel.h (C kernels) and nd_cuda.h
 * (CUDA kernels) each define ND_F2I_FN, their function qualifiers, and
 * ND_ERR_FPE_INVALID, INT32_MIN/INT64_MIN, then include this file. NVRTC
 * has no include path: numdyn's CUDA prelude (codegen_cuda.c,
 * nd_cuda_prelude) puts this text in place of nd_cuda.h's #include line;
 * the header hash of generated C (codegen_c.c) and so the precompiled
 * nd_kernel.h's identity (pch.c) cover it too.
 *
 * C leaves out-of-range/NaN conversions undefined; NumPy gets what x86's
 * cvtt* instructions give (the "integer indefinite" MIN value). Spell that
 * out so the optimizer cannot exploit UB, and a GPU gives the same. */
#ifndef ND_F2I_H
#define ND_F2I_H
/* int64 -> double, correctly rounded as C's cast. x86 before AVX-512DQ
 * has no vector form of that cast, so a kernel loop converting int64
 * (np.arange, indices, np.outer of them) stayed scalar whole -- a complex
 * exp fused after it too. The C form is integer and double operations
 * that vectorize: the high 32 bits (signed) as 2^84 + 2^63 + hi * 2^32 and
 * the low 32 bits as 2^52 + lo, both exact doubles by their bits; their
 * difference less the offsets is exact and one final add rounds once. */
ND_F2I_FN double nd_i64_to_d(int64_t v)
{
#if defined(__CUDACC__)
    return (double)v;
#else
    uint64_t u = (uint64_t)v, lo = (u & 0xffffffffu) | 0x4330000000000000u;
    uint64_t hi = (u >> 32) ^ 0x4530000080000000u, off = 0x4530000080100000u;
    double dl, dh, doff;
    memcpy(&dl, &lo, 8);
    memcpy(&dh, &hi, 8);
    memcpy(&doff, &off, 8);
    return (dh - doff) + dl;
#endif
}
/* C's truncation where x fits, else x86's INT64_MIN. In C kernels by the
 * bits (mantissa shifted by the exponent, then the sign): x86 before
 * AVX-512DQ has no vector double -> int64 conversion, and a loop holding
 * one (x.astype(np.int64), an index computed in floats) stayed scalar. */
ND_F2I_FN int64_t nd_d2i64(double x)
{
#if defined(__CUDACC__)
    return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN;
#else
    uint64_t b;
    memcpy(&b, &x, 8);
    int64_t sh = (int64_t)((b >> 52) & 0x7ff) - 1075;   /* |x| = m * 2^sh */
    uint64_t m = (b & 0xfffffffffffffu) | 0x10000000000000u;
    uint64_t up = m << (sh > 0 ? (sh < 63 ? sh : 63) : 0), down = m >> (sh < 0 ? (-sh < 63 ? -sh : 63) : 0);
    uint64_t v = sh >= 0 ? up : down;
    v = (b >> 63) ? (uint64_t)0 - v : v;
    return sh < 11 ? (int64_t)v : INT64_MIN;   /* |x| < 2^63; -2^63 itself is INT64_MIN */
#endif
}
ND_F2I_FN int32_t nd_d2i32(double x)
{ return (x > -2147483649.0 && x < 2147483648.0) ? (int32_t)x : INT32_MIN; }
ND_F2I_FN uint64_t nd_d2u64(double x)
{
    int big = (x >= 9223372036854775808.0) & (x < 18446744073709551616.0);
    uint64_t hi = (uint64_t)nd_d2i64(x - 9223372036854775808.0) + 9223372036854775808ull;
    return big ? hi : (uint64_t)nd_d2i64(x);
}
/* The same for an explicit cast (astype, stores into integer arrays),
 * with NumPy's "invalid value encountered in cast": x86's conversions raise
 * the invalid flag exactly outside these ranges (uint32 and the narrower
 * types go through a 32-bit conversion, uint64 through a 64-bit one). */
ND_F2I_FN int32_t nd_d2i32e(double x, int *e)
{
    int ok = x > -2147483649.0 && x < 2147483648.0;
    *e |= (!ok) * ND_ERR_FPE_INVALID;
    return ok ? (int32_t)x : INT32_MIN;
}
ND_F2I_FN uint32_t nd_d2u32e(double x, int *e)
{
    *e |= (!(x > -2147483649.0 && x < 4294967296.0)) * ND_ERR_FPE_INVALID;
    return (uint32_t)nd_d2i64(x);
}
ND_F2I_FN int64_t nd_d2i64e(double x, int *e)
{
    int ok = (x >= -9223372036854775808.0) & (x < 9223372036854775808.0);
    *e |= (!ok) * ND_ERR_FPE_INVALID;
    return nd_d2i64(x);
}
ND_F2I_FN uint64_t nd_d2u64e(double x, int *e)
{
    *e |= (!(x >= -9223372036854775808.0 && x < 18446744073709551616.0)) * ND_ERR_FPE_INVALID;
    return nd_d2u64(x);
}
#endif
