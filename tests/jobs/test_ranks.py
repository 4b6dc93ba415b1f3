"""Per-rank status and last lines of MPI jobs (the job view, ``%jobs show``, the terminal), and
the trainer's checkpoint lines folded into one in the log a view shows."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from skiff.jobs.ranks import rank_states, tail_lines
from skiff.jobs.render import describe, ranks_html, ranks_text, summarise_logs


def _folder(tmp_path):
    run = tmp_path / "run"
    (run / "ranks").mkdir(parents=True)
    (run / "logs").mkdir()
    return run


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_each_rank_alive_or_how_it_ended_with_its_last_lines(tmp_path):
    run = _folder(tmp_path)
    ranks, logs = run / "ranks", run / "logs"
    for r, pid in enumerate([os.getpid(), 11, 12, _dead_pid(), _dead_pid(), 15]):
        (ranks / f"{r}.pid").write_text(str(pid))
    (ranks / "1.exit").write_text("0")
    (ranks / "2.exit").write_text("1")
    (logs / "traceback-rank2.txt").write_text("Traceback ...\nValueError: bad batch\n")
    (ranks / "3.left").write_text("4")
    (logs / "fault-rank4.txt").write_text("Fatal Python error: Segmentation fault\n\nstack\n")
    (ranks / "5.host").write_text("elsewhere")           # another host: its pid means nothing
    (logs / "rank0.out").write_text("".join(f"printed {i}\n" for i in range(10)))
    (logs / "rank1.log").write_text("12:00:01 [info] plan: dp\n12:00:02 [info] done\n")
    states = rank_states(run, 7)
    got = [(s.rank, s.status, s.code) for s in states]
    assert got == [(0, "running", None), (1, "exited", 0), (2, "failed", 1), (3, "left", None),
                   (4, "died", None), (5, "running", None), (6, "starting", None)]
    assert states[0].lines == ["printed 7", "printed 8", "printed 9"]   # what it printed
    assert states[1].lines == ["12:00:01 [info] plan: dp", "12:00:02 [info] done"]  # its log
    assert states[2].detail == "ValueError: bad batch"
    assert states[3].detail == "after rank 4 died"
    assert states[4].detail == "Fatal Python error: Segmentation fault"
    text = ranks_text(states)
    assert f"rank 0 (pid {os.getpid()}) running" in text and "      printed 9" in text
    assert "rank 2 (pid 12) failed (exit 1): ValueError: bad batch" in text
    assert "rank 5 (pid 15 on elsewhere) running" in text
    table = ranks_html(states)
    assert table.count("<tr>") == 8 and "failed (exit 1)" in table and "printed 9" in table


def test_a_rank_killed_without_a_crash_report_says_so(tmp_path):
    run = _folder(tmp_path)
    (run / "ranks" / "0.pid").write_text(str(_dead_pid()))
    (state,) = rank_states(run)
    assert state.status == "died" and "SIGKILL or out of memory" in state.detail


def test_tail_lines_reads_only_the_end_and_escapes_nothing_it_should_not(tmp_path):
    path = tmp_path / "big.log"
    path.write_text("x" * 100_000 + "\nlast one\n\x1b[31mred\n")
    assert tail_lines(path, 2) == ["last one", "\x1b[31mred"]
    assert "\\x1b[31mred" in ranks_text(
        [type("R", (), {"summary": lambda self: "rank 0 running", "lines": ["\x1b[31mred"]})()])
    assert tail_lines(tmp_path / "missing", 3) == []


def test_checkpoint_lines_fold_into_one():
    lines = [(1.0, "info", "plan: explicit strategy 'dp' kept as given")]
    lines += [(2.0 + i, "info", f"checkpoint step-{2 * i:08d} at step {2 * i}")
              for i in range(1, 121)]
    lines += [(200.0, "warning", "slow step"), (201.0, "info", "plan check: step ...")]
    out = summarise_logs(lines)
    assert [m for _, _, m in out] == [
        "plan: explicit strategy 'dp' kept as given",
        "checkpoints: 120 written (steps 2-240), latest step-00000240",
        "slow step", "plan check: step ..."]
    one = [(1.0, "info", "checkpoint step-00000002 at step 2")]
    assert summarise_logs(one) == one


@pytest.mark.mpi
@pytest.mark.slow
def test_a_two_rank_job_shows_each_rank_in_its_view_and_in_jobs_show(runs_dir):
    from skiff.jobs import jobs_action, launch
    from skiff.jobs.process import find_mpiexec
    from skiff.widgets.job_view import JobView

    try:
        find_mpiexec()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    cell = ("import os\nimport numpy as np\nfrom skiff import nn\n"
            "rank = os.environ.get('PMI_RANK', os.environ.get('OMPI_COMM_WORLD_RANK', '?'))\n"
            "print(f'hello from rank {rank}')\n"
            "model = nn.Sequential(nn.Linear(4, 2))\n"
            "dataset = (np.ones((16, 4), np.float32), np.zeros(16, np.int64))\n")
    job = launch("train", {"source": cell, "steps": 2, "batch_size": 8, "strategy": "dp",
                           "lr": 0.01, "checkpoint_every": 1}, np=2).wait(120)
    assert job.status == "done", job.error
    text = describe(jobs_action("show", job.id))
    assert "ranks:" in text
    for r in (0, 1):
        assert f"rank {r} (pid " in text and f"hello from rank {r}" in text
    assert text.count(" exited 0") == 2
    view = JobView(job, start=False)
    view.update(force=True)
    assert "skiff-ranks-table" in view.ranks_view.value and view.ranks_view.layout.display is None
    assert view.ranks_view.value.count("exited 0") == 2
    assert "checkpoints: 2 written (steps 1-2), latest step-00000002" in view.log_view.value
    view.close()
