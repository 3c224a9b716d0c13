"""Forms of per-person credentials: the admin's choice per source (its own form, posted on
its own: the source's other forms are left alone), and a person's API key (write-only)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

SECRET_WIDGET = {"autocomplete": "new-password", "spellcheck": "false"}


class SourceCredentialsForm(forms.Form):
    credentials = forms.ChoiceField(
        label=_("Credentials"),
        choices=[
            ("none", _("none — the source is called without credentials")),
            (
                "shared",
                _("shared — one secret for everybody (the Connection page's headers and token)"),
            ),
            ("person", _("per person — each person connects their own account")),
        ],
        widget=forms.RadioSelect,
    )
    client_id = forms.CharField(
        required=False,
        max_length=500,
        label=_("OAuth client id"),
        help_text=_(
            "Per person, OAuth: leave blank to register a client dynamically where the "
            "authorization server offers it; otherwise register one there with the callback "
            "URL shown on this page and enter its id."
        ),
    )
    client_secret = forms.CharField(
        required=False,
        label=_("OAuth client secret"),
        widget=forms.PasswordInput(render_value=False, attrs=SECRET_WIDGET),
        help_text=_("Write-only; blank keeps the stored secret."),
    )
    client_auth_method = forms.ChoiceField(
        required=False,
        label=_("Client authentication"),
        choices=[
            ("", _("HTTP Basic when there is a secret (the default)")),
            ("client_secret_post", _("client id and secret in the request body")),
            ("none", _("none (a public client: PKCE only)")),
        ],
        help_text=_("How the client id and secret reach the token and revocation endpoints."),
    )
    scopes = forms.CharField(
        required=False,
        max_length=1000,
        label=_("Scopes"),
        help_text=_("Blank: what the server's metadata asks for."),
    )
    issuer = forms.URLField(
        required=False,
        label=_("Authorization server"),
        help_text=_("Blank: the one the server's metadata names (RFC 9728)."),
    )

    def clean_scopes(self) -> str:
        value = " ".join(str(self.cleaned_data.get("scopes") or "").split())
        if any(c in value for c in '"\\'):
            raise forms.ValidationError(_("Scopes are words separated by spaces."))
        return value


class ApiKeyForm(forms.Form):
    api_key = forms.CharField(
        label=_("Your API key or token"),
        max_length=4000,
        widget=forms.PasswordInput(render_value=False, attrs=SECRET_WIDGET),
        help_text=_("Write-only: stored encrypted, never shown again."),
    )
    account = forms.CharField(
        required=False,
        max_length=200,
        label=_("Account (optional)"),
        help_text=_("A name for it on this page and in the audit log, e.g. your login there."),
    )

    def clean_api_key(self) -> Any:
        return str(self.cleaned_data["api_key"]).strip()
