"""Round 36 (h5): a path given to ``train`` as the data, and ``train(df, target=...)``.

``Trainer.train("sales.csv")`` trained on the path's characters (a str has a length and
items) and failed with "got batches of a Tensor"; ``train(df, target="revenue")`` (the command
line's ``--target``) was "did you mean 'dataset'?". Now each names what reads it: the
command line / ``%train`` for a table, ``ImageFolder`` for a folder, ``TextDataset`` for a
text, and ``(X, y)`` split off a DataFrame."""

from __future__ import annotations

import pytest

import skiff
from skiff import nn


@pytest.mark.parametrize("name, said", [
    ("sales.csv", r"python -m skiff train mlp sales.csv --target COLUMN"),
    ("folder", r"skiff.data.ImageFolder\("),
    ("corpus.txt", r"skiff.data.TextDataset\(.*block_size")])
def test_a_path_names_its_reader(tmp_path, name, said):
    path = tmp_path / name
    if name == "folder":
        path.mkdir()
    else:
        path.write_text("a,b\n1,2\n")
    trainer = skiff.Trainer(nn.Linear(2, 1))
    for given in (str(path), path):
        with pytest.raises(TypeError, match="is a path .*which the Trainer does not read: "
                                            ".*" + said):
            trainer.train(given)


def test_a_target_column_is_split_off_first():
    with pytest.raises(TypeError, match=r"train\(\(df.drop\(columns=\[COLUMN\]\), "
                                        r"df\[COLUMN\]\)\)"):
        skiff.Trainer(nn.Linear(2, 1)).train(([[1.0, 2.0]], [[1.0]]), target="revenue")
