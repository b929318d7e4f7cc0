/* tensor_internal.h -- what the files of src/tensor/ share; private. */
#ifndef ND_TENSOR_INTERNAL_H
#define ND_TENSOR_INTERNAL_H
#include "tensor/tensor.h"
#include "tensor/dlpack.h"

enum { ND_DEV_CPU = 0, ND_DEV_CUDA = 1 };

/* an exception in flight, kept aside and put back (3.12 changed the API) */
#if PY_VERSION_HEX >= 0x030C0000
#define ND_T_EXC_SAVE(v) PyObject *v = PyErr_GetRaisedException()
#define ND_T_EXC_RESTORE(v) PyErr_SetRaisedException(v)
#define ND_T_EXC_DROP(v) Py_XDECREF(v)
#else
#define ND_T_EXC_SAVE(v) PyObject *v##_t, *v##_v, *v##_tb; PyErr_Fetch(&v##_t, &v##_v, &v##_tb)
#define ND_T_EXC_RESTORE(v) PyErr_Restore(v##_t, v##_v, v##_tb)
#define ND_T_EXC_DROP(v) do { Py_XDECREF(v##_t); Py_XDECREF(v##_v); Py_XDECREF(v##_tb); } while (0)
#endif

typedef struct {
    PyObject_HEAD
    PyObject *array;        /* the ndarray (owned, never NULL) */
    PyObject *grad;         /* a Tensor, or NULL */
    PyObject *node;         /* the tape node that made it (tensor_tape.c), or NULL: a leaf */
    PyObject *weakrefs;
    int node_out;           /* which output of node: -1 its whole result, k item k */
    int device;             /* ND_DEV_CPU, or ND_DEV_CUDA (then array is a
                               numdyn.cuda.DeviceBuffer: tensor_cuda.c) */
    char requires_grad;
    char taped;             /* this version is an argument of a tape node */
    char readonly;          /* CUDA: memory of a read-only DLPack producer (never written) */
    char retains;           /* retain_grad(): a non-leaf whose .grad backward() fills */
    char stale;             /* array is a placeholder for an older value the tape
                               recomputes (tensor_type.c, old_value) */
    long long version;      /* in-place writes so far (torch's version counter) */
    long long skew;         /* steps of version that were no write: the step that ends
                               a recorded write into a base (tensor_type.c, views) */
    PyObject *history;      /* dict version -> Tensor standing for that older value, or NULL */
    PyObject *grad_to;      /* or NULL: a leaf standing for a perturbation parameter of a
                               backward(create_graph=True) (tensor_tape.c): its gradient is
                               this retained non-leaf Tensor's .grad */
    /* views (torch's view + base): a Tensor whose array views the memory of
     * another Tensor's array, made by indexing, a method, an attribute or a
     * NumPy function of it (tensor_type.c, note_view) */
    PyObject *view_base;    /* the Tensor owning the memory (never itself a view), or NULL */
    PyObject *view_index;   /* intp array shaped as this view: the flat (C-order) index in
                               view_base of each element; computed at first need, or NULL */
    long long view_version; /* view_base's first version that node computes */
    long long view_valid;   /* view_base's last version node is known to compute (the
                               base's version past it: refreshed when next read) */
    Py_ssize_t nviews;      /* live views of this Tensor (a base) */
    char view_nograd;       /* the view was made under no_grad() */
} NdTensor;

#define ND_TENSOR(o) ((NdTensor *)(o))

/* ---- tensor_type.c */
/* obj with Tensors replaced by their arrays, through tuples, lists and dicts
 * (new ref; obj itself when nothing changed). *any_grad |= 1 when one of
 * them requires grad (may be NULL). */
PyObject *nd_tensor_unwrap(PyObject *obj, int *any_grad);
/* a NumPy result as Tensors: ndarrays and NumPy scalars become Tensors,
 * through tuples and lists; everything else is returned as is. Steals r. */
PyObject *nd_tensor_wrap_result(PyObject *r);
/* the dtype an ndarray of kind f/c may carry a gradient: 1, else 0 */
int nd_tensor_dtype_differentiable(PyObject *array);

/* Before an in-place write into Tensor o: its version moves on, and when a
 * tape node read the current version (taped) that value is kept in
 * o's history (the node still computes from it: tensor_tape.c resolves
 * a node's Tensor arguments by the version it recorded). 0 / -1. */
int nd_tensor_before_write(PyObject *o);
/* The Tensor standing for o's value at `version` (borrowed): o itself, or
 * from its history; NULL + RuntimeError when that value was not kept. */
PyObject *nd_tensor_at_version(PyObject *o, long long version);
/* o's version counter: a view shares its base's (torch's _version) */
long long nd_tensor_version(PyObject *o);
/* A view o whose base was written since o's node was recorded gets a new
 * node reading the base's current value (torch regenerates a view's
 * grad_fn the same way); the old node stays in o's history for the tape
 * nodes that read it. 0 / -1. */
int nd_tensor_refresh_view(PyObject *o);
/* results of a wrap_numpy call that view a Tensor argument: views of its base */
void nd_tensor_note_views(PyObject *r, PyObject *const *args, Py_ssize_t n);

/* A Tensor of type tp (NdTensor_Type, or NdCudaTensor_Type with a
 * DeviceBuffer) holding obj; no gradient. New ref. */
PyObject *nd_tensor_from_array_of(PyObject *obj, PyTypeObject *tp);

/* ---- tensor_cuda.c: numdyn.Tensor on CUDA (a subtype of Tensor) */
extern PyTypeObject NdCudaTensor_Type;
int nd_tensor_is_cuda(PyObject *o);
/* obj is, or holds in its tuples, lists and dicts, a Tensor that requires grad */
int nd_tensor_any_grad(PyObject *obj, int depth);
PyObject *nd_tensor_cuda_from_buffer(PyObject *devbuf);
/* numdyn.from_dlpack of a kDLCUDA producer: its memory, no copy */
PyObject *nd_tensor_cuda_from_dlpack(PyObject *producer);
/* the host Tensor t (CPU) up to the device: a CUDA Tensor holding a copy */
PyObject *nd_tensor_cuda_of_cpu(PyObject *t);
/* wrap_numpy with a CUDA tensor among the arguments: the engine's call */
PyObject *nd_tensor_cuda_wrap_call(PyObject *fn, PyObject *compiled, PyObject *args,
                                   PyObject *kwargs);
/* a device copy of CUDA Tensor t (same layout when dense), no gradient */
PyObject *nd_tensor_cuda_copy(PyObject *t);
/* 1 when o is a DeviceBuffer of a float or complex dtype */
int nd_tensor_cuda_differentiable(PyObject *o);
/* backward() of a CUDA Tensor: the tape's program differentiated by
 * numdyn's autodiff with backend "cuda"; gradients into the leaves' .grad
 * as CUDA Tensors (wrt: NULL or inputs=' list; create: create_graph) */
PyObject *nd_tensor_cuda_backward(PyObject *t, PyObject *grad, PyObject *wrt, int create);
/* a DeviceBuffer of zeros shaped as CUDA Tensor t (a tape's perturbation parameter) */
PyObject *nd_tensor_cuda_zeros_like(PyObject *t);
int nd_tensor_cuda_init(PyObject *module);

/* ---- tensor_dlpack.c */
/* x.__dlpack__(...) / x.__dlpack_device__() for an ndarray x */
PyObject *nd_dlpack_export(PyObject *array, PyObject *args, PyObject *kwargs);
PyObject *nd_dlpack_device(PyObject *array);
/* an ndarray sharing the memory of a DLPack producer (any object with
 * __dlpack__), zero-copy; copy: -1 (None), 0, 1. New ref. */
PyObject *nd_dlpack_to_array(PyObject *producer, int copy);
/* A DLPack capsule (versioned or legacy) describing data on device
 * (dev_type, dev_id) with NumPy's shape and byte strides; owner (stolen)
 * is held until the consumer's deleter runs. NULL + exc. */
PyObject *nd_dlpack_capsule(void *data, int32_t dev_type, int32_t dev_id, int nd,
                            const npy_intp *shape, const npy_intp *byte_strides, npy_intp item,
                            nd_DLDataType dt, PyObject *owner, int versioned, uint64_t flags);
/* Consume a producer's capsule: make(tensor, readonly, owner) builds the
 * result over its memory (owner, a capsule that runs the producer's
 * deleter when it dies, to be held by the result); the capsule is marked
 * used when make succeeds. */
typedef PyObject *(*nd_dlpack_make)(nd_DLTensor *t, int readonly, PyObject *owner);
PyObject *nd_dlpack_consume(PyObject *cap, nd_dlpack_make make);
/* __dlpack__'s max_version and copy arguments: *versioned (a
 * DLManagedTensorVersioned is wanted), *want_copy; 0 / -1 + TypeError */
int nd_dlpack_options(PyObject *max_version, PyObject *copy, int *versioned, int *want_copy);
/* a (device_type, device_id) tuple; 0 / -1 + TypeError */
int nd_dlpack_parse_device(PyObject *dev, int32_t *type, int32_t *id);
/* DLPack's dtype of a NumPy descr (0; -1 + BufferError); NumPy's type
 * number of a DLPack dtype (-1: none) */
int nd_dl_of_descr(PyArray_Descr *d, nd_DLDataType *out);
int nd_npy_of_dl(nd_DLDataType dt);
int nd_dlpack_init(PyObject *module);

/* ---- tensor_wrap.c */
int nd_wrap_init(PyObject *module);

/* ---- tensor_tape.c */
/* Record that `out` (a Tensor, or tuple/list of them) was computed by
 * func(*args, **kwargs) from `inputs`: some requiring grad. kind: how the
 * node replays -- ND_OP_CALL func(*args, **kwargs), ND_OP_METHOD
 * getattr(args[0], func)(*args[1:], **kwargs) (func a str), ND_OP_ATTR
 * getattr(args[0], func). args/kwargs
 * hold the Tensors themselves. Returns 0 / -1. */
enum { ND_OP_CALL = 0, ND_OP_METHOD = 1, ND_OP_ATTR = 2 };
int nd_tape_record(int kind, PyObject *func, PyObject *args, PyObject *kwargs, PyObject *out);
/* The same for a call whose forward already ran as numdyn's vjp (a
 * wrap_numpy call): pull is its pullback (one cotangent per output leaf of
 * fwd, the forward's result; gradients per differentiated argument),
 * positions the tuple of the indices in args of the Tensors it
 * differentiates. backward() calls pull instead of running func again:
 * the forward's saved values are kept, not recomputed. */
int nd_tape_record_vjp(PyObject *func, PyObject *args, PyObject *kwargs, PyObject *out,
                       PyObject *pull, PyObject *positions, PyObject *fwd);
int nd_tape_init(PyObject *module);
/* 0 inside numdyn.no_grad(), else 1 */
int nd_tape_grad_enabled(void);
/* backward() of a Tensor: gradients into the leaves' .grad. wrt: NULL, or
 * a list of Tensors that require grad (torch's inputs=): only those get
 * gradients, non-leaf ones too; create: the gradients are themselves
 * recorded on the tape (torch's create_graph), so a later backward
 * differentiates them again. */
PyObject *nd_tape_backward(PyObject *tensor, PyObject *grad, int retain, PyObject *wrt,
                           int create);
#endif
