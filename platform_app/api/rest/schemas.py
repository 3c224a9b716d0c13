"""What the REST API answers and accepts (pydantic models through django-ninja: the OpenAPI
document at /api/openapi.json is generated from these)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import BaseModel, ConfigDict, Field

from tools_app.models import ToolCall


class In(BaseModel):
    """A request body: a JSON object with these fields and no others. (Not ninja's Schema,
    which also reads attributes off any object, so that a JSON string or list would pass.)"""

    model_config = ConfigDict(extra="forbid")


# --- who ----------------------------------------------------------------------------------


class MeOut(Schema):
    username: str
    is_staff: bool
    token_name: str
    scopes: list[str]
    rate_limit_per_minute: int


class AgentOut(Schema):
    name: str
    description: str
    is_default: bool


# --- conversations ----------------------------------------------------------------------------


class ConversationOut(Schema):
    id: int
    title: str
    agent: str | None
    created_at: datetime
    updated_at: datetime
    pinned: bool
    archived: bool
    running_turn_id: int | None = None


class ConversationPage(Schema):
    items: list[ConversationOut]
    next_cursor: str | None


class ConversationIn(In):
    title: str = Field(default="", max_length=200)
    agent: str | None = Field(default=None, max_length=100, description="an agent profile's name")


class ConversationPatch(In):
    title: str | None = Field(default=None, min_length=1, max_length=200)
    pinned: bool | None = None
    archived: bool | None = None


class ToolCallBrief(Schema):
    id: int
    tool: str
    status: str


class MessageOut(Schema):
    id: int
    turn_id: int | None
    role: str
    origin: str
    state: str
    content: str
    created_at: datetime
    usage: dict[str, Any]
    tool_calls: list[ToolCallBrief]


class MessagePage(Schema):
    items: list[MessageOut]
    next_cursor: str | None


class MessageIn(In):
    text: str = Field(min_length=1, description="the message, or a /command")


class TurnOut(Schema):
    id: int
    conversation_id: int
    status: str
    phase: str
    source: str
    kind: str
    error: str
    started_at: datetime
    finished_at: datetime | None


class SentOut(Schema):
    turn: TurnOut | None = Field(description="null: a command answered at once (see notice)")
    notice: str = ""


# --- tool calls -------------------------------------------------------------------------------


class ToolCallOut(Schema):
    id: int
    tool: str
    group: str
    status: str
    source: str
    conversation_id: int | None
    turn_id: int | None
    arguments: Any
    result: Any
    error: str
    approval_mode: str
    approvers: str
    approvals_needed: int = Field(
        default=1, description="distinct approvers who must approve before the call runs"
    )
    approved_by: list[str] = Field(
        default_factory=list, description="who approved so far, a call that needs several"
    )
    decided_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    duration_ms: int | None
    imported: bool = Field(
        default=False,
        description="a record from an imported conversation: never ran here, counted nowhere",
    )

    @staticmethod
    def of(call: ToolCall) -> ToolCallOut:
        return ToolCallOut(
            id=call.pk,
            tool=call.tool,
            group=call.group,
            status=call.status,
            source=call.source,
            conversation_id=call.conversation_id,
            turn_id=call.turn_id,
            arguments=call.arguments if call.arguments is not None else call.raw_arguments,
            result=call.result,
            error=call.error,
            approval_mode=call.approval_mode,
            approvers=call.approvers_label,
            approvals_needed=call.approvals_needed,
            approved_by=(
                [a.username for a in call.approvals.all()] if call.approvals_needed > 1 else []
            ),
            decided_by=call.decided_by.get_username() if call.decided_by else None,
            created_at=call.created_at,
            started_at=call.started_at,
            finished_at=call.finished_at,
            duration_ms=call.duration_ms,
            imported=call.imported,
        )


class ToolCallPage(Schema):
    items: list[ToolCallOut]
    next_cursor: str | None


class ApproveIn(In):
    arguments: dict[str, Any] | None = Field(
        default=None, description="edited arguments (checked again); null: as asked"
    )
    widening: dict[str, Any] | None = Field(
        default=None,
        description=(
            'remember this approval: {"scope": "conversation"|"person", "match": {argument: '
            '"equals"|"prefix"|"host"}, "until": ISO time (person)}; null: this call only'
        ),
    )
    note: str = Field(default="", max_length=2000)


class DenyIn(In):
    note: str = Field(default="", max_length=2000)


# --- tools (admins) ---------------------------------------------------------------------------


class FunctionOut(Schema):
    name: str
    enabled: bool
    approval_mode: str
    reasoning_for_call: bool


class ToolGroupOut(Schema):
    name: str
    label: str
    description: str
    enabled: bool
    functions: list[FunctionOut]


class ToolGroupDetail(ToolGroupOut):
    settings: dict[str, Any] = Field(description="secret fields read 'stored' or 'not stored'")


class ToolGroupPatch(In):
    enabled: bool | None = None
    settings: dict[str, Any] | None = Field(
        default=None, description="fields to change; the rest keep their values"
    )


class FunctionPatch(In):
    enabled: bool | None = None
    reasoning_for_call: bool | None = None
    approval_mode: Literal["none", "requester", "approver"] | None = None


# --- audit (admins) ---------------------------------------------------------------------------


class AuditRecordOut(Schema):
    id: int
    kind: str
    created_at: datetime
    username: str
    tool_call_id: int | None
    conversation_id: int | None
    source: str
    group: str
    tool: str
    arguments: Any
    status: str
    policy_verdict: str
    policy_reason: str
    result: Any
    error: str
    duration_ms: int | None
    detail: Any


class AuditPage(Schema):
    items: list[AuditRecordOut]
    next_cursor: str | None


# --- schedules, memory, reports -------------------------------------------------------------


class PreapprovalIn(In):
    tool: str = Field(min_length=1, max_length=64, description="the function")
    arguments: dict[str, Any] = Field(default_factory=dict)
    match: dict[str, str] = Field(
        default_factory=dict,
        description="argument → equals (the default), prefix (a workspace path) or host",
    )
    until: datetime | None = Field(default=None, description="empty: until revoked")


class PreapprovalOut(Schema):
    id: int
    tool: str
    arguments: dict[str, Any]
    match: dict[str, str]
    granted_by_name: str
    expires_at: datetime | None
    revoked_at: datetime | None
    uses: int
    current: bool = Field(
        default=True, description="false: the schedule changed since (its runs wait again)"
    )


class ScheduleOut(Schema):
    id: int
    name: str
    cron: str
    timezone: str
    message: str
    enabled: bool
    next_run_at: datetime | None
    last_run_at: datetime | None
    last_status: str
    last_error: str
    run_count: int
    preapprovals: list[PreapprovalOut] = []

    @staticmethod
    def resolve_preapprovals(obj: Any) -> list[Any]:
        from platform_app.preapprovals import schedule_preapprovals_shown

        return schedule_preapprovals_shown(obj)


class ScheduleIn(In):
    name: str = Field(min_length=1, max_length=100)
    cron: str = Field(min_length=1, max_length=120)
    message: str = Field(min_length=1)
    timezone: str = Field(default="", max_length=64, description="empty: the Schedules default")
    enabled: bool = True
    preapprove: list[PreapprovalIn] | None = Field(
        default=None,
        description="calls its runs may make without waiting, granted by this token's person "
        "(who must be able to decide them: never the owner in approver mode; scope approve)",
    )


class SchedulePatch(In):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    cron: str | None = Field(default=None, min_length=1, max_length=120)
    message: str | None = Field(default=None, min_length=1)
    timezone: str | None = Field(default=None, min_length=1, max_length=64)
    enabled: bool | None = None
    preapprove: list[PreapprovalIn] | None = Field(
        default=None, description="as for POST, for the schedule as changed"
    )


class PreapproveIn(In):
    preapprove: list[PreapprovalIn] = Field(min_length=1, max_length=20)


class MemoryOut(Schema):
    id: int
    content: str
    source: str
    created_at: datetime
    updated_at: datetime


class CoreMemoryOut(Schema):
    id: int
    section: str
    key: str
    value: str
    updated_at: datetime


class ReportOut(Schema):
    conversation_id: int
    conversation_title: str
    name: str
    size: int
    modified: int = Field(description="seconds since the epoch")
