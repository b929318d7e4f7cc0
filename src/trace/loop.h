/* loop.h -- loop capture (DESIGN.md, "Loop capture"; issue 17).
 *
 * loop_rewrite.c: the compiled copy of a function has each capturable loop
 *   statement replaced by a call of a loop region, with the original loop
 *   kept as the fallback:
 *       __nd_r = __numdyn_loop_7__(a, x, s)       # or (locals())
 *       if __nd_r is None: <the original loop>        # Python runs it
 *       elif __nd_r.__class__ is tuple: (x, y) = __nd_r
 *       else: <assign the names __nd_r binds>          # some stay unbound
 * loop_parse.c: the loop statement (Python's ast) -> graph/loop_ir.h.
 * loop_run.c:   the region object: per call signature (types of the
 *   locals and arrays the loop uses) it types the loop
 *   (passes/loop_types.c), emits C (codegen/codegen_loop.c), compiles and
 *   caches it, runs it on the call's values and hands back the locals the
 *   loop assigned -- or None, and Python runs the loop.
 */
#ifndef ND_TRACE_LOOP_H
#define ND_TRACE_LOOP_H
#include "graph/loop_ir.h"

/* 0: *ir holds the loop; 1: not capturable, *reason (str) says why and
 * where; -1: error. locals: set of the function's local names; globals:
 * its globals (user helpers it calls are inlined from there). */
int nd_loop_parse(PyObject *loop, PyObject *locals, PyObject *globals, nd_lir *ir, PyObject **reason);

/* fn with its capturable loops replaced (new ref), or fn itself when there
 * is none or its source is not available. Records what was decided for
 * each loop (nd_loop_info). */
PyObject *nd_loop_rewrite(PyObject *fn);
/* fn's copy with its captured loops (new ref), as the last nd_loop_rewrite
 * of its code made it, when that copy has fn's globals, defaults and
 * closure cells; else fn itself. Called as it is, untraced (the speed
 * floor's NumPy path): NumPy calls run in NumPy, each captured loop as its
 * C (loop_run.c takes real arrays without a trace) */
PyObject *nd_loop_plain(PyObject *fn);
/* [{"line", "captured", "reason"}] for the loops of code (new ref; an
 * empty list when fn was never rewritten) */
PyObject *nd_loop_info(PyObject *code);

/* loop_run.c: a region object for ir (ownership moves in); info: the dict
 * its report lives in */
PyObject *nd_loop_region_new(nd_lir *ir, PyObject *globals, PyObject *info);
/* The loop as a plain Python function of a dict of its locals, returning
 * its locals at the end (new reference kept): what a call runs, on real
 * arrays, while the loop's C still compiles in the background (not
 * called for a region that never gets one). in_try: the loop is inside a
 * try statement -- the region returns a dict of the locals the loop had
 * when it raised, with the exception under '__nd_exc' (py does the same),
 * instead of raising it (loop_rewrite.c's template raises it) */
int nd_loop_region_set_py(PyObject *region, PyObject *py, int in_try);
/* how the region is called and what it hands back: npos >= 0, called with
 * npos values by position, vpos[v] variable v's position (-1: unbound to
 * the loop at entry); -1: called with locals(). vout[v]: v handed back */
int nd_loop_region_set_io(PyObject *region, const int *vpos, int npos, const uint8_t *vout);
int nd_loop_init(PyObject *module);
/* NUMDYN_LOOPS=0: no loop capture */
extern int nd_loop_enabled;
/* numdyn.config.loop_capture, pushed from Python when set (config.py's
 * _PUSHED): read on every helper call, which an import and an attribute
 * read made cost ~0.5 us */
extern int nd_loop_config;
#endif
