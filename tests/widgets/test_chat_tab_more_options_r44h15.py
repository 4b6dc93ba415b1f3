"""Round 44 (h15): the panel's Chat tab takes every option ``%chat`` takes.

The tab had model, prompt, system, temperature, top-k, top-p, max tokens and "no thinking":
a user could not give ``--seed`` (a sampled answer again), ``--stop``, ``--num-beams``,
``--repetition-penalty``, ``--no-repeat-ngram-size``, ``--history``, ``--device``,
``--name``, ``--np`` ... from it. They are fields under "more options" now, each checking
its text as typed; a bad one is said in the tab and nothing is submitted.

Oracles: the chat grammar's own options (``python -m skiff chat``'s parser), and the grammar
reading the tab's magic line back. No checkpoint, no job: nothing is sent but a refusal."""

from __future__ import annotations

from skiff.grammar.common import split_line
from skiff.kinds import KINDS
from skiff.widgets.chat_tab import ChatTab


def test_every_option_of_the_terminal_is_in_the_tab():
    tab = ChatTab(user_ns={})
    try:
        cli = {a.dest for a in KINDS["chat"].command.parser(cli=True)._actions}
        in_tab = set(tab.values()) & ({"model", "prompt", "system", "temperature", "top_k",
                                       "top_p", "max_new_tokens", "no_thinking"} | set(tab.fields))
        assert cli - in_tab <= {"help", "wait", "json", "prompt_opt"}, cli - in_tab
        assert not tab.more.children[0].children  # built when opened, not before
    finally:
        tab.close()


def test_more_options_reach_the_magic_line():
    tab = ChatTab(user_ns={})
    try:
        tab.model.value, tab.prompt.value = "ckpt", "Count to three"
        tab.more.selected_index = 0
        for dest, text in (("seed", "3"), ("stop", 'END "User: "'), ("num_beams", "2"),
                           ("repetition_penalty", "1.2"), ("name", "seeded")):
            tab.fields[dest].widget.value = text
        assert tab.errors == {}
        read = vars(KINDS["chat"].command.parse(split_line(tab.magic)[1:]))
        assert read["seed"] == 3 and read["stop"] == ["END", "User: "], tab.magic
        assert read["num_beams"] == 2 and read["repetition_penalty"] == 1.2
        assert read["name"] == "seeded" and read["prompt"] == "Count to three"
        values = tab.values()
        assert {k: values[k] for k in ("seed", "stop", "num_beams")} == \
            {k: read[k] for k in ("seed", "stop", "num_beams")}
    finally:
        tab.close()


def test_a_bad_value_is_said_before_anything_is_sent():
    tab = ChatTab(user_ns={})
    try:
        tab.model.value, tab.prompt.value = "ckpt", "hi"
        tab.fields["seed"].widget.value = "three"
        assert "seed" in tab.errors
        assert tab.fields["seed"].message.value  # said next to the field as it was typed
        assert tab.send() is None and tab.jobs == []
        assert "seed" in tab.status.value and tab.more.selected_index == 0
    finally:
        tab.close()


def test_the_tab_line_says_no_option_the_user_did_not_give():
    """``Command.defaults()`` took the last default of two options sharing a value (chat's
    ``--raw``: True), where the parser takes the first (``--chat``: None), and the "raw"
    box was checked while the template was used (a store_false's default, True, shown as
    the box): the tab's line said ``--chat`` each time. Oracle: the grammar's values of the
    line without options, and of ``--raw``."""
    command = KINDS["chat"].command
    tab = ChatTab(user_ns={})
    try:
        tab.model.value, tab.prompt.value = "ckpt", "hi"
        assert tab.magic == "%chat ckpt hi --max-new-tokens 256", tab.magic  # the tab's 256
        raw = tab.fields["use_template"]
        assert raw.widget.description == "raw" and raw.widget.value is False
        raw.widget.value = True  # checked: the flag given
        assert tab.magic.endswith(" --raw"), tab.magic
        assert tab.values()["use_template"] is vars(command.parse(["c", "--raw"]))["use_template"]
        raw.widget.value = False
        plain = vars(command.parse(["ckpt", "hi"]))
        assert {k: v for k, v in command.defaults().items() if k not in ("model", "prompt")} \
            == {k: v for k, v in plain.items() if k not in ("model", "prompt")}
    finally:
        tab.close()
