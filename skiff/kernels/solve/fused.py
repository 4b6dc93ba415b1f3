"""The hot loops of the solvers as registered custom ops: a plain-``xp`` reference each, a numba
twin on the CPU (:mod:`._numba_kernels`) and a CUDA twin on the GPU (:mod:`.cuda`, which
registers its twins on these ops and is imported at the first GPU dispatch).

Every op works on 3D grids ``(n0, n1, n2)`` (2D grids have ``n0 == 1``) and writes its main
output in place, returning it (plus the fused reduction) so that
:func:`skiff.kernels.backend.testing.check_op` can compare twins:

==============================  ==================================================================
``solve.apply_const``           out = A u for a :class:`~.stencil.ConstStencil`; returns u.Au
``solve.apply_var``             the same for a :class:`~.stencil.VarStencil`
``solve.rbgs_const``/``_var``   red-black Gauss-Seidel sweeps, one pass over the grid per sweep
``solve.residual_restrict_*``   r = f - A u restricted to the coarse grid (mean), returns |r|^2
``solve.restrict``              fc = R r (mean of the children), returns |r|^2
``solve.prolong_add``           u += P e (cell-centred trilinear), ghost factors for the sides
``solve.restrict_t``            fc = P^T r / 2^d (the symmetric restriction), returns |r|^2
``solve.residual_restrict_t_*`` r = f - A u, then fc = P^T r / 2^d, in one pass (uniform)
``solve.axpy_norm``             x += a p, r -= a q, returns |r|^2
``solve.jacobi_dot``            z = r / diag, returns r.z
``solve.pipecg_update``         the eight recurrences of pipelined CG with its three dots
``solve.csr_matvec``            out = A x for a CSR matrix given as (indptr, indices, data)
``solve.dot``                   a.b as a Python float (the Krylov scalars)
==============================  ==================================================================

The last two have only GPU twins: on the CPU scipy's product and numpy's reductions are
already compiled loops, on a GPU the point is one launch instead of cuSPARSE's descriptor set-up
(~100 us of host time per product) or cupy's two-kernel reduction.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from skiff.kernels.backend import custom_op, get_array_module, numba_available

__all__ = [
    "apply_const", "apply_var", "rbgs_const", "rbgs_var", "residual_restrict_const", "restrict",
    "residual_restrict_var", "prolong_add", "restrict_t",
    "residual_restrict_t_const", "axpy_norm", "jacobi_dot",
    "pipecg_update", "csr_matvec", "dot",
    "nb", "const_diag", "numba_ready", "numba_loaded", "deferring", "mark_loaded", "deferred",
    "warming",
    "DEFER_UNKNOWNS", "DEFER_MATRIX_NNZ", "DEFER_GRACE",
]


@functools.lru_cache(maxsize=1)
def nb():
    """The numba kernel module (compiled on first use, cached on disk)."""
    from . import _numba_kernels

    return _numba_kernels


# ---------------------------------------------------------------------------- loading numba
# Importing numba and loading the kernels from numba's disk cache costs ~0.5 s per process
# (~5 s to compile them when the cache is cold), while a 256x256 Poisson solve takes 60 ms on
# the numpy references. So a small solve does not wait: inside ``deferred()`` the numba twins
# count as unavailable until they are loaded (``Solver`` loads them on a background thread, by
# tiny solves, which loads exactly the signatures the solver uses: ``solver.load_numba``), and
# the solver switches to them when they are ready. Anywhere else (a big solve, check_op, a
# direct call) each kernel loads at its first use, as numba does.
DEFER_UNKNOWNS = 1 << 18     # a solve up to 512x512 does not wait for numba
DEFER_MATRIX_NNZ = 1 << 15  # a matrix up to 32768 entries (~80x80 Poisson; AMG's setup in Python)
DEFER_GRACE = 0.25           # seconds a deferred solve runs before the load starts beside it
_READY = threading.Event()
_local = threading.local()


def numba_ready() -> bool:
    """Whether the solver's numba twins are used now (the ``available`` of every CPU twin)."""
    if _READY.is_set() or getattr(_local, "warming", False):
        return True
    if getattr(_local, "defer", False):  # not even `import numba` here (0.15 s)
        return False
    return numba_available()


def deferring() -> bool:
    """True inside ``deferred()`` while the numba kernels are not loaded (the numpy or scipy
    twins run; never imports numba): the AMG setup's and smoother's own numba kernels ask."""
    return (getattr(_local, "defer", False) and not _READY.is_set()
            and not getattr(_local, "warming", False))


def numba_loaded() -> bool:
    """True once the numba kernels are loaded in this process (never starts a load)."""
    return _READY.is_set()


def mark_loaded() -> None:
    """Called by the loader when every kernel is loaded: deferred solves switch to numba."""
    _READY.set()


class warming:
    """``with warming():`` this thread uses the numba twins whatever ``deferred`` says (the
    loader's tiny solves)."""

    def __enter__(self):
        self._old = getattr(_local, "warming", False)
        _local.warming = True
        return self

    def __exit__(self, *exc):
        _local.warming = self._old


class deferred:
    """``with deferred(small):`` a small solve on this thread does not wait for numba."""

    def __init__(self, small: bool = True):
        self.small = bool(small)

    def __enter__(self):
        self._old = getattr(_local, "defer", False)
        _local.defer = self.small or self._old
        return self

    def __exit__(self, *exc):
        _local.defer = self._old


def const_diag(d0, d1, d2):
    return d0[:, None, None] + d1[None, :, None] + d2[None, None, :]


def _neighbour_sum(u, c0, c1, c2):
    """sum over interior faces of coupling * neighbour value, as an array like u."""
    xp = get_array_module(u)
    s = xp.zeros_like(u)
    s[1:] += c0[1:-1] * u[:-1]
    s[:-1] += c0[1:-1] * u[1:]
    s[:, 1:] += c1[:, 1:-1] * u[:, :-1]
    s[:, :-1] += c1[:, 1:-1] * u[:, 1:]
    s[:, :, 1:] += c2[:, :, 1:-1] * u[:, :, :-1]
    s[:, :, :-1] += c2[:, :, 1:-1] * u[:, :, 1:]
    return s


def _const_faces(u, a3):
    xp = get_array_module(u)
    n0, n1, n2 = u.shape
    a = [float(v) for v in a3]
    return (xp.full((n0 + 1, n1, n2), a[0]), xp.full((n0, n1 + 1, n2), a[1]),
            xp.full((n0, n1, n2 + 1), a[2]))


# ---------------------------------------------------------------------------- apply + dot
@custom_op("solve.apply_var")
def apply_var(u, c0, c1, c2, diag, out):
    """out = A u for face couplings c0, c1, c2 and diagonal; returns (out, u.Au)."""
    out[...] = diag * u - _neighbour_sum(u, c0, c1, c2)
    return out, float((out * u).sum())


@custom_op("solve.apply_const")
def apply_const(u, a3, d0, d1, d2, out):
    """out = A u for uniform couplings ``a3`` and per-axis diagonal shares; returns (out, u.Au)."""
    out[...] = const_diag(d0, d1, d2) * u - _neighbour_sum(u, *_const_faces(u, a3))
    return out, float((out * u).sum())


@apply_var.implement("cpu", "numba", available=numba_ready)
def _apply_var_nb(u, c0, c1, c2, diag, out):
    return out, nb().apply_var(u, c0, c1, c2, diag, out)


@apply_const.implement("cpu", "numba", available=numba_ready)
def _apply_const_nb(u, a3, d0, d1, d2, out):
    return out, nb().apply_const(u, a3, d0, d1, d2, out)


# ---------------------------------------------------------------------------- smoothing
def _rbgs_ref(u, f, faces, diag, sweeps, reverse):
    xp = get_array_module(u)
    n0, n1, n2 = u.shape
    k, j, i = xp.meshgrid(xp.arange(n0), xp.arange(n1), xp.arange(n2), indexing="ij")
    parity = (k + j + i) % 2
    order = (1, 0) if reverse else (0, 1)
    for _ in range(int(sweeps)):
        for colour in order:
            new = (f + _neighbour_sum(u, *faces)) / diag
            u[...] = xp.where(parity == colour, new, u)
    return u


@custom_op("solve.rbgs_var")
def rbgs_var(u, f, c0, c1, c2, diag, sweeps, reverse):
    """``sweeps`` red-black Gauss-Seidel sweeps on A u = f, in place (black first if reverse)."""
    return _rbgs_ref(u, f, (c0, c1, c2), diag, sweeps, reverse)


@custom_op("solve.rbgs_const")
def rbgs_const(u, f, a3, d0, d1, d2, sweeps, reverse):
    """Red-black Gauss-Seidel for a uniform stencil, in place."""
    return _rbgs_ref(u, f, _const_faces(u, a3), const_diag(d0, d1, d2), sweeps, reverse)


@rbgs_var.implement("cpu", "numba", available=numba_ready)
def _rbgs_var_nb(u, f, c0, c1, c2, diag, sweeps, reverse):
    return nb().rbgs_var(u, f, c0, c1, c2, diag, int(sweeps), bool(reverse))


@rbgs_const.implement("cpu", "numba", available=numba_ready)
def _rbgs_const_nb(u, f, a3, d0, d1, d2, sweeps, reverse):
    return nb().rbgs_const(u, f, a3, d0, d1, d2, int(sweeps), bool(reverse))


# ---------------------------------------------------------------------------- grid transfer
def restrict_mean(r, coarse_shape):
    """Mean of the fine cells of every coarse cell."""
    (n0, n1, n2), (m0, m1, m2) = r.shape, coarse_shape
    return r.reshape(m0, n0 // m0, m1, n1 // m1, m2, n2 // m2).mean(axis=(1, 3, 5))


@custom_op("solve.restrict")
def restrict(r, fc):
    """fc = R r (mean over the children of each coarse cell); returns (fc, |r|^2)."""
    fc[...] = restrict_mean(r, fc.shape)
    return fc, float((r * r).sum())


@restrict.implement("cpu", "numba", available=numba_ready)
def _restrict_nb(r, fc):
    return fc, nb().restrict(r, fc)


@custom_op("solve.residual_restrict_var")
def residual_restrict_var(u, f, c0, c1, c2, diag, fc):
    """fc = R (f - A u) (mean over children); returns (fc, |f - A u|^2)."""
    r = f - diag * u + _neighbour_sum(u, c0, c1, c2)
    fc[...] = restrict_mean(r, fc.shape)
    return fc, float((r * r).sum())


@custom_op("solve.residual_restrict_const")
def residual_restrict_const(u, f, a3, d0, d1, d2, fc):
    """fc = R (f - A u) for a uniform stencil; returns (fc, |f - A u|^2)."""
    r = f - const_diag(d0, d1, d2) * u + _neighbour_sum(u, *_const_faces(u, a3))
    fc[...] = restrict_mean(r, fc.shape)
    return fc, float((r * r).sum())


@residual_restrict_var.implement("cpu", "numba", available=numba_ready)
def _rr_var_nb(u, f, c0, c1, c2, diag, fc):
    return fc, nb().residual_restrict_var(u, f, c0, c1, c2, diag, fc)


@residual_restrict_const.implement("cpu", "numba", available=numba_ready)
def _rr_const_nb(u, f, a3, d0, d1, d2, fc):
    return fc, nb().residual_restrict_const(u, f, a3, d0, d1, d2, fc)


def _interp_axis(e, axis, n, slo, shi):
    """Linear cell-centred interpolation of ``e`` along ``axis`` to ``n`` cells."""
    xp = get_array_module(e)
    m = e.shape[axis]
    if n == m:
        return e
    e = xp.moveaxis(e, axis, 0)
    lo = xp.concatenate([slo * e[:1], e[:-1]])            # neighbour below, ghost at the edge
    hi = xp.concatenate([e[1:], shi * e[-1:]])
    out = xp.empty((n,) + e.shape[1:], dtype=e.dtype)
    out[0::2] = 0.75 * e + 0.25 * lo
    out[1::2] = 0.75 * e + 0.25 * hi
    return xp.moveaxis(out, 0, axis)


@custom_op("solve.prolong_add")
def prolong_add(u, ec, signs):
    """u += P ec (cell-centred trilinear; ghost factor per side in ``signs``, -1 Dirichlet)."""
    e = ec
    for ax in range(3):
        e = _interp_axis(e, ax, u.shape[ax], float(signs[2 * ax]), float(signs[2 * ax + 1]))
    u += e
    return u


@prolong_add.implement("cpu", "numba", available=numba_ready)
def _prolong_nb(u, ec, signs):
    return nb().prolong_add(u, ec, signs)


def _restrict_t_axis(r, axis, m, slo, shi):
    """The transpose of :func:`_interp_axis` along ``axis`` (to ``m`` cells), halved."""
    xp = get_array_module(r)
    if r.shape[axis] == m:
        return r
    r = xp.moveaxis(r, axis, 0)
    ev, od = r[0::2], r[1::2]                 # fine cells 2i and 2i+1 of coarse cell i
    out = 0.75 * (ev + od)
    out[1:] += 0.25 * od[:-1]                 # fine 2i-1 feeds coarse i from below
    out[:-1] += 0.25 * ev[1:]                 # fine 2i+2 feeds coarse i from above
    out[0] += 0.25 * slo * ev[0]
    out[-1] += 0.25 * shi * od[-1]
    return xp.moveaxis(0.5 * out, 0, axis)


@custom_op("solve.restrict_t")
def restrict_t(r, fc, signs):
    """fc = P^T r / 2^d, the scaled transpose of ``prolong_add`` (so that a multigrid cycle with
    symmetric smoothing is a symmetric preconditioner); returns (fc, |r|^2)."""
    e = r
    for ax in range(3):
        e = _restrict_t_axis(e, ax, fc.shape[ax], float(signs[2 * ax]), float(signs[2 * ax + 1]))
    fc[...] = e
    return fc, float((r * r).sum())


@restrict_t.implement("cpu", "numba", available=numba_ready)
def _restrict_t_nb(r, fc, signs):
    return fc, nb().restrict_t(r, fc, signs)


@custom_op("solve.residual_restrict_t_const")
def residual_restrict_t_const(u, f, a3, d0, d1, d2, fc, signs):
    """fc = P^T (f - A u) / 2^d for a uniform stencil (the symmetric multigrid's residual and
    restriction in one pass); returns (fc, |f - A u|^2). The reference composes the ops, so it
    also runs on GPUs."""
    xp = get_array_module(u)
    out = xp.empty_like(u)
    apply_const(u, a3, d0, d1, d2, out)
    r = f - out
    return restrict_t(r, fc, signs)


@residual_restrict_t_const.implement("cpu", "numba", available=numba_ready)
def _rrt_const_nb(u, f, a3, d0, d1, d2, fc, signs):
    return fc, nb().residual_restrict_t_const(u, f, a3, d0, d1, d2, fc, signs)


# ---------------------------------------------------------------------------- Krylov updates
@custom_op("solve.axpy_norm")
def axpy_norm(x, r, p, q, alpha):
    """x += alpha p; r -= alpha q; returns (x, r, |r|^2)."""
    x += alpha * p
    r -= alpha * q
    return x, r, float((r * r).sum())


@axpy_norm.implement("cpu", "numba", available=numba_ready)
def _axpy_norm_nb(x, r, p, q, alpha):
    return x, r, nb().axpy_norm(x, r, p, q, float(alpha))


@custom_op("solve.jacobi_dot")
def jacobi_dot(r, invdiag, z):
    """z = invdiag r; returns (z, r.z)."""
    z[...] = invdiag * r
    return z, float((r * z).sum())


@jacobi_dot.implement("cpu", "numba", available=numba_ready)
def _jacobi_dot_nb(r, invdiag, z):
    return z, nb().jacobi_dot(r, invdiag, z)


@custom_op("solve.csr_matvec")
def csr_matvec(indptr, indices, data, x, out):
    """out = A x for the CSR matrix ``(data, indices, indptr)`` with ``out.size`` rows."""
    xp = get_array_module(x)
    if xp is np:
        import scipy.sparse as sps
    else:  # cupy arrays: cupyx's sparse module (cupy is present)
        import cupyx.scipy.sparse as sps
    A = sps.csr_matrix((data, indices, indptr), shape=(out.size, x.size))
    out[...] = A @ x
    return out


@custom_op("solve.dot")
def dot(a, b) -> float:
    """sum(a * b) as a Python float (waits for a GPU)."""
    return float((a * b).sum())


@custom_op("solve.pipecg_update")
def pipecg_update(vs, alpha, beta):
    """Pipelined-CG recurrences on the stacked vectors ``vs`` = (x, r, u, w, z, q, s, p, m, n);
    returns (vs, (r.u, w.u, r.r))."""
    x, r, u, w, z, q, s, p, m, n = vs
    z[...] = n + beta * z
    q[...] = m + beta * q
    s[...] = w + beta * s
    p[...] = u + beta * p
    x += alpha * p
    r -= alpha * s
    u -= alpha * q
    w -= alpha * z
    return vs, (float(r @ u), float(w @ u), float(r @ r))


@pipecg_update.implement("cpu", "numba", available=numba_ready)
def _pipecg_nb(vs, alpha, beta):
    return vs, nb().pipecg_update(vs, float(alpha), float(beta))


# ---------------------------------------------------------------------------- GPU twins
# The CUDA twins live in .cuda, which imports this module to register them on its ops; dispatch
# imports it the first time one of these ops meets GPU arrays (so the dependency is one-way).
for _op in (apply_var, apply_const, rbgs_var, rbgs_const, residual_restrict_var,
            residual_restrict_const, residual_restrict_t_const, prolong_add, restrict_t,
            axpy_norm, jacobi_dot, csr_matvec, dot):
    _op.implement_in("gpu", "skiff.kernels.solve.cuda")
del _op

