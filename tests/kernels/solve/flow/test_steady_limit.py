"""A steady DFG case asked at a Reynolds number past the steady wake says why Newton failed
and what to run instead (round 21: `%solve cylinder --re 100` ended in a bare Newton error)."""

from __future__ import annotations

import pytest

from skiff.kernels.solve.flow import dfg


def _fail(prob, reporter=None):
    raise RuntimeError("Newton did not converge in 25 steps")


def test_newton_failure_past_re_46_names_the_unsteady_case(monkeypatch):
    monkeypatch.setattr(dfg, "solve_steady", _fail)
    with pytest.raises(RuntimeError, match=r"Re 100 .*sheds vortices.*--case 2d-2 --re 100"):
        dfg.run_case("2d-1", resolution=16, re=100.0)


def test_newton_failure_below_the_limit_stays_as_it_was(monkeypatch):
    monkeypatch.setattr(dfg, "solve_steady", _fail)
    with pytest.raises(RuntimeError, match=r"^Newton did not converge in 25 steps$"):
        dfg.run_case("2d-1", resolution=16, re=30.0)
