"""Round 33 (h8): ``python -m skiff predict JOB DATA`` had no notebook form (one grammar:
what works in a terminal works in a magic). ``%predict JOB DATA...`` takes the same words
(JOB also a job variable), shows the rows as a table and the score; ``--json`` prints the
terminal's document, ``-o NAME`` keeps the table and is refused in a terminal. The oracle is
the terminal's own output for the same words."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from IPython.core.error import UsageError
from PIL import Image

from skiff.cli import main


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from skiff.kernels.train import models

    tmp = tmp_path_factory.mktemp("magic-predict")
    run = tmp / "run"
    run.mkdir()
    models.get("cnn", in_channels=1, num_classes=2, image_size=16).save(str(run / "model.npz"))
    (run / "images.json").write_text(json.dumps({"classes": ["dark", "light"], "size": 16,
                                                 "channels": 1, "mean": [0.5], "std": [0.2]}))
    rng = np.random.default_rng(5)
    Image.fromarray(rng.integers(0, 256, (20, 20), dtype=np.uint8)).save(tmp / "a.png")
    for cls, level in (("dark", 40), ("light", 210)):
        (tmp / "new" / cls).mkdir(parents=True)
        for k in range(2):
            pixels = np.clip(rng.normal(level, 30, (18, 18)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(tmp / "new" / cls / f"{k}.png")
    return tmp, run


@pytest.fixture(scope="module")
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_the_magic_shows_the_terminals_rows(run, shell, capsys):
    tmp, run_dir = run
    words = [str(run_dir), str(tmp / "a.png"), str(tmp / "new")]
    assert main(["predict", *words, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)  # the oracle: the terminal's document
    table = shell.run_line_magic("predict", " ".join(words))
    assert list(table["file"]) == doc["files"]
    assert list(table["class predicted"]) == doc["predictions"]
    assert np.allclose(table["probability"], doc["probabilities"], atol=5e-5)
    shell.run_line_magic("predict", " ".join([*words, "--json"]))
    assert json.loads(capsys.readouterr().out) == doc


def test_a_job_variable_the_score_and_o_name(run, shell, capsys):
    tmp, run_dir = run
    assert main(["predict", str(run_dir), str(tmp / "new")]) == 0
    terminal = capsys.readouterr().out
    score = [ln[2:] for ln in terminal.splitlines() if ln.startswith("# accuracy")]
    shell.user_ns["trained"] = SimpleNamespace(run_dir=run_dir, kind="train", id="x")
    table = shell.run_line_magic("predict", f"trained {tmp / 'new'} -o preds")
    assert shell.user_ns["preds"] is table and len(table) == 4
    assert list(table["class"]) == ["dark", "dark", "light", "light"]
    assert score and score[0] in capsys.readouterr().out


def test_mistakes_are_one_line(run, shell, capsys):
    tmp, run_dir = run
    with pytest.raises(UsageError, match="gone.png"):
        shell.run_line_magic("predict", f"{run_dir} {tmp / 'gone.png'}")
    with pytest.raises(UsageError, match="no job 'nojob'"):
        shell.run_line_magic("predict", f"nojob {tmp / 'a.png'}")
    assert main(["predict", str(run_dir), str(tmp / "a.png"), "-o", "p"]) == 2
    assert "-o/--output is for notebooks only" in capsys.readouterr().err
