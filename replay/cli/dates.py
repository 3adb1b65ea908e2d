"""--since/--until values: a calendar day (YYYY-MM-DD, YYYYMMDD) or one relative to today
(`today`, `yesterday`, `30d`, `2w`), so a command line works on any user's logs whatever
the month they were written in."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone, tzinfo

RELATIVE = re.compile(r"^(\d{1,5})\s*([dw])$")
FORMS = ("YYYY-MM-DD, YYYYMMDD, Nd or Nw (N days or weeks before today), today or yesterday")
DATE_HELP = ("Only responses on or after this day, in --timezone: YYYY-MM-DD, YYYYMMDD, today, yesterday, "
             "Nd or Nw (N days or weeks before today: 30d, 2w).")
UNTIL_HELP = "Only responses on or before this day (inclusive); the same forms as --since."


def now() -> datetime:
    """The current time; tests replace it to fix 'today'."""
    return datetime.now(timezone.utc)


def resolve_day(text: str, tz: tzinfo, at: datetime | None = None) -> date:
    """The calendar day ``text`` names, relative forms counted back from today in ``tz``.

    ``Nd`` is the day N days before today (``0d`` is today), so ``--since 7d`` covers the
    seven days before today and today itself, as `git log --since=7.days` reaches back.
    Raises ValueError naming the accepted forms.
    """
    t = text.strip().lower()
    today = (at or now()).astimezone(tz).date()
    if t == "today":
        return today
    if t == "yesterday":
        return today - timedelta(days=1)
    m = RELATIVE.match(t)
    if m:
        # at most 99999 weeks: about 1,900 years, so the day stays after year 1
        return today - timedelta(days=int(m[1]) * (7 if m[2] == "w" else 1))
    for fmt in ("%Y-%m-%d", "%Y%m%d"):
        try:
            return datetime.strptime(t, fmt).date()
        except ValueError:
            pass
    raise ValueError(f"{text!r} is not a date; expected {FORMS}")
