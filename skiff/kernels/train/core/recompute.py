"""Activation checkpointing: run a block without keeping its activations, recompute them in
backward.

``checkpoint(fn, *args, params=...)`` runs ``fn(*args)`` with no graph and records one node
that keeps only the tensor arguments. Its backward runs ``fn`` again with a graph (the same
random state, so dropout draws the same masks), backpropagates the incoming gradients through
it, hands the arguments' gradients on and leaves the parameters' gradients where any backward
leaves them (``param.grad``). Memory: a stack of L blocks keeps L block inputs instead of
every intermediate of every block, plus one block's intermediates at a time during backward;
compute: one more forward per block (~1/3 more per step), what the planner costs as
``recompute``.

``params`` are the trainable tensors ``fn`` uses (a block's parameters). They are inputs of
the node so that the step knows they receive gradients even when no argument needs one (LoRA
over a frozen embedding), and their gradient-ready hooks (data-parallel buckets) fire once,
from the outer backward, after the recomputed backward has filled their gradients.

>>> import numpy as np
>>> from skiff.kernels.train.core import nn
>>> from skiff.kernels.train.core.tensor import Tensor
>>> lin = nn.Linear(4, 4)
>>> x = Tensor(np.ones((2, 4), np.float32), requires_grad=True)
>>> y = checkpoint(lambda t: lin(t).tanh(), x, params=list(lin.parameters()))
>>> y.sum().backward()
>>> lin.weight.grad.shape, x.grad.shape
((4, 4), (2, 4))
"""

from __future__ import annotations

import functools
import operator

from . import random as _random
from .autograd import Function, _tensor_class, enable_grad, no_grad, run_backward

__all__ = ["checkpoint"]


def checkpoint(fn, *args, params=()):
    """``fn(*args)`` (a tensor or a tuple of tensors), its activations recomputed in backward.

    Non-tensor arguments (arrays of positions, sequence offsets, flags) pass through as they
    are. ``params``: the trainable tensors ``fn`` uses."""
    Tensor = _tensor_class()
    params = [p for p in params if isinstance(p, Tensor) and p.requires_grad]
    is_tensor = tuple(isinstance(a, Tensor) for a in args)
    return _Recompute.apply(*args, *params, fn=fn, is_tensor=is_tensor, n_args=len(args),
                            params=params, rng=_random.get_state())


class _Recompute(Function):
    def forward(self, *arrays, fn, is_tensor, n_args, params, rng):
        Tensor = _tensor_class()
        self.fn, self.is_tensor, self.n_args, self.params, self.rng = (
            fn, is_tensor, n_args, params, rng)
        args = arrays[:n_args]
        self.save_for_backward(*args)
        with no_grad():
            out = fn(*[Tensor._make(a, False, None, 0) if t else a
                       for a, t in zip(args, is_tensor)])
        if isinstance(out, tuple):
            return tuple(o._data for o in out)
        return out._data

    def backward(self, *grad_outputs):
        Tensor = _tensor_class()
        leaves, call = [], []
        for a, t, need in zip(self.saved, self.is_tensor, self.needs_input_grad):
            if t:
                x = Tensor._make(a, bool(need), None, 0)
                leaves.append(x if need else None)
                call.append(x)
            else:
                leaves.append(None)
                call.append(a)
        after = _random.get_state()
        _random.set_state(self.rng)  # dropout draws what the forward drew
        hooks = [(p, p._ready_hooks) for p in self.params]
        for p, _ in hooks:  # fired once, by the outer backward, when this node is done
            p._ready_hooks = None
        try:
            with enable_grad():
                out = self.fn(*call)
                outs = out if isinstance(out, tuple) else (out,)
                pairs = [(o, g) for o, g in zip(outs, grad_outputs)
                         if g is not None and o.requires_grad]
                if len(pairs) == 1:
                    run_backward(pairs[0][0], pairs[0][1])
                elif pairs:
                    total = functools.reduce(operator.add, [
                        (o * Tensor._make(g, False, None, 0)).sum() for o, g in pairs])
                    run_backward(total, total.xp.ones((), dtype=total.dtype))
        finally:
            for p, h in hooks:
                p._ready_hooks = h
            _random.set_state(after)
        grads = [x._grad if x is not None else None for x in leaves]
        return (*grads, *([None] * len(self.params)))
