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


# numpy.fft calls the GPU runs as 1-d transforms one after the other (the
# label says which; "ihfft"/"rfft*" take the real part of a complex input)
FFT_CALLS = [
    ("fft", lambda x: np.fft.fft(x, n=7, axis=0, norm="ortho")),
    ("hfft", lambda x: np.fft.hfft(x, n=9, axis=1, norm="forward")),
    ("hfft default", lambda x: np.fft.hfft(x)),
    ("ihfft", lambda x: np.fft.ihfft(x.real, axis=0, norm="ortho")),
    ("fft2", lambda x: np.fft.fft2(x, s=(5, 4), axes=(0, 2), norm="ortho")),
    ("ifft2", lambda x: np.fft.ifft2(x)),
    ("fftn", lambda x: np.fft.fftn(x, axes=(2, 0))),
    ("ifftn", lambda x: np.fft.ifftn(x, s=(3, 8), axes=(0, 2), norm="forward")),
    ("rfft2", lambda x: np.fft.rfft2(x.real, axes=(0, 1))),
    ("rfftn", lambda x: np.fft.rfftn(x.real, s=(4, 6, 5), axes=(0, 1, 2), norm="ortho")),
    ("irfft2", lambda x: np.fft.irfft2(x)),
    ("irfftn", lambda x: np.fft.irfftn(x, s=(2, 6), axes=(2, 1), norm="forward")),
    ("irfftn 1 axis", lambda x: np.fft.irfftn(x, axes=(1,))),
]
