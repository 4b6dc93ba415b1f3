"""Round 41, as a user: ``train mlp houses.csv --target price --class-weight balanced`` made
a run folder and then failed in it ("--class-weight weighs classes, and the target 'price'
is a column of numbers (a regression)"). It is refused when the command is read now: exit 2,
that one line, no run folder; the same table with a class target is still taken. The oracle:
the table as the job reads it (``read_table``: its classes, None for a regression)."""

from __future__ import annotations

import pytest

from skiff.cli import OK, USAGE, main
from skiff.kernels.train.tables import read_table


@pytest.fixture
def houses(tmp_path):
    path = tmp_path / "houses.csv"
    rows = ["area,kind,price"] + [f"{40 + 7 * i},{'flat' if i % 3 else 'house'},"
                                  f"{100 + 13 * i + (i % 4) * 0.5}" for i in range(12)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_class_weight_on_a_regression_table_is_refused_before_any_run_folder(
        houses, runs_dir, capsys):
    assert read_table(houses, "price").classes is None  # what the job would train: numbers
    assert main(["train", "mlp", str(houses), "--target", "price", "--class-weight",
                 "balanced", "--epochs", "1"]) == USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "--class-weight weighs classes" in err[0] and "'price'" in err[0] \
        and "a regression" in err[0], err
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_the_same_table_with_a_class_target_is_taken(houses, runs_dir, capsys):
    assert read_table(houses, "kind").classes == ["flat", "house"]
    assert main(["train", "mlp", str(houses), "--target", "kind", "--class-weight",
                 "balanced", "--dry-run"]) == OK
    assert "class-weight" not in capsys.readouterr().err
