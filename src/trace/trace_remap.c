/* trace_remap.c -- the shim as the compiled function's `np`.
 *
 * The compiled copy of a function is the same bytecode with some co_names
 * entries renamed (code.replace(co_names=...)), in this function and in
 * every code object nested in its constants (inner functions, lambdas,
 * comprehensions). A global name is renamed when the function's globals
 * bind it to
 *   - the numpy module (any alias: np, numpy, N...)  -> the shim module,
 *   - a NumPy function the shim replaces (`from numpy import zeros`)
 *                                                     -> the shim function,
 *   - a function marked with a numdyn policy (disallow_in_graph...)
 *                                                     -> its wrapper,
 *   - the builtin `type` (not shadowed by a global)    -> a `type` that
 *     answers numpy.ndarray for a lazy array and the NumPy scalar type
 *     for a lazy scalar, as the function would see under NumPy;
 *     `min`/`max`                                     -> the builtin, but of
 *     lazy NumPy scalars a lazy scalar (the shim's builtin_minmax).
 *   - a NumPy submodule (`import numpy._core.numeric as NX`, `from numpy
 *     import linalg as la`)                           -> a view of it whose
 *     attributes that are NumPy functions the shim replaces resolve to the
 *     shim's (NumPy's own Python code calls NX.asarray, _nx.zeros_like:
 *     np.polyval inlined, shim_inline.c), every other attribute to the
 *     module's own,
 *   - a user class or module, only ever named to read an attribute
 *     (`MyArr.helper(x)`, `mymod.step(x)`)           -> a view of it whose
 *     Python functions (static, class or plain) resolve to helper wrappers
 *     (below),
 *   - a Python function of the user's, only ever called by that name
 *     (every LOAD_GLOBAL of it pushes the call's NULL)
 *                                                     -> a wrapper that calls
 *     the helper's own remapped copy (nd_trace_remap_callee), so a helper
 *     sees the shim as its `np` whatever calls it: `z = np.zeros(n);
 *     z += a` there makes a lazy array, not a NumPy one that takes the
 *     value out of the graph (a lambda, or loop capture off, has no AST
 *     rewrite to do this for it: loop_rewrite.c's __numdyn_callee__).
 * Attribute names are renamed too where the shim holds a call-only entry
 * (ND_SHIM_CALL_PREFIX, trace.h) and every instruction naming one is a
 * method load off the shim module: `np.ndarray(n)` calls the shim's
 * constructor (a lazy np.empty) while `np.ndarray` read any other way --
 * isinstance(x, np.ndarray), x.view(np.ndarray) -- is NumPy's own type.
 * The new name is "__numdyn_<name>__", injected into the function's own
 * globals dict (the module's namespace: a function needs a real dict, and
 * sharing it keeps `global` statements and later definitions visible).
 *
 * co_names also serves attribute loads, imports and global stores, so a
 * name is renamed only when every instruction naming it is LOAD_GLOBAL
 * (checked with dis.get_instructions); otherwise that name keeps working
 * through the proxies' protocols, just without the shim's shortcut.
 *
 * The copy is valid while fn.__code__, __defaults__, __kwdefaults__ and
 * every renamed global are the objects seen when it was built; a rebinding
 * rebuilds it on the next call.
 */
#include "trace_internal.h"
#include "trace/loop.h"
#include <string.h>

static PyObject *numpy_mod, *get_instructions, *type_shim, *builtin_mark;

/* a file of Python's standard library or of an installed package (the
 * sysconfig paths stdlib, platstdlib, purelib, platlib): not the user's */
static int library_file(PyObject *filename)
{
    static PyObject *prefixes;  /* tuple of str */
    if (!prefixes) {
        PyObject *sc = PyImport_ImportModule("sysconfig");
        PyObject *paths = sc ? PyObject_CallMethod(sc, "get_paths", NULL) : NULL;
        Py_XDECREF(sc);
        PyObject *l = paths ? PyList_New(0) : NULL;
        static const char *const keys[] = {"stdlib", "platstdlib", "purelib", "platlib"};
        for (int k = 0; l && k < 4; k++) {
            PyObject *v = PyDict_Check(paths) ? PyDict_GetItemString(paths, keys[k]) : NULL;
            if (v && PyUnicode_Check(v) && PyList_Append(l, v) < 0) Py_CLEAR(l);
        }
        Py_XDECREF(paths);
        prefixes = l ? PyList_AsTuple(l) : NULL;
        Py_XDECREF(l);
        if (!prefixes) { PyErr_Clear(); prefixes = PyTuple_New(0); }
        if (!prefixes) { PyErr_Clear(); return 0; }
    }
    if (!filename || !PyUnicode_Check(filename)) return 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(prefixes); k++) {
        Py_ssize_t m = PyUnicode_Tailmatch(filename, PyTuple_GET_ITEM(prefixes, k), 0, PY_SSIZE_T_MAX, -1);
        if (m < 0) { PyErr_Clear(); return 0; }
        if (m) return 1;
    }
    return 0;
}

static int user_function_uncached(PyCodeObject *co, PyObject *g)
{
    if (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE))
        return 0;
    if (library_file(co->co_filename)) return 0;
    PyObject *mod = g && PyDict_Check(g) ? PyDict_GetItemString(g, "__name__") : NULL;
    const char *m = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : NULL;
    if (!m) { PyErr_Clear(); return 1; }
    return !(strncmp(m, "numpy", 5) == 0 && (m[5] == 0 || m[5] == '.')) &&
           !(strncmp(m, "numdyn", 6) == 0 && (m[6] == 0 || m[6] == '.'));
}

/* Asked at every call of a helper from rewritten code (loop_rewrite.c's
 * __numdyn_callee__): the file-path tests and the module-name lookup cost
 * ~0.4 us a call, so the answer is kept per (code, globals), which depend
 * on nothing else. The memo holds references to both, so an address it
 * keeps is never another object's. */
int nd__user_function(PyObject *f)
{
    if (!PyFunction_Check(f)) return 0;
    PyObject *code = PyFunction_GET_CODE(f), *g = PyFunction_GET_GLOBALS(f);
    static struct { PyObject *code, *globals; int r; } memo[16];
    size_t k = ((uintptr_t)code >> 4) % 16;
    if (memo[k].code == code && memo[k].globals == g) return memo[k].r;
    int r = user_function_uncached((PyCodeObject *)code, g);
    Py_XSETREF(memo[k].code, Py_NewRef(code));
    Py_XSETREF(memo[k].globals, Py_XNewRef(g));
    memo[k].r = r;
    return r;
}

/* ---- a helper the function calls by a global name: the call runs the
 * helper's remapped copy (checked at each call, nd_trace_remap_callee) */
static PyObject *helper_call(PyObject *f, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *r = nd_trace_remap_callee(f);
    if (!r) {
        /* the helper runs as written: a remap that failed is not the
         * caller's error */
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return NULL;
        PyErr_Clear();
        r = Py_NewRef(f);
    }
    PyObject *res = PyObject_Vectorcall(r, args, nargsf, kwnames);
    Py_DECREF(r);
    return res;
}

static PyMethodDef helper_def = {
    "helper", (PyCFunction)(void (*)(void))helper_call, METH_FASTCALL | METH_KEYWORDS,
    "numdyn: calls the helper function with numdyn's NumPy as its np"};

PyObject *nd__helper_target(PyObject *v)
{
    if (!PyCFunction_Check(v) || ((PyCFunctionObject *)v)->m_ml != &helper_def) return NULL;
    return PyCFunction_GET_SELF(v);
}

/* ---- namespaces seen through numdyn: a NumPy submodule (its functions
 * the shim replaces resolve to the shim's), and a user class or module
 * named only for its attributes (`MyArr.helper(x)`, `mymod.step(x)`: its
 * Python functions resolve to their helper wrappers, so they see numdyn's
 * `np` and `type` as a function called by its own name does) */
typedef struct {
    PyObject_HEAD
    PyObject *ns;
    int user;
} NsView;

static PyObject *helper_wrapper(PyObject *f);

static PyObject *nsview_getattro(PyObject *self, PyObject *name)
{
    NsView *v = (NsView *)self;
    PyObject *a = PyObject_GetAttr(v->ns, name);
    if (!a) return NULL;
    if (v->user) {
        PyObject *f = PyMethod_Check(a) ? PyMethod_GET_FUNCTION(a) : a;  /* a classmethod */
        if (!nd__user_function(f)) return a;
        PyObject *w = helper_wrapper(f);
        PyObject *r = !w ? NULL : f == a ? Py_NewRef(w) : PyMethod_New(w, PyMethod_GET_SELF(a));
        Py_DECREF(a);
        return r;
    }
    PyObject *r = nd_np.lookup(a);
    if (!r) {
        if (PyErr_Occurred()) PyErr_Clear();
        return a;
    }
    Py_DECREF(a);
    return Py_NewRef(r);
}

static void nsview_dealloc(PyObject *self)
{
    Py_XDECREF(((NsView *)self)->ns);
    Py_TYPE(self)->tp_free(self);
}

static PyObject *nsview_repr(PyObject *self)
{
    return PyUnicode_FromFormat("<numdyn view of %R>", ((NsView *)self)->ns);
}

static PyTypeObject NsView_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "numdyn._C.NamespaceView",
    .tp_basicsize = sizeof(NsView),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = nsview_dealloc,
    .tp_getattro = nsview_getattro,
    .tp_repr = nsview_repr,
    .tp_doc = "a namespace whose functions resolve to numdyn's (the shim's, or a helper's wrapper)",
};

/* 1 a NumPy submodule, 2 a user class or module (not NumPy's, numdyn's or
 * a builtin's), 0 neither */
static int namespace_kind(PyObject *v)
{
    if (v == numpy_mod) return 0;
    const char *mn = NULL;
    if (PyModule_Check(v)) {
        if (!(mn = PyModule_GetName(v))) { PyErr_Clear(); return 0; }
        if (strncmp(mn, "numpy.", 6) == 0) return 1;
        /* the standard library's and installed packages' modules are not
         * the user's (one with no file: made at run time, or builtin, whose
         * functions are not Python functions) */
        PyObject *f = PyModule_GetFilenameObject(v);
        int lib = f ? library_file(f) : 0;
        if (!f) PyErr_Clear();
        Py_XDECREF(f);
        if (lib) return 0;
    } else if (PyType_Check(v) && PyType_HasFeature((PyTypeObject *)v, Py_TPFLAGS_HEAPTYPE)) {
        PyObject *m = PyObject_GetAttrString(v, "__module__");
        mn = m && PyUnicode_Check(m) ? PyUnicode_AsUTF8(m) : NULL;
        Py_XDECREF(m);  /* the class keeps its __module__ string alive */
        if (!mn) { PyErr_Clear(); return 0; }
    } else {
        return 0;
    }
    if ((strncmp(mn, "numpy", 5) == 0 && (mn[5] == 0 || mn[5] == '.')) ||
        (strncmp(mn, "numdyn", 6) == 0 && (mn[6] == 0 || mn[6] == '.')))
        return 0;
    return 2;
}

/* one view per namespace (new ref) */
static PyObject *namespace_view(PyObject *ns, int user)
{
    static PyObject *views;  /* namespace -> view */
    if (!views && !(views = PyDict_New())) return NULL;
    if (!(NsView_Type.tp_flags & Py_TPFLAGS_READY) && PyType_Ready(&NsView_Type) < 0) return NULL;
    PyObject *w = PyDict_GetItemWithError(views, ns);
    if (w) return Py_NewRef(w);
    if (PyErr_Occurred()) return NULL;
    if (PyDict_GET_SIZE(views) > 4096) PyDict_Clear(views);  /* bounded */
    NsView *nv = PyObject_New(NsView, &NsView_Type);
    if (!nv) return NULL;
    nv->ns = Py_NewRef(ns);
    nv->user = user;
    if (PyDict_SetItem(views, ns, (PyObject *)nv) < 0) { Py_DECREF(nv); return NULL; }
    return (PyObject *)nv;
}

int nd__namespace_view_user(PyObject *v)
{
    return Py_TYPE(v) == &NsView_Type && ((NsView *)v)->user;
}

/* one wrapper per helper: its identity is what replay guards on */
static PyObject *helper_wrapper(PyObject *f)
{
    static PyObject *wrappers;  /* function -> wrapper */
    if (!wrappers && !(wrappers = PyDict_New())) return NULL;
    PyObject *w = PyDict_GetItemWithError(wrappers, f);
    if (w) return w;
    if (PyErr_Occurred()) return NULL;
    if (PyDict_GET_SIZE(wrappers) > 4096) PyDict_Clear(wrappers);  /* bounded */
    w = PyCFunction_New(&helper_def, f);
    if (!w) return NULL;
    int rc = PyDict_SetItem(wrappers, f, w);
    Py_DECREF(w);
    return rc < 0 ? NULL : w;
}

/* type(x) inside compiled code: what NumPy's value would be */
static PyObject *type_impl(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (n == 1 && !kwnames && nd_proxy_check(args[0]))  /* its __class__: the scalar type, */
        return PyObject_GetAttrString(args[0], "__class__");  /* a subclass, a memmap, ndarray */
    return PyObject_Vectorcall((PyObject *)&PyType_Type, args, nargsf, kwnames);
}

static PyMethodDef type_def = {
    "type", (PyCFunction)(void (*)(void))type_impl, METH_FASTCALL | METH_KEYWORDS,
    "type(object) -> the object's type, as under NumPy for numdyn's lazy values; "
    "type(name, bases, dict) as the builtin"};

/* max()/min() inside compiled code: of lazy NumPy scalars a lazy scalar in
 * the graph with the builtin's semantics (the shim's nd_np.builtin_minmax),
 * so `max(b[0], b[1])` is no value read; anything else the builtin itself */
static PyObject *minmax_impl(int is_max, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    static PyObject *builtin[2];
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (!kwnames && nd_np.builtin_minmax) {
        int any = 0;
        for (Py_ssize_t k = 0; k < n && !any; k++)
            any = nd_proxy_check(args[k]) || ((PyList_CheckExact(args[k]) || PyTuple_CheckExact(args[k])) && n == 1);
        if (any) {
            PyObject *r = nd_np.builtin_minmax(is_max, args, n);
            if (r || PyErr_Occurred()) return r;
        }
    }
    if (!builtin[is_max]) {
        PyObject *b = PyEval_GetBuiltins();  /* borrowed */
        PyObject *f = b ? PyDict_GetItemString(b, is_max ? "max" : "min") : NULL;
        if (!f) return PyErr_Format(PyExc_RuntimeError, "numdyn: the builtin %s is missing", is_max ? "max" : "min");
        builtin[is_max] = Py_NewRef(f);
    }
    return PyObject_Vectorcall(builtin[is_max], args, nargsf, kwnames);
}

static PyObject *max_impl(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return minmax_impl(1, args, nargsf, kwnames);
}

static PyObject *min_impl(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return minmax_impl(0, args, nargsf, kwnames);
}

static PyMethodDef minmax_defs[2] = {
    {"min", (PyCFunction)(void (*)(void))min_impl, METH_FASTCALL | METH_KEYWORDS,
     "min(...) -> the builtin's result; of numdyn's lazy NumPy scalars a lazy scalar"},
    {"max", (PyCFunction)(void (*)(void))max_impl, METH_FASTCALL | METH_KEYWORDS,
     "max(...) -> the builtin's result; of numdyn's lazy NumPy scalars a lazy scalar"}};

/* the builtins a compiled function's names are renamed to, unless a global
 * shadows them (guarded: the name must stay unbound in the globals) */
static const char *const builtin_names[] = {"type", "min", "max"};
static PyObject *builtin_shims[3];

static int init(void)
{
    if (get_instructions) return 0;
    if (!type_shim && !(type_shim = PyCFunction_New(&type_def, NULL))) return -1;
    builtin_shims[0] = type_shim;
    for (int k = 0; k < 2; k++)
        if (!builtin_shims[k + 1] && !(builtin_shims[k + 1] = PyCFunction_New(&minmax_defs[k], NULL)))
            return -1;
    if (!builtin_mark && !(builtin_mark = PyUnicode_FromString("<numdyn: a builtin, not a global>")))
        return -1;
    numpy_mod = PyImport_ImportModule("numpy");
    if (!numpy_mod) return -1;
    PyObject *dis = PyImport_ImportModule("dis");
    if (!dis) return -1;
    get_instructions = PyObject_GetAttrString(dis, "get_instructions");
    Py_DECREF(dis);
    return get_instructions ? 0 : -1;
}

/* how a renamed global may be used (entry[3]) */
enum { USE_ANY, USE_CALL, USE_ATTR };

/* mapping: name -> (new_name, replacement, original, use) */
static int collect(PyObject *code, PyObject *globals, PyObject *mapping, PyObject *shim, int depth)
{
    if (depth > 32) return 0;
    PyObject *names = PyObject_GetAttrString(code, "co_names");
    PyObject *consts = names ? PyObject_GetAttrString(code, "co_consts") : NULL;
    int rc = -1;
    if (!consts) goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        int has = PyDict_Contains(mapping, name);
        if (has < 0) goto done;
        if (has) continue;
        PyObject *v = PyDict_GetItemWithError(globals, name);
        if (!v) {
            if (PyErr_Occurred()) goto done;
            /* type(), min(), max(), unless a global shadows them (guarded:
             * the name must stay unbound in the globals) */
            int b = 0;
            while (b < 3 && PyUnicode_CompareWithASCIIString(name, builtin_names[b]) != 0) b++;
            if (b < 3) {
                PyObject *nn = PyUnicode_FromFormat("__numdyn_%U__", name);
                PyObject *use = PyLong_FromLong(USE_ANY);
                PyObject *entry = nn && use ? PyTuple_Pack(4, nn, builtin_shims[b], builtin_mark, use) : NULL;
                Py_XDECREF(use);
                Py_XDECREF(nn);
                if (!entry || PyDict_SetItem(mapping, name, entry) < 0) { Py_XDECREF(entry); goto done; }
                Py_DECREF(entry);
            }
            continue;
        }
        PyObject *repl = NULL;
        if (v == numpy_mod) repl = shim;
        if (!repl) repl = nd_np.lookup(v);
        if (!repl) repl = nd__policy_for(v);
        PyErr_Clear();
        int call_only = 0;
        PyObject *view = NULL;
        if (!repl && nd__user_function(v)) {
            if (!(repl = helper_wrapper(v))) goto done;
            call_only = 1;
        }
        int ns = repl ? 0 : namespace_kind(v);
        if (ns) {
            if (!(repl = view = namespace_view(v, ns == 2))) goto done;
        }
        if (!repl) continue;
        PyObject *nn = PyUnicode_FromFormat("__numdyn_%U__", name);
        /* how the name must be used: call_only (a helper), attr_only (a user
         * namespace: never as the class or module itself) */
        PyObject *use = PyLong_FromLong(call_only ? USE_CALL : ns == 2 ? USE_ATTR : USE_ANY);
        PyObject *entry = nn && use ? PyTuple_Pack(4, nn, repl, v, use) : NULL;
        Py_XDECREF(use);
        Py_XDECREF(nn);
        Py_XDECREF(view);
        if (!entry || PyDict_SetItem(mapping, name, entry) < 0) { Py_XDECREF(entry); goto done; }
        Py_DECREF(entry);
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(consts); i++) {
        PyObject *c = PyTuple_GET_ITEM(consts, i);
        if (PyCode_Check(c) && collect(c, globals, mapping, shim, depth + 1) < 0) goto done;
    }
    rc = 0;
done:
    Py_XDECREF(names);
    Py_XDECREF(consts);
    return rc;
}

/* whether a LOAD_GLOBAL instruction also pushes the NULL of a call
 * (3.11+: the argument's low bit): the name is called, never kept */
static int loads_for_call(PyObject *ins)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *a = PyObject_GetAttrString(ins, "arg");
    if (!a) return -1;
    long v = PyLong_Check(a) ? PyLong_AsLong(a) : 0;
    Py_DECREF(a);
    if (v == -1 && PyErr_Occurred()) return -1;
    return (int)(v & 1);
#else
    (void)ins;
    return 0;  /* no such bit: a helper's name is left alone */
#endif
}

/* names in mapping that some instruction other than LOAD_GLOBAL uses, or
 * that a LOAD_GLOBAL uses otherwise than the entry allows: a helper's
 * wrapper only for a call, a user namespace only for an attribute read by
 * the next instruction (`MyArr.helper(...)`, `mod.f`) */
static PyObject *unsafe_names(PyObject *list, PyObject *mapping)
{
    PyObject *unsafe = PySet_New(NULL);
    if (!unsafe) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(list);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *ins = PyList_GET_ITEM(list, i);
        PyObject *op = PyObject_GetAttrString(ins, "opname");
        PyObject *arg = op ? PyObject_GetAttrString(ins, "argval") : NULL;
        int bad = 0;
        if (arg && PyUnicode_Check(arg)) {
            PyObject *entry = PyDict_GetItemWithError(mapping, arg);
            int unsafe_use = 0;
            long use = entry ? PyLong_AsLong(PyTuple_GET_ITEM(entry, 3)) : USE_ANY;
            if (!entry) {
                bad = PyErr_Occurred() != NULL;
            } else if (PyUnicode_CompareWithASCIIString(op, "LOAD_GLOBAL") != 0) {
                unsafe_use = 1;
            } else if (use == USE_CALL) {
                int c = loads_for_call(ins);
                if (c < 0) bad = 1;
                unsafe_use = c == 0;
            } else if (use == USE_ATTR) {
                /* an attribute read next (a NULL the load pushes below it
                 * is the call's of that attribute) */
                PyObject *nop = i + 1 < n ? PyObject_GetAttrString(PyList_GET_ITEM(list, i + 1), "opname") : NULL;
                if (i + 1 < n && !nop) bad = 1;
                unsafe_use = !nop ||
                             (PyUnicode_CompareWithASCIIString(nop, "LOAD_ATTR") != 0 &&
                              PyUnicode_CompareWithASCIIString(nop, "LOAD_METHOD") != 0);
                Py_XDECREF(nop);
            }
            if (unsafe_use && PySet_Add(unsafe, arg) < 0) bad = 1;
        }
        Py_XDECREF(op);
        Py_XDECREF(arg);
        if (!arg || bad) break;
    }
    if (PyErr_Occurred()) { Py_DECREF(unsafe); return NULL; }
    return unsafe;
}

static int opname_is(PyObject *ins, const char *name)
{
    PyObject *op = PyObject_GetAttrString(ins, "opname");
    if (!op) return -1;
    int r = PyUnicode_Check(op) && PyUnicode_CompareWithASCIIString(op, name) == 0;
    Py_DECREF(op);
    return r;
}

static long ins_arg(PyObject *ins)
{
    PyObject *a = PyObject_GetAttrString(ins, "arg");
    long v = a && PyLong_Check(a) ? PyLong_AsLong(a) : a ? 0 : -1;
    Py_XDECREF(a);
    return v;
}

#if PY_VERSION_HEX < 0x030C0000
/* 3.11 loads `np.ndarray` for a call with keywords as LOAD_GLOBAL (NULL +
 * np), LOAD_ATTR: the attribute is the call's callable only if what
 * follows pushes the arguments above it and a PRECALL of that many takes
 * them (not `np.ndarray.__new__(...)`, `np.ndarray[int](...)`). Followed
 * on straight code only: a jump in the arguments is a no. */
static int called_by_next_call(PyObject *list, Py_ssize_t i)
{
    static PyObject *stack_effect;
    if (!stack_effect) {
        PyObject *dis = PyImport_ImportModule("dis");
        stack_effect = dis ? PyObject_GetAttrString(dis, "stack_effect") : NULL;
        Py_XDECREF(dis);
        if (!stack_effect) return -1;
    }
    long depth = 0;
    for (Py_ssize_t j = i + 1; j < PyList_GET_SIZE(list) && j < i + 256; j++) {
        PyObject *ins = PyList_GET_ITEM(list, j);
        int pre = opname_is(ins, "PRECALL");
        if (pre < 0) return -1;
        if (pre) {
            long argc = ins_arg(ins);
            if (argc < 0) return -1;
            if (argc >= depth) return argc == depth;
        }
        PyObject *name = PyObject_GetAttrString(ins, "opname");
        PyObject *jt = name ? PyObject_GetAttrString(ins, "is_jump_target") : NULL;
        const char *nm = jt && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
        int branch = !nm ? -1 : PyObject_IsTrue(jt) || strstr(nm, "JUMP") || !strcmp(nm, "FOR_ITER") ||
                               !strcmp(nm, "SEND");
        Py_XDECREF(name);
        Py_XDECREF(jt);
        if (branch) return branch < 0 ? -1 : 0;
        PyObject *op = PyObject_GetAttrString(ins, "opcode");
        PyObject *arg = op ? PyObject_GetAttrString(ins, "arg") : NULL;
        PyObject *eff = arg ? PyObject_CallFunctionObjArgs(stack_effect, op, arg, NULL) : NULL;
        Py_XDECREF(op);
        Py_XDECREF(arg);
        if (!eff) return -1;
        long e = PyLong_AsLong(eff);
        Py_DECREF(eff);
        if (e == -1 && PyErr_Occurred()) return -1;
        if ((depth += e) < 0) return 0;
    }
    return 0;
}
#endif

/* ins (the i-th) loads an attribute only to call it: LOAD_METHOD, from
 * 3.12 on LOAD_ATTR with the method bit (its argument's low bit), in 3.11
 * LOAD_ATTR after a LOAD_GLOBAL that pushed a call's NULL, its value the
 * callable of the next call */
static int method_load(PyObject *list, Py_ssize_t i, Py_ssize_t prev)
{
    PyObject *ins = PyList_GET_ITEM(list, i);
    int m = opname_is(ins, "LOAD_METHOD");
    if (m != 0 || (m = opname_is(ins, "LOAD_ATTR")) != 1) return m;
#if PY_VERSION_HEX >= 0x030C0000
    (void)prev;
    long v = ins_arg(ins);
    return v < 0 ? -1 : (int)(v & 1);
#else
    if (prev < 0) return 0;
    long v = ins_arg(PyList_GET_ITEM(list, prev));
    if (v < 0) return -1;
    return (v & 1) ? called_by_next_call(list, i) : 0;
#endif
}

/* ins is LOAD_GLOBAL of a name this code object reads as the shim module */
static int loads_shim(PyObject *ins, PyObject *mapping, PyObject *unsafe, PyObject *shim)
{
    int g = opname_is(ins, "LOAD_GLOBAL");
    if (g <= 0) return g;
    PyObject *name = PyObject_GetAttrString(ins, "argval");
    if (!name) return -1;
    PyObject *entry = PyUnicode_Check(name) ? PyDict_GetItemWithError(mapping, name) : NULL;
    int r = entry && PyTuple_GET_ITEM(entry, 1) == shim;
    if (r && (r = !PySet_Contains(unsafe, name)) && PyErr_Occurred()) r = -1;
    if (!entry && PyErr_Occurred()) r = -1;
    Py_DECREF(name);
    return r;
}

/* Attribute names to rename to the shim's ND_SHIM_CALL_PREFIX entries
 * (name -> new name): every instruction naming one is a method load right
 * after the LOAD_GLOBAL of the shim, so the attribute is only ever called,
 * never kept: np.ndarray stays NumPy's type everywhere else. */
static PyObject *call_renames(PyObject *list, PyObject *mapping, PyObject *unsafe, PyObject *shim)
{
    PyObject *ren = PyDict_New(), *no = PySet_New(NULL), *keys = NULL;
    PyObject *sd = PyModule_Check(shim) ? PyModule_GetDict(shim) : NULL;
    if (!ren || !no || !sd) goto fail;
    Py_ssize_t n = PyList_GET_SIZE(list);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *ins = PyList_GET_ITEM(list, i);
        PyObject *arg = PyObject_GetAttrString(ins, "argval");
        if (!arg) goto fail;
        if (!PyUnicode_Check(arg) || PyDict_Contains(mapping, arg)) { Py_DECREF(arg); continue; }
        PyObject *nn = PyUnicode_FromFormat(ND_SHIM_CALL_PREFIX "%U__", arg);
        int has = nn ? PyDict_Contains(sd, nn) : -1, ok = 0;
        if (has == 1) {
            Py_ssize_t p = i - 1;  /* the object's load, before any EXTENDED_ARG */
            while (p >= 0 && (ok = opname_is(PyList_GET_ITEM(list, p), "EXTENDED_ARG")) == 1) p--;
            if (ok == 0) ok = p < 0 ? 0 : loads_shim(PyList_GET_ITEM(list, p), mapping, unsafe, shim);
            if (ok == 1) ok = method_load(list, i, p);
        }
        int rc = has < 0 || ok < 0 ? -1 : !has ? 0 : ok ? PyDict_SetItem(ren, arg, nn) : PySet_Add(no, arg);
        Py_XDECREF(nn);
        Py_DECREF(arg);
        if (rc < 0) goto fail;
    }
    if (!(keys = PyDict_Keys(ren))) goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys); i++) {
        int bad = PySet_Contains(no, PyList_GET_ITEM(keys, i));
        if (bad < 0 || (bad && PyDict_DelItem(ren, PyList_GET_ITEM(keys, i)) < 0)) goto fail;
    }
    Py_DECREF(keys);
    Py_DECREF(no);
    return ren;
fail:
    Py_XDECREF(keys);
    Py_XDECREF(ren);
    Py_XDECREF(no);
    return NULL;
}

static PyObject *remap_code(PyObject *code, PyObject *mapping, PyObject *shim, int depth)
{
    if (depth > 32) return Py_NewRef(code);
    PyObject *names = PyObject_GetAttrString(code, "co_names");
    PyObject *consts = names ? PyObject_GetAttrString(code, "co_consts") : NULL;
    PyObject *it = consts ? PyObject_CallOneArg(get_instructions, code) : NULL;
    PyObject *list = it ? PySequence_List(it) : NULL;
    Py_XDECREF(it);
    PyObject *unsafe = list ? unsafe_names(list, mapping) : NULL;
    PyObject *calls = unsafe ? call_renames(list, mapping, unsafe, shim) : NULL;
    PyObject *nnames = NULL, *nconsts = NULL, *r = NULL;
    int changed = 0;
    if (!calls) goto done;
    nnames = PyTuple_New(PyTuple_GET_SIZE(names));
    nconsts = nnames ? PyTuple_New(PyTuple_GET_SIZE(consts)) : NULL;
    if (!nconsts) goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i), *use = name;
        PyObject *entry = PyDict_GetItemWithError(mapping, name);
        if (!entry && PyErr_Occurred()) goto done;
        int bad = entry ? PySet_Contains(unsafe, name) : 1;
        if (bad < 0) goto done;
        if (!bad) { use = PyTuple_GET_ITEM(entry, 0); changed = 1; }
        PyObject *call = entry ? NULL : PyDict_GetItemWithError(calls, name);
        if (!call && PyErr_Occurred()) goto done;
        if (call) { use = call; changed = 1; }
        PyTuple_SET_ITEM(nnames, i, Py_NewRef(use));
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(consts); i++) {
        PyObject *c = PyTuple_GET_ITEM(consts, i), *nc;
        nc = PyCode_Check(c) ? remap_code(c, mapping, shim, depth + 1) : Py_NewRef(c);
        if (!nc) goto done;
        changed |= nc != c;
        PyTuple_SET_ITEM(nconsts, i, nc);
    }
    if (!changed) { r = Py_NewRef(code); goto done; }
    {
        PyObject *kw = Py_BuildValue("{sOsO}", "co_names", nnames, "co_consts", nconsts);
        PyObject *replace = kw ? PyObject_GetAttrString(code, "replace") : NULL;
        PyObject *empty = replace ? PyTuple_New(0) : NULL;
        if (empty) r = PyObject_Call(replace, empty, kw);
        Py_XDECREF(kw);
        Py_XDECREF(replace);
        Py_XDECREF(empty);
    }
done:
    Py_XDECREF(names);
    Py_XDECREF(consts);
    Py_XDECREF(list);
    Py_XDECREF(unsafe);
    Py_XDECREF(calls);
    Py_XDECREF(nnames);
    Py_XDECREF(nconsts);
    return r;
}

/* (fn, code, defaults, kwdefaults, name, original, ...) */
static PyObject *make_guards(PyObject *fn, PyObject *mapping)
{
    Py_ssize_t n = mapping ? PyDict_GET_SIZE(mapping) : 0;
    PyObject *g = PyTuple_New(4 + 2 * n);
    if (!g) return NULL;
    PyObject *d = PyFunction_GET_DEFAULTS(fn), *kd = PyFunction_GET_KW_DEFAULTS(fn);
    PyTuple_SET_ITEM(g, 0, Py_NewRef(fn));
    PyTuple_SET_ITEM(g, 1, Py_NewRef(PyFunction_GET_CODE(fn)));
    PyTuple_SET_ITEM(g, 2, Py_NewRef(d ? d : Py_None));
    PyTuple_SET_ITEM(g, 3, Py_NewRef(kd ? kd : Py_None));
    Py_ssize_t pos = 0, k = 4;
    PyObject *name, *entry;
    while (mapping && PyDict_Next(mapping, &pos, &name, &entry)) {
        PyTuple_SET_ITEM(g, k++, Py_NewRef(name));
        PyTuple_SET_ITEM(g, k++, Py_NewRef(PyTuple_GET_ITEM(entry, 2)));
    }
    return g;
}

int nd__remap_valid(PyObject *guards)
{
    if (!guards || PyTuple_GET_SIZE(guards) < 4) return 1;
    PyObject *fn = PyTuple_GET_ITEM(guards, 0);
    PyObject *d = PyFunction_GET_DEFAULTS(fn), *kd = PyFunction_GET_KW_DEFAULTS(fn);
    if (PyFunction_GET_CODE(fn) != PyTuple_GET_ITEM(guards, 1) ||
        (d ? d : Py_None) != PyTuple_GET_ITEM(guards, 2) ||
        (kd ? kd : Py_None) != PyTuple_GET_ITEM(guards, 3))
        return 0;
    PyObject *globals = PyFunction_GET_GLOBALS(fn);
    for (Py_ssize_t k = 4; k + 1 < PyTuple_GET_SIZE(guards); k += 2) {
        PyObject *v = PyDict_GetItemWithError(globals, PyTuple_GET_ITEM(guards, k));
        if (!v && PyErr_Occurred()) return -1;
        if (PyTuple_GET_ITEM(guards, k + 1) == builtin_mark) {
            if (v) return 0;  /* a global now shadows the builtin */
            continue;
        }
        if (v != PyTuple_GET_ITEM(guards, k + 1)) return 0;
    }
    return 1;
}

static PyObject *remap_function(PyObject *orig, PyObject *shim, PyObject **guards)
{
    /* loops compiled to C first (trace/loop.h): fn is the rewritten copy,
     * guarded as the original */
    PyObject *fn = nd_loop_rewrite(orig);
    if (!fn) return NULL;
    PyObject *globals = PyFunction_GET_GLOBALS(fn), *code = PyFunction_GET_CODE(fn);
    PyObject *mapping = PyDict_New(), *ncode = NULL, *nf = NULL;
    if (!mapping || collect(code, globals, mapping, shim, 0) < 0) goto done;
    if (!(*guards = make_guards(orig, mapping))) goto done;
    if (PyDict_GET_SIZE(mapping) == 0) { nf = Py_NewRef(fn); goto done; }
    if (!(ncode = remap_code(code, mapping, shim, 0))) goto done;
    if (ncode == code) { nf = Py_NewRef(fn); goto done; }
    Py_ssize_t pos = 0;
    PyObject *name, *entry;
    while (PyDict_Next(mapping, &pos, &name, &entry))
        if (PyDict_SetItem(globals, PyTuple_GET_ITEM(entry, 0), PyTuple_GET_ITEM(entry, 1)) < 0)
            goto done;
    PyObject *qualname = PyObject_GetAttrString(fn, "__qualname__");
    if (!qualname) goto done;
    nf = PyFunction_NewWithQualName(ncode, globals, qualname);
    Py_DECREF(qualname);
    if (!nf) goto done;
    PyObject *d = PyFunction_GET_DEFAULTS(fn), *kd = PyFunction_GET_KW_DEFAULTS(fn);
    PyObject *cl = PyFunction_GET_CLOSURE(fn);
    if ((d && PyFunction_SetDefaults(nf, d) < 0) || (kd && PyFunction_SetKwDefaults(nf, kd) < 0) ||
        (cl && PyFunction_SetClosure(nf, cl) < 0))
        Py_CLEAR(nf);
done:
    if (!nf) Py_CLEAR(*guards);
    Py_XDECREF(mapping);
    Py_XDECREF(ncode);
    Py_DECREF(fn);
    return nf;
}

PyObject *nd__remap(PyObject *fn, PyObject **guards)
{
    *guards = NULL;
    PyObject *shim = nd_np.module();
    if (!shim) {
        PyErr_Clear();
        return Py_NewRef(fn);  /* shim not ready: protocols only; retried next call */
    }
    if (init() < 0) return NULL;
    if (PyMethod_Check(fn)) {
        PyObject *f = PyMethod_GET_FUNCTION(fn);
        if (!PyFunction_Check(f)) { *guards = PyTuple_New(0); return *guards ? Py_NewRef(fn) : NULL; }
        PyObject *nf = remap_function(f, shim, guards);
        if (!nf) return NULL;
        if (nf == f) { Py_DECREF(nf); return Py_NewRef(fn); }
        PyObject *m = PyMethod_New(nf, PyMethod_GET_SELF(fn));
        Py_DECREF(nf);
        if (!m) Py_CLEAR(*guards);
        return m;
    }
    if (!PyFunction_Check(fn)) {
        *guards = PyTuple_New(0);
        return *guards ? Py_NewRef(fn) : NULL;
    }
    return remap_function(fn, shim, guards);
}

PyObject *nd_trace_remap_function(PyObject *fn)
{
    PyObject *guards = NULL;
    PyObject *r = nd__remap(fn, &guards);
    Py_XDECREF(guards);
    return r;
}

/* Helpers the compiled function calls (loop_rewrite.c's
 * __numdyn_callee__) see the shim as their `np` too: a helper that makes
 * its output with np.empty and fills it (`out[:, i, j, :] = np.sum(...)`)
 * otherwise makes a real array, and every store of a lazy value into it
 * is a graph break (NPBench's conv2d/maxpool2d helpers: 640 a call). The
 * copy is made once per helper and checked at each call like the compiled
 * function's own (same function object, code, defaults, and every renamed
 * global still bound as it was). */
static PyObject *callee_copies;  /* code -> (copy, guards) */

PyObject *nd_trace_remap_callee(PyObject *fn)
{
    if (!PyFunction_Check(fn)) return Py_NewRef(fn);
    if (!callee_copies && !(callee_copies = PyDict_New())) return NULL;
    PyObject *code = PyFunction_GET_CODE(fn);
    /* the entries last found, by code address (borrowed: the dict holds
     * them; forgotten at every store): hashing a code object walks its
     * constants, and a helper called in a loop asked the dict each call --
     * 1.5 us a call of a two-line helper on the speed floor's NumPy path */
#define ND_CALLEE_MEMO 8
    static PyObject *memo_code[ND_CALLEE_MEMO], *memo_e[ND_CALLEE_MEMO];
    size_t slot = ((uintptr_t)code >> 4) % ND_CALLEE_MEMO;
    PyObject *e = memo_code[slot] == code ? memo_e[slot] : NULL;
    if (!e) {
        e = PyDict_GetItemWithError(callee_copies, code);
        if (!e && PyErr_Occurred()) return NULL;
        if (e) { memo_code[slot] = code; memo_e[slot] = e; }
    }
    if (e) {
        PyObject *g = PyTuple_GET_ITEM(e, 1);
        if (PyTuple_GET_SIZE(g) >= 4 && PyTuple_GET_ITEM(g, 0) == fn) {
            int ok = nd__remap_valid(g);
            if (ok < 0) return NULL;
            if (ok) return Py_NewRef(PyTuple_GET_ITEM(e, 0));
        }
    }
    PyObject *guards = NULL;
    PyObject *nf = nd__remap(fn, &guards);
    if (!nf) return NULL;
    if (guards && PyTuple_GET_SIZE(guards) >= 4) {
        PyObject *ne = PyTuple_Pack(2, nf, guards);
        memset(memo_code, 0, sizeof memo_code);  /* the store may drop an entry memo_e holds */
        if (!ne || PyDict_SetItem(callee_copies, code, ne) < 0) {
            Py_XDECREF(ne);
            Py_DECREF(guards);
            Py_DECREF(nf);
            return NULL;
        }
        Py_DECREF(ne);
    }
    Py_XDECREF(guards);
    return nf;
}
