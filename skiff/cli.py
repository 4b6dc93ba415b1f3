"""``python -m skiff devices|jobs|plan|<kind>``: the magics' grammar in a terminal.

Every job kind with a grammar (:mod:`skiff.kinds`: train, solve, ocr, …) is a command: it
launches the job (:func:`skiff.jobs.submit`, as the magics do), shows progress on stderr and
waits for it; ``--json`` prints one JSON document to stdout (``{"job": ..., "result":
...}``). Exit status: 0 done, 1 failed or cancelled, 2 bad usage.
"""

from __future__ import annotations

import json
import sys

from skiff.grammar import GrammarError, json_option, user_message
from skiff.grammar.jobs import DEVICES, JOBS
from skiff.grammar.plan import COMMAND as PLAN

__all__ = ["main", "TOOLS"]

# commands that are not jobs
TOOLS = {"devices": DEVICES, "jobs": JOBS, "plan": PLAN}


def _kinds() -> dict:
    from skiff.kinds import KINDS

    return {name: k for name, k in KINDS.items() if k.command is not None}


def _usage() -> str:
    return ("usage: python -m skiff {" + "|".join([*_kinds(), *TOOLS]) + "} [options]\n"
            "       python -m skiff COMMAND --help")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in _kinds() and name not in TOOLS:
        print(f"skiff: unknown command {name!r}\n{_usage()}", file=sys.stderr)
        return 2
    try:
        if name in TOOLS:
            return _run_tool(name, rest)
        return _run_job(name, rest)
    except GrammarError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except Exception as exc:
        msg = user_message(exc)
        if msg is None:
            raise
        print(f"skiff {name}: {msg}", file=sys.stderr)
        return 2


def _help_requested(rest, cmd) -> bool:
    if "--help" in rest or "-h" in rest:
        print(cmd.usage(prog=f"python -m skiff {cmd.name}"))
        return True
    return False


def _run_job(kind: str, rest: list[str]) -> int:
    from skiff.jobs import follow, submit

    cmd = _kinds()[kind].command
    if _help_requested(rest, cmd):
        return 0
    parser = cmd.parser(prog=f"python -m skiff {kind}")
    json_option.add(parser)
    values = vars(parser.parse_args(rest))
    job, opts = submit(kind, values=values)
    if getattr(job, "submission", None) is not None:
        return _slurm_submitted(job, opts)
    print(f"skiff: job {job.id} ({job.run_dir})", file=sys.stderr)
    follow(job, _tty_line() if sys.stderr.isatty() else None, quiet_s=0.0,
           on_interrupt=lambda: print("\nskiff: cancelling…", file=sys.stderr))
    if sys.stderr.isatty():
        print(file=sys.stderr)
    doc = {"job": job.summary(), "result": job.result}
    if opts.get("json"):
        print(json.dumps(doc, default=str))
    else:
        from skiff.jobs.render import describe

        print(describe(job))
    return 0 if job.status == "done" else 1


def _tty_line():
    def show(line: str) -> None:
        print(f"\r{line}", end="", file=sys.stderr)

    return show


def _slurm_submitted(job, opts: dict) -> int:
    """``--launcher slurm``: the script was written (and submitted); follow only with --wait."""
    from skiff.jobs import follow

    sub = job.submission
    print(f"skiff: job {job.id}: script {sub['script']}"
          + (f", Slurm job {sub['slurm_job_id']}" if sub["submitted"] else " (not queued)"),
          file=sys.stderr)
    if opts.get("wait") and sub["submitted"]:
        follow(job, None)
    if opts.get("json"):
        print(json.dumps({"job": job.summary(), "submission": sub}, default=str))
    return 0


def _run_tool(name: str, rest: list[str]) -> int:
    cmd = TOOLS[name]
    if _help_requested(rest, cmd):
        return 0
    ns = cmd.parse(rest, prog=f"python -m skiff {name}")
    if name == "devices":
        from skiff.jobs.render import DeviceTable
        from skiff.kernels.backend import list_devices

        devices = list_devices()
        if ns.json:
            print(json.dumps([d.to_json() for d in devices]))
        else:
            print(repr(DeviceTable(devices)))
        return 0
    if name == "jobs":
        from skiff.jobs import jobs_action
        from skiff.jobs.render import JobTable, describe

        out = jobs_action(ns.action, ns.job_id, all=ns.all, timeout=ns.timeout)
        if ns.json:
            doc = [j.summary() for j in out] if isinstance(out, list) else out.summary()
            print(json.dumps(doc))
        elif isinstance(out, list):
            print(repr(JobTable(out)))
        else:
            print(describe(out))
        return 0
    from skiff.grammar.plan import cli

    document, text = cli(ns)
    print(json.dumps(document, default=str) if getattr(ns, "json", False) else text)
    return 0
