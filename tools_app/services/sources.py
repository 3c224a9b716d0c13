"""Writes for imported tool sources (MCP servers, OpenAPI documents) and their credentials.
What a server lists after a source is created goes through the review of pinned definitions
(tools_app.services.pins).

A source is created with its group's settings and an audit record in one transaction; its
``revision`` is bumped whenever its functions or its connection change. Each of these writes
moves the tool configuration's token, which makes every process, this one included, register
the source again on its next configuration read (tools_app.imported, tools_app.selectors).
Secrets are kept in ``ToolSource.secrets`` (encrypted at rest) and appear nowhere else: not in
settings, the audit log or a page.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from tools_app.models import ToolFunctionConfig, ToolGroupConfig, ToolSource
from tools_app.registry import GROUPS
from tools_app.services.audit import audit_settings_change
from tools_app.services.pins import functions_named, pinned
from tools_app.services.source_env import env_audit

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


class SourceError(ValueError):
    """A source cannot be created or changed as asked (words for the admin)."""


def check_source_name(name: str, *, kind: str) -> str:
    name = name.strip().lower()
    if not NAME_RE.match(name):
        raise SourceError(
            _(
                "the name must be 1-40 characters: lower-case letters, digits and dashes, "
                "starting with a letter or digit"
            )
        )
    if ToolSource.objects.filter(name=name).exists():
        raise SourceError(_("a tool source named %(name)s already exists") % {"name": f"{name!r}"})
    group = f"{kind}_{name}".replace("-", "_")
    if group in GROUPS and not ToolSource.objects.filter(name=name).exists():
        raise SourceError(
            _("the name %(name)s is taken by a built-in tool group") % {"name": f"{name!r}"}
        )
    return name


# --- secrets -------------------------------------------------------------------------------
def source_secrets(source: ToolSource) -> dict[str, Any]:
    try:
        value = json.loads(source.secrets or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def source_secrets_set(source: ToolSource, values: dict[str, Any]) -> None:
    """Replace the stored secrets (callers merge: blank form fields keep old values)."""
    source.secrets = json.dumps(values) if values else ""


def source_auth(name: str) -> tuple[dict[str, Any], dict[str, str]]:
    """(auth config, secrets) of a source, for activities at run time."""
    source = ToolSource.objects.filter(name=name).first()
    if source is None:
        return {}, {}
    auth = dict((source.config or {}).get("auth") or {})
    return auth, {k: str(v) for k, v in source_secrets(source).items() if isinstance(v, str)}


def secret_summary(source: ToolSource) -> list[str]:
    """What is stored, by name only ("bearer token", "header Authorization")."""
    secrets = source_secrets(source)
    out: list[str] = []
    for key, value in secrets.items():
        if key == "headers" and isinstance(value, dict):
            out.extend(f"header {h}" for h in value)
        elif key == "env" and isinstance(value, dict):
            out.extend(f"env {name}" for name in value)
        elif value:
            out.append(key.replace("_", " "))
    return out


# --- functions -------------------------------------------------------------------------------
def source_state_set(source: ToolSource, state: str, error: str = "") -> None:
    """Up/down/last error: written by whoever talks to the server; never bumps the revision."""
    fields: dict[str, Any] = {"state": state, "state_at": timezone.now()}
    if error or state == ToolSource.State.UP:
        fields["last_error"] = error[:2000]
    ToolSource.objects.filter(pk=source.pk).update(**fields)


# --- create / delete ---------------------------------------------------------------------------
def source_create(
    *,
    kind: str,
    name: str,
    label: str,
    description: str,
    config: dict[str, Any],
    secrets: dict[str, Any],
    settings: dict[str, Any],
    functions: list[dict[str, Any]],
    user: Any,
) -> ToolSource:
    name = check_source_name(name, kind=kind)
    with transaction.atomic():
        source = ToolSource(
            kind=kind,
            name=name,
            label=label.strip() or name,
            description=description,
            config=config,
            created_by=user if getattr(user, "pk", None) else None,
        )
        source_secrets_set(source, secrets)
        # Creating a source accepts what it offers now: each function is pinned as it is
        # (a source made without functions, an MCP server, pins its first listing).
        source.functions = pinned(functions_named(source, functions), kind)
        if functions:
            source.refreshed_at = source.pinned_at = timezone.now()
        source.save()
        ToolGroupConfig.objects.update_or_create(
            name=source.group_name, defaults={"settings": settings, "enabled": True}
        )
        audit_settings_change(
            user=user if getattr(user, "pk", None) else None,
            group=source.group_name,
            before={},
            after={"source": f"{kind}:{name}", **_shown_config(config), **settings},
            states=_env_states(({}, {}), (config, secrets)),
        )
    return source


def _shown_config(config: dict[str, Any]) -> dict[str, Any]:
    # Config holds no secrets by construction; the spec document itself is too long to log;
    # environment variables are shown one by one (_env_states).
    return {k: v for k, v in config.items() if k not in ("document", "env")}


def _env_states(
    before: tuple[dict[str, Any], dict[str, Any]], after: tuple[dict[str, Any], dict[str, Any]]
) -> dict[str, tuple[str | None, str | None]]:
    was, now = env_audit(before, after)
    return {key: (was.get(key), now.get(key)) for key in [*was, *now]}


def source_connection_set(
    source: ToolSource, *, config: dict[str, Any], secrets: dict[str, Any], user: Any
) -> ToolSource:
    """Change how a source is reached (command, URL, auth); processes reconnect."""
    before = _shown_config(source.config or {})
    states = _env_states((source.config or {}, source_secrets(source)), (config, secrets))
    with transaction.atomic():
        source.config = config
        source_secrets_set(source, secrets)
        source.revision = F("revision") + 1  # type: ignore[assignment]
        source.save(update_fields=["config", "secrets", "revision"])
        source.refresh_from_db()
        audit_settings_change(
            user=user,
            group=source.group_name,
            before=before,
            after=_shown_config(config),
            states=states,
        )
    return source


def source_delete(source: ToolSource, *, user: Any) -> None:
    names = [f["name"] for f in source.functions or []]
    with transaction.atomic():
        audit_settings_change(
            user=user if getattr(user, "pk", None) else None,
            group=source.group_name,
            before={"source": f"{source.kind}:{source.name}", "functions": names},
            after={},
        )
        ToolGroupConfig.objects.filter(name=source.group_name).delete()
        ToolFunctionConfig.objects.filter(name__in=names).delete()
        source.delete()


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()
