"""Report rendering shared by agreement, evaluation and pipelines: page layout (html), charts (svg,
svg_stats) and what CI reads (ci)."""

from labeller.reports.html import NO_TEXTS, banner, display_path, excerpt, heatmap, page, table, with_text
from labeller.reports.svg import bar_chart, legend, line_chart, line_panel, small_multiples, status_mark
from labeller.reports.svg_stats import Estimate, histogram, interval_chart

__all__ = ["NO_TEXTS", "Estimate", "banner", "bar_chart", "display_path", "excerpt", "heatmap", "histogram", "interval_chart",
           "legend", "line_chart", "line_panel", "page", "small_multiples", "status_mark", "table", "with_text"]
