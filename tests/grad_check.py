"""Gradient checks shared by the autodiff tests: central differences, and
many rules checked by few compiled functions (CI time)."""
import numpy as np

import numdyn


def numeric_grad(f, args, argnum, eps=1e-6):
    """central differences of the scalar f(*args) w.r.t. args[argnum]"""
    x = np.array(args[argnum], dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        ap = list(args); ap[argnum] = xp
        am = list(args); am[argnum] = xm
        g[i] = (float(f(*ap)) - float(f(*am))) / (2 * eps)
    return g


def check_grad(f, x, rtol=1e-5, atol=1e-6):
    """numdyn.grad of the scalar f(x) (float64 x) against central
    differences, keeping x's shape and dtype; a warm call (replayed) agrees.
    Returns the gradient."""
    g = numdyn.grad(f)(x.copy())
    assert g.shape == x.shape and g.dtype == x.dtype
    np.testing.assert_allclose(g, numeric_grad(f, (x,), 0), rtol=rtol, atol=atol)
    np.testing.assert_allclose(numdyn.grad(f)(x.copy()), g, rtol=1e-12, atol=1e-14)
    return g


def check_terms(terms, args, backend="native", rtol=1e-5, atol=1e-6, chunk=12, replay=False):
    """numdyn's gradient of a sum of terms against each term's own central
    differences, `chunk` terms to a compiled function (CI time: one
    compile, and their pointwise forward and backward fuse into a few
    kernels, for many rules). Term k is (name, e, slice of args), its value
    np.sum(e(*args[slice])); the terms' e give arrays of one shape and each
    reads only its own arguments, so each argument's gradient is its
    term's."""
    for c0 in range(0, len(terms), chunk):
        part = terms[c0:c0 + chunk]
        lo = part[0][2].start
        hi = part[-1][2].stop
        sub = args[lo:hi]

        def total(*a, part=part, lo=lo):
            return np.sum(sum(e(*a[sl.start - lo:sl.stop - lo]) for _, e, sl in part))
        fn = total if backend == "native" else numdyn.compile(total, backend=backend)
        copies = [a.copy() for a in sub]
        vg = numdyn.value_and_grad(fn, argnums=tuple(range(len(sub))))
        value, grads = vg(*sub)
        for a, c in zip(sub, copies):  # the arguments are left as they were
            np.testing.assert_array_equal(a, c)
        if replay:  # a warm call (replayed) agrees
            for g, g2 in zip(grads, vg(*sub)[1]):
                np.testing.assert_allclose(g2, g, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(value, total(*copies), rtol=1e-10, atol=1e-12)
        for name, e, sl in part:
            own = args[sl]
            for j in range(len(own)):
                g = grads[sl.start - lo + j]
                assert g.shape == own[j].shape and g.dtype == own[j].dtype, name
                num = numeric_grad(lambda *x, e=e: np.sum(e(*x)), own, j)
                np.testing.assert_allclose(g, num, rtol=rtol, atol=atol,
                                           err_msg=f"{name}, argument {j}")
