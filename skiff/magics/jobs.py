"""``%jobs`` and ``%devices``."""

from __future__ import annotations

import json

from IPython.core.magic import Magics, line_magic, magics_class

from skiff.grammar.jobs import DEVICES, JOBS
from skiff.jobs import Job, list_jobs

from .base import parse_line, usage_errors, wait_quietly

__all__ = ["JobsMagics", "jobs_action"]


def jobs_action(action: str, job_id: str | None = None, *, all: bool = False,
                timeout: float | None = None):
    """The work behind ``%jobs`` and ``python -m skiff jobs``: a list of jobs or one job."""
    if action == "list":
        jobs = list_jobs()
        return jobs if all else jobs[-20:]
    if not job_id:
        raise ValueError(f"%jobs {action} needs a job ID (see %jobs list)")
    job = Job.load(job_id)
    if action == "wait":
        job.wait(timeout=timeout)
    elif action == "cancel":
        job.cancel()
    return job


class JobTable(list):
    """A list of jobs with a table repr."""

    def _repr_html_(self):
        from skiff.widgets.render import jobs_table_html

        return jobs_table_html(self)

    def __repr__(self):
        if not self:
            return "no jobs yet"
        lines = []
        for r in (j.summary() for j in self):
            pct = "" if r["progress"] is None else f"{100 * r['progress']:.0f}%"
            lines.append(f"{r['id']:<32} {r['kind']:<6} {r['status']:<9} ranks={r['ranks']} {pct}")
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))


@magics_class
class JobsMagics(Magics):
    @line_magic
    def jobs(self, line=""):
        """List, show, wait for, cancel or reattach to jobs: ``%jobs [list|show|wait|cancel|attach]
        [ID] [--all] [--timeout S] [-o NAME]``."""
        ns = parse_line(JOBS, line)
        with usage_errors():
            if ns.action == "wait":
                job = jobs_action("show", ns.job_id)
                wait_quietly(job) if ns.timeout is None else job.wait(timeout=ns.timeout)
                out = job
            else:
                out = jobs_action(ns.action, ns.job_id, all=ns.all, timeout=ns.timeout)
        if isinstance(out, list):
            out = JobTable(out)
        if ns.output:
            self.shell.user_ns[ns.output] = out
        if ns.json:
            doc = [j.summary() for j in out] if isinstance(out, list) else out.summary()
            print(json.dumps(doc))
            return None
        return out

    @line_magic
    def devices(self, line=""):
        """List the CPU and every GPU: ``%devices [--json]``."""
        ns = parse_line(DEVICES, line)
        from skiff.kernels.backend import list_devices

        devices = list_devices()
        if ns.json:
            print(json.dumps([d.to_json() for d in devices]))
            return None
        from skiff.widgets.render import DeviceTable

        return DeviceTable(devices)
