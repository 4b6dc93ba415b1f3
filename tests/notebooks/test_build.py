"""notebooks/build.py: sources with ``# %%`` markers become notebooks."""

from __future__ import annotations

import nbformat
import pytest

from tests.notebooks.build_check import build


def test_parse_source_cells():
    text = ("\"\"\"notes before the first marker are ignored\"\"\"\n"
            "# %% [markdown]\n# # Title\n#\n# Some *prose*.\n\n"
            "# %%\nimport os\n\nx = 1\n\n"
            "# %%\n%load_ext skiff\n")
    assert build.parse_source(text) == [
        ("markdown", "# Title\n\nSome *prose*."),
        ("code", "import os\n\nx = 1"),
        ("code", "%load_ext skiff"),
    ]


@pytest.mark.parametrize("text,match", [
    ("# %% [raw]\nx\n", "unknown cell marker"),
    ("# %% [markdown]\nnot a comment\n", "does not start with '# '"),
])
def test_parse_source_errors(text, match):
    with pytest.raises(ValueError, match=match):
        build.parse_source(text)


def test_build_is_stable(tmp_path):
    src = tmp_path / "09-example.py"
    src.write_text("# %% [markdown]\n# # Example\n\n# %%\nprint('hi')\n")
    dest = build.build_notebook(src, tmp_path / "09-example.ipynb")
    first = dest.read_text()
    nb = nbformat.reads(first, as_version=4)
    assert [c.cell_type for c in nb.cells] == ["markdown", "code"]
    assert [c.id for c in nb.cells] == ["09-000", "09-001"]
    assert nb.metadata["kernelspec"]["name"] == "python3"
    build.build_notebook(src, dest)
    assert dest.read_text() == first  # an unchanged source rebuilds to the same bytes


def test_every_notebook_is_up_to_date(capsys):
    assert build.main(["--check"]) == 0, capsys.readouterr().out
