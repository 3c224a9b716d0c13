"""Forms of the provider and agent-profile pages. The API key is write-only: never rendered
back; blank keeps the stored one. Tools are chosen by checkboxes (see ``tool_choices``)."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.conf import settings
from django.utils.translation import get_language_info
from django.utils.translation import gettext_lazy as _

from chat_app.models import Agent, Provider

_SPLIT = re.compile(r"[\s,]+")


def _names(text: str) -> list[str]:
    return list(dict.fromkeys(n for n in _SPLIT.split(text or "") if n))


class ProviderPageForm(forms.ModelForm):
    api_key = forms.CharField(
        required=False,
        label=_("API key"),
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_("Write-only and encrypted at rest. Leave blank to keep the stored key."),
    )
    clear_api_key = forms.BooleanField(required=False, label=_("Remove the stored API key"))
    allowed_models = forms.CharField(
        required=False,
        label=_("Other allowed models"),
        widget=forms.Textarea(attrs={"rows": 3, "class": "mono"}),
        help_text=_(
            "Model names of this endpoint that people, schedules and subagents may "
            "switch to, one per line (or separated by commas)."
        ),
    )

    class Meta:
        model = Provider
        fields = [
            "name",
            "kind",
            "base_url",
            "model",
            "allowed_models",
            "native_tools",
            "image_input",
            "fallback_grammar",
            "timeout_seconds",
            "max_retries",
            "retry_backoff_seconds",
            "temperature",
            "max_output_tokens",
            "is_default",
        ]
        labels = {
            "base_url": _("Base URL"),
            "model": _("Default model"),
            "native_tools": _("Tool calls"),
            "image_input": _("Image input"),
            "fallback_grammar": _("Grammar for text fallback"),
            "timeout_seconds": _("Timeout (seconds)"),
            "retry_backoff_seconds": _("First retry wait (seconds)"),
            "is_default": _("Default provider"),
        }
        help_texts = {
            "base_url": _(
                "Empty: the vendor's own API. OpenAI-compatible servers end in /v1, "
                "e.g. http://localhost:11434/v1 for Ollama."
            ),
            "is_default": _("Used by conversations and agent profiles that name no provider."),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.is_bound:
            self.initial["allowed_models"] = "\n".join(self.instance.allowed_models or [])
        if self.instance.pk and self.instance.api_key:
            self.fields["api_key"].help_text = (
                "A key is stored (never shown). Type a new one to replace it; leave blank to "
                "keep it."
            )

    def clean_base_url(self) -> str:
        url = (self.cleaned_data.get("base_url") or "").strip()
        if url and not re.match(r"^https?://[^\s/]+", url):
            raise forms.ValidationError(_("a URL starting with http:// or https://"))
        return url.rstrip("/")

    def clean_allowed_models(self) -> list[str]:
        return _names(self.cleaned_data.get("allowed_models") or "")

    def save(self, commit: bool = True) -> Provider:
        provider: Provider = super().save(commit=False)
        if self.cleaned_data.get("clear_api_key"):
            provider.api_key = ""
        elif self.cleaned_data.get("api_key"):
            provider.api_key = self.cleaned_data["api_key"]
        if commit:
            provider.save()
        return provider


class ProviderChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.name} · {obj.model}"


class AgentPageForm(forms.ModelForm):
    """The tools come from the checkboxes (``tool`` / ``tool_group`` / ``all_tools``), checked
    against the registered tools by the view; ``tool_budgets`` from ``budget_<tool>`` inputs."""

    provider = ProviderChoiceField(
        queryset=Provider.objects.order_by("name"),
        required=False,
        empty_label=_("— the default provider —"),
        help_text=_("Empty: the default provider."),
    )
    # GRANTS: a "groups" field (which groups may use this profile) goes here, beside the
    # fields below, when Agent.groups exists (issue 22, per-group grants).
    tool_language = forms.ChoiceField(
        label=_("Tool descriptions for the model"),
        required=False,
        help_text=_(
            "The language the model reads the tools' descriptions in. Names of tools and "
            "arguments never change."
        ),
    )

    always_on = forms.CharField(
        label=_("Always-on tools"),
        required=False,
        help_text=_(
            "With tool search on: the tools every request carries, by name, separated by "
            "spaces. Empty: skill_load and memory_search."
        ),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.is_bound:
            self.initial["always_on"] = " ".join(self.instance.always_on_tools or [])
        # Each language by its own name; the list follows settings.LANGUAGES.
        field = self.fields["tool_language"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [
            ("", _("The conversation's language (the person's)")),
            *((code, get_language_info(code)["name_local"]) for code, _n in settings.LANGUAGES),
        ]
        # A client that leaves it out (an older page, a script) keeps the safe default.
        self.fields["untrusted_sinks"].required = False
        self.fields["tool_schema_budget"].required = False

    def clean_tool_schema_budget(self) -> int:
        value = self.cleaned_data.get("tool_schema_budget")
        if value is None:  # left out: as it was (a new profile: the default)
            return self.instance.tool_schema_budget
        return int(value)

    def clean_always_on(self) -> list[str]:
        from tools_app.selectors import registered_tools

        if "always_on" not in self.data:  # a client that leaves it out keeps the list
            return list(self.instance.always_on_tools or [])
        names = _names(self.cleaned_data.get("always_on") or "")
        unknown = [n for n in names if n not in registered_tools()]
        if unknown:
            raise forms.ValidationError(
                _("no tool named %(names)s") % {"names": ", ".join(unknown)}
            )
        return names

    def save(self, commit: bool = True) -> Agent:
        agent: Agent = super().save(commit=False)
        agent.always_on_tools = self.cleaned_data.get("always_on") or []
        if commit:
            agent.save()
            self.save_m2m()
        return agent

    def clean_untrusted_sinks(self) -> str:
        value = self.cleaned_data.get("untrusted_sinks")
        return str(value or Agent.UntrustedSinks.APPROVAL)

    class Meta:
        model = Agent
        fields = [
            "name",
            "description",
            "system_prompt",
            "provider",
            "model",
            "kind",
            "tool_language",
            "all_tools",
            "max_rounds",
            "max_iterations",
            "max_calls_per_turn",
            "max_calls_per_conversation",
            "untrusted_sinks",
            "tool_schema_budget",
            "is_default",
        ]
        labels = {
            "all_tools": _("Every enabled tool"),
            "max_rounds": _("Model rounds per turn"),
            "max_iterations": _("Acting rounds per turn"),
            "max_calls_per_turn": _("Tool calls per turn"),
            "max_calls_per_conversation": _("Tool calls per conversation"),
            "untrusted_sinks": _("After untrusted content"),
            "tool_schema_budget": _("Tool schema budget (tokens)"),
            "is_default": _("Default profile"),
        }
        help_texts = {
            "model": _("Empty: the provider's default model."),
            "is_default": _("New conversations start with this profile."),
        }
        widgets = {
            "system_prompt": forms.Textarea(attrs={"rows": 6}),
            "description": forms.TextInput(),
        }
