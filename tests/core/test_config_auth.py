"""armada.core.config_auth: the auth section (global permissions by group, API token
lifetimes), refused values named by their key."""

from __future__ import annotations

import pytest

from armada.core.config import PERMISSION_CODENAMES, parse_config
from tests.core.test_config import errors_of


def test_permission_codenames_accepted():
    mapping = {name: ["admins"] for name in PERMISSION_CODENAMES}
    assert (
        parse_config({"auth": {"permissionGroupMapping": mapping}}).auth.permission_group_mapping
        == mapping
    )


# --- API token lifetimes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("auth", "expected"),
    [
        ({}, (90 * 86400.0, 365 * 86400.0)),
        ({"tokenLifetime": "7d", "tokenMaxLifetime": "30d"}, (7 * 86400.0, 30 * 86400.0)),
        ({"tokenLifetime": 0, "tokenMaxLifetime": 0}, (0.0, 0.0)),
        ({"tokenLifetime": "400d", "tokenMaxLifetime": 0}, (400 * 86400.0, 0.0)),
    ],
)
def test_token_lifetimes(auth, expected):
    config = parse_config({"auth": auth})
    assert (config.auth.token_lifetime, config.auth.token_max_lifetime) == expected


@pytest.mark.parametrize(
    ("auth", "field", "words"),
    [
        ({"tokenLifetime": 0}, "auth.tokenLifetime", "never expire) needs tokenMaxLifetime: 0"),
        ({"tokenLifetime": "400d"}, "auth.tokenLifetime", "must be at most tokenMaxLifetime"),
        ({"tokenMaxLifetime": "-1d"}, "auth.tokenMaxLifetime", ""),
        ({"tokenLifetime": "soon"}, "auth.tokenLifetime", ""),
    ],
)
def test_bad_token_lifetimes_are_refused_naming_the_key(auth, field, words):
    errors = errors_of({"auth": auth})
    assert any(f == field and words in message for f, message in errors), errors
