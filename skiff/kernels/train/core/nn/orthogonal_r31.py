"""torch's ``nn.utils.parametrizations.orthogonal`` (round 31): a weight kept orthogonal
(orthonormal columns, or rows when it is wide), as RNNs with unitary recurrences, normalising
flows and Lipschitz layers ask.

As torch's, with ``use_trivialization=True`` (torch's default): registering stores the
weight's own orthogonalisation (QR with R's diagonal made positive; a tall weight completed to
a square one with random columns, as torch's) as ``base``, and ``original`` is ``-I``; the
weight is ``base @ map(original)``: ``"matrix_exp"`` (torch's default for a square weight) the
exponential of the skew part of ``original``'s lower triangle, ``"cayley"`` its Cayley
transform, ``"householder"`` (the default for a rectangular one) the product of the
reflections stored below ``original``'s diagonal. Values and gradients are torch's (for a tall
weight the gradient depends on the random completion, as torch's does). Not here:
``use_trivialization=False`` (its ``right_inverse`` needs LAPACK's ``geqrf`` reflectors).
"""

from __future__ import annotations

import numpy as np

from .. import tensor as T
from ..tensor import Tensor
from .module import Module

__all__ = ["orthogonal"]

_MAPS = ("matrix_exp", "cayley", "householder")


def _make_orthogonal(a: np.ndarray) -> np.ndarray:
    """Q of ``a``'s QR with R's diagonal positive (torch's ``_make_orthogonal``), batched."""
    q, r = np.linalg.qr(a)
    d = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    d = np.where(d == 0, 1, d)
    return q * d[..., None, :]


def _householder_product(a, tau):
    """torch's ``linalg.householder_product``: the first k columns of H_1 ... H_k, H_i = I -
    tau_i v_i v_i^T with v_i = (0, ..., 1, a[i+1:, i]), as tensor ops (differentiable)."""
    n, k = a.shape[-2], a.shape[-1]
    xp, dt = a.xp, a._data.dtype
    eye = Tensor(xp.eye(n, dtype=dt))
    q = eye
    rows = xp.arange(n)
    for i in range(k):
        unit = Tensor((rows == i).astype(dt))
        below = Tensor((rows > i).astype(dt))
        v = unit + a[..., :, i] * below
        h = eye - tau[..., i, None, None] * (v[..., :, None] * v[..., None, :])
        q = q @ h
    return q[..., :, :k]


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map: str, use_trivialization: bool = True):
        super().__init__()
        if not use_trivialization:
            raise NotImplementedError(
                "orthogonal(use_trivialization=False) is not supported by skiff (its "
                "right_inverse needs LAPACK's geqrf reflectors); use the default True")
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        self.register_buffer("base", None)

    def forward(self, x):
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x = x.transpose(-2, -1)
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            x = x.tril()
            if n != k:
                pad = T.zeros(tuple(x.shape[:-2]) + (n, n - k), dtype=x.dtype)
                x = T.cat([x, pad], -1)
            a = x - x.transpose(-2, -1)
            if self.orthogonal_map == "matrix_exp":
                from ..linalg_r29b import matrix_exp

                q = matrix_exp(a)
            else:
                from ..ops_linalg import solve

                eye = Tensor(x.xp.eye(n, dtype=x._data.dtype))
                q = solve(eye - a * 0.5, eye + a * 0.5)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(-2))
            q = _householder_product(a, tau)
            sign = Tensor(np.diagonal(x._data, axis1=-2, axis2=-1).astype(np.int64)
                          .astype(x._data.dtype))
            q = q * sign[..., None, :]
        if self.base is not None:
            q = self.base @ q
        if transposed:
            q = q.transpose(-2, -1)
        return q

    def right_inverse(self, q):
        if tuple(q.shape) != self.shape:
            raise ValueError(f"orthogonal: expected a matrix of shape {self.shape}, got "
                             f"{tuple(q.shape)}")
        arr = np.asarray(q._data if isinstance(q, Tensor) else q)
        n, k = arr.shape[-2], arr.shape[-1]
        if n < k:
            arr = np.swapaxes(arr, -2, -1)
            n, k = k, n
        if n != k:  # complete to a square matrix with random columns, as torch's
            from ..random import get_generator

            extra = get_generator().standard_normal(arr.shape[:-2] + (n, n - k))
            arr = np.concatenate([arr, extra.astype(arr.dtype)], axis=-1)
        self.base = Tensor(_make_orthogonal(arr))
        neg_id = np.zeros(self.shape, dtype=np.asarray(q._data if isinstance(q, Tensor)
                                                         else q).dtype)
        idx = np.arange(min(self.shape[-2:]))
        neg_id[..., idx, idx] = -1.0
        return Tensor(neg_id)


def orthogonal(module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True):
    """torch's ``nn.utils.parametrizations.orthogonal``: ``module.<name>`` kept orthogonal
    (``orthogonal_map``: ``"matrix_exp"``, ``"cayley"`` or ``"householder"``; by default the
    first for a square weight, the last otherwise)."""
    from .parametrize import register_parametrization

    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"orthogonal: module {type(module).__name__} has no parameter or "
                         f"buffer named {name!r}")
    if weight.ndim < 2:
        raise ValueError(f"orthogonal: expected a matrix (or a batch of them), got a tensor of "
                         f"{weight.ndim} dimensions")
    n, k = weight.shape[-2], weight.shape[-1]
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if n == k or weight.dtype.kind == "c" else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError(f"orthogonal_map must be one of {_MAPS}, got {orthogonal_map!r}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    register_parametrization(module, name, orth, unsafe=True)
    return module
