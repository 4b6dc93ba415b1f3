"""Round 30: a blunt nose at Re 1000 (length 1, bluntness 0.9) failed its steady solve: Newton
diverged going from Re 333 to 1000 in one step (`--flow auto` then marched 1500 time steps).
A stage that fails is now retried through the geometric middle (x3 -> x1.73 -> ...). The
oracle: a continuation along another path (factors <= 1.7, chosen by hand) reaches the same
flow; the solve's log shows the retry (the fixed x3 path fails on this case)."""

from __future__ import annotations

import pytest

import skiff.kernels.solve.flow.nose_flow as nf
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.solve.flow.adapt import graded_size, min_resolution
from skiff.kernels.solve.flow.nose import NoseShape, nose_mesh
from skiff.kernels.solve.flow.spaces import TaylorHood

SHAPE = NoseShape(1.0, 0.9, 0.3)


class _Log(NullReporter):
    def __init__(self):
        super().__init__()
        self.lines = []

    def log(self, message, **kw):
        self.lines.append(str(message))


@pytest.mark.slow
def test_a_failed_stage_is_retried_through_its_middle():
    mesh = nose_mesh(SHAPE, graded_size(SHAPE, 1.05 * min_resolution(SHAPE)))
    log = _Log()
    flow = nf.solve_nose_flow(SHAPE, None, 1000.0, mode="steady", keep=False, mesh=mesh,
                              reporter=log)
    assert flow.mode == "steady"
    # the x3 step from Re 333 to 1000 failed and was taken through Re 577 (sqrt(3) each)
    assert any("did not converge at Re 1000 from Re 333.3: through Re 577.4" in line
               for line in log.lines), log.lines
    prob = nf.nose_problem(TaylorHood(mesh), 1000.0)
    other, _ = nf._climb(prob, [100.0, 170.0, 290.0, 490.0, 700.0, 1000.0], None,
                         NullReporter())
    assert nf.body_forces(prob, other)[0] == pytest.approx(flow.cd, rel=1e-5)
