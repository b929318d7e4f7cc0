/* par.h -- a kernel's OpenMP team or the calling thread alone, measured.
 *
 * A generated kernel above ND_PAR_WORK runs its tasks on an OpenMP team.
 * That is a bet on the cores being free, and another library's thread pool
 * can lose it: NumPy's OpenBLAS leaves its threads spinning (sched_yield
 * loops, ~0.1 s) after each matmul, MKL and torch's libgomp do the like, so
 * on a small machine a team launched next to a BLAS call waits for a core
 * one of those threads holds (Tensor MLP forward + backward, 2 cores:
 * 52 ms against NumPy's 0.54 ms, 1.07 ms single-threaded). The runtime
 * cannot see other pools, and need not: it times each kernel's runs (wall
 * time per element, the kernel's program step in its own context, whatever
 * pool sits next to it) with the team and alone, and keeps the faster, as
 * the speed floor (floor.h) does for whole calls. Per kernel of a program:
 *
 *   run 1                not timed (first touch of fresh buffers)
 *                        (a run: the span of nd_par_begin below)
 *   measuring            team and alone in turns, ND_PAR_NSAMP runs each,
 *                        or one each when one way took 4 times the other
 *                        (a stalled team: 20-500 ms against 30 us alone,
 *                        every run of it costs), or EARLY each when 1.5 times
 *                        the other's slowest. Kernels of ALONE_WORK or
 *                        more work always use the team, untimed: alone
 *                        they would take tens of ms x cores, where a wait
 *                        for a core is a few ms (the team's own kernel time
 *                        cannot bound that: a stalled team's is the stall)
 *   decided              the faster way runs (timed: a way that becomes
 *                        slow -- a matmul now runs next to it -- loses its
 *                        place with 5% hysteresis); the other way is
 *                        probed after G, 2G, 4G... runs, G such that probes
 *                        cost at most PROBE_SHARE of the time
 * A run whose element count moved 4x from the measured ones starts
 * measuring again (parallel speedup depends on size).
 *
 * Both ways compute the same values bit for bit: chunk counts of
 * reductions are fixed by the generated code, not by the thread count.
 * Off with numdyn.config.adaptive_threads = False (NUMDYN_ADAPTIVE_THREADS=0):
 * the team whenever the work passes ND_PAR_WORK, as before. Counted in
 * numdyn.utils.counters["kernel_runs_alone"]; numdyn.explain lists the
 * kernels of its call with their choice and times.
 */
#ifndef ND_PAR_H
#define ND_PAR_H
#include <Python.h>
#include <stdint.h>
#include "passes/schedule.h"

/* Before running k over tot elements of `work` (elements x cost): the
 * bits to put in the kernel's error word (ND_RUN_ALONE or 0). A timed run
 * is a span: the kernel and what its program runs after it up to the next
 * timed kernel (the extern steps a spinning team would slow down: libgomp
 * spins its idle workers for ~ms unless OMP_WAIT_POLICY=PASSIVE, and a
 * matmul's BLAS threads then wait for the cores -- the team's cost lands
 * there). GIL held. */
int nd_par_begin(nd_kernel *k, int64_t tot, int64_t work);
/* Whether this process is a fork of one that loaded numdyn: kernels then run
 * alone (libgomp's team does not survive fork). */
int nd_par_forked(void);
/* The kernel just begun returned (its own time, reported by explain). */
void nd_par_ran(void);
/* The program run ended (ok) or failed (!ok: the open span is dropped). */
void nd_par_close(int ok);

/* BLAS steps. A matmul step of a program (NumPy's OpenBLAS on its own
 * threads) is timed as a kernel is: its threads are the "team", one thread
 * is "alone" (openblas_set_num_threads, found by symbol in the library
 * NumPy loaded), measured in turns over spans as above and the faster
 * kept. On a small loaded machine OpenBLAS's second thread waits for a
 * core (2-layer MLP f32's (512,256) @ (256,10): 23 ms on two threads, 0.04
 * ms on one, load ~5), and its spinning worker slows the OpenMP team of
 * the kernel after it -- the span charges that to the two-thread way.
 * OpenBLAS's one-thread and threaded paths may round differently (NumPy's
 * own products move in the last bits with OPENBLAS_NUM_THREADS), so a
 * product takes one thread only when that measured 1.5x faster: a quiet
 * machine keeps NumPy's threads and bits; a stalled one switches.
 * On a loaded machine (1-minute load average at least twice the cores this
 * process may use: no idle core for a second thread, whatever this process
 * itself runs) every product takes one thread, untimed: spans measured at
 * that load are the scheduler's noise, and one threaded product leaves
 * OpenBLAS's worker spinning on a core for ~0.1 s.
 * nd_par_blas_begin(s, m*n*k) before the step (s: the step's own state)
 * returns 1 when it opened a span; nd_par_blas_ran() after the step then
 * restores the thread count. mnk is 0 for products OpenBLAS runs on one
 * thread anyway (gemm under ND_PAR_BLAS_WORK multiply-adds, gemv of a
 * matrix under 9216 elements: runtime_native.c): they are not timed. Counted in
 * numdyn.utils.counters["blas_runs_one_thread"]. */
#define ND_PAR_BLAS_WORK (1ll << 18)
int nd_par_blas_begin(nd_parstat *s, int64_t mnk);
void nd_par_blas_ran(void);
/* the loaded OpenBLAS's thread count; -1: none found */
int nd_par_blas_threads(void);

int nd_par_init(PyObject *module);

#endif
