"""Round 29, resume cost: a checkpoint's history is stored as arrays (one per column), not a
JSON object per row, and a resume with nothing left to train does not write its checkpoint
again. The oracle is an uninterrupted run of the same Trainer: what a resumed run restores
must be what that run had."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from skiff import nn
from skiff.kernels.train.checkpoint import (
    flatten_state,
    load_checkpoint,
    save_checkpoint,
    unflatten_state,
)
from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.trainer import Trainer

TIMING = ("samples_per_s", "tokens_per_s")  # wall-clock figures: differ between any two runs


def _data(n=96):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, 5)).astype("f4")
    return x, (x @ rng.normal(size=(5, 2)) + 0.1 * rng.normal(size=(n, 2))).astype("f4")


def _model():
    train_random.seed(0)
    return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2))


def _trainer(model, where, **kw):
    return Trainer(model, checkpoint_dir=where, batch_size=16, lr=0.01, seed=5, **kw)


def _meta(path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        return json.loads(bytes(z["__meta__"]).decode("utf-8"))


def _untimed(rows):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def _same_rows(got, want):
    """Equal values, equal Python types, equal key order: what a JSON dump of them shows."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert list(g) == list(w)
        for k in w:
            assert type(g[k]) is type(w[k]), k
            assert g[k] == w[k] or (isinstance(w[k], float) and math.isnan(w[k])
                                    and math.isnan(g[k])), (k, g[k], w[k])


def _cut(where, data, steps, at, **kw):
    """A run of ``steps`` steps interrupted after step ``at``: its checkpoints after ``at``
    removed, as if it had stopped there (the schedule is the whole run's)."""
    _trainer(_model(), where, checkpoint_every=at, keep_checkpoints=None, **kw).train(
        data, steps=steps)
    for later in where.glob("step-*.npz"):
        if int(later.stem.split("-")[1]) > at:
            later.unlink()
    return load_checkpoint(where / f"step-{at:08d}.npz")


def test_a_resumed_run_has_the_uninterrupted_runs_history_and_weights(tmp_path):
    data, val = _data(), _data(32)
    whole = _trainer(_model(), tmp_path / "whole").train(data, steps=14, val_dataset=val)
    _trainer(_model(), tmp_path / "cut", checkpoint_every=6, keep_checkpoints=None).train(
        data, steps=14, val_dataset=val)
    ck = load_checkpoint(tmp_path / "cut" / "step-00000006.npz")
    last = load_checkpoint(tmp_path / "cut" / "step-00000014.npz")
    _same_rows(ck["history"], last["history"][:6])  # restored exactly, timing included
    for later in ("step-00000012.npz", "step-00000014.npz"):
        (tmp_path / "cut" / later).unlink()
    rest = _trainer(_model(), tmp_path / "cut", resume=True).train(data, steps=14,
                                                                   val_dataset=val)
    assert rest.resumed["from_step"] == 6 and rest.steps == 14
    _same_rows(rest.history[:6], ck["history"])
    _same_rows(_untimed(rest.history), _untimed(whole.history))
    _same_rows(rest.val_history, whole.val_history)
    for (name, a), (_, b) in zip(whole.model.state_dict().items(),
                                 rest.model.state_dict().items()):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)


def test_the_history_is_arrays_so_the_checkpoint_json_does_not_grow_with_steps(tmp_path):
    data = _data()
    _trainer(_model(), tmp_path / "short").train(data, steps=3)
    _trainer(_model(), tmp_path / "long").train(data, steps=60)
    short, long = (_meta(tmp_path / d / f"step-{s:08d}.npz")
                   for d, s in (("short", 3), ("long", 60)))
    assert len(json.dumps(long)) < len(json.dumps(short)) + 200  # same tree, other numbers
    with np.load(tmp_path / "long" / "history-00000000-00000060.npz") as z:
        loss = [k for k in z.files if k.endswith("/rows/loss")]
        assert len(loss) == 1 and z[loss[0]].dtype == np.float64 and z[loss[0]].shape == (60,)


def test_a_resume_with_nothing_left_to_train_leaves_its_checkpoint_alone(tmp_path):
    data = _data()
    where = tmp_path / "ck"
    ck = _cut(where, data, 12, 8)
    path = where / "step-00000008.npz"
    before, stamp = path.read_bytes(), path.stat().st_mtime_ns
    for steps in (8, 5):  # at the end, and past the steps asked
        again = _trainer(_model(), where, resume=True).train(data, steps=steps)
        assert again.steps == 8 and again.checkpoint == str(path)
        assert path.read_bytes() == before and path.stat().st_mtime_ns == stamp
        _same_rows(again.history, ck["history"])
        for name, a in again.model.state_dict().items():
            np.testing.assert_array_equal(np.asarray(a), np.asarray(ck["model"][name]),
                                          err_msg=name)
    # and it still resumes exactly: on to 12 steps as an uninterrupted run of 12
    whole = _trainer(_model(), tmp_path / "whole").train(data, steps=12)
    on = _trainer(_model(), where, resume=True).train(data, steps=12)
    assert on.resumed["from_step"] == 8
    _same_rows(_untimed(on.history), _untimed(whole.history))
    for (name, a), (_, b) in zip(whole.model.state_dict().items(),
                                 on.model.state_dict().items()):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)
    assert (where / "step-00000012.npz").is_file()


@pytest.mark.parametrize("rows", [
    [{"step": 1, "loss": 0.5, "ok": True}, {"step": 2, "loss": float("nan"), "ok": False}],
    [{"step": 1, "loss": -0.0}, {"step": 2, "grad_norm": float("inf"), "loss": 1e-300},
     {"loss": 2.5, "step": 3}, {}],                     # rows of other keys and key orders
    [{"step": 1, "loss": 0.5}, {"step": 2, "loss": 1}],  # float then int: kept apart
    [{"step": 1, "note": "warmup"}],                     # a string: stored as before
    [{"step": np.int64(1), "loss": np.float32(0.25)},   # numpy scalars: numpy scalars back
     {"step": np.int64(2), "loss": np.float32(np.nan)}],
    [{"loss": np.float64(0.25)}, {"loss": 0.5}],          # numpy, then Python: as before
    [{"acc": np.complex64(1j)}],                           # complex: stored as before
    [{"step": 2**63, "loss": 0.5}],                     # past int64: stored as before
    [{"m": {"a": 1.0}}],                                # nested: stored as before
])
def test_rows_come_back_equal_of_the_same_types_in_the_same_key_order(tmp_path, rows):
    path = save_checkpoint(tmp_path, {"history": rows, "other": [1, 2.0]}, step=1)
    back = load_checkpoint(path)
    assert back["other"] == [1, 2.0] and type(back["other"][0]) is int
    assert len(back["history"]) == len(rows)
    for g, w in zip(back["history"], rows):
        assert list(g) == list(w)
        for k in w:
            if isinstance(w[k], dict):
                assert g[k] == w[k]
                continue
            if isinstance(w[k], np.generic) and isinstance(g[k], np.ndarray):
                assert g[k].shape == () and g[k].dtype == w[k].dtype  # the old way: 0-d
            else:
                assert type(g[k]) is type(w[k]), k
            assert g[k] == w[k] or (math.isnan(w[k]) and math.isnan(g[k]))
            if isinstance(w[k], (float, np.floating)):
                assert math.copysign(1, g[k]) == math.copysign(1, w[k])


def old_tree(rows):  # how a checkpoint before round 29 held a history
    return {"__dict__": {"history": [{"__dict__": r} for r in rows]}}


def test_old_checkpoints_with_a_history_of_json_rows_still_load():
    rows = [{"step": 1, "loss": 0.5}, {"step": 2, "loss": 0.25}]
    assert flatten_state({"history": rows})[0] == old_tree(rows)  # the default: as before
    tree, arrays = flatten_state({"history": rows}, rows=True)
    assert "__rows__" in tree["__dict__"]["history"]
    old = old_tree(rows)
    assert unflatten_state(old, {}) == {"history": rows}
    assert unflatten_state(tree, arrays) == {"history": rows}


def test_a_history_of_numpy_scalars_is_arrays_too_not_one_member_a_value(tmp_path):
    """An evaluator's metrics as numpy scalars (np.float64 from a numpy mean) were stored as
    one 0-d array, one zip member, per value."""
    rows = [{"step": i, "val_acc": np.float64(i / 50), "f1": np.float32(i / 7)}
            for i in range(50)]
    path = save_checkpoint(tmp_path, {"val_history": rows}, step=1)
    with np.load(path) as z:
        assert len(z.files) <= 1 + 3  # __meta__ and one array per column
    back = load_checkpoint(path)["val_history"]
    assert back == rows
    assert all(type(b["f1"]) is np.float32 and type(b["step"]) is int for b in back)
