"""The torch.autograd.Function bridge of wrap_numpy.

Glue only, in Python because torch's autograd extension point is a Python
class (a subclass of torch.autograd.Function with static forward/backward
that torch's own Python machinery calls); the work on both sides is C:
wrap_numpy's argument/result exchange (_C._wrap_enter/_wrap_leave,
zero-copy) and numdyn's autodiff (_C._vjp). torch is imported only when a
tensor that requires grad reaches a wrap_numpy'd function.
"""
from . import _C

_Bridge = None


def _bridge_class():
    global _Bridge
    if _Bridge is None:
        import torch

        class WrapNumpyFunction(torch.autograd.Function):
            @staticmethod
            def forward(ctx, call, *tensors):
                arrays = [_C._wrap_enter(t) for t in tensors]
                args = list(call.args)
                for pos, a in zip(call.positions, arrays):
                    args[pos] = a
                # one capture computes the output and saves what the backward
                # needs (a VJP object): the backward does not run the forward
                # again (0.68 ms a step against 0.90 recomputing, MLP batch 64)
                out, _, ctx.pull = _C._vjp(call.compiled, tuple(args), call.positions,
                                           call.kwargs or None, "native", False, False)
                ctx.like = tensors[0]
                res = _C._wrap_leave(out, tensors[0])
                if isinstance(res, list):
                    raise NotImplementedError(
                        "numdyn.wrap_numpy: with torch tensors that require grad, return an "
                        "array, a scalar or a tuple of them (not a list)")
                return res

            @staticmethod
            def backward(ctx, *grad_outputs):
                # torch materializes the cotangent of an unused output as zeros.
                # Complex values: torch's conjugate-Wirtinger convention is
                # conj(vjp(conj(g))) of numdyn's (JAX's, src/passes/autodiff.h)
                cts = [_C._wrap_enter((g.conj().resolve_conj() if g.is_complex() else g)
                                      .contiguous()) for g in grad_outputs]
                grads = ctx.pull(*cts)
                out = [None]
                for g in grads:
                    if g is not None and g.dtype.kind == "c":
                        g = g.conj()
                    out.append(None if g is None else _C._wrap_leave(g, ctx.like))
                return tuple(out)

        _Bridge = WrapNumpyFunction
    return _Bridge


class _Call:
    __slots__ = ("compiled", "args", "kwargs", "positions")


def apply(compiled, args, kwargs):
    """wrap_numpy's call with torch tensors that require grad (C calls this)."""
    import torch
    if not torch.is_grad_enabled():
        with torch.no_grad():
            return _nograd(compiled, args, kwargs)
    names = [k for k, v in kwargs.items() if isinstance(v, torch.Tensor) and v.requires_grad]
    if names:  # differentiated as trailing positional arguments of an adapter
        compiled = _keywords_last(compiled, len(args), names)
        args = tuple(args) + tuple(kwargs[k] for k in names)
        kwargs = {k: v for k, v in kwargs.items() if k not in names}
    call = _Call()
    call.positions = tuple(i for i, a in enumerate(args)
                           if isinstance(a, torch.Tensor) and a.requires_grad)
    tensors = [args[i] for i in call.positions]
    # the other arguments enter as wrap_numpy's calls take them (ndarrays)
    call.args = tuple(None if i in call.positions else _C._wrap_enter(a)
                      for i, a in enumerate(args))
    call.kwargs = {k: _C._wrap_enter(v) for k, v in kwargs.items()}
    call.compiled = compiled
    return _bridge_class().apply(call, *tensors)


def _keywords_last(compiled, n, names):
    """compiled called with its keyword tensors `names` given positionally
    after its n positional arguments (numdyn's vjp differentiates
    positions)"""
    def call(*a, **kw):
        kw.update(zip(names, a[n:]))
        return compiled(*a[:n], **kw)
    return call


def _nograd(compiled, args, kwargs):
    arrays = [_C._wrap_enter(a) for a in args]
    kw = {k: _C._wrap_enter(v) for k, v in kwargs.items()}
    like = next(a for a in list(args) + list(kwargs.values()) if hasattr(a, "requires_grad"))
    return _C._wrap_leave(compiled(*arrays, **kw), like)


_C._set_torch_bridge(apply)
