"""armada.core.quantity_text: stored milli-units shown as people write them, exactly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from armada.core.quantity import CPU, EPHEMERAL_STORAGE, GPU, MAX_MILLI, MEMORY, parse_quantity
from armada.core.quantity_text import growth, readable_quantity, readable_resources

MI = 1024**2
GI = 1024**3


@pytest.mark.parametrize(
    ("text", "resource", "shown"),
    [
        ("256Mi", MEMORY, "256Mi"),
        ("1.5Gi", MEMORY, "1.5Gi"),
        ("1536Mi", MEMORY, "1.5Gi"),
        ("864Mi", MEMORY, "864Mi"),
        ("2.25Gi", MEMORY, "2.25Gi"),
        ("1Gi", MEMORY, "1Gi"),
        ("1G", MEMORY, "1G"),
        ("1.5G", MEMORY, "1.5G"),
        ("1Ki", MEMORY, "1Ki"),
        ("1000001", MEMORY, "1000001"),
        ("512", MEMORY, "512"),
        ("0", MEMORY, "0"),
        ("64Ti", EPHEMERAL_STORAGE, "64Ti"),
        ("500m", CPU, "500m"),
        ("1500m", CPU, "1500m"),
        ("2", CPU, "2"),
        ("2", GPU, "2"),
        ("0", GPU, "0"),
    ],
)
def test_shown_as_people_write_it(text, resource, shown):
    assert readable_quantity(parse_quantity(text), resource) == shown


def test_memory_in_milli_bytes_is_shown_exactly():
    # A bare "1m" of memory is a thousandth of a byte: odd, but kept exact, not rounded away.
    assert readable_quantity(1, MEMORY) == "1m"


@given(st.integers(min_value=0, max_value=MAX_MILLI), st.sampled_from([MEMORY, CPU, GPU, "x"]))
def test_every_shown_quantity_parses_back_to_the_same_number(milli, resource):
    assert parse_quantity(readable_quantity(milli, resource)) == milli


@given(
    st.integers(min_value=0, max_value=2**20),
    st.sampled_from(["Ki", "Mi", "Gi", "k", "M", "G"]),
)
def test_whole_suffixed_amounts_are_never_longer_than_written(count, suffix):
    written = f"{count}{suffix}"
    assert len(readable_quantity(parse_quantity(written), MEMORY)) <= len(written)


def test_a_resource_vector_is_shown_per_resource_in_name_order():
    values = {MEMORY: 1536 * MI * 1000, CPU: 500, GPU: 2000}
    assert readable_resources(values) == {"cpu": "500m", "memory": "1.5Gi", GPU: "2"}
    assert list(readable_resources(values)) == ["cpu", "memory", GPU]


@pytest.mark.parametrize(
    ("before", "after", "kind", "shown"),
    [
        (256 * MI, 864 * MI, "factor", "×3.375"),
        (GI, 3 * GI // 2, "factor", "×1.5"),
        (3 * MI, 10 * MI, "factor", "×≈3.33"),
        (256 * MI, 768 * MI, "static", "+512Mi"),
        (0, GI, "factor", ""),
    ],
)
def test_growth_says_the_amount(before, after, kind, shown):
    assert growth(before * 1000, after * 1000, kind) == shown
