"""The order tests/conftest.py gives the suite (SLOW_FIRST): the tests that
share kernels run in the order that lets the disk cache's kernel index share
them, and every entry still names a test that exists."""
import ast
import os

import conftest
import test_fuzz_programs

HERE = os.path.dirname(os.path.abspath(__file__))


class _Item:
    def __init__(self, nodeid):
        self.nodeid = nodeid


def _rank(nodeid):
    return conftest._slow_rank(_Item(nodeid))


def _batch_test(mode):
    """the 32-program batch test whose programs test_fuzz_programs_replayed[native-mode] replays"""
    if mode == "views":
        return "tests/test_fuzz_views.py::test_fuzz_views[native]"
    return f"tests/test_fuzz_programs.py::test_fuzz_programs[native-{mode}]"


def test_each_fuzz_batch_runs_before_its_replay():
    # a replay (4 programs a unit) loads what the batches compiled from the
    # kernel index; a 32-program unit with a kernel not indexed compiles
    # whole, so the other order compiles the kernels twice
    modes = [m for m, _ in test_fuzz_programs.REPLAY_CASES]
    assert modes
    for mode in modes:
        replay = f"tests/test_fuzz_programs.py::test_fuzz_programs_replayed[native-{mode}]"
        batch = _batch_test(mode)
        assert _rank(replay) < len(conftest.SLOW_FIRST), replay
        assert _rank(batch) < _rank(replay), (batch, replay)


def test_slow_first_names_tests_that_exist():
    # a stale entry (a test renamed or gone) would quietly stop ordering it
    for prefix in conftest.SLOW_FIRST:
        path, _, name = prefix.partition("::")
        full = os.path.join(os.path.dirname(HERE), path)
        assert os.path.isfile(full), prefix
        if not name:
            continue
        func = name.split("[", 1)[0]
        with open(full) as f:
            tree = ast.parse(f.read())
        defs = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        # a prefix without "[" may name several tests (test_wheel: test_wheel_*)
        assert func in defs if "[" in name else any(d.startswith(func) for d in defs), prefix


def test_sort_is_stable_outside_slow_first():
    ids = ["tests/test_b.py::t2", "tests/test_fuzz_programs.py::test_fuzz_programs_replayed[native-rows]",
           "tests/test_a.py::t1", "tests/test_fuzz_programs.py::test_fuzz_programs[native-rows]"]
    items = sorted((_Item(i) for i in ids), key=conftest._slow_rank)
    assert [it.nodeid for it in items] == [ids[3], ids[1], ids[0], ids[2]]
