"""Round 34 (h8): ``%ocr page.png --out - --wait`` (the terminal's "the text on stdout")
showed the run's repr and not a word of the text; now the cell prints the text, as
``python -m skiff ocr page.png --out -`` prints it on stdout. Without ``--wait`` a line says
where the text will be. The oracle: the terminal's stdout for the same image (and the
rendered page's own text)."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell


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


def test_out_dash_prints_the_text_in_the_cell(shell, page, tmp_path, runs_dir, capsys):
    from PIL import Image

    path = tmp_path / "page.png"
    Image.fromarray(page.image).save(path)
    shell.run_line_magic("ocr", f"{path} --device cpu --out - --wait -o j")
    cell = capsys.readouterr().out
    job = shell.user_ns["j"]
    assert job.status == "done", job.error
    # the terminal's ``python -m skiff ocr`` in this process (``skiff.__main__`` is
    # ``sys.exit(main())``): a subprocess paid the interpreter's and the OCR's imports again
    # (round 46)
    from skiff.cli import main

    status = main(["ocr", str(path), "--device", "cpu", "--out", "-"])
    terminal = capsys.readouterr()
    assert status == 0, terminal.err
    assert terminal.out.strip() == page.text
    assert terminal.out.strip() in cell and "OcrRun(" not in cell


def test_without_wait_a_line_says_where_the_text_goes(shell, page, tmp_path, runs_dir,
                                                      capsys):
    from PIL import Image

    path = tmp_path / "page.png"
    Image.fromarray(page.image).save(path)
    job = shell.run_line_magic("ocr", f"{path} --device cpu --out -")
    job.wait()
    out = capsys.readouterr().out
    assert "--out -: the text is printed here when the job ends with --wait" in out
    assert job.value.text.strip() == page.text
    shell.run_line_magic("ocr", f"{path} --device cpu --wait")   # no --out -: the value
    assert "the text is printed here" not in capsys.readouterr().out
