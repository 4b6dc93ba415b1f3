"""The system a user gives, as an operator on device vectors: :class:`GridOperator` for a
:class:`~.problems.GridProblem` (matrix-free fused stencil kernels), :class:`MatrixOperator` for
a sparse or dense matrix, a scipy ``LinearOperator`` or a callable ``x -> A x``.

:func:`matrix_operator` checks a user's matrix (square, a 2D array; real or, on the CPU,
complex) and places it on the device; :func:`host_csr` brings one back as scipy CSR (for AMG
and the direct solve).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from skiff.kernels.backend import to_numpy

from . import fused
from .periodic import wrap_add, wrap_dot, wraps
from .problems import GridProblem

__all__ = ["GridOperator", "MatrixOperator", "matrix_operator", "grid_operator",
           "is_matrix_free", "unwrapped", "check_real", "check_finite", "matrix_on", "host_csr",
           "asymmetry"]

SYMMETRY_RTOL = 1e-8  # |A - A^T| within this of |A| is round-off (an assembled symmetric form)


class GridOperator:
    """Matrix-free operator of a :class:`GridProblem` on the device (3D grid vectors)."""

    def __init__(self, problem: GridProblem, xp):
        self.problem = problem
        self.xp = xp
        self.shape = problem.shape3
        self.const = not hasattr(problem.stencil, "c0")
        self.arrays = tuple(xp.asarray(a) for a in problem.stencil.arrays())
        self.wraps = wraps(problem.stencil, xp)   # periodic axes: the wrap-around terms
        self.n = int(np.prod(self.shape))
        # bytes per matvec: read u (+ coefficient arrays), write out
        self.matvec_bytes = 8 * self.n * (2 if self.const else 6)

    def matvec_dot(self, p, out) -> float:
        op = fused.apply_const if self.const else fused.apply_var
        dot = op(p, *self.arrays, out)[1]
        if self.wraps:
            wrap_add(p, out, self.wraps)
            dot -= wrap_dot(p, self.wraps)
        if self.problem.velocity is not None:
            self.problem.convect(p, out)
            dot = float((out * p).sum())
        return dot

    def matvec(self, p, out):
        self.matvec_dot(p, out)
        return out

    def diagonal(self):
        d = self.xp.asarray(self.problem.stencil.diag)
        if self.problem.velocity is not None:
            hs = (1.0,) * (3 - self.problem.ndim) + tuple(self.problem.h)
            vel = (0.0,) * (3 - self.problem.ndim) + tuple(self.problem.velocity)
            d = d + sum(abs(v) / h for v, h in zip(vel, hs))
        return d


def _is_linear_operator(A) -> bool:
    return hasattr(A, "matvec") and hasattr(A, "shape") and not hasattr(A, "nnz")


def unwrapped(A):
    """``scipy.sparse.linalg.aslinearoperator(M)`` of a matrix (a ``MatrixLinearOperator``):
    M itself, so its entries give AMG, ILU and the direct solve as M's would (round 47 h12:
    the anisotropic 64^2 ran auto's CG without a preconditioner, 411 iterations, where M
    takes CG + AMG 20); anything else (a true ``LinearOperator(shape, matvec=...)``, a
    function, a matrix) unchanged."""
    inner = getattr(A, "A", None)
    kind = type(A)   # SciPy's own classes only: a subclass may change the product
    if (inner is None or not kind.__module__.startswith("scipy.sparse.linalg")
            or kind.__name__ not in ("MatrixLinearOperator", "_AdjointMatrixOperator")):
        return A
    if getattr(inner, "shape", None) != tuple(A.shape) or not (
            sp.issparse(inner) or (isinstance(inner, np.ndarray) and inner.ndim == 2)):
        return A
    return inner


def is_matrix_free(A) -> bool:
    """A callable ``x -> A x`` or a scipy ``LinearOperator``: no entries to build on."""
    return (callable(A) and not hasattr(A, "shape")) or _is_linear_operator(A)


def check_real(dtype, what, why="skiff solves real systems only here"):
    if dtype is not None and np.dtype(dtype).kind == "c":
        raise ValueError(f"{what} is complex ({np.dtype(dtype)}); {why}: split into real and "
                         "imaginary parts (a 2x2 block system) or use scipy.sparse.linalg")


def is_complex(obj) -> bool:
    """Whether a matrix, LinearOperator or array is complex (by its dtype; False without)."""
    dtype = getattr(obj, "dtype", None)
    try:
        return dtype is not None and np.dtype(dtype).kind == "c"
    except TypeError:
        return False


class MatrixOperator:
    """A sparse matrix (scipy or cupyx; a dense array becomes CSR), a scipy ``LinearOperator``
    or a callable ``x -> A x``, as an operator on vectors. ``complex``: the matrix (or the
    LinearOperator's dtype) is complex; its vectors must then be complex too."""

    def __init__(self, A, n: int, xp):
        self.xp = xp
        self.n = n
        self.shape = (n,)
        self.callable = is_matrix_free(A)
        self.complex = is_complex(A)
        if self.callable:
            self.A = A.matvec if _is_linear_operator(A) else A
            self.matvec_bytes = 16 * n
        else:
            self.A = matrix_on(A, xp)
            check_finite(self.A)
            self.matvec_bytes = 12 * self.A.nnz + 16 * n

    def matvec(self, p, out):
        if self.callable:
            y = self.A(p)
            if isinstance(y, (list, tuple)):   # numbers in a list: what np.asarray makes of it
                y = np.asarray(y)
            if getattr(getattr(y, "dtype", None), "kind", None) == "c" and out.dtype.kind != "c":
                # written into a real vector it lost its imaginary part without a word
                raise ValueError(f"the operator returned complex values ({y.dtype}) for a real "
                                 f"vector: a complex system needs a complex b (b.astype(complex)"
                                 f") or a LinearOperator with dtype=complex, as in SciPy")
            if getattr(y, "size", None) != self.n:
                raise ValueError(f"the operator returned {getattr(y, 'shape', type(y))!r} for "
                                 f"a vector of {self.n}; it must return {self.n} values")
            out[...] = y.reshape(out.shape)
        else:
            out[...] = self.A @ p
        return out

    def matvec_dot(self, p, out) -> float:
        """out = A p; returns ``p^H A p`` (its real part: real for a Hermitian A)."""
        self.matvec(p, out)
        if out.dtype.kind == "c":
            return float((p.conj() * out).sum().real)
        return float((p * out).sum())

    def diagonal(self):
        if self.callable:
            raise ValueError("jacobi/chebyshev need the diagonal: give a matrix, not a function")
        return self.xp.asarray(self.A.diagonal())


def check_finite(A) -> None:
    """Refuse a CSR matrix (scipy or cupyx) with NaN or inf entries, naming how many and the
    first (one sum over the stored values; the entries are looked at only when it is not
    finite). Unchecked, AMG failed with "SVD did not converge" and 'direct' said "singular"."""
    data = A.data
    if not data.size or np.isfinite(abs(data.sum())):
        return
    if isinstance(data, np.ndarray):
        xp = np
    else:
        import cupy as xp  # a cupyx matrix: cupy is present
    bad = ~xp.isfinite(data)
    count = int(bad.sum())
    if count == 0:   # finite entries whose sum overflowed
        return
    k = int(xp.argmax(bad))
    indptr = to_numpy(A.indptr)
    row = int(np.searchsorted(indptr, k, side="right") - 1)
    col = int(to_numpy(A.indices[k:k + 1])[0])
    value = float(to_numpy(data[k:k + 1])[0])
    raise ValueError(f"the matrix has {count} non-finite entr{'y' if count == 1 else 'ies'} "
                     f"(NaN or inf), the first at row {row}, column {col}: {value!r}; "
                     f"check how it was assembled")


def matrix_on(A, xp):
    if xp is np:
        if sp.issparse(A):
            A = A.tocsr()
        else:
            A = sp.csr_matrix(np.asarray(A))
        want = np.complex128 if A.dtype.kind == "c" else np.float64
        if A.dtype != want:
            A = A.astype(want)
        return A
    check_real(getattr(A, "dtype", None), "the matrix", "complex systems are solved on the CPU "
               "(device='cpu')")
    import cupyx.scipy.sparse as csp  # GPU device: cupy is present

    from .cuda import device_csr  # float64 as on the CPU (cupyx refuses integer matrices)

    if csp.issparse(A):
        return device_csr(A)
    if hasattr(A, "__cuda_array_interface__"):  # a cupy dense array: no trip to the host
        return device_csr(csp.csr_matrix(A.astype(np.float64)))
    return device_csr(csp.csr_matrix(sp.csr_matrix(A).astype(np.float64)))


def host_csr(A):
    if sp.issparse(A):
        return A.tocsr()
    if hasattr(A, "get") and hasattr(A, "tocsr"):  # cupyx sparse
        return A.get().tocsr()
    return sp.csr_matrix(np.asarray(to_numpy(A)))  # np.asarray refuses a cupy array


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def grid_operator(problem: GridProblem, method: str, xp) -> GridOperator:
    """The operator of a grid problem; CG needs it symmetric (no convection)."""
    if not problem.symmetric and method in ("cg", "pipecg", "minres"):
        raise ValueError(f"method {method!r} needs a symmetric problem; convection makes "
                         "it non-symmetric: use 'bicgstab' or 'gmres'")
    return GridOperator(problem, xp)


def matrix_operator(system, n, xp) -> MatrixOperator:
    """A user's matrix, ``LinearOperator`` or callable (of size ``n``) checked and placed on
    the device of ``xp``."""
    if callable(system) and not hasattr(system, "shape"):
        if n is None:
            raise ValueError("a callable operator needs n=, the size of the system "
                             "(or give b to skiff.solve)")
        return MatrixOperator(system, _unknowns(n), xp)
    shape = getattr(system, "shape", None)
    if shape is None:
        raise ValueError(f"system must be a GridProblem, a sparse matrix, a dense 2D array, a "
                         f"LinearOperator or a callable, got {type(system).__name__} "
                         f"{_short(system)}")
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"the matrix must be square, got shape {shape!r}")
    if (not sp.issparse(system) and not _is_linear_operator(system)
            and not hasattr(system, "nnz")):
        arr = np.asarray(system)
        if arr.dtype == object or arr.ndim != 2:
            raise ValueError(f"system must be a GridProblem, a sparse matrix, a "
                             f"dense 2D array, a LinearOperator or a callable, got "
                             f"{type(system).__name__}")
    return MatrixOperator(system, _unknowns(shape[0]), xp)


def _unknowns(n) -> int:
    """The size of a user's system, refused when it is 0 (it failed in a numpy reduction)."""
    if int(n) < 1:
        raise ValueError(f"the system has {int(n)} unknowns (an empty matrix): there is "
                         f"nothing to solve")
    return int(n)


def asymmetry(op: MatrixOperator, rtol: float = SYMMETRY_RTOL) -> str | None:
    """Why the user's operator is not symmetric, or None when it is (to ``rtol``).

    Two random vectors first: ``u . A v`` against ``v . A u`` (two products, equal for a
    symmetric operator; the check costs a CG iteration, not a transpose). When they differ, a
    matrix is compared entry by entry with its transpose (O(nnz)) to name the largest
    difference; a function or ``LinearOperator`` is described by the two products."""
    xp = op.xp
    rng = np.random.default_rng(0)
    u = xp.asarray(rng.standard_normal(op.n))
    v = xp.asarray(rng.standard_normal(op.n))
    if getattr(op, "complex", False):   # Hermitian: u . A v = conj(v . A u) for real u, v
        au, av = op.matvec(u + 0j, xp.empty(op.n, complex)), op.matvec(v + 0j,
                                                                       xp.empty(op.n, complex))
        uav, vau = complex((u * av).sum()), complex((v * au).sum()).conjugate()
    else:
        au, av = op.matvec(u, xp.empty(op.n)), op.matvec(v, xp.empty(op.n))
        uav, vau = float((u * av).sum()), float((v * au).sum())
    scale = max(float(xp.linalg.norm(u)) * float(xp.linalg.norm(av)),
                float(xp.linalg.norm(v)) * float(xp.linalg.norm(au)))
    if not (np.isfinite(abs(uav)) and np.isfinite(abs(vau))) or abs(uav - vau) <= rtol * scale:
        return None
    if op.callable:
        vau_text = "conj(v . A u)" if getattr(op, "complex", False) else "v . A u"
        return f"u . A v = {uav:.6g} but {vau_text} = {vau:.6g} for random vectors u, v"
    A = op.A
    # scipy or cupyx: the differences stay where the matrix is; a complex one's from A^H
    D = (A - (A.conj().T if A.dtype.kind == "c" else A.T)).tocoo()
    if D.nnz == 0:
        return None
    gap = xp.abs(D.data)
    k = int(xp.argmax(gap))
    top = float(xp.abs(A.data).max())
    if float(gap[k]) <= rtol * top:
        return None
    i, j = int(D.row[k]), int(D.col[k])
    if A.dtype.kind == "c":
        return (f"A[{i}, {j}] - conj(A[{j}, {i}]) = {complex(D.data[k]):.3g}, with entries up "
                f"to {top:.3g} (not Hermitian)")
    return f"A[{i}, {j}] - A[{j}, {i}] = {float(D.data[k]):.3g}, with entries up to {top:.3g}"
