"""``skiff.nn.functional``: the functions behind the layers (``F.relu``, ``F.cross_entropy``).

The public name of :mod:`skiff.kernels.train.core.nn.functional`; the same functions."""

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
    log_softmax,
    max_pool2d,
    mse_loss,
    packed_causal_attention,
    relu,
    rms_norm,
    scaled_dot_product_attention,
    sigmoid,
    silu,
    softmax,
)

__all__ = [
    "relu",
    "gelu",
    "silu",
    "sigmoid",
    "softmax",
    "log_softmax",
    "cross_entropy",
    "mse_loss",
    "layer_norm",
    "rms_norm",
    "dropout",
    "linear",
    "embedding",
    "conv2d",
    "batch_norm",
    "max_pool2d",
    "avg_pool2d",
    "scaled_dot_product_attention",
    "packed_causal_attention",
]
