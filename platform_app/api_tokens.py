"""Personal API tokens for outside MCP clients: created (shown once), stored hashed, scoped to
an agent profile's tools, revoked, rate-limited."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from tools_app.models import ApiToken

PREFIX = "cc_"
AGENT_DELETED = "this token's agent profile was deleted; create a new token"


class TokenError(ValueError):
    """A token cannot be created or revoked as asked."""


def token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def api_token_create(
    *, user: Any, name: str, agent: Any = None, tools: Iterable[str] | None = None
) -> tuple[ApiToken, str]:
    """A new token; the plain token is returned here and never again. A user holds at most
    API_TOKENS_PER_USER active ones."""
    name = name.strip() or "MCP client"
    if not getattr(user, "is_active", False):
        raise TokenError(f"user {user} is not active")
    raw = PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        # The user's row is the lock: two creations at once cannot both pass the cap.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        active = ApiToken.objects.filter(user=user, revoked_at__isnull=True).count()
        if active >= settings.API_TOKENS_PER_USER:
            raise TokenError(
                f"{active} active tokens already, the most a user may hold; revoke one first"
            )
        token = ApiToken.objects.create(
            user=user,
            name=name[:100],
            prefix=raw[:10],
            token_hash=token_hash(raw),
            agent=agent,
            scoped=agent is not None,
            tools=sorted(set(tools or [])),
        )
    return token, raw


def api_token_revoke(*, token_id: int, user: Any = None) -> ApiToken:
    """Revoke a token (``user``: only their own, unless they are staff)."""
    qs = ApiToken.objects.filter(pk=token_id)
    if user is not None and not getattr(user, "is_staff", False):
        qs = qs.filter(user=user)
    token = qs.first()
    if token is None:
        raise TokenError(f"no token with id {token_id}")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def api_token_verify(raw: str) -> ApiToken | None:
    """The active token for ``raw`` (its user active), or None. Constant work per guess:
    a lookup by hash, never by the secret itself. A real token that can no longer be used
    (its agent profile deleted) raises TokenError saying why: its holder may know."""
    if not raw.startswith(PREFIX) or len(raw) > 200:
        return None
    token = (
        ApiToken.objects.select_related("user", "agent")
        .filter(token_hash=token_hash(raw), revoked_at__isnull=True)
        .first()
    )
    if token is None or not token.user.is_active:
        return None
    if token.agent_deleted:
        raise TokenError(AGENT_DELETED)
    return token


def api_token_hit(token: ApiToken) -> int:
    """Count one request in the token's one-minute window; the seconds to wait when over
    MCP_RATE_LIMIT_PER_MINUTE (0: go ahead)."""
    limit = settings.MCP_RATE_LIMIT_PER_MINUTE
    now = timezone.now()
    with transaction.atomic():
        fresh = ApiToken.objects.select_for_update().get(pk=token.pk)
        if fresh.window_start is None or now - fresh.window_start >= timedelta(minutes=1):
            ApiToken.objects.filter(pk=token.pk).update(
                window_start=now, window_count=1, last_used_at=now
            )
            return 0
        if fresh.window_count >= limit:
            return max(1, 60 - int((now - fresh.window_start).total_seconds()))
        ApiToken.objects.filter(pk=token.pk).update(
            window_count=F("window_count") + 1, last_used_at=now
        )
    return 0


def api_token_allowed_tools(token: ApiToken) -> list[str] | None:
    """The tool names this token may use: its agent's subset (the default agent's when it
    was created without one), narrowed by its own list. None: every enabled tool. A token
    whose agent profile was deleted fails closed (TokenError), never widening to the default."""
    from chat_app.models import Agent

    if token.agent_deleted:
        raise TokenError(AGENT_DELETED)
    agent = token.agent or Agent.objects.filter(is_default=True).first()
    allowed = agent.allowed_tools() if agent is not None else None
    if token.tools:
        allowed = [t for t in token.tools if allowed is None or t in allowed]
    return allowed
