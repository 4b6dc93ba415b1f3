"""torch's ``torch.nn.modules.upsampling``: the upsampling layers."""

from skiff.kernels.train.core.nn.conv import (  # noqa: F401
    Upsample,
)
from skiff.kernels.train.core.nn.layers_r28b import (  # noqa: F401
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
