"""Forms for imported tool sources. Secrets (headers, tokens, API keys) are write-only: the
inputs never show a stored value, and a blank input keeps what is stored."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from tools_app.executors.openapi.importer import Preview, openapi_preview
from tools_app.manager.forms import SwitchInput

SECRET_WIDGET = {"autocomplete": "new-password", "spellcheck": "false"}


class RowsMixin:
    @property
    def rows(self) -> list[tuple[forms.BoundField, None]]:
        return [(self[name], None) for name in self.fields]  # type: ignore[attr-defined,index]


NAME_HELP = "Lower-case letters, digits and dashes; names the tool group (e.g. time, github)."


class McpServerForm(RowsMixin, forms.Form):
    name = forms.SlugField(max_length=40, help_text=NAME_HELP)
    label = forms.CharField(max_length=100, required=False, help_text=_("Shown in the Tools list."))
    transport = forms.ChoiceField(
        choices=[
            ("stdio", _("stdio — a command run in the sandbox")),
            ("http", _("streamable HTTP — a URL")),
            ("sse", _("SSE (older HTTP servers) — a URL")),
        ]
    )
    command = forms.CharField(
        required=False,
        widget=forms.TextInput(attrs={"class": "mono", "spellcheck": "false"}),
        help_text=_(
            "stdio: the command and its arguments, e.g. mcp-server-time "
            "--local-timezone UTC (installed with manage.py mcp_servers install PACKAGE)."
        ),
    )
    url = forms.URLField(
        required=False, label=_("URL"), help_text=_("HTTP/SSE: e.g. https://mcp.example.com/mcp")
    )
    headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "class": "mono", **SECRET_WIDGET}),
        help_text=_(
            "HTTP/SSE: extra headers, one 'Name: value' per line. Write-only: stored "
            "encrypted, never shown again."
        ),
    )
    bearer = forms.CharField(
        required=False,
        label=_("Bearer token"),
        widget=forms.PasswordInput(render_value=False, attrs=SECRET_WIDGET),
        help_text=_("HTTP/SSE: sent as Authorization: Bearer …. Write-only."),
    )
    allow_private = forms.BooleanField(
        required=False,
        widget=SwitchInput(),
        label=_("The server is on a private or loopback address"),
        help_text=_("Lifts the SSRF guard for this server's host only."),
    )
    sandbox_backend = forms.ChoiceField(
        choices=[(c, c) for c in ("auto", "docker", "bubblewrap", "none")],
        initial="auto",
        help_text=_("stdio: where the server runs (none = directly on the worker, no isolation)."),
    )
    workspace = forms.ChoiceField(
        choices=[("shared", _("one shared workspace")), ("conversation", _("the conversation's"))],
        help_text=_("stdio: the files the server sees at /workspace."),
    )
    network = forms.BooleanField(
        required=False, widget=SwitchInput(), help_text=_("stdio: network for the server (Docker).")
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        transport = data.get("transport")
        if transport == "stdio" and not (data.get("command") or "").strip():
            self.add_error("command", _("A stdio server needs a command."))
        if transport in ("http", "sse") and not data.get("url"):
            self.add_error("url", _("An HTTP server needs a URL."))
        return data


class McpConnectionForm(RowsMixin, forms.Form):
    """Change how a registered server is reached (its name and transport stay)."""

    command = McpServerForm.base_fields["command"]
    url = McpServerForm.base_fields["url"]
    headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "class": "mono", **SECRET_WIDGET}),
        help_text=_("Write-only; blank keeps the stored headers."),
    )
    bearer = forms.CharField(
        required=False,
        label=_("Bearer token"),
        widget=forms.PasswordInput(render_value=False, attrs=SECRET_WIDGET),
        help_text=_("Write-only; blank keeps the stored token."),
    )
    clear_secrets = forms.BooleanField(
        required=False, widget=SwitchInput(), label=_("Remove the stored headers and token")
    )


class OpenApiForm(RowsMixin, forms.Form):
    name = forms.SlugField(max_length=40, help_text=NAME_HELP)
    label = forms.CharField(max_length=100, required=False)
    document_url = forms.URLField(
        required=False,
        label=_("Document URL"),
        help_text=_("e.g. https://api.example.com/openapi.json"),
    )
    document = forms.FileField(
        required=False, label=_("…or upload the document"), help_text=_("JSON or YAML, up to 5 MB.")
    )
    document_private = forms.BooleanField(
        required=False,
        widget=SwitchInput(),
        label=_("The document is on a private or loopback address"),
        help_text=_(
            "Lifts the SSRF guard for the document URL's host only, to fetch it; where "
            "the API is you decide with the preview. Cloud metadata addresses stay refused."
        ),
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("document_url") and not data.get("document"):
            self.add_error("document_url", _("Give the document's URL or upload it."))
        return data


class OpenApiImportForm(RowsMixin, forms.Form):
    """Step two, under the preview: which operations, where, and how to authenticate. The
    document and the first step's answers travel as hidden fields (nothing secret among them)."""

    name = forms.SlugField(max_length=40, widget=forms.HiddenInput)
    label = forms.CharField(max_length=100, required=False, widget=forms.HiddenInput)
    document_url = forms.CharField(required=False, widget=forms.HiddenInput)
    document_text = forms.CharField(widget=forms.HiddenInput, strip=False)
    operations = forms.MultipleChoiceField(
        choices=[], widget=forms.CheckboxSelectMultiple, label=_("Operations to import")
    )
    base_url = forms.URLField(
        required=False,
        label=_("Base URL"),
        help_text=_("Blank: the document's first server."),
    )
    api_private = forms.BooleanField(
        required=False,
        widget=SwitchInput(),
        label=_("The API is on a private or loopback address"),
        help_text=_(
            "Lifts the SSRF guard for the base URL's host only. Cloud metadata "
            "addresses stay refused."
        ),
    )
    auth_type = forms.ChoiceField(
        label=_("Authentication"),
        choices=[
            ("none", _("none")),
            ("api_key", _("API key")),
            ("bearer", _("bearer token")),
            ("basic", _("basic (user + password)")),
            ("oauth2", _("OAuth 2.0 (the document's authorization-code flow; per person)")),
        ],
    )
    auth_in = forms.ChoiceField(
        label=_("API key goes in"),
        choices=[("header", _("a header")), ("query", _("a query parameter"))],
    )
    auth_name = forms.CharField(
        required=False, label=_("Header or parameter name"), initial="X-API-Key"
    )
    username = forms.CharField(required=False, help_text=_("Basic authentication only."))
    secret = forms.CharField(
        required=False,
        label=_("Key, token or password"),
        widget=forms.PasswordInput(render_value=False, attrs=SECRET_WIDGET),
        help_text=_("Write-only: stored encrypted, never shown again."),
    )

    @classmethod
    def for_preview(
        cls, preview: Preview, *, name: str, label: str, document_url: str
    ) -> OpenApiImportForm:
        """Step two's form under a fresh preview: every importable operation ticked."""
        initial = {
            "name": name,
            "label": label or preview.title,
            "document_url": document_url,
            "document_text": preview.text,
            "operations": [op.name for op in preview.operations if not op.skipped],
            "base_url": preview.base_url,
            "auth_type": "none",
        }
        return cls(initial=initial, choices=operation_choices(preview))

    @classmethod
    def from_post(cls, data: Any) -> tuple[Preview, OpenApiImportForm]:
        """The preview again (from the document the page carried) and the form bound to the
        answers; ``SourceError`` when the document no longer reads."""
        preview = openapi_preview(
            data.get("document_text", ""), document_url=data.get("document_url", "")
        )
        return preview, cls(data, choices=operation_choices(preview))

    def import_arguments(self) -> dict[str, Any]:
        """``openapi_import``'s arguments from the valid form."""
        data = self.cleaned_data
        return {
            "name": data["name"],
            "label": data["label"],
            "text": data["document_text"],
            "document_url": data["document_url"],
            "selected": list(data["operations"]),
            "auth": {
                "type": data["auth_type"],
                "in": data["auth_in"],
                "name": data["auth_name"],
                "username": data["username"],
            },
            "secret": data["secret"],
            "api_private": data["api_private"],
            "base": data["base_url"],
        }

    def __init__(self, *args: Any, choices: list[tuple[str, str]] | None = None, **kw: Any):
        super().__init__(*args, **kw)
        self.fields["operations"].choices = choices or []  # type: ignore[attr-defined]
        self.order_fields(
            [
                "operations",
                "base_url",
                "api_private",
                "auth_type",
                "auth_in",
                "auth_name",
                "username",
                "secret",
            ]
        )

    @property
    def visible_rows(self) -> list[tuple[forms.BoundField, None]]:
        return [(f, None) for f in self.visible_fields() if f.name != "operations"]


def operation_choices(preview: Preview) -> list[tuple[str, str]]:
    return [
        (op.name, f"{op.name} — {op.method.upper()} {op.path}")
        for op in preview.operations
        if not op.skipped
    ]
