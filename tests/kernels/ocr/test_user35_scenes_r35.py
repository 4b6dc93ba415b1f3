"""Round 35, three of bench_ocr_user35's scenes read through the whole pipeline, each with
the change in ``pipeline._assemble`` / ``det._text_height`` it needed (h3's finds). Oracle:
the text drawn into each scene.
- a form's comb (one character a cell): "Surname M U E L L E R" -> "Surname MUELLER"
  (``combs.join_combs``);
- code in a monospaced face: "()" read "( )" (``marks.empty_brackets``);
- a parcel label whose barcode's 140-px bars set the page's text height: the 14-px sender
  lines were shrunk away (bars over 16x taller than wide are no glyphs)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))


def _read(pipe, scene):
    import bench_ocr_user35 as user35

    try:
        img, truth = getattr(user35, scene)()
    except (OSError, FileNotFoundError) as exc:
        pytest.skip(f"fonts not installed: {exc}")
    return pipe(np.asarray(img.convert("RGB"))).text.split("\n"), truth


def test_a_comb_reads_as_one_field(pipe):
    got, truth = _read(pipe, "comb_form")
    assert got[:2] == truth[:2]          # "Surname MUELLER", "Postcode 80331"


def test_empty_brackets_in_code_keep_no_space(pipe):
    got, truth = _read(pipe, "code_syntax_colours")
    (want,) = [t for t in truth if t.endswith("()}")]
    assert want in got


def test_a_barcode_does_not_set_the_text_height(pipe):
    got, truth = _read(pipe, "shipping_label")
    assert truth[0] in got and truth[1] in got   # the sender's small print
