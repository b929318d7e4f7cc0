/* strides.c -- see strides.h. */
#include "strides.h"

int nd_c_contiguous(int ndim, const npy_intp *dims, const npy_intp *strides, npy_intp unit)
{
    npy_intp expect = unit;
    for (int d = 0; d < ndim; d++) if (dims[d] == 0) return 1;
    for (int d = ndim - 1; d >= 0; d--) {
        if (dims[d] == 1) continue;
        if (strides[d] != expect) return 0;
        expect *= dims[d];
    }
    return 1;
}

int nd_nocopy_reshape(int ndim, const npy_intp *dims, const npy_intp *strides,
                      int nnd, const npy_intp *ndims, npy_intp *nstrides)
{
    npy_intp od[ND_MAXDIMS], os[ND_MAXDIMS], ns[ND_MAXDIMS], nsize = 1, osize = 1;
    int ond = 0;
    for (int d = 0; d < ndim; d++) {
        if (dims[d] == 1) continue;  /* length-1 axes carry no layout */
        od[ond] = dims[d];
        os[ond++] = strides[d];
        osize *= dims[d];
    }
    for (int d = 0; d < nnd; d++) nsize *= ndims[d];
    if (nsize != osize || nsize == 0) return 0;
    int oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < nnd && oi < ond) {
        npy_intp np_ = ndims[ni], op = od[oi];
        while (np_ != op) {
            if (np_ < op) np_ *= ndims[nj++];
            else op *= od[oj++];
        }
        for (int ok = oi; ok < oj - 1; ok++)
            if (os[ok] != od[ok + 1] * os[ok + 1]) return 0;
        ns[nj - 1] = os[oj - 1];
        for (int nk = nj - 1; nk > ni; nk--) ns[nk - 1] = ns[nk] * ndims[nk];
        ni = nj++;
        oi = oj++;
    }
    /* trailing length-1 axes of the new shape */
    npy_intp last = ni >= 1 ? ns[ni - 1] : 1;
    for (int nk = ni; nk < nnd; nk++) ns[nk] = last;
    if (nstrides)
        for (int d = 0; d < nnd; d++) nstrides[d] = ns[d];
    return 1;
}

static npy_intp iabs(npy_intp x) { return x < 0 ? -x : x; }

void nd_korder(int nops, int ndim, const npy_intp (*st)[ND_MAXDIMS], int iter, int *perm)
{
    /* the iterator sorts fastest dim first, so it starts from the reversed
     * C order and its result is read backwards */
    int q[ND_MAXDIMS];
    for (int i = 0; i < ndim; i++) q[i] = iter ? ndim - 1 - i : i;
    for (int i0 = 1; i0 < ndim; i0++) {
        int ipos = i0, j0 = q[i0];
        for (int i1 = i0 - 1; i1 >= 0; i1--) {
            int j1 = q[i1], ambig = 1, swap = 0;
            for (int k = 0; k < nops; k++) {
                if (!st[k][j0] || !st[k][j1]) continue;
                /* conflicting operands: any that keeps the order wins */
                int keep = iter ? iabs(st[k][j1]) <= iabs(st[k][j0])
                                : iabs(st[k][j0]) <= iabs(st[k][j1]);
                if (keep) swap = 0;
                else if (ambig) swap = 1;
                ambig = 0;
            }
            if (ambig) continue;
            if (!swap) break;
            ipos = i1;
        }
        if (ipos != i0) {
            for (int i = i0; i > ipos; i--) q[i] = q[i - 1];
            q[ipos] = j0;
        }
    }
    for (int i = 0; i < ndim; i++) perm[i] = iter ? q[ndim - 1 - i] : q[i];
}

void nd_perm_strides(int ndim, const npy_intp *shape, const int *perm, npy_intp *strides)
{
    npy_intp s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[perm[i]] = s;
        s *= shape[perm[i]] > 0 ? shape[perm[i]] : 1;
    }
}

void nd_c_strides(int ndim, const npy_intp *shape, npy_intp *strides)
{
    npy_intp acc = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = acc;
        acc *= shape[d] > 0 ? shape[d] : 1;
    }
}

int nd_mem_overlap(PyArrayObject *x, PyArrayObject *y)
{
    char *b[2][2];
    PyArrayObject *xs[2] = {x, y};
    for (int k = 0; k < 2; k++) {
        char *p = PyArray_BYTES(xs[k]), *lo = p, *hi = p;
        for (int d = 0; d < PyArray_NDIM(xs[k]); d++) {
            npy_intp n = PyArray_DIM(xs[k], d), st = PyArray_STRIDE(xs[k], d);
            if (n == 0) return 0;
            if (st < 0) lo += st * (n - 1); else hi += st * (n - 1);
        }
        b[k][0] = lo;
        b[k][1] = hi + PyArray_ITEMSIZE(xs[k]);
    }
    return b[0][0] < b[1][1] && b[1][0] < b[0][1];
}
