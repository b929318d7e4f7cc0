"""NumPy functions that are compositions of traced ops (issue 14): np.trace
(diagonal + sum), np.polyval (NumPy's own Python code, which names its
module `NX`), np.mean(where=) (a masked sum over the mask's count), np.kron
(broadcast views multiplied), np.cross (NumPy's code, np.broadcast's shape
answered lazily) stay in the graph, so their gradients flow;
values, dtypes, types and layouts as NumPy's."""
import numpy as np
from grad_check import check_terms
from oracle import check

RNG = np.random.default_rng(77)


def test_gradients():
    terms = [
        ("trace", lambda a: np.trace(a * a) + np.sum(a.trace(offset=1) * a[0, 0]), slice(0, 1)),
        ("polyval", lambda p, x: np.sum(np.polyval(p, x) ** 2), slice(1, 3)),
        ("mean where", lambda d: np.mean(d ** 2, where=d > 0), slice(3, 4)),
        ("kron", lambda u, v: np.sum(np.kron(u, v) ** 2), slice(4, 6)),
        ("cross", lambda p, q: np.sum(np.cross(p, q) ** 2), slice(6, 8)),
    ]
    args = [RNG.uniform(-1, 1, (3, 3)), RNG.uniform(-1, 1, 4), RNG.uniform(-1, 1, 3),
            np.array([0.5, -0.7, 0.9, -0.2, 0.3]), RNG.uniform(-1, 1, (2, 3)),
            RNG.uniform(-1, 1, (2, 1)), RNG.uniform(-1, 1, (2, 3)), RNG.uniform(-1, 1, 3)]
    # the eager backend: the rules are the point (CI time: no kernels to compile)
    check_terms(terms, args, backend="eager")


def test_trace_values():
    check(lambda a: np.trace(a), np.arange(12.0).reshape(3, 4))
    check(lambda a: (a * 1).trace(offset=-1, axis1=2, axis2=1), np.arange(24).reshape(2, 3, 4))
    check(lambda a: np.trace(a, dtype=np.float32), np.eye(3, dtype=bool))


def test_trace_errors_and_out():
    check(lambda a: np.trace(a), np.ones(3))  # ValueError, NumPy's message
    check(lambda a, o: np.trace(a, 0, 0, 1, None, o), np.ones((2, 2, 3)), np.zeros(3))


def test_mean_where_values():
    x = RNG.standard_normal((3, 4))
    check(lambda x: np.mean(x, where=x > 0.3), x)
    check(lambda x: np.mean(x.astype(np.float32), axis=0, keepdims=True,
                            where=np.array([[True], [False], [True]])), x)
    check(lambda x: (x * 5).astype(np.int32).mean(where=x < 1, dtype=np.float32), x)
    check(lambda x: np.mean(x.astype(np.float16), axis=1, where=x > -2), x)
    # an empty slice: NumPy's warnings
    check(lambda x: np.mean(x, axis=0, where=x > 5), x, warnings=True)


def test_kron_values():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(1, 5).reshape(2, 2)
    check(lambda a, b: np.kron(a * 2, b), a, b, check_layout=True)
    check(lambda a, b: np.kron(a[0], b.astype(np.int8)), a, b, check_layout=True)
    check(lambda a, b: np.kron(a.T, 3.0), a, b, check_layout=True)  # F order: NumPy's


def test_lazy_broadcast_object():
    a = RNG.random((2, 3))

    def f(a, b):
        bb = np.broadcast(a * 1, b)
        return bb.shape, bb.ndim, bb.size, bb.numiter, [x for x in bb][:3], bb.index

    check(f, a, a[0])
    check(lambda a, b: np.broadcast(a * 1, b).shape, a, a[0, :2])  # NumPy's ValueError
