"""Round 44 (h21): ``job.plot()`` of a finished 20-step training drew its lr from the sampled
events (steps 1, 8, 19, 20): the warm-up's peak at step 2 (in ``result.json``'s history) was
not drawn. A finished job's figure takes the result's whole history, as its job view does.
The run folder is the one tests/widgets/test_chart_whole_history_r44h21.py writes."""

from __future__ import annotations

from tests.widgets.test_chart_whole_history_r44h21 import SAMPLED, STEPS, WARM, _run_folder


def test_plot_of_a_finished_job_draws_its_whole_history(runs_dir):
    job = _run_folder()
    assert [s for s, _v in job.metrics["lr"]] == list(SAMPLED)
    fig = job.plot("lr")
    (line,) = fig.axes[0].lines
    xs, ys = list(line.get_xdata()), list(line.get_ydata())
    assert xs == [float(s) for s in range(1, STEPS + 1)]
    assert xs[ys.index(max(ys))] == float(WARM)


def test_plot_while_running_draws_the_events(runs_dir):
    job = _run_folder(final=False)
    fig = job.plot("lr")
    assert list(fig.axes[0].lines[0].get_xdata()) == [float(s) for s in SAMPLED]
