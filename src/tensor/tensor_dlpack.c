/* tensor_dlpack.c -- DLPack both ways: export of an ndarray (a Tensor's
 * __dlpack__), and numdyn.from_dlpack / the import wrap_numpy uses for any
 * producer (torch, JAX, NumPy, CuPy...).
 *
 * Export shares the array's memory: the managed tensor holds a reference to
 * the ndarray until the consumer calls its deleter (from any thread: the
 * deleter takes the GIL). A read-only array can only be exported in a
 * versioned capsule, which can say so (DLPack 1.0's READ_ONLY flag); the
 * legacy format cannot, so it is refused there, as NumPy does.
 *
 * Import shares the producer's memory: the ndarray's base is a capsule that
 * owns the managed tensor and calls its deleter when the array dies. The
 * versioned protocol is asked for first (max_version=(1, 0)); a producer
 * whose __dlpack__ takes no keywords gets the legacy call.
 */
#include "tensor/tensor_internal.h"
#include "tensor/dlpack.h"
#include <stdlib.h>
#include <string.h>

static PyObject *str_dlpack, *str_dlpack_device, *kw_versioned, *kw_versioned_copy;

/* --------------------------------------------------------------- dtypes */

int nd_dl_of_descr(PyArray_Descr *d, nd_DLDataType *out)
{
    int t = d->type_num;
    out->lanes = 1;
    out->bits = (uint8_t)(PyDataType_ELSIZE(d) * 8);
    if (t == NPY_BOOL) out->code = ND_DL_BOOL;
    else if (PyTypeNum_ISSIGNED(t)) out->code = ND_DL_INT;
    else if (PyTypeNum_ISUNSIGNED(t)) out->code = ND_DL_UINT;
    else if (t == NPY_HALF || t == NPY_FLOAT || t == NPY_DOUBLE) out->code = ND_DL_FLOAT;
    else if (t == NPY_CFLOAT || t == NPY_CDOUBLE) out->code = ND_DL_COMPLEX;
    else {
        PyErr_Format(PyExc_BufferError, "DLPack only supports signed/unsigned integers, float "
                     "and complex dtypes (and bool); not %S", (PyObject *)d);
        return -1;
    }
    if (!PyArray_ISNBO(d->byteorder)) {
        PyErr_SetString(PyExc_BufferError, "DLPack only supports native byte order");
        return -1;
    }
    return 0;
}

int nd_npy_of_dl(nd_DLDataType dt)
{
    if (dt.lanes != 1) return -1;
    switch (dt.code) {
    case ND_DL_BOOL: return dt.bits == 8 ? NPY_BOOL : -1;
    case ND_DL_INT:
        return dt.bits == 8 ? NPY_INT8 : dt.bits == 16 ? NPY_INT16 : dt.bits == 32 ? NPY_INT32
             : dt.bits == 64 ? NPY_INT64 : -1;
    case ND_DL_UINT:
        return dt.bits == 8 ? NPY_UINT8 : dt.bits == 16 ? NPY_UINT16 : dt.bits == 32 ? NPY_UINT32
             : dt.bits == 64 ? NPY_UINT64 : -1;
    case ND_DL_FLOAT:
        return dt.bits == 16 ? NPY_HALF : dt.bits == 32 ? NPY_FLOAT : dt.bits == 64 ? NPY_DOUBLE : -1;
    case ND_DL_COMPLEX:
        return dt.bits == 64 ? NPY_CFLOAT : dt.bits == 128 ? NPY_CDOUBLE : -1;
    default: return -1;
    }
}

/* --------------------------------------------------------------- export */

/* one allocation: the managed tensor (either form), the array it keeps
 * alive, then shape[ndim] and strides[ndim] */
typedef struct {
    union {
        nd_DLManagedTensorVersioned v;
        nd_DLManagedTensor l;
    } m;
    PyObject *array;
    int64_t dims[];
} export_ctx;

static void release_array(export_ctx *c)
{
    if (!Py_IsInitialized()) return;  /* at exit: the array is gone with the interpreter */
    PyGILState_STATE st = PyGILState_Ensure();
    Py_XDECREF(c->array);
    PyGILState_Release(st);
    free(c);
}

static void deleter_versioned(nd_DLManagedTensorVersioned *self)
{
    release_array((export_ctx *)self->manager_ctx);
}

static void deleter_legacy(nd_DLManagedTensor *self)
{
    release_array((export_ctx *)self->manager_ctx);
}

/* a capsule dropped unconsumed deletes what it holds */
static void capsule_free_versioned(PyObject *cap)
{
    if (!PyCapsule_IsValid(cap, "dltensor_versioned")) return;  /* consumed */
    ND_T_EXC_SAVE(exc);
    nd_DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
    if (m && m->deleter) m->deleter(m);
    ND_T_EXC_RESTORE(exc);
}

static void capsule_free_legacy(PyObject *cap)
{
    if (!PyCapsule_IsValid(cap, "dltensor")) return;
    ND_T_EXC_SAVE(exc);
    nd_DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (m && m->deleter) m->deleter(m);
    ND_T_EXC_RESTORE(exc);
}

int nd_dlpack_options(PyObject *max_version, PyObject *copy, int *versioned, int *want_copy)
{
    *want_copy = *versioned = 0;
    if (copy != Py_None) {
        if (!PyBool_Check(copy)) {
            PyErr_SetString(PyExc_TypeError, "__dlpack__: copy must be True, False or None");
            return -1;
        }
        *want_copy = copy == Py_True;
    }
    if (max_version != Py_None) {
        if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) != 2) {
            PyErr_SetString(PyExc_TypeError, "max_version must be None or a (major, minor) tuple");
            return -1;
        }
        long major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
        if (major == -1 && PyErr_Occurred()) return -1;
        *versioned = major >= 1;
    }
    return 0;
}

int nd_dlpack_parse_device(PyObject *dev, int32_t *type, int32_t *id)
{
    long long a, b;
    if (!PyTuple_Check(dev) || PyTuple_GET_SIZE(dev) != 2) {
        PyErr_Format(PyExc_TypeError, "dl_device must be a (device_type, device_id) tuple, "
                     "not %R", dev);
        return -1;
    }
    if ((a = PyLong_AsLongLong(PyTuple_GET_ITEM(dev, 0))) == -1 && PyErr_Occurred()) return -1;
    if ((b = PyLong_AsLongLong(PyTuple_GET_ITEM(dev, 1))) == -1 && PyErr_Occurred()) return -1;
    *type = (int32_t)a;
    *id = (int32_t)b;
    return 0;
}

PyObject *nd_dlpack_device(PyObject *array)
{
    return Py_BuildValue("(ii)", ND_DL_CPU, 0);
}

PyObject *nd_dlpack_export(PyObject *array, PyObject *args, PyObject *kwargs)
{
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None, *copy = Py_None;
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream,
                                     &max_version, &dl_device, &copy))
        return NULL;
    if (stream != Py_None) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: a CPU Tensor only supports stream=None");
        return NULL;
    }
    if (dl_device != Py_None) {
        int32_t type, id;
        if (nd_dlpack_parse_device(dl_device, &type, &id) < 0) return NULL;
        if (type != ND_DL_CPU || id != 0) {
            PyErr_Format(PyExc_BufferError, "numdyn: unsupported device requested: %R (the "
                         "Tensor is on the CPU, (1, 0))", dl_device);
            return NULL;
        }
    }
    int want_copy, versioned;
    if (nd_dlpack_options(max_version, copy, &versioned, &want_copy) < 0) return NULL;
    PyArrayObject *a = (PyArrayObject *)array;
    nd_DLDataType dt;
    if (nd_dl_of_descr(PyArray_DESCR(a), &dt) < 0) return NULL;
    int readonly = !PyArray_ISWRITEABLE(a);
    if (want_copy) {
        a = (PyArrayObject *)PyArray_NewCopy(a, NPY_KEEPORDER);
        if (!a) return NULL;
        readonly = 0;
    } else {
        Py_INCREF(a);
    }
    if (readonly && !versioned) {
        Py_DECREF(a);
        PyErr_SetString(PyExc_BufferError,
                        "Cannot export a read-only array in a legacy DLPack capsule, which "
                        "cannot signal read-only (ask for max_version=(1, 0))");
        return NULL;
    }
    int nd = PyArray_NDIM(a);
    npy_intp item = PyArray_ITEMSIZE(a);
    for (int d = 0; d < nd; d++) {
        npy_intp st = PyArray_STRIDE(a, d);
        if (item == 0 || st % item) {
            Py_DECREF(a);
            PyErr_SetString(PyExc_BufferError,
                            "DLPack only supports strides which are a multiple of itemsize");
            return NULL;
        }
    }
    return nd_dlpack_capsule(PyArray_DATA(a), ND_DL_CPU, 0, nd, PyArray_DIMS(a), PyArray_STRIDES(a),
                             item, dt, (PyObject *)a, versioned,
                             (readonly ? ND_DLPACK_FLAG_READ_ONLY : 0) |
                             (want_copy ? ND_DLPACK_FLAG_IS_COPIED : 0));
}

PyObject *nd_dlpack_capsule(void *data, int32_t dev_type, int32_t dev_id, int nd,
                            const npy_intp *shape, const npy_intp *byte_strides, npy_intp item,
                            nd_DLDataType dt, PyObject *owner, int versioned, uint64_t flags)
{
    export_ctx *c = calloc(1, sizeof(export_ctx) + sizeof(int64_t) * 2 * (size_t)(nd ? nd : 1));
    if (!c) {
        Py_DECREF(owner);
        return PyErr_NoMemory();
    }
    for (int d = 0; d < nd; d++) {
        c->dims[d] = shape[d];
        c->dims[nd + d] = item ? byte_strides[d] / item : 0;
    }
    c->array = owner;
    nd_DLTensor *t = versioned ? &c->m.v.dl_tensor : &c->m.l.dl_tensor;
    t->data = data;
    t->device.device_type = dev_type;
    t->device.device_id = dev_id;
    t->ndim = nd;
    t->dtype = dt;
    t->shape = c->dims;
    t->strides = c->dims + nd;
    t->byte_offset = 0;
    PyObject *cap;
    if (versioned) {
        c->m.v.version.major = ND_DLPACK_MAJOR;
        c->m.v.version.minor = ND_DLPACK_MINOR;
        c->m.v.manager_ctx = c;
        c->m.v.deleter = deleter_versioned;
        c->m.v.flags = flags;
        cap = PyCapsule_New(&c->m.v, "dltensor_versioned", capsule_free_versioned);
    } else {
        c->m.l.manager_ctx = c;
        c->m.l.deleter = deleter_legacy;
        cap = PyCapsule_New(&c->m.l, "dltensor", capsule_free_legacy);
    }
    if (!cap) {
        Py_DECREF(owner);
        free(c);
    }
    return cap;
}

/* --------------------------------------------------------------- import */

/* base of an imported array: calls the producer's deleter when it dies */
static void owner_free_versioned(PyObject *cap)
{
    nd_DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "numdyn.dlpack_versioned");
    if (m && m->deleter) m->deleter(m);
    else PyErr_Clear();
}

static void owner_free_legacy(PyObject *cap)
{
    nd_DLManagedTensor *m = PyCapsule_GetPointer(cap, "numdyn.dlpack");
    if (m && m->deleter) m->deleter(m);
    else PyErr_Clear();
}

/* the ndarray over a managed tensor; takes ownership of it on success */
static PyObject *array_of(nd_DLTensor *t, int readonly, PyObject *owner)
{
    if (t->device.device_type != ND_DL_CPU && t->device.device_type != ND_DL_CUDA_HOST &&
        t->device.device_type != ND_DL_CUDA_MANAGED) {
        PyErr_Format(PyExc_BufferError, "numdyn.from_dlpack: memory on DLPack device type %d "
                     "is not readable by the CPU", (int)t->device.device_type);
        return NULL;
    }
    int tn = nd_npy_of_dl(t->dtype);
    if (tn < 0) {
        PyErr_Format(PyExc_BufferError, "numdyn.from_dlpack: unsupported DLPack dtype (code %d, "
                     "bits %d, lanes %d)", t->dtype.code, t->dtype.bits, t->dtype.lanes);
        return NULL;
    }
    if (t->ndim < 0 || t->ndim > NPY_MAXDIMS) {
        PyErr_Format(PyExc_BufferError, "numdyn.from_dlpack: %d dimensions", (int)t->ndim);
        return NULL;
    }
    PyArray_Descr *descr = PyArray_DescrFromType(tn);
    if (!descr) return NULL;
    npy_intp item = PyDataType_ELSIZE(descr);
    npy_intp dims[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
        dims[d] = (npy_intp)t->shape[d];
        if (t->strides) strides[d] = (npy_intp)t->strides[d] * item;
        else strides[d] = d == t->ndim - 1 ? item : strides[d + 1] * (dims[d + 1] ? dims[d + 1] : 1);
    }
    char *data = (char *)t->data + t->byte_offset;
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, t->ndim, dims, strides, data,
                                         readonly ? 0 : NPY_ARRAY_WRITEABLE, NULL);
    if (!arr) return NULL;
    if (PyArray_SetBaseObject((PyArrayObject *)arr, Py_NewRef(owner)) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

PyObject *nd_dlpack_consume(PyObject *cap, nd_dlpack_make make)
{
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        nd_DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (!m) return NULL;
        if (m->version.major > ND_DLPACK_MAJOR) {
            PyErr_Format(PyExc_BufferError, "numdyn.from_dlpack: DLPack version %u.%u is newer "
                         "than numdyn's (%d.%d)", m->version.major, m->version.minor,
                         ND_DLPACK_MAJOR, ND_DLPACK_MINOR);
            return NULL;
        }
        PyObject *owner = PyCapsule_New(m, "numdyn.dlpack_versioned", NULL);
        if (!owner) return NULL;
        PyObject *arr = make(&m->dl_tensor, (m->flags & ND_DLPACK_FLAG_READ_ONLY) != 0, owner);
        if (arr) {  /* the owner now deletes it; the producer's capsule must not */
            if (PyCapsule_SetName(cap, "used_dltensor_versioned") < 0 ||
                PyCapsule_SetDestructor(owner, owner_free_versioned) < 0)
                Py_CLEAR(arr);
        }
        Py_DECREF(owner);
        return arr;
    }
    if (PyCapsule_IsValid(cap, "dltensor")) {
        nd_DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        if (!m) return NULL;
        PyObject *owner = PyCapsule_New(m, "numdyn.dlpack", NULL);
        if (!owner) return NULL;
        /* a legacy capsule cannot say read-only: NumPy 2's np.from_dlpack
         * makes host memory so imported read-only (a JAX array is
         * immutable: a write through it changed the JAX value) */
        PyObject *arr = make(&m->dl_tensor, make == array_of, owner);
        if (arr) {
            if (PyCapsule_SetName(cap, "used_dltensor") < 0 ||
                PyCapsule_SetDestructor(owner, owner_free_legacy) < 0)
                Py_CLEAR(arr);
        }
        Py_DECREF(owner);
        return arr;
    }
    PyErr_Format(PyExc_TypeError, "numdyn.from_dlpack: __dlpack__ returned %.100s, not an "
                 "unconsumed DLPack capsule", Py_TYPE(cap)->tp_name);
    return NULL;
}

PyObject *nd_dlpack_to_array(PyObject *x, int copy)
{
    if (nd_tensor_check(x)) {
        PyObject *a = ND_TENSOR(x)->array;
        return copy == 1 ? PyArray_NewCopy((PyArrayObject *)a, NPY_KEEPORDER) : Py_NewRef(a);
    }
    PyObject *dev = PyObject_CallMethodNoArgs(x, str_dlpack_device);
    if (!dev) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "numdyn.from_dlpack: %.100s does not support DLPack "
                     "(no __dlpack__ / __dlpack_device__)", Py_TYPE(x)->tp_name);
        return NULL;
    }
    int32_t type = 0, id = 0;
    int rc = nd_dlpack_parse_device(dev, &type, &id);
    Py_DECREF(dev);
    if (rc < 0) return NULL;
    if (type != ND_DL_CPU && type != ND_DL_CUDA_HOST && type != ND_DL_CUDA_MANAGED) {
        PyErr_Format(PyExc_BufferError, "numdyn.from_dlpack: the array is on DLPack device "
                     "(%d, %d), not readable by the CPU (numdyn.from_dlpack(x) makes a CUDA "
                     "Tensor of it)", (int)type, (int)id);
        return NULL;
    }
    /* versioned first: __dlpack__(max_version=(1, 0)[, copy=...]) */
    PyObject *argv[3] = {x, NULL, copy >= 0 ? (copy ? Py_True : Py_False) : NULL};
    PyObject *ver = Py_BuildValue("(ii)", ND_DLPACK_MAJOR, ND_DLPACK_MINOR);
    if (!ver) return NULL;
    argv[1] = ver;
    PyObject *cap = PyObject_VectorcallMethod(str_dlpack, argv, 1,
                                              copy >= 0 ? kw_versioned_copy : kw_versioned);
    Py_DECREF(ver);
    int legacy_copy = 0;
    if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) {
        /* a pre-1.0 producer: __dlpack__() takes no keywords */
        PyErr_Clear();
        cap = PyObject_CallMethodNoArgs(x, str_dlpack);
        legacy_copy = copy == 1;
    }
    if (!cap) return NULL;
    PyObject *arr = nd_dlpack_consume(cap, array_of);
    Py_DECREF(cap);
    if (arr && legacy_copy)
        Py_SETREF(arr, PyArray_NewCopy((PyArrayObject *)arr, NPY_KEEPORDER));
    return arr;
}

static PyObject *mod_from_dlpack(PyObject *m, PyObject *args, PyObject *kwargs)
{
    PyObject *x, *device = Py_None, *copy = Py_None;
    static char *kwlist[] = {"x", "device", "copy", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OO:from_dlpack", kwlist, &x, &device,
                                     &copy))
        return NULL;
    int want_cuda = 0;
    if (device != Py_None) {
        const char *d = PyUnicode_Check(device) ? PyUnicode_AsUTF8(device) : NULL;
        want_cuda = d && !strncmp(d, "cuda", 4);
        if (!d || (strcmp(d, "cpu") && strcmp(d, "cpu:0") && !want_cuda)) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "numdyn.from_dlpack: device %R is not "
                             "available (use 'cpu' or 'cuda')", device);
            return NULL;
        }
    }
    if (copy != Py_None && !PyBool_Check(copy)) {
        PyErr_SetString(PyExc_TypeError, "numdyn.from_dlpack: copy must be True, False or None");
        return NULL;
    }
    /* a CUDA producer (or device="cuda"): numdyn.Tensor on CUDA (tensor_cuda.c) */
    int on_cuda = nd_tensor_is_cuda(x);
    if (!on_cuda && !nd_tensor_check(x)) {
        PyObject *dev = PyObject_CallMethod(x, "__dlpack_device__", NULL);
        if (!dev) PyErr_Clear();
        else {
            on_cuda = PyTuple_Check(dev) && PyTuple_GET_SIZE(dev) == 2 &&
                      PyLong_Check(PyTuple_GET_ITEM(dev, 0)) &&
                      PyLong_AsLong(PyTuple_GET_ITEM(dev, 0)) == ND_DL_CUDA;
            Py_DECREF(dev);
        }
    }
    if (on_cuda || want_cuda) {
        PyObject *args2 = Py_BuildValue("(OOO)", x, device, copy);
        PyObject *eng = args2 ? PyImport_ImportModule("numdyn._cuda_tensor") : NULL;
        PyObject *r = eng ? PyObject_CallMethod(eng, "from_dlpack", "O", args2) : NULL;
        Py_XDECREF(eng);
        Py_XDECREF(args2);
        return r;
    }
    PyObject *a = nd_dlpack_to_array(x, copy == Py_None ? -1 : copy == Py_True);
    if (!a) return NULL;
    PyObject *t = nd_tensor_from_array(a);
    Py_DECREF(a);
    return t;
}

static PyMethodDef dlpack_functions[] = {
    {"from_dlpack", (PyCFunction)(void (*)(void))mod_from_dlpack, METH_VARARGS | METH_KEYWORDS,
     "from_dlpack(x, *, device=None, copy=None): a numdyn.Tensor sharing the memory of x, "
     "any DLPack producer (torch, JAX, NumPy, a numdyn.Tensor); copy=True copies."},
    {NULL},
};

int nd_dlpack_init(PyObject *m)
{
    if (!(str_dlpack = PyUnicode_InternFromString("__dlpack__")) ||
        !(str_dlpack_device = PyUnicode_InternFromString("__dlpack_device__")) ||
        !(kw_versioned = Py_BuildValue("(s)", "max_version")) ||
        !(kw_versioned_copy = Py_BuildValue("(ss)", "max_version", "copy")))
        return -1;
    return PyModule_AddFunctions(m, dlpack_functions);
}
