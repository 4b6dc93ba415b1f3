"""Round 34 (h7): what a pyamg user reaches for first in classical AMG.

``RugeStuben(A, second_pass=True)`` (pyamg's ``CF=('RS', {'second_pass': True})``),
``interpolation='direct'`` (pyamg's ``interpolation='direct'``) and ``order='pyamg'`` (the
first pass in pyamg's order). Oracles: pyamg's own kernels on the same input (the second
pass, direct interpolation and the first pass bit for bit), ``pyamg.ruge_stuben_solver``
(level sizes, CG iterations), and SciPy's ``spsolve`` for the answers."""

from __future__ import annotations

import numpy as np
import pyamg
import pytest
import scipy.sparse as sp
from pyamg import amg_core
from pyamg.classical.interpolate import direct_interpolation as pyamg_direct
from scipy.sparse.linalg import cg, spsolve

from skiff.kernels.solve import solve
from skiff.kernels.solve.amg_rs import (
    RugeStuben,
    _direct_py,
    _pass2_py,
    _rs_pyamg_py,
    classical_strength,
    direct_interpolation,
    rs_split,
)


def _cells(n=14, frac=0.3, high=1e6, seed=1):
    """3-D finite volumes, a random share of the cells at ``high`` (harmonic means)."""
    k = np.where(np.random.default_rng(seed).random((n, n, n)) < frac, high, 1.0).ravel()
    idx = np.arange(n ** 3).reshape(n, n, n)
    rows, cols, vals = [], [], []
    for ax in range(3):
        a = np.take(idx, range(n - 1), axis=ax).ravel()
        b = np.take(idx, range(1, n), axis=ax).ravel()
        w = 2 * k[a] * k[b] / (k[a] + k[b])
        rows += [a, b]
        cols += [b, a]
        vals += [-w, -w]
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(n ** 3, n ** 3))
    return (A + sp.diags(-np.asarray(A.sum(1)).ravel() + 1e-3 * k)).tocsr()


CASES = {
    "poisson": lambda: pyamg.gallery.poisson((60, 60), format="csr"),
    "rotated": lambda: pyamg.gallery.stencil_grid(
        pyamg.gallery.diffusion_stencil_2d(epsilon=1e-3, theta=np.pi / 6), (60, 60),
        format="csr"),
    "poisson3d": lambda: pyamg.gallery.poisson((14, 14, 14), format="csr"),
    "cells3d": _cells,
}


def _pyamg_s(A):
    return pyamg.strength.classical_strength_of_connection(A, theta=0.25)


@pytest.mark.parametrize("case", sorted(CASES))
def test_kernels_equal_pyamgs_on_the_same_input(case):
    A = sp.csr_matrix(CASES[case](), dtype=float)
    S = classical_strength(A)
    i64 = np.int64
    first = rs_split(S)
    # the second pass, step for step: pyamg's C++ on the same first pass
    ref = first.astype(np.int32)
    amg_core.rs_cf_splitting_pass2(A.shape[0], S.indptr.astype(np.int32),
                                   S.indices.astype(np.int32), ref)
    mine = rs_split(S, second_pass=True)
    assert np.array_equal(mine, ref)
    assert mine.sum() >= first.sum()
    twin = _pass2_py(S.indptr.astype(i64), S.indices.astype(i64), first.copy())
    assert np.array_equal(twin, mine)                  # the numba kernel and its twin
    # direct interpolation on that splitting: pyamg's P
    P = direct_interpolation(A, S, mine)
    Pref = pyamg_direct(A, _pyamg_s(A), mine.astype(np.int32))
    assert P.shape == Pref.shape and abs(P - Pref).max() <= 1e-14
    Ptwin = direct_interpolation(A, S, mine, kernel=_direct_py)
    assert abs(P - Ptwin).max() == 0
    # the first pass in pyamg's order: pyamg's RS bit for bit (numba and the twin)
    pyamg_first = pyamg.classical.split.RS(_pyamg_s(A))
    assert np.array_equal(rs_split(S, order="pyamg"), pyamg_first)
    assert np.array_equal(rs_split(S, kernel=_rs_pyamg_py), pyamg_first)
    assert np.array_equal(rs_split(S, order="pyamg", second_pass=True),
                          pyamg.classical.split.RS(_pyamg_s(A), second_pass=True))


def _cg_its(A, b, M):
    its = [0]
    x, info = cg(A, b, M=M, rtol=1e-8, maxiter=500,
                 callback=lambda _: its.__setitem__(0, its[0] + 1))
    assert info == 0
    return its[0], x


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("second_pass,interpolation", [(True, "classical"),
                                                        (False, "direct"),
                                                        (True, "direct")])
def test_hierarchy_and_iterations_as_pyamgs(case, second_pass, interpolation):
    A = sp.csr_matrix(CASES[case](), dtype=float)
    b = np.random.default_rng(0).standard_normal(A.shape[0])
    ml = pyamg.ruge_stuben_solver(A, CF=("RS", {"second_pass": second_pass}),
                                  interpolation=interpolation, max_coarse=10)
    res = []
    ml.solve(b, tol=1e-8, accel="cg", residuals=res, maxiter=500)
    ref_its = len(res) - 1
    theirs = [lv.A.shape[0] for lv in ml.levels]
    rs = RugeStuben(A, max_coarse=10, second_pass=second_pass, interpolation=interpolation,
                    order="pyamg")
    mine = [lv[0].shape[0] for lv in rs.levels]
    if interpolation == "direct":     # the same kernels all the way: the same hierarchy
        assert mine == theirs[:len(mine)], (mine, theirs)
    else:   # classical: skiff keeps a shared-C-less F-F entry on the diagonal, pyamg drops it
        assert mine[:2] == theirs[:2]
        for a, c in zip(mine[2:], theirs[2:]):
            assert abs(a - c) <= 0.15 * c + 3, (mine, theirs)
    its, x = _cg_its(A, b, rs.aspreconditioner())
    assert its <= ref_its + 1, (its, ref_its)
    # and the default order: within a small margin of pyamg
    its2, _ = _cg_its(A, b, RugeStuben(A, max_coarse=10, second_pass=second_pass,
                                       interpolation=interpolation).aspreconditioner())
    assert its2 <= ref_its + 4, (its2, ref_its)
    ref = spsolve(A.tocsc(), b)
    assert np.linalg.norm(x - ref) <= 1e-6 * np.linalg.norm(ref)


def test_second_pass_cuts_iterations_on_contrast():
    A = _cells(16)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    plain, _ = _cg_its(A, b, RugeStuben(A).aspreconditioner())
    rs2 = RugeStuben(A, second_pass=True)
    second, _ = _cg_its(A, b, rs2.aspreconditioner())
    assert second < plain
    assert "second pass" in rs2.describe()
    # as skiff.solve's own preconditioner (precond=M), against spsolve
    sol = solve(A, b, precond=rs2.aspreconditioner(), rtol=1e-10)
    ref = spsolve(A.tocsc(), b)
    assert sol.converged and np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)


def test_unknown_options_are_named():
    A = pyamg.gallery.poisson((20, 20), format="csr")
    with pytest.raises(ValueError, match="interpolation must be one of"):
        RugeStuben(A, interpolation="standard")
    with pytest.raises(ValueError, match="order must be one of"):
        RugeStuben(A, order="random")
    assert "direct interpolation" in RugeStuben(A, interpolation="direct").describe()


def test_amg_options_through_solve():
    A = _cells(16)
    b = np.random.default_rng(2).standard_normal(A.shape[0])
    ref = spsolve(A.tocsc(), b)
    plain = solve(A, b, amg="classical", rtol=1e-10)
    two = solve(A, b, amg="classical", amg_options={"second_pass": True}, rtol=1e-10)
    assert "second pass" in two.info["solver"] and two.iterations < plain.iterations
    direct = solve(A, b, amg="classical", rtol=1e-10,
                   amg_options={"interpolation": "direct", "order": "pyamg"})
    assert "direct interpolation" in direct.info["solver"]
    for sol in (plain, two, direct):
        assert sol.converged and np.linalg.norm(sol.x - ref) <= 1e-7 * np.linalg.norm(ref)
    with pytest.raises(ValueError, match="pass amg='classical'"):
        solve(A, b, amg_options={"second_pass": True})
    with pytest.raises(ValueError, match=r"unknown option\(s\) 'CF'.*second_pass"):
        solve(A, b, amg="classical", amg_options={"CF": ("RS", {"second_pass": True})})


def test_a_jobs_config_carries_amg_options():
    from skiff.kernels.solve.entry import solver_from_config

    A = _cells(12)
    s = solver_from_config(A, {"method": "cg", "precond": "amg", "amg": "classical",
                               "amg_options": {"second_pass": True}})
    assert "second pass" in s.describe()
    assert "second pass" not in solver_from_config(A, {"method": "cg", "precond": "amg",
                                                       "amg": "classical"}).describe()
