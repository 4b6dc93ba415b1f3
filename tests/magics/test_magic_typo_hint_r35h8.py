"""Round 35 (h8): ``%slove poisson`` was IPython's bare "Line magic function `%slove` not
found."; with ``%load_ext skiff`` it adds "(did you mean %solve?)". IPython has no hook for
a missing magic: skiff sets the shell's one public handler for cell exceptions
(``set_custom_exc``) for UsageError, and only when none is set. The oracle of "nothing
else changed": the same cells without the extension give IPython's own messages, and the
cell fails as before (``success`` False, UsageError)."""

from __future__ import annotations

import re

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.magics import typo


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


CASES = [("%slove poisson", "Line magic function `%slove` not found (did you mean %solve?)."),
         ("%trian mlp", "Line magic function `%trian` not found (did you mean %train?)."),
         ("%%trian\nx = 1", "Cell magic `%%trian` not found (did you mean %%train?)."),
         ("%timit 1", "Line magic function `%timit` not found (did you mean %timeit?)."),
         ("%zzqqxx", "Line magic function `%zzqqxx` not found."),
         ("%solve --bogus", "%solve: unrecognized arguments: --bogus")]


@pytest.mark.parametrize("cell, message", CASES)
def test_a_missing_magic_names_the_closest(shell, capsys, cell, message):
    result = shell.run_cell(cell)
    assert not result.success and isinstance(result.error_in_exec, UsageError)
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == f"UsageError: {message}"


def test_ipython_alone_gives_its_own_message(shell, capsys):
    """The oracle: without the handler IPython says the same words, less the hint."""
    typo.uninstall(shell)
    try:
        assert shell.custom_exceptions == ()
        for cell, message in CASES:
            result = shell.run_cell(cell)
            assert isinstance(result.error_in_exec, UsageError)
            own = capsys.readouterr().err.strip().splitlines()[-1]
            assert own == "UsageError: " + re.sub(r" \(did you mean [^)]*\)", "", message)
    finally:
        assert typo.install(shell)


def test_another_handler_is_left_alone():
    calls = []

    class Shell:
        custom_exceptions = (KeyError,)

        def set_custom_exc(self, *args):
            calls.append(args)

    assert typo.install(Shell()) is False and calls == []
    assert typo.suggest("Line magic function `%slove` not found.", {"solve": 1}, {}) \
        == "Line magic function `%slove` not found (did you mean %solve?)."
