"""Damaged files in a user's folder say what is wrong and what to do (round 30): a PNG whose
data is corrupted was said to start with bytes of no format known (they were a PNG's), a
photo cut short in a copy gave Pillow's bare OSError, a password-protected PDF PDFium's
"Incorrect password error". Each file here is made by Pillow, then damaged."""

from __future__ import annotations

import io

import pytest

from skiff.kernels.ocr.images import ImageError, iter_pages


def _encoded(fmt: str) -> bytes:
    from PIL import Image, ImageDraw

    im = Image.new("RGB", (320, 120), "white")
    ImageDraw.Draw(im).text((20, 40), "invoice 4821", fill="black")
    buf = io.BytesIO()
    im.save(buf, fmt)
    return buf.getvalue()


def _fails(path) -> str:
    with pytest.raises(ImageError) as info:
        list(iter_pages(str(path)))
    return str(info.value)


@pytest.mark.parametrize("fmt,name", [("PNG", "PNG"), ("JPEG", "JPEG"), ("TIFF", "TIFF"),
                                      ("GIF", "GIF"), ("BMP", "BMP"), ("WEBP", "WebP")])
def test_a_known_format_whose_data_is_damaged(tmp_path, fmt, name):
    data = _encoded(fmt)
    head = len(data) // 3 if fmt in ("BMP",) else 16
    damaged = data[:head] + bytes(b ^ 0x5A for b in data[head:head + 48])
    path = tmp_path / f"scan.{fmt.lower()}"
    path.write_bytes(damaged)
    message = _fails(path)
    assert f"cannot read 'scan.{fmt.lower()}' as an image: " in message
    assert f"starts as a {name} file but its data is damaged" in message or \
        "the file is cut short" in message, message


def test_a_photo_cut_short(tmp_path):
    data = _encoded("JPEG")
    path = tmp_path / "photo.jpg"
    path.write_bytes(data[: len(data) // 2])
    assert "the file is cut short" in _fails(path) and "copy it again" in _fails(path)
    with pytest.raises(ImageError, match="bytes as an image: the file is cut short"):
        list(iter_pages(data[: len(data) // 2]))
    whole = tmp_path / "whole.jpg"
    whole.write_bytes(data)
    assert len(list(iter_pages(str(whole)))) == 1  # the same photo whole reads


def test_a_password_protected_and_a_cut_pdf(tmp_path):
    buf = io.BytesIO()
    from PIL import Image

    Image.new("RGB", (200, 100), "white").save(buf, "PDF")
    pdf = buf.getvalue()
    assert len(list(iter_pages(_write(tmp_path / "ok.pdf", pdf)))) == 1
    # an encryption dictionary in the trailer: PDFium asks for the password
    locked = pdf.replace(b"trailer\n<<", b"trailer\n<< /Encrypt << /Filter /Standard /V 1 "
                         b"/R 2 /O <" + b"00" * 32 + b"> /U <" + b"11" * 32 + b"> /P -4 >> "
                         b"/ID [<00112233445566778899aabbccddeeff>"
                         b"<00112233445566778899aabbccddeeff>]", 1)
    assert locked != pdf
    message = _fails(_write(tmp_path / "locked.pdf", locked))
    assert "'locked.pdf' is a password-protected PDF" in message and "--decrypt" in message
    message = _fails(_write(tmp_path / "cut.pdf", pdf[:60]))
    assert "cannot read 'cut.pdf' as a PDF: its data is damaged or cut short" in message


def _write(path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)
