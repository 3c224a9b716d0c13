"""How a session with an MCP server is opened: a stdio server spawned in the sandbox, or an
HTTP client pinned to addresses the SSRF guard checked.

stdio servers are Python (or any) programs installed into ``MCP_SERVERS_VENV`` (a virtualenv
made with the system Python, ``manage.py mcp_servers install PACKAGE``). The venv is mounted
read-only at its own path inside the sandbox, so its console scripts' ``#!`` lines work, and
its ``bin`` comes first on the server's PATH. Everything else is the sandbox as the shell tool
gets it (``Sandbox.spawn``): Docker, with the same hardening as the warm containers (network off
unless the group allows it), or bubblewrap; ``none`` only when an admin sets it.

A server's environment variables (``ServerSpec.env``, ``secret_env``; stored by
``tools_app.services.source_env``) are added to that clean environment; the secret ones reach
the server's process only (``tools_app.sandbox.secret_env`` says how), and a changed one
opens a new session (the digest).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings as django_settings

from tools_app.executors.mcp.settings import McpSettings
from tools_app.sandbox import Spawned, SpawnRequest, get_sandbox
from tools_app.sandbox.base import DEFAULT_PATH


@dataclass(frozen=True)
class ServerSpec:
    """Everything needed to open a session, read from the database in the calling thread."""

    name: str
    revision: int
    transport: str  # stdio | http | sse
    command: tuple[str, ...] = ()
    url: str = ""
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    settings: McpSettings = field(default_factory=McpSettings)
    workspace_id: str = ""
    workspace_dir: str = ""
    env: tuple[tuple[str, str], ...] = ()  # stdio: plain variables (shown to admins)
    secret_env: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # stdio: secrets
    # A per-person source (``tools_app.connections``): whose session this is ("u<user>-c<
    # connection>"), the person's access token and what renews it after a 401. The token is
    # neither in the key nor in the digest (nor in the repr): a session is told the current
    # one with each call, and the key separates persons without holding a secret.
    person: str = ""
    bearer: str = field(default="", repr=False, compare=False)
    renew: Callable[[str], str] | None = field(default=None, repr=False, compare=False)
    # stdio: the person's own values of the per-person variables (``source_env``); kept out
    # of the digest (persons' sessions of one server share it) and keyed in ``key``.
    person_env: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def key(self) -> tuple[str, str, str]:
        """A session serves calls with the same connection: a changed command, URL, header or
        setting opens a new one (the old one is closed); new tools alone do not. A
        per-person source's session serves one person's calls only; a stdio one's also
        holds a keyed hash of the person's values (changed values: a new process)."""
        if self.transport != "stdio":
            return (self.name, self.digest, self.person)
        if not self.person:
            return (self.name, self.digest, self.workspace_id)
        third = f"{self.workspace_id}#{self.person}#{_keyed(self.person_env)[:16]}"
        return (self.name, self.digest, third)

    @property
    def digest(self) -> str:
        """Logged with the session's key: secrets enter it only through ``_keyed``."""
        parts = json.dumps(
            [
                self.transport,
                self.command,
                self.url,
                _keyed(self.headers),
                self.settings.model_dump(),
                self.env,
                _keyed(self.secret_env),
            ],
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(parts.encode()).hexdigest()[:16]


# A key of this process only: a digest compares connections within one process, and a keyed
# hash of a secret cannot be guessed offline from the digest (a short key, a known prefix).
_DIGEST_KEY = secrets.token_bytes(32)


def _keyed(pairs: tuple[tuple[str, str], ...]) -> str:
    text = json.dumps(sorted(pairs))
    return hmac.new(_DIGEST_KEY, text.encode(), hashlib.sha256).hexdigest()


def servers_venv() -> Path:
    # Resolved at use: a symlinked venv is mounted at its real path, where its #! lines point.
    return Path(django_settings.MCP_SERVERS_VENV).resolve()


# --- stdio ---------------------------------------------------------------------------------
def _server_env(venv: Path) -> dict[str, str]:
    # Added to the sandbox's clean environment (PATH, HOME, LANG).
    return {
        "PATH": f"{venv}/bin:{DEFAULT_PATH}",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }


def stdio_spawn(spec: ServerSpec) -> Spawned:
    """The server of ``spec`` set up in its sandbox; the caller runs it and closes it."""
    backend = None if spec.settings.sandbox_backend == "auto" else spec.settings.sandbox_backend
    venv = servers_venv()
    request = SpawnRequest(
        argv=list(spec.command),
        env={**dict(spec.env), **_server_env(venv)},  # names such as PATH are refused anyway
        network=spec.settings.network,
        ro_binds=[venv] if venv.is_dir() else [],
        name=f"mcp-{spec.name}",
        secret_env={**dict(spec.secret_env), **dict(spec.person_env)},
    )
    return get_sandbox(backend).spawn(spec.workspace_id, Path(spec.workspace_dir), request)


async def _spawn(spec: ServerSpec) -> Spawned:
    # In a thread: setting up may ask the engine to create a container, and this loop serves
    # every other session of the process meanwhile.
    setting_up = asyncio.ensure_future(asyncio.to_thread(stdio_spawn, spec))
    try:
        return await asyncio.shield(setting_up)
    except asyncio.CancelledError:
        setting_up.add_done_callback(_close_when_set_up)  # nobody will run it now
        raise


def _close_when_set_up(setting_up: asyncio.Future[Spawned]) -> None:
    if not setting_up.cancelled() and setting_up.exception() is None:
        threading.Thread(target=setting_up.result().close, daemon=True).start()


@asynccontextmanager
async def stdio_streams(spec: ServerSpec, errlog: TextIO) -> AsyncIterator[tuple[Any, Any, str]]:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    spawned = await _spawn(spec)
    try:
        params = StdioServerParameters(
            command=spawned.argv[0], args=spawned.argv[1:], env=spawned.env, cwd=spawned.cwd
        )
        async with stdio_client(params, errlog=errlog) as (read, write):
            # Its secret environment, where the backend hands it over once it runs (docker).
            await asyncio.to_thread(spawned.delivered)
            yield read, write, spawned.sandbox_id
    finally:
        # Shielded: a cancelled session still removes what is left of its server.
        await asyncio.shield(asyncio.to_thread(spawned.close))


# --- HTTP ----------------------------------------------------------------------------------
def person_bearer(token: str, renew: Callable[[str], str] | None) -> Any:
    """The httpx2 auth of a per-person session: the person's current access token on every
    request; on a 401, one renewal (in a thread: it reads the database and asks the token
    endpoint) and the request once more. ``rejected`` tells the runtime that the server
    refused the person's credential (and not that the server is down)."""
    import httpx2

    class PersonBearer(httpx2.Auth):
        requires_request_body = True

        def __init__(self) -> None:
            self.token = token
            self.rejected = False

        async def async_auth_flow(self, request: httpx2.Request) -> Any:
            used = self.token
            request.headers["Authorization"] = f"Bearer {used}"
            response = yield request
            if response.status_code == 401 and renew is not None:
                fresh = await asyncio.to_thread(renew, used)
                if fresh and fresh != used:
                    self.token = fresh
                    request.headers["Authorization"] = f"Bearer {fresh}"
                    response = yield request
            self.rejected = response.status_code == 401

        def __repr__(self) -> str:  # never the token
            return "PersonBearer()"

    return PersonBearer()


def pinned_http_client(spec: ServerSpec, auth: Any = None) -> Any:
    """An httpx2 client whose every connection goes to an address the SSRF guard approved
    for that very connection (no second DNS lookup to rebind)."""
    import httpcore2
    import httpx2
    from httpcore2._backends.auto import AutoBackend
    from httpx2._config import create_ssl_context

    from tools_app.executors.http.charset import text_codec
    from tools_app.netguard import check_url

    allowed = list(spec.settings.allowed_hosts)
    private = list(spec.settings.private_allowed)

    class PinnedBackend(AutoBackend):
        async def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> Any:
            target = check_url(
                f"http://{host}:{port}/", allowed_hosts=allowed, private_allowed=private
            )
            return await super().connect_tcp(
                target.address, port, timeout, local_address, socket_options
            )

    async def text_charsets_only(response: httpx2.Response) -> None:
        # httpx decodes text with any codec the Content-Type names (bz2_codec included);
        # today only an assert in those codecs stops that. Not a character set: UTF-8.
        charset = response.charset_encoding
        if charset is not None and text_codec(charset) is None:
            response.encoding = "utf-8"

    transport = httpx2.AsyncHTTPTransport(trust_env=False)
    transport._pool = httpcore2.AsyncConnectionPool(
        ssl_context=create_ssl_context(trust_env=False), network_backend=PinnedBackend()
    )
    return httpx2.AsyncClient(
        transport=transport,
        auth=auth,
        headers=dict(spec.headers),
        timeout=httpx2.Timeout(30.0, read=300.0),
        trust_env=False,
        event_hooks={"response": [text_charsets_only]},
    )


@asynccontextmanager
async def http_streams(
    spec: ServerSpec, bearer_auth: Any = None
) -> AsyncIterator[tuple[Any, Any, str]]:
    from tools_app.netguard import check_url

    # Refused here, with the guard's words, before anything is sent.
    check_url(
        spec.url,
        allowed_hosts=spec.settings.allowed_hosts,
        private_allowed=spec.settings.private_allowed,
    )
    if spec.transport == "sse":
        from mcp.client.sse import sse_client

        def factory(
            headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None
        ) -> Any:
            client = pinned_http_client(spec, bearer_auth)
            if headers:
                client.headers.update(headers)
            if timeout is not None:
                client.timeout = timeout
            return client

        sse = sse_client(spec.url, headers=dict(spec.headers), httpx_client_factory=factory)
        async with sse as (read, write):
            yield read, write, "http"
        return
    from mcp.client.streamable_http import streamable_http_client

    async with (
        pinned_http_client(spec, bearer_auth) as client,
        streamable_http_client(spec.url, http_client=client) as streams,
    ):
        yield streams[0], streams[1], "http"
