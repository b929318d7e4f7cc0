/* trace_order.h -- NumPy's order of events inside one flush (trace_flush.c).
 * Tracer-internal: included by src/trace/trace_*.c only.
 *
 * NumPy runs a function's operations one at a time. When one raises
 * (FloatingPointError under np.errstate(...="raise"), a warning filter
 * turned into an error, a scalar that int() cannot convert), the caller's
 * arrays hold the writes of every operation before it -- and that
 * operation's own out= results, which NumPy stores before it checks the
 * error state -- and none after. A flush runs many operations at once, so
 * the tracer keeps, for the writes to caller arrays still pending, which
 * operation made each one (the write log), and a failed run names the
 * node whose operation raised (runtime/backend.h: nd_failed_node). The
 * caller arrays then get the versions written before that operation
 * (computed quietly, under np.errstate(all="ignore"): the failed run has
 * reported what NumPy reports), and the exception stands.
 *
 * A replay entry keeps the same facts in the ids of its recorded graph
 * (nd_order_notes), so a replayed call that raises leaves the same arrays.
 */
#ifndef ND_TRACE_ORDER_H
#define ND_TRACE_ORDER_H
#include "trace_replay.h"

/* One pending write: after the operation that began when the graph had
 * `at` nodes, caller storage (or write-back) `who` held node `version`.
 * A failure at node F (raising after its writes) keeps entries with
 * at <= F; a failure before its writes at F keeps those with at <= F - 1
 * and version < F. */
typedef struct {
    nd_id at, version;
    int32_t who;
} nd_wlog_ent;

/* The last entry of each `who` that a failure at F (before: raising before
 * its writes) keeps: out[who] = its version, or ND_NONE when none (the
 * caller array keeps what it holds). */
void nd__wlog_cut(const nd_wlog_ent *log, int n, nd_id F, int before, nd_id *out, int nwho);

/* A trace begins (its log starts empty) or ends (trace_state.c). */
void nd__wlog_begin(nd_trace *t);
void nd__wlog_forget(nd_trace *t);

/* What the return flush of a recording capture adds to its replay entry,
 * in the ids of rec->g: the scalar stores (pairs, runtime/backend.h) and
 * the write log of its write-backs (who = write-back index). A logged
 * version the flush's graph does not hold (a later write replaced the
 * array whole) is computed by `side`, a standalone graph whose outputs
 * side_outs are those versions: its entries have version ND_SIDE(k), k an
 * index of side_outs. Taken (owned) by nd__replay_record; freed by
 * nd__rec_clear otherwise (nd__order_notes_free). */
#define ND_SIDE(k) (-2 - (nd_id)(k))
typedef struct {
    nd_replay_rec *rec;
    nd_id *stores;
    int nstores;
    nd_wlog_ent *log;
    int nlog;
    nd_graph *side;
    nd_id *side_outs;
    int nside;
} nd_order_notes;
void nd__order_notes_free(nd_order_notes *n);
/* The notes made for rec (their arrays now belong to the caller), or
 * zeros when none. */
nd_order_notes nd__order_notes_take(nd_replay_rec *rec);

/* The values of nodes ids of the standalone graph g, computed by NumPy
 * with every floating-point error ignored and no scalar store checked:
 * a list of arrays (new ref) or NULL with an exception. */
PyObject *nd__compute_quietly(nd_graph *g, const nd_id *ids, int n);

/* Run g (a standalone graph) with the built-in backend `backend`, with the
 * scalar stores (pairs of ids of g) listed for the run. */
PyObject *nd__run_with_stores(int backend, nd_graph *g, const nd_id *outs, int nout,
                              PyObject *options, const nd_id *stores, int nstores);
#endif
