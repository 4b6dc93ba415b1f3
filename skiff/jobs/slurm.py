"""Launching a job on a Slurm cluster: an sbatch script that runs the MPI worker under srun.

``skiff.launch("train", config, launcher="slurm", nodes=2, gpus_per_node=4)`` (what
``--launcher slurm`` does) creates the run folder, writes ``run_dir/job.sbatch`` and hands it
to ``sbatch`` (``dry_run=True`` asks sbatch to check it without queueing it, with
``--test-only``); :func:`launch_slurm` does the same from Python and queues it only with
``submit=True``. The script starts ``nodes * gpus_per_node`` ranks with ``srun``; each rank
runs ``python -m skiff.jobs.worker RUN_DIR``, the same worker the local MPI runner starts, so
events, checkpoints and results land in the same run folder (it must be on a file system the
nodes share), and ``%jobs`` / the widgets follow the job as they follow a local one.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .job import Job
from .store import write_json

__all__ = ["sbatch_script", "launch_slurm", "submit_job", "dry_run_submission", "dry_run_job",
           "SlurmError", "check_mpi_plugin", "DEFAULT_MPI"]

# the srun MPI plugin that connects the ranks (PMI-2 is built into every Slurm since 2.6 and
# understood by MPICH and Open MPI); "none" would start N unconnected one-rank worlds
DEFAULT_MPI = "pmi2"


class SlurmError(ValueError):
    """sbatch is missing or refused the script (the user's to fix: one line)."""


def _safe_path(what: str, path) -> str:
    """``path`` as text, refused when it cannot be written into a script line safely: a
    newline would end the ``#SBATCH`` line and start a command, and ``#SBATCH`` lines are not
    parsed by the shell, so quoting alone does not protect them."""
    text = str(path)
    bad = [c for c in text if c in "\n\r\0" or ord(c) < 32 or ord(c) == 127]
    if bad:
        raise SlurmError(f"{what} {text!r} holds a control character ({bad[0]!r}): choose a "
                         "folder without newlines or control characters for Slurm jobs")
    return text


def _check_mpi_name(mpi: str) -> str:
    if not isinstance(mpi, str) or not re.fullmatch(r"[A-Za-z0-9_.+-]+", mpi):
        raise SlurmError(f"mpi must name an srun MPI plugin (pmi2, pmix, pmix_v4, ...), "
                         f"got {mpi!r}")
    return mpi


def check_mpi_plugin(mpi: str, srun: str | None = None) -> str:
    """``mpi`` when this site's ``srun --mpi=list`` offers it (or no ``srun`` is here to
    ask), else a :class:`SlurmError` naming what is offered."""
    _check_mpi_name(mpi)
    srun = srun or shutil.which("srun")
    if srun is None:
        return mpi
    try:
        proc = subprocess.run([srun, "--mpi=list"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SlurmError(f"could not ask srun which MPI plugins it offers: {exc}") from None
    text = proc.stdout + proc.stderr
    offered = _plugins(text)
    if mpi not in offered:
        what = ", ".join(offered) if offered else f"nothing we could read ({text.strip()[:200]!r})"
        raise SlurmError(f"srun does not offer the MPI plugin {mpi!r}: `srun --mpi=list` offers "
                         f"{what}; choose one of those with mpi=...")
    return mpi


def _plugins(text: str) -> list[str]:
    """Plugin names in ``srun --mpi=list``'s output, whose format changed across Slurm
    versions: "srun: MPI types are..." then "srun: pmi2" (or "srun: mpi/pmi2") lines up to
    21.08; "MPI plugin types are..." then one name a line from 22.05, and perhaps "specific
    pmix plugin versions available: pmix_v4,pmix_v5"."""
    names: list[str] = []
    for line in text.splitlines():
        line = line.strip().removeprefix("srun:").strip()
        if "types are" in line.lower() or not line:
            continue
        words = line.split(":", 1)[1] if line.lower().startswith("specific") else line
        for word in re.split(r"[\s,]+", words.strip()):
            word = word.removeprefix("mpi/")
            if re.fullmatch(r"[A-Za-z0-9_.+-]+", word) and word not in names:
                names.append(word)
    return names


def sbatch_script(run_dir, *, nodes: int, gpus_per_node: int = 0, tasks_per_node=None,
                  cpus_per_task: int | None = None, time_limit: str = "01:00:00",
                  partition: str | None = None, account: str | None = None,
                  job_name: str = "skiff", python: str | None = None,
                  setup: list[str] | None = None, mpi: str = DEFAULT_MPI) -> str:
    """The text of the sbatch script that runs the worker for ``run_dir``.

    One rank per GPU (``gpus_per_node`` > 0), else ``tasks_per_node`` ranks per node (1).
    Each rank gets ``cpus_per_task`` cores and that many BLAS/numba threads, so ranks never
    oversubscribe a node's cores. ``mpi``: the srun MPI plugin that connects the ranks into
    one world (``pmi2``, ``pmix``, ...; see ``srun --mpi=list``). Paths go into the script
    quoted; a path with a newline or another control character is refused.
    """
    for name, value in (("nodes", nodes), ("gpus_per_node", gpus_per_node)):
        if not isinstance(value, int) or value < (1 if name == "nodes" else 0):
            raise ValueError(f"{name} must be a {'positive' if name == 'nodes' else 'non-negative'}"
                             f" integer, got {value!r}")
    per_node = tasks_per_node or max(1, gpus_per_node)
    run_dir = Path(run_dir).resolve()
    py = _safe_path("the Python interpreter", python or sys.executable)
    cwd = _safe_path("the working folder", Path.cwd())
    log = _safe_path("the run folder", run_dir)
    if '"' in log:  # sbatch's own parser ends a quoted #SBATCH argument at any '"'
        raise SlurmError(f"the run folder {log!r} holds a double quote: choose another for Slurm")
    log = log.replace("%", "%%") + "/logs/slurm-%j.log"  # %% is sbatch's literal percent
    _check_mpi_name(mpi)
    for name, value in (("job_name", job_name), ("time_limit", time_limit),
                        ("partition", partition), ("account", account)):
        if value is not None and not re.fullmatch(r"[A-Za-z0-9_.:,+=@-]+", str(value)):
            raise SlurmError(f"{name} may hold letters, digits and _.:,+=@- only, got {value!r}")
    lines = ["#!/bin/bash",
             f"#SBATCH --job-name={job_name}",
             f"#SBATCH --nodes={nodes}",
             f"#SBATCH --ntasks-per-node={per_node}",
             f"#SBATCH --time={time_limit}",
             f'#SBATCH --output="{log}"']  # sbatch's parser, not bash, reads these
    if gpus_per_node:
        lines.append(f"#SBATCH --gpus-per-node={gpus_per_node}")
    if cpus_per_task:
        lines.append(f"#SBATCH --cpus-per-task={cpus_per_task}")
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    if account:
        lines.append(f"#SBATCH --account={account}")
    lines += ["", "set -euo pipefail",
              "# one share of the cores per rank: BLAS and numba threads never oversubscribe",
              'THREADS="${SLURM_CPUS_PER_TASK:-1}"',
              "export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS "
              "MKL_NUM_THREADS=$THREADS NUMBA_NUM_THREADS=$THREADS",
              "export PYTHONUNBUFFERED=1"]
    lines += list(setup or [])
    lines += [f"cd {shlex.quote(cwd)}",
              f"srun --mpi={mpi} --kill-on-bad-exit=1 {shlex.quote(py)} -m skiff.jobs.worker "
              f"{shlex.quote(str(run_dir))}", ""]
    return "\n".join(lines)


def launch_slurm(kind: str, config: dict | None = None, *, nodes: int, gpus_per_node: int = 0,
                 submit: bool = False, dry_run: bool = False, root=None,
                 label: str | None = None, name: str | None = None,
                 **script_options) -> dict:
    """Create a run folder for ``kind`` and write (and optionally submit) its sbatch script.
    ``name``: the job's ``--name``, as :func:`skiff.jobs.launch` takes it (it was passed on
    to the script's writer: "sbatch_script() got an unexpected keyword argument 'name'").

    Returns ``{"run_dir", "script", "submitted", "slurm_job_id", "output"}``.

    ``dry_run``: nothing in the runs root (``root``): the run folder and its script are made
    in a temporary folder (``run_dir``; the script runs there as it would, ``bash SCRIPT``
    under an allocation), checked with ``sbatch --test-only`` where sbatch exists (its
    answer in ``output``, ``""`` where it does not), never queued; ``"dry_run": True``. It
    left a ``queued`` job in the runs root that no one would run, in every listing (and,
    without sbatch, raised after making it), where ``--launcher slurm --dry-run`` leaves none.
    """
    from skiff.kinds import get

    entry = get(kind)
    np = nodes * (script_options.get("tasks_per_node") or max(1, gpus_per_node))
    config = dict(config or {})
    device, _ = entry.launch_device(config.get("device"), ranks=np, gpus=gpus_per_node)
    if "device" in config:
        config["device"] = device
    named = {} if name is None else {"name": str(name)}
    if dry_run:
        return _dry_run_folder(kind, config, entry, np=np, device=device, label=label,
                               nodes=nodes, gpus_per_node=gpus_per_node, named=named,
                               **script_options)
    job = Job.create(kind, config, target=entry.entry, runner="slurm", np=np, device=device,
                     label=label, root=root,
                     slurm={"nodes": nodes, "gpus_per_node": gpus_per_node}, **named)
    try:
        return _write_and_submit(job, nodes=nodes, gpus_per_node=gpus_per_node, submit=submit,
                                 dry_run=dry_run, **script_options)
    except SlurmError as exc:
        if submit and shutil.which("sbatch") is not None:  # refused, never queued: failed
            # (without sbatch the script waits to be submitted by hand: queued)
            job.emit("status", status="failed", message=f"not submitted: {exc}")
        raise


def _dry_run_folder(kind: str, config: dict, entry, *, np: int, device, label, nodes: int,
                    gpus_per_node: int, named: dict, **script_options) -> dict:
    """:func:`launch_slurm`'s dry run: the job and its script in a temporary runs root."""
    folder = Path(tempfile.mkdtemp(prefix="skiff-dry-run-"))
    try:
        job = Job.create(kind, config, target=entry.entry, runner="slurm", np=np,
                         device=device, label=label, root=folder,
                         slurm={"nodes": nodes, "gpus_per_node": gpus_per_node}, **named)
        sbatch = shutil.which("sbatch")
        if sbatch is not None:  # where srun exists, the plugin must be one this site offers
            check_mpi_plugin(script_options.get("mpi", DEFAULT_MPI))
        out = _write_and_submit(job, nodes=nodes, gpus_per_node=gpus_per_node, submit=False,
                                dry_run=sbatch is not None, **script_options)
    except SlurmError:  # sbatch refused the script: it stays where the message says
        if not (Path(job.run_dir) / "job.sbatch").exists():
            shutil.rmtree(folder, ignore_errors=True)
        raise
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return {**out, "dry_run": True}


def _write_and_submit(job, *, nodes: int, gpus_per_node: int, submit: bool, dry_run: bool,
                      **script_options) -> dict:
    run_dir = job.run_dir
    if submit or dry_run:  # where srun exists, the plugin must be one this site offers
        check_mpi_plugin(script_options.get("mpi", DEFAULT_MPI))
    (run_dir / "logs").mkdir(exist_ok=True)
    script = run_dir / "job.sbatch"
    script.write_text(sbatch_script(run_dir, nodes=nodes, gpus_per_node=gpus_per_node,
                                    job_name=f"skiff-{job.id}", **script_options))
    script.chmod(0o755)
    out = {"run_dir": str(run_dir), "script": str(script), "submitted": False,
           "slurm_job_id": None, "output": ""}
    if submit or dry_run:
        sbatch = shutil.which("sbatch")
        if sbatch is None:
            raise SlurmError("sbatch is not on PATH: run this on a Slurm login node, or submit "
                             f"{script} there yourself")
        cmd = [sbatch, *(["--test-only"] if dry_run else ["--parsable"]), str(script)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        out["output"] = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0:
            raise SlurmError(f"sbatch refused {script}: {out['output']}")
        if not dry_run:
            out["submitted"] = True
            out["slurm_job_id"] = proc.stdout.strip().split(";")[0]
            write_json(run_dir / "slurm.json", {"job_id": out["slurm_job_id"]})
    return out


def submit_job(job, *, nodes: int, gpus_per_node: int = 0, dry_run: bool = False,
               **script_options):
    """What ``--launcher slurm`` does for a job :func:`skiff.jobs.launch` created: write the
    script, then submit it. Returns the job, whose ``submission`` attribute holds the script,
    whether it was queued, and the Slurm job id.

    With ``dry_run`` nothing is queued and no run folder is left: the script is written
    outside the runs root (:func:`dry_run_submission`, checked with ``sbatch --test-only``
    where sbatch exists) and the folder :func:`launch` made is removed again (a dry run
    left a ``cancelled`` job in every listing)."""
    if dry_run:
        return _dry_run_job(job, nodes=nodes, gpus_per_node=gpus_per_node, **script_options)
    try:
        out = _write_and_submit(job, nodes=nodes, gpus_per_node=gpus_per_node, submit=True,
                                dry_run=False, **script_options)
    except Exception as exc:  # never queued: recorded failed (it stayed 'queued' for ever)
        job.emit("status", status="failed", message=f"not submitted: {exc}")
        raise
    job.submission = out
    job.emit("log", level="info", message=f"submitted as Slurm job {out['slurm_job_id']}")
    return job


def _dry_run_job(job, *, nodes: int, gpus_per_node: int, **script_options):
    """A dry run of a job whose run folder is in the runs root already (``submit_job(job,
    dry_run=True)``): the folder is moved out into a temporary folder first (its config and
    events stay readable from the job), then :func:`dry_run_job`."""
    from .events import EventReader
    from .state import JobState

    old = job.run_dir
    folder = Path(tempfile.mkdtemp(prefix=f"skiff-dry-run-{old.name}-"))
    try:
        moved = Path(shutil.move(str(old), str(folder / old.name)))
    except OSError:
        shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    with job._state_lock:  # the job reads (and writes) its events where they went
        job.run_dir = moved
        job._reader = EventReader(moved / "events.jsonl")
        job._state = JobState()
    return dry_run_job(job, run_dir=old, nodes=nodes, gpus_per_node=gpus_per_node,
                       **script_options)


def dry_run_job(job, *, run_dir, nodes: int, gpus_per_node: int = 0, **script_options):
    """What ``launch(..., launcher="slurm", dry_run=True)`` returns: ``job``, whose folder
    :func:`launch` made outside the runs root (in a temporary folder), with the script for
    ``run_dir`` (the run folder a launch would make, not made) written beside it
    (:func:`dry_run_submission`) in ``job.submission``, and marked cancelled (never
    queued). A script sbatch refuses stays where the error says; the job's folder goes."""
    folder = job.run_dir.parent
    try:
        out = dry_run_submission(job.kind, nodes=nodes, gpus_per_node=gpus_per_node,
                                 run_dir=run_dir, folder=folder, **script_options)
    except BaseException:
        shutil.rmtree(job.run_dir, ignore_errors=True)
        if not (folder / "job.sbatch").exists():
            shutil.rmtree(folder, ignore_errors=True)
        raise
    out["config"] = str(job.run_dir / "config.json")
    job.submission = out
    job.emit("log", level="info", message=f"dry run: wrote {out['script']}" + (
        f" (sbatch --test-only: {out['output']})" if out["output"] else ""))
    job.emit("status", status="cancelled",
             message="dry run: the script was not queued, no run folder made")
    job.refresh()
    return job


def dry_run_submission(kind: str, *, nodes: int, gpus_per_node: int = 0, run_dir=None,
                       root=None, folder=None, **script_options) -> dict:
    """The sbatch script a ``--launcher slurm`` job of ``kind`` would get, with no run folder
    made: written to ``folder`` (default: a fresh temporary folder) as ``script``, naming
    the run folder a real launch would make (``run_dir``, which does not exist), and
    checked with ``sbatch --test-only`` where sbatch exists (its answer in ``output``; a
    refusal raises :class:`SlurmError`). Never queued: ``{"run_dir", "script", "submitted": False,
    "slurm_job_id": None, "output", "dry_run": True}``."""
    if run_dir is None:
        from .store import new_job_id, runs_root

        run_dir = runs_root(root) / new_job_id(kind.split(":")[-1].replace(".", "-"))
    run_dir = Path(run_dir)
    text = sbatch_script(run_dir, nodes=nodes, gpus_per_node=gpus_per_node,
                         job_name=f"skiff-{run_dir.name}", **script_options)
    sbatch = shutil.which("sbatch")
    if sbatch is not None:  # where srun exists, the plugin must be one this site offers
        check_mpi_plugin(script_options.get("mpi", DEFAULT_MPI))
    folder = Path(folder or tempfile.mkdtemp(prefix=f"skiff-dry-run-{run_dir.name}-"))
    script = folder / "job.sbatch"
    script.write_text(text)
    script.chmod(0o755)
    out = {"run_dir": str(run_dir), "script": str(script), "submitted": False,
           "slurm_job_id": None, "output": "", "dry_run": True}
    if sbatch is not None:
        proc = subprocess.run([sbatch, "--test-only", str(script)], capture_output=True,
                              text=True)
        out["output"] = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0:
            raise SlurmError(f"sbatch refused {script}: {out['output']}")
    return out
