/* native.h -- internal interfaces of the native CPU backend.
 *
 * Data flows one way:
 *   pass_schedule.c  graph -> program: which nodes get a buffer, kernels
 *                    (fused loops) and eager steps, buffer lifetimes
 *   codegen_*.c      kernel -> C text (codegen_expr.c: one element's scalar
 *                    expression; codegen_loops.c: the loop nest around it;
 *                    codegen_c.c: translation unit, kernel names)
 *   toolchain_cc.c   C text -> shared object (cc, dlopen)
 *   cache_mem.c      kernel hash -> function; graph key -> program
 *   cache_disk.c     TU key -> .so on disk
 *   runtime_native.c program + graph -> output arrays
 *   backend_native.c nd_backend_native_run: the glue
 *
 * A program refers to nodes by id only. It is built for one graph and
 * reused for every graph with the same structural key (same hash: same ops,
 * dtypes, ranks, size-1 dims, view maps, input layouts): sizes, scalar
 * values and arrays are read from the graph at run time, so nothing a
 * program decides may depend on a size.
 */
#ifndef ND_NATIVE_H
#define ND_NATIVE_H
#include "graph.h"
#include <stdarg.h>

/* ------------------------------------------------------ string builder */
typedef struct nd_sb {
    char *p;
    size_t n, cap;
    int oom;          /* an append failed: the text is incomplete */
} nd_sb;
void nd_sb_init(nd_sb *b);
void nd_sb_free(nd_sb *b);
void nd_sb_puts(nd_sb *b, const char *s);
void nd_sb_printf(nd_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 0, or -1 with MemoryError when an append failed */
int nd_sb_check(nd_sb *b);
uint64_t nd_fnv64(const void *data, size_t n, uint64_t h);
#define ND_FNV_INIT 1469598103934665603ULL

/* ------------------------------------------------------------- kernels */
typedef void (*nd_kfn)(char *const *ptrs, const int64_t *ints, const nd_scalar *scalars, int *err);

/* kernel error bits: the same values as kernels/nd_kernel.h */
#define ND_ERR_DIVZERO 1
#define ND_ERR_OVERFLOW 2
#define ND_ERR_NEGPOW 4
#define ND_ERR_NOMEM 8
#define ND_ERR_OOB 16
#define ND_ERR_INTERRUPT 32
#define ND_ERR_FPE_DIV 64      /* floating-point status flags (kernels/nd_kernel.h) */
#define ND_ERR_FPE_OVER 128
#define ND_ERR_FPE_UNDER 256
#define ND_ERR_FPE_INVALID 512

enum nd_kkind { ND_K_POINTWISE, ND_K_REDUCE, ND_K_SCAN, ND_K_REGION, ND_K_ROW };

/* How a kernel reaches one array. */
enum nd_access {
    ND_A_DIRECT,   /* the node's own array, broadcast to the domain */
    ND_A_VIEW,     /* via = VIEW node: affine map into buf's C-contiguous array */
    ND_A_REGION,   /* via = SETITEM node: its region inside buf's array */
    ND_A_REDOUT,   /* the output of a REDUCE over the domain (reduced dims: stride 0) */
    ND_A_ROWB,     /* a row value without the reduced dims: its dims are the
                      domain's leading (kept) dims */
};

typedef struct nd_kop {
    nd_id buf;      /* node whose array is read or written */
    nd_id via;      /* access node (== buf for DIRECT/REDOUT) */
    int8_t acc;     /* enum nd_access */
    int8_t inner;   /* element stride along the innermost kernel dim when
                       known from structure: 0 or 1; -1: a runtime value */
    int32_t dtype;  /* element dtype in memory */
} nd_kop;

typedef struct nd_kernel {
    int kind;
    nd_id root;          /* REDUCE/SCAN/SETITEM node; POINTWISE: first output */
    nd_id dom;           /* node whose shape is the iteration domain */
    int dom_v;           /* 1: the domain is dom's vshape (a SETITEM region) */
    int rank;            /* kernel dims: the domain's dims that are not 1 */
    int8_t dims[ND_MAXDIMS];  /* kernel dim -> domain dim */
    uint32_t red;        /* REDUCE/ROW: reduced kernel dims */
    int scan;            /* SCAN: kernel dim of the axis, -1 when it has size 1 */
    int nin, nout;
    nd_kop *ops;         /* nin inputs, then nout outputs */
    nd_id *oval;         /* per output: the node whose value is stored */
    int nscal;
    nd_id *scal;         /* SCALAR nodes passed as parameters, in S order */
    int ninl;
    nd_id *inl;          /* nodes computed per element, topological */
    int nrow;            /* ROW: nodes computed once per row (after the reductions) */
    nd_id *rowv;
    int nred;            /* ROW: the REDUCE nodes, in order */
    nd_id *reds;
    int cost;            /* per-element cost, for the thread threshold */
    int nomerge;         /* dims may not be merged (an INDEX reads them) */
    int err_uf;          /* ufunc id named in integer-division warnings */
    uint64_t hash;       /* of the generated text: the kernel's name */
    nd_kfn fn;
} nd_kernel;

enum nd_stepkind {
    ND_S_KERNEL,    /* run kerns[kern] */
    ND_S_EAGER,     /* nd_eval_node(node) with NumPy */
    ND_S_BASE,      /* SETITEM `node`: its array = in[0]'s array (taken, or copied) */
};
typedef struct nd_step {
    int kind;
    int kern;
    nd_id node;
} nd_step;

typedef struct nd_program {
    uint64_t key;
    int refcnt;             /* owners: the graph cache and running calls */
    int32_t nnodes;
    int nsteps;
    nd_step *steps;
    int nkern;
    nd_kernel *kerns;
    uint8_t *mat;           /* per node: holds an array at run time */
    uint8_t *own;           /* per node: array allocated by a kernel step */
    uint8_t *kord;          /* per node: own array allocated in the node's
                               memory order kperm (graph.h ND_F_KORDER), not
                               C: a pointwise kernel's output NumPy lays out
                               so (a ufunc of Fortran arrays) */
    uint8_t *take;          /* per SETITEM: may write into in[0]'s array */
    int32_t *last;          /* per node: last step reading it (-1: none) */
    uint8_t *isout;         /* per node: an output (kept) */
    int32_t *freeat;        /* nsteps + 1 offsets into freen: the buffers */
    nd_id *freen;           /* whose last reader is step t (not outputs) */
    int nout;
    nd_id *outs;
} nd_program;

/* pass_rowfuse.c: row groups (see there). rowgrp[i]: group or -1; level[i]:
 * ND_ROW_*. Returns the number of groups, -1 + exception. */
enum { ND_ROW_NONE, ND_ROW_DOMAIN, ND_ROW_A, ND_ROW_B };
int nd_rowfuse_find(nd_graph *g, int32_t *rowgrp, uint8_t *level);

/* pass_schedule.c */
nd_program *nd_schedule(nd_graph *g, const nd_id *outs, int nout);
void nd_program_free(nd_program *p);
void nd_program_decref(nd_program *p);

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
/* append the C form of ufunc `uf` (output `aux`) over loop dtype `loop`
 * applied to operand texts a, b; sets *uses_err when it collects error
 * bits. -1 (no exception) when the ufunc has no loop for that dtype. */
int nd_cg_ufunc(nd_sb *sb, int uf, int aux, int loop, const char *a, const char *b, int *uses_err);
/* the value of scalar parameter S[j] as dtype t's computation type */
void nd_cg_param(nd_sb *sb, int t, int j);
int nd_cg_is_complex(int dtype);
int nd_cg_part_dtype(int dtype);         /* complex: the dtype of each part; else dtype */
/* an expression converting `expr` (a value of computation type `from`) to `to` */
void nd_cg_cast(nd_sb *sb, const char *expr, int from, int to);
void nd_cg_load(nd_sb *sb, const char *ptr_elem, int dtype);   /* value from storage */
void nd_cg_store(nd_sb *sb, const char *lvalue, const char *val, int dtype);

/* codegen_loops.c: the kernel function (name from its hash) */
int nd_cg_kernel(nd_graph *g, nd_kernel *k, nd_sb *out);
/* Store-check mode (NUMDYN_CHECK_STORES=1, fixed per process; the test
 * suite turns it on): every store of a generated kernel first checks that it
 * lands inside its output's bytes, which the runtime passes after the
 * operand pointers; a stray store is skipped and raised as an error. */
int nd_cg_check_stores(void);

/* codegen_c.c */
const char *nd_cg_header_dir(void);      /* kernels/ directory; NULL + exc */
uint64_t nd_cg_header_hash(void);        /* of the headers' text */

/* toolchain_cc.c */
/* Compile the source file src_name of directory dirfd into the shared
 * object so_name there (the compiler runs with dirfd as its working
 * directory, so no path outside it is resolved); returns 0, or -1 with
 * CompileError (compiler message + shown_src, the path the source is kept
 * at) or another exception. */
int nd_cc_compile(int dirfd, const char *src_name, const char *so_name, const char *shown_src);
/* The same for n sources at once, each src_name -> so_name in its own
 * directory dirfds[i] (shown as shown_srcs[i]): up to nd_cc_jobs()
 * compilers run in parallel. 0 when all compiled; -1 with the first
 * failure's exception. */
int nd_cc_compile_many(int n, const int *dirfds, const char *src_name, const char *so_name,
                       const char *const *shown_srcs);
/* Compilers run at once: the online cores, at most 16 (NUMDYN_COMPILE_JOBS). */
int nd_cc_jobs(void);
/* 1 when a compiler was found (warns once when not), 0 otherwise. */
int nd_cc_available(void);
uint64_t nd_cc_identity(void);           /* compiler + flags + host ISA; 0 on failure */
const char *nd_cc_flags(void);
extern PyObject *nd_CompileError;

/* cache_disk.c */
/* The cache directory (checked: owned by us, not group/world writable). */
const char *nd_disk_dir(void);           /* NULL + exception */
/* Load (or compile and store) the unit `src`; returns a dlopen handle that
 * has every symbol of syms (a cached unit lacking one is rebuilt).
 * *compiled: 1 when the compiler ran (0: loaded from the cache) */
void *nd_disk_load_or_build(const char *src, size_t len, uint64_t key,
                            const char *const *syms, int nsyms, int *compiled);
/* Several units at once: the ones not in the cache compile in parallel
 * (nd_cc_compile_many). handles[i] for units[i]; 0, or -1 with an
 * exception (handles of units that did load stay set). */
typedef struct {
    const char *src;
    size_t len;
    uint64_t key;
    const char *const *syms;
    int nsyms;
    int *compiled;    /* set to 1 when the compiler ran for this unit */
} nd_disk_unit;
int nd_disk_load_or_build_many(int n, const nd_disk_unit *units, void **handles);
int nd_disk_clear(void);

/* cache_mem.c */
nd_kfn nd_kcache_get(uint64_t hash);
int nd_kcache_put(uint64_t hash, nd_kfn fn);
nd_program *nd_pcache_get(uint64_t key);          /* borrowed */
int nd_pcache_put(uint64_t key, nd_program *p);   /* takes a reference */
/* 1 when this skeleton was compiled before under another guard key */
int nd_pcache_note_skeleton(uint64_t skeleton, uint64_t key);
void nd_mcache_clear(void);

/* runtime_alloc.c: uninitialized C-contiguous arrays; big ones from a
 * bounded pool of recycled blocks (no page faults on reuse) */
PyObject *nd_alloc_array(int ndim, const npy_intp *shape, int dtype);
/* The same laid out in memory order kperm (dims outermost first). */
PyObject *nd_alloc_array_order(int ndim, const npy_intp *shape, int dtype, const int8_t *kperm);
void nd_pool_clear(void);

/* runtime_native.c */
PyObject *nd_run_program(nd_program *p, nd_graph *g, const nd_id *outs, int nout);

#endif
