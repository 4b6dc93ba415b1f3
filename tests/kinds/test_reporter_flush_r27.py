"""Round 27: :class:`Reporter` has a no-op ``flush()``, so a kernel calls it without
asking whether its reporter has one (the demo kind did ``getattr(reporter, "flush", ...)``).
Oracles: a reporter written on the base class alone runs a holding demo job to its end; the
run-folder reporter's flush writes the progress it held back before the job's "holding"
line (the events file, read back)."""

import json

from skiff.kernels.backend.report import NullReporter, Reporter
from skiff.kinds import demo


class _Calls(Reporter):
    """The base protocol only, recording what the job said, in order."""

    def __init__(self):
        self.said = []

    def progress(self, done, total=None, *, unit="step", message=None):
        self.said.append(("progress", done))

    def log(self, message, *, level="info"):
        self.said.append(("log", message))


def test_the_base_reporter_and_the_null_one_flush_nothing():
    assert Reporter().flush() is None and NullReporter().flush() is None
    assert "flush" in vars(Reporter)  # the protocol's, not each implementation's


def test_a_demo_job_holds_with_a_reporter_of_the_base_protocol(tmp_path):
    hold = tmp_path / "go"
    hold.write_text("")
    rep = _Calls()
    out = demo.run({"steps": 3, "sleep": 0.0, "hold_at": 2, "hold_until": str(hold)}, rep)
    assert out["steps"] == 3
    assert rep.said.index(("log", f"holding until {hold} exists")) < rep.said.index(("progress", 2))


def test_the_run_folder_reporter_writes_the_held_progress_before_holding(tmp_path, runs_dir):
    from skiff.jobs.reporter import RunReporter

    hold = tmp_path / "go"
    hold.write_text("")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rep = RunReporter(run_dir, max_rate=1e-12)  # every progress held back until flushed
    demo.run({"steps": 3, "sleep": 0.0, "hold_at": 3, "hold_until": str(hold)}, rep)
    events = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    holding = next(i for i, e in enumerate(events) if "holding until" in str(e.get("message")))
    done = [e.get("done") for e in events[:holding] if e.get("type") == "progress"]
    assert done and done[-1] == 2  # step 2, throttled, written by the flush before holding
