"""What a notebook user types by habit: ``--help`` at the end of a line, on every magic; a
``-o`` name no cell can use; ``--runner thread`` with ``--np 2``. Each is help or one line,
and no run folder."""

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.grammar.common import asks_for_help, variable_name
from skiff.grammar.jobs import DEVICES, JOBS
from skiff.kinds import KINDS


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


@pytest.mark.parametrize("magic, line, cmd", [
    ("train", "mlp --steps 5 --help", KINDS["train"].command),
    ("solve", "poisson -h", KINDS["solve"].command),
    ("jobs", "--help", JOBS),
    ("jobs", "show --help", JOBS),
    ("devices", "-h", DEVICES),
])
def test_help_anywhere_on_the_line_prints_the_usage(shell, capsys, runs_dir, magic, line, cmd):
    assert shell.run_line_magic(magic, line) is None
    from skiff.magics.kinds import magic_usage

    usage = magic_usage(KINDS[magic]) if magic in KINDS else cmd.usage(prog=f"%{magic}")
    assert capsys.readouterr().out.strip() == usage.strip()
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_plan_and_panel_help(shell, capsys):
    from skiff.grammar.plan import COMMAND

    assert shell.run_line_magic("plan", "-h") is None
    assert capsys.readouterr().out.strip() == COMMAND.usage(prog="%plan").strip()
    assert shell.run_line_magic("skiff", "--help") is None
    out = capsys.readouterr().out
    assert all(tab in out for tab in ("train", "solve", "ocr", "chat", "jobs"))


def test_a_quoted_help_is_a_value_not_a_request():
    assert asks_for_help("mlp --steps 5 --help")
    assert not asks_for_help("ckpt --prompt 'what does --help do'")
    assert not asks_for_help("unbalanced 'quote")


@pytest.mark.parametrize("name", ["1bad", "class", "a-b", ""])
def test_output_must_be_a_variable_name(shell, runs_dir, name):
    with pytest.raises(UsageError, match="expected a Python variable name"):
        shell.run_line_magic("solve", f"poisson --grid 16x16 -o '{name}'")
    with pytest.raises(UsageError, match="expected a Python variable name"):
        shell.run_line_magic("jobs", f"list -o '{name}'")
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_variable_name_keeps_good_names():
    assert variable_name("job_1") == "job_1" and variable_name("Ω") == "Ω"


def test_thread_runner_with_ranks_speaks_in_options(shell, runs_dir):
    with pytest.raises(UsageError) as err:
        shell.run_line_magic("solve", "poisson --grid 16x16 --np 2 --runner thread")
    assert str(err.value) == ("--runner thread runs one rank, got --np 2: use --runner "
                              "process (or leave --runner out)")
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def test_question_mark_help_says_the_description_once(shell):
    for name, kind in KINDS.items():
        if kind.command is None:
            continue
        doc = shell.find_magic(name).__doc__
        assert doc.count(kind.command.help) == 1, name
        assert doc.startswith(f"usage: %{name}")
