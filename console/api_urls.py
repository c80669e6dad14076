"""REST API routes of every app under /api/, and the API root (``GET /api/``) that lists them.

Each app's router serves its own root view, so ``/api/`` used to answer with the first
router's (scheduling's eight viewsets). The root here lists every route of the apps' URL
modules that takes no parameter (collections and their list actions such as ``jobs/batch/``,
the plain views such as ``usage/`` and ``telemetry/cost/``), plus the schema and its docs,
read from the URL patterns themselves so a new route is listed without another edit.
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path
from rest_framework.routers import APIRootView

from notifications.api import urls as notifications_urls
from scheduling.api import urls as scheduling_urls
from telemetry.api import urls as telemetry_urls
from tenants.api import urls as tenants_urls

#: ``(prefix under /api/, URL module)``, in the order Django tries them.
APPS = (
    ("", scheduling_urls),
    ("", tenants_urls),
    ("telemetry/", telemetry_urls),
    ("notifications/", notifications_urls),
)
#: Routes of console/urls.py under /api/: ``{key: url name}``.
DOCS = {"schema": "schema", "docs": "api-docs"}


def _route(pattern: URLPattern) -> str | None:
    """``pattern``'s route without parameters (``"jobs/batch/"``), or None when it takes one
    (a detail route, a router's ``.json`` format suffix) or is a router's own root."""
    regex = pattern.pattern.regex
    if regex.groups or pattern.name in (None, "api-root"):
        return None
    return str(pattern.pattern).removeprefix("^").removesuffix("$")


def endpoints() -> dict[str, str]:
    """``{key: url name}`` of the root: the key is the route under /api/ without its
    trailing slash (``"telemetry/cost/csv"``)."""
    found: dict[str, str] = {}
    for prefix, module in APPS:
        for pattern in module.urlpatterns:
            route = _route(pattern) if isinstance(pattern, URLPattern) else None
            if route is not None:
                found.setdefault(f"{prefix}{route}".rstrip("/"), pattern.name)
    return {**found, **DOCS}


class ApiRootView(APIRootView):
    """``GET /api/``: ``{key: absolute URL}`` of every endpoint (:func:`endpoints`)."""

    api_root_dict = endpoints()


urlpatterns: list[URLPattern | URLResolver] = [
    path("", ApiRootView.as_view(), name="api-root"),
    *(path(prefix, include(module)) for prefix, module in APPS),
]
