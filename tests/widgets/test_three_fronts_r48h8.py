"""Round 48 (h8): one grammar, three fronts. Every option ``%train``, ``%solve`` and ``%ocr``
take is a field of their panel's form and (but ``-o NAME``, a notebook's) a flag of
``python -m skiff KIND``, with the same default, and a value that option's type or choices
refuse is refused by all three in the same words: the form by the field, the magic and
the terminal on one line, after ``%KIND: argument --FLAG:`` / ``python -m skiff KIND:
argument --FLAG:``. The walk found the form saying Python's words where argparse says its
own (``--re x``: "could not convert string to float: 'x'" where the magic says "invalid
float value: 'x'"; ``--general-eval x``: "invalid literal for int() with base 10").

Then two refusals that differed by front or left out what the magic takes:
``--lang englsh`` ("unknown model set 'englsh': choose from ch, ch-v4, ch-tiny", where
``--lang english``, ``en``, ``japan``... are taken) and ``train mlpp`` (the terminal was
told of "the notebook's" models; the form said "or, in a notebook, a variable holding a
model"). Oracle: the magic's own refusal, as ``run_line_magic`` raises it (argparse's
words, from the grammar the three fronts share)."""

from __future__ import annotations

import argparse
import re

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from tests.helpers.cli import run_cli

W = pytest.importorskip("ipywidgets")

BAD = "bogusx"  # no number, no listed choice, no device
_PREFIX = re.compile(r"^%(\w+): argument ([-\w/]+): ")


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from PIL import Image

    path = tmp_path_factory.mktemp("r48h8") / "a.png"
    Image.new("L", (16, 16), 255).save(path)
    return str(path)


def _refusal(ip, kind: str, line: str) -> str | None:
    try:
        ip.run_line_magic(kind, f"{line} --dry-run")
    except UsageError as exc:
        return str(exc)
    return None


def _flag(action: argparse.Action) -> str:
    return next((f for f in action.option_strings if f.startswith("--")),
                action.option_strings[0])


@pytest.mark.parametrize("kind", ["train", "solve", "ocr"])
def test_every_option_is_a_field_and_a_flag_with_the_same_default_and_refusal(
        kind, shell, page, capsys):
    from skiff.kinds import KINDS
    from skiff.widgets import panels

    command = KINDS[kind].command
    base = {"train": "mlp", "solve": "poisson", "ocr": page}[kind]
    form = getattr(panels, f"{kind}_form")()
    if kind == "ocr":
        form.set(inputs=page)
    options = [a for a in command.parser()._actions if a.dest not in ("help", "wait", "json")]
    notebook = {a.dest for a in options if getattr(a, "notebook_only", False)}
    cli = {a.dest for a in command.parser(cli=True)._actions}
    assert notebook == {"output"}
    assert set(form.fields) == {a.dest for a in options}
    assert cli >= {a.dest for a in options} - notebook
    # the same defaults: the untouched form's values are the magic's for the bare line
    assert form.values is not None, form.errors
    said = vars(command.parse(base))
    assert {d: form.values[d] for d in said if d in form.fields} == \
        {d: v for d, v in said.items() if d in form.fields}
    terminal = vars(command.parse(base, cli=True))  # the terminal's parser: the same values
    assert terminal == {d: v for d, v in said.items() if d not in notebook}
    refused = {}  # dest -> the magic's words after "%KIND: argument --FLAG: "
    for action in options:
        if not action.option_strings or isinstance(action, argparse._StoreConstAction) \
                or (action.type is None and action.choices is None):
            continue
        flag = _flag(action)
        magic = _refusal(shell, kind, f"{base} {flag} {BAD}")
        if magic is None or not _PREFIX.match(magic):
            continue  # taken by the grammar (a name, a file): the kind's checks come later
        refused[action.dest] = _PREFIX.sub("", magic)
        if action.dest not in notebook:
            out = run_cli(capsys, kind, base, flag, BAD, "--dry-run")
            assert (out.returncode, out.stderr.strip()) == \
                (2, f"python -m skiff {magic[1:]}"), flag
    assert len(refused) >= {"train": 30, "solve": 30, "ocr": 8}[kind], refused
    # the form: every one of them set at once, each refused by its own field
    form.set(**{dest: BAD for dest in refused})
    assert {d: form.errors.get(d) for d in refused} == refused


def test_a_refused_lang_names_the_languages_ocr_takes(shell, page, capsys):
    """``--lang englsh``: the closest word the magic takes and every set, then the
    languages listed by the form; each word listed is taken (``%ocr ... --lang W``)."""
    from skiff.widgets.panels import ocr_form

    said = _refusal(shell, "ocr", f"{page} --lang englsh")
    assert said is not None and "(did you mean 'english'?)" in said, said
    listed = re.split(r", (?:or a language the 'ch' set reads: )?",
                      said.split(": choose from ", 1)[1].removesuffix(", ..."))
    assert {"ch", "ch-v4", "ch-tiny", "en", "japan", "fr"} <= set(listed), listed
    for word in listed:
        assert _refusal(shell, "ocr", f"{page} --lang {word}") is None, word
    form = ocr_form()
    form.set(inputs=page, lang="englsh")
    assert form.errors == {"lang": said}
    out = run_cli(capsys, "ocr", page, "--lang", "englsh", "--dry-run")
    assert (out.returncode, out.stderr.strip()) == (2, f"skiff ocr: {said}")


def test_an_unknown_model_is_refused_in_the_same_words_by_every_front(shell, capsys):
    from skiff.widgets.panels import train_form

    said = _refusal(shell, "train", "mlpp")
    form = train_form()
    form.set(model="mlpp")
    assert form.errors == {"model": said}
    assert "notebook's" not in said  # the notebook holds no model: none to list
    out = run_cli(capsys, "train", "mlpp", "--dry-run")
    assert (out.returncode, out.stderr.strip()) == (2, f"skiff train: {said}")


def test_a_choice_typed_in_a_text_box_is_refused_in_the_magics_words(shell):
    """A panel may give an option with choices a text box (``pickers``): its refusal was
    "got 'AUTO' (did you mean 'auto'?): choose from auto, rcm, none"."""
    from skiff.kinds import KINDS
    from skiff.widgets.form import CommandForm

    command = KINDS["solve"].command
    form = CommandForm(command, pickers={"reorder": lambda a: W.Text(value="auto")})
    form.set(problem="poisson", reorder="AUTO")
    said = _refusal(shell, "solve", "poisson --reorder AUTO")
    assert form.errors == {"reorder": _PREFIX.sub("", said)}


@pytest.mark.parametrize("field,flag", [("nodes", "--nodes 2"),
                                        ("gpus_per_node", "--gpus-per-node 1")])
def test_a_cluster_option_without_slurm_is_refused_by_the_field(shell, field, flag):
    """The Train form took ``--nodes 2`` without ``--launcher slurm`` (Launch on, the
    refusal after the click) where ``%train mlp --nodes 2`` refuses it: now by the field,
    in its words; with ``--launcher slurm`` both take it."""
    from skiff.widgets.panels import train_form

    said = _refusal(shell, "train", f"mlp {flag}")
    form = train_form()
    form.set(**{field: flag.split()[1]})
    assert said is not None and form.errors == {field: said}
    assert form.launch_button.disabled
    assert _refusal(shell, "train", f"mlp {flag} --launcher slurm") is None
    form.set(launcher="slurm")
    assert form.errors == {} and not form.launch_button.disabled
