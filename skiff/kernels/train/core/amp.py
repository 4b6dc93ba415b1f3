"""Mixed precision: float16/bfloat16 storage, float32 master weights, dynamic loss scaling.

The model's parameters (and so its activations and gradients) live in a 16-bit dtype, which
halves memory and, on a GPU, runs on the fast tensor-core paths. The optimizer updates float32
*master* copies, so small updates are not lost to 16-bit rounding. float16 has a narrow range:
gradients of a loss of ~1 underflow to zero, so the loss is multiplied by a large *scale*
before backward and the gradients are divided by it afterwards. :class:`GradScaler` finds the
scale dynamically: a step whose gradients hold an inf/nan is skipped and the scale halved; after
``growth_interval`` good steps it doubles.

Typical loop::

    mp = MixedPrecision(model, dtype="float16")
    opt = AdamW(mp.master_params(), lr=3e-4)
    loss = loss_fn(model, batch)          # runs in float16
    mp.backward(loss)                     # scaled backward
    mp.step(opt, clip=1.0)                # unscale into the masters, skip on inf, copy back
"""

from __future__ import annotations

import math

import numpy as np

from .autograd import xp_of
from .nn.module import Parameter
from .optim import clip_grad_norm_
from .tensor import Tensor, _as_dtype

__all__ = ["GradScaler", "MixedPrecision", "LOW_PRECISION"]

LOW_PRECISION = ("float16", "bfloat16")


def _all_finite(arrays) -> bool:
    flags = []
    for a in arrays:
        xp = xp_of(a)
        flags.append(xp.isfinite(a).all())
    if not flags:
        return True
    xp = xp_of(flags[0]) if hasattr(flags[0], "shape") else np
    return bool(xp.stack([xp.asarray(f) for f in flags]).all())  # one device sync


class GradScaler:
    """Dynamic loss scaling (the logic of torch.amp.GradScaler).

    Parameters
    ----------
    init_scale : float
        Starting scale (2**16).
    growth_factor, backoff_factor : float
        Multiply the scale by these after ``growth_interval`` finite steps / on a non-finite
        step.
    growth_interval : int
        Consecutive finite steps before the scale grows.
    enabled : bool
        When False every method is a pass-through (scale 1, never skips).
    """

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if init_scale <= 0 or growth_factor <= 1 or not 0 < backoff_factor < 1:
            raise ValueError(
                f"need init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1; got "
                f"{init_scale!r}, {growth_factor!r}, {backoff_factor!r}"
            )
        if growth_interval < 1:
            raise ValueError(f"growth_interval must be >= 1, got {growth_interval!r}")
        self.enabled = enabled
        self.scale_value = float(init_scale) if enabled else 1.0
        self.growth_factor, self.backoff_factor = float(growth_factor), float(backoff_factor)
        self.growth_interval = int(growth_interval)
        self.growth_tracker = 0
        self.found_inf = False
        self._unscaled = False
        self.skipped_steps = 0

    def get_scale(self) -> float:
        return self.scale_value

    def scale(self, loss: Tensor) -> Tensor:
        """``loss * scale``, computed in float32 (a float16 loss times 2**16 would overflow)."""
        if not self.enabled:
            return loss
        return loss.astype(np.float32) * self.scale_value

    def unscale_grads(self, params) -> bool:
        """Divide the gradients of ``params`` by the scale in place; return True when all are
        finite (records ``found_inf``)."""
        grads = [p._grad for p in params if p._grad is not None]
        if self.enabled:
            inv = 1.0 / self.scale_value
            for g in grads:
                g *= g.dtype.type(inv)
        self.found_inf = not _all_finite(grads)
        self._unscaled = True
        return not self.found_inf

    def unscale_(self, optimizer) -> bool:
        """Unscale the gradients of an optimizer's parameters (before clipping)."""
        params = [p for g in optimizer.param_groups for p in g["params"]]
        return self.unscale_grads(params)

    def step(self, optimizer) -> bool:
        """``optimizer.step()`` unless the gradients hold an inf/nan; returns whether it ran."""
        if not self._unscaled:
            self.unscale_(optimizer)
        if self.found_inf:
            self.skipped_steps += 1
            return False
        optimizer.step()
        return True

    def update(self) -> None:
        """Back off after a skipped step, grow after ``growth_interval`` good ones."""
        if self.enabled:
            if self.found_inf:
                self.scale_value *= self.backoff_factor
                self.growth_tracker = 0
            else:
                self.growth_tracker += 1
                if self.growth_tracker >= self.growth_interval:
                    self.scale_value *= self.growth_factor
                    self.growth_tracker = 0
        self._unscaled = False
        self.found_inf = False

    def state_dict(self) -> dict:
        return {"scale": self.scale_value, "growth_tracker": self.growth_tracker,
                "skipped_steps": self.skipped_steps}

    def load_state_dict(self, state: dict) -> None:
        self.scale_value = float(state["scale"])
        self.growth_tracker = int(state["growth_tracker"])
        self.skipped_steps = int(state.get("skipped_steps", 0))


class MixedPrecision:
    """16-bit model storage with float32 master weights and a :class:`GradScaler`.

    Casts ``model``'s float parameters to ``dtype`` in place (buffers such as batch-norm
    statistics stay float32) and keeps a float32 master :class:`Parameter` for each. Give
    :meth:`master_params` to the optimizer.
    """

    def __init__(self, model, dtype="float16", scaler: GradScaler | None = None):
        name = str(dtype)
        if name not in LOW_PRECISION:
            raise ValueError(f"mixed precision dtype must be one of {LOW_PRECISION}, got {dtype!r}")
        self.dtype = _as_dtype(name)
        self.params = [p for p in model.parameters() if p.dtype.kind == "f"]
        self.master = []
        for p in self.params:
            self.master.append(Parameter(p._data.astype(np.float32), dtype=np.float32))
            p._data = p._data.astype(self.dtype)
        # bfloat16 has float32's range: scaling is not needed
        self.scaler = scaler or GradScaler(enabled=name == "float16")

    def master_params(self) -> list[Parameter]:
        return self.master

    def backward(self, loss: Tensor) -> None:
        """Scaled backward; float16 overflow here is expected and caught by :meth:`step`."""
        with np.errstate(over="ignore", invalid="ignore"):
            self.scaler.scale(loss).backward()

    def step(self, optimizer, clip: float | None = None) -> bool:
        """Move the gradients into the masters (float32, unscaled), skip on inf/nan, clip,
        step, copy the masters back into the model. Returns whether the step ran."""
        for p, m in zip(self.params, self.master):
            m._grad = None if p._grad is None else p._grad.astype(np.float32)
            p._grad = None
        ok = self.scaler.unscale_grads(self.master)
        ran = False
        if ok:
            if clip is not None:
                norm = clip_grad_norm_(self.master, clip)
                ok = math.isfinite(norm)
            if ok:
                optimizer.step()
                ran = True
                for p, m in zip(self.params, self.master):
                    p._data[...] = m._data.astype(self.dtype)
        if not ran:
            self.scaler.skipped_steps += 1
            self.scaler.found_inf = True
        self.scaler.update()
        for m in self.master:
            m._grad = None
        return ran

    def state_dict(self) -> dict:
        return {"scaler": self.scaler.state_dict(),
                "master": [np.asarray(m.numpy()).copy() for m in self.master]}

    def load_state_dict(self, state: dict) -> None:
        self.scaler.load_state_dict(state["scaler"])
        for p, m, arr in zip(self.params, self.master, state["master"]):
            m._data[...] = m.xp.asarray(arr)
            p._data[...] = m._data.astype(self.dtype)
