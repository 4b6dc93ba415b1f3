"""Rendered domain sets for fine-tuning tests and benchmarks: labelled crops in a style the
base recognizer reads poorly, written as a PaddleOCR label file.

``seven_segment``: meter, clock and scale readings ("4185.94", "12:45", "-03.2") in the DSEG7
fonts (Debian ``fonts-dseg``), dark or lit segments on a plain or LCD-green background, often
with the unlit segments showing faintly under the lit ones, as on a real display.

``brush``: short lines of Chinese in a brush font (AR PL UKai, Debian ``fonts-arphic-ukai``)
at 13-18 px, random strings of the characters of the rendered general text, so a run on it
shows what fine-tuning does to the base model's reading of ordinary Chinese (forgetting).

>>> folder = write_domain_set("/tmp/dseg", 20, seed=0)     # doctest: +SKIP
>>> # folder/labels.txt: "000.png\\t4185.94" ...
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np

from .data import render_line

__all__ = ["DSEG_FONTS", "DOMAINS", "dseg_fonts", "reading", "render_reading", "brush_text",
           "render_brush", "write_domain_set", "DomainFontsMissing"]

DSEG_DIR = "/usr/share/fonts/truetype/dseg"
DSEG_FONTS = ("DSEG7Classic-Regular.ttf", "DSEG7Classic-Bold.ttf", "DSEG7Modern-Regular.ttf",
              "DSEG7Classic-Italic.ttf", "DSEG7Modern-Bold.ttf")


class DomainFontsMissing(RuntimeError):
    """The DSEG fonts are not installed (Debian package fonts-dseg)."""


def dseg_fonts() -> list[str]:
    paths = [os.path.join(DSEG_DIR, f) for f in DSEG_FONTS]
    found = [p for p in paths if os.path.exists(p)]
    if not found:
        raise DomainFontsMissing(f"no DSEG7 font in {DSEG_DIR}: install fonts-dseg "
                                 "(tools/system-deps.sh)")
    return found


def reading(rng: random.Random) -> str:
    """A display reading: a decimal, a time, a signed value or a plain count."""
    kind = rng.random()
    if kind < 0.45:
        whole = str(rng.randint(0, 99999))
        return f"{whole}.{rng.randint(0, 99):0{rng.choice([1, 2])}d}"
    if kind < 0.65:
        return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
    if kind < 0.8:
        return f"-{rng.randint(0, 99):02d}.{rng.randint(0, 9)}"
    return str(rng.randint(0, 999999))


def render_reading(text: str, rng: random.Random, fonts: list[str]) -> np.ndarray:
    style = rng.random()
    if style < 0.5:  # dark segments on a grey/white display
        paper = tuple(rng.randint(190, 250) for _ in range(3))
        ink = tuple(rng.randint(0, 60) for _ in range(3))
    elif style < 0.8:  # LCD green
        paper = (rng.randint(140, 180), rng.randint(170, 210), rng.randint(100, 140))
        ink = tuple(rng.randint(10, 50) for _ in range(3))
    else:  # lit segments on black
        paper = tuple(rng.randint(0, 30) for _ in range(3))
        ink = (rng.randint(200, 255), rng.randint(40, 255), rng.randint(0, 80))
    ghost = ghost_ink = None
    if rng.random() < 0.6:  # unlit segments show faintly, as on a real display
        ghost = "".join("8" if ch.isdigit() or ch == "-" else ch for ch in text)
        mix = rng.uniform(0.12, 0.3)
        ghost_ink = tuple(int(p + (i - p) * mix) for p, i in zip(paper, ink))
    return render_line(text, rng.choice(fonts), rng.randint(24, 44), rng, ink=ink, paper=paper,
                       ghost=ghost, ghost_ink=ghost_ink)


BRUSH_FONT = "/usr/share/fonts/truetype/arphic/ukai.ttc"


def _brush_font() -> list[str]:
    if not os.path.exists(BRUSH_FONT):
        raise DomainFontsMissing(f"no {BRUSH_FONT}: install fonts-arphic-ukai "
                                 "(tools/system-deps.sh)")
    return [BRUSH_FONT]


def brush_text(rng: random.Random) -> str:
    """4-10 characters drawn from those of the general Chinese text."""
    from skiff.kernels.ocr import synth

    chars = sorted({c for line in synth.CHINESE for c in line if synth._CJK.match(c)})
    return "".join(rng.choice(chars) for _ in range(rng.randint(4, 10)))


def render_brush(text: str, rng: random.Random, fonts: list[str]) -> np.ndarray:
    return render_line(text, fonts[0], rng.randint(13, 18), rng)


# name -> (fonts, text, render)
DOMAINS = {"seven-segment": (dseg_fonts, reading, render_reading),
           "brush": (_brush_font, brush_text, render_brush)}


def write_domain_set(folder, n: int, *, seed: int = 0, name: str = "labels.txt",
                     domain: str = "seven-segment") -> Path:
    """``n`` rendered crops of ``domain`` (a key of DOMAINS) as PNGs plus ``labels.txt``;
    returns the labels file."""
    from PIL import Image

    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}: choose from {', '.join(DOMAINS)}")
    find_fonts, text_of, render = DOMAINS[domain]
    fonts = find_fonts()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(f"dseg-{seed}" if domain == "seven-segment" else f"{domain}-{seed}")
    lines = []
    for i in range(n):
        text = text_of(rng)
        crop = render(text, rng, fonts)
        file = f"{seed}-{i:05d}.png"
        Image.fromarray(crop).save(folder / file)
        lines.append(f"{file}\t{text}")
    path = folder / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
