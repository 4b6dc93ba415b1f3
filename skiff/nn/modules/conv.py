"""torch's ``torch.nn.modules.conv``: the convolutions."""

from skiff.kernels.train.core.nn.conv import (  # noqa: F401
    Conv1d,
    Conv2d,
    ConvTranspose2d,
)
from skiff.kernels.train.core.nn.conv3d import (  # noqa: F401
    Conv3d,
)
from skiff.kernels.train.core.nn.conv_transpose3d import (  # noqa: F401
    ConvTranspose3d,
)
from skiff.kernels.train.core.nn.conv_transpose_more import (  # noqa: F401
    ConvTranspose1d,
)
from skiff.kernels.train.core.nn.lazy_r37 import (  # noqa: F401
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
)
