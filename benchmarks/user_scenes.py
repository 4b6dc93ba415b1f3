"""Scoring shared by the user-folder benchmarks (``bench_ocr_user39.py`` .. ``user41``).

Each of those draws its scenes, reads them with skiff and RapidOCR and scores the readings
the same way: character accuracy and exact lines per scene, a table row each, the scenes
skiff reads under 1.000, a one-line summary and the results page. ``score_scenes`` does
that scoring; ``results_page`` writes the page's text; ``scene_main`` is the command line
they share (draw, degrade, save, read, score, write).
"""

from __future__ import annotations

import os
import time

import numpy as np

__all__ = ["exact_lines", "score_scenes", "results_page", "scene_main"]


def exact_lines(got: str, truth: str) -> tuple[int, int]:
    """How many of ``truth``'s lines are one of ``got``'s lines (each used once)."""
    have = [" ".join(t.split()) for t in got.splitlines()]
    n = 0
    want = [" ".join(t.split()) for t in truth.splitlines() if t.strip()]
    for t in want:
        if t in have:
            have.remove(t)
            n += 1
    return n, len(want)


def score_scenes(names, got, truths, cpu, echo=True):
    """Score the readings ``got`` (``{"skiff": [...], "RapidOCR": [...]}``, one text a
    scene) against ``truths``; ``names`` are the scenes' names, ``cpu`` each method's CPU
    seconds. Prints a line a scene (``echo``) and returns ``(rows, misses, summary)``: the
    results table's rows, the scenes skiff reads under 1.000 and the summary line."""
    from skiff.kernels.ocr.synth import char_accuracy

    acc = {m: [char_accuracy(t, truth) for t, truth in zip(got[m], truths, strict=True)]
           for m in got}
    ex = {m: [exact_lines(t, truth) for t, truth in zip(got[m], truths, strict=True)]
          for m in got}
    rows, misses = [], []
    for k, name in enumerate(names):
        s, r = acc["skiff"][k], acc["RapidOCR"][k]
        (es, n), (er, _) = ex["skiff"][k], ex["RapidOCR"][k]
        rows.append(f"| {name.replace('_', ' ')} | {s:.3f} | {es}/{n} | {r:.3f} | {er}/{n} |")
        if echo:
            print(f"{name:24s} skiff {s:.3f} {es}/{n}  RapidOCR {r:.3f} {er}/{n}", flush=True)
        if s < 1.0:
            misses.append(f"- {name.replace('_', ' ')} ({s:.3f} / {r:.3f}): skiff "
                          f"{got['skiff'][k]!r}; RapidOCR {got['RapidOCR'][k]!r}")
    mean = {m: float(np.mean(v)) for m, v in acc.items()}
    lines = {m: (sum(e for e, _ in v), sum(n for _, n in v)) for m, v in ex.items()}
    summary = (f"mean character accuracy: skiff {mean['skiff']:.3f}, RapidOCR "
               f"{mean['RapidOCR']:.3f}; exact lines: skiff {lines['skiff'][0]}/"
               f"{lines['skiff'][1]}, RapidOCR {lines['RapidOCR'][0]}/{lines['RapidOCR'][1]}; "
               f"CPU s: skiff {cpu['skiff']:.1f}, RapidOCR {cpu['RapidOCR']:.1f}")
    return rows, misses, summary


def results_page(round_no, script, a, n_scenes, rows, misses, summary) -> str:
    """The results page's text for round ``round_no``'s benchmark ``script`` (its file's
    name) run with the options ``a`` (``threads``, ``only``, ``degrade``)."""
    load = " / ".join(f"{v:.2f}" for v in os.getloadavg())
    only = f" --only {' '.join(a.only)}" if a.only else ""
    deg = f" --degrade {a.degrade}" if a.degrade else ""
    return "\n".join([
        f"# OCR of a user's own folder (round {round_no}): skiff and RapidOCR", "",
        f"Command: `OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/{script} "
        f"--threads {a.threads}{only}{deg}`  ",
        f"Machine: 2 CPUs, {a.threads} threads per method; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average at the end {load}.",
        "", f"{n_scenes} scenes (see the benchmark's docstring), RapidOCR 3.10 at "
        "`limit_type=max, 960`. CPU seconds include the warm-up image and the models' loading.",
        "", summary[0].upper() + summary[1:] + ".", "",
        "| scene | skiff | skiff lines | RapidOCR | RapidOCR lines |", "|---|---|---|---|---|",
        *rows, "", "Scenes skiff reads under 1.000:", "", *(misses or ["- none"]), ""])


def scene_main(round_no, script, doc, scenes, clean, argv=None) -> None:
    """The command line of round ``round_no``'s user-folder benchmark ``script`` (its
    path): draws ``scenes`` (functions returning ``(image, lines)``), degrades them with
    ``--degrade``, saves them with ``--save``, reads them with skiff and RapidOCR (``--skiff-only``
    leaves RapidOCR out and writes no page), scores the readings after ``clean`` (the text
    normalisation of both sides) and writes the results page beside the others."""
    import argparse
    from pathlib import Path

    from bench_ocr_layout import read_rapidocr, read_skiff
    from bench_ocr_probes import DEGRADE, degrade
    from results_file import write_keeping_earlier

    script = Path(script)
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", nargs="*", help="scene names (default: all)")
    ap.add_argument("--degrade", choices=DEGRADE)
    ap.add_argument("--out")
    ap.add_argument("--save", help="a folder to write the drawn images to (PNG)")
    ap.add_argument("--skiff-only", action="store_true", help="leave RapidOCR out")
    a = ap.parse_args(argv)
    stem = f"ocr-user{round_no}" + (f"-{a.degrade}" if a.degrade else "")
    a.out = a.out or str(script.resolve().parent / "results" / f"{stem}.md")
    drawn = [(s.__name__, *s()) for s in scenes if not a.only or s.__name__ in a.only]
    if a.degrade:
        drawn = [(name, degrade(im, a.degrade, k), lines)
                 for k, (name, im, lines) in enumerate(drawn)]
    if a.save:
        os.makedirs(a.save, exist_ok=True)
        for name, im, _ in drawn:
            im.save(os.path.join(a.save, f"{name}{'-' + a.degrade if a.degrade else ''}.png"))
    images = [np.asarray(im.convert("RGB")) for _, im, _ in drawn]
    truths = [clean("\n".join(lines)) for _, _, lines in drawn]
    got, cpu = {}, {}
    readers = [("skiff", read_skiff)] + ([] if a.skiff_only else [("RapidOCR", read_rapidocr)])
    for method, read in readers:
        c0 = time.process_time()
        texts, _ = read(images, a.threads)
        cpu[method] = time.process_time() - c0
        got[method] = [clean(t) for t in texts]
    if a.skiff_only:  # nothing to compare with: the truth stands in for the peer
        got["RapidOCR"], cpu["RapidOCR"] = truths, 0.0
    rows, misses, summary = score_scenes([name for name, _, _ in drawn], got, truths, cpu)
    print(summary)
    for m in misses:
        print(m)
    if a.skiff_only:
        return
    text = results_page(round_no, script.name, a, len(drawn), rows, misses, summary)
    write_keeping_earlier(a.out, text)
    print(f"wrote {a.out}")
