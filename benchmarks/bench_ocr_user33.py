"""OCR of a user's own folder, round 33: skiff against RapidOCR 3.10, scene by scene.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_ocr_user33.py [--only NAME ...]
        [--degrade thumbnail|phone]

Kinds no earlier benchmark draws, each seeded and with its truth in reading order: a slide
with drawn bullets, a numbered list and indented sub-points; a two-column academic page
with a figure caption, footnotes and a page number; a business card; shop price tags with
currency signs and struck-through old prices; a chat screenshot with timestamps and read
ticks; a mixed Chinese-English settings screen at 125 % and 150 % scaling; Japanese with
kana; a traditional Chinese notice; a fax page (1-bit, 204 x 98 dpi: squashed rows); a
spreadsheet screenshot; a landscape page of a PDF. Faces the tests seldom use (DejaVu Serif
Condensed, Liberation Sans Italic and Mono Italic, Noto Serif CJK Bold, DSEG7). Read and
scored as ``bench_ocr_everyday.py`` reads its scenes (character accuracy, a run of spaces
one, spaces between CJK characters dropped, the order of lines counting); writes
``results/ocr-user33[-KIND].md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_ocr_everyday import compare, table  # noqa: E402
from bench_ocr_probes import FONTS, canvas, font, lines_at  # noqa: E402

FONTS.setdefault("serif-cond", "truetype/dejavu/DejaVuSerifCondensed.ttf")
FONTS.setdefault("lib-sans-italic", "truetype/liberation2/LiberationSans-Italic.ttf")
FONTS.setdefault("lib-sans-bold", "truetype/liberation2/LiberationSans-Bold.ttf")
FONTS.setdefault("mono-italic", "truetype/liberation2/LiberationMono-Italic.ttf")
FONTS.setdefault("cjk-serif-bold", "opentype/noto/NotoSerifCJK-Bold.ttc")
FONTS.setdefault("seg7", "truetype/dseg/DSEG7Classic-Regular.ttf")

SCENES = []


def scene(fn):
    SCENES.append(fn)
    return fn


def _dot(d, x, y, r, fill=(0, 0, 0)):
    d.ellipse((x - r, y - r, x + r, y + r), fill=fill)


@scene
def slide_bullets_and_numbers():
    im, d = canvas(1280, 720)
    d.text((70, 40), "Launch plan", font=font("sans-bold", 52), fill=(20, 40, 90))
    f = font("sans", 28)
    out = ["Launch plan"]
    y = 150
    for kind, text in (("dot", "Beta opens on 3 March"), ("sub", "Invite 200 users"),
                       ("sub", "Collect feedback weekly"), ("dot", "Pricing"),
                       ("num1", "Free tier up to 5 GB"), ("num2", "Pro at $9 a month"),
                       ("num3", "Teams by quote")):
        if kind == "dot":
            _dot(d, 92, y + 17, 6)
            d.text((115, y), text, font=f, fill=0)
            out.append("• " + text)
        elif kind == "sub":
            d.text((140, y), "–", font=f, fill=0)
            d.text((170, y), text, font=f, fill=0)
            out.append("– " + text)
        else:
            n = kind[-1] + "."
            d.text((140, y), n, font=f, fill=0)
            d.text((175, y), text, font=f, fill=0)
            out.append(f"{n} {text}")
        y += 66
    return im, out


@scene
def two_column_paper():
    im, d = canvas(1100, 900)
    d.text((200, 30), "Sparse Solvers for Shallow Water", font=font("lib-serif", 34), fill=0)
    left = ["We study the cost of solving", "the shallow water equations on",
            "unstructured meshes with a", "multigrid preconditioner.1",
            "Results hold for meshes up", "to ten million cells."]
    right = ["Figure 2 compares the time", "per step for three solvers.",
             "The algebraic variant wins", "when the mesh is irregular.2"]
    out = ["Sparse Solvers for Shallow Water"]
    out += lines_at(d, left, "lib-serif", 22, 60, 120, 36)
    d.rectangle((580, 120, 1040, 340), outline=(0, 0, 0), fill=(235, 235, 235))
    d.text((600, 355), "Figure 2: time per step.", font=font("lib-serif", 18), fill=0)
    right_out = lines_at(d, right, "lib-serif", 22, 580, 400, 36)
    out += ["Figure 2: time per step.", *right_out]
    d.line((60, 740, 400, 740), fill=0, width=1)
    notes = ["1 Smoothed aggregation, two levels.", "2 Measured on one core."]
    out += lines_at(d, notes, "lib-serif", 15, 60, 755, 24)
    d.text((540, 850), "7", font=font("lib-serif", 18), fill=0)
    out.append("7")
    return im, out


@scene
def business_card():
    im, d = canvas(700, 400, (250, 248, 240))
    d.text((50, 50), "Dr. Anna Lindqvist", font=font("serif-cond", 36), fill=(20, 20, 60))
    d.text((50, 105), "Senior Hydrologist", font=font("lib-sans-italic", 22), fill=(90, 90, 90))
    d.line((50, 150, 650, 150), fill=(180, 150, 80), width=2)
    lines = ["+46 8 555 012 34", "anna.lindqvist@hydro.se", "Kungsgatan 12, 111 43 Stockholm"]
    return im, ["Dr. Anna Lindqvist", "Senior Hydrologist",
                *lines_at(d, lines, "lib-sans", 20, 50, 190, 44, (40, 40, 40))]


@scene
def price_tags_struck():
    im, d = canvas(960, 300, (245, 245, 245))
    out = []
    tags = [("Kettle", "$39.99", "$24.99"), ("Toaster", "£45.00", "£29.50"),
            ("Blender", "€89,00", "€59,00")]
    for i, (name, old, new) in enumerate(tags):
        x = 30 + i * 310
        d.rectangle((x, 30, x + 280, 260), fill=(255, 255, 255), outline=(200, 0, 0), width=3)
        d.text((x + 20, 50), name, font=font("lib-sans-bold", 28), fill=0)
        fo = font("lib-sans", 22)
        d.text((x + 20, 110), old, font=fo, fill=(110, 110, 110))
        w = d.textlength(old, font=fo)
        d.line((x + 18, 123, x + 22 + w, 123), fill=(110, 110, 110), width=2)
        d.text((x + 20, 160), new, font=font("lib-sans-bold", 48), fill=(200, 0, 0))
        out.append((name, old, new))
    # a person reads tag by tag
    return im, [s for t in out for s in t]


@scene
def chat_with_timestamps():
    im, d = canvas(640, 520, (230, 236, 242))
    f, ft = font("sans", 18), font("sans", 12)
    msgs = [("left", "Did the parcel arrive?", "09:41"), ("right", "Yes, this morning", "09:43"),
            ("left", "Great! Is the lamp OK?", "09:44"),
            ("right", "Works fine, thanks :)", "09:52")]
    out = []
    for i, (side, t, ts) in enumerate(msgs):
        w, y = d.textlength(t, font=f) + 90, 30 + i * 115
        x = 20 if side == "left" else 620 - w
        d.rounded_rectangle((x, y, x + w, y + 56), 14,
                            fill=(255, 255, 255) if side == "left" else (200, 230, 255))
        d.text((x + 14, y + 10), t, font=f, fill=(20, 20, 20))
        d.text((x + w - 50, y + 36), ts, font=ft, fill=(120, 120, 120))
        out += [t, ts]
    return im, out


def _ui_zh_en(scale):
    from PIL import Image

    im, d = canvas(520, 260, (248, 248, 250))
    rows = [("设置 Settings", None), ("Wi-Fi 无线网络", "已连接"), ("蓝牙 Bluetooth", "关闭"),
            ("显示与亮度 Display", "自动"), ("关于本机 About", "v14.2")]
    out = []
    for i, (a, b) in enumerate(rows):
        y = 20 + i * 46
        d.text((20, y), a, font=font("cjk", 17 if i else 20), fill=0)
        if b:
            fb = font("cjk", 15)
            d.text((500 - d.textlength(b, font=fb), y + 2), b, font=fb, fill=(120, 120, 120))
        out.append(a + (" " + b if b else ""))
    w, h = im.size
    return im.resize((round(w * scale), round(h * scale)), Image.BILINEAR), out


@scene
def ui_zh_en_125():
    return _ui_zh_en(1.25)


@scene
def ui_zh_en_150():
    return _ui_zh_en(1.5)


@scene
def japanese_kana():
    im, d = canvas(760, 240)
    lines = ["ご注文ありがとうございます。", "お届け予定日：１２月８日（火）",
             "カスタマーサポートまでお問い合わせください。"]
    return im, lines_at(d, lines, "cjk", 26, 30, 30, 64)


@scene
def traditional_notice():
    im, d = canvas(760, 260, (255, 252, 240))
    d.text((30, 20), "停車場使用須知", font=font("cjk-serif-bold", 34), fill=(120, 0, 0))
    lines = ["營業時間：每日上午七時至晚間十一時", "逾時停車每小時收費新臺幣四十元",
             "請勿於消防通道停放車輛"]
    return im, ["停車場使用須知", *lines_at(d, lines, "cjk-serif", 24, 30, 90, 50)]


@scene
def fax_page_204x98():
    from PIL import Image

    im, d = canvas(1100, 520)
    lines = ["FAX  From: Nordic Pumps AB  Page 1/2", "Attn: Purchasing, ref. PO-88213",
             "Please confirm delivery of 40 units", "by Friday 12 December.",
             "Regards, M. Berg"]
    ts = lines_at(d, lines, "mono-italic", 24, 50, 40, 90)
    fax = im.resize((1100, 260), Image.BILINEAR).convert("1")   # 98 dpi rows
    return fax.resize((1100, 520), Image.NEAREST).convert("RGB"), ts  # as a viewer doubles it


@scene
def spreadsheet_screenshot():
    im, d = canvas(760, 240)
    rows = [("SKU", "Item", "Stock", "Price"), ("A-104", "Desk lamp", "38", "24.90"),
            ("A-221", "Office chair", "5", "189.00"), ("B-017", "Monitor arm", "0", "59.50"),
            ("C-330", "USB hub", "112", "17.25")]
    for r in range(len(rows) + 1):
        d.line((10, 10 + r * 40, 750, 10 + r * 40), fill=(210, 210, 210))
    for x in (10, 150, 420, 560, 750):
        d.line((x, 10, x, 10 + 40 * len(rows)), fill=(210, 210, 210))
    return im, table(d, rows, (18, 158, 552, 742), "lib-sans", 16, 20, 40, right=(2, 3))


@scene
def clock_seven_segment():
    im, d = canvas(620, 200, (10, 10, 10))
    d.text((40, 50), "12:45", font=font("seg7", 90), fill=(255, 60, 40))
    return im, ["12:45"]


@scene
def landscape_pdf_page():
    """A landscape page as a PDF viewer renders it when the page's /Rotate is 90: sideways."""
    im, d = canvas(1100, 700)
    d.text((60, 40), "Quarterly shipments by region", font=font("sans-bold", 34), fill=0)
    rows = [("Region", "Q1", "Q2", "Q3", "Q4"), ("North", "1,210", "1,340", "1,190", "1,505"),
            ("South", "880", "915", "1,002", "1,120")]
    out = ["Quarterly shipments by region"]
    out += table(d, rows, (60, 400, 600, 800, 1000), "sans", 24, 140, 60)
    return im.rotate(90, expand=True), out


@scene
def dark_slide_coloured_bullets():
    im, d = canvas(1280, 720, (28, 32, 44))
    d.text((70, 50), "What we learned", font=font("lib-sans-bold", 50), fill=(255, 255, 255))
    f = font("lib-sans", 30)
    out = ["What we learned"]
    for i, t in enumerate(["Users want offline mode", "Setup takes under 5 minutes",
                           "Support tickets fell by 40%", "Docs need more examples"]):
        y = 170 + i * 80
        _dot(d, 95, y + 19, 7, (90, 200, 255))
        d.text((120, y), t, font=f, fill=(235, 235, 235))
        out.append("• " + t)
    return im, out


@scene
def lettered_list_serif():
    im, d = canvas(900, 330)
    out = lines_at(d, ["Steps before the audit:", "a) Export the ledger", "b) Check the VAT codes",
                       "c) Sign and date page 4"], "serif-cond", 24, 40, 30, 64)
    return im, out


@scene
def japanese_vertical_label():
    """A label printed top to bottom (tategaki), one column: read as one line."""
    im, d = canvas(120, 520, (255, 250, 240))
    f = font("cjk", 40)
    text = "営業時間のご案内"
    for i, ch in enumerate(text):
        d.text((38, 20 + i * 58), ch, font=f, fill=(30, 30, 30))
    return im, [text]


@scene
def traditional_menu_prices():
    im, d = canvas(620, 300, (250, 245, 235))
    rows = [("牛肉麵", "NT$180"), ("滷肉飯", "NT$45"), ("珍珠奶茶（大）", "NT$65"),
            ("燙青菜", "NT$40")]
    return im, table(d, rows, (30, 590), "cjk-serif", 26, 30, 62, right=(1,))


@scene
def two_column_aligned_lines():
    """Both columns' lines on the same baselines, as a journal sets them."""
    im, d = canvas(1100, 760)
    d.text((330, 30), "2  Related Work", font=font("lib-serif", 30), fill=0)
    left = ["Early work used direct solvers", "for small meshes, where the",
            "fill-in stays modest.", "Krylov methods replaced them",
            "once meshes grew past a", "million cells [3]."]
    right = ["Multigrid was first applied to", "the shallow water system by",
             "Lee and Park [5].", "Their smoother is the one we",
             "build on in Section 4, with", "a new coarse grid."]
    out = ["2 Related Work"]
    out += lines_at(d, left, "lib-serif", 22, 60, 110, 34)
    out += lines_at(d, right, "lib-serif", 22, 580, 110, 34)
    # a footnote across the page's width, under both columns: read after them
    d.line((60, 640, 1040, 640), fill=0)
    out += lines_at(d, ["3 See also the survey in [7], which compares direct and iterative "
                        "solvers on meshes of up to a billion cells."], "lib-serif", 15, 60,
                    652, 22)
    d.text((540, 715), "12", font=font("lib-serif", 18), fill=0)
    return im, out + ["12"]


def main(argv=None) -> None:
    compare(SCENES, "user33", "a user's own folder (round 33)", __file__, argv)


if __name__ == "__main__":
    main()
