/* cuda_source.c -- the CUDA C numdyn generates for a graph: the graph is
 * scheduled as the native backend schedules it (passes/schedule.h) and
 * each kernel goes through the CUDA generator (codegen/codegen_cuda.h). */
#include "cuda.h"
#include "graph/graph_py.h"
#include "codegen/codegen_cuda.h"

nd_program *nd_cuda_schedule(nd_graph *g, const nd_id *outs, int nout)
{
    int was = nd_schedule_kmax_nodes, side = nd_schedule_side_outputs;
    nd_schedule_kmax_nodes = ND_CU_KMAX_NODES;
    nd_schedule_side_outputs = 0;   /* codegen_cuda.c has no side-output form */
    nd_program *p = nd_schedule(g, outs, nout);
    nd_schedule_kmax_nodes = was;
    nd_schedule_side_outputs = side;
    return p;
}

/* _cuda_kernels(graph) -> [(kind, name hash, CUDA C), ...] for its program */
static PyObject *py_kernels(PyObject *self, PyObject *graph)
{
    (void)self;
    static const char *const KIND[] = {"pointwise", "reduce", "scan", "region", "row"};
    nd_graph *g;
    const nd_id *outs;
    int nout;
    if (nd_graphpy_parts(graph, &g, &outs, &nout) < 0) return NULL;
    nd_program *p = nd_cuda_schedule(g, outs, nout);
    if (!p) return NULL;
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < p->nkern; i++) {
        const nd_kernel *k = &p->kerns[i];
        nd_sb sb;
        nd_sb_init(&sb);
        uint64_t h = 0;
        PyObject *t = NULL;
        if (nd_cuda_kernel(g, k, &sb, &h) == 0)
            t = Py_BuildValue("(sKs)", k->kind >= 0 && k->kind <= ND_K_ROW ? KIND[k->kind] : "?",
                              (unsigned long long)h, sb.p);
        nd_sb_free(&sb);
        if (!t || PyList_Append(list, t) < 0) Py_CLEAR(list);
        Py_XDECREF(t);
    }
    nd_program_decref(p);
    return list;
}

static PyObject *py_prelude(PyObject *self, PyObject *noargs)
{
    (void)self; (void)noargs;
    const char *s = nd_cuda_prelude();
    return s ? PyUnicode_FromString(s) : NULL;
}

static PyMethodDef methods[] = {
    {"_cuda_kernels", py_kernels, METH_O, "[(kind, hash, CUDA C)] of a numdyn.Graph's kernels"},
    {"_cuda_prelude", py_prelude, METH_NOARGS, "the text every generated CUDA unit starts with"},
    {NULL, NULL, 0, NULL},
};

int nd_cuda_source_init(PyObject *module) { return PyModule_AddFunctions(module, methods); }
