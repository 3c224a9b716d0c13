from __future__ import annotations

from typing import Any

from django import forms
from django.forms.models import ModelChoiceIteratorValue
from django.utils.translation import gettext_lazy as _

from chat_app.models import Agent, Conversation, Provider


class RenameForm(forms.ModelForm):
    class Meta:
        model = Conversation
        fields = ["title"]


class AgentChoiceForm(forms.ModelForm):
    """The profiles the person may use, and only those: a crafted POST naming another one is
    refused like any choice not offered."""

    agent = forms.ModelChoiceField(queryset=Agent.objects.none(), empty_label=None)

    class Meta:
        model = Conversation
        fields = ["agent"]

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from chat_app.services.agents import agent_choices, agents_for

        field = self.fields["agent"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = agents_for(user).select_related("owner")
        me = getattr(user, "pk", None)

        def label(agent: Agent) -> str:
            # A member's profile says whose it is (one's own reads as "yours").
            if agent.owner_id is None:
                return agent.name
            if agent.owner_id == me:
                return _("%(name)s (yours)") % {"name": agent.name}
            owner = agent.owner.get_username() if agent.owner else ""
            return _("%(name)s (by %(owner)s)") % {"name": agent.name, "owner": owner}

        field.label_from_instance = label  # type: ignore[method-assign,assignment]
        field.error_messages["invalid_choice"] = (
            "That agent profile is not granted to you — ask an admin."
        )
        # Read once, through the statement compiled once per process: the widget otherwise
        # runs the query again for each pass over its options (the select and its "required"
        # check). A POSTed choice is still checked against the queryset above.
        field.choices = [
            (ModelChoiceIteratorValue(agent.pk, agent), label(agent))
            for agent in agent_choices(user)
        ]


class ProviderForm(forms.ModelForm):
    """Admin form: the API key is write-only — never rendered back, blank keeps the old one."""

    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_("Write-only. Leave blank to keep the stored key."),
    )
    clear_api_key = forms.BooleanField(required=False, label=_("Remove the stored API key"))

    class Meta:
        model = Provider
        fields = [
            "name",
            "kind",
            "base_url",
            "api_key",
            "model",
            "allowed_models",
            "native_tools",
            "tools_supported",
            "timeout_seconds",
            "max_retries",
            "retry_backoff_seconds",
            "temperature",
            "max_output_tokens",
            "image_input",
            "fallback_grammar",
            "is_default",
        ]

    def clean_allowed_models(self) -> list[str]:
        value = self.cleaned_data.get("allowed_models") or []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise forms.ValidationError(_('a JSON list of model names, e.g. ["gpt-4o-mini"]'))
        return [v.strip() for v in value if v.strip()]

    def clean(self) -> dict[str, object]:
        data = super().clean() or {}
        if not data.get("api_key") and self.instance.pk and not data.get("clear_api_key"):
            data["api_key"] = self.instance.api_key
        if data.get("clear_api_key"):
            data["api_key"] = ""
        return data
