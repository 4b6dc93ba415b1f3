"""Label files: PaddleOCR 'path<TAB>text' lines, a folder with a labels file, the
dictionary grown with --add-chars; each bad row is one clear line, the good rows kept."""

from __future__ import annotations

import numpy as np
import pytest

from skiff.kernels.ocr_train.labels import Dictionary, find_labels_file, read_labels


def _png(path):
    from PIL import Image

    Image.fromarray(np.full((20, 60, 3), 255, np.uint8)).save(path)


@pytest.fixture
def folder(tmp_path):
    for name in ("a.png", "b.png", "c.png", "d.png"):
        _png(tmp_path / name)
    (tmp_path / "labels.txt").write_text(
        "a.png\t12.5\n"
        "missing.png\t77\n"          # line 2: no such image
        "b.png\t   \n"               # line 3: empty text
        "c.png\t3Ω4\n"               # line 4: a character the dictionary lacks
        "\n# a comment\n"
        "d.png 99\n"                 # line 7: no tab
        f"{tmp_path / 'd.png'}\t8 9\n",  # line 8: an absolute path, a space in the text
        encoding="utf-8")
    return tmp_path


def _digits():
    return Dictionary(list("0123456789."), space=True)


def test_bad_rows_each_one_line_good_rows_kept(folder):
    labels = read_labels(folder / "labels.txt", _digits())
    assert [(r.line, r.text) for r in labels.rows] == [(1, "12.5"), (8, "8 9")]
    assert len(labels.errors) == 4
    e = "\n".join(labels.errors)
    assert "line 2: image 'missing.png' not found" in e
    assert "line 3: empty text for image 'b.png'" in e
    assert "line 4: 'Ω' not in the model's dictionary" in e and "--add-chars" in e
    assert "line 7: no tab" in e
    assert all("\n" not in x for x in labels.errors)


def test_add_chars_grows_the_dictionary_before_the_space(folder):
    d = _digits()
    space = d.encode(" ")[0]
    labels = read_labels(folder, d, add_chars=True)  # the folder: labels.txt found in it
    assert labels.added == ["Ω"]
    assert [r.line for r in labels.rows] == [1, 4, 8]
    assert d.num_classes == 14 and d.encode("Ω") == [12] and d.encode(" ") == [space + 1]
    assert d.alphabet[12] == "Ω" and d.alphabet[-1] == " "
    assert d.decode(d.encode("3Ω4 5")) == "3Ω4 5"


def test_folder_without_labels_and_missing_path(tmp_path):
    with pytest.raises(ValueError, match="has no labels file"):
        find_labels_file(tmp_path)
    with pytest.raises(ValueError, match="no such file or folder"):
        find_labels_file(tmp_path / "nope.txt")


def test_dictionary_from_the_shipped_models():
    import onnx

    from skiff.kernels.ocr.models import MODEL_SETS

    for name, classes in (("ch", 18710), ("ch-v4", 6625)):
        proto = onnx.load(str(MODEL_SETS[name].path("rec")), load_external_data=False)
        d = Dictionary.from_model(proto, classes)
        assert d.num_classes == classes and d.space
        assert d.decode(d.encode("Total 12.5")) == "Total 12.5"
