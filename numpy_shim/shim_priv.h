/* shim_priv.h -- helpers shared by the shim helper's own files only (not a
 * contract: area files of other helpers use shim_internal.h). */
#ifndef ND_SHIM_PRIV_H
#define ND_SHIM_PRIV_H
#include "shim_internal.h"

/* Compiled parameter spec of a def (see shim_internal.h "Parameter spec"). */
typedef struct nd_spec {
    int n;              /* number of names */
    int nreq;           /* first nreq are required */
    int npos;           /* first npos may be passed positionally */
    int varargs;        /* index of the "*name" slot, or -1 */
    PyObject *names[ND_SHIM_MAXARGS]; /* interned */
} nd_spec;

/* Compile (once) and fetch the spec of a def. NULL + exception on a bad spec. */
const nd_spec *nd_shim_spec(const nd_shim_def *def);
/* vectorcall form of nd_shim_parse_args. */
int nd_shim_parse_fast(const nd_shim_def *def, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames, PyObject **argv);
/* The pending reason of nd_shim_unsupported, cleared by the call (NULL if none). */
const char *nd_shim_take_unsupported(void);
/* AxisError(axis, ndim) raised like NumPy. */
void nd_shim_raise_axis_error(long axis, int ndim);
/* dtype object for a typenum (new ref). */
PyObject *nd_shim_descr(int typenum);
/* Run an impl: fallback through NumPy's function when it says unsupported. */
PyObject *nd_shim_run_impl(nd_trace *t, const nd_shim_def *def, PyObject **argv,
                           PyObject *func, PyObject *args, PyObject *kwargs);
/* A node copy-out helper: dtype/ndim/shape of a node. */
typedef struct { int dtype, ndim; npy_intp shape[ND_MAXDIMS]; } nd_info;
void nd_shim_info(nd_trace *t, nd_id id, nd_info *out);
/* ufunc output cast check with the output index (NumPy's message). */
int nd_shim_check_output_cast_i(int uf, int i, int from, int to, NPY_CASTING casting);
/* NPY_NO_CASTING.. -> "no", "equiv", ... */
const char *nd_shim_casting_name(NPY_CASTING c);
/* numpy._core._exceptions._UFuncOutputCastingError etc. lookups */
PyObject *nd_shim_exc(const char *name);
/* The shim's ufunc path with full kwargs (used by array_ufunc and the shim
 * module's ufunc wrappers): args tuple/kwargs dict as NumPy's ufunc call. */
PyObject *nd_shim_ufunc_call(nd_trace *t, int ufunc_id, PyObject *args, PyObject *kwargs);
/* ufunc.reduce / accumulate / outer with a proxy operand. */
PyObject *nd_shim_ufunc_reduce(nd_trace *t, int ufunc_id, PyObject *args, PyObject *kwargs);
PyObject *nd_shim_ufunc_accumulate(nd_trace *t, int ufunc_id, PyObject *args, PyObject *kwargs);
PyObject *nd_shim_ufunc_outer(nd_trace *t, int ufunc_id, PyObject *args, PyObject *kwargs);
/* Materialize-or-pass-through: a NumPy scalar for is_scalar results when
 * the value is already concrete (used by item-like reads). */
PyObject *nd_shim_scalar_from_array(PyObject *arr);
/* SCAN node: ufunc accumulate along axis, accumulating at acc. */
nd_id nd_shim_node_scan(nd_trace *t, int uf, nd_id in, int axis, int acc, int out_dtype);
/* Real (imag=0) or imaginary part of a complex node, as a VIEW value. */
nd_id nd_shim_node_part(nd_trace *t, nd_id in, int imag);
/* A node value reshaped (C order) -- always a VIEW of a node's value. */
nd_id nd_shim_node_reshape(nd_trace *t, nd_id in, int ndim, const npy_intp *shape);
/* float dtype of a complex dtype's parts */
int nd_shim_complex_part_dtype(int dtype);
/* Broadcast operand + retype weak -> node at dtype (casts strong ones too). */
nd_id nd_shim_operand_at(nd_trace *t, nd_operand *op, int dtype);
/* OverflowError for a Python int that does not fit `dtype`, NumPy's message */
void nd_shim_raise_pyint_overflow(PyObject *value, int dtype);
/* The shim module's ufunc objects (shim_ufunc.c): wrappers that record
 * plain calls on proxies directly; installed into `module` under every
 * numpy name bound to a known ufunc the module does not define. */
int nd_shim_install_ufuncs(PyObject *module);
/* The wrapper of ufunc id uf (borrowed), or NULL before installation. */
PyObject *nd_shim_ufunc_wrapper(int uf);
#endif
