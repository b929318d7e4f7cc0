/* cache_disk.c -- compiled translation units on disk, and the trust
 * boundary around them.
 *
 * Directory: $NUMDYN_CACHE_DIR, else $XDG_CACHE_HOME/numdyn, else
 * ~/.cache/numdyn. A shared object loaded from it runs with the user's
 * rights, so whoever can write into it, or replace it, can run code as the
 * user. Hence, every time it is used:
 *   - the path is resolved (realpath) and walked from "/" one component at
 *     a time with O_NOFOLLOW, the way ssh checks ~/.ssh: every parent must
 *     be owned by root or the user and not writable by group/others (a
 *     sticky directory such as /tmp is fine: nobody else can rename our
 *     entry in it); the directory itself must be owned by the user, with no
 *     group/other permission bits at all (0700). The descriptor of the
 *     checked directory is what every later step works in (openat,
 *     renameat, ...), so a path swapped afterwards changes nothing.
 *   - a compile happens in a private build directory (mkdirat 0700, one per
 *     compile) inside it: the source is written there with mode 0600, the
 *     compiler runs with that directory as its working directory (fchdir
 *     through posix_spawn), and its output is made 0600 before anything
 *     else happens to it.
 *   - a file is loaded only through a descriptor opened with O_NOFOLLOW |
 *     O_NONBLOCK (a FIFO or a device planted under an entry's name neither
 *     hangs nor is read: it is refused after fstat), that fstat says is a
 *     regular file owned by the user and writable by nobody else; the bytes
 *     checksummed are read through that descriptor, and dlopen gets the
 *     descriptor itself (/proc/self/fd/N), so what runs is what was checked.
 *
 * Entry <key> (key = hash of the source + compiler identity, flags, headers,
 * numdyn version): <key>.c (the source, kept for error messages and
 * debugging), <key>.so, and <key>.sum holding the .so's size and checksum.
 * Files move into place with rename, so concurrent processes never see a
 * partial file; an entry whose .so does not match its .sum (truncated,
 * corrupted, or a writer that died between the renames), that dlopen
 * rejects, that lacks a kernel's symbol, or that fails the checks above is
 * rebuilt (the rebuild's rename replaces it). <key>.k is the kernel index
 * (a kernel's text -> the unit holding it; see index_put below): a unit
 * whose kernels all were compiled in other units loads them from those.
 *
 * clear (numdyn.utils.clear_cache) removes final entries only: a compile in
 * progress lives in its own build directory, which clear leaves alone unless
 * it is stale (its process is gone and it is over an hour old), so
 * concurrent writers' compiles still succeed.
 */
#define _GNU_SOURCE 1
#include "core/npy.h"
#include "toolchain.h"
#include "core/counters.h"
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Longest cache directory path accepted: room is left for the names made
 * inside it ("/build-<pid>-<n>-<x>/u.sum"). */
#define ND_DIR_MAX (PATH_MAX - 128)

static char dir_buf[PATH_MAX];

/* The configured directory path into out (trailing slashes dropped);
 * -1 with an exception when there is none or it does not fit. */
static int cache_path(char *out, size_t n)
{
    const char *env = getenv("NUMDYN_CACHE_DIR");
    int k;
    const char *what = "NUMDYN_CACHE_DIR";
    if (env && *env) {
        k = snprintf(out, n, "%s", env);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME");
        const char *home = getenv("HOME");
        if (xdg && *xdg) { k = snprintf(out, n, "%s/numdyn", xdg); what = "XDG_CACHE_HOME"; }
        else if (home && *home) { k = snprintf(out, n, "%s/.cache/numdyn", home); what = "HOME"; }
        else {
            PyErr_SetString(PyExc_OSError,
                            "numdyn: no kernel cache directory: set NUMDYN_CACHE_DIR (or HOME)");
            return -1;
        }
    }
    if (k < 0 || (size_t)k >= n || k > ND_DIR_MAX) {
        errno = ENAMETOOLONG;
        PyErr_Format(PyExc_OSError,
                     "numdyn: the kernel cache directory path from %s is too long (%d bytes; at "
                     "most %d): set NUMDYN_CACHE_DIR to a shorter path", what, k, ND_DIR_MAX);
        return -1;
    }
    size_t l = strlen(out);
    while (l > 1 && out[l - 1] == '/') out[--l] = 0;
    return 0;
}

static int mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0700) < 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST) return -1;
    return 0;
}

/* A parent may be changed only by root or the user: owned by one of them,
 * and not writable by group/others unless sticky (then nobody else can
 * rename or remove what we own in it). */
static int parent_ok(const struct stat *st)
{
    if (!S_ISDIR(st->st_mode)) return 0;
    if (st->st_uid != 0 && st->st_uid != geteuid()) return 0;
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) return 0;
    return 1;
}

/* PyErr_Format has no %o: modes are formatted here ("0755") */
static const char *mode_str(char *buf, mode_t m)
{
    snprintf(buf, 8, "%04o", (unsigned)(m & 07777));
    return buf;
}

static int refuse_parent(const char *given, const char *parent, const struct stat *st)
{
    char mb[8];
    PyErr_Format(PyExc_PermissionError,
                 "numdyn: refusing the kernel cache directory %s: its parent directory %s is "
                 "owned by uid %d and has mode %s, so another user could replace the cache "
                 "with code numdyn would load (parents must be owned by you or root and not "
                 "writable by group or others, as ssh requires of ~/.ssh). Fix: set "
                 "NUMDYN_CACHE_DIR to a directory under one you own.",
                 given, parent, (int)st->st_uid, mode_str(mb, st->st_mode));
    return -1;
}

/* Open the cache directory (created 0700 when missing) after checking it
 * and every parent; returns an O_PATH descriptor of the checked directory,
 * or -1 with an exception. `given` is the configured path (for messages);
 * `resolved` (PATH_MAX bytes) receives the real path. */
static int open_checked_dir(const char *given, char *resolved)
{
    if (mkdirs(given) < 0) {
        PyErr_Format(PyExc_OSError, "numdyn: cannot create the kernel cache directory %s: %s "
                     "(set NUMDYN_CACHE_DIR to a writable directory)", given, strerror(errno));
        return -1;
    }
    if (!realpath(given, resolved)) {
        PyErr_Format(PyExc_OSError, "numdyn: cannot resolve the kernel cache directory %s: %s",
                     given, strerror(errno));
        return -1;
    }
    if (strlen(resolved) > ND_DIR_MAX) {
        PyErr_Format(PyExc_OSError, "numdyn: the kernel cache directory %s resolves to a path "
                     "too long (%s): set NUMDYN_CACHE_DIR to a shorter path", given, resolved);
        return -1;
    }
    int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        PyErr_SetFromErrnoWithFilename(PyExc_OSError, "/");
        return -1;
    }
    struct stat st;
    char walked[PATH_MAX];
    snprintf(walked, sizeof walked, "/");
    if (fstat(fd, &st) < 0) { close(fd); goto oserr; }
    if (!parent_ok(&st)) { close(fd); return refuse_parent(given, "/", &st); }
    const char *p = resolved;
    while (*p) {
        while (*p == '/') p++;
        if (!*p) break;
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char comp[NAME_MAX + 1];
        if (len > NAME_MAX) { close(fd); errno = ENAMETOOLONG; goto oserr; }
        memcpy(comp, p, len);
        comp[len] = 0;
        int last = p[len] == 0;  /* realpath: no trailing or doubled slash */
        /* O_NOFOLLOW: realpath gave no links; one appearing now is an attack */
        int nfd = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        if (nfd < 0) goto oserr;
        fd = nfd;
        size_t wl = strlen(walked);
        snprintf(walked + wl, sizeof walked - wl, "%s%s", wl > 1 ? "/" : "", comp);
        if (fstat(fd, &st) < 0) { close(fd); goto oserr; }
        if (!last && !parent_ok(&st)) { close(fd); return refuse_parent(given, walked, &st); }
        p += len;
    }
    if (!S_ISDIR(st.st_mode)) {
        close(fd);
        PyErr_Format(PyExc_OSError, "numdyn: the kernel cache path %s is not a directory", given);
        return -1;
    }
    const char *shown_res = strcmp(given, resolved) ? resolved : NULL;
    if (st.st_uid != geteuid()) {
        close(fd);
        PyErr_Format(PyExc_PermissionError,
                     "numdyn: refusing the kernel cache directory %s%s%s%s: it is owned by uid %d, "
                     "not by you (uid %d), and shared objects loaded from it would run its "
                     "owner's code. Fix: set NUMDYN_CACHE_DIR to a directory you own.",
                     given, shown_res ? " (" : "", shown_res ? shown_res : "", shown_res ? ")" : "",
                     (int)st.st_uid, (int)geteuid());
        return -1;
    }
    if (st.st_mode & 077) {
        close(fd);
        int w = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
        char mb[8];
        PyErr_Format(PyExc_PermissionError,
                     "numdyn: refusing the kernel cache directory %s%s%s%s: it has mode %s; %s. "
                     "numdyn loads shared objects from it and needs it private (0700). "
                     "Fix: %s%s, or set NUMDYN_CACHE_DIR to a private directory.",
                     given, shown_res ? " (" : "", shown_res ? shown_res : "", shown_res ? ")" : "",
                     mode_str(mb, st.st_mode),
                     w ? "it is writable by group or others, so anyone could plant code numdyn "
                         "would load"
                       : "group or others can reach the files in it",
                     w ? "chmod go-w,go-rx " : "chmod 700 ", given);
        return -1;
    }
    return fd;
oserr:
    PyErr_Format(PyExc_OSError, "numdyn: cannot open the kernel cache directory %s (at %s): %s",
                 given, walked, strerror(errno));
    return -1;
}

const char *nd_disk_dir(void)
{
    char resolved[PATH_MAX];
    if (cache_path(dir_buf, sizeof dir_buf) < 0) return NULL;
    int fd = open_checked_dir(dir_buf, resolved);
    if (fd < 0) return NULL;
    close(fd);
    return dir_buf;
}

/* ------------------------------------------------------------ files */

/* A file we may trust: a regular file owned by us, writable by nobody
 * else. */
static int file_ok(const struct stat *st)
{
    return S_ISREG(st->st_mode) && st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

/* Open name in dfd for reading, or -1 (errno; EPERM when it exists but is
 * not a file we trust). Neither follows a link nor blocks on a FIFO, and
 * opens nothing but a regular file (a device is refused before open). */
static int open_trusted(int dfd, const char *name, struct stat *st)
{
    if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) < 0) return -1;
    if (!file_ok(st)) { errno = EPERM; return -1; }
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return -1;
    if (fstat(fd, st) < 0 || !file_ok(st)) { close(fd); errno = EPERM; return -1; }
    return fd;
}

/* create name in dfd (mode 0600, must not exist) holding data */
static int write_new_at(int dfd, const char *name, const void *data, size_t n)
{
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    const char *p = data;
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) { close(fd); unlinkat(dfd, name, 0); return -1; }
        p += k;
        n -= (size_t)k;
    }
    if (close(fd) < 0) { unlinkat(dfd, name, 0); return -1; }
    return 0;
}

/* size + checksum of what fd holds (read from its start); -1 on error */
static int fd_sum(int fd, uint64_t *size, uint64_t *sum)
{
    uint64_t h = ND_FNV_INIT, n = 0;
    char buf[65536];
    for (;;) {
        ssize_t k = pread(fd, buf, sizeof buf, (off_t)n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -1;
        if (k == 0) break;
        h = nd_fnv64(buf, (size_t)k, h);
        n += (uint64_t)k;
    }
    *size = n;
    *sum = h;
    return 0;
}

/* dlopen the file open on fd: the object loaded is the one checked, even
 * if its name is replaced meanwhile. glibc recognises an object already
 * loaded by the *name* given first, and "/proc/self/fd/N" names recur as
 * descriptors are reused (a later dlopen would silently return the first
 * library). Shared objects here are never closed, so each load gets a name
 * no earlier load used: generation g of descriptor N is N's magic link
 * behind g "/." prefixes; a descriptor whose names run out is duplicated to
 * a higher number. Called with the GIL held. */
#define ND_FD_GEN_MAX 1500
static unsigned short *fd_gen;
static size_t fd_gen_n;

static void *dlopen_fd(int fd, int *err)
{
    int use = fd, dupd = -1;
    *err = 0;
    while ((size_t)use < fd_gen_n && fd_gen[use] >= ND_FD_GEN_MAX) {
        int nfd = fcntl(fd, F_DUPFD_CLOEXEC, use + 1);
        if (nfd < 0) { *err = errno; if (dupd >= 0) close(dupd); return NULL; }
        if (dupd >= 0) close(dupd);
        dupd = use = nfd;
    }
    if ((size_t)use >= fd_gen_n) {
        size_t n = (size_t)use + 64;
        unsigned short *g = PyMem_Realloc(fd_gen, n * sizeof *g);
        if (!g) { *err = ENOMEM; if (dupd >= 0) close(dupd); return NULL; }
        memset(g + fd_gen_n, 0, (n - fd_gen_n) * sizeof *g);
        fd_gen = g;
        fd_gen_n = n;
    }
    char name[2 * ND_FD_GEN_MAX + 64];
    size_t o = 0;
    for (unsigned g = 0; g < fd_gen[use]; g++) { name[o++] = '/'; name[o++] = '.'; }
    snprintf(name + o, sizeof name - o, "/proc/self/fd/%d", use);
    fd_gen[use]++;
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (dupd >= 0) close(dupd);
    return h;
}

/* 1 when every symbol is in h */
static int has_syms(void *h, const char *const *syms, int nsyms)
{
    for (int i = 0; i < nsyms; i++)
        if (!dlsym(h, syms[i])) return 0;
    return 1;
}

/* Load entry base (no extension) from dfd when it is intact and trusted;
 * NULL (no exception) otherwise: the caller rebuilds it. */
static void *try_load(int dfd, const char *base, const char *const *syms, int nsyms)
{
    char so[64], sp[64], line[96];
    snprintf(so, sizeof so, "%s.so", base);
    snprintf(sp, sizeof sp, "%s.sum", base);
    struct stat st;
    int fd = open_trusted(dfd, sp, &st);
    if (fd < 0) return NULL;
    ssize_t k = st.st_size < (off_t)sizeof line ? pread(fd, line, sizeof line - 1, 0) : -1;
    close(fd);
    if (k <= 0) return NULL;
    line[k] = 0;
    unsigned long long want_n = 0, want_h = 0;
    if (sscanf(line, "%llu %llx", &want_n, &want_h) != 2) return NULL;
    fd = open_trusted(dfd, so, &st);
    if (fd < 0) return NULL;
    uint64_t n, h;
    void *lib = NULL;
    int err;
    if (fd_sum(fd, &n, &h) == 0 && n == want_n && h == want_h) lib = dlopen_fd(fd, &err);
    close(fd);
    if (lib && !has_syms(lib, syms, nsyms)) {
        dlclose(lib);  /* nothing of it is in use: the entry is rebuilt */
        lib = NULL;
    }
    return lib;
}

/* ------------------------------------------------ the kernel index
 * <16 hex>.k names a kernel by the hash of its whole text with the
 * compiler identity (flags, host ISA, headers, version: what an entry's
 * name covers) and holds "<the unit's 16 hex> <the same 16 hex>\n": the
 * cached unit compiled with that kernel in it. Written after a unit
 * compiled (temporary name, then rename). A unit asked for and not on disk
 * whose kernels all are indexed is assembled from those units: the index
 * file is read through open_trusted, as a .sum, and each unit it names
 * loads only through try_load (its .sum, checksum, ownership and mode
 * checks) and only when it has the kernel's symbol. A stale, damaged or
 * refused index costs a compile, nothing more. */
static uint64_t index_name(uint64_t ident, uint64_t kkey)
{
    return nd_fnv64(&ident, sizeof ident, kkey);
}

static void index_put(int dfd, const char *base, uint64_t kname)
{
    char name[40], tmp[64], line[40];
    snprintf(name, sizeof name, "%016llx.k", (unsigned long long)kname);
    snprintf(tmp, sizeof tmp, "%016llx.k.tmp%ld", (unsigned long long)kname, (long)getpid());
    int k = snprintf(line, sizeof line, "%.16s %016llx\n", base, (unsigned long long)kname);
    (void)unlinkat(dfd, tmp, 0);  /* this process's own leftover, if any */
    if (write_new_at(dfd, tmp, line, (size_t)k) == 0 && renameat(dfd, tmp, dfd, name) < 0)
        (void)unlinkat(dfd, tmp, 0);
}

/* index every kernel of unit u, just compiled as entry base */
static void index_unit(int dfd, const char *base, const nd_disk_unit *u)
{
    if (!u->kkeys) return;
    uint64_t ident = nd_cc_identity();
    for (int s = 0; s < u->nsyms; s++) index_put(dfd, base, index_name(ident, u->kkeys[s]));
}

static int is_hex16(const char *p)
{
    for (int i = 0; i < 16; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) return 0;
    return 1;
}

/* the unit indexed for kname into base (17 bytes): 1, or 0 when none */
static int index_get(int dfd, uint64_t kname, char *base)
{
    char name[40], line[64], want[20];
    snprintf(name, sizeof name, "%016llx.k", (unsigned long long)kname);
    struct stat st;
    int fd = open_trusted(dfd, name, &st);
    if (fd < 0) return 0;
    ssize_t k = st.st_size == 34 ? pread(fd, line, 34, 0) : -1;
    close(fd);
    if (k != 34 || line[16] != ' ' || line[33] != '\n' || !is_hex16(line) || !is_hex16(line + 17))
        return 0;
    snprintf(want, sizeof want, "%016llx", (unsigned long long)kname);
    if (memcmp(line + 17, want, 16)) return 0;
    memcpy(base, line, 16);
    base[16] = 0;
    return 1;
}

/* Each kernel s of n whose text the index names: addrs[s] its address in
 * the cached unit holding it (loaded only through try_load's checks), NULL
 * where not indexed or its unit does not load; *first one of the handles
 * loaded, *nloaded the units loaded. The number found; with all set, it
 * stops at the first not found. */
static int load_indexed(int dfd, int n, const uint64_t *kkeys, const char *const *syms,
                        void **addrs, int all, void **first, int *nloaded)
{
    uint64_t ident = nd_cc_identity();
    char seen[16][17];
    void *seenh[16];
    int nseen = 0, found = 0;
    *first = NULL;
    *nloaded = 0;
    for (int s = 0; s < n; s++) {
        char base[17];
        void *h = NULL;
        addrs[s] = NULL;
        if (index_get(dfd, index_name(ident, kkeys[s]), base)) {
            for (int b = 0; b < nseen && !h; b++)
                if (!strcmp(seen[b], base)) h = seenh[b];
            if (!h && (h = try_load(dfd, base, &syms[s], 1)) && ++*nloaded && nseen < 16) {
                memcpy(seen[nseen], base, 17);
                seenh[nseen++] = h;
            }
        }
        if (h) addrs[s] = dlsym(h, syms[s]);
        if (!addrs[s]) {
            if (all) return found;
            continue;
        }
        found++;
        if (!*first) *first = h;
    }
    return found;
}

/* Unit u assembled from the cached units holding its kernels: 1 with
 * u->addrs filled and *handle one of those units, 0 when a kernel is not
 * indexed or its unit does not load (the caller compiles u). */
static int from_index(int dfd, const nd_disk_unit *u, void **handle)
{
    if (!u->kkeys || !u->addrs || u->nsyms < 1) return 0;
    int nloaded;
    return load_indexed(dfd, u->nsyms, u->kkeys, u->syms, u->addrs, 1, handle, &nloaded) == u->nsyms;
}

int nd_disk_load_indexed(int n, const uint64_t *kkeys, const char *const *syms, void **addrs)
{
    for (int s = 0; s < n; s++) addrs[s] = NULL;
    nd_omp_defaults(0);
    char given[PATH_MAX], resolved[PATH_MAX];
    if (cache_path(given, sizeof given) < 0) return -1;
    int dfd = open_checked_dir(given, resolved);
    if (dfd < 0) return -1;
    void *first;
    int nloaded, found = load_indexed(dfd, n, kkeys, syms, addrs, 0, &first, &nloaded);
    close(dfd);
    nd_counter_add(ND_CTR_DISK_CACHE_HITS, nloaded);  /* one a unit, as a unit's own load */
    return found;
}

/* libgomp reads its settings once, when the first library that needs it
 * loads; every library in the process then shares that runtime (torch's own
 * libgomp.so.1 and ours have one soname). Its default spins idle workers
 * after each parallel loop, which is a trade:
 *  - on an idle machine spinning is what makes torch fast between its many
 *    short parallel loops: PASSIVE set at `import numdyn` made a torch MLP
 *    training step 3.6x slower (4.7 -> 17 ms, 2 idle cores);
 *  - with more runnable threads than cores, a spinning team loses for
 *    everyone (a thread spins at a barrier for one that is descheduled):
 *    on the 2-core machine at load 9, the same torch step took 70-220 ms
 *    spinning and 16 ms passive, heat 2-D 500x500 in numdyn 40-60 ms vs
 *    6 ms;
 *  - numdyn's kernels next to NumPy's BLAS (whose threads spin too) halve
 *    each other on a small machine (MLP forward 0.57x NumPy spinning,
 *    0.99x passive).
 * So, unless the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT, and only while
 * no OpenMP runtime is loaded (one that is keeps what it read, and its
 * users rely on it): at import, PASSIVE when the machine is oversubscribed
 * already (1-minute load >= cores: passive wins for every library there);
 * at numdyn's first kernel, PASSIVE (numdyn is the one bringing OpenMP in).
 * A library imported after numdyn's first kernel shares that setting. */
static int omp_runtime_loaded(void)
{
    static const char *const runtimes[] = {"libgomp.so.1", "libiomp5.so", "libomp.so.5",
                                           "libomp.so", NULL};
    for (int i = 0; runtimes[i]; i++) {
        void *h = dlopen(runtimes[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            dlclose(h);
            return 1;
        }
    }
    return 0;
}

static int oversubscribed(void)
{
    double load = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return 0;
    int ok = fscanf(f, "%lf", &load) == 1;
    fclose(f);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    return ok && ncpu > 0 && load >= (double)ncpu;
}

void nd_omp_defaults(int at_import)
{
    static int done;
    if (done) return;
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || omp_runtime_loaded()) {
        done = 1;
        return;
    }
    if (at_import && !oversubscribed()) return;  /* decided again at the first kernel */
    done = 1;
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
}

/* remove the build directory name (its few files first) */
static void remove_build_dir(int dfd, const char *name)
{
    int bfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (bfd >= 0) {
        DIR *d = fdopendir(bfd);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d)))
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                    unlinkat(dirfd(d), e->d_name, 0);
            closedir(d);
        } else {
            close(bfd);
        }
    }
    unlinkat(dfd, name, AT_REMOVEDIR);
}

/* make a private build directory in dfd; its name into name (64 bytes) */
static int make_build_dir(int dfd, char *name)
{
    static unsigned counter;
    for (int tries = 0; tries < 20; tries++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(name, 64, "build-%ld-%u-%lx", (long)getpid(), counter++,
                 (unsigned long)(ts.tv_nsec ^ ((unsigned long)ts.tv_sec << 20)));
        if (mkdirat(dfd, name, 0700) == 0) break;
        if (errno != EEXIST) return -1;
        if (tries == 19) return -1;
    }
    int bfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (bfd < 0) return -1;
    if (fstat(bfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
        close(bfd);
        errno = EPERM;
        return -1;
    }
    return bfd;
}

int nd_disk_make_build_dir(int dfd, char *name) { return make_build_dir(dfd, name); }
int nd_disk_open_trusted(int dfd, const char *name, struct stat *st) { return open_trusted(dfd, name, st); }
int nd_disk_write_new_at(int dfd, const char *name, const void *data, size_t n)
{
    return write_new_at(dfd, name, data, n);
}
int nd_disk_open_dir(void)
{
    char given[PATH_MAX], resolved[PATH_MAX];
    if (cache_path(given, sizeof given) < 0) return -1;
    return open_checked_dir(given, resolved);
}
int nd_disk_fd_sum(int fd, uint64_t *size, uint64_t *sum) { return fd_sum(fd, size, sum); }
void nd_disk_remove_build_dir(int dfd, const char *name) { remove_build_dir(dfd, name); }

/* One unit being built: its private build directory holds u.c, then u.so. */
typedef struct {
    const char *base;
    char bname[64];
    char shown[PATH_MAX + 64];
    int bfd;
} unit_build;

/* Make the unit's build directory and write its source; -1 + exception. */
static int build_prepare(int dfd, const char *dirpath, unit_build *u, const char *src, size_t len)
{
    snprintf(u->shown, sizeof u->shown, "%s/%s.c", dirpath, u->base);
    u->bfd = make_build_dir(dfd, u->bname);
    if (u->bfd < 0) {
        PyErr_Format(PyExc_OSError, "numdyn: cannot make a build directory in %s: %s",
                     dirpath, strerror(errno));
        return -1;
    }
    if (write_new_at(u->bfd, "u.c", src, len) < 0) {
        PyErr_Format(PyExc_OSError, "numdyn: cannot write the generated source in %s/%s: %s",
                     dirpath, u->bname, strerror(errno));
        close(u->bfd);
        remove_build_dir(dfd, u->bname);
        u->bfd = -1;
        return -1;
    }
    return 0;
}

/* After the compiler ran (ok: it succeeded): check, load and publish the
 * unit, and remove its build directory. The handle, or NULL (+ exception
 * when ok). */
static void *build_finish(int dfd, const char *dirpath, unit_build *u, int ok,
                          const char *const *syms, int nsyms)
{
    char cfinal[PATH_MAX + 64], fname[64];
    const char *base = u->base, *bname = u->bname, *shown = u->shown;
    int bfd = u->bfd;
    snprintf(cfinal, sizeof cfinal, "%s.c", base);
    void *h = NULL;
    if (!ok) {
        /* keep the source where the message says it is */
        (void)renameat(bfd, "u.c", dfd, cfinal);
        goto out;
    }
    /* the compiler created u.so with the umask's mode: make it 0600 before
     * it is checked and loaded */
    int fd = openat(bfd, "u.so", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        fchmod(fd, 0600) < 0 || fstat(fd, &st) < 0 || !file_ok(&st)) {
        PyErr_Format(PyExc_OSError, "numdyn: the compiled kernels %s/%s/u.so cannot be opened "
                     "as a private file: %s (source: %s)", dirpath, bname,
                     fd < 0 ? strerror(errno) : "not a regular file of yours", shown);
        if (fd >= 0) close(fd);
        (void)renameat(bfd, "u.c", dfd, cfinal);
        goto out;
    }
    uint64_t n, sum;
    int err = 0;
    if (fd_sum(fd, &n, &sum) < 0) {
        PyErr_Format(PyExc_OSError, "numdyn: cannot read the compiled kernels: %s (source: %s)",
                     strerror(errno), shown);
        close(fd);
        goto out;
    }
    h = dlopen_fd(fd, &err);
    close(fd);
    if (!h) {
        const char *e = err ? strerror(err) : dlerror();
        PyErr_Format(nd_CompileError, "numdyn: cannot load the compiled kernels: %s (source: %s)",
                     e ? e : "?", shown);
        (void)renameat(bfd, "u.c", dfd, cfinal);
        goto out;
    }
    if (!has_syms(h, syms, nsyms)) {
        PyErr_Format(PyExc_RuntimeError, "numdyn: internal error: the compiled unit lacks a "
                     "kernel's symbol (source: %s)", shown);
        (void)renameat(bfd, "u.c", dfd, cfinal);
        h = NULL;  /* stays loaded, unused */
        goto out;
    }
    /* publish: .so first, .sum last (a reader trusts the pair only when
     * they agree); a failed rename costs a rebuild next time, no more */
    snprintf(fname, sizeof fname, "%s.so", base);
    if (renameat(bfd, "u.so", dfd, fname) == 0) {
        char line[64];
        int k = snprintf(line, sizeof line, "%llu %016llx\n", (unsigned long long)n,
                         (unsigned long long)sum);
        snprintf(fname, sizeof fname, "%s.sum", base);
        if (write_new_at(bfd, "u.sum", line, (size_t)k) == 0)
            (void)renameat(bfd, "u.sum", dfd, fname);
    }
    (void)renameat(bfd, "u.c", dfd, cfinal);
out:
    close(bfd);
    remove_build_dir(dfd, bname);
    return h;
}

_Thread_local int nd_disk_load_only;
_Thread_local int nd_disk_background;

/* ------------------------------------------------ background compiles
 * A unit asked for in background mode that is not on disk gets its
 * compiler started and a NULL handle at once (the caller runs the graph
 * with NumPy meanwhile); a later request for the same unit polls the job
 * and, once it ended, publishes and loads it as a waited-for compile would,
 * or raises its CompileError. At most nd_cc_jobs() compile at once; the
 * others wait in the table, their sources written, and start as compilers
 * end (checked at each request and by nd_disk_wait_all). At exit the jobs
 * still running are stopped and their build directories removed. */
typedef struct {
    char base[32];
    unit_build ub;       /* ub.base points at base */
    int dfd;             /* the cache directory (for removing the build dir at exit) */
    pid_t pid, owner;    /* owner: the process that started it (not a fork's child) */
    int rfd, started, ended, status;
    double wait_from;    /* when a call first waited for it (0: none yet) */
    PyObject *et, *ev, *etb;  /* the compiler could not be started: its error */
    char *out;
    size_t olen;
    char pch[256];       /* the precompiled header's option it started with ("": none) */
    /* a merged compile (bg_start_merged): the other units of the request
     * compiled in the same compiler run (their bases), and every member's
     * kernel index keys; published as base, the others' kernels indexed
     * to it */
    int nmore, nkk;
    char (*more)[32];
    uint64_t *kk;
} bg_job;

static bg_job **bg;
static int nbg, capbg, bg_exit_set;
static uint64_t bg_ended;  /* jobs of this process seen ending, ever */

int nd_disk_pending(void) { return nbg; }

static void bg_drop(int i)
{
    bg_job *j = bg[i];
    if (j->rfd >= 0) close(j->rfd);
    close(j->dfd);
    free(j->out);
    Py_XDECREF(j->et);
    Py_XDECREF(j->ev);
    Py_XDECREF(j->etb);
    PyMem_RawFree(j->more);
    PyMem_RawFree(j->kk);
    PyMem_RawFree(j);
    bg[i] = bg[--nbg];
}

/* after Python finalized: no Python API here */
static void bg_atexit(void)
{
    for (int i = 0; i < nbg; i++) {
        bg_job *j = bg[i];
        if (j->owner != getpid()) continue;
        if (j->started && !j->ended) {
            kill(-j->pid, SIGKILL);  /* its process group: the driver's cc1/as/ld too */
            kill(j->pid, SIGKILL);
            while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR) {}
        }
        close(j->ub.bfd);
        remove_build_dir(j->dfd, j->ub.bname);
    }
}

/* Poll the running compilers; start waiting jobs while fewer than
 * nd_cc_jobs() run (one that cannot start ends holding its error). */
static void bg_pump(void)
{
    int running = 0, jobs = nd_cc_jobs();
    pid_t me = getpid();
    for (int i = 0; i < nbg; i++) {
        bg_job *j = bg[i];
        if (j->owner != me || !j->started || j->ended) continue;
        j->ended = nd_cc_poll(j->pid, j->rfd, &j->out, &j->olen, 0, &j->status);
        running += !j->ended;
        bg_ended += j->ended;
    }
    for (int i = 0; i < nbg && running < jobs; i++) {
        bg_job *j = bg[i];
        if (j->owner != me || j->started) continue;
        j->started = 1;
        const char *pch = nd_pch_include(j->dfd);
        snprintf(j->pch, sizeof j->pch, "%s", pch ? pch : "");
        if (nd_cc_start(j->ub.bfd, "u.c", "u.so", j->ub.shown, pch, &j->pid, &j->rfd) < 0) {
            PyErr_Fetch(&j->et, &j->ev, &j->etb);
            j->ended = 1;
            bg_ended++;
            continue;
        }
        running++;
    }
}

/* ------------------------------------------------------ the budget
 * In background mode a call still waits for its compilers, up to
 * nd_disk_budget seconds in all per top-level call (nd_disk_call_begin/end
 * frame it; a request outside any call gets the budget to itself): what is
 * built by then runs compiled, exactly as a call that waited would; the
 * rest runs with NumPy and is loaded by the call that finds it built. Most
 * first calls compile within it and behave as without background compiles;
 * none stalls longer. */
static double budget_s = 1.0;
static _Thread_local double call_deadline;  /* 0: no call framed */
static _Thread_local int call_depth;

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double nd_disk_budget(void) { return budget_s; }
void nd_disk_set_budget(double s) { budget_s = s > 0 ? s : 0; }

void nd_disk_call_begin(void)
{
    if (call_depth++ == 0) call_deadline = mono_now() + budget_s;
}

void nd_disk_call_end(void)
{
    if (call_depth > 0 && --call_depth == 0) call_deadline = 0;
}

/* 1 when job j builds unit base (its own or a merged member) */
static int bg_is(const bg_job *j, const char *base)
{
    if (!strcmp(j->base, base)) return 1;
    for (int m = 0; m < j->nmore; m++)
        if (!strcmp(j->more[m], base)) return 1;
    return 0;
}

/* 1 when job j is one of the n bases asked for (all when bases is NULL) */
static int bg_wanted(const bg_job *j, char (*bases)[32], int n)
{
    if (!bases) return 1;
    for (int i = 0; i < n; i++)
        if (bg_is(j, bases[i])) return 1;
    return 0;
}

/* Wait until every job of this process among bases (NULL: all) ended, or
 * the deadline passed. The job table is only touched with the GIL held
 * (another thread's request may drop a job meanwhile, so it is scanned
 * afresh each round); the GIL is released while poll() sleeps on the
 * compilers' pipes (EOF when one exits), in slices short enough to start
 * queued jobs and notice Ctrl-C. 0, or -1 with the exception of a signal
 * handler (KeyboardInterrupt: the compilers go on, a later call collects
 * them). */
static int bg_wait(char (*bases)[32], int n, double deadline)
{
    pid_t me = getpid();
    for (;;) {
        bg_pump();
        struct pollfd pf[64];
        int np = 0, pending = 0;
        double now = mono_now(), until = 0;
        for (int i = 0; i < nbg; i++) {
            bg_job *j = bg[i];
            if (j->owner != me || j->ended || !bg_wanted(j, bases, n)) continue;
            /* the budget is the kernel's, not each call's: calls that come
             * while it still compiles (under load, or behind a long queue)
             * do not wait for it again */
            if (j->wait_from == 0) j->wait_from = now;
            double own = j->wait_from + budget_s;
            if (own <= now && deadline != INFINITY) continue;
            if (own > until) until = own;
            pending = 1;
            if (j->started && np < 64) {
                pf[np].fd = j->rfd;
                pf[np].events = POLLIN;
                pf[np++].revents = 0;
            }
        }
        if (!pending) return 0;
        double left = (deadline == INFINITY ? deadline : (until < deadline ? until : deadline)) - now;
        if (left <= 0) return 0;
        int ms = left > 0.05 ? 50 : (int)(left * 1000) + 1;
        Py_BEGIN_ALLOW_THREADS
        (void)poll(pf, (nfds_t)np, ms);
        Py_END_ALLOW_THREADS
        if (PyErr_CheckSignals() < 0) return -1;
    }
}

uint64_t nd_disk_progress(void)
{
    bg_pump();
    return bg_ended;
}

int nd_disk_running(void)
{
    bg_pump();
    int n = 0;
    pid_t me = getpid();
    for (int i = 0; i < nbg; i++) n += bg[i]->owner == me && !bg[i]->ended;
    return n;
}

double nd_disk_budget_left(void)
{
    return call_deadline > 0 ? call_deadline - mono_now() : budget_s;
}

int nd_disk_wait_all(void)
{
    if (bg_wait(NULL, 0, INFINITY) < 0) return -1;
    return nd_pch_wait();
}

/* A new job building src as unit base, queued (bg_pump starts it when a
 * compiler slot is free): the job, or NULL with an exception. */
static bg_job *bg_new(int dfd, const char *given, const char *base, const char *src, size_t len)
{
    if (nbg == capbg) {
        int cap = capbg ? 2 * capbg : 8;
        bg_job **nb = PyMem_RawRealloc(bg, sizeof(*nb) * (size_t)cap);
        if (!nb) { PyErr_NoMemory(); return NULL; }
        bg = nb;
        capbg = cap;
    }
    bg_job *j = PyMem_RawCalloc(1, sizeof *j);
    if (!j) { PyErr_NoMemory(); return NULL; }
    snprintf(j->base, sizeof j->base, "%s", base);
    j->ub.base = j->base;
    j->rfd = -1;
    j->owner = getpid();
    if ((j->dfd = fcntl(dfd, F_DUPFD_CLOEXEC, 0)) < 0) {
        PyMem_RawFree(j);
        return PyErr_SetFromErrno(PyExc_OSError), NULL;
    }
    if (build_prepare(dfd, given, &j->ub, src, len) < 0) {
        close(j->dfd);
        PyMem_RawFree(j);
        return NULL;
    }
    if (!bg_exit_set) bg_exit_set = Py_AtExit(bg_atexit) == 0;
    bg[nbg++] = j;
    return j;
}

/* unit i of a background request: *handle set when it is ready; 0, or -1
 * with an exception (the compile failed). The request's units (req, their
 * bases and handles, nreq of them) built by the same merged compile get
 * their handles too. */
static int bg_step(int dfd, const char *given, const char *base, const nd_disk_unit *u,
                   void **handle, int nreq, const nd_disk_unit *req, char (*req_bases)[32],
                   void **req_h)
{
    *handle = NULL;
    int i = 0;
    while (i < nbg) {
        if (!bg_is(bg[i], base)) { i++; continue; }
        if (bg[i]->owner == getpid()) break;
        close(bg[i]->ub.bfd);  /* a fork's copy of its parent's job */
        bg_drop(i);            /* (the last job moved to i: look at it next) */
    }
    if (i == nbg) {
        /* another thread may have collected (and published) it while this
         * one waited: load it rather than compile it again */
        if ((*handle = try_load(dfd, base, u->syms, u->nsyms))) {
            nd_counter_add(ND_CTR_DISK_CACHE_HITS, 1);
            return 0;
        }
        /* or it was a member of a merged compile: its kernels are indexed
         * to the unit published */
        if (from_index(dfd, u, handle)) {
            nd_counter_add(ND_CTR_DISK_CACHE_HITS, 1);
            return 0;
        }
        if (!bg_new(dfd, given, base, u->src, u->len)) return -1;
        bg_pump();  /* starts it when a compiler slot is free */
        return 0;
    }
    bg_pump();
    bg_job *j = bg[i];
    if (!j->ended) return 0;
    int rc = 0;
    if (j->et) {  /* the compiler could not be started */
        (void)build_finish(dfd, given, &j->ub, 0, NULL, 0);
        PyErr_Restore(j->et, j->ev, j->etb);
        j->et = j->ev = j->etb = NULL;
        rc = -1;
    } else if (j->status != 0) {
        nd_cc_log_result("u.c", "u.so", j->ub.shown, j->pch[0] ? j->pch : NULL, j->status, j->out);
        (void)build_finish(dfd, given, &j->ub, 0, NULL, 0);
        rc = nd_cc_fail(j->status, j->ub.shown, j->out);
    } else {
        nd_cc_log_result("u.c", "u.so", j->ub.shown, j->pch[0] ? j->pch : NULL, 0, j->out);
        *handle = build_finish(dfd, given, &j->ub, 1, u->syms, u->nsyms);
        if (*handle) {
            *u->compiled = 1;
            if (!j->nmore) {
                index_unit(dfd, base, u);
            } else {
                /* a merged compile: its units' kernels, all in the unit
                 * published, and the request's other members done too */
                uint64_t ident = nd_cc_identity();
                for (int k = 0; k < j->nkk; k++)
                    index_put(dfd, j->base, index_name(ident, j->kk[k]));
                int counted = u->nsyms;
                for (int k = 0; k < nreq; k++)
                    if (!req_h[k] && bg_is(j, req_bases[k]) && has_syms(*handle, req[k].syms, req[k].nsyms)) {
                        req_h[k] = *handle;
                        *req[k].compiled = 1;
                        counted += req[k].nsyms;
                    }
                /* members another thread's request started (threads that
                 * traced other graphs ask for other units): the caller
                 * counts its own units' kernels as compiled, and a later
                 * request finds those through the index as disk hits, so
                 * they are counted here or never */
                if (j->nkk > counted) nd_counter_add(ND_CTR_KERNELS_COMPILED, j->nkk - counted);
            }
        } else {
            rc = -1;
        }
    }
    bg_drop(i);
    return rc;
}

/* The units fresh[0..nfresh) of a background request (none on disk, none
 * building), queued as merged compiles: up to nd_cc_jobs() compiler runs
 * of at least ND_UNIT_TEXT bytes of kernel text each (as waited-for
 * compiles split a graph's kernels), balanced in order. A unit stays one
 * kernel's (its name, so any graph asking for that kernel, finds the job
 * while it runs and the kernel through the index after); only the compiler
 * runs are fewer -- each pays the driver, cc1 loading the precompiled
 * header, as and the -shared link (~40 ms CPU), a unit a kernel paid them
 * per kernel. The merged source is the units' sources one after another,
 * ND_UNIT_PRELUDE once (only units that begin with it are merged). 0, or
 * -1 with an exception. */
static int bg_start_merged(int dfd, const char *given, const nd_disk_unit *units,
                           char (*bases)[32], const int *fresh, int nfresh)
{
    size_t total = 0;
    for (int f = 0; f < nfresh; f++) total += units[fresh[f]].len;
    int ng = nd_cc_jobs();
    if ((size_t)ng > total / ND_UNIT_TEXT + 1) ng = (int)(total / ND_UNIT_TEXT + 1);
    if (ng > nfresh) ng = nfresh;
    if (ng < 1) ng = 1;
    int *grp = PyMem_Calloc((size_t)nfresh, sizeof(int));
    size_t *load = PyMem_Calloc((size_t)ng, sizeof(size_t));
    int rc = -1;
    if (!grp || !load) { PyErr_NoMemory(); goto out; }
    for (int f = 0; f < nfresh; f++) {
        int g = 0;
        for (int v = 1; v < ng; v++) if (load[v] < load[g]) g = v;
        grp[f] = g;
        load[g] += units[fresh[f]].len;
    }
    for (int g = 0; g < ng; g++) {
        int first = -1, nm = 0, nk = 0;
        nd_sb src;
        nd_sb_init(&src);
        for (int f = 0; f < nfresh; f++) {
            if (grp[f] != g) continue;
            const nd_disk_unit *u = &units[fresh[f]];
            if (first < 0) first = f;
            nm++;
            nk += u->nsyms;
            nd_sb_puts(&src, u->src + (nm > 1 ? strlen(ND_UNIT_PRELUDE) : 0));
        }
        if (first < 0) { nd_sb_free(&src); continue; }
        if (nd_sb_check(&src) < 0) { nd_sb_free(&src); goto out; }
        const nd_disk_unit *u0 = &units[fresh[first]];
        bg_job *j = nm == 1 ? bg_new(dfd, given, bases[fresh[first]], u0->src, u0->len)
                            : bg_new(dfd, given, bases[fresh[first]], src.p, src.n);
        nd_sb_free(&src);
        if (!j) goto out;
        if (nm > 1) {
            j->more = PyMem_RawCalloc((size_t)nm - 1, sizeof *j->more);
            j->kk = PyMem_RawCalloc((size_t)nk, sizeof *j->kk);
            if (!j->more || !j->kk) { PyErr_NoMemory(); goto out; }  /* the job stays queued alone */
            for (int f = 0; f < nfresh; f++) {
                if (grp[f] != g) continue;
                const nd_disk_unit *u = &units[fresh[f]];
                if (f != first) memcpy(j->more[j->nmore++], bases[fresh[f]], sizeof *j->more);
                for (int s = 0; s < u->nsyms; s++) j->kk[j->nkk++] = u->kkeys[s];
            }
        }
    }
    bg_pump();
    rc = 0;
out:
    PyMem_Free(grp);
    PyMem_Free(load);
    return rc;
}

int nd_disk_load_or_build_many(int n, const nd_disk_unit *units, void **handles)
{
    nd_omp_defaults(0);
    for (int i = 0; i < n; i++) handles[i] = NULL;
    char given[PATH_MAX], resolved[PATH_MAX];
    if (cache_path(given, sizeof given) < 0) return -1;
    int dfd = open_checked_dir(given, resolved);
    if (dfd < 0) return -1;
    char (*bases)[32] = PyMem_Calloc((size_t)n, sizeof *bases);
    unit_build *ub = PyMem_Calloc((size_t)n, sizeof *ub);
    int *todo = PyMem_Calloc((size_t)n, sizeof(int)), *fds = PyMem_Calloc((size_t)n, sizeof(int));
    const char **shown = PyMem_Calloc((size_t)n, sizeof(char *));
    char *via = PyMem_Calloc((size_t)n, 1);  /* units assembled from the index */
    int *fresh = PyMem_Calloc((size_t)n, sizeof(int));  /* background: to start, merged */
    int nb = 0, nbg_req = 0, nfresh = 0, rc = -1;
    if (!bases || !ub || !todo || !fds || !shown || !via || !fresh) { PyErr_NoMemory(); goto done; }
    /* the compiler, its flags, the host ISA, the headers and numdyn's
     * version are part of every entry's name here, whatever the caller's key
     * covers: a kernel built against another header or ISA never loads */
    uint64_t ident = nd_cc_identity();
    for (int i = 0; i < n; i++) {
        uint64_t key = nd_fnv64(&ident, sizeof ident, units[i].key);
        snprintf(bases[i], sizeof bases[i], "%016llx", (unsigned long long)key);
        if (handles[i]) continue;  /* built by a merged compile collected for an earlier one */
        handles[i] = try_load(dfd, bases[i], units[i].syms, units[i].nsyms);
        if (handles[i]) {
            nd_counter_add(ND_CTR_DISK_CACHE_HITS, 1);
            continue;
        }
        if (from_index(dfd, &units[i], &handles[i])) {
            via[i] = 1;
            nd_counter_add(ND_CTR_DISK_CACHE_HITS, 1);
            continue;
        }
        if (nd_disk_load_only) continue;  /* frozen: not built, handle NULL */
        if (nd_disk_background) {
            int building = 0;
            for (int b = 0; b < nbg && !building; b++)
                building = bg[b]->owner == getpid() && bg_is(bg[b], bases[i]);
            if (!building && units[i].kkeys && units[i].addrs && units[i].nsyms > 0 &&
                !strncmp(units[i].src, ND_UNIT_PRELUDE, strlen(ND_UNIT_PRELUDE))) {
                fresh[nfresh++] = i;  /* started below, with the request's others */
                continue;
            }
            if (bg_step(dfd, given, bases[i], &units[i], &handles[i], n, units, bases, handles) < 0)
                goto done;
            if (!handles[i]) todo[nbg_req++] = i;
            continue;
        }
        ub[nb].base = bases[i];
        if (build_prepare(dfd, given, &ub[nb], units[i].src, units[i].len) < 0) goto done;
        fds[nb] = ub[nb].bfd;
        shown[nb] = ub[nb].shown;
        todo[nb++] = i;
    }
    if (nfresh) {
        if (bg_start_merged(dfd, given, units, bases, fresh, nfresh) < 0) goto done;
        for (int f = 0; f < nfresh; f++) todo[nbg_req++] = fresh[f];
    }
    if (nbg_req) {
        /* every unit's compiler started (as many at once as nd_cc_jobs()):
         * wait for them within the call's budget, then take those built */
        double deadline = call_deadline > 0 ? call_deadline : mono_now() + budget_s;
        if (deadline <= mono_now()) {  /* no budget left: the jobs are only started */
            rc = 0;
            goto done;
        }
        char (*want)[32] = PyMem_Calloc((size_t)nbg_req, sizeof *want);
        if (!want) { PyErr_NoMemory(); goto done; }
        for (int b = 0; b < nbg_req; b++) memcpy(want[b], bases[todo[b]], sizeof *want);
        int wrc = bg_wait(want, nbg_req, deadline);
        PyMem_Free(want);
        if (wrc < 0) goto done;
        for (int b = 0; b < nbg_req; b++) {
            int i = todo[b];
            if (handles[i]) continue;  /* built by a merged compile collected before it */
            if (bg_step(dfd, given, bases[i], &units[i], &handles[i], n, units, bases, handles) < 0)
                goto done;
        }
        rc = 0;
        goto done;
    }
    int ok = nb ? nd_cc_compile_many(nb, fds, "u.c", "u.so", shown, nd_pch_include(dfd)) == 0 : 1;
    rc = ok ? 0 : -1;
    for (int b = 0; b < nb; b++) {
        int i = todo[b];
        if (ok) {
            handles[i] = build_finish(dfd, given, &ub[b], 1, units[i].syms, units[i].nsyms);
            if (!handles[i]) {
                ok = 0;
                rc = -1;
            } else {
                *units[i].compiled = 1;
                index_unit(dfd, bases[i], &units[i]);
            }
        } else {
            /* the first failure's message stands; the rest are cleaned up
             * (build_finish raises nothing when !ok) */
            (void)build_finish(dfd, given, &ub[b], 0, NULL, 0);
        }
    }
    nb = 0;
done:
    for (int b = 0; b < nb; b++) {  /* prepared, never compiled (an error above) */
        close(ub[b].bfd);
        remove_build_dir(dfd, ub[b].bname);
    }
    /* the addresses of units loaded or built as a whole */
    for (int i = 0; rc == 0 && i < n; i++)
        if (handles[i] && units[i].addrs && !via[i])
            for (int s = 0; s < units[i].nsyms; s++)
                units[i].addrs[s] = dlsym(handles[i], units[i].syms[s]);
    close(dfd);
    PyMem_Free(bases); PyMem_Free(ub); PyMem_Free(todo); PyMem_Free(fds); PyMem_Free((void *)shown);
    PyMem_Free(via);
    PyMem_Free(fresh);
    return rc;
}

void *nd_disk_load_or_build(const char *src, size_t len, uint64_t key,
                            const char *const *syms, int nsyms, int *compiled)
{
    *compiled = 0;
    nd_disk_unit u = {src, len, key, syms, nsyms, compiled, NULL, NULL};
    void *h = NULL;
    return nd_disk_load_or_build_many(1, &u, &h) == 0 ? h : NULL;
}

/* <16 hex>.c / .so / .sum exactly: a published entry */
static int final_entry(const char *name)
{
    for (int i = 0; i < 16; i++) {
        char c = name[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return 0;
    }
    return !strcmp(name + 16, ".c") || !strcmp(name + 16, ".so") || !strcmp(name + 16, ".sum") ||
           !strcmp(name + 16, ".k") ||  /* the kernel index */
           !strcmp(name + 16, ".cubin") || !strcmp(name + 16, ".ptx");  /* cache_blob.c */
}

/* <16 hex>.<...>.tmp<pid>... written by older numdyn versions */
static int legacy_temp(const char *name)
{
    for (int i = 0; i < 16; i++) {
        char c = name[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return 0;
    }
    return name[16] == '.' && strstr(name + 16, ".tmp") != NULL;
}

/* A build directory another compile may still be using is left alone:
 * stale only when over an hour old and its process is gone (or over a day
 * old: a pid from another PID namespace cannot be asked). */
static int stale_build(int dfd, const char *name)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return 0;
    time_t age = time(NULL) - st.st_mtime;
    if (age > 86400) return 1;
    if (age < 3600) return 0;
    long pid = strtol(name + 6, NULL, 10);
    return pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

int nd_disk_clear(void)
{
    char given[PATH_MAX], resolved[PATH_MAX];
    if (cache_path(given, sizeof given) < 0) return -1;
    int dfd = open_checked_dir(given, resolved);
    if (dfd < 0) return -1;
    int rfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = rfd >= 0 ? fdopendir(rfd) : NULL;
    if (!d) {
        PyErr_Format(PyExc_OSError, "numdyn: cannot list %s: %s", given, strerror(errno));
        if (rfd >= 0) close(rfd);
        close(dfd);
        return -1;
    }
    char pch_keep[32];
    snprintf(pch_keep, sizeof pch_keep, "pch-%016llx", (unsigned long long)nd_cc_identity());
    struct dirent *e;
    while ((e = readdir(d))) {
        if (final_entry(e->d_name)) {
            unlinkat(dfd, e->d_name, 0);
        } else if (!strncmp(e->d_name, "build-", 6)) {
            if (stale_build(dfd, e->d_name)) remove_build_dir(dfd, e->d_name);
        } else if (!strncmp(e->d_name, "pch-", 4) && strcmp(e->d_name, pch_keep)) {
            /* another compiler's or numdyn's precompiled header; this
             * one's holds no user code and stays (pch.c) */
            remove_build_dir(dfd, e->d_name);
        } else if (legacy_temp(e->d_name)) {
            struct stat st;
            if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                time(NULL) - st.st_mtime > 3600)
                unlinkat(dfd, e->d_name, 0);
        }
    }
    closedir(d);
    close(dfd);
    return 0;
}
