"""armada.core.quantity: exact milli-unit quantities and resource vectors."""

from __future__ import annotations

import pytest

from armada.core.quantity import (
    CPU,
    EPHEMERAL_STORAGE,
    GPU,
    MAX_MILLI,
    MEMORY,
    Resources,
    format_quantity,
    parse_quantity,
)

KI = 1024
MI = 1024**2
GI = 1024**3


def r(**values: str) -> Resources:
    """Resources from quantity strings; ``gpu`` stands for nvidia.com/gpu."""
    return Resources.parse({(GPU if k == "gpu" else k): v for k, v in values.items()})


# --- parse_quantity ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("1", 1000),
        ("0", 0),
        ("2", 2000),
        ("500m", 500),
        ("1m", 1),
        ("1500m", 1500),
        ("0.5", 500),
        ("1.", 1000),
        (".5", 500),
        ("+1", 1000),
        ("+.5", 500),
        ("1k", 1000 * 1000),
        ("1M", 10**6 * 1000),
        ("1G", 10**9 * 1000),
        ("1.5G", 1_500_000_000 * 1000),
        ("1T", 10**12 * 1000),
        ("1Ki", KI * 1000),
        ("512Mi", 512 * MI * 1000),
        ("1Gi", GI * 1000),
        ("32Gi", 32 * GI * 1000),
        ("1.5Gi", 3 * GI // 2 * 1000),
        ("1Ti", 1024**4 * 1000),
        ("1e3", 1000 * 1000),
        ("1E3", 1000 * 1000),
        ("1e+3", 1000 * 1000),
        ("1e-3", 1),
        ("2.5e2", 250 * 1000),
        ("  4Gi  ", 4 * GI * 1000),
        ("0.5m", 1),  # below a milli-unit rounds up, as Kubernetes does
        ("0.0001", 1),
        (f"{MAX_MILLI}m", MAX_MILLI),
    ],
    ids=lambda v: repr(v) if isinstance(v, str) else None,
)
def test_parse_quantity_strings(text, milli):
    assert parse_quantity(text) == milli


@pytest.mark.parametrize(
    ("value", "milli"),
    [(1, 1000), (0, 0), (16, 16000), (0.5, 500), (1.5, 1500), (2.0, 2000), (1e3, 1_000_000)],
    ids=["int-1", "int-0", "int-16", "float-0.5", "float-1.5", "float-2.0", "float-1e3"],
)
def test_parse_quantity_numbers(value, milli):
    assert parse_quantity(value) == milli


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("", "is not a quantity"),
        ("abc", "is not a quantity"),
        ("-1", "is not a quantity"),
        ("1K", "is not a quantity"),  # the decimal kilo suffix is lower-case
        ("1ki", "is not a quantity"),
        ("1GiB", "is not a quantity"),
        ("1 Gi", "is not a quantity"),
        ("Gi", "is not a quantity"),
        ("1.2.3", "is not a quantity"),
        ("0x10", "is not a quantity"),
        ("1e", "is not a quantity"),
        ("++1", "is not a quantity"),
        (".", "is not a quantity"),
        ("1e3Gi", "is not a quantity"),
        (-1, "is not a quantity"),
        (float("inf"), "is not a quantity"),
        (float("nan"), "is not a quantity"),
        (-0.5, "is not a quantity"),
        (f"{MAX_MILLI + 1}m", "is too large"),
        ("1Ei", "is too large"),
        ("1E", "is too large"),  # the exa suffix, not an exponent
        ("1e30", "is too large"),
        ("1e999999999", "is not a quantity"),  # exponent beyond Decimal's range
        (True, "expected a quantity"),
        (None, "expected a quantity such as '1', '500m' or '4Gi', got NoneType"),
        ([1], "got list"),
    ],
    ids=repr,
)
def test_parse_quantity_rejects(value, fragment):
    with pytest.raises(ValueError) as info:
        parse_quantity(value)
    assert fragment in str(info.value)


@pytest.mark.parametrize("text", ["abc", "1K", "-1", ""])
def test_parse_quantity_error_names_the_value_and_shows_the_format(text):
    with pytest.raises(ValueError) as info:
        parse_quantity(text)
    message = str(info.value)
    assert repr(text) in message
    assert "'500m'" in message and "'4Gi'" in message


def test_parse_quantity_is_exact_for_large_binary_values():
    # Exact integer arithmetic: no float rounding on values larger than 2**53.
    assert parse_quantity("8191Ti") == 8191 * 1024**4 * 1000
    assert parse_quantity("7Pi") == 7 * 1024**5 * 1000


# --- format_quantity --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("milli", "resource", "text"),
    [
        (1000, CPU, "1"),
        (16000, CPU, "16"),
        (500, CPU, "500m"),
        (1500, CPU, "1500m"),
        (0, CPU, "0"),
        (2000, GPU, "2"),
        (0, MEMORY, "0"),
        (1000 * KI, MEMORY, "1Ki"),
        (512 * MI * 1000, MEMORY, "512Mi"),
        (1536 * MI * 1000, MEMORY, "1536Mi"),
        (GI * 1000, MEMORY, "1Gi"),
        (32 * GI * 1000, MEMORY, "32Gi"),
        (1024 * GI * 1000, MEMORY, "1Ti"),
        (1000 * 1000, MEMORY, "1000"),  # not a multiple of 1Ki: plain bytes
        (1500, MEMORY, "1500m"),
        (100 * GI * 1000, EPHEMERAL_STORAGE, "100Gi"),
        (GI * 1000, CPU, str(GI)),  # binary suffixes only for memory-like resources
        (GI * 1000, "", str(GI)),
        (-2000, CPU, "-2"),
    ],
    ids=lambda v: v if isinstance(v, str) and v else None,
)
def test_format_quantity(milli, resource, text):
    assert format_quantity(milli, resource) == text


@pytest.mark.parametrize("resource", [CPU, MEMORY, GPU, EPHEMERAL_STORAGE, "example.com/foo"])
@pytest.mark.parametrize(
    "milli", [0, 1, 250, 999, 1000, 1001, 4000, KI * 1000, 3 * MI * 1000, 5 * GI * 1000 + 1000]
)
def test_format_quantity_round_trips_through_parse(resource, milli):
    assert parse_quantity(format_quantity(milli, resource)) == milli


# --- Resources --------------------------------------------------------------------------------


def test_resources_missing_entries_are_zero_and_zeros_are_dropped():
    res = Resources({CPU: 1000, MEMORY: 0})
    assert res[CPU] == 1000
    assert res[MEMORY] == 0
    assert res[GPU] == 0
    assert list(res) == [CPU]
    assert len(res) == 1
    assert len(Resources()) == 0


def test_resources_accepts_pairs_and_parses_strings():
    assert Resources([(CPU, 2000), (MEMORY, 5)]) == Resources({CPU: 2000, MEMORY: 5})
    assert Resources.parse({CPU: "2", MEMORY: "1Gi", GPU: 1}) == Resources(
        {CPU: 2000, MEMORY: GI * 1000, GPU: 1000}
    )


def test_resources_parse_propagates_bad_quantities():
    with pytest.raises(ValueError, match="is not a quantity"):
        Resources.parse({CPU: "lots"})


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (Resources({CPU: 1000}), Resources({CPU: 1000}), True),
        (Resources({CPU: 1000, MEMORY: 0}), Resources({CPU: 1000}), True),
        (Resources(), Resources({GPU: 0}), True),
        (Resources({CPU: 1000}), Resources({CPU: 1001}), False),
        (Resources({CPU: 1000}), Resources({CPU: 1000, MEMORY: 1}), False),
        (Resources({CPU: 1000}), Resources({MEMORY: 1000}), False),
    ],
    ids=["same", "explicit-zero", "empty-vs-zero", "different-amount", "extra-key", "other-key"],
)
def test_resources_equality_and_hash(a, b, equal):
    assert (a == b) is equal
    assert (a != b) is not equal
    if equal:
        assert hash(a) == hash(b)
        assert len({a, b}) == 1


def test_resources_is_not_equal_to_other_types():
    assert Resources({CPU: 1000}) != "cpu"
    assert Resources() != 0


@pytest.mark.parametrize(
    ("a", "b", "total", "difference"),
    [
        (r(cpu="1"), r(cpu="2"), r(cpu="3"), Resources({CPU: -1000})),
        (r(cpu="1", memory="1Gi"), r(memory="1Gi"), r(cpu="1", memory="2Gi"), r(cpu="1")),
        (r(cpu="2"), r(gpu="1"), r(cpu="2", gpu="1"), Resources({CPU: 2000, GPU: -1000})),
        (r(cpu="1"), r(cpu="1"), r(cpu="2"), Resources()),
        (Resources(), Resources(), Resources(), Resources()),
    ],
    ids=["same-key", "partial-overlap", "disjoint", "cancel-to-empty", "empty"],
)
def test_resources_add_and_subtract(a, b, total, difference):
    assert a + b == total
    assert a - b == difference
    assert isinstance(a + b, Resources)
    assert (a - b) + b == a


def test_resources_subtraction_that_reaches_zero_drops_the_key():
    assert list(r(cpu="1", memory="1Gi") - r(cpu="1")) == [MEMORY]


def test_resources_arithmetic_accepts_plain_mappings_and_does_not_mutate():
    a = r(cpu="1")
    assert a + {CPU: 500, MEMORY: 0} == Resources({CPU: 1500})
    assert a - {CPU: 500} == Resources({CPU: 500})
    assert a == r(cpu="1")


def test_resources_is_immutable():
    res = r(cpu="1")
    with pytest.raises(TypeError):
        res[CPU] = 5  # type: ignore[index]
    with pytest.raises(AttributeError):
        res.extra = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("request_", "available", "fits"),
    [
        (r(cpu="1", memory="4Gi"), r(cpu="8", memory="32Gi"), True),
        (r(cpu="8", memory="32Gi"), r(cpu="8", memory="32Gi"), True),
        (r(cpu="8001m"), r(cpu="8", memory="32Gi"), False),
        (r(cpu="1", memory="33Gi"), r(cpu="8", memory="32Gi"), False),
        (r(cpu="1", gpu="1"), r(cpu="8", memory="32Gi"), False),
        (r(cpu="1"), r(cpu="1", gpu="4"), True),
        (Resources(), Resources(), True),
        (Resources(), r(cpu="1"), True),
        (r(cpu="1"), {CPU: 1000}, True),
        (r(cpu="1"), {}, False),
        (r(cpu="1"), Resources({CPU: -1}), False),
    ],
    ids=[
        "small",
        "exact",
        "cpu-over",
        "memory-over",
        "absent-resource-is-zero",
        "unrequested-extra-is-fine",
        "empty-in-empty",
        "empty-in-any",
        "plain-dict",
        "empty-dict",
        "negative-free",
    ],
)
def test_resources_fits_in(request_, available, fits):
    assert request_.fits_in(available) is fits


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (r(cpu="1", memory="8Gi"), r(cpu="2", memory="4Gi"), r(cpu="2", memory="8Gi")),
        (r(cpu="1"), r(gpu="1"), r(cpu="1", gpu="1")),
        (r(cpu="1"), Resources(), r(cpu="1")),
        (Resources(), Resources(), Resources()),
        (r(cpu="3"), {CPU: 1000, MEMORY: 5}, Resources({CPU: 3000, MEMORY: 5})),
    ],
    ids=["per-resource", "disjoint", "with-empty", "both-empty", "plain-dict"],
)
def test_resources_maximum(a, b, expected):
    assert a.maximum(b) == expected
    if isinstance(b, Resources):
        assert b.maximum(a) == expected


def test_resources_to_dict_and_strings():
    res = Resources.parse({MEMORY: "512Mi", CPU: "500m", GPU: "2", "example.com/x": "0"})
    assert res.to_dict() == {MEMORY: 512 * MI * 1000, CPU: 500, GPU: 2000}
    assert res.to_strings() == {CPU: "500m", MEMORY: "512Mi", GPU: "2"}
    assert list(res.to_strings()) == sorted([CPU, MEMORY, GPU])
    assert repr(r(cpu="1")) == "Resources({'cpu': '1'})"


def test_resources_to_dict_is_a_copy():
    res = r(cpu="1")
    res.to_dict()[CPU] = 99
    assert res[CPU] == 1000
