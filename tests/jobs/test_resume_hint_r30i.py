"""Round 30, as a user who cancelled a training: the terminal summary, ``jobs show`` and the
notebook view said "cancelled" and the run folder, and not that ``jobs resume ID`` goes on
from the newest checkpoint. They now give the line to type, in the front's own words, and
only when the resume would be taken. The oracle: the checkpoint files on disk and what
``jobs resume`` itself does with the job (takes it and goes on from the newest
checkpoint's step, or refuses it)."""

from __future__ import annotations

import os
import re

from skiff.jobs import jobs_action, submit
from skiff.jobs.render import describe
from skiff.jobs.terminal import summary
from skiff.kinds import KINDS
from tests.jobs.waiting import wait_for


def _newest_checkpoint_step(job) -> int:
    steps = [int(m.group(1)) for n in os.listdir(job.run_dir / "checkpoints")
             if (m := re.search(r"(\d+)", n))]
    return max(steps)


def test_a_cancelled_training_says_how_to_go_on_and_that_line_goes_on(capsys):
    job, _ = submit("train", "mlp --steps 100000 --checkpoint-every 20")
    wait_for(lambda: job.refresh().done >= 30, 120, "a checkpoint")
    job.cancel()
    assert job.wait(60).status == "cancelled"
    cli = f"python -m skiff jobs resume {job.id}"
    assert cli in summary(job, KINDS["train"])
    assert cli in describe(job)
    from skiff.widgets.job_view import JobView

    view = JobView(job)
    view.update(force=True)
    assert f"%jobs resume {job.id}" in view.error_view.value and cli not in view.error_view.value
    at = _newest_checkpoint_step(job)
    again = jobs_action("resume", job.id, front="cli")
    try:
        wait_for(lambda: again.refresh().done > at, 120, "the resumed run")
    finally:
        again.cancel()
    assert again.wait(60).status == "cancelled"
    assert again.result["resumed"]["from_step"] == at


def _resume_takes(job) -> bool:
    try:
        again = jobs_action("resume", job.id)
    except ValueError:
        return False
    again.cancel()
    again.wait(60)
    return True


def test_the_hint_is_there_exactly_when_resume_takes_the_job(capsys):
    import shutil

    stopped, _ = submit("train", "mlp --steps 100000")
    wait_for(lambda: stopped.refresh().done >= 3, 120, "progress")
    stopped.cancel()
    assert stopped.wait(60).status == "cancelled"
    shutil.rmtree(stopped.run_dir / "checkpoints", ignore_errors=True)  # removed by hand
    done, _ = submit("train", "mlp --steps 2")
    assert done.wait(120).status == "done"
    from skiff.widgets.job_view import JobView

    view = JobView(stopped)
    view.update(force=True)
    assert f"%jobs resume {stopped.id}" not in view.error_view.value
    assert not _resume_takes(stopped)  # "wrote no checkpoint": refused, so not offered
    # a finished training goes on only when asked (more steps): its view offers nothing
    view = JobView(done)
    view.update(force=True)
    assert "jobs resume" not in view.error_view.value
