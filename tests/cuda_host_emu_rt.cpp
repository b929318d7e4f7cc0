/* cuda_host_emu_rt.cpp -- the host emulation's runtime (cuda_host_emu.h
 * declares it): the thread indices, the block's and warps' barriers and
 * the launcher. Compiled once: included by tests/cuda_fake_driver.cpp, or
 * built as a library by tests/test_cuda_emulated.py; units find it when
 * they are loaded (it is in the global scope).
 *
 * A block's CUDA threads are fibers of the launching thread (ucontext), not
 * OS threads: a barrier (__syncthreads, a warp shuffle's) switches to the
 * next fiber that can run, so a launch creates no thread and no barrier
 * waits on the OS scheduler -- on a loaded machine a 256-thread block used
 * to cost hundreds of context switches per barrier. Fibers run in thread
 * order and a barrier releases when its last thread arrives, which is
 * CUDA's contract; a barrier some threads never reach (divergent
 * __syncthreads) aborts with a message instead of hanging. */
#include "cuda_host_emu.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

thread_local nd_dim3 threadIdx, blockIdx;
nd_dim3 blockDim, gridDim;
uint64_t nd_emu_slot[1024];

enum { RUNNABLE, WAITING, DONE };
struct fiber {
    ucontext_t ctx;
    int state;
    int wait_on;             /* -1: the block's barrier, else the warp */
};
static const size_t STACK = (size_t)256 << 10;
static fiber fibers[1024];
static char *stacks;                 /* 1024 stacks, mapped once */
static ucontext_t emu_sched;
static unsigned emu_nthreads, emu_current;
static unsigned arrived_block, arrived_warp[32];
static nd_emu_kernel run_k;
static char *const *run_P;
static const int64_t *run_I;
static const void *run_S;
static int *run_E;

static void die(const char *what)
{
    fprintf(stderr, "cuda_host_emu: %s\n", what);
    abort();
}

/* this fiber waits at barrier `on` (-1: block, w: warp w) of `need`
 * threads; the last to arrive releases the others and goes on */
static void arrive(int on, unsigned need)
{
    unsigned *n = on < 0 ? &arrived_block : &arrived_warp[on];
    if (++*n == need) {
        *n = 0;
        for (unsigned t = 0; t < emu_nthreads; t++)
            if (fibers[t].state == WAITING && fibers[t].wait_on == on) fibers[t].state = RUNNABLE;
        return;
    }
    fibers[emu_current].state = WAITING;
    fibers[emu_current].wait_on = on;
    swapcontext(&fibers[emu_current].ctx, &emu_sched);
}

void nd_emu_sync_block() { arrive(-1, emu_nthreads); }
void nd_emu_sync_warp(unsigned w) { arrive((int)w, 32); }

static void body(void)
{
    run_k(run_P, run_I, run_S, run_E);
    fibers[emu_current].state = DONE;
    /* returning resumes uc_link: the scheduler */
}

extern "C" __attribute__((visibility("default")))
void nd_emu_launch(nd_emu_kernel k, char *const *P, const int64_t *I, const void *S, int *E,
                   unsigned grid, unsigned block)
{
    if (block == 0 || block > 1024) die("a block of 1 to 1024 threads");
    if (!stacks) {
        void *m = mmap(NULL, STACK * 1024, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) die("cannot map the fibers' stacks");
        stacks = (char *)m;
    }
    run_k = k, run_P = P, run_I = I, run_S = S, run_E = E;
    gridDim.x = grid;
    blockDim.x = block;
    emu_nthreads = block;
    for (unsigned b = 0; b < grid; b++) {
        blockIdx.x = b;
        arrived_block = 0;
        for (unsigned w = 0; w < 32; w++) arrived_warp[w] = 0;
        for (unsigned t = 0; t < block; t++) {
            fiber *f = &fibers[t];
            getcontext(&f->ctx);
            f->ctx.uc_stack.ss_sp = stacks + STACK * t;
            f->ctx.uc_stack.ss_size = STACK;
            f->ctx.uc_link = &emu_sched;
            makecontext(&f->ctx, body, 0);
            f->state = RUNNABLE;
        }
        /* round robin over the runnable fibers until every one is done */
        for (unsigned left = block; left;) {
            int ran = 0;
            for (unsigned t = 0; t < block; t++) {
                if (fibers[t].state != RUNNABLE) continue;
                emu_current = t;
                threadIdx.x = t;
                swapcontext(&emu_sched, &fibers[t].ctx);
                ran = 1;
                if (fibers[t].state == DONE) left--;
            }
            if (!ran && left) die("deadlock: threads wait at a barrier the others never reach");
        }
    }
}
