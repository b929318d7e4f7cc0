"""int(), math.floor/ceil/trunc of a float in a captured loop: the C
conversion where it fits int64 (one test of its result), Python's for the rest -- -2**63
itself, past int64 (a Python int: the loop deoptimizes), NaN (ValueError),
infinities (OverflowError). The oracle is plain Python/NumPy."""
import math

import numpy as np
import pytest

from loop_gen import check_calls


def convert(x, out):
    for i in range(x.shape[0]):
        out[i] = int(x[i]) + math.floor(x[i]) - math.trunc(x[i]) + math.ceil(x[i])
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ends_of_int64_nan_and_inf(dtype, monkeypatch, capfd):
    monkeypatch.setenv("NUMDYN_LOOP_DEBUG", "1")
    sets = [[0.5, -0.5, 2.0**62, 1e18, -2.0**62, 3.7], [-2.0**63], [2.0**63], [-2.0**63 - 2.0**40],
            [np.nan], [np.inf], [-np.inf]]
    check_calls(convert, *[(np.array(v, dtype=dtype), np.zeros(len(v), dtype=np.int64)) for v in sets])
    # the range test of the C conversions: one comparison of the converted
    # value with INT64_MIN (ndl_f2i; float32: math.trunc raises TypeError,
    # as in Python, before any conversion)
    if dtype == np.float64:
        err = capfd.readouterr().err
        assert err.count("ndl_f2i(") >= 4 and err.count("== INT64_MIN)) {") >= 4, err[-3000:]
        assert "fabs((double)" not in err
