"""Round 34 (h5): a kind stopped by a raised ``JobCancelled`` (SIGTERM before it asked to
stop, a generation's token loop, a solve's iteration) kept nothing of what it had done: the
worker wrote the "cancelled" status only. Now the kind attaches what it had done to the
exception, ``exc.partial`` (written as ``result.json``, with why it stopped) and
``exc.arrays`` (``partial.npz``: a solve's last iterate, for a warm start); the worker's own
``_run`` is driven here in-process with a kind of the test's (``tests/jobs/partial_kind``
written to tmp), the oracle the values the kind had."""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np

from skiff.jobs import worker
from skiff.jobs.reporter import RunReporter

KIND = '''
import numpy as np
from skiff.kernels.backend.report import JobCancelled

class Unwritable:
    def to_json(self):
        raise ValueError("no JSON for this")


def run(config, reporter):
    x = np.arange(6.0) / 7.0
    exc = JobCancelled("cancelled by request")
    if config.get("text"):
        exc.partial = {"text": "Once upon a ti", "tokens": 14}
    if config.get("iterate"):
        exc.arrays = {"x": x, "iteration": np.array(37)}
    if config.get("bad"):
        exc.partial = Unwritable()
    raise exc
'''


def _run(tmp_path, monkeypatch, config):
    mod = tmp_path / "mods"
    mod.mkdir(parents=True, exist_ok=True)
    (mod / "partial_kind_r34h5.py").write_text(textwrap.dedent(KIND))
    monkeypatch.syspath_prepend(str(mod))
    sys.modules.pop("partial_kind_r34h5", None)
    run_dir = tmp_path / "run"
    (run_dir / "ranks").mkdir(parents=True)
    (run_dir / "logs").mkdir()
    reporter = RunReporter(run_dir)
    meta = {"target": "partial_kind_r34h5:run", "config": config}
    code = worker._run(run_dir, meta, reporter, None, 0, 1, run_dir / "ranks")
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return code, run_dir, events


def test_a_generation_cancelled_keeps_its_text_so_far(tmp_path, monkeypatch):
    code, run_dir, events = _run(tmp_path, monkeypatch, {"text": True})
    assert code == 0
    doc = json.loads((run_dir / "result.json").read_text())
    assert doc == {"text": "Once upon a ti", "tokens": 14, "stopped": "cancelled by request"}
    assert events[-1]["type"] == "status" and events[-1]["status"] == "cancelled"
    assert not (run_dir / worker.PARTIAL_FILE).exists()


def test_a_solve_cancelled_keeps_its_last_iterate(tmp_path, monkeypatch):
    code, run_dir, events = _run(tmp_path, monkeypatch, {"iterate": True})
    with np.load(run_dir / worker.PARTIAL_FILE) as z:
        np.testing.assert_array_equal(z["x"], np.arange(6.0) / 7.0)
        assert int(z["iteration"]) == 37
    assert not (run_dir / "result.json").exists()
    assert any(e["type"] == "artifact" for e in events)
    assert events[-1]["status"] == "cancelled"


def test_nothing_attached_keeps_nothing_and_a_bad_partial_does_not_fail_the_cancel(
        tmp_path, monkeypatch):
    code, run_dir, events = _run(tmp_path, monkeypatch, {})
    assert not (run_dir / "result.json").exists() and events[-1]["status"] == "cancelled"
    code, run_dir, events = _run(tmp_path / "b", monkeypatch, {"bad": True})
    assert events[-1]["status"] == "cancelled"
    assert any(e["type"] == "log" and "could not be kept" in e.get("message", "")
               for e in events)
