"""Argument parsing; where the settings come from (flags, environment, config file); the
credentials and addresses sent to a real HTTP server.

No Django, no database: the fake server of conftest.py speaks the REST contract.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from armada.cli.config import DEFAULT_URL, ConfigError, resolve_settings
from armada.cli.main import build_parser
from tests.cli.fake_armada import FakeArmada
from tests.cli.helpers import run, write

# == 1. pure units ========================================================================

# -- argument parsing --------------------------------------------------------------------


def test_create_queue_flags_are_parsed_into_typed_values() -> None:
    args = build_parser().parse_args(
        [
            "create",
            "queue",
            "analytics",
            "--priority-factor",
            "2.5",
            "--owners",
            "alice, bob,",
            "--group-owners",
            "ops",
            "--labels",
            "team=data,tier=gold",
            "--retry-policies",
            "p1,p2",
            "--cordoned",
        ]
    )
    assert args.name == "analytics"
    assert args.priority_factor == 2.5
    assert args.owners == ["alice", "bob"]
    assert args.group_owners == ["ops"]
    assert args.labels == {"team": "data", "tier": "gold"}
    assert args.retry_policies == ["p1", "p2"]
    assert args.cordoned is True


def test_global_flags_work_before_and_after_the_command() -> None:
    parser = build_parser()
    before = parser.parse_args(["--url", "http://a:1", "--token", "t", "get", "queues"])
    after = parser.parse_args(["get", "queues", "--url", "http://a:1", "--token", "t"])
    assert (before.url, before.token) == ("http://a:1", "t")
    assert (after.url, after.token) == ("http://a:1", "t")
    # A flag given only before the command is not reset by the subcommand.
    mixed = parser.parse_args(["--url", "http://a:1", "watch", "q", "js", "--token", "t"])
    assert (mixed.url, mixed.token, mixed.from_) == ("http://a:1", "t", None)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["create", "queue", "q", "--labels", "novalue"], "must look like key=value"),
        (["create", "queue", "q", "--labels", "a=1,a=2"], "given twice"),
        (["create", "queue", "q", "--priority-factor", "lots"], "is not a number"),
        (["get", "queues", "-o", "xml"], "invalid choice"),
        (["watch", "q", "js", "--from", "-3"], "cannot be negative"),
        (["watch", "q"], "required"),
        ([], "required: COMMAND"),
    ],
)
def test_usage_errors_exit_2_with_error_prefix(
    capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert "Error: " in err and fragment in err
    assert "Traceback" not in err


def test_help_exits_0_and_documents_global_flags_and_resolution(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for text in (
        "--url",
        "--token",
        "--config",
        "ARMADA_URL",
        "ARMADACTL_CONFIG",
        "~/.armadactl.yaml",
    ):
        assert text in out


# -- configuration -----------------------------------------------------------------------


def test_config_flags_beat_environment_beat_file(tmp_path: Path) -> None:
    config = write(
        tmp_path / "c.yaml",
        {
            "url": "http://file:1",
            "username": "file-user",
            "password": "file-pw",
            "token": "file-token",
        },
    )
    env = {"ARMADA_URL": "http://env:2", "ARMADA_USERNAME": "env-user"}
    flags = {"url": "http://flag:3", "username": None, "password": None, "token": None}
    settings = resolve_settings(flags, env, config_path=str(config))
    assert settings.url == "http://flag:3"
    assert settings.username == "env-user"
    assert settings.password == "file-pw"
    assert settings.token == "file-token"
    # The username came from a more specific source than the token: basic auth.
    assert settings.auth_kind == "basic"


def test_config_file_is_found_through_env_then_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    write(home / ".armadactl.yaml", {"url": "http://home:1/", "token": "home-token"})
    named = write(tmp_path / "named.yaml", {"url": "http://named:2"})
    empty_flags: dict[str, str | None] = {}

    from_home = resolve_settings(empty_flags, {}, home=home)
    assert (from_home.url, from_home.token, from_home.auth_kind) == (
        "http://home:1",
        "home-token",
        "token",
    )

    from_env = resolve_settings(empty_flags, {"ARMADACTL_CONFIG": str(named)}, home=home)
    assert from_env.url == "http://named:2" and from_env.token is None

    other = write(tmp_path / "other.yaml", {"url": "http://other:3"})
    from_flag = resolve_settings(
        empty_flags, {"ARMADACTL_CONFIG": str(named)}, config_path=str(other), home=home
    )
    assert from_flag.url == "http://other:3"


def test_config_defaults_when_nothing_is_set(tmp_path: Path) -> None:
    settings = resolve_settings({}, {}, home=tmp_path)
    assert settings.url == DEFAULT_URL
    assert settings.auth_kind == "none"


def test_token_beats_username_from_the_same_or_a_later_source(tmp_path: Path) -> None:
    config = write(tmp_path / "c.yaml", {"username": "u", "password": "p"})
    settings = resolve_settings({"token": "t"}, {}, config_path=str(config))
    assert settings.auth_kind == "token"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("url: [unclosed", "not valid YAML"),
        ("- a\n- b\n", "must be a mapping"),
        ("url: http://x:1\npasswd: oops\n", "unknown key(s) passwd"),
        ("url: ftp://x\n", "must look like http://host:port"),
    ],
)
def test_bad_config_files_are_reported(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError, match=".") as info:
        resolve_settings({}, {}, config_path=str(path))
    assert fragment in str(info.value)


def test_named_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_settings({}, {"ARMADACTL_CONFIG": str(tmp_path / "missing.yaml")})


def test_token_and_basic_auth_headers(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_armada.token = "s3cret"
    code, _, err = run(capsys, "--url", fake_armada.url, "get", "queues")
    assert code == 1
    assert err.strip() == (
        "Error: Authentication credentials were not provided."
        " (run `armadactl login`, or set ARMADA_TOKEN)"
    )

    monkeypatch.setenv("ARMADA_TOKEN", "s3cret")
    assert run(capsys, "--url", fake_armada.url, "get", "queues", "-o", "json")[0] == 0
    assert fake_armada.requests[-1].headers["Authorization"] == "Token s3cret"

    monkeypatch.delenv("ARMADA_TOKEN")
    fake_armada.token, fake_armada.basic = None, ("alice", "pw")
    monkeypatch.setenv("ARMADA_PASSWORD", "pw")
    assert (
        run(capsys, "--url", fake_armada.url, "--username", "alice", "get", "queues", "-o", "json")[
            0
        ]
        == 0
    )
    expected = "Basic " + base64.b64encode(b"alice:pw").decode()
    assert fake_armada.requests[-1].headers["Authorization"] == expected


def test_url_and_token_from_the_config_file(
    capsys: pytest.CaptureFixture[str],
    fake_armada: FakeArmada,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_armada.token = "from-file"
    config = write(
        tmp_path / "armadactl.yaml", {"url": fake_armada.url + "/", "token": "from-file"}
    )
    monkeypatch.setenv("ARMADACTL_CONFIG", str(config))
    code, _, err = run(capsys, "get", "queues", "-o", "json")
    assert (code, err) == (0, "")
    assert fake_armada.paths() == ["/api/v1/queues"]


def test_connection_refused_names_the_url(
    capsys: pytest.CaptureFixture[str], free_port: int
) -> None:
    url = f"http://127.0.0.1:{free_port}"
    code, out, err = run(capsys, "--url", url, "get", "queues")
    assert (code, out) == (1, "")
    assert err.startswith(f"Error: cannot reach the Armada server at {url} (connection refused)")
    assert "Traceback" not in err


def test_bad_config_is_an_error_not_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "--config", str(tmp_path / "none.yaml"), "get", "queues")
    assert code == 1
    assert err.strip() == f"Error: config file {tmp_path / 'none.yaml'} does not exist"
