/* pch.c -- nd_kernel.h precompiled, once per compiler identity.
 *
 * Every kernel unit starts with #include "nd_kernel.h" (libm, complex.h,
 * fenv.h and ~750 lines of helpers): parsing it costs each compile 40-100 ms
 * (an empty unit costs 60-110 ms in all), and background compiles build one
 * unit per kernel. GCC loads a precompiled header in its place: it looks
 * for nd_kernel.h.gch in each include directory before nd_kernel.h, and
 * ignores one built with other options (it then reads the header itself),
 * so using it never changes what a kernel compiles to. It is built from
 * ND_PCH_SRC (toolchain.h): nd_kernel.h then nd_loop.h, which a captured
 * loop's unit includes second and then finds already read.
 *
 * Where: pch-<identity>/nd_kernel.h.gch in the checked cache directory (the
 * identity hashes the compiler, flags, ISA and the headers' text, so a new
 * numdyn or compiler gets a new one). A compile runs in its build
 * directory, so the option is "-I../pch-<identity>": resolved inside the
 * cache directory, whose checks (cache_disk.c) make it ours alone; the
 * directory and the file are checked here too (owned by us, private, not a
 * link) before the option is given, and the first time a process uses it
 * its bytes are checked against nd_kernel.h.sum (size and checksum, written
 * when it was built): GCC refuses a truncated one with a fatal error,
 * which would fail every compile.
 *
 * When: the first compile of a process that finds none starts its build in
 * the background (a compiler in its own build directory, renamed into place
 * when it succeeds) and compiles without it; later compiles use it. A
 * failed build is not retried in that process. GCC only (clang does not
 * look for .gch files next to an #include); NUMDYN_PCH=0 turns it off.
 */
#define _GNU_SOURCE 1
#include "core/npy.h"
#include "toolchain.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int state;            /* 0 not looked, 1 building, 2 ready, -1 off/failed */
static uint64_t state_ident; /* the identity state is for */
static pid_t build_pid, build_owner;
static int build_rfd = -1, build_dfd = -1, build_bfd = -1;
static char build_name[64];
static char inc[48];         /* "-I../pch-<16 hex>" */
static char *build_out;
static size_t build_olen;

static void dir_name(char *out, size_t n, uint64_t ident)
{
    snprintf(out, n, "pch-%016llx", (unsigned long long)ident);
}

/* the file whose checksum was verified: later uses only compare these */
static struct { dev_t dev; ino_t ino; off_t size; struct timespec mtime; } checked;

/* a private regular file of ours in pfd, not a link: its descriptor */
static int open_private(int pfd, const char *name, struct stat *st)
{
    int fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return -1;
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || st->st_uid != geteuid() ||
        (st->st_mode & 077)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* pch-<id>/nd_kernel.h.gch is a private regular file of ours in a private
 * directory of ours, neither a link, and holds what nd_kernel.h.sum says
 * (read in full once per process; later, while it is the same file --
 * device, inode, size, mtime -- not again) */
static int ready_in(int dfd, uint64_t ident)
{
    char d[32];
    dir_name(d, sizeof d, ident);
    struct stat st;
    if (fstatat(dfd, d, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid() || (st.st_mode & 077))
        return 0;
    int pfd = openat(dfd, d, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0) return 0;
    int ok = 0, fd = open_private(pfd, "nd_kernel.h.gch", &st);
    if (fd >= 0 && st.st_size > 0) {
        if (checked.size && st.st_size == checked.size && st.st_ino == checked.ino &&
            st.st_dev == checked.dev && st.st_mtim.tv_sec == checked.mtime.tv_sec &&
            st.st_mtim.tv_nsec == checked.mtime.tv_nsec) {
            ok = 1;
        } else {
            struct stat ss;
            char line[96];
            int sfd = open_private(pfd, "nd_kernel.h.sum", &ss);
            ssize_t k = sfd >= 0 && ss.st_size < (off_t)sizeof line ? pread(sfd, line, sizeof line - 1, 0) : -1;
            if (sfd >= 0) close(sfd);
            unsigned long long want_n, want_h;
            uint64_t n, h;
            if (k > 0) {
                line[k] = 0;
                ok = sscanf(line, "%llu %llx", &want_n, &want_h) == 2 &&
                     nd_disk_fd_sum(fd, &n, &h) == 0 && n == want_n && h == want_h;
            }
            if (ok) {
                checked.dev = st.st_dev;
                checked.ino = st.st_ino;
                checked.size = st.st_size;
                checked.mtime = st.st_mtim;
            }
        }
    }
    if (fd >= 0) close(fd);
    close(pfd);
    return ok;
}

static void build_cleanup(void)
{
    if (build_rfd >= 0) close(build_rfd);
    if (build_bfd >= 0) close(build_bfd);
    if (build_dfd >= 0) {
        nd_disk_remove_build_dir(build_dfd, build_name);
        close(build_dfd);
    }
    build_rfd = build_bfd = build_dfd = -1;
    free(build_out);
    build_out = NULL;
    build_olen = 0;
}

/* the build ended with status: publish its output (rename into pch-<id>) */
static void build_publish(int status)
{
    char d[32];
    dir_name(d, sizeof d, state_ident);
    state = -1;
    if (status == 0) {
        int fd = openat(build_bfd, "nd_kernel.h.gch", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
            fchmod(fd, 0600) == 0) {
            if (mkdirat(build_dfd, d, 0700) < 0 && errno != EEXIST) { close(fd); build_cleanup(); return; }
            int pfd = openat(build_dfd, d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            uint64_t n, h;
            char line[64];
            /* the .gch first, its .sum last: a reader trusts the pair only
             * when they agree */
            if (pfd >= 0 && fstat(pfd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 077) &&
                nd_disk_fd_sum(fd, &n, &h) == 0 &&
                renameat(build_bfd, "nd_kernel.h.gch", pfd, "nd_kernel.h.gch") == 0) {
                int k = snprintf(line, sizeof line, "%llu %016llx\n", (unsigned long long)n,
                                 (unsigned long long)h);
                int sfd = openat(build_bfd, "u.sum", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (sfd >= 0) {
                    int wok = write(sfd, line, (size_t)k) == k;
                    if (close(sfd) == 0 && wok &&
                        renameat(build_bfd, "u.sum", pfd, "nd_kernel.h.sum") == 0)
                        state = 2;
                }
            }
            if (pfd >= 0) close(pfd);
        }
        if (fd >= 0) close(fd);
    }
    build_cleanup();
}

/* poll a running build (block: wait for it) */
static void build_poll(int block)
{
    if (state != 1 || build_owner != getpid()) {
        if (state == 1) {  /* a fork's copy of its parent's build: not ours to finish */
            if (build_rfd >= 0) close(build_rfd);
            if (build_bfd >= 0) close(build_bfd);
            if (build_dfd >= 0) close(build_dfd);
            build_rfd = build_bfd = build_dfd = -1;
            free(build_out);
            build_out = NULL;
            state = 0;
        }
        return;
    }
    int status;
    if (nd_cc_poll(build_pid, build_rfd, &build_out, &build_olen, block, &status))
        build_publish(status);
}

/* at exit (after Python finalized): a build still running is stopped */
static void pch_atexit(void)
{
    if (state != 1 || build_owner != getpid()) return;
    kill(-build_pid, SIGKILL);
    kill(build_pid, SIGKILL);
    while (waitpid(build_pid, NULL, 0) < 0 && errno == EINTR) {}
    if (build_bfd >= 0) close(build_bfd);
    build_bfd = -1;
    if (build_dfd >= 0) nd_disk_remove_build_dir(build_dfd, build_name);
}

static int enabled(void)
{
    const char *e = getenv("NUMDYN_PCH");
    return !(e && !strcmp(e, "0")) && nd_cc_is_gcc() > 0;
}

const char *nd_pch_include(int dfd)
{
    uint64_t ident = nd_cc_identity();
    if (!ident || !enabled()) return NULL;
    if (state_ident != ident) {  /* another compiler ($CC changed): look again */
        if (state == 1) build_poll(0);
        if (state == 1) return NULL;  /* the old one's build still runs: not now */
        state = 0;
        state_ident = ident;
    }
    if (state == 1) build_poll(0);
    if (state == 2 || state == 0) {
        if (ready_in(dfd, ident)) {
            state = 2;
            char d[32];
            dir_name(d, sizeof d, ident);
            snprintf(inc, sizeof inc, "-I../%s", d);
            return inc;
        }
        if (state == 2) state = 0;  /* removed meanwhile (another identity's clear): build again */
    }
    if (state != 0) return NULL;
    /* start the build: a private build directory, the compiler in it */
    state = -1;
    int bdfd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    if (bdfd < 0) return NULL;
    int bfd = nd_disk_make_build_dir(bdfd, build_name);
    if (bfd < 0) { close(bdfd); return NULL; }
    build_dfd = bdfd;
    build_bfd = bfd;
    if (nd_cc_start_pch(bfd, "nd_kernel.h.gch", &build_pid, &build_rfd) < 0) {
        PyErr_Clear();  /* no precompiled header: compiles go on without it */
        build_cleanup();
        return NULL;
    }
    build_owner = getpid();
    state = 1;
    static int atexit_set;
    if (!atexit_set) atexit_set = Py_AtExit(pch_atexit) == 0;
    return NULL;
}

int nd_pch_wait(void)
{
    /* as bg_wait (cache_disk.c): the GIL released while poll() sleeps on
     * the compiler's pipe, in slices short enough to notice Ctrl-C */
    while (build_poll(0), state == 1) {
        struct pollfd pf = {build_rfd, POLLIN, 0};
        Py_BEGIN_ALLOW_THREADS
        (void)poll(&pf, 1, 50);
        Py_END_ALLOW_THREADS
        if (PyErr_CheckSignals() < 0) return -1;
    }
    return 0;
}
