"""Round 35 (h7): what a pyamg user passes reaches the kernel entry; a stopped solve of
several right-hand sides keeps every column done; the classical prolongators share one row
count. Oracles: pyamg (its hierarchy's level sizes, its prolongator's pattern), SciPy's
``spsolve`` and sparse products."""

from __future__ import annotations

import numpy as np
import pyamg
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from pyamg.classical.interpolate import direct_interpolation as pyamg_direct

from skiff.kernels.backend.report import JobCancelled
from skiff.kernels.solve.amg_rs import (
    _direct_py,
    _interp_py,
    classical_interpolation,
    classical_strength,
    direct_interpolation,
    prolongator_rows,
    rs_split,
)
from skiff.kernels.solve.entry import amg_config, solve_system, solver_from_config
from skiff.kernels.solve.solver import Solver
from tests.helpers.stop_at import StopAtLook


def _levels(solver):
    return [lv[0].shape[0] for lv in solver.M.amg.levels]


def test_pyamg_keywords_in_a_config_build_pyamgs_hierarchy():
    A = pyamg.gallery.poisson((40, 40), format="csr")
    ml = pyamg.ruge_stuben_solver(A, strength=("classical", {"theta": 0.5}), max_coarse=10,
                                  interpolation="direct")
    config = {"method": "cg", "precond": "amg", "strength": ("classical", {"theta": 0.5}),
              "max_coarse": 10, "interpolation": "direct", "amg_options": {"order": "pyamg"}}
    solver = solver_from_config(A, config)
    assert "classical" in solver.describe() and "theta 0.5" in solver.describe()
    assert _levels(solver) == [lv.A.shape[0] for lv in ml.levels]
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    sol = solver.solve(b, rtol=1e-10)
    np.testing.assert_allclose(sol.x, sla.spsolve(A.tocsc(), b), rtol=0, atol=1e-7)


def test_cf_second_pass_and_sweeps_reach_classical_amg():
    A = pyamg.gallery.poisson((30, 30), format="csr")
    amg, options, smoother, interp = amg_config(
        {"CF": ("RS", {"second_pass": True}),
         "presmoother": ("gauss_seidel", {"sweep": "symmetric", "iterations": 2}),
         "postsmoother": ("gauss_seidel", {"sweep": "symmetric", "iterations": 2})})
    assert amg == "classical" and options == {"second_pass": True, "sweeps": 2}
    one = solver_from_config(A, {"method": "cg", "precond": "amg", "amg": "classical"})
    two = solver_from_config(A, {"method": "cg", "precond": "amg", "CF": ("RS", {
        "second_pass": True}), "presmoother": ("gauss_seidel", {"iterations": 2})})
    assert two.M.amg.degree == 4 and one.M.amg.degree == 2 and two.M.amg.second_pass
    b = np.ones(A.shape[0])
    s1, s2 = one.solve(b, rtol=1e-10), two.solve(b, rtol=1e-10)
    assert s2.iterations <= s1.iterations   # two sweeps a side converge no slower
    ref = sla.spsolve(A.tocsc(), b)
    np.testing.assert_allclose(s2.x, ref, atol=1e-7 * np.abs(ref).max())


def test_sa_strength_and_smoother_from_pyamg_names():
    A = pyamg.gallery.poisson((30, 30), format="csr")
    amg, options, smoother, _ = amg_config({"strength": ("symmetric", {"theta": 0.1}),
                                            "presmoother": "gauss_seidel", "max_coarse": 50})
    assert (amg, smoother) == ("sa", "gauss-seidel")
    s = solver_from_config(A, {"method": "cg", "precond": "amg",
                               "strength": ("symmetric", {"theta": 0.1}),
                               "presmoother": "gauss_seidel", "max_coarse": 50})
    assert "Gauss-Seidel" in s.describe() and s.M.amg.coarse_n <= 50
    b = np.ones(A.shape[0])
    np.testing.assert_allclose(s.solve(b, rtol=1e-10).x, sla.spsolve(A.tocsc(), b),
                               rtol=1e-7)
    # SA's threshold is pyamg's strength tuple; a bare theta stays classical AMG's
    with pytest.raises(ValueError, match=r"strength=\('symmetric', \{'theta': t\}\)"):
        Solver(A, precond="amg", amg="sa", amg_options={"theta": 0.5})
    with pytest.raises(ValueError, match="presmoother .* differ"):
        amg_config({"presmoother": "gauss_seidel", "postsmoother": "jacobi"})
    with pytest.raises(ValueError, match="'PMIS' \\(pyamg's names; no PMISc"):
        amg_config({"CF": "PMISc"})


def test_near_nullspace_and_grid_interpolation_through_the_entry(tmp_path):
    A, B = pyamg.gallery.linear_elasticity((24, 24))
    A = A.tocsr()
    np.save(tmp_path / "B.npy", B)
    np.savez(tmp_path / "modes.npz", B=B)
    b = np.random.default_rng(1).standard_normal(A.shape[0])
    direct = Solver(A, method="cg", precond="amg", near_nullspace=B)
    for path in (tmp_path / "B.npy", tmp_path / "modes.npz"):
        s = solver_from_config(A, {"method": "cg", "precond": "amg",
                                   "near_nullspace": str(path)})
        assert s.describe() == direct.describe()
        assert s.near_nullspace is not None and s.near_nullspace.shape == (A.shape[0], 3)
    sol = solve_system(A, b, {"method": "cg", "precond": "amg",
                              "near_nullspace": str(tmp_path / "B.npy"), "rtol": 1e-10})
    np.testing.assert_allclose(sol.x, sla.spsolve(A.tocsc(), b), atol=1e-7)
    # Solver's interpolation= (geometric multigrid on a grid) from the same key
    assert amg_config({"interpolation": "constant"})[3] == "constant"


def test_a_stopped_multi_column_solve_keeps_every_column_done():
    n = 300
    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    B = np.column_stack([np.sin(np.arange(n) * 0.1 * (c + 1)) + 1.0 for c in range(4)])
    first = Solver(A, method="cg", precond="jacobi").solve(B[:, 0])
    looks = StopAtLook(10 ** 9)
    Solver(A, method="cg", precond="jacobi").solve(B[:, 0], reporter=looks)
    per_column = looks.looks   # the looks one column's solve takes
    with pytest.raises(JobCancelled) as info:
        Solver(A, method="cg", precond="jacobi").solve(
            B, reporter=StopAtLook(2 * per_column + per_column // 3))
    exc = info.value
    X = exc.arrays["x"]
    assert X.shape == (n, 4) and int(exc.arrays["columns_done"]) == 2
    ref = sla.spsolve(A.tocsc(), B)
    for c in range(2):   # the columns done: SciPy's x
        np.testing.assert_allclose(X[:, c], ref[:, c], atol=1e-6 * np.abs(ref[:, c]).max())
    rel = [np.linalg.norm(B[:, c] - A @ X[:, c]) / np.linalg.norm(B[:, c]) for c in range(4)]
    assert rel[2] > 1e-6 and np.all(X[:, 3] == 0.0)   # the current iterate; one not started
    part = exc.partial
    assert part["columns"] == 4 and part["columns_done"] == 2
    np.testing.assert_allclose(part["column_residuals"][:3], rel[:3], rtol=1e-6, atol=1e-14)
    assert part["column_iterations"][0] == first.iterations
    # a warm start from the kept x goes on with every column
    sol = Solver(A, method="cg", precond="jacobi").solve(B, x0=X)
    assert sol.columns[0].iterations == 0 and sol.converged
    np.testing.assert_allclose(sol.x, ref, atol=1e-6 * np.abs(ref).max())


@pytest.mark.parametrize("theta", [0.25, 0.5])
def test_the_shared_row_count_is_pyamgs_pattern(theta):
    A = pyamg.gallery.poisson((25, 25), format="csr")
    rng = np.random.default_rng(3)
    off = sp.triu(A, 1).tocoo()   # a non-uniform M-matrix: random weights on the edges
    W = sp.coo_matrix((off.data * 10.0 ** rng.uniform(-1, 1, off.nnz), (off.row, off.col)),
                      shape=A.shape)
    W = W + W.T
    A = sp.csr_matrix(W - sp.diags(np.asarray(W.sum(axis=1)).ravel() - 0.01))
    S = classical_strength(A, theta)
    split = rs_split(S)
    pptr = prolongator_rows(S, split)
    from skiff.kernels.solve.amg_rs import _rows_py

    np.testing.assert_array_equal(prolongator_rows(S, split, kernel=_rows_py), pptr)
    Spy = pyamg.strength.classical_strength_of_connection(A, theta=theta)
    Ppy = pyamg_direct(A, Spy, split.astype(np.int32))
    np.testing.assert_array_equal(pptr, sp.csr_matrix(Ppy).indptr)
    for fn, twin in ((direct_interpolation, _direct_py),
                     (classical_interpolation, _interp_py)):
        P, Ptwin = fn(A, S, split), fn(A, S, split, kernel=twin)
        np.testing.assert_array_equal(P.indptr, pptr)
        np.testing.assert_array_equal(P.indices, Ptwin.indices)
        np.testing.assert_allclose(P.data, Ptwin.data, rtol=1e-15, atol=0)
    np.testing.assert_allclose(direct_interpolation(A, S, split).toarray(), Ppy.toarray(),
                               atol=1e-14)


def test_pmis_is_pyamgs_independent_set_on_the_same_weights():
    from pyamg.classical.split import MIS, _preprocess
    from pyamg.util.utils import remove_diagonal

    from skiff.kernels.solve.amg_rs import _pmis_py, pmis_split, pmis_weights

    A = pyamg.gallery.poisson((14, 14, 14), format="csr")
    S = classical_strength(A)
    w = pmis_weights(S, seed=4)
    mine = pmis_split(S, w)
    _, G, _, _ = _preprocess(remove_diagonal(
        pyamg.strength.classical_strength_of_connection(A, theta=0.25)))
    ref = MIS(G, w.copy())
    ref[np.diff(G.indptr) == 0] = 0   # pyamg's PMIS: a point with no connection is F
    np.testing.assert_array_equal(mine, ref)
    np.testing.assert_array_equal(pmis_split(S, w, kernel=_pmis_py), mine)


def test_pmis_solves_as_pyamgs_does():
    A = pyamg.gallery.poisson((20, 20, 20), format="csr")
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    np.random.seed(0)
    ml = pyamg.ruge_stuben_solver(A, CF="PMIS", max_coarse=10)
    res = []
    ml.solve(b, tol=1e-8, accel="cg", residuals=res)
    s = solver_from_config(A, {"method": "cg", "precond": "amg", "CF": "PMIS",
                               "max_coarse": 10})
    assert "PMIS" in s.describe()
    sol = s.solve(b, rtol=1e-10)
    its = s.solve(b, rtol=1e-8).iterations
    assert abs(its - (len(res) - 1)) <= 3   # pyamg's iterations, within a small margin
    mine = _levels(s)
    theirs = [lv.A.shape[0] for lv in ml.levels]
    # the first levels' sizes (the random weights differ from pyamg's): to 2 %, then 15 %
    assert abs(mine[1] - theirs[1]) <= 0.02 * theirs[1]
    assert abs(mine[2] - theirs[2]) <= 0.15 * theirs[2]
    assert s.M.amg.operator_complexity == pytest.approx(ml.operator_complexity(), rel=0.05)
    ref = sla.spsolve(A.tocsc(), b)
    np.testing.assert_allclose(sol.x, ref, atol=1e-7 * np.abs(ref).max())


def _rotated(eps, degrees, n):
    stencil = pyamg.gallery.diffusion_stencil_2d(eps, degrees * np.pi / 180, "FD")
    return sp.csr_matrix(pyamg.gallery.stencil_grid(stencil, (n, n), format="csr"))


def _lognormal(n, seed=0):
    from scipy.ndimage import gaussian_filter

    from skiff.kernels.solve.problems import diffusion

    g = gaussian_filter(np.random.default_rng(seed).standard_normal((n, n)), 3)
    return sp.csr_matrix(diffusion((n, n), 10 ** (2 * g / g.std())).matrix())


def test_front_order_is_pyamgs_splitting_where_every_point_has_a_dependant():
    from pyamg.classical.split import RS

    A = _rotated(1e-2, 60, 40)
    S = classical_strength(A)
    ref = RS(pyamg.strength.classical_strength_of_connection(A, theta=0.25))
    np.testing.assert_array_equal(rs_split(S, order="front"), ref)
    np.testing.assert_array_equal(rs_split(S, order="pyamg"), ref)


def test_front_order_solves_as_pyamg_on_rotated_anisotropy_and_better_on_lognormal():
    """The default first-pass order (round 35): pyamg's iterations on pyamg's gallery's
    rotated anisotropy (round 33's lowest-index order took 33 against 14), and none of
    pyamg's stall on log-normal coefficients (its F points that depend on others but that
    no point depends on are left with nothing to interpolate from)."""
    for A, cap in ((_rotated(1e-3, 30, 100), None), (_lognormal(128), 20)):
        b = np.random.default_rng(0).standard_normal(A.shape[0])
        ml = pyamg.ruge_stuben_solver(A, max_coarse=400)
        res = []
        ml.solve(b, tol=1e-8, accel="cg", residuals=res, maxiter=200)
        s = Solver(A, method="cg", precond="amg", amg="classical")
        sol = s.solve(b, rtol=1e-8)
        lowest = Solver(A, method="cg", precond="amg", amg="classical",
                        amg_options={"order": "lowest"}).solve(b, rtol=1e-8).iterations
        if cap is None:
            assert sol.iterations <= len(res) - 1 + 1 and sol.iterations < lowest - 5
        else:
            assert sol.iterations <= cap and len(res) - 1 >= 2 * sol.iterations
        ref = sla.spsolve(A.tocsc(), b)
        np.testing.assert_allclose(sol.x, ref, atol=1e-6 * np.abs(ref).max())


def test_extended_interpolation_is_the_harmonic_one_two_points_away():
    """1-D Laplacian split C F F C F F C: an F point's one strong C neighbour is at distance
    one, the other at distance two (through its F neighbour); extended+i's weights are the
    exact (linear, harmonic) interpolant 2/3, 1/3, where distance-one classical
    interpolation reaches only the near C point."""
    from skiff.kernels.solve.amg_rs import _extended_py, extended_interpolation

    n = 7
    A = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    S = classical_strength(A)
    split = np.array([1, 0, 0, 1, 0, 0, 1], dtype=np.int64)
    P = extended_interpolation(A, S, split).toarray()
    want = np.zeros((n, 3))
    want[0, 0] = want[3, 1] = want[6, 2] = 1.0
    want[1, :2] = [2 / 3, 1 / 3]
    want[2, :2] = [1 / 3, 2 / 3]
    want[4, 1:] = [2 / 3, 1 / 3]
    want[5, 1:] = [1 / 3, 2 / 3]
    np.testing.assert_allclose(P, want, atol=1e-15)
    np.testing.assert_array_equal(
        extended_interpolation(A, S, split, kernel=_extended_py).toarray(), P)
    assert np.count_nonzero(classical_interpolation(A, S, split).toarray()[1]) == 1


def test_extended_interpolation_with_pmis_keeps_constants_and_converges():
    from skiff.kernels.solve.amg_rs import extended_interpolation, pmis_split, truncate_rows

    A = pyamg.gallery.poisson((16, 16, 16), format="csr")
    S = classical_strength(A)
    split = pmis_split(S)
    full = extended_interpolation(A, S, split, max_elements=0)
    P = extended_interpolation(A, S, split)   # at most 4 a row (hypre's P_max_elmts)
    zero_sum = np.abs(np.asarray(A.sum(axis=1)).ravel()) < 1e-12
    for Q in (full, P):   # a row of zero sum interpolates the constant exactly
        np.testing.assert_allclose((Q @ np.ones(Q.shape[1]))[zero_sum], 1.0, atol=1e-13)
    assert np.diff(P.indptr).max() <= 4 < np.diff(full.indptr).max()
    np.testing.assert_allclose(P @ np.ones(P.shape[1]), full @ np.ones(full.shape[1]),
                               atol=1e-13)   # truncation keeps each row's sum
    assert truncate_rows(full, 100).nnz == full.nnz
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    its = {}
    for interp in ("classical", "extended+i"):
        s = solver_from_config(A, {"method": "cg", "precond": "amg", "CF": "PMIS",
                                   "interpolation": interp})
        sol = s.solve(b, rtol=1e-10)
        its[interp] = sol.iterations
        ref = sla.spsolve(A.tocsc(), b)
        np.testing.assert_allclose(sol.x, ref, atol=1e-7 * np.abs(ref).max())
    assert its["extended+i"] * 1.5 <= its["classical"]


def test_aggressive_coarsening_skips_a_level_and_cuts_the_complexity():
    A = pyamg.gallery.poisson((18, 18, 18), format="csr")
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    plain = Solver(A, method="cg", precond="amg", amg="classical",
                   amg_options={"max_coarse": 50})
    agg = solver_from_config(A, {"method": "cg", "precond": "amg", "amg": "classical",
                                 "amg_options": {"aggressive": 1, "max_coarse": 50}})
    assert "aggressive coarsening on 1 level" in agg.describe()
    # the two-stage level is the plain hierarchy's level after next (the same splittings)
    assert _levels(agg)[1] == _levels(plain)[2]
    assert agg.M.amg.operator_complexity < 0.6 * plain.M.amg.operator_complexity
    s0, s1 = plain.solve(b, rtol=1e-10), agg.solve(b, rtol=1e-10)
    assert s1.iterations <= s0.iterations + 3
    ref = sla.spsolve(A.tocsc(), b)
    np.testing.assert_allclose(s1.x, ref, atol=1e-7 * np.abs(ref).max())


def test_a_bad_cf_or_aggressive_is_refused_before_any_setup():
    A = pyamg.gallery.poisson((8, 8), format="csr")
    with pytest.raises(ValueError, match=r"unknown amg_options cf \(pyamg's CF=; no PMISc"):
        Solver(A, precond="amg", amg="classical", amg_options={"cf": "CLJP"})
    with pytest.raises(ValueError, match="aggressive: the number of levels"):
        Solver(A, precond="amg", amg="classical", amg_options={"aggressive": -1})
