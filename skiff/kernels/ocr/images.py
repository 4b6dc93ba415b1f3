"""Images in, as BGR uint8 arrays: files, PDF pages, TIFF pages, PIL images and arrays.

:func:`load_image` and :func:`iter_pages` decode what a user hands the OCR (a path, a
``"file.pdf#page=N"`` reference, a PIL image, an array in RGB, grey, RGBA, channels first,
float or 10- to 16-bit) into the ``(H, W, 3)`` BGR uint8 the models take: EXIF orientation
applied, transparency flattened onto white (or black under light text), 16-bit scaled, PDF
pages rendered with pypdfium2 under :data:`PDFIUM_LOCK` (pdfium is not thread-safe). Anything
unreadable raises :class:`ImageError` with the reason.

Memory: a plain PNG, JPEG, BMP, PNM, WebP or single-page TIFF (RGB, grey, bilevel or palette,
no transparency, upright) is decoded by OpenCV straight into its final array, so decoding
costs the decoded image once (3 bytes a pixel, 1 for a grey image read with
``share_grey=True``) instead of Pillow's 4-byte copy plus conversions (a 13000 x 13000 PNG
took 2.9 GB). Before decoding, the size in the header is checked against the job's
:class:`PixelBudget`, which bounds the decoded pixels a job holds at once.
"""

from __future__ import annotations

import os
import re
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

__all__ = ["ImageError", "load_image", "iter_pages", "PixelBudget", "footprint", "PDFIUM_LOCK",
           "pdf_password", "PdfPasswordError",
           "PDF_DPI", "MAX_PIXELS", "grey_of", "pil_rgb", "pixel_stretch"]

MAX_PIXELS = 200e6  # refuse to decode more than this (a decompression bomb guard)


class ImageError(ValueError):
    """The input is not an image skiff can read."""


def _what_it_is(path) -> str:
    """Why a file is no image, in words: empty, text, or bytes of no image format known."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    return _what_bytes_are(head, "the file is empty (0 bytes)")


def _what_bytes_are(head: bytes, empty: str) -> str:
    """The words of :func:`_what_it_is` for the first bytes of a file or of bytes given
    (``empty``: what to say of none)."""
    if not head:
        return empty
    if all(32 <= b < 127 or b in (9, 10, 13) for b in head):
        text = head.decode("ascii", "replace").strip().splitlines()[0][:40]
        if text.lower().startswith(("<!doctype html", "<html")):  # a saved sign-in page
            return (f"it is a web page ({text!r}), not an image or PDF: a download that "
                    f"got a sign-in or error page? download it again from a browser")
        return f"it holds text ({text!r}), not an image"
    other = _other_format(head)
    if other:  # a zip or an office file named .png / .tiff: said, not 'the bytes 50 4b 03 04'
        return f"it is {other}, not an image or PDF: {_OTHER_FIX}"
    known = _format_of(head)
    if known:  # its first bytes are a known format's, and the rest does not decode
        return (f"it starts as a {known} file but its data is damaged (cut short or "
                f"corrupted in a copy): open it in an image viewer, or copy it again from "
                f"where it came from")
    return f"no image format this reader knows starts with the bytes {head[:8].hex(' ')}"


_SIGNATURES = ((b"\x89PNG\r\n\x1a\n", "PNG"), (b"\xff\xd8\xff", "JPEG"), (b"GIF8", "GIF"),
               (b"II*\x00", "TIFF"), (b"MM\x00*", "TIFF"), (b"BM", "BMP"),
               (b"\x00\x00\x00\x0cjP  ", "JPEG 2000"), (b"%PDF-", "PDF"))


# files that are no image, by their first bytes: what the user is told it is (round 48)
_OTHER_SIGNATURES = ((b"PK\x03\x04", "a ZIP archive"), (b"PK\x05\x06", "a ZIP archive"),
                     (b"\x1f\x8b", "a gzip archive"), (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
                     (b"Rar!\x1a\x07", "a RAR archive"),
                     (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office document (.doc, .xls)"))
_OTHER_FIX = "unpack it, or save its pages as PDF or images, and read those"


def _other_format(head: bytes) -> str | None:
    """What a file that is no image is, by ``head`` (its first bytes), else None: an archive
    or an Office document; a ZIP that opens with an Office or OpenDocument part is named so."""
    for magic, name in _OTHER_SIGNATURES:
        if head.startswith(magic):
            if name == "a ZIP archive" and b"[Content_Types].xml" in head:
                return "an Office document (.docx, .xlsx, .pptx)"
            if name == "a ZIP archive" and b"mimetypeapplication/vnd.oasis" in head:
                return "an OpenDocument file (.odt, .ods, .odp)"
            return name
    return None


def _format_of(head: bytes) -> str | None:
    """The image format whose signature ``head`` starts with (WebP and HEIC/AVIF by their
    RIFF and ``ftyp`` boxes), else None."""
    for magic, name in _SIGNATURES:
        if head.startswith(magic):
            return name
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP"
    if head[4:8] == b"ftyp":
        return "AVIF" if head[8:12] in (b"avif", b"avis") else "HEIC"
    return None


def _decode_failure(exc: Exception, head: bytes = b"") -> str:
    """Why a file whose format is known did not decode, in words that name the fix: a file
    cut short (Pillow's ``image file is truncated``), data damaged after a known format's
    first bytes (``head``), else the error as raised."""
    text = str(exc)
    if "truncated" in text or "broken data stream" in text:
        return (f"the file is cut short ({text}): copy it again from where it came from "
                "(a photo still being synced or downloaded?)")
    known = _format_of(head)
    if known and isinstance(exc, (OSError, SyntaxError, ValueError, EOFError)):
        return (f"it starts as a {known} file but its data is damaged ({text}): open it in "
                f"an image viewer, or copy it again from where it came from")
    return f"{type(exc).__name__}: {exc}"


def _head(path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(64)
    except OSError:
        return b""


def _no_pages(path) -> bool:
    """Whether a PDF's page tree says it holds no page (``/Type /Pages`` with ``/Count 0`` and
    no other count): pdfium refuses such a file with whatever error code an earlier call left
    (its last error is global: "Success" alone, "Data format error" after a damaged file)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
    except OSError:
        return False
    counts = re.findall(rb"/Type\s*/Pages\b[^>]*?/Count\s+(\d+)", head)
    return bool(counts) and all(c == b"0" for c in counts)


def _pdf_failure(name: str, exc: Exception, path=None) -> str:
    """Why PDFium could not open a PDF, in words that name the fix."""
    text = str(exc).rstrip(".")
    if isinstance(exc, PdfPasswordError) and exc.tried:
        return (f"{name!r} is a password-protected PDF and the password given does not open "
                f"it (passwords are case-sensitive): check it, or give this file's own "
                f"password in a run of its own")
    if "password" in text.lower():
        return (f"{name!r} is a password-protected PDF: give its password (--password PW; "
                f"password= in skiff.ocr; or ${PASSWORD_ENV}), or save a copy without it (qpdf "
                f"--password=PW --decrypt in.pdf out.pdf) and read that")
    if (getattr(exc, "err_code", None) == 0 or text.endswith("(PDFium: Success)")
            or (path is not None and _no_pages(path))):
        # pdfium refuses a PDF whose page list holds no page with no error of its own: the
        # job said 'Failed to load document (PDFium: Success)' (round 48)
        return (f"cannot read {name!r} as a PDF: PDFium finds no page in it (its page list "
                f"is empty or damaged); open and save it again in a PDF viewer")
    if "format" in text.lower():
        return (f"cannot read {name!r} as a PDF: its data is damaged or cut short ({text}); "
                f"copy it again, or open and save it again in a PDF viewer")
    return f"cannot read {name!r} as a PDF: {text}"

def footprint(image: np.ndarray) -> int:
    """Bytes an image array holds: a grey image shared across its three channels (a
    zero-stride view) counts once."""
    if image.ndim == 3 and image.strides[2] == 0:
        return image.shape[0] * image.shape[1] * image.itemsize
    return image.nbytes


class PixelBudget:
    """The decoded pixels one job may hold at once, in bytes.

    The loader calls :meth:`wait_for` with an image's decoded size (from its header) before
    decoding it: an image larger than the whole budget is refused with :class:`ImageError`;
    otherwise it waits until the images still in flight (:meth:`add` when decoded,
    :meth:`release` when their result is out) leave room. ``on_block`` is called once before
    waiting, so the consumer can finish what it holds. :attr:`peak` is the most held.
    With ``ahead_bytes`` (less than ``max_bytes``) the loader waits already when the images
    in flight would pass that, unless none is: a larger image is still read, alone.
    """

    def __init__(self, max_bytes: float, on_block=None, ahead_bytes: float | None = None):
        if not max_bytes > 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes!r}")
        self.max_bytes = int(max_bytes)
        self.ahead_bytes = int(min(max_bytes, ahead_bytes or max_bytes))
        self.on_block = on_block
        self.held = 0
        self.peak = 0
        self._cond = threading.Condition()

    def wait_for(self, nbytes: int, label: str = "image") -> None:
        if nbytes > self.max_bytes:
            raise ImageError(f"{label} needs {nbytes / 2**20:.1f} MiB decoded, more than the "
                             f"job's bound of {self.max_bytes / 2**20:.3g} MiB (raise "
                             f"max_image_mb, or shrink the image)")
        with self._cond:
            if self.held + nbytes <= self.ahead_bytes or self.held == 0:
                return
        if self.on_block is not None:
            self.on_block()
        with self._cond:
            self._cond.wait_for(lambda: self.held + nbytes <= self.ahead_bytes or self.held == 0)

    def add(self, image: np.ndarray) -> None:
        with self._cond:
            self.held += footprint(image)
            self.peak = max(self.peak, self.held)

    def release(self, image: np.ndarray) -> None:
        with self._cond:
            self.held = max(0, self.held - footprint(image))
            self._cond.notify_all()


def load_image(item) -> tuple[np.ndarray, str]:
    """``(BGR uint8 (H, W, 3), label)`` from a path, a PIL image, an array or encoded bytes.

    Arrays are read as **RGB** (or grey, or RGBA; channels last, or first as torch keeps
    them), like PIL and matplotlib; an OpenCV (``cv2.imread``) array is BGR: pass
    ``img[..., ::-1]``. Floats in [0, 1] are scaled to 0..255, 10- to 16-bit images to 8
    bits. A transparent background is filled with white, or with black when the opaque
    pixels are light (white text on a transparent background stays readable). A photo's
    EXIF orientation is applied, and a file whose resolution differs across and down (a fax
    at 204 x 98 dpi) is stretched to square pixels (:func:`pixel_stretch`); boxes refer to
    the image so shown. For a file of several pages (PDF, multi-page TIFF) this is
    the first page; :func:`iter_pages` gives all of them. Raises :class:`ImageError` with
    the reason for anything that is not a readable image.
    """
    return next(iter_pages(item))


# formats whose files hold several images: a TIFF's pages, an animation's frames (GIF, APNG,
# WebP), each read as a page of its own
PAGED_FORMATS = ("TIFF", "GIF", "PNG", "WEBP")
PAGED_SUFFIXES = (".tif", ".tiff", ".gif", ".png", ".apng", ".webp")


def frame_count(im) -> int:
    """Pages of an open PIL image read one by one: a multi-page TIFF's pages and an
    animation's frames (GIF, APNG, animated WebP), else 1."""
    return max(1, getattr(im, "n_frames", 1)) if im.format in PAGED_FORMATS else 1


PDF_DPI = 200  # a 10-pt line is ~28 px high at 200 dpi: well above what the models need
_PAGE_REF = re.compile(r"^(?P<path>.+)#page=(?P<page>[0-9]+)$")


def iter_pages(item, *, pdf_dpi: float = PDF_DPI, budget: PixelBudget | None = None,
               share_grey: bool = False,
               page_errors: bool = False) -> Iterator[tuple[np.ndarray, str]]:
    """``(BGR uint8 (H, W, 3), label)`` for each page of ``item``.

    A PDF (rendered with pypdfium2 at ``pdf_dpi``), a multi-page TIFF or an animation (GIF,
    APNG, WebP; each frame as a page) gives one image per page, labelled
    ``"file.pdf#page=2"`` (pages count from 1); a path written that way reads
    only that page. Other inputs give one image (see :func:`load_image`). With ``budget``,
    each file's decoded size is checked against it before decoding; with ``share_grey``, a
    grey file comes back as a read-only view of one channel repeated (a third of the memory).
    A PDF page pdfium cannot load or render raises :class:`ImageError`; with ``page_errors``
    it comes as ``(ImageError, label)`` instead and the pages after it are still read.
    """
    from PIL import Image

    if isinstance(item, (str, Path)):
        label = os.path.expanduser(str(item))
        path, only = label, None
        match = _PAGE_REF.match(label)
        if match and not Path(label).exists() and Path(match["path"]).exists():
            path, only = match["path"], int(match["page"])
        if not Path(path).exists():
            if Path(path).is_symlink():  # a folder's link whose file moved or was removed
                raise ImageError(f"{Path(path).name!r} is a link to {os.readlink(path)!r}, "
                                 f"which does not exist (moved or removed)")
            raise ImageError(f"no such file: {label!r}")
        if Path(path).is_dir():
            raise ImageError(f"{label!r} is a folder, not an image")
        if _is_pdf(path):
            yield from _pdf_pages(path, only, pdf_dpi, budget, page_errors)
            return
        heif = Path(path).suffix.lower() in HEIF_SUFFIXES and _heif_opener()
        try:
            with warnings.catch_warnings():  # skiff's own bound (MAX_PIXELS) applies
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                im = Image.open(path)
            with im:
                stretch = pixel_stretch(im.info.get("dpi"))
                if im.width * im.height * stretch[0] * stretch[1] > MAX_PIXELS:
                    raise ImageError(f"image too large: {im.width}x{im.height} pixels")
                lean = _lean_mode(im)
                if lean is not None:
                    grey = lean == "grey"
                    if budget is not None:
                        per_pixel = 1 if grey and share_grey else 3
                        budget.wait_for(im.width * im.height * per_pixel * stretch[0] *
                                        stretch[1], repr(label))
                    bgr = _decode_lean(path, grey, share_grey, (im.height, im.width))
                    if bgr is not None:
                        yield _square(bgr, stretch), label
                        return
                frames = frame_count(im)
                if frames > 1:
                    pages = [only] if only else range(1, frames + 1)
                else:
                    pages = [None]
                for page in pages:
                    if page is not None:
                        if page > frames:
                            # the file's name, as the other errors give it (the job's
                            # full path of a relative input said nothing more; round 45)
                            raise ImageError(f"{Path(path).name!r} has {frames} "
                                             f"page{'s' * (frames != 1)}, "
                                             f"asked for page {page}")
                    name = f"{path}#page={page}" if page is not None else label
                    try:
                        bgr = _frame(im, page, stretch, budget, label)
                    except Exception as exc:
                        if not (page_errors and page is not None):
                            raise
                        # one damaged (or too large) page of a scanner's TIFF: its own error
                        # line and the pages after it read, as a PDF's (they were lost: r48h11)
                        if not isinstance(exc, ImageError):
                            exc = ImageError(f"page {page} of {Path(path).name!r} cannot be "
                                             f"read ({_decode_failure(exc, _head(path))}); "
                                             f"the other pages are read")
                        yield exc, name
                        continue
                    yield bgr, name
        except ImageError:
            raise
        except Exception as exc:
            hint = ""
            if Path(path).suffix.lower() in HEIF_SUFFIXES and heif is False:
                hint = (" (HEIC/HEIF photos need the pillow-heif package: "
                        "pip install 'skiff[heic]' or pip install pillow-heif)")
            why = _decode_failure(exc, _head(path))
            if isinstance(exc, Image.UnidentifiedImageError):
                why = _what_it_is(path)
            raise ImageError(f"cannot read {Path(label).name!r} as an image: "
                             f"{why}{hint}") from None
    elif isinstance(item, Image.Image):
        yield _square(_bgr(pil_rgb(item, exif=True), owned=True),
                      pixel_stretch(item.info.get("dpi"))), "<PIL image>"
    elif isinstance(item, (bytes, bytearray, memoryview)) or hasattr(item, "read"):
        yield _from_bytes(item), "<bytes>"
    elif isinstance(item, np.ndarray) or hasattr(item, "__array__"):
        yield _bgr(_array_rgb(np.asarray(item))), "<array>"
    else:
        raise ImageError(f"expected a path, PIL image, array or encoded bytes, got "
                         f"{type(item).__name__}")


def _frame(im, page: int | None, stretch: tuple[float, float], budget: PixelBudget | None,
           label: str) -> np.ndarray:
    """Page ``page`` (from 1; None: the image as it is) of an open PIL image as BGR, checked
    against :data:`MAX_PIXELS` and ``budget``; ``stretch`` is the file's, a page's own dpi
    replacing it."""
    if page is not None:
        im.seek(page - 1)
        stretch = pixel_stretch(im.info.get("dpi"))  # a page's own
    area = im.width * im.height * stretch[0] * stretch[1]
    if area > MAX_PIXELS:
        raise ImageError(f"image too large: {im.width}x{im.height} pixels")
    if budget is not None:
        budget.wait_for(area * 3, repr(label))
    return _square(_bgr(pil_rgb(im, exif=True), owned=True), stretch)


def _from_bytes(item) -> np.ndarray:
    """An encoded image held in memory (``open(f, 'rb').read()``, an HTTP body, a BytesIO)
    as BGR, checked against MAX_PIXELS like a file."""
    import io

    from PIL import Image

    data = item.read() if hasattr(item, "read") else bytes(item)
    if not isinstance(data, (bytes, bytearray)):
        raise ImageError(f"a file object opened in text mode: open it with 'rb' "
                         f"(got {type(data).__name__})")
    if data[:5] == b"%PDF-":
        raise ImageError("a PDF given as bytes: write it to a file and give its path "
                         "(its pages are read from the file)")
    if not data:
        raise ImageError("cannot read the bytes as an image: there are none (0 bytes)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(data))
        with im:
            if im.width * im.height > MAX_PIXELS:
                raise ImageError(f"image too large: {im.width}x{im.height} pixels")
            return _square(_bgr(pil_rgb(im, exif=True), owned=True),
                           pixel_stretch(im.info.get("dpi")))
    except ImageError:
        raise
    except Image.UnidentifiedImageError:
        why = _what_bytes_are(bytes(data[:64]), "")
        raise ImageError(f"cannot read {len(data)} bytes as an image: {why}") from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:  # data that does not decode
        raise ImageError(f"cannot read {len(data)} bytes as an image: "
                         f"{_decode_failure(exc, bytes(data[:64]))}") from None


# a file whose resolution across and down differ by at least this much (and at most
# STRETCH_MAX) is read with square pixels: a fax at standard resolution is 204 x 98 dpi, its
# rows half as dense as its columns, and its print squashed to half height reads worse
# (17-px print 0.89 -> 0.94, 20-px 0.98 -> 1.00); fine fax (204 x 196) and the 1% of a
# rounded density are left as they are, and a ratio past STRETCH_MAX is no resolution
STRETCH_MIN, STRETCH_MAX = 1.2, 4.0


def pixel_stretch(dpi) -> tuple[float, float]:
    """``(across, down)`` factors that make the pixels of a file of resolution ``dpi``
    (``(x, y)`` dots per inch, as Pillow reports it) square: the less dense axis is
    stretched to the denser one's resolution. ``(1, 1)`` when the two agree, or either is
    missing or implausible.

    >>> pixel_stretch((204, 98)), pixel_stretch((300, 300)), pixel_stretch(None)
    ((1.0, 2.0816326530612246), (1.0, 1.0), (1.0, 1.0))
    """
    if not isinstance(dpi, (tuple, list)) or len(dpi) != 2:
        return 1.0, 1.0
    try:
        x, y = (float(v) for v in dpi)
    except (TypeError, ValueError):
        return 1.0, 1.0
    if not (x > 0 and y > 0):
        return 1.0, 1.0
    ratio = max(x, y) / min(x, y)
    if not STRETCH_MIN <= ratio <= STRETCH_MAX:
        return 1.0, 1.0
    return (ratio, 1.0) if y > x else (1.0, ratio)


def _square(bgr: np.ndarray, stretch: tuple[float, float]) -> np.ndarray:
    """``bgr`` stretched by ``stretch`` (:func:`pixel_stretch`); a grey image shared across
    channels stays so."""
    if stretch == (1.0, 1.0):
        return bgr
    import cv2

    h, w = bgr.shape[:2]
    size = (max(1, round(w * stretch[0])), max(1, round(h * stretch[1])))
    if bgr.strides[2] == 0:  # one grey channel viewed as three
        grey = cv2.resize(np.ascontiguousarray(bgr[..., 0]), size, interpolation=cv2.INTER_LINEAR)
        grey.flags.writeable = False
        return np.broadcast_to(grey[..., None], (*grey.shape, 3))
    return cv2.resize(bgr, size, interpolation=cv2.INTER_LINEAR)


HEIF_SUFFIXES = (".heic", ".heif")  # phone photos: Pillow reads them with pillow-heif


def _heif_opener() -> bool:
    """Register pillow-heif's opener with Pillow (once); False when it is not installed."""
    global _HEIF
    if _HEIF is None:
        try:
            import pillow_heif

            pillow_heif.register_heif_opener()
            _HEIF = True
        except Exception:  # not installed, or its libheif failed to load
            _HEIF = False
    return _HEIF


_HEIF: bool | None = None


def _bgr(rgb: np.ndarray, owned: bool = False) -> np.ndarray:
    """BGR from RGB; turned in place when the array is ours (no second full-size copy)."""
    if rgb.size == 0:
        raise ImageError(f"empty image (shape {rgb.shape})")
    if owned and rgb.flags.writeable and rgb.flags.c_contiguous:
        import cv2

        return cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR, dst=rgb)
    return np.ascontiguousarray(rgb[..., ::-1])


# formats OpenCV decodes to the same pixels as Pillow (checked in the tests)
_LEAN_FORMATS = {"PNG", "JPEG", "BMP", "PPM", "WEBP", "TIFF"}


def _lean_mode(im) -> str | None:
    """``"colour"`` or ``"grey"`` when OpenCV can decode ``im``'s file straight into the
    array skiff needs (no transparency, no EXIF turn, one frame), else None."""
    if im.format not in _LEAN_FORMATS or getattr(im, "n_frames", 1) != 1:
        return None
    if "transparency" in im.info or im.mode not in ("RGB", "L", "1", "P"):
        return None
    if _orientation(im) not in (0, 1):  # Pillow's path turns the image
        return None
    if im.mode == "P":
        palette = im.getpalette() or []
        rgb = np.asarray(palette[:len(palette) // 3 * 3]).reshape(-1, 3)
        return "grey" if rgb.size and (rgb == rgb[:, :1]).all() else "colour"
    return "grey" if im.mode in ("L", "1") else "colour"


def _orientation(im) -> int:
    """The EXIF orientation tag, read without decoding the pixels (Pillow loads a whole PNG
    to look for an eXIf chunk after the image data; only one before it is seen here)."""
    if im.format == "PNG" and "exif" not in im.info:
        return 1
    try:
        return int(im.getexif().get(0x0112, 1))
    except Exception:
        return 0


def _decode_lean(path: str, grey: bool, share_grey: bool, shape) -> np.ndarray | None:
    """The file decoded by OpenCV into BGR uint8 (a grey one as one channel, viewed as three
    when ``share_grey``); None when OpenCV cannot (the caller falls back to Pillow)."""
    import cv2

    data = np.fromfile(path, np.uint8)
    flags = cv2.IMREAD_IGNORE_ORIENTATION | (cv2.IMREAD_GRAYSCALE if grey else cv2.IMREAD_COLOR)
    img = cv2.imdecode(data, flags)
    del data
    if img is None or img.shape[:2] != tuple(shape):
        return None
    if not grey:
        return img
    if share_grey:
        img.flags.writeable = False
        return np.broadcast_to(img[..., None], (*img.shape, 3))
    return cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)


def is_pdf(path: str) -> bool:
    """Whether ``path`` is a PDF by its first bytes (``%PDF`` after any blank lines), False
    for a file that cannot be opened."""
    try:
        with open(path, "rb") as fh:
            return fh.read(1024).lstrip().startswith(b"%PDF")
    except OSError:
        return False


_is_pdf = is_pdf

PDFIUM_LOCK = threading.Lock()  # pdfium is not thread-safe, even across documents
_PASSWORDS: list[str] = []  # the passwords of the reads running now (:func:`pdf_password`)
PASSWORD_ENV = "SKIFF_PDF_PASSWORD"  # a password from the environment, tried after those


class PdfPasswordError(ValueError):
    """A PDF that needs a password none of those given opens; ``tried``: one was given."""

    def __init__(self, text: str, tried: bool):
        super().__init__(text)
        self.tried = tried


@contextmanager
def pdf_password(password: str | None):
    """Within it, a password-protected PDF is opened with ``password`` (every opening: pages
    read, page counts, sizes for the ETA and hOCR); a PDF without one opens as before.
    Nested or concurrent reads each add theirs, and each is tried in turn."""
    if password is None or password == "":
        yield
        return
    password = str(password)
    with PDFIUM_LOCK:
        _PASSWORDS.append(password)
    try:
        yield
    finally:
        with PDFIUM_LOCK:
            _PASSWORDS.remove(password)


def _open_pdf(path: str):
    """pypdfium2's document for ``path``, with the first password of :func:`pdf_password`
    (then ``$SKIFF_PDF_PASSWORD``) that opens it where it needs one; the caller holds
    :data:`PDFIUM_LOCK`. An encrypted PDF none opens raises :class:`PdfPasswordError`."""
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(path)
    except pdfium.PdfiumError as exc:
        if "password" not in str(exc).lower():
            raise
        why = str(exc)
    env = os.environ.get(PASSWORD_ENV)  # kept off the command line and the run folder
    tried = list(_PASSWORDS) + ([env] if env else [])
    for password in tried:
        try:
            return pdfium.PdfDocument(path, password=password)
        except pdfium.PdfiumError as exc:
            if "password" not in str(exc).lower():
                raise
    raise PdfPasswordError(why, tried=bool(tried))


def pdf_scale(w: float, h: float, dpi: float) -> float:
    """Pixels per point a PDF page of ``w x h`` points is rendered at: ``dpi / 72``, less for
    a page that would pass :data:`MAX_PIXELS` (an A0 plan at 600 dpi)."""
    scale = dpi / 72.0
    if w * h * scale * scale > MAX_PIXELS:
        scale = float(np.sqrt(MAX_PIXELS / (w * h)))
    return scale


@contextmanager
def pdf_document(path: str):
    """pypdfium2's document for ``path``, opened and used under :data:`PDFIUM_LOCK` and
    closed after: ``with pdf_document(p) as doc: len(doc)``. For quick looks (page count,
    page sizes); rendering takes the lock page by page (:func:`_pdf_pages`). pypdfium2's
    own errors pass through."""
    with PDFIUM_LOCK:
        doc = _open_pdf(path)
        try:
            yield doc
        finally:
            doc.close()


def _pdf_pages(path: str, only: int | None, dpi: float, budget: PixelBudget | None = None,
               page_errors: bool = False) -> Iterator[tuple[np.ndarray, str]]:
    try:
        import pypdfium2  # noqa: F401
    except ImportError:  # pragma: no cover - a core dependency
        raise ImageError("reading PDF needs pypdfium2: pip install pypdfium2") from None
    with PDFIUM_LOCK:
        try:
            doc = _open_pdf(path)
            n = len(doc)
        except Exception as exc:
            raise ImageError(_pdf_failure(Path(path).name, exc, path)) from None
    try:
        if only is not None and not 1 <= only <= n:
            raise ImageError(f"{Path(path).name!r} has {n} page{'s' * (n != 1)}, "
                             f"asked for page {only}")
        for page_no in [only] if only else range(1, n + 1):
            label = f"{path}#page={page_no}"
            try:
                bgr = _pdf_page(doc, page_no, dpi, budget, label)
            except ImageError as exc:  # over the job's memory bound: its own words
                error = exc
            except Exception as exc:  # one damaged page: pdfium's PdfiumError, ...
                why = str(exc).rstrip(".") or type(exc).__name__
                rest = "; the other pages are read" if page_errors else ""
                error = ImageError(f"page {page_no} of {Path(path).name!r} cannot be read "
                                   f"({why}){rest}")
            else:
                yield bgr, label
                continue
            if not page_errors:
                raise error from None
            yield error, label
    finally:
        with PDFIUM_LOCK:
            doc.close()


def _pdf_page(doc, page_no: int, dpi: float, budget: PixelBudget | None,
              label: str) -> np.ndarray:
    """Page ``page_no`` of an open PDF rendered at ``dpi`` (BGR); the lock is held while
    rendering, never across a yield."""
    with PDFIUM_LOCK:
        page = doc[page_no - 1]
        try:
            w, h = page.get_size()  # points (1/72 inch)
            scale = pdf_scale(w, h, dpi)
            if budget is not None:
                budget.wait_for(int(w * h * scale * scale * 3), label)
            bitmap = page.render(scale=scale, fill_color=(255, 255, 255, 255))
            if bitmap.mode == "BGR":  # pdfium's own layout: one copy out of its buffer
                bgr = np.array(bitmap.to_numpy())
            else:
                bgr = _bgr(np.array(bitmap.to_pil().convert("RGB")), owned=True)
            bitmap.close()
        finally:
            page.close()
    if bgr.size == 0:
        raise ValueError("an empty page")
    return bgr


def pil_rgb(im, exif: bool = False) -> np.ndarray:
    """A Pillow image as an RGB uint8 array, as OCR reads it: 16- and 32-bit grey scaled by
    their depth (not clipped at 255), transparency laid on paper, EXIF's turn applied when
    ``exif``."""
    from PIL import ImageOps

    if exif and im.getexif().get(0x0112, 1) not in (0, 1):  # a copy only when it turns
        im = ImageOps.exif_transpose(im)
    if im.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        return _array_rgb(np.asarray(im))  # 16-bit / 32-bit grey: scaled, not clipped
    if im.mode in ("RGBA", "LA", "PA", "La", "RGBa") or (
            im.mode == "P" and "transparency" in im.info):
        return _array_rgb(np.asarray(im.convert("RGBA")))
    return np.array(im if im.mode == "RGB" else im.convert("RGB"))  # writable: turned in place


def _array_rgb(a: np.ndarray) -> np.ndarray:
    if a.ndim == 3 and a.shape[0] in (1, 3, 4) and a.shape[2] not in (1, 2, 3, 4):
        a = np.moveaxis(a, 0, 2)  # channels first (C, H, W), as torch keeps images
    if a.ndim == 3 and a.shape[2] == 2:  # grey + alpha
        a = np.concatenate([np.repeat(a[..., :1], 3, axis=2), a[..., 1:]], axis=2)
    if a.ndim == 2:
        a = a[..., None]
    if a.ndim != 3 or a.shape[2] not in (1, 3, 4):
        more = (" (a batch of images: pass it to ocr() whole, or a list)" if a.ndim == 4
                else "")
        raise ImageError(f"expected an (H, W), (H, W, 3) or (H, W, 4) array, got "
                         f"{a.shape}{more}")
    if a.shape[2] == 1:
        a = np.repeat(a, 3, axis=2)
    if a.dtype != np.uint8:
        a = a.astype(np.float32) if a.dtype == bool else a
        if a.dtype.kind == "f":
            a = a.astype(np.float32)
            finite = np.isfinite(a)
            if a.size and not finite.any():
                raise ImageError(f"the {a.shape} float array has no finite pixel (all NaN or "
                                 f"inf): nothing to read")
            # the range (0-1 or 0-255) is the finite pixels'; a NaN pixel is black, an inf
            # one the brightest, a -inf one black
            top = float(a[finite].max()) if a.size else 0.0
            a = a * 255.0 if top <= 1.0 else a
            a = np.nan_to_num(a, nan=0.0, posinf=255.0, neginf=0.0)
        elif a.size and a.max() > 255:  # 10-, 12-, 16-bit... integers: scaled by their depth
            depth = 2.0 ** np.ceil(np.log2(float(a.max()) + 1)) - 1
            a = a.astype(np.float32) * (255.0 / depth)
        a = np.clip(a, 0, 255).astype(np.uint8)
    if a.shape[2] == 4:
        alpha = a[..., 3:4].astype(np.float32) / 255.0
        rgb = a[..., :3].astype(np.float32)
        opaque = alpha[..., 0] > 0.5
        # text drawn light on a transparent background would vanish on white: use black then
        luma = rgb[opaque] @ np.array([0.299, 0.587, 0.114], np.float32)  # ITU-R 601
        light = opaque.any() and not opaque.all() and float(luma.mean()) > 140
        back = 0.0 if light else 255.0
        a = (rgb * alpha + back * (1 - alpha) + 0.5).astype(np.uint8)
    return a


def grey_of(bgr: np.ndarray) -> np.ndarray:
    """The mean of a BGR image's channels rounded down, as uint8: what
    ``bgr.mean(axis=2).astype(np.uint8)`` gives, summed in 16 bits instead of through float64
    (a tenth of the time: 2.5 against 24 ms a megapixel). A grey image is returned as it is.

    >>> grey_of(np.array([[[10, 20, 31]]], np.uint8)).tolist()
    [[20]]
    """
    if bgr.ndim == 2:
        return bgr
    if bgr.strides[2] == 0:  # one grey plane seen as three channels
        return bgr[..., 0]
    total = bgr[..., 0].astype(np.uint16)
    total += bgr[..., 1]
    total += bgr[..., 2]
    return (total // 3).astype(np.uint8)
