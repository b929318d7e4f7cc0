/* floor.h -- the speed floor: a compiled function is never slower than NumPy.
 *
 * Some programs cannot win under numdyn today: a loop of tiny statements
 * whose capture (trace, flush, schedule, lookups, dispatch) costs more than
 * NumPy's ~1 us per call, or kernels no better than NumPy's own. For those
 * the cheapest correct program is the user's function itself, run on real
 * arrays by NumPy. So each compiled function measures, per argument
 * signature (types; dtypes, ranks, size classes and memory order of
 * arrays: guards' nd_callsig cost key), its
 * warm calls under numdyn against calls of the original function, and runs
 * whichever is faster. Both paths give NumPy's answer (numdyn's whole
 * contract), so the choice changes speed only; each call runs the function
 * exactly once, so side effects are those of one call either way.
 *
 * The measurement is a cost model, not a guess: it is taken on this machine,
 * on these shapes, after the kernels were built (the first calls of a
 * signature are not timed), as the median of recent interleaved calls
 * (the typical call: a path whose time varies with the machine's load,
 * NumPy's threaded BLAS, is not judged by its lucky calls). A close call
 * waits for more samples. A decision is re-checked with exponentially
 * growing gaps, so a program whose first warm calls were not typical is
 * re-measured at a bounded cost (a few percent); a re-check that would
 * switch paths measures them again side by side first.
 *
 * Off with compile(..., options={"floor": False}), or numdyn.config.floor
 * = False (read at compile time; NUMDYN_FLOOR=0 sets its default: the test
 * suite runs that way, to test numdyn's own paths). Reported by
 * CompiledFunction._floor_info() and numdyn.explain.
 */
#ifndef ND_FLOOR_H
#define ND_FLOOR_H
#include <Python.h>
#include <stdint.h>

typedef struct nd_floor nd_floor;   /* per compiled function */

/* numdyn's path; NumPy's (the function untraced, its captured loops as
 * C); the original function (only for one with captured loops: plain NumPy
 * where a captured loop's C is slower than NumPy's calls) */
enum { ND_FLOOR_COMPILED = 0, ND_FLOOR_NUMPY = 1, ND_FLOOR_ORIGINAL = 2 };

/* A call's choice, handed back to nd_floor_done with the call's time. */
typedef struct {
    nd_floor *f;
    int slot;       /* -1: not timed */
    int path;       /* ND_FLOOR_COMPILED, ND_FLOOR_NUMPY or ND_FLOOR_ORIGINAL */
    uint64_t key;   /* the slot's signature (another call may evict it) */
    uint64_t t0;    /* ns */
    long long compiling; /* ND_CTR_COMPILING_RUNS at the start: a call that
                            ran graphs with NumPy while their kernels
                            compiled in the background is not a sample */
    int watch;      /* slot whose compiling runs this call reports, or -1 */
    uint64_t onetime; /* one-time work done so far (kernels compiled or
                         loaded, compiles ended...): a timed compiled call
                         that did any is not a sample */
} nd_floor_call;

nd_floor *nd_floor_new(void);          /* NULL + MemoryError */
void nd_floor_free(nd_floor *f);
void nd_floor_reset(nd_floor *f);      /* forget every measurement */

/* Which path this call takes. key: the call's cost key (guards'
 * nd_callsig, computed once a call with the program signature);
 * args/n: the arguments (described for reports). original: the function
 * has captured loops, so the original function is a third path (NumPy's
 * path is not plain NumPy). Never fails. */
void nd_floor_choose(nd_floor *f, uint64_t key, PyObject *const *args, Py_ssize_t n,
                     int original, nd_floor_call *c);
/* The call finished; ok: it returned (raising calls are not timed). */
void nd_floor_done(nd_floor_call *c, int ok);

/* List of dicts: signature, path ("numdyn"/"numpy"/"original"/"measuring"),
 * calls, numdyn_s, numpy_s and original_s (median of the recent calls,
 * seconds, None before measured), numdyn_samples / numpy_samples /
 * original_samples (timed calls of each path so far), decided_at (the call
 * that ended the last measuring, 0 while measuring: earlier than 2 + 2 x 5
 * when one path is far slower, up to 2 + 2 x 9 when the paths are within
 * 10%), remeasuring (True while a decided signature measures its paths
 * again: path is the decision that stands meanwhile), next_probe (the call that next runs a path not
 * chosen; 0 while measuring) and probes ({path: the call that next runs
 * it}, 0 for the chosen path and one the signature does not have). */
PyObject *nd_floor_info(nd_floor *f);
/* The same dict for the signature of these arguments, or None. */
PyObject *nd_floor_info_for(nd_floor *f, PyObject *const *args, Py_ssize_t n);

/* _floor_test_delay(numdyn_s, numpy_s, original_s): seconds added to
 * each timed call of each path (tests: a path slower than it is here).
 * _floor_test_times(numdyn, numpy, original): sequences of seconds that
 * stand in for the clock's readings of each path's timed calls, cyclically
 * (tests: decisions independent of the machine's load). */
int nd_floor_init(PyObject *module);

#endif
