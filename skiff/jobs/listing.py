"""Choosing and removing jobs for ``%jobs`` / ``skiff jobs``: newest first, filtered by kind
and state, at most ``limit`` (saying how many more there are); ``rm`` and ``prune`` delete
finished run folders only, never one a job is still running in, nor one whose checkpoints a
kept job resumed from."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from .job import DamagedJob, load_or_damaged
from .shared_name import SeveralJobs, _one_run  # noqa: F401 - their home until round 48
from .shared_name import one_job as _one_job
from .store import (
    DamagedRunFolder,
    find_run_dir,
    is_run_dir,
    list_run_dirs,
    read_meta,
    runs_root,
)

__all__ = ["JobList", "select_jobs", "remove_jobs", "prune_jobs", "one_job", "job_run_dir",
           "SeveralJobs"]


def job_run_dir(job_id: str, action: str = "show", root=None) -> Path:
    """The run folder of the job ``job_id`` names (:func:`find_run_dir`) under the rule of
    :func:`one_job`: a name several jobs share is refused (:class:`SeveralJobs`), unless
    they are one run resumed (its newest). For ``predict JOB``, ``generate JOB``, ``ocr
    --rec-model JOB``: the newest of two trainings of one name was taken silently."""
    picked = one_job(job_id, action, root)
    path = Path(picked)
    return path if path.is_absolute() and is_run_dir(path) else find_run_dir(picked, root)


def one_job(job_id, action: str = "show", root=None, *, every: bool = False):
    """What the job verbs (show, logs, wait, attach, cancel, resume, trust, rm) take for
    ``job_id``: :func:`skiff.jobs.shared_name.one_job`, each job listed with its status."""
    return _one_job(job_id, action, root, every=every,
                    status=lambda d: load_or_damaged(d, root, metrics=False).status)


class JobList(list):
    """Jobs, newest first, and how many more matched than are in the list; ``total`` jobs
    were looked at, in the runs folder ``root`` (an empty list says where it looked)."""

    def __init__(self, jobs=(), hidden: int = 0, *, total: int | None = None,
                 root=None, filters: str = "", hidden_running: tuple[str, ...] = ()):
        super().__init__(jobs)
        self.hidden = hidden
        self.hidden_running = tuple(hidden_running)  # ids of those not listed that still run
        self.total = total
        self.root = root
        self.filters = filters


def _created(job) -> float:
    value = job.meta.get("created") if isinstance(getattr(job, "meta", None), dict) else None
    return float(value) if isinstance(value, (int, float)) else 0.0


def select_jobs(jobs, *, limit: int | None = 20, kind: str | None = None,
                status: str | None = None, root=None) -> JobList:
    """``jobs`` newest first, of ``kind`` and in ``status`` when given, at most ``limit``."""
    jobs = list(jobs)
    chosen = [j for j in jobs if (kind is None or j.kind == kind)
              and (status is None or j.status == status)]
    chosen.sort(key=lambda j: (_created(j), j.id), reverse=True)
    about = {"total": len(jobs), "root": str(runs_root(root)),
             "filters": " ".join(f for f in (status, kind) if f)}
    if limit is None or len(chosen) <= limit:
        return JobList(chosen, **about)
    # a long training behind 20 quick jobs was among "180 older jobs not shown", unsaid; a
    # folder with folded.json (written at a final status) is not read again for it
    running = [j.id for j in chosen[limit:] if not isinstance(j, DamagedJob)
               and not (j.run_dir / "folded.json").exists() and not j.refresh().final]
    return JobList(chosen[:limit], hidden=len(chosen) - limit, hidden_running=running,
                   **about)


def _removable(job) -> str | None:
    """Why ``job``'s folder may not be removed, or None."""
    if isinstance(job, DamagedJob):
        return None
    if not job.refresh().final:
        return f"job {job.id} is still {job.status}: cancel it first"
    return None


def _remove(job, root=None, *, dry_run: bool = False) -> str:
    root = runs_root(root).resolve()
    folder = job.run_dir.resolve()
    if folder.parent != root:  # a folder of the runs root, and nothing else
        raise ValueError(f"{folder} is not a run folder under {root}")
    if not dry_run:
        shutil.rmtree(folder)
    return job.id


def _resumed_from(root=None) -> dict[Path, list[str]]:
    """Run folder -> the ids of the other jobs whose checkpoints are in it: a resumed
    training goes on writing into the ``checkpoints`` of the job it resumed, so removing
    that job's folder took the checkpoints its resume needs (resumed again, it started from
    step 0)."""
    root = runs_root(root).resolve()
    found: dict[Path, list[str]] = {}
    for folder in list_run_dirs(root):
        try:
            meta = read_meta(folder)
        except DamagedRunFolder:
            continue
        where = meta.get("config", {}).get("checkpoint_dir")
        if not isinstance(where, str) or not where:
            continue
        home = Path(where).resolve().parent
        if home.parent == root and home != folder.resolve():
            found.setdefault(home, []).append(str(meta["id"]))
    return found


def _needed_by(job, resumed: dict, leaving) -> list[str]:
    """The jobs not among ``leaving`` (folders) whose checkpoints are in ``job``'s folder."""
    users = resumed.get(job.run_dir.resolve(), [])
    gone = {f.name for f in leaving}
    return [u for u in users if u not in gone]


def remove_jobs(ids, root=None, *, dry_run: bool = False, every: bool = False) -> list[str]:
    """Remove the run folders of the finished (or damaged) jobs ``ids`` (under ``root``,
    default :func:`runs_root`); a running job is refused, and nothing is removed when any of
    them is refused. ``dry_run``: the ids it would remove, nothing removed. A name several
    jobs share is refused (:func:`one_job`), unless ``every``: then every job of it."""
    folders = []
    for i in ids:  # one job named twice (its id and its name, a prefix) is removed once
        picked = one_job(str(i), "rm", root, every=every)
        for word in picked if isinstance(picked, list) else [picked]:
            folder = Path(word) if Path(word).is_absolute() and is_run_dir(Path(word)) \
                else find_run_dir(word, root)
            if folder.resolve() not in [f.resolve() for f in folders]:
                folders.append(folder)
    jobs = [load_or_damaged(folder, root) for folder in folders]
    refused = [why for why in map(_removable, jobs) if why]
    resumed = _resumed_from(root)
    for job in jobs:
        if users := _needed_by(job, resumed, [f.resolve() for f in folders]):
            refused.append(f"job {job.id} holds the checkpoints that {' and '.join(users)} "
                           f"resumed from and write{'s' if len(users) == 1 else ''} to: "
                           f"remove {'it' if len(users) == 1 else 'them'} too "
                           f"(jobs rm {' '.join(users)} {job.id}), or keep it")
    if refused:
        raise ValueError("; ".join(refused))
    return [_remove(j, root, dry_run=dry_run) for j in jobs]


PRUNED = ("done", "failed", "cancelled", "damaged")  # the statuses prune may remove


def prune_jobs(jobs, *, older_than: float | None = None, keep: int | None = None,
               kind: str | None = None, status: str | None = None,
               dry_run: bool = False) -> list[str]:
    """Remove finished jobs (and damaged folders) created longer than ``older_than``
    seconds ago, beyond the newest ``keep`` finished ones; at least one of the two is
    needed, so that a bare ``prune`` removes nothing by surprise. ``kind`` and ``status``
    narrow the jobs pruned (and kept): ``--status damaged --keep 0`` removes the damaged
    folders only (``--status`` was dropped: it removed every finished job)."""
    if older_than is None and keep is None:
        narrowed = " ".join(f"--{k} {v}" for k, v in (("kind", kind), ("status", status)) if v)
        every = f" ({narrowed} --keep 0 removes every such finished job)" if narrowed else ""
        raise ValueError(f"prune needs --older-than AGE (like 7d) or --keep N (or both)"
                         f"{every}")
    if status is not None and status not in PRUNED:
        raise ValueError(f"prune removes finished jobs and damaged folders: --status {status} "
                         f"is none of them (choose from {', '.join(PRUNED)})")
    done = select_jobs([j for j in jobs if isinstance(j, DamagedJob) or j.refresh().final],
                       limit=None, kind=kind, status=status)
    candidates = list(done)[keep or 0:] if keep is not None else list(done)
    if older_than is not None:
        cutoff = time.time() - older_than
        candidates = [j for j in candidates if _created(j) < cutoff]
    resumed = _resumed_from()  # a kept job's checkpoints are not pruned with their folder
    leaving = [j.run_dir.resolve() for j in candidates]
    return [_remove(j, dry_run=dry_run) for j in candidates
            if _removable(j) is None and not _needed_by(j, resumed, leaving)]
