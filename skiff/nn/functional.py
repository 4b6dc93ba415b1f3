"""``skiff.nn.functional``: the functions behind the layers (``F.relu``, ``F.cross_entropy``).

The public name of :mod:`skiff.kernels.train.core.nn.functional`; the same functions."""

from skiff.kernels.train.core.nn import functional as _real
from skiff.kernels.train.core.nn.conv3d import (  # noqa: F401
    adaptive_avg_pool3d,
    avg_pool3d,
    conv3d,
    max_pool3d,
)
from skiff.kernels.train.core.nn.conv_transpose3d import conv_transpose3d  # noqa: F401
from skiff.kernels.train.core.nn.conv_transpose_more import (  # noqa: F401
    conv_transpose1d,
    conv_transpose2d,
)
from skiff.kernels.train.core.nn.embedding_bag import embedding_bag  # noqa: F401
from skiff.kernels.train.core.nn.encoder import multi_head_attention_forward  # noqa: F401
from skiff.kernels.train.core.nn.fold import fold, unfold  # noqa: F401
from skiff.kernels.train.core.nn.fractional_pool_r29b import (  # noqa: F401
    fractional_max_pool2d,
)
from skiff.kernels.train.core.nn.functional import *  # noqa: F403  (its __all__)
from skiff.kernels.train.core.nn.functional.ctc import ctc_loss  # noqa: F401
from skiff.kernels.train.core.nn.grid_sample import affine_grid, grid_sample  # noqa: F401
from skiff.kernels.train.core.nn.layers_r27 import (  # noqa: F401
    adaptive_avg_pool1d,
    alpha_dropout,
    bilinear,
    dropout3d,
    hardshrink,
    instance_norm,
    softshrink,
    tanhshrink,
)
from skiff.kernels.train.core.nn.layers_r28 import (  # noqa: F401
    gumbel_softmax,
    multi_margin_loss,
    rrelu,
)
from skiff.kernels.train.core.nn.layers_r28b import (  # noqa: F401
    adaptive_max_pool1d,
    channel_shuffle,
    local_response_norm,
    lp_pool1d,
    lp_pool2d,
    multilabel_margin_loss,
    triplet_margin_with_distance_loss,
)
from skiff.kernels.train.core.nn.layers_r28c import (  # noqa: F401
    celu_,
    elu_,
    hardtanh_,
    leaky_relu_,
    max_pool1d_with_indices,
    max_pool2d_with_indices,
    max_pool3d_with_indices,
    relu_,
    rrelu_,
    selu_,
    threshold_,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
from skiff.kernels.train.core.nn.layers_r38 import (  # noqa: F401
    adaptive_max_pool3d,
    feature_alpha_dropout,
    lp_pool3d,
)
from skiff.kernels.train.core.nn.pixel_pool import (  # noqa: F401
    adaptive_max_pool2d,
    pixel_shuffle,
    pixel_unshuffle,
)
from skiff.kernels.train.core.nn.unpool import (  # noqa: F401
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)

# the same names as skiff.kernels.train.core.nn.functional, and the pixel/pool ones beside
__all__ = [*_real.__all__, "adaptive_max_pool2d", "pixel_shuffle", "pixel_unshuffle",
           "embedding_bag", "adaptive_avg_pool1d", "bilinear", "hardshrink", "instance_norm",
           "softshrink", "tanhshrink", "conv_transpose1d", "conv_transpose2d",
           "unfold", "fold", "dropout3d", "alpha_dropout", "ctc_loss", "gumbel_softmax",
           "multi_margin_loss", "rrelu", "affine_grid", "grid_sample", "conv3d", "max_pool3d",
           "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "channel_shuffle",
           "local_response_norm", "lp_pool1d", "lp_pool2d", "multilabel_margin_loss",
           "triplet_margin_with_distance_loss", "conv_transpose3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d", "celu_", "elu_", "hardtanh_",
           "leaky_relu_", "relu_", "rrelu_", "selu_", "threshold_", "upsample",
           "upsample_bilinear", "upsample_nearest", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "fractional_max_pool2d",
           "adaptive_max_pool3d", "feature_alpha_dropout", "lp_pool3d",
           "multi_head_attention_forward"]
