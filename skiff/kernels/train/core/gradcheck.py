"""Finite-difference gradient checks in float64, shared by every op's tests.

>>> import numpy as np, skiff
>>> x = skiff.tensor(np.array([0.5, -1.0, 2.0]), dtype="float64", requires_grad=True)
>>> gradcheck(lambda t: (t * t).exp(), [x])
True
"""

from __future__ import annotations

import numpy as np

from skiff.kernels.backend import to_numpy

from .tensor import Tensor, no_grad

__all__ = ["gradcheck", "numerical_grad"]


def _project(out, weights):
    """A scalar from the output(s): sum(out_k * w_k), so every output element matters."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    total = None
    for o, w in zip(outs, weights):
        term = (o * Tensor(w, dtype=o.dtype)).sum() if o.dtype.kind == "f" else None
        if term is None:
            continue
        total = term if total is None else total + term
    return total


def numerical_grad(fn, inputs, weights, index: int, eps: float) -> np.ndarray:
    """Central differences of sum(fn(*inputs) * weights) with respect to ``inputs[index]``."""
    x = inputs[index]
    flat = x._data.reshape(-1)  # a view: we perturb the tensor in place
    host = np.zeros(flat.shape, dtype=np.float64)
    with no_grad():
        for i in range(flat.size):
            orig = flat[i].item()
            flat[i] = orig + eps
            fp = _project(fn(*inputs), weights).item()
            flat[i] = orig - eps
            fm = _project(fn(*inputs), weights).item()
            flat[i] = orig
            host[i] = (fp - fm) / (2 * eps)
    return host.reshape(x.shape)


def gradcheck(fn, inputs, eps=1e-6, rtol=1e-5, atol=1e-7, seed=0) -> bool:
    """Compare the autograd gradient of ``fn`` with central finite differences.

    Parameters
    ----------
    fn : callable
        Takes the tensors in ``inputs`` and returns a tensor or a tuple of tensors.
    inputs : list of Tensor
        float64 tensors; those with ``requires_grad=True`` are checked.
    eps, rtol, atol : float
        Step and tolerances (``|analytic - numeric| <= atol + rtol * |numeric|``).

    Returns True, or raises AssertionError naming the input and the worst element.
    """
    inputs = list(inputs)
    for k, t in enumerate(inputs):
        if t.requires_grad and t.dtype != np.float64:
            raise ValueError(f"gradcheck needs float64 inputs, input {k} has dtype {t.dtype}")
    out = fn(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(o.shape) for o in outs]
    xp = inputs[0].xp
    weights = [xp.asarray(w) for w in weights]
    for t in inputs:
        t._grad = None
    loss = _project(out, weights)
    loss.backward()
    for k, t in enumerate(inputs):
        if not t.requires_grad:
            continue
        analytic = np.zeros(t.shape) if t._grad is None else to_numpy(t._grad).astype(np.float64)
        numeric = numerical_grad(fn, inputs, weights, k, eps)
        err = np.abs(analytic - numeric)
        tol = atol + rtol * np.abs(numeric)
        if not np.all(err <= tol):
            i = np.unravel_index(np.argmax(err - tol), err.shape) if err.ndim else ()
            raise AssertionError(
                f"gradient of input {k} (shape {t.shape}) differs at {i}: analytic "
                f"{analytic[i]!r}, numeric {numeric[i]!r} (max abs err {err.max():.3e})"
            )
    return True
