"""Round 42 (h15): a refused magic line with ``--json`` printed nothing a cell's captured
stdout could parse, where ``python -m skiff ... --json`` prints ``{"error": LINE, "command":
NAME, "exit": CODE}`` (round 42, h8). Decided: the magic prints the same document on stdout
(its LINE: the cell's error) and the cell still fails with that UsageError, as the terminal
exits 2 (Run All stops there). The oracle for the keys: the terminal's document of the same
mistake; without ``--json`` stdout stays empty."""

from __future__ import annotations

import json

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import main


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


CASES = [  # (magic, line, the terminal's argv)
    ("jobs", "show nosuch --json", ["jobs", "show", "nosuch", "--json"]),  # no such job
    ("jobs", "bogus --json", ["jobs", "bogus", "--json"]),                  # a typo'd action
    ("jobs", "ls --older-than xx --json", ["jobs", "ls", "--older-than", "xx", "--json"]),
    ("solve", "poisson --grid 8 --json", ["solve", "poisson", "--grid", "8", "--json"]),
    ("train", "mlp nosuch.csv --json", ["train", "mlp", "nosuch.csv", "--json"]),
]


@pytest.mark.parametrize("magic,line,argv", CASES, ids=[c[1] for c in CASES])
def test_a_json_refusal_is_the_terminals_document(shell, runs_dir, capsys, magic, line,
                                                   argv):
    capsys.readouterr()
    code = main(argv)
    terminal = json.loads(capsys.readouterr().out)
    with pytest.raises(UsageError) as err:
        shell.run_line_magic(magic, line)
    said = capsys.readouterr().out
    doc = json.loads(said)  # one document, alone on stdout
    assert set(doc) == set(terminal) == {"error", "command", "exit"}
    assert doc["command"] == terminal["command"] == magic
    assert doc["exit"] == code == 2
    assert doc["error"] == str(err.value).splitlines()[0]
    # the same mistake: the terminal's line ends as the cell's (their prefixes are the fronts')
    assert terminal["error"].split(": ", 1)[1].split("(")[0].strip(" '") in doc["error"]


def test_without_json_stdout_stays_empty(shell, runs_dir, capsys):
    capsys.readouterr()
    with pytest.raises(UsageError):
        shell.run_line_magic("jobs", "show nosuch")
    assert capsys.readouterr().out == ""
