/* backend_cuda.c -- the "cuda" backend: a graph scheduled exactly as the
 * native backend schedules it (passes/schedule.h), its kernels generated
 * as CUDA C (codegen/codegen_cuda.h), compiled by NVRTC and launched on
 * the GPU with the native kernel ABI (P, I, S, E in device memory).
 *
 * Buffers live on the device for the whole run: an input ndarray is copied
 * up when a kernel first reads it, intermediates never leave the device,
 * and an output comes back as an ndarray of NumPy's dtype, shape and
 * layout. Steps without a GPU form (EXTERN nodes no registered binding
 * takes, eager steps) run on the host with NumPy on copies of their
 * operands: counted in cuda_host_steps and listed by numdyn.explain, never
 * silent. A kernel form codegen_cuda.c lacks raises NotImplementedError
 * naming it, unless numdyn.config.cuda_host_fallback is set (then the
 * graph runs with NumPy, counted and listed the same way).
 *
 * Errors follow runtime_native.c exactly: the kernels' error words are
 * read back (before any host step, and at the end) and nd_kernel_errors
 * decides; when NumPy's error state would act, NumPy runs the graph again
 * so its warnings and exceptions are NumPy's own (kernels wrote only
 * buffers of their own). A GPU has no floating-point status flags, so
 * only the conditions the generated code tests itself are reported
 * (integer division by zero, overflow checks, data warnings).
 */
#include "core/npy.h"
#include "core/counters.h"
#include "native.h"
#include "backend.h"
#include "cuda.h"
#include "guards/guards.h"
#include "codegen/codegen_cuda.h"
#include "graph/graph_py.h"
#include <string.h>
#undef I  /* complex.h (via NumPy): the kernel argument I is named so */

_Thread_local int nd_cuda_device_depth;

#define MAXOPS 64
#define MAXEXT 16

/* ----------------------------------------------------- extern table */
static struct { nd_cu_extern_fn fn; const char *name; } ext[MAXEXT];
static int next;

int nd_cu_register_extern(nd_cu_extern_fn fn, const char *name)
{
    for (int i = 0; i < next; i++) if (ext[i].fn == fn) return 0;
    if (next == MAXEXT) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn.cuda: too many GPU extern bindings");
        return -1;
    }
    ext[next].fn = fn;
    ext[next++].name = name;
    return 0;
}

/* ------------------------------------------------------ call log */
/* numdyn.explain's record of the GPU runs of a call (None: not logging) */
static PyObject *gpu_log;

static void log_event(const char *what, nd_graph *g, nd_id id, const char *why)
{
    if (!gpu_log) return;
    ND_EXC_SAVE(exc);
    const nd_node *n = id >= 0 ? &g->nodes[id] : NULL;
    const char *op = !n ? "graph" : n->op == ND_OP_UFUNC ? nd_ufunc_name(n->sub) : nd_op_name(n->op);
    /* an extern is named by its NumPy function, as explain's op lists do */
    PyObject *fname = n && n->op == ND_OP_EXTERN && n->obj ? PyObject_GetAttrString(n->obj, "__name__") : NULL;
    PyObject *label = fname ? PyUnicode_FromFormat("extern %U", fname) : PyUnicode_FromString(op ? op : "?");
    Py_XDECREF(fname);
    PyObject *r = label ? Py_BuildValue("{sssNsiss}", "event", what, "op", label, "node", (int)id,
                                        "why", why) : NULL;
    if (!r || PyList_Append(gpu_log, r) < 0) PyErr_Clear();
    Py_XDECREF(r);
    ND_EXC_RESTORE(exc);
}

/* ---------------------------------------------------- device buffers */
typedef struct dbuf {
    int refs;
    nd_cu_array a;
    struct dbuf *base;   /* a view's: the buffer it aliases (holds a reference) */
    PyObject *owner;     /* memory of another library's array (holds a reference) */
} dbuf;

/* numdyn.cuda.run_graph: device buffers given for the graph's INPUT nodes
 * (NULL: the node's ndarray goes up as usual) */
static dbuf **given_in;

static dbuf *dbuf_alloc(int ndim, const npy_intp *shape, int dtype, const npy_intp *strides)
{
    PyArray_Descr *d = PyArray_DescrFromType(dtype);
    if (!d) return NULL;
    int isz = (int)PyDataType_ELSIZE(d);
    Py_DECREF(d);
    dbuf *b = PyMem_Calloc(1, sizeof *b);
    if (!b) { PyErr_NoMemory(); return NULL; }
    b->refs = 1;
    b->a.ndim = ndim;
    b->a.dtype = dtype;
    b->a.itemsize = isz;
    size_t nb = (size_t)isz;
    for (int i = 0; i < ndim; i++) nb *= (size_t)shape[i];
    npy_intp st = isz;
    for (int i = ndim - 1; i >= 0; i--) {
        b->a.shape[i] = shape[i];
        b->a.strides[i] = strides ? strides[i] : st;
        st *= shape[i] > 0 ? shape[i] : 1;
    }
    b->a.nbytes = nb;
    if (nd_cu_alloc(nb, &b->a.ptr) < 0) { PyMem_Free(b); return NULL; }
    return b;
}

static void dbuf_drop(dbuf **slot)
{
    dbuf *b = *slot;
    *slot = NULL;
    if (!b || --b->refs > 0) return;
    if (b->base) dbuf_drop(&b->base);
    else if (b->owner) Py_DECREF(b->owner);
    else nd_cu_free(b->a.ptr);
    PyMem_Free(b);
}

static int c_contiguous(const nd_cu_array *a)
{
    npy_intp st = a->itemsize;
    for (int i = a->ndim - 1; i >= 0; i--) {
        if (a->shape[i] != 1 && a->strides[i] != st) return 0;
        st *= a->shape[i];
    }
    return 1;
}

/* the host ndarray a (aligned, native) up to the device: a dense array
 * (C or Fortran) keeps its layout, others go up as a C copy */
static dbuf *upload(PyArrayObject *a)
{
    PyObject *c = NULL;
    if (!PyArray_IS_C_CONTIGUOUS(a) && !PyArray_IS_F_CONTIGUOUS(a)) {
        c = PyArray_NewCopy(a, NPY_CORDER);
        if (!c) return NULL;
        a = (PyArrayObject *)c;
    }
    dbuf *b = dbuf_alloc(PyArray_NDIM(a), PyArray_DIMS(a), PyArray_TYPE(a), PyArray_STRIDES(a));
    if (b && b->a.nbytes) {
        if (nd_cu_htod(b->a.ptr, PyArray_DATA(a), b->a.nbytes) < 0) dbuf_drop(&b);
        else nd_counter_add(ND_CTR_CUDA_H2D_BYTES, (long long)b->a.nbytes);
    }
    Py_XDECREF(c);
    return b;
}

/* a device buffer down into a new ndarray of the same layout */
static PyObject *download(const nd_cu_array *a)
{
    PyArray_Descr *d = PyArray_DescrFromType(a->dtype);
    if (!d) return NULL;
    PyObject *h = PyArray_NewFromDescr(&PyArray_Type, d, a->ndim, (npy_intp *)a->shape,
                                       (npy_intp *)a->strides, NULL, 0, NULL);
    if (!h) return NULL;
    if (a->nbytes) {
        if (nd_cu_dtoh(PyArray_DATA((PyArrayObject *)h), a->ptr, a->nbytes) < 0) {
            Py_DECREF(h);
            return NULL;
        }
        nd_counter_add(ND_CTR_CUDA_D2H_BYTES, (long long)a->nbytes);
    }
    return h;
}

/* ---------------------------------------------------- program cache */
typedef struct cprog {
    uint64_t key;
    nd_program *p;
    nd_cu_fn_t *fns;     /* per kernel */
    int *split;          /* per kernel: nd_cuda_split_slots */
    uint8_t *quiet;      /* per kernel: its text sets no error word (quiet_text) */
    /* the kernels' P, I, S of the last run, kept on the device (args) and
     * as the host image uploaded last (last): a warm call whose arguments
     * did not change (the allocator hands out the same blocks) uploads
     * nothing; busy: a run is using them (a nested run of the same program
     * takes its own) */
    nd_cu_ptr args;
    char *last;
    size_t argcap;
    int busy;
} cprog;

static struct { cprog *t; size_t cap, n; } pc;

static cprog *pc_get(uint64_t key)
{
    if (!pc.cap) return NULL;
    for (size_t i = key & (pc.cap - 1); pc.t[i].p; i = (i + 1) & (pc.cap - 1))
        if (pc.t[i].key == key) return &pc.t[i];
    return NULL;
}

size_t nd_cu_kept_arg_bytes;

static void kept_args_drop(cprog *c)
{
    if (!c->args || c->busy) return;
    nd_cu_free(c->args);
    nd_cu_kept_arg_bytes -= nd_cu_alloc_size(c->argcap);
    PyMem_Free(c->last);
    c->args = 0;
    c->last = NULL;
}

void nd_cu_drop_kept_args(void)
{
    for (size_t i = 0; i < pc.cap; i++) kept_args_drop(&pc.t[i]);
}

static void cprog_clear(cprog *c)
{
    if (c->p) nd_program_decref(c->p);
    PyMem_Free(c->fns);
    PyMem_Free(c->split);
    PyMem_Free(c->quiet);
    c->busy = 0;
    kept_args_drop(c);
    memset(c, 0, sizeof *c);
}

static void pc_clear(void)
{
    for (size_t i = 0; i < pc.cap; i++) cprog_clear(&pc.t[i]);
    pc.n = 0;
}

/* takes c's contents; the table's copy, or NULL + exc */
static cprog *pc_put(cprog *c)
{
    if (pc.n >= 4096) pc_clear();  /* a bound, not an LRU: programs are cheap to rebuild from disk */
    if ((pc.n + 1) * 2 > pc.cap) {
        size_t cap = pc.cap ? 2 * pc.cap : 64;
        cprog *t = PyMem_Calloc(cap, sizeof *t);
        if (!t) { PyErr_NoMemory(); cprog_clear(c); return NULL; }
        for (size_t i = 0; i < pc.cap; i++) {
            if (!pc.t[i].p) continue;
            size_t j = pc.t[i].key & (cap - 1);
            while (t[j].p) j = (j + 1) & (cap - 1);
            t[j] = pc.t[i];
        }
        PyMem_Free(pc.t);
        pc.t = t;
        pc.cap = cap;
    }
    size_t j = c->key & (pc.cap - 1);
    while (pc.t[j].p) j = (j + 1) & (pc.cap - 1);
    pc.t[j] = *c;
    pc.n++;
    return &pc.t[j];
}

/* bytes of kernel k's P, I and S, 16-aligned each */
static size_t arg_bytes(const nd_kernel *k)
{
    size_t nops = (size_t)(k->nin + k->nout), R = (size_t)k->rank;
    size_t P = (3 * nops + 2) * sizeof(char *);  /* + a split reduction's scratch (codegen_cuda.h) */
    size_t I = (R + nops * R + nops * ND_MAXFS) * sizeof(int64_t);
    size_t S = (size_t)(k->nscal ? k->nscal : 1) * sizeof(nd_scalar);
    return ((P + 15) & ~(size_t)15) + ((I + 15) & ~(size_t)15) + ((S + 15) & ~(size_t)15);
}

/* numdyn.config.cuda_host_fallback: 1, 0, -1 + exc */
static int host_fallback_wanted(void)
{
    PyObject *cfg = PyImport_ImportModule("numdyn.config");
    PyObject *v = cfg ? PyObject_GetAttrString(cfg, "cuda_host_fallback") : NULL;
    Py_XDECREF(cfg);
    int on = v ? PyObject_IsTrue(v) : -1;
    Py_XDECREF(v);
    return on;
}

/* a kernel's text that names its error word only where it declares it
 * and where it writes it out at the end (`if (nd_err) atomicOr(E,
 * nd_err)`): no check of the kernel can set it (every check ORs into
 * nd_err, directly or through a helper given &nd_err), so the word stays
 * 0 and nobody needs to wait to read it */
static int quiet_text(const char *t)
{
    int n = 0;
    for (const char *q = t; (q = strstr(q, "nd_err")) != NULL; q += 6) n++;
    return n == 3 && strstr(t, "int nd_err = 0;") && strstr(t, "if (nd_err) atomicOr(E, nd_err);");
}

/* schedule + generate + load; NULL + exc. *unsupported: 1 when a kernel
 * has no CUDA form (NotImplementedError set) */
static cprog *build(nd_graph *g, const nd_id *outs, int nout, uint64_t key, int *unsupported)
{
    *unsupported = 0;
    cprog c;
    memset(&c, 0, sizeof c);
    c.key = key;
    c.p = nd_cuda_schedule(g, outs, nout);
    if (!c.p) return NULL;
    if (nd_debug_checks() && (nd_graph_verify(g, outs, nout, "scheduling") < 0 ||
                              nd_program_verify(c.p, g) < 0)) {
        cprog_clear(&c);
        return NULL;
    }
    c.p->key = key;
    int nk = c.p->nkern;
    nd_sb *texts = PyMem_Calloc((size_t)(nk ? nk : 1), sizeof(nd_sb));
    const char **tp = PyMem_Calloc((size_t)(nk ? nk : 1), sizeof(char *));
    const char **np = PyMem_Calloc((size_t)(nk ? nk : 1), sizeof(char *));
    char (*names)[40] = PyMem_Calloc((size_t)(nk ? nk : 1), sizeof *names);
    c.fns = PyMem_Calloc((size_t)(nk ? nk : 1), sizeof(nd_cu_fn_t));
    c.split = PyMem_Calloc((size_t)(nk ? nk : 1), sizeof(int));
    c.quiet = PyMem_Calloc((size_t)(nk ? nk : 1), 1);
    cprog *out = NULL;
    if (!texts || !tp || !np || !names || !c.fns || !c.split || !c.quiet) { PyErr_NoMemory(); goto done; }
    for (int i = 0; i < nk; i++) {
        nd_kernel *k = &c.p->kerns[i];
        uint64_t h = 0;
        nd_sb_init(&texts[i]);
        if (nd_cuda_kernel(g, k, &texts[i], &h) < 0) {
            if (PyErr_ExceptionMatches(PyExc_NotImplementedError)) *unsupported = 1;
            goto done;
        }
        k->hash = h;
        c.split[i] = nd_cuda_split_slots(g, k);
        c.quiet[i] = (uint8_t)quiet_text(texts[i].p);
        snprintf(names[i], sizeof names[i], "nd_cuda_%016llx", (unsigned long long)h);
        tp[i] = texts[i].p;
        np[i] = names[i];
    }
    int compiled = 0;
    if (nk && nd_cu_functions(nk, tp, np, c.fns, &compiled) < 0) goto done;
    if (compiled) nd_counter_add(ND_CTR_KERNELS_COMPILED, nk);
    if (nd_debug_wanted()) nd_debug_program(g, outs, nout, c.p, compiled ? nk : 0);
    out = pc_put(&c);
    c.p = NULL;
    c.fns = NULL;
    c.split = NULL;
    c.quiet = NULL;
done:
    if (texts) for (int i = 0; i < nk; i++) nd_sb_free(&texts[i]);
    PyMem_Free(texts);
    PyMem_Free(tp);
    PyMem_Free(np);
    PyMem_Free(names);
    if (!out) cprog_clear(&c);
    return out;
}

/* -------------------------------------------------------------- run */
typedef struct run {
    nd_graph *g;
    cprog *cp;
    int n;
    PyObject **host;    /* per node: an ndarray on the host, or NULL */
    dbuf **dev;         /* per node: its device buffer; dev[n + i]: a C copy for view reads */
    nd_cu_ptr E;        /* one int per kernel */
    int *Eh;            /* their host image; the words themselves when mapped */
    int mapped;         /* E is mapped host memory (nd_cu_errwords_take): nks words */
    int eread;          /* kernels whose error word was read */
    int async;          /* quiet kernels need no wait for their words (run_async) */
    int unsynced;       /* ... and a check skipped the wait */
    nd_cu_ptr args;     /* device arena of the kernels' P, I, S */
    size_t argoff, argcap;
    char *stage;        /* its host image (cp->last when kept: what the device holds) */
    char *img;          /* when kept: a kernel's arguments before they are compared */
    nd_cu_ptr scr;      /* split reductions' scratch (scratch_for) */
    size_t scr_part, scr_n;
} run;

/* node id on the device (uploading its host array) */
static dbuf *need_dev(run *r, nd_id id)
{
    if (r->dev[id]) return r->dev[id];
    if (!r->host[id]) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn.cuda: internal error: kernel operand not computed");
        return NULL;
    }
    r->dev[id] = upload((PyArrayObject *)r->host[id]);
    return r->dev[id];
}

/* node id on the host (downloading its device buffer; a view on the
 * device is NumPy's view of its base's host array, as the CPU makes it) */
static PyObject *need_host(run *r, nd_id id)
{
    if (r->host[id]) return r->host[id];
    if (!r->dev[id]) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn.cuda: internal error: value not computed");
        return NULL;
    }
    if (r->dev[id]->base) {
        PyObject *in = need_host(r, r->g->nodes[id].in[0]);
        r->host[id] = in ? nd_eval_node(r->g, id, &in) : NULL;
        return r->host[id];
    }
    r->host[id] = download(&r->dev[id]->a);
    return r->host[id];
}


/* node id C-contiguous on the device (view maps index the C order) */
static dbuf *need_dev_c(run *r, nd_id id)
{
    dbuf *b = need_dev(r, id);
    if (!b || c_contiguous(&b->a)) return b;
    if (r->dev[r->n + id]) return r->dev[r->n + id];
    PyObject *h = need_host(r, id);
    PyObject *c = h ? nd_usable_array(h, 1) : NULL;
    if (!c) return NULL;
    r->dev[r->n + id] = upload((PyArrayObject *)c);
    Py_DECREF(c);
    return r->dev[r->n + id];
}

/* a VIEW step on the device: an alias of its base's C-ordered buffer
 * (offset and strides of the view map; real/imag select a part) */
static int device_view(run *r, nd_id id)
{
    const nd_node *n = &r->g->nodes[id];
    dbuf *b = need_dev_c(r, n->in[0]);
    if (!b) return -1;
    dbuf *v = PyMem_Calloc(1, sizeof *v);
    if (!v) { PyErr_NoMemory(); return -1; }
    PyArray_Descr *d = PyArray_DescrFromType(n->dtype);
    if (!d) { PyMem_Free(v); return -1; }
    v->a.itemsize = (int)PyDataType_ELSIZE(d);
    Py_DECREF(d);
    v->refs = 1;
    v->base = b;
    b->refs++;
    v->a.dtype = n->dtype;
    v->a.ndim = n->ndim;
    v->a.ptr = b->a.ptr + (nd_cu_ptr)(n->voff * b->a.itemsize) +
               ((n->flags & ND_F_VIEW_IMAG) ? (nd_cu_ptr)v->a.itemsize : 0);
    size_t nel = 1;
    for (int k = 0; k < n->ndim; k++) {
        v->a.shape[k] = n->shape[k];
        v->a.strides[k] = n->vstrides[k] * b->a.itemsize;
        nel *= (size_t)n->shape[k];
    }
    v->a.nbytes = nel * (size_t)v->a.itemsize;  /* copied as one block only when C-contiguous */
    r->dev[id] = v;
    return 0;
}

/* the error words of the kernels run so far: 0, 1 (NumPy reruns the
 * graph), -1 + exc */
static int check_errors(run *r, int upto)
{
    if (r->eread >= upto) return 0;
    if (r->async) {
        nd_program *p = r->cp->p;
        int loud = 0;
        for (int s = 0, kk = 0; s < p->nsteps && kk < upto; s++)
            if (p->steps[s].kind == ND_S_KERNEL) loud |= kk++ >= r->eread && !r->cp->quiet[p->steps[s].kern];
        if (!loud) {
            r->eread = upto;
            r->unsynced = 1;
            return 0;
        }
    }
    if (r->mapped ? nd_cu_sync() < 0 : nd_cu_dtoh(r->Eh, r->E, sizeof(int) * (size_t)upto) < 0)
        return -1;
    nd_program *p = r->cp->p;
    for (int s = 0, kk = 0; s < p->nsteps && kk < upto; s++) {
        if (p->steps[s].kind != ND_S_KERNEL) continue;
        int ki = p->steps[s].kern;
        int e = r->Eh[kk++];
        if (kk <= r->eread || !e) continue;
        int rc = nd_kernel_errors(r->g, &p->kerns[ki], e);
        if (rc) return rc;
    }
    r->eread = upto;
    return 0;
}

/* A split reduction's scratch (codegen_cuda.h) for this run: partials,
 * then a counter per row, zeroed when allocated (every launch leaves its
 * counters zero, so the run's split kernels share it); freed with the run */
static int scratch_for(run *r, size_t part, size_t rows)
{
    part = (part + 15) & ~(size_t)15;
    size_t need = part + rows * sizeof(int);
    if (part <= r->scr_part && need <= r->scr_n) return 0;
    if (part < r->scr_part) part = r->scr_part;  /* grows, never shrinks within a run */
    need = part + rows * sizeof(int);
    nd_cu_ptr p;
    if (nd_cu_alloc(need, &p) < 0) return -1;
    if (nd_cu_memset32(p + part, 0, (need - part) / sizeof(int)) < 0) { nd_cu_free(p); return -1; }
    nd_cu_free(r->scr);
    r->scr = p;
    r->scr_part = part;
    r->scr_n = need;
    return 0;
}

/* the grid for kernel k over extents n (tot elements): the kernels'
 * forms choose by the same rules (codegen_cuda.c: a thread per row of at
 * most ND_CU_NARROW elements; a reduction with a split form gets several
 * blocks per row when its rows are few and long, *rows set) */
static int grid_for(const nd_kernel *k, int split, const int64_t *n, int64_t tot, unsigned *grid,
                    int64_t *rows)
{
    int sm = nd_cu_sm_count();
    if (sm < 0) return -1;
    int64_t cap = (int64_t)sm * 16, work, nred = 1;
    *rows = 0;
    if (k->kind == ND_K_REDUCE || k->kind == ND_K_ROW) {
        work = 1;  /* one block a row */
        for (int d = 0; d < k->rank; d++) {
            if (!((k->red >> d) & 1)) work *= n[d];
            else nred *= n[d];
        }
        if (nred <= ND_CU_NARROW) {  /* reductions and row kernels alike */
            work = (work + ND_CU_THREADS - 1) / ND_CU_THREADS;
        } else if (split && work > 0 && 2 * work <= cap) {
            /* blocks of at least 8 elements a thread */
            int64_t per = (nred + 8 * ND_CU_THREADS - 1) / (8 * ND_CU_THREADS), most = cap / work;
            int64_t bpr = per < most ? per : most;
            if (bpr >= 2) {
                *rows = work;
                *grid = (unsigned)(work * bpr);
                return 0;
            }
        }
    } else if (k->kind == ND_K_SCAN) {
        int64_t lines = 1;  /* one thread a line */
        for (int d = 0; d < k->rank; d++) if (d != k->scan) lines *= n[d];
        work = (lines + ND_CU_THREADS - 1) / ND_CU_THREADS;
    } else {
        work = (tot + ND_CU_THREADS - 1) / ND_CU_THREADS;
    }
    *grid = (unsigned)(work < cap ? work : cap);
    return 0;
}

static int run_kernel(run *r, int step_kern, int kidx)
{
    nd_program *p = r->cp->p;
    nd_graph *g = r->g;
    nd_kernel *k = &p->kerns[step_kern];
    int nops = k->nin + k->nout, R = k->rank;
    if (nops > MAXOPS) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: kernel with too many operands");
        return -1;
    }
    dbuf *ob[MAXOPS];
    for (int o = k->nin; o < nops; o++) {
        nd_kop *op = &k->ops[o];
        if (op->acc == ND_A_REGION || r->dev[op->buf]) continue;  /* the BASE step made it / two outputs */
        nd_node *m = &g->nodes[op->buf];
        npy_intp st[ND_MAXDIMS];
        PyArray_Descr *d = PyArray_DescrFromType(m->dtype);
        if (!d) return -1;
        if (p->kord[op->buf]) nd_order_strides(m->ndim, m->shape, PyDataType_ELSIZE(d), m->kperm, st);
        Py_DECREF(d);
        if (!(r->dev[op->buf] = dbuf_alloc(m->ndim, m->shape, m->dtype, p->kord[op->buf] ? st : NULL)))
            return -1;
    }
    for (int o = 0; o < nops; o++) {
        nd_kop *op = &k->ops[o];
        ob[o] = o < k->nin && op->acc == ND_A_VIEW ? need_dev_c(r, op->buf) : need_dev(r, op->buf);
        if (!ob[o]) return -1;
    }
    nd_karr ka[MAXOPS];
    for (int o = 0; o < nops; o++)
        ka[o] = (nd_karr){(char *)(uintptr_t)ob[o]->a.ptr, ob[o]->a.ndim, ob[o]->a.itemsize,
                          ob[o]->a.strides};
    char *P[3 * MAXOPS + 2];
    int64_t I[ND_MAXDIMS + MAXOPS * ND_MAXDIMS + MAXOPS * ND_MAXFS], n[ND_MAXDIMS];
    nd_kernel_args(g, k, ka, P, I, n);
    int64_t tot = nd_kernel_merge(k, I, n);
    if (nd_cg_check_stores())
        for (int o = k->nin; o < nops; o++) {
            P[nops + 2 * (o - k->nin)] = (char *)(uintptr_t)ob[o]->a.ptr;
            P[nops + 2 * (o - k->nin) + 1] = (char *)(uintptr_t)(ob[o]->a.ptr + ob[o]->a.nbytes);
        }
    unsigned grid;
    int64_t rows;
    int split = r->cp->split[step_kern];
    if (grid_for(k, split, n, tot, &grid, &rows) < 0) return -1;
    if (!grid) return 0;  /* nothing to compute (an empty domain) */
    P[3 * nops] = P[3 * nops + 1] = NULL;
    if (rows) {
        if (scratch_for(r, (size_t)split * ND_CU_SPLIT_SLOT * grid, (size_t)rows) < 0) return -1;
        P[3 * nops] = (char *)(uintptr_t)r->scr;
        P[3 * nops + 1] = (char *)(uintptr_t)(r->scr + r->scr_part);
        nd_counter_add(ND_CTR_CUDA_SPLIT_REDUCTIONS, 1);
    }
    /* P, I, S into the arena, then up */
    size_t pb = (size_t)(3 * nops + 2) * sizeof(char *);
    size_t ib = (size_t)(R + nops * R + nops * ND_MAXFS) * sizeof(int64_t);
    size_t sbts = (size_t)k->nscal * sizeof(nd_scalar);
    size_t a16 = (pb + 15) & ~(size_t)15, i16 = (ib + 15) & ~(size_t)15;
    char *h = r->img ? r->img : r->stage + r->argoff;
    memset(h, 0, a16 + i16);   /* padding: compared below */
    memcpy(h, P, pb);
    memcpy(h + a16, I, ib);
    for (int j = 0; j < k->nscal; j++)
        memcpy(h + a16 + i16 + (size_t)j * sizeof(nd_scalar), &g->nodes[k->scal[j]].scalar,
               sizeof(nd_scalar));
    nd_cu_ptr dP = r->args + r->argoff, dI = dP + a16, dS = dI + i16, dE = r->E + sizeof(int) * (size_t)kidx;
    size_t used = a16 + i16 + sbts;
    if (r->img) {   /* the device holds the last run's: upload only what changed */
        char *dev = r->stage + r->argoff;
        if (memcmp(dev, h, used) != 0) {
            if (nd_cu_htod(dP, h, used) < 0) return -1;
            memcpy(dev, h, used);   /* after the upload was queued: what the device will hold */
        }
    } else if (nd_cu_htod(dP, h, used) < 0) {
        return -1;
    }
    r->argoff += arg_bytes(k);
    void *params[4] = {&dP, &dI, &dS, &dE};
    if (nd_cu_launch(r->cp->fns[step_kern], grid, ND_CU_THREADS, params) < 0) return -1;
    nd_counter_add(ND_CTR_CUDA_LAUNCHES, 1);
    nd_counter_add(ND_CTR_KERNEL_RUNS, 1);
    return 0;
}

/* an EXTERN a registered binding computes on the device: 1 done, 0 not taken, -1 */
static int device_extern(run *r, nd_id id)
{
    nd_node *nn = &r->g->nodes[id];
    if (!next || nn->op != ND_OP_EXTERN || nn->aux >= 0 || nn->nextra > MAXOPS) return 0;
    const nd_cu_array *in[MAXOPS];
    for (int k = 0; k < nn->nextra; k++) {
        nd_id a = nn->extra[k];
        if (a < 0) return 0;  /* a None operand: the host's */
        dbuf *b = need_dev(r, a);
        if (!b) return -1;
        in[k] = &b->a;
    }
    for (int i = 0; i < next; i++) {
        dbuf *b = PyMem_Calloc(1, sizeof *b);
        if (!b) { PyErr_NoMemory(); return -1; }
        int rc = ext[i].fn(r->g, id, in, nn->nextra, &b->a);
        if (rc <= 0) {
            PyMem_Free(b);
            if (rc < 0) return -1;
            continue;
        }
        b->refs = 1;
        r->dev[id] = b;
        log_event("device_extern", r->g, id, ext[i].name);
        return 1;
    }
    return 0;
}

static int run_eager_step(run *r, nd_id id)
{
    nd_node *n = &r->g->nodes[id];
    if (n->op == ND_OP_EXTERN && n->aux >= 0 && (r->host[id] || r->dev[id])) return 0;
    if (n->op == ND_OP_VIEW) return device_view(r, id);
    int drc = device_extern(r, id);
    if (drc) return drc < 0 ? -1 : 0;
    int nin = n->op == ND_OP_EXTERN ? n->nextra : n->nin;
    PyObject *small[8], **ins = small;
    if (nin > 8) {
        ins = PyMem_Malloc(sizeof(PyObject *) * (size_t)nin);
        if (!ins) { PyErr_NoMemory(); return -1; }
    }
    int rc = 0;
    for (int k = 0; k < nin && rc == 0; k++) {
        nd_id in = n->op == ND_OP_EXTERN ? n->extra[k] : n->in[k];
        ins[k] = in >= 0 ? need_host(r, in) : Py_None;
        if (!ins[k]) rc = -1;
    }
    if (rc == 0) rc = nd_eval_extern_group(r->g, id, (PyObject *const *)ins, r->host, NULL);
    if (ins != small) PyMem_Free(ins);
    if (rc < 0) return -1;
    nd_counter_add(ND_CTR_CUDA_HOST_STEPS, 1);
    log_event("host_step", r->g, id, n->op == ND_OP_EXTERN ? "no GPU form of this NumPy function yet"
                                                            : "this operation has no kernel form");
    if (!PyArray_Check(r->host[id])) {
        PyObject *a = PyArray_FromAny(r->host[id], NULL, 0, 0, 0, NULL);
        Py_SETREF(r->host[id], a);
        if (!a) return -1;
    }
    return 0;
}

static int run_base(run *r, nd_id set)
{
    nd_program *p = r->cp->p;
    nd_node *sn = &r->g->nodes[set];
    nd_id base = sn->in[0];
    dbuf *b = need_dev(r, base);
    if (!b) return -1;
    if (p->take[set] && c_contiguous(&b->a)) {
        b->refs++;
        r->dev[set] = b;
        Py_CLEAR(r->host[base]);  /* its device buffer is written from now on */
        return 0;
    }
    dbuf *c = dbuf_alloc(sn->ndim, sn->shape, sn->dtype, NULL);
    if (!c) return -1;
    r->dev[set] = c;
    if (c_contiguous(&b->a) && b->a.nbytes == c->a.nbytes && b->a.dtype == c->a.dtype)
        return nd_cu_dtod(c->a.ptr, b->a.ptr, c->a.nbytes);
    /* another layout: through the host, in C order */
    PyObject *h = need_host(r, base);
    PyObject *cc = h ? PyArray_FromAny(h, PyArray_DescrFromType(sn->dtype), 0, 0,
                                       NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, NULL) : NULL;
    if (!cc) return -1;
    int rc = c->a.nbytes ? nd_cu_htod(c->a.ptr, PyArray_DATA((PyArrayObject *)cc), c->a.nbytes) : 0;
    Py_DECREF(cc);
    return rc;
}

static int scalar_store_fails(run *r)
{
    nd_graph *g = r->g;
    for (int k = 0; k < nd_nscalar_stores; k++) {
        nd_id s = nd_scalar_stores[2 * k], v = nd_scalar_stores[2 * k + 1];
        if (s < 0 || s >= g->n || v < 0 || v >= g->n || (!r->host[v] && !r->dev[v])) continue;
        PyObject *h = need_host(r, v);
        if (!h) return -1;
        if (nd_scalar_store_check(h, g->nodes[s].dtype, 0)) return 1;
    }
    return 0;
}

/* ------------------------------------------------- device buffers out */
/* numdyn.cuda.DeviceBuffer: a result left on the GPU, exposed through
 * __cuda_array_interface__ (CuPy, torch, numba take it without a copy);
 * holds its device memory until the last consumer lets go */
typedef struct {
    PyObject_HEAD
    dbuf *b;
} DevBuf;

static void devbuf_dealloc(PyObject *o)
{
    dbuf_drop(&((DevBuf *)o)->b);
    Py_TYPE(o)->tp_free(o);
}

static PyObject *devbuf_cai(PyObject *o, void *closure)
{
    (void)closure;
    const nd_cu_array *a = &((DevBuf *)o)->b->a;
    PyArray_Descr *d = PyArray_DescrFromType(a->dtype);
    PyObject *ts = d ? PyObject_GetAttrString((PyObject *)d, "str") : NULL;
    Py_XDECREF(d);
    PyObject *shape = PyTuple_New(a->ndim), *st = PyTuple_New(a->ndim);
    for (int k = 0; shape && st && k < a->ndim; k++) {
        PyTuple_SET_ITEM(shape, k, PyLong_FromSsize_t(a->shape[k]));
        PyTuple_SET_ITEM(st, k, PyLong_FromSsize_t(a->strides[k]));
    }
    PyObject *r = ts && shape && st
        ? Py_BuildValue("{sOsOs(Ki)sOsisO}", "shape", shape, "typestr", ts, "data",
                        (unsigned long long)a->ptr, 0, "strides", st, "version", 3,
                        /* a call returns once its kernels ran (it read their error words):
                           a consumer need not synchronize */
                        "stream", Py_None)
        : NULL;
    Py_XDECREF(ts);
    Py_XDECREF(shape);
    Py_XDECREF(st);
    return r;
}

static PyObject *devbuf_shape(PyObject *o, void *closure)
{
    (void)closure;
    const nd_cu_array *a = &((DevBuf *)o)->b->a;
    PyObject *t = PyTuple_New(a->ndim);
    for (int k = 0; t && k < a->ndim; k++) PyTuple_SET_ITEM(t, k, PyLong_FromSsize_t(a->shape[k]));
    return t;
}

static PyObject *devbuf_dtype(PyObject *o, void *closure)
{
    (void)closure;
    return (PyObject *)PyArray_DescrFromType(((DevBuf *)o)->b->a.dtype);
}

/* get(): the values as an ndarray on the host (a copy) */
static PyObject *devbuf_get(PyObject *o, PyObject *noargs)
{
    (void)noargs;
    dbuf *b = ((DevBuf *)o)->b;
    if (nd_cu_ready() < 0) return NULL;
    if (c_contiguous(&b->a) || b->a.nbytes == 0) return download(&b->a);
    /* a strided view: its elements one by one would be slow; the span it
     * covers comes down and is viewed as on the device */
    npy_intp lo = 0, hi = 0;
    for (int k = 0; k < b->a.ndim; k++) {
        npy_intp e = (b->a.shape[k] - 1) * b->a.strides[k];
        if (e < 0) lo += e; else hi += e;
    }
    npy_intp span = hi - lo + b->a.itemsize;
    nd_cu_array whole = b->a;
    whole.ndim = 1;
    whole.dtype = NPY_UINT8;
    whole.itemsize = 1;
    whole.shape[0] = span;
    whole.strides[0] = 1;
    whole.ptr = b->a.ptr + (nd_cu_ptr)lo;
    whole.nbytes = (size_t)span;
    PyObject *raw = download(&whole);
    if (!raw) return NULL;
    PyArray_Descr *d = PyArray_DescrFromType(b->a.dtype);
    if (!d) { Py_DECREF(raw); return NULL; }
    PyObject *v = PyArray_NewFromDescr(&PyArray_Type, d, b->a.ndim, b->a.shape, b->a.strides,
                                       PyArray_BYTES((PyArrayObject *)raw) - lo, 0, NULL);
    if (!v || PyArray_SetBaseObject((PyArrayObject *)v, raw) < 0) { Py_XDECREF(v); return NULL; }
    PyObject *c = PyArray_NewCopy((PyArrayObject *)v, NPY_KEEPORDER);
    Py_DECREF(v);
    return c;
}

static PyGetSetDef devbuf_getset[] = {
    {"__cuda_array_interface__", devbuf_cai, NULL, "CUDA Array Interface (version 3)", NULL},
    {"shape", devbuf_shape, NULL, "shape", NULL},
    {"dtype", devbuf_dtype, NULL, "NumPy dtype", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef devbuf_methods[] = {
    {"get", devbuf_get, METH_NOARGS, "copy to the host: an ndarray"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DevBuf_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn.cuda.DeviceBuffer",
    .tp_basicsize = sizeof(DevBuf),
    .tp_dealloc = devbuf_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A numdyn result on the GPU: __cuda_array_interface__, get() copies it to the host.",
    .tp_getset = devbuf_getset,
    .tp_methods = devbuf_methods,
};

/* a new reference to b, as a DeviceBuffer; NULL + exc (b NULL: exc set) */
static PyObject *devbuf_new(dbuf *b)
{
    if (!b) return NULL;
    DevBuf *o = PyObject_New(DevBuf, &DevBuf_Type);
    if (!o) return NULL;
    b->refs++;
    o->b = b;
    return (PyObject *)o;
}

/* ---- DeviceBuffers for numdyn.Tensor on CUDA (cuda.h's contract) */
int nd_cu_devbuf_check(PyObject *o) { return Py_IS_TYPE(o, &DevBuf_Type); }

const nd_cu_array *nd_cu_devbuf_array(PyObject *o) { return &((DevBuf *)o)->b->a; }

PyObject *nd_cu_devbuf_upload(PyObject *array)
{
    if (!PyArray_Check(array)) {
        PyErr_SetString(PyExc_TypeError, "numdyn.cuda: only an ndarray goes up to the device");
        return NULL;
    }
    if (nd_cu_ready() < 0) return NULL;
    PyObject *a = nd_usable_array(array, 0);   /* aligned, native byte order */
    if (!a) return NULL;
    dbuf *b = upload((PyArrayObject *)a);
    Py_DECREF(a);
    /* a buffer is complete when handed out (its interface says stream None) */
    if (b && nd_cu_sync() < 0) dbuf_drop(&b);
    PyObject *r = devbuf_new(b);
    dbuf_drop(&b);
    return r;
}

PyObject *nd_cu_devbuf_borrow(const nd_cu_array *a, PyObject *owner)
{
    dbuf *b = PyMem_Calloc(1, sizeof *b);
    if (!b) return PyErr_NoMemory();
    b->refs = 1;
    b->a = *a;
    b->owner = Py_NewRef(owner);
    PyObject *r = devbuf_new(b);
    dbuf_drop(&b);
    return r;
}

PyObject *nd_cu_devbuf_get(PyObject *o) { return devbuf_get(o, NULL); }

int nd_cu_devbuf_copy(PyObject *dst, PyObject *src)
{
    const nd_cu_array *d = nd_cu_devbuf_array(dst), *s = nd_cu_devbuf_array(src);
    int same = d->ndim == s->ndim && d->dtype == s->dtype && d->nbytes == s->nbytes;
    for (int k = 0; same && k < d->ndim; k++)
        same = d->shape[k] == s->shape[k] && (d->shape[k] < 2 || d->strides[k] == s->strides[k]);
    npy_intp span = d->itemsize;   /* dense: the elements cover nbytes */
    for (int k = 0; k < d->ndim; k++) span += (d->shape[k] - 1) * (d->strides[k] < 0 ? -d->strides[k] : d->strides[k]);
    if (!same || (d->nbytes && (size_t)span != d->nbytes)) {
        PyErr_SetString(PyExc_NotImplementedError, "numdyn.cuda: an in-place write into a CUDA "
                        "Tensor whose memory is not dense in the layout of the value (a strided "
                        "view): write into a contiguous Tensor");
        return -1;
    }
    npy_intp lo = 0;   /* a dense buffer with negative strides starts below ptr */
    for (int k = 0; k < d->ndim; k++) if (d->strides[k] < 0) lo += (d->shape[k] - 1) * d->strides[k];
    if (!d->nbytes) return 0;
    if (nd_cu_ready() < 0 || nd_cu_dtod(d->ptr + (nd_cu_ptr)lo, s->ptr + (nd_cu_ptr)lo, d->nbytes) < 0)
        return -1;
    return nd_cu_sync();
}

/* NumPy reruns a graph of given device inputs: they come down to the host
 * for it (the graph's INPUT nodes hold them meanwhile), the results go up */
static PyObject *rerun_given(nd_graph *g, const nd_id *outs, int nout)
{
    PyObject **saved = PyMem_Calloc((size_t)g->n, sizeof(PyObject *));
    if (!saved) return PyErr_NoMemory();
    PyObject *res = NULL, *host = NULL;
    int ok = 1;
    for (nd_id i = 0; i < g->n && ok; i++) {
        if (g->nodes[i].op != ND_OP_INPUT || !given_in[i]) continue;
        PyObject *h = download(&given_in[i]->a);
        if (!h) { ok = 0; break; }
        saved[i] = g->nodes[i].obj;
        g->nodes[i].obj = h;
    }
    if (ok) host = nd_backend_eager_run(g, outs, nout);
    for (nd_id i = 0; i < g->n; i++)
        if (saved[i]) {
            Py_DECREF(g->nodes[i].obj);
            g->nodes[i].obj = saved[i];
        }
    PyMem_Free(saved);
    if (!host) return NULL;
    res = PyList_New(nout);
    for (int k = 0; res && k < nout; k++) {
        PyObject *a = nd_usable_array(PyList_GET_ITEM(host, k), 0);
        dbuf *b = a ? upload((PyArrayObject *)a) : NULL;
        Py_XDECREF(a);
        PyObject *d = devbuf_new(b);
        dbuf_drop(&b);
        if (!d) Py_CLEAR(res);
        else PyList_SET_ITEM(res, k, d);
    }
    Py_DECREF(host);
    return res;
}

/* set by _cuda_run_graph for the one run it starts (a nested run of a
 * host step takes none): results stay on the device and the caller orders
 * their consumers' streams after numdyn's (run_unsynced: it must) */
static int run_async, run_unsynced;

static PyObject *run_program(cprog *cp, nd_graph *g, const nd_id *outs, int nout)
{
    nd_program *p = cp->p;
    run r;
    memset(&r, 0, sizeof r);
    r.g = g;
    r.cp = cp;
    r.n = g->n;
    r.async = run_async && given_in && !nd_nscalar_stores;
    run_async = 0;
    run_unsynced = 0;
    PyObject *res = NULL;
    int rerun = 0, kept = 0;
    if (g->n != p->nnodes) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: internal error: program does not fit the graph");
        return NULL;
    }
    r.host = PyMem_Calloc((size_t)r.n, sizeof(PyObject *));
    r.dev = PyMem_Calloc((size_t)r.n * 2, sizeof(dbuf *));
    int nks = 0;
    for (int t = 0; t < p->nsteps; t++) nks += p->steps[t].kind == ND_S_KERNEL;
    if (nks) {
        int mr = nd_cu_errwords_take((size_t)nks, &r.Eh, &r.E);
        if (mr < 0) goto done;
        r.mapped = mr == 0;
    }
    if (!r.mapped) r.Eh = PyMem_Calloc((size_t)(nks ? nks : 1), sizeof(int));
    /* every kernel step's arguments (a kernel run twice: twice) */
    for (int t = 0; t < p->nsteps; t++)
        if (p->steps[t].kind == ND_S_KERNEL) r.argcap += arg_bytes(&p->kerns[p->steps[t].kern]);
    kept = nks && !cp->busy;   /* the program's own argument arena */
    if (kept && !cp->last) {
        if (!(cp->last = PyMem_Calloc(1, r.argcap))) { PyErr_NoMemory(); goto done; }
        if (nd_cu_alloc(r.argcap, &cp->args) < 0) {
            PyMem_Free(cp->last);
            cp->last = NULL;
            goto done;
        }
        cp->argcap = r.argcap;
        nd_cu_kept_arg_bytes += nd_cu_alloc_size(r.argcap);
    }
    if (kept) {
        cp->busy = 1;
        r.stage = cp->last;
        r.args = cp->args;
        r.img = PyMem_Malloc(r.argcap);
    } else {
        r.stage = PyMem_Malloc(r.argcap ? r.argcap : 16);
    }
    if (!r.host || !r.dev || !r.Eh || !r.stage || (kept && !r.img)) { PyErr_NoMemory(); goto done; }
    if (nks) {
        if ((!r.mapped && (nd_cu_alloc(sizeof(int) * (size_t)nks, &r.E) < 0 ||
                           nd_cu_memset32(r.E, 0, (size_t)nks) < 0)) ||
            (!kept && nd_cu_alloc(r.argcap, &r.args) < 0))
            goto done;
    }
    for (nd_id i = 0; i < r.n; i++) {
        nd_node *nn = &g->nodes[i];
        if (nn->op != ND_OP_INPUT) continue;
        if (given_in && given_in[i]) {
            given_in[i]->refs++;
            r.dev[i] = given_in[i];
            continue;
        }
        if (!nn->obj || !PyArray_Check(nn->obj)) {
            PyErr_SetString(PyExc_TypeError, "numdyn: graph input is not an ndarray");
            goto done;
        }
        if (!(r.host[i] = nd_usable_array(nn->obj, 0))) goto done;
    }
    int kidx = 0;
    for (int t = 0; t < p->nsteps; t++) {
        nd_step *st = &p->steps[t];
        if (st->kind == ND_S_EAGER) {
            int rc = check_errors(&r, kidx);  /* NumPy's order: a kernel's error comes first */
            if (rc < 0) goto done;
            if (rc > 0) { rerun = 1; goto done; }
            if (run_eager_step(&r, st->node) < 0) { nd_failed_node = st->node; goto done; }
        } else if (st->kind == ND_S_BASE) {
            if (run_base(&r, st->node) < 0) goto done;
        } else {
            if (run_kernel(&r, st->kern, kidx++) < 0) goto done;
        }
        for (int32_t f = p->freeat[t]; f < p->freeat[t + 1]; f++) {
            nd_id id = p->freen[f];
            Py_CLEAR(r.host[id]);
            dbuf_drop(&r.dev[id]);
            dbuf_drop(&r.dev[r.n + id]);
        }
    }
    /* host results with mapped error words: the results' download waits
     * for the kernels, and the words are read after it (no wait of their
     * own: nothing is queued after the download's); discarded on a rerun */
    int early = r.mapped && !given_in;
    for (int i = 0; early && i < nout; i++)
        if (!need_host(&r, outs[i])) goto done;
    int rc = check_errors(&r, kidx);
    if (rc < 0) goto done;
    if (rc > 0) { rerun = 1; goto done; }
    if (nd_nscalar_stores) {
        rc = scalar_store_fails(&r);
        if (rc < 0) goto done;
        if (rc > 0) { rerun = 1; goto done; }
    }
    res = PyList_New(nout);
    if (!res) goto done;
    for (int i = 0; i < nout; i++) {
        PyObject *a = given_in ? devbuf_new(need_dev(&r, outs[i])) : need_host(&r, outs[i]);
        if (!a) { Py_CLEAR(res); goto done; }
        PyList_SET_ITEM(res, i, given_in ? a : Py_NewRef(a));
    }
    if (!given_in && nd_outputs_in_order(g, outs, nout, res) < 0) Py_CLEAR(res);
    run_unsynced = r.unsynced;
done:
    if (r.host) for (int i = 0; i < r.n; i++) Py_XDECREF(r.host[i]);
    if (r.dev) for (int i = 0; i < 2 * r.n; i++) dbuf_drop(&r.dev[i]);
    /* freed blocks are reused in stream order; the arena's host image is
     * staged (copied) before each upload returns */
    if (r.mapped) nd_cu_errwords_give((size_t)nks, r.eread == nks);
    else nd_cu_free(r.E), PyMem_Free(r.Eh);
    if (kept) {
        cp->busy = 0;
        PyMem_Free(r.img);
    } else {
        nd_cu_free(r.args);
        PyMem_Free(r.stage);
    }
    nd_cu_free(r.scr);
    PyMem_Free(r.host);
    PyMem_Free(r.dev);
    if (rerun) {
        nd_counter_add(ND_CTR_ERRSTATE_RERUNS, 1);
        log_event("numpy_rerun", g, -1, "a kernel reported a condition NumPy's error state acts on");
        res = given_in ? rerun_given(g, outs, nout) : nd_backend_eager_run(g, outs, nout);
    }
    return res;
}

PyObject *nd_backend_cuda_run(nd_graph *g, const nd_id *outs, int nout, PyObject *options)
{
    (void)options;
    /* donated inputs are the native backend's: copies are ours anyway */
    nd_donated = NULL;
    nd_ndonated = 0;
    nd_failed_node = ND_NONE;
    nd_failed_before = 0;
    if (nd_cu_ready() < 0) return NULL;
    uint64_t key = nd_guard_graph_key(g, outs, nout);
    cprog *cp = pc_get(key);
    if (cp && cp->p->nnodes == g->n) {
        nd_counter_add(ND_CTR_CUDA_GRAPH_CACHE_HITS, 1);
        nd_counter_add(ND_CTR_GRAPH_CACHE_HITS, 1);
    } else {
        int fb = host_fallback_wanted(), unsupported;
        if (fb < 0) return NULL;
        cp = build(g, outs, nout, key, &unsupported);
        if (!cp) {
            /* NotImplementedError names the kernel form without a CUDA version */
            if (!unsupported || !fb) return NULL;
            PyErr_Clear();
            log_event("host_graph", g, -1, "a kernel form has no CUDA version "
                      "(numdyn.config.cuda_host_fallback is set)");
            nd_counter_add(ND_CTR_CUDA_HOST_STEPS, 1);
            return nd_backend_eager_run(g, outs, nout);
        }
    }
    return run_program(cp, g, outs, nout);
}

/* _cuda_run_graph(graph, inputs) -> [DeviceBuffer]: the graph (a
 * numdyn.Graph) on the GPU with device memory for its INPUT nodes: inputs
 * has an entry per INPUT node in node order, None (the node's ndarray goes
 * up) or (pointer, shape, byte strides, dtype number, owner): another
 * library's array, read in place (owner is kept alive while in use).
 * Results stay on the device. */
static PyObject *py_run_graph(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *graph, *inputs, *hand = Py_None;
    if (!PyArg_ParseTuple(args, "OO|O", &graph, &inputs, &hand)) return NULL;
    nd_graph *g;
    const nd_id *outs;
    int nout;
    if (nd_graphpy_parts(graph, &g, &outs, &nout) < 0) return NULL;
    PyObject *seq = PySequence_Fast(inputs, "_cuda_run_graph: a sequence of inputs");
    if (!seq) return NULL;
    if (nd_cu_ready() < 0) { Py_DECREF(seq); return NULL; }
    dbuf **given = PyMem_Calloc((size_t)g->n, sizeof(dbuf *));
    PyObject **swapped = PyMem_Calloc((size_t)g->n, sizeof(PyObject *));
    PyObject *res = NULL;
    if (!given || !swapped) {
        PyMem_Free(given);
        PyMem_Free(swapped);
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    Py_ssize_t k = 0;
    for (nd_id i = 0; i < g->n; i++) {
        if (g->nodes[i].op != ND_OP_INPUT) continue;
        if (k >= PySequence_Fast_GET_SIZE(seq)) {
            PyErr_SetString(PyExc_ValueError, "_cuda_run_graph: fewer inputs than the graph's");
            goto done;
        }
        PyObject *it = PySequence_Fast_GET_ITEM(seq, k++);
        if (it == Py_None) continue;
        if (PyArray_Check(it)) {  /* a host array for this call */
            swapped[i] = g->nodes[i].obj;
            g->nodes[i].obj = Py_NewRef(it);
            continue;
        }
        unsigned long long ptr;
        PyObject *shape, *strides, *owner;
        int dtype;
        if (!PyArg_ParseTuple(it, "KOOiO", &ptr, &shape, &strides, &dtype, &owner)) goto done;
        const nd_node *nn = &g->nodes[i];
        if (PyTuple_Size(shape) != nn->ndim || PyTuple_Size(strides) != nn->ndim || dtype != nn->dtype) {
            PyErr_Format(PyExc_ValueError, "_cuda_run_graph: input %zd does not fit the graph's "
                         "(dtype or rank)", k - 1);
            goto done;
        }
        dbuf *b = PyMem_Calloc(1, sizeof *b);
        if (!b) { PyErr_NoMemory(); goto done; }
        b->refs = 1;
        b->owner = Py_NewRef(owner);
        b->a.ptr = ptr;
        b->a.ndim = nn->ndim;
        b->a.dtype = dtype;
        PyArray_Descr *d = PyArray_DescrFromType(dtype);
        b->a.itemsize = d ? (int)PyDataType_ELSIZE(d) : 1;
        Py_XDECREF(d);
        size_t nel = 1;
        for (int q = 0; q < nn->ndim; q++) {
            b->a.shape[q] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, q));
            b->a.strides[q] = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, q));
            nel *= (size_t)b->a.shape[q];
        }
        b->a.nbytes = nel * (size_t)b->a.itemsize;
        given[i] = b;
        if (PyErr_Occurred()) goto done;
        for (int q = 0; q < nn->ndim; q++)
            if (b->a.shape[q] != nn->shape[q]) {
                PyErr_Format(PyExc_ValueError, "_cuda_run_graph: input %zd has another shape than "
                             "the graph's", k - 1);
                goto done;
            }
    }
    nd_failed_node = ND_NONE;
    uint64_t key = nd_guard_graph_key(g, outs, nout);
    cprog *cp = pc_get(key);
    if (!cp || cp->p->nnodes != g->n) {
        int unsupported;
        cp = build(g, outs, nout, key, &unsupported);
        if (!cp) goto done;
    } else {
        nd_counter_add(ND_CTR_CUDA_GRAPH_CACHE_HITS, 1);
    }
    given_in = given;
    run_async = hand != Py_None;
    res = run_program(cp, g, outs, nout);
    given_in = NULL;
    run_async = 0;
    if (res && run_unsynced) {
        /* no wait: the streams of the arguments' producers wait on the
         * device for numdyn's work so far (their later work -- using the
         * results, writing or freeing the arguments -- comes after it);
         * a stream that cannot wait gets the wait on the host instead */
        PyObject *hs = PySequence_Fast(hand, "_cuda_run_graph: a sequence of stream handles");
        int ok = hs != NULL;
        for (Py_ssize_t q = 0; ok && q < PySequence_Fast_GET_SIZE(hs); q++) {
            unsigned long long h = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(hs, q));
            ok = !(h == (unsigned long long)-1 && PyErr_Occurred()) && nd_cu_order_after((uintptr_t)h) == 0;
        }
        Py_XDECREF(hs);
        if (!ok) {   /* the results are complete before the error is raised */
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            if (nd_cu_sync() < 0) {   /* the driver's error instead */
                Py_XDECREF(et);
                Py_XDECREF(ev);
                Py_XDECREF(tb);
            } else {
                PyErr_Restore(et, ev, tb);
            }
            Py_CLEAR(res);
        }
        run_unsynced = 0;
    }
done:
    for (nd_id i = 0; i < g->n; i++) {
        dbuf_drop(&given[i]);
        if (swapped[i]) {
            Py_DECREF(g->nodes[i].obj);
            g->nodes[i].obj = swapped[i];
        }
    }
    PyMem_Free(given);
    PyMem_Free(swapped);
    Py_DECREF(seq);
    return res;
}

/* _cuda_graph_set_input(graph, k, array): the k-th INPUT node of graph
 * holds array instead (same dtype and shape): a graph kept to run on
 * device inputs need not keep the host copy it was captured from */
static PyObject *py_graph_set_input(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *graph, *arr;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "OnO!", &graph, &k, &PyArray_Type, &arr)) return NULL;
    nd_graph *g;
    const nd_id *outs;
    int nout;
    if (nd_graphpy_parts(graph, &g, &outs, &nout) < 0) return NULL;
    Py_ssize_t seen = 0;
    for (nd_id i = 0; i < g->n; i++) {
        nd_node *nn = &g->nodes[i];
        if (nn->op != ND_OP_INPUT || seen++ != k) continue;
        PyArrayObject *a = (PyArrayObject *)arr;
        int same = nn->obj && PyArray_Check(nn->obj) && PyArray_NDIM(a) == nn->ndim &&
                   PyArray_TYPE(a) == nn->dtype;
        for (int d = 0; same && d < nn->ndim; d++) same = PyArray_DIM(a, d) == nn->shape[d];
        if (!same) {
            PyErr_SetString(PyExc_ValueError, "_cuda_graph_set_input: another dtype or shape");
            return NULL;
        }
        Py_SETREF(nn->obj, Py_NewRef(arr));
        Py_RETURN_NONE;
    }
    PyErr_SetString(PyExc_IndexError, "_cuda_graph_set_input: no such input");
    return NULL;
}

/* _cuda_view(buf, byte offset, shape, byte strides[, dtype number]) ->
 * DeviceBuffer: a view into buf's memory (bounds checked), holding buf's
 * memory; of another dtype where given (x.real of a complex x) */
static PyObject *py_view(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *bo, *shape, *strides;
    Py_ssize_t off;
    int dtype = -1;
    if (!PyArg_ParseTuple(args, "O!nO!O!|i", &DevBuf_Type, &bo, &off, &PyTuple_Type, &shape,
                          &PyTuple_Type, &strides, &dtype))
        return NULL;
    PyArray_Descr *d = dtype >= 0 ? PyArray_DescrFromType(dtype) : NULL;
    if (dtype >= 0 && !d) return NULL;
    int itemsize = d ? (int)PyDataType_ELSIZE(d) : 0;
    Py_XDECREF(d);
    dbuf *b = ((DevBuf *)bo)->b;
    int nd = (int)PyTuple_GET_SIZE(shape);
    if (nd != PyTuple_GET_SIZE(strides) || nd > ND_MAXDIMS) {
        PyErr_SetString(PyExc_ValueError, "_cuda_view: shape and strides of one rank");
        return NULL;
    }
    dbuf *v = PyMem_Calloc(1, sizeof *v);
    if (!v) return PyErr_NoMemory();
    v->a = b->a;
    v->a.ndim = nd;
    if (dtype >= 0) {
        v->a.dtype = dtype;
        v->a.itemsize = itemsize;
    }
    npy_intp lo = off, hi = off, nel = 1;
    for (int k = 0; k < nd; k++) {
        v->a.shape[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k));
        v->a.strides[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, k));
        nel *= v->a.shape[k];
        if (v->a.shape[k] > 0) {
            npy_intp e = (v->a.shape[k] - 1) * v->a.strides[k];
            if (e < 0) lo += e; else hi += e;
        }
    }
    if (PyErr_Occurred() || (nel && (lo < 0 || hi + v->a.itemsize > (npy_intp)b->a.nbytes))) {
        PyMem_Free(v);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "_cuda_view: outside the buffer");
        return NULL;
    }
    v->a.ptr = b->a.ptr + (nd_cu_ptr)off;
    v->a.nbytes = (size_t)nel * (size_t)v->a.itemsize;
    v->refs = 0;
    v->base = b;
    b->refs++;
    PyObject *r = devbuf_new(v);   /* refs 1 */
    if (!r) dbuf_drop(&v->base), PyMem_Free(v);
    return r;
}

/* _cuda_copy_into(pointer, ndarray): the array's bytes from device memory
 * (another library's dense array of the same layout); waits for the whole
 * device first, so work other streams queued on it has finished */
static PyObject *py_copy_into(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long ptr;
    PyArrayObject *a;
    if (!PyArg_ParseTuple(args, "KO!", &ptr, &PyArray_Type, &a)) return NULL;
    if (!PyArray_IS_C_CONTIGUOUS(a) && !PyArray_IS_F_CONTIGUOUS(a)) {
        PyErr_SetString(PyExc_ValueError, "_cuda_copy_into: a dense array");
        return NULL;
    }
    if (nd_cu_ready() < 0 || nd_cu_sync_device() < 0) return NULL;
    size_t nb = (size_t)PyArray_NBYTES(a);
    if (nb && nd_cu_dtoh(PyArray_DATA(a), ptr, nb) < 0) return NULL;
    Py_RETURN_NONE;
}

/* _cuda_wait_stream(handle): numdyn's stream waits for that stream's work */
static PyObject *py_wait_stream(PyObject *self, PyObject *arg)
{
    (void)self;
    unsigned long long s = PyLong_AsUnsignedLongLong(arg);
    if (s == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    if (nd_cu_wait_stream((uintptr_t)s) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_sync_device(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    if (nd_cu_ready() < 0 || nd_cu_sync_device() < 0) return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------ _C functions */
static PyObject *py_device_enter(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    if (nd_cu_ready() < 0) return NULL;
    nd_cuda_device_depth++;
    Py_RETURN_NONE;
}

static PyObject *py_device_exit(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    if (nd_cuda_device_depth > 0) nd_cuda_device_depth--;
    Py_RETURN_NONE;
}

static PyObject *py_device_swap(PyObject *self, PyObject *arg)
{
    (void)self;
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred()) return NULL;
    int was = nd_cuda_device_depth;
    nd_cuda_device_depth = v > 0 ? (int)v : 0;
    return PyLong_FromLong(was);
}

static PyObject *py_device_active(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    return PyBool_FromLong(nd_cuda_device_depth > 0);
}

/* _cuda_log(on) -> the events logged since it was turned on (list), or None */
static PyObject *py_log(PyObject *self, PyObject *arg)
{
    (void)self;
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    PyObject *was = gpu_log ? gpu_log : Py_NewRef(Py_None);
    gpu_log = NULL;
    if (on && !(gpu_log = PyList_New(0))) { Py_DECREF(was); return NULL; }
    return was;
}

static PyObject *py_clear(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    pc_clear();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"_cuda_device_enter", py_device_enter, METH_NOARGS, "numdyn.device('cuda') entered"},
    {"_cuda_device_exit", py_device_exit, METH_NOARGS, "numdyn.device('cuda') left"},
    {"_cuda_device_swap", py_device_swap, METH_O, "set the device depth; the old one"},
    {"_cuda_device_active", py_device_active, METH_NOARGS, "inside numdyn.device('cuda')"},
    {"_cuda_log", py_log, METH_O, "log GPU runs (explain): the events so far"},
    {"_cuda_clear_programs", py_clear, METH_NOARGS, "drop the GPU program cache"},
    {"_cuda_run_graph", py_run_graph, METH_VARARGS, "run a Graph on device inputs; DeviceBuffers"},
    {"_cuda_copy_into", py_copy_into, METH_VARARGS, "device bytes into an ndarray"},
    {"_cuda_view", py_view, METH_VARARGS, "a view into a DeviceBuffer"},
    {"_cuda_graph_set_input", py_graph_set_input, METH_VARARGS, "replace a graph input's array"},
    {"_cuda_sync_device", py_sync_device, METH_NOARGS, "wait for every stream of the device"},
    {"_cuda_wait_stream", py_wait_stream, METH_O, "numdyn's stream waits for another stream"},
    {NULL, NULL, 0, NULL},
};

int nd_cuda_backend_init(PyObject *module)
{
    if (PyType_Ready(&DevBuf_Type) < 0 || PyModule_AddObjectRef(module, "CudaDeviceBuffer",
                                                                (PyObject *)&DevBuf_Type) < 0)
        return -1;
    return PyModule_AddFunctions(module, methods);
}
