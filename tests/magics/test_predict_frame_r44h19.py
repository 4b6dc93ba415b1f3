"""Round 44 (h19): ``%predict JOB new_df`` on a notebook DataFrame was "no table file
'new_df'" (the terminal's grammar takes paths). A DATA word naming a DataFrame is now the
table file it would be (skiff/kernels/train/table_frame.py). The oracle is the terminal's
``predict`` of the same rows written as a CSV. The model is untrained (saved as a run saves
one): the rows' reading is under test. Needs the change to skiff/magics/predict.py in
/work/round44/h19-requests.md."""

import json

import numpy as np
import pandas as pd
import pytest

from skiff.kernels.train import models
from skiff.kernels.train.table_predict import predict_table
from skiff.kernels.train.tables import read_table


@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_predict_takes_a_frame(tmp_path, shell, monkeypatch):
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs"))
    rng = np.random.default_rng(2)
    a = rng.normal(size=20).round(3)
    colour = rng.choice(["red", "blue"], 20)
    train = tmp_path / "train.csv"
    train.write_text("a,colour,label\n" + "".join(
        f"{u},{c},{'pq'[int(u > 0)]}\n" for u, c in zip(a, colour)))
    table = read_table(train)
    run = tmp_path / "run"
    run.mkdir()
    (run / "table.json").write_text(json.dumps(table.to_json()))
    models.get("mlp", in_features=len(table.columns), out_features=2).save(
        str(run / "model.npz"))
    new = pd.DataFrame({"colour": pd.Categorical(["blue", "red", "green"]),
                        "a": [0.3, -1.2, 0.8]})
    csv = tmp_path / "new.csv"
    csv.write_text("colour,a\nblue,0.3\nred,-1.2\ngreen,0.8\n")
    want = predict_table(run, csv)
    shell.user_ns["new_df"] = new
    got = shell.run_line_magic("predict", f"{run} new_df")
    assert list(got["label predicted"]) == want.predictions
    np.testing.assert_allclose(got["probability"], want.probabilities, atol=5e-5)
