"""Basic layers: Linear, Embedding, norms, dropout, activations, Flatten.

Initialisation follows torch's defaults (so a freshly built model trains alike) and draws from
:mod:`skiff.kernels.train.core.random`: the same seed gives the same weights.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from .. import meta_r41 as _meta
from ..default_dtype import default_float
from ..random import get_generator
from . import functional as F
from .module import Module, Parameter

__all__ = [
    "Linear",
    "Embedding",
    "LayerNorm",
    "RMSNorm",
    "Dropout",
    "ReLU",
    "GELU",
    "SiLU",
    "Tanh",
    "Flatten",
    "Identity",
    "uniform_",
    "normal_",
    "skip_init",
    "skipping_init",
]


def _positive(name, value):
    if not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


class _InitMode(threading.local):
    skip = False


_init_mode = _InitMode()


class skip_init:
    """Context manager: Linear, Embedding and Conv2d weights made inside are left
    uninitialised (``np.empty``: no random numbers drawn, no memory touched) and the shared
    generator is not advanced, for a model whose weights are loaded next (a checkpoint)."""

    def __enter__(self):
        self.prev = _init_mode.skip
        _init_mode.skip = True
        return self

    def __exit__(self, *exc):
        _init_mode.skip = self.prev
        return False


def skipping_init() -> bool:
    """True inside :class:`skip_init` (a model whose weights are loaded next)."""
    return _init_mode.skip


def uniform_(shape, bound, generator=None, dtype=None) -> np.ndarray:
    """U(-bound, bound) samples from the seeded generator."""
    dtype = default_float(dtype)
    if _meta._DEPTH[0]:  # built on torch's meta device: a shape and dtype, nothing drawn
        return _meta.meta_array(shape, dtype)
    if _init_mode.skip:
        return np.empty(shape, dtype=dtype)
    return get_generator(generator).uniform(-bound, bound, size=shape).astype(dtype)


def normal_(shape, std, generator=None, dtype=None) -> np.ndarray:
    """N(0, std^2) samples from the seeded generator."""
    dtype = default_float(dtype)
    if _meta._DEPTH[0]:  # built on torch's meta device: a shape and dtype, nothing drawn
        return _meta.meta_array(shape, dtype)
    if _init_mode.skip:
        return np.empty(shape, dtype=dtype)
    return (get_generator(generator).standard_normal(shape) * std).astype(dtype)


class Linear(Module):
    """``y = x @ weight.T + bias``; weight (out_features, in_features) like torch."""

    def __init__(self, in_features, out_features, bias=True, generator=None, dtype=None):
        super().__init__()
        dtype = default_float(dtype)
        self.in_features = _positive("in_features", in_features)
        self.out_features = _positive("out_features", out_features)
        bound = 1.0 / math.sqrt(in_features)
        self.weight = Parameter(uniform_((out_features, in_features), bound, generator, dtype),
                                dtype=dtype)
        self.bias = (Parameter(uniform_((out_features,), bound, generator, dtype), dtype=dtype)
                     if bias else None)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Embedding(Module):
    """A (num_embeddings, embedding_dim) table looked up by integer indices."""

    def __init__(self, num_embeddings, embedding_dim, generator=None, dtype=None,
                 padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 sparse=False, _weight=None, _freeze=False, device=None):
        super().__init__()
        if isinstance(generator, (int, np.integer)) and not isinstance(generator, bool):
            generator, padding_idx = None, generator  # torch's Embedding(n, d, padding_idx)
        self.max_norm, self.norm_type, self.sparse = max_norm, norm_type, sparse
        self.scale_grad_by_freq = bool(scale_grad_by_freq)
        dtype = default_float(dtype)
        self.num_embeddings = _positive("num_embeddings", num_embeddings)
        self.embedding_dim = _positive("embedding_dim", embedding_dim)
        table = normal_((num_embeddings, embedding_dim), 1.0, generator, dtype)
        if padding_idx is not None:  # torch's: that row starts at zero and learns nothing
            if not -num_embeddings <= int(padding_idx) < num_embeddings:
                raise ValueError(f"padding_idx {padding_idx} is outside the table of "
                                 f"{num_embeddings} rows")
            padding_idx = int(padding_idx) % num_embeddings
            table[padding_idx] = 0
        self.padding_idx = padding_idx
        self.weight = Parameter(table, dtype=dtype)
        if _weight is not None:  # torch's: the table given (kept as is)
            self.weight = Parameter(_weight, requires_grad=not _freeze)
        if device is not None:
            self.to(device)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        """torch's: a layer on the (n, d) table ``embeddings`` (its dtype kept), frozen unless
        ``freeze=False``; the ``padding_idx`` row is kept as given (torch does not zero it)."""
        if getattr(embeddings, "ndim", 0) != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional, got shape "
                             f"{tuple(getattr(embeddings, 'shape', ()))}")
        n, d = embeddings.shape
        layer = cls(n, d, dtype=embeddings.dtype, padding_idx=padding_idx, max_norm=max_norm,
                    norm_type=norm_type, sparse=sparse, scale_grad_by_freq=scale_grad_by_freq)
        layer.weight = Parameter(embeddings, requires_grad=not freeze)
        return layer

    def forward(self, idx):
        # padding: the row's values (torch's: a pretrained padding row need not be zero), no
        # gradient (F.embedding's padding_idx)
        return F.embedding(idx, self.weight, padding_idx=self.padding_idx,
                           max_norm=self.max_norm, norm_type=self.norm_type,
                           scale_grad_by_freq=getattr(self, "scale_grad_by_freq", False))

    def extra_repr(self):  # torch's: the options that differ from the defaults
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += ", scale_grad_by_freq=True"
        if self.sparse:
            s += ", sparse=True"
        return s


class LayerNorm(Module):
    """torch's layer norm over the last ``len(normalized_shape)`` axes (an int: the last),
    with a learnable scale and shift of that shape (none without ``elementwise_affine``; no
    shift without ``bias``)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 dtype=None):
        super().__init__()
        dtype = default_float(dtype)
        shape = ((normalized_shape,) if isinstance(normalized_shape, (int, np.integer))
                 else tuple(normalized_shape))
        self.normalized_shape = tuple(_positive("normalized_shape", n) for n in shape)
        if not self.normalized_shape:
            raise ValueError("normalized_shape needs at least one axis, got ()")
        self.dim = int(np.prod(self.normalized_shape))
        self.eps = eps
        self.elementwise_affine = bool(elementwise_affine)
        affine = self.elementwise_affine
        self.weight = (Parameter(np.ones(self.normalized_shape, dtype=dtype), dtype=dtype)
                       if affine else None)
        self.bias = (Parameter(np.zeros(self.normalized_shape, dtype=dtype), dtype=dtype)
                     if affine and bias else None)

    def forward(self, x):
        n = len(self.normalized_shape)
        if tuple(x.shape[x.ndim - n:]) != self.normalized_shape or x.ndim < n:
            raise ValueError(f"LayerNorm({list(self.normalized_shape)}) got input of shape "
                             f"{tuple(x.shape)}")
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """RMS norm over the last axis (or torch's ``normalized_shape``: the last axes) with a
    learnable scale (none with ``elementwise_affine=False``). ``eps=None`` is torch's default
    (the float eps of the dtype it computes in); skiff's default stays 1e-6."""

    def __init__(self, dim, eps=1e-6, dtype=None, elementwise_affine=True, device=None):
        super().__init__()
        dtype = default_float(dtype)
        shape = (dim,) if isinstance(dim, int) else tuple(int(d) for d in dim)
        for d in shape:
            _positive("dim", d)
        self.normalized_shape = shape
        self.dim = shape[0] if len(shape) == 1 else shape
        self.eps = eps
        self.elementwise_affine = bool(elementwise_affine)
        self.weight = Parameter(np.ones(shape, dtype=dtype), dtype=dtype) \
            if self.elementwise_affine else None

    def forward(self, x):
        if len(self.normalized_shape) == 1 and self.eps is not None:
            return F.rms_norm(x, self.weight, self.eps)
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class Dropout(Module):
    def __init__(self, p=0.5, generator=None, inplace=False):
        super().__init__()
        if isinstance(generator, bool):  # torch's Dropout(p, inplace)
            generator, inplace = None, generator
        self.inplace = bool(inplace)  # accepted for torch's code; the result is a new tensor
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p!r}")
        self.p = p
        self.generator = generator

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.generator)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = bool(inplace)  # accepted for torch's code; the result is a new tensor

    def forward(self, x):
        return F.relu(x)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """GELU, exact (erf) by default as torch's; ``approximate="tanh"``: GPT-2's."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("tanh", "none"):
            raise ValueError(f"approximate must be 'tanh' or 'none', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = bool(inplace)

    def forward(self, x):
        return F.silu(x)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    def forward(self, x):
        return x.tanh()


class Flatten(Module):
    """Flatten axes ``start_axis..end_axis`` (default: all but the batch axis)."""

    def __init__(self, start_axis=1, end_axis=-1, *, start_dim=None, end_dim=None):
        super().__init__()
        # torch's names are start_dim/end_dim (skiff's start_axis/end_axis stay)
        self.start_axis = start_axis if start_dim is None else start_dim
        self.end_axis = end_axis if end_dim is None else end_dim

    def forward(self, x):
        return x.flatten(self.start_axis, self.end_axis)

    def extra_repr(self):
        return f"start_dim={self.start_axis}, end_dim={self.end_axis}"


class Identity(Module):
    """torch's: any arguments accepted and ignored (round 44: ``Identity(54, foo=1)``, the
    stand-in for a layer's constructor call, was a TypeError)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Sigmoid(Module):
    def forward(self, x):
        return x.sigmoid()


class Softmax(Module):
    """Softmax over ``dim`` (torch's; ``axis=`` the same; default the last)."""

    def __init__(self, dim: int | None = None, *, axis: int | None = None):
        super().__init__()
        self.axis = -1 if dim is None and axis is None else (dim if axis is None else axis)
        self.dim = dim if axis is None else axis  # torch's attribute (None: the last)

    def forward(self, x):
        return F.softmax(x, axis=self.axis)

    def extra_repr(self):
        return f"dim={self.dim}"


class LeakyReLU(Module):
    """``max(x, 0) + negative_slope * min(x, 0)``."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.inplace = bool(inplace)
        self.negative_slope = float(negative_slope)

    def forward(self, x):  # F.leaky_relu: torch's gradient at 0 (the slope; the old
        # relu(x) - slope relu(-x) gave 0) and its gradient in the graph (round 47)
        from .functional.extra import leaky_relu
        return leaky_relu(x, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class GroupNorm(Module):
    """Normalise each sample over groups of channels (torch.nn.GroupNorm: weight and bias per
    channel, ones and zeros at first)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, dtype=None):
        super().__init__()
        dtype = default_float(dtype)
        self.num_groups = _positive("num_groups", num_groups)
        self.num_channels = _positive("num_channels", num_channels)
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: {num_channels} channels are not divisible into "
                             f"{num_groups} groups")
        self.eps = float(eps)
        self.weight = Parameter(np.ones(num_channels, dtype), dtype=dtype) if affine else None
        self.bias = Parameter(np.zeros(num_channels, dtype), dtype=dtype) if affine else None

    def forward(self, x):
        from .functional.extra import group_norm

        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.weight is not None}, bias={self.bias is not None}")


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.inplace = bool(inplace)
        self.alpha = float(alpha)

    def forward(self, x):
        from .functional.extra import elu

        return elu(x, self.alpha)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = float(beta), float(threshold)

    def forward(self, x):
        from .functional.extra import softplus

        return softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"
