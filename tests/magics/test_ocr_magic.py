"""%ocr through a real IPython shell: paths, folders, notebook variables, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.jobs import Job


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


@pytest.fixture(scope="module")
def page():
    from skiff.kernels.ocr.synth import FontsMissing, render_sample

    try:
        return render_sample("clean", 1, seed=6)
    except FontsMissing as exc:
        pytest.skip(str(exc))


def test_variable_holding_an_image_and_a_list(shell, page, capsys):
    from PIL import Image

    shell.user_ns["scan"] = page.image
    job = shell.run_line_magic("ocr", "scan --device cpu --wait -o ocr_job")
    assert isinstance(job, Job) and shell.user_ns["ocr_job"] is job
    assert job.status == "done", job.error
    assert job.value.results[0].text == page.text
    assert job.result["images"] == 1 and job.config["inputs"] == ["<variable scan>"]
    shell.user_ns["scans"] = [page.image, Image.fromarray(page.image)]
    job = shell.run_line_magic("ocr", "scans --device cpu --batch-size 2 --wait")
    assert [r.text for r in job.value.results] == [page.text, page.text]
    html = job.value._repr_html_()
    assert "<img" in html and "<table>" in html
    # a list written on the line, as %train takes (X, y): it used to be read as a glob
    job = shell.run_line_magic("ocr", "[scan, scan] --device cpu --batch-size 2 --wait")
    assert job.status == "done", job.error
    assert [r.text for r in job.value.results] == [page.text, page.text]
    from skiff.kinds.ocr import KIND

    for glob in ("[ab]*.png --out -", "[nosuch] --wait"):  # no list of images: a path
        assert KIND.preparse(glob, {"scan": page.image})[0] == glob


def test_path_folder_and_jsonl(shell, page, tmp_path):
    from PIL import Image

    for k in range(3):
        Image.fromarray(page.image).save(tmp_path / f"p{k}.png")
    out = tmp_path / "r.jsonl"
    job = shell.run_line_magic("ocr", f"{tmp_path} --device cpu --out {out} --wait")
    assert job.status == "done", job.error
    docs = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [d["text"] for d in docs] == [page.text] * 3
    state = job.state
    assert state.done == 3 and state.total == 3  # the progress bar's figures
    glob_job = shell.run_line_magic("ocr", f"'{tmp_path}/p1*.png' --device cpu --wait")
    assert glob_job.result["images"] == 1


def test_usage_errors(shell, tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        shell.run_line_magic("ocr", f"{tmp_path}/missing.png")
    with pytest.raises(UsageError, match="ch-v4"):
        shell.run_line_magic("ocr", f"{tmp_path} --lang xx")
    shell.user_ns["not_an_image"] = {"a": 1}
    with pytest.raises(UsageError, match="not_an_image"):
        shell.run_line_magic("ocr", "not_an_image")
    shell.user_ns["img_var"] = np.zeros((8, 8), np.uint8)
    with pytest.raises(UsageError, match="either notebook variables or paths"):
        shell.run_line_magic("ocr", f"img_var {tmp_path}")
    with pytest.raises(UsageError, match="thread"):
        shell.run_line_magic("ocr", "img_var --np 2")
    # a mistyped variable: the closest variable holding images is named (modules such as
    # numpy, which have .shape and .dtype, are no images)
    shell.user_ns["np"] = np
    shell.user_ns["photos"] = [np.zeros((8, 8), np.uint8)]
    with pytest.raises(UsageError, match=r"no such file, folder or pattern: 'photo', nor a "
                                         r"notebook variable \(did you mean 'photos'\?\)"):
        shell.run_line_magic("ocr", "photo")
