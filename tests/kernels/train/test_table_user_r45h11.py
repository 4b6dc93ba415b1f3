"""Round 45 (h11): tables, image folders and predictions as a scikit-learn / Keras user.

- a 200k-row CSV of numbers took 6.6 CPU s to read (pandas + get_dummies: 0.8 s): each
  distinct cell went through ``_number``; a column of plain finite numbers is now parsed by
  numpy at once (oracle: pandas' means and deviations of the same file);
- ``--target a,b`` (two target columns, multi-label as scikit-learn's MLPClassifier takes a
  2-D y) was "no column 'a,b'"; it is now said that one target column is predicted, and how;
- ``predict`` wrote the predicted class's probability only; scikit-learn's ``predict_proba``
  gives each class's: the CSV now has a ``P(<class>)`` column per class, which a user joins
  back to the file by its id column (oracle: pandas' merge on the id);
- an image folder's ``val_split`` held out the shuffled folder's last images: a class of 3
  images of 63 had none there for 12 of 20 seeds (never scored on it) and 2 of 3 for one
  (the model trained on one image). It is stratified now, as
  ``train_test_split(stratify=y)``: each class's share.
"""

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from skiff.kernels.train import models, tables
from skiff.kernels.train.image_folder import ImageFolder
from skiff.kernels.train.image_predict import predict_images
from skiff.kernels.train.table_predict import predict_table
from skiff.kernels.train.tables import TableError, read_table


def test_a_column_of_plain_numbers_is_read_at_once(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    n = 3000
    frame = pd.DataFrame({"income": np.exp(rng.normal(10, 1.5, n)).round(2),
                          "age": rng.uniform(18, 80, n).round(1),
                          "score": rng.normal(size=n).round(4),
                          "label": rng.choice(["yes", "no"], n)})
    path = tmp_path / "big.csv"
    frame.to_csv(path, index=False)
    calls = []
    number = tables._number
    monkeypatch.setattr(tables, "_number", lambda c: calls.append(c) or number(c))
    table = read_table(path, fit_rows=np.arange(2400))
    # the header, the first row and the target's two distinct cells: not one call per cell
    assert len(calls) < 50, len(calls)
    fitted = pd.read_csv(path).iloc[:2400, :3]
    np.testing.assert_allclose(table.x_mean, fitted.mean().values, rtol=1e-12)
    np.testing.assert_allclose(table.x_std, fitted.std(ddof=0).values, rtol=1e-10)
    assert table.classes == ["no", "yes"]
    # a gap still takes the cell-by-cell read, filled with the mean of the others
    path.write_text("a,b,label\n1.5,2,x\n,4,y\n2.5,6,x\n")
    assert read_table(path).x_mean[0] == pytest.approx(2.0)


def test_two_target_columns_are_said(tmp_path):
    path = tmp_path / "multi.csv"
    path.write_text("income,age,a,B\n1,2,0,1\n3,4,1,0\n5,6,1,1\n")
    with pytest.raises(TableError, match=r"'a,b' names 2 columns; a model here predicts one "
                                         r"target column .*--target a, then --target B"):
        tables.pick_target(path, tables.table_columns(path), "a,b")
    with pytest.raises(TableError, match="no column 'a,c'"):  # a wrong name stays so
        tables.pick_target(path, tables.table_columns(path), "a,c")


def test_predict_writes_each_class_probability_joinable_by_id(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 2))
    labels = np.where(x[:, 0] + x[:, 1] > 0, "pos", np.where(x[:, 0] > 0.3, "mid", "neg"))
    train = tmp_path / "train.csv"
    train.write_text("id,x1,x2,label\n" + "".join(
        f"r{k:02d},{u:.3f},{v:.3f},{c}\n" for k, ((u, v), c) in enumerate(zip(x, labels))))
    table = read_table(train, drop="id")
    run = tmp_path / "run"
    run.mkdir()
    (run / "table.json").write_text(json.dumps(table.to_json()))
    models.get("mlp", in_features=2, out_features=3).save(str(run / "model.npz"))
    new = tmp_path / "new.csv"  # another order, no target: the rows come back by their id
    new.write_text("x2,id,x1\n" + "".join(f"{v:.3f},r{k:02d},{u:.3f}\n"
                                          for k, (u, v) in reversed(list(enumerate(x)))))
    got = predict_table(run, new)
    buf = io.StringIO()
    got.write_csv(buf)
    out = pd.read_csv(io.StringIO(buf.getvalue()))
    assert list(out.columns[-3:]) == ["P(mid)", "P(neg)", "P(pos)"]
    p = out[["P(mid)", "P(neg)", "P(pos)"]].values
    np.testing.assert_allclose(p.sum(1), 1.0, atol=2e-4)
    np.testing.assert_allclose(p.max(1), out["probability"], atol=1e-4)
    assert list(np.array(["mid", "neg", "pos"])[p.argmax(1)]) == list(out["label predicted"])
    joined = pd.read_csv(train).merge(out[["id", "P(pos)"]], on="id")
    assert len(joined) == 60 and joined["id"].is_unique
    assert got.to_json()["classes"] == ["mid", "neg", "pos"]
    assert np.shape(got.to_json()["class_probabilities"]) == (60, 3)


def _folder(root, counts, size=8):
    rng = np.random.default_rng(2)
    for c, (name, n) in enumerate(counts):
        (root / name).mkdir(parents=True)
        for i in range(n):
            a = (rng.random((size, size)) * 60 + 60 * c).astype(np.uint8)
            Image.fromarray(a, "L").save(root / name / f"{i}.png")
    return root


def test_an_image_folders_val_split_is_stratified(tmp_path):
    root = _folder(tmp_path / "photos", (("cat", 30), ("dog", 30), ("fox", 3)))
    for seed in range(6):  # the shuffled orders put 0 or 1 fox in the last 13 (HEAD)
        data = ImageFolder(root, size=8, seed=seed)
        train, val = data.held_out(0.2)
        # scikit-learn's train_test_split(test_size=13, stratify=y): 30*13/63 = 6.19 twice,
        # 3*13/63 = 0.62: floors 6, 6, 0 and the one left to the largest remainder (fox)
        assert np.bincount(data.labels[val.index], minlength=3).tolist() == [6, 6, 1]
        assert np.bincount(data.labels[train.index], minlength=3).tolist() == [24, 24, 2]
        assert sorted([*train.index, *val.index]) == list(range(63))


def test_image_predict_writes_each_class_probability(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    models.get("cnn", in_channels=1, num_classes=2, image_size=8).save(str(run / "model.npz"))
    (run / "images.json").write_text(json.dumps({"classes": ["a", "b"], "size": 8,
                                                 "channels": 1, "mean": [0.5], "std": [0.2]}))
    root = _folder(tmp_path / "new", (("a", 2), ("b", 2)))
    got = predict_images(run, root)
    buf = io.StringIO()
    got.write_csv(buf)
    rows = list(csv.reader(io.StringIO(buf.getvalue())))
    assert rows[0] == ["file", "class predicted", "probability", "class", "P(a)", "P(b)"]
    for row in rows[1:]:
        pa, pb = float(row[4]), float(row[5])
        assert abs(pa + pb - 1) < 2e-4 and abs(max(pa, pb) - float(row[2])) < 1e-4
        assert row[1] == ("a" if pa >= pb else "b")


def test_a_json_lines_table_trains_as_its_csv(tmp_path):
    # round 45 h11 said how (pandas, then a CSV); round 47 h9 reads the .jsonl itself
    path = tmp_path / "reg.jsonl"
    rows = [{"income": 1000.5 * (k + 1), "age": 20 + k, "price": 3.0 * k} for k in range(6)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert tables.other_table_hint(path) == "" and "%train mlp df" in \
        tables.other_table_hint(tmp_path / "reg.json")  # a JSON array: still told how
    pd.read_json(path, lines=True).to_csv(tmp_path / "reg.csv", index=False)
    table = read_table(path, target="price")
    as_csv = read_table(tmp_path / "reg.csv", target="price")
    assert table.columns == as_csv.columns == ["income", "age"]
    assert table.y_mean == pytest.approx(7.5)
    np.testing.assert_array_equal(table.x, as_csv.x)
