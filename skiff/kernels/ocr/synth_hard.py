"""A rendered set of hard images with ground truth: small, turned, degraded, photographed.

The clean set (:mod:`.synth`) is drawn in DejaVu and Noto Sans CJK on plain paper. This one
is drawn in other Debian fonts (Liberation, DejaVu Mono and Condensed, Noto Serif CJK,
WenQuanYi Zen Hei, AR PL UKai, DSEG7) and spoiled the ways phone pictures and small crops
are. Each sample belongs to one tier a benchmark reports separately:

``degraded``  small images (200-350 px wide, 13-17 px text) turned by any angle up to 180
              degrees, blurred (sigma up to 1.5 px), noisy (sigma 20-35), JPEG quality 20-30
``photo``     a photographed page: perspective, uneven light, a shadow, textured paper
``segment``   seven-segment displays (meters, clocks, scales), LCD and LED colours
``vertical``  Chinese written in columns, read top to bottom, columns right to left

The text is drawn as a coverage mask and composed over a background, so ink, paper and
light are independent. Everything is deterministic for a given seed.

>>> from skiff.kernels.ocr.synth_hard import make_hard_set   # doctest: +SKIP
>>> samples = make_hard_set(40, seed=0)                      # doctest: +SKIP
"""

from __future__ import annotations

import io
import os
import random

import numpy as np

from .synth import FontsMissing, Sample

__all__ = ["HARD_TIERS", "hard_fonts", "render_hard", "make_hard_set"]

HARD_TIERS = ("degraded", "photo", "segment", "vertical")

_T = "/usr/share/fonts/truetype"
_O = "/usr/share/fonts/opentype/noto"
# (path, face index) per script; the packages that hold them are named when one is missing
LATIN_FONTS = [
    (f"{_T}/liberation2/LiberationSans-Regular.ttf", 0),
    (f"{_T}/liberation2/LiberationSerif-Regular.ttf", 0),
    (f"{_T}/liberation2/LiberationSans-Bold.ttf", 0),
    (f"{_T}/liberation2/LiberationMono-Regular.ttf", 0),
    (f"{_T}/dejavu/DejaVuSansCondensed.ttf", 0),
    (f"{_T}/dejavu/DejaVuSansMono-Bold.ttf", 0),
]
CJK_FONTS = [
    (f"{_O}/NotoSerifCJK-Regular.ttc", 2),
    (f"{_T}/wqy/wqy-zenhei.ttc", 0),
    (f"{_T}/arphic/ukai.ttc", 0),
    (f"{_O}/NotoSansCJK-Bold.ttc", 2),
]
SEGMENT_FONTS = [(f"{_T}/dseg/DSEG7Classic-Regular.ttf", 0),
                 (f"{_T}/dseg/DSEG7Classic-Bold.ttf", 0),
                 (f"{_T}/dseg/DSEG7Modern-Regular.ttf", 0)]
PACKAGES = "fonts-liberation2 fonts-dejavu-core fonts-noto-cjk fonts-wqy-zenhei " \
    "fonts-arphic-ukai fonts-dseg"

# short lines, as on signs, receipts and labels (a small image holds 15-30 characters a line)
SHORT_EN = [
    "OPEN 24 HOURS", "Fresh Bread Daily", "Coffee 3.50", "Exit Only", "No Parking",
    "Total 42.80", "Cash 50.00", "Change 7.20", "Milk 2L 1.99", "Room 305",
    "Platform 4", "Gate B12", "Sale 30% off", "Pull to open", "Staff only",
    "Batch 2024-11", "Table 7", "Tea and Cake", "Wifi: guest", "Lot 88213",
    "Best before 12/05", "Keep dry", "Qty 3 x 4.25", "Order #5521", "Welcome back",
]
SHORT_ZH = [
    "营业时间", "欢迎光临", "禁止停车", "出口", "收银台", "新鲜面包", "会员折扣",
    "请勿吸烟", "小心地滑", "合计金额", "找零", "现金支付", "电话号码", "生产日期",
    "保质期十二个月", "北京路八号", "第三车厢", "安全出口", "请排队等候", "今日特价",
    "水果蔬菜", "办公室", "停车场入口", "热烈欢迎", "谢谢惠顾",
]
SHORT_MIXED = ["合计 42.80 元", "B1 停车场", "电话 010-8821", "第 3 号窗口", "WiFi 密码 8899",
               "营业 9:00-21:00", "房间 305", "A 区 12 号"]
VERTICAL = ["春眠不觉晓", "处处闻啼鸟", "夜来风雨声", "花落知多少", "白日依山尽", "黄河入海流",
            "欲穷千里目", "更上一层楼", "床前明月光", "疑是地上霜", "举头望明月", "低头思故乡",
            "欢迎光临本店", "今日营业", "中国银行", "人民医院", "学而时习之", "温故而知新"]


def hard_fonts() -> dict:
    """The fonts this set draws with, by script; raises :class:`FontsMissing` naming the
    Debian packages when one is not installed."""
    groups = {"latin": LATIN_FONTS, "cjk": CJK_FONTS, "segment": SEGMENT_FONTS}
    missing = [p for g in groups.values() for p, _ in g if not os.path.exists(p)]
    if missing:
        raise FontsMissing(f"fonts missing: {', '.join(missing)} (install {PACKAGES}, or run "
                           "tools/system-deps.sh)")
    return groups


def _font(spec, size):
    from PIL import ImageFont

    path, index = spec
    return ImageFont.truetype(path, size, index=index)


def _text_mask(lines, font, gap, pad, align_rng: random.Random) -> np.ndarray:
    """Coverage (H, W) float32 in [0, 1] of ``lines`` drawn top to bottom, ``pad`` around."""
    from PIL import Image, ImageDraw

    boxes = [font.getbbox(t) for t in lines]
    width = max(b[2] for b in boxes) + 2 * pad
    asc, desc = font.getmetrics()
    step = asc + desc + gap
    height = len(lines) * step - gap + 2 * pad
    img = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(img)
    for k, (t, b) in enumerate(zip(lines, boxes, strict=True)):
        x = pad + align_rng.randint(0, max(0, width - 2 * pad - b[2]))
        draw.text((x, pad + k * step), t, font=font, fill=255)
    return np.asarray(img, np.float32) / 255.0


def _column_mask(columns, font, size, gap, pad) -> np.ndarray:
    """Coverage of Chinese ``columns`` drawn top to bottom, the first column rightmost."""
    from PIL import Image, ImageDraw

    pitch = int(size * 1.1)
    height = max(len(c) for c in columns) * pitch + 2 * pad
    width = len(columns) * (size + gap) - gap + 2 * pad
    img = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(img)
    for k, col in enumerate(columns):
        x = width - pad - (k + 1) * size - k * gap
        for j, ch in enumerate(col):
            b = font.getbbox(ch)
            draw.text((x + (size - (b[2] - b[0])) // 2 - b[0], pad + j * pitch), ch, font=font,
                      fill=255)
    return np.asarray(img, np.float32) / 255.0


def _compose(mask, paper, ink) -> np.ndarray:
    """RGB uint8: ``paper`` (H, W, 3) float with ``ink`` (3,) where ``mask`` covers."""
    m = mask[..., None]
    return np.clip(paper * (1 - m) + np.asarray(ink, np.float32) * m, 0, 255).astype(np.uint8)


def _paper(h, w, rng: random.Random, textured: bool) -> np.ndarray:
    base = np.array([rng.randint(200, 250), rng.randint(200, 250), rng.randint(190, 245)],
                    np.float32)
    paper = np.broadcast_to(base, (h, w, 3)).copy()
    if textured:  # grain plus soft blotches (recycled paper, cardboard, a wall)
        import cv2

        g = np.random.default_rng(rng.randint(0, 2**31))
        grain = g.normal(0, rng.uniform(6, 14), (h, w)).astype(np.float32)
        blot = cv2.resize(g.normal(0, 1, (max(2, h // 24), max(2, w // 24))).astype(np.float32),
                          (w, h), interpolation=cv2.INTER_CUBIC) * rng.uniform(8, 18)
        fibres = cv2.GaussianBlur(g.normal(0, 1, (h, w)).astype(np.float32), (0, 0), 1.0,
                                  sigmaY=4.0) * rng.uniform(10, 25)
        paper += (grain + blot + fibres)[..., None]
    return paper


def _light(img: np.ndarray, rng: random.Random) -> np.ndarray:
    """Uneven light (a gradient from one side) and a soft shadow across part of the image."""
    import cv2

    h, w = img.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    t = rng.uniform(0, 2 * np.pi)
    ramp = (np.cos(t) * xx / w + np.sin(t) * yy / h)
    ramp = (ramp - ramp.min()) / max(1e-6, np.ptp(ramp))
    gain = 1.0 - rng.uniform(0.25, 0.45) * ramp
    shadow = np.zeros((h, w), np.float32)
    cx, cy = rng.uniform(0, w), rng.uniform(0, h)
    pts = np.array([[cx + rng.uniform(-w, w), cy + rng.uniform(-h, h)] for _ in range(4)],
                   np.int32)
    cv2.fillPoly(shadow, [cv2.convexHull(pts)], 1.0)
    shadow = cv2.GaussianBlur(shadow, (0, 0), max(2.0, 0.03 * max(h, w)))
    gain *= 1.0 - rng.uniform(0.25, 0.45) * shadow
    return np.clip(img.astype(np.float32) * gain[..., None], 0, 255).astype(np.uint8)


def _perspective(img: np.ndarray, rng: random.Random, amount: float) -> np.ndarray:
    import cv2

    h, w = img.shape[:2]
    src = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    jitter = np.array([[rng.uniform(-1, 1) * amount * w, rng.uniform(-1, 1) * amount * h]
                       for _ in range(4)], np.float32)
    dst = src + jitter
    dst -= dst.min(0)
    size = (int(np.ceil(dst[:, 0].max())), int(np.ceil(dst[:, 1].max())))
    m = cv2.getPerspectiveTransform(src, dst)
    return cv2.warpPerspective(img, m, size, flags=cv2.INTER_LINEAR,
                               borderMode=cv2.BORDER_REPLICATE)


def _turn(img: np.ndarray, degrees: float) -> np.ndarray:
    from PIL import Image

    fill = tuple(int(v) for v in img[0, 0])
    return np.asarray(Image.fromarray(img).rotate(degrees, resample=Image.BICUBIC, expand=True,
                                                  fillcolor=fill))


def _spoil(img, rng: random.Random, blur, noise, quality) -> np.ndarray:
    import cv2
    from PIL import Image

    out = img.astype(np.float32)
    if blur > 0:
        out = cv2.GaussianBlur(out, (0, 0), blur)
    if noise > 0:
        out += np.random.default_rng(rng.randint(0, 2**31)).normal(0, noise, out.shape)
    out = np.clip(out, 0, 255).astype(np.uint8)
    if quality:
        buf = io.BytesIO()
        Image.fromarray(out).save(buf, format="JPEG", quality=quality)
        out = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
    return out


def _lines(rng: random.Random, script: str, n: int) -> list[str]:
    pool = {"english": SHORT_EN, "chinese": SHORT_ZH, "mixed": SHORT_MIXED + SHORT_EN[:8]}[script]
    return rng.sample(pool, n)


def _fit(lines, font, max_width) -> list[str]:
    """Lines that fit ``max_width`` (a line too long is dropped; at least one is kept)."""
    kept = [t for t in lines if font.getbbox(t)[2] <= max_width]
    return kept or [min(lines, key=lambda t: font.getbbox(t)[2])]


def render_hard(tier: str, index: int, *, seed: int = 0) -> Sample:
    """Render sample ``index`` of ``tier`` (deterministic for a given seed)."""
    if tier not in HARD_TIERS:
        raise ValueError(f"unknown tier {tier!r}: choose from {', '.join(HARD_TIERS)}")
    f = hard_fonts()
    rng = random.Random(f"hard-{seed}-{tier}-{index}")
    script = ("english", "chinese", "mixed")[index % 3]
    meta: dict = {}
    if tier == "degraded":
        size = rng.randint(13, 17)
        spec = rng.choice(f["latin"] if script == "english" else f["cjk"])
        font = _font(spec, size)
        width = rng.randint(200, 350)
        lines = _fit(_lines(rng, script, rng.randint(1, 3)), font, width - 16)
        mask = _text_mask(lines, font, int(size * rng.uniform(0.4, 0.9)), 0, rng)
        h = max(mask.shape[0] + 16, int(width * rng.uniform(0.35, 0.7)))
        canvas = np.zeros((h, width), np.float32)
        y0 = rng.randint(4, h - mask.shape[0] - 4)
        x0 = rng.randint(4, max(4, width - mask.shape[1] - 4))
        canvas[y0:y0 + mask.shape[0], x0:x0 + mask.shape[1]] = mask[:, : width - x0]
        img = _compose(canvas, _paper(h, width, rng, False), [rng.randint(0, 70)] * 3)
        angle = rng.choice([rng.uniform(-15, 15), rng.uniform(-180, 180), 180.0])
        img = _turn(img, angle)
        img = _spoil(img, rng, rng.uniform(0.5, 1.5), rng.uniform(20, 35), rng.randint(20, 30))
        meta = {"font": os.path.basename(spec[0]), "size": size, "angle": round(angle, 1)}
    elif tier == "photo":
        size = rng.randint(18, 30)
        spec = rng.choice(f["latin"] if script == "english" else f["cjk"])
        font = _font(spec, size)
        lines = _lines(rng, script, rng.randint(2, 4))
        mask = _text_mask(lines, font, int(size * rng.uniform(0.5, 1.0)), rng.randint(20, 50),
                          rng)
        h, w = mask.shape
        img = _compose(mask, _paper(h, w, rng, True), [rng.randint(0, 60)] * 3)
        img = _perspective(img, rng, rng.uniform(0.04, 0.12))
        img = _light(img, rng)
        img = _turn(img, rng.uniform(-8, 8))
        img = _spoil(img, rng, rng.uniform(0.0, 1.0), rng.uniform(3, 10), rng.randint(50, 85))
        meta = {"font": os.path.basename(spec[0]), "size": size}
    elif tier == "segment":
        size = rng.randint(24, 48)
        spec = rng.choice(f["segment"])
        font = _font(spec, size)
        kind = rng.randrange(4)
        if kind == 0:
            text = f"{rng.randint(0, 9999)}.{rng.randint(0, 99):02d}"
        elif kind == 1:
            text = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
        elif kind == 2:
            text = f"-{rng.randint(0, 99)}.{rng.randint(0, 9)}"
        else:
            text = str(rng.randint(100, 999999))
        lines = [text]
        mask = _text_mask(lines, font, 0, rng.randint(12, 30), rng)
        lcd = rng.random() < 0.5
        if lcd:  # dark segments on a grey-green glass
            paper = np.broadcast_to(np.array([rng.randint(150, 190), rng.randint(175, 210),
                                              rng.randint(140, 170)], np.float32),
                                    mask.shape + (3,)).copy()
            ink = [rng.randint(20, 50)] * 3
        else:  # lit segments on black
            paper = np.full(mask.shape + (3,), rng.randint(5, 30), np.float32)
            ink = rng.choice([[255, 60, 40], [80, 255, 120], [255, 190, 60], [120, 200, 255]])
        img = _compose(mask, paper, ink)
        img = _turn(img, rng.uniform(-5, 5))
        img = _spoil(img, rng, rng.uniform(0.3, 1.2), rng.uniform(5, 15), rng.randint(40, 80))
        script = "digits"
        meta = {"font": os.path.basename(spec[0]), "size": size, "lcd": lcd}
    else:  # vertical
        size = rng.randint(20, 34)
        spec = rng.choice(f["cjk"])
        font = _font(spec, size)
        lines = rng.sample(VERTICAL, rng.randint(2, 4))
        mask = _column_mask(lines, font, size, int(size * rng.uniform(0.6, 1.2)),
                            rng.randint(16, 40))
        h, w = mask.shape
        img = _compose(mask, _paper(h, w, rng, rng.random() < 0.5), [rng.randint(0, 60)] * 3)
        img = _spoil(img, rng, rng.uniform(0.0, 0.8), rng.uniform(0, 8), rng.randint(60, 90))
        script = "chinese"
        meta = {"font": os.path.basename(spec[0]), "size": size}
    return Sample(f"{tier}-{index:03d}-{script}", tier, img, list(lines), script, meta)


def make_hard_set(per_tier: int = 40, *, seed: int = 0, tiers=HARD_TIERS) -> list[Sample]:
    """``per_tier`` samples of each tier."""
    return [render_hard(t, i, seed=seed) for t in tiers for i in range(per_tier)]
