/* nd_loop.h -- the ABI between a captured Python loop compiled to C
 * (codegen/codegen_loop.c emits it) and the runner that calls it
 * (trace/loop_run.c).
 *
 * A captured loop is one C function  int name(nd_lframe *F). Its scalar
 * locals arrive in F->val / F->tag and go back there; arrays arrive as
 * (data, shape, byte strides). The C code computes the common case of every
 * operation itself and hands the rare case -- an integer overflow, a
 * division by zero, a NaN or infinity that appears from finite operands, a
 * conversion out of a dtype's range -- to F->slow / F->store, which perform
 * that one operation with Python and NumPy themselves (boxed values), so
 * the result, the warning under np.errstate and the exception are NumPy's
 * by construction. When Python's answer does not fit the type the C code
 * assumed (a Python int past int64, a float power that is complex), the
 * loop stops with NDL_DEOPT and the runner restores the arrays it wrote and
 * runs the loop in Python from its start.
 */
#ifndef ND_LOOP_H
#define ND_LOOP_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <fenv.h>

#define NDL_MAXDIMS 32

/* the scalar types a captured loop computes in: Python's bool/int/float,
 * then NumPy's scalar types (as element loads and NumPy functions make
 * them). The order is part of the ABI (tags). */
enum {
    LT_PYBOOL, LT_PYINT, LT_PYFLOAT,
    LT_B1, LT_I1, LT_I2, LT_I4, LT_I8, LT_U1, LT_U2, LT_U4, LT_U8, LT_F4, LT_F8,
    LT_N
};
#define LT_UNBOUND 255   /* a tag: the local has no value (Python's unbound) */
/* typing only (never a tag): a 1-D array of element type t is t | LT_VEC,
 * a 2-D one (a matrix product's operand) t | LT_MAT */
#define LT_VEC 32
#define LT_MAT 64

typedef struct {
    char *data;
    int64_t shape[NDL_MAXDIMS];
    int64_t strides[NDL_MAXDIMS];   /* bytes */
    /* an array local (row = A[i]: a view the loop assigns): the variable
     * whose array it views, and whether it has a value; in and out */
    int32_t src;           /* -1: a computed array in `own` */
    int32_t set;
    int32_t whole;         /* it holds exactly the array variable src held at entry
                              (not a view of it): u, v = v, u */
    void *own;             /* out: a computed array local's buffer (malloc), the runner frees it */
} nd_larr;

typedef union { int64_t i; uint64_t u; double f; } nd_lval;

/* an array the loop made (new = u.copy(), np.empty_like(u)): a buffer of
 * the frame's pool, held by the array locals whose src is -2 - its slot.
 * The C code reuses a slot no name holds any more (Python would have freed
 * that array); the runner makes one ndarray per slot still held at the end
 * and frees the buffers (malloc) */
typedef struct {
    char *p;
    int64_t cap;           /* bytes */
    int32_t nd;
    int32_t lt;            /* LT_* of the elements */
    int64_t shape[NDL_MAXDIMS];
    int64_t strides[NDL_MAXDIMS];
} nd_lbuf;

typedef struct nd_lframe nd_lframe;
struct nd_lframe {
    nd_larr *arr;
    nd_lval *val;          /* scalar locals, in and out; stored as their C type */
    uint8_t *tag;          /* each local's type (LT_*) or LT_UNBOUND */
    /* r = a OP b (b NULL for one operand) with Python/NumPy on boxed values;
     * 0: r set; -1: exception set; 1: the result does not fit type tr */
    int (*slow)(nd_lframe *F, int op, int tr, void *r, int ta, const void *a, int tb,
                const void *b);
    /* arr[idx] = value with NumPy's __setitem__: 0, or -1 with an exception */
    int (*store)(nd_lframe *F, int arr, int nidx, const int64_t *idx, int ta, const void *a);
    int (*poll)(nd_lframe *F);   /* Ctrl-C: 0, or -1 with KeyboardInterrupt */
    void *runner;
    int err;                      /* NDL_* */
    int err_line;
    int64_t err_a, err_b, err_c;
    nd_lbuf *pool;                /* npool slots (zeroed by the runner) */
    int32_t npool;
};

/* NDL_NOMEM: an array the loop makes could not be allocated (MemoryError) */
enum { NDL_OK, NDL_PYERR, NDL_DEOPT, NDL_INDEX, NDL_UNBOUND, NDL_RANGE0, NDL_NOMEM };

/* operation codes of F->slow (binary, unary, comparisons, then calls) */
enum {
    LO_ADD, LO_SUB, LO_MUL, LO_TDIV, LO_FDIV, LO_MOD, LO_POW, LO_LSH, LO_RSH,
    LO_BAND, LO_BOR, LO_BXOR,
    LO_NEG, LO_POS, LO_INV, LO_NOT,
    LO_LT, LO_LE, LO_GT, LO_GE, LO_EQ, LO_NE,
    LO_NOPS
};
/* calls: LO_NOPS + LF_* */
enum {
    LF_ABS, LF_MIN, LF_MAX, LF_INT, LF_FLOAT, LF_BOOL, LF_ROUND,
    /* math module */
    LF_M_SQRT, LF_M_EXP, LF_M_LOG, LF_M_LOG10, LF_M_LOG2, LF_M_SIN, LF_M_COS, LF_M_TAN,
    LF_M_ATAN, LF_M_ASIN, LF_M_ACOS, LF_M_SINH, LF_M_COSH, LF_M_TANH, LF_M_FABS,
    LF_M_FLOOR, LF_M_CEIL, LF_M_TRUNC, LF_M_ATAN2, LF_M_HYPOT, LF_M_POW, LF_M_ISNAN,
    LF_M_ISINF, LF_M_ISFINITE, LF_M_LOG1P, LF_M_EXPM1,
    /* numpy */
    LF_NP_SQRT, LF_NP_EXP, LF_NP_LOG, LF_NP_LOG10, LF_NP_LOG2, LF_NP_SIN, LF_NP_COS, LF_NP_TAN,
    LF_NP_ARCTAN, LF_NP_ARCSIN, LF_NP_ARCCOS, LF_NP_SINH, LF_NP_COSH, LF_NP_TANH, LF_NP_FABS,
    LF_NP_FLOOR, LF_NP_CEIL, LF_NP_TRUNC, LF_NP_ARCTAN2, LF_NP_HYPOT, LF_NP_POWER, LF_NP_ISNAN,
    LF_NP_ISINF, LF_NP_ISFINITE, LF_NP_LOG1P, LF_NP_EXPM1,
    LF_NP_ABS, LF_NP_MINIMUM, LF_NP_MAXIMUM, LF_NP_SIGN, LF_NP_SQUARE,
    /* reductions of 1-D arrays to a NumPy scalar */
    LF_NP_DOT, LF_NP_SUM, LF_NP_MEAN, LF_NP_NORM, LF_NP_VAR, LF_NP_STD, LF_NP_PROD, LF_NP_MATMUL, LF_NP_MAX, LF_NP_MIN, LF_NP_ARGMAX,
    LF_NP_ARGMIN,
    /* np.outer(u, v) of 1-D arrays: a 2-D array */
    LF_NP_OUTER,
    /* np.concatenate((u, v, ...)) of 1-D arrays, np.array([x, y, ...]) of scalars: 1-D
       arrays (LK_CALL's kids: the parts, at most LCAT_MAX) */
    LF_NP_CONCATENATE, LF_NP_ARRAY,
    /* np.flip(u) of a 1-D array: a 1-D array, reversed into a buffer (NumPy's
       view is read before any store of the statement, as its temporary) */
    LF_NP_FLIP,
    /* np.linalg.inv(M) of a square float 2-D array: a 2-D array */
    LF_NP_INV,
    /* NumPy scalar types as functions: np.float64(x) ... (LF_NP_CAST + LT_*) */
    LF_NP_CAST,
    LF_N = LF_NP_CAST + LT_N
};

/* ------------------------------------------------------------ helpers */
#define NDL_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* the first statement of a cold path that evaluates again, operation by
 * operation, what the hot path computed from array elements (a wide()
 * chain of codegen_loop.c whose exact value does not fit): the elements
 * are loaded again there (nothing stored in between: the same values), so
 * the hot path's loaded values need not stay live into it (rule 110's
 * three cells were kept in extra registers for it) */
#if defined(__GNUC__)
#define NDL_RELOAD() __asm__ __volatile__("" ::: "memory")
#else
#define NDL_RELOAD() ((void)0)
#endif
/* a float result that NumPy or Python treats as an event: NaN from
 * non-NaN operands (invalid) or an infinity from finite ones (overflow,
 * division by zero) */
/* (a finite result, the common case, is one test) */
#define NDL_EDGE1(r, a) (NDL_UNLIKELY(!isfinite(r)) && ((isnan(r) && !isnan(a)) || (isinf(r) && !isinf(a))))
#define NDL_EDGE2(r, a, b) (NDL_UNLIKELY(!isfinite(r)) && ((isnan(r) && !isnan(a) && !isnan(b)) || \
                            (isinf(r) && !isinf(a) && !isinf(b))))

/* The three event flags NumPy tests, around a statement of float array
 * work (codegen_loop.c flags_clear/flags_check): read and cleared directly
 * on x86-64 -- glibc's feclearexcept saves and reloads the whole x87
 * environment, a good part of a small statement (a Jacobi sweep of 48x48)
 * -- the SSE flags in MXCSR (the bits are FE_*'s) and the x87 ones (libm
 * routines may use the x87 unit); trace/loop_run.c tests them around a run */
#define NDL_FPEV (FE_DIVBYZERO | FE_OVERFLOW | FE_INVALID)
#if defined(__x86_64__) && defined(__GNUC__)
static inline int ndl_fe_test(void)
{
    unsigned int csr;
    unsigned short sw;
    __asm__ volatile("stmxcsr %0" : "=m"(csr));
    __asm__ volatile("fnstsw %0" : "=m"(sw));
    return (int)((csr | sw) & NDL_FPEV);
}
/* only the flags that are set are cleared: LDMXCSR and FNCLEX are slow
 * microcoded instructions (with the two reads, 1/6 of the runner's own
 * time around an 8-element loop), and the flags are almost always clear */
static inline void ndl_fe_clear(void)
{
    unsigned int csr;
    unsigned short sw;
    __asm__ volatile("stmxcsr %0" : "=m"(csr));
    __asm__ volatile("fnstsw %0" : "=m"(sw));
    if (NDL_UNLIKELY(csr & NDL_FPEV)) {
        csr &= ~(unsigned int)NDL_FPEV;
        __asm__ volatile("ldmxcsr %0" : : "m"(csr));
    }
    if (NDL_UNLIKELY(sw & NDL_FPEV)) __asm__ volatile("fnclex");
}
#else
static inline int ndl_fe_test(void) { return fetestexcept(NDL_FPEV); }
static inline void ndl_fe_clear(void) { feclearexcept(NDL_FPEV); }
#endif

/* int(x) of a float x whose truncation fits int64, else INT64_MIN (NaN,
 * out of range, and -2^63 itself, which the caller hands to Python): x86's
 * cvttsd2si gives exactly that, so the hot path is the conversion and one
 * compare with INT64_MIN (was a mask, a float compare and its branch;
 * histogram's int((v - lo) / width)) */
#if defined(__x86_64__) && defined(__GNUC__)
typedef double ndl_v2df_ __attribute__((vector_size(16)));
static inline int64_t ndl_f2i(double x) { return __builtin_ia32_cvttsd2si64((ndl_v2df_){x, 0.0}); }
#else
static inline int64_t ndl_f2i(double x) { return fabs(x) < 9223372036854775808.0 ? (int64_t)x : INT64_MIN; }
#endif
/* np.sign of a float: NumPy's x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x (the
 * NaN itself), by the bits: no compare that could flag 'invalid' for a NaN
 * lane when GCC vectorizes it (np.sign raises no warning for NaN) */
static inline double ndl_sign_d(double x)
{
    uint64_t u;
    memcpy(&u, &x, 8);
    uint64_t m = u & 0x7fffffffffffffffull;
    return m > 0x7ff0000000000000ull ? x : m == 0 ? 0.0 : (u >> 63) ? -1.0 : 1.0;
}
static inline float ndl_sign_f(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    uint32_t m = u & 0x7fffffffu;
    return m > 0x7f800000u ? x : m == 0 ? 0.0f : (u >> 31) ? -1.0f : 1.0f;
}

/* a Python float as a float32 operand: NumPy's cast, which reports a finite
 * value past float32's range as an overflow (a flag the runner tests) */
static inline float ndl_f4(double d)
{
    float f = (float)d;
    if (NDL_UNLIKELY(isinf(f) && !isinf(d))) feraiseexcept(FE_OVERFLOW);
    return f;
}

/* Python's slice(lo, hi, step).indices(n) (hlo, hhi: whether given): the
 * first index and the length; 1 when step is 0 (ValueError) */
static inline int ndl_slice(int64_t n, int hlo, int64_t lo, int hhi, int64_t hi, int64_t step,
                            int64_t *start, int64_t *len)
{
    if (step == 0) return 1;
    if (step > 0) {
        lo = !hlo ? 0 : lo < 0 ? (lo + n < 0 ? 0 : lo + n) : (lo > n ? n : lo);
        hi = !hhi ? n : hi < 0 ? (hi + n < 0 ? 0 : hi + n) : (hi > n ? n : hi);
        *len = hi > lo ? (hi - lo - 1) / step + 1 : 0;
    } else {
        if (step < -INT64_MAX) step = -INT64_MAX;
        lo = !hlo ? n - 1 : lo < 0 ? (lo + n < 0 ? -1 : lo + n) : (lo >= n ? n - 1 : lo);
        hi = !hhi ? -1 : hi < 0 ? (hi + n < 0 ? -1 : hi + n) : (hi >= n ? n - 1 : hi);
        *len = lo > hi ? (lo - hi - 1) / -step + 1 : 0;
    }
    *start = *len ? lo : 0;
    return 0;
}
/* Python's // and % on ints (floor; the divisor is not 0, not MIN // -1) */
static inline int64_t ndl_pyfdiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
static inline int64_t ndl_pymod(int64_t a, int64_t b)
{
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
/* Python int (|v| < 2^63) against a Python float, exactly as Python
 * compares them: -1, 0, 1; 2 when f is NaN */
static inline int ndl_cmp_if(int64_t i, double f)
{
    if (isnan(f)) return 2;
    if (f >= 9223372036854775808.0) return -1;
    if (f < -9223372036854775808.0) return 1;
    double fl = floor(f);
    int64_t fi = (int64_t)fl;
    if (i < fi) return -1;
    if (i > fi) return 1;
    return fl < f ? -1 : 0;
}
/* exact comparison of two integers given as (int64 or uint64) */
static inline int ndl_cmp_iu(int64_t a, uint64_t b)
{
    if (a < 0) return -1;
    return (uint64_t)a < b ? -1 : (uint64_t)a > b ? 1 : 0;
}
/* NumPy's pairwise summation (its add.reduce of float arrays: the identity
 * 0 plus this over the elements), so np.sum in a loop is NumPy's bit for bit.
 * Up to 128 elements (NumPy's 8 lanes, then their sum) inline at each call;
 * longer ones halve in a noinline function, two levels inline in it (one
 * call up to ~512 elements). Session 28 found the recursive static inline
 * inlined several levels deep at every call: one loop unit took GCC 2.2 s,
 * now 0.9 s (BENCHMARKS.md, CI time).
 * The 8 lanes are vectors of 32 bytes (float: one of 8, double: two of 4):
 * as an array T r[8], GCC kept them in memory in the noinline function
 * (two 16-byte stores read back by one 32-byte load: a store-forwarding
 * stall a leaf, 3-6x slower sums of 200-700 elements). */
#define NDL_PW_LANES8_(T)                                                           \
    typedef T V_ __attribute__((vector_size(8 * sizeof(T))));                       \
    V_ r, t;                                                                        \
    int64_t i;                                                                      \
    memcpy(&r, a, sizeof r);                                                        \
    for (i = 8; i < n - (n % 8); i += 8) {                                          \
        memcpy(&t, a + i, sizeof t);                                                \
        r += t;                                                                     \
    }                                                                               \
    T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
#define NDL_PW_LANES4_(T)                                                           \
    typedef T V_ __attribute__((vector_size(4 * sizeof(T))));                       \
    V_ r0, r1, t0, t1;                                                              \
    int64_t i;                                                                      \
    memcpy(&r0, a, sizeof r0);                                                      \
    memcpy(&r1, a + 4, sizeof r1);                                                  \
    for (i = 8; i < n - (n % 8); i += 8) {                                          \
        memcpy(&t0, a + i, sizeof t0);                                              \
        memcpy(&t1, a + i + 4, sizeof t1);                                          \
        r0 += t0;                                                                   \
        r1 += t1;                                                                   \
    }                                                                               \
    T res = ((r0[0] + r0[1]) + (r0[2] + r0[3])) + ((r1[0] + r1[1]) + (r1[2] + r1[3]));
#define NDL_PAIRWISE(NAME, T, LANES)                                                \
static inline __attribute__((always_inline)) T NAME##_short(const T *a, int64_t n) \
{                                                                                   \
    if (n < 8) {                                                                    \
        T res = (T)-0.0;                                                            \
        for (int64_t i = 0; i < n; i++) res += a[i];                                \
        return res;                                                                 \
    }                                                                               \
    LANES(T)                                                                        \
    for (; i < n; i++) res += a[i];                                                 \
    return res;                                                                     \
}                                                                                   \
static __attribute__((noinline, unused)) T NAME##_long(const T *a, int64_t n);     \
static inline __attribute__((always_inline)) T NAME##_half(const T *a, int64_t n)  \
{                                                                                   \
    if (n <= 128) return NAME##_short(a, n);                                        \
    int64_t n2 = n / 2;                                                             \
    n2 -= n2 % 8;                                                                   \
    if (n - n2 <= 128) /* both halves are leaves (n2 <= n - n2) */                  \
        return NAME##_short(a, n2) + NAME##_short(a + n2, n - n2);                  \
    return NAME##_long(a, n2) + NAME##_long(a + n2, n - n2);                        \
}                                                                                   \
static T NAME##_long(const T *a, int64_t n)                                         \
{                                                                                   \
    if (n <= 128) return NAME##_short(a, n);                                        \
    int64_t n2 = n / 2;                                                             \
    n2 -= n2 % 8;                                                                   \
    return NAME##_half(a, n2) + NAME##_half(a + n2, n - n2);                        \
}                                                                                   \
static inline T NAME(const T *a, int64_t n)                                         \
{                                                                                   \
    return n <= 128 ? NAME##_short(a, n) : NAME##_long(a, n);                       \
}
NDL_PAIRWISE(ndl_pairwise_d, double, NDL_PW_LANES4_)
NDL_PAIRWISE(ndl_pairwise_f, float, NDL_PW_LANES8_)
/* Quiet float compares. C's a > b of a NaN raises FE_INVALID (an ordered
 * compare), and GCC vectorizes even the quiet isgreater/islessequal into
 * the signaling vcmpnlepd: loops whose float events go to the flags took
 * that flag for an event and reran in Python on every call with NaN data
 * (NumPy's maximum, max and argmax of NaN warn of nothing). == and != are
 * quiet; the ordered compares below only ever see NaN-free operands. */
/* whether n floats w hold a NaN (a loop the C compiler vectorizes) */
static inline int ndl_anynan_d(const double *w, int64_t n)
{
    int r = 0;
    for (int64_t i = 0; i < n; i++) r |= w[i] != w[i];
    return r;
}
static inline int ndl_anynan_f(const float *w, int64_t n)
{
    int r = 0;
    for (int64_t i = 0; i < n; i++) r |= w[i] != w[i];
    return r;
}
/* A float's bits as a signed integer of the float order (-0.0 just below
 * +0.0; a NaN anywhere): x > y of NaN-free x, y is NDL_QGT with no float
 * compare at all (a NaN-free stand-in compared as a float does not do: GCC
 * compares the operands themselves and selects after) */
static inline int64_t ndl_ord_d(double x)
{
    int64_t i;
    memcpy(&i, &x, sizeof i);
    return i ^ (int64_t)((uint64_t)(i >> 63) >> 1);
}
static inline int32_t ndl_ord_f(float x)
{
    int32_t i;
    memcpy(&i, &x, sizeof i);
    return i ^ (int32_t)((uint32_t)(i >> 31) >> 1);
}
#define NDL_QGT(S, x, y) ((ndl_ord_##S(x) > ndl_ord_##S(y)) & ((x) != (y)))
/* np.maximum / np.minimum of two floats (nd_kernel.h's nd_max_d: a NaN
 * operand is the result, the first one first; equal values give a) */
static inline double ndl_qmax_d(double a, double b) { return ((a != a) | ((b == b) & !NDL_QGT(d, b, a))) ? a : b; }
static inline double ndl_qmin_d(double a, double b) { return ((a != a) | ((b == b) & !NDL_QGT(d, a, b))) ? a : b; }
static inline float ndl_qmax_f(float a, float b) { return ((a != a) | ((b == b) & !NDL_QGT(f, b, a))) ? a : b; }
static inline float ndl_qmin_f(float a, float b) { return ((a != a) | ((b == b) & !NDL_QGT(f, a, b))) ? a : b; }

/* np.max / np.min of n >= 1 floats w, as codegen_loop.c's ordered scan
 * gives it: the first NaN; else the extreme, the later of equal values (max
 * of -0.0, 0.0 is 0.0). In W lanes (vector extensions: the C compiler's own
 * vectorizer leaves a conditional reduction alone); the lanes' extreme is
 * the scan's whenever it is not zero (equal nonzero floats are the same
 * bits), else the ordered scan answers. Data with a NaN goes to the scan
 * (found first by ndl_anynan_d): the lanes' ordered compares of a NaN
 * raise FE_INVALID, which a loop whose float events go to the flags took
 * for an event, rerunning in Python every call with NaN data.
 * The lanes' part is a function of its own (noinline), called for n >= 2W:
 * inlined at every np.max/np.min of a loop, its unrolled lane loops gave
 * one loop 7170 basic blocks and GCC's RTL GCSE ran 15 s on it (session
 * 28, ci11: test_loops_vectors' max/min loop, 15.4 -> 0.9 s to compile;
 * the call is one per >= 2W elements, short slices keep the inline scan). */
#define NDL_EXTREME(NAME, T, I, W, CMP, S)                                             \
static inline T NAME##_scan(const T *w, int64_t n)                                  \
{                                                                                   \
    T b = w[0];                                                                     \
    if (b != b) return b;                                                           \
    for (int64_t i = 1; i < n; i++) {                                               \
        if (w[i] != w[i]) return w[i];                                              \
        if (!(b CMP w[i])) b = w[i];                                                \
    }                                                                               \
    return b;                                                                       \
}                                                                                   \
static __attribute__((noinline, unused)) T NAME##_lanes(const T *w, int64_t n)      \
{                                                                                   \
    typedef T v_ __attribute__((vector_size(W * sizeof(T))));                       \
    typedef I m_ __attribute__((vector_size(W * sizeof(T))));                       \
    v_ m, x;                                                                        \
    memcpy(&m, w, sizeof m);                                                        \
    m_ bad = m != m;                                                                \
    int64_t i = W;                                                                  \
    if (n >= 8 * W) {                                                               \
        /* four chains of selects: one chain waits on the compare and select   \
         * of the last (latency bound, a third of a Jacobi sweep's time) */    \
        v_ m1, m2, m3;                                                              \
        memcpy(&m1, w + W, sizeof m1);                                              \
        memcpy(&m2, w + 2 * W, sizeof m2);                                          \
        memcpy(&m3, w + 3 * W, sizeof m3);                                          \
        m_ bad1 = m1 != m1, bad2 = m2 != m2, bad3 = m3 != m3;                       \
        for (i = 4 * W; i + 4 * W <= n; i += 4 * W) {                               \
            v_ x0, x1, x2, x3;                                                      \
            memcpy(&x0, w + i, sizeof x0);                                          \
            memcpy(&x1, w + i + W, sizeof x1);                                      \
            memcpy(&x2, w + i + 2 * W, sizeof x2);                                  \
            memcpy(&x3, w + i + 3 * W, sizeof x3);                                  \
            m_ k0 = m CMP x0, k1 = m1 CMP x1, k2 = m2 CMP x2, k3 = m3 CMP x3;       \
            bad |= x0 != x0; bad1 |= x1 != x1; bad2 |= x2 != x2; bad3 |= x3 != x3;  \
            m = (v_)(((m_)m & k0) | ((m_)x0 & ~k0));                                \
            m1 = (v_)(((m_)m1 & k1) | ((m_)x1 & ~k1));                              \
            m2 = (v_)(((m_)m2 & k2) | ((m_)x2 & ~k2));                              \
            m3 = (v_)(((m_)m3 & k3) | ((m_)x3 & ~k3));                              \
        }                                                                           \
        /* (which lane holds an equal value does not matter: equal nonzero     \
         * floats are the same bits; zeros and NaNs rescan in order) */        \
        bad |= bad1 | bad2 | bad3;                                                  \
        m_ k = m CMP m1;                                                            \
        m = (v_)(((m_)m & k) | ((m_)m1 & ~k));                                      \
        k = m2 CMP m3;                                                              \
        m2 = (v_)(((m_)m2 & k) | ((m_)m3 & ~k));                                    \
        k = m CMP m2;                                                               \
        m = (v_)(((m_)m & k) | ((m_)m2 & ~k));                                      \
    }                                                                               \
    for (; i + W <= n; i += W) {                                                    \
        memcpy(&x, w + i, sizeof x);                                                \
        m_ k = m CMP x;                                                             \
        bad |= x != x;                                                              \
        m = (v_)(((m_)m & k) | ((m_)x & ~k));                                       \
    }                                                                               \
    I anybad = 0;                                                                   \
    T b = m[0];                                                                     \
    for (int j = 0; j < W; j++) {                                                   \
        anybad |= bad[j];                                                           \
        if (m[j] CMP b) b = m[j];                                                   \
    }                                                                               \
    for (; i < n; i++) {                                                            \
        anybad |= w[i] != w[i];                                                     \
        if (!(b CMP w[i])) b = w[i];                                                \
    }                                                                               \
    return anybad || b == 0 ? NAME##_scan(w, n) : b;                                \
}                                                                                   \
static inline T NAME(const T *w, int64_t n)                                         \
{                                                                                   \
    return n < 2 * W || ndl_anynan_##S(w, n) ? NAME##_scan(w, n) : NAME##_lanes(w, n); \
}
NDL_EXTREME(ndl_max_d, double, int64_t, 8, >, d)
NDL_EXTREME(ndl_min_d, double, int64_t, 8, <, d)
NDL_EXTREME(ndl_max_f, float, int32_t, 16, >, f)
NDL_EXTREME(ndl_min_f, float, int32_t, 16, <, f)
/* x . w for a matrix row/column x (byte stride sx) and a contiguous w: in
 * eight partial sums when x is contiguous (vectorizes; BLAS's gemv also
 * sums out of order), else in order */
#define NDL_DOTROW(NAME, T)                                                         \
static inline T NAME(const char *x, int64_t sx, const T *w, int64_t n)              \
{                                                                                   \
    if (sx == (int64_t)sizeof(T) && n >= 16) {                                      \
        const T *a = (const T *)x;                                                  \
        T s[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                          \
        int64_t i = 0;                                                              \
        for (; i + 8 <= n; i += 8)                                                  \
            for (int j = 0; j < 8; j++) s[j] += a[i + j] * w[i + j];                \
        T r = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));    \
        for (; i < n; i++) r += a[i] * w[i];                                        \
        return r;                                                                   \
    }                                                                               \
    T r = 0;                                                                        \
    for (int64_t i = 0; i < n; i++) r += *(const T *)(x + i * sx) * w[i];           \
    return r;                                                                       \
}
NDL_DOTROW(ndl_dotrow_d, double)
NDL_DOTROW(ndl_dotrow_f, float)

/* np.linalg.inv of the n x n matrix at p (byte strides s0, s1) into out (C
 * order), by Gauss-Jordan elimination with partial pivoting on w (n * n
 * scratch), in the matrix's own float type as LAPACK's ?gesv: the pivot
 * of column c is the first largest |w[r, c]|, r >= c -- LAPACK's LU takes
 * the same pivots (the rows below c are those of its elimination), so an
 * exactly zero pivot, its "Singular matrix", is found at the same column.
 * 0: done; 1: a pivot that is zero or small against its column of the
 * matrix (TOL: about the square root of T's epsilon) -- LAPACK's LU sums
 * in another order (OpenBLAS's kernels), so where this elimination sees a
 * pivot of rounding size (a singular matrix such as arange(1, 10).reshape
 * (3, 3), or a near-singular one, whose inverse differs between any two
 * orders far past the dtype's tolerance) LAPACK may see an exact zero and
 * raise, or not: NumPy decides; 2: a NaN or an infinity in the matrix
 * (left to NumPy). The caller leaves both to NumPy, and float events (an
 * overflow) too. */
#define NDL_INV(name, T, ABS, TOL)                                                               \
    static inline int name(const char *p, int64_t s0, int64_t s1, int64_t n, T *out, T *w)       \
    {                                                                                            \
        for (int64_t i = 0; i < n; i++)                                                          \
            for (int64_t j = 0; j < n; j++) {                                                    \
                T x = *(const T *)(p + i * s0 + j * s1);                                         \
                if (!isfinite(x)) return 2;                                                      \
                w[i * n + j] = x;                                                                \
                out[i * n + j] = (T)(i == j);                                                    \
            }                                                                                    \
        for (int64_t c = 0; c < n; c++) {                                                        \
            int64_t piv = c;                                                                     \
            T best = ABS(w[c * n + c]);                                                          \
            for (int64_t r = c + 1; r < n; r++)                                                  \
                if (ABS(w[r * n + c]) > best) { best = ABS(w[r * n + c]); piv = r; }             \
            T cmax = 0;                                                                          \
            for (int64_t r = 0; r < n; r++) {                                                    \
                T x = ABS(*(const T *)(p + r * s0 + c * s1));                                    \
                if (x > cmax) cmax = x;                                                          \
            }                                                                                    \
            if (!(best > (T)(TOL) * cmax)) return 1;                                             \
            if (piv != c)                                                                        \
                for (int64_t j = 0; j < n; j++) {                                                \
                    T t = w[c * n + j]; w[c * n + j] = w[piv * n + j]; w[piv * n + j] = t;       \
                    t = out[c * n + j]; out[c * n + j] = out[piv * n + j]; out[piv * n + j] = t; \
                }                                                                                \
            const T d = w[c * n + c];                                                            \
            for (int64_t j = 0; j < n; j++) { w[c * n + j] /= d; out[c * n + j] /= d; }          \
            for (int64_t r = 0; r < n; r++) {                                                    \
                if (r == c) continue;                                                            \
                const T f = w[r * n + c];                                                        \
                if (f == 0) continue;                                                            \
                for (int64_t j = 0; j < n; j++) {                                                \
                    w[r * n + j] -= f * w[c * n + j];                                            \
                    out[r * n + j] -= f * out[c * n + j];                                        \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
        return 0;                                                                                \
    }
NDL_INV(ndl_inv_d, double, fabs, 0x1p-26)
NDL_INV(ndl_inv_f, float, fabsf, 0x1p-12)
/* u . v of two strided vectors (np.dot of slices): eight partial sums when
 * both are contiguous (BLAS's ddot sums out of order too), else in order,
 * from +0.0 (as BLAS); one element is its product (as NumPy, -0.0 kept) */
#define NDL_DOT2(NAME, T)                                                           \
static inline T NAME(const char *x, int64_t sx, const char *y, int64_t sy, int64_t n) \
{                                                                                   \
    if (sx == (int64_t)sizeof(T) && sy == (int64_t)sizeof(T) && n >= 16) {          \
        const T *a = (const T *)x, *b = (const T *)y;                               \
        T s[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                          \
        int64_t i = 0;                                                              \
        for (; i + 8 <= n; i += 8)                                                  \
            for (int j = 0; j < 8; j++) s[j] += a[i + j] * b[i + j];                \
        T r = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));    \
        for (; i < n; i++) r += a[i] * b[i];                                        \
        return r;                                                                   \
    }                                                                               \
    if (n == 1) return *(const T *)x * *(const T *)y;                               \
    T r = 0;                                                                        \
    for (int64_t i = 0; i < n; i++) r += *(const T *)(x + i * sx) * *(const T *)(y + i * sy); \
    return r;                                                                       \
}
NDL_DOT2(ndl_dot2_d, double)
NDL_DOT2(ndl_dot2_f, float)
/* whether reading n elements at p (byte stride st, size isz) cannot see
 * the writes of m elements at q (stride sq, size iszq) -- apart, or the
 * very same elements (each read before its own write) */
static inline int ndl_apart(const char *p, int64_t st, int64_t n, int64_t isz, const char *q, int64_t sq,
                            int64_t m, int64_t iszq)
{
    if (n <= 0 || m <= 0) return 1;
    if (p == q && st == sq && isz == iszq && n == m) return 1;
    const char *plo = p + (st < 0 ? (n - 1) * st : 0), *phi = p + (st > 0 ? (n - 1) * st : 0) + isz;
    const char *qlo = q + (sq < 0 ? (m - 1) * sq : 0), *qhi = q + (sq > 0 ? (m - 1) * sq : 0) + iszq;
    return phi <= qlo || qhi <= plo;
}
/* the same for a 2-D read region (n x n2) and a 2-D write region (m x m2) */
static inline int ndl_apart22(const char *p, int64_t st, int64_t n, int64_t st2, int64_t n2, int64_t isz,
                              const char *q, int64_t sq, int64_t m, int64_t sq2, int64_t m2, int64_t iszq)
{
    if (n <= 0 || n2 <= 0 || m <= 0 || m2 <= 0) return 1;
    if (p == q && st == sq && st2 == sq2 && n == m && n2 == m2 && isz == iszq) return 1;
    const char *plo = p + (st < 0 ? (n - 1) * st : 0) + (st2 < 0 ? (n2 - 1) * st2 : 0);
    const char *phi = p + (st > 0 ? (n - 1) * st : 0) + (st2 > 0 ? (n2 - 1) * st2 : 0) + isz;
    const char *qlo = q + (sq < 0 ? (m - 1) * sq : 0) + (sq2 < 0 ? (m2 - 1) * sq2 : 0);
    const char *qhi = q + (sq > 0 ? (m - 1) * sq : 0) + (sq2 > 0 ? (m2 - 1) * sq2 : 0) + iszq;
    return phi <= qlo || qhi <= plo;
}
/* the same for a 2-D read region (n x n2, strides st, st2) */
static inline int ndl_apart2(const char *p, int64_t st, int64_t n, int64_t st2, int64_t n2, int64_t isz,
                             const char *q, int64_t sq, int64_t m, int64_t iszq)
{
    if (n <= 0 || n2 <= 0 || m <= 0) return 1;
    const char *plo = p + (st < 0 ? (n - 1) * st : 0) + (st2 < 0 ? (n2 - 1) * st2 : 0);
    const char *phi = p + (st > 0 ? (n - 1) * st : 0) + (st2 > 0 ? (n2 - 1) * st2 : 0) + isz;
    const char *qlo = q + (sq < 0 ? (m - 1) * sq : 0), *qhi = q + (sq > 0 ? (m - 1) * sq : 0) + iszq;
    return phi <= qlo || qhi <= plo;
}

/* ------------------------------------------------- arrays the loop makes */
/* NumPy's flags: C (F) contiguous -- every axis longer than 1 at the
 * stride of the axes after (before) it; any empty axis makes both */
static inline int ndl_contig(int nd, const int64_t *n, const int64_t *s, int64_t isz, int fortran)
{
    int64_t sd = isz;
    for (int d = 0; d < nd; d++) if (n[d] == 0) return 1;
    for (int k = 0; k < nd; k++) {
        int d = fortran ? k : nd - 1 - k;
        if (n[d] != 1) {
            if (s[d] != sd) return 0;
            sd *= n[d];
        }
    }
    return 1;
}
/* the strides NumPy gives a new array shaped n like a prototype with
 * strides s: order 'C' (korder 0: x.copy()), or 'K' (np.copy, np.empty_like,
 * np.zeros_like): C for a C-contiguous or 1-D prototype, F for an
 * F-contiguous one, else its axes in the order of their |stride|
 * (descending, ties in axis order: PyArray_CreateSortedStridePerm) */
static inline void ndl_like_strides(int nd, const int64_t *n, const int64_t *s, int64_t isz, int korder,
                                    int64_t *out)
{
    int fort = korder && nd > 1 && !ndl_contig(nd, n, s, isz, 0) && ndl_contig(nd, n, s, isz, 1);
    if (!korder || nd <= 1 || ndl_contig(nd, n, s, isz, 0) || fort) {
        /* PyArray_NewFromDescr's fill: an empty axis does not multiply */
        int64_t sd = isz;
        for (int k = 0; k < nd; k++) {
            int d = fort ? k : nd - 1 - k;
            out[d] = sd;
            if (n[d]) sd *= n[d];
        }
        return;
    }
    int perm[NDL_MAXDIMS];
    for (int d = 0; d < nd; d++) perm[d] = d;
    for (int i = 1; i < nd; i++) {   /* a stable insertion sort */
        int p = perm[i], j = i;
        int64_t ap = s[p] < 0 ? -s[p] : s[p];
        while (j > 0) {
            int q = perm[j - 1];
            int64_t aq = s[q] < 0 ? -s[q] : s[q];
            if (aq >= ap) break;
            perm[j] = q;
            j--;
        }
        perm[j] = p;
    }
    int64_t sd = isz;
    for (int k = nd - 1; k >= 0; k--) {
        out[perm[k]] = sd;
        sd *= n[perm[k]];
    }
}
static inline int64_t ndl_nbytes(int nd, const int64_t *n, int64_t isz)
{
    int64_t b = isz;
    for (int d = 0; d < nd; d++) b *= n[d];
    return b;
}
/* slot b holds at least nb bytes: 0, or 1 when malloc fails */
static inline int ndl_pool_fit(nd_lbuf *b, int64_t nb)
{
    if (b->cap >= nb && b->p) return 0;
    free(b->p);
    b->p = (char *)malloc(nb > 0 ? (size_t)nb : 1);
    b->cap = b->p ? nb : 0;
    return b->p == NULL;
}
/* dst[...] = src[...] over shape n (byte strides; dst does not overlap src) */
static inline void ndl_copy_nd(char *dst, const int64_t *ds, const char *src, const int64_t *ss,
                               const int64_t *n, int nd, int64_t isz)
{
    for (int d = 0; d < nd; d++) if (n[d] == 0) return;
    if (ndl_contig(nd, n, ds, isz, 0) && ndl_contig(nd, n, ss, isz, 0)) {
        memcpy(dst, src, (size_t)ndl_nbytes(nd, n, isz));
        return;
    }
    int64_t idx[NDL_MAXDIMS] = {0};
    int64_t in = nd ? n[nd - 1] : 1, dsi = nd ? ds[nd - 1] : 0, ssi = nd ? ss[nd - 1] : 0;
    for (;;) {
        if (dsi == isz && ssi == isz) memcpy(dst, src, (size_t)(in * isz));
        else if (isz == 8) for (int64_t i = 0; i < in; i++) memcpy(dst + i * dsi, src + i * ssi, 8);
        else if (isz == 4) for (int64_t i = 0; i < in; i++) memcpy(dst + i * dsi, src + i * ssi, 4);
        else for (int64_t i = 0; i < in; i++) memcpy(dst + i * dsi, src + i * ssi, (size_t)isz);
        int d = nd - 2;
        for (; d >= 0; d--) {
            dst += ds[d];
            src += ss[d];
            if (++idx[d] < n[d]) break;
            dst -= ds[d] * n[d];
            src -= ss[d] * n[d];
            idx[d] = 0;
        }
        if (d < 0) return;
    }
}

#endif
