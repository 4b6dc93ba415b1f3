"""A PDF page's label, as the results and JSON lines give it (``doc.pdf#page=2``), read again
from a terminal or a cell: ``skiff.ocr("doc.pdf#page=2")`` read that page (notebook 05 says
"such a label can be passed back to read that page alone"), but ``python -m skiff ocr
'doc.pdf#page=2'`` and ``%ocr doc.pdf#page=2`` were "no such file, folder or pattern"
(round 42, h9). Oracle: the text each page was rendered with."""

from __future__ import annotations

import pytest
from PIL import Image

from skiff import cli
from skiff.kernels.ocr.entry import expand_inputs
from skiff.kernels.ocr.synth import char_accuracy, render_page

PAGES = ["The first page says this", "Second page holds 4096 words"]


@pytest.fixture
def pdf(runs_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    one, two = (Image.fromarray(render_page([t], size=26, page_width=700, seed=k))
                for k, t in enumerate(PAGES))
    one.save("doc.pdf", save_all=True, append_images=[two], resolution=200)  # 200 dpi: as drawn
    return tmp_path / "doc.pdf"


def test_a_page_label_is_an_input(pdf):
    assert expand_inputs(["doc.pdf#page=2"]) == ["doc.pdf#page=2"]
    assert expand_inputs([f"{pdf}#page=1"]) == [f"{pdf}#page=1"]
    with pytest.raises(FileNotFoundError, match="no such file"):
        expand_inputs(["other.pdf#page=2"])  # the file must be there


def test_the_terminal_reads_that_page_alone(pdf, capsys):
    assert cli.main(["ocr", "doc.pdf#page=2", "--out", "-"]) == 0
    text = capsys.readouterr().out.strip()
    assert char_accuracy(text, PAGES[1]) > 0.9, text
    assert "first" not in text.lower(), text  # page 1 was not read
