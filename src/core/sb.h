/* sb.h -- a growable string builder (generated source, keys, listings)
 * and the one byte hasher (FNV-1a, 64 bit) every layer uses. */
#ifndef ND_SB_H
#define ND_SB_H
#include "npy.h"
#include <stdarg.h>

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
#endif
