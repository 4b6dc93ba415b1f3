"""Round 34 (h5): a train job stopped before its first step (a cancel, its launcher gone)
wrote its untrained initial weights as ``model.npz``, which ``predict`` and
``load_trained_model`` then used as the trained model. Now it writes no weights, says why
in its log, and loading its model says it was stopped before its first step. A job that
took a step still writes them (the oracle: the Trainer's own final weights)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.train import entry


class _Rep(NullReporter):
    def __init__(self, run_dir: Path, stop: bool):
        self.run_dir, self.stop, self.lines = run_dir, stop, []

    def should_stop(self):
        return self.stop

    def log(self, message, *, level="info"):
        self.lines.append((level, message))


def _table(tmp_path: Path) -> str:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((60, 3))
    path = tmp_path / "t.csv"
    rows = [f"{a:.4f},{b:.4f},{c:.4f},{int(a > b)}" for a, b, c in x]
    path.write_text("a,b,c,y\n" + "\n".join(rows) + "\n")
    return str(path)


def _job(tmp_path: Path, stop: bool):
    run_dir = tmp_path / ("stopped" if stop else "trained")
    run_dir.mkdir()
    config = {"model": "mlp", "data": _table(tmp_path), "target": "y", "steps": 3,
              "batch_size": 16}
    rep = _Rep(run_dir, stop)
    result = entry.run(config, rep)
    (run_dir / "result.json").write_text(json.dumps(result.to_json()))  # as the worker does
    return run_dir, config, result, rep


def test_a_job_stopped_before_its_first_step_writes_no_weights(tmp_path):
    run_dir, config, result, rep = _job(tmp_path, stop=True)
    assert result.steps == 0 and result.stopped == "cancelled"
    assert entry.untrained(result) and result.weights is None
    assert not (run_dir / "model.npz").exists() and not (run_dir / "loss.png").exists()
    assert any(level == "warning" and "before its first step: no weights written" in line
               for level, line in rep.lines)
    with pytest.raises(FileNotFoundError, match="stopped before its first step"):
        entry.load_trained_model(run_dir, config)


def test_a_job_that_took_steps_still_writes_its_weights(tmp_path):
    run_dir, config, result, _ = _job(tmp_path, stop=False)
    assert result.steps == 3 and not entry.untrained(result)
    assert (run_dir / "model.npz").is_file() and (run_dir / "loss.png").is_file()
    loaded = entry.load_trained_model(run_dir, config).state_dict()
    with np.load(run_dir / "model.npz") as z:
        assert set(z.files) == set(loaded)
        for k in z.files:
            np.testing.assert_array_equal(np.asarray(loaded[k]), z[k])
