"""Charts of estimates and distributions: point estimates with their intervals, and histograms."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape
from pydantic import BaseModel, ConfigDict

from labeller.reports.svg import FAIL_RED, PALETTE, legend, marker, style, svg


class Estimate(BaseModel):
    """One figure of one side (e.g. kappa of the old rubric) with its confidence interval."""

    model_config = ConfigDict(extra="forbid")
    figure: str
    side: str
    value: float | None
    low: float | None = None
    high: float | None = None


def nice_ticks(low: float, high: float, most: int = 7) -> list[float]:
    """Round tick values (steps of 1, 2 or 5 times a power of ten) inside [low, high]."""
    import math

    span = high - low or 1.0
    raw = span / most
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(int((high - first) / step + 1e-9) + 1)]


def interval_chart(estimates: Sequence[Estimate], *, x_range: tuple[float, float] | None = None,
                   reference_lines: Sequence[tuple[float, str] | tuple[float, str, str]] = (),
                   width: int = 760) -> Markup:
    """A row per figure, a point and whisker per side: old against new at a glance, with overlap visible.

    Sides keep their colour and marker across figures; `reference_lines` are dashed verticals with a label
    (e.g. 0 "no change", -0.02 "gate"); a third element names the one figure a line belongs to (a published
    kappa is no mark for alpha), and the line then crosses that figure's row only."""
    figures = list(dict.fromkeys(e.figure for e in estimates))
    sides = list(dict.fromkeys(e.side for e in estimates))
    known = [v for e in estimates for v in (e.value, e.low, e.high) if v is not None]
    reference_lines = [line for line in reference_lines if len(line) < 3 or line[2] in figures]
    known += [line[0] for line in reference_lines]
    low, high = x_range or (min(known, default=0.0), max(known, default=1.0))
    pad = (high - low) * 0.05 or 0.05
    low, high = low - pad, high + pad
    label_w, right, row_h = 190, width - 30, 16 * len(sides) + 14
    top = 20 + 13 * len(reference_lines)
    height = top + row_h * len(figures) + 34

    def x_of(v: float) -> float:
        return label_w + (right - label_w) * (v - low) / (high - low)

    parts = []
    for v in nice_ticks(low, high):
        parts.append(f'<line x1="{x_of(v):.1f}" y1="{top - 6}" x2="{x_of(v):.1f}" y2="{height - 28}" stroke="#e3e6ea"/>'
                     f'<text x="{x_of(v):.1f}" y="{height - 12}" text-anchor="middle" font-size="11">{v:g}</text>')
    for n, (x, text, *only) in enumerate(reference_lines):
        at_right = x_of(x) > label_w + (right - label_w) * 0.6  # the label runs left of its line, not off the chart
        row = figures.index(only[0]) if only else None
        y1 = top - 10 if not row else top + row * row_h  # from its label, or across its own row only
        y2 = height - 28 if row is None else top + (row + 1) * row_h
        parts.append(f'<line class="reference" x1="{x_of(x):.1f}" y1="{y1}" x2="{x_of(x):.1f}" '
                     f'y2="{y2}" stroke="#444" stroke-dasharray="4 3"/><text x="{x_of(x) + (-3 if at_right else 3):.1f}" '
                     f'y="{top - 8 - 13 * (len(reference_lines) - 1 - n)}" font-size="10" '
                     f'text-anchor="{"end" if at_right else "start"}">{escape(text)}</text>')
    for r, figure in enumerate(figures):
        y0 = top + r * row_h
        chars = (label_w - 14) // 7  # a longer name (a jury's) is cut to fit, in full on hover
        short = figure if len(figure) <= chars else figure[: chars - 1] + "…"
        parts.append(f'<text x="{label_w - 10}" y="{y0 + row_h / 2 + 4:.1f}" text-anchor="end" font-size="12">'
                     f"<title>{escape(figure)}</title>{escape(short)}</text>")
        for e in (e for e in estimates if e.figure == figure):
            k = sides.index(e.side)
            colour, _, kind = style(k)
            y = y0 + 10 + 16 * k
            group = []
            if e.low is not None and e.high is not None:
                group.append(f'<line class="whisker" x1="{x_of(e.low):.1f}" y1="{y}" x2="{x_of(e.high):.1f}" y2="{y}" '
                             f'stroke="{colour}" stroke-width="2"/>')
                group += [f'<line x1="{x_of(v):.1f}" y1="{y - 4}" x2="{x_of(v):.1f}" y2="{y + 4}" stroke="{colour}" '
                          f'stroke-width="2"/>' for v in (e.low, e.high)]
            if e.value is not None:
                span = f" ({e.low:+.3f} to {e.high:+.3f})" if e.low is not None and e.high is not None else ""
                group.append(marker(kind, x_of(e.value), y, colour, 5, f"{figure}, {e.side}: {e.value:+.3f}{span}"))
                end = x_of(e.high if e.high is not None else e.value)
                group.append(f'<text class="value" x="{end + 6:.1f}" y="{y + 4}" font-size="10" fill="{colour}">'
                             f"{e.value:.3f}</text>")
            parts.append(f'<g class="estimate" data-figure="{escape(figure)}" data-side="{escape(e.side)}">'
                         f'{"".join(group)}</g>')
    return Markup(legend(sides) + svg(width, height, parts, "estimates with confidence intervals"))


def histogram(title: str, values: Sequence[float], *, bins: int = 10, value_range: tuple[float, float] = (0.0, 1.0),
              width: int = 340, height: int = 200, colour: str = PALETTE[0]) -> Markup:
    """Counts of `values` in equal bins over `value_range`, with the mean as a dashed line."""
    low, high = value_range
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int((v - low) / (high - low) * bins)))] += 1
    peak = max(counts, default=0) or 1
    left, right, top, bottom = 36, width - 10, 26, height - 30
    bar_w = (right - left) / bins
    parts = [f'<text x="{left}" y="16" font-size="13" font-weight="600">{escape(title)}</text>',
             f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#555"/>',
             f'<text x="{left - 6}" y="{top + 8}" text-anchor="end" font-size="10">{peak}</text>',
             f'<text x="{left - 6}" y="{bottom}" text-anchor="end" font-size="10">0</text>']
    for b, count in enumerate(counts):
        x = left + b * bar_w
        h = (bottom - top) * count / peak
        lo, hi = low + (high - low) * b / bins, low + (high - low) * (b + 1) / bins
        parts.append(f'<rect class="bin" data-count="{count}" x="{x + 1:.1f}" y="{bottom - h:.1f}" '
                     f'width="{bar_w - 2:.1f}" height="{h:.1f}" fill="{colour}"><title>{count} queries with '
                     f'{lo:.2f} &lt;= value {"<=" if b == bins - 1 else "&lt;"} {hi:.2f}</title></rect>')
    for b in range(0, bins + 1, max(1, bins // 5)):
        x = left + b * bar_w
        parts.append(f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle" font-size="10">'
                     f"{low + (high - low) * b / bins:.1f}</text>")
    if values:
        mean = sum(values) / len(values)
        x = left + (right - left) * (mean - low) / (high - low)
        parts.append(f'<line class="mean" x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{bottom}" stroke="{FAIL_RED}" '
                     f'stroke-width="2" stroke-dasharray="5 3"/><text x="{right}" y="16" text-anchor="end" '
                     f'font-size="11" fill="{FAIL_RED}">mean {mean:.3f} · {len(values)} queries</text>')
    return svg(width, height, parts, f"{title}: distribution over queries")
