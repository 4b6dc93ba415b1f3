"""Round 40: what a thread job printed (a ``%%train`` cell's model that prints, a kind's
own ``print``) went to whichever cell the kernel was running and nowhere else: ``jobs logs
ID``, ``%jobs logs ID`` and ``--json``'s ``outputs`` showed it for process jobs only
(``logs/rank<r>.out``). A thread job's prints now go to its ``logs/rank0.out`` as well,
still to where they went; another thread's prints do not. The oracle: the lines the job's
function printed, and the lines the test's own thread printed meanwhile."""

from __future__ import annotations

import json
import sys
import threading

from skiff.cli import main
from skiff.jobs import launch


def test_what_a_thread_job_prints_is_in_its_logs(runs_dir, capsys):
    started, go_on = threading.Event(), threading.Event()

    def talk(config, reporter):
        print("from the job: ü 1")
        started.set()
        go_on.wait(30)
        print("from the job: 2", file=sys.stderr)
        return {"ok": True}

    job = launch("talk", {}, fn=talk)
    assert started.wait(30)
    print("from the test's thread")  # meanwhile, elsewhere: not the job's
    go_on.set()
    job.wait(timeout=30)
    assert job.status == "done", job.error
    seen = capsys.readouterr()
    assert "from the job: ü 1" in seen.out and "from the job: 2" in seen.err  # still there
    kept = (job.run_dir / "logs" / "rank0.out").read_text()
    assert kept == "from the job: ü 1\nfrom the job: 2\n"
    assert "--- the job printed (logs/rank0.out) ---\nfrom the job: ü 1" in job.logs
    assert main(["jobs", "logs", job.id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outputs"] == {
        "0": "from the job: ü 1\nfrom the job: 2"}


def test_a_job_that_prints_nothing_leaves_no_file(runs_dir):
    job = launch("quiet", {}, fn=lambda config, reporter: {"ok": True})
    job.wait(timeout=30)
    assert job.status == "done"
    assert not (job.run_dir / "logs" / "rank0.out").exists()
