/* codegen_c.c -- C text: the builder, hashing, and where the headers
 * generated code includes live (backend_native.c assembles the unit).
 *
 * No text from user code ever reaches generated source: names are derived
 * from hashes, comments are fixed strings, values are kernel parameters.
 */
#include "core/npy.h"
#include "runtime/native.h"
#include <stdio.h>
#include <string.h>

void nd_sb_init(nd_sb *b) { b->p = NULL; b->n = b->cap = 0; b->oom = 0; }
void nd_sb_free(nd_sb *b) { PyMem_RawFree(b->p); nd_sb_init(b); }

static int sb_reserve(nd_sb *b, size_t extra)
{
    if (b->oom) return -1;
    if (b->n + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + extra + 1) cap *= 2;
    char *p = PyMem_RawRealloc(b->p, cap);
    if (!p) { b->oom = 1; return -1; }
    b->p = p;
    b->cap = cap;
    return 0;
}

void nd_sb_puts(nd_sb *b, const char *s)
{
    size_t k = strlen(s);
    if (sb_reserve(b, k) < 0) return;
    memcpy(b->p + b->n, s, k + 1);
    b->n += k;
}

void nd_sb_printf(nd_sb *b, const char *fmt, ...)
{
    va_list ap;
    char small[256];
    va_start(ap, fmt);
    int k = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (k < 0) { b->oom = 1; return; }
    if (sb_reserve(b, (size_t)k) < 0) return;
    if ((size_t)k < sizeof small) {
        memcpy(b->p + b->n, small, (size_t)k + 1);
    } else {
        va_start(ap, fmt);
        vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
        va_end(ap);
    }
    b->n += (size_t)k;
}

int nd_sb_check(nd_sb *b)
{
    if (b->oom) { PyErr_NoMemory(); return -1; }
    if (!b->p && sb_reserve(b, 0) < 0) { PyErr_NoMemory(); return -1; }
    return 0;
}

uint64_t nd_fnv64(const void *data, size_t n, uint64_t h)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ULL; }
    return h;
}

/* ------------------------------------------------------- header files */
static char header_dir[4096];
static uint64_t header_hash;

static int find_header_dir(void)
{
    if (header_dir[0]) return 0;
    const char *env = getenv("NUMDYN_KERNELS_DIR");
    if (env && *env) {
        snprintf(header_dir, sizeof header_dir, "%s", env);
    } else {
        PyObject *mod = PyImport_ImportModule("numdyn.kernels");
        if (!mod) return -1;
        PyObject *path = PyObject_GetAttrString(mod, "__path__");
        Py_DECREF(mod);
        if (!path) return -1;
        PyObject *first = PySequence_GetItem(path, 0);
        Py_DECREF(path);
        if (!first) return -1;
        const char *s = PyUnicode_AsUTF8(first);
        if (!s) { Py_DECREF(first); return -1; }
        if (strlen(s) >= sizeof header_dir) {
            Py_DECREF(first);
            PyErr_SetString(PyExc_OSError, "numdyn: kernels directory path too long");
            return -1;
        }
        snprintf(header_dir, sizeof header_dir, "%s", s);
        Py_DECREF(first);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/nd_kernel.h", header_dir);
    FILE *f = fopen(path, "rb");
    if (!f) {
        PyErr_Format(PyExc_OSError, "numdyn: cannot read %s (broken installation?)", path);
        header_dir[0] = 0;
        return -1;
    }
    uint64_t h = ND_FNV_INIT;
    char buf[8192];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) h = nd_fnv64(buf, k, h);
    fclose(f);
    header_hash = h;
    return 0;
}

const char *nd_cg_header_dir(void)
{
    return find_header_dir() < 0 ? NULL : header_dir;
}

uint64_t nd_cg_header_hash(void)
{
    if (find_header_dir() < 0) { PyErr_Clear(); return 0; }
    return header_hash;
}
