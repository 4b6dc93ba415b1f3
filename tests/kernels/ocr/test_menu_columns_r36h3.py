"""Round 36: a menu in two columns, each entry a dish joined to its price by a dotted
leader, is read column by column (``panels.leader_columns``); it was read across ("Two eggs
on toast 7.50 Soup of the day 6.40"). Oracle: the text drawn, in the order a reader takes
it. A table with the same layout and no leaders stays row by row (a one-column menu:
``test_menu_leaders.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))


def _scene(name):
    import bench_ocr_user36 as user36

    try:
        return getattr(user36, name)()
    except OSError as exc:
        pytest.skip(f"fonts not installed: {exc}")


def test_two_column_menu_reads_column_by_column(pipe):
    im, truth = _scene("menu_two_columns")
    assert pipe(np.asarray(im.convert("RGB"))).text.split("\n") == truth


def test_its_phone_photo_too(pipe):
    import bench_ocr_user36 as user36
    from bench_ocr_probes import degrade

    im, truth = _scene("menu_two_columns")
    seed = [s.__name__ for s in user36.SCENES].index("menu_two_columns")
    got = pipe(np.asarray(degrade(im, "phone", seed))).text.split("\n")
    # the order is the point here; a leader's first dot may stay on a dish ("Croissant.")
    assert [g.replace(".", "") for g in got] == [t.replace(".", "") for t in truth]


def _table(leaders: bool):
    from bench_ocr_probes import canvas, font

    im, d = canvas(1100, 360)
    f = font("lib-serif", 22)
    items = [[("Apples", "2.40"), ("Pears", "3.10"), ("Plums", "4.00")],
             [("Lemons", "1.90"), ("Grapes", "5.60"), ("Cherries", "7.20")]]
    for j, col in enumerate(items):
        x0 = 50 + j * 540
        for i, (name, price) in enumerate(col):
            y = 60 + i * 80
            d.text((x0, y), name, font=f, fill=0)
            w = d.textlength(price, font=f)
            d.text((x0 + 470 - w, y), price, font=f, fill=0)
            if leaders:
                x = x0 + d.textlength(name, font=f) + 12
                while x < x0 + 470 - w - 12:
                    d.text((x, y), ".", font=f, fill=0)
                    x += 10
    rows = [[f"{n} {p}" for n, p in col] for col in items]
    return np.asarray(im), rows


def test_the_same_layout_without_leaders_stays_a_table(pipe):
    img, cols = _table(False)
    across = [f"{a} {b}" for a, b in zip(*cols, strict=True)]
    assert pipe(img).text.split("\n") == across


def test_with_leaders_it_is_two_menus(pipe):
    img, cols = _table(True)
    assert pipe(img).text.split("\n") == cols[0] + cols[1]


def test_leader_between_needs_dots_only():
    from skiff.kernels.ocr.panels import _leader_between

    img = np.full((40, 400, 3), 255, np.uint8)
    a, b = np.array([10.0, 60, 10, 34]), np.array([330.0, 380, 10, 34])
    assert not _leader_between(img, a, b)                   # blank: no leader
    for x in range(70, 320, 10):
        img[28:31, x:x + 3] = 0                              # 3-px dots on the baseline
    assert _leader_between(img, a, b)
    img[12:34, 190:200] = 0                                  # a letter-sized mark among them
    assert not _leader_between(img, a, b)


def test_a_leader_on_a_turned_photo_is_one_still():
    from skiff.kernels.ocr.panels import _leader_between

    # a phone photo turned 3 degrees: the dots climb 12 px over the gap of a 28-px row
    img = np.full((60, 400, 3), 255, np.uint8)
    a, b = np.array([10.0, 60, 10, 38]), np.array([330.0, 380, 22, 50])
    for x in range(70, 320, 10):
        y = 30 + int(0.05 * (x - 70))
        img[y:y + 3, x:x + 3] = 0
    assert _leader_between(img, a, b)
