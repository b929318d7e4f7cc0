/* codegen.h -- kernel -> C text (codegen_expr.c: one element's scalar
 * expression; codegen_loops.c: the loop nest around it; codegen_c.c: where
 * the headers generated code includes live). Names in generated source are
 * derived from hashes: no text from user code reaches it. */
#ifndef ND_CODEGEN_H
#define ND_CODEGEN_H
#include "core/sb.h"
#include "graph/hash.h"
#include "passes/schedule.h"

/* codegen_expr.c: one element */
/* 1 when the node can be computed by generated code (op, ufunc, dtypes) */
int nd_cg_supported(nd_graph *g, nd_id id);
int nd_cg_reduce_supported(nd_graph *g, nd_id id);
int nd_cg_scan_supported(nd_graph *g, nd_id id);
int nd_cg_cost(nd_graph *g, nd_id id);   /* rough cycles per element */
const char *nd_cg_ctype(int dtype);      /* computation type */
const char *nd_cg_stype(int dtype);      /* storage type */
const char *nd_cg_sfx(int dtype);        /* helper suffix */
int nd_cg_dtype_ok(int dtype);
int nd_cg_elsize(int dtype);             /* bytes of one element */
/* append "<ctype> v<id> = <expr>;" for a pointwise node; the inputs'
 * variables v<in> already exist. -1 + exception when unsupported. */
int nd_cg_node(nd_graph *g, nd_id id, nd_sb *sb, int *uses_err);
/* Whether node id (kernel k: any node it computes) may raise FE_INVALID on
 * a NaN operand where NumPy's loop raises none, so that the flag must be
 * read. quiet: NULL (the structure alone: any binary arithmetic may), or a
 * test of a binary ufunc node that its operands' values keep quiet (the
 * runtime's, which knows the scalar parameters). */
typedef int (*nd_cg_quiet_fn)(nd_graph *g, const nd_node *n);
int nd_cg_may_flag_invalid(nd_graph *g, nd_id id, nd_cg_quiet_fn quiet);
int nd_cg_kernel_may_flag_invalid(nd_graph *g, const nd_kernel *k, nd_cg_quiet_fn quiet);
/* 1 (default): ordered float compares use the quiet forms; nd_cg_kernel
 * clears it for a kernel whose "invalid" flag is dropped anyway */
extern _Thread_local int nd_cg_quiet_cmp;
/* append the C form of ufunc `uf` (output `aux`) over loop dtype `loop`
 * applied to operand texts a, b; sets *uses_err when it collects error
 * bits. -1 (no exception) when the ufunc has no loop for that dtype. */
int nd_cg_ufunc(nd_sb *sb, int uf, int aux, int loop, const char *a, const char *b, int *uses_err);
/* the value of scalar parameter S[j] as dtype t's computation type */
void nd_cg_param(nd_sb *sb, int t, int j);
int nd_cg_is_complex(int dtype);
int nd_cg_part_dtype(int dtype);         /* complex: the dtype of each part; else dtype */
/* an integer dtype's unsigned twin (integer sums and products accumulate
 * in it: wrapping as NumPy, no UB); any other dtype as it is */
int nd_cg_unsigned_twin(int dtype);
/* the C and CUDA loop emitters' shared text: "const int64_t i<d> = ...;"
 * for each dim d < R in mask, taken from the flat index in r_ (innermost
 * dim first; the outermost takes what is left) */
void nd_cg_bind_dims(nd_sb *sb, int R, uint32_t mask);
/* one element's step of an argmax (argmax 1) / argmin over accumulator sa
 * and index si: value cv_ of element e wins when it beats sa, or (floats)
 * when sa is NaN -- NumPy's first NaN is kept */
void nd_cg_arg_step(nd_sb *sb, int argmax, int is_float, const char *sa, const char *si, int e);
/* an expression converting `expr` (a value of computation type `from`) to `to` */
void nd_cg_cast(nd_sb *sb, const char *expr, int from, int to);
/* the same for a cast NumPy runs as a cast loop (astype, stores): float ->
 * integer conversions out of range or of NaN set ND_ERR_FPE_INVALID in
 * nd_err ("invalid value encountered in cast"); *uses_err = 1 when so */
void nd_cg_cast_checked(nd_sb *sb, const char *expr, int from, int to, int *uses_err);
void nd_cg_load(nd_sb *sb, const char *ptr_elem, int dtype);   /* value from storage */
void nd_cg_store(nd_sb *sb, const char *lvalue, const char *val, int dtype);

/* codegen_loops.c: the kernel function (name from its hash) */
int nd_cg_kernel(nd_graph *g, nd_kernel *k, nd_sb *out);
/* codegen_memo.c: a kernel's name (k->hash), cost and nomerge bit from the
 * structure nd_cg_kernel's text is made of, before making it: lookup gives
 * 1 (k's fields set as nd_cg_kernel would set them), 0 (unknown: make the
 * text, then store), -1 with an exception. m holds the key between the two;
 * nd_cg_memo_free it after either (store takes it when kept). */
typedef struct nd_cg_memo { char *key; size_t len; uint64_t h; } nd_cg_memo;
int nd_cg_memo_lookup(nd_graph *g, nd_kernel *k, nd_cg_memo *m);
int nd_cg_memo_store(nd_cg_memo *m, const nd_kernel *k);
void nd_cg_memo_free(nd_cg_memo *m);
/* Per thread, set by the native backend while it schedules and compiles a
 * program: the sizes the program's graph key holds constant (the dims
 * marked static of its INPUT arrays; every dim under compile(dynamic=False)).
 * A kernel domain dim whose extent is one of them -- the key's size pattern
 * keeps it equal to that static dim in every graph of the key -- is a
 * constant in the generated C (`const int64_t n0 = 64;`), as are its dims
 * of extent 1, and the kernel's dims are not merged at run time
 * (k->nomerge): the extents it is called with are the ones it was built for. */
extern _Thread_local const npy_intp *nd_cg_static_sizes;
extern _Thread_local int nd_cg_nstatic;
/* 1: kernels get every run-time variant (nd_cg_kernel otherwise leaves out
 * one the current call's sizes do not take, and the kernel reports
 * ND_ERR_VARIANT when later sizes need it: runtime_native.c) */
extern _Thread_local int nd_cg_all_variants;
/* Store-check mode (NUMDYN_CHECK_STORES=1, fixed per process; the test
 * suite turns it on): every store of a generated kernel first checks that it
 * lands inside its output's bytes, which the runtime passes after the
 * operand pointers; a stray store is skipped and raised as an error. */
int nd_cg_check_stores(void);

/* codegen_c.c */
const char *nd_cg_header_dir(void);      /* kernels/ directory; NULL + exc */
uint64_t nd_cg_header_hash(void);        /* of the headers' text */

/* The table the scheduler asks (passes/schedule.h), for the C generator. */
extern const nd_emit_caps nd_cg_emit_caps;

/* codegen_loop.c: a captured loop typed for one signature -> a C unit
 * defining  int nd_loop_main(nd_lframe *F)  (kernels/nd_loop.h). 0; 1 when
 * this signature cannot be compiled (T->reason says why); -1 with an
 * exception. *needs_snapshot: bit 1, the code may deoptimize (the runner
 * must be able to restore the arrays it writes); bit 2, NumPy float
 * arithmetic left its events to the FP flags (the runner clears
 * FE_DIVBYZERO|FE_OVERFLOW|FE_INVALID before the call, and one raised
 * after it deoptimizes, unless np.errstate ignores all three: then it
 * needs no snapshot for them). */
struct nd_ltyping_s;
int nd_codegen_loop(struct nd_ltyping_s *T, nd_sb *out, int *needs_snapshot);
#endif
