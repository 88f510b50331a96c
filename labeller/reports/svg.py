"""Inline SVG charts for the report pages: no script, no network, readable without colour.

Every series differs from its neighbours in colour (Okabe-Ito, safe for colour-blind readers) AND in
marker shape and dash pattern, so two series never look alike and one drawn over another still
shows. Points carry a <title> (the browser shows it on hover) and classes the tests count:
`series` groups with `data-series`, `point` marks.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

PALETTE = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#555555")
DASHES = ("", "7 4", "2 3", "9 3 2 3")
MARKERS = ("circle", "square", "triangle", "diamond")
FAIL_RED, PASS_GREEN = "#b3261e", "#17703a"


def style(k: int) -> tuple[str, str, str]:
    """(colour, dash pattern, marker) of the k-th series."""
    return PALETTE[k % len(PALETTE)], DASHES[k % len(DASHES)], MARKERS[k % len(MARKERS)]


def marker(kind: str, x: float, y: float, colour: str, size: float = 4.0, title: str = "") -> str:
    """One data point as a small shape; `title` becomes its hover text."""
    tip = f"<title>{escape(title)}</title>" if title else ""
    s = size
    if kind == "square":
        shape = f'<rect x="{x - s:.1f}" y="{y - s:.1f}" width="{2 * s:.1f}" height="{2 * s:.1f}"'
    elif kind == "triangle":
        shape = f'<polygon points="{x:.1f},{y - s * 1.2:.1f} {x - s * 1.1:.1f},{y + s:.1f} {x + s * 1.1:.1f},{y + s:.1f}"'
    elif kind == "diamond":
        shape = f'<polygon points="{x:.1f},{y - s * 1.3:.1f} {x + s:.1f},{y:.1f} {x:.1f},{y + s * 1.3:.1f} {x - s:.1f},{y:.1f}"'
    else:
        shape = f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{s:.1f}"'
    return f'{shape} class="point" fill="{colour}" stroke="#fff" stroke-width="1">{tip}</{shape.split()[0][1:]}>'


def svg(width: int, height: int, parts: Sequence[str], label: str) -> Markup:
    return Markup(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                  f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}" '
                  f'font-family="system-ui,sans-serif">{"".join(parts)}</svg>')


def legend(names: Sequence[str], styles: Sequence[int] | None = None) -> Markup:
    """A legend as HTML beside the charts: a short line in the series' dash with its marker."""
    items = []
    for k, name in enumerate(names):
        colour, dash, kind = style(styles[k] if styles else k)
        sample = svg(34, 14, [f'<line x1="1" y1="7" x2="33" y2="7" stroke="{colour}" stroke-width="2" '
                              f'stroke-dasharray="{dash}"/>', marker(kind, 17, 7, colour, 4)], name)
        items.append(f'<span class="legend-item">{sample} {escape(name)}</span>')
    return Markup(f'<div class="legend">{"".join(items)}</div>')


def status_mark(passed: bool) -> Markup:
    """A tick or a cross drawn in SVG (no emoji font needed), then the word PASS or FAIL."""
    path = "M3 8 L7 12 L13 4" if passed else "M4 4 L12 12 M12 4 L4 12"
    colour = PASS_GREEN if passed else FAIL_RED
    word = "PASS" if passed else "FAIL"
    mark = (f'<svg class="mark" width="16" height="16" viewBox="0 0 16 16" aria-hidden="true">'
            f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2.5" stroke-linecap="round"/></svg>')
    return Markup(f'<span class="status {"ok" if passed else "bad"}">{mark}{word}</span>')


def bar_chart(labels: Sequence[str], values: Sequence[float], *, width: int = 760, bar_height: int = 18,
              value_format: str = "{:+.3f}", label_width: int = 180, titles: Sequence[str] = ()) -> Markup:
    """Horizontal bars around zero: positive green to the right, negative red to the left.
    `titles[i]` is the hover text of bar i (e.g. the query's text)."""
    span = max((abs(v) for v in values), default=0) or 1.0
    mid = label_width + (width - label_width) // 2
    half = (width - label_width) // 2 - 50
    chars = max(8, label_width // 7)
    parts = []
    for i, (label, value) in enumerate(zip(labels, values)):
        y = i * (bar_height + 6) + 4
        length = abs(value) / span * half
        x = mid if value >= 0 else mid - length
        colour = PASS_GREEN if value > 0 else FAIL_RED if value < 0 else "#888"
        text_x = mid + length + 4 if value >= 0 else mid - length - 4
        anchor = "start" if value >= 0 else "end"
        short = label if len(label) <= chars else label[: chars - 1] + "…"
        tip = f"<title>{escape(titles[i])}</title>" if i < len(titles) and titles[i] else ""
        parts.append(
            f'<text x="{label_width - 8}" y="{y + bar_height - 5}" text-anchor="end" font-size="12">{escape(short)}'
            f'{tip}</text><rect class="bar" x="{x:.1f}" y="{y}" width="{max(length, 1):.1f}" height="{bar_height}" '
            f'fill="{colour}">{tip}</rect><text x="{text_x:.1f}" y="{y + bar_height - 5}" text-anchor="{anchor}" '
            f'font-size="11">{escape(value_format.format(value))}</text>')
    height = len(labels) * (bar_height + 6) + 8
    parts.append(f'<line x1="{mid}" y1="0" x2="{mid}" y2="{height}" stroke="#555" stroke-width="1"/>')
    return svg(width, height, parts, "bar chart")


def _y_axis(left: int, right: int, top: int, bottom: int, low: float, high: float, ticks: int = 4) -> list[str]:
    parts = [f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#555"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#555"/>']
    for i in range(ticks + 1):
        value = low + (high - low) * i / ticks
        y = bottom - (bottom - top) * i / ticks
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#e3e6ea"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{value:.2f}</text>')
    return parts


def line_panel(title: str, x_labels: Sequence[Sequence[str]], series: dict[str, Sequence[float | None]], *,
               width: int = 520, height: int = 250, y_range: tuple[float, float] = (0.0, 1.0),
               marked: Sequence[bool] = (), point_titles: Sequence[str] = (),
               ringed: Sequence[str] | None = None) -> Markup:
    """One panel of a small-multiples chart: series over shared x positions (runs, in order).

    `x_labels[i]` is the lines of run i's axis label (e.g. date, time, run number); labels are thinned
    to fit, every point still has its hover text `point_titles[i]`. `marked[i]` rings every point of
    run i in red (e.g. runs that failed their gate), of the series named in `ringed` (default: all)."""
    low, high = y_range
    lines = max((len(lbl) for lbl in x_labels), default=1)
    left, right, top, bottom = 48, width - 14, 26, height - 14 - 13 * lines
    n = max(len(x_labels), 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        x = left + 18 + (right - left - 36) * (i / (n - 1) if n > 1 else 0.5)
        return x, bottom - (bottom - top) * (min(max(v, low), high) - low) / (high - low)

    parts = [f'<text x="{left}" y="16" font-size="13" font-weight="600">{escape(title)}</text>',
             *_y_axis(left, right, top, bottom, low, high)]
    step = max(1, -(-n * 78 // max(right - left, 1)))  # about 78 px per label
    for i in range(0, len(x_labels), step):
        x, _ = xy(i, low)
        spans = "".join(f'<tspan x="{x:.1f}" dy="{0 if j == 0 else 13}">{escape(t)}</tspan>'
                        for j, t in enumerate(x_labels[i]))
        parts.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" stroke="#555"/>'
                     f'<text class="x-label" y="{bottom + 16}" text-anchor="middle" font-size="10">{spans}</text>')
    for k, (name, values) in enumerate(series.items()):
        colour, dash, kind = style(k)
        points = [(i, *xy(i, v), v) for i, v in enumerate(values) if v is not None]
        path = " ".join(f"{x:.1f},{y:.1f}" for _, x, y, _ in points)
        group = [f'<polyline fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}" points="{path}"/>']
        for i, x, y, v in points:
            tip = f"{name}: {v:.4f}" + (f" ({point_titles[i]})" if i < len(point_titles) else "")
            group.append(marker(kind, x, y, colour, 4, tip))
            if i < len(marked) and marked[i] and (ringed is None or name in ringed):
                group.append(f'<circle class="failed-ring" cx="{x:.1f}" cy="{y:.1f}" r="8" fill="none" '
                             f'stroke="{FAIL_RED}" stroke-width="2"/>')
        parts.append(f'<g class="series" data-series="{escape(name)}">{"".join(group)}</g>')
    return svg(width, height, parts, title)


def small_multiples(panels: Sequence[Markup], names: Sequence[str]) -> Markup:
    """Panels side by side (wrapping), under one shared legend."""
    return Markup(f'{legend(names)}<div class="panels">{"".join(str(p) for p in panels)}</div>')


def line_chart(x_labels: Sequence[str], series: dict[str, Sequence[float | None]], *, width: int = 760,
               height: int = 280, y_range: tuple[float, float] | None = None, marked: Sequence[bool] = ()) -> Markup:
    """Several series in one panel with a legend (prefer `small_multiples` when series overlap)."""
    values = [v for vs in series.values() for v in vs if v is not None]
    low, high = y_range or ((min(values), max(values)) if values else (0.0, 1.0))
    if high - low < 1e-9:
        low, high = low - 0.05, high + 0.05
    panel = line_panel("", [[label] for label in x_labels], series, width=width, height=height,
                       y_range=(low, high), marked=marked)
    return Markup(f"{legend(list(series))}{panel}")
