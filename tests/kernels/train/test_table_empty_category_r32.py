"""Round 32: a column of words with empty cells says so in the job's notes.

The empty cell is a category of its own (one 0/1 feature, as pandas' ``get_dummies(...,
dummy_na=True)`` and scikit-learn's OneHotEncoder treat a missing value), but the note said
"column 'region': words, one 0/1 feature per value ('', 'east', 'north', ...)", a blank
category nobody wrote. The oracle for the features: pandas' one-hot of the same column
(then standardised as the table standardises every feature)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from skiff.kernels.train.tables import read_table


def test_empty_cells_of_a_word_column_are_named_and_one_hot_as_pandas(tmp_path):
    regions = ["north", "", "east", "north", "west", "", "east", "north", "west", "east"] * 2
    rows = ["region,amount,label"] + [f"{r},{i * 0.5},{'ab'[i % 2]}"
                                      for i, r in enumerate(regions)]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    table = read_table(path)
    note = [n for n in table.notes if "region" in n][0]
    assert "''" not in note and "empty cells" in note
    dummies = pd.get_dummies(pd.Series([r or np.nan for r in regions]), dummy_na=True,
                             dtype=float)
    dummies.columns = ["" if pd.isna(c) else c for c in dummies.columns]
    got = {f: table.x[:, i] for i, f in enumerate(table.columns)}
    for value in ["", "east", "north", "west"]:
        name = f"region={value or '(empty)'}"
        col = dummies[value].to_numpy()
        want = (col - col.mean()) / col.std()
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6)
