"""A job in a terminal, the way tqdm shows a loop: one live line while it runs, a short summary
when it ends.

On a terminal (a TTY) the line is redrawn in place (``\\r`` and erase-to-end) a few times a
second::

    solve 5e3a  42%|████▏     | 3.36/8 decades [00:02<00:03, 1.21 decades/s] residual 4.4e-04

When stderr is a file or a pipe, a plain line is written at most every ``plain_every``
seconds (and when the status changes), so a log stays readable. At the end
:func:`summary` gives a few lines: status and time, the kind's key figures
(:meth:`skiff.kinds.Kind.summary`), and the run folder. Whatever a job wrote (its messages,
errors, file names) passes through :func:`clean` first: control characters are shown
escaped, never obeyed.
"""

from __future__ import annotations

import os
import re
import time

from skiff.kinds.base import figure

from .going_on import resume_hint
from .render import fmt_seconds
from .state import ETA_AFTER_S, ETA_REACH, PROGRESS_KEPT, shown_eta  # noqa: F401

__all__ = ["clean", "fmt_rate", "fmt_clock", "live_line", "plain_line", "running_lines", "summary",
           "LiveDisplay", "KEY_METRICS", "shown_eta", "ETA_AFTER_S"]

# the metric a live line shows, first found (a kind's own figures come at the end)
KEY_METRICS = ("loss", "residual", "val_loss", "value")

# C0 and C1 controls, DEL, and the bidirectional overrides that reorder what is shown
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_BLOCKS = " ▏▎▍▌▋▊▉█"


def clean(text, *, keep_newlines: bool = False) -> str:
    """``text`` safe to print on a terminal: every control character (ANSI escapes, carriage
    returns, bells, bidi overrides) written as its escape (``\\x1b``); CJK and other
    printable text unchanged. ``keep_newlines`` keeps line breaks (for multi-line errors)."""
    def escape(m: re.Match) -> str:
        ch = m.group()
        if keep_newlines and ch == "\n":
            return ch
        return ch.encode("unicode_escape").decode("ascii")

    return _CONTROL.sub(escape, str(text))


def _singular(unit: str) -> str:
    return unit[:-1] if unit.endswith("s") and not unit.endswith("ss") else unit


def _plural(unit: str) -> str:
    return unit if unit.endswith("s") else f"{unit}s"


# shown_eta, ETA_AFTER_S: in state.py (the job's JSON summary gives it too, round 45)


def fmt_rate(rate: float | None, unit: str) -> str:
    """``12.3 steps/s``, or ``2.4 s/decade`` below one unit a second ("" for None)."""
    if rate is None or rate <= 0:
        return ""
    if rate >= 1:
        return f"{figure(rate)} {_plural(unit)}/s"
    return f"{figure(1.0 / rate)} s/{_singular(unit)}"


def fmt_clock(seconds: float | None) -> str:
    """``01:23``, ``1:02:03`` (tqdm's clock), ``?`` for None."""
    if seconds is None:
        return "?"
    s = int(round(max(0.0, float(seconds))))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _bar(fraction: float, width: int, ascii_only: bool) -> str:
    if ascii_only:
        full = int(fraction * width)
        return ("#" * full + ("." * (width - full)))[:width]
    eighths = int(round(fraction * width * 8))
    full, part = divmod(eighths, 8)
    text = "█" * full + (_BLOCKS[part] if part and full < width else "")
    return text.ljust(width)


def _short(job) -> str:
    return f"{job.kind} {job.id.rsplit('-', 1)[-1]}"


def _key_metric(state) -> str:
    for name in KEY_METRICS:
        value = state.last(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return f"{name} {figure(value)}"
    return ""


def _amount(state) -> str:
    unit = _plural(state.unit) if state.unit else ""
    if state.total:
        return f"{figure(state.done)}/{figure(float(state.total))} {unit}".rstrip()
    if state.done:
        return f"{figure(state.done)} {unit}".rstrip()
    return ""


def live_line(job, width: int = 100, *, now: float | None = None,
              ascii_only: bool = False) -> str:
    """One line like tqdm's: ``kind id pct|bar| done/total unit [elapsed<eta, rate] metric``,
    at most ``width`` characters."""
    state = job.state
    now = time.time() if now is None else now
    head = _short(job)
    if state.status != "running" or state.fraction is None:
        head += f" {state.status}"
    elapsed = state.elapsed(now)
    clock = fmt_clock(elapsed) if elapsed is not None else "00:00"
    stalled = state.stalled(now)
    finishing = state.finishing()  # past its last unit, working on what comes after it
    quiet = stalled is not None or finishing is not None
    if not state.final and state.total:
        clock += f"<{fmt_clock(None if quiet else shown_eta(state, now))}"
    rate = fmt_rate(state.rate(), state.unit) if not state.final else ""
    if stalled is not None:
        rate = f"no progress for {fmt_seconds(stalled)}"
    elif finishing is not None:
        rate = "finishing"
    timing = f"[{clock}{', ' + rate if rate else ''}]"
    metric = _key_metric(state)
    tail = " ".join(x for x in (_amount(state), timing, metric) if x)
    frac = state.fraction
    if frac is None:
        line = f"{head} {tail}"
    else:
        room = width - len(head) - len(tail) - 8
        bar = f"|{_bar(frac, min(room, 30), ascii_only)}|" if room >= 6 else ""
        line = f"{head} {100 * frac:3.0f}%{bar} {tail}"
    if finishing:  # what it said it does after its last step
        line += f" {finishing}"
    elif not metric and not state.final and state.message:  # what it is doing, if there is room
        line += f" {state.message}"
    return clean(line)[:max(10, width)]


def plain_line(job, *, now: float | None = None) -> str:
    """A line for a log: ``kind id status pct done/total unit, elapsed, ETA, rate, metric``."""
    state = job.state
    now = time.time() if now is None else now
    bits = [f"{_short(job)} {state.status}"]
    if state.fraction is not None:
        bits[0] += f" {100 * state.fraction:.0f}%"
    amount = _amount(state)
    if amount:
        bits[0] += f" {amount}"
    elapsed = state.elapsed(now)
    if elapsed is not None:
        bits.append(f"elapsed {fmt_seconds(elapsed)}")
    stalled = state.stalled(now)
    finishing = state.finishing()
    if stalled is not None:
        bits.append(f"no progress for {fmt_seconds(stalled)}")
    elif finishing is not None:  # working after its last step, not stalled
        bits.append(f"finishing: {finishing}" if finishing else "finishing")
    elif not state.final:
        eta = shown_eta(state, now)
        if eta is not None:
            bits.append(f"ETA {fmt_seconds(eta)}")
        rate = fmt_rate(state.rate(), state.unit)
        if rate:
            bits.append(rate)
    metric = _key_metric(state)
    if metric:
        bits.append(metric)
    elif state.message:
        bits.append(str(state.message))
    return clean(", ".join(bits))


def running_lines(job, front: str = "cli") -> list[str]:
    """``jobs show ID`` of a running job, under its description: where it is, how fast, and
    its last three log lines (it printed the repr alone); ``front="magic"``: how to follow
    it in ``%jobs`` words."""
    state = job.refresh()
    if state.final:
        return []
    from .render import summarise_logs

    lines = ["  " + plain_line(job).split(" ", 2)[-1]]
    for t, level, msg in summarise_logs(state.logs)[-3:]:
        when = time.strftime("%H:%M:%S", time.localtime(t)) if t else ""
        lines.append(clean(f"  {when} {'' if level == 'info' else level + ': '}{msg}"))
    if front == "magic":
        lines.append(f"  %jobs show {job.id} -f follows it live; %jobs logs {job.id} has its "
                     "log")
    else:
        lines.append(f"  jobs attach {job.id} follows it live; jobs logs {job.id} has its log")
    return lines


class LiveDisplay:
    """Draws a job on ``stream``: one line in place on a TTY, else plain lines (at most one
    every ``plain_every`` seconds). Use with :func:`skiff.jobs.follow`::

        follow(job, display.write, line=display.render, rate=display.rate, quiet_s=0)
        display.close(job)
    """

    def __init__(self, stream, *, tty: bool | None = None, plain_every: float = 10.0,
                 ascii_only: bool | None = None):
        self.stream = stream
        # TERM=dumb (Emacs' shell, some CI consoles): a terminal that cannot redraw a line
        self.tty = (stream.isatty() and os.environ.get("TERM") != "dumb") if tty is None \
            else tty
        self.plain_every = plain_every
        encoding = (getattr(stream, "encoding", None) or "ascii").lower()
        self.ascii_only = ("utf" not in encoding) if ascii_only is None else ascii_only
        self.drawn = False
        self.last = ""  # the last plain line written (the final one is not written twice)

    @property
    def rate(self) -> float:
        """Lines a second at most (follow's ``rate``)."""
        return 5.0 if self.tty else 1.0 / self.plain_every

    def _width(self) -> int:
        try:
            cols = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            cols = 0
        return (cols or int(os.environ.get("COLUMNS", "0") or 0) or 100) - 1

    def render(self, job) -> str:
        if self.tty:
            return live_line(job, self._width(), ascii_only=self.ascii_only)
        return plain_line(job)

    def write(self, line: str) -> None:
        if self.tty:
            self.stream.write(f"\r{line}\x1b[K")
            self.drawn = True
        else:
            self.stream.write(line + "\n")
            self.last = line
        self.stream.flush()

    def close(self, job=None) -> None:
        """Draw the job's final state (in place on a TTY), then end the line. Off a TTY the
        final line is written once too, whatever was before it (nothing, for a job that ended
        before the first look; its "running" line of seconds ago): a log ends with how the
        job ended however fast it did, not as a race decides (round 41)."""
        if job is not None and (self.tty or self.render(job) != self.last):
            self.write(self.render(job))
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()
        self.drawn = False


def summary(job, kind=None) -> str:
    """A few lines for a terminal once ``job`` has ended: status and time, its error or the
    kind's key figures, where the run folder is."""
    state = job.state
    elapsed = state.elapsed(time.time())
    head = f"{job.kind} {job.id} {state.status}"
    if elapsed is not None:
        head += f" in {fmt_seconds(elapsed)}"
    lines = [clean(head)]
    if state.status == "failed" and state.error:
        lines.append("  " + clean((state.error.strip() or "?").splitlines()[0]))
    result = job.result
    if kind is not None and isinstance(result, dict):
        of = getattr(kind, "summary_of", None)  # a Kind; a stand-in may have summary only
        lines.extend("  " + clean(line) for line in
                     (of(job, result) if of is not None else kind.summary(result)))
    elif state.status == "cancelled" and state.fraction is not None:
        lines.append(f"  stopped at {100 * state.fraction:.0f}% ({_amount(state)})")
    gone = "" if (job.run_dir / "config.json").is_file() else " (removed)"
    lines.append(f"  run folder: {clean(job.run_dir)}{gone}")
    # a cancel is a pause when it can go on (train's own summary may say so already)
    if not gone and not any("jobs resume" in line for line in lines) and \
            (hint := resume_hint(job)):
        lines.append(f"  {hint}")
    return "\n".join(lines)
