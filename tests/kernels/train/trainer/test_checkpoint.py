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
