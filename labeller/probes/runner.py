"""run_probes: pick pairs, perturb their documents, grade originals and copies through the cache, measure.

1. Reference grades: the labels/gold file's, or (given bare pairs) the judge's own grade of each pair.
2. Each probe picks up to `pairs_per_probe` pairs with a RNG seeded by (seed, probe name); stuffing and
   injection pick only pairs graded below `relevant_from`. Each picked pair gets a perturbed copy of
   its document under a derived id (labeller.probes.base).
3. Originals and copies go through label_pairs in one run: the verdict cache answers what it holds,
   identical pairs are paid once, and a rerun with the same seed sends nothing.
4. Per probe: the shift (perturbed - original, both graded by this judge now) of each pair whose two
   grades both exist; judge failures are counted, never turned into a grade.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from labeller.errors import BadInputError, BudgetExceededError, JudgeError
from labeller.judges.base import Judge
from labeller.labelling import LabelOptions, LabelRun, label_pairs
from labeller.prices import PriceTable
from labeller.probes.base import ID_MARK, Context, Probe
from labeller.probes.gate import probe_result
from labeller.probes.injection import InjectionProbe
from labeller.probes.length import LengthProbe
from labeller.probes.models import PairShift, ProbeCost, ProbeEstimate, ProbeReport, ProbeSettings
from labeller.probes.near_duplicate import NearDuplicateProbe
from labeller.probes.stuffing import StuffingProbe
from labeller.records import Doc, Pair, Query
from labeller.rubric import Rubric
from labeller.store.base import VerdictStore

PROBES: dict[str, Probe] = {p.name: p for p in (LengthProbe(), StuffingProbe(), InjectionProbe(), NearDuplicateProbe())}


async def run_probes(reference: Sequence[tuple[Pair, int | None]], queries: dict[str, Query], corpus: dict[str, Doc],
                     judge: Judge, rubric: Rubric, store: VerdictStore, settings: ProbeSettings,
                     options: LabelOptions | None = None, *, prices: PriceTable | None = None,
                     reference_name: str = "the labels file") -> ProbeReport:
    options = options or LabelOptions(progress=False)
    clashing = next((d for d in corpus if ID_MARK in d), None)
    if clashing is not None:
        raise BadInputError(f"document id '{clashing}' contains '{ID_MARK}', which labeller keeps for probe copies")
    cost = ProbeCost()
    grades = dict(((p.query_id, p.doc_id), g) for p, g in reference)
    if options.dry_run and any(g is None for g in grades.values()):
        raise BadInputError("--dry-run needs --labels: with bare --pairs the probes are picked by the judge's own "
                            "grades, which a dry run does not ask for")
    if any(g is None for g in grades.values()):  # bare pairs: the judge's own grade is the reference
        reference_name = "the judge's own grades of the pairs"
        graded = _grades(await _label([p for p, _ in reference], queries, corpus, judge, rubric, store, options,
                                      prices, cost))
        grades = {k: graded.get(k) for k in grades}
    docs_of_query: dict[str, list[str]] = {}
    for (qid, did) in grades:
        docs_of_query.setdefault(qid, []).append(did)
    context = Context(rubric=rubric, corpus=corpus, docs_of_query=docs_of_query)

    picked: dict[str, list[tuple[Pair, int, Doc]]] = {}
    for name in settings.probes:
        probe = PROBES[name]
        eligible = [(qid, did, g) for (qid, did), g in grades.items()
                    if g is not None and (not probe.low_only or g < settings.relevant_from)]
        if not eligible:
            why = f" graded below {settings.relevant_from}" if probe.low_only else " with a grade"
            raise BadInputError(f"probe '{name}' has no pairs to run on: {reference_name} holds no pair{why}")
        rng = random.Random(f"{settings.seed}:{name}")
        chosen = sorted(rng.sample(range(len(eligible)), min(settings.pairs_per_probe, len(eligible))))
        picked[name] = [(Pair(query_id=qid, doc_id=did), g,
                         probe.perturb(queries[qid], corpus[did], context, rng))
                        for qid, did, g in (eligible[i] for i in chosen)]

    copies = {doc.doc_id: doc for rows in picked.values() for _, _, doc in rows}
    pairs = list(dict.fromkeys([p for rows in picked.values() for p, _, _ in rows]
                               + [Pair(query_id=p.query_id, doc_id=d.doc_id) for rows in picked.values()
                                  for p, _, d in rows]))
    run = await _label(pairs, queries, {**corpus, **copies}, judge, rubric, store, options, prices, cost)
    header = dict(judge=judge.name, rubric=f"{rubric.name}@{rubric.version}", reference=reference_name,
                  seed=settings.seed, resamples=settings.resamples, confidence=settings.confidence,
                  relevant_from=settings.relevant_from, cost=cost)
    if options.dry_run:
        s = run.stats
        estimate = ProbeEstimate(pairs=s.requested, new=s.new, cached=s.cached, input_tokens=s.estimated_input_tokens,
                                 output_tokens=s.estimated_output_tokens, cost_usd=s.estimated_cost_usd,
                                 notes=s.estimate_notes)
        return ProbeReport(**header, probes=[], passed=True, estimate=estimate)
    now = _grades(run)
    results = []
    for name, rows in picked.items():
        shifts = [PairShift(query_id=p.query_id, doc_id=p.doc_id, probe_doc_id=d.doc_id, reference=g,
                            original=now.get((p.query_id, p.doc_id)), perturbed=now.get((p.query_id, d.doc_id)))
                  for p, g, d in rows]
        results.append(probe_result(PROBES[name], shifts, settings))
    return ProbeReport(**header, probes=results, passed=all(r.verdict == "pass" for r in results))


async def _label(pairs, queries, corpus, judge, rubric, store, options, prices, cost: ProbeCost) -> LabelRun:
    run = await label_pairs(pairs, queries, corpus, judge, rubric, store, options, prices=prices)
    s = run.stats
    if s.dry_run:
        return run
    cost.requests += s.requests
    cost.new += s.new
    cost.cached += s.cached
    cost.failed += s.failed
    cost.input_tokens += s.input_tokens
    cost.output_tokens += s.output_tokens
    cost.cost_usd = None if cost.cost_usd is None or s.cost_usd is None else round(cost.cost_usd + s.cost_usd, 6)
    if s.stopped_by:  # a bad key or unknown model: nothing more can be graded, so no probe can be read
        raise JudgeError(f"{s.stopped_by}; the verdicts received so far are in the cache")
    if s.budget_stopped:
        raise BudgetExceededError(f"--max-cost reached after ${s.cost_usd or 0:.4f}; the verdicts received so far "
                                  "are in the cache")
    return run


def _grades(run: LabelRun) -> dict[tuple[str, str], int]:
    return {(label.query_id, label.doc_id): label.grade for label in run.labels}
