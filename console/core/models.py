"""Abstract base model shared by every app."""

from django.db import models


class BaseModel(models.Model):
    """Adds ``created`` and ``updated`` timestamps (UTC) to a model."""

    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
