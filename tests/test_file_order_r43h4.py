"""Round 43 (h4): ``make test``'s two xdist workers take the test files costliest first
(``tests/file_costs.txt``, written by ``tools/test_costs.py`` from a full run's junit xml),
so the run ends on short files on both workers; xdist's own order (the files of most tests
first) left the long one- and two-test files (notebooks, browser, MPI launches) to the end,
where one worker ran the last of them alone."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import conftest

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("test_costs", ROOT / "tools" / "test_costs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _items(spec):
    return [SimpleNamespace(path=ROOT / path, name=f"{path}::{i}") for path, i in spec]


def test_the_costliest_file_goes_first_its_tests_in_their_order(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    monkeypatch.setattr(conftest, "_COSTS", [{"tests/a.py": 1.0, "tests/b.py": 30.0,
                                              "tests/c.py": 5.0}])
    items = _items([("tests/a.py", 0), ("tests/a.py", 1), ("tests/b.py", 0),
                    ("tests/new.py", 0), ("tests/new.py", 1), ("tests/c.py", 0),
                    ("tests/b.py", 1)])
    conftest._costliest_files_first(SimpleNamespace(rootpath=ROOT), items)
    # b (30 s) then c (5 s) then a (1 s); a file not in the table counts 0.2 s a test
    assert [it.name for it in items] == [
        "tests/b.py::0", "tests/b.py::1", "tests/c.py::0", "tests/a.py::0", "tests/a.py::1",
        "tests/new.py::0", "tests/new.py::1"]


def test_one_process_keeps_the_collections_order(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setattr(conftest, "_COSTS", [{"tests/b.py": 30.0}])
    items = _items([("tests/a.py", 0), ("tests/b.py", 0)])
    conftest._costliest_files_first(SimpleNamespace(rootpath=ROOT), items)
    assert [it.name for it in items] == ["tests/a.py::0", "tests/b.py::0"]


def test_the_controller_keeps_the_workers_order(monkeypatch):
    """xdist's own reorder (most tests first) is turned off where the table orders."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setattr(conftest, "_COSTS", [{"tests/b.py": 30.0}])
    option = SimpleNamespace(dist="loadfile", loadscopereorder=True, numprocesses=None)
    conftest.pytest_configure(SimpleNamespace(option=option))
    assert option.loadscopereorder is False
    option = SimpleNamespace(dist="load", loadscopereorder=True, numprocesses=None)
    conftest.pytest_configure(SimpleNamespace(option=option))
    assert option.loadscopereorder is True  # not a file-by-file schedule: left alone


def test_the_tool_sums_a_files_setup_call_and_teardown(tmp_path):
    tool = _tool()
    junit = tmp_path / "t.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_file_order_r43h4" name="t1" time="1.5"/>'
        '<testcase classname="tests.test_file_order_r43h4" name="t2" time="2.25"><skipped/>'
        '</testcase>'
        '<testcase classname="tests.notebooks.test_tour" name="test_tour_runs" time="9"/>'
        '<testcase classname="tests.gone_file" name="t" time="4"/>'  # not a file: left out
        '</testsuite></testsuites>')
    cost, count = tool.file_costs(str(junit))
    assert cost == {"tests/test_file_order_r43h4.py": 3.75, "tests/notebooks/test_tour.py": 9.0}
    assert count["tests/test_file_order_r43h4.py"] == 2
    out = tmp_path / "costs.txt"
    tool.write_table(cost, str(out))
    assert tool.read_table(str(out)) == cost
    assert out.read_text().splitlines()[3] == "9.00 tests/notebooks/test_tour.py"


def test_costliest_first_ends_the_run_sooner_in_xdists_schedule():
    """The case at issue, in the simulation of xdist 3.8's loadfile schedule: many quick
    files of many tests and three long files of one or two tests, which xdist's default
    order (most tests first) leaves to the end."""
    tool = _tool()
    units = [(f"q{i}.py", 2.0, 20) for i in range(40)] + [
        ("nb1.py", 25.0, 2), ("nb2.py", 22.0, 1), ("mpi.py", 18.0, 1)]
    default = sorted(units, key=lambda u: -u[2])
    span_default, idle_default = tool.simulate(default)
    span, idle = tool.simulate(sorted(units, key=lambda u: -u[1]))
    total = sum(u[1] for u in units)
    assert span_default >= total / 2 + 5, span_default  # one worker ran the tail alone
    assert span < span_default and span <= total / 2 + 2.0, (span, span_default)
    assert idle < idle_default


def test_the_table_names_files_that_exist():
    """A stale table only orders worse (a missing file counts its tests' default), but
    its costliest files must be this tree's: re-run tools/test_costs.py after moving them."""
    table = conftest._file_costs()
    if not table:
        pytest.skip("no tests/file_costs.txt")
    top = sorted(table, key=table.get, reverse=True)[:30]
    missing = [p for p in top if not os.path.isfile(ROOT / p)]
    assert not missing, f"run tools/test_costs.py on a full run's junit xml: {missing}"
