"""Settings for every deployment, read from the environment (see README "Configuration").

Variables: ``SECRET_KEY``, ``DEBUG``, ``ALLOWED_HOSTS``, ``DATABASE_URL``, ``REDIS_URL``,
``CELERY_BROKER_URL``, ``CONSOLE_DATA_DIR``, ``ADMISSION_TICK_S``, ``RECONCILE_TICK_S``,
``ADMISSION_BATCH``, ``DEMO_STREAM_S``. Without ``DATABASE_URL`` / ``REDIS_URL`` the embedded
servers are started (:mod:`console.embedded`). A malformed value stops start-up with
``ImproperlyConfigured``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from console.settings.security import *  # noqa: F403 - CSP, HSTS, cookies, login throttling
from core.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_ints,
    env_list,
    env_rate,
    env_str,
    env_template,
    env_url,
)
from scheduling.kube.limits import DEFAULT_LIMITS as DEFAULT_INVENTORY_LIMITS
from scheduling.kube.limits import SETTINGS as INVENTORY_LIMIT_SETTINGS
from scheduling.kube.pod_security import LEVELS as POD_SECURITY_LEVELS
from telemetry.schedule import beat_schedule as telemetry_beat_schedule

BASE_DIR = Path(__file__).resolve().parent.parent.parent

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG and env_bool("CONSOLE_REQUIRE_SECRET_KEY", False):
        raise ImproperlyConfigured("SECRET_KEY must be set")
    # Embedded/dev default: a per-checkout key kept in the data folder, never committed.
    from console.embedded import data_dir

    key_file = data_dir() / "secret_key"
    if not key_file.exists():
        from django.core.management.utils import get_random_secret_key

        key_file.write_text(get_random_secret_key())
        key_file.chmod(0o600)
    SECRET_KEY = key_file.read_text().strip()

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_prometheus",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "core",
    "console.dashboards",
    "tenants",
    "scheduling",
    "telemetry",
    "notifications",
]

MIDDLEWARE = [
    "console.health.HealthProbeMiddleware",  # /healthz, /readyz: before host checks
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "console.security.middleware.RejectNulCharactersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
    "axes.middleware.AxesMiddleware",  # last (django-axes): turns a lockout into its page
]

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"

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
            ]
        },
    }
]

# --- PostgreSQL -----------------------------------------------------------------------------
DATABASE_URL = env_url("DATABASE_URL", ("postgres", "postgresql"))
if DATABASE_URL is None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
        from console.embedded import ensure_postgres

        DATABASE_URL = ensure_postgres()
# Connections are reused for 60 s, and checked before their first use in each request or
# task: after a PostgreSQL restart the next request reconnects instead of failing once per
# process on the dead connection (tests/faults).
DATABASES = {
    "default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)
}
DATABASES["default"]["ENGINE"] = "django_prometheus.db.backends.postgresql"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis / Celery -------------------------------------------------------------------------
REDIS_URL = env_url("REDIS_URL", ("redis", "rediss", "unix"))
if REDIS_URL is None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from console.embedded import ensure_redis

        REDIS_URL = ensure_redis()


def _celery_url(redis_url: str) -> str:
    """Kombu spells a Unix-socket Redis ``redis+socket://``; redis-py spells it ``unix://``."""
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url[len("unix://") :]
    return redis_url


CELERY_BROKER_URL = env_url("CELERY_BROKER_URL", ("redis", "rediss", "amqp")) or _celery_url(
    REDIS_URL
)
# The queue every task goes to (and workers read with ``celery worker -Q``): installs sharing
# one Redis keep apart by naming their own.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
# Telemetry (simulated samples, scrapes, rollups, gauges, idle checks) has its own queue and
# its own worker process (`celery worker -Q <this queue> -n telemetry@%h`), so an admission
# cycle never waits behind a rollup or a scrape (issue #14). Every install runs both workers:
# docker-compose, `make run` (console.run), the Kustomize deploy, `make bench-e2e`.
CELERY_TELEMETRY_QUEUE = env_str("CELERY_TELEMETRY_QUEUE", f"{CELERY_TASK_DEFAULT_QUEUE}-telemetry")
# The usage check and ledger (every group's usage recomputed from its live placements: 1-2 s at
# thousands of running jobs) is bookkeeping too: on the telemetry worker, cycles never wait
# behind it.
CELERY_TASK_ROUTES = {
    "telemetry.tasks.*": {"queue": CELERY_TELEMETRY_QUEUE},
    "scheduling.tasks.usage_reconcile_task": {"queue": CELERY_TELEMETRY_QUEUE},
}
CELERY_TASK_IGNORE_RESULT = True
# Tasks are acknowledged after they ran, and a task whose pool process died (OOM, kill) is put
# back rather than dropped: every task is idempotent (a cycle, sync or reconcile recomputes
# from the database; state moves are conditional UPDATEs; a notification is at least once,
# deduplicated by its receiver), so running one twice is safe where losing one is not. Every
# task has a time limit (CELERY_TASK_TIME_LIMIT_S, default 10 min): past it the task fails and
# is acknowledged, so a task that never ends cannot loop. The Redis broker's visibility
# timeout follows from these (below, after the notification retries).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT_S", 600, minimum=10)
# the longest autoretry backoff of scheduling.tasks.submit_jobs_task, seconds
SUBMIT_RETRY_BACKOFF_MAX_S = 300
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Publishing from a web request gives up after about 3 x REDIS_TIMEOUT_S when the broker is
# down; the job is committed anyway and the sweeper (below) enqueues the lost work later.
REDIS_TIMEOUT_S = env_float("REDIS_TIMEOUT_S", 2.0, minimum=0.1)
CELERY_BROKER_CONNECTION_TIMEOUT = REDIS_TIMEOUT_S
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
ADMISSION_TICK_S = env_int("ADMISSION_TICK_S", 5, minimum=1)
RECONCILE_TICK_S = env_int("RECONCILE_TICK_S", 2, minimum=1)
ADMISSION_BATCH = env_int("ADMISSION_BATCH", 500, minimum=1)
# CPython's garbage-collector thresholds in the web and worker processes (core.gc_tuning)
PYTHON_GC_THRESHOLDS = env_ints("PYTHON_GC_THRESHOLDS", (50_000, 20, 100))
ADMISSION_PREEMPTION_DELAY_S = env_float("ADMISSION_PREEMPTION_DELAY_S", 0.0, minimum=0.0)
ADMISSION_TERMINATION_GRACE_S = env_float("ADMISSION_TERMINATION_GRACE_S", 30.0, minimum=0.0)
ADMISSION_FAIR_SHARING = env_bool("ADMISSION_FAIR_SHARING", True)
ADMISSION_IDLE_RECHECK_S = env_int("ADMISSION_IDLE_RECHECK_S", 60, minimum=1)
# seconds a worker keeps a resource group's FragGuard/FGD target workload (0 = every cycle)
PLACEMENT_WORKLOAD_TTL_S = env_float("PLACEMENT_WORKLOAD_TTL_S", 30.0, minimum=0.0)
USAGE_RECONCILE_TICK_S = env_int("USAGE_RECONCILE_TICK_S", 60, minimum=1)
# Sweeper of lost enqueues (scheduling.services.sweeper): every SWEEP_TICK_S, placements still
# reserved SUBMIT_SWEEP_GRACE_S after admission get their submission enqueued again.
SWEEP_TICK_S = env_int("SWEEP_TICK_S", 30, minimum=1)
SUBMIT_SWEEP_GRACE_S = env_float("SUBMIT_SWEEP_GRACE_S", 120.0, minimum=0.0)
# Job kinds (scheduling.services.job_kinds): time limits and replica replacement every
# WORKLOADS_TICK_S; a notebook's defaults for idle culling and maximum lifetime.
WORKLOADS_TICK_S = env_int("WORKLOADS_TICK_S", 15, minimum=1)
NOTEBOOK_IDLE_CULL_S = env_float("NOTEBOOK_IDLE_CULL_S", 3600.0, minimum=60.0)
NOTEBOOK_MAX_LIFETIME_S = env_float("NOTEBOOK_MAX_LIFETIME_S", 12 * 3600.0, minimum=60.0)

# Kubernetes clusters (scheduling.backends.kubernetes, services.inventory/kube_reconcile)
KUBE_TICK_S = env_int("KUBE_TICK_S", 15, minimum=1)
KUBE_RESYNC_S = env_float("KUBE_RESYNC_S", 300.0, minimum=1.0)
KUBE_WATCH_S = env_int("KUBE_WATCH_S", 20, minimum=1)
# Full list of the labelled workloads (scheduling.services.intake) at least this often; the
# intake watches between two lists.
KUBE_INTAKE_RESYNC_S = env_float("KUBE_INTAKE_RESYNC_S", 30.0, minimum=1.0)
KUBE_SUBMIT_GRACE_S = env_float("KUBE_SUBMIT_GRACE_S", 60.0, minimum=0.0)
# Device health written back (scheduling.services.cordons): what happens to jobs on a device
# the console marks unhealthy (wait | requeue | fail), and how many failed pods within how many
# seconds mark a device unhealthy.
DEVICE_DRAIN_POLICY = env_choice("DEVICE_DRAIN_POLICY", "wait", ("wait", "requeue", "fail"))
DEVICE_FAILURE_THRESHOLD = env_int("DEVICE_FAILURE_THRESHOLD", 3, minimum=1)
DEVICE_FAILURE_WINDOW_S = env_float("DEVICE_FAILURE_WINDOW_S", 3600.0, minimum=1.0)
KUBE_RETRY_MAX_ATTEMPTS = env_int("KUBE_RETRY_MAX_ATTEMPTS", 5, minimum=1)
KUBE_RETRY_BASE_DELAY_S = env_float("KUBE_RETRY_BASE_DELAY_S", 0.2, minimum=0.0)
KUBE_RETRY_MAX_DELAY_S = env_float("KUBE_RETRY_MAX_DELAY_S", 10.0, minimum=0.0)
KUBE_RETRY_MAX_RETRY_AFTER_S = env_float("KUBE_RETRY_MAX_RETRY_AFTER_S", 60.0, minimum=0.0)
# Each tenant's namespace in each cluster (tenants.selectors.tenant_namespace): {slug} is the
# tenant's name, {cluster} the cluster's; a Cluster row's namespace_pattern overrides it.
TENANT_NAMESPACE_PATTERN = env_template(
    "TENANT_NAMESPACE_PATTERN", "tenant-{slug}", fields=("slug", "cluster"), required=("slug",)
)
# The Pod Security Standards level enforced in each tenant namespace (label
# pod-security.kubernetes.io/enforce; scheduling.kube.pod_security). At baseline or restricted
# the intake also refuses workloads whose pod templates break baseline's checkable controls.
TENANT_POD_SECURITY_LEVEL = env_choice("TENANT_POD_SECURITY_LEVEL", "baseline", POD_SECURITY_LEVELS)
# Inventory bounds per node / slice (scheduling.kube.limits.InventoryLimits): an object over a
# bound is flagged and not read. INVENTORY_MAX_DEVICES_PER_NODE (256),
# INVENTORY_MAX_SPLIT_COUNT (10000), INVENTORY_MAX_MEMORY_MIB (16 TiB), INVENTORY_MAX_CORES,
# INVENTORY_MAX_MIG_PROFILES, INVENTORY_MAX_MIG_PLACEMENTS, INVENTORY_MAX_JSON_DEPTH (32),
# INVENTORY_MAX_ANNOTATION_BYTES (1 MiB), INVENTORY_MAX_SLICE_DEVICES (128),
# INVENTORY_MAX_NODE_CPU_MILLI, INVENTORY_MAX_NODE_MEMORY_MIB.
for _attr, _name in INVENTORY_LIMIT_SETTINGS.items():
    globals()[_name] = env_int(_name, getattr(DEFAULT_INVENTORY_LIMITS, _attr), minimum=1)

CELERY_BEAT_SCHEDULE = {
    "admission-tick": {
        "task": "scheduling.tasks.admission_tick_task",
        "schedule": float(ADMISSION_TICK_S),
    },
    "reconcile-tick": {
        "task": "scheduling.tasks.reconcile_task",
        "schedule": float(RECONCILE_TICK_S),
    },
    "usage-reconcile-tick": {
        "task": "scheduling.tasks.usage_reconcile_task",
        "schedule": float(USAGE_RECONCILE_TICK_S),
    },
    "workloads-tick": {
        "task": "scheduling.tasks.workloads_tick_task",
        "schedule": float(WORKLOADS_TICK_S),
    },
    "kube-tick": {"task": "scheduling.tasks.kube_tick_task", "schedule": float(KUBE_TICK_S)},
    "sweep-tick": {"task": "scheduling.tasks.sweep_task", "schedule": float(SWEEP_TICK_S)},
    **telemetry_beat_schedule(),
}

DEMO_STREAM_S = env_int("DEMO_STREAM_S", 0, minimum=0)
if DEMO_STREAM_S:
    CELERY_BEAT_SCHEDULE["demo-stream"] = {
        "task": "scheduling.tasks.demo_stream_task",
        "schedule": float(DEMO_STREAM_S),
    }

# Notifications (notifications/): webhook timeout and retries, quota threshold, e-mail
QUOTA_ALERT_THRESHOLD_PERCENT = env_int("QUOTA_ALERT_THRESHOLD_PERCENT", 90, minimum=1)
NOTIFY_TIMEOUT_S = env_float("NOTIFY_TIMEOUT_S", 5.0, minimum=0.1)
NOTIFY_MAX_ATTEMPTS = env_int("NOTIFY_MAX_ATTEMPTS", 6, minimum=1)
NOTIFY_BACKOFF_BASE_S = env_float("NOTIFY_BACKOFF_BASE_S", 30.0, minimum=0.0)
# 600 s: at most 10 min between attempts; the default 6 attempts wait 30..480 s anyway
NOTIFY_BACKOFF_MAX_S = env_float("NOTIFY_BACKOFF_MAX_S", 600.0, minimum=0.0)

# Redis visibility timeout: a message delivered to a worker and not acknowledged that long is
# delivered again (to any worker). With late acknowledgement a message stays unacknowledged
# while it waits out its countdown (a retry's backoff: the worker holds it until then) and
# while it runs, so the timeout must exceed the longest countdown plus the longest run, or a
# waiting or running task is delivered a second time and runs twice at once (Celery docs,
# "Using Redis", Caveats: visibility timeout). Kombu's default is 1 h: a task lost with its
# worker waited an hour. Here: the longest countdown + CELERY_TASK_TIME_LIMIT + 60 s
# (21 min by default); tests/console/test_celery_delivery.py checks every task against it.
CELERY_LONGEST_COUNTDOWN_S = max(SUBMIT_RETRY_BACKOFF_MAX_S, NOTIFY_BACKOFF_MAX_S)
CELERY_VISIBILITY_TIMEOUT_S = CELERY_LONGEST_COUNTDOWN_S + CELERY_TASK_TIME_LIMIT + 60
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {"socket_connect_timeout": REDIS_TIMEOUT_S, "visibility_timeout": CELERY_VISIBILITY_TIMEOUT_S}
    if CELERY_BROKER_URL.startswith(("redis", "rediss"))
    else {}
)
EMAIL_HOST = env_str("EMAIL_HOST")
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_PORT = env_int("EMAIL_PORT", 587 if env_bool("EMAIL_USE_TLS", True) else 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL are exclusive; set one")
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "llmops-console@localhost")

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        # a Redis outage must cost a request seconds, not the OS's TCP timeout
        "OPTIONS": {"socket_connect_timeout": REDIS_TIMEOUT_S, "socket_timeout": REDIS_TIMEOUT_S},
    },
    # per-process fallback of the write throttle while Redis is unreachable
    "local": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
}

# --- Auth, API ------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboards:overview"
LOGOUT_REDIRECT_URL = "login"

# OpenID Connect sign-in (console/oidc.py): on when OIDC_RP_CLIENT_ID is set; local accounts stay.
OIDC_RP_CLIENT_ID = env_str("OIDC_RP_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = env_str("OIDC_RP_CLIENT_SECRET")
# the provider's endpoints: discovered from OIDC_ISSUER (console/oidc_discovery.py) unless set
OIDC_ISSUER = env_str("OIDC_ISSUER")
OIDC_OP_AUTHORIZATION_ENDPOINT = env_str("OIDC_OP_AUTHORIZATION_ENDPOINT")
OIDC_OP_TOKEN_ENDPOINT = env_str("OIDC_OP_TOKEN_ENDPOINT")
OIDC_OP_USER_ENDPOINT = env_str("OIDC_OP_USER_ENDPOINT")
OIDC_OP_JWKS_ENDPOINT = env_str("OIDC_OP_JWKS_ENDPOINT")
OIDC_OP_LOGOUT_ENDPOINT = env_str("OIDC_OP_LOGOUT_ENDPOINT")  # RP-initiated logout
OIDC_OP_LOGOUT_URL_METHOD = "console.oidc_discovery.provider_logout_url"
OIDC_STORE_ID_TOKEN = True  # the id_token_hint of the logout at the provider
# seconds per request to the provider: an outage costs a sign-in this, not the OS's TCP timeout
OIDC_TIMEOUT = env_float("OIDC_TIMEOUT_S", 10.0, minimum=0.1)
OIDC_RP_SIGN_ALGO = env_str("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = env_str("OIDC_RP_SCOPES", "openid email profile groups")
OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "single sign-on")
CONSOLE_OIDC_GROUPS_CLAIM = env_str("CONSOLE_OIDC_GROUPS_CLAIM", "groups")
CONSOLE_OIDC_GROUP_MAP = env_str("CONSOLE_OIDC_GROUP_MAP", "{}")
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses locked-out logins (AXES_*)
    "django.contrib.auth.backends.ModelBackend",
    "console.oidc.ConsoleOIDCBackend",
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["core.api.filters.StrictFilterBackend"],
    # JSON only: nested bodies (containers, changes) have no form encoding
    "DEFAULT_PARSER_CLASSES": ["console.security.parsers.BoundedJSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "DEFAULT_PAGINATION_CLASS": "core.api.filters.StrictPageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "core.api.openapi.ConsoleAutoSchema",
    "EXCEPTION_HANDLER": "core.api.exception_handler",
    # core.api.throttling: write requests per user, and jobs per user through batch submission
    "DEFAULT_THROTTLE_RATES": {
        "writes": env_rate("API_WRITE_RATE", "120/min"),
        "batch_jobs": env_rate("API_BATCH_JOB_RATE", "1000/min"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "LLMOps Resource Console API",
    "DESCRIPTION": "Tenants, quotas, device inventory, jobs and placements.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI served from the installed drf-spectacular-sidecar package, never a CDN
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # two state machines both have a field named "state": name their enums after them
    "ENUM_NAME_OVERRIDES": {
        "JobStateEnum": "scheduling.choices.JobState",
        "PlacementStateEnum": "scheduling.choices.PlacementState",
        "JobKindEnum": "scheduling.choices.JobKind",
        "MembershipRoleEnum": "tenants.choices.Role",
        "ContainerRoleEnum": "scheduling.choices.CONTAINER_ROLES",
        "FungibilityPolicyEnum": "scheduling.choices.FungibilityPolicy",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "core.api.openapi.document_error_responses",  # 400/401/403/404/409/429 everywhere
    ],
}

# --- i18n, static ---------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    # An expected 4xx (a 404 for another tenant's job, a viewer's 403) as one line, with no
    # traceback; 5xx records keep theirs (console/request_log.py).
    "filters": {"client_error_line": {"()": "console.request_log.ClientErrorLine"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # Routine task chatter (every tick's "received" / "succeeded", beat's "sending due
    # task") at WARNING: INFO stays for state changes worth reading (an admission cycle that
    # admitted or preempted, a pod created). CELERY_ROUTINE_LOG_LEVEL=INFO brings it back.
    "loggers": {
        **{
            name: {"level": env_str("CELERY_ROUTINE_LOG_LEVEL", "WARNING")}
            for name in ("celery.app.trace", "celery.worker.strategy", "celery.beat")
        },
        "django.request": {"filters": ["client_error_line"]},
    },
}
