/* cache_mem.c -- the in-memory caches: kernel hash -> function, graph key ->
 * program (so a repeated graph skips scheduling and codegen), and the last
 * guard key seen per graph skeleton (to count recompiles).
 *
 * Open addressing on 64-bit keys; all access happens with the GIL held.
 * Loaded shared objects are never closed: a cleared cache only drops
 * lookups, and a program still running elsewhere keeps its functions.
 */
#include "core/npy.h"
#include "toolchain.h"

typedef struct slot {
    uint64_t key;
    void *val;     /* nd_kfn (cast) or nd_program* */
    uint64_t aux;
    int used;
} slot;

typedef struct table {
    slot *s;
    size_t cap, n;
} table;

static table kernels, programs, skeletons;

static slot *lookup(table *t, uint64_t key)
{
    if (!t->cap) return NULL;
    size_t m = t->cap - 1, i = (size_t)(key ^ (key >> 29)) & m;
    while (t->s[i].used) {
        if (t->s[i].key == key) return &t->s[i];
        i = (i + 1) & m;
    }
    return NULL;
}

static int grow(table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    slot *ns = PyMem_Calloc(cap, sizeof(slot));
    if (!ns) { PyErr_NoMemory(); return -1; }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->s[i].used) continue;
        size_t m = cap - 1, j = (size_t)(t->s[i].key ^ (t->s[i].key >> 29)) & m;
        while (ns[j].used) j = (j + 1) & m;
        ns[j] = t->s[i];
    }
    PyMem_Free(t->s);
    t->s = ns;
    t->cap = cap;
    return 0;
}

static slot *insert(table *t, uint64_t key)
{
    slot *s = lookup(t, key);
    if (s) return s;
    if ((t->n + 1) * 2 > t->cap && grow(t) < 0) return NULL;
    size_t m = t->cap - 1, i = (size_t)(key ^ (key >> 29)) & m;
    while (t->s[i].used) i = (i + 1) & m;
    t->s[i].used = 1;
    t->s[i].key = key;
    t->s[i].val = NULL;
    t->s[i].aux = 0;
    t->n++;
    return &t->s[i];
}

nd_kfn nd_kcache_get(uint64_t hash)
{
    slot *s = lookup(&kernels, hash);
    return s ? (nd_kfn)s->val : NULL;
}

int nd_kcache_put(uint64_t hash, nd_kfn fn)
{
    slot *s = insert(&kernels, hash);
    if (!s) return -1;
    s->val = (void *)fn;
    return 0;
}

nd_program *nd_pcache_get(uint64_t key)
{
    slot *s = lookup(&programs, key);
    return s ? (nd_program *)s->val : NULL;
}

int nd_pcache_put(uint64_t key, nd_program *p)
{
    slot *s = insert(&programs, key);
    if (!s) return -1;
    if (s->val) nd_program_decref((nd_program *)s->val);
    p->refcnt++;
    s->val = p;
    return 0;
}

int nd_pcache_note_skeleton(uint64_t skeleton, uint64_t key)
{
    slot *s = lookup(&skeletons, skeleton);
    if (s) {
        int changed = s->aux != key;
        s->aux = key;
        return changed;
    }
    s = insert(&skeletons, skeleton);
    if (s) s->aux = key;
    else PyErr_Clear();
    return 0;
}

static void clear(table *t, int programs_owned)
{
    for (size_t i = 0; i < t->cap; i++)
        if (t->s[i].used && programs_owned && t->s[i].val) nd_program_decref((nd_program *)t->s[i].val);
    PyMem_Free(t->s);
    t->s = NULL;
    t->cap = t->n = 0;
}

void nd_mcache_clear(void)
{
    clear(&kernels, 0);
    clear(&programs, 1);
    clear(&skeletons, 0);
}
