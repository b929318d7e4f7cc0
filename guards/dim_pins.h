/* dim_pins.h -- does a captured graph pin a dim marked dynamic to a
 * constant size? (dim_pins.c; torch raises ConstraintViolationError there)
 *
 * Each dim of each node gets a label saying where its extent comes from:
 * ND_PIN_FREE (numdyn's shape-generic default, or unknown), ND_PIN_CONST
 * (a size the program holds fixed: a dim marked static, every dim under
 * compile(dynamic=False), an array the function reads from outside its
 * arguments -- a global, a closure cell, an attribute), or a positive code
 * naming a dim marked dynamic. Labels flow through the ops whose extents
 * are their inputs' (elementwise broadcasting, casts, scans, reductions,
 * views that keep a dim whole, stores, matmul's contraction); everything
 * else makes FREE dims, so what is reported is always a real pin: a dim
 * marked dynamic broadcast against, stored into or contracted with a
 * constant one of the same size. Sizes 1 never pin (broadcasting).
 *
 * The caller classifies the graph's INPUT nodes; the scan is incremental
 * (a capture's flushes each label the nodes added since the last). */
#ifndef ND_DIM_PINS_H
#define ND_DIM_PINS_H
#include "graph/graph.h"

#define ND_PIN_FREE 0
#define ND_PIN_CONST (-1)

typedef struct {
    int32_t *lab;       /* PyMem: ND_MAXDIMS labels per node */
    nd_id done, cap;    /* nodes labelled so far; room */
} nd_pins;

typedef struct {
    nd_id node;         /* the node where the pin happens */
    int sym;            /* the dynamic dim's label */
    npy_intp size;      /* the extent both have */
    const char *how;    /* "broadcasts it against", "stores it into", "contracts it with" */
} nd_pin_found;

/* label of dim d of INPUT node id (ND_PIN_FREE, ND_PIN_CONST or a positive
 * code of the caller's choosing) */
typedef int32_t (*nd_pin_input_fn)(void *ctx, const nd_node *n, nd_id id, int d);

/* dims of a non-INPUT node whose extent the caller knows to be a constant
 * (a size written as a literal in the function's code: np.zeros(5)), as
 * a bit mask; 0 for none */
typedef uint64_t (*nd_pin_const_fn)(void *ctx, nd_id id);

/* Label nodes p->done .. g->n-1. Returns 0 (nothing pinned), 1 with *out
 * set at the first pin, or -1 with MemoryError. konst may be NULL. */
int nd_pins_scan(nd_pins *p, const nd_graph *g, nd_pin_input_fn input, nd_pin_const_fn konst,
                 void *ctx, nd_pin_found *out);
void nd_pins_clear(nd_pins *p);
#endif
