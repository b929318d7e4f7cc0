/* trace_grad.c -- differentiating a traced function: numdyn._C._vjp and
 * its pullback object (numdyn._C.VJP); the contract is in trace.h
 * (nd_trace_vjp).
 *
 * The function runs once under a trace with a fresh leaf node for every
 * float array (or Python float) of the differentiated arguments. Its
 * output nodes and those leaves go to passes/autodiff.h, which appends the
 * backward nodes to the same graph; one flush then computes the forward
 * outputs together with the gradients (grad: the cotangent is 1), or the
 * outputs plus what the backward needs saved (vjp: the partition below),
 * the backward graph running later, once per cotangent, from those saved
 * values. Both run on the trace's backend (native: fused C kernels).
 *
 * Graph breaks inside the function flush part of the graph but keep its
 * nodes, so the backward sees straight through them: gradients flow across
 * breaks (bool() branches, prints, graph_break()). What it cannot see is a
 * differentiated value that left the graph as data (float(), .item(), a
 * NumPy function numdyn runs outside the graph): that raises
 * NotImplementedError at the line that did it (nd__ad_escape), never a
 * silently missing gradient.
 *
 * Called while a trace is already running (numdyn.compile of a function
 * that takes gradients, grad of grad) everything stays lazy in that trace:
 * the results are proxies, and the backward nodes fuse with what follows.
 */
#include "trace_replay.h"
#include "passes/autodiff.h"
#include "core/core.h"
#include <string.h>

struct nd_ad_capture {
    nd_ad_capture *prev;
    nd_id *leaves;           /* the differentiated leaf nodes */
    int nleaves;
    char *dep;               /* per node: depends on a leaf through floats */
    nd_id ndep;              /* dep is computed for nodes [0, ndep) */
    nd_id *alias;            /* pairs (computed, known): nd_trace_grad_alias */
    int nalias, calias;
};

static int isflt(int dt) { return dt == NPY_HALF || dt == NPY_FLOAT || dt == NPY_DOUBLE; }
static int iscplx(int dt) { return dt == NPY_CFLOAT || dt == NPY_CDOUBLE; }

static int ad_depends(nd_graph *g, nd_ad_capture *ad, nd_id id)
{
    if (ad->ndep < g->n) {
        char *d = PyMem_Realloc(ad->dep, (size_t)g->n);
        if (!d) { PyErr_NoMemory(); return -1; }
        ad->dep = d;
        for (nd_id i = ad->ndep; i < g->n; i++) {
            nd_node *n = &g->nodes[i];
            d[i] = 0;
            if (!(isflt(n->dtype) || iscplx(n->dtype))) continue;
            for (int k = 0; k < ad->nleaves && !d[i]; k++) d[i] = ad->leaves[k] == i;
            int ni = n->op == ND_OP_EXTERN ? n->nextra : n->nin;
            for (int k = 0; k < ni && !d[i]; k++) {
                nd_id x = n->op == ND_OP_EXTERN ? n->extra[k] : n->in[k];
                if (x >= 0 && d[x]) d[i] = 1;
            }
        }
        ad->ndep = g->n;
    }
    return ad->dep[id];
}

int nd_trace_differentiating(const nd_trace *t) { return t && t->ad != NULL; }

int nd__ad_escape(nd_trace *t, NdProxy *p, const char *reason)
{
    if (reason && (strncmp(reason, "bool()", 6) == 0 || strncmp(reason, "repr()", 6) == 0 ||
                   strncmp(reason, "str()", 5) == 0))
        return 0;  /* a branch, a print: the value does not flow on as data */
    if (!isflt(p->dtype) && !iscplx(p->dtype)) return 0;
    nd_id id = nd__proxy_read_own(p);
    if (id == ND_NONE) return -1;
    for (nd_ad_capture *ad = t->ad; ad; ad = ad->prev) {
        int d = ad_depends(t->g, ad, id);
        if (d < 0) return -1;
        if (!d) continue;
        PyObject *loc = nd__user_location(reason ? reason : "a NumPy operation numdyn runs outside the graph");
        if (!loc) return -1;
        PyErr_Format(PyExc_NotImplementedError,
                     "numdyn autodiff: a value that depends on a differentiated input leaves "
                     "the graph as data at %S:%S (%S): its gradient would be lost. Keep it an "
                     "array (no float()/.item()/int()), or compute it outside the "
                     "differentiated function",
                     PyTuple_GET_ITEM(loc, 1), PyTuple_GET_ITEM(loc, 2), PyTuple_GET_ITEM(loc, 0));
        Py_DECREF(loc);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------- leaves */

typedef struct {
    nd_trace *t;
    int inline_;             /* the trace was already running */
    nd_id *ids;
    int8_t *scalar;          /* the leaf stood for a Python/NumPy scalar */
    int n, cap;
} leaf_ctx;

static int push_leaf(leaf_ctx *c, nd_id id, int is_scalar)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 8;
        nd_id *ni = PyMem_Realloc(c->ids, sizeof(nd_id) * (size_t)cap);
        if (!ni) { PyErr_NoMemory(); return -1; }
        c->ids = ni;
        int8_t *ns = PyMem_Realloc(c->scalar, (size_t)cap);
        if (!ns) { PyErr_NoMemory(); return -1; }
        c->scalar = ns;
        c->cap = cap;
    }
    c->ids[c->n] = id;
    c->scalar[c->n++] = (int8_t)is_scalar;
    return 0;
}

/* the leaf kind of o: 1 a float array/scalar (differentiated), 0 not one
 * (passed as is, gradient None), -1 error (complex) */
static int leaf_kind(PyObject *o)
{
    int dt = -1;
    if (nd_proxy_check(o)) dt = nd_proxy_dtype(o);
    else if (PyArray_Check(o) && !PyArray_CheckExact(o)) {
        PyErr_Format(PyExc_NotImplementedError, "numdyn autodiff: ndarray subclasses (%.80s) are "
                     "not differentiated; pass np.asarray(x)", Py_TYPE(o)->tp_name);
        return -1;
    } else if (PyArray_Check(o)) {
        /* other byte orders too: wrap_leaf takes a native copy */
        PyArray_Descr *d = PyArray_DESCR((PyArrayObject *)o);
        int k = d->kind == 'f' ? 1 : d->kind == 'c' ? 2 : 0;
        dt = k == 1 ? (d->elsize == 2 ? NPY_HALF : d->elsize == 4 ? NPY_FLOAT : d->elsize == 8 ? NPY_DOUBLE : -1)
             : k == 2 ? (d->elsize == 8 ? NPY_CFLOAT : d->elsize == 16 ? NPY_CDOUBLE : -1) : -1;
        if (k && dt < 0) {
            PyErr_Format(PyExc_NotImplementedError, "numdyn autodiff: arrays of dtype %R are not "
                         "differentiated", (PyObject *)d);
            return -1;
        }
    }
    else if (PyFloat_Check(o)) dt = NPY_DOUBLE;
    else if (PyComplex_Check(o)) dt = NPY_CDOUBLE;
    else if (PyArray_IsScalar(o, Floating) || PyArray_IsScalar(o, ComplexFloating)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(o);
        if (!d) return -1;
        dt = d->type_num;
        Py_DECREF(d);
    }
    return isflt(dt) || iscplx(dt);
}

/* the native float or complex dtype of a float or complex array */
static int leaf_dtype(PyObject *arr)
{
    int n = PyArray_ITEMSIZE((PyArrayObject *)arr);
    if (PyArray_DESCR((PyArrayObject *)arr)->kind == 'c') return n == 8 ? NPY_CFLOAT : NPY_CDOUBLE;
    return n == 2 ? NPY_HALF : n == 4 ? NPY_FLOAT : NPY_DOUBLE;
}

/* a differentiated leaf: a proxy on a fresh node (never a caller array:
 * writes inside the function do not reach the caller's arrays) */
static PyObject *wrap_leaf(PyObject *o, int depth, void *ctx)
{
    leaf_ctx *c = ctx;
    if (PyTuple_Check(o) || PyList_Check(o) || PyDict_Check(o)) return ND_NOT_LEAF;
    int k = leaf_kind(o);
    if (k <= 0) return k < 0 ? NULL : Py_NewRef(o);
    nd_graph *g = c->t->g;
    nd_id id;
    int is_scalar;
    if (nd_proxy_check(o)) {
        nd_id v = nd_proxy_read(o);
        if (v == ND_NONE) return NULL;
        /* a leaf of its own (x passed twice is two leaves) */
        nd_node n;
        nd_node *x = nd_graph_node(g, v);
        npy_intp st[ND_MAXDIMS];
        nd_c_strides(x->ndim, x->shape, st);
        nd_node_init(&n, ND_OP_VIEW, x->dtype, x->ndim, x->shape);
        n.nin = 1;
        n.in[0] = v;
        n.vndim = x->ndim;
        if (x->ndim) {
            memcpy(n.vshape, x->shape, sizeof(npy_intp) * x->ndim);
            memcpy(n.vstrides, st, sizeof(npy_intp) * x->ndim);
        }
        id = nd_graph_add(g, &n);
        is_scalar = nd_proxy_is_scalar(o);
    } else {
        PyObject *arr = PyArray_FROM_O(o);
        if (arr && (!PyArray_CheckExact(arr) || !nd_supported_array(arr))) {
            PyArray_Descr *d = PyArray_DescrFromType(leaf_dtype(arr));
            Py_SETREF(arr, d ? PyArray_FromAny(arr, d, 0, 0, NPY_ARRAY_CARRAY | NPY_ARRAY_ENSUREARRAY
                                               | NPY_ARRAY_ENSURECOPY, NULL) : NULL);
            if (arr && !nd_supported_array(arr)) {
                PyErr_SetString(PyExc_NotImplementedError, "numdyn autodiff: this array cannot be traced");
                Py_CLEAR(arr);
            }
        }
        if (!arr) return NULL;
        is_scalar = !PyArray_Check(o);
        id = nd__input_node(c->t, arr);
        Py_DECREF(arr);
    }
    if (id == ND_NONE || push_leaf(c, id, is_scalar) < 0) return NULL;
    return nd_proxy_wrap(c->t, id, is_scalar);
}

typedef struct {
    PyObject **vals;         /* per leaf: the gradient (borrowed), or NULL */
    int8_t *scalar;
    int i;
} fill_ctx;

/* the argument's structure with each leaf's gradient (None off leaves) */
static PyObject *fill_leaf(PyObject *o, int depth, void *ctx)
{
    fill_ctx *c = ctx;
    if (PyTuple_Check(o) || PyList_Check(o) || PyDict_Check(o)) return ND_NOT_LEAF;
    int k = leaf_kind(o);
    if (k < 0) return NULL;
    if (!k) Py_RETURN_NONE;
    PyObject *v = c->vals[c->i];
    int s = c->scalar[c->i++];
    if (!v) Py_RETURN_NONE;
    if (s && PyArray_Check(v) && PyArray_NDIM((PyArrayObject *)v) == 0)
        return PyArray_Return((PyArrayObject *)Py_NewRef(v));
    return Py_NewRef(v);
}

/* ------------------------------------------------------ other arguments */

static PyObject *base_of(PyObject *a)
{
    PyObject *b = a, *nb;
    while ((nb = PyArray_BASE((PyArrayObject *)b)) && PyArray_Check(nb)) b = nb;
    return b;
}

/* 1 when the array argument k shares a base array with another array
 * reachable from the arguments (then NumPy runs on it as before: one
 * storage per base is trace_compile.c's business) */
static int shares_base(PyObject *args, Py_ssize_t k)
{
    PyObject *list = PyList_New(0);
    if (!list) return -1;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(args); j++)
        if (nd__gather_arrays(PyTuple_GET_ITEM(args, j), list, 0, 0) < 0) { Py_DECREF(list); return -1; }
    PyObject *a = PyTuple_GET_ITEM(args, k), *b = base_of(a);
    int r = 0;
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(list) && !r; j++) {
        PyObject *c = PyList_GET_ITEM(list, j);
        r = c != a && base_of(c) == b;
    }
    Py_DECREF(list);
    return r;
}

/* ------------------------------------------------------------- aliases
 *
 * A caller that already holds the values of some forward nodes (the
 * Tensor tape: every step's output array) names them, as arguments of the
 * function, with nd_trace_grad_alias (trace.h). Once the backward is
 * built, every read of such a node -- by later forward nodes, backward
 * nodes and the outputs -- reads the known argument instead, so nothing
 * recomputes the forward: the backward runs from the saved values, and
 * what a single step made internally is recomputed from them, locally. */

int nd_trace_grad_alias(PyObject *computed, PyObject *known)
{
    nd_trace *t = nd__tls_trace;
    if (!t || !t->ad || !nd_proxy_check(computed)) return 0;
    nd_ad_capture *ad = t->ad;
    nd_id c = nd_proxy_read(computed);
    if (c == ND_NONE) return -1;
    nd_id k = nd_trace_lift(t, known);
    if (k == ND_NONE) return -1;
    nd_graph *g = t->g;
    nd_node *cn = &g->nodes[c], *kn = &g->nodes[k];
    /* the known value stands for the computed one only as the same array
     * kind; a leaf, an input, or a node that is its own alias is left be */
    if (c == k || cn->op == ND_OP_INPUT || kn->op != ND_OP_INPUT || cn->dtype != kn->dtype ||
        cn->ndim != kn->ndim || memcmp(cn->shape, kn->shape, sizeof(npy_intp) * (size_t)cn->ndim) != 0)
        return 0;
    for (int j = 0; j < ad->nleaves; j++) if (ad->leaves[j] == c) return 0;
    if (ad->nalias == ad->calias) {
        int cap = ad->calias ? 2 * ad->calias : 16;
        nd_id *a = PyMem_Realloc(ad->alias, sizeof(nd_id) * 2 * (size_t)cap);
        if (!a) { PyErr_NoMemory(); return -1; }
        ad->alias = a;
        ad->calias = cap;
    }
    ad->alias[2 * ad->nalias] = c;
    ad->alias[2 * ad->nalias + 1] = k;
    ad->nalias++;
    return 0;
}

static void alias_apply(nd_graph *g, nd_ad_capture *ad, int nout, nd_id *outs)
{
    if (!ad->nalias) return;
    nd_id lo = g->n;
    for (int j = 0; j < ad->nalias; j++) if (ad->alias[2 * j] < lo) lo = ad->alias[2 * j];
    nd_id *to = PyMem_Malloc(sizeof(nd_id) * (size_t)(g->n - lo));
    if (!to) return;  /* nothing rewritten: the forward is recomputed, still right */
    for (nd_id i = lo; i < g->n; i++) to[i - lo] = ND_NONE;
    for (int j = 0; j < ad->nalias; j++) to[ad->alias[2 * j] - lo] = ad->alias[2 * j + 1];
    for (nd_id i = lo + 1; i < g->n; i++) {
        nd_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin + n->nextra; k++) {  /* refs count both lists */
            nd_id *x = k < n->nin ? &n->in[k] : &n->extra[k - n->nin];
            if (*x < lo || to[*x - lo] == ND_NONE) continue;
            g->nodes[*x].refs--;
            *x = to[*x - lo];
            g->nodes[*x].refs++;
        }
    }
    for (int j = 0; j < nout; j++)
        if (outs[j] >= lo && to[outs[j] - lo] != ND_NONE) outs[j] = to[outs[j] - lo];
    nd_counter_add(ND_CTR_AD_ALIASED, ad->nalias);
    PyMem_Free(to);
}

/* A top-level call's array argument that is not differentiated: a caller
 * proxy as numdyn.compile makes (its operations are traced, so the graph
 * reads the argument itself and the capture can be recorded for replay;
 * writes reach the caller's array as under NumPy). */
static PyObject *wrap_other(nd_trace *t, PyObject *args, Py_ssize_t k)
{
    PyObject *a = PyTuple_GET_ITEM(args, k);
    if (!PyArray_CheckExact(a) || !nd_supported_array(a)) return Py_NewRef(a);
    int sh = shares_base(args, k);
    if (sh) return sh < 0 ? NULL : Py_NewRef(a);
    nd_storage *s = nd__caller_storage(t, a);
    PyObject *p = s ? nd__caller_proxy(s, 0) : NULL;
    if (p) nd__proxy_set_caller((NdProxy *)p, (PyArrayObject *)a);
    return p;
}

/* ------------------------------------------------------------- outputs */

typedef struct {
    PyObject *list;          /* the output leaves, in order */
} out_ctx;

static PyObject *collect_out(PyObject *o, int depth, void *ctx)
{
    if (PyTuple_Check(o) || PyList_Check(o) || PyDict_Check(o)) return ND_NOT_LEAF;
    if (PyList_Append(((out_ctx *)ctx)->list, o) < 0) return NULL;
    return Py_NewRef(o);
}

/* the output leaves of a function result (tuples, lists, dicts walked) */
static PyObject *out_leaves(PyObject *res)
{
    out_ctx c = {PyList_New(0)};
    if (!c.list) return NULL;
    PyObject *r = nd_map_leaves(res, collect_out, &c, 32, 0);
    if (!r) { Py_DECREF(c.list); return NULL; }
    Py_DECREF(r);
    return c.list;
}

/* ------------------------------------------------------------- remap */

static PyObject *remap_cache;  /* fn -> (remapped, guards) */

static PyObject *target_of(PyObject *fn)
{
    if (nd__compiled_fn(fn)) return Py_NewRef(fn);  /* it inlines into the trace */
    if (!remap_cache && !(remap_cache = PyDict_New())) return NULL;
    PyObject *e = PyDict_GetItemWithError(remap_cache, fn);
    if (e) {
        int ok = nd__remap_valid(PyTuple_GET_ITEM(e, 1));
        if (ok < 0) return NULL;
        if (ok) return Py_NewRef(PyTuple_GET_ITEM(e, 0));
    } else if (PyErr_Occurred()) {
        PyErr_Clear();  /* unhashable callable: no cache */
    }
    PyObject *guards = NULL, *r = nd__remap(fn, &guards);
    if (!r) return NULL;
    if (guards) {
        if (PyDict_GET_SIZE(remap_cache) > 256) PyDict_Clear(remap_cache);
        PyObject *pair = PyTuple_Pack(2, r, guards);
        if (!pair || PyDict_SetItem(remap_cache, fn, pair) < 0) PyErr_Clear();
        Py_XDECREF(pair);
        Py_DECREF(guards);
    }
    return r;
}

/* ------------------------------------------------------------ the VJP */

typedef struct {
    PyObject_HEAD
    nd_trace *t;             /* owned: its graph holds forward and backward */
    int kind;                /* backend */
    int inline_;             /* built lazily in a running trace */
    int nout;
    nd_id *outs;             /* differentiable outputs (ND_NONE: constant leaf) */
    nd_id *cts;              /* top level: INPUT nodes the cotangents go into */
    int nleaf;
    nd_id *leaves, *grads;   /* top level: gradient node per leaf (ND_NONE: zero) */
    int8_t *scalar;
    PyObject *args;          /* the differentiated arguments (structure) */
    PyObject *saved;         /* list of (node id, array) the forward saved;
                                with bwd: the tuple of saved arrays */
    PyObject *bwd;           /* a warm call's recorded backward (NdBwd), or NULL */
    PyObject *argv;          /* with bwd: the call's arguments (tuple) */
} NdVJP;

static void vjp_dealloc(PyObject *o)
{
    NdVJP *v = (NdVJP *)o;
    if (v->t) nd__trace_decref(v->t);
    PyMem_Free(v->outs);
    PyMem_Free(v->cts);
    PyMem_Free(v->leaves);
    PyMem_Free(v->grads);
    PyMem_Free(v->scalar);
    Py_XDECREF(v->args);
    Py_XDECREF(v->saved);
    Py_XDECREF(v->bwd);
    Py_XDECREF(v->argv);
    Py_TYPE(o)->tp_free(o);
}

/* The cotangent 1 of grad's output: a 0-d INPUT array (one shared
 * read-only array per dtype, which a recorded grad binds as an extra
 * argument) rather than a SCALAR node -- codegen mishandles a broadcast view of a SCALAR read after a
 * short-axis reduction ("v2 undeclared", np.sum(x.max(axis=1)) of a (2, 3)
 * x; helper `fuse` owns that fix). */
static PyObject *ones[3];  /* read-only 0-d 1.0 of float16/32/64 */

static int ones_init(void)
{
    static const int dts[3] = {NPY_HALF, NPY_FLOAT, NPY_DOUBLE};
    for (int k = 0; k < 3; k++) {
        if (ones[k]) continue;
        PyObject *a = PyArray_ZEROS(0, NULL, dts[k], 0), *one = PyFloat_FromDouble(1.0);
        int bad = !a || !one || PyArray_SETITEM((PyArrayObject *)a, PyArray_DATA((PyArrayObject *)a), one) < 0;
        Py_XDECREF(one);
        if (bad) { Py_XDECREF(a); return -1; }
        PyArray_CLEARFLAGS((PyArrayObject *)a, NPY_ARRAY_WRITEABLE);
        ones[k] = a;
    }
    return 0;
}

static nd_id scalar_one(nd_graph *g, int dt)
{
    if (ones_init() < 0) return ND_NONE;
    nd_node n;
    nd_node_init(&n, ND_OP_INPUT, dt, 0, NULL);
    n.obj = Py_NewRef(ones[dt == NPY_HALF ? 0 : dt == NPY_FLOAT ? 1 : 2]);
    nd_id id = nd_graph_add(g, &n);
    if (id == ND_NONE) Py_DECREF(n.obj);
    return id;
}

/* gradient nodes of every leaf: zeros where none depends (one run makes all) */
static int fill_zero_grads(nd_graph *g, int n, const nd_id *leaves, nd_id *grads)
{
    for (int k = 0; k < n; k++) {
        if (grads[k] != ND_NONE) continue;
        nd_node *x = nd_graph_node(g, leaves[k]);
        npy_intp sh[ND_MAXDIMS];
        int nd = x->ndim, dt = x->dtype;
        if (nd) memcpy(sh, x->shape, sizeof(npy_intp) * (size_t)nd);
        if ((grads[k] = nd_autodiff_zeros(g, dt, nd, sh)) == ND_NONE) return -1;
    }
    return 0;
}

static int verify(nd_graph *g, const nd_id *ids, int n)
{
    if (!nd_debug_checks()) return 0;
    return nd_graph_verify(g, ids, n, "autodiff");
}

/* the gradients in the structure of the differentiated arguments: a tuple
 * with one entry per argument */
static PyObject *grads_tree(PyObject *args, PyObject **vals, int8_t *scalar)
{
    fill_ctx c = {vals, scalar, 0};
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *r = PyTuple_New(n);
    if (!r) return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *x = nd_map_leaves(PyTuple_GET_ITEM(args, k), fill_leaf, &c, 32, 0);
        if (!x) { Py_DECREF(r); return NULL; }
        PyTuple_SET_ITEM(r, k, x);
    }
    return r;
}

/* cotangent k as an array of output k's shape and dtype (new ref) */
static PyObject *as_cotangent(PyObject *ct, nd_node *o)
{
    PyArray_Descr *d = PyArray_DescrFromType(o->dtype);
    if (!d) return NULL;
    PyObject *a = PyArray_FromAny(ct, d, 0, 0, NPY_ARRAY_CARRAY | NPY_ARRAY_FORCECAST, NULL);
    if (!a) return NULL;
    PyArrayObject *A = (PyArrayObject *)a;
    int ok = PyArray_NDIM(A) == o->ndim;
    for (int d2 = 0; ok && d2 < o->ndim; d2++) ok = PyArray_DIM(A, d2) == o->shape[d2];
    if (!ok) {
        PyObject *want = nd_intp_tuple(o->ndim, o->shape), *got = nd_intp_tuple(PyArray_NDIM(A), PyArray_DIMS(A));
        if (want && got)
            PyErr_Format(PyExc_ValueError,
                         "numdyn.vjp: a cotangent of shape %R for an output of shape %R", got, want);
        Py_XDECREF(want);
        Py_XDECREF(got);
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

/* ------------------------------------------------- recorded pullbacks
 * numdyn.vjp's warm calls: the forward replays like grad's (its one flush
 * computes the outputs and the values the partition saves, returned with
 * the index of this recorded backward), and the pullback runs the backward
 * graph kept here, its INPUT nodes bound at each call to the saved values,
 * the cotangents and the call's arguments: no tracing, no graph building. */
enum { B_SAVED, B_CT, B_ARG };

typedef struct {
    PyObject_HEAD
    nd_graph *g;             /* standalone backward; bound INPUTs hold nothing between calls */
    nd_id *outs;             /* its gradient node per leaf */
    int nleaf, nout, nbind, busy;
    int8_t *scalar;          /* per leaf: stood for a Python/NumPy scalar */
    nd_node *onodes;         /* per output: shape and dtype (op unused) */
    int8_t *olive;           /* per output: differentiable (takes its cotangent) */
    nd_id *bind_node;
    int8_t *bind_kind;       /* B_SAVED / B_CT / B_ARG */
    int32_t *bind_idx;
} NdBwd;

static void bwd_dealloc(PyObject *o)
{
    NdBwd *b = (NdBwd *)o;
    nd_graph_free(b->g);
    PyMem_Free(b->outs);
    PyMem_Free(b->scalar);
    PyMem_Free(b->onodes);
    PyMem_Free(b->olive);
    PyMem_Free(b->bind_node);
    PyMem_Free(b->bind_kind);
    PyMem_Free(b->bind_idx);
    Py_TYPE(o)->tp_free(o);
}

static PyTypeObject NdBwd_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.RecordedBackward",
    .tp_basicsize = sizeof(NdBwd),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = bwd_dealloc,
    .tp_doc = "the backward graph of a recorded numdyn.vjp call (internal)",
};

/* The backward of grads[0..nleaf) as a standalone graph that reads only
 * the saved values sv[k] (arrays saved_arr[k]), the cotangent INPUT nodes
 * cts[j] and the call's arguments: *out a new NdBwd; 0 built, 1 not
 * possible (it reads something else: no recording), -1 error. */
static int bwd_build(nd_graph *g, nd_id nfwd, PyObject *svids, PyObject *saved_arr, int nout,
                     const nd_id *outs, const nd_id *cts, int nleaf, const nd_id *grads,
                     const int8_t *scalar, PyObject *const *args, Py_ssize_t nargs,
                     PyObject **out)
{
    *out = NULL;
    Py_ssize_t nsv = PyList_GET_SIZE(svids);
    PyObject **stash = PyMem_Calloc((size_t)nfwd + 1, sizeof(PyObject *));
    nd_id *map = PyMem_Malloc(sizeof(nd_id) * (size_t)(g->n + 1));
    nd_id *sv = PyMem_Malloc(sizeof(nd_id) * (size_t)(nsv + 1));
    NdBwd *b = PyObject_New(NdBwd, &NdBwd_Type);
    int rc = -1;
    if (b) {
        b->g = NULL; b->outs = NULL; b->scalar = NULL; b->onodes = NULL; b->olive = NULL;
        b->bind_node = NULL; b->bind_kind = NULL; b->bind_idx = NULL;
        b->nleaf = nleaf; b->nout = nout; b->nbind = 0; b->busy = 0;
    }
    if (!stash || !map || !sv || !b) { if (b) PyErr_NoMemory(); goto done; }
    for (Py_ssize_t k = 0; k < nsv; k++) sv[k] = (nd_id)PyLong_AsLong(PyList_GET_ITEM(svids, k));
    /* only the saved values stand as computed: what else the forward flush
     * left in the graph would be this call's constants */
    for (nd_id i = 0; i < nfwd; i++) { stash[i] = g->nodes[i].value; g->nodes[i].value = NULL; }
    for (Py_ssize_t k = 0; k < nsv; k++)
        g->nodes[sv[k]].value = Py_NewRef(PyTuple_GET_ITEM(saved_arr, k));
    b->outs = PyMem_Malloc(sizeof(nd_id) * (size_t)(nleaf + 1));
    b->g = b->outs ? nd_graph_extract(g, grads, nleaf, map, b->outs) : NULL;
    for (Py_ssize_t k = 0; k < nsv; k++) Py_CLEAR(g->nodes[sv[k]].value);
    for (nd_id i = 0; i < nfwd; i++) g->nodes[i].value = stash[i];
    if (!b->g) { if (!b->outs) PyErr_NoMemory(); goto done; }
    int ninput = 0;
    for (nd_id i = 0; i < b->g->n; i++) ninput += b->g->nodes[i].op == ND_OP_INPUT;
    b->bind_node = PyMem_Malloc(sizeof(nd_id) * (size_t)(ninput + 1));
    b->bind_kind = PyMem_Malloc((size_t)(ninput + 1));
    b->bind_idx = PyMem_Malloc(sizeof(int32_t) * (size_t)(ninput + 1));
    b->scalar = PyMem_Malloc((size_t)(nleaf + 1));
    b->onodes = PyMem_Malloc(sizeof(nd_node) * (size_t)(nout + 1));
    b->olive = PyMem_Malloc((size_t)(nout + 1));
    if (!b->bind_node || !b->bind_kind || !b->bind_idx || !b->scalar || !b->onodes || !b->olive) {
        PyErr_NoMemory();
        goto done;
    }
    if (nleaf) memcpy(b->scalar, scalar, (size_t)nleaf);
    for (int j = 0; j < nout; j++) {
        b->olive[j] = cts[j] != ND_NONE;
        nd_node *o = b->olive[j] ? nd_graph_node(g, outs[j]) : NULL;
        nd_node_init(&b->onodes[j], ND_OP_INPUT, o ? o->dtype : NPY_DOUBLE, o ? o->ndim : 0,
                     o ? o->shape : NULL);
    }
    for (nd_id i = 0; i < g->n; i++) {
        if (map[i] == ND_NONE || b->g->nodes[map[i]].op != ND_OP_INPUT) continue;
        int kind = -1;
        int32_t idx = -1;
        for (Py_ssize_t k = 0; k < nsv && kind < 0; k++)
            if (sv[k] == i) { kind = B_SAVED; idx = (int32_t)k; }
        for (int j = 0; j < nout && kind < 0; j++)
            if (cts[j] == i) { kind = B_CT; idx = j; }
        PyObject *obj = b->g->nodes[map[i]].obj;
        for (Py_ssize_t j = 0; j < nargs && kind < 0; j++)
            if (args[j] == obj) { kind = B_ARG; idx = (int32_t)j; }
        if (kind < 0) { rc = 1; goto done; }  /* a constant the forward replay would not bind */
        b->bind_node[b->nbind] = map[i];
        b->bind_kind[b->nbind] = (int8_t)kind;
        b->bind_idx[b->nbind++] = idx;
    }
    for (int k = 0; k < b->nbind; k++) Py_CLEAR(b->g->nodes[b->bind_node[k]].obj);
    *out = (PyObject *)b;
    b = NULL;
    rc = 0;
done:
    Py_XDECREF(b);
    PyMem_Free(stash);
    PyMem_Free(map);
    PyMem_Free(sv);
    return rc;
}

/* cotangent k as an array of output k's shape and dtype (new ref) */
static PyObject *as_cotangent(PyObject *ct, nd_node *o);
static PyObject *grads_tree(PyObject *args, PyObject **vals, int8_t *scalar);

/* a recorded pullback's call: bind, run, unbind */
static PyObject *bwd_call(NdVJP *v, PyObject *cts)
{
    NdBwd *b = (NdBwd *)v->bwd;
    if (b->busy) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn.vjp: a recorded pullback is already running "
                        "(another thread): call it again when that returns");
        return NULL;
    }
    PyObject **ca = PyMem_Calloc((size_t)b->nout + 1, sizeof(PyObject *));
    PyObject **vals = PyMem_Calloc((size_t)b->nleaf + 1, sizeof(PyObject *));
    PyObject *res = NULL, *r = NULL;
    if (!ca || !vals) { PyErr_NoMemory(); goto done; }
    for (int j = 0; j < b->nout; j++)
        if (b->olive[j] && !(ca[j] = as_cotangent(PyTuple_GET_ITEM(cts, j), &b->onodes[j]))) goto done;
    b->busy = 1;
    for (int k = 0; k < b->nbind; k++) {
        int32_t i = b->bind_idx[k];
        PyObject *a = b->bind_kind[k] == B_SAVED ? PyTuple_GET_ITEM(v->saved, i)
                      : b->bind_kind[k] == B_CT ? ca[i] : PyTuple_GET_ITEM(v->argv, i);
        b->g->nodes[b->bind_node[k]].obj = Py_NewRef(a);
    }
    nd_graph_run_depth++;
    res = nd_backends[v->kind].run(b->g, b->outs, b->nleaf, NULL);
    nd_graph_run_depth--;
    for (int k = 0; k < b->nbind; k++) Py_CLEAR(b->g->nodes[b->bind_node[k]].obj);
    b->busy = 0;
    if (!res) goto done;
    for (int k = 0; k < b->nleaf; k++) vals[k] = PyList_GET_ITEM(res, k);
    r = grads_tree(v->args, vals, b->scalar);
done:
    if (ca) for (int j = 0; j < b->nout; j++) Py_XDECREF(ca[j]);
    PyMem_Free(ca);
    PyMem_Free(vals);
    Py_XDECREF(res);
    return r;
}

static PyObject *vjp_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    NdVJP *v = (NdVJP *)self;
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "numdyn.vjp: the pullback takes cotangents only");
        return NULL;
    }
    if (PyTuple_GET_SIZE(args) != v->nout) {
        PyErr_Format(PyExc_TypeError, "numdyn.vjp: the pullback takes %d cotangents (one per "
                     "output leaf), got %zd", v->nout, PyTuple_GET_SIZE(args));
        return NULL;
    }
    if (v->bwd) return bwd_call(v, args);
    nd_trace *t = v->t;
    nd_graph *g = t->g;
    if (v->inline_) {
        if (nd_trace_current() != t || t->ended) {
            PyErr_SetString(PyExc_RuntimeError,
                            "numdyn.vjp: a pullback made inside a compiled function must be "
                            "called inside it");
            return NULL;
        }
        nd_id *cts = PyMem_Malloc(sizeof(nd_id) * (size_t)(v->nout + 1));
        nd_id *grads = PyMem_Malloc(sizeof(nd_id) * (size_t)(v->nleaf + 1));
        PyObject **vals = PyMem_Calloc((size_t)(v->nleaf + 1), sizeof(PyObject *));
        PyObject *r = NULL;
        if (!cts || !grads || !vals) { PyErr_NoMemory(); goto idone; }
        for (int j = 0; j < v->nout; j++) {
            cts[j] = ND_NONE;
            if (v->outs[j] == ND_NONE) continue;
            nd_id c = nd_trace_lift(t, PyTuple_GET_ITEM(args, j));
            if (c == ND_NONE) goto idone;
            nd_node *o = nd_graph_node(g, v->outs[j]), *cn = nd_graph_node(g, c);
            if (cn->ndim != o->ndim || (o->ndim && memcmp(cn->shape, o->shape, sizeof(npy_intp) * o->ndim))) {
                PyErr_SetString(PyExc_ValueError, "numdyn.vjp: a cotangent's shape differs from its output's");
                goto idone;
            }
            if (cn->dtype != o->dtype) {
                nd_node n;
                nd_node_init(&n, ND_OP_CAST, o->dtype, o->ndim, o->shape);
                n.nin = 1; n.in[0] = c; n.in_dtype[0] = cn->dtype;
                if ((c = nd_graph_add(g, &n)) == ND_NONE) goto idone;
            }
            cts[j] = c;
        }
        if (nd_autodiff_backward(g, v->nout, v->outs, cts, v->nleaf, v->leaves, grads) < 0 ||
            fill_zero_grads(g, v->nleaf, v->leaves, grads) < 0 || verify(g, grads, v->nleaf) < 0)
            goto idone;
        for (int k = 0; k < v->nleaf; k++)
            if (!(vals[k] = nd_proxy_wrap(t, grads[k], 0))) goto idone;
        r = grads_tree(v->args, vals, v->scalar);
    idone:
        if (vals) for (int k = 0; k < v->nleaf; k++) Py_XDECREF(vals[k]);
        PyMem_Free(vals);
        PyMem_Free(cts);
        PyMem_Free(grads);
        return r;
    }
    /* top level: the cotangents into their INPUT nodes, the saved values
     * back into theirs, then the backward graph alone */
    for (int j = 0; j < v->nout; j++) {
        if (v->cts[j] == ND_NONE) continue;
        nd_node *c = nd_graph_node(g, v->cts[j]);
        PyObject *a = as_cotangent(PyTuple_GET_ITEM(args, j), nd_graph_node(g, v->outs[j]));
        if (!a) return NULL;
        Py_XSETREF(c->obj, a);
    }
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(v->saved); k++) {
        PyObject *pr = PyList_GET_ITEM(v->saved, k);
        nd_id id = (nd_id)PyLong_AsLong(PyTuple_GET_ITEM(pr, 0));
        Py_XSETREF(g->nodes[id].value, Py_NewRef(PyTuple_GET_ITEM(pr, 1)));
    }
    PyObject **vals = PyMem_Calloc((size_t)(v->nleaf + 1), sizeof(PyObject *));
    nd_id *nouts = PyMem_Malloc(sizeof(nd_id) * (size_t)(v->nleaf + 1));
    PyObject *res = NULL, *r = NULL;
    nd_graph *sub = NULL;
    if (!vals || !nouts) { PyErr_NoMemory(); goto done; }
    sub = nd_graph_extract(g, v->grads, v->nleaf, NULL, nouts);
    if (!sub) goto done;
    nd_graph_run_depth++;
    res = nd_backends[v->kind].run(sub, nouts, v->nleaf, t->options);
    nd_graph_run_depth--;
    if (!res) goto done;
    for (int k = 0; k < v->nleaf; k++) vals[k] = PyList_GET_ITEM(res, k);
    r = grads_tree(v->args, vals, v->scalar);
done:
    nd_graph_free(sub);
    Py_XDECREF(res);
    PyMem_Free(vals);
    PyMem_Free(nouts);
    return r;
}

static PyObject *vjp_saved_nbytes(PyObject *o, void *c)
{
    NdVJP *v = (NdVJP *)o;
    Py_ssize_t n = 0;
    if (v->bwd) {
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(v->saved); k++)
            n += PyArray_NBYTES((PyArrayObject *)PyTuple_GET_ITEM(v->saved, k));
        return PyLong_FromSsize_t(n);
    }
    for (Py_ssize_t k = 0; v->saved && k < PyList_GET_SIZE(v->saved); k++)
        n += PyArray_NBYTES((PyArrayObject *)PyTuple_GET_ITEM(PyList_GET_ITEM(v->saved, k), 1));
    return PyLong_FromSsize_t(n);
}

static PyGetSetDef vjp_getset[] = {
    {"saved_nbytes", vjp_saved_nbytes, NULL,
     "bytes of the forward values saved for the backward (besides inputs and outputs)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject NdVJP_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.VJP",
    .tp_basicsize = sizeof(NdVJP),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = vjp_dealloc,
    .tp_call = vjp_call,
    .tp_getset = vjp_getset,
    .tp_doc = "The pullback of numdyn.vjp: call it with one cotangent per output leaf; it "
              "returns the gradients, one entry per primal.",
};

/* ------------------------------------------------------------ the entry */

/* The forward nodes the backward reads that are worth saving: the minimum
 * cut by bytes (autodiff.h, nd_autodiff_partition); the backward
 * recomputes the rest through cheap pointwise nodes from them. */
static int saved_set(nd_graph *g, nd_id nfwd, PyObject *ids_list)
{
    nd_id *sv = NULL;
    nd_ad_partition_stats st;
    Py_ssize_t ns = nd_autodiff_partition(g, nfwd, &sv, &st);
    if (ns < 0) return -1;
    int rc = 0;
    for (Py_ssize_t k = 0; k < ns && rc == 0; k++) {
        PyObject *o = PyLong_FromLong(sv[k]);
        rc = o && PyList_Append(ids_list, o) == 0 ? 0 : -1;
        Py_XDECREF(o);
    }
    PyMem_Free(sv);
    nd_counter_add(ND_CTR_AD_SAVED_BYTES, st.saved_bytes);
    nd_counter_add(ND_CTR_AD_BOUNDARY_BYTES, st.boundary_bytes);
    nd_counter_add(ND_CTR_AD_RECOMPUTED, st.recomputed);
    return rc;
}

/* ------------------------------------------------------- warm calls
 * A grad function's recorded traces (numdyn._C._grad_cache(): a capsule
 * per numdyn.grad/value_and_grad wrapper). A top-level grad call of a
 * replayable fn (trace_replay.c: its bytecode scan and the capture's own
 * checks, arguments guarded exactly as numdyn.compile guards them) records
 * its one flush -- forward and backward -- and a later call whose
 * arguments fit runs that graph without tracing: a warm grad call costs
 * what a warm compiled call costs. */
#define GRAD_CACHE "numdyn.grad_cache"

static void grad_cache_free(PyObject *cap)
{
    nd__replay_free(PyCapsule_GetPointer(cap, GRAD_CACHE));
}

static PyObject *mod_grad_cache(PyObject *m, PyObject *unused)
{
    nd_replay *r = nd__replay_new();
    if (!r) return NULL;
    PyObject *cap = PyCapsule_New(r, GRAD_CACHE, grad_cache_free);
    if (!cap) nd__replay_free(r);
    return cap;
}

static int replay_enabled(void)
{
    static int off = -1;  /* NUMDYN_REPLAY=0: always trace, as numdyn.compile */
    if (off < 0) {
        const char *e = getenv("NUMDYN_REPLAY");
        off = e && strcmp(e, "0") == 0;
    }
    return !off && !nd__tls_explain;
}

/* the pullback of a top-level call (grad/vjp): takes over the output,
 * cotangent, leaf and gradient arrays and the saved list (their pointers
 * are set to NULL) */
static NdVJP *vjp_top(nd_trace *t, int kind, int nout, nd_id **outs, nd_id **cts, leaf_ctx *lc,
                      nd_id **grads, PyObject *dargs, PyObject **saved)
{
    NdVJP *v = PyObject_New(NdVJP, &NdVJP_Type);
    if (!v) return NULL;
    v->t = t; nd__trace_incref(t);
    v->kind = kind; v->inline_ = 0; v->nout = nout;
    v->outs = *outs; *outs = NULL;
    v->cts = *cts; *cts = NULL;
    v->nleaf = lc->n;
    v->leaves = lc->ids; lc->ids = NULL;
    v->grads = *grads; *grads = NULL;
    v->scalar = lc->scalar; lc->scalar = NULL;
    v->args = Py_NewRef(dargs);
    v->saved = *saved; *saved = NULL;
    v->bwd = NULL;
    v->argv = NULL;
    return v;
}

/* A replayed vjp forward r = (out, aux, saved arrays, index of its
 * recorded backward) as numdyn.vjp's (out, aux, pullback); steals r. */
static PyObject *vjp_warm(PyObject *r, PyObject *tlist, PyObject *args, const char *diff, int kind)
{
    PyObject *res = NULL, *dargs = NULL;
    Py_ssize_t key = -1;
    if (PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 4 && PyTuple_Check(PyTuple_GET_ITEM(r, 2)))
        key = PyLong_AsSsize_t(PyTuple_GET_ITEM(r, 3));
    if (key < 0 || key >= PyList_GET_SIZE(tlist)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_SystemError, "numdyn.vjp: a replayed forward without its backward");
        goto done;
    }
    NdBwd *b = (NdBwd *)PyList_GET_ITEM(tlist, key);
    Py_ssize_t nd = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(args); k++) nd += diff[k] != 0;
    if (!(dargs = PyTuple_New(nd))) goto done;
    for (Py_ssize_t k = 0, j = 0; k < PyTuple_GET_SIZE(args); k++)
        if (diff[k]) PyTuple_SET_ITEM(dargs, j++, Py_NewRef(PyTuple_GET_ITEM(args, k)));
    NdVJP *v = PyObject_New(NdVJP, &NdVJP_Type);
    if (!v) goto done;
    v->t = NULL;
    v->kind = kind; v->inline_ = 0; v->nout = b->nout;
    v->outs = NULL; v->cts = NULL; v->leaves = NULL; v->grads = NULL; v->scalar = NULL;
    v->nleaf = b->nleaf;
    v->args = dargs; dargs = NULL;
    v->saved = Py_NewRef(PyTuple_GET_ITEM(r, 2));
    v->bwd = Py_NewRef((PyObject *)b);
    v->argv = Py_NewRef(args);
    res = Py_BuildValue("(OON)", PyTuple_GET_ITEM(r, 0), PyTuple_GET_ITEM(r, 1), (PyObject *)v);
done:
    Py_XDECREF(dargs);
    Py_DECREF(r);
    return res;
}

PyObject *nd_trace_vjp(PyObject *fn, PyObject *args, PyObject *kwargs, PyObject *argnums,
                       PyObject *backend, int has_aux, int grad, PyObject *cache)
{
    nd_trace *outer = nd_trace_current();
    int kind = ND_BACKEND_NATIVE;
    if (backend && backend != Py_None) {
        kind = nd_backend_find(backend);
        if (kind < 0) {
            PyErr_Format(PyExc_ValueError, "numdyn autodiff: backend %R: gradients run with "
                         "'native', 'eager' or 'aot_eager'", backend);
            return NULL;
        }
    }
    Py_ssize_t nargs = PyTuple_GET_SIZE(args), nw = PyTuple_GET_SIZE(argnums);
    char *diff = PyMem_Calloc((size_t)nargs + 1, 1);
    if (!diff) return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < nw; k++) {
        Py_ssize_t a = PyLong_AsSsize_t(PyTuple_GET_ITEM(argnums, k));
        if (a == -1 && PyErr_Occurred()) { PyMem_Free(diff); return NULL; }
        if (a < 0) a += nargs;
        if (a < 0 || a >= nargs) {
            PyErr_Format(PyExc_ValueError, "numdyn: argnums %zd out of range for %zd positional "
                         "arguments", a, nargs);
            PyMem_Free(diff);
            return NULL;
        }
        diff[a] = 1;
    }
    nd_replay *rp = NULL;
    PyObject *rtarget = NULL;  /* the function the cache scans and replays */
    PyObject **rargs = NULL;   /* its arguments: args, then (grad) the three ones */
    PyObject *tlist = NULL;    /* vjp: its recorded backwards (NdBwd), by index */
    int vjpc = !grad && cache && PyTuple_Check(cache) && PyTuple_GET_SIZE(cache) == 2 &&
               PyList_Check(PyTuple_GET_ITEM(cache, 1));
    Py_ssize_t nr = grad ? nargs + 3 : nargs;
    int want = 0;
    if (!outer && (grad || vjpc) && cache && cache != Py_None && !kwargs && replay_enabled()) {
        PyObject *cap = vjpc ? PyTuple_GET_ITEM(cache, 0) : cache;
        if (vjpc) tlist = PyTuple_GET_ITEM(cache, 1);
        if (!(rp = PyCapsule_GetPointer(cap, GRAD_CACHE)) || !(rtarget = target_of(fn))) {
            PyMem_Free(diff);
            return NULL;
        }
        PyObject *r = NULL;
        if (ones_init() == 0 && (rargs = PyMem_Malloc(sizeof(PyObject *) * (size_t)(nargs + 3)))) {
            for (Py_ssize_t k = 0; k < nargs; k++) rargs[k] = PyTuple_GET_ITEM(args, k);
            for (int k = 0; k < 3; k++) rargs[nargs + k] = ones[k];
            r = nd__replay_try(rp, rtarget, rargs, (size_t)nr, NULL, kind, NULL);
            if (r && vjpc) r = vjp_warm(r, tlist, args, diff, kind);
        } else if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        if (r || PyErr_Occurred() || (want = nd__replay_want(rp, rtarget)) < 0) {
            Py_DECREF(rtarget);
            PyMem_Free(rargs);
            PyMem_Free(diff);
            return r;
        }
    }
    nd_trace *t = outer;
    if (!t) {
        t = nd__trace_new(kind, NULL, NULL, NULL, 0);
        if (!t) { PyMem_Free(diff); return NULL; }
    } else {
        nd__trace_incref(t);
    }
    nd_trace *prev = nd__tls_trace;
    nd__tls_trace = t;
    nd_replay_rec rec, *prev_rec = nd__tls_rec;
    memset(&rec, 0, sizeof rec);
    if (want) {
        rec.trace = t;
        rec.elem_lazy = !nd__replay_elem_eager(rp);
        nd__tls_rec = &rec;
    }
    leaf_ctx lc = {t, outer != NULL, NULL, NULL, 0, 0};
    nd_ad_capture ad = {t->ad, NULL, 0, NULL, 0, NULL, 0, 0};
    PyObject *wargs = PyTuple_New(nargs), *dargs = PyTuple_New(nw), *res = NULL, *out = NULL;
    PyObject *aux = Py_None, *leaves_out = NULL, *result = NULL, *target = NULL;
    PyObject *list = NULL, *saved = NULL, **vals = NULL;
    nd_id *outs = NULL, *cts = NULL, *grads = NULL, *ids = NULL;
    int nout = 0;
    Py_INCREF(aux);
    if (!wargs || !dargs) goto done;
    for (Py_ssize_t k = 0, j = 0; k < nargs; k++) {
        PyObject *a = PyTuple_GET_ITEM(args, k);
        /* an integer/bool array among vjp's primals is read as any other
         * argument (a caller proxy: the capture can be recorded) */
        int plain = diff[k] && !outer && PyArray_CheckExact(a) &&
                    strchr("biu", PyArray_DESCR((PyArrayObject *)a)->kind) != NULL;
        PyObject *w = diff[k] && !plain ? nd_map_leaves(a, wrap_leaf, &lc, 32, 0)
                      : outer ? Py_NewRef(a) : wrap_other(t, args, k);
        if (!w) goto done;
        PyTuple_SET_ITEM(wargs, k, w);
        if (diff[k]) PyTuple_SET_ITEM(dargs, j++, Py_NewRef(a));
    }
    if (!(target = target_of(fn))) goto done;
    ad.leaves = lc.ids;
    ad.nleaves = lc.n;
    t->ad = &ad;
    res = PyObject_Call(target, wargs, kwargs);
    t->ad = ad.prev;
    if (!res) goto done;
    if (has_aux) {
        if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2) {
            PyErr_SetString(PyExc_TypeError, "numdyn: has_aux=True requires the function to "
                            "return a pair (output, aux)");
            goto done;
        }
        out = Py_NewRef(PyTuple_GET_ITEM(res, 0));
        Py_SETREF(aux, Py_NewRef(PyTuple_GET_ITEM(res, 1)));
    } else {
        out = Py_NewRef(res);
    }
    if (!(leaves_out = out_leaves(out))) goto done;
    nout = (int)PyList_GET_SIZE(leaves_out);
    outs = PyMem_Malloc(sizeof(nd_id) * (size_t)(nout + 1));
    cts = PyMem_Malloc(sizeof(nd_id) * (size_t)(nout + 1));
    grads = PyMem_Malloc(sizeof(nd_id) * (size_t)(lc.n + 1));
    vals = PyMem_Calloc((size_t)(lc.n + 1), sizeof(PyObject *));
    if (!outs || !cts || !grads || !vals) { PyErr_NoMemory(); goto done; }
    nd_graph *g = t->g;
    if (grad && nout != 1) {
        PyErr_Format(PyExc_TypeError, "Gradient only defined for scalar-output functions. "
                     "Output was %R.", out);
        goto done;
    }
    for (int j = 0; j < nout; j++) {
        PyObject *o = PyList_GET_ITEM(leaves_out, j);
        outs[j] = cts[j] = ND_NONE;
        int dt = nd_proxy_check(o) ? nd_proxy_dtype(o) : PyArray_Check(o) ? PyArray_TYPE((PyArrayObject *)o)
                 : PyFloat_Check(o) ? NPY_DOUBLE : -1;
        if (grad) {
            int nd = nd_proxy_check(o) ? nd_proxy_ndim(o) : PyArray_Check(o) ? PyArray_NDIM((PyArrayObject *)o) : 0;
            if (nout != 1 || nd != 0) {
                PyErr_Format(PyExc_TypeError, "Gradient only defined for scalar-output functions. "
                             "Output was %R.", out);
                goto done;
            }
            if (!isflt(dt)) {
                PyErr_Format(PyExc_TypeError, "grad requires real-valued outputs (output dtype "
                             "that is a sub-dtype of np.floating), but got %s",
                             dt >= 0 ? nd_dtype_name(dt) : Py_TYPE(o)->tp_name);
                goto done;
            }
        }
        if (!nd_proxy_live(o) || !(isflt(dt) || iscplx(dt))) continue;
        if ((outs[j] = nd_proxy_read(o)) == ND_NONE) goto done;
        if (outer) continue;
        if (grad) {
            if ((cts[j] = scalar_one(g, dt)) == ND_NONE) goto done;
        } else {
            nd_node *on = nd_graph_node(g, outs[j]);
            npy_intp sh[ND_MAXDIMS];
            int nd = on->ndim;
            if (nd) memcpy(sh, on->shape, sizeof(npy_intp) * (size_t)nd);
            PyObject *ph = PyArray_ZEROS(nd, sh, dt, 0);
            if (!ph) goto done;
            nd_node n;
            nd_node_init(&n, ND_OP_INPUT, dt, nd, sh);
            n.obj = ph;
            if ((cts[j] = nd_graph_add(g, &n)) == ND_NONE) { Py_DECREF(ph); goto done; }
        }
    }
    if (outer && !grad) {
        /* lazily, at the pullback's call, inside this trace */
        NdVJP *v = PyObject_New(NdVJP, &NdVJP_Type);
        if (!v) goto done;
        v->t = t; nd__trace_incref(t);
        v->kind = kind; v->inline_ = 1; v->nout = nout;
        v->outs = outs; outs = NULL;
        v->cts = NULL; v->grads = NULL;
        v->nleaf = lc.n;
        v->leaves = lc.ids; lc.ids = NULL;
        v->scalar = lc.scalar; lc.scalar = NULL;
        v->args = Py_NewRef(dargs);
        v->saved = NULL;
        v->bwd = NULL;
        v->argv = NULL;
        result = Py_BuildValue("(OON)", out, aux, (PyObject *)v);
        goto done;
    }
    if (outer) {  /* grad inside a running trace: lazy proxies */
        for (int j = 0; j < nout; j++)
            if (outs[j] != ND_NONE && (cts[j] = scalar_one(g, g->nodes[outs[j]].dtype)) == ND_NONE) goto done;
    }
    nd_id nfwd = g->n;
    if (nd_autodiff_backward(g, nout, outs, cts, lc.n, lc.ids, grads) < 0 ||
        fill_zero_grads(g, lc.n, lc.ids, grads) < 0 || verify(g, grads, lc.n) < 0)
        goto done;
    alias_apply(g, &ad, nout, outs);
    if (want && !grad) {
        /* top level vjp, recorded: the forward's one flush computes the
         * outputs and the saved values; the backward is kept as a graph */
        if (!(list = PyList_New(0)) || saved_set(g, nfwd, list) < 0) goto done;
        Py_ssize_t nsv = PyList_GET_SIZE(list);
        PyObject *sp = PyTuple_New(nsv);
        if (!sp) goto done;
        for (Py_ssize_t k = 0; k < nsv; k++) {
            PyObject *p = nd_proxy_wrap(t, (nd_id)PyLong_AsLong(PyList_GET_ITEM(list, k)), 0);
            if (!p) { Py_DECREF(sp); goto done; }
            PyTuple_SET_ITEM(sp, k, p);
        }
        PyObject *raw = Py_BuildValue("(OONn)", out, aux, sp, PyList_GET_SIZE(tlist));
        if (!raw) goto done;
        rec.final = 1;
        PyObject *m = nd__materialize_tree(raw, 1);
        if (m && nd__flush_writes(t) < 0) Py_CLEAR(m);
        PyObject *bw = NULL;
        int bk = m ? bwd_build(g, nfwd, list, PyTuple_GET_ITEM(m, 2), nout, outs, cts, lc.n, grads,
                               lc.scalar, rargs, nargs, &bw) : -1;
        if (bk == 0 && (PyList_Append(tlist, bw) < 0 ||
                        nd__replay_record(rp, &rec, rtarget, rargs, (size_t)nargs, NULL, raw) < 0))
            bk = -1;
        Py_XDECREF(bw);
        Py_DECREF(raw);
        if (bk < 0) { Py_XDECREF(m); goto done; }
        /* this call's pullback: the trace's graph, as an unrecorded call's */
        if (!(saved = PyList_New(0))) { Py_DECREF(m); goto done; }
        for (Py_ssize_t k = 0; k < nsv; k++) {
            PyObject *pr = Py_BuildValue("(OO)", PyList_GET_ITEM(list, k),
                                         PyTuple_GET_ITEM(PyTuple_GET_ITEM(m, 2), k));
            if (!pr || PyList_Append(saved, pr) < 0) { Py_XDECREF(pr); Py_DECREF(m); goto done; }
            Py_DECREF(pr);
        }
        NdVJP *v = vjp_top(t, kind, nout, &outs, &cts, &lc, &grads, dargs, &saved);
        if (v) result = Py_BuildValue("(OON)", PyTuple_GET_ITEM(m, 0), PyTuple_GET_ITEM(m, 1), (PyObject *)v);
        Py_DECREF(m);
        goto done;
    }
    if (outer || want) {
        for (int k = 0; k < lc.n; k++)
            if (!(vals[k] = nd_proxy_wrap(t, grads[k], outer ? 0 : lc.scalar[k]))) goto done;
        PyObject *gt = grads_tree(dargs, vals, lc.scalar);
        if (!gt) goto done;
        PyObject *raw = Py_BuildValue("(OON)", out, aux, gt);
        if (outer || !raw) {
            result = raw;
            goto done;
        }
        /* top level, recorded: one flush of the lazy result, kept for replay */
        rec.final = 1;
        result = nd__materialize_tree(raw, 1);
        if (result && nd__flush_writes(t) < 0) Py_CLEAR(result);
        if (result && nd__replay_record(rp, &rec, rtarget, rargs, (size_t)nargs + 3, NULL, raw) < 0)
            Py_CLEAR(result);
        Py_DECREF(raw);
        goto done;
    }
    /* top level: one flush */
    if (!(list = PyList_New(0))) goto done;
    if (!grad && saved_set(g, nfwd, list) < 0) goto done;
    Py_ssize_t nsv = PyList_GET_SIZE(list);
    int nids = nout + (grad ? lc.n : (int)nsv), m = 0, nv = 0;
    ids = PyMem_Malloc(sizeof(nd_id) * (size_t)(nids + 1));
    PyObject **rs = PyMem_Calloc((size_t)(nids + 1), sizeof(PyObject *));
    if (!ids || !rs) { PyMem_Free(rs); PyErr_NoMemory(); goto done; }
    for (int j = 0; j < nout; j++) if (outs[j] != ND_NONE) ids[m++] = outs[j];
    nv = m;
    if (grad) for (int k = 0; k < lc.n; k++) ids[m++] = grads[k];
    else for (Py_ssize_t k = 0; k < nsv; k++) ids[m++] = (nd_id)PyLong_AsLong(PyList_GET_ITEM(list, k));
    int frc = nd__flush(t, ids, m, rs);
    if (frc == 0 && !grad) {
        if (!(saved = PyList_New(0))) frc = -1;
        for (Py_ssize_t k = 0; frc == 0 && k < nsv; k++) {
            PyObject *pr = Py_BuildValue("(iO)", (int)ids[nv + k], rs[nv + k]);
            if (!pr || PyList_Append(saved, pr) < 0) frc = -1;
            Py_XDECREF(pr);
        }
    }
    if (frc == 0 && grad)
        for (int k = 0; k < lc.n; k++) vals[k] = Py_NewRef(rs[nv + k]);
    for (int k = 0; k < m; k++) Py_XDECREF(rs[k]);
    PyMem_Free(rs);
    if (frc < 0) goto done;
    PyObject *mout = nd__materialize_tree(out, 1);
    PyObject *maux = mout ? nd__materialize_tree(aux, 1) : NULL;
    if (maux && nd__flush_writes(t) < 0) Py_CLEAR(maux);
    if (!maux) { Py_XDECREF(mout); goto done; }
    PyObject *third;
    if (grad) {
        third = grads_tree(dargs, vals, lc.scalar);
    } else {
        third = (PyObject *)vjp_top(t, kind, nout, &outs, &cts, &lc, &grads, dargs, &saved);
    }
    if (third) result = Py_BuildValue("(NNN)", mout, maux, third);
    else { Py_DECREF(mout); Py_DECREF(maux); }
done:
    t->ad = ad.prev;
    PyMem_Free(ad.dep);
    PyMem_Free(ad.alias);
    if (!outer) {
        /* NumPy would have made the caller-visible writes before raising */
        if (!result) {
            ND_EXC_SAVE(exc);
            if (nd__flush_writes(t) < 0) PyErr_Clear();
            ND_EXC_RESTORE(exc);
        }
        nd__trace_end(t);
    }
    nd__tls_trace = prev;
    nd__tls_rec = prev_rec;
    if (want && result && rec.nelem && rec.escapes) nd__replay_set_elem_eager(rp);
    nd__rec_clear(&rec);
    Py_XDECREF(rtarget);
    PyMem_Free(rargs);
    nd__trace_decref(t);
    if (vals) for (int k = 0; k < lc.n; k++) Py_XDECREF(vals[k]);
    PyMem_Free(vals);
    PyMem_Free(diff);
    PyMem_Free(lc.ids);
    PyMem_Free(lc.scalar);
    PyMem_Free(outs);
    PyMem_Free(cts);
    PyMem_Free(grads);
    PyMem_Free(ids);
    Py_XDECREF(wargs);
    Py_XDECREF(dargs);
    Py_XDECREF(res);
    Py_XDECREF(out);
    Py_XDECREF(aux);
    Py_XDECREF(leaves_out);
    Py_XDECREF(target);
    Py_XDECREF(list);
    Py_XDECREF(saved);
    return result;
}

static PyObject *mod_vjp(PyObject *m, PyObject *args, PyObject *kwargs)
{
    static char *kwl[] = {"fn", "args", "argnums", "kwargs", "backend", "has_aux", "grad",
                          "cache", NULL};
    PyObject *fn, *a, *argnums, *kw = Py_None, *backend = Py_None, *cache = Py_None;
    int has_aux = 0, grad = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!O!|OOppO", kwl, &fn, &PyTuple_Type, &a,
                                     &PyTuple_Type, &argnums, &kw, &backend, &has_aux, &grad,
                                     &cache))
        return NULL;
    if (kw != Py_None && !PyDict_Check(kw)) {
        PyErr_SetString(PyExc_TypeError, "numdyn._C._vjp: kwargs must be a dict or None");
        return NULL;
    }
    return nd_trace_vjp(fn, a, kw == Py_None ? NULL : kw, argnums, backend, has_aux, grad,
                        cache);
}

static PyObject *mod_grad_alias(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "numdyn._C._grad_alias takes (computed, known)");
        return NULL;
    }
    if (nd_trace_grad_alias(args[0], args[1]) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef grad_functions[] = {
    {"_grad_alias", (PyCFunction)(void (*)(void))mod_grad_alias, METH_FASTCALL,
     "_grad_alias(computed, known): inside a function _vjp differentiates, known (an "
     "argument) holds computed's value; see trace.h, nd_trace_grad_alias"},
    {"_vjp", (PyCFunction)(void (*)(void))mod_vjp, METH_VARARGS | METH_KEYWORDS,
     "_vjp(fn, args, argnums, kwargs=None, backend=None, has_aux=False, grad=False) -> "
     "(out, aux, VJP or gradients); see trace.h, nd_trace_vjp"},
    {"_grad_cache", mod_grad_cache, METH_NOARGS,
     "_grad_cache() -> the recorded traces of one grad function (pass as _vjp's cache)"},
    {NULL, NULL, 0, NULL},
};

int nd_grad_init(PyObject *m)
{
    if (nd_autodiff_init() < 0 || PyType_Ready(&NdVJP_Type) < 0 || PyType_Ready(&NdBwd_Type) < 0)
        return -1;
    if (PyModule_AddObjectRef(m, "VJP", (PyObject *)&NdVJP_Type) < 0) return -1;
    return PyModule_AddFunctions(m, grad_functions);
}
