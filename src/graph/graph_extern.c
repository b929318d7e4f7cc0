/* graph_extern.c -- the placeholders of EXTERN argument templates (graph.h):
 * the shim builds templates with them, the backends fill them with arrays. */
#include "graph.h"

typedef struct { PyObject_HEAD int index; } placeholder;

static PyObject *placeholder_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<input %d>", ((placeholder *)self)->index);
}

static Py_hash_t placeholder_hash(PyObject *self)
{
    return 0x5eed + ((placeholder *)self)->index;
}

static PyTypeObject Placeholder_Type;

static PyObject *placeholder_richcompare(PyObject *a, PyObject *b, int op)
{
    if (!Py_IS_TYPE(b, &Placeholder_Type) || (op != Py_EQ && op != Py_NE)) Py_RETURN_NOTIMPLEMENTED;
    int eq = ((placeholder *)a)->index == ((placeholder *)b)->index;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyTypeObject Placeholder_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.Placeholder",
    .tp_basicsize = sizeof(placeholder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_repr = placeholder_repr,
    .tp_hash = placeholder_hash,
    .tp_richcompare = placeholder_richcompare,
    .tp_doc = "Marks where an EXTERN node's k-th input array goes in its argument template.",
};

#define N_CACHED_PH 16
static PyObject *ph_cache[N_CACHED_PH];

PyObject *nd_extern_placeholder(int k)
{
    if (k >= 0 && k < N_CACHED_PH && ph_cache[k]) {
        Py_INCREF(ph_cache[k]);
        return ph_cache[k];
    }
    placeholder *p = PyObject_New(placeholder, &Placeholder_Type);
    if (!p) return NULL;
    p->index = k;
    if (k >= 0 && k < N_CACHED_PH) {
        ph_cache[k] = (PyObject *)p;
        Py_INCREF(p);
    }
    return (PyObject *)p;
}

int nd_extern_placeholder_index(PyObject *obj)
{
    return Py_IS_TYPE(obj, &Placeholder_Type) ? ((placeholder *)obj)->index : -1;
}

int nd_extern_placeholder_init(void)
{
    return PyType_Ready(&Placeholder_Type);
}
