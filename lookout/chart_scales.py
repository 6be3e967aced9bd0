"""The scales of Lookout's time charts (pure: no Django, no clock; times are passed in).

- The time range: a chosen period ending now, cut to the history there is
  (:func:`fit_range`), so that a short history fills the chart instead of sitting at its
  right edge.
- Buckets: each point of a chart is the increase of a counter over one bucket; buckets are
  a round length (:data:`BUCKET_STEPS`, never shorter than the one-minute sampling) and begin
  on the clock's round times, at most :data:`MAX_BUCKETS` of them.
- Time ticks: a round interval (minutes, hours, days) chosen so that the labels do not
  overlap on the width the chart has; a tick at midnight and every tick of a range of days
  is labelled with the date.
- Value ticks (:func:`value_scale`): a round step, 1, 2 or 5 times a power of ten for counts
  (whole numbers, at least 1), and 1, 2, 2.5 or 5 times a power of ten for amounts of any
  size (core-hours from a millionth to a million), with a top just above the largest value;
  an empty chart gets the axis 0 to 1. Labels never use exponent form (:func:`plain_number`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from decimal import Decimal

MINUTE, HOUR, DAY = timedelta(minutes=1), timedelta(hours=1), timedelta(days=1)
BUCKET_STEPS = tuple(
    [MINUTE * m for m in (1, 2, 5, 10, 15, 30)] + [HOUR * h for h in (1, 2, 3, 6, 12)] + [DAY]
)
TICK_STEPS = (*BUCKET_STEPS, DAY * 2, DAY * 7)
MAX_BUCKETS = 60
EPOCH = date(1970, 1, 1)
# An estimate of a label's width in ems (digits are about 0.6 em in the sans-serif faces
# browsers pick): generous, so that a label estimated to fit does fit.
EM_PER_CHAR = 0.66
TICK_GAP_EMS = 1.5
MAX_TICKS = 8


@dataclass(frozen=True)
class TimeRange:
    """[start, end) of a chart; ``fitted``: the start is the history's first sample, later
    than the chosen period's start."""

    start: datetime
    end: datetime
    fitted: bool


def fit_range(
    *, now: datetime, period: timedelta, first_sample: datetime | None, covers: bool
) -> TimeRange:
    """The range to chart for ``period`` ending ``now``: from the period's start when the
    history covers it (a sample older than the start exists) or there is no history, else
    from the first sample in the period."""
    start = now - period
    if covers or first_sample is None or first_sample <= start:
        return TimeRange(start=start, end=now, fitted=False)
    return TimeRange(start=min(first_sample, now), end=now, fitted=True)


def bucket_step(span: timedelta, *, max_buckets: int = MAX_BUCKETS) -> timedelta:
    """The shortest round bucket that cuts ``span`` into at most ``max_buckets``."""
    for step in BUCKET_STEPS:
        if span <= step * max_buckets:
            return step
    return BUCKET_STEPS[-1]


def floor_time(moment: datetime, step: timedelta, tz: tzinfo) -> datetime:
    """``moment`` rounded down to a multiple of ``step`` since its local midnight (``step``
    divides a day), or to a local midnight a whole number of ``step`` from 1970-01-01
    (``step`` of whole days): ticks and buckets stay put as time passes."""
    local = moment.astimezone(tz)
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    if step < DAY:
        return midnight + step * ((local - midnight) // step)
    days = step // DAY
    return midnight - DAY * ((midnight.date() - EPOCH).days % days)


def buckets(time_range: TimeRange, tz: tzinfo) -> tuple[list[datetime], timedelta]:
    """The starts of the buckets covering ``time_range`` (the first on or before its start,
    the last one still filling at its end) and their length."""
    step = bucket_step(time_range.end - time_range.start)
    first = floor_time(time_range.start, step, tz)
    count = max(1, math.ceil((time_range.end - first) / step))
    return [first + step * i for i in range(count)], step


def step_text(step: timedelta) -> str:
    """``10 minutes``, ``minute``, ``3 hours``, ``day``: for "decisions per ..."."""
    for unit, name in ((DAY, "day"), (HOUR, "hour"), (MINUTE, "minute")):
        if step >= unit and step % unit == timedelta(0):
            count = step // unit
            return name if count == 1 else f"{count} {name}s"
    return f"{step.total_seconds():g} seconds"


def tick_label(moment: datetime, step: timedelta, tz: tzinfo) -> str:
    local = moment.astimezone(tz)
    at_midnight = (local.hour, local.minute) == (0, 0)
    if step >= DAY or at_midnight:
        return f"{local:%b} {local.day}"
    return f"{local:%H:%M}"


def text_width(text: str, font: float) -> float:
    return len(text) * font * EM_PER_CHAR


def time_ticks(
    start: datetime,
    end: datetime,
    *,
    room: float,
    font: float,
    tz: tzinfo,
    max_ticks: int = MAX_TICKS,
) -> tuple[list[tuple[datetime, str]], timedelta]:
    """Ticks on [start, end] at the shortest round interval that gives at most ``max_ticks``
    whose labels fit side by side in ``room`` units (the plot's width), with their labels,
    and that interval."""
    span = (end - start).total_seconds()
    longer = (TICK_STEPS[-1] * k for k in range(2, 53))  # weeks, for ranges beyond a month
    for step in (*TICK_STEPS, *longer):
        if span / step.total_seconds() > max_ticks + 1:
            continue  # too many, certainly
        ticks = []
        moment = floor_time(start, step, tz)
        if moment < start:
            moment += step
        while moment <= end:
            ticks.append((moment, tick_label(moment, step, tz)))
            moment += step
        if not ticks or len(ticks) > max_ticks:
            continue
        widest = max(text_width(label, font) for _, label in ticks) + TICK_GAP_EMS * font
        spacing = room * step.total_seconds() / span if span else room
        if spacing >= widest:
            return ticks, step
    return [], TICK_STEPS[-1]


COUNT_FACTORS = (1, 2, 5)
AMOUNT_FACTORS = (Decimal(1), Decimal(2), Decimal("2.5"), Decimal(5))


@dataclass(frozen=True)
class ValueScale:
    """A value axis from 0 to ``top`` in steps of ``step``; ``ticks`` are (value, label)."""

    top: float
    step: float
    ticks: list[tuple[float, str]]


def plain_number(value: float, *, digits: int = 3) -> str:
    """``value`` as a person writes it: about ``digits`` significant digits, thousands
    separated, never in exponent form (``0.000042``, ``1.5``, ``12,346``, ``0``)."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{value:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _decimals(step: Decimal) -> int:
    """The decimals a tick label needs so that every multiple of ``step`` reads exactly."""
    return max(0, -step.normalize().as_tuple().exponent)


def value_scale(highest: float, *, whole: bool = True, max_steps: int = 5) -> ValueScale:
    """The value axis for values from 0 up to ``highest``: the smallest round step (see the
    module's docstring; whole numbers, at least 1, when ``whole``) that reaches a multiple at
    or above ``highest`` in at most ``max_steps`` steps; the top is that multiple. With
    nothing above zero the axis is 0 to 1 (in steps of 1 for counts, 0.25 for amounts)."""
    if not highest > 0:
        step, top = (Decimal(1), Decimal(1)) if whole else (Decimal("0.25"), Decimal(1))
    else:
        # Twelve significant digits: a sum of floats (0.30000000000000004) reads as it should.
        wanted = Decimal(f"{highest:.12g}")
        power = 0 if whole else math.floor(math.log10(highest)) - 1
        factors = COUNT_FACTORS if whole else AMOUNT_FACTORS
        while True:
            found = next(
                (
                    Decimal(factor).scaleb(power)
                    for factor in factors
                    if math.ceil(wanted / Decimal(factor).scaleb(power)) <= max_steps
                ),
                None,
            )
            if found is not None:
                step, top = found, found * math.ceil(wanted / found)
                break
            power += 1
    decimals = _decimals(step)
    count = int(top / step)
    ticks = [(float(step * i), f"{step * i:,.{decimals}f}" if i else "0") for i in range(count + 1)]
    return ValueScale(top=float(top), step=float(step), ticks=ticks)


def y_scale(highest: int, *, max_steps: int = 5) -> tuple[int, int]:
    """The top of a count axis and its tick step (:func:`value_scale` for whole numbers)."""
    scale = value_scale(highest, max_steps=max_steps)
    return int(scale.top), int(scale.step)
