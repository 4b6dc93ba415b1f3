"""The import graph of skiff and the layer rules it must follow (used by test_layers.py).

Every ``import`` and ``from ... import`` of every module is read from its source, at module
level and inside functions alike, and resolved to the skiff module it names.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

# Layers, top to bottom. A module may import its own unit and any unit of a lower layer;
# units of one layer (a tuple of several) may not import each other. Written once here and
# in docs/architecture.md.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("skiff",),
    ("skiff.__main__", "skiff.api", "skiff.nn", "skiff.optim", "skiff.autograd", "skiff.data",
     "skiff.models", "skiff.aero", "skiff.utils"),
    ("skiff.extension",),
    ("skiff.magics", "skiff.cli", "skiff.lab"),
    ("skiff.widgets",),
    ("skiff.jobs",),
    ("skiff.kinds",),
    ("skiff.grammar",),
    ("skiff.kernels.ocr_train", "skiff.kernels.aero"),
    ("skiff.kernels.train", "skiff.kernels.solve", "skiff.kernels.ocr"),
    ("skiff.kernels.backend",),
)
# Two files that import each other, allowed with the reason why. Only a lazy import (inside a
# function) may close such a circle; a module-level cycle is never allowed.
ALLOWED_CIRCLES = {
    ("skiff.kernels.train.core.autograd", "skiff.kernels.train.core.tensor"):
        "the graph engine returns its outputs as Tensors, and tensor.py is built on the "
        "engine: Function.apply looks the Tensor class up once, at the first op",
}
# the rule the issue names first: the ground floor never reaches up
KERNEL_FORBIDDEN = ("skiff.jobs", "skiff.kinds", "skiff.grammar", "skiff.widgets",
                    "skiff.magics", "skiff.cli", "skiff.extension")


@dataclass(frozen=True)
class Import:
    source: str   # the importing module
    target: str   # the skiff module imported
    line: int
    nested: bool  # inside a function or class body

    def __str__(self):
        where = "inside a function" if self.nested else "at module level"
        return f"{self.source}:{self.line} imports {self.target} ({where})"


def modules(root: Path) -> dict[str, Path]:
    """Module name -> file for every .py file of the package at ``root`` (``.../skiff``)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _targets(module: str, node, is_package: bool, known: dict) -> list[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[:len(package) - (node.level - 1)]
            base = ".".join(package + ([base] if base else []))
        names = []
        for alias in node.names:
            full = f"{base}.{alias.name}"
            names.append(full if full in known else base)
    return [n for n in names if n == "skiff" or n.startswith("skiff.")]


def imports(known: dict[str, Path], sources: dict[str, str] | None = None) -> list[Import]:
    """Every skiff import of every module (``sources`` overrides what files hold)."""
    found = []
    for module, path in known.items():
        text = (sources or {}).get(module)
        tree = ast.parse(text if text is not None else path.read_text())
        is_package = path.name == "__init__.py"
        top = set()
        for node in tree.body:
            block = [node]
            if isinstance(node, (ast.If, ast.Try)):  # TYPE_CHECKING / optional imports
                block = list(ast.walk(node))
            top.update(id(n) for n in block if isinstance(n, (ast.Import, ast.ImportFrom)))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(module, node, is_package, known):
                    found.append(Import(module, target, node.lineno, id(node) not in top))
    return found


def unit_of(module: str) -> tuple[int, str] | None:
    """(layer index, unit) of a module: the longest unit name that is its prefix."""
    best = None
    for depth, layer in enumerate(LAYERS):
        for unit in layer:
            if module == unit or module.startswith(unit + "."):
                if best is None or len(unit) > len(best[1]):
                    best = (depth, unit)
    return best


def wrong_way(found: list[Import]) -> list[str]:
    """Imports that go up a layer, or sideways between units of one layer."""
    bad = []
    for imp in found:
        a, b = unit_of(imp.source), unit_of(imp.target)
        if a is None or b is None:
            bad.append(f"{imp}: a module outside the layers (add it to LAYERS)")
            continue
        if a[1] == b[1]:
            continue
        if b[0] < a[0]:
            bad.append(f"{imp}: {a[1]} may not import {b[1]}, a layer above it")
        elif b[0] == a[0]:
            bad.append(f"{imp}: {a[1]} and {b[1]} are side by side and may not import "
                       "each other")
    return bad


def package_cycles(found: list[Import], known: dict) -> list[str]:
    """Cycles between packages (every package and subpackage, all imports counted)."""
    packages = {m for m, p in known.items() if p.name == "__init__.py"}

    def package(m: str) -> str:
        return m if m in packages else m.rpartition(".")[0]

    graph: dict[str, set[str]] = {}
    for imp in found:
        a, b = package(imp.source), package(imp.target)
        # a package imports its own subpackages (re-exports) and its parents hold it:
        # only edges between packages where neither contains the other count
        if a == b or b.startswith(a + ".") or a.startswith(b + "."):
            continue
        graph.setdefault(a, set()).add(b)
    return [" -> ".join(c) for c in _cycles(graph)]


def module_cycles(found: list[Import]) -> list[str]:
    """Circles between files through module-level imports."""
    graph: dict[str, set[str]] = {}
    for imp in found:
        if not imp.nested and imp.source != imp.target:
            graph.setdefault(imp.source, set()).add(imp.target)
    return [" -> ".join(c) for c in _cycles(graph)]


def file_circles(found: list[Import]) -> list[str]:
    """Two files that import each other, at any depth (a cycle hidden in a function)."""
    pairs = {(i.source, i.target) for i in found if i.source != i.target}
    return sorted(f"{a} <-> {b}" for a, b in pairs if (b, a) in pairs and a < b
                  and not b.startswith(a + ".") and not a.startswith(b + ".")
                  and (a, b) not in ALLOWED_CIRCLES)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component with more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan, iterative enough for a package's depth
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps
