"""Contexts in the armadactl config file (Armada's ``currentContext`` / ``contexts``):
choosing one, Armada's spellings in it, ``config use-context | get-contexts |
current-context``, and ``login``/``logout`` with a context."""

from __future__ import annotations

import io
import stat
import sys
from pathlib import Path

import pytest
import yaml

from armada.cli.config import ConfigError, resolve_settings
from armada.cli.contexts import write_config
from armada.cli.main import main
from tests.cli.fake_armada import FakeArmada

ARMADA_EXAMPLE = """\
# as Armada documents it (trimmed), with a context pointing at our REST API
currentContext: main
contexts:
  main:
    armadaUrl: main.example.com:8000
    execAuth:
      cmd: auth
      args: [armada]
  test:
    armadaUrl: test.example.com:50051
    armadaRestUrl: https://test.example.com
    basicAuth: {username: admin, password: admin-pw}
    grpcKeepAliveTime: 10s
    forceNoTls: true
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def armada_file(tmp_path: Path) -> Path:
    path = tmp_path / "armadactl.yaml"
    path.write_text(ARMADA_EXAMPLE)
    return path


# -- resolving ----------------------------------------------------------------------------


def test_the_current_context_gives_the_url_and_a_scheme_is_added(armada_file: Path) -> None:
    settings = resolve_settings({}, {}, config_path=str(armada_file))
    assert settings.context == "main"
    assert settings.url == "http://main.example.com:8000"
    assert settings.auth_kind == "none" and settings.unsupported_auth == "execAuth"


def test_context_flag_env_and_file_order(armada_file: Path) -> None:
    by_env = resolve_settings({}, {"ARMADA_CONTEXT": "test"}, config_path=str(armada_file))
    assert by_env.context == "test"
    # armadaRestUrl wins over armadaUrl (this armadactl speaks REST); basicAuth is read.
    assert by_env.url == "https://test.example.com"
    assert (by_env.username, by_env.password, by_env.auth_kind) == ("admin", "admin-pw", "basic")
    by_flag = resolve_settings(
        {}, {"ARMADA_CONTEXT": "test"}, config_path=str(armada_file), context="main"
    )
    assert by_flag.context == "main"
    # A flag still beats the context's value.
    flagged = resolve_settings(
        {"url": "http://flag:1"}, {}, config_path=str(armada_file), context="test"
    )
    assert flagged.url == "http://flag:1" and flagged.username == "admin"


def test_context_values_override_the_top_level_one_by_one(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "url": "http://top:1",
                "token": "top-token",
                "currentContext": "dev",
                "contexts": {"dev": {"url": "http://dev:2"}, "empty": None},
            }
        )
    )
    dev = resolve_settings({}, {}, config_path=str(path))
    assert (dev.url, dev.token) == ("http://dev:2", "top-token")
    empty = resolve_settings({}, {}, config_path=str(path), context="empty")
    assert (empty.url, empty.token) == ("http://top:1", "top-token")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("contexts: {a: {}}\ncurrentContext: b\n", "context 'b' is not defined in"),
        ("contexts: {a: {armadaUrll: x}}\n", "unknown key(s) contexts.a.armadaUrll"),
        ("contexts: [a]\n", "contexts must be a mapping"),
        ("contexts: {a: {basicAuth: alice}}\n", "contexts.a.basicAuth must be a mapping"),
        ("contexts: {a: {armadaUrl: [x]}}\ncurrentContext: a\n", "armadaUrl must be a string"),
        ("contexts: {a: 3}\ncurrentContext: a\n", "contexts.a must be a mapping"),
        ("currentContext: [a]\n", "currentContext must be a string"),
        ("contexts: {a: {armadaUrl: 'ftp://x'}}\ncurrentContext: a\n", "http://host:port"),
    ],
)
def test_bad_contexts_are_reported_naming_the_key(
    tmp_path: Path, content: str, fragment: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError) as info:
        resolve_settings({}, {}, config_path=str(path))
    assert fragment in str(info.value)


def test_naming_an_undefined_context_lists_the_defined_ones(
    capsys: pytest.CaptureFixture[str], armada_file: Path
) -> None:
    code, _, err = run(capsys, "--context", "prod", "get", "queues", "--config", str(armada_file))
    assert code == 1
    assert "context 'prod' is not defined" in err and "contexts defined: main, test" in err
    assert "Traceback" not in err


# -- against a server ---------------------------------------------------------------------


def test_commands_use_the_contexts_url_and_credentials(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    fake_armada.basic = ("alice", "alice-pw")
    fake_armada.add_queue("analytics")
    path = tmp_path / "c.yaml"
    address = fake_armada.url.removeprefix("http://")
    path.write_text(
        yaml.safe_dump(
            {
                "currentContext": "broken",
                "contexts": {
                    "broken": {"armadaUrl": "127.0.0.1:1"},
                    "local": {
                        "armadaUrl": address,
                        "basicAuth": {"username": "alice", "password": "alice-pw"},
                    },
                },
            }
        )
    )
    code, out, err = run(capsys, "-c", "local", "get", "queues", "--config", str(path))
    assert code == 0, err
    assert "analytics" in out
    # --armadaUrl (Armada's spelling of --url, host:port allowed) beats the context's
    # address; --url beats --armadaUrl.
    code, out, err = run(
        capsys, "get", "queues", "--config", str(path), "--armadaUrl", address,
        "--username", "alice", "--password", "alice-pw",
    )  # fmt: skip
    assert code == 0 and "analytics" in out, err
    code, _, err = run(
        capsys, "get", "queues", "--config", str(path), "--armadaUrl", address,
        "--url", "http://127.0.0.1:2",
    )  # fmt: skip
    assert code == 1 and "http://127.0.0.1:2" in err
    code, _, err = run(capsys, "get", "queues", "--config", str(path))
    assert code == 1 and "cannot reach the Armada server at http://127.0.0.1:1" in err


def test_a_refusal_names_the_sign_in_this_armadactl_does_not_use(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, tmp_path: Path
) -> None:
    fake_armada.token = "secret"
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "currentContext": "sso",
                "contexts": {"sso": {"armadaUrl": fake_armada.url, "openIdAuth": {"x": 1}}},
            }
        )
    )
    code, _, err = run(capsys, "get", "queues", "--config", str(path))
    assert code == 1
    assert "context sso signs in with openIdAuth" in err and "armadactl login" in err


# -- config use-context | get-contexts | current-context ----------------------------------


def test_use_context_rewrites_only_current_context(
    capsys: pytest.CaptureFixture[str], armada_file: Path
) -> None:
    before = yaml.safe_load(armada_file.read_text())
    code, out, err = run(capsys, "config", "use-context", "test", "--config", str(armada_file))
    assert (code, out) == (0, "Current context set to test\n"), err
    after = yaml.safe_load(armada_file.read_text())
    assert after == {**before, "currentContext": "test"}
    assert stat.S_IMODE(armada_file.stat().st_mode) == 0o600  # it holds passwords

    code, out, _ = run(capsys, "config", "get-contexts", "--config", str(armada_file))
    assert (code, out) == (0, "Available contexts: main, test (current)\n")
    code, out, _ = run(capsys, "config", "current-context", "--config", str(armada_file))
    assert (code, out) == (0, "Current context: test\n")
    code, out, _ = run(
        capsys, "--context", "main", "config", "current-context", "--config", str(armada_file)
    )
    assert (code, out) == (0, "Current context: main\n")


def test_use_context_refuses_an_undefined_context_and_changes_nothing(
    capsys: pytest.CaptureFixture[str], armada_file: Path, tmp_path: Path
) -> None:
    before = armada_file.read_text()
    code, out, err = run(capsys, "config", "use-context", "nope", "--config", str(armada_file))
    assert code == 1 and out == ""
    assert "context 'nope' is not defined" in err and "main, test" in err
    assert armada_file.read_text() == before
    missing = tmp_path / "missing.yaml"
    code, _, err = run(capsys, "config", "use-context", "main", "--config", str(missing))
    assert code == 1 and "does not exist" in err and not missing.exists()
    code, _, err = run(capsys, "config", "use-context")
    assert code == 2 and "CONTEXT" in err


def test_get_contexts_without_contexts(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "flat.yaml"
    path.write_text("url: http://x:1\n")
    code, out, err = run(capsys, "config", "get-contexts", "--config", str(path))
    assert code == 0 and out == "" and "No contexts are defined" in err
    code, out, err = run(capsys, "config", "current-context", "--config", str(path))
    assert code == 0 and out == "" and "No current context" in err


# -- login and logout in a context ---------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_login_and_logout_write_to_the_context_in_use(
    live_server, owner, capsys: pytest.CaptureFixture[str], monkeypatch, tmp_path: Path
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "currentContext": "other",
                "contexts": {
                    "other": {"armadaUrl": "elsewhere:50051"},
                    "here": {
                        "armadaUrl": live_server.url,
                        "basicAuth": {"username": "olive", "password": "olive-password"},
                        "forceNoTls": True,
                    },
                },
            }
        )
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO("olive-password\n"))
    code, out, err = run(
        capsys, "--context", "here", "login", "--password-stdin", "--config", str(path)
    )
    assert code == 0, err
    assert f"Stored in context here of {path}" in out
    stored = yaml.safe_load(path.read_text())
    here = stored["contexts"]["here"]
    # The password is dropped, the token stored; Armada's keys stay as they were.
    assert here["basicAuth"] == {"username": "olive"} and here["forceNoTls"] is True
    assert here["token"].startswith("arm_") and here["username"] == "olive"
    assert "url" not in here  # its armadaUrl already names this server
    assert stored["contexts"]["other"] == {"armadaUrl": "elsewhere:50051"}
    assert stored["currentContext"] == "other" and "token" not in stored

    code, out, err = run(capsys, "--context", "here", "get", "queues", "--config", str(path))
    assert code == 0, err

    code, out, err = run(capsys, "--context", "here", "logout", "--config", str(path))
    assert code == 0 and "Logged out: token" in out and f"from context here of {path}" in out, err
    assert "token" not in yaml.safe_load(path.read_text())["contexts"]["here"]


def test_a_config_file_that_cannot_be_written_is_an_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="cannot write config file"):
        write_config(blocker / "armadactl.yaml", {"currentContext": "a"})
