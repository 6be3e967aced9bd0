"""``manage.py runall``: the whole system on one machine (web, grpc, scheduler, beat,
executors).

Migrates, creates the local admin user, collects static files, then starts and supervises:
- web: uvicorn serving ``armada.asgi`` (REST API, admin, Lookout, metrics, event streams),
  over HTTPS when ``web.tls`` of the configuration is set;
- grpc: Armada's public gRPC API (``armada.grpcserver``) on ``--host`` at ``--grpc-port``
  (default ``grpc.port`` of the configuration, 50051), or at ``ARMADA_GRPC_ADDR``;
- scheduler: a Celery worker on queue ``scheduler``;
- executor-api: the executor API (``armada.executorapiserver``) on ``--host`` at
  ``--executor-api-port`` (default ``executorApi.port``, 50052), or at
  ``ARMADA_EXECUTOR_API_ADDR``;
- beat: Celery beat alone, sending cycles under the ``beat`` lease;
- one ``armada-executor`` process per configured executor (``armada.local_executors``), each
  with its own credential, Celery worker and broker, talking to the executor API.
A process that dies is restarted (``armada.supervisor``: one log line each, at most
``--max-restarts`` within ``--restart-window`` seconds, then everything stops and the command
exits non-zero); Ctrl-C or SIGTERM stops every process.
"""

from __future__ import annotations

import os
import secrets
import ssl
import sys
import urllib.request
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from django.utils import timezone

from armada import local_executors
from armada.executorapiserver import executor_api_command
from armada.grpcserver import grpc_command, join_address
from armada.supervisor import RestartPolicy, Supervisor
from armada.tls import ServerTls, TlsFileError
from armada.webserver import WEB_COMMAND, tls_options


def _admin_password(var_dir: Path) -> tuple[str, str]:
    """The admin password: ``ARMADA_ADMIN_PASSWORD``, else one generated once and kept in var/."""
    given = os.environ.get("ARMADA_ADMIN_PASSWORD")
    if given:
        return given, "from ARMADA_ADMIN_PASSWORD"
    path = var_dir / "admin-password"
    if path.exists():
        return path.read_text().strip(), f"kept in {path}"
    password = secrets.token_urlsafe(12)
    path.write_text(password + "\n")
    path.chmod(0o600)
    return password, f"generated, kept in {path}"


def _celery(*args: str) -> list[str]:
    """``celery -A armada.celery <args>`` with this interpreter, at ``LOG_LEVEL``."""
    level = os.environ.get("LOG_LEVEL", "INFO")
    return [sys.executable, "-m", "celery", "-A", "armada.celery", *args, "--loglevel", level]


def celery_worker_command(queue: str, name: str) -> list[str]:
    return _celery(
        "worker",
        "-Q",
        queue,
        "-n",
        f"{name}@%h",
        "--pool=solo",
        "--without-mingle",
        "--without-gossip",
    )


def celery_beat_command() -> list[str]:
    """Beat on its own, under the ``beat`` lease (``armada.beat``); a second one stands by."""
    return _celery("beat", "-S", "armada.beat:LeasedScheduler")


class Command(BaseCommand):
    help = (
        "Run web, grpc, the executor API, scheduler, beat and every configured executor, "
        "restarting what dies."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default=os.environ.get("ARMADA_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("ARMADA_PORT", "8000")))
        parser.add_argument(
            "--grpc-port",
            type=int,
            default=None,
            help="port of Armada's gRPC API (default: grpc.port of the configuration; "
            "ARMADA_GRPC_ADDR=host:port overrides both)",
        )
        parser.add_argument(
            "--executor-api-port",
            type=int,
            default=None,
            help="port of the executor API (default: executorApi.port of the configuration; "
            "ARMADA_EXECUTOR_API_ADDR=host:port overrides both)",
        )
        parser.add_argument("--no-admin", action="store_true", help="do not create the admin user")
        parser.add_argument(
            "--max-restarts",
            type=int,
            default=RestartPolicy.max_restarts,
            help="restarts of one process within the window before everything stops",
        )
        parser.add_argument(
            "--restart-window",
            type=float,
            default=RestartPolicy.window,
            help="seconds over which --max-restarts counts",
        )

    def handle(
        self,
        *args,
        host: str,
        port: int,
        grpc_port: int | None,
        executor_api_port: int | None,
        no_admin: bool,
        max_restarts: int,
        restart_window: float,
        **options,
    ) -> None:
        if max_restarts < 0:
            raise CommandError("--max-restarts: must be 0 or more")
        if restart_window <= 0:
            raise CommandError("--restart-window: must be more than 0 seconds")
        for name, given in (("--grpc-port", grpc_port), ("--executor-api-port", executor_api_port)):
            if given is not None and not 0 < given < 65536:
                raise CommandError(f"{name}: must be a port number (1 to 65535)")
        grpc_address = os.environ.get("ARMADA_GRPC_ADDR", "").strip() or join_address(
            host, grpc_port or settings.ARMADA.grpc.port
        )
        api_address = os.environ.get("ARMADA_EXECUTOR_API_ADDR", "").strip() or join_address(
            host, executor_api_port or settings.ARMADA.executor_api.port
        )
        web_tls = self._checked_tls()
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        call_command("seed_permissions", verbosity=0)
        if not no_admin:
            self._ensure_admin()
        processes = {
            "web": [
                sys.executable,
                "-m",
                *WEB_COMMAND,  # as production starts it
                "--host",
                host,
                "--port",
                str(port),
                "--no-access-log",
                *tls_options(web_tls),  # checked above
            ],
            "grpc": grpc_command(grpc_address),
            "executor-api": executor_api_command(api_address),
            "scheduler": celery_worker_command("scheduler", "scheduler"),
            "beat": celery_beat_command(),
        }
        # Each executor is a process of its own that reaches the control plane only through
        # the executor API, with a credential of its own, as on any other machine.
        reach = local_executors.reachable(api_address)
        for executor in settings.ARMADA.executors:
            processes[f"executor {executor.id}"] = local_executors.prepare(
                executor, var_dir=settings.VAR_DIR, api_address=reach, now=timezone.now()
            )
        url = f"{'https' if web_tls else 'http'}://{host}:{port}/"
        grpc_tls = " (TLS)" if settings.ARMADA.grpc.tls.enabled else ""

        def announce() -> None:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Armada is up at {url}  (API docs {url}api/v1/docs, admin {url}admin/)\n"
                    f"Armada's gRPC API at {grpc_address}{grpc_tls}, its REST gateway at "
                    f"{url}v1/\n"
                    f"The executor API at {api_address}"
                )
            )
            self.stdout.flush()

        def say(line: str) -> None:
            self.stdout.write(line)
            self.stdout.flush()

        def web_answers() -> bool:
            """Whether the web process answers /healthz yet (announcing before it does
            would send people to a refused connection)."""
            try:
                with direct.open(f"{url}healthz", timeout=0.5) as answer:
                    return answer.status == 200
            except OSError:
                return False

        # No proxy. Over HTTPS the probe does not verify the certificate: it only asks
        # whether the process runall started answers yet (its host may be 0.0.0.0, say).
        probe_tls = ssl.create_default_context()
        probe_tls.check_hostname, probe_tls.verify_mode = False, ssl.CERT_NONE
        direct = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=probe_tls)
        )

        connections.close_all()  # supervising is waiting: hold no database connection
        policy = RestartPolicy(max_restarts=max_restarts, window=restart_window)
        code = Supervisor(processes, say=say, policy=policy).run(
            on_started=announce, ready=web_answers
        )
        if code:
            sys.exit(code)

    def _checked_tls(self) -> ServerTls | None:
        """Check the certificate and key of every TLS port before anything starts (a bad
        file is one line naming it, not a process restarted until runall gives up); the web
        port's TLS, if it has any."""
        config = settings.ARMADA
        blocks = (
            ("grpc.tls", config.grpc.tls),
            ("executorApi.tls", config.executor_api.tls),
            ("web.tls", config.web.tls),
        )
        found = {name: ServerTls.from_config(block, name) for name, block in blocks}
        for tls in found.values():
            if tls is not None:
                try:
                    tls.check()
                except TlsFileError as exc:
                    raise CommandError(str(exc)) from None
        return found["web.tls"]

    def _ensure_admin(self) -> None:
        username = os.environ.get("ARMADA_ADMIN_USERNAME", "admin")
        password, origin = _admin_password(settings.VAR_DIR)
        User = get_user_model()
        user, created = User.objects.get_or_create(
            username=username, defaults={"is_staff": True, "is_superuser": True}
        )
        if created or not user.check_password(password):
            user.set_password(password)
            user.is_staff = user.is_superuser = True
            user.save()
        self.stdout.write(f"admin user: {username} / password: {password} ({origin})")
        self.stdout.write(
            f"log in once with: armadactl login --username {username}  (stores an API token)"
        )
