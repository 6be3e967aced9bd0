"""The suite's groups (``tests/run_suite.py``) never share a database or a Redis database."""

from __future__ import annotations

import re

import pytest

from tests.run_suite import GROUPS, group_env


def envs(database: str, redis: str) -> list[dict[str, str]]:
    main = {"DATABASE_URL": database, "REDIS_URL": redis, "OTHER": "kept"}
    return [main] + [group_env(main, i, name) for i, name in enumerate(GROUPS, start=1)]


@pytest.mark.parametrize(
    "redis",
    ["redis://127.0.0.1:6379/14", "redis://127.0.0.1:6379/15", "redis://h:1/1", "redis://h"],
)
def test_every_group_has_a_database_and_a_redis_database_of_its_own(redis):
    every = envs("postgres://postgres@127.0.0.1:5432/armada_ci?sslmode=disable", redis)
    databases = [env["DATABASE_URL"] for env in every]
    redises = [env["REDIS_URL"] for env in every]
    assert len(set(databases)) == len(databases) == len(GROUPS) + 1
    assert len(set(redises)) == len(redises)
    assert all(d.endswith("?sslmode=disable") for d in databases)
    assert all(env["OTHER"] == "kept" for env in every)
    # Each suite's tests use its number and the processes they start the one below it
    # (``tests.e2e.conftest.process_env``): no two groups share either.
    pairs = []
    for env in every:
        found = re.search(r"/(\d+)$", env["REDIS_URL"])
        number = int(found.group(1)) if found else 0
        pairs.append({number, (number - 1) % 16})
    assert all(not a & b for i, a in enumerate(pairs) for b in pairs[i + 1 :]), pairs
    assert all(0 not in pair for pair in pairs[1:])  # 0: the one a URL without a number uses


def test_unset_urls_stay_unset():
    assert group_env({"PATH": "/bin"}, 1, "side") == {"PATH": "/bin"}


def test_the_groups_name_disjoint_paths():
    paths = [p for group in GROUPS.values() for p in group]
    assert len(paths) == len(set(paths))
