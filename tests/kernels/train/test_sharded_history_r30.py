"""Round 30: a sharded (parallel) checkpoint stores a loss history as one array per column,
as the one-file checkpoint does, and reads it back equal: the same rows, the same key order,
the same Python and numpy types (the oracle is the history that was saved)."""

import json
import zipfile

import numpy as np

from skiff.kernels.train.parallel.checkpoint import load_sharded, save_sharded
from skiff.kernels.train.parallel.comm import SelfComm


def _history(n):
    rng = np.random.default_rng(3)
    rows = []
    for i in range(n):
        row = {"step": i + 1, "loss": float(rng.random()), "lr": 1e-3 * (1 - i / n)}
        if i % 7 == 0:  # another layout: a row with a numpy scalar and a flag
            row = {"step": i + 1, "loss": float(rng.random()), "gnorm": np.float32(rng.random()),
                   "skipped": bool(i % 2)}
        rows.append(row)
    return rows


def test_history_round_trips_as_columns(tmp_path):
    history = _history(3000)
    val = [{"epoch": 1, "step": 10, "val_loss": 0.5, "val_accuracy": 0.75},
           {"epoch": 2, "step": 20, "val_loss": float("inf"), "val_accuracy": 0.5}]
    replicated = {"history": history, "val_history": val, "step": 3000,
                  "model": {"w": np.arange(6, dtype=np.float32).reshape(2, 3)},
                  "optimizer": {"state": {0: {"m": np.ones(3)}},
                                "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999)}]}}
    folder = save_sharded(tmp_path, SelfComm(), replicated=replicated, step=3000)
    got = load_sharded(tmp_path, SelfComm())["replicated"]
    assert got["history"] == history
    for a, b in zip(got["history"], history):
        assert list(a) == list(b)
        assert [type(v) for v in a.values()] == [type(v) for v in b.values()]
    assert got["val_history"][0] == val[0] and got["val_history"][1]["val_loss"] == float("inf")
    assert got["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    np.testing.assert_array_equal(got["model"]["w"], replicated["model"]["w"])
    # the history is columns, not a JSON object per row in the shard's tree
    with zipfile.ZipFile(folder / "shard-00000.npz") as z:
        meta = json.loads(np.load(z.open("__meta__.npy")).tobytes().decode())
    text = json.dumps(meta)
    assert "__rows__" in text and len(text) < 20_000, len(text)
