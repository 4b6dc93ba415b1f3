"""torch's ``optim.Muon`` (torch 2.9+): momentum (``buf.lerp_(g, 1 - momentum)``, Nesterov's
``g.lerp(buf, momentum)``), the update orthogonalized by torch's quintic Newton-Schulz
iteration in bfloat16 (coefficients 3.4445, -4.7750, 2.0315; a tall matrix transposed first),
decoupled weight decay ``x *= 1 - lr wd``, the step scaled by ``sqrt(max(1, A / B))``
(``adjust_lr_fn="original"``) or ``0.2 sqrt(max(A, B))`` (``"match_rms_adamw"``). 2-D
parameters only, as torch's. bfloat16 is emulated on float32 arrays (each op's result rounded
to the nearest even bfloat16, as torch's CPU bfloat16 kernels round their float32
accumulators), so numpy and cupy run it alike."""

from __future__ import annotations

import math

import numpy as np

from .optim import Optimizer
from .optim_more import _lerp_

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5


def _bf16(a, xp):
    """float32 ``a`` rounded to the nearest bfloat16 (ties to even), kept as float32."""
    bits = xp.ascontiguousarray(a, dtype=xp.float32).view(xp.uint32)
    bits = (bits + (xp.uint32(0x7FFF) + ((bits >> 16) & xp.uint32(1)))) & xp.uint32(0xFFFF0000)
    return bits.view(xp.float32)


def zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps, xp=np):
    """torch's ``_zeropower_via_newtonschulz`` of a 2-D array (bfloat16 values, as float32)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (float(v) for v in ns_coefficients)
    x = _bf16(grad, xp)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = _bf16(xp.sqrt((x * x).sum(dtype=xp.float32)), xp)
    x = _bf16(x / xp.maximum(norm, _bf16(xp.float32(eps), xp)), xp)
    for _ in range(ns_steps):
        gram = _bf16(x @ x.T, xp)
        gram_update = _bf16(b * gram + c * (gram @ gram), xp)
        x = _bf16(a * x + gram_update @ x, xp)
    return x.T if tall else x


def _adjust_lr(lr, adjust_lr_fn, shape):
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, lr=lr, weight_decay=weight_decay, momentum=momentum,
                         nesterov=nesterov, ns_coefficients=tuple(ns_coefficients), eps=eps,
                         ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {_size(p)}")

    def step(self, closure=None):
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, wd, mom = float(group["lr"]), group["weight_decay"], group["momentum"]
            for p in group["params"]:
                if p._grad is None:
                    continue
                if p._data.dtype.kind == "c":
                    raise RuntimeError("Muon does not support complex parameters")
                xp, x, g = p.xp, p._data, p._grad
                st = self.state.get(p)
                if not st:
                    st = self.state[p] = {"momentum_buffer": xp.zeros_like(g)}
                buf = _lerp_(st["momentum_buffer"], g, 1 - mom)
                update = _lerp_(g.copy(), buf, mom) if group["nesterov"] else buf
                o = zeropower_via_newtonschulz(update.astype(np.float32), group["ns_coefficients"],
                                               group["ns_steps"], group["eps"], xp)
                x *= 1 - lr * wd
                x += (-_adjust_lr(lr, group["adjust_lr_fn"], x.shape)) * o.astype(x.dtype)
        return loss


def _size(p):
    return f"torch.Size({list(p.shape)})"
