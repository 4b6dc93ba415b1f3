"""notebooks/06-panels.ipynb runs top to bottom; its forms, jobs and monitor end as told."""

from __future__ import annotations

import ast
import re

import nbformat
import pytest

from tests.notebook_util import execute_notebook, outputs_text, widget_states
from tests.notebooks.build_check import build_main
from tests.notebooks.widget_views import job_views

pytestmark = [pytest.mark.notebook, pytest.mark.slow]


def _with_class(states: dict, cls: str) -> list[dict]:
    return [s for s in states.values() if cls in s.get("_dom_classes", [])]


def _shown_by_cell(nb, states: dict) -> dict[str, set]:
    """A code line of each cell -> the DOM classes of the widgets its outputs display."""
    out = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        classes = set()
        for o in cell.get("outputs", []):
            view = o.get("data", {}).get("application/vnd.jupyter.widget-view+json")
            if view:
                classes.update(states.get(view["model_id"], {}).get("_dom_classes", []))
        for line in cell.source.splitlines():
            out.setdefault(line.strip(), classes)  # the first cell with that line
    return out


def test_panels_notebook_is_built_from_its_source(capsys):
    assert build_main(["--check", "06-panels"]) == 0, capsys.readouterr().out


def test_panels_notebook(runs_dir):
    nb = execute_notebook("06-panels.ipynb", timeout=300)
    states = widget_states(nb)
    text = outputs_text(nb)
    # the panel: five tabs
    (panel,) = _with_class(states, "skiff-panel")
    assert panel["titles"] == ["Train", "Solve", "OCR", "Chat", "Jobs"]
    # opened on the Solve tab, and left there; each section shows its own form
    assert panel["selected_index"] == 1
    shown = _shown_by_cell(nb, states)
    assert "skiff-form-solve" in shown["solve_job = solve.launch()"]
    assert "skiff-form-ocr" in shown["ocr_job.wait(300)"]
    assert "skiff-form-train" in shown["train_job = train.launch()"]
    assert "skiff-monitor" in shown["panel.monitor.refresh()"]
    # the broken form: the grid message next to its field, Launch disabled
    grid_msgs = [s["value"] for s in _with_class(states, "skiff-message-grid") if s["value"]]
    assert len(grid_msgs) == 1 and "expected a grid like 256x256" in grid_msgs[0]
    launches = _with_class(states, "skiff-launch")
    assert sorted(s["disabled"] for s in launches) == [False, False, False, True]
    assert "launch disabled: True" in text
    # the equivalent lines, as printed and as shown in the form
    assert re.search(r"%solve jump --grid 32x32 --rtol 1e-10 --contrast 100\b", text)
    assert "python -m skiff solve jump --grid 32x32 --rtol 1e-10 --contrast 100" in text
    magic_lines = " ".join(s["value"] for s in _with_class(states, "skiff-magic-line"))
    assert "%solve jump --grid 32x32 --rtol 1e-10 --contrast 100" in magic_lines
    # the OCR form's job read the page it was given (the oracle: the lines drawn on it)
    cell = next(c.source for c in nb.cells if "panel-page.png" in c.source)
    drawn = ast.literal_eval(re.search(r"^lines = (\[.*\])$", cell, re.M).group(1))
    assert "done - read: " + "\n".join(drawn) in text
    # every job the forms launched ended done, and its widget says so
    views = job_views(nb)
    kinds = {}
    for run in runs_dir.iterdir():
        if (run / "config.json").is_file():
            import json

            kinds[run.name] = json.loads((run / "config.json").read_text())["kind"]
    assert sorted(kinds.values()) == ["ocr", "solve", "train"]
    for job_id, kind in kinds.items():
        assert views[job_id]["status"] == "done", (kind, views[job_id])
        assert f"{kind:<5} done" in text
    solve_view = next(v for i, v in views.items() if kinds[i] == "solve")
    assert solve_view["images"] == 1  # the field (the residual is the view's chart)
    ocr_view = next(v for i, v in views.items() if kinds[i] == "ocr")
    assert ocr_view["images"] >= 1  # the page with its boxes
    # the solve summary and the OCR table of lines appeared when the jobs were done
    (summary,) = _with_class(states, "skiff-solve-summary")
    assert "converged: <b>True</b>" in summary["value"]
    (table,) = _with_class(states, "skiff-ocr-table")
    assert table["value"].count("<tr>") >= 2  # a header and at least one line read
    # the planner's table
    (plan,) = _with_class(states, "skiff-plan")
    assert "dp" in plan["value"] and "⚠" not in plan["value"]
    # the plan above the form is the form's own model's (round 44: the saved form held mlp
    # on 1 rank under the plan of gpt-mini on 2, made before the fields changed)
    assert "Plan for MLP" in plan["value"] and "Plan for gpt-mini" not in plan["value"]
    # the gpt-mini plan asked for from the form is under its cell too (round 44: the cell
    # `train.plan()` showed nothing; its table was in the form, whose saved view holds mlp's)
    (plan_cell,) = [c for c in nb.cells if c.cell_type == "code"
                    and 'train.set(model="gpt-mini", np=2)' in c.source]
    shown_plan = outputs_text(nbformat.from_dict({"cells": [plan_cell]}))
    assert re.search(r"Plan for gpt-mini \([\d.]+ M params\) on 2 x ", shown_plan), shown_plan
    # the monitor lists the three jobs, all done
    (heading,) = _with_class(states, "skiff-monitor-heading")
    assert "<b>3</b> jobs (0 running)" in heading["value"]
    statuses = [re.search(r">(\w+)</span>", s["value"]).group(1)
                for s in _with_class(states, "skiff-monitor-status")]
    assert sorted(statuses) == ["done", "done", "done"]
