/* tensor_tape.c -- the gradient tape of numdyn.Tensor.
 *
 * Every operation on Tensors that require grad (an operator, a ufunc, a
 * NumPy function, an ndarray method, a wrap_numpy call) leaves a node: the
 * callable that replays it on arrays and its arguments, with the Tensors
 * themselves in them. The Tensors it made point at it.
 *
 * backward() does not hold a VJP rule per operation: it turns the part of
 * the tape that leads to the Tensor into ONE function of arrays -- a
 * program of the recorded calls, with the leaves (and every other array the
 * calls read) as its parameters -- and hands that to numdyn's autodiff
 * (the autodiff layer's vjp, src/trace/trace.h's contract), which captures
 * it like any NumPy function and compiles forward and backward as fused
 * kernels. Programs are cached by their structure (which calls, how they
 * connect, the constants), so a training loop that builds the same tape
 * each step reuses one program object, and autodiff's per-signature cache
 * of captured forward/backward graphs with it.
 */
#include "tensor/tensor_internal.h"
#include "core/containers.h"
#include <stddef.h>
#include <string.h>

/* how deep arguments nest inside lists, tuples and dicts before the tape
 * stops looking (containers.h walks them) */
enum { ND_TAPE_DEPTH = 16 };

static int grad_enabled = 1;   /* numdyn.no_grad() turns it off (one interpreter lock) */
static PyObject *programs;     /* structure key -> NdTapeProgram */
static PyObject *vjp_entry;    /* the module's _vjp, looked up at first use */
static PyObject *alias_entry;  /* the module's _grad_alias, likewise */
static PyObject *module_ref;   /* numdyn._C (borrowed for the module's life) */

/* ------------------------------------------------------------ nodes */

typedef struct {
    PyObject_HEAD
    PyObject *func;     /* callable, or str (method / attribute name) */
    PyObject *args;     /* tuple: Tensors in place */
    PyObject *kwargs;   /* dict or NULL */
    PyObject *versions; /* dict id(Tensor) -> version read, for those past version 0; or NULL */
    /* a node whose forward ran as a vjp (a wrap_numpy call): its pullback,
     * the positions in args of the Tensors it differentiates, and the
     * forward's result (its output leaves give zero cotangents their
     * shapes); all NULL for a node backward() replays */
    PyObject *pull, *positions, *fwd;
    int kind;
    char freed;         /* a backward() without retain_graph went through it */
} NdTapeNode;

static PyTypeObject NdTapeNode_Type;

static int node_traverse(PyObject *o, visitproc visit, void *arg)
{
    NdTapeNode *n = (NdTapeNode *)o;
    Py_VISIT(n->func);
    Py_VISIT(n->args);
    Py_VISIT(n->kwargs);
    Py_VISIT(n->versions);
    Py_VISIT(n->pull);
    Py_VISIT(n->positions);
    Py_VISIT(n->fwd);
    return 0;
}

static int node_clear(PyObject *o)
{
    NdTapeNode *n = (NdTapeNode *)o;
    Py_CLEAR(n->func);
    Py_CLEAR(n->args);
    Py_CLEAR(n->kwargs);
    Py_CLEAR(n->versions);
    Py_CLEAR(n->pull);
    Py_CLEAR(n->positions);
    Py_CLEAR(n->fwd);
    return 0;
}

static void node_dealloc(PyObject *o)
{
    PyObject_GC_UnTrack(o);
    node_clear(o);
    PyObject_GC_Del(o);
}

static PyObject *node_repr(PyObject *o)
{
    NdTapeNode *n = (NdTapeNode *)o;
    if (n->kind == ND_OP_CALL) {
        PyObject *name = PyObject_GetAttrString(n->func, "__name__");
        if (!name) {
            PyErr_Clear();
            return PyUnicode_FromFormat("<numdyn backward of %R>", n->func);
        }
        PyObject *r = PyUnicode_FromFormat("<numdyn backward of %U>", name);
        Py_DECREF(name);
        return r;
    }
    return PyUnicode_FromFormat("<numdyn backward of .%U>", n->func);
}

static PyTypeObject NdTapeNode_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn.TapeNode",
    .tp_basicsize = sizeof(NdTapeNode),
    .tp_dealloc = node_dealloc,
    .tp_repr = node_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = node_traverse,
    .tp_clear = node_clear,
};

static int mark_output(PyObject *t, PyObject *node, int k)
{
    if (!nd_tensor_check(t) || !nd_tensor_dtype_differentiable(ND_TENSOR(t)->array)) return 0;
    NdTensor *x = ND_TENSOR(t);
    Py_XSETREF(x->node, Py_NewRef(node));
    x->node_out = k;
    x->requires_grad = 1;
    return 0;
}

int nd_tape_grad_enabled(void) { return grad_enabled; }

/* the key of output k of a node: cotangents (the sweep), perturbed values */
static PyObject *ct_key(PyObject *node, int k)
{
    return Py_BuildValue("(Ni)", PyLong_FromVoidPtr(node), k);
}

/* the Tensors among a node's arguments read at their current version:
 * marked (a later write keeps that value), versions past 0 noted */
static int note_version(PyObject *o, void *node)
{
    if (!nd_tensor_check(o)) return 0;
    NdTapeNode *n = node;
    NdTensor *t = ND_TENSOR(o);
    /* a view whose base was written since: the node reads its value now */
    if (nd_tensor_refresh_view(o) < 0) return -1;
    t->taped = 1;
    long long ver = nd_tensor_version(o);
    if (!ver) return 0;
    if (!n->versions && !(n->versions = PyDict_New())) return -1;
    PyObject *k = PyLong_FromVoidPtr(o), *v = PyLong_FromLongLong(ver);
    int rc = k && v ? PyDict_SetItem(n->versions, k, v) : -1;
    Py_XDECREF(k);
    Py_XDECREF(v);
    return rc;
}

static int note_versions(NdTapeNode *n, PyObject *o)
{
    return nd_tree_each(o, note_version, n, ND_TAPE_DEPTH);
}

/* the Tensor standing for argument o of node n: o at the version n read */
static PyObject *resolve(NdTapeNode *n, PyObject *o)
{
    if (!n || !n->versions) {
        if (!n || !nd_tensor_version(o)) return o;
        return nd_tensor_at_version(o, 0);
    }
    PyObject *k = PyLong_FromVoidPtr(o);
    if (!k) return NULL;
    PyObject *v = PyDict_GetItemWithError(n->versions, k);
    Py_DECREF(k);
    if (!v && PyErr_Occurred()) return NULL;
    return nd_tensor_at_version(o, v ? PyLong_AsLongLong(v) : 0);
}

static int record(int kind, PyObject *func, PyObject *args, PyObject *kwargs, PyObject *out,
                  PyObject *pull, PyObject *positions, PyObject *fwd)
{
    if (!grad_enabled) return 0;
    NdTapeNode *n = PyObject_GC_New(NdTapeNode, &NdTapeNode_Type);
    if (!n) return -1;
    n->func = Py_NewRef(func);
    n->args = Py_NewRef(args);
    n->kwargs = kwargs && PyDict_GET_SIZE(kwargs) ? PyDict_Copy(kwargs) : NULL;
    n->versions = NULL;
    n->pull = Py_XNewRef(pull);
    n->positions = Py_XNewRef(positions);
    n->fwd = Py_XNewRef(fwd);
    n->kind = kind;
    n->freed = 0;
    PyObject_GC_Track(n);
    if ((kwargs && PyDict_GET_SIZE(kwargs) && !n->kwargs) || note_versions(n, args) < 0 ||
        (n->kwargs && note_versions(n, n->kwargs) < 0)) {
        Py_DECREF(n);
        return -1;
    }
    int rc = 0;
    if (nd_tensor_check(out)) {
        rc = mark_output(out, (PyObject *)n, -1);
    } else if (PyTuple_Check(out) || PyList_Check(out) || PyDict_CheckExact(out)) {
        /* output k: the k-th leaf of the result (nested lists, tuples, dicts) */
        PyObject *leaves = nd_tree_leaves(out, ND_TAPE_DEPTH);
        rc = leaves ? 0 : -1;
        for (Py_ssize_t i = 0; leaves && i < PyList_GET_SIZE(leaves) && rc == 0; i++)
            rc = mark_output(PyList_GET_ITEM(leaves, i), (PyObject *)n, (int)i);
        Py_XDECREF(leaves);
    }
    Py_DECREF(n);
    return rc;
}

int nd_tape_record(int kind, PyObject *func, PyObject *args, PyObject *kwargs, PyObject *out)
{
    return record(kind, func, args, kwargs, out, NULL, NULL, NULL);
}

/* zeros of x's shape and dtype that hold no memory of their own (every
 * stride 0): what the sweep needs of a forward output -- a reference to
 * the output itself would count as memory shared with its Tensor and
 * refuse the Tensor's later in-place writes; None for a non-array */
static PyObject *placeholder(PyObject *x)
{
    if (PyTuple_Check(x) || PyList_Check(x) || PyDict_CheckExact(x)) return ND_NOT_LEAF;
    if (!PyArray_Check(x) && !PyArray_IsScalar(x, Generic)) return Py_NewRef(Py_None);
    PyObject *a = PyArray_FromAny(x, NULL, 0, 0, 0, NULL);
    if (!a) return NULL;
    PyArrayObject *A = (PyArrayObject *)a;
    PyObject *z = PyArray_ZEROS(0, NULL, PyArray_TYPE(A), 0);
    npy_intp st[NPY_MAXDIMS] = {0};
    PyObject *r = NULL;
    if (z) {
        PyArray_Descr *d = PyArray_DESCR((PyArrayObject *)z);
        Py_INCREF(d);
        r = PyArray_NewFromDescr(&PyArray_Type, d, PyArray_NDIM(A), PyArray_DIMS(A), st,
                                 PyArray_DATA((PyArrayObject *)z), 0, NULL);
        if (r) {
            int bad = PyArray_SetBaseObject((PyArrayObject *)r, z) < 0;
            z = NULL;  /* stolen, also on failure */
            if (bad) Py_CLEAR(r);
        }
    }
    Py_XDECREF(z);
    Py_DECREF(a);
    return r;
}

static PyObject *placeholder_leaf(PyObject *x, int depth, void *ctx) { return placeholder(x); }

int nd_tape_record_vjp(PyObject *func, PyObject *args, PyObject *kwargs, PyObject *out,
                       PyObject *pull, PyObject *positions, PyObject *fwd)
{
    PyObject *ph = nd_map_leaves(fwd, placeholder_leaf, NULL, ND_TAPE_DEPTH, 0);
    if (!ph) return -1;
    int rc = record(ND_OP_CALL, func, args, kwargs, out, pull, positions, ph);
    Py_DECREF(ph);
    return rc;
}

/* ------------------------------------------------------------ programs
 *
 * A program is a list of steps; a step's arguments are templates where
 * every Tensor (and every other ndarray) is a slot: ("in", i) for parameter
 * i, ("val", j, k) for output k (-1: all) of step j. Slots are instances of
 * a private type so that no user value is mistaken for one. */

typedef struct {
    PyObject_HEAD
    int step;   /* -1: a parameter */
    int index;  /* parameter number, or the output of the step (-1: its whole result) */
    int param;  /* a step output read as itself + this parameter (zeros), whose
                 * gradient is the output's (backward(inputs=) of a non-leaf);
                 * -1: none */
} NdSlot;

static PyObject *slot_richcompare(PyObject *a, PyObject *b, int op)
{
    if (Py_TYPE(a) != Py_TYPE(b) || (op != Py_EQ && op != Py_NE)) Py_RETURN_NOTIMPLEMENTED;
    int eq = ((NdSlot *)a)->step == ((NdSlot *)b)->step &&
             ((NdSlot *)a)->index == ((NdSlot *)b)->index &&
             ((NdSlot *)a)->param == ((NdSlot *)b)->param;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t slot_hash(PyObject *o)
{
    Py_hash_t h = ((Py_hash_t)((NdSlot *)o)->step * 1000003 + ((NdSlot *)o)->index) * 31 +
                  ((NdSlot *)o)->param + 17;
    return h == -1 ? -2 : h;
}

static PyTypeObject NdSlot_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.TapeSlot",
    .tp_basicsize = sizeof(NdSlot),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_richcompare = slot_richcompare,
    .tp_hash = slot_hash,
};

static PyObject *slot_new(int step, int index)
{
    NdSlot *s = PyObject_New(NdSlot, &NdSlot_Type);
    if (!s) return NULL;
    s->step = step;
    s->index = index;
    s->param = -1;
    return (PyObject *)s;
}

typedef struct {
    PyObject *order;    /* list of nodes, inputs before users */
    PyObject *index;    /* id(node) -> step number */
    PyObject *params;   /* list: the arrays the program reads (leaves first) */
    PyObject *pindex;   /* id(array or tensor) -> parameter number */
    PyObject *leaves;   /* list of leaf Tensors, in parameter order */
    PyObject *ptensors; /* flat programs (one step): per parameter its Tensor or None */
    PyObject *known;    /* or NULL: (step, output) -> the array the tape holds for it */
    PyObject *pobjs;    /* or NULL: per parameter the Tensor (or array) it stands for */
    PyObject *perturb;  /* or NULL: (id(node), output) -> parameter added to that value */
} builder;

/* the Tensors among node n's arguments (through tuples, lists, dicts), to
 * fn until it returns nonzero (that, or -1) */
typedef int (*arg_fn)(NdTapeNode *n, PyObject *t, void *ctx);

typedef struct { NdTapeNode *n; arg_fn fn; void *ctx; } args_ctx;

static int arg_tensor(PyObject *o, void *ctx)
{
    args_ctx *c = ctx;
    return nd_tensor_check(o) ? c->fn(c->n, o, c->ctx) : 0;
}

static int node_args_each(NdTapeNode *n, arg_fn fn, void *ctx)
{
    args_ctx c = {n, fn, ctx};
    int rc = nd_tree_each(n->args, arg_tensor, &c, ND_TAPE_DEPTH);
    return rc == 0 && n->kwargs ? nd_tree_each(n->kwargs, arg_tensor, &c, ND_TAPE_DEPTH) : rc;
}

/* collect: the node of argument t (at the version n read) goes on the stack */
static int push_arg_node(NdTapeNode *n, PyObject *t, void *stack)
{
    PyObject *r = resolve(n, t);
    if (!r) return -1;
    return ND_TENSOR(r)->node ? PyList_Append((PyObject *)stack, ND_TENSOR(r)->node) : 0;
}

/* post-order walk from a Tensor's node (iterative: deep tapes are common) */

static int collect(builder *b, PyObject *root)
{
    PyObject *stack = PyList_New(0);
    if (!stack || PyList_Append(stack, root) < 0) { Py_XDECREF(stack); return -1; }
    PyObject *seen = PySet_New(NULL);
    if (!seen) { Py_DECREF(stack); return -1; }
    int rc = 0;
    while (PyList_GET_SIZE(stack) && rc == 0) {
        Py_ssize_t top = PyList_GET_SIZE(stack) - 1;
        NdTapeNode *n = (NdTapeNode *)PyList_GET_ITEM(stack, top);
        PyObject *key = PyLong_FromVoidPtr(n);
        if (!key) { rc = -1; break; }
        int done = PyDict_Contains(b->index, key);
        if (done) {
            Py_DECREF(key);
            if (done < 0) { rc = -1; break; }
            PyList_SetSlice(stack, top, top + 1, NULL);
            continue;
        }
        int opened = PySet_Contains(seen, key);
        if (opened < 0) { Py_DECREF(key); rc = -1; break; }
        if (opened) {  /* every input visited: n's step comes now */
            PyObject *step = PyLong_FromSsize_t(PyList_GET_SIZE(b->order));
            rc = step && PyDict_SetItem(b->index, key, step) == 0 &&
                 PyList_Append(b->order, (PyObject *)n) == 0 ? 0 : -1;
            Py_XDECREF(step);
            Py_DECREF(key);
            PyList_SetSlice(stack, top, top + 1, NULL);
            continue;
        }
        rc = PySet_Add(seen, key);
        Py_DECREF(key);
        /* push the nodes of the Tensors among its arguments */
        if (rc == 0) rc = node_args_each(n, push_arg_node, stack);
    }
    Py_DECREF(seen);
    Py_DECREF(stack);
    return rc;
}

/* a parameter for array-valued `o` (a leaf Tensor, a Tensor outside the
 * differentiation, an ndarray): its slot */
static PyObject *param_slot(builder *b, PyObject *o)
{
    PyObject *key = PyLong_FromVoidPtr(o);
    if (!key) return NULL;
    PyObject *have = PyDict_GetItemWithError(b->pindex, key);
    if (have) {
        Py_DECREF(key);
        return slot_new(-1, (int)PyLong_AsLong(have));
    }
    if (PyErr_Occurred()) { Py_DECREF(key); return NULL; }
    Py_ssize_t i = PyList_GET_SIZE(b->params);
    PyObject *arr = nd_tensor_check(o) ? ND_TENSOR(o)->array : o;
    PyObject *num = PyLong_FromSsize_t(i);
    int rc = num ? PyDict_SetItem(b->pindex, key, num) : -1;
    Py_XDECREF(num);
    Py_DECREF(key);
    if (rc < 0 || PyList_Append(b->params, arr) < 0) return NULL;
    if (b->pobjs && PyList_Append(b->pobjs, o) < 0) return NULL;
    if (b->ptensors && PyList_Append(b->ptensors, nd_tensor_check(o) ? o : Py_None) < 0)
        return NULL;
    return slot_new(-1, (int)i);
}

/* the template of an argument: Tensors/arrays -> slots, containers copied
 * (lists become tuples: a key must hash; the step turns them back) */
static PyObject *template_of(builder *b, NdTapeNode *nd, PyObject *o, int depth)
{
    if (nd_tensor_check(o)) {
        if (!(o = resolve(nd, o))) return NULL;
        NdTensor *t = ND_TENSOR(o);
        if (t->node && !b->ptensors) {
            PyObject *key = PyLong_FromVoidPtr(t->node);
            PyObject *step = key ? PyDict_GetItemWithError(b->index, key) : NULL;
            Py_XDECREF(key);
            if (step) {
                /* the value this step output had when it was read: saved
                 * (an older version's array is a placeholder: recomputed) */
                if (b->known && !t->stale) {
                    PyObject *kk = Py_BuildValue("(Oi)", step, t->node_out);
                    int rc = kk ? PyDict_SetDefault(b->known, kk, t->array) ? 0 : -1 : -1;
                    Py_XDECREF(kk);
                    if (rc < 0) return NULL;
                }
                PyObject *s = slot_new((int)PyLong_AsLong(step), t->node_out);
                if (s && b->perturb) {
                    PyObject *pk = ct_key(t->node, t->node_out);
                    PyObject *pp = pk ? PyDict_GetItemWithError(b->perturb, pk) : NULL;
                    Py_XDECREF(pk);
                    if (pp) ((NdSlot *)s)->param = (int)PyLong_AsLong(pp);
                    else if (PyErr_Occurred()) Py_CLEAR(s);
                }
                return s;
            }
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_SystemError, "numdyn: tape node missing from its program");
            return NULL;
        }
        return param_slot(b, o);
    }
    if (PyArray_Check(o)) return param_slot(b, o);
    if (depth > ND_TAPE_DEPTH) return Py_NewRef(o);
    if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        PyObject *out = PyTuple_New(n + (PyList_CheckExact(o) ? 1 : 0));
        if (!out) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *v = template_of(b, nd, PySequence_Fast_GET_ITEM(o, i), depth + 1);
            if (!v) { Py_DECREF(out); return NULL; }
            PyTuple_SET_ITEM(out, i, v);
        }
        if (PyList_CheckExact(o)) {  /* a trailing marker: this was a list */
            PyObject *m = slot_new(-2, 0);
            if (!m) { Py_DECREF(out); return NULL; }
            PyTuple_SET_ITEM(out, n, m);
        }
        return out;
    }
    if (PyDict_CheckExact(o)) {
        /* (marker, (key, template) ...) sorted as the dict iterates */
        Py_ssize_t n = PyDict_GET_SIZE(o), pos = 0, i = 1;
        PyObject *out = PyTuple_New(n + 1), *k, *v;
        if (!out) return NULL;
        PyObject *m = slot_new(-3, 0);
        if (!m) { Py_DECREF(out); return NULL; }
        PyTuple_SET_ITEM(out, 0, m);
        while (PyDict_Next(o, &pos, &k, &v)) {
            PyObject *t = template_of(b, nd, v, depth + 1);
            PyObject *pair = t ? PyTuple_Pack(2, k, t) : NULL;
            Py_XDECREF(t);
            if (!pair) { Py_DECREF(out); return NULL; }
            PyTuple_SET_ITEM(out, i++, pair);
        }
        return out;
    }
    if (PySlice_Check(o)) {  /* slices hash only from 3.12: keep their parts */
        PySliceObject *s = (PySliceObject *)o;
        PyObject *m = slot_new(-4, 0);
        PyObject *out = m ? PyTuple_Pack(4, m, s->start, s->stop, s->step) : NULL;
        Py_XDECREF(m);
        return out;
    }
    if (o == Py_None) return Py_NewRef(o);
    /* a constant with its type: 2 == 2.0 == True, but NEP 50 types them apart */
    PyObject *m = slot_new(-5, 0);
    PyObject *out = m ? PyTuple_Pack(3, m, o, (PyObject *)Py_TYPE(o)) : NULL;
    Py_XDECREF(m);
    return out;
}

/* ---- the program object: callable on the parameters */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *steps;    /* tuple of (kind, func, args template, kwargs template or None) */
    PyObject *result;   /* slot of the differentiated value */
    Py_ssize_t nparams;
    /* ((step, output, parameter) ...) by step: the parameter holds that
     * step output's value, as the tape computed it (NULL: none) */
    PyObject *known;
} NdTapeProgram;

/* output k of a step's result: its k-th leaf (record's numbering) */
static PyObject *nth_leaf(PyObject *v, int k)
{
    if (PyTuple_Check(v) || PyList_Check(v)) {  /* the common flat case */
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v), i = 0;
        for (; i < n; i++) {
            PyObject *o = PySequence_Fast_GET_ITEM(v, i);
            if (PyTuple_Check(o) || PyList_Check(o) || PyDict_CheckExact(o)) break;
        }
        if (i == n) return PySequence_GetItem(v, k);
    }
    PyObject *leaves = nd_tree_leaves(v, ND_TAPE_DEPTH);
    if (!leaves) return NULL;
    PyObject *r = PySequence_GetItem(leaves, k);
    Py_DECREF(leaves);
    return r;
}

static PyObject *fill(PyObject *tpl, PyObject *const *params, PyObject **vals, int depth)
{
    if (Py_IS_TYPE(tpl, &NdSlot_Type)) {
        NdSlot *s = (NdSlot *)tpl;
        if (s->step == -1) return Py_NewRef(params[s->index]);
        PyObject *v = vals[s->step];
        v = s->index < 0 ? Py_NewRef(v) : nth_leaf(v, s->index);
        if (v && s->param >= 0) Py_SETREF(v, PyNumber_Add(v, params[s->param]));
        return v;
    }
    if (!PyTuple_CheckExact(tpl) || depth > 17) return Py_NewRef(tpl);
    Py_ssize_t n = PyTuple_GET_SIZE(tpl);
    if (n && Py_IS_TYPE(PyTuple_GET_ITEM(tpl, 0), &NdSlot_Type)) {
        int mark = ((NdSlot *)PyTuple_GET_ITEM(tpl, 0))->step;
        if (mark == -3) {  /* dict */
            PyObject *d = PyDict_New();
            for (Py_ssize_t i = 1; d && i < n; i++) {
                PyObject *pair = PyTuple_GET_ITEM(tpl, i);
                PyObject *v = fill(PyTuple_GET_ITEM(pair, 1), params, vals, depth + 1);
                if (!v || PyDict_SetItem(d, PyTuple_GET_ITEM(pair, 0), v) < 0) Py_CLEAR(d);
                Py_XDECREF(v);
            }
            return d;
        }
        if (mark == -5) return Py_NewRef(PyTuple_GET_ITEM(tpl, 1));
        if (mark == -4)
            return PySlice_New(PyTuple_GET_ITEM(tpl, 1), PyTuple_GET_ITEM(tpl, 2),
                               PyTuple_GET_ITEM(tpl, 3));
    }
    int is_list = n && Py_IS_TYPE(PyTuple_GET_ITEM(tpl, n - 1), &NdSlot_Type) &&
                  ((NdSlot *)PyTuple_GET_ITEM(tpl, n - 1))->step == -2;
    Py_ssize_t m = n - is_list;
    PyObject *out = is_list ? PyList_New(m) : PyTuple_New(m);
    if (!out) return NULL;
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *v = fill(PyTuple_GET_ITEM(tpl, i), params, vals, depth + 1);
        if (!v) { Py_DECREF(out); return NULL; }
        if (is_list) PyList_SET_ITEM(out, i, v);
        else PyTuple_SET_ITEM(out, i, v);
    }
    return out;
}

static PyObject *program_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames)
{
    NdTapeProgram *p = (NdTapeProgram *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != p->nparams || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_Format(PyExc_TypeError, "numdyn tape program takes %zd arrays, got %zd",
                     p->nparams, nargs);
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(p->steps);
    PyObject **vals = PyMem_Calloc((size_t)n + 1, sizeof(PyObject *));
    if (!vals) return PyErr_NoMemory();
    PyObject *res = NULL;
    Py_ssize_t i = 0, kn = 0;
    for (; i < n; i++) {
        PyObject *st = PyTuple_GET_ITEM(p->steps, i);
        int kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(st, 0));
        PyObject *func = PyTuple_GET_ITEM(st, 1);
        PyObject *a = fill(PyTuple_GET_ITEM(st, 2), args, vals, 0);
        PyObject *k = NULL;
        if (a && PyTuple_GET_ITEM(st, 3) != Py_None)
            k = fill(PyTuple_GET_ITEM(st, 3), args, vals, 0);
        if (!a || (PyTuple_GET_ITEM(st, 3) != Py_None && !k)) {
            Py_XDECREF(a);
            goto done;
        }
        PyObject *r;
        if (kind == ND_OP_CALL) {
            r = PyObject_Call(func, a, k);
        } else {
            PyObject *bound = PyObject_GetAttr(PyTuple_GET_ITEM(a, 0), func);
            if (kind == ND_OP_ATTR || !bound) {
                r = bound;
            } else {
                PyObject *rest = PyTuple_GetSlice(a, 1, PyTuple_GET_SIZE(a));
                r = rest ? PyObject_Call(bound, rest, k) : NULL;
                Py_XDECREF(rest);
                Py_DECREF(bound);
            }
        }
        Py_DECREF(a);
        Py_XDECREF(k);
        if (!r) goto done;
        vals[i] = r;
        /* differentiated (backward): the outputs the tape already holds
         * stand for what this step recomputes (trace.h, nd_trace_grad_alias) */
        for (; p->known && kn < PyTuple_GET_SIZE(p->known); kn++) {
            PyObject *e = PyTuple_GET_ITEM(p->known, kn);
            if (PyLong_AsSsize_t(PyTuple_GET_ITEM(e, 0)) != i) break;
            int idx = (int)PyLong_AsLong(PyTuple_GET_ITEM(e, 1));
            PyObject *piece = idx < 0 ? Py_NewRef(r) : nth_leaf(r, idx);
            PyObject *ok = piece ? PyObject_CallFunctionObjArgs(
                                       alias_entry, piece,
                                       args[PyLong_AsSsize_t(PyTuple_GET_ITEM(e, 2))], NULL)
                                 : NULL;
            Py_XDECREF(piece);
            if (!ok) { i++; goto done; }
            Py_DECREF(ok);
        }
    }
    res = fill(p->result, args, vals, 0);
done:
    for (Py_ssize_t j = 0; j < i; j++) Py_XDECREF(vals[j]);
    PyMem_Free(vals);
    return res;
}

static void program_dealloc(PyObject *o)
{
    Py_XDECREF(((NdTapeProgram *)o)->steps);
    Py_XDECREF(((NdTapeProgram *)o)->result);
    Py_XDECREF(((NdTapeProgram *)o)->known);
    PyObject_Free(o);
}

static PyTypeObject NdTapeProgram_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.TapeProgram",
    .tp_basicsize = sizeof(NdTapeProgram),
    .tp_dealloc = program_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(NdTapeProgram, vectorcall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
};

/* build_program: argument t of node n, at the version n read, is a
 * parameter and a leaf when it is a leaf Tensor that requires grad */
static int add_leaf(NdTapeNode *n, PyObject *t, void *ctx)
{
    builder *b = ctx;
    PyObject *o = resolve(n, t);
    if (!o) return -1;
    if (ND_TENSOR(o)->node || !ND_TENSOR(o)->requires_grad) return 0;
    PyObject *k = PyLong_FromVoidPtr(o);
    int have = k ? PyDict_Contains(b->pindex, k) : -1;
    Py_XDECREF(k);
    if (have) return have < 0 ? -1 : 0;
    PyObject *s = param_slot(b, o);
    int rc = s ? PyList_Append(b->leaves, o) : -1;
    Py_XDECREF(s);
    return rc;
}

/* the program computing `t` from its tape, its parameters, the leaves.
 * wrt (NULL or a list of Tensors): each non-leaf one the tape reaches is
 * read as its value + a parameter of zeros (its gradient is the
 * Tensor's); *pert_out (when asked) lists (Tensor, parameter) for those.
 * no_known: the step outputs the tape holds are not passed in (a backward
 * that is itself differentiated must see them computed from the leaves).
 * *pobjs_out (when asked): per parameter the Tensor or array it is. */
static PyObject *build_program_ex(PyObject *t, PyObject *wrt, int no_known, PyObject **params_out,
                                  PyObject **leaves_out, PyObject **pobjs_out, PyObject **pert_out)
{
    builder b = {PyList_New(0), PyDict_New(), PyList_New(0), PyDict_New(), PyList_New(0), NULL,
                 no_known ? NULL : PyDict_New(), pobjs_out ? PyList_New(0) : NULL,
                 wrt ? PyDict_New() : NULL};
    PyObject *prog = NULL, *steps = NULL, *key = NULL, *kspec = NULL, *known = NULL,
             *pert = pert_out ? PyList_New(0) : NULL;
    if (!b.order || !b.index || !b.params || !b.pindex || !b.leaves || (!no_known && !b.known) ||
        (pobjs_out && !b.pobjs) || (wrt && !b.perturb) || (pert_out && !pert))
        goto fail;
    if (collect(&b, ND_TENSOR(t)->node) < 0) goto fail;
    /* leaves first, in the order the tape meets them, so that parameter i
     * is leaf i for i < nleaves */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(b.order); i++)
        if (node_args_each((NdTapeNode *)PyList_GET_ITEM(b.order, i), add_leaf, &b) < 0) goto fail;
    /* the non-leaf Tensors to differentiate that the tape reaches */
    for (Py_ssize_t i = 0; wrt && i < PyList_GET_SIZE(wrt); i++) {
        NdTensor *w = ND_TENSOR(PyList_GET_ITEM(wrt, i));
        if (!w->node) continue;
        PyObject *nk = PyLong_FromVoidPtr(w->node);
        int in = nk ? PyDict_Contains(b.index, nk) : -1;
        Py_XDECREF(nk);
        if (in < 0) goto fail;
        PyObject *pk = in ? ct_key(w->node, w->node_out) : NULL;
        int have = pk ? PyDict_Contains(b.perturb, pk) : 0;
        if (!in || have) { Py_XDECREF(pk); if (have < 0) goto fail; continue; }
        PyArrayObject *wa = (PyArrayObject *)w->array;
        PyObject *z = !pk ? NULL
                      : w->device == ND_DEV_CUDA
                          ? nd_tensor_cuda_zeros_like((PyObject *)w)
                          : PyArray_ZEROS(PyArray_NDIM(wa), PyArray_DIMS(wa), PyArray_TYPE(wa), 0);
        PyObject *num = z ? PyLong_FromSsize_t(PyList_GET_SIZE(b.params)) : NULL;
        int bad = !num || PyDict_SetItem(b.perturb, pk, num) < 0 ||
                  PyList_Append(b.params, z) < 0 || (b.pobjs && PyList_Append(b.pobjs, z) < 0);
        if (!bad && pert) {
            PyObject *e = PyTuple_Pack(2, (PyObject *)w, num);
            bad = !e || PyList_Append(pert, e) < 0;
            Py_XDECREF(e);
        }
        Py_XDECREF(pk);
        Py_XDECREF(z);
        Py_XDECREF(num);
        if (bad) goto fail;
    }
    Py_ssize_t n = PyList_GET_SIZE(b.order);
    steps = PyTuple_New(n);
    if (!steps) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        NdTapeNode *nd = (NdTapeNode *)PyList_GET_ITEM(b.order, i);
        PyObject *a = template_of(&b, nd, nd->args, 0);
        PyObject *k = nd->kwargs ? template_of(&b, nd, nd->kwargs, 0) : Py_NewRef(Py_None);
        PyObject *st = a && k ? Py_BuildValue("(iOOO)", nd->kind, nd->func, a, k) : NULL;
        Py_XDECREF(a);
        Py_XDECREF(k);
        if (!st) goto fail;
        PyTuple_SET_ITEM(steps, i, st);
    }
    PyObject *res = template_of(&b, NULL, t, 0);
    if (!res) goto fail;
    /* the saved step outputs, by step, as parameters after the others */
    {
        PyObject *ks = b.known ? PyDict_Keys(b.known) : PyList_New(0);
        if (!ks || PyList_Sort(ks) < 0) { Py_XDECREF(ks); Py_DECREF(res); goto fail; }
        Py_ssize_t nk = PyList_GET_SIZE(ks);
        kspec = PyList_AsTuple(ks);
        known = PyTuple_New(nk);
        for (Py_ssize_t j = 0; kspec && known && j < nk; j++) {
            PyObject *kk = PyList_GET_ITEM(ks, j);
            PyObject *e = Py_BuildValue("(OOn)", PyTuple_GET_ITEM(kk, 0), PyTuple_GET_ITEM(kk, 1),
                                        PyList_GET_SIZE(b.params));
            if (!e || PyList_Append(b.params, PyDict_GetItem(b.known, kk)) < 0 ||
                (b.pobjs && PyList_Append(b.pobjs, PyDict_GetItem(b.known, kk)) < 0)) {
                Py_XDECREF(e);
                Py_CLEAR(known);
                break;
            }
            PyTuple_SET_ITEM(known, j, e);
        }
        Py_DECREF(ks);
        if (!kspec || !known) { Py_DECREF(res); goto fail; }
    }
    if (!alias_entry && !(alias_entry = PyObject_GetAttrString(module_ref, "_grad_alias"))) {
        Py_DECREF(res);
        goto fail;
    }
    /* nparams too: a perturbation parameter no step reads still counts */
    key = Py_BuildValue("(OOOn)", steps, res, kspec, PyList_GET_SIZE(b.params));
    if (!key) { Py_DECREF(res); goto fail; }
    /* the same structure (and constants) reuses its program: autodiff's
     * caches are keyed on the callable */
    if (PyObject_Hash(key) != -1) {
        prog = Py_XNewRef(PyDict_GetItemWithError(programs, key));
        if (!prog && PyErr_Occurred()) { Py_DECREF(res); goto fail; }
    } else {
        PyErr_Clear();  /* an unhashable constant: a program of its own */
        Py_CLEAR(key);
    }
    if (!prog) {
        NdTapeProgram *p = PyObject_New(NdTapeProgram, &NdTapeProgram_Type);
        if (!p) { Py_DECREF(res); goto fail; }
        p->vectorcall = program_vectorcall;
        p->known = NULL;
        p->steps = Py_NewRef(steps);
        p->result = Py_NewRef(res);
        p->nparams = PyList_GET_SIZE(b.params);
        p->known = PyTuple_GET_SIZE(known) ? Py_NewRef(known) : NULL;
        prog = (PyObject *)p;
        if (key) {
            if (PyDict_GET_SIZE(programs) > 256) PyDict_Clear(programs);
            if (PyDict_SetItem(programs, key, prog) < 0) { Py_DECREF(res); goto fail; }
        }
    }
    Py_DECREF(res);
    *params_out = Py_NewRef(b.params);
    *leaves_out = Py_NewRef(b.leaves);
    if (pobjs_out) *pobjs_out = Py_NewRef(b.pobjs);
    if (pert_out) *pert_out = Py_NewRef(pert);
    goto done;
fail:
    Py_CLEAR(prog);
done:
    Py_XDECREF(key);
    Py_XDECREF(steps);
    Py_XDECREF(b.order);
    Py_XDECREF(b.index);
    Py_XDECREF(b.params);
    Py_XDECREF(b.pindex);
    Py_XDECREF(b.leaves);
    Py_XDECREF(b.known);
    Py_XDECREF(b.pobjs);
    Py_XDECREF(b.perturb);
    Py_XDECREF(pert);
    Py_XDECREF(kspec);
    Py_XDECREF(known);
    return prog;
}

static PyObject *build_program(PyObject *t, PyObject **params_out, PyObject **leaves_out)
{
    return build_program_ex(t, NULL, 0, params_out, leaves_out, NULL, NULL);
}

/* ------------------------------------------------------------ backward */

/* torch frees what a backward saved unless retain_graph=True, and a later
 * backward through a node that saved a value raises; nodes whose backward
 * reads no forward value (sums, views, indexing, additions: torch's
 * AddBackward, SumBackward, ...) go through again. 1: this node's
 * backward reads saved values (a wrap_numpy vjp's residuals always) */
static int node_saves(const NdTapeNode *n)
{
    static const char *linear[] = {
        "add", "sub", "iadd", "isub", "neg", "pos", "getitem", "subtract", "negative",
        "positive", "sum", "mean", "reshape", "transpose", "ravel", "flatten", "squeeze",
        "expand_dims", "swapaxes", "moveaxis", "concatenate", "stack", "hstack", "vstack",
        "broadcast_to", "cumsum", "copy", "diagonal", "trace", "real", "imag", "T", "mT",
        "__getitem__", "__add__", "__radd__", "__sub__", "__rsub__", "__neg__", "__pos__",
        "_setitem_copy", "view", "clone", NULL};
    if (n->pull) return 1;
    PyObject *name = PyUnicode_Check(n->func) ? Py_NewRef(n->func)
                                              : PyObject_GetAttrString(n->func, "__name__");
    if (!name) { PyErr_Clear(); return 1; }
    const char *s = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
    if (!s) PyErr_Clear();
    int saves = 1;
    for (int k = 0; s && linear[k] && saves; k++) saves = strcmp(s, linear[k]) != 0;
    Py_DECREF(name);
    return saves;
}

static int check_not_freed(PyObject *order)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(order); i++) {
        NdTapeNode *n = (NdTapeNode *)PyList_GET_ITEM(order, i);
        if (n->freed && node_saves(n)) {
            PyErr_SetString(PyExc_RuntimeError,
                            "Trying to backward through the graph a second time (or directly "
                            "access saved tensors after they have already been freed). Saved "
                            "intermediate values of the graph are freed when you call "
                            ".backward() or autograd.grad(). Specify retain_graph=True if you "
                            "need to backward through the graph a second time or if you need "
                            "to access saved tensors after calling backward.");
            return -1;
        }
    }
    return 0;
}

static int leaf_wanted(PyObject *wrt, PyObject *t);

static int accumulate(PyObject *leaf, PyObject *g, int conj)
{
    NdTensor *t = ND_TENSOR(leaf);
    /* a perturbation parameter of a create_graph backward: the gradient
     * reaching it is its retained non-leaf Tensor's (torch: a retained y
     * gets its share of a second-order backward) */
    if (t->grad_to) t = ND_TENSOR(t->grad_to);
    if (g == Py_None) {
        PyErr_SetString(PyExc_SystemError, "numdyn: autodiff gave no gradient for a float leaf");
        return -1;
    }
    PyObject *arr = PyArray_FromAny(g, NULL, 0, 0, 0, NULL);
    if (!arr) return -1;
    /* complex leaves: torch's conjugate-Wirtinger gradient, the conjugate
     * of autodiff's (JAX's; src/passes/autodiff.h) */
    if (conj && PyArray_ISCOMPLEX((PyArrayObject *)arr))
        Py_SETREF(arr, PyArray_Conjugate((PyArrayObject *)arr, NULL));
    if (!arr) return -1;
    /* a gradient has its leaf's shape and dtype */
    PyObject *cast = PyArray_CastToType((PyArrayObject *)arr,
                                        PyArray_DescrNew(PyArray_DESCR((PyArrayObject *)t->array)),
                                        0);
    Py_DECREF(arr);
    if (!cast) return -1;
    if (!t->grad) {
        t->grad = nd_tensor_from_array(cast);
        Py_DECREF(cast);
        return t->grad ? 0 : -1;
    }
    PyObject *sum = PyNumber_Add(ND_TENSOR(t->grad)->array, cast);
    Py_DECREF(cast);
    if (!sum) return -1;
    PyObject *ng = nd_tensor_from_array(sum);
    Py_DECREF(sum);
    if (!ng) return -1;
    Py_SETREF(t->grad, ng);
    return 0;
}

/* ------------------------------------------------------------ the sweep
 *
 * A tape holding a node whose forward ran as a vjp (wrap_numpy) is
 * differentiated node by node, last first (torch's order): such a node's
 * pullback takes its outputs' cotangents and gives its arguments' from the
 * values its forward saved, with no forward run again; any other node is
 * differentiated by a vjp of its own one-step program. Cotangents are
 * summed per (node, output). */

/* the output leaves of a node's forward result, as _vjp walks them (nested
 * tuples, lists, dicts), else the result itself (new list) */
static PyObject *out_items(PyObject *fwd) { return nd_tree_leaves(fwd, ND_TAPE_DEPTH); }


/* d[key] += g (g borrowed) */
static int ct_add(PyObject *d, PyObject *key, PyObject *g)
{
    PyObject *have = PyDict_GetItemWithError(d, key);
    if (!have) return PyErr_Occurred() ? -1 : PyDict_SetItem(d, key, g);
    PyObject *sum = PyNumber_Add(have, g);
    if (!sum) return -1;
    int rc = PyDict_SetItem(d, key, sum);
    Py_DECREF(sum);
    return rc;
}

/* a node that has no pullback: the vjp of its one-step program, with every
 * Tensor argument a parameter. *pull, *fwd, *prims (the Tensors the
 * gradients belong to, in order) new refs; 0 / -1. */
static int node_vjp(NdTapeNode *n, PyObject **pull, PyObject **fwd, PyObject **prims)
{
    builder b = {PyList_New(0), PyDict_New(), PyList_New(0), PyDict_New(), PyList_New(0),
                 PyList_New(0)};
    PyObject *a = NULL, *k = NULL, *st = NULL, *steps = NULL, *argnums = NULL, *pargs = NULL,
             *r3 = NULL;
    NdTapeProgram *p = NULL;
    int rc = -1;
    *pull = *fwd = *prims = NULL;
    if (!b.order || !b.index || !b.params || !b.pindex || !b.leaves || !b.ptensors) goto done;
    a = template_of(&b, n, n->args, 0);
    k = a ? (n->kwargs ? template_of(&b, n, n->kwargs, 0) : Py_NewRef(Py_None)) : NULL;
    st = k ? Py_BuildValue("(iOOO)", n->kind, n->func, a, k) : NULL;
    steps = st ? PyTuple_Pack(1, st) : NULL;
    if (!steps || !(p = PyObject_New(NdTapeProgram, &NdTapeProgram_Type))) goto done;
    p->vectorcall = program_vectorcall;
    p->steps = Py_NewRef(steps);
    p->known = NULL;
    p->nparams = PyList_GET_SIZE(b.params);
    if (!(p->result = slot_new(0, -1))) goto done;
    if (!(*prims = PyList_New(0)) || !(argnums = PyList_New(0))) goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(b.ptensors); i++) {
        PyObject *t = PyList_GET_ITEM(b.ptensors, i);
        if (t == Py_None || !ND_TENSOR(t)->requires_grad ||
            !nd_tensor_dtype_differentiable(ND_TENSOR(t)->array))
            continue;
        PyObject *num = PyLong_FromSsize_t(i);
        int bad = !num || PyList_Append(argnums, num) < 0 || PyList_Append(*prims, t) < 0;
        Py_XDECREF(num);
        if (bad) goto done;
    }
    Py_SETREF(argnums, PyList_AsTuple(argnums));
    pargs = argnums ? PyList_AsTuple(b.params) : NULL;
    r3 = pargs ? PyObject_CallFunction(vjp_entry, "OOOOsOO", (PyObject *)p, pargs, argnums,
                                       Py_None, "native", Py_False, Py_False)
               : NULL;
    if (!r3) goto done;
    if (!PyTuple_Check(r3) || PyTuple_GET_SIZE(r3) != 3) {
        PyErr_SetString(PyExc_SystemError, "numdyn: _vjp returned something other than "
                        "(out, aux, vjp)");
        goto done;
    }
    *fwd = Py_NewRef(PyTuple_GET_ITEM(r3, 0));
    *pull = Py_NewRef(PyTuple_GET_ITEM(r3, 2));
    rc = 0;
done:
    if (rc < 0) { Py_CLEAR(*prims); }
    Py_XDECREF(r3);
    Py_XDECREF(pargs);
    Py_XDECREF(argnums);
    Py_XDECREF((PyObject *)p);
    Py_XDECREF(steps);
    Py_XDECREF(st);
    Py_XDECREF(a);
    Py_XDECREF(k);
    Py_XDECREF(b.order);
    Py_XDECREF(b.index);
    Py_XDECREF(b.params);
    Py_XDECREF(b.pindex);
    Py_XDECREF(b.leaves);
    Py_XDECREF(b.ptensors);
    return rc;
}

/* the cotangent of each output leaf of node n (fwd its forward result):
 * what the sweep summed, zeros for a float output nothing reached, None
 * for the others. New tuple, or NULL. *any: some cotangent was summed. */
static PyObject *node_cts(PyObject *cts, NdTapeNode *n, PyObject *fwd, int *any)
{
    PyObject *items = out_items(fwd);
    if (!items) return NULL;
    Py_ssize_t m = PyList_GET_SIZE(items);
    int single = !(PyTuple_Check(fwd) || PyList_Check(fwd) || PyDict_CheckExact(fwd));
    PyObject *r = PyTuple_New(m);
    *any = 0;
    for (Py_ssize_t k = 0; r && k < m; k++) {
        PyObject *key = ct_key((PyObject *)n, single ? -1 : (int)k);
        PyObject *c = key ? PyDict_GetItemWithError(cts, key) : NULL;
        Py_XDECREF(key);
        if (c) {
            *any = 1;
            PyTuple_SET_ITEM(r, k, Py_NewRef(c));
            continue;
        }
        if (PyErr_Occurred()) { Py_CLEAR(r); break; }
        PyObject *arr = PyArray_FromAny(PyList_GET_ITEM(items, k), NULL, 0, 0, 0, NULL);
        if (!arr) { PyErr_Clear(); PyTuple_SET_ITEM(r, k, Py_NewRef(Py_None)); continue; }
        PyArrayObject *A = (PyArrayObject *)arr;
        PyObject *z = PyArray_ISFLOAT(A) || PyArray_ISCOMPLEX(A)
                      ? PyArray_ZEROS(PyArray_NDIM(A), PyArray_DIMS(A), PyArray_TYPE(A), 0)
                      : Py_NewRef(Py_None);
        Py_DECREF(arr);
        if (!z) { Py_CLEAR(r); break; }
        PyTuple_SET_ITEM(r, k, z);
    }
    Py_DECREF(items);
    return r;
}

/* a vjp node's differentiated arguments that are lists, tuples or dicts:
 * *prims and *grads (one entry per argument) become one entry per leaf,
 * each Tensor leaf (at the version the node read) paired with the leaf of
 * its gradient; other leaves are kept, skipped by the sweep. 0 / -1. */
static int container_prims(NdTapeNode *n, PyObject **prims, PyObject **grads)
{
    Py_ssize_t m = PyList_GET_SIZE(*prims), j;
    for (j = 0; j < m; j++) {
        PyObject *a = PyList_GET_ITEM(*prims, j);
        if (PyTuple_Check(a) || PyList_Check(a) || PyDict_CheckExact(a)) break;
    }
    if (j == m) return 0;
    PyObject *np = PyList_New(0), *ng = PyList_New(0);
    int rc = np && ng ? 0 : -1;
    for (j = 0; j < m && rc == 0; j++) {
        PyObject *a = PyList_GET_ITEM(*prims, j), *g = PyTuple_GET_ITEM(*grads, j);
        if (nd_tensor_check(a) || !(PyTuple_Check(a) || PyList_Check(a) || PyDict_CheckExact(a))) {
            rc = PyList_Append(np, a) < 0 || PyList_Append(ng, g) < 0 ? -1 : 0;
            continue;
        }
        PyObject *al = nd_tree_leaves(a, ND_TAPE_DEPTH);
        PyObject *gl = al ? (g == Py_None ? NULL : nd_tree_leaves(g, ND_TAPE_DEPTH)) : NULL;
        if (!al || (g != Py_None && !gl)) { Py_XDECREF(al); rc = -1; break; }
        if (gl && PyList_GET_SIZE(gl) != PyList_GET_SIZE(al)) {
            PyErr_SetString(PyExc_SystemError, "numdyn: a gradient's structure differs from its "
                            "argument's");
            rc = -1;
        }
        for (Py_ssize_t k = 0; rc == 0 && k < PyList_GET_SIZE(al); k++) {
            PyObject *leaf = PyList_GET_ITEM(al, k);
            if (!nd_tensor_check(leaf) || !ND_TENSOR(leaf)->requires_grad) continue;
            PyObject *t = resolve(n, leaf);
            rc = !t || PyList_Append(np, t) < 0 ||
                 PyList_Append(ng, gl ? PyList_GET_ITEM(gl, k) : Py_None) < 0 ? -1 : 0;
        }
        Py_DECREF(al);
        Py_XDECREF(gl);
    }
    PyObject *gt = rc == 0 ? PyList_AsTuple(ng) : NULL;
    Py_XDECREF(ng);
    if (!gt) { Py_XDECREF(np); return -1; }
    Py_SETREF(*prims, np);
    Py_SETREF(*grads, gt);
    return 0;
}

static int wrt_has(PyObject *wrt, PyObject *t);

static int sweep(PyObject *root, PyObject *g, PyObject *order, PyObject *wrt, PyObject *nonleaf)
{
    PyObject *cts = PyDict_New(), *lgrads = PyDict_New(), *lorder = PyList_New(0);
    int rc = -1;
    if (!cts || !lgrads || !lorder) goto done;
    PyObject *rk = ct_key(ND_TENSOR(root)->node, ND_TENSOR(root)->node_out);
    if (!rk || PyDict_SetItem(cts, rk, g) < 0) { Py_XDECREF(rk); goto done; }
    Py_DECREF(rk);
    for (Py_ssize_t i = PyList_GET_SIZE(order) - 1; i >= 0; i--) {
        NdTapeNode *n = (NdTapeNode *)PyList_GET_ITEM(order, i);
        PyObject *pull = NULL, *fwd = NULL, *prims = NULL, *c = NULL, *grads = NULL;
        int any = 0, bad = 1;
        if (n->pull) {
            /* the forward already ran: its pullback and its differentiated Tensors */
            pull = Py_NewRef(n->pull);
            fwd = Py_NewRef(n->fwd);
            /* per position its argument: a Tensor, or a list/tuple/dict
             * whose gradient has its structure (grads_leaves below) */
            prims = PyList_New(PyTuple_GET_SIZE(n->positions));
            for (Py_ssize_t j = 0; prims && j < PyTuple_GET_SIZE(n->positions); j++) {
                Py_ssize_t pos = PyLong_AsSsize_t(PyTuple_GET_ITEM(n->positions, j));
                PyObject *a = PyTuple_GET_ITEM(n->args, pos);
                PyObject *t = nd_tensor_check(a) ? resolve(n, a) : a;
                if (!t) { Py_CLEAR(prims); break; }
                PyList_SET_ITEM(prims, j, Py_NewRef(t));
            }
            if (!prims) goto next;
            /* nothing reached this node: it adds no gradient */
            if (!(c = node_cts(cts, n, fwd, &any))) goto next;
            if (!any) { bad = 0; goto next; }
        } else {
            /* does any cotangent reach it? (a node's outputs: -1, or 0..) */
            PyObject *k, *v;
            Py_ssize_t pos = 0;
            while (!any && PyDict_Next(cts, &pos, &k, &v))
                any = PyLong_AsVoidPtr(PyTuple_GET_ITEM(k, 0)) == (void *)n;
            if (!any) { bad = 0; goto next; }
            if (node_vjp(n, &pull, &fwd, &prims) < 0) goto next;
            if (!(c = node_cts(cts, n, fwd, &any))) goto next;
        }
        grads = PyObject_Call(pull, c, NULL);
        if (!grads) goto next;
        if (!PyTuple_Check(grads) || PyTuple_GET_SIZE(grads) != PyList_GET_SIZE(prims)) {
            PyErr_SetString(PyExc_SystemError, "numdyn: a pullback returned the wrong number "
                            "of gradients");
            goto next;
        }
        if (n->pull && container_prims(n, &prims, &grads) < 0) goto next;
        bad = 0;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(prims) && !bad; j++) {
            PyObject *t = PyList_GET_ITEM(prims, j), *gj = PyTuple_GET_ITEM(grads, j);
            if (gj == Py_None || !nd_tensor_check(t)) continue;
            PyObject *key;
            if (ND_TENSOR(t)->node) {
                key = ct_key(ND_TENSOR(t)->node, ND_TENSOR(t)->node_out);
                bad = !key || ct_add(cts, key, gj) < 0;
            } else {
                key = PyLong_FromVoidPtr(t);
                int have = key ? PyDict_Contains(lgrads, key) : -1;
                bad = have < 0 || (!have && PyList_Append(lorder, t) < 0) ||
                      ct_add(lgrads, key, gj) < 0;
            }
            Py_XDECREF(key);
        }
    next:
        Py_XDECREF(pull);
        Py_XDECREF(fwd);
        Py_XDECREF(prims);
        Py_XDECREF(c);
        Py_XDECREF(grads);
        if (bad) goto done;
    }
    if (!wrt && !PyList_GET_SIZE(lorder)) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: backward(): no leaf Tensor requires grad");
        goto done;
    }
    /* the leaves (those of inputs= only), then the non-leaf Tensors asked
     * for (inputs=, retain_grad) by their cotangents */
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(lorder); j++) {
        PyObject *t = PyList_GET_ITEM(lorder, j);
        int want = leaf_wanted(wrt, t);
        if (want < 0) goto done;
        if (!want) continue;
        PyObject *key = PyLong_FromVoidPtr(t);
        PyObject *gl = key ? PyDict_GetItemWithError(lgrads, key) : NULL;
        Py_XDECREF(key);
        if (!gl || accumulate(t, gl, 1) < 0) goto done;
    }
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(nonleaf); j++) {
        PyObject *t = PyList_GET_ITEM(nonleaf, j);
        PyObject *key = ct_key(ND_TENSOR(t)->node, ND_TENSOR(t)->node_out);
        PyObject *gl = key ? PyDict_GetItemWithError(cts, key) : NULL;
        Py_XDECREF(key);
        if (!gl && PyErr_Occurred()) goto done;
        if (gl && accumulate(t, gl, 1) < 0) goto done;
    }
    rc = 0;
done:
    Py_XDECREF(cts);
    Py_XDECREF(lgrads);
    Py_XDECREF(lorder);
    return rc;
}

/* ---- create_graph: the backward as a step of the tape
 *
 * backward(create_graph=True) records the gradients it computes as the
 * outputs of one more tape node, whose function is the backward itself:
 * GradFn(*params[, cotangent]) runs autodiff's vjp of the program on the
 * parameters and returns the gradients of the differentiated ones. A later
 * backward through those gradients captures that call like any step; the
 * vjp inside it runs inline in that capture (trace.h: grad of grad), so
 * autodiff differentiates the backward graph itself: second derivatives.
 * One GradFn per (program, argnums, ...) so that a loop that builds the
 * same tape each step reuses the same second-order program. */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *prog;      /* the NdTapeProgram */
    PyObject *argnums;   /* tuple: the parameters differentiated */
    PyObject *conj_out;  /* tuple of bools: conjugate that gradient (a complex one) */
    Py_ssize_t nparams;
    int scalar;          /* the cotangent is an implicit 1 (no argument) */
    int conj_ct;         /* conjugate the cotangent (a complex output) */
} NdTapeGrad;

static PyObject *grad_fns;   /* (prog, argnums, conj_out, scalar, conj_ct) -> NdTapeGrad */
static PyObject *np_conj;    /* numpy.conjugate */

static PyObject *conj_of(PyObject *x)
{
    if (!np_conj) {
        PyObject *np = PyImport_ImportModule("numpy");
        np_conj = np ? PyObject_GetAttrString(np, "conjugate") : NULL;
        Py_XDECREF(np);
        if (!np_conj) return NULL;
    }
    return PyObject_CallOneArg(np_conj, x);
}

static PyObject *gradfn_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames)
{
    NdTapeGrad *f = (NdTapeGrad *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != f->nparams + !f->scalar || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_Format(PyExc_TypeError, "numdyn tape gradient takes %zd arrays, got %zd",
                     f->nparams + !f->scalar, nargs);
        return NULL;
    }
    PyObject *pargs = PyTuple_New(f->nparams);
    for (Py_ssize_t i = 0; pargs && i < f->nparams; i++)
        PyTuple_SET_ITEM(pargs, i, Py_NewRef(args[i]));
    if (!pargs) return NULL;
    PyObject *r3 = PyObject_CallFunction(vjp_entry, "OOOOsOO", f->prog, pargs, f->argnums, Py_None,
                                         "native", Py_False, f->scalar ? Py_True : Py_False);
    Py_DECREF(pargs);
    if (!r3) return NULL;
    if (!PyTuple_Check(r3) || PyTuple_GET_SIZE(r3) != 3) {
        Py_DECREF(r3);
        PyErr_SetString(PyExc_SystemError, "numdyn: _vjp returned something other than "
                        "(out, aux, vjp)");
        return NULL;
    }
    PyObject *grads;
    if (f->scalar) {
        grads = Py_NewRef(PyTuple_GET_ITEM(r3, 2));
    } else {
        PyObject *ct = f->conj_ct ? conj_of(args[f->nparams]) : Py_NewRef(args[f->nparams]);
        grads = ct ? PyObject_CallOneArg(PyTuple_GET_ITEM(r3, 2), ct) : NULL;
        Py_XDECREF(ct);
    }
    Py_DECREF(r3);
    if (!grads) return NULL;
    Py_ssize_t m = PyTuple_GET_SIZE(f->argnums);
    if (!PyTuple_Check(grads) || PyTuple_GET_SIZE(grads) != m) {
        Py_DECREF(grads);
        PyErr_SetString(PyExc_SystemError, "numdyn: _vjp returned the wrong number of gradients");
        return NULL;
    }
    PyObject *out = PyTuple_New(m);
    for (Py_ssize_t i = 0; out && i < m; i++) {
        PyObject *gi = PyTuple_GET_ITEM(grads, i);
        gi = PyTuple_GET_ITEM(f->conj_out, i) == Py_True ? conj_of(gi) : Py_NewRef(gi);
        if (!gi) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, i, gi);
    }
    Py_DECREF(grads);
    return out;
}

static void gradfn_dealloc(PyObject *o)
{
    NdTapeGrad *f = (NdTapeGrad *)o;
    Py_XDECREF(f->prog);
    Py_XDECREF(f->argnums);
    Py_XDECREF(f->conj_out);
    PyObject_Free(o);
}

static PyObject *gradfn_repr(PyObject *o)
{
    return PyUnicode_FromFormat("<numdyn gradient of a tape program, %zd parameters>",
                                ((NdTapeGrad *)o)->nparams);
}

static PyTypeObject NdTapeGrad_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.TapeGradient",
    .tp_basicsize = sizeof(NdTapeGrad),
    .tp_dealloc = gradfn_dealloc,
    .tp_repr = gradfn_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(NdTapeGrad, vectorcall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
};

static PyObject *gradfn_get(PyObject *prog, Py_ssize_t nparams, PyObject *argnums,
                            PyObject *conj_out, int scalar, int conj_ct)
{
    PyObject *key = Py_BuildValue("(OOOii)", prog, argnums, conj_out, scalar, conj_ct);
    if (!key) return NULL;
    PyObject *f = PyDict_GetItemWithError(grad_fns, key);
    if (f || PyErr_Occurred()) {
        Py_DECREF(key);
        return Py_XNewRef(f);
    }
    NdTapeGrad *n = PyObject_New(NdTapeGrad, &NdTapeGrad_Type);
    if (!n) { Py_DECREF(key); return NULL; }
    n->vectorcall = gradfn_vectorcall;
    n->prog = Py_NewRef(prog);
    n->argnums = Py_NewRef(argnums);
    n->conj_out = Py_NewRef(conj_out);
    n->nparams = nparams;
    n->scalar = scalar;
    n->conj_ct = conj_ct;
    if (PyDict_GET_SIZE(grad_fns) > 256) PyDict_Clear(grad_fns);
    int rc = PyDict_SetItem(grad_fns, key, (PyObject *)n);
    Py_DECREF(key);
    if (rc < 0) Py_CLEAR(n);
    return (PyObject *)n;
}

/* t.grad += g where g is a Tensor of the tape (create_graph): out of place,
 * itself recorded, as torch accumulates a gradient that has a graph */
static int accumulate_graph(PyObject *leaf, PyObject *g)
{
    NdTensor *t = ND_TENSOR(leaf);
    if (!t->grad) {
        t->grad = Py_NewRef(g);
        return 0;
    }
    PyObject *sum = PyNumber_Add(t->grad, g);
    if (!sum) return -1;
    if (!nd_tensor_check(sum)) {
        Py_DECREF(sum);
        PyErr_SetString(PyExc_SystemError, "numdyn: a Tensor sum that is not a Tensor");
        return -1;
    }
    Py_SETREF(t->grad, sum);
    return 0;
}

static int wrt_has(PyObject *wrt, PyObject *t)
{
    for (Py_ssize_t i = 0; wrt && i < PyList_GET_SIZE(wrt); i++)
        if (PyList_GET_ITEM(wrt, i) == t) return 1;
    return 0;
}

static int each_arg(PyObject *order, arg_fn fn, void *ctx)
{
    int rc = 0;
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(order); i++)
        rc = node_args_each((NdTapeNode *)PyList_GET_ITEM(order, i), fn, ctx);
    return rc;
}

/* a leaf of wrt among the arguments */
static int arg_in_wrt(NdTapeNode *n, PyObject *t, void *wrt)
{
    return !ND_TENSOR(t)->node && wrt_has((PyObject *)wrt, t);
}

/* does t's value depend on a Tensor of wrt (or is it one)? torch's engine
 * runs, under inputs=, only the part of the graph between the root and
 * those: a retained Tensor elsewhere gets nothing. 1 / 0 / -1 */
static int depends_on_wrt(PyObject *t, PyObject *wrt)
{
    if (wrt_has(wrt, t)) return 1;
    builder cb = {PyList_New(0), PyDict_New(), NULL, NULL, NULL, NULL};
    int r = cb.order && cb.index && collect(&cb, ND_TENSOR(t)->node) == 0 ? 0 : -1;
    for (Py_ssize_t i = 0; r == 0 && i < PyList_GET_SIZE(wrt); i++) {
        NdTensor *w = ND_TENSOR(PyList_GET_ITEM(wrt, i));
        if (!w->node) continue;
        PyObject *k = PyLong_FromVoidPtr(w->node);
        r = k ? PyDict_Contains(cb.index, k) : -1;
        Py_XDECREF(k);
    }
    if (r == 0) r = each_arg(cb.order, arg_in_wrt, wrt);
    Py_XDECREF(cb.order);
    Py_XDECREF(cb.index);
    return r;
}

/* does a backward with inputs wrt (or NULL: all) fill leaf t's gradient?
 * A create_graph perturbation leaf stands for its retained Tensor, which
 * torch fills when it lies between the root and wrt. 1 / 0 / -1 */
static int leaf_wanted(PyObject *wrt, PyObject *t)
{
    if (!wrt || wrt_has(wrt, t)) return 1;
    PyObject *to = ND_TENSOR(t)->grad_to;
    return to && ND_TENSOR(to)->retains ? depends_on_wrt(to, wrt) : 0;
}

typedef struct { PyObject *out, *wrt; } retained_ctx;

static int add_retained(NdTapeNode *n, PyObject *o, void *ctx)
{
    retained_ctx *c = ctx;
    NdTensor *t = ND_TENSOR(o);
    if (!t->node || !t->retains || wrt_has(c->out, o)) return 0;
    PyObject *r = resolve(n, o);
    if (!r) return -1;
    if (r != o) return 0;  /* an older value than the Tensor now holds */
    int dep = c->wrt ? depends_on_wrt(o, c->wrt) : 1;
    return dep < 0 ? -1 : dep ? PyList_Append(c->out, o) : 0;
}

/* the non-leaf Tensors whose .grad a backward fills (inputs= among wrt,
 * retain_grad() among the root and the tape's arguments at the version
 * they were read), each once; new list */
static PyObject *nonleaf_targets(PyObject *root, PyObject *order, PyObject *wrt)
{
    PyObject *out = PyList_New(0);
    int rc = out ? 0 : -1;
    for (Py_ssize_t i = 0; rc == 0 && wrt && i < PyList_GET_SIZE(wrt); i++)
        if (ND_TENSOR(PyList_GET_ITEM(wrt, i))->node)
            rc = PyList_Append(out, PyList_GET_ITEM(wrt, i));
    if (rc == 0 && ND_TENSOR(root)->retains && !wrt_has(out, root)) {
        int dep = wrt ? depends_on_wrt(root, wrt) : 1;
        rc = dep < 0 ? -1 : dep ? PyList_Append(out, root) : 0;
    }
    retained_ctx c = {out, wrt};
    if (rc == 0) rc = each_arg(order, add_retained, &c);
    if (rc < 0) Py_CLEAR(out);
    return out;
}

/* a backward done: without retain_graph its nodes are freed (steals order) */
static PyObject *done_backward(PyObject *order, int retain)
{
    for (Py_ssize_t i = 0; !retain && i < PyList_GET_SIZE(order); i++)
        ((NdTapeNode *)PyList_GET_ITEM(order, i))->freed = 1;
    Py_DECREF(order);
    Py_RETURN_NONE;
}

PyObject *nd_tape_backward(PyObject *self, PyObject *grad, int retain, PyObject *wrt, int create)
{
    NdTensor *t = ND_TENSOR(self);
    /* a view whose base was written since it was made: its value now */
    if (grad_enabled && nd_tensor_refresh_view(self) < 0) return NULL;
    if (!t->requires_grad) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: backward() of a Tensor that does not "
                        "require grad (no operand of what made it requires grad)");
        return NULL;
    }
    if (t->device == ND_DEV_CUDA)  /* _cuda_tensor.py, from _tape_program's parts */
        return nd_tensor_cuda_backward(self, grad, wrt, create);
    PyArrayObject *a = (PyArrayObject *)t->array;
    PyObject *g;
    if (grad == Py_None) {
        if (PyArray_SIZE(a) != 1) {
            PyErr_SetString(PyExc_RuntimeError, "numdyn: grad can be implicitly created only "
                            "for single-element outputs; pass backward(grad)");
            return NULL;
        }
        g = PyArray_NewLikeArray(a, NPY_KEEPORDER, NULL, 1);
        if (!g) return NULL;
        PyObject *one = PyLong_FromLong(1);
        int rc = one ? PyArray_FillWithScalar((PyArrayObject *)g, one) : -1;
        Py_XDECREF(one);
        if (rc < 0) { Py_DECREF(g); return NULL; }
    } else {
        PyObject *u = nd_tensor_unwrap(grad, NULL);
        if (!u) return NULL;
        g = PyArray_FromAny(u, NULL, 0, 0, 0, NULL);
        Py_DECREF(u);
        if (!g) return NULL;
        if (PyArray_NDIM((PyArrayObject *)g) != PyArray_NDIM(a) ||
            !PyArray_CompareLists(PyArray_DIMS((PyArrayObject *)g), PyArray_DIMS(a),
                                  PyArray_NDIM(a))) {
            PyObject *gs = PyObject_GetAttrString(g, "shape");
            PyObject *as = gs ? PyObject_GetAttrString((PyObject *)a, "shape") : NULL;
            if (as)
                PyErr_Format(PyExc_RuntimeError, "numdyn: backward(grad): grad has shape %R, the "
                             "Tensor %R", gs, as);
            Py_XDECREF(gs);
            Py_XDECREF(as);
            Py_DECREF(g);
            return NULL;
        }
    }
    if (!t->node) {  /* a leaf: its own gradient */
        int rc = wrt && !wrt_has(wrt, self) ? 0 : accumulate(self, g, 0);
        Py_DECREF(g);
        if (rc < 0) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *order = NULL;  /* the tape's nodes, marked freed when done */
    if (!vjp_entry) {
        vjp_entry = PyObject_GetAttrString(module_ref, "_vjp");
        if (!vjp_entry) {
            Py_DECREF(g);
            PyErr_Clear();
            PyErr_SetString(PyExc_NotImplementedError,
                            "numdyn: Tensor.backward() needs numdyn's autodiff (_C._vjp), "
                            "which this build does not have");
            return NULL;
        }
    }
    {
        /* a tape with a node whose forward ran as a vjp: the sweep */
        builder cb = {PyList_New(0), PyDict_New(), NULL, NULL, NULL, NULL};
        int has = -1;
        if (cb.order && cb.index && collect(&cb, t->node) == 0 && check_not_freed(cb.order) == 0) {
            has = 0;
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(cb.order) && !has; i++)
                has = ((NdTapeNode *)PyList_GET_ITEM(cb.order, i))->pull != NULL;
        }
        /* create_graph: a vjp node's pullback runs saved residuals, nothing a
         * capture could differentiate; the program replays its compiled
         * function instead, inline in the capture (grad of compile) */
        if (has == 1 && create) has = 0;
        if (has == 1) {
            if (grad == Py_None && PyArray_ISCOMPLEX(a)) {
                PyErr_SetString(PyExc_RuntimeError, "numdyn: grad can be implicitly created "
                                "only for real scalar outputs");
                has = -1;
            } else if (PyArray_ISCOMPLEX((PyArrayObject *)g)) {  /* as below */
                Py_SETREF(g, PyArray_Conjugate((PyArrayObject *)g, NULL));
                if (!g) has = -1;
            }
            PyObject *nl = has == 1 ? nonleaf_targets(self, cb.order, wrt) : NULL;
            if (has == 1 && (!nl || sweep(self, g, cb.order, wrt, nl) < 0)) has = -1;
            Py_XDECREF(nl);
        }
        if (has >= 0) order = Py_NewRef(cb.order);
        Py_XDECREF(cb.order);
        Py_XDECREF(cb.index);
        if (has != 0) {
            Py_XDECREF(g);
            if (has < 0) return NULL;
            return done_backward(order, retain);
        }
    }
    PyObject *params = NULL, *leaves = NULL, *pobjs = NULL, *pert = NULL;
    PyObject *nl = nonleaf_targets(self, order, wrt);
    PyObject *prog = nl ? build_program_ex(self, PyList_GET_SIZE(nl) ? nl : NULL, create, &params,
                                           &leaves, &pobjs, &pert)
                        : NULL;
    Py_XDECREF(nl);
    if (!prog) { Py_DECREF(g); Py_XDECREF(order); return NULL; }
    PyObject *res = NULL, *argnums = NULL, *targets = NULL, *grads = NULL, *conj_out = NULL;
    Py_ssize_t nleaves = PyList_GET_SIZE(leaves);
    if (grad == Py_None && PyArray_ISCOMPLEX(a)) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: grad can be implicitly created only for "
                        "real scalar outputs");
        goto done;
    }
    /* what gets a gradient: every leaf, or those of inputs= and the
     * perturbation parameters of its non-leaf Tensors */
    argnums = PyList_New(0);
    targets = PyList_New(0);
    conj_out = PyList_New(0);
    if (!argnums || !targets || !conj_out) goto done;
    for (Py_ssize_t i = 0; i < nleaves + PyList_GET_SIZE(pert); i++) {
        PyObject *tt, *num;
        if (i < nleaves) {
            tt = PyList_GET_ITEM(leaves, i);
            int want = leaf_wanted(wrt, tt);
            if (want < 0) goto done;
            if (!want) continue;
            num = PyLong_FromSsize_t(i);
        } else {
            PyObject *e = PyList_GET_ITEM(pert, i - nleaves);
            tt = PyTuple_GET_ITEM(e, 0);
            num = Py_NewRef(PyTuple_GET_ITEM(e, 1));
        }
        int bad = !num || PyList_Append(argnums, num) < 0 || PyList_Append(targets, tt) < 0 ||
                  PyList_Append(conj_out, PyArray_ISCOMPLEX((PyArrayObject *)ND_TENSOR(tt)->array)
                                              ? Py_True : Py_False) < 0;
        Py_XDECREF(num);
        if (bad) goto done;
    }
    if (!PyList_GET_SIZE(targets)) {
        if (wrt) {  /* torch: inputs the graph does not reach keep their .grad */
            res = done_backward(Py_NewRef(order), retain);
            goto done;
        }
        PyErr_SetString(PyExc_RuntimeError, "numdyn: backward(): no leaf Tensor requires grad");
        goto done;
    }
    Py_SETREF(argnums, PyList_AsTuple(argnums));
    Py_SETREF(conj_out, conj_out ? PyList_AsTuple(conj_out) : NULL);
    if (!argnums || !conj_out) goto done;
    /* grad=1 for a 0-d float result (its gradients come from the same
     * run), else a VJP object called with the cotangent */
    int scalar = grad == Py_None && PyArray_NDIM(a) == 0;
    if (create) {
        PyObject *gf = gradfn_get(prog, PyList_GET_SIZE(params), argnums, conj_out, scalar,
                                  PyArray_ISCOMPLEX((PyArrayObject *)g));
        if (!gf) goto done;
        /* the call on arrays, then recorded with the Tensors it reads */
        Py_ssize_t np_ = PyList_GET_SIZE(params), na = np_ + !scalar;
        PyObject *cargs = PyTuple_New(na), *rargs = PyTuple_New(na);
        for (Py_ssize_t i = 0; cargs && rargs && i < np_; i++) {
            PyTuple_SET_ITEM(cargs, i, Py_NewRef(PyList_GET_ITEM(params, i)));
            PyTuple_SET_ITEM(rargs, i, Py_NewRef(PyList_GET_ITEM(pobjs, i)));
        }
        /* a retained non-leaf's perturbation parameter (zeros) is recorded
         * as a leaf requiring grad whose gradient goes to that Tensor: a
         * backward through these gradients gives it d/dp at p = 0, its
         * gradient as an intermediate value (torch's retain_grad) */
        for (Py_ssize_t j = 0; cargs && rargs && j < PyList_GET_SIZE(pert); j++) {
            PyObject *e = PyList_GET_ITEM(pert, j);
            PyObject *w = PyTuple_GET_ITEM(e, 0);
            Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(e, 1));
            if (!ND_TENSOR(w)->retains || k < 0 || k >= np_) continue;
            PyObject *pt = nd_tensor_from_array(PyList_GET_ITEM(params, k));
            if (!pt) { Py_CLEAR(cargs); break; }
            ND_TENSOR(pt)->requires_grad = 1;
            ND_TENSOR(pt)->grad_to = Py_NewRef(w);
            PyObject *old = PyTuple_GET_ITEM(rargs, k);
            PyTuple_SET_ITEM(rargs, k, pt);
            Py_DECREF(old);
        }
        if (cargs && rargs && !scalar) {
            PyTuple_SET_ITEM(cargs, np_, Py_NewRef(g));
            PyTuple_SET_ITEM(rargs, np_, Py_NewRef(nd_tensor_check(grad) ? grad : g));
        }
        PyObject *r = cargs && rargs ? PyObject_Call(gf, cargs, NULL) : NULL;
        Py_XDECREF(cargs);
        PyObject *tr = r ? nd_tensor_wrap_result(r) : NULL;  /* steals r */
        if (tr && (!PyTuple_Check(tr) || PyTuple_GET_SIZE(tr) != PyList_GET_SIZE(targets))) {
            PyErr_SetString(PyExc_SystemError, "numdyn: a tape gradient of the wrong arity");
            Py_CLEAR(tr);
        }
        int bad = !tr || nd_tape_record(ND_OP_CALL, gf, rargs, NULL, tr) < 0;
        Py_XDECREF(rargs);
        Py_DECREF(gf);
        for (Py_ssize_t i = 0; !bad && i < PyList_GET_SIZE(targets); i++)
            bad = accumulate_graph(PyList_GET_ITEM(targets, i), PyTuple_GET_ITEM(tr, i)) < 0;
        Py_XDECREF(tr);
        if (bad) goto done;
        res = done_backward(Py_NewRef(order), retain);
        goto done;
    }
    if (PyArray_ISCOMPLEX((PyArrayObject *)g)) {  /* torch's convention: conj(vjp(conj(g))) */
        Py_SETREF(g, PyArray_Conjugate((PyArrayObject *)g, NULL));
        if (!g) goto done;
    }
    /* trace.h's contract: _vjp(fn, args, argnums, kwargs, backend, has_aux,
     * grad) -> (out, aux, third) */
    PyObject *pargs = PyList_AsTuple(params);
    PyObject *res3 = pargs ? PyObject_CallFunction(vjp_entry, "OOOOsOO", prog, pargs, argnums,
                                                   Py_None, "native", Py_False,
                                                   scalar ? Py_True : Py_False)
                           : NULL;
    Py_XDECREF(pargs);
    if (res3 && PyTuple_Check(res3) && PyTuple_GET_SIZE(res3) == 3) {
        PyObject *third = PyTuple_GET_ITEM(res3, 2);
        /* the cotangent in the output's dtype, as _vjp casts it */
        grads = scalar ? Py_NewRef(third) : PyObject_CallOneArg(third, g);
    } else if (res3) {
        PyErr_SetString(PyExc_SystemError, "numdyn: _vjp returned something other than "
                        "(out, aux, vjp)");
    }
    Py_XDECREF(res3);
    if (!grads) goto done;
    if (!PyTuple_Check(grads) || PyTuple_GET_SIZE(grads) != PyList_GET_SIZE(targets)) {
        PyErr_SetString(PyExc_SystemError, "numdyn: _vjp returned the wrong number of gradients");
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(targets); i++)
        if (accumulate(PyList_GET_ITEM(targets, i), PyTuple_GET_ITEM(grads, i), 1) < 0) goto done;
    res = done_backward(Py_NewRef(order), retain);
done:
    Py_XDECREF(order);
    Py_DECREF(prog);
    Py_DECREF(params);
    Py_DECREF(leaves);
    Py_XDECREF(pobjs);
    Py_XDECREF(pert);
    Py_XDECREF(argnums);
    Py_XDECREF(targets);
    Py_XDECREF(conj_out);
    Py_XDECREF(grads);
    Py_XDECREF(g);
    return res;
}

/* ------------------------------------------------------------ module */

static PyObject *mod_set_grad_enabled(PyObject *m, PyObject *v)
{
    int on = PyObject_IsTrue(v);
    if (on < 0) return NULL;
    int was = grad_enabled;
    grad_enabled = on;
    return PyBool_FromLong(was);
}

static PyObject *mod_is_grad_enabled(PyObject *m, PyObject *unused)
{
    return PyBool_FromLong(grad_enabled);
}

/* _tape_program(t) -> (program, params, leaves); _tape_program(t, wrt,
 * create) -> (program, params, leaves, pobjs, pert): what nd_tape_backward
 * differentiates for backward(inputs=wrt (a list or None),
 * create_graph=create), for a CUDA Tensor's backward (_cuda_tensor.py) */
static PyObject *mod_tape_program(PyObject *m, PyObject *args)
{
    PyObject *t, *wrt = Py_None;
    int create = -1;
    if (!PyArg_ParseTuple(args, "O|Op:_tape_program", &t, &wrt, &create)) return NULL;
    if (!nd_tensor_check(t) || !ND_TENSOR(t)->node) {
        PyErr_SetString(PyExc_TypeError, "_tape_program: a Tensor computed on the tape");
        return NULL;
    }
    PyObject *params = NULL, *leaves = NULL, *pobjs = NULL, *pert = NULL;
    if (create < 0) {
        PyObject *prog = build_program(t, &params, &leaves);
        if (!prog) return NULL;
        return Py_BuildValue("(NNN)", prog, params, leaves);
    }
    if (wrt != Py_None && !PyList_Check(wrt)) {
        PyErr_SetString(PyExc_TypeError, "_tape_program: wrt is a list of Tensors or None");
        return NULL;
    }
    builder cb = {PyList_New(0), PyDict_New(), NULL, NULL, NULL, NULL};
    PyObject *nl = NULL;
    if (cb.order && cb.index && collect(&cb, ND_TENSOR(t)->node) == 0)
        nl = nonleaf_targets(t, cb.order, wrt == Py_None ? NULL : wrt);
    Py_XDECREF(cb.order);
    Py_XDECREF(cb.index);
    if (!nl) return NULL;
    PyObject *prog = build_program_ex(t, PyList_GET_SIZE(nl) ? nl : NULL, create, &params, &leaves,
                                      &pobjs, &pert);
    Py_DECREF(nl);
    if (!prog) return NULL;
    return Py_BuildValue("(NNNNN)", prog, params, leaves, pobjs, pert);
}

/* _tape_grad_fn(prog, nparams, argnums, conj_out, scalar, conj_ct): the
 * gradient function backward(create_graph=True) records (gradfn_get) */
static PyObject *mod_tape_grad_fn(PyObject *m, PyObject *args)
{
    PyObject *prog, *argnums, *conj_out;
    Py_ssize_t nparams;
    int scalar, conj_ct;
    if (!PyArg_ParseTuple(args, "OnO!O!pp:_tape_grad_fn", &prog, &nparams, &PyTuple_Type, &argnums,
                          &PyTuple_Type, &conj_out, &scalar, &conj_ct))
        return NULL;
    if (!vjp_entry && !(vjp_entry = PyObject_GetAttrString(module_ref, "_vjp"))) return NULL;
    return gradfn_get(prog, nparams, argnums, conj_out, scalar, conj_ct);
}

static PyMethodDef tape_functions[] = {
    {"_set_grad_enabled", mod_set_grad_enabled, METH_O,
     "Turn recording of Tensor operations on/off; returns the previous state."},
    {"is_grad_enabled", mod_is_grad_enabled, METH_NOARGS,
     "Whether operations on Tensors that require grad are recorded."},
    {"_tape_program", mod_tape_program, METH_VARARGS,
     "(program, params, leaves) that backward() of this Tensor differentiates; with "
     "(wrt, create) also the parameters' objects and the non-leaf (Tensor, parameter) pairs."},
    {"_tape_grad_fn", mod_tape_grad_fn, METH_VARARGS,
     "The gradient function of a tape program that backward(create_graph=True) records."},
    {NULL},
};

int nd_tape_init(PyObject *m)
{
    if (PyType_Ready(&NdTapeNode_Type) < 0 || PyType_Ready(&NdSlot_Type) < 0 ||
        PyType_Ready(&NdTapeProgram_Type) < 0 || PyType_Ready(&NdTapeGrad_Type) < 0)
        return -1;
    if (!(programs = PyDict_New()) || !(grad_fns = PyDict_New())) return -1;
    module_ref = m;
    return PyModule_AddFunctions(m, tape_functions);
}
