"""Round 44 (h19): a DataFrame as the table file it would be (``table_frame.py``), so that
``%train mlp df --target outcome`` encodes it as ``train mlp data.csv --target outcome`` does:
a category column, booleans, dates (datetime64), gaps, a string target. As arrays it was
"has no targets for the mlp" or "encode text or categories first" (``--target`` unused).
The oracle is the same rows read from a CSV file; the wiring in kinds/train.py is h18's
(/work/round44/h19-requests.md), tested in tests/kinds/test_train_frame_r44h19.py."""

import numpy as np
import pandas as pd

from skiff.kernels.train.table_frame import frame_table_file, is_frame
from skiff.kernels.train.tables import read_table


def test_a_frame_reads_as_its_csv(tmp_path):
    rng = np.random.default_rng(5)
    n = 30
    days = rng.integers(0, 300, n)
    when = pd.Timestamp("2024-01-01") + pd.to_timedelta(days, unit="D")
    a = rng.normal(size=n).round(3)
    gap = np.where(rng.random(n) < 0.7, np.nan, rng.normal(size=n).round(2))
    colour = rng.choice(["red", "blue", "green"], n)
    flag = rng.random(n) < 0.5
    outcome = np.where(a > 0, "up", "down")
    csv = tmp_path / "rows.csv"
    csv.write_text("a,colour,gap,when,flag,outcome\n" + "".join(
        f"{a[i]},{colour[i]},{'' if np.isnan(gap[i]) else gap[i]},"
        f"{when[i]:%Y-%m-%d},{flag[i]},{outcome[i]}\n" for i in range(n)))
    frame = pd.DataFrame({"a": a, "colour": pd.Categorical(colour), "gap": gap, "when": when,
                          "flag": flag, "outcome": outcome})
    assert is_frame(frame) and not is_frame(frame.to_numpy())
    path = frame_table_file(frame, tmp_path / "frames")
    assert frame_table_file(frame, tmp_path / "frames") == path  # one file per content
    got, want = read_table(path, target="outcome"), read_table(csv, target="outcome")
    assert got.columns == want.columns and got.classes == want.classes == ["down", "up"]
    np.testing.assert_allclose(got.x, want.x, atol=1e-6)
    np.testing.assert_array_equal(got.y, want.y)
    named = frame.set_index(pd.Index([f"r{i}" for i in range(n)], name="rid"))
    assert read_table(frame_table_file(named, tmp_path / "frames"), target="outcome",
                      drop="rid").columns == want.columns  # a named index is a column
