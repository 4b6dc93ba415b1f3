"""Round 40 (h11): the speed figures README.md's tour gives a new user are the ones
benchmarks/RESULTS.md measured. The tour said "3.3x" for gpt-mini's CUDA graph (RESULTS:
3.25x) and "~1.2x on a CPU" for ``--precision hybrid`` without saying of what (RESULTS'
whole-process table: hybrid CPU 5.4 s against the default's 6.7, ~0.8x). The oracle is
RESULTS.md's own table, read afresh; a re-measured RESULTS that moves a figure fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
RESULTS = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")


def _readme_line(*words: str) -> str:
    lines = [line for line in README.splitlines() if all(w in line for w in words)]
    assert len(lines) == 1, (words, lines)
    return lines[0]


def test_cuda_graph_figure_is_results():
    measured = re.findall(r"skiff-gpu-graph / PyTorch tokens/s = ([\d.]+)x", RESULTS)
    assert measured, "RESULTS.md lost its CUDA-graph row"
    line = _readme_line("CUDA graph", "gpt-mini")
    said = re.search(r"([\d.]+)x PyTorch", line).group(1)
    assert said == measured[-1], (said, measured)


def _whole_process_cpu(method: str) -> float:
    """CPU s of ``method`` in RESULTS' newest OCR "Whole process" table (the first after
    the "## OCR (issue 6)" heading)."""
    section = RESULTS.split("## OCR (issue 6)", 1)[1].split("## Whole process", 1)[1]
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip("|").split("|")]
        if cells and cells[0] == method:
            return float(cells[4])  # method | accuracy | seconds | vs RapidOCR | CPU s
    raise AssertionError(f"no {method} row")


def test_hybrid_cpu_figure_is_results():
    ratio = _whole_process_cpu("skiff-hybrid") / _whole_process_cpu("skiff")
    line = _readme_line("--precision hybrid", "%ocr")
    said = float(re.search(r"~([\d.]+)x the CPU", line).group(1))
    assert abs(said - ratio) <= 0.05, (said, ratio)
