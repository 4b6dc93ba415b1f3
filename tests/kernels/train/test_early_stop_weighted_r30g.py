"""Round 30 follow-ups: early stopping on 2 ranks that validate different numbers of rows
watches the loss over all their rows (each rank's val_loss weighted by its rows, or scored
targets), as one process validating both sets together; it watched the unweighted mean of
the ranks' losses (4 rows weighed as much as 28). Oracles: torch 2.13 replays each
validation's weights on the union of the sets (its MSE is the loss to watch) and picks the
best step; rank 1's val_history rows keep their exact keys.

Run as a script on 2 MPI ranks by the test (each rank prints ``RESULT {...}``)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

ROWS = (4, 28)  # validation rows of rank 0 and rank 1
SLOPES = (1.0, 1.8)  # what each rank's validation set wants (training wants 2.0)


def sets():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 3)).astype(np.float32)
    vals = []
    for rows, k in zip(ROWS, SLOPES):
        xv = rng.standard_normal((rows, 3)).astype(np.float32)
        vals.append((xv, k * xv[:, :1]))
    return (x, 2 * x[:, :1]), vals


def rank_main():
    import skiff
    from skiff.kernels.train.parallel import world
    from skiff.nn import Linear, Sequential

    comm = world()
    train, vals = sets()
    skiff.seed(0)
    model = Sequential(Linear(3, 1))
    seen = []

    class Keep:  # each validation's weights, for the torch replay
        def on_validation_end(self, trainer, row):
            w = trainer.strategy.full_state_dict(trainer.model)
            seen.append({k: np.asarray(v).ravel().tolist() for k, v in w.items()})

    trainer = skiff.Trainer(model, strategy="dp", lr=0.02, batch_size=8, seed=0,
                            early_stopping=2, callbacks=[Keep()], verbose=False)
    result = trainer.train(train, epochs=40, val_dataset=vals[comm.rank])
    print("RESULT " + json.dumps({
        "rank": comm.rank, "steps": result.steps, "best_step": result.best_step,
        "val_steps": [v["step"] for v in result.val_history],
        "keys": sorted(result.val_history[-1]), "weights": seen}), flush=True)


@pytest.mark.mpi
def test_early_stopping_weighs_each_ranks_validation_by_its_rows():
    import torch

    from .parallel.mpi_util import run_mpi

    a, b = run_mpi(2, "../../test_early_stop_weighted_r30g.py", timeout=120)
    assert (a["steps"], a["best_step"]) == (b["steps"], b["best_step"])
    assert a["keys"] == ["epoch", "step", "val_loss", "val_r2"]  # no private count
    _, vals = sets()
    x = torch.tensor(np.concatenate([v[0] for v in vals]))
    y = torch.tensor(np.concatenate([v[1] for v in vals]))
    losses = []
    for w in a["weights"]:
        lin = torch.nn.Linear(3, 1)
        lin.load_state_dict({"weight": torch.tensor(w["0.weight"]).reshape(1, 3),
                             "bias": torch.tensor(w["0.bias"])})
        with torch.no_grad():
            losses.append(torch.nn.functional.mse_loss(lin(x), y).item())
    best = a["val_steps"][int(np.argmin(losses))]
    assert a["best_step"] == best, (a["best_step"], best, losses)


if __name__ == "__main__":
    sys.exit(rank_main())
