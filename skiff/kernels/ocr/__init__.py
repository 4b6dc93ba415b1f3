"""OCR: detection, direction and recognition over the PP-OCR models shipped in PyPI wheels.

>>> from skiff.kernels.ocr import ocr
>>> result = ocr("page.png")                    # doctest: +SKIP
>>> print(result.text)                          # doctest: +SKIP

See :class:`OcrPipeline` for batches and folders, and ``docs/ocr.md`` for the design.
"""

from __future__ import annotations

import glob
import os

import numpy as np

from skiff.kernels.backend.devices import DEFAULT_DEVICE

from .engine import resolve_ocr_device
from .images import ImageError, iter_pages, load_image, pdf_password
from .layout import reading_order
from .models import MODEL_SETS, ModelSet, get_model_set
from .pipeline import OcrPipeline
from .result import OcrResult, OcrResults, TextLine

__all__ = ["ocr", "OcrPipeline", "OcrResult", "OcrResults", "TextLine", "ModelSet",
           "MODEL_SETS", "get_model_set", "ImageError", "load_image", "iter_pages",
           "reading_order",
           "resolve_ocr_device"]

_PIPELINES: dict = {}


def ocr(images, *, model: str = "ch", device: str = DEFAULT_DEVICE, batch_size: int = 8,
        **options) -> OcrResult | OcrResults:
    """Read the text of one image or a list of them.

    Parameters
    ----------
    images : path, folder, glob pattern, PIL image, array, encoded bytes, or a list of them
        A folder gives its image and PDF files (sorted), a pattern (``"scans/*.png"``,
        ``**`` into subfolders) the files it matches, as ``python -m skiff ocr`` reads them;
        bytes (``open(f, "rb").read()``, an HTTP body, a ``BytesIO``) are decoded as a file.
    model : str
        Model set (``lang=``, as the CLI's ``--lang`` names it, is the same): ``"ch"``
        (PP-OCRv6, default), ``"ch-v4"`` (lite) or ``"ch-tiny"`` (PP-OCRv6 tiny: 2-4x
        RapidOCR's speed on print in bulk; the ``ocr-tiny`` extra).
    device : str
        ``auto``, ``cpu`` or ``cuda:N``.
    batch_size : int
        Images per detection/recognition batch.
    **options
        Passed to :class:`OcrPipeline` (``det_model``, ``rec_model``, ``dict``, ``use_cls``,
        ``use_det``: False reads each image whole as one line, ``words``: False keeps unsure
        lines as read, ``min_score``, ``threads``), and ``pages``: only those pages of PDFs,
        multi-page TIFFs and animations (``"1-3,7"``, ``"9-"`` to the last, ``2``,
        ``[1, 4]``; the CLI's ``--pages``), other images read whole.
    password : str, optional
        Opens password-protected PDFs (the CLI's ``--password``); one it does not open gives
        a result whose ``error`` names the file, and the other inputs are read.

    Returns
    -------
    OcrResult for one image; OcrResults (a list) for a list, a folder, a pattern, and for a PDF,
    TIFF or animated GIF of several pages (one result per page, ``image`` labelled
    ``"file.pdf#page=N"``).

    Raises
    ------
    FileNotFoundError
        For one path that does not exist (in a list, a missing file gives a result with
        ``error`` set, and the others are read).

    Notes
    -----
    Arrays are read as RGB (an OpenCV ``cv2.imread`` array is BGR: pass ``img[..., ::-1]``),
    floats in [0, 1] and 16-bit images are scaled to 8 bits.
    """
    if "lang" in options:  # the CLI's and the magic's name for the model set
        lang = options.pop("lang")
        if model != "ch" and lang != model:
            raise TypeError(f"ocr() got both model={model!r} and lang={lang!r}: give one")
        model = lang
    pages = _pages_spec(options.pop("pages", None))
    password = options.pop("password", None)
    _check_options(options)
    with pdf_password(password):  # page counts, pages read: a protected PDF opens with it
        return _ocr(images, model, device, batch_size, pages, options)


def _ocr(images, model, device, batch_size, pages, options):
    key = (model, device, batch_size, tuple(sorted(options.items())))
    pipe = _PIPELINES.get(key)
    if pipe is None:
        pipe = _PIPELINES[key] = OcrPipeline(model, device=device, batch_size=batch_size,
                                             **options)
    if isinstance(images, (list, tuple)):
        return OcrResults(pipe.run(_paged(list(images), pages), keep_pixels=True))
    if getattr(images, "ndim", 0) == 4:  # a batch (N, H, W, C) or (N, C, H, W): N images
        return OcrResults(pipe.run(list(np.asarray(images)), keep_pixels=True))
    if isinstance(images, (str, os.PathLike)):
        path = os.path.expanduser(str(images))
        base = path.rsplit("#page=", 1)[0]
        if os.path.isdir(path) or (not os.path.exists(path) and glob.has_magic(path)):
            from .entry import expand_inputs  # a folder or a pattern: its images, as the CLI

            return OcrResults(pipe.run(_paged(expand_inputs([path]), pages),
                                       keep_pixels=True))
        if not os.path.exists(path) and not os.path.exists(base):
            raise FileNotFoundError(f"no such file: {path!r}")
    results = OcrResults(pipe.run(_paged([images], pages), keep_pixels=True))
    return results[0] if len(results) == 1 else results  # a PDF: one result per page


def _pages_spec(pages) -> str | None:
    """``pages=`` as the CLI's ``--pages`` text (an int, a string, or a list of ints),
    checked: ``ValueError`` names the part that is no page or range."""
    if pages is None:
        return None
    if isinstance(pages, (list, tuple, range)):
        pages = ",".join(str(int(k)) for k in pages)
    from .entry import parse_pages

    spec = ",".join(str(pages).split())
    parse_pages(spec)
    return spec


def _paged(items: list, pages: str | None) -> list:
    """``items`` with each PDF or multi-page TIFF path replaced by its pages in ``pages``."""
    if not pages:
        return items
    from .entry import select_pages

    out = []
    for item in items:
        path = os.path.expanduser(str(item)) if isinstance(item, (str, os.PathLike)) else None
        if path is not None and os.path.isfile(path):
            out.extend(select_pages([path], pages))
        else:
            out.append(item)
    return out


def _check_options(options: dict) -> None:
    """An option :class:`OcrPipeline` does not take is one line naming the closest one."""
    import difflib
    import inspect

    known = [n for n in inspect.signature(OcrPipeline.__init__).parameters if n != "self"]
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name, known + ["lang"], n=1)
            raise TypeError(f"ocr() got an unknown option {name!r}"
                            + (f"; did you mean {close[0]!r}?" if close else
                               f" (options: {', '.join(known)})"))
