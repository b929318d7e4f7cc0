/* toolchain_cc.c -- the system C compiler: finding it, its identity (part
 * of every disk-cache key), and compiling a translation unit into a shared
 * object.
 *
 * The compiler runs through posix_spawn with an argument vector (never a
 * shell command line), its output captured through a pipe, with the GIL
 * released. A failure raises numdyn.CompileError showing the compiler's
 * message and the generated source's path.
 */
#define _GNU_SOURCE 1
#include "core/npy.h"
#include "toolchain.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

PyObject *nd_CompileError;

#define MAXARGS 64

static char cc_path[4096];
static char *cc_extra[16];   /* extra words of $CC ("ccache gcc", "gcc -m64") */
static int cc_nextra;
static char cc_words[4096];
static int cc_state;         /* 0 unknown, 1 found, -1 missing */
static char cc_env[4096];    /* the $CC value the state was computed for */
static uint64_t cc_ident;
static int sleef_ok = -1;
static int cc_gcc = -1;      /* the compiler is GCC (its --version says so) */
static int warned_cc, warned_sleef;

#if defined(__x86_64__) || defined(__i386__)
#define ND_ARCH_FLAGS "-march=native", "-mprefer-vector-width=512"
#define ND_ARCH_FLAGS_STR "-march=native -mprefer-vector-width=512"
#else
#define ND_ARCH_FLAGS "-mcpu=native"
#define ND_ARCH_FLAGS_STR "-mcpu=native"
#endif
/* -ffp-contract=off: NumPy rounds a*b before adding c; a fused multiply-add
 * would not (x*y - x*y would not be 0). */
static const char *base_flags[] = {
    "-O3", ND_ARCH_FLAGS, "-fopenmp", "-fno-math-errno", "-ffp-contract=off", "-fPIC", "-shared", NULL
};

const char *nd_cc_flags(void)
{
    return "-O3 " ND_ARCH_FLAGS_STR " -fopenmp -fno-math-errno -ffp-contract=off -fPIC -shared";
}

static int find_in_path(const char *name, char *out, size_t n)
{
    if (strchr(name, '/')) {
        if (access(name, X_OK) == 0) { snprintf(out, n, "%s", name); return 0; }
        return -1;
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    while (*path) {
        const char *e = strchr(path, ':');
        size_t len = e ? (size_t)(e - path) : strlen(path);
        if (len && len + strlen(name) + 2 < n) {
            snprintf(out, n, "%.*s/%s", (int)len, path, name);
            struct stat st;
            if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0) return 0;
        }
        if (!e) break;
        path = e + 1;
    }
    return -1;
}

/* split $CC into program + extra words (no shell: plain whitespace) */
static int resolve_cc(void)
{
    const char *env = getenv("CC");
    const char *want = (env && *env) ? env : "cc";
    if (cc_state != 0 && !strcmp(cc_env, want)) return cc_state;
    snprintf(cc_env, sizeof cc_env, "%s", want);
    snprintf(cc_words, sizeof cc_words, "%s", want);
    cc_nextra = 0;
    cc_ident = 0;
    cc_gcc = -1;
    sleef_ok = -1;
    char *save = NULL, *tok = strtok_r(cc_words, " \t", &save);
    char *prog = tok;
    while ((tok = strtok_r(NULL, " \t", &save)) && cc_nextra < 15) cc_extra[cc_nextra++] = tok;
    cc_state = (prog && find_in_path(prog, cc_path, sizeof cc_path) == 0) ? 1 : -1;
    warned_cc = 0;
    return cc_state;
}

int nd_cc_available(void)
{
    if (resolve_cc() > 0) return 1;
    if (!warned_cc) {
        warned_cc = 1;
        if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                             "numdyn: no C compiler found (CC=%s): the native backend runs "
                             "graphs with NumPy instead. Install gcc or set CC.", cc_env) < 0)
            return -1;
    }
    return 0;
}

/* Run argv, capture stdout+stderr into *out (malloc'd, NUL-terminated).
 * Returns the exit status (>= 0), or -1 with errno when it could not run. */
/* Start argv with stdout+stderr into a pipe: 0 (*pid, *rfd set) or -1
 * with errno. */
static int spawn_capture_pg(int cwd_fd, char *const argv[], pid_t *pid_out, int *rfd, int own_pgrp)
{
    int fd[2];
    /* close-on-exec: a compiler another thread spawns meanwhile must not
     * hold this pipe's write end (its reader would wait for that one too);
     * the dup2 below gives this compiler its own inheritable copies */
    if (pipe2(fd, O_CLOEXEC) < 0) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 2);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (cwd_fd >= 0) posix_spawn_file_actions_addfchdir_np(&fa, cwd_fd);
    /* own_pgrp: a compiler of its own process group, which the terminal's
     * Ctrl-C (sent to the foreground group) does not kill: a background
     * compile outlives an interrupted call and is collected by a later one */
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    if (own_pgrp) {
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
        posix_spawnattr_setpgroup(&at, 0);
    }
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (rc != 0) { close(fd[0]); errno = rc; return -1; }
    *pid_out = pid;
    *rfd = fd[0];
    return 0;
}

static int spawn_capture(int cwd_fd, char *const argv[], pid_t *pid_out, int *rfd)
{
    return spawn_capture_pg(cwd_fd, argv, pid_out, rfd, 0);
}

/* Read a spawned process's output to EOF (*out malloc'd, NUL-terminated)
 * and reap it: its exit status (>= 0). */
static int collect_capture(pid_t pid, int rfd, char **out, size_t *outlen)
{
    int fd[1] = {rfd};
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (buf && n + 1024 > cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; } else { buf = nb; cap *= 2; }
        }
        char tmp[1024];
        ssize_t k = read(fd[0], buf ? buf + n : tmp, buf ? cap - n - 1 : sizeof tmp);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        if (buf) n += (size_t)k;
    }
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (buf) buf[n] = 0;
    *out = buf;
    *outlen = n;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Run argv, capture stdout+stderr into *out (malloc'd, NUL-terminated).
 * Returns the exit status (>= 0), or -1 with errno when it could not run. */
static int run_capture_in(int cwd_fd, char *const argv[], char **out, size_t *outlen)
{
    pid_t pid;
    int rfd;
    *out = NULL;
    *outlen = 0;
    if (spawn_capture(cwd_fd, argv, &pid, &rfd) < 0) return -1;
    return collect_capture(pid, rfd, out, outlen);
}

static int run_capture(char *const argv[], char **out, size_t *outlen)
{
    return run_capture_in(-1, argv, out, outlen);
}

static int build_argv(char **argv, int max, char **extra, int nextra)
{
    int a = 0;
    argv[a++] = cc_path;
    for (int i = 0; i < cc_nextra && a < max - 1; i++) argv[a++] = cc_extra[i];
    for (int i = 0; i < nextra && a < max - 1; i++) argv[a++] = extra[i];
    argv[a] = NULL;
    return a;
}

static int detect_sleef(void)
{
    if (sleef_ok >= 0) return sleef_ok;
    char *argv[MAXARGS], *out;
    size_t len;
    char *ex[] = {"-print-file-name=libsleefgnuabi.so"};
    build_argv(argv, MAXARGS, ex, 1);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = run_capture(argv, &out, &len);
    Py_END_ALLOW_THREADS
    sleef_ok = 0;
    if (rc == 0 && out) {
        char *nl = strchr(out, '\n');
        if (nl) *nl = 0;
        if (out[0] == '/' && access(out, R_OK) == 0) sleef_ok = 1;
    }
    free(out);
    if (getenv("NUMDYN_NO_SLEEF")) sleef_ok = 0;
    if (!sleef_ok && !warned_sleef) {
        warned_sleef = 1;
        if (PyErr_WarnEx(PyExc_RuntimeWarning,
                         "numdyn: SLEEF (libsleefgnuabi) not found: generated kernels call scalar "
                         "libm math (slower). Install libsleef-dev.", 1) < 0)
            return -1;
    }
    return sleef_ok;
}

uint64_t nd_cc_identity(void)
{
    if (resolve_cc() <= 0) return 0;
    if (cc_ident) return cc_ident;
    if (detect_sleef() < 0) { PyErr_Clear(); }
    uint64_t h = ND_FNV_INIT;
    char *argv[MAXARGS], *out;
    size_t len;
    char *ex1[] = {"--version"};
    /* the predefined macros under -march=native name the ISA it resolved
     * to (__AVX512F__...), deterministically (the driver's -### output
     * holds temporary file names) */
    char *ex2[] = {ND_ARCH_FLAGS, "-E", "-dM", "-x", "c", "/dev/null"};
    int rc;
    build_argv(argv, MAXARGS, ex1, 1);
    Py_BEGIN_ALLOW_THREADS
    rc = run_capture(argv, &out, &len);
    Py_END_ALLOW_THREADS
    if (out) h = nd_fnv64(out, len, h);
    /* GCC says "(GCC)" or names the FSF; clang names itself */
    cc_gcc = rc == 0 && out && !strstr(out, "clang") &&
             (strstr(out, "GCC") || strstr(out, "Free Software Foundation"));
    free(out);
    build_argv(argv, MAXARGS, ex2, (int)(sizeof ex2 / sizeof ex2[0]));
    Py_BEGIN_ALLOW_THREADS
    rc = run_capture(argv, &out, &len);
    Py_END_ALLOW_THREADS
    if (out) h = nd_fnv64(out, len, h);
    h = nd_fnv64(&rc, sizeof rc, h);
    free(out);
    const char *fl = nd_cc_flags();
    h = nd_fnv64(fl, strlen(fl), h);
    h = nd_fnv64(&sleef_ok, sizeof sleef_ok, h);
    uint64_t hh = nd_cg_header_hash();
    h = nd_fnv64(&hh, sizeof hh, h);
    h = nd_fnv64(cc_path, strlen(cc_path), h);
    static const char version[] = "numdyn-native-1";
    h = nd_fnv64(version, sizeof version, h);
    cc_ident = h ? h : 1;
    return cc_ident;
}

int nd_cc_is_gcc(void)
{
    if (!nd_cc_identity()) return 0;
    return cc_gcc > 0;
}

int nd_cc_jobs(void)
{
    static int jobs = 0;
    if (!jobs) {
        const char *e = getenv("NUMDYN_COMPILE_JOBS");
        long n = e && *e ? strtol(e, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
        jobs = n < 1 ? 1 : n > 16 ? 16 : (int)n;
    }
    return jobs;
}

/* The compiler's argument vector for src_name -> so_name (inc: a buffer
 * of 4200 bytes the vector points into; pch: the include option of the
 * precompiled header, or NULL; so_name NULL: precompile the header itself
 * into src_name). 0, or -1 with an exception. */
static int compile_argv(char **argv, char *inc, const char *src_name, const char *so_name,
                        const char *pch)
{
    if (resolve_cc() <= 0) {
        PyErr_Format(nd_CompileError, "numdyn: no C compiler (CC=%s)", cc_env);
        return -1;
    }
    int sl = detect_sleef();
    if (sl < 0) return -1;
    const char *hdr = nd_cg_header_dir();
    if (!hdr) return -1;
    snprintf(inc, 4200, "-I%s", hdr);
    char *ex[MAXARGS];
    int ne = 0;
    for (int i = 0; base_flags[i]; i++)
        if (so_name || strcmp(base_flags[i], "-shared")) ex[ne++] = (char *)base_flags[i];
    /* its directory first: GCC takes nd_kernel.h.gch there for nd_kernel.h */
    if (pch && so_name) ex[ne++] = (char *)pch;
    ex[ne++] = inc;
    if (!sl) ex[ne++] = "-DND_NO_SLEEF";
    if (!so_name) {  /* the header, precompiled (the same options as every unit) */
        ex[ne++] = "-x";
        ex[ne++] = "c-header";
        ex[ne++] = ND_PCH_SRC;
        ex[ne++] = "-o";
        ex[ne++] = (char *)src_name;
        build_argv(argv, MAXARGS, ex, ne);
        return 0;
    }
    ex[ne++] = (char *)src_name;
    ex[ne++] = "-o";
    ex[ne++] = (char *)so_name;
    if (sl) ex[ne++] = "-lsleefgnuabi";
    ex[ne++] = "-lm";
    build_argv(argv, MAXARGS, ex, ne);
    return 0;
}

/* the CompileError of a compile that could not run (rc < 0, errno err) or
 * failed (exit status rc) */
static void compile_error(int rc, int err, const char *src_path, const char *out)
{
    if (rc < 0)
        PyErr_Format(nd_CompileError, "numdyn: could not run the C compiler %s: %s (source: %s)",
                     cc_path, strerror(err), src_path);
    else
        PyErr_Format(nd_CompileError,
                     "numdyn: the C compiler failed (exit status %d) on the generated source %s\n"
                     "compiler: %s\n%s", rc, src_path, cc_path, out ? out : "(no output)");
}

/* NUMDYN_DEBUG_DIR's compile.txt shows each compile's command and output:
 * a thread that sets nd_cc_log gets them appended there (toolchain.h) */
_Thread_local nd_sb *nd_cc_log;

static void log_argv(char *const argv[], const char *src_path, int status, const char *out)
{
    if (!nd_cc_log) return;
    nd_sb_puts(nd_cc_log, "$");
    for (int i = 0; argv[i]; i++) {
        nd_sb_puts(nd_cc_log, " ");
        nd_sb_puts(nd_cc_log, argv[i]);
    }
    nd_sb_printf(nd_cc_log, "\n# run in the build directory of %s; exit status %d; output:\n%s%s",
                 src_path ? src_path : "?", status, out && *out ? out : "(none)\n",
                 out && *out && out[strlen(out) - 1] != '\n' ? "\n" : "");
}

void nd_cc_log_result(const char *src_name, const char *so_name, const char *src_path,
                      const char *pch, int status, const char *out)
{
    if (!nd_cc_log) return;
    char inc[4200], *argv[MAXARGS];
    if (compile_argv(argv, inc, src_name, so_name, pch) < 0) { PyErr_Clear(); return; }
    log_argv(argv, src_path, status, out);
}

int nd_cc_start(int dirfd, const char *src_name, const char *so_name, const char *src_path,
                const char *pch, pid_t *pid, int *rfd)
{
    char inc[4200], *argv[MAXARGS];
    if (compile_argv(argv, inc, src_name, so_name, pch) < 0) return -1;
    if (spawn_capture_pg(dirfd, argv, pid, rfd, 1) < 0) {
        compile_error(-1, errno, src_path, NULL);
        return -1;
    }
    int fl = fcntl(*rfd, F_GETFL);
    if (fl >= 0) (void)fcntl(*rfd, F_SETFL, fl | O_NONBLOCK);
    return 0;
}

/* append what can be read now from rfd (until EOF when it blocks): 1 at
 * EOF (or a read error), 0 when a non-blocking rfd has nothing more now */
static int drain(int rfd, char **out, size_t *olen)
{
    for (;;) {
        char tmp[4096];
        ssize_t k = read(rfd, tmp, sizeof tmp);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (k <= 0) return 1;
        char *nb = realloc(*out, *olen + (size_t)k + 1);
        if (!nb) continue;  /* the message is lost, not the compile */
        memcpy(nb + *olen, tmp, (size_t)k);
        *olen += (size_t)k;
        nb[*olen] = 0;
        *out = nb;
    }
}

int nd_cc_poll(pid_t pid, int rfd, char **out, size_t *olen, int block, int *status)
{
    /* the output first: a compiler whose pipe is full never ends */
    if (block) {
        int fl = fcntl(rfd, F_GETFL);
        if (fl >= 0) (void)fcntl(rfd, F_SETFL, fl & ~O_NONBLOCK);
    }
    drain(rfd, out, olen);
    int st = 0;
    pid_t r;
    while ((r = waitpid(pid, &st, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {}
    if (r == 0) return 0;
    if (r < 0) { *status = 128; return 1; }  /* not our child (a fork's copy): failed */
    drain(rfd, out, olen);  /* what it wrote last */
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return 1;
}

int nd_cc_fail(int status, const char *src_path, const char *out)
{
    compile_error(status, 0, src_path, out);
    return -1;
}

int nd_cc_start_pch(int dirfd, const char *gch_name, pid_t *pid, int *rfd)
{
    char inc[4200], *argv[MAXARGS];
    if (compile_argv(argv, inc, gch_name, NULL, NULL) < 0) return -1;
    static const char src[] = ND_PCH_TEXT;
    if (nd_disk_write_new_at(dirfd, ND_PCH_SRC, src, sizeof src - 1) < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    if (spawn_capture_pg(dirfd, argv, pid, rfd, 1) < 0) {
        compile_error(-1, errno, "nd_kernel.h", NULL);
        return -1;
    }
    int fl = fcntl(*rfd, F_GETFL);
    if (fl >= 0) (void)fcntl(*rfd, F_SETFL, fl | O_NONBLOCK);
    return 0;
}

/* End a compiler nobody waits for: SIGTERM (gcc's driver removes its
 * temporary files), SIGKILL if it is still there after a second; reaped. */
static void stop_child(pid_t pid)
{
    kill(pid, SIGTERM);
    for (int t = 0; t < 100; t++) {
        pid_t r = waitpid(pid, NULL, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) return;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
}

int nd_cc_compile_many(int n, const int *dirfds, const char *src_name, const char *so_name,
                       const char *const *src_paths, const char *pch)
{
    char inc[4200], *argv[MAXARGS];
    if (compile_argv(argv, inc, src_name, so_name, pch) < 0) return -1;
    int *rc = PyMem_Calloc((size_t)n, sizeof(int)), *err = PyMem_Calloc((size_t)n, sizeof(int));
    char **out = PyMem_Calloc((size_t)n, sizeof(char *));
    pid_t *pid = PyMem_Calloc((size_t)n, sizeof(pid_t));
    int *rfd = PyMem_Calloc((size_t)n, sizeof(int));
    size_t *olen = PyMem_Calloc((size_t)n, sizeof(size_t));
    if (!rc || !err || !out || !pid || !rfd || !olen) {
        PyMem_Free(rc); PyMem_Free(err); PyMem_Free(out); PyMem_Free(pid); PyMem_Free(rfd);
        PyMem_Free(olen);
        PyErr_NoMemory();
        return -1;
    }
    int jobs = nd_cc_jobs();
    /* up to `jobs` compilers at once, their pipes read as they write (a
     * compiler whose pipe fills never ends). The GIL is taken back between
     * waits of at most 50 ms to run the signal handlers: a Ctrl-C kills the
     * compilers of our process group that were running, but not one started
     * after it -- a compile must not wait on that one (gated or slow) with
     * the KeyboardInterrupt pending: the ones still running are stopped. */
    int started = 0, ended = 0, stopped = 0;
    while (ended < n) {
        Py_BEGIN_ALLOW_THREADS
        while (started < n && started - ended < jobs) {
            int i = started++;
            if (spawn_capture(dirfds[i], argv, &pid[i], &rfd[i]) < 0) {
                rc[i] = -1;
                err[i] = errno;
                pid[i] = 0;
                ended++;
                continue;
            }
            int fl = fcntl(rfd[i], F_GETFL);
            if (fl >= 0) (void)fcntl(rfd[i], F_SETFL, fl | O_NONBLOCK);
        }
        struct pollfd pf[16];
        int who[16], np = 0;
        for (int i = 0; i < started && np < 16; i++)
            if (rfd[i] >= 0 && pid[i]) {
                pf[np].fd = rfd[i];
                pf[np].events = POLLIN;
                pf[np].revents = 0;
                who[np++] = i;
            }
        if (np && poll(pf, (nfds_t)np, 50) > 0)
            for (int k = 0; k < np; k++) {
                int i = who[k];
                if (!pf[k].revents || !drain(rfd[i], &out[i], &olen[i])) continue;
                close(rfd[i]);
                rfd[i] = -1;
                int st = 0;  /* its output ended: it is exiting */
                while (waitpid(pid[i], &st, 0) < 0 && errno == EINTR) {}
                rc[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
                ended++;
            }
        Py_END_ALLOW_THREADS
        if (ended < n && PyErr_CheckSignals() < 0) {
            stopped = 1;
            break;
        }
    }
    if (stopped) {
        Py_BEGIN_ALLOW_THREADS
        for (int i = 0; i < started; i++)
            if (pid[i] && rfd[i] >= 0) {
                close(rfd[i]);
                rfd[i] = -1;
                stop_child(pid[i]);
                rc[i] = 128 + SIGTERM;
            }
        Py_END_ALLOW_THREADS
    }
    /* a Ctrl-C while waiting (which killed the compilers of our process
     * group too) is the exception the call raises, not a compile error */
    int status = stopped || PyErr_CheckSignals() < 0 ? -1 : 0;
    for (int i = 0; i < n; i++) {
        if (pid[i]) log_argv(argv, src_paths[i], rc[i], out[i]);
        if (!status && rc[i] != 0) {
            compile_error(rc[i], err[i], src_paths[i], out[i]);
            status = -1;
        }
        free(out[i]);
    }
    PyMem_Free(rc); PyMem_Free(err); PyMem_Free(out); PyMem_Free(pid); PyMem_Free(rfd);
    PyMem_Free(olen);
    return status;
}

int nd_cc_compile(int dirfd, const char *src_name, const char *so_name, const char *src_path)
{
    return nd_cc_compile_many(1, &dirfd, src_name, so_name, &src_path, NULL);
}
