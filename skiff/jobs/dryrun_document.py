"""A dry run's document and its text, for every front: ``python -m skiff KIND ... --dry-run``
and ``%KIND ... --dry-run`` both show :func:`dry_run_document` as :func:`dry_run_lines`.

No run folder is made, no thread or process started, nothing queued: with ``--launcher
slurm`` the sbatch script a launch would write goes to a temporary folder
(:func:`skiff.jobs.slurm.dry_run_submission`, checked by ``sbatch --test-only`` where sbatch
exists) and names the run folder a real launch would make.
"""

from __future__ import annotations

import json

__all__ = ["dry_run_document", "dry_run_lines"]


def dry_run_document(kind: str, words=None, *, values: dict | None = None,
                     cell: str | None = None, user_ns: dict | None = None,
                     prog: str | None = None, front: str = "cli",
                     typed: list[str] | None = None) -> dict:
    """:func:`skiff.jobs.launch.dry_run`'s document (same arguments) and, for a Slurm job,
    ``submission``: the script it would write, its check, ``submitted: False``."""
    from .launch import dry_run

    doc = dry_run(kind, words, values=values, cell=cell, user_ns=user_ns, prog=prog,
                  front=front, typed=typed)
    if doc["runner"] == "slurm":
        from .launch import slurm_tasks
        from .slurm import dry_run_submission

        opts = doc["options"]
        nodes, gpus = int(opts.get("nodes") or 1), int(opts.get("gpus_per_node") or 0)
        tasks = slurm_tasks(int(opts.get("np") or 1), nodes, gpus)
        doc["submission"] = dry_run_submission(
            kind, nodes=nodes, gpus_per_node=gpus,
            **({"tasks_per_node": tasks} if tasks else {}))
    return doc


def dry_run_lines(doc: dict, *, here: str = "this process") -> list[str]:
    """The document as lines for a person: where the job would run (``here``: what a thread
    job runs in, "this kernel" in a notebook), the command, the kind's plan, the sbatch
    script, then the config, one key a line."""
    ranks = f"{doc['np']} rank{'s' if doc['np'] != 1 else ''}"
    where = {"thread": f"a thread of {here}", "process": f"{ranks} (MPI processes)",
             "slurm": f"Slurm, {ranks}"}.get(doc["runner"], doc["runner"])
    out = ["dry run: nothing started, no run folder made",
           f"{doc['kind']} job on {where}"
           + (f", device {doc['device']}" if doc.get("device") else "")
           + (f" ({doc['device_why']})" if doc.get("device_why") else ""),
           f"command: {doc['command']}"]
    if doc.get("resumes"):  # jobs resume ID --dry-run
        out.append(f"resumes job {doc['resumes']}"
                   + (f" from {doc['from']}" if doc.get("from") else ""))
    if doc.get("plan"):
        out.append(f"plan: {doc['plan']}")
        from skiff.kernels.train.plan.planner import STEP_SHORT, step_note

        if STEP_SHORT in str(doc["plan"]):  # the raw figure is no promise: say what it is
            kind = "cpu" if str(doc.get("device") or "cpu").startswith("cpu") else "gpu"
            out.append(f"  (its step time is {step_note(kind)})")
    sub = doc.get("submission")
    if sub:
        out.append(f"sbatch script: {sub['script']} (not queued"
                   + (f"; sbatch --test-only: {sub['output']}" if sub.get("output") else "")
                   + ")")
    out.append("config:")
    out.extend(f"  {key}: {json.dumps(value, ensure_ascii=False, default=str)}"
               for key, value in doc["config"].items())
    return out
