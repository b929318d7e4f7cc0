/* codegen_memo.c -- a kernel's name known before its C text is made.
 *
 * A kernel's text (nd_cg_kernel) is a function of the structure of the
 * nodes it reads, the kernel's own description and two process settings;
 * its name is the hash of that text. A long recorded loop schedules
 * thousands of kernels that are the same computation at other node ids
 * (each iteration of `x = x * a + b`, or each chunk of one), and making
 * each one's text only to hash it and find the same name was most of such
 * a program's first call (100,000 iterations: ~2 s of snprintf).
 *
 * So the structure is written out first -- every field codegen reads, node
 * ids replaced by their rank among the ids the kernel touches (order kept,
 * since the text may depend on it) -- and looked up. A hit gives the name,
 * per-element cost and nomerge bit the text generator gave for the same
 * structure; a miss costs the key alone (a few hundred bytes, against
 * kilobytes of text). Keys are compared byte for byte, not by hash: a
 * collision must never hand a kernel another kernel's code.
 *
 * What the text reads: the kernel's fields (schedule.h), the graph nodes
 * its lists name and, through their inputs, up to two steps further (view
 * bases, operands of inlined expressions), nd_cg_static_sizes and
 * nd_cg_check_stores(). Never a node's array, scalar value or attributes
 * (those are kernel parameters), nor its consumers. Sizes are keyed in full,
 * so a size-dependent choice made while generating (short reductions,
 * static extents) cannot be reused for another size.
 */
#include "core/npy.h"
#include "codegen.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} kbuf;

static void put(kbuf *b, const void *x, size_t n)
{
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 512;
        while (c < b->n + n) c *= 2;
        char *q = PyMem_Realloc(b->p, c);
        if (!q) { b->oom = 1; return; }
        b->p = q;
        b->cap = c;
    }
    memcpy(b->p + b->n, x, n);
    b->n += n;
}

static void put_i(kbuf *b, int64_t v) { put(b, &v, sizeof v); }

/* ------------------------------------------------------- the ids touched */

typedef struct {
    nd_id *v;
    Py_ssize_t n, cap;
    int oom;
} idset;

static void add(idset *s, nd_id id)
{
    if (id < 0 || s->oom) return;
    if (s->n == s->cap) {
        Py_ssize_t c = s->cap ? 2 * s->cap : 64;
        nd_id *q = PyMem_Realloc(s->v, sizeof(nd_id) * (size_t)c);
        if (!q) { s->oom = 1; return; }
        s->v = q;
        s->cap = c;
    }
    s->v[s->n++] = id;
}

static int cmp_id(const void *a, const void *b)
{
    nd_id x = *(const nd_id *)a, y = *(const nd_id *)b;
    return (x > y) - (x < y);
}

static void uniq(idset *s)
{
    if (s->n < 2) return;
    qsort(s->v, (size_t)s->n, sizeof(nd_id), cmp_id);
    Py_ssize_t m = 1;
    for (Py_ssize_t i = 1; i < s->n; i++)
        if (s->v[i] != s->v[m - 1]) s->v[m++] = s->v[i];
    s->n = m;
}

/* rank of id among s's (sorted) ids; -2: not touched, -1: none */
static int64_t rank_of(const idset *s, nd_id id)
{
    if (id < 0) return -1;
    Py_ssize_t lo = 0, hi = s->n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (s->v[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < s->n && s->v[lo] == id ? (int64_t)lo : -2;
}

/* A kernel whose expressions reach more nodes than this gets no key: its
 * text is made (a long chain of inlined nodes is rare and costs its text) */
#define KEY_MAX_NODES 4096

static void expand(nd_graph *g, idset *s, nd_id id)
{
    if (id < 0 || id >= g->n) return;
    const nd_node *x = &g->nodes[id];
    for (int q = 0; q < x->nin && q < ND_MAXIN; q++) add(s, x->in[q]);
    for (int q = 0; q < x->nextra; q++) if (x->extra) add(s, x->extra[q]);
}

static void touched(nd_graph *g, const nd_kernel *k, idset *s)
{
    add(s, k->root);
    add(s, k->dom);
    for (int o = 0; o < k->nin + k->nout; o++) {
        add(s, k->ops[o].buf);
        add(s, k->ops[o].via);
    }
    for (int o = 0; o < k->nout; o++) if (k->oval) add(s, k->oval[o]);
    for (int i = 0; i < k->nscal; i++) add(s, k->scal[i]);
    for (int i = 0; i < k->ninl; i++) add(s, k->inl[i]);
    for (int i = 0; i < k->nrow; i++) add(s, k->rowv[i]);
    for (int i = 0; i < k->nred; i++) {
        add(s, k->reds[i]);
        if (k->rdiv) add(s, k->rdiv[i]);
    }
    for (int i = 0; i < k->nfr && i < ND_MAXFR; i++) add(s, k->fr[i]);
    /* and every node an element's expression can reach before it meets a
     * load or a parameter: the text follows inlined expressions and chains
     * of views to any depth, so a fixed number of steps could leave out
     * what a deeper one reads. Walked by levels (the graph is a DAG; ids
     * met before are dropped), never through an operand's buffer. */
    idset stop = {0}, seen = {0}, front = {0}, next = {0};
    for (int o = 0; o < k->nin + k->nout; o++) add(&stop, k->ops[o].buf);
    for (int i = 0; i < k->nscal; i++) add(&stop, k->scal[i]);
    uniq(&stop);
    for (Py_ssize_t i = 0; i < s->n; i++) {
        add(&seen, s->v[i]);
        if (rank_of(&stop, s->v[i]) < 0) add(&front, s->v[i]);
    }
    while (front.n && !seen.oom && !front.oom && !next.oom && !stop.oom) {
        next.n = 0;
        for (Py_ssize_t i = 0; i < front.n; i++) expand(g, &next, front.v[i]);
        uniq(&next);
        uniq(&seen);
        front.n = 0;
        for (Py_ssize_t i = 0; i < next.n; i++) {
            if (rank_of(&seen, next.v[i]) >= 0) continue;
            add(&front, next.v[i]);
        }
        for (Py_ssize_t i = 0; i < front.n; i++) add(&seen, front.v[i]);
        if (seen.n > KEY_MAX_NODES) { s->oom = 2; break; }
        /* what is new and not a buffer is walked next */
        Py_ssize_t m = 0;
        for (Py_ssize_t i = 0; i < front.n; i++)
            if (rank_of(&stop, front.v[i]) < 0) front.v[m++] = front.v[i];
        front.n = m;
    }
    if (stop.oom || seen.oom || front.oom || next.oom) { if (s->oom != 2) s->oom = 1; }
    /* the inputs of what is listed, and theirs (a buffer's own inputs: view
     * bases the text names) */
    for (int hop = 0; hop < 2 && !s->oom; hop++) {
        Py_ssize_t n0 = s->n;
        for (Py_ssize_t i = 0; i < n0; i++) expand(g, s, s->v[i]);
        uniq(s);
    }
    for (Py_ssize_t i = 0; i < seen.n && !s->oom; i++) add(s, seen.v[i]);
    uniq(s);
    PyMem_Free(stop.v);
    PyMem_Free(seen.v);
    PyMem_Free(front.v);
    PyMem_Free(next.v);
}

static void put_node(kbuf *b, const idset *s, const nd_node *x)
{
    put_i(b, ((int64_t)x->op << 40) ^ ((int64_t)x->ndim << 32) ^ (int64_t)(uint16_t)x->aux << 16);
    put_i(b, ((int64_t)x->sub << 32) ^ (uint32_t)x->dtype);
    put_i(b, x->nin);
    for (int q = 0; q < ND_MAXIN; q++) {
        put_i(b, rank_of(s, x->in[q]));
        put_i(b, x->in_dtype[q]);
    }
    put_i(b, x->flags);
    put(b, &x->axes, sizeof x->axes);
    int nd = x->ndim > x->vndim ? x->ndim : x->vndim;
    if (nd > ND_MAXDIMS) nd = ND_MAXDIMS;
    put(b, x->shape, sizeof(npy_intp) * (size_t)x->ndim);
    put_i(b, x->voff);
    put_i(b, x->vndim);
    put(b, x->vshape, sizeof(npy_intp) * (size_t)nd);
    put(b, x->vstrides, sizeof(npy_intp) * (size_t)nd);
    put(b, x->kperm, (size_t)x->ndim);
    put_i(b, x->nextra);
    for (int q = 0; q < x->nextra; q++) if (x->extra) put_i(b, rank_of(s, x->extra[q]));
    /* the one value the text reads: `x ** 2` is emitted as a product
     * (** -1 and ** 0.5 likewise: graph.h nd_scalar_power_class) */
    if (x->op == ND_OP_SCALAR) put_i(b, nd_scalar_power_class(x));
}

static void put_ids(kbuf *b, const idset *s, const nd_id *v, int n)
{
    put_i(b, v ? n : -1);
    if (v) for (int i = 0; i < n; i++) put_i(b, rank_of(s, v[i]));
}

static int make_key(nd_graph *g, const nd_kernel *k, kbuf *b)
{
    idset s = {0};
    touched(g, k, &s);
    if (s.oom == 2) { PyMem_Free(s.v); return 1; }   /* too many: no key */
    if (s.oom) { PyMem_Free(s.v); PyErr_NoMemory(); return -1; }
    put_i(b, 0x6e646b6d656d6f31LL);  /* the key's own layout version */
    put_i(b, nd_cg_check_stores());
    put_i(b, nd_cg_all_variants);
    put_i(b, nd_cg_nstatic);
    if (nd_cg_nstatic > 0 && nd_cg_static_sizes)
        put(b, nd_cg_static_sizes, sizeof(npy_intp) * (size_t)nd_cg_nstatic);
    put_i(b, k->kind);
    put_i(b, rank_of(&s, k->root));
    put_i(b, rank_of(&s, k->dom));
    put_i(b, k->dom_v);
    put_i(b, k->rank);
    put(b, k->dims, sizeof k->dims);
    put_i(b, k->red);
    put_i(b, k->scan);
    put_i(b, k->nin);
    put_i(b, k->nout);
    for (int o = 0; o < k->nin + k->nout; o++) {
        const nd_kop *op = &k->ops[o];
        put_i(b, rank_of(&s, op->buf));
        put_i(b, rank_of(&s, op->via));
        put_i(b, ((int64_t)op->acc << 16) ^ ((int64_t)(uint8_t)op->inner << 8) ^ (uint8_t)op->frame);
        put_i(b, op->dtype);
        put(b, op->fs, sizeof op->fs);
        put_i(b, op->zero);
    }
    put_ids(b, &s, k->oval, k->nout);
    put_ids(b, &s, k->scal, k->nscal);
    put_ids(b, &s, k->inl, k->ninl);
    put_i(b, k->inlf ? 1 : 0);
    if (k->inlf) put(b, k->inlf, (size_t)k->ninl);
    put_ids(b, &s, k->rowv, k->nrow);
    put_ids(b, &s, k->reds, k->nred);
    put_i(b, k->rcent ? 1 : 0);
    if (k->rcent) put(b, k->rcent, (size_t)k->nred);
    put_ids(b, &s, k->rdiv, k->nred);
    put_ids(b, &s, k->fr, k->nfr < ND_MAXFR ? k->nfr : ND_MAXFR);
    put_i(b, k->nomerge);
    put_i(b, k->err_uf);
    put_i(b, (int64_t)s.n);
    for (Py_ssize_t i = 0; i < s.n; i++) {
        if (s.v[i] >= g->n) { put_i(b, -9); continue; }
        put_node(b, &s, &g->nodes[s.v[i]]);
    }
    PyMem_Free(s.v);
    if (b->oom) { PyErr_NoMemory(); return -1; }
    return 0;
}

/* ------------------------------------------------------------ the table */

typedef struct {
    uint64_t h;       /* of the key bytes; 0: empty slot */
    char *key;
    size_t len;
    uint64_t name;    /* the kernel's hash (its text's) */
    int cost, nomerge;
} memo_ent;

#define MEMO_SLOTS 2048          /* a power of two; at most MEMO_MAX keys of a few KB */
#define MEMO_MAX (MEMO_SLOTS / 2)
static memo_ent *memo;
static int memo_used;

static void memo_clear(void)
{
    if (!memo) return;
    for (int i = 0; i < MEMO_SLOTS; i++) PyMem_Free(memo[i].key);
    memset(memo, 0, sizeof(memo_ent) * MEMO_SLOTS);
    memo_used = 0;
}

static memo_ent *slot_of(uint64_t h, const char *key, size_t len)
{
    for (uint64_t i = h & (MEMO_SLOTS - 1);; i = (i + 1) & (MEMO_SLOTS - 1)) {
        memo_ent *e = &memo[i];
        if (!e->h) return e;
        if (e->h == h && e->len == len && memcmp(e->key, key, len) == 0) return e;
    }
}

/* by words (keys are compared in full: only the spread matters) */
static uint64_t key_hash(const char *p, size_t n)
{
    uint64_t h = ND_FNV_INIT ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    return nd_fnv64(p + i, n - i, h);
}

void nd_cg_memo_free(nd_cg_memo *m)
{
    PyMem_Free(m->key);
    m->key = NULL;
    m->len = 0;
}

int nd_cg_memo_lookup(nd_graph *g, nd_kernel *k, nd_cg_memo *m)
{
    kbuf b = {0};
    m->key = NULL;
    m->len = 0;
    int rc = make_key(g, k, &b);
    if (rc != 0) { PyMem_Free(b.p); return rc < 0 ? -1 : 0; }
    m->key = b.p;
    m->len = b.n;
    m->h = key_hash(b.p, b.n) | 1;  /* never 0: 0 marks an empty slot */
    if (!memo) return 0;
    memo_ent *e = slot_of(m->h, m->key, m->len);
    if (!e->h) return 0;
    k->hash = e->name;
    k->cost = e->cost;
    k->nomerge = e->nomerge;
    return 1;
}

int nd_cg_memo_store(nd_cg_memo *m, const nd_kernel *k)
{
    if (!m->key) return 0;
    if (!memo && !(memo = PyMem_Calloc(MEMO_SLOTS, sizeof(memo_ent)))) return 0;  /* no memo: texts made */
    if (memo_used >= MEMO_MAX) memo_clear();
    memo_ent *e = slot_of(m->h, m->key, m->len);
    if (e->h) return 0;
    e->h = m->h;
    e->key = m->key;   /* taken */
    e->len = m->len;
    e->name = k->hash;
    e->cost = k->cost;
    e->nomerge = k->nomerge;
    m->key = NULL;
    m->len = 0;
    memo_used++;
    return 0;
}
