"""Round 32: a run with early stopping that is cut short (its job cancelled, its launcher
killed, a callback's stop) and resumed ends as the run that was never cut.

The cut run put early stopping's best weights back into the model before writing its last
checkpoint, so the checkpoint held an earlier step's weights with this step's optimizer
state and data position: the resume went on from them. A ``python -m skiff train gpt-mini
corpus.txt --np 2 --strategy pp --steps 24 --val-split 0.1 --early-stop 50`` whose launcher
was killed at step 14 logged 3.316 at step 15 where the whole run logged 2.795 (2.81 against
2.39 at the end). The oracle is the uninterrupted run: the same losses and the same final
weights, bit for bit (one process, SGD with momentum, so a wrong start shows at once).
"""

from __future__ import annotations

import numpy as np
import pytest

import skiff
from skiff import nn
from skiff.kernels.train.checkpoint import load_checkpoint

STEPS, CUT, BATCH = 24, 9, 16


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype("f4")
    y = (x[:, 0] + 0.8 * rng.normal(size=64) > 0).astype("i8")
    xv = rng.normal(size=(40, 3)).astype("f4")
    return (x, y), (xv, (xv[:, 0] > 0).astype("i8"))


class _Cancel:
    """A reporter whose job is cancelled after ``at`` steps (a notebook's stop button, the
    launcher gone): the Trainer asks should_stop() before each step."""

    def __init__(self, at):
        from skiff.kernels.train.trainer_launch import launch_reporter

        self._inner, self.at, self.steps = launch_reporter("single"), at, 0

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def progress(self, done, total=None, **kw):
        self.steps = done
        return self._inner.progress(done, total, **kw)

    def should_stop(self):
        return self.steps >= self.at


def _run(ckpt, *, cut=None, how="callback", resume=False):
    skiff.seed(1)
    model = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 2))
    kw = {}
    if cut is not None and how == "callback":
        kw["callbacks"] = [lambda m: m["step"] == cut]
    if cut is not None and how == "cancel":
        kw["reporter"] = _Cancel(cut)
    train, val = _data()
    trainer = skiff.Trainer(model, lr=0.5, optimizer="sgd", schedule="constant", clip=None,
                            batch_size=BATCH, seed=3, early_stopping=50, checkpoint_dir=ckpt,
                            checkpoint_every=100, resume=resume, **kw)
    result = trainer.train(train, val_dataset=val, steps=STEPS)
    return model, result


@pytest.mark.parametrize("how", ["callback", "cancel"])
def test_a_cut_run_resumes_to_the_whole_runs_weights(tmp_path, how):
    whole, full = _run(tmp_path / "whole")
    cut_model, cut = _run(tmp_path / "cut", cut=CUT, how=how)
    assert cut.steps == CUT and cut.stopped in ("stopped by a callback", "cancelled")
    # the case: early stopping's best is from an earlier validation than the cut
    best = [v["step"] for v in cut.val_history
            if v["val_loss"] == min(r["val_loss"] for r in cut.val_history)][0]
    assert best < CUT
    state = load_checkpoint(cut.checkpoint)
    assert state["step"] == CUT
    resumed, res = _run(tmp_path / "cut", resume=True)
    np.testing.assert_array_equal([h["loss"] for h in res.history],
                                  [h["loss"] for h in full.history])
    for (name, a), (_, b) in zip(whole.state_dict().items(), resumed.state_dict().items()):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)
    # the cut run's own model still ends with the best weights (as before)
    assert cut.stopped is not None
