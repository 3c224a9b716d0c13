from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, JsonResponse

# Everything needs a login except these prefixes. /accounts/set-password/ is the page of a
# one-time link (invitation, reset): its token is the credential.
PUBLIC_PREFIXES = (
    "/healthz",
    "/accounts/login/",
    "/accounts/oidc/",
    "/accounts/set-password/",
    "/static/",
    "/admin/login/",
)


class LoginRequiredExceptMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.user.is_authenticated or request.path.startswith(PUBLIC_PREFIXES):
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse({"error": "authentication required"}, status=401)
        return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
