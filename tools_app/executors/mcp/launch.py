"""How a session with an MCP server is opened: the stdio command line inside the sandbox, or
an HTTP client pinned to addresses the SSRF guard checked.

stdio servers are Python (or any) programs installed into ``MCP_SERVERS_VENV`` (a virtualenv
made with the system Python, ``manage.py mcp_servers install PACKAGE``). The venv is mounted
read-only at its own path inside the sandbox, so its console scripts' ``#!`` lines work, and
its ``bin`` comes first on the server's PATH. Everything else is the sandbox as the shell tool
gets it: Docker (non-root, no capabilities, read-only root, memory/pids/CPU limits, network
off unless the group allows it) or bubblewrap; ``none`` only when an admin sets it.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings as django_settings

from tools_app.executors.mcp.settings import McpSettings
from tools_app.sandbox.base import DEFAULT_PATH, WORKSPACE, ExecRequest, SandboxError

LABEL = "controlcenter.mcp"


@dataclass(frozen=True)
class ServerSpec:
    """Everything needed to open a session, read from the database in the calling thread."""

    name: str
    revision: int
    transport: str  # stdio | http | sse
    command: tuple[str, ...] = ()
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    settings: McpSettings = field(default_factory=McpSettings)
    workspace_id: str = ""
    workspace_dir: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        """A session serves calls with the same connection: a changed command, URL, header or
        setting opens a new one (the old one is closed); new tools alone do not."""
        return (self.name, self.digest, self.workspace_id if self.transport == "stdio" else "")

    @property
    def digest(self) -> str:
        parts = json.dumps(
            [self.transport, self.command, self.url, self.headers, self.settings.model_dump()],
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(parts.encode()).hexdigest()[:16]


def servers_venv() -> Path:
    # Resolved at use: a symlinked venv is mounted at its real path, where its #! lines point.
    return Path(django_settings.MCP_SERVERS_VENV).resolve()


# --- stdio ---------------------------------------------------------------------------------
def _backend_name(settings: McpSettings) -> str:
    from tools_app.sandbox import get_sandbox

    backend = None if settings.sandbox_backend == "auto" else settings.sandbox_backend
    return get_sandbox(backend).name


def _server_env(venv: Path) -> dict[str, str]:
    return {
        "PATH": f"{venv}/bin:{DEFAULT_PATH}",
        "HOME": WORKSPACE,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }


_started = itertools.count(1)


def _container_name(spec: ServerSpec) -> str:
    digest = hashlib.sha256(f"{spec.name}:{spec.workspace_id}".encode()).hexdigest()[:8]
    slug = re.sub(r"[^a-zA-Z0-9_.-]", "-", spec.name)[:30]
    return f"cc-mcp-{slug}-{os.getpid()}-{digest}-{next(_started)}"


def docker_argv(spec: ServerSpec, workspace: Path) -> list[str]:
    from tools_app.sandbox import get_sandbox
    from tools_app.sandbox.docker_containers import NETWORK, NOFILE

    sandbox: Any = get_sandbox("docker")
    pool = sandbox.pool
    docker = shutil.which("docker")
    if docker is None:
        raise SandboxError(
            "stdio MCP servers in the docker sandbox need the docker command line on the worker "
            "host; install it or use the bubblewrap backend"
        )
    venv = servers_venv()
    argv = [
        docker,
        "run",
        "-i",
        "--rm",
        "--name",
        _container_name(spec),
        "--label",
        f"{LABEL}={pool.namespace}",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--read-only",
        "--tmpfs",
        f"/tmp:rw,nosuid,nodev,size={pool.tmpfs_size},mode=1777",  # noqa: S108
        "--memory",
        str(pool.memory),
        "--memory-swap",
        str(pool.memory),
        "--pids-limit",
        str(pool.pids),
        "--cpus",
        str(pool.cpus),
        "--ulimit",
        f"nofile={NOFILE}:{NOFILE}",
        "--user",
        f"{sandbox.uid}:{sandbox.uid}",
        "--network",
        NETWORK if spec.settings.network else "none",
        "--init",
        "--mount",
        f"type=bind,src={workspace},dst={WORKSPACE}",
        "--workdir",
        WORKSPACE,
        "--hostname",
        "sandbox",
    ]
    if venv.is_dir():
        argv += ["--mount", f"type=bind,src={venv},dst={venv},readonly"]
    for key, value in _server_env(venv).items():
        argv += ["-e", f"{key}={value}"]
    return [*argv, sandbox.image, *spec.command]


def bwrap_argv(spec: ServerSpec, workspace: Path, etc_dir: Path) -> list[str]:
    from tools_app.sandbox import get_sandbox

    if spec.settings.network:
        raise SandboxError(
            "the bubblewrap sandbox cannot give an MCP server network access without exposing "
            "the host's loopback services; use the docker backend or switch network off"
        )
    sandbox: Any = get_sandbox("bubblewrap")
    venv = servers_venv()
    files = sandbox._etc_files(False)
    for name, content in files.items():
        (etc_dir / name).write_bytes(content)
        (etc_dir / name).chmod(0o644)
    etc_dir.chmod(0o755)
    request = ExecRequest(
        argv=list(spec.command),
        env=_server_env(venv),
        timeout=7 * 24 * 3600.0,  # the CPU-seconds backstop of a long-lived process
    )
    return sandbox.command(
        request,
        workspace=workspace,
        data_fds={},
        data_files={name: etc_dir / name for name in files},
        ro_binds=[venv] if venv.is_dir() else [],
    )


def stdio_argv(spec: ServerSpec, etc_dir: Path) -> tuple[str, list[str], str]:
    """(backend, argv, sandbox id prefix) for the server of ``spec``."""
    from tools_app.sandbox.base import prepare_workspace

    backend = _backend_name(spec.settings)
    workspace = Path(spec.workspace_dir)
    if backend == "docker":
        from tools_app.sandbox import get_sandbox

        sandbox: Any = get_sandbox("docker")
        ws = prepare_workspace(workspace, sandbox.uid)
        argv = docker_argv(spec, ws)
        return backend, argv, f"docker:{argv[argv.index('--name') + 1]}"
    if backend == "bubblewrap":
        from tools_app.sandbox import get_sandbox

        sandbox = get_sandbox("bubblewrap")
        ws = prepare_workspace(workspace, sandbox.uid)
        return backend, bwrap_argv(spec, ws, etc_dir), "bwrap"
    workspace.mkdir(parents=True, exist_ok=True)
    return backend, list(spec.command), "none"


@asynccontextmanager
async def stdio_streams(spec: ServerSpec, errlog: TextIO) -> AsyncIterator[tuple[Any, Any, str]]:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    etc_dir = Path(tempfile.mkdtemp(prefix="cc-mcp-etc-"))
    try:
        backend, argv, sandbox_id = stdio_argv(spec, etc_dir)
        env = {"PATH": os.environ.get("PATH", DEFAULT_PATH), "LANG": "C.UTF-8"}
        if backend == "none":
            env = {**_server_env(servers_venv()), "HOME": spec.workspace_dir}
        for key in ("DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY"):
            if key in os.environ and backend == "docker":
                env[key] = os.environ[key]
        params = StdioServerParameters(
            command=argv[0],
            args=argv[1:],
            env=env,
            cwd=spec.workspace_dir if backend == "none" else None,
        )
        async with stdio_client(params, errlog=errlog) as (read, write):
            yield read, write, sandbox_id
    finally:
        shutil.rmtree(etc_dir, ignore_errors=True)


# --- HTTP ----------------------------------------------------------------------------------
def pinned_http_client(spec: ServerSpec) -> Any:
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
        headers=dict(spec.headers),
        timeout=httpx2.Timeout(30.0, read=300.0),
        trust_env=False,
        event_hooks={"response": [text_charsets_only]},
    )


@asynccontextmanager
async def http_streams(spec: ServerSpec) -> AsyncIterator[tuple[Any, Any, str]]:
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
            client = pinned_http_client(spec)
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
        pinned_http_client(spec) as client,
        streamable_http_client(spec.url, http_client=client) as streams,
    ):
        yield streams[0], streams[1], "http"
