"""Round 48 (h9): the readers of several processes' output in ``mpi_util`` find each marker
wherever it starts. Unbuffered, ``print`` writes a line's text and its newline apart, so one
process's output can land before another's ``FAILED ...`` on its line or between a
``GOT {...}`` and its newline (round 47's CI: a rank's RESULT read line by line was lost).
The oracle: the objects and words written into the interleaved text by hand."""

from __future__ import annotations

import json

from .mpi_util import json_after, line_after, results_in


def _interleaved():
    got = [{"i": 0, "parts": [1.5]}, {"i": 1, "parts": [2.5]}]
    return got, ("[hydra] rank 1 said thisGOT " + json.dumps(got[0]) + "GOT " + json.dumps(got[1])
                 + "\n\nnoise without a newlineFAILED TimeoutError: their job was ended"
                 + "ALIVE []\n\nRESULT " + json.dumps({"rank": 1, "x": 2}) + "RESULT "
                 + json.dumps({"rank": 0, "x": 1}) + "\n")


def test_objects_after_a_marker_are_read_where_they_start():
    got, text = _interleaved()
    assert results_in(text, "GOT ") == got  # in the order printed: no "rank" in them
    assert [r["rank"] for r in results_in(text)] == [0, 1]  # RESULT lines, sorted by rank
    assert json_after(text, "ALIVE ") == []


def test_a_line_is_found_after_another_processes_text():
    _, text = _interleaved()
    line = line_after(text, "FAILED ")
    assert line.startswith("FAILED TimeoutError") and "their job was ended" in line
    assert not any(ln.startswith("FAILED ") for ln in text.splitlines())  # the old reading
