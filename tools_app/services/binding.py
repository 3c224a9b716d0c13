"""Binding: turn a requested call into a ToolCall that may run, or a clear refusal.

Validate-then-act, in this order: the tool exists → it is granted to the person → it is
offered to this agent (within the scope of whoever originated the call) → its definition is
not held for review (imported tools) → it is enabled → the arguments are JSON → they match the
schema → policy allows them → the person's own connection (a per-person source) → limits →
approval.
A call that fails a step is stored already finished, with ``{"success": false, "error": ...}``
as its result, so the model reads exactly what the card shows.

The decision itself is a value (``Decision``: verdict, reason, who approves), and the two
steps that depend on the access policy — grants and approval modes — ask an ``AccessView``
(``services.decision``): the live one when binding, a candidate when ``manage.py policy``
tests or replays one, and the shadow policy beside the live one on every call, whose verdict
is recorded and counted, never enforced (``toolcall_decide``, ``access_decide``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any, Protocol

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone
from pydantic import ValidationError

from infra import metrics, tracing
from infra.celery_app import app as celery_app
from infra.prepared import Prepared
from infra.safe_json import JsonTooDeep, json_loads_safe
from tools_app import selectors
from tools_app.connections.services import NOT_CONNECTED, connection_refusal
from tools_app.errors import PolicyDenied, ToolError
from tools_app.guards import guard_arguments
from tools_app.imported import held_reason
from tools_app.models import ToolCall
from tools_app.registry import GROUPS, TOOLS, BaseTool, GroupSettings, get_tool, is_latent
from tools_app.runtime import BindContext, Caller, scope_narrow
from tools_app.services.approval_notify import approval_waiting
from tools_app.services.audit import audit_call
from tools_app.services.decision import (
    ALLOWED,
    APPROVAL,
    DENIED,
    FAILED,
    LIVE,
    AccessView,
    Approval,
    Checks,
    Decision,
)
from tools_app.services.grants import (
    NOT_GRANTED,
    NothingGranted,
    inactive_reason,
    not_granted_reason,
)

logger = logging.getLogger(__name__)

REASONING_FIELD = "_reasoningForCall"
REVIEW = "review"  # the verdict of a call to an imported function held for an admin's review
RUN_TOOL_CALL_TASK = "tools_app.tasks.run_tool_call"  # sent by name: tasks import execution


@dataclass(frozen=True)
class CallLimits:
    """Per-agent limits (0 = unlimited). Per-tool per-minute limits live in group settings."""

    per_turn: int = 0
    per_conversation: int = 0


@dataclass
class CallRequest:
    """A call as the model (or a person) asked for it."""

    tool: str
    arguments: str | dict[str, Any] | None
    call_id: str = ""
    index: int = 0
    parse_error: str | None = None  # set by the text-fallback parser for malformed calls


class _Refused(Exception):
    def __init__(
        self, status: str, error: str, *, verdict: str = "", data: dict[str, Any] | None = None
    ) -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.verdict = verdict
        self.data = data or {}


def format_validation_error(tool: str, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(arguments)"
        kind = err.get("type", "")
        if not loc or loc == "(arguments)":
            parts.append(str(err.get("msg", "invalid")).removeprefix("Value error, "))
        elif kind == "missing":
            parts.append(f"'{loc}' is required")
        elif kind == "extra_forbidden":
            parts.append(f"'{loc}' is not an argument of {tool}")
        else:
            msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
            parts.append(f"'{loc}': {msg}")
    return f"invalid arguments for {tool}: " + "; ".join(parts)


def _parse_arguments(request: CallRequest) -> dict[str, Any]:
    if request.parse_error:
        raise _Refused(ToolCall.Status.FAILED, request.parse_error)
    raw = request.arguments
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return _valid_text(request, dict(raw))
    try:
        value = json_loads_safe(raw)
    except JsonTooDeep as exc:
        raise _Refused(ToolCall.Status.FAILED, f"arguments for {request.tool}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise _Refused(
            ToolCall.Status.FAILED,
            f"arguments for {request.tool} are not valid JSON: {exc.msg} at position {exc.pos}",
        ) from exc
    if not isinstance(value, dict):
        raise _Refused(
            ToolCall.Status.FAILED,
            f"arguments for {request.tool} must be a JSON object, got {type(value).__name__}",
        )
    return _valid_text(request, value)


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def _valid_text(request: CallRequest, value: dict[str, Any]) -> dict[str, Any]:
    # JSON may spell lone surrogates ("\udcc0"); no database stores them as text. (NUL, which
    # PostgreSQL refuses in text and jsonb, is checked after policy.)
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise _Refused(
            ToolCall.Status.FAILED,
            f"arguments for {request.tool} contain text that is not valid Unicode "
            "(a lone surrogate such as \\udcc0)",
        ) from None
    return value


def _lookup(
    request: CallRequest,
    allowed_tools: set[str] | None,
    unavailable: Mapping[str, str] | None = None,
    *,
    user_id: int | None,
    access: AccessView = LIVE,
) -> tuple[type[BaseTool], selectors.ToolState]:
    config = selectors.config_snapshot()  # imported tools as its token has them
    granted = access.granted(user_id, config)  # from memory while the token stands
    tool = get_tool(request.tool)
    if tool is None:
        held = held_reason(request.tool)  # an imported function waiting for a review
        if held is not None:
            raise _Refused(ToolCall.Status.DENIED, held, verdict=REVIEW)
        offered = set(TOOLS if allowed_tools is None else allowed_tools & set(TOOLS))
        if granted is not None:
            offered &= granted
        raise _Refused(
            ToolCall.Status.FAILED,
            f"unknown tool {request.tool!r}; available tools: "
            f"{', '.join(sorted(offered)) or 'none'}",
        )
    _check_available(tool.tool_name, unavailable)
    # Whoever asks, by whatever way: the person's grants (the union of their groups').
    if granted is not None and tool.tool_name not in granted:
        reason = (
            inactive_reason()
            if isinstance(granted, NothingGranted)
            else not_granted_reason(tool.tool_name)
        )
        raise _Refused(ToolCall.Status.DENIED, reason, verdict=NOT_GRANTED)
    if allowed_tools is not None and tool.tool_name not in allowed_tools:
        # Not offered because its group's settings refuse this caller (an operation an admin
        # has not allowed, a group for admins only): that reason, which says what to change.
        refusal = tool.caller_refusal(selectors.tool_state(tool, config).settings, Caller(user_id))
        raise _Refused(
            ToolCall.Status.DENIED,
            f"policy: {refusal}"  # as check_policy raises it
            if refusal
            else f"tool {tool.tool_name!r} is not available to this agent",
            verdict="denied",
        )
    hold = getattr(tool, "review_hold", "")
    if hold:  # its server changed it: the pinned copy is offered, not run, until reviewed
        raise _Refused(ToolCall.Status.DENIED, hold, verdict=REVIEW)
    state = selectors.tool_state(tool, config)
    if state.disabled_reason:
        raise _Refused(ToolCall.Status.DENIED, state.disabled_reason, verdict="denied")
    return tool, state


def toolcall_refusal_now(call: ToolCall) -> tuple[str, str] | None:
    """Why binding would refuse ``call`` if it were asked for now — the tool gone, no longer
    granted to the person, outside the scope it was asked within, or switched off — as
    (error, policy verdict); None if it may still run. For a call that waited (an approval):
    what was true when it was bound may not be when it is decided."""
    scope = set(call.scope) if call.scope is not None else None
    try:
        _lookup(CallRequest(tool=call.tool, arguments=None), scope, user_id=call.user_id)
    except _Refused as refused:
        return refused.error, refused.verdict or "denied"
    return None


def _check_available(name: str, unavailable: Mapping[str, str] | None) -> None:
    if unavailable and name in unavailable:  # taken away for now, with the reason
        raise _Refused(
            ToolCall.Status.DENIED,
            f"tool {name!r} is not available now: {unavailable[name]}",
            verdict="denied",
        )


# The calls that ran in a conversation and in one of its turns: the limits' count, asked for
# every call a model makes (compiled once per process, ``infra.prepared``). Grouped by the
# conversation so that it is a read of rows: no calls yet is no row.
_RAN_IN_CONVERSATION = Prepared(
    lambda conversation_id, turn_id: (
        ToolCall.objects.filter(
            policy_verdict="allowed", imported=False, conversation_id=conversation_id
        )
        .order_by()
        .values("conversation_id")
        .annotate(turn=Count("pk", filter=Q(turn_id=turn_id)), conversation=Count("pk"))
    ),
    conversation_id=int,
    turn_id=int,
)


def _check_limits(
    *,
    tool: type[BaseTool],
    settings: GroupSettings,
    limits: CallLimits | None,
    turn_id: int | None,
    conversation_id: int | None,
    function_limit: int | None = None,
) -> None:
    per_turn = limits.per_turn if limits and turn_id is not None else 0
    per_conversation = limits.per_conversation if limits and conversation_id is not None else 0
    if per_turn or per_conversation:
        if per_conversation and conversation_id is not None and turn_id is not None:
            # One query for both: a turn's calls all belong to its conversation.
            row = _RAN_IN_CONVERSATION.one(conversation_id=conversation_id, turn_id=turn_id)
            counts = row or {"turn": 0, "conversation": 0}
        else:
            ran = ToolCall.objects.filter(policy_verdict="allowed", imported=False)
            if per_conversation and conversation_id is not None:
                counts = ran.filter(conversation_id=conversation_id).aggregate(
                    turn=Count("pk", filter=Q(turn_id=turn_id)), conversation=Count("pk")
                )
            elif turn_id is not None:
                counts = ran.filter(turn_id=turn_id).aggregate(turn=Count("pk"))
        if per_turn and counts["turn"] >= per_turn:
            raise _Refused(
                ToolCall.Status.DENIED,
                f"limit: this turn already made {per_turn} tool calls "
                f"(the maximum per turn); answer with what you have",
                verdict="rate_limited",
            )
        if per_conversation and counts["conversation"] >= per_conversation:
            raise _Refused(
                ToolCall.Status.DENIED,
                f"limit: this conversation reached its maximum of {per_conversation} tool calls",
                verdict="rate_limited",
            )
    per_minute = settings.calls_per_minute if function_limit is None else function_limit
    if per_minute:
        since = timezone.now() - timedelta(seconds=60)
        recent = ToolCall.objects.filter(
            policy_verdict="allowed", tool=tool.tool_name, created_at__gte=since, imported=False
        ).count()
        if recent >= per_minute:
            raise _Refused(
                ToolCall.Status.DENIED,
                f"limit: {tool.tool_name} may run {per_minute} times per minute; try again later",
                verdict="rate_limited",
            )


# The quotas' check (an app above registers it at ready()): the words to refuse a call with,
# or None. Asked for every call that would run, whatever way it came in.
CallGate = Callable[[ToolCall], "str | None"]
_gate: CallGate | None = None


def call_gate_set(check: CallGate | None) -> None:
    """``check(call)`` (an unsaved call that may run) returns a refusal or None."""
    global _gate
    _gate = check


def _check_gate(call: ToolCall) -> None:
    if _gate is None:
        return
    refusal = _gate(call)
    if refusal is not None:
        raise _Refused(ToolCall.Status.DENIED, refusal, verdict="quota")


# Standing approvals (services/standing.py, set at ready()): for a call that would wait,
# makes it queued as approved by a matching standing approval, and returns what to record
# once the call is stored; None when none matches.
StandingCheck = Callable[[ToolCall], "Callable[[], None] | None"]
_standing: StandingCheck | None = None


def standing_check_set(check: StandingCheck | None) -> None:
    global _standing
    _standing = check


# The shadow policy (services/policy.py, set at ready()): the candidate evaluated beside the
# live one on every call, from memory while the configuration token stands; None: no shadow.
ShadowSource = Callable[[selectors.ConfigSnapshot], "ShadowAccess | None"]
_shadow_source: ShadowSource | None = None


class ShadowAccess(AccessView, Protocol):
    label: str  # how the audit records and the metrics name it (its digest)


def shadow_source_set(source: ShadowSource | None) -> None:
    global _shadow_source
    _shadow_source = source


@dataclass
class CheckedCall:
    """A call checked as far as it can be without writing (``toolcall_check``): the unsaved
    ToolCall, already refused or allowed so far; what its limits need, if allowed; the
    decision so far, and the shadow policy's, if one runs."""

    call: ToolCall
    tool: type[BaseTool] | None = None
    settings: GroupSettings | None = None
    function_limit: int | None = None
    decision: Decision | None = None
    shadow: Decision | None = None
    shadow_policy: ShadowAccess | None = None


def toolcall_bind(
    *,
    request: CallRequest,
    ctx: BindContext,
    turn_id: int | None = None,
    message_id: int | None = None,
    allowed_tools: Iterable[str] | None = None,
    limits: CallLimits | None = None,
    unavailable: Mapping[str, str] | None = None,
) -> ToolCall:
    """Create the ToolCall for ``request``: ``queued`` (or ``awaiting_approval``) when it may
    run, already terminal when it may not. Dispatching is the caller's next step.
    ``unavailable``: tools taken away for now (an agent's limits), name → reason."""
    # One configuration for the whole bind (the lookup, the grants, the gates): the stored
    # token is read once, not once per step. Inside a model round this is the round's.
    with selectors.config_pinned():
        checked = toolcall_check(
            request=request,
            ctx=ctx,
            turn_id=turn_id,
            message_id=message_id,
            allowed_tools=allowed_tools,
            unavailable=unavailable,
        )
        return toolcall_store(checked, limits=limits, unavailable=unavailable)


def toolcall_decide(
    *,
    request: CallRequest,
    ctx: BindContext,
    access: AccessView = LIVE,
    allowed_tools: Iterable[str] | None = None,
) -> Decision:
    """What binding decides for ``request`` under ``access`` (the live policy, or a
    candidate), writing nothing: the checks of ``toolcall_check``, then the approval."""
    with selectors.config_pinned():
        checked = toolcall_check(
            request=request, ctx=ctx, allowed_tools=allowed_tools, access=access, shadow=False
        )
    assert checked.decision is not None
    return checked.decision


def _refused_decision(refused: _Refused) -> Decision:
    verdict = DENIED if refused.status == ToolCall.Status.DENIED else FAILED
    return Decision(verdict, refused.error, refused.verdict)


def _approval_decision(approval: Approval, escalated: str) -> Decision:
    """A call every check let through: it runs, or waits for whom its approval rule names
    (the requester, when only a guard asks)."""
    if approval.mode != "none":
        return Decision(APPROVAL, "", ALLOWED, approval)
    if escalated:
        return Decision(APPROVAL, escalated, ALLOWED, Approval("requester"))
    return Decision(ALLOWED, "", ALLOWED)


def access_decide(
    access: AccessView,
    *,
    tool: str,
    user_id: int | None,
    scope: Iterable[str] | None,
    checks: Checks,
    unavailable: Mapping[str, str] | None = None,
) -> Decision:
    """The decision under ``access`` for a call of ``tool`` whose other steps (arguments,
    allow-lists, guards, limits: they do not depend on who may use what) came out as
    ``checks`` — a recorded call's, or the live bind's. The same steps as ``toolcall_check``
    in the same order: the tool, the grants and the scope first, then those, then approval."""
    allowed = set(scope) if scope is not None else None
    try:
        found, _state = _lookup(
            CallRequest(tool=tool, arguments=None),
            allowed,
            unavailable,
            user_id=user_id,
            access=access,
        )
    except _Refused as refused:
        return _refused_decision(refused)
    if checks.refusal is not None:
        return checks.refusal
    config = selectors.config_snapshot()
    return _approval_decision(access.approval(found.tool_name, config), checks.escalated)


def toolcall_check(
    *,
    request: CallRequest,
    ctx: BindContext,
    turn_id: int | None = None,
    message_id: int | None = None,
    allowed_tools: Iterable[str] | None = None,
    unavailable: Mapping[str, str] | None = None,
    access: AccessView = LIVE,
    shadow: bool = True,
) -> CheckedCall:
    """The steps of binding that read nothing but the configuration and write nothing: the
    tool, its arguments, their schema and policy. A caller that binds inside a transaction
    runs these first, outside it (on SQLite a write transaction holds every other writer of
    the process back), then ``toolcall_store`` inside. ``access``: whose grants and approval
    rules decide (``toolcall_decide``); ``shadow``: also decide under the shadow policy, if
    one runs (binding)."""
    # One configuration for every read of the check (the lookup, the shadow, the approval).
    with selectors.config_pinned():
        return _check(
            request=request,
            ctx=ctx,
            turn_id=turn_id,
            message_id=message_id,
            allowed_tools=allowed_tools,
            unavailable=unavailable,
            access=access,
            shadow=shadow,
        )


def _check(
    *,
    request: CallRequest,
    ctx: BindContext,
    turn_id: int | None,
    message_id: int | None,
    allowed_tools: Iterable[str] | None,
    unavailable: Mapping[str, str] | None,
    access: AccessView,
    shadow: bool,
) -> CheckedCall:
    raw_text = (
        request.arguments
        if isinstance(request.arguments, str)
        else json.dumps(request.arguments or {}, ensure_ascii=False)
    )
    call = ToolCall(
        conversation_id=ctx.conversation_id,
        turn_id=turn_id,
        message_id=message_id,
        user_id=ctx.user_id,
        source=ctx.source,
        call_id=request.call_id[:128],
        index=request.index,
        tool=request.tool[:64],
        # Kept as the model sent it, minus anything no database can store as text.
        raw_arguments=raw_text.encode("utf-8", "backslashreplace")
        .decode("utf-8")
        .replace("\x00", "\\u0000"),
        scope=ctx.scope,
    )
    # One rule for every way in: what the caller offers, within what the originator may use.
    narrowed = scope_narrow(ctx.scope, allowed_tools)
    allowed = set(narrowed) if narrowed is not None else None
    shadow_access = None
    if shadow and _shadow_source is not None:
        shadow_access = _shadow_source(selectors.config_snapshot())
    looked_up = False
    try:
        tool, state = _lookup(request, allowed, unavailable, user_id=ctx.user_id, access=access)
        looked_up = True
        call.group = tool.tool_group
        call.queue = GROUPS[tool.tool_group].queue
        arguments = _parse_arguments(request)
        call.reasoning = str(arguments.pop(REASONING_FIELD, "") or "")
        call.arguments = arguments
        try:
            validated = tool.model_validate(arguments)
        except ValidationError as exc:
            raise _Refused(
                ToolCall.Status.FAILED, format_validation_error(tool.tool_name, exc)
            ) from None
        call.arguments = validated.model_dump(mode="json", exclude_unset=True, by_alias=True)
        settings = state.settings
        try:
            validated.check_policy(settings, ctx)
        except PolicyDenied as exc:
            raise _Refused(
                ToolCall.Status.DENIED, f"policy: {exc.reason}", verdict="denied"
            ) from None
        except ToolError as exc:
            raise _Refused(ToolCall.Status.FAILED, exc.message) from None
        # Checked after policy, whose words say more (a path with NUL is refused there).
        if _has_nul(call.arguments):
            raise _Refused(
                ToolCall.Status.FAILED,
                f"arguments for {tool.tool_name} contain a NUL character (\\u0000), which no "
                "text field can hold",
            )
        # A per-person source: the person's own connection, before any approval is asked.
        connect = connection_refusal(tool, user_id=ctx.user_id)
        if connect is not None:
            raise _Refused(
                ToolCall.Status.FAILED, connect[0], verdict=NOT_CONNECTED, data=connect[1]
            )
        try:  # guards on the arguments, then escalation after untrusted content
            escalated = guard_arguments(
                call=call, tool=tool, validated=validated, settings=settings, ctx=ctx
            )
        except PolicyDenied as exc:
            raise _Refused(ToolCall.Status.DENIED, exc.reason, verdict="guard") from None
    except _Refused as refused:
        _refuse(call, refused)
        decision = _refused_decision(refused)
        # Refused before the arguments were looked at: a shadow that lets the tool through
        # is taken to pass them (they are checked alike whoever may use what).
        checks = Checks(decision) if looked_up else Checks()
        checked = CheckedCall(call, decision=decision)
        return _checked(checked, shadow_access, ctx, allowed, unavailable, checks)
    except Exception:
        # A check that breaks on odd input (a bug to fix) refuses the call like any other
        # refusal: stored, audited, with words that reveal nothing of the server.
        logger.exception("binding %s crashed on its arguments", request.tool)
        crashed = _Refused(ToolCall.Status.FAILED, _crashed(request.tool))
        _refuse(call, crashed)
        decision = _refused_decision(crashed)
        checked = CheckedCall(call, decision=decision)
        return _checked(checked, shadow_access, ctx, allowed, unavailable, Checks(decision))
    call.policy_verdict = "allowed"
    call.latent = is_latent(tool)
    decision = _approval_decision(
        access.approval(tool.tool_name, selectors.config_snapshot()), escalated
    )
    if decision.verdict == APPROVAL:
        assert decision.approval is not None
        call.status = ToolCall.Status.AWAITING_APPROVAL
        call.policy_reason = escalated  # shown on the card: why a guard asks a person
        # Who decides: fixed when the call is made (the requester, when only a guard asks).
        call.approval_mode = decision.approval.mode
        call.approver_group_ids = list(decision.approval.group_ids)
        if decision.approval.mode == "approver":  # the requester confirms alone
            call.approvals_needed = decision.approval.needed
    else:
        call.status = ToolCall.Status.QUEUED
    checked = CheckedCall(call, tool, settings, state.calls_per_minute, decision=decision)
    return _checked(checked, shadow_access, ctx, allowed, unavailable, Checks(escalated=escalated))


def _checked(
    checked: CheckedCall,
    shadow_access: ShadowAccess | None,
    ctx: BindContext,
    allowed: set[str] | None,
    unavailable: Mapping[str, str] | None,
    checks: Checks,
) -> CheckedCall:
    """The shadow policy's decision beside the live one (the same steps: ``access_decide``)."""
    if shadow_access is None:
        return checked
    try:
        checked.shadow = access_decide(
            shadow_access,
            tool=checked.call.tool,
            user_id=ctx.user_id,
            scope=allowed,
            checks=checks,
            unavailable=unavailable,
        )
        checked.shadow_policy = shadow_access
    except Exception:  # a shadow never changes a call, not even by breaking
        logger.exception("the shadow policy could not decide a call of %s", checked.call.tool)
    return checked


def _live_verdict(call: ToolCall) -> str:
    if call.status == ToolCall.Status.AWAITING_APPROVAL:
        return APPROVAL
    if call.status == ToolCall.Status.DENIED:
        return DENIED
    if call.status == ToolCall.Status.FAILED:
        return FAILED
    return ALLOWED


def _shadow_record(checked: CheckedCall, *, store_refusal: Decision | None, standing: bool) -> None:
    """Put the shadow's verdict on the call (its audit record copies it) and count it."""
    shadow, policy = checked.shadow, checked.shadow_policy
    if shadow is None or policy is None:
        return
    if store_refusal is not None and shadow.verdict in (ALLOWED, APPROVAL):
        shadow = store_refusal  # limits and quotas hold whoever may use what
    elif standing and shadow.verdict == APPROVAL:
        # A standing approval let the live call run; under the shadow it would have too
        # (approximately: its approver is checked against the live rules).
        shadow = Decision(ALLOWED, "a standing approval", ALLOWED)
    live = _live_verdict(checked.call)
    checked.call.shadow = shadow.shadow_detail(policy=policy.label, name=policy.name, live=live)
    metrics.policy_shadow(live=live, shadow=shadow.verdict)


def toolcall_store(
    checked: CheckedCall,
    *,
    limits: CallLimits | None = None,
    unavailable: Mapping[str, str] | None = None,
) -> ToolCall:
    """Check a checked call's limits (they count stored calls, so in the same transaction as
    the INSERT when there is one) and store it. ``unavailable``: as now, if calls stored
    since the check took tools away (a clarification in the same round takes the next)."""
    call = checked.call
    store_refusal = None
    if checked.tool is not None and checked.settings is not None:
        try:
            _check_available(call.tool, unavailable)
            _check_limits(
                tool=checked.tool,
                settings=checked.settings,
                limits=limits,
                turn_id=call.turn_id,
                conversation_id=call.conversation_id,
                function_limit=checked.function_limit,
            )
            _check_gate(call)
        except _Refused as refused:
            _refuse(call, refused)
            store_refusal = _refused_decision(refused)
    approved = None
    # A call a guard holds (a secret in its arguments, a sink after untrusted content: its
    # policy_reason) waits for a person whatever was remembered for calls like it.
    if (
        call.status == ToolCall.Status.AWAITING_APPROVAL
        and _standing is not None
        and not call.policy_reason
    ):
        approved = _standing(call)
    _shadow_record(checked, store_refusal=store_refusal, standing=approved is not None)
    call.save(force_insert=True)
    if approved is not None:
        approved()  # its audit record, now that the call has an id
    if call.status == ToolCall.Status.AWAITING_APPROVAL:
        transaction.on_commit(partial(approval_waiting, call))  # approvers are told
    if call.status != ToolCall.Status.QUEUED:
        # Refused or waiting for a person: recorded now. A queued call is recorded when it
        # finishes (every call finishes: run, cancelled, or failed by the reaper), one write
        # instead of two on the hot path.
        audit_call(call, new=True)
    if call.status in ToolCall.TERMINAL:  # refused here: its figures and its span now
        metrics.tool_call_ended(
            tool=call.tool, status=call.status, source=call.source, seconds=None
        )
        tracing.record(
            f"tool {call.tool}",
            attributes={
                "cc.tool": call.tool,
                "cc.tool.group": call.group,
                "cc.tool.status": call.status,
                "cc.policy.verdict": call.policy_verdict or "refused",
            },
            error=call.error,
        )
    return call


def _crashed(tool: str) -> str:
    return (
        f"{tool[:64]} could not check these arguments (an internal error, logged for the "
        "admins); try other values"
    )


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


def _refuse(call: ToolCall, refused: _Refused) -> None:
    # A refused call is stored with its arguments; NUL is the one character no database
    # stores as text, so it is shown as U+FFFD.
    call.arguments = _without_nul(call.arguments)
    call.status = refused.status
    call.latent = False
    call.error = refused.error
    call.policy_verdict = refused.verdict
    if refused.verdict:
        call.policy_reason = refused.error
    call.result = {"success": False, "error": refused.error, **refused.data}
    call.finished_at = timezone.now()
    call.duration_ms = 0


def toolcall_dispatch(call: ToolCall) -> None:
    """Queue a bound call on its Celery queue once the surrounding transaction commits (with
    the current trace context, when tracing is on: the call's span joins it)."""
    trace = tracing.current_traceparent()
    transaction.on_commit(lambda: toolcall_send(call.pk, call.queue or "tools", trace=trace))


def toolcall_send(call_id: int, queue: str, *, trace: str = "") -> None:
    """Send the call's message. If the broker is down (a Redis restart), the call stays
    queued and the maintenance pass sends it again once the broker is back."""
    try:
        headers = {"traceparent": trace} if trace else None
        celery_app.send_task(RUN_TOOL_CALL_TASK, (call_id,), queue=queue, headers=headers)
    except Exception as exc:
        logger.warning("tool call %s stays queued: the broker is unreachable (%s)", call_id, exc)
