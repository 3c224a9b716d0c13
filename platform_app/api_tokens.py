"""Personal API tokens: created (shown once), stored hashed, scoped, rate-limited, revoked.

A token acts for its owner and never beyond them. Two things narrow it:

- **Scopes** (``SCOPES``): which ways in it may use — ``/mcp/``, ``/v1`` (``chat``), the REST
  API's reads, writes and approvals, and two admin scopes. Each is checked on every request
  against the token *and* against what the person may hold now (``scopes_for``): an admin
  scope on a token whose owner is no longer staff is refused, not honoured.
- **Tools**: an agent profile's (the default one's when created without), optionally fewer;
  a token whose profile was deleted fails closed.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from tools_app.models import ApiToken

PREFIX = "cc_"
AGENT_DELETED = "this token's agent profile was deleted; create a new token"

# Every scope, with what it lets a program do, in the order the Tokens page lists them.
SCOPES: dict[str, str] = {
    "chat": "run turns: /v1/chat/completions, new conversations and messages",
    "read": "read your conversations, tool calls, schedules, memory and reports",
    "write": "change your own things: delete conversations, schedules and memory",
    "approve": "approve or deny the tool calls you may decide",
    "mcp": "use your tools from an MCP client at /mcp/",
    "tools:admin": "admins: read and change tools and their settings",
    "audit": "admins: query and export the audit log",
}
ADMIN_SCOPES = frozenset({"tools:admin", "audit"})
# Ticked on the Tokens page's new-token form: the least a token may do (read-only); a person
# ticks what else it needs.
DEFAULT_SCOPES = ("read",)
# The most requests a minute a person may give their own token; admins may give more.
MEMBER_RATE_LIMIT_MAX = 10_000
ADMIN_RATE_LIMIT_MAX = 1_000_000


class TokenError(ValueError):
    """A token cannot be created or revoked as asked."""


def token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def scopes_for(user: Any) -> list[str]:
    """The scopes ``user`` may hold: every one for an admin (staff), the rest for others."""
    if not getattr(user, "is_active", False):
        return []
    staff = bool(getattr(user, "is_staff", False) or getattr(user, "is_superuser", False))
    return [scope for scope in SCOPES if staff or scope not in ADMIN_SCOPES]


def scopes_check(user: Any, scopes: Iterable[str]) -> list[str]:
    """``scopes`` in the canonical order, or TokenError naming one that is unknown or that
    the person may not hold."""
    wanted = set(scopes)
    unknown = sorted(wanted - set(SCOPES))
    if unknown:
        raise TokenError(
            _("unknown scope %(unknown)s; the scopes are %(join)s")
            % {"unknown": f"{unknown[0]!r}", "join": ", ".join(SCOPES)}
        )
    allowed = set(scopes_for(user))
    beyond = [scope for scope in SCOPES if scope in wanted and scope not in allowed]
    if beyond:
        raise TokenError(
            _("only admins may hold the %(beyond)s scope") % {"beyond": f"{beyond[0]!r}"}
        )
    return [scope for scope in SCOPES if scope in wanted]


def rate_limit_check(user: Any, limit: int | None) -> int | None:
    """A token's own requests per minute (None: the default), within what the person may set."""
    if limit is None:
        return None
    staff = bool(getattr(user, "is_staff", False))
    most = ADMIN_RATE_LIMIT_MAX if staff else MEMBER_RATE_LIMIT_MAX
    if not 1 <= limit <= most:
        raise TokenError(
            _("the rate limit must be between 1 and %(most)s requests a minute")
            % {"most": f"{most:,}"}
        )
    return limit


def api_token_create(
    *,
    user: Any,
    name: str,
    agent: Any = None,
    tools: Iterable[str] | None = None,
    scopes: Iterable[str] | None = None,
    rate_limit_per_minute: int | None = None,
    trace: bool = True,
) -> tuple[ApiToken, str]:
    """A new token; the plain token is returned here and never again. A user holds at most
    API_TOKENS_PER_USER active ones. ``scopes`` None: every scope the person may hold."""
    name = name.strip() or "API client"
    if not getattr(user, "is_active", False):
        raise TokenError(_("user %(user)s is not active") % {"user": user})
    chosen = scopes_for(user) if scopes is None else scopes_check(user, scopes)
    if not chosen:
        raise TokenError(_("choose at least one scope"))
    limit = rate_limit_check(user, rate_limit_per_minute)
    raw = PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        # The user's row is the lock: two creations at once cannot both pass the cap.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        active = ApiToken.objects.filter(user=user, revoked_at__isnull=True).count()
        if active >= settings.API_TOKENS_PER_USER:
            raise TokenError(
                _("%(active)s active tokens already, the most a user may hold; revoke one first")
                % {"active": active}
            )
        token = ApiToken.objects.create(
            user=user,
            name=name[:100],
            prefix=raw[:10],
            token_hash=token_hash(raw),
            agent=agent,
            scoped=agent is not None,
            tools=sorted(set(tools or [])),
            scopes=chosen,
            rate_limit_per_minute=limit,
            trace=trace,
        )
    return token, raw


def api_token_update(
    *,
    token_id: int,
    user: Any,
    scopes: Iterable[str],
    rate_limit_per_minute: int | None,
    trace: bool,
) -> ApiToken:
    """Change an active token's scopes, rate limit and trace default (its owner only: the
    Tokens page is personal)."""
    token = ApiToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True).first()
    if token is None:
        raise TokenError(_("no active token with id %(token_id)s") % {"token_id": token_id})
    chosen = scopes_check(user, scopes)
    if not chosen:
        raise TokenError(_("choose at least one scope (or revoke the token)"))
    token.scopes = chosen
    token.rate_limit_per_minute = rate_limit_check(user, rate_limit_per_minute)
    token.trace = trace
    token.save(update_fields=["scopes", "rate_limit_per_minute", "trace"])
    return token


def scope_refusal(token: ApiToken, scope: str) -> str | None:
    """Why ``token`` may not be used for ``scope`` now, or None: the token must carry it and
    its owner must still be allowed to hold it (an admin scope needs an admin)."""
    if scope not in (token.scopes or []):
        return f"this token does not have the {scope!r} scope"
    if scope not in scopes_for(token.user):
        return f"the {scope!r} scope is for admins only"
    return None


def rate_limit_of(token: ApiToken) -> int:
    return token.rate_limit_per_minute or settings.API_RATE_LIMIT_PER_MINUTE


def api_token_revoke(*, token_id: int, user: Any = None) -> ApiToken:
    """Revoke a token (``user``: only their own, unless they are staff)."""
    qs = ApiToken.objects.filter(pk=token_id)
    if user is not None and not getattr(user, "is_staff", False):
        qs = qs.filter(user=user)
    token = qs.first()
    if token is None:
        raise TokenError(_("no token with id %(token_id)s") % {"token_id": token_id})
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
    """Count one request in the token's one-minute window; the seconds to wait when over its
    limit (``rate_limit_of``; 0: go ahead).

    Conditional UPDATEs, so the common case is one statement and two requests at once can
    never both take the last place of a window (nor both open a new one): count within the
    window if there is room; else open a new window if the old one is over; else refuse."""
    limit = rate_limit_of(token)
    now = timezone.now()
    window = now - timedelta(minutes=1)
    mine = ApiToken.objects.filter(pk=token.pk)
    if mine.filter(window_start__gt=window, window_count__lt=limit).update(
        window_count=F("window_count") + 1, last_used_at=now
    ):
        return 0
    if (
        mine.filter(Q(window_start__isnull=True) | Q(window_start__lte=window))
        .order_by()
        .update(window_start=now, window_count=1, last_used_at=now)
    ):
        return 0
    started = mine.values_list("window_start", flat=True).first() or now
    return max(1, 60 - int((now - started).total_seconds()))


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


def api_token_turn_scope(token: ApiToken) -> list[str] | None:
    """The tool list a turn started with this token binds within: a token made for an agent
    profile keeps to that profile's tools (and its own list) whatever conversation it writes
    in; another one only to its own list (the conversation's profile does the rest). None:
    not narrowed beyond the profile."""
    if token.scoped:
        return api_token_allowed_tools(token)
    return list(token.tools) if token.tools else None


@dataclass(frozen=True)
class Refusal:
    """Why a request's token was not accepted: the HTTP status (401, 403 or 429), the words,
    and for 429 the seconds to wait."""

    status: int
    message: str
    retry_after: int = 0


MISSING = "a valid API token is required (Authorization: Bearer cc_…)"


def bearer_token(authorization: str) -> str:
    """The token of an ``Authorization: Bearer …`` header value ("" when there is none)."""
    scheme, _, value = authorization.strip().partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def api_token_for_request(raw: str, *, scope: str) -> ApiToken | Refusal:
    """The token a request carries, if it may be used for ``scope`` now — counted against its
    rate limit — or why not. Every way in (``/mcp/``, ``/v1``, ``/api/``) asks this."""
    try:
        token = api_token_verify(raw) if raw else None
    except TokenError as exc:
        return Refusal(401, str(exc))
    if token is None:
        return Refusal(401, MISSING)
    refusal = scope_refusal(token, scope)
    if refusal is not None:
        return Refusal(403, refusal)
    wait = api_token_hit(token)
    if wait:
        limit = rate_limit_of(token)
        return Refusal(429, f"rate limit of {limit} requests a minute reached", wait)
    return token
