"""torch's lazy layers beyond ``LazyLinear``: ``LazyConv1d/2d/3d``,
``LazyConvTranspose1d/2d/3d``, ``LazyBatchNorm1d/2d/3d``, ``LazyInstanceNorm1d/2d/3d``. The
channel count is read from the first input (or from a loaded state dict); the layer then
builds its eager class's parameters (torch's law) and becomes that class, as torch's
``cls_to_become`` does (``type(m)`` is ``Conv2d`` afterwards; its hooks stay). Build the
optimizer after the first call (torch's rule too)."""

from __future__ import annotations

from .conv import BatchNorm1d, BatchNorm2d, Conv1d, Conv2d, ConvTranspose2d, _BatchNorm
from .conv3d import BatchNorm3d, Conv3d
from .conv_transpose3d import ConvTranspose3d
from .conv_transpose_more import ConvTranspose1d
from .layers_r27 import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .module import Module

__all__ = ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]

_KEEP = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_full_backward_hooks",
         "_full_backward_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
         "_has_hooks")


class _Lazy(Module):
    cls_to_become = None
    spatial = 2  # the input's spatial dims (a batched input has spatial + 2; None: always)
    state_key = "weight"  # the state-dict entry whose shape gives the channels
    state_axis = 1

    defaults: dict = {}

    def __init__(self, *args, **kwargs):
        Module.__init__(self)  # (not a lazy batch norm's _BatchNorm.__init__: no channels yet)
        object.__setattr__(self, "_lazy_args", (args, {**self.defaults, **kwargs}))

    def has_uninitialized_params(self):
        return True

    def extra_repr(self):
        return ""

    def _become(self, channels):
        args, kwargs = self._lazy_args
        built = self.cls_to_become(int(channels), *args, **kwargs)
        if self.__dict__.get("_lazy_dtype") is not None:  # .double()/.to(dtype) said first
            built.to(dtype=self._lazy_dtype)
        if not self.training:
            built.eval()
        kept = {k: self.__dict__[k] for k in _KEEP if k in self.__dict__}
        self.__dict__.clear()
        self.__dict__.update(built.__dict__)
        self.__dict__.update({k: v for k, v in kept.items() if v})
        self.__class__ = self.cls_to_become

    def initialize_parameters(self, x, *args, **kwargs):
        """torch's name: materialize from the input ``x`` (the channels axis: 1 batched,
        0 unbatched; batch norm's always 1)."""
        batched = self.spatial is None or x.ndim == self.spatial + 2
        self._become(x.shape[1 if batched else 0])
        if getattr(x, "is_cuda", False):
            self.to(x.device)

    def forward(self, x, *args, **kwargs):
        self.initialize_parameters(x)
        return self.forward(x, *args, **kwargs)  # the eager class's, hooks already run

    def _materialize_from(self, state):
        """Shape the layer from a state dict (a loaded checkpoint, or a parent's part)."""
        if isinstance(state, dict) and self.state_key in state:
            self._become(state[self.state_key].shape[self.state_axis])

    def load_state_dict(self, state, strict=True, *args, **kwargs):
        self._materialize_from(state)
        if isinstance(self, _Lazy):  # nothing to shape it by: torch's errors for the keys
            return super().load_state_dict(state, strict, *args, **kwargs)
        return type(self).load_state_dict(self, state, strict, *args, **kwargs)


def _lazy(name, cls, spatial, key="weight", axis=1, defaults=None):
    # a lazy batch norm is a _BatchNorm before its first input, as torch's (_LazyNormBase
    # derives from _BatchNorm): ``isinstance(m, _BatchNorm)`` init/freeze code finds it
    bases = (_Lazy, _BatchNorm) if issubclass(cls, _BatchNorm) else (_Lazy,)
    return type(name, bases, {"cls_to_become": cls, "spatial": spatial, "state_key": key,
                                 "state_axis": axis, "defaults": defaults or {},
                                 "__doc__": f"torch's ``nn.{name}``", "__module__": __name__})


# torch's lazy instance norms default to affine=True, track_running_stats=True
_IN = {"affine": True, "track_running_stats": True}


LazyConv1d = _lazy("LazyConv1d", Conv1d, 1)
LazyConv2d = _lazy("LazyConv2d", Conv2d, 2)
LazyConv3d = _lazy("LazyConv3d", Conv3d, 3)
LazyConvTranspose1d = _lazy("LazyConvTranspose1d", ConvTranspose1d, 1, axis=0)
LazyConvTranspose2d = _lazy("LazyConvTranspose2d", ConvTranspose2d, 2, axis=0)
LazyConvTranspose3d = _lazy("LazyConvTranspose3d", ConvTranspose3d, 3, axis=0)
LazyBatchNorm1d = _lazy("LazyBatchNorm1d", BatchNorm1d, None, key="running_mean", axis=0)
LazyBatchNorm2d = _lazy("LazyBatchNorm2d", BatchNorm2d, None, key="running_mean", axis=0)
LazyBatchNorm3d = _lazy("LazyBatchNorm3d", BatchNorm3d, None, key="running_mean", axis=0)
LazyInstanceNorm1d = _lazy("LazyInstanceNorm1d", InstanceNorm1d, 1, key="running_mean",
                            axis=0, defaults=_IN)
LazyInstanceNorm2d = _lazy("LazyInstanceNorm2d", InstanceNorm2d, 2, key="running_mean",
                            axis=0, defaults=_IN)
LazyInstanceNorm3d = _lazy("LazyInstanceNorm3d", InstanceNorm3d, 3, key="running_mean",
                            axis=0, defaults=_IN)
