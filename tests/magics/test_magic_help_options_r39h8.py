"""Round 39 (h8): every word a magic takes is in its help (``%solve?``, ``%solve --help``).

Every kind's magic takes ``--json`` and ``--dry-run`` (taken out of the line before its
grammar parses it), and ``%solve?`` never named ``--json``; ``%jobs?`` was a hand-written
list of options that had fallen behind the grammar (no ``--json``, ``--older-than``...).
Here the help is read as a user reads it (the option column of argparse's text, parsed from
the text itself) and compared with the options the parser takes, for every kind and tool;
the terminal's help (``python -m skiff KIND --help``) names the same ones less the
notebook-only ones.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skiff import cli
from skiff.grammar.jobs import DEVICES, JOBS
from skiff.grammar.plan import COMMAND as PLAN
from skiff.grammar.predict import COMMAND as PREDICT
from skiff.kinds import KINDS

# what every kind's magic takes beyond its grammar (README, docs/events.md round 38 (h10))
MAGIC_WORDS = {"--json", "--dry-run"}
KIND_NAMES = [n for n, k in KINDS.items() if k.command is not None]


@pytest.fixture(scope="module")
def shell():
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "skiff")
    return sh


def flags_in_help(text: str) -> set[str]:
    """The option strings of argparse's help text: the first column of each option line
    (``  -o NAME, --output NAME   store ...``), never a flag named in a description."""
    found = set()
    for line in text.splitlines():
        m = re.match(r"^  (-\S.*?)(?:\s{2,}|$)", line)
        if m:
            for part in m.group(1).split(", "):
                found.add(part.split(" ", 1)[0])
    return found


def parser_flags(parser) -> set[str]:
    return {f for f in parser._option_string_actions if f not in ("-h", "--help")}


def printed(fn, *args) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(*args)
    return out.getvalue()


@pytest.mark.parametrize("name", KIND_NAMES)
def test_a_kinds_help_names_every_word_its_magic_takes(shell, name):
    kind = KINDS[name]
    taken = parser_flags(kind.command.parser()) | MAGIC_WORDS
    doc = shell.find_magic(name).__doc__
    assert flags_in_help(doc) == taken, (name, taken ^ flags_in_help(doc))
    assert doc.count(kind.command.help) == 1  # the description once
    # what %KIND? shows (IPython's inspector) holds it
    assert doc.strip() in shell.object_inspect_mime(f"%{name}")["text/plain"]
    # --help on the line prints the same text
    assert printed(shell.run_line_magic, name, "--help").rstrip() == doc.rstrip()
    # the terminal's: the same less the notebook-only words (-o NAME)
    text = printed(cli.main, [name, "--help"])
    notebook_only = {f for a in kind.command.parser()._actions
                     if getattr(a, "notebook_only", False) for f in a.option_strings}
    assert notebook_only and flags_in_help(text) == taken - notebook_only, \
        (name, (taken - notebook_only) ^ flags_in_help(text))


@pytest.mark.parametrize("command", [JOBS, DEVICES, PLAN, PREDICT], ids=lambda c: c.name)
def test_a_tools_help_is_its_grammar(shell, command):
    doc = shell.find_magic(command.name).__doc__
    assert flags_in_help(doc) == parser_flags(command.parser()), command.name
    assert "--json" in flags_in_help(doc)
    assert doc.strip() in shell.object_inspect_mime(f"%{command.name}")["text/plain"]
    assert printed(shell.run_line_magic, command.name, "--help").strip() in doc


def test_the_magic_takes_what_its_help_names(shell, tmp_path, monkeypatch):
    """The words the help adds are taken: a dry run of each kind prints the terminal's
    document (``--json --dry-run``), no run folder made."""
    monkeypatch.setenv("SKIFF_RUNS", str(tmp_path / "runs"))
    monkeypatch.chdir(tmp_path)
    import json

    out = printed(shell.run_line_magic, "solve", "poisson --grid 8x8 --dry-run --json")
    doc = json.loads(out)
    assert doc["options"]["grid"] in ([8, 8], "8x8") and doc["kind"] == "solve", doc
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
