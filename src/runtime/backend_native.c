/* backend_native.c -- the native CPU backend's entry point:
 * graph -> (program cache) -> schedule -> codegen -> (kernel caches) ->
 * compile -> run.
 *
 * A graph-cache hit goes straight to the runtime: one hash of the graph,
 * one table lookup, then the kernels; no Python objects are made beyond
 * the outputs.
 */
#include "core/npy.h"
#include "native.h"
#include "backend.h"
#include "par.h"
#include "floor.h"
#include "guards/guards.h"
#include <dlfcn.h>

_Thread_local int nd_backend_frozen;

/* numdyn.config.background_compile (default on; NUMDYN_BACKGROUND_COMPILE=0
 * turns it off): kernels not in the cache compile in the background; a call
 * waits for them within its budget (nd_disk_budget), NumPy runs the graphs
 * still compiling after that, and a graph runs compiled from the call that
 * finds its kernels built */
static int background_compile = -1;

static int background(void)
{
    if (background_compile < 0) {
        const char *e = getenv("NUMDYN_BACKGROUND_COMPILE");
        background_compile = !(e && strcmp(e, "0") == 0);
    }
    return background_compile;
}

int nd_backend_background(void) { return background(); }

/* Graphs found still compiling in the background, with the compile
 * progress (nd_disk_progress) at that moment: until a compile ends, such a
 * graph asked again by a call whose budget is spent runs with NumPy at
 * once, without scheduling, generating C or asking the disk (a loop of
 * small graphs made thousands of such requests per call, each costing more
 * than the NumPy run). Open addressing; emptied when full. */
#define ND_PEND_CAP 4096
static struct { uint64_t key, stamp; } pend[ND_PEND_CAP];
static int npend;

static int pend_find(uint64_t key)
{
    for (int i = (int)(key % ND_PEND_CAP), n = 0; n < ND_PEND_CAP; i = (i + 1) % ND_PEND_CAP, n++) {
        if (pend[i].key == key) return i;
        if (!pend[i].key) return -1;
    }
    return -1;
}

static void pend_note(uint64_t key, uint64_t stamp)
{
    if (!key) key = 1;
    int i = pend_find(key);
    if (i < 0) {
        if (npend >= ND_PEND_CAP / 2) { memset(pend, 0, sizeof pend); npend = 0; }
        for (i = (int)(key % ND_PEND_CAP); pend[i].key; i = (i + 1) % ND_PEND_CAP) {}
        pend[i].key = key;
        npend++;
    }
    pend[i].stamp = stamp;
}

/* 1 when the graph of key is known to be still compiling and this call may
 * not wait for it */
static int pend_still(uint64_t key)
{
    if (!npend || nd_disk_budget_left() > 0) return 0;
    int i = pend_find(key ? key : 1);
    return i >= 0 && pend[i].stamp == nd_disk_progress();
}

/* a kernel's symbol, and the hash of its whole text (the disk cache's
 * kernel index: the same text means the same kernel in any unit -- kernel
 * texts define one function each, nothing the next kernel of a unit could
 * see) */
static void kernel_sym(char name[40], const nd_kernel *k)
{
    snprintf(name, 40, "ndk_%016llx", (unsigned long long)k->hash);
}

static uint64_t kernel_key(const nd_sb *text, uint64_t ident)
{
    return nd_fnv64(text->p, text->n, ND_FNV_INIT ^ ident);
}

/* Batched compiles: the kernels of todo[0..nnew) the disk cache's index
 * holds registered from the units holding them, the rest left first in
 * todo: their number, or -1 with an exception. Only those are then grouped
 * into units -- a unit with one kernel not cached compiled all its kernels
 * again (the fuzz harness's 32-program batches after 4-program replays of
 * the same programs: 15.4 s CPU where 8.8 s compile the batch alone). */
static int take_indexed(nd_program *p, nd_kernel **todo, int nnew, nd_sb *texts)
{
    char (*names)[40] = PyMem_Calloc((size_t)nnew, sizeof *names);
    const char **syms = PyMem_Calloc((size_t)nnew, sizeof *syms);
    uint64_t *kkeys = PyMem_Calloc((size_t)nnew, sizeof *kkeys);
    void **addrs = PyMem_Calloc((size_t)nnew, sizeof *addrs);
    int rc = -1, left = 0;
    if (!names || !syms || !kkeys || !addrs) {
        PyErr_NoMemory();
        goto done;
    }
    uint64_t ident = nd_cc_identity();
    for (int j = 0; j < nnew; j++) {
        kernel_sym(names[j], todo[j]);
        syms[j] = names[j];
        kkeys[j] = kernel_key(&texts[todo[j] - p->kerns], ident);
    }
    if (nd_disk_load_indexed(nnew, kkeys, syms, addrs) < 0) goto done;
    for (int j = 0; j < nnew; j++) {
        if (!addrs[j]) todo[left++] = todo[j];
        else if (nd_kcache_put(todo[j]->hash, (nd_kfn)addrs[j]) < 0) goto done;
    }
    rc = left;
done:
    PyMem_Free(names); PyMem_Free(syms); PyMem_Free(kkeys); PyMem_Free(addrs);
    return rc;
}

/* The kernels todo[0..nnew) of p, compiled: split into up to nd_cc_jobs()
 * translation units of about equal text (a program of 19 kernels waited
 * for one compiler process; now the cores share it), each unit cached on
 * disk under the hash of its text. 0, 1 when a unit is not on disk and
 * frozen (nd_backend_frozen) or still compiling in the background, or -1
 * with an exception. */
static int compile_units(nd_program *p, nd_kernel **todo, int nnew, nd_sb *texts)
{
    if (!nd_backend_frozen && !background() && nnew > 1) {
        /* units of several kernels: compile only the kernels not cached
         * (a unit a kernel, in the background, is found by its own text) */
        if ((nnew = take_indexed(p, todo, nnew, texts)) <= 0) return nnew;
    }
    int nu = nd_cc_jobs();
    /* a unit pays the compiler's start-up and the header: not for tiny ones */
    size_t total = 0;
    for (int j = 0; j < nnew; j++) total += texts[todo[j] - p->kerns].n;
    if ((size_t)nu > total / ND_UNIT_TEXT + 1) nu = (int)(total / ND_UNIT_TEXT + 1);
    /* in the background, one unit a kernel: its text, so its build, is the
     * same whichever program asks for it next (units of several kernels
     * changed with what the kernel cache held: other programs' builds made
     * new units, and compiles of units nobody would load again); the disk
     * cache compiles the units asked for at once in a few compiler runs
     * (cache_disk.c, bg_start_merged) */
    if (!nd_backend_frozen && background()) nu = nnew;
    if (nu > nnew) nu = nnew;
    if (nu < 1) nu = 1;
    int *unit_of = PyMem_Calloc((size_t)nnew, sizeof(int));
    size_t *load = PyMem_Calloc((size_t)nu, sizeof(size_t));
    nd_sb *src = PyMem_Calloc((size_t)nu, sizeof(nd_sb));
    nd_disk_unit *units = PyMem_Calloc((size_t)nu, sizeof(nd_disk_unit));
    void **h = PyMem_Calloc((size_t)nu, sizeof(void *));
    int *compiled = PyMem_Calloc((size_t)nu, sizeof(int));
    char (*names)[40] = PyMem_Calloc((size_t)nnew, sizeof *names);
    const char **syms = PyMem_Calloc((size_t)nnew, sizeof *syms);
    /* per symbol (unit order): its kernel text's hash (the disk cache's
     * kernel index) and its address once loaded; sym_of: kernel -> symbol */
    uint64_t *kkeys = PyMem_Calloc((size_t)nnew, sizeof *kkeys);
    void **addrs = PyMem_Calloc((size_t)nnew, sizeof *addrs);
    int *sym_of = PyMem_Calloc((size_t)nnew, sizeof *sym_of);
    int rc = -1;
    if (!unit_of || !load || !src || !units || !h || !compiled || !names || !syms || !kkeys ||
        !addrs || !sym_of) {
        PyErr_NoMemory();
        goto done;
    }
    /* greedy by text size: each kernel to the lightest unit (kernels in
     * program order, so one program's units stay the same across runs) */
    for (int j = 0; j < nnew; j++) {
        int u = 0;
        for (int v = 1; v < nu; v++) if (load[v] < load[u]) u = v;
        unit_of[j] = u;
        load[u] += texts[todo[j] - p->kerns].n;
        kernel_sym(names[j], todo[j]);
    }
    uint64_t ident = nd_cc_identity();
    int ns = 0;
    for (int u = 0; u < nu; u++) {
        nd_sb_init(&src[u]);
        nd_sb_puts(&src[u], ND_UNIT_PRELUDE);
        units[u].syms = syms + ns;
        units[u].kkeys = kkeys + ns;
        units[u].addrs = addrs + ns;
        for (int j = 0; j < nnew; j++) {
            if (unit_of[j] != u) continue;
            const nd_sb *t = &texts[todo[j] - p->kerns];
            nd_sb_puts(&src[u], "\n");
            nd_sb_puts(&src[u], t->p);
            kkeys[ns] = kernel_key(t, ident);
            sym_of[j] = ns;
            syms[ns++] = names[j];
            units[u].nsyms++;
        }
        if (nd_sb_check(&src[u]) < 0) goto done;
        units[u].src = src[u].p;
        units[u].len = src[u].n;
        units[u].key = nd_fnv64(src[u].p, src[u].n, ND_FNV_INIT ^ ident);
        units[u].compiled = &compiled[u];
    }
    nd_disk_load_only = nd_backend_frozen;
    nd_disk_background = !nd_backend_frozen && background();
    int lrc = nd_disk_load_or_build_many(nu, units, h);
    nd_disk_load_only = nd_disk_background = 0;
    if (lrc < 0) goto done;
    /* a unit frozen out or still compiling: none of the program's kernels
     * is registered yet, so the next call asks for the same units (the
     * same texts, found compiling or built) -- registering the ready ones
     * split what was left into new units each call, new compiles every time */
    int missing = 0;
    for (int u = 0; u < nu; u++) missing |= !h[u];
    for (int j = 0; j < nnew; j++) {
        if (compiled[unit_of[j]] && missing) nd_counter_add(ND_CTR_KERNELS_COMPILED, 1);
        if (missing) continue;
        nd_kfn fn = (nd_kfn)addrs[sym_of[j]];
        if (!fn) {
            PyErr_Format(PyExc_RuntimeError, "numdyn: compiled unit lacks %s", names[j]);
            goto done;
        }
        if (nd_kcache_put(todo[j]->hash, fn) < 0) goto done;
        if (compiled[unit_of[j]]) nd_counter_add(ND_CTR_KERNELS_COMPILED, 1);
    }
    rc = missing;
done:
    if (src) for (int u = 0; u < nu; u++) nd_sb_free(&src[u]);
    PyMem_Free(unit_of); PyMem_Free(load); PyMem_Free(src); PyMem_Free(units);
    PyMem_Free(h); PyMem_Free(compiled); PyMem_Free(names); PyMem_Free(syms);
    PyMem_Free(kkeys); PyMem_Free(addrs); PyMem_Free(sym_of);
    return rc;
}

static int compile_program(nd_program *p, nd_graph *g)
{
    int nk = p->nkern, nnew = 0;
    nd_kernel **todo = NULL;
    nd_sb *texts = NULL;
    int rc = -1;
    if (nk == 0) return 0;
    todo = PyMem_Calloc((size_t)nk, sizeof(nd_kernel *));
    texts = PyMem_Calloc((size_t)nk, sizeof(nd_sb));
    if (!todo || !texts) { PyErr_NoMemory(); goto done; }
    for (int i = 0; i < nk; i++) {
        nd_kernel *k = &p->kerns[i];
        nd_sb_init(&texts[i]);
        /* a kernel whose structure was seen (the next iteration of a long
         * recorded loop) gets its name without its text (codegen_memo.c);
         * the text is made only when it must be compiled */
        nd_cg_memo m;
        int known = nd_cg_memo_lookup(g, k, &m);
        if (known < 0) goto done;
        nd_kfn fn = known ? nd_kcache_get(k->hash) : NULL;
        int dup = 0;
        for (int j = 0; known && !fn && j < nnew; j++) if (todo[j]->hash == k->hash) dup = 1;
        if ((!fn && !dup) || (known && nd_debug_checks())) {
            uint64_t memo_name = k->hash;
            if (nd_cg_kernel(g, k, &texts[i]) < 0) { nd_cg_memo_free(&m); goto done; }
            /* NUMDYN_DEBUG's check of a known name is not a text needed */
            if (!known || (!fn && !dup)) nd_counter_add(ND_CTR_KERNEL_TEXTS, 1);
            if (known && k->hash != memo_name && nd_debug_checks()) {
                /* the memo's key missed something the text depends on: where
                 * the named kernel was compiled already nothing would have
                 * noticed (NUMDYN_DEBUG makes every hit's text to catch it) */
                nd_cg_memo_free(&m);
                PyErr_SetString(PyExc_SystemError,
                                "numdyn: internal error: a kernel's structural key named "
                                "another kernel's code");
                goto done;
            }
            /* the text decides: its name (k->hash) is what runs */
            if (!known) nd_cg_memo_store(&m, k);
            fn = nd_kcache_get(k->hash);
            for (int j = 0; !fn && j < nnew; j++) if (todo[j]->hash == k->hash) dup = 1;
        }
        nd_cg_memo_free(&m);
        if (fn) {
            k->fn = fn;
            nd_counter_add(ND_CTR_KERNEL_CACHE_HITS, 1);
            continue;
        }
        /* the same kernel twice in one program: compile it once */
        if (!dup) todo[nnew++] = k;
    }
    if (nnew) {
        int crc = compile_units(p, todo, nnew, texts);
        if (crc < 0) goto done;
        if (crc > 0) { rc = -2; goto done; }  /* frozen: the caller runs it eagerly */
    }
    for (int i = 0; i < nk; i++) {
        nd_kernel *k = &p->kerns[i];
        if (!k->fn) k->fn = nd_kcache_get(k->hash);
        if (!k->fn) {
            PyErr_SetString(PyExc_RuntimeError, "numdyn: internal error: kernel not compiled");
            goto done;
        }
    }
    rc = nnew;
done:
    if (texts) for (int i = 0; i < nk; i++) nd_sb_free(&texts[i]);
    PyMem_Free(texts);
    PyMem_Free(todo);
    return rc;
}

int nd_native_all_variants(nd_program *p, nd_graph *g, nd_kernel *k)
{
    int i = (int)(k - p->kerns), rc = -1;
    uint64_t lite = k->hash;
    nd_kfn fn = NULL;
    nd_sb *texts = PyMem_Calloc((size_t)p->nkern, sizeof(nd_sb));
    if (!texts) { PyErr_NoMemory(); return -1; }
    for (int j = 0; j < p->nkern; j++) nd_sb_init(&texts[j]);
    nd_cg_all_variants = 1;
    int cg = nd_cg_kernel(g, k, &texts[i]);
    nd_cg_all_variants = 0;
    if (cg < 0 || nd_sb_check(&texts[i]) < 0) goto done;
    fn = nd_kcache_get(k->hash);
    if (!fn) {
        /* waited for: the call needs it now (in the background NumPy would
         * run every such call until it is built) */
        int bg = background_compile;
        background_compile = 0;
        nd_kernel *todo = k;
        int crc = compile_units(p, &todo, 1, texts);
        background_compile = bg;
        if (crc != 0) { rc = crc; goto done; }
        fn = nd_kcache_get(k->hash);
        if (!fn) {
            PyErr_SetString(PyExc_RuntimeError, "numdyn: internal error: kernel not compiled");
            goto done;
        }
    }
    k->fn = fn;
    nd_counter_add(ND_CTR_KERNEL_VARIANTS, 1);
    rc = 0;
done:
    if (rc) k->hash = lite;
    for (int j = 0; j < p->nkern; j++) nd_sb_free(&texts[j]);
    PyMem_Free(texts);
    return rc;
}

_Thread_local uint64_t nd_graph_key_hint;

/* the sizes g's key holds constant, for codegen (codegen.h,
 * nd_cg_static_sizes): the static dims of its INPUT arrays, as
 * nd_guard_graph_key keys them. Sets the thread's table; 0 / -1. */
static int static_sizes(nd_graph *g, npy_intp **tab)
{
    *tab = NULL;
    nd_cg_nstatic = 0;
    nd_cg_static_sizes = NULL;
    if (!nd_marks_live && !nd_marks_spec_all) return 0;
    int n = 0, cap = 0;
    for (nd_id i = 0; i < g->n; i++) {
        nd_node *x = &g->nodes[i];
        if (x->op != ND_OP_INPUT || !x->obj || !PyArray_Check(x->obj)) continue;
        uint64_t m = nd_marks_static_dims(x->obj, nd_marks_spec_all);
        for (int d = 0; d < x->ndim && d < 64; d++) {
            if (!(m >> d & 1)) continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 16;
                npy_intp *nt = PyMem_Realloc(*tab, sizeof(npy_intp) * (size_t)cap);
                if (!nt) { PyMem_Free(*tab); *tab = NULL; PyErr_NoMemory(); return -1; }
                *tab = nt;
            }
            (*tab)[n++] = x->shape[d];
        }
    }
    nd_cg_static_sizes = *tab;
    nd_cg_nstatic = n;
    return 0;
}

static PyObject *native_run(nd_graph *g, const nd_id *outs, int nout, PyObject *options);

static _Thread_local npy_intp *static_tab;  /* owned by the running call */

PyObject *nd_backend_native_run(nd_graph *g, const nd_id *outs, int nout, PyObject *options)
{
    if (!nd_marks_live && !nd_marks_spec_all) return native_run(g, outs, nout, options);
    npy_intp *outer = static_tab;  /* a nested run (an extern's own graph) */
    const npy_intp *osz = nd_cg_static_sizes;
    int on = nd_cg_nstatic;
    static_tab = NULL;
    PyObject *r = native_run(g, outs, nout, options);
    PyMem_Free(static_tab);
    static_tab = outer;
    nd_cg_static_sizes = osz;
    nd_cg_nstatic = on;
    return r;
}

static PyObject *native_run(nd_graph *g, const nd_id *outs, int nout, PyObject *options)
{
    (void)options;
    nd_failed_node = ND_NONE;  /* a failure before any operation ran is no node's */
    nd_failed_before = 0;
    uint64_t key = nd_graph_key_hint;
    nd_graph_key_hint = 0;
    if (!key) {
        key = nd_guard_graph_key(g, outs, nout);
        nd_counter_add(ND_CTR_KEY_NODES, g->n);
    }
    nd_program *p = nd_pcache_get(key);
    if (p && p->nnodes == g->n) {
        nd_counter_add(ND_CTR_GRAPH_CACHE_HITS, 1);
        p->refcnt++;
        PyObject *r = nd_run_program(p, g, outs, nout);
        nd_program_decref(p);
        return r;
    }
    int avail = nd_cc_available();
    if (avail < 0) return NULL;
    if (!avail) return nd_backend_eager_run(g, outs, nout);
    int bgmode = !nd_backend_frozen && background();
    if (bgmode && pend_still(key)) {
        nd_counter_add(ND_CTR_COMPILING_RUNS, 1);
        return nd_backend_eager_run(g, outs, nout);
    }
    if ((nd_marks_live || nd_marks_spec_all) && static_sizes(g, &static_tab) < 0) return NULL;
    p = nd_schedule(g, outs, nout);
    if (!p) return NULL;
    if (nd_debug_checks() && (nd_graph_verify(g, outs, nout, "scheduling") < 0 ||
                              nd_program_verify(p, g) < 0)) {
        nd_program_decref(p);
        return NULL;
    }
    p->key = key;
    /* the compile count before this request's compiles start: one that ends
     * at once (a failing compiler) must not be counted in the stamp, or the
     * graph would look still compiling until some other compile ended, and
     * its CompileError would never be raised */
    uint64_t stamp = bgmode ? nd_disk_progress() : 0;
    if (nd_debug_wanted()) nd_debug_compiles_begin();
    int nnew = compile_program(p, g);
    if (nnew == -2) {  /* frozen mode, or compiling in the background: NumPy runs it */
        if (bgmode && nd_debug_wanted()) nd_debug_program(g, outs, nout, p, -1);
        nd_program_decref(p);
        if (bgmode) pend_note(key, stamp);
        if (!nd_backend_frozen) nd_counter_add(ND_CTR_COMPILING_RUNS, 1);
        return nd_backend_eager_run(g, outs, nout);
    }
    if (nnew < 0) {
        if (nd_debug_wanted()) nd_debug_program(g, outs, nout, p, -3);  /* keeps the CompileError */
        nd_program_decref(p);
        if (nd_repro_mode() == 1 && PyErr_ExceptionMatches(nd_CompileError))
            nd_repro_report(g, outs, nout, NULL);
        return NULL;
    }
    if (nd_debug_wanted()) nd_debug_program(g, outs, nout, p, nnew);
    if (nnew > 0 && nd_pcache_note_skeleton(nd_guard_skeleton(g, outs, nout), key))
        nd_counter_add(ND_CTR_RECOMPILES, 1);
    else if (nnew == 0)
        (void)nd_pcache_note_skeleton(nd_guard_skeleton(g, outs, nout), key);
    if (nd_pcache_put(key, p) < 0) { nd_program_decref(p); return NULL; }
    PyObject *r = nd_run_program(p, g, outs, nout);
    nd_program_decref(p);
    if (r && nd_repro_mode() == 2) nd_repro_report(g, outs, nout, r);  /* checks, minifies */
    return r;
}

/* ------------------------------------------------------- _C functions */
static PyObject *py_counters(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    return nd_counters_dict();
}

static PyObject *py_counters_reset(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    nd_counters_reset();
    Py_RETURN_NONE;
}

static PyObject *py_clear_cache(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"disk", NULL};
    int disk = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|p", kwlist, &disk)) return NULL;
    nd_mcache_clear();
    nd_pool_clear();
    if (disk && nd_disk_clear() < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_background_compile(PyObject *self, PyObject *args)
{
    (void)self;
    int on = -1;
    if (!PyArg_ParseTuple(args, "|p", &on)) return NULL;
    int was = background();
    if (on >= 0) background_compile = on;
    return PyBool_FromLong(was);
}

static PyObject *py_wait_compiles(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    if (nd_disk_wait_all() < 0) return NULL;
    return PyLong_FromLong(nd_disk_pending());
}

static PyObject *py_compile_budget(PyObject *self, PyObject *args)
{
    (void)self;
    double s = -1;
    if (!PyArg_ParseTuple(args, "|d", &s)) return NULL;
    double was = nd_disk_budget();
    if (s == s && s >= 0) nd_disk_set_budget(s);
    else if (PyTuple_GET_SIZE(args)) {
        PyErr_SetString(PyExc_ValueError, "numdyn.config.compile_budget must be a number of "
                        "seconds >= 0");
        return NULL;
    }
    return PyFloat_FromDouble(was);
}

static PyObject *py_cache_dir(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    const char *d = nd_disk_dir();
    return d ? PyUnicode_DecodeFSDefault(d) : NULL;
}

static PyMethodDef methods[] = {
    {"_native_counters", py_counters, METH_NOARGS, "Live counters of the runtime (dict)."},
    {"_native_counters_reset", py_counters_reset, METH_NOARGS, "Zero the counters."},
    {"_native_clear_cache", (PyCFunction)(void (*)(void))py_clear_cache, METH_VARARGS | METH_KEYWORDS,
     "Drop the in-memory kernel/graph caches and (disk=True) the on-disk kernel cache."},
    {"_native_cache_dir", py_cache_dir, METH_NOARGS, "The (checked) kernel cache directory."},
    {"_background_compile", py_background_compile, METH_VARARGS,
     "_background_compile([on]) -> the setting before (numdyn.config.background_compile)."},
    {"_compile_budget", py_compile_budget, METH_VARARGS,
     "_compile_budget([seconds]) -> the setting before (numdyn.config.compile_budget)."},
    {"_wait_compiles", py_wait_compiles, METH_NOARGS,
     "Wait until every background compiler ended; their kernels load on next use."},
    {NULL, NULL, 0, NULL},
};

int nd_native_init(PyObject *module)
{
    nd_omp_defaults(1);
    nd_schedule_set_emitter(&nd_cg_emit_caps);
    nd_CompileError = PyErr_NewExceptionWithDoc(
        "numdyn._C.CompileError",
        "The C compiler failed on generated code; the message holds the compiler's output "
        "and the path of the generated source.", PyExc_RuntimeError, NULL);
    if (!nd_CompileError) return -1;
    if (PyModule_AddObjectRef(module, "CompileError", nd_CompileError) < 0) return -1;
    if (nd_par_init(module) < 0 || nd_floor_init(module) < 0) return -1;
    return PyModule_AddFunctions(module, methods);
}
