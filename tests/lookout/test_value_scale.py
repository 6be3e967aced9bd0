"""The value axis of Lookout's charts (lookout.chart_scales.value_scale, plain_number): a round
top just above the largest value for amounts of any size, whole steps for counts, a labelled
0-to-1 axis when everything is zero, and labels never in exponent form."""

from __future__ import annotations

import re

import pytest

from lookout.chart_scales import plain_number, value_scale

EXPONENT = re.compile(r"\d[eE][+-]?\d")


@pytest.mark.parametrize(
    ("highest", "top", "step", "labels"),
    [
        (0.0, 1, 0.25, ["0", "0.25", "0.50", "0.75", "1.00"]),
        (1e-6, 1e-6, 2e-7, ["0", "0.0000002", "0.0000004", "0.0000006", "0.0000008", "0.0000010"]),
        (7e-05, 8e-05, 2e-05, ["0", "0.00002", "0.00004", "0.00006", "0.00008"]),
        (0.00042, 0.0005, 0.0001, ["0", "0.0001", "0.0002", "0.0003", "0.0004", "0.0005"]),
        (0.1 + 0.2, 0.3, 0.1, ["0", "0.1", "0.2", "0.3"]),  # 0.30000000000000004
        (0.9, 1, 0.2, ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]),
        (1.01, 1.25, 0.25, ["0", "0.25", "0.50", "0.75", "1.00", "1.25"]),
        (3.7, 4, 1, ["0", "1", "2", "3", "4"]),
        (99, 100, 20, ["0", "20", "40", "60", "80", "100"]),
        (123_456, 125_000, 25_000, ["0", "25,000", "50,000", "75,000", "100,000", "125,000"]),
        (1e6, 1e6, 2e5, ["0", "200,000", "400,000", "600,000", "800,000", "1,000,000"]),
    ],
)
def test_amounts_get_a_round_top_just_above_the_largest_value(highest, top, step, labels):
    scale = value_scale(highest, whole=False)
    assert scale.top == pytest.approx(top) and scale.step == pytest.approx(step)
    assert [label for _, label in scale.ticks] == labels
    assert scale.top >= highest * (1 - 1e-9)
    if highest:
        assert scale.top <= highest * 2.5  # the data fills at least 40% of the axis


@pytest.mark.parametrize("exponent", range(-6, 7))
@pytest.mark.parametrize("mantissa", [1.0, 1.3, 2.2, 4.9, 7.3, 9.99])
def test_every_magnitude_fits_in_five_steps_with_plain_labels(mantissa, exponent):
    highest = mantissa * 10.0**exponent
    scale = value_scale(highest, whole=False)
    values = [value for value, _ in scale.ticks]
    assert values[0] == 0 and values[-1] == pytest.approx(scale.top)
    assert 2 <= len(values) <= 6
    assert highest * (1 - 1e-9) <= scale.top <= highest * 2.5
    for value, label in scale.ticks:
        assert not EXPONENT.search(label), label
        assert float(label.replace(",", "")) == pytest.approx(value, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(
    ("highest", "top", "step"),
    [(0, 1, 1), (1, 1, 1), (6, 6, 2), (23, 25, 5), (1001, 1500, 500)],
)
def test_counts_keep_whole_steps(highest, top, step):
    scale = value_scale(highest)
    assert (scale.top, scale.step) == (top, step)
    assert all(float(v).is_integer() for v, _ in scale.ticks)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (7e-05, "0.00007"),
        (4.2e-05, "0.000042"),
        (1.5, "1.5"),
        (2.0, "2"),
        (123.456, "123"),
        (12_345.6, "12,346"),
        (1.2e10, "12,000,000,000"),
        (-0.5, "-0.5"),
    ],
)
def test_plain_numbers_never_use_exponent_form(value, text):
    assert plain_number(value) == text
