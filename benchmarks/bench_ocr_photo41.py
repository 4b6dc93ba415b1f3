"""OCR on phone photos of signs and pages as a user meets them: skiff against RapidOCR.

    .venv/bin/python benchmarks/bench_ocr_photo41.py [--seeds 41,141] [--per-seed 42]
        [--threads 1] [--methods skiff,rapidocr,rapidocr-960] [--save texts.json]
        [--only SEED/I,...] [--keep FOLDER]

A small seeded set (round 41, h1; docs/ocr.md "Round 41 (h1), hard images") of what the hard
set's ``photo`` tier (``synth_hard``: a mild perspective, a soft shadow, one textured paper)
does not draw: each image is spoiled one way, so each loss has a name.

``perspective``  a sign photographed from the side (corners moved 15-28% of its size)
``light``        a dark corner: light falling from one side to a third of its strength
``shadow``       a hard shadow edge (a hand, a phone) across the lines, 35-60% darker
``texture``      print on wood grain, woven cloth or corrugated cardboard, in colour
``glare``        a bright reflection washing part of the print out (a glossy page)
``inverse``      light print on a dark or coloured sign (white on blue, yellow on black)
``far``          the sign small in a large frame (a 1280 x 960 photo, 16-22 px print)

Faces none of skiff's sets draw with (Liberation Serif Bold Italic, DejaVu Sans ExtraLight,
DejaVu Serif Condensed Italic, Liberation Mono Bold; the Korean and Traditional faces of the
Noto Sans / Serif CJK collections, AR PL UKai HK, WenQuanYi Zen Hei Mono, drawing the
Simplified text with their own glyph forms), some stretched or squeezed 0.8-1.25 across,
18-32 px print. English, Chinese and mixed lines (``i % 3``), the
spoil ``i % 7``. Mild blur, sensor noise and JPEG 55-85 on every image. Accuracy is character
accuracy as in ``bench_ocr_hard.py`` (NFKC, lines joined by newlines, spaces between CJK
characters removed), the mean over images. RapidOCR 3.10 is run as its users would: its
defaults (``limit_type=min, 736``) and the page setting ``limit_type=max, 960``; each method
reads the same PNG files in this process, one after the other, with its CPU time.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

T = "/usr/share/fonts/truetype"
O = "/usr/share/fonts/opentype/noto"  # noqa: E741
LATIN = [(f"{T}/liberation2/LiberationSerif-BoldItalic.ttf", 0),
         (f"{T}/dejavu/DejaVuSans-ExtraLight.ttf", 0),
         (f"{T}/dejavu/DejaVuSerifCondensed-Italic.ttf", 0),
         (f"{T}/liberation2/LiberationMono-Bold.ttf", 0),
         (f"{T}/dejavu/DejaVuSansCondensed-BoldOblique.ttf", 0),
         (f"{T}/liberation2/LiberationSans-Regular.ttf", 0)]
CJK = [(f"{O}/NotoSansCJK-Regular.ttc", 1), (f"{O}/NotoSerifCJK-Bold.ttc", 1),
       (f"{O}/NotoSansCJK-Bold.ttc", 3), (f"{T}/arphic/ukai.ttc", 1),
       (f"{T}/wqy/wqy-zenhei.ttc", 1), (f"{O}/NotoSerifCJK-Regular.ttc", 3)]
EN = ["Platform 9 Departures", "Emergency Exit", "No Entry Staff Only", "Opening Hours 8-20",
      "Fresh Fish Daily", "Parking 2.50 per hour", "Mind the Step", "Reception Desk",
      "Gate 14 Boarding", "Return Books Here", "Today 2 for 5.00", "Lost Property Office",
      "Please Queue Here", "Cashier Closed", "Meeting Room B", "Cycle Lane Ends",
      "Bakery and Deli", "Check-in 6:30", "Tram Stop 27", "Kitchen Staff Only"]
ZH = ["紧急出口", "非工作人员禁止入内", "营业时间八点至二十点", "新鲜水产", "停车收费标准",
      "小心台阶", "前台接待", "登机口十四", "还书处", "失物招领处", "请在此排队", "收银台暂停服务",
      "会议室二号", "自行车道", "面包熟食", "候车区域", "请保持安静", "医务室", "饮用水",
      "禁止携带宠物"]
MIX = ["登机口 B14", "电话 400-820-8820", "营业 8:00-20:00", "房间 1207", "票价 12.5 元",
       "第 3 候车室", "WiFi 免费", "A 座 6 楼", "每小时 10 元", "2 号线换乘"]
SPOILS = ("perspective", "light", "shadow", "texture", "glare", "inverse", "far")
SCRIPTS = ("en", "zh", "mix")


def _mask(lines, spec, size, stretch, rng):
    """Coverage (H, W) float32 of ``lines`` in face ``spec``, stretched ``stretch`` across."""
    import cv2
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(spec[0], size, index=spec[1])
    boxes = [font.getbbox(t) for t in lines]
    pad = rng.randint(int(size * 0.8), int(size * 2))
    asc, desc = font.getmetrics()
    step = asc + desc + int(size * rng.uniform(0.4, 0.9))
    width = max(b[2] for b in boxes) + 2 * pad
    height = len(lines) * step - (step - asc - desc) + 2 * pad
    im = Image.new("L", (width, height), 0)
    d = ImageDraw.Draw(im)
    centred = rng.random() < 0.5
    for k, (t, b) in enumerate(zip(lines, boxes, strict=True)):
        x = pad + ((width - 2 * pad - b[2]) // 2 if centred else 0)
        d.text((x, pad + k * step), t, font=font, fill=255)
    m = np.asarray(im, np.float32) / 255.0
    if abs(stretch - 1) > 1e-3:
        m = cv2.resize(m, (max(8, int(round(m.shape[1] * stretch))), m.shape[0]),
                       interpolation=cv2.INTER_AREA)
    return m


def _texture(h, w, rng):
    """A coloured textured background (H, W, 3) float32: wood, cloth or cardboard."""
    import cv2

    g = np.random.default_rng(rng.randint(0, 2**31))
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    kind = rng.choice(["wood", "cloth", "cardboard"])
    if kind == "wood":
        warp = cv2.resize(g.normal(0, 1, (max(2, h // 40), max(2, w // 40))).astype(np.float32),
                          (w, h), interpolation=cv2.INTER_CUBIC) * rng.uniform(6, 14)
        period = rng.uniform(7, 16)
        v = 0.5 + 0.5 * np.sin(2 * np.pi * (yy + warp) / period)
        base, dark = np.array([205, 160, 110], np.float32), np.array([150, 100, 60], np.float32)
    elif kind == "cloth":
        p = rng.uniform(3, 6)
        v = 0.5 + 0.25 * (np.sin(2 * np.pi * xx / p) + np.sin(2 * np.pi * yy / p))
        c = np.array([rng.randint(170, 235) for _ in range(3)], np.float32)
        base, dark = c, c * 0.75
    else:
        period = rng.uniform(10, 18)
        v = 0.5 + 0.5 * np.sin(2 * np.pi * xx / period) ** 2
        base, dark = np.array([200, 170, 125], np.float32), np.array([170, 135, 95], np.float32)
    v = v + g.normal(0, 0.12, (h, w)).astype(np.float32)
    v = np.clip(v, 0, 1)[..., None]
    return base * v + dark * (1 - v)


def _warp(img, amount, rng, fill):
    import cv2

    h, w = img.shape[:2]
    src = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    side = rng.choice([0, 1])  # which side recedes
    a = amount * (h if side else w)
    if side == 0:  # left or right edge shorter (photographed from the side)
        near = rng.choice([0, 1])
        dst = src.copy()
        edge = [1, 2] if near == 0 else [0, 3]
        dst[edge[0], 1] += a
        dst[edge[1], 1] -= a
    else:  # top edge narrower (looking up at a sign)
        dst = src.copy()
        dst[0, 0] += a
        dst[1, 0] -= a
    dst += np.array([[rng.uniform(-0.03, 0.03) * w, rng.uniform(-0.03, 0.03) * h]
                     for _ in range(4)], np.float32)
    dst -= dst.min(0)
    size = (int(np.ceil(dst[:, 0].max())) + 1, int(np.ceil(dst[:, 1].max())) + 1)
    m = cv2.getPerspectiveTransform(src, dst)
    return cv2.warpPerspective(img, m, size, flags=cv2.INTER_LINEAR,
                               borderMode=cv2.BORDER_CONSTANT, borderValue=fill)


def render(seed: int, i: int):
    """Image ``i`` of set ``seed``: RGB uint8, its lines, script, spoil and meta."""
    import cv2
    from PIL import Image

    script, spoil = SCRIPTS[i % 3], SPOILS[i % 7]
    rng = random.Random(f"photo41-{seed}-{i}")
    spec = rng.choice(LATIN if script == "en" else CJK)
    size = rng.randint(16, 22) if spoil == "far" else rng.randint(18, 32)
    stretch = rng.choice([1.0, 1.0, rng.uniform(0.8, 1.25)])
    lines = rng.sample({"en": EN, "zh": ZH, "mix": MIX}[script], rng.randint(1, 3))
    m = _mask(lines, spec, size, stretch, rng)
    h, w = m.shape
    ink = np.array([rng.randint(0, 60)] * 3, np.float32)
    paper = np.array([rng.randint(205, 245), rng.randint(205, 245), rng.randint(195, 240)],
                     np.float32)
    if spoil == "inverse":
        paper, ink = rng.choice([(np.array([20, 60, 150], np.float32),  # white on blue
                                  np.array([245, 245, 245], np.float32)),
                                 (np.array([25, 25, 25], np.float32),  # yellow on black
                                  np.array([240, 210, 40], np.float32)),
                                 (np.array([20, 110, 60], np.float32),  # white on green
                                  np.array([240, 240, 235], np.float32)),
                                 (np.array([170, 30, 30], np.float32),  # white on red
                                  np.array([250, 245, 240], np.float32))])
    bg = _texture(h, w, rng) if spoil == "texture" else \
        np.broadcast_to(paper, (h, w, 3)).astype(np.float32)
    if spoil == "texture":
        ink = np.array(rng.choice([[20, 20, 20], [120, 20, 20], [20, 30, 90]]), np.float32)
    img = bg * (1 - m[..., None]) + ink * m[..., None]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    if spoil == "light":  # falling off from one side to 0.3-0.45 of the light
        t = rng.uniform(0, 2 * np.pi)
        ramp = np.cos(t) * xx / w + np.sin(t) * yy / h
        ramp = (ramp - ramp.min()) / max(1e-6, np.ptp(ramp))
        img *= (1.0 - rng.uniform(0.55, 0.7) * ramp ** 1.5)[..., None]
    elif spoil == "shadow":  # a straight hard edge across the lines, slightly soft
        t = rng.uniform(-0.5, 0.5) + (np.pi / 2 if rng.random() < 0.5 else 0)
        c = rng.uniform(0.3, 0.7)
        d = (xx / w - c) * np.cos(t) + (yy / h - 0.5) * np.sin(t)
        edge = 1 / (1 + np.exp(-d * max(h, w) / rng.uniform(0.8, 2.5)))
        img *= (1.0 - rng.uniform(0.35, 0.6) * edge)[..., None]
    elif spoil == "glare":  # a bright elliptic reflection, added light saturating to white
        cx, cy = rng.uniform(0.25, 0.75) * w, rng.uniform(0.25, 0.75) * h
        rx, ry = rng.uniform(0.12, 0.3) * w, rng.uniform(0.3, 0.8) * h
        blob = np.exp(-(((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2))
        img += rng.uniform(160, 240) * blob[..., None]
    img = np.clip(img, 0, 255).astype(np.uint8)
    fill = tuple(int(v) for v in rng.choice([(90, 90, 95), (140, 120, 100), (60, 70, 60)]))
    amount = rng.uniform(0.15, 0.28) if spoil == "perspective" else rng.uniform(0.0, 0.05)
    img = _warp(img, amount, rng, fill)
    pad = rng.randint(10, 40)
    img = cv2.copyMakeBorder(img, pad, pad, pad, pad, cv2.BORDER_CONSTANT, value=fill)
    img = np.asarray(Image.fromarray(img).rotate(rng.uniform(-6, 6), resample=Image.BICUBIC,
                                                 expand=True, fillcolor=fill))
    if spoil == "far":  # placed in a large frame of a wall with some clutter
        H, W = 960, 1280
        if img.shape[0] > H - 20 or img.shape[1] > W - 20:
            s = min((H - 20) / img.shape[0], (W - 20) / img.shape[1])
            img = cv2.resize(img, None, fx=s, fy=s, interpolation=cv2.INTER_AREA)
        frame = _texture(H, W, rng) * 0.6 + np.array(fill, np.float32) * 0.4
        for _ in range(rng.randint(2, 5)):  # dark rectangles: doors, frames, shelves
            x0, y0 = rng.randint(0, W - 50), rng.randint(0, H - 50)
            cv2.rectangle(frame, (x0, y0), (x0 + rng.randint(30, 300), y0 + rng.randint(30, 300)),
                          [rng.randint(30, 120)] * 3, thickness=rng.choice([-1, 4]))
        y, x = rng.randint(0, H - img.shape[0]), rng.randint(0, W - img.shape[1])
        frame[y:y + img.shape[0], x:x + img.shape[1]] = img
        img = frame
    out = img.astype(np.float32)
    blur = rng.uniform(0.3, 1.2)
    out = cv2.GaussianBlur(out, (0, 0), blur)
    out += np.random.default_rng(rng.randint(0, 2**31)).normal(0, rng.uniform(3, 9), out.shape)
    buf = io.BytesIO()
    Image.fromarray(np.clip(out, 0, 255).astype(np.uint8)).save(
        buf, format="JPEG", quality=rng.randint(55, 85))
    rgb = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
    meta = {"face": os.path.basename(spec[0]) + f"#{spec[1]}", "size": size,
            "stretch": round(stretch, 2), "shape": list(rgb.shape[:2])}
    return rgb, lines, script, spoil, meta


def read_skiff(paths, threads):
    from skiff.kernels.ocr import OcrPipeline

    pipe = OcrPipeline("ch", device="cpu", threads=threads, batch_size=8)
    return [pipe(p).text for p in paths]


def _rapid(paths, threads, extra):
    from rapidocr import RapidOCR

    engine = RapidOCR(params={
        **extra, "EngineConfig.onnxruntime.intra_op_num_threads": threads,
        "EngineConfig.onnxruntime.inter_op_num_threads": 1, "Global.log_level": "error"})
    out = []
    for p in paths:
        r = engine(p)
        out.append("\n".join(r.txts) if r.txts else "")
    return out


METHODS = {
    "skiff": read_skiff,
    "rapidocr": lambda paths, threads: _rapid(paths, threads, {}),
    "rapidocr-960": lambda paths, threads: _rapid(paths, threads, {
        "Det.limit_type": "max", "Det.limit_side_len": 960}),
}


def main(argv=None):
    from benchmarks.bench_ocr_hard import _squeeze_cjk
    from skiff.kernels.ocr.synth import char_accuracy

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="41,141")
    ap.add_argument("--per-seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--methods", default="skiff,rapidocr,rapidocr-960")
    ap.add_argument("--only", default="", help="seed/i,... images to read (default all)")
    ap.add_argument("--save", default="")
    ap.add_argument("--keep", default="", help="write the images and truth to this folder")
    args = ap.parse_args(argv)
    from PIL import Image

    keys = [(int(s), i) for s in args.seeds.split(",") for i in range(args.per_seed)]
    if args.only:
        want = {tuple(int(v) for v in k.split("/")) for k in args.only.split(",")}
        keys = [k for k in keys if k in want]
    methods = [m for m in args.methods.split(",") if m]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for seed, i in keys:
            rgb, lines, script, spoil, meta = render(seed, i)
            path = folder / f"{seed}-{i:03d}-{spoil}-{script}.png"
            Image.fromarray(rgb).save(path)
            rows.append({"key": f"{seed}/{i}", "seed": seed, "script": script,
                         "spoil": spoil, "lines": lines, "path": str(path), **meta})
        cpu = {}
        for m in methods:
            c0 = time.process_time()
            texts = METHODS[m]([r["path"] for r in rows], args.threads)
            cpu[m] = time.process_time() - c0
            for r, t in zip(rows, texts, strict=True):
                r[m] = t
                r[f"acc-{m}"] = char_accuracy(_squeeze_cjk(t), "\n".join(r["lines"]))

    def mean(v):
        return sum(v) / len(v) if v else float("nan")

    print(f"{len(rows)} images, load {os.getloadavg()[0]:.1f}; CPU s: " +
          ", ".join(f"{m} {cpu[m]:.0f}" for m in methods))
    print("| set | images | " + " | ".join(methods) + " |")
    print("|---|---|" + "---|" * len(methods))
    picks = [("all", lambda r: True)] + \
        [(s, lambda r, s=s: r["spoil"] == s) for s in SPOILS] + \
        [(s, lambda r, s=s: r["script"] == s) for s in SCRIPTS] + \
        [(f"seed {s}", lambda r, s=s: r["seed"] == s) for s in sorted({r["seed"] for r in rows})]
    for name, pick in picks:
        sel = [r for r in rows if pick(r)]
        if sel:
            print(f"| {name} | {len(sel)} | " +
                  " | ".join(f"{mean([r[f'acc-{m}'] for r in sel]):.4f}" for m in methods) +
                  " |")
    if args.save:
        Path(args.save).write_text(json.dumps(rows, ensure_ascii=False, indent=0))


if __name__ == "__main__":
    main()
