"""``armadactl login`` and ``logout`` against the real API (Django's live server): the
password is asked once, a token is stored in a 0600 config file, later commands send it,
logging in again or out revokes the stored token."""

from __future__ import annotations

import io
import stat
import sys
from pathlib import Path

import pytest
import yaml

from armada.cli import login as login_module
from armada.cli.main import main
from armada.models import ApiToken
from armada.services.tokens import key_digest

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return tmp_path / "conf" / "armadactl.yaml"


@pytest.fixture
def ctl(live_server, config, capsys, monkeypatch):
    def run(*argv: str, stdin: str | None = None):
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main([*argv, "--config", str(config)])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    run.url = live_server.url
    return run


def read(config: Path) -> dict:
    return yaml.safe_load(config.read_text())


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_login_stores_a_token_in_a_0600_file_and_the_next_command_uses_it(
    ctl, config, owner, queue
):
    code, out, err = ctl(
        "login", "--url", ctl.url, "--username", "olive", "--password-stdin", "--name", "laptop",
        stdin="olive-password\n",
    )  # fmt: skip
    assert code == 0, err
    assert f"Logged in to {ctl.url} as olive: token 'laptop'" in out
    assert mode(config) == 0o600
    stored = read(config)
    assert set(stored) == {"url", "username", "token"} and stored["url"] == ctl.url
    token = ApiToken.objects.get()
    assert token.name == "laptop" and token.digest == key_digest(stored["token"])
    assert token.last_used_at is None

    owner.set_password("changed-since")  # only the token can work now
    owner.save()
    code, out, err = ctl("get", "queues")
    assert code == 0 and "demo" in out, err
    assert ApiToken.objects.get().last_used_at is not None


def test_login_asks_for_the_password_once_without_echo(ctl, config, owner, monkeypatch):
    prompts = []

    def fake_getpass(prompt: str) -> str:
        prompts.append(prompt)
        return "olive-password"

    monkeypatch.setattr(login_module.getpass, "getpass", fake_getpass)
    code, _, err = ctl("login", "--url", ctl.url, "--username", "olive")
    assert code == 0, err
    assert prompts == [f"Password for olive at {ctl.url}: "]
    assert ApiToken.objects.get().name.startswith("armadactl on ")


def test_login_asks_for_the_username_when_it_is_not_known(ctl, config, owner, monkeypatch):
    monkeypatch.setattr(login_module.getpass, "getpass", lambda prompt: "olive-password")
    code, _, err = ctl("login", "--url", ctl.url, stdin="olive\n")
    assert code == 0, err
    assert f"Username at {ctl.url}: " in err and read(config)["username"] == "olive"


def test_an_existing_file_is_made_0600_and_its_password_dropped(ctl, config, owner):
    config.parent.mkdir()
    config.write_text(f"url: {ctl.url}\nusername: olive\npassword: olive-password\n")
    config.chmod(0o644)
    code, _, err = ctl("login")  # url, username and password all come from the file
    assert code == 0, err
    assert mode(config) == 0o600
    assert set(read(config)) == {"url", "username", "token"}


def test_logging_in_again_revokes_the_token_stored_before(ctl, config, owner):
    for name in ("first", "second"):
        code, out, err = ctl(
            "login", "--url", ctl.url, "--username", "olive", "--password-stdin", "--name", name,
            stdin="olive-password\n",
        )  # fmt: skip
        assert code == 0, err
    assert "Revoked the token stored before ('first')" in out
    live = ApiToken.objects.filter(revoked_at__isnull=True)
    assert [t.name for t in live] == ["second"]


def test_logout_revokes_the_token_and_removes_it_from_the_file(ctl, config, owner):
    ctl("login", "--url", ctl.url, "--username", "olive", "--password-stdin", stdin="pw\n")
    assert not config.exists()  # a wrong password stores nothing
    ctl(
        "login", "--url", ctl.url, "--username", "olive", "--password-stdin", "--name", "laptop",
        stdin="olive-password\n",
    )  # fmt: skip
    code, out, err = ctl("logout")
    assert code == 0, err
    assert "token 'laptop' revoked" in out
    assert read(config) == {"url": ctl.url, "username": "olive"} and mode(config) == 0o600
    assert ApiToken.objects.get().revoked_at is not None
    code, _, err = ctl("get", "queues")
    assert code == 1 and "credentials were not provided" in err and "armadactl login" in err
    code, out, _ = ctl("logout")
    assert code == 0 and "Not logged in" in out


def test_a_wrong_password_is_an_error_and_writes_nothing(ctl, config, owner):
    code, _, err = ctl(
        "login", "--url", ctl.url, "--username", "olive", "--password-stdin", stdin="nope\n"
    )
    assert code == 1 and "invalid username or password" in err
    assert not config.exists() and not ApiToken.objects.exists()


def test_password_stdin_needs_a_username(ctl, config):
    code, _, err = ctl("login", "--url", ctl.url, "--password-stdin", stdin="x\n")
    assert code == 1 and "--password-stdin needs --username" in err


def test_a_throttled_login_says_how_long_to_wait(ctl, config, owner):
    for _ in range(5):
        ctl("login", "--url", ctl.url, "--username", "olive", "--password-stdin", stdin="no\n")
    code, _, err = ctl(
        "login", "--url", ctl.url, "--username", "olive", "--password-stdin",
        stdin="olive-password\n",
    )  # fmt: skip
    assert code == 1 and "too many failed logins for user 'olive': try again in" in err
    assert not config.exists()


def test_the_file_is_written_through_a_symlink(tmp_path):
    real = tmp_path / "dotfiles" / "armadactl.yaml"
    real.parent.mkdir()
    real.write_text("url: http://x:1\n")
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    login_module.write_config(link, {"url": "http://x:1", "token": "arm_t"})
    assert link.is_symlink() and read(real) == {"url": "http://x:1", "token": "arm_t"}
    assert mode(real) == 0o600


def test_a_username_without_a_password_sends_no_credentials(tmp_path):
    from armada.cli.config import resolve_settings

    path = tmp_path / "c.yaml"
    path.write_text("username: olive\n")
    assert resolve_settings({}, {}, config_path=str(path)).auth_kind == "none"
    path.write_text("username: olive\npassword: pw\n")
    assert resolve_settings({}, {}, config_path=str(path)).auth_kind == "basic"
