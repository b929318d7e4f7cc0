/* dim_marks.h -- numdyn.mark_dynamic / mark_static (dim_marks.c): which
 * dims of an array a compiled program may specialize on.
 *
 * Kernels are shape-generic: a program's signature (fn_programs.h) and the
 * program cache's graph key (guards.h) hold dtype, rank, size-1 dims and
 * layout, never sizes. A dim marked static puts its size into both, so
 * another size is another program (a recompile, counted against
 * cache_size_limit); compile(dynamic=False) does that for every dim not
 * marked dynamic. A dim marked dynamic must stay generic: code that makes
 * it a constant raises ConstraintViolationError (trace_control.c).
 *
 * Marks are keyed by the array object through a weak reference: they go
 * when the array does, and a new array at the same address has none.
 */
#ifndef ND_DIM_MARKS_H
#define ND_DIM_MARKS_H
#include "core/npy.h"

/* Number of arrays with marks alive: 0 lets hot paths skip the lookup;
 * nd_marks_ranged: of those, with a size range (mark_dynamic min=/max=). */
extern Py_ssize_t nd_marks_live, nd_marks_ranged;
/* 1 and the bounds when dim d of arr is marked dynamic with a range
 * (mark_dynamic(x, d, min=, max=)), else 0. Never fails. A size outside
 * it raises ConstraintViolationError at the call (trace_control.c). */
int nd_marks_range(PyObject *arr, int d, long long *lo, long long *hi);
/* Mark dims `mask` of arr dynamic (dynamic=1) or static (0), or unmark
 * them (2: maybe_mark_dynamic); a dim's newer mark replaces its older one. 0, or -1 with TypeError (arr takes
 * no weak references). */
int nd_marks_set(PyObject *arr, uint64_t mask, int dynamic);
/* arr's mark_static_address: 0 none, 1 marked, 2 marked with guard=True
 * (its data pointer is guarded: fn_programs.c). Never fails. */
int nd_marks_address(PyObject *arr);
/* arr's marks (0 masks when none). Never fails. */
void nd_marks_get(PyObject *arr, uint64_t *dynamic, uint64_t *stat);
/* Dims of an array argument that are specialized: its static marks, or
 * with spec_all (dynamic=False) every dim not marked dynamic. */
uint64_t nd_marks_static_dims(PyObject *arr, int spec_all);
/* Per thread: the running call was compiled with dynamic=False (set by
 * the tracer around a top-level call; the graph key reads it). */
extern _Thread_local int nd_marks_spec_all;
/* Key of arr's specialized sizes (0 when none): mixed into the graph key. */
uint64_t nd_marks_size_key(PyObject *arr);
int nd_marks_init(PyObject *module);
#endif
