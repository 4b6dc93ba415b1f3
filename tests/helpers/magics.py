"""A magic line tried with ``--dry-run`` in the test's shell: the oracle the form tests hold a
panel's answer against (round 47: h16's and h17's files each had their own copy)."""

from __future__ import annotations


def dry_run_refusal(ip, kind: str, line: str) -> str | None:
    """What ``%kind line --dry-run`` refuses the line with (None: it takes it)."""
    from IPython.core.error import UsageError

    try:
        ip.run_line_magic(kind, f"{line} --dry-run")
    except UsageError as exc:
        return str(exc)
    return None
