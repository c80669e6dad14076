"""WSGI entry point (gunicorn console.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings.base")
application = get_wsgi_application()

from core.gc_tuning import tune_gc  # noqa: E402 - needs the settings loaded above

tune_gc()
