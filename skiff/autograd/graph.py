"""``skiff.autograd.graph``: torch's ``saved_tensors_hooks`` and ``save_on_cpu``; the public
names of :mod:`skiff.kernels.train.core.saved_hooks_r33`."""

from skiff.kernels.train.core.saved_hooks_r33 import (  # noqa: F401
    save_on_cpu,
    saved_tensors_hooks,
)

__all__ = ["saved_tensors_hooks", "save_on_cpu"]
