"""What the tests of kept checkpoints share (round 42 h5: was repeated in round 41's
``test_keep_best_r41h5.py`` and ``test_keep_top_k_r41h9.py``): a 3-feature regression, its
MLP, the steps of the checkpoints in a folder, and the oracle for a checkpoint's score, its
weights run through a numpy forward on the held-out rows."""

from __future__ import annotations

import numpy as np

import skiff
from skiff import nn

N = 80  # rows; the last ``val`` of them are held out (``val_split`` takes the last ones)


def regression(seed: int, noise: float):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, 3)).astype("f4")
    y = (x @ np.array([1.0, -2.0, 0.5], "f4"))[:, None] \
        + noise * rng.standard_normal((N, 1)).astype("f4")
    return x, y


def mlp(seed: int | None = 0):
    if seed is not None:
        skiff.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 1))


def checkpoint_steps(folder) -> list[int]:
    """The steps of the one-file checkpoints (``step-NNNNNNNN.npz``) in ``folder``."""
    return sorted(int(p.name[5:13]) for p in folder.glob("step-*.npz"))


def held_out_mse(path, data, val: float) -> float:
    """The mean squared error of the checkpoint ``path``'s weights on the held-out rows
    (the last ``val`` of ``data``), by a numpy forward in float64."""
    w = mlp(None)
    w.load_state_dict(str(path))
    s = {k: np.asarray(v, dtype=np.float64) for k, v in w.state_dict().items()}
    x, y = data
    x, y = x[N - int(N * val):].astype(np.float64), y[N - int(N * val):]
    h = np.maximum(x @ s["0.weight"].T + s["0.bias"], 0)
    return float(np.mean((h @ s["2.weight"].T + s["2.bias"] - y) ** 2))


def listed_history(folder) -> set:
    """The history side files the checkpoints in ``folder`` list (their JSON, read with
    numpy; round 42: was repeated in the history sweep and merge tests)."""
    import json

    from skiff.kernels.train.checkpoint import list_checkpoints

    found = set()

    def walk(t):
        if isinstance(t, dict):
            if t.get("format") == "skiff-history/1":
                found.update(t["chunks"])
            for v in t.values():
                walk(v)
        elif isinstance(t, list):
            for v in t:
                walk(v)

    for path in list_checkpoints(folder):
        with np.load(path) as z:
            walk(json.loads(bytes(z["__meta__"]).decode())["state"])
    return found
