"""torch's ``meta`` device: tensors with a shape and a dtype but no memory, the usual way to
build a big model before loading its checkpoint (transformers, torchtune)::

    with torch.device("meta"):          # or nn.Linear(4, 3, device="meta")
        model = Net()                   # no weights allocated
    model.load_state_dict(sd, assign=True)   # the checkpoint's tensors become the model's
    # or: model.to_empty(device="cpu"); model.load_state_dict(sd)

A meta array is a :class:`MetaArray`: numpy's zero-strided broadcast of one element to the
shape (read-only, a few bytes whatever its size), so ``shape``/``dtype``/``numel`` answer as
torch's. Writes into it (``init.normal_``, ``copy_`` of ``reset_parameters``) are no-ops, as
torch's on meta tensors. Reading values is refused in torch's words (``item()``, ``numpy()``,
``.to("cpu")``: "Cannot copy out of meta tensor; no data!"). A module built under the
context has every parameter and buffer meta (each made meta when it is registered, so a big
model never holds more than one layer's weights at once, and again when the outermost
constructor returns). Operations on meta tensors propagate shapes and dtypes only, as
torch's (round 42): a ufunc (``+``, ``exp``, ``matmul``, ``sum``) computes its dtype on one
element and its shape by numpy's rules; any other numpy function (``concatenate``, ``where``,
``einsum``) runs on the zero-strided views and its result is made meta (the result's memory
for a moment, not the inputs'); ``astype``/``copy`` allocate nothing.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

__all__ = ["MetaArray", "MetaDevice", "META", "meta_array", "is_meta", "is_meta_spec",
           "meta_mode", "NO_DATA", "factory_device", "set_default_device",
           "get_default_device"]

NO_DATA = "Cannot copy out of meta tensor; no data!"


class MetaArray(np.ndarray):
    """A meta tensor's array: the shape and dtype of a broadcast single element."""

    def __setitem__(self, key, value):  # torch's writes into a meta tensor: nothing happens
        if self.flags.writeable:
            np.ndarray.__setitem__(self, key, value)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _meta_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.concatenate or func is np.stack:
            shaped = _join_shape(func, args, kwargs)
            if shaped is not None:
                return shaped
        if func is np.einsum:
            shaped = _einsum_shape(args, kwargs)
            if shaped is not None:
                return shaped
        if func in _REDUCTIONS and args and args[0] is self and self.size:
            return _reduce_shape(func, self, args[1:], kwargs)
        out = func(*_plain(args), **_plain(kwargs))
        return _as_meta(out)

    def astype(self, dtype, *args, **kwargs):
        return meta_array(self.shape, np.dtype(dtype))

    def copy(self, *args, **kwargs):
        return meta_array(self.shape, self.dtype)

    def __iadd__(self, other):
        return self if not self.flags.writeable else np.ndarray.__iadd__(self, other)

    def __isub__(self, other):
        return self if not self.flags.writeable else np.ndarray.__isub__(self, other)

    def __imul__(self, other):
        return self if not self.flags.writeable else np.ndarray.__imul__(self, other)

    def __itruediv__(self, other):
        return self if not self.flags.writeable else np.ndarray.__itruediv__(self, other)


def meta_array(shape, dtype) -> MetaArray:
    """A meta array of ``shape`` and ``dtype`` (no memory but one element)."""
    return np.broadcast_to(np.zeros((), dtype=np.dtype(dtype)), tuple(shape)).view(MetaArray)


def _plain(obj):
    """``obj`` with every meta array a plain (zero-strided, read-only) ndarray view."""
    if isinstance(obj, MetaArray):
        return obj.view(np.ndarray)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_plain(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    return obj


def _as_meta(out):
    """A numpy result made meta (arrays; tuples of them); scalars and the rest as they are."""
    if isinstance(out, np.ndarray):
        return out if isinstance(out, MetaArray) and not out.flags.writeable \
            else meta_array(out.shape, out.dtype)
    if isinstance(out, np.generic):  # a whole reduction (np.sum of all): a 0-d meta array
        return meta_array((), out.dtype)
    if isinstance(out, tuple):
        return tuple(_as_meta(o) for o in out)
    if isinstance(out, list):
        return [_as_meta(o) for o in out]
    return out


_REDUCTIONS = {np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.prod, np.any, np.all,
               np.var, np.std, np.nansum, np.nanmean}


def _reduce_shape(func, x, args, kwargs):
    """A reduction (``np.sum(x, axis, keepdims=)``) of meta ``x``: computed on one element
    with ``x``'s rank (its dtype and numpy's checks), the shape from the axes."""
    kw = dict(kwargs)
    axis = args[0] if args else kw.pop("axis", None)
    kw.pop("keepdims", None)
    if len(args) > 1:
        return _as_meta(func(x.view(np.ndarray), *args, **kwargs))
    keep = kwargs.get("keepdims", False)
    axes = tuple(range(x.ndim)) if axis is None else \
        tuple(a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # var of one element with ddof=1: numpy's warning
        probe = func(np.reshape(_one(x), (1,) * x.ndim), axis=axis, keepdims=True, **kw)
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes)
    return meta_array(shape, np.asarray(probe).dtype)


def _einsum_shape(args, kwargs):
    """``einsum("ij,jk->ik", a, b)`` of meta arrays: the shape from the letters' sizes (an
    explicit output, no ``...``); None where numpy must look (it raises on a mismatch)."""
    if not args or not isinstance(args[0], str) or set(kwargs) - {"optimize"}:
        return None
    spec = args[0].replace(" ", "")
    if "->" not in spec or "." in spec:
        return None
    ins, out = spec.split("->")
    terms, ops = ins.split(","), args[1:]
    if len(terms) != len(ops):
        return None
    sizes: dict = {}
    for term, op in zip(terms, ops):
        if len(term) != np.ndim(op):
            return None
        for c, d in zip(term, np.shape(op)):
            if sizes.setdefault(c, d) != d:
                return None
    if any(c not in sizes for c in out):
        return None
    return meta_array(tuple(sizes[c] for c in out), np.result_type(*ops))


def _join_shape(func, args, kwargs):
    """``concatenate``/``stack`` of arrays: numpy's checks and result on zero-length stand-ins
    (nothing of the inputs' size made), then the real length put back; None: not handled."""
    arrays = args[0] if args else kwargs.get("arrays")
    axis = args[1] if len(args) > 1 else kwargs.get("axis", 0)
    if not isinstance(arrays, (list, tuple)) or not arrays or axis is None or \
            set(kwargs) - {"arrays", "axis"} or len(args) > 2 or \
            not all(isinstance(a, np.ndarray) and a.ndim for a in arrays):
        return None
    nd = arrays[0].ndim
    if func is np.concatenate:
        ax = axis % nd if -nd <= axis < nd else axis
        stand = [np.empty(a.shape[:ax] + (0,) + a.shape[ax + 1:], a.dtype)
                 if isinstance(ax, int) and ax < a.ndim else a[:0] for a in arrays]
        for a, st in zip(arrays, stand):  # the zero-length axis must be the joined one
            if st.size and a.size:
                return None
        res = np.concatenate([s.view(np.ndarray) for s in stand], axis=axis)
        shape = list(res.shape)
        shape[ax] = sum(a.shape[ax] for a in arrays)
        return meta_array(tuple(shape), res.dtype)
    stand = [np.empty((0,) + a.shape[1:], a.dtype) for a in arrays]
    res = np.stack(stand, axis=axis)  # numpy's "all input arrays must have the same shape"
    if len({a.shape for a in arrays}) > 1:
        return None
    ax = axis % (nd + 1) if -nd - 1 <= axis <= nd else axis
    shape = list(arrays[0].shape)
    shape.insert(ax, len(arrays))
    return meta_array(tuple(shape), res.dtype)


def _one(x):
    """One element of ``x`` (0-d, its dtype): what a ufunc's dtype is computed on."""
    if isinstance(x, np.ndarray):
        return x.view(np.ndarray).reshape(-1)[:1].reshape(()) if x.size else \
            np.zeros((), x.dtype)
    return x


def _matmul_shape(a, b):
    if a == () or b == ():
        raise ValueError("matmul: Input operand does not have enough dimensions")
    sa, sb = ((1,) + a if len(a) == 1 else a), (b + (1,) if len(b) == 1 else b)
    if sa[-1] != sb[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 "
                         f"(size {sb[-2]} is different from {sa[-1]})")
    out = np.broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _meta_ufunc(ufunc, method, inputs, kwargs):
    """A ufunc on meta arrays: the shape by numpy's rules, the dtype from one element each;
    nothing of the inputs' size is allocated or computed."""
    out = kwargs.pop("out", None)
    if out is not None:  # torch's writes into a meta tensor: nothing happens
        outs = out if isinstance(out, tuple) else (out,)
        if all(isinstance(o, MetaArray) for o in outs):
            return outs[0] if len(outs) == 1 else outs
        kwargs["out"] = _plain(out)
    shapes = [np.shape(x) for x in inputs]
    if all(isinstance(x, np.ndarray) and x.size for x in inputs if np.ndim(x)) and \
            "out" not in kwargs and kwargs.get("where", True) is True:
        if method == "__call__" and ufunc.signature is None:
            probe = ufunc(*(_one(x) for x in inputs), **kwargs)
            shape = np.broadcast_shapes(*shapes)
            return _as_shaped(probe, shape)
        if method == "__call__" and ufunc is np.matmul and len(inputs) == 2:
            probe = ufunc(*(np.reshape(_one(x), (1, 1)) for x in inputs), **kwargs)
            return meta_array(_matmul_shape(*shapes), probe.dtype)
        if method == "reduce" and inputs and isinstance(inputs[0], np.ndarray):
            x = inputs[0]
            axis = kwargs.get("axis", 0)
            axes = tuple(range(x.ndim)) if axis is None else \
                tuple(a % x.ndim for a in (axis if isinstance(axis, tuple) else (axis,)))
            kw = {k: v for k, v in kwargs.items() if k not in ("axis", "keepdims")}
            probe = ufunc.reduce(np.reshape(_one(x), (1,) * x.ndim), axis=axes or None,
                                 keepdims=True, **kw) if axes else _one(x)
            keep = kwargs.get("keepdims", False)
            shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or
                          i not in axes)
            return meta_array(shape, np.asarray(probe).dtype)
    return _as_meta(getattr(ufunc, method)(*_plain(inputs), **_plain(kwargs)))


def _as_shaped(probe, shape):
    if isinstance(probe, tuple):
        return tuple(meta_array(shape, np.asarray(p).dtype) for p in probe)
    return meta_array(shape, np.asarray(probe).dtype)


def is_meta(array) -> bool:
    return isinstance(array, MetaArray)


class MetaDevice:
    """torch's ``device("meta")``; also a context manager (``with torch.device("meta"):``)
    under which modules are built with meta parameters and buffers."""

    type = "meta"
    name = "meta"
    kind = "meta"
    index = None
    is_gpu = False

    def __str__(self):
        return "meta"

    def __repr__(self):
        return "device(type='meta')"

    def __eq__(self, other):
        return isinstance(other, MetaDevice) or (isinstance(other, str) and other == "meta") \
            or getattr(other, "type", None) == "meta"

    def __hash__(self):
        return hash("meta")

    def __enter__(self):
        _DEPTH[0] += 1
        return self

    def __exit__(self, *exc):
        _DEPTH[0] -= 1
        return False


class _Depth(threading.local):
    """How many meta contexts this thread is in (torch's device context is per thread: a
    job's thread builds its model on its own device while a notebook cell is in one)."""

    n = 0
    default = False  # torch.set_default_device("meta") in this thread (counts as one context)

    def __getitem__(self, _):
        return self.n + self.default

    def __setitem__(self, _, value):
        self.n = value - self.default


META = MetaDevice()
_DEPTH = _Depth()


def meta_mode() -> bool:
    """Inside ``with torch.device("meta"):`` (or a ``device="meta"`` constructor)."""
    return _DEPTH[0] > 0


def factory_device(device):
    """A factory's ``device``: ``meta`` where none is given inside ``with torch.device("meta")``
    or after ``set_default_device("meta")`` (torch's: ``torch.zeros(3)`` there is meta)."""
    return META if device is None and _DEPTH[0] > 0 else device


def set_default_device(device) -> None:
    """torch's ``set_default_device`` for this thread: ``"meta"`` makes factories and modules
    built without a device meta; ``None``/``"cpu"`` undo it. skiff has no other default
    device (its tensors are made where their inputs are): a GPU is refused here."""
    if device is None or is_meta_spec(device) or str(device) == "cpu" or \
            getattr(device, "type", None) == "cpu":
        _DEPTH.default = is_meta_spec(device)
        return
    raise NotImplementedError(
        f"set_default_device({device!r}): skiff takes 'meta', 'cpu' or None here (tensors "
        f"go to a GPU with .to(device) or device=)")


def get_default_device():
    """torch's ``get_default_device``: ``device(type='meta')`` after
    ``set_default_device("meta")`` or inside ``with torch.device("meta")``, else cpu."""
    if _DEPTH[0] > 0:
        return META
    from skiff.kernels.backend import resolve_device

    return resolve_device("cpu")


def is_meta_spec(device) -> bool:
    """``"meta"``, ``torch.device("meta")`` (skiff's or torch's)."""
    if device is None:
        return False
    if isinstance(device, MetaDevice):
        return True
    return (isinstance(device, str) and device == "meta") or (
        not isinstance(device, str) and getattr(device, "type", None) == "meta")


def make_meta(t) -> None:
    """Turn tensor ``t`` (and its gradient) meta in place."""
    if t is None or is_meta(t._data):
        return
    t._data = meta_array(t._data.shape, t._data.dtype)
    if getattr(t, "_grad", None) is not None:
        t._grad = None
