"""torch's automatic-mixed-precision names for ported loops: ``autocast`` and a
``GradScaler`` with torch's signature (``GradScaler("cuda", init_scale=...)``, ``step``
returning the optimizer's result or None when skipped, ``update(new_scale)``,
``is_enabled``), on :class:`.amp.GradScaler`'s logic.

``autocast`` does not change dtypes: the block runs at the tensors' own precision, and a
warning says so once (torch's CPU autocast leaves float64 alone too, so a float64 port is
torch's run exactly). For 16-bit training use :class:`.amp.MixedPrecision` (16-bit storage,
float32 masters, loss scaling)."""

from __future__ import annotations

import functools
import warnings

import numpy as np

from .amp import GradScaler as _SkiffScaler

__all__ = ["autocast", "GradScaler", "is_autocast_enabled"]

_STATE = {"depth": 0, "warned": False}
_LOW = ("float16", "bfloat16", "half")


def is_autocast_enabled(device_type=None) -> bool:
    return _STATE["depth"] > 0


class autocast:  # noqa: N801  (torch's name)
    """``with skiff.autocast("cuda", dtype=skiff.bfloat16): ...`` (or as a decorator)."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise TypeError(f"autocast's device_type must be a string such as 'cuda' or "
                            f"'cpu', got {type(device_type).__name__}")
        name = None if dtype is None else (dtype if isinstance(dtype, str)
                                           else str(np.dtype(dtype)))
        if name is not None and name not in _LOW:
            raise ValueError(f"autocast dtype must be float16 or bfloat16, got {dtype!r}")
        self.device_type, self.fast_dtype, self.enabled = device_type, name, bool(enabled)
        self._entered = []

    def __enter__(self):
        self._entered.append(self.enabled)
        if self.enabled:
            _STATE["depth"] += 1
            if not _STATE["warned"]:
                _STATE["warned"] = True
                warnings.warn("skiff.autocast runs the block at the tensors' own precision (no "
                              "16-bit casts); use skiff's MixedPrecision for 16-bit training",
                              stacklevel=2)
        return self

    def __exit__(self, *exc):
        if self._entered.pop():
            _STATE["depth"] -= 1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapped


class GradScaler(_SkiffScaler):
    """torch's ``torch.amp.GradScaler(device="cuda", init_scale=2**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True)``."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        if not isinstance(device, str):
            raise TypeError(f"GradScaler's first argument is torch's device string ('cuda'), "
                            f"got {device!r}: pass init_scale= by name")
        super().__init__(init_scale, growth_factor, backoff_factor, growth_interval, enabled)
        self.device = device

    def is_enabled(self) -> bool:
        return self.enabled

    def scale(self, outputs):
        """``outputs * scale`` (a float64 loss stays float64, as torch's)."""
        if not self.enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if outputs.dtype == np.float64:
            return outputs * self.scale_value
        return super().scale(outputs)

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()``'s result, or None when the gradients hold an inf/nan."""
        if not self.enabled:
            return optimizer.step(*args, **kwargs)
        if not self._unscaled:
            self.unscale_(optimizer)
        if self.found_inf:
            self.skipped_steps += 1
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Back off or grow (torch's rule); ``new_scale`` sets the scale instead."""
        if new_scale is None or not self.enabled:
            super().update()
            return
        self.scale_value = float(new_scale.item() if hasattr(new_scale, "item") else new_scale)
        self._unscaled, self.found_inf = False, False

    def get_growth_factor(self):
        return self.growth_factor

    def get_backoff_factor(self):
        return self.backoff_factor

    def get_growth_interval(self):
        return self.growth_interval
