from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.utils import translation
from django.utils.cache import patch_cache_control
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from django.views.i18n import JavaScriptCatalog

from infra import access
from platform_app.preferences.services import preferences_set_language, preferences_set_theme


def _back(request: HttpRequest) -> HttpResponse:
    back = request.POST.get("next", "")
    allowed = url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return redirect(back if back and allowed else "/")


def _wants_json(request: HttpRequest) -> bool:
    return request.headers.get("Accept", "").startswith("application/json")


@access.public("a display preference: a cookie when signed out")
@require_POST
def theme(request: HttpRequest) -> HttpResponse:
    """Store the person's theme. The page's script calls it and gets JSON; a form without
    script is sent back where it came from."""
    assert isinstance(request.user, AbstractBaseUser)  # the login middleware guarantees it
    try:
        chosen = preferences_set_theme(user=request.user, theme=request.POST.get("theme", ""))
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    if _wants_json(request):
        return JsonResponse({"theme": chosen.theme})
    return _back(request)


@access.public("the login page's language switcher: a cookie when signed out")
@require_POST
def language(request: HttpRequest) -> HttpResponse:
    """The language switcher: a signed-in person's choice is stored on the server (it follows
    them to another browser); the language cookie is set too, so the login page and the
    websocket agree. "" follows the browser again. Signed out (the login page), only the
    cookie."""
    chosen = request.POST.get("language", "")
    user = request.user
    try:
        if isinstance(user, AbstractBaseUser) and user.is_authenticated:
            preferences_set_language(user=user, language=chosen)
        elif chosen not in {code for code, _name in settings.LANGUAGES}:
            raise ValueError(f"unknown language {chosen!r}")
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    response = JsonResponse({"language": chosen}) if _wants_json(request) else _back(request)
    if chosen:
        response.set_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            chosen,
            max_age=settings.LANGUAGE_COOKIE_AGE,
            samesite="Lax",  # settings.LANGUAGE_COOKIE_SAMESITE
            secure=request.is_secure(),
        )
    else:
        response.delete_cookie(settings.LANGUAGE_COOKIE_NAME, samesite="Lax")
    return response


@access.public("the pages' script strings, the login page's too")
def js_catalog(request: HttpRequest, language: str) -> HttpResponseBase:
    """The pages' script strings (djangojs catalog) in ``language``: the language is in the
    address, so a switch loads the other catalog and each can be cached by the browser."""
    if language not in {code for code, _name in settings.LANGUAGES}:
        raise Http404("unknown language")
    with translation.override(language):
        response = JavaScriptCatalog.as_view(domain="djangojs")(request)
    patch_cache_control(response, public=True, max_age=3600)
    return response
