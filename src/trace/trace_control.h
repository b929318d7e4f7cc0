/* trace_control.h -- the control surface of compiled functions
 * (trace_control.c). Tracer-internal: included by src/trace_*.c only.
 *
 * Before a top-level call of a compiled function is replayed or captured,
 * nd__ctl_admit decides whether numdyn may handle it:
 *   - off:   numdyn.config.enabled is False (NUMDYN_DISABLE=1), or the
 *            stance is "force_eager" -> the plain function runs;
 *   - seen:  the call's signature (guards/fn_programs.h) has a program ->
 *            it runs compiled (replay, or capture with cached kernels);
 *   - new:   a recompile when the function has programs already: its
 *            reason is logged (NUMDYN_LOGS=recompiles), given to
 *            guard_fail_fn, and raises numdyn.RecompileError under
 *            config.error_on_recompile or the "fail_on_recompile" stance;
 *            under "eager_on_recompile", in frozen mode (numdyn.run), or
 *            past cache_size_limit (one UserWarning naming the function
 *            and the reason) the plain function runs instead;
 *            otherwise it compiles: nd__ctl_compiled then records its
 *            compile time, counts it and calls guard_export_fn.
 */
#ifndef ND_TRACE_CONTROL_H
#define ND_TRACE_CONTROL_H
#include "trace_internal.h"
#include "guards/guards.h"

typedef struct nd_ctl {
    nd_programs progs;
    PyObject *fn;               /* borrowed: the compiled function's callable */
    PyObject *guard_fail_fn;    /* owned or NULL */
    PyObject *guard_export_fn;  /* owned or NULL */
    PyObject *names;            /* owned: positional parameter names, or NULL */
    long limit;                 /* options["cache_size_limit"], or -1: the config's */
    int spec_all;               /* compile(dynamic=False) */
    int warned;                 /* the cache_size_limit warning was given */
    int dbg_serial;             /* NUMDYN_DEBUG_DIR: which function of its name (1, 2..), 0 unset */
    PyObject *report;           /* owned or NULL (not yet): nd__ctl_qualname's name */
} nd_ctl;

/* Process-wide switches (numdyn.config, set_stance), pushed from Python. */
extern int nd__ctl_enabled;
enum { ND_STANCE_DEFAULT, ND_STANCE_FORCE_EAGER, ND_STANCE_EAGER_ON_RECOMPILE,
       ND_STANCE_FAIL_ON_RECOMPILE };
extern int nd__ctl_stance;
/* numdyn.run(): only what is compiled already runs compiled (per thread) */
extern _Thread_local int nd__tls_frozen;
/* numdyn.error_on_graph_break(flag) in force on this thread: 1 graph breaks
 * raise (as under fullgraph=True), 0 they do not, -1 no such region */
extern _Thread_local int nd__tls_break_errors;

/* NULL + exception on error. options: compile(options=...) or NULL. */
nd_ctl *nd__ctl_new(PyObject *fn, PyObject *options, PyObject *dynamic,
                    PyObject *guard_fail_fn, PyObject *guard_export_fn);
void nd__ctl_free(nd_ctl *c);
void nd__ctl_reset(nd_ctl *c);   /* forget the programs (numdyn.reset) */
int nd__ctl_traverse(nd_ctl *c, visitproc visit, void *arg);

enum { ND_ADMIT_EAGER = 0, ND_ADMIT_RUN = 1, ND_ADMIT_COMPILE = 2 };
/* What to do with this call (see above). *idx: the program's index;
 * *cost: the call's cost key for the speed floor (guards' nd_callsig:
 * the one pass over the arguments signs the call for both), set when the
 * call is numdyn's (ND_ADMIT_RUN, ND_ADMIT_COMPILE). ND_ADMIT_*, or -1
 * with an exception. */
int nd__ctl_admit(nd_ctl *c, PyObject *const *args, size_t nargsf, PyObject *kwnames,
                  Py_ssize_t *idx, uint64_t *cost);
/* The call that made program idx finished (ok: without an exception) after
 * `seconds`. 0, or -1 with an exception (a guard_export_fn raised). */
int nd__ctl_compiled(nd_ctl *c, Py_ssize_t idx, double seconds, int ok);
/* Around the call that compiles program idx under NUMDYN_DEBUG_DIR: name
 * the native backend's debug directory for it (nd_debug_tag,
 * "<qualname>_<idx>") and write its repro.py (numdyn._debug_repro).
 * Returns the previous tag, to restore after the call. Never fails.
 * args NULL: a later call of program idx -- only the tag is set. */
const char *nd__ctl_debug_begin(nd_ctl *c, Py_ssize_t idx, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames);
/* explain's out_guards for a call like this one: the guards of its
 * program (a list of str; empty when it has none). New ref. */
/* the name the compiled function's compile times, recompiles and profile
 * are reported under: its __qualname__ (its repr when it has none), with
 * its definition's "(file:line)" when another function of that qualname
 * was reported first; new ref */
PyObject *nd__ctl_qualname(nd_ctl *c);
PyObject *nd__ctl_out_guards(nd_ctl *c, PyObject *const *args, Py_ssize_t n);
/* x.shape of a traced array whose caller array is `caller` (or NULL):
 * dims marked dynamic are numdyn.DynamicDim, which raises
 * ConstraintViolationError where code makes them constant. New ref. */
PyObject *nd__ctl_shape(PyObject *caller, int ndim, const npy_intp *shape);
/* The one place a captured loop (loop_run.c) gets its kernel: the disk
 * cache's nd_disk_load_or_build, except in frozen mode (numdyn.run), where
 * only a kernel the disk cache holds loads -- NULL with no exception when it
 * holds none (the loop then runs in Python, and its signature is not
 * remembered, so a later unfrozen call compiles it). */
void *nd__ctl_loop_kernel(const char *src, size_t len, uint64_t key, const char *const *syms,
                          int nsyms, int *compiled);
/* Seconds on a monotonic clock. */
double nd__ctl_now(void);
int nd__ctl_init(PyObject *module);
/* numdyn.ConstraintViolationError (borrowed) */
PyObject *nd__ctl_constraint_error(void);
#endif
