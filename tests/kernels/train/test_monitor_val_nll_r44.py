"""``Trainer(monitor="val_nll")`` on a model whose own loss is its NLL (a dense model: only
an MoE adding its balancing term gives ``val_nll`` beside ``val_loss``) watches ``val_loss``,
as the train job does since round 44 (h18): one line over dense and MoE checkpoints. It
trained to its first validation and then refused "which the validation does not give"."""

from __future__ import annotations

import numpy as np

import skiff
from skiff.kernels.train import models
from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.data import builtin_dataset


def _run(monitor):
    with train_random.using(train_random.new_generator(0)):
        model = models.get("gpt-mini", n_layer=1, n_embd=32, n_head=2, block_size=16)
    data = builtin_dataset("classics", block_size=16, seed=0)
    trainer = skiff.Trainer(model, lr=1e-2, batch_size=4, early_stopping=1, monitor=monitor,
                            eval_every=2)
    return trainer.train(data, steps=6, val_split=0.05)


def test_val_nll_of_a_model_whose_loss_is_its_nll_follows_val_loss():
    by_nll, by_loss = _run("val_nll"), _run("val_loss")
    assert [r["val_loss"] for r in by_nll.val_history] == \
        [r["val_loss"] for r in by_loss.val_history]
    assert len(by_nll.val_history) >= 2
    assert by_nll.steps == by_loss.steps and by_nll.best_step == by_loss.best_step
    assert np.isclose(by_nll.best_val_loss, by_loss.best_val_loss)
