"""Round 33 (h10): the nose's Newton convergence, stage by stage of the continuation in Re.

Before: a steady nose solve kept no record of Newton (only the step count, which left out a
failed stage's steps: 22 reported for 27 taken by (1, 0.9, 0.3) at Re 1000), had no
convergence plot, and its live ``newton_update`` metric restarted at step 1 on every stage
(three curves drawn over each other in the job's chart). Oracle: Newton rerun step by step
(``solve_steady`` with ``maxiter=1``) along the recorded Re path reproduces every recorded
update; the last stage converges quadratically."""

from __future__ import annotations

import json

import numpy as np
import pytest

import skiff.aero
from skiff.kernels.backend.report import NullReporter
from skiff.kernels.solve.flow.nose import NoseShape, nose_mesh
from skiff.kernels.solve.flow.nose_flow import nose_problem
from skiff.kernels.solve.flow.nose_plots import convergence_figure
from skiff.kernels.solve.flow.spaces import TaylorHood
from skiff.kernels.solve.flow.steady import initial_state, solve_steady


class Steps(NullReporter):
    def __init__(self):
        self.steps = []

    def metric(self, name, value, *, step=None):
        if name == "newton_update":
            self.steps.append(step)


@pytest.fixture(scope="module")
def solved():
    rep = Steps()
    flow = skiff.aero.solve_nose(3, 0.4, 0.3, re=300, adapt="graded", resolution=14,
                                 reporter=rep)
    return flow, rep


def test_the_record_is_what_newton_did(solved):
    flow, _ = solved
    rec = flow.newton
    assert [r["re"] for r in rec] == pytest.approx([100.0, 300.0])
    assert all(r["converged"] for r in rec) and rec[-1]["tol"] == 1e-6
    assert sum(len(r["updates"]) for r in rec) == flow.newton_steps
    # Newton again, one step at a time, on the same mesh along the same path
    from skiff.kernels.solve.flow.adapt import graded_size

    shape = NoseShape(3, 0.4, 0.3)
    th = TaylorHood(nose_mesh(shape, graded_size(shape, 14, 300)))
    assert th.mesh.t.shape[1] == flow.cells
    prob = nose_problem(th, 300)
    st, first, values = initial_state(prob), True, []
    for r in rec:
        prob.nu = 1.0 / r["re"]
        for _ in r["updates"]:
            before = np.concatenate([st.ux, st.uy])
            try:            # one step (tol 0: it "does not converge" by design)
                solve_steady(prob, state=st, tol=0.0, maxiter=1, picard=1 if first else 0)
            except RuntimeError:
                pass
            first = False
            after = np.concatenate([st.ux, st.uy])
            values.append(np.abs(after - before).max() / np.abs(after).max())
    recorded = np.concatenate([r["updates"] for r in rec])
    assert np.allclose(values, recorded, rtol=1e-6, atol=1e-13)
    last = np.array(rec[-1]["updates"])
    # quadratic at the end: each update about the square of the one before (times O(1))
    assert last[-1] < 1e-6 and last[-1] < 10 * last[-2] ** 2
    json.dumps(flow.to_json()["newton"])


def test_the_live_metric_counts_on_across_stages(solved):
    flow, rep = solved
    assert rep.steps == list(range(1, flow.newton_steps + 1))     # it restarted at 1


def test_the_convergence_figure(solved):
    flow, _ = solved
    fig = convergence_figure(flow)
    ax = fig.axes[0]
    lines = [ln for ln in ax.get_lines() if ln.get_label().startswith("Re ")]
    assert [ln.get_label() for ln in lines] == ["Re 100", "Re 300"]
    ys = np.concatenate([ln.get_ydata() for ln in lines])
    assert np.allclose(ys, np.concatenate([r["updates"] for r in flow.newton]))
    assert ax.get_yscale() == "log"
