/* tensor_wrap.c -- numdyn.wrap_numpy(fn): NumPy code on tensors.
 *
 * The wrapper's arguments that are tensors -- numdyn.Tensor, or any DLPack
 * producer (torch, JAX, CuPy arrays) -- enter fn as ndarrays sharing their
 * memory (DLPack, no copy); fn runs compiled, as numdyn.compile compiles
 * it. What fn returns goes back as the kind of tensor that came in (the
 * first tensor argument's kind; torch in -> torch out, numdyn in -> numdyn
 * out), on the same device, again without a copy: ndarrays, and NumPy
 * scalars as 0-d tensors (a sum is a loss: torch and JAX return 0-d tensors
 * there too); Python scalars and other values stay what they are.
 *
 * Gradients: a call with a numdyn.Tensor that requires grad is a node of the
 * tape (tensor_tape.c), whose replay calls the compiled fn. A call with a
 * torch tensor that requires grad (and torch's grad mode on) goes through
 * the torch.autograd.Function bridge registered by the Python layer
 * (numdyn/_torch.py: glue around torch's own Python class machinery), so
 * that loss.backward() in torch runs numdyn's backward.
 */
#include "tensor/tensor_internal.h"
#include "core/containers.h"
#include <stddef.h>
#include <string.h>

static PyObject *compile_fn;     /* numdyn._C.compile */
static PyObject *torch_bridge;   /* numdyn._torch.apply, registered at import; or NULL */
static PyObject *jax_bridge;     /* numdyn._jax.apply, registered at import; or NULL */
static PyObject *consumers;      /* type -> its library's from_dlpack */
static PyObject *str_dlpack, *str_numpy, *str_requires_grad, *str_detach, *str_from_dlpack, *str_module;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fn;          /* the user's function */
    PyObject *compiled;    /* numdyn.compile(fn, ...) */
    PyObject *dict;        /* __dict__ (functools.update_wrapper fills it) */
    PyObject *weakrefs;
    PyObject *vjpcache;    /* (grad cache, recorded backwards) of its vjp calls, or NULL */
} NdWrapped;

static PyObject *wrap_module;    /* numdyn._C (borrowed for the module's life) */
static PyObject *vjp_fn, *grad_cache_fn;  /* _C._vjp, _C._grad_cache: looked up at first use */

/* What numdyn knows of a tensor type (consumers: type -> tuple):
 * (from_dlpack of its library, from_numpy or None, has .numpy()). The
 * DLPack exchange is the general path. torch's __dlpack__ and from_dlpack
 * are Python functions that cost microseconds a call (6 us an argument,
 * measured, against 0.5 us for .numpy()), so for torch the zero-copy C
 * entry points Tensor.numpy() and torch.from_numpy() go first; where they
 * refuse (a CUDA tensor, a read-only or negatively strided array) the
 * DLPack path runs and gives its answer or its error. */
static PyObject *kind_of(PyTypeObject *tp)
{
    PyObject *c = PyDict_GetItemWithError(consumers, (PyObject *)tp);
    if (c || PyErr_Occurred()) return c;
    PyObject *modname = PyObject_GetAttr((PyObject *)tp, str_module);
    if (!modname) return NULL;
    const char *s = PyUnicode_Check(modname) ? PyUnicode_AsUTF8(modname) : NULL;
    if (!s) {
        Py_DECREF(modname);
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "numdyn.wrap_numpy: %.100s names no module", tp->tp_name);
        return NULL;
    }
    char top[128];
    size_t n = strcspn(s, ".");
    if (n >= sizeof top) n = sizeof top - 1;
    memcpy(top, s, n);
    top[n] = 0;
    Py_DECREF(modname);
    /* JAX arrays are jaxlib's types; their consumer is jax.numpy's */
    const char *lib = !strcmp(top, "jaxlib") || !strcmp(top, "jax") ? "jax.numpy" : top;
    PyObject *mod = PyImport_ImportModule(lib);
    if (!mod) return NULL;
    PyObject *from_dl = PyObject_GetAttr(mod, str_from_dlpack);
    if (!from_dl) {
        Py_DECREF(mod);
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "numdyn.wrap_numpy: cannot return %.100s results: module "
                     "%s has no from_dlpack", tp->tp_name, lib);
        return NULL;
    }
    int torch = !strcmp(top, "torch");
    PyObject *from_np = torch ? PyObject_GetAttrString(mod, "from_numpy") : Py_NewRef(Py_None);
    Py_DECREF(mod);
    if (!from_np) { Py_DECREF(from_dl); return NULL; }
    c = Py_BuildValue("(NNO)", from_dl, from_np, torch ? Py_True : Py_False);
    if (!c) return NULL;
    int rc = PyDict_SetItem(consumers, (PyObject *)tp, c);
    Py_DECREF(c);
    return rc < 0 ? NULL : c;
}

/* x (a foreign tensor) as an ndarray sharing its memory */
static PyObject *import_array(PyObject *x)
{
    PyObject *k = kind_of(Py_TYPE(x));
    if (!k) return NULL;
    if (PyTuple_GET_ITEM(k, 2) == Py_True) {
        PyObject *a = PyObject_CallMethodNoArgs(x, str_numpy);
        if (a && PyArray_CheckExact(a)) return a;
        Py_XDECREF(a);
        PyErr_Clear();  /* the DLPack path answers */
    }
    return nd_dlpack_to_array(x, -1);
}

/* an ndarray as a tensor of kind tp, sharing memory */
static PyObject *export_array(PyObject *arr, PyTypeObject *tp)
{
    PyObject *k = kind_of(tp);
    if (!k) return NULL;
    PyObject *from_np = PyTuple_GET_ITEM(k, 1);
    if (from_np != Py_None && PyArray_ISWRITEABLE((PyArrayObject *)arr)) {
        PyObject *r = PyObject_CallOneArg(from_np, arr);
        if (r) return r;
        PyErr_Clear();
    }
    PyObject *carrier = nd_tensor_from_array(arr);  /* exports through our __dlpack__ */
    if (!carrier) return NULL;
    PyObject *r = PyObject_CallOneArg(PyTuple_GET_ITEM(k, 0), carrier);
    Py_DECREF(carrier);
    if (!r && !PyArray_ISWRITEABLE((PyArrayObject *)arr) &&
        PyErr_ExceptionMatches(PyExc_BufferError)) {
        /* a consumer of legacy capsules only (JAX), which cannot carry
         * read-only memory (an argument JAX gave, a broadcast view): a copy */
        PyErr_Clear();
        PyObject *c = PyArray_NewCopy((PyArrayObject *)arr, NPY_KEEPORDER);
        carrier = c ? nd_tensor_from_array(c) : NULL;
        Py_XDECREF(c);
        if (!carrier) return NULL;
        r = PyObject_CallOneArg(PyTuple_GET_ITEM(k, 0), carrier);
        Py_DECREF(carrier);
    }
    return r;
}

static int is_jax_tracer(PyObject *x);
static PyObject *enter_container(PyObject *x, PyTypeObject **kind, int *grad, int *foreign_grad);

/* what a tensor argument is inside fn: an ndarray (new ref), or the
 * argument itself when it is not a tensor; lists, tuples and dicts of
 * them: enter_container. *kind: the first tensor's type (borrowed);
 * *grad: a numdyn Tensor requires grad; *torch_grad: a foreign tensor
 * requires grad */
static PyObject *enter(PyObject *x, PyTypeObject **kind, int *grad, int *foreign_grad)
{
    if (nd_tensor_check(x)) {
        if (!*kind) *kind = &NdTensor_Type;
        *grad |= ND_TENSOR(x)->requires_grad;
        return Py_NewRef(ND_TENSOR(x)->array);
    }
    if (PyTuple_CheckExact(x) || PyList_CheckExact(x) || PyDict_CheckExact(x))
        return enter_container(x, kind, grad, foreign_grad);
    if (PyArray_Check(x) || PyLong_Check(x) || PyFloat_Check(x) || PyBool_Check(x) ||
        PyComplex_Check(x) || x == Py_None || PyUnicode_Check(x) || PyTuple_Check(x) ||
        PyList_Check(x) || PyDict_Check(x) || PyArray_IsScalar(x, Generic))
        return Py_NewRef(x);
    PyObject *dl = PyObject_GetAttr((PyObject *)Py_TYPE(x), str_dlpack);
    if (!dl) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
        PyErr_Clear();
        return Py_NewRef(x);
    }
    Py_DECREF(dl);
    if (!*kind) *kind = Py_TYPE(x);
    PyObject *rg = PyObject_GetAttr(x, str_requires_grad);  /* torch's flag */
    if (!rg) PyErr_Clear();
    int needs = rg ? PyObject_IsTrue(rg) : 0;
    Py_XDECREF(rg);
    if (needs < 0) return NULL;
    if (needs) {  /* torch refuses to export it: the bridge handles it */
        *foreign_grad = 1;
        PyObject *d = PyObject_CallMethodNoArgs(x, str_detach);
        if (!d) return NULL;
        PyObject *a = import_array(d);
        Py_DECREF(d);
        return a;
    }
    return import_array(x);
}

typedef struct {
    PyTypeObject **kind;
    int *grad, *foreign_grad;
} enter_ctx;

/* One element of a list/tuple/dict argument as fn sees it (new ref):
 * tensors as ndarrays, as torch's wrap_numpy maps its arguments' pytree
 * (*grad / *foreign_grad: a numdyn / foreign tensor in it requires grad:
 * its gradient is the container's, vjp_call and numdyn/_torch.py).
 * Left as they are: a numdyn Tensor on CUDA, a JAX tracer. */
static PyObject *enter_item(PyObject *v, int depth, void *ctx)
{
    enter_ctx *c = ctx;
    if (PyTuple_CheckExact(v) || PyList_CheckExact(v) || PyDict_CheckExact(v)) return ND_NOT_LEAF;
    if (nd_tensor_check(v) && nd_tensor_is_cuda(v)) return Py_NewRef(v);
    if (is_jax_tracer(v)) return Py_NewRef(v);
    return enter(v, c->kind, c->grad, c->foreign_grad);
}

/* a list, tuple or dict argument: a new one of the same type holding its
 * tensors as ndarrays (and so for the containers inside it), or x itself
 * when it holds none (the function may change it for the caller) */
static PyObject *enter_container(PyObject *x, PyTypeObject **kind, int *grad, int *foreign_grad)
{
    enter_ctx c = {kind, grad, foreign_grad};
    return nd_map_leaves(x, enter_item, &c, 16, 0);
}

/* a result of fn as the kind of tensor that came in (steals r): ndarrays
 * and NumPy scalars in it, inside lists, tuples and dicts too */
static PyObject *leave(PyObject *r, PyTypeObject *kind, int depth)
{
    if (!r || !kind) return r;
    if (PyDict_CheckExact(r) && depth < 16) {
        PyObject *out = PyDict_New(), *k, *v;
        Py_ssize_t pos = 0;
        while (out && PyDict_Next(r, &pos, &k, &v)) {
            PyObject *e = leave(Py_NewRef(v), kind, depth + 1);
            if (!e || PyDict_SetItem(out, k, e) < 0) Py_CLEAR(out);
            Py_XDECREF(e);
        }
        Py_DECREF(r);
        return out;
    }
    if (kind == &NdTensor_Type && !PyTuple_CheckExact(r) && !PyList_CheckExact(r))
        return nd_tensor_wrap_result(r);
    if (PyArray_IsScalar(r, Generic)) Py_SETREF(r, PyArray_FromScalar(r, NULL));
    if (r && PyArray_CheckExact(r)) {
        PyObject *out = export_array(r, kind);
        Py_DECREF(r);
        return out;
    }
    if ((PyTuple_CheckExact(r) || PyList_CheckExact(r)) && depth < 16) {
        int tup = PyTuple_CheckExact(r);
        Py_ssize_t n = PySequence_Fast_GET_SIZE(r);
        PyObject *out = tup ? PyTuple_New(n) : PyList_New(n);
        for (Py_ssize_t i = 0; out && i < n; i++) {
            PyObject *v = leave(Py_NewRef(PySequence_Fast_GET_ITEM(r, i)), kind, depth + 1);
            if (!v) { Py_CLEAR(out); break; }
            if (tup) PyTuple_SET_ITEM(out, i, v);
            else PyList_SET_ITEM(out, i, v);
        }
        Py_DECREF(r);
        return out;
    }
    return r;
}

/* A JAX tracer (an abstract value inside jax.grad / jit / vmap): its
 * type's MRO holds jax's core Tracer. Its __dlpack__ exists but cannot
 * export: the call goes to the JAX bridge (numdyn/_jax.py) instead. */
static int is_jax_tracer(PyObject *x)
{
    if (PyArray_Check(x) || nd_tensor_check(x) || PyFloat_Check(x) || PyLong_Check(x)) return 0;
    PyObject *mro = Py_TYPE(x)->tp_mro;
    for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *b = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (strcmp(b->tp_name, "Tracer") != 0 || !(b->tp_flags & Py_TPFLAGS_HEAPTYPE)) continue;
        PyObject *m = PyDict_GetItemString(b->tp_dict, "__module__");
        if (m && PyUnicode_Check(m) && PyUnicode_CompareWithASCIIString(m, "jax._src.core") == 0)
            return 1;
    }
    return 0;
}

/* The Tensors a vjp call returns own their arrays: an output the pullback
 * also holds (a saved value, the cold call's graph) is copied, so that a
 * later in-place write into the Tensor is allowed (the tape versions it)
 * and never changes what the pullback computes from. */
static int own_one(PyObject *t)
{
    if (!nd_tensor_check(t) || Py_REFCNT(ND_TENSOR(t)->array) <= 1) return 0;
    PyObject *c = PyArray_NewCopy((PyArrayObject *)ND_TENSOR(t)->array, NPY_KEEPORDER);
    if (!c) return -1;
    Py_SETREF(ND_TENSOR(t)->array, c);
    return 0;
}

static int own_results(PyObject *r)
{
    PyObject *leaves = nd_tree_leaves(r, 16);
    if (!leaves) return -1;
    int rc = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(leaves) && rc == 0; i++)
        rc = own_one(PyList_GET_ITEM(leaves, i));
    Py_DECREF(leaves);
    return rc;
}

/* A call with numdyn Tensors that require grad: the forward runs as
 * numdyn's vjp (recorded per argument signature, so warm calls replay
 * it), which keeps what its backward needs (the min-cut partition), and
 * the tape node keeps the pullback: backward() then runs only the
 * backward graph, not fn again. *used = 0 (and NULL returned, nothing
 * done) where that does not apply: a Tensor that requires grad passed by
 * keyword, a custom backend; the call is then recorded as a node
 * backward() replays. An argument that is a list, tuple or dict holding
 * such Tensors is differentiated as a whole (the gradient has its
 * structure; the tape gives each Tensor its leaf); results may nest. */
static PyObject *vjp_call(NdWrapped *w, PyObject *const *args, PyObject **a, Py_ssize_t nargs,
                          PyObject *kwnames, int *used)
{
    *used = 0;
    Py_ssize_t n = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    for (Py_ssize_t i = nargs; i < n; i++)
        if (nd_tensor_any_grad(args[i], 0)) return NULL;
    PyObject *backend = PyObject_GetAttrString(w->compiled, "backend");
    if (!backend) { PyErr_Clear(); return NULL; }
    int builtin = PyUnicode_Check(backend) &&
                  (!PyUnicode_CompareWithASCIIString(backend, "native") ||
                   !PyUnicode_CompareWithASCIIString(backend, "eager") ||
                   !PyUnicode_CompareWithASCIIString(backend, "aot_eager"));
    if (!builtin) { Py_DECREF(backend); return NULL; }
    if (!vjp_fn && !(vjp_fn = PyObject_GetAttrString(wrap_module, "_vjp"))) { PyErr_Clear(); Py_DECREF(backend); return NULL; }
    if (!grad_cache_fn && !(grad_cache_fn = PyObject_GetAttrString(wrap_module, "_grad_cache"))) {
        PyErr_Clear();
        Py_DECREF(backend);
        return NULL;
    }
    PyObject *pos = PyList_New(0), *targs = NULL, *kw = NULL, *res3 = NULL, *r = NULL,
             *positions = NULL, *tkw = NULL;
    if (!pos) goto done;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        if (!nd_tensor_any_grad(args[i], 0)) continue;
        PyObject *num = PyLong_FromSsize_t(i);
        if (!num || PyList_Append(pos, num) < 0) { Py_XDECREF(num); goto done; }
        Py_DECREF(num);
    }
    if (!PyList_GET_SIZE(pos)) { Py_CLEAR(pos); goto done; }
    if (!(positions = PyList_AsTuple(pos))) goto done;
    if (!w->vjpcache) {
        PyObject *cap = PyObject_CallNoArgs(grad_cache_fn), *lst = PyList_New(0);
        w->vjpcache = cap && lst ? PyTuple_Pack(2, cap, lst) : NULL;
        Py_XDECREF(cap);
        Py_XDECREF(lst);
        if (!w->vjpcache) goto done;
    }
    if (!(targs = PyTuple_New(nargs))) goto done;
    for (Py_ssize_t i = 0; i < nargs; i++) PyTuple_SET_ITEM(targs, i, Py_NewRef(a[i]));
    if (n > nargs) {
        if (!(kw = PyDict_New()) || !(tkw = PyDict_New())) goto done;
        for (Py_ssize_t i = nargs; i < n; i++)
            if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i - nargs), a[i]) < 0 ||
                PyDict_SetItem(tkw, PyTuple_GET_ITEM(kwnames, i - nargs), args[i]) < 0)
                goto done;
    }
    res3 = PyObject_CallFunction(vjp_fn, "OOOOOOOO", w->compiled, targs, positions,
                                 kw ? kw : Py_None, backend, Py_False, Py_False, w->vjpcache);
    if (!res3) {
        /* something the vjp cannot differentiate (float() of a value, an op
         * without a rule): the call runs as a node backward() replays, and
         * backward() raises only if its gradient is needed */
        if (PyErr_ExceptionMatches(PyExc_NotImplementedError)) PyErr_Clear();
        else *used = 1;
        goto done;
    }
    if (!PyTuple_Check(res3) || PyTuple_GET_SIZE(res3) != 3) {
        PyErr_SetString(PyExc_SystemError, "numdyn: _vjp returned something other than "
                        "(out, aux, vjp)");
        *used = 1;
        goto done;
    }
    PyObject *out = PyTuple_GET_ITEM(res3, 0);
    *used = 1;
    r = leave(Py_NewRef(out), &NdTensor_Type, 0);
    if (r) {
        /* the Tensors themselves as the node's arguments (versions noted) */
        PyObject *nargs_t = PyTuple_New(nargs);
        for (Py_ssize_t i = 0; nargs_t && i < nargs; i++)
            PyTuple_SET_ITEM(nargs_t, i, Py_NewRef(args[i]));
        if (!nargs_t || nd_tape_record_vjp(w->compiled, nargs_t, tkw, r,
                                           PyTuple_GET_ITEM(res3, 2), positions, out) < 0)
            Py_CLEAR(r);
        Py_XDECREF(nargs_t);
    }
done:
    Py_DECREF(backend);
    Py_XDECREF(pos);
    Py_XDECREF(positions);
    Py_XDECREF(targs);
    Py_XDECREF(kw);
    Py_XDECREF(tkw);
    Py_XDECREF(res3);
    if (r && own_results(r) < 0) Py_CLEAR(r);
    nd_tensor_note_views(r, args, nargs);  /* those still sharing an argument's memory */
    return r;
}

/* x says it is in CUDA memory (DLPack's kDLCUDA) */
static int cuda_producer(PyObject *x)
{
    PyObject *dev = PyObject_CallMethod(x, "__dlpack_device__", NULL);
    if (!dev) { PyErr_Clear(); return 0; }
    int r = PyTuple_Check(dev) && PyTuple_GET_SIZE(dev) == 2 &&
            PyLong_Check(PyTuple_GET_ITEM(dev, 0)) && PyLong_AsLong(PyTuple_GET_ITEM(dev, 0)) == 2;
    if (PyErr_Occurred()) PyErr_Clear();
    Py_DECREF(dev);
    return r;
}

/* the call with CUDA tensors among the arguments: tensor_cuda.c's engine */
static PyObject *cuda_call(NdWrapped *w, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames)
{
    PyObject *targs, *tkw, *r = NULL;
    if (nd_vectorcall_unpack(args, nargs, kwnames, 0, &targs, &tkw) < 0) return NULL;
    r = nd_tensor_cuda_wrap_call(w->fn, w->compiled, targs, tkw);
    Py_DECREF(targs);
    Py_XDECREF(tkw);
    return r;
}

/* the call run by a bridge (JAX's, torch's) that records it: bridge(compiled, args, kwargs) */
static PyObject *bridge_call(PyObject *bridge, NdWrapped *w, PyObject *const *args,
                             Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *targs, *tkw;
    if (nd_vectorcall_unpack(args, nargs, kwnames, 1, &targs, &tkw) < 0) return NULL;
    PyObject *r = PyObject_CallFunctionObjArgs(bridge, w->compiled, targs, tkw, NULL);
    Py_DECREF(targs);
    Py_DECREF(tkw);
    return r;
}

static PyObject *wrapped_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames)
{
    NdWrapped *w = (NdWrapped *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t n = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[8] = {NULL}, **a = n <= 8 ? small : PyMem_Malloc(sizeof(PyObject *) * (size_t)(n ? n : 1));
    if (!a) return PyErr_NoMemory();
    PyTypeObject *kind = NULL;
    int grad = 0, foreign_grad = 0, jax = 0;
    Py_ssize_t k = 0;
    PyObject *r = NULL;
    /* also inside list/tuple/dict arguments (numdyn/_jax.py takes their leaves) */
    for (Py_ssize_t i = 0; jax_bridge && i < n && !jax; i++) jax = nd_tree_any(args[i], is_jax_tracer, 16);
    if (jax) {  /* a JAX transformation records the call: the bridge runs it */
        r = bridge_call(jax_bridge, w, args, nargs, kwnames);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (nd_tensor_is_cuda(args[i])) {   /* numdyn.Tensor on CUDA: tensor_cuda.c */
            r = cuda_call(w, args, nargs, kwnames);
            goto done;
        }
    for (; k < n; k++)
        if (!(a[k] = enter(args[k], &kind, &grad, &foreign_grad))) {
            /* a CUDA array of another library (torch, CuPy): not host memory.
             * The BufferError is held while the producer is asked for its
             * device: torch's __dlpack_device__ is Python code, which must
             * not run with an exception pending (it returned NULL and the
             * exception was lost: SystemError on the GPU). */
            if (PyErr_ExceptionMatches(PyExc_BufferError)) {
                PyObject *et, *ev, *etb;
                PyErr_Fetch(&et, &ev, &etb);
                if (cuda_producer(args[k])) {
                    Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(etb);
                    r = cuda_call(w, args, nargs, kwnames);
                } else {
                    PyErr_Restore(et, ev, etb);
                }
            }
            goto done;
        }
    if (foreign_grad && torch_bridge) {
        /* torch's autograd records the call: the bridge runs numdyn's vjp */
        r = bridge_call(torch_bridge, w, args, nargs, kwnames);
        goto done;
    }
    if (grad && kind == &NdTensor_Type && nd_tape_grad_enabled()) {
        int used = 0;
        r = vjp_call(w, args, a, nargs, kwnames, &used);
        if (used || PyErr_Occurred()) goto done;
    }
    r = PyObject_Vectorcall(w->compiled, a, nargs, kwnames);
    r = leave(r, kind, 0);
    if (kind == &NdTensor_Type) nd_tensor_note_views(r, args, nargs);
    if (r && grad) {
        PyObject *targs, *tkw;
        if (nd_vectorcall_unpack(args, nargs, kwnames, 0, &targs, &tkw) < 0 ||
            nd_tape_record(ND_OP_CALL, w->compiled, targs, tkw, r) < 0)
            Py_CLEAR(r);
        Py_XDECREF(targs);
        Py_XDECREF(tkw);
    }
done:
    for (Py_ssize_t i = 0; i < k; i++) Py_DECREF(a[i]);
    if (a != small) PyMem_Free(a);
    return r;
}

static int wrapped_traverse(PyObject *o, visitproc visit, void *arg)
{
    NdWrapped *w = (NdWrapped *)o;
    Py_VISIT(w->fn);
    Py_VISIT(w->compiled);
    Py_VISIT(w->dict);
    Py_VISIT(w->vjpcache);
    return 0;
}

static int wrapped_clear(PyObject *o)
{
    NdWrapped *w = (NdWrapped *)o;
    Py_CLEAR(w->fn);
    Py_CLEAR(w->compiled);
    Py_CLEAR(w->dict);
    Py_CLEAR(w->vjpcache);
    return 0;
}

static void wrapped_dealloc(PyObject *o)
{
    PyObject_GC_UnTrack(o);
    if (((NdWrapped *)o)->weakrefs) PyObject_ClearWeakRefs(o);
    wrapped_clear(o);
    PyObject_GC_Del(o);
}

static PyObject *wrapped_repr(PyObject *o)
{
    return PyUnicode_FromFormat("<numdyn.wrap_numpy of %R>", ((NdWrapped *)o)->fn);
}

static PyObject *wrapped_get_fn(PyObject *o, void *c) { return Py_NewRef(((NdWrapped *)o)->fn); }
static PyObject *wrapped_get_compiled(PyObject *o, void *c)
{
    return Py_NewRef(((NdWrapped *)o)->compiled);
}

static PyObject *wrapped_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (!obj || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyGetSetDef wrapped_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"__wrapped__", wrapped_get_fn, NULL, "the NumPy function", NULL},
    {"compiled", wrapped_get_compiled, NULL, "numdyn.compile of the function", NULL},
    {NULL},
};

static PyTypeObject NdWrapped_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn.WrappedNumpy",
    .tp_basicsize = sizeof(NdWrapped),
    .tp_dealloc = wrapped_dealloc,
    .tp_vectorcall_offset = offsetof(NdWrapped, vectorcall),
    .tp_repr = wrapped_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_traverse = wrapped_traverse,
    .tp_clear = wrapped_clear,
    .tp_weaklistoffset = offsetof(NdWrapped, weakrefs),
    .tp_getset = wrapped_getset,
    .tp_descr_get = wrapped_descr_get,
    .tp_dictoffset = offsetof(NdWrapped, dict),
};

/* _wrap_numpy(fn, compile_kwargs): the wrapper (the Python layer adds
 * functools.wraps and the decorator forms) */
static PyObject *mod_wrap_numpy(PyObject *m, PyObject *args)
{
    PyObject *fn, *ckw;
    if (!PyArg_ParseTuple(args, "OO!:_wrap_numpy", &fn, &PyDict_Type, &ckw)) return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "numdyn.wrap_numpy: expected a callable, got %.100s",
                     Py_TYPE(fn)->tp_name);
        return NULL;
    }
    PyObject *cargs = PyTuple_Pack(1, fn);
    PyObject *compiled = cargs ? PyObject_Call(compile_fn, cargs, ckw) : NULL;
    Py_XDECREF(cargs);
    if (!compiled) return NULL;
    NdWrapped *w = PyObject_GC_New(NdWrapped, &NdWrapped_Type);
    if (!w) { Py_DECREF(compiled); return NULL; }
    w->vectorcall = wrapped_vectorcall;
    w->fn = Py_NewRef(fn);
    w->compiled = compiled;
    w->dict = NULL;
    w->weakrefs = NULL;
    w->vjpcache = NULL;
    PyObject_GC_Track(w);
    return (PyObject *)w;
}

static PyObject *mod_set_jax_bridge(PyObject *m, PyObject *fn)
{
    Py_XSETREF(jax_bridge, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

static PyObject *mod_set_torch_bridge(PyObject *m, PyObject *fn)
{
    Py_XSETREF(torch_bridge, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

/* _wrap_enter(x) -> (ndarray, kind): for the torch bridge, the same
 * conversion wrap_numpy's calls make */
static PyObject *mod_to_array(PyObject *m, PyObject *x)
{
    PyTypeObject *kind = NULL;
    int g = 0, fg = 0;
    return enter(x, &kind, &g, &fg);
}

/* _wrap_leave(r, like): r's ndarrays as tensors of like's kind */
static PyObject *mod_from_array(PyObject *m, PyObject *args)
{
    PyObject *r, *like;
    if (!PyArg_ParseTuple(args, "OO:_wrap_leave", &r, &like)) return NULL;
    return leave(Py_NewRef(r), Py_TYPE(like), 0);
}

/* _tree_leaves(obj) / _tree_unflatten(obj, leaves): the torch bridge's
 * view of an argument or result as its leaves (core/containers.h) */
static PyObject *mod_tree_leaves(PyObject *m, PyObject *o) { return nd_tree_leaves(o, 16); }

static PyObject *mod_tree_unflatten(PyObject *m, PyObject *args)
{
    PyObject *o, *leaves;
    if (!PyArg_ParseTuple(args, "OO:_tree_unflatten", &o, &leaves)) return NULL;
    return nd_tree_unflatten(o, leaves, 16);
}

static PyMethodDef wrap_functions[] = {
    {"_tree_leaves", mod_tree_leaves, METH_O,
     "The leaves of a value in its tuples, lists and dicts, in order (a list)."},
    {"_tree_unflatten", mod_tree_unflatten, METH_VARARGS,
     "_tree_unflatten(obj, leaves): obj's structure holding the given leaves."},
    {"_wrap_numpy", mod_wrap_numpy, METH_VARARGS, "_wrap_numpy(fn, compile_kwargs)"},
    {"_set_torch_bridge", mod_set_torch_bridge, METH_O, NULL},
    {"_set_jax_bridge", mod_set_jax_bridge, METH_O, NULL},
    {"_wrap_enter", mod_to_array, METH_O,
     "A tensor argument as wrap_numpy hands it to the function: an ndarray sharing memory."},
    {"_wrap_leave", mod_from_array, METH_VARARGS,
     "_wrap_leave(result, like): ndarrays in result as tensors of like's kind."},
    {NULL},
};

int nd_wrap_init(PyObject *m)
{
    if (PyType_Ready(&NdWrapped_Type) < 0) return -1;
    if (!(compile_fn = PyObject_GetAttrString(m, "compile"))) return -1;
    wrap_module = m;
    if (!(consumers = PyDict_New())) return -1;
    if (!(str_dlpack = PyUnicode_InternFromString("__dlpack__")) ||
        !(str_requires_grad = PyUnicode_InternFromString("requires_grad")) ||
        !(str_numpy = PyUnicode_InternFromString("numpy")) ||
        !(str_detach = PyUnicode_InternFromString("detach")) ||
        !(str_from_dlpack = PyUnicode_InternFromString("from_dlpack")) ||
        !(str_module = PyUnicode_InternFromString("__module__")))
        return -1;
    return PyModule_AddFunctions(m, wrap_functions);
}
