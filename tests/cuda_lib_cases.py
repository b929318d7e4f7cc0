"""Operands for the cuBLAS/cuFFT extern tests (test_cuda_blas.py on the host,
test_cuda_gpu_diff.py on a GPU): random values and the memory layouts a
matmul operand can arrive in."""
import numpy as np

LAYOUTS = ["C", "F", "T", "step", "rowstep"]


def layout(x, kind):
    """x's values in another memory layout: C, Fortran, transposed copy,
    a strided slice of a bigger array (last dim, or rows and an offset)."""
    if kind == "C" or x.ndim == 0:
        return np.ascontiguousarray(x)
    if kind == "F":
        return np.asfortranarray(x)
    if kind == "T" and x.ndim >= 2:
        return np.ascontiguousarray(np.swapaxes(x, -1, -2)).swapaxes(-1, -2)
    if kind == "step":
        big = np.zeros(x.shape[:-1] + (x.shape[-1] * 2 + 1,), x.dtype)
        big[..., 1::2] = x
        return big[..., 1::2]
    if kind == "rowstep" and x.ndim >= 2:
        big = np.zeros(x.shape[:-2] + (x.shape[-2] * 2, x.shape[-1] + 3), x.dtype)
        big[..., ::2, 2:2 + x.shape[-1]] = x
        return big[..., ::2, 2:2 + x.shape[-1]]
    return np.ascontiguousarray(x)


def rand(rng, shape, dtype):
    """Standard normal values (real and imaginary parts) of dtype."""
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)
