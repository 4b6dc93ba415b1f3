"""Round 27: a training whose run folder the user removes while it runs must not make the
folder again. The checkpoint writer (``skiff.kernels.train.checkpoint.save_checkpoint``)
creates missing parents, so the run folder's ``checkpoints/`` (the trainer's default
checkpoint dir) rebuilt it: ``checkpoints/step-N.npz``, then the jobs layer's final status
as an ``events.jsonl``, no ``config.json`` (not listed, left on disk). Now
``TrainerState._save`` refuses to write into a run folder that is gone. Oracle: the file
system, after the run."""

import shutil

import pytest

from skiff.jobs.reporter import RunReporter
from skiff.kinds.train import KIND, to_config


class _RemovedAt(RunReporter):
    """The user removes the run folder once step ``at`` is reported (before its checkpoint)."""

    at = 10

    def progress(self, done, total=None, **kw):
        super().progress(done, total, **kw)
        if done == self.at and self.run_dir.exists():
            shutil.rmtree(self.run_dir)


def test_a_removed_run_folder_is_not_made_again_by_the_checkpoint(tmp_path):
    run = tmp_path / "20260101-000000-train-abcd"
    run.mkdir()
    (run / "config.json").write_text("{}")
    config = to_config({**KIND.command.defaults(), "model": "mlp", "steps": 20,
                        "checkpoint_every": _RemovedAt.at})
    with pytest.raises(OSError):  # nothing more can be recorded: the job fails
        KIND.run(config, _RemovedAt(run))
    assert not run.exists(), sorted(str(p.relative_to(run)) for p in run.rglob("*"))


def test_the_reporter_removing_the_folder_is_real(tmp_path):
    """The set-up itself: the folder is gone right after step 10's report (checked with no
    training: the same reporter, called as the trainer calls it)."""
    run = tmp_path / "run"
    run.mkdir()
    rep = _RemovedAt(run)
    rep.progress(9, 20)
    assert run.exists()
    rep.progress(10, 20)
    assert not run.exists()
