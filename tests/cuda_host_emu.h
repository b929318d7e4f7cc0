/* cuda_host_emu.h -- runs numdyn's generated CUDA on the host, for tests
 * on machines without a GPU (tests/test_cuda_emulated.py): g++ compiles the
 * unit (kernels/nd_cuda.h + kernels) after this header, every CUDA thread
 * of a block is a std::thread, __syncthreads and warp shuffles are
 * barriers, blocks run one after another (so __shared__ is a static). It
 * checks the generated code's logic (indexing, block/warp reductions,
 * NumPy's rules), not a GPU's arithmetic. */
#include <stdint.h>
#include <math.h>
#include <string.h>
#include <barrier>
#include <thread>
#include <vector>
#define ND_CUDA_HOST 1
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
struct nd_dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local nd_dim3 threadIdx, blockIdx;
static nd_dim3 blockDim, gridDim;
static std::barrier<> *nd_emu_block;
static std::vector<std::barrier<> *> nd_emu_warp;
static uint64_t nd_emu_slot[1024];

inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
inline float __uint_as_float(unsigned x) { float f; memcpy(&f, &x, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned x; memcpy(&x, &f, 4); return x; }
inline long long __double_as_longlong(double d) { long long x; memcpy(&x, &d, 8); return x; }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b)
{ return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
inline void __syncthreads() { nd_emu_block->arrive_and_wait(); }
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
    nd_emu_warp[w]->arrive_and_wait();
    T r = v;
    if (lane + (unsigned)off < 32) memcpy(&r, &nd_emu_slot[t + (unsigned)off], sizeof r);
    nd_emu_warp[w]->arrive_and_wait();
    return r;
}

typedef void (*nd_emu_kernel)(char *const *, const int64_t *, const void *, int *);
/* a launch: `block` threads, each running its thread of every block in turn
 * (one thread creation per thread of a block, not per block); a barrier
 * after each block keeps blocks one after another, as __shared__ (a
 * static) needs */
extern "C" void nd_emu_launch(nd_emu_kernel k, char *const *P, const int64_t *I, const void *S,
                              int *E, unsigned grid, unsigned block)
{
    gridDim.x = grid;
    blockDim.x = block;
    std::barrier<> bar(block), done(block);
    nd_emu_block = &bar;
    nd_emu_warp.clear();
    for (unsigned w = 0; w < block / 32; w++) nd_emu_warp.push_back(new std::barrier<>(32));
    std::vector<std::thread> th;
    for (unsigned t = 0; t < block; t++)
        th.emplace_back([=, &done] {
            threadIdx.x = t;
            for (unsigned b = 0; b < grid; b++) {
                blockIdx.x = b;
                k(P, I, S, E);
                done.arrive_and_wait();
            }
        });
    for (auto &x : th) x.join();
    for (auto *w : nd_emu_warp) delete w;
}