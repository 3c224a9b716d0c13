"""Django admin for the tools app. The audit log is read-only here as everywhere: no add,
change or delete, and no bulk delete action. Encrypted fields (credentials) never reach an
admin page: they are entered in the Tools Manager, whose forms are write-only."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.apps import apps
from django.contrib import admin
from django.db import models
from django.http import HttpRequest

from infra.secrets import EncryptedTextField
from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig, ToolGroupConfig


def _encrypted_fields(model: type[models.Model]) -> list[str]:
    return [f.name for f in model._meta.fields if isinstance(f, EncryptedTextField)]


def _secret_state(value: str) -> str:
    """What is stored, by name only: "api_key: set", or "set" / "not set"."""
    if not value:
        return "not set"
    try:
        stored = json.loads(value)
    except ValueError:
        return "set"
    if not isinstance(stored, dict):
        return "set"
    return ", ".join(f"{k}: set" for k, v in sorted(stored.items()) if v) or "not set"


class SecretsHiddenAdmin(admin.ModelAdmin):
    """Leaves the model's encrypted fields out of the form and of the read-only fields; one
    read-only line says which secrets are stored, never what they are. Saving the form keeps
    them (the row is saved with the values it was loaded with)."""

    def get_exclude(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [*(super().get_exclude(request, obj) or ()), *_encrypted_fields(self.model)]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return self.without_secrets(super().get_readonly_fields(request, obj))

    def without_secrets(self, names: Sequence[str]) -> list[str]:
        """Read-only field names for a page: the encrypted ones replaced by their state."""
        hidden = _encrypted_fields(self.model)
        shown = [f for f in names if f not in hidden]
        return [*shown, "stored_secrets"] if hidden else shown

    @admin.display(description="secrets (write-only: set them in the Tools Manager)")
    def stored_secrets(self, obj: models.Model) -> str:
        names = _encrypted_fields(type(obj))
        states = [(name, _secret_state(getattr(obj, name))) for name in names]
        if len(states) == 1:
            return states[0][1]
        return "; ".join(f"{name}: {state}" for name, state in states)


@admin.register(ToolGroupConfig)
class ToolGroupConfigAdmin(SecretsHiddenAdmin):
    list_display = ["name", "enabled", "updated_at", "updated_by"]
    list_filter = ["enabled"]
    readonly_fields = ["updated_at", "updated_by"]


@admin.register(ToolFunctionConfig)
class ToolFunctionConfigAdmin(admin.ModelAdmin):
    list_display = ["name", "enabled", "approval_mode", "reasoning_for_call", "updated_at"]
    list_filter = ["enabled", "approval_mode", "reasoning_for_call"]
    filter_horizontal = ["approver_groups"]


class _ReadOnlyAdmin(SecretsHiddenAdmin):
    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return self.without_secrets([f.name for f in self.model._meta.fields])

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


# Models added later (e.g. by an executor) still appear, read-only and without their secrets,
# until they get their own admin class: "the admin registers every model" should not depend
# on remembering this file.
for _model in apps.get_app_config("tools_app").get_models():
    if not admin.site.is_registered(_model):
        admin.site.register(_model, _ReadOnlyAdmin)
