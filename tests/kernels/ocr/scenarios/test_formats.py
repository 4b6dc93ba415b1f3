"""A user's files as they come: PNG modes, EXIF-rotated JPEG, BMP, TIFF (multi-page), WebP,
PDF (text and scanned), and in-memory arrays in every dtype and channel order."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from skiff.kernels.ocr import OcrResults, iter_pages, load_image, ocr

from .helpers import LINES, TRUTH, acc, page

FLOOR = 0.97  # character accuracy floor on these clean rendered pages


@pytest.fixture(scope="module")
def rgb(fonts):
    return page()


@pytest.fixture(scope="module")
def files(tmp_path_factory, rgb):
    """The same page saved in each format a user is likely to have."""
    d = tmp_path_factory.mktemp("formats")
    im = Image.fromarray(rgb)
    gray = im.convert("L")
    ink = np.asarray(gray) < 128
    out = {}

    def save(name, img, **kw):
        img.save(d / name, **kw)
        out[name] = d / name

    save("rgb.png", im)
    save("gray.png", gray)
    save("palette.png", im.convert("P", palette=Image.Palette.ADAPTIVE, colors=16))
    save("gray16.png", Image.fromarray(np.asarray(gray).astype(np.uint16) * 257))
    dark = np.zeros(rgb.shape[:2] + (4,), np.uint8)  # black text, transparent black background
    dark[ink, 3] = 255
    save("rgba-dark-text.png", Image.fromarray(dark))
    light = dark.copy()  # white text on a transparent background
    light[..., :3] = 255
    save("rgba-light-text.png", Image.fromarray(light))
    yellow = dark.copy()  # yellow text (mean 158, luminance 205) on a transparent background
    yellow[..., :3] = (255, 220, 0)
    save("rgba-yellow-text.png", Image.fromarray(yellow))
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 degrees clockwise to display", as phones write it
    save("phone.jpg", im.transpose(Image.Transpose.ROTATE_90), exif=exif, quality=92)
    save("page.bmp", im)
    save("page.webp", im, quality=90)
    save("page.tif", im)
    return out


@pytest.mark.parametrize("name", ["rgb.png", "gray.png", "palette.png", "gray16.png",
                                  "rgba-dark-text.png", "rgba-light-text.png",
                                  "rgba-yellow-text.png", "phone.jpg",
                                  "page.bmp", "page.webp", "page.tif"])
def test_each_format_reads_upright(pipe, files, rgb, name):
    (result,) = list(pipe.run([files[name]]))
    assert result.error is None, result.error
    assert result.image == str(files[name])
    assert acc(result.text, TRUTH) >= FLOOR, (name, result.text)
    if name == "phone.jpg":  # the EXIF turn was applied: the page is as wide as the original
        assert result.size == rgb.shape[:2]


def test_transparent_background_never_hides_text(files):
    for name in ("rgba-dark-text.png", "rgba-light-text.png", "rgba-yellow-text.png"):
        bgr, _ = load_image(files[name])
        ink = np.asarray(Image.open(files[name]))[..., 3] > 128
        # text and background differ by most of the range, whichever the text's colour
        assert abs(float(bgr[ink].mean()) - float(bgr[~ink].mean())) > 150, name


def test_sixteen_bit_is_scaled_not_clipped(files, rgb):
    bgr, _ = load_image(files["gray16.png"])
    gray = np.asarray(Image.fromarray(rgb).convert("L")).astype(int)
    assert np.abs(bgr[..., 0].astype(int) - gray).max() <= 1


@pytest.fixture(scope="module")
def multipage(tmp_path_factory, fonts):
    d = tmp_path_factory.mktemp("pages")
    texts = [[f"Chapter {k} begins on this page", f"Reference code {k}{k}7-{k}42"]
             for k in (1, 2, 3)]
    frames = [Image.fromarray(page(t, size=26, seed=k)) for k, t in enumerate(texts)]
    frames[0].save(d / "report.tif", save_all=True, append_images=frames[1:])
    frames[0].save(d / "scanned.pdf", save_all=True, append_images=frames[1:], resolution=100)
    return d, ["\n".join(t) for t in texts]


def test_multipage_tiff_gives_one_result_per_page(pipe, multipage):
    d, truths = multipage
    results = list(pipe.run([d / "report.tif"]))
    assert [r.image for r in results] == [f"{d / 'report.tif'}#page={k}" for k in (1, 2, 3)]
    for r, truth in zip(results, truths, strict=True):
        assert acc(r.text, truth) >= FLOOR, (r.image, r.text)


def test_scanned_pdf_pages(pipe, multipage):
    d, truths = multipage
    results = list(pipe.run([d / "scanned.pdf"]))
    assert len(results) == 3
    assert [r.image for r in results] == [f"{d / 'scanned.pdf'}#page={k}" for k in (1, 2, 3)]
    for r, truth in zip(results, truths, strict=True):
        assert r.error is None and acc(r.text, truth) >= FLOOR, (r.image, r.text)
    # rendered at 200 dpi: the 100-dpi scan comes back twice as large
    assert results[0].size[1] == pytest.approx(2 * Image.open(d / "report.tif").width, abs=2)


def test_one_page_of_a_pdf_by_its_label(pipe, multipage):
    d, truths = multipage
    (r,) = list(pipe.run([f"{d / 'scanned.pdf'}#page=2"]))
    assert r.image.endswith("#page=2") and acc(r.text, truths[1]) >= FLOOR
    (bad,) = list(pipe.run([f"{d / 'scanned.pdf'}#page=9"]))
    assert "has 3 pages, asked for page 9" in bad.error


@pytest.mark.slow
def test_text_pdf_from_matplotlib(pipe, tmp_path, fonts):
    """A vector PDF (text, no image), two pages, 12-pt text on A4."""
    from matplotlib.backends.backend_pdf import PdfPages
    from matplotlib.figure import Figure

    pages = [["Quarterly sales rose by 12 percent", "Costs fell in the third quarter"],
             ["Outlook for next year is stable", "Board meeting on 14 March"]]
    with PdfPages(tmp_path / "text.pdf") as pdf:
        for lines in pages:
            fig = Figure(figsize=(8.27, 11.69))
            for k, line in enumerate(lines):
                fig.text(0.1, 0.9 - 0.04 * k, line, fontsize=12, family="DejaVu Sans")
            pdf.savefig(fig)
    results = ocr(str(tmp_path / "text.pdf"), device="cpu", threads=2)
    assert isinstance(results, OcrResults) and len(results) == 2
    for r, lines in zip(results, pages, strict=True):
        assert acc(r.text, "\n".join(lines)) >= FLOOR, r.text
        # A4 at 200 dpi
        assert r.size == pytest.approx((round(11.69 * 200), round(8.27 * 200)), abs=2)
    json.dumps(results.to_json())


def test_broken_pdf_is_one_error(pipe, tmp_path):
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n garbage")
    (r,) = list(pipe.run([tmp_path / "broken.pdf"]))
    assert r.lines == [] and "broken.pdf" in r.error


def test_arrays_rgb_bgr_float_uint16_pil(pipe, rgb):
    """Arrays are RGB (documented); an OpenCV BGR array is passed as ``img[..., ::-1]``."""
    ref, _ = load_image(rgb)
    assert np.array_equal(ref, np.ascontiguousarray(rgb[..., ::-1]))  # stored as BGR inside
    bgr = np.ascontiguousarray(rgb[..., ::-1])
    assert np.array_equal(load_image(bgr[..., ::-1])[0], ref)
    as_float = rgb.astype(np.float32) / 255.0
    assert np.abs(load_image(as_float)[0].astype(int) - ref).max() <= 1
    assert np.abs(load_image(rgb.astype(np.uint16) * 257)[0].astype(int) - ref).max() <= 1
    assert np.array_equal(load_image(Image.fromarray(rgb))[0], ref)
    mixed = [rgb, as_float, Image.fromarray(rgb).convert("L"), bgr[..., ::-1]]
    results = list(pipe.run(mixed))
    assert [r.image for r in results] == [f"<{k} {n}>" for n, k in
                                          enumerate(["array", "array", "PIL image", "array"])]
    for r in results:
        assert acc(r.text, TRUTH) >= FLOOR, r.text


def test_iter_pages_of_plain_image_is_one(files):
    pages = list(iter_pages(files["rgb.png"]))
    assert len(pages) == 1 and pages[0][1] == str(files["rgb.png"])
    assert LINES  # the page the fixtures drew


def test_channels_first_twelve_bit_and_home_paths(pipe, rgb, tmp_path, monkeypatch):
    ref, _ = load_image(rgb)
    assert np.array_equal(load_image(np.moveaxis(rgb, 2, 0))[0], ref)  # (3, H, W) as torch
    twelve = (rgb.astype(np.int32) * 4095 // 255).astype(np.uint16)  # a 12-bit scanner
    assert np.abs(load_image(twelve)[0].astype(int) - ref).max() <= 1
    monkeypatch.setenv("HOME", str(tmp_path))
    Image.fromarray(rgb).save(tmp_path / "mine.png")
    bgr, label = load_image("~/mine.png")
    assert np.array_equal(bgr, ref) and label == str(tmp_path / "mine.png")


@pytest.mark.slow
def test_a4_pdf_of_long_lines_reads_upright(pipe, tmp_path, fonts):
    """Long 10-pt lines on an A4 text PDF: squeezed whole into the direction model's
    48 x 192 input they were "sure" upside down and the page came back as garbage, read
    bottom up (accuracy 0.29); windows of the model's shape read them upright."""
    import random

    from matplotlib.backends.backend_pdf import PdfPages
    from matplotlib.figure import Figure

    rng = random.Random(0)
    words = ("the of river market trade water city boat goods road farm grain year price "
             "ship port north south winter summer").split()
    lines = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(20)]
    with PdfPages(tmp_path / "long.pdf") as pdf:
        fig = Figure(figsize=(8.27, 11.69))
        for k, line in enumerate(lines):
            fig.text(0.08, 0.9 - 0.025 * k, line, fontsize=10, family="DejaVu Sans")
        pdf.savefig(fig)
    (r,) = list(pipe.run([tmp_path / "long.pdf"]))
    assert acc(r.text, "\n".join(lines)) >= FLOOR, r.text[:300]


def test_lone_sure_flip_on_an_upright_page_is_overruled():
    """Four crops the direction model is sure are upright and one it is "sure" is upside
    down (a misreading seen on 6-pt PDF lines): the page's 80% majority wins."""
    from skiff.kernels.ocr import OcrPipeline

    class Stub:  # (p0, p180) of the five crops, in order, over however many batches
        rows = np.array([[0.99, 0.01]] * 2 + [[0.03, 0.97]] + [[0.98, 0.02]] * 2, np.float32)

        def __call__(self, batch):
            out, self.rows = self.rows[: len(batch)], self.rows[len(batch):]
            return out

    pipe = OcrPipeline(device="cpu")
    pipe._engines["cls"] = Stub()
    crops = [np.zeros((80, 300, 3), np.uint8) for _ in range(5)]
    owners = [(0, k) for k in range(5)]
    flags = pipe.orient(crops, owners, [type("I", (), {"timings": {}})()])
    assert flags.tolist() == [False] * 5


@pytest.mark.parametrize("ext", ["jp2", "avif", "heic"])
def test_jpeg2000_avif_and_phone_heic_read(pipe, rgb, tmp_path, ext):
    """Formats a folder of scans or phone photos may hold: JPEG 2000, AVIF and HEIC (the
    last through pillow-heif, the ``heic`` extra)."""
    from skiff.kernels.ocr import images

    if ext == "heic" and not images._heif_opener():
        pytest.skip("pillow-heif is not installed")
    path = tmp_path / f"page.{ext}"
    try:
        Image.fromarray(rgb).save(path, quality=90)
    except (KeyError, OSError, ValueError) as exc:
        pytest.skip(f"this Pillow cannot write {ext}: {exc}")
    from skiff.kernels.ocr.entry import expand_inputs

    assert expand_inputs([str(tmp_path)]) == [str(path)]  # a folder's file of that kind
    (result,) = list(pipe.run([path]))
    assert result.error is None, result.error
    assert acc(result.text, TRUTH) >= FLOOR, (ext, result.text)


def test_heic_without_its_package_names_the_fix(pipe, tmp_path, monkeypatch):
    from skiff.kernels.ocr import images

    monkeypatch.setattr(images, "_HEIF", False)
    path = tmp_path / "photo.heic"
    path.write_bytes(b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic")
    (result,) = list(pipe.run([path]))
    assert result.error and "pip install 'skiff[heic]'" in result.error, result.error


def test_fax_at_standard_resolution_reads_with_square_pixels(pipe, tmp_path, fonts):
    """A fax at standard resolution (204 x 98 dpi, bilevel, Group 4) has rows half as dense
    as its columns: it is read stretched to square pixels, single-page, page by page and
    as a PIL image alike. Its 20-px print read squashed measured 0.981; square, 1.0."""
    from skiff.kernels.ocr.synth import render_page

    lines = ["FAX TRANSMISSION - 3 PAGES", "To: Accounts Payable, Fax 020 7946 0028",
             "Re: Invoice 6502, payment due 30 days",
             "Please remit by wire transfer to the account below."]
    grey = Image.fromarray(render_page(lines, size=20, seed=1)).convert("L")
    w, h = grey.size
    fax = grey.resize((w, h // 2), Image.LANCZOS).point(lambda v: 255 if v > 150 else 0)
    fax = fax.convert("1")
    fax.save(tmp_path / "fax.tif", compression="group4", dpi=(204, 98))
    fax.save(tmp_path / "faxes.tif", compression="group4", dpi=(204, 98), save_all=True,
             append_images=[fax.copy()])
    square = (round(h // 2 * 204 / 98), w)
    assert load_image(tmp_path / "fax.tif")[0].shape[:2] == square
    assert [p.shape[:2] for p, _ in iter_pages(tmp_path / "faxes.tif")] == [square] * 2
    truth = "\n".join(lines)
    for got in [pipe(tmp_path / "fax.tif"), *pipe.run([tmp_path / "faxes.tif"]),
                pipe(Image.open(tmp_path / "fax.tif"))]:
        assert got.size == square
        assert acc(got.text, truth) >= 0.99, got.text


def test_pixel_stretch_rules():
    from skiff.kernels.ocr.images import pixel_stretch

    assert pixel_stretch((204, 98)) == pytest.approx((1.0, 204 / 98))
    assert pixel_stretch((98, 204)) == pytest.approx((204 / 98, 1.0))
    assert pixel_stretch((204, 196)) == (1.0, 1.0)  # fine fax: square enough
    assert pixel_stretch((300, 2000)) == (1.0, 1.0)  # no plausible resolution
    assert pixel_stretch((0, 72)) == (1.0, 1.0)
    assert pixel_stretch(None) == (1.0, 1.0)
    assert pixel_stretch("72") == (1.0, 1.0)
