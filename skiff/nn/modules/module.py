"""torch's ``torch.nn.modules.module``: ``Module``."""

from skiff.kernels.train.core.nn.module import (  # noqa: F401
    Module,
)
