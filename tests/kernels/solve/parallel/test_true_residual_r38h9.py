"""Round 38 (h9): a distributed solve reports ``|b - A x| / |b|`` of the x it returns, as
the serial :class:`Solver` does (its result's ``units`` say so); it reported the recurrence's
residual: 6.9e-11 on the 1000:1 jump at 128^2 where the returned x leaves 2.9e-10. One rank
(``SelfComm``, no MPI) checked against SciPy's product with the assembled matrix. And a
job's ``interpolation`` reaches the distributed solver (it was dropped)."""

import numpy as np
import pytest

from skiff.kernels.solve.entry import build_problem, solver_from_config
from skiff.kernels.solve.parallel import DistributedSolver
from skiff.kernels.solve.problems import GridProblem, poisson
from skiff.kernels.solve.solver import Solver


def _jump(n=64):
    """``--problem jump`` (a 1000:1 square inside): its CG recurrence ends 3x below the x's."""
    return build_problem({"problem": "jump", "grid": (n, n)})


def _scipy_residual(problem: GridProblem, field) -> float:
    a, b = problem.matrix(), problem.rhs.ravel()
    return float(np.linalg.norm(b - a @ field.ravel()) / np.linalg.norm(b))


@pytest.mark.parametrize("method", ["cg", "gmres"])
def test_relative_residual_is_the_returned_x(method):
    problem = _jump()
    sol = DistributedSolver(problem, method=method).solve(rtol=1e-10)
    oracle = _scipy_residual(problem, sol.field)
    # (the product itself rounds: eps |A| |x| is a few % of a 1e-10 residual on a 1000:1 jump)
    assert sol.relative_residual == pytest.approx(oracle, rel=0.05)
    if method == "cg":   # (GMRES's last residual is its true one, recomputed at a restart)
        recurrence = sol.residuals[-1] / sol.bnorm
        assert abs(sol.relative_residual - recurrence) > 1e-3 * recurrence
    serial = Solver(problem, method=method).solve(rtol=1e-10)
    # the same iterate up to rounding, whose residual at 1e-10 is rounding's: within 50%
    assert sol.relative_residual == pytest.approx(serial.relative_residual, rel=0.5)
    assert sol.summary()["relative_residual"] == sol.relative_residual


def test_a_tolerance_past_rounding_is_not_called_converged():
    """The recurrence passes 1e-15 while the x returned cannot: said as the serial does."""
    problem = poisson((64, 64))
    sol = DistributedSolver(problem).solve(rtol=1e-15, maxiter=60)
    serial = Solver(problem).solve(rtol=1e-15, maxiter=60)
    oracle = _scipy_residual(problem, sol.field)
    assert sol.relative_residual == pytest.approx(oracle, rel=0.05)
    assert (sol.converged, sol.status.split(":")[0]) == (serial.converged,
                                                         serial.status.split(":")[0])


@pytest.mark.parametrize("interpolation", ["constant", "linear"])
def test_the_config_interpolation_reaches_the_distributed_solver(interpolation):
    """``solver_from_config(..., distributed=True)`` dropped ``interpolation``: a job's
    distributed Poisson took linear whatever was asked (8 constant-interpolation iterations
    on one rank, 6 distributed). Oracle: the serial Solver with the same interpolation."""
    problem = poisson((64, 64))
    config = {"method": "cg", "precond": "mg", "interpolation": interpolation}
    dist = solver_from_config(problem, config, distributed=True).solve(rtol=1e-10)
    serial = Solver(problem, interpolation=interpolation).solve(rtol=1e-10)
    assert f"{interpolation} interpolation" in dist.info["solver"]
    assert dist.iterations == serial.iterations
    np.testing.assert_allclose(dist.field, serial.field, rtol=0, atol=1e-12)
