"""Celery application (Django pattern: settings under ``CELERY_``, tasks autodiscovered)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings.base")

app = Celery("console")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The default for every thread: Celery's current app is thread-local, and a request served in
# a gunicorn thread would otherwise enqueue through an empty default app (NotRegistered).
app.set_default()
