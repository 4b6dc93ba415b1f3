"""Round 37: a path with spaces given unquoted (a terminal's ``train mlp my data.csv``; a
notebook's ``%ocr {f}`` with ``f = 'scans dir'``, which IPython puts in bare) said
"unrecognized arguments: data.csv" or "no such file, folder or pattern: 'scans'", nothing
of the path that is there. Both now name it and the quoting that keeps it whole; the oracle
is the same line quoted, which reads that path."""

from __future__ import annotations

import pytest
from PIL import Image

from skiff.grammar.common import GrammarError
from skiff.jobs.launch import dry_run


@pytest.fixture
def spaced(tmp_path, monkeypatch, runs_dir):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my data é.csv").write_text("a,b,price\n1,2,3\n4,5,6\n7,8,9\n")
    (tmp_path / "scans dir").mkdir()
    Image.new("RGB", (40, 20), "white").save(tmp_path / "scans dir" / "p.png")
    return tmp_path


def test_train_names_the_table_split_at_its_space(spaced):
    with pytest.raises(GrammarError) as info:
        dry_run("train", "mlp my data é.csv --epochs 1", front="cli")
    assert "unrecognized arguments: data é.csv; 'my data é.csv' is there: a path with " \
           "spaces is one word quoted" in str(info.value)
    doc = dry_run("train", "mlp 'my data é.csv' --epochs 1", front="cli")
    assert doc["config"]["data"] == str(spaced / "my data é.csv")


def test_ocr_names_the_folder_split_at_its_space(spaced):
    with pytest.raises(FileNotFoundError) as info:
        dry_run("ocr", "scans dir", front="cli")
    assert str(info.value).startswith("no such file, folder or pattern: 'scans'; 'scans dir' "
                                      "is there")
    doc = dry_run("ocr", "'scans dir'", front="cli")
    assert doc["config"]["inputs"] == ["scans dir"]
