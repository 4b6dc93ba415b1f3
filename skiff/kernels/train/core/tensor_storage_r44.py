"""Round 44 (h7): torch's storage-facing Tensor calls a torch program makes, read from the
numpy (or cupy) array: ``storage_offset()`` (was always 0), ``data_ptr()``, ``dim_order()``,
``new_empty_strided``, and the top-level ``frombuffer`` (a tensor over a Python buffer, its
memory shared as torch's)."""

from __future__ import annotations

import numpy as np

__all__ = ["frombuffer", "UntypedStorage"]


def _address(a) -> int:
    data = getattr(a, "data", None)
    if hasattr(data, "ptr"):  # cupy
        return int(data.ptr)
    return int(a.__array_interface__["data"][0])


def _root(a):
    """The array that owns the memory ``a`` views (numpy's and cupy's ``base`` chain)."""
    while isinstance(getattr(a, "base", None), type(a).__mro__[-2]):
        a = a.base
    return a


def storage_offset(t) -> int:
    """torch's: elements from the start of the storage (the array this view's memory came
    from) to this tensor's first element."""
    a = t._data
    if not hasattr(a, "strides"):  # a meta array: its own storage
        return 0
    root = _root(a)
    if root is a or not a.itemsize:
        return 0
    return (_address(a) - _address(root)) // a.itemsize


def data_ptr(t) -> int:
    """torch's: the address of the tensor's first element."""
    return _address(t._data) if hasattr(t._data, "strides") else 0


def dim_order(t, *, ambiguity_check=False) -> tuple:
    """torch's: the dims from the outermost stride to the innermost (ties kept in order)."""
    st = t.stride()
    return tuple(sorted(range(t.ndim), key=lambda d: -st[d]))


def new_empty_strided(t, size, stride, *, dtype=None, device=None, requires_grad=False,
                      layout=None, pin_memory=False):
    """torch's: a new tensor of ``size`` (zeros: skiff hands out no uninitialised memory)
    in this tensor's dtype unless ``dtype`` is given."""
    from .functions_r43 import empty_strided

    return empty_strided(size, stride, dtype=dtype or t.dtype, device=device or t.device,
                         requires_grad=requires_grad)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """torch's ``frombuffer``: a 1-D tensor over ``buffer`` (bytes-like; memory shared, so
    writes reach a writable buffer), ``count`` elements (-1: all) after ``offset`` bytes."""
    from .tensor import Tensor, _as_dtype

    dt = _as_dtype(dtype)
    arr = np.frombuffer(buffer, dtype=dt, count=count, offset=offset)
    if requires_grad:
        arr = arr.copy()
    return Tensor._make(arr, bool(requires_grad), None, 0)


class UntypedStorage:
    """Round 44 (h12): torch's ``x.untyped_storage()`` (was an AttributeError): the bytes of
    the array this tensor's memory belongs to (every view of it gives the same ``data_ptr``,
    the idiom that tests whether two tensors share memory), ``nbytes()``/``size()``/``len``,
    bytes read and written by index, ``tolist()``, ``element_size()`` 1, ``device``."""

    def __init__(self, root, device="cpu"):
        self._root, self.device = root, device

    def _bytes(self):
        return self._root.reshape(-1).view(np.uint8)

    def nbytes(self) -> int:
        return int(self._root.nbytes)

    size = nbytes
    __len__ = nbytes

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        return _address(self._root)

    def __getitem__(self, i):
        v = self._bytes()[i]
        return int(v) if np.ndim(v) == 0 else UntypedStorage(v.copy(), self.device)

    def __setitem__(self, i, value):
        self._bytes()[i] = value

    def tolist(self) -> list:
        return [int(b) for b in self._bytes().tolist()]

    def cpu(self):
        return self

    def __repr__(self):
        body = "\n".join(f" {b}" for b in self.tolist()[:16])
        more = "\n ..." if self.nbytes() > 16 else ""
        return (f"{body}{more}\n[torch.storage.UntypedStorage(device={self.device}) of size "
                f"{self.nbytes()}]")


def untyped_storage(t) -> UntypedStorage:
    """torch's: the storage under this tensor (its whole base array, not just the view)."""
    a = t._data
    if not hasattr(a, "strides"):
        raise RuntimeError("untyped_storage: a meta tensor has no storage")
    return UntypedStorage(_root(a), str(t.device))


def install(tensor_class) -> None:
    tensor_class.untyped_storage = untyped_storage
    tensor_class.storage_offset = storage_offset
    tensor_class.data_ptr = data_ptr
    tensor_class.dim_order = dim_order
    tensor_class.new_empty_strided = new_empty_strided
