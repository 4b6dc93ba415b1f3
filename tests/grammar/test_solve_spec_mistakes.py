"""A %%solve cell's mistakes are said in one line before any job exists (round 21 probes)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.solve import grid_problem
from skiff.kinds.solve import parse_spec
from skiff.kinds.solve import to_config as solve_config


def _config(cell: str) -> dict:
    return solve_config({"spec": parse_spec(cell)}, memory=False)


@pytest.mark.parametrize("cell,needle", [
    # scipy's name for the tolerance was dropped silently: the solve ran to 1e-8
    ("domain: 32x32\nsource: 1\nsolver: cg mg tol=1e-6", "did you mean 'rtol'"),
    ("domain: 32x32\nsource: 1\nsolver: cg mg maxiters=5", "did you mean 'maxiter'"),
    # numpy read x^2 as a bitwise xor and the job failed with a ufunc traceback
    ("domain: 32x32\nsource: x^2", "write '\\*\\*' \\('x\\*\\*2'\\)"),
    # a negative conductivity made CG fail inside the job ("not positive definite")
    ("domain: 32x32\ncoefficient: x - 0.5\nsource: 1", "k must be positive.*at x=0"),
    ("domain: 32x32\nsource: log(x - 0.5)", "source must be finite.*at x="),
    ("domain: 16x16x16\ncoefficient: where(z > 0.5, 1, 0)", "k must be positive"),
])
def test_spec_mistakes_are_refused_at_once(cell, needle):
    with pytest.raises(ValueError, match=needle):
        _config(cell)


def test_good_specs_pass_and_keep_their_options():
    cfg = _config("domain: 32x32 extent 2x1\ncoefficient: 1 + x\nsource: sin(pi*x)\n"
                  "solver: cg mg rtol=1e-6 maxiter=50")
    assert cfg["rtol"] == 1e-6 and cfg["maxiter"] == 50 and cfg["k"] == "1 + x"
    cfg = _config("domain: 32x32\nsource: 1\nboundaries: neumann\n"
                  "solver: cg mg compatibility=project")
    assert cfg["compatibility"] == "project"


def test_grid_problem_names_where_a_callable_coefficient_is_not_positive():
    with pytest.raises(ValueError, match=r"positive and finite: it is -0.5 at x=0, y=0.0625"):
        grid_problem((8, 8), k=lambda x, y: x - 0.5 + 0 * y, source=1.0)
    with pytest.raises(ValueError, match="positive and finite on active cells: it is 0 at"):
        grid_problem((8, 8), k=np.where(np.arange(8)[:, None] < 4, 1.0, 0.0) + 0 * np.ones(8))
    # a coefficient that is zero only inside a masked body is fine
    mask = np.ones((8, 8), bool)
    mask[3:5, 3:5] = False
    grid_problem((8, 8), k=np.where(mask, 1.0, 0.0), mask=mask, source=1.0)


@pytest.mark.parametrize("method,precond", [("mg", "amg"), ("fmg", "jacobi"), ("direct", "mg")])
def test_a_preconditioner_with_a_method_that_takes_none_is_refused(method, precond):
    """`--method mg --precond amg` ran plain geometric cycles while the summary said mg + amg."""
    with pytest.raises(ValueError, match="takes no preconditioner"):
        solve_config({"problem": "poisson", "grid": "32x32", "method": method,
                      "precond": precond}, memory=False)
    from skiff.kernels.solve import Solver, poisson

    with pytest.raises(ValueError, match="takes no preconditioner"):
        Solver(poisson((16, 16)), method=method, precond=precond)
    Solver(poisson((16, 16)), method=method, precond="auto")  # its own default is fine
