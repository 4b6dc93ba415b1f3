"""Round 40 (h12): ``Trainer(eval_every=N)`` validates on that step cadence *instead of* at each
epoch's end (transformers' ``eval_strategy="steps"`` with ``eval_steps``, Lightning's integer
``val_check_interval``), and after the last step. It validated at every epoch's end besides:
``python -m skiff train ernie chat.jsonl --val-split 0.25 --eval-every 5`` over one-step
epochs validated every step, five times what was asked (and early stopping's patience, which
counts validations, ran out five times as fast). The oracle: a torch 2.13 loop's validation
loss at the steps transformers' ``eval_steps`` names."""

from __future__ import annotations

import math

import numpy as np
import torch

import skiff
from skiff import nn

LR = 0.05
rng = np.random.default_rng(3)
X = rng.normal(size=(20, 3)).astype("f4")
Y = (X @ np.array([1.0, -2.0, 0.5], "f4"))[:, None] + 0.1


def _torch_val_losses(batch: int, steps: int, due) -> dict:
    """A torch loop over the first 15 rows (val_split=0.25 keeps the last 5 apart), in order,
    ``batch`` rows a step, epoch after epoch: the validation loss after each step ``due``."""
    skiff.seed(0)
    model = nn.Linear(3, 1)
    twin = torch.nn.Linear(3, 1)
    twin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()})
    opt = torch.optim.SGD(twin.parameters(), lr=LR, momentum=0.9)
    x, y = torch.tensor(X[:15]), torch.tensor(Y[:15])
    vx, vy = torch.tensor(X[15:]), torch.tensor(Y[15:])
    starts = list(range(0, 15, batch))
    want = {}
    for step in range(1, steps + 1):
        i = starts[(step - 1) % len(starts)]
        loss = torch.nn.functional.mse_loss(twin(x[i:i + batch]), y[i:i + batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if due(step):
            with torch.no_grad():
                want[step] = torch.nn.functional.mse_loss(twin(vx), vy).item()
    return model, want


def _trainer(model, batch: int, every: int, **kw):
    return skiff.Trainer(model, optimizer="sgd", lr=LR, batch_size=batch, clip=None,
                         schedule="constant", shuffle=False, eval_every=every, **kw)


def test_one_step_epochs_validate_every_n_steps_not_every_epoch():
    model, want = _torch_val_losses(16, 10, lambda s: s % 5 == 0)
    result = _trainer(model, 16, 5).train((X, Y), steps=10, val_split=0.25)
    assert [v["step"] for v in result.val_history] == [5, 10]
    np.testing.assert_allclose([v["val_loss"] for v in result.val_history],
                               [want[5], want[10]], rtol=1e-5)


def test_steps_counted_over_the_run_and_the_last_step_validated():
    # 4 steps an epoch (15 rows by 4), 2 epochs, eval_every=3: steps 3, 6 and the last (8);
    # epoch 1's end (step 4) is no validation of its own (transformers' eval_steps).
    model, want = _torch_val_losses(4, 8, lambda s: s in (3, 6, 8))
    result = _trainer(model, 4, 3).train((X, Y), epochs=2, val_split=0.25)
    assert [v["step"] for v in result.val_history] == [3, 6, 8]
    np.testing.assert_allclose([v["val_loss"] for v in result.val_history],
                               [want[s] for s in (3, 6, 8)], rtol=1e-5)


def test_without_eval_every_each_epoch_end_still_validates():
    skiff.seed(0)
    result = _trainer(nn.Linear(3, 1), 4, None).train((X, Y), epochs=2, val_split=0.25)
    assert [v["step"] for v in result.val_history] == [4, 8]


def test_early_stopping_patience_counts_the_eval_every_validations():
    # lr so large that the loss climbs (finite: 5e2, 1e4, 2e5): patience 2 of eval_every=5
    # validations ends the run at step 15 (validations at 5, 10, 15), not at step 3 as
    # one-step epochs' per-epoch validations made it.
    skiff.seed(0)
    trainer = skiff.Trainer(nn.Linear(3, 1), optimizer="sgd", lr=0.8, batch_size=16,
                            clip=None, schedule="constant", shuffle=False, eval_every=5,
                            early_stopping=2)
    result = trainer.train((X, Y), steps=40, val_split=0.25)
    steps = [v["step"] for v in result.val_history]
    assert steps == [5, 10, 15], steps
    assert result.best_step == 5 and result.steps == 15


def test_a_fraction_of_epochs_is_transformers_count_of_steps():
    # transformers' Trainer (trainer.py, _inner_training_loop): max_steps =
    # math.ceil(num_train_epochs * num_update_steps_per_epoch); 4 steps an epoch here.
    for epochs in (0.625, 2.625, 1.5):
        skiff.seed(0)
        result = _trainer(nn.Linear(3, 1), 4, None).train((X, Y), epochs=epochs, val_split=0.25)
        assert result.steps == math.ceil(epochs * 4), (epochs, result.steps)
