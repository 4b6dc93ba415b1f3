"""Round 31 (h14): ``python -m skiff ocr IMG --out -`` put the text on stdout but its summary
(on stderr) still said "text: .../results.jsonl". The oracle is the command itself: the
rendered page's lines are what stdout holds, the summary says the text went there, and the
JSON lines it names are in the run folder with the same text."""

from __future__ import annotations

import json

import pytest

from skiff.cli import main

LINES = ["skiff reads text", "one line more"]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from PIL import Image

    from skiff.kernels.ocr.synth import FontsMissing, render_page

    path = tmp_path_factory.mktemp("page") / "page.png"
    try:
        Image.fromarray(render_page(LINES, seed=1)).save(path)
    except FontsMissing as exc:
        pytest.skip(str(exc))
    return path


def test_out_dash_summary_says_stdout(page, runs_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["ocr", str(page), "--out", "-"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == LINES          # the rendered truth, on stdout alone
    text = next(x.strip() for x in err.splitlines() if x.strip().startswith("text:"))
    assert text.startswith("text: to stdout") and "results.jsonl" in text
    jsonl = text.split("JSON lines: ")[1].rstrip(")")
    records = [json.loads(x) for x in open(jsonl, encoding="utf-8")]
    assert records[0]["text"].splitlines() == LINES
    # without --out -, the summary names the JSON lines as before
    assert main(["ocr", str(page)]) == 0
    out, _ = capsys.readouterr()
    assert any(x.strip().startswith("text: /") and x.strip().endswith("results.jsonl")
               for x in out.splitlines())
