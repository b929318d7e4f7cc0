"""The kernel memo (src/codegen/codegen_memo.c) names a kernel from its
structure before any C text is made. Its key must hold everything the text
depends on: two kernels that differ only in what the key leaves out would
share a name, and the second would run the first one's code."""
import numpy as np

import numdyn


def test_a_scalar_the_text_reads_is_in_the_key():
    # `np.power(v, 2)` is emitted as v * v, any other exponent as pow(): the
    # three kernels have one structure and differ in a scalar's value
    fs = [(e, numdyn.compile(lambda x, e=e: np.power(np.abs(x), e).sum()))
          for e in (2.0, 0.5, 3.0)]
    y = np.linspace(-2.0, 3.0, 50)
    for _ in range(2):
        for e, f in fs:
            np.testing.assert_allclose(f(y), np.power(np.abs(y), e).sum(), rtol=1e-13)


def _norms(x):
    return (np.linalg.norm(x, 2), np.linalg.norm(x, 0.5), np.linalg.norm(x, 3),
            np.linalg.norm(x, 1))


def test_norms_of_every_order_in_one_process():
    # the session-16 CI failure: norms with ord=2 and ord=0.5 in one worker
    f = numdyn.compile(_norms)
    for x in (np.linspace(-3.0, 4.0, 33), np.linspace(0.5, 1.0, 7).astype(np.float32)):
        for got, want in zip(f(x), _norms(x)):
            np.testing.assert_allclose(got, want, rtol=1e-5 if x.dtype == np.float32 else 1e-13)
