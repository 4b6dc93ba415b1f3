"""``skiff.nn``: modules and layers (``skiff.nn.Linear``), and ``skiff.nn.functional``.

The public name of :mod:`skiff.kernels.train.core.nn`; the same classes."""

from skiff.kernels.train.core import nn as _real
from skiff.kernels.train.core.nn import (  # noqa: F401
    ELU,
    GELU,
    GRU,
    LSTM,
    AdaptiveAvgPool2d,
    AvgPool1d,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    BCEWithLogitsLoss,
    CausalSelfAttention,
    Conv1d,
    Conv2d,
    ConvTranspose2d,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    GroupNorm,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    MaxPool1d,
    MaxPool2d,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    MultiheadAttention,
    Parameter,
    ReLU,
    RMSNorm,
    Sequential,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
    TransformerBlock,
    TransformerEncoder,
    TransformerEncoderLayer,
    TransformerMLP,
    Upsample,
    skip_init,
)
from skiff.kernels.train.core.nn.torch_layers import (  # noqa: F401
    BCELoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    LogSoftmax,
    NLLLoss,
    SmoothL1Loss,
    Unflatten,
)

from . import functional, init, utils  # noqa: F401  (skiff.nn.functional, .init, .utils)

__all__ = list(_real.__all__)  # the same names as skiff.kernels.train.core.nn
