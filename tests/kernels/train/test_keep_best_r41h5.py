"""Round 41 (h5): checkpoints a user can pick from, and an early stopping that cannot stop.

- ``checkpoint_every="epoch"`` (transformers' ``save_strategy="epoch"``) writes one
  checkpoint at each epoch's end; oracle: the epoch ends counted from the data's size.
- ``keep_best=True`` keeps the best validation's checkpoint beside the newest
  ``keep_checkpoints`` (transformers' ``save_total_limit`` never deletes
  ``best_model_checkpoint``): the folder holds exactly the newest and the best; oracle for
  "best": the kept file's weights run through a numpy forward on the held-out rows, whose
  mean squared error must be the smallest of the run's validations. A resume goes on with
  the scores so far (the same best as the uninterrupted run), a new run into the folder
  does not inherit them.
- ``early_stopping`` with an ``eval_every`` larger than the run (or a one-epoch run) gives
  no validation before the last step: warned once, in the result's notes too.
"""

from __future__ import annotations

import json
import warnings

import pytest

import skiff

from .kept_checkpoints import N, held_out_mse, regression
from .kept_checkpoints import checkpoint_steps as _steps
from .kept_checkpoints import mlp as _model

BATCH, VAL = 16, 0.25


def _data():
    return regression(0, 0.3)


def _trainer(ck, **kw):
    kw = {"lr": 0.05, "batch_size": BATCH, "schedule": "constant", "checkpoint_dir": ck,
          "checkpoint_every": "epoch", **kw}
    return skiff.Trainer(_model(), **kw)


def _held_out_mse(path):
    return held_out_mse(path, _data(), VAL)


def test_a_checkpoint_at_each_epochs_end(tmp_path):
    per_epoch = -(-int(N * (1 - VAL)) // BATCH)  # 60 rows of batches of 16: 4 steps
    t = _trainer(tmp_path / "ck", keep_checkpoints=None)
    t.train(_data(), epochs=3, val_split=VAL)
    assert _steps(tmp_path / "ck") == [per_epoch, 2 * per_epoch, 3 * per_epoch]


def test_the_best_validations_checkpoint_is_kept(tmp_path):
    ck = tmp_path / "ck"
    r = _trainer(ck, keep_checkpoints=1, keep_best=True).train(_data(), epochs=8,
                                                                val_split=VAL)
    losses = {v["step"]: v["val_loss"] for v in r.val_history}
    best = min(losses, key=losses.get)
    assert best != r.steps  # the case this checks: the best is not the newest
    assert _steps(ck) == [best, r.steps]  # the newest 1 and the best, no other
    assert r.best_checkpoint == str(ck / f"step-{best:08d}.npz")
    record = json.loads((ck / "best.json").read_text())
    assert record["step"] == best and record["checkpoint"] == f"step-{best:08d}.npz"
    # the kept weights are the best validation's: their held-out error, by numpy
    mse = _held_out_mse(r.best_checkpoint)
    assert mse == pytest.approx(record["value"], rel=1e-5)
    assert mse <= min(_held_out_mse(ck / f"step-{r.steps:08d}.npz"), *losses.values()) + 1e-6

    # resumed halfway: the same best, kept over the resume
    cut = tmp_path / "cut"
    _trainer(cut, keep_checkpoints=1, keep_best=True).train(_data(), steps=best + 4,
                                                            val_split=VAL)
    again = _trainer(cut, keep_checkpoints=1, keep_best=True, resume=True).train(
        _data(), epochs=8, val_split=VAL)
    assert again.best_checkpoint == str(cut / f"step-{best:08d}.npz")
    assert _steps(cut) == [best, r.steps]
    # a new run into that folder: the earlier run's scores are not its own
    fresh = _trainer(cut, keep_checkpoints=1, keep_best=True).train(_data(), epochs=1,
                                                                    val_split=VAL)
    assert fresh.best_checkpoint == str(cut / f"step-{fresh.steps:08d}.npz")
    assert list(json.loads((cut / "best.json").read_text())["scores"]) == [str(fresh.steps)]


def test_keep_best_needs_a_folder_and_validation(tmp_path):
    with pytest.raises(ValueError, match="checkpoint_dir"):
        skiff.Trainer(_model(), keep_best=True)
    with pytest.raises(ValueError, match="val_split"):
        _trainer(tmp_path, keep_best=True).train(_data(), steps=2)
    with pytest.raises(ValueError, match="'epoch'"):
        skiff.Trainer(_model(), checkpoint_every="epochs")


@pytest.mark.parametrize("kw, warned", [({"eval_every": 50, "steps": 10}, True),
                                        ({"epochs": 1}, True),
                                        ({"eval_every": 3, "steps": 10}, False)])
def test_an_early_stopping_that_cannot_stop_is_said(kw, warned):
    settings = {k: kw.pop(k) for k in ("eval_every",) if k in kw}
    t = skiff.Trainer(_model(), batch_size=BATCH, early_stopping=2, **settings)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = t.train(_data(), val_split=VAL, **kw)
    said = [str(w.message) for w in caught if "cannot stop" in str(w.message)]
    assert len(said) == int(warned), said
    assert [n for n in r.notes if "cannot stop" in n] == said
    if warned:
        assert f"ends at step {r.steps}" in said[0]


def test_sharded_checkpoints_keep_the_best_too(tmp_path):
    """ZeRO-2's sharded checkpoint folders (one process through the ranks' code)."""
    from skiff.kernels.train.parallel import SelfComm
    from skiff.kernels.train.parallel.data_parallel import ZeRO

    ck = tmp_path / "ck"
    r = _trainer(ck, keep_checkpoints=1, keep_best=True, strategy=ZeRO(2, SelfComm())).train(
        _data(), epochs=8, val_split=VAL)
    losses = {v["step"]: v["val_loss"] for v in r.val_history}
    best = min(losses, key=losses.get)
    kept = sorted(int(p.name[5:]) for p in ck.glob("step-*") if (p / "manifest.json").exists())
    assert kept == sorted({best, r.steps})
    assert r.best_checkpoint == str(ck / f"step-{best:08d}")


@pytest.mark.parametrize("every, eval_every, meet", [(3, 2, 6), ("epoch", 3, 12), (4, 2, None),
                                                     ("epoch", None, None)])
def test_checkpoints_between_validations_are_said(tmp_path, every, eval_every, meet):
    """keep_best scores checkpoints at validated steps: others are said once (4 steps an
    epoch here; transformers refuses save_steps that are no multiple of eval_steps)."""
    t = _trainer(tmp_path / "ck", keep_best=True, checkpoint_every=every, eval_every=eval_every)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = t.train(_data(), steps=8, val_split=VAL)
    said = [str(w.message) for w in caught if "no candidates" in str(w.message)]
    assert len(said) == (meet is not None) and [n for n in r.notes if "no candidates" in n] == said
    if meet:
        assert f"meet only every {meet} steps" in said[0]
