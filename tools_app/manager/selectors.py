"""Reads for the Tools Manager: one row per group (state, sandbox, activity, last test) and the
enabled tools' schemas (the API endpoint and ``export_tool_schemas``)."""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import Group
from django.db.models import Count, Q
from django.utils import timezone

from tools_app import selectors
from tools_app.i18n import text_localized
from tools_app.manager.limits import key_limits
from tools_app.models import ToolCall, ToolFunctionConfig, ToolGrant, ToolGroupConfig, ToolSource
from tools_app.registry import BaseTool, GroupSettings, ToolGroup
from tools_app.services.grants import EVERYONE, group_grants

logger = logging.getLogger(__name__)

FAILURE_STATUSES = (ToolCall.Status.FAILED, ToolCall.Status.DENIED)
SANDBOX_HEALTH_TTL = 30.0  # seconds; health probes start processes or talk to Docker


@dataclass(frozen=True)
class SandboxStatus:
    """What the Sandbox column shows."""

    sandboxed: bool
    backend: str = ""  # configured: auto, docker, bubblewrap, none
    resolved: str = ""  # for auto: what it picks
    state: str = "na"  # ok | bad | unknown | unsafe | na
    detail: str = ""


@dataclass
class FunctionRow:
    """Templates read ``name`` and ``description``, never ``tool``: the template engine calls
    callables, and a tool class called with no arguments is a validation error."""

    tool: type[BaseTool]
    config: ToolFunctionConfig

    @property
    def name(self) -> str:
        return self.tool.tool_name

    @property
    def description(self) -> str:
        return self.tool.description()

    @property
    def held(self) -> str:
        """Why binding refuses an imported function whose server changed it ("" if not)."""
        return str(getattr(self.tool, "review_hold", "") or "")

    @property
    def approvers(self) -> list[str]:
        """The approver groups' names (approver mode), from the prefetched rows."""
        if self.config.pk is None:
            return []
        return sorted(g.name for g in self.config.approver_groups.all())


@dataclass
class GroupRow:
    group: ToolGroup
    enabled: bool
    settings: GroupSettings
    sandbox: SandboxStatus
    calls_24h: int = 0
    failed_24h: int = 0
    denied_24h: int = 0
    last_test: ToolCall | None = None
    functions: list[FunctionRow] = field(default_factory=list)
    listing: list[dict[str, str]] = field(default_factory=list)
    limits: list[dict[str, str]] = field(default_factory=list)
    docs_page: str = ""  # under docs/: "tools/<group>.md", its page for people and the model
    source: ToolSource | None = None  # imported groups: the MCP server or OpenAPI document
    # The groups of people granted the whole tool group (or source); functions granted one
    # by one are counted apart. Neither: only admins may use it ("not granted yet").
    granted_to: list[str] = field(default_factory=list)
    functions_granted: int = 0

    @property
    def not_granted(self) -> bool:
        return not self.granted_to and not self.functions_granted

    @property
    def failures_24h(self) -> int:
        return self.failed_24h + self.denied_24h


# --- sandbox health ------------------------------------------------------------------------
_health_lock = threading.Lock()
_health_cache: tuple[float, dict[str, tuple[bool, str]], tuple[str, str] | None] | None = None


def _probe() -> tuple[dict[str, tuple[bool, str]], tuple[str, str] | None]:
    """Every backend's health and what ``auto`` resolves to (name, error)."""
    # Imported lazily: the sandbox package pulls in optional SDKs (docker).
    from tools_app.sandbox import selection

    backends = selection.available_backends()
    try:
        # "auto" in a group's settings means the process default (SANDBOX_BACKEND), exactly
        # as executors resolve it (get_sandbox(None)).
        auto: tuple[str, str] | None = (selection.get_sandbox(None).name, "")
    except Exception as exc:
        auto = ("", str(exc))
    return backends, auto


def sandbox_health(*, refresh: bool = False) -> tuple[dict[str, tuple[bool, str]], Any]:
    """Cached for a short while: the page should not start a probe container per render."""
    global _health_cache
    with _health_lock:
        now = time.monotonic()
        if refresh or _health_cache is None or now - _health_cache[0] > SANDBOX_HEALTH_TTL:
            try:
                backends, auto = _probe()
            except Exception as exc:  # the sandbox module is missing or broken
                logger.warning("sandbox health check failed: %s", exc)
                backends, auto = {}, None
            _health_cache = (now, backends, auto)
        return _health_cache[1], _health_cache[2]


def sandbox_status(group: ToolGroup, settings: GroupSettings) -> SandboxStatus:
    if not group.sandboxed:
        if group.status is None:
            return SandboxStatus(sandboxed=False)
        try:
            state, label, detail = group.status(settings)
        except Exception as exc:  # a status probe must never break the page
            state, label, detail = "unknown", "status unknown", str(exc)
        return SandboxStatus(sandboxed=False, backend=label, state=state, detail=detail)
    backend = str(getattr(settings, "sandbox_backend", "auto") or "auto")
    if backend == "none":
        return SandboxStatus(
            sandboxed=True,
            backend="none",
            state="unsafe",
            detail="no sandbox: commands run directly on the worker host",
        )
    backends, auto = sandbox_health()
    if backend == "auto":
        if auto is None:
            return SandboxStatus(True, "auto", state="unknown", detail="health unknown")
        name, error = auto
        if not name:
            return SandboxStatus(True, "auto", state="bad", detail=error)
        ok, detail = backends.get(name, (True, ""))
        return SandboxStatus(True, "auto", name, "ok" if ok else "bad", detail)
    if backend not in backends:
        return SandboxStatus(True, backend, state="unknown", detail="health unknown")
    ok, detail = backends[backend]
    return SandboxStatus(True, backend, state="ok" if ok else "bad", detail=detail)


# --- rows ----------------------------------------------------------------------------------
def _activity_24h() -> dict[str, dict[str, int]]:
    since = timezone.now() - timedelta(hours=24)
    rows = (
        ToolCall.objects.filter(created_at__gte=since, imported=False)
        .values("group")
        .annotate(
            calls=Count("id"),
            failed=Count("id", filter=Q(status=ToolCall.Status.FAILED)),
            denied=Count("id", filter=Q(status=ToolCall.Status.DENIED)),
        )
    )
    return {
        row["group"]: {"calls": row["calls"], "failed": row["failed"], "denied": row["denied"]}
        for row in rows
    }


def _last_test(group: str) -> ToolCall | None:
    return (
        ToolCall.objects.filter(group=group, source=ToolCall.Source.TEST)
        .order_by("-created_at", "-id")
        .first()
    )


def _listing(group: ToolGroup, settings: GroupSettings) -> list[dict[str, str]]:
    if group.listing is None:
        return []
    try:
        return group.listing(settings)
    except Exception as exc:  # a listing must never break the page
        logger.warning("listing of tool group %s failed: %s", group.name, exc)
        return [{"name": "", "description": f"could not be listed: {exc}", "note": "problem"}]


def group_rows(names: list[str] | None = None) -> list[GroupRow]:
    """The manager's rows, ordered like the prompts (group order, then name)."""
    groups = selectors.registered_groups()
    if names is not None:
        groups = [g for g in groups if g.name in names]
    enabled = dict(ToolGroupConfig.objects.values_list("name", "enabled"))
    function_configs = {
        c.name: c for c in ToolFunctionConfig.objects.prefetch_related("approver_groups")
    }
    activity = _activity_24h()
    sources = {s.group_name: s for s in ToolSource.objects.all()}
    granted = _granted_to()
    granted_functions = set(
        ToolGrant.objects.filter(kind=ToolGrant.Kind.FUNCTION).values_list("name", flat=True)
    )
    rows = []
    for group in groups:
        source = sources.get(group.name)
        key = ("source", source.name) if source is not None else ("group", group.name)
        settings = selectors.group_settings(group.name)
        counts = activity.get(group.name, {})
        rows.append(
            GroupRow(
                group=group,
                enabled=enabled.get(group.name, True),
                settings=settings,
                sandbox=sandbox_status(group, settings),
                calls_24h=counts.get("calls", 0),
                failed_24h=counts.get("failed", 0),
                denied_24h=counts.get("denied", 0),
                last_test=_last_test(group.name),
                source=source,
                granted_to=granted.get(key, []),
                functions_granted=sum(t.tool_name in granted_functions for t in group.tools),
                functions=[
                    FunctionRow(
                        tool,
                        function_configs.get(tool.tool_name)
                        or ToolFunctionConfig(name=tool.tool_name),
                    )
                    for tool in sorted(group.tools, key=lambda t: t.tool_name)
                ],
                listing=_listing(group, settings),
                limits=key_limits(group, settings),
                docs_page=group_docs_page(group.name, source.kind if source else ""),
            )
        )
    return rows


def group_docs_page(name: str, source_kind: str = "") -> str:
    """The group's page in ``docs/tools/`` (an imported group: its kind's page), or ""."""
    from django.conf import settings as django_settings

    page = f"{source_kind or name}.md"
    if not re.fullmatch(r"[a-z0-9_]+\.md", page):
        return ""
    return f"tools/{page}" if (django_settings.PROJECT_DOCS_DIR / "tools" / page).is_file() else ""


def _granted_to() -> dict[tuple[str, str], list[str]]:
    """(kind, name) of a tool group or source → the people groups granted it, Everyone first."""
    out: dict[tuple[str, str], list[str]] = {}
    rows = ToolGrant.objects.exclude(kind=ToolGrant.Kind.FUNCTION).values_list(
        "kind", "name", "group__name"
    )
    for kind, name, group in rows.order_by("group__name"):
        out.setdefault((kind, name), []).append(group)
    for names in out.values():
        names.sort(key=lambda n: (n != EVERYONE, n))
    return out


def everyone_grants_summary() -> dict[str, list[str]]:
    """What Everyone may use, for the note at the top of the Tools Manager: tool group labels,
    single functions and sources."""
    everyone = Group.objects.filter(name=EVERYONE).first()
    if everyone is None:
        return {"group": [], "function": [], "source": []}
    given = group_grants(everyone)
    labels = {g.name: text_localized(g.label) for g in selectors.registered_groups()}
    given["group"] = [labels.get(n, n) for n in given["group"]]
    return given


def group_row(name: str) -> GroupRow:
    return group_rows([name])[0]


# --- schemas -------------------------------------------------------------------------------
def enabled_tool_schemas(*, strict: bool = True) -> dict[str, Any]:
    """``{"tools": [...]}`` in OpenAI format: what the model is offered right now."""
    return {"tools": [tool.openai_schema(strict=strict) for tool in selectors.enabled_tools()]}
