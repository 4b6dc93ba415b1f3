"""Round 35 (h8): h3's kernel writes ``--out FILE.tsv`` (Tesseract's TSV, pytesseract's
``image_to_data``) and the front refused it ("skiff writes FILE.txt ..., not .tsv"), as it
refused ``.text`` (the kernel's text too). The front now takes every suffix the kernel's
entry writes (``entry.WRITTEN``: checked here, so the two lists cannot drift apart again).
The oracle of the file: its word rows, joined a line at a time, are the lines of the text
the same job read (its results.jsonl)."""

from __future__ import annotations

import csv
import json

import pytest

from skiff.cli import main
from skiff.jobs.launch import dry_run


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from PIL import Image

    from skiff.kernels.ocr.synth import FontsMissing, render_sample

    try:
        sample = render_sample("clean", 1, seed=6)
    except FontsMissing as exc:
        pytest.skip(str(exc))
    path = tmp_path_factory.mktemp("tsv") / "page.png"
    Image.fromarray(sample.image).save(path)
    return path


def test_every_suffix_the_kernel_writes_is_taken(runs_dir, page, tmp_path):
    from skiff.kernels.ocr.entry import WRITTEN

    for suffix in WRITTEN:
        config = dry_run("ocr", f"{page} --out {tmp_path / ('x' + suffix)}")["config"]
        assert str(config["out"]).endswith(suffix)


def test_tsv_words_are_the_lines_read(runs_dir, page, tmp_path, capsys):
    out = tmp_path / "made" / "p.tsv"
    assert main(["ocr", str(page), "--device", "cpu", "--out", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "TSV" not in doc and str(out) == doc["result"]["text_out"]
    with open(out, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    lines: dict = {}
    for r in rows:
        if r["level"] == "5":
            lines.setdefault((r["block_num"], r["par_num"], r["line_num"]), []).append(r["text"])
    run = doc["job"]["run_dir"]
    with open(f"{run}/results.jsonl", encoding="utf-8") as fh:
        text = json.loads(fh.readline())["text"]
    read = [line.replace(" ", "") for line in text.splitlines() if line.strip()]
    assert ["".join(words).replace(" ", "") for words in lines.values()] == read
