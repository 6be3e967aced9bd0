"""Django settings, read from the environment through small typed helpers.

- ``DATABASE_URL``: PostgreSQL in production; unset means SQLite (WAL) under ``var/``.
- ``REDIS_URL``: Celery broker and event fan-out; unset means a file-system broker under ``var/``.
- ``ARMADA_CONFIG``: the scheduler/executor configuration file (default ``config/armada.yaml``).
- ``SECRET_KEY``: required unless ``ARMADA_DEV=1`` (development mode, which keeps a
  generated key in ``var/secret-key``).
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from armada.conf import HTMX_DIR, INSTALLED, SITE_DIR, ConfigError, get_config
from armada.logs import logging_config
from armada.web.security import content_security_policy, proxy_ssl_header, secret_key

BASE_DIR = SITE_DIR  # a checkout, or an installed wheel's armada/_site (armada.conf)


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {value!r}")


def env_list(name: str, default: str = "") -> list[str]:
    return [v.strip() for v in os.environ.get(name, default).split(",") if v.strip()]


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if not value.isascii() or not value.isdigit():
        raise ImproperlyConfigured(f"{name} must be a whole number, got {value!r}")
    return int(value)


DEV_MODE = env_bool("ARMADA_DEV", False)
DEBUG = env_bool("DEBUG", False)

try:
    ARMADA = get_config()
except ConfigError as exc:
    raise ImproperlyConfigured(str(exc)) from None

# Run-time files (the embedded database, the file broker, collected static files): the
# checkout's var/, or ./var of an installed package's working directory, unless named.
VAR_DIR = Path(env_str("ARMADA_VAR_DIR") or (Path.cwd() if INSTALLED else BASE_DIR) / "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)

# --- secret key, HTTPS, the pages' CSP, /metrics (README: "Running in production") ----------
# From the environment; in development one generated once and kept in var/secret-key.
SECRET_KEY = secret_key(given=env_str("SECRET_KEY"), dev_mode=DEV_MODE, var_dir=VAR_DIR)
# ARMADA_SECURE=1 turns the production set on; each variable below overrides its own part.
SECURE = env_bool("ARMADA_SECURE", False)
SESSION_COOKIE_SECURE = env_bool("ARMADA_SESSION_COOKIE_SECURE", SECURE)
CSRF_COOKIE_SECURE = env_bool("ARMADA_CSRF_COOKIE_SECURE", SECURE)
SECURE_SSL_REDIRECT = env_bool("ARMADA_SSL_REDIRECT", SECURE)
SECURE_REDIRECT_EXEMPT = [
    r"^healthz$",
    r"^readyz$",
    r"^health$",
]  # load balancers probe over plain HTTP
SECURE_HSTS_SECONDS = env_int("ARMADA_HSTS_SECONDS", 365 * 24 * 3600 if SECURE else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("ARMADA_HSTS_INCLUDE_SUBDOMAINS", SECURE)
SECURE_HSTS_PRELOAD = env_bool("ARMADA_HSTS_PRELOAD", SECURE)
SECURE_PROXY_SSL_HEADER = proxy_ssl_header(env_str("ARMADA_PROXY_SSL_HEADER"))
CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY_REPORT_ONLY = content_security_policy(
    env_str("ARMADA_CSP", "enforce")
)
ARMADA_METRICS_TOKEN = env_str("ARMADA_METRICS_TOKEN")
ARMADA_METRICS_ADDR = env_str("ARMADA_METRICS_ADDR")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_prometheus",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "armada",
    "lookout",
]

MIDDLEWARE = [
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Path, query and form text every view may trust (400/404 with a message otherwise).
    "armada.web.inputs.InputGuardMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
    # Last, as it calls the view itself (every other middleware's process_view has run): a
    # read whose database connection broke runs once more; a broken write answers 503.
    "armada.web.dbfaults.DatabaseFaultMiddleware",
]

ROOT_URLCONF = "armada.urls"
WSGI_APPLICATION = "armada.wsgi.application"
ASGI_APPLICATION = "armada.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------------
SQLITE_PATH = VAR_DIR / "armada.sqlite3"
DATABASE_URL = env_str("DATABASE_URL") or f"sqlite:///{SQLITE_PATH}"
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
_db = DATABASES["default"]
if _db["ENGINE"] == "django.db.backends.sqlite3":
    _db["CONN_MAX_AGE"] = 0
    # WAL lets readers run beside the one writer; IMMEDIATE transactions take the write lock
    # up front so that two processes never deadlock upgrading a read lock; the timeout makes
    # a writer wait for the lock instead of failing.
    _db["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
    _db["TEST"] = {"NAME": str(Path(_db["NAME"]).with_name("test-" + Path(_db["NAME"]).name))}
elif _db["ENGINE"] == "django.db.backends.postgresql":
    # A connection pool per process. Under ASGI every request runs in a thread of its own,
    # so per-thread persistent connections would be opened and closed on every request
    # (about 7 ms of a 17 ms read); the pool keeps them. Pools need CONN_MAX_AGE 0.
    _db["CONN_MAX_AGE"] = 0
    # Health checks: with a pool, Django has psycopg-pool test each connection as it leaves
    # the pool (``ConnectionPool.check_connection``) and replace one the server has dropped
    # (a restart, pg_terminate_backend): one round trip instead of a failed request.
    _db["CONN_HEALTH_CHECKS"] = True
    _db["OPTIONS"] = {
        "pool": {"min_size": 1, "max_size": env_int("ARMADA_DB_POOL_SIZE", 8), "timeout": 30}
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
# Our own files, and htmx as `make install` put it in node_modules (package-lock.json), or
# as the wheel carries it.
STATICFILES_DIRS = [BASE_DIR / "static", ("vendor/htmx", HTMX_DIR)]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)

# --- logins, tokens and request bodies ------------------------------------------------------
# Lookout's own login page, for every active user (the admin's takes staff only).
LOGIN_URL = "lookout:login"
LOGIN_REDIRECT_URL = "lookout:jobs"
LOGOUT_REDIRECT_URL = "lookout:login"
# Failed-login throttling (armada.services.login_throttle), shared by Basic auth and both
# login pages. Its counts are kept in the cache below, never in the database.
LOGIN_THROTTLE = {
    "USER_FAILURES": env_int("ARMADA_LOGIN_MAX_FAILURES", 5),
    "ADDRESS_FAILURES": env_int("ARMADA_LOGIN_MAX_FAILURES_PER_ADDRESS", 20),
    "WINDOW_SECONDS": env_int("ARMADA_LOGIN_FAILURE_WINDOW", 15 * 60),
    "BASE_DELAY_SECONDS": env_int("ARMADA_LOGIN_LOCKOUT_SECONDS", 10),
    "MAX_DELAY_SECONDS": env_int("ARMADA_LOGIN_LOCKOUT_MAX_SECONDS", 15 * 60),
}
# Sessions are kept in the database; with Redis, also in the cache, so that a request reads
# its session from Redis (every web process shares it; a logout clears both).
if env_str("REDIS_URL"):
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
# Shared by every web process through Redis when there is one; else the default cache
# (Lookout's kept group counts) is each process's memory and the login throttle's is files
# on this machine.
# With Redis, the default cache answers as an empty one while Redis does not answer
# (armada.web.resilient_cache: sessions are then read from the database); every Redis call is
# bounded by short timeouts.
REDIS_CACHE_OPTIONS = {"socket_connect_timeout": 1.0, "socket_timeout": 2.0}
CACHES = {
    "default": (
        {
            "BACKEND": "armada.web.resilient_cache.ResilientRedisCache",
            "LOCATION": env_str("REDIS_URL"),
            "KEY_PREFIX": "armada",
            "OPTIONS": REDIS_CACHE_OPTIONS,
        }
        if env_str("REDIS_URL")
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    ),
    "login-throttle": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": env_str("REDIS_URL"),
            "KEY_PREFIX": "armada-login-throttle",
            "OPTIONS": REDIS_CACHE_OPTIONS,
        }
        if env_str("REDIS_URL")
        else {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache" / "login-throttle"),
            "KEY_PREFIX": "armada-login-throttle",
        }
    ),
    # How Lookout's grid reads a filter's page (lookout.grid.pages): a hint each web process
    # keeps for itself for a minute, never shared, so that no other process's or earlier
    # run's answer is ever used.
    "lookout-plans": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
}
# The largest request body: the API answers 413 above it, before reading it. The default
# holds a job file of the most jobs one submit accepts with room to spare.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("ARMADA_MAX_BODY_BYTES", 10 * 1024 * 1024)
# The largest body taken from a caller who has not logged in (the login form, say): the
# ASGI guard (armada.api.bodyguard) answers 413 above it and never spools such a body.
ANONYMOUS_MAX_BODY_BYTES = env_int("ARMADA_MAX_ANONYMOUS_BODY_BYTES", 64 * 1024)
# How much of each run's log is kept: the last this many KiB (older lines are dropped, and
# a marker line says how many bytes; services.run_logs). At least 1.
RUN_LOG_LIMIT_BYTES = max(1, env_int("ARMADA_RUN_LOG_KIB", 64)) * 1024

# --- REST API -------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: its WWW-Authenticate header makes an anonymous call a 401, not a 403.
        # It takes personal API tokens and DRF's legacy tokens, as Bearer or Token.
        "armada.api.auth.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
        # Slow by design (one password hash per call) and throttled after failures.
        "armada.api.auth.ThrottledBasicAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "rest_framework.parsers.JSONParser",
        "armada.api.parsers.YAMLParser",
    ],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "EXCEPTION_HANDLER": "armada.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Armada control plane API",
    "DESCRIPTION": "Queues, jobs, job sets, events and retry policies.",
    "VERSION": "v1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # One name per choice set, so that the schema (and `check --deploy`) has no collisions.
    "ENUM_NAME_OVERRIDES": {
        "JobStateEnum": "armada.models.job.JOB_STATES",
        "RunStateEnum": "armada.models.job.RUN_STATES",
        "RetryActionEnum": ["Retry", "Fail"],
    },
}

# --- Celery ---------------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
BROKER_DIR = VAR_DIR / "broker"
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = {}
else:
    for sub in ("queue", "processed", "control", "bad"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://"
    # kombu's file-system transport with atomic writes; undecodable messages go to bad/.
    CELERY_BROKER_TRANSPORT = "armada.broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "store_processed": False,
        "control_folder": str(BROKER_DIR / "control"),
        "bad_folder": str(BROKER_DIR / "bad"),
    }
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The file-system broker has no fan-out worth paying for: no remote control, no events.
CELERY_WORKER_ENABLE_REMOTE_CONTROL = bool(REDIS_URL)
CELERY_WORKER_SEND_TASK_EVENTS = False
# Beat is its own process and sends only while it holds the "beat" lease (armada.beat).
CELERY_BEAT_SCHEDULER = "armada.beat:LeasedScheduler"

# Log lines: human-readable, or one JSON object per line with ARMADA_LOG_FORMAT=json
# (armada.logs: time, level, logger, message, process kind, and job/run/queue ids).
try:
    LOGGING = logging_config(
        log_format=env_str("ARMADA_LOG_FORMAT", "plain").strip().lower() or "plain",
        level=env_str("LOG_LEVEL", "INFO"),
    )
except ValueError as exc:
    raise ImproperlyConfigured(str(exc)) from None
