from __future__ import annotations

from django.urls import path

from tools_app.manager import views, views_review, views_sources

app_name = "tools"

urlpatterns = [
    path("", views.manager, name="manager"),
    path("groups/<str:group>/edit/", views.group_edit, name="group_edit"),
    path("groups/<str:group>/enabled/", views.group_toggle, name="group_toggle"),
    path("groups/<str:group>/docs/", views.group_docs, name="group_docs"),
    path("functions/<str:tool>/test/", views.function_test, name="function_test"),
    path("functions/<str:tool>/limits/", views_sources.function_limits, name="function_limits"),
    path(
        "functions/<str:tool>/approval/",
        views_sources.function_approval,
        name="function_approval",
    ),
    path("sources/mcp/new/", views_sources.mcp_new, name="mcp_new"),
    path("sources/openapi/new/", views_sources.openapi_new, name="openapi_new"),
    path("sources/schema/new/", views_sources.schema_new, name="schema_new"),
    path("sources/<slug:name>/refresh/", views_sources.source_refresh, name="source_refresh"),
    path("sources/<slug:name>/status/", views_sources.source_status, name="source_status"),
    path("sources/<slug:name>/edit/", views_sources.source_edit, name="source_edit"),
    path("sources/<slug:name>/remove/", views_sources.source_remove, name="source_remove"),
    path("sources/<slug:name>/review/", views_review.source_review, name="source_review"),
    path(
        "sources/<slug:name>/review/decide/",
        views_review.source_review_decision,
        name="source_review_decide",
    ),
    path(
        "sources/<slug:name>/review/policy/",
        views_review.source_review_policy,
        name="source_review_policy",
    ),
    path("functions/<str:tool>/<str:switch>/", views.function_toggle, name="function_toggle"),
    # The list and a record share the name "audit" (reverse() tells them apart by their
    # arguments), so the top bar marks "Audit log" as the current section on both.
    path("audit/", views.audit, name="audit"),
    path("audit/<int:record_id>/", views.audit_detail, name="audit"),
    path("audit/export.csv", views.audit_export_csv, name="audit_export_csv"),
    path("audit/export.jsonl", views.audit_export_jsonl, name="audit_export_jsonl"),
    path("audit/chain.jsonl", views.audit_chain_export, name="audit_chain_export"),
    path("audit/public-key.pem", views.audit_public_key, name="audit_public_key"),
]
