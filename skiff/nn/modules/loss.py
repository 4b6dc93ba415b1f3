"""torch's ``torch.nn.modules.loss``: the losses."""

from skiff.kernels.train.core.nn.layers_r28 import (  # noqa: F401
    CTCLoss,
    MultiMarginLoss,
)
from skiff.kernels.train.core.nn.layers_r28b import (  # noqa: F401
    MultiLabelMarginLoss,
    TripletMarginWithDistanceLoss,
)
from skiff.kernels.train.core.nn.loss import (  # noqa: F401
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    MSELoss,
)
from skiff.kernels.train.core.nn.torch_layers import (  # noqa: F401
    BCELoss,
    CosineEmbeddingLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MultiLabelSoftMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
    _Loss,  # noqa: E402,F401
)
