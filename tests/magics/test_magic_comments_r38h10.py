"""Round 38 (h10): the README's tour writes its magics with a comment after them
(``%jobs  # every job, newest first``), and IPython hands a line magic the whole line, comment
included: every such line copied from the README failed ("invalid choice: '#'", "No
closing quotation" for ``# pyamg's B``, ``--keep N`` read from the comment). A ``#`` that
starts a word outside quotes starts a comment now, as in a shell. The oracles: bash's words
for the same line (Python's ``shlex.split(comments=True)`` also cuts ``a#b``, bash does
not), and the README's lines themselves."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skiff.grammar.common import split_line, without_comment

README = Path(__file__).resolve().parents[2] / "README.md"

LINES = ["a b # c", "a#b c", "'a # b' c # d", '"a \\" # b" # c', "a \\# b # c", "# all",
         "a 'b#' #c", "x\t#y", "a '#' b", "a \\ #b", 'a "\\\\" # c', "a # it's"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_the_comment_is_the_shells():
    for line in LINES:
        out = subprocess.run(["bash", "-c", "printf '%s\\0' __ " + line], text=True,
                             capture_output=True, check=True).stdout
        bash = out.split("\0")[1:-1]
        assert split_line(line) == bash, line
        assert shlex.split(without_comment(line)) == bash, line


def _tour_magics() -> list[str]:
    tour = README.read_text().split("```python", 1)[1].split("```", 1)[0]
    return [line for line in tour.splitlines() if line.startswith("%") and " # " in line]


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_the_readme_tour_lines_parse_with_their_comments(shell):
    lines = _tour_magics()
    assert len(lines) >= 10
    for line in lines:
        name, _, rest = line[1:].partition(" ")
        if name.startswith("%"):
            continue
        words = split_line(rest)
        assert "#" not in words and not any(w.startswith("#") for w in words), line
    shell.run_line_magic("plan", "7b --devices 8 --device-memory 80GB  # what would fit")
    dry = shell.run_line_magic("train", "mlp --steps 5 --dry-run  # try --wait, --keep N")
    assert dry["command"] == "%train mlp --steps 5"
    assert dry["options"]["steps"] == 5 and not dry["options"]["wait"]
