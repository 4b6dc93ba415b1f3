"""Paths as users have them (spaces, unicode, mixed folders, ``**`` globs, empty and missing
ones) through ``%ocr`` and the job, and what comes back: text, lines, JSON, JSONL, overlays."""

from __future__ import annotations

import json

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from PIL import Image

from skiff.kernels.ocr import ocr
from skiff.kernels.ocr.entry import expand_inputs
from skiff.kernels.ocr.synth import render_page

from .helpers import TRUTH, acc, page

FLOOR = 0.97
CHINESE = ["今天天气很好", "价格 128 元"]


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


@pytest.fixture(scope="module")
def tree(tmp_path_factory, fonts):
    """``my scans/`` with a unicode-named page, a sub folder, a PDF, a text file and a
    broken PNG; an empty folder beside it."""
    root = tmp_path_factory.mktemp("user")
    scans = root / "my scans"
    (scans / "2024 年" / "deep").mkdir(parents=True)
    img = Image.fromarray(page())
    img.save(scans / "页面 1.png")
    img.save(scans / "2024 年" / "a.png")
    img.save(scans / "2024 年" / "deep" / "b.png")
    img.save(scans / "two pages.pdf", save_all=True, append_images=[img], resolution=100)
    (scans / "notes.txt").write_text("not an image")
    (scans / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    (root / "empty").mkdir()
    return root


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_folder_with_spaces_unicode_pdf_and_junk(shell, tree, tmp_path):
    """The folder's images and PDF pages are read, the .txt skipped, the broken PNG one error
    line; JSONL keeps the unicode names as written."""
    out = tmp_path / "out dir" / "résultats.jsonl"
    job = shell.run_line_magic("ocr", f'"{tree / "my scans"}" --device cpu --out "{out}" --wait')
    assert job.status == "done", job.error
    docs = _lines(out)
    names = [d["image"].split("my scans/")[1] for d in docs]
    assert names == ["broken.png", "two pages.pdf#page=1", "two pages.pdf#page=2", "页面 1.png"]
    assert "broken.png" in docs[0]["error"] and docs[0]["lines"] == []
    for d in docs[1:]:
        assert d["error"] is None and acc(d["text"], TRUTH) >= FLOOR, d
    assert job.result["images"] == 4 and job.result["errors"] == 1
    assert job.state.done == 4 and job.state.total == 4  # the progress bar counts pages
    assert "页面 1.png" in out.read_text(encoding="utf-8")  # not \\u escapes


def test_recursive_glob(shell, tree):
    pattern = f"{tree / 'my scans'}/**/*.png"
    found = expand_inputs([pattern])
    assert sorted(p.split("my scans/")[1] for p in found) == [
        "2024 年/a.png", "2024 年/deep/b.png", "broken.png", "页面 1.png"]
    job = shell.run_line_magic("ocr", f'"{tree / "my scans"}/**/[ab].png" --device cpu --wait')
    assert job.status == "done" and job.result["images"] == 2
    assert all(acc(r.text, TRUTH) >= FLOOR for r in job.value.results)


def test_empty_and_missing_give_one_line_errors(shell, tree):
    with pytest.raises(UsageError, match="no image or PDF files in folder") as err:
        shell.run_line_magic("ocr", f"{tree / 'empty'} --device cpu")
    assert str(tree / "empty") in str(err.value) and "\n" not in str(err.value)
    missing = tree / "my scans" / "nope 2.png"
    with pytest.raises(UsageError, match="no such file") as err:
        shell.run_line_magic("ocr", f'"{missing}" --device cpu')
    assert str(missing) in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(UsageError, match="no files match"):
        shell.run_line_magic("ocr", f'"{tree}/**/*.jpg" --device cpu')


def test_result_text_lines_json_and_overlay(tree, tmp_path, fonts):
    cjk = render_page(CHINESE, size=30, seed=2)
    r = ocr(cjk, device="cpu", threads=2)
    assert acc(r.text, "\n".join(CHINESE)) >= 0.9, r.text
    assert [line.text for line in r] == r.text.split("\n")  # iterating gives the lines
    doc = json.loads(json.dumps(r.to_json(), ensure_ascii=False))
    assert doc["text"] == r.text and len(doc["lines"]) == len(r.lines)
    html = r._repr_html_()  # the notebook view: the drawn image and a table with the text
    assert "<img src='data:image/png;base64," in html
    for line in r.lines:
        assert f"<td style='text-align:left'>{line.text}</td>" in html
    path = r.save_overlay(tmp_path / "overlay.png")
    drawn = np.asarray(Image.open(path).convert("RGB")).astype(int)
    assert drawn.shape == cjk.shape
    changed = np.abs(drawn - cjk).sum(2) > 0
    red = (drawn[..., 0] > 200) & (drawn[..., 1] < 80)
    assert changed.any() and red[changed].mean() > 0.9  # only the red boxes were added
    x0, y0 = np.min(r.lines[0].box, axis=0).astype(int)
    assert red[max(0, y0 - 2):y0 + 3, x0:x0 + 20].any()  # a box edge where the line starts


def test_overlay_of_a_pdf_page_after_pixels_are_dropped(tree):
    r = ocr(str(tree / "my scans" / "two pages.pdf"), device="cpu", threads=2)[1]
    r.pixels = None  # as a long folder run keeps them only for the first images
    img = r.draw()
    assert img.size == (r.size[1], r.size[0])


def test_variable_holding_paths_and_pdf_dpi(shell, tree):
    scans = tree / "my scans"
    shell.user_ns["todo"] = [str(scans / "页面 1.png"), scans / "two pages.pdf"]
    job = shell.run_line_magic("ocr", "todo --device cpu --pdf-dpi 100 --wait")
    assert job.status == "done", job.error
    results = job.value.results
    assert [r.image.split("my scans/")[1] for r in results] == [
        "页面 1.png", "two pages.pdf#page=1", "two pages.pdf#page=2"]
    assert all(acc(r.text, TRUTH) >= FLOOR for r in results), [r.text for r in results]
    png = Image.open(scans / "页面 1.png")
    assert results[1].size == pytest.approx((png.height, png.width), abs=2)  # saved at 100 dpi
    with pytest.raises(UsageError, match="--pdf-dpi must be between 36 and 600, got 5"):
        shell.run_line_magic("ocr", f'"{scans}" --pdf-dpi 5')


def test_library_call_on_a_missing_path_raises_naming_it(tree):
    missing = tree / "my scans" / "typo.png"
    with pytest.raises(FileNotFoundError, match="no such file") as err:
        ocr(str(missing), device="cpu", threads=2)
    assert str(missing) in str(err.value)
    results = ocr([str(missing), str(tree / "my scans" / "页面 1.png")], device="cpu",
                  threads=2)
    assert "no such file" in results[0].error and acc(results[1].text, TRUTH) >= FLOOR


def test_results_of_a_list_text_and_jsonl(tree, tmp_path):
    pdf = str(tree / "my scans" / "two pages.pdf")
    results = ocr(pdf, device="cpu", threads=2)
    assert acc(results.text, TRUTH + "\n\n" + TRUTH) >= FLOOR
    path = results.write_jsonl(tmp_path / "pages.jsonl")
    docs = [json.loads(line) for line in open(path, encoding="utf-8")]
    assert [d["image"] for d in docs] == [f"{pdf}#page=1", f"{pdf}#page=2"]
    assert [d["text"] for d in docs] == [r.text for r in results]
