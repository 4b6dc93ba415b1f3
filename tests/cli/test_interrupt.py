"""Ctrl-C on ``python -m skiff train``: the job is cancelled, writes its last checkpoint, and the
summary says how to go on from it; the same interrupt delivered twice (``timeout -s INT``
signals the process and then its group) still stops cleanly. Before, the second signal broke
the cancel with a traceback and no checkpoint was written."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def _progress_started(runs: Path) -> bool:
    for events in runs.glob("*/events.jsonl"):
        if '"type":"progress"' in events.read_text(errors="replace"):
            return True
    return False


def test_ctrl_c_cancels_with_a_checkpoint_and_says_how_to_resume(runs_dir, tmp_path, capsys):
    ckpt = tmp_path / "ckpt"
    cmd = [sys.executable, "-m", "skiff", "train", "mlp", "--steps", "1000000",
           "--checkpoint-dir", str(ckpt), "--checkpoint-every", "1000000"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    try:
        deadline = time.monotonic() + 120
        while not _progress_started(runs_dir) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.2)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
        proc.send_signal(signal.SIGINT)  # the same interrupt again, as `timeout` sends it
        out, err = proc.communicate(timeout=60)
        err = out + err  # the summary is on stdout, the live line on stderr
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in err, err
    assert "cancelled" in err and "stopped early: cancelled" in err, err
    saved = sorted(ckpt.glob("step-*.npz"))
    assert len(saved) == 1, err
    step = int(saved[0].stem.split("-")[1])
    assert 0 < step < 1000000
    # since round 31 the summary names the job to resume (its checkpoints outside its run
    # folder are found by the job's own record); --resume --checkpoint-dir goes on as well
    assert re.search(r"to continue: python -m skiff jobs resume \d{8}-\d{6}-train-\w+", err), err
    # going on from it: the resumed job starts at that step and runs to the new end (in this
    # process: ``python -m skiff`` is ``sys.exit(main())``; a second interpreter paid its
    # imports again, round 46)
    from skiff.cli import main

    capsys.readouterr()
    assert main(["train", "mlp", "--steps", str(step + 3), "--resume", "--checkpoint-dir",
                 str(ckpt), "--json"]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["result"]["resumed"]["from_step"] == step
    last = sorted(ckpt.glob("step-*.npz"))[-1]
    assert int(last.stem.split("-")[1]) == step + 3
    with np.load(last, allow_pickle=False) as f:
        assert len(f.files) > 0
