"""The residual a solve reports is the true |b - A x| / |b| of the x it returns, checked with
SciPy's matrix; a tolerance below float64's reach is said, not reported as met (round 21:
rtol=1e-20 came back 'converged, |r|/|b| = 3.02e-21')."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.solve import SolveError, Solver, poisson


def _true(p, sol):
    A, b = p.matrix(), p.rhs.ravel()
    return np.linalg.norm(b - A @ sol.field.ravel()) / np.linalg.norm(b)


@pytest.mark.parametrize("method,precond", [("cg", "mg"), ("cg", "amg"), ("pipecg", "mg"),
                                            ("bicgstab", "jacobi")])
def test_the_reported_residual_is_the_true_one(method, precond):
    p = poisson((32, 32), source=1.0)
    sol = Solver(p, method=method, precond=precond).solve(rtol=1e-8)
    assert sol.converged and sol.status == "converged"
    assert sol.relative_residual == pytest.approx(_true(p, sol), rel=1e-6)
    assert sol.relative_residual < 1e-8
    assert sol.summary()["relative_residual"] == sol.relative_residual


def test_a_tolerance_below_float64_is_said_not_met():
    p = poisson((32, 32), source=1.0)
    sol = Solver(p, method="cg", precond="amg").solve(rtol=1e-20)
    true = _true(p, sol)
    assert not sol.converged and sol.status.startswith("attainable accuracy")
    assert sol.relative_residual == pytest.approx(true, rel=1e-6) and true > 1e-18
    assert sol.residuals[-1] / sol.bnorm < 1e-20   # what the recurrence believed
    with pytest.raises(SolveError, match="attainable accuracy"):
        Solver(p, method="cg", precond="amg").solve(rtol=1e-20, strict=True)
