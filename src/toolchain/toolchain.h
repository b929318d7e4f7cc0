/* toolchain.h -- C text -> loaded code: the C compiler (toolchain_cc.c),
 * the on-disk cache of shared objects (cache_disk.c) and the in-memory
 * caches of kernels and programs (cache_mem.c). */
#ifndef ND_TOOLCHAIN_H
#define ND_TOOLCHAIN_H
#include "core/sb.h"
#include "codegen/codegen.h"
#include <sys/types.h>

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
                       const char *const *shown_srcs, const char *pch);
/* One compile started and not waited for (background compiles; in a
 * process group of its own, so a Ctrl-C at the terminal spares it): 0 with
 * *pid and *rfd (its output, non-blocking) set, or -1 with an exception. */
int nd_cc_start(int dirfd, const char *src_name, const char *so_name, const char *src_path,
                const char *pch, pid_t *pid, int *rfd);
/* pch (both): the include option of the precompiled header (pch.c), or NULL.
 * nd_cc_start_pch: the same for precompiling nd_kernel.h, with every unit's
 * options, into gch_name of directory dirfd. */
int nd_cc_start_pch(int dirfd, const char *gch_name, pid_t *pid, int *rfd);
/* Drain a started compile's output into *out (malloc'd, NUL-terminated,
 * grows; *olen its length); 0 while it runs (block: waits instead), 1 when
 * it ended with *status its exit status (0: compiled). */
int nd_cc_poll(pid_t pid, int rfd, char **out, size_t *olen, int block, int *status);
/* Raise the CompileError of a compile that ended with status; returns -1. */
int nd_cc_fail(int status, const char *src_path, const char *out);
/* 1 when the compiler is GCC (which takes precompiled headers by name) */
int nd_cc_is_gcc(void);
/* Per thread: when set, every compile the thread runs or collects appends
 * its command line, exit status and output (warnings) here
 * (NUMDYN_DEBUG_DIR's compile.txt); nd_cc_log_result logs one collected
 * background compile the same way. */
extern _Thread_local nd_sb *nd_cc_log;
void nd_cc_log_result(const char *src_name, const char *so_name, const char *src_path,
                      const char *pch, int status, const char *out);
/* Compilers run at once: the online cores, at most 16 (NUMDYN_COMPILE_JOBS). */
int nd_cc_jobs(void);
/* 1 when a compiler was found (warns once when not), 0 otherwise. */
int nd_cc_available(void);
uint64_t nd_cc_identity(void);           /* compiler + flags + host ISA; 0 on failure */
const char *nd_cc_flags(void);
extern PyObject *nd_CompileError;
/* OMP_WAIT_POLICY=PASSIVE when the user set neither it nor GOMP_SPINCOUNT
 * and no OpenMP runtime is loaded yet: at import (at_import=1) only on an
 * oversubscribed machine, else before the first kernel loads (cache_disk.c
 * has the measurements). */
void nd_omp_defaults(int at_import);

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
    /* Optional (both or neither): kkeys[s], the hash of symbol s's whole
     * kernel text (its definition alone: a unit is the prelude line and
     * self-contained kernel definitions); addrs[s] receives s's address.
     * With them, each kernel compiled is indexed by its text
     * (<16 hex>.k: kernel -> the unit holding it), and a unit not on disk
     * whose kernels ALL are in other cached units is assembled from those
     * (each loaded through the same checks as a unit of its own) instead
     * of compiled: the same kernels batched differently compile once. */
    const uint64_t *kkeys;
    void **addrs;
} nd_disk_unit;
int nd_disk_load_or_build_many(int n, const nd_disk_unit *units, void **handles);
/* Each of n kernels (kkeys[s]: the hash of its whole text, as in
 * nd_disk_unit; syms[s] its symbol) that the kernel index names loaded from
 * the cached unit holding it, through the same checks as any unit: addrs[s]
 * its address, or NULL (not indexed, or its unit refused). The number
 * found, or -1 with an exception (the cache directory unusable). A program
 * batching its kernels compiles only those not found: a unit with one new
 * kernel no longer compiles its other kernels again. */
int nd_disk_load_indexed(int n, const uint64_t *kkeys, const char *const *syms, void **addrs);
/* Per thread: nonzero makes nd_disk_load_or_build_many load only -- a unit
 * not in the cache is left with a NULL handle, no error (frozen mode). */
extern _Thread_local int nd_disk_load_only;
/* Per thread: nonzero makes it start the compiles of units not in the cache
 * and return at once (their handles NULL, no error); a later call for the
 * same unit finds it compiled (or raises its CompileError) once the
 * compiler ended. Background compiles: a first call runs with NumPy while
 * its kernels compile. */
extern _Thread_local int nd_disk_background;
int nd_disk_pending(void);      /* background compiles not yet collected */
/* Wait until every background compiler ended: 0, or -1 with the exception
 * a signal handler raised (Ctrl-C; the compilers go on). */
int nd_disk_wait_all(void);
/* The compile budget of background mode: a top-level call (framed by
 * nd_disk_call_begin/end, nestable, per thread) waits up to this many
 * seconds in all for its compilers, then runs with NumPy what is not built
 * yet; a request outside a framed call gets the budget to itself.
 * numdyn.config.compile_budget. */
double nd_disk_budget(void);
void nd_disk_set_budget(double seconds);
void nd_disk_call_begin(void);
void nd_disk_call_end(void);
/* Seconds the current call may still wait (the whole budget outside a
 * framed call); <= 0: spent. */
double nd_disk_budget_left(void);
/* How many background compiles have ended so far (polls them first): a
 * program found still compiling at one value cannot be ready before the
 * value changes. */
uint64_t nd_disk_progress(void);
int nd_disk_clear(void);
/* A private build directory in the cache directory dfd (name: 64 bytes);
 * its descriptor, or -1 with errno. Removing one removes its files. */
int nd_disk_make_build_dir(int dfd, char *name);
void nd_disk_remove_build_dir(int dfd, const char *name);
/* size + checksum of what fd holds (pread from its start); -1 on error */
int nd_disk_fd_sum(int fd, uint64_t *size, uint64_t *sum);
/* The cache directory opened after its checks (a descriptor; -1 with an
 * exception); a file in it opened for reading only when we may trust it
 * (ours, a regular file writable by nobody else; -1 with errno); a file
 * created there (0600, must not exist; -1 with errno). */
struct stat;
int nd_disk_open_dir(void);
int nd_disk_open_trusted(int dfd, const char *name, struct stat *st);
int nd_disk_write_new_at(int dfd, const char *name, const void *data, size_t n);

/* cache_blob.c: compiled code that is not a shared object (CUDA cubins),
 * file <16 hex of key><ext> of the cache directory (ext ".cubin" or
 * ".ptx": nd_disk_clear removes them), with a size + checksum header a
 * read verifies. get: 1 with *data (PyMem) and *len, 0 when absent,
 * untrusted or damaged, -1 with an exception (the directory is refused).
 * put: written under a temporary name, then renamed; 0, or -1 with no
 * exception (a cache that cannot be written costs a recompile). */
int nd_disk_blob_get(uint64_t key, const char *ext, char **data, size_t *len);
int nd_disk_blob_put(uint64_t key, const char *ext, const void *data, size_t len);

/* pch.c */
/* The include option ("-I../pch-<identity>", relative to a build
 * directory) that makes GCC take the precompiled nd_kernel.h from the cache
 * directory dfd, or NULL when it is not built: its build is then started in
 * the background, for later compiles (GCC only; NUMDYN_PCH=0: never). */
const char *nd_pch_include(int dfd);
/* Wait for a precompiled header's build still running (wait_compiles):
 * 0, or -1 with the exception a signal handler raised (Ctrl-C). */
int nd_pch_wait(void);

/* cache_mem.c */
nd_kfn nd_kcache_get(uint64_t hash);
int nd_kcache_put(uint64_t hash, nd_kfn fn);
nd_program *nd_pcache_get(uint64_t key);          /* borrowed */
int nd_pcache_put(uint64_t key, nd_program *p);   /* takes a reference */
/* 1 when this skeleton was compiled before under another guard key */
int nd_pcache_note_skeleton(uint64_t skeleton, uint64_t key);
void nd_mcache_clear(void);
#endif
