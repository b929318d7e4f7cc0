/* runtime_par.c -- per kernel, its OpenMP team or the calling thread alone,
 * whichever its timed runs show faster (par.h has the why and the
 * schedule). State lives in the kernel (nd_kernel.par) and is touched with
 * the GIL held only.
 */
#define _GNU_SOURCE  /* dl_iterate_phdr: finding the loaded OpenBLAS */
#include "par.h"
#include "core/counters.h"
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WARM 1
#define EARLY 2
#define LOPSIDED 1.5     /* a way this much slower on EARLY runs each: decided */
#define CLEAR 4.0         /* ... this much slower on one run each: decided */
#define ALONE_WORK (1ll << 26) /* work (elements x cost, ~1 ns each alone) from which a
                                 kernel always runs with its team: a run alone would
                                 cost up to cores x its time, tens of ms, where a wait
                                 for a core costs a few ms */
#define FIRST_GAP 32
#define MAX_GAP 1024        /* runs: a choice made under a passing load is revisited */
#define PROBE_SHARE 0.02
#define RESIZE 4            /* elements moved this many times: measure again */
#define BLAS_COST 1.5       /* a product runs on one thread only when that is this much
                               faster: OpenBLAS's one-thread and threaded paths round
                               differently (NumPy's own results move so with
                               OPENBLAS_NUM_THREADS), so a quiet machine keeps NumPy's
                               bits and only the stalls of a loaded one switch */

enum { MEASURING = 0, TEAM = 1, ALONE = 2 };
enum { W_TEAM = 0, W_ALONE = 1 };  /* sample rows */

static int enabled = -1;
/* test hook (_threads_test_delay): seconds added to each timed run of a
 * way, standing in for another pool holding the cores */
static double test_delay[2];

static int on(void)
{
    if (enabled < 0) {
        const char *e = getenv("NUMDYN_ADAPTIVE_THREADS");
        enabled = !(e && strcmp(e, "0") == 0);
    }
    return enabled;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int nsamp(const nd_parstat *s, int w)
{
    return s->n[w] < ND_PAR_NSAMP ? (int)s->n[w] : ND_PAR_NSAMP;
}

/* second least of a way's samples (the least flatters a way whose time
 * varies; load only ever adds time, so low samples are the truest) */
static double low(const nd_parstat *s, int w)
{
    int n = nsamp(s, w);
    double a[ND_PAR_NSAMP];
    memcpy(a, s->samp[w], sizeof(double) * (size_t)n);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && a[j] < a[j - 1]; j--) {
            double t = a[j]; a[j] = a[j - 1]; a[j - 1] = t;
        }
    return a[n > 1 ? 1 : 0];
}

static double least(const nd_parstat *s, int w)
{
    double m = s->samp[w][0];
    for (int i = 1; i < nsamp(s, w); i++) m = s->samp[w][i] < m ? s->samp[w][i] : m;
    return m;
}

static double most(const nd_parstat *s, int w)
{
    double m = s->samp[w][0];
    for (int i = 1; i < nsamp(s, w); i++) m = s->samp[w][i] > m ? s->samp[w][i] : m;
    return m;
}

static void set_gap(nd_parstat *s)
{
    double fast = s->est[s->mode == TEAM ? W_TEAM : W_ALONE];
    double slow = s->est[s->mode == TEAM ? W_ALONE : W_TEAM];
    uint64_t g = FIRST_GAP;
    if (fast > 0 && slow > fast) {
        double want = (slow / fast - 1.0) / PROBE_SHARE;
        if (want > (double)MAX_GAP) want = (double)MAX_GAP;
        if (want > (double)g) g = (uint64_t)want + 1;
    }
    s->gap = g;
    s->next_probe = s->runs + g;
}

/* cost: what alone's time is multiplied by in the comparison (BLAS_COST
 * for a product, whose one-thread values differ in the last bits) */
static void decide(nd_parstat *s, double cost)
{
    int was = s->mode;
    double t = s->est[W_TEAM], a = s->est[W_ALONE] * cost;
    if (a <= 0) {
        s->mode = TEAM;            /* alone not measured (not tried) */
    } else if (was == TEAM) {
        if (a < 0.95 * t) s->mode = ALONE;
    } else if (was == ALONE) {
        if (t < 0.95 * a) s->mode = TEAM;
    } else {
        s->mode = a < t ? ALONE : TEAM;
    }
    if (s->mode != was) set_gap(s);
}

/* the open span (par.h): one per thread, as a program run is */
typedef struct {
    nd_parstat *s;  /* NULL: none open */
    uint64_t hash;  /* the kernel's; 0 for a BLAS step */
    int blas;       /* a BLAS step's span */
    int alone;
    int blas_was;   /* a BLAS step run on one thread: the count to restore (0: none) */
    int64_t tot;
    uint64_t t0, t1;  /* span start, kernel end (0: still running) */
} span;
static _Thread_local span open_span;

/* ------------------------------------------------------------ explain's log */

typedef struct {
    nd_parstat *s;
    uint64_t hash;
    int64_t tot;
    int blas;
    unsigned team_runs, alone_runs;
    double est[2], kteam;
    int mode;
} logent;

#define LOGMAX 256
static logent logv[LOGMAX];
static int nlog = -1;   /* -1: not recording */

static void log_run(const span *c)
{
    if (nlog < 0) return;
    nd_parstat *s = c->s;
    int i = 0;
    while (i < nlog && logv[i].s != c->s) i++;
    if (i == nlog) {
        if (nlog == LOGMAX) return;
        memset(&logv[i], 0, sizeof logv[i]);
        logv[i].s = c->s;
        logv[i].hash = c->hash;
        logv[i].blas = c->blas;
        nlog++;
    }
    logv[i].tot = s->tot;
    if (c->alone) logv[i].alone_runs++;
    else logv[i].team_runs++;
    logv[i].est[0] = s->est[0];
    logv[i].est[1] = s->est[1];
    logv[i].mode = s->mode;
    logv[i].kteam = s->kteam;
}

static void sample(const span *c)
{
    int w = c->alone ? W_ALONE : W_TEAM;
    if (test_delay[w] > 0) {
        double d = test_delay[w];
        struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
        nanosleep(&ts, NULL);
    }
    double dt = (double)(now_ns() - c->t0) * 1e-9 / (double)c->tot;
    nd_parstat *s = c->s;
    /* measuring began again for another size while this span was open */
    if (c->tot > s->tot * RESIZE || c->tot * RESIZE < s->tot) return;
    s->samp[w][s->n[w] % ND_PAR_NSAMP] = dt;
    s->n[w]++;
    if (!c->alone && c->t1) {
        double kt = (double)(c->t1 - c->t0) * 1e-9 / (double)c->tot;
        if (!s->kteam || kt < s->kteam) s->kteam = kt;
    }
    int done = 1;
    if (s->mode == MEASURING) {
        double f = s->n[W_TEAM] >= EARLY && s->n[W_ALONE] >= EARLY ? LOPSIDED : CLEAR;
        int lop = s->n[W_TEAM] && s->n[W_ALONE] &&
                  (least(s, W_TEAM) > f * most(s, W_ALONE) ||
                   least(s, W_ALONE) > f * most(s, W_TEAM));
        done = lop || (s->n[W_TEAM] >= ND_PAR_NSAMP && s->n[W_ALONE] >= ND_PAR_NSAMP);
    }
    if (done) {
        for (int q = 0; q < 2; q++) if (s->n[q]) s->est[q] = low(s, q);
        decide(s, c->blas ? BLAS_COST : 1.0);
    }
    log_run(c);
}

void nd_par_close(int ok)
{
    span c = open_span;
    open_span.s = NULL;
    if (c.blas_was) nd_par_blas_ran();
    if (c.s && ok) sample(&c);
}

/* the way the next run of s takes (1: alone), its run counted; -1: untimed
 * (the first runs after measuring began) */
static int choose(nd_parstat *s, int64_t tot)
{
    if (!s->tot || tot > s->tot * RESIZE || tot * RESIZE < s->tot) {
        memset(s, 0, sizeof *s);
        s->tot = tot;
    }
    s->runs++;
    if (s->runs <= WARM) return -1;
    int alone;
    if (s->mode == MEASURING) {
        /* the two in turns, the team first */
        alone = s->n[W_ALONE] < s->n[W_TEAM];
    } else if (s->runs >= s->next_probe) {
        alone = s->mode == TEAM;
        s->next_probe = s->runs + s->gap;
        if (s->gap < MAX_GAP) s->gap *= 2;
    } else {
        alone = s->mode == ALONE;
    }
    return alone;
}

static void span_open(nd_parstat *s, uint64_t hash, int blas, int alone, int64_t tot)
{
    open_span.s = s;
    open_span.hash = hash;
    open_span.blas = blas;
    open_span.alone = alone;
    open_span.blas_was = 0;
    open_span.tot = tot;
    open_span.t1 = 0;
    open_span.t0 = now_ns();
}

int nd_par_begin(nd_kernel *k, int64_t tot, int64_t work)
{
    nd_par_close(1);
    if (work < ND_PAR_WORK || work >= ALONE_WORK || tot <= 0 || !on()) return 0;
    int alone = choose(&k->par, tot);
    if (alone < 0) return 0;
    if (alone) nd_counter_add(ND_CTR_KERNEL_RUNS_ALONE, 1);
    span_open(&k->par, k->hash, 0, alone, tot);
    return alone ? ND_RUN_ALONE : 0;
}

void nd_par_ran(void)
{
    if (open_span.s && !open_span.t1) open_span.t1 = now_ns();
}

/* ------------------------------------------------------------ BLAS steps */

/* OpenBLAS's thread count, found by symbol in the loaded library (NumPy
 * loads it privately: RTLD_LOCAL, a name prefix such as scipy_openblas
 * and a 64 suffix for its ILP64 build). NULL: no OpenBLAS loaded. */
typedef int (*get_fn)(void);
typedef void (*set_fn)(int);
static get_fn blas_get;
static set_fn blas_set;
static int blas_looked;

/* The machine is loaded: the 1-minute load average (runnable threads, the
 * kernel's count) is at least twice the cores this process may run on.
 * This process alone puts at most 2 x cores - 1 threads there (the caller,
 * OpenBLAS's workers, the OpenMP team's), so the verdict is never its own
 * doing, and no thread of a second pool then finds an idle core: each
 * threaded product waits for one and leaves its worker spinning ~0.1 s on
 * it (2-layer MLP f32 value_and_grad at load 12 on 2 cores: 43 ms wall,
 * 7.7 ms CPU per call with the measured choice, 28 ms and 3.9 ms with every
 * product on one thread -- timed spans at that load are mostly the
 * scheduler's, and one a way won by noise kept OpenBLAS's worker spinning
 * through every call). libgomp's OMP_DYNAMIC sizes teams from the load
 * average the same way. Read at most every LOAD_EVERY_NS. */
#define LOAD_EVERY_NS 500000000ull
static double test_load = -1;   /* _threads_test_load: >= 0 stands in for the reading */

static int machine_loaded(void)
{
    static uint64_t at;
    static int loaded, ncpu;
    if (!ncpu) {
        cpu_set_t set;
        ncpu = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
        if (ncpu <= 0) ncpu = 1;
    }
    if (test_load >= 0) return test_load >= 2.0 * ncpu;
    uint64_t t = now_ns();
    if (at && t - at < LOAD_EVERY_NS) return loaded;
    at = t;
    double l;
    loaded = getloadavg(&l, 1) == 1 && l >= 2.0 * ncpu;
    return loaded;
}

static const char *const blas_names[][2] = {
    {"scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"},
    {"scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"},
    {"openblas_get_num_threads64_", "openblas_set_num_threads64_"},
    {"openblas_get_num_threads", "openblas_set_num_threads"},
};

static int find_blas(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    const char *name = info->dlpi_name;
    if (!name || !strstr(name, "openblas")) return 0;
    void *h = dlopen(name, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) return 0;
    for (size_t i = 0; i < sizeof blas_names / sizeof blas_names[0]; i++) {
        void *g = dlsym(h, blas_names[i][0]), *s = dlsym(h, blas_names[i][1]);
        if (g && s) {
            blas_get = (get_fn)g;  /* the handle stays open: the library stays loaded */
            blas_set = (set_fn)s;
            return 1;
        }
    }
    dlclose(h);
    return 0;
}

int nd_par_blas_begin(nd_parstat *s, int64_t mnk)
{
    nd_par_close(1);
    if (mnk <= 0 || !on()) return 0;
    if (!blas_looked) {
        blas_looked = 1;
        dl_iterate_phdr(find_blas, NULL);
    }
    if (!blas_get) return 0;
    int was = blas_get();
    if (was <= 1) return 0;  /* one thread already (the user's limit): nothing to choose */
    if (machine_loaded()) {
        /* one thread, untimed: what was measured stays for when the load drops */
        nd_counter_add(ND_CTR_BLAS_RUNS_ONE_THREAD, 1);
        blas_set(1);
        open_span.s = NULL;
        open_span.blas_was = was;
        return 1;
    }
    int alone = choose(s, mnk);
    if (alone < 0) return 0;
    if (alone) {
        nd_counter_add(ND_CTR_BLAS_RUNS_ONE_THREAD, 1);
        blas_set(1);
    }
    span_open(s, 0, 1, alone, mnk);
    open_span.blas_was = alone ? was : 0;
    return 1;
}

void nd_par_blas_ran(void)
{
    if (open_span.blas_was) {
        blas_set(open_span.blas_was);
        open_span.blas_was = 0;
    }
    nd_par_ran();
}

int nd_par_blas_threads(void)
{
    if (!blas_looked) {
        blas_looked = 1;
        dl_iterate_phdr(find_blas, NULL);
    }
    return blas_get ? blas_get() : -1;
}

/* ------------------------------------------------------------ Python */

static PyObject *py_adaptive(PyObject *self, PyObject *args)
{
    (void)self;
    int v = -1;
    if (!PyArg_ParseTuple(args, "|p", &v)) return NULL;
    int was = on();
    if (v >= 0) enabled = v;
    return PyBool_FromLong(was);
}

static PyObject *py_test_delay(PyObject *self, PyObject *args)
{
    (void)self;
    double team = 0, alone = 0;
    if (!PyArg_ParseTuple(args, "dd", &team, &alone)) return NULL;
    if (team < 0 || alone < 0 || team > 1 || alone > 1) {
        PyErr_SetString(PyExc_ValueError, "delays are seconds in [0, 1]");
        return NULL;
    }
    test_delay[W_TEAM] = team;
    test_delay[W_ALONE] = alone;
    Py_RETURN_NONE;
}

static PyObject *py_test_load(PyObject *self, PyObject *args)
{
    (void)self;
    double l = -1;
    if (!PyArg_ParseTuple(args, "d", &l)) return NULL;
    test_load = l < 0 ? -1 : l;
    Py_RETURN_NONE;
}

static PyObject *est_obj(double v, int64_t tot)
{
    return v > 0 ? PyFloat_FromDouble(v * (double)tot) : Py_NewRef(Py_None);
}

/* _threads_log(True): start recording (cleared); _threads_log(False): stop
 * and return what ran since, one dict per kernel */
static PyObject *py_log(PyObject *self, PyObject *args)
{
    (void)self;
    int start = 0;
    if (!PyArg_ParseTuple(args, "p", &start)) return NULL;
    if (start) {
        nlog = 0;
        Py_RETURN_NONE;
    }
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < (nlog > 0 ? nlog : 0); i++) {
        logent *e = &logv[i];
        int64_t tot = e->tot;
        const char *mode = e->mode == TEAM ? "team" : e->mode == ALONE ? "alone" : "measuring";
        PyObject *t = est_obj(e->est[0], tot), *a = est_obj(e->est[1], tot);
        PyObject *kt = est_obj(e->kteam, tot);
        PyObject *d = t && a && kt
            ? Py_BuildValue("{s:K,s:s,s:s,s:I,s:I,s:O,s:O,s:O,s:L}",
                            "kernel", (unsigned long long)e->hash,
                            "kind", e->blas ? "blas" : "kernel", "choice", mode,
                            "team_runs", e->team_runs, "alone_runs", e->alone_runs,
                            "team_s", t, "alone_s", a, "team_kernel_s", kt, "elements", (long long)tot)
            : NULL;
        Py_XDECREF(t);
        Py_XDECREF(a);
        Py_XDECREF(kt);
        if (!d || PyList_Append(l, d) < 0) Py_CLEAR(l);
        Py_XDECREF(d);
    }
    nlog = -1;
    return l;
}

static PyObject *py_blas_threads(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    int n = nd_par_blas_threads();
    return n < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(n);
}

static PyMethodDef methods[] = {
    {"_blas_threads", py_blas_threads, METH_NOARGS,
     "_blas_threads() -> the loaded OpenBLAS's thread count (None: no OpenBLAS found)."},
    {"_adaptive_threads", py_adaptive, METH_VARARGS,
     "_adaptive_threads([on]) -> the setting before (numdyn.config.adaptive_threads)."},
    {"_threads_test_delay", py_test_delay, METH_VARARGS,
     "_threads_test_delay(team_s, alone_s): add these seconds to each timed kernel run "
     "with the team / alone (tests: another pool holding the cores)."},
    {"_threads_test_load", py_test_load, METH_VARARGS,
     "_threads_test_load(load): the 1-minute load average BLAS steps see (tests; "
     "negative: the machine's own again)."},
    {"_threads_log", py_log, METH_VARARGS,
     "_threads_log(True) starts recording the team/alone choice of the kernels and "
     "BLAS steps run; "
     "_threads_log(False) stops and returns one dict per kernel."},
    {NULL, NULL, 0, NULL},
};

/* A process forked after kernels ran with the OpenMP team (multiprocessing's
 * default start method on Linux) inherits libgomp's pool of threads that do
 * not exist in it: its first parallel region would wait for them forever.
 * The child runs every kernel alone (PyTorch does the same); the parent is
 * unchanged. */
static volatile int forked_child;

static void at_fork_child(void) { forked_child = 1; }

int nd_par_forked(void) { return forked_child; }

int nd_par_init(PyObject *module)
{
    if (pthread_atfork(NULL, NULL, at_fork_child) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: pthread_atfork failed");
        return -1;
    }
    return PyModule_AddFunctions(module, methods);
}
