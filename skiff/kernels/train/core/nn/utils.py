"""torch's ``nn.utils``: ``clip_grad_norm_`` (returning the total norm as a tensor, as torch
does), ``clip_grad_value_``, ``parameters_to_vector`` and ``vector_to_parameters``."""

from __future__ import annotations

import math

import numpy as np

from ..tensor import Tensor
from .fused import clip_many, scale_many, sum_squares

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters"]


def _list(parameters):
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale the gradients so their global ``norm_type`` norm (2, any p > 0, or inf: the
    largest magnitude) is at most ``max_norm`` (torch's factor ``max_norm / (norm + 1e-6)``);
    returns the norm before clipping as a 0-d tensor on the gradients' device. On a GPU the
    2-norm's clipping reads nothing back (the factor is chosen on the device, as torch's);
    ``error_if_nonfinite`` and the other norms read the norm on the host."""
    params = _list(parameters)
    grads = [p._grad for p in params if p._grad is not None]
    p_norm = float(norm_type)
    if p_norm <= 0:
        raise ValueError(f"norm_type must be positive or inf, got {norm_type!r}")
    dtype = params[0].dtype if params else np.float32
    dtype = np.empty(0, dtype).real.dtype  # a complex parameter's norm is real, as torch's
    xp = params[0].xp if params else np
    if grads and p_norm == 2.0 and not error_if_nonfinite and xp is not np:
        sumsq = sum_squares(*grads)
        clip_many(sumsq, *grads, max_norm=float(max_norm))
        return Tensor(xp.sqrt(sumsq).astype(dtype), dtype=dtype)
    if not grads:
        total = 0.0
    elif p_norm == 2.0:
        total = math.sqrt(float(sum_squares(*grads)))
    elif math.isinf(p_norm):
        total = max(float(abs(g).max()) for g in grads)
    else:  # torch's: the p-norm of the per-tensor p-norms
        per = [float((abs(g) ** p_norm).sum()) ** (1 / p_norm) for g in grads]
        total = sum(v ** p_norm for v in per) ** (1 / p_norm)
    if not math.isfinite(total):
        if error_if_nonfinite:
            raise RuntimeError(f"the total norm of the gradients is {total}: not finite")
        # left as they are, as the device's clipping (clip_many) leaves them: torch scales
        # them by 0 or nan, which loses the gradients either way (a GradScaler skips such a
        # step; tests/gpu_readiness/test_strict_device_clip.py holds the two paths equal)
    elif max_norm / (total + 1e-6) < 1.0:
        scale_many(*grads, coef=max_norm / (total + 1e-6))
    return Tensor(xp.asarray(total, dtype=dtype), dtype=dtype)


def clip_grad_value_(parameters, clip_value) -> None:
    for p in _list(parameters):
        if p._grad is not None:
            p.xp.clip(p._grad, -clip_value, clip_value, out=p._grad)


def parameters_to_vector(parameters) -> Tensor:
    from ..tensor import cat

    return cat([p.reshape(-1) for p in _list(parameters)])


def vector_to_parameters(vec, parameters) -> None:
    i = 0
    for p in _list(parameters):
        n = int(p.size)
        p._data[...] = vec._data[i:i + n].reshape(p.shape)
        i += n
