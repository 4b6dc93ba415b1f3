"""The processed-twin reading shared by the denoised copies (reading._read_denoised) and the
glare photos (glare.read_glare): skiff/kernels/ocr/twins.py (round 42, h1)."""

import numpy as np

from skiff.kernels.ocr import glare, reading, twins
from skiff.kernels.ocr.item import Item


def test_lines_by_image_groups_line_indices_in_order():
    owners = [(0, 0), (1, 0), (0, 1), (-1, 2), (1, 1), (0, 2)]
    assert twins.lines_by_image(owners) == {0: [0, 2, 5], 1: [1, 4], -1: [3]}
    assert twins.lines_by_image([]) == {}


def test_charge_time_adds_only_the_named_stages():
    it = Item(0, "a", timings={"det": 1.0, "load": 2.0})
    twin = Item(-1, "a", timings={"det": 0.5, "rec": 0.25, "denoise": 3.0, "glare": 9})
    twins.charge_time(it, twin)
    assert it.timings == {"det": 1.5, "load": 2.0, "rec": 0.25}
    twins.charge_time(it, twin, (*twins.STAGES, "denoise"))
    assert it.timings == {"det": 2.0, "load": 2.0, "rec": 0.5, "denoise": 3.0}


def test_both_second_readings_use_the_one_helper():
    """Neither keeps its own copy of the twin reading (round 41 had two)."""
    import inspect

    for fn in (reading.LineReading._read_denoised, glare.read_glare):
        src = inspect.getsource(fn)
        assert "read_twins(" in src and "._read(" not in src and ".detect(" not in src


def test_read_twins_detects_and_reads_a_twin_as_drawn():
    from PIL import Image, ImageDraw, ImageFont

    from skiff.kernels.ocr import OcrPipeline

    im = Image.new("RGB", (260, 60), "white")
    face = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 26)
    ImageDraw.Draw(im).text((10, 12), "Loading Bay 7", fill="black", font=face)
    bgr = np.ascontiguousarray(np.asarray(im)[..., ::-1])
    pipe = OcrPipeline("ch", device="cpu", threads=1)
    twin = Item(-1, "t", bgr)
    crops, owners, texts, flipped, lines = twins.read_twins(pipe, [twin])
    assert [texts[k][0] for k in lines[0]] == ["Loading Bay 7"]  # as drawn
    assert len(crops) == len(owners) == len(flipped) == len(texts) == 1
    assert len(twin.boxes) == 1 and twin.timings["det"] > 0  # detected in place
