"""Round 42 (h13): a run's history side files (round 34) were joined only at 32 files, so a
run checkpointed 25 times with ``keep_checkpoints=3`` kept 25 ``history-*.npz`` files (each
one listed by the newest checkpoint). They are merged as a binary counter's bits now: a
checkpoint lists about log2(checkpoints) files and the folder holds only what its
checkpoints list. The oracle: an uninterrupted run of the same Trainer, whose history a
resume from the newest checkpoint (and from an older kept one) must give again."""

from __future__ import annotations

import shutil

import numpy as np

from skiff import nn
from skiff.kernels.train.checkpoint import list_checkpoints, load_checkpoint
from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.trainer import Trainer

from .kept_checkpoints import listed_history


def _data(n=32):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(n, 3)).astype("f4")
    return x, (x @ rng.normal(size=(3, 1))).astype("f4")


def _trainer(where, **kw):
    train_random.seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    return Trainer(model, checkpoint_dir=where, batch_size=8, lr=0.05, seed=2,
                   checkpoint_every=1, keep_checkpoints=3, **kw)


def _rows(history):
    return [(r["step"], r["loss"]) for r in history]


def test_13_checkpoints_keep_a_few_history_files_and_resume_exactly(tmp_path):
    whole = _trainer(tmp_path / "whole").train(_data(), steps=16)
    ck = tmp_path / "ck"
    cut = _trainer(ck, callbacks=[lambda m: m["step"] == 13]).train(_data(), steps=16)
    assert cut.steps == 13
    files = {p.name for p in ck.glob("history-*.npz")}
    # 13 = 1101b: the newest lists 0-8, 8-12, 12-13; 11 and 12 add 8-10 and 10-11
    assert len(list_checkpoints(ck)) == 3
    assert files == listed_history(ck) and len(files) == 5, sorted(files)   # round 41: 13
    newest = load_checkpoint(list_checkpoints(ck)[-1])
    assert newest["history_ref"]["chunks"] == [
        "history-00000000-00000008.npz", "history-00000008-00000012.npz",
        "history-00000012-00000013.npz"]
    older = tmp_path / "older"   # the oldest kept checkpoint, alone with its files
    older.mkdir()
    first = list_checkpoints(ck)[0]
    shutil.copy(first, older)
    for name in load_checkpoint(first)["history_ref"]["chunks"]:
        shutil.copy(ck / name, older)
    for where in (ck, older):
        rest = _trainer(where, resume=True).train(_data(), steps=16)
        assert _rows(rest.history) == _rows(whole.history)
        state = load_checkpoint(list_checkpoints(where)[-1])
        assert "history_note" not in state
        assert _rows(state["history"]) == _rows(whole.history)
        assert {p.name for p in where.glob("history-*.npz")} <= listed_history(where)
