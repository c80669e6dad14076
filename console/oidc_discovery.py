"""The identity provider's endpoints: an explicit ``OIDC_OP_*`` setting, else the provider's
discovery document ``<OIDC_ISSUER>/.well-known/openid-configuration`` (OpenID Connect
Discovery 1.0, section 4), read at first use and cached per process for
``DISCOVERY_TTL_S``. mozilla-django-oidc has no discovery of its own: it reads the
``OIDC_OP_*`` settings only.

Also RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0, section 2): the URL of the
provider's ``end_session_endpoint`` (``OIDC_OP_LOGOUT_ENDPOINT`` overrides it), with
``id_token_hint`` and ``post_logout_redirect_uri``; mozilla-django-oidc's logout view calls
:func:`provider_logout_url` through ``OIDC_OP_LOGOUT_URL_METHOD``.

Errors: :class:`ProviderUnavailable` when the provider cannot be reached, answers 5xx, or its
discovery document is unusable.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.core.cache import caches
from django.shortcuts import resolve_url

logger = logging.getLogger(__name__)

__all__ = ["DISCOVERY_TTL_S", "ProviderUnavailable", "op_endpoint", "provider_logout_url"]

DISCOVERY_TTL_S = 3600
WELL_KNOWN = "/.well-known/openid-configuration"

# setting name -> discovery document key (OpenID Connect Discovery 1.0, section 3)
ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_LOGOUT_ENDPOINT": "end_session_endpoint",
}


class ProviderUnavailable(Exception):
    """The identity provider is unreachable, answered 5xx, or sent an unusable document."""


def is_provider_down(exc: requests.RequestException) -> bool:
    """Whether a failed request to the provider means it is down: no connection, a timeout,
    or a 5xx answer (a 4xx is the console's or the user's error, not an outage)."""
    if isinstance(exc, requests.ConnectionError | requests.Timeout):
        return True
    response = getattr(exc, "response", None)
    return response is not None and response.status_code >= 500


def discovery_document(issuer: str) -> dict:
    """The provider's discovery document (cached per process for ``DISCOVERY_TTL_S``).

    Raises:
        ProviderUnavailable: unreachable, not a 200 JSON object, or its ``issuer`` is not
            ``issuer`` (Discovery 1.0, section 4.3: they must be identical).
    """
    issuer = issuer.rstrip("/")
    cache = caches["local"]
    key = f"oidc-discovery:{issuer}"
    document = cache.get(key)
    if document is not None:
        return document
    url = issuer + WELL_KNOWN
    try:
        # mozilla-django-oidc's own request settings, so discovery behaves like its requests
        response = requests.get(
            url,
            timeout=settings.OIDC_TIMEOUT,
            verify=getattr(settings, "OIDC_VERIFY_SSL", True),
            proxies=getattr(settings, "OIDC_PROXY", None),
        )
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(f"discovery at {url} failed: {exc}") from None
    if not isinstance(document, dict) or str(document.get("issuer", "")).rstrip("/") != issuer:
        raise ProviderUnavailable(f"discovery at {url}: issuer is not {issuer}")
    cache.set(key, document, DISCOVERY_TTL_S)
    return document


def op_endpoint(setting: str) -> str:
    """The endpoint URL of ``setting`` (a key of ``ENDPOINTS``): the setting when set, else
    the discovery document's entry; ``""`` when neither names one.

    Raises:
        ProviderUnavailable: discovery was needed and failed.
    """
    explicit = getattr(settings, setting, "") or ""
    if explicit or not settings.OIDC_ISSUER:
        return explicit
    return str(discovery_document(settings.OIDC_ISSUER).get(ENDPOINTS[setting]) or "")


def provider_logout_url(request) -> str:
    """Where logging out sends the browser (``OIDC_OP_LOGOUT_URL_METHOD``): the provider's
    end-session endpoint with ``id_token_hint`` (the id token stored at sign-in by
    ``OIDC_STORE_ID_TOKEN``) and ``post_logout_redirect_uri`` (the absolute
    ``LOGOUT_REDIRECT_URL``); that local page when the user did not sign in by SSO, the
    provider names no end-session endpoint, or it is unreachable (logged, one line)."""
    local = resolve_url(settings.LOGOUT_REDIRECT_URL)
    id_token = request.session.get("oidc_id_token")
    if not id_token:
        return local
    try:
        endpoint = op_endpoint("OIDC_OP_LOGOUT_ENDPOINT")
    except ProviderUnavailable as exc:
        logger.warning("Logout at the identity provider skipped: %s", exc)
        return local
    if not endpoint:
        return local
    query = urlencode(
        {"id_token_hint": id_token, "post_logout_redirect_uri": request.build_absolute_uri(local)}
    )
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"
