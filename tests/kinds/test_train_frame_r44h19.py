"""Round 44 (h19): ``%train mlp df --target outcome`` on a DataFrame of words, gaps and a
string target was refused ("the DataFrame's column 'outcome' is not numeric: encode text
... first": ``--target`` unused), and a numeric frame "has no targets for the mlp". The
magic now hands the built-in mlp the frame as a table file (skiff/kernels/train/
table_frame.py), read as ``train mlp data.csv`` reads one. Needs the change to
skiff/kinds/train.py (h18's) in /work/round44/h19-requests.md."""

import pandas as pd

from skiff.kernels.train.tables import read_table
from skiff.kinds.train import _lookup


def test_mlp_on_a_frame_is_a_table_job(tmp_path, monkeypatch):
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs"))
    frame = pd.DataFrame({"a": [0.5, -1.0, 2.0, 0.1, -0.3, 1.2],
                          "colour": ["red", "blue", "red", None, "blue", "red"],
                          "outcome": ["up", "down", "up", "up", "down", "up"]})
    values = {"model": "mlp", "data": "df", "target": "outcome"}
    model_obj, data_obj = _lookup(values, {"df": frame})
    assert model_obj is None and data_obj is None, data_obj   # a file job, not arrays
    table = read_table(values["data"], target="outcome")
    assert table.classes == ["down", "up"] and table.columns[0] == "a"
    assert str(tmp_path / "runs") in values["data"]
