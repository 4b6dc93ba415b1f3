"""``solve train-nose --profile CSV``: a user's own nose outline from the magic and the
terminal (the kernel's ``NoseProfile``, round 30). The oracle is the kernel's own reading of
the same file (length, name, clearance) and its own refusals; the front adds the file's
absolute path (the job runs in its run folder), graded grids by default, and one line for
each mistake before any job exists."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.cli import main
from skiff.jobs.launch import dry_run
from skiff.kernels.solve.flow.profile import NoseProfile


def _wedge(folder, name="wedge.csv", points=((2.0, 0.0), (0.0, 0.5), (2.0, 1.0))):
    path = folder / name
    np.savetxt(path, np.asarray(points, dtype=float), delimiter=",", header="x,y",
               comments="")
    return path


def test_a_profile_file_is_read_before_the_job_and_graded_by_default(tmp_path, monkeypatch,
                                                                     runs_dir):
    _wedge(tmp_path)
    monkeypatch.chdir(tmp_path)
    doc = dry_run("solve", "train-nose --profile wedge.csv --clearance 0.3 --re 50",
                  front="magic")
    config = doc["config"]
    oracle = NoseProfile.from_csv(tmp_path / "wedge.csv", 0.3)
    assert config["profile"] == str(tmp_path / "wedge.csv")      # absolute: the job runs elsewhere
    assert config["adapt"] == "graded" and config["clearance"] == 0.3
    assert config["length"] == pytest.approx(oracle.length)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


@pytest.mark.parametrize("line, needle", [
    ("train-nose --profile wegde.csv", "did you mean 'wedge.csv'"),
    ("train-nose --profile wedge.csv --length 4", "--length describes the parametric nose"),
    ("train-nose --profile wedge.csv --adapt learned", "--adapt learned knows the parametric"),
    ("train-nose --profile crossed.csv", "crosses itself"),
    ("poisson --profile wedge.csv", "profile"),
])
def test_each_mistake_is_one_line_before_any_job(tmp_path, monkeypatch, runs_dir, line,
                                                 needle):
    _wedge(tmp_path)
    _wedge(tmp_path, "crossed.csv",
           [(2, 0), (0, 0.5), (2, 1), (1, 0.9), (1.5, 0.2), (2, 0)])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=needle) as info:
        dry_run("solve", line, front="magic")
    assert "\n" not in str(info.value)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_the_terminal_says_the_same(tmp_path, monkeypatch, capsys, runs_dir):
    monkeypatch.chdir(tmp_path)
    assert main(["solve", "train-nose", "--profile", "nose.csv", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "no such profile file: 'nose.csv'" in err and str(tmp_path) in err


def test_the_summary_names_the_profile_not_a_bluntness():
    from skiff.kinds import KINDS

    shape = NoseProfile([(2.0, 0.0), (0.0, 0.5), (2.0, 1.0)], 0.3, "wedge")
    lines = KINDS["solve"].summary({"problem": "train-nose", **shape.to_dict(), "re": 50.0,
                                    "cd": 0.5, "cl": 0.01, "cells": 900, "adapt": "graded",
                                    "seconds": 3.0})
    assert lines[0].startswith("train nose profile 'wedge', length 2")
    assert "bluntness" not in lines[0] and "None" not in " ".join(lines)
