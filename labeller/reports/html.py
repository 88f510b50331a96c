"""Self-contained HTML report pages: one stylesheet, inline SVG charts, no scripts, no network.

Report builders make a list of sections (title + already-safe HTML) and call `page`.
Charts are returned as `Markup` so jinja2 does not escape them twice.
"""

from __future__ import annotations

from collections.abc import Sequence

from jinja2 import Environment
from markupsafe import Markup, escape

_ENV = Environment(autoescape=True)

_PAGE = _ENV.from_string("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#1d232b}
h1{font-size:1.6rem;margin-bottom:.2rem} h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #dde;padding-bottom:.2rem}
.sub{color:#5a6472;margin-top:0} table{border-collapse:collapse;margin:.6rem 0} td,th{border:1px solid #d7dbe2;padding:.3rem .55rem;text-align:left;vertical-align:top}
th{background:#f3f5f8} td.num{text-align:right;font-variant-numeric:tabular-nums} .ok{color:#17703a;font-weight:600} .bad{color:#b3261e;font-weight:600}
.heat td{width:3.2rem;height:2.4rem;text-align:center;font-weight:600} .excerpt{color:#39424e;font-size:.9rem;max-width:38rem}
.card{border:1px solid #dde2e8;border-radius:6px;padding:.6rem .9rem;margin:.6rem 0;background:#fbfcfd}
.kv{display:grid;grid-template-columns:max-content auto;gap:.15rem 1rem} code{background:#f1f3f6;padding:0 .25rem;border-radius:3px}
</style></head><body>
<h1>{{ title }}</h1>{% if subtitle %}<p class="sub">{{ subtitle }}</p>{% endif %}
{% for heading, body in sections %}<section>{% if heading %}<h2>{{ heading }}</h2>{% endif %}{{ body }}</section>
{% endfor %}</body></html>
""")


def page(title: str, sections: Sequence[tuple[str, str]], subtitle: str = "") -> str:
    """A complete HTML page. Section bodies must already be safe HTML (use `table`, `Markup`, charts)."""
    return _PAGE.render(title=title, subtitle=subtitle, sections=[(h, Markup(b)) for h, b in sections])


def table(header: Sequence[str], rows: Sequence[Sequence[object]], numeric: Sequence[int] = ()) -> Markup:
    """An HTML table; cells are escaped unless they are Markup."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{_fmt(c)}</td>' if i in numeric else f"<td>{_fmt(c)}</td>" for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return Markup(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(escape(value)) if not isinstance(value, Markup) else str(value)


def heatmap(matrix: Sequence[Sequence[int]], row_labels: Sequence[str], col_labels: Sequence[str],
            row_title: str, col_title: str) -> Markup:
    """A count matrix as a table whose cells are shaded by count; the diagonal is green, the rest red."""
    peak = max((v for row in matrix for v in row), default=0) or 1
    head = "".join(f"<th>{escape(c)}</th>" for c in col_labels)
    rows = []
    for i, (label, row) in enumerate(zip(row_labels, matrix)):
        cells = []
        for j, value in enumerate(row):
            alpha = 0.08 + 0.85 * value / peak if value else 0
            hue = "23,112,58" if i == j else "179,38,30"
            colour = "#fff" if alpha > 0.55 else "#1d232b"
            cells.append(f'<td style="background:rgba({hue},{alpha:.2f});color:{colour}">{value}</td>')
        rows.append(f"<tr><th>{escape(label)}</th>{''.join(cells)}</tr>")
    return Markup(f'<table class="heat"><caption>rows: {escape(row_title)} · columns: {escape(col_title)}</caption>'
                  f"<thead><tr><th></th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def bar_chart(labels: Sequence[str], values: Sequence[float], *, width: int = 760, bar_height: int = 18,
              value_format: str = "{:+.3f}") -> Markup:
    """Horizontal bars around zero: positive green to the right, negative red to the left."""
    span = max((abs(v) for v in values), default=0) or 1.0
    label_w, mid = 180, 180 + (width - 180) // 2
    half = (width - label_w) // 2 - 50
    parts = []
    for i, (label, value) in enumerate(zip(labels, values)):
        y = i * (bar_height + 6) + 4
        length = abs(value) / span * half
        x = mid if value >= 0 else mid - length
        colour = "#17703a" if value > 0 else "#b3261e" if value < 0 else "#888"
        text_x = mid + length + 4 if value >= 0 else mid - length - 4
        anchor = "start" if value >= 0 else "end"
        parts.append(
            f'<text x="{label_w - 8}" y="{y + bar_height - 5}" text-anchor="end" font-size="12">{escape(label[:28])}</text>'
            f'<rect x="{x:.1f}" y="{y}" width="{max(length, 1):.1f}" height="{bar_height}" fill="{colour}"/>'
            f'<text x="{text_x:.1f}" y="{y + bar_height - 5}" text-anchor="{anchor}" font-size="11">'
            f"{escape(value_format.format(value))}</text>")
    height = len(labels) * (bar_height + 6) + 8
    axis = f'<line x1="{mid}" y1="0" x2="{mid}" y2="{height}" stroke="#555" stroke-width="1"/>'
    return Markup(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">'
                  f"{''.join(parts)}{axis}</svg>")


def line_chart(x_labels: Sequence[str], series: dict[str, Sequence[float]], *, width: int = 760,
               height: int = 280, y_range: tuple[float, float] | None = None,
               marked: Sequence[bool] = ()) -> Markup:
    """One line per series over shared x labels (e.g. dates), with a legend and gridlines.

    `y_range` fixes the axis (e.g. (0, 1) for metrics, so small wiggles don't look like cliffs);
    `marked[i]` draws a red ring around every point at x i (e.g. runs that failed a gate).
    """
    palette = ["#1f5fa8", "#c2571a", "#17703a", "#7b3fa0", "#b3261e", "#4b5563"]
    values = [v for vs in series.values() for v in vs if v is not None]
    low, high = y_range or ((min(values), max(values)) if values else (0.0, 1.0))
    if high - low < 1e-9:
        low, high = low - 0.05, high + 0.05
    left, right, top, bottom = 56, width - 150, 16, height - 40
    n = max(len(x_labels), 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        x = left + (right - left) * (i / (n - 1) if n > 1 else 0.5)
        return x, bottom - (bottom - top) * (v - low) / (high - low)

    parts = [f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#555"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#555"/>']
    for i in range(5):
        value = low + (high - low) * i / 4
        _, y = xy(0, value)
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#e3e6ea"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{value:.2f}</text>')
    step = max(1, n // 8)
    for i in range(0, len(x_labels), step):  # no labels (empty history): axes only, no IndexError
        x, _ = xy(i, low)
        parts.append(f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle" font-size="10">{escape(x_labels[i])}</text>')
    for k, (name, vs) in enumerate(series.items()):
        colour = palette[k % len(palette)]
        points = [xy(i, v) for i, v in enumerate(vs) if v is not None]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in points]
        parts += [f'<circle cx="{xy(i, v)[0]:.1f}" cy="{xy(i, v)[1]:.1f}" r="7" fill="none" stroke="#b3261e" '
                  f'stroke-width="2"/>' for i, v in enumerate(vs) if v is not None and i < len(marked) and marked[i]]
        parts.append(f'<rect x="{right + 14}" y="{top + k * 18}" width="12" height="12" fill="{colour}"/>'
                     f'<text x="{right + 30}" y="{top + k * 18 + 10}" font-size="12">{escape(name)}</text>')
    return Markup(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">'
                  f"{''.join(parts)}</svg>")
