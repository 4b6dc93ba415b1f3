"""Dirichlet condition on an embedded body (mask or signed distance): second-order-like
convergence to a harmonic exact solution, every solver agrees with spsolve, and the operator
stays symmetric positive definite."""

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from skiff.kernels.solve import Solver, grid_problem

R0 = 0.2


def _exact(x, y):
    return np.log(np.hypot(x - 0.5, y - 0.5))     # harmonic outside the disk


def _problem(n, use_sdf=True):
    c = (np.arange(n) + 0.5) / n
    X, Y = np.meshgrid(c, c, indexing="ij")
    sdf = np.hypot(X - 0.5, Y - 0.5) - R0
    body = {"sdf": sdf} if use_sdf else {"mask": sdf >= 0}
    bc = {s: ("dirichlet", _exact) for s in ("x-", "x+", "y-", "y+")}
    p = grid_problem((n, n), source=0.0, bc=bc, body_bc=("dirichlet", _exact), exact=_exact,
                     **body)
    return p, sdf >= 0, _exact(X, Y)


def test_discretisation_error_falls_with_h():
    errs = []
    for n in (32, 64):
        p, active, ex = _problem(n)
        ref = spla.spsolve(p.matrix().tocsc(), p.rhs.ravel()).reshape(n, n)
        errs.append(np.abs(ref - ex)[active].max())
    assert errs[1] < errs[0] / 3.0, errs          # about second order (4x per halving)
    assert errs[1] < 1e-3


@pytest.mark.parametrize("use_sdf", [True, False])
def test_every_solver_matches_spsolve(use_sdf):
    p, active, _ = _problem(64, use_sdf)
    A = p.matrix()
    assert abs(A - A.T).max() == 0.0
    ref = spla.spsolve(A.tocsc(), p.rhs.ravel())
    for method, precond in (("cg", "mg"), ("pipecg", "mg"), ("mg", "auto"), ("fmg", "auto"),
                            ("cg", "amg")):
        sol = Solver(p, method=method, precond=precond).solve(rtol=1e-10, maxiter=100)
        assert sol.converged, (method, precond)
        assert sol.iterations <= 20, (method, sol.iterations)
        np.testing.assert_allclose(sol.x, ref, atol=1e-8 * np.abs(ref).max())
        assert np.all(sol.field[~active] == 0.0)


def test_neumann_body_is_unchanged_and_errors_are_clear():
    p, _, _ = _problem(32)
    n = grid_problem((32, 32), sdf=np.ones((32, 32)), body_bc="neumann")
    assert n.stencil.extra is None
    assert not p.singular
    with pytest.raises(ValueError, match="needs a body"):
        grid_problem((16, 16), body_bc="dirichlet")
    with pytest.raises(ValueError, match="body_bc"):
        grid_problem((16, 16), mask=np.ones((16, 16), bool), body_bc="robin")


def test_cell_spec_with_a_dirichlet_body():
    from skiff.kernels.solve.entry import build_problem
    from skiff.kinds.solve import parse_spec, to_config

    spec = parse_spec("domain: 32x32\nbody: hypot(x - 0.5, y - 0.5) - 0.2; dirichlet 1\n"
                      "source: 0\nsolver: cg mg rtol=1e-10")
    assert spec["body_bc"] == ["dirichlet", "1"]
    p = build_problem(to_config({"spec": spec}))
    ref, _, _ = _problem(32)
    assert p.stencil.extra is not None and np.allclose(p.stencil.extra, ref.stencil.extra)
    sol = Solver(p, method="cg", precond="mg").solve(rtol=1e-10)
    np.testing.assert_allclose(sol.x, spla.spsolve(p.matrix().tocsc(), p.rhs.ravel()),
                               atol=1e-8)
    with pytest.raises(ValueError, match="dirichlet VALUE"):
        parse_spec("domain: 8x8\nbody: x - 0.5; robin")
