"""torch's ``torch.nn.modules.flatten``: ``Flatten`` and ``Unflatten``."""

from skiff.kernels.train.core.nn.layers import (  # noqa: F401
    Flatten,
)
from skiff.kernels.train.core.nn.torch_layers import (  # noqa: F401
    Unflatten,
)
