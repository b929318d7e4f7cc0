/* trace_replay.c -- later calls of a compiled function without its Python.
 *
 * Soundness rests on two independent checks; both must pass:
 *
 * 1. A bytecode scan, once per function (its code and every code object
 *    nested in it): only an allowlist of instructions (locals, constants,
 *    operators, calls, subscripts, attribute loads, containers, jumps and
 *    loops); no imports, no stores to globals or attributes, no try/with,
 *    no generators; a closure cell may not be rebound. Every global it loads
 *    must be immutable data (numbers, str, NumPy scalars/dtypes, tuples of
 *    those), the numpy module or the shim, a NumPy ufunc, a function the
 *    shim replaces, an allow_in_graph function, or one of a few pure
 *    builtins (len, range, abs, min, ...; not print). Those globals, the
 *    closure cells and the defaults are guarded by identity on every call.
 *    Attribute loads of side-effecting NumPy state (np.random, np.seterr,
 *    np.save...) are refused. So a call can only compute from its
 *    arguments, and whatever Python code decides is decided by guarded
 *    things -- or by array contents, which check 2 catches.
 *
 * 2. The capture itself (hooks in trace_flush.c): array contents must never
 *    have reached Python code (no graph break, no element read, no
 *    materialization before the return), the only flush is the return
 *    value's, every graph input is an argument, every caller array written
 *    is an argument whose final value that flush computed (replay writes it
 *    back the same way; a written argument may not share memory with
 *    another argument, at record time or replay time), and the return value
 *    is made of computed arrays, arguments returned as they are, and
 *    immutable constants.
 *
 * Arguments are guarded exactly (guards/fn_guards.h, guards/replay_guard.c):
 * a changed shape, dtype, layout or scalar value records another entry, up
 * to numdyn.config.cache_size_limit entries; each miss has a reason that
 * NUMDYN_LOGS=recompiles logs. The scan's globals, cells and functions are
 * guarded there too (nd_envguards).
 *
 * Replay binds the new arrays to the recorded graph's INPUT nodes and runs
 * it with the function's backend (a native graph-cache hit: one structural
 * hash, one lookup, the kernels), then rebuilds the return value.
 */
#include "trace_order.h"
#include "guards/guards.h"
#include "graph/hash.h"
#include <string.h>

_Thread_local nd_replay_rec *nd__tls_rec;

enum { T_TUPLE, T_LIST, T_DICT, T_OUT, T_OUTSCALAR, T_ARG, T_CONST, T_OUTVIEW, T_ARGVIEW, T_NAMEDTUPLE };

typedef struct {
    uint8_t kind;
    int32_t n;        /* containers: number of children */
    int32_t idx;      /* OUT(VIEW): output index; ARG(VIEW): argument index */
    PyObject *obj;    /* owned: CONST value; DICT: tuple of keys; *VIEW: a
                         view_spec capsule-free tuple, see view_spec() */
} tnode;

/* Chunks (trace_flush.c nd__flush_chunk): a long run of lazy statements is
 * flushed in chunks of a bounded graph, and a replay runs them as steps
 * before the return flush's graph. A step's INPUT node takes an argument,
 * a result of the step run just before it (PREV), or the last result of an
 * earlier distinct step (STEP). Consecutive chunks equal in every node and
 * binding are one step run `repeat` times, so 100,000 iterations keep one
 * or two graphs, not 50; a call whose chunks differ more than MAX_STEPS
 * times (a loop index baked into each) is not recorded. */
enum { B_ARG, B_PREV, B_STEP };
#define MAX_STEPS 16

typedef struct {
    nd_id node;                /* INPUT node of the step's graph ... */
    uint8_t kind;              /* ... takes B_ARG: argument idx (while
                                  recording: the array `arg`), B_PREV: result
                                  idx of the step before, B_STEP: result idx
                                  of distinct step `step` */
    int32_t step, idx;
    PyObject *arg;             /* borrowed, recording only */
} cbind;

typedef struct {
    nd_graph *g;               /* owned; INPUT objs NULL between runs */
    nd_id *outs;
    int nout;
    cbind *b;
    int nb;
    long repeat;
    uint64_t key;              /* g's program-cache key (0: not known) for ... */
    uint64_t ikey;             /* ... inputs of these guard keys (replay_key) */
} cstep;

typedef struct nd_chain {
    cstep *s;
    int n, cap;
    PyObject *prev;            /* recording: results of the last chunk run */
    PyObject *last[MAX_STEPS]; /* recording: last results of each distinct step */
} nd_chain;

typedef struct {
    nd_callguard cg;           /* how its arguments were passed, and each one */
    nd_graph *g;               /* owned or NULL (nothing to compute) */
    nd_id *outs;
    int nout;
    int nbind;
    nd_id *bind_node;          /* INPUT node ... */
    int32_t *bind_arg;         /* ... takes this argument */
    int nwb;
    int32_t *wb_out;           /* output ... */
    int32_t *wb_arg;           /* ... written back into this argument */
    int ntmpl;
    tnode *tmpl;
    nd_id *stores;             /* scalar stores of g (runtime/backend.h), pairs */
    int nstores;
    nd_wlog_ent *log;          /* its write-backs in operation order (trace_order.h; */
    int nlog;                  /* who: a write-back's index, ids of g) */
    nd_graph *side;            /* versions g does not hold (ND_SIDE), or NULL */
    nd_id *side_outs;
    int nside;
    int nsbind;
    nd_id *sbind_node;         /* side's INPUT node ... */
    int32_t *sbind_arg;        /* ... takes this argument */
    int busy;                  /* running (kernels release the GIL) */
    int orphan;                /* dropped while running: the runner frees it */
    uint64_t key;              /* g's program-cache key with the arguments of ... */
    uint64_t *akeys;           /* PyMem, nbind: ... these guard keys (0: not known) */
    nd_chain *chain;           /* owned or NULL: steps run before g */
    cbind *cb;                 /* g's INPUT nodes that take a step's result */
    int ncb;
    nd_vguard *vg;             /* data guards (arr NULL, arg set) */
    int nvg;
} entry;

struct nd_replay {
    PyObject *fn;              /* owned: the function scanned */
    int scanned;               /* 0 not yet, 1 replayable, -1 not */
    PyObject *why;             /* owned str: why not replayable */
    nd_envguards env;          /* what the scan saw, checked on every call */
    int nentries, capentries;
    entry **entries;
    long long hits, misses;
    PyObject *last_miss;       /* owned str or NULL */
    int limit_logged;
    int elem_eager;            /* see nd__replay_elem_eager */
};

/* ----------------------------------------------------------- tables */

static PyObject *get_instructions, *allowed_ops, *denied_attrs, *pure_builtins, *numpy_mod;

static const char *const ops_list[] = {
    "NOP", "RESUME", "CACHE", "EXTENDED_ARG", "PRECALL", "CALL", "CALL_FUNCTION",
    "CALL_FUNCTION_KW", "CALL_FUNCTION_EX", "CALL_METHOD", "CALL_KW", "KW_NAMES", "PUSH_NULL",
    "POP_TOP", "COPY", "SWAP", "ROT_TWO", "ROT_THREE", "ROT_FOUR", "ROT_N", "DUP_TOP",
    "DUP_TOP_TWO", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "LOAD_FAST_LOAD_FAST",
    "STORE_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "DELETE_FAST", "LOAD_CONST",
    "RETURN_VALUE", "RETURN_CONST", "BINARY_OP", "BINARY_ADD", "BINARY_SUBTRACT",
    "BINARY_MULTIPLY", "BINARY_TRUE_DIVIDE", "BINARY_FLOOR_DIVIDE", "BINARY_MODULO",
    "BINARY_POWER", "BINARY_MATRIX_MULTIPLY", "BINARY_LSHIFT", "BINARY_RSHIFT", "BINARY_AND",
    "BINARY_OR", "BINARY_XOR", "INPLACE_ADD", "INPLACE_SUBTRACT", "INPLACE_MULTIPLY",
    "INPLACE_TRUE_DIVIDE", "INPLACE_FLOOR_DIVIDE", "INPLACE_MODULO", "INPLACE_POWER",
    "INPLACE_MATRIX_MULTIPLY", "INPLACE_LSHIFT", "INPLACE_RSHIFT", "INPLACE_AND", "INPLACE_OR",
    "INPLACE_XOR", "UNARY_NEGATIVE", "UNARY_POSITIVE", "UNARY_INVERT", "UNARY_NOT", "COMPARE_OP",
    "IS_OP", "CONTAINS_OP", "BINARY_SUBSCR", "BINARY_SLICE", "STORE_SUBSCR", "STORE_SLICE",
    "BUILD_TUPLE", "BUILD_LIST", "BUILD_MAP", "BUILD_CONST_KEY_MAP", "BUILD_SLICE", "BUILD_SET",
    "BUILD_STRING", "FORMAT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "CONVERT_VALUE",
    "LIST_APPEND", "LIST_EXTEND", "LIST_TO_TUPLE", "SET_ADD", "SET_UPDATE", "MAP_ADD",
    "DICT_UPDATE", "DICT_MERGE", "UNPACK_SEQUENCE", "UNPACK_EX", "LOAD_ATTR", "LOAD_METHOD",
    "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLOSURE", "MAKE_CELL", "COPY_FREE_VARS", "STORE_DEREF",
    "MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE", "GET_ITER", "FOR_ITER", "END_FOR", "JUMP_FORWARD",
    "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE", "JUMP", "JUMP_NO_INTERRUPT",
    "POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
    "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_TRUE",
    "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE",
    "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE", "JUMP_IF_TRUE_OR_POP",
    "JUMP_IF_FALSE_OR_POP", "TO_BOOL", "RAISE_VARARGS", "LOAD_ASSERTION_ERROR", NULL,
};

/* NumPy module attributes with effects beyond the call's result */
static const char *const denied_attr_list[] = {
    "random", "seterr", "seterrcall", "errstate", "set_printoptions", "printoptions",
    "setbufsize", "save", "savez", "savez_compressed", "savetxt", "load", "loadtxt",
    "genfromtxt", "fromfile", "tofile", "dump", "dumps", "memmap", "ctypes", "testing",
    "show_config", "info", "__dict__", "__globals__", "__code__", "__closure__", "__builtins__",
    "__defaults__", "__kwdefaults__", NULL,
};

static const char *const builtin_list[] = {
    "range", "len", "abs", "float", "int", "complex", "bool", "min", "max", "sum", "tuple",
    "list", "dict", "zip", "enumerate", "isinstance", "slice", "round", "pow", "divmod",
    "reversed", "all", "any", "map", "sorted", "str", "ValueError", "TypeError", "IndexError",
    "RuntimeError", "NotImplementedError", "AssertionError", "KeyError", "ZeroDivisionError",
    /* a dict of the frame's locals, no side effect: a captured loop's
     * region is called with it (loop_rewrite.c). A region that runs its
     * loop in C flushes first, which leaves the capture unrecorded; one
     * that falls back to Python without computing anything leaves the
     * loop's body traced, and the replay of that is sound */
    "locals",
    NULL,
};

static PyObject *str_set(const char *const *names, int frozen)
{
    PyObject *s = frozen ? PyFrozenSet_New(NULL) : PySet_New(NULL);
    for (int i = 0; s && names[i]; i++) {
        PyObject *n = PyUnicode_InternFromString(names[i]);
        if (!n || PySet_Add(s, n) < 0) Py_CLEAR(s);
        Py_XDECREF(n);
    }
    return s;
}

static int tables_init(void)
{
    if (get_instructions) return 0;
    PyObject *dis = PyImport_ImportModule("dis");
    if (!dis) return -1;
    PyObject *gi = PyObject_GetAttrString(dis, "get_instructions");
    Py_DECREF(dis);
    if (!gi) return -1;
    if (!(numpy_mod = PyImport_ImportModule("numpy")) ||
        !(allowed_ops = str_set(ops_list, 1)) || !(denied_attrs = str_set(denied_attr_list, 1)) ||
        !(pure_builtins = str_set(builtin_list, 1))) {
        Py_DECREF(gi);
        return -1;
    }
    get_instructions = gi;
    return 0;
}

/* ------------------------------------------------------------ scan */

static int set_why(nd_replay *r, PyObject *why)
{
    if (!why) return -1;
    Py_XSETREF(r->why, why);
    return 1;
}

/* Immutable data: its identity pins its value. */
static int immutable_const(PyObject *v, int depth)
{
    if (v == Py_None || v == Py_Ellipsis || PyBool_Check(v) || PyLong_CheckExact(v) ||
        PyFloat_CheckExact(v) || PyComplex_CheckExact(v) || PyUnicode_CheckExact(v) ||
        PyBytes_CheckExact(v))
        return 1;
    if (PyArray_IsScalar(v, Generic))
        return !PyArray_IsScalar(v, Object) && !PyArray_IsScalar(v, Void);
    if (PyArray_DescrCheck(v)) return 1;
    if (PyType_Check(v) && (PyType_IsSubtype((PyTypeObject *)v, &PyGenericArrType_Type) ||
                            v == (PyObject *)&PyFloat_Type || v == (PyObject *)&PyLong_Type ||
                            v == (PyObject *)&PyBool_Type || v == (PyObject *)&PyComplex_Type))
        return 1;
    if (PyTuple_CheckExact(v) && depth < 8) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); i++)
            if (!immutable_const(PyTuple_GET_ITEM(v, i), depth + 1)) return 0;
        return 1;
    }
    return 0;
}

/* What a guarded global (or closure cell) may hold. */
static int allowed_value(PyObject *name, PyObject *v, int builtin)
{
    if (builtin) return PySet_Contains(pure_builtins, name);
    if (immutable_const(v, 0)) return 1;
    PyObject *shim = nd_np.module();
    if (!shim) PyErr_Clear();
    if (v == numpy_mod || (shim && v == shim)) return 1;
    if (PyObject_TypeCheck(v, &PyUFunc_Type)) return 1;
    PyObject *pol = PyObject_GetAttrString(v, "_numdyn_policy");
    if (pol) {
        /* allow_in_graph: pure, its body scanned (2); assume_constant_result
         * and nonstrict_trace: what they read is assumed constant, as torch
         * assumes -- replayed without looking inside (1) */
        int ok = !PyUnicode_Check(pol) ? 0
                 : PyUnicode_CompareWithASCIIString(pol, "allow_in_graph") == 0 ? 2
                 : PyUnicode_CompareWithASCIIString(pol, "assume_constant_result") == 0 ||
                   PyUnicode_CompareWithASCIIString(pol, "nonstrict_trace") == 0;
        Py_DECREF(pol);
        return ok;
    }
    PyErr_Clear();
    /* names trace_remap.c injected for functions the shim replaces */
    if (name && PyUnicode_Check(name) && PyUnicode_GET_LENGTH(name) > 11) {
        PyObject *pre = PyUnicode_FromString("__numdyn_");
        if (!pre) return -1;
        Py_ssize_t m = PyUnicode_Tailmatch(name, pre, 0, PY_SSIZE_T_MAX, -1);
        Py_DECREF(pre);
        if (m < 0) return -1;
        if (m) return 1;
    }
    return 0;
}

static int scan_code(nd_replay *r, PyObject *code, PyObject *top_free, PyObject *names, int depth)
{
    PyCodeObject *co = (PyCodeObject *)code;
    if (depth > 16) return set_why(r, PyUnicode_FromString("code nested too deeply"));
    if (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR))
        return set_why(r, PyUnicode_FromFormat("%U is a generator or coroutine", co->co_name));
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *et = PyObject_GetAttrString(code, "co_exceptiontable");
    if (!et) return -1;
    Py_ssize_t etn = PyBytes_Check(et) ? PyBytes_GET_SIZE(et) : 0;
    Py_DECREF(et);
    if (etn) return set_why(r, PyUnicode_FromFormat("%U uses try/except or with", co->co_name));
#endif
    PyObject *it = PyObject_CallOneArg(get_instructions, code);
    PyObject *iter = it ? PyObject_GetIter(it) : NULL, *ins;
    Py_XDECREF(it);
    if (!iter) return -1;
    int rc = 0;
    while (rc == 0 && (ins = PyIter_Next(iter))) {
        PyObject *op = PyObject_GetAttrString(ins, "opname");
        PyObject *arg = op ? PyObject_GetAttrString(ins, "argval") : NULL;
        if (!arg) { Py_DECREF(ins); Py_XDECREF(op); rc = -1; break; }
        int ok = PySet_Contains(allowed_ops, op);
        if (ok == 0) {
            PyObject *pos = PyObject_GetAttrString(ins, "positions");
            PyObject *line = pos ? PyObject_GetAttrString(pos, "lineno") : NULL;
            if (!line) PyErr_Clear();
            rc = set_why(r, PyUnicode_FromFormat("bytecode %U (%R) in %U line %S", op, arg,
                                                 co->co_name, line ? line : Py_None));
            Py_XDECREF(pos);
            Py_XDECREF(line);
        } else if (ok < 0) {
            rc = -1;
        } else if (PyUnicode_CompareWithASCIIString(op, "LOAD_GLOBAL") == 0) {
            if (PySet_Add(names, arg) < 0) rc = -1;
        } else if (PyUnicode_CompareWithASCIIString(op, "LOAD_ATTR") == 0 ||
                   PyUnicode_CompareWithASCIIString(op, "LOAD_METHOD") == 0) {
            int bad = PyUnicode_Check(arg) ? PySet_Contains(denied_attrs, arg) : 0;
            if (bad < 0) rc = -1;
            else if (bad) rc = set_why(r, PyUnicode_FromFormat("reads attribute .%U (a side "
                                                               "effect or outside state)", arg));
        } else if (PyUnicode_CompareWithASCIIString(op, "STORE_DEREF") == 0) {
            int bad = PySequence_Contains(top_free, arg);
            if (bad < 0) rc = -1;
            else if (bad) rc = set_why(r, PyUnicode_FromFormat("rebinds closure variable %R", arg));
        }
        Py_DECREF(op);
        Py_DECREF(arg);
        Py_DECREF(ins);
    }
    Py_DECREF(iter);
    if (rc == 0 && PyErr_Occurred()) rc = -1;
    for (Py_ssize_t i = 0; rc == 0 && i < PyTuple_GET_SIZE(co->co_consts); i++) {
        PyObject *c = PyTuple_GET_ITEM(co->co_consts, i);
        if (PyCode_Check(c)) rc = scan_code(r, c, top_free, names, depth + 1);
    }
    return rc;
}

static PyObject *fn_builtins(PyObject *fn)
{
    return ((PyFunctionObject *)fn)->func_builtins;
}

static int scan_fn(nd_replay *r, PyObject *fn, PyObject *seen, int depth);

/* A class made by collections.namedtuple or typing.NamedTuple itself (not a
 * subclass that could override __new__): calling it only builds a tuple. */
static int named_tuple_class(PyObject *v)
{
    if (!PyType_Check(v) || Py_TYPE(v) != &PyType_Type) return 0;
    PyTypeObject *tp = (PyTypeObject *)v;
    PyObject *bases = tp->tp_bases;
    if (!bases || PyTuple_GET_SIZE(bases) != 1 || PyTuple_GET_ITEM(bases, 0) != (PyObject *)&PyTuple_Type)
        return 0;
    PyObject *d = tp->tp_dict;
    return d && PyDict_GetItemString(d, "_fields") && PyDict_GetItemString(d, "_make");
}

/* A value the scanned code reads by name: allowed data, or a plain Python
 * function that is itself scanned (its own globals guarded the same way). */
static int check_value(nd_replay *r, PyObject *name, PyObject *v, int builtin, PyObject *seen,
                       int depth)
{
    /* a helper's wrapper (trace_remap.c): the helper itself is scanned */
    PyObject *helper = builtin ? NULL : nd__helper_target(v);
    if (helper) return scan_fn(r, helper, seen, depth + 1);
    /* a user class or module read through trace_remap.c's view: as the
     * class or module itself, not replayed (what its functions read is not
     * scanned) */
    if (!builtin && nd__namespace_view_user(v))
        return set_why(r, PyUnicode_FromFormat("reads %U (a class or module)", name));
    int ok = allowed_value(name, v, builtin);
    if (ok == 2) {
        /* allow_in_graph: the function's body is scanned like any called
         * function, so what it reads is guarded (or it is not replayed):
         * a replay never returns a result computed from stale globals */
        PyObject *w = PyObject_GetAttrString(v, "__wrapped__");
        if (!w) { PyErr_Clear(); return 0; }
        int rc = PyFunction_Check(w) ? scan_fn(r, w, seen, depth + 1) : 0;
        Py_DECREF(w);
        return rc;
    }
    if (ok) return ok < 0 ? -1 : 0;
    if (!builtin && PyFunction_Check(v)) return scan_fn(r, v, seen, depth + 1);
    if (!builtin && named_tuple_class(v)) return 0;
    PyObject *inner = builtin ? NULL : nd__compiled_fn(v);
    if (inner && PyFunction_Check(inner)) return scan_fn(r, inner, seen, depth + 1);
    if (builtin) return set_why(r, PyUnicode_FromFormat("calls builtin %U", name));
    return set_why(r, PyUnicode_FromFormat("reads %U (a %.80s)", name, Py_TYPE(v)->tp_name));
}

/* 0 replayable so far, 1 not (r->why), -1 error */
static int scan_fn(nd_replay *r, PyObject *fn, PyObject *seen, int depth)
{
    if (depth > 8) return set_why(r, PyUnicode_FromString("calls nested too deeply"));
    PyObject *code = PyFunction_GET_CODE(fn), *globals = PyFunction_GET_GLOBALS(fn);
    int has = PySet_Contains(seen, fn);
    if (has) return has < 0 ? -1 : 0;  /* recursion: guarded once */
    if (PySet_Add(seen, fn) < 0) return -1;
    PyObject *builtins = fn_builtins(fn);
    PyObject *d = PyFunction_GET_DEFAULTS(fn), *kd = PyFunction_GET_KW_DEFAULTS(fn);
    if (nd_envguards_push(&r->env, ND_EG_FUNC, fn, code, d ? d : Py_None, kd ? kd : Py_None) < 0) return -1;
    PyObject *names = PySet_New(NULL), *free = NULL, *list = NULL;
    int rc = -1;
    if (!names) return -1;
    if (!(free = PyObject_GetAttrString(code, "co_freevars"))) goto done;
    if ((rc = scan_code(r, code, free, names, 0)) != 0) goto done;
    rc = -1;
    PyObject *defs[2] = {d, kd};
    for (int k = 0; k < 2; k++) {
        if (!defs[k]) continue;
        PyObject *vals = PyDict_Check(defs[k]) ? PyDict_Values(defs[k]) : Py_NewRef(defs[k]);
        PyObject *tv = vals ? PySequence_Tuple(vals) : NULL;
        Py_XDECREF(vals);
        if (!tv) goto done;
        int ok = immutable_const(tv, 0);
        Py_DECREF(tv);
        if (!ok) { rc = set_why(r, PyUnicode_FromString("a default argument value is mutable")); goto done; }
    }
    if (!(list = PySequence_List(names))) goto done;
    if (PyList_Sort(list) < 0) goto done;  /* a stable order for the guards */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *name = PyList_GET_ITEM(list, i);
        PyObject *v = PyDict_GetItemWithError(globals, name);
        int builtin = 0;
        if (!v && !PyErr_Occurred() && builtins && PyDict_Check(builtins)) {
            v = PyDict_GetItemWithError(builtins, name);
            builtin = 1;
        }
        if (!v) {
            if (PyErr_Occurred()) goto done;
            rc = set_why(r, PyUnicode_FromFormat("global %R is not defined", name));
            goto done;
        }
        if (nd_envguards_push(&r->env, ND_EG_GLOBAL, globals, builtin ? builtins : NULL, name, v) < 0) goto done;
        if ((rc = check_value(r, name, v, builtin, seen, depth)) != 0) goto done;
        rc = -1;
    }
    PyObject *cl = PyFunction_GET_CLOSURE(fn);
    for (Py_ssize_t i = 0; cl && i < PyTuple_GET_SIZE(cl); i++) {
        PyObject *cell = PyTuple_GET_ITEM(cl, i), *v = PyCell_GET(cell);
        PyObject *name = PyTuple_GET_ITEM(free, i);
        if (!v) { rc = set_why(r, PyUnicode_FromFormat("closure variable %R is unbound", name)); goto done; }
        if (nd_envguards_push(&r->env, ND_EG_CELL, cell, NULL, name, v) < 0) goto done;
        if ((rc = check_value(r, name, v, 0, seen, depth)) != 0) goto done;
        rc = -1;
    }
    rc = 0;
done:
    Py_XDECREF(names);
    Py_XDECREF(free);
    Py_XDECREF(list);
    return rc;
}

/* 0 replayable, 1 not (r->why), -1 error */
static int scan(nd_replay *r, PyObject *fn)
{
    if (!PyFunction_Check(fn))
        return set_why(r, PyUnicode_FromFormat("%.80s is not a plain function", Py_TYPE(fn)->tp_name));
    PyObject *seen = PySet_New(NULL);
    if (!seen) return -1;
    int rc = scan_fn(r, fn, seen, 0);
    Py_DECREF(seen);
    if (rc != 0) nd_envguards_clear(&r->env);
    return rc;
}

/* ------------------------------------------------------- entries */

static void tmpl_free(tnode *t, int n)
{
    if (t) for (int i = 0; i < n; i++) Py_XDECREF(t[i].obj);
    PyMem_Free(t);
}

static void chain_free(nd_chain *c)
{
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        nd_graph_free(c->s[i].g);
        PyMem_Free(c->s[i].outs);
        PyMem_Free(c->s[i].b);
    }
    PyMem_Free(c->s);
    Py_XDECREF(c->prev);
    for (int i = 0; i < MAX_STEPS; i++) Py_XDECREF(c->last[i]);
    PyMem_Free(c);
}

static void entry_clear(entry *e)
{
    chain_free(e->chain);
    PyMem_Free(e->cb);
    nd_callguard_clear(&e->cg);
    nd_graph_free(e->g);
    PyMem_Free(e->outs);
    PyMem_Free(e->bind_node);
    PyMem_Free(e->bind_arg);
    PyMem_Free(e->wb_out);
    PyMem_Free(e->wb_arg);
    PyMem_Free(e->stores);
    PyMem_Free(e->log);
    nd_graph_free(e->side);
    PyMem_Free(e->side_outs);
    PyMem_Free(e->sbind_node);
    PyMem_Free(e->sbind_arg);
    tmpl_free(e->tmpl, e->ntmpl);
    PyMem_Free(e->akeys);
    PyMem_Free(e->vg);
    memset(e, 0, sizeof(*e));
}

static void entries_clear(nd_replay *r)
{
    for (int i = 0; i < r->nentries; i++) {
        entry *e = r->entries[i];
        /* an entry running on another thread is freed by that thread */
        if (e->busy) {
            e->orphan = 1;
            continue;
        }
        entry_clear(e);
        PyMem_Free(e);
    }
    r->nentries = 0;
}

nd_replay *nd__replay_new(void)
{
    nd_replay *r = PyMem_Calloc(1, sizeof(*r));
    if (!r) PyErr_NoMemory();
    return r;
}

void nd__replay_reset(nd_replay *r)
{
    if (!r) return;
    entries_clear(r);
    nd_envguards_clear(&r->env);
    Py_CLEAR(r->fn);
    Py_CLEAR(r->why);
    r->scanned = 0;
    r->limit_logged = 0;
}

void nd__replay_free(nd_replay *r)
{
    if (!r) return;
    nd__replay_reset(r);
    PyMem_Free(r->entries);
    Py_CLEAR(r->last_miss);
    PyMem_Free(r);
}

int nd__replay_traverse(nd_replay *r, visitproc visit, void *arg)
{
    if (!r) return 0;
    Py_VISIT(r->fn);
    return nd_envguards_traverse(&r->env, visit, arg);
}

void nd__rec_clear(nd_replay_rec *rec)
{
    nd_graph_free(rec->g);
    rec->g = NULL;
    PyMem_Free(rec->outs);
    rec->outs = NULL;
    Py_CLEAR(rec->res);
    PyMem_Free(rec->wb_out);
    PyMem_Free(rec->wb_caller);
    rec->wb_out = NULL;
    rec->wb_caller = NULL;
    rec->nwb = rec->wb_bad = 0;
    nd_order_notes notes = nd__order_notes_take(rec);
    nd__order_notes_free(&notes);
    chain_free(rec->chain);
    rec->chain = NULL;
    for (int k = 0; k < rec->nvg; k++) Py_XDECREF(rec->vg[k].arr);
    PyMem_Free(rec->vg);
    rec->vg = NULL;
    rec->nvg = 0;
}

int nd_trace_data_guard(nd_trace *t, PyObject *arr, nd_data_guard_fn fn, int64_t param,
                        int64_t expect)
{
    nd_replay_rec *rec = nd__rec_of(t);
    if (!rec) return 0;
    for (int k = 0; k < rec->nvg; k++)
        if (rec->vg[k].arr == arr && rec->vg[k].fn == fn && rec->vg[k].param == param) return 0;
    nd_vguard *more = PyMem_Realloc(rec->vg, sizeof(nd_vguard) * (size_t)(rec->nvg + 1));
    if (!more) { PyErr_NoMemory(); return -1; }
    rec->vg = more;
    rec->vg[rec->nvg++] = (nd_vguard){Py_NewRef(arr), -1, fn, param, expect};
    return 0;
}

/* ------------------------------------------------------------ chunks */

/* INPUT node obj of a graph as a binding: an earlier step's result (the
 * step just run first), else an argument to resolve at record time. */
static void bind_of(nd_chain *c, PyObject *obj, cbind *b)
{
    if (c && c->prev)
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(c->prev); j++)
            if (PyList_GET_ITEM(c->prev, j) == obj) { b->kind = B_PREV; b->idx = (int32_t)j; return; }
    for (int s = c ? c->n - 1 : -1; s >= 0; s--)
        for (Py_ssize_t j = 0; c->last[s] && j < PyList_GET_SIZE(c->last[s]); j++)
            if (PyList_GET_ITEM(c->last[s], j) == obj) {
                b->kind = B_STEP;
                b->step = s;
                b->idx = (int32_t)j;
                return;
            }
    b->kind = B_ARG;
    b->arg = obj;
}

static int bindings(nd_chain *c, nd_graph *g, cbind **out, int *nout)
{
    int n = 0;
    for (nd_id i = 0; i < g->n; i++) n += g->nodes[i].op == ND_OP_INPUT;
    cbind *b = PyMem_Calloc((size_t)(n ? n : 1), sizeof(cbind));
    if (!b) return -1;
    n = 0;
    for (nd_id i = 0; i < g->n; i++)
        if (g->nodes[i].op == ND_OP_INPUT) {
            b[n].node = i;
            bind_of(c, g->nodes[i].obj, &b[n++]);
        }
    *out = b;
    *nout = n;
    return 0;
}

/* Two chunk graphs compute the same thing from the same bindings. */
static int node_same(const nd_node *a, const nd_node *b)
{
    if (a->op != b->op || a->ndim != b->ndim || a->aux != b->aux || a->sub != b->sub ||
        a->dtype != b->dtype || a->nin != b->nin || a->flags != b->flags || a->axes != b->axes ||
        a->voff != b->voff || a->vndim != b->vndim || a->nextra != b->nextra)
        return 0;
    for (int k = 0; k < a->nin && k < ND_MAXIN; k++)
        if (a->in[k] != b->in[k] || a->in_dtype[k] != b->in_dtype[k]) return 0;
    if (memcmp(a->shape, b->shape, sizeof a->shape) || memcmp(a->vshape, b->vshape, sizeof a->vshape) ||
        memcmp(a->vstrides, b->vstrides, sizeof a->vstrides) || memcmp(a->kperm, b->kperm, sizeof a->kperm) ||
        memcmp(&a->scalar, &b->scalar, sizeof a->scalar))
        return 0;
    if (a->nextra && memcmp(a->extra, b->extra, sizeof(nd_id) * (size_t)a->nextra)) return 0;
    if (a->op != ND_OP_INPUT && a->op != ND_OP_SCALAR && a->obj != b->obj) return 0;
    if (a->attrs != b->attrs) {
        if (!a->attrs || !b->attrs) return 0;
        int eq = PyObject_RichCompareBool(a->attrs, b->attrs, Py_EQ);
        if (eq < 0) PyErr_Clear();
        if (eq != 1) return 0;
    }
    return 1;
}

static int step_same(const cstep *a, nd_graph *g, const nd_id *outs, int nout, const cbind *b, int nb)
{
    if (a->g->n != g->n || a->nout != nout || a->nb != nb) return 0;
    if (memcmp(a->outs, outs, sizeof(nd_id) * (size_t)nout)) return 0;
    for (int k = 0; k < nb; k++) {
        const cbind *x = &a->b[k], *y = &b[k];
        if (x->node != y->node || x->kind != y->kind || x->idx != y->idx ||
            (x->kind == B_STEP && x->step != y->step) || (x->kind == B_ARG && x->arg != y->arg))
            return 0;
    }
    for (nd_id i = 0; i < g->n; i++)
        if (!node_same(&a->g->nodes[i], &g->nodes[i])) return 0;
    return 1;
}

int nd__rec_chunk(nd_replay_rec *rec, nd_graph *g, const nd_id *outs, int nout, PyObject *res)
{
    if (!PyList_Check(res)) return 0;
    nd_chain *c = rec->chain;
    if (!c) {
        if (!(c = PyMem_Calloc(1, sizeof *c))) { PyErr_Clear(); return 0; }
        rec->chain = c;
    }
    cbind *b = NULL;
    int nb = 0;
    if (bindings(c, g, &b, &nb) < 0) return 0;
    cstep *top = c->n ? &c->s[c->n - 1] : NULL;
    if (top && step_same(top, g, outs, nout, b, nb)) {
        top->repeat++;
        PyMem_Free(b);
        nd_graph_free(g);
    } else {
        nd_id *o = PyMem_Malloc(sizeof(nd_id) * (size_t)(nout ? nout : 1));
        if (c->n == MAX_STEPS || !o) { PyMem_Free(b); PyMem_Free(o); return 0; }
        if (c->n == c->cap) {
            int cap = c->cap ? 2 * c->cap : 4;
            cstep *ns = PyMem_Realloc(c->s, sizeof(cstep) * (size_t)cap);
            if (!ns) { PyMem_Free(b); PyMem_Free(o); return 0; }
            c->s = ns;
            c->cap = cap;
        }
        memcpy(o, outs, sizeof(nd_id) * (size_t)nout);
        c->s[c->n++] = (cstep){g, o, nout, b, nb, 1, 0, 0};
    }
    /* the graph holds no arrays between runs (the arguments' stay
     * borrowed in the bindings until the call is recorded) */
    cstep *s = &c->s[c->n - 1];
    if (s->g == g)
        for (nd_id i = 0; i < g->n; i++)
            if (g->nodes[i].op == ND_OP_INPUT) Py_CLEAR(g->nodes[i].obj);
    Py_XSETREF(c->prev, Py_NewRef(res));
    Py_XSETREF(c->last[c->n - 1], Py_NewRef(res));
    return 1;
}

/* The bytes [lo, hi) an array's elements span. */
static void byte_bounds(PyArrayObject *a, char **lo, char **hi)
{
    char *l = PyArray_BYTES(a), *h = l;
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        npy_intp n = PyArray_DIM(a, d), st = PyArray_STRIDE(a, d);
        if (n == 0) { *lo = *hi = l; return; }
        if (st < 0) l += (n - 1) * st; else h += (n - 1) * st;
    }
    *lo = l;
    *hi = h + PyArray_ITEMSIZE(a);
}

/* The trace wrote argument w back as if no other argument shared its
 * memory (the identity pattern is guarded; views of one buffer are not):
 * 1 when some other array argument overlaps it. */
static int written_arg_overlaps(PyObject *const *args, Py_ssize_t n, Py_ssize_t w)
{
    char *lo, *hi, *l2, *h2;
    byte_bounds((PyArrayObject *)args[w], &lo, &hi);
    for (Py_ssize_t j = 0; j < n; j++) {
        if (j == w || !PyArray_Check(args[j])) continue;
        byte_bounds((PyArrayObject *)args[j], &l2, &h2);
        if (l2 < hi && lo < h2) return 1;
    }
    return 0;
}

/* the first data guard of e that args fail (the call guards fit), or -1 */
static int data_guards_fit(const entry *e, PyObject *const *args)
{
    for (int k = 0; k < e->nvg; k++) {
        const nd_vguard *v = &e->vg[k];
        PyObject *a = args[v->arg];
        if (!PyArray_Check(a) || v->fn((PyArrayObject *)a, v->param) != v->expect) return k;
    }
    return -1;
}

/* An entry fits a call when its call guards and data guards do (guards/fn_guards.h) and no
 * argument it writes back overlaps another argument. */
static int entry_fits(const entry *e, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (!nd_callguard_fits(&e->cg, args, nargsf, kwnames)) return 0;
    for (int k = 0; k < e->nwb; k++)
        if (written_arg_overlaps(args, e->cg.nag, e->wb_arg[k])) return 0;
    return data_guards_fit(e, args) < 0;
}

static PyObject *miss_reason(const entry *e, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    if (!nd_callguard_fits(&e->cg, args, nargsf, kwnames))
        return nd_callguard_miss(&e->cg, args, nargsf, kwnames);
    for (int k = 0; k < e->nwb; k++)
        if (written_arg_overlaps(args, e->cg.nag, e->wb_arg[k]))
            return PyUnicode_FromFormat("argument %d, which the function writes, overlaps "
                                        "another argument", (int)e->wb_arg[k]);
    int dg = data_guards_fit(e, args);
    if (dg >= 0)
        return PyUnicode_FromFormat("the contents of argument %d give another output shape "
                                    "(np.bincount's length) than the trace's, %lld",
                                    (int)e->vg[dg].arg, (long long)e->vg[dg].expect);
    return PyUnicode_FromString("the matching entry is running on another thread");
}

/* ------------------------------------------------------- template */

typedef struct {
    tnode *t;
    int n, cap;
} tbuf;

static int tpush(tbuf *b, int kind, int32_t n, int32_t idx, PyObject *obj)
{
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 8;
        tnode *nt = PyMem_Realloc(b->t, sizeof(tnode) * (size_t)cap);
        if (!nt) { PyErr_NoMemory(); return -1; }
        b->t = nt;
        b->cap = cap;
    }
    b->t[b->n++] = (tnode){(uint8_t)kind, n, idx, Py_XNewRef(obj)};
    return 0;
}

/* view spec: (descr, byte offset, shape, strides, flags, base shape, base strides) */
static int push_view(tbuf *b, int kind, int32_t idx, PyObject *v, PyObject *base)
{
    PyArrayObject *a = (PyArrayObject *)v, *s = (PyArrayObject *)base;
    PyObject *spec = Py_BuildValue(
        "(OnNNiNN)", (PyObject *)PyArray_DESCR(a), (Py_ssize_t)(PyArray_BYTES(a) - PyArray_BYTES(s)),
        nd_intp_tuple(PyArray_NDIM(a), PyArray_DIMS(a)), nd_intp_tuple(PyArray_NDIM(a), PyArray_STRIDES(a)),
        PyArray_FLAGS(a) & NPY_ARRAY_WRITEABLE, nd_intp_tuple(PyArray_NDIM(s), PyArray_DIMS(s)),
        nd_intp_tuple(PyArray_NDIM(s), PyArray_STRIDES(s)));
    if (!spec) return -1;
    int rc = tpush(b, kind, 0, idx, spec);
    Py_DECREF(spec);
    return rc;
}

static int dims_equal(PyObject *t, int n, const npy_intp *v)
{
    if (PyTuple_GET_SIZE(t) != n) return 0;
    for (int d = 0; d < n; d++)
        if (PyLong_AsSsize_t(PyTuple_GET_ITEM(t, d)) != v[d]) return 0;
    return 1;
}

static PyObject *make_view(PyObject *spec, PyObject *src)
{
    PyArrayObject *s = (PyArrayObject *)src;
    PyObject *shape = PyTuple_GET_ITEM(spec, 2), *strides = PyTuple_GET_ITEM(spec, 3);
    if (!dims_equal(PyTuple_GET_ITEM(spec, 5), PyArray_NDIM(s), PyArray_DIMS(s)) ||
        !dims_equal(PyTuple_GET_ITEM(spec, 6), PyArray_NDIM(s), PyArray_STRIDES(s))) {
        PyErr_SetString(PyExc_SystemError,
                        "numdyn: replay: a returned view's base changed layout");
        return NULL;
    }
    int nd = (int)PyTuple_GET_SIZE(shape);
    npy_intp dims[ND_MAXDIMS], st[ND_MAXDIMS];
    for (int d = 0; d < nd && d < ND_MAXDIMS; d++) {
        dims[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
        st[d] = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, d));
    }
    PyArray_Descr *descr = (PyArray_Descr *)PyTuple_GET_ITEM(spec, 0);
    Py_INCREF(descr);
    int writeable = (int)PyLong_AsLong(PyTuple_GET_ITEM(spec, 4));
    PyObject *v = PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, st,
                                       PyArray_BYTES(s) + PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 1)),
                                       writeable && PyArray_ISWRITEABLE(s) ? NPY_ARRAY_WRITEABLE : 0,
                                       NULL);
    if (!v) return NULL;
    if (PyArray_SetBaseObject((PyArrayObject *)v, Py_NewRef(src)) < 0) {
        Py_DECREF(v);
        return NULL;
    }
    PyArray_UpdateFlags((PyArrayObject *)v, NPY_ARRAY_UPDATE_ALL);
    return v;
}

/* 0 ok, 1 not replayable (*why), -1 error */
static int build_tmpl(tbuf *b, nd_replay_rec *rec, PyObject *o, PyObject *const *args,
                      Py_ssize_t nargs, int depth, const char **why)
{
    if (depth > 32) { *why = "the return value is nested too deeply"; return 1; }
    if (nd_proxy_check(o)) {
        PyObject *v = nd_proxy_base_array(o);
        if (!v) {
            if (PyErr_Occurred()) return -1;
            *why = "a returned array was not computed by the return flush";
            return 1;
        }
        Py_DECREF(v);  /* identity is all we compare; rec->res / args keep it alive */
        int scalar = nd_proxy_is_scalar(o) && PyArray_NDIM((PyArrayObject *)v) == 0;
        for (Py_ssize_t k = 0; rec->res && k < PyList_GET_SIZE(rec->res); k++)
            if (PyList_GET_ITEM(rec->res, k) == v) {
                if (!scalar && nd_proxy_is_readonly(o)) {
                    *why = "a returned array was made read-only";
                    return 1;
                }
                return tpush(b, scalar ? T_OUTSCALAR : T_OUT, 0, (int32_t)k, NULL);
            }
        for (Py_ssize_t j = 0; j < nargs; j++)
            if (args[j] == v && !scalar) return tpush(b, T_ARG, 0, (int32_t)j, NULL);
        /* a NumPy view of a computed value or of an argument: the same view
         * of the new one (y[1:], a.T) */
        PyObject *base = PyArray_BASE((PyArrayObject *)v);
        if (!scalar && base && PyArray_Check(base)) {
            for (Py_ssize_t k = 0; rec->res && k < PyList_GET_SIZE(rec->res); k++)
                if (PyList_GET_ITEM(rec->res, k) == base)
                    return push_view(b, T_OUTVIEW, (int32_t)k, v, base);
            for (Py_ssize_t j = 0; j < nargs; j++)
                if (args[j] == base) return push_view(b, T_ARGVIEW, (int32_t)j, v, base);
        }
        *why = "the return value holds a view of something that is not an output or argument";
        return 1;
    }
    /* a named tuple (NumPy's SVDResult, SlogdetResult...; the user's own):
     * rebuilt through its type's _make */
    int named = PyTuple_Check(o) && !PyTuple_CheckExact(o) &&
                PyObject_HasAttrString((PyObject *)Py_TYPE(o), "_make");
    if (PyTuple_CheckExact(o) || PyList_CheckExact(o) || named) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        int kind = named ? T_NAMEDTUPLE : PyTuple_CheckExact(o) ? T_TUPLE : T_LIST;
        if (tpush(b, kind, (int32_t)n, 0, named ? (PyObject *)Py_TYPE(o) : NULL) < 0) return -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            int rc = build_tmpl(b, rec, PySequence_Fast_GET_ITEM(o, i), args, nargs, depth + 1, why);
            if (rc) return rc;
        }
        return 0;
    }
    if (PyDict_CheckExact(o)) {
        PyObject *keys = PyDict_Keys(o), *kt = keys ? PyList_AsTuple(keys) : NULL;
        Py_XDECREF(keys);
        if (!kt) return -1;
        if (!immutable_const(kt, 0)) { Py_DECREF(kt); *why = "a returned dict has unusual keys"; return 1; }
        int rc = tpush(b, T_DICT, (int32_t)PyTuple_GET_SIZE(kt), 0, kt);
        for (Py_ssize_t i = 0; rc == 0 && i < PyTuple_GET_SIZE(kt); i++) {
            PyObject *v = PyDict_GetItemWithError(o, PyTuple_GET_ITEM(kt, i));
            rc = v ? build_tmpl(b, rec, v, args, nargs, depth + 1, why) : -1;
        }
        Py_DECREF(kt);
        return rc;
    }
    if (immutable_const(o, 0)) return tpush(b, T_CONST, 0, 0, o);
    *why = "the return value holds an object that is neither a traced array nor a constant";
    return 1;
}

static PyObject *rebuild(const tnode *t, int *pos, PyObject *res, PyObject *const *args)
{
    const tnode *n = &t[(*pos)++];
    switch (n->kind) {
    case T_OUT:
        return Py_NewRef(PyList_GET_ITEM(res, n->idx));
    case T_OUTSCALAR:
        return PyArray_Return((PyArrayObject *)Py_NewRef(PyList_GET_ITEM(res, n->idx)));
    case T_ARG:
        return Py_NewRef(args[n->idx]);
    case T_OUTVIEW:
        return make_view(n->obj, PyList_GET_ITEM(res, n->idx));
    case T_ARGVIEW:
        return make_view(n->obj, args[n->idx]);
    case T_CONST:
        return Py_NewRef(n->obj);
    case T_TUPLE:
    case T_LIST:
    case T_NAMEDTUPLE: {
        PyObject *c = n->kind == T_LIST ? PyList_New(n->n) : PyTuple_New(n->n);
        if (!c) return NULL;
        for (int32_t i = 0; i < n->n; i++) {
            PyObject *v = rebuild(t, pos, res, args);
            if (!v) { Py_DECREF(c); return NULL; }
            if (n->kind == T_LIST) PyList_SET_ITEM(c, i, v);
            else PyTuple_SET_ITEM(c, i, v);
        }
        if (n->kind == T_NAMEDTUPLE) Py_SETREF(c, PyObject_CallMethod(n->obj, "_make", "(O)", c));
        return c;
    }
    case T_DICT: {
        PyObject *d = PyDict_New();
        if (!d) return NULL;
        for (int32_t i = 0; i < n->n; i++) {
            PyObject *v = rebuild(t, pos, res, args);
            if (!v || PyDict_SetItem(d, PyTuple_GET_ITEM(n->obj, i), v) < 0) {
                Py_XDECREF(v);
                Py_DECREF(d);
                return NULL;
            }
            Py_DECREF(v);
        }
        return d;
    }
    default:
        PyErr_SetString(PyExc_SystemError, "numdyn: bad replay template");
        return NULL;
    }
}

/* ---------------------------------------------------------- public */

/* log and release msg (a new reference, or NULL after a failed format) */
static void log_msg(const char *kind, PyObject *msg)
{
    if (msg) nd__log(kind, msg);
    else PyErr_Clear();
    Py_XDECREF(msg);
}

static void note_miss(nd_replay *r, PyObject *why)
{
    r->misses++;
    nd_counter_add(ND_CTR_REPLAY_MISSES, 1);
    if (!why) { PyErr_Clear(); return; }
    Py_XSETREF(r->last_miss, why);
    if (nd__log_hook && r->fn) {
        PyObject *name = PyObject_GetAttrString(r->fn, "__qualname__");
        if (!name) PyErr_Clear();
        log_msg("replay", PyUnicode_FromFormat("replay guard miss for %S: %U; tracing again",
                                                   name ? name : Py_None, why));
        Py_XDECREF(name);
    }
}

int nd__replay_want(nd_replay *r, PyObject *fn)
{
    if (r->fn != fn) {
        nd__replay_reset(r);
        r->fn = Py_NewRef(fn);
    }
    if (r->scanned > 0 && !nd_envguards_ok(&r->env, NULL)) {
        nd__replay_reset(r);
        r->fn = Py_NewRef(fn);
    }
    if (!r->scanned) {
        if (tables_init() < 0) return -1;
        int rc = scan(r, fn);
        if (rc < 0) return -1;
        r->scanned = rc == 0 ? 1 : -1;
        if (rc && nd__log_hook && r->why) {
            PyObject *name = PyObject_GetAttrString(fn, "__qualname__");
            if (!name) PyErr_Clear();
            log_msg("replay", PyUnicode_FromFormat("%S is traced on every call (no replay): %U",
                                                       name ? name : Py_None, r->why));
            Py_XDECREF(name);
        }
    }
    if (r->scanned < 0) return 0;
    long lim = nd_guard_cache_limit();
    if (r->nentries >= lim) {
        if (!r->limit_logged) {
            r->limit_logged = 1;
            log_msg("replay",
                    PyUnicode_FromFormat("numdyn.config.cache_size_limit (%ld) reached: later "
                                         "argument variants are traced on every call", lim));
        }
        return 0;
    }
    return 1;
}

/* Which argument each INPUT node of the side graph (trace_order.h) is; its
 * inputs then hold nothing between calls. -1 (no exception) when one is
 * not an argument: that side graph is dropped. */
static int bind_side(entry *e, nd_graph *side, PyObject *const *args, Py_ssize_t n)
{
    int ninput = 0;
    for (nd_id i = 0; i < side->n; i++) ninput += side->nodes[i].op == ND_OP_INPUT;
    e->sbind_node = PyMem_Malloc(sizeof(nd_id) * (size_t)(ninput ? ninput : 1));
    e->sbind_arg = PyMem_Malloc(sizeof(int32_t) * (size_t)(ninput ? ninput : 1));
    if (!e->sbind_node || !e->sbind_arg) goto fail;
    for (nd_id i = 0; i < side->n; i++) {
        nd_node *nn = &side->nodes[i];
        if (nn->op != ND_OP_INPUT) continue;
        Py_ssize_t j = 0;
        while (j < n && args[j] != nn->obj) j++;
        if (j == n) goto fail;
        e->sbind_node[e->nsbind] = i;
        e->sbind_arg[e->nsbind++] = (int32_t)j;
    }
    for (int b = 0; b < e->nsbind; b++) Py_CLEAR(side->nodes[e->sbind_node[b]].obj);
    return 0;
fail:
    PyMem_Free(e->sbind_node);
    PyMem_Free(e->sbind_arg);
    e->sbind_node = NULL;
    e->sbind_arg = NULL;
    e->nsbind = 0;
    return -1;
}

int nd__replay_record(nd_replay *r, nd_replay_rec *rec, PyObject *fn, PyObject *const *args,
                      size_t nargsf, PyObject *kwnames, PyObject *raw)
{
    if (r->fn != fn || r->scanned <= 0) return 0;
    /* caller writes replay when the return flush made them all */
    if (rec->escapes || rec->unreplayable || rec->flushes > 1 || (rec->mutated && (rec->wb_bad || !rec->nwb)))
        return 0;
    Py_ssize_t npos = PyVectorcall_NARGS(nargsf);
    Py_ssize_t n = npos + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    for (int i = 0; i < r->nentries; i++)
        if (entry_fits(r->entries[i], args, nargsf, kwnames)) return 0;  /* raced: have it */
    entry e;
    memset(&e, 0, sizeof e);
    tbuf tb = {0};
    const char *why = NULL;
    int rc = -1;
    int k = nd_callguard_record(&e.cg, args, nargsf, kwnames, &why);
    if (k) { rc = k; goto done; }
    if (rec->g) {
        nd_graph *g = rec->g;
        int ninput = 0;
        for (nd_id i = 0; i < g->n; i++) ninput += g->nodes[i].op == ND_OP_INPUT;
        e.bind_node = PyMem_Malloc(sizeof(nd_id) * (size_t)(ninput ? ninput : 1));
        e.bind_arg = PyMem_Malloc(sizeof(int32_t) * (size_t)(ninput ? ninput : 1));
        if (!e.bind_node || !e.bind_arg) { PyErr_NoMemory(); goto done; }
        for (nd_id i = 0; i < g->n; i++) {
            nd_node *nn = &g->nodes[i];
            if (nn->op != ND_OP_INPUT) continue;
            Py_ssize_t j = 0;
            while (j < n && args[j] != nn->obj) j++;
            if (j == n && rec->chain) {  /* a chunk's result */
                cbind cb = {0};
                bind_of(rec->chain, nn->obj, &cb);
                if (cb.kind != B_ARG) {
                    cbind *more = PyMem_Realloc(e.cb, sizeof(cbind) * (size_t)(e.ncb + 1));
                    if (!more) { PyErr_NoMemory(); goto done; }
                    e.cb = more;
                    cb.node = i;
                    e.cb[e.ncb++] = cb;
                    continue;
                }
            }
            if (j == n) { why = "the graph reads an array that is not an argument"; rc = 1; goto done; }
            e.bind_node[e.nbind] = i;
            e.bind_arg[e.nbind++] = (int32_t)j;
        }
    }
    if (rec->chain) {  /* the chunks' arguments, as indices */
        nd_chain *c = rec->chain;
        for (int k = 0; k < c->n; k++)
            for (int b = 0; b < c->s[k].nb; b++) {
                cbind *cb = &c->s[k].b[b];
                if (cb->kind != B_ARG) continue;
                Py_ssize_t j = 0;
                while (j < n && args[j] != cb->arg) j++;
                if (j == n) { why = "a chunk reads an array that is not an argument"; rc = 1; goto done; }
                cb->idx = (int32_t)j;
                cb->arg = NULL;
            }
    }
    if (rec->nwb) {
        e.wb_out = PyMem_Malloc(sizeof(int32_t) * (size_t)rec->nwb);
        e.wb_arg = PyMem_Malloc(sizeof(int32_t) * (size_t)rec->nwb);
        if (!e.wb_out || !e.wb_arg) { PyErr_NoMemory(); goto done; }
        for (int k = 0; k < rec->nwb; k++) {
            Py_ssize_t j = 0;
            while (j < n && args[j] != rec->wb_caller[k]) j++;
            if (j == n || !PyArray_CheckExact(args[j])) {
                why = "the function writes an array that is not an argument";
                rc = 1;
                goto done;
            }
            if (written_arg_overlaps(args, n, j)) {
                why = "an argument the function writes overlaps another argument";
                rc = 1;
                goto done;
            }
            e.wb_out[e.nwb] = rec->wb_out[k];
            e.wb_arg[e.nwb++] = (int32_t)j;
        }
    }
    if (rec->nvg) {  /* data guards: on arguments only */
        e.vg = PyMem_Malloc(sizeof(nd_vguard) * (size_t)rec->nvg);
        if (!e.vg) { PyErr_NoMemory(); goto done; }
        for (int k = 0; k < rec->nvg; k++) {
            Py_ssize_t j = 0;
            while (j < n && args[j] != rec->vg[k].arr) j++;
            if (j == n) { why = "a data guard on an array that is not an argument"; rc = 1; goto done; }
            e.vg[k] = rec->vg[k];
            e.vg[k].arr = NULL;
            e.vg[k].arg = (int32_t)j;
        }
        e.nvg = rec->nvg;
    }
    if ((rc = build_tmpl(&tb, rec, raw, args, n, 0, &why)) != 0) goto done;
    /* the entry owns the graph; between calls its inputs hold nothing */
    if (rec->g) {
        for (int b = 0; b < e.nbind; b++) Py_CLEAR(rec->g->nodes[e.bind_node[b]].obj);
        e.g = rec->g;
        e.outs = rec->outs;
        e.nout = rec->nout;
        rec->g = NULL;
        rec->outs = NULL;
        nd_order_notes notes = nd__order_notes_take(rec);
        e.stores = notes.stores;
        e.nstores = notes.nstores;
        e.log = notes.log;
        e.nlog = notes.nlog;
        if (notes.side && bind_side(&e, notes.side, args, n) == 0) {
            e.side = notes.side;
            e.side_outs = notes.side_outs;
            e.nside = notes.nside;
            notes.side = NULL;
            notes.side_outs = NULL;
        }
        nd_graph_free(notes.side);
        PyMem_Free(notes.side_outs);
    }
    if (rec->chain) {  /* the entry runs the chunks; their record-time results go */
        e.chain = rec->chain;
        rec->chain = NULL;
        Py_CLEAR(e.chain->prev);
        for (int k = 0; k < MAX_STEPS; k++) Py_CLEAR(e.chain->last[k]);
    }
    e.tmpl = tb.t;
    e.ntmpl = tb.n;
    tb.t = NULL;
    if (r->nentries == r->capentries) {
        int cap = r->capentries ? r->capentries * 2 : 4;
        entry **ne = PyMem_Realloc(r->entries, sizeof(entry *) * (size_t)cap);
        if (!ne) { PyErr_NoMemory(); rc = -1; goto done; }
        r->entries = ne;
        r->capentries = cap;
    }
    entry *pe = PyMem_Malloc(sizeof(entry));
    if (!pe) { PyErr_NoMemory(); rc = -1; goto done; }
    *pe = e;
    r->entries[r->nentries++] = pe;
    memset(&e, 0, sizeof e);
    rc = 0;
done:
    tmpl_free(tb.t, tb.n);
    entry_clear(&e);
    if (rc > 0) {
        /* this call's arguments are not replayable; others may be */
        if (nd__log_hook && why)
            log_msg("replay", PyUnicode_FromFormat("capture not recorded for replay: %s", why));
        rc = 0;
    }
    return rc;
}

/* The caller arrays the trace wrote, written as its return flush wrote
 * them (trace_flush.c write_back): a value that lives in another written
 * argument is copied first, so no write reads a buffer already written. */
static int write_back_args(entry *e, PyObject *res, PyObject *const *args)
{
    PyObject *small[8], **src = e->nwb <= 8 ? small : PyMem_Malloc(sizeof(PyObject *) * (size_t)e->nwb);
    if (!src) { PyErr_NoMemory(); return -1; }
    int k = 0, rc = -1;
    for (; k < e->nwb; k++) {
        PyObject *v = PyList_GET_ITEM(res, e->wb_out[k]), *dst = args[e->wb_arg[k]];
        int shared = 0;
        for (int m = 0; m < e->nwb && !shared; m++) {
            PyObject *d = args[e->wb_arg[m]];
            if (d == dst || !PyArray_Check(v)) continue;
            char *l1, *h1, *l2, *h2;
            byte_bounds((PyArrayObject *)v, &l1, &h1);
            byte_bounds((PyArrayObject *)d, &l2, &h2);
            shared = l1 < h2 && l2 < h1;
        }
        src[k] = shared ? PyArray_NewCopy((PyArrayObject *)v, NPY_KEEPORDER) : Py_NewRef(v);
        if (!src[k]) goto done;
    }
    for (int m = 0; m < e->nwb; m++) {
        PyObject *dst = args[e->wb_arg[m]];
        if (src[m] != dst && PyArray_CopyInto((PyArrayObject *)dst, (PyArrayObject *)src[m]) < 0)
            goto done;
    }
    rc = 0;
done:
    for (int m = 0; m < k; m++) Py_DECREF(src[m]);
    if (src != small) PyMem_Free(src);
    return rc;
}

/* The replayed graph raised at the operation of node F (before: before its
 * writes): the written arguments get what NumPy wrote before it, computed
 * quietly (trace_order.h); the exception stands. An argument whose version
 * at F the graph does not hold (a later write replaced it whole) keeps what
 * it holds. */
static void fail_writes(entry *e, PyObject *const *args, nd_id F, int before)
{
    if (F == ND_NONE || !e->nwb || !e->nlog) return;
    ND_EXC_SAVE(exc);
    nd_id *cut = PyMem_Malloc(sizeof(nd_id) * (size_t)e->nwb);
    nd_id *ids = PyMem_Malloc(sizeof(nd_id) * (size_t)e->nwb);
    int32_t *who = PyMem_Malloc(sizeof(int32_t) * (size_t)e->nwb);
    PyObject *vals = NULL;
    int m = 0;
    if (!cut || !ids || !who) goto done;
    nd__wlog_cut(e->log, e->nlog, F, before, cut, e->nwb);
    for (int k = 0; k < e->nwb; k++)
        if (cut[k] != ND_NONE && cut[k] >= 0) {
            ids[m] = cut[k];
            who[m++] = k;
        }
    if (m && !(vals = nd__compute_quietly(e->g, ids, m))) goto done;
    if (!vals && !(vals = PyList_New(0))) goto done;
    /* versions a later write replaced whole: from the side graph */
    int ms = 0;
    for (int k = 0; k < e->nwb; k++)
        if (cut[k] != ND_NONE && cut[k] < 0) {
            int j = -2 - cut[k];
            if (!e->side || j >= e->nside) goto done;  /* not kept: the argument stays */
            ids[m + ms] = e->side_outs[j];
            who[m + ms++] = k;
        }
    if (ms) {
        for (int b = 0; b < e->nsbind; b++)
            e->side->nodes[e->sbind_node[b]].obj = Py_NewRef(args[e->sbind_arg[b]]);
        PyObject *sv = nd__compute_quietly(e->side, ids + m, ms);
        for (int b = 0; b < e->nsbind; b++) Py_CLEAR(e->side->nodes[e->sbind_node[b]].obj);
        if (!sv) goto done;
        for (int i = 0; i < ms; i++)
            if (PyList_Append(vals, PyList_GET_ITEM(sv, i)) < 0) { Py_DECREF(sv); goto done; }
        Py_DECREF(sv);
        m += ms;
    }
    /* as write_back_args: a value living in another written argument first */
    for (int i = 0; i < m; i++) {
        PyObject *v = PyList_GET_ITEM(vals, i);
        for (int j = 0; j < m; j++) {
            PyObject *d = args[e->wb_arg[who[j]]];
            char *l1, *h1, *l2, *h2;
            if (j == i || !PyArray_Check(v)) continue;
            byte_bounds((PyArrayObject *)v, &l1, &h1);
            byte_bounds((PyArrayObject *)d, &l2, &h2);
            if (l1 < h2 && l2 < h1) {
                PyObject *c = PyArray_NewCopy((PyArrayObject *)v, NPY_KEEPORDER);
                if (!c) goto done;
                PyList_SetItem(vals, i, c);
                break;
            }
        }
    }
    for (int i = 0; i < m; i++) {
        PyObject *dst = args[e->wb_arg[who[i]]], *v = PyList_GET_ITEM(vals, i);
        if (v != dst && PyArray_CopyInto((PyArrayObject *)dst, (PyArrayObject *)v) < 0) goto done;
    }
done:
    PyErr_Clear();
    Py_XDECREF(vals);
    PyMem_Free(cut);
    PyMem_Free(ids);
    PyMem_Free(who);
    ND_EXC_RESTORE(exc);
}

/* g's program-cache key for this call, when the native backend runs it:
 * the key covers g's structure (fixed) and the guard keys of its INPUT
 * arrays, of which only the bound arguments change between calls -- so it
 * is hashed once and reused while those arguments' guard keys are the
 * recorded ones (a replay then costs no walk over g's nodes). Sizes of
 * marked dims are in the key too: with marks about it is hashed afresh. */
static uint64_t entry_key(entry *e, PyObject *const *args, int backend)
{
    if (backend != ND_BACKEND_NATIVE || nd_marks_live || nd_marks_spec_all) return 0;
    if (!e->akeys && e->nbind) {
        e->akeys = PyMem_Calloc((size_t)e->nbind, sizeof(uint64_t));
        if (!e->akeys) return 0;  /* no memory to remember it: hashed per call */
    }
    int same = e->key != 0;
    for (int b = 0; b < e->nbind; b++) {
        uint64_t k = nd_guard_array_key(args[e->bind_arg[b]]);
        if (k != e->akeys[b]) { e->akeys[b] = k; same = 0; }
    }
    if (!same) {
        e->key = nd_guard_graph_key(e->g, e->outs, e->nout);
        nd_counter_add(ND_CTR_KEY_NODES, e->g->n);
    }
    return e->key;
}

static PyObject *bound(const cbind *b, PyObject *const *args, PyObject *prev, PyObject *const *last)
{
    PyObject *l = b->kind == B_PREV ? prev : b->kind == B_STEP ? last[b->step] : NULL;
    if (b->kind == B_ARG) return args[b->idx];
    return l && b->idx < PyList_GET_SIZE(l) ? PyList_GET_ITEM(l, b->idx) : NULL;
}

/* A step's key, hashed once: a chunk of 8192 nodes hashed on every run was
 * a tenth of a replayed lazy loop. Valid while its inputs' guard keys are
 * (its INPUT nodes bound). */
static uint64_t step_key(cstep *s, int backend)
{
    if (backend != ND_BACKEND_NATIVE || nd_marks_live || nd_marks_spec_all) return 0;
    uint64_t ik = 0x73746570ULL;
    for (int b = 0; b < s->nb; b++)
        ik = nd_hash_mix(ik, nd_guard_array_key(s->g->nodes[s->b[b].node].obj));
    if (!s->key || ik != s->ikey) {
        s->key = nd_guard_graph_key(s->g, s->outs, s->nout);
        s->ikey = ik;
        nd_counter_add(ND_CTR_KEY_NODES, s->g->n);
    }
    return s->key;
}

/* The chunks, in order; *prev and last[] receive their results (new refs). */
static int run_chain(nd_chain *c, PyObject *const *args, int backend, PyObject *options,
                     PyObject **prev, PyObject **last)
{
    for (int k = 0; k < c->n; k++) {
        cstep *s = &c->s[k];
        for (long r = 0; r < s->repeat; r++) {
            for (int b = 0; b < s->nb; b++) {
                PyObject *v = bound(&s->b[b], args, *prev, last);
                if (!v) {
                    for (int u = 0; u < b; u++) Py_CLEAR(s->g->nodes[s->b[u].node].obj);
                    PyErr_SetString(PyExc_SystemError, "numdyn: a replayed chunk lost its input");
                    return -1;
                }
                s->g->nodes[s->b[b].node].obj = Py_NewRef(v);
            }
            nd_graph_key_hint = step_key(s, backend);
            PyObject *res = nd__run_with_stores(backend, s->g, s->outs, s->nout, options, NULL, 0);
            nd_graph_key_hint = 0;
            for (int b = 0; b < s->nb; b++) Py_CLEAR(s->g->nodes[s->b[b].node].obj);
            if (res && (!PyList_Check(res) || PyList_GET_SIZE(res) != s->nout)) {
                Py_CLEAR(res);
                PyErr_SetString(PyExc_SystemError, "numdyn: replayed chunk returned a wrong result list");
            }
            if (!res) return -1;
            Py_XSETREF(*prev, res);
        }
        Py_XSETREF(last[k], Py_NewRef(*prev));
    }
    return 0;
}

static PyObject *run_entry(entry *e, PyObject *const *args, int backend, PyObject *options)
{
    PyObject *res = NULL, *prev = NULL, *last[MAX_STEPS] = {NULL};
    e->busy = 1;
    if (e->chain && run_chain(e->chain, args, backend, options, &prev, last) < 0) {
        Py_XDECREF(prev);
        for (int k = 0; k < MAX_STEPS; k++) Py_XDECREF(last[k]);
        e->busy = 0;
        if (e->orphan) {
            entry_clear(e);
            PyMem_Free(e);
        }
        return NULL;
    }
    int lost = 0;
    for (int b = 0; e->g && b < e->ncb; b++) {
        PyObject *v = bound(&e->cb[b], args, prev, last);
        lost |= !v;
        e->g->nodes[e->cb[b].node].obj = Py_XNewRef(v);
    }
    Py_XDECREF(prev);
    for (int k = 0; k < MAX_STEPS; k++) Py_XDECREF(last[k]);
    if (lost) {
        for (int b = 0; b < e->ncb; b++) Py_CLEAR(e->g->nodes[e->cb[b].node].obj);
        PyErr_SetString(PyExc_SystemError, "numdyn: a replayed graph lost a chunk's result");
    } else if (e->g) {
        for (int b = 0; b < e->nbind; b++)
            e->g->nodes[e->bind_node[b]].obj = Py_NewRef(args[e->bind_arg[b]]);
        nd_graph_key_hint = entry_key(e, args, backend);
        res = nd__run_with_stores(backend, e->g, e->outs, e->nout, options, e->stores, e->nstores);
        nd_graph_key_hint = 0;
        if (!res) fail_writes(e, args, nd_failed_node, nd_failed_before);
        for (int b = 0; b < e->nbind; b++) Py_CLEAR(e->g->nodes[e->bind_node[b]].obj);
        for (int b = 0; b < e->ncb; b++) Py_CLEAR(e->g->nodes[e->cb[b].node].obj);
        if (res && (!PyList_Check(res) || PyList_GET_SIZE(res) != e->nout)) {
            Py_CLEAR(res);
            PyErr_SetString(PyExc_SystemError, "numdyn: replayed graph returned a wrong result list");
        }
        if (res && e->nwb && write_back_args(e, res, args) < 0) Py_CLEAR(res);
    }
    int pos = 0;
    PyObject *out = !lost && (res || !e->g) ? rebuild(e->tmpl, &pos, res, args) : NULL;
    Py_XDECREF(res);
    e->busy = 0;
    if (e->orphan) {
        entry_clear(e);
        PyMem_Free(e);
    }
    return out;
}

PyObject *nd__replay_try(nd_replay *r, PyObject *fn, PyObject *const *args, size_t nargsf,
                         PyObject *kwnames, int backend, PyObject *options)
{
    if (!r->nentries) return NULL;
    if (r->fn != fn) {
        nd__replay_reset(r);
        r->fn = Py_NewRef(fn);
        note_miss(r, PyUnicode_FromString("the function or its numpy globals were rebound"));
        return NULL;
    }
    PyObject *why = NULL;
    if (!nd_envguards_ok(&r->env, &why)) {
        PyObject *f = Py_NewRef(fn);
        nd__replay_reset(r);
        r->fn = f;
        note_miss(r, why);
        return NULL;
    }
    for (int i = 0; i < r->nentries; i++) {
        entry *e = r->entries[i];
        if (e->busy || !entry_fits(e, args, nargsf, kwnames)) continue;
        r->hits++;
        nd_counter_add(ND_CTR_REPLAYS, 1);
        return run_entry(e, args, backend, options);
    }
    note_miss(r, miss_reason(r->entries[r->nentries - 1], args, nargsf, kwnames));
    return NULL;
}

int nd__replay_elem_eager(nd_replay *r) { return r->elem_eager; }
void nd__replay_set_elem_eager(nd_replay *r) { r->elem_eager = 1; }

PyObject *nd__replay_info(nd_replay *r)
{
    const char *state = !r || !r->scanned ? "unknown" : r->scanned > 0 ? "yes" : "no";
    return Py_BuildValue("{sssOsisLsLsO}", "eligible", state, "reason",
                         r && r->why ? r->why : Py_None, "entries", r ? r->nentries : 0,
                         "hits", r ? r->hits : 0LL, "misses", r ? r->misses : 0LL, "last_miss",
                         r && r->last_miss ? r->last_miss : Py_None);
}
