"""Per-person connections to imported sources: how a source authenticates, connecting an
account (OAuth 2.1 authorization code with PKCE, or a personal API key), the credential a call
uses, refresh, disconnect and revocation.

Whose credential: always the call's person (``ToolCall.user``) — a schedule's or subagent's
owner, an API token's owner — never anyone else's, never the shared secret. The tokens leave
the database only inside the worker that calls the source (``credential_for_call``), and only
towards the source (and its authorization server); values a source echoes back are scrubbed
from results and errors (``scrub``) before anything stores them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import connection as db_connection
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from tools_app.connections import oauth
from tools_app.connections.models import ConnectAttempt, SourceConnection, SourceOAuthClient
from tools_app.errors import ToolError
from tools_app.models import AuditRecord, ToolGroupConfig, ToolSource
from tools_app.services.audit import redact
from tools_app.services.source_env import EnvError, check_env_value, person_env_names

logger = logging.getLogger(__name__)

NONE, SHARED, PERSON = "none", "shared", "person"
CREDENTIALS = (NONE, SHARED, PERSON)
ATTEMPT_SECONDS = 600  # an authorization not finished within ten minutes is gone
DISCOVERY_MAX_AGE = timedelta(hours=12)
EXPIRY_LEEWAY = timedelta(seconds=60)
SCRUBBED = "***"
# How an admin's client authenticates at the token and revocation endpoints ("": basic when
# it has a secret).
CLIENT_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none")
ENV_PREFIX = "env:"  # a per-person variable's key in ``SourceConnection.secrets``
NOT_CONNECTED = "not_connected"  # the policy verdict of a call refused for want of one


class ConnectError(Exception):
    """Connecting cannot go on; the words are shown to the person."""


class ConnectionNeeded(ToolError):
    """The call's person has no usable connection to the source: the card offers Connect, the
    model reads that the person must connect first."""

    def __init__(
        self, source: ToolSource, tool: str = "", reason: str = "", missing: tuple[str, ...] = ()
    ) -> None:
        label = source.label or source.name
        what = f" to use {tool}" if tool else ""
        if missing:  # a stdio server's per-person variables
            message = (
                f"Set your {', '.join(missing)} for {label}{what}: each person enters their "
                "own value on the My connections page (the Connect button on this card), "
                "then retry"
            )
        else:
            message = (
                f"{label} is not connected for this person: they must connect their own "
                f"{label} account{what} (Connections page, or the Connect button on this "
                "card), then retry"
            )
        if reason:
            message += f" ({reason})"
        super().__init__(message, data={"connect": connect_data(source, missing)})


def connect_data(source: ToolSource, missing: tuple[str, ...] = ()) -> dict[str, Any]:
    data: dict[str, Any] = {"source": source.name, "label": source.label or source.name}
    if missing:  # names only, for the card's words
        data["variables"] = list(missing)
    return data


# --- how a source authenticates ------------------------------------------------------------------
def source_credentials(source: ToolSource) -> str:
    """none, shared (the admin's one secret: also what sources made before this had) or
    person. A stdio server is per person when one of its variables is (``source_env``)."""
    if _stdio(source):
        return PERSON if person_env_names(source.config or {}) else SHARED
    value = str((source.config or {}).get("credentials") or SHARED)
    return value if value in CREDENTIALS else SHARED


def _stdio(source: ToolSource) -> bool:
    config = source.config or {}
    return source.kind == ToolSource.Kind.MCP and config.get("transport", "stdio") == "stdio"


def source_is_personal(source: ToolSource | None) -> bool:
    return source is not None and source_credentials(source) == PERSON


def source_person_kind(source: ToolSource) -> str:
    """What a person connects with: OAuth, or their own API key (an OpenAPI document whose
    scheme is an API key or a bearer token), or their own values of a stdio server's
    per-person variables."""
    if _stdio(source):
        return SourceConnection.Kind.ENV
    if source.kind == ToolSource.Kind.MCP:
        return SourceConnection.Kind.OAUTH
    auth = (source.config or {}).get("auth") or {}
    return (
        SourceConnection.Kind.OAUTH
        if auth.get("type") == "oauth2"
        else SourceConnection.Kind.API_KEY
    )


def connection_refusal(tool: Any, *, user_id: int | None) -> tuple[str, dict[str, Any]] | None:
    """Binding's step for per-person sources (before approval): why the call cannot run —
    the person has not connected, or their connection needs connecting again — with what the
    card needs for its Connect button; None when it may go on (or the source is not
    per person). One indexed lookup, only for tools of per-person sources."""
    source = getattr(tool, "source_row", None)
    if not source_is_personal(source):
        return None
    assert source is not None
    connection = (
        SourceConnection.objects.filter(
            user_id=user_id, source_id=source.pk, state=SourceConnection.State.ACTIVE
        ).first()
        if user_id is not None
        else None
    )
    missing = _missing_env(source, connection)
    if connection is not None and not missing:
        return None
    needed = ConnectionNeeded(source, getattr(tool, "tool_name", ""), missing=missing)
    return needed.message, needed.data


def _missing_env(source: ToolSource, connection: SourceConnection | None) -> tuple[str, ...]:
    """A stdio server's per-person variables the person has not set (all of them with no
    connection); () for other sources."""
    if not _stdio(source):
        return ()
    names = person_env_names(source.config or {})
    have = _secrets(connection) if connection is not None else {}
    return tuple(n for n in names if f"{ENV_PREFIX}{n}" not in have)


# --- the credential of a call --------------------------------------------------------------------
@dataclass
class Credential:
    """What an activity sends for the person (in the worker only)."""

    connection_id: int
    user_id: int
    kind: str
    account: str
    access_token: str = field(default="", repr=False)
    api_key: str = field(default="", repr=False)
    env: dict[str, str] = field(default_factory=dict, repr=False)  # per-person variables
    secret_values: tuple[str, ...] = field(default=(), repr=False)

    @property
    def label(self) -> str:
        return self.account or f"connection {self.connection_id}"


def _secrets(connection: SourceConnection) -> dict[str, str]:
    try:
        value = json.loads(connection.secrets or "{}")
    except json.JSONDecodeError:
        return {}
    return (
        {k: str(v) for k, v in value.items() if isinstance(v, str)}
        if isinstance(value, dict)
        else {}
    )


def _credential(connection: SourceConnection) -> Credential:
    secrets = _secrets(connection)
    return Credential(
        connection_id=connection.pk,
        user_id=connection.user_id,
        kind=connection.kind,
        account=connection.account,
        access_token=secrets.get("access_token", ""),
        api_key=secrets.get("api_key", ""),
        env={k[len(ENV_PREFIX) :]: v for k, v in secrets.items() if k.startswith(ENV_PREFIX)},
        secret_values=tuple(v for v in secrets.values() if len(v) >= 6),
    )


def credential_for_call(
    source: ToolSource, *, user_id: int | None, tool: str = ""
) -> Credential | None:
    """The call's person's credential for ``source`` (None: the source is not per person),
    refreshed first when its access token has expired. ConnectionNeeded when there is none
    that works."""
    if not source_is_personal(source):
        return None
    connection = (
        SourceConnection.objects.filter(user_id=user_id, source_id=source.pk).first()
        if user_id is not None
        else None
    )
    if connection is None or connection.state != SourceConnection.State.ACTIVE:
        raise ConnectionNeeded(source, tool, missing=_missing_env(source, None))
    missing = _missing_env(source, connection)
    if missing:  # the admin made one more variable per person since
        raise ConnectionNeeded(source, tool, missing=missing)
    if (
        connection.kind == SourceConnection.Kind.OAUTH
        and connection.expires_at is not None
        and connection.expires_at - EXPIRY_LEEWAY <= timezone.now()
    ):
        connection = connection_refresh(
            connection.pk, rejected=_secrets(connection).get("access_token", "")
        )
    SourceConnection.objects.filter(pk=connection.pk).update(last_used_at=timezone.now())
    return _credential(connection)


_refresh_locks: dict[int, threading.Lock] = {}
_refresh_locks_lock = threading.Lock()


def connection_refresh(connection_id: int, *, rejected: str) -> SourceConnection:
    """New tokens for a connection whose access token ``rejected`` expired or was refused
    (a 401). Threads of one process refresh one at a time, and whoever finds the token already
    changed uses the new one. When the authorization server refuses the refresh token, the
    connection is marked broken and ConnectionNeeded raised: the person connects again."""
    with _refresh_locks_lock:
        lock = _refresh_locks.setdefault(connection_id, threading.Lock())
    with lock:
        refused: oauth.TokenRefused | None = None
        # The row lock serialises processes (several workers, several hosts): an
        # authorization server that rotates refresh tokens accepts each one once, so the
        # second to come reads the tokens the first stored instead of spending the old one.
        # SQLite is one process (embedded mode; the thread lock above is enough), and a
        # transaction there holds the database's one write lock: not while a token endpoint
        # takes its time.
        rows = _row_locked()
        with rows.transaction:
            connection = rows.queryset.select_related("source").filter(pk=connection_id).first()
            if connection is None:
                raise ToolError("the connection was removed meanwhile; connect again")
            source = connection.source
            if connection.state != SourceConnection.State.ACTIVE:
                raise ConnectionNeeded(source)
            secrets = _secrets(connection)
            fresh = (
                connection.expires_at is None
                or connection.expires_at - EXPIRY_LEEWAY > timezone.now()
            )
            if secrets.get("access_token") != rejected and fresh:
                return connection  # another thread or process refreshed it meanwhile
            try:
                found, client = _client_of(source)
                tokens = oauth.refresh(
                    found,
                    client,
                    refresh_token=secrets.get("refresh_token", ""),
                    guard=_guard(source),
                )
            except oauth.TokenRefused as exc:
                SourceConnection.objects.filter(pk=connection.pk).update(
                    state=SourceConnection.State.BROKEN
                )
                _audit(
                    connection.user,
                    source,
                    "connection_broken",
                    account=connection.account,
                    reason=str(exc),
                )
                refused = exc  # raised once the broken state is committed
            except (oauth.OAuthProblem, ConnectError) as exc:
                raise ToolError(
                    f"cannot renew the {source.label or source.name} token: {exc}",
                    permanent=False,
                ) from None
            else:
                _store_tokens(connection, tokens)
                connection.save(update_fields=["secrets", "expires_at", "scopes", "refreshed_at"])
                return connection
        raise ConnectionNeeded(
            source,
            reason=_("the authorization server refused to renew it: %(error)s")
            % {"error": refused},
        )


@dataclass
class _Rows:
    transaction: Any
    queryset: Any


def _row_locked() -> _Rows:
    """A transaction with the connection's row locked (PostgreSQL), or none (SQLite)."""
    if db_connection.vendor == "sqlite":
        return _Rows(contextlib.nullcontext(), SourceConnection.objects.all())
    return _Rows(transaction.atomic(), SourceConnection.objects.select_for_update(of=("self",)))


def _store_tokens(connection: SourceConnection, tokens: oauth.Tokens) -> None:
    connection.secrets = json.dumps(
        {"access_token": tokens.access_token, "refresh_token": tokens.refresh_token}
    )
    connection.expires_at = (
        timezone.now() + timedelta(seconds=tokens.expires_in) if tokens.expires_in else None
    )
    if tokens.scope:
        connection.scopes = tokens.scope[:1000]
    connection.refreshed_at = timezone.now()


def refresher_for(connection_id: int) -> Any:
    """For the MCP session's auth (``launch.PersonBearer``): called in a thread when the
    server answers 401 to ``rejected``; the new access token, or "" when there is none."""
    from django.db import connection as db

    def renew(rejected: str) -> str:
        try:
            renewed = connection_refresh(connection_id, rejected=rejected)
            return _secrets(renewed).get("access_token", "")
        except ToolError:
            return ""
        finally:
            db.close()  # a pool thread: never keep a database connection open

    return renew


def connection_mark_broken(connection_id: int) -> None:
    SourceConnection.objects.filter(pk=connection_id).update(state=SourceConnection.State.BROKEN)


def scrub(value: Any, secrets: tuple[str, ...]) -> Any:
    """``value`` with every occurrence of the person's secret values replaced (a server
    that echoes the request's headers back must not put the token in front of the model)."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            if secret and secret in value:
                value = value.replace(secret, SCRUBBED)
        return value
    if isinstance(value, dict):
        return {scrub(k, secrets): scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v, secrets) for v in value]
    return value


# --- the OAuth client of a source ----------------------------------------------------------------
def _settings_of(source: ToolSource) -> dict[str, Any]:
    config = ToolGroupConfig.objects.filter(name=source.group_name).first()
    return dict(config.settings) if config else {}


def _guard(source: ToolSource) -> oauth.Guard:
    # The source's own exceptions to the SSRF guard (an admin allowed its private host).
    return oauth.Guard(private_allowed=list(_settings_of(source).get("private_allowed") or []))


def _oauth_settings(source: ToolSource) -> dict[str, Any]:
    return dict((source.config or {}).get("oauth") or {})


def _discover(source: ToolSource) -> oauth.Discovered:
    settings = _oauth_settings(source)
    if source.kind == ToolSource.Kind.MCP:
        url = str((source.config or {}).get("url") or "")
        return oauth.discover(
            url,
            guard=_guard(source),
            issuer_hint=str(settings.get("issuer") or ""),
            scopes=str(settings.get("scopes") or ""),
        )
    auth = (source.config or {}).get("auth") or {}
    base = str(_settings_of(source).get("base_url") or "")
    if not auth.get("authorization_url") or not auth.get("token_url"):
        raise oauth.OAuthProblem(
            _("the document declares no OAuth 2.0 authorization-code flow; import it again")
        )
    return oauth.discovered_from_document(
        authorization_url=str(auth.get("authorization_url") or ""),
        token_url=str(auth.get("token_url") or ""),
        refresh_url=str(auth.get("refresh_url") or ""),
        revocation_url=str(auth.get("revocation_url") or ""),
        resource=base,
        scope=str(settings.get("scopes") or " ".join(auth.get("scopes") or [])),
    )


def _client_of(source: ToolSource) -> tuple[oauth.Discovered, oauth.Client]:
    """What discovery found and the client, as stored (for refresh and revocation)."""
    row = SourceOAuthClient.objects.filter(source=source).first()
    if row is None or not row.client_id or not row.metadata.get("token_endpoint"):
        raise ConnectError(_("this source has no OAuth client yet"))
    found = oauth.Discovered.from_json(row.metadata)
    return found, oauth.Client(
        client_id=row.client_id,
        client_secret=row.client_secret,
        auth_method=str(row.metadata.get("client_auth_method") or ""),
    )


def oauth_client_ready(
    source: ToolSource, *, redirect_uri: str
) -> tuple[oauth.Discovered, oauth.Client]:
    """Discovery (again when old) and the client: the admin's, or one registered now for this
    redirect URI (RFC 7591) when the server offers registration."""
    row, _created = SourceOAuthClient.objects.get_or_create(source=source)
    settings = _oauth_settings(source)
    stale = row.discovered_at is None or row.discovered_at < timezone.now() - DISCOVERY_MAX_AGE
    try:
        found = (
            _discover(source)
            if stale or not row.metadata.get("token_endpoint")
            else oauth.Discovered.from_json(row.metadata)
        )
    except oauth.OAuthProblem as exc:
        raise ConnectError(str(exc)) from None
    admin_client = str(settings.get("client_id") or "")
    if admin_client:
        client = oauth.Client(
            client_id=admin_client,
            client_secret=_admin_secret(source),
            auth_method=str(settings.get("client_auth_method") or ""),
        )
        registered = False
    elif (
        row.registered
        and row.client_id
        and row.redirect_uri == redirect_uri
        and row.metadata.get("issuer") == found.issuer
    ):
        client = oauth.Client(
            client_id=row.client_id,
            client_secret=row.client_secret,
            auth_method=str(row.metadata.get("client_auth_method") or ""),
        )
        registered = True
    elif source.kind == ToolSource.Kind.OPENAPI:
        raise ConnectError(_("an admin has not entered this API's OAuth client id yet"))
    else:
        try:
            client = oauth.register(found, redirect_uri=redirect_uri, guard=_guard(source))
        except oauth.OAuthProblem as exc:
            raise ConnectError(str(exc)) from None
        registered = True
    row.client_id = client.client_id
    row.client_secret = client.client_secret
    row.registered = registered
    row.redirect_uri = redirect_uri
    row.metadata = {**found.as_json(), "client_auth_method": client.auth_method}
    if stale:
        row.discovered_at = timezone.now()
    row.save()
    return found, client


def _admin_secret(source: ToolSource) -> str:
    from tools_app.services.sources import source_secrets

    return str(source_secrets(source).get("oauth_client_secret") or "")


# --- connecting ----------------------------------------------------------------------------------
def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def connect_start(
    *, user: Any, session_key: str, source: ToolSource, redirect_uri: str, next_url: str = ""
) -> str:
    """Begin an authorization for ``user``: the URL to send their browser to. The ``state``
    and the PKCE verifier are kept here, bound to the person and their browser session."""
    if not source_is_personal(source) or source_person_kind(source) != SourceConnection.Kind.OAUTH:
        raise ConnectError(_("%(label)s is not connected with OAuth") % {"label": source.label})
    if not session_key:
        raise ConnectError(_("your session has no key; sign in again"))
    found, client = oauth_client_ready(source, redirect_uri=redirect_uri)
    state, verifier = oauth.new_state(), oauth.new_verifier()
    ConnectAttempt.objects.filter(
        created_at__lt=timezone.now() - timedelta(seconds=ATTEMPT_SECONDS)
    ).delete()
    ConnectAttempt.objects.create(
        state_hash=_hash(state),
        user=user,
        session_hash=_hash(session_key),
        source=source,
        verifier=verifier,
        redirect_uri=redirect_uri,
        next_url=next_url[:500],
    )
    return oauth.authorization_url(
        found, client, redirect_uri=redirect_uri, state=state, verifier=verifier
    )


@dataclass
class Finished:
    connection: SourceConnection | None
    next_url: str


def connect_finish(*, user: Any, session_key: str, params: dict[str, str]) -> Finished:
    """The authorization server sent the person back: check the ``state`` is theirs, from
    this browser session, unused and fresh; then the code for tokens. Errors the server sent
    are shown with its own words."""
    state = params.get("state") or ""
    if not state:
        raise ConnectError(_("the authorization server sent you back without a state"))
    with transaction.atomic():
        attempt = (
            ConnectAttempt.objects.select_related("source").filter(state_hash=_hash(state)).first()
        )
        # Used once, whatever follows (a replayed state finds nothing).
        taken = attempt is not None and ConnectAttempt.objects.filter(pk=attempt.pk).delete()[0]
    if attempt is None or not taken:
        raise ConnectError(_("this authorization is unknown or was already used; connect again"))
    if attempt.user_id != user.pk or attempt.session_hash != _hash(session_key or ""):
        _audit(user, attempt.source, "connect_refused", reason="state of another person or session")
        raise ConnectError(
            _(
                "this authorization was started by someone else (or in another browser "
                "session); connect again"
            )
        )
    if attempt.created_at < timezone.now() - timedelta(seconds=ATTEMPT_SECONDS):
        raise ConnectError(_("the authorization took too long; connect again"))
    source = attempt.source
    label = source.label or source.name
    if params.get("error"):
        description = (params.get("error_description") or "")[:300]
        raise ConnectError(
            _("%(label)s did not authorize the connection: %(error)s%(description)s")
            % {
                "label": label,
                "error": params["error"][:100],
                "description": f" — {description}" if description else "",
            }
        )
    code = params.get("code") or ""
    if not code:
        raise ConnectError(_("the authorization server sent you back without a code"))
    found, client = _client_of(source)
    if found.asm:
        from mcp.client.auth import OAuthFlowError
        from mcp.client.auth.utils import validate_authorization_response_iss
        from mcp.shared.auth import OAuthMetadata

        try:
            validate_authorization_response_iss(
                params.get("iss"), OAuthMetadata.model_validate(found.asm)
            )
        except OAuthFlowError as exc:
            raise ConnectError(str(exc)) from None
    try:
        tokens = oauth.exchange_code(
            found,
            client,
            code=code,
            verifier=attempt.verifier,
            redirect_uri=attempt.redirect_uri,
            guard=_guard(source),
        )
    except oauth.OAuthProblem as exc:
        raise ConnectError(
            _("%(label)s refused the code: %(error)s") % {"label": label, "error": exc}
        ) from None
    connection = _connection_save(
        user=user,
        source=source,
        kind=SourceConnection.Kind.OAUTH,
        account=tokens.account
        or f"{user.get_username()} ({_host(found.issuer or found.token_endpoint)})",
        apply=lambda c: _store_tokens(c, tokens),
        scopes=tokens.scope or found.scope,
    )
    return Finished(connection, attempt.next_url)


def _host(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).netloc or url


def _connection_save(
    *, user: Any, source: ToolSource, kind: str, account: str, apply: Any, scopes: str = ""
) -> SourceConnection:
    with transaction.atomic():
        connection = SourceConnection.objects.filter(user=user, source=source).first()
        before = connection.account if connection else ""
        connection = connection or SourceConnection(user=user, source=source)
        connection.kind = kind
        connection.state = SourceConnection.State.ACTIVE
        connection.account = account[:200]
        connection.scopes = scopes[:1000]
        apply(connection)
        connection.save()
        _audit(
            user,
            source,
            "connected",
            account=connection.account,
            before=before,
            scopes=connection.scopes,
        )
    return connection


def api_key_set(
    *, user: Any, source: ToolSource, value: str, account: str = ""
) -> SourceConnection:
    """A person's own API key (or bearer token) for an OpenAPI source; write-only."""
    value = value.strip()
    if (
        not source_is_personal(source)
        or source_person_kind(source) != SourceConnection.Kind.API_KEY
    ):
        raise ConnectError(_("%(label)s does not take a personal key") % {"label": source.label})
    if not value:
        raise ConnectError(_("the key is empty"))
    if len(value) > 4000 or any(c in value for c in "\r\n\x00"):
        raise ConnectError(_("the key must be one line of at most 4000 characters"))
    label = account.strip()[:200] or _("key ending …%(tail)s") % {"tail": value[-4:]}

    def apply(connection: SourceConnection) -> None:
        connection.secrets = json.dumps({"api_key": value})
        connection.expires_at = None
        connection.refreshed_at = timezone.now()

    return _connection_save(
        user=user, source=source, kind=SourceConnection.Kind.API_KEY, account=label, apply=apply
    )


def person_env_set(*, user: Any, source: ToolSource, values: dict[str, str]) -> SourceConnection:
    """A person's own values of a stdio server's per-person variables; write-only. A blank
    value keeps the stored one; the connection is usable once every variable is set."""
    names = person_env_names(source.config or {})
    if not _stdio(source) or not names:
        raise ConnectError(
            _("%(label)s takes no personal variables") % {"label": source.label or source.name}
        )
    unknown = sorted(set(values) - set(names))
    if unknown:
        raise ConnectError(_("%(name)s is not a variable of this server") % {"name": unknown[0]})
    current = SourceConnection.objects.filter(user=user, source=source).first()
    stored = {
        k: v
        for k, v in (_secrets(current) if current is not None else {}).items()
        if k.startswith(ENV_PREFIX) and k[len(ENV_PREFIX) :] in names
    }
    for name, value in values.items():
        if not value:
            continue
        if "\n" in value or "\r" in value:
            raise ConnectError(_("the value of %(name)s must be one line") % {"name": name})
        try:
            stored[f"{ENV_PREFIX}{name}"] = check_env_value(name, value)
        except EnvError as exc:
            raise ConnectError(str(exc)) from None
    missing = [n for n in names if f"{ENV_PREFIX}{n}" not in stored]
    if missing:
        raise ConnectError(_("enter a value for %(names)s") % {"names": ", ".join(missing)})

    def apply(connection: SourceConnection) -> None:
        connection.secrets = json.dumps(stored)
        connection.expires_at = None
        connection.refreshed_at = timezone.now()

    return _connection_save(
        user=user,
        source=source,
        kind=SourceConnection.Kind.ENV,
        account=_("%(names)s set") % {"names": ", ".join(names)},
        apply=apply,
    )


# --- disconnecting -------------------------------------------------------------------------------
def connection_disconnect(*, user: Any, connection_id: int) -> SourceConnection:
    """Revoke (RFC 7009, when the server offers it) and delete one of ``user``'s own
    connections; audited."""
    connection = (
        SourceConnection.objects.select_related("source")
        .filter(pk=connection_id, user=user)
        .first()
    )
    if connection is None:
        raise ConnectError(_("no such connection"))
    revoked = _revoke(connection)
    connection.delete()
    _audit(user, connection.source, "disconnected", account=connection.account, revoked=revoked)
    return connection


def _revoke(connection: SourceConnection) -> bool:
    if connection.kind != SourceConnection.Kind.OAUTH:
        return False
    try:
        found, client = _client_of(connection.source)
        return oauth.revoke(
            found, client, tokens=_secrets(connection), guard=_guard(connection.source)
        )
    except (ConnectError, oauth.OAuthProblem) as exc:
        logger.warning("cannot revoke connection %s: %s", connection.pk, exc)
        return False


def connections_end_for(user_id: int, *, reason: str = "deactivated") -> int:
    """A person's account was deactivated: revoke every connection of theirs and delete it
    (audited, one record each)."""
    ended = 0
    for connection in SourceConnection.objects.select_related("source", "user").filter(
        user_id=user_id
    ):
        revoked = _revoke(connection)
        if SourceConnection.objects.filter(pk=connection.pk).delete()[0]:
            ended += 1
            _audit(
                None,
                connection.source,
                "disconnected",
                account=connection.account,
                revoked=revoked,
                reason=reason,
                subject=connection.user,
            )
    return ended


def _audit(
    user: Any,
    source: ToolSource,
    action: str,
    *,
    account: str = "",
    subject: Any = None,
    **detail: Any,
) -> None:
    """Connections' own records (kind settings, group of the source): who, whose, which
    account; never a token."""
    person = subject or user
    AuditRecord.objects.create(
        kind=AuditRecord.Kind.SETTINGS,
        user=user if getattr(user, "pk", None) else None,
        username=getattr(user, "username", "") if user else "",
        group=source.group_name,
        tool="connection",
        status=action,
        detail=redact(
            {
                "person": getattr(person, "username", ""),
                "source": source.name,
                "account": account,
                **detail,
            }
        ),
    )


# --- the admin's choice --------------------------------------------------------------------------
def source_credentials_set(
    *,
    source: ToolSource,
    mode: str,
    user: Any,
    client_id: str = "",
    client_secret: str = "",
    scopes: str = "",
    issuer: str = "",
    client_auth_method: str = "",
) -> ToolSource:
    """How ``source`` authenticates: none, shared (its stored secret) or per person (OAuth
    for an HTTP MCP server; the document's scheme for an OpenAPI source). Processes follow
    at once (the source's revision moves on); a changed OAuth client is discovered and
    registered again at the next connect."""
    from tools_app.services.sources import SourceError, source_connection_set, source_secrets

    if mode not in CREDENTIALS:
        raise SourceError(
            _("credentials must be one of %(join)s") % {"join": ", ".join(CREDENTIALS)}
        )
    config = dict(source.config or {})
    if mode == PERSON:
        if _stdio(source):
            raise SourceError(
                _(
                    "a stdio server is per person through its environment variables: mark "
                    "a variable per person in its Environment variables block"
                )
            )
        if source.kind == ToolSource.Kind.OPENAPI:
            kind = str((config.get("auth") or {}).get("type") or "none")
            if kind not in ("api_key", "bearer", "oauth2"):
                raise SourceError(
                    _(
                        "per person needs the API's authentication to be an API key, a bearer "
                        "token or OAuth 2.0 (the document's securitySchemes)"
                    )
                )
            if kind == "oauth2" and not client_id.strip():
                raise SourceError(
                    _(
                        "OAuth 2.0 for an OpenAPI source needs the client id (and secret) you "
                        "registered at the API's authorization server with the callback URL "
                        "shown here: an OpenAPI document offers no dynamic registration"
                    )
                )
    secrets = source_secrets(source)
    before = dict(config.get("oauth") or {})
    oauth_settings = {
        k: v
        for k, v in {
            "client_id": client_id.strip(),
            "scopes": scopes.strip(),
            "issuer": issuer.strip(),
            "client_auth_method": client_auth_method
            if client_auth_method in CLIENT_AUTH_METHODS
            else "",
        }.items()
        if v
    }
    config["credentials"] = mode
    config["oauth"] = oauth_settings
    if client_secret:
        secrets["oauth_client_secret"] = client_secret
    elif not client_id.strip():
        secrets.pop("oauth_client_secret", None)
    with transaction.atomic():
        source_connection_set(source, config=config, secrets=secrets, user=user)
        if before != oauth_settings or client_secret:
            SourceOAuthClient.objects.filter(source=source).delete()
    return source
