/* runtime_native.c -- runs a program on a graph: buffers, kernel arguments,
 * eager steps, in-place setitems, outputs.
 *
 * Everything size-dependent is read here from the graph being run (node
 * shapes, view maps, scalar values, the input arrays), never from the graph
 * the program was built for. Buffers are ndarrays allocated through the
 * NumPy C-API, so eager steps (nd_eval_node) take them as they are and
 * outputs go back to Python without copies. Kernels run with the GIL
 * released.
 */
#include "core/npy.h"
#include "native.h"
#include "backend.h"
#include "par.h"
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#undef I  /* complex.h (via NumPy): this file names the kernel argument I */

#define MAXOPS 64
#define GIL_WORK 16384  /* below this, releasing the GIL costs more than it frees */
/* Long kernels stop on Ctrl-C (see arm_interrupt); shorter ones finish
 * first, which takes well under the ~100 ms a user waits for. */
#define INT_WORK ((int64_t)1 << 22)

/* an input array the kernels can read: aligned, native byte order, element
 * strides (element-size multiples) */
PyObject *nd_usable_array(PyObject *a, int need_c)
{
    PyArrayObject *x = (PyArrayObject *)a;
    int ok = PyArray_ISALIGNED(x) && PyArray_ISNOTSWAPPED(x);
    npy_intp it = PyArray_ITEMSIZE(x);
    for (int d = 0; ok && d < PyArray_NDIM(x); d++)
        if (PyArray_STRIDE(x, d) % it) ok = 0;
    if (need_c && !PyArray_IS_C_CONTIGUOUS(x)) ok = 0;
    if (ok) { Py_INCREF(a); return a; }
    return PyArray_FromAny(a, PyArray_DescrFromType(PyArray_TYPE(x)), 0, 0,
                           NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_ENSURECOPY, NULL);
}

/* The bytes a kernel run reads: per input array (once, however many
 * operands view it) the elements its widest operand walks -- the dims
 * along which it is not broadcast, a frame's short dims included. */
static long long bytes_read(nd_graph *g, nd_kernel *k, PyObject **opa, const int64_t *I,
                            const int64_t *n, int R)
{
    nd_id buf[MAXOPS];
    long long el[MAXOPS], tot = 0;
    int nb = 0, nops = k->nin + k->nout;
    for (int o = 0; o < k->nin; o++) {
        nd_kop *op = &k->ops[o];
        long long e = 1;
        for (int d = 0; d < R; d++) if (I[R + o * R + d] != 0) e *= n[d];
        if (op->frame >= 0) {
            int ext[ND_MAXFS], ns = nd_frame_short(g, k->fr[op->frame], NULL, ext);
            for (int t = 0; t < ns; t++) if (I[nd_frame_sidx(R, nops, o, t)] != 0) e *= ext[t];
        }
        e *= PyArray_ITEMSIZE((PyArrayObject *)opa[o]);
        int q = 0;
        while (q < nb && buf[q] != op->buf) q++;
        if (q == nb) { buf[nb] = op->buf; el[nb++] = e; }
        else if (e > el[q]) el[q] = e;
    }
    for (int q = 0; q < nb; q++) tot += el[q];
    return tot;
}

/* ------------------------------------------------------------ Ctrl-C
 * A long kernel runs with the GIL released, where Python cannot act on a
 * SIGINT until it returns (minutes, for a big one). While such a kernel
 * runs in the main thread and SIGINT raises KeyboardInterrupt (Python's
 * default_int_handler), a handler of ours sits in front of Python's: it
 * sets ND_ERR_INTERRUPT in the kernel's error word, which the kernel polls
 * once per task (ND_POLL), and passes the signal on to Python's handler, so
 * PyErr_CheckSignals raises KeyboardInterrupt once the kernel is back. */
static int *volatile int_target;
static struct sigaction int_prev;

static void on_sigint(int sig, siginfo_t *si, void *uc)
{
    int *e = int_target;
    if (e) __atomic_fetch_or(e, ND_ERR_INTERRUPT, __ATOMIC_RELAXED);
    if (int_prev.sa_flags & SA_SIGINFO) {
        if (int_prev.sa_sigaction) int_prev.sa_sigaction(sig, si, uc);
    } else if (int_prev.sa_handler != SIG_DFL && int_prev.sa_handler != SIG_IGN) {
        int_prev.sa_handler(sig);
    }
}

/* 1 when armed, 0 when not (not the main thread, SIGINT not Python's
 * KeyboardInterrupt), -1 with an exception. */
static int arm_interrupt(int *E)
{
    static PyObject *getsignal, *default_handler;
    static unsigned long main_ident;
    if (!getsignal) {
        PyObject *sig = PyImport_ImportModule("signal");
        PyObject *thr = sig ? PyImport_ImportModule("threading") : NULL;
        PyObject *mt = thr ? PyObject_CallMethod(thr, "main_thread", NULL) : NULL;
        PyObject *id = mt ? PyObject_GetAttrString(mt, "ident") : NULL;
        if (id) main_ident = PyLong_AsUnsignedLong(id);
        if (id && !PyErr_Occurred()) {
            getsignal = PyObject_GetAttrString(sig, "getsignal");
            default_handler = getsignal ? PyObject_GetAttrString(sig, "default_int_handler") : NULL;
        }
        Py_XDECREF(id);
        Py_XDECREF(mt);
        Py_XDECREF(thr);
        Py_XDECREF(sig);
        if (!getsignal || !default_handler) {
            Py_CLEAR(getsignal);
            Py_CLEAR(default_handler);
            return -1;
        }
    }
    if (PyThread_get_thread_ident() != main_ident) return 0;
    PyObject *h = PyObject_CallFunction(getsignal, "i", SIGINT);
    if (!h) return -1;
    int ours = h == default_handler;
    Py_DECREF(h);
    if (!ours) return 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigint;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    int_target = E;
    if (sigaction(SIGINT, &sa, &int_prev) < 0) { int_target = NULL; return 0; }
    if (!(int_prev.sa_flags & SA_SIGINFO) &&
        (int_prev.sa_handler == SIG_DFL || int_prev.sa_handler == SIG_IGN)) {
        sigaction(SIGINT, &int_prev, NULL);  /* not Python's handler after all */
        int_target = NULL;
        return 0;
    }
    return 1;
}

static void disarm_interrupt(void)
{
    sigaction(SIGINT, &int_prev, NULL);
    int_target = NULL;
}

/* ------------------------------------------------- NumPy's error state
 * A kernel reports the floating-point status flags its threads raised
 * (ND_ERR_FPE_*) and integer division by zero / MIN // -1 (ND_ERR_DIVZERO,
 * ND_ERR_OVERFLOW), and NumPy scalar math that wraps (ND_ERR_OVERFLOW:
 * graph.h, ND_F_SCALAR_MATH). When np.geterr() at call time ignores all of them,
 * nothing happens (the common case costs two status-register reads per
 * kernel). Otherwise the graph is run again by NumPy (nd_backend_eager_run:
 * kernels wrote only buffers of their own, the caller's arrays are written
 * after the program), so each ufunc that raises does what np.errstate says
 * -- warn / raise / call / print / log, NumPy's messages naming the ufunc,
 * in NumPy's order -- and the results are NumPy's. A flag NumPy would not
 * have raised costs the re-run only. Errors NumPy raises at one operation
 * (an integer to a negative power, a listed scalar store that int() cannot
 * convert: backend.h) re-run the graph the same way, so NumPy raises them
 * at that operation, after the warnings of those before it, and the caller
 * learns which one (nd_failed_node). */
static int errstate_acts(int e)
{
    static PyObject *geterr;
    static const struct { int bits; const char *key; } cat[] = {
        {ND_ERR_FPE_DIV | ND_ERR_DIVZERO, "divide"},
        {ND_ERR_FPE_OVER | ND_ERR_OVERFLOW, "over"},
        {ND_ERR_FPE_UNDER, "under"},
        {ND_ERR_FPE_INVALID, "invalid"},
    };
    if (!geterr) {
        PyObject *np = PyImport_ImportModule("numpy");
        geterr = np ? PyObject_GetAttrString(np, "geterr") : NULL;
        Py_XDECREF(np);
        if (!geterr) return -1;
    }
    PyObject *d = PyObject_CallNoArgs(geterr);
    if (!d) return -1;
    int acts = 0;
    for (size_t c = 0; c < sizeof cat / sizeof cat[0] && !acts; c++) {
        if (!(e & cat[c].bits)) continue;
        PyObject *v = PyDict_Check(d) ? PyDict_GetItemString(d, cat[c].key) : NULL;
        if (!v || !PyUnicode_Check(v) || PyUnicode_CompareWithASCIIString(v, "ignore") != 0)
            acts = 1;
    }
    Py_DECREF(d);
    return acts;
}

#define ERRSTATE_BITS (ND_ERR_DIVZERO | ND_ERR_OVERFLOW | ND_ERR_FPE_DIV | ND_ERR_FPE_OVER | \
                       ND_ERR_FPE_UNDER | ND_ERR_FPE_INVALID)

/* [lo, hi) of the bytes an array's elements occupy (store-check mode) */
static void byte_extent(PyArrayObject *a, char **lohi)
{
    char *lo = PyArray_BYTES(a), *hi = lo;
    int empty = 0;
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        npy_intp n = PyArray_DIM(a, d), st = PyArray_STRIDE(a, d);
        if (n == 0) empty = 1;
        else if (st < 0) lo += (n - 1) * st;
        else hi += (n - 1) * st;
    }
    lohi[0] = lo;
    lohi[1] = empty ? lo : hi + PyArray_ITEMSIZE(a);
}

static int report_errors(nd_kernel *k, int e)
{
    if (e & ND_ERR_OOB) {
        char nm[32];
        snprintf(nm, sizeof nm, "ndk_%016llx", (unsigned long long)k->hash);
        PyErr_Format(PyExc_SystemError,
                     "numdyn: internal error: kernel %s stored outside its output "
                     "(caught by NUMDYN_CHECK_STORES; please report)", nm);
        return -1;
    }
    if (e & ND_ERR_NOMEM) {
        PyErr_SetString(PyExc_MemoryError, "numdyn: a kernel could not allocate its row scratch buffer");
        return -1;
    }
    if (e & (ND_ERR_NEGPOW | ND_ERR_DATAWARN))
        return 1;  /* NumPy raises / warns: at its operation, after those before it */
    (void)k;
    return (e & ERRSTATE_BITS) ? errstate_acts(e) : 0;
}

/* 1 when operand j of ufunc node n is a scalar parameter (maybe broadcast,
 * or cast to the loop's dtype) whose value is finite in the loop's dtype
 * and does not round to 0 there; its value in *x. */
static int finite_scalar_operand(nd_graph *g, const nd_node *n, int j, double *x)
{
    nd_id id = n->in[j];
    int lt = n->in_dtype[j] >= 0 ? n->in_dtype[j] : id >= 0 ? g->nodes[id].dtype : -1;
    for (int steps = 0; id >= 0 && steps < 4 && g->nodes[id].op != ND_OP_SCALAR; steps++) {
        nd_node *m = &g->nodes[id];
        int bcast = m->op == ND_OP_VIEW && !(m->flags & (ND_F_VIEW_REAL | ND_F_VIEW_IMAG));
        if (m->nin < 1 || !(bcast || (m->op == ND_OP_CAST && m->dtype == lt))) return 0;
        id = m->in[0];
    }
    if (id < 0 || g->nodes[id].op != ND_OP_SCALAR || g->nodes[id].ndim != 0) return 0;
    const nd_node *sc = &g->nodes[id];
    double v;
    if (PyTypeNum_ISFLOAT(sc->dtype)) v = sc->scalar.f;
    else if (PyTypeNum_ISUNSIGNED(sc->dtype)) v = (double)sc->scalar.u;
    else if (PyTypeNum_ISINTEGER(sc->dtype) || PyTypeNum_ISBOOL(sc->dtype)) v = (double)sc->scalar.i;
    else return 0;
    double lim = lt == NPY_DOUBLE ? DBL_MAX : lt == NPY_FLOAT ? FLT_MAX : lt == NPY_HALF ? 65504.0 : -1.0;
    double tiny = lt == NPY_DOUBLE ? DBL_MIN : lt == NPY_FLOAT ? FLT_MIN : 6.2e-5;  /* normal minimum */
    if (!(fabs(v) <= lim)) return 0;       /* NaN, inf, or inf in the loop's dtype */
    if (v != 0 && fabs(v) < tiny) return 0;  /* may round to 0 there */
    *x = v;
    return 1;
}

/* Binary arithmetic with a finite scalar operand cannot raise "invalid" in
 * IEEE arithmetic (NumPy's loops raise nothing there): x + c, x - c; x * c,
 * x / c, c / x with c nonzero; x ** c with c integral; c ** x with c > 0.
 * So `np.exp(-0.5 * x**2)` or `np.exp(x) + 1` on NaN data (where SLEEF's
 * vector code raises the flag inside) is not run again by NumPy. */
static int quiet_with_scalar(nd_graph *g, const nd_node *n)
{
    double c;
    switch (n->sub) {
    case ND_UF_ADD: case ND_UF_SUBTRACT:
        return finite_scalar_operand(g, n, 0, &c) || finite_scalar_operand(g, n, 1, &c);
    case ND_UF_MULTIPLY: case ND_UF_TRUE_DIVIDE:
        return (finite_scalar_operand(g, n, 0, &c) && c != 0) ||
               (finite_scalar_operand(g, n, 1, &c) && c != 0);
    case ND_UF_POWER: case ND_UF_FLOAT_POWER:
        return (finite_scalar_operand(g, n, 1, &c) && c == trunc(c)) ||
               (finite_scalar_operand(g, n, 0, &c) && c > 0);
    default:
        return 0;
    }
}

/* whether kernel k may raise "invalid" where NumPy's loops raise none
 * (codegen.h nd_cg_kernel_may_flag_invalid), with the values of its scalar
 * parameters known */
static int kernel_may_flag_invalid(nd_graph *g, nd_kernel *k)
{
    return nd_cg_kernel_may_flag_invalid(g, k, quiet_with_scalar);
}

/* The calling thread's floating-point status flags as ND_ERR_FPE_* (the
 * kernels' nd_fpe_take), cleared. */
static int fpe_take(void)
{
    enum { ALL = FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID };
#if defined(__x86_64__) && defined(__GNUC__)
    /* read straight from MXCSR and the x87 status word (where libm
     * routines may raise them; the bits are FE_*'s): two register stores,
     * where fetestexcept's call was 3-5% of a replayed program of small
     * kernels, run twice per kernel */
    unsigned int csr;
    unsigned short sw;
    __asm__ volatile("stmxcsr %0" : "=m"(csr));
    __asm__ volatile("fnstsw %0" : "=m"(sw));
    int f = (int)((csr | sw) & ALL);
    if (__builtin_expect(!f, 1)) return 0;
    feclearexcept(f);
#else
    int f = fetestexcept(ALL);
    if (!f) return 0;
    feclearexcept(f);
#endif
    return (f & FE_DIVBYZERO ? ND_ERR_FPE_DIV : 0) | (f & FE_OVERFLOW ? ND_ERR_FPE_OVER : 0) |
           (f & FE_UNDERFLOW ? ND_ERR_FPE_UNDER : 0) | (f & FE_INVALID ? ND_ERR_FPE_INVALID : 0);
}

int nd_kernel_errors(nd_graph *g, nd_kernel *k, int E)
{
    if ((E & ND_ERR_FPE_INVALID) && !kernel_may_flag_invalid(g, k)) E &= ~ND_ERR_FPE_INVALID;
    return E ? report_errors(k, E) : 0;
}

/* 0, 1 when NumPy's error state wants the graph run by NumPy (see
 * errstate_acts), -1 with an exception. */
static int run_kernel(nd_program *p, nd_kernel *k, nd_graph *g, PyObject **arr, const nd_scalar *Sp)
{
    int nops = k->nin + k->nout, R = k->rank;
    char *P[3 * MAXOPS];
    int64_t I[ND_MAXDIMS + MAXOPS * ND_MAXDIMS + MAXOPS * ND_MAXFS];
    if (nops > MAXOPS) {
        PyErr_Format(PyExc_RuntimeError, "numdyn: kernel with too many operands (kind %d, %d in, %d out)",
                     (int)k->kind, k->nin, k->nout);
        return -1;
    }
    /* outputs */
    for (int o = k->nin; o < nops; o++) {
        nd_kop *op = &k->ops[o];
        if (op->acc == ND_A_REGION) continue;  /* the BASE step made it */
        if (arr[op->buf]) continue;            /* two outputs, one node */
        nd_node *m = &g->nodes[op->buf];
        arr[op->buf] = p->kord[op->buf] ? nd_alloc_array_order(m->ndim, m->shape, m->dtype, m->kperm)
                                        : nd_alloc_array(m->ndim, m->shape, m->dtype);
        if (!arr[op->buf]) goto fail;
    }
    /* view bases must be C-contiguous (the map is over the C-order index):
     * a C copy kept apart (arr[N + buf]), since direct reads of the same
     * array may rely on its own layout (a Fortran input walked in F order) */
    PyObject *opa[MAXOPS];
    for (int o = 0; o < nops; o++) opa[o] = arr[k->ops[o].buf];
    for (int o = 0; o < k->nin; o++) {
        nd_kop *op = &k->ops[o];
        PyArrayObject *a = (PyArrayObject *)arr[op->buf];
        if (!a) {
            PyErr_SetString(PyExc_RuntimeError, "numdyn: internal error: kernel operand not computed");
            goto fail;
        }
        if (op->acc == ND_A_VIEW && !PyArray_IS_C_CONTIGUOUS(a)) {
            PyObject **slot = &arr[g->n + op->buf];
            if (!*slot && !(*slot = nd_usable_array((PyObject *)a, 1))) goto fail;
            opa[o] = *slot;
        }
    }
    int64_t n[ND_MAXDIMS];
    nd_karr ka[MAXOPS];
    for (int o = 0; o < nops; o++) {
        PyArrayObject *a = (PyArrayObject *)opa[o];
        ka[o] = (nd_karr){PyArray_BYTES(a), PyArray_NDIM(a), PyArray_ITEMSIZE(a), PyArray_STRIDES(a)};
    }
    nd_kernel_args(g, k, ka, P, I, n);
    nd_counter_add(ND_CTR_BYTES_READ, bytes_read(g, k, opa, I, n, R));
    /* merge adjacent dims every operand walks as one (fewer, longer loops) */
    int64_t tot = nd_kernel_merge(k, I, n);
    if (nd_cg_check_stores())
        for (int o = k->nin; o < nops; o++)
            byte_extent((PyArrayObject *)opa[o], &P[nops + 2 * (o - k->nin)]);
    int64_t work = tot * (int64_t)(k->cost > 0 ? k->cost : 1);
    int E, rebuilt = 0;
    nd_kfn ran;
again:
    ran = k->fn;
    E = nd_par_forked() ? ND_RUN_ALONE : 0;
    (void)fpe_take();  /* flags left by earlier code are not this kernel's */
    if (work >= GIL_WORK) {
        int armed = work >= INT_WORK ? arm_interrupt(&E) : 0;
        if (armed < 0) goto fail;
        E |= nd_par_begin(k, tot, work);  /* the team or this thread alone (par.h) */
        Py_BEGIN_ALLOW_THREADS
        ran(P, I, Sp, &E);
        Py_END_ALLOW_THREADS
        nd_par_ran();
        E &= ~ND_RUN_ALONE;
        if (armed) disarm_interrupt();
    } else {
        ran(P, I, Sp, &E);
        E &= ~ND_RUN_ALONE;
    }
    E |= fpe_take();
    if ((E & ND_ERR_VARIANT) && !(E & ND_ERR_INTERRUPT)) {
        /* the kernel was generated without the variant these sizes take
         * and did nothing: once with every variant, then run that (another
         * thread may have rebuilt it meanwhile) */
        if (rebuilt++) {
            PyErr_SetString(PyExc_SystemError, "numdyn: internal error: a kernel with every variant "
                            "asked for another");
            goto fail;
        }
        if (k->fn == ran) {
            int vr = nd_native_all_variants(p, g, k);
            if (vr < 0) goto fail;
            if (vr > 0) return 1;   /* frozen: NumPy runs the graph */
        }
        goto again;
    }
    if (E & ND_ERR_INTERRUPT) {
        /* the kernel skipped its remaining work: its outputs are garbage and
         * are dropped with the program (kernels write fresh buffers only; the
         * caller's arrays are written after the program) */
        if (PyErr_CheckSignals() == 0) PyErr_SetNone(PyExc_KeyboardInterrupt);
        return -1;
    }
    (void)p;
    return nd_kernel_errors(g, k, E);
fail:
    return -1;
}

#define GATHER_LOOP(T)                                                         \
    {                                                                          \
        const T *sp = (const T *)src;                                          \
        T *dp = (T *)dst;                                                      \
        for (npy_intp i = 0; i < m; i++) dp[i] = sp[ip[i]];                    \
    }
typedef struct { uint64_t lo, hi; } gather16;

/* 1 when every ip[i] is in [0, n): one branch-free pass the AVX2 clone
 * vectorizes */
__attribute__((target_clones("avx2", "default"), optimize("tree-vectorize", "vect-cost-model=dynamic")))
static int flat_in_range(const int64_t *ip, npy_intp m, uint64_t n)
{
    uint64_t bad = 0;
    for (npy_intp i = 0; i < m; i++) bad |= (uint64_t)ip[i] >= n;
    return !bad;
}

__attribute__((target_clones("avx2", "default")))
static void gather_copy(void *dst, const void *src, const int64_t *ip, npy_intp m, npy_intp isz)
{
    switch (isz) {
    case 1: GATHER_LOOP(uint8_t) break;
    case 2: GATHER_LOOP(uint16_t) break;
    case 4: GATHER_LOOP(uint32_t) break;
    case 8: GATHER_LOOP(uint64_t) break;
    default: GATHER_LOOP(gather16) break;
    }
}
#undef GATHER_LOOP

/* GATHER as one pass in C where it is a plain copy of elements: the
 * source aligned, native-endian, C-contiguous (its flat C order is its
 * memory) and of the result's numeric dtype, the flat indices int64,
 * C-contiguous, of the result's shape. The graph normalized them (an
 * index_check step, or at trace time); NumPy's take, which the eager
 * backend calls, checks them again and costs ~15 instructions an element
 * (a COO mat-vec's x[cols] of 1000 entries: a quarter of its run). One
 * still outside [0, size) leaves the step to take, which raises NumPy's
 * IndexError. 1 done, 0 not this case, -1 error. */
static int gather_direct(const nd_node *n, PyObject *src, PyObject *idx, PyObject **out)
{
    if (!src || !idx || !PyArray_CheckExact(src) || !PyArray_Check(idx)) return 0;
    PyArrayObject *s = (PyArrayObject *)src, *ix = (PyArrayObject *)idx;
    int dt = PyArray_TYPE(s);
    if (dt != n->dtype || !(PyTypeNum_ISNUMBER(dt) || dt == NPY_BOOL) || !PyArray_IS_C_CONTIGUOUS(s) ||
        !PyArray_ISALIGNED(s) || !PyArray_ISNOTSWAPPED(s) || PyArray_TYPE(ix) != NPY_INT64 ||
        !PyArray_IS_C_CONTIGUOUS(ix) || !PyArray_ISALIGNED(ix) || !PyArray_ISNOTSWAPPED(ix) ||
        PyArray_NDIM(ix) != n->ndim ||
        (n->ndim && memcmp(PyArray_DIMS(ix), n->shape, sizeof(npy_intp) * (size_t)n->ndim) != 0))
        return 0;
    npy_intp isz = PyArray_ITEMSIZE(s);
    if (isz != 1 && isz != 2 && isz != 4 && isz != 8 && isz != 16) return 0;
    uint64_t sz = (uint64_t)PyArray_SIZE(s);
    npy_intp m = PyArray_SIZE(ix);
    const int64_t *ip = (const int64_t *)PyArray_DATA(ix);
    if (!flat_in_range(ip, m, sz)) return 0;
    PyObject *r = nd_alloc_array(n->ndim, n->shape, n->dtype);
    if (!r) return -1;
    gather_copy(PyArray_DATA((PyArrayObject *)r), PyArray_DATA(s), ip, m, isz);
    *out = r;
    return 1;
}

/* One eager step. A multi-output extern stores all its outputs at its
 * first output's step (one NumPy call, nd_eval_extern_group); the steps of
 * the others then find their buffer made. */
static int run_eager(nd_graph *g, nd_id id, PyObject **arr)
{
    nd_node *n = &g->nodes[id];
    if (n->op == ND_OP_EXTERN && n->aux >= 0 && arr[id]) return 0;
    if (n->op == ND_OP_GATHER && n->nin == 2 && n->in[0] >= 0 && n->in[1] >= 0) {
        int rc = gather_direct(n, arr[n->in[0]], arr[n->in[1]], &arr[id]);
        if (rc) return rc < 0 ? -1 : 0;
    }
    int nin = n->op == ND_OP_EXTERN ? n->nextra : n->nin;
    PyObject *small[8], **ins = small;
    if (nin > 8) {
        ins = PyMem_Malloc(sizeof(PyObject *) * (size_t)nin);
        if (!ins) { PyErr_NoMemory(); return -1; }
    }
    for (int k = 0; k < nin; k++) {
        nd_id in = n->op == ND_OP_EXTERN ? n->extra[k] : n->in[k];
        ins[k] = in >= 0 ? arr[in] : Py_None;
    }
    int rc = nd_eval_extern_group(g, id, (PyObject *const *)ins, arr, NULL);
    if (ins != small) PyMem_Free(ins);
    if (rc < 0) return -1;
    if (!PyArray_Check(arr[id])) {
        PyObject *a = PyArray_FromAny(arr[id], NULL, 0, 0, 0, NULL);
        Py_SETREF(arr[id], a);
        if (!a) return -1;
    }
    return 0;
}

/* A NumPy step's result that nothing but this run's buffer table holds:
 * no other node, no view (a view holds a reference to its base), not an
 * array the step returned from elsewhere (an argument, a cache: those hold
 * references too), and its memory its own. A setitem whose plan allows it
 * (take_in) writes into it instead of copying it whole: the row swap
 * A[[k, p], :] = A[[p, k], :] of an LU with partial pivoting is NumPy's
 * scatter, a fresh copy of A, which the next column update then copied
 * again (a copy of the whole matrix per column). */
static int sole_owner(PyArrayObject *b)
{
    return Py_REFCNT(b) == 1 && PyArray_CHKFLAGS(b, NPY_ARRAY_OWNDATA) && !PyArray_BASE(b);
}

/* 1 when a listed scalar store (backend.h) would raise: NumPy then runs
 * the graph, raising at that store in operation order. */
static int scalar_store_fails(nd_graph *g, PyObject **arr)
{
    for (int k = 0; k < nd_nscalar_stores; k++) {
        nd_id s = nd_scalar_stores[2 * k], v = nd_scalar_stores[2 * k + 1];
        if (s < 0 || s >= g->n || v < 0 || v >= g->n || !arr[v]) continue;
        if (nd_scalar_store_check(arr[v], g->nodes[s].dtype, 0)) return 1;
    }
    return 0;
}

_Thread_local const nd_id *nd_donated;
_Thread_local int nd_ndonated;
_Thread_local nd_graph *nd_numpy_graph;
_Thread_local const nd_id *nd_numpy_outs;
_Thread_local int nd_reran;

/* Regions a run wrote into donated arrays (backend.h), with what they held
 * before: undone, last first, when the run fails or NumPy reruns the graph. */
#define ND_MAX_DONATED 8
typedef struct {
    int nbuf;
    char *lo[ND_MAX_DONATED], *hi[ND_MAX_DONATED];  /* the donated arrays' bytes */
    int n, cap;
    PyObject **view, **saved;
    PyObject **idx;   /* a scatter's flat indices (saved: what they held), or NULL */
} undo_log;

static int donated_id(const nd_id *don, int ndon, nd_id id)
{
    for (int k = 0; k < ndon; k++) if (don[k] == id) return 1;
    return 0;
}

static int in_donated(const undo_log *u, PyArrayObject *a)
{
    char *p = PyArray_BYTES(a);
    for (int k = 0; k < u->nbuf; k++) if (p >= u->lo[k] && p < u->hi[k]) return 1;
    return 0;
}

/* room for one more entry: 0, or -1 with MemoryError */
static int undo_room(undo_log *u)
{
    if (u->n < u->cap) return 0;
    int cap = u->cap ? 2 * u->cap : 4;
    PyObject **v = PyMem_Realloc(u->view, sizeof(PyObject *) * (size_t)cap);
    if (v) u->view = v;
    PyObject **s = v ? PyMem_Realloc(u->saved, sizeof(PyObject *) * (size_t)cap) : NULL;
    if (s) u->saved = s;
    PyObject **x = s ? PyMem_Realloc(u->idx, sizeof(PyObject *) * (size_t)cap) : NULL;
    if (!x) { PyErr_NoMemory(); return -1; }
    u->idx = x;
    u->cap = cap;
    return 0;
}

/* SETITEM `set` is about to write its region into b, a donated array (or
 * one of its takes): keep a copy of the region */
static int undo_save(undo_log *u, nd_graph *g, nd_id set, PyArrayObject *b)
{
    const nd_node *sn = &g->nodes[set];
    if (undo_room(u) < 0) return -1;
    npy_intp isz = PyArray_ITEMSIZE(b), st[ND_MAXDIMS];
    for (int d = 0; d < sn->vndim; d++) st[d] = sn->vstrides[d] * isz;
    PyArray_Descr *dt = PyArray_DESCR(b);
    Py_INCREF(dt);
    PyObject *v = PyArray_NewFromDescr(&PyArray_Type, dt, sn->vndim, (npy_intp *)sn->vshape, st,
                                       PyArray_BYTES(b) + sn->voff * isz, NPY_ARRAY_WRITEABLE, NULL);
    if (!v) return -1;
    if (PyArray_SetBaseObject((PyArrayObject *)v, Py_NewRef((PyObject *)b)) < 0) { Py_DECREF(v); return -1; }
    PyObject *c = PyArray_NewCopy((PyArrayObject *)v, NPY_KEEPORDER);
    if (!c) { Py_DECREF(v); return -1; }
    u->view[u->n] = v;
    u->idx[u->n] = NULL;
    u->saved[u->n++] = c;
    return 0;
}

static void undo_end(undo_log *u, int restore)
{
    if (restore && u->n) {
        ND_EXC_SAVE(exc);
        for (int k = u->n - 1; k >= 0; k--)
            if ((u->idx[k] ? nd_scatter_into((PyArrayObject *)u->view[k], u->idx[k], u->saved[k], NULL)
                           : PyArray_CopyInto((PyArrayObject *)u->view[k], (PyArrayObject *)u->saved[k])) < 0)
                PyErr_Clear();
        ND_EXC_RESTORE(exc);
    }
    for (int k = 0; k < u->n; k++) {
        Py_DECREF(u->view[k]);
        Py_DECREF(u->saved[k]);
        Py_XDECREF(u->idx[k]);
    }
    PyMem_Free(u->view);
    PyMem_Free(u->saved);
    PyMem_Free(u->idx);
    memset(u, 0, sizeof *u);
}

static int shares_bytes(PyObject *x, PyArrayObject *b)
{
    if (!x || !PyArray_Check(x)) return 0;
    PyArrayObject *a = (PyArrayObject *)x;
    char *lo = PyArray_BYTES(a), *hi = lo;
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        npy_intp span = (PyArray_DIM(a, d) - 1) * PyArray_STRIDE(a, d);
        if (PyArray_DIM(a, d) == 0) return 0;
        if (span < 0) lo += span; else hi += span;
    }
    hi += PyArray_ITEMSIZE(a);
    return lo < PyArray_BYTES(b) + PyArray_NBYTES(b) && PyArray_BYTES(b) < hi;
}

/* EXTERN scatter step `id` (ND_F_SCATTER) at step t: when no later step
 * reads its base and the run may consume the base's buffer -- a result of
 * this run that only its buffer table holds, or a donated input (its
 * overwritten elements saved for undo) -- write the values into that buffer
 * and make it the step's result: the row swap A[[k, p]] = A[[p, k]] of an
 * LU with partial pivoting copied the whole matrix per column. 1 done, 0
 * not so (the extern runs as usual), -1 error. */
static int scatter_in_place(nd_program *p, int t, nd_graph *g, nd_id id, PyObject **arr,
                            undo_log *undo)
{
    nd_node *n = &g->nodes[id];
    if (!(n->flags & ND_F_SCATTER) || n->op != ND_OP_EXTERN || n->nextra != 3 || arr[id]) return 0;
    nd_id base = n->extra[0];
    if (base < 0 || p->isout[base] || p->last[base] != t) return 0;
    for (int k = 1; k < 3; k++) if (n->extra[k] == base || n->extra[k] < 0) return 0;
    PyArrayObject *b = (PyArrayObject *)arr[base];
    PyObject *flat = arr[n->extra[1]], *vals = arr[n->extra[2]];
    if (!b || !flat || !vals || !PyArray_Check(b) || PyArray_TYPE(b) != n->dtype ||
        PyArray_NDIM(b) != n->ndim ||
        (n->ndim && memcmp(PyArray_DIMS(b), n->shape, sizeof(npy_intp) * (size_t)n->ndim) != 0) ||
        !PyArray_IS_C_CONTIGUOUS(b) || !PyArray_ISWRITEABLE(b) ||
        shares_bytes(flat, b) || shares_bytes(vals, b))
        return 0;
    int donated = undo->nbuf && in_donated(undo, b);
    if (!donated && !(g->nodes[base].op != ND_OP_INPUT && sole_owner(b))) return 0;
    PyObject *saved = NULL, *keep = NULL;
    if (donated && (undo_room(undo) < 0 || !(keep = PyArray_FROMANY(flat, NPY_INT64, 0, 0, NPY_ARRAY_CARRAY))))
        return -1;
    if (nd_scatter_into(b, flat, vals, donated ? &saved : NULL) < 0) { Py_XDECREF(keep); return -1; }
    if (donated) {
        undo->view[undo->n] = Py_NewRef((PyObject *)b);
        undo->idx[undo->n] = keep;
        undo->saved[undo->n++] = saved;
    }
    arr[id] = Py_NewRef((PyObject *)b);
    return 1;
}

/* What every run of a program reads of its graph's structure, gathered by
 * its first run: its INPUT nodes, and all its kernels' scalar parameters
 * as one list. The program's key covers the graph's structure, so every
 * graph it runs has these nodes; a run then neither walks all nodes for
 * the inputs nor reads each kernel's parameters from nodes scattered over
 * a graph of a few MB (a cache miss per parameter per kernel: a replayed
 * program's cost per kernel grew with its size). */
typedef struct {
    int ninputs;
    nd_id *inputs;
    int64_t nscal;
    nd_id *scal;      /* the kernels' parameters (SCALAR nodes), kernel by kernel */
    int64_t *soff;    /* nkern + 1: kernel i's in scal[soff[i] .. soff[i + 1]) */
    int nkeep;
    nd_id *keep;      /* the nodes whose arrays no step drops (outputs, and
                         values no step reads): all a finished run still
                         holds, so it drops those, not 2 x n slots */
    nd_parstat *blas; /* per step: a matrix product's BLAS thread choice
                         (par.h); NULL when the program has none */
    uint8_t *isblas;  /* per step: 1 for such a product */
    int libm;         /* a kernel computes a ufunc whose underflow flag is
                         NumPy's libm's (libm_ufunc) */
} run_plan;

static void run_plan_free(void *v)
{
    run_plan *r = v;
    if (!r) return;
    PyMem_Free(r->inputs);
    PyMem_Free(r->scal);
    PyMem_Free(r->soff);
    PyMem_Free(r->keep);
    PyMem_Free(r->blas);
    PyMem_Free(r->isblas);
    PyMem_Free(r);
}

/* A step NumPy runs as a BLAS product: np.matmul of operands of one or
 * more dims (not two vectors), or np.dot of a matrix and a matrix or a
 * vector (what the BLAS thread choice of par.h covers: products that
 * OpenBLAS splits over its threads -- gemm, and gemv, which NumPy calls
 * for a matrix times a vector: `A.T @ r`). */
static int blas_step(nd_graph *g, const nd_step *st)
{
    static PyObject *mm, *dot;
    if (st->kind != ND_S_EAGER) return 0;
    const nd_node *n = &g->nodes[st->node];
    if (n->op != ND_OP_EXTERN || n->nextra != 2 || !n->obj || n->ndim < 1) return 0;
    if (!mm) {
        PyObject *np = PyImport_ImportModule("numpy");
        if (np) {
            mm = PyObject_GetAttrString(np, "matmul");
            dot = mm ? PyObject_GetAttrString(np, "dot") : NULL;
            Py_DECREF(np);
        }
        if (!mm || !dot) {
            PyErr_Clear();
            return 0;
        }
    }
    if (n->obj != mm && n->obj != dot) return 0;
    int two = 0;
    for (int k = 0; k < 2; k++) {
        nd_id in = n->extra[k];
        if (in < 0 || g->nodes[in].ndim < 1 || (n->obj == dot && g->nodes[in].ndim > 2)) return 0;
        two += g->nodes[in].ndim >= 2;
    }
    return two > 0;
}

/* OpenBLAS's own thresholds for splitting a product over its threads
 * (interface/gemm.c, interface/gemv.c): a gemm from m*n*k >= 2^18
 * multiply-adds (ND_PAR_BLAS_WORK), a gemv from a matrix of m*n >= 9216
 * elements. A gemv under 2^18 multiply-adds ran threaded and untimed (the
 * least squares' `Xb.T @ y`, 20000x11: on a loaded machine its worker
 * waits for a core as NumPy's does, mean 3.5-5 ms against a median of 1.6). */
#define BLAS_GEMV_THREADED 9216

/* multiply-adds of blas step st's product (all of its matrices) when
 * OpenBLAS would run it on its threads; else 0 */
static int64_t blas_work(nd_graph *g, const nd_step *st)
{
    const nd_node *n = &g->nodes[st->node], *a = &g->nodes[n->extra[0]], *b = &g->nodes[n->extra[1]];
    int64_t m = a->ndim >= 2 ? a->shape[a->ndim - 2] : 1, k = a->shape[a->ndim - 1];
    int64_t q = b->ndim >= 2 ? b->shape[b->ndim - 1] : 1, out = 1;
    for (int d = 0; d < n->ndim; d++) out *= n->shape[d];
    int64_t one = m * q * k, batch = m > 0 && q > 0 ? out / (m * q) : 0;
    if (m > 1 && q > 1) return one >= ND_PAR_BLAS_WORK ? one * batch : 0;
    if (m == 1 && q == 1) return 0;  /* a dot of two vectors */
    return one >= BLAS_GEMV_THREADED ? one * batch : 0;  /* gemv: the matrix is k x (m or q) */
}

/* A float ufunc whose "underflow" NumPy reports as its own loop raises
 * it, and its loops differ by machine: glibc's asinh/sin/tanh/expm1/...
 * raise it for a subnormal operand (a result equal to it), the SVML loops
 * of NumPy's AVX-512 builds do not; numdyn's forms follow neither. The
 * IEEE operations (+ - * / sqrt on reals, comparisons, rounding) raise it
 * exactly where NumPy's loops do. */
static int libm_ufunc(const nd_node *n)
{
    if (n->op != ND_OP_UFUNC) return 0;
    int cplx = PyTypeNum_ISCOMPLEX(n->dtype);
    for (int j = 0; j < n->nin && !cplx; j++)
        cplx = n->in_dtype[j] >= 0 && PyTypeNum_ISCOMPLEX(n->in_dtype[j]);
    switch (n->sub) {
    case ND_UF_EXP: case ND_UF_EXP2: case ND_UF_EXPM1: case ND_UF_LOG: case ND_UF_LOG2:
    case ND_UF_LOG10: case ND_UF_LOG1P: case ND_UF_LOGADDEXP: case ND_UF_LOGADDEXP2:
    case ND_UF_CBRT: case ND_UF_SIN: case ND_UF_COS: case ND_UF_TAN: case ND_UF_ARCSIN:
    case ND_UF_ARCCOS: case ND_UF_ARCTAN: case ND_UF_ARCTAN2: case ND_UF_HYPOT: case ND_UF_SINH:
    case ND_UF_COSH: case ND_UF_TANH: case ND_UF_ARCSINH: case ND_UF_ARCCOSH: case ND_UF_ARCTANH:
        return 1;
    case ND_UF_POWER: case ND_UF_FLOAT_POWER:
        return PyTypeNum_ISFLOAT(n->dtype) || cplx;
    case ND_UF_MULTIPLY: case ND_UF_TRUE_DIVIDE: case ND_UF_ABSOLUTE: case ND_UF_SQRT:
    case ND_UF_SQUARE: case ND_UF_RECIPROCAL:
        return cplx;
    default:
        return 0;
    }
}

/* 1 when np.geterr()["under"] is not "ignore" (NumPy's default), cached
 * per error-state object (np.errstate / np.seterr make a new one); -1
 * with an exception. */
static int underflow_watched(void)
{
    static PyObject *cv, *geterr, *seen;
    static int seen_watched;
    if (!cv) {
        PyObject *um = PyImport_ImportModule("numpy._core.umath");
        cv = um ? PyObject_GetAttrString(um, "_extobj_contextvar") : NULL;
        Py_XDECREF(um);
        if (!cv) PyErr_Clear();   /* no such variable: ask np.geterr() each time */
    }
    PyObject *cur = NULL;
    if (cv && PyContextVar_Get(cv, NULL, &cur) < 0) return -1;
    if (cur && cur == seen) {
        Py_DECREF(cur);
        return seen_watched;
    }
    if (!geterr) {
        PyObject *np = PyImport_ImportModule("numpy");
        geterr = np ? PyObject_GetAttrString(np, "geterr") : NULL;
        Py_XDECREF(np);
        if (!geterr) { Py_XDECREF(cur); return -1; }
    }
    PyObject *d = PyObject_CallNoArgs(geterr);
    PyObject *u = d && PyDict_Check(d) ? PyDict_GetItemString(d, "under") : NULL;
    int w = !(u && PyUnicode_Check(u) && PyUnicode_CompareWithASCIIString(u, "ignore") == 0);
    Py_XDECREF(d);
    if (!d) { Py_XDECREF(cur); return -1; }
    Py_XSETREF(seen, cur);   /* (NULL: not cached) */
    seen_watched = w;
    return w;
}

static run_plan *run_plan_of(nd_program *p, nd_graph *g)
{
    if (p->run) return p->run;
    run_plan *r = PyMem_Calloc(1, sizeof *r);
    if (!r) return (run_plan *)PyErr_NoMemory();
    int n = g->n;
    for (nd_id i = 0; i < n; i++) r->ninputs += g->nodes[i].op == ND_OP_INPUT;
    for (int i = 0; i < p->nkern; i++) r->nscal += p->kerns[i].nscal;
    for (nd_id i = 0; i < n; i++) r->nkeep += p->last[i] < 0 || p->isout[i];
    r->inputs = PyMem_Malloc(sizeof(nd_id) * (size_t)(r->ninputs + 1));
    r->scal = PyMem_Malloc(sizeof(nd_id) * (size_t)(r->nscal + 1));
    r->soff = PyMem_Malloc(sizeof(int64_t) * (size_t)(p->nkern + 1));
    r->keep = PyMem_Malloc(sizeof(nd_id) * (size_t)(r->nkeep + 1));
    if (!r->inputs || !r->scal || !r->soff || !r->keep) {
        run_plan_free(r);
        return (run_plan *)PyErr_NoMemory();
    }
    int ni = 0, nk = 0;
    for (nd_id i = 0; i < n; i++) if (g->nodes[i].op == ND_OP_INPUT) r->inputs[ni++] = i;
    for (nd_id i = 0; i < n; i++) if (p->last[i] < 0 || p->isout[i]) r->keep[nk++] = i;
    int64_t ns = 0;
    for (int i = 0; i < p->nkern; i++) {
        r->soff[i] = ns;
        for (int j = 0; j < p->kerns[i].nscal; j++) r->scal[ns++] = p->kerns[i].scal[j];
    }
    r->soff[p->nkern] = ns;
    int nblas = 0;
    for (int t = 0; t < p->nsteps; t++) nblas += blas_step(g, &p->steps[t]);
    if (nblas) {
        r->blas = PyMem_Calloc((size_t)p->nsteps, sizeof(nd_parstat));
        r->isblas = PyMem_Calloc((size_t)p->nsteps, 1);
        if (!r->blas || !r->isblas) {
            run_plan_free(r);
            return (run_plan *)PyErr_NoMemory();
        }
        for (int t = 0; t < p->nsteps; t++) r->isblas[t] = (uint8_t)blas_step(g, &p->steps[t]);
    }
    for (nd_id i = 0; i < n && !r->libm; i++) r->libm = libm_ufunc(&g->nodes[i]);
    p->run = r;
    p->run_free = run_plan_free;
    return r;
}

PyObject *nd_run_program(nd_program *p, nd_graph *g, const nd_id *outs, int nout)
{
    /* this run's donated inputs; a run nested in it (an extern calling
     * back into numdyn) gets none */
    const nd_id *don = nd_donated;
    int ndon = nd_ndonated;
    nd_donated = NULL;
    nd_ndonated = 0;
    nd_graph *numpy_g = nd_numpy_graph;
    const nd_id *numpy_outs = nd_numpy_outs;
    nd_numpy_graph = NULL;
    nd_numpy_outs = NULL;
    nd_reran = 0;
    undo_log undo;
    memset(&undo, 0, sizeof undo);
    int n = g->n;
    /* arr[i]: node i's array; arr[n + i]: its C copy for view reads */
    PyObject *small[128], **arr = small;
    nd_scalar Ssmall[64], *S = Ssmall;
    PyObject *res = NULL;
    int rerun = 0;
    nd_failed_node = ND_NONE;
    nd_failed_before = 0;
    if (n != p->nnodes) {
        PyErr_SetString(PyExc_RuntimeError, "numdyn: internal error: program does not fit the graph");
        return NULL;
    }
    if (n > 64) {
        arr = PyMem_Calloc((size_t)n * 2, sizeof(PyObject *));
        if (!arr) return PyErr_NoMemory();
    } else {
        memset(small, 0, sizeof small);
    }
    run_plan *plan = run_plan_of(p, g);
    if (!plan) goto done;
    if (plan->libm) {
        /* np.errstate(under=...) asks for NumPy's underflow reports: its
         * own loops compute such a graph and say when */
        int w = underflow_watched();
        if (w < 0) goto done;
        if (w) { rerun = 1; goto done; }
    }
    /* the kernels' parameters, read from the graph in one pass */
    if (plan->nscal > (int64_t)(sizeof Ssmall / sizeof Ssmall[0])) {
        S = PyMem_Malloc(sizeof(nd_scalar) * (size_t)plan->nscal);
        if (!S) { PyErr_NoMemory(); goto done; }
    }
    for (int64_t j = 0; j < plan->nscal; j++) S[j] = g->nodes[plan->scal[j]].scalar;
    for (int q = 0; q < plan->ninputs; q++) {
        nd_id i = plan->inputs[q];
        nd_node *nn = &g->nodes[i];
        if (!nn->obj || !PyArray_Check(nn->obj)) {
            PyErr_SetString(PyExc_TypeError, "numdyn: graph input is not an ndarray");
            goto done;
        }
        arr[i] = nd_usable_array(nn->obj, 0);
        if (!arr[i]) goto done;
        if (ndon && arr[i] == nn->obj && undo.nbuf < ND_MAX_DONATED && donated_id(don, ndon, i)) {
            PyArrayObject *a = (PyArrayObject *)arr[i];
            undo.lo[undo.nbuf] = PyArray_BYTES(a);
            undo.hi[undo.nbuf++] = PyArray_BYTES(a) + PyArray_NBYTES(a);
        }
    }
    for (int t = 0; t < p->nsteps; t++) {
        nd_step *st = &p->steps[t];
        if (st->kind == ND_S_EAGER) {
            int64_t mnk = plan->isblas && plan->isblas[t] ? blas_work(g, st) : 0;
            int timed = mnk && nd_par_blas_begin(&plan->blas[t], mnk);
            int rc = scatter_in_place(p, t, g, st->node, arr, &undo);
            if (rc == 0) rc = run_eager(g, st->node, arr);
            if (timed) nd_par_blas_ran();
            if (rc < 0) {
                nd_failed_node = st->node;
                goto done;
            }
        } else if (st->kind == ND_S_BASE) {
            nd_id base = g->nodes[st->node].in[0];
            PyArrayObject *b = (PyArrayObject *)arr[base];
            /* (a scatter that wrote into a donated input: its result is
             * that input's buffer, which no later step reads) */
            int given = 0;
            if (p->take_in && p->take_in[st->node]) {
                int don = undo.nbuf && in_donated(&undo, b);
                given = g->nodes[base].op == ND_OP_INPUT
                        ? don : sole_owner(b) || (don && (g->nodes[base].flags & ND_F_SCATTER));
            }
            if ((p->take[st->node] || given) && PyArray_IS_C_CONTIGUOUS(b) && PyArray_ISWRITEABLE(b)) {
                if (undo.nbuf && in_donated(&undo, b) && undo_save(&undo, g, st->node, b) < 0) goto done;
                Py_INCREF(b);
                arr[st->node] = (PyObject *)b;
            } else {
                nd_node *sn = &g->nodes[st->node];
                arr[st->node] = nd_alloc_array(sn->ndim, sn->shape, sn->dtype);
                if (!arr[st->node]) goto done;
                if (PyArray_CopyInto((PyArrayObject *)arr[st->node], b) < 0) goto done;
                nd_counter_add(ND_CTR_BASE_COPY_BYTES, (long long)PyArray_NBYTES(b));
            }
        } else {
            nd_counter_add(ND_CTR_KERNEL_RUNS, 1);
            int rc = run_kernel(p, &p->kerns[st->kern], g, arr, S + plan->soff[st->kern]);
            if (rc < 0) goto done;
            if (rc > 0) { rerun = 1; goto done; }
        }
        /* buffers whose last reader was this step */
        for (int32_t f = p->freeat[t]; f < p->freeat[t + 1]; f++) {
            Py_CLEAR(arr[p->freen[f]]);
            Py_CLEAR(arr[n + p->freen[f]]);
        }
    }
    nd_par_close(1);
    if (nd_nscalar_stores && scalar_store_fails(g, arr)) {
        rerun = 1;
        goto done;
    }
    res = PyList_New(nout);
    if (!res) goto done;
    for (int i = 0; i < nout; i++) {
        PyObject *a = arr[outs[i]];
        if (!a) {
            Py_CLEAR(res);
            PyErr_SetString(PyExc_RuntimeError, "numdyn: internal error: output not computed");
            goto done;
        }
        Py_INCREF(a);
        PyList_SET_ITEM(res, i, a);
    }
    if (nd_outputs_in_order(g, outs, nout, res) < 0) Py_CLEAR(res);
done:
    nd_par_close(0);  /* a failed run's open span is no sample */
    /* NumPy reruns the graph, or the caller sees the failure: the donated
     * inputs hold what they were given */
    undo_end(&undo, !res || rerun);
    if (res && !rerun && plan) {
        /* every other slot was dropped by the step that last read it
         * (plan_buffers' freen: each node read by a step and not an output) */
        for (int q = 0; q < plan->nkeep; q++) {
            Py_XDECREF(arr[plan->keep[q]]);
            Py_XDECREF(arr[n + plan->keep[q]]);
        }
    } else {
        for (nd_id i = 0; i < 2 * n; i++) Py_XDECREF(arr[i]);
    }
    if (arr != small) PyMem_Free(arr);
    if (S != Ssmall) PyMem_Free(S);
    if (rerun) {
        nd_counter_add(ND_CTR_ERRSTATE_RERUNS, 1);
        nd_reran = numpy_g != NULL;
        res = numpy_g ? nd_backend_eager_run(numpy_g, numpy_outs, nout) : nd_backend_eager_run(g, outs, nout);
    }
    return res;
}
