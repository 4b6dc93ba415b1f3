"""torch's ``nn.utils.parametrizations.orthogonal`` (round 31; round 40: every case torch
has): a weight kept orthogonal (orthonormal columns, or rows when it is wide), as RNNs with
unitary recurrences, normalising flows and Lipschitz layers ask.

As torch's, with ``use_trivialization=True`` (torch's default): registering stores the
weight's own orthogonalisation (QR with R's diagonal made positive; a tall weight completed to
a square one with random columns, as torch's) as ``base``, and ``original`` is ``-I``; the
weight is ``base @ map(original)``: ``"matrix_exp"`` (torch's default for a square weight) the
exponential of the skew part of ``original``'s lower triangle, ``"cayley"`` its Cayley
transform, ``"householder"`` (the default for a rectangular one) the product of the
reflections stored below ``original``'s diagonal (``linalg.householder_product``). Values and
gradients are torch's (for a tall weight the gradient depends on the random completion, as
torch's does). With ``use_trivialization=False`` there is no ``base``: ``original`` is the
weight's ``geqrf`` reflectors with R's signs on the diagonal (torch's ``right_inverse``), so
weights and gradients are torch's for every shape; the exponential and Cayley maps refuse to
be assigned there, in torch's words. The parametrization keeps the weight's dtype.
"""

from __future__ import annotations

import numpy as np

from .. import tensor as T
from ..tensor import Tensor
from .module import Module

__all__ = ["orthogonal"]

_MAPS = ("matrix_exp", "cayley", "householder")


def _host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _make_orthogonal(a: np.ndarray) -> np.ndarray:
    """Q of ``a``'s QR times the signs of R's diagonal (torch's ``_make_orthogonal``:
    ``sgn``, so a zero on R's diagonal zeroes its column, as torch's), batched."""
    q, r = np.linalg.qr(a)
    d = np.diagonal(r, axis1=-2, axis2=-1)
    mag = np.abs(d)
    d = np.where(mag == 0, 0, d / np.where(mag == 0, 1, mag))
    return q * d[..., None, :]


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map: str, use_trivialization: bool = True):
        super().__init__()
        if weight.dtype.kind == "c" and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        self._trivialization = bool(use_trivialization)
        if use_trivialization:
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
            a = x - (x.transpose(-2, -1).conj() if x.dtype.kind == "c" else x.transpose(-2, -1))
            if self.orthogonal_map == "matrix_exp":
                from ..linalg_r29b import matrix_exp

                q = matrix_exp(a)
            else:
                from ..ops_linalg import solve

                eye = Tensor(x.xp.eye(n, dtype=x._data.dtype), dtype=x._data.dtype)
                q = solve(eye - a * 0.5, eye + a * 0.5)
            if n != k:
                q = q[..., :k]
        else:
            from ..linalg_r39 import householder_product

            a = x.tril(-1)
            tau = 2.0 / (1.0 + (a * a).sum(-2))
            q = householder_product(a, tau)
            # the diagonal of x holds 1s and -1s (torch's ``.int()``: not differentiated)
            dt = x._data.dtype
            sign = Tensor(x.xp.diagonal(x._data, axis1=-2, axis2=-1).astype(x.xp.int32)
                          .astype(dt), dtype=dt)
            q = q * sign[..., None, :]
        if self._trivialization and self.base is not None:
            q = self.base @ q
        if transposed:
            q = q.transpose(-2, -1)
        return q

    def right_inverse(self, q):
        q = q if isinstance(q, Tensor) else Tensor(q)
        if tuple(q.shape) != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {tuple(q.shape)}.")
        xp, dt = q.xp, q._data.dtype
        arr = _host(q._data)
        n, k = arr.shape[-2], arr.shape[-1]
        transpose = n < k
        if transpose:
            arr = np.swapaxes(arr, -2, -1)
            n, k = k, n
        if not self._trivialization:
            if self.orthogonal_map in ("matrix_exp", "cayley"):
                raise NotImplementedError(
                    "It is not possible to assign to the matrix exponential or the Cayley "
                    "parametrizations when use_trivialization=False.")
            # torch's: the geqrf reflectors, R's diagonal signs on the diagonal (flipped
            # where LAPACK used no reflection: tau == 0 exactly)
            from ..linalg_qr_r39 import _geqrf_np

            a, tau = _geqrf_np(np.ascontiguousarray(arr))
            d = np.sign(np.diagonal(a, axis1=-2, axis2=-1))
            d = np.where(tau == 0.0, -d, d)
            idx = np.arange(k)
            a[..., idx, idx] = d
            if transpose:
                a = np.swapaxes(a, -2, -1)
            return Tensor(xp.asarray(np.ascontiguousarray(a)), dtype=dt)
        if n == k:
            eps = 10.0 * n * np.finfo(dt).eps
            gram = np.swapaxes(arr, -2, -1).conj() @ arr
            base = arr.copy() if np.allclose(gram, np.eye(k), rtol=1e-5, atol=eps) \
                else _make_orthogonal(arr)
        else:  # complete to a square matrix with random columns, as torch's
            from ..random import get_generator

            extra = get_generator().standard_normal(arr.shape[:-2] + (n, n - k))
            if dt.kind == "c":  # torch's complex randn: N(0, 1/2) each part
                extra = (extra + 1j * get_generator().standard_normal(extra.shape)) / np.sqrt(2)
            base = _make_orthogonal(np.concatenate([arr, extra.astype(dt)], axis=-1))
        self.base = Tensor(xp.asarray(base), dtype=dt)
        neg_id = np.zeros(self.shape, dtype=dt)
        idx = np.arange(min(self.shape[-2:]))
        neg_id[..., idx, idx] = -1.0
        return Tensor(xp.asarray(neg_id), dtype=dt)


def orthogonal(module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True):
    """torch's ``nn.utils.parametrizations.orthogonal``: ``module.<name>`` kept orthogonal
    (``orthogonal_map``: ``"matrix_exp"``, ``"cayley"`` or ``"householder"``; by default the
    first for a square weight, the last otherwise)."""
    from .parametrize import register_parametrization

    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    n, k = weight.shape[-2], weight.shape[-1]
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if n == k or weight.dtype.kind == "c" else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    register_parametrization(module, name, orth, unsafe=True)
    return module
