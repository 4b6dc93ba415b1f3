"""``skiff.nn.functional``: fused layer ops as autograd nodes.

Each fused node computes its forward in a few whole-array ``xp`` expressions and keeps the
least its backward needs: ``linear`` its input and weight; ``layer_norm`` the normalised input
and the reciprocal std (the input itself is not kept); ``cross_entropy`` the probabilities;
``scaled_dot_product_attention`` q, k, v and the attention probabilities;
``packed_causal_attention`` only q, k, v, the output and the log-sum-exp per row (the
probabilities are recomputed, flash-attention style).
"""

from .activations import (
    batch_norm,
    dropout,
    gelu,
    layer_norm,
    log_softmax,
    relu,
    rms_norm,
    sigmoid,
    silu,
    softmax,
)
from .activations_more import (
    celu,
    dropout1d,
    dropout2d,
    glu,
    hardsigmoid,
    hardswish,
    logsigmoid,
    prelu,
    selu,
    softmin,
    softsign,
    threshold,
)
from .conv import avg_pool2d, conv2d, max_pool2d
from .conv1d import avg_pool1d, conv1d, max_pool1d, pairwise_distance, pdist
from .dense import (
    embedding,
    linear,
    packed_causal_attention,
    rotary_embedding,
    scaled_dot_product_attention,
)
from .extra import (
    adaptive_avg_pool2d,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_similarity,
    elu,
    group_norm,
    huber_loss,
    interpolate,
    kl_div,
    l1_loss,
    leaky_relu,
    nll_loss,
    normalize,
    one_hot,
    pad,
    smooth_l1_loss,
    softplus,
    tanh,
)
from .losses import cross_entropy, linear_cross_entropy, mse_loss
from .losses_more import (
    cosine_embedding_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from .pad_modes import hardtanh, mish, relu6

__all__ = [
    "tanh", "leaky_relu", "elu", "softplus", "l1_loss", "smooth_l1_loss", "huber_loss",
    "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "one_hot", "pad", "normalize", "cosine_similarity", "adaptive_avg_pool2d", "interpolate",
    "group_norm", "hardtanh", "relu6", "mish",
    "hardswish", "hardsigmoid", "selu", "celu", "softsign", "logsigmoid", "glu", "softmin",
    "threshold", "prelu", "conv1d", "max_pool1d", "avg_pool1d", "pairwise_distance", "pdist",
    "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "multilabel_soft_margin_loss", "poisson_nll_loss",
    "gaussian_nll_loss", "dropout1d", "dropout2d",
    "relu",
    "gelu",
    "silu",
    "sigmoid",
    "softmax",
    "log_softmax",
    "cross_entropy",
    "linear_cross_entropy",
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
    "rotary_embedding",
]
