"""torch's ``torch.nn.modules.container``: the containers."""

from skiff.kernels.train.core.nn.module import (  # noqa: F401
    ModuleDict,
    ModuleList,
    Sequential,
)
from skiff.kernels.train.core.nn.torch_layers import (  # noqa: F401
    ParameterDict,
    ParameterList,
)
