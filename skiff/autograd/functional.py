"""``skiff.autograd.functional``: torch's ``autograd.functional`` (``vjp``, ``jvp``,
``jacobian``, ``hessian``, ``vhp``, ``hvp``); the public name of
:mod:`skiff.kernels.train.core.autograd_functional`."""

from skiff.kernels.train.core.autograd_functional import *  # noqa: F401,F403
from skiff.kernels.train.core.autograd_functional import __all__  # noqa: F401
