"""The login rule of the pages that refresh themselves (static/console/live.js polls a page's
``?fragment=1``): the page redirects an anonymous user to the login like every page, its
fragment answers 401. A redirect would be followed by ``fetch`` and the login page (200)
swapped into the live region, polled again and again; 401 is what live.js stops on."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse

#: The query parameter and value live.js polls with (``{% live_src %}`` and the pages' data-src).
FRAGMENT_PARAM = "fragment"


def wants_fragment(request: HttpRequest) -> bool:
    """Whether ``request`` is a live refresh (``?fragment=1``), not the page itself; any other
    value (``fragment=0``, ``fragment=x``) asks for the page."""
    return request.GET.get(FRAGMENT_PARAM) == "1"


def live_login_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """``login_required`` for a page with a live fragment: an anonymous ``?fragment=...``
    request gets ``401`` (empty body), any other anonymous request the login redirect."""
    page = login_required(view)

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if wants_fragment(request) and not request.user.is_authenticated:
            return HttpResponse(status=401)
        return page(request, *args, **kwargs)

    return wrapped
