"""The LLMOps Resource Console Django project (settings, Celery app, URLs, dashboards)."""

from console.celery import app as celery_app

__all__ = ["celery_app"]
