/* fn_guards.h -- the guards of one compiled function's cache (fn_guards.c):
 * what a replayed call must still find true.
 *
 *  - environment guards: every global, closure cell and called function the
 *    bytecode scan relied on, checked by identity on every call; a miss
 *    names what was rebound;
 *  - call guards: how the arguments were passed (count, keywords) and one
 *    argument guard each (replay_guard.h); a miss names the first argument
 *    that no longer fits -- the recompile reason NUMDYN_LOGS=recompiles shows;
 *  - the cache's size limit (numdyn.config.cache_size_limit).
 * The replay code (src/trace/trace_replay.c) owns the entries and their
 * graphs; what decides whether an entry fits lives here.
 */
#ifndef ND_FN_GUARDS_H
#define ND_FN_GUARDS_H
#include "replay_guard.h"

enum { ND_EG_GLOBAL, ND_EG_CELL, ND_EG_FUNC };
/* One thing the scan relied on (all references owned).
 * GLOBAL: a = globals dict, b = builtins dict (the name was found there,
 *         absent from a) or NULL, c = name, d = value
 * CELL:   a = cell, c = variable name, d = value
 * FUNC:   a = function, b = its code, c = defaults, d = kwdefaults (None
 *         when absent): a function the call may run */
typedef struct nd_envguard {
    int kind;
    PyObject *a, *b, *c, *d;
} nd_envguard;

typedef struct nd_envguards {
    Py_ssize_t n, cap;
    nd_envguard *g;
} nd_envguards;

/* 0, or -1 with MemoryError; references are taken (new refs). */
int nd_envguards_push(nd_envguards *e, int kind, PyObject *a, PyObject *b, PyObject *c,
                      PyObject *d);
/* 1 when everything is still the object it was; 0 with *why (new ref,
 * when why is not NULL) naming the first that is not. Never fails. */
int nd_envguards_ok(const nd_envguards *e, PyObject **why);
void nd_envguards_clear(nd_envguards *e);
int nd_envguards_traverse(const nd_envguards *e, visitproc visit, void *arg);

typedef struct nd_callguard {
    Py_ssize_t nargs;     /* positional */
    PyObject *kwnames;    /* owned tuple or NULL */
    Py_ssize_t nag;
    nd_argguard *ag;      /* one per argument, positional then keyword */
} nd_callguard;

/* Guard a call's arguments (vectorcall convention). 0 recorded; 1 not
 * replayable (*why says why); -1 error. Clear it in every case. */
int nd_callguard_record(nd_callguard *c, PyObject *const *args, size_t nargsf,
                        PyObject *kwnames, const char **why);
/* 1 when the call fits, 0 when not. Never fails. */
int nd_callguard_fits(const nd_callguard *c, PyObject *const *args, size_t nargsf,
                      PyObject *kwnames);
/* Why the call does not fit (new ref, or NULL with an exception). */
PyObject *nd_callguard_miss(const nd_callguard *c, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames);
void nd_callguard_clear(nd_callguard *c);

/* numdyn.config.cache_size_limit: entries one function may keep. The
 * config module pushes it here when set (numdyn._C._config_set): a warm
 * call reads a C variable, not a Python attribute. */
extern long nd_guard_config_limit;
static inline long nd_guard_cache_limit(void) { return nd_guard_config_limit; }
#endif
