"""A menu's leader read stuck to its word or to the price's currency sign is no text.

Round 28's menus (``test_menu_leaders``) read at 14 px as JPEG 40 kept a leader the
recognizer gave no space from its word ("Avocado toast... 8.90", "Chapter 3... 12") or from
the amount's currency sign ("Soup of the day …€ 5,40"). ``rec.strip_leader`` and
``rec.row_leaders`` drop two marks or more stuck to a word before the number that closes
the line (one is the word's own point: "incl. 4.50") and any marks stuck to the sign."""

from __future__ import annotations

import pytest

from skiff.kernels.ocr.rec import row_leaders, strip_leader

from .test_menu_leaders import ROWS, _menu

TRUTH = {item: f"{item} {price}" for item, price in ROWS}


@pytest.mark.parametrize("face, size, pitch, gap, rows", [
    ("dejavu-serif", 14, 0.45, 0.4, ("Soup of the day",)),
    ("liberation-sans", 14, 0.3, 0.25, ("Avocado toast", "Chapter 3", "Soup of the day"))])
def test_a_leader_stuck_to_its_word_or_sign_is_dropped(pipe, face, size, pitch, gap, rows):
    got = pipe(_menu(face, size, pitch, gap, True))
    lines = [" ".join(line.split()) for line in got.text.splitlines() if line.strip()]
    for item in rows:
        read = [line for line in lines if line.startswith(item)]
        assert read == [TRUTH[item]], (item, lines)


def test_stuck_leaders_go_only_before_a_closing_number():
    assert strip_leader("Avocado toast... 8.90") == "Avocado toast 8.90"
    assert strip_leader("Chapter 3... 12") == "Chapter 3 12"
    assert strip_leader("Soup of the day …€ 5,40") == "Soup of the day € 5,40"
    assert strip_leader("Soup of the day .€ 5,40") == "Soup of the day € 5,40"
    assert strip_leader("Total ......$ 12.00") == "Total $ 12.00"
    for kept in ("Loading... 50%", "Wait... and see", "incl. 4.50", "Pancakes with syrup. 7.20",
                 "Price: €5.40", "No. 12", "Pay .50"):
        assert strip_leader(kept) == kept
    assert row_leaders(["Avocado toast...", "8.90"]) == ["Avocado toast", "8.90"]
    assert row_leaders(["Soup of the day", "…€ 5,40"]) == ["Soup of the day", "€ 5,40"]
    assert row_leaders(["Loading...", "50%"]) == ["Loading...", "50%"]
    assert row_leaders(["Wait...", "and see"]) == ["Wait...", "and see"]
