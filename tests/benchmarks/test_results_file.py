"""The benchmarks' results pages keep what earlier runs (and the readings under them) said."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from results_file import machine_line, run_workers, write_keeping_earlier  # noqa: E402


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


def test_each_method_runs_in_its_own_process_with_the_same_threads(tmp_path, monkeypatch):
    """``run_workers``: one process per method, its arguments passed on, the threads set
    equally (1 unless the caller set them), the last stdout line read as JSON."""
    import os

    script = tmp_path / "bench_toy.py"
    script.write_text("import json, os, sys\n"
                      "print('warming up')\n"
                      "print(json.dumps({'argv': sys.argv[1:], 'pid': os.getpid(), "
                      "'threads': os.environ['OPENBLAS_NUM_THREADS']}))\n")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    got = run_workers(script, ("a", "b"), ["--n", 3])
    assert got["a"]["argv"] == ["--worker", "a", "--n", "3"]
    assert got["b"]["argv"] == ["--worker", "b", "--n", "3"]
    assert got["a"]["pid"] != got["b"]["pid"] != os.getpid()
    assert got["a"]["threads"] == got["b"]["threads"] == "1"
    line = machine_line(2)
    assert line.startswith("Machine: ") and "2 threads per method" in line
    assert "load average at the end" in line
