"""Round 37: ``jobs ls`` lists the newest 20; a long training started before 20 quick jobs
was one of "N older jobs not shown" and nothing said it still ran. The line now names the
hidden jobs that run; the oracle is the job itself."""

from __future__ import annotations

from skiff.cli import main
from skiff.jobs import launch


def test_the_older_line_names_a_hidden_running_job(runs_dir, tmp_path, capsys):
    hold = tmp_path / "go"
    old = launch("demo", {"steps": 3, "sleep": 0.0, "hold_at": 2, "hold_until": str(hold)},
                 runner="thread")
    try:
        for _ in range(3):
            launch("demo", {"steps": 1, "sleep": 0.0}, runner="thread").wait(60)
        assert old.status == "running"
        capsys.readouterr()
        assert main(["jobs", "ls", "-n", "2"]) == 0
        out = capsys.readouterr().out
        assert f"2 older jobs not shown, 1 of them still running: {old.id} (--limit N or " \
               f"--all)" in out, out
        hold.write_text("")
        old.wait(60)
        assert main(["jobs", "ls", "-n", "2"]) == 0
        assert "2 older jobs not shown (--limit N or --all)" in capsys.readouterr().out
    finally:
        hold.write_text("")
