"""torch's ``torch.utils.checkpoint``: ``checkpoint(function, *args, use_reentrant=...)`` and
``checkpoint_sequential(functions, segments, input)`` on skiff's recompute node.

torch's checkpoint finds the parameters a block uses by itself (a module, a bound method, a
lambda over several modules alike); skiff's :func:`recompute.checkpoint` is told them
(``params=``). Here the block's first run is recorded on fresh leaves standing for its tensor
arguments, its graph is walked once for the leaves that need a gradient (the parameters it
reached), and then dropped: what stays is one recompute node keeping the arguments, as in
torch. Backward runs the block again from the same random state (dropout draws the same
masks) and leaves the parameters' gradients in ``.grad``; forward hooks and in-place buffer
updates inside the block run again then, as in torch's recomputation.

``context_fn`` (torch's pair of context managers: one around the first run, one around the
recomputation) is honoured; ``create_selective_checkpoint_contexts`` gives two empty ones,
since skiff recomputes the whole block (torch's policy saves memory, not values).
``use_reentrant`` picks torch's variant as torch 2.13 does (not given: a warning, then the
reentrant one): ``False`` takes keyword arguments (passed to ``function``) and returns any
structure of tensors; ``True`` refuses keyword arguments and, when no tensor argument requires
grad, returns results without gradients (torch's "Gradients will be None"). Where both give
gradients they are the same. ``preserve_rng_state``, ``determinism_check`` and ``debug`` are
accepted (the random state is always kept).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import warnings

from . import random as _random
from .autograd import _mode, _tensor_class, enable_grad, no_grad
from .recompute import _Recompute

__all__ = ["checkpoint", "checkpoint_sequential", "create_selective_checkpoint_contexts",
           "CheckpointPolicy"]


class _RecomputeRan(_Recompute):
    """The recompute node for a block whose forward already ran (its outputs are given)."""

    def forward(self, *arrays, fn, is_tensor, n_args, params, rng, out):
        self.fn, self.is_tensor, self.n_args, self.params, self.rng = (
            fn, is_tensor, n_args, params, rng)
        self.save_for_backward(*arrays[:n_args])
        return out


def _reached_leaves(outs, exclude):
    Tensor = _tensor_class()
    found, seen = {}, set()
    stack = []
    for o in outs:
        if o._node is not None:
            stack.append(o._node)
        elif o.requires_grad and id(o) not in exclude:
            found[id(o)] = o
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        for p in n._parents:
            if p is None:
                continue
            if isinstance(p, Tensor):
                if id(p) not in exclude:
                    found.setdefault(id(p), p)
            else:
                stack.append(p)
    return list(found.values())


def _flatten(out, Tensor, nested):
    """The tensors of ``out`` (a tensor, a tuple, or with ``nested`` any mix of dicts, lists
    and tuples) and a function putting new tensors back in their places."""
    found = []

    def walk(o, top):
        if isinstance(o, Tensor):
            found.append(o)
            return lambda it: next(it)
        if isinstance(o, tuple) and (top or nested) and not hasattr(o, "_fields"):
            parts = [walk(v, False) for v in o]
            return lambda it: tuple(f(it) for f in parts)
        if nested and isinstance(o, list):
            parts = [walk(v, False) for v in o]
            return lambda it: [f(it) for f in parts]
        if nested and isinstance(o, dict):
            parts = {k: walk(v, False) for k, v in o.items()}
            return lambda it: type(o)((k, f(it)) for k, f in parts.items())
        return lambda it: o

    build = walk(out, True)
    return found, lambda tensors: build(iter(tensors))


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """``function(*args, **kwargs)`` with its activations recomputed in backward (torch's
    ``torch.utils.checkpoint.checkpoint``); returns what ``function`` returns.

    torch's two variants: ``use_reentrant=False`` returns any structure (dicts, lists,
    tuples, ``None``s) with its tensors differentiable and takes keyword arguments;
    ``use_reentrant=True`` (and, as torch 2.13 does, with a warning, ``None``) raises on
    keyword arguments, differentiates the tensors of a returned tensor or tuple only (other
    structures holding tensors raise a TypeError where torch's silently drop their
    gradients), and when
    no tensor argument requires grad returns results that do not (torch's warning: "Gradients
    will be None"), so the block's parameters get no gradient either."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly. Starting in PyTorch 2.9, calling checkpoint without "
                      "use_reentrant will raise an exception. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    reentrant = bool(use_reentrant)
    if reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if kwargs:
        function = functools.partial(function, **kwargs)
    if context_fn is not None:
        return _with_contexts(function, args, context_fn, use_reentrant)
    Tensor = _tensor_class()
    if not _mode.enabled:
        return function(*args)
    is_tensor = tuple(isinstance(a, Tensor) for a in args)
    if reentrant and not any(a.requires_grad for a, t in zip(args, is_tensor) if t):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)
        with no_grad():
            return function(*args)
    rng = _random.get_state()
    stand_ins = [Tensor._make(a._data, a.requires_grad, None, 0) if t else a
                 for a, t in zip(args, is_tensor)]
    with enable_grad():
        out = function(*stand_ins)
    outs, rebuild = _flatten(out, Tensor, nested=not reentrant)
    if reentrant and not outs and _flatten(out, Tensor, nested=True)[0]:
        # torch's reentrant variant returns these tensors silently without gradients
        raise TypeError(f"checkpoint: with use_reentrant=True (torch's variant when "
                        f"use_reentrant is not given) the function must return a tensor or a "
                        f"tuple of tensors to get gradients; it returned "
                        f"{type(out).__name__}, whose tensors torch would give no gradient. "
                        f"Pass use_reentrant=False (any structure) or return a tuple")
    if not outs:
        return out  # no tensor to differentiate (torch returns the plain result too)
    exclude = {id(s) for s, t in zip(stand_ins, is_tensor) if t}
    params = _reached_leaves(outs, exclude)
    if not params and not any(a.requires_grad for a, t in zip(args, is_tensor) if t):
        return out  # nothing to differentiate: torch returns the plain result too
    if isinstance(out, Tensor):
        flat_fn, arrays = function, outs[0]._data
    else:
        def flat_fn(*a):
            return tuple(_flatten(function(*a), Tensor, nested=not reentrant)[0])
        arrays = tuple(o._data for o in outs)
    res = _RecomputeRan.apply(*args, *params, fn=flat_fn, is_tensor=is_tensor,
                              n_args=len(args), params=params, rng=rng, out=arrays)
    if isinstance(out, Tensor):
        return res
    return rebuild(res if isinstance(res, tuple) else (res,))


def _with_contexts(function, args, context_fn, use_reentrant):
    """torch's ``context_fn``: it returns two context managers, the first entered around the
    block's first run, the second around its recomputation in backward."""
    if use_reentrant:
        raise ValueError("Passing context_fn or debug is only supported when "
                         "use_reentrant=False.")
    made = context_fn()
    if not (isinstance(made, tuple) and len(made) == 2):
        raise TypeError("checkpoint: context_fn must return a tuple of two context managers "
                        "(the forward's and the recomputation's)")
    fwd_ctx, re_ctx = made
    state = {"first": True}

    def run(*a):
        if state["first"]:
            state["first"] = False
            with fwd_ctx:
                return function(*a)
        with re_ctx:
            return function(*a)
    return checkpoint(run, *args, use_reentrant=use_reentrant)


class CheckpointPolicy(enum.Enum):
    """torch's selective-checkpoint policies (what to keep and what to recompute)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entries_mutation=False):
    """torch's selective activation checkpointing: ``context_fn=functools.partial(
    create_selective_checkpoint_contexts, policy)``. skiff recomputes the whole block (the
    policy only saves memory in torch: values and gradients are the same), so both contexts
    do nothing; the policy is checked for form."""
    if not (callable(policy_fn_or_list) or isinstance(policy_fn_or_list, (list, tuple))):
        raise TypeError("create_selective_checkpoint_contexts: policy_fn_or_list must be a "
                        "policy function or a list of ops")
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):  # noqa: A002
    """torch's: the first ``segments - 1`` runs of ``len(functions) // segments`` modules each
    checkpointed, the rest run as usual. ``functions``: a ``Sequential`` or a list."""
    children = getattr(functions, "children", None)
    funcs = list(children()) if callable(children) else list(functions)
    size = len(funcs) // int(segments)
    if size < 1:
        raise ValueError(f"checkpoint_sequential: {segments} segments for {len(funcs)} "
                         "modules; pass at most as many segments as modules")

    def run(start, end):
        def forward(x):
            for f in funcs[start:end + 1]:
                x = f(x)
            return x
        return forward

    end = -1
    for start in range(0, size * (int(segments) - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)  # noqa: A001
    return run(end + 1, len(funcs) - 1)(input)
