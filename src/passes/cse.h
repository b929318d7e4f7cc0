/* cse.h -- common subexpressions of a flushed graph computed once.
 *
 * A trace unrolls the user's loops, so an expression whose operands do not
 * change between iterations is in the graph once an iteration: pagerank's
 * `0.85 * M @ r` scales the whole matrix M each of its 30 iterations,
 * gradient descent's `lr * X.T @ r` each step. NumPy runs each of them,
 * and so did numdyn; this pass merges nodes that compute the same value
 * (same op and attributes, same inputs after merging, equal scalar
 * values), so the value is computed once and read by every consumer.
 *
 * Soundness: every op of the IR is a pure function of its inputs and
 * attributes (EXTERN nodes run NumPy functions of the shim's tables on
 * arrays, deterministic; random draws and user callables are never
 * EXTERN nodes). A merge is decided on the graph that is then hashed,
 * scheduled and recorded, so a program built for merged values is only
 * ever run for a graph with that structure -- the structural hash, which
 * ignores scalar values, sees one node where the trace had two, and a
 * trace whose scalars differ keeps both and hashes differently.
 * Not merged: INPUT nodes (donation and replay bind them one by one) and
 * nodes marked ND_F_OUTPUT when another node already computes their value
 * (two results handed to Python must be two arrays).
 */
#ifndef ND_CSE_H
#define ND_CSE_H
#include "graph/graph.h"

/* Value numbering of g (unchanged): rep (g->n entries) receives each
 * node's representative, the first node computing its value (itself when
 * kept). keep (g->n flags, or NULL: the ND_F_OUTPUT flag) marks nodes
 * never merged into an earlier one. Returns the number of operations
 * merged (SCALAR nodes merge too, uncounted), or -1 with MemoryError. */
int nd_pass_cse(nd_graph *g, nd_id *rep, const char *keep);

/* g with its common subexpressions computed once, as a new graph of the
 * nodes the outputs need: *gmap (PyMem, g->n entries; the caller frees it)
 * gives each node's id there (a merged node: its representative's, an
 * output: its own; ND_NONE: no longer needed). NULL with no exception when
 * nothing merges (the caller runs g), NULL with an exception on failure.
 * The outputs are kept apart from one another. */
nd_graph *nd_cse_graph(nd_graph *g, const nd_id *outs, int nout, nd_id **gmap);

#endif
