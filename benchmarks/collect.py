"""Gather ``benchmarks/results/*.md`` into ``benchmarks/RESULTS.md``.

Each area's benchmark writes its own page under ``results/`` (so areas never edit one file at
once); this script puts them together in a fixed order with a short header.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ["jobs", "first-use", "widgets", "train-core", "layers", "train", "dist", "precision",
         "solve", "pde_user", "flow", "aero", "ocr", "ocr-documents", "ocr-photos", "ocr-hard",
         "ocr-memory",
         "ocr-layout", "ocr-crops", "ocr-displays", "ocr-textfree", "ocr-grainy",
         "ocr-scans", "ocr-probes", "ocr-probes-thumbnail",
         "ocr-probes-phone", "ocr-fields", "ocr-everyday", "ocr-everyday-thumbnail",
         "ocr-everyday-phone", "ocr-errands", "ocr-errands-thumbnail", "ocr-errands-phone",
         "ocr-finetune", "open-models", "gpu"]
TITLES = {
    "jobs": "Jobs: launch → first event (issue 2)",
    "first-use": "First use: the first %solve in a new kernel (issue 16)",
    "widgets": "Widgets: update batching (issue 2, 7)",
    "train-core": "Training core: attention and step (issue 3)",
    "layers": "Training layers vs PyTorch CPU: convolution, pools, norms (issue 3)",
    "train": "Trainer: gpt-mini vs PyTorch, packed attention, step memory (issue 3)",
    "dist": "Distributed training and the planner (issue 4)",
    "precision": "Mixed precision in the Trainer: step time and memory (issue 11)",
    "solve": "Solvers (issue 5)",
    "pde_user": "Solvers on a researcher's own discretisations: AMG vs pyamg (round 26)",
    "flow": "Flow around a cylinder: the DFG benchmark (issue 12)",
    "aero": "The train nose: learned grids, sweep, surrogate (issue 12)",
    "ocr-hard": "OCR on hard images: degraded, photo-like, seven-segment, vertical (issue 14)",
    "ocr": "OCR (issue 6)",
    "ocr-documents": "OCR on dense document pages (issue 14)",
    "ocr-photos": "OCR on phone photos of pages (issue 14)",
    "ocr-memory": "OCR memory: a huge image, RSS over 1,000 images (issues 14, 15)",
    "ocr-layout": "OCR of code screenshots: indentation kept (issue 14)",
    "ocr-crops": "OCR of crops already cut out: recognition only, against RapidOCR (issue 14)",
    "ocr-probes": "OCR of everyday scenes, case by case against RapidOCR (issue 14)",
    "ocr-probes-thumbnail": "OCR of everyday scenes as thumbnails (half size, JPEG 40; issue 14)",
    "ocr-probes-phone": "OCR of everyday scenes as phone shots (turned, blurred, noisy, JPEG; "
                        "issue 14)",
    "ocr-fields": "OCR of document fields: invoices, statements, IDs, amounts, ticks (issue 14)",
    "ocr-everyday": "OCR of everyday documents full of numbers: price tags, timetables, "
                    "calendars, payslips (issue 14)",
    "ocr-everyday-thumbnail": "OCR of everyday documents full of numbers as thumbnails (issue 14)",
    "ocr-everyday-phone": "OCR of everyday documents full of numbers as phone shots (issue 14)",
    "ocr-finetune": "Fine-tuning the recognizer vs PyTorch (issue 14)",
    "ocr-displays": "OCR of seven-segment displays and of numbers in ordinary faces (issue 14)",
    "ocr-textfree": "OCR of images with no text: lines made up (issue 14)",
    "ocr-grainy": "OCR of grainy pages (blur, noise, JPEG) against RapidOCR (issue 14)",
    "ocr-scans": "OCR of scanned PDFs (JPEG pages at 100 dpi, rendered at 200): spaces "
                 "(issue 14)",
    "open-models": "Open models: ERNIE-4.5 inference vs transformers (issue 13)",
    "gpu": "GPU check on one H200: gpu tests, solve, flow and training rows (`make gpu-check`)",
}

HEADER = """# Benchmark results

Every figure is a ratio against a peer measured in the same run, on this project's reference
machine (2 cores, 24 GiB, no GPU) unless a section says otherwise. Threads are set equally for
skiff and its peer (`OPENBLAS_NUM_THREADS=1`, one method per process). Regenerate a section with
its command (given in the section), then `python benchmarks/collect.py`. `make bench` runs all.
Sections measured while other work loaded the machine say so; their ratios are the figures to
read, not the absolute times.
"""


def main() -> None:
    pages = {p.stem: p for p in (HERE / "results").glob("*.md")}
    names = [n for n in ORDER if n in pages] + sorted(set(pages) - set(ORDER))
    parts = [HEADER]
    for name in names:
        body = pages[name].read_text().strip()
        lines = body.splitlines()
        if lines and lines[0].startswith("# "):
            body = "\n".join(lines[1:]).strip()
        parts.append(f"## {TITLES.get(name, name)}\n\nSource: `benchmarks/results/{name}.md`\n\n"
                     f"{body}\n")
    (HERE / "RESULTS.md").write_text("\n".join(parts))


if __name__ == "__main__":
    main()
