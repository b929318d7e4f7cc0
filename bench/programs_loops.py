"""Element-loop programs for bench/bench_loops.py (issue 17: "loop capture:
Python loops over elements").

Plain Python loops over the elements of NumPy arrays, as people write them
before (or instead of) vectorizing: scalar reads ``a[i, j]``, scalar writes,
branches on element values, index arrays. The same function objects run as
they are (what a NumPy user runs), under numdyn.compile and under numba.njit.
Every program leaves its arguments untouched.
"""
import math

import numpy as np


# ============================================================ linear algebra
def cholesky_loops(A):
    """Cholesky-Banachiewicz with three scalar loops."""
    n = A.shape[0]
    L = np.zeros_like(A)
    for i in range(n):
        for j in range(i + 1):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            if i == j:
                L[i, j] = np.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    return L


def lu_loops(A):
    """Doolittle LU without pivoting, in place on a copy, scalar loops."""
    A = A.copy()
    n = A.shape[0]
    for k in range(n):
        for i in range(k + 1, n):
            A[i, k] = A[i, k] / A[k, k]
            for j in range(k + 1, n):
                A[i, j] -= A[i, k] * A[k, j]
    return A


def thomas(a, b, c, d):
    """Tridiagonal solve (Thomas algorithm): sub-, main and super-diagonal a, b, c."""
    n = d.shape[0]
    cp = np.zeros(n)
    dp = np.zeros(n)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.zeros(n)
    x[n - 1] = dp[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


def matmul_loops(A, B):
    """Matrix product by the textbook triple loop."""
    n, m = A.shape
    p = B.shape[1]
    C = np.zeros((n, p))
    for i in range(n):
        for j in range(p):
            s = 0.0
            for k in range(m):
                s += A[i, k] * B[k, j]
            C[i, j] = s
    return C


def csr_matvec(indptr, indices, data, x):
    """Sparse matrix (CSR) times vector over index arrays."""
    n = indptr.shape[0] - 1
    y = np.zeros(n)
    for i in range(n):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p] * x[indices[p]]
        y[i] = s
    return y


def csr_matvec_slices(indptr, indices, data, x):
    """CSR times vector as NumPy code writes it: a row's values (a slice)
    dotted with x gathered at the row's column indices (a slice of them)."""
    y = np.empty(indptr.shape[0] - 1)
    for i in range(indptr.shape[0] - 1):
        cols = indices[indptr[i]:indptr[i + 1]]
        y[i] = data[indptr[i]:indptr[i + 1]] @ x[cols]
    return y


def band_row_products(A, B, w):
    """Products of rows of two banded (diagonal-stored) matrices within a
    band of width w, each a dot of two row slices read as chained
    subscripts, stored through a chained subscript."""
    n, m = A.shape
    out = np.zeros((n, 2 * w + 1))
    for i in range(n):
        for j in range(max(0, i - w), min(n, i + w + 1)):
            k = m - abs(i - j)
            acc = A.dtype.type(0)
            if k > 0:
                acc = A[i][:k] @ B[j][m - k:]
            out[i][j - i + w] = acc
    return out


def gauss_seidel_points(u0, f, sweeps):
    """Point Gauss-Seidel for -Laplace(u) = f, element by element."""
    u = u0.copy()
    n = u.shape[0]
    h2 = 1.0 / (n - 1) ** 2
    for _ in range(sweeps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
                                  + h2 * f[i, j])
    return u


def heat_3d_points(u0, steps, r):
    """Explicit 3-D heat step, point by point, swapping two grids per step."""
    A = u0.copy()
    B = u0.copy()
    n0, n1, n2 = A.shape
    for _ in range(steps):
        for i in range(1, n0 - 1):
            for j in range(1, n1 - 1):
                for k in range(1, n2 - 1):
                    B[i, j, k] = A[i, j, k] + r * (A[i - 1, j, k] + A[i + 1, j, k] + A[i, j - 1, k]
                                                   + A[i, j + 1, k] + A[i, j, k - 1] + A[i, j, k + 1]
                                                   - 6.0 * A[i, j, k])
        A, B = B, A
    return A


def jacobi_until_converged_swap(u0, f, tol, max_iter):
    """Jacobi for Poisson on whole 2-D slices in a while loop, stopping on the
    max-norm change; two grids swapped by name."""
    u = u0.copy()
    new = u0.copy()
    h2 = 1.0 / (u.shape[0] - 1) ** 2
    it = 0
    diff = tol + 1.0
    while diff > tol and it < max_iter:
        new[1:-1, 1:-1] = 0.25 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2]
                                  + h2 * f[1:-1, 1:-1])
        diff = np.max(np.abs(new - u))
        u, new = new, u
        it += 1
    return u, it


def jacobi_until_converged_copy(u0, f, tol, max_iter):
    """The same Jacobi iteration making a new grid each step (new = u.copy();
    ...; u = new), as NumPy code usually reads."""
    u = u0.copy()
    h2 = 1.0 / (u.shape[0] - 1) ** 2
    it = 0
    diff = tol + 1.0
    while diff > tol and it < max_iter:
        new = u.copy()
        new[1:-1, 1:-1] = 0.25 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2]
                                  + h2 * f[1:-1, 1:-1])
        diff = np.max(np.abs(new - u))
        u = new
        it += 1
    return u, it


# ======================================================= dynamic programming
def nussinov(seq):
    """Nussinov RNA folding: most nested base pairs (A=0 C=1 G=2 U=3, pair if sum is 3)."""
    n = seq.shape[0]
    N = np.zeros((n, n), dtype=np.int64)
    for span in range(1, n):
        for i in range(n - span):
            j = i + span
            best = N[i + 1, j]
            if N[i, j - 1] > best:
                best = N[i, j - 1]
            if j - i > 3 and seq[i] + seq[j] == 3:
                pair = N[i + 1, j - 1] + 1
                if pair > best:
                    best = pair
            for k in range(i + 1, j):
                s = N[i, k] + N[k + 1, j]
                if s > best:
                    best = s
            N[i, j] = best
    return N


def edit_distance(a, b):
    """Levenshtein distance between two integer sequences, full table."""
    n, m = a.shape[0], b.shape[0]
    D = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(n + 1):
        D[i, 0] = i
    for j in range(m + 1):
        D[0, j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = D[i - 1, j] + 1
            if D[i, j - 1] + 1 < best:
                best = D[i, j - 1] + 1
            if D[i - 1, j - 1] + cost < best:
                best = D[i - 1, j - 1] + cost
            D[i, j] = best
    return D[n, m], D


def floyd_warshall_loops(D0):
    """All-pairs shortest paths with three scalar loops and a branch."""
    D = D0.copy()
    n = D.shape[0]
    for k in range(n):
        for i in range(n):
            dik = D[i, k]
            for j in range(n):
                if dik + D[k, j] < D[i, j]:
                    D[i, j] = dik + D[k, j]
    return D


# ==================================================== scans, bytes, counting
def crc32(data, table):
    """CRC-32 (the zlib polynomial) of a uint8 array with a 256-entry table."""
    crc = np.uint32(0xFFFFFFFF)
    for i in range(data.shape[0]):
        crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8)
    return crc ^ np.uint32(0xFFFFFFFF)


def crc32_table():
    table = np.zeros(256, dtype=np.uint32)
    for n in range(256):
        c = n
        for _ in range(8):
            c = (0xEDB88320 ^ (c >> 1)) if c & 1 else (c >> 1)
        table[n] = c
    return table


def cusum(x, target, slack, threshold):
    """One-sided CUSUM: a prefix scan clipped at zero, alarms where it passes threshold."""
    n = x.shape[0]
    s = np.zeros(n)
    alarms = np.zeros(n, dtype=np.bool_)
    acc = 0.0
    for i in range(n):
        acc = acc + x[i] - target - slack
        if acc < 0.0:
            acc = 0.0
        s[i] = acc
        if acc > threshold:
            alarms[i] = True
            acc = 0.0
    return s, alarms


def histogram_loop(x, lo, hi, bins):
    """Fixed-width histogram, one element at a time, out-of-range skipped."""
    counts = np.zeros(bins, dtype=np.int64)
    width = (hi - lo) / bins
    for i in range(x.shape[0]):
        v = x[i]
        if v >= lo and v < hi:
            counts[int((v - lo) / width)] += 1
    return counts


def sieve(n):
    """Sieve of Eratosthenes over a boolean array."""
    is_prime = np.ones(n + 1, dtype=np.bool_)
    is_prime[0] = False
    is_prime[1] = False
    i = 2
    while i * i <= n:
        if is_prime[i]:
            for j in range(i * i, n + 1, i):
                is_prime[j] = False
        i += 1
    return is_prime


# ================================================================== sorting
def insertion_sort(a):
    """Insertion sort of a copy."""
    a = a.copy()
    for i in range(1, a.shape[0]):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    return a


def bubble_sort(a):
    """Bubble sort of a copy, stopping early when a pass swaps nothing."""
    a = a.copy()
    n = a.shape[0]
    for i in range(n - 1):
        swapped = False
        for j in range(n - 1 - i):
            if a[j] > a[j + 1]:
                t = a[j]
                a[j] = a[j + 1]
                a[j + 1] = t
                swapped = True
        if not swapped:
            break
    return a


def bubble_sort_swap(a):
    """Bubble sort of a copy with the tuple swap most code writes."""
    a = a.copy()
    n = a.shape[0]
    for i in range(n - 1):
        for j in range(n - 1 - i):
            if a[j] > a[j + 1]:
                a[j], a[j + 1] = a[j + 1], a[j]
    return a


# ============================================================ signal, cells
def cellular_automaton(cells0, rule, steps):
    """Elementary 1-D cellular automaton (rule given as an 8-entry table), fixed 0 ends."""
    n = cells0.shape[0]
    hist = np.zeros((steps + 1, n), dtype=np.uint8)
    hist[0] = cells0
    for t in range(steps):
        for i in range(1, n - 1):
            idx = 4 * hist[t, i - 1] + 2 * hist[t, i] + hist[t, i + 1]
            hist[t + 1, i] = rule[idx]
    return hist


def horner(coefs, x):
    """Polynomial sum coefs[k] x^(m-1-k) at every x[i] by Horner's rule."""
    m = coefs.shape[0]
    y = np.zeros_like(x)
    for i in range(x.shape[0]):
        xi = x[i]
        acc = 0.0
        for k in range(m):
            acc = acc * xi + coefs[k]
        y[i] = acc
    return y


def running_minmax(x, w):
    """Running max and min over a trailing window of w samples."""
    n = x.shape[0]
    mx = np.zeros(n - w + 1)
    mn = np.zeros(n - w + 1)
    for i in range(n - w + 1):
        hi = x[i]
        lo = x[i]
        for k in range(1, w):
            v = x[i + k]
            if v > hi:
                hi = v
            if v < lo:
                lo = v
        mx[i] = hi
        mn[i] = lo
    return mx, mn


def biquad(x, b0, b1, b2, a1, a2):
    """IIR biquad filter (direct form I), sample by sample."""
    n = x.shape[0]
    y = np.zeros(n)
    x1 = x2 = y1 = y2 = 0.0
    for i in range(n):
        yi = b0 * x[i] + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
        y[i] = yi
        x2 = x1
        x1 = x[i]
        y2 = y1
        y1 = yi
    return y


def mandelbrot_points(cre, cim, maxit):
    """Escape-time Mandelbrot, pixel by pixel with an early break."""
    h, w = cim.shape[0], cre.shape[0]
    counts = np.zeros((h, w), dtype=np.int64)
    for i in range(h):
        for j in range(w):
            zr = 0.0
            zi = 0.0
            cr = cre[j]
            ci = cim[i]
            k = 0
            while k < maxit and zr * zr + zi * zi <= 4.0:
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                k += 1
            counts[i, j] = k
    return counts


# ---------------------------------------------- loops calling user helpers
# (numdyn inlines the helpers into the loop's C; numba.njit of the loop
# needs the helpers njit-ed too, so its column fails on these rows)
def logistic(x, k, x0):
    """The logistic curve at x (steepness k, midpoint x0)."""
    z = k * (x - x0)
    return 1.0 / (1.0 + math.exp(-z))


def logistic_map(x, k, x0):
    """A per-element transfer function written as a helper called in the loop."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = logistic(x[i], k, x0)
    return out


def decay_rate(t, y, k):
    """dy/dt of a forced, damped scalar ODE."""
    return -k * y + math.sin(t)


def rk4_scalar(y0, t0, h, steps, k):
    """Classic RK4 on a scalar ODE whose derivative is a helper function."""
    out = np.empty(steps + 1)
    y, t = y0, t0
    out[0] = y
    for i in range(steps):
        k1 = decay_rate(t, y, k)
        k2 = decay_rate(t + h / 2, y + h / 2 * k1, k)
        k3 = decay_rate(t + h / 2, y + h / 2 * k2, k)
        k4 = decay_rate(t + h, y + h * k3, k)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + h
        out[i + 1] = y
    return out


# -------------------------------------- small state vectors updated whole
def rk4_linear_system(y0, A, h, steps):
    """RK4 on y' = A y with a small state vector (4 unknowns)."""
    y = y0.copy()
    for i in range(steps):
        k1 = A @ y
        k2 = A @ (y + h / 2 * k1)
        k3 = A @ (y + h / 2 * k2)
        k4 = A @ (y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def lorenz_euler(y0, h, steps):
    """Explicit Euler on the Lorenz system, the state a 3-vector built per step."""
    y = y0.copy()
    out = np.empty((steps, 3))
    for i in range(steps):
        d = np.array([10.0 * (y[1] - y[0]), y[0] * (28.0 - y[2]) - y[1], y[0] * y[1] - 8.0 / 3.0 * y[2]])
        y = y + h * d
        out[i] = y
    return out


def lorenz_rk4_vector(y0, h, steps):
    """RK4 on the Lorenz system, the state a 3-vector rebound each step."""
    y = y0.copy()
    for i in range(steps):
        k1 = np.array([10.0 * (y[1] - y[0]), y[0] * (28.0 - y[2]) - y[1], y[0] * y[1] - 8.0 / 3.0 * y[2]])
        t = y + h / 2 * k1
        k2 = np.array([10.0 * (t[1] - t[0]), t[0] * (28.0 - t[2]) - t[1], t[0] * t[1] - 8.0 / 3.0 * t[2]])
        t = y + h / 2 * k2
        k3 = np.array([10.0 * (t[1] - t[0]), t[0] * (28.0 - t[2]) - t[1], t[0] * t[1] - 8.0 / 3.0 * t[2]])
        t = y + h * k3
        k4 = np.array([10.0 * (t[1] - t[0]), t[0] * (28.0 - t[2]) - t[1], t[0] * t[1] - 8.0 / 3.0 * t[2]])
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def nbody_small(x, y, z, vx, vy, vz, m, dt, steps):
    """n-body steps on a few bodies, the state six 1-D arrays rebound whole."""
    n = x.shape[0]
    for s in range(steps):
        ax = np.zeros_like(m)
        ay = np.zeros_like(m)
        az = np.zeros_like(m)
        for i in range(n):
            for j in range(n):
                if i != j:
                    dx = x[j] - x[i]
                    dy = y[j] - y[i]
                    dz = z[j] - z[i]
                    r2 = dx * dx + dy * dy + dz * dz + 0.01
                    inv = m[j] / (r2 * np.sqrt(r2))
                    ax[i] += dx * inv
                    ay[i] += dy * inv
                    az[i] += dz * inv
        vx = vx + dt * ax
        vy = vy + dt * ay
        vz = vz + dt * az
        x = x + dt * vx
        y = y + dt * vy
        z = z + dt * vz
    return x, y, z, vx, vy, vz


def affine_steps(x, n):
    """x = x * 1.5 + 0.25 n times: the tracer fuses every pass into one
    kernel (the loop is left to it: a C loop would make a pass a step)."""
    for _ in range(n):
        x = x * 1.5 + 0.25
    return x


# ------------------------------------ small 2-D state updated whole
def kalman_filter(zs, F, H, Q, R, x0, P0):
    """Linear Kalman filter over a measurement sequence: the state vector
    and its covariance (a small matrix) recomputed whole every step by
    matrix products, a transpose and a small inverse."""
    x = x0.copy()
    P = P0.copy()
    I = np.eye(x.shape[0])
    out = np.empty((zs.shape[0], x.shape[0]))
    for k in range(zs.shape[0]):
        x = F @ x
        P = F @ P @ F.T + Q
        y = zs[k] - H @ x
        S = H @ P @ H.T + R
        K = P @ H.T @ np.linalg.inv(S)
        x = x + K @ y
        P = (I - K @ H) @ P
        out[k] = x
    return out


# ------------------------------------ constructs captured since session 28
def levinson_durbin(r):
    """Levinson-Durbin recursion for a Toeplitz system: np.flip of slices."""
    n = r.shape[0]
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, n):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y


def covariance_fill(data):
    """Covariance by columns, each row and column of the symmetric result
    stored by one chained assignment."""
    n, m = data.shape
    d = data - data.mean(axis=0)
    cov = np.zeros((m, m))
    for i in range(m):
        cov[i:m, i] = cov[i, i:m] = d[:, i] @ d[:, i:m] / (n - 1.0)
    return cov


def gram_schmidt_norms(A):
    """Modified Gram-Schmidt with np.linalg.norm and reversed() back
    substitution of R x = Q^T b."""
    m, n = A.shape
    Q = A.copy()
    R = np.zeros((n, n))
    for j in range(n):
        for i in range(j):
            R[i, j] = np.dot(Q[:, i], Q[:, j])
            Q[:, j] -= R[i, j] * Q[:, i]
        R[j, j] = np.linalg.norm(Q[:, j])
        Q[:, j] /= R[j, j]
    b = Q.T @ np.ones(m)
    x = np.zeros(n)
    for i in reversed(range(n)):
        x[i] = (b[i] - R[i, i + 1:] @ x[i + 1:]) / R[i, i]
    return x


def row_stats(A):
    """Per-row mean, norm and sign balance."""
    out = np.empty((A.shape[0], 3))
    for i in range(A.shape[0]):
        out[i, 0] = np.mean(A[i])
        out[i, 1] = np.linalg.norm(A[i])
        out[i, 2] = np.sum(np.sign(A[i] - out[i, 0]))
    return out


def rolling_zscore(x, w):
    """Trailing-window z-scores and compounded growth (np.std, np.mean,
    np.prod of slices) with a running minimum from float("inf")."""
    n = x.shape[0]
    z = np.zeros(n)
    g = np.zeros(n)
    lo = float("inf")
    for i in range(w, n):
        win = x[i - w:i]
        s = np.std(win)
        if s > 0:
            z[i] = (x[i] - np.mean(win)) / s
        g[i] = np.prod(1.0 + win * 0.01)
        if z[i] < lo:
            lo = z[i]
    return z, g, lo


def column_stats_steps(X, k):
    """Column and row means of a matrix rescaled step by step (sums and
    means along an axis of a 2-D local)."""
    col = np.zeros((k, X.shape[1]))
    row = np.zeros((k, X.shape[0]))
    for s in range(k):
        M = X * (1.0 + 0.1 * s)
        col[s] = np.mean(M, axis=0)
        row[s] = M.sum(axis=1)
    return col, row



def sensor_envelope(x, w):
    """Trailing max/min envelope and clamped spread of a sensor trace with
    NaN dropouts (np.max/np.min/np.maximum of slices of NaN data: NumPy
    gives NaN windows and no warning)."""
    n = x.shape[0]
    hi = np.zeros(n)
    lo = np.zeros(n)
    for i in range(w, n):
        win = x[i - w:i]
        hi[i] = np.max(win)
        lo[i] = np.min(win)
        hi[i - w:i] = np.maximum(hi[i - w:i], win * 0.5)
    return hi, lo


def trailing_projections(A, v):
    """Projections of v on the trailing columns, A[:, k:].T @ v, and the
    transposed diagonal blocks A[k:k+2, k:k+2].T (`.T` of subscripts)."""
    m = A.shape[1]
    out = np.zeros(m)
    for k in range(m - 1):
        w = A[:, k:].T @ v
        B = A[k:k + 2, k:k + 2].T
        out[k] = w[0] + B[0, 1] - B[1, 0]
    return out
