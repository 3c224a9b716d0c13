from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import render

# Everything needs a login except these prefixes. /accounts/set-password/ is the page of a
# one-time link (invitation, reset): its token is the credential. /api/ authenticates each
# request itself (API tokens; the tool schemas with the session).
PUBLIC_PREFIXES = (
    "/healthz",
    "/metrics",  # its own check: loopback, an allow-list or a bearer token (infra.metrics)
    "/api/",
    "/accounts/login/",
    "/accounts/oidc/",
    "/accounts/set-password/",
    "/static/",
    "/admin/login/",
    "/preferences/language/",  # the login page's language switcher (signed out: a cookie)
    "/jsi18n/",  # the pages' script strings, the login page's too
)


class LoginRequiredExceptMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.user.is_authenticated or request.path.startswith(PUBLIC_PREFIXES):
            return self.get_response(request)
        return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)


class NotAllowedPageMiddleware:
    """Gives a browser's 405 (a view's ``require_POST`` met a GET, say) the styled page with a
    way back; Django has no handler405. Script calls (htmx, JSON, the API) keep the bare answer,
    and so does any 405 that already has a body. The ``Allow`` header is kept."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code != 405
            or not isinstance(response, HttpResponseNotAllowed)
            or response.content
            or request.headers.get("HX-Request")
            or "text/html" not in request.headers.get("Accept", "")
        ):
            return response
        page = render(request, "405.html", status=405)
        page["Allow"] = response["Allow"]
        return page
