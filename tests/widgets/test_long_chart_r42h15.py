"""Round 42 (h15): the live chart of a long run read every point of every metric at each
redraw (a job view redraws up to 3 times a second) and thinned them only then: at 1,000,000
steps a redraw took 0.47 CPU s, 0.31 of it reading points it did not draw. The points are
picked first now (every k-th and the last), so a redraw reads about ``max_points`` of them
however long the run. Counted, not timed: a series that counts the points read."""

from __future__ import annotations

from skiff.jobs.chart import metric_figure


class Counted(list):
    """A metric series that counts the points read from it (by index or by iterating)."""

    def __init__(self, items):
        super().__init__(items)
        self.read = 0

    def __getitem__(self, i):
        got = super().__getitem__(i)
        self.read += len(got) if isinstance(i, slice) else 1
        return got

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]


def test_a_long_series_is_thinned_before_it_is_read():
    n, most = 20_003, 200
    loss = Counted([(i + 1, 1.0 / (i + 1), 0.0) for i in range(n)])  # steps 1..n
    no_steps = Counted([(None, 2.0 / (i + 1), 0.0) for i in range(n)])  # x: its position
    fig = metric_figure({"loss": loss, "rate": no_steps}, max_points=most)
    assert loss.read <= most + 2 and no_steps.read <= most + 2, (loss.read, no_steps.read)
    for ax, last in zip(fig.axes, (loss[-1], no_steps[-1])):
        (line,) = ax.lines
        xs, ys = list(line.get_xdata()), list(line.get_ydata())
        assert most // 2 <= len(xs) <= most + 2
        assert xs[0] == 1.0 and xs[-1] == float(n)  # the whole run, its last point included
        assert ys[-1] == last[1]
        # each drawn point is the series' own at that step (or position): 1/x, 2/x
        scale = 1.0 if ax is fig.axes[0] else 2.0
        assert all(abs(y - scale / x) <= 1e-12 for x, y in zip(xs, ys))
        assert xs == sorted(set(xs))  # in order, none twice


def test_a_short_series_is_drawn_whole():
    series = [(i + 1, 1.0 / (i + 1), 0.0) for i in range(40)]
    fig = metric_figure({"loss": series}, max_points=2000)
    (line,) = fig.axes[0].lines
    assert list(line.get_xdata()) == [float(i + 1) for i in range(40)]
