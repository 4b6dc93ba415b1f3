"""torch's automatic-mixed-precision names for ported loops: ``autocast`` and a
``GradScaler`` with torch's signature (``GradScaler("cuda", init_scale=...)``, ``step``
returning the optimizer's result or None when skipped, ``update(new_scale)``,
``is_enabled``), on :class:`.amp.GradScaler`'s logic.

``autocast("cpu", dtype)`` casts as torch's CPU autocast does (:mod:`.autocast_ops`: matmul,
linear, einsum, attention in the 16-bit dtype; losses in float32; float64 left alone, so a
float64 port is torch's run exactly). ``autocast("cuda")`` without CUDA is disabled with
torch's warning; on a GPU the block runs at the tensors' own precision (a warning says so
once). For 16-bit training use :class:`.amp.MixedPrecision` (16-bit storage, float32
masters, loss scaling)."""

from __future__ import annotations

import functools
import warnings

import numpy as np

from . import autocast_ops as _ac
from .amp import GradScaler as _SkiffScaler

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype",
           "is_autocast_available"]

_STATE = {"depth": {}, "warned": False}  # depth: device_type -> open enabled autocasts
_LOW = ("float16", "bfloat16", "half")
_DEFAULT = {"cpu": "bfloat16"}  # torch's default fast dtype: bfloat16 on cpu, float16 else
# torch's device types (its RuntimeError lists them): a typo such as "gpu" fails as in torch
_DEVICES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
            "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
            "privateuseone")


def is_autocast_enabled(device_type=None) -> bool:
    """Whether an enabled ``autocast`` for ``device_type`` is open (torch: no argument means
    ``"cuda"``)."""
    return _STATE["depth"].get("cuda" if device_type is None else device_type, 0) > 0


def is_autocast_available(device_type) -> bool:
    return device_type in ("cpu", "cuda", "xpu", "mps", "hpu", "mtia", "xla", "ipu",
                           "privateuseone", "maia")


def get_autocast_dtype(device_type):
    """The dtype an ``autocast`` for ``device_type`` names (its default outside one)."""
    from .tensor import _as_dtype
    for ctx in reversed(_OPEN):
        if ctx.device_type == device_type and ctx.enabled:
            return _as_dtype(ctx.fast_dtype)
    return _as_dtype(_DEFAULT.get(device_type, "float16"))


_OPEN = []  # the autocast contexts entered, innermost last


class autocast:  # noqa: N801  (torch's name)
    """``with skiff.autocast("cpu", dtype=skiff.bfloat16): ...`` (or as a decorator)."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: "
                             f"`{type(device_type)}`")
        if device_type.split(":")[0] not in _DEVICES:
            raise RuntimeError(f"Expected one of {', '.join(_DEVICES)} device type at start "
                               f"of device string: {device_type}")
        name = None if dtype is None else (dtype if isinstance(dtype, str)
                                           else str(np.dtype(dtype)))
        enabled = bool(enabled)
        if enabled and device_type == "cuda":
            from .torch_runtime import cuda
            if not cuda.is_available():  # torch's answer on a machine without CUDA, before
                # it looks at the dtype
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                              "autocast.", stacklevel=2)
                enabled = False
        if name is not None and name not in _LOW and (enabled or device_type == "cpu"):
            if device_type == "cpu":  # torch warns and runs the block without autocast
                if enabled:
                    warnings.warn("In CPU autocast, but the target dtype is not supported. "
                                  "Disabling autocast.\nCPU Autocast only supports dtypes of "
                                  "torch.bfloat16, torch.float16 currently.", stacklevel=2)
                enabled = False
            else:
                raise ValueError(f"autocast dtype must be float16 or bfloat16, got {dtype!r}")
        self.device_type = device_type
        self.fast_dtype = "float16" if name == "half" else (
            name or _DEFAULT.get(device_type, "float16"))
        self.enabled = enabled
        self._entered = []

    def __enter__(self):
        self._entered.append((self.enabled, _ac.LOW))
        _OPEN.append(self)
        if self.device_type == "cpu":  # torch's CPU op lists (autocast_ops); a disabled
            # block inside an enabled one runs without casts, as torch's
            from .tensor import _as_dtype
            _ac.LOW = _as_dtype(self.fast_dtype) if self.enabled else None
        if self.enabled:
            d = _STATE["depth"]
            d[self.device_type] = d.get(self.device_type, 0) + 1
            if self.device_type != "cpu" and not _STATE["warned"]:
                _STATE["warned"] = True
                warnings.warn("skiff.autocast on a GPU runs the block at the tensors' own "
                              "precision (no 16-bit casts); use skiff's MixedPrecision for "
                              "16-bit training", stacklevel=2)
        return self

    def __exit__(self, *exc):
        if _OPEN and _OPEN[-1] is self:
            _OPEN.pop()
        enabled, low = self._entered.pop()
        if self.device_type == "cpu":
            _ac.LOW = low
        if enabled:
            _STATE["depth"][self.device_type] -= 1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapped


_READY, _UNSCALED, _STEPPED = 0, 1, 2


class GradScaler(_SkiffScaler):
    """torch's ``torch.amp.GradScaler(device="cuda", init_scale=2**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True)``, with torch's per-optimizer
    bookkeeping (``unscale_`` once per optimizer between ``update`` calls, not after ``step``;
    ``step`` once; ``update`` after at least one ``step``/``unscale_``) and torch's
    ``state_dict`` keys (an empty dict when disabled)."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        if not isinstance(device, str):
            raise TypeError(f"GradScaler's first argument is torch's device string ('cuda'), "
                            f"got {device!r}: pass init_scale= by name")
        if enabled and device == "cuda":
            from .torch_runtime import cuda
            if not cuda.is_available():  # torch's answer on a machine without CUDA
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not "
                              "available.  Disabling.", stacklevel=2)
                enabled = False
        super().__init__(init_scale, growth_factor, backoff_factor, growth_interval, enabled)
        self.device = device
        self._opt_state = {}      # id(optimizer) -> {"stage": .., "found_inf": bool}
        self._scale_seen = False  # torch's _scale is made by the first scale()

    def _check_scale(self, funcname):
        if not self._scale_seen:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate "
                                 f"your script did not use scaler.scale(loss or outputs) earlier "
                                 f"in the iteration.")

    def _state_of(self, optimizer):
        return self._opt_state.setdefault(id(optimizer), {"stage": _READY, "found_inf": None})

    def is_enabled(self) -> bool:
        return self.enabled

    def scale(self, outputs):
        """``outputs * scale`` (a float64 loss stays float64, as torch's)."""
        if not self.enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if not hasattr(outputs, "dtype") or not hasattr(outputs, "backward"):
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        self._scale_seen = True
        if outputs.dtype == np.float64:
            return outputs * self.scale_value
        return super().scale(outputs)

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale, once per optimizer per iteration."""
        if not self.enabled:
            return None
        self._check_scale("unscale_")
        st = self._state_of(optimizer)
        if st["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if st["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        super().unscale_(optimizer)
        st["found_inf"], st["stage"] = self.found_inf, _UNSCALED
        return None

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()``'s result, or None when the gradients hold an inf/nan."""
        if not self.enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale("step")
        st = self._state_of(optimizer)
        if st["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] == _READY:
            self.unscale_(optimizer)
        st["stage"] = _STEPPED
        if st["found_inf"]:
            self.skipped_steps += 1
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Back off when any optimizer's gradients held an inf/nan, grow after
        ``growth_interval`` good iterations (torch's rule); ``new_scale`` sets the scale."""
        if not self.enabled:
            return
        if new_scale is not None:
            if not isinstance(new_scale, float):
                if not hasattr(new_scale, "numel") or new_scale.numel() != 1 or getattr(
                        new_scale, "requires_grad", False):
                    raise AssertionError("new_scale should be a float or a 1-element "
                                         "torch.cuda.FloatTensor or torch.FloatTensor with "
                                         "requires_grad=False.")
                new_scale = new_scale.item()
            self.scale_value = float(new_scale)
        else:
            self._check_scale("update")
            infs = [st["found_inf"] for st in self._opt_state.values()
                    if st["found_inf"] is not None]
            if not infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            self.found_inf = any(infs)
            super().update()
        self._opt_state = {}
        self._unscaled, self.found_inf = False, False

    def state_dict(self) -> dict:
        if not self.enabled:
            return {}
        return {"scale": self.scale_value, "growth_factor": self.growth_factor,
                "backoff_factor": self.backoff_factor, "growth_interval": self.growth_interval,
                "_growth_tracker": self.growth_tracker}

    def load_state_dict(self, state_dict) -> None:
        """torch's keys (and the older skiff ``growth_tracker``)."""
        if not self.enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self.scale_value = float(state_dict["scale"])
        self.growth_factor = float(state_dict.get("growth_factor", self.growth_factor))
        self.backoff_factor = float(state_dict.get("backoff_factor", self.backoff_factor))
        self.growth_interval = int(state_dict.get("growth_interval", self.growth_interval))
        tracker = state_dict.get("_growth_tracker", state_dict.get("growth_tracker", 0))
        self.growth_tracker = int(tracker)
        self._scale_seen = True

    def get_scale(self) -> float:
        return self.scale_value if self.enabled else 1.0

    def get_growth_factor(self):
        return self.growth_factor

    def set_growth_factor(self, new_factor):
        self.growth_factor = float(new_factor)

    def get_backoff_factor(self):
        return self.backoff_factor

    def set_backoff_factor(self, new_factor):
        self.backoff_factor = float(new_factor)

    def get_growth_interval(self):
        return self.growth_interval

    def set_growth_interval(self, new_interval):
        self.growth_interval = int(new_interval)

    def _get_growth_tracker(self):
        return self.growth_tracker if self.enabled else 0


# torch's old spellings, deprecated there (a FutureWarning each, as torch 2.13):
# torch.cuda.amp.GradScaler / torch.cuda.amp.autocast / torch.cpu.amp.autocast, the public
# names of skiff.cuda.amp and skiff.cpu.amp
def _deprecated(old, new):
    warnings.warn(f"`{old}(args...)` is deprecated. Please use `{new}` instead.",
                  FutureWarning, stacklevel=3)


class CudaGradScaler(GradScaler):
    """``skiff.cuda.amp.GradScaler(**kw)``: ``GradScaler("cuda", **kw)`` (torch's old name)."""

    _device = "cuda"

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        _deprecated(f"skiff.{self._device}.amp.GradScaler",
                    f"skiff.amp.GradScaler('{self._device}', args...)")
        super().__init__(self._device, init_scale, growth_factor, backoff_factor,
                         growth_interval, enabled)


class CpuGradScaler(CudaGradScaler):
    """``skiff.cpu.amp.GradScaler(**kw)``: ``GradScaler("cpu", **kw)`` (torch's old name)."""

    _device = "cpu"


class CudaAutocast(autocast):
    """``skiff.cuda.amp.autocast(**kw)``: ``autocast("cuda", **kw)`` (torch's old name)."""

    def __init__(self, enabled=True, dtype="float16", cache_enabled=True):
        _deprecated("skiff.cuda.amp.autocast", "skiff.amp.autocast('cuda', args...)")
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class CpuAutocast(autocast):
    """``skiff.cpu.amp.autocast(**kw)``: ``autocast("cpu", **kw)`` (torch's old name)."""

    def __init__(self, enabled=True, dtype="bfloat16", cache_enabled=True):
        _deprecated("skiff.cpu.amp.autocast", "skiff.amp.autocast('cpu', args...)")
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


for _cls, _module in ((CudaGradScaler, "skiff.cuda.amp"), (CudaAutocast, "skiff.cuda.amp"),
                      (CpuGradScaler, "skiff.cpu.amp"), (CpuAutocast, "skiff.cpu.amp")):
    _cls.__name__ = _cls.__qualname__ = ("GradScaler" if issubclass(_cls, GradScaler)
                                         else "autocast")
    _cls.__module__ = _module
