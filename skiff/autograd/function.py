"""``skiff.autograd.function``: torch's ``autograd.function`` (``Function``, ``FunctionCtx``,
``once_differentiable``), so ``from torch.autograd.function import once_differentiable``
ports as it is; the objects of :mod:`skiff.kernels.train.core.torch_autograd`."""

from skiff.kernels.train.core.torch_autograd import (  # noqa: F401
    Function,
    FunctionCtx,
    once_differentiable,
)

__all__ = ["Function", "FunctionCtx", "once_differentiable"]
