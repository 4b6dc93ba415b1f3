"""Round 36: SKIFF_RUNS naming a file (or a path under one) said "cannot create run folder
...: File exists" / "Not a directory", which reads as a clash of job ids; ``jobs`` said it
plainly ("is a file, not a folder"). A launch now names the file in the way. The oracle: the
file the test made, and the terminal's exit status 2 with no run folder made."""

from __future__ import annotations

import pytest

from skiff.cli import main


@pytest.mark.parametrize("under", ["", "runs/x"])
def test_the_file_in_the_way_is_named(tmp_path, monkeypatch, capsys, under):
    blocker = tmp_path / "runs-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SKIFF_RUNS", str(blocker / under) if under else str(blocker))
    assert main(["solve", "poisson", "--grid", "8x8"]) == 2
    err = capsys.readouterr().err
    assert f"'{blocker}' is a file, not a folder (set SKIFF_RUNS to a writable folder)" in err
    assert blocker.read_text() == "not a folder"
