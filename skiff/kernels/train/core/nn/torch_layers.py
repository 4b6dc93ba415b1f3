"""torch's small modules that skiff had only as functions: ``LogSoftmax``, ``NLLLoss``,
``BCELoss``, ``L1Loss``, ``SmoothL1Loss``, ``HuberLoss``, ``KLDivLoss``, ``Unflatten``,
``Hardtanh``/``ReLU6``/``Mish`` and the padding layers (``ReflectionPad1d``/``2d``,
``ReplicationPad1d``/``2d``, ``CircularPad1d``/``2d``, ``ZeroPad2d``, ``ConstantPad1d``/``2d``),
with torch's arguments (each wraps the function of the same meaning in ``nn.functional``;
checked against torch in tests/kernels/train/core/test_torch_ports.py)."""

from __future__ import annotations

from . import functional as F
from .loss import _check_reduction
from .module import Module

__all__ = ["LogSoftmax", "NLLLoss", "BCELoss", "L1Loss", "SmoothL1Loss", "HuberLoss",
           "KLDivLoss", "Unflatten", "ParameterList", "ParameterDict", "Hardtanh", "ReLU6",
           "Mish", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
           "CircularPad1d", "CircularPad2d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d",
           "CosineSimilarity", "PairwiseDistance", "MarginRankingLoss", "HingeEmbeddingLoss",
           "SoftMarginLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
           "MultiLabelSoftMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss"]


class LogSoftmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = -1 if dim is None else dim
        self._dim_given = dim

    def forward(self, x):
        return F.log_softmax(x, dim=self.dim)

    def extra_repr(self):
        return f"dim={self._dim_given}"


class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        _check_reduction(reduction) if reduction != "batchmean" else None
        self.reduction = reduction


class NLLLoss(_Loss):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.weight, self.ignore_index = weight, ignore_index

    def forward(self, input, target):  # noqa: A002 - torch's names
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class BCELoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        if isinstance(weight, str):
            weight, reduction = None, weight
        super().__init__(reduction)
        self.weight = weight

    def forward(self, input, target):  # noqa: A002
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):  # noqa: A002
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input, target):  # noqa: A002
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input, target):  # noqa: A002
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    def __init__(self, reduction="mean", log_target=False):
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input, target):  # noqa: A002
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class Unflatten(Module):
    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.sizes = dim, tuple(unflattened_size)

    def forward(self, x):
        dim = self.dim % x.ndim
        return x.reshape(*x.shape[:dim], *self.sizes, *x.shape[dim + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.sizes}"


class ParameterList(Module):
    """torch's ``ParameterList``: parameters registered as ``0``, ``1``, ... (plain tensors
    become parameters)."""

    def __init__(self, values=None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def append(self, value):
        from .module import Parameter

        if not isinstance(value, Parameter):
            value = Parameter(value, dtype=getattr(value, "dtype", None))
        self.register_parameter(str(len(self._parameters)), value)
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def __getitem__(self, i):
        return list(self._parameters.values())[i]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())


class ParameterDict(Module):
    """torch's ``ParameterDict``: named parameters, read and set like a dict."""

    def __init__(self, parameters=None):
        super().__init__()
        for k, v in dict(parameters or {}).items():
            self[k] = v

    def __setitem__(self, key, value):
        from .module import Parameter

        if not isinstance(value, Parameter):
            value = Parameter(value, dtype=getattr(value, "dtype", None))
        self.register_parameter(key, value)

    def __getitem__(self, key):
        return self._parameters[key]

    def __contains__(self, key) -> bool:
        return key in self._parameters

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    # round 44 (h12): the rest of torch's dict methods (``update`` was an AttributeError)
    def update(self, parameters):
        """torch's: from a mapping, a ``ParameterDict`` or an iterable of (key, value)."""
        pairs = parameters.items() if hasattr(parameters, "items") else parameters
        for j, pair in enumerate(pairs):
            if len(pair) != 2:
                raise ValueError(f"ParameterDict update sequence element #{j} has length "
                                 f"{len(pair)}; 2 is required")
            self[pair[0]] = pair[1]

    def __delitem__(self, key):
        del self._parameters[key]

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def popitem(self):
        key = next(reversed(self._parameters))
        return key, self.pop(key)

    def get(self, key, default=None):
        return self._parameters[key] if key in self._parameters else default

    def setdefault(self, key, default=None):
        if key not in self._parameters:
            self[key] = default
        return self[key]

    def clear(self):
        self._parameters.clear()

    def copy(self):
        return ParameterDict(dict(self._parameters))

    @classmethod
    def fromkeys(cls, keys, default=None):
        return cls({k: default for k in keys})

    def __reversed__(self):
        return reversed(list(self._parameters))


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        self.min_val, self.max_val = min_val, max_val

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class ReLU6(Module):
    def __init__(self, inplace=False):
        super().__init__()

    def forward(self, x):
        return F.relu6(x)


class Mish(Module):
    def __init__(self, inplace=False):
        super().__init__()

    def forward(self, x):
        return F.mish(x)


class _Pad(Module):
    mode, dims = "constant", 1

    def __init__(self, padding, value=0.0):
        super().__init__()
        n = 2 * self.dims
        self.padding = (padding,) * n if isinstance(padding, int) else tuple(padding)
        if len(self.padding) != n:
            raise ValueError(f"{type(self).__name__} takes an int or {n} amounts, got {padding}")
        self.value = value

    def forward(self, x):
        return F.pad(x, self.padding, mode=self.mode, value=self.value) \
            if self.mode == "constant" else F.pad(x, self.padding, mode=self.mode)

    def extra_repr(self):
        return f"{self.padding}"


def _pad_class(name, mode, dims, value_arg):
    def init(self, padding, value=0.0):
        _Pad.__init__(self, padding, value)

    def init_no_value(self, padding):
        _Pad.__init__(self, padding)

    return type(name, (_Pad,), {"mode": mode, "dims": dims,
                                "__init__": init if value_arg else init_no_value})


ReflectionPad1d = _pad_class("ReflectionPad1d", "reflect", 1, False)
ReflectionPad2d = _pad_class("ReflectionPad2d", "reflect", 2, False)
ReplicationPad1d = _pad_class("ReplicationPad1d", "replicate", 1, False)
ReplicationPad2d = _pad_class("ReplicationPad2d", "replicate", 2, False)
CircularPad1d = _pad_class("CircularPad1d", "circular", 1, False)
CircularPad2d = _pad_class("CircularPad2d", "circular", 2, False)
ZeroPad2d = _pad_class("ZeroPad2d", "constant", 2, False)
ConstantPad1d = _pad_class("ConstantPad1d", "constant", 1, True)
ConstantPad2d = _pad_class("ConstantPad2d", "constant", 2, True)


class CosineSimilarity(Module):
    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


def _loss_class(name, fn, options, n_inputs):
    """A module over ``fn`` with torch's constructor options and ``reduction``."""

    def init(self, *args, reduction="mean", **kwargs):
        _Loss.__init__(self, reduction)
        given = dict(zip(options, args))
        given.update(kwargs)
        for k, v in options.items():
            setattr(self, k, given.get(k, v))

    def forward(self, *inputs):
        if len(inputs) != n_inputs:
            raise TypeError(f"{name} takes {n_inputs} inputs, got {len(inputs)}")
        return fn(*inputs, **{k: getattr(self, k) for k in options},
                  reduction=self.reduction)

    return type(name, (_Loss,), {"__init__": init, "forward": forward,
                                 "__doc__": f"torch's ``nn.{name}``."})


MarginRankingLoss = _loss_class("MarginRankingLoss", F.margin_ranking_loss, {"margin": 0.0}, 3)
HingeEmbeddingLoss = _loss_class("HingeEmbeddingLoss", F.hinge_embedding_loss, {"margin": 1.0}, 2)
SoftMarginLoss = _loss_class("SoftMarginLoss", F.soft_margin_loss, {}, 2)
CosineEmbeddingLoss = _loss_class("CosineEmbeddingLoss", F.cosine_embedding_loss,
                                   {"margin": 0.0}, 3)
TripletMarginLoss = _loss_class("TripletMarginLoss", F.triplet_margin_loss,
                                 {"margin": 1.0, "p": 2.0, "eps": 1e-6, "swap": False}, 3)
MultiLabelSoftMarginLoss = _loss_class("MultiLabelSoftMarginLoss", F.multilabel_soft_margin_loss,
                                        {"weight": None}, 2)
PoissonNLLLoss = _loss_class("PoissonNLLLoss", F.poisson_nll_loss,
                              {"log_input": True, "full": False, "eps": 1e-8}, 2)
GaussianNLLLoss = _loss_class("GaussianNLLLoss", F.gaussian_nll_loss,
                               {"full": False, "eps": 1e-6}, 3)
