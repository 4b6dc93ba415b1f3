"""``%train ... --dry-run`` (any kind's magic): every check a launch makes, then what it would
run, shown in the cell; no run folder, no thread, no process, nothing queued."""

from __future__ import annotations

import html
import json

__all__ = ["DryRun", "dry_run_document"]


def dry_run_document(kind: str, line: str, cell: str | None, user_ns: dict,
                     prog: str) -> dict:
    """:func:`skiff.jobs.launch.dry_run` for a magic line, and with ``--launcher slurm``
    the sbatch script it would write (``submission``: checked by ``sbatch --test-only``
    where sbatch exists), still with no run folder."""
    from skiff.jobs.launch import dry_run

    doc = dry_run(kind, line, cell=cell, user_ns=user_ns, prog=prog, front="magic")
    if doc["runner"] == "slurm":
        from skiff.jobs.slurm import dry_run_submission

        opts = doc["options"]
        doc["submission"] = dry_run_submission(kind, nodes=int(opts.get("nodes") or 1),
                                               gpus_per_node=int(opts.get("gpus_per_node")
                                                                 or 0))
    return doc


class DryRun(dict):
    """A dry run's document (a dict: ``kind``, ``runner``, ``np``, ``device``, ``command``,
    ``options``, ``config``, perhaps ``plan``, ``device_why``, ``submission``), shown as the
    plan and config."""

    def lines(self) -> list[str]:
        ranks = f"{self['np']} rank{'s' if self['np'] != 1 else ''}"
        where = {"thread": "a thread of this kernel", "process": f"{ranks} (MPI processes)",
                 "slurm": f"Slurm, {ranks}"}.get(self["runner"], self["runner"])
        out = ["dry run: nothing started, no run folder made",
               f"{self['kind']} job on {where}"
               + (f", device {self['device']}" if self.get("device") else "")
               + (f" ({self['device_why']})" if self.get("device_why") else ""),
               f"command: {self['command']}"]
        if self.get("plan"):
            out.append(f"plan: {self['plan']}")
        sub = self.get("submission")
        if sub:
            out.append(f"sbatch script: {sub['script']} (not queued"
                       + (f"; sbatch --test-only: {sub['output']}" if sub.get("output")
                          else "") + ")")
        out.append("config:")
        out.extend(f"  {key}: {json.dumps(value, ensure_ascii=False, default=str)}"
                   for key, value in self["config"].items())
        return out

    def __repr__(self) -> str:
        return "\n".join(self.lines())

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(repr(self))

    def _repr_html_(self) -> str:
        return ("<pre class='skiff-dry-run'>" + html.escape("\n".join(self.lines()))
                + "</pre>")
