"""A table's words and gaps, read once per distinct cell (round 29: 200,000 rows with a
date, a 40-city column and gaps took 13 s to read against pandas' 0.23 s, now about half):
the features equal pandas' ``get_dummies`` and ``fillna(mean)`` of the same file, and new
rows (an unseen city, a gap) are encoded as training encoded them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from skiff.kernels.train.tables import TableError, apply_encoding, read_table


def test_categories_and_gaps_equal_pandas_reading(tmp_path):
    rng = np.random.default_rng(7)
    n = 3000
    df = pd.DataFrame({"size": rng.normal(50, 10, n).round(2),
                       "city": rng.choice([f"town {k}" for k in range(30)], n),
                       "colour": rng.choice(["red", "green", "blue"], n),
                       "label": rng.choice(["a", "b"], n)})
    df.loc[rng.random(n) < 0.1, "size"] = np.nan
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    table = read_table(path)
    x = table.x.astype(np.float64) * table.x_std + table.x_mean
    oracle = pd.read_csv(path)
    want_size = oracle["size"].fillna(oracle["size"].mean()).to_numpy()
    dummies = pd.get_dummies(oracle[["city", "colour"]], prefix_sep="=").astype(float)
    got = dict(zip(table.columns, x.T))
    np.testing.assert_allclose(got["size"], want_size, rtol=1e-6, atol=1e-4)
    for name in dummies.columns:
        np.testing.assert_allclose(got[name], dummies[name].to_numpy(), atol=1e-5)
    assert len(table.columns) == 1 + dummies.shape[1]
    new = {"size": ["", "61.5"], "city": ["town 3", "Atlantis"], "colour": ["blue", "red"]}
    feats, notes = apply_encoding("new.csv", table.encoding, lambda c: new[c], [2, 3])
    spec = {e["name"]: e for e in table.encoding}
    assert feats[0, 0] == spec["size"]["fill"] and feats[1, 0] == 61.5
    cities = spec["city"]["values"]
    assert feats[0, 1:1 + len(cities)].tolist() == [float(c == "town 3") for c in cities]
    assert feats[1, 1:1 + len(cities)].sum() == 0  # a city training never saw: none set
    assert any("'Atlantis'" in n for n in notes)


def _prices(tmp_path, bad: str):
    rng = np.random.default_rng(8)
    x = rng.normal(size=(200, 2))
    price = x @ [3.0, -2.0] + 100 + rng.normal(size=200)
    rows = [f"{a:.4f},{b:.4f},{p:.3f}" for (a, b), p in zip(x, price)]
    good = tmp_path / "good.csv"
    good.write_text("a,b,price\n" + "\n".join(rows) + "\n")
    rows[4] = rows[4].rsplit(",", 1)[0] + "," + bad
    path = tmp_path / "prices.csv"
    path.write_text("a,b,price\n" + "\n".join(rows) + "\n")
    return good, path


@pytest.mark.parametrize("bad, needle", [
    ("NA", r"line 6, column 'price' \(the target\): an empty cell \('NA'\)"),
    ("?", r"line 6, column 'price' \(the target\): an empty cell \('\?'\)"),
    ("n.a.", r"line 6, column 'price' \(the target\): 'n.a.' is not a number"),
])
def test_a_missing_or_mistyped_price_is_refused_not_made_classes(tmp_path, bad, needle):
    # an "NA" among 200 prices made the target 198 classes, without a word
    good, path = _prices(tmp_path, bad)
    table = read_table(good)
    want = np.loadtxt(good, delimiter=",", skiprows=1)[:, 2]
    assert table.classes is None  # the clean file: a regression, as numpy reads it
    np.testing.assert_allclose(table.y[:, 0] * table.y_std + table.y_mean, want, rtol=1e-5)
    with pytest.raises(TableError, match=needle):
        read_table(path)


def test_columns_left_out_by_name_a_passenger_list(tmp_path):
    # a Titanic-like file: names and tickets are free text, refused as features; drop=
    # leaves them out (and the passenger number), the rest read as pandas reads it
    rng = np.random.default_rng(9)
    n = 120
    df = pd.DataFrame({"PassengerId": np.arange(1, n + 1),
                       "Survived": rng.integers(0, 2, n),
                       "Pclass": rng.integers(1, 4, n),
                       "Name": [f"Person {k}, Mr. X{k}" for k in range(n)],
                       "Sex": rng.choice(["male", "female"], n),
                       "Age": rng.normal(30, 12, n).round(1),
                       "Ticket": [f"A/{k * 7}" for k in range(n)],
                       "Embarked": rng.choice(["S", "C", "Q"], n)})
    df.loc[rng.random(n) < 0.2, "Age"] = np.nan
    path = tmp_path / "passengers.csv"
    df.to_csv(path, index=False)
    with pytest.raises(TableError, match=r"column 'Name'.*free text or an identifier"):
        read_table(path, target="Survived")
    table = read_table(path, target="survived", drop="PassengerId, name,7")
    assert table.target == "Survived" and table.classes == ["0", "1"]
    assert any("left out columns 'PassengerId', 'Name', 'Ticket'" in n for n in table.notes)
    oracle = pd.read_csv(path).drop(columns=["PassengerId", "Name", "Ticket", "Survived"])
    oracle["Age"] = oracle["Age"].fillna(oracle["Age"].mean())
    oracle = pd.get_dummies(oracle, columns=["Sex", "Embarked"], prefix_sep="=").astype(float)
    x = table.x.astype(np.float64) * table.x_std + table.x_mean
    assert sorted(table.columns) == sorted(oracle.columns)
    for j, name in enumerate(table.columns):
        np.testing.assert_allclose(x[:, j], oracle[name].to_numpy(), atol=1e-4)
    np.testing.assert_array_equal(table.y, df["Survived"].to_numpy())
    with pytest.raises(TableError, match="'Survived' is the target and cannot be left out"):
        read_table(path, target="Survived", drop=["Name", "Ticket", "Survived"])


def test_the_last_column_taken_for_the_target_is_said(tmp_path):
    # "price,area,rooms": nothing is named label/target/y/class, and the rooms were learnt
    # without a word; the note names the column and --target
    rng = np.random.default_rng(10)
    body = [f"{100 + rng.normal():.2f},{rng.uniform(30, 90):.1f},{rng.integers(1, 5)}"
            for _ in range(40)]
    path = tmp_path / "houses.csv"
    path.write_text("price,area,rooms\n" + "\n".join(body) + "\n")
    table = read_table(path)
    want = np.loadtxt(path, delimiter=",", skiprows=1)[:, 2]
    assert table.target == "rooms"
    assert [int(table.classes[k]) for k in table.y] == want.astype(int).tolist()
    assert any(n.startswith("target: 'rooms', the last column") and "--target" in n
               for n in table.notes)
    assert not any(n.startswith("target:") for n in read_table(path, target="price").notes)


def test_imbalanced_classes_are_said_with_the_majoritys_accuracy(tmp_path):
    rng = np.random.default_rng(11)
    y = np.where(rng.random(300) < 0.05, "fraud", "ok")
    body = [f"{rng.normal():.3f},{v}" for v in y]
    path = tmp_path / "tx.csv"
    path.write_text("amount,label\n" + "\n".join(body) + "\n")
    table = read_table(path)
    counts = {c: int((y == c).sum()) for c in ("fraud", "ok")}  # numpy's count: the oracle
    note = next(n for n in table.notes if n.startswith("classes imbalanced"))
    assert f"'fraud' has {counts['fraud']} of 300 rows" in note
    assert f"always answering 'ok' is {counts['ok'] / 300:.0%} accurate" in note
    balanced = tmp_path / "even.csv"
    balanced.write_text("amount,label\n" + "\n".join(f"{k},{'ab'[k % 2]}" for k in range(40)))
    assert not any(n.startswith("classes imbalanced") for n in read_table(balanced).notes)


def test_a_spreadsheets_formatted_amounts_are_numbers(tmp_path):
    # "$1,200.50" and "45 %" as a spreadsheet exports them: a column of them was refused as
    # free text, and a price target of them became one class per price
    rng = np.random.default_rng(12)
    area = rng.uniform(30, 200, 60).round(1)
    share = rng.uniform(0, 100, 60).round(1)
    price = (3000 * area + 50 * share + rng.normal(0, 500, 60)).round(2)
    rows = [f'{a},{s} %,"${p:,.2f}"' for a, s, p in zip(area, share, price)]
    rows[3] = rows[3].replace('"$', '"-$')  # a refund
    path = tmp_path / "sales.csv"
    path.write_text("area,share,price\n" + "\n".join(rows) + "\n")
    table = read_table(path)
    assert table.classes is None and table.columns == ["area", "share"]
    want = price.copy()
    want[3] = -want[3]
    np.testing.assert_allclose(table.y[:, 0] * table.y_std + table.y_mean, want, rtol=1e-5)
    x = table.x.astype(np.float64) * table.x_std + table.x_mean
    np.testing.assert_allclose(x, np.c_[area, share], atol=1e-4)
    odd = tmp_path / "odd.csv"  # a decimal comma is no thousands group: still a word
    cells = [str(k / 2) for k in range(6)]
    cells[2] = '"1,5"'
    odd.write_text("a,b,label\n" + "\n".join(f"{k},{c},{k % 2}" for k, c in enumerate(cells))
                   + "\n")
    with pytest.raises(TableError, match=r"'1,5' is not a number"):
        read_table(odd)
