"""A data-parallel train job on 2 MPI ranks through ``skiff.jobs.launch``: SIGKILL of one
rank fails the job quickly naming the rank, and resuming from the last sharded checkpoint
ends with the same weights as an uninterrupted run. Cancel stops every rank at one step."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from skiff.jobs import launch

CELL = '''
import time
from skiff.kernels.train.core import nn
from skiff.kernels.train.data import ArrayDataset

class Slow(nn.Module):
    """A small MLP that takes a while per step, so a test can act mid-run."""
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 8)
        self.l2 = nn.Linear(8, 2)
    def forward(self, x):
        time.sleep(DELAY)
        return self.l2(self.l1(x).tanh())

rng = np.random.default_rng(0)
x = rng.standard_normal((64, 4)).astype(np.float32)
y = (x[:, :2] * 2).astype(np.float32)
model = Slow()
dataset = ArrayDataset(x, y)
'''


def _config(ckpt, delay, steps=10, **kw):
    return dict(source=CELL.replace("DELAY", str(delay)), steps=steps, batch_size=8,
                strategy="dp", lr=0.01, checkpoint_dir=str(ckpt), checkpoint_every=2, seed=0,
                **kw)


def _plan_events(job):
    """The job's plan checks and its plan, from its events."""
    events = [json.loads(line) for line in (job.run_dir / "events.jsonl").read_text()
              .splitlines()]
    return ([e["plan_check"] for e in events if "plan_check" in e],
            [e["plan"] for e in events if "plan" in e][0])


def _weights(job):
    with np.load(job.run_dir / "model.npz") as z:
        return {k: z[k] for k in z.files}


@pytest.mark.mpi
@pytest.mark.slow
def test_sigkill_one_rank_then_resume_gives_same_weights(tmp_path, monkeypatch):
    # the first job measures its calibration (round 47 h8: and keeps it, here in this test's
    # own folder); the later jobs of this model read it and run no micro-run (the killed
    # job's forward sleeps 0.3 s: its micro-run's 5 steps were 1.5 s of it)
    monkeypatch.setenv("SKIFF_CALIBRATION_CACHE", str(tmp_path / "calibration"))
    monkeypatch.delenv("SKIFF_RECALIBRATE", raising=False)
    ref = launch("train", _config(tmp_path / "ref", 0.0), np=2)
    ref.wait(120)
    assert ref.status == "done", ref.error
    # the job records the planner's prediction next to what it measured
    check, plan = _plan_events(ref)
    est = plan["estimate"]
    # by hand: Linear(4, 8) + Linear(8, 2) = 4*8 + 8 + 8*2 + 2 = 58 fp32 parameters; plain
    # dp=2 keeps every gradient and both AdamW moments on each rank
    assert plan["choice"]["dp"] == 2 and plan["choice"]["zero"] == 0
    assert (est["memory"]["params"], est["memory"]["grads"],
            est["memory"]["optimizer"]) == (58 * 4, 58 * 4, 58 * 8)
    # the check the job reports is that very prediction, next to what it measured
    assert check and check[0]["predicted_peak_bytes"] == est["peak_memory"] == sum(
        est["memory"].values())
    assert check[0]["predicted_step_s"] == est["step_time"]
    assert check[0]["measured_step_s"] > 0

    job = launch("train", _config(tmp_path / "ck", 0.3), np=2)
    latest = tmp_path / "ck" / "latest"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not (
            latest.exists() and latest.read_text() >= "step-00000004"):
        time.sleep(0.05)
    assert not job.done, "the job ended before it could be killed"
    pid = int((job.run_dir / "ranks" / "1.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    job.wait(30)
    assert job.status == "failed"
    assert time.monotonic() - killed < 10
    assert "rank 1" in job.error

    again = launch("train", _config(tmp_path / "ck", 0.0, resume=True), np=2)
    again.wait(120)
    assert again.status == "done", again.error
    a, b = _weights(ref), _weights(again)
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(b[k], a[k], rtol=0, atol=1e-6, err_msg=k)
    # the resumed job chose the same plan, and its check holds the calibration the first
    # job kept (read from that file: no micro-run), with this process's own resident set
    first, kept = check[0]["calibration"], Path(check[0]["calibration"]["notes"][0].split(
        "kept in ")[1].split(" for the next")[0])
    check2, plan2 = _plan_events(again)
    assert not first["cached"] and check2[0]["calibration"]["cached"]
    assert plan2["choice"] == plan["choice"]   # the estimate's compute time is a fresh matmul's
    assert plan2["estimate"]["memory"] == plan["estimate"]["memory"]
    assert kept.parent == tmp_path / "calibration"
    entry = json.loads(kept.read_text())
    got = check2[0]["calibration"]
    assert str(kept) in got["notes"][0] and "no micro-run" in got["notes"][0]
    assert (got["local_step_s"], got["step_peak_bytes"]) == (entry["local_step_s"],
                                                             entry["step_peak_bytes"])
    assert check2[0]["expected_step_s"] == pytest.approx(
        entry["local_step_s"] + got["allreduce_s"])
    assert "cached calibration" in (again.run_dir / "events.jsonl").read_text()


@pytest.mark.mpi
@pytest.mark.slow
def test_cancel_stops_every_rank_at_the_same_step(tmp_path):
    job = launch("train", _config(tmp_path / "ck", 0.2, steps=200), np=2)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (tmp_path / "ck" / "latest").exists():
        time.sleep(0.05)
    job.cancel(grace=20)  # cooperative: no signal should be needed
    job.wait(40)
    assert job.status == "cancelled"
    # both ranks left through the training loop (no rank stuck in a collective)
    for r in (0, 1):
        assert (job.run_dir / "ranks" / f"{r}.exit").read_text() == "0"


@pytest.mark.mpi
@pytest.mark.slow
def test_tensor_and_pipeline_parallel_jobs_and_resharding_between_them(tmp_path):
    # gpt-mini on 2 ranks split by heads/width (tp), checkpointing per rank; rewound to its
    # step-2 checkpoint it resumes exactly on the same layout, and on a pipeline layout
    # (another split of the same model) it resumes from the gathered weights
    import shutil

    common = dict(model="gpt-mini", batch_size=4, block_size=32, lr=1e-3, steps=3)
    ck = tmp_path / "tp"
    tp = launch("train", dict(common, strategy="dp=1,tp=2", checkpoint_dir=str(ck),
                              checkpoint_every=2), np=2)
    tp.wait(180)
    assert tp.status == "done", tp.error
    assert tp.result["strategy"]["explicit"]
    shutil.rmtree(ck / "step-00000003")  # as if step 3 had never been written
    shutil.copytree(ck, tmp_path / "tp-copy")
    ref_losses = [row["loss"] for row in tp.result["history"]]

    again = launch("train", dict(common, strategy="dp=1,tp=2", checkpoint_dir=str(ck),
                                 resume=True), np=2)
    again.wait(180)
    assert again.status == "done", again.error
    assert "resumed from step 2" in (again.run_dir / "events.jsonl").read_text()
    a, b = _weights(tp), _weights(again)
    for k in a:
        np.testing.assert_allclose(b[k], a[k], rtol=0, atol=1e-6, err_msg=k)

    pp = launch("train", dict(common, strategy="dp=1,pp=2", checkpoint_dir=str(tmp_path /
                                                                               "tp-copy"),
                              resume=True), np=2)
    pp.wait(180)
    assert pp.status == "done", pp.error
    events = (pp.run_dir / "events.jsonl").read_text()
    assert "resumed from step 2" in events and "resharded onto this layout" in events
    # the loss of step 3 is taken on the weights after step 2: the resharded weights
    pp_losses = [row["loss"] for row in pp.result["history"]]
    np.testing.assert_allclose(pp_losses, ref_losses, rtol=0, atol=1e-5)
