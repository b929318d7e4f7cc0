"""Plain NumPy programs shared by the benchmarks and the tests.

One copy of each program: bench/bench_views.py times them against NumPy at
benchmark sizes, tests/ (which put bench/ on sys.path in conftest.py) check
them against NumPy at small sizes. They are ordinary NumPy code with no
numdyn in them, as a user would write them.
"""
import numpy as np


# ----------------------------------------------------------------- stencils
def jacobi_2d(A, B, steps):
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
    return A, B


def heat_3d(A, B, steps):
    for _ in range(steps):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1])
            + 0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1])
            + 0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, :-2])
            + A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1])
            + 0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1])
            + 0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, :-2])
            + B[1:-1, 1:-1, 1:-1])
    return A, B


# --------------------------------------------------------- linear algebra mix
def gemver(A, u1, v1, u2, v2, w, x, y, z, alpha, beta):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * (y @ A) + z
    w += alpha * (A @ x)
    return A, x, w


def mlp(x, w1, b1, w2, b2, w3, b3):
    h = np.maximum(x @ w1 + b1, 0.0)
    h = np.maximum(h @ w2 + b2, 0.0)
    z = h @ w3 + b3
    z = z - z.max(axis=1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)


def attention(q, k, v):
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * (1.0 / np.sqrt(q.shape[-1]))
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    p = s / s.sum(axis=-1, keepdims=True)
    return np.einsum("bhqk,bhkd->bhqd", p, v)


def nbody_step(pos, vel, mass, dt):
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d * d).sum(axis=-1) + 1e-3
    inv = mass[None, :] / (r2 * np.sqrt(r2))
    acc = (d * inv[:, :, None]).sum(axis=1)
    vel = vel + dt * acc
    pos = pos + dt * vel
    return pos, vel


# ------------------------------------------------------- scalar-heavy loops
def levinson_durbin(r, order):
    """Levinson-Durbin recursion: scalar reads and small vector updates."""
    a = np.zeros(order + 1)
    a[0] = 1.0
    e = r[0]
    for k in range(1, order + 1):
        lam = -(r[k] + np.dot(a[1:k], r[k - 1:0:-1])) / e
        a[1:k] = a[1:k] + lam * a[k - 1:0:-1]
        a[k] = lam
        e = e * (1.0 - lam * lam)
    return a, e


# ------------------------------------------------------------ graph breaks
def toy_example(a, b):
    # TorchDynamo's toy example: one data-dependent branch -> 2 graphs, 1 break
    x = a / (np.abs(a) + 1)
    print("woo")
    if b.sum() < 0:
        b = b * -1
    return x * b
