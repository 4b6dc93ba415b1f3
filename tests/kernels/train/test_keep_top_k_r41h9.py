"""Round 41 (h9): ``keep_best=K`` keeps the K best checkpoints (Lightning's
``ModelCheckpoint(monitor=..., save_top_k=K)``) beside the newest ``keep_checkpoints``;
``--keep-best K`` on the line (the flag alone: the best one, as before).

Before, ``keep_best`` kept one best: the second best validation's weights (a user picking
among near-equal checkpoints, or averaging the K best) were deleted.
Oracle for "best": each kept file's weights run through a numpy forward on the held-out
rows, whose mean squared error must be its recorded score and among the K smallest of the
run's validations. A resume keeps the scores (the same K kept as the uninterrupted run)."""

from __future__ import annotations

import json

import pytest

import skiff

from .kept_checkpoints import checkpoint_steps as _steps
from .kept_checkpoints import held_out_mse, mlp, regression

BATCH, VAL, K = 16, 0.25, 3


def _data():
    return regression(1, 0.5)


def _trainer(ck, **kw):
    return skiff.Trainer(mlp(), lr=0.08, batch_size=BATCH, schedule="constant",
                         checkpoint_dir=ck, checkpoint_every="epoch", keep_checkpoints=1,
                         keep_best=K, **kw)


def _held_out_mse(path):
    return held_out_mse(path, _data(), VAL)


def test_the_k_best_checkpoints_are_kept_and_a_resume_keeps_them(tmp_path):
    ck = tmp_path / "ck"
    r = _trainer(ck).train(_data(), epochs=10, val_split=VAL)
    losses = {v["step"]: v["val_loss"] for v in r.val_history}
    top = sorted(losses, key=lambda s: (losses[s], s))[:K]
    assert r.steps not in top  # the case: the newest is none of the K best
    assert _steps(ck) == sorted({*top, r.steps})  # the K best and the newest, no other
    assert r.best_checkpoint == str(ck / f"step-{top[0]:08d}.npz")
    record = json.loads((ck / "best.json").read_text())
    assert record["best_steps"] == top and record["top_k"] == K
    for step in top:  # each kept file's weights give its recorded score, by numpy
        mse = _held_out_mse(ck / f"step-{step:08d}.npz")
        assert mse == pytest.approx(record["scores"][str(step)], rel=1e-5)
    worst_kept = max(record["scores"][str(s)] for s in top)
    assert all(v > worst_kept - 1e-9 for s, v in losses.items() if s not in top)

    # cut mid-run (a callback stops it) and resumed: the same K kept, the same scores
    cut = tmp_path / "cut"
    _trainer(cut, callbacks=[lambda m: m["step"] == 19]).train(_data(), epochs=10,
                                                                val_split=VAL)
    again = _trainer(cut, resume=True).train(_data(), epochs=10, val_split=VAL)
    assert _steps(cut) == _steps(ck) and again.best_checkpoint.endswith(f"{top[0]:08d}.npz")
    assert json.loads((cut / "best.json").read_text())["best_steps"] == top


def test_keep_best_takes_true_or_a_count():
    from skiff.kernels.train.trainer_keep import keep_best_count

    assert [keep_best_count(v) for v in (False, None, True, 3)] == [0, 0, 1, 3]
    with pytest.raises(ValueError, match="save_top_k"):
        keep_best_count(-1)
    with pytest.raises(ValueError, match="save_top_k"):
        keep_best_count("3")


def test_the_line_takes_keep_best_k():
    from skiff.jobs.launch import dry_run

    config = dry_run("train", "mlp --steps 3 --checkpoint-every epoch --keep-best 2 "
                              "--val-split 0.2")["config"]
    assert config["keep_best"] == 2
    config = dry_run("train", "mlp --steps 3 --keep-best --val-split 0.2")["config"]
    assert config["keep_best"] == 1
