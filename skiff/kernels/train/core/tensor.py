"""``Tensor``: an ``xp`` array (numpy on the CPU, cupy on a GPU) with reverse-mode autograd.

>>> import skiff
>>> x = skiff.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
>>> y = (x * x).sum()
>>> y.backward()
>>> x.grad
tensor([[2., 4.],
 [6., 8.]], dtype=float32)

Float input becomes float32 unless ``dtype`` says otherwise (use float64 for gradient checks);
integer and boolean input keep their dtype. ``.data`` and ``.grad`` are tensors sharing the
array's memory (torch's); skiff's own code reads the raw arrays ``._data`` and ``._grad``.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from skiff.kernels.backend import device_of, resolve_device, to_device, to_numpy, xp_for

from . import autocast_ops as _ac
from . import autograd
from . import default_dtype as _dd
from . import meta_r41 as _meta
from . import ops_math as M
from . import ops_shape as S
from . import torch_runtime as _runtime
from ._alloc import tune_allocator
from .autograd import (
    NO_GRAD_MESSAGE,
    Function,
    enable_grad,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .out_arg import with_out
from .random import get_generator

__all__ = [
    "Tensor",
    "tensor",
    "Function",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "cat",
    "stack",
    "split",
    "where",
    "zeros",
    "ones",
    "randn",
    "rand",
    "arange",
    "full",
    "zeros_like",
    "ones_like",
    "as_array",
]

_FLOATS = ("float16", "float32", "float64", "bfloat16")


def _as_dtype(dtype):
    if dtype is None:
        return None
    if _is_torch_dtype(dtype):  # torch.float32, torch.bfloat16: a port's own dtype objects
        dtype = str(dtype).split(".", 1)[1]
    if isinstance(dtype, str) and dtype == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:  # pragma: no cover - optional
            raise ValueError("dtype 'bfloat16' needs the ml_dtypes package") from None
        return np.dtype(ml_dtypes.bfloat16)
    try:
        return np.dtype(dtype)
    except TypeError:
        raise ValueError(
            f"unknown dtype {dtype!r}: use one of {', '.join(_FLOATS)} or an integer dtype"
        ) from None


def _is_torch_dtype(x) -> bool:
    return type(x).__module__ == "torch" and type(x).__name__ == "dtype"


def _is_dtype_like(x) -> bool:
    if isinstance(x, (np.dtype, type)):
        return True
    return type(x).__module__.startswith("numpy") and hasattr(x, "itemsize")


def as_array(value, dtype=None, device=None):
    """The raw array for a Tensor, array or nested list, on ``device`` (default: where it is)."""
    listed = not hasattr(value, "dtype")  # Python numbers/lists: 1j is torch's complex64
    if isinstance(value, Tensor):
        value = value._data
    elif _is_foreign_tensor(value):
        value = _foreign_to_numpy(value)
    if device is not None:
        if _meta.is_meta_spec(device):  # torch's meta device: the shape and dtype, no memory
            dt = _as_dtype(dtype) or (np.dtype(value.dtype) if hasattr(value, "dtype") else
                                      np.asarray(value).dtype)
            if dt.kind == "f" and dtype is None and dt.itemsize > _dd.FLOAT.itemsize:
                dt = _dd.FLOAT
            return _meta.meta_array(np.shape(value), dt)
        xp = xp_for(device)
        if xp is np:
            value = to_numpy(value)
        else:
            value = to_device(value, device)
    elif not hasattr(value, "dtype") or not hasattr(value, "shape") or isinstance(
            value, np.generic):  # a numpy scalar (np.log(0.2)): a 0-d array (writable)
        value = np.asarray(value)
    dt = _as_dtype(dtype)
    if dt is None:  # float64 (and wider) input becomes the default float (float32 unless set)
        if value.dtype.kind == "f" and value.dtype.itemsize > _dd.FLOAT.itemsize:
            dt = _dd.FLOAT
        elif listed and value.dtype.kind == "c" and value.dtype.itemsize > 2 * _dd.FLOAT.itemsize:
            dt = np.dtype(np.complex64)  # torch's complex of the default float (1j: complex64)
    if dt is not None and value.dtype != dt:
        with autograd.quiet_fp():  # 1e200 to float32 is inf, nan to int64 a number: quietly
            value = value.astype(dt)
    return value


def _is_foreign_tensor(value) -> bool:
    """A torch tensor (or any with torch's ``detach().cpu().numpy()``), told by its methods:
    skiff never imports torch."""
    return (not isinstance(value, np.ndarray) and hasattr(value, "detach")
            and hasattr(value, "cpu") and hasattr(value, "numpy"))


def _foreign_to_numpy(value):
    host = value.detach().cpu()
    if hasattr(host, "resolve_conj"):  # torch's lazy conj (x.conj()): numpy() refuses it
        host = host.resolve_conj()
    try:
        return host.numpy()
    except TypeError:  # a dtype numpy lacks (torch's bfloat16): through float32
        return host.float().numpy()



def _from_user() -> bool:
    """Whether ``Tensor(n)``'s caller (two frames up: past ``__init__``) is outside skiff."""
    name = sys._getframe(2).f_globals.get("__name__", "")
    return not (name == "skiff" or name.startswith("skiff."))


_IN_INFERENCE = False  # an ``inference_mode()`` block is open (functions.inference_mode)


class Tensor:
    """An array with an optional gradient.

    Parameters
    ----------
    data : array_like
        numpy or cupy array, nested list or scalar.
    requires_grad : bool
        Track operations on this tensor so ``backward`` can fill ``.grad``.
    device : str or Device, optional
        ``cpu`` or ``cuda:N``; default: where ``data`` already lives (host for lists).
    dtype : str or numpy dtype, optional
        Default float32 for float input; integer and bool input keep their dtype.
    """

    __array_priority__ = 1000  # numpy's ufuncs: tensor_numpy's __array_ufunc__
    _untracked = False  # True on ``p.data``'s tensors: their in-place writes are not versioned
    _inference = False  # made inside ``inference_mode()`` (torch's inference tensor)

    def is_inference(self) -> bool:
        """torch's: whether this tensor was made inside an ``inference_mode()`` block."""
        return self._inference

    def __init__(self, data=None, *sizes, requires_grad=False, device=None, dtype=None):
        if sizes or data is None or (type(data) is int and _from_user()):  # torch's legacy
            # Tensor(3, 4), Tensor(5), Tensor(); skiff's own code keeps Tensor(5) a value
            shape = (() if data is None else (data,)) + sizes
            if not all(type(n) is int and n >= 0 for n in shape):
                raise TypeError(f"Tensor(*sizes) takes non-negative ints, got {shape}; pass one "
                                "array or list for the values (skiff.tensor([...]))")
            data = np.zeros(shape if shape else (0,), dtype=dtype or _dd.FLOAT)  # (torch's are
            # uninitialised; code that uses them fills them: reset_parameters, normal_)
        arr = as_array(data, dtype=dtype, device=device)
        if requires_grad:
            from .shape_error import check_grad_dtype

            check_grad_dtype(arr.dtype)
        self._data = arr
        self.requires_grad = bool(requires_grad)
        self._grad = None
        self._node = None
        self._idx = 0
        self._ready_hooks = None
        if _IN_INFERENCE:
            self._inference = True

    # ---- .data and .grad: tensors over the raw arrays (torch's), no copy ---------------------
    _grad_t = None  # the cached Tensor that ``.grad`` returns (over ``_grad``)
    _grad_hooks = None  # Tensor.register_hook functions, run on this tensor's gradient

    @property
    def data(self) -> Tensor:
        """This tensor's array as a tensor cut from the graph (torch's ``.data``): it shares the
        memory, so ``p.data.copy_(w)``, ``p.data -= lr * p.grad`` or ``p.data.fill_(0)``
        change ``p`` and record nothing. Assigning a tensor or an array replaces the array.
        As torch's, writes through it bump no version: autograd does not see them."""
        t = Tensor._make(self._data, False, None, 0)
        t._untracked = True
        return t

    @data.setter
    def data(self, value) -> None:
        arr = value._data if isinstance(value, Tensor) else value
        if not hasattr(arr, "dtype") or not hasattr(arr, "shape"):
            arr = as_array(arr, dtype=self._data.dtype)
        self._data = arr

    @property
    def _version(self) -> int:
        """torch's ``_version``: in-place writes made to this tensor's storage so far."""
        return autograd.version_of(self._data)

    @property
    def grad(self):
        """The accumulated gradient as a tensor (None before a backward or after ``p.grad =
        None``): the same tensor on each read while the gradient's array stays, sharing its
        memory, so ``p.grad.zero_()`` or ``p.grad.mul_(0.5)`` change the gradient itself."""
        g = self._grad
        if g is None:
            return None
        t = self._grad_t
        if t is None or t._data is not g:
            t = self._grad_t = Tensor._make(g, False, None, 0)
        return t

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            self._grad = None
            return
        arr = value._data if isinstance(value, Tensor) else value
        if not hasattr(arr, "dtype") or not hasattr(arr, "shape"):
            arr = as_array(arr, dtype=self._data.dtype)
        if tuple(arr.shape) != tuple(self._data.shape):
            raise RuntimeError(
                f"assigned grad has shape {tuple(arr.shape)}, the tensor {tuple(self.shape)}")
        if arr.dtype != self._data.dtype:
            raise RuntimeError(
                f"assigned grad has dtype {arr.dtype}, the tensor {self._data.dtype}")
        self._grad = arr

    @classmethod
    def _make(cls, data, requires_grad, node, idx):
        t = Tensor.__new__(Tensor)
        if isinstance(data, np.generic):  # numpy reductions return scalars; keep 0-d arrays
            data = np.asarray(data)
        t._data = data
        t.requires_grad = requires_grad
        t._grad = None
        t._node = node
        t._idx = idx
        t._ready_hooks = None
        if _IN_INFERENCE:
            t._inference = True
        return t

    # ---- properties ---------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        # round 45 (h7): torch's ``torch.Size`` (its repr, ``x.shape[1:]`` a Size, ``numel()``);
        # equal to and hashing as the plain tuple; ~0.1 us per read
        return _tuple_new(_TorchSize, self._data.shape)

    @property
    def dtype(self):
        # round 45 (h7): numpy's dtype answering torch's attributes too (``is_floating_point``,
        # ``is_complex``, ``is_signed``, ``to_real()``, ``to_complex()``): equal to, hashing
        # and an instance of the numpy dtype (:mod:`.dtype_r42`)
        d = self._data.dtype
        out = _DTYPES.get(d)
        return _torch_dtype(d) if out is None else out

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        """The element count (numpy's ``size``); called, torch's ``size()``: the shape, or
        ``size(d)`` one axis's length."""
        return _Size(int(self._data.size), self._data.shape)

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    @property
    def device(self):
        if type(self._data) is _meta.MetaArray:
            return _meta.META
        return device_of(self._data)

    @property
    def is_meta(self) -> bool:
        """torch's: a tensor on the ``meta`` device (a shape and a dtype, no data)."""
        return type(self.__dict__.get("_data")) is _meta.MetaArray

    @property
    def xp(self):
        return autograd.xp_of(self._data)

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def is_cuda(self) -> bool:
        """torch's ``is_cuda``: the data is a GPU (cupy) array; ``is_cpu`` the opposite."""
        return not isinstance(self._data, np.ndarray) and self.device.kind != "cpu"

    @property
    def is_cpu(self) -> bool:
        return not self.is_cuda

    # torch's layout and kind flags: skiff's tensors (gradients of ``sparse=True``
    # embeddings too) are always dense, strided, unquantized and real-device
    is_sparse = is_sparse_csr = is_quantized = is_nested = is_mkldnn = False

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        grad = ", requires_grad=True" if self.requires_grad else ""
        if type(self._data) is _meta.MetaArray:  # torch's: no values to show
            return f"tensor(..., device='meta', size={tuple(self.shape)}{grad})"
        dev = "" if type(self._data) is np.ndarray else f", device={self.device}"
        body = np.array2string(to_numpy(self._data), separator=", ",
                               precision=_runtime.PRINT["precision"])
        return f"tensor({body}, dtype={self.dtype}{dev}{grad})"

    # ---- conversion ---------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """A host numpy copy (a view for host data)."""
        if type(self._data) is _meta.MetaArray:
            raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() "
                            "to copy the tensor to host memory first.")
        return to_numpy(self._data)

    def item(self):
        if self._data.size != 1:
            from .shape_error import ShapeError

            raise ShapeError(f"a Tensor with {self._data.size} elements cannot be converted to "
                             "Scalar")
        if type(self._data) is _meta.MetaArray:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return to_numpy(self._data).item()

    def tolist(self):
        if type(self._data) is _meta.MetaArray:
            raise NotImplementedError(_meta.NO_DATA)
        return to_numpy(self._data).tolist()

    def detach(self) -> Tensor:
        """The same array, cut from the graph."""
        return Tensor._make(self._data, False, None, 0)

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place (torch's): it becomes a leaf."""
        self._node, self._idx, self.requires_grad = None, 0, False
        return self

    @property
    def grad_fn(self):
        """The node that made this tensor (None for a leaf), as torch's ``grad_fn``."""
        return self._node

    def requires_grad_(self, flag: bool = True) -> Tensor:
        if not self.is_leaf:  # torch's: True on a computed tensor is a no-op (it requires grad)
            if flag:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        if flag:  # torch's refusal of integer and bool tensors
            from .shape_error import check_grad_dtype

            check_grad_dtype(self.dtype)
        self.requires_grad = bool(flag)
        return self

    def to(self, device=None, dtype=None, **_) -> Tensor:
        """This tensor on ``device`` and/or of ``dtype`` (``x.to("cpu")``, ``x.to(skiff.float64)``,
        ``x.to(other)``; itself when nothing changes); differentiable."""
        if isinstance(device, Tensor):
            device, dtype = device.device, device.dtype
        elif device is not None and not isinstance(device, str) and _is_dtype_like(device) or (
                isinstance(device, str) and device in _FLOATS):
            device, dtype = None, device
        if type(self.__dict__.get("_data")) is _meta.MetaArray or _meta.is_meta_spec(device):
            return self._to_meta(device, dtype)  # (the dict: a vmap stand-in has no _data)
        out = self if dtype is None else self.astype(dtype)
        dev = resolve_device(device) if device is not None else out.device
        if dev == out.device:
            return out
        return _ToDevice.apply(out, device=dev)

    def _to_meta(self, device, dtype):
        """``to`` of a meta tensor (torch's: a meta tensor of the dtype; another device has no
        data to copy) or to the meta device (the shape and dtype, not the values)."""
        if device is not None and not _meta.is_meta_spec(device):
            raise NotImplementedError(_meta.NO_DATA)
        dt = _as_dtype(dtype) or self.dtype
        if type(self._data) is _meta.MetaArray and dt == self.dtype:
            return self
        return Tensor._make(_meta.meta_array(self.shape, dt), False, None, 0)

    def astype(self, dtype) -> Tensor:
        dt = _as_dtype(dtype)
        if dt == self.dtype:
            return self
        return M.Cast.apply(self, dtype=dt)

    def float(self) -> Tensor:
        return self.astype(np.float32)

    def double(self) -> Tensor:
        return self.astype(np.float64)

    # ---- autograd -----------------------------------------------------------------------
    def backward(self, grad=None, retain_graph: bool = False, create_graph: bool = False,
                 inputs=None) -> None:
        """Accumulate d(self)/d(leaf) * grad into every leaf's ``.grad``.

        ``grad`` defaults to 1 for a scalar; other shapes need it. ``create_graph=True``
        (torch's): the gradients added are tensors in the graph, so ``p.grad`` can be
        differentiated again (``inputs``: only those leaves).
        """
        if create_graph or inputs is not None:
            from .tensor_torch import backward_create_graph

            return backward_create_graph(self, grad, inputs, create_graph, retain_graph)
        if not self.requires_grad:
            raise RuntimeError(NO_GRAD_MESSAGE)
        if grad is None:
            if self._data.size != 1:
                raise RuntimeError(
                    f"backward needs a grad argument for a non-scalar tensor of shape {self.shape}"
                )
            grad = self.xp.ones(self.shape, dtype=self.dtype)
        else:
            grad = as_array(grad, dtype=self.dtype)
            if grad.shape != self.shape:
                from .shape_error import ShapeError

                raise ShapeError(f"grad shape {grad.shape} != tensor shape {self.shape} (Mismatch "
                                 f"in shape: grad_output[0] and output[0])")
        autograd.run_backward(self, grad, retain_graph=retain_graph)

    def zero_grad(self) -> None:
        self._grad = None

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` after backward (torch's)."""
        if self.is_leaf:
            return
        if not self.requires_grad:
            raise RuntimeError("retain_grad on a tensor that does not require grad")
        if not getattr(self, "_retains", False):
            self._retains = True
            autograd.watch_output(self, _retain)

    @property
    def retains_grad(self) -> bool:
        return bool(getattr(self, "_retains", False))

    def register_hook(self, fn):
        """Call ``fn(grad)`` with this tensor's gradient (a tensor) in backward; a tensor it
        returns replaces the gradient (torch's ``register_hook``). On a leaf the hook sees each
        backward's whole contribution before it is added to ``.grad``; on a computed tensor, the
        summed gradient before it flows on. Returns a handle whose ``remove()`` drops it."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that does not require grad")
        if self._grad_hooks is None:
            self._grad_hooks = []
            if not self.is_leaf:
                autograd.watch_output(self, _Hooks(self._grad_hooks), first=True)
        self._grad_hooks.append(fn)
        return _HookHandle(self._grad_hooks, fn)

    def register_grad_ready_hook(self, fn):
        """Call ``fn(self)`` as soon as this leaf's gradient of a backward pass is complete.

        Returns a handle whose ``remove()`` unregisters the hook.
        """
        if not self.is_leaf:
            raise RuntimeError("grad-ready hooks go on leaf tensors (parameters)")
        if self._ready_hooks is None:
            self._ready_hooks = []
        self._ready_hooks.append(fn)
        return _HookHandle(self._ready_hooks, fn)

    # ---- arithmetic ---------------------------------------------------------------------
    def __add__(self, o):
        return M.Add.apply(*_promote(self, o, False))

    def __radd__(self, o):
        return M.Add.apply(*_promote(o, self, False))

    def __sub__(self, o):
        return M.Sub.apply(*_promote(self, o, False))

    def __rsub__(self, o):
        return M.Sub.apply(*_promote(o, self, False))

    def __mul__(self, o):
        return M.Mul.apply(*_promote(self, o, False))

    def __rmul__(self, o):
        return M.Mul.apply(*_promote(o, self, False))

    def __truediv__(self, o):
        return M.Div.apply(*_promote(self, o, True))

    def __rtruediv__(self, o):
        return M.Div.apply(*_promote(o, self, True))

    def __pow__(self, o):
        return M.Pow.apply(*_promote(self, o, False))

    def __rpow__(self, o):
        return M.Pow.apply(*_promote(o, self, False))

    # in place, as torch's ``x += y``: on the array when autograd records nothing (a parameter
    # under no_grad, ``p.data``, ``p.grad``), else by taking the result's place in the graph
    def __iadd__(self, o):
        return self._inplace(o, "+=")

    def __isub__(self, o):
        return self._inplace(o, "-=")

    def __imul__(self, o):
        return self._inplace(o, "*=")

    def __itruediv__(self, o):
        return self._inplace(o, "/=")

    def _inplace(self, o, what):
        from .tensor_torch import inplace_binary

        return inplace_binary(self, o, what)

    def __neg__(self):
        return M.Neg.apply(self)

    def __abs__(self):
        return M.Abs.apply(self)

    def __matmul__(self, o):
        if _ac.LOW is not None:  # autocast("cpu"): torch's lower-precision op
            return M.MatMul.apply(*_ac.low(self, o))
        return M.MatMul.apply(self, o)

    def __rmatmul__(self, o):
        if _ac.LOW is not None:
            return M.MatMul.apply(*_ac.low(o, self))
        return M.MatMul.apply(o, self)

    # comparisons: no gradient, boolean tensors
    def _cmp(self, o, op):
        if getattr(o, "_batched", False):  # a vmap-batched operand (vmap_r30)
            return o._rcmp(self, op)
        other = o._data if isinstance(o, Tensor) else (
            _wrap_int(self.dtype, o) if self.dtype.kind in "iu" else o)
        return Tensor._make(op(self._data, other), False, None, 0)

    def __lt__(self, o):
        return self._cmp(o, lambda a, b: a < b)

    def __le__(self, o):
        return self._cmp(o, lambda a, b: a <= b)

    def __gt__(self, o):
        return self._cmp(o, lambda a, b: a > b)

    def __ge__(self, o):
        return self._cmp(o, lambda a, b: a >= b)

    def __eq__(self, o):  # elementwise, as torch's (``t is u`` asks for the same tensor)
        return self._cmp(o, lambda a, b: a == b)

    def __ne__(self, o):
        return self._cmp(o, lambda a, b: a != b)

    eq, ne = __eq__, __ne__
    # hashed by identity: a tensor stays a dict key or a set member (a dict compares hashes
    # before ``==``, and no two live tensors share one)
    __hash__ = object.__hash__

    # logical (bool tensors) or bitwise (integer tensors) operators, as torch's: no gradient
    def __and__(self, o):
        return self._cmp(o, lambda a, b: a & b)

    def __or__(self, o):
        return self._cmp(o, lambda a, b: a | b)

    def __xor__(self, o):
        return self._cmp(o, lambda a, b: a ^ b)

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def __lshift__(self, o):  # integer shifts (torch's bitwise_left/right_shift)
        return self._cmp(o, lambda a, b: a << b)

    def __rshift__(self, o):
        return self._cmp(o, lambda a, b: a >> b)

    def __rlshift__(self, o):
        return self._cmp(o, lambda a, b: b << a)

    def __rrshift__(self, o):
        return self._cmp(o, lambda a, b: b >> a)

    bitwise_left_shift, bitwise_right_shift = __lshift__, __rshift__

    def __invert__(self):
        if self.dtype.kind not in "biu":
            raise TypeError(f"~ needs a bool or integer tensor, got dtype {self.dtype}")
        return Tensor._make(~self._data, False, None, 0)

    def __bool__(self):
        if self._data.size != 1:
            raise ValueError(f"truth value of a tensor of shape {self.shape} is ambiguous")
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __format__(self, spec):
        """``f"{loss:.4f}"``: a one-element tensor formats as its number (as torch's)."""
        if self._data.size == 1 and spec:
            return format(self.item(), spec)
        return format(repr(self), spec)

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)``: the host array (a view on the CPU; a copy from a GPU)."""
        arr = to_numpy(self._data)
        if dtype is not None and arr.dtype != np.dtype(dtype):
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    # ---- elementwise math ---------------------------------------------------------------
    def exp(self):
        return M.Exp.apply(_floating(self))

    def log(self):
        return M.Log.apply(_floating(self))

    def tanh(self):
        return M.Tanh.apply(_floating(self))

    def sqrt(self):
        return M.Sqrt.apply(_floating(self))

    def abs(self):
        return M.Abs.apply(self)

    def sigmoid(self):
        return M.Sigmoid.apply(_floating(self))

    def relu(self):
        return M.Relu.apply(self)

    # ---- reductions (numpy's axis=/keepdims=, or torch's dim=/keepdim=; max, min, var and
    # std, whose torch and numpy meanings differ, are tensor_more's) -----------------------
    def sum(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        axis, keepdims = _torch_axis(axis, keepdims, dim, keepdim)
        return M.Sum.apply(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        axis, keepdims = _torch_axis(axis, keepdims, dim, keepdim)
        return M.Mean.apply(self, axis=axis, keepdims=keepdims)

    def argmax(self, axis=None, *, dim=None, keepdim=False):
        axis = dim if dim is not None else axis
        out = self.xp.argmax(self._data, axis=axis)
        if keepdim and axis is not None:
            out = self.xp.expand_dims(out, axis)
        return Tensor._make(out, False, None, 0)

    # ---- shape --------------------------------------------------------------------------
    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if shape == self.shape:
            return self
        return S.Reshape.apply(self, shape=shape)

    view = reshape

    def transpose(self, *axes):
        """numpy's permutation of the axes (a tuple, or every axis listed); two axes alone
        are torch's: those two swapped (``x.transpose(1, 2)``)."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        elif len(axes) == 2 and (self.ndim != 2 or all(isinstance(ax, int) for ax in axes)
                                 and tuple(ax % 2 for ax in axes) == (0, 1)):
            # on 2-D, (0, 1) and (-2, -1) as torch's swap, not numpy's identity permutation
            a, b = (ax % self.ndim for ax in axes)
            perm = list(range(self.ndim))
            perm[a], perm[b] = perm[b], perm[a]
            axes = tuple(perm)
        return S.Transpose.apply(self, axes=axes or None)

    def permute(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return S.Transpose.apply(self, axes=axes or None)


    @property
    def T(self):
        return S.Transpose.apply(self, axes=None)

    def swapaxes(self, a, b):
        axes = list(range(self.ndim))
        axes[a], axes[b] = axes[b], axes[a]
        return S.Transpose.apply(self, axes=tuple(axes))

    def swapdims(self, a, b):  # torch's other name
        return self.swapaxes(a, b)

    def flatten(self, start_axis=0, end_axis=-1, *, start_dim=None, end_dim=None):
        from .shape_error import wrap_dim

        if start_dim is not None:  # torch's keywords (CLIP: x.flatten(start_dim=2))
            start_axis = start_dim
        if end_dim is not None:
            end_axis = end_dim
        nd = self.ndim
        s, e = wrap_dim(start_axis, nd), wrap_dim(end_axis, nd)
        shape = self.shape[:s] + (int(np.prod(self.shape[s : e + 1])),) + self.shape[e + 1 :]
        return self.reshape(shape)

    def unsqueeze(self, axis=None, *, dim=None):
        from .shape_error import wrap_dim

        axis = wrap_dim(axis if dim is None else dim, self.ndim + 1)
        return self.reshape(self.shape[:axis] + (1,) + self.shape[axis:])

    def squeeze(self, axis=None, *, dim=None):
        """Drop the axes of length 1 (those of ``axis``/``dim`` only; one of another length
        stays, as torch's)."""
        axis = axis if dim is None else dim
        if axis is None:
            shape = tuple(s for s in self.shape if s != 1)
        else:
            from .shape_error import wrap_dim

            axes = {wrap_dim(a, self.ndim) for a in ((axis,) if isinstance(axis, int) else axis)}
            shape = tuple(s for i, s in enumerate(self.shape) if i not in axes or s != 1)
        return self.reshape(shape)

    def expand(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        lead = len(shape) - self.ndim
        if any(s == -1 for s in shape[:max(lead, 0)]):  # torch's (shape[i - lead] wrapped)
            from .shape_error import ShapeError

            raise ShapeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                             f"non-existing dimension {shape.index(-1)}")
        shape = tuple(self.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
        return S.Expand.apply(self, shape=shape)

    def __getitem__(self, index):
        raw = _raw_index(index)
        out = S.GetItem.apply(self, index=raw)
        if out.requires_grad and not S._is_advanced(raw):
            # a view (torch's basic indexing): an in-place op on it in the graph writes
            # through to this tensor (tensor_torch._assign), as torch's does
            out._view_of = (self, raw)
        return out

    def masked_fill(self, mask, value):
        if isinstance(value, Tensor) and value.requires_grad:
            # torch's: a 0-d value tensor is differentiated too (a gradient penalty's or a
            # learned pad's value); round 44
            if value.ndim:
                raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, "
                                   f"but got tensor with {value.ndim} dimension(s).")
            out = where(mask, value.astype(self.dtype), self)
            return out if out.shape == self.shape else out.expand(*self.shape)
        m = mask._data if isinstance(mask, Tensor) and not getattr(mask, "_batched", False) \
            else mask
        return S.MaskedFill.apply(self, m, value=value)

    def split(self, split_size, axis=0, *, dim=None):
        return split(self, split_size, axis if dim is None else dim)


_KIND = {"u": "i"}  # torch's categories: unsigned and signed integers are one


def _wrap_int(dtype, v):
    """A Python int out of an integer tensor's range as torch takes it: cast to the tensor's
    dtype, wrapping around (``uint8 * 300`` is ``uint8 * 44``; numpy 2 raised
    OverflowError)."""
    if type(v) is not int:
        return v
    info = np.iinfo(dtype)
    if info.min <= v <= info.max:
        return v
    return np.array(v & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64).astype(dtype).item()


def _promote(a, b, divide=False):
    """torch's type promotion where numpy's differs: an integer or bool tensor meeting a
    Python float becomes float32, meeting a float tensor takes its dtype (numpy would give
    float64 for both), ``/`` of two integer tensors is float32, and a zero-dim tensor meeting
    a tensor of more dimensions and the same kind takes that one's dtype. A numpy scalar
    counts as the Python number it holds, as torch counts it (float32 weights times
    ``np.float64(0.5)`` stay float32)."""
    if isinstance(a, np.generic):
        a = a.item()
    if isinstance(b, np.generic):
        b = b.item()
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    ka = a.dtype.kind if ta else None
    kb = b.dtype.kind if tb else None
    if ka in ("i", "u") and not tb:
        b = _wrap_int(a.dtype, b)
    elif kb in ("i", "u") and not ta:
        a = _wrap_int(b.dtype, a)
    if ka in ("i", "u", "b") and (kb == "f" or isinstance(b, float) or divide and kb != "f"):
        a = a.astype(b.dtype if kb == "f" else _dd.FLOAT)
    if kb in ("i", "u", "b") and (ka == "f" or isinstance(a, float) or divide and ka != "f"):
        b = b.astype(a.dtype if ka == "f" else _dd.FLOAT)
    elif ta and tb and _KIND.get(ka, ka) == _KIND.get(kb, kb) and a.dtype != b.dtype and (
            a.ndim == 0) != (b.ndim == 0):
        # a zero-dim tensor of the same kind takes the other's dtype (torch: float32 weights
        # times a float64 scalar tensor stay float32; numpy would give float64)
        if a.ndim == 0:
            a = a.astype(b.dtype)
        else:
            b = b.astype(a.dtype)
    return a, b


def _floating(t):
    """An integer or bool tensor as the default float (torch's exp, log, sqrt, ... of them)."""
    return t.astype(_dd.FLOAT) if t.dtype.kind in ("i", "u", "b") else t


class _HookHandle:
    def __init__(self, hooks, fn):
        self._hooks, self._fn = hooks, fn

    def remove(self):
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


def _retain(t, g):
    """``retain_grad``'s watcher: accumulate the output's gradient into ``.grad``."""
    if t._grad is None:
        t._grad = g.copy()
    else:
        t._grad = t._grad + g
    return g


def _run_grad_hooks(t, g):
    """Run ``register_hook`` functions on an array gradient; return the (maybe new) array."""
    for fn in list(t._grad_hooks or ()):
        out = fn(Tensor._make(g, False, None, 0))
        if out is not None:
            g = out._data if isinstance(out, Tensor) else out
    return g


class _Hooks:
    """A computed tensor's ``register_hook`` functions as its node's watcher: it holds the list,
    not the tensor, so the hooks run when the tensor itself is gone (a hook registered on a
    local inside ``forward``, as Grad-CAM does), as torch's hooks live on the graph."""

    strong = True  # autograd._watched runs it when the tensor is no longer alive

    def __init__(self, hooks):
        self.hooks = hooks

    def __call__(self, t, g):
        for fn in list(self.hooks):
            out = fn(Tensor._make(g, False, None, 0))
            if out is not None:
                g = out._data if isinstance(out, Tensor) else out
        return g


def _raw_index(index):
    if isinstance(index, Tensor):
        return index._data
    if isinstance(index, tuple):
        return tuple(i._data if isinstance(i, Tensor) else i for i in index)
    if isinstance(index, list):
        return np.asarray(index)
    return index


class _ToDevice(Function):
    def forward(self, a, device=None):
        self.src = device_of(a)
        return to_device(a, device)

    def backward(self, g):
        return to_device(g, self.src)


tune_allocator()


def tensor(data, *, requires_grad=False, device=None, dtype=None) -> Tensor:
    device = _meta.factory_device(device)  # meta inside torch.device("meta")
    """torch's ``tensor``: a new tensor holding a copy of ``data`` (as torch's; ``as_tensor`` and
    ``from_numpy`` share the memory); a numpy (or cupy) float array keeps its dtype (float64
    stays float64, as in torch); lists and numbers of floats become float32."""
    if dtype is None and getattr(data, "dtype", None) is not None and not isinstance(
            data, Tensor) and getattr(data.dtype, "kind", "") == "f":
        dtype = data.dtype
    out = Tensor(data, requires_grad=requires_grad, device=device, dtype=dtype)
    if out._data is (data._data if isinstance(data, Tensor) else data):
        out._data = out._data.copy()  # torch's tensor() copies (as_tensor/from_numpy share)
    return out


# ---- joining ------------------------------------------------------------------------------
def _wrap(x):
    return x if isinstance(x, Tensor) else Tensor(x)


@with_out
def cat(tensors, axis=0, *, dim=None) -> Tensor:
    """Concatenate along ``axis`` (torch's ``dim``)."""
    axis = axis if dim is None else dim
    tensors = [_wrap(t) for t in tensors]
    if not tensors:
        raise ValueError("cat needs at least one tensor")
    return S.Cat.apply(*_common_dtype(tensors), axis=axis)


def _common_dtype(tensors):
    """torch's ``cat``/``stack`` dtype: the highest category's dtypes promoted (an int64 and a
    float32 tensor give float32; numpy gave float64)."""
    dts = {np.dtype(t.dtype) for t in tensors}
    if len(dts) < 2 or any(getattr(t, "_batched", False) for t in tensors):
        return tensors
    dt = _promote_top(list(dts))
    return [t if t.dtype == dt else t.astype(dt) for t in tensors]


@with_out
def stack(tensors, axis=0, *, dim=None) -> Tensor:
    """Stack along a new ``axis`` (torch's ``dim``)."""
    axis = axis if dim is None else dim
    tensors = [_wrap(t) for t in tensors]
    if not tensors:
        raise ValueError("stack needs at least one tensor")
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != tensors[0].shape:  # torch's RuntimeError and words
            from .shape_error import ShapeError

            raise ShapeError(f"stack expects each tensor to be equal size, but got "
                             f"{list(tensors[0].shape)} at entry 0 and {list(t.shape)} at "
                             f"entry {i}")
    return S.Stack.apply(*_common_dtype(tensors), axis=axis)


def split(x, split_size, axis=0, *, dim=None) -> tuple:
    """Split into chunks of ``split_size`` (int) or of the listed sizes (like torch.split)."""
    axis = axis if dim is None else dim
    n = x.shape[axis]
    if isinstance(split_size, int):
        if split_size <= 0:
            raise ValueError(f"split_size must be positive, got {split_size!r}")
        sizes = [split_size] * (n // split_size) + ([n % split_size] if n % split_size else [])
    else:
        sizes = [int(s) for s in split_size]
        if sum(sizes) != n:
            raise ValueError(f"split sizes {sizes} do not add up to axis length {n}")
    from .tensor_torch import mark_pieces  # in-place ops on the pieces refused, as torch's

    return mark_pieces(S.Split.apply(x, sizes=sizes, axis=axis), "split")


@with_out
def where(cond, a=None, b=None) -> Tensor:
    """``a`` where ``cond`` else ``b`` (broadcasting); differentiable in ``a`` and ``b``.
    ``where(cond)`` alone is torch's ``nonzero(cond, as_tuple=True)``."""
    if a is None and b is None:
        if not isinstance(cond, Tensor):
            cond = Tensor(np.asarray(cond))
        return cond.nonzero(as_tuple=True)
    c = cond._data if isinstance(cond, Tensor) and not getattr(cond, "_batched", False) else cond
    if not (getattr(a, "_batched", False) or getattr(b, "_batched", False)):
        dt = result_type(a, b)
        if hasattr(a, "dtype") or hasattr(b, "dtype"):  # a Python number stays weak
            a, b = (_cast_to(v, dt) for v in (a, b))
        else:  # two numbers: numpy's where would give float64 / int64
            with np.errstate(over="ignore"):
                a, b = (np.asarray(v).astype(dt)[()] for v in (a, b))
    return S.Where.apply(c, a, b)


_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _scalar_category(v):
    if isinstance(v, (bool, np.bool_)):
        return 0
    if isinstance(v, (int, np.integer)):
        return 1
    return 3 if isinstance(v, (complex, np.complexfloating)) else 2


def _promote_top(dtypes):
    """torch's promotion within one priority: the highest category's dtypes promoted."""
    def cat(d):  # bfloat16 (ml_dtypes: kind 'V') is a float
        return _CATEGORY["f"] if d.name == "bfloat16" else _CATEGORY[d.kind]

    top = max(cat(d) for d in dtypes)
    out = None
    for d in dtypes:
        if cat(d) == top:
            if out is None or out == d:
                out = d
            elif "bfloat16" in (out.name, d.name):  # torch's: bf16 with f16 is f32, with
                wide = max(out, d, key=lambda t: t.itemsize)  # a wider float the wider one
                out = np.dtype(np.float32) if wide.itemsize == 2 else wide
            else:
                out = np.promote_types(out, d)
    return out


def result_type(*operands) -> np.dtype:
    """torch's ``result_type``: tensors of one or more dimensions first, then zero-dim ones,
    then Python numbers; a lower priority counts only where its category (bool < integer <
    float < complex) is higher, a Python number then giving the default dtype of its
    category (``where(c, 0.5, int_tensor)`` and ``clamp(int_tensor, 0.5)`` are float32;
    numpy gave float64)."""
    dims, zero, scalars = [], [], []
    for v in operands:
        if v is None:
            continue
        if hasattr(v, "dtype") and hasattr(v, "ndim"):
            (dims if v.ndim else zero).append(np.dtype(v.dtype))
        elif isinstance(v, (bool, int, float, complex, np.generic)):
            scalars.append(_scalar_category(v))
    out = _promote_top(dims) if dims else None
    if zero:
        z = _promote_top(zero)
        if out is None or _CATEGORY[z.kind] > _CATEGORY[out.kind]:
            out = z
    if scalars:
        top = max(scalars)
        if out is None or top > _CATEGORY[out.kind]:
            complex_default = np.dtype(np.complex128 if np.dtype(_dd.FLOAT) == np.float64
                                       else np.complex64)
            if top == 3 and out is not None and out == np.float64:
                complex_default = np.dtype(np.complex128)
            out = (np.dtype(np.bool_), np.dtype(np.int64), np.dtype(_dd.FLOAT),
                   complex_default)[top]
    return out


def _cast_to(v, dt):
    """A tensor or array as ``dt`` (the same object when it is already); numbers as given."""
    if dt is None or not hasattr(v, "dtype") or np.dtype(v.dtype) == dt:
        return v
    return v.astype(dt)


# ---- creation -----------------------------------------------------------------------------
def _xp_dtype(device, dtype, default=None):
    return xp_for(device if device is not None else "cpu"), _as_dtype(dtype) or np.dtype(
        default or _dd.FLOAT)


@with_out(creation=True)
def zeros(*shape, size=None, device=None, dtype=None, requires_grad=False) -> Tensor:
    shape = _size_kw(shape, size)  # torch's ``size=`` keyword (round 45 h7)
    device = _meta.factory_device(device)  # meta inside torch.device("meta")
    shape = _shape_arg(shape)
    if _meta.is_meta_spec(device):
        return Tensor(np.broadcast_to(np.zeros((), dtype=_as_dtype(dtype) or _dd.FLOAT), shape),
                      device=device, dtype=dtype, requires_grad=requires_grad)
    xp, dt = _xp_dtype(device, dtype)
    return Tensor(xp.zeros(shape, dtype=dt), requires_grad=requires_grad, dtype=dt)


@with_out(creation=True)
def ones(*shape, size=None, device=None, dtype=None, requires_grad=False) -> Tensor:
    shape = _size_kw(shape, size)  # torch's ``size=`` keyword (round 45 h7)
    device = _meta.factory_device(device)  # meta inside torch.device("meta")
    shape = _shape_arg(shape)
    if _meta.is_meta_spec(device):
        return Tensor(np.broadcast_to(np.ones((), dtype=_as_dtype(dtype) or _dd.FLOAT), shape),
                      device=device, dtype=dtype, requires_grad=requires_grad)
    xp, dt = _xp_dtype(device, dtype)
    return Tensor(xp.ones(shape, dtype=dt), requires_grad=requires_grad, dtype=dt)


def _full_dtype(value):
    """torch's dtype for ``full`` without one: bool from a bool, int64 from an int, the default
    complex from a complex, else the default float (also for a zero-dim tensor's value)."""
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, (int, np.integer)):
        return np.dtype(np.int64)
    if isinstance(value, (complex, np.complexfloating)):
        return np.dtype(np.complex128 if np.dtype(_dd.FLOAT) == np.float64 else np.complex64)
    return None


@with_out(creation=True)
def full(shape=None, value=None, device=None, dtype=None, requires_grad=False, *, size=None,
         fill_value=None) -> Tensor:
    # torch's keywords ``full(size=, fill_value=)`` too (round 45 h7: were TypeErrors)
    shape = _size_kw((shape,) if shape is not None else (), size)
    shape = shape[0] if len(shape) == 1 else shape
    if value is None:
        if fill_value is None:
            raise TypeError("full() missing required argument 'fill_value'")
        value = fill_value
    device = _meta.factory_device(device)  # meta inside torch.device("meta")
    if dtype is None:
        dtype = _full_dtype(value)
    if _meta.is_meta_spec(device):
        return Tensor(_meta.meta_array(_shape_arg((shape,)), _as_dtype(dtype)), dtype=dtype,
                      requires_grad=requires_grad)
    xp, dt = _xp_dtype(device, dtype)
    if dt.kind == "f" and isinstance(value, (int, float)) and math.isfinite(value) and abs(
            value) > float(np.finfo(dt).max):  # torch's refusal (numpy warned, gave inf)
        raise RuntimeError(f"value cannot be converted to type {dt} without overflow")
    return Tensor(xp.full(_shape_arg((shape,)), value, dtype=dt), requires_grad=requires_grad,
                  dtype=dt)


def _per_sample(draw, shape, dt, device, generator):
    """Inside a batched ``vmap`` call with ``randomness="different"``: one draw per sample as
    a batched tensor (vmap_r30.draw_per_sample); else None."""
    from . import random as _rnd

    if _rnd.batched_draw is None or dt.kind == "c" or device not in (None, "cpu"):
        return None
    return _rnd.batched_draw(draw, tuple(shape), generator)


@with_out(creation=True)
def randn(*shape, size=None, device=None, dtype=None, requires_grad=False,
          generator=None) -> Tensor:
    """Standard normal samples from the seeded generator (drawn on the host)."""
    shape = _size_kw(shape, size)  # torch's ``size=`` keyword (round 45 h7)
    shape = _shape_arg(shape)
    dt = _as_dtype(dtype) or _dd.FLOAT
    device = _meta.factory_device(device)
    if _meta.is_meta_spec(device):  # torch's: a shape and dtype, nothing drawn
        return Tensor(_meta.meta_array(shape, dt), dtype=dt, requires_grad=requires_grad)
    batched = _per_sample(lambda g, s: g.standard_normal(s).astype(dt), shape, dt, device,
                          generator)
    if batched is not None:
        return batched
    if dt.kind == "c":  # torch's complex normal: each part N(0, 1/2), variance 1 in all
        pair = get_generator(generator).standard_normal((*shape, 2)) * 0.5 ** 0.5
        host = (pair[..., 0] + 1j * pair[..., 1]).astype(dt)
    else:
        host = get_generator(generator).standard_normal(shape).astype(dt)
    return Tensor(host, device=device, dtype=dt, requires_grad=requires_grad)


@with_out(creation=True)
def rand(*shape, size=None, device=None, dtype=None, requires_grad=False,
         generator=None) -> Tensor:
    """Uniform [0, 1) samples from the seeded generator (drawn on the host)."""
    shape = _size_kw(shape, size)  # torch's ``size=`` keyword (round 45 h7)
    shape = _shape_arg(shape)
    dt = _as_dtype(dtype) or _dd.FLOAT
    device = _meta.factory_device(device)
    if _meta.is_meta_spec(device):  # torch's: a shape and dtype, nothing drawn
        return Tensor(_meta.meta_array(shape, dt), dtype=dt, requires_grad=requires_grad)
    batched = _per_sample(lambda g, s: g.random(s).astype(dt), shape, dt, device, generator)
    if batched is not None:
        return batched
    if dt.kind == "c":  # torch's: both parts uniform on [0, 1)
        pair = get_generator(generator).random((*shape, 2))
        host = (pair[..., 0] + 1j * pair[..., 1]).astype(dt)
    else:
        host = get_generator(generator).random(shape).astype(dt)
    return Tensor(host, device=device, dtype=dt, requires_grad=requires_grad)


@with_out(creation=True)
def arange(start, stop=None, step=1, device=None, dtype=None) -> Tensor:
    device = _meta.factory_device(device)  # meta inside torch.device("meta")
    if stop is None:
        start, stop = 0, start
    dt = _as_dtype(dtype)
    if _meta.is_meta_spec(device):  # the length and dtype, no values
        n = max(0, math.ceil((float(stop) - float(start)) / float(step)))
        probe = Tensor(np.arange(start, start + step, step, dtype=dt)[:1], dtype=dt)
        return Tensor(_meta.meta_array((n,), probe.dtype), dtype=probe.dtype)
    xp = xp_for(device if device is not None else "cpu")
    arr = xp.arange(start, stop, step, dtype=dt)
    return Tensor(arr, dtype=dt)


def like_batched(t, value, dt):
    """``zeros_like``/``ones_like``/``full_like``/``empty_like`` of a tensor batched by vmap:
    batched too, as torch's (``empty_like(x).normal_()`` then draws per sample); else None."""
    if not getattr(t, "_batched", False):
        return None
    phys = t._phys
    return type(t)(Tensor(phys.xp.full(tuple(phys.shape), value, dtype=dt), dtype=dt), t._level)


def _filled_like(t, value, dtype, device, requires_grad, **_):
    """``zeros_like``/``ones_like``: torch's ``dtype=``, ``device=`` (a meta tensor's is meta,
    as torch's) and ``requires_grad=``."""
    dt = _as_dtype(dtype) or t.dtype
    out = like_batched(t, value, dt) if device is None else None
    if out is None:
        if _meta.is_meta_spec(device) or (device is None and _meta.is_meta(
                t.__dict__.get("_data"))):
            out = Tensor(_meta.meta_array(t.shape, dt), dtype=dt)
        elif device is not None:
            out = Tensor(np.full(t.shape, value, dtype=dt), dtype=dt, device=device)
        else:
            out = Tensor(t.xp.full(t.shape, value, dtype=dt), dtype=dt)
    return out.requires_grad_(True) if requires_grad else out


def zeros_like(t: Tensor, dtype=None, *, device=None, requires_grad=False, **kw) -> Tensor:
    return _filled_like(t, 0, dtype, device, requires_grad, **kw)


def ones_like(t: Tensor, dtype=None, *, device=None, requires_grad=False, **kw) -> Tensor:
    return _filled_like(t, 1, dtype, device, requires_grad, **kw)


def _size_kw(shape, size):
    """The positional sizes, or torch's ``size=`` keyword (a tuple, a Size, or an int)."""
    if size is None:
        return shape
    if shape:
        raise TypeError("got both positional sizes and size=")
    return (size,) if isinstance(size, (int, np.integer)) else (tuple(size),)


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


from .torch_size import Size as _TorchSize  # noqa: E402

_tuple_new = tuple.__new__

from .dtype_r42 import _CACHE as _DTYPES  # noqa: E402
from .dtype_r42 import torch_dtype as _torch_dtype  # noqa: E402


class _Size(int):
    """An element count that, called, is torch's ``size()``: the shape or one axis's length."""

    def __new__(cls, count: int, shape: tuple):
        obj = super().__new__(cls, count)
        obj._shape = tuple(shape)
        return obj

    def __call__(self, dim=None):
        # torch's ``x.size()`` is a ``torch.Size`` (round 44: its repr, slices, ``numel()``)
        return tuple.__new__(_TorchSize, self._shape) if dim is None else self._shape[dim]


def _torch_axis(axis, keepdims, dim, keepdim):
    """numpy's ``axis``/``keepdims`` or torch's ``dim``/``keepdim``; torch's ``dim=()`` (or
    ``[]``) reduces every axis (numpy's ``axis=()`` none)."""
    if dim is not None:
        axis = None if isinstance(dim, (tuple, list)) and not len(dim) else dim
    return axis, (keepdims if keepdim is None else bool(keepdim))


from .tensor_more import install as _install_more  # noqa: E402  (methods built on the above)

_install_more(Tensor, where, is_grad_enabled)

from .tensor_torch import install as _install_torch  # noqa: E402  (more of torch's methods)

_install_torch(Tensor, is_grad_enabled, _raw_index)

from .tensor_divmod import install as _install_divmod  # noqa: E402  (//, %, fmod, __index__)
from .tensor_torch import inplace_binary as _inplace_binary  # noqa: E402

_install_divmod(Tensor, _promote, _inplace_binary)

from .tensor_math_more import install as _install_math_more  # noqa: E402  (erf, roll, ...)
from .tensor_torch import _in_place as _torch_in_place  # noqa: E402

_install_math_more(Tensor, where, _torch_in_place)

from .tensor_numpy import install as _install_numpy  # noqa: E402  (numpy's functions on tensors)

_install_numpy(Tensor)

from .tensor_math_r27 import install as _install_r27  # noqa: E402  (xlogy, cummax, kron, ...)

_install_r27(Tensor, where, _torch_in_place, sys.modules[__name__])

from .ops_scatter import install as _install_scatter  # noqa: E402  (scatter_reduce, ...)

_install_scatter(Tensor, where, _torch_in_place)

from .tensor_r28 import install as _install_r28  # noqa: E402  (masked_scatter, put_)

_install_r28(Tensor, where, _torch_in_place)

from .complex_r28 import install as _install_complex  # noqa: E402  (.real, .imag, conj, ...)

_install_complex(Tensor)

from .tensor_r29 import install as _install_r29  # noqa: E402  (std_mean, as_strided, apply_, ...)

_install_r29(Tensor, sys.modules[__name__])

from .tensor_r37 import install as _install_r37  # noqa: E402  (sin_, greater, broadcast_to)

_install_r37(Tensor, _torch_in_place, is_grad_enabled)

from .views_r31 import install as _install_views  # noqa: E402  (last: wraps the view methods)

_install_views(Tensor)
