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
    (tmp_path / "notes.txt").write_text("crops from the lab meter, March\n")
    with pytest.raises(ValueError, match="has no labels file"):  # not 'image<TAB>text'
        find_labels_file(tmp_path)


def test_a_folders_own_labels_file_name(tmp_path):
    """A dataset's own name (``train_list.txt``) is found when it is the folder's one .txt
    of 'image<TAB>text' lines; two such files are named, not guessed between."""
    (tmp_path / "notes.txt").write_text("read me\n")
    (tmp_path / "train_list.txt").write_text("\nimgs/a.png\t12.5\n")
    assert find_labels_file(tmp_path) == tmp_path / "train_list.txt"
    (tmp_path / "val_list.txt").write_text("imgs/b.png\t7\n")
    with pytest.raises(ValueError, match="several labels files.*train_list.txt.*val_list.txt"):
        find_labels_file(tmp_path)


def test_dictionary_from_the_shipped_models():
    import onnx

    from skiff.kernels.ocr.models import MODEL_SETS

    for name, classes in (("ch", 18710), ("ch-v4", 6625)):
        proto = onnx.load(str(MODEL_SETS[name].path("rec")), load_external_data=False)
        d = Dictionary.from_model(proto, classes)
        assert d.num_classes == classes and d.space
        assert d.decode(d.encode("Total 12.5")) == "Total 12.5"


def _page(path):
    """A white page with a black bar at x 10-50, y 5-15 and a grey one at x 60-100, y 30-40."""
    from PIL import Image

    a = np.full((60, 120, 3), 255, np.uint8)
    a[5:15, 10:50] = 0
    a[30:40, 60:100] = 128
    Image.fromarray(a).save(path)


def test_detection_labels_give_one_row_per_box_cut_from_the_page(tmp_path):
    """PPOCRLabel's Label.txt: 'folder/page.png<TAB>[{transcription, points}]' inside the
    folder (the path is found from the folder above); '###' boxes are left out, a polygon
    becomes its enclosing rectangle, points given from the text's own top-left cut an
    upside-down line the right way up, and a box list that cannot be read is one error."""
    from skiff.kernels.ocr_train.finetune import _load

    pages = tmp_path / "pages"
    pages.mkdir()
    _page(pages / "p.png")
    boxes = [
        {"transcription": "12", "points": [[10, 5], [50, 5], [50, 15], [10, 15]]},
        {"transcription": "###", "points": [[0, 0], [5, 0], [5, 5], [0, 5]]},
        # upside down: the text's top-left is the bar's bottom-right corner
        {"transcription": "3.4", "points": [[100, 40], [60, 40], [60, 30], [100, 30]]},
        {"transcription": "56", "points": [[10, 5], [30, 5], [50, 5], [50, 15], [10, 15]]},
    ]
    import json

    (pages / "Label.txt").write_text(
        f"pages/p.png\t{json.dumps(boxes)}\n"
        "pages/p.png\t[{\"transcription\": \"7\", \"points\": [[1, 2]]}]\n"
        "pages/p.png\t[{\"transcription\": \"###\", \"points\": [[0, 0], [1, 0], [1, 1], "
        "[0, 1]]}]\n"
        "pages/p.png\t[{1.5}]\n", encoding="utf-8")  # text that only looks like JSON
    d = _digits()
    d.add(list("[{}]"))
    labels = read_labels(pages, d)  # the folder: Label.txt found in it
    assert [(r.line, r.text) for r in labels.rows] == [(1, "12"), (1, "3.4"), (1, "56"),
                                                       (4, "[{1.5}]")]
    assert all(r.image == str(pages / "p.png") for r in labels.rows)
    assert len(labels.errors) == 2
    assert "line 2: a detection label" in labels.errors[0] and "4 points" in labels.errors[0]
    assert "line 3: a detection label with no box" in labels.errors[1]
    crops, texts, errors = _load(labels.rows[:3])
    assert errors == [] and sorted(texts) == ["12", "3.4", "56"]
    got = dict(zip(texts, crops, strict=True))
    assert got["12"].shape[:2] == (10, 40) and got["12"].max() == 0
    assert got["56"].shape[:2] == (10, 40) and got["56"].max() == 0
    assert got["3.4"].shape[:2] == (10, 40) and abs(int(np.median(got["3.4"])) - 128) <= 2


def test_relative_paths_are_looked_up_above_the_labels_folder(tmp_path, monkeypatch):
    (tmp_path / "data" / "rec").mkdir(parents=True)
    (tmp_path / "imgs").mkdir()
    _png(tmp_path / "data" / "a.png")
    _png(tmp_path / "imgs" / "b.png")
    (tmp_path / "data" / "rec" / "rec_gt.txt").write_text(
        "a.png\t1\nimgs/b.png\t2\nnowhere.png\t3\nb.png\t4\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path / "imgs")  # 'b.png' alone is found from the working folder
    labels = read_labels(tmp_path / "data" / "rec", _digits())
    assert [r.image for r in labels.rows] == [str(tmp_path / "data" / "a.png"),
                                              str(tmp_path / "imgs" / "b.png"),
                                              str(tmp_path / "imgs" / "b.png")]
    assert len(labels.errors) == 1 and "line 3: image 'nowhere.png' not found" in \
        labels.errors[0]


def test_a_crop_too_narrow_for_its_text_is_one_clear_error(tmp_path):
    """A 20 x 20 crop labelled with 12 characters cannot be aligned (7 frames at the
    recognizer's height): one line naming the row, the good rows kept."""
    from PIL import Image

    from skiff.kernels.ocr_train.finetune import _load

    Image.fromarray(np.full((20, 20, 3), 255, np.uint8)).save(tmp_path / "small.png")
    _png(tmp_path / "ok.png")  # 20 x 60: 19 frames
    (tmp_path / "labels.txt").write_text("small.png\t123456789012\nok.png\t12.5\n"
                                         "ok.png\t11111111111\n", encoding="utf-8")
    labels = read_labels(tmp_path, _digits())
    crops, texts, errors = _load(labels.rows)
    assert texts == ["12.5"] and len(crops) == 1
    assert len(errors) == 2 and all("\n" not in e for e in errors)
    assert errors[0].startswith("line 1: 12 characters on an image 20 x 20 px")
    assert "gives 7 frames, the text needs 12" in errors[0]
    assert errors[1].startswith("line 3:") and "needs 21" in errors[1]  # repeats need blanks


def test_crops_load_as_ocr_reads_them(tmp_path):
    """A 16-bit grey crop (a scanner's or a microscope's export) is scaled by its depth,
    not clipped at 255 (Pillow's own conversion made it nearly all white), and a crop with
    a transparent background lies on paper, as ``%ocr`` reads the same files."""
    from PIL import Image

    from skiff.kernels.ocr.images import iter_pages
    from skiff.kernels.ocr_train.data import load_crop

    ramp = np.linspace(0, 65535, 32 * 100).reshape(32, 100).astype(np.uint16)
    Image.fromarray(ramp).save(tmp_path / "deep.png")
    crop = load_crop(str(tmp_path / "deep.png"))
    assert crop.shape == (32, 100, 3) and crop.dtype == np.uint8
    np.testing.assert_allclose(crop[..., 0], ramp / 257.0, atol=1.0)
    read, _ = next(iter_pages(str(tmp_path / "deep.png")))
    np.testing.assert_array_equal(crop, read[..., ::-1])

    ink = np.zeros((20, 60, 4), np.uint8)
    ink[5:15, 10:50, 3] = 255  # black text on a transparent ground (RGB zero everywhere)
    Image.fromarray(ink, "RGBA").save(tmp_path / "clear.png")
    crop = load_crop(str(tmp_path / "clear.png"))
    assert crop[0, 0].tolist() == [255, 255, 255] and crop[10, 30].tolist() == [0, 0, 0]


def test_gbk_labels_and_windows_paths_are_read(tmp_path):
    """A label file saved as GBK by a Chinese Windows (UTF-8 fails on it) is read as
    GB18030 and says so; ``imgs\\a.png`` finds ``imgs/a.png``; a file in another single-byte
    code page is one clear error, not misread text."""
    (tmp_path / "imgs").mkdir()
    _png(tmp_path / "imgs" / "a.png")
    _png(tmp_path / "imgs" / "b.png")
    (tmp_path / "gbk.txt").write_bytes("imgs\\a.png\t中文 12\nimgs/b.png\t你好\n".encode("gbk"))
    chars = Dictionary(list("中文你好12"), space=True)
    labels = read_labels(tmp_path / "gbk.txt", chars)
    assert labels.encoding == "gb18030", labels
    assert [(r.line, r.text) for r in labels.rows] == [(1, "中文 12"), (2, "你好")], labels.errors
    assert labels.rows[0].image.endswith("a.png")
    # a folder whose one labels file has another name (train_list.txt), saved as GBK
    (tmp_path / "train_list.txt").write_bytes((tmp_path / "gbk.txt").read_bytes())
    (tmp_path / "gbk.txt").unlink()
    assert [r.text for r in read_labels(tmp_path, chars).rows] == ["中文 12", "你好"]

    (tmp_path / "latin.txt").write_bytes("imgs/a.png\tcaf\xe9\n".encode("latin-1"))
    with pytest.raises(ValueError, match="UTF-8"):
        read_labels(tmp_path / "latin.txt", Dictionary(list("cafe"), space=True))


def test_a_folder_named_as_an_image_is_said_so_and_each_folder_is_named_once(tmp_path,
                                                                             monkeypatch):
    _png(tmp_path / "a.png")
    (tmp_path / "crops").mkdir()
    (tmp_path / "labels.txt").write_text("a.png\t1\ncrops\t2\nnone.png\t3\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the working folder is the labels file's folder
    labels = read_labels(tmp_path / "labels.txt", _digits())
    assert [r.line for r in labels.rows] == [1]
    folder_error, missing_error = labels.errors
    assert folder_error == "labels.txt line 2: 'crops' is a folder, not an image (a row " \
                           "names one image file)"
    assert missing_error.startswith("labels.txt line 3: image 'none.png' not found")
    assert missing_error.count(str(tmp_path)) == 1, missing_error


def test_an_unreadable_image_is_named_with_its_labels_file(tmp_path):
    from skiff.kernels.ocr_train.finetune import _load

    _png(tmp_path / "a.png")
    (tmp_path / "bad.png").write_bytes(b"not an image")
    (tmp_path / "labels.txt").write_text("a.png\t1\nbad.png\t2\n", encoding="utf-8")
    labels = read_labels(tmp_path / "labels.txt", _digits())
    crops, texts, errors = _load(labels.rows, "labels.txt")
    assert texts == ["1"] and len(errors) == 1
    assert errors[0].startswith("labels.txt line 2: image ") and "cannot be read" in errors[0]
