/* trace_replay.h -- replaying a compiled function's trace without running
 * its Python code (src/trace_replay.c). Tracer-internal: included by
 * src/trace_*.c only.
 *
 * A compiled function is *replayable* when a conservative scan of its
 * bytecode finds no way for a call to do anything but array work on its
 * arguments (see trace_replay.c), and a capture of it showed that the
 * result depended on nothing but what the guards check. Such a capture is
 * recorded as an entry: argument guards, the graph of its one flush, which
 * graph INPUT is which argument, which argument each written-back caller
 * array is, and the shape of the return value. A later call whose arguments
 * fit an entry runs that graph directly and writes those arguments back.
 */
#ifndef ND_TRACE_REPLAY_H
#define ND_TRACE_REPLAY_H
#include "trace_internal.h"

/* What a recording capture did (the hooks in trace_flush.c fill it). */
typedef struct nd_replay_rec {
    nd_trace *trace;
    int escapes;    /* concrete array contents reached Python code mid-capture */
    int flushes;    /* flushes run (the return's included) */
    int final;      /* the return value's flush is running */
    int mutated;    /* a caller array was written */
    int elem_lazy;  /* element reads may stay lazy (nd_proxy_element) */
    int nelem;      /* lazy element reads so far */
    nd_graph *g;    /* owned: standalone graph of the return flush, or NULL */
    nd_id *outs;    /* PyMem: its output ids */
    int nout;
    PyObject *res;  /* owned list: the arrays that flush computed */
    int nwb;        /* caller arrays the return flush wrote back ... */
    int32_t *wb_out;       /* PyMem: ... output index of their final value */
    PyObject **wb_caller;  /* PyMem, borrowed (the call's arguments hold them) */
    int wb_bad;     /* a write-back the return flush did not compute */
    int unreplayable; /* nd_trace_not_replayable */
    int nvg;          /* data guards (nd_trace_data_guard), PyMem */
    struct nd_vguard *vg;
    struct nd_chain *chain; /* owned or NULL: the chunk flushes' graphs, the
                               steps a replay runs before g (nd__rec_chunk) */
} nd_replay_rec;

/* A data guard: a value computed from an argument's contents that the
 * trace depended on (nd_trace_data_guard); arr is the array while
 * recording (owned), arg its argument index in an entry. */
typedef struct nd_vguard {
    PyObject *arr;
    int32_t arg;
    nd_data_guard_fn fn;
    int64_t param, expect;
} nd_vguard;

/* The recording on this thread, or NULL. */
extern _Thread_local nd_replay_rec *nd__tls_rec;
static inline nd_replay_rec *nd__rec_of(nd_trace *t)
{
    nd_replay_rec *r = nd__tls_rec;
    return r && r->trace == t ? r : NULL;
}
void nd__rec_clear(nd_replay_rec *rec);
/* A chunk flush of a recording capture ran g (outs, its results res): keep
 * it as a replay step. 1: g is taken; 0: not (the call is then not
 * replayable: an input that is neither an argument nor an earlier step's
 * result, too many different steps, no memory). */
int nd__rec_chunk(nd_replay_rec *rec, nd_graph *g, const nd_id *outs, int nout, PyObject *res);

typedef struct nd_replay nd_replay;   /* per compiled function */
nd_replay *nd__replay_new(void);      /* NULL + MemoryError */
void nd__replay_free(nd_replay *r);
void nd__replay_reset(nd_replay *r);  /* forget entries and the scan */
int nd__replay_traverse(nd_replay *r, visitproc visit, void *arg);

/* Run a recorded entry that fits the call. Returns the result (new ref);
 * NULL with no exception when none fits (the caller traces); NULL with an
 * exception on error. fn: the function the caller would run. */
PyObject *nd__replay_try(nd_replay *r, PyObject *fn, PyObject *const *args, size_t nargsf,
                         PyObject *kwnames, int backend, PyObject *options);
/* 1 when this call's capture should be recorded (fn is replayable and the
 * entry limit is not reached), 0 when not, -1 on error. */
int nd__replay_want(nd_replay *r, PyObject *fn);
/* Make an entry of a finished capture (rec), if it qualifies. raw: what the
 * function returned (with proxies), before materialization. 0 or -1. */
int nd__replay_record(nd_replay *r, nd_replay_rec *rec, PyObject *fn, PyObject *const *args,
                      size_t nargsf, PyObject *kwnames, PyObject *raw);
/* The function a numdyn.CompiledFunction wraps (borrowed), or NULL when v
 * is not one (trace_compile.c). Called from a capture, it is traced inline. */
PyObject *nd__compiled_fn(PyObject *v);
/* Element reads of this function: lazy while recording (0) or eager NumPy
 * scalars (1), decided by what earlier captures did (see nd_proxy_element). */
int nd__replay_elem_eager(nd_replay *r);
/* A capture made lazy element reads and still let array contents reach
 * Python: later captures read elements eagerly. */
void nd__replay_set_elem_eager(nd_replay *r);
/* {"eligible", "reason", "entries", "hits", "misses", "last_miss"} */
PyObject *nd__replay_info(nd_replay *r);
#endif
