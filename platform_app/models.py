"""Per-user state of the platform tools.

Full-text indexes are not Django fields: on SQLite an FTS5 table kept in step by triggers, on
PostgreSQL a GIN index on ``to_tsvector('english', content)``; both are made by migration 0001
(``memory/fulltext.py`` says why). On SQLite, Django rebuilds a table to alter it, which drops
its triggers: a later migration that alters ``MemoryChunk`` must create them again
(``fulltext.install``), and ``tests/tools/memory`` fails if it does not.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class MemoryChunk(models.Model):
    """One indexed piece of archival memory. A long ``memory_save`` becomes several chunks
    sharing a ``document`` id, in ``position`` order."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_chunks"
    )
    content = models.TextField()
    source = models.CharField(max_length=200, default="manual")
    document = models.CharField(max_length=32, blank=True, db_index=True)
    position = models.PositiveIntegerField(default=0)
    # Which embedder made ``embedding`` ("local:all-MiniLM-L6-v2", "provider:<name>:<model>");
    # vectors are compared only with vectors of the same embedder.
    embedder = models.CharField(max_length=200, blank=True)
    # float32, little-endian, unit length: portable across databases (see memory/vectors.py).
    embedding = models.BinaryField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # Also what the vector cache's freshness check reads (count, newest change) without
        # touching the table: see memory/vectors.py.
        indexes = [
            models.Index(fields=["user", "embedder", "updated_at"]),
            # What the background embedding looks for: chunks of another (or no) embedder.
            models.Index(fields=["embedder"], name="memorychunk_embedder"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.content[:60]}"


class CoreMemoryEntry(models.Model):
    """Core memory: a few key/value facts always in the system prompt."""

    class Section(models.TextChoices):
        USER = "user", "about the user"
        AGENT = "agent", "about the agent"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="core_memory"
    )
    section = models.CharField(max_length=8, choices=Section.choices)
    key = models.CharField(max_length=100)
    value = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["user", "section", "key"]
        constraints = [
            models.UniqueConstraint(fields=["user", "section", "key"], name="core_memory_unique")
        ]
        verbose_name = "core memory entry"
        verbose_name_plural = "core memory"

    def __str__(self) -> str:
        return f"{self.section}.{self.key}"


class Schedule(models.Model):
    """A cron schedule of one user: when it is due, ``message`` runs as an agent turn of its
    owner, in ``inject_into`` or in a new conversation. ``next_run_at`` is also the claim: a
    firing process moves it on with ``UPDATE … WHERE next_run_at = <what it read>``, so a
    schedule fires once however many beat processes and workers look at it."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="schedules"
    )
    name = models.CharField(max_length=100)
    cron = models.CharField(
        max_length=120, help_text="Five fields (minute hour day month weekday) or @daily etc."
    )
    timezone = models.CharField(max_length=64, default="UTC", help_text="For the cron fields.")
    message = models.TextField(help_text="What the agent is asked each time the schedule fires.")
    model = models.CharField(max_length=200, blank=True, help_text="Empty: the agent's model.")
    inject_into = models.ForeignKey(
        "chat_app.Conversation",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The conversation the answer goes to; empty: a new conversation each time.",
    )
    agent = models.ForeignKey(
        "chat_app.Agent",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="For new conversations: the agent of the conversation it was made in.",
    )
    # The tool list of the call that added the schedule (see ToolCall.scope): its turns carry
    # it. None: added by its owner (a slash command, the admin) and limited like their chat.
    tool_scope = models.JSONField(null=True, blank=True, editable=False)
    enabled = models.BooleanField(default=True)
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_turn = models.ForeignKey(
        "chat_app.Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_status = models.CharField(max_length=40, blank=True)
    last_error = models.TextField(blank=True)
    run_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["user", "name"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="schedule_unique_name")
        ]
        indexes = [models.Index(fields=["enabled", "next_run_at"], name="schedule_due")]

    def __str__(self) -> str:
        return f"{self.name} ({self.cron})"


class Subagent(models.Model):
    """A task handed to a helper: its own turn in a child conversation; when that turn ends,
    its answer is posted into ``inject_into`` (the parent conversation when the spawn said
    "parent"), or only kept here when that is null or the helper answered silently."""

    class Status(models.TextChoices):
        RUNNING = "running", "running"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"
        CANCELLED = "cancelled", "cancelled"
        LIMITED = "limited", "stopped at the round limit"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="subagents"
    )
    name = models.CharField(max_length=100)
    message = models.TextField()
    model = models.CharField(max_length=200, blank=True)
    depth = models.PositiveSmallIntegerField(default=1)
    parent_conversation = models.ForeignKey(
        "chat_app.Conversation",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    parent_turn = models.ForeignKey(
        "chat_app.Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    parent_call = models.ForeignKey(
        "tools_app.ToolCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    inject_into = models.ForeignKey(
        "chat_app.Conversation",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    conversation = models.OneToOneField(
        "chat_app.Conversation", on_delete=models.CASCADE, related_name="subagent"
    )
    turn = models.ForeignKey(
        "chat_app.Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.RUNNING)
    result = models.TextField(blank=True)
    # The helper answered {"silent": true, "reason": ...}: nothing was posted; ``result``
    # holds the reason.
    silent = models.BooleanField(default=False)
    delivered_to = models.ForeignKey(
        "chat_app.Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "status"], name="subagent_user_status")]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"


class BeatTick(models.Model):
    """When the Schedules tick (sent by Celery beat) last ran: one row, for the Tools Manager
    to say whether a beat is running at all."""

    at = models.DateTimeField()

    def __str__(self) -> str:
        return f"last tick {self.at:%Y-%m-%d %H:%M:%S}"


class SSOIdentity(models.Model):
    """Which account an OpenID Connect identity signs in to. An identity is its provider's
    ``iss`` and ``sub`` (stable and never reassigned), not the username or e-mail claim, which
    people can often change at the provider; see platform_app/sso/services.py."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities"
    )
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_login_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "SSO identity"
        verbose_name_plural = "SSO identities"
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique")
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class UserPreferences(models.Model):
    """What a person chose about how the pages look; one row, made on their first choice."""

    class Theme(models.TextChoices):
        SYSTEM = "system", "Follow the system"
        LIGHT = "light", "Light"
        DARK = "dark", "Dark"

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="preferences",
    )
    theme = models.CharField(max_length=10, choices=Theme.choices, default=Theme.SYSTEM)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "user preferences"

    def __str__(self) -> str:
        return f"preferences of user {self.user_id}"
