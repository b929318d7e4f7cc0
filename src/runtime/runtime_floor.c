/* runtime_floor.c -- the speed floor (floor.h): per argument signature,
 * numdyn's warm calls are timed against the original function's and the
 * fastest path runs. The paths: numdyn's (traced or replayed), NumPy's
 * (the function untraced, its captured loops as C) and, for a function
 * with captured loops, the original function itself (plain NumPy and
 * Python: a captured loop whose C is slower than NumPy's calls -- back
 * substitution's row times matrix, 1.45 vs 1.02 ms -- made both of the
 * others slower than NumPy, and the floor had nothing at NumPy's speed).
 *
 * Schedule of one signature:
 *   calls 1..WARM          numdyn, not timed (tracing, compiling, recording
 *                          a replay entry: one-time costs, paid once)
 *   measuring              the paths interleaved, NSAMP calls each; a
 *                          path stops after EARLY when its fastest call
 *                          took LOPSIDED times another's slowest (a capture
 *                          10x slower than NumPy must not run 5 more times
 *                          to prove it), and measuring ends when one path
 *                          is left
 *   decided                the chosen path runs (one call in SAMPLE_EVERY
 *                          timed, keeping its cost current); each
 *                          other path is probed after gaps of G, 2G, 4G,
 *                          ... calls, so a decision made on atypical calls
 *                          is revisited. G is 64 calls, or more when the
 *                          probed path is much slower: a probe costs the
 *                          difference of the two paths, and G keeps that
 *                          under PROBE_SHARE of the calls between probes
 *                          (a 10x slower capture is probed every 450 calls,
 *                          not every 64: 14% of the time spent probing)
 * Only calls of numdyn's path that ran its built code are samples: one that
 * compiled, loaded or waited for kernels, or ran graphs around a pending
 * compile, is set aside (not a step of the schedule either), and once a
 * compile lands the own path is timed again at once, whatever the gap.
 * Each path's cost is the median of its recent timed calls (at most RING),
 * taken interleaved with the other paths' so that load lasting through
 * several calls lands on all of them. Not a low sample: a path whose own
 * time varies -- NumPy's threaded OpenBLAS, whose second thread waits for
 * a core another process holds -- has lucky calls far below its typical
 * one (least squares 20000x10 in a quiet run: NumPy 1.98 ms a call, its
 * second least of five under 0.95 ms, numdyn's one-thread path a steady
 * 1 ms; the second least chose NumPy and the function ran at 0.90x). The
 * median is the typical call, and a spike on two of five calls of a path
 * does not move it. A marginal decision (the two best within MARGIN) waits
 * for RING samples of each path, not NSAMP. Once decided, a timed call
 * that would switch paths (a probe faster than the choice, or the chosen
 * path's calls grown slower) does not switch on samples taken long apart:
 * the paths are measured again, interleaved (re-measures at most every
 * 16, 32, 64... calls; between them such a call switches directly).
 * Switching needs a 5% margin either way (hysteresis): two paths of equal
 * cost must not flip on noise.
 */
#include "cuda.h"
#include "core/npy.h"
#include "floor.h"
#include "backend.h"
#include "guards/guards.h"
#include "toolchain/toolchain.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NSLOT 8
#define NSAMP 5        /* timed calls per path before a decision */
#define RING 9         /* kept per path; a marginal decision waits for this many */
#define MARGIN 1.10    /* the two best paths within 10%: marginal */
#define REGAP_FIRST 16 /* calls before a second re-measure (doubling) */
#define WARM 2
#define FIRST_GAP 64
#define MAX_GAP (1u << 20)
#define EARLY 2
#define LOPSIDED 3.0
#define PROBE_SHARE 0.02
#define SAMPLE_EVERY 8
#define UNSTEADY_MAX 16
#define NPATH 3

enum { MEASURING = NPATH };  /* a slot's mode while it measures */

typedef struct {
    uint64_t key;
    int used, mode;
    uint64_t calls, last_use;
    uint64_t next_probe[NPATH], gap[NPATH]; /* per path not chosen; gap 0:
                              never probed (a path that appeared after the
                              decision is probed at once) */
    uint64_t decided_at;   /* the call that ended measuring; 0: measuring */
    int npath;             /* paths this signature has had: 2, or 3 once
                              the function has captured loops */
    unsigned n[NPATH];     /* samples taken per path (ring position) */
    unsigned base[NPATH];  /* n[p] when the current measurement began: the
                              samples before it are not used */
    double samp[NPATH][RING]; /* the last RING timed calls per path */
    double est[NPATH];     /* median of the recent ones, seconds; < 0: unknown */
    int prev;              /* while measuring again: the decision it may
                              keep; MEASURING for the first measurement */
    uint64_t next_remeasure, regap; /* no re-measure before that call */
    unsigned char kept[NPATH]; /* while measuring again: a path slower
                              than the best by more than MARGIN, not run
                              again -- its estimate stands, its probes go on */
    char desc[120];
    uint64_t pending_at;   /* nd_disk_progress() + 1 when a call ran graphs
                              whose kernels were still compiling; 0: none */
    unsigned unsteady;     /* timed calls set aside for one-time work (at
                              most UNSTEADY_MAX: a program that compiles on
                              every call pays that on every call) */
} slot;

static double test_delay[NPATH];   /* _floor_test_delay */
#define TEST_TIMES 64
static double test_times[NPATH][TEST_TIMES];  /* _floor_test_times */
static int test_ntimes[NPATH];
static unsigned test_next[NPATH];

struct nd_floor {
    slot s[NSLOT];
    uint64_t tick;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

nd_floor *nd_floor_new(void)
{
    nd_floor *f = PyMem_Calloc(1, sizeof *f);
    if (!f) PyErr_NoMemory();
    return f;
}

void nd_floor_free(nd_floor *f) { PyMem_Free(f); }

void nd_floor_reset(nd_floor *f)
{
    if (f) memset(f, 0, sizeof *f);
}

/* ------------------------------------------------------------ signature */

/* A call's key is guards' cost key (fn_programs.h nd_callsig): types, and
 * for arrays dtype, rank, size class and memory order; admission computes
 * it in its pass over the arguments. */

static void describe(char *buf, size_t cap, PyObject *const *args, Py_ssize_t n)
{
    size_t k = 0;
    buf[0] = 0;
    for (Py_ssize_t i = 0; i < n && k + 1 < cap; i++) {
        PyObject *o = args[i];
        int w;
        if (PyArray_Check(o)) {
            PyArrayObject *a = (PyArrayObject *)o;
            w = snprintf(buf + k, cap - k, "%s%s[", i ? ", " : "",
                         PyArray_DESCR(a)->typeobj->tp_name);
            for (int d = 0; d < PyArray_NDIM(a) && w > 0 && k + (size_t)w < cap; d++)
                w += snprintf(buf + k + w, cap - k - (size_t)w, "%s%lld", d ? "," : "",
                              (long long)PyArray_DIM(a, d));
            if (w > 0 && k + (size_t)w < cap) w += snprintf(buf + k + w, cap - k - (size_t)w, "]");
        } else {
            w = snprintf(buf + k, cap - k, "%s%s", i ? ", " : "", Py_TYPE(o)->tp_name);
        }
        if (w < 0) break;
        k += (size_t)w;
    }
    if (k >= cap) memcpy(buf + cap - 4, "...", 4);
}

/* One-time work a call did: kernels compiled or loaded from the disk
 * cache, programs compiled for a new signature, graphs (or captured loops)
 * NumPy ran while their C compiled, compiles that ended while it ran
 * (one it waited for within numdyn.config.compile_budget). Any of it in a
 * call makes the call no sample of the path's warm cost: a call that
 * waited 0.4 s for a compiler, timed, made a 3 ms MLP step look 100x
 * slower than NumPy and sent it to NumPy for hundreds of calls. */
static uint64_t onetime(void)
{
    return (uint64_t)nd_counter_get(ND_CTR_KERNELS_COMPILED) +
           (uint64_t)nd_counter_get(ND_CTR_DISK_CACHE_HITS) +
           (uint64_t)nd_counter_get(ND_CTR_GRAPH_COMPILES) +
           (uint64_t)nd_counter_get(ND_CTR_COMPILING_RUNS) + nd_disk_progress();
}

/* ------------------------------------------------------------ decisions */

static int nsamp(const slot *s, int p)
{
    unsigned k = s->n[p] - s->base[p];
    return k < RING ? (int)k : RING;
}

/* the current measurement's samples of path p (at most RING) into v */
static int recent(const slot *s, int p, double *v)
{
    int k = nsamp(s, p);
    for (int i = 0; i < k; i++) v[i] = s->samp[p][(s->n[p] - 1 - (unsigned)i) % RING];
    return k;
}

/* the k-th least (from 0) of v[0..n), by counting: it runs on timed
 * calls, and a sort's swaps of neighbours compiled to 16-byte stores that
 * the next comparison's loads could not forward from (a few % of a small
 * loop's call, 7163883) */
static double kth(const double *v, int n, int k)
{
    for (int i = 0; i < n; i++) {
        int lt = 0, le = 0;
        for (int j = 0; j < n; j++) {
            lt += v[j] < v[i];
            le += v[j] <= v[i];
        }
        if (lt <= k && k < le) return v[i];
    }
    return v[0];
}

static double median(const slot *s, int p)
{
    double a[RING];
    int n = recent(s, p, a);
    if (!n) return -1;
    return n % 2 ? kth(a, n, n / 2) : 0.5 * (kth(a, n, n / 2 - 1) + kth(a, n, n / 2));
}

/* The first gap before probing path p, not chosen: FIRST_GAP calls, or
 * enough that a probe's extra cost (p's time less the chosen path's) stays
 * under PROBE_SHARE of the time of the calls in between. */
static uint64_t first_gap(const slot *s, int p)
{
    double fast = s->est[s->mode], slow = s->est[p];
    uint64_t g = FIRST_GAP;
    if (fast > 0 && slow > fast) {
        double want = (slow / fast - 1.0) / PROBE_SHARE;
        if (want > (double)MAX_GAP) want = (double)MAX_GAP;
        if (want > (double)g) g = (uint64_t)want + 1;
    }
    return g;
}

static int fastest(const slot *s)
{
    int best = -1;
    for (int p = 0; p < s->npath; p++)
        if (s->est[p] >= 0 && (best < 0 || s->est[p] < s->est[best])) best = p;
    return best;
}

/* whether est says to leave the decision `was` (5% hysteresis) */
static int switches(const slot *s, int was)
{
    int best = fastest(s);
    return best >= 0 && best != was && s->est[best] < 0.95 * s->est[was];
}

/* The fastest measured path; a decided one (was: the mode, or the
 * decision a re-measure may keep) gives way only to one 5% faster
 * (hysteresis). */
static void decide(slot *s, int was)
{
    int best = fastest(s);
    if (best < 0) return;
    if (was == MEASURING || s->est[was] < 0) s->mode = best;
    else s->mode = switches(s, was) ? best : was;
    if (s->mode != was)  /* first decision or a switch: probe on the new costs */
        for (int p = 0; p < s->npath; p++) {
            if (p == s->mode || s->est[p] < 0) continue;
            s->gap[p] = first_gap(s, p);
            s->next_probe[p] = s->calls + s->gap[p];
        }
}

/* the least (sign 1) or most (sign -1) of path p's current samples */
static double extreme(const slot *s, int p, double sign)
{
    double v[RING];
    int n = recent(s, p, v);
    double m = v[0];
    for (int i = 1; i < n; i++) m = sign * v[i] < sign * m ? v[i] : m;
    return m;
}

/* A path is measured no further once every call of it took LOPSIDED times
 * the slowest call of another. Load only adds time, so the slow path's
 * least sample is near its cost and the fast path's most is no less than
 * its own: the order cannot be noise's unless load hit every slow call
 * alone. */
static int out(const slot *s, int p)
{
    if (s->kept[p]) return 1;
    if (nsamp(s, p) < EARLY) return 0;
    double lo = extreme(s, p, 1);
    for (int q = 0; q < s->npath; q++)
        if (q != p && nsamp(s, q) >= EARLY && lo > LOPSIDED * extreme(s, q, -1)) return 1;
    return 0;
}

/* Measuring ends when every path still in the running has NSAMP samples
 * -- RING when the two best medians are within MARGIN of each other: one
 * more call of a path about as fast as the other costs next to nothing,
 * and five samples a side decide a close call on noise -- or one path
 * alone is left in it. */
static int measured(const slot *s)
{
    int left = 0, short_ = 0, full = 1;
    double m1 = -1, m2 = -1;   /* the two least medians in the running */
    for (int p = 0; p < s->npath; p++) {
        if (out(s, p)) continue;
        left++;
        short_ |= nsamp(s, p) < NSAMP;
        full &= nsamp(s, p) >= RING;
        double m = median(s, p);
        if (m1 < 0 || m < m1) { m2 = m1; m1 = m; }
        else if (m2 < 0 || m < m2) m2 = m;
    }
    if (left <= 1) return 1;
    if (short_) return 0;
    return full || m2 >= MARGIN * m1;
}

/* While measuring: the path in the running with the fewest samples
 * (numdyn's first on a tie) */
static int next_to_measure(const slot *s)
{
    int best = -1;
    for (int p = 0; p < s->npath; p++)
        if (!out(s, p) && (best < 0 || nsamp(s, p) < nsamp(s, best))) best = p;
    return best < 0 ? ND_FLOOR_COMPILED : best;
}

/* Measure the paths again, interleaved, keeping the decision until that
 * ends (decided_at then moves to its end). Only the paths that may take
 * the decision run again: the chosen one, the one whose call asked for it
 * (trigger), and any whose estimate is within MARGIN of the best. A
 * slower path keeps its estimate and its own probes (one faster than the
 * choice asks for a re-measure with it as the trigger): every call of it
 * in a re-measure costs its whole excess, and two paths of about equal
 * cost (NumPy's and the original function, for a function whose captured
 * loops do little) ask for a re-measure every 16, 32, 64... calls on noise
 * alone -- Mandelbrot compacting 64x64 ran numdyn's 4x slower path twice
 * each time, 0.92-0.95x NumPy in a quiet run where the floor had chosen
 * NumPy's path. */
static void remeasure(slot *s, int trigger)
{
    double best = -1;
    for (int p = 0; p < s->npath; p++)
        if (s->est[p] >= 0 && (best < 0 || s->est[p] < best)) best = s->est[p];
    s->prev = s->mode;
    s->mode = MEASURING;
    for (int p = 0; p < NPATH; p++) {
        s->kept[p] = p != s->prev && p != trigger && best > 0 && s->est[p] > MARGIN * best;
        if (!s->kept[p]) s->base[p] = s->n[p];
    }
    if (!s->regap) s->regap = REGAP_FIRST;
    s->next_remeasure = s->calls + s->regap;
    if (s->regap < MAX_GAP) s->regap *= 2;
}

static slot *find(nd_floor *f, uint64_t key, int create)
{
    slot *victim = NULL;
    for (int i = 0; i < NSLOT; i++) {
        slot *s = &f->s[i];
        if (s->used && s->key == key) return s;
        if (!victim || !s->used || (victim->used && s->last_use < victim->last_use)) victim = s;
    }
    if (!create) return NULL;
    memset(victim, 0, sizeof *victim);
    victim->used = 1;
    victim->key = key;
    victim->mode = MEASURING;
    victim->prev = MEASURING;
    victim->npath = 2;
    for (int p = 0; p < NPATH; p++) victim->est[p] = -1;
    return victim;
}

static uint64_t sig(PyObject *const *args, Py_ssize_t n)
{
    uint64_t key;
    nd_callsig(args, (size_t)n, NULL, 0, &key);
    return key;
}

void nd_floor_choose(nd_floor *f, uint64_t key, PyObject *const *args, Py_ssize_t n,
                     int original, nd_floor_call *c)
{
    c->f = f;
    c->slot = -1;
    c->watch = -1;
    c->path = ND_FLOOR_COMPILED;
    if (!f || nd_cuda_device_depth > 0) return;  /* numdyn.device("cuda"): the GPU, untimed */
    slot *s = find(f, key, 1);
    if (!s->calls) describe(s->desc, sizeof s->desc, args, n);
    s->calls++;
    s->last_use = ++f->tick;
    if (original) s->npath = NPATH;
    if (s->pending_at) {
        /* its kernels still compile in the background (no compile has
         * ended since a call found them compiling): the function itself
         * runs, not its graphs op by op with NumPy -- for scalar work that
         * is 100x slower than the function -- and the call is no step of
         * the schedule */
        if (nd_disk_progress() + 1 == s->pending_at) {
            s->calls--;
            c->path = ND_FLOOR_NUMPY;
            nd_counter_add(ND_CTR_FLOOR_NUMPY_CALLS, 1);
            return;
        }
        s->pending_at = 0;
        /* a compile landed: the path that waited for it is re-timed now,
         * not a doubling gap later (its earlier calls ran around it) */
        if (s->mode != ND_FLOOR_COMPILED && s->mode != MEASURING &&
            s->next_probe[ND_FLOOR_COMPILED] > s->calls)
            s->next_probe[ND_FLOOR_COMPILED] = s->calls;
    }
    c->watch = (int)(s - f->s);
    c->key = key;
    c->compiling = nd_counter_get(ND_CTR_COMPILING_RUNS);
    if (s->calls <= WARM) return;
    int probe = -1;
    for (int p = 0; p < s->npath && s->mode != MEASURING && probe < 0; p++)
        if (p != s->mode && s->calls >= s->next_probe[p]) probe = p;
    if (s->mode == MEASURING) {
        c->path = next_to_measure(s);
    } else if (probe >= 0) {
        c->path = probe;
        if (!s->gap[probe]) s->gap[probe] = FIRST_GAP;
        s->next_probe[probe] = s->calls + s->gap[probe];
        if (s->gap[probe] < MAX_GAP) s->gap[probe] *= 2;
    } else {
        c->path = s->mode;
        /* the chosen path's cost is followed on one call in SAMPLE_EVERY:
         * timing every call (two clock reads, the estimate's sort) was a
         * third of a warm call of a small function */
        if (s->calls % SAMPLE_EVERY) {
            if (c->path != ND_FLOOR_COMPILED) nd_counter_add(ND_CTR_FLOOR_NUMPY_CALLS, 1);
            return;
        }
    }
    c->slot = (int)(s - f->s);
    c->key = key;
    c->compiling = nd_counter_get(ND_CTR_COMPILING_RUNS);
    c->onetime = c->path == ND_FLOOR_COMPILED ? onetime() : 0;
    c->t0 = now_ns();
}

void nd_floor_done(nd_floor_call *c, int ok)
{
    if (c->watch >= 0 && c->path == ND_FLOOR_COMPILED &&
        nd_counter_get(ND_CTR_COMPILING_RUNS) != c->compiling) {
        slot *w = &c->f->s[c->watch];
        /* only while a compile still runs: one that ended within this
         * call (a later wait of the call saw it end) moves the progress no
         * more, and the slot would run with NumPy on every call after */
        if (w->used && w->key == c->key) {
            uint64_t at = nd_disk_progress() + 1;  /* before: a compile ending between counts */
            w->pending_at = nd_disk_running() ? at : 0;
        }
    }
    if (c->slot < 0) return;
    double dt = (double)(now_ns() - c->t0) * 1e-9;
    if (c->path != ND_FLOOR_COMPILED) nd_counter_add(ND_CTR_FLOOR_NUMPY_CALLS, 1);
    slot *s = &c->f->s[c->slot];
    if (!ok || !s->used || s->key != c->key) return;
    /* NumPy ran graphs of it while their kernels compiled: not numdyn's
     * cost once they are built (and not yet a warm call) */
    if (nd_counter_get(ND_CTR_COMPILING_RUNS) != c->compiling) {
        if (s->calls > WARM) s->calls--;
        return;
    }
    /* a compiled call that compiled, loaded or waited for kernels: set
     * aside, and the path is timed again on the next call (a probe that
     * found new work is retried, not put off by a doubled gap) */
    if (c->path == ND_FLOOR_COMPILED && s->unsteady < UNSTEADY_MAX && onetime() != c->onetime) {
        s->unsteady++;
        if (s->calls > WARM) s->calls--;
        if (s->mode != ND_FLOOR_COMPILED && s->mode != MEASURING)
            s->next_probe[ND_FLOOR_COMPILED] = s->calls + 1;
        return;
    }
    int p = c->path;
    if (test_ntimes[p]) dt = test_times[p][test_next[p]++ % (unsigned)test_ntimes[p]];
    dt += test_delay[p];
    s->samp[p][s->n[p] % RING] = dt;
    s->n[p]++;
    int was = s->mode, ended = was == MEASURING;
    if (ended) {
        if (!measured(s)) return;
        s->decided_at = s->calls;
        was = s->prev;
    }
    if (ended)            /* a measurement ended: every path's estimate */
        for (int q = 0; q < s->npath; q++) {
            if (nsamp(s, q) && !s->kept[q]) s->est[q] = median(s, q);
            s->kept[q] = 0;
        }
    else                  /* decided: only p's samples changed */
        s->est[p] = median(s, p);
    /* decided: a probe faster than the choice, or estimates that would
     * switch paths, compare samples taken far apart (a probe's against the
     * chosen path's 1 in SAMPLE_EVERY, the probed path's from many calls
     * back): the paths are measured again side by side instead, unless
     * that was done very recently */
    if (s->mode != MEASURING && s->calls >= s->next_remeasure &&
        ((p != s->mode && dt < 0.95 * s->est[s->mode]) || switches(s, s->mode))) {
        remeasure(s, p);
        return;
    }
    decide(s, was);
    s->prev = MEASURING;
}

/* ------------------------------------------------------------ reporting */

static PyObject *est_or_none(double t)
{
    return t < 0 ? Py_NewRef(Py_None) : PyFloat_FromDouble(t);
}

static PyObject *slot_dict(const slot *s)
{
    static const char *const names[NPATH] = {"numdyn", "numpy", "original"};
    /* measuring again, the decision stands until the measurement ends */
    int m = s->mode == MEASURING ? s->prev : s->mode;
    const char *path = m == MEASURING ? "measuring" : names[m];
    uint64_t probe = 0;   /* the next call that runs a path not chosen */
    for (int p = 0; p < s->npath && s->mode != MEASURING; p++)
        if (p != m && (!probe || s->next_probe[p] < probe)) probe = s->next_probe[p];
    PyObject *t[NPATH];
    for (int p = 0; p < NPATH; p++) t[p] = est_or_none(s->est[p]);
    /* each path's next probe: 0 for the chosen one, while measuring, and
     * for a path this signature does not have */
    unsigned long long np_[NPATH];
    for (int p = 0; p < NPATH; p++)
        np_[p] = s->mode == MEASURING || p == s->mode || p >= s->npath ? 0 : s->next_probe[p];
    PyObject *pr = Py_BuildValue("{s:K,s:K,s:K}", names[0], np_[0], names[1], np_[1], names[2], np_[2]);
    PyObject *d = t[0] && t[1] && t[2] && pr
        ? Py_BuildValue("{s:s,s:s,s:K,s:O,s:O,s:O,s:I,s:I,s:I,s:K,s:K,s:O,s:O}", "signature", s->desc,
                        "path", path, "calls", (unsigned long long)s->calls,
                        "numdyn_s", t[ND_FLOOR_COMPILED], "numpy_s", t[ND_FLOOR_NUMPY],
                        "original_s", t[ND_FLOOR_ORIGINAL],
                        "numdyn_samples", s->n[ND_FLOOR_COMPILED],
                        "numpy_samples", s->n[ND_FLOOR_NUMPY],
                        "original_samples", s->n[ND_FLOOR_ORIGINAL],
                        "decided_at", (unsigned long long)s->decided_at,
                        "next_probe", (unsigned long long)probe, "probes", pr,
                        "remeasuring", m != s->mode ? Py_True : Py_False)
        : NULL;
    for (int p = 0; p < NPATH; p++) Py_XDECREF(t[p]);
    Py_XDECREF(pr);
    return d;
}

PyObject *nd_floor_info(nd_floor *f)
{
    PyObject *l = PyList_New(0);
    if (!l || !f) return l;
    for (int i = 0; i < NSLOT; i++) {
        if (!f->s[i].used) continue;
        PyObject *d = slot_dict(&f->s[i]);
        if (!d || PyList_Append(l, d) < 0) { Py_XDECREF(d); Py_DECREF(l); return NULL; }
        Py_DECREF(d);
    }
    return l;
}

PyObject *nd_floor_info_for(nd_floor *f, PyObject *const *args, Py_ssize_t n)
{
    slot *s = f ? find(f, sig(args, n), 0) : NULL;
    return s ? slot_dict(s) : Py_NewRef(Py_None);
}

/* ------------------------------------------------------------ test hook */

static PyObject *py_test_delay(PyObject *self, PyObject *args)
{
    (void)self;
    double d[NPATH] = {0};
    if (!PyArg_ParseTuple(args, "ddd", &d[0], &d[1], &d[2])) return NULL;
    for (int p = 0; p < NPATH; p++)
        if (!(d[p] >= 0 && d[p] <= 1)) {
            PyErr_SetString(PyExc_ValueError, "delays are seconds in [0, 1]");
            return NULL;
        }
    memcpy(test_delay, d, sizeof d);
    Py_RETURN_NONE;
}

/* _floor_test_times(numdyn, numpy, original): sequences of seconds; a
 * timed call of a path whose sequence is not empty counts as the next
 * value of it (cyclically) instead of the clock's reading */
static PyObject *py_test_times(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *seq[NPATH];
    double v[NPATH][TEST_TIMES];
    int nv[NPATH];
    if (!PyArg_ParseTuple(args, "OOO", &seq[0], &seq[1], &seq[2])) return NULL;
    for (int p = 0; p < NPATH; p++) {
        PyObject *f = PySequence_Fast(seq[p], "times are sequences of seconds");
        if (!f) return NULL;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
        if (n > TEST_TIMES) {
            Py_DECREF(f);
            return PyErr_Format(PyExc_ValueError, "at most %d times a path", TEST_TIMES);
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            v[p][i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(f, i));
            if (!(v[p][i] >= 0 && v[p][i] <= 1)) {
                Py_DECREF(f);
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "times are seconds in [0, 1]");
                return NULL;
            }
        }
        nv[p] = (int)n;
        Py_DECREF(f);
    }
    memcpy(test_times, v, sizeof v);
    memcpy(test_ntimes, nv, sizeof nv);
    memset(test_next, 0, sizeof test_next);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"_floor_test_times", py_test_times, METH_VARARGS,
     "_floor_test_times(numdyn, numpy, original): sequences of seconds; each timed call of a path "
     "with a non-empty sequence counts as its next value, cyclically, instead of the clock's "
     "(tests: decisions that do not depend on this machine's load). Empty sequences: the clock."},
    {"_floor_test_delay", py_test_delay, METH_VARARGS,
     "_floor_test_delay(numdyn_s, numpy_s, original_s): add these seconds to each timed call "
     "of the speed floor's paths (tests: a path slower than it is on this machine)."},
    {NULL, NULL, 0, NULL},
};

int nd_floor_init(PyObject *module) { return PyModule_AddFunctions(module, methods); }
