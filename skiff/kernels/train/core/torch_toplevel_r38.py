"""Round 38: torch's top-level names that ports call and skiff's ``functions`` lacked.
Most are torch's aliases of a Tensor method or an ``nn.functional`` function (``torch.le``,
``torch.greater``, ``torch.conv2d``, ``torch.layer_norm``, ...); new
here: ``frexp``, ``nextafter``, ``rsub``, ``dsplit``, ``cholesky_solve``,
``cholesky_inverse``, ``chain_matmul``, ``is_same_size``, ``result_type``,
``promote_types``, ``can_cast``, ``concat``/``concatenate``, ``asarray``.

Not yet in ``functions.__all__`` (the top-level list): ``skiff/api.py``'s written-out
``_TORCH_NAMES`` must take the same names in the same change (tests/test_dir_names_r28.py)."""

from __future__ import annotations

import numpy as np

from . import ops_linalg as _la
from .tensor import Tensor, cat

_METHOD_ALIASES = ("le", "greater", "greater_equal", "less", "less_equal", "not_equal",
                   "multiply", "subtract", "negative", "arctan2", "arcsin", "arctan", "gcd",
                   "lcm", "ldexp", "isposinf", "isneginf", "isreal", "is_signed", "igamma",
                   "igammac", "vdot", "addr", "addmv", "split_with_sizes", "qr",
                   "matrix_power", "is_inference", "fix_", "square_", "sinc_", "relu_",
                   "sigmoid_", "xlogy_", "nan_to_num_", "hsplit", "vsplit", "index_reduce")
# (torch's ATen ``embedding``, ``batch_norm``, ``instance_norm``, ``kl_div`` and the losses
# take other argument orders or an integer reduction: not aliased)
_FUNCTIONAL = {  # name -> the core module that defines it (skiff.nn is a layer above)
    "nn.functional": ("conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "pdist",
                      "layer_norm", "rms_norm", "group_norm", "prelu", "selu", "celu"),
    "nn.conv3d": ("conv3d", "max_pool3d"),
    "nn.conv_transpose_more": ("conv_transpose1d", "conv_transpose2d"),
    "nn.conv_transpose3d": ("conv_transpose3d",),
    "nn.layers_r27": ("adaptive_avg_pool1d", "bilinear", "alpha_dropout"),
    "nn.layers_r28b": ("adaptive_max_pool1d", "channel_shuffle"),
    "nn.pixel_pool": ("pixel_shuffle", "pixel_unshuffle"),
    "nn.layers_r28": ("rrelu",),
    "nn.layers_r38": ("feature_alpha_dropout",),
    "nn.layers_r28c": ("selu_", "celu_", "rrelu_"),
}

__all__ = [*_METHOD_ALIASES, *(n for ns in _FUNCTIONAL.values() for n in ns), "frexp",
           "nextafter", "rsub", "dsplit", "cholesky_solve", "cholesky_inverse",
           "chain_matmul", "is_same_size", "result_type", "promote_types", "can_cast",
           "concat", "concatenate", "asarray"]


def _method(name):
    def fn(input, *args, **kwargs):  # noqa: A002 - torch's name
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch's ``torch.{name}(input, ...)``: ``input.{name}(...)``."
    return fn


def _functional(module, name):
    def fn(*args, **kwargs):
        import importlib

        return getattr(importlib.import_module(f"{__package__}.{module}"), name)(*args,
                                                                                 **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch's ``torch.{name}``: ``nn.functional.{name}``."
    return fn


globals().update({n: _method(n) for n in _METHOD_ALIASES})
globals().update({n: _functional(mod, n) for mod, ns in _FUNCTIONAL.items() for n in ns})


def _t(x):
    return x if isinstance(x, Tensor) else Tensor._make(np.asarray(x), False, None, 0)


def frexp(input):  # noqa: A002
    """torch's ``frexp``: ``(mantissa, exponent)`` with ``input = mantissa * 2**exponent``
    (an int32 exponent; not differentiable, as torch's)."""
    m, e = np.frexp(np.asarray(_t(input).detach().numpy()))
    x = _t(input)
    return (Tensor._make(x.xp.asarray(m.astype(x.dtype)), False, None, 0),
            Tensor._make(x.xp.asarray(e.astype(np.int32)), False, None, 0))


def nextafter(input, other):  # noqa: A002
    """torch's ``nextafter``: the next representable value after ``input`` towards
    ``other``; its gradient is ``input``'s (1), as torch's."""
    a, b = _t(input), _t(other)
    out = np.nextafter(np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy()))
    step = Tensor._make(a.xp.asarray(out.astype(a.dtype)), False, None, 0) - a.detach()
    return a + step


def rsub(input, other, *, alpha=1):  # noqa: A002
    """torch's ``rsub``: ``other - alpha * input``."""
    return other - alpha * input


def dsplit(input, indices_or_sections):  # noqa: A002
    """torch's ``dsplit``: ``tensor_split`` along dim 2 (3-D and up)."""
    if input.ndim < 3:
        raise RuntimeError(f"torch.dsplit requires a tensor with at least 3 dimension, but got "
                           f"a tensor with {input.ndim} dimensions!")
    return input.tensor_split(indices_or_sections, 2)


def cholesky_solve(B, L, upper=False):  # noqa: N803 - torch's names
    """torch's ``cholesky_solve(B, L)``: ``(L L^T)^-1 B`` (``upper``: ``(U^T U)^-1 B``)."""
    if upper:
        L = L.swapaxes(-1, -2)
    z = _la.solve_triangular(L, B, upper=False)
    return _la.solve_triangular(L.swapaxes(-1, -2), z, upper=True)


def cholesky_inverse(L, upper=False):  # noqa: N803
    """torch's ``cholesky_inverse(L)``: ``(L L^T)^-1``."""
    eye = Tensor._make(L.xp.eye(L.shape[-1], dtype=L.dtype), False, None, 0)
    return cholesky_solve(eye, L, upper=upper)


def chain_matmul(*matrices):
    """torch's (deprecated) ``chain_matmul``: ``linalg.multi_dot``."""
    return _la.multi_dot(list(matrices))


def is_same_size(input, other):  # noqa: A002
    return tuple(input.shape) == tuple(other.shape)


def _group(x):
    """(0: dimensioned tensor, 1: 0-d tensor, 2: Python number; its dtype as torch's)."""
    if isinstance(x, Tensor):
        return (0 if x.ndim else 1), np.dtype(x.dtype)
    from .default_dtype import FLOAT

    if isinstance(x, bool):
        return 2, np.dtype(bool)
    if isinstance(x, int):
        return 2, np.dtype(np.int64)
    if isinstance(x, float):
        return 2, np.dtype(FLOAT)
    return 2, np.result_type(np.dtype(FLOAT), np.complex64)


def _promote(a, b):
    """torch's promotion of two dtypes: an integer or bool with a float takes the float
    (numpy's int32 + float32 is float64); otherwise numpy's."""
    if a.kind in "biu" and b.kind in "fc":
        return b
    if b.kind in "biu" and a.kind in "fc":
        return a
    return np.promote_types(a, b)


def _combine(higher, lower):
    """torch's ``combine_categories`` (c10's result-type rule)."""
    if higher is None:
        return lower
    if lower is None or higher.kind == "c":
        return higher
    if lower.kind == "c":
        return np.result_type(higher, np.complex64) if higher.kind == "f" else lower
    if higher.kind == "f":
        return higher
    if higher.kind == "b" or lower.kind == "f":
        return _promote(higher, lower)
    return higher


def result_type(tensor, other):
    """torch's ``result_type``: dimensioned tensors take precedence over 0-d tensors, and
    those over Python numbers, unless a lower group holds a higher category (bool < integer
    < float < complex); a Python float means the default float dtype."""
    groups = [None, None, None]
    for x in (tensor, other):
        g, dt = _group(x)
        groups[g] = dt if groups[g] is None else _promote(groups[g], dt)
    return _combine(groups[0], _combine(groups[1], groups[2]))


def promote_types(type1, type2):
    """torch's ``promote_types`` of two dtypes."""
    return _promote(np.dtype(type1), np.dtype(type2))


def can_cast(from_, to):
    """torch's ``can_cast``: no float -> integer, no complex -> real, nothing -> bool but
    bool."""
    rank = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
    return rank[np.dtype(from_).kind] <= rank[np.dtype(to).kind]


def concat(tensors, dim=0, *, axis=None):
    """torch's ``concat``/``concatenate``: ``cat``."""
    return cat(tensors, dim if axis is None else axis)


concatenate = concat


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """torch's ``asarray``: a tensor sharing ``obj``'s memory where it can (``copy=True``
    copies; ``functions.as_tensor``'s rule, written here: functions imports this module)."""
    t = obj
    if not (isinstance(obj, Tensor) and dtype is None and device is None):
        keep = dtype is None and hasattr(obj, "dtype") and hasattr(obj, "shape")
        t = Tensor(obj, dtype=obj.dtype if keep else dtype, device=device)
    if copy:
        t = t.clone().detach()
    return t.requires_grad_(True) if requires_grad else t
