"""Round 32, a panel's buttons in odd orders: Launch twice (a double click) hid the first
job, still running, under the second's view; a Solve job that ended after a later one drew
its summary under the later job's view; Cancel clicked on a job that had just ended said
"Cancelling…" for good, and a cancel that raised left the button stuck; a missing file in a
folder with spaces was "no such file 'my'". The oracle: the jobs themselves (their ids and
states) against what the form shows, and the file system."""

from __future__ import annotations

import pytest

from skiff.grammar.common import command, launch_options, positive_int
from skiff.jobs import launch
from skiff.widgets.form import CommandForm
from tests.jobs.waiting import wait_for

pytest.importorskip("ipywidgets")


@command("demo", help="the demo job, held until a file exists")
@launch_options
def DEMO(p):
    p.add_argument("--steps", type=positive_int, default=3)


def _held_launcher(tmp_path):
    gates = []

    def launcher(form, values):
        gate = tmp_path / f"gate{len(gates)}"
        gates.append(gate)
        return launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2,
                               "hold_until": str(gate)})
    return launcher, gates


def _ids(form):
    return [v.job.id for v in form.output.children]


def test_launch_twice_keeps_the_first_running_job_in_view(tmp_path):
    launcher, gates = _held_launcher(tmp_path)
    form = CommandForm(DEMO, launcher=launcher)
    first, second = form.launch(), form.launch()
    assert first.id != second.id and not first.done and not second.done
    assert _ids(form) == [second.id, first.id]  # newest on top, the first not hidden
    gates[0].touch()
    assert first.wait(30).status == "done"
    third = form.launch()
    assert _ids(form) == [third.id, second.id]  # an ended job's view goes with a new launch
    for gate in gates[1:]:
        gate.touch()
    assert second.wait(30).status == third.wait(30).status == "done"
    assert form.jobs == [first, second, third]


def test_an_earlier_solve_ending_later_does_not_draw_under_the_latest(tmp_path, monkeypatch):
    import skiff.widgets.panels as panels

    drawn = []
    monkeypatch.setattr(panels, "_show_solution", lambda job, box: drawn.append(job.id))
    form = panels.solve_form()
    launcher, gates = _held_launcher(tmp_path)
    form.launcher = launcher
    first, second = form.launch(), form.launch()
    gates[1].touch()
    second.wait(30)
    wait_for(lambda: drawn == [second.id], 10, "the latest job's summary")
    gates[0].touch()
    first.wait(30)
    assert drawn == [second.id]  # the first, ended later, drew nothing


def test_cancel_clicked_on_a_job_that_just_ended(tmp_path):
    from skiff.widgets.job_view import JobView

    job = launch("demo", {"steps": 2, "sleep": 0.0}).wait(30)
    view = JobView(job)
    view._on_cancel()  # the click was queued behind the job's last step
    assert job.status == "done" and not (job.run_dir / "cancel").exists()
    assert view.cancel_button.description == "Cancel"


def test_a_cancel_that_raises_says_so_on_the_button(tmp_path, monkeypatch):
    from skiff.widgets.job_view import JobView

    launcher, gates = _held_launcher(tmp_path)
    job = launcher(None, {})
    view = JobView(job)

    def refuse(**_kw):
        raise RuntimeError("not signalled: pid 123 is no longer the job's process")

    monkeypatch.setattr(job, "cancel", refuse)
    try:
        view._on_cancel()
        assert view.cancel_button.description == "Cancel failed"
        assert "no longer the job's process" in view.cancel_button.tooltip
        assert not view.cancel_button.disabled
    finally:
        gates[0].touch()
    assert job.wait(30).status == "done"


def test_a_missing_file_in_a_folder_with_spaces_is_named_whole(tmp_path, monkeypatch):
    from skiff.widgets.panels import ocr_form

    monkeypatch.chdir(tmp_path)
    (tmp_path / "my scans").mkdir()
    form = ocr_form()
    form.set(inputs="my scans/p1.png")
    assert "'my scans/p1.png'" in form.errors["inputs"], form.errors
    form.set(inputs=str(tmp_path / "my scans" / "p1.png"))
    assert "my scans/p1.png'" in form.errors["inputs"], form.errors
    # two real files, typed as two words, stay two inputs
    from PIL import Image

    for name in ("a.png", "b.png"):
        Image.new("RGB", (30, 20), "white").save(tmp_path / name)
    form.set(inputs="a.png b.png")
    assert form.errors == {} and form.values["inputs"] == ["a.png", "b.png"]


def test_the_monitors_cancel_of_an_ended_job_says_it_ended(tmp_path, monkeypatch):
    """The Jobs tab's cancel button on a job that ended before the click said "cancel
    requested for ID"; a cancel that raised left the click unanswered."""
    from skiff.widgets.monitor import JobMonitor

    job = launch("demo", {"steps": 2, "sleep": 0.0}).wait(30)
    monitor = JobMonitor(start=False)
    try:
        monitor.cancel(job)
        assert "had already ended (done): nothing to cancel" in monitor.message.value
        assert "cancel requested" not in monitor.message.value
        launcher, gates = _held_launcher(tmp_path)
        held = launcher(None, {})

        def refuse(**_kw):
            raise RuntimeError("not signalled: pid 123 is no longer the job's process")

        monkeypatch.setattr(held, "cancel", refuse)
        monitor.cancel(held)
        assert "no longer the job&#x27;s process" in monitor.message.value
        gates[0].touch()
        assert held.wait(30).status == "done"
    finally:
        monitor.close()
