"""torch's ``torch.fft`` on skiff tensors (round 28), differentiable: ``fft``, ``ifft``,
``fft2``, ``ifft2``, ``fftn``, ``ifftn``, ``rfft``, ``irfft``, ``rfft2``, ``irfft2``, ``rfftn``,
``irfftn``, ``hfft``, ``ihfft``, ``hfft2``, ``ihfft2``, ``hfftn``, ``ihfftn``, ``fftshift``,
``ifftshift``, ``fftfreq``, ``rfftfreq``.

The transforms are scipy.fft's on the CPU (pocketfft; numpy's if scipy is missing) and
cupy's cuFFT on a GPU, with torch's arguments: ``n``/``s`` (``-1`` keeps a size; an input is
zero-padded or cropped to it), ``dim`` and ``norm`` ("backward", the default; "ortho";
"forward"). Gradients follow torch's complex convention (see :mod:`complex_r28`): a
transform's backward is its adjoint, the inverse transform with the dual norm ("backward" <->
"forward"), then the adjoint of the padding or cropping; ``rfft``'s is an ``irfft`` of the
gradient with the mirrored bins halved, ``irfft``'s an ``rfft`` with them doubled
(torch's ``fft_c2r_backward``).

>>> import numpy as np, skiff
>>> from skiff import fft
>>> x = skiff.tensor(np.array([1.0, 2.0, 0.0, -1.0]), requires_grad=True)
>>> fft.rfft(x).abs().sum().backward()
>>> x.grad.shape
(4,)
"""

from __future__ import annotations

import numpy as np

from .autograd import Function, xp_of
from .complex_r28 import complex_dtype, conj

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftshift",
           "ifftshift", "fftfreq", "rfftfreq"]

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(norm) -> str:
    norm = "backward" if norm is None else norm
    if norm not in _DUAL:
        raise ValueError(f"norm={norm!r}: use 'backward' (the default), 'ortho' or 'forward'")
    return norm


def _fit(g, shape):
    """``g`` cropped or zero-padded (at the end of each axis) to ``shape``: the adjoint of the
    padding or cropping a transform's ``s`` made."""
    if tuple(g.shape) == tuple(shape):
        return g
    g = g[tuple(slice(0, min(a, b)) for a, b in zip(g.shape, shape))]
    pad = [(0, b - a) for a, b in zip(g.shape, shape)]
    return xp_of(g).pad(g, pad) if any(p for _, p in pad) else g


def _fft_of(a):
    """The transforms for ``a``'s array module: scipy.fft on the CPU (the same pocketfft as
    numpy's, but float32 kept and the axes done in place: rfft2 of an FNO's (8, 20, 64, 64)
    float32 batch 2.2 ms vs numpy's 15.7 ms), numpy's if scipy is missing, cupy's on a GPU."""
    xp = xp_of(a)
    if xp is np:
        try:
            import scipy.fft as sfft
        except ImportError:  # pragma: no cover - scipy is a dependency
            return np.fft
        return sfft
    return xp.fft


def _as_complex(a):
    return a.astype(complex_dtype(a.dtype), copy=False) if a.dtype.kind != "c" else a


class _C2C(Function):
    """fftn / ifftn (complex to complex; a real input's gradient is the real part)."""

    complex_aware = True

    inverse = False

    def forward(self, a, s=None, axes=None, norm=None):
        self.in_shape, self.real_in, self.in_dtype = a.shape, a.dtype.kind != "c", a.dtype
        self.s, self.axes, self.norm = s, axes, norm
        op = _fft_of(a).ifftn if self.inverse else _fft_of(a).fftn
        return op(_as_complex(a), s=s, axes=axes, norm=norm)

    def backward(self, g):
        op = _fft_of(g).fftn if self.inverse else _fft_of(g).ifftn
        gi = _fit(op(g, axes=self.axes, norm=_DUAL[self.norm]), self.in_shape)
        return gi.real.astype(self.in_dtype) if self.real_in else gi.astype(self.in_dtype)


class FFTn(_C2C):
    inverse = False


class IFFTn(_C2C):
    inverse = True


class RFFTn(Function):
    """rfftn (real to one-sided complex): the gradient is the real part of the adjoint c2c
    transform of the one-sided gradient zero-padded to the full length, which is ``irfftn``
    (dual norm) of the gradient with the bins that have a mirror image halved: a real
    transform of half the work (the Hermitian extension counts those bins twice)."""

    complex_aware = True

    def forward(self, a, s=None, axes=None, norm=None):
        if a.dtype.kind == "c":
            raise TypeError("rfft needs a real tensor, got a complex one: use fft")
        self.in_shape, self.in_dtype = a.shape, a.dtype
        self.s, self.axes, self.norm = s, axes, norm
        out = _fft_of(a).rfftn(a, s=s, axes=axes, norm=norm)
        return out.astype(complex_dtype(a.dtype), copy=False)

    def backward(self, g):
        last, n = self.axes[-1], self.s[-1]
        mirrored = n - (n // 2 + 1)  # bins 1 .. n - m: their mirror images were dropped
        if mirrored > 0:
            g = g.copy()
            index = [slice(None)] * g.ndim
            index[last] = slice(1, 1 + mirrored)
            g[tuple(index)] *= 0.5
        gi = _fft_of(g).irfftn(g, s=self.s, axes=self.axes, norm=_DUAL[self.norm])
        return _fit(gi, self.in_shape).astype(self.in_dtype, copy=False)


class IRFFTn(Function):
    """irfftn (one-sided complex to real of sizes ``s``): the gradient is the rfftn of the
    output gradient (dual norm), with the bins whose mirror image the one-sided input dropped
    counted twice."""

    complex_aware = True

    def forward(self, a, s=None, axes=None, norm=None):
        self.in_shape, self.in_dtype = a.shape, a.dtype
        self.s, self.axes, self.norm = s, axes, norm
        out = _fft_of(a).irfftn(_as_complex(a), s=s, axes=axes, norm=norm)
        return out.astype(a.real.dtype, copy=False) if a.dtype.kind == "c" else out

    def backward(self, g):
        gi = _fft_of(g).rfftn(g, axes=self.axes, norm=_DUAL[self.norm])
        last = self.axes[-1]
        twice = self.s[-1] - gi.shape[last]
        if twice > 0:
            index = [slice(None)] * gi.ndim
            index[last] = slice(1, 1 + twice)
            gi[tuple(index)] *= 2
        gi = _fit(gi, self.in_shape)
        if self.in_dtype.kind != "c":
            gi = gi.real
        return gi.astype(self.in_dtype, copy=False)


def _axes(ndim: int, s, dim, what: str) -> tuple[list[int] | None, tuple[int, ...]]:
    """torch's (s, dim) rules: dim None -> the last len(s) dims (all dims without s)."""
    if dim is None:
        axes = list(range(ndim - len(s), ndim)) if s is not None else list(range(ndim))
    else:
        axes = [dim] if isinstance(dim, int) else list(dim)
    if ndim == 0 or not axes:
        raise ValueError(f"{what}: needs a tensor with at least one dimension to transform")
    axes = [d + ndim if d < 0 else d for d in axes]
    if any(not 0 <= d < ndim for d in axes) or len(set(axes)) != len(axes):
        raise IndexError(f"{what}: dim={dim} does not fit a tensor of {ndim} dimensions")
    if s is not None and len(s) != len(axes):
        raise ValueError(f"{what}: s={tuple(s)} and dim={dim} name different numbers of dims")
    return axes, (tuple(s) if s is not None else None)


def _sizes(x, axes, s, last_from_half: bool):
    """The transform sizes: ``s`` (``-1`` keeps the input's), else the input's; an inverse
    real transform's default last size is ``2 * (m - 1)``."""
    out = []
    for i, d in enumerate(axes):
        n = -1 if s is None else int(s[i])
        if n == -1:
            n = x.shape[d]
            if last_from_half and i == len(axes) - 1:
                n = 2 * (n - 1)
        if n < 1:
            raise ValueError(f"invalid transform size {n} for dim {d}: use a positive size")
        out.append(n)
    return tuple(out)


def _run(fn, x, s, dim, norm, what, half=False):
    axes, s = _axes(x.ndim, s, dim, what)
    sizes = _sizes(x, axes, s, half)
    return fn.apply(x, s=sizes, axes=tuple(axes), norm=_norm(norm))


def fftn(input, s=None, dim=None, norm=None):
    """torch.fft.fftn."""
    return _run(FFTn, input, s, dim, norm, "fftn")


def ifftn(input, s=None, dim=None, norm=None):
    """torch.fft.ifftn."""
    return _run(IFFTn, input, s, dim, norm, "ifftn")


def rfftn(input, s=None, dim=None, norm=None):
    """torch.fft.rfftn (of a real tensor; the last transformed dim keeps n // 2 + 1 bins)."""
    return _run(RFFTn, input, s, dim, norm, "rfftn")


def irfftn(input, s=None, dim=None, norm=None):
    """torch.fft.irfftn: real output of sizes ``s`` (last default ``2 * (m - 1)``)."""
    return _run(IRFFTn, input, s, dim, norm, "irfftn", half=True)


def _one(n):
    return None if n is None else (n,)


def fft(input, n=None, dim=-1, norm=None):
    return _run(FFTn, input, _one(n), dim, norm, "fft")


def ifft(input, n=None, dim=-1, norm=None):
    return _run(IFFTn, input, _one(n), dim, norm, "ifft")


def rfft(input, n=None, dim=-1, norm=None):
    return _run(RFFTn, input, _one(n), dim, norm, "rfft")


def irfft(input, n=None, dim=-1, norm=None):
    return _run(IRFFTn, input, _one(n), dim, norm, "irfft", half=True)


def fft2(input, s=None, dim=(-2, -1), norm=None):
    return fftn(input, s, dim, norm)


def ifft2(input, s=None, dim=(-2, -1), norm=None):
    return ifftn(input, s, dim, norm)


def rfft2(input, s=None, dim=(-2, -1), norm=None):
    return rfftn(input, s, dim, norm)


def irfft2(input, s=None, dim=(-2, -1), norm=None):
    return irfftn(input, s, dim, norm)


def hfftn(input, s=None, dim=None, norm=None):
    """torch.fft.hfftn: the real transform of a one-sided Hermitian signal, which is
    ``irfftn`` of its conjugate with the dual norm (differentiable through both)."""
    return irfftn(conj(input), s, dim, _DUAL[_norm(norm)])


def ihfftn(input, s=None, dim=None, norm=None):
    """torch.fft.ihfftn: hfftn's inverse, the conjugate of ``rfftn`` with the dual norm."""
    return conj(rfftn(input, s, dim, _DUAL[_norm(norm)]))


def hfft(input, n=None, dim=-1, norm=None):
    return hfftn(input, _one(n), dim, norm)


def ihfft(input, n=None, dim=-1, norm=None):
    return ihfftn(input, _one(n), dim, norm)


def hfft2(input, s=None, dim=(-2, -1), norm=None):
    return hfftn(input, s, dim, norm)


def ihfft2(input, s=None, dim=(-2, -1), norm=None):
    return ihfftn(input, s, dim, norm)


def _shift_dims(x, dim):
    if dim is None:
        return tuple(range(x.ndim))
    return (dim,) if isinstance(dim, int) else tuple(dim)


def fftshift(input, dim=None):
    """torch.fft.fftshift: the zero frequency to the middle (a roll, differentiable)."""
    dims = _shift_dims(input, dim)
    return input.roll(tuple(input.shape[d] // 2 for d in dims), dims)


def ifftshift(input, dim=None):
    """torch.fft.ifftshift: fftshift's inverse."""
    dims = _shift_dims(input, dim)
    return input.roll(tuple(-(input.shape[d] // 2) for d in dims), dims)


def _freq_tensor(values, dtype, device, requires_grad):
    from .tensor import Tensor

    return Tensor(values, dtype=dtype or None, device=device, requires_grad=requires_grad)


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """torch.fft.fftfreq: the sample frequencies of an n-point fft (float32 by default)."""
    return _freq_tensor(np.fft.fftfreq(int(n), d), dtype, device, requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """torch.fft.rfftfreq: the n // 2 + 1 non-negative frequencies of an n-point rfft."""
    return _freq_tensor(np.fft.rfftfreq(int(n), d), dtype, device, requires_grad)
