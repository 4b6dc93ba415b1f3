"""notebooks/01-tour.ipynb runs top to bottom (quick mode) and its job widgets end done."""

from __future__ import annotations

import ast
import json
import re

import pytest

from tests.notebook_util import execute_notebook, outputs_text
from tests.notebooks.build_check import build_main
from tests.notebooks.widget_views import job_views

pytestmark = [pytest.mark.notebook, pytest.mark.slow]


def test_tour_is_built_from_its_source(capsys):
    assert build_main(["--check", "01-tour"]) == 0, capsys.readouterr().out


def test_tour_runs_and_every_job_ends_done(runs_dir):
    nb = execute_notebook("01-tour.ipynb", timeout=300)
    views = job_views(nb)
    # one live widget per job the tour launched: demo, solve, train, ocr
    kinds = {}
    for run in runs_dir.iterdir():
        meta = json.loads((run / "config.json").read_text())
        kinds[meta["id"]] = meta["kind"]
    assert sorted(kinds.values()) == ["demo", "ocr", "solve", "train"]
    for job_id, kind in kinds.items():
        view = views.get(job_id)
        assert view is not None, f"no job widget for the {kind} job {job_id}"
        assert view["status"] == "done", (kind, view)
        if view["max"] and view["max"] > 1:
            assert view["value"] == view["max"], (kind, view)
    demo = next(v for i, v in views.items() if kinds.get(i) == "demo")
    assert demo["max"] == 15 and "15/15 step" in demo["progress_text"]
    assert demo["chart"]
    text = outputs_text(nb)
    assert "quick mode" in text
    assert "cpu" in text.lower()  # %devices lists the CPU
    for kind in ("demo", "solve", "train", "ocr"):
        assert f"{kind:<5} done" in text
    # what each job found, in one line each (round 29: the tour printed statuses only); the
    # oracles: the run folders' result.json, and the lines the page was drawn with
    results = {kinds[r.name]: json.loads((r / "result.json").read_text())
               for r in runs_dir.iterdir()}
    solve = results["solve"]
    assert (f"solve: {solve['iterations']} iterations to |r|/|b| = "
            f"{solve['relative_residual']:.1e}") in text
    hist = results["train"]["history"]
    assert f"train: loss {hist[0]['loss']:.3f} at step 1, {hist[-1]['loss']:.3f}" in text
    assert hist[-1]["loss"] < hist[0]["loss"]
    cell = next(c.source for c in nb.cells if "%ocr page" in c.source)
    printed = ast.literal_eval(re.search(r"^lines = (\[.*\])$", cell, re.M).group(1))
    m = re.search(r"ocr: +(\d+) of (\d+) lines read as printed: (.*)", text)
    assert m and int(m.group(2)) == len(printed) and int(m.group(1)) == len(printed), m
    assert ast.literal_eval(m.group(3)) == printed
