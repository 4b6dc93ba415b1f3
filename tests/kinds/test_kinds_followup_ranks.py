"""``--ranks N`` is what users type for MPI ranks: the same option as ``--np N`` in every
kind's grammar (help lists both; a rendered line keeps ``--np``), in the terminal and in a
notebook."""

from __future__ import annotations

import json

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from skiff.grammar.common import split_launch
from skiff.kinds import KINDS
from tests.helpers.cli import run_cli as cli  # ``python -m skiff ARGS`` here


@pytest.mark.parametrize("kind", ["train", "solve", "ocr", "chat"])
def test_ranks_is_np_in_every_kind(kind):
    command = KINDS[kind].command
    first = {"train": "mlp", "solve": "poisson", "ocr": "x.png", "chat": "ckpt hi"}[kind]
    values, launch = split_launch(command.parse(f"{first} --ranks 3"))
    assert launch["np"] == 3 and "ranks" not in values and "ranks" not in launch
    assert command.parse(f"{first} --np 3").np == 3
    help_text = command.usage(cli=True)
    assert "--np N, --ranks N" in help_text
    # the line a panel writes keeps the one spelling people read in the docs
    defaults = command.defaults()
    line = command.render({**defaults, **vars(command.parse(f"{first} --ranks 2"))},
                          style="cli")
    assert " --np 2" in line and "--ranks" not in line


def test_ranks_is_checked_like_np():
    command = KINDS["solve"].command
    from skiff.grammar.common import GrammarError

    with pytest.raises(GrammarError, match="^solve: argument --np/--ranks: expected a "
                                           "positive integer, got '0'$"):
        command.parse("poisson --ranks 0")


def test_the_terminal_takes_ranks(runs_dir, capsys):
    out = cli(capsys, "solve", "poisson", "--grid", "16x16", "--ranks", "2", "--runner", "thread")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--runner thread runs one rank, got --np 2" in out.stderr
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
    out = cli(capsys, "solve", "poisson", "--grid", "32x32", "--ranks", "2", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)["result"]
    assert result["ranks"] == 2 and result["converged"]


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skiff")
    return ip


def test_a_magic_takes_ranks(shell, runs_dir):
    from skiff.kernels.train.data import make_blobs
    from skiff.kernels.train.models import MLP

    shell.user_ns.update(rnet=MLP(2, 4, (8,)), rpts=make_blobs(32))
    # two ranks asked: notebook objects cannot go there (the launcher saw --ranks as --np)
    with pytest.raises(UsageError, match="cannot travel to other processes"):
        shell.run_line_magic("train", "rnet rpts --ranks 2")
    assert not runs_dir.exists() or not any(runs_dir.iterdir())
    job = shell.run_line_magic("train", "rnet rpts --ranks 1 --steps 2 --wait")
    assert job.status == "done", job.error
