"""Round 43 (h11): Ctrl-C in ``%jobs wait ID --json`` printed "stopped waiting; ..." where
a cell's captured stdout was to be one JSON document, and ``python -m skiff jobs wait ID
--json`` interrupted printed nothing on stdout at all (a script's ``json.loads`` met "").
Both print a document now, as a wait that timed out does: ``{"error", "command": "jobs",
"exit": 130}``, and the job goes on. Oracle: the terminal's document and exit status.

The job is held at a step until a file exists, and Ctrl-C (``_thread.interrupt_main``) is
sent once the main thread is seen inside the wait (its stack read): no timing."""

from __future__ import annotations

import _thread
import json
import signal
import sys
import threading
import time

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import INTERRUPTED, main
from skiff.jobs import launch


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "skiff")
    return sh


@pytest.fixture(autouse=True)
def python_sigint():
    """Ctrl-C raises KeyboardInterrupt here whatever an earlier test of this worker left
    (``_thread.interrupt_main`` does nothing where SIGINT is ignored or the default)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _waiting(frame) -> bool:
    """The main thread's stack is inside a job's wait or follow loop."""
    while frame is not None:
        name = frame.f_code.co_filename.replace("\\", "/")
        if "/skiff/jobs/" in name and frame.f_code.co_name in ("wait", "follow"):
            return True
        frame = frame.f_back
    return False


def _wait_frame(frame):
    """The frame of the job's wait or follow loop the main thread is in, or None."""
    while frame is not None:
        if _waiting(frame) and not _waiting(frame.f_back):
            return frame
        frame = frame.f_back
    return None


def _ctrl_c_once_waiting(gate, limit_s: float = 60.0) -> threading.Thread:
    """Ctrl-C to the main thread once it waits, again every 2 s while that same wait goes on
    (round 46: one interrupt was lost once and the worker waited for good); the job let go
    (the gate) if the wait never ends, so that the test fails instead of hanging."""
    main_id = threading.main_thread().ident

    def run():
        end = time.monotonic() + limit_s
        sent = None
        while time.monotonic() < end:
            frame = _wait_frame(sys._current_frames().get(main_id))
            if sent is None and frame is not None:
                sent, again = frame, time.monotonic() + 2.0
                _thread.interrupt_main()
            elif sent is not None:
                if frame is not sent:
                    return  # that wait ended
                if time.monotonic() > again:
                    again = time.monotonic() + 2.0
                    _thread.interrupt_main()
            time.sleep(0.005)
        gate.touch()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_interrupted_wait_json_is_a_document_and_the_job_goes_on(shell, runs_dir, capsys):
    gate = runs_dir / "gate"
    job = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2, "hold_until": str(gate)})
    try:
        capsys.readouterr()
        _ctrl_c_once_waiting(gate)
        assert main(["jobs", "wait", job.id, "--json"]) == INTERRUPTED
        said = capsys.readouterr()
        terminal = json.loads(said.out)  # it was "": the line on stderr alone
        assert "stopped waiting" in said.err
        assert set(terminal) == {"error", "command", "exit"}
        assert terminal["exit"] == INTERRUPTED and terminal["command"] == "jobs"
        assert job.id in terminal["error"] and "stopped waiting" in terminal["error"]

        _ctrl_c_once_waiting(gate)
        assert shell.run_line_magic("jobs", f"wait {job.id} --json") is None
        doc = json.loads(capsys.readouterr().out)  # one document, alone on stdout
        assert set(doc) == set(terminal)
        assert doc["exit"] == terminal["exit"] and doc["command"] == terminal["command"]
        assert job.id in doc["error"] and "stopped waiting" in doc["error"]
        assert "%jobs cancel" in doc["error"]  # a cell's way to stop it

        # IPython in a terminal: `%jobs show ID -f --json` follows with a progress line
        _ctrl_c_once_waiting(gate)
        assert shell.run_line_magic("jobs", f"show {job.id} -f --json") is None
        doc = json.loads(capsys.readouterr().out.split("\r")[-1].strip().splitlines()[-1])
        assert doc["exit"] == INTERRUPTED and "stopped following" in doc["error"]

        # without --json: the line, as before
        _ctrl_c_once_waiting(gate)
        assert shell.run_line_magic("jobs", f"wait {job.id}") is None
        assert capsys.readouterr().out.strip().startswith(f"stopped waiting; job {job.id}")
        assert not job.refresh().final  # Ctrl-C stopped the waiting, not the job
    finally:
        gate.touch()
    assert job.wait(timeout=60).status == "done"
