"""Round 44 (h25): a model trained on a table of decimal commas kept no record of them, so
``predict`` on new rows whose comma cells were all ambiguous (``"1,304"``, ``"2,500"``: a
thousands grouping or one point three) read them as thousands (1304, 2500), and a semicolon
file of such rows without the target column (as many commas as semicolons) was split at the
commas. ``table.json`` now keeps each number column's decimal mark and predict reads the new
rows with it. The oracle is pandas' ``read_csv(..., decimal=",")`` of the same rows; the
model is untrained (saved as a run saves it): only the reading is under test."""

import io
import json

import numpy as np
import pandas as pd

from skiff.kernels.train import models
from skiff.kernels.train.core.tensor import Tensor, no_grad
from skiff.kernels.train.table_predict import predict_table
from skiff.kernels.train.tables import read_table

TRAIN = ("a;b;colour;price\n0,126;-0,132;red;12,5\n1,49;1,5;blue;3,25\n-1,01;0,041;red;7\n"
         "2,5;-0,654;blue;9,75\n0,362;1,96;red;1,5\n1,458;-0,004;blue;4,125\n")
NEW = [("1,304", "2,500", "red", "1,250"), ("3,125", "-1,750", "blue", "12,000"),
       ("0,875", "1,125", "red", "2,375")]  # every comma cell could be a thousands grouping


def _run(tmp_path):
    train = tmp_path / "train.csv"
    train.write_text(TRAIN)
    table = read_table(train, target="price")
    run = tmp_path / "run"
    run.mkdir()
    (run / "table.json").write_text(json.dumps(table.to_json()))
    model = models.get("mlp", in_features=len(table.columns), out_features=1)
    model.save(str(run / "model.npz"))
    return run, table.to_json(), model


def _expected(meta, model, ref):
    """The model's answers for pandas' reading of the rows, scaled as table.json says."""
    x = np.column_stack([ref["a"], ref["b"], ref["colour"] == "blue", ref["colour"] == "red"])
    xs = (x.astype(np.float64) - meta["x_mean"]) / meta["x_std"]
    with no_grad():
        out = model(Tensor(xs.astype(np.float32))).numpy().astype(np.float64)[:, 0]
    return out * meta["y_std"] + meta["y_mean"]


def test_ambiguous_commas_read_with_the_training_mark(tmp_path):
    run, meta, model = _run(tmp_path)
    assert meta["columns"] == ["a", "b", "colour=blue", "colour=red"]
    for name, sep, quote, cols in (("new.csv", ",", '"', 4), ("new.tsv", "\t", "", 4),
                                   ("features.csv", ";", "", 2), ("new2.csv", ";", "", 4)):
        text = sep.join(["a", "b", "colour", "price"][:cols]) + "\n" + "".join(
            sep.join(f"{quote}{c}{quote}" for c in r[:cols]) + "\n" for r in NEW)
        if cols == 2:  # no colour: the model needs it, so a file of the numbers only
            text = "a;b;colour\n" + "".join(f"{r[0]};{r[1]};{r[2]}\n" for r in NEW)
        (tmp_path / name).write_text(text)
        ref = pd.read_csv(io.StringIO(text), sep=sep, decimal=",")
        got = predict_table(run, tmp_path / name)
        np.testing.assert_allclose(got.predictions, _expected(meta, model, ref), rtol=1e-5,
                                   err_msg=name)
        if "price" in ref:  # scored on the truth read alike: 1.25, 12.0, 2.375
            yt = ref["price"].to_numpy()
            rmse = np.sqrt(np.mean((yt - np.asarray(got.predictions)) ** 2))
            assert abs(got.score["rmse"] - rmse) < 1e-4 * max(1.0, rmse), (name, got.score)
    assert meta["decimal"] == {"a": ",", "b": ",", "price": ","}


def test_a_semicolon_file_of_numbers_only_is_split_at_the_semicolons(tmp_path):
    # "a;b" over "1,304;2,500" rows: as many commas as semicolons; it was split at the commas
    train = tmp_path / "nums.csv"
    train.write_text("a;b;y\n" + "".join(f"{r[0]};{r[1]};{r[3]}\n" for r in NEW * 2))
    table = read_table(train)
    ref = pd.read_csv(train, sep=";", decimal=",")
    np.testing.assert_allclose(table.x_mean, ref[["a", "b"]].mean().to_numpy(), rtol=1e-12)
    assert table.y_mean == ref["y"].mean()


def test_points_where_training_had_commas_are_said(tmp_path):
    run, meta, model = _run(tmp_path)
    new = tmp_path / "en.tsv"
    new.write_text("a\tb\tcolour\n1.304\t2,500\tred\n3.125\t-1,750\tblue\n")
    got = predict_table(run, new)
    ref = pd.DataFrame({"a": [1.304, 3.125], "b": [2.5, -1.75], "colour": ["red", "blue"]})
    np.testing.assert_allclose(got.predictions, _expected(meta, model, ref), rtol=1e-5)
    assert any("column 'a': 2 cells with a decimal point ('1.304') where training's had "
               "decimal commas" in n for n in got.notes), got.notes


def test_a_headerless_semicolon_file_of_decimal_commas(tmp_path):
    # "1,304;2,500;1,250" rows with no header: more commas than semicolons
    rows = "".join(f"{r[0]};{r[1]};{r[3]}\n" for r in NEW)
    path = tmp_path / "nohead.csv"
    path.write_text(rows)
    table = read_table(path)
    ref = pd.read_csv(io.StringIO(rows), sep=";", decimal=",", header=None)
    np.testing.assert_allclose(table.x_mean, ref[[0, 1]].mean().to_numpy(), rtol=1e-12)
    assert table.y_mean == ref[2].mean()
