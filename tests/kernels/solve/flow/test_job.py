"""``%solve cylinder`` from a cell and ``python -m skiff solve cylinder`` from the terminal:
the coefficients as numbers, the plots as artifacts, progress, cancel, one-line mistakes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.kernels.backend.report import JobCancelled, NullReporter
from skiff.kernels.solve.flow import FlowResult, run_case
from skiff.kinds.solve import to_config


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_magic_steady_case(shell):
    job = shell.run_line_magic("solve", "cylinder --case 2d-1 --resolution 16 --wait")
    assert job.status == "done", job.error
    res = job.value
    assert isinstance(res, FlowResult)
    for key in ("cd", "cl", "dp", "cells", "dofs", "steps", "seconds"):
        assert isinstance(job.result[key], (int, float)), key
    assert 5.3 < job.result["cd"] < 5.8 and job.result["cells"] == res.cells
    for name in ("fields", "mesh"):
        path = job.artifact_path(name)
        assert path is not None and path.read_bytes()[:4] == b"\x89PNG"
    html = res._repr_html_()
    assert "DFG band" in html and html.count("<img") == 2
    assert "newton_update" in job.state.metrics


def test_magic_mistakes_are_one_line(shell):
    for line, needle in (("cylinder --re -1", "--re (Reynolds number) must be > 0"),
                         ("cylinder --resolution 6", "too coarse to hold the cylinder"),
                         ("cylinder --case 3d-1", "invalid choice: '3d-1'")):
        with pytest.raises(UsageError, match=needle.replace("(", r"\(").replace(")", r"\)")):
            shell.run_line_magic("solve", line)


def test_cli_periodic_case_json(runs_dir, capsys):
    from skiff.cli import main  # python -m skiff, in this process (round 41: the second
    # interpreter and its import of skiff were half the test's CPU)

    capsys.readouterr()
    code = main(["solve", "cylinder", "--case", "2d-2", "--resolution", "16", "--dt", "0.01",
                 "--t-end", "0.1", "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(out.out)["result"]
    assert {"cd_max", "cl_max", "st", "cells", "dofs", "steps", "seconds"} <= set(doc)
    assert doc["steps"] == 10 and doc["case"] == "2d-2" and doc["dofs"] > doc["cells"]
    assert doc["cd_max"] > 0 and 0 < doc["linear_share"] < 1
    # each number says what it is measured in (round 24: no units anywhere in the JSON)
    assert doc["units"]["cd_max"] == "1" and doc["units"]["dp_half"] == "Pa"
    assert doc["units"]["seconds"] == "s" and set(doc["units"]) - {"t"} <= set(doc)


def test_nose_result_says_its_units():
    from skiff.kernels.solve.flow.nose import NoseShape
    from skiff.kernels.solve.flow.nose_flow import NoseFlow

    doc = NoseFlow(NoseShape(), 1000.0, 0.31, 0.05, 100, 900, 1.0, "steady").to_json()
    assert doc["units"]["length"] == "H" and doc["units"]["cd"] == "1"
    assert set(doc["units"]) - {"s", "x", "y", "cp", "t"} <= set(doc)


def test_config_of_the_cylinder():
    cfg = to_config({"problem": "cylinder", "case": "2d-2", "resolution": 32, "re": None,
                     "device": "auto"})
    assert cfg == {"problem": "cylinder", "case": "2d-2", "resolution": 32, "re": None,
                   "dt": None, "t_end": None, "device": "cpu"}
    with pytest.raises(ValueError, match="--t-end must be > 0"):
        to_config({"problem": "cylinder", "t_end": 0.0})


@pytest.mark.parametrize("values, needle", [
    # inf passed the config and failed in the run, after its run folder was made
    ({"re": float("inf")}, r"--re \(Reynolds number\) must be > 0, got inf"),
    ({"case": "2d-2", "dt": float("inf")}, "--dt must be > 0, got inf"),
    # a step longer than the run: no step, an IndexError in the run
    ({"case": "2d-2", "dt": 10.0}, "dt 10 is longer than the run"),
    ({"case": "2d-2", "dt": 0.5, "t_end": 0.1}, "dt 0.5 is longer than the run"),
    # 1e9 failed in the run, suggesting "--case 2d-2 --re 1e+09"
    ({"re": 1e9}, r"--re 1e\+09 is beyond what this laminar 2D solve holds .*at most 1000"),
])
def test_config_refuses_before_the_run_folder(values, needle):
    with pytest.raises(ValueError, match=needle):
        to_config({"problem": "cylinder", **values})


class _StopAfter(NullReporter):
    def __init__(self, n):
        self.n, self.calls, self.steps = n, 0, []

    def should_stop(self):
        self.calls += 1
        return self.calls > self.n

    def progress(self, done, total=None, *, unit="step", message=None):
        self.steps.append((done, total, unit))


@pytest.mark.parametrize("case", ["2d-1", "2d-2"])
def test_cancel_is_honoured_with_progress(case):
    rep = _StopAfter(3)
    with pytest.raises(JobCancelled, match="cancelled after 3"):
        run_case(case, resolution=16, dt=0.01, t_end=1.0, reporter=rep)
    assert rep.calls == 4
    if case == "2d-1":
        assert [s[2] for s in rep.steps] == ["Newton step"] * 3
    else:
        assert np.all([s[2] == "time step" for s in rep.steps])


def test_summary_of_a_shortened_2d3_run_names_its_end_time():
    """2D-3 stopped at t = 0.5 printed "dp at t=8 ... (DFG -0.115--0.105: outside)" and blamed
    the resolution; its dp is at t = 0.5 and the bands are for the full run."""
    from skiff.kinds.solve import KIND
    result = {"case": "2d-3", "re": 100.0, "cells": 1020, "dofs": 4895, "steps": 25,
              "seconds": 0.5, "linear_share": 0.2, "cd_max": 0.365, "cl_max": 0.00017,
              "dp_end": 0.185, "t_end": 0.5,
              "bands": {"cd_max": [2.93, 2.97], "cl_max": [0.47, 0.49],
                        "dp_end": [-0.115, -0.105]},
              "in_bands": {"cd_max": False, "cl_max": False, "dp_end": False}}
    text = "\n".join(KIND.summary(result))
    assert "dp at t=8" not in text and "--0.105" not in text
    assert "dp at t=0.5 0.185 (DFG at t=8: -0.115 to -0.105)" in text
    assert "stopped at t = 0.5 of the case's 8" in text
    full = {**result, "t_end": 8.0, "dp_end": -0.11, "in_bands": {**result["in_bands"],
                                                                  "dp_end": True}}
    text = "\n".join(KIND.summary(full))
    assert "dp at t=8 -0.11 (DFG -0.115 to -0.105)" in text and "stopped" not in text
