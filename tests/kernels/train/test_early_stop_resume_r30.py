"""Round 30: a run with early stopping, killed and resumed from its checkpoint, stops where
the uninterrupted run stops and ends with the same best weights. The resumed run counted the
patience afresh and had forgotten the best weights: it trained on to step 80 (best step 60)
where the run stopped at step 40 with step 20's weights (1.25 off). The oracle: torch 2.13's
SGD on the same batches, validated each epoch, with early stopping's rule written out here."""

from __future__ import annotations

import numpy as np
import torch

import skiff
from skiff import nn

PATIENCE, EPOCHS, BATCH, LR, SEED = 2, 30, 16, 0.3, 4


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(160, 3)).astype("f4")
    y = (x[:, 0] + 0.3 * rng.normal(size=160) > 0).astype("i8")
    xv = rng.normal(size=(60, 3)).astype("f4")
    return x, y, xv, (xv[:, 0] > 0).astype("i8")


def _trainer(ckpt, **kw):
    skiff.seed(1)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    return skiff.Trainer(model, lr=LR, optimizer="sgd", schedule="constant", clip=None,
                         batch_size=BATCH, seed=SEED, early_stopping=PATIENCE,
                         checkpoint_dir=ckpt, checkpoint_every=10, **kw)


def _torch_early_stopped(start, x, y, xv, yv):
    twin = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    twin = twin.double()
    twin.load_state_dict({k: torch.tensor(np.asarray(v), dtype=torch.float64)
                          for k, v in start.items()})
    opt = torch.optim.SGD(twin.parameters(), lr=LR, momentum=0.9)
    crit = torch.nn.CrossEntropyLoss()
    best, best_step, since, best_w, step = None, None, 0, None, 0
    for epoch in range(EPOCHS):
        order = np.random.default_rng([SEED, epoch]).permutation(len(x))
        for i in range(0, len(x), BATCH):
            idx = order[i:i + BATCH]
            loss = crit(twin(torch.tensor(x[idx], dtype=torch.float64)), torch.tensor(y[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
        with torch.no_grad():  # the Trainer's validation: batch means weighted by rows
            val = sum(crit(twin(torch.tensor(xv[i:i + BATCH], dtype=torch.float64)),
                           torch.tensor(yv[i:i + BATCH])).item() * len(yv[i:i + BATCH])
                      for i in range(0, len(xv), BATCH)) / len(xv)
        if best is None or val < best - 1e-4 * abs(best):
            best, best_step, since = val, step, 0
            best_w = {k: v.clone() for k, v in twin.state_dict().items()}
        else:
            since += 1
            if since >= PATIENCE:
                break
    return step, best_step, {k: v.numpy() for k, v in best_w.items()}


class _Killed(Exception):
    pass


def test_a_resumed_run_stops_early_where_the_whole_run_does(tmp_path):
    x, y, xv, yv = _data()
    start = _trainer(None).model.state_dict()
    want_steps, want_best, want_w = _torch_early_stopped(start, x, y, xv, yv)
    assert want_best < want_steps < EPOCHS * 10  # the case: stopped early, best restored

    def kill(m):
        if m["step"] == want_steps - 5:  # after the checkpoint at want_steps - 10
            raise _Killed

    try:
        _trainer(tmp_path, callbacks=[kill]).train((x, y), epochs=EPOCHS, val_dataset=(xv, yv))
    except _Killed:
        pass
    tr = _trainer(tmp_path, resume=True)
    result = tr.train((x, y), epochs=EPOCHS, val_dataset=(xv, yv))
    assert result.resumed["from_step"] == want_steps - 10
    assert (result.steps, result.best_step) == (want_steps, want_best)
    for k, v in tr.model.state_dict().items():
        np.testing.assert_allclose(np.asarray(v), want_w[k], atol=2e-5)
    # resumed once more from the run's last checkpoint: it had stopped, nothing is trained
    again = _trainer(tmp_path, resume=True).train((x, y), epochs=EPOCHS,
                                                  val_dataset=(xv, yv))
    assert (again.steps, again.best_step) == (want_steps, want_best)
    assert again.stopped and again.stopped.startswith("early stopping")
