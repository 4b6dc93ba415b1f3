"""``%train ... --dry-run`` (any kind's magic): every check a launch makes, then what it would
run, shown in the cell; no run folder, no thread, no process, nothing queued. The document
and its text are :mod:`skiff.jobs.dryrun_document`'s, which the terminal shows too."""

from __future__ import annotations

import html

__all__ = ["DryRun", "dry_run_document"]


def dry_run_document(kind: str, line: str, cell: str | None, user_ns: dict,
                     prog: str) -> dict:
    """:func:`skiff.jobs.dryrun_document.dry_run_document` for a magic line (with
    ``--launcher slurm``: the sbatch script it would write, still with no run folder)."""
    from skiff.jobs.dryrun_document import dry_run_document as document

    return document(kind, line, cell=cell, user_ns=user_ns, prog=prog, front="magic")


class DryRun(dict):
    """A dry run's document (a dict: ``kind``, ``runner``, ``np``, ``device``, ``command``,
    ``options``, ``config``, perhaps ``plan``, ``device_why``, ``submission``), shown as the
    plan and config."""

    def lines(self) -> list[str]:
        from skiff.jobs.dryrun_document import dry_run_lines

        return dry_run_lines(self, here="this kernel")

    def __repr__(self) -> str:
        return "\n".join(self.lines())

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(repr(self))

    def _repr_html_(self) -> str:
        return ("<pre class='skiff-dry-run'>" + html.escape("\n".join(self.lines()))
                + "</pre>")
