"""The validate_prompt page: is the new rubric better than the old on gold, with confidence, and which
pairs flipped. The verdict first, then old against new on every headline figure with its interval,
the change new − old with the gate's line, then the flipped pairs with query and document text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from labeller.records import Doc, Label, Query
from labeller.agreement.report import gate_change_chart
from labeller.reports import NO_TEXTS, Estimate, banner, interval_chart, page, table, with_text

if TYPE_CHECKING:
    from labeller.agreement.gate import PairChange
    from labeller.agreement.run import AgreeResult

SHOWN = 200  # flipped pairs listed per group


def _estimates(side: str, r: AgreeResult) -> list[Estimate]:
    ci = r.ci
    figures = [("Cohen's kappa", r.kappa, ci.kappa), ("quadratic kappa", r.kappa_quadratic, ci.kappa_quadratic),
               ("Krippendorff's alpha", r.alpha_ordinal, ci.alpha_ordinal),
               (f"kappa, relevant from {r.relevant_from}", r.kappa_relevant, ci.kappa_binary.get(str(r.relevant_from))),
               ("exact agreement", r.exact_agreement, ci.exact_agreement)]
    return [Estimate(figure=name, side=side, value=value, low=i.low if i else None, high=i.high if i else None)
            for name, value, i in figures]


def _n(value: float | None, sign: str = "") -> str:
    return "undefined" if value is None else f"{value:{sign}.3f}"


def _flipped(changes: list[PairChange], new_labels: dict[tuple[str, str], Label], queries: dict[str, Query] | None,
             corpus: dict[str, Doc] | None) -> str:
    if not changes:  # said, not a bare header over an empty table
        return '<p class="note">None.</p>'
    rows = []
    for c in changes[:SHOWN]:
        query, doc = (queries or {}).get(c.query_id), (corpus or {}).get(c.doc_id)
        label = new_labels.get((c.query_id, c.doc_id))
        rows.append([with_text(c.query_id, query.text if query else None),
                     with_text(c.doc_id, doc.text if doc else None), c.gold, c.old, c.new,
                     label.justification[:200] if label else ""])
    shown = "" if len(changes) <= SHOWN else f"<p>First {SHOWN} of {len(changes)}.</p>"
    return shown + str(table(["query", "document", "human", "old", "new", "new rubric's justification"], rows,
                             numeric=(2, 3, 4)))


def prompt_page(*, result: AgreeResult, old_result: AgreeResult, old_name: str, new_name: str, summary: list[str],
                new_labels: list[Label], queries: dict[str, Query] | None, corpus: dict[str, Doc] | None,
                subtitle: str) -> str:
    from labeller.pipelines.steps import paragraphs

    gate = result.gate
    conf = int(result.bootstrap.confidence * 100)
    headline = (f"{gate.metric} old {_n(gate.old)} → new {_n(gate.new)}, new − old {_n(gate.difference, '+')} "
                f"({conf}% CI {_n(gate.ci and gate.ci.low, '+')} to {_n(gate.ci and gate.ci.high, '+')}): "
                f"{gate.change}")
    estimates = _estimates(f"old: {old_name}", old_result) + _estimates(f"new: {new_name}", result)
    change = gate_change_chart(gate, sides=False)  # old and new are charted above, figure by figure
    by_pair = {(lb.query_id, lb.doc_id): lb for lb in new_labels}
    texts_note = "" if queries and corpus else f'<p class="note">{NO_TEXTS}</p>'
    sections = [
        ("", str(banner(gate.verdict == "pass", headline))),
        (f"Old against new rubric on {result.n} gold pairs ({conf}% intervals, queries resampled)",
         str(interval_chart(estimates, x_range=(min(0.0, *[e.low or 0 for e in estimates]), 1.0)))),
        (f"The gate: {gate.metric} new − old", str(change)),
        ("Verdict", paragraphs(summary)),
        (f"Broken: the new grade is further from people's ({len(gate.broken)})",
         (texts_note if gate.broken else "") + _flipped(gate.broken, by_pair, queries, corpus)),
        (f"Fixed: the new grade is closer to people's ({len(gate.fixed)})",
         _flipped(gate.fixed, by_pair, queries, corpus)),
        ("Reports", '<p><a href="agreement/agreement.html">Agreement of the new rubric with gold '
                    "(confusion heatmap, disagreements)</a></p>"),
    ]
    return page("validate_prompt: old against new rubric", sections, subtitle=subtitle)
