"""torch's ``torch.nn.modules.batchnorm``: the batch norms and their base ``_BatchNorm``
(``isinstance(m, _BatchNorm)``: every batch norm, as torch's; ``_NormBase`` the same)."""

from skiff.kernels.train.core.nn.conv import (  # noqa: F401
    BatchNorm1d,
    BatchNorm2d,
    _BatchNorm,
)
from skiff.kernels.train.core.nn.conv3d import (  # noqa: F401
    BatchNorm3d,
)
from skiff.kernels.train.core.nn.layers_r28c import (  # noqa: F401
    SyncBatchNorm,
)
from skiff.kernels.train.core.nn.lazy_r37 import (  # noqa: F401
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
)

_NormBase = _BatchNorm
