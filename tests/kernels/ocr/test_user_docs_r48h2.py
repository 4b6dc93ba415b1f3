"""Two misreads of a user's documents photographed with a phone, read against the text they
were drawn with (``benchmarks/bench_ocr_user47.py``'s medicine box, ``bench_ocr_user48.py``'s
product label; ``bench_ocr_probes.degrade``'s phone: turned, blurred, noisy, JPEG 50):

* a word the page prints twice read once with a doubled letter lost: "250 mg amoxicilin"
  under the title "Amoxicillin 250 mg/5 mL" (``page_words.doubled_letters`` spells it as
  the page does elsewhere);
* a barcode's digits "4 006381 333931" read "4006381 333931": the gap before the first
  "0" of DejaVu Sans Mono Bold measured 0.39 of the ink's height with the space hinted 0.17,
  but the zero's left stroke, its counter empty, passed for a seven-segment "1"'s bar and
  ``spacing.missed_spaces`` put no space there (now only where a "1" is read next).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skiff.kernels.ocr.page_words import doubled_letters
from skiff.kernels.ocr.spacing import missed_spaces

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"


@pytest.fixture(scope="module")
def read(pipe):
    """The two phone photos' readings and truths (one batch through the pipeline)."""
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(BENCH))
    try:
        import bench_ocr_user47
        import bench_ocr_user48
        from bench_ocr_probes import degrade
    except ImportError as exc:  # a font or a benchmark missing
        mp.undo()
        pytest.skip(str(exc))
    box, box_lines = bench_ocr_user47.medicine_box()
    label, label_lines = bench_ocr_user48.product_label()
    images = [degrade(box.crop((0, 0, 620, 110)), "phone", 1),  # the title and two rows
              degrade(label.crop((0, 200, 560, 420)), "phone", 5)]  # the barcode
    truths = [box_lines[:3], label_lines[-1:]]
    mp.undo()
    got = [[" ".join(t.split()) for t in r.text.splitlines() if t.strip()]
           for r in pipe.run([np.asarray(im.convert("RGB")) for im in images])]
    return got, truths


def test_a_word_read_with_a_doubled_letter_lost_is_spelt_as_the_page_spells_it(read):
    got, truths = read
    assert got[0] == truths[0]  # "... 250 mg amoxicillin (as trihydrate)."


def test_a_barcodes_first_digit_stands_apart(read):
    got, truths = read
    assert got[1] == truths[1] == ["4 006381 333931"]


def test_doubled_letters_only_from_the_page_and_only_long_words():
    page = ["Amoxicillin 250 mg", "contains amoxicilin and AMOXICILIN", "Hello, helo"]
    assert doubled_letters(page) == ["Amoxicillin 250 mg",
                                     "contains amoxicillin and AMOXICILLIN", "Hello, helo"]
    # no other spelling on the page: as read
    assert doubled_letters(["amoxicilin (as trihydrate)"]) == ["amoxicilin (as trihydrate)"]
    # two ways to double it back (the page holds "successful" and "sucessfull"): as read
    assert doubled_letters(["successful sucessfull", "sucessful"])[1] == "sucessful"


ALPHABET = ["", *"0123456789", " "]


def test_a_zeros_stroke_after_a_gap_is_no_seven_segment_one():
    # "4 006": a gap of 14 columns (0.58 of the ink's height), then zeros drawn as two
    # strokes of 3 columns around an empty counter of 6, as DejaVu Sans Mono Bold's are
    crop = np.full((48, 100, 3), 255, np.uint8)
    best = np.zeros(100 // 8 + 1, np.int64)
    x = 4
    for ch, gap in (("4", 14), ("0", 3), ("0", 3), ("6", 3)):
        if ch == "0":
            crop[12:36, x:x + 3] = crop[12:36, x + 9:x + 12] = 0
        else:
            crop[12:36, x:x + 12] = 0
        best[(x + 6) // 8] = ALPHABET.index(ch)
        x += 12 + gap
    assert missed_spaces("4006", best, np.full(len(best), 0.3), ALPHABET, crop, 8.0) == \
        "4 006"
