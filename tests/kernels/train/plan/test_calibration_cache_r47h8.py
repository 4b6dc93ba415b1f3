"""The calibration micro-run is measured once per machine, model and world (round 47 h8): a
second job of the same model on the same machine reads what the first measured from skiff's
cache folder and runs no copy of the model; another model, batch or world measures again, one
process never caches, ``SKIFF_RECALIBRATE=1`` measures again. The timed all-reduce is read
only when every rank has it (a rank without it times it with the others). The end-to-end
check (2 ranks, the same plan chosen, the second job's calibration read from the first's
file) is in ``parallel/test_launch.py``."""

from __future__ import annotations

import gc
import json

import numpy as np
import pytest

from skiff.kernels.train import calibrate
from skiff.kernels.train.core import nn
from skiff.kernels.train.data import ArrayDataset


def _mlp(width=8):
    return nn.Sequential(nn.Linear(4, width), nn.Tanh(), nn.Linear(width, 2))


def _data(n=16):
    x = np.random.default_rng(0).standard_normal((n, 4)).astype(np.float32)
    return ArrayDataset(x, x[:, :2] * 2)


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """A fresh cache folder, and the micro-runs that really step a copy, counted."""
    monkeypatch.setenv("SKIFF_CACHE", str(tmp_path))
    monkeypatch.delenv("SKIFF_CALIBRATION_CACHE", raising=False)   # <SKIFF_CACHE>/calibration
    monkeypatch.delenv("SKIFF_RECALIBRATE", raising=False)
    monkeypatch.setitem(calibrate._warm, "done", False)
    calls = []
    real = calibrate._local_step

    def local_step(*args, **kw):
        calls.append(args[0])
        return real(*args, **kw)

    monkeypatch.setattr(calibrate, "_local_step", local_step)
    return calls


def _run(model, data=None, rows=4, world_size=2, precision="32"):
    return calibrate.micro_run(model, data or _data(), rows=rows, loss_spec="auto",
                               device="cpu", precision=precision, world_size=world_size)


def test_a_second_job_of_the_same_model_reads_the_calibration_and_runs_no_copy(
        counted, tmp_path, monkeypatch):
    first = _run(_mlp())
    assert len(counted) == 1 and not first.cached and first.local_step_s > 0
    [entry] = (tmp_path / "calibration").glob("step-*.json")
    kept = json.loads(entry.read_text())
    assert kept["local_step_s"] == first.local_step_s
    assert kept["step_peak_bytes"] == first.step_peak_bytes > 0
    assert str(entry) in first.notes[0]
    # the same model (other weights: a step costs the same) and data: no micro-run
    second = _run(_mlp())
    assert len(counted) == 1 and second.cached and second.why_not is None
    assert (second.local_step_s, second.step_peak_bytes, second.rows) == (
        first.local_step_s, first.step_peak_bytes, 4)
    assert second.baseline_bytes > 0 and "no micro-run" in second.notes[0]
    # what a step costs depends on each of these: measured again
    _run(_mlp(width=16))                                         # another model
    _run(_mlp(), rows=2)                                         # another batch
    _run(_mlp(), world_size=4)                                   # another world
    frozen = _mlp()
    frozen[0].requires_grad_(False)
    _run(frozen)                                                 # other weights train
    assert len(counted) == 5
    assert len(list((tmp_path / "calibration").glob("step-*.json"))) == 5
    # one process never caches; SKIFF_RECALIBRATE measures again
    assert not _run(_mlp(), world_size=1).cached and not _run(_mlp(), world_size=1).cached
    monkeypatch.setenv("SKIFF_RECALIBRATE", "1")
    assert not _run(_mlp()).cached
    assert len(counted) == 8
    # an entry past its age is measured again
    monkeypatch.delenv("SKIFF_RECALIBRATE")
    kept = json.loads(entry.read_text())
    entry.write_text(json.dumps(kept | {"measured_at": kept["measured_at"]
                                        - calibrate.MAX_AGE_S - 1}))
    assert not _run(_mlp()).cached and len(counted) == 9
    entry.write_text(json.dumps(kept | {"local_step_s": None}))   # not an entry of ours
    assert not _run(_mlp()).cached and len(counted) == 10
    assert _run(_mlp()).cached and len(counted) == 10            # rewritten whole


def test_the_micro_run_leaves_the_collector_as_it_found_it(counted):
    # gc.freeze keeps the micro-run's two full collections to its own objects; a caller's
    # frozen objects stay frozen, and nothing stays frozen after
    assert gc.get_freeze_count() == 0
    _run(_mlp(), world_size=1)
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        theirs = gc.get_freeze_count()
        _run(_mlp(), world_size=1)
        assert gc.get_freeze_count() > theirs * 0.9   # not thawed (a few frozen ones died)
    finally:
        gc.unfreeze()


class _Comm:
    """Two ranks seen from one: ``other`` is whether the other rank has the timing."""

    def __init__(self, other=True):
        self.size, self.other, self.sizes = 2, other, []

    def allreduce_(self, x, op="sum"):
        self.sizes.append(x.size)
        if x.size == 1 and op == "min" and not self.other:
            x[...] = 0.0
        return x


def test_the_allreduce_timing_is_read_only_when_every_rank_has_it(counted, tmp_path):
    comm = _Comm()
    first = calibrate.time_allreduce(comm, 1000)
    assert comm.sizes == [1, 1000, 1000, 1000, 1000]    # agreed, then warm-up + 3 timed
    [entry] = (tmp_path / "calibration").glob("allreduce-*.json")
    assert json.loads(entry.read_text())["allreduce_s"] == first
    comm = _Comm()
    notes = calibrate.Calibration()
    assert calibrate.time_allreduce(comm, 1000, calib=notes) == first
    assert comm.sizes == [1] and str(entry) in notes.notes[0]
    # the other rank has none: both time it (no rank waits in a collective alone)
    comm = _Comm(other=False)
    calibrate.time_allreduce(comm, 1000)
    assert comm.sizes == [1, 1000, 1000, 1000, 1000]
    comm = _Comm()
    calibrate.time_allreduce(comm, 2000)                  # other bytes: timed
    assert comm.sizes[1:] == [2000] * 4
