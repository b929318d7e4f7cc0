"""Static sizes make constant-size kernels (issue 15, point 4): a dim
marked static (or every dim under dynamic=False) is part of the program's
key already, so a kernel whose domain extent is that size holds it as a C
constant -- where the run time would not merge the kernel's dims anyway --
while the shape-generic program reads its extents from its arguments. Each
size gets its own kernel, and every one computes NumPy's values."""
import logging

import numpy as np

import numdyn


class _Code(logging.Handler):
    def __init__(self):
        super().__init__()
        self.text = []

    def emit(self, record):
        self.text.append(record.getMessage())


def _traced(fn, *args):
    """fn(*args) and the C of the kernels it scheduled"""
    numdyn.set_logs(output_code=True)
    log = logging.getLogger("numdyn")
    h = _Code()
    saved, log.handlers = log.handlers, [h]
    try:
        r = fn(*args)
    finally:
        log.handlers = saved
        numdyn.set_logs(output_code=False)
    return r, "\n".join(h.text)


def _f(x):
    return np.sin(x) * 1.5 + x


def _rows(x):
    return x - x.mean(axis=1, keepdims=True)


def test_static_extents_are_constants_in_the_kernel():
    old = numdyn.config.compile_budget
    numdyn.config.compile_budget = float("inf")  # kernels built by the calls that show them
    try:
        static = numdyn.compile(_f, dynamic=False)
        for n in (37, 53):
            x = np.linspace(-1.0, 1.0, n)
            r, code = _traced(static, x)
            np.testing.assert_allclose(r, _f(x), rtol=1e-12)
            assert f"const int64_t n0 = {n};" in code, code
        x = np.linspace(-1.0, 1.0, 41)
        r, code = _traced(numdyn.compile(_f), x)  # shape-generic
        np.testing.assert_allclose(r, _f(x), rtol=1e-12)
        assert "const int64_t n0 = I[0];" in code and "n0 = 41" not in code, code
        # mark_static of one dim: the rows' length is a constant, the count is not
        rows = numdyn.compile(_rows)
        for m in (10, 12):
            x = np.arange(m * 48.0).reshape(m, 48) % 7
            numdyn.mark_static(x, 1)
            r, code = _traced(rows, x)
            np.testing.assert_allclose(r, _rows(x), rtol=1e-12, atol=1e-12)
            if code:  # the second size reuses the program: nothing new to show
                assert "const int64_t n0 = I[0];" in code and "const int64_t n1 = 48;" in code, code
    finally:
        numdyn.config.compile_budget = old
