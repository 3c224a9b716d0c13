"""Admins see and edit every user's memory here. Editing a chunk's text re-indexes it: the
full-text index follows by itself (triggers / expression index), the vector is recomputed
with the Memory group's current embedder."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest

from tools_app.errors import ToolError
from tools_app.platform.models import CoreMemoryEntry, MemoryChunk

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
        from tools_app import selectors
        from tools_app.platform.memory.services import memory_chunk_embed

        try:
            memory_chunk_embed(obj, settings=selectors.group_settings("memory"))
        except ToolError as exc:
            messages.warning(
                request, f"Saved; the text is searchable by full text but not embedded: {exc}"
            )


@admin.register(CoreMemoryEntry)
class CoreMemoryEntryAdmin(admin.ModelAdmin):
    list_display = ["user", "section", "key", "value", "updated_at"]
    list_filter = ["section", "user"]
    search_fields = ["key", "value", "user__username"]
