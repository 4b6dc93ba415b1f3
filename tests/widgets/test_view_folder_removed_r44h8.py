"""Round 44 (h8): a job's view when its run folder is removed while the job runs.

A thread job held in a long step (a model loading, a direct solve, a training step of
minutes) whose run folder was removed (``rm -rf`` of the runs folder) showed "running" in
its view, its elapsed time growing, until its next write failed. The view says it at once
now; the job's end is then the failure its runner writes ("its run folder ... was removed
while it ran"). The job is held at a step until a file exists and the view is updated by
hand: no timing."""

from __future__ import annotations

import shutil

from skiff.jobs import launch
from skiff.widgets.job_view import JobView


def test_the_view_says_the_folder_is_gone_while_the_job_still_runs(runs_dir, tmp_path,
                                                                   monkeypatch):
    # the runner stops such a job itself (round 44 h15, FOLDER_LOOK_S): not while this
    # test looks at the view of the job still held in its step
    from skiff.jobs import thread as thread_runner

    monkeypatch.setattr(thread_runner, "FOLDER_LOOK_S", 3600.0)
    gate = tmp_path / "gate"
    job = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 1, "hold_until": str(gate)})
    view = JobView(job)
    try:
        view.update(force=True)
        assert view.error_view.value == "" and not job.refresh().final
        shutil.rmtree(job.run_dir)
        view.update(force=True)
        assert not job.refresh().final  # still held in its step: nothing written yet
        said = view.error_view.value
        assert f"its run folder {job.run_dir} was removed" in said, said
        assert view.error_view.layout.display is None  # shown
    finally:
        gate.touch()
    job.wait(30)
    assert job.status == "failed" and "was removed while it ran" in job.error, job.error
    view.update(force=True)
    assert "was removed while it ran" in view.error_view.value
    view.close()
