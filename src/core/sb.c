/* sb.c -- the growable string builder (sb.h). */
#include "sb.h"
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
