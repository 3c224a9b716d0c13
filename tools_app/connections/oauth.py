"""OAuth 2.1 for imported sources, as the MCP authorization specification asks of a client.

Library choice. The protocol messages are Authlib's (already our SSO library): the
authorization URL with PKCE S256 (RFC 7636), the token request with the client's
authentication (basic, post or none), refresh, and revocation (RFC 7009), each with Authlib's
parsing of OAuth errors. What is MCP-specific comes from the official ``mcp`` SDK: the order of
the discovery URLs (RFC 9728 protected-resource metadata from the 401's ``WWW-Authenticate``,
then the well-known URLs; RFC 8414 and OpenID discovery of the authorization server), the
metadata models that validate what is found, the issuer checks (RFC 8414 §3.3, RFC 9207
``iss``), the canonical resource indicator (RFC 8707) and the scope selection. The SDK's own
``OAuthClientProvider`` is not used: it is an ``httpx`` auth flow for one interactive client
process (it awaits the authorization code inside the request that needed it), while here the
person authorizes in their browser between two web requests, possibly served by two processes,
and the tokens are refreshed later by a worker.

Every request this module sends goes through the SSRF guard (``tools_app.executors.http
.client.fetch``: addresses checked and pinned, no redirects followed), with the same private
host exceptions an admin gave the source itself.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.utils.translation import gettext as _

from tools_app.errors import ToolError

logger = logging.getLogger(__name__)

TIMEOUT = 20.0
MAX_BYTES = 1_000_000
GRANT_TYPES = ["authorization_code", "refresh_token"]


class OAuthProblem(Exception):
    """Discovery, registration or a token request failed; the words are for the person (or
    the admin) and name the authorization server's own error when it gave one."""


class TokenRefused(OAuthProblem):
    """The authorization server refused a refresh token (revoked, expired): connect again."""


# --- HTTP through the SSRF guard ------------------------------------------------------------
class _Response:
    """What Authlib reads of a response (``requests``' names)."""

    def __init__(self, status: int, text: str, url: str, headers: dict[str, str]) -> None:
        self.status_code = status
        self.text = text
        self.url = url
        self.headers = headers

    def json(self) -> Any:
        return json.loads(self.text)

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise OAuthProblem(
                _("%(url)s answered HTTP %(status)s")
                % {"url": self.url, "status": self.status_code}
            )


@dataclass
class Guard:
    """Where requests may go: any public host, and the private ones an admin allowed for the
    source (``private_allowed``: the source's own setting)."""

    private_allowed: Sequence[str] = ()

    def send(
        self, method: str, url: str, *, headers: dict[str, str] | None = None, body: str = ""
    ) -> _Response:
        from tools_app.executors.http.client import fetch

        if not url.startswith(("https://", "http://")):
            raise OAuthProblem(_("not an http(s) URL: %(url)s") % {"url": url[:200]})
        try:
            result = fetch(
                method,
                url,
                headers=headers,
                body=body or None,
                timeout=TIMEOUT,
                max_bytes=MAX_BYTES,
                follow_redirects=False,
                private_allowed=list(self.private_allowed),
            )
        except ToolError as exc:
            raise OAuthProblem(
                _("cannot reach %(url)s: %(reason)s") % {"url": _shown(url), "reason": exc.message}
            ) from None
        return _Response(result.status, result.text or "", _shown(url), dict(result.headers))

    # Authlib's session interface (``OAuth2Client.session``).
    def post(
        self,
        url: str,
        data: Any = None,
        headers: dict[str, str] | None = None,
        auth: Any = None,
        **_kw: Any,
    ) -> _Response:
        body = urlencode(list(data.items()) if isinstance(data, dict) else (data or []))
        headers = dict(headers or {})
        if auth is not None:  # Authlib's ClientAuth: client_secret_basic / _post / none
            url, headers, body = auth.prepare("POST", url, headers, body)
        return self.send("POST", url, headers=headers, body=body)

    def request(self, method: str, url: str, headers: Any = None, **_kw: Any) -> _Response:
        return self.send(method, url, headers=dict(headers or {}))


def _shown(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


# --- discovery ---------------------------------------------------------------------------------
@dataclass
class Discovered:
    """What a client needs to know about a source's authorization server (stored as JSON on
    ``SourceOAuthClient.metadata``)."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    resource: str
    scope: str = ""
    registration_endpoint: str = ""
    revocation_endpoint: str = ""
    refresh_endpoint: str = ""  # an OpenAPI flow's refreshUrl, where it differs
    iss_parameter: bool = False
    auth_methods: list[str] = field(default_factory=list)
    asm: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Discovered:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


def _json_at(guard: Guard, url: str) -> tuple[int, str]:
    from mcp_types import LATEST_PROTOCOL_VERSION

    response = guard.send(
        "GET",
        url,
        headers={"Accept": "application/json", "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION},
    )
    return response.status_code, response.text


def _challenge(guard: Guard, server_url: str) -> tuple[str | None, str | None]:
    """Ask the server without a token; its 401 names its metadata (RFC 9728 §5.1) and maybe
    the scope it wants (RFC 6750 §3)."""
    import httpx2
    from mcp.client.auth.utils import extract_field_from_www_auth
    from mcp_types import LATEST_PROTOCOL_VERSION

    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "controlcenter", "version": "1"},
        },
    }
    response = guard.send(
        "POST",
        server_url,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        body=json.dumps(initialize),
    )
    if response.status_code not in (401, 403):
        return None, None
    # The SDK's parser reads the header of an httpx2 response.
    wrapped = httpx2.Response(response.status_code, headers=response.headers)
    return (
        extract_field_from_www_auth(wrapped, "resource_metadata"),
        extract_field_from_www_auth(wrapped, "scope"),
    )


def discover(
    server_url: str,
    *,
    guard: Guard,
    issuer_hint: str = "",
    scopes: str = "",
) -> Discovered:
    """Find the authorization server of an MCP server at ``server_url`` and what to ask it for.
    ``issuer_hint``: an admin's choice when the server publishes no metadata of its own."""
    from mcp.client.auth.utils import (
        build_oauth_authorization_server_metadata_discovery_urls,
        build_protected_resource_metadata_discovery_urls,
        get_client_metadata_scopes,
    )
    from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
    from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
    from pydantic import ValidationError

    www_metadata, www_scope = _challenge(guard, server_url)
    prm: ProtectedResourceMetadata | None = None
    for url in build_protected_resource_metadata_discovery_urls(www_metadata, server_url):
        status, text = _json_at(guard, url)
        if status == 200:
            try:
                prm = ProtectedResourceMetadata.model_validate_json(text)
                break
            except ValidationError:
                continue
    resource = resource_url_from_server_url(server_url)
    if prm is not None:
        announced = str(prm.resource)
        # The metadata must be about this server (or a parent of its URL): another server's
        # metadata would send the person's token somewhere else.
        if not check_resource_allowed(resource, announced):
            raise OAuthProblem(
                _("the server's metadata names another resource (%(announced)s), not %(url)s")
                % {"announced": announced, "url": resource}
            )
        resource = announced
    issuer = issuer_hint or (str(prm.authorization_servers[0]) if prm is not None else "")
    asm: OAuthMetadata | None = None
    for url in build_oauth_authorization_server_metadata_discovery_urls(issuer or None, server_url):
        status, text = _json_at(guard, url)
        if status == 200:
            try:
                asm = OAuthMetadata.model_validate_json(text)
                break
            except ValidationError:
                continue
        elif status >= 500:
            break
    if asm is None:
        raise OAuthProblem(
            _(
                "no OAuth authorization server found for %(url)s (neither protected-resource "
                "metadata nor authorization server metadata answered)"
            )
            % {"url": server_url}
        )
    if issuer:
        from mcp.client.auth.utils import issuers_match

        if not issuers_match(str(asm.issuer), issuer):
            raise OAuthProblem(
                _("the authorization server says it is %(got)s, not %(expected)s")
                % {"got": asm.issuer, "expected": issuer}
            )
    methods = asm.code_challenge_methods_supported
    if not methods or "S256" not in methods:
        raise OAuthProblem(
            _(
                "the authorization server %(issuer)s does not offer PKCE with S256, which "
                "MCP requires"
            )
            % {"issuer": asm.issuer}
        )
    chosen = scopes.strip() or (get_client_metadata_scopes(www_scope, prm, asm, GRANT_TYPES) or "")
    return Discovered(
        issuer=str(asm.issuer),
        authorization_endpoint=str(asm.authorization_endpoint),
        token_endpoint=str(asm.token_endpoint),
        registration_endpoint=str(asm.registration_endpoint or ""),
        revocation_endpoint=str(asm.revocation_endpoint or ""),
        resource=resource,
        scope=chosen,
        iss_parameter=bool(asm.authorization_response_iss_parameter_supported),
        auth_methods=list(asm.token_endpoint_auth_methods_supported or []),
        asm=asm.model_dump(mode="json", exclude_none=True),
    )


def discovered_from_document(
    *,
    authorization_url: str,
    token_url: str,
    resource: str,
    scope: str,
    refresh_url: str = "",
    revocation_url: str = "",
) -> Discovered:
    """An OpenAPI document's ``oauth2`` authorization-code flow: its endpoints are named in
    the document itself, so nothing is discovered (and nothing registered)."""
    return Discovered(
        issuer="",
        authorization_endpoint=authorization_url,
        token_endpoint=token_url,
        refresh_endpoint=refresh_url if refresh_url != token_url else "",
        revocation_endpoint=revocation_url,
        resource=resource,
        scope=scope,
        auth_methods=["client_secret_basic", "client_secret_post", "none"],
    )


# --- registration (RFC 7591) -----------------------------------------------------------------
@dataclass
class Client:
    client_id: str
    client_secret: str = ""
    auth_method: str = ""


def register(found: Discovered, *, redirect_uri: str, guard: Guard) -> Client:
    """Dynamic client registration: this deployment as a web client with one redirect URI."""
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    if not found.registration_endpoint:
        raise OAuthProblem(
            _(
                "the authorization server %(issuer)s offers no dynamic client registration: an "
                "admin must register a client there and enter its id (and secret) for this source"
            )
            % {"issuer": found.issuer}
        )
    # A confidential client: the secret in the body where the server takes it there (the
    # MCP SDK's own server wants it there for revocation too), else HTTP Basic, RFC 6749's
    # default when the server lists nothing.
    methods = found.auth_methods or ["client_secret_basic"]
    method = next(
        (m for m in ("client_secret_post", "client_secret_basic", "none") if m in methods),
        "client_secret_basic",
    )
    metadata = OAuthClientMetadata(
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        token_endpoint_auth_method=method,  # type: ignore[arg-type]
        grant_types=GRANT_TYPES,  # type: ignore[arg-type]
        response_types=["code"],
        scope=found.scope or None,
        client_name="Control Center",
        application_type="web",
    )
    response = guard.send(
        "POST",
        found.registration_endpoint,
        headers={"Content-Type": "application/json", "Accept": "application/json"},
        body=json.dumps(metadata.model_dump(by_alias=True, mode="json", exclude_none=True)),
    )
    if response.status_code not in (200, 201):
        raise OAuthProblem(
            _("client registration at %(url)s failed: %(detail)s")
            % {"url": response.url, "detail": _error_words(response)}
        )
    try:
        body = response.json()
        if isinstance(body, dict):
            body.pop("issuer", None)  # never taken from the wire (the SDK's rule)
        info = OAuthClientInformationFull.model_validate(body)
    except ValueError as exc:
        raise OAuthProblem(
            _("client registration answered something unreadable: %(error)s") % {"error": exc}
        ) from None
    return Client(
        client_id=info.client_id,
        client_secret=info.client_secret or "",
        auth_method=info.token_endpoint_auth_method or method,
    )


def _error_words(response: _Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    if isinstance(body, dict) and body.get("error"):
        description = str(body.get("error_description") or "")
        return f"{body['error']}" + (f": {description[:300]}" if description else "")
    return f"HTTP {response.status_code}"


# --- the authorization code flow with PKCE -------------------------------------------------------
def _client(found: Discovered, client: Client, *, guard: Guard, redirect_uri: str = "") -> Any:
    from authlib.oauth2.client import OAuth2Client

    method = client.auth_method or ("client_secret_basic" if client.client_secret else "none")
    return OAuth2Client(
        guard,
        client_id=client.client_id,
        client_secret=client.client_secret or None,
        token_endpoint_auth_method=method,
        revocation_endpoint_auth_method=method,
        scope=found.scope or None,
        redirect_uri=redirect_uri or None,
        code_challenge_method="S256",
    )


def _client_id_too(client: Client) -> dict[str, str]:
    """With HTTP Basic client authentication the body carries no client_id; RFC 6749 allows
    it there as well, and some servers (the MCP SDK's among them) require it. The other
    methods put it in the body themselves."""
    method = client.auth_method or ("client_secret_basic" if client.client_secret else "none")
    return {"client_id": client.client_id} if method == "client_secret_basic" else {}


def new_verifier() -> str:
    from authlib.common.security import generate_token

    return generate_token(64)  # RFC 7636: 43 to 128 characters of [A-Za-z0-9-._~]


def new_state() -> str:
    from authlib.common.security import generate_token

    return generate_token(40)


def authorization_url(
    found: Discovered, client: Client, *, redirect_uri: str, state: str, verifier: str
) -> str:
    """Where to send the person: the authorization request with the PKCE challenge (S256)
    and the resource indicator (RFC 8707)."""
    oauth = _client(found, client, guard=Guard(), redirect_uri=redirect_uri)
    extra = {"resource": found.resource} if found.resource else {}
    url, _state = oauth.create_authorization_url(
        found.authorization_endpoint, state=state, code_verifier=verifier, **extra
    )
    return str(url)


@dataclass
class Tokens:
    access_token: str
    refresh_token: str = ""
    expires_in: int | None = None
    scope: str = ""
    account: str = ""


def _tokens(raw: Any, *, previous_refresh: str = "") -> Tokens:
    token = dict(raw or {})
    access = str(token.get("access_token") or "")
    if not access:
        raise OAuthProblem(_("the token endpoint answered without an access token"))
    expires = token.get("expires_in")
    try:
        expires_in = int(expires) if expires is not None else None
    except (TypeError, ValueError):
        expires_in = None
    return Tokens(
        access_token=access,
        refresh_token=str(token.get("refresh_token") or previous_refresh),
        expires_in=expires_in,
        scope=str(token.get("scope") or ""),
        account=account_from(token),
    )


def account_from(token: dict[str, Any]) -> str:
    """A label for the account the token acts as: the ID token's (received straight from the
    token endpoint over TLS, which OpenID Connect Core §3.1.3.7 accepts in place of checking
    its signature: used as a label only), else a field some servers add."""
    id_token = token.get("id_token")
    if isinstance(id_token, str) and id_token.count(".") == 2:
        try:
            payload = id_token.split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except (ValueError, TypeError):
            claims = {}
        if isinstance(claims, dict):
            for key in ("preferred_username", "email", "name", "sub"):
                if isinstance(claims.get(key), str) and claims[key]:
                    return str(claims[key])[:200]
    for key in ("account", "username", "login", "email", "user"):
        if isinstance(token.get(key), str) and token[key]:
            return str(token[key])[:200]
    return ""


def _oauth_call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    from authlib.common.errors import AuthlibBaseError

    try:
        return fn(*args, **kwargs)
    except AuthlibBaseError as exc:
        error = getattr(exc, "error", "") or type(exc).__name__
        description = getattr(exc, "description", "") or ""
        words = f"{error}" + (f": {description[:300]}" if description else "")
        if error in ("invalid_grant", "invalid_token", "unauthorized_client", "invalid_client"):
            raise TokenRefused(words) from None
        raise OAuthProblem(words) from None
    except ValueError as exc:  # not a JSON object
        raise OAuthProblem(str(exc)[:300]) from None


def exchange_code(
    found: Discovered,
    client: Client,
    *,
    code: str,
    verifier: str,
    redirect_uri: str,
    guard: Guard,
) -> Tokens:
    oauth = _client(found, client, guard=guard, redirect_uri=redirect_uri)
    extra = {"resource": found.resource} if found.resource else {}
    extra.update(_client_id_too(client))
    raw = _oauth_call(
        oauth.fetch_token,
        found.token_endpoint,
        grant_type="authorization_code",
        code=code,
        code_verifier=verifier,
        **extra,
    )
    return _tokens(raw)


def refresh(found: Discovered, client: Client, *, refresh_token: str, guard: Guard) -> Tokens:
    if not refresh_token:
        raise TokenRefused(_("no refresh token was issued"))
    oauth = _client(found, client, guard=guard)
    extra = {"resource": found.resource} if found.resource else {}
    extra.update(_client_id_too(client))
    raw = _oauth_call(
        oauth.refresh_token,
        found.refresh_endpoint or found.token_endpoint,
        refresh_token=refresh_token,
        **extra,
    )
    return _tokens(raw, previous_refresh=refresh_token)


def revoke(found: Discovered, client: Client, *, tokens: dict[str, str], guard: Guard) -> bool:
    """Revoke the refresh token and the access token (RFC 7009); False when the server offers
    no revocation endpoint or refused (the tokens are deleted here either way)."""
    if not found.revocation_endpoint:
        return False
    oauth = _client(found, client, guard=guard)
    done = True
    for hint in ("refresh_token", "access_token"):
        value = tokens.get(hint) or ""
        if not value:
            continue
        try:
            response = oauth.revoke_token(
                found.revocation_endpoint,
                token=value,
                token_type_hint=hint,
                body=urlencode(_client_id_too(client)),
            )
            done = done and response.status_code == 200
        except OAuthProblem as exc:
            logger.warning("revoking a %s at %s failed: %s", hint, found.issuer, exc)
            done = False
    return done
