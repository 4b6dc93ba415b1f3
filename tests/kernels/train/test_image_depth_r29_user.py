"""Image folders a user brings (round 29): 16-bit grey PNGs (a microscope's, a depth
camera's) were clipped at 255 by PIL's convert("L") and read all but white (mean 254.5 of
255 for a full-range gradient), float TIFFs in [0, 1] all but black; now they are scaled over
their range. An empty class folder is said (torchvision refuses it), and grey photos saved
as CMYK JPEGs leave a set grey. Oracle: the arrays the files were written from."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from skiff.kernels.train.image_folder import ImageFolder, load_image


def _pattern(seed=0, n=32):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 65536, size=(n, n)).astype(np.uint16)


def test_a_16_bit_png_is_read_over_its_full_range(tmp_path):
    a = _pattern()
    path = tmp_path / "deep.png"
    Image.fromarray(a).save(path)
    assert Image.open(path).mode.startswith("I")
    got = load_image(path, 32, 1)[0].astype(int)
    want = np.rint(a / 257.0).astype(int)
    assert np.abs(got - want).max() <= 1
    rgb = load_image(path, 32, 3)
    assert np.abs(rgb.astype(int) - want[None]).max() <= 1


def test_a_float_tiff_in_0_1_is_read_as_its_fraction_of_255(tmp_path):
    f = np.random.default_rng(1).random((16, 16)).astype(np.float32)
    path = tmp_path / "f.tif"
    Image.fromarray(f).save(path)
    got = load_image(path, 16, 1)[0].astype(int)
    assert np.abs(got - np.rint(f * 255).astype(int)).max() <= 1


def test_a_folder_of_16_bit_images_an_empty_class_and_cmyk_grey(tmp_path):
    for name in ("dark", "light", "nothing"):
        (tmp_path / name).mkdir()
    base = {"dark": 8000, "light": 50000}
    for c, level in base.items():
        for k in range(4):
            a = np.full((16, 16), level + 100 * k, np.uint16)
            Image.fromarray(a).save(tmp_path / c / f"{k}.png")
        grey = np.full((16, 16), level // 257, np.uint8)
        Image.fromarray(grey).convert("RGB").convert("CMYK").save(tmp_path / c / "cmyk.jpg")
    folder = ImageFolder(tmp_path, size=16)
    assert folder.classes == ["dark", "light"] and folder.channels == 1
    pngs = [(c, 0) for c in base]
    for c, _ in pngs:  # each class's 16-bit images as their level / 257, not 255
        rows = folder.images[folder.labels == folder.classes.index(c)]
        levels = sorted(int(r.mean()) for r in rows)
        want = sorted([round((base[c] + 100 * k) / 257) for k in range(4)]
                      + [int(np.asarray(Image.open(tmp_path / c / "cmyk.jpg")
                                        .convert("L")).mean())])
        assert all(abs(g - w) <= 1 for g, w in zip(levels, want)), (c, levels, want)
    assert any("'nothing' holds no image" in n for n in folder.notes)


def test_a_large_jpeg_is_decoded_small_and_reads_as_the_full_decode(tmp_path, monkeypatch):
    # a phone photo (here 1600x1200) was decoded whole to keep 32x32 of it: 0.55 s a 12 MP
    # image; JPEG's own 1/8 scale decode is 15x faster and within a grey level of it
    rng = np.random.default_rng(2)
    yy, xx = np.mgrid[:1200, :1600] / 60.0
    a = np.stack([127 + 60 * np.sin(xx * 0.7 + yy * 0.3), 127 + 60 * np.cos(yy * 0.5),
                  127 + 50 * np.sin(xx * 0.2) * np.cos(yy * 0.9)], -1)
    a += rng.normal(0, 8, a.shape)
    path = tmp_path / "photo.jpg"
    Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(path, quality=90)
    from PIL import ImageOps

    with Image.open(path) as im:  # the oracle: PIL's full decode, fitted the same way
        want = np.asarray(ImageOps.fit(im.convert("RGB"), (32, 32),
                                       method=Image.Resampling.BILINEAR)).transpose(2, 0, 1)
    sizes, fit = [], ImageOps.fit
    monkeypatch.setattr(ImageOps, "fit", lambda im, *a, **k: (sizes.append(im.size),
                                                               fit(im, *a, **k))[1])
    got = load_image(path, 32, 3)
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 2
    assert sizes and max(sizes[0]) <= 1600 // 8  # decoded at an eighth, not whole


def test_avif_photos_are_read_and_heic_ones_said(tmp_path):
    # AVIF was skipped without a word though PIL reads it; an iPhone's HEIC cannot be read
    # here: a folder of them said only "no class folders with images"
    (tmp_path / "sea").mkdir()
    (tmp_path / "sand").mkdir()
    levels = {"sea": 60, "sand": 200}
    for c, level in levels.items():
        for k in range(3):
            a = np.full((16, 16, 3), level + 5 * k, np.uint8)
            Image.fromarray(a).save(tmp_path / c / f"{k}.avif", quality=95)
    (tmp_path / "sea" / "IMG_0001.HEIC").write_bytes(b"\x00\x00\x00\x18ftypheic")
    folder = ImageFolder(tmp_path, size=16)
    assert folder.classes == ["sand", "sea"] and len(folder) == 6
    for c, level in levels.items():
        rows = folder.images[folder.labels == folder.classes.index(c)]
        assert sorted(int(round(r.mean())) for r in rows) == pytest.approx(
            [level, level + 5, level + 10], abs=3)
    assert any(".heic left out" in n and "IMG_0001.HEIC" in n for n in folder.notes)
    only = tmp_path / "phone"
    (only / "cats").mkdir(parents=True)
    (only / "cats" / "a.heic").write_bytes(b"x")
    with pytest.raises(ValueError, match=r"1 file of \.heic left out"):
        ImageFolder(only, size=16)
