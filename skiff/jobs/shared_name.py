"""A ``--name`` several jobs share, where one job is meant (round 48: the rule of the job
verbs, :func:`one_job`, apart from :mod:`skiff.jobs.listing` so that :meth:`Job.load`
follows it too without a circle of imports)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .store import is_run_dir, named_run_dirs

__all__ = ["SeveralJobs", "one_job"]


class SeveralJobs(KeyError):
    """A ``--name`` that several jobs share, given where one job is meant (one line that
    lists them and how to choose); ``folders``: theirs, newest first."""

    def __init__(self, message: str, folders):
        super().__init__(message)
        self.folders = list(folders)

    def __str__(self) -> str:
        return str(self.args[0])


def _one_run(named) -> bool:
    """The jobs of one name are one run resumed: each after the oldest resumes another of
    them, by ``jobs resume`` (which gives the new job the name of the one it resumes) or by
    ``--resume --checkpoint-dir`` into that job's ``checkpoints`` (the line ``jobs resume
    ID --lr X`` gives), or a solve's ``--x0`` that job's ``partial.npz``."""
    ids = {d.name for d, _ in named}

    def resumes(d, meta) -> str | None:
        label = meta.get("label")
        if isinstance(label, str) and label.startswith("resume "):
            return label[len("resume "):]
        config = meta.get("config")
        where = config.get("checkpoint_dir") if isinstance(config, dict) and \
            config.get("resume") else None
        x0 = config.get("x0") if isinstance(config, dict) else None
        if isinstance(x0, str) and Path(x0).name == "partial.npz":  # a solve going on from
            where = x0  # that job's last iterate (`jobs resume ID --maxiter N`, round 47 h11)
        return Path(where).parent.name if isinstance(where, str) and where else None

    return all(resumes(d, meta) in ids - {d.name} for d, meta in named[1:])


def one_job(job_id, action: str = "show", root=None, *, every: bool = False,
            status: Callable[[Path], str] | None = None):
    """What the job verbs (show, logs, wait, attach, cancel, resume, trust, rm) take for
    ``job_id``: ``job_id`` itself (an id, a prefix or suffix, a run folder, a name one job
    has), or where a ``--name`` is shared by several jobs: the newest's run folder when they
    are one run resumed and ``action`` is not ``rm`` (the run going on), every one's with
    ``every`` (``rm NAME --all``), else :class:`SeveralJobs`, one line that lists them
    (id and status, newest first) and how to choose. The newest was taken silently (round
    46: ``jobs rm NAME`` of two jobs removed one and said nothing of the other)."""
    if not isinstance(job_id, str) or not job_id or is_run_dir(Path(job_id)):
        return job_id
    named = named_run_dirs(job_id, root)
    if len(named) < 2:
        return job_id
    folders = [d for d, _ in reversed(named)]
    if every:
        return [str(d) for d in folders]
    one_run = _one_run(named)
    if one_run and action != "rm":
        return str(folders[0])
    shown = ", ".join(f"{d.name}" + (f" ({status(d)})" if status is not None else "")
                      for d in folders[:5])
    more = f" and {len(folders) - 5} more" if len(folders) > 5 else ""
    how = (f"; give one's id, or --all to remove every job named {job_id!r}" if action == "rm"
           else "; give one's id")
    run = ", one run resumed" if one_run else ""
    raise SeveralJobs(f"the name {job_id!r} means {len(folders)} jobs{run} (newest first): "
                      f"{shown}{more}{how}", folders)
