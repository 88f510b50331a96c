"""The stderr summary of a jury or escalation run of `labeller label`."""

from __future__ import annotations

import sys


def _money(value: float | None) -> str:
    return "unknown (no price for this model)" if value is None else f"${value:.4f}"


def _num(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def _interval(ci) -> str:
    return "" if ci.low is None else f" [{ci.low:.3f}, {ci.high:.3f}]"


def _unit(j) -> str:
    """What a judge's counts count: pairs, or with --samples N verdicts (pair x sample)."""
    return "pairs" if j.samples == 1 else f"samples ({j.requested // j.samples} pairs x {j.samples})"


def jury_summary(result) -> None:
    s = result.stats
    say = lambda text="": print(text, file=sys.stderr)  # noqa: E731
    for judge, j in s.judges.items():
        if s.dry_run:
            say(f"dry run {judge}: {j.requested} {_unit(j)}, {j.new} new, {j.cached} cached; estimated "
                f"{(j.estimated_input_tokens or 0):,} input + {(j.estimated_output_tokens or 0):,} output tokens, "
                f"cost {_money(j.estimated_cost_usd)}")
        else:
            say(f"{judge}: {j.requested} {_unit(j)}, {j.new} new, {j.cached} from cache, {j.failed} failed"
                + (f", {j.skipped} not sent" if j.skipped else "")
                + f"; requests {j.requests}, tokens {j.input_tokens:,} in / {j.output_tokens:,} out, "
                  f"cost {_money(j.cost_usd)}" + (" at batch prices" if j.batch else ""))
    e = s.escalation
    if e is not None:
        rules = ([f"{e.for_near_cut} next to the relevance cut (grades {e.relevant_from - 1}-{e.relevant_from})"]
                 if e.near_cut else []) + ([f"{e.for_low_agreement} with sample agreement below {e.below:g}"]
                                           if e.below is not None else []) \
            + ([f"{e.for_spread} with grade entropy above {e.above:g} bits"] if e.above is not None else [])
        say(f"escalation: {e.escalated} of {e.graded} pairs ({100 * e.share:.1f}%) "
            f"{'would go' if s.dry_run else 'went'} to {e.expensive}: {', '.join(rules)}"
            + (f", {e.worst_case} not graded yet (counted as escalated)" if e.worst_case else ""))
        for note in e.notes:
            say(f"  {note}")
        if e.expensive_alone_usd is not None:
            say(f"escalation cost (the verdicts used, cached or not): {e.cheap} {_money(e.cheap_cost_usd)} + "
                f"{e.expensive} {_money(e.expensive_cost_usd)}; {e.expensive} on every pair would cost about "
                f"{_money(e.expensive_alone_usd)}")
    if s.dry_run:
        say(f"dry run total: estimated cost {_money(s.estimated_cost_usd)}; nothing sent")
        return
    what = "final labels" if e is not None else f"jury ({s.rule} of {len(s.judges)} judges; an even split takes the lower grade)"
    say(f"{what}: {s.labelled} of {s.requested} pairs; all judges: requests {s.requests}, tokens "
        f"{s.input_tokens:,} in / {s.output_tokens:,} out, cost {_money(s.cost_usd)}")
    if s.inter_judge is not None:
        for p in s.inter_judge.pairwise:
            say(f"inter-judge {p.first} vs {p.second}: kappa {_num(p.kappa)}, quadratic {_num(p.kappa_quadratic)}, "
                f"exact {_num(p.exact_agreement)} (n={p.n})")
        if len(s.inter_judge.judges) > 2:
            say(f"inter-judge ordinal alpha, all judges: {_num(s.inter_judge.alpha_ordinal)} "
                f"(n={s.inter_judge.units})")
    if s.against_gold:
        judges_against_gold(s.against_gold, s.relevant_from, say)
    if result.out_path:
        say(f"labels: {result.out_path}; each judge's labels: {result.judges_path}")
    for failure in result.failures[:5]:
        say(f"  failed {failure.judge}: {failure.query_id} / {failure.doc_id}: {failure.reason}")
    if len(result.failures) > 5:
        say(f"  ... and {len(result.failures) - 5} more")
    if result.failures_path:
        say(f"failures: {result.failures_path} (rerun the same command to retry them)")


def judges_against_gold(rows, relevant_from: int, say) -> None:
    """One line per judge (and the jury or final labels): its kappa against gold with its interval."""
    say("against gold, by judge (kappa, quadratic kappa; query-bootstrap intervals):")
    for a in rows:
        say(f"  {a.name}: kappa {_num(a.kappa)}{_interval(a.kappa_ci)}, quadratic {_num(a.kappa_quadratic)}"
            f"{_interval(a.kappa_quadratic_ci)}, relevant@{relevant_from} {_num(a.kappa_relevant)}, "
            f"exact {_num(a.exact_agreement)} (n={a.n})")
