"""One clock for the palace: what "now" and "today" are, and what a date means as a bound.

- **today** is the user's calendar date: the local date of now, in the machine's time zone.
- **now** is the current instant. `MEMPALACE_NOW` fixes it (an ISO datetime, read as local
  time without an offset, or a date, read as local noon that day): tests use it, and a `--now` flag
  can pass the same value as the `fixed` argument.
- **A date names a whole local day**, from local midnight to the last instant before the next
  local midnight. Instants are kept as naive UTC ISO strings (`YYYY-MM-DDTHH:MM:SS[.ffffff]`),
  which compare correctly as text; `day_start` and `day_end` turn a day into such instants.
- **Intervals include both ends.** A fact valid `valid_from`..`valid_to` holds from the first
  instant of `valid_from` through the last instant of `valid_to`: a date-only `valid_to` is the
  fact's last day, answered by `as_of` that day and `current` until that day is over. The search
  filters follow the same days: `since DAY` keeps what is dated from the start of DAY on,
  `before DAY` what is dated before the start of DAY.

Standard library only: the `kg` commands import this without loading Chroma or the model.
"""

from __future__ import annotations

import os
import time as _time
from datetime import UTC, date, datetime, timedelta

from mempalace_cli.common.errors import InvalidInputError

NOW_ENV = "MEMPALACE_NOW"
_ONE_MICROSECOND = timedelta(microseconds=1)
# Local time goes through the time module (the C library), never datetime.astimezone(): a
# zone a whole day ahead of UTC (TZ=AHEAD-24, as tests use) is beyond datetime's offsets.


def now(fixed: str | datetime | None = None) -> datetime:
    """The current instant (aware, UTC): `fixed` when given, else MEMPALACE_NOW when set, else
    the system clock."""
    value: str | datetime | None = fixed if fixed is not None else os.environ.get(NOW_ENV)
    if value is None or (isinstance(value, str) and not value.strip()):
        return datetime.now(UTC)
    if isinstance(value, datetime):
        return _utc(value)
    return _parse_now(value.strip(), "--now" if fixed is not None else NOW_ENV)


def _parse_now(text: str, source: str) -> datetime:
    try:
        if len(text) == 10:  # a date: noon that day, local time
            return _from_local(date.fromisoformat(text), 12)
        return _utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        raise InvalidInputError(
            f"{source} {text!r} is not a date or time.",
            hint="Use YYYY-MM-DD (2026-03-12) or an ISO datetime (2026-03-12T09:30:00, local "
            f"time unless it has an offset), or unset {NOW_ENV} to use the clock.",
        ) from None


def _utc(moment: datetime) -> datetime:
    """An aware UTC datetime; a naive one is local time."""
    if moment.tzinfo is not None:
        return moment.astimezone(UTC)
    seconds = _time.mktime(moment.replace(microsecond=0).timetuple())
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=moment.microsecond)


def _from_local(day: date, hour: int = 0) -> datetime:
    """`hour`:00 local time on `day`, as an aware UTC datetime."""
    seconds = _time.mktime((day.year, day.month, day.day, hour, 0, 0, 0, 0, -1))
    return datetime.fromtimestamp(seconds, UTC)


def _local_day(moment: datetime) -> date:
    local = _time.localtime(moment.timestamp())
    return date(local.tm_year, local.tm_mon, local.tm_mday)


def today(fixed: str | datetime | None = None) -> str:
    """The user's calendar date (local time zone), `YYYY-MM-DD`."""
    return _local_day(now(fixed)).isoformat()


def utc_stamp(fixed: str | datetime | None = None, timespec: str = "seconds") -> str:
    """Now as a naive UTC ISO string (the form instants are kept in)."""
    return now(fixed).replace(tzinfo=None).isoformat(timespec=timespec)


def _naive_utc(moment: datetime) -> str:
    # isoformat's own precision, as parse_date writes instants: equal instants, equal text.
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat()


def day_start(day: str) -> str:
    """The first instant of local day `day` (`YYYY-MM-DD`), as naive UTC ISO."""
    return _naive_utc(_from_local(date.fromisoformat(day)))


def day_end(day: str) -> str:
    """The last instant (microsecond) of local day `day`, as naive UTC ISO."""
    following = _from_local(date.fromisoformat(day) + timedelta(days=1))
    return _naive_utc(following - _ONE_MICROSECOND)


def local_date(instant: str) -> str:
    """The local calendar date of a naive UTC ISO instant (a date is returned as it is)."""
    if len(instant) == 10:
        return instant
    moment = datetime.fromisoformat(instant)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return _local_day(moment).isoformat()


def first_instant(bound: str) -> str:
    """Where a bound starts: a date at its local midnight, an instant at itself."""
    return day_start(bound) if len(bound) == 10 else bound


def last_instant(bound: str) -> str:
    """Where a bound ends (inclusive): a date at the last instant of its local day, an instant
    at itself."""
    return day_end(bound) if len(bound) == 10 else bound
