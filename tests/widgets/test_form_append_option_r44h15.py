"""Round 44 (h15): an option given again (``--stop A --stop B``) in a form.

The chat form's ``stop`` field read its text as one string, where the grammar makes a list:
the chat kind's config took the string as a list of its characters, so the form's
``--stop END`` stopped the answer at any E, N or D, while its own magic line (``--stop END``)
stopped at "END". The field now gives the words of its text as a list (quoted words for a
stop with spaces), as ``--stop`` given once per word.

Oracle: the kind's grammar reading the equivalent command line, and its ``to_config``."""

from __future__ import annotations

from skiff.grammar.common import split_launch, split_line
from skiff.kinds import KINDS
from skiff.kinds.chat import to_config
from skiff.widgets.form import CommandForm


def _config(values: dict) -> dict:
    import argparse

    kernel, _launch = split_launch(argparse.Namespace(**values))
    return to_config(kernel, check_folder=False)


def test_chat_form_stop_words_are_the_command_lines(tmp_path):
    command = KINDS["chat"].command
    form = CommandForm(command, lambda v: to_config(v, check_folder=False))
    form.set(model=str(tmp_path), prompt="hi", stop='END "User: "')
    assert form.values is not None, (form.errors, form.status.value)
    cli = vars(command.parse(split_line(form.cli)[4:], cli=True))
    assert cli["stop"] == ["END", "User: "], form.cli
    assert form.values["stop"] == cli["stop"]
    assert form.config["stop"] == _config(cli)["stop"] == ["END", "User: "]
    # the field shows a list set from Python as words the form reads back the same
    form.set(stop=["a b", "</s>"])
    assert form.values["stop"] == ["a b", "</s>"], form.fields["stop"].raw()
    form.set(stop="")
    assert form.values["stop"] is None and form.config["stop"] == []
