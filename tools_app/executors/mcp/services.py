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

from tools_app.connections.services import Credential
from tools_app.executors.mcp.launch import ServerSpec, servers_venv
from tools_app.executors.mcp.runtime import McpRuntime, describe, runtime
from tools_app.executors.mcp.settings import STARTUP_TIMEOUT_MAX, McpSettings
from tools_app.models import ToolGroupConfig, ToolSource
from tools_app.runtime import workspace_dir_for
from tools_app.services.pins import source_listing_apply
from tools_app.services.source_env import (
    EnvChange,
    EnvError,
    EnvVar,
    env_apply,
    env_for_process,
    env_vars,
)
from tools_app.services.sources import (
    SourceError,
    host_of,
    source_connection_set,
    source_create,
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
    source: ToolSource,
    *,
    workspace_id: str = "",
    settings: McpSettings | None = None,
    credential: Credential | None = None,
    listing: bool = False,
) -> ServerSpec:
    """How to reach ``source``. A per-person source (``tools_app.connections``) is reached
    with ``credential``, the call's person's, and never with the shared secret. A stdio
    server with per-person variables may be ``listing`` its tools without a person's values
    (an admin who has set none): it starts without them, in a session of its own."""
    from tools_app.connections.services import NONE, PERSON, refresher_for, source_credentials

    settings = settings or _settings(source)
    config = source.config or {}
    transport = str(config.get("transport") or "stdio")
    stdio = transport == "stdio"
    mode = source_credentials(source)
    # A stdio server per person keeps its admin's variables: only the per-person ones are
    # each person's.
    secrets = source_secrets(source) if mode == "shared" or stdio else {}
    headers = {str(k): str(v) for k, v in (secrets.get("headers") or {}).items()}
    if secrets.get("bearer") and not stdio:
        headers["Authorization"] = f"Bearer {secrets['bearer']}"
    person = ""
    if mode not in ("shared", NONE):
        if credential is None and not (stdio and listing):
            # The callers ask credential_for_call first; never shared.
            raise SourceError(
                _("%(name)s needs the person's own connection") % {"name": source.name}
            )
        if credential is not None:
            person = f"u{credential.user_id}-c{credential.connection_id}"
    if stdio and person:
        # One session per person, on a workspace of theirs: the conversation's (a person's
        # own), or their own shared one, never the one other persons' servers write to.
        if settings.workspace == "shared" or not workspace_id:
            workspace_id = f"{shared_workspace_id(source)}-{person.split('-')[0]}"
    elif stdio and mode == PERSON:  # listing: no person's values, a workspace of its own
        workspace_id = f"{shared_workspace_id(source)}-listing"
    elif stdio and (settings.workspace == "shared" or not workspace_id):
        workspace_id = shared_workspace_id(source)
    person_env = credential.env if credential is not None else {}
    plain_env, secret_env = env_for_process(config, secrets, person_env) if stdio else ({}, {})
    shared_env = (
        tuple((k, v) for k, v in secret_env.items() if k not in person_env) if stdio else ()
    )
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
        env=tuple(plain_env.items()),
        secret_env=shared_env,
        person_env=tuple((k, v) for k, v in secret_env.items() if k in person_env),
        person=person,
        bearer=credential.access_token if credential is not None else "",
        renew=refresher_for(credential.connection_id) if credential is not None else None,
    )


def _function(tool: Any) -> dict[str, Any]:
    description = str(getattr(tool, "description", "") or "").strip()
    title = getattr(tool, "title", None)
    if title and title not in description:
        description = f"{title}. {description}".strip()
    function = {
        "name": tool.name,
        "remote": tool.name,
        "description": description or tool.name,
        "input_schema": dict(getattr(tool, "input_schema", None) or {"type": "object"}),
    }
    # ToolAnnotations (read-only, destructive… hints): part of what is pinned.
    annotations = getattr(tool, "annotations", None)
    if annotations is not None:
        dumped = (
            annotations.model_dump(mode="json", exclude_none=True, by_alias=True)
            if hasattr(annotations, "model_dump")
            else dict(annotations)
        )
        if dumped:
            function["annotations"] = dumped
    return function


def mcp_runtime() -> McpRuntime:
    """This process's MCP sessions, reporting server state and tool-list changes here."""
    rt = runtime()
    rt.on_state = mcp_state_record
    rt.on_list_changed = mcp_list_changed
    return rt


def mcp_discover(source: ToolSource, *, user_id: int | None = None) -> list[dict[str, Any]]:
    """tools/list on a session of this process (started if needed). A per-person server is
    listed as ``user_id`` (the admin who asked), with their own connection."""
    from tools_app.connections.services import ConnectionNeeded, credential_for_call

    try:
        credential = credential_for_call(source, user_id=user_id)
    except ConnectionNeeded:
        if _is_stdio(source):  # listed without the per-person variables
            spec = server_spec(source, listing=True)
            return _listed(spec, source)
        raise SourceError(
            _(
                "%(name)s authenticates each person: connect your own account on the "
                "Connections page, then refresh to list its tools"
            )
            % {"name": source.label or source.name}
        ) from None
    return _listed(server_spec(source, credential=credential), source)


def _is_stdio(source: ToolSource) -> bool:
    return (source.config or {}).get("transport", "stdio") == "stdio"


def _listed(spec: ServerSpec, source: ToolSource) -> list[dict[str, Any]]:
    rt = mcp_runtime()
    rt.forget_backoff(source.name)  # an admin asking again deserves a real attempt
    tools = rt.run(
        lambda: rt.list_tools(spec),
        timeout=float(spec.settings.startup_timeout_seconds + LIST_SECONDS),
    )
    return [_function(t) for t in tools]


def mcp_refresh(source: ToolSource, *, user_id: int | None = None) -> list[str]:
    """Discover the server's tools now (a per-person server as ``user_id``); what differs
    from the pinned definitions is held for review (tools_app.services.pins). The names of
    the functions offered."""
    from tools_app.errors import ToolError

    source_state_set(source, ToolSource.State.REFRESHING)
    try:
        functions = mcp_discover(source, user_id=user_id)
    except SourceError as exc:
        source_state_set(source, ToolSource.State.DOWN, str(exc))
        raise
    except ToolError as exc:
        source_state_set(source, ToolSource.State.DOWN, exc.message)
        raise SourceError(exc.message) from None
    except Exception as exc:
        source_state_set(source, ToolSource.State.DOWN, describe(exc))
        raise SourceError(describe(exc)) from None
    source_listing_apply(source, functions, origin="refresh")
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
    """The server said its tools changed: list them again. What differs from the pinned
    definitions waits for an admin's review; every process follows what is stored. A
    per-person session's notice ("name@u7-c3") is listed as that person."""
    name, _at, person = name.partition("@")
    user_id = int(person[1:].split("-")[0]) if person.startswith("u") else None
    source = ToolSource.objects.filter(name=name, kind=ToolSource.Kind.MCP).first()
    if source is not None:
        logger.info("MCP server %s: tools changed, listing them again", name)
        functions = mcp_discover(source, user_id=user_id)
        source_listing_apply(source, functions, origin="list_changed")


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
    env: EnvChange | None = None,
    user: Any = None,
) -> ToolSource:
    """Register a server (its tools are discovered by ``mcp_refresh``); ``env``: a stdio
    server's environment variables (secret values stored encrypted)."""
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
    if env:
        if not command:
            raise SourceError(_("environment variables are for stdio servers"))
        config, secrets = mcp_env_applied(config, secrets, env)
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


def mcp_env_applied(
    config: dict[str, Any], secrets: dict[str, Any], change: EnvChange
) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        return env_apply(config, secrets, change)
    except EnvError as exc:
        raise SourceError(str(exc)) from None


def mcp_server_env_set(source: ToolSource, *, change: EnvChange, user: Any) -> ToolSource:
    """Set, replace or remove a stdio server's environment variables; its sessions restart
    (the values are part of the connection's digest), the audit names what changed."""
    config = dict(source.config or {})
    if config.get("transport", "stdio") != "stdio":
        raise SourceError(_("environment variables are for stdio servers"))
    config, secrets = mcp_env_applied(config, source_secrets(source), change)
    return source_connection_set(source, config=config, secrets=secrets, user=user)


def mcp_server_env(source: ToolSource) -> list[EnvVar]:
    """A server's variables as they may be shown (secret ones: set or not, never the value)."""
    return env_vars(source.config or {}, source_secrets(source))


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
