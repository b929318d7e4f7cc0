/* graph_py.c -- numdyn.Graph: a captured graph as Python sees it.
 *
 * What custom backends and export get: len(g), iteration over node objects
 * (.index .op .dtype .shape .inputs .attrs), g.outputs (node ids),
 * g.inputs (the example input arrays, in INPUT-node order), str(g) (one
 * node a line), and g(*arrays) which interprets the graph with NumPy (the
 * eager backend) on new input arrays of the traced dtypes and shapes.
 */
#include "core/npy.h"
#include "graph_py.h"
#include "core/dtypes.h"
#include "core/containers.h"
#include <string.h>

typedef struct {
    PyObject_HEAD
    nd_graph *g;
    nd_id *outs;
    int nout;
} graphobj;

typedef struct {
    PyObject_HEAD
    PyObject *graph;   /* graphobj, owned */
    nd_id index;
} nodeobj;

static PyTypeObject NdNode_Type;

/* ------------------------------------------------------------ formatting */


/* Appends to a growing Python list of str pieces (joined at the end). */
static int put(PyObject *parts, PyObject *s)
{
    if (!s) return -1;
    int r = PyList_Append(parts, s);
    Py_DECREF(s);
    return r;
}

static PyObject *ints_str(int n, const npy_intp *v)
{
    PyObject *t = nd_intp_tuple(n, v);
    if (!t) return NULL;
    PyObject *s = PyObject_Repr(t);
    Py_DECREF(t);
    return s;
}

static PyObject *axes_of(uint64_t mask, int ndim)
{
    npy_intp ax[64];
    int n = 0;
    for (int d = 0; d < ndim && d < 64; d++) if (mask & (1ULL << d)) ax[n++] = d;
    return nd_intp_tuple(n, ax);
}

static int in_ndim(nd_graph *g, const nd_node *n)
{
    return (n->nin > 0 && n->in[0] >= 0) ? g->nodes[n->in[0]].ndim : n->ndim;
}

static PyObject *node_line(nd_graph *g, nd_id i)
{
    nd_node *n = &g->nodes[i];
    PyObject *parts = PyList_New(0);
    if (!parts) return NULL;
    int ok = put(parts, PyUnicode_FromFormat("%%%d = %s", (int)i, nd_op_name(n->op))) == 0;
    if (ok && (n->op == ND_OP_UFUNC || n->op == ND_OP_REDUCE || n->op == ND_OP_SCAN))
        ok = put(parts, PyUnicode_FromFormat(" %s", nd_ufunc_name(n->sub))) == 0;
    if (ok && n->op == ND_OP_EXTERN && n->obj) {
        PyObject *nm = PyObject_GetAttrString(n->obj, "__name__");
        if (!nm) { PyErr_Clear(); nm = PyObject_Repr(n->obj); }
        ok = put(parts, nm ? PyUnicode_FromFormat(" %U", nm) : NULL) == 0;
        Py_XDECREF(nm);
    }
    if (ok && n->op == ND_OP_SCALAR) {
        PyObject *v = n->obj ? PyObject_Repr(n->obj) : PyUnicode_FromString("?");
        ok = put(parts, v ? PyUnicode_FromFormat(" %U", v) : NULL) == 0;
        Py_XDECREF(v);
    }
    int nin = n->op == ND_OP_EXTERN ? n->nextra : n->nin;
    if (ok && nin > 0) {
        ok = put(parts, PyUnicode_FromString("(")) == 0;
        for (int k = 0; ok && k < nin; k++) {
            nd_id j = n->op == ND_OP_EXTERN ? n->extra[k] : n->in[k];
            ok = put(parts, PyUnicode_FromFormat(k ? ", %%%d" : "%%%d", (int)j)) == 0;
        }
        if (ok) ok = put(parts, PyUnicode_FromString(")")) == 0;
    }
    switch (n->op) {
    case ND_OP_UFUNC: {
        int differs = 0;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0 && !PyArray_EquivTypenums(g->nodes[n->in[k]].dtype, n->in_dtype[k])) differs = 1;
        if (ok && differs) {
            ok = put(parts, PyUnicode_FromString(" loop=(")) == 0;
            for (int k = 0; ok && k < n->nin; k++)
                ok = put(parts, PyUnicode_FromFormat(k ? ", %s" : "%s", nd_dtype_name(n->in_dtype[k]))) == 0;
            if (ok) ok = put(parts, PyUnicode_FromString(")")) == 0;
        }
        if (ok && nd_ufunc_nout(n->sub) > 1)
            ok = put(parts, PyUnicode_FromFormat(" out=%d", n->aux)) == 0;
        break;
    }
    case ND_OP_REDUCE: {
        PyObject *ax = axes_of(n->axes, in_ndim(g, n));
        PyObject *s = ax ? PyObject_Repr(ax) : NULL;
        Py_XDECREF(ax);
        if (ok) ok = put(parts, s ? PyUnicode_FromFormat(" axes=%U", s) : NULL) == 0;
        Py_XDECREF(s);
        if (ok && (n->flags & ND_F_KEEPDIMS)) ok = put(parts, PyUnicode_FromString(" keepdims")) == 0;
        if (ok && n->in_dtype[0] >= 0 && !PyArray_EquivTypenums(n->in_dtype[0], n->dtype))
            ok = put(parts, PyUnicode_FromFormat(" acc=%s", nd_dtype_name(n->in_dtype[0]))) == 0;
        break;
    }
    case ND_OP_SCAN:
        if (ok) ok = put(parts, PyUnicode_FromFormat(" axis=%d", n->aux)) == 0;
        break;
    case ND_OP_INDEX:
        if (ok) ok = put(parts, PyUnicode_FromFormat(" axis=%d", n->aux)) == 0;
        break;
    case ND_OP_VIEW:
    case ND_OP_SETITEM: {
        int vnd = n->op == ND_OP_VIEW ? n->ndim : n->vndim;
        PyObject *st = ints_str(vnd, n->vstrides);
        if (ok) ok = put(parts, st ? PyUnicode_FromFormat(" off=%zd strides=%U", (Py_ssize_t)n->voff, st) : NULL) == 0;
        Py_XDECREF(st);
        if (ok && n->op == ND_OP_SETITEM) {
            PyObject *r = ints_str(n->vndim, n->vshape);
            ok = put(parts, r ? PyUnicode_FromFormat(" region=%U", r) : NULL) == 0;
            Py_XDECREF(r);
        }
        if (ok && (n->flags & ND_F_VIEW_REAL)) ok = put(parts, PyUnicode_FromString(" real")) == 0;
        if (ok && (n->flags & ND_F_VIEW_IMAG)) ok = put(parts, PyUnicode_FromString(" imag")) == 0;
        break;
    }
    default:
        break;
    }
    if (ok) {
        PyObject *sh = ints_str(n->ndim, n->shape);
        ok = put(parts, sh ? PyUnicode_FromFormat(" %s %U", nd_dtype_name(n->dtype), sh) : NULL) == 0;
        Py_XDECREF(sh);
    }
    if (ok && n->op == ND_OP_SCALAR && (n->flags & ND_F_WEAK))
        ok = put(parts, PyUnicode_FromString(" weak")) == 0;
    PyObject *r = NULL;
    if (ok) {
        PyObject *empty = PyUnicode_FromString("");
        if (empty) r = PyUnicode_Join(empty, parts);
        Py_XDECREF(empty);
    }
    Py_DECREF(parts);
    return r;
}

PyObject *nd_graph_repr(nd_graph *g, const nd_id *outs, int nout)
{
    PyObject *lines = PyList_New(0);
    if (!lines) return NULL;
    for (nd_id i = 0; i < g->n; i++) {
        if (put(lines, node_line(g, i)) < 0) { Py_DECREF(lines); return NULL; }
    }
    PyObject *parts = PyList_New(0);
    int ok = parts && put(parts, PyUnicode_FromString("return (")) == 0;
    for (int i = 0; ok && i < nout; i++)
        ok = put(parts, PyUnicode_FromFormat(i ? ", %%%d" : "%%%d", (int)outs[i])) == 0;
    if (ok) ok = put(parts, PyUnicode_FromString(nout == 1 ? ",)" : ")")) == 0;
    PyObject *empty = PyUnicode_FromString(""), *nl = PyUnicode_FromString("\n"), *r = NULL;
    if (ok && empty && nl) {
        PyObject *ret = PyUnicode_Join(empty, parts);
        if (ret && PyList_Append(lines, ret) == 0) r = PyUnicode_Join(nl, lines);
        Py_XDECREF(ret);
    }
    Py_XDECREF(empty);
    Py_XDECREF(nl);
    Py_XDECREF(parts);
    Py_DECREF(lines);
    return r;
}

/* ------------------------------------------------------------ nodes */

static nd_node *node_of(PyObject *self)
{
    nodeobj *o = (nodeobj *)self;
    return &((graphobj *)o->graph)->g->nodes[o->index];
}

static nd_graph *graph_of(PyObject *self) { return ((graphobj *)((nodeobj *)self)->graph)->g; }

static PyObject *node_op(PyObject *self, void *c) { return PyUnicode_FromString(nd_op_name(node_of(self)->op)); }
static PyObject *node_index(PyObject *self, void *c) { return PyLong_FromLong(((nodeobj *)self)->index); }
static PyObject *node_dtype(PyObject *self, void *c) { return (PyObject *)PyArray_DescrFromType(node_of(self)->dtype); }
static PyObject *node_shape(PyObject *self, void *c)
{
    nd_node *n = node_of(self);
    return nd_intp_tuple(n->ndim, n->shape);
}

static PyObject *node_inputs(PyObject *self, void *c)
{
    nd_node *n = node_of(self);
    int nin = n->op == ND_OP_EXTERN ? n->nextra : n->nin;
    PyObject *t = PyTuple_New(nin);
    if (!t) return NULL;
    for (int k = 0; k < nin; k++) {
        PyObject *v = PyLong_FromLong(n->op == ND_OP_EXTERN ? n->extra[k] : n->in[k]);
        if (!v) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, k, v);
    }
    return t;
}

static int set_item(PyObject *d, const char *k, PyObject *v)
{
    if (!v) return -1;
    int r = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    return r;
}

static PyObject *dtype_tuple(const int32_t *dt, int n)
{
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (int k = 0; k < n; k++) {
        PyObject *d = dt[k] >= 0 ? (PyObject *)PyArray_DescrFromType(dt[k]) : (Py_INCREF(Py_None), Py_None);
        if (!d) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, k, d);
    }
    return t;
}

static PyObject *node_attrs(PyObject *self, void *c)
{
    nd_node *n = node_of(self);
    nd_graph *g = graph_of(self);
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    int ok = 1;
    switch (n->op) {
    case ND_OP_INPUT:
        if (n->obj) ok = PyDict_SetItemString(d, "array", n->obj) == 0;
        break;
    case ND_OP_SCALAR:
        if (n->obj) ok = PyDict_SetItemString(d, "value", n->obj) == 0;
        if (ok) ok = set_item(d, "weak", PyBool_FromLong((n->flags & ND_F_WEAK) != 0)) == 0;
        break;
    case ND_OP_UFUNC:
        ok = set_item(d, "ufunc", PyUnicode_FromString(nd_ufunc_name(n->sub))) == 0 &&
             set_item(d, "loop_dtypes", dtype_tuple(n->in_dtype, n->nin)) == 0;
        if (ok && nd_ufunc_nout(n->sub) > 1) ok = set_item(d, "output", PyLong_FromLong(n->aux)) == 0;
        break;
    case ND_OP_REDUCE:
        ok = set_item(d, "reduce", PyUnicode_FromString(nd_ufunc_name(n->sub))) == 0 &&
             set_item(d, "axes", axes_of(n->axes, in_ndim(g, n))) == 0 &&
             set_item(d, "keepdims", PyBool_FromLong((n->flags & ND_F_KEEPDIMS) != 0)) == 0 &&
             set_item(d, "acc_dtype", n->in_dtype[0] >= 0 ? (PyObject *)PyArray_DescrFromType(n->in_dtype[0])
                                                          : (Py_INCREF(Py_None), Py_None)) == 0;
        break;
    case ND_OP_SCAN:
        ok = set_item(d, "ufunc", PyUnicode_FromString(nd_ufunc_name(n->sub))) == 0 &&
             set_item(d, "axis", PyLong_FromLong(n->aux)) == 0 &&
             set_item(d, "acc_dtype", n->in_dtype[0] >= 0 ? (PyObject *)PyArray_DescrFromType(n->in_dtype[0])
                                                          : (Py_INCREF(Py_None), Py_None)) == 0;
        break;
    case ND_OP_VIEW:
    case ND_OP_SETITEM:
        ok = set_item(d, "offset", PyLong_FromSsize_t(n->voff)) == 0 &&
             set_item(d, "strides", nd_intp_tuple(n->op == ND_OP_VIEW ? n->ndim : n->vndim, n->vstrides)) == 0;
        if (ok && n->op == ND_OP_SETITEM) ok = set_item(d, "region", nd_intp_tuple(n->vndim, n->vshape)) == 0;
        if (ok && (n->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG)))
            ok = set_item(d, "part", PyUnicode_FromString((n->flags & ND_F_VIEW_REAL) ? "real" : "imag")) == 0;
        break;
    case ND_OP_INDEX:
        ok = set_item(d, "axis", PyLong_FromLong(n->aux)) == 0;
        break;
    case ND_OP_EXTERN:
        if (n->obj) ok = PyDict_SetItemString(d, "callable", n->obj) == 0;
        if (ok && n->attrs && PyTuple_Check(n->attrs) && PyTuple_GET_SIZE(n->attrs) == 2)
            ok = PyDict_SetItemString(d, "args", PyTuple_GET_ITEM(n->attrs, 0)) == 0 &&
                 PyDict_SetItemString(d, "kwargs", PyTuple_GET_ITEM(n->attrs, 1)) == 0;
        if (ok) ok = set_item(d, "output", PyLong_FromLong(n->aux)) == 0;
        break;
    default:
        break;
    }
    if (ok && n->op != ND_OP_EXTERN && n->attrs && PyDict_Check(n->attrs))
        ok = PyDict_Update(d, n->attrs) == 0;
    if (ok && (n->flags & ND_F_KORDER)) {
        /* the memory order NumPy lays the value out in: its dims, outermost
         * first (C order: 0, 1, ...) */
        PyObject *o = PyTuple_New(n->ndim);
        for (int k = 0; o && k < n->ndim; k++) PyTuple_SET_ITEM(o, k, PyLong_FromLong(n->kperm[k]));
        ok = set_item(d, "memory_order", o) == 0;
    }
    if (!ok) { Py_DECREF(d); return NULL; }
    return d;
}

static PyObject *node_repr(PyObject *self)
{
    return node_line(graph_of(self), ((nodeobj *)self)->index);
}

static void node_dealloc(PyObject *self)
{
    Py_XDECREF(((nodeobj *)self)->graph);
    Py_TYPE(self)->tp_free(self);
}

static PyGetSetDef node_getset[] = {
    {"index", node_index, NULL, "position of the node in the graph", NULL},
    {"op", node_op, NULL, "node kind: input, scalar, ufunc, cast, where, reduce, scan, view, "
                          "setitem, index, gather, extern", NULL},
    {"dtype", node_dtype, NULL, "result dtype (numpy.dtype)", NULL},
    {"shape", node_shape, NULL, "result shape", NULL},
    {"inputs", node_inputs, NULL, "indices of the input nodes", NULL},
    {"attrs", node_attrs, NULL, "op-specific attributes (dict)", NULL},
    {NULL},
};

static PyTypeObject NdNode_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn.GraphNode",
    .tp_basicsize = sizeof(nodeobj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = node_dealloc,
    .tp_repr = node_repr,
    .tp_getset = node_getset,
    .tp_doc = "One node of a numdyn.Graph.",
};

/* ------------------------------------------------------------ graph */

static void graph_dealloc(PyObject *self)
{
    graphobj *o = (graphobj *)self;
    nd_graph_free(o->g);
    PyMem_Free(o->outs);
    Py_TYPE(self)->tp_free(self);
}

static Py_ssize_t graph_len(PyObject *self) { return ((graphobj *)self)->g->n; }

static PyObject *graph_item(PyObject *self, Py_ssize_t i)
{
    graphobj *o = (graphobj *)self;
    if (i < 0 || i >= o->g->n) {
        PyErr_SetString(PyExc_IndexError, "graph node index out of range");
        return NULL;
    }
    nodeobj *n = PyObject_New(nodeobj, &NdNode_Type);
    if (!n) return NULL;
    Py_INCREF(self);
    n->graph = self;
    n->index = (nd_id)i;
    return (PyObject *)n;
}

static PyObject *graph_str(PyObject *self)
{
    graphobj *o = (graphobj *)self;
    return nd_graph_repr(o->g, o->outs, o->nout);
}

static PyObject *graph_repr(PyObject *self)
{
    graphobj *o = (graphobj *)self;
    return PyUnicode_FromFormat("<numdyn.Graph: %d nodes, %d outputs>", (int)o->g->n, o->nout);
}

static PyObject *graph_outputs(PyObject *self, void *c)
{
    graphobj *o = (graphobj *)self;
    PyObject *t = PyTuple_New(o->nout);
    if (!t) return NULL;
    for (int i = 0; i < o->nout; i++) {
        PyObject *v = PyLong_FromLong(o->outs[i]);
        if (!v) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyObject *graph_inputs(PyObject *self, void *c)
{
    graphobj *o = (graphobj *)self;
    PyObject *l = PyList_New(0);
    if (!l) return NULL;
    for (nd_id i = 0; i < o->g->n; i++) {
        nd_node *n = &o->g->nodes[i];
        PyObject *a = n->value ? n->value : n->obj;
        if (n->op == ND_OP_INPUT && a && PyList_Append(l, a) < 0) { Py_DECREF(l); return NULL; }
    }
    return l;
}

static PyObject *graph_hash_get(PyObject *self, void *c)
{
    graphobj *o = (graphobj *)self;
    return PyLong_FromUnsignedLongLong(nd_graph_hash(o->g, o->outs, o->nout));
}

/* g(*arrays): run on new inputs (one per INPUT node, same dtype/shape as
 * traced) with the eager interpreter; returns a list of arrays. */
static nd_graph_runner graph_runner;

void nd_graphpy_set_runner(nd_graph_runner run) { graph_runner = run; }

static PyObject *graph_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    graphobj *o = (graphobj *)self;
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "numdyn.Graph takes input arrays positionally");
        return NULL;
    }
    nd_id *map = PyMem_Malloc(sizeof(nd_id) * ((size_t)o->g->n + 1));
    nd_id *nouts = PyMem_Malloc(sizeof(nd_id) * ((size_t)o->nout + 1));
    nd_graph *c = (map && nouts) ? nd_graph_extract(o->g, o->outs, o->nout, map, nouts) : NULL;
    PyObject *r = NULL;
    if (!map || !nouts) PyErr_NoMemory();
    if (!c) goto done;
    Py_ssize_t k = 0, nargs = PyTuple_GET_SIZE(args);
    for (nd_id i = 0; i < o->g->n; i++) {
        nd_node *n = &o->g->nodes[i];
        if (n->op != ND_OP_INPUT) continue;
        if (k >= nargs) {
            /* count them for the message */
            Py_ssize_t total = 0;
            for (nd_id j = 0; j < o->g->n; j++) total += o->g->nodes[j].op == ND_OP_INPUT;
            PyErr_Format(PyExc_TypeError, "numdyn.Graph takes %zd input arrays, %zd given", total, nargs);
            goto done;
        }
        PyObject *a = PyTuple_GET_ITEM(args, k++);
        PyArrayObject *arr = (PyArrayObject *)PyArray_FROM_O(a);
        if (!arr) goto done;
        if (!PyArray_EquivTypenums(PyArray_TYPE(arr), n->dtype) || PyArray_NDIM(arr) != n->ndim ||
            memcmp(PyArray_DIMS(arr), n->shape, sizeof(npy_intp) * n->ndim) != 0) {
            PyObject *sh = nd_intp_tuple(n->ndim, n->shape);
            PyErr_Format(PyExc_ValueError,
                         "numdyn.Graph input %zd must have dtype %s and shape %R (as traced)",
                         k - 1, nd_dtype_name(n->dtype), sh);
            Py_XDECREF(sh);
            Py_DECREF(arr);
            goto done;
        }
        if (map[i] != ND_NONE) Py_SETREF(c->nodes[map[i]].obj, (PyObject *)arr);
        else Py_DECREF(arr);
    }
    if (k != nargs) {
        PyErr_Format(PyExc_TypeError, "numdyn.Graph takes %zd input arrays, %zd given", k, nargs);
        goto done;
    }
    if (!graph_runner) PyErr_SetString(PyExc_RuntimeError, "numdyn.Graph: no backend to run it");
    else r = graph_runner(c, nouts, o->nout);
done:
    nd_graph_free(c);
    PyMem_Free(map);
    PyMem_Free(nouts);
    return r;
}

static PyGetSetDef graph_getset[] = {
    {"outputs", graph_outputs, NULL, "node ids of the graph's outputs", NULL},
    {"inputs", graph_inputs, NULL, "the example input arrays, in INPUT-node order", NULL},
    {"structural_hash", graph_hash_get, NULL, "structural hash (sizes and scalar values excluded)", NULL},
    {NULL},
};

static PyObject *graph_verify(PyObject *self, PyObject *noargs)
{
    graphobj *o = (graphobj *)self;
    if (nd_graph_verify(o->g, o->outs, o->nout, "capture") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef graph_methods[] = {
    {"verify", graph_verify, METH_NOARGS,
     "Check the IR's invariants (graph.h); SystemError names a broken one. The pipeline "
     "runs the same check after tracing and scheduling when NUMDYN_DEBUG=1."},
    {NULL},
};

static PySequenceMethods graph_seq = {
    .sq_length = graph_len,
    .sq_item = graph_item,
};

PyTypeObject NdGraph_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn.Graph",
    .tp_basicsize = sizeof(graphobj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = graph_dealloc,
    .tp_repr = graph_repr,
    .tp_str = graph_str,
    .tp_call = graph_call,
    .tp_as_sequence = &graph_seq,
    .tp_getset = graph_getset,
    .tp_methods = graph_methods,
    .tp_doc = "A captured numdyn graph: iterate its nodes, print it, or call it on arrays.",
};

int nd_graphpy_parts(PyObject *o, nd_graph **g, const nd_id **outs, int *nout)
{
    if (!PyObject_TypeCheck(o, &NdGraph_Type)) {
        PyErr_Format(PyExc_TypeError, "expected a numdyn.Graph, not %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
    graphobj *go = (graphobj *)o;
    *g = go->g;
    *outs = go->outs;
    *nout = go->nout;
    return 0;
}

PyObject *nd_graphpy_wrap(nd_graph *g, const nd_id *outs, int nout)
{
    graphobj *o = PyObject_New(graphobj, &NdGraph_Type);
    if (!o) { nd_graph_free(g); return NULL; }
    o->g = g;
    o->nout = nout;
    o->outs = PyMem_Malloc(sizeof(nd_id) * ((size_t)nout + 1));
    if (!o->outs) { Py_DECREF(o); return PyErr_NoMemory(); }
    if (nout) memcpy(o->outs, outs, sizeof(nd_id) * (size_t)nout);
    return (PyObject *)o;
}

int nd_graphpy_init(PyObject *module)
{
    if (PyType_Ready(&NdGraph_Type) < 0 || PyType_Ready(&NdNode_Type) < 0) return -1;
    Py_INCREF(&NdGraph_Type);
    if (PyModule_AddObject(module, "Graph", (PyObject *)&NdGraph_Type) < 0) {
        Py_DECREF(&NdGraph_Type);
        return -1;
    }
    Py_INCREF(&NdNode_Type);
    if (PyModule_AddObject(module, "GraphNode", (PyObject *)&NdNode_Type) < 0) {
        Py_DECREF(&NdNode_Type);
        return -1;
    }
    return 0;
}
