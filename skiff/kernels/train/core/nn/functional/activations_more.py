"""More of torch's activations, with torch's gradients: ``hardswish``, ``hardsigmoid``,
``selu``, ``celu``, ``softsign``, ``logsigmoid``, ``glu``, ``softmin``, ``threshold``,
``prelu``, and the channel dropouts ``dropout1d``/``dropout2d``. Built from skiff's
differentiable ops, except ``hardswish`` and ``logsigmoid``
(nodes: torch's gradient at the kinks, and a stable one).
tests/kernels/train/core/test_torch_gaps_r26.py compares each with torch in float64, value
and gradient.
"""

from __future__ import annotations

from ...autograd import Function, xp_of
from ...tensor import Tensor, where
from .activations import softmax
from .extra import elu
from .pad_modes import hardtanh

__all__ = ["hardswish", "hardsigmoid", "selu", "celu", "softsign", "logsigmoid", "glu",
           "softmin", "threshold", "prelu", "dropout1d", "dropout2d"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


class _Hardswish(Function):
    """``x * relu6(x + 3) / 6``; gradient 0 up to -3, ``x / 3 + 0.5`` between, 1 from 3 on
    (torch's values at the kinks)."""

    def forward(self, x):
        self.save_for_backward(x)
        return x * xp_of(x).clip(x + 3, 0, 6).astype(x.dtype, copy=False) / 6

    def backward(self, g):
        (x,) = self.saved
        xp = xp_of(x)
        d = xp.where(x <= -3, 0, xp.where(x < 3, x / 3 + 0.5, 1)).astype(g.dtype, copy=False)
        return g * d


def hardswish(x: Tensor, inplace: bool = False) -> Tensor:
    return _Hardswish.apply(x)


def hardsigmoid(x: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(x + 3.0, 0.0, 6.0) * (1.0 / 6)


def selu(x: Tensor, inplace: bool = False) -> Tensor:
    return elu(x, _SELU_ALPHA) * _SELU_SCALE


def celu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0")
    return elu(x * (1.0 / alpha), 1.0) * alpha


def softsign(x: Tensor) -> Tensor:
    return x / (x.abs() + 1.0)


class _LogSigmoid(Function):
    """``log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))``, stable for large |x|; the gradient
    ``sigmoid(-x)`` from the same ``exp(-|x|)`` (0.5 at 0, as torch)."""

    def forward(self, x):
        xp = xp_of(x)
        z = xp.exp(-xp.abs(x))
        self.save_for_backward(x, z)
        return xp.minimum(x, 0) - xp.log1p(z)

    def backward(self, g):
        x, z = self.saved
        q = z / (1 + z)
        return g * xp_of(x).where(x < 0, 1 - q, q)


def logsigmoid(x: Tensor) -> Tensor:
    return _LogSigmoid.apply(x)


def glu(x: Tensor, dim: int = -1) -> Tensor:
    if x.shape[dim] % 2:
        raise ValueError(f"glu halves axis {dim}: its size {x.shape[dim]} must be even")
    a, b = x.chunk(2, dim=dim)
    return a * b.sigmoid()


def softmin(x: Tensor, dim=None, _stacklevel=3, dtype=None) -> Tensor:
    if dim is None:
        raise ValueError("softmin: give dim (torch's implicit choice is deprecated)")
    return softmax(-x, dim=dim)


def threshold(x: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` where ``x > threshold`` else ``value``."""
    from .piecewise_r47 import piecewise_linear  # its gradient in the graph (round 47)
    return piecewise_linear(x, "threshold", threshold, value)


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    """``x`` where ``x > 0`` else ``weight * x``, ``weight`` one per channel (axis 1) or one."""
    if weight.size not in (1,) and (x.ndim < 2 or weight.size != x.shape[1]):
        raise ValueError(f"prelu: weight of {weight.size} values for input of shape "
                         f"{tuple(x.shape)} (one, or one per channel on axis 1)")
    from ... import autocast_ops as _ac
    if _ac.LOW is not None:  # autocast("cpu"): prelu is on torch's lower-precision list
        x, weight = _ac.low(x, weight)
    w = weight.reshape(-1)
    if weight.size != 1:
        w = w.reshape(w.shape[0], *([1] * (x.ndim - 2)))
    elif x.ndim == 0:
        w = w.reshape(())
    return where(x._data > 0, x, x * w)


def _channel_dropout(x, p, training, generator, spatial, what):
    """Zero whole channels (axis 1 of (N, C, *spatial), or axis 0 unbatched) with probability
    ``p``, the rest scaled by 1/(1-p): one mask per (sample, channel), broadcast."""
    from ...random import get_generator
    from .activations import DropoutFn

    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ValueError(f"{what} expects a {spatial + 2}-D (N, C, ...) or {spatial + 1}-D "
                         f"(C, ...) input, got {tuple(x.shape)}")
    if not training or p == 0.0:
        return x
    lead = x.ndim - spatial
    shape = tuple(x.shape[:lead]) + (1,) * spatial
    if p == 1.0:
        return x * 0.0
    keep = get_generator(generator).random(shape) >= p
    mask = x.xp.asarray(keep.astype(x.dtype))
    return DropoutFn.apply(x, mask, scale=1.0 / (1.0 - p))


def dropout1d(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,
              generator=None) -> Tensor:
    return _channel_dropout(x, p, training, generator, 1, "dropout1d")


def dropout2d(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,
              generator=None) -> Tensor:
    """A 3-D input is read as (N, C, L), channel-wise 1-D dropout, as torch does (it warns)."""
    return _channel_dropout(x, p, training, generator, 1 if x.ndim == 3 else 2, "dropout2d")
