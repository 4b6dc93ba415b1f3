"""Round 33 (h8): ``python -m skiff train mlp -o x`` (the notebook's -o) said "in a terminal,
--out DIR writes the results there", and ``train mlp --out DIR`` is then refused (--out is
ocr-rec's model folder). The way named now is one the terminal takes; the oracle is the
terminal itself run with it (``--dry-run``)."""

from __future__ import annotations

import re
import shlex

from skiff.cli import main


def _fix(capsys, words):
    assert main(words) == 2
    err = capsys.readouterr().err
    assert "-o/--output is for notebooks only" in err
    return err


def test_train_mlp_is_told_json(runs_dir, capsys):
    err = _fix(capsys, ["train", "mlp", "--steps", "5", "-o", "x"])
    line = re.search(r": python -m skiff (train .*) > FILE", err).group(1)
    assert "--out " not in err and "--out DIR" not in err
    assert main([*shlex.split(line), "--dry-run"]) == 0  # the oracle: the terminal takes it


def test_ocr_rec_is_still_told_out(runs_dir, tmp_path, capsys):
    labels = tmp_path / "labels.txt"
    labels.write_text("a.png\t123\n", encoding="utf-8")
    err = _fix(capsys, ["train", "ocr-rec", "--data", str(labels), "-o", "x"])
    assert "--out DIR writes the results there" in err
    assert main(["train", "ocr-rec", "--data", str(labels), "--out", str(tmp_path / "rec"),
                 "--dry-run"]) == 0
