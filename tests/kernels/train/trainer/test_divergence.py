"""Divergence (issue 15.11): noticed from the loss trend (a warning, a stop when asked),
"last good checkpoint" meaning from before the divergence began, and overflow as a clean
TrainingDiverged instead of a ZeroDivisionError from layer norm."""

import math

import numpy as np
import pytest

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.data import builtin_dataset
from skiff.kernels.train.divergence import DivergenceWatch
from skiff.kernels.train.models.gpt import GPT, GPTConfig
from skiff.kernels.train.trainer import Trainer, TrainingDiverged


class Recorder(NullReporter):
    """A reporter that keeps what it is told (the kernel's side of a run folder)."""

    def __init__(self):
        super().__init__()
        self.logs, self.infos = [], {}

    def log(self, message, *, level="info"):
        self.logs.append((level, message))

    def info(self, **fields):
        self.infos.update(fields)


DATA = builtin_dataset("classics", block_size=16, seed=0)


def _gpt():
    with train_random.using(train_random.new_generator(0)):
        return GPT(GPTConfig(block_size=16, n_layer=1, n_head=2, n_embd=16))


def _trainer(lr, **kw):
    return Trainer(_gpt(), lr=lr, batch_size=8, device="cpu", schedule="constant", **kw)


def test_a_runaway_loss_is_warned_about_without_a_nan():
    rep = Recorder()
    result = _trainer(10.0, reporter=rep).train(DATA, steps=8)
    losses = [r["loss"] for r in result.history]
    assert all(math.isfinite(v) for v in losses) and max(losses) > 5 * losses[0]  # it ran away
    warnings = [m for level, m in rep.logs if level == "warning" and "diverging" in m]
    assert len(warnings) == 1 and "--stop-on-divergence" in warnings[0]
    assert rep.infos["divergence"]["began"] == 1


def test_stop_on_divergence_names_the_checkpoint_before_it_began(tmp_path):
    rep = Recorder()
    trainer = _trainer(10.0, reporter=rep, stop_on_divergence=True, checkpoint_dir=tmp_path,
                       checkpoint_every=1, keep_checkpoints=10)
    with pytest.raises(TrainingDiverged) as err:
        trainer.train(DATA, steps=50)
    message = str(err.value)
    assert "\n" not in message and "the loss rose from" in message
    # the divergence began at step 1 (the loss only rose after it): step 1's checkpoint is
    # the good one, although checkpoints of later steps (already diverging) exist
    assert "the last good checkpoint (before the divergence began) is step-00000001.npz" \
        in message
    assert (tmp_path / "step-00000003.npz").exists()
    assert rep.infos["divergence"]["detected_at"] < 50


def test_overflow_is_a_clean_divergence_not_a_zero_division():
    with pytest.raises(TrainingDiverged) as err:
        _trainer(1e30).train(DATA, steps=4)
    message = str(err.value)
    assert "training diverged at step" in message and "overflowed" in message
    assert "learning rate 1e+30" in message and "\n" not in message


def test_a_healthy_run_is_not_called_diverging():
    rep = Recorder()
    result = _trainer(3e-3, reporter=rep, stop_on_divergence=True).train(DATA, steps=30)
    assert result.history[-1]["loss"] < result.history[0]["loss"]
    assert not [m for level, m in rep.logs if level == "warning"]


def test_the_watch_on_curves():
    rng = np.random.default_rng(0)
    noisy = 3.0 * np.exp(-np.arange(300) / 80) + 0.3 + 0.2 * rng.standard_normal(300)
    watch = DivergenceWatch()
    assert not any(watch.update(i, float(v)) for i, v in enumerate(noisy, 1))
    watch = DivergenceWatch()
    curve = [4.0, 3.0, 2.5, 2.4, 30.0, 40.0, 35.0, 50.0]
    hits = [i for i, v in enumerate(curve, 1) if watch.update(i, v)]
    assert hits == [7] and watch.onset == 4
    watch.note_checkpoint(2, __file__)      # an existing path stands for a checkpoint
    assert watch.good_checkpoint(8) is not None
    with pytest.raises(ValueError, match="factor > 1"):
        DivergenceWatch(factor=1.0)


@pytest.mark.parametrize("lr", [float("inf"), float("nan"), -1.0, 0.0])
def test_bad_learning_rates_are_refused(lr):
    with pytest.raises(ValueError, match="lr must be a positive finite number"):
        _trainer(lr)
