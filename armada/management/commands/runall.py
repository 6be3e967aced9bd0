"""``manage.py runall``: the whole system on one machine (web, scheduler + beat, executors).

Migrates, creates the local admin user, collects static files, then starts and supervises:
- web: uvicorn serving ``armada.asgi`` (REST API, admin, Lookout, metrics, event streams);
- scheduler: a Celery worker on queue ``scheduler`` with the beat scheduler embedded;
- one Celery worker per configured executor on queue ``executor.<id>``.
If any process exits, the others are stopped and the command exits non-zero; Ctrl-C stops all.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from armada.celery import executor_queue


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


def celery_worker_command(queue: str, name: str, *, beat: bool = False) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "armada.celery",
        "worker",
        "-Q",
        queue,
        "-n",
        f"{name}@%h",
        "--pool=solo",
        "--without-mingle",
        "--without-gossip",
        "--loglevel",
        os.environ.get("LOG_LEVEL", "INFO"),
    ]
    if beat:
        cmd += ["-B", "-s", str(settings.VAR_DIR / "celerybeat-schedule")]
    return cmd


class Command(BaseCommand):
    help = "Run web, scheduler (with beat) and every configured executor, supervised."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default=os.environ.get("ARMADA_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("ARMADA_PORT", "8000")))
        parser.add_argument("--no-admin", action="store_true", help="do not create the admin user")

    def handle(self, *args, host: str, port: int, no_admin: bool, **options) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        call_command("seed_permissions", verbosity=0)
        if not no_admin:
            self._ensure_admin()
        processes = {
            "web": [
                sys.executable,
                "-m",
                "uvicorn",
                "armada.asgi:application",
                "--host",
                host,
                "--port",
                str(port),
                "--no-access-log",
            ],
            "scheduler": celery_worker_command("scheduler", "scheduler", beat=True),
        }
        for executor in settings.ARMADA.executors:
            processes[f"executor {executor.id}"] = celery_worker_command(
                executor_queue(executor.id), f"executor-{executor.id}"
            )
        self._supervise(processes, f"http://{host}:{port}/")

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

    def _supervise(self, commands: dict[str, list[str]], url: str) -> None:
        children: dict[str, subprocess.Popen] = {}
        stopping = False

        def stop(*_: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        for name, cmd in commands.items():
            children[name] = subprocess.Popen(cmd)
        self.stdout.write(
            self.style.SUCCESS(
                f"Armada is up at {url}  (API docs {url}api/v1/docs, admin {url}admin/)"
            )
        )
        self.stdout.flush()
        failed = ""
        while not stopping:
            for name, child in children.items():
                if child.poll() is not None:
                    failed = name
                    stopping = True
                    break
            time.sleep(0.5)
        for child in children.values():
            if child.poll() is None:
                child.terminate()
        deadline = time.monotonic() + 15
        for child in children.values():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
        if failed:
            self.stderr.write(
                f"{failed} exited with code {children[failed].returncode}; stopped the rest"
            )
            sys.exit(1)
