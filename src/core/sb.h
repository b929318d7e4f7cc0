/* sb.h -- a growable string builder (generated source, keys, listings). */
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
#endif
