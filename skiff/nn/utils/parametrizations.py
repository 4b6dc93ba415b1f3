"""``skiff.nn.utils.parametrizations``: torch's ``weight_norm`` (``original0``/``original1``);
the public name of :func:`skiff.kernels.train.core.nn.weight_norm.parametrized_weight_norm`."""

from skiff.kernels.train.core.nn.weight_norm import parametrized_weight_norm as weight_norm

__all__ = ["weight_norm"]
