"""torch's ``torch.nn.modules.padding``: the padding layers."""

from skiff.kernels.train.core.nn.layers_r28c import (  # noqa: F401
    ConstantPad3d,
    ZeroPad1d,
    ZeroPad3d,
)
from skiff.kernels.train.core.nn.layers_r38 import (  # noqa: F401
    CircularPad3d,
    ReflectionPad3d,
    ReplicationPad3d,
)
from skiff.kernels.train.core.nn.torch_layers import (  # noqa: F401
    CircularPad1d,
    CircularPad2d,
    ConstantPad1d,
    ConstantPad2d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    ZeroPad2d,
)
