"""PNG rendering of matplotlib figures, safe across threads.

Jobs draw their plots on job threads while widgets draw charts on watcher threads, in the same
process. matplotlib is not thread-safe: its mathtext parser, used for log-axis tick labels, has
shared state, and two figures drawn at once broke one another (seen in the tests). Every skiff
figure is therefore rendered through :func:`render_png`, which holds one process-wide lock.
Build figures with the object API (``matplotlib.figure.Figure``), never pyplot.
"""

from __future__ import annotations

import io
import os
import threading

__all__ = ["DRAW_LOCK", "render_png", "new_figure"]

DRAW_LOCK = threading.RLock()


def new_figure(figsize=(6.4, 4.8), dpi=100):
    """A Figure with an Agg canvas, without touching pyplot's global state."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def render_png(fig, path: str | os.PathLike | None = None, *, tight: bool = True,
               **savefig_kw) -> bytes:
    """Lay out and render ``fig`` to PNG bytes under the drawing lock; also write ``path``."""
    buf = io.BytesIO()
    with DRAW_LOCK:
        if tight:
            fig.tight_layout()
        fig.savefig(buf, format="png", **savefig_kw)
    data = buf.getvalue()
    if path is not None:
        with open(path, "wb") as fh:
            fh.write(data)
    return data
