"""Round 33 (h8): ``%train mlp --steps 5 --json`` (the terminal's flag typed in a notebook)
was "unrecognized arguments: --json" with no way on; now it names the terminal command and
what a notebook has instead (the job, its summary and result). The oracle of "terminal
only": the terminal's parser takes --json (``python -m skiff train ... --json --dry-run``
exits 0)."""

from __future__ import annotations

import pytest

from skiff.cli import main
from skiff.grammar.common import GrammarError
from skiff.kinds import KINDS


@pytest.mark.parametrize("kind, words", [("train", ["mlp"]), ("solve", ["poisson"]),
                                         ("ocr", ["page.png"])])
def test_json_in_a_magic_names_the_terminal_and_the_job(kind, words):
    with pytest.raises(GrammarError) as err:
        KINDS[kind].command.parse([*words, "--json"], prog=f"%{kind}")
    text = str(err.value)
    assert text.startswith(f"%{kind}: unrecognized arguments: --json (--json is for a "
                           f"terminal: python -m skiff {kind} ... --json")
    assert "job.result" in text and "-o NAME" in text


def test_the_terminal_takes_json(capsys, runs_dir):
    assert main(["train", "mlp", "--steps", "5", "--json", "--dry-run"]) == 0
    with pytest.raises(GrammarError) as err:  # a terminal's own mistake: no notebook advice
        KINDS["train"].command.parse(["--jsn"], prog="python -m skiff train", cli=True)
    assert "job.result" not in str(err.value)
