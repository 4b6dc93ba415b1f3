"""``python -m skiff devices|jobs|train|solve|ocr|plan``: the magics' grammar in a terminal.

Job commands launch the job, show progress on stderr, and wait for it; ``--json`` prints one
JSON document to stdout (``{"job": ..., "result": ...}``). Exit status: 0 done, 1 failed or
cancelled, 2 bad usage.
"""

from __future__ import annotations

import importlib
import json
import sys
import time

from skiff.grammar import GrammarError, json_option, split_launch

__all__ = ["main", "JOB_GRAMMARS", "TOOLS"]

# job kinds: the grammar module defines COMMAND and to_config(values) -> kernel config
JOB_GRAMMARS = {
    "train": "skiff.grammar.train",
    "solve": "skiff.grammar.solve",
    "ocr": "skiff.grammar.ocr",
}
# commands that are not jobs: module with COMMAND and cli(namespace) -> (json document, text)
TOOLS = {
    "devices": "skiff.grammar.jobs:DEVICES",
    "jobs": "skiff.grammar.jobs:JOBS",
    "plan": "skiff.grammar.plan:COMMAND",
}


def _available() -> list[str]:
    names = []
    for name, spec in {**JOB_GRAMMARS, **TOOLS}.items():
        try:
            importlib.import_module(spec.split(":")[0])
        except ModuleNotFoundError:
            continue
        names.append(name)
    return names


def _usage() -> str:
    return ("usage: python -m skiff {" + "|".join(_available()) + "} [options]\n"
            "       python -m skiff COMMAND --help")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in _available():
        print(f"skiff: unknown command {name!r}\n{_usage()}", file=sys.stderr)
        return 2
    try:
        if name in JOB_GRAMMARS:
            return _run_job(name, rest)
        return _run_tool(name, rest)
    except GrammarError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except (ValueError, KeyError, FileNotFoundError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"skiff {name}: {msg}", file=sys.stderr)
        return 2


def _help_requested(rest, cmd) -> bool:
    if "--help" in rest or "-h" in rest:
        print(cmd.usage(prog=f"python -m skiff {cmd.name}"))
        return True
    return False


def _run_job(kind: str, rest: list[str]) -> int:
    grammar = importlib.import_module(JOB_GRAMMARS[kind])
    cmd = grammar.COMMAND
    if _help_requested(rest, cmd):
        return 0
    parser = cmd.parser(prog=f"python -m skiff {kind}")
    json_option.add(parser)
    ns = parser.parse_args(rest)
    values, launch_opts = split_launch(ns)
    config = grammar.to_config(values)
    from skiff.jobs import launch

    if launch_opts.get("launcher") == "slurm":
        return _submit_slurm(kind, config, launch_opts)
    job = launch(kind, config, np=launch_opts.get("np", 1),
                 runner=launch_opts.get("runner", "auto"), device=values.get("device"))
    print(f"skiff: job {job.id} ({job.run_dir})", file=sys.stderr)
    try:
        _follow(job)
    except KeyboardInterrupt:
        print("\nskiff: cancelling…", file=sys.stderr)
        job.cancel(grace=2.0)
        job.wait(timeout=20)
    doc = {"job": job.summary(), "result": job.result}
    if launch_opts.get("json"):
        print(json.dumps(doc, default=str))
    else:
        print(_describe(job))
    return 0 if job.status == "done" else 1


def _submit_slurm(kind: str, config: dict, opts: dict) -> int:
    """``--launcher slurm``: write (and submit) the batch script; follow only with --wait."""
    from skiff.jobs.slurm import SlurmError, slurm_job

    try:
        job = slurm_job(kind, config, nodes=opts.get("nodes", 1),
                        gpus_per_node=opts.get("gpus_per_node", 0),
                        dry_run=bool(opts.get("dry_run")))
    except SlurmError as exc:
        print(f"skiff {kind}: {exc}", file=sys.stderr)
        return 2
    sub = job.submission
    print(f"skiff: job {job.id}: script {sub['script']}"
          + (f", Slurm job {sub['slurm_job_id']}" if sub["submitted"] else " (not queued)"),
          file=sys.stderr)
    if opts.get("wait") and sub["submitted"]:
        _follow(job)
    if opts.get("json"):
        print(json.dumps({"job": job.summary(), "submission": sub}, default=str))
    return 0


def _follow(job) -> None:
    last = ""
    while not job.done:
        time.sleep(0.2)
        state = job.state
        if state.total:
            line = f"{job.status} {state.done:g}/{float(state.total):g} {state.unit}"
            if line != last and sys.stderr.isatty():
                print(f"\r{line}", end="", file=sys.stderr)
            last = line
    job.wait()
    if last and sys.stderr.isatty():
        print(file=sys.stderr)


def _describe(job) -> str:
    lines = [repr(job)]
    if job.status == "failed":
        lines.append(job.error or "")
    elif job.result:
        for key, value in job.result.items():
            text = json.dumps(value, default=str)
            lines.append(f"  {key}: {text[:200]}")
    return "\n".join(lines)


def _run_tool(name: str, rest: list[str]) -> int:
    module, _, attr = TOOLS[name].partition(":")
    cmd = getattr(importlib.import_module(module), attr)
    if _help_requested(rest, cmd):
        return 0
    ns = cmd.parse(rest, prog=f"python -m skiff {name}")
    if name == "devices":
        from skiff.kernels.backend import list_devices

        devices = list_devices()
        if ns.json:
            print(json.dumps([d.to_json() for d in devices]))
        else:
            from skiff.widgets.render import DeviceTable

            print(repr(DeviceTable(devices)))
        return 0
    if name == "jobs":
        from skiff.magics.jobs import jobs_action

        out = jobs_action(ns.action, ns.job_id, all=ns.all, timeout=ns.timeout)
        if ns.json:
            doc = [j.summary() for j in out] if isinstance(out, list) else out.summary()
            print(json.dumps(doc))
        elif isinstance(out, list):
            from skiff.magics.jobs import JobTable

            print(repr(JobTable(out)))
        else:
            print(_describe(out))
        return 0
    document, text = importlib.import_module(module).cli(ns)
    print(json.dumps(document, default=str) if getattr(ns, "json", False) else text)
    return 0
