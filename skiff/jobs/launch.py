"""``launch``: the one place that decides where a job runs, and ``submit``, the path every
front takes (parse → prepare → launch).

Where a job runs is decided here and nowhere else: ``launcher="slurm"`` writes (and submits)
a batch script; otherwise ``np > 1`` or ``runner="process"`` starts ``np`` MPI ranks with
mpiexec; otherwise the job runs on a thread of this process. ``--device`` is resolved here,
once, by the kind, and the answer is carried in the job's config.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import time
from collections.abc import Callable
from pathlib import Path

from skiff.grammar.common import GIVEN, split_launch

from .job import Job
from .process import ProcessRunner
from .thread import ThreadRunner

__all__ = ["launch", "submit", "dry_run", "choose_runner", "check_ranks", "rank_slots", "RUNNERS",
           "LAUNCHERS"]

RUNNERS = ("auto", "thread", "process")
LAUNCHERS = ("local", "slurm")

_THREAD = ThreadRunner()
_PROCESS = ProcessRunner()


def choose_runner(np: int = 1, runner: str = "auto", launcher: str = "local") -> str:
    """``"thread"``, ``"process"`` or ``"slurm"`` for these options (the one decision)."""
    if runner not in RUNNERS:
        raise ValueError(f"unknown runner {runner!r}: choose from {', '.join(RUNNERS)}")
    if launcher not in LAUNCHERS:
        raise ValueError(f"unknown launcher {launcher!r}: choose from {', '.join(LAUNCHERS)}")
    if not isinstance(np, int) or isinstance(np, bool) or np < 1:
        raise ValueError(f"np must be a positive integer, got {np!r}")
    if launcher == "slurm":
        return "slurm"
    if runner == "thread" and np > 1:
        raise ValueError(f"a thread job runs on one rank; got np={np} (use runner='process')")
    return "process" if runner == "process" or (runner == "auto" and np > 1) else "thread"


def rank_slots() -> tuple[int, str]:
    """How many ranks this machine (or the allocation it runs in) has room for, and what
    that is: the Slurm allocation's tasks, a hostfile's slots, else the usable cores."""
    from skiff.kernels.backend.devices import cpu_count

    tasks = os.environ.get("SLURM_NTASKS") or os.environ.get("SLURM_NPROCS")
    if tasks and tasks.isdigit() and int(tasks) > 0:
        return int(tasks), f"the {tasks} tasks of Slurm allocation " \
                           f"{os.environ.get('SLURM_JOB_ID', '?')}"
    hostfile = os.environ.get("HYDRA_HOST_FILE") or os.environ.get("PBS_NODEFILE")
    if hostfile:
        slots = _hostfile_slots(hostfile)
        if slots:
            return slots, f"the {slots} slots of hostfile {hostfile}"
    cores = cpu_count()
    return cores, f"the {cores} core{'s' if cores != 1 else ''} of this machine"


def _hostfile_slots(path: str) -> int:
    """Slots in a hostfile: ``host``, ``host:N`` (MPICH) or ``host slots=N`` (Open MPI)."""
    total = 0
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.search(r"slots\s*=\s*(\d+)", line) or re.match(r"[^\s:]+:(\d+)", line)
        total += int(m.group(1)) if m else 1
    return total


def check_ranks(np: int, where: str, oversubscribe: bool = False) -> None:
    """Refuse more ranks than the machine (or the allocation) has room for, unless
    ``oversubscribe``: 1000 ranks on 2 cores end with the out-of-memory killer."""
    if where != "process" or oversubscribe:
        return
    slots, what = rank_slots()
    if np > slots:
        raise ValueError(f"--np {np} is more ranks than {what}: use --np {slots} or fewer, "
                         "or add --oversubscribe to start them anyway")


def launch(kind: str, config: dict | None = None, *, fn: Callable | None = None, np: int = 1,
           runner: str = "auto", launcher: str = "local", nodes: int = 1,
           gpus_per_node: int = 0, dry_run: bool = False, oversubscribe: bool = False,
           device: str | None = None,
           root=None, label: str | None = None, on_done: Callable | None = None,
           local_only: str | None = None, name: str | None = None,
           command: str | None = None, options: dict | None = None,
           on_created: Callable | None = None) -> Job:
    """Start a job and return its :class:`Job` at once.

    ``kind`` names a registered kind (``train``, ``solve``, ``ocr``, ``demo``), whose entry
    point runs ``config``; with ``fn(config, reporter)`` the job runs that function on a
    thread of this process instead (any label may then name the kind). ``np > 1`` or
    ``runner="process"`` runs the kind's entry on ``np`` MPI ranks (the config must be
    JSON), never more than the machine's cores (or its Slurm allocation or hostfile) unless
    ``oversubscribe``; ``launcher="slurm"`` writes ``job.sbatch`` for ``nodes`` nodes with
    ``gpus_per_node`` GPUs each and submits it (``dry_run``: checks it only). ``device``
    (default: the config's ``device``) is resolved once here and written into the config.
    ``on_done(job)`` is called when the job ends; ``local_only`` is the reason a job
    cannot run as processes (a ``fn`` over notebook objects). ``command`` (the line that
    started it, as typed) and ``options`` (every parsed option, defaults included) are
    recorded in ``config.json`` so that the job can be started again as it was.
    ``on_created(job)`` is called once its run folder exists, before it starts (a front's
    "skiff: KIND job ID" line then comes before anything the job prints; round 42).
    """
    from skiff.kinds import resolve_entry

    if dry_run and choose_runner(np, runner, launcher) != "slurm":
        # it would otherwise run the job, not check it (a terminal's --dry-run: dry_run())
        raise ValueError("--dry-run writes and checks a Slurm script without queueing it: "
                         "give it with --launcher slurm (python -m skiff KIND --dry-run "
                         "checks any job without starting it)")
    plan = _plan(kind, config, fn=fn, np=np, runner=runner, launcher=launcher, nodes=nodes,
                 gpus_per_node=gpus_per_node, oversubscribe=oversubscribe, device=device,
                 local_only=local_only)
    where, registered, config, fn = plan["runner"], plan["registered"], plan["config"], plan["fn"]
    if not dry_run:
        check_one_writer(kind, config)
        for folder in (registered.output_folders(config) if registered is not None else ()):
            os.makedirs(folder, exist_ok=True)   # an output's missing folders: made
    ranks, resolved, why, note = plan["np"], plan["device"], plan["why"], plan["note"]
    # secret options (ocr --password): masked in all it records, the values handed over
    from .secret import check_runner, mask_record, secret_options

    secrets = secret_options(registered) if registered is not None else {}
    stored, command, options, hidden = mask_record(secrets, config=config, command=command,
                                                   options=options)
    check_runner(hidden, where, secrets)
    target = registered.entry if fn is None else f"<function {getattr(fn, '__qualname__', fn)!r}>"
    tasks = plan["tasks_per_node"]
    script = {"tasks_per_node": tasks} if tasks else {}
    extra = {"slurm": {"nodes": nodes, "gpus_per_node": gpus_per_node, **script}} \
        if where == "slurm" else {}
    if name is not None:
        extra["name"] = str(name)
    if command is not None:
        extra["command"] = str(command)
    try:  # where it started: what a relative path of its command is relative to
        extra["cwd"] = os.getcwd()
    except OSError:  # a folder removed under the shell
        pass
    if options is not None:  # with --device as resolved (auto: the device it ran on)
        extra["options"] = {**options, **({"device": resolved} if resolved is not None
                                          and "device" in options else {})}
    if oversubscribe and where == "process":
        extra["oversubscribe"] = True
    folder = None
    if where == "slurm" and dry_run:  # its folder beside the script, never in the runs root
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix=f"skiff-dry-run-{kind.split(':')[-1]}-"))
    try:
        job = Job.create(kind, stored, target=target, runner=where, np=ranks,
                         device=resolved, label=label, root=folder or root, **extra)
    except BaseException:
        if folder is not None:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
        raise
    if why not in (None, "as asked"):
        job.emit("log", level="info", message=f"device {resolved} ({why})")
    if note and not getattr(registered, "kernel_logs_plan", False):
        job.emit("log", level="info", message=str(note))
    if on_done is not None:
        job.add_done_callback(on_done)
    if where == "slurm":
        from .slurm import submit_job

        if dry_run:  # the script names the run folder a launch would make (not made)
            from .slurm import dry_run_job
            from .store import runs_root

            job = dry_run_job(job, run_dir=runs_root(root) / job.id, nodes=nodes,
                              gpus_per_node=gpus_per_node, **script)
        else:
            job = submit_job(job, nodes=nodes, gpus_per_node=gpus_per_node, **script)
        if note:
            job.submission["plan"] = str(note)
        return job
    if on_created is not None:
        try:  # a front's line: a stream that fails must not leave the job queued, unstarted
            on_created(job)
        except Exception:  # noqa: BLE001
            pass
    if where == "process":
        return _PROCESS.start(job, np, oversubscribe=oversubscribe, secrets=hidden)
    return _THREAD.start(job, fn or resolve_entry(target), config)


def _plan(kind: str, config: dict | None, *, fn=None, np: int = 1, runner: str = "auto",
          launcher: str = "local", nodes: int = 1, gpus_per_node: int = 0,
          oversubscribe: bool = False, device: str | None = None,
          local_only: str | None = None) -> dict:
    """Every check :func:`launch` makes before a run folder exists, and what it decided:
    ``runner`` (thread, process, slurm), ``np`` (ranks), ``device`` (resolved) and ``why``,
    ``note`` (the kind's line on the launch), ``config`` (with the device), ``fn``,
    ``registered`` (the Kind, or None). Nothing is created or started."""
    from skiff.kinds import Kind, get

    config = dict(config or {})
    where = choose_runner(np, runner, launcher)
    check_ranks(np, where, oversubscribe)
    registered = _kind_or_none(kind)
    if where != "thread":
        if fn is not None and (local_only is not None or registered is None):
            why = local_only or "a process job runs a registered kind, not a notebook function"
            raise ValueError(f"{why} (got np={np}, runner={runner!r}, launcher={launcher!r})")
        fn = None
    if fn is None and registered is None:
        get(kind)  # raises: an unknown kind, with the list of kinds
    tasks = slurm_tasks(np, nodes, gpus_per_node) if where == "slurm" else None
    ranks = nodes * (tasks or max(1, gpus_per_node)) if where == "slurm" else np
    note = None
    if registered is not None:   # before the run folder exists; a line on what it decided
        note = registered.check_launch(config, ranks=ranks)
        for folder in registered.trusted_folders(config):  # code another folder names
            check_folder_trusted(folder, f"build a {kind} job's model from")
    spec = device if device is not None else config.get("device")
    resolved = why = None
    if spec is not None or "device" in config:
        resolved, why = (registered or Kind()).launch_device(
            spec, ranks=ranks, gpus=gpus_per_node if where == "slurm" else None)
        config["device"] = resolved
    return {"runner": where, "np": ranks, "device": resolved, "why": why, "note": note,
            "config": config, "fn": fn, "registered": registered, "tasks_per_node": tasks}


def slurm_tasks(np: int, nodes: int, gpus_per_node: int) -> int | None:
    """Ranks per node of a Slurm job for ``--np`` (None: one a GPU, or one a node). On
    nodes without GPUs ``--np N`` is N ranks over the nodes (round 39: it was dropped
    without a word, one rank a node); with GPUs a rank drives one, so an ``--np`` other
    than nodes x GPUs is refused, as is one the nodes do not divide."""
    if np <= 1:
        return None
    if gpus_per_node:
        if np != nodes * gpus_per_node:
            raise ValueError(f"--np {np} with --gpus-per-node {gpus_per_node} on {nodes} "
                             f"node{'s' if nodes != 1 else ''}: a Slurm job runs one rank a "
                             f"GPU ({nodes * gpus_per_node} ranks); leave --np out")
        return None
    if np % nodes:
        raise ValueError(f"--np {np} over --nodes {nodes}: each node runs as many ranks; "
                         f"give a multiple of {nodes}")
    return np // nodes


def check_folder_trusted(folder, what: str) -> None:
    """Refuse (:class:`~skiff.jobs.trust.UntrustedJob`, one line) a run folder whose code is
    not signed by this user; one outside the runs root is named with the ``SKIFF_RUNS``
    that lets ``jobs trust`` find it (the hint's bare id was "no job ... under" there)."""
    from .store import read_meta, runs_root
    from .trust import UntrustedJob, check

    try:
        check(read_meta(folder), folder, what)
    except UntrustedJob as exc:
        where = Path(folder).expanduser().resolve()
        if where.parent == runs_root().resolve():
            raise
        raise UntrustedJob(
            f"{exc}; it is not under the runs root, so: SKIFF_RUNS="
            f"{shlex.quote(str(where.parent))} python -m skiff jobs trust "
            f"{shlex.quote(where.name)}") from None


def _kind_or_none(name: str):
    from skiff.kinds import get

    try:
        return get(name)
    except ValueError:
        return None


def check_one_writer(kind: str, config, *, skip: str | None = None) -> None:
    """Refuse a job whose ``checkpoint_dir`` a running job writes to (its own
    ``checkpoint_dir``, or a job of the same kind without one: its run folder's
    ``checkpoints``): two trainings wrote ``step-N.npz`` of the same steps in one folder,
    each over the other's (a resume clicked twice; a ``--checkpoint-dir`` given to two runs
    at once). The same for the results file or folder a running job writes (``--out`` of an
    OCR or an ocr-rec job, ``--save`` of a solve): two ``ocr A/ --out r.jsonl`` and ``ocr
    B/ --out r.jsonl`` at once each wrote the file, the last one's results kept and the
    other's lost without a word (round 36). ``skip``: a job id not to count (the job a
    resume goes on from)."""
    if not isinstance(config, dict):
        return
    targets = {key: os.path.realpath(os.path.expanduser(config[key])) for key in WRITTEN
               if isinstance(config.get(key), str) and config[key] not in ("", "-")}
    if not targets:
        return
    from . import list_jobs
    from .job import DamagedJob

    for other in list_jobs(metrics=False):
        if isinstance(other, DamagedJob) or other.id == skip or other.refresh().final:
            continue
        theirs = other.config if isinstance(other.config, dict) else {}
        for key, target in targets.items():
            path = theirs.get(key)
            if key == "checkpoint_dir" and not path and other.kind == kind:
                path = str(other.run_dir / "checkpoints")
            if not isinstance(path, str) or path in ("", "-"):
                continue
            if not os.path.isabs(os.path.expanduser(path)):
                started = other.meta.get("cwd")  # a relative one: from where that job started
                path = os.path.join(started, path) if isinstance(started, str) else path
            if os.path.realpath(os.path.expanduser(path)) == target:
                raise ValueError(f"job {other.id} is {other.status} and writes its "
                                 f"{WRITTEN[key]} to {target}, where this job would write "
                                 f"too: wait for it (jobs wait {other.id}) or cancel it (jobs "
                                 f"cancel {other.id}) first")


# what a job writes that a second job must not write at the same time: its config key -> what
WRITTEN = {"checkpoint_dir": "checkpoints", "out": "results", "save": "solution"}


def launch_options(opts: dict) -> dict:
    """Keyword arguments of :func:`launch` from a front's parsed launch options."""
    keys = {"np": 1, "runner": "auto", "launcher": "local", "nodes": 1, "gpus_per_node": 0,
            "dry_run": False, "oversubscribe": False}
    return {k: opts.get(k, default) for k, default in keys.items()}


def submit(kind: str, words: str | list[str] | None = None, *, values: dict | None = None,
           cell: str | None = None, user_ns: dict | None = None,
           prog: str | None = None, front: str = "magic",
           typed: list[str] | None = None,
           on_created: Callable | None = None) -> tuple[Job, dict]:
    """What every front does: parse ``words`` (a magic line or argv) with the kind's grammar
    (or take already parsed ``values``), let the kind prepare the job (notebook objects from
    ``user_ns``, a ``%%`` cell), and launch it. Returns ``(job, launch options)``, where the
    options hold what the front handles itself (``wait``, ``output``, ``json``). The job
    records the command that started it as typed (a magic line, or ``typed``: the argv of a
    terminal command whose ``values`` a front parsed itself), else rendered from ``values``
    (a panel), and every option it was started with, defaults included.

    Mistakes raise :class:`~skiff.grammar.GrammarError` or ``ValueError``-like errors whose
    message is one line for the user.
    """
    request, where, opts, command, options = _prepared(
        kind, words, values=values, cell=cell, user_ns=user_ns, prog=prog, front=front,
        typed=typed)
    job = launch(request.kind, request.config, fn=request.fn, label=request.label,
                 on_done=request.on_done, local_only=request.local_only,
                 name=opts.get("name"), command=command, options=options,
                 on_created=on_created, **where)
    return job, opts


def dry_run(kind: str, words: str | list[str] | None = None, *, values: dict | None = None,
            cell: str | None = None, user_ns: dict | None = None, prog: str | None = None,
            front: str = "cli", typed: list[str] | None = None) -> dict:
    """What :func:`submit` would start, checked as it checks it, with nothing created or
    started (no run folder, no thread, no process): ``{"dry_run": True, "kind", "runner",
    "np", "device", "command", "options", "config"}`` plus ``"plan"`` (the kind's line on
    the launch) and ``"device_why"`` when there is one. A mistake raises as submit does."""
    request, where, _, command, options = _prepared(
        kind, words, values=values, cell=cell, user_ns=user_ns, prog=prog, front=front,
        typed=typed)
    plan = _plan(request.kind, request.config, fn=request.fn, local_only=request.local_only,
                 np=where["np"], runner=where["runner"], launcher=where["launcher"],
                 nodes=where["nodes"], gpus_per_node=where["gpus_per_node"],
                 oversubscribe=where["oversubscribe"])
    from .secret import check_runner, mask_record, secret_options

    secrets = secret_options(plan["registered"]) if plan["registered"] is not None else {}
    shown, command, options, hidden = mask_record(secrets, config=plan["config"],
                                                  command=command, options=options)
    check_runner(hidden, plan["runner"], secrets)
    doc = {"dry_run": True, "kind": request.kind, "runner": plan["runner"], "np": plan["np"],
           "device": plan["device"], "command": command, "options": options,
           "config": shown}
    if plan["note"]:
        doc["plan"] = str(plan["note"])
    if plan["why"] not in (None, "as asked"):
        doc["device_why"] = plan["why"]
    return doc


def _prepared(kind: str, words, *, values, cell, user_ns, prog, front, typed):
    """``(request, where, opts, command, options)``: the kind's :class:`JobRequest` for the
    words (or values), the launch keywords, the options the front handles, the command line
    and every option (:func:`_options`): the part :func:`submit` and :func:`dry_run` share."""
    k, values, command, given, user_ns = _parsed(kind, words, values=values, cell=cell,
                                                 user_ns=user_ns, prog=prog, front=front,
                                                 typed=typed)
    options = _options(values)
    values, opts = split_launch(argparse.Namespace(**values))
    where = launch_options(opts)
    _check_cluster_options(where, given)
    if given is not None:  # the options the user named, for the kind's checks
        values[GIVEN] = sorted(given)
    runner = choose_runner(where["np"], where["runner"], where["launcher"])
    if kind in ("generate", "chat"):  # a train job's id or --name stands for its folder
        job_folder(values, user_ns)
    if kind == "ocr":  # --rec-model JOB: a fine-tune's id or --name, as `jobs ls` shows it
        model_job_folders(values)
    asked = dict(values)  # prepare may change them
    start = time.perf_counter()
    request = k.prepare(values, cell=cell, user_ns=user_ns, where=runner)
    # jobs show: the options this job reads (typed ones always), not every problem's defaults
    unread = k.unread_options(asked, request.config, cell=cell, user_ns=user_ns, where=runner,
                              prepare_s=time.perf_counter() - start)
    options = {key: value for key, value in options.items()
               if key not in unread or (given is not None and key in given)}
    return request, where, opts, command, options


def job_folder(values: dict, user_ns: dict | None = None) -> None:
    """``generate NAME "text"`` (terminal or notebook): a train job's id or ``--name`` that
    is no folder (and, in a notebook, no variable) stands for its run folder, as
    ``predict JOB`` takes it, and so does a notebook variable holding the job (``-o j``:
    ``%generate j "text"`` said the variable held no model); anything else is left for the
    kind to judge."""
    model = values.get("model")
    held = (user_ns or {}).get(model) if isinstance(model, str) else None
    if isinstance(held, Job):
        values["model"] = str(held.run_dir)
        return
    if not isinstance(model, str) or os.path.isdir(os.path.expanduser(model)) \
            or model in (user_ns or {}):
        return
    from skiff.jobs.listing import SeveralJobs, job_run_dir

    try:
        values["model"] = str(job_run_dir(model, "generate"))
    except SeveralJobs:  # a name two trainings share: said, not the newest silently
        raise
    except KeyError:
        pass  # neither: the kind says what DIR must be


def model_job_folders(values: dict) -> None:
    """``ocr --rec-model JOB`` (and ``--det-model``): a job's id or ``--name``, as ``jobs
    ls`` shows it, that is no file or folder stands for its run folder (the kind finds the
    model the fine-tune wrote in it, or says it wrote none). Anything else is left for the
    kind to judge ("no such file")."""
    from skiff.jobs.listing import SeveralJobs, job_run_dir

    for key in ("rec_model", "det_model"):
        given = values.get(key)
        if not isinstance(given, str) or not given or os.sep in given \
                or given.lower().endswith(".onnx") or os.path.exists(os.path.expanduser(given)):
            continue
        try:
            values[key] = str(job_run_dir(given, "ocr"))
        except SeveralJobs:
            raise
        except KeyError:
            pass


def _parsed(kind: str, words, *, values, cell, user_ns, prog, front, typed):
    """``(kind, values, command line, options given, user_ns)``: the words parsed by the
    kind's grammar (or ``values`` parsed already), the line that starts the job again, the
    options the user named (None: not known, a panel's values) and the notebook's variables
    (with those the kind's preparse added: ``mlp (X, y)``)."""
    from skiff.kinds import get

    k = get(kind)
    given = None
    user_ns = {} if user_ns is None else user_ns
    if values is None:
        if k.command is None:
            raise ValueError(f"job kind {kind!r} has no grammar: launch it from Python")
        line = words if isinstance(words, str) else None
        if line is not None and cell is None:
            line, user_ns = k.preparse(line, user_ns)
        argv = line if line is not None else list(words or [])
        values = vars(k.command.parse(argv, prog=prog))
        given = k.command.given(argv)
    elif typed is not None and k.command is not None:
        given = k.command.given(list(typed), cli=front == "cli")
    command = _command_line(k, typed if typed is not None else words, values, cell, front)
    return k, values, command, given, user_ns


def _options(values: dict) -> dict:
    """Every parsed option of a job, defaults included (what ``jobs show`` prints and a
    user can start the job again from), as JSON; a notebook object by its type.
    :func:`_prepared` then leaves out those the job does not read (``Kind.unread_options``)."""
    import json

    out = {}
    for key, value in values.items():
        try:
            json.dumps(value)
            out[key] = value
        except (TypeError, ValueError):
            out[key] = f"<{type(value).__name__}>"
    return out


# options that mean something on a cluster only: typed without --launcher slurm, they were
# dropped without a word (`--nodes 4` ran on this machine); typed at their default, they are
# accepted (`--nodes 1` asks for nothing else)
_CLUSTER_ONLY = {"nodes": 1, "gpus_per_node": 0}


def _check_cluster_options(where: dict, given: set | None) -> None:
    """Refuse ``--nodes`` / ``--gpus-per-node`` without ``--launcher slurm``: typed (even at
    their default) or, where what was typed is not known (a panel), set off their default."""
    if where.get("launcher") == "slurm":
        return
    for name, default in _CLUSTER_ONLY.items():
        value = where.get(name, default)
        if (name in given) if given is not None else value != default:
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"{flag} {value} is for a cluster: give --launcher slurm too, "
                             f"or leave {flag} out (on this machine, --np N sets the ranks)")


def _command_line(kind, words, values: dict, cell: str | None, front: str) -> str:
    """The line a user would type again to start this job."""
    if isinstance(words, str):  # a magic line as typed, without its comment
        from skiff.grammar.common import without_comment

        line = without_comment(words).strip()
        return f"{'%%' if cell is not None else '%'}{kind.name} {line}".rstrip()
    if words is not None:  # argv
        return f"python -m skiff {kind.name} {shlex.join(str(w) for w in words)}".rstrip()
    line = kind.command.render(values, style="cli" if front == "cli" else "magic")
    return line.replace(f"%{kind.name}", f"%%{kind.name}", 1) if cell is not None else line
