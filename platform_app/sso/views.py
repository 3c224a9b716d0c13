"""The login page (password form and/or the "Sign in with ..." button), the two SSO steps,
and the admin's login, which follows the same "local login on/off" rule."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import authenticate, login
from django.contrib.auth import views as auth_views
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET

from infra import access
from platform_app.sso.client import (
    SSOError,
    SSOUnavailable,
    authorization_redirect,
    callback_claims,
)

logger = logging.getLogger(__name__)

NEXT_KEY = "sso_next"


def sso_context() -> dict[str, Any]:
    return {
        "sso_enabled": settings.OIDC_ENABLED,
        "sso_provider_name": settings.OIDC_PROVIDER_NAME,
        "local_login": settings.OIDC_LOCAL_LOGIN,
    }


class LoginView(auth_views.LoginView):
    access = access.Rule(access.PUBLIC, "the login page")
    """Django's login view; with local login off it shows only the SSO button and refuses a
    posted password (a 403, whatever the credentials)."""

    error: str = ""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context.update(sso_context(), sso_error=self.error)
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if settings.OIDC_LOCAL_LOGIN:
            return super().post(request, *args, **kwargs)
        return password_refused(request)


def login_page(request: HttpRequest, error: str, *, status: int) -> HttpResponse:
    """The login page showing ``error``, with an empty form whatever was posted."""
    view = LoginView(error=error)
    view.setup(request)
    form = view.get_form_class()(request)
    response = view.render_to_response(view.get_context_data(form=form))
    response.status_code = status
    return response


def password_refused(request: HttpRequest) -> HttpResponse:
    name = settings.OIDC_PROVIDER_NAME
    return login_page(
        request, f"Password login is turned off here; sign in with {name}.", status=403
    )


@access.public("starts single sign-on: the identity provider authenticates")
@require_GET
def oidc_login(request: HttpRequest) -> HttpResponse:
    if not settings.OIDC_ENABLED:
        raise Http404("single sign-on is not configured")
    next_url = request.GET.get("next", "")
    if not url_has_allowed_host_and_scheme(
        next_url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        next_url = settings.LOGIN_REDIRECT_URL
    request.session[NEXT_KEY] = next_url
    redirect_uri = settings.OIDC_REDIRECT_URI or request.build_absolute_uri(reverse("sso-callback"))
    try:
        return authorization_redirect(request, redirect_uri=redirect_uri)
    except SSOError as exc:
        logger.warning("SSO: cannot start a login: %s", exc)
        return login_page(request, str(exc), status=502)


@access.public("the identity provider's answer: state, PKCE and the ID token are checked")
@require_GET
def oidc_callback(request: HttpRequest) -> HttpResponse:
    if not settings.OIDC_ENABLED:
        raise Http404("single sign-on is not configured")
    try:
        claims, issuer = callback_claims(request)
        user = authenticate(request, oidc_claims=claims, oidc_issuer=issuer)
    except SSOError as exc:
        logger.warning("SSO: a login was refused: %s", exc)
        return login_page(request, str(exc), status=502 if isinstance(exc, SSOUnavailable) else 403)
    if user is None:  # only if the SSO backend is not configured
        return login_page(request, "Single sign-on is not enabled on this server.", status=403)
    next_url = request.session.pop(NEXT_KEY, settings.LOGIN_REDIRECT_URL)
    login(request, user)
    return redirect(next_url)


@access.public("the admin's login page (obeys OIDC_LOCAL_LOGIN)")
def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's own login form, unless local login is off: then its page sends people to
    the login page (and its SSO button) and a posted password is refused."""
    if settings.OIDC_LOCAL_LOGIN:
        return admin.site.login(request)
    if request.method == "POST":
        return password_refused(request)
    next_url = request.GET.get("next", "")
    if not url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
        next_url = reverse("admin:index")
    return redirect_to_login(next_url, settings.LOGIN_URL)
