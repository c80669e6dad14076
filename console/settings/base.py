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

from core.env import (
    env_bool,
    env_float,
    env_int,
    env_list,
    env_str,
    env_template,
    env_url,
)
from scheduling.kube.limits import DEFAULT_LIMITS as DEFAULT_INVENTORY_LIMITS
from scheduling.kube.limits import SETTINGS as INVENTORY_LIMIT_SETTINGS
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
    "core",
    "console.dashboards",
    "tenants",
    "scheduling",
    "telemetry",
]

MIDDLEWARE = [
    "console.health.HealthProbeMiddleware",  # /healthz, /readyz: before host checks
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
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
            ],
        },
    },
]

# --- PostgreSQL -----------------------------------------------------------------------------
DATABASE_URL = env_url("DATABASE_URL", ("postgres", "postgresql"))
if DATABASE_URL is None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
        from console.embedded import ensure_postgres

        DATABASE_URL = ensure_postgres()
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
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
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
ADMISSION_TICK_S = env_int("ADMISSION_TICK_S", 5, minimum=1)
RECONCILE_TICK_S = env_int("RECONCILE_TICK_S", 2, minimum=1)
ADMISSION_BATCH = env_int("ADMISSION_BATCH", 500, minimum=1)
ADMISSION_PREEMPTION_DELAY_S = env_float("ADMISSION_PREEMPTION_DELAY_S", 0.0, minimum=0.0)
ADMISSION_TERMINATION_GRACE_S = env_float("ADMISSION_TERMINATION_GRACE_S", 30.0, minimum=0.0)
ADMISSION_FAIR_SHARING = env_bool("ADMISSION_FAIR_SHARING", True)
ADMISSION_IDLE_RECHECK_S = env_int("ADMISSION_IDLE_RECHECK_S", 60, minimum=1)
USAGE_RECONCILE_TICK_S = env_int("USAGE_RECONCILE_TICK_S", 60, minimum=1)

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
DEVICE_DRAIN_POLICY = env_str("DEVICE_DRAIN_POLICY", "wait")
if DEVICE_DRAIN_POLICY not in ("wait", "requeue", "fail"):
    raise ImproperlyConfigured(
        f"DEVICE_DRAIN_POLICY={DEVICE_DRAIN_POLICY!r}: use wait, requeue or fail")
DEVICE_FAILURE_THRESHOLD = env_int("DEVICE_FAILURE_THRESHOLD", 3, minimum=1)
DEVICE_FAILURE_WINDOW_S = env_float("DEVICE_FAILURE_WINDOW_S", 3600.0, minimum=1.0)
KUBE_RETRY_MAX_ATTEMPTS = env_int("KUBE_RETRY_MAX_ATTEMPTS", 5, minimum=1)
KUBE_RETRY_BASE_DELAY_S = env_float("KUBE_RETRY_BASE_DELAY_S", 0.2, minimum=0.0)
KUBE_RETRY_MAX_DELAY_S = env_float("KUBE_RETRY_MAX_DELAY_S", 10.0, minimum=0.0)
KUBE_RETRY_MAX_RETRY_AFTER_S = env_float("KUBE_RETRY_MAX_RETRY_AFTER_S", 60.0, minimum=0.0)
# Each tenant's namespace in each cluster (tenants.selectors.tenant_namespace): {slug} is the
# tenant's name, {cluster} the cluster's; a Cluster row's namespace_pattern overrides it.
TENANT_NAMESPACE_PATTERN = env_template("TENANT_NAMESPACE_PATTERN", "tenant-{slug}",
                                        fields=("slug", "cluster"), required=("slug",))
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
    "kube-tick": {
        "task": "scheduling.tasks.kube_tick_task",
        "schedule": float(KUBE_TICK_S),
    },
    **telemetry_beat_schedule(),
}

DEMO_STREAM_S = env_int("DEMO_STREAM_S", 0, minimum=0)
if DEMO_STREAM_S:
    CELERY_BEAT_SCHEDULE["demo-stream"] = {
        "task": "scheduling.tasks.demo_stream_task",
        "schedule": float(DEMO_STREAM_S),
    }

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
    }
}

# --- Auth, API ------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboards:overview"
LOGOUT_REDIRECT_URL = "login"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "core.api.exception_handler",
    "DEFAULT_THROTTLE_RATES": {"writes": env_str("API_WRITE_RATE", "120/min")},
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
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
