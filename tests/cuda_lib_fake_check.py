"""Run by tests/test_cuda_lib_fake.py in a fresh process: numdyn's cuBLAS/
cuFFT extern executors on host memory, with tests/cuda_lib_fake.c standing
in for libcuda/libcublas/libcufft, against NumPy.

    python cuda_lib_fake_check.py /path/to/libcudafake.so
"""
import sys

import numpy as np

from numdyn import _C, _cuda_libs

import cuda_lib_cases as cases
from cuda_lib_cases import layout

RNG = np.random.default_rng(7)
KINDS = {"fft": 0, "ifft": 1, "rfft": 2, "irfft": 3}
NORMS = {None: 0, "ortho": 1, "forward": 2}
TOL = {"complex128": 1e-10, "float64": 1e-10, "complex64": 2e-5, "float32": 2e-5}


def view(a):
    return (a.ctypes.data, a.dtype.num, a.shape, a.strides)


def check_fft():
    ran = 0
    for prec, (cdt, rdt) in {"32": ("complex64", "float32"), "64": ("complex128", "float64")}.items():
        for kind in KINDS:
            for shape, axis in [((16,), 0), ((8, 12), 1), ((8, 12), 0), ((3, 10, 5), 1),
                                ((3, 7, 5), 1), ((30, 7, 2), 1), ((2, 7, 30), 1), ((5, 9, 3), 1),
                                ((4, 1), 1), ((0, 5), 1), ((3, 0, 4), 1)]:
                for n in [None, 1, 2, 3, 5, 16, 23]:
                    if n is None and (shape[axis] == 0 or (kind == "irfft" and shape[axis] <= 1)):
                        continue
                    if kind == "irfft" and shape[axis] == 0:
                        # NumPy 2.4's irfft of an empty axis returns uninitialized
                        # memory (its zero-padded input's transform is zeros)
                        continue
                    for norm in NORMS:
                        x = cases.rand(RNG, shape, rdt if kind == "rfft" else cdt)
                        keep = x.copy()
                        want = getattr(np.fft, kind)(x, n=n, axis=axis, norm=norm)
                        nn = n if n is not None else (2 * (shape[axis] - 1) if kind == "irfft"
                                                      else shape[axis])
                        out = np.empty(want.shape, want.dtype)
                        _C._cuda_lib_fft(KINDS[kind], nn, axis, NORMS[norm],
                                         np.dtype(rdt).num, view(x), view(out), 0)
                        what = (kind, prec, shape, axis, n, norm)
                        assert np.array_equal(x, keep), ("input changed", what)
                        scale = max(1.0, float(np.abs(want).max(initial=0)))
                        err = float(np.abs(out - want).max(initial=0))
                        assert err <= TOL[want.dtype.name] * scale, (what, err)
                        ran += 1
    return ran


def check_matmul():
    ran = refused = 0
    shapes = [((3, 4), (4, 5)), ((1, 1), (1, 1)), ((7,), (7, 3)), ((3, 7), (7,)), ((9,), (9,)),
              ((5, 3, 4), (4, 2)), ((2, 1, 3, 4), (1, 6, 4, 2)), ((4, 3, 0), (4, 0, 2)),
              ((0, 3), (3, 2)), ((2, 0, 3), (3, 4)), ((3, 2, 2, 5, 6), (2, 1, 6, 7))]
    for dtype in ["float32", "float64", "complex64", "complex128"]:
        for a_shape, b_shape in shapes:
            a0, b0 = cases.rand(RNG, a_shape, dtype), cases.rand(RNG, b_shape, dtype)
            for dot in (False, True):
                if dot and len(b_shape) > 2:
                    continue
                want = (np.dot if dot else np.matmul)(a0, b0)
                for la, lb in [("C", "C"), ("T", "C"), ("C", "F"), ("step", "rowstep"), ("F", "T")]:
                    a, b = layout(a0, la), layout(b0, lb)
                    out = np.empty(np.shape(want), dtype)
                    if _C._cuda_lib_matmul(dot, view(a), view(b), view(out), 0) == 1:
                        refused += 1
                        assert (la, lb) != ("C", "C")
                        continue
                    k = a_shape[-1]
                    tol = TOL[dtype] * max(1, k) * 4
                    err = float(np.abs(out - want).max(initial=0))
                    assert err <= tol * max(1.0, float(np.abs(want).max(initial=0))), \
                        (dtype, a_shape, la, b_shape, lb, dot, err)
                    ran += 1
    return ran, refused


_BY_NUM = {np.dtype(d).num: np.dtype(d)
           for d in ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
                     "float64", "complex64", "complex128"]}


def check_nodes():
    """Whole EXTERN nodes through nd_cuda_lib_run (the n-d / Hermitian step
    programs, dot/matmul of mixed dtypes), inputs cast here to the dtypes
    nd_cuda_lib_dtypes asks for, the result cast to the node's dtype."""
    import numdyn.cuda
    ran = 0
    calls = list(cases.FFT_CALLS) + [
        ("matmul", lambda x: x.real.astype(np.float32) @ x[0].T),
        ("dot", lambda x: np.dot(x, x[0].T.real)),
    ]
    for label, fn in calls:
        for dt in ["complex128", "complex64", "float16", "float64"]:
            x = cases.rand(RNG, (3, 5, 6), "complex128") * 2
            x = x.astype(dt) if dt.startswith("complex") else x.real.astype(dt)
            want = fn(x)
            g = numdyn.cuda._graphs_of(fn, (x,), {})[0]
            lines = str(g).splitlines()
            ids = [int(t.split()[0][1:]) for t in lines if " = extern " in t]
            nid = ids[-1]
            kind, ins, od = _C._cuda_lib_node(g, nid)
            assert kind != "none", label
            # the extern's operands: evaluate the graph's other outputs with NumPy
            if label in ("matmul", "dot") and dt == "float16":
                continue   # the fake gemm has no float16
            real_in = label.startswith(("ihfft", "rfft"))
            ops = [x.real if real_in else x] if len(ins) == 1 else \
                [x.real.astype(np.float32), x[0].T] if label == "matmul" else [x, x[0].T.real]
            args = [np.ascontiguousarray(np.asarray(a).astype(_BY_NUM[d]))
                    for a, d in zip(ops, ins)]
            out = np.empty(np.shape(want), _BY_NUM[od])
            _C._cuda_lib_run_node(g, nid, tuple(view(a) for a in args), view(out), 0)
            got = out.astype(want.dtype)
            eps = np.finfo(want.dtype).eps
            scale = max(1.0, float(np.abs(want).max()))
            err = float(np.abs(got - want).max())
            assert err <= 64 * eps * scale * (30 if label in ("matmul", "dot") else 1), \
                (label, dt, err)
            ran += 1
    return ran


def main(lib):
    for which in ("cuda", "cublas", "cufft"):
        _cuda_libs._load_from(which, [lib])
    nf = check_fft()
    nm, refused = check_matmul()
    nn = check_nodes()
    print(f"OK fft {nf} matmul {nm} refused {refused} nodes {nn}")


if __name__ == "__main__":
    main(sys.argv[1])
