"""Every option README.md shows a user (in `python -m skiff ...` commands and in the tour's
`%train`/`%solve`/`%ocr`/`%plan`/`%chat` lines) is one the command's own `--help` lists: a
renamed or dropped flag fails here, not in a new user's first hour. The oracle is the
argparse help each command prints, independent of the README's text."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from skiff.cli import main

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
_HELP: dict[str, str] = {}


def _help(command: str) -> str:
    if command not in _HELP:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main([command, "--help"])
        _HELP[command] = out.getvalue()
    return _HELP[command]


def _uses() -> list[tuple[str, str, str]]:
    """(command, flag, the README line) for each option the README shows."""
    uses = []
    for line in README.splitlines():
        for m in re.finditer(r"python -m skiff (\w+)([^`]*)", line):
            uses += [(m.group(1), f, line) for f in re.findall(r"(?<![\w-])--[a-z][\w-]*",
                                                                   m.group(2))]
        for m in re.finditer(r"%%?(train|solve|ocr|plan|chat)\b([^#`]*)", line):
            uses += [(m.group(1), f, line) for f in re.findall(r"(?<![\w-])--[a-z][\w-]*",
                                                                   m.group(2))]
    return uses


def test_readme_shows_options():
    uses = _uses()
    assert len(uses) >= 25, uses  # the tour and the terminal paragraph
    assert {c for c, _, _ in uses} >= {"train", "solve", "ocr", "plan"}


@pytest.mark.parametrize("command", ["train", "solve", "ocr", "plan", "generate", "predict"])
def test_every_readme_option_is_in_the_help(command):
    text = _help(command)
    assert "usage" in text.lower(), text[:200]
    missing = sorted({(f, line.strip()[:80]) for c, f, line in _uses()
                      if c == command and not re.search(re.escape(f) + r"\b", text)})
    assert not missing, f"README shows options `{command} --help` does not list: {missing}"


def test_a_dropped_option_would_be_caught():
    # the check itself: an option no command has is reported as missing
    assert not re.search(re.escape("--no-such-option") + r"\b", _help("train"))
