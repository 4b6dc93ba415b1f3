"""README.md's `%jobs ...` and `python -m skiff jobs ...` lines name actions and options that
`python -m skiff jobs --help` lists (round 32 added `logs ID -f`, `show ID -f`), and the
tutorials README.md names are the notebooks in `notebooks/`, each built from a source. The
oracles: the jobs command's own argparse help, and the files on disk."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from skiff.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _jobs_help() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(["jobs", "--help"])
    return out.getvalue()


def _jobs_uses() -> list[tuple[str | None, list[str], str]]:
    """(action or None, options, line) of every jobs command README.md shows."""
    uses = []
    for line in README.splitlines():
        for m in re.finditer(r"(?:%jobs|python -m skiff jobs)\b([^#`;]*)", line):
            words = m.group(1).split()
            action = words[0] if words and not words[0].startswith("-") else None
            uses.append((action, [w for w in words if w.startswith("-")], line.strip()))
    return uses


def test_every_readme_jobs_action_and_option_is_in_the_help():
    text = _jobs_help()
    choices = next(c.split(",") for c in re.findall(r"\{([a-z,]+)\}", text) if "show" in c)
    uses = _jobs_uses()
    assert len(uses) >= 4, uses
    assert {"show", "logs", "resume"} <= {a for a, _, _ in uses}
    assert any("-f" in opts for a, opts, _ in uses if a == "logs"), uses
    # the first word is an action the help lists, or a job: "ID" or a --name README gave
    names = set(re.findall(r"--name ([\w-]+)", README)) | {"ID"}
    bad = [(a, line[:70]) for a, _, line in uses
           if a is not None and a not in choices and a not in names]
    assert not bad, f"README shows jobs actions the help does not list: {bad}"
    missing = sorted({(o, line[:70]) for _, opts, line in uses for o in opts
                      if not re.search(r"(?<![\w-])" + re.escape(o) + r"\b", text)})
    assert not missing, f"README shows jobs options the help does not list: {missing}"


def test_a_dropped_jobs_option_would_be_caught():
    text = _jobs_help()
    assert re.search(r"(?<![\w-])-f\b", text)
    assert not re.search(r"(?<![\w-])" + re.escape("--no-such-option") + r"\b", text)


def test_readme_names_every_notebook_and_only_those():
    named = set(re.findall(r"`(\d\d-[a-z-]+)`", README.split("The notebooks in `notebooks/`")[1]
                           .split("\n\n")[0]))
    on_disk = {p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")}
    sources = {p.stem for p in (ROOT / "notebooks" / "src").glob("[0-9][0-9]-*.py")}
    assert named == on_disk == sources, (named, on_disk, sources)
