"""Registering MCP servers, discovering their tools, recording their state."""

from __future__ import annotations

import logging
import shlex
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _

from tools_app.executors.mcp.launch import ServerSpec, servers_venv
from tools_app.executors.mcp.runtime import McpRuntime, describe, runtime
from tools_app.executors.mcp.settings import STARTUP_TIMEOUT_MAX, McpSettings
from tools_app.models import ToolGroupConfig, ToolSource
from tools_app.runtime import workspace_dir_for
from tools_app.services.sources import (
    SourceError,
    host_of,
    source_create,
    source_functions_set,
    source_secrets,
    source_state_set,
)

logger = logging.getLogger(__name__)

TRANSPORTS = ("stdio", "http", "sse")

LIST_SECONDS = 30  # what tools/list gets on top of the server's startup timeout
# The longest a refresh can run (the largest startup timeout an admin may set, plus
# LIST_SECONDS), plus a margin: a "refreshing" state older than this was left by a refresh
# that died.
REFRESH_LONGEST = timedelta(seconds=STARTUP_TIMEOUT_MAX + LIST_SECONDS + 30)


def _settings(source: ToolSource) -> McpSettings:
    # Read straight from the database: this process may not have registered the group yet
    # (a worker refreshing a server registered a moment ago by the web process).
    return mcp_group_settings(source)


def shared_workspace_id(source: ToolSource | str) -> str:
    name = source if isinstance(source, str) else source.name
    return f"mcp-{name}"


def server_spec(
    source: ToolSource, *, workspace_id: str = "", settings: McpSettings | None = None
) -> ServerSpec:
    settings = settings or _settings(source)
    config = source.config or {}
    transport = str(config.get("transport") or "stdio")
    secrets = source_secrets(source)
    headers = {str(k): str(v) for k, v in (secrets.get("headers") or {}).items()}
    if secrets.get("bearer"):
        headers["Authorization"] = f"Bearer {secrets['bearer']}"
    if transport == "stdio" and (settings.workspace == "shared" or not workspace_id):
        workspace_id = shared_workspace_id(source)
    return ServerSpec(
        name=source.name,
        revision=source.revision,
        transport=transport,
        command=tuple(config.get("command") or ()),
        url=str(config.get("url") or ""),
        headers=tuple(sorted(headers.items())),
        settings=settings,
        workspace_id=workspace_id if transport == "stdio" else "",
        workspace_dir=str(workspace_dir_for(workspace_id)) if transport == "stdio" else "",
    )


def _function(tool: Any) -> dict[str, Any]:
    description = str(getattr(tool, "description", "") or "").strip()
    title = getattr(tool, "title", None)
    if title and title not in description:
        description = f"{title}. {description}".strip()
    return {
        "name": tool.name,
        "remote": tool.name,
        "description": description or tool.name,
        "input_schema": dict(getattr(tool, "input_schema", None) or {"type": "object"}),
    }


def mcp_runtime() -> McpRuntime:
    """This process's MCP sessions, reporting server state and tool-list changes here."""
    rt = runtime()
    rt.on_state = mcp_state_record
    rt.on_list_changed = mcp_list_changed
    return rt


def mcp_discover(source: ToolSource) -> list[dict[str, Any]]:
    """tools/list on a session of this process (started if needed)."""
    spec = server_spec(source)
    rt = mcp_runtime()
    rt.forget_backoff(source.name)  # an admin asking again deserves a real attempt
    tools = rt.run(
        lambda: rt.list_tools(spec),
        timeout=float(spec.settings.startup_timeout_seconds + LIST_SECONDS),
    )
    return [_function(t) for t in tools]


def mcp_refresh(source: ToolSource) -> list[str]:
    """Discover the server's tools now and store them; the names of our functions."""
    from tools_app.errors import ToolError

    source_state_set(source, ToolSource.State.REFRESHING)
    try:
        functions = mcp_discover(source)
    except ToolError as exc:
        source_state_set(source, ToolSource.State.DOWN, exc.message)
        raise SourceError(exc.message) from None
    except Exception as exc:
        source_state_set(source, ToolSource.State.DOWN, describe(exc))
        raise SourceError(describe(exc)) from None
    source_functions_set(source, functions)
    source.refresh_from_db()
    source_state_set(source, ToolSource.State.UP)
    return [f["name"] for f in source.functions]


def mcp_state_record(name: str, state: str, error: str) -> None:
    """A session's report (connected, lost). A running refresh owns the state until it ends:
    the Tools Manager polls while it reads "refreshing", and an "up" written when the session
    connects, before the tools are stored, would stop that poll on a group with no tools."""
    source = (
        ToolSource.objects.filter(name=name, kind=ToolSource.Kind.MCP)
        .exclude(
            state=ToolSource.State.REFRESHING,
            state_at__gt=timezone.now() - REFRESH_LONGEST,
        )
        .first()
    )
    if source is not None:
        source_state_set(source, state, error)


def mcp_list_changed(name: str) -> None:
    """The server said its tools changed: list them again (every process follows)."""
    source = ToolSource.objects.filter(name=name, kind=ToolSource.Kind.MCP).first()
    if source is not None:
        logger.info("MCP server %s: tools changed, refreshing", name)
        functions = mcp_discover(source)
        source_functions_set(source, functions)


def parse_command(command: str | list[str]) -> list[str]:
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv or not argv[0].strip():
        raise SourceError(_("a stdio server needs a command, e.g. mcp-server-time"))
    if any("\0" in a for a in argv):
        raise SourceError(_("the command must not contain NUL bytes"))
    return argv


def parse_headers(lines: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in lines:
        line = line.strip()
        if not line:
            continue
        sep = "=" if "=" in line and (":" not in line or line.index("=") < line.index(":")) else ":"
        key, _sep, value = line.partition(sep)
        key, value = key.strip(), value.strip()
        if not key or not all(c.isalnum() or c in "-_" for c in key):
            raise SourceError(
                _("not a header name: %(key)s (write Name=value or Name: value)")
                % {"key": f"{key!r}"}
            )
        if "\r" in value or "\n" in value:
            raise SourceError(_("header %(key)s must be one line") % {"key": key})
        headers[key] = value
    return headers


def mcp_server_add(
    *,
    name: str,
    command: str | list[str] | None = None,
    url: str = "",
    transport: str = "",
    headers: dict[str, str] | None = None,
    bearer: str = "",
    label: str = "",
    allow_private: bool = False,
    settings: dict[str, Any] | None = None,
    user: Any = None,
) -> ToolSource:
    """Register a server (its tools are discovered by ``mcp_refresh``)."""
    if bool(command) == bool(url):
        raise SourceError(_("give either a command (stdio server) or a URL (HTTP server)"))
    transport = transport or ("stdio" if command else "http")
    if transport not in TRANSPORTS:
        raise SourceError(_("transport must be one of %(join)s") % {"join": ", ".join(TRANSPORTS)})
    values: dict[str, Any] = dict(settings or {})
    config: dict[str, Any] = {"transport": transport}
    if command:
        config["command"] = parse_command(command)
        if headers or bearer:
            raise SourceError(_("headers and tokens are for HTTP servers"))
    else:
        if not url.startswith(("http://", "https://")):
            raise SourceError(_("the URL must start with http:// or https://"))
        config["url"] = url
        host = host_of(url)
        values.setdefault("allowed_hosts", [host])
        if allow_private:
            values.setdefault("private_allowed", [host])
        from tools_app.errors import NetworkError, PolicyDenied
        from tools_app.netguard import check_url

        try:
            check_url(
                url,
                allowed_hosts=values.get("allowed_hosts") or [],
                private_allowed=values.get("private_allowed") or [],
            )
        except PolicyDenied as exc:
            raise SourceError(_("%(reason)s") % {"reason": exc.reason}) from None
        except NetworkError as exc:
            raise SourceError(exc.message) from None
    validated = McpSettings.model_validate(values).model_dump(mode="json")
    secrets: dict[str, Any] = {}
    if headers:
        secrets["headers"] = headers
    if bearer:
        secrets["bearer"] = bearer
    where = " ".join(config.get("command", [])) or url
    return source_create(
        kind=ToolSource.Kind.MCP,
        name=name,
        label=label,
        description=f"Tools of the MCP server {name} ({transport}: {where}).",
        config=config,
        secrets=secrets,
        settings=validated,
        functions=[],
        user=user,
    )


def mcp_install(packages: list[str], *, venv: Path | None = None) -> str:
    """pip install ``packages`` into the stdio servers' venv (made with the system Python,
    whose interpreter the sandbox image has at the same path)."""
    venv = venv or servers_venv()
    python = venv / "bin" / "python"
    if not python.exists():
        base = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
        subprocess.run([base, "-m", "venv", str(venv)], check=True, capture_output=True)
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", *packages],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SourceError(
            _("pip install failed: %(strip)s") % {"strip": done.stderr.strip()[-2000:]}
        )
    return done.stdout


def mcp_group_settings(source: ToolSource) -> McpSettings:
    from pydantic import ValidationError

    config = ToolGroupConfig.objects.filter(name=source.group_name).first()
    stored = dict(config.settings) if config else {}
    known = {k: v for k, v in stored.items() if k in McpSettings.model_fields}
    try:
        return McpSettings.model_validate(known)
    except ValidationError:
        logger.warning("stored settings of %s are invalid; using defaults", source.group_name)
        return McpSettings()
