"""Django admin for the tools app. The audit log is read-only here as everywhere: no add,
change or delete, and no bulk delete action."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib import admin
from django.http import HttpRequest

from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig, ToolGroupConfig


@admin.register(ToolGroupConfig)
class ToolGroupConfigAdmin(admin.ModelAdmin):
    list_display = ["name", "enabled", "updated_at", "updated_by"]
    list_filter = ["enabled"]
    readonly_fields = ["updated_at", "updated_by"]


@admin.register(ToolFunctionConfig)
class ToolFunctionConfigAdmin(admin.ModelAdmin):
    list_display = ["name", "enabled", "requires_approval", "reasoning_for_call", "updated_at"]
    list_filter = ["enabled", "requires_approval", "reasoning_for_call"]


class _ReadOnlyAdmin(admin.ModelAdmin):
    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ToolCall)
class ToolCallAdmin(_ReadOnlyAdmin):
    """Calls are written by binding and execution only; deleting old ones is allowed (their
    audit records stay)."""

    list_display = ["id", "tool", "status", "source", "user", "conversation", "created_at"]
    list_filter = ["status", "source", "group"]
    search_fields = ["tool", "error"]
    date_hierarchy = "created_at"


@admin.register(AuditRecord)
class AuditRecordAdmin(_ReadOnlyAdmin):
    list_display = ["id", "created_at", "kind", "username", "tool", "status", "policy_verdict"]
    list_filter = ["kind", "status", "source"]
    search_fields = ["tool", "group", "username", "error"]
    date_hierarchy = "created_at"

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions


# Models added later (e.g. by an executor) still appear, read-only, until they get their own
# admin class: "the admin registers every model" should not depend on remembering this file.
for _model in apps.get_app_config("tools_app").get_models():
    if not admin.site.is_registered(_model):
        admin.site.register(_model, _ReadOnlyAdmin)
