"""torch's top-level functions and Tensor methods that ported programs call and skiff lacked
(round 29, second pass): ``cross``, ``inner``, ``diagflat``, ``logspace``, ``msort``,
``mode``, ``nanmedian``, ``select_scatter``, ``slice_scatter``, ``svd``, ``pinverse``,
``unique_consecutive``, ``unravel_index``, ``is_nonzero``, ``dropout``, ``hardshrink``,
``threshold``, ``normal``, ``poisson``, ``randint_like``, ``bitwise_*``; methods
``clamp_min_``/``clamp_max_``, ``square_``, ``nan_to_num_``, ``logit_``, ``renorm_``,
``sum_to_size``, ``type``, ``random_``, ``log_normal_``, ``geometric_``, ``cauchy_``.

Each is built from skiff's differentiable ops where torch's has a gradient (``cross``,
``inner``, the scatters, ``mode``/``nanmedian`` values through a gather); index results and
random draws carry none. Random draws use skiff's generator (not torch's stream).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

_BASE: dict = {}
_ValuesIndices = namedtuple("values_indices", ["values", "indices"])
_SVD = namedtuple("svd", ["U", "S", "V"])


def _T():  # filled by install(): this file must not import tensor.py (it imports us)
    return _BASE["Tensor"], _BASE["module"]


def _t(x):
    Tensor, mod = _T()
    return x if isinstance(x, Tensor) else mod.tensor(x)


def _raw(like, arr, dtype=None):
    Tensor, _ = _T()
    return Tensor._make(like.xp.asarray(arr, dtype=dtype or arr.dtype), False, None, 0)


def _dim(x, dim):
    if not -max(x.ndim, 1) <= dim < max(x.ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(x.ndim, 1)}, {max(x.ndim, 1) - 1}], but got {dim})")
    return dim % max(x.ndim, 1)


# ---- linear algebra and shapes --------------------------------------------------------------

def cross(input, other, dim=None):  # noqa: A002
    """torch's ``cross``: the cross product along ``dim`` (default: the first axis of size
    3, as torch's deprecated default; ``linalg.cross`` takes the last)."""
    a, b = _t(input), _t(other)
    _, mod = _T()
    shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    a, b = a.expand(*shape), b.expand(*shape)
    if dim is None:
        dims = [k for k, n in enumerate(shape) if n == 3]
        if not dims:
            raise RuntimeError(f"no dimension of size 3 in input of shape {shape}")
        dim = dims[0]
    d = _dim(a, dim)
    if shape[d] != 3:
        raise RuntimeError(f"cross: inputs dimension {dim} must have length 3 (got {shape[d]})")
    a0, a1, a2 = (a.select(d, k) for k in range(3))
    b0, b1, b2 = (b.select(d, k) for k in range(3))
    return mod.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim=d)


def inner(input, other):  # noqa: A002
    """torch's ``inner``: sums over the last axes; shape ``a.shape[:-1] + b.shape[:-1]``."""
    a, b = _t(input), _t(other)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(a.shape)} and {list(b.shape)}")
    k = a.shape[-1]
    out = a.reshape(-1, k) @ b.reshape(-1, k).transpose(0, 1)
    return out.reshape(tuple(a.shape[:-1]) + tuple(b.shape[:-1]))


def diagflat(input, offset=0):  # noqa: A002
    """torch's ``diagflat``: the flattened input on diagonal ``offset`` of a square matrix."""
    return _t(input).reshape(-1).diag(offset)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False,
             **_):
    """torch's ``logspace``: ``base ** linspace(start, end, steps)``."""
    _, mod = _T()
    from . import default_dtype as _dd

    kw = {"dtype": dtype if dtype is not None else _dd.FLOAT,  # torch's default dtype
          "device": device}
    e = np.linspace(float(start), float(end), int(steps))
    out = mod.tensor(np.power(float(base), e), **kw)
    return out.requires_grad_(True) if requires_grad else out


def msort(input):  # noqa: A002
    """torch's ``msort``: sorted along the first axis."""
    return _t(input).sort(dim=0)[0]


def svd(input, some=True, compute_uv=True):  # noqa: A002
    """torch's (legacy) ``svd``: ``(U, S, V)`` with ``V`` (not ``Vh``); reduced unless
    ``some=False``; ``compute_uv=False`` gives zero U and V, as torch's."""
    from . import ops_linalg

    x = _t(input)
    U, S, Vh = ops_linalg.svd(x, full_matrices=not some)
    V = Vh.transpose(-2, -1)
    if not compute_uv:
        return _SVD(U.detach() * 0, S, V.detach() * 0)
    return _SVD(U, S, V)


def pinverse(input, rcond=1e-15):  # noqa: A002
    """torch's ``pinverse``: ``linalg.pinv(input, rcond)``."""
    from . import ops_linalg

    return ops_linalg.pinv(_t(input), rtol=rcond)


def select_scatter(input, src, dim, index):  # noqa: A002
    """torch's ``select_scatter``: ``input`` with ``src`` written at ``index`` of ``dim``
    (gradients flow to both)."""
    x, s = _t(input), _t(src)
    d = _dim(x, dim)
    out = x.clone()
    out[(slice(None),) * d + (int(index),)] = s
    return out


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    """torch's ``slice_scatter``: ``input`` with ``src`` written at ``start:end:step`` of
    ``dim`` (gradients flow to both)."""
    x, s = _t(input), _t(src)
    d = _dim(x, dim)
    out = x.clone()
    out[(slice(None),) * d + (slice(start, end, step),)] = s
    return out


# ---- order statistics -----------------------------------------------------------------------

def _pick_at(x, sel, d, keepdim):
    from . import ops_shape as S

    vals = S.Gather.apply(x, index=sel, axis=d)
    idx = _raw(x, sel, np.int64)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return _ValuesIndices(vals, idx)


def mode(input, dim=-1, keepdim=False):  # noqa: A002
    """torch's ``mode``: the most frequent value along ``dim`` (the smallest of equally
    frequent ones) and the index of its last occurrence, as torch's CPU kernel."""
    x = _t(input)
    x1 = x.reshape(1) if x.ndim == 0 else x
    d = _dim(x1, dim)
    a = np.moveaxis(np.asarray(x1.detach().numpy()), d, -1)
    flat = a.reshape(-1, a.shape[-1])
    sel = np.empty(flat.shape[0], np.int64)
    for r, row in enumerate(flat):
        vals, counts = np.unique(row, return_counts=True)
        v = vals[np.argmax(counts)]
        sel[r] = np.flatnonzero(row == v)[-1] if v == v else np.flatnonzero(row != row)[-1]
    sel = np.moveaxis(sel.reshape(a.shape[:-1] + (1,)), -1, d)
    out = _pick_at(x1, sel, d, keepdim or x.ndim == 0)
    if x.ndim == 0:
        return _ValuesIndices(out.values.reshape(()), out.indices.reshape(()))
    return out


def nanmedian(input, dim=None, keepdim=False):  # noqa: A002
    """torch's ``nanmedian``: the lower median of the non-nan values (nan where all are)."""
    x = _t(input)
    if dim is None:
        flat = x.reshape(-1)
        if flat.shape[0] == 0:
            raise ValueError("nanmedian of an empty tensor (torch returns nan; check the input)")
        return nanmedian(flat, 0)[0].reshape(())
    x1 = x.reshape(1) if x.ndim == 0 else x
    d = _dim(x1, dim)
    a = np.asarray(x1.detach().numpy())
    order = np.argsort(a, axis=d, kind="stable")  # nan last
    k = np.sum(~np.isnan(a), axis=d, keepdims=True)
    pos = np.where(k > 0, (k - 1) // 2, 0)
    sel = np.take_along_axis(order, pos, axis=d)
    out = _pick_at(x1, sel, d, keepdim or x.ndim == 0)
    if x.ndim == 0:
        return _ValuesIndices(out.values.reshape(()), out.indices.reshape(()))
    return out


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """torch's ``unique_consecutive``: each run of equal values once (on the flattened input,
    or of equal slices along ``dim``), with the inverse indices and run lengths if asked."""
    x = _t(input)
    a = np.asarray(x.detach().numpy())
    if dim is None:
        a = a.reshape(-1)
        d = 0
        starts = np.ones(a.shape[0], bool)
        starts[1:] = a[1:] != a[:-1]
    else:
        d = _dim(x, dim)
        m = np.moveaxis(a, d, 0).reshape(a.shape[d], -1)
        starts = np.ones(m.shape[0], bool)
        starts[1:] = np.any(m[1:] != m[:-1], axis=1)
    keep = np.flatnonzero(starts)
    vals = _raw(x, np.take(a, keep, axis=d))
    res = [vals]
    if return_inverse:
        inv = np.cumsum(starts) - 1
        res.append(_raw(x, inv.reshape(x.shape) if dim is None else inv, np.int64))
    if return_counts:
        res.append(_raw(x, np.diff(np.append(keep, starts.shape[0])), np.int64))
    return res[0] if len(res) == 1 else tuple(res)


def unravel_index(indices, shape):
    """torch's ``unravel_index``: a tuple of coordinate tensors of ``indices`` in ``shape``."""
    _, mod = _T()
    i = _t(indices)
    shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
    raw = np.asarray(i.numpy())
    if raw.dtype.kind not in "iu":
        raise TypeError("unravel_index: expected 'indices' to be an integer tensor, but got "
                        f"{raw.dtype}")
    total = int(np.prod(shape))
    if raw.size and (raw.min() < -total or raw.max() >= total):
        raise RuntimeError("unravel_index: 'indices' must be in range "
                           f"[-{total}, {total - 1}] for shape {shape}")
    coords = np.unravel_index(np.where(raw < 0, raw + total, raw), shape)
    return tuple(mod.tensor(np.asarray(c, np.int64)) for c in coords)


def is_nonzero(input):  # noqa: A002
    """torch's ``is_nonzero``: the truth of a one-element tensor."""
    x = _t(input)
    if x.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous"
                           if x.numel() else "Boolean value of Tensor with no values is "
                           "ambiguous")
    return bool(np.asarray(x.detach().numpy()).reshape(()) != 0)


# ---- functional and random forms -----------------------------------------------------------

def dropout(input, p=0.5, train=True):  # noqa: A002
    """torch's ``torch.dropout(input, p, train)``."""
    from .nn import functional as F

    return F.dropout(_t(input), p, training=train)


def hardshrink(input, lambd=0.5):  # noqa: A002
    """torch's ``hardshrink``: 0 where ``|x| <= lambd``."""
    from .nn.layers_r27 import hardshrink as hs

    return hs(_t(input), lambd)


def threshold(input, threshold, value):  # noqa: A002
    """torch's ``threshold``: ``value`` where ``x <= threshold``."""
    from .nn.functional.activations_more import threshold as th

    return th(_t(input), threshold, value)


def _gen():
    from .random import get_generator

    return get_generator()


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, **_):
    """torch's ``normal``: tensor or float ``mean``/``std`` (broadcast), or floats and
    ``size``; drawn from skiff's generator."""
    T, mod = _T()
    from . import default_dtype as _dd
    from .random import per_sample

    like = mean if isinstance(mean, T) else std if isinstance(std, T) else None
    dt = np.dtype(dtype) if dtype is not None else (like.dtype if like is not None
                                                    else _dd.FLOAT)
    shape = tuple(size) if size is not None else np.broadcast_shapes(
        tuple(getattr(mean, "shape", ())), tuple(getattr(std, "shape", ())))
    z = per_sample(lambda g, sh: g.standard_normal(sh).astype(dt), shape, generator)
    if z is not None:  # vmap(randomness="different"): one batched draw, nothing loops
        return (mean + std * z).to(dt)
    m, s = np.asarray(getattr(mean, "_data", mean)), np.asarray(getattr(std, "_data", std))
    if np.any(s < 0):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    shape = tuple(size) if size is not None else np.broadcast_shapes(m.shape, s.shape)
    z = _gen().standard_normal(shape)
    like = mean if hasattr(mean, "_data") else std if hasattr(std, "_data") else None
    return mod.tensor(m + s * z, dtype=dt)  # floats alone: the default dtype, as torch's


def poisson(input, generator=None):  # noqa: A002
    """torch's ``poisson``: a draw per rate, the input's dtype."""
    from .random import per_sample_of

    out = per_sample_of(input, lambda g, rates: g.poisson(rates).astype(rates.dtype),
                        generator)
    if out is not None:  # vmap(randomness="different"): one draw for all samples, no loop
        return out
    x = _t(input)
    return _raw(x, _gen().poisson(np.asarray(x.detach().numpy())).astype(np.asarray(
        x.detach().numpy()).dtype))


def randint_like(input, low=0, high=None, *, dtype=None, **_):  # noqa: A002
    """torch's ``randint_like(input, high)`` / ``(input, low, high)``."""
    _, mod = _T()
    x = _t(input)
    if high is None:
        low, high = 0, low
    from .random import per_sample

    dt = np.dtype(dtype) if dtype is not None else np.dtype(x.dtype)
    out = per_sample(lambda g, s: g.integers(int(low), int(high), s).astype(dt), x.shape)
    if out is not None:  # vmap(randomness="different"): one batched draw, nothing loops
        return out
    arr = _gen().integers(int(low), int(high), tuple(x.shape))
    return mod.tensor(arr.astype(np.dtype(dtype) if dtype is not None else
                                 np.asarray(x.detach().numpy()).dtype))


def _bitwise(name, npf):
    def fn(input, other=None):  # noqa: A002
        x = _t(input)
        a = np.asarray(x.numpy())
        if a.dtype.kind not in "biu":
            raise RuntimeError(f"\"{name}_cpu\" not implemented for a float tensor: "
                               "bitwise ops take integer or bool tensors")
        r = npf(a) if other is None else npf(a, np.asarray(getattr(other, "_data", other)))
        return _raw(x, np.asarray(r))
    fn.__name__ = name
    fn.__doc__ = f"torch's ``{name}`` on integer or bool tensors."
    return fn


bitwise_and = _bitwise("bitwise_and", np.bitwise_and)
bitwise_or = _bitwise("bitwise_or", np.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", np.bitwise_xor)
bitwise_not = _bitwise("bitwise_not", np.invert)

TOP_LEVEL = ("cross", "inner", "diagflat", "logspace", "msort", "svd", "pinverse",
             "select_scatter", "slice_scatter", "mode", "nanmedian", "unique_consecutive",
             "unravel_index", "is_nonzero", "dropout", "hardshrink", "threshold", "normal",
             "poisson", "randint_like", "bitwise_and", "bitwise_or", "bitwise_xor",
             "bitwise_not")
FUNCTIONS = {n: globals()[n] for n in TOP_LEVEL}


# ---- Tensor methods ---------------------------------------------------------------------------

def _inplace(name, fn):
    def method(self, *args, **kwargs):
        from .tensor_torch import _assign

        return _assign(self, fn(self, *args, **kwargs), name)
    method.__name__ = name
    return method


def _fill(name, draw):
    def method(self, *args, generator=None, **kwargs):
        batched = _per_sample_fill(self, lambda s: draw(s, *args, **kwargs))
        if batched is not None:
            return batched
        arr = draw(tuple(self.shape), *args, **kwargs)
        return self.copy_(_raw(self, np.asarray(arr).astype(self.dtype)))
    method.__name__ = name
    return method


def _per_sample_fill(self, draw):
    """A random fill of a vmap-batched tensor with randomness="different": one batched draw
    (``draw(shape)`` from skiff's generator), nothing loops; else None."""
    if not getattr(self, "_batched", False):
        return None
    from .random import per_sample

    dt = np.dtype(self.dtype)
    new = per_sample(lambda _g, s: np.asarray(draw(s)).astype(dt), self.shape)
    return None if new is None else self.copy_(new)


def _random_(self, low=0, high=None, *, generator=None):
    if high is None:
        if low == 0:
            high = 2 ** 24 + 1 if self.dtype == np.float32 else 2 ** 53 + 1
            if np.dtype(self.dtype).kind in "iu":
                high = int(np.iinfo(self.dtype).max)
        else:
            low, high = 0, low
    batched = _per_sample_fill(self, lambda s: _gen().integers(int(low), int(high), s))
    if batched is not None:
        return batched
    arr = _gen().integers(int(low), int(high), tuple(self.shape))
    return self.copy_(_raw(self, arr.astype(self.dtype)))


_TYPE_NAMES = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor",
               "float16": "torch.HalfTensor", "int64": "torch.LongTensor",
               "int32": "torch.IntTensor", "int16": "torch.ShortTensor",
               "int8": "torch.CharTensor", "uint8": "torch.ByteTensor",
               "bool": "torch.BoolTensor", "complex64": "torch.ComplexFloatTensor",
               "complex128": "torch.ComplexDoubleTensor"}
_TYPE_DTYPES = {v.split(".")[-1]: k for k, v in _TYPE_NAMES.items()}


def _type(self, dtype=None, non_blocking=False, **_):
    """torch's ``Tensor.type()``: the type name; ``type(dtype)``: a converted tensor."""
    if dtype is None:
        return _TYPE_NAMES.get(np.dtype(self.dtype).name, f"torch.{np.dtype(self.dtype).name}")
    if isinstance(dtype, str):
        key = dtype.split(".")[-1]
        if key not in _TYPE_DTYPES:
            raise ValueError(f"invalid type: '{dtype}' (e.g. 'torch.FloatTensor')")
        dtype = _TYPE_DTYPES[key]
    return self.to(dtype)


def _sum_to_size(self, *size):
    size = tuple(size[0]) if len(size) == 1 and not np.isscalar(size[0]) else tuple(size)
    try:
        np.broadcast_to(np.empty(size), tuple(self.shape))
    except ValueError:
        raise RuntimeError(f"size {list(size)} is not expandable to size "
                           f"{list(self.shape)}") from None
    out, lead = self, self.ndim - len(size)
    if lead:
        out = out.sum(dim=tuple(range(lead)))
    axes = tuple(k for k, n in enumerate(size) if n == 1 and out.shape[k] != 1)
    return out.sum(dim=axes, keepdim=True) if axes else out


# ---- windows, integrals and small forms (round 29, second pass) -----------------------------

def _window(name, make):
    def fn(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False,
           **kwargs):
        _, mod = _T()
        from . import default_dtype

        n = int(window_length)
        if n < 0:
            raise RuntimeError(f"{name} requires non-negative window length, got "
                               f"window_length={n}")
        w = (np.ones(n) if n <= 1  # [] or [1.], as torch's (hamming's 0/0 warned at 0)
             else make(n + 1, **kwargs)[:-1] if periodic else make(n, **kwargs))
        out = mod.tensor(np.asarray(w[:n], np.float64),
                         dtype=dtype if dtype is not None else default_dtype.FLOAT)
        return out.requires_grad_(True) if requires_grad else out
    fn.__name__ = name
    fn.__doc__ = f"torch's ``{name}(window_length, periodic=True)``."
    return fn


hann_window = _window("hann_window", lambda m: np.hanning(m))
hamming_window = _window("hamming_window", lambda m, alpha=0.54, beta=0.46:
                         alpha - beta * np.cos(2 * np.pi * np.arange(m) / (m - 1)))
blackman_window = _window("blackman_window", lambda m: np.blackman(m))
bartlett_window = _window("bartlett_window", lambda m: np.bartlett(m))
kaiser_window = _window("kaiser_window", lambda m, beta=12.0: np.kaiser(m, beta))


def trapz(y, x=None, *, dx=None, dim=-1):
    """torch's ``trapz`` (``trapezoid``'s older name)."""
    from .tensor_math_r27 import trapezoid

    return trapezoid(_t(y), x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """torch's ``cumulative_trapezoid``: the running trapezoid integral along ``dim`` (one
    entry fewer than ``y``); spacing ``dx`` (default 1) or sample points ``x``."""
    y = _t(y)
    d = _dim(y, dim)
    n = y.shape[d]
    mid = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) / 2
    if x is not None:
        x = _t(x)
        step = x.diff(dim=-1 if x.ndim == 1 else d)
        if x.ndim == 1 and y.ndim > 1:
            step = step.reshape(tuple(-1 if k == d else 1 for k in range(y.ndim)))
        mid = mid * step
    else:
        mid = mid * (1.0 if dx is None else dx)
    return mid.cumsum(d)


def logaddexp2(input, other):  # noqa: A002
    """torch's ``logaddexp2``: ``log2(2**a + 2**b)``."""
    ln2 = float(np.log(2.0))
    return (_t(input) * ln2).logaddexp(_t(other) * ln2) / ln2


def copysign(input, other):  # noqa: A002
    """torch's ``copysign``: ``|input|`` with the sign of ``other`` (-0.0 counts as
    negative); the gradient flows to ``input`` only, as torch's."""
    a = _t(input)
    xp = a.xp  # the sign on input's device (a GPU's other is not read back)
    b = xp.asarray(getattr(other, "_data", other))
    sign = xp.where(xp.signbit(b), -1.0, 1.0)
    shape = np.broadcast_shapes(tuple(a.shape), sign.shape)
    a = a if a.dtype.kind == "f" else a.double()
    return a.abs().expand(*shape) * _raw(a, xp.broadcast_to(sign, shape).astype(a.dtype))


def fix(input):  # noqa: A002
    """torch's ``fix`` (``trunc``)."""
    return _t(input).trunc()


def row_stack(tensors):
    """torch's ``row_stack`` (``vstack``)."""
    from .tensor_math_r27 import vstack

    return vstack(tensors)


def adjoint(input):  # noqa: A002
    """torch's ``adjoint``: the conjugate transpose of the last two axes."""
    x = _t(input).transpose(-2, -1)
    return x.conj() if x.dtype.kind == "c" else x


def matrix_exp(input):  # noqa: A002
    """torch's ``matrix_exp`` (``linalg.matrix_exp``)."""
    from .linalg_r29b import matrix_exp as me

    return me(input)


def stft(input, n_fft, *args, **kwargs):  # noqa: A002
    """torch's ``stft`` (:mod:`.stft_r29b`)."""
    from .stft_r29b import stft as _stft

    return _stft(_t(input), n_fft, *args, **kwargs)


def istft(input, n_fft, *args, **kwargs):  # noqa: A002
    """torch's ``istft`` (:mod:`.stft_r29b`)."""
    from .stft_r29b import istft as _istft

    return _istft(input, n_fft, *args, **kwargs)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    from .nn.functional.conv1d import pairwise_distance as pd

    return pd(_t(x1), _t(x2), p, eps, keepdim)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        reduction="mean", **kwargs):
    from .nn.functional.losses_more import triplet_margin_loss as tml

    return tml(anchor, positive, negative, margin, p, eps, swap, reduction=reduction, **kwargs)


TOP_LEVEL = TOP_LEVEL + ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
                         "kaiser_window", "trapz", "cumulative_trapezoid", "logaddexp2",
                         "copysign", "fix", "row_stack", "adjoint", "pairwise_distance",
                         "triplet_margin_loss", "matrix_exp", "stft", "istft")
FUNCTIONS = {n: globals()[n] for n in TOP_LEVEL}


def _linalg(name):
    def method(self, *args, **kwargs):
        from . import ops_linalg

        return getattr(ops_linalg, name)(self, *args, **kwargs)
    method.__name__ = name
    return method


def _qr(self, some=True):
    from . import ops_linalg

    return ops_linalg.qr(self, mode="reduced" if some else "complete")


def _cholesky(self, upper=False):
    from . import ops_linalg

    return ops_linalg.cholesky(self, upper=upper)


MORE_METHODS = {
    "abs_": _inplace("abs_", lambda s: s.abs()), "sign_": _inplace("sign_", lambda s: s.sign()),
    "log_": _inplace("log_", lambda s: s.log()), "floor_": _inplace("floor_", lambda s: s.floor()),
    "ceil_": _inplace("ceil_", lambda s: s.ceil()),
    "round_": _inplace("round_", lambda s, decimals=0: s.round() if not decimals else
                      (s * 10.0 ** decimals).round() / 10.0 ** decimals),
    "cumsum_": _inplace("cumsum_", lambda s, dim: s.cumsum(dim)),
    "copysign": copysign, "copysign_": _inplace("copysign_", copysign),
    "logaddexp2": logaddexp2, "fix": fix, "fix_": _inplace("fix_", fix), "adjoint": adjoint,
    "matrix_exp": matrix_exp, "stft": stft, "istft": istft, "cholesky": _cholesky, "qr": _qr,
    "matrix_power": _linalg("matrix_power"),
    "addmv": lambda self, mat, vec, *, beta=1, alpha=1: beta * self + alpha * (mat @ vec),
    "addr": lambda self, v1, v2, *, beta=1, alpha=1: beta * self + alpha * (
        v1.unsqueeze(1) * v2.unsqueeze(0)),
    "vdot": lambda self, other: ((self.conj() if self.dtype.kind == "c" else self)
                                 * other).sum(),
}


def install(tensor_class, module) -> None:
    _BASE.update(Tensor=tensor_class, module=module)
    gen = _gen
    methods = {
        "cross": cross, "inner": inner, "diagflat": diagflat, "msort": msort, "svd": svd,
        "pinverse": pinverse, "mode": mode, "nanmedian": nanmedian,
        "unique_consecutive": unique_consecutive, "hardshrink": hardshrink,
        "select_scatter": select_scatter, "slice_scatter": slice_scatter,
        "bitwise_and": bitwise_and, "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor,
        "bitwise_not": bitwise_not, "is_nonzero": is_nonzero,
        "clamp_min_": _inplace("clamp_min_", lambda s, m: s.clamp(min=m)),
        "clamp_max_": _inplace("clamp_max_", lambda s, m: s.clamp(max=m)),
        "square_": _inplace("square_", lambda s: s * s),
        "nan_to_num_": _inplace("nan_to_num_", lambda s, *a, **k: s.nan_to_num(*a, **k)),
        "logit_": _inplace("logit_", lambda s, eps=None: s.logit(eps)),
        "renorm_": _inplace("renorm_", lambda s, p, dim, maxnorm: s.renorm(p, dim, maxnorm)),
        "sum_to_size": _sum_to_size, "type": _type, "random_": _random_,
        "log_normal_": _fill("log_normal_", lambda sh, mean=1.0, std=2.0:
                             gen().lognormal(mean, std, sh)),
        "geometric_": _fill("geometric_", lambda sh, p: gen().geometric(p, sh)),
        "cauchy_": _fill("cauchy_", lambda sh, median=0.0, sigma=1.0:
                         median + sigma * gen().standard_cauchy(sh)),
    }
    methods.update(MORE_METHODS)
    for name, fn in methods.items():
        if not hasattr(tensor_class, name):
            setattr(tensor_class, name, fn)
