"""The train loop reports the loss every step and the curves beside it (lr, throughput,
gradient norm, memory) as samples a run-folder reporter may thin (``Reporter.sample``): the
events of a run were five metric lines a step. Oracle: the run's own history (what the loop
computed): every loss is in the events, and each curve's last value is the last step's."""
from __future__ import annotations

import types

import numpy as np

import skiff
import skiff.jobs.reporter as reporter_module
from skiff.jobs.events import read_events
from skiff.jobs.reporter import RunReporter
from skiff.nn import Linear, ReLU, Sequential


def _series(path, name):
    return [(e["step"], e["value"]) for e in read_events(path / "events.jsonl")
            if e["type"] == "metric" and e["name"] == name]


def test_loss_every_step_curves_thinned_last_kept(tmp_path, monkeypatch):
    import time

    # a clock that stands still: the reporter may write a sample once per name, then only
    # the latest at the end (the last step's progress or flush)
    monkeypatch.setattr(reporter_module, "time",
                        types.SimpleNamespace(monotonic=lambda: 1000.0, strftime=time.strftime))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x.sum(1) > 0).astype(np.int64)
    skiff.seed(0)
    model = Sequential(Linear(4, 16), ReLU(), Linear(16, 2))
    rep = RunReporter(tmp_path)
    rep.KEEP_FIRST = 0  # thinning from the first sample (a short job keeps its first 100)
    trainer = skiff.Trainer(model, optimizer="sgd", lr=0.1, batch_size=8, reporter=rep,
                            clip=10.0)
    result = trainer.train((x, y), epochs=5)
    rep.flush()
    history = result["history"] if isinstance(result, dict) else result.history
    steps = [h["step"] for h in history]
    assert len(steps) == 40
    loss = _series(tmp_path, "loss")
    assert [s for s, _ in loss] == steps
    np.testing.assert_allclose([v for _, v in loss], [h["loss"] for h in history], rtol=1e-6)
    for name in ("lr", "samples_per_s", "grad_norm"):
        got = _series(tmp_path, name)
        assert 1 <= len(got) <= 2 < len(steps), (name, got)
        assert got[-1][0] == steps[-1]
        np.testing.assert_allclose(got[-1][1], history[-1][name], rtol=1e-6)
    memory = _series(tmp_path, "memory_bytes")
    assert 1 <= len(memory) <= 2 and memory[-1][0] == steps[-1]
