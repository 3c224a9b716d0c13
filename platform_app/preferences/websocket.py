"""The language of a websocket: as for a page, the person's own choice, else the language
cookie, else the browser's Accept-Language, else English. Switched on for the whole
connection, so what a consumer writes (errors, notices, a slash command's cards) and the
turns a person starts (``Conversation.language``) are in it."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.translation import trans_real

from infra.websocket import db
from platform_app.preferences.services import preferences_get


def language_from_headers(headers: list[tuple[bytes, bytes]]) -> str:
    """The cookie's language, else the best of Accept-Language the site offers, else the
    default (what ``LocaleMiddleware`` decides for a page without a signed-in person)."""
    cookie_name = settings.LANGUAGE_COOKIE_NAME
    for name, value in headers:
        if name.lower() != b"cookie":
            continue
        for part in value.decode("latin-1").split(";"):
            key, _sep, chosen = part.strip().partition("=")
            if key == cookie_name and chosen:
                try:
                    return trans_real.get_supported_language_variant(chosen)
                except LookupError:
                    break
    for name, value in headers:
        if name.lower() != b"accept-language":
            continue
        for code, _quality in trans_real.parse_accept_lang_header(value.decode("latin-1")):
            if code == "*":
                break
            try:
                return trans_real.get_supported_language_variant(code)
            except LookupError:
                continue
    return settings.LANGUAGE_CODE


class LanguageMiddleware:
    """Inside ``AuthMiddlewareStack`` (it needs the person)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        language = ""
        user = scope.get("user")
        if user is not None and getattr(user, "is_authenticated", False):
            # On the server's thread pool, not Channels' one sync thread (``infra.websocket.db``):
            # a crowd connecting at once must not queue behind each other's reads there.
            _theme, language = await db(preferences_get)(user=user)
        language = language or language_from_headers(scope.get("headers", []))
        scope = {**scope, "language": language}
        with translation.override(language):
            return await self.inner(scope, receive, send)
