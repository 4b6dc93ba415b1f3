"""torch's ``torch.nn.modules.normalization``: the normalization layers."""

from skiff.kernels.train.core.nn.layers import (  # noqa: F401
    GroupNorm,
    LayerNorm,
    RMSNorm,
)
from skiff.kernels.train.core.nn.layers_r28b import (  # noqa: F401
    LocalResponseNorm,
)
