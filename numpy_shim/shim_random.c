/* shim_random.c -- np.random.shuffle of a traced array, from code numdyn
 * remaps but cannot rewrite (no source: exec'd code, a REPL).
 *
 * NumPy's shuffle tests its argument for ndarray and takes a generic path
 * for anything else: `x[i], x[j] = x[j], x[i]`, which on rows with view
 * semantics duplicates rows (a wrong answer) and refuses axis=. So the shim's
 * np.random.shuffle never models it: it is a recorded graph break, and
 * NumPy shuffles the real array in place -- the caller's own buffer, or
 * the value's memory, which the traced array is from then on (the rule of
 * a computed value handed to code numdyn does not trace). Code numdyn
 * rewrites routes every `.shuffle(...)` call the same way (numdyn/_rng_calls.py).
 */
#include "shim_internal.h"

static PyObject *shuffle_impl(nd_trace *t, PyObject **argv)
{
    (void)t;
    (void)argv;
    return nd_shim_unsupported("numpy.random.shuffle permutes the array's memory in place "
                               "(NumPy runs it on the real array)");
}

static const nd_shim_def random_defs[] = {
    {"random.shuffle", "x", shuffle_impl, 0},
    {NULL},
};

int nd_shim_register_random(nd_shim_table *tab)
{
    return nd_shim_add_functions(tab, random_defs);
}
