/* hash.c -- FNV-1a over bytes (hash.h). */
#include "hash.h"

uint64_t nd_fnv64(const void *data, size_t n, uint64_t h)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 1099511628211ULL; }
    return h;
}
