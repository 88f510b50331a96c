"""Which scale a grade file is on: `--from-scale` per file and per command, and what to say when a
grade does not fit. A scale is a shift ("0-3" maps 0..3 onto 1..4), never a clip."""

from __future__ import annotations

from pathlib import Path

from labeller.errors import BadInputError
from labeller.io.memory import as_source
from labeller.io.tables import is_headed_tsv
from labeller.io.trec import is_table, parse_scale, ranx_json

ROLES_WITH_SCALES = ("labels", "baseline", "gold", "labels-alt")


def scale_of(spec: str | None, role: str | None) -> str | None:
    """The scale `--from-scale` names for the file of this role: 'gold=0-3,labels=0-2' names each file's
    scale, for tables and qrels alike; None for a bare '0-3', which read_grades gives the qrels and
    command_scale spreads over the tables of a command without qrels."""
    if spec is None or "=" not in spec:
        return None
    scales: dict[str, str] = {}
    for item in (p.strip() for p in spec.split(",") if p.strip()):
        name, sep, value = (s.strip() for s in item.partition("="))
        if not sep or name not in ROLES_WITH_SCALES:
            raise BadInputError(f"--from-scale '{item}' is not LOW-HIGH or FILE=LOW-HIGH with FILE one of "
                                f"{', '.join(ROLES_WITH_SCALES)}", field="from_scale")
        parse_scale(value)
        if scales.get(name, value) != value:  # one file, two scales: which one is meant is not ours to guess
            raise BadInputError(f"--from-scale names two scales for {name} ({scales[name]} and {value}); expected "
                                "one scale per file", field="from_scale")
        scales[name] = value
    return scales.get(role or "") or (scales.get("labels") if role in ("baseline", "judgments", "labels-alt") else None)


def command_scale(spec: str | None, paths: list[str | Path | None]) -> str | None:
    """What a bare `--from-scale LOW-HIGH` means for one command's grade files: their qrels when there
    are any (so human qrels and 1-5 tables mix, as always); when the command reads tables only, every
    table (labeller's own label output excepted: always 1-5), e.g. a 0-3 gold CSV."""
    if spec is None or "=" in spec:
        return spec
    if any(p is not None and _is_qrels(as_source(p)) for p in paths):
        return spec
    return ",".join(f"{role}={spec}" for role in ROLES_WITH_SCALES)


def _is_qrels(path: Path) -> bool:
    return ranx_json(path) is not None or not is_table(path) or is_headed_tsv(path)


def scale_role(role: str | None) -> str:
    return {"judgments": "labels", None: "gold"}.get(role, role)  # the name --from-scale knows the file by


def out_of_scale(raw: int, low: int, high: int, shift_needed: bool, clip_hint: bool, scale: str | None,
                  role: str) -> str:
    if shift_needed:
        return (f"grade 0 is outside the scale {low}-{high}: this file looks 0-based; give its own scale, e.g. "
                f"--from-scale {role}=0-3, to shift its grades onto 1.." + (" (--clip would merge 0 with 1)"
                                                                           if clip_hint else ""))
    message = f"grade {raw} is outside the scale {low}-{high}; fix it"
    message += f", or give this file its own scale with --from-scale {role}=LOW-HIGH"
    if clip_hint:
        message += ", or pass --clip to move out-of-scale grades to the nearest end (clipping is reported)"
    return message
