"""Self-contained HTML report pages: one stylesheet, inline SVG charts, no scripts, no network.

Report builders make a list of sections (title + already-safe HTML) and call `page`.
Charts are returned as `Markup` so jinja2 does not escape them twice.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

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
.id{font-family:ui-monospace,monospace;font-size:.85rem;white-space:nowrap} .excerpt.block{display:block}
.status{display:inline-flex;align-items:center;gap:.25rem;font-weight:700;letter-spacing:.02em} .status .mark{flex:none}
.banner{font-size:1.05rem;border-left:5px solid;padding:.5rem .9rem;margin:.8rem 0;background:#f7f8fa}
.banner.ok{border-color:#17703a} .banner.bad{border-color:#b3261e} .banner .detail{color:#1d232b;font-weight:400}
.legend{display:flex;flex-wrap:wrap;gap:.3rem 1.2rem;margin:.4rem 0;font-size:.9rem} .legend-item{display:inline-flex;align-items:center;gap:.3rem}
.panels{display:flex;flex-wrap:wrap;gap:.5rem 1rem} .note{color:#5a6472;font-size:.9rem} .query-group table{width:100%}
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


def excerpt(text: str | None, limit: int = 120) -> str:
    """The first `limit` characters of a text on one line (whitespace collapsed), with an ellipsis if cut."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def with_text(identifier: str, text: str | None, limit: int = 120) -> Markup:
    """An id with an excerpt of its text beside it (escaped); the id alone when the text is not known."""
    shown = f'<span class="id">{escape(identifier)}</span>'
    if text:
        shown += f' <span class="excerpt block">{escape(excerpt(text, limit))}</span>'
    return Markup(shown)


NO_TEXTS = ("Query and document texts are not shown: this report was built without the queries and corpus "
            "files (pass --queries and --corpus to see them beside the ids).")


def banner(passed: bool, headline: str, detail: str = "") -> Markup:
    """The page's answer in one line: PASS or FAIL (plain text with an SVG mark), then why."""
    from labeller.reports.svg import status_mark

    rest = f' <span class="detail">{escape(detail)}</span>' if detail else ""
    return Markup(f'<div class="banner {"ok" if passed else "bad"}" data-status="{"pass" if passed else "fail"}">'
                  f"{status_mark(passed)} {escape(headline)}{rest}</div>")


def display_path(path: str | os.PathLike | None) -> str:
    """A file name as a reader can use it: relative to the working directory when it lies below it, a
    shipped file by its name (never the site-packages or checkout path labeller happens to be installed
    at), otherwise as given."""
    if path is None or str(path) == "":
        return ""
    if not isinstance(path, (str, os.PathLike)):  # an in-memory input (io.memory.InMemory): its own name
        return str(path)
    from labeller.shipped import shipped_dir

    p = Path(path)
    try:
        resolved = p.resolve() if p.is_absolute() or p.exists() else p
    except OSError:  # a name the file system refuses (too long, ...): shown as given
        return str(path)
    bases = [(shipped_dir(name), f"labeller:{name}/") for name in SHIPPED] + [(Path.cwd().resolve(), "")]
    for base, prefix in bases:
        try:
            return prefix + resolved.relative_to(base.resolve()).as_posix()
        except ValueError:
            continue
    return str(path)


SHIPPED = ("pipelines", "rubrics", "gold")  # shipped with labeller: named, not located
