"""Self-exam canaries: the date a canary was planted, as a fact with its usual written forms.

A system that keeps its records' dates should be able to say when a canary record was created. With
`self_exam = true` a canary gets one more fact, the calendar date of its own `planted_at` (in the
offset it was written with), so the payload need not spell the date out. A date is written many
ways; each counts (whole tokens, factrecall.py), for 2026-01-05:

    2026-01-05   2026/01/05   5 January 2026   January 5, 2026   5th January 2026   January 5th, 2026
    5 Jan 2026   Jan 5, 2026   Monday, 5 January 2026   05/01/2026   01/05/2026   5/1/2026   1/5/2026
    05.01.2026   5.1.2026

Both numeric orders count (day/month as in Europe, month/day as in the US): a record's date written
either way is that date. ("January 5, 2026" and "January 5 2026" are the same tokens: the comma
separates.)
"""

from __future__ import annotations

import calendar
from datetime import date, datetime

# English names, whatever the process locale (strftime's %B would follow it).
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def planted_date(planted_at: str) -> date:
    return datetime.fromisoformat(planted_at).date()


def _ordinal(day: int) -> str:
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def date_forms(when: date) -> list[str]:
    """The ISO date first, then its other usual written forms, without duplicates."""
    d, m, y = when.day, when.month, when.year
    month, weekday = MONTHS[m - 1], WEEKDAYS[calendar.weekday(y, m, d)]
    mon = month[:3]
    forms = [when.isoformat(), f"{y}/{m:02d}/{d:02d}", f"{d} {month} {y}", f"{month} {d}, {y}",
             f"{_ordinal(d)} {month} {y}", f"{month} {_ordinal(d)}, {y}", f"{d} {mon} {y}", f"{mon} {d}, {y}",
             f"{weekday}, {d} {month} {y}", f"{d:02d}/{m:02d}/{y}", f"{m:02d}/{d:02d}/{y}", f"{d}/{m}/{y}",
             f"{m}/{d}/{y}", f"{d:02d}.{m:02d}.{y}", f"{d}.{m}.{y}"]
    return list(dict.fromkeys(forms))
