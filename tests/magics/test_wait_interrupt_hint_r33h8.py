"""Round 33 (h8): interrupting ``%train ... --wait`` (the kernel's Interrupt, Ctrl-C in
IPython) cancelled the job and left its final line only; the terminal's Ctrl-C says how to
go on, a notebook said nothing a saved notebook keeps. The wait now prints the line
(``%jobs resume ID``); the oracle is ``jobs resume ID --dry-run``, which takes the job."""

from __future__ import annotations

import io
import os
import signal
import threading
import time

from skiff.cli import main
from skiff.jobs import launch
from skiff.kinds.train import KIND
from skiff.kinds.train import to_config as train_config
from skiff.magics.base import wait_quietly


def test_an_interrupted_wait_says_how_to_go_on(runs_dir, capsys):
    config = train_config({**KIND.command.defaults(), "model": "mlp", "steps": 100000,
                           "checkpoint_every": 5})
    job = launch("train", config, runner="thread")

    def interrupt():  # once a checkpoint is on disk (a condition; bounded by a deadline)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not job.refresh().final:
            if list((job.run_dir / "checkpoints").glob("step-*.npz")):
                break
            time.sleep(0.02)
        # only while the wait's own SIGINT handler is in place and the job runs: a SIGINT
        # after the wait ended would land in pytest itself (CI: an xdist worker killed)
        if not job.refresh().final and \
                signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            os.kill(os.getpid(), signal.SIGINT)

    out = io.StringIO()
    threading.Thread(target=interrupt, daemon=True).start()
    wait_quietly(job, quiet_s=0.0, stream=out)
    assert job.refresh().status == "cancelled"
    assert f"to go on from where it stopped: %jobs resume {job.id}" in out.getvalue()
    capsys.readouterr()
    assert main(["jobs", "resume", job.id, "--dry-run"]) == 0  # the oracle


def test_a_wait_that_ends_on_its_own_says_nothing_more(runs_dir):
    config = train_config({**KIND.command.defaults(), "model": "mlp", "steps": 3})
    job = launch("train", config, runner="thread")
    out = io.StringIO()
    wait_quietly(job, quiet_s=0.0, stream=out)
    assert job.status == "done" and "to go on" not in out.getvalue()
