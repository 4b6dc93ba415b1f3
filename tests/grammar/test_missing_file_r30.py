"""A data or matrix file that is not there: the message says in which folder a relative
name was looked for, and the closest name there, which then runs (round 30: "no such data
file 'claims.cvs'" named neither, and a notebook's folder is not always the one its user
has in mind)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.io
import scipy.sparse

from skiff.jobs.launch import dry_run


@pytest.fixture
def folder(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    (work / "claims.csv").write_text("a,b,label\n1,2,x\n3,4,y\n5,6,x\n")
    scipy.io.mmwrite(str(work / "A.mtx"), scipy.sparse.eye(4, format="coo"))
    from PIL import Image

    Image.new("RGB", (40, 20), "white").save(work / "scan1.png")
    monkeypatch.chdir(work)
    return work


@pytest.mark.parametrize("kind, line, typo", [
    ("train", "mlp {} --steps 1", "claims.cvs"),
    ("train", "mlp {} --steps 1", "claim.csv"),
    ("solve", "{}", "A.mxt"),
    ("ocr", "{}", "scan1.pgn"),
])
def test_the_closest_name_is_given_and_runs(folder, kind, line, typo):
    with pytest.raises(FileNotFoundError) as got:
        dry_run(kind, line.format(typo))
    message = str(got.value)
    assert f" in {folder.resolve()}" in message or f" in {folder}" in message, message
    guess = re.search(r"did you mean '([^']+)'", message)[1]
    assert (folder / guess).is_file()
    assert dry_run(kind, line.format(guess))["dry_run"] is True


def test_a_missing_folder_on_the_way_is_named(folder):
    with pytest.raises(FileNotFoundError, match=r"there is no folder .*[/\\]data$"):
        dry_run("train", "mlp data/claims.csv")
    assert not np.any([p.name == "data" for p in folder.iterdir()])
