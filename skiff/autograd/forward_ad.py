"""``skiff.autograd.forward_ad``: torch's ``autograd.forward_ad`` (``dual_level``,
``make_dual``, ``unpack_dual``, ``enter_dual_level``, ``exit_dual_level``,
``UnpackedDualTensor``); the public names of :mod:`skiff.kernels.train.core.forward_r29b`
(tangents by two reverse passes: see its notes)."""

from skiff.kernels.train.core.forward_r29b import (  # noqa: F401
    UnpackedDualTensor,
    dual_level,
    enter_dual_level,
    exit_dual_level,
    make_dual,
    unpack_dual,
)

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]
