"""A rendered OCR test set with ground truth, and the accuracy measure used on it.

Pages are drawn with Pillow from fonts that Debian installs (``fonts-dejavu-core`` for Latin,
``fonts-noto-cjk`` for Chinese; ``tools/system-deps.sh``), so nothing is downloaded. Each
sample belongs to one category a benchmark reports separately:

``clean``    English, Chinese, mixed lines and paragraphs, black on light paper
``small``    8-11 px text on pages 1000-2000 px wide (footnotes, scans at low dpi)
``rotated``  turned by a few degrees, or upside down (180 degrees)
``noisy``    blurred, with Gaussian noise, saved as low-quality JPEG

>>> from skiff.kernels.ocr.synth import char_accuracy
>>> round(char_accuracy("hello world", "hello word"), 3)
0.9
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .lexicon import edit_distance

__all__ = ["Sample", "FontsMissing", "fonts", "render_page", "render_sample", "make_test_set",
           "write_test_set", "char_accuracy", "normalize_text", "CATEGORIES",
           "render_document", "make_document_set", "render_dot_matrix"]

CATEGORIES = ("clean", "small", "rotated", "noisy")
_CJK_CLASS = r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]"
_CJK = re.compile(_CJK_CLASS)
_CJK_SPACE = re.compile(rf"(?<={_CJK_CLASS}) +| +(?={_CJK_CLASS})")

LATIN_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
LATIN_SERIF = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"
CJK_FONT = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
CJK_INDEX_SC = 2  # the .ttc holds JP, KR, SC, TC, HK faces in this order

ENGLISH = [
    "The quick brown fox jumps over the lazy dog",
    "Invoice number 20481 due on March 14, 2025",
    "Total amount: $1,284.50 including tax",
    "Please keep this receipt for your records",
    "Open Monday to Friday from 9am to 6pm",
    "Shipping address: 221B Baker Street, London",
    "Batch size 64, learning rate 0.001",
    "Meeting moved to room 4C on the third floor",
    "Results are stored in the run folder",
    "Temperature sensor reading 23.7 C",
    "Warning: do not exceed the rated voltage",
    "Train departs at 07:45 from platform 2",
]
CHINESE = [
    "今天天气很好我们去公园散步",
    "请在下午三点前提交报告",
    "北京大学图书馆开放时间",
    "这是一个文字识别的测试样本",
    "欢迎使用光学字符识别系统",
    "会议将在第三会议室举行",
    "价格为人民币一百二十元",
    "列车将于上午八点出发",
    "数据已保存到运行目录中",
    "请保持安静谢谢合作",
]
MIXED = [
    "订单号 A1024 已发货",
    "使用 Python 3.11 运行测试",
    "GPU 显存 80GB 可用",
    "模型 PP-OCR 识别中文和 English",
    "温度 23.5 度 湿度 40%",
    "下载 skiff 并运行 make test",
    "第 3 章 Neural Networks 简介",
    "联系邮箱 info@example.com",
]


class FontsMissing(RuntimeError):
    """The Debian fonts the test set needs are not installed."""


@dataclass
class Sample:
    """One rendered image and its truth: ``lines`` in reading order, ``text`` joined by \\n."""

    name: str
    category: str
    image: np.ndarray  # (H, W, 3) uint8 RGB
    lines: list[str]
    kind: str = "english"
    meta: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def fonts() -> dict:
    """Paths of the fonts used; raises :class:`FontsMissing` naming what to install."""
    missing = [p for p in (LATIN_FONT, CJK_FONT) if not os.path.exists(p)]
    if missing:
        raise FontsMissing(
            f"fonts missing: {', '.join(missing)} (install fonts-dejavu-core and fonts-noto-cjk, "
            "or run tools/system-deps.sh)")
    serif = LATIN_SERIF if os.path.exists(LATIN_SERIF) else LATIN_FONT
    return {"latin": LATIN_FONT, "serif": serif, "cjk": CJK_FONT}


def _font(path: str, size: int):
    from PIL import ImageFont

    if path.endswith(".ttc"):
        try:
            return ImageFont.truetype(path, size, index=CJK_INDEX_SC)
        except OSError:
            return ImageFont.truetype(path, size)
    return ImageFont.truetype(path, size)


def _pick_lines(rng: random.Random, kind: str, n: int) -> list[str]:
    pool = {"english": ENGLISH, "chinese": CHINESE, "mixed": MIXED,
            "paragraph": ENGLISH + MIXED}[kind]
    return rng.sample(pool, min(n, len(pool)))


def _draw_page(lines: list[str], font_path: str, size: int, rng: random.Random,
               margin: int = 24, page_width: int = 0) -> np.ndarray:
    """Lines drawn top to bottom at a random indent on a page at least ``page_width`` wide
    (a page larger than its text, as scans and screenshots are)."""
    from PIL import Image, ImageDraw

    font = _font(font_path, size)
    gap = int(size * rng.uniform(0.6, 1.0))
    widths = [font.getbbox(t)[2] for t in lines]
    width = max(max(widths) + 2 * margin + rng.randint(0, 40), page_width)
    indent = rng.randint(0, max(0, width - max(widths) - 2 * margin))
    top = margin + rng.randint(0, max(0, page_width // 6))
    height = top + len(lines) * (size + gap) + margin + rng.randint(0, max(0, page_width // 6))
    shade = rng.randint(225, 255)
    img = Image.new("RGB", (width, height), (shade, shade, rng.randint(215, 255)))
    draw = ImageDraw.Draw(img)
    ink = rng.randint(0, 60)
    y = top
    for text in lines:
        draw.text((margin + indent + rng.randint(0, 10), y), text, font=font,
                  fill=(ink, ink, ink))
        y += size + gap
    return np.asarray(img)


def _rotate(image: np.ndarray, degrees: float) -> np.ndarray:
    from PIL import Image

    pil = Image.fromarray(image)
    fill = tuple(int(v) for v in image[0, 0])
    return np.asarray(pil.rotate(degrees, resample=Image.BICUBIC, expand=True, fillcolor=fill))


def _degrade(image: np.ndarray, rng: random.Random) -> np.ndarray:
    from PIL import Image, ImageFilter

    pil = Image.fromarray(image).filter(ImageFilter.GaussianBlur(rng.uniform(1.2, 2.0)))
    arr = np.asarray(pil).astype(np.float32)
    noise = np.random.default_rng(rng.randint(0, 2**31)).normal(0, rng.uniform(18, 30), arr.shape)
    arr = np.clip(arr + noise, 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="JPEG", quality=rng.randint(10, 30))
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))


def render_page(lines: list[str], *, size: int = 24, page_width: int = 0, seed: int = 0,
                font: str | None = None) -> np.ndarray:
    """An RGB page with ``lines`` drawn top to bottom (the CJK font when any line needs it).

    >>> page = render_page(["Hello", "你好"], size=20)   # doctest: +SKIP
    """
    f = fonts()
    if font is None:
        font = f["cjk"] if any(_CJK.search(t) for t in lines) else f["latin"]
    return _draw_page(list(lines), font, size, random.Random(seed), page_width=page_width)


def render_dot_matrix(lines: list[str], font: str, *, rows: int = 12, pitch: int = 4,
                      ink=(70, 70, 80), ground=(238, 236, 228)) -> np.ndarray:
    """``lines`` as dot-matrix print (an impact printer's receipt, an LED sign), RGB uint8:
    drawn in ``font`` at 64 px, sampled to ``rows`` dots a line's height, each dot a disc
    ``pitch`` px from the next."""
    import cv2
    from PIL import Image, ImageDraw

    big = _font(font, 64)
    img = Image.new("L", (max(int(big.getlength(t)) for t in lines) + 40, 90 * len(lines) + 20))
    for k, t in enumerate(lines):
        ImageDraw.Draw(img).text((20, 10 + 90 * k), t, font=big, fill=255)
    a = np.asarray(img, np.float32) / 255
    on = cv2.resize(a, (int(a.shape[1] * rows / 64), int(a.shape[0] * rows / 64)),
                    interpolation=cv2.INTER_AREA) > 0.35
    cover = np.zeros(((on.shape[0] + 2) * pitch, (on.shape[1] + 2) * pitch), np.float32)
    for y, x in zip(*np.nonzero(on), strict=True):
        cv2.circle(cover, (int((x + 1.5) * pitch), int((y + 1.5) * pitch)),
                   max(1, round(0.4 * pitch)), 1.0, -1, cv2.LINE_AA)
    m = cover[..., None]
    rgb = np.asarray(ground, np.float32) * (1 - m) + np.asarray(ink, np.float32) * m
    return np.clip(rgb, 0, 255).astype(np.uint8)


def render_sample(category: str, index: int, *, seed: int = 0) -> Sample:
    """Render sample ``index`` of ``category`` (deterministic for a given seed)."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}: choose from {', '.join(CATEGORIES)}")
    f = fonts()
    rng = random.Random(f"{seed}-{category}-{index}")
    kind = ("english", "chinese", "mixed", "paragraph")[index % 4]
    n = {"paragraph": rng.randint(4, 6)}.get(kind, rng.randint(1, 3))
    lines = _pick_lines(rng, kind, n)
    has_cjk = any(_CJK.search(t) for t in lines)
    font_path = f["cjk"] if has_cjk or rng.random() < 0.3 else \
        rng.choice([f["latin"], f["serif"]])
    if category == "small":  # small text on a page of ordinary size
        size, page = rng.randint(8, 11), rng.randint(1000, 2000)
    else:
        size, page = rng.randint(18, 34), rng.randint(400, 1100)
    image = _draw_page(lines, font_path, size, rng, margin=24, page_width=page)
    meta = {"font": os.path.basename(font_path), "size": size}
    if category == "rotated":
        angle = 180.0 if index % 3 == 2 else rng.choice([-1, 1]) * rng.uniform(4, 12)
        image = _rotate(image, angle)
        meta["angle"] = round(angle, 2)
    elif category == "noisy":
        image = _degrade(image, rng)
    return Sample(f"{category}-{index:03d}-{kind}", category, image, lines, kind, meta)


def make_test_set(per_category: int = 8, *, seed: int = 0,
                  categories=CATEGORIES) -> list[Sample]:
    """``per_category`` samples of each category."""
    return [render_sample(c, i, seed=seed) for c in categories for i in range(per_category)]


def render_document(index: int, *, seed: int = 0) -> Sample:
    """A dense page as a scanner gives one: A4 at 150 dpi (1240 px wide), 20-40 lines of
    16-26 px text in one of the four kinds, every third page with a scanner's light blur
    and noise (saved as JPEG like the noisy category). The rendered sets above hold 1-6
    lines a page; a folder of scanned documents is mostly pages like these."""
    f = fonts()
    rng = random.Random(f"{seed}-document-{index}")
    kind = ("english", "chinese", "mixed", "paragraph")[index % 4]
    size = rng.randint(16, 26)
    pool = {"english": ENGLISH, "chinese": CHINESE, "mixed": MIXED,
            "paragraph": ENGLISH + MIXED}[kind]
    lines = [rng.choice(pool) for _ in range(min(40, 1500 // int(size * 1.8)))]
    font_path = f["cjk"] if any(_CJK.search(t) for t in lines) else \
        rng.choice([f["latin"], f["serif"]])
    image = _draw_page(lines, font_path, size, rng, margin=80, page_width=1240)
    scanned = index % 3 == 2
    if scanned:
        from PIL import Image, ImageFilter

        soft = Image.fromarray(image).filter(ImageFilter.GaussianBlur(rng.uniform(0.5, 0.9)))
        noise = np.random.default_rng(rng.randint(0, 2**31)).normal(0, rng.uniform(5, 10),
                                                                    image.shape)
        image = np.clip(np.asarray(soft).astype(np.float32) + noise, 0, 255).astype(np.uint8)
    return Sample(f"document-{index:03d}-{kind}", "document", image, lines, kind,
                  {"font": os.path.basename(font_path), "size": size, "scanned": scanned})


def make_document_set(pages: int = 30, *, seed: int = 0) -> list[Sample]:
    """``pages`` dense pages (:func:`render_document`)."""
    return [render_document(i, seed=seed) for i in range(pages)]


def render_photo(index: int, *, seed: int = 0, shot: int | None = None,
                 fill: float = 1.0) -> Sample:
    """A phone photo of a dense page: :func:`render_document` scaled ~2x onto a
    3000 x 4000 table-coloured ground with a slight perspective (corners moved up to 60 px),
    light falling off to the left and sensor noise, saved as JPEG (``meta["scanned"]``).
    Its print is ~30-50 px high. ``fill`` < 1 shrinks the page by that factor, centred
    (a photo from further away: more table around it, smaller print). ``shot`` seeds the
    perspective and the noise (default: the index)."""
    import cv2

    doc = render_document(index, seed=seed)
    page = np.ascontiguousarray(doc.image)
    rng = np.random.default_rng(index if shot is None else shot)
    h, w = page.shape[:2]
    W, H = 3000, 4000
    k = min((W - 400) / w, (H - 500) / h)
    x0, y0 = 200.0, 250.0
    if fill != 1.0:
        if not 0.1 <= fill <= 1.0:
            raise ValueError(f"fill must be in [0.1, 1], got {fill!r}")
        k *= fill
        x0, y0 = (W - w * k) / 2, (H - h * k) / 2
    src = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
    corners = [[x0, y0], [x0 + w * k, y0], [x0 + w * k, y0 + h * k], [x0, y0 + h * k]]
    dst = np.float32([[x + rng.uniform(-60, 60), y + rng.uniform(-60, 60)] for x, y in corners])
    ground = np.full((H, W, 3), (130, 110, 90), np.uint8)
    out = cv2.warpPerspective(page, cv2.getPerspectiveTransform(src, dst), (W, H), dst=ground,
                              borderMode=cv2.BORDER_TRANSPARENT, flags=cv2.INTER_CUBIC)
    light = np.linspace(0.8, 1.05, W, dtype=np.float32)[None, :, None]
    out = out.astype(np.float32) * light + rng.normal(0, 4, out.shape).astype(np.float32)
    image = np.clip(out, 0, 255).astype(np.uint8)
    return Sample(f"photo-{index:03d}-{doc.kind}", "photo", image, doc.lines, doc.kind,
                  {**doc.meta, "scanned": True, "shot": index if shot is None else shot})


PHOTO_FILLS = (1.0, 0.8, 0.6)  # the page's share of the frame: near, middle, further away


def make_photo_set(photos: int = 12, *, seed: int = 0) -> list[Sample]:
    """``photos`` phone photos of dense pages (:func:`render_photo`), taken from three
    distances in turn (``PHOTO_FILLS``: print ~30-50, ~25-40 and ~18-30 px high)."""
    return [render_photo(i, seed=seed, fill=PHOTO_FILLS[i % len(PHOTO_FILLS)])
            for i in range(photos)]


def write_test_set(folder, samples: list[Sample]) -> Path:
    """Write each sample as PNG (noisy ones and scanned documents as JPEG) plus
    ``truth.jsonl``; returns the folder."""
    from PIL import Image

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "truth.jsonl", "w", encoding="utf-8") as fh:
        for s in samples:
            ext = "jpg" if s.category == "noisy" or s.meta.get("scanned") else "png"
            path = folder / f"{s.name}.{ext}"
            Image.fromarray(s.image).save(path, quality=95) if ext == "jpg" else \
                Image.fromarray(s.image).save(path)
            fh.write(json.dumps({"image": path.name, "category": s.category, "kind": s.kind,
                                 "lines": s.lines, **s.meta}, ensure_ascii=False) + "\n")
    return folder


# accuracy ------------------------------------------------------------------------------------
def normalize_text(text: str) -> str:
    """NFKC, lines stripped, runs of spaces made one, spaces next to a CJK character dropped
    (Chinese is written without them; the rendered gap is narrow), empty lines dropped."""
    text = unicodedata.normalize("NFKC", text or "")
    lines = (_CJK_SPACE.sub("", " ".join(line.split())) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def char_accuracy(predicted: str, truth: str) -> float:
    """``1 - edit_distance / len(truth)`` on NFKC-normalized text, floored at 0."""
    p, t = normalize_text(predicted), normalize_text(truth)
    if not t:
        return 1.0 if not p else 0.0
    return max(0.0, 1.0 - edit_distance(p, t) / len(t))
