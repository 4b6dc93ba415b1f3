"""Round 44 (h8): ``python -m skiff jobs ls --json`` with a run folder whose config.json is
damaged bytes (a NUL at its start, as a crash on some file systems leaves; Latin-1 text; a
write cut to nothing). The listing named it "config.json is not JSON ('utf-16-be' codec
can't decode byte 0x7b in position 10: truncated data)": ``json.loads`` of bytes guesses
UTF-16 from a NUL. Each is now one clear line (the file read as the UTF-8 skiff writes), and
every other job is listed. Oracle: Python's own ``json.loads`` of the text and
``bytes.decode("utf-8")``'s error position."""

from __future__ import annotations

import json
import shutil

import pytest

from skiff.cli import main
from skiff.jobs import launch

CASES = {
    "20000101-000001-demo-nul0": b"\x00\x01garbage{{",
    "20000101-000002-demo-lat1": '{"id": "caf\u00e9"}'.encode("latin-1"),
    "20000101-000003-demo-empt": b"",
}


def test_jobs_ls_json_names_each_damaged_config_in_one_clear_line(runs_dir, capsys):
    good = launch("demo", {"steps": 1, "sleep": 0}).wait(10)
    for name, raw in CASES.items():
        shutil.copytree(good.run_dir, runs_dir / name)
        (runs_dir / name / "config.json").write_bytes(raw)
    capsys.readouterr()
    assert main(["jobs", "ls", "--json"]) == 0
    docs = {d["id"]: d for d in json.loads(capsys.readouterr().out)}
    assert docs[good.id]["status"] == "done"
    errors = {name: docs[name]["error"] for name in CASES}
    assert all(docs[name]["status"] == "damaged" for name in CASES)
    assert all("codec" not in e and "\n" not in e for e in errors.values()), errors
    with pytest.raises(ValueError) as nul:
        json.loads(CASES["20000101-000001-demo-nul0"].decode("utf-8"))
    assert str(nul.value) in errors["20000101-000001-demo-nul0"]
    with pytest.raises(UnicodeDecodeError) as latin:
        CASES["20000101-000002-demo-lat1"].decode("utf-8")
    assert f"not UTF-8 text: byte 0xe9 at offset {latin.value.start}" in \
        errors["20000101-000002-demo-lat1"]
    assert errors["20000101-000003-demo-empt"].endswith("config.json is empty")
