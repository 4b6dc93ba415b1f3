"""``Solver``: set up once (operator, preconditioner hierarchy, kernels), solve many right-hand
sides; ``solve`` is the one-call form. Also the preconditioners the Krylov methods take
(Jacobi, Chebyshev, geometric and algebraic multigrid) and :func:`resolve_precond`; the
system as an operator on the device is :mod:`.operators`.

>>> import numpy as np, scipy.sparse as sp
>>> A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(50, 50)).tocsr()
>>> sol = solve(A, np.ones(50), method="cg", precond="jacobi", rtol=1e-10)
>>> sol.converged, bool(np.allclose(A @ sol.x, 1.0))
(True, True)
"""

from __future__ import annotations

import inspect
import math
import threading
import time
import warnings

import numpy as np

from skiff.kernels.backend import resolve_device, to_numpy, xp_for
from skiff.kernels.backend.devices import DEFAULT_DEVICE
from skiff.kernels.backend.report import JobCancelled

from . import fused
from .amg import SMOOTHERS as AMG_SMOOTHERS_ALL
from .amg import SmoothedAggregation
from .amg_rs import RugeStuben, suits_classical
from .cancel import checking
from .cocg import cocg, transpose_asymmetry
from .components import (
    component_labels,
    component_means,
    isolated_unknowns,
    remove_means,
    unit_rows_lifted,
    with_unit_diagonal,
)
from .estimate import check_fits
from .krylov import KRYLOV, Breakdown, Divergence, SolveError, Stagnation
from .minres import minres
from .multigrid import CYCLES, SMOOTHERS, GeometricMG
from .null_space import annihilated, component, remove
from .operators import (
    asymmetry,
    check_real,
    grid_operator,
    host_csr,
    is_matrix_free,
    matrix_operator,
    unwrapped,
)
from .problems import GridProblem, diffusion, poisson
from .saddle import SaddlePrecond, saddle_blocks
from .solution import Solution, stack_columns
from .stencil import ConstStencil

__all__ = ["Solver", "solve", "METHODS", "PRECONDS", "SolveError", "check_tolerances",
           "matrix_indefiniteness", "load_numba"]

METHODS = ("cg", "pipecg", "bicgstab", "gmres", "minres", "cocg", "mg", "fmg", "direct", "auto")
STALL_RESTARTS = 5   # GMRES stops when this many restarts in a row gain under 0.1 % in all
# 'auto''s GMRES doubles its restart after a cycle that gained less than tenfold: up to 8x
# (240), its basis (V and Z) within 1 GiB
GROW_RESTART = 8
# BiCGStab restarted from its true residual (at most REPLACEMENTS times) where its recurrence
# passed the tolerance, x did not, and the residual rose PEAK_REPLACE times above its start
REPLACEMENTS, PEAK_REPLACE = 2, 1e3
GMRES_BASIS_BYTES = 1 << 30
# 'auto' on an assembled matrix of at most this many unknowns factorises it (SciPy's
# spsolve) when its Krylov method stagnates: SuperLU costs 0.17 s on a 2-D 200^2 matrix and
# 2.5 s on a 3-D 28^3 one (one thread), where the stalled GMRES had run its seconds already
DIRECT_AFTER_STALL = 20_000
SCIPY_RESTART = 20   # restart=None: SciPy's gmres default
# 'auto' drops AMG for COCG where Re A has an eigenvalue below -this x its largest (Lanczos)
COMPLEX_SHIFT_AMG = 0.02
# what runs on complex vectors
COMPLEX_METHODS = ("cg", "bicgstab", "gmres", "minres", "cocg", "direct")
# on a complex matrix (real: any, by parts); ilu / ilut since round 45 (h14)
COMPLEX_PRECONDS = ("none", "jacobi", "amg", "user", "ilu", "ilut")
PRECONDS = ("auto", "none", "jacobi", "chebyshev", "mg", "amg", "saddle", "ilu", "ilut")
# names of ILU(0) / IC(0) (precond='ilu', round 40 h10: the row split's block kernel, ilu0.py)
ILU_NAMES = ("ilu0", "ic", "ic0", "ichol", "ichol0", "incomplete-lu")
# a solve stopped by maxiter whose residual fell by this factor a step or faster (geometric
# mean) was converging well: its status says how many more iterations reach the tolerance
# instead of naming another method or smoother
FAST_RATE = 0.5


AMG_OPTIONS = ("second_pass", "interpolation", "theta", "order", "max_coarse")
# round 35: the options each AMG reads (amg_options=): classical AMG's above, its
# Gauss-Seidel sweeps (pyamg's presmoother=('gauss_seidel', {'iterations': k})) and pyamg's
# strength=('classical', {'theta': t}); smoothed aggregation's strength of connection
# (pyamg's strength='evolution' or ('symmetric', {'theta': t})) and coarsest size;
# amg='auto' the one both read
AMG_OPTIONS_BY_KIND = {"classical": AMG_OPTIONS + ("sweeps", "strength", "cf", "aggressive"),
                       "sa": ("strength", "max_coarse"),
                       "auto": ("max_coarse",)}


def _strength(value, amg) -> dict:
    """pyamg's ``strength=`` (a name, or ``(name, {'theta': t})``) as the AMG's keywords."""
    name, extra = (value, {}) if isinstance(value, str) else (
        tuple(value) if isinstance(value, (tuple, list)) and len(value) == 2 else (None, None))
    if not isinstance(extra, dict) or set(extra) - {"theta"}:
        raise ValueError(f"amg_options strength: a name or pyamg's (name, {{'theta': t}}), "
                         f"got {value!r}")
    from .amg import STRENGTHS

    names = ("classical",) if amg == "classical" else STRENGTHS
    if name not in names:
        other = "amg='sa'" if amg == "classical" else "amg='classical'"
        raise ValueError(f"amg_options strength {name!r}: amg={amg!r} takes "
                         f"{', '.join(map(repr, names))}"
                         + (f" ({other} takes {name!r})" if name in ("classical",)
                            + STRENGTHS else ""))
    out = {} if amg == "classical" else {"strength": name}
    if "theta" in extra:
        out["theta"] = float(extra["theta"])
    return out


def _amg_options(options, amg) -> dict:
    """``amg_options`` checked: a dict of the chosen AMG's options
    (:data:`AMG_OPTIONS_BY_KIND`: :class:`.amg_rs.RugeStuben`'s for ``amg='classical'``,
    :class:`.amg.SmoothedAggregation`'s ``strength`` (pyamg's form: ``'evolution'`` or
    ``('symmetric', {'theta': 0.1})``) and ``max_coarse`` for ``amg='sa'``; an option the
    chosen AMG would not read is refused, naming the AMG that reads it); returned as the
    AMG's keywords."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(f"amg_options takes a dict (e.g. {{'second_pass': True}}), got "
                        f"{type(options).__name__}")
    known = AMG_OPTIONS_BY_KIND["classical"] + AMG_OPTIONS_BY_KIND["sa"]
    unknown = sorted(set(options) - set(known))
    if unknown:
        hint = (" (pyamg's CF=('RS', {'second_pass': True}) is {'second_pass': True})"
                if "CF" in unknown else "")
        raise ValueError(f"amg_options: unknown option(s) {', '.join(map(repr, unknown))}; "
                         f"classical AMG takes {', '.join(AMG_OPTIONS_BY_KIND['classical'])}"
                         f"; smoothed aggregation {', '.join(AMG_OPTIONS_BY_KIND['sa'])}"
                         f"{hint}")
    reads = AMG_OPTIONS_BY_KIND.get(amg, ())
    other = sorted(set(options) - set(reads))
    if other:
        whose = [k for k in ("classical", "sa") if set(other) <= set(AMG_OPTIONS_BY_KIND[k])]
        fix = f"pass amg={whose[0]!r} with them" if whose else "they belong to other AMGs"
        if amg == "sa" and other == ["theta"]:
            fix += (" (smoothed aggregation's threshold: strength=('symmetric', "
                    "{'theta': t}), pyamg's form)")
        what = {"classical": "Ruge-Stueben", "sa": "smoothed aggregation"}.get(
            amg, "it reads max_coarse only")
        raise ValueError(f"amg_options {', '.join(map(repr, other))} "
                         f"{'is' if len(other) == 1 else 'are'} not read by amg={amg!r} "
                         f"({what}); {fix}")
    out = dict(options)
    if "strength" in out:
        out.update(_strength(out.pop("strength"), amg))
    if "cf" in out:
        from .amg_rs import SPLITTINGS

        _choice(out["cf"], SPLITTINGS, "amg_options cf (pyamg's CF=; no PMISc, CLJP, CR)")
    if "aggressive" in out and (isinstance(out["aggressive"], bool) or not isinstance(
            out["aggressive"], (int, np.integer)) or out["aggressive"] < 0):
        raise ValueError(f"amg_options aggressive: the number of levels coarsened twice "
                         f"(hypre's aggressive coarsening), an integer >= 0; got "
                         f"{out['aggressive']!r}")
    if "sweeps" in out:
        sweeps = out["sweeps"]
        if isinstance(sweeps, bool) or not isinstance(sweeps, (int, np.integer)) or sweeps < 1:
            raise ValueError(f"amg_options sweeps: the symmetric Gauss-Seidel sweeps before "
                             f"and after (pyamg's presmoother iterations), a positive "
                             f"integer; got {sweeps!r}")
    return out


def _rate(residuals) -> float | None:
    """The mean factor by which the residual fell per iteration (None without two points)."""
    if len(residuals) < 2 or not residuals[0] > 0 or not math.isfinite(residuals[-1]):
        return None
    if residuals[-1] <= 0:
        return 0.0
    return float((residuals[-1] / residuals[0]) ** (1.0 / (len(residuals) - 1)))

# amg=: which algebraic multigrid precond='amg' builds ('sa': smoothed aggregation,
# 'classical': Ruge-Stueben, pyamg's ruge_stuben_solver; 'auto': see _amg_kind)
AMG_KINDS = ("auto", "sa", "classical")
COMPATIBILITY = (None, "project")
AMG_SMOOTHERS = tuple(s for s in AMG_SMOOTHERS_ALL if s not in ("auto", "jacobi"))   # smoother=
CALLBACK_TYPES = (None, "x", "pr_norm", "legacy")
_OTHERS = "method='bicgstab' or 'gmres' (they need only A's products, no rmatvec)"
# scipy.sparse.linalg's names a user tries: what here does that work
SCIPY_METHODS = {
    "lgmres": "method='gmres' (restart= sets its cycle length)",
    "gcrotmk": "method='gmres' (restart= sets its cycle length)",
    "qmr": _OTHERS, "bicg": _OTHERS, "cgs": _OTHERS, "tfqmr": _OTHERS,
    "spsolve": "method='direct' (SciPy's sparse LU, as spsolve's)",
    "splu": "method='direct' (SciPy's sparse LU), or Solver(A, method='direct') to reuse it",
    "lsqr": "scipy.sparse.linalg.lsqr itself: skiff solves square systems, not least squares",
    "lsmr": "scipy.sparse.linalg.lsmr itself: skiff solves square systems, not least squares",
}


# preconditioners a SciPy user names: an incomplete LU is SciPy's spilu given as M
_SPILU = ("SciPy's incomplete LU as M: M=scipy.sparse.linalg.spilu(A.tocsc()) (its solve "
          "is applied; GMRES or BiCGStab, as it is not symmetric)")
_ILU = ("precond='ilut' (skiff's threshold ILU with fill, spilu's drop_tol=1e-4 and "
        "fill_factor=10; precond=('ilut', {'drop_tol': 1e-3, 'fill_factor': 5}) sets them), "
        "precond='ilu' (ILU(0): no fill; IC(0) on a symmetric matrix), or " + _SPILU
        + ", or precond='amg'")
SCIPY_PRECONDS = {"spilu": _ILU,
                  "lu": "method='direct' (a sparse LU solves A outright: no Krylov method)",
                  "splu": "method='direct' (a sparse LU solves A outright: no Krylov method)"}


def _choice(value, valid, what):
    if value not in valid:
        shown = ", ".join(str(v) for v in valid)
        raise ValueError(f"unknown {what} {value!r}: choose from {shown}")
    return value


def _check_options(precond, cycle, smoother, compatibility):
    if precond not in PRECONDS and str(precond).lower() in ("ilu",) + ILU_NAMES:
        return _check_options("ilu", cycle, smoother, compatibility)
    if precond not in PRECONDS and str(precond).lower() in SCIPY_PRECONDS:
        raise ValueError(f"unknown preconditioner {precond!r}: use "
                         f"{SCIPY_PRECONDS[str(precond).lower()]} (preconditioners: "
                         f"{', '.join(PRECONDS)})")
    _choice(precond, PRECONDS, "preconditioner")
    _choice(cycle, CYCLES, "cycle")
    _choice(smoother, SMOOTHERS + AMG_SMOOTHERS, "smoother")
    _choice(compatibility, COMPATIBILITY, "compatibility")


def _near_nullspace(near_nullspace, system, is_grid, n):
    """``near_nullspace`` checked and shaped ``(rows, k)`` float64 (None when not given)."""
    if near_nullspace is None:
        return None
    nn = np.asarray(near_nullspace)
    rows = int(np.prod(system.shape)) if is_grid else (
        int(system.shape[0]) if hasattr(system, "shape") else n)
    if nn.ndim not in (1, 2) or nn.shape[0] != rows or nn.dtype.kind not in "fiu":
        raise ValueError(f"near_nullspace must be a real array of shape ({rows}, k), "
                         f"got {nn.shape!r} {nn.dtype}")
    if not np.isfinite(nn.sum()):   # round 48 (h6): a NaN in it ran without a word
        raise ValueError(f"near_nullspace contains NaN or inf (first at row "
                         f"{int(np.argmax((~np.isfinite(nn.reshape(rows, -1))).any(axis=1)))}): "
                         f"give finite vectors, e.g. rigid_body_modes(coords)")
    return nn.reshape(rows, -1).astype(np.float64)


def _finite_x0(x0) -> None:
    """One line where ``x0`` holds NaN or inf (round 48 h6: it ran, and CG's NaN check
    blamed the matrix: "the solution became NaN/inf ... the matrix may be singular")."""
    x0 = np.asarray(to_numpy(x0))
    if x0.dtype.kind in "fc" and not np.isfinite(x0.sum()):
        flat = int(np.argmax(~np.isfinite(x0.ravel())))
        where = (flat if x0.ndim < 2 else   # (row, column) of several right-hand sides' x0
                 tuple(int(i) for i in np.unravel_index(flat, x0.shape)))
        raise ValueError(f"x0 contains NaN or inf (first at index {where}: "
                         f"{x0.ravel()[flat].item()!r}); give a finite initial guess, or "
                         f"x0=None (zeros)")


def _blocksize(system) -> int | None:
    """A BSR matrix's square block size (the unknowns of a node, which AMG aggregates
    together on the finest level, as pyamg), else None (AMG looks at the near-null space).
    2-D elasticity as BSR 2x2 with the rigid-body modes, 80 000 unknowns: CG+AMG 11
    iterations (18 when the unknowns were aggregated one by one; pyamg 11)."""
    import scipy.sparse as sp

    if sp.issparse(system) and system.format == "bsr":
        r, c = system.blocksize
        if r == c and r > 1:
            return int(r)
    return None


def result_dtype(*dtypes):
    """x's dtype for A and b of ``dtypes`` (None: not known), as SciPy's: float32 and
    complex64 stay, any other becomes float64 or complex128."""
    kinds = [np.dtype(d) for d in dtypes if d is not None]
    try:
        rt = np.result_type(*kinds) if kinds else np.dtype(np.float64)
    except TypeError:
        rt = np.dtype(np.float64)
    if rt.kind == "c":
        return np.complex64 if rt.itemsize <= 8 else np.complex128
    return np.float32 if rt.kind == "f" and rt.itemsize <= 4 else np.float64


def _empty_solution(system, b, n, method, precond, run) -> Solution | None:
    """SciPy's answer for a system of 0 unknowns (its cg, gmres, minres, bicgstab return an
    empty x with info 0; this was refused "there is nothing to solve"), or None for a
    system that has unknowns. ``n``: a callable's size (solve()'s ``n=``)."""
    if isinstance(system, GridProblem):
        return None
    shape = getattr(system, "shape", None)
    if (n if shape is None else tuple(shape)) not in (0, (0, 0)):
        return None
    check_tolerances(run["rtol"], run["atol"], run["maxiter"], least=0)
    for name, v in (("b", b), ("x0", run["x0"])):
        if v is not None and np.size(v) != 0:
            raise ValueError(f"{name} has {np.size(v)} entries but the system has 0 unknowns")
    dt = result_dtype(getattr(system, "dtype", None),
                      None if b is None else np.asarray(b).dtype)
    return Solution(field=np.zeros(0, dt), residuals=[0.0], iterations=0, converged=True,
                    time=0.0, method=method, precond=str(precond), bnorm=0.0,
                    problem="matrix", status="converged: the system has 0 unknowns "
                    "(an empty x, as SciPy's)", true_residual=None)


def check_tolerances(rtol, atol, maxiter, *, least=1) -> None:
    """Refuse tolerances and iteration limits that cannot mean anything, naming the value.
    ``least``: the smallest ``maxiter`` taken (``Solver.solve`` takes 0, SciPy's "no
    iteration": x0 back)."""
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating,
                                                             np.integer)):
            raise ValueError(f"solve: {name} must be a number, got {name}={value!r}")
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"solve: {name} must be a finite number >= 0, got {name}={value!r}")
    if rtol == 0 and atol == 0:
        raise ValueError(f"solve: rtol and atol must not both be 0, got rtol={rtol!r}, "
                         f"atol={atol!r}")
    if rtol >= 1:
        raise ValueError(f"solve: rtol is a relative tolerance and must be below 1 (x = 0 "
                         f"already meets rtol >= 1), got rtol={rtol!r}; typical: 1e-8")
    if maxiter is not None and (isinstance(maxiter, bool) or not isinstance(
            maxiter, (int, np.integer)) or maxiter < least):
        kind = "a positive integer" if least >= 1 else f"an integer >= {least}"
        raise ValueError(f"solve: maxiter must be {kind} (or None for the default), got "
                         f"maxiter={maxiter!r}")


def _nested_rows(system):
    """A matrix written as a list of rows (``[[4, 1], [1, 3]]``) as a float array; anything
    else unchanged (numpy's own rule: ``np.linalg.solve`` takes the same lists)."""
    if not isinstance(system, (list, tuple)):
        return system
    try:
        arr = np.asarray(system)
        arr = arr.astype(np.complex128 if arr.dtype.kind == "c" else np.float64)
    except (TypeError, ValueError):
        raise ValueError("a matrix given as a list must be a list of equal-length rows of "
                         f"numbers, got {type(system).__name__} {system!r:.60}") from None
    if arr.ndim != 2:
        raise ValueError(f"a matrix given as a list must be a list of rows (2-D), got "
                         f"{arr.ndim}-D of shape {arr.shape}")
    return arr


def _fill_isolated(system, is_grid):
    """``(system, isolated)``: a host matrix (sparse, or a dense 2-D array) with unknowns no
    equation involves (row and column empty: a graph's isolated node) gets a unit diagonal
    there (:mod:`.components`; b must be 0 there); anything else unchanged."""
    none = np.empty(0, dtype=np.intp)
    if is_grid:
        return system, none
    import scipy.sparse as sp

    dense = isinstance(system, np.ndarray) and system.ndim == 2
    if not (sp.issparse(system) or dense) or system.shape[0] != system.shape[1]:
        return system, none
    iso = isolated_unknowns(system)
    if not iso.size or iso.size == system.shape[0]:   # all zeros: _check_rows says so
        return system, none
    return with_unit_diagonal(system, iso), iso


def matrix_indefiniteness(op, steps: int = 30) -> str | None:
    """Why the operator ``op`` is not positive definite, or None when no proof was found.

    A positive definite matrix has a positive diagonal, so a diagonal entry <= 0 proves it
    is not; otherwise a few Lanczos steps give Ritz values, each an upper bound of the
    lowest eigenvalue on the Krylov space: a negative one proves it too."""
    try:
        diag = to_numpy(op.diagonal()).ravel()
    except (ValueError, AttributeError):
        diag = None
    if diag is not None and diag.size:
        i = int(np.argmin(diag))
        if diag.max() < 0:  # the [1, -2, 1] Laplacian's sign: -A is likely the SPD one
            return (f"every diagonal entry is negative (entry {i}: {float(diag[i]):.3g}): the "
                    "matrix looks negative definite; solve -A x = -b with cg (the same x)")
        if diag[i] <= 0:
            return (f"diagonal entry {i} is {float(diag[i]):.3g} <= 0; a positive definite "
                    "matrix has a positive diagonal")
    ritz = lanczos_ritz(op, steps)
    if ritz is not None and ritz[0] < -1e-10 * max(abs(ritz[-1]), 1e-300):
        return (f"it has a negative eigenvalue: the Lanczos estimate is {ritz[0]:.3g} "
                f"(largest {ritz[-1]:.3g})")
    return None


def lanczos_ritz(op, steps: int = 30):
    """The Ritz values (ascending) of ``steps`` Lanczos steps on the symmetric (Hermitian)
    operator ``op`` from a fixed random start, or None when a product was not finite. The
    first bounds the lowest eigenvalue from above, the last the largest from below."""
    xp = getattr(op, "xp", np)
    kind = complex if getattr(op, "complex", False) else float
    v = xp.asarray(np.random.default_rng(0).standard_normal(op.shape)).astype(kind)
    v /= float(xp.linalg.norm(v.ravel()))
    w = xp.empty(op.shape, kind)
    prev = v * 0.0
    alphas, betas = [], []
    beta = 0.0
    for _ in range(min(int(steps), op.n)):
        alpha = op.matvec_dot(v, w)
        if not math.isfinite(alpha):
            return None
        alphas.append(alpha)
        w -= alpha * v + beta * prev
        beta = float(xp.linalg.norm(w.ravel()))
        if beta <= 1e-12 * max(abs(a) for a in alphas):
            break
        betas.append(beta)
        prev, v = v, w / beta
        w = xp.empty(op.shape, kind)
    k = len(alphas)
    T = np.diag(alphas) + np.diag(betas[:k - 1], 1) + np.diag(betas[:k - 1], -1)
    return np.linalg.eigvalsh(T)


# ------------------------------------------------------------------------------ preconditioners
ZERO_DIAGONAL_REMEDY = ("a matrix with zeros on its diagonal (a saddle-point or KKT matrix "
                        "[[K, B^T], [B, 0]]) takes precond='none' with method='gmres' (or "
                        "method='direct'); jacobi, chebyshev and amg all divide by the diagonal")


def _zero_diagonal(op) -> str | None:
    """Where the diagonal of a matrix operator is zero (None when nowhere, or unknown)."""
    if getattr(op, "callable", False):
        return None
    zero = to_numpy(op.diagonal()).ravel() == 0
    if not zero.any():
        return None
    count = int(zero.sum())
    more = f", and {count - 1} more" if count > 1 else ""
    return f"diagonal entry {int(np.argmax(zero))} is 0{more}"


class Jacobi:
    def __init__(self, op):
        diag = op.diagonal()
        zero = to_numpy(diag).ravel() == 0
        if zero.any():
            raise SolveError(f"precond 'jacobi' divides by the diagonal, and "
                             f"{_zero_diagonal(op)}; {ZERO_DIAGONAL_REMEDY}")
        self.invdiag = 1.0 / diag
        self.bytes = 0

    def __call__(self, r, out):
        if out.dtype.kind == "c":   # a complex system's: numpy (the fused kernel is real)
            out[...] = self.invdiag.reshape(r.shape) * r
        else:
            fused.jacobi_dot(r, self.invdiag, out)
        self.bytes += 24 * r.size
        return out

    def describe(self):
        return "Jacobi (diagonal)"


class ByParts:
    """A real preconditioner applied to complex vectors (a real system with a complex b):
    ``M r = M Re(r) + i M Im(r)``, as M is real and linear."""

    def __init__(self, M):
        self.inner = M

    @property
    def bytes(self):
        return self.inner.bytes

    @bytes.setter
    def bytes(self, value):
        self.inner.bytes = value

    def __call__(self, r, out):
        part = np.empty(r.shape) if isinstance(r, np.ndarray) else r.real.copy()
        re = self.inner(np.ascontiguousarray(r.real), part).copy()
        self.inner(np.ascontiguousarray(r.imag), part)
        out[...] = re + 1j * part
        return out

    def describe(self):
        return self.inner.describe()


class Chebyshev:
    """A Chebyshev polynomial in D^-1 A approximating A^-1 on [lmax / ratio, lmax]."""

    def __init__(self, op, degree=4, ratio=30.0, symmetric=True):
        self.op = op
        zero = _zero_diagonal(op)
        if zero is not None:
            raise SolveError(f"precond 'chebyshev' divides by the diagonal, and {zero}; "
                             f"{ZERO_DIAGONAL_REMEDY}")
        self.invdiag = 1.0 / op.diagonal()
        self.degree = int(degree)
        xp = op.xp
        v = xp.asarray(np.random.default_rng(2).standard_normal(op.shape))
        w = xp.empty(op.shape)
        lam = 1.0
        for _ in range(15):
            v /= float(xp.linalg.norm(v.ravel()))
            op.matvec(v, w)
            w *= self.invdiag.reshape(w.shape)
            # a Rayleigh quotient bounds the spectrum of a symmetric D^-1 A only; a
            # non-symmetric one's eigenvalues can be complex: the norm ratio |D^-1 A v| / |v|
            # (power iteration on the modulus) instead, and the matrix's ||D^-1 A||_inf bound
            lam = float((w * v).sum()) if symmetric else float(xp.linalg.norm(w.ravel()))
            v, w = w, v
        if not symmetric and not getattr(op, "callable", True):
            rows = xp.asarray(abs(op.A) @ xp.ones(op.n)).ravel() * xp.abs(self.invdiag.ravel())
            lam = max(lam / 1.1, float(rows.max()))
        self.lmax = 1.1 * lam
        self.lmin = self.lmax / ratio
        self.tmp = xp.empty(op.shape)
        self.bytes = 0

    def __call__(self, r, out):
        hi, lo = self.lmax, self.lmin
        theta, delta = (hi + lo) / 2, (hi - lo) / 2
        sigma = theta / delta
        rho = 1.0 / sigma
        dinv = self.invdiag.reshape(r.shape)
        res = dinv * r
        d = res / theta
        out[...] = 0.0
        for k in range(self.degree):
            out += d
            if k == self.degree - 1:
                break
            self.op.matvec(d, self.tmp)
            res -= dinv * self.tmp
            rho_new = 1.0 / (2 * sigma - rho)
            d = rho_new * rho * d + (2 * rho_new / delta) * res
            rho = rho_new
        self.bytes += self.degree * (self.op.matvec_bytes + 40 * r.size)
        return out

    def describe(self):
        return f"Chebyshev degree {self.degree} on [{self.lmin:.3g}, {self.lmax:.3g}]"


class MGPrecond:
    def __init__(self, mg: GeometricMG):
        self.mg = mg
        self.bytes = 0
        n = sum(int(np.prod(lv.shape)) for lv in mg.levels)
        self.cycle_bytes = 8 * n * (3 * (mg.pre + mg.post) + 5)

    def __call__(self, r, out):
        self.mg.precondition(r, out)
        self.bytes += self.cycle_bytes
        return out

    def describe(self):
        return "geometric multigrid " + self.mg.describe()


class AMGPrecond:
    def __init__(self, amg: SmoothedAggregation):
        self.amg = amg
        self.bytes = 0
        nnz = sum(lv[0].nnz for lv in amg.levels)
        self.cycle_bytes = (12 * nnz + 8 * sum(lv[0].shape[0] for lv in amg.levels) * 6) * (
            2 * amg.degree + 1)

    def __call__(self, r, out):
        self.amg.precondition(r, out)
        self.bytes += self.cycle_bytes
        return out

    def describe(self):
        return "algebraic multigrid " + self.amg.describe()


class UserPrecond:
    """A user's own preconditioner, in SciPy's meaning (``M`` approximates ``A^-1``): a scipy
    ``LinearOperator``, a callable ``r -> M r`` or a matrix (sparse or dense, applied as
    ``M @ r``), or a factorisation with ``solve`` (``spilu(A)``: ``M r`` is its solve). It
    gets and returns flat vectors of ``n`` values, on the host (numpy) as SciPy's solvers give
    them; on a GPU the vectors go through the host."""

    def __init__(self, M, n: int, xp):
        shape = getattr(M, "shape", None)
        if shape is not None and tuple(shape) != (n, n):
            raise ValueError(f"the preconditioner M has shape {tuple(shape)!r}; it must be "
                             f"({n}, {n}), the matrix's")
        if shape is not None and hasattr(M, "matvec"):
            self.apply, self.kind = M.matvec, type(M).__name__
        elif shape is not None and callable(getattr(M, "solve", None)) and not hasattr(
                M, "__matmul__"):   # a factorisation (spilu/splu's SuperLU): M r = its solve
            self.apply, self.kind = M.solve, f"{type(M).__name__}.solve"
        elif shape is not None:
            self.apply, self.kind = (lambda r, M=M: M @ r), type(M).__name__
        elif callable(M):
            self.apply, self.kind = M, "function"
        else:
            raise ValueError(f"the preconditioner M must be a LinearOperator, a callable "
                             f"r -> M r or an (n, n) matrix, got {type(M).__name__}")
        self.n, self.xp = n, xp
        self.bytes = 0
        # a real M (by its dtype, or its factors' for spilu/splu) meets complex vectors by
        # parts, M r = M Re r + i M Im r (SuperLU's solve refuses complex vectors)
        dtype = getattr(M, "dtype", None) or getattr(getattr(M, "L", None), "dtype", None)
        try:
            self.real = dtype is not None and np.dtype(dtype).kind in "biuf"
        except TypeError:
            self.real = False

    def __call__(self, r, out):
        host = r.ravel() if self.xp is np else to_numpy(r).ravel()
        if self.real and host.dtype.kind == "c":
            y = np.asarray(self.apply(np.ascontiguousarray(host.real))) + 1j * np.asarray(
                self.apply(np.ascontiguousarray(host.imag)))
        else:
            y = self.apply(host)
        y = np.asarray(to_numpy(y) if self.xp is not np else y)
        if y.size != self.n:
            raise ValueError(f"the preconditioner M returned {y.shape!r} for a vector of "
                             f"{self.n}; it must return {self.n} values")
        if out.dtype.kind != "c":
            check_real(y.dtype, "the preconditioner's result M r",
                       "a real system's vectors are real (a complex M needs a complex A or b)")
        out[...] = self.xp.asarray(y.reshape(out.shape))
        return out

    def describe(self):
        return f"the user's M ({self.kind})"


class ILUPrecond:
    """``precond='ilu'`` on one rank (round 40 h10): ILU(0) of the matrix on its own pattern,
    IC(0) in ``L D L^T`` form when A is symmetric (so CG takes it), the kernel of the row
    split's block Jacobi (:mod:`.ilu0`); PETSc's ``-pc_type ilu`` (``icc`` for the
    symmetric). A zero pivot is refused in one line. A matrix numbered with no locality (a
    mesh generator's file: RCM's bandwidth under half A's) is factored as ``P A P^T`` in
    reverse Cuthill-McKee order (round 44 h17: 60^2 upwind numbered at random, GMRES 89 ->
    11 iterations, the grid's own); a local numbering (a grid's) is kept: RCM gives the same
    iterations there and costs two gathers a step."""

    def __init__(self, A, xp):
        import scipy.sparse as sp

        from .ilu0 import ILU0

        A = sp.csr_matrix(to_numpy(A) if not sp.issparse(A) else A)
        self.symmetric = bool(abs(A - A.T).max() == 0) if A.shape[0] else True
        self.perm = _rcm_if_it_narrows(A)
        if self.perm is not None:
            A = A[self.perm][:, self.perm]
        self.ilu = ILU0(A, "precond='ilu'", names=self.perm)
        self.xp, self.bytes = xp, 0

    def __call__(self, r, out):
        r = r.ravel()
        if self.perm is None:
            out[...] = self.ilu.solve(r).reshape(out.shape)
        else:          # M r = P^T (L U)^-1 P r
            y = np.empty(r.shape[0], dtype=np.result_type(self.ilu.dtype, r.dtype))
            y[self.perm] = self.ilu.solve(np.ascontiguousarray(r[self.perm]))
            out[...] = y.reshape(out.shape)
        return out

    def describe(self):
        return (("IC(0) (ILU(0) of a symmetric matrix)" if self.symmetric else "ILU(0)")
                + (", RCM order" if self.perm is not None else ""))


def _bandwidth(A, inv=None) -> int:
    """``max |i - j|`` over A's entries (in the order ``inv``: ``inv[old] = new``)."""
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    cols = A.indices
    if inv is not None:
        rows, cols = inv[rows], inv[cols]
    return int(np.abs(rows - cols).max()) if cols.size else 0


def _rcm_if_it_narrows(A):
    """Reverse Cuthill-McKee's permutation of A when it halves A's bandwidth, else None."""
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    if A.shape[0] < 3 or A.nnz == 0:
        return None
    perm = np.asarray(reverse_cuthill_mckee(A, symmetric_mode=False))
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=perm.dtype)
    return perm if 2 * _bandwidth(A, inv) < _bandwidth(A) else None


def _check_ilu(system, is_grid, device, name="ilu") -> None:
    """``precond='ilu'`` (``'ilut'``) needs a real matrix's entries, on the CPU: one line
    otherwise."""
    if is_grid:
        raise ValueError(f"precond='{name}' factors a matrix's entries, and this is a grid "
                         "problem (a stencil): use precond='mg' (or 'amg'), or pass the "
                         "assembled matrix (problem.matrix())")
    if is_matrix_free(system):
        raise ValueError(f"precond='{name}' factors a matrix's entries, and A is a function / "
                         "LinearOperator: give the assembled matrix, or precond='none' / "
                         "your own M")
    if device.is_gpu:
        raise ValueError(f"precond='{name}' runs on the CPU (its triangular solves are "
                         "sequential): give device='cpu', or precond='amg' on the GPU")


_ILUT_KEYS = ("drop_tol", "fill_factor", "reorder")


# spilu's keywords beyond drop_tol / fill_factor (round 45 h4): what each is in skiff's ILUT
_SPILU_ORDERS = ("COLAMD", "MMD_AT_PLUS_A", "MMD_ATA")
_SPILU_OTHERS = {
    "diag_pivot_thresh": "skiff's ILUT does not pivot (a zero pivot is replaced by "
                         "max(drop_tol, 1e-8) |a_i|): drop diag_pivot_thresh",
    "relax": "relax tunes SuperLU's supernodes (its speed); skiff's ILUT has none: drop it",
    "panel_size": "panel_size tunes SuperLU's supernodes (its speed); skiff's ILUT has none: "
                  "drop it",
    "options": "options= is SuperLU's own dict; skiff's ILUT takes drop_tol, fill_factor and "
               "reorder",
}


def _spilu_names(opts: dict) -> dict:
    """SciPy ``spilu``'s other keywords in ``precond=('ilut', {...})`` (round 45 h4): taken
    where skiff's ILUT does the same thing, else refused in one line naming its equivalent.
    ``permc_spec='NATURAL'`` (A's own order) is ``reorder=None``; SuperLU's fill-reducing
    column orderings are not skiff's (it orders by reverse Cuthill-McKee, ``reorder='rcm'``,
    the default: round 44 h17 measured COLAMD / MMD against it). ``drop_rule='basic,prows'``
    is skiff's rule (an entry under ``drop_tol`` times its row's 2-norm dropped, each row of
    L and U keeping its largest ``fill_factor nnz(a_i) / 2``); SuperLU's other rules are
    refused."""
    opts = dict(opts)
    for key, why in _SPILU_OTHERS.items():
        if key in opts:
            raise ValueError(f"precond=('ilut', {{...}}): {key} is SciPy spilu's; {why}")
    if "permc_spec" in opts:
        order = opts.pop("permc_spec")
        name = str(order).upper()
        if "reorder" in opts:
            raise ValueError("precond=('ilut', {...}): give reorder= or permc_spec=, not both")
        if name == "NATURAL":
            opts["reorder"] = None
        else:
            what = (f"SuperLU's column ordering {name}" if name in _SPILU_ORDERS
                    else f"not one of spilu's (NATURAL, {', '.join(_SPILU_ORDERS)})")
            raise ValueError(f"precond=('ilut', {{...}}): permc_spec={order!r} is {what}; "
                             f"skiff's ILUT factors P A P^T in reverse Cuthill-McKee order "
                             f"(reorder='rcm', the default: drop permc_spec) or in A's own "
                             f"(permc_spec='NATURAL', or reorder=None)")
    if "drop_rule" in opts:
        rule = opts.pop("drop_rule")
        parts = {p.strip().lower() for p in str(rule).split(",") if p.strip()}
        if rule is not None and parts != {"basic", "prows"}:
            raise ValueError(f"precond=('ilut', {{...}}): drop_rule={rule!r} is not skiff's "
                             f"rule, which is SuperLU's 'basic,prows' (an entry under "
                             f"drop_tol times its row's 2-norm dropped, and each row of L and "
                             f"U keeps its largest fill_factor nnz(a_i) / 2): set drop_tol "
                             f"and fill_factor, and drop drop_rule (or give 'basic,prows')")
    return opts


def _ilut_options(precond):
    """``(precond, ILUT's options)``: ``('ilut', {'drop_tol': t, 'fill_factor': f})`` (a
    pyamg-style pair) is ``'ilut'`` with those; a plain name gets spilu's defaults."""
    if isinstance(precond, tuple) and len(precond) == 2 and isinstance(precond[0], str):
        name, opts = precond
        if name.lower() != "ilut":
            raise ValueError(f"precond=({name!r}, {{...}}): options are taken by 'ilut' only "
                             f"(precond=('ilut', {{'drop_tol': 1e-3, 'fill_factor': 5}}))")
        if not isinstance(opts, dict):
            raise TypeError(f"precond=('ilut', ...) takes a dict of {', '.join(_ILUT_KEYS)}, "
                            f"got {opts!r}")
        opts = _spilu_names(opts)
        unknown = sorted(set(opts) - set(_ILUT_KEYS))
        if unknown:
            raise ValueError(f"precond=('ilut', ...): unknown option(s) "
                             f"{', '.join(map(repr, unknown))}; ILUT takes "
                             f"{', '.join(_ILUT_KEYS)} (spilu's names)")
        from .ilut import DROP_TOL, FILL_FACTOR, check_options

        opts = {"drop_tol": DROP_TOL, "fill_factor": FILL_FACTOR, **opts}
        check_options(opts["drop_tol"], opts["fill_factor"])
        if opts.get("reorder", "rcm") not in (None, "none", "rcm"):
            raise ValueError(f"precond=('ilut', ...): reorder takes 'rcm' (reverse "
                             f"Cuthill-McKee before the factorisation, the default) or None "
                             f"(A's own order), got {opts['reorder']!r}")
        return "ilut", opts
    if isinstance(precond, str) and precond.lower() == "ilut":
        return "ilut", {}
    return precond, {}


class ILUTPrecond:
    """``precond='ilut'`` (round 44 h13): the threshold ILU with fill of :mod:`.ilut`
    (Saad's ILUT; SciPy's ``spilu`` names and defaults: ``drop_tol`` 1e-4, ``fill_factor``
    10), of ``P A P^T`` in reverse Cuthill-McKee order unless ``reorder=None`` (round 44
    h17). Not symmetric: 'auto' runs GMRES with it, an explicit 'cg' the flexible form."""

    symmetric = False

    def __init__(self, A, xp, reorder="rcm", **options):
        import scipy.sparse as sp

        from .ilut import ILUT

        A = sp.csr_matrix(to_numpy(A) if not sp.issparse(A) else A)
        self.perm = None
        # ILUT of P A P^T in RCM order, the default (round 44 h17): spilu orders by COLAMD, so
        # its iterations do not hang on the numbering; A's own order took 7 / 13 GMRES
        # iterations on the 60^2 upwind / Poisson matrices numbered at random (RCM 3 / 6)
        if reorder == "rcm":   # 300^2 anisotropic grid: 27 -> 17 iterations
            from scipy.sparse.csgraph import reverse_cuthill_mckee

            self.perm = np.asarray(reverse_cuthill_mckee(A, symmetric_mode=False))
            A = A[self.perm][:, self.perm]
        self.ilu = ILUT(A, what="precond='ilut'", **options)
        self.xp, self.bytes = xp, 0

    def __call__(self, r, out):
        r = np.asarray(r).ravel()
        if self.perm is None:
            out[...] = self.ilu.solve(r).reshape(out.shape)
        else:          # M r = P^T (L U)^-1 P r
            y = np.empty(r.shape[0], dtype=np.result_type(self.ilu.dtype, r.dtype))
            y[self.perm] = self.ilu.solve(r[self.perm])
            out[...] = y.reshape(out.shape)
        return out

    def describe(self):
        f = self.ilu
        return (f"ILUT (drop_tol {f.drop_tol:g}, fill_factor {f.fill_factor:g}"
                + (", RCM order" if self.perm is not None else "")
                + f": nnz(L+U) {f.fill:.1f}x A's)")


def takes_precond(method: str, precond: str) -> bool:
    """Whether ``method`` runs with ``precond``: the Krylov methods take any; multigrid
    cycles ('mg', 'fmg') only themselves, and 'direct' none ('auto' and 'none' always fit)."""
    if method not in ("mg", "fmg", "direct") or precond in ("auto", "none"):
        return True
    return precond == "mg" and method != "direct"


def resolve_precond(precond: str, method: str, is_grid: bool, matrix_free: bool = False,
                    convective: bool = False) -> str:
    """The preconditioner 'auto' stands for: geometric multigrid on grids, AMG on matrices
    and on grids where convection dominates (``GridProblem.convection_dominated``: the
    geometric hierarchy holds the diffusion only), none on a function or LinearOperator (no
    entries to build one from), and none for MINRES on a matrix (SciPy's default: AMG built
    on an indefinite matrix is not positive definite)."""
    if precond != "auto":
        return precond
    if method in ("mg", "fmg", "direct") or matrix_free:
        return "none"
    if method == "minres" and not is_grid:
        # MINRES's matrices are indefinite, and AMG built on one is not positive definite
        # (MINRES refuses it): none, as SciPy's minres (a grid's multigrid is SPD)
        return "none"
    return "mg" if is_grid and not convective else "amg"


# ------------------------------------------------------------------------------ the solver
class Solver:
    """Set up a solve once and reuse it for many right-hand sides.

    Parameters
    ----------
    system : GridProblem, scipy.sparse / cupyx.scipy.sparse matrix or array (any format), dense
        2D array, scipy ``LinearOperator`` or callable ``x -> A x`` (real; complex is refused)
    method : {'auto', 'cg', 'pipecg', 'bicgstab', 'gmres', 'minres', 'cocg', 'mg', 'fmg',
        'direct'}
        Krylov method, stationary multigrid cycles ('mg'), full multigrid followed by cycles
        ('fmg'), or SciPy's sparse direct solver ('direct', CPU only; a reference). 'minres'
        (SciPy's minres: symmetric, possibly indefinite, with an SPD preconditioner). 'auto'
        (the default) is CG for a symmetric system with a positive diagonal and GMRES for any
        other, but MINRES for a symmetric one left without a preconditioner (a saddle point;
        CG finding it indefinite; a negative eigenvalue seen by a short Lanczos run at setup,
        as on a Helmholtz-like L - k^2 I), and COCG for a complex symmetric one (A = A^T, not
        Hermitian: Helmholtz with an absorbing boundary; GMRES if COCG breaks down); CG and
        MINRES refuse a matrix that is not symmetric (CG would diverge) and name the entry
        that differs from its transpose, COCG one that differs from its plain transpose.
    precond : {'auto', 'none', 'jacobi', 'chebyshev', 'mg', 'amg', 'saddle', 'ilu', 'ilut'} or
        your own M
        'ilu': ILU(0) (IC(0) on a symmetric matrix); 'ilut': the threshold ILU with fill
        (:mod:`.ilut`, SciPy spilu's ``drop_tol=1e-4``, ``fill_factor=10``, factoring
        ``P A P^T`` in reverse Cuthill-McKee order, as spilu orders by COLAMD: the
        iterations do not hang on how the unknowns are numbered; ``('ilut', {'drop_tol': t,
        'fill_factor': f, 'reorder': None})`` sets them, ``reorder=None`` factoring A in
        its own order; not symmetric: auto runs GMRES).
        'auto': geometric multigrid on grids, smoothed-aggregation AMG on matrices, 'saddle'
        on a symmetric saddle-point matrix ``[[K, B^T], [B, 0]]`` (``diag(AMG(K),
        diag(B diag(K)^-1 B^T)^-1)``, with MINRES; :mod:`.saddle`). Your own
        is SciPy's ``M``: a scipy LinearOperator, a callable ``r -> M r`` or an (n, n)
        matrix approximating ``A^-1`` (symmetric positive definite for CG), taking and
        returning flat vectors of n values (a pyamg ``ml.aspreconditioner()`` fits);
        ``M=`` (SciPy's keyword) is the same.
    cycle, smoother, pre, post : multigrid settings ('V'|'W'|'F', 'rbgs'|'chebyshev').
        ``smoother='schwarz'`` with ``precond='amg'`` (a symmetric matrix): AMG smooths with
        block-Jacobi on its aggregates (:mod:`.amg_schwarz`) instead of point Jacobi;
        ``'schwarz-overlap'`` on the aggregates grown by their neighbours: P2 elements
        straddling coefficient jumps of 1e6, 521 CG iterations -> 133, -> 36.
        ``'gauss-seidel'``: nodal-block symmetric Gauss-Seidel (pyamg's smoother), which AMG
        takes by itself for a system (rigid-body modes in ``near_nullspace``, a BSR matrix).
    amg : {'auto', 'sa', 'classical'}
        Which algebraic multigrid ``precond='amg'`` builds: 'sa' smoothed aggregation
        (:class:`.amg.SmoothedAggregation`, pyamg's ``smoothed_aggregation_solver``),
        'classical' Ruge-Stueben (:class:`.amg_rs.RugeStuben`, pyamg's
        ``ruge_stuben_solver``: C/F splitting, classical interpolation, symmetric
        Gauss-Seidel; real matrices, no ``near_nullspace``), for M-matrices and scalar
        diffusion with jumping coefficients. 'auto': classical for a real symmetric
        diffusion M-matrix (diagonally dominant rows, no positive off-diagonal entry) whose
        diagonal spreads over 100x (a heterogeneous coefficient) or whose rows couple
        unequally (median row's off-diagonal magnitudes over 10x apart: anisotropy,
        stretched cells; ``amg_rs.suits_classical``), smoothed aggregation for the rest.
    amg_options : dict, optional
        With ``amg='classical'``: :class:`.amg_rs.RugeStuben`'s options, as a pyamg user
        passes them to ``ruge_stuben_solver``: ``second_pass`` (pyamg's ``CF=('RS',
        {'second_pass': True})``), ``interpolation`` ('classical' or 'direct'), ``theta``
        (the strength threshold, 0.25; or pyamg's ``strength=('classical', {'theta':
        t})``), ``order`` ('lowest' or 'pyamg': pyamg's splitting), ``max_coarse``,
        ``sweeps`` (symmetric Gauss-Seidel sweeps before and after: pyamg's
        ``presmoother=('gauss_seidel', {'iterations': k})``), ``cf`` ('RS' or 'PMIS',
        pyamg's ``CF=``), ``aggressive`` (levels coarsened twice, hypre's aggressive
        coarsening). With ``amg='sa'``:
        ``strength`` ('symmetric', 'evolution', or pyamg's ``('symmetric', {'theta':
        t})``) and ``max_coarse``; with ``amg='auto'``: ``max_coarse``.
    near_nullspace : array (n, k), optional
        For ``precond='amg'``: vectors the coarse spaces must represent (pyamg's ``B``), e.g.
        the rigid-body modes of elasticity; default the constant vector.
    interpolation : {'auto', 'linear', 'constant'}
        Interpolation of the multigrid preconditioner (restriction is its scaled transpose,
        so the preconditioner is symmetric): 'auto' is linear for uniform coefficients and
        piecewise constant for variable ones (robust across jumps and bodies).
    restart : int
        GMRES restart length.
    device : 'auto', 'cpu', 'cuda' or 'cuda:N'
    compatibility : None or 'project'
        For singular pure-Neumann problems: 'project' removes the mean of ``b`` (and of ``x``);
        without it an incompatible right-hand side raises ``ValueError``.
    n : int
        Size of the system when ``system`` is a callable.
    """

    def __init__(self, system, *, method="auto", precond="auto", cycle="V", smoother="rbgs",
                 pre=2, post=2, restart=30, device=DEFAULT_DEVICE, compatibility=None, n=None,
                 interpolation="auto", near_nullspace=None, amg="auto", amg_options=None,
                 M=None, **unknown):
        if unknown:   # a solve's keywords, MPI ranks, pyamg's: one line naming where they go
            raise TypeError(_solver_keywords_refusal(system, unknown))
        if M is not None:   # SciPy's name for a preconditioner of your own, as solve()'s
            if precond not in (None, "auto"):
                raise TypeError("Solver() got both M= (SciPy's name) and precond=: give one")
            precond = M
        self._options = dict(method=method, precond=precond, cycle=cycle, smoother=smoother,
                             pre=pre, post=post, restart=restart, device=device,
                             compatibility=compatibility, n=n, interpolation=interpolation,
                             near_nullspace=near_nullspace, amg=amg,
                             amg_options=amg_options)
        self._amg_kw = _amg_options(amg_options, amg)   # the AMG's keywords
        _choice(amg, AMG_KINDS, "amg")
        if isinstance(method, str) and method.lower() in SCIPY_METHODS:
            raise ValueError(f"unknown method {method!r}: it is scipy.sparse.linalg's, which "
                             f"skiff does not have; use {SCIPY_METHODS[method.lower()]} "
                             f"(methods: {', '.join(METHODS)})")
        self.method = _choice(method, METHODS, "method")
        M = None
        if precond is None:   # SciPy's M=None: no preconditioner
            precond = "none"
        precond, self._ilut_options = _ilut_options(precond)
        if not isinstance(precond, str):  # SciPy's M: an operator
            if hasattr(precond, "aspreconditioner") and not hasattr(precond, "matvec"):
                precond = precond.aspreconditioner()   # a pyamg solver: its V-cycle as M
            M, precond = precond, "auto"
        _check_options(precond, cycle, smoother, compatibility)
        if str(precond).lower() in ("ilu",) + ILU_NAMES:   # ILU(0)'s other names (PETSc's)
            precond = "ilu"
        self.device = resolve_device(device)
        self.xp = xp_for(self.device)
        system = unwrapped(_nested_rows(system))   # aslinearoperator(M): M's entries
        self.is_grid = isinstance(system, GridProblem)
        system, self._isolated = _fill_isolated(system, self.is_grid)
        self._lifted = None
        if not self.is_grid and self.method in ("auto", "cg", "pipecg", "minres"):
            # identity rows for Dirichlet values (skfem.enforce's) with their columns kept:
            # not symmetric, so GMRES; the columns moved to b give a symmetric matrix and CG
            # (3-D P1 elasticity 24 843 unknowns: GMRES+AMG 40 iterations -> CG+AMG 23)
            lifted = unit_rows_lifted(system)
            if lifted is not None:
                system, self._lifted = lifted[0], lifted[1:] + (
                    np.asarray(lifted[0].diagonal())[lifted[1]],)
        self.switched = None  # why 'auto' left CG for GMRES during a solve (see _run)
        self._legacy = False  # GMRES's maxiter counts inner iterations (solve's callback_type)
        self._graph_budget = 0  # Jacobi-CG iterations before AMG (_graph_jacobi)
        self._switch_why = "cg found the matrix indefinite"
        if self.method == "auto" and self.is_grid:  # a matrix is looked at once it is placed
            self.method = "cg" if system.symmetric else "gmres"
        # 'auto' stands for CG or GMRES, which take the same preconditioners
        self.precond_name = resolve_precond(precond, "cg" if self.method == "auto" else
                                            self.method, self.is_grid,
                                            not self.is_grid and is_matrix_free(system),
                                            self.is_grid and system.convection_dominated)
        self.user_M = M
        if M is not None:
            self.precond_name = "user"
        if self.precond_name in ("ilu", "ilut"):
            _check_ilu(system, self.is_grid, self.device, self.precond_name)
        self.compatibility = compatibility
        self.near_nullspace = _near_nullspace(near_nullspace, system, self.is_grid, n)
        if restart is None:   # SciPy's gmres(restart=None): 20
            restart = SCIPY_RESTART
        if isinstance(restart, bool) or not isinstance(restart, (int, np.integer)) or restart < 1:
            raise ValueError(f"restart (GMRES's restart length) must be a positive integer (or "
                             f"None: SciPy's 20), got restart={restart!r}; typical: 30")
        self.restart = int(restart)
        self.system = system
        # the dtype x is returned in follows A's and b's (SciPy's): float32 stays float32
        self.dtype = getattr(system, "dtype", None) if not self.is_grid else np.float64
        self.auto_note = None    # why 'auto' chose differently than usual (describe())
        self._check_memory()
        # a small solve (a grid's or a matrix's) does not wait for numba to load
        # (fused.deferred): the numpy references run until the background load is done
        self._small = _deferrable(system, self.is_grid, n, self.xp)
        t0 = time.perf_counter()
        with fused.deferred(self._small):
            self.op = self._as_operator(n)
            self.complex = getattr(self.op, "complex", False)
            if self.complex:
                self._check_complex(precond)
            # 'auto' on a matrix: CG when it looks SPD, else GMRES; and GMRES after all when
            # CG finds it indefinite (a symmetric shifted operator: Helmholtz) (:meth:`_run`)
            self.auto = self.method == "auto"
            if self.auto:
                self.method = "cg" if self._looks_spd() else "gmres"
            if precond == "auto" and self.precond_name == "amg" and not self.is_grid:
                zero = _zero_diagonal(self.op)
                if self.method in ("gmres", "minres", "bicgstab") and (
                        zero is not None or self.auto) and self._saddle() is not None:
                    # [[K, B^T], [B, 0 or -C]] (scipy.sparse.bmat's): diag(AMG(K), diag(S)^-1)
                    # and MINRES. Stokes P2/P1 36 483 unknowns: 97 iterations, 4000 before;
                    # a stabilised one (C != 0): GMRES+AMG stagnated at |r|/|b| = 1
                    self.precond_name = "saddle"
                    if self.auto:
                        self.method = "minres"
                    self.auto_note = ("auto: a symmetric saddle-point matrix ("
                                      + (f"{zero}, " if zero is not None else "") + "a block "
                                      "[[K, B^T], [B, -C]], C zero or small)")
                elif zero is not None:  # AMG, Jacobi, Chebyshev divide by it
                    self.precond_name = "none"
                    self.auto_note = (f"auto: no preconditioner, as {zero} (a saddle-point "
                                      f"matrix?) and AMG divides by the diagonal")
            if (self.auto and precond == "auto" and self.precond_name == "amg"
                    and self.method == "cg" and not self.is_grid and not self.op.callable
                    and not self.complex and not self.device.is_gpu):
                self._indefinite_at_setup()
            if (precond == "auto" and self.precond_name == "amg" and self.method == "cg"
                    and not self.is_grid and not self.op.callable and not self.complex
                    and self.near_nullspace is None and _blocksize(system) is None):
                self._graph_jacobi()
            if self.auto and self.method == "gmres" and self.precond_name == "none" and (
                    self._asymmetry() is None):
                # symmetric (Hermitian), not positive definite, no preconditioner: MINRES,
                # GMRES's minimum residual with CG's short recurrence (a 64^2 saddle point:
                # 439 iterations in 0.05 s against GMRES(30)'s 1130 in 0.49 s)
                self.method = "minres"
            if (self.auto and self.complex and self.method == "gmres"
                    and self.precond_name in ("amg", "jacobi", "none", "ilu")
                    and self._transpose_asymmetry() is None):
                # round 45 (h14): ILU(0) of a complex symmetric A is L D L^T, complex
                # symmetric as well (damped Helmholtz 20^2: COCG 50 iterations, GMRES(30) 80)
                # complex symmetric (A = A^T: Helmholtz with an absorbing boundary): COCG,
                # CG's short recurrence with u^T v, and AMG's V-cycle is complex symmetric
                # too. 16 641 unknowns: 66 iterations 0.15 s, GMRES(30)+AMG 75 in 0.84 s
                self.method = "cocg"
                self.auto_note = "auto: the matrix is complex symmetric (A = A^T)"
                if (precond == "auto" and self.precond_name == "amg" and not self.op.callable
                        and not self.device.is_gpu):
                    self._complex_shift_at_setup()
            self._check_method()
            if amg != "auto" and self.precond_name != "amg":
                raise ValueError(f"amg={amg!r} chooses the algebraic multigrid of "
                                 f"precond='amg', and the preconditioner is "
                                 f"{self.precond_name!r}: use precond='amg'")
            if smoother in AMG_SMOOTHERS and self.precond_name not in ("amg", "mg"):
                raise ValueError(f"smoother={smoother!r} is AMG's (a block smoother of "
                                 f"its levels) and the preconditioner is "
                                 f"{self.precond_name!r}: use precond='amg'")
            self.mg = self._build_multigrid(cycle, smoother, pre, post, interpolation)
            self.M = self._build_preconditioner()
            self._flexible = False
            if self.precond_name == "ilut" and self.method == "cg":
                # ILUT's dropping is by rows: M is not symmetric, and CG's short recurrence
                # needs a symmetric one (as with a user's spilu below)
                if self.auto:
                    self.method = "gmres"
                    self.auto_note = ("auto: ILUT is not symmetric (its dropping is by "
                                      "rows), and CG needs a symmetric M")
                else:
                    self._flexible = True
                    self.auto_note = ("flexible CG (Polak-Ribiere), as ILUT is not "
                                      "symmetric; GMRES or BiCGStab suit it better, or "
                                      "precond='ilu' (IC(0)) for CG")
            if self.precond_name == "user" and self.method == "cg" and (
                    self._user_m_asymmetry() is not None):
                # CG's short recurrence needs a symmetric M: with spilu's (SciPy's cg too)
                # a 80^2 Laplacian ran to maxiter (20 000 iterations, 45 s, |r|/|b| = 0.16);
                # 'auto' takes GMRES (76 iterations, 0.11 s), an explicit 'cg' the flexible
                # (Polak-Ribiere) form
                if self.auto:
                    self.method = "gmres"
                    self.auto_note = (f"auto: your M is not symmetric "
                                      f"({self._user_m_asymmetry()}), and CG needs a "
                                      f"symmetric one")
                else:
                    self._flexible = True
                    self.auto_note = (f"flexible CG (Polak-Ribiere), as your M is not "
                                      f"symmetric ({self._user_m_asymmetry()}); GMRES or "
                                      f"BiCGStab suit such an M better")
            if (self.auto and self.method == "gmres" and self.precond_name == "user"
                    and self._asymmetry() is None and self._user_m_looks_spd()):
                # a symmetric (indefinite) matrix with your M (Stokes' block preconditioner):
                # MINRES, CG's short recurrence, where M passes the probe; GMRES again if
                # MINRES finds M indefinite. Stokes P2/P1 36 483 unknowns: GMRES 107
                # iterations 0.56 s, MINRES 93 in 0.26 s
                self.method = "minres"
                self.auto_note = ("auto: the matrix is symmetric, not positive definite, and "
                                  "your M looks symmetric positive definite")
        self._sync()
        self.setup_time = time.perf_counter() - t0

    def update(self, system, *, reuse: bool = True) -> Solver:
        """Set up again for new values of the system (the same size; typically the same
        sparsity pattern with new entries: a time step, a Newton iteration), with the options
        this Solver was made with: the operator, the symmetry checks and the preconditioner
        (AMG's hierarchy) are rebuilt. A Solver keeps the matrix it was set up with: a
        float64 CSR matrix edited in place changes its products but not its preconditioner,
        and any other form (dense, other formats, other dtypes) was copied, so edits to it
        are not seen at all; call ``update`` after changing values. Returns the Solver.

        ``reuse`` (default True): when the new matrix has the old one's sparsity pattern,
        AMG keeps its aggregates (no strength of connection, no aggregation; prolongators,
        coarse matrices and smoother bounds are built on the new values), as a Newton or
        time-stepping loop wants; ``reuse=False`` sets up from scratch. Bratu's problem,
        250 000 unknowns, 6 Newton steps: setup 4.6 s -> 2.3 s, CG+AMG iterations the same
        (pyamg rebuilding: 7.6 s)."""
        old = getattr(self, "op", None)
        new = _nested_rows(system)
        size = (int(np.prod(new.shape)) if isinstance(new, GridProblem) else
                int(new.shape[0]) if getattr(new, "shape", None) is not None and
                len(new.shape) == 2 else None)
        if old is not None and size is not None and size != old.n:
            raise ValueError(f"update: the new system has {size} unknowns and this Solver "
                             f"was set up for {old.n}; make a new Solver for another size")
        for cached in ("_asym", "_const_null", "_gnull", "_tasym", "_blocks", "_comps",
                       "_m_asym", "_lu"):
            self.__dict__.pop(cached, None)
        M = getattr(self, "M", None)
        self._reuse_amg = M.amg if reuse and isinstance(M, AMGPrecond) else None
        try:
            self.__init__(system, **self._options)
        finally:
            self._reuse_amg = None
        return self

    # -------------------------------------------------------------------------- setup steps
    def _as_operator(self, n):
        """The system as an operator on the device (a grid's stencil or a user's matrix)."""
        if self.is_grid:
            return grid_operator(self.system, self.method, self.xp)
        return matrix_operator(self.system, n, self.xp)

    def _check_complex(self, precond):
        """A complex matrix: what runs on it (CG for a Hermitian one, BiCGStab, GMRES, the
        direct solve; no preconditioner, Jacobi, AMG (complex smoothed aggregation, as
        pyamg's) or the user's M; on the CPU)."""
        if self.device.is_gpu:
            raise ValueError("the matrix is complex: complex systems are solved on the CPU "
                             "(device='cpu')")
        if self.method not in (*COMPLEX_METHODS, "auto"):
            raise ValueError(f"method {self.method!r} runs on real systems only and the matrix "
                             f"is complex ({np.dtype(self.dtype)}); use method='gmres', "
                             f"'bicgstab' or 'cg' (Hermitian positive definite)")
        if self.precond_name not in COMPLEX_PRECONDS:
            if precond == "auto":   # not reached: 'auto' on a matrix is AMG, which takes it
                self.precond_name = "amg"
            else:
                raise ValueError(f"precond {self.precond_name!r} builds on real matrices only "
                                 f"and the matrix is complex ({np.dtype(self.dtype)}); use "
                                 f"precond='amg', 'jacobi', 'none', 'ilu', 'ilut' or your own M "
                                 f"(precond=M)")

    def _check_memory(self):
        """Refuse a grid whose solve cannot fit in the device's memory before anything of the
        solve is allocated (the same estimate ``%solve`` checks before a job exists)."""
        if self.is_grid:
            p = self.system
            variable = not isinstance(p.stencil, ConstStencil)
            check_fits(p.shape, self.device.free_memory, self.device.name, method=self.method,
                       precond=self.precond_name, restart=self.restart, variable=variable)

    def _check_rows(self) -> None:
        """A row with no nonzero entry makes A singular whatever b is: say which (GMRES ran
        to maxiter with |r|/|b| = 1, or broke down, on a zero matrix)."""
        xp, A = self.xp, self.op.A
        sums = xp.asarray(abs(A) @ xp.ones(self.op.n)).ravel()
        empty = xp.flatnonzero(sums == 0)
        if int(empty.size):
            first = int(empty[0])
            more = f" (and {int(empty.size) - 1} more)" if empty.size > 1 else ""
            what = ("the matrix is all zeros" if int(empty.size) == self.op.n else
                    f"row {first} of the matrix is all zeros{more}")
            raise SolveError(f"{what}: A is singular and no x solves A x = b uniquely; "
                             f"a row left empty when the matrix was assembled (a boundary "
                             f"row?) is the usual cause")

    def _asymmetry(self) -> str | None:
        """:func:`.operators.asymmetry` of the user's operator, probed once per setup."""
        if not hasattr(self, "_asym"):
            self._asym = asymmetry(self.op)
        return self._asym

    def _singular(self) -> bool:
        """Whether the system is singular with a known null space from both sides: the
        constants (a grid with Neumann on every side, or a symmetric matrix whose rows sum to
        zero: one product with the ones, once per setup; b must then sum to zero), or the
        columns of ``near_nullspace`` that a symmetric matrix annihilates
        (:meth:`_given_null`: b must be orthogonal to them)."""
        if self.is_grid:
            return bool(self.system.singular)
        return self._singular_constants() or self._given_null() is not None

    def _near_null_remedy(self, rounding: bool = False) -> str:
        """What a singular A whose b was made compatible (orthogonal to the null space known)
        yet unsolved needs (round 48 h6: MINRES without a preconditioner on a 1e-4 / 1e4
        checkerboard's Neumann matrix, b of mean 0, was told "b is not in its range").
        ``rounding``: CG's p.Ap of rounding's size, where the tolerance is the likelier
        cause (CG + AMG at rtol 1e-10 there, cond ~1e10)."""
        known = ("the given near_nullspace's null vectors" if self._given_null() is not None
                 else "each piece's constant" if self._components() is not None
                 else "the constant")
        how = (f"without a preconditioner {self.method}" if self.M is None else
               f"{self.method} with precond={self.precond_name!r}")
        return near_null_words(known, how, self.precond_name in ("amg", "mg"), rounding)

    def _singular_constants(self) -> bool:
        """Whether a symmetric matrix's rows sum to zero (the constants are its null space)."""
        if not hasattr(self, "_const_null"):
            self._const_null = False
            if not self.op.callable:  # rows summing to zero first (one product), then symmetry
                xp = self.xp
                kind = complex if self.complex else float
                ones, out = xp.ones(self.op.shape, kind), xp.empty(self.op.shape, kind)
                self.op.matvec(ones, out)
                if self._isolated.size:   # their unit diagonal stands for an empty row
                    out[xp.asarray(self._isolated)] = 0
                scale = float(xp.abs(xp.asarray(self.op.diagonal())).max())
                self._const_null = bool(scale > 0 and
                                        float(xp.abs(out).max()) <= 1e-12 * scale and
                                        self._asymmetry() is None)
            elif not self.is_grid and self._asymmetry() is None:
                # round 47 (h4): a function or LinearOperator: A 1 against A v (v at random,
                # the operator's scale; no diagonal to read). A pure Neumann operator with an
                # incompatible b ran MINRES to 'no solution' and compatibility='project' was
                # not applied (|x| 1.2e3, |r|/|b| 1.4e-2; now refused in one line, or projected)
                xp = self.xp
                kind = complex if self.complex else float
                n = int(np.prod(self.op.shape))
                ones, out = xp.ones(self.op.shape, kind), xp.empty(self.op.shape, kind)
                self.op.matvec(ones, out)
                v = xp.asarray(np.random.default_rng(1).standard_normal(n).reshape(
                    self.op.shape).astype(kind))
                w = xp.empty(self.op.shape, kind)
                self.op.matvec(v, w)
                scale = float(xp.linalg.norm(w.ravel())) / float(xp.linalg.norm(v.ravel()))
                self._const_null = bool(
                    scale > 0 and np.isfinite(scale)
                    and float(xp.linalg.norm(out.ravel())) / np.sqrt(n) <= 1e-10 * scale)
        return self._const_null

    def _components(self):
        """(labels, count) of the connected components of a symmetric matrix whose rows sum
        to zero (a graph Laplacian in several pieces: one null vector per piece), isolated
        unknowns labelled -1; None for one piece and no isolated unknown
        (:mod:`.components`)."""
        if not hasattr(self, "_comps"):
            self._comps = None
            if (not self.is_grid and not self.op.callable and self.near_nullspace is None
                    and self._singular_constants()):
                self._comps = component_labels(host_csr(self.op.A), self._isolated)
        return self._comps

    def _given_null(self):
        """The null space that ``near_nullspace`` shows (:mod:`.null_space`): an orthonormal
        basis (host, (n, k)) of its columns' span that the symmetric matrix annihilates (the
        ones added when its rows sum to zero), or None. Pure-Neumann 3-D elasticity with its
        rigid-body modes: a b with a net torque was taken as compatible (its mean is zero),
        and GMRES stagnated at |r|/|b| = 0.25; now it is refused, or projected."""
        if not hasattr(self, "_gnull"):
            self._gnull = None
            if (self.near_nullspace is not None and not self.is_grid and not self.op.callable
                    and not self.complex and self._asymmetry() is None):
                A = self.op.A
                norm_a = float(to_numpy(abs(A).sum(axis=1)).max())
                B = self.near_nullspace
                if self._singular_constants():
                    B = np.column_stack([B, np.ones(B.shape[0])])
                xp = self.xp
                self._gnull = annihilated(lambda v: to_numpy(A @ xp.asarray(v)).ravel(), B,
                                          norm_a)
        return self._gnull

    def _m_probe(self, seed: int):
        """``(u, v, M u, M v, size)`` for two random vectors (complex for a complex system),
        ``size`` the scale of ``u.Mv`` and ``v.Mu`` to judge their difference by; None when M
        fails (the solve will say why) or the scale is not a positive finite number. The two
        applications of M are counted in no solve."""
        xp, n = self.xp, self.op.n
        rng = np.random.default_rng(seed)
        u, v = rng.standard_normal(n), rng.standard_normal(n)
        if self.complex:
            u, v = u + 1j * rng.standard_normal(n), v + 1j * rng.standard_normal(n)
        u, v = xp.asarray(u).reshape(self.op.shape), xp.asarray(v).reshape(self.op.shape)
        mu, mv = xp.empty_like(u), xp.empty_like(v)
        try:
            self.M(u, mu)
            self.M(v, mv)
        except Exception:   # noqa: BLE001 -- the solve will say what is wrong with M
            return None
        finally:
            self.M.bytes = 0
        size = float(xp.linalg.norm(u) * xp.linalg.norm(mv) + xp.linalg.norm(v) *
                     xp.linalg.norm(mu))
        return (u, v, mu, mv, size) if size > 0 and np.isfinite(size) else None

    def _dot(self, a, b) -> complex:
        return complex(self.xp.vdot(a.ravel(), b.ravel()))

    def _user_m_asymmetry(self) -> str | None:
        """How the user's M is seen not to be symmetric (``u.Mv`` against ``conj(v.Mu)``
        for two random vectors), or None when it looks symmetric (or M fails: the solve
        will say why)."""
        if not hasattr(self, "_m_asym"):
            self._m_asym = None
            probe = self._m_probe(12)
            if probe is None:
                return None
            u, v, mu, mv, size = probe
            uv, vu = self._dot(u, mv), self._dot(v, mu).conjugate()
            if abs(uv - vu) > 1e-8 * size:
                show = (lambda z: f"{z.real:.4g}") if not self.complex else (
                    lambda z: f"{z:.4g}")
                self._m_asym = (f"u.Mv = {show(uv)} and v.Mu = {show(vu)} for two random "
                                f"vectors; an incomplete LU (spilu) or a Gauss-Seidel sweep "
                                f"one way is not symmetric")
        return self._m_asym

    def _user_m_looks_spd(self) -> bool:
        """Whether the user's M passes a probe of symmetry and positivity with two random
        vectors (``u.Mv = conj(v.Mu)`` to 1e-8, ``u.Mu > 0``). A wrong answer costs little:
        MINRES then stops on ``r.Mr <= 0`` or a negative ``beta^2`` and 'auto' goes on with
        GMRES."""
        probe = self._m_probe(11)
        if probe is None:
            return False
        u, v, mu, mv, size = probe
        dot = self._dot
        return (dot(u, mu).real > 0 and dot(v, mv).real > 0 and
                abs(dot(u, mv) - dot(v, mu).conjugate()) <= 1e-8 * size)

    def _saddle(self):
        """``(U, Z)`` when the user's real matrix is a symmetric saddle point
        (:func:`.saddle.saddle_blocks`), else None; looked at once per setup."""
        if not hasattr(self, "_blocks"):
            self._blocks = None
            if (not self.is_grid and not self.op.callable and not self.complex
                    and not self.device.is_gpu and self._asymmetry() is None):
                self._blocks = saddle_blocks(host_csr(self.system))
        return self._blocks

    def _positive_saddle(self) -> bool:
        """After CG found the matrix indefinite: whether 'auto' takes it for a saddle point
        with a small positive C block (:func:`.saddle.saddle_blocks`), and if so the block
        preconditioner in place of AMG (True)."""
        if (self.is_grid or self.op.callable or self.complex or self.device.is_gpu
                or self._options["precond"] != "auto" or self.precond_name != "amg"):
            return False
        blocks = saddle_blocks(host_csr(self.system), positive=True)
        if blocks is None:
            return False
        self._blocks, self.precond_name = blocks, "saddle"
        self.M = self._make_precond("saddle")
        return True

    def _transpose_asymmetry(self) -> str | None:
        """:func:`.cocg.transpose_asymmetry` of the user's operator (``A`` against ``A^T``,
        no conjugate), probed once per setup."""
        if not hasattr(self, "_tasym"):
            self._tasym = transpose_asymmetry(self.op)
        return self._tasym

    def _graph_jacobi(self) -> None:
        """'auto' takes Jacobi on a graph with no geometry or a well-conditioned matrix (a
        mass matrix: round 36; :mod:`.graph_auto`), where AMG's
        setup costs seconds (50 000-node Barabasi-Albert graph: CG+AMG 6.4 s, Jacobi-CG
        0.1-0.3 s as SciPy's); :meth:`_run` builds AMG after all where Jacobi-CG has not
        converged in ``JACOBI_BUDGET`` iterations."""
        from .graph_auto import JACOBI_BUDGET, small_world, well_conditioned

        A = host_csr(self.op.A)
        why = small_world(A)
        because = "AMG coarsens such a graph badly and Jacobi-CG converges fast"
        if why is None:   # round 36: a mass matrix; M + dt K at a small step
            why = well_conditioned(A, lanczos_ritz)
            because = "AMG's setup would cost more than the solve"
        if why is None:
            return
        self.precond_name = "jacobi"
        self._graph_budget = JACOBI_BUDGET
        self.auto_note = (f"auto: Jacobi, not AMG, as {why} ({because}; AMG if Jacobi-CG "
                          f"has not converged in {JACOBI_BUDGET} iterations)")

    def _indefinite_at_setup(self) -> None:
        """'auto' on a real symmetric matrix with a positive diagonal (CG's): 30 Lanczos steps
        (:func:`lanczos_ritz`; only where most rows sum to a negative number, as a shifted
        operator's do) look for a negative eigenvalue before AMG is built.
        Found (Helmholtz-like ``L - k^2 I``, whose negative part is large enough for Lanczos
        to see): MINRES without a preconditioner, or MINRES with the block preconditioner on
        a saddle point ``[[K, B^T], [B, C]]`` with a small C. CG then found it indefinite
        only after AMG's setup, and GMRES+AMG (AMG built on an indefinite matrix) was slow
        or stalled: 128^2, k = 50: 399 iterations 9.8 s, MINRES 2 159 in 1.3 s; 256^2,
        k = 100: GMRES+AMG stalled at |r|/|b| = 0.12 after 140 s, MINRES 9 140 in 16 s. A
        slightly indefinite matrix (a few small negative eigenvalues Lanczos does not see
        in its steps: 256^2 with k = 30, 40^2 with L - 30 I) keeps CG+AMG and its switch to
        GMRES+AMG, which suits it better (GMRES+AMG 12 iterations, MINRES 167 at 40^2 with
        L - 45 I, where Lanczos sees it; but it did not converge on 192^2, k = 40)."""
        A = host_csr(self.op.A)
        rows = np.asarray(A.sum(axis=1)).ravel()
        if np.mean(rows < -1e-8 * A.diagonal()) <= 0.5:
            # most rows sum to >= 0 (a Laplacian's, elasticity's, with or without a mass
            # term; any diagonally dominant matrix), while a shift -k^2 I or -k^2 M makes
            # nearly all of them negative: Lanczos only then (P2 Poisson 130 561: 0.1-0.2 s,
            # 15 % of AMG's setup)
            return
        ritz = lanczos_ritz(self.op)
        if ritz is None or ritz[0] >= -1e-10 * max(abs(ritz[-1]), 1e-300):
            return   # no negative eigenvalue seen: CG+AMG (CG still checks p.Ap > 0)
        seen = f"Lanczos: lowest eigenvalue <= {ritz[0]:.3g}, largest >= {ritz[-1]:.3g}"
        blocks = saddle_blocks(A, positive=True)
        if blocks is not None:   # [[K, B^T], [B, +C]], C small: the block preconditioner
            self._blocks, self.precond_name, self.method = blocks, "saddle", "minres"
            self.auto_note = (f"auto: MINRES with the block preconditioner, as the matrix is "
                              f"symmetric and indefinite ({seen}): a saddle point "
                              f"[[K, B^T], [B, C]] with a small C")
            return
        self.method, self.precond_name = "minres", "none"
        self.auto_note = (f"auto: MINRES without a preconditioner, as the matrix is symmetric "
                          f"and indefinite ({seen}): AMG built on it is no positive "
                          f"definite preconditioner, and GMRES with it converges slowly or "
                          f"stalls")

    def _complex_shift_at_setup(self) -> None:
        """'auto' on a complex symmetric matrix (COCG's): where its real part is shifted far
        below zero (most rows of Re A sum to a negative number and 30 Lanczos steps on Re A
        see an eigenvalue below ``-COMPLEX_SHIFT_AMG`` times the largest: finite-difference
        Helmholtz at k h >~ 0.45), COCG without a preconditioner. AMG built on such a matrix is no
        approximate inverse: ``L - k^2 I + i d I`` at 150^2, k = 200, d = 500 ran COCG+AMG
        to maxiter (20 000 iterations, 86 s, |r|/|b| = 1.02), COCG alone 3 661 in 1.6 s
        (round 38 h9; the cases in docs/solve.md). A milder shift keeps AMG, several times
        fewer iterations: round 28's absorbing Helmholtz (k h 0.24: 13 against 223), round
        27's P1 one (k h 0.31, ratio 0.011: 66 against 442)."""
        re = host_csr(self.op.A).real.tocsr()
        rows = np.asarray(re.sum(axis=1)).ravel()
        if np.mean(rows < -1e-8 * re.diagonal()) <= 0.5:
            return   # no shift (a diffusion's rows sum to >= 0): AMG suits the real part
        ritz = lanczos_ritz(matrix_operator(re, self.op.n, np))
        if ritz is None or ritz[0] >= -COMPLEX_SHIFT_AMG * abs(ritz[-1]):
            return
        self.precond_name = "none"
        self.auto_note = (f"auto: the matrix is complex symmetric (A = A^T), COCG without a "
                          f"preconditioner, as its real part is far from positive definite "
                          f"(Lanczos: lowest eigenvalue <= {ritz[0]:.3g}, largest >= "
                          f"{ritz[-1]:.3g}): AMG built on it converges slowly or not at all")

    def _looks_spd(self) -> bool:
        """Symmetric, with a positive diagonal where the entries are known: CG's systems."""
        if self._asymmetry() is not None:
            return False
        if self.op.callable:
            return True
        return bool(float(self.xp.asarray(self.op.diagonal()).real.min()) > 0)

    def _check_method(self):
        """Refuse a method or preconditioner the system (or the device) cannot run."""
        if not self.is_grid and not self.op.callable:
            self._check_rows()
        if self.method in ("cg", "pipecg", "minres") and not self.is_grid:
            blame = self._asymmetry()
            if blame is not None:  # CG would run to maxiter and diverge: say so now
                kind = "a Hermitian" if self.complex else "a symmetric"
                raise SolveError(f"{self.method} needs {kind} matrix and this one is not "
                                 f"({blame}); use method='gmres' or 'bicgstab' (or 'auto', "
                                 "which picks)")
        if self.method == "cocg":
            if self.is_grid or self.device.is_gpu:
                raise ValueError("method 'cocg' is for complex symmetric matrices (A = A^T) on "
                                 "the CPU; for a grid problem use method='cg' (or 'auto')")
            if self.precond_name == "ilut":   # round 46 (h6): COCG's short recurrence needs
                # M = M^T, and ILUT's dropping by rows is not (it ran, unflagged, round 45)
                raise ValueError("method='cocg' needs a complex symmetric preconditioner (M = "
                                 "M^T) and precond='ilut' is not (its dropping is by rows): "
                                 "give precond='ilu' (ILU(0), L D L^T on a complex symmetric "
                                 "A), 'amg' or 'jacobi' with cocg, or method='gmres' / "
                                 "'bicgstab' with 'ilut'")
            blame = self._transpose_asymmetry()
            if blame is not None:
                raise SolveError(f"cocg needs a complex symmetric matrix (A = A^T, as "
                                 f"Helmholtz's with an absorbing boundary) and this one is not "
                                 f"({blame}); use method='gmres' or 'bicgstab' (or 'auto', "
                                 f"which picks)")
        if not self.is_grid and self.op.callable:
            if self.method == "direct":
                raise ValueError("method 'direct' needs a matrix, not a function or "
                                 "LinearOperator; use method='cg' (symmetric) or 'gmres'")
            if self.precond_name in ("jacobi", "chebyshev", "amg", "saddle"):
                raise ValueError(f"precond {self.precond_name!r} needs the matrix entries; with "
                                 "a function or LinearOperator use precond='none', or build "
                                 "it on an assembled matrix near yours and pass it as M: "
                                 "precond=skiff.Solver(A_approx, precond="
                                 f"'{self.precond_name}').aspreconditioner()")
        if not takes_precond(self.method, self.precond_name):
            # it was dropped silently while the summary said "mg + amg"
            what = "runs multigrid cycles" if self.method != "direct" else "factorises A"
            raise ValueError(f"method {self.method!r} {what} and takes no preconditioner (got "
                             f"precond {self.precond_name!r}); a preconditioner goes with a "
                             f"Krylov method: method='cg' (or 'gmres') with precond="
                             f"{self.precond_name!r}")
        if self.method in ("mg", "fmg") and not self.is_grid:
            raise ValueError(f"method {self.method!r} needs a grid problem; for a matrix use "
                             "method='cg' (or 'gmres') with precond='amg'")
        if self.method in ("mg", "fmg") and self.is_grid and self.system.velocity is not None:
            # the cycles hold the diffusion only: they converged to the solution without
            # convection (|b - Ax|/|b| = 2.7 on the built-in 32x32) and called it round-off
            raise ValueError(f"method {self.method!r} runs geometric multigrid cycles, which "
                             "hold the diffusion only, and this problem convects; use "
                             "method='bicgstab' or 'gmres' (precond 'mg' or 'amg')")
        if self.method == "direct" and self.device.is_gpu:
            raise ValueError("method 'direct' runs on the CPU only (it is SciPy's spsolve)")

    def _build_multigrid(self, cycle, smoother, pre, post, interpolation):
        """The geometric multigrid hierarchy, when the method or the preconditioner is one."""
        if self.method not in ("mg", "fmg") and self.precond_name != "mg":
            return None
        if not self.is_grid:
            raise ValueError("precond 'mg' needs a grid problem; for a matrix use 'amg'")
        if smoother in AMG_SMOOTHERS:
            raise ValueError(f"smoother={smoother!r} is AMG's (a block smoother of its levels: "
                             "precond='amg'); a grid's multigrid smooths with 'rbgs' or "
                             "'chebyshev'")
        system = self.system
        return GeometricMG(system.stencil, system.signs, cycle=cycle, smoother=smoother,
                           pre=pre, post=post, singular=system.singular,
                           interpolation=interpolation, xp=self.xp)

    def _build_preconditioner(self):
        """The Krylov methods' preconditioner (None for multigrid cycles and 'direct')."""
        if self.method in ("mg", "fmg", "direct"):
            return None
        return self._make_precond(self.precond_name)

    def _make_precond(self, name):
        if name == "none":
            return None
        if name == "user":
            return UserPrecond(self.user_M, self.op.n, self.xp)
        if name == "ilu":
            return ILUPrecond(self.op.A, self.xp)
        if name == "ilut":
            return ILUTPrecond(self.op.A, self.xp, **self._ilut_options)
        try:
            return self._make_diagonal_precond(name)
        except SolveError as exc:
            remedy = (self._saddle_remedy() if name in ("jacobi", "chebyshev", "amg")
                      and "diagonal" in str(exc) else None)
            if remedy is None:
                raise
            # a Stokes matrix with an explicit jacobi/chebyshev/amg was sent to
            # precond='none' + GMRES, while 'saddle' solves it (P2/P1: 70 MINRES iterations)
            raise SolveError(f"{str(exc).split(';')[0]}; {remedy}") from None

    def _saddle_remedy(self) -> str | None:
        """What to use on a symmetric saddle-point matrix (None when this is not one)."""
        if self.is_grid or self.op.callable or self._saddle() is None:
            return None
        return ("this matrix is a symmetric saddle point [[K, B^T], [B, -C]] (Stokes, a "
                "constrained problem): use method='minres' with precond='saddle' (AMG on K, a "
                "diagonal Schur complement; what method='auto' takes), or your own block "
                "M=")

    def _make_diagonal_precond(self, name):
        if name == "jacobi":
            return Jacobi(self.op)
        if name == "chebyshev":
            symmetric = bool(self.system.symmetric) if self.is_grid else (
                self.op.callable or self._asymmetry() is None)
            return Chebyshev(self.op, symmetric=symmetric)
        if name == "mg":
            return MGPrecond(self.mg)
        if name == "saddle":
            blocks = self._saddle()
            if blocks is None:
                raise ValueError("precond 'saddle' is for a real symmetric saddle-point matrix "
                                 "[[K, B^T], [B, 0]] on the CPU (zeros on the diagonal exactly "
                                 "where the block of zeros is, K with a positive diagonal) and "
                                 "this system is not one; use precond='amg' (or 'auto')")
            try:
                return SaddlePrecond(host_csr(self.system), *blocks)
            except ValueError as exc:
                raise SolveError(str(exc)) from None
        A = self.system.matrix() if self.is_grid else (
            host_csr(self.system) if not self.op.callable else None)
        if A is None:
            raise ValueError("precond 'amg' needs a matrix, not a function")
        symmetric = bool(self.system.symmetric) if self.is_grid else self._asymmetry() is None
        kind = self._options["amg"]
        reason = ""
        if (kind == "auto" and not self.is_grid and self.near_nullspace is None
                and _blocksize(self.system) is None and symmetric and A.dtype.kind == "f"
                and self.xp is np and self._options["smoother"] not in AMG_SMOOTHERS):
            # a diffusion M-matrix with a heterogeneous coefficient or an anisotropy:
            # classical AMG (amg_rs.suits_classical; random 1e6 cells in 3-D 14 -> 13 CG
            # iterations at a sixth of the setup, the 1e-6..1e6 checkerboard 35 -> 17,
            # log-normal 51 -> 17; 3-D anisotropy 2.4 -> 0.1 s CPU, round 36)
            reason = suits_classical(A)
            kind = "classical" if reason else kind
        if kind == "classical":
            if self.near_nullspace is not None or self._options["smoother"] in AMG_SMOOTHERS:
                raise ValueError("amg='classical' (Ruge-Stueben) interpolates from the "
                                 "matrix's entries and smooths with Gauss-Seidel: it takes "
                                 "no near_nullspace nor smoother=; use amg='sa' for those")
            if A.dtype.kind == "c":
                raise ValueError("amg='classical' takes real matrices; a complex one needs "
                                 "amg='sa' (smoothed aggregation)")
            try:
                options = dict(self._amg_kw)
                if "sweeps" in options:   # each sweep forward and back: 2 products
                    options["degree"] = 2 * int(options.pop("sweeps"))
                return AMGPrecond(RugeStuben(A, xp=self.xp, symmetric=symmetric,
                                             reason=reason, **options))
            except ValueError as exc:
                raise SolveError(str(exc)) from None
        try:
            amg = SmoothedAggregation(A, B=self.near_nullspace, xp=self.xp, symmetric=symmetric,
                                      blocksize=_blocksize(self.system),
                                      reuse=getattr(self, "_reuse_amg", None),
                                      smoother=self._options["smoother"] if
                                      self._options["smoother"] in AMG_SMOOTHERS else
                                      "auto", **self._amg_kw)
        except ValueError as exc:
            raise SolveError(str(exc)) from None
        return AMGPrecond(amg)

    def _sync(self):
        if self.device.is_gpu:
            self.xp.cuda.Device().synchronize()

    def aspreconditioner(self):
        """This Solver's preconditioner (one application of M, e.g. one AMG V-cycle: not a
        solve) as a SciPy ``LinearOperator`` on flat host vectors, for SciPy's methods that
        take ``M=``: ``scipy.sparse.linalg.lobpcg(A, X, M=Solver(A).aspreconditioner())``
        (blocks of vectors too), ``cg``, ``minres``. A Solver itself is no operator (lobpcg
        failed with "matmul: Input operand 0 does not have enough dimensions")."""
        from scipy.sparse.linalg import LinearOperator

        if self.M is None:
            raise ValueError(f"this Solver has no preconditioner (method {self.method!r}, "
                             f"precond {self.precond_name!r}); make it with precond='amg' "
                             f"(a matrix) or 'mg' (a grid) and a Krylov method")
        n, xp = self.op.n, self.xp
        kind = complex if self.complex else float

        def apply(r):
            r = np.asarray(r).reshape(-1)
            if r.dtype.kind == "c" and not self.complex:   # a real M on a complex r: by parts
                return apply(r.real) + 1j * apply(r.imag)
            src = xp.asarray(r.astype(kind)).reshape(self.op.shape)
            out = xp.empty_like(src)
            self.M(src, out)
            return np.asarray(to_numpy(out)).reshape(-1)

        return LinearOperator((n, n), matvec=apply, dtype=np.dtype(kind))

    def _active_cells(self, field):
        """A grid problem's active cells (its ``mask``, or ``sdf >= 0``) shaped as the field,
        for plots to leave the rest blank; None for matrices and full grids."""
        mask = getattr(self.system, "mask", None) if self.is_grid else None
        if mask is None:
            return None
        mask = np.asarray(mask, dtype=bool)
        return mask.reshape(np.shape(field)) if mask.size == np.size(field) else None

    def describe(self) -> str:
        pre = self.M.describe() if self.M is not None else (
            self.mg.describe() if self.mg is not None else "none")
        why = f" (auto: {self._switch_why})" if self.switched else (
            f" ({self.auto_note})" if self.auto_note else "")
        lengths = getattr(self, "_lengths", None)
        if self.method == "gmres" and lengths and max(lengths) > self.restart:
            grown = (f"restart {self.restart} grown to {max(lengths)}, as its cycles gained "
                     f"less than tenfold")
            why = f"{why[:-1]}; {grown})" if why else f" (auto: {grown})"
        lifted = ("" if getattr(self, "_lifted", None) is None else
                  f"; {self._lifted[0].size} identity rows' columns moved to b, the rest "
                  f"symmetric")
        return f"{self.method}{why} with {pre} on {self.device.name}{lifted}"

    # -------------------------------------------------------------------------- solve
    def _prepare_b(self, b):
        xp = self.xp
        if b is None:
            if not self.is_grid:
                raise ValueError("b is required for a matrix system")
            b = self.system.rhs
        if hasattr(b, "toarray") and not isinstance(b, np.ndarray):  # a sparse column or row
            b = b.toarray()
        host = to_numpy(b) if not isinstance(b, np.ndarray) else b
        host = np.asarray(host)
        if self.is_grid and host.dtype.kind == "c":
            raise ValueError(f"b is complex ({host.dtype}); a grid problem's field is real: "
                             f"solve for b.real and b.imag one after the other (A is real, so "
                             f"x = x_re + 1j x_im), or pass problem.matrix() for a complex b")
        self.b_dtype = host.dtype
        work = np.complex128 if self.complex or host.dtype.kind == "c" else np.float64
        if work is np.complex128 and self.device.is_gpu:
            raise ValueError("b is complex: complex systems are solved on the CPU (device='cpu')")
        host = host.astype(work, copy=False)
        if host.ndim == 2 and host.shape[0] == self.op.n and host.shape[1] > 1:
            raise ValueError(f"b has shape {host.shape}: {host.shape[1]} right-hand sides; "
                             "use skiff.Solver(A).solve_many(B) (one setup, "
                             "one solve per column)")
        if host.size != self.op.n:
            raise ValueError(f"b has {host.size} entries (shape {host.shape}) but the system has "
                             f"{self.op.n} unknowns")
        bad = None if np.isfinite(host.sum()) else ~np.isfinite(host)   # one cheap pass first
        if bad is not None and bad.any():
            where = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad.ravel())),
                                                            host.shape))
            raise ValueError(f"b contains NaN or inf (first at index {where}: "
                             f"{float(host[where])!r})")
        host = host.reshape(self.op.shape)
        if self._isolated.size:
            host = self._isolated_compatible(host)
        null = None if self.is_grid else self._given_null()
        if null is not None:
            host = self._null_compatible(host, null)
        elif self._singular() and self._components() is not None:
            host = self._components_compatible(host.copy())
        elif self._singular():
            host = host.copy()
            active = self.system.mask if self.is_grid else None
            mean = host[active].mean() if active is not None else host.mean()
            scale = max(np.abs(host).max(), 1e-300)
            if self.compatibility == "project":
                if active is not None:
                    host[active] -= mean
                else:
                    host -= mean
            elif abs(mean) > 1e-10 * scale:
                kinds = set(self.system.info.get("bc", {}).values()) if self.is_grid else set()
                sides = ("periodic" if kinds == {"periodic"} else "Neumann and periodic"
                         if "periodic" in kinds else "Neumann")
                why = (f"{sides} on every side: u is defined up to a constant"
                       if self.is_grid
                       else "its rows and columns sum to zero, as a pure Neumann or a graph "
                       "Laplacian's do: x is defined up to a constant")
                raise ValueError(
                    f"the problem is singular ({why}) and b is not compatible (mean of b = "
                    f"{mean:.3e}, it must be 0: no x solves it); pass compatibility='project' "
                    f"to remove the mean (%solve --compatibility project; in a %%solve cell "
                    f"'solver: ... compatibility=project')")
        return xp.asarray(host)

    def _columns(self, b):
        """``b`` as a host ``(n, k)`` array when it holds k > 1 right-hand sides of a matrix
        system (dense, sparse or on the device), else None (one vector, or a grid's field)."""
        shape = getattr(b, "shape", None)
        if (self.is_grid or shape is None or len(shape) != 2 or shape[1] < 2
                or shape[0] != self.op.n):
            return None
        if hasattr(b, "toarray") and not isinstance(b, np.ndarray):  # scipy/cupyx sparse
            b = b.toarray()
        return np.asarray(to_numpy(b))

    def _solve_columns(self, B, *, x0, **kwargs) -> Solution:
        """Each column of ``B`` solved with this setup; one :class:`Solution` whose ``x`` is
        ``(n, k)`` (:func:`.solution.stack_columns`). ``x0``: None, or ``(n, k)``."""
        k = B.shape[1]
        if x0 is not None:
            x0 = np.asarray(to_numpy(x0))
            if x0.shape != B.shape:
                raise ValueError(f"x0 has shape {x0.shape}; with {k} right-hand sides (b of "
                                 f"shape {B.shape}) it must be {B.shape} or None")
        done: list[Solution] = []
        for j in range(k):
            try:
                done.append(self.solve(B[:, j], x0=None if x0 is None else x0[:, j],
                                       **kwargs))
            except JobCancelled as exc:   # stopped in column j: keep the ones done too
                self._keep_columns_stopped(exc, B, x0, done)
                raise
        return stack_columns(done)

    def _keep_columns_stopped(self, exc, B, x0, done) -> None:
        """A several-column solve stopped in column ``j = len(done)`` (round 35): it kept
        only column j's iterate. ``exc.arrays["x"]`` becomes ``(n, k)``: the finished
        columns' x, column j's last iterate, the columns not started at their ``x0`` (or
        0), so a warm start (``x0=``) goes on with every column; ``columns_done`` (j) and
        each column's ``|b - A x|/|b|`` (``column_residuals``) join ``exc.partial``."""
        j, k = len(done), B.shape[1]
        try:
            arrays = getattr(exc, "arrays", None) or {}
            part = dict(getattr(exc, "partial", None) or {})
            X = np.zeros(B.shape, dtype=np.result_type(
                *(s.field.dtype for s in done), B.dtype, np.float64))
            if x0 is not None:
                X[:, j:] = x0[:, j:]
            for c, s in enumerate(done):
                X[:, c] = np.asarray(s.field).ravel()
            if arrays.get("x") is not None:
                X[:, j] = np.asarray(arrays["x"]).ravel()
            current = part.get("residual")
            rels = [float(s.relative_residual) for s in done] + [
                None if current is None else float(current)] + [None] * (k - j - 1)
            known = [r for r in rels if r is not None]
            if known:   # the worst column's, as a finished several-column solve's result says
                part["relative_residual"] = max(known)
            part.update(columns=k, columns_done=j, column_residuals=rels,
                        iterations=sum(s.iterations for s in done)
                        + int(part.get("iterations", 0)),
                        column_iterations=[s.iterations for s in done]
                        + [int(part.get("iterations", 0))])
            part.setdefault("converged", False)
            part["unknowns"] = int(B.shape[0])
            exc.arrays = {"x": X, "iteration": np.int64(part["iterations"]),
                          "columns_done": np.int64(j)}
            exc.partial = part
        except Exception:  # noqa: BLE001 - the cancel matters more than what it keeps
            return

    def _lift(self, bdev):
        """``b - cols @ x_D`` with ``x_D = b_D / a_DD`` on the identity rows' unknowns (their
        entries moved out of the matrix, :func:`.components.unit_rows_lifted`)."""
        rows, cols, diag = self._lifted
        host = np.array(to_numpy(bdev), copy=True).reshape(-1)
        fixed = host[rows] / diag
        host -= cols @ fixed
        host[rows] = to_numpy(bdev).reshape(-1)[rows]
        return self.xp.asarray(host.reshape(bdev.shape))

    def _isolated_compatible(self, host):
        """``b`` at the unknowns no equation involves (empty row and column): 0, or set to 0
        with ``compatibility='project'``; else refused (no x solves A x = b)."""
        iso = self._isolated
        there = host.reshape(-1)[iso]
        if self.compatibility == "project":
            host = host.copy()
            host.reshape(-1)[iso] = 0
            return host
        bad = np.flatnonzero(there != 0)
        if bad.size:
            i = int(iso[bad[0]])
            more = f" (and {bad.size - 1} more)" if bad.size > 1 else ""
            raise SolveError(
                f"row {i} of the matrix is all zeros{more}, its column too (an unknown no "
                f"equation involves: a graph's isolated node?), and b[{i}] = "
                f"{there[bad[0]]:.3g} is not 0: A is singular and no x solves A x = b; a "
                f"row left empty when the matrix was assembled (a boundary row?) is the "
                f"usual cause. Where b is 0 there, x is 0 there; compatibility='project' "
                f"sets b to 0 there")
        return host

    def _components_compatible(self, host):
        """``b`` against a graph in several pieces: its sum over each must be 0; projected
        (each piece's mean removed) with ``compatibility='project'``, else refused."""
        labels, count = self._components()
        flat = host.reshape(-1)
        if self.compatibility == "project":
            remove_means(labels, count, flat)
            return host
        if self.method == "direct":   # spsolve's answer, then "no solution" (its status)
            return host
        means = component_means(labels, count, flat)
        scale = max(float(np.abs(flat).max()), 1e-300)
        bad = np.flatnonzero(np.abs(means) > 1e-10 * scale)
        if bad.size:
            c = int(bad[0])
            first = int(np.argmax(labels == c))
            raise ValueError(
                "the problem is singular (its rows and columns sum to zero, as a graph "
                "Laplacian's do" + (f", and its graph has {count} separate pieces: x is "
                                     f"defined up to a constant on each" if count > 1 else
                                     ": x is defined up to a constant")
                + f") and b is not compatible (the mean of b over the piece "
                f"holding unknown {first} is {means[c]:.3e}"
                + (f", and that of {bad.size - 1} more pieces" if bad.size > 1 else "")
                + "; it must be 0 on each: no x solves it); pass compatibility='project' to "
                "remove each piece's mean (%solve --compatibility project; in a %%solve cell "
                "'solver: ... compatibility=project')")
        return host

    def _null_compatible(self, host, null):
        """``b`` (host) checked against the given null space: projected onto the range with
        ``compatibility='project'``, else refused when it has a component along it."""
        flat = host.reshape(-1)
        along = component(null, flat)
        size = float(np.linalg.norm(along))
        if self.compatibility == "project":
            return (flat - null @ along).reshape(host.shape)
        if size > 1e-10 * max(float(np.linalg.norm(flat)), 1e-300):
            raise ValueError(
                f"the matrix is singular: it maps {null.shape[1]} direction(s) of "
                f"near_nullspace to zero (e.g. rigid-body modes with no support), and b is "
                f"not compatible (its component along them is {size:.3e}, "
                f"{size / float(np.linalg.norm(flat)):.1e} of |b|; it must be 0: no x solves "
                f"it); pass compatibility='project' to remove it (x is then the "
                f"minimum-norm solution)")
        return host

    def solve_many(self, B, **kwargs) -> list[Solution]:
        """Solve for every column of ``B`` (shape ``(n, k)``) with the one setup; keyword
        arguments as :meth:`solve`. Returns a list of ``k`` solutions (``solve(B)`` returns
        one whose ``x`` is ``(n, k)``, as SciPy's ``spsolve(A, B)``)."""
        if hasattr(B, "toarray") and not isinstance(B, np.ndarray):  # scipy/cupyx sparse
            B = B.toarray()
        B = np.asarray(to_numpy(B))
        if B.ndim != 2 or B.shape[0] != self.op.n:
            raise ValueError(f"B must have shape ({self.op.n}, k), got "
                             f"{B.shape if B.dtype != object else type(B).__name__!r}")
        return [self.solve(B[:, j], **kwargs) for j in range(B.shape[1])]

    def _replace_residual(self, b, x, hist, tol, maxiter, on_iter):
        """BiCGStab whose recurrence residual rose far above its start (a convection-
        dominated matrix without a preconditioner: 4e8 |b| on an upwind 80^2 at eps 1e-3)
        passes the tolerance with an x whose true residual misses it (rounding grows with the
        peak: 2.2e-7 for 1e-8; SciPy's bicgstab returns info 0 there, 3.5e-7): restart it
        from x, its true residual recomputed (residual replacement), at most twice, within
        maxiter, a second time only where the first gained 10x. The history goes on (the
        restart's true residual replaces the last recurrence value), the iterations and
        callbacks count on."""
        converged, before = True, math.inf
        for _ in range(REPLACEMENTS):
            if residual_peak(hist) < PEAK_REPLACE:
                break
            true_abs = self._true_residual(b, x)
            left = maxiter - (len(hist) - 1)
            # a restart that gained under 10x spiked again (D A with rows scaled by 1e12:
            # the limit is the matrix's, 9e-5 -> 2.7e-5): no more
            if not attainable_failed(true_abs, tol) or left <= 0 or true_abs > before / 10:
                break
            before = true_abs
            done = len(hist) - 1

            def go_on(it, rnorm, xk, user=True, done=done):
                on_iter(it + done, rnorm, xk, user)
            go_on.half_step = lambda it, rnorm, xk, done=done: on_iter(it + done, rnorm, xk,
                                                                       False)
            x, more, converged = self._run(b, x, tol, left, go_on)
            hist = list(hist[:-1]) + list(more)
            if not converged:
                break
        return x, hist, converged

    def solve(self, b=None, *, x0=None, rtol=1e-8, atol=0.0, maxiter=None, callback=None,
              reporter=None, strict=False, callback_type=None, stop="residual",
              **unknown) -> Solution:
        """Solve ``A x = b`` (``b`` defaults to the problem's right-hand side). A matrix
        system's ``b`` of shape ``(n, k)`` (several load cases; dense or sparse) solves each
        column with this setup and returns one Solution whose ``x`` is ``(n, k)``, as
        SciPy's ``spsolve(A, B)`` (``x0`` then ``(n, k)`` too; ``solution.columns`` holds
        each column's own).

        Stops when ``|b - A x| <= max(rtol |b|, atol)`` -- scipy.sparse.linalg.cg's test, on
        the recurrence residual for the Krylov methods. ``callback(xk)`` is called after each
        iteration, like scipy's (``xk`` on the device, shaped as the grid or as ``(n,)``; do
        not modify it). ``callback_type`` as SciPy's gmres: ``'pr_norm'`` (or ``'legacy'``)
        calls ``callback(|r_k| / |b|)`` after each iteration instead (GMRES's residual is
        the unpreconditioned one: it is right-preconditioned, SciPy's left), ``'x'`` calls
        ``callback(xk)`` after each restart cycle for GMRES (each iteration for the
        others). ``reporter`` (a skiff Reporter) receives the relative residual as the
        ``residual`` metric and can cancel. Reaching ``maxiter`` returns a solution with
        ``converged=False`` and ``status`` saying so; ``strict=True`` raises
        :class:`SolveError` instead. For GMRES ``maxiter`` counts restart cycles (SciPy's
        meaning: at most ``maxiter * restart`` inner iterations; ``iterations`` counts inner
        ones), and inner iterations with a callback and ``callback_type='legacy'`` (SciPy's
        legacy meaning; ``info`` is then the inner iterations done). Every solve iterates
        in float64 (complex128 for complex A, b or x0); the
        returned ``x`` has the result dtype of A and b, as SciPy's (float32 for float32 A and
        b, complex64 likewise; integers give float64), the residuals being those of the
        float64 iterate. A breakdown (BiCGStab's zero inner product) returns as a solve that
        stopped short does: the iterate it stopped at, ``converged=False``, ``status`` naming
        the remedy and SciPy's negative ``info`` (-10, -11) in ``x, info = skiff.solve(...)``,
        as ``bicgstab``'s; ``strict=True`` raises :class:`SolveError` instead.
        ``stop='scipy'`` (MINRES): SciPy's ``minres`` stopping tests instead (a backward
        error with estimates of ``|A|`` and ``cond(A)``; ``atol`` unused), so its iteration
        count and x are SciPy's; the true residual may then be above ``rtol |b|``.
        """
        if unknown:   # pyamg's ml.solve(b, tol=, accel=), MPI ranks: one line each
            raise TypeError(_solve_keywords_refusal(unknown))
        cols = self._columns(b)
        if cols is not None:   # (n, k): SciPy's spsolve(A, B) shape, one setup for all
            return self._solve_columns(cols, x0=x0, rtol=rtol, atol=atol, maxiter=maxiter,
                                       callback=callback, reporter=reporter, strict=strict,
                                       callback_type=callback_type, stop=stop)
        check_tolerances(rtol, atol, maxiter, least=0)
        if stop not in ("residual", "scipy"):
            raise ValueError(f"stop={stop!r}: 'residual' (|b - Ax| <= max(rtol |b|, atol), "
                             f"the default) or 'scipy' (SciPy's minres tests, method='minres')")
        if stop == "scipy" and self.method not in ("minres", "cg", "pipecg", "bicgstab"):
            raise ValueError(f"stop='scipy' is MINRES's option (SciPy's minres stops on its "
                             f"own test; CG's and BiCGStab's test is SciPy's already) and "
                             f"the method is {self.method!r}: use method='minres'")
        self._scipy_rtol = rtol if stop == "scipy" else None
        if callback_type not in CALLBACK_TYPES:
            raise ValueError(f"unknown callback_type {callback_type!r}: choose from 'x', "
                             f"'pr_norm', 'legacy' (SciPy's gmres), or None: callback(xk) after "
                             f"each iteration")
        norms = callback_type in ("pr_norm", "legacy")
        per_cycle = callback_type == "x" and self.method == "gmres"
        # SciPy's gmres(callback=f, callback_type='legacy'): maxiter counts inner iterations
        # (round 36: it counted restart cycles here, 152 iterations where SciPy stops at 50)
        self._legacy = callback is not None and callback_type == "legacy" and \
            self.method == "gmres"
        xp = self.xp
        # GMRES forms each inner iteration's iterate only for a callback that takes it
        self._user_callback = callback is not None and not norms
        self._own_rhs = b is None and self.compatibility is None
        bdev = self._prepare_b(b)
        bnorm = float(xp.linalg.norm(bdev.ravel()))
        tol = max(rtol * bnorm, atol)
        if self._lifted is not None:   # the identity rows' columns moved to b (same x)
            bdev = self._lift(bdev)
        n = self.op.n
        if maxiter is None:
            maxiter = 100 if self.method in ("mg", "fmg") else min(10 * n, 20000)
            if self.method == "gmres" and not self._legacy:   # restart cycles: the same
                maxiter = -(-maxiter // self.restart)          # inner iterations as ever
        if x0 is None:
            x = xp.zeros(self.op.shape, bdev.dtype)
        else:
            x0h = np.asarray(to_numpy(x0))
            if self.is_grid:
                check_real(x0h.dtype, "x0", "a grid problem's field is real")
            if x0h.size != n:
                raise ValueError(f"x0 has {x0h.size} entries (shape {x0h.shape}) but the "
                                 f"system has {n} unknowns")
            _finite_x0(x0h)
            if x0h.dtype.kind == "c" and bdev.dtype.kind != "c":   # SciPy: x is then complex
                bdev = bdev.astype(np.complex128)
            x = xp.asarray(x0h.astype(bdev.dtype).reshape(self.op.shape)).copy()
        if bdev.dtype.kind == "c" and self.method == "pipecg":
            raise ValueError("method 'pipecg' runs on real systems only and this one is complex; "
                             "use method='cg' (Hermitian positive definite) or 'gmres'")
        out_dtype = self._result_dtype()
        user_shape = self.system.shape if self.is_grid else (n,)
        decades = max(math.log10(bnorm / tol), 1e-9) if bnorm > 0 and tol > 0 else 1.0

        reported = [-1]

        def report(it, rel, converged=False):
            # progress in decades of residual reduction, from this residual; 100% once the
            # solver's own test passed (a residual at or below the tolerance)
            reported[0] = it
            reporter.metric("residual", rel, step=it)
            done = decades if converged else \
                min(max(-math.log10(max(rel, 1e-300)), 0.0), decades)
            reporter.progress(round(done, 3), round(decades, 3), unit="decades",
                              message=f"it {it}: |r|/|b| = {rel:.2e}")

        started = time.perf_counter()

        def on_iter(it, rnorm, xk, user=True):
            # a small solve running on the references past DEFER_GRACE: load numba beside it
            # (the multigrid switches at its next cycle), not earlier, since the loading
            # thread takes the GIL in 5 ms slices and would slow a short solve several times
            if self._small and time.perf_counter() - started > fused.DEFER_GRACE:
                load_numba(wait=False)
            # every iteration up to 100, then every 10th, 100th, ... (long Jacobi runs)
            if reporter is not None and (it <= 100 or it % 10 ** int(math.log10(it) - 1) == 0):
                report(it, rnorm / bnorm if bnorm else rnorm)
                try:   # a reporter's own check(); round 34: the iterate goes with the stop
                    reporter.check()
                except JobCancelled as exc:
                    exc.x, exc.iteration, exc.rnorm = xk, it, rnorm
                    raise
            if callback is None or it == 0 or not user:
                return
            if norms:
                callback(rnorm / bnorm if bnorm else rnorm)
            elif not per_cycle:
                callback(xk.reshape(user_shape))
            elif it % self.restart == 0:   # a cycle's end: its x (the last one's: below)
                callback(xk.reshape(user_shape))

        # BiCGStab's stop at a half step: the reporter sees it, the user's callback does not
        # (SciPy's bicgstab calls callback(xk) once an iteration, after the full step)
        on_iter.half_step = lambda it, rnorm, xk: on_iter(it, rnorm, xk, user=False)

        self._stop = None    # why the method stopped short (stagnation, no solution)
        breakdown = None     # SciPy's negative info, for x, info = solve(...) (see below)
        if bnorm == 0:   # x = 0 solves A x = 0 exactly, whatever x0 was (scipy's answer)
            x = xp.zeros(self.op.shape, bdev.dtype)
            hist, converged, elapsed, moved = [0.0], True, 0.0, 0.0
        elif maxiter == 0 and self.method != "direct":
            # SciPy's cg, minres, bicgstab, cgs, qmr return x0 untouched (its gmres raised
            # UnboundLocalError); converged only where x0 meets the test (SciPy's cg says
            # info 0 either way: its for-else returns maxiter, 0, as the iterations done)
            r0 = self._true_residual(bdev, x)
            hist, converged, elapsed, moved = [r0], r0 <= tol, 0.0, 0.0
            if not converged:
                self._stop = (f"maxiter=0: no iteration ran; x0 is returned as given, "
                              f"|r|/|b| = {r0 / bnorm:.3e} above the tolerance "
                              f"{tol / bnorm:.3e}")
        else:
            t0 = time.perf_counter()
            with fused.deferred(self._small):
                try:
                    x, hist, converged = self._run(bdev, x, tol, maxiter, on_iter)
                    if converged and self.method == "bicgstab":
                        x, hist, converged = self._replace_residual(bdev, x, hist, tol,
                                                                    maxiter, on_iter)
                except JobCancelled as exc:   # a cancel / SIGTERM: keep the last iterate
                    self._keep_stopped(exc, bdev, bnorm, user_shape, out_dtype)
                    raise
                except Breakdown as exc:
                    # SciPy's bicgstab returns (x, -10 or -11): so does x, info = solve(...)
                    if strict:
                        raise
                    x, hist, converged = exc.x, exc.history, False
                    self._stop, breakdown = f"breakdown: {exc}", exc.info
            if per_cycle and callback is not None and (len(hist) - 1) % self.restart:
                callback(x.reshape(user_shape))   # the last, shorter cycle's x
            if self._small and self.xp is np:
                load_numba(wait=False, delay=0.5)  # for the next solve, in the background
            if self._singular() and self.compatibility == "project":
                null = None if self.is_grid else self._given_null()
                if null is not None:   # the minimum-norm solution (lstsq's)
                    x = remove(null, x, self.xp)
                elif not self.is_grid and self._components() is not None:
                    flat = to_numpy(x).reshape(-1).copy()
                    x = xp.asarray(remove_means(*self._components(), flat).reshape(x.shape))
                else:
                    x -= x.mean()
            self._sync()
            elapsed = time.perf_counter() - t0
            moved = self._bytes(len(hist) - 1)
        if self._lifted is not None and bnorm:   # the identity rows' unknowns exactly
            rows, _, diag = self._lifted
            at = xp.asarray(rows)
            x.reshape(-1)[at] = bdev.reshape(-1)[at] / xp.asarray(diag)
        true_abs = self._true_residual(bdev, x)
        field = to_numpy(x)
        if not np.isfinite(field).all():   # never hand NaN/inf back as a solution
            raise SolveError(f"{self.method}: the solution became NaN/inf after "
                             f"{len(hist) - 1} iterations; {self._definiteness_hint()}")
        if self.is_grid:
            field = field.reshape(self.system.shape)
        if field.dtype.kind == "c" and np.dtype(out_dtype).kind != "c":
            field = field.real    # a complex x0's iterations on a real system (see above)
        rounded = None
        if np.dtype(out_dtype).itemsize < field.dtype.itemsize and bnorm:
            field = field.astype(out_dtype)   # float32/complex64: what that rounding leaves
            rounded = self._true_residual(bdev, xp.asarray(field.astype(bdev.dtype).reshape(
                self.op.shape))) / bnorm
        err = None
        if self.is_grid and self.system.exact is not None:
            err = float(np.abs(field - self.system.exact).max())
        sol = Solution(
            field=field, residuals=[float(h) for h in hist], iterations=len(hist) - 1,
            converged=bool(converged), time=elapsed, setup_time=self.setup_time,
            device=self.device.name, method=self.method, precond=self.precond_name,
            bnorm=bnorm, bytes_moved=moved, error=err,
            problem=self.system.name if self.is_grid else "matrix",
            extent=self.system.info.get("extent") if self.is_grid else None,
            info={"solver": self.describe(), **({} if rounded is None else
                                                {"rounded_residual": rounded}),
                  # round 46 (h6): why auto left its first method, for the job's summary
                  # ("direct + none ... converged in 31 iterations" did not say)
                  **({"switched": self._switch_why} if self.switched else {})},
            true_residual=true_abs / bnorm if bnorm else None,
            cycles=-(-(len(hist) - 1) // self.restart) if (self.method == "gmres"
                                                           and not self._legacy) else None,
            breakdown=breakdown, active=self._active_cells(field))
        if (converged and attainable_failed(true_abs, tol)
                and not (self.method == "minres" and self._scipy_rtol is not None)):
            # the recurrence passed the tolerance, the returned x does not: say so
            sol.converged = converged = False
            sol.status = attainable_status(true_abs, tol, bnorm)
            if true_abs >= UNSOLVED_RESIDUAL * bnorm and self._singular():
                sol.status = (f"{sol.status.split(', far above')[0]}, far above what rounding "
                              f"leaves; {self._near_null_remedy()}")
            if self.method == "bicgstab" and residual_peak(hist) >= PEAK_REPLACE:
                sol.status = peak_status(true_abs, tol, bnorm, residual_peak(hist))
            if strict:
                raise SolveError(f"{self.method} did not converge: {sol.status}")
        elif converged:
            sol.status = "converged"
            if rounded is not None and rounded > 10 * tol / bnorm:
                # float32 A and b: the float64 iterate met rtol, the float32 x returned does
                # not (rtol 1e-10 on a P1 Laplacian: 1.5e-5 after rounding) and said nothing
                sol.status = (f"converged (in float64); the {np.dtype(out_dtype).name} x "
                              f"returned has |b - Ax|/|b| = {rounded:.1e} above the tolerance "
                              f"{tol / bnorm:.1e} after rounding (info['rounded_residual']): "
                              f"pass A or b as float64 for a float64 x")
        elif self._stop is not None:
            sol.status = self._stop
            if strict:
                raise SolveError(f"{self.method} did not converge: {sol.status}")
        else:
            done = (f"{sol.cycles} restart cycles of {self.restart} ({sol.iterations} "
                    f"iterations) reached (maxiter={maxiter} counts cycles, as SciPy's gmres)"
                    if sol.cycles is not None else
                    f"{sol.iterations} iterations reached (maxiter={maxiter}"
                    + (" counts inner iterations with callback_type='legacy', as SciPy's "
                       "gmres)" if self._legacy else ")"))
            sol.status = (f"maxiter: {done} with |r|/|b| = {sol.relative_residual:.3e} above "
                          f"the tolerance {tol / bnorm if bnorm else tol:.3e}")
            rate = _rate(sol.residuals)
            fast = rate is not None and rate <= FAST_RATE
            if fast and bnorm and tol > 0 and sol.residuals[-1] > 0:
                # a solve cut short while converging well: more iterations, not another
                # method (maxiter=3 on a Poisson matrix, |r| / 9 a step, was told to try
                # the Schwarz smoother of P2 coefficient jumps)
                more = max(1, math.ceil(math.log(tol / sol.residuals[-1]) / math.log(rate)))
                sol.status += (f"; it was converging (|r| x {rate:.2g} a step): about {more} "
                               f"more iterations reach the tolerance (raise maxiter)")
            if fast:
                pass      # cut short while converging: no other method to name
            elif self.method in ("gmres", "bicgstab") and not self.switched and (
                    self.system.symmetric if self.is_grid else self._looks_spd()):
                # GMRES(30) stalls at 5e-2 on the 1000:1 jump, 24x40 (scipy's too); CG+MG: 9
                sol.status += ("; the matrix is symmetric with a positive diagonal: try "
                               "method='cg' with a preconditioner (precond='auto')")
            elif (self.method == "cg" and self.precond_name == "amg" and not self.is_grid
                  and self._options["smoother"] not in AMG_SMOOTHERS):
                # P2 elements straddling jumps of 1e6: 521 iterations, 36 with the overlap
                sol.status += ("; errors local but not constant (jumps inside higher-order "
                               "elements) need a block smoother: try smoother='schwarz' or "
                               "'schwarz-overlap'")
            if strict:
                raise SolveError(f"{self.method} did not converge: {sol.status}")
        if reporter is not None:
            if reported[0] != sol.iterations:  # the last point of the curve, and 100% if so
                report(sol.iterations, sol.relative_residual, converged=bool(converged))
            reporter.info(solver=self.describe(), iterations=sol.iterations)
        return sol

    def _divergence_remedy(self) -> str:
        """What to try after a Krylov method's residual grew without bound."""
        if self.method == "bicgstab":
            tip = ("BiCGStab's residual is not minimised and can grow without bound: use "
                   "method='gmres', whose residual cannot grow")
        else:
            tip = (f"{self.method}'s residual grew: the matrix or the preconditioner is not "
                   f"what {self.method} needs (symmetric positive definite for CG); use "
                   f"method='gmres', whose residual cannot grow")
        if self.M is None:
            tip += ", with a preconditioner (precond='amg', or M=spilu(A.tocsc()))"
        else:
            tip += (f", or another preconditioner than {self.precond_name} (precond='none', "
                    f"M=scipy.sparse.linalg.spilu(A.tocsc()))")
        return tip + ("; rows scaled far apart (equations in other units) make it worse: "
                      "scale b with the rows, or try method='direct'")

    def _result_dtype(self):
        """The dtype of the returned x: the result type of A and b, as SciPy's: float32 and
        complex64 stay, any other becomes float64 or complex128. (A complex x0 for a real A
        and b starts complex iterations, whose limit, the solution, is real.)"""
        return result_dtype(self.dtype, self.b_dtype)

    def _keep_stopped(self, exc, b, bnorm, user_shape, out_dtype) -> None:
        """A solve stopped by a cancel (round 34): attach its last iterate to the raised
        :class:`JobCancelled` for the job worker's ``keep_partial``: ``exc.arrays = {"x": x,
        "iteration": k}`` (``partial.npz``, a warm start's ``x0``) and ``exc.partial``, the
        summary (iterations, the recurrence residual and the true ``|b - A x|/|b|`` of the
        kept x: GMRES's mid-cycle iterate is formed for it)."""
        xk = getattr(exc, "x", None)
        if xk is None or getattr(exc, "arrays", None) is not None:
            return
        try:
            xs = self.xp.asarray(xk).reshape(self.op.shape)
            true = self._true_residual(b, xs) / bnorm if bnorm else 0.0
            field = to_numpy(xs).reshape(user_shape)
            if field.dtype.kind == "c" and np.dtype(out_dtype).kind != "c":
                field = field.real
            k = int(getattr(exc, "iteration", 0))
            rec = getattr(exc, "rnorm", None)
            exc.arrays = {"x": np.array(field, copy=True), "iteration": np.int64(k)}
            exc.partial = {
                "iterations": k, "converged": False,
                "residual": float(true),
                "relative_residual": float(true),   # the key a finished solve's result uses
                "recurrence_residual": None if rec is None or not bnorm else float(rec) / bnorm,
                "method": self.method, "precond": self.precond_name, "unknowns": int(field.size),
                "warm_start": "x0 = partial.npz's x (skiff solve ... --x0 RUN/partial.npz)"}
        except Exception:  # noqa: BLE001 - the cancel matters more than what it keeps
            return

    def _true_residual(self, b, x) -> float:
        """``|b - A x|`` from the returned x: one more product (the Krylov loops update their
        residual by recurrence, which drifts from the true one near machine precision)."""
        xp = self.xp
        ax = xp.empty_like(b)
        with fused.deferred(self._small):   # after a first small solve: not numba's load
            self.op.matvec(x, ax)
        return float(xp.linalg.norm((b - ax).ravel()))

    def _rounding_floor(self, b, x):
        """``eps |A|_inf |x|_2`` of an assembled matrix: the residual a backward-stable solve
        (LU, a Krylov method whose iterate stalls) may leave from rounding alone; None for an
        operator or a grid."""
        if self.is_grid or self.op.callable:
            return None
        A = host_csr(self.system)
        eps = np.finfo(np.result_type(A.dtype, np.float32)).eps
        norm_a = float(np.abs(A).sum(axis=1).max()) if A.nnz else 0.0
        return eps * norm_a * float(self.xp.linalg.norm(x.ravel()))

    def _lu_solve(self, A, rhs):
        """``A x = rhs`` by SciPy's sparse LU (``splu``, SuperLU with COLAMD as ``spsolve``),
        factorised at the first direct solve and kept, as a SciPy user keeps ``splu(A)``, for
        later solves while A's arrays are unchanged (compared each solve: an in-place edit
        factorises again; ``update`` drops it). A time step's solve on a 2-D 200^2 matrix:
        0.17 s CPU (spsolve's factorisation each time) -> 0.01."""
        from scipy.sparse.linalg import MatrixRankWarning, splu

        kept = getattr(self, "_lu", None)
        arrays = (A.indptr, A.indices, A.data)
        # spsolve's dtype: A's and b's promoted (a complex b on a real A: by parts below)
        dtype = np.promote_types(A.dtype if A.dtype.kind in "fc" else np.float64,
                                 rhs.real.dtype if rhs.dtype.kind in "fc" else np.float64)
        if kept is None or kept[1].L.dtype != dtype or not all(
                np.array_equal(x, y) for x, y in zip(kept[0], arrays)):
            csc = A.tocsc().astype(dtype, copy=False)
            with warnings.catch_warnings():
                warnings.simplefilter("error", MatrixRankWarning)
                try:
                    lu = splu(csc)
                except (MatrixRankWarning, RuntimeError) as exc:
                    raise SolveError(f"direct: the matrix is singular ({exc}); a singular "
                                     "system has no unique solution") from None
            self._lu = kept = (tuple(x.copy() for x in arrays), lu)
        lu = kept[1]
        if rhs.dtype.kind == "c" and lu.L.dtype.kind != "c":   # a real LU: by parts
            return lu.solve(np.ascontiguousarray(rhs.real)) + 1j * lu.solve(
                np.ascontiguousarray(rhs.imag))
        return lu.solve(np.ascontiguousarray(rhs, dtype=dtype))

    def _direct_after_stall(self, b, exc, tol, on_iter):
        """'auto' whose Krylov method stagnated on an assembled matrix of at most
        :data:`DIRECT_AFTER_STALL` unknowns on the CPU: SciPy's sparse LU from there, for this
        and later solves; ``(x, history, converged)`` where it leaves a smaller residual than
        the stalled iterate's, else None (the stall is returned, the method kept). Central
        differences at cell Peclet 4, 100^2: GMRES+AMG stalled at |r|/|b| = 1.0 after 30
        iterations (pyamg's SA GMRES aborts at 2.8e40); the LU 1.6e-14, 0.085 s CPU in all.
        Not taken on round 37's upwind 48^2 matrix (cond 1.7e10): the LU leaves 2.2e-8 |b|,
        the stalled GMRES+AMG 1.4e-8 (:meth:`_rounding_floor`)."""
        if (not self.auto or self.is_grid or self.op.callable or self.device.is_gpu
                or self.op.shape[0] > DIRECT_AFTER_STALL):
            return None
        stalled, why, done = self.method, self._stop, len(exc.history) - 1

        def going_on(it, rnorm, xk):   # the LU's step counts on from the stalled method's
            if it > 0:
                on_iter(done + it, rnorm, xk)

        self.method = "direct"
        try:
            x2, h2, ok = self._run(b, exc.x, tol, 1, going_on)
        except SolveError:   # singular: the stall and its remedy stand
            x2, h2, ok = None, None, False
        if x2 is None or not (h2[-1] < exc.history[-1]):
            self.method, self._stop = stalled, why
            return None
        if not ok and why:
            # a singular A: whether SuperLU meets an exact zero pivot (the stall above stands)
            # or a tiny one (an x, "no solution") follows the BLAS kernel's rounding (round 48
            # h9: OPENBLAS_CORETYPE=Sandybridge); the stall's remedy (near_nullspace=...)
            # stays in the status either way
            self._stop = f"{self._stop}; before it, {why}"
        self.switched, self.M, self.precond_name = str(exc), None, "none"
        self._switch_why = (f"{stalled} stagnated at |r|/|b| = "
                            f"{exc.history[-1] / exc.history[0]:.1e} after {done} iterations; "
                            f"a sparse LU (SciPy's splu) of the "
                            f"{self.op.shape[0]} unknowns")
        return x2, list(exc.history) + list(h2)[1:], ok

    def _run(self, b, x, tol, maxiter, on_iter):
        budget = getattr(self, "_graph_budget", 0)
        if budget and self.precond_name == "jacobi" and maxiter > budget:
            # 'auto' took Jacobi on a graph (:meth:`_graph_jacobi`): AMG after all, from
            # Jacobi-CG's x, where it has not converged within the budget
            self._graph_budget = 0
            try:
                x1, h1, ok = self._run(b, x, tol, budget, on_iter)
            finally:
                self._graph_budget = budget
            if ok or self.precond_name != "jacobi" or self.method != "cg":
                return x1, h1, ok
            self._graph_budget = 0
            self.precond_name = "amg"
            self.M = self._make_precond("amg")
            self.switched = f"Jacobi-CG had not converged in {budget} iterations"
            self._switch_why = f"{self.switched}: AMG built and CG went on from its x"
            self.auto_note = None
            done = len(h1) - 1

            def going_on(it, rnorm, xk):
                # AMG-CG's iterations count on from Jacobi-CG's: a reporter's steps (a
                # notebook's residual plot) started again at 1 at the switch
                if it > 0:
                    on_iter(done + it, rnorm, xk)

            x2, h2, ok = self._run(b, x1, tol, maxiter - done, going_on)
            return x2, list(h1) + list(h2)[1:], ok
        if self.method == "direct":
            A = self.system.matrix() if self.is_grid else host_csr(self.system)
            xs = self._lu_solve(A, to_numpy(b).ravel()).reshape(self.op.shape)
            if not np.isfinite(xs).all():
                raise SolveError("direct: the matrix is singular or too ill-conditioned (the "
                                 "factorisation produced NaN/inf)")
            r = float(np.linalg.norm(to_numpy(b).ravel() - A @ xs.ravel()))
            bn = float(np.linalg.norm(to_numpy(b)))
            on_iter(0, bn, x)
            on_iter(1, r, xs)
            if r > tol:
                self._stop = (f"no solution: the direct solve leaves |b - Ax|/|b| = {r / bn:.3e} "
                              f"above the tolerance {tol / bn:.1e}; the matrix is singular (or "
                              f"too ill-conditioned) and b is not in its range, so no x solves "
                              f"A x = b to it (a least-squares x: scipy.sparse.linalg.lsqr)")
            return self.xp.asarray(xs), [bn, r], r <= tol
        if self.method in ("mg", "fmg"):
            if self.method == "fmg":
                # the problem's own rhs restricts its Dirichlet part separately (see fmg)
                src, bt = (self.system.source, self.system.bterm) if self._own_rhs else (b, None)
                x = self.mg.fmg(src, bt)
            bn = float(self.xp.linalg.norm(b.ravel()))
            return self.mg.iterate(b, x, rtol=tol / bn if bn else 0.0, atol=tol, maxiter=maxiter,
                                   callback=on_iter, bnorm=bn)
        fn = {"minres": minres, "cocg": cocg}.get(self.method) or KRYLOV[self.method]
        kw = ({"scipy_rtol": getattr(self, "_scipy_rtol", None)} if self.method == "minres"
              else {})
        M = self.M
        if b.dtype.kind == "c" and not self.complex and M is not None and not isinstance(
                M, UserPrecond):   # a real system's preconditioner on a complex b: by parts
            M = ByParts(M)
        inner = maxiter
        if self.method == "gmres":  # the cycle's iterate is formed only for a user's callback
            kw = {"restart": self.restart, "iterate": self._user_callback, "stall": STALL_RESTARTS}
            # SciPy's maxiter: restart cycles (inner iterations with callback_type='legacy')
            inner = maxiter if self._legacy else maxiter * self.restart
            self._lengths = None
            if self.auto:   # 'auto' chose GMRES: a longer restart where cycles gain little
                item = max(np.dtype(b.dtype).itemsize, 8)
                cap = min(GROW_RESTART * self.restart, GMRES_BASIS_BYTES // (2 * b.size * item))
                if cap > self.restart:
                    self._lengths = []
                    kw.update(grow_to=cap, lengths=self._lengths)
        elif self.method == "cg" and getattr(self, "_flexible", False):
            kw = {"flexible": True}
        elif self.method == "bicgstab":  # a breakdown's remedy: cg for a symmetric matrix
            kw = {"symmetric": (lambda: bool(self.system.symmetric)) if self.is_grid else
                  (lambda: self._asymmetry() is None)}
        fallback = self.auto and (self.method in ("cg", "cocg") or (
            self.method == "minres" and self.precond_name in ("user", "saddle")))
        try:
            return fn(self.op, b, x.copy() if fallback else x, M, tol=tol,
                      maxiter=inner, callback=on_iter, **kw)
        except Divergence as exc:
            # D A with rows scaled by 10^U(-6, 6) and a b not scaled alike, BiCGStab (no row
            # scaling in the AMG then): |r|/|b| = 1e9 after 20 000 iterations, 261 s
            if fallback and self.method in ("cg", "cocg"):   # 'auto': GMRES from the start
                self._switch_why = f"{self.method} diverged"
                self.method, self.switched = "gmres", str(exc)
                return self._run(b, x, tol, -(-maxiter // self.restart), on_iter)
            self._stop = f"{exc}; {self._divergence_remedy()}"
            return exc.x, exc.history, False
        except Stagnation as exc:
            if str(exc).startswith("minres: A is singular"):   # round 45 (h4): no x does
                self._stop = f"no solution: {exc}"   # better; an LU of a singular A neither
                if self._singular():   # round 48 (h6): b was made orthogonal to the null
                    # space known (the constants: its mean 0), so "b is not in its range"
                    # misled: a 1e-4 / 1e4 checkerboard's Neumann matrix, b of mean 0
                    what = str(exc).split(": ", 2)[-1].split("; x is a least-squares")[0]
                    self._stop = f"stagnated: minres: {what}; {self._near_null_remedy()}"
                return exc.x, exc.history, False
            remedy = ("try method='direct' for a matrix of moderate size, or a longer "
                      "restart=" if self.M is None else
                      f"the preconditioner ({self.precond_name}) may not suit this matrix: "
                      f"try precond='none', a longer restart=, or method='direct'")
            if self.precond_name == "amg" and not self.is_grid and (
                    self._asymmetry() is not None):
                # Galerkin convection-diffusion at cell Peclet 4 (65 025 unknowns): AMG
                # (skiff's and pyamg's) stalls, an incomplete LU converges in 4 iterations
                remedy += (", or an incomplete LU for a convection-dominated matrix: "
                           "M=scipy.sparse.linalg.spilu(A.tocsc())")
            elif (self.M is not None and not self.is_grid and not self.complex
                  and self._asymmetry() is None):
                # symmetric indefinite (Helmholtz-like, L - k^2 I): AMG built on it is a poor
                # M, while MINRES needs none (128^2, k = 50: 2 159 iterations in 1.3 s)
                remedy += (", or method='minres' with precond='none' (the matrix is "
                           "symmetric: MINRES converges on it without a preconditioner)")
            if (not self.is_grid and self.near_nullspace is None
                    and self._singular_constants()):
                # unsupported elasticity (rows sum to zero, 3 or 6 rigid-body modes): a b
                # with a net torque has no solution, and its mean test cannot see that
                remedy = ("the matrix is singular (its rows sum to zero) and its null space "
                          "may be larger than the constants (an unsupported body's rigid-body "
                          "modes): if so, b has no solution; give near_nullspace= (e.g. "
                          "skiff.kernels.solve.rigid_body_modes(coords)) with "
                          "compatibility='project', or " + remedy)
            floor = self._rounding_floor(b, exc.x)
            if floor is not None and floor >= tol:
                # an upwind 48^2 matrix (cond 1.7e10, |x| = 4e7 |b|): GMRES+AMG stalled at
                # |r|/|b| = 1.4e-8 with rtol 1e-8, spsolve's LU leaves 2.2e-8, LAPACK's 6.5e-8
                bn = float(self.xp.linalg.norm(b.ravel()))
                xn = float(self.xp.linalg.norm(exc.x.ravel()))
                remedy = (f"the tolerance is below what rounding allows on this matrix: eps "
                          f"|A| |x| / |b| = {floor / bn:.1e} (|x| = {xn / bn:.1e} |b|;"
                          f" a direct solve leaves about as much): raise rtol (or atol), or "
                          f"rescale the problem; else {remedy}")
            self._stop = f"stagnated: {exc}; {remedy}"
            direct = self._direct_after_stall(b, exc, tol, on_iter)
            return direct if direct is not None else (exc.x, exc.history, False)
        except SolveError as exc:
            if "b has a part outside its range" in str(exc) and self._singular():
                # round 48 (h6): b was made orthogonal to the null space known, so the part
                # outside the range is rounding's (CG + AMG at rtol 1e-10 on the 1e-4 / 1e4
                # checkerboard's Neumann matrix, cond ~1e10, b of mean 0)
                raise SolveError(f"{str(exc).split(': A looks singular')[0]}: A looks "
                                 f"singular (positive semidefinite) and "
                                 f"{self._near_null_remedy(rounding=True)}") from None
            if fallback and self.method == "cocg":
                # COCG's bilinear form is no norm: a breakdown ('auto' chose it for a
                # complex symmetric matrix) goes on with GMRES from the start
                self.method, self.switched = "gmres", str(exc)
                self._switch_why = "cocg broke down"
                return self._run(b, x, tol, -(-maxiter // self.restart), on_iter)
            if fallback and self.method == "minres" and (
                    "positive definite" in str(exc) or "symmetric" in str(exc)):
                # your M passed the probe at setup, yet MINRES found it indefinite (or not
                # symmetric): 'auto' goes on with GMRES from the start, as after CG
                self.method, self.switched = "gmres", str(exc)
                self._switch_why = ("minres found your M not symmetric positive definite"
                                    if self.precond_name == "user" else
                                    "minres found the block preconditioner indefinite")
                return self._run(b, x, tol, -(-maxiter // self.restart), on_iter)
            if fallback and "positive definite" in str(exc):
                # symmetric with a positive diagonal, yet p.Ap <= 0 (indefinite), or AMG built
                # on it is (a shifted operator such as Helmholtz's, whose few negative
                # eigenvalues Lanczos rarely finds): 'auto' goes on with GMRES (the same
                # preconditioner) from the start, for this and later solves
                if self.M is None:   # symmetric, no preconditioner: MINRES (as at setup)
                    self.method, self.switched = "minres", str(exc)
                    return self._run(b, x, tol, maxiter, on_iter)
                if self._positive_saddle():
                    # [[K, B^T], [B, +C]], C small: Stokes P2/P1 with +1e-6 M_p ran GMRES+AMG
                    # to a stall at |r|/|b| = 0.99; MINRES with the block preconditioner
                    self.method, self.switched = "minres", str(exc)
                    self._switch_why = ("cg found the matrix indefinite: a saddle point "
                                        "[[K, B^T], [B, C]] with a small C")
                    return self._run(b, x, tol, maxiter, on_iter)
                self.method, self.switched = "gmres", str(exc)
                # CG's maxiter counted iterations: as many inner GMRES ones, in cycles
                return self._run(b, x, tol, -(-maxiter // self.restart), on_iter)
            if ("breakdown" in str(exc) and self.precond_name == "mg" and self.is_grid
                    and self.system.convection_dominated):
                raise SolveError(f"{exc}; and the geometric multigrid preconditioner holds the "
                                 f"diffusion only, while convection dominates this grid: "
                                 f"precond='amg' (the default here) suits it") from None
            if self.method in ("cg", "pipecg") and "positive definite" in str(exc):
                blame = matrix_indefiniteness(self.op)
                if blame is not None:   # the matrix, not the preconditioner, is at fault
                    remedy = self._saddle_remedy() or (
                        "use method='minres' (symmetric indefinite; with no M or an SPD one) "
                        "or 'gmres' (which takes AMG)")
                    raise SolveError(f"{self.method}: the matrix is not positive definite "
                                     f"({blame}); {remedy}") from None
                if "preconditioner" in str(exc) and self.precond_name == "user":
                    raise SolveError(f"{exc}; your preconditioner M must be symmetric positive "
                                     f"definite for {self.method} (as for SciPy's cg): check "
                                     f"its sign, or use method='gmres'") from None
                if "preconditioner" in str(exc) and not self.is_grid:
                    raise SolveError(f"{exc}; the matrix may be indefinite (a shifted operator "
                                     "such as Helmholtz's) or singular: use method='gmres' or "
                                     "'bicgstab' (or 'auto', which goes on with GMRES)") from None
            raise
        except FloatingPointError as exc:
            raise SolveError(str(exc)) from None

    def _definiteness_hint(self) -> str:
        blame = None
        if self.method in ("cg", "pipecg"):
            blame = matrix_indefiniteness(self.op)
        if blame is not None:
            return f"the matrix is not positive definite ({blame})"
        return "the matrix may be singular or the method unsuited to it"

    def _bytes(self, iters: int) -> float:
        """Bytes the kernels of ``iters`` iterations must move at least (for the bandwidth)."""
        n = self.op.n
        if self.method in ("mg", "fmg"):
            return MGPrecond(self.mg).cycle_bytes * max(iters, 1)
        if self.method == "direct":
            return 0.0
        vec = {"cg": 12, "cocg": 12, "pipecg": 24, "bicgstab": 20, "gmres": 12 + self.restart,
               "minres": 16 if self.M is None else 26}[self.method]
        per_it = self.op.matvec_bytes * (2 if self.method == "bicgstab" else 1) + 8 * n * vec
        pre = self.M.bytes if self.M is not None else 0
        if self.M is not None:
            self.M.bytes = 0
        return per_it * iters + pre


def solve(system, b=None, *, method="auto", precond="auto", rtol=1e-8, atol=0.0, maxiter=None,
          callback=None, x0=None, device=DEFAULT_DEVICE, reporter=None, callback_type=None,
          **options) -> Solution:
    """Solve ``A x = b`` in one call: set up a :class:`Solver` and solve once.

    ``system`` is a :class:`~skiff.kernels.solve.problems.GridProblem` (``b`` defaults to its
    right-hand side), a scipy/cupyx sparse matrix or array (any format), a small dense array, a
    scipy ``LinearOperator`` or a callable ``x -> A x`` (its size is taken from ``b``). Options
    go to :class:`Solver` (cycle, smoother, pre, post, restart, compatibility, n,
    interpolation, near_nullspace, amg) and ``strict``, ``callback_type`` and ``stop`` to
    :meth:`Solver.solve`.
    """
    system = unwrapped(system)   # aslinearoperator(M) of a matrix: M (AMG, the kept setup)
    if "tol" in options:  # scipy's and pyamg's name: say which of ours it is
        raise TypeError(f"solve() takes rtol= (relative to |b|) and atol=, not tol=: "
                        f"rtol={options['tol']!r} is what scipy's tol={options['tol']!r} asked")
    ranks = [k for k in _RANK_KEYWORDS if k in options]
    if ranks:   # the %solve / CLI flag --np, asked of the function: say where it lives
        raise TypeError(_ranks_refusal(system, ranks[0], options[ranks[0]]))
    if (callable(system) and not hasattr(system, "shape") and options.get("n") is None
            and b is not None):
        options["n"] = int(np.size(b))
    if "M" in options:   # SciPy's name for a preconditioner of your own: precond= here
        if precond not in (None, "auto"):
            raise TypeError("solve() got both M= (SciPy's name) and precond=: give one")
        precond = options.pop("M")
    if "shift" in options:   # SciPy's minres(A, b, shift=s) solves (A - s I) x = b
        raise TypeError(f"solve() takes no shift=: SciPy's minres(A, b, shift=s) solves "
                        f"(A - s I) x = b; pass that matrix, A - {options['shift']!r} * "
                        f"scipy.sparse.identity(n), with method='minres'")
    if "accel" in options:
        raise TypeError("solve() takes no accel= keyword: pyamg's accel='cg' is method='cg' "
                        "here, with precond='amg' (skiff's smoothed-aggregation AMG)")
    known = {name for name, p in inspect.signature(Solver).parameters.items()
             if p.kind is not p.VAR_KEYWORD} | {"strict", "stop"}
    unknown = sorted(set(options) - known)
    spilu = [k for k in unknown if k in ("drop_tol", "fill_factor", "drop_rule", "permc_spec")]
    if spilu:   # round 45 (h4): SciPy spilu's keywords given to solve() itself
        given = ", ".join(f"{k!r}: {options[k]!r}" for k in spilu)
        raise TypeError(f"solve() takes no {', '.join(spilu)}= keyword: "
                        f"{'it is' if len(spilu) == 1 else 'they are'} SciPy spilu's, and "
                        f"skiff's ILU with threshold takes {'it' if len(spilu) == 1 else 'them'}"
                        f" as precond=('ilut', {{{given}}})")
    if unknown and _pyamg_refusal("solve()", unknown):
        raise TypeError(_pyamg_refusal("solve()", unknown))
    if unknown:
        extra = sorted(known - {"strict", "stop", "system", "method", "precond", "device"})
        raise TypeError(f"solve() got unexpected keyword argument(s) {', '.join(unknown)}; "
                        f"it takes rtol, atol, maxiter, x0, callback, callback_type, method, "
                        f"precond, device, reporter, strict, stop and Solver's options: "
                        f"{', '.join(extra)}")
    strict = options.pop("strict", False)
    stop = options.pop("stop", "residual")
    run = dict(x0=x0, rtol=rtol, atol=atol, maxiter=maxiter, callback=callback,
               reporter=reporter, strict=strict, callback_type=callback_type, stop=stop)
    if x0 is not None and not hasattr(x0, "tocsr"):   # before the setup it would waste
        _finite_x0(x0)
    empty = _empty_solution(system, b, options.get("n"), method, precond, run)
    if empty is not None:
        return empty
    key = _setup_key(system, method, precond, device, options)
    if key is None or not _LAST_SETUP_LOCK.acquire(blocking=False):
        with checking(reporter):   # a cancel lands inside the setup too (cancel.py)
            solver = Solver(system, method=method, precond=precond, device=device, **options)
        return solver.solve(b, **run)
    try:   # the last matrix's setup, kept: a time loop of solve(A, b_k) pays it once
        last = _LAST_SETUP.pop("entry", None)
        reused = (last is not None and last[0] is system and last[1] == key
                  and _same_arrays(system, last[3]))
        if reused:
            solver, snapshot = last[2], last[3]
        else:   # the entries as they are when set up (a copy: an in-place change is seen)
            snapshot = _snapshot(system)
            last = None   # an old hierarchy is let go before the new setup, not after
            with checking(reporter):
                solver = Solver(system, method=method, precond=precond, device=device,
                                **options)
        last = None
        sol = solver.solve(b, **run)
        _LAST_SETUP["entry"] = (system, key, solver, snapshot)
        if reused:
            sol.setup_time = 0.0
            sol.info["setup"] = ("reused: the previous skiff.solve had this matrix (same "
                                 "entries) and options")
        return sol
    finally:
        _LAST_SETUP_LOCK.release()


def residual_peak(hist) -> float:
    """How far the recurrence residual rose above its start (1 when it never did)."""
    return max(hist) / hist[0] if len(hist) > 1 and hist[0] > 0 else 1.0


def attainable_failed(true_abs: float, tol: float) -> bool:
    """A converged recurrence whose returned x misses the tolerance by more than 10x."""
    return math.isfinite(true_abs) and true_abs > 10 * tol


# round 47 (h4): a true |b - Ax|/|b| from this up is no rounding limit (a normalized graph
# Laplacian with b at random: CG + AMG's recurrence passed 1e-8 with the true 5.8, and the
# status blamed float64's precision)
UNSOLVED_RESIDUAL = 1e-2


def attainable_status(true_abs: float, tol: float, bnorm: float) -> str:
    """The status of :func:`attainable_failed` (the serial and the distributed solver's)."""
    head = (f"attainable accuracy: the solver's residual passed the tolerance "
            f"{tol / bnorm:.1e} but the true |b - Ax|/|b| is {true_abs / bnorm:.1e}")
    if true_abs >= UNSOLVED_RESIDUAL * bnorm:
        return (f"{head}, far above what rounding leaves: A is likely singular with b "
                f"outside its range (or not positive definite, for CG); method='minres' "
                f"stops at a least-squares x and says which; give a b in A's range, or "
                f"compatibility='project' where A's null space is the constant")
    return (f"{head}; a tolerance near 1e-16 times the condition number is as far as "
            f"float64 goes")


def peak_status(true_abs: float, tol: float, bnorm: float, peak: float) -> str:
    """The status of a BiCGStab whose residual rose ``peak`` times above its start and whose
    x still misses the tolerance after the restarts from its true residual."""
    return (f"attainable accuracy: the solver's residual passed the tolerance "
            f"{tol / bnorm:.1e} but the true |b - Ax|/|b| is {true_abs / bnorm:.1e}: "
            f"BiCGStab's residual rose {peak:.1e} times above its start on the way (its "
            f"rounding errors grow with it; restarts from the true residual did not recover "
            f"it): use method='gmres', whose residual never rises, or a preconditioner")


# round 48 (h6): pyamg's keywords of smoothed_aggregation_solver(A, ...) / ml.solve(b, ...)
# given to skiff: what each is here (solve(A, b, B=B) said only "unexpected keyword B")
_PYAMG_KEYWORDS = {
    "B": "near_nullspace=B (the near-null space: rigid-body modes; a BSR matrix without "
         "it takes each unknown's constant, as pyamg)",
    "residuals": "the returned Solution's .residuals (|r| per iteration, initial first, "
                 "as pyamg's list), not a list to fill",
    "strength": "amg_options={'strength': ...} (pyamg's names: 'symmetric', ('symmetric', "
                "{'theta': t}), 'evolution'; with amg='sa' or 'classical')",
    "max_coarse": "amg_options={'max_coarse': ...}",
    "symmetry": "not needed: skiff looks at A's symmetry itself (R = P^T and Chebyshev "
                "smoothing where A = A^T)",
}


def _pyamg_refusal(where: str, unknown) -> str | None:
    """The line for a pyamg keyword given to ``where`` (``solve()``, ``Solver()``,
    ``Solver.solve()``), or None when none of ``unknown`` is one."""
    word = next((k for k in unknown if k in _PYAMG_KEYWORDS), None)
    if word is None:
        return None
    return f"{where} takes no {word}= keyword (pyamg's): here it is {_PYAMG_KEYWORDS[word]}"


# what a user asking for MPI ranks of skiff.solve writes (%solve's and the CLI's --np / --ranks)
_RANK_KEYWORDS = ("np", "ranks", "nprocs", "n_procs", "num_procs", "world_size", "comm",
                  "mpi", "n_ranks")


def _ranks_refusal(system, word, value) -> str:
    """The one line for ``solve(..., np=2)``: the function solves in this process; MPI ranks
    are a job's (``%solve`` / ``python -m skiff solve ... --np N``), for the built-in grid
    problems and ``%%solve`` specs only (``kinds/solve.py``'s own refusal for a matrix)."""
    what = ("a GridProblem" if isinstance(system, GridProblem) else
            "an assembled matrix" if hasattr(system, "shape") else "an operator")
    n = value if isinstance(value, int) and not isinstance(value, bool) and value > 1 else 2
    return (f"solve() takes no {word}= keyword: it solves in this process, on one rank "
            f"(its kernels use this process's threads), and {what} is solved on one rank "
            f"only. MPI ranks are a job's, for the built-in grid problems and %%solve specs: "
            f"python -m skiff solve poisson --grid 300x300 --np {n} (or %solve poisson --grid "
            f"300x300 --np {n} in a notebook); drop {word}= here")


# a solve's keywords (Solver.solve's, SciPy's and pyamg's names of them) given to Solver()
_SOLVE_KEYWORDS = ("rtol", "atol", "tol", "maxiter", "x0", "callback", "callback_type",
                   "reporter", "strict", "stop", "accel", "b")


def _solver_keywords_refusal(system, unknown: dict) -> str:
    """The one line for ``Solver(A, np=2)`` (round 39: Python's bare "unexpected keyword
    argument 'np'"), ``Solver(A, rtol=...)`` and any other keyword it does not take."""
    word = next(iter(unknown))
    ranks = [k for k in _RANK_KEYWORDS if k in unknown]
    if ranks:
        word, value = ranks[0], unknown[ranks[0]]
        n = value if isinstance(value, int) and not isinstance(value, bool) and value > 1 else 2
        if isinstance(system, GridProblem):
            where = (f"a script run as mpirun -n {n} python script.py builds "
                     f"skiff.kernels.solve.parallel.DistributedSolver(problem) (the ranks of "
                     f"MPI's world; 7-point / 5-point stencils, cg, gmres, bicgstab, minres), "
                     f"or a job: python -m skiff solve poisson --grid 300x300 --np {n}")
        else:
            what = "an assembled matrix" if hasattr(system, "shape") else "an operator"
            where = (f"{what} is solved on one rank here; a script run as mpirun -n {n} "
                     f"python script.py splits a sparse matrix by rows with "
                     f"skiff.kernels.solve.parallel.row_solve(A, b, method='cg', "
                     f"comm=MPI.COMM_WORLD) (CG, BiCGStab or GMRES with Jacobi), and so "
                     f"does a job of a matrix file: scipy.sparse.save_npz('A.npz', A), then "
                     f"python -m skiff solve A.npz b.npy --np {n}")
        return (f"Solver() takes no {word}= keyword: it solves in this process, on one rank; "
                f"{where}; drop {word}= here")
    if word == "accel":
        return ("Solver() takes no accel= keyword: pyamg's accel='cg' is "
                "Solver(A, method='cg', precond='amg') here (pyamg's "
                "ml.solve(b, tol=, accel=) is SmoothedAggregation(A).solve(b, tol=, accel=))")
    if _pyamg_refusal("Solver()", unknown) and "residuals" not in unknown:
        return _pyamg_refusal("Solver()", unknown)
    if word in _SOLVE_KEYWORDS:
        name = "rtol" if word == "tol" else word
        return (f"Solver() takes no {word}= keyword: it is the solve's, "
                f"Solver(A).solve(b, {name}=...) (Solver() sets up: method, precond and the "
                f"multigrid options)")
    known = [k for k in inspect.signature(Solver).parameters if k not in ("system", "unknown")]
    return (f"Solver() got unexpected keyword argument(s) {', '.join(sorted(unknown))}; it "
            f"takes {', '.join(known)}")


def _solve_keywords_refusal(unknown: dict) -> str:
    """The one line for ``Solver(A).solve(b, tol=..., accel='cg')`` (a pyamg user's
    ``ml.solve``), ``np=`` and other keywords :meth:`Solver.solve` does not take."""
    if "tol" in unknown:
        tol = unknown["tol"]
        return (f"Solver.solve() takes rtol= (relative to |b|) and atol=, not tol=: "
                f"rtol={tol!r} is what pyamg's ml.solve(b, tol={tol!r}) and scipy's "
                f"tol={tol!r} asked")
    if "accel" in unknown:
        return ("Solver.solve() takes no accel= keyword: the Krylov method is set up with "
                "the Solver: Solver(A, method='cg', precond='amg') is pyamg's accel='cg'")
    ranks = [k for k in _RANK_KEYWORDS if k in unknown]
    if ranks:
        return (f"Solver.solve() takes no {ranks[0]}= keyword: a Solver solves in this "
                f"process, on one rank; MPI ranks are a job's: python -m skiff solve poisson "
                f"--grid 300x300 --np 2")
    if _pyamg_refusal("Solver.solve()", unknown):
        return _pyamg_refusal("Solver.solve()", unknown)
    if "M" in unknown or "precond" in unknown or "method" in unknown:
        word = next(k for k in ("M", "precond", "method") if k in unknown)
        return (f"Solver.solve() takes no {word}= keyword: it is the setup's, "
                f"Solver(A, {word}=...).solve(b)")
    return (f"Solver.solve() got unexpected keyword argument(s) "
            f"{', '.join(sorted(unknown))}; it takes b, x0, rtol, atol, maxiter, callback, "
            f"callback_type, reporter, strict, stop")


# the last skiff.solve's matrix, options, Solver and a copy of the matrix's arrays (one
# entry): solve() in a loop over right-hand sides (implicit time steps) set AMG up on every
# call. P1 heat, 10 steps: each call 0.04-0.06 s, a Solver's solve 0.001 s. The arrays are
# compared bit for bit with the copy (round 30b: a blake2b hash of them cost 0.3 s at 5e6
# entries under load on every call; the comparison ~4 ms unloaded, hashing 80 ms), so a
# matrix changed in place, even in one entry or by -0.0 for 0.0, is never taken for the old
# one; the price is one copy of the arrays, held with the hierarchy (which is larger).
_LAST_SETUP: dict = {}
_LAST_SETUP_LOCK = threading.Lock()
_KEPT_ARRAYS = {"csr": ("data", "indices", "indptr"), "csc": ("data", "indices", "indptr"),
                "bsr": ("data", "indices", "indptr"), "coo": ("data", "row", "col"),
                "dia": ("data", "offsets")}


def _setup_key(system, method, precond, device, options):
    """What a kept setup must match for ``system`` besides its arrays (a CPU scipy sparse
    matrix: its format, shape, dtype, its arrays' dtypes and shapes, and the options), or
    None where none is kept (a grid, an operator, your own M, arrays among the options, a
    matrix in a format without flat arrays). The arrays themselves: :func:`_same_arrays`."""
    import scipy.sparse as sp

    arrays = _KEPT_ARRAYS.get(getattr(system, "format", None))
    if not sp.issparse(system) or arrays is None or not isinstance(precond, str):
        return None
    simple = (str, int, float, bool, type(None))
    if not all(isinstance(v, simple) for v in (method, device, *options.values())):
        return None
    layout = []
    for name in arrays:
        array = getattr(system, name, None)
        if not isinstance(array, np.ndarray) or array.dtype == object:
            return None
        layout.append((name, str(array.dtype), array.shape))
    return (system.format, system.shape, str(system.dtype), tuple(layout), method,
            precond, device, tuple(sorted(options.items())))


def _bits(array: np.ndarray) -> np.ndarray:
    """``array``'s bytes as unsigned integers (so NaN equals itself and -0.0 differs from
    0.0): a flat view when it is contiguous, else a contiguous copy."""
    flat = np.ascontiguousarray(array).reshape(-1)
    for size in (8, 4, 2):
        if flat.nbytes % size == 0:
            return flat.view(np.uint8).view(f"u{size}")
    return flat.view(np.uint8)


def _snapshot(system) -> tuple:
    """A copy of ``system``'s arrays (:data:`_KEPT_ARRAYS`) as unsigned integers."""
    return tuple(_bits(getattr(system, name)).copy()
                 for name in _KEPT_ARRAYS[system.format])


def _same_arrays(system, snapshot: tuple) -> bool:
    """Whether ``system``'s arrays are bit for bit those of ``snapshot``."""
    for name, kept in zip(_KEPT_ARRAYS[system.format], snapshot):
        now = _bits(getattr(system, name))
        if now.dtype != kept.dtype or now.shape != kept.shape or not np.array_equal(now, kept):
            return False
    return True


# ---------------------------------------------------------------------------- loading numba
def _deferrable(system, is_grid, n, xp) -> bool:
    """Whether a solve of ``system`` runs on the numpy references until numba is loaded
    (``fused.deferred``): a grid of at most ``fused.DEFER_UNKNOWNS`` unknowns, a CPU matrix
    of at most ``fused.DEFER_MATRIX_NNZ`` entries (its AMG setup then runs its Python twins:
    a 64x64 Poisson matrix's first solve 0.44 -> 0.18 s, but 200x200 0.48 -> 0.98 s), a
    matrix-free operator of at most ``DEFER_UNKNOWNS`` unknowns (the Krylov updates only)."""
    if is_grid:
        return system.unknowns <= fused.DEFER_UNKNOWNS
    if xp is not np:
        return False
    if hasattr(system, "nnz"):                        # scipy sparse
        return 0 < int(system.nnz) <= fused.DEFER_MATRIX_NNZ
    if isinstance(system, np.ndarray):                # dense: every entry counts
        return 0 < system.size <= fused.DEFER_MATRIX_NNZ
    shape = getattr(system, "shape", None)
    size = shape[0] if shape is not None and len(shape) == 2 else n
    return isinstance(size, (int, np.integer)) and 0 < size <= fused.DEFER_UNKNOWNS


_LOAD = threading.RLock()    # held while loading
_START = threading.Lock()    # held while starting the background load
_background: list[threading.Thread] = []
_FAILED: list[str] = []      # why loading failed (then the references answer)


def load_numba(wait: bool = True, delay: float = 0.0) -> None:
    """Load the solver's numba kernels (compiling them into numba's disk cache when it is
    cold) by tiny solves through them, then let deferred solves use them
    (``fused.mark_loaded``). ``wait=False`` starts it on a daemon thread after ``delay``
    seconds and returns at once (a small solve does this when it ends, so the job's pictures
    and result go first). ``python -m skiff.kernels.solve`` runs it; ``make install`` does,
    so that a first solve finds the cache warm."""
    from skiff.kernels.backend import numba_available

    if fused.numba_loaded():
        return
    if not wait:
        if _background:          # started already (never wait on _LOAD, which it holds)
            return
        with _START:
            if not _background:
                t = threading.Timer(delay, load_numba)
                t.name, t.daemon = "skiff-numba-load", True
                _background.append(t)
                t.start()
        return
    with _LOAD:
        if fused.numba_loaded() or _FAILED or not numba_available():
            return
        try:
            with fused.warming():
                for problem in (poisson((64, 64)),
                                diffusion((64, 64), lambda x, y: 1.0 + x * y, name="warm")):
                    for method in ("cg", "mg"):
                        Solver(problem, method=method, device="cpu").solve(rtol=1e-6)
                # a matrix's Krylov vectors are flat (other numba signatures than a grid's);
                # AMG's setup (strength, aggregates, Gauss-Seidel on the candidates) has its own
                A = poisson((24, 24)).matrix()   # above AMG's 400 coarse unknowns
                for method, precond in (("cg", "jacobi"), ("pipecg", "none"), ("cg", "amg")):
                    Solver(A, method=method, precond=precond, device="cpu").solve(
                        np.ones(A.shape[0]), rtol=1e-6)
        except Exception as exc:  # a broken numba install: the references answer
            _FAILED.append(f"{type(exc).__name__}: {exc}")
            return
        fused.mark_loaded()


def near_null_words(known: str, how: str, amg_given: bool, rounding: bool = False) -> str:
    """The remedy for a singular A whose b is orthogonal to the null space ``known`` yet
    unsolved, by ``how`` (e.g. "cg with precond='jacobi'"); one wording for one process
    (``Solver._near_null_remedy``) and the row split over ranks (round 48 h6, h14)."""
    head = (f"b is orthogonal to A's null space as far as it is known ({known}; "
            f"checked or projected before the solve), so ")
    tail = ("A is nearly singular beyond it (near-null vectors: coefficients orders of "
            "magnitude apart) or its null space is larger (an unsupported elastic "
            "body's rigid-body modes: give near_nullspace=)")
    amg = ("" if amg_given else
           f"; {how} may not resolve them: give precond='amg' (with method='cg' for a "
           f"positive semidefinite A), as method='auto' does")
    if rounding:
        return (f"{head}the tolerance is likely below what rounding leaves on this A: "
                f"raise rtol; else {tail}{amg}")
    return f"{head}{tail}{amg}"
