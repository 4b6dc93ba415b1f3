"""Round 34 (h8): ``python -m skiff predict --help`` showed ``run DATA`` (the parser's
name) while the README, ``%predict`` and every message say ``predict JOB DATA``; a missing
argument said "required: run". The oracle: the README's own line."""

from __future__ import annotations

from pathlib import Path

from skiff.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"


def test_usage_says_job_as_the_readme(capsys):
    assert "python -m skiff predict JOB new.csv" in README.read_text()
    assert main(["predict", "--help"]) == 0
    out = capsys.readouterr().out
    assert "JOB DATA [DATA ...]" in out and " run " not in out.split("\n", 1)[0]
    assert main(["predict"]) == 2
    assert "required: JOB, DATA" in capsys.readouterr().err
