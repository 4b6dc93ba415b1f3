"""``skiff.nn.utils``: torch's ``nn.utils`` (``clip_grad_norm_``, ``clip_grad_value_``,
``parameters_to_vector``, ``vector_to_parameters``, ``skip_init``, ``stateless``); the
public name of
:mod:`skiff.kernels.train.core.nn.utils`. ``skiff.nn.utils.rnn.pad_sequence`` is torch's."""

from skiff.kernels.train.core.nn import utils as _real
from skiff.kernels.train.core.nn.fusion_r37 import (  # noqa: F401
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from skiff.kernels.train.core.nn.spectral_norm import (  # noqa: F401
    remove_spectral_norm,
    spectral_norm,
)
from skiff.kernels.train.core.nn.utils import (  # noqa: F401
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)
from skiff.kernels.train.core.nn.utils_r38 import (  # noqa: F401
    clip_grad_norm,
    skip_init,
    stateless,
)
from skiff.kernels.train.core.nn.weight_norm import (  # noqa: F401
    remove_weight_norm,
    weight_norm,
)

from . import fusion, parametrizations, parametrize, prune, rnn  # noqa: E402,F401  (skiff.nn.utils.rnn.pad_sequence)

__all__ = [*_real.__all__, "weight_norm", "remove_weight_norm", "parametrizations",
           "spectral_norm", "remove_spectral_norm", "parametrize", "prune", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
           "clip_grad_norm", "skip_init", "stateless", "fusion"]
