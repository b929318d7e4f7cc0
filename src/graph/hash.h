/* hash.h -- the one hasher (graph/): every structural hash and cache key
 * of numdyn (graph hash, guard keys, skeletons, custom-backend keys,
 * source-text and compiler-identity keys) is built from these two. It
 * lives with the IR it mostly hashes; every layer above graph/ uses it. */
#ifndef ND_HASH_H
#define ND_HASH_H
#include <stddef.h>
#include <stdint.h>

/* Fold one 64-bit word into h (boost-style combine, then a multiply that
 * spreads every bit): word-wise, so hashing a graph costs a few ns a node. */
static inline uint64_t nd_hash_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

/* FNV-1a over bytes (text: generated source, header files); start from
 * ND_FNV_INIT. Its values key the on-disk cache: do not change it. */
uint64_t nd_fnv64(const void *data, size_t n, uint64_t h);
#define ND_FNV_INIT 1469598103934665603ULL
#endif
