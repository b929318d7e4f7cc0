/* containers.h -- Python containers: built from C arrays, and walked
 * (containers.c). */
#ifndef ND_CONTAINERS_H
#define ND_CONTAINERS_H
#include "npy.h"

/* A tuple of Python ints (shape, strides, axes); new ref, or NULL with an
 * exception set. */
PyObject *nd_intp_tuple(int n, const npy_intp *v);
/* (first, *rest) for a tuple rest, (first,) for rest NULL; new ref, or
 * NULL with an exception set */
PyObject *nd_tuple_prepend(PyObject *first, PyObject *rest);
/* A vectorcall's arguments as PyObject_Call takes them: *args the first
 * nargs of argv (a tuple), *kwargs the keyword ones (argv[nargs:] by
 * kwnames) as a dict -- NULL when there are none unless always_dict (an
 * empty one then: a callee that takes the dict positionally). 0, or -1
 * with an exception set and both NULL. */
int nd_vectorcall_unpack(PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames,
                         int always_dict, PyObject **args, PyObject **kwargs);

/* Container walking: the same structure with some leaves replaced.
 * fn(o, depth, ctx) returns o's replacement (new ref; o itself to keep
 * it), NULL with an exception set, or ND_NOT_LEAF to look inside o.
 * Inside: tuples (namedtuples rebuilt through their type's _make), lists
 * and dicts (subclasses of dict too with ND_WALK_DICT_SUBCLASSES: same
 * type, same items, through o.copy()); anything else, or anything deeper
 * than maxdepth, is kept. A container none of whose leaves changed is
 * returned as it is (new ref). */
extern char nd__not_leaf;
#define ND_NOT_LEAF ((PyObject *)&nd__not_leaf)
#define ND_WALK_DICT_SUBCLASSES 0x1u
typedef PyObject *(*nd_leaf_fn)(PyObject *o, int depth, void *ctx);
PyObject *nd_map_leaves(PyObject *o, nd_leaf_fn fn, void *ctx, int maxdepth, unsigned flags);
/* The leaves of o as nd_map_leaves walks it (tuples, lists, exact dicts;
 * o itself when it is none of them), in order: a new list, or NULL. */
PyObject *nd_tree_leaves(PyObject *o, int maxdepth);
/* o's structure with its leaves (nd_tree_leaves' order) replaced by the
 * items of the sequence `leaves`, which must have as many. New ref. */
PyObject *nd_tree_unflatten(PyObject *o, PyObject *leaves, int maxdepth);
/* fn(leaf, ctx) for each leaf of o in order (inside tuples, lists and
 * dicts, subclasses too, down to maxdepth levels: a container deeper is
 * skipped, not visited) until fn returns nonzero: that value (-1 with an
 * exception set, or a result of the caller's), else 0. The one walk of
 * nested arguments: a tape node's Tensors, versions, predicates. */
typedef int (*nd_visit_fn)(PyObject *leaf, void *ctx);
int nd_tree_each(PyObject *o, nd_visit_fn fn, void *ctx, int maxdepth);
/* pred(leaf) for some leaf of o (as nd_tree_each walks it): 1, else 0 */
int nd_tree_any(PyObject *o, int (*pred)(PyObject *), int maxdepth);
#endif
