"""The layers of docs/architecture.md hold in the code: no import goes up or sideways, no
two packages import each other, no two files import each other, and the kernels load
without any Jupyter or jobs module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import skiff

from .layers import (
    KERNEL_FORBIDDEN,
    file_circles,
    imports,
    module_cycles,
    modules,
    package_cycles,
    wrong_way,
)

ROOT = Path(skiff.__file__).parent
KNOWN = modules(ROOT)
FOUND = imports(KNOWN)


def test_the_import_graph_is_read():
    # the parser sees imports at module level and inside functions
    assert len(FOUND) > 300
    assert any(i.nested for i in FOUND) and any(not i.nested for i in FOUND)


class _Only(dict):
    """All of ``KNOWN`` to resolve names against, but only ``only``'s files to read."""

    def __init__(self, only):
        super().__init__(KNOWN)
        self._only = list(only)

    def items(self):
        return [(m, KNOWN[m]) for m in self._only]


def _imports_with(sources: dict[str, str]) -> list:
    """``imports(KNOWN, sources)`` with only the changed modules parsed again, the rest
    taken from ``FOUND`` (round 43, h4: each case parsed the whole tree, ~1.8 CPU s)."""
    return [i for i in FOUND if i.source not in sources] + imports(_Only(sources), sources)


def test_the_shortcut_reads_the_tree_as_a_full_read_does():
    source = KNOWN["skiff.jobs.job"].read_text() + "\nfrom skiff.widgets.display import x\n"
    assert sorted(map(str, _imports_with({"skiff.jobs.job": source}))) == sorted(
        map(str, imports(KNOWN, {"skiff.jobs.job": source})))


def test_no_import_goes_up_or_sideways():
    assert wrong_way(FOUND) == []


def test_kernels_never_reach_up():
    bad = [str(i) for i in FOUND if i.source.startswith("skiff.kernels")
           and (i.target == "skiff" or i.target.startswith(KERNEL_FORBIDDEN))]
    assert bad == []


def test_no_cycle_between_packages():
    assert package_cycles(FOUND, KNOWN) == []


def test_no_file_level_circle():
    assert module_cycles(FOUND) == []
    assert file_circles(FOUND) == []


@pytest.mark.parametrize("module,line,why", [
    ("skiff.kernels.solve.entry", "from skiff.jobs.reporter import RunReporter", "layer above"),
    ("skiff.jobs.job", "from skiff.widgets.display import display_job", "layer above"),
    ("skiff.kernels.train.entry", "import skiff", "layer above"),
    ("skiff.kernels.ocr.entry", "from skiff.kernels.solve import poisson", "side by side"),
    ("skiff.cli", "def f():\n    from skiff.magics.jobs import JobsMagics\n", "side by side"),
])
def test_a_wrong_way_import_is_caught(module, line, why):
    # the same checks over the real tree with one line added to one module
    source = KNOWN[module].read_text() + "\n" + line + "\n"
    bad = wrong_way(_imports_with({module: source}))
    assert len(bad) == 1 and module in bad[0] and why in bad[0]


def test_a_cycle_between_files_and_packages_is_caught():
    sources = {"skiff.jobs.store": KNOWN["skiff.jobs.store"].read_text()
               + "\nfrom .process import ProcessRunner\n",
               "skiff.kinds.demo": KNOWN["skiff.kinds.demo"].read_text()
               + "\ndef f():\n    from skiff.jobs import launch\n"}
    found = _imports_with(sources)
    assert any("skiff.jobs.store" in c for c in module_cycles(found))
    assert any("skiff.jobs" in c and "skiff.kinds" in c for c in package_cycles(found, KNOWN))


def _loaded(module: str, prefixes: tuple[str, ...]) -> list[str]:
    code = (f"import sys, importlib; importlib.import_module({module!r}); "
            f"print(' '.join(m for m in sys.modules if m.startswith({prefixes!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT.parent)
    return out.stdout.split()


JUPYTER = ("IPython", "ipywidgets", "ipykernel")


@pytest.mark.parametrize("module", ["skiff.kernels.solve", "skiff.kernels.train.trainer",
                                    "skiff.kernels.ocr", "skiff"])
def test_kernels_load_no_jupyter_or_jobs_module(module):
    assert _loaded(module, (*JUPYTER, "skiff.jobs", "skiff.widgets", "skiff.magics",
                            "skiff.kinds", "skiff.grammar")) == []


def test_the_terminal_cli_loads_no_jupyter_module():
    assert _loaded("skiff.cli", (*JUPYTER, "skiff.magics", "skiff.widgets")) == []


@pytest.mark.parametrize("module", ["skiff.kinds", "skiff.magics"])
def test_the_fronts_load_no_solver_until_a_solve_is_asked(module):
    """The kinds' registry (every CLI command, ``%load_ext skiff``) leaves the solve kernels
    and SciPy (~0.3 s) unloaded: ``python -m skiff ocr`` never needs them."""
    assert _loaded(module, ("scipy", "skiff.kernels.solve")) == []
    code = ("import sys; from skiff.kinds import get; get('solve').command.parse('poisson'); "
            "print('skiff.kernels.solve.solver' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT.parent)
    assert out.stdout.split() == ["True"]  # a solve command's grammar loads them
