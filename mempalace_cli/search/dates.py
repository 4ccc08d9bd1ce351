"""Dates people write: the `--since`/`--before` values search takes, and a time named in a
question ("what did we decide last month?", "上个月我们为什么决定用 Clerk?").

Every form resolves against one "now" (clock.py: the `--now` option, else MEMPALACE_NOW, else
the system clock) into a `Period`: whole local days, `start` inclusive and `end` exclusive.

- `2026-03-12`, `2026-03-12T09:30`: that day (or instant);
- `today` / 今天, `yesterday` / 昨天, `the day before yesterday` / 前天: that day;
- `7d`, `2w`, `3mo`, `1y`, `past 7 days`, 最近7天, 过去两周: from that many days (weeks,
  months, years) before today, through today;
- `3 days ago`, `a month ago`, 3天前, 一个月前: a day (week, month, year) long, starting then;
- `this week` / 本周, `last week` / 上周 (weeks start on Monday), `this month` / 本月,
  `last month` / 上个月, `this year` / 今年, `last year` / 去年: that calendar week (month, year);
- `in March`, `March`, `March 2026`, `2026-03`, 三月, 3月, 2026年3月: that month; without a year,
  the latest March that has begun;
- `March 12`, `12 March 2026`, 3月12日, `last Monday`, 上周一: that day.

As a filter bound, a period stands for its first day: `--since "last month"` keeps what is
dated from the first of last month on, `--before "last month"` what is dated before it.

Standard library only, no palace: `kg`, `diary` and `--help` stay fast (tests check it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from mempalace_cli.common import clock
from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.memory.kg import parse_date

FORMS = (
    "YYYY-MM-DD (2026-03-12), an ISO datetime, or a relative date: 7d, yesterday, last week, "
    "last month, in March, 昨天, 上周, 上个月, 三月"
)

MONTHS = {
    name: n
    for n, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
WEEKDAYS = {
    name: n
    for n, names in enumerate(
        (
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        )
    )
    for name in names
}
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6}
_ZH_DIGITS |= {"七": 7, "八": 8, "九": 9}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_EN_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
}
_UNITS = {
    "d": "day",
    "day": "day",
    "days": "day",
    "w": "week",
    "wk": "week",
    "week": "week",
    "weeks": "week",
    "mo": "month",
    "month": "month",
    "months": "month",
    "y": "year",
    "yr": "year",
    "year": "year",
    "years": "year",
    "天": "day",
    "日": "day",
    "周": "week",
    "星期": "week",
    "个星期": "week",
    "礼拜": "week",
    "个礼拜": "week",
    "个月": "month",
    "月": "month",
    "年": "year",
}


@dataclass(frozen=True)
class Period:
    """Local days `start` (inclusive) to `end` (exclusive), as written in `text`."""

    start: date
    end: date
    text: str

    @property
    def since(self) -> str:
        return self.start.isoformat()

    @property
    def before(self) -> str:
        return self.end.isoformat()

    def describe(self) -> str:
        last = self.end - timedelta(days=1)
        if last == self.start:
            return self.start.isoformat()
        return f"{self.start.isoformat()} to {last.isoformat()}"


# -- calendar arithmetic ------------------------------------------------------------------------
def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    following = date(year + (month == 12), month % 12 + 1, 1)
    return date(year, month, min(day.day, (following - timedelta(days=1)).day))


def _back(day: date, n: int, unit: str) -> date:
    if unit == "day":
        return day - timedelta(days=n)
    if unit == "week":
        return day - timedelta(weeks=n)
    if unit == "month":
        return _add_months(day, -n)
    return _add_months(day, -12 * n)


def _month(year: int, month: int, text: str) -> Period:
    return Period(date(year, month, 1), _add_months(date(year, month, 1), 1), text)


def _latest_month(today: date, month: int, text: str) -> Period:
    """The latest `month` that has begun by `today`."""
    year = today.year if month <= today.month else today.year - 1
    return _month(year, month, text)


def _week_of(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _zh_number(text: str) -> int | None:
    """10, 两, 三, 十二, 二十 (up to 99): a number written in digits or Chinese numerals."""
    if text.isdigit():
        return int(text)
    if text in _ZH_DIGITS:
        return _ZH_DIGITS[text]
    if "十" in text:
        tens, _, ones = text.partition("十")
        high = _ZH_DIGITS.get(tens, None) if tens else 1
        low = _ZH_DIGITS.get(ones, None) if ones else 0
        if high is not None and low is not None:
            return high * 10 + low
    return None


def _number(text: str) -> int | None:
    text = " ".join(text.lower().split())
    return _EN_NUMBERS.get(text) if text in _EN_NUMBERS else _zh_number(text)


# -- the forms ------------------------------------------------------------------------------------
_NUM_EN = (
    r"\d{1,3}|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
)
_NUM_ZH = r"\d{1,3}|[零〇一二两三四五六七八九十]{1,3}"
_MONTH_EN = "|".join(sorted(MONTHS, key=len, reverse=True))
# In running text only the full names: "mar", "sat" or "may" alone read as other words.
_MONTH_FULL = "|".join(
    sorted((m for m in MONTHS if len(m) > 4 or m in ("may", "june", "july")), key=len, reverse=True)
)
_WEEKDAY_EN = "|".join(sorted(WEEKDAYS, key=len, reverse=True))
_WEEKDAY_FULL = "|".join(w for w in WEEKDAYS if w.endswith("day"))
_UNIT_EN = r"days?|weeks?|months?|years?"
_ZH_MONTH = r"\d{1,2}|十[一二]?|[一二三四五六七八九]"


@dataclass(frozen=True)
class _Form:
    pattern: re.Pattern[str]
    period: object  # (match, today) -> Period | None
    # Found inside a question too (not only as a whole filter value): forms that read as
    # something else in running text ("may", "7d", a bare weekday) are filter-only.
    in_questions: bool = True


def _en(pattern: str) -> re.Pattern[str]:
    # English forms stand as words: not inside another word ("today's" is fine).
    return re.compile(rf"(?<![\w-])(?:{pattern})(?![\w-])", re.IGNORECASE)


def _zh(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _single(day: date, text: str) -> Period:
    return Period(day, day + timedelta(days=1), text)


def _ago(n: int, unit: str, today: date, text: str) -> Period:
    """`n` units ago: a unit-long period starting then (3 days ago: that day)."""
    start = _back(today, n, unit)
    end = start + timedelta(days=1) if unit == "day" else _back(today, n - 1, unit)
    return Period(start, end, text)


def _span(n: int, unit: str, today: date, text: str) -> Period:
    return Period(_back(today, n, unit), today + timedelta(days=1), text)


def _named_month(m: re.Match[str], today: date) -> Period | None:
    month = MONTHS[m["month"].lower()]
    if m["year"]:
        return _month(int(m["year"]), month, m[0])
    return _latest_month(today, month, m[0])


def _day(year: int, month: int, day: int, text: str) -> Period | None:
    try:
        return _single(date(year, month, day), text)
    except ValueError:
        return None


def _latest_day(m: re.Match[str], month: int, day: int, today: date) -> Period | None:
    """The day in the year the match names, or else the latest one by `today`."""
    if m["year"]:
        return _day(int(m["year"]), month, day, m[0])
    this_year = _day(today.year, month, day, m[0])
    if this_year is not None and this_year.start <= today:
        return this_year
    return _day(today.year - 1, month, day, m[0])


def _month_day(m: re.Match[str], today: date) -> Period | None:
    """March 12 (the latest one by today), 12 March 2026."""
    month = MONTHS[(m["month"] or m["month2"]).lower()]
    day = int(m["day"] or m["day2"])
    return _latest_day(m, month, day, today)


def _zh_day(m: re.Match[str], today: date) -> Period | None:
    month, day = _zh_number(m["month"]), _zh_number(m["day"])
    if month is None or day is None or not 1 <= month <= 12:
        return None
    return _latest_day(m, month, day, today)


def _zh_month(m: re.Match[str], today: date) -> Period | None:
    month = _zh_number(m["month"])
    if month is None or not 1 <= month <= 12:
        return None
    if m["year"]:
        return _month(int(m["year"]), month, m[0])
    return _latest_month(today, month, m[0])


def _last_weekday(weekday: int, today: date, text: str) -> Period:
    back = (today.weekday() - weekday) % 7 or 7
    return _single(today - timedelta(days=back), text)


def _unit(word: str) -> str:
    return _UNITS[word.lower()]


_FORMS: tuple[_Form, ...] = (
    # English
    _Form(_en(r"the day before yesterday"), lambda m, t: _single(t - timedelta(days=2), m[0])),
    _Form(_en(r"yesterday|last night"), lambda m, t: _single(t - timedelta(days=1), m[0])),
    _Form(_en(r"today|tonight|this morning"), lambda m, t: _single(t, m[0])),
    _Form(
        _en(rf"(?P<n>{_NUM_EN})\s+(?P<unit>{_UNIT_EN})\s+ago"),
        lambda m, t: _ago(_number(m["n"]) or 0, _unit(m["unit"]), t, m[0]),
    ),
    _Form(
        _en(rf"(?:the\s+)?(?:past|last)\s+(?P<n>{_NUM_EN})\s+(?P<unit>{_UNIT_EN})"),
        lambda m, t: _span(_number(m["n"]) or 0, _unit(m["unit"]), t, m[0]),
    ),
    _Form(
        _en(r"(?:the\s+)?past\s+(?P<unit>week|month|year)|the\s+last\s+(?P<u2>week|month|year)"),
        lambda m, t: _span(1, (m["unit"] or m["u2"]).lower(), t, m[0]),
    ),
    _Form(
        _en(rf"(?P<n>\d{{1,4}})\s*(?P<unit>d|w|wk|mo|y|yr)|(?P<n2>{_NUM_EN})\s+(?P<u2>{_UNIT_EN})"),
        lambda m, t: _span(_number(m["n"] or m["n2"]) or 0, _unit(m["unit"] or m["u2"]), t, m[0]),
        in_questions=False,
    ),
    _Form(
        _en(r"(?P<which>this|last)\s+week"),
        lambda m, t: _week(m["which"].lower() == "last", t, m[0]),
    ),
    _Form(
        _en(r"(?P<which>this|last)\s+month"),
        lambda m, t: _this_month(m["which"].lower() == "last", t, m[0]),
    ),
    _Form(
        _en(r"(?P<which>this|last)\s+year"),
        lambda m, t: _year(t.year - (m["which"].lower() == "last"), m[0]),
    ),
    _Form(
        _en(rf"last\s+(?P<day>{_WEEKDAY_FULL})"),
        lambda m, t: _last_weekday(WEEKDAYS[m["day"].lower()], t, m[0]),
    ),
    _Form(
        _en(rf"last\s+(?P<day>{_WEEKDAY_EN})"),
        lambda m, t: _last_weekday(WEEKDAYS[m["day"].lower()], t, m[0]),
        in_questions=False,
    ),
    _Form(
        _en(rf"(?:in|during)\s+(?P<month>{_MONTH_FULL})(?:,?\s+(?P<year>\d{{4}}))?"),
        _named_month,
    ),
    _Form(_en(rf"(?P<month>{_MONTH_FULL})\s*,?\s+(?P<year>\d{{4}})"), _named_month),
    _Form(
        _en(rf"(?:in\s+|during\s+)?(?P<month>{_MONTH_EN})(?:\s*,?\s+(?P<year>\d{{4}}))?"),
        _named_month,
        in_questions=False,
    ),
    _Form(
        _en(
            rf"(?:(?P<month>{_MONTH_FULL})\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?"
            rf"|(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month2>{_MONTH_FULL}))"
            r"(?:(?:\s*,\s*|\s+)(?P<year>\d{4}))?"
        ),
        _month_day,
    ),
    _Form(
        _en(r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})"),
        lambda m, t: _day(int(m["year"]), int(m["month"]), int(m["day"]), m[0]),
    ),
    _Form(
        _en(r"(?P<year>\d{4})-(?P<month>\d{2})"),
        lambda m, t: (
            _month(int(m["year"]), int(m["month"]), m[0]) if 1 <= int(m["month"]) <= 12 else None
        ),
    ),
    # Chinese
    _Form(_zh(r"前天"), lambda m, t: _single(t - timedelta(days=2), m[0])),
    _Form(_zh(r"昨天|昨日"), lambda m, t: _single(t - timedelta(days=1), m[0])),
    _Form(_zh(r"今天|今日"), lambda m, t: _single(t, m[0])),
    _Form(
        _zh(rf"(?:最近|过去|近)(?P<n>{_NUM_ZH})(?P<unit>天|日|周|个星期|星期|个礼拜|礼拜|个月|年)"),
        lambda m, t: _zh_count(m, t, _span),
    ),
    _Form(
        _zh(rf"(?P<n>{_NUM_ZH})(?P<unit>天|日|周|个星期|星期|个礼拜|礼拜|个月|年)(?:以)?前"),
        lambda m, t: _zh_count(m, t, _ago),
    ),
    _Form(
        _zh(r"上(?:个)?(?:周|星期|礼拜)(?P<day>[一二三四五六日天])"),
        lambda m, t: _single(
            _week_of(t) - timedelta(weeks=1) + timedelta(days=_ZH_WEEKDAYS[m["day"]]), m[0]
        ),
    ),
    _Form(_zh(r"上(?:个)?(?:周|星期|礼拜)"), lambda m, t: _week(True, t, m[0])),
    _Form(_zh(r"(?:本|这)(?:个)?(?:周|星期|礼拜)"), lambda m, t: _week(False, t, m[0])),
    _Form(_zh(r"上(?:个)?月"), lambda m, t: _this_month(True, t, m[0])),
    _Form(_zh(r"(?:本|这个?)月"), lambda m, t: _this_month(False, t, m[0])),
    _Form(_zh(r"去年"), lambda m, t: _year(t.year - 1, m[0])),
    _Form(_zh(r"今年"), lambda m, t: _year(t.year, m[0])),
    _Form(
        _zh(
            rf"(?:(?P<year>\d{{4}})年)?(?P<month>{_ZH_MONTH})月(?P<day>\d{{1,2}}|[一二三四五六七八九十]{{1,3}})[日号]"
        ),
        _zh_day,
    ),
    _Form(
        _zh(rf"(?:(?P<year>\d{{4}})年)?(?P<month>{_ZH_MONTH})月份?(?!以?前)"),
        _zh_month,
    ),
)


def _zh_count(m: re.Match[str], today: date, make: object) -> Period | None:
    n = _zh_number(m["n"])
    if n is None:
        return None
    return make(n, _UNITS[m["unit"]], today, m[0])  # type: ignore[operator]


def _week(last: bool, today: date, text: str) -> Period:
    start = _week_of(today) - timedelta(weeks=1 if last else 0)
    return Period(start, start + timedelta(weeks=1), text)


def _this_month(last: bool, today: date, text: str) -> Period:
    first = _add_months(today.replace(day=1), -1 if last else 0)
    return Period(first, _add_months(first, 1), text)


def _year(year: int, text: str) -> Period:
    return Period(date(year, 1, 1), date(year + 1, 1, 1), text)


# -- reading --------------------------------------------------------------------------------------
def today_of(now: str | datetime | None = None) -> date:
    """The user's calendar date at `now` (clock.py rules)."""
    return date.fromisoformat(clock.today(now))


def parse_period(text: str, now: str | datetime | None = None) -> Period | None:
    """The period a whole value names (`last month`, `7d`, `三月`), or None when it is not
    one of the relative forms."""
    value = " ".join(text.split())
    if not value:
        return None
    today = today_of(now)
    for form in _FORMS:
        m = form.pattern.fullmatch(value)
        if m is None:
            # English patterns carry look-arounds; fullmatch on the bare value still works
            # because the value has no neighbours. A form that fails to match goes on.
            continue
        period = form.period(m, today)  # type: ignore[operator]
        if period is not None:
            return period
    return None


def find_period(question: str, now: str | datetime | None = None) -> Period | None:
    """The first time a question names ("... last month?", "上个月..."), or None."""
    today = today_of(now)
    found: list[tuple[int, int, Period]] = []
    for order, form in enumerate(_FORMS):
        if not form.in_questions:
            continue
        for m in form.pattern.finditer(question):
            period = form.period(m, today)  # type: ignore[operator]
            if period is not None:
                found.append((m.start(), order, period))
                break
    if not found:
        return None
    return min(found, key=lambda f: (f[0], f[1]))[2]


def resolve_bound(
    value: str | date | None, field: str, now: str | datetime | None = None
) -> str | None:
    """A `since`/`before` value as the bound the filter compares: an ISO date or instant as it
    is (normalised), a relative form as the first day of its period. Anything else is refused,
    naming the value and the forms that work."""
    if value is None or isinstance(value, date):
        return parse_date(value, field)
    text = str(value).strip()
    if not text:
        return None
    try:
        return parse_date(text, field)
    except InvalidInputError:
        period = parse_period(text, now)
        if period is None:
            raise InvalidInputError(
                f"{field} {value!r} is not a date.", hint=f"Use {FORMS}."
            ) from None
        return period.since


def resolve_range(
    since: str | date | None,
    before: str | date | None,
    now: str | datetime | None = None,
    names: tuple[str, str] = ("since", "before"),
) -> tuple[str | None, str | None]:
    """Both bounds resolved (see `resolve_bound`); a range whose `since` is not before its
    `before` is refused: nothing can be dated in it."""
    since_n = resolve_bound(since, names[0], now)
    before_n = resolve_bound(before, names[1], now)
    if since_n and before_n and clock.first_instant(since_n) >= clock.first_instant(before_n):
        a, b = (
            _named(n, v, r)
            for n, v, r in zip(names, (since, before), (since_n, before_n), strict=True)
        )
        same = clock.first_instant(since_n) == clock.first_instant(before_n)
        raise InvalidInputError(
            f"{a} {'is the same day as' if same else 'comes after'} {b}: no drawer can be "
            "dated in that range.",
            hint=f"{names[0]} is the first day kept and {names[1]} the first day left out: swap "
            "the two, or drop one.",
        )
    return since_n, before_n


def _named(name: str, value: object, resolved: str) -> str:
    """`--since 2026-05-01`, `since=last month (2026-04-01)`: a bound as the user gave it."""
    given = str(value).strip()
    shown = given if given == resolved else f"{given!r} ({resolved})"
    return f"{name} {shown}" if name.startswith("-") else f"{name}={shown}"
