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
                # the differentiated arguments with their tensors (leaves of a
                # list/tuple/dict argument too) as ndarrays sharing memory
                args = list(call.args)
                it = iter(tensors)
                for pos, leaves in zip(call.positions, call.leaves):
                    args[pos] = _C._tree_unflatten(
                        call.structs[pos], [_C._wrap_enter(next(it)) if g else _C._wrap_enter(v)
                                            for v, g in zip(leaves, call.grad_leaf[pos])])
                # one capture computes the output and saves what the backward
                # needs (a VJP object): the backward does not run the forward
                # again (0.68 ms a step against 0.90 recomputing, MLP batch 64)
                out, _, ctx.pull = _C._vjp(call.compiled, tuple(args), call.positions,
                                           call.kwargs or None, "native", False, False)
                ctx.like = tensors[0]
                ctx.call = call
                # torch's Function returns tensors, not a tree of them: the
                # result's leaves, its structure rebuilt by apply()
                call.out = out
                leaves = _C._tree_leaves(out)
                call.out_leaves = len(leaves)
                res = tuple(_C._wrap_leave(v, tensors[0]) for v in leaves)
                return res[0] if len(res) == 1 and leaves[0] is out else res

            @staticmethod
            def backward(ctx, *grad_outputs):
                # torch materializes the cotangent of an unused output as zeros.
                # Complex values: torch's conjugate-Wirtinger convention is
                # conj(vjp(conj(g))) of numdyn's (JAX's, src/passes/autodiff.h)
                cts = [None if g is None else
                       _C._wrap_enter((g.conj().resolve_conj() if g.is_complex() else g)
                                      .contiguous()) for g in grad_outputs]
                grads = ctx.pull(*cts)
                out = [None]
                call = ctx.call
                for g, pos in zip(grads, call.positions):
                    leaves = _C._tree_leaves(g) if g is not None else [None] * len(call.grad_leaf[pos])
                    for leaf, needed in zip(leaves, call.grad_leaf[pos]):
                        if not needed:
                            continue
                        if leaf is not None and leaf.dtype.kind == "c":
                            leaf = leaf.conj()
                        out.append(None if leaf is None else _C._wrap_leave(leaf, ctx.like))
                return tuple(out)

        _Bridge = WrapNumpyFunction
    return _Bridge


class _Call:
    __slots__ = ("compiled", "args", "kwargs", "positions", "structs", "leaves", "grad_leaf",
                 "out", "out_leaves")


def _requires_grad(v, torch):
    return isinstance(v, torch.Tensor) and v.requires_grad


def apply(compiled, args, kwargs):
    """wrap_numpy's call with torch tensors that require grad (C calls this):
    at the top level or inside list/tuple/dict arguments, each gets its
    gradient; the result keeps its structure, its tensors carry grad_fn"""
    import torch
    if not torch.is_grad_enabled():
        with torch.no_grad():
            return _nograd(compiled, args, kwargs)
    names = [k for k, v in kwargs.items()
             if any(_requires_grad(x, torch) for x in _C._tree_leaves(v))]
    if names:  # differentiated as trailing positional arguments of an adapter
        compiled = _keywords_last(compiled, len(args), names)
        args = tuple(args) + tuple(kwargs[k] for k in names)
        kwargs = {k: v for k, v in kwargs.items() if k not in names}
    call = _Call()
    call.structs = args
    leaves = [_C._tree_leaves(a) for a in args]
    call.grad_leaf = [[_requires_grad(v, torch) for v in ls] for ls in leaves]
    call.positions = tuple(i for i, g in enumerate(call.grad_leaf) if any(g))
    call.leaves = [leaves[i] for i in call.positions]
    tensors = [v for i in call.positions for v, g in zip(leaves[i], call.grad_leaf[i]) if g]
    # the other arguments enter as wrap_numpy's calls take them (ndarrays)
    call.args = tuple(None if i in call.positions else _C._wrap_enter(a)
                      for i, a in enumerate(args))
    call.kwargs = {k: _C._wrap_enter(v) for k, v in kwargs.items()}
    call.compiled = compiled
    res = _bridge_class().apply(call, *tensors)
    if call.out_leaves == 1 and not isinstance(call.out, (tuple, list, dict)):
        return res
    return _C._tree_unflatten(call.out, res)


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
    like = next(v for a in list(args) + list(kwargs.values()) for v in _C._tree_leaves(a)
                if hasattr(v, "requires_grad"))
    return _C._wrap_leave(compiled(*arrays, **kw), like)


_C._set_torch_bridge(apply)
