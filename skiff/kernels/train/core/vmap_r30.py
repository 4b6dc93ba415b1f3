"""A batched ``vmap``: the function runs once on tensors that carry the mapped axis.

How: each mapped argument becomes a :class:`BatchedTensor`, a tensor whose shape is one
sample's (the *logical* shape) over a physical tensor with the batch on axis 0. Every op
reaches :meth:`Function.apply`; while a batched call runs, ``apply`` first asks
:func:`dispatch`, which runs the op on the physical tensors by a rule (elementwise ops and
``where`` align the operands' axes, reductions, softmax and shape ops shift their axes by
one, ``matmul``/``linear`` broadcast over the batch, a batched weight included) or, for an
op without a rule, by the per-op loop: the op once per sample on slices, stacked (torch's
"slow fallback"), so an op with no rule is still right, only slower. The physical graph is
an ordinary graph: gradients flow through it, and ``grad`` inside ``vmap`` (per-sample
gradients) gives each sample's gradient by taking the stand-ins of the differentiated
arguments per sample (an unbatched parameter is repeated along the batch).

Code that reads a batched tensor's raw array (``.numpy()``, ``.item()``, ``bool(x)``,
a loss that reads its targets' array, a random draw where ``randomness`` is not
``"same"``) raises :class:`NotBatchable`: ``vmap`` then runs the whole function again as a
loop of calls, one per sample (round 29's ``vmap``), so such functions give the same values
as before, at the old cost. ``LOOPED`` counts, by op name, the ops that took the per-op loop
(and ``"<whole call>"`` the calls that fell back), for tests and for finding the next rule.

Levels: nested ``vmap`` calls each wrap at their own level; a rule treats a tensor batched at
an outer level as an ordinary one (its ops dispatch again at that level).
"""

from __future__ import annotations

import inspect

import numpy as np

from . import autograd as _ag
from . import random as _random
from .tensor import Tensor
from .vmap_tensor_r30 import (  # noqa: F401  (re-exported: the names of this module's notes)
    _LEVELS,
    LOOPED,
    BatchedTensor,
    NotBatchable,
    _aligned,
    _lnd,
    _refuse,
    _size_at,
    batched_here,
    current_level,
    indices_along,
    is_batched,
)

ENABLED = True  # False: every vmap is the loop of calls (round 29's), for comparisons

__all__ = ["BatchedTensor", "NotBatchable", "LOOPED", "dispatch", "current_level",
           "run_batched", "is_batched", "batched_here"]


# ---- dispatch ------------------------------------------------------------------------------

def dispatch(cls, inputs, kwargs):
    """``Function.apply``'s hook: the op on batched inputs, or NotImplemented for none."""
    level = None
    for x in inputs:
        if isinstance(x, BatchedTensor) and (level is None or x._level > level):
            level = x._level
    for x in kwargs.values():
        if isinstance(x, BatchedTensor) and (level is None or x._level > level):
            level = x._level
    if level is None:
        return NotImplemented
    rule = _RULES.get(cls)
    if rule is not None and not any(is_batched(v, level) for v in kwargs.values()):
        out = rule(cls, level, list(inputs), kwargs)
        if out is not NotImplemented:
            return out
    return _loop(cls, level, inputs, kwargs)


def _loop(cls, level, inputs, kwargs):
    """The op once per sample on slices, the outputs stacked on axis 0."""
    from .ops_shape import Stack

    LOOPED[cls.__name__] += 1
    n = _size_at(level)
    outs = []
    for i in range(n):
        ins = [x._phys[i] if is_batched(x, level) else x for x in inputs]
        kw = {k: (v._phys[i] if is_batched(v, level) else v) for k, v in kwargs.items()}
        outs.append(cls.apply(*ins, **kw))
    if isinstance(outs[0], tuple):
        return tuple(BatchedTensor(Stack.apply(*[o[k] for o in outs], axis=0), level)
                     for k in range(len(outs[0])))
    return BatchedTensor(Stack.apply(*outs, axis=0), level)


def _masked_fill(cls, level, inputs, kwargs):
    a, mask = inputs
    if not is_batched(a, level):
        n = _size_at(level)
        a = BatchedTensor(a.reshape((1,) + tuple(a.shape)).expand((n,) + tuple(a.shape)), level)
    return _wrap(cls.apply(*_aligned([a, mask], level), **kwargs), level)


def _wrap(out, level):
    if isinstance(out, tuple):
        return tuple(BatchedTensor(o, level) for o in out)
    return BatchedTensor(out, level)


def _elementwise(cls, level, inputs, kwargs):
    return _wrap(cls.apply(*_aligned(inputs, level), **kwargs), level)


def _first_only(cls, level, inputs, kwargs):
    """An op batched on its first input alone, acting on its last axes (a mask or weights
    that broadcast against those): the physical tensor goes in as it is."""
    a = inputs[0]
    if not is_batched(a, level) or any(is_batched(x, level) for x in inputs[1:]):
        return NotImplemented
    return _wrap(cls.apply(a._phys, *inputs[1:], **kwargs), level)


_DEFAULTS: dict = {}


def _default_axis(cls, name):
    key = (cls, name)
    if key not in _DEFAULTS:
        p = inspect.signature(cls.forward).parameters.get(name)
        _DEFAULTS[key] = None if p is None else p.default
    return _DEFAULTS[key]


def _shift(axis, nd, *, all_if_none=True, new=False):
    """A logical axis (int, tuple or None) as the physical one (one more; ``new``: an axis
    of the result, as ``stack``'s)."""
    span = nd + 1 if new else nd
    if axis is None:
        return tuple(range(1, nd + 1)) if all_if_none else None
    if isinstance(axis, (tuple, list)):
        return tuple(int(a) % span + 1 for a in axis)
    if span == 0:
        raise NotBatchable("an axis of a 0-d tensor")
    return int(axis) % span + 1


def _axis_rule(name="axis", all_if_none=True, new=False):
    def rule(cls, level, inputs, kwargs):
        a = inputs[0]
        if not is_batched(a, level) or any(is_batched(x, level) for x in inputs[1:]):
            return NotImplemented
        axis = kwargs.get(name, _default_axis(cls, name))
        if axis is None and not all_if_none:
            return NotImplemented
        if axis is None and a.ndim == 0:
            kw = {**kwargs, name: ()}
        else:
            kw = {**kwargs, name: _shift(axis, a.ndim, all_if_none=all_if_none, new=new)}
        return _wrap(cls.apply(a._phys, *inputs[1:], **kw), level)
    return rule


def _joined(cls, level, inputs, kwargs):
    """cat/stack: the unbatched parts repeated along the batch, the axis shifted."""
    n = _size_at(level)
    parts = []
    for x in inputs:
        if is_batched(x, level):
            parts.append(x._phys)
        elif isinstance(x, Tensor):
            parts.append(x.reshape((1,) + tuple(x.shape)).expand((n,) + tuple(x.shape)))
        else:
            return NotImplemented
    nd = inputs[0].ndim
    new = cls.__name__ == "Stack"
    axis = kwargs.get("axis", 0)
    return _wrap(cls.apply(*parts, **{**kwargs, "axis": _shift(axis, nd, new=new)}), level)


def _reshape(cls, level, inputs, kwargs):
    a = inputs[0]
    shape = kwargs.get("shape")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return _wrap(cls.apply(a._phys, shape=(a._phys.shape[0],) + shape), level)


def _transpose(cls, level, inputs, kwargs):
    a = inputs[0]
    axes = kwargs.get("axes")
    nd = a.ndim
    axes = tuple(range(nd - 1, -1, -1)) if axes is None else tuple(int(x) % nd for x in axes)
    return _wrap(cls.apply(a._phys, axes=(0,) + tuple(x + 1 for x in axes)), level)


def _expand(cls, level, inputs, kwargs):
    a = inputs[0]
    shape = tuple(kwargs.get("shape"))
    (p,) = _aligned([a], level, len(shape))
    full = tuple(p.shape[i + 1] if s == -1 else s for i, s in enumerate(shape))
    return _wrap(cls.apply(p, shape=(p.shape[0],) + full), level)


def _getitem(cls, level, inputs, kwargs):
    a = inputs[0]
    index = kwargs.get("index")
    items = index if isinstance(index, tuple) else (index,)
    adv = [i for i, x in enumerate(items)
           if (hasattr(x, "shape") and getattr(x, "ndim", 0) > 0) or isinstance(x, list)]
    if adv and adv[-1] - adv[0] + 1 != len(adv):
        return NotImplemented  # numpy moves split advanced indices first: past the batch
    if any(isinstance(x, Tensor) for x in items):
        return NotImplemented
    return _wrap(cls.apply(a._phys, index=(slice(None),) + items), level)


def _matmul(cls, level, inputs, kwargs):
    a, b = inputs
    la, lb = _lnd(a), _lnd(b)
    if la == 0 or lb == 0:
        return NotImplemented
    a2 = a.reshape((1,) + tuple(a.shape)) if la == 1 else a
    b2 = b.reshape(tuple(b.shape) + (1,)) if lb == 1 else b
    pa, pb = _aligned([a2, b2], level)
    out = BatchedTensor(cls.apply(pa, pb), level)
    shape = tuple(out.shape)
    if la == 1:
        shape = shape[:-2] + shape[-1:]
    if lb == 1:
        shape = shape[:-1]
    return out.reshape(shape) if shape != tuple(out.shape) else out


def _linear(cls, level, inputs, kwargs):
    x, w, b = inputs
    if not is_batched(w, level) and not is_batched(b, level):
        if not is_batched(x, level):
            return NotImplemented
        return _wrap(cls.apply(x._phys, w, b), level)
    # a weight per sample (ensembles, per-sample gradients): W x^T, so that W's gradient
    # comes out of one matmul in W's own layout (x W^T's is a transposed view: a strided copy
    # of every sample's weight gradient where it reaches the leaf)
    y = w @ x if x.ndim == 1 else (w @ x.transpose(-1, -2)).transpose(-1, -2)
    return y if b is None else y + b


def _layer_norm(cls, level, inputs, kwargs):
    x, w, b = inputs
    if not (is_batched(w, level) or is_batched(b, level)):
        return _first_only(cls, level, inputs, kwargs)
    if not is_batched(x, level):
        n = _size_at(level)
        x = BatchedTensor(x.reshape((1,) + tuple(x.shape)).expand((n,) + tuple(x.shape)), level)
    y = BatchedTensor(cls.apply(x._phys, None, None, **kwargs), level)  # a weight per sample
    y = y if w is None else y * w
    return y if b is None else y + b


_RULES: dict = {}


def _register():
    from . import ops_math as M
    from . import ops_shape as S
    from .nn.functional import activations as A
    from .nn.functional import dense as D

    for c in (M.Neg, M.Exp, M.Log, M.Log1p, M.Expm1, M.Tanh, M.Sqrt, M.Sin, M.Cos, M.Abs,
              M.Sigmoid, M.Relu, M.Cast, M.Add, M.Sub, M.Mul, M.Div, M.Pow, S.Where):
        _RULES[c] = _elementwise
    for c in (M.Sum, M.Mean, M.Var, M.Max, M.Min):
        _RULES[c] = _axis_rule()
    for c in (M.Cumsum, M.Prod):  # one axis
        _RULES[c] = _axis_rule(all_if_none=False)
    for c in (A.SoftmaxFn, A.LogSoftmaxFn):
        _RULES[c] = _axis_rule(all_if_none=False)
    _RULES[S.Split] = _axis_rule(all_if_none=False)
    _RULES[S.MaskedFill] = _masked_fill
    _RULES[S.Reshape] = _reshape
    _RULES[S.Transpose] = _transpose
    _RULES[S.Expand] = _expand
    _RULES[S.GetItem] = _getitem
    _RULES[S.Cat] = _joined
    _RULES[S.Stack] = _joined
    _RULES[M.MatMul] = _matmul
    _RULES[D.LinearFn] = _linear
    _RULES[A.LayerNormFn] = _layer_norm
    _register_more()


def _register_more():
    """The rules of :mod:`.vmap_rules_r30` for ``nn.functional``'s activations, layers and
    ops (registered here: that module imports none of the modules it serves)."""
    from . import ops_einsum as E
    from . import tensor_math_more as TM
    from . import tensor_more as TMo
    from . import vmap_rules_r30 as R
    from .nn.functional import activations as A
    from .nn.functional import activations_more as AM
    from .nn.functional import conv as C
    from .nn.functional import dense as D
    from .nn.functional import pad_modes as P

    for c in (A.GeluFn, A.SiluFn, AM._Hardswish, AM._LogSigmoid, P._HardTanh, P._Mish,
              TM._Unary, TM._Atan2, TMo._Clone):
        _RULES[c] = _elementwise
    _RULES[A.RMSNormFn] = _first_only
    _RULES[TM._Cumprod] = _axis_rule(all_if_none=False)
    for c in (C.MaxPool2dFn, C.AvgPool2dFn):
        _RULES[c] = R._merged_rows
    _RULES[C.Conv2dFn] = R._conv2d
    _RULES[C.Conv3x3WinogradFn] = R._conv2d  # the same inputs, kwargs and output
    from .nn.functional import conv_depthwise as DW

    _RULES[DW.DepthwiseConv2dFn] = R._depthwise_conv2d
    from .nn import conv3d as C3

    _RULES[C3.ConvNdFn] = R._conv_nd  # conv3d, batched weights too (round 34)
    _RULES[E.EinsumFn] = R._einsum
    _RULES[D.SDPAFn] = R._attention
    _RULES[A.BatchNormFn] = R._batch_norm
    from . import ops_scatter as OS

    _RULES[OS.ScatterReduceFn] = R._scatter_reduce
    _RULES[TM._IndexAdd] = R._index_add
    _RULES[A.DropoutFn] = _elementwise  # a per-sample mask (randomness="different")


# ---- a batched call ------------------------------------------------------------------------

_RANDOMNESS: dict = {}  # level -> the randomness of the batched call at that level


def _begin(n, randomness):
    if not _RULES:
        _register()
    level = (_LEVELS[-1][0] + 1) if _LEVELS else 1
    _LEVELS.append((level, n))
    _RANDOMNESS[level] = randomness
    saved = (_ag._batch_hook, _random._draw_hook, _random.batched_draw,
             _random.batched_draw_of)
    _ag._batch_hook = dispatch
    if randomness != "same":
        _random._draw_hook = _refuse
    different = randomness == "different"
    _random.batched_draw = draw_per_sample if different else None
    _random.batched_draw_of = draw_per_sample_of if different else None
    return level, saved


def _end(saved):
    level, _ = _LEVELS.pop()
    _RANDOMNESS.pop(level, None)
    (_ag._batch_hook, _random._draw_hook, _random.batched_draw,
     _random.batched_draw_of) = saved


def draw_per_sample(draw, shape, generator=None):
    """For a random op inside a batched call with ``randomness="different"`` (dropout in an
    ensemble trained by ``vmap``): ``draw(rng, (n,) + shape)`` once, as a tensor batched at
    this level, one independent draw per sample. None outside such a call (the op draws as
    usual, or is refused and the call loops)."""
    lv = current_level()
    if lv is None or _RANDOMNESS.get(lv[0]) != "different":
        return None
    level, n = lv
    hook, _random._draw_hook = _random._draw_hook, None
    try:
        arr = draw(_random.get_generator(generator), (n,) + tuple(shape))
    finally:
        _random._draw_hook = hook
    return BatchedTensor(Tensor._make(arr, False, None, 0), level)


def draw_per_sample_of(x, draw, generator=None):
    """As :func:`draw_per_sample` for a draw shaped by a tensor's values (``poisson`` of
    rates, ``multinomial`` of weights): ``draw(rng, values)`` once on the values of all
    samples, (n, ...) on the host (``x`` batched at this level, or the same for each sample).
    None where it cannot (outside such a call, ``x`` batched at another level, on a GPU):
    the op then runs as usual or the call loops."""
    lv = current_level()
    if lv is None or _RANDOMNESS.get(lv[0]) != "different":
        return None
    level, n = lv
    if isinstance(x, BatchedTensor):
        if x._level != level or isinstance(x._phys, BatchedTensor):
            return None
        values = x._phys._data
    elif isinstance(x, Tensor):
        values = np.broadcast_to(x._data, (n,) + tuple(x.shape)) if x.xp is np else None
    else:
        values = np.broadcast_to(np.asarray(x), (n,) + np.shape(x))
    if not isinstance(values, np.ndarray):
        return None
    hook, _random._draw_hook = _random._draw_hook, None
    try:
        arr = draw(_random.get_generator(generator), values)
    finally:
        _random._draw_hook = hook
    return BatchedTensor(Tensor._make(arr, False, None, 0), level)


def run_batched(func, args, kwargs, dims, n, out_dims, randomness, map_tree):
    """``func`` once on the batched arguments; its outputs with the batch on ``out_dims``.
    Raises NotBatchable where the call cannot be batched (the caller loops instead)."""
    level, saved = _begin(n, randomness)
    try:
        call = []
        for a, d in zip(args, dims):
            if d is None:
                call.append(a)
            else:
                call.append(map_tree(lambda t, d=d: BatchedTensor(
                    t if d % t.ndim == 0 else t.movedim(d, 0), level), a))
        out = func(*call, **kwargs)
        return _unwrap(out, out_dims, level, n)
    finally:
        _end(saved)


def _unwrap(out, out_dims, level, n):
    if isinstance(out, (tuple, list)) and not isinstance(out, Tensor):
        ods = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(out)
        parts = [_unwrap(o, od, level, n) for o, od in zip(out, ods)]
        return type(out)(*parts) if hasattr(out, "_fields") else type(out)(parts)
    if isinstance(out, dict):
        return {k: _unwrap(v, out_dims, level, n) for k, v in out.items()}
    if out_dims is None:
        raise NotBatchable("out_dims=None")
    if is_batched(out, level):
        p = out._phys
    elif isinstance(out, Tensor):
        p = out.reshape((1,) + tuple(out.shape)).expand((n,) + tuple(out.shape)).clone()
    elif isinstance(out, (int, float, bool, np.number)):
        from .tensor import tensor as make_tensor

        t = make_tensor(out)
        p = t.reshape((1,)).expand((n,)).clone()
    else:
        raise NotBatchable(f"an output of type {type(out).__name__}")
    od = int(out_dims) % p.ndim
    return p if od == 0 else p.movedim(0, od)
