"""numdyn runs traced NumPy work later than the line that asked for it, so a
data-dependent warning (log of a negative, division by zero) would be given
after a ``with warnings.catch_warnings()`` block that meant to record or
silence it. Entering or leaving such a block while a function is being
traced is a boundary: the pending work runs first (trace_flush.c,
nd_trace_warnings_boundary). Subclasses (pytest.warns, ...) call these
through super(), so they are covered too."""
import warnings

from . import _C

_cw = warnings.catch_warnings

# A warning shown while a call is traced, by Python code or a NumPy scalar
# operation rather than by the graph's own ops, would not be shown again by
# a replayed call (which skips the Python code): such a call is not recorded
# for replay. The warnings machinery (C and Python) shows every warning
# through warnings._showwarnmsg.


def _install_shown_hook():
    show = warnings._showwarnmsg
    if getattr(show, "_numdyn_hooked", False):
        return

    def _showwarnmsg(msg):
        _C._warning_shown()
        return show(msg)

    _showwarnmsg._numdyn_hooked = True
    _showwarnmsg.__wrapped__ = show
    warnings._showwarnmsg = _showwarnmsg


def _install():
    _install_shown_hook()
    if getattr(_cw, "_numdyn_hooked", False):
        return
    enter, exit_ = _cw.__enter__, _cw.__exit__

    def __enter__(self):
        _C._warnings_boundary()
        return enter(self)

    def __exit__(self, *exc_info):
        try:
            _C._warnings_boundary()
        except BaseException:
            exit_(self, *exc_info)  # the block's filters are restored either way
            raise
        return exit_(self, *exc_info)

    __enter__.__wrapped__ = enter
    __exit__.__wrapped__ = exit_
    _cw.__enter__ = __enter__
    _cw.__exit__ = __exit__
    _cw._numdyn_hooked = True


_install()
