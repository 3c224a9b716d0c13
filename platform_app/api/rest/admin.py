"""For admins: the tools and their settings (scope ``tools:admin``) and the audit log (scope
``audit``). Both scopes are refused unless the token's owner is staff now.

Changes go through the Tools Manager's services (``tools_app.services.settings``): validated
by the group's own settings model and written to the audit log with their before and after.
Secret settings stay write-only: they read "stored" or "not stored".
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone
from ninja import Query, Router
from pydantic import ValidationError

from platform_app.api.errors import ApiError
from platform_app.api.rest.base import BY_ID_DESC, errors, scope, user_of
from platform_app.api.rest.schemas import (
    AuditPage,
    AuditRecordOut,
    FunctionOut,
    FunctionPatch,
    ToolGroupDetail,
    ToolGroupOut,
    ToolGroupPatch,
)
from tools_app import selectors
from tools_app.manager import audit_selectors
from tools_app.models import ToolGroupConfig
from tools_app.registry import ToolGroup, secret_fields
from tools_app.services.settings import (
    SettingsError,
    function_approval_set,
    function_switch_set,
    group_enabled_set,
    group_settings_save,
)

router = Router(tags=["admin"])


def _group_out(group: ToolGroup) -> dict[str, Any]:
    snapshot = selectors.config_snapshot()
    return {
        "name": group.name,
        "label": group.label,
        "description": group.description,
        "enabled": snapshot.group_enabled(group.name),
        "functions": [
            FunctionOut(
                name=tool.tool_name,
                enabled=snapshot.function(tool.tool_name).enabled,
                approval_mode=snapshot.function(tool.tool_name).approval_mode,
                reasoning_for_call=snapshot.function(tool.tool_name).reasoning_for_call,
            )
            for tool in sorted(group.tools, key=lambda t: t.tool_name)
        ],
    }


def _group(name: str) -> ToolGroup:
    group = selectors.group_named(name)
    if group is None:
        raise ApiError(404, f"no tool group named {name!r}", code="not_found")
    return group


def _settings_shown(group: ToolGroup) -> dict[str, Any]:
    secrets = secret_fields(group.settings_model)
    shown = selectors.group_settings(group.name).model_dump(mode="json", exclude=set(secrets))
    stored = ToolGroupConfig.objects.filter(name=group.name).values_list("secrets", flat=True)
    have = selectors.group_secrets(next(iter(stored), None) or "") if secrets else {}
    shown.update({name: "stored" if name in have else "not stored" for name in secrets})
    return shown


@router.get("/tools", response={200: list[ToolGroupOut], **errors()}, auth=scope("tools:admin"))
def tools_list(request: HttpRequest) -> Any:
    """Every tool group with its functions: on or off, and their approval mode."""
    groups = sorted(selectors.registered_groups(), key=lambda g: (g.order, g.name))
    return [_group_out(group) for group in groups]


@router.get(
    "/tools/{group}", response={200: ToolGroupDetail, **errors(404)}, auth=scope("tools:admin")
)
def tool_group_read(request: HttpRequest, group: str) -> Any:
    found = _group(group)
    return {**_group_out(found), "settings": _settings_shown(found)}


@router.patch(
    "/tools/{group}",
    response={200: ToolGroupDetail, **errors(404)},
    auth=scope("tools:admin"),
)
def tool_group_change(request: HttpRequest, group: str, body: ToolGroupPatch) -> Any:
    """Switch a group on or off and change some of its settings (the others keep their
    values; a secret given here replaces the stored one). Audited like the Tools Manager."""
    found = _group(group)
    user = user_of(request)
    if body.settings is not None:
        secrets = set(secret_fields(found.settings_model))
        current = selectors.group_settings(found.name).model_dump(mode="json", exclude=secrets)
        try:
            group_settings_save(user=user, group=found.name, values={**current, **body.settings})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "settings"
            message = f"{where}: {first.get('msg', 'invalid')}"
            raise ApiError(422, message, code="invalid_settings", param="settings") from None
    if body.enabled is not None:
        group_enabled_set(user=user, group=found.name, enabled=body.enabled)
    return {**_group_out(found), "settings": _settings_shown(found)}


@router.patch(
    "/tools/functions/{tool}",
    response={200: FunctionOut, **errors(404)},
    auth=scope("tools:admin"),
)
def tool_function_change(request: HttpRequest, tool: str, body: FunctionPatch) -> Any:
    """Switch a function on or off, ask it to say why, or set who approves its calls (the
    approver groups themselves are chosen in the Tools Manager)."""
    if selectors.tool_named(tool) is None:
        raise ApiError(404, f"no tool named {tool!r}", code="not_found")
    user = user_of(request)
    try:
        for switch in ("enabled", "reasoning_for_call"):
            value = getattr(body, switch)
            if value is not None:
                function_switch_set(user=user, tool=tool, switch=switch, value=value)
        if body.approval_mode is not None:
            function_approval_set(user=user, tool=tool, mode=body.approval_mode)
    except SettingsError as exc:
        raise ApiError(422, str(exc), code="invalid_switch") from None
    function = selectors.config_snapshot().function(tool)
    return FunctionOut(
        name=tool,
        enabled=function.enabled,
        approval_mode=function.approval_mode,
        reasoning_for_call=function.reasoning_for_call,
    )


# --- audit ---------------------------------------------------------------------------------
DAY = r"^\d{4}-\d{2}-\d{2}$"


def _day(value: str | None, name: str) -> str:
    if not value:
        return ""
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise ApiError(
            422, f"{name}: not a date (YYYY-MM-DD)", code="invalid_request", param=name
        ) from None


def _filters(
    tool: str, status: str, username: str, kind: str, source: str, q: str, since: Any, until: Any
) -> audit_selectors.AuditFilters:
    return audit_selectors.AuditFilters.from_query(
        {
            "tool": tool,
            "status": status,
            "user": username,
            "kind": kind,
            "source": source,
            "q": q,
            "date_from": _day(since, "date_from"),
            "date_to": _day(until, "date_to"),
        }
    )


@router.get("/audit", response={200: AuditPage, **errors(400)}, auth=scope("audit"))
def audit_list(
    request: HttpRequest,
    tool: str = Query("", max_length=200),
    status: str = Query("", max_length=200),
    username: str = Query("", max_length=200),
    kind: str = Query("", max_length=20),
    source: str = Query("", max_length=20),
    q: str = Query("", max_length=200),
    date_from: str | None = Query(None, pattern=DAY),
    date_to: str | None = Query(None, pattern=DAY),
    cursor: str | None = None,
    limit: int = Query(50, ge=1, le=200),
) -> Any:
    """The audit log, newest first, filtered as on the audit page (``q``: words in the
    arguments, results, errors, tool names and policy reasons)."""
    filters = _filters(tool, status, username, kind, source, q, date_from, date_to)
    rows, following = BY_ID_DESC.page(
        audit_selectors.audit_records(filters), cursor=cursor, limit=limit
    )
    items = [
        AuditRecordOut(
            id=r.pk,
            kind=r.kind,
            created_at=r.created_at,
            username=r.username,
            tool_call_id=r.tool_call_id,
            conversation_id=r.conversation_id,
            source=r.source,
            group=r.group,
            tool=r.tool,
            arguments=r.arguments,
            status=r.status,
            policy_verdict=r.policy_verdict,
            policy_reason=r.policy_reason,
            result=r.result,
            error=r.error,
            duration_ms=r.duration_ms,
            detail=r.detail,
        )
        for r in rows
    ]
    return {"items": items, "next_cursor": following}


EXPORT_RESPONSES = {
    200: {
        "description": "The filtered audit log, every record (streamed)",
        "content": {
            "text/csv": {"schema": {"type": "string"}},
            "application/x-ndjson": {"schema": {"type": "string"}},
        },
    }
}


@router.get(
    "/audit/export",
    response={**errors()},
    auth=scope("audit"),
    openapi_extra={"responses": EXPORT_RESPONSES},
)
def audit_export(
    request: HttpRequest,
    format: str = Query("jsonl", pattern="^(csv|jsonl)$"),  # noqa: A002
    tool: str = Query("", max_length=200),
    status: str = Query("", max_length=200),
    username: str = Query("", max_length=200),
    kind: str = Query("", max_length=20),
    source: str = Query("", max_length=20),
    q: str = Query("", max_length=200),
    date_from: str | None = Query(None, pattern=DAY),
    date_to: str | None = Query(None, pattern=DAY),
) -> StreamingHttpResponse:
    """Every record the filters match, as CSV or JSON lines, streamed page by page (the
    audit page's export)."""
    filters = _filters(tool, status, username, kind, source, q, date_from, date_to)
    lines = audit_selectors.audit_export_lines(audit_selectors.audit_records(filters), format)
    kind_header = "text/csv" if format == "csv" else "application/x-ndjson"
    response = StreamingHttpResponse(lines, content_type=f"{kind_header}; charset=utf-8")
    name = f"audit-{timezone.now():%Y%m%d-%H%M%S}.{format}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
