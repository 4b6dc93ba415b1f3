"""Complex tensors (round 28): torch's ``cfloat``/``cdouble`` dtypes, ``.real``, ``.imag``,
``.conj()``, ``.angle()``, ``.sgn()``, ``.mH``, ``.H``, ``.adjoint()``, ``view_as_real``,
``view_as_complex`` and ``complex``, differentiable.

A complex tensor is the existing :class:`Tensor` over a complex64/complex128 ``xp`` array.
Gradients follow torch's convention for a real loss ``L`` of ``z = x + iy``: ``z.grad`` is
``dL/dx + i dL/dy`` (twice the conjugate Wirtinger derivative), so a linear op's backward
is its adjoint (``g * conj(b)`` for ``a * b``) and an optimizer treats a complex parameter as
its real and imaginary parts side by side (torch's ``view_as_real``).

>>> import numpy as np, skiff
>>> z = skiff.tensor(np.array([3 + 4j]), requires_grad=True)
>>> z.abs().sum().backward()
>>> z.grad.tolist()
[(0.6+0.8j)]
"""

from __future__ import annotations

import numpy as np

from .autograd import Function, xp_of

__all__ = ["cfloat", "cdouble", "complex64", "complex128", "view_as_real", "view_as_complex",
           "complex", "real", "imag", "conj", "angle", "sgn", "is_complex", "install"]

cfloat = complex64 = np.dtype(np.complex64)
cdouble = complex128 = np.dtype(np.complex128)


def complex_dtype(real_dtype) -> np.dtype:
    """The complex dtype of a real one (float64 -> complex128; other floats -> complex64)."""
    return cdouble if np.dtype(real_dtype) == np.float64 else cfloat


def _need_complex(t, what: str) -> None:
    if t.dtype.kind != "c":
        raise TypeError(f"{what} needs a complex tensor, got dtype {t.dtype}: make one with "
                        "skiff.fft.complex(re, im) or an fft")


class Real(Function):
    complex_aware = True

    def forward(self, a):
        self.dtype = a.dtype
        return a.real

    def backward(self, g):
        return g.astype(self.dtype)


class Imag(Function):
    complex_aware = True

    def forward(self, a):
        self.dtype = a.dtype
        return a.imag

    def backward(self, g):
        out = 1j * g  # a 0-d gradient may be a Python number here
        return out.astype(self.dtype) if hasattr(out, "astype") else np.asarray(out, self.dtype)


class Conj(Function):
    complex_aware = True

    def forward(self, a):
        return a.conj()

    def backward(self, g):
        return g.conj()


class _Resolved(Function):
    """``resolve_conj`` of a ``conj()`` result: a copy (torch's materialised one)."""
    complex_aware = True

    def forward(self, a):
        return a.copy()

    def backward(self, g):
        return g


class ViewAsReal(Function):
    complex_aware = True

    def forward(self, a):
        self.dtype = a.dtype
        try:  # torch's view: writes into it reach ``a`` (numpy's dtype view, any strides)
            return a[..., None].view(a.real.dtype)
        except (ValueError, TypeError):  # a layout the dtype view refuses: a copy
            return xp_of(a).stack([a.real, a.imag], axis=-1)

    def backward(self, g):
        return (g[..., 0] + 1j * g[..., 1]).astype(self.dtype)


class ViewAsComplex(Function):
    complex_aware = True

    def forward(self, a):
        if a.ndim and a.strides[-1] == a.itemsize and a.dtype in (np.float32, np.float64):
            try:  # torch's view (the last dimension's stride 1): writes reach ``a``
                return a.view(complex_dtype(a.dtype))[..., 0]
            except (ValueError, TypeError):
                pass
        return (a[..., 0] + 1j * a[..., 1]).astype(complex_dtype(a.dtype))

    def backward(self, g):
        return xp_of(g).stack([g.real, g.imag], axis=-1)


class MakeComplex(Function):
    complex_aware = True

    def forward(self, re, im):
        return (re + 1j * im).astype(complex_dtype(re.dtype))

    def backward(self, g):
        return g.real.copy(), g.imag.copy()


class Angle(Function):
    complex_aware = True

    def forward(self, a):
        self.save_for_backward(a)
        out = xp_of(a).angle(a)
        return out if a.dtype.kind == "c" else out.astype(a.dtype)

    def backward(self, g):
        (a,) = self.saved
        xp = xp_of(a)
        if a.dtype.kind != "c":  # torch's: a real tensor's angle (0 or pi) is flat
            return xp.zeros_like(a)
        mag2 = (a * a.conj()).real
        # d angle = (x dy - y dx) / |a|^2: torch's gradient g * i a / |a|^2 (0 at a = 0)
        return xp.where(mag2 > 0, g * 1j * a / xp.where(mag2 > 0, mag2, 1), 0).astype(a.dtype)


def angle(t):
    """torch's ``angle``: the argument of a complex tensor (0 or pi for a real one)."""
    return Angle.apply(t)


class Sgn(Function):
    """torch's ``sgn`` of a complex tensor, ``z / |z|`` (0 at 0); its gradient
    ``(g - Re(g conj(s)) s) / |z|``."""

    complex_aware = True

    def forward(self, a):
        xp = xp_of(a)
        mag = xp.abs(a)
        self.nonzero = mag > 0
        self.mag = xp.where(self.nonzero, mag, 1)
        out = xp.where(self.nonzero, a / self.mag, 0).astype(a.dtype)
        self.save_for_backward(out)
        return out

    def backward(self, g):
        (s,) = self.saved
        xp = xp_of(g)
        gi = (g - (g * s.conj()).real * s) / self.mag
        return xp.where(self.nonzero, gi, 0).astype(s.dtype)


def sgn(t):
    """torch's ``sgn``: ``z / |z|`` for a complex tensor, ``sign`` for a real one."""
    return Sgn.apply(t) if t.dtype.kind == "c" else t.sign()


def real(t):
    """torch's ``t.real``: a view (``z.real[0] = 1`` writes into ``z``); a real tensor is
    returned as it is."""
    return Real.apply(t) if t.dtype.kind == "c" else t


def imag(t):
    """torch's ``t.imag``: a view, as ``real``'s."""
    _need_complex(t, "imag")
    return Imag.apply(t)


def conj(t):
    """torch's ``conj`` (a real tensor is returned as it is). Computed (skiff's conj is never
    lazy), but marked as torch's lazy one is: ``is_conj()`` True, again False (round 44)."""
    if t.dtype.kind != "c":
        return t
    out = Conj.apply(t)
    if not is_conj(t):
        _mark_conj(out)
    return out


# round 44 (h12): the arrays marked by ``conj()``, by the id of the array owning the memory,
# so that views of a marked result (slices, ``detach()``, reshapes: the same memory) read as
# marked too, as torch's views share its conjugate bit; a copy owns new memory (unmarked)
_MARKED: dict = {}


def _mark_conj(t) -> None:
    import weakref

    from .tensor_storage_r44 import _root

    t._conj_bit = True
    a = t._data
    if hasattr(a, "strides"):
        root = _root(a)
        key = id(root)
        _MARKED[key] = weakref.ref(root, lambda _ref, key=key: _MARKED.pop(key, None))


def view_as_real(t):
    """torch's ``view_as_real``: shape ``(..., 2)`` of real and imaginary parts, a view (writes
    into it reach ``t``, as torch's)."""
    _need_complex(t, "view_as_real")
    return ViewAsReal.apply(t)


def view_as_complex(t):
    """torch's ``view_as_complex`` of a float tensor whose last dimension is 2."""
    if t.dtype.kind != "f" or not t.shape or t.shape[-1] != 2:
        raise ValueError(f"view_as_complex needs a float tensor whose last dimension is 2, got "
                         f"shape {tuple(t.shape)} and dtype {t.dtype}")
    return ViewAsComplex.apply(t)


def complex(re, im):  # noqa: A001 (torch's name)
    """torch's ``complex(real, imag)`` of two float tensors of one dtype."""
    if re.dtype != im.dtype or re.dtype.kind != "f":
        raise TypeError(f"complex(real, imag) needs two float tensors of one dtype, got "
                        f"{re.dtype} and {im.dtype}")
    return MakeComplex.apply(re, im)


def is_complex(t) -> bool:
    return t.dtype.kind == "c"


def resolve_conj(t):
    """torch's ``resolve_conj``: ``t`` itself, or for a ``conj()`` result the same values
    unmarked (skiff's ``conj`` is never lazy: nothing to compute)."""
    if not is_conj(t):
        return t
    return _Resolved.apply(t)


def resolve_neg(t):
    """torch's ``resolve_neg``: ``t`` itself (no lazy negation bit here)."""
    return t


def conj_physical(t):
    """torch's ``conj_physical``: the conjugate, computed (as skiff's ``conj`` always is),
    not marked (``is_conj()`` False)."""
    return Conj.apply(t) if t.dtype.kind == "c" else t


def is_conj(t) -> bool:
    """torch's ``is_conj``: whether ``t`` came from ``conj()`` of a complex tensor (torch's
    lazy conjugate bit; skiff computed it: the mark is all that differs). A view of such a
    result (its memory) is marked too (round 44), as torch's."""
    bit = getattr(t, "_conj_bit", None)
    if bit is not None or t.dtype.kind != "c" or not _MARKED:
        return bool(bit)
    a = t._data
    if not hasattr(a, "strides"):
        return False
    from .tensor_storage_r44 import _root

    root = _root(a)
    ref = _MARKED.get(id(root))
    return ref is not None and ref() is root


def is_neg(t) -> bool:
    """torch's ``is_neg``: False (skiff keeps no lazy negation bit, nor does torch here)."""
    return False


def chalf(t=None):
    raise TypeError("chalf (complex32) has no numpy dtype: use .cfloat() (complex64) or "
                    ".cdouble() (complex128)")


def install(Tensor) -> None:
    """``.real``, ``.imag``, ``.conj()``, ``.is_complex()`` on :class:`Tensor`."""
    Tensor.real = property(real)
    Tensor.imag = property(imag)
    Tensor.conj = conj
    Tensor.conj_physical = conj_physical
    Tensor.is_complex = is_complex
    Tensor.angle = angle
    Tensor.sgn = sgn
    if not hasattr(Tensor, "mT"):
        Tensor.mT = property(lambda self: self.transpose(-2, -1))
    Tensor.mH = property(lambda self: conj(self).transpose(-2, -1))
    Tensor.H = property(lambda self: conj(self).t())
    Tensor.adjoint = lambda self: conj(self).transpose(-2, -1)
    Tensor.resolve_conj = resolve_conj
    Tensor.resolve_neg = lambda self: self  # no lazy negation here
    Tensor.is_conj, Tensor.is_neg = is_conj, is_neg
    Tensor.chalf = chalf
