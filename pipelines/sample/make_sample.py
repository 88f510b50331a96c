"""Write the bundled bookkeeping sample: corpus.jsonl (the ledger) and queries.jsonl (new transactions).

Standard library only and seeded, so the committed files are exactly this script's output:

    python pipelines/sample/make_sample.py            # rewrite the files beside this script
    python pipelines/sample/make_sample.py --out DIR  # write them somewhere else

The ledger covers January 2023 to December 2025: the bills that come round on a schedule
(catalogue.RECURRING, catalogue.ANNUAL) plus purchases drawn from catalogue.SUPPLIERS. The queries
are the hand-written new transactions of early 2026 in new_transactions.py.
"""

from __future__ import annotations

import argparse
import calendar
import json
import random
import sys
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalogue import ANNUAL, CITIES, CURRENCY, LONG_ROUTES, RECURRING, SHORT_ROUTES, SUPPLIERS, SYMBOL  # noqa: E402
from new_transactions import NEW_TRANSACTIONS  # noqa: E402

SEED = 20260105
LEDGER_SIZE = 3000
FIRST_YEAR, LAST_YEAR = 2023, 2025
CREEP = 0.035  # yearly price rise of scheduled bills


def render(supplier: str, description: str, amount: float, currency: str, vat: str) -> str:
    return f"{supplier} — {description} — {SYMBOL[currency]}{amount:,.2f} — VAT {vat}"


def fill(template: str, rng: random.Random, when: date, n: int | None = None) -> str:
    prev_end = when.replace(day=1) - timedelta(days=1)
    values = {
        "n": n,
        "mon": when.strftime(rng.choice(["%b %y", "%B %Y", "%b %Y"])),
        "period": f"{prev_end.replace(day=1):%d/%m/%y}-{prev_end:%d/%m/%y}",
        "q": f"Q{(when.month - 1) // 3 + 1} {when.year}",
        "long_route": rng.choice(LONG_ROUTES),
        "short_route": rng.choice(SHORT_ROUTES),
        "city": rng.choice(CITIES),
        "year": str(when.year),
    }
    return template.format(**values)


def scheduled(rng: random.Random) -> list[tuple[date, str, str, str, float, str]]:
    rows = []
    for year in range(FIRST_YEAR, LAST_YEAR + 1):
        creep = (1 + CREEP) ** (year - FIRST_YEAR)
        for month in range(1, 13):
            for supplier, template, category, (low, high), vat, every, day in RECURRING:
                if (month - 1) % every:
                    continue
                last = calendar.monthrange(year, month)[1]
                when = date(year, month, min(last, day + (rng.randint(0, 2) if low != high else 0)))
                amount = rng.uniform(low, high) * creep
                if low == high and low >= 100:
                    amount = round(amount / 5) * 5.0  # a fixed fee is a round figure
                rows.append((when, supplier, fill(template, rng, when), category, round(amount, 2), vat))
            for supplier, template, category, (low, high), vat, due, day in ANNUAL:
                if month == due:
                    when = date(year, month, day)
                    amount = rng.uniform(low, high) * creep
                    rows.append((when, supplier, fill(template, rng, when), category, round(amount, 2), vat))
    return rows


def purchase(rng: random.Random, start: date, days: int) -> tuple[date, str, str, str, float, str]:
    names, _, items = rng.choices(SUPPLIERS, weights=[s[1] for s in SUPPLIERS])[0]
    supplier = rng.choice(names)
    it = rng.choices(items, weights=[i["weight"] for i in items])[0]
    when = start + timedelta(days=rng.randrange(days))
    if when.weekday() >= 5 and rng.random() < 0.7:  # most purchases happen on working days
        friday = when - timedelta(days=when.weekday() - 4)
        when = friday if friday >= start else when + timedelta(days=7 - when.weekday())
    n = rng.choice(it["qty"]) if it["qty"] else None
    price = rng.uniform(*it["price"]) * (n or 1)
    category = it["category"]
    if it["alt"] and rng.random() < it["alt"][1]:
        category = it["alt"][0]
    return when, supplier, fill(rng.choice(it["descs"]), rng, when, n), category, round(price, 2), it["vat"]


def ledger(rng: random.Random) -> list[dict]:
    rows = scheduled(rng)
    start = date(FIRST_YEAR, 1, 1)
    days = (date(LAST_YEAR, 12, 31) - start).days + 1
    rows += [purchase(rng, start, days) for _ in range(LEDGER_SIZE - len(rows))]
    order = sorted(range(len(rows)), key=lambda i: (rows[i][0], i))
    out = []
    for number, i in enumerate(order, start=1):
        when, supplier, description, category, amount, vat = rows[i]
        currency = CURRENCY.get(supplier, "GBP")
        out.append({"doc_id": f"tx-{number:05d}", "text": render(supplier, description, amount, currency, vat),
                    "supplier": supplier, "description": description, "amount": amount, "currency": currency,
                    "vat": vat, "category": category, "date": when.isoformat()})
    return out


def queries() -> list[dict]:
    return [{"query_id": qid, "text": render(supplier, description, amount, currency, vat), "supplier": supplier,
             "description": description, "amount": amount, "currency": currency, "vat": vat, "date": day,
             "category": category}
            for qid, day, supplier, description, amount, currency, vat, category, _ in NEW_TRANSACTIONS]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8",
                    newline="\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "corpus.jsonl", ledger(random.Random(SEED)))
    write_jsonl(args.out / "queries.jsonl", queries())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
