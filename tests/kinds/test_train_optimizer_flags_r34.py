"""Round 34: ``--weight-decay``, ``--clip`` (0: none), ``--schedule`` and ``--warmup`` reach
the Trainer a ``train`` job builds (the kernel had them; no front could set them: a user of
Hugging Face's Trainer reaches for ``weight_decay``, ``max_grad_norm``,
``lr_scheduler_type``, ``warmup_steps`` first). Oracles: the keywords the job's Trainer gets
(a spy in its place), and a job's losses equal to the Trainer run in Python with those
keywords; ocr-rec (its own loop) refuses them in one line."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.grammar.common import GrammarError
from skiff.jobs.launch import dry_run
from skiff.kinds.train import to_config


def _config(line):
    return dry_run("train", line)["config"]


def test_the_flags_reach_the_config_only_when_given():
    plain = _config("mlp --steps 3")
    assert not {"weight_decay", "clip", "schedule", "warmup_steps"} & set(plain)
    given = _config("mlp --steps 3 --weight-decay 0.1 --clip 0 --schedule constant "
                    "--warmup 2")
    assert (given["weight_decay"], given["clip"], given["schedule"],
            given["warmup_steps"]) == (0.1, 0.0, "constant", 2)


def test_the_jobs_trainer_gets_them(monkeypatch):
    import skiff.kernels.train.entry as entry
    from skiff.kernels.train.trainer import Trainer as Real

    seen = {}

    class Spy(Real):
        def __init__(self, *a, **kw):
            seen.update(kw)
            super().__init__(*a, **kw)
            seen["trainer"] = self

    monkeypatch.setattr("skiff.kernels.train.trainer.Trainer", Spy)
    from skiff.kernels.backend.report import NullReporter

    config = _config("mlp --steps 2 --weight-decay 0.2 --clip 0 --schedule constant "
                     "--warmup 0")
    entry.run(config, NullReporter())
    assert seen["weight_decay"] == 0.2 and seen["clip"] is None
    assert seen["schedule"] == "constant" and seen["warmup_steps"] == 0
    seen.clear()
    entry.run(_config("mlp --steps 2"), NullReporter())
    # the trainer's defaults (round 44 h5: weight_decay None, its AdamW's 0.01, torch's)
    assert seen["weight_decay"] is None and seen["clip"] == 1.0
    groups = seen["trainer"].optimizer.param_groups
    assert type(seen["trainer"].optimizer).__name__ == "AdamW"
    assert [g["weight_decay"] for g in groups] == [0.01]
    assert seen["schedule"] == "cosine" and seen["warmup_steps"] is None


def test_a_jobs_losses_are_the_trainers_with_those_settings(runs_dir):
    from skiff.jobs import submit
    from skiff.kernels.backend.report import NullReporter
    from skiff.kernels.train.entry import build_from_config
    from skiff.kernels.train.trainer import Trainer

    line = "mlp --steps 12 --weight-decay 0.3 --clip 0.05 --schedule constant --warmup 3"
    job, _ = submit("train", line, front="cli")
    job.wait(120)
    assert job.status == "done", job.error
    losses = [row["loss"] for row in job.result["history"]]
    config = job.config

    def trainer_losses(**kw):
        parts = build_from_config(config, None, NullReporter())
        t = Trainer(parts["model"], lr=config.get("lr"), seed=0,
                    batch_size=config.get("batch_size") or 32, **kw)
        return t.train(parts["dataset"], steps=12).losses

    assert len(losses) == 12
    np.testing.assert_allclose(losses, trainer_losses(weight_decay=0.3, clip=0.05,
                                                      schedule="constant", warmup_steps=3),
                               rtol=1e-6)
    assert not np.allclose(trainer_losses(), losses)   # the settings changed something


def test_ocr_rec_refuses_them():
    with pytest.raises((ValueError, GrammarError), match="--clip is not an option of train "
                                                         "ocr-rec"):
        to_config({"model": "ocr-rec", "data_opt": "labels.txt", "clip": 0.5})
