"""Round 33 (h8): the Jobs tab's resume button was shown for train jobs only, although its
tooltip says an OCR job goes on with the pages it did not read and ``%jobs resume`` takes
one. It is shown for every kind ``jobs resume`` takes; the oracle is ``jobs resume ID
--dry-run`` on an OCR job that could not read one of its images."""

from __future__ import annotations

import json

from PIL import Image

from skiff.cli import main
from skiff.widgets.monitor import JobMonitor


def test_an_ocr_job_that_can_go_on_has_its_resume_button(runs_dir, tmp_path, capsys):
    pages = tmp_path / "pages"
    pages.mkdir()
    Image.new("L", (64, 32), 255).save(pages / "blank.png")
    (pages / "broken.png").write_bytes(b"\x89PNG not an image")
    main(["ocr", str(pages), "--json", "--device", "cpu"])  # one input fails: exit 1
    job_id = json.loads(capsys.readouterr().out)["job"]["id"]
    assert main(["jobs", "resume", job_id, "--dry-run"]) == 0  # the oracle: it goes on
    capsys.readouterr()
    mon = JobMonitor(start=False)
    row = mon.rows[job_id]
    assert row.resume.layout.display != "none"
    row.update()
    assert not row.resume.disabled
