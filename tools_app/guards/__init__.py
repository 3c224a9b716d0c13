"""Guards on a call's arguments and result, and escalation after untrusted content.

Binding asks ``guard_arguments`` after policy and before approval: secrets and personal data
in the arguments (``secrets``, ``pii``), the group's filter webhook (``filters``), then the
escalation of sinks once untrusted content entered the turn (``untrusted``). The worker asks
``guard_result`` before a result is stored, i.e. before the model, a card, ``/mcp/`` or ``/v1``
can read it. Each guard's action comes from the group's settings (``GroupSettings.guard_*``,
``filter_*``): allow, redact, approval (arguments only) or block. What each found is kept on
the call (``ToolCall.guards``) and copied to its audit record: the guard, the kind and the
place, never the value.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.utils.translation import gettext as _
from pydantic import ValidationError

from tools_app.errors import PolicyDenied
from tools_app.guards.filters import FilterFailed, filter_ask
from tools_app.guards.pii import find_pii
from tools_app.guards.scan import Detector, Found, scan
from tools_app.guards.secrets import find_secrets
from tools_app.guards.untrusted import sink_reason
from tools_app.models import ToolCall
from tools_app.registry import BaseTool, GroupSettings
from tools_app.runtime import BindContext

logger = logging.getLogger(__name__)

__all__ = ["GuardRefused", "guard_arguments", "guard_output", "guard_result"]


class GuardRefused(PolicyDenied):
    """A guard refuses the call; ``reason`` is what the model and the person read."""


def _detectors(secrets_action: str, pii_action: str) -> tuple[dict[str, Detector], dict[str, str]]:
    detectors: dict[str, Detector] = {}
    actions = {"secrets": secrets_action, "pii": pii_action}
    if secrets_action != "allow":
        detectors["secrets"] = find_secrets
    if pii_action != "allow":
        detectors["pii"] = find_pii
    return detectors, actions


def _words(found: list[Found]) -> str:
    shown = sorted({f"{f.kind} ({f.where})" for f in found})
    more = len(shown) - 3
    text = ", ".join(shown[:3])
    return text + (_(" and %(n)d more") % {"n": more} if more > 0 else "")


def _record(found: list[Found], actions: dict[str, str], stage: str) -> list[dict[str, str]]:
    return [
        {
            "stage": stage,
            "guard": f.guard,
            "kind": f.kind,
            "where": f.where,
            "action": actions[f.guard],
        }
        for f in found
    ]


def guard_arguments(
    *,
    call: ToolCall,
    tool: type[BaseTool],
    validated: BaseTool,
    settings: GroupSettings,
    ctx: BindContext,
) -> str:
    """Run the argument guards on a call that passed policy (``validated``: its arguments as
    binding validated them). Returns why a person must approve it ("" when no guard asks
    that); raises GuardRefused to refuse it. May replace ``call.arguments`` (redacted, or
    mutated by the filter webhook, and validated again)."""
    started = time.perf_counter()
    records: list[dict[str, str]] = []
    waits: list[str] = []
    detectors, actions = _detectors(settings.guard_secrets_arguments, settings.guard_pii_arguments)
    if detectors:
        redact = {g for g, a in actions.items() if a == "redact"}
        result = scan(call.arguments, root="arguments", detectors=detectors, redact=redact)
        records += _record(result.found, actions, "arguments")
        call.guards = records
        for guard in ("secrets", "pii"):
            hits = [f for f in result.found if f.guard == guard]
            if not hits:
                continue
            if actions[guard] == "block":
                raise GuardRefused(
                    _("guard: the arguments carry %(what)s; this tool group refuses them")
                    % {"what": _words(hits)}
                )
            if actions[guard] == "approval":
                waits.append(_("the arguments carry %(what)s") % {"what": _words(hits)})
        if redact and any(f.guard in redact for f in result.found):
            call.arguments = result.value
            validated = _revalidated(tool, call.arguments)
    if settings.filter_url:
        validated = _filter_arguments(call, tool, settings, ctx, validated, records)
    reason = (
        sink_reason(tool=tool, validated=validated, settings=settings, turn_id=call.turn_id)
        if ctx.untrusted_sinks != "off"
        else ""
    )
    if reason:
        records.append(
            {
                "stage": "arguments",
                "guard": "untrusted",
                "kind": "sink",
                "where": "call",
                "action": ctx.untrusted_sinks,
            }
        )
        call.guards = records
        if ctx.untrusted_sinks == "block":
            raise GuardRefused(_("refused: %(reason)s") % {"reason": reason})
        waits.append(reason)
    call.guards = records
    logger.debug(
        "argument guards of %s took %.2f ms", call.tool, (time.perf_counter() - started) * 1000
    )
    return "; ".join(waits)


def _revalidated(tool: type[BaseTool], arguments: Any) -> BaseTool:
    try:
        return tool.model_validate(arguments or {})
    except ValidationError as exc:
        errors = exc.errors()
        where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
        msg = errors[0]["msg"] if errors else "invalid"
        raise GuardRefused(
            _("invalid arguments for %(tool)s after the guards: '%(where)s': %(msg)s")
            % {"tool": tool.tool_name, "where": where or "(arguments)", "msg": msg}
        ) from None


def _filter_arguments(
    call: ToolCall,
    tool: type[BaseTool],
    settings: GroupSettings,
    ctx: BindContext,
    validated: BaseTool,
    records: list[dict[str, str]],
) -> BaseTool:
    payload = {**_payload(call, "arguments"), "arguments": call.arguments}
    try:
        answer = filter_ask(settings, payload)
    except FilterFailed as exc:
        action = "allow" if settings.filter_on_failure == "open" else "block"
        records.append(_filter_record("arguments", "failed", action))
        call.guards = records
        logger.warning("filter webhook of %s failed: %s", call.group, exc)
        if action == "block":
            raise GuardRefused(
                _("the filter webhook could not decide on this call (%(why)s)") % {"why": exc}
            ) from None
        return validated
    records.append(_filter_record("arguments", answer.action, _FILTER_ACTIONS[answer.action]))
    call.guards = records
    if answer.action == "reject":
        raise GuardRefused(
            _("rejected by the filter webhook: %(reason)s") % {"reason": answer.reason}
        )
    if answer.action == "mutate":
        mutated = _revalidated(tool, answer.value)
        try:
            mutated.check_policy(settings, ctx)
        except PolicyDenied as exc:
            raise GuardRefused(
                _("the filter webhook's arguments are refused by policy: %(reason)s")
                % {"reason": exc.reason}
            ) from None
        call.arguments = mutated.model_dump(mode="json", exclude_unset=True, by_alias=True)
        return mutated
    return validated


_FILTER_ACTIONS = {"accept": "allow", "reject": "block", "mutate": "mutate"}


def _filter_record(stage: str, answer: str, action: str) -> dict[str, str]:
    return {"stage": stage, "guard": "filter", "kind": answer, "where": "webhook", "action": action}


def _payload(call: ToolCall, stage: str) -> dict[str, Any]:
    return {
        "stage": stage,
        "tool": call.tool,
        "group": call.group,
        "source": call.source,
        "conversation_id": call.conversation_id,
        "turn_id": call.turn_id,
        "user_id": call.user_id,
        "tool_call_id": call.pk,
    }


def guard_result(
    call: ToolCall, result: dict[str, Any], settings: GroupSettings
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The result as the model may read it, and the call's guard records with this stage's
    added."""
    started = time.perf_counter()
    records: list[dict[str, Any]] = list(call.guards or [])
    detectors, actions = _detectors(settings.guard_secrets_result, settings.guard_pii_result)
    if detectors:
        redact = {g for g, a in actions.items() if a == "redact"}
        scanned = scan(result, root="result", detectors=detectors, redact=redact)
        records += _record(scanned.found, actions, "result")
        blocked = [f for f in scanned.found if actions[f.guard] == "block"]
        if blocked:
            error = _("guard: the result carried %(what)s; this tool group withholds it") % {
                "what": _words(blocked)
            }
            return {"success": False, "error": error}, records
        result = scanned.value
    if settings.filter_url:
        result = _filter_result(call, result, settings, records)
    logger.debug(
        "result guards of %s took %.2f ms", call.tool, (time.perf_counter() - started) * 1000
    )
    return result, records


def guard_output(output: str, settings: GroupSettings) -> str:
    """A call's printed output as stored (its card shows it, search and exports read it),
    through the same secret and PII guards as its result: redacted where the result would be,
    withheld where the group withholds such results. The filter webhook sees results only."""
    detectors, actions = _detectors(settings.guard_secrets_result, settings.guard_pii_result)
    if not output or not detectors:
        return output
    redact = {g for g, a in actions.items() if a == "redact"}
    scanned = scan(output, root="output", detectors=detectors, redact=redact)
    blocked = [f for f in scanned.found if actions[f.guard] == "block"]
    if blocked:
        return _("[output withheld: it carried %(what)s]") % {"what": _words(blocked)}
    return str(scanned.value)


def _filter_result(
    call: ToolCall, result: dict[str, Any], settings: GroupSettings, records: list[dict[str, Any]]
) -> dict[str, Any]:
    payload = {**_payload(call, "result"), "arguments": call.arguments, "result": result}
    try:
        answer = filter_ask(settings, payload)
    except FilterFailed as exc:
        action = "allow" if settings.filter_on_failure == "open" else "block"
        records.append(_filter_record("result", "failed", action))
        logger.warning("filter webhook of %s failed: %s", call.group, exc)
        if action == "allow":
            return result
        error = _("the filter webhook could not decide on this result (%(why)s)") % {"why": exc}
        return {"success": False, "error": error}
    records.append(_filter_record("result", answer.action, _FILTER_ACTIONS[answer.action]))
    if answer.action == "reject":
        error = _("rejected by the filter webhook: %(reason)s") % {"reason": answer.reason}
        return {"success": False, "error": error}
    if answer.action == "mutate":
        value = answer.value
        if isinstance(value, dict) and isinstance(value.get("success"), bool):
            return value
        return {"success": True, "result": value}
    return result
