"""A real OAuth 2.1 authorization server in front of a real streamable-HTTP MCP server, both
built from the official SDK (``mcp.server.auth``'s routes and provider protocol, MCPServer's
bearer middleware and protected-resource metadata), on one loopback port:

- ``/.well-known/oauth-protected-resource/mcp`` (RFC 9728) and the 401's ``WWW-Authenticate``
  naming it; ``/.well-known/oauth-authorization-server`` (RFC 8414);
- ``/register`` (RFC 7591), ``/authorize`` (PKCE S256 required by the SDK), ``/token``
  (authorization code and refresh, rotating refresh tokens), ``/revoke`` (RFC 7009);
- ``/login``: the "sign in" page the authorization endpoint sends a person to, where they pick
  which account of the service to authorize (the tests post it as a browser would);
- the MCP tools ``whoami`` (the account the token stands for), ``echo_headers`` (the request's
  headers, as a careless server might return them) and ``echo``.

What the server saw is kept in ``Observed`` for the assertions: tokens issued, refreshed and
revoked, the ``resource`` of each authorization and token request, every MCP request's
Authorization header.
"""

# No `from __future__ import annotations`: the SDK reads the tools' annotations at run time.
import base64
import contextlib
import html
import json
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from tests.httpserver import free_port

SCOPE = "tools:read"


class TokenWithIdentity(OAuthToken):
    id_token: str | None = None


def _unsigned_jwt(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        raw = json.dumps(value).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


@dataclass
class Observed:
    issued: list[tuple[str, str]] = field(default_factory=list)  # (account, access token)
    refreshed: list[str] = field(default_factory=list)  # accounts
    revoked: list[str] = field(default_factory=list)  # token values
    authorize_resources: list[str | None] = field(default_factory=list)
    token_resources: list[str | None] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)  # MCP requests' Authorization
    registered: list[str] = field(default_factory=list)  # client ids


class Provider:
    """The SDK's ``OAuthAuthorizationServerProvider`` protocol, in memory."""

    def __init__(self, issuer: str, observed: Observed, *, expires_in: int) -> None:
        self.issuer = issuer
        self.observed = observed
        self.expires_in = expires_in
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.pending: dict[str, tuple[OAuthClientInformationFull, AuthorizationParams]] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.lock = threading.Lock()

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info
        self.observed.registered.append(client_info.client_id)

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        request = secrets.token_urlsafe(16)
        self.pending[request] = (client, params)
        self.observed.authorize_resources.append(params.resource)
        return f"{self.issuer}/login?request={request}"

    def login(self, request: str, account: str | None) -> str:
        """The person chose ``account`` (None: they refused): back to the client."""
        client, params = self.pending.pop(request)
        if account is None:
            return construct_redirect_uri(
                str(params.redirect_uri),
                error="access_denied",
                error_description="The person refused",
                state=params.state,
            )
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=account,
        )
        return construct_redirect_uri(
            str(params.redirect_uri), code=code, state=params.state, iss=self.issuer
        )

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    def _issue(
        self, client_id: str, scopes: list[str], account: str, resource: str | None
    ) -> OAuthToken:
        access, refresh = f"at-{secrets.token_urlsafe(24)}", f"rt-{secrets.token_urlsafe(24)}"
        with self.lock:
            self.access[access] = AccessToken(
                token=access,
                client_id=client_id,
                scopes=scopes,
                expires_at=int(time.time()) + self.expires_in,
                resource=resource,
                subject=account,
            )
            self.refresh[refresh] = RefreshToken(
                token=refresh,
                client_id=client_id,
                scopes=scopes,
                resource=resource,
                subject=account,
            )
        self.observed.issued.append((account, access))
        return TokenWithIdentity(
            access_token=access,
            expires_in=self.expires_in,
            scope=" ".join(scopes),
            refresh_token=refresh,
            id_token=_unsigned_jwt(
                {"iss": self.issuer, "sub": account, "preferred_username": account}
            ),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.observed.token_resources.append(authorization_code.resource)
        return self._issue(
            client.client_id,
            authorization_code.scopes,
            authorization_code.subject or "?",
            authorization_code.resource,
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        with self.lock:
            self.refresh.pop(refresh_token.token, None)  # rotated
        self.observed.refreshed.append(refresh_token.subject or "?")
        self.observed.token_resources.append(refresh_token.resource)
        return self._issue(
            client.client_id,
            scopes or refresh_token.scopes,
            refresh_token.subject or "?",
            refresh_token.resource,
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        with self.lock:
            self.observed.revoked.append(token.token)
            self.access.pop(token.token, None)
            self.refresh.pop(token.token, None)
            for store in (self.access, self.refresh):
                for value, other in list(store.items()):  # the whole grant goes
                    if other.subject == token.subject and other.client_id == token.client_id:
                        store.pop(value, None)

    def revoke_account(self, account: str) -> None:
        """The service took the person's authorization away (on its own side)."""
        with self.lock:
            for store in (self.access, self.refresh):
                for value, other in list(store.items()):
                    if other.subject == account:
                        store.pop(value, None)

    def expire_access(self) -> None:
        with self.lock:
            for token in self.access.values():
                token.expires_at = int(time.time()) - 1


@dataclass
class OAuthMcp:
    base: str
    url: str  # the MCP endpoint
    provider: Provider
    observed: Observed


def make_app(base: str, observed: Observed, *, expires_in: int, registration: bool) -> Any:
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, RedirectResponse, Response

    provider = Provider(base, observed, expires_in=expires_in)
    server = MCPServer(
        "oauth-tools",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            client_registration_options=ClientRegistrationOptions(
                enabled=registration, valid_scopes=[SCOPE], default_scopes=[SCOPE]
            ),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=[SCOPE],
            validate_token_resource=True,
        ),
    )

    @server.tool(description="The account this connection acts as.")
    def whoami() -> str:
        token = get_access_token()
        return f"you are {token.subject if token else 'nobody'}"

    @server.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="The headers of this request, as a careless server returns them.")
    async def echo_headers(ctx: Context) -> str:
        request = ctx.request_context.request
        headers = dict(request.headers) if request is not None else {}
        return json.dumps(headers)

    @server.custom_route("/favicon.ico", methods=["GET"])
    async def favicon(request: Request) -> Response:  # the browser asks on the sign-in page
        return Response(status_code=204)

    @server.custom_route("/login", methods=["GET", "POST"])
    async def login(request: Request) -> Response:
        if request.method == "GET":
            pending = html.escape(request.query_params.get("request", ""))
            return HTMLResponse(
                "<!doctype html><title>Sign in to Test Service</title><h1>Test Service</h1>"
                "<form method='post'>"
                f"<input type='hidden' name='request' value='{pending}'>"
                "<label>Account <input name='account' value='alice-gh'></label>"
                "<button name='decision' value='allow'>Authorize</button>"
                "<button name='decision' value='deny'>Deny</button></form>"
            )
        form = parse_qs((await request.body()).decode())
        pending = form.get("request", [""])[0]
        if pending not in provider.pending:
            return HTMLResponse("unknown request", status_code=400)
        allow = form.get("decision", ["allow"])[0] == "allow"
        account = form.get("account", ["alice-gh"])[0] if allow else None
        return RedirectResponse(provider.login(pending, account), status_code=302)

    app = server.streamable_http_app()

    def recording(inner: Any) -> Any:
        async def wrapped(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope.get("path", "").startswith("/mcp"):
                headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
                observed.authorizations.append(headers.get("authorization", ""))
            await inner(scope, receive, send)

        return wrapped

    return recording(app), provider


@contextlib.contextmanager
def serve_oauth_mcp(*, expires_in: int = 3600, registration: bool = True) -> Iterator[OAuthMcp]:
    import uvicorn

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    observed = Observed()
    app, provider = make_app(base, observed, expires_in=expires_in, registration=registration)
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=2
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the OAuth MCP test server did not start")
        time.sleep(0.02)
    try:
        yield OAuthMcp(base=base, url=f"{base}/mcp", provider=provider, observed=observed)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
