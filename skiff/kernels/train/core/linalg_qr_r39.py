"""Round 39 (h13): torch's ``geqrf`` (LAPACK's QR in Householder form, ``(a, tau)``) and
``ormqr(input, tau, other, left=True, transpose=False)`` (``op(Q) @ other`` or
``other @ op(Q)`` with ``Q = H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H``), and their tensor
methods (``install(Tensor)``).

The values are LAPACK's, as torch's CPU ones (``geqrf``; ``ormqr``/``unmqr``, with ``'C'``
for a complex ``transpose``). ``geqrf`` has no gradient (torch's backward raises "the
derivative for 'geqrf' is not implemented."); ``ormqr`` is differentiable in ``input``,
``tau`` and ``other``: when a gradient is wanted it is built from the reflectors as
differentiable ops (the same values to rounding)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import ops_linalg as _la
from .autograd import Function, is_grad_enabled, xp_of

__all__ = ["geqrf", "ormqr"]

_Geqrf = namedtuple("geqrf", ["a", "tau"])


def _lapack(name, dtype):
    from scipy.linalg import lapack

    return getattr(lapack, {"f": "s", "d": "d", "F": "c", "D": "z"}[np.dtype(dtype).char] + name)


def _host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _kernel_check(name, *ts):
    for t in ts:
        if t.dtype.kind not in "fc":
            raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                      f"'{_TORCH_DTYPE.get(t.dtype.name, t.dtype.name)}'")


_TORCH_DTYPE = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                "uint8": "Byte", "bool": "Bool", "float16": "Half"}
_TORCH_NAME = {"float32": "Float", "float64": "Double", "complex64": "ComplexFloat",
               "complex128": "ComplexDouble", **_TORCH_DTYPE}


def _geqrf_np(a):
    m, n = a.shape[-2:]
    k = min(m, n)
    flat = a.reshape((int(np.prod(a.shape[:-2], dtype=int)), m, n))
    qr = flat.copy()
    tau = np.zeros((flat.shape[0], k), a.dtype)
    if m and n:
        fn = _lapack("geqrf", a.dtype)
        for i, mat in enumerate(flat):
            qr[i], tau[i], _, _ = fn(mat)
    return qr.reshape(a.shape), tau.reshape(a.shape[:-2] + (k,))


class _GeqrfFn(Function):
    """LAPACK's ``geqrf``; no gradient, as torch's."""

    complex_aware = True

    def forward(self, a):
        xp = xp_of(a)
        qr, tau = _geqrf_np(_host(a))
        return xp.asarray(qr), xp.asarray(tau)

    def backward(self, ga, gtau):
        raise RuntimeError("the derivative for 'geqrf' is not implemented.")


def geqrf(input, *, out=None):  # noqa: A002, ARG001 - torch's signature
    """torch's ``geqrf``: ``(a, tau)``, ``R`` on and above the diagonal of ``a``, the
    Householder vectors below it (LAPACK's ``geqrf``)."""
    A = _la._as_tensor(input)
    if A.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    _kernel_check("geqrf", A)
    return _Geqrf(*_GeqrfFn.apply(A))


def _ormqr_check(A, tau, C, left):
    if A.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if C.ndim < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if C.shape[side] != A.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to "
                           f"input.shape[-2]")
    if tau.ndim == 0 or tau.shape[-1] != min(C.shape[side], A.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to "
                           f"min(other.shape[{side}], input.shape[-1])")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"torch.ormqr: Expected tau to have one dimension less than "
                           f"input, but got tau.ndim equal to {tau.ndim} and input.ndim is "
                           f"equal to {A.ndim}")
    if C.ndim != A.ndim:
        raise RuntimeError(f"torch.ormqr: Expected other to have the same number of dimensions "
                           f"as input, but got other.ndim equal to {C.ndim} and input.ndim is "
                           f"equal to {A.ndim}")
    if A.ndim > 2:
        if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
            raise RuntimeError(f"torch.ormqr: Expected batch dimensions of tau to be equal to "
                               f"input.shape[:-2], but got {list(tau.shape[:-1])}")
        if tuple(C.shape[:-2]) != tuple(A.shape[:-2]):
            raise RuntimeError(f"torch.ormqr: Expected batch dimensions of other to be equal to "
                               f"input.shape[:-2], but got {list(C.shape[:-2])}")
    name = _TORCH_NAME.get
    if tau.dtype != A.dtype:
        raise RuntimeError(f"torch.ormqr: Expected input and tau to have the same dtype, but "
                           f"input has dtype{name(A.dtype.name, A.dtype.name)} and tau has "
                           f"dtype {name(tau.dtype.name, tau.dtype.name)}")
    if C.dtype != A.dtype:
        raise RuntimeError(f"torch.ormqr: Expected input and other to have the same dtype, but "
                           f"input has dtype{name(A.dtype.name, A.dtype.name)} and other has "
                           f"dtype {name(C.dtype.name, C.dtype.name)}")
    _kernel_check("ormqr", A)


def _ormqr_np(a, tau, c, left, transpose):
    k = tau.shape[-1]
    out = np.array(c, copy=True)
    if k == 0 or c.size == 0:
        return out
    trans = ("C" if a.dtype.kind == "c" else "T") if transpose else "N"
    fn = _lapack("ormqr" if a.dtype.kind == "f" else "unmqr", a.dtype)
    m = a.shape[-2]
    af = a[..., :, :k].reshape((-1, m, k))
    tf = tau.reshape((-1, k))
    cf = out.reshape((int(np.prod(c.shape[:-2], dtype=int)),) + c.shape[-2:])
    lwork = max(1, 64 * max(c.shape[-2:]))
    for i in range(cf.shape[0]):
        res, _, info = fn("L" if left else "R", trans, af[i], tf[i], cf[i], lwork)
        cf[i] = res
    return cf.reshape(c.shape)


def _ormqr_graph(A, tau, C, left, transpose):
    """``op(Q) C`` / ``C op(Q)`` as differentiable ops, one reflector at a time."""
    m = A.shape[-2]
    k = tau.shape[-1]
    V = A[..., :, :k].tril(-1) + _la._const(np.eye(m, k, dtype=A.dtype))
    cplx = A.dtype.kind == "c"
    # Q = H_1 ... H_k; Q^H = H_k^H ... H_1^H, H_i^H = I - conj(tau_i) v_i v_i^H
    forward_order = left == transpose  # Q^H C and C Q apply H_1 first
    order = range(k) if forward_order else range(k - 1, -1, -1)
    for i in order:
        v = V[..., :, i:i + 1]
        vh = v.conj().swapaxes(-1, -2) if cplx else v.swapaxes(-1, -2)
        t = tau[..., i:i + 1].unsqueeze(-1)
        if transpose and cplx:
            t = t.conj()
        if left:
            C = C - (t * v) @ (vh @ C)
        else:
            C = C - (C @ v) @ (t * vh)
    return C if k else C.clone()  # a new tensor, as torch's, even with no reflector


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):  # noqa: A002, ARG001
    """torch's ``ormqr``: ``Q @ other`` (``left``; ``other @ Q`` otherwise), ``Q^H`` for
    ``transpose``, ``Q`` the product of ``geqrf``'s reflectors (``input``, ``tau``), without
    forming ``Q``; differentiable in ``input``, ``tau`` and ``other``."""
    A, T, C = (_la._as_tensor(x) for x in (input, tau, other))
    _ormqr_check(A, T, C, left)
    if is_grad_enabled() and (A.requires_grad or T.requires_grad or C.requires_grad):
        return _ormqr_graph(A, T, C, left, transpose)
    xp = xp_of(C._data)
    res = _ormqr_np(A.numpy(), T.numpy(), C.numpy(), left, transpose)
    return _la._const(xp.asarray(res))


def install(Tensor) -> None:
    """``Tensor.geqrf()`` and ``Tensor.ormqr(tau, other, left, transpose)``, as torch's."""
    Tensor.geqrf = lambda self: geqrf(self)
    Tensor.ormqr = lambda self, input2, input3, left=True, transpose=False: ormqr(
        self, input2, input3, left, transpose)


# torch's top-level names, for ``functions.py`` and ``skiff/api.py``'s ``_TORCH_NAMES``
# (/work/round39/h13-requests.md)
TOPLEVEL = {"geqrf": geqrf, "ormqr": ormqr}
