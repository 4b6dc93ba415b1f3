"""notebooks/07-high-speed-train.ipynb runs top to bottom in quick mode: the DFG table, a
nose job, the grids, a live sweep, the surrogate's held-out check, the verified optimum and
the stage times."""

from __future__ import annotations

import pytest

from tests.notebook_util import execute_notebook, outputs_text
from tests.notebooks.build_check import build_main

pytestmark = [pytest.mark.notebook, pytest.mark.slow]


def test_notebook_is_built_from_its_source(capsys):
    # in this process (a subprocess of build.py took 1.8 CPU s, 5-14 s wall under load)
    assert build_main(["--check", "07-high-speed-train"]) == 0, capsys.readouterr().out


def test_notebook_runs(runs_dir):
    nb = execute_notebook("07-high-speed-train.ipynb", timeout=240)
    text = outputs_text(nb)
    assert "quick mode" in text
    assert "DFG band" in text and "NoseFlow" in text
    assert "2/2" in text and "held-out: max error" in text
    assert "refused: outside the sampled domain" in text
    assert "the bound" in text
    # the stored sweep's times are said to be the stored run's, its one process singular
    assert "64-shape sweep (the stored one, a busy machine), wall time" in text
    assert " 1 processes" not in text
    # the solver is shown inside every DFG band, as the prose says (resolution 32 was out)
    assert "<td>in</td>" in text and "<td>out</td>" not in text
    assert text.count("image/png") >= 3
    # a nose of one's own: a CAD export in mm with its rows shuffled, read as the 3 H ellipse
    assert "read: length 3.000 H (11400 / 3800 = 3), points put in order: True" in text
    assert "were not in order along the outline" in text
