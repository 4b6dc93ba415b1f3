"""Ctrl-C on a command whose job's kernel does not stop at the cancel in time (round 31: a
``generate`` from a train job's model reads no cancel between tokens). The command waited,
exited 1 with a summary saying "running", and the job was then recorded failed "when a
kernel shut down"; it now says the job did not stop, exits 130 (Ctrl-C) as the exit status
table says, and the job is recorded failed with why."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import sys, time, threading
import skiff.cli as cli
from skiff.kinds import KINDS, Kind, JobRequest
from skiff.grammar.common import command

@command("deaf", help="a job that never looks at a cancel")
def DEAF(p):
    p.add_argument("--seconds", type=float, default=60.0)

def run(config, reporter):
    import signal
    reporter.progress(1, 2)
    while signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        time.sleep(0.01)  # until the command follows the job (its own Ctrl-C handler)
    print("STARTED", flush=True)
    time.sleep(config["seconds"])  # one long step: no should_stop()
    return {}

class DeafKind(Kind):
    name = "deaf"
    command = DEAF
    entry = "__main__:run"
    def prepare(self, values, *, cell=None, user_ns=None, where="thread"):
        return JobRequest("deaf", {"seconds": values["seconds"]}, fn=run)

KINDS["deaf"] = DeafKind()
cli.CANCEL_WAIT_S = 1.0
sys.exit(cli.main(["deaf", "--seconds", "30"]))
"""


def test_a_cancel_not_taken_in_time_is_said_and_exits_130(tmp_path):
    import skiff

    root = str(Path(skiff.__file__).resolve().parents[1])
    env = {**os.environ, "SKIFF_RUNS": str(tmp_path / "runs"), "PYTHONPATH": root,
           "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        assert proc.stdout.readline().strip() == "STARTED"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (proc.returncode, err)
    (folder,) = (tmp_path / "runs").iterdir()
    assert f"skiff: job {folder.name} still running 1 s after the cancel" in err, err
    assert "its thread ends with this process, recorded failed" in err
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    final = [e for e in events if e["type"] == "status"][-1]
    assert final["status"] == "failed" and "still running when" in final["message"]
