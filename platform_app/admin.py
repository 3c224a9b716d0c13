"""Admins see and edit every user's memory, schedules and subagents here. Editing a chunk's
text re-indexes it: the full-text index follows by itself (triggers / expression index), the
vector is recomputed with the Memory group's current embedder."""

from __future__ import annotations

import logging
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from platform_app.models import CoreMemoryEntry, MemoryChunk, Schedule, SSOIdentity, Subagent
from tools_app.errors import ToolError

logger = logging.getLogger(__name__)


@admin.register(MemoryChunk)
class MemoryChunkAdmin(admin.ModelAdmin):
    list_display = ["id", "user", "short_content", "source", "embedder", "created_at"]
    list_filter = ["user", "source", "embedder"]
    search_fields = ["content", "source", "user__username"]
    readonly_fields = ["document", "position", "embedder", "created_at", "updated_at"]
    fields = ["user", "content", "source", *readonly_fields]
    date_hierarchy = "created_at"

    @admin.display(description="content")
    def short_content(self, obj: MemoryChunk) -> str:
        return obj.content[:80] + ("…" if len(obj.content) > 80 else "")

    def save_model(self, request: HttpRequest, obj: MemoryChunk, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change and "content" not in form.changed_data:
            return
        from platform_app.memory.services import memory_chunk_embed
        from tools_app import selectors

        try:
            memory_chunk_embed(obj, settings=selectors.group_settings("memory"))
        except ToolError as exc:
            messages.warning(
                request,
                _("Saved; the text is searchable by full text but not embedded: %(error)s")
                % {"error": exc},
            )


@admin.register(CoreMemoryEntry)
class CoreMemoryEntryAdmin(admin.ModelAdmin):
    list_display = ["user", "section", "key", "value", "updated_at"]
    list_filter = ["section", "user"]
    search_fields = ["key", "value", "user__username"]


class ScheduleForm(forms.ModelForm):
    class Meta:
        model = Schedule
        fields = [
            "user",
            "name",
            "cron",
            "timezone",
            "message",
            "model",
            "inject_into",
            "agent",
            "enabled",
        ]

    def clean(self) -> dict[str, Any]:
        from platform_app.schedules import CronInvalid, cron_check

        data = super().clean() or {}
        cron, tz = data.get("cron"), data.get("timezone") or "UTC"
        if cron:
            try:
                data["cron"] = cron_check(cron, tz=tz)
            except CronInvalid as exc:
                self.add_error("cron" if "time zone" not in str(exc) else "timezone", str(exc))
        return data


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    """Editing the expression, the time zone or switching a schedule on computes its next
    run from now. Its tool scope (the tools of whatever made or changed it, see
    ``Schedule.tool_scope``) is shown, never edited here: an admin's edit keeps it."""

    form = ScheduleForm
    list_display = ["name", "user", "cron", "enabled", "next_run_at", "last_run_at", "run_count"]
    list_filter = ["enabled", "user"]
    search_fields = ["name", "message", "user__username"]
    readonly_fields = [
        "tool_scope",
        "next_run_at",
        "last_run_at",
        "last_turn",
        "last_status",
        "last_error",
        "run_count",
        "created_at",
        "updated_at",
    ]
    raw_id_fields = ["inject_into", "agent"]

    def save_model(self, request: HttpRequest, obj: Schedule, form: Any, change: bool) -> None:
        from platform_app.schedules import schedule_reschedule

        if not change or {"cron", "timezone", "enabled"} & set(form.changed_data):
            schedule_reschedule(obj)
        super().save_model(request, obj, form, change)


@admin.register(Subagent)
class SubagentAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "status", "depth", "conversation", "created_at", "finished_at"]
    list_filter = ["status", "depth", "user"]
    search_fields = ["name", "message", "result", "user__username"]
    readonly_fields = [f.name for f in Subagent._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(SSOIdentity)
class SSOIdentityAdmin(admin.ModelAdmin):
    """Which SSO identity signs in to which account. Deleting one unlinks it: the next SSO login
    of that person is then a first login again (docs/ADMIN_GUIDE.md)."""

    list_display = ["user", "subject", "issuer", "created_at", "last_login_at"]
    search_fields = ["user__username", "subject"]
    readonly_fields = ["user", "issuer", "subject", "created_at", "last_login_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # made by logins only
