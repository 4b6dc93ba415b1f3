"""Round 37: the run folders' environment as a shell leaves it. ``SKIFF_RUNS= `` (blank)
named a folder of spaces in the working folder: it is unset, as an empty one is (the
oracle: the root with it unset). ``SKIFF_RUNS_MODE=grp`` said the choices only: it names
the closest."""

from __future__ import annotations

import pytest

from skiff.jobs.store import RunFolderError, runs_mode, runs_root


@pytest.mark.parametrize("blank", ["", "  ", "\t"])
def test_a_blank_skiff_runs_is_unset(tmp_path, monkeypatch, blank):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SKIFF_RUNS", raising=False)
    unset = runs_root()
    monkeypatch.setenv("SKIFF_RUNS", blank)
    assert runs_root() == unset == tmp_path / "skiff-runs"


def test_a_misspelt_mode_names_the_closest(monkeypatch):
    monkeypatch.setenv("SKIFF_RUNS_MODE", "grp")
    with pytest.raises(RunFolderError, match=r"SKIFF_RUNS_MODE='grp' \(did you mean 'group'\?\)"):
        runs_mode()
    monkeypatch.setenv("SKIFF_RUNS_MODE", "Group ")
    assert runs_mode() == "group"
