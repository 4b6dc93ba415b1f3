"""Round 31 (coordinator, found by h11): ``python -m skiff ocr x.png --rec-model DIR`` with
the folder a fine-tune wrote (``-o DIR``) said "no such file" although the folder is there;
the kernel takes a folder since h15 (``models.model_file``). The oracle: the .onnx file inside
the folder, as the kernel resolves it."""

from __future__ import annotations

import pytest

from skiff.kernels.ocr.models import get_model_set, model_file
from skiff.kinds.ocr import to_config


def _page(tmp_path):
    import numpy as np
    from PIL import Image

    path = tmp_path / "x.png"
    Image.fromarray(np.full((40, 80), 255, np.uint8)).save(path)
    return str(path)


def test_a_fine_tunes_folder_is_its_rec_onnx(tmp_path):
    shipped = get_model_set("ch").path("rec")
    folder = tmp_path / "rec out"
    folder.mkdir()
    (folder / "rec.onnx").write_bytes(shipped.read_bytes()[:64])  # the name is what counts
    config = to_config({"inputs": [_page(tmp_path)], "rec_model": str(folder)})
    assert config["rec_model"] == str(model_file(folder, "rec")) == str(folder / "rec.onnx")


def test_a_folder_without_one_model_is_one_clear_line(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    with pytest.raises(ValueError, match=r"--rec-model: .*is a folder without an \.onnx file"):
        to_config({"inputs": [_page(tmp_path)], "rec_model": str(folder)})
