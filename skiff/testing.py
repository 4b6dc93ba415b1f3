"""``skiff.testing``: torch's ``assert_close``; the public name of
:mod:`skiff.kernels.train.core.torch_testing`."""

from skiff.kernels.train.core.torch_testing import assert_close  # noqa: F401

__all__ = ["assert_close"]
