"""pytest settings: the base settings (embedded servers unless the URLs are set), fast hashing."""

import os

from console.settings.base import *  # noqa: F403

# One test database per pytest process, so concurrent runs on one server do not collide.
DATABASES["default"]["TEST"] = {"NAME": f"test_console_{os.getpid()}"}  # noqa: F405
# ... and its own cache keys on the shared Redis.
CACHES["default"]["KEY_PREFIX"] = f"test{os.getpid()}"  # noqa: F405

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {  # noqa: F405
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
CELERY_TASK_ALWAYS_EAGER = False
REST_FRAMEWORK = {  # noqa: F405
    **REST_FRAMEWORK,  # noqa: F405
    "DEFAULT_THROTTLE_RATES": {"writes": "10000/min", "batch_jobs": "100000/min"},
}
MIDDLEWARE = [m for m in MIDDLEWARE if "whitenoise" not in m]  # noqa: F405
