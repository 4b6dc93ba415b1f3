"""Process jobs: real mpiexec, 2 ranks."""

import os
import signal
import time

import pytest

from skiff.jobs import Job, launch
from skiff.jobs.process import find_mpiexec
from tests.jobs.waiting import wait_for as _wait_for

pytestmark = [pytest.mark.mpi]


@pytest.fixture(autouse=True)
def _need_mpi():
    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))


def test_two_ranks_allreduce_and_report():
    job = launch("demo", {"steps": 3, "sleep": 0.01, "size": 8}, np=2)
    job.wait(60)
    assert job.status == "done", job.error
    # sum over ranks of (rank+1)*step at the last step: (1+2)*3
    assert job.result == {"steps": 3, "ranks": 2, "allreduce": 9.0}
    ranks = {e["rank"] for e in job.events() if e["type"] == "metric"}
    assert ranks == {0}  # rank 0 writes the events
    names = sorted(p.name for p in (job.run_dir / "ranks").iterdir())
    assert [n for n in names if not n.endswith(".host")] == ["0.exit", "0.pid", "1.exit", "1.pid"]


def test_sigkill_of_one_rank_fails_the_job_naming_it_within_10s():
    job = launch("demo", {"steps": 10_000, "sleep": 0.02}, np=2)
    pid_file = job.run_dir / "ranks" / "1.pid"
    _wait_for(lambda: pid_file.exists() and job.state.done >= 2, 60, "rank 1 to start")
    pid = int(pid_file.read_text())
    killed_at = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    _wait_for(lambda: job.done, 10, "the job to fail after SIGKILL")
    assert time.monotonic() - killed_at < 10
    assert job.status == "failed"
    assert "rank 1" in job.error and "signal 9" in job.error, job.error


def test_rank_exception_fails_with_traceback():
    job = launch("demo", {"steps": 5, "sleep": 0.01, "fail_at": 2}, np=2).wait(60)
    assert job.status == "failed"
    assert "failed on purpose at step 2" in job.error
    assert "Traceback" in job.error


def test_cancel_stops_all_ranks():
    """Cancelled means gone: mpiexec and both rank processes have exited, not only that the
    status says so."""
    from skiff.jobs.store import pid_alive, read_json

    job = launch("demo", {"steps": 10_000, "sleep": 0.02}, np=2)
    _wait_for(lambda: job.state.done >= 2, 60, "progress")
    ranks = job.run_dir / "ranks"
    _wait_for(lambda: all((ranks / f"{r}.pid").exists() for r in range(2)), 30, "rank pids")
    pids = {"mpiexec": read_json(job.run_dir / "process.json")["pid"],
            **{f"rank {r}": int((ranks / f"{r}.pid").read_text()) for r in range(2)}}
    assert all(pid_alive(pid) for pid in pids.values()), pids  # the check below can fail
    job.cancel(grace=3)
    job.wait(20)
    assert job.status == "cancelled"
    _wait_for(lambda: not any(pid_alive(pid) for pid in pids.values()), 10,
              f"every process of the job to exit ({pids})")
    assert job.state.done < 10_000  # stopped early, not run to the end


def test_reattach_after_restart_sees_a_finished_process_job():
    job = launch("demo", {"steps": 2, "sleep": 0.01}, np=2).wait(60)
    fresh = Job(job.run_dir)  # as a restarted kernel would build it
    assert fresh.status == "done"
    assert fresh.meta["runner"] == "process" and fresh.meta["np"] == 2


def test_process_job_outlives_the_kernel_that_launched_it(runs_dir):
    """A 'kernel' launches a 2-rank job and exits; a new one reattaches and sees it finish."""
    import subprocess
    import sys

    code = ("from skiff.jobs import launch\n"
            "job = launch('demo', {'steps': 20, 'sleep': 0.05}, np=2)\n"
            "print(job.id)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    job_id = out.stdout.strip()
    job = Job.load(job_id)
    assert job.status in ("queued", "running")
    job.wait(60)
    assert job.status == "done", job.error
    assert job.result["allreduce"] == 60.0


def test_launcher_gone_without_final_status_is_reported(runs_dir):
    import json

    job = launch("demo", {"steps": 1, "sleep": 0}, np=2).wait(60)
    ghost = runs_dir / "20000101-000000-demo-gone"
    ghost.mkdir()
    meta = json.loads((job.run_dir / "config.json").read_text()) | {"id": ghost.name}
    (ghost / "config.json").write_text(json.dumps(meta))
    (ghost / "process.json").write_text(json.dumps({"pid": 2**22 + 999}))
    (ghost / "events.jsonl").write_text('{"t":1,"type":"status","status":"running"}\n')
    lost = Job.load(ghost)
    assert lost.status == "failed" and "launcher process" in lost.error


def test_the_rank_mpiexec_names_wins_over_one_its_cleanup_killed(tmp_path):
    """Rank 1 is killed; mpiexec's clean-up then kills rank 0. The watcher may see rank 0's pid
    gone first, but the job must name rank 1, the one mpiexec reported."""
    from skiff.jobs.process import _dead_from_log

    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "ranks").mkdir()
    (run / "ranks" / "0.pid").write_text("100")
    (run / "ranks" / "1.pid").write_text("101")
    (run / "logs" / "launcher.log").write_text(
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
        "=   PID 101 RUNNING AT vm\n=   EXIT CODE: 9\n"
        "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)\n")
    assert _dead_from_log(run) == (1, 101, 9)


def test_rank_watch_sees_the_first_death_not_the_cleanup(tmp_path):
    """Two stand-in ranks; rank 1 dies, then rank 0 is killed as mpiexec's clean-up would:
    the watch names rank 1, whatever order the ranks are looked at in."""
    import subprocess

    from skiff.jobs.process import RankWatch

    ranks = tmp_path / "ranks"
    ranks.mkdir()
    procs = [subprocess.Popen(["sleep", "30"]) for _ in range(2)]
    try:
        for r, p in enumerate(procs):
            (ranks / f"{r}.pid").write_text(str(p.pid))
        watch = RankWatch(ranks, 2)
        assert watch.wait(0.05) is None
        import threading

        seen = []
        waiter = threading.Thread(target=lambda: seen.append(watch.wait(5.0)))
        waiter.start()  # the watcher is waiting when the ranks die, as in a job
        time.sleep(0.2)
        procs[1].kill()
        procs[1].wait()
        time.sleep(0.05)
        procs[0].kill()  # the clean-up, a moment later
        procs[0].wait()
        waiter.join(10)
        assert seen == [(1, procs[1].pid)]
    finally:
        for p in procs:
            p.kill()
        watch.close()


def test_clean_exit_is_not_a_death(tmp_path):
    import subprocess

    from skiff.jobs.process import RankWatch

    ranks = tmp_path / "ranks"
    ranks.mkdir()
    p = subprocess.Popen(["sleep", "0.2"])
    (ranks / "0.pid").write_text(str(p.pid))
    watch = RankWatch(ranks, 1)
    assert watch.wait(0.05) is None
    (ranks / "0.exit").write_text("0")
    p.wait()
    assert watch.wait(0.5) is None
    watch.close()


def test_death_signal_from_crash_report_or_inferred(tmp_path):
    from skiff.jobs.process import _death_message

    (tmp_path / "logs").mkdir()
    (tmp_path / "ranks").mkdir()
    assert "signal 9 (SIGKILL) (inferred" in _death_message(tmp_path, 1, 123)
    (tmp_path / "logs" / "fault-rank1.txt").write_text("Fatal Python error: Segmentation fault")
    assert "rank 1 (pid 123) killed by signal 11 (SIGSEGV);" in _death_message(tmp_path, 1, 123)


def test_a_rank_left_alone_leaves_by_itself(runs_dir):
    """With no launcher watching (its kernel gone), the surviving rank notices its dead peer
    and exits instead of hanging in a collective."""
    import subprocess
    import sys

    code = ("from skiff.jobs import launch\n"
            "job = launch('demo', {'steps': 100000, 'sleep': 0.02}, np=2)\n"
            "print(job.id)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    job = Job(runs_dir / out.stdout.strip())
    pid_file = job.run_dir / "ranks" / "1.pid"
    _wait_for(lambda: pid_file.exists() and job.state.done >= 2, 60, "rank 1 to start")
    rank0 = int((job.run_dir / "ranks" / "0.pid").read_text())
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    from skiff.jobs.store import pid_alive

    _wait_for(lambda: not pid_alive(rank0), 10, "rank 0 to leave")
