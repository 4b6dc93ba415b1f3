"""How to go on with a job that stopped early: the line a terminal summary, ``jobs show``
and the notebook view print under a cancelled or failed job whose kind can resume it
(train from its newest checkpoint, OCR from the pages it read). Said only when the resume
would be taken: a train job that wrote no checkpoint, or a job of notebook objects, gets no
hint (``jobs resume`` would refuse it, naming why)."""

from __future__ import annotations

__all__ = ["resume_hint"]

STOPPED = ("cancelled", "failed")


def resume_hint(job, front: str = "cli") -> str | None:
    """``"to go on from where it stopped: python -m skiff jobs resume ID"`` (``front="magic"``:
    ``%jobs resume ID``) for a cancelled or failed job that ``jobs resume`` would take, else
    None. Never raises: a hint is not worth an error in a summary."""
    try:
        if getattr(job, "status", None) not in STOPPED:
            return None
        from skiff.kinds import KINDS, Kind

        kind = KINDS.get(job.kind)
        if kind is None or type(kind).resume_config is Kind.resume_config:
            return None
        from . import _check_checkpoints_there, resume_command

        config = kind.resume_config(job)
        if isinstance(config, dict):
            _check_checkpoints_there(job, config)
        return f"to go on from where it stopped: {resume_command(job.id, front)}"
    except Exception:  # noqa: BLE001 - a refused or damaged job: no hint
        return None
