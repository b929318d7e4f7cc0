"""The JAX side of wrap_numpy: JAX arrays inside jax.grad / jax.jit / jax.vmap.

Concrete JAX arrays enter wrap_numpy's functions through DLPack like any
tensor (src/tensor/tensor_wrap.c). Inside a JAX transformation they are
tracers, abstract values NumPy code cannot read; wrap_numpy hands such a
call here (C detects the tracer and calls apply). The call becomes a
``jax.custom_vjp`` whose forward is a ``jax.pure_callback`` running the
compiled NumPy function on the host, and whose backward is a second
callback running numdyn.vjp of it (residuals: the inputs; the backward
recomputes the forward, replayed from numdyn's recorded trace on warm
calls). Gradients use JAX's convention, which is numdyn.vjp's, complex
values included (src/passes/autodiff.h). Integer and bool inputs get JAX's
float0 zero cotangents.

The callback needs the result's shapes and dtypes before any value exists:
they come from one run of the function on ones of the inputs' shapes and
dtypes (random values when that raises: `solve` of a matrix of ones),
cached per (function, input signature, other arguments). A function
whose result shapes depend on the values of its JAX inputs cannot be used
under jax.jit (as for any pure_callback).

Glue only: the work on both sides is numdyn's C (compiled forward, vjp).
"""
from . import _C

_shapes = {}  # (compiled, signature) -> the result's ShapeDtypeStruct tree


def _key(compiled, leaves, pos, kwargs):
    sig = tuple((tuple(leaves[p].shape), str(leaves[p].dtype)) for p in pos)
    other = tuple(a for i, a in enumerate(leaves) if i not in pos)
    try:
        k = (compiled, sig, other, tuple(sorted(kwargs.items())))
        hash(k)
        return k
    except TypeError:
        return None


def _probes(sigs):
    """inputs to find the result's shapes with: ones, then random values in
    [1, 2) (a matrix of ones is singular: np.linalg.solve/inv/cholesky of
    it raise, of these they do not), then standard normal ones; integer and
    bool inputs get ones (or 1..3)"""
    import numpy as np
    rng = np.random.default_rng(0)

    def filled(shape, dt, how):
        if how == "ones" or dt.kind == "b":
            return np.ones(shape, dtype=dt)
        if dt.kind in "iu":
            return rng.integers(1, 4, size=shape).astype(dt)
        v = rng.uniform(1.0, 2.0, size=shape) if how == "pos" else rng.standard_normal(shape)
        if dt.kind == "c":
            v = v + 1j * (rng.uniform(1.0, 2.0, size=shape) if how == "pos" else rng.standard_normal(shape))
        return v.astype(dt)
    for how in ("ones", "pos", "normal"):
        yield [filled(sh, dt, how) for sh, dt in sigs]


def apply(compiled, args, kwargs):
    """wrap_numpy's call with JAX tracers among its arguments (C calls this)."""
    import jax
    import numpy as np
    from . import _autodiff

    # keyword arguments holding JAX arrays travel as one more (dict)
    # argument, so they are leaves like the positional ones: traced by the
    # callbacks and differentiated; the other keywords stay static
    dyn = {k: v for k, v in kwargs.items()
           if any(isinstance(x, jax.Array) for x in _C._tree_leaves(v))}
    if dyn:
        static = {k: v for k, v in kwargs.items() if k not in dyn}
        inner = compiled

        def compiled(*a, **kw):
            return inner(*a[:-1], **a[-1], **kw)
        compiled.__wrapped__ = inner
        args, kwargs = tuple(args) + (dyn,), static
        key_fn = (inner, tuple(dyn))
    else:
        key_fn = compiled
    # the JAX arrays among the arguments' leaves (inside list/tuple/dict
    # arguments too, as numdyn walks them: _C._tree_leaves)
    per_arg = [_C._tree_leaves(a) for a in args]
    leaves = [v for ls in per_arg for v in ls]
    pos = tuple(i for i, v in enumerate(leaves) if isinstance(v, jax.Array))

    def host(xs):
        flat = list(leaves)
        for p, x in zip(pos, xs):
            flat[p] = np.asarray(x)
        out, k = [], 0
        for a, ls in zip(args, per_arg):
            out.append(_C._tree_unflatten(a, flat[k:k + len(ls)]))
            k += len(ls)
        return out

    def as_arrays(out):
        return jax.tree_util.tree_map(np.asarray, out)

    key = _key(key_fn, leaves, pos, kwargs)
    struct = _shapes.get(key) if key is not None else None
    if struct is None:
        first = None
        for probe in _probes([(leaves[p].shape, np.dtype(leaves[p].dtype)) for p in pos]):
            try:
                with np.errstate(all="ignore"):
                    out = as_arrays(compiled(*host(probe), **kwargs))
                break
            except Exception as e:  # noqa: BLE001 -- the next probe, or reported
                first = first or e
        else:
            raise NotImplementedError(
                "numdyn.wrap_numpy under a JAX transformation needs the result's shapes before "
                "the values exist; running the function on ones of the inputs' shapes (and on "
                f"random values) to find them raised {type(first).__name__}: {first}") from first
        struct = jax.tree_util.tree_map(lambda o: jax.ShapeDtypeStruct(o.shape, o.dtype), out)
        if key is not None:
            if len(_shapes) > 1024:
                _shapes.clear()
            _shapes[key] = struct
    out_tree = jax.tree_util.tree_structure(struct)
    diff = [np.dtype(leaves[p].dtype).kind in "fc" for p in pos]

    def forward(*xs):
        return as_arrays(compiled(*host(xs), **kwargs))

    def backward(*vals):
        xs, cts = vals[:len(pos)], vals[len(pos):]
        a = host(xs)
        fn = compiled
        if kwargs:
            import functools
            fn = functools.partial(compiled, **kwargs)
        out, pull = _autodiff.vjp(fn, *a)
        gs = pull(jax.tree_util.tree_unflatten(out_tree, [np.asarray(c) for c in cts]))
        # each argument's gradient has its structure: its leaves, in order
        gleaves = [g for i, g in enumerate(gs) for g in (_C._tree_leaves(g) if g is not None
                                                          else [None] * len(per_arg[i]))]
        res = []
        for p, d, x in zip(pos, diff, xs):
            if d:
                g = gleaves[p]
                res.append(np.zeros(x.shape, x.dtype) if g is None else np.asarray(g, dtype=x.dtype))
        return tuple(res)

    @jax.custom_vjp
    def call(*xs):
        return jax.pure_callback(forward, struct, *xs, vmap_method="sequential")

    def call_fwd(*xs):
        return call(*xs), xs

    def call_bwd(xs, ct):
        want = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x, d in zip(xs, diff) if d)
        got = iter(jax.pure_callback(backward, want, *xs, *jax.tree_util.tree_leaves(ct),
                                     vmap_method="sequential") if want else ())
        return tuple(next(got) if d else np.zeros(x.shape, jax.dtypes.float0)
                     for x, d in zip(xs, diff))

    call.defvjp(call_fwd, call_bwd)
    return call(*[leaves[p] for p in pos])


_C._set_jax_bridge(apply)
