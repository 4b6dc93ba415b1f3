"""torch's activation modules that wrap :mod:`.functional.activations_more`: ``Hardswish``,
``Hardsigmoid``, ``SELU``, ``CELU``, ``Softsign``, ``LogSigmoid``, ``GLU``, ``Softmin``,
``Threshold``, ``PReLU`` (a learnable slope, torch's ``num_parameters`` and ``init``) and the
channel dropouts ``Dropout1d``/``Dropout2d`` (identity in eval mode)."""

from __future__ import annotations

import numpy as np

from ..default_dtype import default_float
from . import functional as F
from .module import Module, Parameter

__all__ = ["Hardswish", "Hardsigmoid", "SELU", "CELU", "Softsign", "LogSigmoid", "GLU",
           "Softmin", "Threshold", "PReLU", "Dropout1d", "Dropout2d"]


def _simple(name, fn):
    def init(self, inplace=False):
        Module.__init__(self)

    return type(name, (Module,), {"__init__": init, "forward": lambda self, x: fn(x),
                                  "__doc__": f"torch's ``nn.{name}``."})


Hardswish = _simple("Hardswish", F.hardswish)
Hardsigmoid = _simple("Hardsigmoid", F.hardsigmoid)
SELU = _simple("SELU", F.selu)
Softsign = _simple("Softsign", F.softsign)
LogSigmoid = _simple("LogSigmoid", F.logsigmoid)


class CELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return F.celu(x, self.alpha)

    def extra_repr(self):
        return f"alpha={self.alpha}"


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.glu(x, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.softmin(x, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value = threshold, value

    def forward(self, x):
        return F.threshold(x, self.threshold, self.value)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}"


class PReLU(Module):
    def __init__(self, num_parameters=1, init=0.25, dtype=None, device=None):
        super().__init__()
        dtype = default_float(dtype)
        self.num_parameters = int(num_parameters)
        self.weight = Parameter(np.full(self.num_parameters, init, dtype=dtype), dtype=dtype)

    def forward(self, x):
        return F.prelu(x, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _ChannelDropout(Module):
    FN = None

    def __init__(self, p=0.5, inplace=False, generator=None):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.generator = p, generator
        self.inplace = bool(inplace)

    def forward(self, x):
        return type(self).FN(x, self.p, self.training, generator=self.generator)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_ChannelDropout):
    FN = staticmethod(F.dropout1d)


class Dropout2d(_ChannelDropout):
    FN = staticmethod(F.dropout2d)
