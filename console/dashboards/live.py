"""The login rule of the pages that refresh themselves (static/console/live.js polls a page's
``?fragment=1``): the page redirects an anonymous user to the login like every page, its
fragment answers 401. A redirect would be followed by ``fetch`` and the login page (200)
swapped into the live region, polled again and again; 401 is what live.js stops on."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse


def live_login_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """``login_required`` for a page with a live fragment: an anonymous ``?fragment=...``
    request gets ``401`` (empty body), any other anonymous request the login redirect."""
    page = login_required(view)

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.GET.get("fragment") and not request.user.is_authenticated:
            return HttpResponse(status=401)
        return page(request, *args, **kwargs)

    return wrapped
