"""Round 26: ``jobs show`` (and a dry run's ``options``) lists the options the job reads, the
typed ones always, not every problem's defaults: a cylinder solve showed ``grid [256, 256]``
and ``rtol 1e-08``, a poisson solve ``contrast 1000``. The oracle: the kind itself, which
refuses an option its job does not read when typed (even at its default) and takes one it
reads; what is left out must be refused, what is shown must be taken."""

import json

import pytest

from skiff.cli import USAGE, main


@pytest.fixture(autouse=True)
def _no_budget(monkeypatch):
    """Every option asked about, however loaded the machine (the budget lists the rest)."""
    monkeypatch.setattr("skiff.kinds.base.PROBE_BUDGET_S", float("inf"))


def _doc(capsys, argv) -> dict:
    assert main([*argv, "--dry-run", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _taken(capsys, argv) -> bool:
    code = main([*argv, "--dry-run", "--json"])
    capsys.readouterr()
    assert code in (0, USAGE)
    return code == 0


@pytest.mark.parametrize("problem, extra, flag, words", [
    ("cylinder", [], "grid", ["--grid", "256x256"]),
    ("cylinder", [], "rtol", ["--rtol", "1e-8"]),
    ("cylinder", [], "precond", ["--precond", "auto"]),
    ("poisson", ["--grid", "16x16"], "contrast", ["--contrast", "1000"]),
])
def test_an_option_the_problem_does_not_read_is_left_out(capsys, problem, extra, flag, words):
    shown = _doc(capsys, ["solve", problem, *extra])["options"]
    assert not _taken(capsys, ["solve", problem, *extra, *words])  # the kind: not read
    assert flag not in shown


@pytest.mark.parametrize("flag, words", [("precond", ["--precond", "auto"]),
                                         ("bc", ["--bc", "dirichlet"]),
                                         ("rtol", ["--rtol", "1e-8"])])
def test_an_option_the_problem_reads_is_shown_at_its_default(capsys, flag, words):
    shown = _doc(capsys, ["solve", "poisson", "--grid", "16x16"])["options"]
    assert _taken(capsys, ["solve", "poisson", "--grid", "16x16", *words])
    assert flag in shown


def test_jobs_show_of_a_poisson_job(capsys):
    assert main(["solve", "poisson", "--grid", "16x16", "--json"]) == 0
    job = json.loads(capsys.readouterr().out)["job"]
    assert main(["jobs", "show", job["id"], "--json"]) == 0
    options = json.loads(capsys.readouterr().out)["options"]
    assert options["grid"] == [16, 16] and options["precond"] == "auto"  # typed, and read
    assert "contrast" not in options and "re" not in options and "np" in options
    assert main(["jobs", "show", job["id"]]) == 0
    text = capsys.readouterr().out
    assert " contrast=" not in text and " precond=auto" in text


def test_a_typed_option_is_always_shown(capsys, tmp_path):
    """--pdf-dpi is read only for a PDF: typed with a PNG it is refused, so it is left out at
    its default for a PNG; --lang is read: shown at its default and as typed."""
    from PIL import Image

    png = str(tmp_path / "blank.png")
    Image.new("L", (64, 32), 255).save(png)
    shown = _doc(capsys, ["ocr", png])["options"]
    assert not _taken(capsys, ["ocr", png, "--pdf-dpi", "200"]) and "pdf_dpi" not in shown
    assert _taken(capsys, ["ocr", png, "--lang", "ch"]) and "lang" in shown
    assert _doc(capsys, ["ocr", png, "--lang", "en"])["options"]["lang"] == "en"


def test_a_flag_left_off_is_left_out_where_the_model_does_not_read_it(capsys):
    """train mlp listed augment=false: --augment is cnn's on image folders (refused for mlp);
    --stop-on-divergence is read by every model: listed at false."""
    shown = _doc(capsys, ["train", "mlp", "--steps", "2"])["options"]
    assert not _taken(capsys, ["train", "mlp", "--steps", "2", "--augment"])
    assert "augment" not in shown
    assert _taken(capsys, ["train", "mlp", "--steps", "2", "--stop-on-divergence"])
    assert shown["stop_on_divergence"] is False


def test_with_no_time_to_ask_every_option_is_listed(capsys, monkeypatch):
    """The budget spent (a kind without a table asks its prepare once per option): the
    options are listed as before, those the model does not read too, and the job is the
    same. (solve answers from its tables: tests/cli/test_typed_refusals_r27.py.)"""
    words = ["train", "mlp", "--steps", "2"]
    full = _doc(capsys, words)
    monkeypatch.setattr("skiff.kinds.base.PROBE_BUDGET_S", 0.0)
    listed = _doc(capsys, words)
    assert "augment" in listed["options"] and "augment" not in full["options"]
    assert set(full["options"]) < set(listed["options"])
    assert listed["config"] == full["config"]
