"""The fallback of a SIGTERM'd rank of several whose kind never takes the stop (round 44,
h8's ``DEFER_S`` in ``skiff/jobs/worker.py`` ``_Stops``): the stop is left to the kind (the
cancel file, read by rank 0 and agreed on) for ``DEFER_S``; a kind that never asks
``should_stop`` then gets ``JobCancelled`` raised where it stands, so the rank does not run
on for ever. Driven as a worker drives it, in a process of its own (a main thread, its own
SIGTERM handler), as rank 1 of 2; no sleeps to wait on: the script says what happened.

Oracles: the run folder's ``cancel`` (written by the rank: ``term 1``), the ``JobCancelled``
raised (or not) and when, against the ``DEFER_S`` the script sets."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RANK = textwrap.dedent("""
    import json, os, signal, sys, threading, time
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from skiff.jobs import worker
    from skiff.jobs.reporter import JobCancelled

    run, mode = Path({run!r}), {mode!r}
    worker.DEFER_S = {defer!r}
    logs = []

    class Reporter:
        def log(self, message, level="info"):
            logs.append(message)
        def should_stop(self):
            return (run / "cancel").exists()

    reporter = Reporter()
    stops = worker._Stops(run, reporter, os.getppid(), rank=1, size=2)
    stops.start()
    out = {{"raised": None}}
    t0 = time.monotonic()
    try:
        os.kill(os.getpid(), signal.SIGTERM)   # handled in this thread before the next line
        out["deferred"] = stops.deferred
        if mode == "second":
            os.kill(os.getpid(), signal.SIGTERM)
        end = time.monotonic() + 60             # a kind in a long step: never asks
        while time.monotonic() < end:
            if mode == "asks" and reporter.should_stop():
                reporter.should_stop()          # the kind took the stop (the cancel file)
                stops.over.wait({defer!r} + 1.0)   # past DEFER_S: nothing may be raised
                break
            time.sleep(0.01)
    except JobCancelled as exc:
        out["raised"] = str(exc)
    out["after_s"] = time.monotonic() - t0
    out["raised_flag"] = stops.raised
    stops.end()
    out["cancel"] = (run / "cancel").read_text()
    out["logs"] = logs
    (run / "out.json").write_text(json.dumps(out))
""")


def _run_rank(tmp_path: Path, mode: str, defer: float) -> dict:
    script = tmp_path / "rank.py"
    script.write_text(RANK.format(root=str(ROOT), run=str(tmp_path), mode=mode, defer=defer))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads((tmp_path / "out.json").read_text())


def test_a_kind_that_never_asks_gets_the_stop_raised_after_defer(tmp_path):
    out = _run_rank(tmp_path, "never", 0.5)
    assert out["deferred"] is True          # not raised at the SIGTERM: left to the kind
    assert out["cancel"] == "term 1\n"      # the stop its peers read: why and which rank
    assert out["raised"] == "stopped by SIGTERM", out
    assert out["raised_flag"] is True
    assert 0.5 <= out["after_s"] < 30, out  # not before DEFER_S, and not never
    assert any("SIGTERM: stopping" in line and "the step its ranks agree on" in line
               for line in out["logs"]), out["logs"]


def test_a_second_sigterm_raises_at_once(tmp_path):
    out = _run_rank(tmp_path, "second", 60.0)
    assert out["raised"] == "stopped by SIGTERM" and out["after_s"] < 30, out


def test_a_kind_that_takes_the_stop_is_not_interrupted(tmp_path):
    out = _run_rank(tmp_path, "asks", 0.3)
    assert out["deferred"] is True and out["raised"] is None, out
    assert out["raised_flag"] is False
