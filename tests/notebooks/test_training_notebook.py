"""notebooks/02-training.ipynb runs top to bottom in quick mode: two train jobs end done,
the trained models sample text."""

from __future__ import annotations

import json
import math
import re

import pytest

from tests.notebook_util import execute_notebook, outputs_text
from tests.notebooks.build_check import build_main

pytestmark = [pytest.mark.notebook, pytest.mark.slow]


def test_training_notebook_is_built_from_its_source(capsys):
    # in this process (a subprocess of build.py took 1.8 CPU s, 5-14 s wall under load)
    assert build_main(["--check", "02-training"]) == 0, capsys.readouterr().out


def test_training_notebook_runs(runs_dir):
    nb = execute_notebook("02-training.ipynb", timeout=120)
    text = outputs_text(nb)
    assert "quick mode" in text and "parameters" in text
    assert "TrainResult" in text and "data:image/png;base64" in text  # the result's repr
    # the held-out loss shows learning (well below guessing, 5.55), and the notebook says
    # whether training and held-out losses stay together or part (overfitting)
    # the figures the text gives of the data: "about 50 KB" of text, "0.9 million parameters
    # against 47 KB" to train on (round 44: it said 45; 365 blocks of 128 bytes are 46.7 KB)
    m = re.search(r"\((\w+), (\d+) bytes, block_size=(\d+),.* - (\d+) blocks to train on", text)
    total, block, blocks = int(m.group(2)), int(m.group(3)), int(m.group(4))
    prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert f"about {round(total / 1e4) * 10} KB" in prose, total
    params = int(re.search(r"^([0-9,]+) parameters$", text, re.M).group(1).replace(",", ""))
    assert f"{params / 1e6:.1f} million parameters against {round(blocks * block / 1e3)} KB" \
        in " ".join(prose.split()), (params, blocks * block)
    # "strategy="auto" resolves to the single device here and says why" (round 44: the cell
    # printed the planner's search, which names neither)
    assert re.search(r"^single \(dp=1,tp=1,pp=1,micro=\d+\) on 1 device: the model fits one "
                     r"device whole", text, re.M), text[-2000:]
    # what the text says of the quick run (round 44: checked by nobody): "20 steps, a loss
    # near 3", and greedy decoding repeating "the" and "t"
    final = float(re.search(r"tokens/s, final loss ([0-9.]+)", text).group(1))
    assert abs(final - 3) < 0.5, final
    greedy = re.search(r"--- temperature 0.0\nShall I compare thee(.*)", text).group(1)
    assert set(greedy.split()) <= {"the", "t"} and "the" in greedy.split(), greedy
    m = re.search(r"loss on training blocks ([0-9.]+), on held-out blocks ([0-9.]+)", text)
    assert m and float(m.group(2)) < 4.0, m and m.group(0)
    assert "carries over to new text" in text or "the curves have parted" in text
    jobs = [json.loads((r / "config.json").read_text()) for r in runs_dir.iterdir()]
    assert sorted(j["kind"] for j in jobs) == ["train"] * 6
    # a folder of drawn shapes: the cnn job and new images read like its training set
    m = re.search(r"done: held-out accuracy ([0-9.]+), on new images ([0-9.]+)", text)
    assert m and float(m.group(1)) > 0.7 and float(m.group(2)) > 0.7, m and m.group(0)
    assert "predicted classes" in text
    saved = [line for line in text.splitlines() if re.fullmatch(r"\w+ (True|False)", line)]
    assert saved == ["done True"], saved  # own arrays trained by the magic, saved, loaded
    # early stopping: the wide net stops and evaluates to the best validation it saw
    m = re.search(r"early stopping: .* at step (\d+); the weights of step (\d+) kept\n"
                  r"held-out loss ([0-9.]+) \(the best seen: ([0-9.]+); the last", text)
    assert m and int(m.group(2)) < int(m.group(1)) and m.group(3) == m.group(4), m
    # the curve it stopped on: it fell well below guessing (ln 2, two classes), then climbed
    # (with 60 rows the best was the first validation, 0.699: nothing learnt, round 29)
    curve = [float(v) for v in re.search(r"held-out loss at each epoch's end: ([0-9. ]+) "
                                         r"\(guessing", text).group(1).split()]
    best = curve.index(min(curve))
    assert 0 < best < len(curve) - 1 and min(curve) < 0.6 * math.log(2), curve
    assert float(m.group(4)) == round(min(curve), 3)
    # and drawn (round 39): the curve is a picture in the same cell, not only a row of numbers
    cell = next(c for c in nb.cells if "early_stopping=3" in c.source)
    assert any("image/png" in o.get("data", {}) for o in cell.outputs), cell.outputs
    claims = [r for r in runs_dir.iterdir() if str(json.loads(
        (r / "config.json").read_text())["config"].get("data")).endswith("claims.csv")]
    _check_class_weight_section(text, [json.loads((r / "result.json").read_text())
                                       for r in claims])
    results = [json.loads((r / "result.json").read_text()) for r in runs_dir.iterdir()
               if r not in claims]
    # two GPT jobs of 20 steps, 2 epochs of 1000 own rows in batches of 32, and 15 epochs of
    # 108 shape images in batches of 32
    assert sorted(r["steps"] for r in results) == [20, 20, 60, 64]
    for result in (r for r in results if r["steps"] == 20):
        losses = [row["loss"] for row in result["history"]]
        assert losses[-1] < losses[0]
    # the last cell reports the first job (`%train model train_data`), not the loop variable
    # of the class-weight cell that once reused its name (it printed the balanced mlp's loss)
    first = next(r for r in runs_dir.iterdir() if json.loads(
        (r / "config.json").read_text()).get("command", "").startswith("%train model train_data"))
    loss = json.loads((first / "result.json").read_text())["final_loss"]
    assert f"gpt-mini on the classics ({first.name}): done, final loss {loss:.3f}" in text


def _check_class_weight_section(text: str, results: list[dict]) -> None:
    """The rare-class section (round 30): what it prints is each job's recall recomputed
    from its confusion matrix (recall = diagonal / row sum), and the balanced job finds more
    of the rare class than the plain one."""
    printed = dict(re.findall(r"^(plain|balanced): accuracy [0-9.]+, fraud found ([0-9.]+)",
                              text, flags=re.M))
    assert set(printed) == {"plain", "balanced"}, text[-3000:]
    found = []
    for result in results:
        report = result["class_metrics"]
        rare = report["per_class"]["class"].index("fraud")
        row = report["confusion"][rare]
        found.append(round(row[rare] / sum(row), 3))
    assert sorted(found) == sorted(float(v) for v in printed.values()), (found, printed)
    assert float(printed["balanced"]) > float(printed["plain"]), printed
