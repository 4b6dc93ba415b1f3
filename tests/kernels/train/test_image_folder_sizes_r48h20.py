"""A user's image folder (round 48 h20): nested class folders, mixed grey/RGBA/16-bit PNGs, a
corrupt file, hidden and system files, a class of one image and very unequal classes. The
images read, the corrupt one named, and the classes' sizes said, counted against the
folder itself (os.walk)."""

import os

import numpy as np
import pytest
from PIL import Image

from skiff.kernels.train.image_folder import IMAGE_SUFFIXES, ImageFolder


def _save(path, array, mode=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array, mode).save(path)


def test_a_users_folder_is_read_and_its_class_sizes_said(tmp_path):
    rng = np.random.default_rng(0)
    root = tmp_path / "photos"
    for i in range(23):  # nested: photos/cat/indoor/*.png are cats
        _save(root / "cat" / ("indoor" if i % 2 else "outdoor") / f"{i}.png",
              rng.integers(0, 255, (12, 14, 3), dtype=np.uint8))
    _save(root / "dog" / "rgba.png", rng.integers(0, 255, (12, 12, 4), dtype=np.uint8), "RGBA")
    _save(root / "dog" / "deep.png", rng.integers(0, 65535, (12, 12)).astype(np.uint16))
    _save(root / "dog" / "grey.png", rng.integers(0, 255, (12, 12), dtype=np.uint8), "L")
    (root / "dog" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    for hidden in (root / ".DS_Store", root / "dog" / ".DS_Store", root / "dog" / "._grey.png",
                   root / "cat" / "Thumbs.db"):
        hidden.write_bytes(b"\0\0\0\1Bud1")
    _save(root / "bird" / "only.png", rng.integers(0, 255, (12, 12, 3), dtype=np.uint8))

    folder = ImageFolder(root, size=8)
    # the reference: the folder's image files, hidden ones and the broken one aside
    counts = {}
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel = os.path.relpath(top, root)
        if rel != ".":
            cls = rel.split(os.sep)[0]
            counts[cls] = counts.get(cls, 0) + sum(
                f.lower().endswith(IMAGE_SUFFIXES) and not f.startswith(".")
                and f != "broken.jpg" for f in files)
    assert counts == {"bird": 1, "cat": 23, "dog": 3}
    assert folder.classes == sorted(counts) and folder.channels == 3
    got = np.bincount(folder.labels, minlength=3)
    assert dict(zip(folder.classes, got.tolist())) == counts
    said = " | ".join(folder.notes)
    assert "no image left out (the first: dog/broken.jpg)" in said, said
    total, rare, common = sum(counts.values()), min(counts.values()), max(counts.values())
    assert (f"classes imbalanced: 'bird' has {rare} of {total} images, 'cat' {common}; "
            f"always answering 'cat' is {common / total:.0%} accurate") in said, said
    assert "--class-weight balanced" in said
    assert "class 'bird': one image" in said
    # a held-out split keeps the single image for training (as the note says)
    train, val = folder.held_out(0.25)
    assert 0 not in folder.labels[val.index].tolist()


def test_no_size_note_for_classes_of_like_sizes(tmp_path):
    rng = np.random.default_rng(1)
    for cls, n in (("a", 10), ("b", 2)):  # a fifth: not under a tenth
        for i in range(n):
            _save(tmp_path / cls / f"{i}.png", rng.integers(0, 255, (8, 8), dtype=np.uint8), "L")
    folder = ImageFolder(tmp_path, size=8)
    assert not any("imbalanced" in n or "one image" in n for n in folder.notes), folder.notes


def test_an_image_over_pils_size_guard_is_named_and_the_rest_kept(tmp_path, monkeypatch):
    # a 200-megapixel scan stands for one over PIL's decompression-bomb guard: a 60x60 image
    # under a guard lowered to 1000 pixels (PIL refuses past twice it), the others 30x30
    import PIL.Image

    rng = np.random.default_rng(2)
    for cls in ("a", "b"):
        for i in range(2):
            _save(tmp_path / cls / f"{i}.png", rng.integers(0, 255, (30, 30), dtype=np.uint8),
                  "L")
    _save(tmp_path / "b" / "scan.png", rng.integers(0, 255, (60, 60), dtype=np.uint8), "L")
    monkeypatch.setattr(PIL.Image, "MAX_IMAGE_PIXELS", 1000)
    with pytest.raises(PIL.Image.DecompressionBombError):  # the reference: PIL refuses it
        Image.open(tmp_path / "b" / "scan.png")
    folder = ImageFolder(tmp_path, size=8)
    assert len(folder) == 4 and np.bincount(folder.labels).tolist() == [2, 2]
    assert any(n.startswith("1 image too large to read left out (the first: b/scan.png")
               for n in folder.notes), folder.notes
