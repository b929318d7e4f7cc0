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
ND_F2I_FN int64_t nd_d2i64(double x)
{ return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN; }
ND_F2I_FN int32_t nd_d2i32(double x)
{ return (x > -2147483649.0 && x < 2147483648.0) ? (int32_t)x : INT32_MIN; }
ND_F2I_FN uint64_t nd_d2u64(double x)
{
    if (x >= 9223372036854775808.0 && x < 18446744073709551616.0)
        return (uint64_t)(x - 9223372036854775808.0) + 9223372036854775808ull;
    return (uint64_t)nd_d2i64(x);
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
    int ok = x >= -9223372036854775808.0 && x < 9223372036854775808.0;
    *e |= (!ok) * ND_ERR_FPE_INVALID;
    return ok ? (int64_t)x : INT64_MIN;
}
ND_F2I_FN uint64_t nd_d2u64e(double x, int *e)
{
    *e |= (!(x >= -9223372036854775808.0 && x < 18446744073709551616.0)) * ND_ERR_FPE_INVALID;
    return nd_d2u64(x);
}
#endif
