"""The thin Python face of numdyn.Tensor (the type, DLPack, wrap_numpy and
the gradient tape are C: src/tensor/). Here: the decorator forms of
wrap_numpy and the no_grad context manager."""
import contextlib
import functools

from . import _C
from . import _torch  # noqa: F401  (registers the torch bridge; imports torch only when used)
from . import _jax  # noqa: F401  (registers the JAX bridge; imports jax only when used)

Tensor = _C.Tensor
tensor = _C.tensor
from_dlpack = _C.from_dlpack
is_grad_enabled = _C.is_grad_enabled


def wrap_numpy(fn=None, **compile_options):
    """Run a NumPy function on tensors, compiled.

    ``numdyn.wrap_numpy(fn)`` (or ``@numdyn.wrap_numpy`` / ``@numdyn.wrap_numpy(backend=...)``:
    the options of numdyn.compile) returns a callable whose tensor arguments
    -- numdyn.Tensor, or any DLPack producer: torch, JAX, CuPy arrays -- enter
    fn as ndarrays sharing their memory (no copy). fn runs as numdyn.compile
    compiles it. ndarray results leave as the kind of tensor that came in
    (torch in -> torch out, numdyn in -> numdyn out; the first tensor
    argument decides), on the same device, without a copy; NumPy scalars
    (a sum, a mean) leave as 0-d tensors, so that a loss can be
    differentiated; Python scalars stay Python scalars.

    Gradients flow through: numdyn.Tensor arguments that require grad put
    the call on numdyn's tape (loss.backward()), and torch tensors that
    require grad get a torch grad_fn whose backward is numdyn's. JAX arrays
    inside jax.grad / jax.jit / jax.vmap (tracers) make the call a
    jax.custom_vjp of host callbacks whose backward is numdyn.vjp
    (numdyn/_jax.py).
    """
    if "mode" in compile_options:  # as numdyn.compile's mode=: the options it sets
        from . import _mode_options
        compile_options["options"] = _mode_options(compile_options.pop("mode"),
                                                   compile_options.get("options"))
    if fn is None:
        return functools.partial(wrap_numpy, **compile_options)
    w = _C._wrap_numpy(fn, compile_options)
    try:
        functools.update_wrapper(w, fn)
    except AttributeError:  # a callable object without __name__ etc.
        pass
    return w


@contextlib.contextmanager
def no_grad():
    """Within the block, operations on Tensors are not recorded for backward()."""
    was = _C._set_grad_enabled(False)
    try:
        yield
    finally:
        _C._set_grad_enabled(was)
