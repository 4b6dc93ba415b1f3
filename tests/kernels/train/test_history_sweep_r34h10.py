"""Round 34 (h10): the Trainer's history side files (``history-A-B.npz``) of a run before its
resume, or of an earlier run into the same checkpoint folder, were never removed (only the
files before a join, and only with ``keep_checkpoints`` < 32). Now the files that no
checkpoint in the folder lists are removed at a run's (or resume's) first checkpoint and at
each join (``checkpoint.sweep_history``). The oracle is what each checkpoint file lists,
read here from its JSON with numpy; the joins come every 4 files (patched from 32)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from skiff import nn
from skiff.kernels.train import trainer_state
from skiff.kernels.train.checkpoint import list_checkpoints, load_checkpoint, sweep_history
from skiff.kernels.train.core import random as train_random
from skiff.kernels.train.trainer import Trainer

from .kept_checkpoints import listed_history


@pytest.fixture(autouse=True)
def _joins_every_4(monkeypatch):
    monkeypatch.setattr(trainer_state, "HISTORY_CHUNKS", 4)


def _data(n=96):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(n, 5)).astype("f4")
    return x, (x @ rng.normal(size=(5, 2))).astype("f4")


def _trainer(where, every, keep=2, **kw):
    train_random.seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))
    return Trainer(model, checkpoint_dir=where, batch_size=16, lr=0.01, seed=5,
                   checkpoint_every=every, keep_checkpoints=keep, **kw)


def _files(folder) -> set:
    return {p.name for p in folder.glob("history-*.npz")}


def test_a_resume_removes_the_files_from_before_its_last_join(tmp_path):
    ck = tmp_path / "ck"
    _trainer(ck, 2).train(_data(), steps=20)
    before = _files(ck)
    # round 42 (h13): the merges' sweeps leave no unlisted file behind now; one as a run
    # killed between its write and its checkpoint's leaves
    assert before == listed_history(ck), sorted(before)
    (ck / "history-00000000-00000014.npz").write_bytes(
        (ck / sorted(before)[0]).read_bytes())
    stale = _files(ck) - listed_history(ck)
    assert stale == {"history-00000000-00000014.npz"}
    _trainer(ck, 2, resume=True).train(_data(), steps=40)
    assert not (_files(ck) & stale), sorted(_files(ck) & stale)
    state = load_checkpoint(list_checkpoints(ck)[-1])
    assert "history_note" not in state and len(state["history"]) == 40
    assert [r["step"] for r in state["history"]] == list(range(1, 41))


def test_a_second_run_into_the_same_folder_removes_the_first_runs_files(tmp_path):
    ck = tmp_path / "ck"
    _trainer(ck, 2).train(_data(), steps=20)
    first = _files(ck)
    _trainer(ck, 3).train(_data(), steps=30)   # a new run (no resume), another cadence
    left = _files(ck)

    def second_runs(name):   # history-A-B.npz of the second run: A and B steps of it
        a, b = (int(v) for v in name[len("history-"):-len(".npz")].split("-"))
        return a % 3 == 0 and b % 3 == 0

    assert not {n for n in left & first if not second_runs(n)}, sorted(left)
    assert left <= listed_history(ck) | {n for n in left if second_runs(n)}
    state = load_checkpoint(list_checkpoints(ck)[-1])
    assert "history_note" not in state and len(state["history"]) == 30


def test_the_sweep_keeps_what_a_checkpoint_lists_and_removes_nothing_when_one_is_unreadable(
        tmp_path):
    ck = tmp_path / "ck"
    _trainer(ck, 2, keep=None).train(_data(), steps=12)
    listed = listed_history(ck)
    stray = ck / "history-00000000-00000999.npz"
    shutil.copy(ck / sorted(listed)[0], stray)
    (ck / "step-00000099.npz").write_bytes(b"not a zip")   # damaged: lists we know not what
    assert sweep_history(ck) == [] and stray.exists()
    (ck / "step-00000099.npz").unlink()
    assert sweep_history(ck) == [stray.name] and _files(ck) == listed
    for path in list_checkpoints(ck):   # every checkpoint still loads its whole history
        state = load_checkpoint(path)
        assert "history_note" not in state and len(state["history"]) == state["step"]
