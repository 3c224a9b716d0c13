"""A signed-in person's own language wins over the browser's.

``LocaleMiddleware`` (earlier in the chain) picks the language from the language cookie or
Accept-Language; this one, after authentication, switches to the language the person chose in
the account menu, if any. It reads the theme in the same query and leaves both on the request
for the page's context (``controlcenter.context_processors``)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils import translation

from platform_app.preferences.services import preferences_get


class UserLanguageMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            theme, language = preferences_get(user=user)
            request.cc_preferences = (theme, language)  # type: ignore[attr-defined]
            if language:
                translation.activate(language)
                request.LANGUAGE_CODE = language
        return self.get_response(request)
