"""torch's ``torch.nn.modules.activation``: the activations."""

from skiff.kernels.train.core.nn.encoder import (  # noqa: F401
    MultiheadAttention,
)
from skiff.kernels.train.core.nn.layers import (  # noqa: F401
    ELU,
    GELU,
    LeakyReLU,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from skiff.kernels.train.core.nn.layers_r27 import (  # noqa: F401
    Hardshrink,
    Softmax2d,
    Softshrink,
    Tanhshrink,
)
from skiff.kernels.train.core.nn.layers_r28 import (  # noqa: F401
    RReLU,
)
from skiff.kernels.train.core.nn.torch_activations import (  # noqa: F401
    CELU,
    GLU,
    SELU,
    Hardsigmoid,
    Hardswish,
    LogSigmoid,
    PReLU,
    Softmin,
    Softsign,
    Threshold,
)
from skiff.kernels.train.core.nn.torch_layers import (  # noqa: F401
    Hardtanh,
    LogSoftmax,
    Mish,
    ReLU6,
)
