"""``ocr FOLDER --np 2``: the job's progress counts every rank's part (round 30: it showed rank
0's, "12/22 images" of a 43-image folder). The oracle is the folder itself: every image read,
the job's done and total equal to its count, and the joined file has a line for each."""

from __future__ import annotations

import json

import pytest
from PIL import Image, ImageDraw

pytestmark = pytest.mark.mpi


def test_two_ranks_count_the_whole_folder(tmp_path):
    from skiff.jobs.launch import submit

    folder = tmp_path / "scans"
    folder.mkdir()
    words = ["alpha", "bravo", "charlie", "delta", "echo"]
    for i, word in enumerate(words):
        im = Image.new("RGB", (220, 60), "white")
        ImageDraw.Draw(im).text((10, 20), word.upper(), fill="black", font_size=24)
        im.save(folder / f"{i}.png")
    out = tmp_path / "r.jsonl"
    job, _ = submit("ocr", f"{folder} --np 2 --out {out}")
    job.wait(300)
    assert job.status == "done", job.status
    assert (job.state.done, job.state.total) == (len(words), len(words))
    lines = [json.loads(line) for line in open(out, encoding="utf-8")]
    assert len(lines) == len(words)
