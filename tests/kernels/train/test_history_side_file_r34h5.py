"""Round 34 (h5): a run's loss history was stored whole in every checkpoint (1.44 of a
1.5 MB checkpoint at 30,000 steps, written again at each). Each checkpoint now writes the
rows since the previous one once, as a side file of the checkpoint folder
(``history-A-B.npz``), and lists the files. The oracle is an uninterrupted run of the
same Trainer: a run resumed from any checkpoint has its rows, types and key order, and the
checkpoint files stop growing with the steps."""

from __future__ import annotations

import math
import shutil

import numpy as np

from skiff import nn
from skiff.kernels.train.checkpoint import (
    is_history_ref,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
)
from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.trainer import Trainer

TIMING = ("samples_per_s", "tokens_per_s")


def _data(n=96):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, 5)).astype("f4")
    return x, (x @ rng.normal(size=(5, 2)) + 0.1 * rng.normal(size=(n, 2))).astype("f4")


def _model():
    train_random.seed(0)
    return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2))


def _trainer(where, **kw):
    return Trainer(_model(), checkpoint_dir=where, batch_size=16, lr=0.01, seed=5,
                   checkpoint_every=6, keep_checkpoints=None, **kw)


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert list(g) == list(w)
        for k in w:
            if k in TIMING:
                continue
            assert type(g[k]) is type(w[k]) and (g[k] == w[k] or (
                isinstance(w[k], float) and math.isnan(w[k]) and math.isnan(g[k]))), k


def test_each_checkpoint_lists_side_files_written_once_and_loads_the_whole_history(tmp_path):
    whole = _trainer(tmp_path / "ck").train(_data(), steps=60)
    files = sorted(p.name for p in (tmp_path / "ck").glob("history-*"))
    # merged as a binary counter (round 42 h13): 6-12 went into 0-12, ...; every file is
    # listed by a checkpoint (keep_checkpoints=None), the newest lists 0-48 and 48-60
    assert files == sorted(f"history-{a:08d}-{b:08d}.npz" for a, b in [
        (0, 6), (0, 12), (12, 18), (0, 24), (24, 30), (24, 36), (36, 42), (0, 48),
        (48, 54), (48, 60)])
    newest = load_checkpoint(list_checkpoints(tmp_path / "ck")[-1])["history_ref"]["chunks"]
    assert newest == ["history-00000000-00000048.npz", "history-00000048-00000060.npz"]
    sizes = [p.stat().st_size for p in list_checkpoints(tmp_path / "ck")]
    assert len(sizes) == 10 and max(sizes) - min(sizes) < 2048  # not growing with the rows
    for path in list_checkpoints(tmp_path / "ck"):
        state = load_checkpoint(path)
        _same(state["history"], whole.history[:state["step"]])
    with np.load(list_checkpoints(tmp_path / "ck")[-1]) as z:
        assert not [k for k in z.files if "/history/" in k]


def test_a_run_resumed_mid_way_has_the_whole_runs_history_and_writes_on(tmp_path):
    data = _data()
    whole = _trainer(tmp_path / "whole").train(data, steps=60)
    cut = _trainer(tmp_path / "cut", callbacks=[lambda m: m["step"] == 27]).train(data,
                                                                                   steps=60)
    assert cut.steps == 27  # stopped between two checkpoints: a checkpoint at 27 too
    rest = _trainer(tmp_path / "cut", resume=True).train(data, steps=60)
    _same(rest.history, whole.history)
    state = load_checkpoint(tmp_path / "cut" / "step-00000060.npz")
    _same(state["history"], whole.history)
    # merged on across the resume (round 42 h13): 0-24, 24-27 (the stop's), 27-30, ...
    # end as 0-48 and 48-60 (round 34: 11 files, one per checkpoint)
    assert is_history_ref(state["history_ref"]) and state["history_ref"]["chunks"] == [
        "history-00000000-00000048.npz", "history-00000048-00000060.npz"]


def test_a_checkpoint_copied_without_its_history_still_loads(tmp_path):
    _trainer(tmp_path / "ck").train(_data(), steps=12)
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(tmp_path / "ck" / "step-00000012.npz", lone)
    state = load_checkpoint(lone / "step-00000012.npz")
    assert state["history"] == [] and "history-*.npz files" in state["history_note"]
    model = _model()
    model.load_state_dict(str(lone / "step-00000012.npz"))  # the weights, as before
    resumed = _trainer(lone, resume=True).train(_data(), steps=18)
    assert [r["step"] for r in resumed.history] == list(range(13, 19))


def test_an_older_checkpoint_with_its_history_inside_resumes_and_writes_it_out(tmp_path):
    data = _data()
    whole = _trainer(tmp_path / "whole").train(data, steps=24)
    old = tmp_path / "old"
    state = load_checkpoint(tmp_path / "whole" / "step-00000012.npz")
    state.pop("history_ref")
    save_checkpoint(old, state, step=12)  # as round 33 wrote it: the rows inside
    rest = _trainer(old, resume=True).train(data, steps=24)
    _same(rest.history, whole.history)
    _same(load_checkpoint(old / "step-00000024.npz")["history"], whole.history)
    assert sorted(p.name for p in old.glob("history-*")) == \
        ["history-00000000-00000018.npz", "history-00000018-00000024.npz"]


def test_side_files_are_joined_every_so_often_and_the_unlisted_ones_removed(tmp_path,
                                                                           monkeypatch):
    from skiff.kernels.train import trainer_state

    monkeypatch.setattr(trainer_state, "HISTORY_CHUNKS", 3)
    where = tmp_path / "ck"
    whole = Trainer(_model(), checkpoint_dir=where, batch_size=16, lr=0.01, seed=5,
                    checkpoint_every=6, keep_checkpoints=2).train(_data(), steps=60)
    kept = list_checkpoints(where)
    assert [p.name for p in kept] == ["step-00000054.npz", "step-00000060.npz"]
    for path in kept:
        state = load_checkpoint(path)
        _same(state["history"], whole.history[:state["step"]])
        assert len(state["history_ref"]["chunks"]) <= 3
    # saves at 6..60, merged as a binary counter (round 42 h13): 0-24 at 24, then 24-36
    # and 36-42 at 42; 48's save finds 3 files and joins them all (0-48); 54 lists 0-48
    # and 48-54, 60 0-48 and 48-60; the others went at the merges' sweeps
    assert sorted(p.name for p in where.glob("history-*")) == [
        "history-00000000-00000048.npz", "history-00000048-00000054.npz",
        "history-00000048-00000060.npz"]
