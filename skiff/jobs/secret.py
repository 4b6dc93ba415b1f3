"""Secret options: kept off disk and off the screen (round 46 h11).

A kind's grammar marks an option secret on its argparse action, as ``notebook_only`` is
marked: ``p.add_argument("--password", ...).secret = "SKIFF_PDF_PASSWORD"`` (the value: the
environment variable that may give it instead, or ``True``). The option's value reaches the
job's config under the option's ``dest`` as ever, but wherever a config or a command is
recorded or shown (the run folder's ``config.json``: its ``config``, ``options`` and
``command``; a dry run's document; ``jobs show`` and ``jobs`` from those) it is
:data:`MASK`. A thread job runs from the config in memory, which keeps it; a process job's
worker gets it in its environment (:data:`SECRETS_ENV`, a JSON object read and removed by
:func:`unmasked`), never written. ``jobs resume`` of such a job asks for it again
(:func:`fill_secrets`: the option's environment variable, else one prompt line).
"""

from __future__ import annotations

import json
import os
import re

__all__ = ["MASK", "SECRETS_ENV", "secret_options", "mask_config", "mask_command",
           "mask_record", "check_runner", "unmasked", "fill_secrets"]

MASK = "***"
SECRETS_ENV = "SKIFF_JOB_SECRETS"  # the worker's secrets: {"dest": value}, never on disk

_CACHE: dict[int, dict] = {}


def secret_options(kind) -> dict[str, tuple[list[str], str | None]]:
    """``{dest: (flags, environment variable or None)}`` of ``kind``'s secret options (a
    :class:`~skiff.kinds.base.Kind`, its name, or a grammar's
    :class:`~skiff.grammar.common.Command`); ``{}`` for a kind of none or no grammar."""
    if isinstance(kind, str):
        from skiff.kinds import KINDS

        kind = KINDS.get(kind)
    command = kind if callable(getattr(kind, "parser", None)) else getattr(kind, "command", None)
    if command is None:
        return {}
    key = id(command)
    if key not in _CACHE:
        found = {}
        for action in command.parser()._actions:
            mark = getattr(action, "secret", None)
            if mark:
                found[action.dest] = (list(action.option_strings),
                                      mark if isinstance(mark, str) else None)
        _CACHE[key] = found
    return _CACHE[key]


def _given(value) -> bool:
    return value is not None and value != "" and value is not False and value != MASK


def mask_config(config: dict | None, secrets: dict) -> tuple[dict | None, dict]:
    """``(masked, hidden)``: ``config`` with each secret option given replaced by
    :data:`MASK`, and the values taken out (``{dest: value}``)."""
    if not isinstance(config, dict) or not secrets:
        return config, {}
    hidden = {k: config[k] for k in secrets if _given(config.get(k))}
    return ({**config, **{k: MASK for k in hidden}} if hidden else config), hidden


def mask_command(line: str | None, secrets: dict) -> str | None:
    """A command line (``python -m skiff ocr ... --password PW``, ``%ocr ... --password=PW``)
    with each secret option's value :data:`MASK`."""
    if not isinstance(line, str) or not secrets:
        return line
    flags = [re.escape(f) for flags, _ in secrets.values() for f in flags]
    if not flags:
        return line
    value = r"""(?:'[^']*'|"(?:[^"\\]|\\.)*"|[^\s'"]+)+"""
    return re.sub(rf"(?<!\S)({'|'.join(flags)})(=|\s+){value}",
                  lambda m: f"{m.group(1)}{m.group(2)}{MASK}", line)


def mask_record(secrets: dict, *, config=None, command=None, options=None):
    """``(config, command, options, hidden)`` with every secret masked: what a launch
    records and a dry run shows."""
    config, hidden = mask_config(config, secrets)
    options, more = mask_config(options, secrets)
    return config, mask_command(command, secrets), options, {**more, **hidden}


def check_runner(hidden: dict, runner: str, secrets: dict) -> None:
    """Refuse (one line) a secret for a Slurm job: it would be in its script's environment
    or on a cluster's disk; the option's environment variable reaches the job instead."""
    if not hidden or runner != "slurm":
        return
    key = next(iter(hidden))
    flags, env = secrets.get(key, ([f"--{key.replace('_', '-')}"], None))
    flag = flags[-1] if flags else key
    instead = f"set {env} in the job's environment" if env else "give it another way"
    raise ValueError(f"{flag} is not sent to a Slurm job (it would be written in its script "
                     f"or its run folder): {instead} instead, and leave {flag} out")


def unmasked(config: dict) -> dict:
    """The worker's config: each :data:`MASK` value put back from :data:`SECRETS_ENV` (then
    removed from the environment: the kernel's own processes do not inherit it); one that
    is not there is dropped (``***`` is no password)."""
    raw = os.environ.pop(SECRETS_ENV, None)
    try:
        given = json.loads(raw) if raw else {}
    except ValueError:
        given = {}
    if not isinstance(config, dict) or MASK not in config.values():
        return config
    out = {}
    for key, value in config.items():
        if value == MASK:
            if isinstance(given, dict) and key in given:
                out[key] = given[key]
            continue
        out[key] = value
    return out


def fill_secrets(kind: str, config: dict, job_id: str, ask=None) -> dict:
    """``jobs resume``: ``config`` with each masked secret given again, from the option's
    environment variable, else ``ask(prompt)`` (one line: :func:`getpass.getpass` where
    there is a terminal or a notebook to ask in); ValueError (one line) where neither."""
    secrets = secret_options(kind)
    masked = [k for k in secrets if isinstance(config, dict) and config.get(k) == MASK]
    if not masked:
        return config
    config = dict(config)
    for key in masked:
        flags, env = secrets[key]
        flag = flags[-1] if flags else key
        value = os.environ.get(env) if env else None
        if not value:
            asker = ask if ask is not None else _default_ask()
            if asker is not None:
                try:
                    value = asker(f"{flag} of job {job_id} (not kept in its run folder)"
                                  + (f"; or set {env}" if env else "") + ": ")
                except (EOFError, KeyboardInterrupt, OSError, RuntimeError):
                    value = None
                except Exception:  # noqa: BLE001  (a notebook that cannot ask: no stdin)
                    value = None
        if not value:
            how = f"set {env} in the environment" if env else "answer its prompt"
            raise ValueError(f"job {job_id} was started with {flag}, which is not kept in its "
                             f"run folder: give it again to resume ({how})")
        config[key] = value
    return config


def _default_ask():
    """:func:`getpass.getpass` where it can ask: a terminal, or an IPython kernel (which
    asks in the notebook); else None."""
    import sys

    stdin = sys.stdin
    try:
        tty = stdin is not None and stdin.isatty()
    except (ValueError, OSError):
        tty = False
    if tty or "ipykernel" in sys.modules:
        import getpass

        return getpass.getpass
    return None
