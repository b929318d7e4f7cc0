"""fullgraph=True and value reads (issue 15, point 1).

A value read runs the graph traced so far and hands Python a concrete value
(`float(b.sum())`, `b.item()`, NumPy's element for Python, `math.fsum(b)`):
the function then runs as more than one graph, so under fullgraph=True it
raises GraphBreakError naming the construct and the user's line, as a graph
break does. torch.compile(fullgraph=True) (2.13) raises on the same
constructs where it needs a concrete value: data-dependent branching, `math.fsum`
of a tensor, `tolist()` of a float tensor, `range(int(t))`.

What stays one graph (torch traces these too): an element of computed work
used in array arithmetic (`b[1] + b`, a lazy scalar), a computed element index
(`b[np.argmax(b)]`: a gather), a computed index array (`b[np.argsort(b)]`,
`np.take`, `np.add.at`): their bounds are checked when the graph runs, so an
out-of-range index still raises NumPy's IndexError.
"""
import math

import numpy as np
import pytest

import numdyn
from oracle import assert_same

A = np.arange(1.0, 5.0)


def _fsum(a):
    b = a * 2
    return math.fsum(b)


def _branch_on_element(a):
    b = a * 2
    if b[0] > 0:
        return b + 1
    return b - 1


def _float_of_sum(a):
    b = a * 2
    return float(b.sum())


def _tolist(a):
    b = a * 2
    return b.tolist()


def _len_nonzero(a):
    b = a * 2
    return len(np.nonzero(b)[0])


def _item(a):
    b = a * 2
    return b[1].item()


def _item_index(a):
    b = a * 2
    return b.item(2)


def _format(a):
    b = a * 2
    return "%.1f" % b[1]


@pytest.mark.parametrize("fn, construct", [
    (_fsum, "float() of an array value"),
    (_branch_on_element, "bool() of an array"),
    (_float_of_sum, "float() of an array value"),
    (_tolist, "tolist"),
    (_len_nonzero, "nonzero"),
    (_item, "ndarray.item()"),
    (_item_index, "ndarray.item()"),
    (_format, "float() of an array value"),
])
def test_value_reads_raise_under_fullgraph(fn, construct):
    with pytest.raises(numdyn.GraphBreakError) as info:
        numdyn.compile(fn, fullgraph=True)(A.copy())
    msg = str(info.value)
    assert construct in msg
    # the user's line, as a graph break names it
    line = fn.__code__.co_firstlineno + 2
    assert f"{__file__}:{line}:" in msg
    # without fullgraph: NumPy's answer
    assert_same(numdyn.compile(fn)(A.copy()), fn(A.copy()))


def test_item_is_listed_as_a_value_read_with_its_construct():
    e = numdyn.explain(_item_index)(A.copy())
    assert len(e.value_reads) == 1
    r = e.value_reads[0]
    assert "ndarray.item()" in r.reason and r.lineno == _item_index.__code__.co_firstlineno + 2
    assert "ndarray.item()" in str(e)


def _elem_plus(a):
    b = a * 2
    return b[1] + b


def _argmax_element(a):
    b = a * 2
    return b[np.argmax(b)] * b


def _argmax_element_2d(a):
    m = np.outer(a, a) - 3.0
    return m[np.argmax(a), np.argmin(a) - 1] + m


def _gather(a):
    b = a * 2
    return b[np.argsort(-b)] + np.take(b, np.argsort(b))


def _add_at(a):
    b = a * 0
    np.add.at(b, np.argsort(a)[::-1], a)
    return b


@pytest.mark.parametrize("fn", [_elem_plus, _argmax_element, _argmax_element_2d, _gather, _add_at])
def test_in_graph_reads_stay_one_graph(fn):
    cf = numdyn.compile(fn, fullgraph=True)
    for x in (A, np.array([3.0, -1.0, 7.0, 2.0])):
        assert_same(cf(x.copy()), fn(x.copy()))


def test_lazy_element_index_is_one_graph_and_replays():
    # a computed element index is a gather: no flush, and later calls replay
    # it with the new data
    cf = numdyn.compile(_argmax_element)
    for x in (A, np.array([3.0, -1.0, 7.0, 2.0]), np.array([9.0, 1.0, 0.0, 2.0])):
        assert_same(cf(x.copy()), _argmax_element(x.copy()))
    info = cf._replay_info()
    assert info["entries"] == 1 and info["hits"] == 2, info


def _oob_index(a):
    b = a * 2
    return b[np.argsort(b) + 2]


def _oob_element(a):
    b = a * 2
    return b[np.argmax(b) + 1]


@pytest.mark.parametrize("fn", [_oob_index, _oob_element])
def test_in_graph_index_out_of_range_is_numpys_index_error(fn):
    with pytest.raises(IndexError) as want:
        fn(A.copy())
    for fg in (True, False):
        with pytest.raises(IndexError) as got:
            numdyn.compile(fn, fullgraph=fg)(A.copy())
        assert str(got.value) == str(want.value)


def _index_after_write(a):
    a += 1
    return a[np.argsort(a)]


def test_index_checked_after_pending_caller_writes_is_a_read():
    # NumPy checks the index after `a += 1` landed in the caller's array:
    # checking it at its line runs the graph so far (a value read)
    with pytest.raises(numdyn.GraphBreakError, match="computed integer index array"):
        numdyn.compile(_index_after_write, fullgraph=True)(A.copy())
    x, y = A.copy(), A.copy()
    assert_same(numdyn.compile(_index_after_write)(x), _index_after_write(y))
    assert_same(x, y)


def _input_element(a):
    # an argument's element needs no graph to run: a NumPy scalar, no read
    return a * a[2]


def test_argument_element_is_not_a_read():
    assert_same(numdyn.compile(_input_element, fullgraph=True)(A.copy()), _input_element(A.copy()))
