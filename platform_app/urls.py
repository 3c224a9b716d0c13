from __future__ import annotations

from django.urls import path

from platform_app import views
from platform_app.approvals import views as approvals

app_name = "platform"

urlpatterns = [
    path("approvals/", approvals.approvals_page, name="approvals"),
    path("approvals/<int:call_id>/decide/", approvals.approval_decide, name="approval-decide"),
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke, name="token-revoke"),
    path("tokens/calls/<int:call_id>/decide/", views.token_decide, name="token-decide"),
    path("schedules/", views.schedule_list, name="schedules"),
    path("schedules/<int:schedule_id>/delete/", views.schedule_delete, name="schedule_delete"),
    path("c/<int:conversation_id>/reports/", views.reports_list, name="reports"),
    path("c/<int:conversation_id>/reports/<str:name>", views.report_download, name="report"),
]
