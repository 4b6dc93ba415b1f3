"""Build the example notebooks from their sources: ``notebooks/src/NN-name.py`` → ``NN-name.ipynb``.

A source is a plain Python file cut into cells by marker lines::

    # %% [markdown]
    # # A title
    # Prose, each line starting with "# ".

    # %%
    import skiff

``# %%`` starts a code cell, ``# %% [markdown]`` a markdown cell (its lines lose their leading
``# ``). Text before the first marker is ignored (a place for notes to the editor). The
notebooks are written without outputs and with stable cell ids, so a rebuild of an unchanged
source gives the same file.

Usage::

    python notebooks/build.py            # every source
    python notebooks/build.py 01-tour    # some of them
    python notebooks/build.py --check    # exit 1 if a notebook is stale
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
_MARKER = re.compile(r"^# %%(?P<rest>.*)$")

__all__ = ["parse_source", "build_notebook", "build_all", "main"]


def parse_source(text: str) -> list[tuple[str, str]]:
    """``[(cell_type, source), ...]`` of a source text (``cell_type``: code or markdown)."""
    cells: list[tuple[str, list[str]]] = []
    current: tuple[str, list[str]] | None = None
    for line in text.splitlines():
        m = _MARKER.match(line)
        if m:
            rest = m.group("rest").strip().lower()
            if rest and rest not in ("[markdown]", "[md]"):
                raise ValueError(f"unknown cell marker {line!r}: use '# %%' or "
                                 f"'# %% [markdown]'")
            current = ("markdown" if rest else "code", [])
            cells.append(current)
            continue
        if current is None:
            continue
        if current[0] == "markdown":
            if line.strip() and not (line.startswith("# ") or line.strip() == "#"):
                raise ValueError(f"markdown line does not start with '# ': {line!r}")
            line = line[2:] if line.startswith("# ") else ""
        current[1].append(line)
    out = []
    for kind, lines in cells:
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        if lines:
            out.append((kind, "\n".join(lines)))
    return out


def build_notebook(src: Path, dest: Path | None = None) -> Path:
    """Write the notebook of one source file; returns its path."""
    import nbformat

    src = Path(src)
    dest = dest or HERE / f"{src.stem}.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                       "name": "python3"},
        "language_info": {"name": "python"},
    }
    for i, (kind, source) in enumerate(parse_source(src.read_text())):
        make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        cell = make(source)
        cell.id = f"{src.stem[:2]}-{i:03d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    text = nbformat.writes(nb) + "\n"
    if not dest.exists() or dest.read_text() != text:
        dest.write_text(text)
    return dest


def sources(names: list[str] | None = None) -> list[Path]:
    found = sorted(SRC.glob("[0-9][0-9]-*.py"))
    if not names:
        return found
    picked = []
    for name in names:
        stem = Path(name).stem
        match = [p for p in found if p.stem == stem or p.stem.startswith(stem)]
        if not match:
            valid = ", ".join(p.stem for p in found)
            raise SystemExit(f"build.py: no source {name!r} in {SRC} (have: {valid})")
        picked.extend(match)
    return picked


def build_all(names: list[str] | None = None) -> list[Path]:
    return [build_notebook(p) for p in sources(names)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build notebooks/NN-name.ipynb from notebooks/src.")
    ap.add_argument("names", nargs="*", help="sources to build (default: all)")
    ap.add_argument("--check", action="store_true", help="exit 1 if a notebook is out of date")
    args = ap.parse_args(argv)
    if args.check:
        import tempfile

        stale = []
        with tempfile.TemporaryDirectory() as tmp:
            for src in sources(args.names):
                fresh = build_notebook(src, Path(tmp) / f"{src.stem}.ipynb")
                dest = HERE / f"{src.stem}.ipynb"
                if not dest.exists() or dest.read_text() != fresh.read_text():
                    stale.append(dest.name)
        if stale:
            print("stale: " + ", ".join(stale) + " (run python notebooks/build.py)")
            return 1
        return 0
    for path in build_all(args.names):
        print(path.relative_to(HERE.parent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
