"""Round 30b: the table reader's note on imbalanced classes names the option that weighs
them (``--class-weight balanced``, ``Trainer(class_weight='balanced')``), not a loss to write
in a notebook; its counts are numpy's of the file, and the option it names is one the train
grammar takes on that file and one the Trainer takes."""

from __future__ import annotations

import numpy as np

import skiff
from skiff.kernels.train.tables import read_table
from skiff.kinds import KINDS


def _write(path, labels):
    rng = np.random.default_rng(0)
    with open(path, "w") as fh:
        fh.write("a,b,label\n")
        for t in labels:
            fh.write(f"{rng.normal():.3f},{rng.normal():.3f},{t}\n")
    return path


def test_the_note_names_class_weight_balanced(tmp_path):
    labels = np.array(["ok"] * 95 + ["fraud"] * 5 + ["late"] * 40)
    path = _write(tmp_path / "t.csv", labels)
    note = next(n for n in read_table(str(path)).notes if n.startswith("classes imbalanced"))
    names, counts = np.unique(labels, return_counts=True)
    assert f"'fraud' has {counts[list(names).index('fraud')]} of {len(labels)} rows" in note
    assert "--class-weight balanced" in note and "class_weight='balanced'" in note
    assert "nn.CrossEntropyLoss" not in note
    values = KINDS["train"].command.parse(f"mlp {path} --class-weight balanced")
    assert vars(values)["class_weight"] == "balanced"  # what the note says, taken
    skiff.Trainer(skiff.nn.Linear(2, 3), class_weight="balanced")  # and in Python


def test_no_note_when_the_rarest_class_has_a_tenth_of_the_commonest(tmp_path):
    path = _write(tmp_path / "t.csv", ["ok"] * 50 + ["late"] * 5)
    assert not any(n.startswith("classes imbalanced") for n in read_table(str(path)).notes)
