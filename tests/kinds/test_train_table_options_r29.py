"""``train mlp TABLE.csv --drop Name,Ticket`` from the terminal (the table reader's drop had
no flag: a user edited the file), and two checks now made before a job: --epochs with
--steps (the job failed after reading its data), --drop naming no column or the target.
Oracle: the table reader itself (read_table with the same drop) and the run's table.json."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.kernels.train.tables import read_table
from skiff.kinds.train import COMMAND, to_config


def _values(line: str) -> dict:
    return vars(COMMAND.parse(line))


@pytest.fixture
def passengers(tmp_path):
    rng = np.random.default_rng(4)
    rows = ["Name,Ticket,Age,Fare,Survived"]
    for i in range(60):
        age, fare = rng.uniform(1, 80), rng.uniform(5, 200)
        rows.append(f"Person {i},T-{1000 + i},{age:.1f},{fare:.2f},{int(fare > 60)}")
    path = tmp_path / "passengers.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_drop_is_checked_before_a_job(passengers, tmp_path):
    cfg = to_config(_values(f"mlp {passengers} --drop Name,ticket --steps 3"))
    assert cfg["drop"] == "Name,ticket"
    with pytest.raises(ValueError, match="--drop: .*Nmae.*did you mean 'Name'"):
        to_config(_values(f"mlp {passengers} --drop Nmae"))
    with pytest.raises(ValueError, match="leaves out the --target column"):
        to_config(_values(f"mlp {passengers} --drop Survived,Name --target survived"))
    with pytest.raises(ValueError, match="leaves no feature column"):
        to_config(_values(f"mlp {passengers} --drop 1,2,3,4"))
    with pytest.raises(ValueError, match="--drop leaves columns of a .csv or .tsv"):
        to_config(_values("mlp blobs --drop a"))


def test_epochs_with_steps_is_refused_before_a_job():
    with pytest.raises(ValueError, match="give --epochs or --steps, not both"):
        to_config(_values("mlp --epochs 2 --steps 10"))


def test_cli_drop_trains_on_the_other_columns(passengers, runs_dir):
    # the job the terminal starts, run in this process (round 41, h5: a subprocess cost an
    # interpreter and its imports for a 4-step run); its run folder's table.json as written
    from skiff.jobs import submit

    job, _ = submit("train", f"mlp {passengers} --drop Name,Ticket --steps 4")
    job.wait(120)
    assert job.status == "done", job.error
    saved = json.loads(next(job.run_dir.rglob("table.json")).read_text())
    want = read_table(passengers, drop="Name,Ticket")
    assert want.x.shape[1] == 2  # Age, Fare
    names = json.dumps(saved)
    assert "Age" in names and "Fare" in names and "Person" not in names and "T-10" not in names
