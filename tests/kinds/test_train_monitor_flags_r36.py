"""Round 36: the Trainer's ``monitor``/``mode`` (what early stopping watches), ``clip_by``
(clipping each gradient element, torch's ``clip_grad_value_``) and ``schedule='linear'``
(transformers' default) reach a ``train`` job from the shared grammar (``--monitor``,
``--mode``, ``--clip-by``, ``--schedule linear``): in the config only when given, and the
Trainer the job builds gets them. Oracle: the Trainer built in Python with the same keywords
(the figures the job's Trainer takes are compared, and a run with the flag differs from one
without it as that Trainer's does)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.jobs.launch import dry_run
from skiff.kernels.backend.report import NullReporter


def _table(path, classes=False):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    with open(path, "w") as f:
        f.write("a,b,c,y\n")
        for row in x:
            y = ("hi" if row.sum() > 0 else "lo") if classes else f"{row.sum() * 50:.4f}"
            f.write(",".join(f"{v:.4f}" for v in row) + f",{y}\n")


def test_the_flags_reach_the_config_only_when_given():
    plain = dry_run("train", "mlp --steps 3")["config"]
    for key in ("monitor", "mode", "clip_by"):
        assert key not in plain
    config = dry_run("train", "mlp --steps 3 --val-split 0.2 --early-stop 2 --monitor "
                              "val_accuracy --mode max --clip-by value --schedule linear")["config"]
    assert (config["monitor"], config["mode"], config["clip_by"], config["schedule"]) == \
        ("val_accuracy", "max", "value", "linear")


def test_monitor_without_early_stop_is_refused_naming_the_fix():
    with pytest.raises(Exception, match="add --early-stop N"):
        dry_run("train", "mlp --steps 3 --monitor val_accuracy")


def test_a_bad_mode_is_refused():
    with pytest.raises(BaseException, match="mode"):
        dry_run("train", "mlp --steps 3 --early-stop 2 --mode biggest")


def test_ocr_rec_refuses_them(tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("a.png\tx\n")
    with pytest.raises(Exception, match="clip-by"):
        dry_run("train", f"ocr-rec --data {labels} --clip-by value")


def _run(line, monkeypatch):
    from skiff.kernels.train import trainer as trainer_module
    from skiff.kernels.train.entry import run

    seen = {}
    init = trainer_module.Trainer.__init__

    def spy(self, *args, **kwargs):
        seen.update(kwargs)
        init(self, *args, **kwargs)

    monkeypatch.setattr(trainer_module.Trainer, "__init__", spy)
    result = run(dry_run("train", line)["config"], NullReporter())
    return seen, result


def test_the_job_trainer_gets_them_and_value_clipping_changes_the_run(tmp_path, monkeypatch):
    _table(tmp_path / "t.csv")
    base = f"mlp {tmp_path / 't.csv'} --target y --steps 4 --clip 0.01 --lr 0.05"
    seen, by_norm = _run(base, monkeypatch)
    assert seen["clip_by"] == "norm" and seen["schedule"] == "cosine"
    seen, by_value = _run(base + " --clip-by value --schedule linear", monkeypatch)
    assert seen["clip_by"] == "value" and seen["schedule"] == "linear"
    losses = [np.array([row["loss"] for row in r.history]) for r in (by_norm, by_value)]
    assert losses[0].shape == losses[1].shape and not np.allclose(losses[0], losses[1])


def test_the_job_trainer_watches_the_monitored_metric(tmp_path, monkeypatch):
    _table(tmp_path / "c.csv", classes=True)
    line = (f"mlp {tmp_path / 'c.csv'} --target y --epochs 3 --val-split 0.25 "
            f"--early-stop 2 --monitor accuracy")
    seen, _ = _run(line, monkeypatch)
    assert seen["monitor"] == "accuracy" and seen["mode"] == "auto"
    from skiff.kernels.train.trainer_stop import check_monitor

    assert check_monitor(seen["monitor"], seen["mode"]) == ("val_accuracy", "max")
