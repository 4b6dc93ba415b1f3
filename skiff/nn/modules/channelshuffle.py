"""torch's ``torch.nn.modules.channelshuffle``: ``ChannelShuffle``."""

from skiff.kernels.train.core.nn.layers_r28b import (  # noqa: F401
    ChannelShuffle,
)
