"""What the fusion tests count (issue 19): the kernels one warm call of a
compiled function runs (counter kernel_runs) and the bytes its kernels read
(bytes_read: each array once per kernel run), so bytes_read / x.nbytes is
the number of passes over x."""
import numdyn


def measure(fn, *args):
    """(kernels, bytes read) of one warm call of the compiled fn"""
    f = numdyn.compile(fn)
    f(*args)
    c = numdyn.utils.counters
    k0, b0 = c["kernel_runs"], c["bytes_read"]
    f(*args)
    return c["kernel_runs"] - k0, c["bytes_read"] - b0


def passes(fn, x, *rest):
    """kernels run, and passes over x (bytes read / x.nbytes, rounded to
    tenths: small per-column arrays add a little)"""
    k, b = measure(fn, x, *rest)
    return k, round(b / x.nbytes, 1)


def kernel_runs(fn, *args):
    """kernels one warm call of the compiled fn runs"""
    return measure(fn, *args)[0]
