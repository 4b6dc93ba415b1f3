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
``use_reentrant``, ``preserve_rng_state``, ``determinism_check`` and ``debug`` are accepted:
both of torch's variants give the same gradients here (the random state is always kept);
keyword arguments other than these go to ``function``, as torch's non-reentrant variant does.
"""

from __future__ import annotations

import contextlib
import enum
import functools

from . import random as _random
from .autograd import _mode, _tensor_class, enable_grad
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


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """``function(*args, **kwargs)`` with its activations recomputed in backward (torch's
    ``torch.utils.checkpoint.checkpoint``); returns what ``function`` returns (a tensor or a
    tuple of tensors)."""
    if kwargs:
        function = functools.partial(function, **kwargs)
    if context_fn is not None:
        return _with_contexts(function, args, context_fn, use_reentrant)
    Tensor = _tensor_class()
    if not _mode.enabled:
        return function(*args)
    rng = _random.get_state()
    is_tensor = tuple(isinstance(a, Tensor) for a in args)
    stand_ins = [Tensor._make(a._data, a.requires_grad, None, 0) if t else a
                 for a, t in zip(args, is_tensor)]
    with enable_grad():
        out = function(*stand_ins)
    outs = out if isinstance(out, tuple) else (out,)
    if not all(isinstance(o, Tensor) for o in outs):
        raise TypeError("checkpoint: the function must return a tensor or a tuple of tensors "
                        f"(it returned {type(out).__name__}); return the tensors and build "
                        "other values outside the checkpoint")
    exclude = {id(s) for s, t in zip(stand_ins, is_tensor) if t}
    params = _reached_leaves(outs, exclude)
    if not params and not any(a.requires_grad for a, t in zip(args, is_tensor) if t):
        return out  # nothing to differentiate: torch returns the plain result too
    arrays = tuple(o._data for o in outs)
    res = _RecomputeRan.apply(*args, *params, fn=function, is_tensor=is_tensor,
                              n_args=len(args), params=params, rng=rng,
                              out=arrays if isinstance(out, tuple) else arrays[0])
    return res


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
