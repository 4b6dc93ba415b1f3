"""torch's ``MaxUnpool1d``/``2d``/``3d`` and ``F.max_unpool1d``/``2d``/``3d``: the inverse of
a max pool given its ``return_indices=True`` indices (SegNet's decoder), on
:func:`.functional.pool_nd.max_unpool_nd`."""

from __future__ import annotations

from .functional.pool_nd import _tuple, max_unpool_nd
from .module import Module

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d", "MaxUnpool1d", "MaxUnpool2d",
           "MaxUnpool3d"]


def _unpool(nd, input, indices, kernel_size, stride, padding, output_size):  # noqa: A002
    k = _tuple(kernel_size, nd, "kernel_size")
    s = k if stride is None else _tuple(stride, nd, "stride")
    return max_unpool_nd(input, indices, k, s, _tuple(padding, nd, "padding"), output_size,
                         f"max_unpool{nd}d")


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None):
    return _unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None):
    return _unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None):
    return _unpool(3, input, indices, kernel_size, stride, padding, output_size)


class _MaxUnpool(Module):
    ND = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, input, indices, output_size=None):  # noqa: A002
        return _unpool(self.ND, input, indices, self.kernel_size, self.stride, self.padding,
                       output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    ND = 1


class MaxUnpool2d(_MaxUnpool):
    ND = 2


class MaxUnpool3d(_MaxUnpool):
    ND = 3
