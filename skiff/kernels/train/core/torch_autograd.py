"""torch's ``autograd`` names, for ported code (``skiff.autograd``): ``Function`` with torch's
``ctx`` form (static ``forward(ctx, ...)`` / ``backward(ctx, ...)`` on tensors,
``ctx.save_for_backward`` / ``ctx.saved_tensors`` / ``ctx.needs_input_grad``), ``grad``
(gradients of outputs with respect to inputs, leaving every ``.grad`` as it was), ``backward``
and the grad-mode switches. skiff's own ops use :class:`.autograd.Function` (arrays in, arrays
out); this one wraps a user's tensor-level function as one node of that kind. Checked against
torch in tests/kernels/train/core/test_torch_more.py.
"""

from __future__ import annotations

import numpy as np

from . import autograd as _ag
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .double_backward import backward_graph, grad_graph
from .double_backward import leaves_of as _leaves
from .double_helpers import input_t, output_t
from .ops_math import unbroadcast
from .tensor import Tensor, as_array

__all__ = ["Function", "FunctionCtx", "grad", "backward", "no_grad", "enable_grad",
           "set_grad_enabled", "is_grad_enabled", "set_detect_anomaly", "detect_anomaly",
           "once_differentiable", "Variable", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """torch's legacy ``autograd.Variable(data, requires_grad=False)`` (old ports): a new leaf
    over the same memory (``data`` detached); ``isinstance(t, Variable)`` holds for every
    tensor, as torch's."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        return out.requires_grad_(True) if requires_grad else out


def once_differentiable(backward):
    """torch's ``autograd.function.once_differentiable``: the decorated ``backward`` runs
    with grad mode off (its result cannot be differentiated again)."""
    import functools

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with no_grad():
            return backward(ctx, *grads)

    return wrapper


class FunctionCtx:
    """What torch's ``ctx`` offers: ``save_for_backward``, ``saved_tensors``,
    ``needs_input_grad``, and any attribute a forward sets."""

    needs_input_grad: tuple = ()
    _saved: tuple = ()

    def save_for_backward(self, *tensors) -> None:
        self._saved = tensors

    @property
    def saved_tensors(self) -> tuple:
        return self._saved

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_diff = {id(t) for t in tensors}

    def mark_dirty(self, *tensors) -> None:
        """The inputs ``forward`` changed in place: ``apply`` hands each back as the same
        tensor object (torch's), now holding the function's output in the graph."""
        self._dirty = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        self._materialize = bool(value)


def _wrap(a):
    return None if a is None else Tensor._make(a, False, None, 0)


class _Bridge(_ag.Function):
    """One node over a ctx-style function: forward hands back the outputs it already computed,
    backward calls the user's ``backward(ctx, *grads)`` on tensors."""

    complex_aware = True  # the user's backward follows torch's convention for complex grads

    def forward(self, *arrays, fn=None, ctx=None, outputs=None):
        self.fn, self.ctx, self.n_in = fn, ctx, len(arrays)
        self.in_shapes = tuple(getattr(a, "shape", None) for a in arrays)
        # round 45 (h7): ``ctx.set_materialize_grads(False)``: an output without a gradient
        # reaches backward as None (was zeros), torch's
        self.materialize = getattr(ctx, "_materialize", True)
        # the arrays of ctx's saved tensors, for the engine's in-place version check
        self.save_for_backward(*(t._data for t in ctx._saved if isinstance(t, Tensor)))
        return outputs if len(outputs) > 1 else outputs[0]

    def backward(self, *grads):
        got = self.fn.backward(self.ctx, *(_wrap(g) for g in grads))
        got = got if isinstance(got, tuple) else (got,)
        if len(got) < self.n_in:  # torch asks for one per input; trailing Nones may be left off
            got = got + (None,) * (self.n_in - len(got))
        if len(got) > self.n_in and all(g is None for g in got[self.n_in:]):
            # round 45 (h7): torch drops extra trailing Nones (a backward written for
            # forward's defaulted arguments, ``return gx, gw, None, None``, called with two)
            got = got[:self.n_in]
        if len(got) != self.n_in:
            raise RuntimeError(f"function {self.fn.__name__}Backward returned an incorrect "
                               f"number of gradients (expected {self.n_in}, got {len(got)})")
        return tuple(None if g is None or not need else
                     self._fit(k, g._data if isinstance(g, Tensor) else as_array(g))
                     for k, (g, need) in enumerate(zip(got, self.needs_input_grad)))

    def _fit(self, k, g):
        """torch's check of a returned gradient: the input's shape, or one the input's
        broadcasts to (summed back to it); another is torch's RuntimeError (round 45 h7: was a
        leaf's error past the graph, or a wrong gradient further on)."""
        shape = self.in_shapes[k]
        if shape is None or g.shape == shape:
            return g
        try:
            fits = np.broadcast_shapes(shape, g.shape) == g.shape
        except ValueError:
            fits = False
        if not fits:
            raise RuntimeError(
                f"Function {self.fn.__name__}Backward returned an invalid gradient at index {k} "
                f"- got {list(g.shape)} but expected shape compatible with {list(shape)}")
        return unbroadcast(g, shape)

    def backward_t(self, want, *grads):
        """create_graph: the user's backward on tensors in the graph; a saved input or output
        stands where it stood (torch's rule: other saved tensors are constants to it)."""
        ctx, saved = self.ctx, self.ctx._saved
        ctx._saved = tuple(
            t if where is None else
            input_t(self, where[1], t._data) if where[0] == "in" else output_t(self, where[1],
                                                                               t._data)
            for t, where in zip(saved, ctx._where))
        ctx._saved = tuple(Tensor._make(t, False, None, 0) if not isinstance(t, Tensor) else t
                           for t in ctx._saved)
        try:
            got = self.fn.backward(ctx, *grads)
        finally:
            ctx._saved = saved
        got = got if isinstance(got, tuple) else (got,)
        got = got + (None,) * (self.n_in - len(got))
        return tuple(g if w else None for g, w in zip(got, want))


class Function:
    """torch's ``autograd.Function``: subclass with static ``forward(ctx, *args)`` and
    ``backward(ctx, *grad_outputs)`` (tensors in, tensors out), call ``MyFn.apply(*args)``.
    forward runs without a graph; backward returns one gradient (or None) per forward input."""

    @staticmethod
    def forward(ctx, *args, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def apply(cls, *args):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        detached = [a.detach() if isinstance(a, Tensor) else a for a in args]
        with no_grad():
            if _has_setup_context(cls):  # torch 2's form: forward(*args), then setup_context
                out = cls.forward(*detached)
                cls.setup_context(ctx, tuple(detached), out)
            else:
                out = cls.forward(ctx, *detached)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        spots = {id(a): ("in", k) for k, a in enumerate(detached) if isinstance(a, Tensor)}
        spots.update({id(o): ("out", k) for k, o in enumerate(outs)})
        ctx._where = [spots.get(id(t)) for t in ctx._saved]
        arrays = tuple(o._data if isinstance(o, Tensor) else as_array(o) for o in outs)
        res = _Bridge.apply(*args, fn=cls, ctx=ctx, outputs=arrays)
        if getattr(ctx, "_non_diff", None) and not single:
            res = tuple(r.detach() if id(o) in ctx._non_diff else r for r, o in zip(res, outs))
        dirty = getattr(ctx, "_dirty", None)
        if dirty:  # an input changed in place comes back as itself, holding the output
            mine = {id(d): a for d, a in zip(detached, args) if isinstance(a, Tensor)}
            res = (res,) if single else res
            res = tuple(mine[id(o)].copy_(r) if id(o) in dirty and id(o) in mine else r
                        for r, o in zip(res, outs))
            res = res[0] if single else res
        return res


def _has_setup_context(cls) -> bool:
    """Whether a Function subclass defines torch 2's ``setup_context`` (its ``forward`` then
    takes no ctx)."""
    return any("setup_context" in vars(k) for k in cls.__mro__
               if k is not Function and k is not object)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False,
         materialize_grads=False):
    """torch's ``autograd.grad``: d(outputs)/d(inputs) as a tuple of tensors; no ``.grad``
    changes. ``create_graph=True``: the gradients are tensors in the graph, to differentiate
    again (gradients of gradients, :mod:`.double_backward`); the graph is kept.
    ``only_inputs`` is accepted and ignored (torch deprecated it: it has no effect there
    either); ``is_grads_batched=True`` takes the first axis of every ``grad_outputs`` entry
    as a batch of cotangents (one backward pass each here; torch vmaps them) and stacks the
    results on that axis."""
    if is_grads_batched:
        return _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    if create_graph:
        return _grad_graph(outputs, grad_outputs, inputs, allow_unused, materialize_grads)
    leaves = _leaves(outputs)
    stash = {id(t): t._grad for t in leaves + inputs}
    watched = []
    try:
        for t in leaves + inputs:
            t._grad = None
        for t in inputs:
            if t._node is not None and not t.retains_grad:
                watched.append(t)
                t._retains = True
                _ag.watch_output(t, _capture)
        for k, (o, g) in enumerate(zip(outputs, grad_outputs)):
            keep = bool(retain_graph) or k < len(outputs) - 1
            o.backward(g, retain_graph=keep)
        result = []
        for i, t in enumerate(inputs):
            g = t._grad
            if g is None and _ag.reaches(outputs, t):  # a zero derivative on the graph (torch's)
                g = t.xp.zeros(t.shape, dtype=t.dtype)
            if g is None and not (allow_unused or materialize_grads):
                raise RuntimeError(_unused(i))
            if g is None and materialize_grads:
                g = t.xp.zeros(t.shape, dtype=t.dtype)
            result.append(_wrap(g))
    finally:
        for t in leaves + inputs:
            t._grad = stash[id(t)]
        for t in watched:
            t._retains = False
            node = t._node
            if node is not None and "_watch" in node.__dict__:
                node._watch[:] = [w for w in node._watch if w[2] is not _capture]
    return tuple(result)


def _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    from .tensor import stack

    gos = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs or ())
    if not gos or any(not isinstance(g, Tensor) or g.ndim == 0 for g in gos):
        raise RuntimeError("autograd.grad(is_grads_batched=True) needs grad_outputs: a tensor "
                           "(or one per output) whose first axis is the batch of cotangents")
    sizes = {int(g.shape[0]) for g in gos}
    if len(sizes) != 1:
        raise RuntimeError("autograd.grad(is_grads_batched=True): the grad_outputs have "
                           f"different batch sizes {sorted(sizes)}")
    (n,) = sizes
    single = isinstance(inputs, Tensor)
    ins = [inputs] if single else list(inputs)
    rows = [grad(outputs, ins, [g[i] for g in gos], retain_graph=True if i < n - 1 else
                 retain_graph, create_graph=create_graph, allow_unused=True,
                 materialize_grads=materialize_grads) for i in range(n)]
    result = []
    for k, x in enumerate(ins):
        col = [r[k] for r in rows]
        if all(c is None for c in col):
            if not allow_unused:
                raise RuntimeError(_unused(k))
            result.append(None)
            continue
        result.append(stack([c if c is not None else x.detach() * 0 for c in col]))
    return tuple(result)


def _grad_graph(outputs, grad_outputs, inputs, allow_unused, materialize_grads):
    for o in outputs:
        if not o.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn (a gradient taken without create_graph=True has none: "
                               "pass create_graph=True to the grad that made it)")
    got = grad_graph(outputs, list(grad_outputs), inputs)
    result = []
    for i, (t, g) in enumerate(zip(inputs, got)):
        if g is None and not (allow_unused or materialize_grads):
            raise RuntimeError(_unused(i))
        if g is None and materialize_grads:
            g = _wrap(t.xp.zeros(t.shape, dtype=t.dtype))
        result.append(g)
    return tuple(result)


def _unused(i) -> str:
    """torch's words for an input the outputs do not depend on."""
    return (f"The differentiated Tensor at index {i} appears to not have been used in the "
            "graph. Set allow_unused=True if this is the desired behavior.")


def _capture(t, g):
    t._grad = g.copy() if t._grad is None else t._grad + g
    return g


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """torch's ``autograd.backward``: ``t.backward(g)`` for each pair."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grad_tensors is None or isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors] * len(tensors)
    if inputs is not None and isinstance(inputs, Tensor):
        inputs = [inputs]
    if create_graph:
        backward_graph(tensors, list(grad_tensors), inputs, True)
        return
    if inputs is not None:
        backward_into(tensors, list(grad_tensors), list(inputs), retain_graph)
        return
    for k, (t, g) in enumerate(zip(tensors, grad_tensors)):
        t.backward(g, retain_graph=bool(retain_graph) or k < len(tensors) - 1)


def backward_into(tensors, grad_tensors, inputs, retain_graph=None) -> None:
    """``backward(inputs=[...])`` (first order): add the gradients to those tensors' ``.grad``
    only (a computed tensor's too, as torch's)."""
    got = grad(tensors, inputs, grad_tensors, retain_graph=retain_graph, allow_unused=True)
    for t, g in zip(inputs, got):
        if g is not None:
            t._grad = g._data.copy() if t._grad is None else t._grad + g._data


class set_detect_anomaly:  # noqa: N801  (torch's name)
    """torch's: anomaly mode on or off, as a call or a ``with`` block (restored after it).
    With ``check_nan`` a backward step that returns a nan gradient raises torch's
    "Function 'SqrtBackward0' returned nan values in its 0th output." (first-order
    backward; skiff records no forward tracebacks)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = list(_ag._anomaly)
        _ag._anomaly[:] = [bool(mode), bool(check_nan)]

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _ag._anomaly[:] = self.prev


class detect_anomaly:  # noqa: N801  (torch's name)
    """torch's context manager: anomaly mode inside the block (see
    :class:`set_detect_anomaly`), with torch's warning that it is for debugging."""

    def __init__(self, check_nan: bool = True):
        import warnings

        self.prev, self.check_nan = list(_ag._anomaly), bool(check_nan)
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the "
                      "runtime and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        _ag._anomaly[:] = [True, self.check_nan]

    def __exit__(self, *exc):
        _ag._anomaly[:] = self.prev


def is_anomaly_enabled() -> bool:
    """torch's ``torch.is_anomaly_enabled()``."""
    return _ag._anomaly[0]


def is_anomaly_check_nan_enabled() -> bool:
    """torch's ``torch.is_anomaly_check_nan_enabled()``."""
    return _ag._anomaly[1]  # torch's flag: True by default, anomaly mode on or off
