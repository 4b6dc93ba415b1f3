"""The metric charts, kept importable from here: they are drawn in the jobs layer
(:mod:`skiff.jobs.chart`), where ``Job.plot()`` draws them too."""

from skiff.jobs.chart import (  # noqa: F401
    human_unit,
    log_axis,
    metric_chart,
    metric_figure,
    metric_groups,
    smooth,
    uses_log_scale,
)

__all__ = ["metric_groups", "metric_chart", "metric_figure", "uses_log_scale", "log_axis",
           "smooth", "human_unit"]
