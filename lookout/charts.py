"""Line charts drawn on the server as SVG geometry (no JavaScript): the template draws the
axes, ticks, lines and legend from a ``LineChart``, and the same numbers as a table."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from armada.services.metric_history import Series

WIDTH, HEIGHT = 560, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 12, 34
# Distinguishable for the common forms of colour blindness (Okabe and Ito), dark enough on
# white; every line also has a distinct dash pattern, so colour is never the only cue.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#000000")
DASHES = ("", "6 3", "2 3", "8 3 2 3", "1 2", "10 4", "4 4")
MAX_LINES = 7


@dataclass
class Line:
    label: str
    points: str
    color: str
    dash: str
    values: list[int]
    total: int


@dataclass
class Tick:
    position: float
    label: str


@dataclass
class LineChart:
    title: str
    chart_id: str
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    top: int = TOP
    plot_right: int = WIDTH - RIGHT
    plot_bottom: int = HEIGHT - BOTTOM
    lines: list[Line] = field(default_factory=list)
    x_ticks: list[Tick] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    bucket_labels: list[str] = field(default_factory=list)
    others: int = 0  # lines left out (only the largest MAX_LINES are drawn)

    @property
    def empty(self) -> bool:
        return not any(line.total for line in self.lines)

    @property
    def table_rows(self) -> list[tuple[str, list[int]]]:
        """The data table: per bucket, its start and each line's value."""
        return [
            (label, [line.values[i] for line in self.lines])
            for i, label in enumerate(self.bucket_labels)
        ]

    @property
    def summary(self) -> str:
        if self.empty:
            return f"{self.title}: nothing in this period."
        parts = [f"{line.label} {line.total}" for line in self.lines]
        return f"{self.title}. Totals: " + ", ".join(parts) + "."


def nice_max(value: int) -> int:
    """A round upper bound for the y axis: 1, 2, 5 times a power of ten (at least 1)."""
    if value <= 1:
        return 1
    power = 10 ** math.floor(math.log10(value))
    for factor in (1, 2, 5, 10):
        if value <= factor * power:
            return factor * power
    return 10 * power


def line_chart(
    *, title: str, chart_id: str, starts: Sequence[datetime], series: Sequence[Series]
) -> LineChart:
    """A chart of ``series`` (increases per bucket) over the buckets starting at ``starts``."""
    chart = LineChart(title=title, chart_id=chart_id)
    shown, chart.others = list(series[:MAX_LINES]), max(0, len(series) - MAX_LINES)
    buckets = len(starts)
    top = nice_max(max((max(s.values) for s in shown if s.values), default=0))
    plot_w = chart.plot_right - chart.left
    plot_h = chart.plot_bottom - chart.top
    span_days = (starts[-1] - starts[0]).total_seconds() / 86400 if buckets > 1 else 0
    fmt = "%m-%d %H:%M" if span_days >= 1 else "%H:%M"
    chart.bucket_labels = [s.strftime(fmt) for s in starts]

    def x(i: int) -> float:
        return chart.left + (plot_w * i / (buckets - 1) if buckets > 1 else plot_w / 2)

    def y(v: float) -> float:
        return chart.plot_bottom - plot_h * v / top

    for index, s in enumerate(shown):
        chart.lines.append(
            Line(
                label=s.label,
                points=" ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(s.values)),
                color=PALETTE[index % len(PALETTE)],
                dash=DASHES[index % len(DASHES)],
                values=s.values,
                total=s.total,
            )
        )
    # 1, 2 and 5 times a power of ten split into 5, 4 and 5 steps: round numbers on every tick.
    steps = 4 if str(top)[0] == "2" else 5
    for step in range(steps + 1):
        value = top * step / steps
        label = f"{value:g}" if value == int(value) else f"{value:.1f}"
        chart.y_ticks.append(Tick(position=round(y(value), 1), label=label))
    for i in sorted({0, buckets // 3, 2 * buckets // 3, buckets - 1}):
        chart.x_ticks.append(Tick(position=round(x(i), 1), label=chart.bucket_labels[i]))
    return chart
