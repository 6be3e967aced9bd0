"""armada.core.floating: floating resources kept apart from what nodes must offer, and out
of the pods clusters are given."""

from __future__ import annotations

import pytest

from armada.core.floating import split_floating, strip_floating


def test_split_floating() -> None:
    assert split_floating({"cpu": 1000, "licences": 2000}, frozenset({"licences"})) == (
        {"cpu": 1000},
        {"licences": 2000},
    )
    assert split_floating({"cpu": 1000}, frozenset({"licences"})) == ({"cpu": 1000}, {})
    assert split_floating({"cpu": 1000}, frozenset()) == ({"cpu": 1000}, {})


STRIPS = [
    (
        {"containers": [{"name": "m", "resources": {"requests": {"cpu": "1", "lic": "2"}}}]},
        {"containers": [{"name": "m", "resources": {"requests": {"cpu": "1"}}}]},
    ),
    (
        {
            "initContainers": [{"resources": {"limits": {"lic": "1"}, "claims": [{"n": "x"}]}}],
            "containers": [{"name": "m"}],
            "nodeSelector": {"a": "b"},
        },
        {
            "initContainers": [{"resources": {"limits": {}, "claims": [{"n": "x"}]}}],
            "containers": [{"name": "m"}],
            "nodeSelector": {"a": "b"},
        },
    ),
    ({"containers": "not a list"}, {"containers": "not a list"}),
]


@pytest.mark.parametrize("spec,expected", STRIPS)
def test_strip_floating_takes_only_the_floating_resources_out(spec, expected) -> None:
    assert strip_floating(spec, frozenset({"lic"})) == expected
