"""torch's ``torch.nn.modules.linear``: the linear layers."""

from skiff.kernels.train.core.nn.layers import (  # noqa: F401
    Identity,
    Linear,
)
from skiff.kernels.train.core.nn.layers_r27 import (  # noqa: F401
    Bilinear,
)
from skiff.kernels.train.core.nn.layers_r28 import (  # noqa: F401
    LazyLinear,
)
