"""Round 31: a table with identifier or free-text columns names every one of them at once and
the option that leaves them out (a customer id, then an e-mail: the first error said "drop
the column", naming neither ``--drop`` nor the second column, which failed the next run).
The oracle for "too many values to be categories" is the table itself (distinct cells
counted here)."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.train.tables import TableError, read_table


def _write(path, with_email=True, n=40):
    rng = np.random.default_rng(0)
    head = ["customer_id"] + (["e-mail"] if with_email else []) + ["plan", "tenure", "churned"]
    lines = [",".join(head)]
    for i in range(n):
        cells = [f"C{i:04d}"] + ([f"u{i}@x.org"] if with_email else []) + [
            rng.choice(["basic", "pro"]), str(int(rng.integers(0, 60))),
            rng.choice(["yes", "no"])]
        lines.append(",".join(cells))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_identifier_column_named_with_the_drop_option(tmp_path):
    path = _write(tmp_path / "churn.csv")
    with pytest.raises(TableError) as info:
        read_table(path)
    msg = str(info.value)
    assert "column 'customer_id'" in msg and "40 different values in 40 rows" in msg
    assert "so is 'e-mail'" in msg
    assert msg.endswith("leave them out: --drop customer_id,e-mail (read_table(..., drop=...))")
    table = read_table(path, drop="customer_id,e-mail")  # what it says to do works
    assert table.target == "churned" and table.x.shape == (40, 3)


def test_one_identifier_column_and_a_name_with_a_space(tmp_path):
    path = _write(tmp_path / "churn.csv", with_email=False)
    path.write_text(path.read_text().replace("customer_id", "customer id", 1))
    with pytest.raises(TableError, match=r"free text or an identifier.*leave it out: "
                                         r"--drop 'customer id' \(read_table"):
        read_table(path)
    assert read_table(path, drop=["customer id"]).x.shape == (40, 3)
