"""Report rendering shared by agreement, evaluation and pipelines."""

from labeller.reports.html import bar_chart, heatmap, line_chart, page, table

__all__ = ["bar_chart", "heatmap", "line_chart", "page", "table"]
