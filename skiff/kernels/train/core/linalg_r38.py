"""Round 38: torch's ``linalg.matmul``, ``linalg.vander``, ``linalg.solve_ex``,
``linalg.tensorinv`` and ``linalg.tensorsolve``, of differentiable ops (``@``, ``cumprod``,
``inv``, ``solve``, reshapes)."""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from . import ops_linalg as _la

__all__ = ["matmul", "vander", "solve_ex", "tensorinv", "tensorsolve"]

_SolveEx = namedtuple("solve_ex", ["result", "info"])


def matmul(input, other):  # noqa: A002 - torch's names
    """torch's ``linalg.matmul``: ``input @ other``."""
    return _la._as_tensor(input) @ _la._as_tensor(other)


def vander(x, *, N=None):  # noqa: N803 - torch's name
    """torch's ``linalg.vander``: columns ``x^0, x^1, ..., x^(N - 1)`` (a running product, as
    torch's, so a zero entry has the gradient of the polynomial)."""
    from .tensor import cat

    x = _la._as_tensor(x)
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: Expected x to have at least one dimension")
    n = int(x.shape[-1]) if N is None else int(N)
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    ones = x.unsqueeze(-1) * 0 + 1
    rest = x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)
    return cat([ones, rest], -1)


def solve_ex(A, B, *, left=True, check_errors=False):
    """torch's ``linalg.solve_ex``: ``(X, info)``; ``info`` 0, or the zero diagonal element of
    ``A``'s LU factor (X is then not usable; ``check_errors`` raises as ``solve``)."""
    A = _la._float(_la._as_tensor(A))
    a = np.asarray(A.detach().numpy())
    flat = a.reshape((-1,) + a.shape[-2:])
    info = np.asarray([_la._lapack_info(m, "getrf") for m in flat], np.int32).reshape(
        a.shape[:-2])
    T = type(A)
    if info.any():
        if check_errors:
            raise _la.LinAlgError("torch.linalg.solve_ex: The solver failed because the input "
                                  "matrix is singular.")
        B = _la._as_tensor(B)
        vec = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
        shape = np.broadcast_shapes(a.shape[:-2], tuple(B.shape[:-1 if vec else -2])) + \
            tuple(B.shape[-1 if vec else -2:])
        x = T._make(np.full(shape, np.nan, a.dtype), False, None, 0)
    else:
        x = _la.solve(A, B, left=left)
    return _SolveEx(x, T._make(info, False, None, 0))


def tensorinv(A, ind=2):
    """torch's ``linalg.tensorinv``: the inverse of ``A`` read as a (prod(shape[:ind]),
    prod(shape[ind:])) matrix, shaped ``shape[ind:] + shape[:ind]``."""
    A = _la._as_tensor(A)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    head, tail = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if math.prod(head) != math.prod(tail):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) "
                           f"== prod(self.shape[:ind]), but got {math.prod(tail)} != "
                           f"{math.prod(head)}")
    return _la.inv(A.reshape(math.prod(head), math.prod(tail))).reshape(*tail, *head)


def tensorsolve(A, B, dims=None):
    """torch's ``linalg.tensorsolve``: ``X`` with ``tensordot(A, X, X.ndim) = B`` (``dims``
    of ``A`` moved to the end first)."""
    A, B = _la._as_tensor(A), _la._as_tensor(B)
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        keep = [d for d in range(A.ndim) if d not in dims]
        A = A.permute(*keep, *dims)
    rest = tuple(A.shape[B.ndim:])
    mat = A.reshape(math.prod(tuple(B.shape)), math.prod(rest))
    return _la.solve(mat, B.reshape(-1)).reshape(*rest)
