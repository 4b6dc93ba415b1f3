"""An OCR job resumed with pages kept from the run it goes on with failed while writing its
result ("'list' object has no attribute 'to_json'", round 32 to 33): the kept results were
rebound to the kept pages' pixel counts (the work estimate). Found by h8, round 33. The
oracle: the text drawn into every page, and the pages the first run wrote."""

import glob
import json
import time
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from skiff.cli import main
from skiff.jobs import launch
from skiff.kinds import KINDS

TEXT = "Invoice 4185"


def _face():
    found = sorted(glob.glob("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"))
    if not found:
        pytest.skip("DejaVu Sans is not installed")
    return found[0]


def test_a_resumed_ocr_job_keeps_its_pages_and_ends(runs_dir, tmp_path, capsys):
    pages = tmp_path / "pages"
    pages.mkdir()
    image = Image.new("RGB", (320, 80), "white")
    ImageDraw.Draw(image).text((16, 24), TEXT, fill="black",
                               font=ImageFont.truetype(_face(), 28))
    for k in range(30):
        image.save(pages / f"{k:02d}.png")
    kind = KINDS["ocr"]
    config = kind.to_config({**kind.command.defaults(), "inputs": [str(pages)],
                             "device": "cpu"})
    job = launch("ocr", config, runner="thread")
    deadline = time.monotonic() + 120  # cancelled once two pages are written (a condition)
    while not job.refresh().final and time.monotonic() < deadline:
        out = job.run_dir / "results.jsonl"
        if out.is_file() and out.read_text().count("\n") >= 2:
            job.cancel()
            break
        time.sleep(0.05)
    job.wait(timeout=120)
    if job.status != "cancelled":
        pytest.skip(f"the first run ended {job.status} before its cancel (a fast machine)")
    written = (job.run_dir / "results.jsonl").read_text().count("\n")
    main(["jobs", "resume", job.id, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["job"]["status"] == "done", doc["job"]["error"]
    assert doc["result"]["images"] == 30 and doc["result"]["kept"] >= min(written, 2)
    resumed = Path(doc["job"]["run_dir"])   # the resumed job's folder holds every page
    rows = [json.loads(line) for line in
            (resumed / "results.jsonl").read_text().splitlines() if line.strip()]
    texts = [r.get("text", "") for r in rows]
    assert len(texts) == 30 and all(TEXT in t for t in texts), texts
