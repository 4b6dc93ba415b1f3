"""Round 29, as a terminal user: a 200,000-step training spent 4-5 s of its last moments
writing result.json (json indents in Python: its history, one entry per step, indented).
A long top-level value is now written on one line by json's C encoder. The oracle: json's
own ``dumps(..., indent=1)`` of the same value, which the file must equal byte for byte
when no value is long, and as JSON when one is."""

from __future__ import annotations

import json
import math

import numpy as np

from skiff.jobs.store import json_safe, write_json


def _result(steps: int) -> dict:
    return {"steps": steps, "final_loss": 0.25, "epochs": 1.5,
            "history": [{"step": i + 1, "loss": 1.0 / (i + 1), "lr": 1e-3}
                        for i in range(steps)],
            "strategy": {"label": "dp=1", "reasons": ["a", "b"], "choice": {"dp": 1}},
            "empty": {}, "none": None, "text ü": "café \"quoted\"",
            "nan": math.nan, "array": np.arange(3), "numpy scalar": np.float32(0.5)}


def test_a_short_result_is_the_same_bytes_as_before(tmp_path):
    data = _result(20)
    write_json(tmp_path / "result.json", data, long_values_on_one_line=True)
    assert (tmp_path / "result.json").read_text() == json.dumps(json_safe(data), indent=1)


def test_a_long_history_is_written_on_one_line_and_reads_back_the_same(tmp_path):
    data = _result(20_000)
    write_json(tmp_path / "result.json", data, long_values_on_one_line=True)
    text = (tmp_path / "result.json").read_text()
    oracle = json.dumps(json_safe(data), indent=1)
    assert json.loads(text) == json.loads(oracle)
    assert text.count("\n") < 40 < oracle.count("\n")  # the history is one line
    # the short values around it are indented as before
    assert '\n "strategy": {\n  "label": "dp=1",' in text


def test_other_files_are_indented_as_before(tmp_path):
    data = _result(20_000)
    write_json(tmp_path / "config.json", data)
    assert (tmp_path / "config.json").read_text() == json.dumps(json_safe(data), indent=1)
