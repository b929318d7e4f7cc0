/* trace_escapes.c -- values the function left in Python objects.
 *
 * The compiled function's result is materialized when it returns, but the
 * function may also have stored lazy values where its caller will find
 * them: `history.append(loss)` into a list argument, `self.best = err` on
 * an object, `STATS["n"] = a.sum()` in a global dict, a `nonlocal` cell.
 * Under NumPy those hold ndarrays and NumPy scalars (np.float64 is a
 * Python float: json.dumps, PyFloat_Check and type() accept it); a
 * LazyArray left there is not one. When the call ends, the objects the
 * function could reach from outside -- its arguments, its bound self, its
 * closure cells and its globals -- and the returned objects are walked
 * (lists, dicts, tuples, instances' __dict__, a few levels deep and a
 * bounded number of objects) and every lazy value of this call found there
 * is replaced in place by its concrete value, all computed in one flush.
 *
 * The walk is paid for by counting references first (none_escaped): the
 * live lazy values' reference counts, less what the returned containers
 * and the values' own base links hold, is how many references the walk has
 * to find. Zero -- nearly every call -- means no walk at all: a module's
 * data (a list of 5000 floats, a table of settings) is not visited on each
 * warm call. Otherwise the walk stops once it has found them all, and it
 * looks where stores usually go first: the globals' and cells' own values
 * before anything under them. A reference it cannot attribute (a set, a C
 * object, a generator) leaves the count unknown: then it walks everything,
 * within its bounds.
 */
#include "trace_internal.h"
#include <string.h>

#define MAX_DEPTH 4
#define MAX_OBJECTS 4096        /* containers entered per walk */
#define MAX_ITEMS (1 << 16)     /* items looked at per walk */

typedef struct {
    PyObject *sites;   /* list of (container, key): key None for a cell */
    PyObject *seen;    /* set of ids of containers visited */
    nd_trace *t;
    int budget;        /* containers left to enter */
    Py_ssize_t items;  /* items left to look at */
    Py_ssize_t missing; /* references to lazy values still to find; -1: unknown */
    int attrs_only;    /* walking the result: its containers are materialized
                        * with it, only objects' attributes are sites */
} walk;

static int walk_done(const walk *w)
{
    return w->budget <= 0 || w->items <= 0 || w->missing == 0;
}

/* a lazy value of this call (a proxy still attached to trace t) */
static int ours(nd_trace *t, PyObject *o)
{
    return o && nd_proxy_check(o) && ((NdProxy *)o)->st && ((NdProxy *)o)->st->trace == t;
}

/* container[key] holds a lazy value (own: the value itself, not a tuple
 * holding some: those were counted inside the tuple) */
static int note(walk *w, PyObject *container, PyObject *key, int own)
{
    if (own && w->missing > 0) w->missing--;
    PyObject *site = PyTuple_Pack(2, container, key ? key : Py_None);
    if (!site) return -1;
    int rc = PyList_Append(w->sites, site);
    Py_DECREF(site);
    return rc;
}

static int visit(walk *w, PyObject *o, int depth);

/* direct: note d's own lazy values (0: a first pass already did) */
static int visit_dict(walk *w, PyObject *d, int depth, int direct)
{
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (!walk_done(w) && PyDict_Next(d, &pos, &k, &v)) {
        w->items--;
        int own = ours(w->t, v);
        if (own && !direct) continue;
        int r = own ? 2 : visit(w, v, depth + 1);
        if (r < 0) return -1;
        if (r == 2 && !w->attrs_only && note(w, d, k, own) < 0) return -1;
    }
    return 0;
}

/* a container worth entering: lists, tuples, exact dicts, and instances of
 * user classes (their __dict__) -- never modules, classes or functions,
 * whose contents are the program, not its data. 2: o is a tuple holding
 * lazy values, to be replaced whole by its holder; 0: done; -1: error */
static int visit(walk *w, PyObject *o, int depth)
{
    if (depth > MAX_DEPTH || walk_done(w)) return 0;
    int seq = PyList_Check(o) || PyTuple_Check(o);
    PyObject *dict = NULL;
    if (!seq && !PyDict_CheckExact(o)) {
        /* (functions, methods and builtins are not heap-type instances;
         * an object with __call__, a model, is one of the user's) */
        if (!(Py_TYPE(o)->tp_flags & Py_TPFLAGS_HEAPTYPE) || Py_TYPE(o)->tp_dictoffset == 0 ||
            PyArray_Check(o) || nd_proxy_check(o) || PyType_Check(o) || PyModule_Check(o))
            return 0;
        dict = PyObject_GenericGetDict(o, NULL);
        if (!dict || !PyDict_Check(dict)) {
            Py_XDECREF(dict);
            PyErr_Clear();
            return 0;
        }
    }
    /* the result's own containers are not marked seen: one also bound to
     * a global (`HIST.append(v); return HIST`) is a site the later walk
     * of the globals must still find */
    if (dict || !w->attrs_only) {
        PyObject *id = PyLong_FromVoidPtr(o);
        int fresh = id && PySet_Contains(w->seen, id) == 0 ? PySet_Add(w->seen, id) == 0 : 0;
        Py_XDECREF(id);
        if (PyErr_Occurred() || !fresh) {
            Py_XDECREF(dict);
            return PyErr_Occurred() ? -1 : 0;
        }
    }
    w->budget--;
    if (dict) {
        /* below an object nothing is materialized with the result */
        int saved = w->attrs_only;
        w->attrs_only = 0;
        int rc = visit_dict(w, dict, depth, 1);
        w->attrs_only = saved;
        Py_DECREF(dict);
        return rc;
    }
    if (PyDict_CheckExact(o)) return visit_dict(w, o, depth, 1);
    int held = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o) && !walk_done(w); i++) {
        w->items--;
        PyObject *v = PySequence_Fast_GET_ITEM(o, i);
        int own = ours(w->t, v);
        int r = own ? 2 : visit(w, v, depth + 1);
        if (r < 0) return -1;
        if (r != 2) continue;
        if (PyTuple_Check(o)) {
            held = 1;
            if (own && !w->attrs_only && w->missing > 0) w->missing--;
        } else if (!w->attrs_only) {
            PyObject *k = PyLong_FromSsize_t(i);
            int rc = k ? note(w, o, k, own) : -1;
            Py_XDECREF(k);
            if (rc < 0) return -1;
        }
    }
    /* a tuple cannot take a value: its holder gets a rebuilt one */
    return held ? 2 : 0;
}

/* fn's bound self and closure cells; deep: what is under their values
 * (0: only the cells' own lazy values) */
static int visit_function(walk *w, PyObject *fn, int deep)
{
    if (PyMethod_Check(fn)) {
        if (deep && visit(w, PyMethod_GET_SELF(fn), 0) < 0) return -1;
        fn = PyMethod_GET_FUNCTION(fn);
    }
    if (!PyFunction_Check(fn)) return 0;
    PyObject *cells = PyFunction_GET_CLOSURE(fn);
    for (Py_ssize_t i = 0; cells && i < PyTuple_GET_SIZE(cells) && !walk_done(w); i++) {
        PyObject *c = PyTuple_GET_ITEM(cells, i), *v = PyCell_GET(c);
        if (!v) continue;
        int own = ours(w->t, v);
        if (own == deep) continue;  /* own values: the first pass's */
        int r = own ? 2 : visit(w, v, 1);
        if (r < 0) return -1;
        if (r == 2 && note(w, c, NULL, own) < 0) return -1;
    }
    return 0;
}

/* References to live proxies of t held by the result tree: its lists,
 * tuples and exact dicts that only the tree holds (refcount 1 -- a list
 * also bound to a global is not the result's alone). -1: a shared
 * container, or too big to count. */
static Py_ssize_t result_refs(nd_trace *t, PyObject *o, int depth, Py_ssize_t *items)
{
    if (nd_proxy_check(o)) return ours(t, o);
    int seq = PyList_CheckExact(o) || PyTuple_CheckExact(o);
    if (!seq && !PyDict_CheckExact(o)) return 0;
    if (depth > MAX_DEPTH || Py_REFCNT(o) != 1) return -1;
    Py_ssize_t n = 0, r;
    if (seq) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(o); i++) {
            if (--*items < 0) return -1;
            if ((r = result_refs(t, PySequence_Fast_GET_ITEM(o, i), depth + 1, items)) < 0)
                return -1;
            n += r;
        }
        return n;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(o, &pos, &k, &v)) {
        if (--*items < 0) return -1;
        if ((r = result_refs(t, v, depth + 1, items)) < 0) return -1;
        n += r;
    }
    return n;
}

/* How many references to t's live proxies something other than the
 * result tree (held by the caller by one reference) and the proxies' own
 * base links holds: what a walk has to find. -1: unknown. */
static Py_ssize_t unexplained_refs(nd_trace *t, PyObject *result)
{
    if (!result) return -1;  /* an exception's traceback holds the frames */
    Py_ssize_t held = 0, n = 0;
    for (NdProxy *p = t->proxies; p; p = p->next) {
        if (++n > MAX_ITEMS) return -1;
        held += Py_REFCNT((PyObject *)p) - ours(t, p->base) - ours(t, p->vbase);
    }
    Py_ssize_t items = MAX_ITEMS;
    Py_ssize_t r = result_refs(t, result, 0, &items);
    return r < 0 || r > held ? -1 : held - r;
}

/* 0: nothing found, 1: values replaced, -1: error */
int nd__settle_escapes(nd_trace *t, PyObject *fn, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames, PyObject *result)
{
    if (!t->proxies) return 0;  /* no lazy value of this call is alive */
    Py_ssize_t missing = unexplained_refs(t, result);
    if (missing == 0) return 0;
    nd_counter_add(ND_CTR_ESCAPE_WALKS, 1);
    walk w = {PyList_New(0), PySet_New(NULL), t, MAX_OBJECTS, MAX_ITEMS, missing, 0};
    int rc = -1;
    if (!w.sites || !w.seen) goto done;
    Py_ssize_t ntot = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    for (Py_ssize_t i = 0; i < ntot; i++)
        if (visit(&w, args[i], 0) < 0) goto done;
    /* where stores usually go first: cells' and globals' own values */
    PyObject *f = PyMethod_Check(fn) ? PyMethod_GET_FUNCTION(fn) : fn;
    PyObject *g = PyFunction_Check(f) ? PyFunction_GET_GLOBALS(f) : NULL;
    if (g && !PyDict_Check(g)) g = NULL;
    if (visit_function(&w, fn, 0) < 0) goto done;
    if (g) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (!walk_done(&w) && PyDict_Next(g, &pos, &k, &v))
            if (ours(t, v) && note(&w, g, k, 1) < 0) goto done;
    }
    /* the result's own lists/dicts/tuples are materialized with it; what
     * they cannot reach is an object built in the function (a dataclass,
     * a user class) holding lazy values in its attributes */
    w.attrs_only = 1;
    if (result && visit(&w, result, 0) < 0) goto done;
    w.attrs_only = 0;
    if (visit_function(&w, fn, 1) < 0) goto done;
    /* the globals dict is walked one level shallower: a module's names are
     * many, the data under them is what the function changed */
    if (g && !walk_done(&w) && visit_dict(&w, g, 2, 0) < 0) goto done;
    Py_ssize_t n = PyList_GET_SIZE(w.sites);
    if (!n) { rc = 0; goto done; }
    PyObject *vals = PyTuple_New(n);
    if (!vals) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *site = PyList_GET_ITEM(w.sites, i);
        PyObject *c = PyTuple_GET_ITEM(site, 0), *k = PyTuple_GET_ITEM(site, 1), *v;
        if (PyCell_Check(c)) v = PyCell_GET(c);
        else if (PyList_Check(c)) v = PyList_GET_ITEM(c, PyLong_AsSsize_t(k));
        else v = PyDict_GetItemWithError(c, k);
        if (!v) { Py_DECREF(vals); goto done; }
        PyTuple_SET_ITEM(vals, i, Py_NewRef(v));
    }
    PyObject *conc = nd__materialize_tree(vals, 1);  /* one flush for all */
    Py_DECREF(vals);
    if (!conc) goto done;
    rc = 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        PyObject *site = PyList_GET_ITEM(w.sites, i);
        PyObject *c = PyTuple_GET_ITEM(site, 0), *k = PyTuple_GET_ITEM(site, 1);
        PyObject *v = PyTuple_GET_ITEM(conc, i);
        if (PyCell_Check(c)) rc = PyCell_Set(c, v);
        else if (PyList_Check(c)) rc = PyList_SetItem(c, PyLong_AsSsize_t(k), Py_NewRef(v));
        else rc = PyDict_SetItem(c, k, v);
    }
    Py_DECREF(conc);
    if (rc == 0) rc = 1;
done:
    Py_XDECREF(w.sites);
    Py_XDECREF(w.seen);
    return rc;
}

/* ---------------------------------------------- containers passed in
 * A list or dict argument holding arrays is traced through a copy whose
 * arrays are proxies (nd_map_leaves builds it). What the function does to
 * that copy -- append, item assignment, del, pop -- is the caller's under
 * NumPy, so when the call ends it is reflected into the caller's own
 * container: the argument arrays go back as themselves (identity kept;
 * their in-place writes land through their storages), copies of nested
 * containers as their originals, anything else as it is (lazy values then
 * settle as above). pairs (built before the call, while the copy still has
 * the original's shape): (containers, leaves), dicts id(copy) -> (copy,
 * original). */

static int pair_walk(PyObject *o, PyObject *w, PyObject *cmap, PyObject *lmap, int depth)
{
    if (o == w || depth > 16) return 0;
    PyObject *map = NULL;
    if (PyArray_Check(o) && nd_proxy_check(w)) map = lmap;
    else if ((PyList_Check(o) && PyList_Check(w)) || (PyDict_Check(o) && PyDict_Check(w)) ||
             (PyTuple_Check(o) && PyTuple_Check(w)))
        map = cmap;
    if (!map) return 0;
    PyObject *key = PyLong_FromVoidPtr(w), *val = PyTuple_Pack(2, w, o);
    int rc = key && val ? PyDict_SetItem(map, key, val) : -1;
    Py_XDECREF(key);
    Py_XDECREF(val);
    if (rc < 0 || map == lmap) return rc;
    if (PyDict_Check(o)) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(o, &pos, &k, &v)) {
            PyObject *wv = PyDict_GetItemWithError(w, k);
            if (!wv) { if (PyErr_Occurred()) return -1; continue; }
            if (pair_walk(v, wv, cmap, lmap, depth + 1) < 0) return -1;
        }
        return 0;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    if (n != PySequence_Fast_GET_SIZE(w)) return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (pair_walk(PySequence_Fast_GET_ITEM(o, i), PySequence_Fast_GET_ITEM(w, i), cmap, lmap,
                      depth + 1) < 0)
            return -1;
    return 0;
}

PyObject *nd__arg_pairs(PyObject *const *args, PyObject *const *wrapped, Py_ssize_t n)
{
    int copied = 0;
    for (Py_ssize_t k = 0; k < n && !copied; k++)
        copied = args[k] != wrapped[k] && !PyArray_Check(args[k]);
    if (!copied) return Py_NewRef(Py_None);
    PyObject *cmap = PyDict_New(), *lmap = PyDict_New(), *r = NULL;
    if (!cmap || !lmap) goto done;
    for (Py_ssize_t k = 0; k < n; k++)
        if (!PyArray_Check(args[k]) && pair_walk(args[k], wrapped[k], cmap, lmap, 0) < 0) goto done;
    r = PyTuple_Pack(2, cmap, lmap);
done:
    Py_XDECREF(cmap);
    Py_XDECREF(lmap);
    return r;
}

/* the original a copy or proxy stands for (borrowed), or NULL */
static PyObject *original(PyObject *map, PyObject *w)
{
    PyObject *key = PyLong_FromVoidPtr(w);
    if (!key) return NULL;
    PyObject *e = PyDict_GetItemWithError(map, key);
    Py_DECREF(key);
    return e && PyTuple_GET_ITEM(e, 0) == w ? PyTuple_GET_ITEM(e, 1) : NULL;
}

static int reflect(PyObject *pairs, PyObject *o, PyObject *w, PyObject *done);

static PyObject *unwrapped(PyObject *pairs, PyObject *e, PyObject *done)
{
    PyObject *cmap = PyTuple_GET_ITEM(pairs, 0), *lmap = PyTuple_GET_ITEM(pairs, 1), *o;
    if ((o = original(lmap, e))) return Py_NewRef(o);
    if (PyErr_Occurred()) return NULL;
    if ((o = original(cmap, e))) return reflect(pairs, o, e, done) < 0 ? NULL : Py_NewRef(o);
    return PyErr_Occurred() ? NULL : Py_NewRef(e);
}

/* o takes w's contents, unwrapped; 1 if o changed */
static int reflect(PyObject *pairs, PyObject *o, PyObject *w, PyObject *done)
{
    PyObject *key = PyLong_FromVoidPtr(o);
    int seen = key ? PySet_Contains(done, key) : -1;
    if (seen == 0) seen = PySet_Add(done, key);
    Py_XDECREF(key);
    if (seen != 0) return seen < 0 ? -1 : 0;
    int changed = 0;
    if (PyTuple_Check(o)) {  /* immutable: only what it holds may have changed */
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o) && i < PyTuple_GET_SIZE(w); i++) {
            PyObject *u = unwrapped(pairs, PyTuple_GET_ITEM(w, i), done);
            if (!u) return -1;
            Py_DECREF(u);
        }
        return 0;
    }
    if (PyList_Check(o)) {
        Py_ssize_t n = PyList_GET_SIZE(w);
        PyObject *nl = PyList_New(n);
        if (!nl) return -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *u = unwrapped(pairs, PyList_GET_ITEM(w, i), done);
            if (!u) { Py_DECREF(nl); return -1; }
            PyList_SET_ITEM(nl, i, u);
            changed |= i >= PyList_GET_SIZE(o) || PyList_GET_ITEM(o, i) != u;
        }
        changed |= n != PyList_GET_SIZE(o);
        int rc = changed ? PyList_SetSlice(o, 0, PyList_GET_SIZE(o), nl) : 0;
        Py_DECREF(nl);
        return rc < 0 ? -1 : changed;
    }
    /* a dict the function left as it was -- the common case, a dict of
     * parameters read by the function -- is told by one walk of both in
     * order: the same keys, each value the original's own (or its proxy
     * or copy, whose own changes unwrapped reflects). Otherwise: */
    if (PyDict_GET_SIZE(o) == PyDict_GET_SIZE(w)) {
        Py_ssize_t po = 0, pw = 0;
        PyObject *ko, *vo, *kw, *vw;
        int same = 1;
        while (same && PyDict_Next(w, &pw, &kw, &vw)) {
            if (!PyDict_Next(o, &po, &ko, &vo) || ko != kw) { same = 0; break; }
            PyObject *u = unwrapped(pairs, vw, done);
            if (!u) return -1;
            same = u == vo;
            Py_DECREF(u);
        }
        if (same) return 0;
    }
    /* the copy's items, in its order */
    PyObject *nd = PyDict_New();
    if (!nd) return -1;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    changed = PyDict_GET_SIZE(o) != PyDict_GET_SIZE(w);
    while (PyDict_Next(w, &pos, &k, &v)) {
        PyObject *u = unwrapped(pairs, v, done);
        if (!u || PyDict_SetItem(nd, k, u) < 0) { Py_XDECREF(u); Py_DECREF(nd); return -1; }
        PyObject *ov = PyDict_GetItemWithError(o, k);
        if (!ov && PyErr_Occurred()) { Py_DECREF(u); Py_DECREF(nd); return -1; }
        changed |= ov != u;
        Py_DECREF(u);
    }
    if (!changed) {  /* same items: the order too? */
        PyObject *ko = PyDict_Keys(o), *kw = PyDict_Keys(nd);
        int eq = ko && kw ? PyObject_RichCompareBool(ko, kw, Py_EQ) : -1;
        Py_XDECREF(ko);
        Py_XDECREF(kw);
        if (eq < 0) { Py_DECREF(nd); return -1; }
        changed = !eq;
    }
    int rc = 0;
    if (changed) {
        PyDict_Clear(o);
        rc = PyDict_Update(o, nd);
    }
    Py_DECREF(nd);
    return rc < 0 ? -1 : changed;
}

int nd__reflect_args(PyObject *pairs, PyObject *const *args, PyObject *const *wrapped, Py_ssize_t n)
{
    if (pairs == Py_None) return 0;
    PyObject *done = PySet_New(NULL);
    if (!done) return -1;
    int changed = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (args[k] == wrapped[k] || PyArray_Check(args[k])) continue;
        int c = 0;
        if (PyList_Check(args[k]) || PyDict_Check(args[k]) || PyTuple_Check(args[k]))
            c = reflect(pairs, args[k], wrapped[k], done);
        if (c < 0) { Py_DECREF(done); return -1; }
        changed |= c;
    }
    Py_DECREF(done);
    return changed;
}
