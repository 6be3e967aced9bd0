"""``/metrics`` is not public (armada.web.metrics_access): a bearer token, a separate address,
or development mode; ``/healthz`` is."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from armada.web.metrics_access import parse_metrics_addr

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-scrape-token"

pytestmark = pytest.mark.django_db


@pytest.fixture
def anonymous() -> Client:
    return Client()


def test_open_in_development(anonymous, settings):
    settings.DEV_MODE, settings.ARMADA_METRICS_TOKEN, settings.ARMADA_METRICS_ADDR = True, "", ""
    response = anonymous.get("/metrics")
    assert response.status_code == 200
    assert b"armada_queue_jobs" in response.content


OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def test_the_text_format_whatever_the_scraper_asks(anonymous, settings, queue):
    """Armada's counters keep their names without ``_total``: Prometheus' text format allows
    that for a counter and OpenMetrics does not, so the text format is always sent, as
    Armada's servers send it."""
    from prometheus_client.parser import text_string_to_metric_families

    settings.DEV_MODE, settings.ARMADA_METRICS_TOKEN, settings.ARMADA_METRICS_ADDR = True, "", ""
    response = anonymous.get("/metrics", HTTP_ACCEPT=OPENMETRICS)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain;")
    text = response.content.decode()
    families = {f.name: f.type for f in text_string_to_metric_families(text)}
    assert families["armada_scheduler_scheduled_jobs"] == "counter"
    assert "# TYPE armada_scheduler_scheduled_jobs counter" in text


def test_refused_in_production_without_a_token_or_an_address(anonymous, settings):
    settings.DEV_MODE, settings.ARMADA_METRICS_TOKEN, settings.ARMADA_METRICS_ADDR = False, "", ""
    response = anonymous.get("/metrics")
    assert response.status_code == 403
    assert "ARMADA_METRICS_TOKEN" in response.json()["message"]
    assert b"armada_" not in response.content


@pytest.mark.parametrize("dev_mode", [True, False], ids=["development", "production"])
def test_with_a_token_only_its_bearer_reads_them(anonymous, settings, queue, dev_mode):
    settings.DEV_MODE, settings.ARMADA_METRICS_TOKEN = dev_mode, TOKEN
    for headers in (
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": "Bearer s\u00e9cret"},
    ):
        response = anonymous.get("/metrics", headers=headers)
        assert response.status_code == 401, headers
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert b'queue="demo"' not in response.content
    response = anonymous.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")


def test_with_a_separate_address_the_site_says_where_they_are(anonymous, settings):
    settings.DEV_MODE, settings.ARMADA_METRICS_TOKEN = True, ""
    settings.ARMADA_METRICS_ADDR = "127.0.0.1:9100"
    response = anonymous.get("/metrics")
    assert response.status_code == 404
    assert "ARMADA_METRICS_ADDR" in response.json()["message"]


def test_healthz_is_public_and_asks_no_database(anonymous, settings, django_assert_num_queries):
    settings.DEV_MODE = False
    with django_assert_num_queries(0):
        response = anonymous.get("/healthz")
    assert response.status_code == 200
    assert response.content == b"ok\n"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", None),
        ("127.0.0.1:9100", ("127.0.0.1", range(9100, 9101))),
        ("0.0.0.0:9100-9109", ("0.0.0.0", range(9100, 9110))),
        (":9100", ("", range(9100, 9101))),
        ("[::1]:9100", ("::1", range(9100, 9101))),
    ],
    ids=["unset", "one-port", "range", "every-interface", "ipv6"],
)
def test_metrics_addresses(value, expected):
    assert parse_metrics_addr(value) == expected


@pytest.mark.parametrize(
    "value", ["localhost", "127.0.0.1:", "127.0.0.1:http", "h:9109-9100", "h:0", "h:99999", "h:9٣"]
)
def test_bad_metrics_addresses_are_refused(value):
    with pytest.raises(ImproperlyConfigured, match="ARMADA_METRICS_ADDR"):
        parse_metrics_addr(value)


def _free_ports(count: int) -> int:
    """The first of ``count`` consecutive free ports (checked, then released)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            first = s.getsockname()[1]
        if first + count > 65535:
            continue
        sockets = []
        try:
            for port in range(first, first + count):
                sock = socket.socket()
                sock.bind(("127.0.0.1", port))
                sockets.append(sock)
            return first
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise AssertionError("no run of free ports")


SERVE = "import time; time.sleep(120)"


def _wait_for_metrics(url: str, proc: subprocess.Popen, deadline: float) -> requests.Response:
    while True:
        assert proc.poll() is None, proc.communicate()[1]
        try:
            return requests.get(url, timeout=5)
        except requests.RequestException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_each_process_serves_its_metrics_on_a_port_of_the_range(tmp_path):
    """Two processes given the same range of two ports take one each; the site's own
    ``/metrics`` is not where they are."""
    from django.db import connection

    first = _free_ports(2)
    db = connection.settings_dict
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ARMADA_")},
        "ARMADA_DEV": "1",
        "ARMADA_VAR_DIR": str(tmp_path / "var"),
        "ARMADA_METRICS_ADDR": f"127.0.0.1:{first}-{first + 1}",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
        if connection.vendor == "postgresql"
        else f"sqlite:///{db['NAME']}",
    }
    command = [sys.executable, "manage.py", "shell", "-c", SERVE]
    procs = []
    try:
        for _ in range(2):
            proc = subprocess.Popen(
                command, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL
            )
            procs.append(proc)
            deadline = time.monotonic() + 60
            url = f"http://127.0.0.1:{first + len(procs) - 1}/metrics"
            response = _wait_for_metrics(url, proc, deadline)
            assert response.status_code == 200
            assert "armada_queue_jobs" in response.text
            # The text format even to a scraper that asks for OpenMetrics, as on the site.
            asked = requests.get(url, timeout=30, headers={"Accept": OPENMETRICS})
            assert asked.headers["Content-Type"].startswith("text/plain")
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=30)
