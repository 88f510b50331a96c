"""probe_files: the `labeller probe` run from file paths, with every input checked before anything is sent."""

from __future__ import annotations

import tempfile
from pathlib import Path

from labeller.errors import BadInputError
from labeller.io.gold import read_grades, settled_grades
from labeller.io.inputs import read_corpus, read_pairs, read_queries
from labeller.io.memory import InMemory, Input
from labeller.io.outputs import check_outputs, existing_files
from labeller.labelling import LabelInputs
from labeller.probes.models import PROBE_NAMES, ProbeReport, ProbeSettings
from labeller.records import Pair
from labeller.reports.html import display_path


def parse_probes(text: str | None) -> tuple[str, ...]:
    """'length,injection' -> ('length', 'injection'); None or 'all' -> every probe."""
    if text is None or text.strip() == "all":
        return PROBE_NAMES
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROBE_NAMES]
    if unknown or not names:
        raise BadInputError(f"unknown probe '{unknown[0] if unknown else text}'; expected a comma-separated list of "
                            f"{', '.join(PROBE_NAMES)} (or all)", field="probes")
    return tuple(dict.fromkeys(names))


def parse_thresholds(text: str | None) -> dict[str, float]:
    """'0.5' (every probe: key "*"), 'injection=0.2,near-duplicate=0.1', or both: '0.5,injection=0.2'."""
    if text is None:
        return {}
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.rpartition("=")
        name = name.strip() or "*"
        if name != "*" and name not in PROBE_NAMES:
            raise BadInputError(f"unknown probe '{name}' in --threshold; expected one of {', '.join(PROBE_NAMES)}",
                                field="threshold")
        try:
            number = float(value)
        except ValueError:
            raise BadInputError(f"'{value.strip()}' is not a number; expected a grade shift such as 0.5",
                                field="threshold") from None
        if not number >= 0 or number == float("inf"):
            raise BadInputError(f"{value.strip()} is not a finite grade shift of 0 or more", field="threshold")
        out[name] = number
    return out


def read_reference(*, labels: str | Path | None, pairs: str | Path | None, queries: dict, corpus: dict,
                   from_scale: str | None = None) -> list[tuple[Pair, int | None]]:
    """The labelled pairs to probe: a labels, gold or qrels file (its grades choose the irrelevant pairs),
    or a bare pairs file (the judge's own grades of the originals then do)."""
    if (labels is None) == (pairs is None):
        raise BadInputError("give exactly one of --labels (labels, gold or qrels) or --pairs")
    if pairs is not None:
        return [(p, None) for p in read_pairs(pairs, queries, corpus)]
    grades = read_grades(labels, role="judgments", from_scale=from_scale, clip_hint=False, queries=queries,
                         corpus=corpus)
    settled = settled_grades(grades)
    if not settled:
        raise BadInputError("no graded pair to probe (every row is marked can't-judge or later)", path=str(labels))
    return [(Pair(query_id=q, doc_id=d), grade) for (q, d), grade in settled.items()]


def report_paths(directory: str | Path | None) -> dict[str, Path]:
    if directory is None:
        return {}
    d = Path(directory)
    return {"probes.md": d / "probes.md", "probes.html": d / "probes.html", "probes.json": d / "probes.json"}


def probe_files(inputs: LabelInputs, judge: str, *, labels: Input | None = None, from_scale: str | None = None,
                settings: ProbeSettings | None = None,
                report_dir: str | Path | None = None) -> tuple[ProbeReport, list[Path]]:
    """Read and check every input, run the probes through the store, write the reports (if asked). `inputs`: the
    texts, the pairs (or, in `labels`, graded pairs), the rubric, store and judge settings, as `labeller label`
    takes them (no run: the probes copy the pairs they are given)."""
    from labeller.judges.registry import make_judge
    from labeller.labelling.faults import run_labelling
    from labeller.prices import load_prices
    from labeller.probes.report import write_reports
    from labeller.rubric import load_rubric
    from labeller.store import default_spec, is_url

    settings = settings or ProbeSettings()
    unknown = [n for n in settings.thresholds if n != "*" and n not in settings.probes]
    if unknown:
        raise BadInputError(f"--threshold names probe '{unknown[0]}', which is not run; add it to --probes or drop "
                            "its threshold", field="threshold")
    if inputs.run is not None or inputs.depth is not None:  # (its `out` is unused: probes write their reports)
        raise BadInputError("probes take --labels or --pairs, not --run with --depth", field="run")
    options, queries, corpus, pairs = inputs.options, inputs.queries, inputs.corpus, inputs.pairs
    dry = options.dry_run
    cache_spec = inputs.cache if inputs.cache is not None else default_spec()
    check_outputs(inputs=existing_files([queries, corpus, labels, pairs, inputs.rubric, inputs.prices]),
                  files={f"--report ({k})": v for k, v in report_paths(report_dir).items()},
                  dirs={"--cache": None if is_url(cache_spec) or dry else cache_spec})
    rubric_obj = load_rubric(inputs.rubric or "general")
    price_table = load_prices(inputs.prices)
    # A dry run sends nothing, so it needs no API key: a placeholder lets the client be built (as in label).
    judge_obj = make_judge(judge, base_url=inputs.base_url, timeout=inputs.timeout,
                           temperature=inputs.temperature or 0.0, output_mode=inputs.output_mode,
                           api_key="dry-run-sends-nothing" if dry else None)
    query_map, docs = read_queries(queries), read_corpus(corpus)
    reference = read_reference(labels=labels, pairs=pairs, queries=query_map, corpus=docs, from_scale=from_scale)
    rubric_obj.check_fields(query_map.values(), docs.values(), queries_path=queries, corpus_path=corpus)
    given, kind = (labels, "labels") if labels is not None else (pairs, "pairs")
    name = f"the {given}" if isinstance(given, InMemory) else f"the {kind} file {display_path(given)}"

    def main(spec, create: bool = True):
        async def probing(sender):
            from labeller.probes.runner import run_probes
            from labeller.store import open_store

            try:
                with open_store(spec, create=create) as store:
                    return await run_probes(reference, query_map, docs, sender, rubric_obj, store, settings, options,
                                            prices=price_table, reference_name=name)
            finally:
                await sender.aclose()
        return probing

    if dry:  # a dry run creates no store: without one, every pair is new
        from labeller.store.base import NoStoreError

        try:
            return run_labelling(main(cache_spec, create=False), judge_obj, cache_spec), []
        except NoStoreError:
            with tempfile.TemporaryDirectory() as empty:
                return run_labelling(main(empty), judge_obj, empty), []
    report = run_labelling(main(cache_spec), judge_obj, cache_spec)
    written = write_reports(report_dir, report, query_map, docs) if report_dir is not None else []
    return report, written
