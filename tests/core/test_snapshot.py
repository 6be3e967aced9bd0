"""armada.core.snapshot: merging the reasons of several pools' rounds into one per job."""

from __future__ import annotations

import pytest

from armada.core.snapshot import (
    REASON_NO_MATCH,
    REASON_NO_NODES,
    REASON_NO_RESOURCES,
    REASON_TOO_BIG,
    is_static_reason,
    merge_pool_reasons,
)

CAP = "queue q at 25% of cpu for priority class p, limit 25% (this job would take it to 50%)"
NONE_OF_IT = "floating resource lic: the pool has none of it (floatingResources)"
SOME_OF_IT = "floating resource lic: 2 of 2 in use in the pool, the job asks 1"

MERGES = [
    ("one pool keeps its reason", [{"j": REASON_NO_RESOURCES}], {"j": REASON_NO_RESOURCES}),
    (
        "waiting in a pool wins",
        [{"j": REASON_NO_RESOURCES}, {"j": REASON_NO_MATCH}],
        {"j": REASON_NO_RESOURCES},
    ),
    ("waiting in a later pool wins", [{"j": REASON_NO_MATCH}, {"j": CAP}], {"j": CAP}),
    ("the last pool's waiting reason", [{"j": REASON_NO_RESOURCES}, {"j": CAP}], {"j": CAP}),
    ("no pool can use it", [{"j": REASON_NO_MATCH}, {"j": REASON_TOO_BIG}], {"j": REASON_TOO_BIG}),
    ("a pool that never reached it: not reached", [{"j": REASON_NO_MATCH}, {}], {}),
    (
        "floating: none here, waiting there",
        [{"j": SOME_OF_IT}, {"j": NONE_OF_IT}],
        {"j": SOME_OF_IT},
    ),
    ("no pools", [], {}),
]


@pytest.mark.parametrize("per_pool,expected", [m[1:] for m in MERGES], ids=[m[0] for m in MERGES])
def test_merge_pool_reasons(per_pool, expected) -> None:
    assert merge_pool_reasons(per_pool) == expected


@pytest.mark.parametrize(
    "reason,static",
    [
        (REASON_NO_MATCH, True),
        (REASON_TOO_BIG, True),
        (REASON_NO_NODES, True),
        (NONE_OF_IT, True),
        (SOME_OF_IT, False),
        (REASON_NO_RESOURCES, False),
        (CAP, False),
    ],
)
def test_is_static_reason(reason: str, static: bool) -> None:
    assert is_static_reason(reason) is static
