"""The test files' costs (seconds each: setup + call + teardown of its tests, summed), the
table ``tests/file_costs.txt`` that ``tests/conftest.py`` orders a ``make test`` run by:
the costliest files first, so that the two xdist workers (``--dist loadfile``) end together
instead of one finishing a long file alone at the end (round 43, h4).

    python -m pytest tests -n 2 --dist loadfile --junitxml=/tmp/t.xml   # any full run
    python tools/test_costs.py /tmp/t.xml                  # rewrite tests/file_costs.txt
    python tools/test_costs.py /tmp/t.xml --simulate       # the schedule's end, both orders

A file missing from the table (a new one) counts as ``DEFAULT_PER_TEST`` seconds a test.
Re-run after a round that added slow files; figures under load are fine (only the order is
used), but take them from one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "tests", "file_costs.txt")
HEADER = ("# seconds per test file (setup + call + teardown, summed) from one full run;\n"
          "# written by tools/test_costs.py, read by tests/conftest.py to start the costliest\n"
          "# files first under xdist --dist loadfile\n")


def file_costs(junit: str) -> tuple[dict[str, float], dict[str, int]]:
    """{path: seconds}, {path: tests} from a pytest junit xml (``classname`` is the dotted
    module, plus the class for a test in a class)."""
    cost: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for case in ET.parse(junit).getroot().iter("testcase"):
        path = _path_of(case.get("classname", ""))
        if path is None:
            continue
        cost[path] += float(case.get("time") or 0.0)
        count[path] += 1
    return dict(cost), dict(count)


def _path_of(classname: str) -> str | None:
    parts = classname.split(".")
    for n in range(len(parts), 0, -1):  # the longest prefix that is a file
        path = "/".join(parts[:n]) + ".py"
        if os.path.isfile(os.path.join(ROOT, path)):
            return path
    return None


def write_table(cost: dict[str, float], path: str = TABLE) -> None:
    rows = sorted(cost.items(), key=lambda kv: (-kv[1], kv[0]))
    with open(path, "w") as fh:
        fh.write(HEADER)
        for name, seconds in rows:
            fh.write(f"{seconds:.2f} {name}\n")


def read_table(path: str = TABLE) -> dict[str, float]:
    table: dict[str, float] = {}
    try:
        with open(path) as fh:
            for line in fh:
                line = line.strip()
                if line and not line.startswith("#"):
                    seconds, name = line.split(maxsplit=1)
                    table[name] = float(seconds)
    except (OSError, ValueError):
        return {}
    return table


def simulate(units: list[tuple[str, float, int]], workers: int = 2) -> tuple[float, float]:
    """The makespan of xdist's loadfile schedule (3.8: each worker starts with two files and
    takes the next when two or fewer of its tests are left) for ``units`` (path, seconds,
    tests) in queue order; returns (makespan, the idle seconds of the workers at the end)."""
    import heapq

    queue = list(units)
    # each worker: a list of [seconds left per test] of its assigned files
    pending: list[list[float]] = [[] for _ in range(workers)]

    def assign(w):
        if queue:
            _, sec, n = queue.pop(0)
            pending[w].extend([sec / max(n, 1)] * max(n, 1))

    for w in range(workers):
        assign(w)
    for w in range(workers):
        if len(pending[w]) <= 2:
            assign(w)
    clock = [0.0] * workers
    events = [(0.0, w) for w in range(workers)]
    heapq.heapify(events)
    ends = [0.0] * workers
    while events:
        t, w = heapq.heappop(events)
        if not pending[w]:
            ends[w] = t
            continue
        clock[w] = t + pending[w].pop(0)
        if len(pending[w]) <= 2:
            assign(w)
        heapq.heappush(events, (clock[w], w))
    span = max(ends)
    return span, sum(span - e for e in ends)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("junit", help="a full run's --junitxml file")
    ap.add_argument("--simulate", action="store_true",
                    help="print the simulated end of xdist's default order and of this one")
    ap.add_argument("--out", default=TABLE)
    args = ap.parse_args(argv)
    cost, count = file_costs(args.junit)
    if not cost:
        print(f"no test cases found in {args.junit}", file=sys.stderr)
        return 1
    if args.simulate:
        units = [(p, cost[p], count[p]) for p in sorted(cost)]  # ~ the collection's order
        by_count = sorted(units, key=lambda u: -u[2])  # xdist's own reorder (stable)
        by_cost = sorted(units, key=lambda u: -u[1])
        for name, order in (("xdist's (most tests first)", by_count),
                            ("costliest first", by_cost)):
            span, idle = simulate(order)
            print(f"{name:28s} makespan {span:8.1f} s, workers idle at the end {idle:6.1f} s")
        print(f"sum of the files' seconds {sum(cost.values()):.1f} over {len(cost)} files")
        return 0
    write_table(cost, args.out)
    print(f"{len(cost)} files, {sum(cost.values()):.1f} s in all -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
