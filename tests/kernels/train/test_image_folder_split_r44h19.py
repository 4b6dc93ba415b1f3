"""Round 44 (h19): ``data/train/cat/1.jpg, data/val/cat/2.jpg`` (Keras' and torchvision's usual
layout) given as ``data`` trained the classes "train" and "val" without a word: every image's
class was its split. Now refused, naming the folder to train on; a class folder with
subfolders of its own (``cat/indoor/1.jpg``) is still a class."""

import pytest
from PIL import Image

from skiff.kernels.train.image_folder import ImageFolder, ImageFolderError


def _images(folder, n=2):
    folder.mkdir(parents=True)
    for k in range(n):
        Image.new("RGB", (8 + k, 10), (40 * k, 90, 200)).save(folder / f"{k}.png")


def test_a_folder_of_splits_is_refused(tmp_path):
    for split in ("train", "val"):
        for cls in ("cat", "dog"):
            _images(tmp_path / "data" / split / cls)
    with pytest.raises(ImageFolderError, match=r"train, val are a split of the data.*"
                                               r"\(cat, dog\).*train on data/train"):
        ImageFolder(tmp_path / "data", size=8)
    assert ImageFolder(tmp_path / "data" / "train", size=8).classes == ["cat", "dog"]


def test_nested_class_folders_are_classes(tmp_path):
    _images(tmp_path / "pets" / "cat" / "indoor")
    _images(tmp_path / "pets" / "cat" / "outdoor")
    _images(tmp_path / "pets" / "dog" / "indoor")
    folder = ImageFolder(tmp_path / "pets", size=8)
    assert folder.classes == ["cat", "dog"] and len(folder) == 6
