/* module.c -- numdyn._C: module init; each module registers its own types
 * and functions through its *_init(module) function. */
#define ND_MODULE_INIT
#include "core/npy.h"
#include "graph/graph.h"
#include "trace/trace.h"
#include "runtime/backend.h"
#include "graph/graph_py.h"
#include "numpy_shim/shim.h"
#include "guards/guards.h"
#include "tensor/tensor.h"
#include "runtime/cuda.h"
#include "runtime/cuda_blas.h"

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "numdyn._C",
    "numdyn's C core: tracer, graph, NumPy shim, passes, codegen, runtime.",
    -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__C(void)
{
    import_array();
    import_umath();
    PyObject *m = PyModule_Create(&moddef);
    if (!m) return NULL;
    if (nd_ufuncs_init() < 0 || nd_extern_placeholder_init() < 0 || nd_graphpy_init(m) < 0 || nd_trace_init(m) < 0 || nd_grad_init(m) < 0 ||
        nd_shim_init(m) < 0 || nd_native_init(m) < 0 || nd_guards_init(m) < 0 ||
        nd_tensor_init(m) < 0 || nd_cuda_init(m) < 0 ||
        nd_cuda_blas_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    nd_graphpy_set_runner(nd_backend_eager_run);
    return m;
}
