"""Real processes for end-to-end tests: uvicorn (web), the grpc process (Armada's gRPC API),
the executor API, a Celery scheduler worker, Celery beat (its own process, as in production)
and an ``armada-executor`` process per executor (with its own worker and file broker,
talking to the executor API), all on the test database and the configured broker (Redis
when ``REDIS_URL`` is set, else the file-system broker in a temporary folder).

``system`` starts them with ``E2E_CONFIG``; ``launch`` starts them with any configuration,
and a running ``System`` can stop one process or restart the scheduler with a new one.
``armada_client`` gives the official ``armada_client.client.ArmadaClient`` connected to the
grpc process as a given user, authenticated the way its users do it.

TLS: ``launch(config, tls=True)`` (and ``wire_system.module_system(..., tls=True)``) start
the same system with TLS on the gRPC port and HTTPS on the web port, with a certificate
authority made for the test (``tests.tls_certs``). ``System.tls`` then holds its files
(``ca``, ``cert``, ``key``); ``System.url`` is ``https://``; ``System.get``/``post`` and
``armadactl`` (``ARMADA_CA_FILE``) trust the CA; ``System.verify`` is what to give
``requests`` as ``verify=``; and ``System.grpc_channel(authorization)`` (or
``tests.tls_channels.secure_channel``) is a TLS channel to the grpc process that trusts
the CA and sends ``authorization`` with every call, as Armada's clients do over TLS."""

from __future__ import annotations

import base64
import collections
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import grpc
import pytest
import requests
import yaml
from armada_client.client import ArmadaClient

from armada.executorapiserver import executor_api_command
from armada.grpcserver import grpc_command
from armada.management.commands.runall import celery_beat_command
from armada.webserver import WEB_COMMAND
from tests.tls_certs import TlsFiles, make_ca_and_server_cert
from tests.tls_channels import secure_channel, with_tls
from tests.waiting import wait_for_http, wait_until

ROOT = Path(__file__).resolve().parents[2]
HTTP_TIMEOUT = 30  # seconds; generous, so that a busy machine is slow rather than failing
E2E_CONFIG = {
    "scheduling": {"cyclePeriod": "300ms"},
    "executorTimeout": "30s",
    "executors": [
        {
            "id": "e2e",
            "tickPeriod": "300ms",
            "nodes": [
                {"name": "worker", "count": 2, "allocatable": {"cpu": "4", "memory": "16Gi"}}
            ],
        }
    ],
}
PY = sys.executable
WORKER = [
    PY,
    "-m",
    "celery",
    "-A",
    "armada.celery",
    "worker",
    "--pool=solo",
    "--without-mingle",
    "--without-gossip",
]


@dataclass
class System:
    url: str
    env: dict[str, str]
    logs: Path
    workdir: Path
    grpc_target: str = ""  # host:port of the grpc process
    executor_api_target: str = ""  # host:port of the executor-api process
    children: dict[str, tuple[subprocess.Popen, IO]] = field(default_factory=dict)
    tls: TlsFiles | None = None  # TLS on the grpc and web ports (``use_tls``), or plaintext

    @property
    def auth(self) -> tuple[str, str]:
        return (self.env["ARMADA_USERNAME"], self.env["ARMADA_PASSWORD"])

    @property
    def verify(self) -> str | bool:
        """``requests``' ``verify=`` for the web port: the test CA with TLS."""
        return str(self.tls.ca) if self.tls else True

    def use_tls(self, config: dict) -> dict:
        """Turn TLS on for the grpc and web ports (call before starting them): a new CA and
        server certificate under ``workdir``, ``url`` and ``ARMADA_URL`` made ``https://``,
        ``ARMADA_CA_FILE`` set for armadactl; ``config`` with ``grpc.tls`` and ``web.tls``
        (write it and point ``ARMADA_CONFIG`` at it)."""
        self.tls = make_ca_and_server_cert(self.workdir / "tls")
        self.url = self.url.replace("http://", "https://", 1)
        self.env["ARMADA_URL"] = self.url
        self.env["ARMADA_CA_FILE"] = str(self.tls.ca)
        return with_tls(config, self.tls)

    def grpc_channel(self, authorization: str | None = None) -> grpc.Channel:
        """A channel to the grpc process (TLS trusting the test CA when the system has TLS)
        whose every call sends ``authorization`` (none when None)."""
        if self.tls:
            return secure_channel(self.grpc_target, self.tls.ca, authorization)
        if authorization is None:
            return grpc.insecure_channel(self.grpc_target)
        return authenticated_channel(self.grpc_target, authorization)

    def armadactl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        exe = Path(PY).with_name("armadactl")
        return subprocess.run(
            [str(exe), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
        )

    def log_tail(self) -> str:
        return "\n".join(
            f"--- {p.name}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-40:])
            for p in sorted(self.logs.glob("*.log"))
        )

    def start(self, name: str, command: list[str], env: dict[str, str] | None = None) -> None:
        log = open(self.logs / f"{name}.log", "a")  # noqa: SIM115 - closed in stop()
        proc = subprocess.Popen(
            command, env=env or self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        self.children[name] = (proc, log)

    def stop(self, name: str) -> None:
        proc, log = self.children.pop(name)
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()

    def stop_all(self) -> None:
        for name in list(self.children):
            self.stop(name)

    def write_config(self, config: dict, name: str = "armada.yaml") -> Path:
        path = self.workdir / name
        path.write_text(yaml.safe_dump(config))
        return path

    def start_scheduler(self, config_path: Path | None = None) -> None:
        """Start the scheduler worker and (again) beat, both with ``config_path``."""
        env = dict(self.env)
        if config_path is not None:
            env["ARMADA_CONFIG"] = str(config_path)
        self.start("scheduler", [*WORKER, "-Q", "scheduler", "-n", "scheduler@e2e"], env)
        if "beat" in self.children:
            self.stop("beat")  # a clean stop hands the lease over at once
        self.start("beat", celery_beat_command(), env)

    def start_executors(self, config: dict) -> None:
        """Start the executor API, then an ``armada-executor`` process for each executor of
        ``config``, each with a credential and a file of its own, as ``runall`` does."""
        from django.utils import timezone

        from armada import local_executors
        from armada.core.config import parse_config

        if not self.executor_api_target:
            self.executor_api_target = f"127.0.0.1:{_free_port()}"
        if "executor-api" not in self.children:
            self.start("executor-api", executor_api_command(self.executor_api_target))
        for executor in parse_config(config).executors:
            command = local_executors.prepare(
                executor,
                var_dir=Path(self.env["ARMADA_VAR_DIR"]),
                api_address=self.executor_api_target,
                now=timezone.now(),
            )
            self.start(f"executor-{executor.id}", command)

    def start_grpc(self) -> None:
        """Start the grpc process on ``grpc_target`` and wait until it answers Health."""
        self.start("grpc", grpc_command(self.grpc_target))
        wait_for_grpc(
            self.grpc_target,
            self.children["grpc"][0],
            details=self.log_tail,
            ca_file=self.tls.ca if self.tls else None,
        )

    def get(self, path: str) -> requests.Response:
        return requests.get(
            self.url + path, auth=self.auth, timeout=HTTP_TIMEOUT, verify=self.verify
        )

    def post(self, path: str, **kwargs) -> requests.Response:
        kwargs.setdefault("verify", self.verify)
        return requests.post(self.url + path, auth=self.auth, timeout=HTTP_TIMEOUT, **kwargs)

    def wait_for(self, what: str, predicate, timeout: float = 60.0, interval: float = 0.3):
        """Poll ``predicate`` until it returns something truthy; a slow or refused HTTP
        request counts as not yet (``tests.waiting``); fail with the logs if time runs out."""
        return wait_until(
            what, predicate, timeout=timeout, interval=interval, details=self.log_tail
        )


def _database_url(settings_dict: dict) -> str:
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(settings_dict['NAME']).resolve()}"
    user = quote(settings_dict.get("USER") or "")
    password = quote(settings_dict.get("PASSWORD") or "")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{auth}{host}:{port}/{settings_dict['NAME']}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _e2e_redis_url(url: str) -> str:
    """A database number of its own, so a developer's running system is not disturbed: the
    one below the suite's (``/14`` gives ``/13``), so that two suites run side by side with
    different ``REDIS_URL`` databases do not flush each other's."""
    base, _, number = url.rpartition("/") if url.count("/") > 2 else (url, "", "0")
    db = int(number) if number.isdigit() else 0
    return f"{base}/{(db - 1) % 16}"


def process_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a process under test: the test database, a var dir of its own
    under ``tmp_path``, the Redis database below the suite's, and ``extra``."""
    from django.db import connection

    env = {
        **os.environ,
        "ARMADA_DEV": "1",
        "ARMADA_VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": _database_url(connection.settings_dict),
        "PYTHONUNBUFFERED": "1",
        **extra,
    }
    if os.environ.get("REDIS_URL"):
        env["REDIS_URL"] = _e2e_redis_url(os.environ["REDIS_URL"])
    return env


def wait_for_grpc(
    target: str,
    process: subprocess.Popen | None = None,
    details: Callable[[], str] = str,
    *,
    ca_file: Path | None = None,
) -> None:
    """Wait until the grpc process at ``target`` answers ``api.Submit/Health`` (which needs
    no credentials), over TLS trusting ``ca_file`` when given; fail at once if ``process``
    has exited."""
    channel = secure_channel(target, ca_file) if ca_file else grpc.insecure_channel(target)
    client = ArmadaClient(channel)

    def serving() -> bool:
        if process is not None and process.poll() is not None:
            pytest.fail(f"the grpc process exited with {process.returncode}\n{details()}")
        try:
            return client.submit_health().status == client.submit_health().SERVING
        except grpc.RpcError:
            return False

    try:
        wait_until("the grpc process", serving, timeout=120, interval=0.3, details=details)
    finally:
        channel.close()


class _CallDetails(
    collections.namedtuple(
        "_CallDetails",
        ("method", "timeout", "metadata", "credentials", "wait_for_ready", "compression"),
    ),
    grpc.ClientCallDetails,
):
    pass


class AuthorizationMetadata(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds ``authorization: <value>`` to every call on an insecure channel, as Armada's
    Python users do with ``grpc.intercept_channel`` (call credentials need a secure channel)."""

    def __init__(self, value: str) -> None:
        self.value = value

    def _with_auth(self, details: grpc.ClientCallDetails) -> _CallDetails:
        metadata = [*(details.metadata or ()), ("authorization", self.value)]
        return _CallDetails(
            details.method,
            details.timeout,
            metadata,
            details.credentials,
            getattr(details, "wait_for_ready", None),
            getattr(details, "compression", None),
        )

    def intercept_unary_unary(self, continuation, client_call_details, request):
        return continuation(self._with_auth(client_call_details), request)

    def intercept_unary_stream(self, continuation, client_call_details, request):
        return continuation(self._with_auth(client_call_details), request)


def authenticated_channel(target: str, authorization: str) -> grpc.Channel:
    """An insecure channel to ``target`` whose every call sends ``authorization``."""
    return grpc.intercept_channel(
        grpc.insecure_channel(target), AuthorizationMetadata(authorization)
    )


def web_command(port: int, tls: TlsFiles | None = None) -> list[str]:
    """The web process on ``port``, started as production starts it (HTTPS with ``tls``,
    with the options runall gives it)."""
    from armada.tls import ServerTls
    from armada.webserver import tls_options

    options = tls_options(ServerTls(str(tls.cert), str(tls.key)) if tls else None)
    return [PY, "-m", *WEB_COMMAND, "--host", "127.0.0.1", "--port", str(port), *options]


@pytest.fixture
def launch(transactional_db, tmp_path, django_user_model) -> Iterator:
    """``launch(config)`` starts web, scheduler and one worker per executor of ``config``;
    ``launch(config, tls=True)`` with TLS on the grpc and web ports (``System.use_tls``)."""
    django_user_model.objects.create_superuser("e2e-admin", "e2e@example.com", "e2e-password")
    (tmp_path / "armadactl.yaml").write_text("{}\n")  # keep ~/.armadactl.yaml out of the test
    logs = tmp_path / "logs"
    logs.mkdir()
    port = _free_port()
    grpc_target = f"127.0.0.1:{_free_port()}"
    env = process_env(
        tmp_path,
        ARMADA_URL=f"http://127.0.0.1:{port}",
        ARMADA_USERNAME="e2e-admin",
        ARMADA_PASSWORD="e2e-password",
        ARMADACTL_CONFIG=str(tmp_path / "armadactl.yaml"),
    )
    if os.environ.get("REDIS_URL"):
        import redis

        redis.Redis.from_url(env["REDIS_URL"]).flushdb()
    system = System(
        url=env["ARMADA_URL"], env=env, logs=logs, workdir=tmp_path, grpc_target=grpc_target
    )

    def start(config: dict, *, tls: bool = False) -> System:
        if tls:
            config = system.use_tls(config)
        system.env["ARMADA_CONFIG"] = str(system.write_config(config))
        system.start("web", web_command(port, system.tls))
        system.start_scheduler()
        system.start_executors(config)

        wait_for_http(
            system.url + "/healthz",
            "the web process",
            processes=[proc for proc, _ in system.children.values()],
            details=system.log_tail,
            verify=system.verify,
        )
        system.start_grpc()
        return system

    try:
        yield start
    finally:
        system.stop_all()


@pytest.fixture
def system(launch) -> System:
    return launch(E2E_CONFIG)


@pytest.fixture
def armada_client(system) -> Iterator[Callable[..., ArmadaClient]]:
    """``armada_client(user)`` -> an ``ArmadaClient`` on the grpc process as ``user`` (a
    username or a user): with a personal API token made for them (``authorization: Bearer``,
    the fast way in), or with ``password=`` as Basic credentials."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from armada.services.tokens import token_create

    channels: list[grpc.Channel] = []

    def make(user: Any = "e2e-admin", *, password: str | None = None) -> ArmadaClient:
        if isinstance(user, str):
            user = get_user_model().objects.get(username=user)
        if password is not None:
            raw = f"{user.get_username()}:{password}".encode()
            authorization = "Basic " + base64.b64encode(raw).decode()
        else:
            name = f"e2e-grpc-{len(channels)}"
            key = token_create(user=user, name=name, expires_at=None, now=timezone.now()).key
            authorization = f"Bearer {key}"
        channels.append(system.grpc_channel(authorization))
        return ArmadaClient(channels[-1])

    yield make
    for channel in channels:
        channel.close()


@pytest.fixture(autouse=True)
def _fast_password_hashing():
    """The servers started here check passwords with the production hashers, so users made
    by these tests must be hashed with them too (this overrides the suite-wide shortcut)."""
