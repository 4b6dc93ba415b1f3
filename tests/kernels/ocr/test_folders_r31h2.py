"""A user's folders (round 31): ``DIR/**/*``, which the job's own hint suggests for
subfolders, reads a tree as a folder is read (its images and PDFs; the other files named
as skipped, not failed), while a pattern that names a suffix keeps whatever it matches."""

from __future__ import annotations

import pytest
from PIL import Image

from skiff.kernels.ocr.entry import _names_suffix, expand_inputs, skipped_line


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    for rel in ("p 1.png", "a/q.jpg", "a/b/r.webp"):
        Image.new("RGB", (20, 10), "white").save(tmp_path / rel)
    Image.new("RGB", (20, 10), "white").save(tmp_path / "a" / "doc.pdf")
    (tmp_path / "notes.txt").write_text("not an image")
    (tmp_path / "a" / "b" / "data.dat").write_bytes(b"\x00\x01")
    return tmp_path


def test_recursive_star_reads_the_tree_as_folders_are_read(tree):
    skipped: list[str] = []
    found = expand_inputs([f"{tree}/**/*"], skipped)
    assert sorted(p[len(str(tree)) + 1:] for p in found) == [
        "a/b/r.webp", "a/doc.pdf", "a/q.jpg", "p 1.png"]
    assert sorted(p[len(str(tree)) + 1:] for p in skipped) == ["a/b/data.dat", "notes.txt"]
    assert skipped_line(skipped).startswith("skipped 2 files that are not an image or PDF")
    # the folder itself: the same images at its top, the rest named
    top: list[str] = []
    assert expand_inputs([str(tree)], top) == [str(tree / "p 1.png")]
    assert sorted(top) == [str(tree / "a") + "/", str(tree / "notes.txt")]


def test_a_pattern_naming_a_suffix_keeps_its_matches(tree):
    skipped: list[str] = []
    assert expand_inputs([f"{tree}/**/*.dat"], skipped) == [str(tree / "a" / "b" / "data.dat")]
    assert expand_inputs([f"{tree}/*.txt"], skipped) == [str(tree / "notes.txt")]
    assert skipped == []


def test_a_pattern_of_no_images(tmp_path):
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(FileNotFoundError, match="no image or PDF files match"):
        expand_inputs([f"{tmp_path}/*"])
    with pytest.raises(FileNotFoundError, match="no files match"):
        expand_inputs([f"{tmp_path}/*.png"])


@pytest.mark.parametrize("pattern, names", [
    ("*", False), ("**/*", False), ("scans/page*", False), ("d/*.*", False), ("x.tar.*", False),
    ("*.png", True), ("**/scan?.dat", True), ("*.[jp][pn]g", True), ("a.b/*", False)])
def test_names_suffix(pattern, names):
    assert _names_suffix(pattern) is names
