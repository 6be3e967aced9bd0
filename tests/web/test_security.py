"""Safe defaults for production (armada.web.security and the settings it feeds): the secret
key, the HTTPS settings behind ``ARMADA_SECURE``, ``check --deploy``, the pages' CSP."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.test import Client

from armada.web.security import content_security_policy, kept_secret_key, proxy_ssl_header
from tests.test_settings import manage as manage_py

ROOT = Path(__file__).resolve().parents[2]
STRONG_KEY = "k3y-" + "x7Qp9" * 12
# The production environment the README documents ("Running in production").
PRODUCTION = {
    "SECRET_KEY": STRONG_KEY,
    "ALLOWED_HOSTS": "armada.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://armada.example.com",
    "ARMADA_SECURE": "1",
    "ARMADA_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    "ARMADA_METRICS_TOKEN": "scrape-token",
}


def manage(*args: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """``manage.py`` in a production environment (no ``ARMADA_DEV``) unless ``env`` says
    otherwise, with its var directory under ``tmp_path``."""
    return manage_py(*args, **{"ARMADA_DEV": "0", "ARMADA_VAR_DIR": str(tmp_path / "var"), **env})


SHOW_SETTINGS = (
    "import json; from django.conf import settings as s; print(json.dumps({k: getattr(s, k) "
    "for k in ('SECRET_KEY', 'SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', "
    "'SECURE_SSL_REDIRECT', 'SECURE_HSTS_SECONDS', 'SECURE_HSTS_INCLUDE_SUBDOMAINS', "
    "'SECURE_HSTS_PRELOAD', 'SECURE_PROXY_SSL_HEADER', 'CONTENT_SECURITY_POLICY', "
    "'CONTENT_SECURITY_POLICY_REPORT_ONLY')}))"
)


def settings_of(tmp_path: Path, **env: str) -> dict:
    result = manage("shell", "-c", SHOW_SETTINGS, tmp_path=tmp_path, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


# --- the secret key ------------------------------------------------------------------------


def test_a_development_key_is_generated_once_private_and_reused(tmp_path):
    path = tmp_path / "var" / "secret-key"
    first = kept_secret_key(path)
    assert len(first) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert kept_secret_key(path) == first
    assert [p.name for p in path.parent.iterdir()] == ["secret-key"]  # no temporary left


def test_a_kept_key_that_others_could_read_is_made_private(tmp_path):
    path = tmp_path / "secret-key"
    path.write_text("an-old-key-" + "z" * 50 + "\n")
    path.chmod(0o644)
    assert kept_secret_key(path) == "an-old-key-" + "z" * 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


RACE = """
import sys, time
from pathlib import Path
from armada.web.security import kept_secret_key
go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.001)
print(kept_secret_key(Path(sys.argv[2])))
"""


def test_processes_starting_at_once_agree_on_one_key(tmp_path):
    """Several processes make the key at the same moment: all read the same one."""
    go, path = tmp_path / "go", tmp_path / "var" / "secret-key"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACE, str(go), str(path)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    time.sleep(0.5)  # let them all start waiting (a slow start only makes the race milder)
    go.touch()
    keys = {proc.communicate(timeout=120)[0].strip() for proc in procs}
    assert all(proc.returncode == 0 for proc in procs)
    assert keys == {path.read_text().strip()}


def test_make_run_keeps_its_key_in_the_var_directory(tmp_path):
    first = settings_of(tmp_path, ARMADA_DEV="1")["SECRET_KEY"]
    key_file = tmp_path / "var" / "secret-key"
    assert key_file.read_text().strip() == first
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert settings_of(tmp_path, ARMADA_DEV="1")["SECRET_KEY"] == first
    assert settings_of(tmp_path, ARMADA_DEV="1", SECRET_KEY=STRONG_KEY)["SECRET_KEY"] == STRONG_KEY


def test_a_production_start_without_a_secret_key_refuses_saying_what_to_set(tmp_path):
    result = manage("check", tmp_path=tmp_path)
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
    assert "ARMADA_DEV=1" in result.stderr
    assert not (tmp_path / "var" / "secret-key").exists()


# --- HTTPS settings and check --deploy -----------------------------------------------------


def test_check_deploy_is_clean_with_the_documented_production_settings(tmp_path):
    result = manage("check", "--deploy", tmp_path=tmp_path, **PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout + result.stderr, result.stderr


def test_check_deploy_warns_without_them(tmp_path):
    result = manage("check", "--deploy", tmp_path=tmp_path, SECRET_KEY=STRONG_KEY)
    output = result.stdout + result.stderr
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in output


def test_armada_secure_turns_the_production_set_on_and_each_part_can_be_turned_off(tmp_path):
    on = settings_of(tmp_path, **PRODUCTION)
    assert on["SESSION_COOKIE_SECURE"] and on["CSRF_COOKIE_SECURE"] and on["SECURE_SSL_REDIRECT"]
    assert on["SECURE_HSTS_SECONDS"] == 365 * 24 * 3600
    assert on["SECURE_HSTS_INCLUDE_SUBDOMAINS"] and on["SECURE_HSTS_PRELOAD"]
    assert on["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    partly = settings_of(
        tmp_path,
        **PRODUCTION,
        ARMADA_SSL_REDIRECT="0",
        ARMADA_HSTS_SECONDS="600",
        ARMADA_HSTS_PRELOAD="false",
        ARMADA_CSP="report-only",
    )
    assert partly["SECURE_SSL_REDIRECT"] is False
    assert partly["SECURE_HSTS_SECONDS"] == 600 and partly["SECURE_HSTS_PRELOAD"] is False
    assert partly["SESSION_COOKIE_SECURE"] is True
    assert partly["CONTENT_SECURITY_POLICY"] is None
    assert partly["CONTENT_SECURITY_POLICY_REPORT_ONLY"]["DIRECTIVES"]["script-src"] == ["'self'"]
    off = settings_of(tmp_path, ARMADA_DEV="1")
    assert not off["SESSION_COOKIE_SECURE"] and not off["SECURE_SSL_REDIRECT"]
    assert off["SECURE_HSTS_SECONDS"] == 0 and off["SECURE_PROXY_SSL_HEADER"] is None


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("ARMADA_PROXY_SSL_HEADER", "X-Forwarded-Proto: https", "must be a header name"),
        ("ARMADA_CSP", "strict", "ARMADA_CSP must be one of enforce, report-only, off"),
        ("ARMADA_SECURE", "maybe", "ARMADA_SECURE must be true or false"),
        ("ARMADA_METRICS_ADDR", "localhost", "ARMADA_METRICS_ADDR must look like"),
    ],
    ids=["proxy-header", "csp-mode", "secure-flag", "metrics-addr"],
)
def test_a_bad_security_setting_stops_start_up_naming_it(tmp_path, name, value, fragment):
    result = manage("check", tmp_path=tmp_path, ARMADA_DEV="1", **{name: value})
    assert result.returncode != 0
    assert fragment in result.stderr


def test_proxy_header_and_csp_modes():
    assert proxy_ssl_header("") is None
    assert proxy_ssl_header("X-Forwarded-Proto") == ("HTTP_X_FORWARDED_PROTO", "https")
    enforced, report_only = content_security_policy("enforce")
    assert report_only is None and enforced["DIRECTIVES"]["default-src"] == ["'self'"]
    assert content_security_policy("off") == (None, None)


# --- the pages' Content-Security-Policy ----------------------------------------------------


@pytest.mark.django_db
def test_lookout_pages_send_a_strict_csp_and_still_work(admin_user, queue):
    client = Client()
    client.force_login(admin_user)
    for path in ("/", "/queues/", "/queues/demo/", "/policies/", "/policies/new"):
        response = client.get(path)
        assert response.status_code == 200, path
        policy = response["Content-Security-Policy"]
        for directive in (
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "object-src 'none'",
            "frame-ancestors 'none'",
        ):
            assert directive in policy, (path, policy)
        assert "unsafe-inline" not in policy
    # The admin and the API's browsable pages use inline scripts; they are left out.
    assert "Content-Security-Policy" not in client.get("/admin/")
    assert "Content-Security-Policy" not in client.get("/api/v1/queues")


def test_lookout_templates_have_no_inline_script_or_style():
    """What a strict policy would block: inline <script> and <style>, style attributes and
    event-handler attributes, in every Lookout template."""
    templates = sorted((ROOT / "templates").rglob("*.html"))
    assert templates
    for template in templates:
        text = template.read_text()
        assert "<style" not in text, template
        assert " style=" not in text, template
        for line in text.splitlines():
            if "<script" in line:
                assert " src=" in line, (template, line)
            for handler in ("onclick=", "onchange=", "onsubmit=", "onload=", "oninput="):
                assert handler not in line, (template, line)
