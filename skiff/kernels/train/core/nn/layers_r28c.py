"""torch names a port meets in older or multi-GPU scripts: ``nn.DataParallel`` (one device
here: the wrapper keeps torch's ``module.`` state-dict prefix), ``nn.SyncBatchNorm`` and
``convert_sync_batchnorm`` (batch norm over any (N, C, ...) input; the statistics are this
process's batch: see docs/train-core.md), ``nn.Buffer`` (a tensor that registers as a buffer
when assigned), ``ZeroPad1d``/``ZeroPad3d``/``ConstantPad3d``, and the functional in-place
activations (``F.relu_``, ...), ``F.upsample*`` and ``F.max_pool*d_with_indices``."""

from __future__ import annotations

from ..tensor import Tensor
from ..tensor_torch import _assign
from . import functional as F
from .conv import _BatchNorm
from .functional.activations_more import celu, selu, threshold
from .functional.extra import elu, interpolate, leaky_relu
from .functional.pad_modes import hardtanh
from .layers_r28 import rrelu
from .module import Module
from .torch_layers import _pad_class

__all__ = ["DataParallel", "SyncBatchNorm", "Buffer", "ZeroPad1d", "ZeroPad3d",
           "ConstantPad3d", "relu_", "elu_", "leaky_relu_", "hardtanh_", "selu_", "celu_",
           "threshold_", "rrelu_", "upsample", "upsample_nearest", "upsample_bilinear",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices"]


class DataParallel(Module):
    """torch's ``nn.DataParallel(module)``: calls ``module`` (one device: skiff's data
    parallel training is the Trainer's strategies); ``.module`` and the ``module.``-prefixed
    state dict are torch's."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


class SyncBatchNorm(_BatchNorm):
    """torch's ``nn.SyncBatchNorm``: batch norm of (N, C, ...) per channel. The statistics
    are this process's batch (torch's reduce them over the process group)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats,
                         device=device, dtype=dtype)
        self.process_group = process_group

    def forward(self, x):
        if x.ndim < 2 or x.shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm({self.num_features}) expects (N, "
                             f"{self.num_features}, ...), got {tuple(x.shape)}")
        return self._normalise(x)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """torch's: every ``BatchNorm*d`` in ``module`` becomes a ``SyncBatchNorm`` holding the
        same parameters and buffers (returns the new module when ``module`` itself is one)."""
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            new = cls.__new__(cls)
            new.__dict__.update(module.__dict__)
            new.process_group = process_group
            return new
        for name, child in list(module._modules.items()):
            if child is not None:
                converted = cls.convert_sync_batchnorm(child, process_group)
                if converted is not child:
                    module._modules[name] = converted
                    object.__setattr__(module, name, converted)
        return module


class Buffer(Tensor):
    """torch's ``nn.Buffer(data, persistent=True)``: ``self.x = nn.Buffer(t)`` in a module
    registers ``x`` as a buffer (a plain tensor)."""

    _is_nn_buffer = True

    def __init__(self, data=None, *, persistent=True):
        arr = data._data if isinstance(data, Tensor) else data
        super().__init__(arr if arr is not None else [], dtype=getattr(arr, "dtype", None))
        self.persistent = persistent


ZeroPad1d = _pad_class("ZeroPad1d", "constant", 1, False)
ZeroPad3d = _pad_class("ZeroPad3d", "constant", 3, False)
ConstantPad3d = _pad_class("ConstantPad3d", "constant", 3, True)


def _in_place(fn, name):
    def apply(input, *args, **kwargs):  # noqa: A002
        return _assign(input, fn(input, *args, **kwargs), name)

    apply.__name__ = name
    apply.__doc__ = f"torch's in-place ``F.{name}``: ``input`` takes the result."
    return apply


relu_ = _in_place(lambda x: F.relu(x), "relu_")
elu_ = _in_place(lambda x, alpha=1.0: elu(x, alpha), "elu_")
leaky_relu_ = _in_place(lambda x, negative_slope=0.01: leaky_relu(x, negative_slope),
                        "leaky_relu_")


hardtanh_ = _in_place(hardtanh, "hardtanh_")
selu_ = _in_place(selu, "selu_")
celu_ = _in_place(celu, "celu_")
threshold_ = _in_place(threshold, "threshold_")
rrelu_ = _in_place(rrelu, "rrelu_")


def upsample(input, size=None, scale_factor=None, mode="nearest",  # noqa: A002
             align_corners=None):
    """torch's deprecated ``F.upsample``: ``F.interpolate``."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002
    return interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002
    """torch's: bilinear with ``align_corners=True``."""
    return interpolate(input, size, scale_factor, "bilinear", align_corners=True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode=False, return_indices=True):
    from .functional.conv1d import max_pool1d

    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode=False, return_indices=True):
    return F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode=False, return_indices=True):
    from .conv3d import max_pool3d

    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)
