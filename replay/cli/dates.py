"""--since/--until values: a calendar day (YYYY-MM-DD, YYYYMMDD) or one relative to today
(`today`, `yesterday`, `30d`, `2w`), so a command line works on any user's logs whatever
the month they were written in. The forms are read by `replay.experiments.slices.resolve_day`;
what stays here is the options' help and the clock the commands count 'today' from."""

from __future__ import annotations

from datetime import date, datetime, timezone, tzinfo

DATE_HELP = ("Only responses on or after this day, in --timezone: YYYY-MM-DD, YYYYMMDD, today, yesterday, "
             "Nd or Nw (N days or weeks before today: 30d, 2w).")
UNTIL_HELP = "Only responses on or before this day (inclusive); the same forms as --since."


def now() -> datetime:
    """The current time; tests replace it to fix 'today'."""
    return datetime.now(timezone.utc)


def resolve_day(text: str, tz: tzinfo, at: datetime | None = None) -> date:
    """`replay.experiments.slices.resolve_day`, today counted from ``at`` (default `now()`).
    Raises ValueError naming the accepted forms."""
    from replay.experiments.slices import resolve_day as resolve

    return resolve(text, tz, now() if at is None else at)
