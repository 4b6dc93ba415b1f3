"""A traditional page's "淨" read as the variant "凈" (round 42's mirror: AR PL UKai 32 px),
written as the standard form where the recognizer gave it a share in its column
(`variants.simplified_variants` on a traditional page, `variants.standard_forms`); and a
kanji-only Japanese page (no kana) is neither script's page.

The oracle is the renderer: each line is drawn with the text it must read as."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.rec import ctc_decode
from skiff.kernels.ocr.variants import (
    japanese_forms,
    rec_probs,
    simplified_page,
    simplified_variants,
    standard_forms,
    traditional_page,
)

KAI = "/usr/share/fonts/truetype/arphic/ukai.ttc"


def _read(pipe, lines, path, px):
    try:
        face = ImageFont.truetype(path, px)
    except OSError:
        pytest.skip(f"font {path} missing")
    crops = []
    for t in lines:
        im = Image.new("RGB", (int(face.getlength(t)) + 2 * px, int(px * 1.8)), (250, 250, 245))
        ImageDraw.Draw(im).text((px, int(px * 0.35)), t, font=face, fill=(20, 20, 20))
        crops.append(np.asarray(im))
    probs = rec_probs(pipe, crops)
    return crops, [ctc_decode(p[None], pipe.alphabet)[0][0] for p in probs]


def test_a_traditional_label_reads_its_jing(pipe):
    lines = ["有機綠茶禮盒", "淨含量：500毫升", "這裡禁止吸煙", "產地：浙江杭州", "淨重：250克"]
    crops, read = _read(pipe, lines, KAI, 32)
    assert "凈" in "".join(read), read  # the recognizer's own reading: the variant
    assert traditional_page(read) and not simplified_page(read)
    fixed = simplified_variants(pipe, read, crops)
    got = [fixed.get(i, t) for i, t in enumerate(read)]
    assert [g.replace(":", "：") for g in got] == lines, (read, got)


def test_standard_forms_are_big5_forms():
    forms = standard_forms()
    assert forms["凈"] == "淨" and forms["説"] == "說" and forms["緑"] == "綠"
    # Hong Kong's own forms and characters of two meanings ("乾"/"幹") stay
    assert "啓" not in forms and "裏" not in forms
    assert "乾" not in forms and "幹" not in forms


def test_a_kanji_only_japanese_page_is_no_chinese_page():
    # "国", "学", "会" are simplified-only by the table but Japanese's own forms too
    for page in (["国立大学 会議室"], ["会員番号 学生証"], ["東京都 時間 電話 説明"],
                 ["東京駅 中央線 快速", "国際会議場"]):
        assert not simplified_page(page) and not traditional_page(page), page
    # a simplified page without kana is still one, a traditional one too
    assert simplified_page(["国际学会", "欢迎光临", "请勿吸烟"])
    assert traditional_page(["國立臺灣大學", "這裡是會議室"])


def test_a_japanese_receipt_reads_its_tax(pipe):
    """bench_ocr_user43's Japanese receipt as a phone photo: the recognizer reads "消费税"
    (the simplified "费", 0.52 against "費" 0.48), a form Japanese does not write; on a
    page with kana it is "費" (`variants.japanese_forms`)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import bench_ocr_user43 as bench
    from bench_ocr_probes import degrade

    assert japanese_forms()["费"] == "費" and "会" not in japanese_forms()
    k = [s.__name__ for s in bench.SCENES].index("japanese_receipt")
    img, truth = bench.japanese_receipt()
    got = pipe(np.asarray(degrade(img, "phone", k).convert("RGB"))).text.split("\n")
    assert "消費税 10% ¥181" in got and not any("费" in t for t in got), got
