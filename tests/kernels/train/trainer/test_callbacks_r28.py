"""``Trainer(callbacks=[...])``: a user's code after each step and validation, stopping the
run from it; the oracle is the same loop written in torch 2.13 that breaks on the same rule.

Found by a user: ``Trainer(model, callbacks=[...])`` was a TypeError (no way to log each step
to one's own list or stop on one's own rule, as Keras/Lightning callbacks do).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import skiff
from skiff.nn import Linear, ReLU, Sequential


def _setup(n=64):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    y = (x[:, :2].sum(1) > 0).astype(np.int64)
    skiff.seed(0)
    model = Sequential(Linear(8, 16), ReLU(), Linear(16, 2))
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    with torch.no_grad():
        for t, p in zip(ref.parameters(), model.parameters()):
            t.copy_(torch.tensor(np.asarray(p.numpy(), np.float32)))
    return x, y, model, ref


def _torch_until(ref, x, y, *, threshold, steps, batch=8):
    """torch's loop, breaking after the first step whose loss is below ``threshold``."""
    opt = torch.optim.SGD(ref.parameters(), lr=0.2, momentum=0.9)
    losses = []
    for s in range(steps):
        i = (s * batch) % len(x)
        loss = torch.nn.functional.cross_entropy(ref(torch.tensor(x[i:i + batch])),
                                                 torch.tensor(y[i:i + batch]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if loss.item() < threshold:
            break
    return losses


def _trainer(model, callbacks, **kw):
    return skiff.Trainer(model, optimizer="sgd", lr=0.2, batch_size=8, shuffle=False,
                         schedule="constant", clip=None, callbacks=callbacks, **kw)


@pytest.mark.parametrize("how", ["return", "attribute"])
def test_a_callback_stops_where_torch_loop_breaks(how, tmp_path):
    x, y, model, ref = _setup()
    full = _torch_until(ref, x, y, threshold=-1.0, steps=40)  # no break: where it drops
    ranked = sorted(full[5:])
    k = len(ranked) // 5  # halfway between two of torch's losses: no float32 tie to break
    threshold = (ranked[k] + ranked[k + 1]) / 2
    assert ranked[k + 1] - ranked[k] > 1e-3 * threshold
    x, y, model, ref = _setup()
    want = _torch_until(ref, x, y, threshold=threshold, steps=40)
    assert len(want) < 40  # the rule fires
    seen = []

    class Stopper:
        def on_step_end(self, trainer, metrics):
            seen.append(metrics)
            if metrics["loss"] < threshold:
                if how == "return":
                    return True
                trainer.should_stop = True
            return None

    trainer = _trainer(model, [Stopper()], checkpoint_dir=tmp_path)
    result = trainer.train((x, y), steps=40)
    np.testing.assert_allclose([m["loss"] for m in seen], want, rtol=1e-4)
    assert [m["step"] for m in seen] == list(range(1, len(want) + 1))
    assert result.steps == len(want) and result.stopped == "stopped by a callback"
    for t, p in zip(ref.parameters(), model.parameters()):
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), atol=1e-5)
    assert result.checkpoint is not None  # written as for a cancel: the run can resume
    again = trainer.train((x, y), steps=2)  # the stop ended that run only
    assert again.steps == 2 and again.stopped is None


def test_function_callbacks_see_every_step_and_validation_hooks_run():
    x, y, model, ref = _setup()
    want = _torch_until(ref, x, y, threshold=-1.0, steps=8)
    rows, vals, ends = [], [], []

    class Watch:
        def on_validation_end(self, trainer, metrics):
            vals.append(metrics)

        def on_train_end(self, trainer, result):
            ends.append(result.steps)

    trainer = _trainer(model, [rows.append, Watch()], log_every=4)
    trainer.train((x, y), epochs=1, val_dataset=(x[:16], y[:16]))
    np.testing.assert_allclose([r["loss"] for r in rows], want, rtol=1e-4)  # log_every aside
    with torch.no_grad():
        val = torch.nn.functional.cross_entropy(ref(torch.tensor(x[:16])),
                                                torch.tensor(y[:16])).item()
    assert [v["step"] for v in vals] == [8] and vals[0]["val_loss"] == pytest.approx(val,
                                                                                      rel=1e-5)
    assert ends == [8]


def test_a_callback_that_is_neither_says_what_it_takes():
    with pytest.raises(TypeError, match=r"cb\(metrics\) or an object with on_step_end"):
        skiff.Trainer(_setup()[2], callbacks=[42])
