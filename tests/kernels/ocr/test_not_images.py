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
