"""A table file trains the built-in mlp from a terminal (``python -m skiff train mlp data.csv``):
its reading against NumPy's own parsing, a bad cell named by line and column, and a trained
model that fits (the weights and the table's scaling in the run folder)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from skiff.kernels.train.tables import TableError, read_table


def _in_process(capsys, *argv) -> tuple[int, str, str]:
    """``python -m skiff ARGV`` in this process (round 41, h5: a predict or a refusal
    needs no interpreter of its own, ~2 CPU s each): (exit code, stdout, stderr)."""
    from skiff.cli import main

    capsys.readouterr()
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _train(capsys, monkeypatch, tmp_path, *argv) -> str:
    """``python -m skiff train ARGV --json`` in this process (round 41 h9: the job runs in a
    thread of this one; an interpreter of its own was ~2 CPU s of imports): its stdout."""
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs"))
    code, out, err = _in_process(capsys, "train", *argv, "--json")
    assert code == 0, err
    return out


def _points(n=400, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)) * [1.0, 10.0, 100.0] + [0.0, 5.0, -50.0]
    return x


def test_csv_with_named_classes_matches_numpys_reading(tmp_path):
    x = _points()
    species = np.where(x[:, 0] + x[:, 1] / 10 > 0.5, "virginica", "setosa")
    path = tmp_path / "flowers.csv"
    with open(path, "w") as fh:
        fh.write("petal,Species,width,height\n")
        for row, s in zip(x, species, strict=True):
            fh.write(f"{row[0]:.6f},{s},{row[1]:.6f},{row[2]:.6f}\n")
    table = read_table(path)
    ref = np.genfromtxt(path, delimiter=",", skip_header=1, usecols=(0, 2, 3))
    assert table.columns == ["petal", "width", "height"] and table.target == "Species"
    assert table.classes == ["setosa", "virginica"] and table.outputs == 2
    assert np.allclose(table.x, (ref - ref.mean(0)) / ref.std(0), atol=1e-5)
    assert np.array_equal(table.y, (species == "virginica").astype(np.int64))


def test_whole_numbers_are_classes_or_a_quantity_and_floats_a_regression(tmp_path):
    x = _points(200)
    few = tmp_path / "few.csv"  # no header: the last column is the target
    np.savetxt(few, np.c_[x, (x[:, 0] > 0).astype(int) * 3], delimiter=",", fmt="%.6f")
    assert read_table(few).classes == ["0", "3"]
    many = tmp_path / "prices.tsv"  # whole numbers, nearly all different: a quantity
    np.savetxt(many, np.c_[x, np.round(x[:, 2] * 1000)], delimiter="\t", fmt="%.6f")
    table = read_table(many)
    assert table.classes is None and table.y.shape == (200, 1)
    assert abs(float(table.y.mean())) < 1e-5 and abs(float(table.y.std()) - 1) < 1e-4
    data = tmp_path / "d.npz"
    np.savez(data, features=x, target=x[:, 0] * 2.0)
    assert read_table(data).classes is None
    np.savez(data, a=x, b=(x[:, 0] > 0).astype(np.int64))  # two arrays, any names
    assert read_table(data).classes == ["0", "1"]


def test_a_spreadsheets_semicolons_and_decimal_commas(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffa;b;label\r\n1,5;2;yes\r\n-0,5;4,25;no\r\n3;1;yes\r\n"
                     .encode("utf-8"))
    table = read_table(path)
    ref = np.array([[1.5, 2.0], [-0.5, 4.25], [3.0, 1.0]])
    assert table.columns == ["a", "b"] and table.classes == ["no", "yes"]
    assert np.allclose(table.x, (ref - ref.mean(0)) / ref.std(0), atol=1e-6)
    assert table.y.tolist() == [1, 0, 1]


@pytest.mark.parametrize("body, message", [
    ("a,b,label\n1,2,0\n3,x,1\n", r"line 3, column 'b': 'x' is not a number"),
    # round 44 (h19): an empty column is left out (as SimpleImputer drops it, said in a
    # note: test_table_blank_columns_r44h19.py); a table with no other feature is refused
    ("b,label\n,0\nNA,1\n", r"1 column with values left \(1 with every cell empty\)"),
    ("a,name,label\n1,ann,0\n3,bob,1\n2,cy,0\n", r"line 2, column 'name': 'ann' is not a "
     r"number, and the column holds 3 different values in 3 rows: free text or an identifier"),
    ("a,b,label\n1,2,0\n3,4\n", r"line 3: 2 cells where the header has 3"),
    ("a,b,label\n1,2,\n3,4,1\n", r"line 2, column 'label' \(the target\): an empty cell"),
    ("a,b,label\n1,2,0\n", r"1 row of data"),
    ("justone\n1\n2\n", r"one column"),
    # two columns of one name: predict put the first's values in both (by name)
    ("a, a ,y\n1,2,3\n2,3,5\n", r"bad.csv: columns 1 and 2 are both named 'a'; rename one"),
    # one class: before, the job failed on the cross-entropy's "(30, 1) output" shape error
    ("a,b,label\n" + "1,2,yes\n3,4,yes\n5,6,yes\n", r"bad.csv: the target 'label' is 'yes' "
     r"in all 3 rows: one class"),
    ("a,b,label\n" + "1,2,1\n3,4,1\n5,6,1\n7,8,1.0\n", r"'label' is '1' in all 4 rows"),
])
def test_a_bad_table_is_refused_where_it_is_bad(tmp_path, body, message):
    path = tmp_path / "bad.csv"
    path.write_text(body)
    with pytest.raises(TableError, match=message):
        read_table(path)
    np.savez(tmp_path / "bad.npz", x=np.ones(4), y=np.ones(4))
    with pytest.raises(TableError, match="2-D array of numbers"):
        read_table(tmp_path / "bad.npz")


def test_the_cli_trains_mlp_on_a_table_and_the_model_fits(tmp_path, capsys, monkeypatch):
    x = _points(600, seed=1)
    y = 3.0 * x[:, 0] - 0.2 * x[:, 1] + 0.01 * x[:, 2]
    path = tmp_path / "quantity.csv"
    np.savetxt(path, np.c_[x, y], delimiter=",", header="a,b,c,target", comments="",
               fmt="%.6f")
    out = _train(capsys, monkeypatch, tmp_path, "mlp", path, "--epochs", "30", "--device",
                 "cpu")
    run_dir = json.loads(out)["job"]["run_dir"]
    scaling = json.loads(open(os.path.join(run_dir, "table.json")).read())
    weights = np.load(os.path.join(run_dir, "model.npz"))
    from skiff.kernels.train.models.mlp import mlp

    model = mlp(in_features=3, out_features=1)
    model.load_state_dict({k: weights[k] for k in weights.files})
    xs = (x - np.array(scaling["x_mean"])) / np.array(scaling["x_std"])
    pred = model(xs.astype(np.float32)).numpy()[:, 0] * scaling["y_std"] + scaling["y_mean"]
    r2 = 1 - ((pred - y) ** 2).mean() / y.var()
    assert r2 > 0.95, r2
    code, _, err = _in_process(capsys, "train", "cnn", path)  # refused before any job
    assert code != 0 and "trains on 'shapes'" in err


@pytest.mark.parametrize("name,start", [("", 0), ("Unnamed: 0", 0), ("id", 1)])
def test_a_row_index_column_is_left_out(tmp_path, name, start):
    """pandas' ``df.to_csv()`` writes its index as an unnamed first column; it was a feature
    (the model learnt the row order)."""
    rows = [f"{name},x1,x2,target"] + [f"{i + start},{0.5 * i},{(7 * i) % 11},{i + 1}"
                                       for i in range(40)]
    path = tmp_path / "export.csv"
    path.write_text("\n".join(rows) + "\n")
    table = read_table(path)
    assert table.columns == ["x1", "x2"] and table.x.shape == (40, 2)
    assert table.notes and "numbers the rows" in table.notes[0]
    assert table.to_json()["notes"] == table.notes


def test_a_first_column_that_is_data_stays(tmp_path):
    # named like an index but not counting the rows, or counting them under a real name
    for header, first in (("id", lambda i: 3 * i), ("x0", lambda i: i)):
        rows = [f"{header},x1,target"] + [f"{first(i)},{(7 * i) % 11},{i % 2}"
                                          for i in range(40)]
        path = tmp_path / "data.csv"
        path.write_text("\n".join(rows) + "\n")
        table = read_table(path)
        assert table.columns == [header, "x1"]
        assert not any("numbers the rows" in n for n in table.notes), table.notes


def _houses(tmp_path, n=200, seed=3):
    """price depends on rooms and area; the last column is a code, not the target."""
    rng = np.random.default_rng(seed)
    rooms, area = rng.integers(1, 6, n), rng.uniform(30, 150, n)
    price = 20 * rooms + 1.5 * area + rng.normal(0, 1, n)
    code = rng.integers(1, 4, n)
    path = tmp_path / "houses.csv"
    rows = ["price,rooms,area,city_code"]
    rows += [f"{p:.3f},{r},{a:.3f},{c}" for p, r, a, c in zip(price, rooms, area, code)]
    path.write_text("\n".join(rows) + "\n")
    return path, price


def test_target_picks_the_column_by_name_or_number(tmp_path):
    """Without --target the last column (a code) was the target: a user could not train on
    price in the first column (round 22)."""
    path, price = _houses(tmp_path)
    assert read_table(path).target == "city_code"
    for target in ("price", "PRICE", "1"):
        table = read_table(path, target)
        assert table.target == "price" and table.columns == ["rooms", "area", "city_code"]
        assert table.classes is None  # a quantity: regression
        np.testing.assert_allclose(table.y.reshape(-1) * table.y_std + table.y_mean, price,
                                   rtol=1e-5)
    with pytest.raises(TableError, match="no column 'prise' \\(did you mean 'price'\\?\\)"):
        read_table(path, "prise")


@pytest.mark.parametrize("line,needle", [
    ("mlp {path} --target prise", "--target: houses.csv: no column 'prise' .did you mean"),
    # a number out of range says the range (it was "no column '7'" as if a name)
    ("mlp {path} --target 7", "houses.csv: no column 7: the columns are numbered 1 to 4 "
                              r"\(price, rooms, area, city_code\)"),
    ("gpt-mini --target price", "--target picks the column to predict of a .csv or .tsv"),
])
def test_target_mistakes_are_said_before_any_job(tmp_path, line, needle):
    from skiff.kinds.train import COMMAND, to_config

    path, _ = _houses(tmp_path)
    with pytest.raises(ValueError, match=needle):
        to_config(vars(COMMAND.parse(line.format(path=path))))


def test_training_on_a_chosen_target_column_fits_it(tmp_path, capsys, monkeypatch):
    path, price = _houses(tmp_path)
    out = _train(capsys, monkeypatch, tmp_path, "mlp", path, "--target", "price", "--epochs",
                 "30", "--lr", "0.01")
    run_dir = json.loads(out)["job"]["run_dir"]
    assert json.load(open(os.path.join(run_dir, "table.json")))["target"] == "price"
    code, out, err = _in_process(capsys, "predict", run_dir, path, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["score"]["r2"] > 0.9, doc["score"]


def _flats(tmp_path, n=240, seed=0):
    """Flats with a city (words), a year that is sometimes missing, and a price that depends
    on both: what a real export looks like."""
    rng = np.random.default_rng(seed)
    rooms, area = rng.integers(1, 6, n), rng.uniform(30, 150, n)
    city = np.array(["Lyon", "Nice", "Paris"])[rng.integers(0, 3, n)]
    built = rng.integers(1950, 2020, n)
    price = 20 * rooms + 1.5 * area + np.where(city == "Paris", 60, 0) + 0.5 * (built - 1950)
    rows = ["rooms,area,city,built,price"]
    for k in range(n):
        year = ["", "NA", "?"][k % 3] if k % 11 == 0 else str(built[k])
        rows.append(f"{rooms[k]},{area[k]:.2f},{city[k]},{year},{price[k]:.2f}")
    path = tmp_path / "flats.csv"
    path.write_text("\n".join(rows) + "\n")
    return path, city, built, price


def test_words_are_one_hot_categories_and_missing_numbers_take_the_mean(tmp_path):
    path, city, built, _ = _flats(tmp_path)
    table = read_table(path)
    assert table.columns == ["rooms", "area", "city=Lyon", "city=Nice", "city=Paris", "built"]
    assert table.target == "price" and table.classes is None
    x = table.x * table.x_std + table.x_mean  # back to the file's units
    np.testing.assert_allclose(x[:, 2:5], city[:, None] == ["Lyon", "Nice", "Paris"],
                               atol=1e-6)
    gaps = np.arange(len(city)) % 11 == 0
    fill = built[~gaps].mean()
    np.testing.assert_allclose(x[gaps, 5], fill, rtol=1e-6)
    np.testing.assert_allclose(x[~gaps, 5], built[~gaps], rtol=1e-6)
    assert any("'city': words, one 0/1 feature per value" in n for n in table.notes)
    assert any(f"'built': {gaps.sum()} empty cells filled with its mean" in n
               for n in table.notes)
    spec = {e["name"]: e for e in table.to_json()["encoding"]}
    assert spec["city"]["values"] == ["Lyon", "Nice", "Paris"]
    assert spec["built"]["fill"] == pytest.approx(fill)


def test_a_table_of_words_and_gaps_trains_and_predicts_new_rows_the_same_way(
        tmp_path, capsys, monkeypatch):
    path, _, _, _ = _flats(tmp_path)
    out = _train(capsys, monkeypatch, tmp_path, "mlp", path, "--epochs", "60", "--lr", "0.01")
    run_dir = json.loads(out)["job"]["run_dir"]
    new = tmp_path / "new.csv"  # columns in another order, a city never seen, a gap
    new.write_text("city,built,area,rooms,price\nParis,1980,100,3,285\nLyon,,60,2,150.7\n"
                   "Marseille,2000,80,4,225\n")
    code, out, err = _in_process(capsys, "predict", run_dir, new, "--json")
    assert code == 0, err
    doc = json.loads(out)
    paris, lyon, _ = doc["predictions"]
    assert abs(paris - 285) < 15 and abs(lyon - 150.7) < 15, doc["predictions"]
    assert any("'Marseille'" in n and "none of its features set" in n for n in doc["notes"])
    assert any("'built': 1 empty cell filled with the training mean" in n
               for n in doc["notes"])


def test_a_column_of_words_taken_for_the_target_over_the_last_is_said(tmp_path):
    """``size,kind,price`` (price last, kind the one column of words): the rule takes kind
    for the target; before, nothing said so, and a user meaning price got a classifier."""
    path = tmp_path / "t.csv"
    path.write_text("size,kind,price\n" + "".join(
        f"{s},{'flat' if s % 2 else 'house'},{10 * s}\n" for s in range(10, 40)))
    table = read_table(path)
    assert table.target == "kind" and table.classes == ["flat", "house"]
    assert table.notes[0] == ("target: 'kind', the one column of words (classes), not the "
                              "last column 'price'; --target picks another")
    assert not any("target" in n for n in read_table(path, "price").notes)
    assert not any("target" in n for n in read_table(path, "kind").notes)
