"""Classical (Ruge-Stueben) AMG (round 33, ``amg_rs.py``, ``Solver(amg='classical')``) against
pyamg's ``ruge_stuben_solver`` (same strength threshold 0.25) and SciPy's ``spsolve``."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.linalg import cg, spsolve

pyamg = pytest.importorskip("pyamg")

from pyamg.classical.interpolate import classical_interpolation as pyamg_interp  # noqa: E402
from pyamg.classical.split import RS  # noqa: E402
from pyamg.strength import classical_strength_of_connection  # noqa: E402

from skiff.kernels.solve.amg_rs import (  # noqa: E402
    RugeStuben,
    _interp_py,
    _rs_py,
    classical_interpolation,
    classical_strength,
    rs_split,
)
from skiff.kernels.solve.solver import Solver, solve  # noqa: E402


def _cells(n, dim, fraction=0.3, high=1e6, seed=0):
    """Cell-centred finite volumes on an n^dim grid, a fraction of the cells at ``high``,
    harmonic face means, Dirichlet 0 outside (an M-matrix with jumps)."""
    k = np.where(np.random.default_rng(seed).random((n,) * dim) < fraction, high, 1.0)
    N = n ** dim
    idx = np.arange(N).reshape((n,) * dim)
    rows, cols, vals, diag = [], [], [], np.zeros(N)
    for ax in range(dim):
        a, i = np.moveaxis(k, ax, 0), np.moveaxis(idx, ax, 0)
        t = (2 * a[1:] * a[:-1] / (a[1:] + a[:-1])).ravel()
        p, q = i[1:].ravel(), i[:-1].ravel()
        rows += [p, q]
        cols += [q, p]
        vals += [-t, -t]
        np.add.at(diag, p, t)
        np.add.at(diag, q, t)
        np.add.at(diag, i[0].ravel(), 2 * a[0].ravel())
        np.add.at(diag, i[-1].ravel(), 2 * a[-1].ravel())
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(N, N)) + sp.diags(diag)
    return A.tocsr()


CASES = {
    "poisson2d": lambda: pyamg.gallery.poisson((60, 60), format="csr"),
    "poisson3d": lambda: pyamg.gallery.poisson((16, 16, 16), format="csr"),
    "rotated": lambda: pyamg.gallery.stencil_grid(
        pyamg.gallery.diffusion_stencil_2d(1e-3, np.pi / 6), (60, 60), format="csr"),
    "jump2d": lambda: _cells(60, 2, high=1e4),
    "cells3d": lambda: _cells(14, 3),
}


def _pattern(S):
    S = sp.csr_matrix(S, copy=True)
    S.setdiag(0)
    S.eliminate_zeros()
    S.data[:] = 1
    return S


def _cg_its(A, b, M):
    k = [0]
    x, info = cg(A, b, M=M, rtol=1e-8, maxiter=300,
                 callback=lambda xk: k.__setitem__(0, k[0] + 1))
    assert info == 0
    return k[0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_strength_matches_pyamg(case):
    A = sp.csr_matrix(CASES[case]())
    S = classical_strength(A, 0.25)
    ref = _pattern(classical_strength_of_connection(A, theta=0.25))
    assert (abs(_pattern(S) - ref)).nnz == 0


@pytest.mark.parametrize("case", sorted(CASES))
def test_split_twin_and_interpolation_match_pyamg(case):
    A = sp.csr_matrix(CASES[case]())
    S = classical_strength(A, 0.25)
    split = rs_split(S)
    # the numba kernel and its Python twin: the same splitting, the same P
    assert np.array_equal(split, rs_split(S, kernel=_rs_py))
    P = classical_interpolation(A, S, split)
    Ppy = classical_interpolation(A, S, split, kernel=_interp_py)
    assert abs(P - Ppy).max() == 0
    # a C/F splitting: every F point with a strong connection depends on a C point
    for i in np.flatnonzero(split == 0)[:500]:
        nb = S.indices[S.indptr[i]:S.indptr[i + 1]]
        assert nb.size == 0 or split[nb].any()
    # as many C points as pyamg's splitting (ties broken otherwise) within 3 %
    ref_split = RS(_pattern(classical_strength_of_connection(A, theta=0.25)))
    assert abs(int(split.sum()) - int(ref_split.sum())) <= 0.03 * ref_split.sum()
    # on pyamg's splitting, pyamg's modified classical interpolation (these M-matrices'
    # strong F-F pairs share a C point, where the two differ: see amg_rs._interp_py)
    Sp = _pattern(classical_strength_of_connection(A, theta=0.25))
    mine = classical_interpolation(A, Sp, ref_split.astype(np.int64))
    theirs = sp.csr_matrix(pyamg_interp(A, Sp, ref_split.astype("intc"), modified=True))
    assert abs(mine - theirs).max() < 1e-12
    # interpolation keeps the constant in the interior (zero row sums): rows of P sum to 1
    interior = np.flatnonzero(np.abs(np.asarray(A.sum(axis=1)).ravel()) < 1e-12 *
                              np.abs(A.diagonal()))
    sums = np.asarray(P.sum(axis=1)).ravel()[interior]
    assert np.allclose(sums, 1.0, atol=1e-12) or case == "rotated"


@pytest.mark.parametrize("case", sorted(CASES))
def test_hierarchy_and_iterations_close_to_pyamg(case):
    A = sp.csr_matrix(CASES[case]())
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    ml = pyamg.ruge_stuben_solver(A, max_coarse=10)
    rs = RugeStuben(A, max_coarse=10)
    theirs = [lv.A.shape[0] for lv in ml.levels]
    mine = [lv[0].shape[0] for lv in rs.levels]
    for a, c in zip(mine[:3], theirs[:3]):   # the first levels' sizes within 10 %
        assert abs(a - c) <= 0.1 * c, (mine, theirs)
    assert abs(rs.operator_complexity - ml.operator_complexity()) < 0.15
    its, ref = _cg_its(A, b, rs.aspreconditioner()), _cg_its(A, b, ml.aspreconditioner())
    assert its <= ref + 2, (its, ref)


def test_solver_classical_against_spsolve():
    A = _cells(12, 3)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    ref = spsolve(A.tocsc(), b)
    sol = Solver(A, amg="classical").solve(b, rtol=1e-11)
    assert sol.converged and sol.iterations <= 20
    assert np.abs(sol.x - ref).max() <= 1e-8 * np.abs(ref).max()
    assert "Ruge-Stueben" in Solver(A, amg="classical").describe()
    # skiff.solve passes it through
    assert np.abs(solve(A, b, amg="classical", rtol=1e-11).x - ref).max() <= 1e-8 * np.abs(
        ref).max()


def test_classical_non_symmetric_gmres():
    n = 40
    L = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    C = sp.diags([-1.0, 1.0], [-1, 0], shape=(n, n)) * 0.5
    A = (sp.kron(L, sp.eye(n)) + sp.kron(sp.eye(n), L) + sp.kron(sp.eye(n), C)).tocsr()
    b = np.ones(n * n)
    sol = solve(A, b, amg="classical", precond="amg", rtol=1e-10)
    assert sol.converged and sol.iterations <= 15
    ref = spsolve(A.tocsc(), b)
    assert np.abs(sol.x - ref).max() <= 1e-7 * np.abs(ref).max()


@pytest.mark.parametrize("kw, words", [
    (dict(amg="rs"), "unknown amg"),
    (dict(amg="classical", precond="jacobi"), "use precond='amg'"),
    (dict(amg="classical", near_nullspace="ones"), "no near_nullspace"),
])
def test_classical_refusals_name_the_fix(kw, words):
    A = _cells(6, 3)
    if kw.get("near_nullspace") == "ones":
        kw = {**kw, "near_nullspace": np.ones(A.shape[0])}
    with pytest.raises(ValueError, match=words):
        Solver(A, **kw)
    with pytest.raises(ValueError, match="real matrices"):
        Solver(A.astype(complex), amg="classical")


def _lognormal(n, decades=2.0, seed=0):
    from scipy.ndimage import gaussian_filter

    g = gaussian_filter(np.random.default_rng(seed).standard_normal((n, n)), 3)
    return (g - g.mean()) / g.std() * decades


def _fv2(logk):
    """_cells' finite volumes for a given log10 coefficient field (2-D)."""
    k = 10.0 ** logk
    n = k.shape[0]
    idx = np.arange(n * n).reshape(n, n)
    rows, cols, vals, diag = [], [], [], np.zeros(n * n)
    for ax in range(2):
        a, i = np.moveaxis(k, ax, 0), np.moveaxis(idx, ax, 0)
        t = (2 * a[1:] * a[:-1] / (a[1:] + a[:-1])).ravel()
        p, q = i[1:].ravel(), i[:-1].ravel()
        rows += [p, q]
        cols += [q, p]
        vals += [-t, -t]
        np.add.at(diag, p, t)
        np.add.at(diag, q, t)
        np.add.at(diag, i[0].ravel(), 2 * a[0].ravel())
        np.add.at(diag, i[-1].ravel(), 2 * a[-1].ravel())
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n * n, n * n)) + sp.diags(diag)
    return A.tocsr()


def _pyamg_rs_its(A, b):
    res = []
    pyamg.ruge_stuben_solver(A).solve(b, tol=1e-8, accel="cg", residuals=res, maxiter=500)
    return len(res) - 1


@pytest.mark.parametrize("case", ["cells3d", "cells2d_1e3", "lognormal"])
def test_auto_takes_classical_for_heterogeneous_diffusion(case):
    A = {"cells3d": lambda: _cells(14, 3),
         "cells2d_1e3": lambda: _cells(80, 2, high=1e3),
         "lognormal": lambda: _fv2(_lognormal(80))}[case]()
    b = np.random.default_rng(3).standard_normal(A.shape[0])
    sol = solve(A, b, rtol=1e-8)
    assert "Ruge-Stueben" in sol.info["solver"] and "contrast" in sol.info["solver"]
    assert sol.iterations <= _pyamg_rs_its(A, b) + 2
    # smoothed aggregation (the choice before) takes more iterations on these
    sa = Solver(A, amg="sa").solve(b, rtol=1e-8)
    assert "smoothed aggregation" in sa.info["solver"] and sa.iterations >= sol.iterations
    ref = spsolve(A.tocsc(), b)
    assert np.linalg.norm(sol.x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_auto_keeps_smoothed_aggregation_elsewhere():
    n = 40
    L = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    L2 = (sp.kron(L, sp.eye(n)) + sp.kron(sp.eye(n), L)).tocsr()
    D = sp.diags(10.0 ** np.random.default_rng(0).uniform(-3, 3, n * n))
    scaled = (D @ L2 @ D).tocsr()   # an M-matrix, rows not diagonally dominant
    positive = (L2 + 0.1 * sp.diags([1.0, 1.0], [-n - 1, n + 1], shape=(n * n, n * n))
                ).tocsr()   # positive off-diagonal entries (P2's, obtuse P1's)
    for A in (L2, scaled, positive):
        b = np.ones(A.shape[0])
        sol = solve(A, b, method="cg", precond="amg", rtol=1e-8)
        assert "smoothed aggregation" in sol.info["solver"], sol.info["solver"]


def test_auto_classical_pure_neumann_cells():
    """A singular (pure Neumann) heterogeneous diffusion with a compatible b: classical AMG's
    coarsest level gets the pseudo-inverse; x matches the grounded system's solve."""
    n = 30
    A = _cells(n, 2, high=1e5)
    A = (A - sp.diags(np.asarray(A.sum(axis=1)).ravel())).tocsr()   # rows sum to zero
    b = np.random.default_rng(1).standard_normal(n * n)
    b -= b.mean()
    sol = solve(A, b, rtol=1e-9, compatibility="project")
    assert "Ruge-Stueben" in sol.info["solver"] and sol.converged
    ref = np.zeros(n * n)
    ref[1:] = spsolve(A[1:, 1:].tocsc(), b[1:])   # grounded at 0, then both mean-free
    x = np.asarray(sol.x) - np.mean(sol.x)
    ref -= ref.mean()
    assert np.linalg.norm(x - ref) <= 1e-6 * np.linalg.norm(ref)
