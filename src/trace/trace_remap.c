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
 *     for a lazy scalar, as the function would see under NumPy.
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

static PyObject *numpy_mod, *get_instructions, *type_shim, *builtin_mark;

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

static int init(void)
{
    if (get_instructions) return 0;
    if (!type_shim && !(type_shim = PyCFunction_New(&type_def, NULL))) return -1;
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

/* mapping: name -> (new_name, replacement, original) */
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
            /* the builtin type(), unless a global shadows it (guarded:
             * the name must stay unbound in the globals) */
            if (PyUnicode_CompareWithASCIIString(name, "type") == 0) {
                PyObject *nn = PyUnicode_FromFormat("__numdyn_%U__", name);
                PyObject *entry = nn ? PyTuple_Pack(3, nn, type_shim, builtin_mark) : NULL;
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
        if (!repl) continue;
        PyObject *nn = PyUnicode_FromFormat("__numdyn_%U__", name);
        PyObject *entry = nn ? PyTuple_Pack(3, nn, repl, v) : NULL;
        Py_XDECREF(nn);
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

/* names in mapping that some instruction other than LOAD_GLOBAL uses */
static PyObject *unsafe_names(PyObject *code, PyObject *mapping)
{
    PyObject *unsafe = PySet_New(NULL);
    PyObject *it = unsafe ? PyObject_CallOneArg(get_instructions, code) : NULL;
    PyObject *iter = it ? PyObject_GetIter(it) : NULL, *ins;
    Py_XDECREF(it);
    if (!iter) { Py_XDECREF(unsafe); return NULL; }
    while ((ins = PyIter_Next(iter))) {
        PyObject *op = PyObject_GetAttrString(ins, "opname");
        PyObject *arg = op ? PyObject_GetAttrString(ins, "argval") : NULL;
        Py_DECREF(ins);
        int bad = 0;
        if (arg && PyUnicode_Check(arg) &&
            PyUnicode_CompareWithASCIIString(op, "LOAD_GLOBAL") != 0) {
            int has = PyDict_Contains(mapping, arg);
            if (has < 0 || (has && PySet_Add(unsafe, arg) < 0)) bad = 1;
        }
        Py_XDECREF(op);
        Py_XDECREF(arg);
        if (!arg || bad) break;
    }
    Py_DECREF(iter);
    if (PyErr_Occurred()) { Py_DECREF(unsafe); return NULL; }
    return unsafe;
}

static PyObject *remap_code(PyObject *code, PyObject *mapping, int depth)
{
    if (depth > 32) return Py_NewRef(code);
    PyObject *names = PyObject_GetAttrString(code, "co_names");
    PyObject *consts = names ? PyObject_GetAttrString(code, "co_consts") : NULL;
    PyObject *unsafe = consts ? unsafe_names(code, mapping) : NULL;
    PyObject *nnames = NULL, *nconsts = NULL, *r = NULL;
    int changed = 0;
    if (!unsafe) goto done;
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
        PyTuple_SET_ITEM(nnames, i, Py_NewRef(use));
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(consts); i++) {
        PyObject *c = PyTuple_GET_ITEM(consts, i), *nc;
        nc = PyCode_Check(c) ? remap_code(c, mapping, depth + 1) : Py_NewRef(c);
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
    Py_XDECREF(unsafe);
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
    if (!(ncode = remap_code(code, mapping, 0))) goto done;
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
    PyObject *e = PyDict_GetItemWithError(callee_copies, code);
    if (!e && PyErr_Occurred()) return NULL;
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
