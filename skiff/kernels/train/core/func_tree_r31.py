"""The pytree helpers and the shared body of ``func.grad`` (:mod:`.func_r29`) and of its
batched form inside ``vmap`` (:mod:`.vmap_grad_r30`): one copy both import (round 31)."""

from __future__ import annotations

from .autograd import _tensor_class, enable_grad, is_grad_enabled

__all__ = ["_leaves", "_map", "_argnums", "run_for_grad", "finish_grad"]


def _leaves(tree):
    Tensor = _tensor_class()
    if isinstance(tree, Tensor):
        return [tree]
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in _leaves(v)]
    if isinstance(tree, (list, tuple)):
        return [x for v in tree for x in _leaves(v)]
    return []


def _map(fn, tree):
    Tensor = _tensor_class()
    if isinstance(tree, Tensor):
        return fn(tree)
    if isinstance(tree, dict):
        return type(tree)((k, _map(fn, v)) for k, v in tree.items())
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*[_map(fn, v) for v in tree])
    if isinstance(tree, (list, tuple)):
        return type(tree)(_map(fn, v) for v in tree)
    return tree


def _argnums(argnums, n):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for a in nums:
        if not -n <= a < n:
            raise ValueError(f"argnums {a} is out of range for a function called with {n} "
                             "positional arguments")
    return single, tuple(a % n for a in nums)


def run_for_grad(func, argnums, has_aux, args, kwargs, stand_in):
    """The part of ``grad`` both its plain and its batched form (:mod:`.vmap_grad_r30`)
    share: the chosen arguments replaced by ``stand_in`` of each tensor, the function run
    with gradients on, ``(output, aux)`` split and the output checked to be one element.
    Returns ``(single, nums, args, outer, out, aux)``; ``outer``: an argument needs a
    gradient itself, so the gradients stay in the caller's graph."""
    single, nums = _argnums(argnums, len(args))
    args = list(args)
    outer = any(t.requires_grad for a in nums for t in _leaves(args[a])) and is_grad_enabled()
    for a in nums:
        args[a] = _map(stand_in, args[a])
    with enable_grad():
        out = func(*args, **kwargs)
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ValueError("grad(has_aux=True): the function must return (output, aux)")
        out, aux = out
    Tensor = _tensor_class()
    if not isinstance(out, Tensor) or out.numel() != 1:
        raise ValueError("grad: the function must return a one-element tensor (got "
                         f"{type(out).__name__} of shape {getattr(out, 'shape', None)}); "
                         "use vjp or jacrev for other outputs")
    return single, nums, args, outer, out, aux


def finish_grad(grads, single, nums, args, outer, out, aux, wrap=lambda t: t):
    """``(grads, value, aux)`` of ``grad``: the gradients as trees like the arguments
    (each passed through ``wrap``), detached unless ``outer``."""
    if not outer:
        grads = [g.detach() for g in grads]
        out = out.detach()
        aux = _map(lambda t: t.detach(), aux)
    it = iter(grads)
    trees = tuple(_map(lambda _t: wrap(next(it)), args[a]) for a in nums)
    return (trees[0] if single else trees), wrap(out), aux
