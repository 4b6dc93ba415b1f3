"""A new user's ``solve --help`` (and ``%solve?``) named no default for ``--rtol``: skiff stops
at 1e-8 where SciPy, which the help cites ("SciPy's rtol"), stops at 1e-5; ``--restart`` is
30 where SciPy's gmres restarts every 20; ``--grid``, ``--pre``/``--post`` and ``plan
--devices`` were silent too. Each now says its default, and the number said is the parser's
own (round 41, h10). Oracles: the parsers' defaults, and SciPy's signatures."""

from __future__ import annotations

import inspect
import re

import scipy.sparse.linalg as spla

import skiff.cli as cli


def _options(name: str) -> dict:
    if name in cli._kinds():
        parser = cli._job_parser(cli._kinds()[name], name)
    else:
        parser = cli.TOOLS[name].parser(prog=f"python -m skiff {name}", cli=True)
    return parser._option_string_actions


def _said_default(action) -> str:
    m = re.search(r"default ([0-9.e+-]+(?:x[0-9]+)*)", action.help or "")
    assert m, (action.option_strings, action.help)
    return m.group(1)


def test_solve_and_plan_help_say_their_defaults():
    solve = _options("solve")
    for option in ("--rtol", "--restart", "--pre", "--post"):
        action = solve[option]
        assert float(_said_default(action)) == action.default, (option, action.help)
    grid = solve["--grid"]
    assert _said_default(grid) == "x".join(map(str, grid.default)), grid.help
    devices = _options("plan")["--devices"]
    assert int(_said_default(devices)) == devices.default, devices.help


def test_solve_help_names_where_it_differs_from_scipy():
    solve = _options("solve")
    rtol = inspect.signature(spla.cg).parameters["rtol"].default
    # gmres's signature says None: its docstring, "If omitted, ``min(20, n)`` is used"
    restart = int(re.search(r"min\((\d+), n\)", spla.gmres.__doc__).group(1))
    assert rtol != solve["--rtol"].default and restart != solve["--restart"].default
    said = re.search(r"not SciPy's ([0-9.e+-]+)", solve["--rtol"].help)
    assert said and float(said.group(1)) == rtol, (solve["--rtol"].help, rtol)
    assert f"SciPy's gmres: {restart}" in solve["--restart"].help
