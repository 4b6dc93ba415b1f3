"""Static HTML and text views of jobs and devices (no widget front end needed)."""

from __future__ import annotations

import html
import json
import time

__all__ = ["job_html", "jobs_table_html", "JobTable", "DeviceTable", "STATUS_COLORS",
           "fmt_bytes", "fmt_seconds", "describe"]

STATUS_COLORS = {"queued": "#888", "running": "#1f77b4", "done": "#2ca02c", "failed": "#d62728",
                 "cancelled": "#ff7f0e"}


def fmt_bytes(n) -> str:
    if n is None:
        return "?"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def fmt_seconds(s) -> str:
    if s is None:
        return "–"
    s = float(s)
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def badge(status: str) -> str:
    color = STATUS_COLORS.get(status, "#888")
    return (f'<span class="skiff-badge skiff-{html.escape(status)}" style="background:{color};'
            f'color:white;border-radius:4px;padding:1px 6px;font-size:90%">'
            f"{html.escape(status)}</span>")


def job_html(job) -> str:
    state = job.refresh()
    now = time.time()
    pct = ""
    if state.total:
        frac = min(1.0, state.done / float(state.total))
        pct = (f'<progress value="{frac:.3f}" max="1" style="width:12em"></progress> '
               f"{100 * frac:.0f}% ({state.done:g}/{float(state.total):g} "
               f"{html.escape(state.unit)})")
    metrics = ", ".join(f"{html.escape(k)}={v[-1][1]:.4g}" for k, v in state.metrics.items()
                        if v and isinstance(v[-1][1], (int, float)))
    err = ""
    if state.error:
        tb = html.escape(state.traceback or "")
        err = (f'<div style="color:#d62728"><b>{html.escape(state.error)}</b>'
               f"<pre style='font-size:85%'>{tb}</pre></div>")
    return (f'<div class="skiff-job"><b>{html.escape(job.kind)}</b> '
            f"<code>{html.escape(job.id)}</code> {badge(state.status)} {pct} "
            f"<span>elapsed {fmt_seconds(state.elapsed(now))}</span>"
            f"{'<br>' + metrics if metrics else ''}{err}</div>")


def jobs_table_html(jobs) -> str:
    if not jobs:
        return "<i>no jobs yet</i>"
    rows = []
    for job in jobs:
        s = job.summary()
        prog = "" if s["progress"] is None else f"{100 * s['progress']:.0f}%"
        rows.append(f"<tr><td><code>{html.escape(s['id'])}</code></td><td>{s['kind']}</td>"
                    f"<td>{badge(s['status'])}</td><td>{prog}</td><td>{s['ranks']}</td>"
                    f"<td>{fmt_seconds(s['elapsed_s'])}</td></tr>")
    head = ("<tr><th>id</th><th>kind</th><th>status</th><th>progress</th><th>ranks</th>"
            "<th>elapsed</th></tr>")
    return f'<table class="skiff-jobs">{head}{"".join(rows)}</table>'


class JobTable(list):
    """A list of jobs with a table repr."""

    def _repr_html_(self):
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


def describe(job) -> str:
    """A few lines about a job for a terminal: its repr, then its error or its result."""
    lines = [repr(job)]
    if job.status == "failed":
        lines.append(job.error or "")
    elif job.result:
        for key, value in job.result.items():
            text = json.dumps(value, default=str)
            lines.append(f"  {key}: {text[:200]}")
    return "\n".join(lines)


class DeviceTable(list):
    """A list of devices with a table repr."""

    def _rows(self):
        return [(d.name, d.vendor, d.model, d.cores, fmt_bytes(d.total_memory),
                 fmt_bytes(d.free_memory)) for d in self]

    def __repr__(self):
        head = ("device", "vendor", "model", "cores", "memory", "free")
        rows = [head, *self._rows()]
        widths = [max(len(str(r[i])) for r in rows) for i in range(len(head))]
        return "\n".join("  ".join(str(v).ljust(w) for v, w in zip(r, widths)) for r in rows)

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))

    def _repr_html_(self):
        head = "".join(f"<th>{h}</th>" for h in
                       ("device", "vendor", "model", "cores", "memory", "free"))
        body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r) + "</tr>"
                       for r in self._rows())
        return f'<table class="skiff-devices"><tr>{head}</tr>{body}</table>'
