"""Range checks of a while loop over an index that only decreases (insertion
sort's `while j >= 0 and a[j] > key: a[j + 1] = a[j]; j -= 1`) or only
increases in it: one end of every a[j + c]'s range is proved once before the
loop from j's value there (issue 17, "bounds checks hoisted where
provable"); the other end stays a test, which the C compiler drops where the
loop's condition already made it (j >= 0). The oracle is plain Python/NumPy:
values, arguments afterwards, and IndexError at the same iteration with the
arrays as NumPy left them -- past either end, through negative indices, from
a start already out of range, past int64 (a Python int deoptimizes)."""
import re

import numpy as np
import pytest

from loop_gen import arr, check_calls
from programs_loops import insertion_sort


def shift_down(a, j, stop):
    # j goes negative (NumPy's a[-1] is the last element), then out of range
    while j > stop:
        a[j + 1] = a[j] * 2
        j = j - 1
    return a, j


def scan_up(a, i):
    n = 0
    while a[i] != 0:
        n += 1
        i += 2
    return n, i


def window_down(a, b, j, lo):
    # j - lo with lo fixed in the loop; an inner loop's proved copy tests j's
    # lower end itself
    while j > lo - 4:
        for k in range(3):
            b[j - lo] += a[k] * k
        j -= 2
    return b


def test_insertion_sort(monkeypatch, capfd):
    monkeypatch.setenv("NUMDYN_LOOP_DEBUG", "1")
    v = arr("float64", 23, seed=3)
    v[5] = np.nan
    check_calls(insertion_sort, (v,), (v[:1],), (v[::-2],))
    # the upper end of a[j] and a[j + 1], proved before the while loop
    assert re.search(r"hw\d+ &= !__builtin_add_overflow\(v\d+_1, 1ll, &x_\) && x_ < a\d+_n0;",
                     capfd.readouterr().err)


@pytest.mark.parametrize("j,stop", [(5, -3), (5, -8), (6, 2), (-7, -9), (2**63 - 2, 2**63 - 4)])
def test_decreasing_index_past_either_end(j, stop):
    check_calls(shift_down, (arr("int64", 7, seed=1), j, stop), repeat=False)


@pytest.mark.parametrize("i,zero", [(1, 7), (-6, 7), (-3, 3), (-12, 7)])
def test_increasing_index_until_a_zero_or_the_end(i, zero):
    a = arr("int16", 9, seed=2, lo=1, hi=5)
    a[zero] = 0
    check_calls(scan_up, (a, i), repeat=False)


@pytest.mark.parametrize("j,lo", [(5, 2), (9, 0), (-(2**63) + 3, -(2**63) + 1)])
def test_inner_loop_under_the_proof(j, lo):
    check_calls(window_down, (arr("float64", 3, seed=4), np.zeros(8), j, lo), repeat=False)


def rebound_by_a_for(a, j):
    # j only decreases in the for loop's body, but the for loop's target is
    # j too: no proof (a[3] below is past a's end)
    n = 0
    while j >= 0 and n < 3:
        a[j] += 1
        for j in range(2, 5):
            j -= 1
        n += 1
    return a, j


def test_index_rebound_by_a_nested_for():
    check_calls(rebound_by_a_for, (np.zeros(3), 0), (np.zeros(5), 1), repeat=False)
