from __future__ import annotations

from django.urls import path

from platform_app import views
from platform_app.approvals import views as approvals
from platform_app.audit_export import views as audit_export
from platform_app.webhooks import views as webhooks

app_name = "platform"

urlpatterns = [
    path("approvals/", approvals.approvals_page, name="approvals"),
    path("approvals/standing/", approvals.standing_page, name="approvals-standing"),
    path("approvals/schedules/", approvals.schedules_page, name="approvals-schedules"),
    path(
        "approvals/standing/<int:grant_id>/revoke/",
        approvals.standing_revoke_view,
        name="approvals-standing-revoke",
    ),
    path("approvals/<int:call_id>/decide/", approvals.approval_decide, name="approval-decide"),
    path("approvals/<int:call_id>/preview/", approvals.approval_preview, name="approval-preview"),
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke, name="token-revoke"),
    path("tokens/<int:token_id>/edit/", views.token_edit, name="token-edit"),
    path("tokens/calls/<int:call_id>/decide/", views.token_decide, name="token-decide"),
    path("webhooks/", webhooks.webhook_list, name="webhooks"),
    path("webhooks/<int:endpoint_id>/", webhooks.webhook_detail, name="webhook"),
    path(
        "webhooks/<int:endpoint_id>/<str:action>/",
        webhooks.webhook_action,
        name="webhook-action",
    ),
    path(
        "webhooks/deliveries/<int:delivery_id>/again/",
        webhooks.delivery_again,
        name="webhook-again",
    ),
    path("audit-export/", audit_export.exporter_list, name="audit-exporters"),
    path("audit-export/<int:exporter_id>/", audit_export.exporter_detail, name="audit-exporter"),
    path(
        "audit-export/<int:exporter_id>/<str:action>/",
        audit_export.exporter_action,
        name="audit-exporter-action",
    ),
    path(
        "audit-export/<int:exporter_id>/dead-letters/<int:letter_id>/<str:action>/",
        audit_export.dead_letter_action,
        name="audit-dead-letter",
    ),
    path("schedules/", views.schedule_list, name="schedules"),
    path("schedules/new/", views.my_schedules, name="schedule-new"),
    path("schedules/preview/", views.my_cron_preview, name="cron-preview"),
    path("schedules/<int:schedule_id>/", views.my_schedule_edit, name="schedule-edit"),
    path("schedules/<int:schedule_id>/pause/", views.my_schedule_pause, name="schedule-pause"),
    path(
        "schedules/<int:schedule_id>/preapprove/",
        views.schedule_preapprove,
        name="schedule-preapprove",
    ),
    path("schedules/<int:schedule_id>/delete/", views.schedule_delete, name="schedule_delete"),
    path("memory/", views.my_memory, name="memory"),
    path("memory/<int:chunk_id>/", views.my_memory_chunk, name="memory-entry"),
    path("memory/<int:chunk_id>/delete/", views.my_memory_delete, name="memory-delete"),
    path("memory/core/<int:entry_id>/delete/", views.my_core_delete, name="core-delete"),
    path("reports/", views.my_reports, name="my-reports"),
    path("c/<int:conversation_id>/reports/", views.reports_list, name="reports"),
    path("c/<int:conversation_id>/reports/<str:name>", views.report_download, name="report"),
]
