"""Round 36: two jobs writing the same results at once (``ocr A/ --out r.jsonl`` and ``ocr
B/ --out r.jsonl`` from two terminals; two ``solve --save x.npz``) each wrote the file: the
last one's kept, the other's lost without a word, where two trainings sharing a
``--checkpoint-dir`` were refused. A job's ``--out``/``--save`` that a running job writes is
now refused the same way. The running job here is a demo job held running (``hold_until``)
with the config key of an OCR job's ``--out`` and a solve's ``--save``; the oracle is the
file left untouched, and the same command run once the holder has ended."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from skiff.cli import main
from skiff.jobs import launch


@pytest.fixture()
def held(tmp_path, runs_dir):
    jobs, go = [], tmp_path / "go"

    def hold(**config):
        job = launch("demo", {"steps": 2, "sleep": 0, "hold_at": 1, "hold_until": str(go),
                              **config}, runner="thread")
        jobs.append(job)
        return job

    yield hold
    go.write_text("")
    for job in jobs:
        job.wait(60)


def test_a_results_file_a_running_job_writes_is_refused(tmp_path, held, capsys):
    results, solution = tmp_path / "r.jsonl", tmp_path / "x.npz"
    results.write_text("kept\n")
    page = tmp_path / "page.png"
    Image.new("RGB", (64, 32), "white").save(page)
    ocr_job = held(out=str(results))
    solve_job = held(save=str(solution))
    assert main(["ocr", str(page), "--out", str(results)]) == 2
    err = capsys.readouterr().err
    assert (f"job {ocr_job.id} is running and writes its results to {results}, where this "
            f"job would write too: wait for it (jobs wait {ocr_job.id})") in err
    assert results.read_text() == "kept\n"
    assert main(["solve", "poisson", "--grid", "8x8", "--save", str(solution)]) == 2
    assert f"job {solve_job.id} is running and writes its solution to {solution}" in \
        capsys.readouterr().err
    assert not solution.exists()
    (tmp_path / "go").write_text("")
    assert solve_job.wait(60).status == "done"
    assert main(["solve", "poisson", "--grid", "8x8", "--save", str(solution)]) == 0
    assert np.load(solution)["field"].shape == (8, 8)
