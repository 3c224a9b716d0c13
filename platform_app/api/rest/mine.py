"""A person's own things: who the token is, the agent profiles they may use, their
schedules, memory and reports — through the self-service pages' services, filtered by owner
(another person's id answers as a missing one)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import Query, Router

from chat_app.services import privacy
from platform_app import preapprovals, reports, self_service
from platform_app.api.errors import ApiError
from platform_app.api.rest.base import errors, scope, token_of, user_of
from platform_app.api.rest.schemas import (
    AgentOut,
    CoreMemoryOut,
    MemoryOut,
    MeOut,
    PreapprovalOut,
    PreapproveIn,
    ReportOut,
    ScheduleIn,
    ScheduleOut,
    SchedulePatch,
)
from platform_app.api.v1 import services as v1
from platform_app.api_tokens import api_token_turn_scope, rate_limit_of
from platform_app.models import Schedule
from tools_app.services.approval import ApprovalError

router = Router(tags=["yours"])


@router.get("/me", response={200: MeOut, **errors()}, auth=scope("read"))
def me(request: HttpRequest) -> Any:
    """Who this token acts for, and what it may do."""
    token = token_of(request)
    return MeOut(
        username=token.user.get_username(),
        is_staff=token.user.is_staff,
        token_name=token.name,
        scopes=list(token.scopes),
        rate_limit_per_minute=rate_limit_of(token),
    )


@router.get("/agents", response={200: list[AgentOut], **errors()}, auth=scope("read"))
def agent_list(request: HttpRequest) -> Any:
    """The agent profiles you may use (and this token may: ``/v1/models`` lists the same)."""
    return [
        AgentOut(name=a.name, description=a.description, is_default=a.is_default)
        for a in v1.models_for(token_of(request))
    ]


# --- schedules -----------------------------------------------------------------------------
def _schedule(request: HttpRequest, schedule_id: int) -> Schedule:
    found = self_service.my_schedule(user_id=user_of(request).pk, schedule_id=schedule_id)
    if found is None:
        raise ApiError(404, "schedule not found", code="not_found")
    return found


def _invalid(exc: Exception) -> ApiError:
    return ApiError(422, str(exc), code="invalid_schedule")


def _preapprove(request: HttpRequest, given: list[Any] | None) -> list[dict[str, Any]] | None:
    """The pre-approvals posted, if this token may approve (scope ``approve``)."""
    if given is None:
        return None
    if "approve" not in token_of(request).scopes:
        raise ApiError(
            403,
            "pre-approving calls needs a token with the approve scope",
            code="forbidden",
            param="preapprove",
        )
    return [item.model_dump(mode="json") for item in given]


@router.get("/schedules", response={200: list[ScheduleOut], **errors()}, auth=scope("read"))
def schedule_list(request: HttpRequest) -> Any:
    from platform_app.schedules import schedules_for

    return list(schedules_for(user_of(request).pk))


@router.post("/schedules", response={201: ScheduleOut, **errors()}, auth=scope("write"))
def schedule_create(request: HttpRequest, body: ScheduleIn) -> Any:
    """A schedule of yours: ``message`` runs as your turn at each ``cron`` time (checked as
    on the My schedules page: the Schedules group's limits apply), within this token's tools
    (as a turn it starts through ``/v1`` would be)."""
    form = self_service.ScheduleForm(
        name=body.name.strip(),
        cron=body.cron.strip(),
        message=body.message.strip(),
        timezone=body.timezone.strip() or self_service.default_zone(),
        enabled=body.enabled,
    )
    preapprove = _preapprove(request, body.preapprove)
    try:
        schedule = self_service.my_schedule_create(
            user_id=user_of(request).pk,
            form=form,
            tool_scope=api_token_turn_scope(token_of(request)),
            preapprove=preapprove,
            approver=user_of(request),
        )
    except self_service.ScheduleInvalid as exc:
        raise _invalid(exc) from None
    return 201, schedule


@router.get(
    "/schedules/{schedule_id}", response={200: ScheduleOut, **errors(404)}, auth=scope("read")
)
def schedule_read(request: HttpRequest, schedule_id: int) -> Any:
    return _schedule(request, schedule_id)


@router.patch(
    "/schedules/{schedule_id}", response={200: ScheduleOut, **errors(404)}, auth=scope("write")
)
def schedule_change(request: HttpRequest, schedule_id: int, body: SchedulePatch) -> Any:
    """Change a schedule of yours. Its tools narrow to this token's (never widen): whatever
    it runs from now on, this token could have run."""
    schedule = _schedule(request, schedule_id)
    form = self_service.ScheduleForm(
        name=(body.name if body.name is not None else schedule.name).strip(),
        cron=(body.cron if body.cron is not None else schedule.cron).strip(),
        message=(body.message if body.message is not None else schedule.message).strip(),
        timezone=(body.timezone if body.timezone is not None else schedule.timezone).strip(),
        enabled=body.enabled if body.enabled is not None else schedule.enabled,
    )
    preapprove = _preapprove(request, body.preapprove)
    try:
        return self_service.my_schedule_update(
            schedule=schedule,
            form=form,
            tool_scope=api_token_turn_scope(token_of(request)),
            preapprove=preapprove,
            approver=user_of(request),
        )
    except self_service.ScheduleInvalid as exc:
        raise _invalid(exc) from None


@router.post(
    "/schedules/{schedule_id}/preapprovals",
    response={201: list[PreapprovalOut], **errors(404)},
    auth=scope("approve"),
)
def schedule_preapprove(request: HttpRequest, schedule_id: int, body: PreapproveIn) -> Any:
    """Pre-approve calls for the runs of a schedule — yours, or (an approver) another
    person's whose calls of these functions you may decide. Nothing else of it changes;
    422 with words when you may not decide one of them (all or none are granted)."""
    found = preapprovals.schedule_for_approver(user=user_of(request), schedule_id=schedule_id)
    if found is None:
        raise ApiError(404, "schedule not found", code="not_found")
    try:
        grants = preapprovals.schedule_preapprove_for(
            schedule=found,
            approver=user_of(request),
            data=[item.model_dump(mode="json") for item in body.preapprove],
        )
    except ApprovalError as exc:
        raise ApiError(422, exc.message, code="invalid_preapproval", param="preapprove") from None
    return 201, grants


@router.delete("/schedules/{schedule_id}", response={204: None, **errors(404)}, auth=scope("write"))
def schedule_delete(request: HttpRequest, schedule_id: int) -> Any:
    _schedule(request, schedule_id).delete()
    return 204, None


# --- memory --------------------------------------------------------------------------------
@router.get("/memory", response={200: list[MemoryOut], **errors()}, auth=scope("read"))
def memory_list(
    request: HttpRequest,
    q: str = Query("", max_length=200),
) -> Any:
    """Your archival memory: the newest entries, or those matching ``q`` (best first)."""
    return self_service.my_memory(user_id=user_of(request).pk, query=q)


@router.get("/memory/core", response={200: list[CoreMemoryOut], **errors()}, auth=scope("read"))
def core_memory_list(request: HttpRequest) -> Any:
    """The facts always in your system prompt (core memory)."""
    return list(self_service.my_core_memory(user_id=user_of(request).pk))


@router.delete("/memory/core/{entry_id}", response={204: None, **errors(404)}, auth=scope("write"))
def core_memory_delete(request: HttpRequest, entry_id: int) -> Any:
    if not self_service.my_core_delete(user_id=user_of(request).pk, entry_id=entry_id):
        raise ApiError(404, "core memory entry not found", code="not_found")
    return 204, None


@router.get("/memory/{chunk_id}", response={200: MemoryOut, **errors(404)}, auth=scope("read"))
def memory_read(request: HttpRequest, chunk_id: int) -> Any:
    chunk = self_service.my_memory_chunk(user_id=user_of(request).pk, chunk_id=chunk_id)
    if chunk is None:
        raise ApiError(404, "memory entry not found", code="not_found")
    return chunk


@router.delete("/memory/{chunk_id}", response={204: None, **errors(404)}, auth=scope("write"))
def memory_delete(request: HttpRequest, chunk_id: int) -> Any:
    if not self_service.my_memory_delete(user_id=user_of(request).pk, chunk_id=chunk_id):
        raise ApiError(404, "memory entry not found", code="not_found")
    return 204, None


# --- reports -------------------------------------------------------------------------------
@router.get("/reports", response={200: list[ReportOut], **errors()}, auth=scope("read"))
def report_list(request: HttpRequest) -> Any:
    """Every report of your conversations (create_report), newest first."""
    return [
        ReportOut(
            conversation_id=r["conversation"].pk,
            conversation_title=r["conversation"].title,
            name=str(r["name"]),
            size=int(r.get("size") or 0),
            modified=int(r.get("modified") or 0),
        )
        for r in self_service.my_reports(user_id=user_of(request).pk)
    ]


REPORT_RESPONSES = {
    200: {"description": "The report", "content": {"text/markdown": {"schema": {"type": "string"}}}}
}


@router.get(
    "/conversations/{conversation_id}/reports/{name}",
    response={**errors(404)},
    auth=scope("read"),
    openapi_extra={"responses": REPORT_RESPONSES},
)
def report_download(request: HttpRequest, conversation_id: int, name: str) -> HttpResponse:
    """One report as Markdown (yours; anyone's for an auditor, and that read is audited)."""
    conversation = privacy.conversation_read(
        user=user_of(request), conversation_id=conversation_id, via=f"api report {name}"
    )
    data = reports.conversation_report(conversation, name) if conversation else None
    if data is None:
        raise ApiError(404, "report not found", code="not_found")
    response = HttpResponse(data, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
