"""A fine-tune's output folder given as ``rec_model``: the model inside it, its dictionary.

``%train ocr-rec ... -o rec`` writes ``rec/rec.onnx`` and ``rec/rec_dict.txt``; a user passing
``rec_model="rec"`` got onnxruntime's INVALID_PROTOBUF. The oracle is the same recognizer
read through its file (and its dictionary given explicitly)."""

import shutil

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from skiff.kernels.ocr import OcrPipeline  # noqa: E402
from skiff.kernels.ocr.models import get_model_set, model_file  # noqa: E402


def _tiny():
    try:
        tiny = get_model_set("ch-tiny")
        tiny.check_installed()
    except (ModuleNotFoundError, ValueError) as exc:
        pytest.skip(str(exc))
    return tiny.path("rec"), tiny.dict_path()


def _line():
    from PIL import Image, ImageDraw, ImageFont

    from skiff.kernels.ocr.synth import FontsMissing, fonts

    try:
        font = ImageFont.truetype(fonts()["latin"], 28)
    except (FontsMissing, OSError) as exc:
        pytest.skip(str(exc))
    im = Image.new("RGB", (420, 60), "white")
    ImageDraw.Draw(im).text((10, 12), "Parcel 7731 Room 4", font=font, fill="black")
    return np.asarray(im)[..., ::-1].copy()


def test_fine_tune_folder_reads_as_its_file(tmp_path):
    rec, dict_file = _tiny()  # a recognizer without 'character' metadata, and its dictionary
    out = tmp_path / "rec"
    out.mkdir()
    shutil.copy(rec, out / "rec.onnx")
    shutil.copy(dict_file, out / "rec_dict.txt")
    image = _line()
    # the base set "ch" has no dictionary file: the folder's rec_dict.txt must be the one read
    by_folder = OcrPipeline("ch", rec_model=str(out), device="cpu", threads=2)(image)
    by_file = OcrPipeline("ch", rec_model=str(rec), dict=str(dict_file), device="cpu",
                          threads=2)(image)
    assert by_file.text.strip()
    assert by_folder.text == by_file.text
    assert [round(line.score, 4) for line in by_folder.lines] == \
        [round(line.score, 4) for line in by_file.lines]


def test_run_folder_layout_and_one_onnx(tmp_path):
    run = tmp_path / "run"
    (run / "model").mkdir(parents=True)
    (run / "model" / "rec.onnx").write_bytes(b"x")
    assert model_file(run) == run / "model" / "rec.onnx"
    one = tmp_path / "one"
    one.mkdir()
    (one / "mine.onnx").write_bytes(b"x")
    assert model_file(one) == one / "mine.onnx"
    assert model_file(one / "mine.onnx") == one / "mine.onnx"


@pytest.mark.parametrize("files", [(), ("a.onnx", "b.onnx")])
def test_folder_without_one_model_says_so(tmp_path, files):
    for name in files:
        (tmp_path / name).write_bytes(b"x")
    with pytest.raises(IsADirectoryError, match="is a folder.*give the .onnx file inside it"):
        OcrPipeline("ch", rec_model=str(tmp_path), device="cpu")
