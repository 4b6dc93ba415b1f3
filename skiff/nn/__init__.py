"""``skiff.nn``: modules and layers (``skiff.nn.Linear``), and ``skiff.nn.functional``.

The public name of :mod:`skiff.kernels.train.core.nn`; the same classes."""

from skiff.kernels.train.core import nn as _real
from skiff.kernels.train.core.nn import *  # noqa: F403  (core.nn's __all__: Linear, ...)
from skiff.kernels.train.core.nn.adaptive_softmax_r35 import (  # noqa: F401
    AdaptiveLogSoftmaxWithLoss,
)
from skiff.kernels.train.core.nn.conv3d import (  # noqa: F401
    AdaptiveAvgPool3d,
    AvgPool3d,
    BatchNorm3d,
    Conv3d,
    MaxPool3d,
)
from skiff.kernels.train.core.nn.conv_transpose3d import ConvTranspose3d  # noqa: F401
from skiff.kernels.train.core.nn.conv_transpose_more import ConvTranspose1d  # noqa: F401
from skiff.kernels.train.core.nn.decoder import (  # noqa: F401
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
)
from skiff.kernels.train.core.nn.embedding_bag import EmbeddingBag  # noqa: F401
from skiff.kernels.train.core.nn.fold import Fold, Unfold  # noqa: F401
from skiff.kernels.train.core.nn.fractional_pool_r29b import (  # noqa: F401
    FractionalMaxPool2d,
)
from skiff.kernels.train.core.nn.layers_r27 import (  # noqa: F401
    AdaptiveAvgPool1d,
    AlphaDropout,
    Bilinear,
    Dropout3d,
    Hardshrink,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    Softmax2d,
    Softshrink,
    Tanhshrink,
)
from skiff.kernels.train.core.nn.layers_r28 import (  # noqa: F401
    CTCLoss,
    LazyLinear,
    MultiMarginLoss,
    RReLU,
)
from skiff.kernels.train.core.nn.layers_r28b import (  # noqa: F401
    AdaptiveMaxPool1d,
    ChannelShuffle,
    LocalResponseNorm,
    LPPool1d,
    LPPool2d,
    MultiLabelMarginLoss,
    TripletMarginWithDistanceLoss,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
from skiff.kernels.train.core.nn.layers_r28c import (  # noqa: F401
    Buffer,
    ConstantPad3d,
    DataParallel,
    SyncBatchNorm,
    ZeroPad1d,
    ZeroPad3d,
)
from skiff.kernels.train.core.nn.layers_r38 import (  # noqa: F401
    AdaptiveMaxPool3d,
    CircularPad3d,
    FeatureAlphaDropout,
    LPPool3d,
    ReflectionPad3d,
    ReplicationPad3d,
)
from skiff.kernels.train.core.nn.lazy_r37 import (  # noqa: F401
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
)
from skiff.kernels.train.core.nn.unpool import (  # noqa: F401
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
)

# core.nn's names, and nn/embedding_bag.py's, nn/decoder.py's
from skiff.kernels.train.core.nn.utils_r38 import RNNBase, RNNCellBase  # noqa: F401

# core.nn's __all__ names its own functional/init/utils modules: skiff.nn's are these
for _n in ("functional", "init", "utils"):
    globals().pop(_n, None)
del _n
from . import functional, init, modules, utils  # noqa: E402,F401  (skiff.nn.functional, ...)

__all__ = [*_real.__all__, "EmbeddingBag", "TransformerDecoderLayer", "TransformerDecoder",
           "Transformer", "Softshrink", "Hardshrink", "Tanhshrink", "Softmax2d",
           "AdaptiveAvgPool1d", "Bilinear", "InstanceNorm1d", "InstanceNorm2d",
           "ConvTranspose1d", "Unfold", "Fold", "Dropout3d", "AlphaDropout",
           "InstanceNorm3d", "CTCLoss", "Conv3d", "BatchNorm3d", "MaxPool3d", "AvgPool3d",
           "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "ChannelShuffle", "LocalResponseNorm",
           "LPPool1d", "LPPool2d", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss",
           "LazyLinear", "MultiMarginLoss", "RReLU", "ConvTranspose3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "UpsamplingNearest2d",
           "UpsamplingBilinear2d", "Buffer", "ConstantPad3d", "DataParallel", "SyncBatchNorm",
           "ZeroPad1d", "ZeroPad3d", "FractionalMaxPool2d", "AdaptiveLogSoftmaxWithLoss",
           "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
           "AdaptiveMaxPool3d", "CircularPad3d", "FeatureAlphaDropout", "LPPool3d",
           "ReflectionPad3d", "ReplicationPad3d", "RNNBase", "RNNCellBase"]
