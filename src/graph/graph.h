/* graph.h -- numdyn's one IR: a typed DAG of array operations.
 *
 * Contract shared by the tracer (src/trace_*), the NumPy shim (numpy_shim/),
 * the passes (src/pass_*), the backends (src/backend_*, src/codegen_*) and
 * guards (guards/). Nodes are stored in one growable array and referred to
 * by index (nd_id); a node only ever refers to nodes with smaller ids, so
 * index order is a topological order.
 *
 * Every node has a concrete NumPy dtype (typenum) and a concrete shape.
 * Scalar operand *values* live in node->scalar and are kernel parameters;
 * graph hashing ignores them so that `x * 0.5` and `x * 0.25` share code.
 *
 * Reference rules: every PyObject* field of a node is an owned reference
 * (or NULL); nd_graph_free releases them.
 */
#ifndef ND_GRAPH_H
#define ND_GRAPH_H

#include "core/npy.h"

#define ND_MAXIN 3    /* fixed inputs; EXTERN nodes keep more in `extra` */

typedef int32_t nd_id;
#define ND_NONE ((nd_id)-1)

/* The ufuncs numdyn knows by identity. Codegen emits C for these; the eager
 * interpreter calls node->obj (the ufunc object itself) for any of them. */
typedef enum {
#define ND_UF(id, pyname, nin, nout) ND_UF_##id,
#include "ufuncs.def"
#undef ND_UF
    ND_UF_COUNT
} nd_ufunc_id;

typedef enum {
    ND_OP_INPUT = 0, /* obj: an ndarray (argument, global, or an already
                        materialized value). Shape/dtype are the array's. */
    ND_OP_SCALAR,    /* 0-d scalar parameter; value in `scalar`, typed at
                        `dtype` (weak Python scalars are typed at the
                        dtype they take by NEP 50). obj: the Python scalar. */
    ND_OP_UFUNC,     /* elementwise: sub = nd_ufunc_id, obj = ufunc object;
                        inputs broadcast to `shape`; each input is cast to
                        in_dtype[k] (the loop's dtype) before the op; aux =
                        which output for multi-output ufuncs (divmod...). */
    ND_OP_CAST,      /* in[0] converted to `dtype` (astype semantics). */
    ND_OP_WHERE,     /* in[0] ? in[1] : in[2], broadcast; in[1], in[2] are
                        already cast to `dtype` by the shim. */
    ND_OP_REDUCE,    /* sub = nd_ufunc_id of the reducing ufunc (add,
                        multiply, maximum, minimum, fmax, fmin, logical_and,
                        logical_or, bitwise_*), or ND_RED_ARGMAX/ARGMIN;
                        axes: bitmask over in[0]'s dims; flags ND_F_KEEPDIMS;
                        in_dtype[0] is the accumulation dtype; optional
                        in[1] = initial (SCALAR). */
    ND_OP_SCAN,      /* accumulate along axis `aux` (cumsum/cumprod...):
                        sub = ufunc id, in_dtype[0] = accumulation dtype. */
    ND_OP_VIEW,      /* affine view of in[0]: output element at index i
                        reads in[0]'s C-order flat element
                        voff + sum_d i_d * vstrides[d] (element units, may be
                        negative or 0 for broadcasting). Covers slicing,
                        transpose, reshape, broadcast_to, flip, diagonal,
                        expand_dims, squeeze, real/imag (see flags). */
    ND_OP_SETITEM,   /* functional update: result = in[0] (the whole base,
                        same shape/dtype as in[0]) with the region given by
                        the affine map (voff, vstrides over `vshape`) replaced by
                        in[1] broadcast to vshape and cast to dtype. */
    ND_OP_INDEX,     /* int64 array of `shape` whose value is the index
                        along axis `aux` (iota); the basis of arange, eye,
                        linspace, tri, indices. */
    ND_OP_GATHER,    /* advanced indexing read: in[0] array, in[1] int64
                        flat indices (already bounds-checked / wrapped). */
    ND_OP_EXTERN,    /* a NumPy function run on materialized inputs inside
                        the compiled program: obj = callable, attrs = (args
                        template, kwargs) where nd_placeholder objects mark
                        inputs; extra/nextra list every input node.
                        aux: -1, or item aux of a tuple result: a
                        multi-output call (svd, qr...) is one node per item,
                        all sharing one args template object, kwargs and
                        inputs; backends make the call once per run
                        (nd_eval_extern_group, backend.h). */
    ND_OP_COUNT
} nd_op;

/* A reduction whose reduced dims are this short or shorter (product of
 * their extents) is an unrolled expression inside its consumer's loop
 * (passes/schedule.h, frames): those extents are part of the graph's key
 * (nd_graph_size_pattern), longer ones are not, so other sizes still share
 * programs and kernels. */
#define ND_SHORT_MAX 16

#define ND_RED_ARGMAX (ND_UF_COUNT + 1)
#define ND_RED_ARGMIN (ND_UF_COUNT + 2)

/* node->flags */
#define ND_F_WEAK      0x0001u /* SCALAR came from a Python int/float/complex */
#define ND_F_KEEPDIMS  0x0002u
#define ND_F_VIEW_REAL 0x0004u /* VIEW selects the real part of complex in[0] */
#define ND_F_VIEW_IMAG 0x0008u /* VIEW selects the imaginary part */
#define ND_F_OUTPUT    0x0010u /* value is needed outside the graph */
#define ND_F_NOFUSE    0x0020u /* scheduler must materialize this node */
#define ND_F_KORDER    0x0040u /* an output NumPy lays out in memory order
                                  kperm, not C order (a ufunc of Fortran
                                  arrays): backends return it so laid out */
#define ND_F_SCALAR_STORE 0x0080u /* SETITEM of a NumPy scalar by a basic
                                  index or fill(): into a signed integer
                                  array NumPy converts it as int() does
                                  (runtime/backend.h, scalar stores) */
#define ND_F_SCALAR_MATH 0x0100u /* UFUNC of a Python operator on NumPy /
                                  Python scalars (0-d, NumPy's scalar math):
                                  integer add, subtract, multiply, negative,
                                  absolute report wrapping (ND_ERR_OVERFLOW),
                                  and the eager backend computes it on NumPy
                                  scalars, whose warnings say "scalar" */

#define ND_F_DATA_WARN 0x0200u /* UFUNC carrying a data-dependent NumPy
                                  RuntimeWarning of a nan-function, issued
                                  whatever the errstate: true_divide (nanmean's
                                  sum / count, computed with FP errors
                                  ignored) warns "Mean of empty slice" where
                                  the divisor is 0; positive (after
                                  nanmax/nanmin) warns "All-NaN slice
                                  encountered" where the value is NaN;
                                  subtract (nanvar's count - ddof) warns
                                  "Degrees of freedom <= 0 for slice."
                                  where the value is <= 0.
                                  Kernels report ND_ERR_DATAWARN; the eager
                                  backend issues the warning. */

#define ND_F_FP_KEPT   0x0800u /* with ND_F_DATA_WARN on a true_divide: the
                                  mean of a masked read (_methods._mean of
                                  NumPy's a[m]) warns "Mean of empty slice"
                                  where the count is 0, then divides under
                                  the user's errstate (its FP warning is
                                  NumPy's too, not ignored as nanmean's) */

#define ND_F_CHECK     0x0400u /* EXTERN that validates its input and raises
                                  NumPy's error (index_check: IndexError):
                                  NumPy raised it even where the value is
                                  never used, so flushes run it then too */
#define ND_F_SCATTER   0x0800u /* EXTERN scatter(base, flat, vals): extra[0]
                                  with extra[2]'s elements written at the
                                  int64 flat indices extra[1], in order; the
                                  native run writes into base's own buffer
                                  where it may consume it (nd_scatter_into) */

#define ND_F_CLIP      0x1000u /* UFUNC maximum/minimum made by np.clip
                                  (in[0] the clipped value, in[1] a bound):
                                  autodiff gives a tie to in[0] (torch.clamp:
                                  gradient 1 on the closed [min, max]) where
                                  a plain maximum/minimum halves it */

#define ND_F_FP_QUIET  0x2000u /* made by a NumPy function that checks no
                                  floating-point status (einsum's loops, vdot):
                                  the eager backend computes it with FP errors
                                  ignored, so no warning, no FloatingPointError */
#define ND_F_CMUL_PLAIN 0x4000u /* UFUNC multiply whose complex product rounds
                                  each part's two products apart (BLAS's dot,
                                  einsum's loops: (1e200+1e200j)**2 summed is
                                  nan+infj), not fused as NumPy's multiply
                                  ufunc's SIMD loop does (kernels/nd_kernel.h) */

/* REDUCE aux: 0, or the NumPy function one call of which computes this sum
 * of in[0]'s products (a UFUNC multiply of two vectors: np.dot, inner, the
 * ndarray method and np.linalg.norm's x.dot(x) -> ND_RED_BY_DOT; a 1-D @ ->
 * ND_RED_BY_MATMUL). NumPy runs BLAS there, whose FP warning names the
 * function ("overflow encountered in dot"), not multiply or reduce: the
 * eager backend calls that function on the product's operands. */
#define ND_RED_BY_DOT 1
#define ND_RED_BY_MATMUL 2

typedef union {
    double f;
    int64_t i;
    uint64_t u;
    struct { double re, im; } c;
} nd_scalar;

typedef struct nd_node {
    uint8_t op;          /* nd_op */
    uint8_t ndim;
    int16_t aux;         /* op-specific small integer (see nd_op) */
    int32_t sub;         /* op-specific: ufunc id / reduce kind */
    int32_t dtype;       /* NPY_TYPES typenum of the result */
    int32_t nin;
    nd_id in[ND_MAXIN];
    int32_t in_dtype[ND_MAXIN]; /* loop / accumulation dtypes (see op) */
    uint32_t flags;
    uint64_t axes;       /* REDUCE: bitmask over in[0]'s dims */
    npy_intp shape[ND_MAXDIMS];
    /* VIEW / SETITEM affine map, element units, C-order flat index of in[0] */
    npy_intp voff;
    uint8_t vndim;       /* SETITEM: rank of the written region */
    npy_intp vshape[ND_MAXDIMS];  /* SETITEM: shape of the written region */
    npy_intp vstrides[ND_MAXDIMS];
    nd_scalar scalar;    /* SCALAR value (kernel parameter) */
    int8_t kperm[ND_MAXDIMS]; /* ND_F_KORDER: dims outermost first */
    nd_id *extra;        /* EXTERN: all input ids (malloc'd, owned) */
    int32_t nextra;
    PyObject *obj;       /* owned or NULL (see op) */
    PyObject *attrs;     /* owned or NULL: extra attributes for printing and
                            the eager interpreter (e.g. {'axis':..,'keepdims':..}) */
    PyObject *value;     /* owned or NULL: the materialized ndarray; once set,
                            the node behaves as an INPUT for later flushes */
    int32_t refs;        /* number of consumers; maintained by nd_graph_add */
} nd_node;

typedef struct nd_graph {
    nd_node *nodes;
    int32_t n, cap;
    /* 1: passes/cse.h found no common subexpression in this graph (a
     * replayed graph runs again and again: the verdict is kept, never a
     * merge -- sizes may be rebound, values of one entry are not) */
    uint8_t cse_none;
    /* a pass's product kept with the graph and freed with it (passes/cse.h:
     * the graph with common subexpressions merged, for a graph that runs
     * again: a replay) */
    void *derived;
    void (*derived_free)(void *);
} nd_graph;

nd_graph *nd_graph_new(void);                    /* NULL + MemoryError */
/* Room for n nodes without regrowing (best effort: no error when memory
 * is short, the graph then grows on demand). Node arrays of freed graphs
 * are reused, so a capture loop does not fault fresh pages in each time. */
void nd_graph_reserve(nd_graph *g, int32_t n);
void nd_graph_free(nd_graph *g);
/* Append a node (copied from *proto, whose PyObject fields are *stolen*).
 * Returns its id, or ND_NONE with an exception set. Increments `refs` of
 * the inputs. */
nd_id nd_graph_add(nd_graph *g, const nd_node *proto);
static inline nd_node *nd_graph_node(nd_graph *g, nd_id id) { return &g->nodes[id]; }
void nd_node_init(nd_node *n, int op, int dtype, int ndim, const npy_intp *shape);
npy_intp nd_node_size(const nd_node *n);

/* Copy into a fresh standalone graph the nodes needed to compute `outs`.
 * Nodes with a `value` (and INPUT nodes) become INPUT nodes holding that
 * array. map (length g->n, may be NULL) receives old id -> new id or ND_NONE.
 * new_outs receives the new ids of outs. */
nd_graph *nd_graph_extract(nd_graph *g, const nd_id *outs, int nout,
                           nd_id *map, nd_id *new_outs);
/* The same on the caller's scratch, at the cost of the extracted nodes
 * rather than of g (a flush late in a long capture: zeroing and faulting in
 * arrays of g->n entries per flush cost more than the flush's work).
 * need: g->n bytes, zero on entry, zero again on return; map: g->n ids,
 * ND_NONE on entry; on success map[i] is set for the extracted nodes, whose
 * ids *order lists (PyMem, caller frees; *norder of them): the caller puts
 * map back through it. On failure map and need are as on entry. */
nd_graph *nd_graph_extract_scratch(nd_graph *g, const nd_id *outs, int nout, char *need,
                                   nd_id *map, nd_id *new_outs, nd_id **order,
                                   Py_ssize_t *norder);

/* What computing `outs` touches: sets mark[i] = 1 (mark: g->n zeroed
 * bytes) for the outs and, through every marked node that has no value and
 * is not an INPUT, its inputs (all_inputs: in[] and extra[] of every node;
 * otherwise extra[] of externs and in[] of the others, as nd_graph_extract).
 * *list gets the marked ids in ascending (topological) order (PyMem; free
 * it). Returns their count, or -1 with MemoryError. Costs the marked
 * nodes, not the graph: a flush late in a long capture needs a few recent
 * nodes and the inputs they read, and sweeping every id down to those
 * inputs made each flush cost the capture's length. */
Py_ssize_t nd_graph_ancestors(const nd_graph *g, const nd_id *outs, int nout, int all_inputs,
                              char *mark, nd_id **list);

/* Structural hash: ops, dtypes, ranks, which dims are 1, which non-1 dims
 * are equal (nd_graph_size_pattern), view maps, attrs, the layout class of
 * INPUT arrays -- but not the sizes themselves or scalar values. */
uint64_t nd_graph_hash(nd_graph *g, const nd_id *outs, int nout);
/* Hash of the equality pattern of the graph's non-1 dims (not the sizes). */
uint64_t nd_graph_size_pattern(const nd_graph *g);

const char *nd_op_name(int op);
const char *nd_ufunc_name(int ufunc_id);  /* NumPy's name, e.g. "add" */
int nd_ufunc_nin(int ufunc_id);
int nd_ufunc_nout(int ufunc_id);
/* 1 for the six comparisons (greater ... not_equal). */
int nd_ufunc_is_comparison(int ufunc_id);
/* id of a ufunc object, or -1 when it is not one numdyn knows */
int nd_ufunc_lookup(PyObject *ufunc);
PyObject *nd_ufunc_object(int ufunc_id);         /* borrowed */
int nd_ufuncs_init(void);                        /* at module init */

/* Readable listing, one node a line (used by str(numdyn.Graph)). */
PyObject *nd_graph_repr(nd_graph *g, const nd_id *outs, int nout);

/* The IR's invariants (graph_verify.c): ops, ranks, dtypes, inputs that
 * are earlier nodes (index order is topological), broadcastable operands,
 * reduced axes, view/setitem/extern operands, kperm permutations, INPUT
 * arrays shaped like their nodes, outputs in range. 0, or -1 with
 * SystemError naming `stage` ("tracing", "scheduling"), the node, the rule. */
int nd_graph_verify(const nd_graph *g, const nd_id *outs, int nout, const char *stage);
/* 1 when NUMDYN_DEBUG is set (not "0"): the pipeline verifies the graph
 * after tracing and the program after scheduling. */
int nd_debug_checks(void);

/* 1 when an ndarray can be an INPUT node: a dtype of the IR (bool, ints,
 * float16/32/64, complex64/128), native byte order, rank <= ND_MAXDIMS. */
int nd_supported_array(PyObject *arr);
/* NumPy's float32/float64 power loop, given one exponent for the whole
 * loop (a scalar or 0-d exponent, a stride-0 operand), computes 2 as x * x,
 * -1 as 1 / x and 0.5 as sqrt(x) -- other values than pow's in the last
 * bit, and at -0.0 and -inf for 0.5 (sqrt(-inf) is nan, pow's inf). Its
 * float16 loop computes in float with pow, where only 2 is exact either
 * way. The class of a SCALAR exponent node by its value (an integer is
 * cast to the float loop's type); the guard key and the kernel key cover
 * it, so a kernel may depend on it. */
enum { ND_POW_GENERAL, ND_POW_SQUARE, ND_POW_RECIPROCAL, ND_POW_SQRT };
int nd_scalar_power_class(const nd_node *scalar);

/* EXTERN argument templates (graph_extern.c): the placeholder object for
 * input k (new ref) marks where the k-th input array goes;
 * nd_extern_placeholder_index gives k, or -1 for any other object.
 * Placeholders hash and compare by index. */
PyObject *nd_extern_placeholder(int k);
int nd_extern_placeholder_index(PyObject *obj);
int nd_extern_placeholder_init(void);            /* at module init */

#endif
