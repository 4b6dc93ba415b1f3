"""A file that is no image says what it is instead (round 21: an empty or text file came back
as PIL's "UnidentifiedImageError: cannot identify image file")."""

from __future__ import annotations

import pytest

from skiff.kernels.ocr.images import ImageError, iter_pages


@pytest.mark.parametrize("content,needle", [
    (b"", "the file is empty \\(0 bytes\\)"),
    (b"hello, not a picture\n", "it holds text \\('hello, not a picture'\\), not an image"),
    (b"\x00\x01\x02\x03junk", "no image format this reader knows starts with the bytes "
                              "00 01 02 03"),
])
def test_what_a_file_that_is_no_image_holds(tmp_path, content, needle):
    path = tmp_path / "scan.png"
    path.write_bytes(content)
    with pytest.raises(ImageError, match=f"cannot read 'scan.png' as an image: {needle}"):
        list(iter_pages(str(path)))


def test_an_address_is_said_to_be_one(tmp_path):
    from skiff.kernels.ocr.entry import expand_inputs

    with pytest.raises(FileNotFoundError, match="is an address: skiff reads files here"):
        expand_inputs(["https://example.com/receipt.png"])
    with pytest.raises(FileNotFoundError, match="no such file, folder or pattern"):
        expand_inputs([str(tmp_path / "missing.png")])


def _png_bytes(image) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, "PNG")
    return buf.getvalue()


def test_encoded_bytes_are_read_as_the_file_they_came_from(tmp_path, sample):
    """`skiff.ocr(open(f, 'rb').read())` (or an HTTP body, a BytesIO) used to come back empty
    with "expected a path, PIL image or array, got bytes" in its error (round 22)."""
    import io

    from skiff.kernels.ocr import ocr
    from skiff.kernels.ocr.images import load_image

    data = _png_bytes(sample.image)
    path = tmp_path / "page.png"
    path.write_bytes(data)
    want = ocr(str(path)).text
    assert want.strip()
    for given in (data, bytearray(data), memoryview(data), io.BytesIO(data)):
        got = ocr(given)
        assert got.error is None and got.text == want
    import numpy as np

    np.testing.assert_array_equal(load_image(data)[0], load_image(str(path))[0])


@pytest.mark.parametrize("content,needle", [
    (b"hello there", "cannot read 11 bytes as an image: it holds text \\('hello there'\\)"),
    (b"\x00\x01\x02\x03junk", "no image format this reader knows starts with the bytes "
                              "00 01 02 03"),
    (b"%PDF-1.7\n...", "a PDF given as bytes: write it to a file"),
    (b"", "cannot read the bytes as an image: there are none \\(0 bytes\\)"),
])
def test_bytes_that_are_no_image_say_so(content, needle):
    with pytest.raises(ImageError, match=needle):
        list(iter_pages(content))


def test_a_folder_or_a_pattern_reads_its_images_as_the_cli_does(tmp_path, sample):
    from skiff.kernels.ocr import ocr
    from skiff.kernels.ocr.entry import expand_inputs

    for name in ("b.png", "a.png"):
        (tmp_path / name).write_bytes(_png_bytes(sample.image))
    (tmp_path / "notes.txt").write_text("not an image")
    results = ocr(str(tmp_path))
    assert [r.image for r in results] == expand_inputs([str(tmp_path)])
    assert [r.image.rsplit("/", 1)[-1] for r in results] == ["a.png", "b.png"]
    assert all(r.error is None and r.text.strip() for r in results)
    assert len(ocr(str(tmp_path / "*.png"))) == 2
    with pytest.raises(FileNotFoundError, match="no files match"):
        ocr(str(tmp_path / "*.jpg"))


def test_the_ocr_kind_takes_bytes_held_by_a_notebook_variable():
    from skiff.kinds.ocr import is_image

    assert is_image(b"\x89PNG...") and is_image(bytearray(b"x"))
    assert not is_image(3.5)


def test_the_clis_name_lang_chooses_the_model_set_and_a_mistyped_option_is_one_line():
    import skiff

    with pytest.raises(TypeError, match="unknown option 'min_scor'; did you mean 'min_score'"):
        skiff.ocr("x.png", min_scor=0.3)
    with pytest.raises(TypeError, match="both model='ch-v4' and lang='ch-tiny'"):
        skiff.ocr("x.png", model="ch-v4", lang="ch-tiny")
    with pytest.raises(ValueError, match="unknown model set .no-such-set."):  # the registry
        skiff.ocr("x.png", lang="no-such-set")
