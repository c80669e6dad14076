"""OpenID Connect sign-in (mozilla-django-oidc) with identity-provider groups mapped to tenants
and roles. Local accounts keep working beside it (the demo's, break-glass admins).

Configuration (environment, read by ``console.settings``): ``OIDC_RP_CLIENT_ID`` (SSO is on when
set), ``OIDC_RP_CLIENT_SECRET``, the provider's ``OIDC_ISSUER`` (its endpoints by discovery:
``console.oidc_discovery``) or its ``OIDC_OP_AUTHORIZATION_ENDPOINT``,
``OIDC_OP_TOKEN_ENDPOINT``, ``OIDC_OP_USER_ENDPOINT``, ``OIDC_OP_JWKS_ENDPOINT`` (each
overrides discovery), ``OIDC_RP_SIGN_ALGO`` (RS256), ``CONSOLE_OIDC_GROUPS_CLAIM`` (``groups``) and
``CONSOLE_OIDC_GROUP_MAP``: JSON ``{"<IdP group>": "<tenant>:<role>" | "platform-admin"}``,
role one of ``tenant_admin``, ``member``, ``viewer``.

Rules at every sign-in:

* the user is found by ``preferred_username`` (else ``sub``); a new one is created with no
  usable password. A *local* account of that name (it has a password) is never taken over:
  the sign-in is refused and logged;
* memberships follow the groups (:func:`tenants.services.sync_idp_memberships`): the highest
  role a group grants per tenant; a membership in a tenant the map names but the groups no
  longer grant is removed; memberships in tenants the map does not name are left alone;
* ``platform-admin`` groups make the user a platform admin (superuser, staff); without one
  an SSO user is not (a local admin is never demoted, since it cannot sign in by SSO).
"""

from __future__ import annotations

import json
import logging

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationRequestView

from console.oidc_discovery import op_endpoint
from tenants.choices import Role
from tenants.services import ROLE_RANK, sync_idp_memberships

logger = logging.getLogger(__name__)

__all__ = [
    "PLATFORM_ADMIN",
    "ConsoleOIDCAuthenticationRequestView",
    "ConsoleOIDCBackend",
    "parse_group_map",
    "grants_for",
]

PLATFORM_ADMIN = "platform-admin"


def parse_group_map(text: str) -> dict[str, tuple[str, str] | str]:
    """``CONSOLE_OIDC_GROUP_MAP`` to ``{group: (tenant, role) | "platform-admin"}``.

    Raises:
        ImproperlyConfigured: not a JSON object of strings, or a value that is neither
            ``platform-admin`` nor ``<tenant>:<role>`` with a known role.
    """
    try:
        raw = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise ImproperlyConfigured(f"CONSOLE_OIDC_GROUP_MAP is not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ImproperlyConfigured("CONSOLE_OIDC_GROUP_MAP must be a JSON object")
    out: dict[str, tuple[str, str] | str] = {}
    for group, value in raw.items():
        if value == PLATFORM_ADMIN:
            out[group] = PLATFORM_ADMIN
            continue
        tenant, _, role = str(value).rpartition(":")
        if not tenant or role not in Role.values:
            raise ImproperlyConfigured(
                f"CONSOLE_OIDC_GROUP_MAP[{group!r}] = {value!r}: expected 'platform-admin' or "
                f"'<tenant>:<role>' with role one of {', '.join(Role.values)}"
            )
        out[group] = (tenant, role)
    return out


def grants_for(groups: list[str], mapping: dict) -> tuple[dict[str, str], bool]:
    """``({tenant: highest role}, platform admin?)`` of a user's IdP groups."""
    grants: dict[str, str] = {}
    admin = False
    for group in groups:
        rule = mapping.get(group)
        if rule == PLATFORM_ADMIN:
            admin = True
        elif rule is not None:
            tenant, role = rule
            if ROLE_RANK[role] > ROLE_RANK.get(grants.get(tenant, ""), -1):
                grants[tenant] = role
    return grants, admin


class ConsoleOIDCBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend with the console's user and group rules (module
    docstring) and the provider's endpoints resolved at sign-in (explicit or discovered).

    Raises (from ``authenticate``): ``console.oidc_discovery.ProviderUnavailable`` when
    discovery fails, ``requests.RequestException`` when a provider endpoint fails.
    """

    def authenticate(self, request, **kwargs):
        if request is not None and request.GET.get("code") and request.GET.get("state"):
            # a callback from the provider (a local login never reaches the provider)
            self.OIDC_OP_TOKEN_ENDPOINT = op_endpoint("OIDC_OP_TOKEN_ENDPOINT")
            self.OIDC_OP_USER_ENDPOINT = op_endpoint("OIDC_OP_USER_ENDPOINT")
            self.OIDC_OP_JWKS_ENDPOINT = op_endpoint("OIDC_OP_JWKS_ENDPOINT")
        return super().authenticate(request, **kwargs)

    @staticmethod
    def _username(claims: dict) -> str:
        return str(claims.get("preferred_username") or claims.get("sub") or "")[:150]

    def verify_claims(self, claims):
        return bool(self._username(claims))

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(username=self._username(claims))

    def get_or_create_user(self, access_token, id_token, payload):
        user = super().get_or_create_user(access_token, id_token, payload)
        if user is not None and user.has_usable_password():
            logger.warning("SSO sign-in refused: %s is a local account", user.username)
            return None
        return user

    def create_user(self, claims):
        user = self.UserModel.objects.create_user(
            self._username(claims), email=claims.get("email", "")
        )
        user.set_unusable_password()
        user.save(update_fields=["password"])
        return self._sync(user, claims)

    def update_user(self, user, claims):
        if user.has_usable_password():
            return user  # refused in get_or_create_user
        return self._sync(user, claims)

    def _sync(self, user, claims):
        mapping = parse_group_map(settings.CONSOLE_OIDC_GROUP_MAP)
        groups = claims.get(settings.CONSOLE_OIDC_GROUPS_CLAIM) or []
        if isinstance(groups, str):
            groups = [groups]
        grants, admin = grants_for([str(g) for g in groups], mapping)
        managed = {rule[0] for rule in mapping.values() if rule != PLATFORM_ADMIN}
        sync_idp_memberships(user, grants, managed)
        email = claims.get("email", user.email)
        if (user.is_superuser, user.is_staff, user.email) != (admin, admin, email):
            user.is_superuser = user.is_staff = admin
            user.email = email
            user.save(update_fields=["is_superuser", "is_staff", "email"])
        return user


class ConsoleOIDCAuthenticationRequestView(OIDCAuthenticationRequestView):
    """The redirect to the provider, at its authorization endpoint (explicit or discovered).

    Raises: ``console.oidc_discovery.ProviderUnavailable`` when discovery fails.
    """

    def get(self, request):
        self.OIDC_OP_AUTH_ENDPOINT = op_endpoint("OIDC_OP_AUTHORIZATION_ENDPOINT")
        return super().get(request)
