"""What a notebook user reads off a Job: ``job.metrics``, ``job.logs``, ``job.plot()``."""

import pytest

from skiff.jobs import launch


def _reporting(config, reporter):
    for step in range(1, 6):
        reporter.metric("loss", 1.0 / step, step=step)
        reporter.metric("val_loss", 1.5 / step, step=step)
    reporter.metric("lr", 0.1)  # once, no step
    reporter.log("first line")
    reporter.log("careful: \x1b[31mred\x1b[0m", level="warning")
    return {"ok": True}


def test_metrics_are_every_reported_value_in_order():
    job = launch("custom", fn=_reporting).wait(10)
    assert job.metrics["loss"] == [(s, 1.0 / s) for s in range(1, 6)]
    assert job.metrics["val_loss"] == [(s, 1.5 / s) for s in range(1, 6)]
    assert job.metrics["lr"] == [(None, 0.1)]


def test_logs_show_every_line_with_its_level_and_escape_control_characters():
    job = launch("custom", fn=_reporting).wait(10)
    logs = job.logs
    lines = str(logs).splitlines()
    assert any(line.endswith(" first line") for line in lines)
    warning = next(line for line in lines if "careful" in line)
    assert "warning: careful" in warning and "\x1b" not in warning and "\\x1b[31m" in warning
    assert repr(logs) == str(logs)  # shows as text, not a quoted string


def test_logs_of_a_failed_job_end_with_its_error_and_traceback():
    def boom(config, reporter):
        reporter.log("about to fail")
        raise ZeroDivisionError("no luck")

    job = launch("custom", fn=boom).wait(10)
    text = str(job.logs)
    assert text.index("about to fail") < text.index("error: ZeroDivisionError: no luck")
    assert "Traceback (most recent call last)" in text and "in boom" in text


def test_plot_draws_one_chart_per_metric_group():
    job = launch("custom", fn=_reporting).wait(10)
    fig = job.plot()
    # loss and val_loss share a chart; lr (one point) is not a curve
    assert len(fig.axes) == 1
    labels = {line.get_label() for line in fig.axes[0].get_lines()}
    assert {"loss", "val_loss"} <= labels
    xs, ys = fig.axes[0].get_lines()[0].get_data()
    assert list(xs) == [1, 2, 3, 4, 5] and list(ys) == [1.0 / s for s in range(1, 6)]
    ticks = [t for t in fig.axes[0].get_xticks() if 1 <= t <= 5]
    assert ticks and all(float(t).is_integer() for t in ticks)  # steps: no 2.5
    png = fig._repr_png_()  # what a notebook shows
    assert png.startswith(b"\x89PNG")
    assert len(job.plot("loss").axes[0].get_lines()) == 1


def test_plot_mistakes_are_one_line():
    job = launch("custom", fn=_reporting).wait(10)
    with pytest.raises(ValueError, match=r"unknown metric 'los' \(did you mean 'loss'\?\)"):
        job.plot("los")
    with pytest.raises(ValueError, match="no metric with two points or more.*lr: 1"):
        job.plot("lr")
    quiet = launch("custom", fn=lambda c, r: None).wait(10)
    with pytest.raises(ValueError, match="reported no metrics"):
        quiet.plot("loss")


def test_repr_of_a_failed_job_is_one_short_line_and_error_keeps_it_all():
    long = "ValueError: " + "x" * 300

    def boom(config, reporter):
        raise ValueError("x" * 300)

    job = launch("custom", fn=boom).wait(10)
    text = repr(job)
    assert "\n" not in text and len(text) < 200 and text.endswith("…'>")
    assert job.error.startswith(long)


def test_listing_marks_a_cut_command():
    from skiff.jobs.render import JobTable

    job = launch("demo", {"steps": 1, "sleep": 0}, command="%demo " + "--flag " * 30).wait(10)
    row = repr(JobTable([job])).splitlines()[1]
    assert row.endswith("…") and "%demo --flag" in row


def test_tick_labels_read_apart_on_a_narrow_memory_range():
    """A memory that moved from 195.2 to 195.9 MiB was labelled "195 MiB" at every tick."""
    base = 195 * 2**20

    def memory(config, reporter):
        for step in range(1, 6):
            reporter.metric("memory_bytes", base + step * 0.15 * 2**20, step=step)

    job = launch("custom", fn=memory).wait(10)
    fig = job.plot()
    fig._repr_png_()  # drawn: the ticks are placed and labelled
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    labels = [t.get_text() for t, loc in zip(ax.get_yticklabels(), ax.get_yticks())
              if lo <= loc <= hi]
    assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
    assert all(label.endswith(" MiB") for label in labels)
