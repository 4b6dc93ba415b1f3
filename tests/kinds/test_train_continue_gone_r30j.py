"""Round 30, going on after a stop: a stopped training's summary says "to continue: ... jobs
resume ID" only while a checkpoint is in its run folder. The oracle is ``jobs resume`` on
that run folder: it goes on while the checkpoints are there and refuses ("wrote no
checkpoint") once they are removed, and the summary says the same then."""

import shutil
import time

from skiff.cli import main
from skiff.jobs import launch, resume_command
from skiff.jobs.going_on import resume_hint
from skiff.kinds.train import KIND
from skiff.kinds.train import to_config as train_config


def _cancelled_training():
    """A thread training cancelled once its first checkpoint is on disk (a condition, not a
    time: bounded by the job ending on its own)."""
    config = train_config({**KIND.command.defaults(), "model": "mlp", "steps": 600,
                           "checkpoint_every": 5})
    job = launch("train", config, runner="thread")
    deadline = time.monotonic() + 120  # a bound on the loop, asserted on nothing
    while not job.refresh().final and time.monotonic() < deadline:
        if list((job.run_dir / "checkpoints").glob("step-*.npz")):
            job.cancel()
            break
        time.sleep(0.02)
    job.wait(timeout=120)
    return job


def _line(result):
    return next(x for x in KIND.summary(result) if x.startswith("to continue:"))


def test_the_line_says_jobs_resume_only_while_its_checkpoints_are_there(runs_dir, capsys):
    job = _cancelled_training()
    result = job.result
    assert job.status == "cancelled" and result.get("checkpoint")
    assert resume_hint(job) is not None  # the oracle: jobs resume would take it
    assert resume_command(job.id) in _line(result)
    shutil.rmtree(job.run_dir / "checkpoints")
    capsys.readouterr()
    refused = main(["jobs", "resume", job.id])  # the oracle: it refuses now
    err = capsys.readouterr().err
    assert refused != 0 and "wrote no checkpoint" in err, err
    assert resume_hint(job) is None
    line = _line(result)
    assert "jobs resume" not in line and "gone" in line, line
    assert f"jobs show {job.id}" in line


def test_a_removed_checkpoint_with_an_older_one_left_still_says_jobs_resume(runs_dir):
    """The newest file removed, an older one kept: `jobs resume` goes on from the older."""
    job = _cancelled_training()
    result = job.result
    found = sorted((job.run_dir / "checkpoints").glob("step-*.npz"))
    if len(found) < 2:  # one checkpoint only: copy it as an older step
        older = found[0].with_name("step-00000001.npz")
        shutil.copy(found[0], older)
    (job.run_dir / "checkpoints" / found[-1].name).unlink()
    assert resume_hint(job) is not None
    assert resume_command(job.id) in _line(result)
