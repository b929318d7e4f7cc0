"""NumPy programs in styles bench/programs_real.py and bench/programs_loops.py
do not use (session 25's speed-floor hunt, bench/bench_styles.py): image
filters with np.pad and shifted slices, pairwise distances by broadcasting,
softmax / log-sum-exp over an axis, cumulative statistics, group-by with
np.bincount / np.add.at, sorting (argsort, unique, searchsorted), sparse
gather / scatter, finite differences (np.diff, np.gradient), polynomial fits,
Monte Carlo with default_rng, NaN cleaning, 3x3 solves in a loop, loops over
columns, and small functions whose cost is the call.

Ordinary NumPy, written as users write it; every program leaves its
arguments as they were.
"""
import numpy as np


# ------------------------------------------------------------ image filters
def box_blur_pad(img, r):
    """Box blur of radius r: np.pad by edge values, then the sum of the
    (2r+1)^2 shifted windows."""
    h, w = img.shape
    p = np.pad(img, r, mode="edge")
    out = np.zeros_like(img)
    for di in range(2 * r + 1):
        for dj in range(2 * r + 1):
            out += p[di:di + h, dj:dj + w]
    return out / (2 * r + 1) ** 2


def sobel_magnitude(img):
    """Sobel gradient magnitude and direction, slices of a zero-padded image."""
    p = np.pad(img, 1)
    gx = (p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[1:-1, :-2] + p[2:, :-2])
    gy = (p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[:-2, 1:-1] + p[:-2, 2:])
    mag = np.hypot(gx, gy)
    return mag, np.arctan2(gy, gx)


def conv2d_shifted(img, k):
    """'same' 2-D correlation with a small kernel as a sum of shifted
    products, reflect padding."""
    kh, kw = k.shape
    h, w = img.shape
    p = np.pad(img, ((kh // 2, kh // 2), (kw // 2, kw // 2)), mode="reflect")
    out = np.zeros((h, w))
    for i in range(kh):
        for j in range(kw):
            out += k[i, j] * p[i:i + h, j:j + w]
    return out


def otsu_threshold(img):
    """Otsu's threshold of an 8-bit image: histogram, cumulative sums, argmax."""
    hist = np.bincount(img.ravel(), minlength=256).astype(np.float64)
    p = hist / hist.sum()
    omega = np.cumsum(p)
    mu = np.cumsum(p * np.arange(256))
    mu_t = mu[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        sigma_b = (mu_t * omega - mu) ** 2 / (omega * (1.0 - omega))
    sigma_b = np.nan_to_num(sigma_b)
    t = int(np.argmax(sigma_b))
    return t, (img > t).astype(np.uint8)


# ------------------------------------------------------------ distances
def pairwise_nearest(X, Y):
    """Euclidean distances by broadcasting, nearest neighbour of each x."""
    d = np.sqrt(((X[:, None, :] - Y[None, :, :]) ** 2).sum(axis=-1))
    idx = np.argmin(d, axis=1)
    return idx, d[np.arange(len(X)), idx]


def pairwise_gram(X):
    """Squared distances through the Gram matrix, an RBF kernel matrix."""
    sq = np.sum(X * X, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2.0 * X @ X.T
    np.maximum(d2, 0.0, out=d2)
    return np.exp(-d2 / (2.0 * np.median(d2)))


# ------------------------------------------------------------ softmax family
def log_softmax_axis0(x):
    """log-softmax over axis 0 (columns), and the entropy of each column."""
    m = x.max(axis=0)
    s = x - m
    lse = np.log(np.exp(s).sum(axis=0))
    logp = s - lse
    ent = -(np.exp(logp) * logp).sum(axis=0)
    return logp, ent


def attention_weights(q, k, mask):
    """Masked scaled dot-product weights: where(mask, scores, -inf), softmax."""
    scores = q @ k.T / np.sqrt(q.shape[1])
    scores = np.where(mask, scores, -np.inf)
    scores -= scores.max(axis=1, keepdims=True)
    w = np.exp(scores)
    return w / w.sum(axis=1, keepdims=True)


# ------------------------------------------------------------ cumulative stats
def drawdown_stats(prices):
    """Returns, running peak (maximum.accumulate), drawdown, expanding mean."""
    ret = np.diff(prices) / prices[:-1]
    peak = np.maximum.accumulate(prices)
    dd = (prices - peak) / peak
    n = np.arange(1, len(ret) + 1)
    exp_mean = np.cumsum(ret) / n
    exp_var = np.cumsum(ret * ret) / n - exp_mean ** 2
    return dd.min(), exp_mean[-1], np.sqrt(exp_var[-1]), np.argmin(dd)


# ------------------------------------------------------------ group-by
def groupby_stats(keys, vals, k):
    """Per-group count, sum, mean, variance with bincount; max with maximum.at."""
    cnt = np.bincount(keys, minlength=k)
    s = np.bincount(keys, weights=vals, minlength=k)
    s2 = np.bincount(keys, weights=vals * vals, minlength=k)
    mean = s / np.maximum(cnt, 1)
    var = s2 / np.maximum(cnt, 1) - mean ** 2
    mx = np.full(k, -np.inf)
    np.maximum.at(mx, keys, vals)
    return cnt, mean, var, mx


def scatter_add_at(rows, cols, data, x, n):
    """Sparse COO mat-vec: gather x[cols], scatter with np.add.at."""
    y = np.zeros(n)
    np.add.at(y, rows, data * x[cols])
    return y


# ------------------------------------------------------------ sorting
def rank_and_bins(x, edges):
    """Ranks by double argsort, bins by searchsorted, unique bin counts."""
    order = np.argsort(x, kind="stable")
    ranks = np.empty_like(order)
    ranks[order] = np.arange(len(x))
    b = np.searchsorted(edges, x, side="right")
    u, c = np.unique(b, return_counts=True)
    return ranks, u, c


def median_filter_sorted(x, w):
    """Running median of odd width w: sort each window (stacked shifts)."""
    n = len(x) - w + 1
    win = np.stack([x[i:i + n] for i in range(w)], axis=1)
    return np.sort(win, axis=1)[:, w // 2]


# ------------------------------------------------------------ finite differences
def diffusion_gradient(u, dx):
    """First and second derivatives with np.gradient / np.diff, an energy."""
    du = np.gradient(u, dx)
    d2u = np.diff(u, 2) / dx ** 2
    lap = np.roll(u, 1) - 2 * u + np.roll(u, -1)
    return du, d2u, 0.5 * np.sum(du * du) * dx, np.abs(lap[1:-1] * (1 / dx ** 2) - d2u).max()


# ------------------------------------------------------------ fitting
def poly_detrend(t, y, deg):
    """Least-squares polynomial trend through a Vandermonde matrix, residuals."""
    V = np.vander(t, deg + 1)
    coef, *_ = np.linalg.lstsq(V, y, rcond=None)
    trend = np.polyval(coef, t)
    r = y - trend
    return coef, r, np.sqrt(np.mean(r * r))


# ------------------------------------------------------------ Monte Carlo
def mc_asian_option(seed, paths, steps, s0, r, sigma, strike, T):
    """Arithmetic Asian call by Monte Carlo: default_rng normals, cumsum paths."""
    rng = np.random.default_rng(seed)
    dt = T / steps
    z = rng.standard_normal((paths, steps))
    logp = np.log(s0) + np.cumsum((r - 0.5 * sigma ** 2) * dt + sigma * np.sqrt(dt) * z, axis=1)
    avg = np.exp(logp).mean(axis=1)
    pay = np.maximum(avg - strike, 0.0)
    return np.exp(-r * T) * pay.mean(), pay.std() / np.sqrt(paths)


# ------------------------------------------------------------ cleaning
def clean_columns(X, lo, hi):
    """NaNs replaced by the column's nanmean, outliers clipped, z-scored."""
    mu = np.nanmean(X, axis=0)
    Y = np.where(np.isnan(X), mu, X)
    Y = np.clip(Y, lo, hi)
    sd = Y.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    return (Y - Y.mean(axis=0)) / sd, np.count_nonzero(np.isnan(X), axis=0)


# ------------------------------------------------------------ small linalg
def solve_3x3_loop(A, b):
    """One np.linalg.solve per 3x3 system in a Python loop."""
    x = np.empty_like(b)
    for i in range(A.shape[0]):
        x[i] = np.linalg.solve(A[i], b[i])
    return x


def rotate_points_loop(P, angles):
    """Rotation matrices built per angle, applied with @ in a loop."""
    out = np.empty_like(P)
    for i in range(len(angles)):
        c, s = np.cos(angles[i]), np.sin(angles[i])
        R = np.array([[c, -s], [s, c]])
        out[i] = R @ P[i]
    return out


# ------------------------------------------------------------ column loops
def normalize_columns(X):
    """Standardize each column in a loop over columns."""
    Z = np.empty_like(X)
    for j in range(X.shape[1]):
        col = X[:, j]
        Z[:, j] = (col - col.mean()) / col.std()
    return Z


def cumulative_columns(X, decay):
    """Exponential smoothing along rows, one column update per step."""
    S = np.empty_like(X)
    S[:, 0] = X[:, 0]
    for j in range(1, X.shape[1]):
        S[:, j] = decay * S[:, j - 1] + (1 - decay) * X[:, j]
    return S


# ------------------------------------------------------------ call overhead
def quat_mul(q, r):
    """Hamilton product of two quaternions (4-vectors): a tiny function."""
    w0, x0, y0, z0 = q
    w1, x1, y1, z1 = r
    return np.array([w0 * w1 - x0 * x1 - y0 * y1 - z0 * z1,
                     w0 * x1 + x0 * w1 + y0 * z1 - z0 * y1,
                     w0 * y1 - x0 * z1 + y0 * w1 + z0 * x1,
                     w0 * z1 + x0 * y1 - y0 * x1 + z0 * w1])


def kinetic_energy(v, m):
    """0.5 sum m |v|^2 of n particles: one small reduction per call."""
    return 0.5 * np.sum(m * np.sum(v * v, axis=1))


def interp_resample(t, y, tq):
    """Linear resampling with np.interp and a clipped query grid."""
    tq = np.clip(tq, t[0], t[-1])
    return np.interp(tq, t, y)


# ------------------------------------------------- session 29's slow finds
def blur_rows_apply(img):
    """A 1-D blur of every row by np.apply_along_axis (a Python callback
    per row, as NumPy users write it)."""
    k = np.array([0.25, 0.5, 0.25])
    return np.apply_along_axis(lambda r: np.convolve(r, k, mode="same"), 1, img)


def integrate_trapezoid(f, a, b, n):
    """np.trapezoid of a function's values on a grid; the function is an
    argument (a lambda)."""
    x = np.linspace(a, b, n)
    return np.trapezoid(f(x), x)


def sieve_slices(n):
    """Sieve of Eratosthenes crossing out multiples by slice assignment."""
    is_prime = np.ones(n + 1, dtype=np.bool_)
    is_prime[:2] = False
    for i in range(2, int(n ** 0.5) + 1):
        if is_prime[i]:
            is_prime[i * i::i] = False
    return np.flatnonzero(is_prime)


def power_iteration(A, iters):
    """Dominant eigenpair by power iteration (mat-vec, normalize)."""
    b = np.ones(A.shape[0])
    for _ in range(iters):
        b = A @ b
        b /= np.linalg.norm(b)
    return b @ A @ b, b
