"""The exporter form: what each kind needs, checked before anything is saved. Secrets are
write-only: never rendered back, blank keeps the stored value."""

from __future__ import annotations

import re
import ssl
from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.utils.translation import gettext_lazy as _

from platform_app.audit_export.services import AUDITED
from platform_app.models import AuditExporter

_DIRECTORY = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$")
SECRETS = ("token", "headers", "secret_access_key")


class ExporterForm(forms.ModelForm):
    token = forms.CharField(
        required=False,
        label=_("HEC token"),
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_("Write-only and encrypted at rest. Leave blank to keep the stored token."),
    )
    headers = forms.CharField(
        required=False,
        label=_("OTLP headers"),
        widget=forms.Textarea(attrs={"rows": 2, "class": "mono", "autocomplete": "off"}),
        help_text=_(
            "name=value pairs, comma-separated or one a line (e.g. an API key header). "
            "Write-only and encrypted at rest. Leave blank to keep the stored headers."
        ),
    )
    secret_access_key = forms.CharField(
        required=False,
        label=_("S3 secret access key"),
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_(
            "Write-only and encrypted at rest. Leave blank to keep the stored key; with no "
            "keys at all, the server's own AWS credentials (environment, instance role)."
        ),
    )
    clear_secrets = forms.BooleanField(
        required=False, label=_("Remove the stored token, headers and secret key")
    )

    class Meta:
        model = AuditExporter
        # The settings an admin changes (the audit record shows them), and the CA certificate.
        fields = [*AUDITED, "ca_pem"]
        labels = {
            "name": _("Name"),
            "kind": _("Kind"),
            "format": _("Format"),
            "enabled": _("On"),
            "url": _("URL"),
            "host": _("Syslog host"),
            "port": _("Syslog port"),
            "transport": _("Syslog transport"),
            "verify_tls": _("Verify the server's TLS certificate"),
            "ca_pem": _("CA certificate (PEM)"),
            "directory": _("Directory"),
            "bucket": _("S3 bucket"),
            "region": _("S3 region"),
            "access_key_id": _("S3 access key ID"),
            "allow_private": _("Allow a private or loopback host"),
            "batch_size": _("Records per batch"),
            "interval_seconds": _("Every (seconds)"),
        }
        help_texts = {
            "url": _(
                "HEC: the collector's base URL (…/services/collector/event is added). "
                "OTLP: the collector's OTLP/HTTP address, e.g. https://otel.example.com:4318 "
                "(…/v1/logs is added). S3: the endpoint of S3-compatible storage (empty: AWS)."
            ),
            "ca_pem": _("Trust this CA instead of the system's (an internal PKI)."),
            "directory": _(
                "Files: a directory inside AUDIT_EXPORT_DIR, e.g. siem/daily. S3: the key prefix."
            ),
            "allow_private": _("Cloud metadata addresses are refused whatever this says."),
            "interval_seconds": _(
                "0: as records are sealed (every few seconds). Files: e.g. 3600 for hourly files."
            ),
        }
        widgets = {
            "ca_pem": forms.Textarea(attrs={"rows": 3, "class": "mono"}),
            "url": forms.URLInput(),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in SECRETS:  # never rendered back
            self.initial.pop(name, None)

    def groups(self) -> list[tuple[str, list[Any]]]:
        """The fields by what they are for (the page shows one fieldset each)."""
        layout: list[tuple[Any, tuple[str, ...]]] = [
            ("", ("name", "kind", "format", "enabled", "batch_size", "interval_seconds")),
            (_("HEC and OTLP"), ("url", "token", "headers")),
            (_("Syslog"), ("host", "port", "transport")),
            (
                _("Files and S3"),
                ("directory", "bucket", "region", "access_key_id", "secret_access_key"),
            ),
            (_("Connection"), ("verify_tls", "ca_pem", "allow_private")),
        ]
        if self.instance.pk:
            layout[-1] = (layout[-1][0], (*layout[-1][1], "clear_secrets"))
        return [(str(legend), [self[name] for name in names]) for legend, names in layout]

    def clean_batch_size(self) -> int:
        value = self.cleaned_data["batch_size"]
        if not 1 <= value <= 5000:
            raise forms.ValidationError(_("between 1 and 5000"))
        return int(value)

    def clean_interval_seconds(self) -> int:
        value = self.cleaned_data["interval_seconds"]
        if value > 86400:
            raise forms.ValidationError(_("at most a day (86400)"))
        return int(value)

    def clean_ca_pem(self) -> str:
        value = (self.cleaned_data.get("ca_pem") or "").strip()
        if value:
            try:
                ssl.create_default_context(cadata=value)
            except (ssl.SSLError, ValueError) as exc:
                raise forms.ValidationError(_("not a PEM certificate")) from exc
        return value

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        kind = data.get("kind")
        stored = {name: getattr(self.instance, name) for name in SECRETS}
        secrets = {
            name: data.get(name) or ("" if data.get("clear_secrets") else stored[name])
            for name in SECRETS
        }
        if kind in (AuditExporter.Kind.HEC, AuditExporter.Kind.OTLP) or (
            kind == AuditExporter.Kind.S3 and data.get("url")
        ):
            parts = urlsplit(data.get("url") or "")
            if parts.scheme not in ("http", "https") or not parts.hostname:
                self.add_error("url", _("the URL must be http:// or https:// with a host"))
            elif parts.username or parts.password:
                self.add_error("url", _("credentials in the URL are not allowed"))
        if kind == AuditExporter.Kind.HEC and not secrets.get("token"):
            self.add_error("token", _("an HTTP event collector needs its token"))
        if kind == AuditExporter.Kind.SYSLOG:
            if not (data.get("host") or "").strip():
                self.add_error("host", _("the syslog server's host name or address"))
            port = data.get("port")
            if port is not None and not 1 <= port <= 65535:
                self.add_error("port", _("a port between 1 and 65535"))
        if kind == AuditExporter.Kind.S3:
            if not re.match(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", data.get("bucket") or ""):
                self.add_error(
                    "bucket", _("an S3 bucket name (3-63 lower-case letters, digits, dots, dashes)")
                )
            if bool(data.get("access_key_id")) != bool(secrets["secret_access_key"]):
                self.add_error(
                    "access_key_id", _("give both the access key ID and its secret, or neither")
                )
        if kind in (AuditExporter.Kind.FILE, AuditExporter.Kind.S3) and (
            kind == AuditExporter.Kind.FILE or data.get("directory")
        ):
            directory = (data.get("directory") or "").strip().strip("/")
            if not _DIRECTORY.match(directory) or ".." in directory.split("/"):
                self.add_error(
                    "directory",
                    _("a relative directory of letters, digits, dots, dashes and underscores"),
                )
            data["directory"] = directory
            if kind == AuditExporter.Kind.FILE and self._directory_taken(directory):
                self.add_error(
                    "directory",
                    _(
                        "another file exporter writes in or around this directory; each "
                        "needs one of its own (a run clears what it wrote after its cursor)"
                    ),
                )
        return data

    def _directory_taken(self, directory: str) -> bool:
        """Another file exporter's directory is this one, inside it, or around it."""
        others = AuditExporter.objects.filter(kind=AuditExporter.Kind.FILE)
        if self.instance.pk:
            others = others.exclude(pk=self.instance.pk)
        mine = directory.split("/")
        for other in others.values_list("directory", flat=True):
            theirs = other.strip("/").split("/")
            shorter = min(len(mine), len(theirs))
            if mine[:shorter] == theirs[:shorter]:
                return True
        return False

    def secrets_changed(self) -> set[str]:
        return {name for name in SECRETS if self.cleaned_data.get(name)}

    def save(self, commit: bool = True) -> AuditExporter:
        exporter: AuditExporter = super().save(commit=False)
        for name in SECRETS:
            value = self.cleaned_data.get(name)
            if value:
                setattr(exporter, name, value)
            elif self.cleaned_data.get("clear_secrets"):
                setattr(exporter, name, "")
            # else blank: the instance keeps the stored value (the field is not in Meta.fields)
        if commit:
            exporter.save()
        return exporter
