/* cuda_host_emu.h -- runs numdyn's generated CUDA on the host, for tests
 * on machines without a GPU (tests/test_cuda_emulated.py, the fake driver
 * of tests/test_cuda_emulated_device.py): g++ compiles the unit
 * (kernels/nd_cuda.h + kernels) after this header, every CUDA thread of a
 * block is a std::thread, __syncthreads and warp shuffles are barriers,
 * blocks run one after another (so __shared__ is a static). It checks the
 * generated code's logic (indexing, block/warp reductions, NumPy's rules),
 * not a GPU's arithmetic.
 *
 * Only declarations: the launcher, the barriers and the thread indices live
 * in cuda_host_emu_rt.cpp, compiled once (into the fake driver, or a
 * library of its own for test_cuda_emulated.py) and found when a unit is
 * loaded. So a unit parses no C++ library header and instantiates no
 * std::thread: its g++ run is its kernels (0.2-0.4 s, was ~1.5 s with
 * the launcher in every unit, even precompiled). */
#include <stdint.h>
#include <math.h>
#include <string.h>
#define ND_CUDA_HOST 1
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
struct nd_dim3 { unsigned x, y, z; };
extern thread_local nd_dim3 threadIdx, blockIdx;
extern nd_dim3 blockDim, gridDim;
extern uint64_t nd_emu_slot[1024];
void nd_emu_sync_block();            /* every thread of the block */
void nd_emu_sync_warp(unsigned w);   /* the 32 threads of warp w */

inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
inline float __uint_as_float(unsigned x) { float f; memcpy(&f, &x, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned x; memcpy(&x, &f, 4); return x; }
inline long long __double_as_longlong(double d) { long long x; memcpy(&x, &d, 8); return x; }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b)
{ return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
inline void __syncthreads() { nd_emu_sync_block(); }
inline int atomicOr(int *p, int v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }
inline int atomicAdd(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
template <class T> T __shfl_down_sync(unsigned, T v, int off)
{
    static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
    unsigned t = threadIdx.x, lane = t % 32, w = t / 32;
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof v);
    nd_emu_slot[t] = bits;
    nd_emu_sync_warp(w);
    T r = v;
    if (lane + (unsigned)off < 32) memcpy(&r, &nd_emu_slot[t + (unsigned)off], sizeof r);
    nd_emu_sync_warp(w);
    return r;
}

typedef void (*nd_emu_kernel)(char *const *, const int64_t *, const void *, int *);
/* a launch of k: grid blocks of `block` threads (cuda_host_emu_rt.cpp) */
extern "C" void nd_emu_launch(nd_emu_kernel k, char *const *P, const int64_t *I, const void *S,
                              int *E, unsigned grid, unsigned block);
