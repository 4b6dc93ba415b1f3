"""``train --class-weight`` (round 30): scikit-learn's ``class_weight`` on the train grammar.
``balanced`` weighs class c by ``n / (k * count_c)`` over the training rows (scikit-learn's
definition, written out here with np.unique); the loss is torch 2.13's
``CrossEntropyLoss(weight=...)``; names pick weights; mistakes are one line, before a job."""

from __future__ import annotations

import json

import numpy as np
import pytest

from skiff.jobs import submit
from skiff.kinds.class_weight import parse_class_weight, weigh_classes


def _table(path, n=240, seed=3, rare=0.1):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < rare).astype(int)  # ~10% 'fraud'
    a, b = rng.normal(size=n) + 1.5 * y, rng.normal(size=n) + 1.0 * y
    with open(path, "w") as fh:
        fh.write("a,b,label\n")
        for u, v, t in zip(a, b, y):
            fh.write(f"{u:.4f},{v:.4f},{'fraud' if t else 'ok'}\n")
    return path


def _sklearn_balanced(y):
    """scikit-learn's compute_class_weight('balanced', classes=np.unique(y), y=y)."""
    classes = np.unique(y)
    return {int(c): len(y) / (len(classes) * np.sum(y == c)) for c in classes}


def _parts(path, split):
    from skiff.kernels.train.entry import build_from_config

    config = {"model": "mlp", "data": str(path), "seed": 0, "val_split": split}
    return build_from_config(config), config


@pytest.mark.parametrize("split", [None, 0.25])
def test_balanced_weights_and_loss_match_sklearn_and_torch(tmp_path, split):
    parts, config = _parts(_table(tmp_path / "t.csv"), split)
    y_all = parts["dataset"].arrays[-1]
    y_train = y_all[:len(y_all) - int(round(len(y_all) * split))] if split else y_all
    weighed = weigh_classes(parts, {**config, "class_weight": "balanced"})
    expected = _sklearn_balanced(y_train)
    got = np.array(list(weighed["class_weight"].values()))  # by class id, to the Trainer
    assert got.shape == (2,) and weighed.get("loss") is None
    assert np.allclose(got, [expected[0], expected[1]], rtol=1e-6), (got, expected)
    assert any("--class-weight" in note for note in weighed["notes"])


def test_named_weights_and_their_mistakes(tmp_path):
    parts, config = _parts(_table(tmp_path / "t.csv"), None)
    classes = parts["table"].classes
    weighed = weigh_classes(parts, {**config, "class_weight": parse_class_weight("fraud=4")})
    assert list(weighed["class_weight"].values()) == [4.0 if c == "fraud" else 1.0
                                                      for c in classes]
    with pytest.raises(ValueError, match=r"'frau', not a class of the data \(did you mean "
                                         r"'fraud'\?\); its classes: "):
        weigh_classes(parts, {**config, "class_weight": {"frau": 4.0}})
    for bad, says in (("balance", "balanced"), ("cat=x", "not a number"), ("cat=-1", "> 0"),
                      ("cat", "not CLASS=W"), ("a=1,a=2", "twice")):
        with pytest.raises(ValueError, match=says):
            parse_class_weight(bad)


def test_terminal_grammar(tmp_path, capsys):
    from skiff.cli import main  # python -m skiff, in this process

    path = str(_table(tmp_path / "t.csv"))
    assert main(["train", "mlp", path, "--class-weight", "fraud=3,ok=1", "--dry-run",
                 "--json"]) == 0
    config = json.loads(capsys.readouterr().out)["config"]
    assert parse_class_weight(config["class_weight"]) == {"fraud": 3.0, "ok": 1.0}
    for args, says in ((["mlp", path, "--class-weight", "balance"], "balanced"),
                       (["gpt-mini", "--class-weight", "balanced"], "predicts text")):
        assert main(["train", *args, "--dry-run"]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], lines


def _recall_of_rare(job):
    job.wait(120)
    assert job.status == "done", job.error
    per = job.result["class_metrics"]["per_class"]
    return per["recall"][per["class"].index("fraud")], per


def test_balanced_job_finds_more_of_the_rare_class(tmp_path):
    """The weighted job (a thread job, as %train runs it) recalls more of the rare class on
    the held-out rows than the same job unweighted, same seed and steps."""
    path = _table(tmp_path / "t.csv", n=400, rare=0.07)
    line = f"mlp {path} --steps 60 --val-split 0.3 --lr 0.01"
    plain, _ = submit("train", line)
    plain_recall, _ = _recall_of_rare(plain)
    weighed, _ = submit("train", line + " --class-weight balanced")
    recall, per = _recall_of_rare(weighed)
    assert recall > plain_recall, (recall, plain_recall, per)
    assert weighed.config["class_weight"] == "balanced"
    # the summary names the option where the table reader found the classes imbalanced
    from skiff.kinds import KINDS

    hint = "the same command with --class-weight balanced"
    flagged = any(n.startswith("classes imbalanced") for n in plain.result["notes"])
    assert flagged  # this table is: the reader's own rule
    assert any(hint in x for x in KINDS["train"].summary(plain.result))
    assert not any(hint in x for x in KINDS["train"].summary(weighed.result))


def test_notebook_arrays(tmp_path):
    """``%train mlp (X, y) --class-weight balanced``: integer y in notebook arrays."""
    rng = np.random.default_rng(1)
    y = (rng.random(200) < 0.15).astype(np.int64)
    x = (rng.normal(size=(200, 3)) + y[:, None]).astype(np.float32)
    job, _ = submit("train", "mlp (X, y) --steps 5 --class-weight balanced",
                    user_ns={"X": x, "y": y})
    job.wait(60)
    assert job.status == "done", job.error
    expected = _sklearn_balanced(y)
    note = next(n for n in job.result["notes"] if "--class-weight" in n)
    for c, w in expected.items():
        assert f"{c} {w:.3g}" in note, (note, expected)


def test_train_form_round_trips_the_weights():
    """The Train tab's field: the line it shows parses back to the same weights (the form's
    own check), and a bad value is the field's message with Launch disabled."""
    from skiff.kinds import KINDS
    from skiff.widgets.form import CommandForm

    form = CommandForm(KINDS["train"].command)
    form.set(model="mlp", class_weight="fraud=3, ok=1")
    assert form.errors == {} and not form.launch_button.disabled, form.errors
    words = form.magic.split()
    given = words[words.index("--class-weight") + 1]
    assert parse_class_weight(given) == {"fraud": 3.0, "ok": 1.0}
    form.set(class_weight="fraud=three")
    assert "not a number" in form.errors["class_weight"] and form.launch_button.disabled


def test_notebook_float_targets_are_refused_before_a_job(runs_dir):
    from skiff.jobs import list_run_dirs

    rng = np.random.default_rng(2)
    x = rng.normal(size=(30, 3)).astype(np.float32)
    for y, says in ((rng.normal(size=30).astype(np.float32), "targets of dtype float32"),
                    (np.arange(30) - 1, "negative targets")):
        with pytest.raises(ValueError, match=f"DATA '\\(X, y\\)' has {says}"):
            submit("train", "mlp (X, y) --steps 1 --class-weight balanced",
                   user_ns={"X": x, "y": y})
    assert list_run_dirs() == []
