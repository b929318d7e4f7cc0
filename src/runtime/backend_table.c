/* backend_table.c -- the built-in backends by name (backend.h). */
#include "backend.h"
#include "cuda.h"

static PyObject *eager_run(nd_graph *g, const nd_id *outs, int nout, PyObject *options)
{
    return nd_backend_eager_run(g, outs, nout);
}

/* under numdyn.device("cuda") the compiled program runs on the GPU */
static PyObject *native_run(nd_graph *g, const nd_id *outs, int nout, PyObject *options)
{
    if (nd_cuda_device_depth > 0) return nd_backend_cuda_run(g, outs, nout, options);
    return nd_backend_native_run(g, outs, nout, options);
}

const nd_backend nd_backends[ND_BACKEND_BUILTIN] = {
    [ND_BACKEND_EAGER] = {"eager", eager_run},
    [ND_BACKEND_NATIVE] = {"native", native_run},
    [ND_BACKEND_CUDA] = {"cuda", nd_backend_cuda_run},
};

int nd_backend_find(PyObject *name)
{
    if (!PyUnicode_Check(name)) return -1;
    if (PyUnicode_CompareWithASCIIString(name, "aot_eager") == 0) return ND_BACKEND_EAGER;
    for (int k = 0; k < ND_BACKEND_BUILTIN; k++)
        if (PyUnicode_CompareWithASCIIString(name, nd_backends[k].name) == 0) return k;
    return -1;
}
