"""Round 33 (h8): ``%train mlp --steps 5 --json`` (the terminal's flag typed in a notebook)
was "unrecognized arguments: --json" with no way on. Round 38 (h10): every kind's magic
takes it, as the terminal does (``tests/magics/test_solve_json_r38h10.py``); the terminal's
parser takes it, and a typo of it is the terminal's own mistake, with no notebook advice."""

from __future__ import annotations

import pytest

from skiff.cli import main
from skiff.grammar.common import GrammarError
from skiff.kinds import KINDS


def test_the_terminal_takes_json(capsys, runs_dir):
    assert main(["train", "mlp", "--steps", "5", "--json", "--dry-run"]) == 0
    with pytest.raises(GrammarError) as err:  # a terminal's own mistake: no notebook advice
        KINDS["train"].command.parse(["--jsn"], prog="python -m skiff train", cli=True)
    assert "job.result" not in str(err.value)
