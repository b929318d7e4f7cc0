/* loop_rewrite.c -- the compiled copy of a function with its capturable
 * loops replaced by loop regions (see loop.h).
 *
 * The function's source is parsed again (inspect.getsource, the lines of
 * the code object kept), each loop statement tried by loop_parse.c from the
 * outside in: a loop that cannot be captured is searched for capturable
 * loops inside it. Loops inside with blocks (other than np.errstate) are
 * left alone. A loop inside a try block (its body, handlers, else or
 * finally) gets a template that survives an exception: the region hands
 * back the locals the loop had assigned when it raised, with the
 * exception, and the template binds them before raising it again, so a
 * handler sees the names as Python would have left them. The new function is compiled from the
 * rewritten tree with the original's globals, defaults and closure cells
 * (free variables are matched by name through a factory function around
 * the definition). What was decided for each loop is kept per code object
 * for NdCompiled._loop_info() and explain().
 */
#include "trace/loop.h"
#include "trace_internal.h"
#include <string.h>

static PyObject *mod_ast, *getsource, *dedent, *info_by_code;
static unsigned long long region_counter;

/* code -> the last copy of its function with captured loops (nd_loop_plain) */
static PyObject *plain_by_code;
/* its last hit (borrowed, the dict holds both; cleared at every store): a
 * code object's hash walks its constants, a good part of a small call.
 * plain_miss_code: the last code found without a copy (compared by
 * address only, never dereferenced; cleared at every store, so a code
 * freed and another made at its address reads as a miss only until the
 * store that would give the new one a copy) -- the speed floor's NumPy
 * path of a function with no captured loop asked the dict on every call,
 * 6% of a 3.5 us call */
static PyObject *plain_last_code, *plain_last, *plain_miss_code;

static int init(void)
{
    if (info_by_code && plain_by_code) return 0;
    PyObject *insp = PyImport_ImportModule("inspect");
    PyObject *tw = insp ? PyImport_ImportModule("textwrap") : NULL;
    if (tw) {
        getsource = PyObject_GetAttrString(insp, "getsource");
        dedent = getsource ? PyObject_GetAttrString(tw, "dedent") : NULL;
    }
    Py_XDECREF(insp);
    Py_XDECREF(tw);
    if (!dedent || !(mod_ast = PyImport_ImportModule("ast"))) return -1;
    if (!info_by_code) info_by_code = PyDict_New();
    if (!plain_by_code) plain_by_code = PyDict_New();
    return info_by_code && plain_by_code ? 0 : -1;
}

static const char *kind(PyObject *o)
{
    const char *n = Py_TYPE(o)->tp_name, *d = strrchr(n, '.');
    return d ? d + 1 : n;
}

typedef struct {
    PyObject *fn, *locals, *globals, *infos;
    int captured;
    int in_try;       /* depth of try statements around the block */
    /* what the loop regions' calls pass and take back by position
     * (io_facts below): */
    PyObject *bound;    /* names certainly bound here (a set), NULL: unknown */
    PyObject *deleted;  /* names ever deleted (del, an except clause's name) */
    PyObject *uses;     /* name -> the number of reads of it in the function */
    PyObject *cells;    /* cell and free variables (a closure may read them) */
    int introspects;    /* it calls locals(), vars(), eval(), exec(), dir() */
} rctx;

static PyObject *info_entry(int line, int captured, PyObject *reason)
{
    return Py_BuildValue("{sisOsO}", "line", line, "captured", captured ? Py_True : Py_False,
                         "reason", reason ? reason : Py_None);
}

static int lineno(PyObject *node)
{
    PyObject *l = PyObject_GetAttrString(node, "lineno");
    int v = l ? (int)PyLong_AsLong(l) : 0;
    Py_XDECREF(l);
    PyErr_Clear();
    return v;
}

/* every node of tree placed at line ln (the template's own nodes) */
static int place(PyObject *tree, int ln)
{
    PyObject *walk = PyObject_CallMethod(mod_ast, "walk", "O", tree);
    PyObject *it = walk ? PyObject_GetIter(walk) : NULL, *n;
    Py_XDECREF(walk);
    if (!it) return -1;
    PyObject *l = PyLong_FromLong(ln), *z = PyLong_FromLong(0);
    int rc = l && z ? 0 : -1;
    while (rc == 0 && (n = PyIter_Next(it))) {
        if (PyObject_HasAttrString(n, "lineno") || !strcmp(kind(n), "Name") || !strcmp(kind(n), "Call") ||
            !strcmp(kind(n), "Assign") || !strcmp(kind(n), "If") || !strcmp(kind(n), "Compare") ||
            !strcmp(kind(n), "Attribute") || !strcmp(kind(n), "Constant") || !strcmp(kind(n), "Subscript") ||
            !strcmp(kind(n), "Tuple") || !strcmp(kind(n), "Pass")) {
            PyObject *fields = PyObject_GetAttrString((PyObject *)Py_TYPE(n), "_attributes");
            if (fields && PyTuple_Check(fields) && PyTuple_GET_SIZE(fields)) {
                if (PyObject_SetAttrString(n, "lineno", l) < 0 || PyObject_SetAttrString(n, "end_lineno", l) < 0 ||
                    PyObject_SetAttrString(n, "col_offset", z) < 0 || PyObject_SetAttrString(n, "end_col_offset", z) < 0)
                    rc = -1;
            }
            Py_XDECREF(fields);
            PyErr_Clear();
        }
        Py_DECREF(n);
    }
    Py_DECREF(it);
    Py_XDECREF(l);
    Py_XDECREF(z);
    return rc < 0 || PyErr_Occurred() ? -1 : 0;
}

/* ---- what a region's call passes and takes back by position.
 *
 * A region called with locals() costs the dict (every local of the
 * function), a lookup per name and a tuple of every name the loop assigns:
 * ~1 us of a 1.7 us call around an 8-element loop. Instead the template
 * passes, by position, the locals the loop may read before it assigns them
 * (graph/loop_ir.h nd_lir_live_in) -- when each is certainly bound where
 * the loop starts, else evaluating it could raise (then locals() as before)
 * -- and the other locals it names that are certainly bound (their types
 * at entry are the signature's, as with locals()); a local it names that
 * is neither (assigned before any read, maybe unbound: a for target) is
 * unbound to it at entry. It takes back the names read after the loop: a
 * name the loop assigns that is not live-in and read nowhere else in the
 * function (no closure holds it, no locals()/vars()/eval()/exec()/dir()
 * looks) is never read again with the value the loop left, so it is not
 * boxed.
 *
 * Certainly bound: a parameter, or a name a simple statement binds
 * (assignment, augmented assignment, annotated assignment with a value,
 * import, def, class) earlier in the same block or in a block around it
 * (before the statement holding it) -- never a name deleted anywhere (del,
 * an except clause's `as` name). */

/* names a target binds, into set */
static int target_names(PyObject *t, PyObject *set)
{
    const char *k = kind(t);
    if (!strcmp(k, "Name")) {
        PyObject *id = PyObject_GetAttrString(t, "id");
        int rc = id ? PySet_Add(set, id) : -1;
        Py_XDECREF(id);
        return rc;
    }
    if (!strcmp(k, "Starred")) {
        PyObject *v = PyObject_GetAttrString(t, "value");
        int rc = v ? target_names(v, set) : -1;
        Py_XDECREF(v);
        return rc;
    }
    if (!strcmp(k, "Tuple") || !strcmp(k, "List")) {
        PyObject *e = PyObject_GetAttrString(t, "elts");
        int rc = e ? 0 : -1;
        for (Py_ssize_t j = 0; rc == 0 && j < PyList_GET_SIZE(e); j++) rc = target_names(PyList_GET_ITEM(e, j), set);
        Py_XDECREF(e);
        return rc;
    }
    return 0;   /* an attribute or a subscript binds no name */
}

/* the names simple statement s certainly binds when it completes, into set */
static int stmt_binds(PyObject *s, PyObject *set)
{
    const char *k = kind(s);
    int rc = 0;
    if (!strcmp(k, "Assign")) {
        PyObject *ts = PyObject_GetAttrString(s, "targets");
        if (!ts) return -1;
        for (Py_ssize_t j = 0; rc == 0 && j < PyList_GET_SIZE(ts); j++) rc = target_names(PyList_GET_ITEM(ts, j), set);
        Py_DECREF(ts);
    } else if (!strcmp(k, "AugAssign") || !strcmp(k, "AnnAssign")) {
        PyObject *v = !strcmp(k, "AnnAssign") ? PyObject_GetAttrString(s, "value") : Py_NewRef(Py_True);
        PyObject *t = v ? PyObject_GetAttrString(s, "target") : NULL;
        rc = t ? (v != Py_None && !strcmp(kind(t), "Name") ? target_names(t, set) : 0) : -1;
        Py_XDECREF(v);
        Py_XDECREF(t);
    } else if (!strcmp(k, "FunctionDef") || !strcmp(k, "AsyncFunctionDef") || !strcmp(k, "ClassDef")) {
        PyObject *n = PyObject_GetAttrString(s, "name");
        rc = n ? PySet_Add(set, n) : -1;
        Py_XDECREF(n);
    } else if (!strcmp(k, "Import") || !strcmp(k, "ImportFrom")) {
        PyObject *ns = PyObject_GetAttrString(s, "names");
        if (!ns) return -1;
        for (Py_ssize_t j = 0; rc == 0 && j < PyList_GET_SIZE(ns); j++) {
            PyObject *al = PyList_GET_ITEM(ns, j), *as = PyObject_GetAttrString(al, "asname");
            PyObject *nm = as && as != Py_None ? Py_NewRef(as) : as ? PyObject_GetAttrString(al, "name") : NULL;
            if (!nm) rc = -1;
            else if (PyUnicode_Check(nm) && PyUnicode_FindChar(nm, '*', 0, PyUnicode_GET_LENGTH(nm), 1) < 0) {
                Py_ssize_t dot = PyUnicode_FindChar(nm, '.', 0, PyUnicode_GET_LENGTH(nm), 1);
                PyObject *top = dot >= 0 ? PyUnicode_Substring(nm, 0, dot) : Py_NewRef(nm);
                rc = top ? PySet_Add(set, top) : -1;
                Py_XDECREF(top);
            }
            Py_XDECREF(as);
            Py_XDECREF(nm);
        }
        Py_DECREF(ns);
    }
    return rc;
}

/* One walk over node: the reads of each name into counts (a dict name ->
 * int): Load and Del contexts, augmented assignments' targets; *intro set
 * when it names locals/vars/eval/exec/dir; the names deleted (del, except
 * ... as name) into set deleted (when not NULL). */
static int name_facts(PyObject *node, PyObject *counts, int *intro, PyObject *deleted)
{
    PyObject *walk = PyObject_CallMethod(mod_ast, "walk", "O", node);
    PyObject *it = walk ? PyObject_GetIter(walk) : NULL, *n;
    Py_XDECREF(walk);
    if (!it) return -1;
    int rc = 0;
    while (rc == 0 && (n = PyIter_Next(it))) {
        const char *k = kind(n);
        PyObject *name = NULL;
        if (!strcmp(k, "Name")) {
            PyObject *ctx = PyObject_GetAttrString(n, "ctx");
            const char *ck = ctx ? kind(ctx) : "";
            if (!ctx) rc = -1;
            else if (strcmp(ck, "Store") != 0) name = PyObject_GetAttrString(n, "id");
            if (name && deleted && !strcmp(ck, "Del") && PySet_Add(deleted, name) < 0) rc = -1;
            Py_XDECREF(ctx);
        } else if (!strcmp(k, "AugAssign")) {
            PyObject *t = PyObject_GetAttrString(n, "target");
            if (!t) rc = -1;
            else if (!strcmp(kind(t), "Name")) name = PyObject_GetAttrString(t, "id");
            Py_XDECREF(t);
        } else if (!strcmp(k, "ExceptHandler") && deleted) {
            PyObject *nm = PyObject_GetAttrString(n, "name");
            if (!nm) rc = -1;
            else if (nm != Py_None) rc = PySet_Add(deleted, nm);
            Py_XDECREF(nm);
        }
        if (rc == 0 && name && PyUnicode_Check(name)) {
            static const char *const looks[] = {"locals", "vars", "eval", "exec", "dir", "breakpoint", NULL};
            for (const char *const *l = looks; *l && intro; l++)
                if (PyUnicode_CompareWithASCIIString(name, *l) == 0) *intro = 1;
            PyObject *c0 = PyDict_GetItemWithError(counts, name);
            long cur = c0 ? PyLong_AsLong(c0) : 0;
            PyObject *nv = PyErr_Occurred() ? NULL : PyLong_FromLong(cur + 1);
            if (!nv || PyDict_SetItem(counts, name, nv) < 0) rc = -1;
            Py_XDECREF(nv);
        } else if (!name && PyErr_Occurred()) {
            rc = -1;
        }
        Py_XDECREF(name);
        Py_DECREF(n);
    }
    Py_DECREF(it);
    return rc < 0 || PyErr_Occurred() ? -1 : 0;
}

/* The function's facts for io_facts: its parameters as the names bound at
 * its start, the deleted names, the reads of each name, its cells. */
static int function_facts(rctx *c, PyObject *fdef, PyObject *code)
{
    if (!(c->bound = PySet_New(NULL)) || !(c->deleted = PySet_New(NULL)) || !(c->uses = PyDict_New()) ||
        !(c->cells = PySet_New(NULL)))
        return -1;
    PyObject *args = PyObject_GetAttrString(fdef, "args");
    if (!args) return -1;
    static const char *const lists[] = {"posonlyargs", "args", "kwonlyargs"}, *const one[] = {"vararg", "kwarg"};
    int rc = 0;
    for (int k = 0; rc == 0 && k < 3; k++) {
        PyObject *l = PyObject_GetAttrString(args, lists[k]);
        if (!l) { rc = -1; break; }
        for (Py_ssize_t j = 0; rc == 0 && j < PyList_GET_SIZE(l); j++) {
            PyObject *a = PyObject_GetAttrString(PyList_GET_ITEM(l, j), "arg");
            rc = a ? PySet_Add(c->bound, a) : -1;
            Py_XDECREF(a);
        }
        Py_DECREF(l);
    }
    for (int k = 0; rc == 0 && k < 2; k++) {
        PyObject *o = PyObject_GetAttrString(args, one[k]);
        PyObject *a = o && o != Py_None ? PyObject_GetAttrString(o, "arg") : NULL;
        if (!o || (o != Py_None && !a)) rc = -1;
        else if (a) rc = PySet_Add(c->bound, a);
        Py_XDECREF(o);
        Py_XDECREF(a);
    }
    Py_DECREF(args);
    if (rc < 0 || name_facts(fdef, c->uses, &c->introspects, c->deleted) < 0) return -1;
    static const char *const cl[] = {"co_cellvars", "co_freevars"};
    for (int k = 0; k < 2; k++) {
        PyObject *t = PyObject_GetAttrString(code, cl[k]);
        if (!t) return -1;
        for (Py_ssize_t j = 0; rc == 0 && j < PyTuple_GET_SIZE(t); j++) rc = PySet_Add(c->cells, PyTuple_GET_ITEM(t, j));
        Py_DECREF(t);
        if (rc < 0) return -1;
    }
    return 0;
}

static void facts_clear(rctx *c)
{
    Py_CLEAR(c->bound);
    Py_CLEAR(c->deleted);
    Py_CLEAR(c->uses);
    Py_CLEAR(c->cells);
}

/* For loop `node` (ir): *npos = the number of values passed by position,
 * vpos[v] its position for each variable passed (else -1); *npos = -1 when
 * the call must pass locals() (a live-in name not certainly bound, or the
 * loop is in a try). vout[v] = 1 for each variable handed back. */
static int io_facts(rctx *c, PyObject *node, const nd_lir *ir, int *vpos, int *npos, uint8_t *vout)
{
    int nv = ir->nvars, rc = -1;
    uint8_t *live = PyMem_Calloc((size_t)nv + 1, 1);
    PyObject *inside = PyDict_New();
    *npos = -1;
    if (!live || !inside) { PyErr_NoMemory(); goto done; }
    if (nd_lir_live_in(ir, live) < 0) goto done;
    int intro = c->introspects, positional = !c->in_try && c->bound;
    if (c->uses && name_facts(node, inside, NULL, NULL) < 0) goto done;
    int np = 0;
    for (int v = 0; v < nv; v++) {
        uint8_t f = ir->vflags[v];
        PyObject *name = PyTuple_GET_ITEM(ir->names, v);
        vpos[v] = -1;
        vout[v] = (f & VF_ASSIGNED) != 0;
        if (!(f & VF_LOCAL) || (f & VF_HIDDEN)) continue;
        {
            int b = positional ? PySet_Contains(c->bound, name) : 0, d = b > 0 ? PySet_Contains(c->deleted, name) : 0;
            if (b < 0 || d < 0) goto done;
            if (b && !d) vpos[v] = np++;
            else if (live[v]) positional = 0;
        }
        /* a name not live-in, read nowhere else, in no cell: not handed back */
        if (vout[v] && !live[v] && !c->in_try && !intro && c->uses) {
            int cell = PySet_Contains(c->cells, name);
            PyObject *all = PyDict_GetItemWithError(c->uses, name), *in = all ? PyDict_GetItemWithError(inside, name) : NULL;
            if (cell < 0 || PyErr_Occurred()) goto done;
            if (!cell && (!all || (in && PyLong_AsLong(in) >= PyLong_AsLong(all)))) vout[v] = 0;
            if (PyErr_Occurred()) goto done;
        }
    }
    if (positional) *npos = np;
    else for (int v = 0; v < nv; v++) vpos[v] = -1;
    rc = 0;
done:
    PyMem_Free(live);
    Py_XDECREF(inside);
    return rc;
}

/* The loop alone as a function of a dict of the locals it uses, returning
 * its locals at the end:
 *     def <fn name>(__nd_ns):
 *         if 'x' in __nd_ns: x = __nd_ns['x']      (each local it names)
 *         <a copy of the loop>
 *         return locals()
 * A call runs it on real arrays while the loop's C compiles in the
 * background (loop_run.c), at the speed of the function itself, where the
 * loop left in the function would run under the tracer an element at a
 * time. The copy keeps the loop's line numbers and file: tracebacks name
 * the same lines. NULL with an exception. */
static PyObject *python_runner(rctx *c, PyObject *node, const nd_lir *ir)
{
    PyCodeObject *co = (PyCodeObject *)PyFunction_GET_CODE(c->fn);
    PyObject *parts = PyList_New(0), *text = NULL, *tree = NULL, *copy = NULL, *dc = NULL, *r = NULL;
    PyObject *compiled = NULL, *code = NULL;
    if (!parts) return NULL;
    PyObject *head = PyUnicode_FromFormat("def %U(__nd_ns):\n", co->co_name);
    if (!head || PyList_Append(parts, head) < 0) { Py_XDECREF(head); goto done; }
    Py_DECREF(head);
    for (int v = 0; v < ir->nvars; v++) {
        if (!(ir->vflags[v] & VF_LOCAL) || (ir->vflags[v] & VF_HIDDEN)) continue;
        PyObject *nm = PyTuple_GET_ITEM(ir->names, v);
        PyObject *p = PyUnicode_FromFormat("    if '%U' in __nd_ns: %U = __nd_ns['%U']\n", nm, nm, nm);
        if (!p || PyList_Append(parts, p) < 0) { Py_XDECREF(p); goto done; }
        Py_DECREF(p);
    }
    /* in a try block the locals at an exception go back with it */
    PyObject *tail = PyUnicode_FromString(c->in_try ? "    try:\n        pass\n    except BaseException as __nd_e:\n"
                                                      "        __nd_l = locals()\n        __nd_l['__nd_exc'] = __nd_e\n"
                                                      "        return __nd_l\n    return locals()\n"
                                                    : "    pass\n    return locals()\n");
    if (!tail || PyList_Append(parts, tail) < 0) { Py_XDECREF(tail); goto done; }
    Py_DECREF(tail);
    PyObject *sep = PyUnicode_FromString("");
    text = sep ? PyUnicode_Join(sep, parts) : NULL;
    Py_XDECREF(sep);
    if (!text || !(tree = PyObject_CallMethod(mod_ast, "parse", "O", text))) goto done;
    if (place(tree, lineno(node)) < 0) goto done;
    PyObject *cm = PyImport_ImportModule("copy");
    dc = cm ? PyObject_GetAttrString(cm, "deepcopy") : NULL;
    Py_XDECREF(cm);
    if (!dc || !(copy = PyObject_CallOneArg(dc, node))) goto done;
    {
        PyObject *b = PyObject_GetAttrString(tree, "body");
        PyObject *fb = b ? PyObject_GetAttrString(PyList_GET_ITEM(b, 0), "body") : NULL;
        /* the `pass` before the return (in the try's body when in a try) */
        PyObject *host = fb;
        if (fb && c->in_try) host = PyObject_GetAttrString(PyList_GET_ITEM(fb, PyList_GET_SIZE(fb) - 2), "body");
        else Py_XINCREF(host);
        int rc = host ? PyList_SetItem(host, c->in_try ? 0 : PyList_GET_SIZE(host) - 2, Py_NewRef(copy)) : -1;
        Py_XDECREF(host);
        Py_XDECREF(b);
        Py_XDECREF(fb);
        if (rc < 0) goto done;
    }
    {
        PyObject *fm = PyObject_CallMethod(mod_ast, "fix_missing_locations", "O", tree);
        if (!fm) goto done;
        Py_DECREF(fm);
        PyObject *bi = PyEval_GetBuiltins();
        PyObject *cf = bi ? PyDict_GetItemString(bi, "compile") : NULL;
        if (!cf) { PyErr_SetString(PyExc_RuntimeError, "no compile()"); goto done; }
        compiled = PyObject_CallFunction(cf, "OOsii", tree, co->co_filename, "exec", co->co_flags & PyCF_MASK, 1);
    }
    if (!compiled) goto done;
    PyObject *consts = PyObject_GetAttrString(compiled, "co_consts");
    for (Py_ssize_t k = 0; consts && !code && k < PyTuple_GET_SIZE(consts); k++)
        if (PyCode_Check(PyTuple_GET_ITEM(consts, k))) code = Py_NewRef(PyTuple_GET_ITEM(consts, k));
    Py_XDECREF(consts);
    if (!code) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "the loop's Python runner was not compiled");
        goto done;
    }
    r = PyFunction_New(code, c->globals);
done:
    Py_XDECREF(parts);
    Py_XDECREF(text);
    Py_XDECREF(tree);
    Py_XDECREF(copy);
    Py_XDECREF(dc);
    Py_XDECREF(compiled);
    Py_XDECREF(code);
    return r;
}

/* the statements that replace loop `node` (a list), or NULL */
static PyObject *replacement(rctx *c, PyObject *node, nd_lir *ir, PyObject *info)
{
    PyObject *outs = PyList_New(0), *ins = PyList_New(0), *gname = NULL, *region = NULL, *text = NULL;
    PyObject *mod = NULL, *body = NULL, *r = NULL;
    int nv = ir->nvars, npos = -1;
    int *vpos = PyMem_Calloc((size_t)nv + 1, sizeof(int));
    uint8_t *vout = PyMem_Calloc((size_t)nv + 1, 1);
    if (!outs || !ins || !vpos || !vout || io_facts(c, node, ir, vpos, &npos, vout) < 0) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        nd_lir_free(ir);
        goto done;
    }
    for (int k = 0; k < npos; k++)   /* the names passed, in their positions */
        for (int v = 0; v < nv; v++)
            if (vpos[v] == k && PyList_Append(ins, PyTuple_GET_ITEM(ir->names, v)) < 0) { nd_lir_free(ir); goto done; }
    for (int v = 0; v < nv; v++)
        if (vout[v] && PyList_Append(outs, PyTuple_GET_ITEM(ir->names, v)) < 0) {
            nd_lir_free(ir);
            goto done;
        }
    PyObject *py = python_runner(c, node, ir);
    if (!py) { nd_lir_free(ir); goto done; }
    region = nd_loop_region_new(ir, c->globals, info);
    if (region && (nd_loop_region_set_py(region, py, c->in_try) < 0 ||
                   nd_loop_region_set_io(region, vpos, npos, vout) < 0))
        Py_CLEAR(region);
    Py_DECREF(py);
    if (!region) goto done;
    if (!(gname = PyUnicode_FromFormat("__numdyn_loop_%llu__", ++region_counter))) goto done;
    if (PyDict_SetItem(c->globals, gname, region) < 0) goto done;
    {
        /* Python text of the template; names are identifiers from the
         * user's own source, so the text parses */
        PyObject *parts = PyList_New(0), *tup = NULL, *dct = NULL, *sep = NULL;
        Py_ssize_t n = PyList_GET_SIZE(outs);
        if (!parts) goto done;
        /* the call: by position, or locals() */
        PyObject *call = NULL;
        if (npos < 0) {
            call = PyUnicode_FromFormat("%U(locals())", gname);
        } else {
            PyObject *comma = PyUnicode_FromString(", "), *a = comma ? PyUnicode_Join(comma, ins) : NULL;
            call = a ? PyUnicode_FromFormat("%U(%U)", gname, a) : NULL;
            Py_XDECREF(comma);
            Py_XDECREF(a);
        }
        if (!call) { Py_DECREF(parts); goto done; }
        for (Py_ssize_t k = 0; k < n; k++) {
            PyObject *p = PyUnicode_FromFormat("%U, ", PyList_GET_ITEM(outs, k));
            if (!p || PyList_Append(parts, p) < 0) { Py_XDECREF(p); Py_DECREF(parts); goto done; }
            Py_DECREF(p);
        }
        sep = PyUnicode_FromString("");
        tup = sep ? PyUnicode_Join(sep, parts) : NULL;
        Py_DECREF(parts);
        if (!tup) { Py_XDECREF(sep); goto done; }
        parts = PyList_New(0);
        for (Py_ssize_t k = 0; parts && k < n; k++) {
            PyObject *nm = PyList_GET_ITEM(outs, k);
            PyObject *p = PyUnicode_FromFormat("    if '%U' in __nd_r: %U = __nd_r['%U']\n", nm, nm, nm);
            if (!p || PyList_Append(parts, p) < 0) { Py_XDECREF(p); Py_CLEAR(parts); }
            else Py_DECREF(p);
        }
        dct = parts ? PyUnicode_Join(sep, parts) : NULL;
        Py_XDECREF(parts);
        Py_DECREF(sep);
        if (!dct) { Py_DECREF(tup); Py_DECREF(call); goto done; }
        if (c->in_try)   /* a dict then, and the exception the loop raised, if any */
            text = PyUnicode_FromFormat(
                "__nd_r = %U\nif __nd_r is None:\n    pass\n"
                "else:\n%U    if '__nd_exc' in __nd_r:\n        raise __nd_r.pop('__nd_exc')\n",
                call, dct);
        else if (n)
            text = PyUnicode_FromFormat(
                "__nd_r = %U\nif __nd_r is None:\n    pass\n"
                "elif __nd_r.__class__ is ().__class__:\n    (%U) = __nd_r\nelse:\n%U",
                call, tup, dct);
        else
            text = PyUnicode_FromFormat("__nd_r = %U\nif __nd_r is None:\n    pass\n", call);
        Py_DECREF(tup);
        Py_DECREF(dct);
        Py_DECREF(call);
        if (!text) goto done;
    }
    if (!(mod = PyObject_CallMethod(mod_ast, "parse", "O", text))) goto done;
    if (place(mod, lineno(node)) < 0) goto done;
    if (!(body = PyObject_GetAttrString(mod, "body"))) goto done;
    {
        PyObject *iff = PyList_GET_ITEM(body, 1), *ib = PyObject_GetAttrString(iff, "body");
        if (!ib) goto done;
        int rc = PyList_SetItem(ib, 0, Py_NewRef(node));
        Py_DECREF(ib);
        if (rc < 0) goto done;
    }
    r = Py_NewRef(body);
done:
    Py_XDECREF(outs);
    Py_XDECREF(ins);
    PyMem_Free(vpos);
    PyMem_Free(vout);
    Py_XDECREF(gname);
    Py_XDECREF(region);
    Py_XDECREF(text);
    Py_XDECREF(mod);
    Py_XDECREF(body);
    return r;
}

static int is_errstate_with(PyObject *node)
{
    PyObject *items = PyObject_GetAttrString(node, "items");
    int ok = items && PyList_GET_SIZE(items) > 0;
    for (Py_ssize_t k = 0; ok && k < PyList_GET_SIZE(items); k++) {
        PyObject *ce = PyObject_GetAttrString(PyList_GET_ITEM(items, k), "context_expr");
        PyObject *f = ce && !strcmp(kind(ce), "Call") ? PyObject_GetAttrString(ce, "func") : NULL;
        PyObject *a = f && !strcmp(kind(f), "Attribute") ? PyObject_GetAttrString(f, "attr") : NULL;
        ok = a && PyUnicode_Check(a) && PyUnicode_CompareWithASCIIString(a, "errstate") == 0;
        Py_XDECREF(ce);
        Py_XDECREF(f);
        Py_XDECREF(a);
    }
    Py_XDECREF(items);
    PyErr_Clear();
    return ok;
}

static int note(rctx *c, int line, int captured, PyObject *reason, PyObject **entry)
{
    PyObject *e = info_entry(line, captured, reason);
    if (!e || PyList_Append(c->infos, e) < 0) { Py_XDECREF(e); return -1; }
    if (entry) *entry = e;
    else Py_DECREF(e);
    return 0;
}

static int loops_in(rctx *c, PyObject *node, const char *why);

/* statements of list `stmts` (an attribute of a node): loops are tried and
 * replaced in place; `why` (not NULL) forbids capture in this block */
static int block_in(rctx *c, PyObject *stmts, const char *why);

/* the names certainly bound inside the block are not after it */
static int block(rctx *c, PyObject *stmts, const char *why)
{
    if (!stmts || !PyList_Check(stmts)) return 0;
    PyObject *saved = c->bound;
    if (saved && !(c->bound = PySet_New(saved))) { c->bound = saved; return -1; }
    int rc = block_in(c, stmts, why);
    Py_XSETREF(c->bound, saved);
    return rc;
}

static int block_in(rctx *c, PyObject *stmts, const char *why)
{
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(stmts); k++) {
        PyObject *s = PyList_GET_ITEM(stmts, k);
        const char *kd = kind(s);
        if (c->bound && stmt_binds(s, c->bound) < 0) return -1;
        if (!strcmp(kd, "For") || !strcmp(kd, "While")) {
            int ln = lineno(s);
            if (why) {
                PyObject *r = PyUnicode_FromFormat("%s at line %d", why, ln);
                if (!r || note(c, ln, 0, r, NULL) < 0) { Py_XDECREF(r); return -1; }
                Py_DECREF(r);
                if (loops_in(c, s, why) < 0) return -1;
                continue;
            }
            nd_lir ir;
            PyObject *reason = NULL;
            int rc = nd_loop_parse(s, c->locals, c->globals, &ir, &reason);
            if (rc < 0) return -1;
            if (rc == 1) {
                if (note(c, ln, 0, reason, NULL) < 0) { Py_XDECREF(reason); return -1; }
                Py_XDECREF(reason);
                if (loops_in(c, s, NULL) < 0) return -1;
                continue;
            }
            PyObject *entry = NULL;
            if (note(c, ln, 1, NULL, &entry) < 0) { nd_lir_free(&ir); return -1; }
            PyObject *rep = replacement(c, s, &ir, entry);
            Py_DECREF(entry);
            if (!rep) return -1;
            /* splice: stmts[k:k+1] = rep */
            Py_ssize_t nr = PyList_GET_SIZE(rep);
            if (PyList_SetSlice(stmts, k, k + 1, rep) < 0) { Py_DECREF(rep); return -1; }
            Py_DECREF(rep);
            k += nr - 1;
            c->captured++;
            continue;
        }
        if (!strcmp(kd, "If")) {
            if (loops_in(c, s, why) < 0) return -1;
        } else if (!strcmp(kd, "With")) {
            if (loops_in(c, s, why ? why : is_errstate_with(s) ? NULL : "inside a with block") < 0) return -1;
        } else if (!strcmp(kd, "Try") || !strcmp(kd, "TryStar")) {
            c->in_try++;
            int rc = loops_in(c, s, why);
            c->in_try--;
            if (rc < 0) return -1;
        }
    }
    return 0;
}

static int loops_in(rctx *c, PyObject *node, const char *why)
{
    static const char *const lists[] = {"body", "orelse", "finalbody", "handlers"};
    for (int k = 0; k < 4; k++) {
        PyObject *l = PyObject_GetAttrString(node, lists[k]);
        if (!l) { PyErr_Clear(); continue; }
        int rc = 0;
        if (k == 3 && PyList_Check(l)) {
            for (Py_ssize_t j = 0; rc == 0 && j < PyList_GET_SIZE(l); j++) rc = loops_in(c, PyList_GET_ITEM(l, j), why);
        } else {
            rc = block(c, l, why);
        }
        Py_DECREF(l);
        if (rc < 0) return -1;
    }
    return 0;
}

/* the code object named name (first line line) among consts, depth-first */
static PyObject *find_code(PyObject *code, PyObject *name, int depth)
{
    if (depth > 3) return NULL;
    PyObject *consts = PyObject_GetAttrString(code, "co_consts");
    if (!consts) return NULL;
    PyObject *r = NULL;
    for (Py_ssize_t k = 0; !r && k < PyTuple_GET_SIZE(consts); k++) {
        PyObject *x = PyTuple_GET_ITEM(consts, k);
        if (!PyCode_Check(x)) continue;
        if (PyUnicode_Compare(((PyCodeObject *)x)->co_name, name) == 0) r = Py_NewRef(x);
        else r = find_code(x, name, depth + 1);
    }
    Py_DECREF(consts);
    return r;
}

static PyObject *build(PyObject *fn, PyObject *fdef, PyObject *code)
{
    PyCodeObject *co = (PyCodeObject *)code;
    PyObject *freevars = PyObject_GetAttrString(code, "co_freevars");
    PyObject *tree = NULL, *compiled = NULL, *ncode = NULL, *nf = NULL, *nfree = NULL, *cells = NULL;
    if (!freevars) return NULL;
    if (PyTuple_GET_SIZE(freevars)) {
        /* def __numdyn_factory__():  a = b = None;  <fdef> */
        PyObject *sep = PyUnicode_FromString(" = "), *j = sep ? PyUnicode_Join(sep, freevars) : NULL;
        PyObject *t = j ? PyUnicode_FromFormat("def __numdyn_factory__():\n    %U = None\n    pass\n", j) : NULL;
        Py_XDECREF(sep);
        Py_XDECREF(j);
        if (!t) goto done;
        tree = PyObject_CallMethod(mod_ast, "parse", "O", t);
        Py_DECREF(t);
        if (!tree) goto done;
        PyObject *b = PyObject_GetAttrString(tree, "body");
        PyObject *fb = b ? PyObject_GetAttrString(PyList_GET_ITEM(b, 0), "body") : NULL;
        int rc = fb ? PyList_SetItem(fb, 1, Py_NewRef(fdef)) : -1;
        Py_XDECREF(b);
        Py_XDECREF(fb);
        if (rc < 0) goto done;
    } else {
        PyObject *t = PyUnicode_FromString("pass\n");
        tree = t ? PyObject_CallMethod(mod_ast, "parse", "O", t) : NULL;
        Py_XDECREF(t);
        PyObject *b = tree ? PyObject_GetAttrString(tree, "body") : NULL;
        int rc = b ? PyList_SetItem(b, 0, Py_NewRef(fdef)) : -1;
        Py_XDECREF(b);
        if (rc < 0) goto done;
    }
    {
        PyObject *fm = PyObject_CallMethod(mod_ast, "fix_missing_locations", "O", tree);
        if (!fm) goto done;
        Py_DECREF(fm);
    }
    {
        int flags = co->co_flags & PyCF_MASK;
        PyObject *bi = PyEval_GetBuiltins();
        PyObject *cf = bi ? PyDict_GetItemString(bi, "compile") : NULL;
        if (!cf) { PyErr_SetString(PyExc_RuntimeError, "no compile()"); goto done; }
        compiled = PyObject_CallFunction(cf, "OOsii", tree, co->co_filename, "exec", flags, 1);
        if (!compiled) goto done;
    }
    if (!(ncode = find_code(compiled, co->co_name, 0))) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "rewritten function not found");
        goto done;
    }
    /* the closure: the original's cells, matched by name */
    if (!(nfree = PyObject_GetAttrString(ncode, "co_freevars"))) goto done;
    PyObject *cl = PyFunction_GET_CLOSURE(fn);
    if (!(cells = PyTuple_New(PyTuple_GET_SIZE(nfree)))) goto done;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(nfree); k++) {
        PyObject *cell = NULL;
        for (Py_ssize_t j = 0; cl && j < PyTuple_GET_SIZE(freevars); j++)
            if (PyUnicode_Compare(PyTuple_GET_ITEM(freevars, j), PyTuple_GET_ITEM(nfree, k)) == 0)
                cell = PyTuple_GET_ITEM(cl, j);
        if (!cell) { PyErr_SetString(PyExc_RuntimeError, "a free variable of the rewritten function is unknown"); goto done; }
        PyTuple_SET_ITEM(cells, k, Py_NewRef(cell));
    }
    {
        PyObject *qn = PyObject_GetAttrString(fn, "__qualname__");
        if (!qn) goto done;
        nf = PyFunction_NewWithQualName(ncode, PyFunction_GET_GLOBALS(fn), qn);
        Py_DECREF(qn);
    }
    if (!nf) goto done;
    PyObject *d = PyFunction_GET_DEFAULTS(fn), *kd = PyFunction_GET_KW_DEFAULTS(fn);
    if ((d && PyFunction_SetDefaults(nf, d) < 0) || (kd && PyFunction_SetKwDefaults(nf, kd) < 0) ||
        (PyTuple_GET_SIZE(cells) && PyFunction_SetClosure(nf, cells) < 0))
        Py_CLEAR(nf);
done:
    Py_XDECREF(freevars);
    Py_XDECREF(tree);
    Py_XDECREF(compiled);
    Py_XDECREF(ncode);
    Py_XDECREF(nfree);
    Py_XDECREF(cells);
    return nf;
}

static int set_info(PyObject *code, PyObject *infos)
{
    return PyDict_SetItem(info_by_code, code, infos);
}

/* numdyn.config.loop_capture (read when a function is first compiled) */
static int capture_on(void)
{
    return nd_loop_enabled && nd_loop_config;
}

/* NumPy's random methods, routed through numdyn/_rng_calls.py's helper:
 * `<obj>.<name>(args)` becomes `__numdyn_random__(<obj>.<name>, args)`.
 * - Writers: Generator.shuffle / RandomState.shuffle take a generic
 *   element-swap path for anything but an ndarray, which duplicates rows of
 *   a lazy 2-D array; the `out=` of Generator.random / standard_normal /
 *   standard_exponential / standard_gamma / permuted is cast to an ndarray
 *   unchecked (Cython's `<ndarray>out`: a lazy array there raised "Supplied
 *   output array must be contiguous..."). The helper hands NumPy the
 *   arrays' real memory.
 * - Draws (every method below, with or without out=): the fresh array of
 *   draws becomes a traced value, so what the function computes from it is
 *   captured. On an object that is no Generator / RandomState the helper
 *   calls the method as it is. */
static int random_writer(PyObject *node, PyObject *attr)
{
    (void)node;
    static const char *const names[] = {
        "shuffle", "random", "standard_normal", "standard_exponential", "standard_gamma",
        "permuted", "integers", "normal", "uniform", "choice", "permutation", "exponential",
        "poisson", "binomial", "beta", "gamma", "lognormal", "laplace", "logistic", "geometric",
        "multinomial", "multivariate_normal", "dirichlet", "triangular", "vonmises", "wald",
        "weibull", "zipf", "pareto", "power", "rayleigh", "chisquare", "f", "hypergeometric",
        "negative_binomial", "standard_cauchy", "standard_t", "gumbel", "logseries",
        "noncentral_chisquare", "noncentral_f", "randint", "rand", "randn", "random_sample",
        "random_integers", "ranf", "sample", "tomaxint", NULL};
    for (const char *const *d = names; *d; d++)
        if (PyUnicode_CompareWithASCIIString(attr, *d) == 0) return 1;
    return 0;
}

/* The number of calls rewritten, or -1. */
static int rewrite_random_calls(rctx *c, PyObject *fdef)
{
    PyObject *it = PyObject_CallMethod(mod_ast, "walk", "O", fdef), *node, *helper = NULL, *load = NULL;
    int n = 0;
    if (!it) return -1;
    while (n >= 0 && (node = PyIter_Next(it))) {
        if (strcmp(kind(node), "Call") == 0) {
            PyObject *f = PyObject_GetAttrString(node, "func"), *at = NULL, *args = NULL, *name = NULL;
            int w = 0;
            if (f && strcmp(kind(f), "Attribute") == 0 && (at = PyObject_GetAttrString(f, "attr")) &&
                (w = random_writer(node, at)) > 0) {
                if (!load && !(load = PyObject_CallMethod(mod_ast, "Load", NULL))) n = -1;
                if (n >= 0 && !(name = PyObject_CallMethod(mod_ast, "Name", "sO", "__numdyn_random__", load))) n = -1;
                if (n >= 0 && (!(args = PyObject_GetAttrString(node, "args")) || PyList_Insert(args, 0, f) < 0 ||
                               PyObject_SetAttrString(node, "func", name) < 0))
                    n = -1;
                if (n >= 0) n++;
            }
            if (!f || w < 0 || (f && !at && PyErr_Occurred())) n = -1;
            Py_XDECREF(f); Py_XDECREF(at); Py_XDECREF(args); Py_XDECREF(name);
        }
        Py_DECREF(node);
    }
    Py_DECREF(it);
    Py_XDECREF(load);
    if (n < 0 || PyErr_Occurred()) return -1;
    if (n) {
        PyObject *m = PyImport_ImportModule("numdyn._rng_calls");
        helper = m ? PyObject_GetAttrString(m, "random_call") : NULL;
        Py_XDECREF(m);
        if (!helper || PyDict_SetItemString(c->globals, "__numdyn_random__", helper) < 0) n = -1;
        Py_XDECREF(helper);
    }
    return n;
}

/* ---- helper functions the function calls get their loops captured too.
 *
 * Real programs put their loops in helpers (`def transposed(A, ...)` called
 * by the kernel), which the tracer runs as plain Python: a loop there ran
 * in the interpreter while the same loop written in the compiled function
 * runs as C. So every call `name(args)` whose name is, when the function is
 * rewritten, a global bound to a Python function of the user's (not
 * NumPy's or numdyn's) becomes `__numdyn_callee__(name)(args)`: at each
 * call that returns the callee's own rewritten copy -- its loops captured,
 * its calls rewritten the same way -- or the callee itself when it has
 * nothing to capture, is not a plain function (a policy wrapper, a class,
 * a compiled function), or its globals, defaults or closure are not the
 * ones its copy was made with. The name is evaluated where it was, so a
 * rebinding is seen. */

/* type(f).__call__ when it is a user's Python function (f an instance of
 * a user class, not a function, class or method), else NULL (an exception
 * set only on error) */
static PyObject *user_call_method(PyObject *f)
{
    if (PyFunction_Check(f) || PyType_Check(f) || PyMethod_Check(f) || PyCFunction_Check(f))
        return NULL;
    PyObject *call = PyObject_GetAttrString((PyObject *)Py_TYPE(f), "__call__");
    if (!call) { PyErr_Clear(); return NULL; }
    if (nd__user_function(call)) return call;
    Py_DECREF(call);
    return NULL;
}

static PyObject *callee_impl(PyObject *self, PyObject *f)
{
    /* a method of a user object (`self.helper(x)`): its function's copy,
     * bound to the same object */
    if (PyMethod_Check(f) && nd__user_function(PyMethod_GET_FUNCTION(f)) && capture_on()) {
        PyObject *r = callee_impl(self, PyMethod_GET_FUNCTION(f));
        if (!r || r == PyMethod_GET_FUNCTION(f)) { Py_XDECREF(r); return r ? Py_NewRef(f) : NULL; }
        PyObject *m = PyMethod_New(r, PyMethod_GET_SELF(f));
        Py_DECREF(r);
        return m;
    }
    /* an instance of a user class with a Python __call__ (`model(x)`,
     * `self.blocks[0](x)`): that __call__'s copy, bound to the instance */
    PyObject *call = user_call_method(f);
    if (call) {
        PyObject *m = PyMethod_New(call, f);
        Py_DECREF(call);
        if (!m) return NULL;
        PyObject *r = callee_impl(self, m);
        Py_DECREF(m);
        return r;
    }
    if (PyErr_Occurred()) return NULL;
    if (!nd__user_function(f) || !capture_on()) return Py_NewRef(f);
    /* its loops captured and the shim as its `np` (trace_remap.c: one
     * copy per helper, checked at each call) */
    PyObject *r = nd_trace_remap_callee(f);
    if (!r) {
        /* the helper runs as written: a rewrite that failed is not the
         * caller's error */
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return NULL;
        PyErr_Clear();
        return Py_NewRef(f);
    }
    return r;
}

static PyMethodDef callee_def = {"__numdyn_callee__", callee_impl, METH_O,
                                 "numdyn: the loop-captured copy of a helper function, or itself"};
static PyObject *callee_fn;

/* Whether the call of attribute or item `f` (`self.helper`, `obj.part.step`,
 * `ops["act"]`, `self.layers[i]`, `self.blocks[0].forward`) may be a user
 * object's method or a function of the user's held by a container: its
 * root is a name that is a local (self, an argument) or a global bound to
 * something other than a module (a module's functions, NumPy's among
 * them, are remapped by trace_remap.c already, and `np.sum(x)` must stay
 * as written). 1 yes, 0 no, -1 error; *id gets the root's name (a new
 * reference) either way. */
static int method_call_root(rctx *c, PyObject *f, PyObject **id)
{
    PyObject *v = Py_NewRef(f);
    while (v && (strcmp(kind(v), "Attribute") == 0 || strcmp(kind(v), "Subscript") == 0))
        Py_SETREF(v, PyObject_GetAttrString(v, "value"));
    if (!v) return -1;
    int named = strcmp(kind(v), "Name") == 0;
    *id = named ? PyObject_GetAttrString(v, "id") : NULL;
    Py_DECREF(v);
    if (!named) return 0;
    if (!*id) return -1;
    /* an array's own method (x.sum(), x.reshape(...)) is never a user's:
     * left as written, the common case costs nothing */
    static PyObject *ndarray;
    if (!ndarray) {
        PyObject *np = PyImport_ImportModule("numpy");
        ndarray = np ? PyObject_GetAttrString(np, "ndarray") : NULL;
        Py_XDECREF(np);
        if (!ndarray) return -1;
    }
    if (strcmp(kind(f), "Attribute") == 0) {
        PyObject *attr = PyObject_GetAttrString(f, "attr");
        int arrays = attr ? PyObject_HasAttr(ndarray, attr) : -1;
        Py_XDECREF(attr);
        if (arrays) return arrays < 0 ? -1 : 0;
    }
    int local = PySet_Contains(c->locals, *id);
    if (local) return local;
    PyObject *g = PyDict_GetItemWithError(c->globals, *id);
    if (!g) return PyErr_Occurred() ? -1 : 0;  /* a builtin */
    return !PyModule_Check(g);
}

/* The number of calls rewritten, or -1. */
static int rewrite_calls(rctx *c, PyObject *fdef)
{
    if (!callee_fn) {
        if (!(callee_fn = PyCFunction_New(&callee_def, NULL))) return -1;
    }
    PyObject *it = PyObject_CallMethod(mod_ast, "walk", "O", fdef), *node, *load = NULL;
    int n = 0;
    if (!it) return -1;
    while (n >= 0 && (node = PyIter_Next(it))) {
        if (strcmp(kind(node), "Call") == 0) {
            PyObject *f = PyObject_GetAttrString(node, "func"), *id = NULL;
            int method = 0;
            if (f && (strcmp(kind(f), "Attribute") == 0 || strcmp(kind(f), "Subscript") == 0)) {
                method = method_call_root(c, f, &id);
                if (method < 0) n = -1;
            } else if (f && strcmp(kind(f), "Name") == 0) {
                id = PyObject_GetAttrString(f, "id");
            }
            if (n >= 0 && id && !method) {
                int local = PySet_Contains(c->locals, id);
                PyObject *v = local == 0 ? PyDict_GetItemWithError(c->globals, id) : NULL;
                if (local < 0 || (!v && PyErr_Occurred())) n = -1;
                /* a local or a closure's variable may hold a helper too
                 * (`helper(y)` of a function made by a factory): checked
                 * when called */
                else if (local || (v && nd__user_function(v))) method = 1;
                else if (v) {  /* a user object called (`model(x)`): its __call__ */
                    PyObject *call = user_call_method(v);
                    if (call) method = 1;
                    else if (PyErr_Occurred()) n = -1;
                    Py_XDECREF(call);
                }
            }
            if (n >= 0 && method > 0) {
                {
                    PyObject *wrap = NULL, *args = NULL;
                    if (!load && !(load = PyObject_CallMethod(mod_ast, "Load", NULL))) n = -1;
                    if (n >= 0 && !(wrap = PyObject_CallMethod(mod_ast, "Name", "sO", "__numdyn_callee__", load))) n = -1;
                    if (n >= 0 && !(args = PyList_New(1))) n = -1;
                    if (n >= 0) {
                        PyList_SET_ITEM(args, 0, Py_NewRef(f));
                        PyObject *kws = PyList_New(0);
                        PyObject *call = kws ? PyObject_CallMethod(mod_ast, "Call", "OOO", wrap, args, kws) : NULL;
                        PyObject *loc = call ? PyObject_CallMethod(mod_ast, "copy_location", "OO", call, f) : NULL;
                        if (!loc || PyObject_SetAttrString(node, "func", call) < 0) n = -1;
                        else n++;
                        Py_XDECREF(loc);
                        Py_XDECREF(call);
                        Py_XDECREF(kws);
                    }
                    Py_XDECREF(wrap);
                    Py_XDECREF(args);
                }
            }
            if (!f || (!id && PyErr_Occurred())) n = -1;
            Py_XDECREF(f);
            Py_XDECREF(id);
        }
        Py_DECREF(node);
    }
    Py_DECREF(it);
    Py_XDECREF(load);
    if (n < 0 || PyErr_Occurred()) return -1;
    if (n && PyDict_SetItemString(c->globals, "__numdyn_callee__", callee_fn) < 0) return -1;
    return n;
}

PyObject *nd_loop_rewrite(PyObject *fn)
{
    if (!PyFunction_Check(fn) || !capture_on()) return Py_NewRef(fn);
    PyObject *code = PyFunction_GET_CODE(fn);
    PyCodeObject *co = (PyCodeObject *)code;
    if (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE))
        return Py_NewRef(fn);
    if (init() < 0) return NULL;
    PyObject *src = NULL, *ded = NULL, *tree = NULL, *fdef = NULL, *body = NULL, *nf = NULL;
    rctx c = {fn, NULL, PyFunction_GET_GLOBALS(fn), NULL, 0, 0, NULL, NULL, NULL, NULL, 0};
    if (!(c.infos = PyList_New(0))) return NULL;
    if (!(src = PyObject_CallOneArg(getsource, fn))) {
        /* no source (a lambda in a REPL, exec'd code): nothing to capture */
        if (!PyErr_ExceptionMatches(PyExc_Exception)) goto fail;
        PyErr_Clear();
        goto plain;
    }
    if (!(ded = PyObject_CallOneArg(dedent, src))) goto fail;
    if (!(tree = PyObject_CallMethod(mod_ast, "parse", "O", ded))) {
        if (!PyErr_ExceptionMatches(PyExc_SyntaxError)) goto fail;
        PyErr_Clear();
        goto plain;
    }
    {
        PyObject *b = PyObject_GetAttrString(tree, "body");
        if (!b) goto fail;
        if (PyList_GET_SIZE(b) != 1 || strcmp(kind(PyList_GET_ITEM(b, 0)), "FunctionDef") != 0) {
            Py_DECREF(b);
            goto plain;   /* a lambda, a decorated class... */
        }
        fdef = Py_NewRef(PyList_GET_ITEM(b, 0));
        Py_DECREF(b);
        PyObject *nm = PyObject_GetAttrString(fdef, "name");
        int same = nm && PyUnicode_Compare(nm, co->co_name) == 0;
        Py_XDECREF(nm);
        if (!same) { PyErr_Clear(); goto plain; }
    }
    {
        PyObject *r = PyObject_CallMethod(mod_ast, "increment_lineno", "Oi", tree, co->co_firstlineno - 1);
        if (!r) goto fail;
        Py_DECREF(r);
        PyObject *empty = PyList_New(0);
        if (!empty || PyObject_SetAttrString(fdef, "decorator_list", empty) < 0) { Py_XDECREF(empty); goto fail; }
        Py_DECREF(empty);
    }
    /* the local names; `locals` itself must be the builtin */
    {
        PyObject *vn = PyObject_GetAttrString(code, "co_varnames"), *cv = PyObject_GetAttrString(code, "co_cellvars");
        PyObject *fv = PyObject_GetAttrString(code, "co_freevars");
        int bad = !vn || !cv || !fv || !(c.locals = PySet_New(vn));
        for (Py_ssize_t k = 0; !bad && k < PyTuple_GET_SIZE(cv); k++) bad = PySet_Add(c.locals, PyTuple_GET_ITEM(cv, k)) < 0;
        for (Py_ssize_t k = 0; !bad && k < PyTuple_GET_SIZE(fv); k++) bad = PySet_Add(c.locals, PyTuple_GET_ITEM(fv, k)) < 0;
        if (bad) {
            Py_XDECREF(vn); Py_XDECREF(cv); Py_XDECREF(fv);
            goto fail;
        }
        Py_DECREF(vn); Py_DECREF(cv); Py_DECREF(fv);
        PyObject *ln = PyUnicode_FromString("locals");
        int shadow = ln ? PySet_Contains(c.locals, ln) : -1;
        if (shadow == 0) shadow = PyDict_Contains(c.globals, ln);
        Py_XDECREF(ln);
        if (shadow < 0) goto fail;
        if (shadow) goto plain;
    }
    if (!(body = PyObject_GetAttrString(fdef, "body"))) goto fail;
    if (function_facts(&c, fdef, code) < 0) goto fail;
    if (block(&c, body, NULL) < 0) goto fail;
    int shuffles = rewrite_random_calls(&c, fdef);
    if (shuffles < 0) goto fail;
    int calls = rewrite_calls(&c, fdef);
    if (calls < 0) goto fail;
    if (c.captured || shuffles || calls) {
        if (getenv("NUMDYN_LOOP_DEBUG")) {
            PyObject *u = PyObject_CallMethod(mod_ast, "unparse", "O", fdef);
            if (u) { PySys_FormatStderr("%U\n", u); Py_DECREF(u); } else PyErr_Clear();
        }
        nf = build(fn, fdef, code);
        plain_last_code = plain_last = plain_miss_code = NULL;
        if (nf && PyDict_SetItem(plain_by_code, code, nf) < 0) goto fail;
        if (!nf) {
            /* the rewrite failed to compile: say so, run the original */
            PyObject *why = PyUnicode_FromString("the rewritten function did not compile");
            PyErr_Clear();
            for (Py_ssize_t k = 0; why && k < PyList_GET_SIZE(c.infos); k++) {
                PyObject *e = PyList_GET_ITEM(c.infos, k);
                PyDict_SetItemString(e, "captured", Py_False);
                PyDict_SetItemString(e, "reason", why);
            }
            Py_XDECREF(why);
        }
    }
plain:
    facts_clear(&c);
    if (set_info(code, c.infos) < 0) goto fail;
    Py_XDECREF(src); Py_XDECREF(ded); Py_XDECREF(tree); Py_XDECREF(fdef); Py_XDECREF(body);
    Py_XDECREF(c.locals);
    Py_DECREF(c.infos);
    return nf ? nf : Py_NewRef(fn);
fail:
    facts_clear(&c);
    Py_XDECREF(src); Py_XDECREF(ded); Py_XDECREF(tree); Py_XDECREF(fdef); Py_XDECREF(body);
    Py_XDECREF(c.locals);
    Py_DECREF(c.infos);
    Py_XDECREF(nf);
    return NULL;
}

PyObject *nd_loop_plain(PyObject *fn)
{
    if (!plain_by_code || !PyFunction_Check(fn)) return Py_NewRef(fn);
    PyObject *code = PyFunction_GET_CODE(fn), *p = plain_last;
    if (code == plain_miss_code) return Py_NewRef(fn);
    if (code != plain_last_code) {
        p = PyDict_GetItemWithError(plain_by_code, code);
        if (!p) {
            if (PyErr_Occurred()) return NULL;
            plain_miss_code = code;
            return Py_NewRef(fn);
        }
        plain_last_code = code;
        plain_last = p;
    }
    /* the copy was made with fn's globals, defaults and closure cells: a
     * function of the same code made with others (a closure of another
     * call, defaults set since) gets none of them from it */
    PyObject *d = PyFunction_GET_DEFAULTS(fn), *kd = PyFunction_GET_KW_DEFAULTS(fn);
    PyObject *pd = PyFunction_GET_DEFAULTS(p), *pkd = PyFunction_GET_KW_DEFAULTS(p);
    if (PyFunction_GET_GLOBALS(p) != PyFunction_GET_GLOBALS(fn) || d != pd || kd != pkd)
        return Py_NewRef(fn);
    PyObject *cl = PyFunction_GET_CLOSURE(fn), *pcl = PyFunction_GET_CLOSURE(p);
    for (Py_ssize_t k = 0; pcl && k < PyTuple_GET_SIZE(pcl); k++) {
        int found = 0;
        for (Py_ssize_t j = 0; cl && j < PyTuple_GET_SIZE(cl) && !found; j++)
            found = PyTuple_GET_ITEM(cl, j) == PyTuple_GET_ITEM(pcl, k);
        if (!found) return Py_NewRef(fn);
    }
    return Py_NewRef(p);
}

PyObject *nd_loop_info(PyObject *code)
{
    if (!info_by_code) return PyList_New(0);
    PyObject *r = PyDict_GetItemWithError(info_by_code, code);
    if (r) return PyList_GetSlice(r, 0, PyList_GET_SIZE(r));
    return PyErr_Occurred() ? NULL : PyList_New(0);
}
