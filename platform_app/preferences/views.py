from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from platform_app.preferences.services import preferences_set_theme


@require_POST
def theme(request: HttpRequest) -> HttpResponse:
    """Store the person's theme. The page's script calls it and gets JSON; a form without
    script is sent back where it came from."""
    assert isinstance(request.user, AbstractBaseUser)  # the login middleware guarantees it
    try:
        chosen = preferences_set_theme(user=request.user, theme=request.POST.get("theme", ""))
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    if request.headers.get("Accept", "").startswith("application/json"):
        return JsonResponse({"theme": chosen.theme})
    back = request.POST.get("next", "")
    allowed = url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return redirect(back if back and allowed else "/")
