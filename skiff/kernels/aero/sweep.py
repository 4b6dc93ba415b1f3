"""A sweep over the nose's shape parameters: many solves as parallel processes.

``sweep(n=64, length=(2, 5), bluntness=(0, 1), clearance=(0.1, 0.3), re=1000, np=2)`` draws
``n`` shapes by Latin hypercube sampling of the box (seeded), solves each in a pool of ``np``
worker processes (never more than the machine's cores) and returns :class:`Samples`: the
parameters, ``cd``, ``cl``, cells and seconds per shape, and the sweep's wall time.

The workers are started with ``spawn`` (no fork of a process that may hold threads, gmsh or
a notebook kernel), so a *script* that calls ``sweep(np=2)`` needs the usual
``if __name__ == "__main__":`` guard; a notebook does not.
"""

from __future__ import annotations

import json
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import numpy
import numpy as np

from skiff.kernels.solve.flow.nose import NoseShape, check_re

__all__ = ["PARAMS", "Samples", "sweep", "check_domain"]

PARAMS = ("length", "bluntness", "clearance")


def _count(n: int, word: str, plural: str | None = None) -> str:
    """``1 image``, ``2 images``: a count and its noun."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


@dataclass
class Samples:
    """The solves of a sweep (row ``i`` of ``params`` is ``(length, bluntness,
    clearance)``)."""

    params: np.ndarray
    cd: np.ndarray
    cl: np.ndarray
    cells: np.ndarray
    seconds: np.ndarray
    domain: dict
    re: float
    adapt: str = "graded"
    resolution: float | None = None
    wall_seconds: float = 0.0
    workers: int = 1
    failed: list = field(default_factory=list)
    # 'steady' or 'unsteady' per shape (a time average of a flow with no steady solve); None
    # for samples saved before round 31
    modes: list | None = None

    @property
    def unsteady(self) -> list:
        """Indices of the shapes whose cd is a time average (the steady solve failed)."""
        return [i for i, m in enumerate(self.modes or []) if m == "unsteady"]

    def __len__(self) -> int:
        return len(self.cd)

    def subset(self, index) -> Samples:
        index = np.asarray(index)
        return Samples(self.params[index], self.cd[index], self.cl[index], self.cells[index],
                       self.seconds[index], dict(self.domain), self.re, self.adapt,
                       self.resolution, 0.0, self.workers, [],
                       None if self.modes is None else [self.modes[i] for i in
                                                        np.arange(len(self))[index]])

    def to_json(self) -> dict:
        return {"params": self.params.tolist(), "cd": self.cd.tolist(), "cl": self.cl.tolist(),
                "cells": self.cells.tolist(), "seconds": self.seconds.tolist(),
                "domain": {k: list(v) for k, v in self.domain.items()}, "re": self.re,
                "adapt": self.adapt, "resolution": self.resolution,
                "wall_seconds": self.wall_seconds, "workers": self.workers,
                "failed": self.failed, "modes": self.modes}

    def save(self, path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_json()))
        return path

    @classmethod
    def load(cls, path) -> Samples:
        """Samples saved by :meth:`save`, or the solves a sweep's ``checkpoint`` file holds
        so far (a sweep still running, or killed: fit on what is done)."""
        text = Path(path).read_text()
        first = text.split("\n", 1)[0]
        if first.startswith('{"sweep"'):
            return cls._from_checkpoint(Path(path))
        d = json.loads(text)
        return cls(np.array(d["params"], float), np.array(d["cd"], float),
                   np.array(d["cl"], float), np.array(d["cells"], int),
                   np.array(d["seconds"], float), {k: tuple(v) for k, v in d["domain"].items()},
                   d["re"], d["adapt"], d["resolution"], d["wall_seconds"], d["workers"],
                   d["failed"], d.get("modes"))

    @classmethod
    def _from_checkpoint(cls, path: Path) -> Samples:
        settings = json.loads(path.read_text().split("\n", 1)[0])["sweep"]
        rows = list(_read_checkpoint(path, settings).values())
        ok = [r for r in rows if r.get("error") is None]
        return cls(np.array([r["params"] for r in ok], float).reshape(-1, 3),
                   np.array([r["cd"] for r in ok], float), np.array([r["cl"] for r in ok], float),
                   np.array([r["cells"] for r in ok], int),
                   np.array([r["seconds"] for r in ok], float),
                   {k: tuple(v) for k, v in settings["domain"].items()}, settings["re"],
                   settings["adapt"], settings["resolution"], 0.0, 0,
                   [{"params": r["params"], "error": r["error"]} for r in rows
                    if r.get("error") is not None], [r["mode"] for r in ok])

    def __repr__(self) -> str:
        serial = float(np.sum(self.seconds))
        failed = f", {len(self.failed)} failed" if self.failed else ""
        if self.unsteady:
            failed += (f", {len(self.unsteady)} time-averaged (no steady solve: "
                       f"Samples.unsteady)")
        on = _count(self.workers, "process", "processes")
        wall = (f"wall {self.wall_seconds:.1f} s on {on}" if self.workers else
                "read from a sweep's checkpoint")
        return (f"<Samples {_count(len(self), 'shape')}, Re {self.re:g}, {self.adapt} grids: "
                f"{wall} (solves add up to {serial:.1f} s){failed}>")


def check_domain(**ranges) -> dict:
    """``{name: (lo, hi)}`` checked: each a pair with ``lo < hi`` inside the model's limits,
    or one number (or ``lo == hi``): that parameter held fixed, ``(v, v)`` (round 45: a
    sweep over two parameters, ``sweep(clearance=0.15)``, was refused "clearance must be a
    range")."""
    out = {}
    for name in PARAMS:
        value = ranges.get(name)
        if isinstance(value, (int, float, numpy.integer, numpy.floating)) and \
                not isinstance(value, bool):
            value = (value, value)
        try:
            lo, hi = (float(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a range (lo, hi) or one number (held fixed), "
                             f"got {value!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
            raise ValueError(f"{name} range must have lo < hi (or one number, held fixed), "
                             f"got {value!r}")
        NoseShape(**{**{"length": 3.0, "bluntness": 0.4, "clearance": 0.15}, name: lo})
        NoseShape(**{**{"length": 3.0, "bluntness": 0.4, "clearance": 0.15}, name: hi})
        out[name] = (lo, hi)
    return out


def _exit_with_parent():
    """A worker's initializer: a thread that ends the worker when the sweep's process dies
    (killed, or its notebook kernel restarted). Without it the spawned workers wait forever
    on their task queue (they hold its write end themselves), orphaned."""
    import multiprocessing as mp
    import threading

    parent = mp.parent_process()
    if parent is None:
        return

    def watch():
        parent.join()
        os._exit(1)

    threading.Thread(target=watch, name="skiff-sweep-parent-watch", daemon=True).start()


def _solve_one(args):
    i, params, re, adapt, resolution, mode = args
    from skiff.kernels.solve.flow.nose_job import solve_nose

    t0 = time.perf_counter()
    try:
        flow = solve_nose(*params, re=re, adapt=adapt, resolution=resolution, keep=False,
                          mode=mode)
    except Exception as exc:                                      # reported, not raised
        return i, None, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0
    return i, (flow.cd, flow.cl, flow.cells, flow.mode), None, time.perf_counter() - t0


def _settings(re, adapt, resolution, mode, domain) -> dict:
    return {"re": re, "adapt": adapt, "resolution": resolution, "mode": mode,
            "domain": {k: list(v) for k, v in domain.items()}}


def _read_checkpoint(path: Path, settings: dict) -> dict:
    """The rows a checkpoint file holds, ``{params: row}``; the file is created with its
    settings line when missing; a last line cut short (the sweep killed while writing it)
    is dropped from the file. Refuses a file written by a sweep with other settings."""
    if not path.exists() or path.stat().st_size == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"sweep": settings}) + "\n")
        return {}
    text = path.read_text()
    lines = text.split("\n")
    good, rows = [], {}
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            if k == len(lines) - 1:                  # the last line, cut short: dropped
                break
            raise ValueError(f"checkpoint {str(path)!r} line {k + 1} is not a sweep row: "
                             f"{line[:60]!r}") from None
        if k == 0 and not (isinstance(item, dict) and "sweep" in item):
            raise ValueError(f"{str(path)!r} is not a sweep checkpoint (its first line is "
                             "not the sweep's settings); give a new file name")
        if k == 0:
            theirs = item["sweep"]
            diff = [f"{key} {theirs.get(key)!r} there, {settings[key]!r} here"
                    for key in settings if theirs.get(key) != settings[key]]
            if diff:
                raise ValueError(f"checkpoint {str(path)!r} holds a sweep with other "
                                 f"settings ({'; '.join(diff)}): give another file, or the "
                                 "settings it was written with")
        else:
            rows[tuple(item["params"])] = item
        good.append(line)
    if text != "\n".join(good) + "\n":
        path.write_text("\n".join(good) + "\n")
    return rows


def _check_resolution(points, adapt: str, resolution) -> None:
    """A given ``resolution`` that cannot hold the thinnest gap of the sweep's shapes is
    said before any solve (a ``UserWarning`` naming the resolution that holds it; those
    shapes then fail, each in ``failed`` with the same advice): a 3-shape sweep at
    resolution 14 failed 2 shapes after solving the third, each "too coarse" alone."""
    if resolution is None or adapt not in ("graded", "uniform") or not len(points):
        return
    from skiff.kernels.solve.flow.adapt import graded_size, uniform_size
    from skiff.kernels.solve.flow.nose_job import needed_resolution

    i = int(numpy.argmin(points[:, 2]))
    shape = NoseShape(*points[i])
    def make(r):
        return graded_size(shape, r) if adapt == "graded" else uniform_size(shape, r)

    need = needed_resolution(shape, resolution, make(resolution), make)
    if need is not None:
        import warnings

        warnings.warn(f"resolution {float(resolution):g} is too coarse for this sweep: the "
                      f"thinnest gap (clearance {points[i, 2]:.4g}) needs resolution {need} "
                      f"or finer on {adapt} grids, and the shapes it cannot hold will fail; "
                      f"pass resolution={need}, or leave it out (each shape gets its "
                      f"default)", UserWarning, stacklevel=3)


def sweep(n: int = 64, *, length=(2.0, 5.0), bluntness=(0.0, 1.0), clearance=(0.1, 0.3),
          re: float = 1000.0, adapt: str = "graded", resolution=None, np: int | None = None,
          seed: int = 0, points=None, progress=None, mode: str = "auto",
          checkpoint=None, **unknown) -> Samples:
    """Solve ``n`` shapes drawn from the box (or the rows of ``points``) with ``np`` worker
    processes (default: one per core; never more than the cores);
    ``progress(done, total, row)`` after each solve. Shapes that fail are listed in
    ``Samples.failed`` and left out. ``mode`` as :func:`solve_nose`'s: ``'auto'`` takes the
    time average where the steady solve fails (``Samples.unsteady`` lists those shapes: their
    cd carries the average's scatter, and each costs minutes), ``'steady'`` lists them as
    failed instead.

    ``checkpoint="sweep.jsonl"``: each solve is written to that file as it finishes (one JSON
    line); a sweep killed (a kernel interrupted, a machine lost) and called again with the
    same arguments and file solves only the shapes the file lacks, and returns them all. A
    file written with other settings (Re, grid, mode, box) is refused."""
    from scipy.stats import qmc

    if unknown:   # Re=500 was Python's bare "unexpected keyword argument" (round 35)
        from skiff.kernels.solve.flow.nose_job import unknown_keywords

        raise TypeError(unknown_keywords(
            "sweep", unknown, "n, length, bluntness, clearance (ranges in train heights), re "
            "(one Reynolds number), adapt, resolution, np, seed, points, progress, mode, "
            "checkpoint"))
    domain = check_domain(length=length, bluntness=bluntness, clearance=clearance)
    if isinstance(re, (tuple, list)):
        raise ValueError(f"re is one Reynolds number for the whole sweep (the shapes vary in "
                         f"length, bluntness and clearance), got {re!r}: run a sweep per Re")
    re = check_re(re)
    if mode not in ("auto", "steady", "unsteady"):
        raise ValueError(f"mode must be 'auto', 'steady' or 'unsteady', got {mode!r}")
    cores = os.cpu_count() or 1
    workers = cores if np is None else int(np)
    if workers < 1:
        raise ValueError(f"np must be >= 1, got {np!r}")
    if workers > cores:
        raise ValueError(f"np {workers} is more than this machine's {cores} cores")
    if points is None:
        if not (isinstance(n, int) and n >= 1):
            raise ValueError(f"n must be a positive integer, got {n!r}")
        unit = qmc.LatinHypercube(d=3, seed=seed).random(n)
        lo = numpy.array([domain[k][0] for k in PARAMS])
        hi = numpy.array([domain[k][1] for k in PARAMS])
        points = lo + unit * (hi - lo)
    points = numpy.asarray(points, dtype=float).reshape(-1, 3)
    for row in points:
        NoseShape(*row)
    _check_resolution(points, adapt, resolution)
    total = len(points)
    t0 = time.perf_counter()
    out = [None] * total
    spent = numpy.zeros(total)
    failed = []
    done_before = {}
    if checkpoint is not None:
        checkpoint = Path(checkpoint)
        done_before = _read_checkpoint(checkpoint, _settings(re, adapt, resolution, mode,
                                                             domain))
    jobs = []
    for i in range(total):
        row = done_before.get(tuple(float(v) for v in points[i]))
        if row is None:
            jobs.append((i, tuple(points[i]), re, adapt, resolution, mode))
        elif row.get("error") is None:
            out[i] = (row["cd"], row["cl"], row["cells"], row["mode"])
            spent[i] = row["seconds"]
        else:
            failed.append({"params": points[i].tolist(), "error": row["error"]})
            spent[i] = row["seconds"]
    done = total - len(jobs)
    if checkpoint is not None and done:
        import logging

        logging.getLogger(__name__).info("sweep: %d of %d shapes read from %s", done, total,
                                         checkpoint)
    log = checkpoint.open("a") if checkpoint is not None else None
    if workers == 1 or len(jobs) <= 1:
        results = map(_solve_one, jobs)
        pool = None
    else:
        import multiprocessing as mp

        old = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
        os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)),
                                   mp_context=mp.get_context("spawn"),
                                   initializer=_exit_with_parent)
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        results = as_completed([pool.submit(_solve_one, j) for j in jobs])
    try:
        for item in results:
            i, value, error, seconds = item if pool is None else item.result()
            spent[i] = seconds
            if error is None:
                out[i] = value
            else:
                failed.append({"params": points[i].tolist(), "error": error})
            if log is not None:
                row = {"i": i, "params": points[i].tolist(), "seconds": seconds}
                row.update({"error": error} if error is not None else dict(
                    zip(("cd", "cl", "cells", "mode"), (float(value[0]), float(value[1]),
                                                        int(value[2]), value[3]))))
                log.write(json.dumps(row) + "\n")
                log.flush()
            done += 1
            if progress is not None:
                progress(done, total, {"params": points[i].tolist(),
                                       "cd": None if value is None else value[0],
                                       "mode": None if value is None else value[3],
                                       "seconds": seconds})
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        if log is not None:
            log.close()
    ok = [i for i in range(total) if out[i] is not None]
    if not ok and failed:
        import warnings

        warnings.warn(f"all {_count(total, 'shape')} of the sweep failed (Samples.failed); "
                      f"the first: {failed[0]['params']}: {failed[0]['error']}", UserWarning,
                      stacklevel=2)
    vals = numpy.array([out[i][:3] for i in ok], dtype=float).reshape(-1, 3)
    modes = [out[i][3] for i in ok]
    if "unsteady" in modes:
        import warnings

        k = modes.count("unsteady")
        warnings.warn(f"{k} of {len(ok)} shapes have no steady solve at Re {re:g}: their cd "
                      "is a time average (Samples.unsteady lists them; mode='steady' leaves "
                      "them out)", UserWarning, stacklevel=2)
    return Samples(points[ok], vals[:, 0], vals[:, 1], vals[:, 2].astype(int), spent[ok],
                   domain, re, adapt, resolution, time.perf_counter() - t0,
                   min(workers, total), failed, modes)


