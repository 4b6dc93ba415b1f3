"""Atomic, pickle-free checkpoints: round trip, keep-last-k, damaged files."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.checkpoint import (
    CheckpointError,
    list_checkpoints,
    load_checkpoint,
    load_latest,
    save_checkpoint,
)


def _state(seed):
    rng = np.random.default_rng(seed)
    return {
        "model": {"w": rng.standard_normal((3, 4)), "b": rng.standard_normal(4).astype("f4")},
        "optimizer": {"state": {0: {"exp_avg": rng.standard_normal(2), "step": 7}},
                      "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "wd": float("inf")}]},
        "rng": np.random.default_rng(seed).bit_generator.state,
        "data": {"epoch": 2, "position": 5},
        "note": None,
    }


def _equal(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_equal, a, b))
    return a == b


def test_round_trip_is_exact(tmp_path):
    state = _state(0)
    path = save_checkpoint(tmp_path, state, step=12)
    assert path.name == "step-00000012.npz"
    back = load_checkpoint(path)
    assert back.pop("step") == 12
    assert _equal(state, back)
    # the restored RNG state reproduces the same draws
    g = np.random.default_rng()
    g.bit_generator.state = back["rng"]
    assert g.random() == np.random.default_rng(0).random()


def test_keeps_the_newest_k_and_ignores_temp_files(tmp_path):
    for step in (1, 2, 3, 4):
        save_checkpoint(tmp_path, _state(step), step=step, keep=2)
    (tmp_path / ".step-00000005.npz.tmp").write_bytes(b"half")
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step-00000003.npz",
                                                            "step-00000004.npz"]


def test_damaged_newest_falls_back(tmp_path):
    save_checkpoint(tmp_path, _state(1), step=1)
    p2 = save_checkpoint(tmp_path, _state(2), step=2)
    p2.write_bytes(p2.read_bytes()[: len(p2.read_bytes()) // 2])
    with pytest.raises(CheckpointError, match="step-00000002"):
        load_checkpoint(p2)
    seen = []
    path, state = load_latest(tmp_path, on_corrupt=lambda p, e: seen.append(p.name))
    assert path.name == "step-00000001.npz" and state["step"] == 1
    assert seen == ["step-00000002.npz"]


def test_objects_are_refused(tmp_path):
    with pytest.raises(TypeError, match="object"):
        save_checkpoint(tmp_path, {"x": object()}, step=0)
    with pytest.raises(TypeError, match="1.5"):
        save_checkpoint(tmp_path, {1.5: 0}, step=0)
    assert load_latest(tmp_path) is None


def test_a_resumed_run_says_where_it_went_on_from_or_that_it_could_not(tmp_path):
    """--resume with a mistyped --checkpoint-dir trained from step 0, and a checkpoint already
    past --steps trained nothing, both without a word; the result and the summary say so."""
    from skiff import nn
    from skiff.kernels.train.trainer import Trainer
    from skiff.kinds import KINDS

    rng = np.random.default_rng(0)
    data = (rng.normal(size=(64, 3)).astype("f4"), rng.normal(size=(64, 1)).astype("f4"))
    Trainer(nn.Linear(3, 1), checkpoint_dir=tmp_path / "ck").train(data, steps=6)
    summary = KINDS["train"].summary
    cases = [(tmp_path / "typo", 4, None, "resume: no checkpoint in"),
             (tmp_path / "ck", 4, 6, "resume: the checkpoint at step 6 already reaches the 4 "
                                     "steps asked: nothing trained"),
             (tmp_path / "ck", 9, 6, "resumed from step 6")]
    for where, steps, at, line in cases:
        result = Trainer(nn.Linear(3, 1), checkpoint_dir=where, resume=True).train(
            data, steps=steps)
        assert result.resumed["from_step"] == at and result.to_json()["resumed"] == \
            result.resumed
        assert any(s.startswith(line) for s in summary(result.to_json())), line
    fresh = Trainer(nn.Linear(3, 1)).train(data, steps=1)
    assert fresh.resumed is None and "resumed" not in fresh.to_json()
