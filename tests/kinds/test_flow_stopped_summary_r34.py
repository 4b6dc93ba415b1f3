"""Round 34: a steady flow stopped mid-Newton keeps its state (``partial.npz``) and a partial
result with its Newton steps and updates; its summary read "? + ?, ? unknowns: cancelled
after ? iterations". Oracle: the partial the flow kernel attaches to its ``JobCancelled``
(``flow/steady.py``) on a real stop after its first Newton steps."""

from __future__ import annotations

import pytest

from skiff.kernels.backend.report import JobCancelled, Reporter
from skiff.kinds.solve import SolveKind


class _StopAfter(Reporter):
    def __init__(self, k):
        self.k, self.asked = k, 0

    def progress(self, *a, **k):
        pass

    def info(self, **k):
        pass

    def log(self, *a, **k):
        pass

    def metric(self, *a, **k):
        pass

    def should_stop(self):
        self.asked += 1
        return self.asked > self.k


def test_a_stopped_flows_summary_names_its_newton_steps():
    pytest.importorskip("gmsh")
    from skiff.kernels.solve.flow import run_case

    with pytest.raises(JobCancelled) as got:
        run_case("2d-1", resolution=16, keep_fields=False, reporter=_StopAfter(2))
    part = dict(got.value.partial, stopped="cancelled by request")
    lines = SolveKind().summary(part)
    assert len(lines) == 1 and "?" not in lines[0]
    steps = part["newton_steps"]
    assert f"after {steps} Newton step" in lines[0] and "partial.npz" in lines[0]
