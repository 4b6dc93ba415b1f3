"""Every usage error of ``python -m skiff CMD`` is one line on stderr that names the command
(round 31: a grammar check's own message came bare, ``--runner thread runs one rank, ...``,
while argparse's and the kinds' said ``python -m skiff train:`` / ``skiff train:``)."""

from __future__ import annotations

import pytest

from skiff.cli import main


@pytest.mark.parametrize("argv", [
    ["train", "mlp", "--np", "2", "--runner", "thread"],
    ["solve", "poisson", "--grid", "8x8", "--np", "2", "--runner", "thread"],
    ["train", "mlp", "--epoch", "3"],
    ["train", "mlpp"],
    ["jobs", "rm", "--all"],
    ["jobs", "wait", "x", "--dry-run"],
])
def test_usage_errors_name_their_command(argv, runs_dir, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith((f"skiff {argv[0]}: ", f"python -m skiff {argv[0]}: ")), err
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
