"""Round 32, as a user: an option between two positionals left the second unrecognized
(``jobs logs -f ID``, the ``docker logs -f`` habit, ``jobs show --json ID``, ``jobs rm
--dry-run ID``, ``train mlp --steps 5 blobs``): argparse matches the optional positionals
(empty) with the first. The oracle: the same words with the positionals first, which
argparse always read; words left over either way are still refused, named alone."""

from __future__ import annotations

import pytest

from skiff.grammar import GrammarError
from skiff.grammar.jobs import JOBS
from skiff.kinds.ocr import COMMAND as OCR
from skiff.kinds.solve import COMMAND as SOLVE
from skiff.kinds.train import COMMAND as TRAIN


@pytest.mark.parametrize("command, mixed, ordered", [
    (JOBS, "logs -f ID", "logs ID -f"),
    (JOBS, "show --json ID", "show ID --json"),
    (JOBS, "rm --dry-run A B", "rm A B --dry-run"),
    (JOBS, "prune --keep 3 --dry-run", "prune --keep 3 --dry-run"),
    (TRAIN, "mlp --steps 5 blobs", "mlp blobs --steps 5"),
    (SOLVE, "A --maxiter 5 b", "A b --maxiter 5"),
    (OCR, "a.png --lang ch b.png", "a.png b.png --lang ch"),
])
def test_an_option_between_positionals(command, mixed, ordered):
    assert vars(command.parse(mixed, cli=True)) == vars(command.parse(ordered, cli=True))


def test_words_left_over_are_still_refused_named_alone():
    with pytest.raises(GrammarError, match=r"unrecognized arguments: extra$"):
        TRAIN.parse("mlp --steps 5 blobs extra", cli=True)
    with pytest.raises(GrammarError, match=r"unrecognized arguments: --stpes 5 \(did you mean "
                                           r"'--steps'\?\)"):
        TRAIN.parse("mlp --stpes 5", cli=True)
    with pytest.raises(GrammarError, match="invalid choice: 'shwo'"):
        JOBS.parse("shwo -f ID", cli=True)
