"""notebooks/04-solving.ipynb runs top to bottom in quick mode: both solve jobs end done and
the timing tables and plots are there."""

from __future__ import annotations

import json

import pytest

from tests.notebook_util import execute_notebook, outputs_text
from tests.notebooks.build_check import build_main

pytestmark = [pytest.mark.notebook, pytest.mark.slow]


def test_solving_notebook_is_built_from_its_source(capsys):
    # in this process (a subprocess of build.py took 1.8 CPU s, 5-14 s wall under load)
    assert build_main(["--check", "04-solving"]) == 0, capsys.readouterr().out


def test_solving_notebook_runs(runs_dir):
    nb = execute_notebook("04-solving.ipynb", timeout=120)
    text = outputs_text(nb)
    assert "quick mode" in text
    assert "pyamg Ruge-Stuben" in text and "scipy spsolve" in text
    assert "Solution poisson 128x128" in text and "converged" in text
    assert text.count("data:image/png;base64") >= 3 or text.count("image/png") >= 1
    assert "pressure.vtk" in text
    runs = list(runs_dir.iterdir())
    assert len(runs) == 2
    for run in runs:
        result = json.loads((run / "result.json").read_text())
        assert result["converged"] is True and result["relative_residual"] <= 1e-8
