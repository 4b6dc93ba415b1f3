"""A simplified Chinese label's "净" read as the variant "凈" (round 41's tea label,
`bench_ocr_user41.py`): on a simplified page a traditional-only character is written as its
simplified one where the recognizer gave that one a share in its column
(`variants.simplified_variants`); a traditional page keeps what was read.

The oracle is the renderer: each line is drawn in Noto Sans CJK (or AR PL UKai) with the
text it must read as."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.kernels.ocr.rec import ctc_decode
from skiff.kernels.ocr.variants import (
    rec_probs,
    settle_variants,
    simplified_page,
    simplified_variants,
)

SANS = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
BOLD = "/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc"
KAI = "/usr/share/fonts/truetype/arphic/ukai.ttc"


@functools.lru_cache(maxsize=4)
def _face(path: str, px: int):
    return ImageFont.truetype(path, px)


def _line(text: str, path: str, px: int) -> np.ndarray:
    try:
        face = _face(path, px)
    except OSError:
        pytest.skip(f"font {path} missing")
    im = Image.new("RGB", (int(face.getlength(text)) + 2 * px, int(px * 1.8)), (250, 250, 245))
    ImageDraw.Draw(im).text((px, int(px * 0.35)), text, font=face, fill=(20, 20, 20))
    return np.asarray(im)


def _read(pipe, lines, path, px):
    crops = [_line(t, path, px) for t in lines]
    probs = rec_probs(pipe, crops)
    return crops, probs, [ctc_decode(p[None], pipe.alphabet)[0][0] for p in probs]


def test_a_simplified_label_reads_its_jing(pipe):
    # a shop's product label: net weight and volume lines among simplified ones
    lines = ["有机绿茶礼盒", "净重：250克", "产地：浙江杭州", "净含量：500毫升"]
    for path in (BOLD,):
        crops, probs, read = _read(pipe, lines, path, 32)
        # the recognizer's own reading: the variant, surely (what the pipeline gave)
        assert "凈" in read[1] + read[3], read
        fixed = simplified_variants(pipe, read, crops)
        got = [fixed.get(i, t) for i, t in enumerate(read)]
        assert [g.replace(":", "：") for g in got] == lines, (path, read, got)


def test_a_traditional_page_keeps_its_characters(pipe):
    # the same label in traditional Chinese: the recognizer gives "净" and "里" a share in
    # "淨" and "裡"'s columns (AR PL UKai 24 px), so only the page's script may decide
    lines = ["有機綠茶禮盒", "淨含量：500毫升", "這裡禁止吸煙", "產地：浙江杭州"]
    crops, probs, read = _read(pipe, lines, KAI, 24)
    assert not simplified_page(read)
    assert simplified_variants(pipe, read, crops) == {}
    # the line alone would have been changed: the page's decision is what keeps it
    assert any(settle_variants(t, p, pipe.alphabet) != t
               for t, p in zip(read, probs, strict=True)), read


def test_a_sure_traditional_name_on_a_simplified_page_stays(pipe):
    # a shop's traditional name on a simplified page, read surely: the counterpart's share
    # in its columns is under P_ALT
    lines = ["欢迎光临", "台湾茶艺馆", "老店：鬆餅屋", "营业时间：9点至21点"]
    crops, _, read = _read(pipe, lines, SANS, 32)
    assert simplified_page(read)
    assert "鬆" in read[2], read
    fixed = simplified_variants(pipe, read, crops)
    assert "鬆" in fixed.get(2, read[2])


def test_a_japanese_page_is_no_simplified_page():
    # "国", "学", "东" count as simplified-only characters, but a page with kana is
    # Japanese: its kanji forms are its own
    page = ["国内線のりば", "东京駅から徒歩5分", "学生証を見せてください", "国际学会"]
    assert not simplified_page(page)
    assert simplified_page([t for t in page if not any("\u3041" <= c <= "\u30ff" for c in t)]
                           + ["欢迎光临", "请勿吸烟"])
