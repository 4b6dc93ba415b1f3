"""Run-folder trust: what a job will execute is signed with a secret key of this user.

A run folder's ``config.json`` names the code a job runs: its ``kind``, its entry point
(``target``) and its ``config`` (a ``%%train`` cell's source, a ``%%solve`` spec with its
expressions). Anyone who can write the folder could change them, so :meth:`Job.create` signs
them (HMAC-SHA256 over their canonical JSON) with a per-user key kept outside every run folder,
and whatever executes or relaunches from a folder (the MPI worker, resume, the monitor's
Resume, ``%jobs show|attach``) first checks the signature, as Jupyter does with notebooks.

The key is ``$SKIFF_SECRET_FILE`` if set, else ``$XDG_DATA_HOME/skiff/secret`` (by default
``~/.local/share/skiff/secret``), 32 random bytes created 0600 on first use.
``python -m skiff jobs trust ID`` (``%jobs trust ID``) signs a folder's code on purpose.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

__all__ = ["UntrustedJob", "secret_file", "sign", "sign_record", "verdict", "record_verdict",
           "check", "trust_hint", "SIGNED_FIELDS"]

SIGNED_FIELDS = ("kind", "target", "config")
ALGORITHM = "hmac-sha256"


class UntrustedJob(ValueError):
    """A run folder's code is unsigned or was altered after it was signed."""


def secret_file() -> Path:
    """Where this user's signing key lives (outside every run folder)."""
    env = os.environ.get("SKIFF_SECRET_FILE")
    if env:
        return Path(env)
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data) / "skiff" / "secret"


def _key() -> bytes:
    path = secret_file()
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        key = b""
    if len(key) >= 32:
        return key
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fresh = secrets.token_hex(32).encode()
    # written whole under another name, then linked into place: a process starting at the
    # same moment sees no key or the whole key, never an empty file (two terminal jobs
    # started together: one was refused with "too short")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, fresh)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
        return fresh
    except FileExistsError:  # another process made it first
        return _existing_key(path)
    except OSError:  # a file system without hard links: create it in place
        return _create_in_place(path, fresh)
    finally:
        tmp.unlink(missing_ok=True)


def _create_in_place(path: Path, fresh: bytes) -> bytes:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _existing_key(path)
    try:
        os.write(fd, fresh)
    finally:
        os.close(fd)
    return fresh


def _existing_key(path: Path, wait_s: float = 2.0) -> bytes:
    """The key another process made; one being written in place is waited for a moment."""
    import time

    end = time.monotonic() + wait_s
    while True:
        key = path.read_bytes()
        if len(key) >= 32:
            return key
        if time.monotonic() > end:
            raise UntrustedJob(f"the skiff signing key {str(path)!r} is too short: delete it "
                               "to make a new one (jobs signed with it must then be trusted "
                               "again)")
        time.sleep(0.02)


def _payload(fields: dict, purpose: str) -> bytes:
    return json.dumps({"purpose": purpose, "fields": fields}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=True, default=str).encode()


def digest(fields: dict, purpose: str = "config") -> str:
    return hmac.new(_key(), _payload(fields, purpose), hashlib.sha256).hexdigest()


def _code_fields(meta: dict) -> dict:
    return {name: meta.get(name) for name in SIGNED_FIELDS}


def sign(meta: dict) -> dict:
    """``meta`` (the content of ``config.json``) with its ``signature`` set."""
    return {**meta, "signature": {"algorithm": ALGORITHM, "digest": digest(_code_fields(meta))}}


def sign_record(record: dict, purpose: str) -> dict:
    """A small record (``process.json``) with a ``signature`` over all its other fields."""
    fields = {k: v for k, v in record.items() if k != "signature"}
    return {**fields, "signature": {"algorithm": ALGORITHM, "digest": digest(fields, purpose)}}


def _verdict(sig, fields: dict, purpose: str) -> str:
    if not isinstance(sig, dict) or not isinstance(sig.get("digest"), str):
        return "unsigned"
    if sig.get("algorithm") != ALGORITHM:
        return "altered"
    try:
        ok = hmac.compare_digest(sig["digest"], digest(fields, purpose))
    except (TypeError, ValueError):
        return "altered"
    return "trusted" if ok else "altered"


def verdict(meta: dict) -> str:
    """``"trusted"``, ``"unsigned"`` or ``"altered"`` (signed by another key or changed)."""
    return _verdict(meta.get("signature"), _code_fields(meta), "config")


def record_verdict(record: dict, purpose: str) -> str:
    """:func:`verdict` of a record signed by :func:`sign_record`."""
    fields = {k: v for k, v in record.items() if k != "signature"}
    return _verdict(record.get("signature"), fields, purpose)


def trust_hint(job_id: str) -> str:
    return (f"read its config.json, then trust it on purpose with: python -m skiff jobs trust "
            f"{job_id} (%jobs trust {job_id} in a notebook)")


def check(meta: dict, run_dir: str | os.PathLike, what: str) -> None:
    """Raise :class:`UntrustedJob` (one line) unless ``meta``'s code is signed by this user."""
    state = verdict(meta)
    if state == "trusted":
        return
    job_id = str(meta.get("id") or Path(run_dir).name)
    why = ("its code is not signed" if state == "unsigned" else
           "its code was changed after it was signed (or signed with another key: another "
           "user's, or this user's on another machine, the folder copied here)")
    raise UntrustedJob(f"refusing to {what} job {job_id}: {why}; {trust_hint(job_id)}")
