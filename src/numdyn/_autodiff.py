"""numdyn's functional autodiff API: vjp, grad, value_and_grad.

The work is C (numdyn._C._vjp: trace once, build the backward graph from the
forward graph with the VJP rules of src/passes/autodiff.c, run forward and
backward as fused kernels); this module only shapes arguments and results.

Conventions are JAX's: grad needs a function returning one 0-d float value;
complex inputs follow JAX for holomorphic functions (vjp, and grad with
holomorphic=True: f'(z)) and torch's conjugate-Wirtinger convention for a
real loss of complex inputs (grad gives conj of JAX's gradient, the
steepest-ascent direction: x.grad in torch);
argnums picks positional arguments, each may be a float array, a Python or
NumPy float, or a tuple/list/dict of them (the gradient has the same
structure). Integer and bool inputs are not differentiable: grad raises
TypeError for them unless allow_int=True, which gives None; vjp gives None.
Writes inside the differentiated function to its differentiated arguments
do not reach the caller's arrays (the function is treated as pure).
"""
import functools
import weakref

from . import _C

# numdyn.vjp(fn, ...) has no wrapper object to hold recorded traces: they
# live here per fn (the replay capsule and the recorded backward graphs),
# dropped with fn. Functions that cannot be weakly referenced or hashed
# are traced on every call.
_vjp_caches = weakref.WeakKeyDictionary()


def _vjp_cache(fn):
    try:
        c = _vjp_caches.get(fn)
        if c is None:
            c = _vjp_caches[fn] = (_C._grad_cache(), [])
        return c
    except TypeError:
        return None

__all__ = ["vjp", "grad", "value_and_grad"]


def _backend_of(fn):
    """The backend that runs a function's gradients: a compiled function's
    own ("aot_eager"/"eager": NumPy op by op), else "native"."""
    if isinstance(fn, _C.CompiledFunction):
        name = fn.backend
        if isinstance(name, str) and name in ("native", "eager", "aot_eager"):
            return name
        raise NotImplementedError(
            f"numdyn autodiff: gradients run with the built-in backends; {fn!r} uses "
            f"backend {name!r}")
    return "native"


def _argnums_tuple(argnums, nargs):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for a in nums:
        if not isinstance(a, int):
            raise TypeError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
        # JAX's error types: too few arguments for the index is a TypeError
        # (the call's fault), a negative index below -len(args) a ValueError
        if a >= nargs:
            raise TypeError(f"differentiating with respect to argnums={argnums!r} requires at "
                            f"least {max(nums) + 1} positional arguments to be passed by the "
                            f"caller, but got only {nargs} positional arguments")
        if a < -nargs:
            raise ValueError(f"argnums {a} is out of range for a function called with {nargs} "
                             f"positional arguments (indices must be >= -len(args))")
    return single, nums


def _check_int_inputs(args, nums, allow_int):
    if allow_int:
        return
    import numpy as np

    def walk(x):
        if isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y)
        else:
            dt = getattr(x, "dtype", None)
            if isinstance(x, (bool, int)) or (dt is not None and np.dtype(dt).kind in "biu"):
                name = np.dtype(dt).name if dt is not None else type(x).__name__
                raise TypeError(
                    f"grad requires real-valued inputs (input dtype that is a sub-dtype of "
                    f"np.floating), but got {name}. If you want to use integer or bool inputs, "
                    f"use vjp or set allow_int to True.")
    for a in nums:
        walk(args[a])


def vjp(fn, *primals, has_aux=False):
    """``out, vjp_fn = numdyn.vjp(fn, *primals)`` (``out, vjp_fn, aux`` with
    has_aux=True): fn's value at primals and its pullback. ``vjp_fn(ct)``
    takes a cotangent shaped like out (a tuple/list of them for a tuple/list
    output) and returns a tuple with one gradient per primal (None for
    integer/bool primals). The pullback may be called many times: the
    forward saved what the backward needs (the minimum cut by bytes of
    src/passes/autodiff_partition.c). Warm calls of the same fn replay:
    the forward recorded per argument signature runs without tracing fn,
    and the pullback runs the recorded backward graph."""
    out, aux, pull = _C._vjp(fn, primals, tuple(range(len(primals))), None,
                             _backend_of(fn), has_aux, False, _vjp_cache(fn))

    def vjp_fn(ct):
        return pull(*_leaves_like(out, ct))

    vjp_fn.__doc__ = "pullback of numdyn.vjp: vjp_fn(cotangent) -> tuple of gradients"
    vjp_fn.saved_nbytes = pull.saved_nbytes  # what the forward kept for the backward
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _leaves_like(out, ct):
    """ct's leaves in the order _C._vjp walks out's (tuples, lists, dicts)"""
    if isinstance(out, (tuple, list)):
        if not isinstance(ct, (tuple, list)) or len(ct) != len(out):
            raise TypeError(f"numdyn.vjp: the cotangent must be a sequence of {len(out)} "
                            f"items like the output, got {type(ct).__name__}")
        return [leaf for o, c in zip(out, ct) for leaf in _leaves_like(o, c)]
    if isinstance(out, dict):
        if not isinstance(ct, dict) or set(ct) != set(out):
            raise TypeError("numdyn.vjp: the cotangent must be a dict with the output's keys")
        return [leaf for k in out for leaf in _leaves_like(out[k], ct[k])]
    return [ct]


def _conj_complex(g):
    """torch's gradient of a real loss from JAX's: conjugate the complex leaves"""
    if isinstance(g, (tuple, list)):
        return type(g)(_conj_complex(x) for x in g)
    if isinstance(g, dict):
        return {k: _conj_complex(v) for k, v in g.items()}
    dt = getattr(g, "dtype", None)
    if dt is None or dt.kind != "c":
        return g
    import numpy as np
    if type(g) is np.ndarray:
        # a new array (a replayed result may be an argument or a read-only
        # view); out= keeps a 0-d gradient an array
        return np.conjugate(g, out=np.empty_like(g))
    return np.conj(g)


def _holomorphic_value_and_grad(fn, args, kwargs, nums, single, has_aux):
    """JAX's grad(fn, holomorphic=True): f'(z), through the pullback of 1+0j"""
    import numpy as np

    def walk(x, what):
        if isinstance(x, (tuple, list)):
            for y in x:
                walk(y, what)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y, what)
        else:
            dt = np.asarray(x).dtype
            if dt.kind != "c":
                raise TypeError(f"grad with holomorphic=True requires {what} with complex dtype, "
                                f"but got {dt.name}.")
    for a in nums:
        walk(args[a], "inputs")
    f = functools.partial(fn, **kwargs) if kwargs else fn
    res = vjp(f, *args, has_aux=has_aux)
    out, pull = res[0], res[1]
    walk(out, "outputs")
    if np.ndim(out) != 0:
        raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: "
                        f"{np.shape(out)}.")
    gs = pull(np.ones((), np.asarray(out).dtype))
    g = gs[nums[0]] if single else tuple(gs[a] for a in nums)
    return ((out, res[2]), g) if has_aux else (out, g)


def value_and_grad(fn, argnums=0, has_aux=False, allow_int=False, holomorphic=False):
    """``numdyn.value_and_grad(fn, argnums=0)(*args)`` -> (value, gradient):
    fn's 0-d float value and its gradient with respect to the argument(s)
    argnums (a tuple of gradients for a tuple argnums), computed in one run
    (forward and backward fused). has_aux=True: fn returns (value, aux) and
    the result is ((value, aux), gradient). Complex inputs of a real loss
    get torch's gradient (conj of JAX's); holomorphic=True differentiates a
    complex-valued holomorphic fn as JAX does (f'(z)). Warm calls replay: the forward
    and backward graph recorded per argument signature (guarded as
    numdyn.compile guards) runs without tracing fn again."""
    cache = _C._grad_cache()  # this wrapper's recorded traces

    @functools.wraps(fn)
    def value_and_grad_fn(*args, **kwargs):
        single, nums = _argnums_tuple(argnums, len(args))
        _check_int_inputs(args, nums, allow_int)
        if holomorphic:
            return _holomorphic_value_and_grad(fn, args, kwargs, nums, single, has_aux)
        out, aux, grads = _C._vjp(fn, args, nums, kwargs or None, _backend_of(fn),
                                  has_aux, True, cache)
        grads = _conj_complex(grads)
        g = grads[0] if single else grads
        return ((out, aux), g) if has_aux else (out, g)

    return value_and_grad_fn


def grad(fn, argnums=0, has_aux=False, allow_int=False, holomorphic=False):
    """``numdyn.grad(fn, argnums=0)(*args)``: the gradient of fn (a function
    of ndarrays returning one 0-d float value) with respect to argument
    argnums (a tuple of gradients for a tuple argnums), shaped like it.
    has_aux=True: fn returns (value, aux) and the result is (gradient, aux).
    Usable on plain NumPy functions and on numdyn.compile'd ones, and itself
    compilable (numdyn.compile(numdyn.grad(f)) fuses forward and backward
    into the caller's graph)."""
    vg = value_and_grad(fn, argnums, has_aux, allow_int, holomorphic)

    @functools.wraps(fn)
    def grad_fn(*args, **kwargs):
        (value, g) = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_fn
