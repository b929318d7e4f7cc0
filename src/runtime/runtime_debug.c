/* runtime_debug.c -- what the native backend shows of a program it
 * compiles: NUMDYN_DEBUG_DIR artifacts and NUMDYN_LOGS=output_code
 * (backend.h, "debugging"). Only programs the backend schedules (graph
 * cache misses) are shown; a hit shows nothing new. */
#include "core/npy.h"
#include "native.h"
#include "backend.h"
#include "graph/graph_py.h"
#include "toolchain/toolchain.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

_Thread_local const char *nd_debug_tag;
void (*nd_backend_log)(const char *kind, PyObject *msg);
int nd_backend_log_code;

static const char *debug_dir(void)
{
    const char *d = getenv("NUMDYN_DEBUG_DIR");
    return d && *d ? d : NULL;
}

int nd_debug_wanted(void)
{
    return debug_dir() || (nd_backend_log_code && nd_backend_log);
}

/* mkdir -p (0700): 0, or -1 with errno */
static int mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int r = mkdir(path, 0700);
        *p = '/';
        if (r < 0 && errno != EEXIST) return -1;
    }
    return mkdir(path, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

static int write_file(const char *dir, const char *name, const char *text, size_t n)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) { errno = ENAMETOOLONG; return -1; }
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    size_t w = fwrite(text, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static const char *kkind(int k)
{
    static const char *n[] = {"pointwise", "reduce", "scan", "region", "row"};
    return k >= 0 && k < 5 ? n[k] : "?";
}

static void schedule_text(nd_graph *g, nd_program *p, nd_sb *sb)
{
    char line[256];
    snprintf(line, sizeof line, "# program %016llx: %d steps, %d kernels (fused), over %d graph nodes\n",
             (unsigned long long)p->key, p->nsteps, p->nkern, (int)p->nnodes);
    nd_sb_puts(sb, line);
    for (int s = 0; s < p->nsteps; s++) {
        const nd_step *st = &p->steps[s];
        if (st->kind == ND_S_KERNEL) {
            const nd_kernel *k = &p->kerns[st->kern];
            snprintf(line, sizeof line, "step %d: kernel %d (%s, rank %d, ndk_%016llx) root %%%d, domain %%%d; reads",
                     s, st->kern, kkind(k->kind), k->rank, (unsigned long long)k->hash, (int)k->root,
                     (int)k->dom);
            nd_sb_puts(sb, line);
            for (int i = 0; i < k->nin; i++) {
                snprintf(line, sizeof line, " %%%d", (int)k->ops[i].buf);
                nd_sb_puts(sb, line);
            }
            nd_sb_puts(sb, "; writes");
            for (int i = 0; i < k->nout; i++) {
                snprintf(line, sizeof line, " %%%d", (int)k->oval[i]);
                nd_sb_puts(sb, line);
            }
            nd_sb_puts(sb, "\n");
        } else {
            snprintf(line, sizeof line, "step %d: %s %%%d (%s)\n", s,
                     st->kind == ND_S_EAGER ? "NumPy" : "base of", (int)st->node,
                     nd_op_name(g->nodes[st->node].op));
            nd_sb_puts(sb, line);
        }
    }
}

static _Thread_local nd_sb compiles_log;
static _Thread_local int compiles_logging;

void nd_debug_compiles_begin(void)
{
    if (compiles_logging) nd_sb_free(&compiles_log);
    nd_sb_init(&compiles_log);
    compiles_logging = 1;
    nd_cc_log = &compiles_log;
}

void nd_debug_program(nd_graph *g, const nd_id *outs, int nout, nd_program *p, int nnew)
{
    /* the compiles' log ends here whatever is written */
    nd_cc_log = NULL;
    if (!nd_debug_wanted()) {
        if (compiles_logging) nd_sb_free(&compiles_log);
        compiles_logging = 0;
        return;
    }
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    const char *root = debug_dir();
    char dir[4096];
    int ok = 1;
    if (root) {
        if (snprintf(dir, sizeof dir, "%s/%s/program_%016llx", root, nd_debug_tag ? nd_debug_tag : "graphs",
                     (unsigned long long)p->key) >= (int)sizeof dir || mkdirs(dir) < 0)
            ok = 0;
        PyObject *gr = ok ? nd_graph_repr(g, outs, nout) : NULL;
        Py_ssize_t n;
        const char *t = gr ? PyUnicode_AsUTF8AndSize(gr, &n) : NULL;
        if (ok && (!t || write_file(dir, "graph.txt", t, (size_t)n) < 0)) ok = 0;
        Py_XDECREF(gr);
        PyErr_Clear();
        nd_sb sb;
        nd_sb_init(&sb);
        schedule_text(g, p, &sb);
        if (ok && (nd_sb_check(&sb) < 0 || write_file(dir, "schedule.txt", sb.p, sb.n) < 0)) ok = 0;
        nd_sb_free(&sb);
        nd_sb_init(&sb);
        char line[512];
        if (nnew >= 0)
            snprintf(line, sizeof line, "compiler: %s %s\nidentity: %016llx\nkernels: %d, of which %d new "
                     "(compiled or loaded from the disk cache: %s)\n",
                     getenv("CC") ? getenv("CC") : "cc", nd_cc_flags(), (unsigned long long)nd_cc_identity(),
                     p->nkern, nnew, nd_disk_dir() ? nd_disk_dir() : "?");
        else if (nnew < -1)  /* the compile failed (the CompileError says so too) */
            snprintf(line, sizeof line, "compiler: %s %s\nidentity: %016llx\nkernels: %d; the C compiler "
                     "FAILED (numdyn.CompileError)\n",
                     getenv("CC") ? getenv("CC") : "cc", nd_cc_flags(), (unsigned long long)nd_cc_identity(),
                     p->nkern);
        else  /* written when the compile starts (background_compile) */
            snprintf(line, sizeof line, "compiler: %s %s\nidentity: %016llx\nkernels: %d, compiling in "
                     "the background into the disk cache %s (NumPy ran this call)\n",
                     getenv("CC") ? getenv("CC") : "cc", nd_cc_flags(), (unsigned long long)nd_cc_identity(),
                     p->nkern, nd_disk_dir() ? nd_disk_dir() : "?");
        PyErr_Clear();
        nd_sb_puts(&sb, line);
        if (compiles_logging && compiles_log.n) {
            nd_sb_puts(&sb, "\ncompiles (command line, exit status, the compiler's output):\n");
            nd_sb_puts(&sb, compiles_log.p);
        } else if (nnew > 0) {
            nd_sb_puts(&sb, "\ncompiles: none ran for this call (its kernels came from the disk cache)\n");
        }
        if (ok && (nd_sb_check(&sb) < 0 || write_file(dir, "compile.txt", sb.p, sb.n) < 0)) ok = 0;
        nd_sb_free(&sb);
    }
    for (int i = 0; i < p->nkern; i++) {
        nd_sb sb;
        nd_sb_init(&sb);
        if (nd_cg_kernel(g, &p->kerns[i], &sb) < 0 || nd_sb_check(&sb) < 0) {
            PyErr_Clear();
            nd_sb_free(&sb);
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "kernel_%d.c", i);
        if (root && ok && write_file(dir, name, sb.p, sb.n) < 0) ok = 0;
        if (nd_backend_log_code && nd_backend_log) {
            char head[96];
            snprintf(head, sizeof head, "output code: kernel %d of program %016llx\n", i,
                     (unsigned long long)p->key);
            PyObject *msg = PyUnicode_FromFormat("%s%s", head, sb.p);
            if (msg) nd_backend_log("output_code", msg);
            Py_XDECREF(msg);
            PyErr_Clear();
        }
        nd_sb_free(&sb);
    }
    if (compiles_logging) nd_sb_free(&compiles_log);
    compiles_logging = 0;
    if (root && !ok)
        PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "numdyn: cannot write the debug artifacts under "
                         "NUMDYN_DEBUG_DIR=%s: %s", root, strerror(errno));
    PyErr_Clear();
    PyErr_Restore(et, ev, etb);
}

/* ---------------------------------------------------------- the minifier
 * NUMDYN_REPRO_AFTER=compile: a graph the C compiler fails on, or
 * =accuracy: a new program whose results differ from the eager backend's
 * beyond tolerance, goes to numdyn._minifier.minify (Python: it shrinks
 * the graph by re-emitting parts of it as NumPy code and writes repro.py).
 * The minifier's own compiles do not re-enter it. */
static int repro_busy;

int nd_repro_mode(void)
{
    static int mode = -1;
    if (mode < 0) {
        const char *e = getenv("NUMDYN_REPRO_AFTER");
        mode = !e ? 0 : !strcmp(e, "compile") ? 1 : !strcmp(e, "accuracy") ? 2 : 0;
    }
    return repro_busy ? 0 : mode;
}

void nd_repro_report(nd_graph *g, const nd_id *outs, int nout, PyObject *native)
{
    int mode = nd_repro_mode();
    if (!mode) return;
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    repro_busy = 1;
    nd_id *all = PyMem_Malloc(sizeof(nd_id) * ((size_t)g->n + 1));
    nd_id *map = PyMem_Malloc(sizeof(nd_id) * ((size_t)g->n + 1));
    nd_id *nouts = PyMem_Malloc(sizeof(nd_id) * ((size_t)nout + 1));
    PyObject *vals = NULL, *gobj = NULL, *mvals = NULL, *r = NULL;
    if (!all || !map || !nouts) goto done;
    for (nd_id i = 0; i < g->n; i++) all[i] = i;
    vals = nd_backend_eager_run(g, all, g->n);  /* every node's value, by NumPy */
    if (!vals) goto done;
    nd_graph *c = nd_graph_extract(g, outs, nout, map, nouts);
    if (!c || !(gobj = nd_graphpy_wrap(c, nouts, nout))) goto done;
    if (!(mvals = PyList_New(c->n))) goto done;
    for (nd_id i = 0; i < c->n; i++) PyList_SET_ITEM(mvals, i, Py_NewRef(Py_None));
    for (nd_id i = 0; i < g->n; i++)
        if (map[i] != ND_NONE && map[i] >= 0 && map[i] < c->n)
            PyList_SetItem(mvals, map[i], Py_NewRef(PyList_GET_ITEM(vals, i)));
    PyObject *m = PyImport_ImportModule("numdyn._minifier");
    if (m) {
        r = PyObject_CallMethod(m, "minify", "sOOOO", mode == 1 ? "compile" : "accuracy", gobj,
                                mvals, native ? native : Py_None, ev ? ev : Py_None);
        Py_DECREF(m);
    }
done:
    if (!r && PyErr_Occurred()) PyErr_WriteUnraisable(gobj ? gobj : Py_None);
    Py_XDECREF(r);
    Py_XDECREF(vals);
    Py_XDECREF(gobj);
    Py_XDECREF(mvals);
    PyMem_Free(all);
    PyMem_Free(map);
    PyMem_Free(nouts);
    repro_busy = 0;
    PyErr_Restore(et, ev, etb);
}
