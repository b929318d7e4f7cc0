"""Views a captured loop hands back to the function (issue 17, point 2:
NumPy's aliasing). `best = x[i:i + 3]` chosen in a loop is, after the loop
and still inside the function, a view whose `.base` is NumPy's (x, or the
array x itself views) and which shares x's memory both ways: a write through
it after the loop reaches x and a write to x reaches it. The arguments are
lazy values of the tracer there (proxies), so the loop's view of their real
memory has to be handed back as the tracer's view. Plain NumPy is the oracle;
one compile serves every layout."""
import numpy as np

import numdyn


def pick_views(x, mode):
    if mode == 1:
        x = x * 2.0           # a computed array: its view's base is it
    elif mode == 2:
        x = x[1:]             # a view: NumPy collapses .base to x's owner
    base_of_x = x.base
    if x.ndim == 2:
        best = x[0]
        for i in range(x.shape[0]):
            if x[i, 0] > best[0]:
                best = x[i]
        col = x[:, 0]
        for j in range(x.shape[1]):
            if x[0, j] < col[0]:
                col = x[:, j]
    else:
        best = x[:3]
        for i in range(x.shape[0] - 2):
            cand = x[i:i + 3]
            if cand.sum() > best.sum():
                best = cand
        col = x[::2]
        for j in range(1, 3):
            if x[j] < col[0]:
                col = x[j::2]
    facts = (best.base is x, best.base is base_of_x, col.base is x, col.base is base_of_x,
             best.base is None, np.shares_memory(best, x), best.flags.writeable)
    best[0] = -100.0          # reaches x
    x[x.shape[0] - 1] = 7.5   # reaches best when they overlap
    return facts, best, col, x


def test_views_from_a_loop_have_numpys_base_and_memory():
    cf = numdyn.compile(pick_views, options={"floor": False})
    rng = np.random.default_rng(3)
    one, two = rng.standard_normal(11), rng.standard_normal((5, 6))
    cases = [(lambda: one.copy(), 0), (lambda: one.copy(), 1), (lambda: one.copy(), 2),
             (lambda: np.asfortranarray(two), 1), (lambda: two.copy()[::-1], 2)]
    for make, mode in cases:
        want = pick_views(make(), mode)
        xa = make()
        got = cf(xa, mode)
        xw = make()
        pick_views(xw, mode)
        assert got[0] == want[0], (mode, got[0], want[0])
        for g, w in zip(got[1:], want[1:]):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(xa, xw)
    info = cf._loop_info()
    assert info and all(i["captured"] for i in info), info
