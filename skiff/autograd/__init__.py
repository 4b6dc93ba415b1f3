"""``skiff.autograd``: torch's ``autograd`` names for ported code (``Function`` with a ``ctx``,
``grad``, ``backward``, ``no_grad``, ``enable_grad``, ``set_grad_enabled``,
``is_grad_enabled``, ``inference_mode``, the legacy ``Variable``), so
``from skiff.autograd import Function`` works as ``from torch.autograd import Function`` does;
``skiff.autograd.functional`` holds torch's ``vjp``, ``jvp``, ``jacobian``, ``hessian``,
``vhp`` and ``hvp``; ``gradcheck`` and ``gradgradcheck`` are torch's (full Jacobians, torch's
tolerances and errors).

The public name of :mod:`skiff.kernels.train.core.torch_autograd`; the same objects."""

from skiff.autograd import forward_ad, function, functional, graph  # noqa: F401
from skiff.kernels.train.core.functions import inference_mode  # noqa: F401
from skiff.kernels.train.core.torch_autograd import *  # noqa: F401,F403
from skiff.kernels.train.core.torch_autograd import __all__ as _names
from skiff.kernels.train.core.torch_gradcheck import (  # noqa: F401
    GradcheckError,
    gradcheck,
    gradgradcheck,
)

__all__ = [*_names, "gradcheck", "gradgradcheck", "GradcheckError", "inference_mode"]
