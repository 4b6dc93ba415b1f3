"""Round 37: the process worker ends a kind that returned a whole result after a cancel it
was never told of as "done" (its log says the cancel came late), as the thread runner does
since round 37 (h8, ``reporter.returned_status``); a kind that saw the stop and returned what
it had done is "cancelled". Before, the worker called both "cancelled" (a converged solve
offered a resume with nothing left to do). The worker's ``_run`` is driven in-process with a
kind of the test's: the oracle is what the kind did (asked ``should_stop`` or not)."""

from __future__ import annotations

import json
import sys
import textwrap

from skiff.jobs import worker
from skiff.jobs.reporter import LATE_CANCEL, RunReporter

KIND = '''
def run(config, reporter):
    (reporter.run_dir / "cancel").write_text("")   # the user's cancel, as job.cancel() leaves it
    if config.get("look"):
        return {"steps": 3 if reporter.should_stop() else 10}
    return {"steps": 10}
'''


def _run(tmp_path, monkeypatch, config):
    mod = tmp_path / "mods"
    mod.mkdir(parents=True, exist_ok=True)
    (mod / "late_kind_r37.py").write_text(textwrap.dedent(KIND))
    monkeypatch.syspath_prepend(str(mod))
    sys.modules.pop("late_kind_r37", None)
    run_dir = tmp_path / "run"
    (run_dir / "ranks").mkdir(parents=True)
    (run_dir / "logs").mkdir()
    reporter = RunReporter(run_dir)
    meta = {"target": "late_kind_r37:run", "config": config}
    code = worker._run(run_dir, meta, reporter, None, 0, 1, run_dir / "ranks")
    reporter.flush()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return code, run_dir, events


def test_a_whole_result_after_an_unseen_cancel_is_done(tmp_path, monkeypatch):
    code, run_dir, events = _run(tmp_path, monkeypatch, {})
    assert code == 0
    assert json.loads((run_dir / "result.json").read_text()) == {"steps": 10}
    statuses = [e["status"] for e in events if e["type"] == "status"]
    assert statuses[-1] == "done"
    assert any(e["type"] == "log" and LATE_CANCEL in e.get("message", "") for e in events)


def test_a_kind_that_saw_the_stop_is_cancelled(tmp_path, monkeypatch):
    code, run_dir, events = _run(tmp_path, monkeypatch, {"look": True})
    assert json.loads((run_dir / "result.json").read_text()) == {"steps": 3}
    statuses = [e["status"] for e in events if e["type"] == "status"]
    assert statuses[-1] == "cancelled"
    assert not any(e["type"] == "log" and LATE_CANCEL in e.get("message", "") for e in events)
