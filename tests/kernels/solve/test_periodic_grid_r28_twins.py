"""Periodic grids (round 28), the kernels and the grammar: each multigrid level's wrap-around
operator, fused residual + restriction and smoother on the numpy reference twins and on the
numba twins, against the assembled periodic matrix (scipy) and against each other; ``%solve``
/ ``%%solve`` / config spelling of periodic sides; the distributed refusal."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.backend import numba_available
from skiff.kernels.solve import fused
from skiff.kernels.solve.multigrid import _Level
from skiff.kernels.solve.problems import grid_problem

CASES = [((12, 8), {"x": "periodic"}), ((6, 4, 8), "periodic"),
         ((8, 6), {"y": "periodic", "x-": "neumann", "x+": "dirichlet"})]


def _level(problem, numba, monkeypatch):
    if numba:
        monkeypatch.delenv("SKIFF_REFERENCE_OPS", raising=False)
        with fused.warming():
            lv = _Level(problem.stencil, np)
        assert lv._apply is not fused.apply_var.reference
        assert lv._apply is not fused.apply_const.reference
    else:
        monkeypatch.setenv("SKIFF_REFERENCE_OPS", "1")
        lv = _Level(problem.stencil, np)
    return lv


def _run(lv, u, f, A):
    out = np.empty_like(u)
    dot = lv.apply(u, out)
    coarse = tuple(n // 2 if n % 2 == 0 and n >= 4 else n for n in u.shape)
    fc = np.zeros(coarse)
    rn2 = lv.residual_restrict(u.copy(), f, fc)
    us = u.copy()
    lv.rbgs(us, f, 2)
    return out, dot, fc, rn2, us


@pytest.mark.parametrize("shape,bc", CASES)
@pytest.mark.parametrize("variable", [False, True])
def test_level_ops_numpy_and_numba_twins_against_scipy(shape, bc, variable, monkeypatch):
    if not numba_available():
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(3)
    k = rng.uniform(0.5, 2.0, shape) if variable else 1.0
    p = grid_problem(shape, k=k, source=1.0, bc=bc)
    A = p.matrix()
    u, f = rng.standard_normal(p.shape3), rng.standard_normal(p.shape3)
    results = []
    for numba in (False, True):
        lv = _level(p, numba, monkeypatch)
        out, dot, fc, rn2, us = _run(lv, u, f, A)
        # operator and |f - A u|^2 against the assembled matrix (wrap included)
        ref = A @ u.ravel()
        np.testing.assert_allclose(out.ravel(), ref, rtol=1e-12, atol=1e-9)
        assert dot == pytest.approx(float(u.ravel() @ ref), rel=1e-10)
        r = f.ravel() - ref
        assert rn2 == pytest.approx(float(r @ r), rel=1e-10)
        # restriction of the true residual: the mean of the children
        want = fused.restrict.reference(r.reshape(u.shape), np.zeros(fc.shape))[0]
        np.testing.assert_allclose(fc, want, rtol=1e-10, atol=1e-9)
        # two smoothing sweeps reduce the periodic residual (the seam is not left out)
        assert np.linalg.norm(f.ravel() - A @ us.ravel()) < 0.8 * np.linalg.norm(r)
        results.append((out, fc, us))
    for a, b in zip(*results):   # the two twins agree
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-10)


def test_kinds_grammar_spells_periodic_sides():
    from skiff.kernels.solve.entry import build_problem
    from skiff.kinds.solve import parse_spec, to_config

    cfg = to_config({"spec": parse_spec("domain: 16x12\nsource: sin(2*pi*x)\n"
                                        "boundaries: x=periodic; y-=dirichlet 0; "
                                        "y+=neumann")})
    assert cfg["bc"]["x-"][0] == cfg["bc"]["x+"][0] == "periodic"
    p = build_problem(cfg)
    assert p.stencil.periodic == (False, True, False) and not p.singular
    cfg = to_config({"problem": "poisson", "grid": "16x16", "bc": "periodic"})
    p = build_problem(cfg)
    assert p.singular and abs(float(p.rhs.sum())) < 1e-9 * float(np.abs(p.rhs).sum())
    with pytest.raises(ValueError, match="an axis .* takes 'periodic'"):
        parse_spec("domain: 16x16\nboundaries: x=neumann")
    with pytest.raises(ValueError, match="periodic on one side only"):
        build_problem(to_config({"spec": parse_spec("domain: 16x16\nboundaries: "
                                                    "x-=periodic")}))
    p = build_problem(to_config({"problem": "convection", "grid": "32x32", "bc": "periodic"}))
    assert p.singular and abs(float(p.rhs.sum())) < 1e-9 * float(np.abs(p.rhs).sum())


def test_distributed_refuses_periodic_naming_one_rank():
    from skiff.kernels.solve.parallel import check_distributed
    from skiff.kernels.solve.parallel.solver import DistributedSolver

    with pytest.raises(ValueError, match="periodic sides do not run distributed.*drop --np"):
        check_distributed(periodic=True)
    with pytest.raises(ValueError, match="periodic sides do not run distributed"):
        DistributedSolver(grid_problem((16, 16), source=1.0, bc={"x": "periodic"}))


@pytest.mark.parametrize("variable", [False, True])
def test_wrap_terms_on_each_array_module(xp, variable):
    """The wrap terms are plain array ops: on cupy they run as on numpy (GPU case skips here)."""
    from skiff.kernels.solve.operators import GridOperator

    rng = np.random.default_rng(4)
    shape = (10, 6, 8)
    k = rng.uniform(0.5, 2.0, shape) if variable else 1.0
    p = grid_problem(shape, k=k, source=1.0, bc={"x": "periodic", "z": "periodic"})
    u = rng.standard_normal(p.shape3)
    op = GridOperator(p, xp)
    out = xp.empty(p.shape3)
    dot = op.matvec_dot(xp.asarray(u), out)
    host = out.get() if xp is not np else out
    ref = p.matrix() @ u.ravel()
    np.testing.assert_allclose(host.ravel(), ref, rtol=1e-12, atol=1e-9)
    assert dot == pytest.approx(float(u.ravel() @ ref), rel=1e-10)


@pytest.mark.gpu
@pytest.mark.parametrize("bc", [{"x": "periodic"}, "periodic"])
def test_gpu_periodic_solve_matches_spsolve(bc):
    import scipy.sparse.linalg as spla

    import skiff

    p = grid_problem((64, 32, 32), k=1.0, bc=bc,
                     source=lambda x, y, z: np.cos(2 * np.pi * x) * np.sin(np.pi * y))
    s = skiff.solve(p, method="cg", precond="mg", rtol=1e-10, device="cuda",
                    compatibility="project" if bc == "periodic" else None)
    A = p.matrix()
    if bc == "periodic":
        x = np.asarray(s.field).ravel()
        assert np.linalg.norm(A @ x - p.rhs.ravel()) <= 1e-8 * np.linalg.norm(p.rhs)
    else:
        ref = spla.spsolve(A.tocsc(), p.rhs.ravel())
        np.testing.assert_allclose(np.asarray(s.field).ravel(), ref, rtol=1e-7, atol=1e-10)
