from functools import partial

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest

from platform_app.preferences.services import preferences_theme


def app(request: HttpRequest) -> dict[str, object]:
    return {
        "cc_mode": settings.MODE,
        "chat_max_message_bytes": settings.CHAT_MAX_MESSAGE_BYTES,
        # OIDC_LOCAL_LOGIN=false: nobody signs in with a password (no Password page to offer).
        "cc_password_login": settings.OIDC_LOCAL_LOGIN,
        # "system", "light" or "dark": base.html sets it on <html> so the first paint is right.
        # Lazy (a template calls it): fragments that never show it cost no query.
        "cc_theme": partial(preferences_theme, user=getattr(request, "user", AnonymousUser())),
    }
