"""notebooks/05-ocr.ipynb runs top to bottom in quick mode: the mixed page is read, the
tilted and upside-down images too, and the folder job writes its JSON Lines."""

from __future__ import annotations

import json

import pytest

from tests.notebook_util import NOTEBOOKS, execute_notebook, outputs_text

pytestmark = [pytest.mark.notebook, pytest.mark.slow]


def test_ocr_notebook_is_built_from_its_source():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(NOTEBOOKS / "build.py"), "--check", "05-ocr"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_ocr_notebook_runs(runs_dir):
    nb = execute_notebook("05-ocr.ipynb", timeout=120)
    text = outputs_text(nb)
    assert "quick mode" in text
    assert "character accuracy: 1.0" in text
    assert "upside down  accuracy 1.000" in text
    assert "data:image/png;base64" in text  # boxes drawn over the image
    assert "error: broken.png" in text
    assert "report.pdf#page=1 - 4 lines" in text and "report.pdf#page=2" in text
    # the two-column page is read column by column
    assert "into the valleys below\nCities grew along the banks" in text
    jobs = [json.loads((r / "config.json").read_text()) for r in runs_dir.iterdir()]
    assert sorted(j["kind"] for j in jobs) == ["ocr", "ocr"]
    results = [json.loads((r / "result.json").read_text()) for r in runs_dir.iterdir()]
    assert sorted(r["images"] for r in results) == [1, 9]
