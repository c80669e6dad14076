"""Webhook signing secrets: kept encrypted at rest, and the signature of a body.

An HMAC needs the secret itself, so a one-way hash cannot be stored instead: a secret typed
into the console is stored encrypted with a key derived from ``SECRET_KEY`` (Fernet:
AES-128-CBC + HMAC-SHA256, ``cryptography``) and never shown again; or the subscription
names an environment variable holding it (``secret_env``), and the database holds no secret.

Signature (GitHub's ``X-Hub-Signature-256`` scheme): header ``X-Console-Signature-256:
sha256=<hex HMAC-SHA256 of the raw request body with the secret>``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

SIGNATURE_HEADER = "X-Console-Signature-256"


def _fernet() -> Fernet:
    key = hashlib.sha256(b"notifications.webhook-secret:" + settings.SECRET_KEY.encode())
    return Fernet(base64.urlsafe_b64encode(key.digest()))


def encrypt_secret(secret: str) -> str:
    """The stored form of ``secret`` ("" for no secret)."""
    return _fernet().encrypt(secret.encode()).decode() if secret else ""


def resolve_secret(encrypted: str, env_name: str) -> str:
    """The signing secret of a subscription: ``$env_name`` when named, else the decrypted
    stored secret; "" when there is none.

    Raises:
        ValueError: the variable is unset, or the stored secret cannot be decrypted (the
            ``SECRET_KEY`` changed): the delivery fails with this message.
    """
    if env_name:
        value = os.environ.get(env_name, "")
        if not value:
            raise ValueError(f"signing secret variable {env_name} is not set")
        return value
    if not encrypted:
        return ""
    try:
        return _fernet().decrypt(encrypted.encode()).decode()
    except InvalidToken as exc:
        raise ValueError(
            "the stored signing secret cannot be decrypted (SECRET_KEY changed?);"
            " set the secret again"
        ) from exc


def signature(body: bytes, secret: str) -> str:
    """``sha256=<hex>``: HMAC-SHA256 of ``body`` with ``secret``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
