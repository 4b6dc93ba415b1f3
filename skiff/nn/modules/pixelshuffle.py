"""torch's ``torch.nn.modules.pixelshuffle``: pixel shuffling."""

from skiff.kernels.train.core.nn.pixel_pool import (  # noqa: F401
    PixelShuffle,
    PixelUnshuffle,
)
