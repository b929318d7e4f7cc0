/* codegen_c.c -- where the headers generated code includes live
 * (backend_native.c assembles the unit; the text builder is core/sb.c).
 *
 * No text from user code ever reaches generated source: names are derived
 * from hashes, comments are fixed strings, values are kernel parameters.
 */
#include "core/npy.h"
#include "codegen.h"
#include <stdio.h>
#include <string.h>

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
    /* every header generated code includes: a changed one (a new numdyn)
     * must not load kernels compiled against the old one */
    static const char *const headers[] = {"nd_kernel.h", "nd_vm64.h", "nd_vm64_trig.h", "nd_vm32.h", "nd_f2i.h", "nd_f16.h",
                                          "nd_loop.h"};
    uint64_t h = ND_FNV_INIT;
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", header_dir, headers[i]);
        FILE *f = fopen(path, "rb");
        if (!f) {
            PyErr_Format(PyExc_OSError, "numdyn: cannot read %s (broken installation?)", path);
            header_dir[0] = 0;
            return -1;
        }
        char buf[8192];
        size_t k;
        h = nd_fnv64(headers[i], strlen(headers[i]), h);
        while ((k = fread(buf, 1, sizeof buf, f)) > 0) h = nd_fnv64(buf, k, h);
        fclose(f);
    }
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
