"""Round 38 (h5): ``Trainer(eval_every=N)`` validates the validation data every N steps too
(transformers' ``eval_steps``, which ``eval_steps=`` is told to spell ``eval_every``;
Lightning's ``val_check_interval``). It ran only an ``evaluator`` every N steps: with
``val_dataset`` and no evaluator, ``eval_every=5`` over a 16-step epoch gave one validation,
at step 16, silently. Early stopping counts these validations (transformers'
``EarlyStoppingCallback`` counts evaluations). The oracle: a torch 2.13 loop's validation
loss at the same steps."""

from __future__ import annotations

import numpy as np
import torch

import skiff
from skiff import nn

LR, BATCH, EVERY = 0.05, 10, 5
rng = np.random.default_rng(0)
X = rng.normal(size=(200, 3)).astype("f4")
Y = (X @ np.array([1.0, -2.0, 0.5], "f4"))[:, None] + 0.1


def test_validation_every_eval_every_steps_as_transformers_eval_steps():
    skiff.seed(0)
    model = nn.Linear(3, 1)
    twin = torch.nn.Linear(3, 1)
    twin.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()})
    trainer = skiff.Trainer(model, optimizer="sgd", lr=LR, batch_size=BATCH, clip=None,
                            schedule="constant", shuffle=False, eval_every=EVERY)
    result = trainer.train((X, Y), epochs=1, val_split=0.2)
    opt = torch.optim.SGD(twin.parameters(), lr=LR, momentum=0.9)
    x, y = torch.tensor(X[:160]), torch.tensor(Y[:160])
    vx, vy = torch.tensor(X[160:]), torch.tensor(Y[160:])
    want = {}
    for step, i in enumerate(range(0, 160, BATCH), start=1):
        loss = torch.nn.functional.mse_loss(twin(x[i:i + BATCH]), y[i:i + BATCH])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % EVERY == 0 or step == 16:
            with torch.no_grad():
                want[step] = torch.nn.functional.mse_loss(twin(vx), vy).item()
    assert [v["step"] for v in result.val_history] == [5, 10, 15, 16]
    np.testing.assert_allclose([v["val_loss"] for v in result.val_history],
                               [want[s] for s in (5, 10, 15, 16)], rtol=1e-5)
