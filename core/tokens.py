"""Write side of API tokens (DRF ``authtoken``): one token per user, replaced or revoked."""

from __future__ import annotations

from django.db import transaction
from rest_framework.authtoken.models import Token

from core.audit import record


def replace_api_token(user, *, create: bool, source: str = "ui") -> Token | None:
    """Delete ``user``'s API token (if any) and, when ``create``, issue a new one.

    The old key stops working in the same transaction that writes the new one and its audit
    entry (``token.create`` or ``token.revoke``; the key itself is never logged).

    Returns:
        The new token, or ``None`` after a revoke.
    """
    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        token = Token.objects.create(user=user) if create else None
        record(
            "token.create" if create else "token.revoke",
            user,
            actor=user,
            object_type="authtoken.token",
            source=source,
        )
    return token
