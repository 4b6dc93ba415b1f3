"""torch's sparse COO matrices as graph networks use them (Kipf's GCN: a normalized adjacency
``torch.sparse_coo_tensor(indices, values, size)``, ``torch.spmm(adj, x)`` /
``torch.sparse.mm(adj, x)`` / ``adj @ x``, ``adj.to_dense()``; GAT-style learned edge
weights in ``values``). Two dimensions only.

A :class:`SparseCooTensor` keeps ``indices`` (2, nnz) int64 and ``values`` (nnz,) as a skiff
Tensor (it may require grad); the product is one node (``SpMMFn``) on scipy's CSR kernel
(cupyx's on a GPU), differentiable in the dense operand (``S^T g``) and in the values
(``sum_j g[row, j] x[col, j]``: the gradient at each stored entry, as torch's sparse
gradient holds it, here dense over nnz). Duplicate entries add, as torch's
``coalesce()`` does."""

from __future__ import annotations

import numpy as np

from . import top_names_r43 as _layouts
from .autograd import Function, xp_of
from .tensor import Tensor, tensor

__all__ = ["SparseCooTensor", "sparse_coo_tensor", "spmm", "mm", "sum", "addmm", "is_sparse",
           "FloatTensor", "DoubleTensor", "to_sparse", "softmax", "log_softmax"]


def _sparse_module(xp):
    if xp is np:
        import scipy.sparse as sp
    else:  # pragma: no cover - GPU
        import cupyx.scipy.sparse as sp
    return sp


def _csr(xp, indices, values, shape):
    return _sparse_module(xp).csr_matrix((values, (indices[0], indices[1])), shape=shape)


class SpMMFn(Function):
    """``S @ X`` for S (m, n) of ``indices`` with ``values``, X (n, k) dense."""

    def forward(self, values, x, indices=None, shape=None):
        xp = xp_of(x)
        if values.dtype != x.dtype:
            from .shape_error import DtypeMismatch

            raise DtypeMismatch(f"expected scalar type of the sparse values ({values.dtype}) "
                                f"and of the dense matrix ({x.dtype}) to be the same")
        self.indices, self.shape = indices, shape
        self.save_for_backward(values, x)
        out = _csr(xp, indices, values, shape) @ x
        return xp.asarray(out, dtype=x.dtype)

    def backward(self, g):
        values, x = self.saved
        nv, nx = self.needs_input_grad
        xp = xp_of(g)
        rows, cols = self.indices
        gv = (g[rows] * x[cols]).sum(axis=-1) if nv else None
        gx = None
        if nx:
            st = _csr(xp, (cols, rows), values, (self.shape[1], self.shape[0]))
            gx = xp.asarray(st @ g, dtype=g.dtype)
        return gv, gx


class _ToDense(Function):
    def forward(self, values, indices=None, shape=None):
        xp = xp_of(values)
        self.indices = indices
        out = xp.zeros(shape, dtype=values.dtype)
        xp.add.at(out, tuple(indices), values)
        return out

    def backward(self, g):
        return g[tuple(self.indices)]


class SparseCooTensor:
    """torch's ``layout=torch.sparse_coo`` tensor (2-D): ``indices()``, ``values()``,
    ``to_dense()``, ``coalesce()``, ``t()``, ``@``/``mm`` with a dense matrix."""

    is_sparse = True
    layout = _layouts.sparse_coo

    def __init__(self, indices, values, size, coalesced=False):
        self._idx = indices
        self._vals = values
        self.shape = tuple(int(s) for s in size)
        self._coalesced = coalesced

    # torch's accessors
    def indices(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return tensor(self._idx, dtype=np.int64)

    def _indices(self):
        return tensor(self._idx, dtype=np.int64)

    def values(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._vals

    def _values(self):
        return self._vals

    def _nnz(self):
        return int(self._idx.shape[1])

    def is_coalesced(self):
        return self._coalesced

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return len(self.shape)

    ndim = property(dim)
    dtype = property(lambda self: self._vals.dtype)
    device = property(lambda self: self._vals.device)
    requires_grad = property(lambda self: self._vals.requires_grad)
    is_cuda = property(lambda self: self._vals.is_cuda)

    def coalesce(self):
        """Sorted row-major, duplicates summed (differentiable in the values)."""
        if self._coalesced:
            return self
        xp = xp_of(self._idx)
        key = self._idx[0] * self.shape[1] + self._idx[1]
        uniq, inv = xp.unique(key, return_inverse=True)
        idx = xp.stack([uniq // self.shape[1], uniq % self.shape[1]])
        vals = self._vals.new_zeros((len(uniq),)).index_add(0, tensor(inv.reshape(-1)),
                                                           self._vals)
        return SparseCooTensor(idx, vals, self.shape, coalesced=True)

    def to_dense(self):
        return _ToDense.apply(self._vals, indices=self._idx, shape=self.shape)

    def t(self):
        return SparseCooTensor(self._idx[::-1].copy(), self._vals, self.shape[::-1])

    def transpose(self, dim0, dim1):
        if {dim0 % 2, dim1 % 2} != {0, 1}:
            return self
        return self.t()

    def mm(self, other):
        return spmm(self, other)

    def matmul(self, other):
        if isinstance(other, Tensor) and other.ndim == 1:
            return spmm(self, other.unsqueeze(1)).squeeze(1)
        return spmm(self, other)

    __matmul__ = matmul

    def __mul__(self, scalar):
        if isinstance(scalar, (int, float)):
            return SparseCooTensor(self._idx, self._vals * scalar, self.shape, self._coalesced)
        return NotImplemented

    __rmul__ = __mul__

    def to(self, *args, **kwargs):
        return SparseCooTensor(self._idx, self._vals.to(*args, **kwargs), self.shape,
                               self._coalesced)

    def float(self):
        return self.to(np.float32)

    def double(self):
        return self.to(np.float64)

    def detach(self):
        return SparseCooTensor(self._idx, self._vals.detach(), self.shape, self._coalesced)

    def requires_grad_(self, flag=True):
        self._vals.requires_grad_(flag)
        return self

    def sum(self, dim=None):
        return sum(self, dim)

    def __repr__(self):
        return (f"tensor(indices={self._idx!r},\n       values={self._vals!r},\n       "
                f"size={self.shape}, nnz={self._nnz()}, layout=torch.sparse_coo)")


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """torch's ``sparse_coo_tensor(indices (2, nnz), values (nnz,), size)``; without
    ``size`` the smallest that holds the indices."""
    idx = indices._data if isinstance(indices, Tensor) else np.asarray(indices)
    idx = idx.astype(np.int64)
    if idx.ndim != 2 or idx.shape[0] != 2:
        raise NotImplementedError(f"sparse_coo_tensor: 2-D matrices only here (indices of "
                                  f"shape (2, nnz)), got indices of shape {tuple(idx.shape)}")
    vals = values if isinstance(values, Tensor) else tensor(values, dtype=dtype)
    if dtype is not None and vals.dtype != np.dtype(dtype):
        vals = vals.to(dtype)
    if device is not None:
        vals = vals.to(device)
        idx = vals.xp.asarray(idx)
    if vals.ndim != 1 or vals.shape[0] != idx.shape[1]:
        raise RuntimeError(f"indices and values must have the same number of elements, but "
                           f"got {idx.shape[1]} and {vals.shape[0] if vals.ndim else 0}")
    if size is None:
        size = tuple(int(m) + 1 for m in idx.max(axis=1)) if idx.shape[1] else (0, 0)
    size = tuple(int(s) for s in size)
    if idx.shape[1] and (int(idx.min()) < 0 or any(int(idx[i].max()) >= size[i]
                                                   for i in range(2))):
        raise RuntimeError(f"size is inconsistent with indices: for dim 0, size is {size[0]} "
                           f"but found index {int(idx[0].max())}")
    if requires_grad:
        vals.requires_grad_(True)
    return SparseCooTensor(idx, vals, size,
                           coalesced=bool(is_coalesced) or idx.shape[1] <= 1)


def is_sparse(t) -> bool:
    return bool(getattr(t, "is_sparse", False))


def spmm(sparse, dense):
    """torch's ``spmm``/``sparse.mm``: a sparse (m, n) times a dense (n, k), dense out."""
    if not is_sparse(sparse):
        return sparse @ dense
    if not isinstance(dense, Tensor):
        dense = tensor(dense)
    if dense.ndim != 2 or dense.shape[0] != sparse.shape[1]:
        from .shape_error import ShapeError, dims

        raise ShapeError(f"mat1 and mat2 shapes cannot be multiplied ({dims(sparse.shape)} "
                         f"and {dims(dense.shape)})")
    return SpMMFn.apply(sparse._vals, dense, indices=sparse._idx, shape=sparse.shape)


mm = spmm


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """torch's ``sparse.addmm``: ``beta mat + alpha (mat1 @ mat2)``."""
    return beta * mat + alpha * spmm(mat1, mat2)


def sum(input, dim=None):  # noqa: A001, A002 - torch's names
    """torch's ``sparse.sum``: every entry (a 0-d tensor) or along ``dim`` (dense here)."""
    if dim is None:
        return input._vals.sum()
    return input.to_dense().sum(dim)


def _sparse_softmax(input, dim, dtype, log):
    if not isinstance(input, SparseCooTensor):
        raise TypeError(f"sparse.{'log_' if log else ''}softmax takes a sparse COO tensor, got "
                        f"{type(input).__name__} (a dense one: torch.softmax)")
    if not -2 <= dim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-2, 1], but got "
                         f"{dim})")
    sp = input.coalesce()
    vals = sp._vals if dtype is None else sp._vals.to(dtype)
    group = sp._idx[1 - dim % 2]  # entries sharing the other index normalize together
    n = sp.shape[1 - dim % 2]
    g = tensor(group)
    v = vals.detach()  # each group's largest value: a constant shift, no gradient of its own
    top = v.new_full((n,), -np.inf).scatter_reduce(0, g, v, "amax")
    z = vals - top[g]
    e = z.exp()
    total = e.new_zeros((n,)).index_add(0, g, e)[g]
    out = z - total.log() if log else e / total
    return SparseCooTensor(sp._idx, out, sp.shape, coalesced=True)


def softmax(input, dim, *, dtype=None):  # noqa: A002 - torch's name
    """torch's ``sparse.softmax``: over the stored entries along ``dim`` (the others count as
    -inf and stay unstored); differentiable in the values."""
    return _sparse_softmax(input, dim, dtype, False)


def log_softmax(input, dim, *, dtype=None):  # noqa: A002 - torch's name
    """torch's ``sparse.log_softmax`` over the stored entries along ``dim``."""
    return _sparse_softmax(input, dim, dtype, True)


def _legacy(dtype, name):
    def make(indices, values, size=None):
        import warnings

        warnings.warn(f"torch.sparse.{name}(indices, values, shape) is deprecated; use "
                      f"sparse_coo_tensor(indices, values, shape, dtype=...)", UserWarning,
                      stacklevel=2)
        return sparse_coo_tensor(indices, values, size, dtype=dtype)

    make.__name__ = name
    return make


FloatTensor = _legacy(np.float32, "FloatTensor")
DoubleTensor = _legacy(np.float64, "DoubleTensor")


def to_sparse(self, sparse_dim=None):
    """torch's ``Tensor.to_sparse()`` of a matrix: its nonzero entries (differentiable in
    their values)."""
    if self.ndim != 2:
        raise NotImplementedError("to_sparse: 2-D matrices only here")
    xp = self.xp
    idx = xp.stack(xp.nonzero(self._data)).astype(np.int64)
    return SparseCooTensor(idx, self[tuple(tensor(i, dtype=np.int64) for i in idx)],
                           self.shape, coalesced=True)


Tensor.to_sparse = to_sparse


def _strided_to_dense(self, dtype=None, *, masked_grad=None):
    """torch's ``Tensor.to_dense()`` of a dense tensor: the tensor itself (code that densifies
    what ``sparse.sum(dim=)`` and the like return)."""
    return self if dtype is None else self.to(dtype)


Tensor.to_dense = _strided_to_dense
