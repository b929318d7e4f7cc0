/* tensor_cuda.c -- numdyn.Tensor on CUDA: numdyn.tensor(x, device="cuda"),
 * t.cuda(), numdyn.from_dlpack of a CUDA producer.
 *
 * A CUDA Tensor is an NdTensor of the subtype below whose `array` is a
 * numdyn.cuda.DeviceBuffer (memory of the caching device allocator, or a
 * borrowed producer's) instead of an ndarray. Its operations never touch
 * that memory from the host: every slot hands the operation -- the same
 * callable the CPU Tensor records (operator.add, the ufunc, the NumPy
 * function, the method name) -- to the engine of numdyn/_cuda_tensor.py,
 * which compiles it once per signature with backend "cuda" and runs it on
 * the device buffers in place (numdyn.cuda.on_device's machinery); results
 * are CUDA Tensors. What Python itself needs (bool(t), t.item(), repr) comes
 * down to the host; an operation that breaks the graph runs on the host on
 * copies and is counted in cuda_host_steps. Operations that involve Tensors
 * requiring grad are recorded on the tape as on the CPU (tensor_tape.c).
 *
 * DLPack: __dlpack__ exports the device memory with device (kDLCUDA,
 * ordinal); `stream` follows the array API standard (None or 1: the legacy
 * default stream, 2: per-thread, > 2 a stream handle, -1: no
 * synchronization; 0 is refused): numdyn's buffers are complete when handed
 * out, so no producer-side wait is needed beyond that. from_dlpack of a
 * kDLCUDA producer passes numdyn's stream and keeps the producer's memory
 * (no copy).
 */
#include "tensor/tensor_internal.h"
#include "core/number_slots.h"
#include "core/containers.h"
#include "trace/trace.h"
#include "tensor/dlpack.h"
#include "runtime/cuda.h"
#include "core/counters.h"
#include <stdlib.h>
#include <string.h>

static PyObject *engine;            /* numdyn._cuda_tensor, imported at first use */
static PyObject *cu_op_funcs[32];   /* operator.<name> per slot below */

static PyObject *get_engine(void)
{
    if (!engine) engine = PyImport_ImportModule("numdyn._cuda_tensor");
    return engine;
}

int nd_tensor_is_cuda(PyObject *o)
{
    return nd_tensor_check(o) && ND_TENSOR(o)->device == ND_DEV_CUDA;
}

PyObject *nd_tensor_cuda_from_buffer(PyObject *buf)
{
    if (!nd_cu_devbuf_check(buf)) {
        PyErr_Format(PyExc_TypeError, "numdyn.Tensor on CUDA: expected a DeviceBuffer, got %.100s",
                     Py_TYPE(buf)->tp_name);
        return NULL;
    }
    PyObject *t = nd_tensor_from_array_of(buf, &NdCudaTensor_Type);
    if (t) ND_TENSOR(t)->device = ND_DEV_CUDA;
    return t;
}

/* engine.<name>(*args) */
static PyObject *call_engine(const char *name, PyObject *args)
{
    if (!args || !get_engine()) return NULL;
    PyObject *f = PyObject_GetAttrString(engine, name);
    PyObject *r = f ? PyObject_Call(f, args, NULL) : NULL;
    Py_XDECREF(f);
    return r;
}

/* Deferred operations (numdyn/_cuda_tensor.py, "lazy chains"): a chain of
 * elementwise operations on CUDA Tensors is recorded, its results are
 * Tensors over placeholder buffers (shape and dtype known, no memory), and
 * the whole chain runs as one device program when anything reads device
 * memory. cu_pending counts what is recorded (the engine sets it); every
 * entry below that reads a Tensor's memory or layout calls cu_flush
 * first, which runs everything recorded (cheap when nothing is). */
static Py_ssize_t cu_pending;

/* memory another library can now read and write (DLPack, the CUDA Array
 * Interface): operations reading it run at once from now on (a deferred
 * one would read what that library wrote after it) */
static int cu_shared(PyObject *t)
{
    PyObject *args = PyTuple_Pack(1, t);
    PyObject *r = call_engine("shared", args);
    Py_XDECREF(args);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

static int cu_flush(PyObject *t)
{
    if (!cu_pending) return 0;
    PyObject *args = PyTuple_Pack(1, t);   /* t: raises if its own operation failed */
    PyObject *r = call_engine("flush", args);
    Py_XDECREF(args);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

static int requires_grad(PyObject *o) { return nd_tensor_check(o) && ND_TENSOR(o)->requires_grad; }

int nd_tensor_any_grad(PyObject *obj, int depth) { return nd_tree_any(obj, requires_grad, 16 - depth); }

/* func(*args, **kwargs) on the device through the engine; recorded on the
 * tape when a Tensor among the operands requires grad */
static PyObject *cu_apply(int kind, PyObject *func, PyObject *args, PyObject *kwargs)
{
    PyObject *a = Py_BuildValue("(iOOO)", kind, func, args, kwargs ? kwargs : Py_None);
    PyObject *r = call_engine("apply", a);
    Py_XDECREF(a);
    if (!r) return NULL;
    if (nd_tape_grad_enabled() && (nd_tensor_any_grad(args, 0) || (kwargs && nd_tensor_any_grad(kwargs, 0))) &&
        nd_tape_record(kind, func, args, kwargs, r) < 0)
        Py_CLEAR(r);
    return r;
}

/* ------------------------------------------------------- number protocol */
enum { C_ADD, C_SUB, C_MUL, C_TRUEDIV, C_FLOORDIV, C_MOD, C_POW, C_MATMUL, C_AND, C_OR, C_XOR,
       C_LSHIFT, C_RSHIFT, C_DIVMOD, C_NEG, C_POS, C_ABS, C_INVERT, C_NOPS };
static const char *cu_op_names[C_NOPS] = {
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor",
    "lshift", "rshift", NULL, "neg", "pos", "abs", "invert",
};
static const char *cu_iop_names[C_NOPS] = {
    "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "imatmul", "iand", "ior",
    "ixor", "ilshift", "irshift",
};

static PyObject *cu_bin(int op, PyObject *a, PyObject *b)
{
    PyObject *args = PyTuple_Pack(2, a, b);
    PyObject *r = args ? cu_apply(ND_OP_CALL, cu_op_funcs[op], args, NULL) : NULL;
    Py_XDECREF(args);
    return r;
}

static PyObject *cu_un(int op, PyObject *a)
{
    PyObject *args = PyTuple_Pack(1, a);
    PyObject *r = args ? cu_apply(ND_OP_CALL, cu_op_funcs[op], args, NULL) : NULL;
    Py_XDECREF(args);
    return r;
}

/* the memory of a read-only producer (a JAX array) is never written */
static int refuse_readonly(PyObject *t)
{
    if (!ND_TENSOR(t)->readonly) return 0;
    PyErr_SetString(PyExc_ValueError, "assignment destination is read-only (a CUDA Tensor over "
                    "the memory of a read-only DLPack producer)");
    return -1;
}

/* a op= b: the functional value computed on the device, written into a's
 * memory (not recorded: a Tensor of the tape is refused, as its history
 * would need the old value on the device) */
static PyObject *cu_inplace(int op, PyObject *a, PyObject *b)
{
    if (!nd_tensor_is_cuda(a)) Py_RETURN_NOTIMPLEMENTED;
    if (nd_tape_grad_enabled() && (ND_TENSOR(a)->requires_grad || ND_TENSOR(a)->node ||
                                   (nd_tensor_check(b) && ND_TENSOR(b)->requires_grad))) {
        PyErr_SetString(PyExc_NotImplementedError, "numdyn: an in-place operator on a CUDA Tensor "
                        "that requires grad is not recorded for backward(); write it out of place "
                        "(y = y + v), or under numdyn.no_grad() for an update of a leaf");
        return NULL;
    }
    if (refuse_readonly(a) < 0 || nd_tensor_before_write(a) < 0) return NULL;
    PyObject *args = Py_BuildValue("(sOO)", cu_iop_names[op], a, b);
    PyObject *r = call_engine("inplace", args);
    Py_XDECREF(args);
    return r;
}

#define CU_BIN(name, op) \
    static PyObject *c_##name(PyObject *a, PyObject *b) { return cu_bin(op, a, b); } \
    static PyObject *c_i##name(PyObject *a, PyObject *b) { return cu_inplace(op, a, b); }
CU_BIN(add, C_ADD)
CU_BIN(sub, C_SUB)
CU_BIN(mul, C_MUL)
CU_BIN(truediv, C_TRUEDIV)
CU_BIN(floordiv, C_FLOORDIV)
CU_BIN(mod, C_MOD)
CU_BIN(matmul, C_MATMUL)
CU_BIN(and, C_AND)
CU_BIN(or, C_OR)
CU_BIN(xor, C_XOR)
CU_BIN(lshift, C_LSHIFT)
CU_BIN(rshift, C_RSHIFT)
static PyObject *c_divmod(PyObject *a, PyObject *b) { return cu_bin(C_DIVMOD, a, b); }
static PyObject *c_pow(PyObject *a, PyObject *b, PyObject *m)
{
    if (m != Py_None) {
        PyErr_SetString(PyExc_TypeError, "pow() 3rd argument not allowed unless all arguments are integers");
        return NULL;
    }
    return cu_bin(C_POW, a, b);
}
static PyObject *c_ipow(PyObject *a, PyObject *b, PyObject *m) { return cu_inplace(C_POW, a, b); }
static PyObject *c_neg(PyObject *a) { return cu_un(C_NEG, a); }
static PyObject *c_pos(PyObject *a) { return cu_un(C_POS, a); }
static PyObject *c_abs(PyObject *a) { return cu_un(C_ABS, a); }
static PyObject *c_invert(PyObject *a) { return cu_un(C_INVERT, a); }

/* what Python needs as a value: the element comes down to the host */
static PyObject *cu_scalar(PyObject *a, const char *conv)
{
    PyObject *args = Py_BuildValue("(Os)", a, conv);
    PyObject *r = call_engine("scalar", args);
    Py_XDECREF(args);
    return r;
}
static int c_bool(PyObject *a)
{
    PyObject *r = cu_scalar(a, "bool");
    if (!r) return -1;
    int v = PyObject_IsTrue(r);
    Py_DECREF(r);
    return v;
}
static PyObject *c_int(PyObject *a) { return cu_scalar(a, "int"); }
static PyObject *c_float(PyObject *a) { return cu_scalar(a, "float"); }
static PyObject *c_index(PyObject *a) { return cu_scalar(a, "index"); }

static PyNumberMethods cu_as_number = ND_NUMBER_METHODS(c_);

static PyObject *cmp_funcs[6];   /* operator.lt .. ge by Py_LT .. Py_GE */

static PyObject *c_richcompare(PyObject *a, PyObject *b, int op)
{
    PyObject *args = PyTuple_Pack(2, a, b);
    PyObject *r = args ? cu_apply(ND_OP_CALL, cmp_funcs[op], args, NULL) : NULL;
    Py_XDECREF(args);
    return r;
}

/* ------------------------------------------------------------- indexing */
static PyObject *getitem_fn;

static PyObject *c_getitem(PyObject *self, PyObject *key)
{
    PyObject *args = PyTuple_Pack(2, self, key);
    PyObject *r = args ? cu_apply(ND_OP_CALL, getitem_fn, args, NULL) : NULL;
    Py_XDECREF(args);
    return r;
}

static int c_setitem(PyObject *self, PyObject *key, PyObject *value)
{
    if (!value) {
        PyErr_SetString(PyExc_ValueError, "cannot delete array elements");
        return -1;
    }
    if (nd_tape_grad_enabled() && (ND_TENSOR(self)->requires_grad || ND_TENSOR(self)->node ||
                                   (nd_tensor_check(value) && ND_TENSOR(value)->requires_grad))) {
        PyErr_SetString(PyExc_NotImplementedError, "numdyn: item assignment into a CUDA Tensor "
                        "that requires grad is not recorded for backward()");
        return -1;
    }
    if (refuse_readonly(self) < 0 || nd_tensor_before_write(self) < 0) return -1;
    PyObject *args = PyTuple_Pack(3, self, key, value);
    PyObject *r = call_engine("setitem", args);
    Py_XDECREF(args);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

static Py_ssize_t c_len(PyObject *self)
{
    const nd_cu_array *a = nd_cu_devbuf_array(ND_TENSOR(self)->array);
    if (a->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of unsized object");
        return -1;
    }
    return a->shape[0];
}

static PyMappingMethods cu_as_mapping = {c_len, c_getitem, c_setitem};

static PyObject *contains_fn;

static int c_contains(PyObject *self, PyObject *v)
{
    PyObject *args = PyTuple_Pack(2, self, v);
    PyObject *r = args ? call_engine("contains", args) : NULL;
    Py_XDECREF(args);
    if (!r) return -1;
    int b = PyObject_IsTrue(r);
    Py_DECREF(r);
    return b;
}

static PySequenceMethods cu_as_sequence = {.sq_contains = c_contains};

static PyObject *c_iter(PyObject *self)
{
    PyObject *args = PyTuple_Pack(1, self);
    PyObject *r = call_engine("rows", args);
    Py_XDECREF(args);
    if (!r) return NULL;
    PyObject *it = PyObject_GetIter(r);
    Py_DECREF(r);
    return it;
}

/* attributes the Tensor type does not define: the engine answers (methods
 * as callables running on the device, properties such as .T as Tensors) */
static PyObject *c_getattro(PyObject *self, PyObject *name)
{
    if (!PyUnicode_Check(name) || _PyType_Lookup(Py_TYPE(self), name))
        return PyObject_GenericGetAttr(self, name);
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(name, &len);
    if (!s) return NULL;
    if (len >= 4 && s[0] == '_' && s[1] == '_' && s[len - 1] == '_' && s[len - 2] == '_')
        return PyObject_GenericGetAttr(self, name);
    PyObject *args = PyTuple_Pack(2, self, name);
    PyObject *r = call_engine("attribute", args);
    Py_XDECREF(args);
    return r;
}

/* ------------------------------------------------------------ methods */
static PyObject *c_numpy(PyObject *self, PyObject *unused)
{
    if (cu_flush(self) < 0) return NULL;
    return nd_cu_devbuf_get(ND_TENSOR(self)->array);
}

static PyObject *c_cpu(PyObject *self, PyObject *unused)
{
    if (cu_flush(self) < 0) return NULL;
    PyObject *h = nd_cu_devbuf_get(ND_TENSOR(self)->array);
    if (!h) return NULL;
    PyObject *t = nd_tensor_from_array(h);
    Py_DECREF(h);
    return t;
}

static PyObject *c_self(PyObject *self, PyObject *unused) { return Py_NewRef(self); }

static PyObject *c_detach(PyObject *self, PyObject *unused)
{
    if (cu_flush(self) < 0) return NULL;
    PyObject *r = nd_tensor_cuda_from_buffer(ND_TENSOR(self)->array);
    if (r) ND_TENSOR(r)->readonly = ND_TENSOR(self)->readonly;
    return r;
}

/* _cuda_tensor_before_write(t, what): the checks and version step of an
 * in-place write into CUDA Tensor t (a mutating method) */
static PyObject *mod_before_write(PyObject *m, PyObject *args)
{
    PyObject *t;
    const char *what;
    if (!PyArg_ParseTuple(args, "Os", &t, &what)) return NULL;
    if (!nd_tensor_is_cuda(t)) {
        PyErr_SetString(PyExc_TypeError, "_cuda_tensor_before_write: a CUDA Tensor");
        return NULL;
    }
    if (nd_tape_grad_enabled() && (ND_TENSOR(t)->requires_grad || ND_TENSOR(t)->node)) {
        PyErr_Format(PyExc_NotImplementedError, "numdyn: %s writes in place into a CUDA Tensor "
                     "that requires grad; it is not recorded for backward()", what);
        return NULL;
    }
    if (refuse_readonly(t) < 0 || nd_tensor_before_write(t) < 0) return NULL;
    Py_RETURN_NONE;
}

/* _cuda_tensor_readonly(t): 1 when t's memory is a read-only producer's */
static PyObject *mod_readonly(PyObject *m, PyObject *t)
{
    return PyBool_FromLong(nd_tensor_check(t) && ND_TENSOR(t)->readonly);
}

static PyObject *c_item(PyObject *self, PyObject *args)
{
    PyObject *h = nd_cu_devbuf_get(ND_TENSOR(self)->array);
    if (!h) return NULL;
    PyObject *m = PyObject_GetAttrString(h, "item");
    Py_DECREF(h);
    if (!m) return NULL;
    PyObject *r = PyObject_Call(m, args, NULL);
    Py_DECREF(m);
    return r;
}

/* np.asarray(t): refused, as CuPy and torch refuse an implicit copy to the host */
static PyObject *c_array(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyErr_SetString(PyExc_TypeError, "numdyn: a CUDA Tensor is not converted to a NumPy array "
                    "implicitly; use t.numpy() or t.cpu() to copy it to the host");
    return NULL;
}

static PyObject *c_array_ufunc(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *ufunc, *method, *inputs, *r = NULL;
    int call = nd_array_ufunc_args(args, &ufunc, &method, &inputs);
    if (call < 0) return NULL;
    if (call) {
        r = cu_apply(ND_OP_CALL, ufunc, inputs, kwargs && PyDict_GET_SIZE(kwargs) ? kwargs : NULL);
    } else {   /* ufunc.reduce(x, ...): the bound method, recorded as the CPU does */
        PyObject *full = nd_tuple_prepend(ufunc, inputs);
        if (full)
            r = cu_apply(ND_OP_METHOD, method, full, kwargs && PyDict_GET_SIZE(kwargs) ? kwargs : NULL);
        Py_XDECREF(full);
    }
    Py_DECREF(inputs);
    return r;
}

static PyObject *c_array_function(PyObject *self, PyObject *args)
{
    PyObject *func, *types, *fargs, *fkwargs;
    if (!PyArg_ParseTuple(args, "OOO!O!:__array_function__", &func, &types, &PyTuple_Type, &fargs,
                          &PyDict_Type, &fkwargs))
        return NULL;
    return cu_apply(ND_OP_CALL, func, fargs, PyDict_GET_SIZE(fkwargs) ? fkwargs : NULL);
}

static PyObject *c_format(PyObject *self, PyObject *spec)
{
    if (cu_flush(self) < 0) return NULL;
    PyObject *h = nd_cu_devbuf_get(ND_TENSOR(self)->array);
    if (!h) return NULL;
    PyObject *r = PyObject_Format(h, spec);
    Py_DECREF(h);
    return r;
}

static PyObject *c_repr(PyObject *self)
{
    PyObject *args = PyTuple_Pack(1, self);
    PyObject *r = call_engine("tensor_repr", args);
    Py_XDECREF(args);
    return r;
}

/* t.to("cpu" | "cuda" | "cuda:N" | a dtype, ...): as torch's */
static PyObject *c_to(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *a = PyTuple_Pack(3, self, args, kwargs ? kwargs : Py_None);
    PyObject *r = call_engine("to", a);
    Py_XDECREF(a);
    return r;
}

/* ---------------------------------------------------------------- DLPack */
static PyObject *c_dlpack_device(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("(ii)", ND_DL_CUDA, nd_cu_current_device());
}

static PyObject *c_dlpack(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream,
                                     &max_version, &dl_device, &copy))
        return NULL;
    if (cu_flush(self) < 0 || cu_shared(self) < 0) return NULL;
    PyObject *buf = ND_TENSOR(self)->array;
    int versioned, copied;
    if (nd_dlpack_options(max_version, copy, &versioned, &copied) < 0) return NULL;
    if (dl_device != Py_None) {
        int32_t dt, di;
        if (nd_dlpack_parse_device(dl_device, &dt, &di) < 0) return NULL;
        if (dt == ND_DL_CPU && copy != Py_False) {
            /* a copy to the host, exported as the CPU Tensor would (the
             * standard lets a producer copy across devices when asked) */
            PyObject *h = nd_cu_devbuf_get(buf);
            if (!h) return NULL;
            PyObject *rest = PyDict_New();
            if (!rest) { Py_DECREF(h); return NULL; }
            if ((max_version != Py_None && PyDict_SetItemString(rest, "max_version", max_version) < 0) ||
                PyDict_SetItemString(rest, "copy", Py_False) < 0) {
                Py_DECREF(rest);
                Py_DECREF(h);
                return NULL;
            }
            PyObject *empty = PyTuple_New(0);
            PyObject *cap = empty ? nd_dlpack_export(h, empty, rest) : NULL;
            Py_XDECREF(empty);
            Py_DECREF(rest);
            Py_DECREF(h);
            if (cap && PyCapsule_IsValid(cap, "dltensor_versioned")) {
                nd_DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
                m->flags |= ND_DLPACK_FLAG_IS_COPIED;
            }
            return cap;
        }
        if (dt != ND_DL_CUDA || di != nd_cu_current_device()) {
            PyErr_Format(PyExc_BufferError, "numdyn: unsupported device requested: %R (the "
                         "Tensor is on CUDA device %d, (2, %d))", dl_device,
                         nd_cu_current_device(), nd_cu_current_device());
            return NULL;
        }
    }
    if (stream != Py_None) {
        long long s = PyLong_AsLongLong(stream);
        if (s == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "__dlpack__: stream must be an integer or None, not %.100s",
                         Py_TYPE(stream)->tp_name);
            return NULL;
        }
        if (s == 0) {
            PyErr_SetString(PyExc_ValueError, "__dlpack__: stream 0 is ambiguous on CUDA (use 1 "
                            "for the legacy default stream, 2 for the per-thread one)");
            return NULL;
        }
        if (s < -1) {
            PyErr_Format(PyExc_ValueError, "__dlpack__: invalid stream %lld", s);
            return NULL;
        }
    }
    if (copied) {   /* a fresh device copy of the same layout */
        PyObject *args2 = PyTuple_Pack(1, self);
        PyObject *t = args2 ? call_engine("device_copy", args2) : NULL;
        Py_XDECREF(args2);
        if (!t) return NULL;
        buf = Py_NewRef(ND_TENSOR(t)->array);
        Py_DECREF(t);
    } else {
        Py_INCREF(buf);
    }
    const nd_cu_array *a = nd_cu_devbuf_array(buf);
    PyArray_Descr *d = PyArray_DescrFromType(a->dtype);
    nd_DLDataType dt;
    int rc = d ? nd_dl_of_descr(d, &dt) : -1;
    Py_XDECREF(d);
    if (rc < 0) { Py_DECREF(buf); return NULL; }
    /* the DeviceBuffer is the owner: held until the consumer's deleter runs */
    return nd_dlpack_capsule((void *)(uintptr_t)a->ptr, ND_DL_CUDA, nd_cu_current_device(),
                             a->ndim, a->shape, a->strides, a->itemsize, dt, buf, versioned,
                             copied ? ND_DLPACK_FLAG_IS_COPIED : 0);
}

/* the DLTensor of a kDLCUDA capsule as a CUDA Tensor over its memory; the
 * capsule's manager is released when the last view of that memory dies */
static PyObject *tensor_of_dl(nd_DLTensor *t, int readonly, PyObject *owner)
{
    if (t->device.device_type != ND_DL_CUDA) {
        PyErr_Format(PyExc_BufferError, "numdyn.from_dlpack: expected CUDA memory, got DLPack "
                     "device type %d", (int)t->device.device_type);
        return NULL;
    }
    if (t->device.device_id != nd_cu_current_device()) {
        PyErr_Format(PyExc_BufferError, "numdyn.from_dlpack: the array is on CUDA device %d; numdyn "
                     "runs on device %d (numdyn.cuda.set_device)", (int)t->device.device_id,
                     nd_cu_current_device());
        return NULL;
    }
    int tn = nd_npy_of_dl(t->dtype);
    if (tn < 0 || t->ndim < 0 || t->ndim > ND_MAXDIMS) {
        PyErr_Format(PyExc_BufferError, "numdyn.from_dlpack: unsupported DLPack tensor (dtype "
                     "code %d bits %d lanes %d, %d dimensions)", t->dtype.code, t->dtype.bits,
                     t->dtype.lanes, (int)t->ndim);
        return NULL;
    }
    PyArray_Descr *d = PyArray_DescrFromType(tn);
    if (!d) return NULL;
    nd_cu_array a;
    memset(&a, 0, sizeof a);
    a.ndim = t->ndim;
    a.dtype = tn;
    a.itemsize = (int)PyDataType_ELSIZE(d);
    Py_DECREF(d);
    a.ptr = (nd_cu_ptr)(uintptr_t)t->data + t->byte_offset;
    size_t nel = 1;
    for (int k = t->ndim - 1; k >= 0; k--) {
        a.shape[k] = (npy_intp)t->shape[k];
        a.strides[k] = t->strides ? (npy_intp)t->strides[k] * a.itemsize
                     : k == t->ndim - 1 ? a.itemsize : a.strides[k + 1] * (a.shape[k + 1] ? a.shape[k + 1] : 1);
        nel *= (size_t)a.shape[k];
    }
    a.nbytes = nel * (size_t)a.itemsize;
    PyObject *buf = nd_cu_devbuf_borrow(&a, owner);
    if (!buf) return NULL;
    PyObject *r = nd_tensor_cuda_from_buffer(buf);
    Py_DECREF(buf);
    if (r) ND_TENSOR(r)->readonly = (char)readonly;
    return r;
}

PyObject *nd_tensor_cuda_from_dlpack(PyObject *x)
{
    if (nd_cu_ready() < 0) return NULL;
    PyObject *hs = PyTuple_New(0), *kw = NULL, *f = NULL, *cap = NULL, *r = NULL;
    PyObject *rd = PyObject_CallMethod(get_engine(), "stream_handle", NULL);
    if (!hs || !rd) goto done;
    /* the consumer's stream (numdyn's): the producer orders its work before it */
    if (!(kw = Py_BuildValue("{sOs(ii)}", "stream", rd, "max_version", ND_DLPACK_MAJOR,
                             ND_DLPACK_MINOR)))
        goto done;
    if (!(f = PyObject_GetAttrString(x, "__dlpack__"))) goto done;
    cap = PyObject_Call(f, hs, kw);
    if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) {   /* pre-1.0: no max_version */
        PyErr_Clear();
        PyDict_DelItemString(kw, "max_version");
        cap = PyObject_Call(f, hs, kw);
    }
    if (!cap) goto done;
    r = nd_dlpack_consume(cap, tensor_of_dl);
done:
    Py_XDECREF(hs);
    Py_XDECREF(rd);
    Py_XDECREF(kw);
    Py_XDECREF(f);
    Py_XDECREF(cap);
    return r;
}

/* ------------------------------------------------------------ getset */
static const nd_cu_array *arr_of(PyObject *s) { return nd_cu_devbuf_array(ND_TENSOR(s)->array); }

static PyObject *cg_shape(PyObject *s, void *c)
{
    const nd_cu_array *a = arr_of(s);
    PyObject *t = PyTuple_New(a->ndim);
    for (int k = 0; t && k < a->ndim; k++) PyTuple_SET_ITEM(t, k, PyLong_FromSsize_t(a->shape[k]));
    return t;
}
static PyObject *cg_dtype(PyObject *s, void *c) { return (PyObject *)PyArray_DescrFromType(arr_of(s)->dtype); }
static PyObject *cg_ndim(PyObject *s, void *c) { return PyLong_FromLong(arr_of(s)->ndim); }
static PyObject *cg_size(PyObject *s, void *c)
{
    const nd_cu_array *a = arr_of(s);
    npy_intp n = 1;
    for (int k = 0; k < a->ndim; k++) n *= a->shape[k];
    return PyLong_FromSsize_t(n);
}
static PyObject *cg_device(PyObject *s, void *c) { return PyUnicode_FromFormat("cuda:%d", nd_cu_current_device()); }
static PyObject *cg_cai(PyObject *s, void *c)
{
    if (cu_flush(s) < 0 || cu_shared(s) < 0) return NULL;
    return PyObject_GetAttrString(ND_TENSOR(s)->array, "__cuda_array_interface__");
}
static PyObject *cg_requires_grad(PyObject *s, void *c) { return PyBool_FromLong(ND_TENSOR(s)->requires_grad); }
static int cs_requires_grad(PyObject *s, PyObject *v, void *c)
{
    if (!v) {
        PyErr_SetString(PyExc_AttributeError, "requires_grad cannot be deleted");
        return -1;
    }
    int on = PyObject_IsTrue(v);
    if (on < 0) return -1;
    if (!on && ND_TENSOR(s)->node) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: requires_grad can only be changed on leaf "
                        "Tensors; use .detach() for a Tensor without gradient");
        return -1;
    }
    int t = arr_of(s)->dtype;
    if (on && !PyTypeNum_ISFLOAT(t) && !PyTypeNum_ISCOMPLEX(t)) {
        PyObject *d = (PyObject *)PyArray_DescrFromType(t);
        PyErr_Format(PyExc_RuntimeError, "numdyn: only Tensors of floating point and complex "
                     "dtype can require gradients (this one is %S)", d);
        Py_XDECREF(d);
        return -1;
    }
    ND_TENSOR(s)->requires_grad = (char)on;
    return 0;
}

static PyObject *c_requires_grad_(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *v = Py_True;
    static char *kwlist[] = {"requires_grad", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:requires_grad_", kwlist, &v)) return NULL;
    if (cs_requires_grad(self, v, NULL) < 0) return NULL;
    return Py_NewRef(self);
}

/* pickling: the values (a host copy) and the device, rebuilt by numdyn.tensor */
static PyObject *c_reduce(PyObject *self, PyObject *unused)
{
    PyObject *args = PyTuple_Pack(1, self);
    PyObject *r = call_engine("reduce", args);
    Py_XDECREF(args);
    return r;
}

static PyMethodDef cu_methods[] = {
    {"numpy", c_numpy, METH_NOARGS, "A copy of the values on the host (an ndarray)."},
    {"cpu", c_cpu, METH_NOARGS, "A CPU Tensor holding a copy of the values."},
    {"cuda", c_self, METH_NOARGS, "This Tensor (it is on the GPU)."},
    {"to", (PyCFunction)(void (*)(void))c_to, METH_VARARGS | METH_KEYWORDS,
     "to(device=None, dtype=None, copy=False): on device ('cpu', 'cuda', 'cuda:N') and/or of dtype."},
    {"detach", c_detach, METH_NOARGS, "A CUDA Tensor sharing this one's memory, without gradient."},
    {"item", c_item, METH_VARARGS, "The element as a Python scalar (copied to the host)."},
    {"requires_grad_", (PyCFunction)(void (*)(void))c_requires_grad_, METH_VARARGS | METH_KEYWORDS,
     "Set requires_grad in place; returns self."},
    {"__array__", (PyCFunction)(void (*)(void))c_array, METH_VARARGS | METH_KEYWORDS, NULL},
    {"__array_ufunc__", (PyCFunction)(void (*)(void))c_array_ufunc, METH_VARARGS | METH_KEYWORDS, NULL},
    {"__array_function__", c_array_function, METH_VARARGS, NULL},
    {"__format__", c_format, METH_O, NULL},
    {"__dlpack__", (PyCFunction)(void (*)(void))c_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None): a DLPack "
     "capsule of the device memory (kDLCUDA), no copy."},
    {"__dlpack_device__", c_dlpack_device, METH_NOARGS, "(2, device ordinal): kDLCUDA."},
    {"__reduce__", c_reduce, METH_NOARGS, NULL},
    {NULL},
};

static PyGetSetDef cu_getset[] = {
    {"shape", cg_shape, NULL, "shape", NULL},
    {"dtype", cg_dtype, NULL, "the NumPy dtype", NULL},
    {"ndim", cg_ndim, NULL, NULL, NULL},
    {"size", cg_size, NULL, NULL, NULL},
    {"device", cg_device, NULL, "where the memory is: 'cuda:N'", NULL},
    {"requires_grad", cg_requires_grad, cs_requires_grad,
     "whether backward() computes a gradient for this Tensor", NULL},
    {"__cuda_array_interface__", cg_cai, NULL, "CUDA Array Interface (version 3)", NULL},
    {NULL},
};

PyTypeObject NdCudaTensor_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn.Tensor",
    .tp_basicsize = sizeof(NdTensor),
    .tp_repr = c_repr,
    .tp_as_number = &cu_as_number,
    .tp_as_sequence = &cu_as_sequence,
    .tp_as_mapping = &cu_as_mapping,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_getattro = c_getattro,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "numdyn.Tensor on a CUDA device: its operations run on the GPU (backend 'cuda').",
    .tp_richcompare = c_richcompare,
    .tp_iter = c_iter,
    .tp_methods = cu_methods,
    .tp_getset = cu_getset,
};

/* _cuda_tensor_wrap(DeviceBuffer) -> CUDA Tensor; _cuda_tensor_buffer(t) -> its DeviceBuffer */
static PyObject *mod_wrap(PyObject *m, PyObject *buf) { return nd_tensor_cuda_from_buffer(buf); }
static PyObject *mod_buffer(PyObject *m, PyObject *t)
{
    if (!nd_tensor_is_cuda(t)) {
        PyErr_SetString(PyExc_TypeError, "_cuda_tensor_buffer: a CUDA Tensor");
        return NULL;
    }
    if (cu_flush(t) < 0) return NULL;
    return Py_NewRef(ND_TENSOR(t)->array);
}
static PyObject *mod_upload(PyObject *m, PyObject *a) { return nd_cu_devbuf_upload(a); }
static PyObject *mod_copy(PyObject *m, PyObject *args)
{
    PyObject *dst, *src;
    if (!PyArg_ParseTuple(args, "OO", &dst, &src)) return NULL;
    if (!nd_cu_devbuf_check(dst) || !nd_cu_devbuf_check(src)) {
        PyErr_SetString(PyExc_TypeError, "_cuda_buffer_copy(dst, src): DeviceBuffers");
        return NULL;
    }
    if (nd_cu_devbuf_copy(dst, src) < 0) return NULL;
    Py_RETURN_NONE;
}
static PyObject *mod_from_dlpack(PyObject *m, PyObject *x) { return nd_tensor_cuda_from_dlpack(x); }
/* _cuda_tensor_borrow(ptr, shape, byte strides, dtype number, owner) -> CUDA Tensor over
 * another library's memory (a __cuda_array_interface__ producer), held by owner */
static PyObject *mod_borrow(PyObject *m, PyObject *args)
{
    unsigned long long ptr;
    PyObject *shape, *strides, *owner;
    int dtype;
    if (!PyArg_ParseTuple(args, "KO!O!iO", &ptr, &PyTuple_Type, &shape, &PyTuple_Type, &strides,
                          &dtype, &owner))
        return NULL;
    nd_cu_array a;
    memset(&a, 0, sizeof a);
    a.ndim = (int)PyTuple_GET_SIZE(shape);
    if (a.ndim > ND_MAXDIMS || PyTuple_GET_SIZE(strides) != a.ndim) {
        PyErr_SetString(PyExc_ValueError, "_cuda_tensor_borrow: shape and strides of one rank");
        return NULL;
    }
    PyArray_Descr *d = PyArray_DescrFromType(dtype);
    if (!d) return NULL;
    a.dtype = dtype;
    a.itemsize = (int)PyDataType_ELSIZE(d);
    Py_DECREF(d);
    a.ptr = ptr;
    size_t nel = 1;
    for (int k = 0; k < a.ndim; k++) {
        a.shape[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, k));
        a.strides[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, k));
        nel *= (size_t)a.shape[k];
    }
    if (PyErr_Occurred()) return NULL;
    a.nbytes = nel * (size_t)a.itemsize;
    PyObject *buf = nd_cu_devbuf_borrow(&a, owner);
    if (!buf) return NULL;
    PyObject *r = nd_tensor_cuda_from_buffer(buf);
    Py_DECREF(buf);
    return r;
}

PyObject *nd_tensor_cuda_of_cpu(PyObject *t)
{
    if (nd_tensor_is_cuda(t)) return Py_NewRef(t);
    PyObject *buf = nd_cu_devbuf_upload(ND_TENSOR(t)->array);
    if (!buf) return NULL;
    PyObject *r = nd_tensor_cuda_from_buffer(buf);
    Py_DECREF(buf);
    return r;
}

PyObject *nd_tensor_cuda_wrap_call(PyObject *fn, PyObject *compiled, PyObject *args,
                                   PyObject *kwargs)
{
    PyObject *a = Py_BuildValue("(OOOO)", fn, compiled, args, kwargs ? kwargs : Py_None);
    PyObject *r = call_engine("wrap_call", a);
    Py_XDECREF(a);
    return r;
}

PyObject *nd_tensor_cuda_copy(PyObject *t)
{
    PyObject *args = PyTuple_Pack(1, t);
    PyObject *r = call_engine("device_copy", args);
    Py_XDECREF(args);
    return r;
}

int nd_tensor_cuda_differentiable(PyObject *o)
{
    if (!nd_cu_devbuf_check(o)) return 0;
    int t = nd_cu_devbuf_array(o)->dtype;
    return PyTypeNum_ISFLOAT(t) || PyTypeNum_ISCOMPLEX(t);
}

PyObject *nd_tensor_cuda_backward(PyObject *t, PyObject *grad, PyObject *wrt, int create)
{
    PyObject *args = Py_BuildValue("(OOOO)", t, grad, wrt ? wrt : Py_None, create ? Py_True : Py_False);
    PyObject *r = args ? call_engine("backward", args) : NULL;
    Py_XDECREF(args);
    return r;
}

PyObject *nd_tensor_cuda_zeros_like(PyObject *t)
{
    const nd_cu_array *a = arr_of(t);
    PyObject *z = PyArray_ZEROS(a->ndim, (npy_intp *)a->shape, a->dtype, 0);
    PyObject *r = z ? nd_cu_devbuf_upload(z) : NULL;
    Py_XDECREF(z);
    return r;
}

/* _cuda_tensor_apply(kind, func, args, kwargs): a Tensor method's call, as the slots run it */
static PyObject *mod_apply(PyObject *m, PyObject *args)
{
    int kind;
    PyObject *func, *fargs, *fkw;
    if (!PyArg_ParseTuple(args, "iOO!O:_cuda_tensor_apply", &kind, &func, &PyTuple_Type, &fargs, &fkw))
        return NULL;
    return cu_apply(kind, func, fargs, fkw == Py_None ? NULL : fkw);
}

static PyObject *mod_host_step(PyObject *m, PyObject *noargs)
{
    nd_counter_add(ND_CTR_CUDA_HOST_STEPS, 1);
    Py_RETURN_NONE;
}

/* _cuda_tensor_layout(t) -> (device pointer, shape, byte strides, dtype number): what a
 * signature and a graph feed need, without building the interface's dict */
static PyObject *mod_layout(PyObject *m, PyObject *t)
{
    if (!nd_tensor_is_cuda(t)) {
        PyErr_SetString(PyExc_TypeError, "_cuda_tensor_layout: a CUDA Tensor");
        return NULL;
    }
    if (cu_flush(t) < 0) return NULL;
    const nd_cu_array *a = arr_of(t);
    PyObject *shape = PyTuple_New(a->ndim), *st = PyTuple_New(a->ndim);
    for (int k = 0; shape && st && k < a->ndim; k++) {
        PyTuple_SET_ITEM(shape, k, PyLong_FromSsize_t(a->shape[k]));
        PyTuple_SET_ITEM(st, k, PyLong_FromSsize_t(a->strides[k]));
    }
    if (!shape || !st) { Py_XDECREF(shape); Py_XDECREF(st); return NULL; }
    return Py_BuildValue("(KNNi)", (unsigned long long)a->ptr, shape, st, a->dtype);
}

/* _cuda_tensor_pending(n): how many operations the engine holds deferred
 * (and Tensors whose deferred operation failed: reading one raises) */
static PyObject *mod_pending(PyObject *m, PyObject *n)
{
    Py_ssize_t v = PyLong_AsSsize_t(n);
    if (v < 0 && PyErr_Occurred()) return NULL;
    cu_pending = v;
    Py_RETURN_NONE;
}

/* _cuda_tensor_adopt(t, buf): deferred Tensor t takes the memory its
 * operation produced (same shape and dtype; the layout the run gave it) */
static PyObject *mod_adopt(PyObject *m, PyObject *args)
{
    PyObject *t, *buf;
    if (!PyArg_ParseTuple(args, "OO", &t, &buf)) return NULL;
    if (!nd_tensor_is_cuda(t) || !nd_cu_devbuf_check(buf)) {
        PyErr_SetString(PyExc_TypeError, "_cuda_tensor_adopt(t, buf): a CUDA Tensor and a DeviceBuffer");
        return NULL;
    }
    const nd_cu_array *a = arr_of(t), *b = nd_cu_devbuf_array(buf);
    int same = a->ndim == b->ndim && a->dtype == b->dtype;
    for (int k = 0; same && k < a->ndim; k++) same = a->shape[k] == b->shape[k];
    if (!same) {
        PyErr_SetString(PyExc_ValueError, "_cuda_tensor_adopt: another shape or dtype");
        return NULL;
    }
    Py_SETREF(ND_TENSOR(t)->array, Py_NewRef(buf));
    Py_RETURN_NONE;
}

static PyMethodDef cuda_tensor_functions[] = {
    {"_cuda_tensor_layout", mod_layout, METH_O, "(pointer, shape, byte strides, dtype number)"},
    {"_cuda_tensor_pending", mod_pending, METH_O, "how many operations are deferred"},
    {"_cuda_tensor_adopt", mod_adopt, METH_VARARGS, "a deferred Tensor takes its result's memory"},
    {"_cuda_tensor_readonly", mod_readonly, METH_O, "memory of a read-only DLPack producer"},
    {"_cuda_tensor_before_write", mod_before_write, METH_VARARGS, "checks before an in-place write"},
    {"_cuda_tensor_apply", mod_apply, METH_VARARGS, "an operation of CUDA Tensors (taped)"},
    {"_cuda_count_host_step", mod_host_step, METH_NOARGS, "count a step NumPy ran on the host"},
    {"_cuda_tensor_wrap", mod_wrap, METH_O, "a CUDA Tensor over a DeviceBuffer"},
    {"_cuda_tensor_buffer", mod_buffer, METH_O, "the DeviceBuffer of a CUDA Tensor"},
    {"_cuda_upload", mod_upload, METH_O, "an ndarray up to the device: a DeviceBuffer"},
    {"_cuda_buffer_copy", mod_copy, METH_VARARGS, "device bytes of one buffer into another"},
    {"_cuda_tensor_from_dlpack", mod_from_dlpack, METH_O, "a CUDA Tensor over a kDLCUDA producer"},
    {"_cuda_tensor_borrow", mod_borrow, METH_VARARGS, "a CUDA Tensor over borrowed device memory"},
    {NULL},
};

int nd_tensor_cuda_init(PyObject *m)
{
    NdCudaTensor_Type.tp_base = &NdTensor_Type;
    NdCudaTensor_Type.tp_traverse = NdTensor_Type.tp_traverse;   /* the same fields */
    NdCudaTensor_Type.tp_clear = NdTensor_Type.tp_clear;
    NdCudaTensor_Type.tp_dealloc = NdTensor_Type.tp_dealloc;
    if (PyType_Ready(&NdCudaTensor_Type) < 0) return -1;
    PyObject *op = PyImport_ImportModule("operator");
    if (!op) return -1;
    for (int i = 0; i < C_NOPS; i++)
        if (cu_op_names[i] && !(cu_op_funcs[i] = PyObject_GetAttrString(op, cu_op_names[i]))) {
            Py_DECREF(op);
            return -1;
        }
    static const char *cmp[6] = {"lt", "le", "eq", "ne", "gt", "ge"};
    for (int i = 0; i < 6; i++)
        if (!(cmp_funcs[i] = PyObject_GetAttrString(op, cmp[i]))) { Py_DECREF(op); return -1; }
    getitem_fn = PyObject_GetAttrString(op, "getitem");
    contains_fn = PyObject_GetAttrString(op, "contains");
    Py_DECREF(op);
    if (!getitem_fn || !contains_fn) return -1;
    PyObject *bi = PyEval_GetBuiltins();
    if (!(cu_op_funcs[C_DIVMOD] = Py_XNewRef(PyDict_GetItemString(bi, "divmod")))) return -1;
    if (PyModule_AddObjectRef(m, "_CudaTensor", (PyObject *)&NdCudaTensor_Type) < 0) return -1;
    return PyModule_AddFunctions(m, cuda_tensor_functions);
}
