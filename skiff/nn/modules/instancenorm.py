"""torch's ``torch.nn.modules.instancenorm``: the instance norms."""

from skiff.kernels.train.core.nn.layers_r27 import (  # noqa: F401
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
)
from skiff.kernels.train.core.nn.lazy_r37 import (  # noqa: F401
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
)
