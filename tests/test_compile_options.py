"""compile(options=...): the names a built-in backend reads, checked as
torch.compile checks its options -- a misspelt option must not be ignored
silently (`options={"loop_capture": False}` did nothing)."""
import numpy as np
import pytest

import numdyn


def _f(x):
    return x * 2 + 1


@pytest.mark.parametrize("options, err, msg", [
    ({"loop_capture": False}, RuntimeError,
     "Unexpected optimization option loop_capture, known options are "
     "['cache_size_limit', 'chunk_nodes', 'floor']"),
    ({"floor": 1}, RuntimeError, "Unexpected type of attr floor, got int should be bool"),
    ({"chunk_nodes": 512.0}, RuntimeError, "Unexpected type of attr chunk_nodes, got float should be int"),
    ({"cache_size_limit": True}, RuntimeError, "Unexpected type of attr cache_size_limit, got bool should be int"),
    (["floor"], TypeError, "numdyn.compile: options must be a dict, not list"),
])
def test_unknown_or_mistyped_options_raise(options, err, msg):
    with pytest.raises(err) as e:
        numdyn.compile(_f, options=options)
    assert str(e.value) == msg
    with pytest.raises(err):                       # the decorator form too
        numdyn.compile(options=options)(_f)


def test_known_options_are_accepted_and_custom_backends_get_theirs():
    x = np.arange(5.0)
    cf = numdyn.compile(_f, options={"floor": False, "chunk_nodes": 256, "cache_size_limit": 4})
    np.testing.assert_array_equal(cf(x), _f(x))

    def backend(graph, example_inputs):
        return graph                     # Graph.__call__ interprets it with NumPy

    # a custom backend's options are not numdyn's to check (kept on cf.options)
    cb = numdyn.compile(_f, backend=backend, options={"anything": 1})
    np.testing.assert_array_equal(cb(x), _f(x))
    assert cb.options == {"anything": 1}
