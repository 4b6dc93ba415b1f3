"""Round 38 (h5): ``schedule=lambda opt: ReduceLROnPlateau(opt, ...)``, a scheduler stepped on
a validation metric. It was refused ("use a step-based scheduler, or a callback's
on_validation_end"); now the Trainer steps it after each validation (each epoch's end) on
``monitor`` (``"val_loss"`` by default, what early stopping watches; on several ranks their
mean), never after an optimizer step, as a torch loop calls ``scheduler.step(val_loss)``.

The oracle: a torch 2.13 loop with ``torch.optim.lr_scheduler.ReduceLROnPlateau`` on the same
batches from the same weights: every step's lr and loss, and each epoch's validation loss."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff import nn
from skiff.optim.lr_scheduler import ReduceLROnPlateau

LR, BATCH, EPOCHS = 0.3, 8, 8


def _data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 4)).astype("f4")
    y = (x @ np.array([1.0, -1.0, 0.5, 2.0], "f4"))[:, None] + rng.normal(size=(40, 1)) * 0.5
    return (x[:32], y[:32].astype("f4")), (x[32:], y[32:].astype("f4"))


def _torch(start, train, val, **plateau):
    lin = torch.nn.Linear(4, 1)
    lin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in start.items()})
    opt = torch.optim.SGD(lin.parameters(), lr=LR, momentum=0.9)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, **plateau)
    (x, y), (vx, vy) = [tuple(torch.tensor(a) for a in d) for d in (train, val)]
    lrs, losses, vals = [], [], []
    for _ in range(EPOCHS):
        for i in range(0, len(x), BATCH):
            lrs.append(opt.param_groups[0]["lr"])
            loss = torch.nn.functional.mse_loss(lin(x[i:i + BATCH]), y[i:i + BATCH])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        with torch.no_grad():
            vals.append(torch.nn.functional.mse_loss(lin(vx), vy).item())
        sched.step(vals[-1])
    return lrs, losses, vals


def test_reduce_lr_on_plateau_steps_on_each_validation_as_a_torch_loop():
    train, val = _data()
    skiff.seed(0)
    model = nn.Linear(4, 1)
    start = {k: np.array(v) for k, v in model.state_dict().items()}
    plateau = {"factor": 0.5, "patience": 0}
    trainer = skiff.Trainer(model, optimizer="sgd", lr=LR, batch_size=BATCH, shuffle=False,
                            clip=None, schedule=lambda opt: ReduceLROnPlateau(opt, **plateau))
    result = trainer.train(train, epochs=EPOCHS, val_dataset=val)
    lrs, losses, vals = _torch(start, train, val, **plateau)
    assert len(set(lrs)) > 2  # the plateau was reached: the lr was cut more than once
    np.testing.assert_allclose([r["lr"] for r in result.history], lrs, rtol=1e-6)
    np.testing.assert_allclose(result.losses, losses, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose([v["val_loss"] for v in result.val_history], vals, rtol=2e-5)


def test_a_plateau_schedule_needs_validation_and_the_monitors_direction():
    train, val = _data()
    model = nn.Linear(4, 1)
    with pytest.raises(ValueError, match="give val_dataset= or val_split="):
        skiff.Trainer(model, schedule=ReduceLROnPlateau).train(train, steps=1)
    with pytest.raises(ValueError, match=r"ReduceLROnPlateau\(mode='min'\) would step on "
                                         r"val_r2, where larger is better: give mode='max'"):
        skiff.Trainer(model, schedule=ReduceLROnPlateau, monitor="val_r2").train(
            train, steps=1, val_dataset=val)


def test_a_scheduler_made_on_the_given_optimizer_is_used_as_it_is():
    """``Trainer(model, optimizer=opt, schedule=StepLR(opt, 2, 0.5))``, what Lightning's
    ``configure_optimizers`` returns, was refused ("unknown schedule <...StepLR object>"):
    stepped per optimizer step as a torch loop steps it (lrs equal torch's); a plateau one
    after each validation; one made on another optimizer is refused naming the factory."""
    train, val = _data()
    skiff.seed(0)
    model = nn.Linear(4, 1)
    opt = skiff.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    sched = skiff.optim.lr_scheduler.StepLR(opt, 3, 0.5)
    result = skiff.Trainer(model, optimizer=opt, schedule=sched, batch_size=BATCH,
                           clip=None).train(train, epochs=2)
    topt = torch.optim.SGD(torch.nn.Linear(4, 1).parameters(), lr=LR, momentum=0.9)
    tsched = torch.optim.lr_scheduler.StepLR(topt, 3, 0.5)
    want = []
    for _ in range(8):
        want.append(topt.param_groups[0]["lr"])
        topt.step()
        tsched.step()
    np.testing.assert_allclose([r["lr"] for r in result.history], want, rtol=1e-9)
    model = nn.Linear(4, 1)
    opt = skiff.optim.SGD(model.parameters(), lr=LR)
    plateau = ReduceLROnPlateau(opt, factor=0.5, patience=0)
    skiff.Trainer(model, optimizer=opt, schedule=plateau, batch_size=BATCH).train(
        train, epochs=3, val_dataset=val)
    assert plateau.last_step == 3  # stepped on each of the 3 validations, not per step
    other = skiff.optim.SGD(nn.Linear(4, 1).parameters(), lr=LR)
    with pytest.raises(ValueError, match=r"schedule is a StepLR made on an optimizer the "
                                         r"Trainer does not step .*schedule=lambda opt: "
                                         r"StepLR\(opt, \.\.\.\)"):
        skiff.Trainer(model, optimizer=opt,
                      schedule=skiff.optim.lr_scheduler.StepLR(other, 3))
