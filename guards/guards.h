/* guards.h -- the contract of guards/: does something cached fit new
 * inputs? Layers above include this header only.
 *
 *   guard_key.c     keys of arrays and graphs for the program cache (here)
 *   replay_guard.h  one argument of a replayed call: record, check, reason
 *   fn_guards.h     one compiled function's cache: environment guards
 *                   (globals, cells, functions), call guards (how the
 *                   arguments were passed, one argument guard each), its
 *                   size limit and the recompile reasons they give
 *   fn_programs.h   one compiled function's programs keyed by argument
 *                   signature: recompile reasons, guards as text
 *   dim_marks.h     mark_dynamic / mark_static, keyed by weak reference
 *   dim_pins.h      where a graph pins a dim marked dynamic to a constant
 *   guards.c        module-level helpers (nd_guards_init)
 * guards/ sits on graph/ and core/ only; it knows nothing of passes/, the
 * tracer or the shim (tests/test_layering.py).
 */
#ifndef ND_GUARDS_H
#define ND_GUARDS_H
#include "graph/graph.h"
#include "fn_guards.h"
#include "fn_programs.h"
#include "dim_marks.h"
#include "dim_pins.h"
int nd_guards_init(PyObject *module);

/* guard_key.c: the properties a compiled program specializes on, as one
 * 64-bit key. Two inputs with the same key run the same kernels: dtype
 * (incl. byte order), rank, which dims are 1 (broadcasting), layout class
 * (C-contiguous / F-contiguous / strided) and alignment -- never the sizes
 * or the data. Pure C on the array struct: a replay path can evaluate it
 * without running Python code. */
uint64_t nd_guard_array_key(PyObject *array);
/* Key of a standalone graph for the program cache: its structure (what
 * nd_graph_hash covers) combined with every INPUT's nd_guard_array_key. */
uint64_t nd_guard_graph_key(nd_graph *g, const nd_id *outs, int nout);
/* The same graph ignoring every guard-relevant property (size-1 dims,
 * layouts, view maps): two graphs with equal skeletons but different keys
 * mean a recompile for guard reasons. */
uint64_t nd_guard_skeleton(nd_graph *g, const nd_id *outs, int nout);
#endif
