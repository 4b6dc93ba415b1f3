"""torch's ``torch.nn.modules.dropout``: the dropout layers."""

from skiff.kernels.train.core.nn.layers import (  # noqa: F401
    Dropout,
)
from skiff.kernels.train.core.nn.layers_r27 import (  # noqa: F401
    AlphaDropout,
    Dropout3d,
)
from skiff.kernels.train.core.nn.layers_r38 import (  # noqa: F401
    FeatureAlphaDropout,
)
from skiff.kernels.train.core.nn.torch_activations import (  # noqa: F401
    Dropout1d,
    Dropout2d,
)
