"""Round 36, round 35's leftovers a user hits, each against the drawn truth:

- a full-width bracket's or colon's own blank read as a space in a CJK line ("备注 (无)" for
  "备注（无）", ``spacing._bracket_space`` in ``spurious_spaces``), and a pair of brackets
  read in two widths ("李四(经理）", ``spacing.one_width``);
- the probe set's check-box form as a phone photo: its tick, joined to two of the frame's
  sides, with the third side's middle run missing the box's edge, measured the frame's
  line 6 px wide and the tick was not told (``checkboxes._thickness``);
- a footnote's "¹" read "1" where Liberation Serif draws it (``marks.footnote_marks``);
- accented Greek dropped by every shipped dictionary: said, as an unread script is
  (``script_mix.greek_warning``);
- a warning's stack level naming the user's line, not the pipeline's
  (``script_mix.user_stacklevel``)."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
ROOT = Path(__file__).resolve().parents[3]
FONTS = Path("/usr/share/fonts")


def _line(face: str, px: int, text: str, width: float = 1.05):
    from PIL import Image, ImageDraw, ImageFont

    path = FONTS / face
    if not path.exists():
        pytest.skip(f"{path} not installed")
    im = Image.new("RGB", (40 + int(px * width * len(text)), 2 * px + 20), "white")
    ImageDraw.Draw(im).text((20, px // 2 + 5), text, font=ImageFont.truetype(str(path), px),
                            fill=0)
    return np.asarray(im)


ZENHEI, SERIF_CJK = "truetype/wqy/wqy-zenhei.ttc", "opentype/noto/NotoSerifCJK-Regular.ttc"
SANS_CJK = "opentype/noto/NotoSansCJK-Regular.ttc"


@pytest.fixture(scope="module")
def brackets(pipe):
    # drawn: full-width brackets in a Chinese line (round 35's reading: "备注 (无)", "会议室
    # （三楼)" in Zen Hei at 28 and 40 px, Noto Serif CJK at 28), and a half-width bracket
    # round Latin print set off by a space, as Chinese text sets English
    cases = [(ZENHEI, 28, "备注（无）"), (ZENHEI, 40, "会议室（三楼）"),
             (SERIF_CJK, 28, "备注（无）"), (SANS_CJK, 18, "联系人：李四（经理）"),
             (SANS_CJK, 28, "会议室 (Room 3)")]
    return cases, [pipe(_line(f, px, t)).text for f, px, t in cases]


def test_no_space_beside_a_full_width_bracket(brackets):
    cases, got = brackets
    for (_, _, truth), text in zip(cases[:4], got[:4], strict=True):
        # the bracket's width is the recognizer's to read; the space is not in the ink
        assert text.replace("(", "\uff08").replace(")", "\uff09") == truth, text


def test_a_bracket_pair_reads_in_one_width(brackets):
    cases, got = brackets
    for text in got[:4]:
        for a, b in (("(", "\uff09"), ("\uff08", ")")):
            assert not (a in text and b in text), text


def test_a_space_before_a_latin_bracket_stays(brackets):
    _, got = brackets
    assert got[4] == "会议室 (Room 3)"


def test_spacing_rule_by_characters():
    from skiff.kernels.ocr.spacing import _bracket_space, one_width

    def spaced(text):
        chars = text.split("|")
        return [k for k in range(len(chars) - 1) if _bracket_space(chars, k)]

    assert spaced("备|注|(|无|)") == [1]
    assert spaced("电|话|：|0|1|0") == [1, 2]
    assert spaced("室|(|R|o|o|m") == []            # English in brackets: its space stays
    assert spaced("T|e|l|:|0|2|1") == []           # a half-width colon in Latin print
    assert spaced("产|地|:|澳|大") == [1]            # and its space after, as typed
    assert one_width("海淀区（东门)") == "海淀区（东门）"
    assert one_width("Tel (A）") == "Tel (A）"      # no CJK in the line: not settled here


def test_packaging_keeps_the_space_after_its_half_width_colons(pipe):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_ocr_errands as errands

    try:
        im, truth = errands.chinese_english_packaging()
    except OSError as exc:
        pytest.skip(f"fonts not installed: {exc}")
    got = pipe(np.asarray(im.convert("RGB"))).text.split("\n")
    assert "产地: 澳大利亚 Made in Australia" in truth
    assert "产地: 澳大利亚 Made in Australia" in got


def test_a_phone_photo_of_a_ticked_box_reads_ticked(pipe):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_ocr_probes as probes

    try:
        im, truth = probes.checkbox_form()
    except OSError as exc:
        pytest.skip(f"fonts not installed: {exc}")
    seed = [s.__name__ for s in probes.SCENES].index("checkbox_form")  # the benchmark's
    photo = probes.degrade(im, "phone", seed)
    assert pipe(np.asarray(photo)).text.split("\n") == truth


def test_frame_width_of_a_turned_frame_whose_tick_joins_two_sides():
    from skiff.kernels.ocr.checkboxes import TICKED, _state, _thickness

    # a 3-px frame whose right side stands one column in at the middle (turned), and a
    # tick drawn into the left and bottom sides at their middles (the probe's photo)
    part = np.zeros((25, 25), bool)
    part[:3], part[-3:], part[:, :3] = True, True, True
    part[:, 21:24] = True
    part[:, 24] = False
    part[:2, 24] = True                       # the top right corner reaches the edge
    part[10:14, :11] = True                   # the tick's left arm joins the left side
    part[15:, 10:14] = True                   # and its foot the bottom side
    assert _thickness(part) == 3
    ink = part.copy()
    for k in range(12):                        # the tick's right arm, rising to the right
        ink[16 - k:18 - k, 11 + k:13 + k] = True
    assert _state(ink, _thickness(part)) == TICKED


@pytest.fixture(scope="module")
def greek(pipe):
    face = "truetype/dejavu/DejaVuSans.ttf"
    texts = ["Καλημέρα σας", "Αθήνα, Ελλάδα", "ΑΘΗΝΑ 2026", "Width 5 μm", "Total 12,50 €"]
    return texts, [pipe(_line(face, 30, t, 0.75)).text for t in texts]


def test_accented_greek_is_said_where_the_dictionary_drops_it(pipe, greek):
    from skiff.kernels.ocr.script_mix import GREEK_MARKED, greek_warning

    texts, got = greek
    alphabet = pipe.alphabet
    for truth, text in zip(texts, got, strict=True):
        dropped = any(c in truth for c in GREEK_MARKED) and not any(c in text for c in
                                                                    GREEK_MARKED)
        said = greek_warning("page", text, alphabet, "ch")
        assert bool(said) == dropped, (truth, text)
    assert "ά" in greek_warning("page", got[0], alphabet, "ch")
    # a dictionary that held them would read them: nothing to say
    assert greek_warning("page", got[0], [*alphabet, *GREEK_MARKED], "mine") == ""


def test_a_warning_names_the_users_line():
    from skiff.kernels.ocr import script_mix

    package = os.path.dirname(os.path.dirname(os.path.dirname(script_mix.__file__)))
    # two frames inside the package (as skiff.ocr -> the pipeline -> _assemble), compiled
    # with a file name there; the warning should name this test's line
    inner = os.path.join(package, "kernels", "ocr", "_fake_inner.py")
    src = ("import warnings\n"
           "from skiff.kernels.ocr.script_mix import user_stacklevel\n"
           "def deep():\n"
           "    warnings.warn('x', UserWarning, stacklevel=user_stacklevel())\n"
           "def outer():\n"
           "    return [deep() for _ in range(1)]\n")
    scope: dict = {}
    exec(compile(src, inner, "exec"), scope)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        scope["outer"]()  # this line
    assert [(w.filename, w.lineno) for w in seen] == [(__file__, line)]


def _read_crop(pipe, face, px, text):
    from skiff.kernels.ocr.rec import crop_box

    img = _line(face, px, text, 0.7)
    (line,) = pipe(img).lines
    return line.text, crop_box(img[:, :, ::-1].copy(), np.asarray(line.box, np.float32))


SERIF, SERIF_IT = ("truetype/liberation2/LiberationSerif-Regular.ttf",
                   "truetype/liberation2/LiberationSerif-Italic.ttf")


@pytest.mark.parametrize(("face", "px", "truth"), [
    (SERIF, 18, "See the notes¹ below."), (SERIF, 32, "as Smith showed¹, the"),
    (SERIF_IT, 24, "See the notes¹ below.")])
def test_a_raised_footnote_one_is_written_raised(pipe, face, px, truth):
    from skiff.kernels.ocr.marks import footnote_marks

    text, crop = _read_crop(pipe, face, px, truth)
    assert text == truth  # the pipeline writes it raised (its _assemble calls footnote_marks)
    assert footnote_marks(truth.replace("¹", "1"), crop) == truth  # the recognizer's reading


@pytest.mark.parametrize("truth", ["Room A1 is full", "it is all well", "tall trees fell"])
def test_a_one_or_l_on_the_baseline_stays(pipe, truth):
    from skiff.kernels.ocr.marks import footnote_marks

    text, crop = _read_crop(pipe, SERIF, 24, truth)
    assert footnote_marks(text, crop) == text == truth
