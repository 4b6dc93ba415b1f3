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
        if "cannot resume from" in str(getattr(job, "error", None) or ""):
            return None   # its resume was refused: going on again is refused again
        from skiff.kinds import KINDS, Kind

        kind = KINDS.get(job.kind)
        if kind is None or type(kind).resume_config is Kind.resume_config:
            return None
        from . import _check_checkpoints_there, resume_command

        config = kind.resume_config(job)
        if isinstance(config, dict):
            _check_checkpoints_there(job, config)
        hint = f"to go on from where it stopped: {resume_command(job.id, front)}"
        return hint + _same_command(job)
    except Exception:  # noqa: BLE001 - a refused or damaged job: no hint
        return None


def _same_command(job) -> str:
    """``", or the same command with --resume"`` (``again`` where it had ``--resume``) for
    an ocr-rec fine-tune that named its folder (``--out DIR`` or ``--checkpoint-dir DIR``,
    where its rec.ckpt is): typed again with ``--resume`` it goes on from there too (as a
    training's line says of ``--resume --checkpoint-dir``); else ``""``."""
    try:
        config = job.config if isinstance(job.config, dict) else {}
        named = config.get("out") or config.get("checkpoint_dir")
        if config.get("model") != "ocr-rec" or not named:
            return ""
        command = str((getattr(job, "meta", None) or {}).get("command") or "")
        if not command or " resume " in f" {command} ":  # `jobs resume ID`: no command
            return ""
        return (", or the same command again" if config.get("resume")
                else ", or the same command with --resume")
    except Exception:  # noqa: BLE001 - an odd record: the hint without it
        return ""
