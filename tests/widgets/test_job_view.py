"""JobView: the live widget of a job, driven by real thread jobs (no front end needed)."""

from __future__ import annotations

import io
import threading
import time

import numpy as np
import pytest
from PIL import Image

import skiff
from skiff.jobs import launch
from skiff.widgets.chart import metric_chart, metric_groups, uses_log_scale
from skiff.widgets.job_view import JobView, view_for


def _wait_view(view: JobView, timeout: float = 20.0) -> None:
    """Wait until the view's watcher thread has stopped (the job ended and was shown)."""
    view.job.wait(timeout)
    if view._thread is not None:
        view._thread.join(timeout)
    assert not view.watching


def _png_size(data: bytes) -> tuple[int, int]:
    return Image.open(io.BytesIO(data)).size


# charts --------------------------------------------------------------------------------------
def test_metric_groups_put_train_and_val_together():
    groups = metric_groups(["loss", "val_loss", "accuracy", "train/accuracy", "residual"])
    assert groups == [["loss", "val_loss"], ["accuracy", "train/accuracy"], ["residual"]]


@pytest.mark.parametrize("name,values,log", [
    ("residual", [1.0, 1e-3], True),
    ("rel_error", [0.5, 0.4], True),
    ("loss", [2.0, 1.5], False),
    ("loss", [10.0, 1e-3], True),       # spans four decades
    ("residual", [1.0, -1.0], False),   # not positive: log impossible
    ("value", [], False),
])
def test_log_scale_rule(name, values, log):
    assert uses_log_scale(name, values) is log


def test_metric_chart_draws_one_panel_per_group():
    metrics = {"loss": [(i, 1.0 / i, 0.0) for i in range(1, 20)],
               "val_loss": [(i, 1.2 / i, 0.0) for i in range(1, 20, 5)],
               "residual": [(i, 10.0 ** -i, 0.0) for i in range(12)]}
    png = metric_chart(metrics, width=3.0, height=2.0, dpi=50)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert _png_size(png) == (150, 2 * 100)  # two groups, one per row
    one = metric_chart({"loss": metrics["loss"]}, width=3.0, height=2.0, dpi=50)
    assert _png_size(one) == (150, 100)


def test_metric_chart_skips_non_numbers_and_single_points():
    assert metric_chart({}) is None
    assert metric_chart({"loss": [(1, "nan?", 0.0), (2, float("nan"), 0.0)]}) is None
    assert metric_chart({"images_per_s": [(None, 3.5, 0.0)]}) is None
    two = metric_chart({"images_per_s": [(None, 3.5, 0.0)], "loss": [(1, 2.0, 0), (2, 1.0, 0)]},
                       width=3.0, height=2.0, dpi=50)
    assert _png_size(two) == (150, 100)  # only the curve with two points


# the view ------------------------------------------------------------------------------------
def test_view_follows_a_demo_job_to_done():
    steps = 12
    job = launch("demo", {"steps": steps, "sleep": 0.02})
    view = JobView(job, poll=0.05)
    _wait_view(view)
    assert "skiff-done" in view.badge.value and ">done<" in view.badge.value
    assert view.progress.max == steps and view.progress.value == steps
    assert view.progress.bar_style == "success"
    assert f"{steps}/{steps} step" in view.progress_text.value
    assert "ETA" not in view.progress_text.value  # no ETA once finished
    assert view.cancel_button.disabled
    assert "finished 12 steps" in view.log_view.value
    assert view.error_view.layout.display == "none"
    # the chart shows the last metric values: it was drawn after the final event
    assert view.chart_draws >= 1 and view._chart_events == job.state.n_events
    assert _png_size(view.chart.value)[0] > 0
    assert job.state.metrics["value"][-1][1] == pytest.approx(float(steps))
    assert "value <b>12</b>" in view.metrics_view.value  # the last value, as text


def test_update_is_batched_one_message_per_widget():
    job = launch("demo", {"steps": 5, "sleep": 0.0})
    job.wait(10)
    view = JobView(job, start=False)
    view.progress.value = 0.0
    view.progress.max = 1.0
    view.progress.bar_style = ""
    view._seen_events = -1
    sent = []
    view.progress._send = lambda msg, buffers=None: sent.append(msg)  # what goes to the front end
    view.update(force=True)
    # value, max and bar_style all changed, and went out in one update message
    assert len(sent) == 1
    assert set(sent[0]["state"]) >= {"value", "max", "bar_style"}


def test_updates_are_throttled():
    job = launch("demo", {"steps": 200, "sleep": 0.01})
    try:
        view = JobView(job, max_rate=1e-3, start=False)  # at most one update in 1000 s
        before = view.updates
        for _ in range(20):
            view.update()
        assert view.updates == before  # all throttled while the job runs
        view.update(force=True)
        assert view.updates == before + 1
    finally:
        job.cancel()
        job.wait(10)


def test_failed_job_shows_error_and_traceback():
    job = launch("demo", {"steps": 10, "sleep": 0.0, "fail_at": 3})
    view = JobView(job, poll=0.05)
    _wait_view(view)
    assert "skiff-failed" in view.badge.value
    assert view.error_view.layout.display is None
    assert "demo job failed on purpose at step 3" in view.error_view.value
    assert "Traceback" in view.error_view.value and "demo.py" in view.error_view.value
    assert view.progress.bar_style == "danger"


def test_cancel_button_stops_the_job():
    job = launch("demo", {"steps": 10_000, "sleep": 0.01})
    view = JobView(job, poll=0.05)
    view.cancel_button.click()
    _wait_view(view)
    assert job.status == "cancelled"
    assert "skiff-cancelled" in view.badge.value
    assert view.progress.value < 10_000


def test_a_cancel_is_said_in_the_badges_colour_not_as_a_failure():
    from skiff.jobs.render import STATUS_COLORS

    def steps(config, reporter):
        while True:
            reporter.check()  # raises JobCancelled("cancelled by request")
            time.sleep(0.01)

    job = launch("custom", fn=steps)
    view = JobView(job, poll=0.05)
    view.cancel_button.click()
    _wait_view(view)
    assert job.status == "cancelled" and "cancelled by request" in view.error_view.value
    assert STATUS_COLORS["cancelled"] in view.error_view.value
    assert STATUS_COLORS["failed"] not in view.error_view.value


def test_image_artifacts_are_shown(tmp_path):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    def plots(config, reporter):
        for i, name in enumerate(["field", "convergence", "field"]):
            fig = Figure(figsize=(2, 1 + i), dpi=40)
            FigureCanvasAgg(fig)
            fig.add_subplot().plot([0, 1], [i, 0])
            path = tmp_path / f"{name}{i}.png"
            fig.savefig(path)
            reporter.artifact(name, path, kind="image")
        reporter.artifact("notes", tmp_path / "field0.png", kind="file")  # not an image kind
        return {}

    job = launch("plots", fn=plots)
    view = JobView(job, poll=0.05)
    _wait_view(view)
    imgs = view.images.children
    assert len(imgs) == 2  # the latest image of each name; the "file" artifact is not shown
    expected = (tmp_path / "field2.png").read_bytes()
    assert imgs[0].value == expected  # the last "field" image replaced the first
    assert imgs[1].value == (tmp_path / "convergence1.png").read_bytes()


def test_watcher_thread_stops_and_one_view_per_job():
    job = launch("demo", {"steps": 30, "sleep": 0.02})
    view = view_for(job)
    assert view_for(job) is view  # re-displaying the job shows the same live widget
    names = [t.name for t in threading.enumerate()].count(f"skiff-view-{job.id}")
    assert names <= 1 and view._thread is not None  # one watcher, never two
    _wait_view(view)
    assert "skiff-done" in view.badge.value
    # a reattached job (new Job object, as after a kernel restart) gets its own view
    again = view_for(skiff.Job(job.run_dir))
    assert again is not view and "skiff-done" in again.badge.value
    assert not again.watching  # nothing left to watch


def test_view_of_a_job_reattached_mid_run_keeps_updating():
    job = launch("demo", {"steps": 40, "sleep": 0.02})
    time.sleep(0.1)
    reloaded = skiff.Job.load(job.id)  # the same live object
    assert reloaded is job
    view = JobView(skiff.Job(job.run_dir), poll=0.05)  # a fresh handle on the folder
    _wait_view(view)
    assert view.progress.value == 40 and "skiff-done" in view.badge.value


def test_bad_view_arguments():
    job = launch("demo", {"steps": 1, "sleep": 0.0})
    with pytest.raises(ValueError, match="got 0"):
        JobView(job, poll=0)
    job.wait(10)


@pytest.mark.mpi
def test_view_follows_a_two_rank_process_job():
    job = launch("demo", {"steps": 8, "sleep": 0.05}, np=2)
    view = JobView(job, poll=0.05)
    _wait_view(view, timeout=60)
    assert job.status == "done", job.error
    assert "skiff-done" in view.badge.value
    assert view.progress.value == view.progress.max == 8
    assert "on 2 rank(s)" in view.log_view.value
    # the chart shows the all-reduced sums: step * (1 + 2) on two ranks
    assert [v for _s, v, _t in job.state.metrics["value"]] == [3.0 * s for s in range(1, 9)]


@pytest.mark.mpi
def test_view_of_a_process_job_after_its_kernel_is_gone(runs_dir):
    """A process job started by another process (a kernel that was restarted since) is
    found in the run folders, and its new view follows it live to done."""
    import subprocess
    import sys

    code = ("import skiff; job = skiff.launch('demo', {'steps': 30, 'sleep': 0.05}, np=2); "
            "print(job.id)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    job_id = out.stdout.strip().splitlines()[-1]
    job = skiff.Job.load(job_id)  # what %jobs show ID does in the new kernel
    view = view_for(job)
    _wait_view(view, timeout=60)
    assert job.status == "done", job.error
    assert "skiff-done" in view.badge.value and view.progress.value == 30


def test_a_finished_solve_reads_100_percent_in_its_view():
    from skiff.kinds.solve import to_config

    job = launch("solve", to_config({"problem": "diffusion", "grid": (64, 64),
                                     "precond": "none", "device": "cpu"}))
    view = JobView(job, poll=0.05)
    _wait_view(view, timeout=120)
    assert job.status == "done", job.error
    text = view.progress_text.value
    assert text.startswith("100% · 8/8 decades") and f"it {job.result['iterations']}:" in text
    assert view.progress.value == view.progress.max
    assert "s/decades" not in text


def test_a_view_says_how_to_follow_the_job_without_its_kernel(tmp_path):
    """While the job runs the saved view names the Jobs sidebar and %jobs show ID (a view
    whose kernel is gone stays frozen there); its plain-text form says it too; a finished
    view drops the hint."""
    job = launch("demo", {"steps": 100, "sleep": 0.05}, root=tmp_path)
    view = JobView(job, start=False)
    try:
        assert f"%jobs show {job.id}" in view.reattach_hint.value
        assert "<b>Jobs</b> sidebar" in view.reattach_hint.value
        assert view.reattach_hint.layout.display != "none"
        bundle = view._repr_mimebundle_()
        assert f"%jobs show {job.id}" in bundle["text/plain"]
        assert "Jobs sidebar" in bundle["text/plain"] and len(bundle["text/plain"]) <= 110
    finally:
        job.cancel(grace=1.0)
        job.wait(15)
    view.update(force=True)
    assert view.reattach_hint.layout.display == "none"


def test_smoothing_units_and_noise():
    from skiff.widgets.chart import human_unit, smooth

    rng = np.random.default_rng(0)
    noisy = list(1.0 + 0.5 * rng.standard_normal(400))
    smoothed = smooth(noisy)
    assert len(smoothed) == 400 and np.std(smoothed[50:]) < 0.3 * np.std(noisy)
    assert smooth([2.0, 2.0, 2.0]) == [2.0, 2.0, 2.0]  # no pull towards zero at the start
    assert human_unit("peak_memory_bytes")(3.991e8) == "381 MiB"
    assert human_unit("tokens_per_s")(12345.0) == "12.3k"
    assert human_unit("loss") is None
    png = metric_chart({"loss": [(i, v, 0.0) for i, v in enumerate(noisy)]},
                       width=3.0, height=2.0, dpi=50)
    assert _png_size(png) == (150, 100)


def test_a_done_job_shows_its_kinds_result_view(tmp_path):
    """A kind may show more once its job is done (OCR: the lines read); others show none."""
    from skiff.widgets.job_view import _result_html

    class FakeOcr:
        kind = "ocr"
        result = {"results": [{"image": "/x/page.png", "lines": [
            {"text": "今天 <b>", "score": 0.98}]}]}

    table = _result_html(FakeOcr())
    assert "page.png" in table and "今天 &lt;b&gt;" in table and "0.980" in table
    job = launch("demo", {"steps": 2, "sleep": 0.0}, root=tmp_path).wait(10)
    view = JobView(job, start=False)
    view.update(force=True)
    assert view.result_view.value == "" and view.result_view.layout.display == "none"


def test_wait_sends_the_views_final_state_again_from_the_waiting_thread():
    # a view updated from the job's thread after its cell has ended sends messages a notebook
    # runner no longer records (the tour's flake: a saved "running" for a solve that took
    # 0.1 s); job.wait() in a later cell sends the whole final state again from that cell
    gate = threading.Event()
    job = launch("custom", fn=lambda config, reporter: gate.wait(10) and 1)
    view = view_for(job)
    sent = []
    original = view.badge.send_state

    def record(key=None):
        sent.append((threading.current_thread(), view.badge.value))
        return original(key)

    view.badge.send_state = record
    gate.set()
    job.wait(20)
    assert job.status == "done"
    main = [v for t, v in sent if t is threading.current_thread()]
    assert main and ">done<" in main[-1]


def test_a_done_solve_that_did_not_converge_says_so_in_view_and_repr():
    """The badge said done, the bar was green and nothing else told the notebook user; the
    terminal exits 1 on the same job."""
    from skiff.jobs import submit
    from skiff.kinds import KINDS

    job, _ = submit("solve", "jump --grid 16x16 --maxiter 1 --precond none")
    job.wait(30)
    assert job.status == "done" and job.result["converged"] is False
    expected = KINDS["solve"].failures(job)
    assert job.failures == expected and len(expected) == 1
    view = JobView(job, start=False)
    try:
        view.update(force=True)
        assert expected[0] in view.error_view.value.replace("&#x27;", "'")
        assert "done, but 1 part failed" in view.error_view.value
        assert view.error_view.layout.display is None
        assert view.progress.bar_style == "warning"
        assert f" failed={expected[0][:60]!r}"[:-1] in repr(job)
    finally:
        view.close()
    good, _ = submit("solve", "poisson --grid 16x16")
    good.wait(30)
    assert good.failures == [] and "failed=" not in repr(good)
    view = JobView(good, start=False)
    try:
        view.update(force=True)
        assert view.error_view.layout.display == "none"
        assert view.progress.bar_style == "success"
    finally:
        view.close()
