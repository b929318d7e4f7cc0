/* runtime_par.c -- per kernel, its OpenMP team or the calling thread alone,
 * whichever its timed runs show faster (par.h has the why and the
 * schedule). State lives in the kernel (nd_kernel.par) and is touched with
 * the GIL held only.
 */
#include "par.h"
#include "core/counters.h"
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

static void decide(nd_parstat *s)
{
    int was = s->mode;
    double t = s->est[W_TEAM], a = s->est[W_ALONE];
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
    nd_kernel *k;   /* NULL: none open */
    int alone;
    int64_t tot;
    uint64_t t0, t1;  /* span start, kernel end (0: still running) */
} span;
static _Thread_local span open_span;

/* ------------------------------------------------------------ explain's log */

typedef struct {
    nd_kernel *k;
    uint64_t hash;
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
    nd_parstat *s = &c->k->par;
    int i = 0;
    while (i < nlog && logv[i].k != c->k) i++;
    if (i == nlog) {
        if (nlog == LOGMAX) return;
        memset(&logv[i], 0, sizeof logv[i]);
        logv[i].k = c->k;
        logv[i].hash = c->k->hash;
        nlog++;
    }
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
    nd_parstat *s = &c->k->par;
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
        decide(s);
    }
    log_run(c);
}

void nd_par_close(int ok)
{
    span c = open_span;
    open_span.k = NULL;
    if (c.k && ok) sample(&c);
}

int nd_par_begin(nd_kernel *k, int64_t tot, int64_t work)
{
    nd_par_close(1);
    if (work < ND_PAR_WORK || work >= ALONE_WORK || tot <= 0 || !on()) return 0;
    nd_parstat *s = &k->par;
    if (!s->tot || tot > s->tot * RESIZE || tot * RESIZE < s->tot) {
        memset(s, 0, sizeof *s);
        s->tot = tot;
    }
    s->runs++;
    if (s->runs <= WARM) return 0;
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
    if (alone) nd_counter_add(ND_CTR_KERNEL_RUNS_ALONE, 1);
    open_span.k = k;
    open_span.alone = alone;
    open_span.tot = tot;
    open_span.t1 = 0;
    open_span.t0 = now_ns();
    return alone ? ND_RUN_ALONE : 0;
}

void nd_par_ran(void)
{
    if (open_span.k && !open_span.t1) open_span.t1 = now_ns();
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
        int64_t tot = e->k->par.tot;
        const char *mode = e->mode == TEAM ? "team" : e->mode == ALONE ? "alone" : "measuring";
        PyObject *t = est_obj(e->est[0], tot), *a = est_obj(e->est[1], tot);
        PyObject *kt = est_obj(e->kteam, tot);
        PyObject *d = t && a && kt
            ? Py_BuildValue("{s:K,s:s,s:I,s:I,s:O,s:O,s:O,s:L}",
                            "kernel", (unsigned long long)e->hash, "choice", mode,
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

static PyMethodDef methods[] = {
    {"_adaptive_threads", py_adaptive, METH_VARARGS,
     "_adaptive_threads([on]) -> the setting before (numdyn.config.adaptive_threads)."},
    {"_threads_test_delay", py_test_delay, METH_VARARGS,
     "_threads_test_delay(team_s, alone_s): add these seconds to each timed kernel run "
     "with the team / alone (tests: another pool holding the cores)."},
    {"_threads_log", py_log, METH_VARARGS,
     "_threads_log(True) starts recording the team/alone choice of the kernels run; "
     "_threads_log(False) stops and returns one dict per kernel."},
    {NULL, NULL, 0, NULL},
};

int nd_par_init(PyObject *module)
{
    return PyModule_AddFunctions(module, methods);
}
