"""numpy functions on tensors, as torch's: ``np.abs(p.grad)``, ``np.sqrt(t)``, ``np.mean(t)``,
``np.abs(t - arr).max()``.

``Tensor.__array_ufunc__``: a ufunc that a Python operator reaches (``+ - * / ** @``, the
comparisons, ``& | ^ ~``, unary ``-``) or ``maximum``/``minimum`` runs as the tensor op when an
operand is a tensor, so ``ndarray + tensor`` stays a differentiable tensor (cupy's operators
see None on a tensor and defer to its reflected operators, as before: :class:`_UfuncHook`).
Any other ufunc, or a ufunc method (``np.add.reduce``), or a call with ``out=`` or other
keywords, runs on the arrays and returns a tensor without grad (torch's results come back
through ``__array_wrap__`` the same way); on a tensor that requires grad it raises torch's
error. numpy's reductions (``np.mean``, ``np.sum``, ``np.max``, ``np.std``, ``np.argmax``, ...)
call the tensor's method (numpy's own protocol for objects that are not ndarrays), which takes
numpy's ``dtype=``/``out=None`` too: a 0-d tensor, differentiable. Installed on ``Tensor`` by
:mod:`.tensor`; no circle with it (the class arrives through :func:`install`).
"""

from __future__ import annotations

import numpy as np

from skiff.kernels.backend import to_numpy

from .autograd import _same_device, note_write

GRAD_MESSAGE = ("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead.")

_BASE: dict = {}

# ufunc -> (method when the tensor is first, method when it is second)
_BINARY = {
    np.add: ("__add__", "__radd__"), np.subtract: ("__sub__", "__rsub__"),
    np.multiply: ("__mul__", "__rmul__"), np.true_divide: ("__truediv__", "__rtruediv__"),
    np.power: ("__pow__", "__rpow__"), np.matmul: ("__matmul__", "__rmatmul__"),
    np.less: ("__lt__", "__gt__"), np.less_equal: ("__le__", "__ge__"),
    np.greater: ("__gt__", "__lt__"), np.greater_equal: ("__ge__", "__le__"),
    np.equal: ("__eq__", "__eq__"), np.not_equal: ("__ne__", "__ne__"),
    np.bitwise_and: ("__and__", "__rand__"), np.bitwise_or: ("__or__", "__ror__"),
    np.bitwise_xor: ("__xor__", "__rxor__"),
    np.maximum: ("maximum", "maximum"), np.minimum: ("minimum", "minimum"),
}
_UNARY = {np.negative: "__neg__", np.invert: "__invert__"}


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """``Tensor.__array_ufunc__`` (see the module's docstring)."""
    T = _BASE["Tensor"]
    if method == "__call__" and not kwargs:
        pair = _BINARY.get(ufunc)
        if pair is not None and len(inputs) == 2:
            x, y = inputs
            if isinstance(x, T):
                return getattr(x, pair[0])(y)
            return getattr(y, pair[1])(x)
        name = _UNARY.get(ufunc)
        if name is not None and len(inputs) == 1:
            return getattr(inputs[0], name)()
    return _on_arrays(T, ufunc, method, inputs, kwargs)


def _on_arrays(T, ufunc, method, inputs, kwargs):
    """The ufunc on the tensors' arrays; the result as tensors without grad (or ``out``)."""
    outs = kwargs.get("out")
    for x in (*inputs, *(outs or ())):
        if isinstance(x, T) and x.requires_grad:
            raise RuntimeError(GRAD_MESSAGE)
    arrays = [x._data if isinstance(x, T) else x for x in inputs]
    if outs is not None and any(type(o) is np.ndarray for o in outs):
        arrays = [a if _host(a) else to_numpy(a) for a in arrays]  # a host out: on the host
    else:
        _same_device(arrays)
    if outs is not None:
        kwargs["out"] = tuple(o._data if isinstance(o, T) else o for o in outs)
    if method == "__call__" or all(_host(a) for a in arrays):
        result = getattr(ufunc, method)(*arrays, **kwargs)
    else:  # cupy's ufunc methods (numpy hands a cupy array only the plain call)
        import cupy

        result = getattr(getattr(cupy, ufunc.__name__), method)(*arrays, **kwargs)
    for o in (*(outs or ()), *(inputs[:1] if method == "at" else ())):
        if isinstance(o, T):
            note_write(o)
    if outs is not None:
        return outs[0] if len(outs) == 1 else outs
    if result is None:
        return None
    if isinstance(result, tuple):
        return tuple(T._make(r, False, None, 0) for r in result)
    return T._make(result, False, None, 0)


def _host(a) -> bool:
    return not hasattr(a, "__cuda_array_interface__")


def array_wrap(self, arr, context=None, return_scalar=False):
    """numpy's functions that compute on ``np.asarray(t)`` (``np.round(t)``, ``np.clip(t, a,
    b)``) hand the result back as a tensor, as torch's do; refused for a tensor that requires
    grad (torch's error)."""
    if self.requires_grad:
        raise RuntimeError(GRAD_MESSAGE)
    return _BASE["Tensor"]._make(arr, False, None, 0)


def _numpy_keywords(method):
    """Let ``np.mean(t)``, ``np.sum(t, axis=0)``, ``np.std(t)``, ``np.argmax(t)`` reach the
    tensor's method: numpy passes ``out=None`` (and ``dtype=``); the result is a tensor."""
    def wrapped(self, *args, dtype=None, out=None, **kwargs):
        if out is not None:
            raise TypeError(f"{method.__name__}: out= is not supported on tensors")
        if dtype is not None:
            self = self.astype(dtype)
        out = method(self, *args, **kwargs)
        if method.__name__ in _INTEGER_SUMS and out.dtype.kind in "iu" and (
                out.dtype.kind == "u" if dtype is None else out.dtype != self.dtype):
            # numpy sums unsigned integers as uint64 and small ones as int64 whatever the
            # dtype asked; torch gives int64 or the dtype asked for
            out = out.astype(np.int64 if dtype is None else self.dtype)
        return out

    wrapped.__name__ = method.__name__
    wrapped.__doc__ = method.__doc__
    wrapped.__wrapped__ = method
    return wrapped


_INTEGER_SUMS = ("sum", "prod", "cumsum")
_REDUCTIONS = ("sum", "mean", "max", "min", "std", "var", "prod", "cumsum", "argmax", "argmin")


class _UfuncHook:
    """``Tensor.__array_ufunc__``: numpy looks it up on the class and gets :func:`array_ufunc`;
    read on a tensor it is None, which is what cupy's operators test (``y.__array_ufunc__ is
    None``: defer to the tensor's reflected operator), so ``cupy_array OP tensor`` stays the
    tensor's op as before (``@`` too, which cupy would otherwise run itself on the tensor)."""

    def __get__(self, obj, cls=None):
        return array_ufunc if obj is None else None


def install(tensor_class) -> None:
    """Attach ``__array_ufunc__``, ``__array_wrap__`` and numpy's keywords on the reductions
    (idempotent)."""
    _BASE["Tensor"] = tensor_class
    tensor_class.__array_ufunc__ = _UfuncHook()
    tensor_class.__array_wrap__ = array_wrap
    for name in _REDUCTIONS:
        fn = getattr(tensor_class, name, None)
        if fn is not None and not hasattr(fn, "__wrapped__"):
            setattr(tensor_class, name, _numpy_keywords(fn))


__all__ = ["install", "GRAD_MESSAGE"]
