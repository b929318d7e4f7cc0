"""numdyn.config rejects options it does not have, as torch._dynamo.config
does (issue 15, "capture never stops silently"): a typo such as
cache_size_limt, or another library's option, raised nothing and changed
nothing before. Existing options and torch's newer recompile_limit still
set as before."""
import pytest

import numdyn


def test_unknown_option_raises_and_known_ones_set():
    # (automatic_dynamic_shapes was "another library's option" here until
    # numdyn took it in session 28; capture_scalar_outputs still is one)
    for name in ("cache_size_limt", "capture_scalar_outputs"):
        with pytest.raises(AttributeError, match=f"numdyn.config.{name} does not exist"):
            setattr(numdyn.config, name, 1)
        assert not hasattr(numdyn.config, name)
    old = numdyn.config.cache_size_limit
    try:
        numdyn.config.recompile_limit = old + 1
        assert numdyn.config.cache_size_limit == old + 1 == numdyn.config.recompile_limit
        numdyn.config.cache_size_limit = old
        assert numdyn.config.recompile_limit == old
    finally:
        numdyn.config.cache_size_limit = old
    was = numdyn.config.verbose
    numdyn.config.verbose = was  # an existing plain option
    numdyn.config._private_note = 1  # private names stay free
    del numdyn.config._private_note
