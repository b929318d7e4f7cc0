"""Real NumPy programs for bench/bench_programs.py (issue 13: "real programs
run faster than NumPy, never slower: the cost of capture").

Textbook algorithms written the way ordinary NumPy users write them: loops
over rows and time steps with slices, in-place updates of local copies,
np.dot / @ / np.outer, boolean masks, argmin/argmax, np.random with a fixed
seed. No numdyn in them, and no numba-specific style either: the very same
function objects are given to NumPy (called as they are), numdyn
(numdyn.compile) and numba (numba.njit).

Every program leaves its arguments untouched (it copies what it updates), so
one set of inputs can be reused for every timed call.
"""
import numpy as np


# ============================================================ factorizations
def cholesky_rows(A):
    """Cholesky by rows (Cholesky-Banachiewicz), in place on a copy."""
    A = A.copy()
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])
    return np.tril(A)


def cholesky_cols(A):
    """Cholesky by columns (Cholesky-Crout): one mat-vec per column."""
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        L[j, j] = np.sqrt(A[j, j] - np.dot(L[j, :j], L[j, :j]))
        L[j + 1:, j] = (A[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return L


def lu_outer(A):
    """LU without pivoting (Doolittle), right-looking rank-1 updates."""
    A = A.copy()
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
    L = np.tril(A, -1) + np.eye(n)
    U = np.triu(A)
    return L, U


def lu_partial_pivot(A):
    """LU with partial pivoting: argmax of a column, row swap by fancy index."""
    A = A.copy()
    n = A.shape[0]
    perm = np.arange(n)
    for k in range(n - 1):
        p = k + np.argmax(np.abs(A[k:, k]))
        if p != k:
            A[[k, p], :] = A[[p, k], :]
            perm[[k, p]] = perm[[p, k]]
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= np.outer(A[k + 1:, k], A[k, k + 1:])
    return perm, A


def lu_partial_pivot_rows(A):
    """LU with partial pivoting as often written for numba: rows swapped by
    copies (a row with itself when it is the pivot), the multipliers in a
    vector of their own, then the rank-1 update."""
    U = A.astype(np.float64)
    piv = np.arange(len(U))
    for j in range(len(U) - 1):
        r = np.argmax(np.abs(U[j:, j])) + j
        U[j], U[r] = U[r].copy(), U[j].copy()
        piv[j], piv[r] = piv[r], piv[j]
        mult = U[j + 1:, j] / U[j, j]
        U[j + 1:, j] = mult
        U[j + 1:, j + 1:] -= np.outer(mult, U[j, j + 1:])
    return piv, U


def qr_gram_schmidt(A):
    """QR by modified Gram-Schmidt, column by column."""
    m, n = A.shape
    Q = A.copy()
    R = np.zeros((n, n))
    for j in range(n):
        for i in range(j):
            R[i, j] = np.dot(Q[:, i], Q[:, j])
            Q[:, j] = Q[:, j] - R[i, j] * Q[:, i]
        R[j, j] = np.linalg.norm(Q[:, j])
        Q[:, j] = Q[:, j] / R[j, j]
    return Q, R


def qr_householder(A):
    """QR by Householder reflections applied with np.outer."""
    m, n = A.shape
    R = A.copy()
    Q = np.eye(m)
    for k in range(n):
        x = R[k:, k]
        v = x.copy()
        v[0] += np.copysign(np.linalg.norm(x), x[0])
        v = v / np.linalg.norm(v)
        R[k:, k:] -= 2.0 * np.outer(v, v @ R[k:, k:])
        Q[:, k:] -= 2.0 * np.outer(Q[:, k:] @ v, v)
    return Q, np.triu(R)


# ================================================ triangular updates, solves
def forward_subst(L, b):
    """Solve L x = b for lower-triangular L, row by row."""
    n = L.shape[0]
    x = np.zeros_like(b)
    for i in range(n):
        x[i] = (b[i] - np.dot(L[i, :i], x[:i])) / L[i, i]
    return x


def back_subst_multi(U, B):
    """Solve U X = B (U upper-triangular, several right-hand sides)."""
    n = U.shape[0]
    X = np.zeros_like(B)
    for i in range(n - 1, -1, -1):
        X[i, :] = (B[i, :] - U[i, i + 1:] @ X[i + 1:, :]) / U[i, i]
    return X


def syrk_lower(C, A, alpha, beta):
    """Lower triangle of beta*C + alpha*A A^T, row by row."""
    C = C.copy()
    n = C.shape[0]
    for i in range(n):
        C[i, :i + 1] = beta * C[i, :i + 1] + alpha * (A[:i + 1, :] @ A[i, :])
    return C


# ===================================================== stencils, time steps
def heat_1d(u0, r, steps):
    """Explicit heat equation in 1-D, fixed ends."""
    u = u0.copy()
    for _ in range(steps):
        u[1:-1] = u[1:-1] + r * (u[2:] - 2.0 * u[1:-1] + u[:-2])
    return u


def heat_2d(u0, r, steps):
    """Explicit 2-D heat equation (5-point Laplacian), two buffers swapped."""
    u = u0.copy()
    v = u0.copy()
    for _ in range(steps):
        v[1:-1, 1:-1] = u[1:-1, 1:-1] + r * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                             + u[1:-1, :-2] - 4.0 * u[1:-1, 1:-1])
        u, v = v, u
    return u


def wave_1d(u0, c2, steps):
    """Leapfrog for the 1-D wave equation, u_tt = c^2 u_xx."""
    u_prev = u0.copy()
    u = u0.copy()
    u_next = np.zeros_like(u0)
    for _ in range(steps):
        u_next[1:-1] = 2.0 * u[1:-1] - u_prev[1:-1] + c2 * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        u_prev, u, u_next = u, u_next, u_prev
    return u


def gauss_seidel_rows(u0, f, sweeps):
    """Gauss-Seidel by rows for -Laplace(u) = f: row i reads the updated row i-1."""
    u = u0.copy()
    n = u.shape[0]
    h2 = 1.0 / (n - 1) ** 2
    for _ in range(sweeps):
        for i in range(1, n - 1):
            u[i, 1:-1] = 0.25 * (u[i - 1, 1:-1] + u[i + 1, 1:-1] + u[i, :-2] + u[i, 2:]
                                 + h2 * f[i, 1:-1])
    return u


def march_columns(p0, nu):
    """Parabolic marching: column j is the time level after column j-1."""
    p = p0.copy()
    n, m = p.shape
    for j in range(1, m):
        p[1:n - 1, j] = p[1:n - 1, j - 1] + nu * (p[2:n, j - 1] - 2.0 * p[1:n - 1, j - 1]
                                                  + p[0:n - 2, j - 1])
    return p


def jacobi_until_converged(u0, f, tol, max_iter):
    """Jacobi for Poisson, stopping on the max-norm change (a branch on data)."""
    u = u0.copy()
    n = u.shape[0]
    h2 = 1.0 / (n - 1) ** 2
    it = 0
    for it in range(max_iter):
        new = u.copy()
        new[1:-1, 1:-1] = 0.25 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2]
                                  + h2 * f[1:-1, 1:-1])
        diff = np.max(np.abs(new - u))
        u = new
        if diff < tol:
            break
    return u, it


def advect_upwind_2d(c0, vx, vy, dt, steps):
    """First-order upwind advection on a periodic grid with np.roll."""
    c = c0.copy()
    for _ in range(steps):
        dcx = np.where(vx > 0, c - np.roll(c, 1, axis=1), np.roll(c, -1, axis=1) - c)
        dcy = np.where(vy > 0, c - np.roll(c, 1, axis=0), np.roll(c, -1, axis=0) - c)
        c = c - dt * (vx * dcx + vy * dcy)
    return c


# ========================================================= dynamic programming
def knapsack_01(weights, values, capacity):
    """0/1 knapsack, one array row per item."""
    best = np.zeros(capacity + 1)
    for i in range(weights.shape[0]):
        w = weights[i]
        cand = best[:capacity + 1 - w] + values[i]
        best[w:] = np.maximum(best[w:], cand)
    return best


def seam_energy(E):
    """Seam carving: cumulative minimum energy by rows, then the backtracked seam."""
    h, w = E.shape
    M = E.copy()
    for i in range(1, h):
        left = np.concatenate((np.array([np.inf]), M[i - 1, :-1]))
        right = np.concatenate((M[i - 1, 1:], np.array([np.inf])))
        M[i] += np.minimum(np.minimum(left, M[i - 1]), right)
    seam = np.zeros(h, dtype=np.int64)
    seam[h - 1] = np.argmin(M[h - 1])
    for i in range(h - 2, -1, -1):
        j = seam[i + 1]
        lo = max(j - 1, 0)
        seam[i] = lo + np.argmin(M[i, lo:j + 2])
    return M, seam


def viterbi(log_A, log_B, log_pi, obs):
    """Most likely hidden-state path of an HMM, in log space."""
    T = obs.shape[0]
    S = log_A.shape[0]
    delta = log_pi + log_B[:, obs[0]]
    psi = np.zeros((T, S), dtype=np.int64)
    for t in range(1, T):
        scores = delta[:, None] + log_A
        psi[t] = np.argmax(scores, axis=0)
        delta = np.max(scores, axis=0) + log_B[:, obs[t]]
    path = np.zeros(T, dtype=np.int64)
    path[T - 1] = np.argmax(delta)
    for t in range(T - 2, -1, -1):
        path[t] = psi[t + 1, path[t + 1]]
    return path, np.max(delta)


def floyd_warshall_vec(D0):
    """All-pairs shortest paths, one broadcast minimum per pivot."""
    D = D0.copy()
    n = D.shape[0]
    for k in range(n):
        D = np.minimum(D, D[:, k:k + 1] + D[k:k + 1, :])
    return D


# ============================================================ neural networks
def mlp_train_step(X, Y, W1, b1, W2, b2, lr):
    """One SGD step of a 2-layer ReLU MLP with softmax cross-entropy, by hand."""
    n = X.shape[0]
    h_pre = X @ W1 + b1
    h = np.maximum(h_pre, 0.0)
    logits = h @ W2 + b2
    logits = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    loss = -np.mean(np.log(p[np.arange(n), Y] + 1e-12))
    g = p.copy()
    g[np.arange(n), Y] -= 1.0
    g /= n
    dW2 = h.T @ g
    db2 = g.sum(axis=0)
    dh = g @ W2.T
    dh[h_pre <= 0] = 0.0
    dW1 = X.T @ dh
    db1 = dh.sum(axis=0)
    return loss, W1 - lr * dW1, b1 - lr * db1, W2 - lr * dW2, b2 - lr * db2


def softmax_xent_grad(logits, labels):
    """Softmax cross-entropy loss and its gradient, one-hot by np.eye."""
    n, k = logits.shape
    z = logits - np.max(logits, axis=1, keepdims=True)
    logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    onehot = np.eye(k)[labels]
    loss = -np.sum(onehot * logp) / n
    grad = (np.exp(logp) - onehot) / n
    return loss, grad


def logistic_gd(X, y, lr, iters):
    """Logistic regression by full-batch gradient descent."""
    n, d = X.shape
    w = np.zeros(d)
    b = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(X @ w + b)))
        err = p - y
        w = w - lr * (X.T @ err) / n
        b = b - lr * np.mean(err)
    return w, b


def logistic_gd_scaled(X, y, lr, iters):
    """Logistic regression as often written: `lr * X.T @ r` is (lr * X.T) @ r,
    a scaled copy of X.T each step, and -X @ w a negated copy of X."""
    w = np.zeros(X.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-X @ w))
        w -= lr * X.T @ (p - y) / len(y)
    return w


def pagerank(M, iters):
    """PageRank by power iteration as often written: `0.85 * M @ r` is
    (0.85 * M) @ r, the whole link matrix scaled again each iteration."""
    n = M.shape[0]
    r = np.full(n, 1.0 / n)
    for _ in range(iters):
        r = 0.15 / n + 0.85 * M @ r
    return r


def rnn_forward(xs, Wx, Wh, b):
    """Elman RNN forward pass over T time steps."""
    T, batch, _ = xs.shape
    h = np.zeros((batch, Wh.shape[0]))
    hs = np.zeros((T, batch, Wh.shape[0]))
    for t in range(T):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
        hs[t] = h
    return hs


# ========================================================== signal processing
def fir_filter(x, h):
    """FIR filter ('valid' part), one shifted multiply-add per tap."""
    K = h.shape[0]
    n = x.shape[0]
    y = np.zeros(n - K + 1)
    for k in range(K):
        y += h[k] * x[K - 1 - k:n - k]
    return y


def autocorr(x, maxlag):
    """Normalized autocorrelation for lags 0..maxlag-1."""
    x = x - x.mean()
    n = x.shape[0]
    r = np.zeros(maxlag)
    for k in range(maxlag):
        r[k] = np.dot(x[:n - k], x[k:])
    return r / r[0]


def bollinger(x, w):
    """Moving average and moving standard deviation via cumulative sums."""
    c1 = np.cumsum(np.concatenate((np.zeros(1), x)))
    c2 = np.cumsum(np.concatenate((np.zeros(1), x * x)))
    mean = (c1[w:] - c1[:-w]) / w
    var = (c2[w:] - c2[:-w]) / w - mean * mean
    sd = np.sqrt(np.maximum(var, 0.0))
    return mean, mean + 2.0 * sd, mean - 2.0 * sd


def dft_matrix(x):
    """Discrete Fourier transform as a matrix-vector product (complex128)."""
    n = x.shape[0]
    k = np.arange(n)
    W = np.exp(-2j * np.pi * np.outer(k, k) / n)
    X = W @ x
    power = np.abs(X) ** 2
    return X, power


# ================================================================= statistics
def standardize_cov(X):
    """Column z-scores and the sample covariance (= correlation) matrix."""
    mu = X.mean(axis=0)
    sd = X.std(axis=0, ddof=1)
    Z = (X - mu) / sd
    C = Z.T @ Z / (X.shape[0] - 1)
    return Z, C


def kmeans(X, C0, iters):
    """Lloyd's k-means: distances by broadcasting, centroids by boolean masks."""
    C = C0.copy()
    k = C.shape[0]
    labels = np.zeros(X.shape[0], dtype=np.int64)
    for _ in range(iters):
        d2 = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
        labels = np.argmin(d2, axis=1)
        for j in range(k):
            members = X[labels == j]
            if members.shape[0] > 0:
                C[j] = members.mean(axis=0)
    return C, labels


def histogram_bincount(x, lo, hi, bins):
    """Fixed-width histogram by index arithmetic and np.bincount."""
    idx = ((x - lo) * (bins / (hi - lo))).astype(np.int64)
    idx = np.clip(idx, 0, bins - 1)
    counts = np.bincount(idx, minlength=bins)
    return counts, counts / x.shape[0]


def ols_normal_eq(X, y):
    """Least squares via the normal equations, with R^2 and residual std."""
    n, p = X.shape
    Xb = np.hstack((np.ones((n, 1)), X))
    beta = np.linalg.solve(Xb.T @ Xb, Xb.T @ y)
    resid = y - Xb @ beta
    ss_res = resid @ resid
    ss_tot = np.sum((y - y.mean()) ** 2)
    return beta, 1.0 - ss_res / ss_tot, np.sqrt(ss_res / (n - p - 1))


# ================================================================ simulations
def nbody_leapfrog(pos0, vel0, mass, dt, steps):
    """Gravitational n-body, kick-drift-kick, softened."""
    pos = pos0.copy()
    vel = vel0.copy()
    for _ in range(steps):
        d = pos[None, :, :] - pos[:, None, :]
        r2 = (d ** 2).sum(axis=2) + 0.01
        acc = (d * (mass[None, :] / r2 ** 1.5)[:, :, None]).sum(axis=1)
        vel += 0.5 * dt * acc
        pos += dt * vel
        d = pos[None, :, :] - pos[:, None, :]
        r2 = (d ** 2).sum(axis=2) + 0.01
        acc = (d * (mass[None, :] / r2 ** 1.5)[:, :, None]).sum(axis=1)
        vel += 0.5 * dt * acc
    return pos, vel


def game_of_life(board, steps):
    """Conway's Game of Life on a dead-bordered board, neighbours by slices."""
    g = board.copy()
    for _ in range(steps):
        nb = (g[:-2, :-2] + g[:-2, 1:-1] + g[:-2, 2:] + g[1:-1, :-2] + g[1:-1, 2:]
              + g[2:, :-2] + g[2:, 1:-1] + g[2:, 2:])
        inner = g[1:-1, 1:-1]
        alive = (nb == 3) | ((inner == 1) & (nb == 2))
        g[1:-1, 1:-1] = alive.astype(g.dtype)
    return g


def random_walk(seed, walkers, steps):
    """Symmetric random walks with a fixed seed: final spread and excursions."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, size=(walkers, steps)) * 2 - 1
    pos = np.cumsum(s, axis=1)
    final = pos[:, -1]
    max_exc = np.abs(pos).max(axis=1)
    crossed = (np.abs(pos) >= 30).any(axis=1)
    return final.mean(), np.sqrt((final.astype(np.float64) ** 2).mean()), max_exc, crossed.mean()


def lorenz_rk4(state0, sigma, rho, beta, dt, steps):
    """RK4 integration of the Lorenz system: tiny arrays, many small steps."""
    s = state0.copy()
    out = np.zeros((steps, 3))
    for i in range(steps):
        x, y, z = s[0], s[1], s[2]
        k1 = np.array([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])
        t = s + 0.5 * dt * k1
        k2 = np.array([sigma * (t[1] - t[0]), t[0] * (rho - t[2]) - t[1], t[0] * t[1] - beta * t[2]])
        t = s + 0.5 * dt * k2
        k3 = np.array([sigma * (t[1] - t[0]), t[0] * (rho - t[2]) - t[1], t[0] * t[1] - beta * t[2]])
        t = s + dt * k3
        k4 = np.array([sigma * (t[1] - t[0]), t[0] * (rho - t[2]) - t[1], t[0] * t[1] - beta * t[2]])
        s = s + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        out[i] = s
    return out


def gaussian_window(n, sigma2):
    """A normalized 2-D Gaussian window on an np.mgrid index grid."""
    X, Y = np.mgrid[0:n, 0:n]
    r2 = (X - n / 2) ** 2 + (Y - n / 2) ** 2
    k = np.exp(-r2 / sigma2)
    return k / k.sum()


def mandelbrot_compact(x0, x1, y0, y1, nx, ny, maxit):
    """Escape-time Mandelbrot that keeps only the live points: index grids
    from np.mgrid, a compaction of every array by the live mask each step,
    escaped points scattered into the outputs by their grid indices."""
    gi, gj = np.mgrid[0:nx, 0:ny]
    gi, gj = gi.astype(np.uint32), gj.astype(np.uint32)
    c = np.linspace(x0, x1, nx)[gi] + 1j * np.linspace(y0, y1, ny)[gj]
    iters = np.zeros(c.shape, dtype=np.int64)
    zend = np.zeros(c.shape, dtype=np.complex128)
    gi, gj, c = gi.ravel(), gj.ravel(), c.ravel()
    z = np.zeros(c.shape, np.complex128)
    for it in range(maxit):
        if not len(z):
            break
        z = z * z + c
        out = np.abs(z) > 2.0
        iters[gi[out], gj[out]] = it + 1
        zend[gi[out], gj[out]] = z[out]
        live = ~out
        z, c, gi, gj = z[live], c[live], gi[live], gj[live]
    return zend.T, iters.T


def mandelbrot_mask(cre, cim, maxit):
    """Escape-time Mandelbrot with a boolean mask of points still iterating."""
    c = cre[None, :] + 1j * cim[:, None]
    z = np.zeros_like(c)
    counts = np.zeros(c.shape, dtype=np.int64)
    for it in range(maxit):
        mask = np.abs(z) <= 2.0
        z[mask] = z[mask] * z[mask] + c[mask]
        counts[mask] += 1
    return counts
