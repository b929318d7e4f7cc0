"""NumPy's array loops on an FMA host fuse one product of each part of a
complex multiply/square, and `x ** 2` (Python int 2) is np.square: both are
visible in cancellation cases and in result dtypes, so numdyn must match."""
import numpy as np
import pytest

from oracle import check


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_multiply_and_square_cancellation(backend, dt):
    x = np.array([1e30 + 1e30j, 1e30 + 1e30j, 1 + 2j, -3 + 0.5j], dtype=dt)
    y = np.array([1e30 - 1e30j, 2 + 1j, 1e-30 + 1e30j, 7 - 2j], dtype=dt)
    check(lambda x, y: (x * y, x * x, np.square(x), np.multiply(x, y)), x, y,
          backend=backend, rtol=0, atol=0)


@pytest.mark.parametrize("dt", [np.complex128, np.float64, np.float16, np.int8, np.bool_])
def test_pow_operator_with_int_two_is_square(backend, dt):
    x = np.array([1e30 + 1e30j, -3 + 0.5j]).astype(dt) if np.dtype(dt).kind == "c" \
        else np.array([1, 0, 3]).astype(dt)
    check(lambda x: (x ** 2, np.power(x, 2), x ** 2.0), x, backend=backend, rtol=0, atol=0)

