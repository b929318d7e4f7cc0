/* tensor.h -- numdyn.Tensor, DLPack, wrap_numpy, the gradient tape.
 *
 * The layer above the NumPy shim: it sees NumPy arrays, numdyn's compiled
 * functions and autodiff only through the Python objects the layers below
 * registered on the module (compile, vjp), so nothing below depends on it.
 *
 * A Tensor holds an ndarray (CPU; `device` is ready for "cuda") and gives it
 * NumPy's semantics for every operation: operators, ufuncs
 * (__array_ufunc__), NumPy functions (__array_function__), indexing and
 * ndarray methods run NumPy on the held arrays; ndarray results come back as
 * Tensors, and so do NumPy scalars (as 0-d Tensors: a sum is a loss that can
 * be differentiated, the torch/JAX convention). Values, dtypes and shapes
 * are NumPy's.
 */
#ifndef ND_TENSOR_H
#define ND_TENSOR_H
#include "core/npy.h"

extern PyTypeObject NdTensor_Type;
static inline int nd_tensor_check(PyObject *o) { return PyObject_TypeCheck(o, &NdTensor_Type); }

/* A Tensor holding `array` (an ndarray; borrowed, the Tensor takes its own
 * reference), no gradient. New ref. */
PyObject *nd_tensor_from_array(PyObject *array);
/* The ndarray a Tensor holds (borrowed). */
PyObject *nd_tensor_array(PyObject *tensor);

/* Module init: the Tensor type, tensor(), from_dlpack(), wrap_numpy(). */
int nd_tensor_init(PyObject *module);
#endif
