"""Password-protected PDFs (round 46 h5): ``--password`` / ``skiff.ocr(password=)`` open them,
a PDF no password given opens is one line naming the file, and the batch goes on.

The PDFs are written here with the standard security handler (RC4, revision 2: what pdfium
opens with a password and refuses without); the truth is the text drawn on each page, and
pdfium's own text layer of the opened file says the same."""

import hashlib

import pytest

from skiff.kernels.ocr.images import ImageError, iter_pages

PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")
LOCKED = [["Invoice 2026-118", "Total due: 1,240.50 EUR"], ["Page two of the invoice"]]
OTHER = [["Payslip March 2026", "Net pay 2,315.00"]]
OPEN = [["Delivery note 77", "Parcel weight 2.4 kg"]]


def _rc4(key: bytes, data: bytes) -> bytes:
    s, j = list(range(256)), 0
    for i in range(256):
        j = (j + s[i] + key[i % len(key)]) % 256
        s[i], s[j] = s[j], s[i]
    i = j = 0
    out = bytearray()
    for b in data:
        i = (i + 1) % 256
        j = (j + s[i]) % 256
        s[i], s[j] = s[j], s[i]
        out.append(b ^ s[(s[i] + s[j]) % 256])
    return bytes(out)


def encrypted_pdf(pages: list[list[str]], user: str, owner: str = "owner") -> bytes:
    """A PDF of 9-pt Helvetica lines (25 px high at 200 dpi), one page per list, that opens
    with ``user`` (an empty one: opens without a password, as one with only an owner's
    password does)."""
    fid, perms = hashlib.md5(b"skiff-r46h5").digest(), -4
    o = _rc4(hashlib.md5((owner.encode() + PAD)[:32]).digest()[:5], (user.encode() + PAD)[:32])
    key = hashlib.md5((user.encode() + PAD)[:32] + o + perms.to_bytes(4, "little", signed=True)
                      + fid).digest()[:5]
    n = len(pages)
    kids = " ".join(f"{4 + 2 * k} 0 R" for k in range(n))
    objs = {1: b"<< /Type /Catalog /Pages 2 0 R >>",
            2: f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode(),
            3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"}
    for k, lines in enumerate(pages):
        page, cont = 4 + 2 * k, 5 + 2 * k
        objs[page] = (f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 190 50] /Resources "
                      f"<< /Font << /F1 3 0 R >> >> /Contents {cont} 0 R >>").encode()
        body = "BT /F1 9 Tf 8 34 Td 15 TL " + " ".join(f"({t}) Tj T*" for t in lines) + " ET"
        okey = hashlib.md5(key + cont.to_bytes(3, "little") + b"\0\0").digest()[:10]
        data = _rc4(okey, body.encode())
        objs[cont] = f"<< /Length {len(data)} >>\nstream\n".encode() + data + b"\nendstream"
    enc = 4 + 2 * n
    objs[enc] = (f"<< /Filter /Standard /V 1 /R 2 /O <{o.hex()}> /U <{_rc4(key, PAD).hex()}> "
                 f"/P {perms} >>").encode()
    out, offsets = bytearray(b"%PDF-1.4\n"), {}
    for num in sorted(objs):
        offsets[num] = len(out)
        out += f"{num} 0 obj\n".encode() + objs[num] + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {enc + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offsets[num]:010d} 00000 n \n".encode() for num in range(1, enc + 1))
    out += (f"trailer\n<< /Size {enc + 1} /Root 1 0 R /Encrypt {enc} 0 R /ID [<{fid.hex()}> "
            f"<{fid.hex()}>] >>\nstartxref\n{xref}\n%%EOF\n").encode()
    return bytes(out)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("pdfs")
    (root / "b locked.pdf").write_bytes(encrypted_pdf(LOCKED, "s3cret"))
    (root / "a other.pdf").write_bytes(encrypted_pdf(OTHER, "another"))
    (root / "open").mkdir()  # a subfolder: not in the folder's run (one page less to read)
    (root / "open" / "c open.pdf").write_bytes(encrypted_pdf(OPEN, ""))
    return root


def test_the_written_pdfs_are_what_pdfium_says(folder):
    """The oracle: pdfium's text layer of each file opened with its password is the truth,
    and the locked one does not open without it."""
    import pypdfium2 as pdfium

    for name, lines, pw in (("b locked.pdf", LOCKED, "s3cret"),
                            ("open/c open.pdf", OPEN, None)):
        doc = pdfium.PdfDocument(str(folder / name), password=pw)
        got = [doc[k].get_textpage().get_text_range().split() for k in range(len(doc))]
        assert got == [" ".join(page).split() for page in lines]
        doc.close()
    with pytest.raises(pdfium.PdfiumError, match="password"):
        pdfium.PdfDocument(str(folder / "b locked.pdf"))


def test_no_or_a_wrong_password_is_one_line_naming_the_file(folder, monkeypatch):
    monkeypatch.delenv("SKIFF_PDF_PASSWORD", raising=False)
    path = str(folder / "b locked.pdf")
    with pytest.raises(ImageError) as none:
        next(iter_pages(path))
    assert "give its password (--password PW" in str(none.value)
    from skiff.kernels.ocr.images import pdf_password

    with pdf_password("S3CRET"), pytest.raises(ImageError) as wrong:
        next(iter_pages(path))
    for exc in (none, wrong):
        text = str(exc.value)
        assert "\n" not in text and "'b locked.pdf' is a password-protected PDF" in text
    assert "the password given does not open it" in str(wrong.value)
    with pdf_password("s3cret"):  # pages and page counts open with it
        from skiff.kernels.ocr.entry import count_pages, job_pixels

        assert [lab[-7:] for _, lab in iter_pages(path)] == ["#page=1", "#page=2"]
        assert count_pages(path) == 2
        opened = list(iter_pages(str(folder / "open" / "c open.pdf")))  # as ever
        assert [lab[-7:] for _, lab in opened] == ["#page=1"] and opened[0][0].min() < 128
        assert job_pixels([path]) == [[pytest.approx(190 * 50 * (200 / 72) ** 2, rel=0.01)] * 2]
    assert count_pages(path) == 1  # the password is gone after: unreadable counts 1
    monkeypatch.setenv("SKIFF_PDF_PASSWORD", "s3cret")  # kept off the run folder's config
    assert count_pages(path) == 2


def test_the_cli_takes_password_for_pdfs_only(folder, tmp_path):
    from skiff.kinds.ocr import COMMAND, to_config

    args = COMMAND.parser("python -m skiff ocr", cli=True).parse_args(
        [str(folder), "--password", "s3cret"])
    assert to_config(vars(args))["password"] == "s3cret"
    assert "password" not in to_config({"inputs": [str(folder)]})
    page = tmp_path / "scan.png"
    from PIL import Image

    Image.new("RGB", (40, 20), "white").save(page)
    with pytest.raises(ValueError, match="--password is for a PDF"):
        to_config({"inputs": [str(page)], "password": "s3cret"})


def test_a_folder_reads_with_the_password_and_names_the_pdf_it_does_not_open(folder,
                                                                            monkeypatch):
    """One run over the folder: the locked PDF's two pages read as drawn, the PDF with
    another password first, one error naming it, and the batch goes on past it."""
    import skiff

    monkeypatch.delenv("SKIFF_PDF_PASSWORD", raising=False)
    # threads=2: test_pages.py's pipeline (skiff.ocr keeps it), so a worker builds none more
    results = skiff.ocr(str(folder), password="s3cret", device="cpu", threads=2)
    got = {r.image.split("/")[-1]: r for r in results}
    assert list(got) == ["a other.pdf", "b locked.pdf#page=1", "b locked.pdf#page=2"]
    assert got["a other.pdf"].error.startswith("'a other.pdf' is a password-protected PDF "
                                               "and the password given does not open it")
    for name, lines in (("b locked.pdf#page=1", LOCKED[0]), ("b locked.pdf#page=2", LOCKED[1])):
        assert got[name].error is None
        assert [line.text for line in got[name].lines] == lines, name
