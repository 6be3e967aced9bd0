"""The geometry of Lookout's time charts (lookout.chart_scales, lookout.charts), without a
database: fitting the range to the history, buckets, time ticks for minutes, hours and
days, round value ticks, every text inside its viewBox, one point, no data, markers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from armada.services.metric_history import Series
from lookout.chart_scales import (
    DAY,
    HOUR,
    MINUTE,
    TimeRange,
    bucket_step,
    buckets,
    fit_range,
    step_text,
    text_width,
    time_ticks,
    y_scale,
)
from lookout.charts import LAYOUTS, LineChart, line_chart

NOW = datetime(2026, 1, 7, 12, 3, 4, tzinfo=UTC)


@pytest.mark.parametrize(
    ("case", "first_sample", "covers", "start", "fitted"),
    [
        ("a 20-minute history fills the chart", NOW - 20 * MINUTE, False, NOW - 20 * MINUTE, True),
        ("history older than the period", NOW - 20 * MINUTE, True, NOW - 6 * HOUR, False),
        ("no history at all", None, False, NOW - 6 * HOUR, False),
        ("first sample at the period's start", NOW - 6 * HOUR, False, NOW - 6 * HOUR, False),
    ],
)
def test_the_range_is_fitted_to_the_history(case, first_sample, covers, start, fitted):
    got = fit_range(now=NOW, period=6 * HOUR, first_sample=first_sample, covers=covers)
    assert got == TimeRange(start=start, end=NOW, fitted=fitted), case


@pytest.mark.parametrize(
    ("span", "step", "text"),
    [
        (20 * MINUTE, MINUTE, "minute"),
        (HOUR, MINUTE, "minute"),
        (HOUR + MINUTE, 2 * MINUTE, "2 minutes"),
        (6 * HOUR, 10 * MINUTE, "10 minutes"),
        (DAY, 30 * MINUTE, "30 minutes"),
        (7 * DAY, 3 * HOUR, "3 hours"),
    ],
)
def test_buckets_are_round_and_at_most_sixty(span, step, text):
    assert bucket_step(span) == step
    assert step_text(step) == text
    starts, got = buckets(TimeRange(start=NOW - span, end=NOW, fitted=False), UTC)
    assert got == step
    assert starts[0] <= NOW - span < starts[0] + step  # the first holds the range's start
    assert starts[-1] <= NOW < starts[-1] + step  # the last is still filling
    assert all(b - a == step for a, b in zip(starts, starts[1:], strict=False))
    assert len(starts) <= 62
    # On the clock's round times: 12:00, 12:10 ...; days at midnight.
    assert (starts[0] - starts[0].replace(hour=0, minute=0, second=0)) % step == timedelta(0)


@pytest.mark.parametrize(
    ("span", "layout", "step", "labels"),
    [
        (20 * MINUTE, "wide", 5 * MINUTE, ["11:45", "11:50", "11:55", "12:00"]),
        (20 * MINUTE, "narrow", 5 * MINUTE, ["11:45", "11:50", "11:55", "12:00"]),
        (6 * HOUR, "wide", HOUR, ["07:00", "08:00", "09:00", "10:00", "11:00", "12:00"]),
        (6 * HOUR, "narrow", 2 * HOUR, ["08:00", "10:00", "12:00"]),
        (
            DAY,
            "wide",
            3 * HOUR,
            ["15:00", "18:00", "21:00", "Jan 7", "03:00", "06:00", "09:00", "12:00"],
        ),
        (7 * DAY, "wide", DAY, ["Jan 1", "Jan 2", "Jan 3", "Jan 4", "Jan 5", "Jan 6", "Jan 7"]),
        (7 * DAY, "narrow", 2 * DAY, ["Jan 1", "Jan 3", "Jan 5", "Jan 7"]),
    ],
)
def test_time_ticks_by_range_minutes_hours_days_with_dates(span, layout, step, labels):
    width = {"wide": 1040, "narrow": 340}[layout]
    ticks, got = time_ticks(NOW - span, NOW, room=width, font=13, tz=UTC)
    assert got == step
    assert [label for _, label in ticks] == labels
    assert all(NOW - span <= moment <= NOW for moment, _ in ticks)
    # Spaced wider than the widest label.
    gap = width * step.total_seconds() / span.total_seconds()
    assert gap > max(text_width(label, 13) for label in labels)


@pytest.mark.parametrize(
    ("highest", "top", "step"),
    [(0, 1, 1), (1, 1, 1), (4, 4, 1), (5, 5, 1), (6, 6, 2), (7, 8, 2), (11, 15, 5), (23, 25, 5)]
    + [(73, 80, 20), (480, 500, 100), (1001, 1500, 500)],
)
def test_value_ticks_are_round_whole_numbers(highest, top, step):
    assert y_scale(highest) == (top, step)
    assert top >= highest and top // step <= 5
    assert str(step).strip("0") in ("1", "2", "5")


def chart_over(span: timedelta, values_of, *, lines: int = 2, live=None) -> LineChart:
    starts, step = buckets(TimeRange(start=NOW - span, end=NOW, fitted=False), UTC)
    series = [
        Series(label=f"line {n}", values=[values_of(i, n) for i in range(len(starts))])
        for n in range(lines)
    ]
    return line_chart(
        title="Policy ml: decisions",
        chart_id="c",
        quantity="Decisions",
        starts=starts,
        step=step,
        end=NOW,
        series=[s for s in series if s.total],
        live=live,
        tz=UTC,
    )


def inside(text, layout) -> bool:
    """The label's box (by the width estimate the layout uses) within the viewBox."""
    width = text_width(text.text, layout.font)
    left = {"start": text.x, "middle": text.x - width / 2, "end": text.x - width}[text.anchor]
    return left >= 0 and left + width <= layout.width and layout.font <= text.y <= layout.height


@pytest.mark.parametrize("span", [20 * MINUTE, 6 * HOUR, DAY, 7 * DAY, 30 * 24 * HOUR])
@pytest.mark.parametrize("scale", [1, 37, 12_345])
def test_every_label_lies_inside_the_viewbox(span, scale):
    chart = chart_over(span, lambda i, n: (i * 7 + n * 3) % 11 * scale)
    assert [view.layout for view in chart.views] == list(LAYOUTS)
    for view in chart.views:
        assert view.x_ticks and len(view.y_ticks) >= 2
        for text in view.texts:
            assert inside(text, view.layout), (view.layout.name, text)
        # Ticks sit on the plot; the value labels fit left of it.
        assert all(view.left <= t.x <= view.plot_right for t in view.x_ticks)
        assert view.y_ticks[0].y == view.plot_bottom and view.y_ticks[-1].y == view.top
        # Room for the widest label: ticks do not overlap.
        xs = [t.x for t in view.x_ticks]
        widest = max(text_width(t.text, view.layout.font) for t in view.x_ticks)
        assert all(b - a > widest for a, b in zip(xs, xs[1:], strict=False))


def test_the_points_span_the_plot_and_the_axes_are_titled():
    chart = chart_over(20 * MINUTE, lambda i, n: i if n == 0 else 0, lines=1)
    wide = chart.views[0]
    assert wide.y_title.text == "Decisions per minute"
    assert wide.x_title.text == "Time (UTC)"
    [drawn] = wide.lines
    points = [tuple(map(float, p.split(","))) for p in drawn.points.split()]
    plot_w = wide.plot_right - wide.left
    # Bucket midpoints: the first is within one bucket of the left edge, the last of now.
    assert wide.left < points[0][0] < wide.left + plot_w / len(points)
    assert wide.plot_right - plot_w / len(points) < points[-1][0] < wide.plot_right
    assert points[0][1] == wide.plot_bottom  # 0
    assert points[-1][1] == wide.top  # the highest value is the top tick here
    assert chart.summary.startswith("Policy ml: decisions, counted per minute (not a running")


def test_one_sample_is_a_marker_not_a_line():
    starts = [NOW.replace(second=0)]
    chart = line_chart(
        title="t",
        chart_id="c",
        quantity="Decisions",
        starts=starts,
        step=MINUTE,
        end=NOW,
        series=[Series(label="retry", values=[3])],
        tz=UTC,
    )
    for view in chart.views:
        [drawn] = view.lines
        assert drawn.points == ""
        assert drawn.markers.startswith("M") and drawn.markers.count("M") == 1
    assert chart.table_rows == [("12:03", ["3"])]


def test_no_data_is_said_in_words_and_draws_nothing():
    chart = chart_over(HOUR, lambda i, n: 0)
    assert chart.empty and chart.views == [] and chart.lines == []
    assert chart.summary == "Policy ml: decisions: nothing counted in this range."
    # Gains not sampled yet make lines (of zeros) with their live totals, still not drawn.
    chart = chart_over(HOUR, lambda i, n: 0, live={"retry": 2})
    assert chart.empty and chart.views == []
    assert [(line.label, line.total, line.live) for line in chart.lines] == [("retry", 0, 2)]


def test_lines_differ_by_colour_dash_and_marker_and_keep_their_order():
    starts, step = buckets(TimeRange(start=NOW - HOUR, end=NOW, fitted=False), UTC)
    n = len(starts)
    chart = line_chart(
        title="t",
        chart_id="c",
        quantity="Decisions",
        starts=starts,
        step=step,
        end=NOW,
        series=[Series(label="fail", values=[2] * n), Series(label="retry", values=[1] * n)],
        live={"retry": 3},
        order=("retry", "fail"),
        tz=UTC,
    )
    retry, fail = chart.lines
    assert (retry.label, retry.total, retry.live, retry.unsampled) == ("retry", n, n + 3, 3)
    assert (fail.label, fail.live) == ("fail", 2 * n)
    assert retry.color != fail.color and retry.dash != fail.dash and retry.marker != fail.marker
    # Markers where the points are far enough apart (wide), not where they crowd (narrow).
    wide, _, narrow = chart.views
    assert all(drawn.markers for drawn in wide.lines)
    assert not any(drawn.markers for drawn in narrow.lines)
    assert all(drawn.points for drawn in narrow.lines)


def test_lines_past_seven_go_to_the_table_only():
    chart = chart_over(HOUR, lambda i, n: n + 1, lines=9)
    assert len(chart.lines) == 7 and chart.others == 2
    assert len(chart.table_rows[0][1]) == 9
    assert all(len(view.lines) == 7 for view in chart.views)


def test_a_line_named_in_the_order_keeps_its_style_when_alone():
    starts, step = buckets(TimeRange(start=NOW - HOUR, end=NOW, fitted=False), UTC)

    def only(label: str):
        return line_chart(
            title="t",
            chart_id="c",
            quantity="Decisions",
            starts=starts,
            step=step,
            end=NOW,
            series=[Series(label=label, values=[1] * len(starts))],
            order=("retry", "fail"),
            tz=UTC,
        ).lines[0]

    retry, fail = only("retry"), only("fail")
    assert (fail.color, fail.dash, fail.marker) != (retry.color, retry.dash, retry.marker)
    assert fail.marker == "square" and retry.marker == "circle"
