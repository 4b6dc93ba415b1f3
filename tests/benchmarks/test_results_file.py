"""The benchmarks' results pages keep what earlier runs (and the readings under them) said."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from results_file import write_keeping_earlier  # noqa: E402


def test_a_new_run_goes_on_top_and_the_old_page_stays(tmp_path):
    page = tmp_path / "results" / "ocr.md"
    write_keeping_earlier(page, "# OCR\n\n| a | 1 |\n")
    assert page.read_text() == "# OCR\n\n| a | 1 |\n"  # nothing earlier: no section
    page.write_text(page.read_text() + "\nReading this run: a hand-written note.\n")
    write_keeping_earlier(page, "# OCR\n\n| a | 2 |")
    text = page.read_text()
    assert text.startswith("# OCR\n\n| a | 2 |\n\n## Earlier runs (before ")
    assert text.count("# OCR") == 1  # the old title is not repeated
    assert text.index("| a | 1 |") < text.index("a hand-written note")
    write_keeping_earlier(page, "# OCR\n\n| a | 3 |")
    later = page.read_text()
    assert later.index("| a | 3 |") < later.index("| a | 2 |") < later.index("| a | 1 |")
    assert "a hand-written note" in later
