"""More of torch's top-level functions (round 26, found missing by porting): ``meshgrid``,
``addmm``, ``baddbmm``, ``addbmm``, ``tensordot`` and ``bernoulli``; built from the
differentiable ops (``tensordot`` by permute, reshape and one matrix product), re-exported as
``skiff.*`` by :mod:`.functions`. tests/kernels/train/core/test_torch_gaps_r26.py compares each
with torch in float64.
"""

from __future__ import annotations

import numpy as np

from .out_arg import with_out
from .random import get_generator
from .tensor import Tensor

__all__ = ["meshgrid", "addmm", "baddbmm", "addbmm", "tensordot", "bernoulli"]


def meshgrid(*tensors, indexing: str = "ij"):
    ts = list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) \
        else list(tensors)
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid indexing must be 'ij' or 'xy', got {indexing!r}")
    if indexing == "xy" and len(ts) >= 2:
        ts[0], ts[1] = ts[1], ts[0]
    sizes = [t.reshape(-1).shape[0] for t in ts]
    out = []
    for k, t in enumerate(ts):
        shape = [1] * len(ts)
        shape[k] = sizes[k]
        out.append(t.reshape(*shape).expand(*sizes))
    if indexing == "xy" and len(ts) >= 2:  # the first two axes swapped: (len(y), len(x), ...)
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def _scaled(t, s):
    return t if s == 1 else t * s


def _add_product(input, a, b, beta, alpha, product):  # noqa: A002
    """``beta input + alpha product(a, b)``; under a CPU autocast (torch's lower-precision
    list holds addmm, baddbmm and addbmm) all three operands rounded to the autocast dtype,
    the sum formed in float32 (torch's fused 16-bit GEMM) and rounded once to that dtype."""
    from . import autocast_ops as _ac

    low = _ac.LOW
    if low is not None and all(isinstance(t, Tensor) for t in (input, a, b)) and any(
            t.dtype.itemsize == 4 and t.dtype.kind == "f" for t in (input, a, b)):
        f32 = np.dtype(np.float32)
        input, a, b = (t.to(dtype=f32) for t in _ac.low(input, a, b))
        with _ac.off():
            return (_scaled(input, beta) + _scaled(product(a, b), alpha)).to(dtype=low)
    return _scaled(input, beta) + _scaled(product(a, b), alpha)


@with_out
def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002 - torch's names
    return _add_product(input, mat1, mat2, beta, alpha, lambda a, b: a @ b)


@with_out
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    return _add_product(input, batch1, batch2, beta, alpha, lambda a, b: a @ b)


@with_out
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    return _add_product(input, batch1, batch2, beta, alpha, lambda a, b: (a @ b).sum(0))


@with_out
def tensordot(a, b, dims=2):
    """Sum over ``dims`` (an int: a's last and b's first that many axes; or two lists)."""
    if isinstance(dims, int):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    da = [d % a.ndim for d in da]
    db = [d % b.ndim for d in db]
    if [a.shape[i] for i in da] != [b.shape[j] for j in db]:
        raise ValueError(f"tensordot: contracted sizes differ, {[a.shape[i] for i in da]} and "
                         f"{[b.shape[j] for j in db]}")
    fa = [i for i in range(a.ndim) if i not in da]
    fb = [j for j in range(b.ndim) if j not in db]
    k = int(np.prod([a.shape[i] for i in da])) if da else 1
    am = a.permute(*fa, *da).reshape(-1, k)
    bm = b.permute(*db, *fb).reshape(k, -1)
    return (am @ bm).reshape(*[a.shape[i] for i in fa], *[b.shape[j] for j in fb])


def bernoulli(input, p=None, *, generator=None):  # noqa: A002
    """0/1 draws with the probabilities in ``input`` (or ``p``), of its dtype; no gradient."""
    if isinstance(input, Tensor):
        from .random import per_sample

        u = per_sample(lambda g, s: g.random(s), input.shape, generator)
        if u is not None:  # vmap(randomness="different"): one batched draw, nothing loops
            return (u < (input if p is None else p)).to(input.dtype)
    probs = input._data if isinstance(input, Tensor) else np.asarray(input)
    if p is not None:
        probs = np.full(np.shape(probs), p)
    host = probs.get() if hasattr(probs, "get") else np.asarray(probs)
    draw = (get_generator(generator).random(host.shape) < host).astype(host.dtype)
    return Tensor(draw, dtype=host.dtype,
                  device=input.device if isinstance(input, Tensor) else None)
