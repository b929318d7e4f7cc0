/* cache_disk.c -- compiled translation units on disk.
 *
 * Directory: $NUMDYN_CACHE_DIR, else $XDG_CACHE_HOME/numdyn, else
 * ~/.cache/numdyn. A shared object loaded from it runs with the user's
 * rights, so a directory not owned by the user or writable by group/others
 * is refused.
 *
 * Entry <key> (key = hash of the source + compiler identity, flags, headers,
 * numdyn version): <key>.c (the source, kept for error messages and
 * debugging), <key>.so, and <key>.sum holding the .so's size and checksum.
 * Every file is written to a unique temporary name and renamed into place,
 * so concurrent processes never see a partial file; an entry whose .so does
 * not match its .sum (truncated, corrupted, or a writer that died between
 * the renames) or that dlopen rejects is rebuilt.
 */
#define _GNU_SOURCE 1
#include "core/npy.h"
#include "toolchain.h"
#include "core/counters.h"
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir_buf[4000];

static int mkdirs(const char *path)
{
    char tmp[4096];
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

const char *nd_disk_dir(void)
{
    const char *env = getenv("NUMDYN_CACHE_DIR");
    if (env && *env) {
        snprintf(dir_buf, sizeof dir_buf, "%s", env);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME");
        const char *home = getenv("HOME");
        if (xdg && *xdg) snprintf(dir_buf, sizeof dir_buf, "%s/numdyn", xdg);
        else if (home && *home) snprintf(dir_buf, sizeof dir_buf, "%s/.cache/numdyn", home);
        else {
            PyErr_SetString(PyExc_OSError,
                            "numdyn: no kernel cache directory: set NUMDYN_CACHE_DIR (or HOME)");
            return NULL;
        }
    }
    size_t l = strlen(dir_buf);
    while (l > 1 && dir_buf[l - 1] == '/') dir_buf[--l] = 0;
    if (mkdirs(dir_buf) < 0) {
        PyErr_Format(PyExc_OSError, "numdyn: cannot create the kernel cache directory %s: %s "
                     "(set NUMDYN_CACHE_DIR to a writable directory)", dir_buf, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (stat(dir_buf, &st) < 0 || !S_ISDIR(st.st_mode)) {
        PyErr_Format(PyExc_OSError, "numdyn: the kernel cache path %s is not a directory", dir_buf);
        return NULL;
    }
    if (st.st_uid != geteuid()) {
        PyErr_Format(PyExc_PermissionError,
                     "numdyn: refusing the kernel cache directory %s: it is owned by uid %d, not "
                     "by you (uid %d), and shared objects loaded from it would run its owner's "
                     "code. Fix: set NUMDYN_CACHE_DIR to a directory you own.",
                     dir_buf, (int)st.st_uid, (int)geteuid());
        return NULL;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        PyErr_Format(PyExc_PermissionError,
                     "numdyn: refusing the kernel cache directory %s: it is writable by group or "
                     "others (mode %03o), so anyone could plant code numdyn would load. "
                     "Fix: chmod go-w %s, or set NUMDYN_CACHE_DIR to a private directory.",
                     dir_buf, (unsigned)(st.st_mode & 0777), dir_buf);
        return NULL;
    }
    return dir_buf;
}

/* write data to path atomically: unique temp file in the same dir + rename */
static int write_atomic(const char *path, const void *data, size_t n)
{
    char tmp[4200];
    static unsigned counter;
    snprintf(tmp, sizeof tmp, "%s.tmp%ld.%u", path, (long)getpid(), counter++);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    const char *p = data;
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) { close(fd); unlink(tmp); return -1; }
        p += k;
        n -= (size_t)k;
    }
    if (close(fd) < 0 || rename(tmp, path) < 0) { unlink(tmp); return -1; }
    return 0;
}

/* size + checksum of a file; -1 when unreadable */
static int file_sum(const char *path, uint64_t *size, uint64_t *sum)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    uint64_t h = ND_FNV_INIT, n = 0;
    char buf[65536];
    for (;;) {
        ssize_t k = read(fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) { close(fd); return -1; }
        if (k == 0) break;
        h = nd_fnv64(buf, (size_t)k, h);
        n += (uint64_t)k;
    }
    close(fd);
    *size = n;
    *sum = h;
    return 0;
}

static void *try_load(const char *base)
{
    char so[4200], sp[4200];
    snprintf(so, sizeof so, "%s.so", base);
    snprintf(sp, sizeof sp, "%s.sum", base);
    FILE *f = fopen(sp, "r");
    if (!f) return NULL;
    unsigned long long want_n = 0, want_h = 0;
    int ok = fscanf(f, "%llu %llx", &want_n, &want_h) == 2;
    fclose(f);
    uint64_t n, h;
    if (!ok || file_sum(so, &n, &h) < 0 || n != want_n || h != want_h) return NULL;
    return dlopen(so, RTLD_NOW | RTLD_LOCAL);
}

/* libgomp reads its settings when the first kernel library loads it. Its
 * default spins idle workers after each parallel loop; next to NumPy's BLAS
 * (whose threads spin too) that halves both on a small machine (MLP forward:
 * 0.57x NumPy spinning, 0.99x passive, measured). Passive unless the user
 * chose otherwise. */
static void omp_defaults(void)
{
    static int done;
    if (done) return;
    done = 1;
    if (!getenv("OMP_WAIT_POLICY")) setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
}

void *nd_disk_load_or_build(const char *src, size_t len, uint64_t key, int *compiled)
{
    *compiled = 0;
    omp_defaults();
    const char *dir = nd_disk_dir();
    if (!dir) return NULL;
    char base[4100];
    snprintf(base, sizeof base, "%s/%016llx", dir, (unsigned long long)key);
    void *h = try_load(base);
    if (h) {
        nd_counter_add(ND_CTR_DISK_CACHE_HITS, 1);
        return h;
    }
    char cpath[4200], so[4200], tmpso[4300], sp[4200];
    snprintf(cpath, sizeof cpath, "%s.c", base);
    snprintf(so, sizeof so, "%s.so", base);
    snprintf(sp, sizeof sp, "%s.sum", base);
    static unsigned counter;
    snprintf(tmpso, sizeof tmpso, "%s.tmp%ld.%u.so", base, (long)getpid(), counter++);
    if (write_atomic(cpath, src, len) < 0) {
        PyErr_Format(PyExc_OSError, "numdyn: cannot write %s: %s", cpath, strerror(errno));
        return NULL;
    }
    if (nd_cc_compile(src, len, tmpso, cpath) < 0) {
        unlink(tmpso);
        return NULL;
    }
    *compiled = 1;
    uint64_t n, sum;
    if (file_sum(tmpso, &n, &sum) < 0) {
        PyErr_Format(PyExc_OSError, "numdyn: cannot read the compiled %s", tmpso);
        unlink(tmpso);
        return NULL;
    }
    /* load from the private temp name: another process may be replacing
     * the final name right now */
    h = dlopen(tmpso, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        PyErr_Format(nd_CompileError, "numdyn: cannot load the compiled kernels %s: %s (source: %s)",
                     tmpso, e ? e : "?", cpath);
        unlink(tmpso);
        return NULL;
    }
    if (rename(tmpso, so) < 0) {
        unlink(tmpso);  /* still loaded; the entry is rebuilt next time */
        return h;
    }
    char line[64];
    int k = snprintf(line, sizeof line, "%llu %016llx\n", (unsigned long long)n, (unsigned long long)sum);
    (void)write_atomic(sp, line, (size_t)k);  /* a missing .sum only costs a rebuild */
    return h;
}

static int ours(const char *name)
{
    /* <16 hex>.c/.so/.sum and their temporaries: nothing else is touched */
    for (int i = 0; i < 16; i++) {
        char c = name[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return 0;
    }
    return name[16] == '.';
}

int nd_disk_clear(void)
{
    const char *dir = nd_disk_dir();
    if (!dir) return -1;
    DIR *d = opendir(dir);
    if (!d) {
        PyErr_Format(PyExc_OSError, "numdyn: cannot list %s: %s", dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    char path[4400];
    while ((e = readdir(d))) {
        if (!ours(e->d_name)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    return 0;
}
