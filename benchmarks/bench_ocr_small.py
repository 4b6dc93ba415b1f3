"""OCR on small degraded labels in faces no skiff set draws with (issue 14 item 1).

    .venv/bin/python benchmarks/bench_ocr_small.py [--seeds 31,131,531,631] [--per-seed 60]
        [--threads 1] [--save texts.json] [--against old.json] [--only i,j,...]

The unseen-face set of docs/ocr.md "Round 31, small degraded print" (h1's ``gen31.py``, kept
outside the repository until round 39): labels 200-350 px wide of 1-3 lines of 13-17 px print,
turned by a small angle, any angle or 180 degrees (a third each), blurred (sigma 0.5-1.5),
noised (20-35) and saved as JPEG 20-30. Label ``i`` of a seed is English, Chinese, Chinese,
English, mixed for ``i % 5`` = 0..4 (24 / 24 / 12 of 60). The English and Chinese labels are
drawn exactly as round 31 drew them (the same random stream, faces and texts as
``tests/kernels/ocr/test_flooded_twin_r31h19.py`` and ``test_trim_wide_r32h1.py`` reproduce);
the mixed labels' texts were not kept with the round's scripts and are redrawn here from
``MIX`` (so the mixed figures are not round 38's). Accuracy is character accuracy as in
``bench_ocr_hard.py`` (NFKC, lines joined by newlines, spaces between CJK characters removed),
the mean over labels. ``--save`` keeps every label's text; ``--against`` lists the labels
whose accuracy changed against such a file.
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
_LATIN = ["dejavu/DejaVuSerif-BoldItalic", "dejavu/DejaVuSansMono-Oblique",
          "liberation2/LiberationMono-Italic", "liberation2/LiberationSans-BoldItalic",
          "liberation2/LiberationSerif-Bold", "dejavu/DejaVuSerifCondensed-Bold",
          "dejavu/DejaVuSansCondensed-Bold", "liberation2/LiberationSans-Italic"]
LATIN = [(f"{T}/{f}.ttf", 0) for f in _LATIN]
CJK = [(f"{O}/NotoSerifCJK-Bold.ttc", 3), (f"{O}/NotoSansCJK-Regular.ttc", 7),
       (f"{O}/NotoSansCJK-Bold.ttc", 8), (f"{T}/arphic/ukai.ttc", 2),
       (f"{T}/wqy/wqy-zenhei.ttc", 2),
       (f"{O}/NotoSerifCJK-Regular.ttc", 0), (f"{O}/NotoSansCJK-Regular.ttc", 4)]
EN = ["Pharmacy Open", "Loading Bay 3", "Fire Door Keep Shut", "Price 12.99", "Visitors Sign In",
      "Lift Out of Order", "Bus Stop 41", "Tickets 8.00", "Fragile Handle", "Parcel 7731",
      "Menu of the Day", "Soup 4.20", "Car Wash", "Baggage Claim", "Toilets Upstairs",
      "Invoice 20931", "Paid by Card", "Subtotal 18.40", "VAT 3.68", "Thank You",
      "Hot Drinks", "Books and Maps", "Shoe Repair", "Level 2 Cafe", "Ring Bell",
      "Deliveries Only", "Mon-Fri 9-5", "Keep Left", "Wet Paint", "Dentist Room 4"]
ZH = ["药店营业中", "快递代收点", "请随手关门", "禁止吸烟", "外卖取餐处", "会员价九折", "洗车服务",
      "行李寄存", "电梯维修中", "二楼咖啡厅", "发票号码", "刷卡支付", "小计金额", "谢谢光临",
      "热饮冷饮", "图书文具", "修鞋配钥匙", "请按门铃", "送货通道", "油漆未干", "牙科诊室",
      "公交车站", "售票窗口", "易碎物品", "营业执照", "收费标准", "失物招领", "自助结账",
      "员工通道", "消毒完毕", "每日菜单", "汤类四元", "楼梯口", "访客登记", "注意安全"]
MIX = ["B2 出口", "电话 021-6688", "小计 18.40 元", "房间 305", "WiFi 密码 8866", "3 号楼 A 座",
       "营业时间 9:00-21:00", "会员价 68 元", "VIP 通道", "停车场 P2", "第 12 号窗口",
       "外卖 15 分钟", "ATM 取款机", "二维码支付", "请随手关门", "注意安全"]
KINDS = ("en", "zh", "zh", "en", "mix")


def render(seed: int, i: int):
    """Label ``i`` of set ``seed``: RGB pixels, its lines, kind, size, angle and face."""
    import cv2
    from PIL import Image, ImageDraw, ImageFont

    kind = KINDS[i % 5]
    rng = random.Random(f"r31h1-{seed}-{i}")
    size = rng.randint(13, 17)
    spec = rng.choice(LATIN if kind == "en" else CJK)
    font = ImageFont.truetype(spec[0], size, index=spec[1])
    width = rng.randint(200, 350)
    lines = rng.sample({"en": EN, "zh": ZH, "mix": MIX}[kind], rng.randint(1, 3))
    lines = [t for t in lines if font.getbbox(t)[2] <= width - 16] or [min(lines, key=len)]
    asc, desc = font.getmetrics()
    step = asc + desc + int(size * rng.uniform(0.4, 0.9))
    h = max(len(lines) * step + 16, int(width * rng.uniform(0.35, 0.7)))
    paper, ink = rng.randint(195, 250), rng.randint(0, 70)
    im = Image.new("L", (width, h), paper)
    d = ImageDraw.Draw(im)
    y0 = rng.randint(4, max(4, h - len(lines) * step - 4))
    for k, t in enumerate(lines):
        x = rng.randint(4, max(4, width - font.getbbox(t)[2] - 4))
        d.text((x, y0 + k * step), t, font=font, fill=ink)
    img = np.stack([np.asarray(im)] * 3, -1)
    angle = rng.choice([rng.uniform(-15, 15), rng.uniform(-180, 180), 180.0])
    img = np.asarray(Image.fromarray(img).rotate(angle, resample=Image.BICUBIC, expand=True,
                                                 fillcolor=(paper,) * 3))
    blur, noise, q = rng.uniform(0.5, 1.5), rng.uniform(20, 35), rng.randint(20, 30)
    out = cv2.GaussianBlur(img.astype(np.float32), (0, 0), blur)
    out += np.random.default_rng(rng.randint(0, 2**31)).normal(0, noise, out.shape)
    buf = io.BytesIO()
    Image.fromarray(np.clip(out, 0, 255).astype(np.uint8)).save(buf, format="JPEG", quality=q)
    rgb = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
    return rgb, lines, kind, size, round(angle, 1), os.path.basename(spec[0])


def main(argv=None):
    from benchmarks.bench_ocr_hard import _squeeze_cjk
    from skiff.kernels.ocr.synth import char_accuracy

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="31,131,531,631")
    ap.add_argument("--per-seed", type=int, default=60)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", default="", help="seed/i,... labels to read (default all)")
    ap.add_argument("--save", default="")
    ap.add_argument("--against", default="")
    args = ap.parse_args(argv)
    from PIL import Image

    from skiff.kernels.ocr import OcrPipeline

    keys = [(int(s), i) for s in args.seeds.split(",") for i in range(args.per_seed)]
    if args.only:
        want = {tuple(int(v) for v in k.split("/")) for k in args.only.split(",")}
        keys = [k for k in keys if k in want]
    pipe = OcrPipeline("ch", device="cpu", threads=args.threads, batch_size=8)
    rows, cpu0, t0 = [], time.process_time(), time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for seed, i in keys:
            rgb, lines, kind, size, angle, face = render(seed, i)
            path = Path(tmp) / f"{seed}-{i:03d}.png"
            Image.fromarray(rgb).save(path)
            text = pipe(str(path)).text
            acc = char_accuracy(_squeeze_cjk(text), "\n".join(lines))
            rows.append({"key": f"{seed}/{i}", "seed": seed, "kind": kind, "size": size,
                         "angle": angle, "face": face, "lines": lines, "text": text,
                         "acc": acc})
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0

    def mean(v):
        return sum(v) / len(v) if v else float("nan")

    print(f"{len(rows)} labels, {cpu:.0f} CPU s, {wall:.0f} wall s, "
          f"load {os.getloadavg()[0]:.1f}")
    print("| set | labels | accuracy |\n|---|---|---|")
    for name, pick in ([("all", lambda r: True)] +
                       [(k, lambda r, k=k: r["kind"] == k) for k in ("en", "zh", "mix")] +
                       [(f"seed {s}", lambda r, s=s: r["seed"] == s)
                        for s in sorted({r["seed"] for r in rows})]):
        sel = [r["acc"] for r in rows if pick(r)]
        print(f"| {name} | {len(sel)} | {mean(sel):.4f} |")
    if args.save:
        Path(args.save).write_text(json.dumps(rows, ensure_ascii=False, indent=0))
    if args.against:
        old = {r["key"]: r for r in json.loads(Path(args.against).read_text())}
        better = worse = 0
        for r in rows:
            o = old.get(r["key"])
            if o is None or abs(o["acc"] - r["acc"]) < 1e-9:
                continue
            better, worse = better + (r["acc"] > o["acc"]), worse + (r["acc"] < o["acc"])
            print(f"{r['key']} {o['acc']:.2f} -> {r['acc']:.2f}: {o['text']!r} -> "
                  f"{r['text']!r} (truth {' / '.join(r['lines'])!r})")
        print(f"{better} better, {worse} worse against {args.against}")


if __name__ == "__main__":
    main()
