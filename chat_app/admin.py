from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse

from chat_app import selectors
from chat_app.forms import ProviderForm
from chat_app.models import Agent, Conversation, Message, Provider, Turn
from chat_app.services import privacy


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    form = ProviderForm
    list_display = [
        "name",
        "kind",
        "model",
        "base_url",
        "native_tools",
        "tools_supported",
        "is_default",
        "has_key",
    ]
    list_filter = ["kind", "native_tools"]

    @admin.display(boolean=True, description="API key set")
    def has_key(self, obj: Provider) -> bool:
        return bool(obj.api_key)

    def save_model(
        self, request: HttpRequest, obj: Provider, form: ProviderForm, change: bool
    ) -> None:
        super().save_model(request, obj, form, change)
        if obj.is_default:
            Provider.objects.exclude(pk=obj.pk).update(is_default=False)


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    fields = ("role", "state", "content", "created_at")
    readonly_fields = ("role", "state", "content", "created_at")
    show_change_link = True


class AuditorOnly(admin.ModelAdmin):
    """Conversations and messages are their owners': in the admin too, only an auditor (the
    permission ``chat_app.audit_conversations``, on top of the model's own) sees them, and
    opening one is audited like reading it in the chat."""

    def _auditor(self, request: HttpRequest) -> bool:
        return selectors.may_read_others_conversations(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._auditor(request) and super().has_view_permission(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._auditor(request) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._auditor(request) and super().has_delete_permission(request, obj)

    def conversation_of(self, obj: Any) -> Conversation:
        raise NotImplementedError

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        obj = self.get_object(request, object_id)
        if obj is not None and self.has_view_permission(request, obj):
            conversation = self.conversation_of(obj)
            privacy.conversation_read_record(
                user=request.user, conversation=conversation, via="admin"
            )
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(Conversation)
class ConversationAdmin(AuditorOnly):
    list_display = ["title", "owner", "provider", "updated_at"]
    list_filter = ["owner"]
    search_fields = ["title"]
    inlines = [MessageInline]

    def conversation_of(self, obj: Any) -> Conversation:
        return obj


@admin.register(Turn)
class TurnAdmin(admin.ModelAdmin):
    list_display = ["id", "conversation", "kind", "status", "phase", "round", "started_at"]
    list_filter = ["status", "kind"]


@admin.register(Message)
class MessageAdmin(AuditorOnly):
    list_display = ["id", "conversation", "role", "state", "created_at"]
    list_filter = ["role", "state"]
    search_fields = ["content"]

    def conversation_of(self, obj: Any) -> Conversation:
        return obj.conversation


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "is_default",
        "provider",
        "model",
        "all_tools",
        "kind",
        "max_iterations",
        "budgets",
        "max_rounds",
        "max_calls_per_turn",
        "max_calls_per_conversation",
    ]
    search_fields = ["name", "description"]

    @admin.display(description="tool budgets (calls per turn)")
    def budgets(self, obj: Agent) -> str:
        budgets = sorted((obj.tool_budgets or {}).items())  # PostgreSQL keeps no key order
        limits = [f"{tool} {limit}" for tool, limit in budgets if limit]
        return ", ".join(limits) or "none"

    def save_model(self, request: HttpRequest, obj: Agent, form: object, change: bool) -> None:
        super().save_model(request, obj, form, change)  # type: ignore[arg-type]
        if obj.is_default:
            Agent.objects.exclude(pk=obj.pk).update(is_default=False)
