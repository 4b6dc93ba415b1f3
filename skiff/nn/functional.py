"""``skiff.nn.functional``: the functions behind the layers (``F.relu``, ``F.cross_entropy``).

The public name of :mod:`skiff.kernels.train.core.nn.functional`; the same functions."""

from skiff.kernels.train.core.nn import functional as _real
from skiff.kernels.train.core.nn.functional import (  # noqa: F401
    avg_pool2d,
    batch_norm,
    conv2d,
    cross_entropy,
    dropout,
    embedding,
    gelu,
    layer_norm,
    linear,
    linear_cross_entropy,
    log_softmax,
    max_pool2d,
    mse_loss,
    packed_causal_attention,
    relu,
    rms_norm,
    rotary_embedding,
    scaled_dot_product_attention,
    sigmoid,
    silu,
    softmax,
)

__all__ = list(_real.__all__)  # the same names as skiff.kernels.train.core.nn.functional
