"""Per-person credentials for imported sources (MCP servers over HTTP, OpenAPI documents).

A source authenticates as nobody, with one shared secret (``ToolSource.secrets``), or as the
person who calls it (``ToolSource.config["credentials"] == "person"``). In the last case each
person connects their own account: a ``SourceConnection`` holds their token (OAuth 2.1, the MCP
authorization specification) or their API key, encrypted at rest. ``SourceOAuthClient`` is the
OAuth client this deployment is at the source's authorization server (registered dynamically
or entered by an admin); ``ConnectAttempt`` is one authorization in flight (its ``state`` and
PKCE verifier, kept here, never in the browser).
"""

from __future__ import annotations

from django.conf import settings as django_settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from infra.secrets import EncryptedTextField


class SourceConnection(models.Model):
    """One person's credential for one source. ``secrets`` (JSON, encrypted): the access and
    refresh tokens, or the API key; never rendered, logged, audited or sent anywhere but to
    the source itself, from the worker."""

    class Kind(models.TextChoices):
        OAUTH = "oauth", _("OAuth")
        API_KEY = "api_key", _("API key")
        # A stdio MCP server's per-person environment variables (one value per name).
        ENV = "env", _("Personal variables")

    class State(models.TextChoices):
        ACTIVE = "active", _("connected")
        # The source refused the token and it could not be refreshed: connect again.
        BROKEN = "broken", _("needs connecting again")

    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="source_connections",
    )
    source = models.ForeignKey(
        "tools_app.ToolSource", on_delete=models.CASCADE, related_name="connections"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices)
    state = models.CharField(max_length=10, choices=State.choices, default=State.ACTIVE)
    account = models.CharField(max_length=200, blank=True)
    scopes = models.CharField(max_length=1000, blank=True)
    secrets = EncryptedTextField()
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    refreshed_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["source__name"]
        constraints = [
            models.UniqueConstraint(fields=["user", "source"], name="source_connection_unique")
        ]

    def __str__(self) -> str:
        return f"{self.source_id}:{self.user_id} ({self.kind}, {self.state})"


class SourceOAuthClient(models.Model):
    """This deployment's OAuth client at one source's authorization server, and what discovery
    found there (``metadata``: the authorization server's endpoints, the resource indicator,
    the scopes to ask for). ``registered``: made by dynamic client registration (RFC 7591);
    otherwise an admin entered the client id and secret."""

    source = models.OneToOneField(
        "tools_app.ToolSource", on_delete=models.CASCADE, related_name="oauth_client"
    )
    client_id = models.CharField(max_length=500, blank=True)
    client_secret = EncryptedTextField()
    registered = models.BooleanField(default=False)
    redirect_uri = models.CharField(max_length=500, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    discovered_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"OAuth client of source {self.source_id}"


class ConnectAttempt(models.Model):
    """One authorization in flight: found again by the hash of its ``state`` when the
    authorization server sends the person back, and only for the person and browser session
    that started it; used once (deleted when the callback takes it)."""

    state_hash = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(
        django_settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    session_hash = models.CharField(max_length=64)
    source = models.ForeignKey("tools_app.ToolSource", on_delete=models.CASCADE, related_name="+")
    verifier = EncryptedTextField()
    redirect_uri = models.CharField(max_length=500)
    next_url = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"connect attempt {self.pk} (source {self.source_id})"
