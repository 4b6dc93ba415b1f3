"""Round 35 (h12): phone photos of bench_ocr_user35's comb form and shipping label, read
through the whole pipeline. Oracle: the text drawn into each scene.

- the comb's blurred strokes inside one detector box of the whole field read as marks and
  "1"s ("Postcode 8.033", "Date 1 410,3,1,9 818"): with a reader, ``combs.join_combs`` cuts
  each cell between its strokes and reads the cells again ("80331", "14031988");
  ``pipeline._assemble`` passes its own recognizer;
- a barcode photographed 3 degrees off upright: its bars' boxes are 10-20 px wide, under
  16 times their 142-px height, and measured the label's print 50 px (the 14-px sender
  lines were shrunk away); ``det._text_height`` now takes a component's mean ink width
  (area / height)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))


def _phone(scene):
    import bench_ocr_user35 as user35
    from bench_ocr_probes import degrade

    names = [s.__name__ for s in user35.SCENES]
    try:
        img, truth = getattr(user35, scene)()
    except (OSError, FileNotFoundError) as exc:
        pytest.skip(f"fonts not installed: {exc}")
    # the seed the benchmark's --degrade phone gives the scene
    return np.asarray(degrade(img, "phone", names.index(scene))), np.asarray(img), truth


@pytest.fixture
def with_reader(pipe):
    """The pipeline as it stands: ``_assemble`` passes its recognizer to ``join_combs``
    (round 35, the coordinator's change)."""
    return pipe


def test_a_photographed_comb_reads_cell_by_cell(with_reader):
    phone, clean, truth = _phone("comb_form")
    assert with_reader(phone).text.split("\n") == truth
    assert with_reader(clean).text.split("\n") == truth


def test_cells_are_cut_between_the_strokes(pipe):
    from skiff.kernels.ocr.combs import cell_strips, comb_line

    phone, _, _ = _phone("comb_form")
    grey = phone.mean(2)
    # the date's comb, 8 letters in 10 cells (x 200-560 drawn, y 200-240; turned <= 3 deg)
    found = comb_line(grey, 170, 520, 200, 238, 37.0, 0.0)
    assert found is not None
    ticks, y, slope = found
    assert np.allclose(np.diff(ticks), 36, atol=2) and abs(slope) < 0.06
    strips = cell_strips(phone, ticks, y, slope, 37.0)
    assert [n for _, n in strips] == [8]         # "14031988"
    (crop, _), = strips
    assert abs(crop.shape[0] - 37) <= 1 and crop.shape[1] < 36 * 8


def test_a_photographed_barcode_does_not_set_the_text_height(pipe):
    phone, _, truth = _phone("shipping_label")
    got = pipe(phone).text.split("\n")
    assert got == truth


@pytest.mark.parametrize("value,face,full", [("WILLIAMS", 0, False), ("VAN DER", 0, True),
                                             ("14031988", 2, True), ("AB12CD", 0, False)])
def test_drawn_combs_read_cell_by_cell(with_reader, value, face, full):
    """h3's drawn combs (DejaVu Serif Condensed Italic, Liberation Mono; boxes or ticks) read
    whole through the pipeline: "WLLIAMS", "VANDER", "14日31988", "AB12.CD」" without the
    reader; a blank cell stays one space."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_combs_r35h3 import comb

    img, _, _ = comb(value, face=face, full=full)
    assert with_reader(img).text == f"Name {value}"
