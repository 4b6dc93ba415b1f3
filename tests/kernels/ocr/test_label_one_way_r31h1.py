"""Round 31 (h1): the lines of one small label are turned together (``rec.choose_turns``'
``together``, ``reading.LineReading._one_label``).

Under noise an upside-down line's digits or Latin garble can read surer than its right way
up, and the lines of one 180-degree label came back half turned. The figures below are the
recognizer's own two readings of such a label (a 13-px AR PL UKai TW label, "请随手关门 /
B2 出口 / 电话 021-6688", turned 180 degrees, blur, noise 20-35, JPEG 20-30; h1's round-31
set, seed 31, image 4), and the boxes are drawn at known angles."""

import math

import numpy as np

from skiff.kernels.ocr.rec import choose_turns, one_way

# (reading as it stands, reading turned, crop width): the right way up is as it stands
LABEL = [(("通助手关门", 0.5245), ("", 0.0), 67),
         (("职出2", 0.4951), ("09 28", 0.6885), 55),
         (("Ca 01=008", 0.4952), ("200-120 17 3", 0.7111), 89)]


def _args(rows):
    kept = [r[0] for r in rows]
    turned = [r[1] for r in rows]
    widths = [r[2] for r in rows]
    return kept, turned, widths, [0] * len(rows)


def test_label_lines_turn_together():
    kept, turned, widths, pages = _args(LABEL)
    alone = choose_turns(kept, turned, widths, pages)
    # each line by its own gain and the page's mean: the garble lines turn, the CJK one not
    assert alone.tolist() == [False, True, True]
    both = choose_turns(kept, turned, widths, pages, together=[True] * 3)
    # the page's width-weighted gain: (-0.5245*67 + 0.1934*55 + 0.2159*89) / 211 < 0.05
    gain = (-0.5245 * 67 + (0.6885 - 0.4951) * 55 + (0.7111 - 0.4952) * 89) / 211
    assert gain < 0.05
    assert both.tolist() == [False, False, False]


def test_label_turns_whole_when_its_vote_says_so():
    # the same label read the other way round: every line gains by turning
    rows = [(("", 0.0), ("通助手关门", 0.5245), 67), (("09 28", 0.6885), ("职出2", 0.4951), 55),
            (("仓库", 0.20), ("电话", 0.90), 89)]
    kept, turned, widths, pages = _args(rows)
    gain = (0.5245 * 67 + (0.4951 - 0.6885) * 55 + 0.7 * 89) / 211
    assert gain > 0.05
    got = choose_turns(kept, turned, widths, pages, flipped=[False] * 3, together=[True] * 3)
    assert got.tolist() == [True, True, True]
    # crops standing the other way now (one line the direction model turned): the page
    # decides one way up of the image, and only the crops not standing so turn
    got = choose_turns(kept, [(t, s) for t, s in turned], widths, pages,
                       flipped=[False, False, False], together=[True, True, False])
    assert got[0] and got[1]


def test_label_with_mixed_flags_takes_one_way_up():
    # crop 0 is turned already (flipped) and reads best as it is now; crops 1 and 2 are not
    # turned and read better turned: all three then stand turned
    kept = [("出口", 0.95), ("1Ê", 0.40), ("ɐ", 0.30)]
    turned = [("口出", 0.30), ("B2", 0.90), ("电话", 0.85)]
    got = choose_turns(kept, turned, [60, 60, 60], [0, 0, 0], flipped=[True, False, False],
                       together=[True] * 3)
    assert got.tolist() == [False, True, True]


def _box(cx, cy, w, h, deg):
    """A detector's box (tl, tr, br, bl) of a w x h line turned by ``deg`` about its centre."""
    t = math.radians(deg)
    rot = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    corners = np.array([[-w / 2, -h / 2], [w / 2, -h / 2], [w / 2, h / 2], [-w / 2, h / 2]])
    return (corners @ rot.T + [cx, cy]).astype(np.float32)


def test_one_way_by_the_boxes_drawn_angles():
    assert one_way([_box(100, 40, 120, 20, 7), _box(100, 80, 90, 20, 9)], 12)
    # 178 and -3 degrees run along one line (undirected)
    assert one_way([_box(100, 40, 120, 20, 178), _box(100, 80, 90, 20, -3)], 12)
    assert not one_way([_box(100, 40, 120, 20, 0), _box(100, 80, 90, 20, 30)], 12)
    assert not one_way([_box(100, 40, 120, 20, 0)], 12)  # one line: nothing to agree
    assert not one_way([_box(100, 40, 120, 20, 0), _box(100, 80, 20, 90, 0)], 12)  # standing
    # the spread is the drawn one
    a, b = 5.0, 5.0 + 11.0
    assert one_way([_box(0, 0, 80, 16, a), _box(0, 40, 80, 16, b)], 12)
    assert not one_way([_box(0, 0, 80, 16, a), _box(0, 40, 80, 16, b)], 10)
    assert math.isclose(b - a, 11.0)


# ---- the script lean (rec.choose_turns' ``script``, reading.SCRIPT_LEAN) -------------------
# CJK print turned around reads as Latin garble the recognizer can be surer of: a 14-px Noto
# Sans Mono CJK SC label "楼梯口 / 牙科诊室" (h1's set, seed 131, image 31), read from its
# Gaussian copy; the crops stand turned (flipped), and the right way up is the other one
TURNED_CJK = [(("KENE", 0.6757), ("牙和冰发", 0.4990), 64),
              (("cab", 0.2426), ("单核口", 0.3977), 51)]


def test_script_lean_turns_latin_garble_back_to_cjk():
    from skiff.kernels.ocr.reading import SCRIPT_LEAN

    kept, turned, widths, pages = _args(TURNED_CJK)
    flipped = [True, True]
    plain = choose_turns(kept, turned, widths, pages, flipped=flipped, together=[True] * 2)
    # by score alone the page stays: (-0.1767 * 64 + 0.1551 * 51) / 115 = -0.03
    assert plain.tolist() == [False, False]
    leaned = choose_turns(kept, turned, widths, pages, flipped=flipped, together=[True] * 2,
                          script=SCRIPT_LEAN)
    assert leaned.tolist() == [True, True]


def test_script_lean_leaves_latin_and_sure_cjk_alone():
    from skiff.kernels.ocr.reading import SCRIPT_LEAN
    from skiff.kernels.ocr.rec import wide_share

    # Latin turned reads Latin garble: no lean either way (the gain is the scores' alone)
    kept, turned = [("Keep Left", 0.62)], [("ʇɟǝ˥ dǝǝʞ", 0.60)]
    assert wide_share("Keep Left") == wide_share("ʇɟǝ˥ dǝǝʞ") == 0.0
    assert not choose_turns(kept, turned, [100], [0], script=SCRIPT_LEAN)[0]
    # a sure Latin reading is not given up for a far less sure CJK one
    assert not choose_turns([("Exit", 0.97)], [("出", 0.40)], [100], [0], script=SCRIPT_LEAN)[0]
    # a right-way CJK reading keeps its lean against its turned digits
    assert not choose_turns([("请随手关门", 0.52)], [("200-120 17 3", 0.71)], [100], [0],
                            script=SCRIPT_LEAN)[0]
    assert choose_turns([("请随手关门", 0.52)], [("200-120 17 3", 0.71)], [100], [0])[0]
