"""``skiff.nn``: modules, layers and ``skiff.nn.functional``."""

from . import functional
from .attention import CausalSelfAttention, TransformerBlock, TransformerMLP
from .conv import (
    AdaptiveAvgPool2d,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    Conv1d,
    Conv2d,
    MaxPool2d,
)
from .encoder import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from .layers import (
    GELU,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    ReLU,
    RMSNorm,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
    skip_init,
)
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss
from .module import Module, ModuleDict, ModuleList, Parameter, Sequential
from .recurrent import GRU, LSTM

__all__ = [
    "functional",
    "Module",
    "ModuleList",
    "ModuleDict",
    "Sequential",
    "Parameter",
    "Linear",
    "LSTM",
    "GRU",
    "Conv1d",
    "AdaptiveAvgPool2d",
    "MultiheadAttention",
    "TransformerEncoderLayer",
    "TransformerEncoder",
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
    "Conv2d",
    "BatchNorm2d",
    "MaxPool2d",
    "AvgPool2d",
    "CausalSelfAttention",
    "TransformerMLP",
    "TransformerBlock",
    "MSELoss",
    "CrossEntropyLoss",
    "BCEWithLogitsLoss",
    "Sigmoid",
    "Softmax",
    "LeakyReLU",
    "BatchNorm1d",
    "skip_init",
]
