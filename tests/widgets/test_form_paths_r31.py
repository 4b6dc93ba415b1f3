"""Panels with paths that hold spaces (round 31): a path pasted into the OCR tab's inputs,
an upload into a runs root with a space, a missing data file with spaces named next to its
field. The oracle is the file system and ``shlex`` (the line the panel shows is split back
into the exact paths)."""

from __future__ import annotations

import datetime
import io
import shlex

import pytest
from PIL import Image

pytest.importorskip("ipywidgets")


def _png(path):
    Image.new("RGB", (40, 20), "white").save(path)
    return path


def test_a_pasted_path_with_spaces_is_one_input(tmp_path, monkeypatch):
    from skiff.widgets.panels import ocr_form

    monkeypatch.chdir(tmp_path)
    one = _png(tmp_path / "scan 1 é.png")
    form = ocr_form()
    form.set(inputs=str(one))  # pasted as is, no quotes
    assert form.errors == {}, form.errors
    assert form.values["inputs"] == [str(one)]
    assert shlex.split(form.magic)[1:] == [str(one)]
    # two files that exist stay two, and a missing word is still named
    a, b = _png(tmp_path / "a.png"), _png(tmp_path / "b.png")
    form.set(inputs=f"{a} {b}")
    assert form.values["inputs"] == [str(a), str(b)]
    form.set(inputs=f"{a} nothere.png")
    assert "nothere.png" in form.errors["inputs"]


def test_uploads_into_a_runs_root_with_spaces_fill_a_line_that_splits_back(tmp_path,
                                                                          monkeypatch):
    from skiff.widgets.panels import ocr_form

    root = tmp_path / "my runs"
    monkeypatch.setenv("SKIFF_RUNS", str(root))
    buf = io.BytesIO()
    Image.new("RGB", (40, 20), "white").save(buf, format="PNG")
    form = ocr_form()
    files = tuple({"name": n, "type": "image/png", "size": len(buf.getvalue()),
                   "content": memoryview(buf.getvalue()),
                   "last_modified": datetime.datetime(2026, 12, 5, tzinfo=datetime.timezone.utc)}
                  for n in ("page 1.png", "page 2.png"))
    form.upload.value = files
    assert form.errors == {}, form.errors
    paths = form.values["inputs"]
    assert len(paths) == 2 and all(str(root) in p for p in paths)
    assert [open(p, "rb").read() for p in paths] == [buf.getvalue()] * 2
    assert shlex.split(form.magic)[1:] == paths


def test_a_missing_data_file_with_spaces_is_named_at_its_field(tmp_path, monkeypatch):
    from skiff.widgets.panels import train_form

    monkeypatch.chdir(tmp_path)
    form = train_form()
    form.set(model="mlp", data="my data é.csv", steps="3")
    assert "no such data file 'my data é.csv'" in form.errors.get("data", ""), \
        (form.errors, form.status.value)
    assert form.launch_button.disabled
    (tmp_path / "my data é.csv").write_text(
        "a,b,label\n" + "".join(f"{i},{i % 3},{i % 2}\n" for i in range(40)))
    assert form.validate() and form.errors == {}
    assert shlex.split(form.magic)[1:3] == ["mlp", "my data é.csv"]
