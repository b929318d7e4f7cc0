/* cache_blob.c -- compiled code that is not a shared object (CUDA cubins)
 * in the kernel cache directory, with cache_disk.c's rules: the directory
 * is checked (ours, not writable by others), a file is read only when we
 * may trust it, and a write never replaces a file in place (temporary name,
 * then rename). A header of magic, size and checksum guards against a
 * truncated or damaged file: such a one reads as absent and is rebuilt. */
#define _GNU_SOURCE 1
#include "core/npy.h"
#include "toolchain.h"
#include "graph/hash.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "NDBLOB01"
#define HDR 24   /* magic, size, FNV-1a of the data */

static void name_of(char *out, size_t n, uint64_t key, const char *ext)
{
    snprintf(out, n, "%016llx%s", (unsigned long long)key, ext);
}

int nd_disk_blob_get(uint64_t key, const char *ext, char **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    int dfd = nd_disk_open_dir();
    if (dfd < 0) return -1;
    char name[64];
    name_of(name, sizeof name, key, ext);
    struct stat st;
    int fd = nd_disk_open_trusted(dfd, name, &st);
    close(dfd);
    if (fd < 0) return 0;
    int rc = 0;
    char hdr[HDR];
    uint64_t size = 0, sum = 0;
    if (st.st_size < HDR || pread(fd, hdr, HDR, 0) != HDR || memcmp(hdr, MAGIC, 8)) goto done;
    memcpy(&size, hdr + 8, 8);
    memcpy(&sum, hdr + 16, 8);
    if ((uint64_t)st.st_size != size + HDR) goto done;
    char *buf = PyMem_Malloc(size + 1);
    if (!buf) goto done;
    size_t got = 0;
    while (got < size) {
        ssize_t k = pread(fd, buf + got, size - got, (off_t)(HDR + got));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    if (got != size || nd_fnv64(buf, size, ND_FNV_INIT) != sum) {
        PyMem_Free(buf);
        goto done;
    }
    buf[size] = 0;
    *data = buf;
    *len = size;
    rc = 1;
done:
    close(fd);
    return rc;
}

int nd_disk_blob_put(uint64_t key, const char *ext, const void *data, size_t len)
{
    int dfd = nd_disk_open_dir();
    if (dfd < 0) { PyErr_Clear(); return -1; }
    char name[64], tmp[96];
    name_of(name, sizeof name, key, ext);
    static unsigned seq;
    snprintf(tmp, sizeof tmp, "%s.tmp%ld.%u", name, (long)getpid(), seq++);
    char *buf = PyMem_Malloc(len + HDR);
    int rc = -1;
    if (!buf) { PyErr_Clear(); goto done; }
    uint64_t size = len, sum = nd_fnv64(data, len, ND_FNV_INIT);
    memcpy(buf, MAGIC, 8);
    memcpy(buf + 8, &size, 8);
    memcpy(buf + 16, &sum, 8);
    memcpy(buf + HDR, data, len);
    if (nd_disk_write_new_at(dfd, tmp, buf, len + HDR) == 0) {
        if (renameat(dfd, tmp, dfd, name) == 0) rc = 0;
        else unlinkat(dfd, tmp, 0);
    }
    PyMem_Free(buf);
done:
    close(dfd);
    return rc;
}
