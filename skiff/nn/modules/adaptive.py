"""torch's ``torch.nn.modules.adaptive``: ``AdaptiveLogSoftmaxWithLoss``."""

from skiff.kernels.train.core.nn.adaptive_softmax_r35 import (  # noqa: F401
    AdaptiveLogSoftmaxWithLoss,
)
