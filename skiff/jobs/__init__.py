"""Jobs: launch, follow, cancel and reattach to work that lives in a run folder."""

import time

from skiff.kernels.backend.report import JobCancelled, NullReporter, Reporter

from .events import EventReader, EventWriter, read_events
from .follow import follow, progress_line
from .job import DamagedJob, Job, JobFailed, JobNotDone, live_jobs, load_or_damaged
from .launch import choose_runner, launch, submit
from .listing import JobList, SeveralJobs, one_job, prune_jobs, remove_jobs, select_jobs
from .reporter import RunReporter
from .state import JobState
from .store import DamagedRunFolder, RunFolderError, find_run_dir, list_run_dirs, runs_root
from .trust import UntrustedJob

__all__ = [
    "DamagedJob",
    "DamagedRunFolder",
    "EventReader",
    "EventWriter",
    "Job",
    "JobCancelled",
    "JobFailed",
    "JobNotDone",
    "JobList",
    "JobState",
    "NullReporter",
    "Reporter",
    "RunFolderError",
    "RunReporter",
    "SeveralJobs",
    "choose_runner",
    "follow",
    "jobs_action",
    "launch",
    "list_jobs",
    "list_run_dirs",
    "live_jobs",
    "progress_line",
    "read_events",
    "resume",
    "runs_root",
    "submit",
    "UntrustedJob",
    "cancel_job",
    "ended_note",
    "trust_note",
]


def list_jobs(root=None, *, metrics: bool = True) -> list[Job | DamagedJob]:
    """Every job with a run folder under the runs root, oldest first (reattached); a folder
    that cannot be read is listed as a :class:`DamagedJob` with why. ``metrics=False``:
    snapshots without their metrics, not followed (a terminal's listing: :meth:`Job.load`)."""
    return [load_or_damaged(d, root, metrics=metrics) for d in list_run_dirs(root)]


def jobs_action(action: str, job_id: str | None = None, *, all: bool = False,
                timeout: float | None = None, limit: int = 20, kind: str | None = None,
                status: str | None = None, more_ids=(), older_than: float | None = None,
                keep: int | None = None, front: str = "cli", metrics: bool = True,
                dry_run: bool = False, on_created=None):
    """The work behind ``%jobs`` and ``python -m skiff jobs``: a list of jobs (newest
    first), one job, or the ids removed (``rm``, ``prune``). ``logs`` returns the job (its
    ``logs`` are what the fronts print); ``resume`` returns the new job (:func:`resume`),
    whose command is the one that front types (``front``: ``"cli"`` or ``"magic"``).

    ``show``, ``attach``, ``wait`` and ``resume`` refuse a job whose code is not signed with
    this user's key (:mod:`skiff.jobs.trust`); ``trust`` signs it on purpose. ``metrics=False``
    lists snapshots without their metrics (a front that prints the list and drops it), and
    ``show`` / ``logs`` a finished job as one (a terminal prints no metric of it).
    ``dry_run`` (``rm``, ``prune``): the ids that would be removed, after every check a
    removal makes; nothing is removed. A ``--name`` several jobs share is one rule for every
    verb (:func:`skiff.jobs.listing.one_job`): refused in one line that lists them, except a
    run resumed (its newest, the run going on; not for ``rm``); ``rm NAME --all``
    (``all``) removes every job of that name."""
    listed = None
    if dry_run and action not in ("rm", "prune", "resume"):
        raise ValueError(f"--dry-run goes with rm and prune (what they would remove) and with "
                         f"resume (what it would run); jobs {action} changes nothing")
    if kind is not None:
        from skiff.grammar.common import unknown_name
        from skiff.kinds import KINDS

        if kind not in KINDS:  # a mistyped kind listed nothing ("no jobs yet")
            # a kind of skiff's, or one a job here has (skiff.launch("mykind", fn=...))
            listed = list_jobs(metrics=False)
            seen = sorted({j.kind for j in listed if not isinstance(j, DamagedJob)} - set(KINDS))
            if kind not in seen:
                raise unknown_name("kind", kind, [*KINDS, *seen])
    if action in ("list", "prune") and job_id:  # 'jobs list foo' listed every job
        raise ValueError(f"jobs {action} takes no job ID, got {job_id!r}: filter with "
                         f"--kind, --status or --limit")
    if more_ids and action not in ("rm", "wait"):  # 'jobs show a b' showed a alone
        raise ValueError(f"jobs {action} takes one job ID, got {1 + len(more_ids)} "
                         f"({', '.join([job_id, *more_ids])}); only rm and wait take "
                         f"several")
    if action == "list":
        return select_jobs(listed if listed is not None else list_jobs(metrics=metrics),
                           limit=None if all else limit, kind=kind, status=status)
    if action == "prune":
        return prune_jobs(listed if listed is not None else list_jobs(metrics=False),
                          older_than=older_than, keep=keep, kind=kind, status=status,
                          dry_run=dry_run)
    if not job_id:
        raise ValueError(f"jobs {action} needs a job ID: the list gives them (%jobs in a "
                         f"notebook, python -m skiff jobs in a terminal)")
    if action == "rm":
        return remove_jobs([job_id, *more_ids], dry_run=dry_run, every=all)
    if action == "wait" and more_ids:
        return wait_jobs([job_id, *more_ids], timeout=timeout)
    job_id = one_job(job_id, action)  # a name several jobs share: said, or the run going on
    if action == "trust":
        job = Job(job_id if _is_folder(job_id) else find_run_dir(job_id))
        before = job.trust
        if before != "trusted":  # one already signed with this key: nothing to write
            job.sign()
        out = Job.load(job.run_dir)
        out.trust_before = before  # what the fronts say of it (trust_note)
        return out
    # a terminal's show / logs print no metric; a resume reads none (it read every metric
    # line of a killed training, whose log is never folded: 200,000 steps' worth)
    light = action == "resume" or (not metrics and action in ("show", "logs"))
    job = Job.load(job_id, metrics=not light)
    if light and not job.refresh().final:
        job = Job.load(job_id)  # running: followed as before, its last metric shown
    if action in ("show", "attach", "wait"):
        job.check_trusted(action)
    if action == "wait":
        _wait_one(job, timeout)
    elif action == "cancel":
        job.cancel()  # a finished job: harmless (cancel_job tells the fronts it had ended)
    elif action == "resume":
        return resume(job, front=front, dry_run=dry_run, on_created=on_created)
    return job


def _is_folder(word: str) -> bool:
    from pathlib import Path

    from .store import is_run_dir

    return is_run_dir(Path(word))


def _wait_one(job: Job, timeout: float | None) -> None:
    if job.meta.get("runner") == "process":   # a watcher holds the job while it waits
        from .holders import hold

        with hold(job.run_dir):
            job.wait(timeout=timeout)
    else:
        job.wait(timeout=timeout)


def wait_jobs(job_ids: list[str], timeout: float | None = None) -> list[Job]:
    """``jobs wait A B C``: every job found and trusted first (an unknown id refuses the
    whole wait before any is waited for), then each waited for, ``timeout`` the whole
    wait's; the jobs in the order named, each once. It refused several ids (round 44: a
    notebook that starts three jobs waits for the three in one line). A wait that runs out
    raises :class:`TimeoutError` naming the first job not ended, with ``.jobs``."""
    jobs: dict[str, Job] = {}
    for job_id in job_ids:
        job = Job.load(one_job(job_id, "wait"))
        jobs.setdefault(job.id, job)
    for job in jobs.values():
        job.check_trusted("wait")
    end = None if timeout is None else time.monotonic() + timeout
    for job in jobs.values():
        try:
            _wait_one(job, None if end is None else max(0.0, end - time.monotonic()))
        except TimeoutError:
            exc = TimeoutError(f"job {job.id} still {job.status} after {timeout:g} s")
            exc.jobs = list(jobs.values())
            raise exc from None
    return list(jobs.values())


def cancel_job(job_id: str, grace: float | None = None) -> tuple[Job, bool]:
    """``jobs cancel ID [--grace S]``: the job and whether a cancel was asked, False when it
    had already ended (the fronts say so: a job's earlier run, found by its --name, looked
    cancelled). ``grace``: the seconds a job that does not stop at its next step is given
    before it is signalled (default 5; :meth:`Job.cancel`)."""
    if grace is not None and not grace >= 0:
        raise ValueError(f"--grace is seconds, 0 or more, got {grace}")
    job = Job.load(one_job(job_id, "cancel"))
    return job, job.cancel(**({} if grace is None else {"grace": float(grace)}))


def trust_note(job: Job) -> str:
    """What ``jobs trust ID`` says, one line: whether the folder's code was signed now or
    needed no trust (round 42: it printed the job's ``show`` and nothing of trust)."""
    before = getattr(job, "trust_before", None)
    if before == "trusted":
        return (f"job {job.id} needed no trust: its code was already signed with your key "
                f"(nothing changed)")
    was = {"unsigned": "unsigned", "altered": "changed or signed with another key"}.get(
        str(before), str(before))
    return f"job {job.id} trusted: its code ({was}) is now signed with your key"


def ended_note(job: Job) -> str:
    """What ``jobs cancel`` says of a job that had already ended."""
    return f"job {job.id} had already ended ({job.status}): nothing to cancel"


def _resuming_kind(job: Job):
    """The kind that goes on with ``job`` (refused: a kind that cannot, a job not ended)."""
    from skiff.kinds import KINDS, Kind

    kind = KINDS.get(job.kind)
    if kind is None or type(kind).resume_config is Kind.resume_config:
        can = [n for n, k in KINDS.items() if type(k).resume_config is not Kind.resume_config]
        said = f"{', '.join(can[:-1])} and {can[-1]}" if len(can) > 1 else "".join(can)
        raise ValueError(f"only {said} jobs can be resumed, got a {job.kind!r} "
                         f"job ({job.id})")
    if not job.refresh().final:
        raise ValueError(f"job {job.id} is still {job.status}: cancel it before resuming")
    return kind


def _going_on_config(kind, job: Job):
    """The config a resume of ``job`` runs (refused: nothing to go on from)."""
    config = kind.resume_config(job)
    if isinstance(config, dict):  # a runs folder copied or moved since: the checkpoints of
        # a job resumed before are in that run folder where it is now (skiff.jobs.moved)
        from .moved import rebased

        config = rebased(config, job.run_dir)
    _check_checkpoints_there(job, config)
    return config


def resume(job: Job, *, front: str = "cli", dry_run: bool = False,
           on_created=None, ask=None) -> Job | dict:
    """Relaunch a finished job from where it stopped (train: its newest checkpoint), with
    the same ranks and device; the kind decides what continuing means. The new job records
    the command that resumes it as ``front`` types it (``python -m skiff jobs resume ID``
    in a terminal, ``%jobs resume ID`` in a notebook: ``front="magic"``), which the listing
    shows and a user can type again (it recorded ``resume ID``, which neither front takes).

    ``dry_run``: every check the resume makes, then what it would run as a dry run's
    document (``skiff.jobs.dryrun_document``: ``kind``, ``runner``, ``np``, ``device``,
    ``command``, ``config``, ``plan``), plus ``resumes`` (the job's id) and ``from`` (the
    checkpoint a training goes on from); nothing started, no run folder made.
    ``on_created(new_job)``: called before it starts (:func:`launch`). A secret option
    the job was started with (``ocr --password``: not kept in its folder) is given again
    from its environment variable or ``ask(prompt)`` (default: a getpass line where there
    is a terminal or a notebook; :func:`skiff.jobs.secret.fill_secrets`)."""
    from .launch import _plan

    kind = _resuming_kind(job)
    job.check_trusted("resume")
    config = _going_on_config(kind, job)
    _check_no_other_writer(job, config)
    runner = job.meta.get("runner", "auto")
    where = {"np": int(job.meta.get("np", 1) or 1),
             "oversubscribe": bool(job.meta.get("oversubscribe", False)),
             "runner": runner if runner in ("thread", "process") else "auto",
             "device": job.meta.get("device")}
    if dry_run:
        plan = _plan(job.kind, config, **where)
        doc = {"dry_run": True, "kind": job.kind, "runner": plan["runner"], "np": plan["np"],
               "device": plan["device"], "command": resume_command(job.id, front),
               "options": {}, "config": plan["config"], "resumes": job.id}
        if plan["note"]:
            doc["plan"] = str(plan["note"])
        if plan["why"] not in (None, "as asked"):
            doc["device_why"] = plan["why"]
        newest = _newest_checkpoint(config)
        if newest is None:  # a solve's last iterate (x0), the pages an OCR job read: what it
            # goes on from, under the same key as a training's checkpoint (round 47 h11)
            kept = config.get("x0") if job.kind == "solve" else \
                config.get("resume_from") if job.kind == "ocr" else None
            from pathlib import Path

            newest = kept if isinstance(kept, str) and Path(kept).is_file() else None
        if newest is not None:
            doc["from"] = newest
        return doc
    from .secret import fill_secrets  # a secret option given again (not in its folder)

    config = fill_secrets(job.kind, config, job.id, ask=ask)
    return launch(job.kind, config, **where, label=f"resume {job.id}",
                  command=resume_command(job.id, front), on_created=on_created,
                  # its --name goes on with it: `jobs cancel NAME` stops the run going on
                  name=name if isinstance(name := job.meta.get("name"), str) else None)


def _check_no_other_writer(job: Job, config) -> None:
    """Refuse to resume into a checkpoint folder a running job writes to (a resume clicked
    twice, or again while its first resume runs): :func:`launch.check_one_writer`."""
    from .launch import check_one_writer

    check_one_writer(job.kind, config, skip=job.id)


def _newest_checkpoint(config: dict) -> str | None:
    """The newest checkpoint in a resumed training's ``checkpoint_dir`` (the one the trainer
    goes on from): a ``step-N.npz`` file or a sharded ``step-N/`` folder with its
    ``manifest.json`` (a ``--np 2`` job under zero/tp/pp/ep), or None."""
    import re
    from pathlib import Path

    where = config.get("checkpoint_dir") if config.get("resume") else None
    if not isinstance(where, str):
        return None
    try:
        steps = [(int(m.group(1)), f) for f in Path(where).iterdir()
                 if (m := re.fullmatch(r"step-(\d+)(\.npz)?", f.name))
                 and (m.group(2) or (f / "manifest.json").is_file())]
    except OSError:
        return None
    return str(max(steps)[1]) if steps else None


def _check_checkpoints_there(job: Job, config: dict) -> None:
    """Refuse a resume whose checkpoints were in another job's run folder that is gone, or
    of a job that wrote none in its own: it started from step 0 and said so only in its
    summary."""
    from pathlib import Path

    where = config.get("checkpoint_dir") if config.get("resume") else None
    if not isinstance(where, str):
        return
    command = str(job.meta.get("command") or "")
    again = (f"; to train again from the start: {command}" if command and " resume " not in
             f" {command} " else f"; jobs show {job.id} lists the options to train again with")
    if Path(where).name != "checkpoints":  # --checkpoint-dir DIR elsewhere
        _check_own_checkpoint_dir(job, config, where, again)
        return
    home = Path(where).parent
    if home.resolve() == job.run_dir.resolve():
        if Path(where).is_dir():  # the trainer makes it at its first checkpoint
            return
        # its kernel killed (or it failed) before the first: it trained again from step 0
        # (200,000 mlp steps, 7 minutes), said only in its summary
        steps = job.refresh().done
        when = f" (it {job.status} at step {int(steps):,}, before its first)" if steps else ""
        raise ValueError(f"job {job.id} wrote no checkpoint{when}: there is nothing to resume "
                         f"from in {where}{again}")
    if home.exists():
        return
    raise ValueError(f"job {job.id} went on from the checkpoints of job {home.name}, whose run "
                     f"folder {home} is gone (removed?): there is nothing to resume from"
                     + again)


def _check_own_checkpoint_dir(job: Job, config: dict, where: str, again: str) -> None:
    """A training's ``--checkpoint-dir DIR`` outside its run folder: refuse a resume that
    would find no checkpoint there (it trained again from step 0, said only in its summary:
    "resume: no checkpoint in DIR"), naming why: a relative DIR read from another folder
    than the one the job was started in, or its checkpoints removed."""
    import os
    from pathlib import Path

    if job.kind != "train" or config.get("model") == "ocr-rec":  # rec.ckpt: checked there
        return
    folder = Path(os.path.expanduser(where))
    if _newest_checkpoint({**config, "checkpoint_dir": str(folder)}) is not None:
        return
    started = job.meta.get("cwd")
    elsewhere = Path(started).resolve() != Path.cwd().resolve() \
        if isinstance(started, str) else not folder.is_dir()  # an older job's: a guess
    if not folder.is_absolute() and elsewhere:
        there = f" ({started})" if isinstance(started, str) else ""
        raise ValueError(f"job {job.id} kept its checkpoints in {where!r}, a path relative to "
                         f"the folder it was started in{there}, and {os.getcwd()} has none "
                         f"there: resume it from that folder")
    raise ValueError(f"job {job.id} left no checkpoint in {folder.resolve()} (removed?): "
                     f"there is nothing to resume from{again}")


def resume_command(job_id: str, front: str = "cli") -> str:
    """The line that resumes job ``job_id`` from ``front`` (``"cli"`` or ``"magic"``)."""
    import shlex

    if front not in ("cli", "magic"):
        raise ValueError(f"front must be 'cli' or 'magic', got {front!r}")
    return (f"%jobs resume {job_id}" if front == "magic"
            else f"python -m skiff jobs resume {shlex.quote(job_id)}")
