"""Line charts drawn on the server as SVG (no JavaScript): ``line_chart`` turns the counts per
bucket of a few lines into a ``LineChart``, which ``templates/lookout/_chart.html`` draws with
its axes, ticks, gridlines and legend, and shows as a table of the same numbers.

A chart is drawn in three layouts (``LAYOUTS``: wide, medium and narrow viewBoxes) and the
page shows the one that suits the width its chart has (container queries in charts.css):
an SVG scales its text with its width, so one viewBox cannot be readable both on a phone
and across a wide screen. Every text of every layout lies inside its viewBox: margins leave
room for the value labels and half of a time label, and ticks are spaced by their labels'
width. Lines differ by colour, dash pattern and marker shape, so colour is never the only
cue; a line of one point is a marker, never a line from nowhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo

from armada.services.metric_history import Series
from lookout.chart_scales import DAY, plain_number, step_text, text_width, time_ticks, value_scale

# Distinguishable for the common forms of colour blindness (Okabe and Ito), dark enough on
# white; every line also has its own dash pattern and marker shape.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#000000", "#56B4E9", "#E69F00")
DASHES = ("", "7 4", "2 3", "9 3 2 3", "1 3", "12 4", "4 4")
MARKERS = ("circle", "square", "triangle", "diamond", "triangle-down", "plus", "bowtie")
MAX_LINES = 7
MARKER_SIZE = 3.5
MIN_MARKER_SPACING = 9.0  # closer points than this get no markers (the line says enough)


@dataclass(frozen=True)
class Layout:
    """One viewBox a chart is drawn in; ``font`` is its text size in viewBox units."""

    name: str
    width: int
    height: int
    font: int = 13
    right: int = 30


# Shown at chart widths (charts.css) of 880 px and more, 520 to 880 px, and below 520 px:
# the text is then 11 to 16 px high at most widths.
LAYOUTS = (
    Layout("wide", 1100, 340, font=14),
    Layout("medium", 680, 320),
    Layout("narrow", 400, 300),
)


@dataclass
class Line:
    """One line: its counts per bucket, its total charted, and its total in the range up to
    now (``live``): the charted total with what the counters gained since the last sample.
    Both count from the start of the range, not the counters' own values (their totals
    since they started), and the page words them so."""

    label: str
    color: str
    dash: str
    marker: str
    values: list[float]
    total: float
    live: float

    @property
    def unsampled(self) -> float:
        return self.live - self.total

    @property
    def total_text(self) -> str:
        return plain_number(self.total, digits=4)

    @property
    def live_text(self) -> str:
        return plain_number(self.live, digits=4)

    @property
    def unsampled_text(self) -> str:
        return plain_number(self.unsampled, digits=4)

    @property
    def swatch_marker(self) -> str:
        return marker_path(self.marker, 16, 6, MARKER_SIZE)


@dataclass(frozen=True)
class Label:
    x: float
    y: float
    text: str
    anchor: str = "middle"


@dataclass
class DrawnLine:
    line: Line
    points: str  # polyline points; "" when there is one point
    markers: str  # one path of every marker; "" when the points are too close


@dataclass
class View:
    """A chart's geometry in one layout."""

    layout: Layout
    left: float
    top: float
    plot_right: float
    plot_bottom: float
    x_ticks: list[Label] = field(default_factory=list)
    y_ticks: list[Label] = field(default_factory=list)
    lines: list[DrawnLine] = field(default_factory=list)
    y_title: Label | None = None
    x_title: Label | None = None

    @property
    def texts(self) -> list[Label]:
        return [*self.x_ticks, *self.y_ticks, self.y_title, self.x_title]

    @property
    def tick_bottom(self) -> float:
        return self.plot_bottom + 5


@dataclass
class LineChart:
    title: str
    chart_id: str
    y_title: str
    lines: list[Line] = field(default_factory=list)
    more_lines: list[Line] = field(default_factory=list)  # in the table, not drawn
    views: list[View] = field(default_factory=list)
    bucket_labels: list[str] = field(default_factory=list)
    summary: str = ""
    whole: bool = True  # counts; False: amounts (resource-hours), any size

    @property
    def others(self) -> int:
        return len(self.more_lines)

    @property
    def empty(self) -> bool:
        """Nothing counted in the range (the chart says so in words)."""
        return not any(line.total for line in self.lines)

    @property
    def table_lines(self) -> list[Line]:
        return [*self.lines, *self.more_lines]

    @property
    def table_rows(self) -> list[tuple[str, list[str]]]:
        """The data table: per bucket, its start and each line's value as a person reads it."""
        lines = self.table_lines
        return [
            (label, [plain_number(line.values[i], digits=4) for line in lines])
            for i, label in enumerate(self.bucket_labels)
        ]


def marker_path(shape: str, x: float, y: float, r: float) -> str:
    """SVG path data of a marker of ``shape`` centred on (x, y), about ``2r`` across."""
    x, y = round(x, 1), round(y, 1)
    s = round(r * 0.9, 1)
    t = round(r * 1.25, 1)
    h = round(r * 0.4, 1)
    shapes = {
        "circle": f"M{x - r:g},{y:g}a{r:g},{r:g} 0 1,0 {2 * r:g},0a{r:g},{r:g} 0 1,0 {-2 * r:g},0Z",
        "square": f"M{x - s:g},{y - s:g}h{2 * s:g}v{2 * s:g}h{-2 * s:g}Z",
        "triangle": f"M{x:g},{y - t:g}L{x + t:g},{y + r * 0.85:g}L{x - t:g},{y + r * 0.85:g}Z",
        "triangle-down": f"M{x:g},{y + t:g}L{x + t:g},{y - r * 0.85:g}L{x - t:g},{y - r * 0.85:g}Z",
        "diamond": f"M{x:g},{y - t:g}L{x + t:g},{y:g}L{x:g},{y + t:g}L{x - t:g},{y:g}Z",
        "plus": (
            f"M{x - h:g},{y - t:g}h{2 * h:g}v{t - h:g}h{t - h:g}v{2 * h:g}h{h - t:g}"
            f"v{t - h:g}h{-2 * h:g}v{h - t:g}h{h - t:g}v{-2 * h:g}h{t - h:g}Z"
        ),
        "bowtie": f"M{x - s:g},{y - s:g}L{x + s:g},{y + s:g}V{y - s:g}L{x - s:g},{y + s:g}Z",
    }
    return shapes[shape]


def _fmt(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _draw(
    chart: LineChart,
    layout: Layout,
    *,
    times: Sequence[datetime],
    domain: tuple[datetime, datetime],
    tz: tzinfo,
) -> View:
    font = layout.font
    highest = max((max(line.values) for line in chart.lines if line.values), default=0)
    scale = value_scale(highest, whole=chart.whole)
    top_value = scale.top
    widest = max(text_width(label, font) for _, label in scale.ticks)
    view = View(
        layout=layout,
        left=round(widest + 12, 1),
        top=round(font * 2.2, 1),
        plot_right=layout.width - layout.right,
        plot_bottom=round(layout.height - font * 3.6, 1),
    )
    plot_w, plot_h = view.plot_right - view.left, view.plot_bottom - view.top
    start, end = domain
    span = (end - start).total_seconds()

    def x(moment: datetime) -> float:
        return round(view.left + plot_w * (moment - start).total_seconds() / span, 1)

    def y(value: float) -> float:
        return round(view.plot_bottom - plot_h * value / top_value, 1)

    view.y_ticks = [
        Label(x=view.left - 6, y=y(value), text=label, anchor="end") for value, label in scale.ticks
    ]
    ticks, _ = time_ticks(start, end, room=plot_w, font=font, tz=tz)
    for moment, text in ticks:
        position, half = x(moment), text_width(text, font) / 2
        # Kept whole inside the viewBox: a label too near an edge is aligned to its tick.
        anchor = "end" if position + half > layout.width else "middle"
        anchor = "start" if position - half < 0 else anchor
        view.x_ticks.append(
            Label(x=position, y=view.plot_bottom + font + 6, text=text, anchor=anchor)
        )
    view.y_title = Label(x=0, y=font, text=chart.y_title, anchor="start")
    zone = end.astimezone(tz).tzname() or ""
    view.x_title = Label(
        x=round(view.left + plot_w / 2, 1),
        y=layout.height - 4,
        text=f"Time ({zone})" if zone else "Time",
    )
    xs = [x(moment) for moment in times]
    spacing = min((b - a for a, b in zip(xs, xs[1:], strict=False)), default=plot_w)
    for line in chart.lines:
        points = [(px, y(v)) for px, v in zip(xs, line.values, strict=True)]
        markers = ""
        if len(points) == 1 or spacing >= MIN_MARKER_SPACING:
            markers = "".join(marker_path(line.marker, px, py, MARKER_SIZE) for px, py in points)
        polyline = " ".join(f"{_fmt(px)},{_fmt(py)}" for px, py in points)
        view.lines.append(
            DrawnLine(line=line, points=polyline if len(points) > 1 else "", markers=markers)
        )
    return view


def line_chart(
    *,
    title: str,
    chart_id: str,
    quantity: str,
    starts: Sequence[datetime],
    step: timedelta,
    end: datetime,
    series: Sequence[Series],
    live: Mapping[str, int] | None = None,
    order: Sequence[str] = (),
    tz: tzinfo,
    whole: bool = True,
) -> LineChart:
    """A chart of ``series`` (counts per bucket of length ``step`` starting at ``starts``; the
    last bucket is still filling at ``end``, now). ``quantity`` names what is counted
    ("Decisions"); ``live`` is, per line, what the counters gained since the last sample
    (lines only there get a line of zeros); ``order`` puts the lines it names first, in
    its order (so that a line keeps its colour from chart to chart), the rest by total;
    ``whole``: the values are counts (False: amounts of any size, scaled to fit)."""
    live = dict(live or {})
    values = {s.label: list(s.values) for s in series}
    for label in live:
        values.setdefault(label, [0] * len(starts))
    rank = {label: i for i, label in enumerate(order)}
    labels = sorted(values, key=lambda lb: (rank.get(lb, len(rank)), -sum(values[lb]), lb))
    # A line named in ``order`` has its style by its place there, present or not.
    styles = iter(range(len(rank), len(labels) + len(rank)))
    style_of = {label: rank[label] if label in rank else next(styles) for label in labels}
    chart = LineChart(
        title=title, chart_id=chart_id, y_title=f"{quantity} per {step_text(step)}", whole=whole
    )
    for index, label in enumerate(labels):
        # Six significant digits: sums of floats (resource-hours) gather noise digits.
        raw, style = sum(values[label]), style_of[label]
        total = raw if isinstance(raw, int) else float(f"{raw:.6g}")
        line = Line(
            label=label,
            color=PALETTE[style % len(PALETTE)],
            dash=DASHES[style % len(DASHES)],
            marker=MARKERS[style % len(MARKERS)],
            values=values[label],
            total=total,
            live=total + live.get(label, 0),
        )
        (chart.lines if index < MAX_LINES else chart.more_lines).append(line)
    domain_end = max(end, starts[0] + step)
    times = [a + (min(a + step, domain_end) - a) / 2 for a in starts]
    long_range = domain_end - starts[0] > DAY
    chart.bucket_labels = [
        f"{a.astimezone(tz):%b} {a.astimezone(tz).day} {a.astimezone(tz):%H:%M}"
        if long_range
        else f"{a.astimezone(tz):%H:%M}"
        for a in starts
    ]
    if not chart.empty:
        chart.views = [
            _draw(chart, layout, times=times, domain=(starts[0], domain_end), tz=tz)
            for layout in LAYOUTS
        ]
    chart.summary = _summary(chart, step)
    return chart


def _summary(chart: LineChart, step: timedelta) -> str:
    if chart.empty:
        return f"{chart.title}: nothing counted in this range."
    totals = ", ".join(f"{line.label} {line.total_text}" for line in chart.table_lines)
    peak = max(chart.table_lines, key=lambda line: max(line.values))
    at = chart.bucket_labels[peak.values.index(max(peak.values))]
    return (
        f"{chart.title}, counted per {step_text(step)} (not a running total). "
        f"Totals: {totals}. Highest: {plain_number(max(peak.values), digits=4)} {peak.label} in the {step_text(step)} "
        f"from {at}."
    )
