"""README's ``%ocr crops/ --no-det ...`` reads each crop whole, with no detector; a crop that
read as nothing was summed up as "1 image gave no text, though the detector found 1 region
in it" (round 42, h9): no detector ran. Oracle: the option given (and, without it, the
detector's own count stays in the line)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from skiff import cli


@pytest.fixture
def crops(runs_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    blank = np.full((48, 240), 255, np.uint8)
    blank[20:28, :] -= rng.integers(0, 6, (8, 240), dtype=np.uint8)  # paper, no print
    Image.fromarray(blank).save("blank.png")
    return tmp_path


def test_no_det_summary_does_not_name_a_detector(crops, capsys):
    assert cli.main(["ocr", "blank.png", "--no-det", "--no-cls", "--out", "-"]) == 0
    err = capsys.readouterr().err
    said = next((line for line in err.splitlines() if "gave no text" in line), None)
    assert said is not None, err  # the crop was one region, read as nothing
    assert "detector found" not in said and "--no-det" in said, said
