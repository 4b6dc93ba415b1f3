"""A train job's rank whose launcher (mpiexec's ``hydra_pmi_proxy``) is killed outright stops
at its next step as on a cancel (round 32, h11; since round 33 the worker's ``_Stops`` does
it for every kind, and the train kind's own watches are gone: these tests drive ``_Stops``
as a training rank does, asking ``should_stop`` at each step).

Before, the rank was reparented to init and trained on to its last step (a tiny ERNIE LoRA
fine-tune: 24 s more, to step 300 of 300, its job already said failed). The oracle is the
process tree itself: a middle process (standing in for the proxy) is SIGKILLed, and the rank
below it must ask for the stop (the run folder's ``cancel``, which every rank's reporter
reads) and say which launcher went (its pid, known to the test)."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RANK = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from skiff.jobs.worker import _Stops

    class Reporter:
        run_dir = {run!r}
        def log(self, message, level="info"):
            with open(os.path.join(self.run_dir, "log.txt"), "a") as fh:
                fh.write(f"{{level}}: {{message}}\\n")
        def should_stop(self):
            return os.path.exists(os.path.join(self.run_dir, "cancel"))

    reporter = Reporter()
    stops = _Stops(Path({run!r}), reporter, os.getppid())
    stops.start()
    open(os.path.join({run!r}, "ready"), "w").close()
    end = time.monotonic() + 60          # a training's steps: each asks whether to stop
    while time.monotonic() < end and not reporter.should_stop():
        time.sleep(0.05)
    with open(os.path.join({run!r}, "rank.txt"), "w") as fh:
        fh.write("stopped" if os.path.exists(os.path.join({run!r}, "cancel")) else "ran on")
""")


def _launch(tmp_path, held: str):
    """A 'proxy' process whose child is the 'rank'; returns the proxy's Popen."""
    script = tmp_path / "rank.py"
    script.write_text(RANK.format(root=str(ROOT), run=str(tmp_path)))
    env = {**os.environ, "SKIFF_HELD": held}
    proxy = ("import subprocess, sys, time; subprocess.Popen([sys.executable, sys.argv[1]]); "
             "time.sleep(120)")
    return subprocess.Popen([sys.executable, "-c", proxy, str(script)], env=env)


def _wait_for(path: Path, limit: float = 60.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end and not path.exists():
        time.sleep(0.05)
    return path.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent pids as on Linux")
def test_rank_stops_when_its_proxy_is_killed(tmp_path):
    proxy = _launch(tmp_path, "1")
    try:
        assert _wait_for(tmp_path / "ready")
        assert not (tmp_path / "cancel").exists()
        os.kill(proxy.pid, signal.SIGKILL)
        proxy.wait(10)
        assert _wait_for(tmp_path / "rank.txt")
        assert (tmp_path / "rank.txt").read_text() == "stopped"
        log = (tmp_path / "log.txt").read_text()
        assert log.startswith("warning: ") and f"pid {proxy.pid}" in log
    finally:
        if proxy.poll() is None:
            proxy.kill()
        (tmp_path / "cancel").touch()   # the rank leaves in any case


TERM_RANK = textwrap.dedent("""
    import os, signal, sys, time
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from skiff.jobs.worker import _Stops

    class Reporter:
        run_dir = {run!r}
        def log(self, message, level="info"):
            with open(os.path.join(self.run_dir, "log.txt"), "a") as fh:
                fh.write(f"{{level}}: {{message}}\\n")
        def should_stop(self):
            return os.path.exists(os.path.join(self.run_dir, "cancel"))

    reporter = Reporter()
    stops = _Stops(Path({run!r}), reporter, os.getppid())
    stops.start()
    open(os.path.join({run!r}, "ready"), "w").close()
    end = time.monotonic() + 60
    while time.monotonic() < end and not reporter.should_stop():
        time.sleep(0.05)
    time.sleep(0.3)                      # the step's end: its checkpoint
    stops.end()
    with open(os.path.join({run!r}, "rank.txt"), "w") as fh:
        fh.write("checkpointed")
    time.sleep(60)                       # a second SIGTERM (default again) ends it
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals as on Linux")
def test_sigterm_asks_for_a_stop_then_a_second_one_ends_the_rank(tmp_path):
    """``kill PID`` of a rank (or of mpiexec, which hands SIGTERM on) killed it mid-step:
    the steps since its last checkpoint were lost. The oracle: the rank's own exit status
    (SIGTERM's default action only after the stop was asked for and done)."""
    script = tmp_path / "rank.py"
    script.write_text(TERM_RANK.format(root=str(ROOT), run=str(tmp_path)))
    rank = subprocess.Popen([sys.executable, str(script)], env={**os.environ, "SKIFF_HELD": "1"})
    try:
        assert _wait_for(tmp_path / "ready")
        rank.send_signal(signal.SIGTERM)
        assert _wait_for(tmp_path / "rank.txt")
        assert rank.poll() is None                     # it stopped as on a cancel, alive
        assert (tmp_path / "cancel").exists()
        assert _wait_for(tmp_path / "log.txt", 10)
        assert "SIGTERM" in (tmp_path / "log.txt").read_text()
        rank.send_signal(signal.SIGTERM)
        assert rank.wait(30) == -signal.SIGTERM
    finally:
        if rank.poll() is None:
            rank.kill()
