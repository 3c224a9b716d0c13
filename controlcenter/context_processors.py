from functools import partial

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest

from platform_app.preferences.services import preferences_theme


def app(request: HttpRequest) -> dict[str, object]:
    return {
        **approvals(request),
        "cc_mode": settings.MODE,
        "chat_max_message_bytes": settings.CHAT_MAX_MESSAGE_BYTES,
        # OIDC_LOCAL_LOGIN=false: nobody signs in with a password (no Password page to offer).
        "cc_password_login": settings.OIDC_LOCAL_LOGIN,
        # "system", "light" or "dark": base.html sets it on <html> so the first paint is right.
        # Lazy (a template calls it): fragments that never show it cost no query.
        "cc_theme": _theme(request),
        # The language the person chose in the account menu ("" follows the browser).
        "cc_language_choice": getattr(request, "cc_preferences", ("", ""))[1],
    }


def _theme(request: HttpRequest) -> object:
    # UserLanguageMiddleware read the preferences already (signed-in pages); otherwise lazy.
    known = getattr(request, "cc_preferences", None)
    if known is not None:
        return known[0]
    return partial(preferences_theme, user=getattr(request, "user", AnonymousUser()))


def approvals(request: HttpRequest) -> dict[str, object]:
    """The top bar's Approvals link and badge: for approvers and admins."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    from tools_app.services.approval import approvals_for, decider_group_ids, is_approver

    mine = decider_group_ids(user)  # once for both
    count = len(approvals_for(user, mine))
    approver = bool(count) or user.is_staff or is_approver(user, mine)
    return {"cc_approver": approver, "cc_approvals": count}
