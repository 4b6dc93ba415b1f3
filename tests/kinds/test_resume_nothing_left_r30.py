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
