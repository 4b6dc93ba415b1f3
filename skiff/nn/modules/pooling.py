"""torch's ``torch.nn.modules.pooling``: the pooling layers."""

from skiff.kernels.train.core.nn.conv import (  # noqa: F401
    AdaptiveAvgPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from skiff.kernels.train.core.nn.conv3d import (  # noqa: F401
    AdaptiveAvgPool3d,
    AvgPool3d,
    MaxPool3d,
)
from skiff.kernels.train.core.nn.fractional_pool_r29b import (  # noqa: F401
    FractionalMaxPool2d,
)
from skiff.kernels.train.core.nn.layers_r27 import (  # noqa: F401
    AdaptiveAvgPool1d,
)
from skiff.kernels.train.core.nn.layers_r28b import (  # noqa: F401
    AdaptiveMaxPool1d,
    LPPool1d,
    LPPool2d,
)
from skiff.kernels.train.core.nn.layers_r38 import (  # noqa: F401
    AdaptiveMaxPool3d,
    LPPool3d,
)
from skiff.kernels.train.core.nn.pixel_pool import (  # noqa: F401
    AdaptiveMaxPool2d,
)
from skiff.kernels.train.core.nn.unpool import (  # noqa: F401
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
)
