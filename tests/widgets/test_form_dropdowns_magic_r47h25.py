"""Round 47 (h25): a form's dropdown takes what its magic takes, and refuses in its words.

1. The OCR form's --lang list held the model sets alone: ``lang="en"`` (``japan``, ``fr``,
   ``EN``) was "got 'en': choose from ch, ch-v4, ch-tiny" while ``%ocr --lang en`` reads
   with the 'ch' set, and ``ko`` got that list where the magic names the script no set
   reads. Oracle: ``%ocr ... --dry-run`` (taken or refused, its words, its config's model).
2. The Train and Solve forms' dropdowns (choices and --device): a value not listed was
   "got 'AUTO' (did you mean 'auto'?): choose from auto, ..." and ``--device gpu`` on a
   machine without one "got 'gpu' (did you mean 'cpu'?)" where the magic says "no device
   'gpu' on this machine (devices here: cpu)". A refusal naming two options was shown by
   the first named (``--monitor and --mode ...`` by --monitor, left as it was, when the
   user set --mode): now by the first the user set. Oracle: ``%train``/``%solve ...
   --dry-run``.
"""

from __future__ import annotations

import re

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

W = pytest.importorskip("ipywidgets")


@pytest.fixture
def shell(runs_dir):
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def _magic(ip, kind: str, line: str):
    """``%kind line --dry-run``: (its words without the kind and the argument, None) when
    refused, (None, its document) when taken."""
    try:
        doc = ip.run_line_magic(kind, f"{line} --dry-run")
    except UsageError as exc:
        return re.sub(r"^%\w+: (argument [-\w/]+: )?", "", str(exc)), None
    return None, doc


def test_the_ocr_form_takes_the_languages_ocr_takes(shell, tmp_path, capsys):
    from PIL import Image

    from skiff.widgets.panels import ocr_form

    page = tmp_path / "a.png"
    Image.new("L", (16, 16), 255).save(page)
    form = ocr_form()
    for lang in ("en", "EN", "japan", "ko", "enn"):
        said, doc = _magic(shell, "ocr", f"{page} --lang {lang}")
        form.set(inputs=str(page), lang=lang)
        if said is None:  # taken: the same set reads it, and the line says what was asked
            assert "lang" not in form.errors, (lang, form.errors)
            assert form.config["model"] == doc["config"]["model"], lang
            assert form.fields["lang"].raw() == lang
            assert f"--lang {lang}" in form.magic_line.value, form.magic_line.value
        else:  # refused: the magic's words, by the field
            assert form.errors.get("lang") == said, (lang, form.errors, said)
            assert form.launch_button.disabled
    # picked by hand from the list: a language the 'ch' set reads is there to pick
    said, doc = _magic(shell, "ocr", f"{page} --lang fr")
    assert said is None
    form.fields["lang"].widget.value = "fr"
    assert "lang" not in form.errors and form.config["model"] == doc["config"]["model"]
    capsys.readouterr()


def _dropdowns_say_what_the_magic_says(ip, form, kind: str, head: str) -> int:
    """Each dropdown of ``form`` set to values it does not list (a listed one in capitals;
    for --device, names this machine may lack): taken or refused as ``%kind head --FLAG
    VALUE --dry-run`` is, refused in its words, by the field. Returns the checks made."""
    checks = 0
    for dest, field in form.fields.items():
        if not isinstance(field.widget, W.Dropdown) or dest == "device":
            continue
        listed = [str(v) for v in field.widget._options_values if v != ""]
        flag = field.action.option_strings[0]
        value = listed[-1].upper()
        if value == listed[-1]:
            continue  # no letters (a number's choice): nothing to put in capitals
        said, _ = _magic(ip, kind, f"{head} {flag} {value}")
        assert said is not None, (flag, value)  # argparse's choices are exact
        form.set(**{dest: value})
        assert form.errors.get(dest) == said, (dest, form.errors.get(dest), said)
        form.set(**{dest: field._initial()})  # the value it had: the message gone
        assert dest not in form.errors, (dest, form.errors)
        checks += 1
    for value in ("gpu", "cpu:0", "CPU"):
        said, _ = _magic(ip, kind, f"{head} --device {value}")
        form.set(device=value)
        assert form.errors.get("device") == said, (value, form.errors.get("device"), said)
        checks += 1
    return checks


def test_the_train_forms_dropdowns_say_what_train_says(shell, capsys):
    from skiff.widgets.panels import train_form

    form = train_form()
    assert _dropdowns_say_what_the_magic_says(shell, form, "train", "mlp") >= 8
    # a listed --mode the magic refuses without --early-stop: its words by the field the
    # user set (they name --monitor first, left as it was: shown by it before)
    said, _ = _magic(shell, "train", "mlp --mode min")
    assert said is not None and "--mode" in said
    form.set(mode="min")
    assert form.errors == {"mode": said}, form.errors
    capsys.readouterr()


def test_the_solve_forms_dropdowns_say_what_solve_says(shell, capsys):
    from skiff.widgets.panels import solve_form

    assert _dropdowns_say_what_the_magic_says(shell, solve_form(), "solve", "poisson") >= 12
    capsys.readouterr()
