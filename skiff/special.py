"""``skiff.special``: torch's ``special`` functions (``expit``, ``logit``, ``erfinv``,
``gammaln``, ``digamma``, ``xlogy``, ``ndtr``, ...); the public names of
:mod:`skiff.kernels.train.core.torch_special`."""

from skiff.kernels.train.core.torch_special import *  # noqa: F403
from skiff.kernels.train.core.torch_special import __all__  # noqa: F401
