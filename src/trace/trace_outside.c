/* trace_outside.c -- arrays handed to code outside the graph.
 *
 * A graph break gives real arrays to NumPy (or to a disabled function):
 * often a caller's buffer itself, or the buffer of a value the graph holds.
 * That code may write into them (np.fill_diagonal, np.put, ndarray.sort),
 * while nodes not yet computed read the old contents: under NumPy's eager
 * order those reads happened before the write. The graph is functional, so
 * the fix is to split the version: the node keeps a snapshot of what it held
 * (its lazy readers see that), and storages whose version it was move to a
 * new version, the written buffer (their views see the write).
 *
 * A snapshot (a copy, compared after the call) is taken only of values that
 * work still to run reads; a version nothing pending reads just moves on to
 * a new node of the same buffer, so cached views of it are re-read.
 */
#include "trace_internal.h"
#include <stdlib.h>
#include <string.h>

int nd__gather_arrays(PyObject *o, PyObject *list, int traced_only, int depth)
{
    if (PyArray_Check(o)) {
        if (traced_only && (!PyArray_CheckExact(o) || !nd_supported_array(o))) return 0;
        return PyList_Append(list, o);
    }
    if (depth > 16) return 0;
    if (PyTuple_Check(o) || PyList_Check(o)) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++)
            if (nd__gather_arrays(PySequence_Fast_GET_ITEM(o, i), list, traced_only, depth + 1) < 0)
                return -1;
    } else if (PyDict_Check(o)) {
        if (traced_only && !PyDict_CheckExact(o)) return 0;
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(o, &pos, &k, &v))
            if (nd__gather_arrays(v, list, traced_only, depth + 1) < 0) return -1;
    }
    return 0;
}

static void release(nd_outside *o)
{
    for (Py_ssize_t k = 0; k < o->n; k++) {
        Py_XDECREF(o->orig[k]);
        Py_XDECREF(o->snap[k]);
    }
    PyMem_Free(o->ids);
    PyMem_Free(o->orig);
    PyMem_Free(o->snap);
    memset(o, 0, sizeof(*o));
}

static int id_asc(const void *a, const void *b)
{
    nd_id x = *(const nd_id *)a, y = *(const nd_id *)b;
    return (x > y) - (x < y);
}

int nd__outside_begin(nd_trace *t, PyObject *handed, nd_outside *o)
{
    memset(o, 0, sizeof(*o));
    if (!t || t->ended) return 0;
    PyObject *list = PyList_New(0);
    char *need = NULL;
    nd_id *live = NULL;
    int rc = -1;
    if (!list || nd__gather_arrays(handed, list, 0, 0) < 0) goto done;
    Py_ssize_t nh = PyList_GET_SIZE(list);
    if (!nh) { rc = 0; goto done; }
    /* only writeable arrays can be written */
    Py_ssize_t w = 0;
    for (Py_ssize_t i = 0; i < nh; i++)
        if (PyArray_ISWRITEABLE((PyArrayObject *)PyList_GET_ITEM(list, i))) w++;
    if (!w) { rc = 0; goto done; }
    /* the live nodes as a list: walking the whole trace graph here made a
     * captured loop in a long traced loop quadratic (channel flow: a loop
     * run per step, 1000 steps, 11% of the call) */
    nd_graph *g = t->g;
    if (!(need = PyMem_Calloc((size_t)g->n + 1, 1))) { PyErr_NoMemory(); goto done; }
    Py_ssize_t nl = nd__needed_list(t, need, &live);
    if (nl < 0) goto done;
    nd_counter_add(ND_CTR_WRITEBACK_NODES, nl);
    qsort(live, (size_t)nl, sizeof(nd_id), id_asc);  /* graph order, as a scan finds them */
    for (Py_ssize_t k = 0; k < nl; k++) need[live[k]] = 1;
    /* nodes that work still to run reads: only their old contents need a
     * snapshot; any other overlapping version just moves on after the call
     * (its cached views are then re-read) */
    for (Py_ssize_t k = 0; k < nl; k++) {
        nd_node *nj = &g->nodes[live[k]];
        if (nj->value || nj->op == ND_OP_INPUT) continue;
        for (int q = 0; q < nj->nin; q++) if (nj->in[q] >= 0) need[nj->in[q]] |= 2;
        for (int q = 0; q < nj->nextra; q++) if (nj->extra[q] >= 0) need[nj->extra[q]] |= 2;
    }
    PyObject *const *hs = ((PyListObject *)list)->ob_item;
    Py_ssize_t cap = 0;
    for (Py_ssize_t k = 0; k < nl; k++) {
        nd_id i = live[k];
        PyObject *a = nd__node_array(g, i);
        if (!a || !PyArray_Check(a) || !PyArray_ISWRITEABLE((PyArrayObject *)a) ||
            !nd__overlaps_any(a, hs, nh, NULL))
            continue;
        if (o->n == cap) {
            cap = cap ? 2 * cap : 4;
            nd_id *ni = PyMem_Realloc(o->ids, sizeof(nd_id) * (size_t)cap);
            if (ni) o->ids = ni;
            PyObject **no = PyMem_Realloc(o->orig, sizeof(PyObject *) * (size_t)cap);
            if (no) o->orig = no;
            PyObject **ns = PyMem_Realloc(o->snap, sizeof(PyObject *) * (size_t)cap);
            if (ns) o->snap = ns;
            if (!ni || !no || !ns) { PyErr_NoMemory(); goto done; }
        }
        PyObject *c = NULL;
        if ((need[i] & 2) && !(c = PyArray_NewCopy((PyArrayObject *)a, NPY_CORDER))) goto done;
        o->ids[o->n] = i;
        o->orig[o->n] = Py_NewRef(a);
        o->snap[o->n] = c;
        o->n++;
    }
    rc = 0;
done:
    Py_XDECREF(list);
    PyMem_Free(need);
    PyMem_Free(live);
    if (rc < 0) release(o);
    return rc;
}

/* 1 when a's contents differ from the C-order copy `snap` (bytes: a NaN
 * written over a NaN is no change, -0.0 over 0.0 is one). */
static int changed(PyObject *a, PyObject *snap)
{
    PyArrayObject *A = (PyArrayObject *)a;
    size_t nb = (size_t)PyArray_NBYTES((PyArrayObject *)snap);
    if (PyArray_IS_C_CONTIGUOUS(A))
        return memcmp(PyArray_DATA(A), PyArray_DATA((PyArrayObject *)snap), nb) != 0;
    PyObject *now = PyArray_NewCopy(A, NPY_CORDER);
    if (!now) return -1;
    int r = memcmp(PyArray_DATA((PyArrayObject *)now),
                   PyArray_DATA((PyArrayObject *)snap), nb) != 0;
    Py_DECREF(now);
    return r;
}

static int move_version(nd_trace *t, nd_storage *s, nd_id old, PyObject *buf, nd_id *nv)
{
    if (s->version != old) return 0;
    if (*nv == ND_NONE) {
        PyObject *v = PyArray_CheckExact(buf) ? Py_NewRef(buf)
                      : PyArray_View((PyArrayObject *)buf, NULL, &PyArray_Type);
        if (!v) return -1;
        *nv = nd__input_node(t, v);
        Py_DECREF(v);
        if (*nv == ND_NONE) return -1;
    }
    s->version = *nv;
    return 0;
}

int nd__outside_end(nd_trace *t, nd_outside *o, int ok)
{
    int rc = 0;
    if (ok && o->n && !t->ended) {
        nd_graph *g = t->g;
        for (Py_ssize_t k = 0; k < o->n && rc == 0; k++) {
            int c = o->snap[k] ? changed(o->orig[k], o->snap[k]) : 1;
            if (c < 0) { rc = -1; break; }
            if (!c) continue;
            nd_id id = o->ids[k], nv = ND_NONE;
            for (Py_ssize_t j = 0; j < t->nclist && rc == 0; j++)
                rc = move_version(t, t->clist[j], id, o->orig[k], &nv);
            for (NdProxy *p = t->proxies; p && rc == 0; p = p->next)
                rc = move_version(t, p->st, id, o->orig[k], &nv);
            if (rc == 0 && o->snap[k]) {
                /* the node's readers see what it held before the call */
                Py_XSETREF(g->nodes[id].value, o->snap[k]);
                o->snap[k] = NULL;
            }
        }
    }
    release(o);
    return rc;
}
