"""Metric charts as PNG bytes, drawn with matplotlib's object API (Figure + Agg, never pyplot).

Metrics are grouped by what they measure, so ``loss`` and ``val_loss`` share one chart and
``residual`` gets its own on a log scale. Charts are stacked one per row at a readable size;
a noisy series (a per-step loss, a throughput) is drawn smoothed with its raw values faint
behind; validation series are lines with markers; bytes and rates read in human units
(MiB, k/s)::

    png = metric_chart({"loss": [(1, 2.3, t), ...], "val_loss": [...], "residual": [...]})
"""

from __future__ import annotations

import math
import re

__all__ = ["metric_groups", "metric_chart", "metric_figure", "uses_log_scale", "log_axis",
           "smooth", "human_unit"]

# words that say "this goes down by orders of magnitude": drawn on a log scale
_LOG_WORDS = ("residual", "resid", "res_norm", "error", "err", "grad_norm", "rnorm")
_PREFIXES = ("train_", "val_", "valid_", "validation_", "test_", "eval_")
_SUFFIXES = ("_train", "_val", "_valid", "_test", "_eval")


def _base(name: str) -> str:
    """The quantity a metric name measures: ``val_loss`` and ``train/loss`` → ``loss``."""
    key = name.lower().replace("/", "_").replace(".", "_").replace("-", "_")
    for prefix in _PREFIXES:
        if key.startswith(prefix) and len(key) > len(prefix):
            key = key[len(prefix):]
            break
    for suffix in _SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            key = key[: -len(suffix)]
            break
    return key


def metric_groups(names) -> list[list[str]]:
    """Metric names grouped by the quantity they measure, in first-seen order."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(_base(name), []).append(name)
    return list(groups.values())


def _numbers(series, max_points: int | None = None) -> list[tuple[float, float]]:
    """The finite points of a series as ``(x, value)``; ``max_points``: about that many,
    every k-th point and the last, picked before anything is read (round 42: a live chart
    of a 1,000,000-step run read every point at each redraw, 0.3 CPU s of its 0.47)."""
    n = len(series)
    if max_points is not None and n > max_points:
        picked = _extremes(series, max_points)
        if picked is None:
            stride = math.ceil(n / max_points)
            picked = [*range(0, n, stride), *(() if (n - 1) % stride == 0 else (n - 1,))]
    else:
        picked = range(n)
    points = []
    for i in picked:
        item = series[i]
        step, value = item[0], item[1]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(value):
            continue
        points.append((float(i + 1 if step is None else step), float(value)))
    return points


def _extremes(series, max_points: int) -> list[int] | None:
    """The positions of a long :class:`~skiff.jobs.series.Series` to draw: in windows of
    ``2 n / max_points`` points, each window's lowest and highest finite value, then the
    first and the last point (round 45: every k-th point of a long run missed the spikes
    between them, a gradient norm's or a loss's). Read from its value column at once (numpy
    over the array it holds: no point read as a tuple); None for another sequence (every
    k-th point, as before)."""
    values = getattr(series, "_values", None)
    if values is None or len(values) != len(series):
        return None
    import numpy as np

    v = np.frombuffer(values, dtype=np.float64) if len(values) else np.zeros(0)
    n = len(v)
    per = max(1, math.ceil(2 * n / max(1, max_points)))
    rows = -(-n // per)
    padded = np.full(rows * per, np.nan)
    padded[:n] = v
    padded = padded.reshape(rows, per)
    finite = np.isfinite(padded)
    low = np.where(finite, padded, np.inf).argmin(axis=1)
    high = np.where(finite, padded, -np.inf).argmax(axis=1)
    base = np.arange(rows) * per
    picked = np.unique(np.concatenate([base + low, base + high, [0, n - 1]]))
    return [int(i) for i in picked if i < n]


def uses_log_scale(name: str, values) -> bool:
    """Log scale for residual- and error-like names, or positive values spanning 1e3."""
    key = _base(name)
    positive = bool(values) and all(v > 0 for v in values)
    if not positive:
        return False
    if any(re.search(rf"(^|_){w}($|_)", key) for w in _LOG_WORDS):
        return True
    return max(values) / min(values) > 1e3


def log_axis(ax) -> None:
    """A log y axis labelled as plain text (``1e-06``).

    The default labels are mathtext, whose parser is not thread-safe: a chart drawn on a
    widget's thread at the moment a job's thread draws its own figure could break either.
    """
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.0e}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def smooth(values: list[float], span: float = 0.1) -> list[float]:
    """An exponential moving average over about ``span`` of the series (bias-corrected at
    its start, so the first values are not pulled towards zero)."""
    alpha = min(1.0, 2.0 / (max(2.0, span * len(values)) + 1.0))
    out, avg, weight = [], 0.0, 0.0
    for v in values:
        avg = (1 - alpha) * avg + alpha * v
        weight = (1 - alpha) * weight + alpha
        out.append(avg / weight)
    return out


def human_unit(name: str):
    """A tick formatter for ``name``'s values: bytes as KiB/MiB/GiB, rates as k/M, else None."""
    key = name.lower()
    if any(w in key for w in ("mem", "bytes", "rss")):
        def fmt(v, _pos=None, digits=3):
            for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
                if abs(v) >= size:
                    return f"{v / size:.{digits}g} {unit}"
            return f"{v:.0f} B"
        return fmt
    if key.endswith(("_per_s", "/s", "_per_sec", "_s")) and "loss" not in key:
        def fmt(v, _pos=None, digits=3):
            for unit, size in (("M", 1e6), ("k", 1e3)):
                if abs(v) >= size:
                    return f"{v / size:.{digits}g}{unit}"
            return f"{v:.{digits}g}"
        return fmt
    return None


def distinct_formatter(fmt):
    """A matplotlib tick formatter from ``fmt(value, pos, digits)`` that gives as many
    significant digits as the axis' ticks need to read apart: a memory that moved from
    195.2 to 195.9 MiB was labelled "195 MiB" four times."""
    from matplotlib.ticker import Formatter

    class _Distinct(Formatter):
        digits = 3

        def set_locs(self, locs):
            super().set_locs(locs)
            self.digits = 3
            while self.digits < 8 and len({fmt(v, None, self.digits) for v in locs}) < len(
                    set(locs)):
                self.digits += 1

        def __call__(self, x, pos=None):
            return fmt(x, pos, self.digits)

    return _Distinct()


def _noisy(values: list[float]) -> bool:
    """A series whose step-to-step jitter is large against its overall trend: its path (the
    sum of its jumps) is longer than a few spans (a warm-up then a decay is 1.5) and than
    ``0.05 * (n - 1)`` spans. Round 44: a mean jump over 5 % of the span called every
    monotone curve of 20 points noisy (its mean jump is 1/19 of its span), so a 20-step
    training's lr was drawn smoothed, its warm-up's peak at step 2 shown at step 4."""
    if len(values) < 20:
        return False
    path = sum(abs(b - a) for a, b in zip(values, values[1:]))
    span = (max(values) - min(values)) or 1.0
    return path > max(4.0, 0.05 * (len(values) - 1)) * span


def metric_chart(metrics: dict, *, width: float = 6.0, height: float = 2.2, dpi: int = 80,
                 max_charts: int = 4, max_points: int = 2000) -> bytes | None:
    """A PNG with one chart per metric group, one per row; None when there is nothing to draw
    (the arguments are :func:`metric_figure`'s)."""
    fig = metric_figure(metrics, width=width, height=height, dpi=dpi, max_charts=max_charts,
                        max_points=max_points)
    if fig is None:
        return None
    from skiff.kernels.backend.figures import render_png

    return render_png(fig)


def metric_figure(metrics: dict, *, width: float = 6.0, height: float = 2.2, dpi: int = 80,
                  max_charts: int = 4, max_points: int = 2000, figure_class=None):
    """A matplotlib ``Figure`` (object API, no pyplot) with one chart per metric group, one
    per row; None when no metric has two points or more.

    Parameters
    ----------
    metrics : dict
        name -> list of ``(step, value, time)`` as in :attr:`JobState.metrics`.
    width, height : float
        Size of one chart in inches.
    dpi : int
        Resolution of the image.
    max_charts : int
        At most this many groups are drawn (the first ones seen).
    max_points : int
        Long series are thinned to about this many points.
    figure_class : type, optional
        A subclass of ``matplotlib.figure.Figure`` to draw into.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    series = {name: _numbers(points, max_points) for name, points in metrics.items()}
    # a one-point curve says nothing (the job view shows the last value of every metric)
    series = {k: v for k, v in series.items() if len(v) > 1}
    if not series:
        return None
    groups = metric_groups(series)[:max_charts]
    fig = (figure_class or Figure)(figsize=(width, height * len(groups)), dpi=dpi)
    FigureCanvasAgg(fig)
    for i, names in enumerate(groups):
        ax = fig.add_subplot(len(groups), 1, i + 1)
        all_values = []
        for k, name in enumerate(names):
            pts = series[name]  # thinned already (_numbers)
            xs, ys = zip(*pts)
            all_values.extend(ys)
            color = f"C{k}"
            if _noisy(list(ys)):
                ax.plot(xs, ys, color=color, linewidth=0.8, alpha=0.25)
                ax.plot(xs, smooth(list(ys)), color=color, linewidth=1.8,
                        label=f"{name} (smoothed)")
            else:
                ax.plot(xs, ys, color=color, label=name, linewidth=1.6,
                        marker="o" if len(xs) < 30 else None, markersize=3.5)
        if uses_log_scale(names[0], all_values):
            log_axis(ax)
        else:
            fmt = human_unit(names[0])
            if fmt is not None:
                ax.yaxis.set_major_formatter(distinct_formatter(fmt))
        ax.set_title(", ".join(names), fontsize=10, loc="left")
        ax.set_xlabel("step", fontsize=9)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # no step 2.5
        ax.tick_params(labelsize=9)
        ax.grid(True, alpha=0.3)
        if len(names) > 1 or _noisy(all_values):
            ax.legend(fontsize=8)
    return fig
