"""Round 35 (h8, from h5's note in docs/trainer.md): a ``--resume`` whose checkpoint already
reaches the steps asked trains nothing (h5's line says so); the summary's speed line then
read "1e-04 s" (the time of no step). It is left out. The oracle: the kernel's own
result says it resumed at the total (``resumed.from_step == resumed.total``) and its
history is the first run's."""

from __future__ import annotations

import json
import re

import numpy as np

from skiff.cli import main

SPEED = re.compile(r"^  [0-9.e+-]+ s( \(|,|$)", re.MULTILINE)   # "  2.19 s (the first..."


def test_a_resume_that_trains_nothing_has_no_speed_line(runs_dir, tmp_path, capsys):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 2))
    (tmp_path / "t.csv").write_text("a,b,y\n" + "\n".join(
        f"{p:.3f},{q:.3f},{2 * p - q:.3f}" for p, q in x) + "\n")
    words = ["train", "mlp", str(tmp_path / "t.csv"), "--epochs", "1", "--checkpoint-dir",
             str(tmp_path / "ck")]
    assert main(words) == 0
    out = capsys.readouterr()
    first = out.out + out.err
    assert SPEED.search(first)                  # a run that trained: its speed line
    assert main([*words, "--resume", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    resumed = doc["result"]["resumed"]
    assert resumed["from_step"] == resumed["total"] == doc["result"]["steps"]
    assert main([*words, "--resume"]) == 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert "nothing trained" in text
    assert not SPEED.search(text) and "1e-04 s" not in text
