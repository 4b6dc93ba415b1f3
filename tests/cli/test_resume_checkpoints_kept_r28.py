"""Round 28, as a user: a resumed training writes its checkpoints into the run folder of the
job it resumed. ``jobs rm OLD`` removed them with OLD's folder, and ``jobs resume NEW`` then
trained from step 0 (said only in its summary: 5,188 steps lost). Now ``rm`` refuses (and
``prune`` keeps) a folder whose checkpoints a kept job resumed from, and a resume whose
checkpoints went with such a folder is refused in one line. The oracle: the checkpoint
files on disk, and the step the resumed training reports it went on from."""

from __future__ import annotations

import shutil

import pytest

from skiff.cli import main
from skiff.jobs import jobs_action, prune_jobs, submit


def _trained_and_resumed():
    first, _ = submit("train", "mlp --steps 20")
    assert first.wait(120).status == "done"
    second = jobs_action("resume", first.id)
    assert second.wait(120).status == "done" and second.result["resumed"]["from_step"] == 20
    assert second.config["checkpoint_dir"].startswith(str(first.run_dir))
    saved = sorted((first.run_dir / "checkpoints").glob("step-*.npz"))
    assert saved[-1].name == "step-00000040.npz"  # the second run's, in the first's folder
    return first, second


def test_rm_keeps_the_checkpoints_a_resumed_job_goes_on_from(runs_dir, capsys):
    first, second = _trained_and_resumed()
    assert main(["jobs", "rm", first.id]) == 2
    err = capsys.readouterr().err
    assert second.id in err and f"jobs rm {second.id} {first.id}" in err
    assert (first.run_dir / "checkpoints" / "step-00000040.npz").is_file()
    assert prune_jobs(list(jobs_action("list", all=True)), keep=1) == []  # keeps the second
    assert first.run_dir.is_dir()
    third = jobs_action("resume", second.id)  # goes on from the second's last step
    assert third.wait(120).status == "done"
    assert third.result["resumed"]["from_step"] == 40  # not from step 0
    assert (first.run_dir / "checkpoints" / "step-00000080.npz").is_file()
    assert main(["jobs", "rm", third.id, second.id, first.id]) == 0
    assert not first.run_dir.exists() and not second.run_dir.exists()


def test_a_resume_whose_checkpoints_were_removed_is_refused(runs_dir):
    first, second = _trained_and_resumed()
    shutil.rmtree(first.run_dir)  # by hand, as a user cleaning up
    with pytest.raises(ValueError, match="nothing to resume from"):
        jobs_action("resume", second.id)
    assert not first.run_dir.exists()  # nothing trained into it again
