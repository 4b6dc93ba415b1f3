"""Round 47 (h6), as a user typing another tool's option name: ``%solve poisson --solver cg``
was "did you mean '--overlap'?", ``--pc ilu`` "did you mean '--bc'?", and ``%train mlp -np
2`` (mpirun's spelling) or ``--learning-rate 0.1`` had no word at all. The option meant
is named now, in both fronts; difflib's pick is left for the others. The oracle: the
option named is the one of that meaning in the kind's own grammar (``--help`` lists it)."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.cli import main

CASES = [("solve", "poisson --grid 8x8 --solver cg", "--method"),
         ("solve", "poisson --grid 8x8 --pc ilu", "--precond"),
         ("solve", "poisson --grid 8x8 -np 2", "--np"),
         ("train", "mlp --steps 2 -np 2", "--np"),
         ("train", "mlp --steps 2 -n 2", "--np"),
         ("train", "mlp --steps 2 --learning-rate 0.1", "--lr"),
         ("train", "mlp --steps 2 --bs 8", "--batch-size"),
         ("train", "mlp --iters 5", "--steps"),
         ("ocr", "scan.png --gpu", "--device")]


def test_another_tools_option_names_the_one_meant(runs_dir, capsys):
    from skiff.kinds import KINDS

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "skiff")
    for kind, line, meant in CASES:
        assert meant in KINDS[kind].command.parser()._option_string_actions
        with pytest.raises(UsageError, match=f"unrecognized arguments: .*\\(did you mean "
                                             f"'{meant}'\\?\\)$"):
            shell.run_line_magic(kind, line)
        assert main([kind, *line.split()]) == 2, line
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].endswith(f"(did you mean '{meant}'?)"), (line, err)
    assert not runs_dir.exists() or not any(runs_dir.iterdir())  # nothing started
