"""torch's ``torch.nn.modules.fold``: ``Fold`` and ``Unfold``."""

from skiff.kernels.train.core.nn.fold import (  # noqa: F401
    Fold,
    Unfold,
)
