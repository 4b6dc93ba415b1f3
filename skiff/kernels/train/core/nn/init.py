"""``nn.init``: torch's in-place initialisers (``normal_``, ``zeros_``, ``xavier_uniform_``,
``kaiming_normal_`` ...) with torch's arguments, fans and gains, drawing from skiff's seeded
generator (:mod:`..random`: the same seed gives the same weights; not torch's numbers).
Each fills ``tensor.data`` in place (no graph) and returns the tensor."""

from __future__ import annotations

import math

import numpy as np

from ..random import get_generator

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_",
           "orthogonal_", "trunc_normal_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "dirac_", "sparse_"]


def calculate_gain(nonlinearity: str, param=None) -> float:
    """torch's recommended gain for ``nonlinearity``."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"unknown nonlinearity {nonlinearity!r}: use one of {', '.join(linear)}, "
                     f"tanh, relu, leaky_relu, selu")


def _fans(tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError(f"fan in and fan out need at least 2 dimensions, got shape "
                         f"{tuple(tensor.shape)}")
    field = int(np.prod(tensor.shape[2:])) if tensor.ndim > 2 else 1
    return tensor.shape[1] * field, tensor.shape[0] * field


def _calculate_fan_in_and_fan_out(tensor) -> tuple[int, int]:
    """torch's private helper, which ported ``reset_parameters`` code calls (``fan_in, _ =
    init._calculate_fan_in_and_fan_out(self.weight)`` for a bias bound): ``(fan_in,
    fan_out)``; torch's ValueError below 2 dimensions."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than "
                         "2 dimensions")
    return _fans(tensor)


def _calculate_correct_fan(tensor, mode) -> int:
    """torch's private helper: the fan ``mode`` ("fan_in" or "fan_out") names."""
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of "
                         "['fan_in', 'fan_out']")
    return _calculate_fan_in_and_fan_out(tensor)[0 if mode == "fan_in" else 1]


def _fill(tensor, host: np.ndarray):
    xp = tensor.xp
    tensor._data[...] = host if xp is np else xp.asarray(host)
    return tensor


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    return _fill(tensor, get_generator(generator).uniform(a, b, tensor.shape))


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    return _fill(tensor, mean + std * get_generator(generator).standard_normal(tensor.shape))


def constant_(tensor, val: float):
    tensor._data[...] = val
    return tensor


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def eye_(tensor):
    if tensor.ndim != 2:
        raise ValueError(f"eye_ needs a 2-D tensor, got shape {tuple(tensor.shape)}")
    return _fill(tensor, np.eye(*tensor.shape))


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan = _fans(tensor)[0 if mode == "fan_in" else 1]
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None):
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None):
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor, gain: float = 1.0, generator=None):
    """torch's ``orthogonal_``: a (semi-)orthogonal matrix from the QR of a normal draw (the
    signs of R's diagonal folded in), the trailing axes flattened, times ``gain``."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows = tensor.shape[0]
    cols = int(np.prod(tensor.shape[1:]))
    flat = get_generator(generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, (gain * q).reshape(tensor.shape))


def dirac_(tensor, groups: int = 1):
    """torch's: a convolution weight (out, in, k...) that passes each of the first
    ``min(out / groups, in)`` input channels of a group through (1 at the kernel's centre)."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_ takes a 3-, 4- or 5-dimensional weight, got {tensor.ndim}")
    out, cin = tensor.shape[:2]
    if out % groups:
        raise ValueError(f"dirac_: {out} output channels do not split into {groups} groups")
    per = out // groups
    host = np.zeros(tuple(tensor.shape), dtype=tensor.dtype)
    centre = tuple(k // 2 for k in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(per, cin)):
            host[(g * per + d, d) + centre] = 1
    return _fill(tensor, host)


def sparse_(tensor, sparsity: float, std: float = 0.01, generator=None):
    """torch's: a 2-D weight drawn from N(0, std), then ``ceil(sparsity * rows)`` entries of
    each column set to zero (rows drawn per column)."""
    if tensor.ndim != 2:
        raise ValueError(f"sparse_ takes a 2-dimensional tensor, got {tensor.ndim}")
    rows, cols = tensor.shape
    rng = get_generator(generator)
    host = rng.normal(0.0, std, (rows, cols)).astype(tensor.dtype)
    zeros = int(math.ceil(sparsity * rows))
    for c in range(cols):
        host[rng.permutation(rows)[:zeros], c] = 0
    return _fill(tensor, host)


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None):
    """torch's ``trunc_normal_``: N(mean, std) restricted to [a, b] (absolute bounds, as
    torch's), by inverting the normal CDF on the truncated range."""
    from math import erf, sqrt

    lo, hi = ((a - mean) / std, (b - mean) / std)
    cdf = [(1 + erf(v / sqrt(2))) / 2 for v in (lo, hi)]
    u = get_generator(generator).uniform(cdf[0], cdf[1], tensor.shape)
    from scipy.special import ndtri

    return _fill(tensor, np.clip(mean + std * ndtri(u), a, b))



def _skip_meta(fn):
    """torch's: an init of a meta tensor does nothing (no values drawn, no memory)."""
    import functools

    from ..meta_r41 import is_meta

    @functools.wraps(fn)
    def wrapper(tensor, *args, **kwargs):
        if is_meta(getattr(tensor, "_data", None)):
            return tensor
        return fn(tensor, *args, **kwargs)

    return wrapper


for _name in [n for n in __all__ if n.endswith("_") and not n.startswith("_")]:
    globals()[_name] = _skip_meta(globals()[_name])
del _name
