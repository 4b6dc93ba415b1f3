"""``train ... --resume --steps N`` whose newest checkpoint already reaches step N is refused
before any job (round 29 left: the job trained nothing, yet read its data and checkpoint and
wrote the checkpoint, loss.png and result.json again). The checkpoint's step is the one the
kernel's own training wrote (its file), and the line's suggestion is run to check it."""

from __future__ import annotations

import re

import pytest

from skiff.jobs import list_run_dirs, submit


def test_resume_with_nothing_left_is_refused_and_the_fix_runs(tmp_path, runs_dir, capsys):
    ck = tmp_path / "ck"
    first, _ = submit("train", f"mlp --steps 3 --checkpoint-dir {ck}")
    first.wait(60)
    assert first.status == "done", first.error
    newest = sorted(p.name for p in ck.glob("step-*.npz"))[-1]
    at = int(re.search(r"\d+", newest)[0])
    assert at == first.result["steps"]
    made = len(list_run_dirs())
    for steps in (at, at - 1):
        with pytest.raises(ValueError, match=rf"at step {at}, .*--steps {steps}: nothing to "
                                             rf"train.*--steps {at + steps} "):
            submit("train", f"mlp --steps {steps} --checkpoint-dir {ck} --resume")
    assert len(list_run_dirs()) == made  # no run folder, no job
    from skiff.cli import main  # python -m skiff, in this process

    assert main(["train", "mlp", "--steps", str(at), "--checkpoint-dir", str(ck),
                 "--resume"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    fix = re.search(r"give (--steps \d+)", err)[1]
    again, _ = submit("train", f"mlp {fix} --checkpoint-dir {ck} --resume")
    again.wait(60)
    assert again.status == "done", again.error
    assert again.result["resumed"]["from_step"] == at
    hist = again.result["history"]  # the checkpoint's rows, then the new steps
    assert [r["step"] for r in hist] == list(range(1, 2 * at + 1))
    assert [r["loss"] for r in hist[:at]] == [r["loss"] for r in first.result["history"]]


def test_jobs_resume_of_a_job_that_failed_after_its_last_step_trains_more(tmp_path, runs_dir):
    """A job whose last step's checkpoint was written before it failed or was cancelled
    (its result not written: a full disk) had nothing left of its steps: ``jobs resume``
    goes on for as many steps again, as for a finished job (it was refused with a --steps
    that jobs resume does not take)."""
    from types import SimpleNamespace

    from skiff.kinds import KINDS

    first, _ = submit("train", "mlp --steps 3")
    first.wait(60)
    at = int(re.search(r"\d+", sorted(p.name for p in
                                      (first.run_dir / "checkpoints").glob("step-*.npz"))[-1])[0])
    for status in ("failed", "cancelled"):
        stand_in = SimpleNamespace(id=first.id, config=first.config, run_dir=first.run_dir,
                                   status=status, result=None)
        config = KINDS["train"].resume_config(stand_in)
        assert config["steps"] == at + first.config["steps"] and config["resume"] is True
    early = SimpleNamespace(id=first.id, config={**first.config, "steps": 10},
                            run_dir=first.run_dir, status="cancelled", result=None)
    assert KINDS["train"].resume_config(early)["steps"] == 10  # steps left: as asked
