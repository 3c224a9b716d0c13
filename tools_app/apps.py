from __future__ import annotations

import logging
from typing import Any

from django.apps import AppConfig

logger = logging.getLogger(__name__)


class ToolsAppConfig(AppConfig):
    name = "tools_app"
    verbose_name = "Tools"

    def ready(self) -> None:
        from django.contrib.auth.models import Group
        from django.db.models.signals import m2m_changed

        from infra import access
        from infra.maintenance import maintenance_step
        from infra.metrics import metrics_reader
        from tools_app import checks, executors
        from tools_app.executors.browser import browser_maintenance
        from tools_app.models import (
            ShadowPolicy,
            ToolFunctionConfig,
            ToolGroupConfig,
            ToolSource,
            config_track,
        )
        from tools_app.services.audit import audit_conversation_read
        from tools_app.services.binding import shadow_source_set, standing_check_set
        from tools_app.services.grants import grants_track
        from tools_app.services.policy import shadow_access
        from tools_app.services.standing import standing_at_binding

        executors.load_all()
        # An auditor's read of someone else's conversation is recorded (infra.access).
        access.conversation_read_recorder_set(audit_conversation_read)
        checks.register_all()
        # A matching standing approval lets a call that would wait run (binding's last step).
        standing_check_set(standing_at_binding)
        # Processes cache tool configuration keyed by ToolConfigVersion (tools_app.selectors),
        # the imported tools of MCP servers and OpenAPI documents included (tools_app.imported).
        config_track(ToolGroupConfig, ToolFunctionConfig, ToolSource)
        # The shadow policy too: decided beside the live one at every bind, from memory.
        config_track(ShadowPolicy)
        shadow_source_set(shadow_access)
        # So is every person's set of granted tools (grants, groups, memberships, staff).
        grants_track()
        # Approver groups too: set or added (m2m_changed), or gone with their group.
        approvers = ToolFunctionConfig.approver_groups.through
        config_track(approvers, Group)
        m2m_changed.connect(_approvers_changed, sender=approvers, dispatch_uid="cc-approvers")
        # A deactivated account's connections to per-person sources are revoked and deleted,
        # whatever deactivated it (the People page, the admin, a command).
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_save

        post_save.connect(
            _person_saved, sender=get_user_model(), dispatch_uid="tools_app.connections_end"
        )
        # Lost tool calls first: their turns (chat_app's step) may then move on.
        maintenance_step("tool calls", _reap_tool_calls, order=10)
        maintenance_step("expired approvals", _expire_approvals, order=15)
        maintenance_step("idle sandboxes", _reap_idle_sandboxes, order=30)
        maintenance_step("browser", browser_maintenance, order=40)
        # /metrics of the web process: calls waiting for a person's decision.
        metrics_reader("approvals pending", _approvals_pending, scope="deployment")
        metrics_reader("audit chain", _audit_chain, scope="deployment")


def _person_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    if instance.is_active:
        return
    from django.db import transaction

    from tools_app.connections.models import SourceConnection

    # Unusable at once (in the deactivation's transaction); revoked at the authorization
    # server and deleted by a worker right after it commits.
    ended = SourceConnection.objects.filter(user_id=instance.pk).exclude(
        state=SourceConnection.State.BROKEN
    )
    if (
        ended.update(state=SourceConnection.State.BROKEN)
        or SourceConnection.objects.filter(user_id=instance.pk).exists()
    ):
        transaction.on_commit(lambda: _connections_end(instance.pk))


def _connections_end(user_id: int) -> None:
    from tools_app.tasks import end_connections

    try:
        end_connections.apply_async((user_id,), queue="tools")
    except Exception:  # the broker is down: do it here rather than leave them
        logger.warning("ending the connections of user %s here: the broker is down", user_id)
        end_connections(user_id)


def _approvals_pending() -> list[Any]:
    from infra.metrics import gauge
    from tools_app.models import ToolCall

    waiting = ToolCall.objects.filter(status=ToolCall.Status.AWAITING_APPROVAL).count()
    return [gauge("cc_approvals_pending", "Tool calls waiting for an approval", waiting)]


def _audit_chain() -> list[Any]:
    from django.utils import timezone

    from infra.metrics import gauge
    from tools_app.models import AuditChainHead, AuditCheckpoint, AuditRecord

    head = AuditChainHead.objects.filter(pk=1).values_list("seq", flat=True).first() or 0
    oldest = (
        AuditRecord.objects.filter(seq__isnull=True)
        .order_by("id")
        .values_list("created_at", flat=True)
        .first()
    )
    signed = AuditCheckpoint.objects.order_by("-seq", "-id").values_list("signed_at", flat=True)
    last = signed.first()
    return [
        gauge("cc_audit_chain_head", "The audit chain's last sealed record (seq)", head),
        gauge(
            "cc_audit_unsealed_age_seconds",
            "Age of the oldest audit record not in the chain yet (a call still running or "
            "waiting counts; 0: none)",
            (timezone.now() - oldest).total_seconds() if oldest else 0,
        ),
        gauge(
            "cc_audit_checkpoint_age_seconds",
            "Seconds since the audit chain's last signed checkpoint (0: none yet)",
            (timezone.now() - last).total_seconds() if last else 0,
        ),
    ]


def _approvers_changed(sender: Any, action: str, **kwargs: Any) -> None:
    from tools_app.models import ToolConfigVersion

    if action in ("post_add", "post_remove", "post_clear"):
        ToolConfigVersion.bump()


def _reap_tool_calls() -> None:
    from tools_app.services.execution import toolcall_reap_lost, toolcall_redeliver_queued

    reaped = toolcall_reap_lost()
    if reaped:
        logger.warning("marked %d tool call(s) with a lost worker as failed", reaped)
    sent = toolcall_redeliver_queued()
    if sent:
        logger.warning("queued %d waiting tool call(s) again", sent)


def _expire_approvals() -> None:
    from tools_app.services.approval import approvals_expire

    expired = approvals_expire()
    if expired:
        logger.info("denied %d tool call(s) whose approval expired", expired)


def _reap_idle_sandboxes() -> None:
    from tools_app.sandbox import reap_idle_sandboxes

    reaped = reap_idle_sandboxes()
    if reaped:
        logger.info("removed %d idle sandbox container(s)", reaped)
